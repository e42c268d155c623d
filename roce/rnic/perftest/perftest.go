// Package perftest runs RDMA microbenchmarks on the software RNIC in the
// spirit of the perftest tools (ib_write_bw, ib_read_lat, ib_atomic_bw, ...):
// a closed loop that keeps Depth requests outstanding on each of QPs queue
// pairs against a memory node, in-process or remote (through the connection
// manager), and reports operations per second, bandwidth and latency
// percentiles. `swordbox perf` is its command line.
//
// It owns the load generator and its result format only; the RNIC is
// roce/rnic, the links are netio.
//
// Decisions: every request is signaled and its latency (post to completion)
// is recorded, in bandwidth tests too; completions are reposted per QP in
// one doorbell batch; the first tenth of the run (at most 500ms) is warm-up
// and not counted; requests of different slots target different 64-byte
// aligned addresses (data-independent, as in SwordBox Figure 3); atomics
// are FETCH_ADD of 1 on 8 bytes whatever Size says; MB is 2^20 bytes, as in
// perftest. Latency tests (*_lat) run at depth 1.
package perftest

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/roce/rnic"
	"github.com/swordbox/swordbox/roce/verbs"
)

// Tests lists the benchmark names.
var Tests = []string{"write_bw", "read_bw", "atomic_bw", "write_lat", "read_lat", "atomic_lat"}

// Config configures a run.
type Config struct {
	Test     string
	QPs      int
	Depth    int
	Size     int
	Duration time.Duration
	// Ops, if positive, ends the run after this many counted operations
	// instead of after Duration (benchmarks use it).
	Ops uint64
	// NoWarmup counts from the first operation.
	NoWarmup bool

	// In-process memory node and link (used when Dialer is nil).
	MTU           int
	Faults        netio.Faults
	ServerWorkers int
	Timing        *rnic.Timing
	RegionSize    int

	// Remote memory node: Dialer connects QPs of Dev to the node at Remote.
	Dialer verbs.Dialer
	Remote string
	Dev    *rnic.Device
}

// Latency percentiles in microseconds.
type Latency struct {
	Min  float64 `json:"min"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99.9"`
	Max  float64 `json:"max"`
}

// Result is the summary of a run.
type Result struct {
	Test        string  `json:"test"`
	QPs         int     `json:"qps"`
	Depth       int     `json:"depth"`
	Size        int     `json:"size"`
	Ops         uint64  `json:"ops"`
	Seconds     float64 `json:"seconds"`
	OpsPerSec   float64 `json:"ops_per_sec"`
	MBPerSec    float64 `json:"mb_per_sec"`
	Latency     Latency `json:"latency_us"`
	Errors      uint64  `json:"errors"`
	Retransmits uint64  `json:"retransmits"`
	// CPUSeconds is the CPU time (user and system) the whole process used
	// during the run: client, memory node (when in-process) and load
	// generator. CPUNsPerOp divides it by Ops: the cost of an operation
	// independent of what else runs on the machine.
	CPUSeconds float64 `json:"cpu_seconds"`
	CPUNsPerOp float64 `json:"cpu_ns_per_op"`
}

func (r Result) String() string {
	return fmt.Sprintf("%-10s qps %-3d depth %-3d size %-5d  %10.0f ops/s  %9.2f MB/s  lat us p50 %.2f p99 %.2f p99.9 %.2f max %.2f  cpu %.0f ns/op  (ops %d, errors %d, retransmits %d)",
		r.Test, r.QPs, r.Depth, r.Size, r.OpsPerSec, r.MBPerSec, r.Latency.P50, r.Latency.P99, r.Latency.P999, r.Latency.Max, r.CPUNsPerOp, r.Ops, r.Errors, r.Retransmits)
}

