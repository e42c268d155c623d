package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/swordbox/swordbox/clover"
	"github.com/swordbox/swordbox/ctrl"
	"github.com/swordbox/swordbox/ctrl/rack"
	"github.com/swordbox/swordbox/roce/rnic"
	"github.com/swordbox/swordbox/testbed"
	"github.com/swordbox/swordbox/testbed/ycsb"
)

// DefaultClientCPU is the client CPU time per operation: what a client
// thread spends in its own code between two operations (the workload
// generator, the store's bookkeeping), charged as a Sleep of virtual time
// before each operation. Our assumption; the knob is
// CloverConfig.ClientCPU.
const DefaultClientCPU = 500 * time.Nanosecond

// CloverConfig describes a Clover run on a virtual-time rack: one memory
// node, one metadata server host, ClientHosts client hosts with Threads
// client threads in all (each its own Clover client with its own QPs, as
// on the software rack), running a YCSB workload.
type CloverConfig struct {
	// MemoryNodes is the number of memory nodes (default 1, at most 16):
	// Clover homes each key on one of them, every client has a QP to each.
	MemoryNodes int
	// Rack is the rack (Hosts, MemoryNodes, Steering, TrackedKeys,
	// ObjectSize and MemoryInit are set from the fields below).
	Rack Config
	// Steering is the switch's mode (off, write, read-write); Tracked
	// how many of the hottest keys it steers (0: all), unless
	// Rack.TrackedKeys names them.
	Steering string
	Tracked  int
	// ClientHosts (default 7, the paper's seven client machines) and
	// Threads (default 240).
	ClientHosts, Threads int
	// ValueSize (default 128), Keys (default 1024), Zipf (default 0.99).
	ValueSize, Keys int
	Zipf            float64
	// Workload names a YCSB core workload (default a); WriteFraction,
	// when positive, overrides its mix with reads and updates.
	Workload      ycsb.Kind
	WriteFraction float64
	// ClientCPU is charged before each operation (0: DefaultClientCPU;
	// negative: none).
	ClientCPU time.Duration
	// MSCPU is the metadata server's CPU time per completion it takes
	// (a request received, a reply sent); 0: none, the server is
	// infinitely fast.
	MSCPU time.Duration
	// Warmup and Duration are virtual time (defaults 200us and 1ms); the
	// warm-up runs a workload of its own seed, so that the measured
	// operations are the ones the seed names.
	Warmup, Duration time.Duration
	// ReadTimeout is Clover's T_r (default 50ms); Chunks the 1 MiB chunks
	// of the memory node (default testbed.CloverChunks of the keys, value
	// size and threads).
	ReadTimeout time.Duration
	Chunks      int
}

// MaxThreads is the most Clover client threads a virtual-time rack runs
// (bench's --threads takes as many).
const MaxThreads = 4096

// CloverResult is what a run measured, in virtual time.
type CloverResult struct {
	// Clock is "virtual": the time every figure is in.
	Clock                 string
	Steering              string
	Threads               int
	WriteFraction         float64
	Ops, Errors           uint64
	Seconds               float64 // measured virtual time
	Mops                  float64
	CASSuccess            float64 // NaN without CAS
	BytesPerOp            float64 // frames into the switch, bytes, per operation
	ReadP99us, WriteP99us float64
	// WallSeconds is the wall time of the whole run (setup included);
	// Events the events the loop ran.
	WallSeconds float64
	Events      uint64
	FirstErr    string
	Metrics     clover.Metrics
	// MemoryTxGbps and MemoryRxGbps are the memory node's link load over
	// the window (frame bytes, without Ethernet overhead): how close the
	// 100 Gb/s link is to its limit.
	MemoryTxGbps, MemoryRxGbps float64
	// Switch is the switch's stats counter over the measured window, by
	// ctrl.StatNames.
	Switch map[string]uint64
}

// CloverRack is Clover on a virtual-time rack: the metadata server and
// one Clover client per thread, every one a goroutine under the scheduler
// when it runs. Phases (Load, Drive) run the loop until they end.
type CloverRack struct {
	R       *Rack
	S       *Sched
	MS      *clover.MetadataServer
	Clients []*clover.Client
	cfg     CloverConfig
	w       *ycsb.Workload
}

