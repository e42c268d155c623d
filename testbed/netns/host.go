package netns

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/swordbox/swordbox/clover"
	"github.com/swordbox/swordbox/roce/rnic"
	"github.com/swordbox/swordbox/roce/verbs"
	"github.com/swordbox/swordbox/testbed"
	"github.com/swordbox/swordbox/testbed/ycsb"
)

// Clover's defaults on the rack, as testbed.NewCloverRack takes them.
const (
	DefaultChunks      = testbed.DefaultCloverChunks
	DefaultReadTimeout = 50 * time.Millisecond
	DefaultEpochPeriod = 200 * time.Millisecond
	qpDepth            = 256
)

// CloverLayout is the memory node's Clover region for keys keys, the same
// layout testbed.NewCloverRack uses (testbed.CloverLayout), with
// DefaultChunks chunks if chunks is 0 or less.
func CloverLayout(keys, chunks int) clover.RegionLayout {
	if chunks <= 0 {
		chunks = DefaultChunks
	}
	return testbed.CloverLayout(keys, chunks)
}

// MSConfig configures the metadata server host (`swordbox clover ms`).
type MSConfig struct {
	// Listen is the connection manager address clients dial (TCP).
	Listen string
	// Memory is the memory node's connection manager address.
	Memory       string
	Keys, Chunks int
	Threads      int // client threads expected (sizes the CQ)
	ReadTimeout  time.Duration
	EpochPeriod  time.Duration
}

// RunMS runs Clover's metadata server on dev until ctx ends. Before it
// serves, it lays out the memory node's region: `swordbox memnode` registers
// zeroed memory, which is what clover.InitRegion leaves everywhere but in the
// 64-byte region header, so the MS writes that header with one RDMA WRITE
// (the region then holds exactly what InitRegion would have written). It
// prints "clover ms: ready ..." on out once clients may connect.
func RunMS(ctx context.Context, cfg MSConfig, dev *rnic.Device, out io.Writer) error {
	if cfg.Keys <= 0 {
		return fmt.Errorf("clover ms: keys %d: must be > 0", cfg.Keys)
	}
	if cfg.Threads <= 0 {
		cfg.Threads = 32
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = DefaultReadTimeout
	}
	if cfg.EpochPeriod <= 0 {
		cfg.EpochPeriod = DefaultEpochPeriod
	}
	layout := CloverLayout(cfg.Keys, cfg.Chunks)
	if err := layout.Validate(); err != nil {
		return fmt.Errorf("clover ms: %w", err)
	}
	if err := writeRegionHeader(ctx, dev, cfg.Memory, layout); err != nil {
		return fmt.Errorf("clover ms: lay out memory node %s: %w", cfg.Memory, err)
	}
	cq := dev.NewCQ(4 * 64 * cfg.Threads)
	ms, err := clover.NewMetadataServer(clover.MSConfig{Regions: []clover.RegionLayout{layout},
		ReadTimeout: cfg.ReadTimeout, EpochPeriod: cfg.EpochPeriod}, dev, cq)
	if err != nil {
		return fmt.Errorf("clover ms: %w", err)
	}
	var mu sync.Mutex
	var addErr error
	acc := &rnic.Acceptor{Dev: dev, QP: verbs.QPConfig{SendCQ: cq, RecvCQ: cq, MaxSendWR: qpDepth, MaxRecvWR: qpDepth},
		OnAccept: func(q *rnic.QP) {
			if err := ms.AddClient(q); err != nil {
				mu.Lock()
				addErr = errors.Join(addErr, err)
				mu.Unlock()
			}
		}}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	serr := make(chan error, 1)
	go func() { serr <- ms.Serve(sctx) }()
	ln, err := rnic.Listen(cfg.Listen, acc)
	if err != nil {
		return fmt.Errorf("clover ms: %w", err)
	}
	defer ln.Close()
	fmt.Fprintf(out, "clover ms: ready, connection manager on %s, region of %d bytes (%d shortcuts, %d chunks)\n",
		ln.Addr(), layout.Size(), layout.Shortcuts, layout.Chunks)
	select {
	case <-ctx.Done():
		cancel()
		err = <-serr
	case err = <-serr:
	}
	st := ms.Stats()
	fmt.Fprintf(out, "clover ms: %d keys, %d allocs, %d retires, %d lookups, epoch %d\n", st.Keys, st.Allocs, st.Retires, st.Lookups, st.Epoch)
	mu.Lock()
	defer mu.Unlock()
	if err != nil || addErr != nil {
		return fmt.Errorf("clover ms: %w", errors.Join(err, addErr))
	}
	return nil
}