func (c *Config) check() (verbs.Opcode, error) {
	var op verbs.Opcode
	switch c.Test {
	case "write_bw", "write_lat":
		op = verbs.OpWrite
	case "read_bw", "read_lat":
		op = verbs.OpRead
	case "atomic_bw", "atomic_lat":
		op = verbs.OpFetchAdd
	default:
		return 0, fmt.Errorf("perf: unknown test %q (one of %v)", c.Test, Tests)
	}
	if c.QPs <= 0 {
		c.QPs = 1
	}
	if c.Depth <= 0 || c.Test[len(c.Test)-4:] == "_lat" {
		c.Depth = 1
	}
	if c.Size <= 0 {
		c.Size = 64
	}
	if op == verbs.OpFetchAdd {
		c.Size = 8
	}
	if c.Duration <= 0 && c.Ops == 0 {
		c.Duration = 5 * time.Second
	}
	if c.Size > 1<<20 {
		return 0, fmt.Errorf("perf: size %d above 1 MiB", c.Size)
	}
	return op, nil
}

// InProcess is an in-process client and memory node joined by a link.
type InProcess struct {
	Client, Node *rnic.Device
	Dialer       *rnic.LocalDialer
	Link         *netio.LinkPort // the client's end
}

// NewInProcess builds a memory node with one region of regionSize bytes
// and a client device, joined by an in-memory link with faults f (in both
// directions; the return direction uses seed+1).
func NewInProcess(regionSize, mtu, workers int, f netio.Faults, timing *rnic.Timing) (*InProcess, error) {
	back := f
	back.Seed++
	a, b, err := netio.NewLink("client", "memnode", netio.LinkConfig{AtoB: f, BtoA: back, Capacity: 8192})
	if err != nil {
		return nil, err
	}
	timeout := 25 * time.Millisecond // above scheduling stalls of a loaded machine
	cli, err := rnic.New(a, rnic.Config{MAC: [6]byte{2, 0, 0, 0, 0, 1}, IP: [4]byte{10, 0, 0, 1}, MTU: mtu, Timeout: timeout})
	if err != nil {
		return nil, err
	}
	node, err := rnic.New(b, rnic.Config{MAC: [6]byte{2, 0, 0, 0, 0, 2}, IP: [4]byte{10, 0, 0, 2}, MTU: mtu, Workers: workers, Timing: timing, Timeout: timeout})
	if err != nil {
		cli.Close()
		return nil, err
	}
	mr, err := node.Register(make([]byte, regionSize), verbs.AccessAll)
	if err != nil {
		cli.Close()
		node.Close()
		return nil, err
	}
	acc := &rnic.Acceptor{Dev: node, Regions: []verbs.RemoteRegion{mr.Remote()}}
	return &InProcess{Client: cli, Node: node, Link: a, Dialer: &rnic.LocalDialer{Dev: cli, Nodes: map[string]*rnic.Acceptor{"memnode": acc}}}, nil
}

// Close stops both devices.
func (ip *InProcess) Close() {
	ip.Client.Close()
	ip.Node.Close()
}

// Run runs one benchmark.
func Run(ctx context.Context, cfg Config) (Result, error) {
	s, err := NewSession(ctx, cfg)
	if err != nil {
		return Result{}, err
	}
	defer s.Close()
	return s.Run(ctx)
}

// Session is a benchmark set up and ready to run: QPs connected, buffers
// registered, work requests prebuilt. Run may be called repeatedly; each
// call measures afresh.
type Session struct {
	cfg     Config
	op      verbs.Opcode
	dev     *rnic.Device
	ip      *InProcess
	cq      *rnic.CQ
	qps     []verbs.QP
	lmr     *rnic.MR
	tmpl    [][]verbs.SendWR
	pend    [][]verbs.SendWR
	posted  []int64
	hist    *hdrhistogram.Histogram
	wcs     []verbs.WC
	started bool
}

