package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/swordbox/swordbox/clover"
	"github.com/swordbox/swordbox/ctrl"
	"github.com/swordbox/swordbox/ctrl/rack"
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
	// Rack is the rack (Hosts, MemoryNodes, Steering, TrackedKeys,
	// ObjectSize and MemoryInit are set from the fields below).
	Rack Config
	// Steering is the switch's mode (off, write, read-write); Tracked
	// how many of the hottest keys it steers (0: all).
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
	// Warmup and Duration are virtual time (defaults 200us and 1ms).
	Warmup, Duration time.Duration
	// ReadTimeout is Clover's T_r (default 50ms); Chunks the 1 MiB chunks
	// of the memory node (default 96).
	ReadTimeout time.Duration
	Chunks      int
}

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
	// Switch is the switch's stats counter over the measured window, by
	// ctrl.StatNames.
	Switch map[string]uint64
}

// RunClover builds the rack, lays out Clover's region, starts the metadata
// server and the clients under the scheduler, loads every key, runs the
// warm-up and the measured duration in virtual time, and stops.
func RunClover(ctx context.Context, cfg CloverConfig) (CloverResult, error) {
	wall := time.Now()
	res := CloverResult{Clock: "virtual", CASSuccess: math.NaN()}
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
	if cfg.Zipf == 0 {
		cfg.Zipf = 0.99
	}
	if cfg.Workload == "" {
		cfg.Workload = ycsb.WorkloadA
	}
	if cfg.ClientCPU == 0 {
		cfg.ClientCPU = DefaultClientCPU
	}
	if cfg.Warmup == 0 {
		cfg.Warmup = 200 * time.Microsecond
	}
	if cfg.Duration == 0 {
		cfg.Duration = time.Millisecond
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = 50 * time.Millisecond
	}
	if cfg.Chunks == 0 {
		cfg.Chunks = 96
	}
	if cfg.Steering == "" {
		cfg.Steering = rack.SteerOff
	}
	switch {
	case cfg.ClientHosts < 1 || cfg.ClientHosts > 250:
		return res, fmt.Errorf("sim: clover: client hosts %d: want 1 to 250", cfg.ClientHosts)
	case cfg.Threads < 1 || cfg.Threads > 4000:
		return res, fmt.Errorf("sim: clover: threads %d: want 1 to 4000", cfg.Threads)
	case cfg.MSCPU < 0 || cfg.MSCPU > time.Millisecond:
		return res, fmt.Errorf("sim: clover: metadata server CPU %v per completion: want 0 to 1ms", cfg.MSCPU)
	case cfg.WriteFraction < 0 || cfg.WriteFraction > 1:
		return res, fmt.Errorf("sim: clover: write fraction %g: want 0 to 1", cfg.WriteFraction)
	case cfg.Warmup < 0 || cfg.Duration <= 0 || cfg.Duration > time.Minute:
		return res, fmt.Errorf("sim: clover: warm-up %v, duration %v: want >= 0 and (0, 1m]", cfg.Warmup, cfg.Duration)
	}
	res.Steering, res.Threads = cfg.Steering, cfg.Threads
	wcfg := ycsb.Config{Workload: cfg.Workload, ZipfConstant: cfg.Zipf, RecordCount: int64(cfg.Keys),
		ValueSize: cfg.ValueSize, Clients: cfg.Threads, Seed: cfg.Rack.Seed + 1}
	if cfg.WriteFraction > 0 || cfg.Workload == ycsb.WorkloadC {
		wcfg.Mix = ycsb.Proportions{Read: 1 - cfg.WriteFraction, Update: cfg.WriteFraction}
		if cfg.WriteFraction == 1 {
			wcfg.Mix = ycsb.Proportions{Update: 1}
		}
	}
	w, err := ycsb.New(wcfg)
	if err != nil {
		return res, fmt.Errorf("sim: clover: workload: %w", err)
	}
	m := w.Mix()
	res.WriteFraction = (m.Update + m.Insert + m.ReadModifyWrite) / (m.Read + m.Update + m.Insert + m.ReadModifyWrite + m.Scan)

	layout := clover.RegionLayout{Shortcuts: 2*cfg.Keys + 64, Chunks: cfg.Chunks, ChunkSize: clover.DefaultChunkSize}
	if err := layout.Validate(); err != nil {
		return res, fmt.Errorf("sim: clover: layout: %w", err)
	}
	rc := cfg.Rack
	rc.MemoryNodes, rc.Hosts = 1, 1+cfg.ClientHosts
	rc.Steering, rc.ObjectSize = cfg.Steering, cfg.ValueSize
	if rc.TailTTL == 0 {
		// The switch steers to a tail for at most half of T_r.
		rc.TailTTL = cfg.ReadTimeout / 2
	}
	if cfg.Steering != rack.SteerOff {
		rc.TrackedKeys = hottestKeys(w, cfg.Keys, cfg.Tracked)
		if cfg.Tracked < 0 {
			return res, fmt.Errorf("sim: clover: tracked keys %d: want 0 (all) to %d", cfg.Tracked, cfg.Keys)
		}
	}
	rc.MemorySize = layout.Size()
	rc.MemoryInit = func(_ int, buf []byte) error { return clover.InitRegion(buf, 0, layout) }
	r, err := NewRack(ctx, rc)
	if err != nil {
		return res, err
	}
	defer r.Close()
	s := NewSched(r.Sim)

	msHost := r.Hosts[0]
	msDev := s.Device(msHost)
	msCQ := s.NewCQ(msHost, 4*64*cfg.Threads)
	msCQ.CPU = cfg.MSCPU
	ms, err := clover.NewMetadataServer(clover.MSConfig{Regions: []clover.RegionLayout{layout},
		ReadTimeout: cfg.ReadTimeout, EpochPeriod: 30 * time.Second}, msDev, msCQ)
	if err != nil {
		return res, fmt.Errorf("sim: clover: metadata server: %w", err)
	}
	region := r.MemoryMR[0].Remote()
	memCQ := r.Memory[0].Device().NewCQ(1024)
	clients := make([]*clover.Client, cfg.Threads)
	for i := range clients {
		h := r.Hosts[1+i%cfg.ClientHosts]
		cq := s.NewCQ(h, 1024)
		qpMN, _, err := r.Connect(h, cq.Q, r.Memory[0], memCQ, 256)
		if err != nil {
			return res, fmt.Errorf("sim: clover client %d: %w", i, err)
		}
		qpMS, msQP, err := r.Connect(h, cq.Q, msHost, msCQ.Q, 256)
		if err != nil {
			return res, fmt.Errorf("sim: clover client %d: %w", i, err)
		}
		if err := ms.AddClient(msQP); err != nil {
			return res, fmt.Errorf("sim: clover client %d: %w", i, err)
		}
		clients[i], err = clover.NewClient(clover.ClientConfig{ID: i, ValueSize: cfg.ValueSize, Device: s.Device(h), CQ: cq, MS: qpMS,
			CursorCache: cfg.Keys, ReadTimeout: cfg.ReadTimeout,
			MemoryNodes: []clover.MemoryNodeConn{{QP: qpMN, Region: region}}})
		if err != nil {
			return res, fmt.Errorf("sim: clover client %d: %w", i, err)
		}
	}
	s.Go("clover-ms", func(ctx context.Context) error {
		if err := ms.Serve(ctx); err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		return nil
	})

	// Load: every key created once, spread over the clients.
	loaders := min(cfg.Threads, 64)
	for c := 0; c < loaders; c++ {
		s.Go(fmt.Sprintf("load%d", c), func(ctx context.Context) error {
			val := make([]byte, cfg.ValueSize)
			for i := c; i < cfg.Keys; i += loaders {
				key := w.RecordKey(int64(i))
				for j := range val {
					val[j] = byte(32 + (int(key)+j)%95)
				}
				if err := clients[c].Create(ctx, key, val); err != nil && !errors.Is(err, clover.ErrExists) {
					return fmt.Errorf("sim: clover: load key %d: %w", key, err)
				}
			}
			return nil
		})
	}
	loadEnd := r.Sim.Now() + int64(10*time.Second)
	for r.Sim.Now() < loadEnd {
		s.Run(r.Sim.Now() + int64(100*time.Microsecond))
		done := true
		for _, p := range s.Procs()[1:] {
			if p.state != procDone {
				done = false
			} else if p.Err != nil {
				return res, p.Err
			}
		}
		if done {
			break
		}
	}

	// The run: each thread its own stream; latency and counters only
	// inside the measured window.
	start := r.Sim.Now()
	from, to := start+int64(cfg.Warmup), start+int64(cfg.Warmup+cfg.Duration)
	rd, wr := hdrhistogram.New(100, int64(60*time.Second), 3), hdrhistogram.New(100, int64(60*time.Second), 3)
	var ops, errs uint64
	var m0 clover.Metrics
	var w0 uint64
	clock := s.Clock()
	for i := range clients {
		s.Go(fmt.Sprintf("client%d", i), func(ctx context.Context) error {
			st := w.Stream(i)
			kv := clients[i]
			val := make([]byte, cfg.ValueSize)
			buf := make([]byte, cfg.ValueSize)
			var op ycsb.Op
			for st.Next(&op) {
				if cfg.ClientCPU > 0 {
					if err := clock.Sleep(ctx, cfg.ClientCPU); err != nil {
						return nil
					}
				}
				t0 := r.Sim.Now()
				if t0 >= to {
					return nil
				}
				var err error
				write := false
				switch op.Type {
				case ycsb.OpRead:
					err = kv.Get(ctx, op.Key, buf)
				case ycsb.OpUpdate, ycsb.OpInsert:
					st.FillValue(val[:op.ValueLen])
					err = kv.Put(ctx, op.Key, val[:op.ValueLen])
					write = true
				default:
					err = fmt.Errorf("sim: clover: operation %v not run here", op.Type)
				}
				if ctx.Err() != nil {
					return nil
				}
				if t0 >= from && r.Sim.Now() <= to {
					ops++
					d := r.Sim.Now() - t0
					if write {
						wr.RecordValue(d)
					} else {
						rd.RecordValue(d)
					}
					if err != nil {
						errs++
						if res.FirstErr == "" {
							res.FirstErr = err.Error()
						}
					}
				}
			}
			return nil
		})
	}
	s.Run(from)
	for _, c := range clients {
		m0.Add(c.Metrics())
	}
	w0 = r.wireBytes()
	sw0, _ := r.Ctrl.ReadCounter(ctx, "SwordboxIngress.stats", nil)
	s.Run(to)
	var m1 clover.Metrics
	for _, c := range clients {
		m1.Add(c.Metrics())
	}
	w1 := r.wireBytes()
	sw1, _ := r.Ctrl.ReadCounter(ctx, "SwordboxIngress.stats", nil)
	res.Switch = map[string]uint64{}
	for i, name := range ctrl.StatNames {
		res.Switch[name] = sw1[int64(i)] - sw0[int64(i)]
	}
	if err := s.Stop(); err != nil {
		return res, err
	}
	for _, p := range s.Procs() {
		if p.Err != nil {
			return res, fmt.Errorf("%s: %w", p.name, p.Err)
		}
	}
	res.Ops, res.Errors = ops, errs
	res.Seconds = cfg.Duration.Seconds()
	res.Mops = float64(ops) / res.Seconds / 1e6
	res.Metrics = m1
	res.Metrics.Sub(m0)
	if cas := res.Metrics.CAS; cas > 0 {
		res.CASSuccess = 1 - float64(res.Metrics.CASFailures)/float64(cas)
	}
	if ops > 0 {
		res.BytesPerOp = float64(w1-w0) / float64(ops)
	}
	res.ReadP99us, res.WriteP99us = p99(rd), p99(wr)
	res.Events = r.Sim.Events()
	res.WallSeconds = time.Since(wall).Seconds()
	return res, nil
}