// NewCloverRack checks cfg, builds the rack and lays out Clover's region,
// starts the metadata server and connects every client thread.
func NewCloverRack(ctx context.Context, cfg CloverConfig) (_ *CloverRack, err error) {
	if cfg.ClientHosts == 0 {
		cfg.ClientHosts = 7
	}
	if cfg.Threads == 0 {
		cfg.Threads = 240
	}
	if cfg.ValueSize == 0 {
		cfg.ValueSize = 128
	}
	if cfg.Keys == 0 {
		cfg.Keys = 1024
	}
	if cfg.MemoryNodes == 0 {
		cfg.MemoryNodes = 1
	}
	if cfg.Zipf == 0 {
		cfg.Zipf = 0.99
	}
	if cfg.Workload == "" {
		cfg.Workload = ycsb.WorkloadA
	}
	if cfg.ClientCPU == 0 {
		cfg.ClientCPU = DefaultClientCPU
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = 50 * time.Millisecond
	}
	if cfg.Chunks == 0 {
		n, err := testbed.CloverChunks(cfg.Keys, cfg.ValueSize, cfg.Threads)
		if err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
		cfg.Chunks = n
	}
	if cfg.Steering == "" {
		cfg.Steering = rack.SteerOff
	}
	switch {
	case cfg.MemoryNodes < 1 || cfg.MemoryNodes > 16:
		return nil, fmt.Errorf("sim: clover: memory nodes %d: want 1 to 16", cfg.MemoryNodes)
	case cfg.ClientHosts < 1 || cfg.ClientHosts > 250:
		return nil, fmt.Errorf("sim: clover: client hosts %d: want 1 to 250", cfg.ClientHosts)
	case cfg.Threads < 1 || cfg.Threads > MaxThreads:
		return nil, fmt.Errorf("sim: clover: threads %d: want 1 to %d", cfg.Threads, MaxThreads)
	case cfg.MSCPU < 0 || cfg.MSCPU > time.Millisecond:
		return nil, fmt.Errorf("sim: clover: metadata server CPU %v per completion: want 0 to 1ms", cfg.MSCPU)
	case cfg.WriteFraction < 0 || cfg.WriteFraction > 1:
		return nil, fmt.Errorf("sim: clover: write fraction %g: want 0 to 1", cfg.WriteFraction)
	case cfg.Tracked < 0 || cfg.Tracked > cfg.Keys:
		return nil, fmt.Errorf("sim: clover: tracked keys %d: want 0 (all) to %d", cfg.Tracked, cfg.Keys)
	}
	w, err := ycsb.New(cfg.workload(cfg.Rack.Seed + 1))
	if err != nil {
		return nil, fmt.Errorf("sim: clover: workload: %w", err)
	}
	layout := testbed.CloverLayout(cfg.Keys, cfg.Chunks)
	if err := layout.Validate(); err != nil {
		return nil, fmt.Errorf("sim: clover: layout: %w", err)
	}
	rc := cfg.Rack
	rc.MemoryNodes, rc.Hosts = cfg.MemoryNodes, 1+cfg.ClientHosts
	rc.Steering, rc.ObjectSize = cfg.Steering, cfg.ValueSize
	if rc.TailTTL == 0 {
		// The switch steers to a tail for at most half of T_r.
		rc.TailTTL = cfg.ReadTimeout / 2
	}
	if cfg.Steering != rack.SteerOff && rc.TrackedKeys == nil {
		n := cfg.Tracked
		if n == 0 {
			n = -1
		}
		rc.TrackedKeys = testbed.HottestKeys(w, cfg.Keys, n, cfg.Rack.Seed)
	}
	rc.MemorySize = layout.Size()
	rc.MemoryInit = func(mn int, buf []byte) error { return clover.InitRegion(buf, mn, layout) }
	r, err := NewRack(ctx, rc)
	if err != nil {
		return nil, err
	}
	cr := &CloverRack{R: r, S: NewSched(r.Sim), cfg: cfg, w: w}
	defer func() {
		if err != nil {
			cr.Close()
		}
	}()
	s := cr.S
	msHost := r.Hosts[0]
	msCQ := s.NewCQ(msHost, 4*64*cfg.Threads)
	msCQ.CPU = cfg.MSCPU
	regions := make([]clover.RegionLayout, cfg.MemoryNodes)
	for i := range regions {
		regions[i] = layout
	}
	cr.MS, err = clover.NewMetadataServer(clover.MSConfig{Regions: regions,
		ReadTimeout: cfg.ReadTimeout, EpochPeriod: 30 * time.Second}, s.Device(msHost), msCQ)
	if err != nil {
		return nil, fmt.Errorf("sim: clover: metadata server: %w", err)
	}
	memCQs := make([]*rnic.CQ, cfg.MemoryNodes)
	for mn := range memCQs {
		memCQs[mn] = r.Memory[mn].Device().NewCQ(1024)
	}
	cr.Clients = make([]*clover.Client, cfg.Threads)
	for i := range cr.Clients {
		h := r.Hosts[1+i%cfg.ClientHosts]
		cq := s.NewCQ(h, 1024)
		conns := make([]clover.MemoryNodeConn, cfg.MemoryNodes)
		for mn := range conns {
			qp, _, err := r.Connect(h, cq.Q, r.Memory[mn], memCQs[mn], 256)
			if err != nil {
				return nil, fmt.Errorf("sim: clover client %d: %w", i, err)
			}
			conns[mn] = clover.MemoryNodeConn{QP: qp, Region: r.MemoryMR[mn].Remote()}
		}
		qpMS, msQP, err := r.Connect(h, cq.Q, msHost, msCQ.Q, 256)
		if err != nil {
			return nil, fmt.Errorf("sim: clover client %d: %w", i, err)
		}
		if err := cr.MS.AddClient(msQP); err != nil {
			return nil, fmt.Errorf("sim: clover client %d: %w", i, err)
		}
		cr.Clients[i], err = clover.NewClient(clover.ClientConfig{ID: i, ValueSize: cfg.ValueSize, Device: s.Device(h), CQ: cq, MS: qpMS,
			CursorCache: cfg.Keys, ReadTimeout: cfg.ReadTimeout,
			MemoryNodes: conns})
		if err != nil {
			return nil, fmt.Errorf("sim: clover client %d: %w", i, err)
		}
	}
	s.Go("clover-ms", func(ctx context.Context) error {
		if err := cr.MS.Serve(ctx); err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		return nil
	})
	return cr, nil
}