// writeRegionHeader connects to the memory node and writes the Clover
// region header InitRegion computes for layout.
func writeRegionHeader(ctx context.Context, dev *rnic.Device, addr string, layout clover.RegionLayout) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cq := dev.NewCQ(16)
	conn, err := (&rnic.Dialer{Dev: dev}).Dial(ctx, addr, verbs.QPConfig{SendCQ: cq, RecvCQ: cq, MaxSendWR: 4, MaxRecvWR: 4})
	if err != nil {
		return err
	}
	if len(conn.Remote) == 0 {
		return errors.New("the memory node announces no region")
	}
	region := conn.Remote[0]
	if region.Len < uint64(layout.Size()) {
		return fmt.Errorf("region of %d bytes, the layout needs %d", region.Len, layout.Size())
	}
	// InitRegion needs a buffer of the region's size; only the header
	// differs from zeroed memory.
	img := make([]byte, layout.Size())
	if err := clover.InitRegion(img, 0, layout); err != nil {
		return err
	}
	mr, err := dev.Register(img[:clover.RegionHeaderSize:clover.RegionHeaderSize], verbs.AccessLocalWrite)
	if err != nil {
		return err
	}
	if err := conn.QP.PostSend([]verbs.SendWR{{ID: 1, Op: verbs.OpWrite, Flags: verbs.Signaled,
		SG:         []verbs.SGE{{Addr: mr.Addr(), Length: clover.RegionHeaderSize, LKey: mr.LKey()}},
		RemoteAddr: region.Addr, RKey: region.RKey}}); err != nil {
		return err
	}
	var wcs [1]verbs.WC
	if _, err := cq.Wait(ctx, wcs[:]); err != nil {
		return fmt.Errorf("write header: %w", err)
	}
	if wcs[0].Status != verbs.StatusSuccess {
		return fmt.Errorf("write header: %v", wcs[0].Status)
	}
	return nil
}

// ClientsConfig configures one client host (`swordbox clover clients`): its
// share of the rack's client threads, each a Clover client with a QP to the
// memory node and one to the metadata server.
type ClientsConfig struct {
	// Host is this host's index among Hosts client hosts. Of Threads client
	// threads in all, thread g runs on host g % Hosts, as in testbed.
	Host, Hosts, Threads int
	// Memory and MS are the connection manager addresses.
	Memory, MS string

	Workload    ycsb.Kind
	Keys        int
	ValueSize   int
	Zipf        float64
	Seed        uint64
	Warmup      time.Duration
	Duration    time.Duration
	ReadTimeout time.Duration
}

// Local returns the global indexes of the threads host runs.
func (c ClientsConfig) Local() []int {
	var out []int
	for g := c.Host; g < c.Threads; g += c.Hosts {
		out = append(out, g)
	}
	return out
}

// HostSeed is the workload seed of client host h: Seed for host 0, a fixed
// derivation for the others, so that every thread of the rack has its own
// stream and the same seed gives the same streams in every mode. (Each host
// drives its threads with testbed.Drive, whose thread j takes the
// workload's stream j.)
func HostSeed(seed uint64, host int) uint64 {
	return seed + uint64(host)*0x9e3779b97f4a7c15
}

// Event is one line the client host prints on stdout.
type Event struct {
	Event   string        `json:"event"` // ready, loaded, warm, result, error
	Threads int           `json:"threads,omitempty"`
	Error   string        `json:"error,omitempty"`
	Result  *ClientResult `json:"result,omitempty"`
}

// ClientResult is what one client host measured in the measured phase.
type ClientResult struct {
	Host      int    `json:"host"`
	Threads   int    `json:"threads"`
	Ops       uint64 `json:"ops"`
	Reads     uint64 `json:"reads"`
	Writes    uint64 `json:"writes"`
	Errors    uint64 `json:"errors"`
	ElapsedNs int64  `json:"elapsed_ns"`
	FirstErr  string `json:"first_error,omitempty"`
	// Latency histograms (nanoseconds) as hdrhistogram snapshots.
	All, Read, Write *hdrhistogram.Snapshot
	// Metrics are Clover's counters over the measured phase, summed over
	// the host's threads.
	Metrics clover.Metrics `json:"metrics"`
}

// Commands the orchestrator writes on the client host's stdin, one a line.
const (
	CmdLoad   = "load"
	CmdWarmup = "warmup"
	CmdRun    = "run"
	CmdQuit   = "quit"
)