func p99(h *hdrhistogram.Histogram) float64 {
	if h.TotalCount() == 0 {
		return math.NaN()
	}
	return float64(h.ValueAtQuantile(99)) / 1e3
}

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

// hottestKeys returns the n most popular keys of the workload (all keys
// when n <= 0 or n >= keys), estimated by drawing from its generator with a
// fixed seed.
func hottestKeys(w *ycsb.Workload, keys, n int) []uint64 {
	if n <= 0 || n >= keys {
		out := make([]uint64, keys)
		for i := range out {
			out[i] = w.RecordKey(int64(i))
		}
		return out
	}
	cfg := w.Config()
	cfg.Clients, cfg.Seed, cfg.Workload, cfg.Mix = 1, 0x5eed, ycsb.WorkloadC, ycsb.Proportions{}
	cfg.Distribution = w.Distribution()
	sw, err := ycsb.New(cfg)
	if err != nil {
		return nil
	}
	st := sw.Stream(0)
	count := map[uint64]int{}
	var op ycsb.Op
	for i := 0; i < 200_000 && st.Next(&op); i++ {
		count[op.Key]++
	}
	ks := make([]uint64, 0, len(count))
	for k := range count {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b uint64) int {
		if count[a] != count[b] {
			return count[b] - count[a]
		}
		if a < b {
			return -1
		}
		return 1
	})
	return ks[:min(n, len(ks))]
}