// workload is the YCSB configuration of cfg with seed.
func (cfg CloverConfig) workload(seed uint64) ycsb.Config {
	wcfg := ycsb.Config{Workload: cfg.Workload, ZipfConstant: cfg.Zipf, RecordCount: int64(cfg.Keys),
		ValueSize: cfg.ValueSize, Clients: cfg.Threads, Seed: seed}
	if cfg.WriteFraction > 0 {
		wcfg.Mix = ycsb.Proportions{Read: 1 - cfg.WriteFraction, Update: cfg.WriteFraction}
		if cfg.WriteFraction == 1 {
			wcfg.Mix = ycsb.Proportions{Update: 1}
		}
	}
	return wcfg
}

// Workload is the workload the rack measures (its seed is Rack.Seed+1).
func (cr *CloverRack) Workload() *ycsb.Workload { return cr.w }

// phase runs procs started by start until every one has returned, at
// most limit of virtual time, and returns the first error.
func (cr *CloverRack) phase(limit time.Duration, procs []*Proc) error {
	end := cr.R.Sim.Now() + int64(limit)
	for {
		cr.S.Run(min(cr.R.Sim.Now()+int64(100*time.Microsecond), end))
		done := true
		for _, p := range procs {
			if p.state != procDone {
				done = false
			} else if p.Err != nil {
				return fmt.Errorf("%s: %w", p.name, p.Err)
			}
		}
		if done {
			return nil
		}
		if cr.R.Sim.Now() >= end {
			return fmt.Errorf("sim: clover: phase not over after %v of virtual time", limit)
		}
	}
}