// NewSession connects and prepares a benchmark.
func NewSession(ctx context.Context, cfg Config) (*Session, error) {
	op, err := cfg.check()
	if err != nil {
		return nil, err
	}
	s := &Session{cfg: cfg, op: op}
	dev, dialer, remote := cfg.Dev, cfg.Dialer, cfg.Remote
	if dialer == nil {
		rs := cfg.RegionSize
		if rs <= 0 {
			rs = 64 << 20
		}
		ip, err := NewInProcess(rs, cfg.MTU, cfg.ServerWorkers, cfg.Faults, cfg.Timing)
		if err != nil {
			return nil, fmt.Errorf("perf: in-process memory node: %w", err)
		}
		s.ip = ip
		dev, dialer, remote = ip.Client, ip.Dialer, "memnode"
	}
	s.dev = dev
	if err := s.setup(ctx, dialer, remote); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Close disconnects the QPs and stops an in-process memory node.
func (s *Session) Close() {
	for _, q := range s.qps {
		if q != nil {
			q.(*rnic.QP).ToErr()
		}
	}
	if s.lmr != nil {
		s.dev.Deregister(s.lmr)
	}
	if s.ip != nil {
		s.ip.Close()
	}
}

func (s *Session) setup(ctx context.Context, dialer verbs.Dialer, remote string) error {
	cfg := &s.cfg
	s.cq = s.dev.NewCQ(cfg.QPs * cfg.Depth * 2)
	s.qps = make([]verbs.QP, cfg.QPs)
	var region verbs.RemoteRegion
	for i := range s.qps {
		c, err := dialer.Dial(ctx, remote, verbs.QPConfig{SendCQ: s.cq, RecvCQ: s.cq, MaxSendWR: cfg.Depth * 2})
		if err != nil {
			return fmt.Errorf("perf: connect qp %d: %w", i, err)
		}
		s.qps[i] = c.QP
		if len(c.Remote) == 0 {
			return fmt.Errorf("perf: memory node %s exposes no region", remote)
		}
		region = c.Remote[0]
	}
	stride := (cfg.Size + 63) &^ 63
	slots := cfg.QPs * cfg.Depth
	if uint64(stride) > region.Len {
		return fmt.Errorf("perf: region of %d bytes smaller than one %d-byte request", region.Len, cfg.Size)
	}
	lmr, err := s.dev.Register(make([]byte, slots*stride), verbs.AccessAll)
	if err != nil {
		return err
	}
	s.lmr = lmr
	// One prebuilt work request per slot: reposting copies it, nothing is
	// allocated per operation.
	s.tmpl = make([][]verbs.SendWR, cfg.QPs)
	sges := make([]verbs.SGE, slots)
	fits := int(region.Len / uint64(stride))
	for q := range s.tmpl {
		s.tmpl[q] = make([]verbs.SendWR, cfg.Depth)
		for k := range s.tmpl[q] {
			i := q*cfg.Depth + k
			sges[i] = verbs.SGE{Addr: lmr.Addr() + uint64(i*stride), Length: uint32(cfg.Size), LKey: lmr.LKey()}
			s.tmpl[q][k] = verbs.SendWR{ID: uint64(q)<<32 | uint64(k), Op: s.op, SG: sges[i : i+1],
				RemoteAddr: region.Addr + uint64((i%fits)*stride), RKey: region.RKey, SwapAdd: 1, Flags: verbs.Signaled}
		}
	}
	s.pend = make([][]verbs.SendWR, cfg.QPs)
	for q := range s.pend {
		s.pend[q] = make([]verbs.SendWR, 0, cfg.Depth)
	}
	s.posted = make([]int64, slots)
	s.hist = hdrhistogram.New(1, int64(10*time.Second), 3)
	s.wcs = make([]verbs.WC, 256)
	return nil
}

// Run measures once: for cfg.Duration (after warm-up) or cfg.Ops
// operations, then drains what is outstanding.
func (s *Session) Run(ctx context.Context) (Result, error) {
	cfg := &s.cfg
	before := s.dev.Stats()
	res := Result{Test: cfg.Test, QPs: cfg.QPs, Depth: cfg.Depth, Size: cfg.Size}
	s.hist.Reset()
	cpu0 := cpuTime()
	epoch := time.Now()
	now := func() int64 { return int64(time.Since(epoch)) }
	warm := int64(0)
	if !cfg.NoWarmup {
		warm = int64(min(cfg.Duration/10, 500*time.Millisecond))
	}
	var end int64
	if cfg.Duration > 0 && cfg.Ops == 0 {
		end = warm + int64(cfg.Duration)
	}
	for q, qp := range s.qps {
		t := now()
		for k := 0; k < cfg.Depth; k++ {
			s.posted[q*cfg.Depth+k] = t
		}
		if err := qp.PostSend(s.tmpl[q]); err != nil {
			return res, err
		}
	}
	outstanding := len(s.posted)
	var start, stop int64 = -1, 0
	counting := warm == 0
	if counting {
		start = 0
	}
	stopping := false
	var firstErr error
	for outstanding > 0 {
		n, err := s.cq.Wait(ctx, s.wcs)
		if err != nil {
			return res, fmt.Errorf("perf: waiting for completions (%d outstanding): %w", outstanding, err)
		}
		t := now()
		if !counting && t >= warm {
			// The window opens at the end of the warm-up, not at the
			// first completion after it: a batch counted at the instant
			// the window opened would have no time to its name (a round
			// trip longer than --duration measured 16 operations in 0s).
			counting, start = true, warm
		}
		for _, wc := range s.wcs[:n] {
			q, k := int(wc.ID>>32), int(wc.ID&0xffffffff)
			outstanding--
			if wc.Status != verbs.StatusSuccess {
				res.Errors++
				if firstErr == nil {
					firstErr = fmt.Errorf("perf: qp %d: %s completed %s", q, wc.Op, wc.Status)
				}
				stopping = true
				continue
			}
			slot := q*cfg.Depth + k
			if counting && !stopping {
				res.Ops++
				s.hist.RecordValue(t - s.posted[slot])
			}
			if !stopping {
				s.pend[q] = append(s.pend[q], s.tmpl[q][k])
				s.posted[slot] = t
			}
		}
		if !stopping && ((end > 0 && t >= end) || (cfg.Ops > 0 && res.Ops >= cfg.Ops)) {
			stopping, stop = true, t
			for q := range s.pend {
				s.pend[q] = s.pend[q][:0]
			}
		}
		for q := range s.pend {
			if len(s.pend[q]) == 0 {
				continue
			}
			if err := s.qps[q].PostSend(s.pend[q]); err != nil {
				return res, err
			}
			outstanding += len(s.pend[q])
			s.pend[q] = s.pend[q][:0]
		}
	}
	if stop == 0 {
		stop = now()
	}
	if start < 0 {
		start = warm
	}
	res.Seconds = float64(stop-start) / 1e9
	if res.Seconds > 0 {
		res.OpsPerSec = float64(res.Ops) / res.Seconds
		res.MBPerSec = res.OpsPerSec * float64(cfg.Size) / (1 << 20)
	}
	h := s.hist
	us := func(ns int64) float64 { return float64(ns) / 1000 }
	if h.TotalCount() > 0 {
		res.Latency = Latency{Min: us(h.Min()), Mean: h.Mean() / 1000, P50: us(h.ValueAtQuantile(50)), P90: us(h.ValueAtQuantile(90)),
			P99: us(h.ValueAtQuantile(99)), P999: us(h.ValueAtQuantile(99.9)), Max: us(h.Max())}
	}
	res.Retransmits = s.dev.Stats().Retransmits - before.Retransmits
	res.CPUSeconds = (cpuTime() - cpu0).Seconds()
	if res.Ops > 0 {
		res.CPUNsPerOp = res.CPUSeconds * 1e9 / float64(res.Ops)
	}
	return res, firstErr
}

// cpuTime returns the CPU time the process has used (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