// RunClients connects the host's client threads over dev and then follows
// the commands on in, answering each with an Event line on out: load
// creates the host's share of the keys, warmup drives the workload unmeasured
// (seed ^seed), run drives it for the measured duration and reports a
// ClientResult. It returns on quit, end of input or ctx.
func RunClients(ctx context.Context, cfg ClientsConfig, dev *rnic.Device, in io.Reader, out io.Writer) error {
	enc := json.NewEncoder(out)
	fail := func(err error) error {
		enc.Encode(Event{Event: "error", Error: err.Error()})
		return err
	}
	if cfg.Hosts <= 0 || cfg.Host < 0 || cfg.Host >= cfg.Hosts || cfg.Threads < cfg.Hosts {
		return fail(fmt.Errorf("clover clients: host %d of %d with %d threads: need 0 <= host < hosts <= threads", cfg.Host, cfg.Hosts, cfg.Threads))
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = DefaultReadTimeout
	}
	local := cfg.Local()
	seed := HostSeed(cfg.Seed, cfg.Host)
	wcfg := ycsb.Config{Workload: cfg.Workload, ZipfConstant: cfg.Zipf, RecordCount: int64(cfg.Keys),
		ValueSize: cfg.ValueSize, Clients: len(local), Seed: seed, Duration: cfg.Duration}
	w, err := ycsb.New(wcfg)
	if err != nil {
		return fail(fmt.Errorf("clover clients: workload: %w", err))
	}
	wcfg.Seed = ^seed
	ww, err := ycsb.New(wcfg)
	if err != nil {
		return fail(fmt.Errorf("clover clients: workload: %w", err))
	}
	clients := make([]*clover.Client, len(local))
	kvs := make([]testbed.KV, len(local))
	dialer := &rnic.Dialer{Dev: dev}
	for j, g := range local {
		c, err := connectClient(ctx, dialer, dev, cfg, g)
		if err != nil {
			return fail(fmt.Errorf("clover clients: thread %d: %w", g, err))
		}
		clients[j], kvs[j] = c, testbed.CloverKV(c)
	}
	enc.Encode(Event{Event: "ready", Threads: len(local)})

	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			lines <- strings.TrimSpace(sc.Text())
		}
	}()
	for {
		var cmd string
		select {
		case <-ctx.Done():
			return nil
		case l, ok := <-lines:
			if !ok {
				return nil
			}
			cmd = l
		}
		switch cmd {
		case "":
		case CmdQuit:
			return nil
		case CmdLoad:
			if err := load(ctx, cfg, w, clients); err != nil {
				return fail(err)
			}
			enc.Encode(Event{Event: "loaded"})
		case CmdWarmup:
			if cfg.Warmup > 0 {
				if _, err := testbed.Drive(ctx, ww, kvs, cfg.ValueSize, cfg.Warmup); err != nil {
					return fail(fmt.Errorf("clover clients: warm-up: %w", err))
				}
			}
			enc.Encode(Event{Event: "warm"})
		case CmdRun:
			m0 := sumMetrics(clients)
			l, err := testbed.Drive(ctx, w, kvs, cfg.ValueSize, cfg.Duration)
			if err != nil {
				return fail(fmt.Errorf("clover clients: %w", err))
			}
			m := sumMetrics(clients)
			m.Sub(m0)
			r := &ClientResult{Host: cfg.Host, Threads: len(local), Ops: l.Ops, Reads: l.Reads, Writes: l.Writes, Errors: l.Errors,
				ElapsedNs: int64(l.Elapsed), All: l.All.Export(), Read: l.Read.Export(), Write: l.Write.Export(), Metrics: m}
			if l.FirstErr != nil {
				r.FirstErr = l.FirstErr.Error()
			}
			enc.Encode(Event{Event: "result", Result: r})
		default:
			return fail(fmt.Errorf("clover clients: unknown command %q", cmd))
		}
	}
}

func connectClient(ctx context.Context, dialer *rnic.Dialer, dev *rnic.Device, cfg ClientsConfig, g int) (*clover.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	cq := dev.NewCQ(1024)
	qcfg := verbs.QPConfig{SendCQ: cq, RecvCQ: cq, MaxSendWR: qpDepth, MaxRecvWR: qpDepth}
	mn, err := dialer.Dial(ctx, cfg.Memory, qcfg)
	if err != nil {
		return nil, fmt.Errorf("connect memory node: %w", err)
	}
	if len(mn.Remote) == 0 {
		return nil, errors.New("connect memory node: no region announced")
	}
	ms, err := dialer.Dial(ctx, cfg.MS, qcfg)
	if err != nil {
		return nil, fmt.Errorf("connect metadata server: %w", err)
	}
	return clover.NewClient(clover.ClientConfig{ID: g, ValueSize: cfg.ValueSize, Device: dev, CQ: cq, MS: ms.QP,
		CursorCache: cfg.Keys, ReadTimeout: cfg.ReadTimeout,
		MemoryNodes: []clover.MemoryNodeConn{{QP: mn.QP, Region: mn.Remote[0]}}})
}

// load creates the keys i < Keys with i % Hosts == Host, spread over the
// host's threads, with the values testbed's loader writes.
func load(ctx context.Context, cfg ClientsConfig, w *ycsb.Workload, clients []*clover.Client) error {
	n := len(clients)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			val := make([]byte, cfg.ValueSize)
			for i := cfg.Host + c*cfg.Hosts; i < cfg.Keys; i += n * cfg.Hosts {
				key := w.RecordKey(int64(i))
				for j := range val {
					val[j] = byte(32 + (int(key)+j)%95)
				}
				if err := clients[c].Create(ctx, key, val); err != nil && !errors.Is(err, clover.ErrExists) {
					errs[c] = fmt.Errorf("clover clients: load key %d: %w", key, err)
					return
				}
			}
		}(c)
	}
	wg.Wait()
	return errors.Join(errs...)
}

func sumMetrics(cs []*clover.Client) clover.Metrics {
	var s clover.Metrics
	for _, c := range cs {
		s.Add(c.Metrics())
	}
	return s
}