// Load creates every key of w (keys w.RecordKey(i), i < Keys), spread
// over at most 64 clients.
func (cr *CloverRack) Load(w *ycsb.Workload) error {
	n := min(len(cr.Clients), 64)
	var procs []*Proc
	for c := 0; c < n; c++ {
		procs = append(procs, cr.S.Go(fmt.Sprintf("load%d", c), func(ctx context.Context) error {
			val := make([]byte, cr.cfg.ValueSize)
			for i := c; i < cr.cfg.Keys; i += n {
				key := w.RecordKey(int64(i))
				testbed.FillValue(val, key)
				if err := cr.Clients[c].Create(ctx, key, val); err != nil && !errors.Is(err, clover.ErrExists) {
					return fmt.Errorf("sim: clover: load key %d: %w", key, err)
				}
			}
			return nil
		}))
	}
	return cr.phase(10*time.Second, procs)
}

// Driven is what Drive measured, in virtual time.
type Driven struct {
	Ops, Reads, Writes, Errors uint64
	Elapsed                    time.Duration
	All, Read, Write           *hdrhistogram.Histogram // ns
	FirstErr                   error
}

// Drive runs client i on w.Stream(i) for d of virtual time: each thread
// pays ClientCPU, then runs an operation, as long as it starts before d
// has passed; Drive returns once every thread has finished its last one.
// A read-modify-write counts as one read and one write, as in YCSB.
func (cr *CloverRack) Drive(w *ycsb.Workload, d time.Duration) (*Driven, error) {
	out := &Driven{All: newHist(), Read: newHist(), Write: newHist()}
	start := cr.R.Sim.Now()
	end := start + int64(d)
	clock := cr.S.Clock()
	last := start
	var procs []*Proc
	for i, kv := range cr.Clients {
		procs = append(procs, cr.S.Go(fmt.Sprintf("client%d", i), func(ctx context.Context) error {
			defer func() { last = max(last, cr.R.Sim.Now()) }()
			st := w.Stream(i)
			val := make([]byte, cr.cfg.ValueSize)
			buf := make([]byte, cr.cfg.ValueSize)
			var op ycsb.Op
			for st.Next(&op) {
				if cr.cfg.ClientCPU > 0 {
					if err := clock.Sleep(ctx, cr.cfg.ClientCPU); err != nil {
						return nil
					}
				}
				t0 := cr.R.Sim.Now()
				if t0 >= end {
					return nil
				}
				var err error
				h := out.Read
				switch op.Type {
				case ycsb.OpRead:
					err = kv.Get(ctx, op.Key, buf)
					out.Reads++
				case ycsb.OpUpdate, ycsb.OpInsert:
					st.FillValue(val[:op.ValueLen])
					err = kv.Put(ctx, op.Key, val[:op.ValueLen])
					out.Writes++
					h = out.Write
				case ycsb.OpReadModifyWrite:
					if err = kv.Get(ctx, op.Key, buf); err == nil {
						st.FillValue(val[:op.ValueLen])
						err = kv.Put(ctx, op.Key, val[:op.ValueLen])
					}
					out.Reads++
					out.Writes++
				default:
					err = fmt.Errorf("sim: clover: operation %v not supported", op.Type)
				}
				if ctx.Err() != nil {
					return nil
				}
				lat := cr.R.Sim.Now() - t0
				h.RecordValue(lat)
				out.All.RecordValue(lat)
				out.Ops++
				if err != nil {
					out.Errors++
					if out.FirstErr == nil {
						out.FirstErr = err
					}
				}
			}
			return nil
		}))
	}
	err := cr.phase(d+10*time.Second, procs)
	// From the start to the end of the last operation: the loop may have
	// run on past it.
	out.Elapsed = time.Duration(last - start)
	return out, err
}

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(100, int64(60*time.Second), 3) }

// Metrics sums the clients' counters.
func (cr *CloverRack) Metrics() clover.Metrics {
	var m clover.Metrics
	for _, c := range cr.Clients {
		m.Add(c.Metrics())
	}
	return m
}

// SwitchStats reads the switch's stats counter (by index) through the
// controller.
func (cr *CloverRack) SwitchStats(ctx context.Context) (map[int64]uint64, error) {
	return cr.R.Ctrl.ReadCounter(ctx, "SwordboxIngress.stats", nil)
}

// Close stops every goroutine under the scheduler and the rack.
func (cr *CloverRack) Close() error {
	err := cr.S.Stop()
	return errors.Join(err, cr.R.Close())
}

// RunClover builds the rack, loads every key, runs the warm-up (its own
// seed) and the measured duration in virtual time, and stops.
func RunClover(ctx context.Context, cfg CloverConfig) (res CloverResult, err error) {
	wall := time.Now()
	res = CloverResult{Clock: "virtual", CASSuccess: math.NaN(), ReadP99us: math.NaN(), WriteP99us: math.NaN()}
	if cfg.Warmup == 0 {
		cfg.Warmup = 200 * time.Microsecond
	}
	if cfg.Duration == 0 {
		cfg.Duration = time.Millisecond
	}
	if cfg.Warmup < 0 || cfg.Duration < 0 || cfg.Warmup+cfg.Duration > time.Minute {
		return res, fmt.Errorf("sim: clover: warm-up %v, duration %v: want >= 0, together at most 1m", cfg.Warmup, cfg.Duration)
	}
	cr, err := NewCloverRack(ctx, cfg)
	if err != nil {
		return res, err
	}
	defer func() {
		if cerr := cr.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	cfg = cr.cfg
	res.Steering, res.Threads = cfg.Steering, cfg.Threads
	m := cr.w.Mix()
	res.WriteFraction = (m.Update + m.Insert + m.ReadModifyWrite) / (m.Read + m.Update + m.Insert + m.ReadModifyWrite + m.Scan)
	if err := cr.Load(cr.w); err != nil {
		return res, err
	}
	warm, err := ycsb.New(cfg.workload(^(cfg.Rack.Seed + 1)))
	if err != nil {
		return res, err
	}
	if _, err := cr.Drive(warm, cfg.Warmup); err != nil {
		return res, fmt.Errorf("sim: clover: warm-up: %w", err)
	}
	m0, w0 := cr.Metrics(), cr.R.wireBytes()
	mem := cr.R.Memory[0]
	tx0, rx0 := mem.Out.Bytes, cr.R.links[0].Bytes
	sw0, _ := cr.SwitchStats(ctx)
	d, err := cr.Drive(cr.w, cfg.Duration)
	if err != nil {
		return res, err
	}
	m1, w1 := cr.Metrics(), cr.R.wireBytes()
	res.MemoryTxGbps = float64(mem.Out.Bytes-tx0) * 8 / d.Elapsed.Seconds() / 1e9
	res.MemoryRxGbps = float64(cr.R.links[0].Bytes-rx0) * 8 / d.Elapsed.Seconds() / 1e9
	sw1, _ := cr.SwitchStats(ctx)
	res.Switch = map[string]uint64{}
	for i, name := range ctrl.StatNames {
		res.Switch[name] = sw1[int64(i)] - sw0[int64(i)]
	}
	res.Ops, res.Errors = d.Ops, d.Errors
	if d.FirstErr != nil {
		res.FirstErr = d.FirstErr.Error()
	}
	res.Seconds = d.Elapsed.Seconds()
	res.Mops = float64(d.Ops) / res.Seconds / 1e6
	res.Metrics = m1
	res.Metrics.Sub(m0)
	if cas := res.Metrics.CAS; cas > 0 {
		res.CASSuccess = 1 - float64(res.Metrics.CASFailures)/float64(cas)
	}
	if d.Ops > 0 {
		res.BytesPerOp = float64(w1-w0) / float64(d.Ops)
	}
	res.ReadP99us, res.WriteP99us = p99(d.Read), p99(d.Write)
	res.Events = cr.R.Sim.Events()
	res.WallSeconds = time.Since(wall).Seconds()
	return res, nil
}

func p99(h *hdrhistogram.Histogram) float64 { return testbed.Percentile(h, 99) }

// wireBytes is the frame bytes that entered the switch so far (every
// frame between two members enters it once).
func (r *Rack) wireBytes() uint64 {
	var b uint64
	for _, h := range r.Memory {
		b += h.Out.Bytes
	}
	for _, h := range r.Hosts {
		b += h.Out.Bytes
	}
	return b
}
