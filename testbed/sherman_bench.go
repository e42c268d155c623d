package testbed

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/swordbox/swordbox/middlebox"
	"github.com/swordbox/swordbox/roce/rnic"
	"github.com/swordbox/swordbox/sherman"
	"github.com/swordbox/swordbox/testbed/report"
	"github.com/swordbox/swordbox/testbed/ycsb"
)

// ScenarioSherman names the Sherman benchmark in reports.
const ScenarioSherman = "sherman"

// Key distributions of the Sherman benchmark.
const (
	DistUniform = "uniform"
	DistZipf    = "zipf"
)

// ShermanCellSpec is one cell of the Sherman benchmark: a fresh rack in one
// mode, the key space loaded as Sherman's benchmark does, then Threads
// closed-loop client threads, each operation a search with probability
// ReadRatio/100 and otherwise an insert (update) of a key drawn uniformly
// or by zipf over the key space.
type ShermanCellSpec struct {
	Mode        string
	ReadRatio   int // percent
	Dist        string
	Zipf        float64
	KeySpace    int
	WarmRatio   float64 // share of the key space loaded before the run (Sherman: 0.8)
	Threads     int
	ClientHosts int
	MemoryNodes int
	Warmup      time.Duration
	Duration    time.Duration
	Seed        uint64
	Timing      *rnic.Timing
}

// Workload names the cell's operation mix and key distribution.
func (s ShermanCellSpec) Workload() string {
	d := s.Dist
	if d == DistZipf {
		d += strconv.FormatFloat(s.Zipf, 'g', -1, 64)
	}
	return fmt.Sprintf("read%d-%s", s.ReadRatio, d)
}

// ShermanKey is Sherman's benchmark key of key number n: (CityHash64(n) +
// 1) mod the key space (to_key in test/benchmark.cpp), so that popular key
// numbers scatter over the leaves.
func ShermanKey(n, keySpace uint64) uint64 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], n)
	return (sherman.CityHash64(b[:]) + 1) % keySpace
}

func (s ShermanCellSpec) validate() error {
	switch s.Mode {
	case ShermanPlain, ShermanHierarchical, ShermanCASToWrite, ShermanCASToWriteNode:
	default:
		return fmt.Errorf("testbed: sherman: mode %q: want one of %v", s.Mode, ShermanModes)
	}
	if s.ReadRatio < 0 || s.ReadRatio > 100 {
		return fmt.Errorf("testbed: sherman: read ratio %d: want 0..100", s.ReadRatio)
	}
	switch s.Dist {
	case DistUniform:
	case DistZipf:
		if !(s.Zipf > 0 && s.Zipf < 10) {
			return fmt.Errorf("testbed: sherman: zipf %g: want (0, 10)", s.Zipf)
		}
	default:
		return fmt.Errorf("testbed: sherman: distribution %q: want %s or %s", s.Dist, DistUniform, DistZipf)
	}
	if s.KeySpace < 64 || s.KeySpace > 1<<22 {
		return fmt.Errorf("testbed: sherman: key space %d: want 64..4194304", s.KeySpace)
	}
	if !(s.WarmRatio > 0 && s.WarmRatio <= 1) {
		return fmt.Errorf("testbed: sherman: warm ratio %g: want (0, 1]", s.WarmRatio)
	}
	if s.Threads < 1 || s.Threads > 1024 {
		return fmt.Errorf("testbed: sherman: %d threads: want 1..1024", s.Threads)
	}
	if s.Duration <= 0 || s.Warmup < 0 {
		return fmt.Errorf("testbed: sherman: duration %s, warm-up %s: want a positive duration", s.Duration, s.Warmup)
	}
	return nil
}

// shermanChooser draws key numbers for one thread.
type shermanChooser struct {
	rng  *rand.Rand
	zipf *ycsb.Zipfian
	n    uint64
}

func (c *shermanChooser) next() uint64 {
	if c.zipf != nil {
		return uint64(c.zipf.Next(c.rng))
	}
	return c.rng.Uint64N(c.n)
}

// RunShermanCell builds a rack for spec, loads the key space, runs the
// workload for the warm-up and then the measured duration, checks the
// tree's invariants and the lock words afterwards, and returns what it
// measured. A broken invariant is an error.
func RunShermanCell(ctx context.Context, spec ShermanCellSpec) (report.Cell, error) {
	cell := report.Cell{System: "sherman", Scenario: ScenarioSherman, Mode: spec.Mode, Workload: spec.Workload(),
		Param: fmt.Sprintf("threads=%d", spec.Threads), Clients: spec.Threads}
	if err := spec.validate(); err != nil {
		return cell, err
	}
	var zipf *ycsb.Zipfian
	if spec.Dist == DistZipf {
		z, err := ycsb.NewZipfian(0, int64(spec.KeySpace)-1, spec.Zipf)
		if err != nil {
			return cell, fmt.Errorf("testbed: sherman: %w", err)
		}
		zipf = z
	}
	r, err := NewShermanRack(ctx, ShermanConfig{Mode: spec.Mode, MemoryNodes: spec.MemoryNodes, ClientHosts: spec.ClientHosts,
		Threads: spec.Threads, Timing: spec.Timing, MemorySize: ShermanMemory(spec.KeySpace, spec.Threads)})
	if err != nil {
		return cell, err
	}
	defer r.Close()
	ks := uint64(spec.KeySpace)
	if err := shermanLoad(ctx, r, ks, spec.WarmRatio); err != nil {
		return cell, err
	}

	type thread struct {
		ops, reads, writes, errs uint64
		all, rd, wr              *hdrhistogram.Histogram
		m0, m1                   sherman.Metrics
		err                      error
	}
	ths := make([]thread, len(r.Clients))
	var phase atomic.Int32 // 0 warm-up, 1 measuring, 2 stop
	var wg sync.WaitGroup
	for i, c := range r.Clients {
		ths[i].all, ths[i].rd, ths[i].wr = newHist(), newHist(), newHist()
		wg.Add(1)
		go func(i int, c *sherman.Client) {
			defer wg.Done()
			th := &ths[i]
			ch := &shermanChooser{rng: rand.New(rand.NewPCG(spec.Seed, uint64(i))), n: ks}
			if zipf != nil {
				ch.zipf = zipf.Clone()
			}
			seq := uint64(0)
			measuring := false
			for {
				p := phase.Load()
				if p == 2 {
					if measuring {
						th.m1 = c.Metrics()
					}
					return
				}
				if p == 1 && !measuring {
					measuring = true
					th.m0 = c.Metrics()
				}
				key := ShermanKey(ch.next(), ks)
				read := ch.rng.IntN(100) < spec.ReadRatio
				seq++
				t0 := time.Now()
				var err error
				if read {
					_, _, err = c.Search(ctx, key)
				} else {
					err = c.Insert(ctx, key, uint64(i+1)<<40|seq)
				}
				if !measuring {
					if err != nil && th.err == nil {
						th.err = err
					}
					continue
				}
				d := int64(time.Since(t0))
				th.all.RecordValue(d)
				if read {
					th.rd.RecordValue(d)
					th.reads++
				} else {
					th.wr.RecordValue(d)
					th.writes++
				}
				th.ops++
				if err != nil {
					th.errs++
					if th.err == nil {
						th.err = err
					}
				}
				if err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
					th.m1 = c.Metrics()
					return
				}
			}
		}(i, c)
	}
	sleep := func(d time.Duration) error {
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	var c0, c1 middlebox.Counters
	serr := sleep(spec.Warmup)
	w0 := r.Wire()
	c0 = r.Mbox.Counters()
	phase.Store(1)
	start := time.Now()
	if serr == nil {
		serr = sleep(spec.Duration)
	}
	phase.Store(2)
	elapsed := time.Since(start)
	w1 := r.Wire()
	c1 = r.Mbox.Counters()
	wg.Wait()
	if serr != nil {
		return cell, serr
	}

	all, rd, wr := newHist(), newHist(), newHist()
	var ops, errs uint64
	var m sherman.Metrics
	var firstErr error
	for i := range ths {
		th := &ths[i]
		all.Merge(th.all)
		rd.Merge(th.rd)
		wr.Merge(th.wr)
		ops += th.ops
		errs += th.errs
		if th.err != nil && firstErr == nil {
			firstErr = th.err
		}
		d := th.m1
		d.Sub(th.m0)
		m.Add(d)
	}
	n := float64(ops)
	cell.Ops, cell.Errors, cell.Seconds = ops, errs, elapsed.Seconds()
	cell.OpsPerSec = n / elapsed.Seconds()
	cell.P50us, cell.P99us, cell.P999us = Percentile(all, 50), Percentile(all, 99), Percentile(all, 99.9)
	cell.ReadP99us, cell.WriteP99us = Percentile(rd, 99), Percentile(wr, 99)
	cell.BytesPerOp = float64(w1.Bytes-w0.Bytes) / n
	cell.VerbsPerOp = float64(m.Verbs) / n
	cell.CASSuccessRate = math.NaN()
	if m.CAS > 0 {
		cell.CASSuccessRate = 1 - float64(m.CASFailures)/float64(m.CAS)
	}
	cell.RetriesPerOp = float64(m.CASFailures) / n
	cell.Steering = map[string]uint64{
		"lock_cas": m.CAS, "lock_cas_failed": m.CASFailures, "hand_overs": m.HandOvers,
		"cache_hits": m.CacheHits, "cache_misses": m.CacheMisses, "leaf_splits": m.LeafSplits,
		"mbox_cas_to_write": c1.CASToWrite - c0.CASToWrite, "mbox_remapped": c1.Remapped - c0.Remapped,
		"mbox_barrier_drops": c1.Drops[middlebox.DropBarrier] - c0.Drops[middlebox.DropBarrier],
		"mbox_parked":        c1.Parked - c0.Parked, "mbox_cas_answered_locally": c1.CASAnsweredLocally - c0.CASAnsweredLocally,
		"mbox_retransmits": c1.Retransmits - c0.Retransmits, "mbox_replayed": c1.Replayed - c0.Replayed,
		"mbox_naks_out": c1.NAKsOut - c0.NAKsOut, "mbox_drops": c1.TotalDrops() - c0.TotalDrops(),
	}
	if firstErr != nil {
		cell.Note = fmt.Sprintf("%d errors, first: %v", errs, firstErr)
	}
	if _, st, err := r.Check(); err != nil {
		return cell, fmt.Errorf("testbed: sherman: after the run: %w", err)
	} else if cell.Note == "" {
		cell.Note = fmt.Sprintf("tree after the run: %d levels, %d leaves, %d keys; invariants hold, all locks free", st.Height, st.Leaves, st.Keys)
	}
	return cell, nil
}

// ShermanMemory sizes a memory node's data region for a key space and a
// thread count: leaves half full after splits (27 keys per KiB), and a
// chunk for each thread's allocator besides (each thread holds one
// partly used chunk), with 64 to spare and never fewer than 256.
func ShermanMemory(keySpace, threads int) int {
	chunks := max(256, threads+64)
	need := (keySpace/27+1)*sherman.PageSize*2 + chunks*sherman.DefaultChunkSize
	mb := (need + (1<<20 - 1)) >> 20
	return mb << 20
}

// shermanLoad inserts key numbers 1 .. warm*keySpace, as Sherman's
// benchmark warms its tree, spread over the rack's threads.
func shermanLoad(ctx context.Context, r *ShermanRack, keySpace uint64, warm float64) error {
	end := uint64(warm * float64(keySpace))
	n := uint64(len(r.Clients))
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, c := range r.Clients {
		wg.Add(1)
		go func(i uint64, c *sherman.Client) {
			defer wg.Done()
			for k := 1 + i; k < end; k += n {
				if err := c.Insert(ctx, ShermanKey(k, keySpace), 2*k); err != nil {
					errs[i] = fmt.Errorf("testbed: sherman load: key number %d: %w", k, err)
					return
				}
			}
		}(uint64(i), c)
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ShermanSuiteConfig is a Sherman benchmark run: every read ratio, key
// distribution, thread count and mode.
type ShermanSuiteConfig struct {
	Modes       []string
	ReadRatios  []int
	Dists       []string
	Threads     []int
	KeySpace    int
	WarmRatio   float64
	Zipf        float64
	ClientHosts int
	MemoryNodes int
	Warmup      time.Duration
	Duration    time.Duration
	Seed        uint64
	Timing      string
}

// Defaults of the Sherman benchmark.
var (
	DefaultShermanReadRatios = []int{100, 95, 50, 0}
	DefaultShermanDists      = []string{DistUniform, DistZipf}
	DefaultShermanThreads    = []int{8, 16, 32, 64, 128}
)

// Cells expands the configuration, checking every value.
func (c ShermanSuiteConfig) Cells() ([]ShermanCellSpec, error) {
	if len(c.Modes) == 0 {
		c.Modes = ShermanModes
	}
	if len(c.ReadRatios) == 0 {
		c.ReadRatios = DefaultShermanReadRatios
	}
	if len(c.Dists) == 0 {
		c.Dists = DefaultShermanDists
	}
	if len(c.Threads) == 0 {
		c.Threads = DefaultShermanThreads
	}
	if c.WarmRatio == 0 {
		c.WarmRatio = 0.8
	}
	if c.Zipf == 0 {
		c.Zipf = 0.99
	}
	timing, err := TimingModel(c.Timing)
	if err != nil {
		return nil, err
	}
	var out []ShermanCellSpec
	for _, rr := range c.ReadRatios {
		for _, d := range c.Dists {
			for _, t := range c.Threads {
				for _, m := range c.Modes {
					s := ShermanCellSpec{Mode: m, ReadRatio: rr, Dist: d, Zipf: c.Zipf, KeySpace: c.KeySpace, WarmRatio: c.WarmRatio,
						Threads: t, ClientHosts: c.ClientHosts, MemoryNodes: c.MemoryNodes, Warmup: c.Warmup, Duration: c.Duration,
						Seed: c.Seed, Timing: timing}
					if err := s.validate(); err != nil {
						return nil, err
					}
					out = append(out, s)
				}
			}
		}
	}
	return out, nil
}

// RunShermanSuite runs every cell on a fresh rack and returns the run.
func RunShermanSuite(ctx context.Context, c ShermanSuiteConfig, progress func(i, n int, label string)) (*report.Run, error) {
	specs, err := c.Cells()
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	started := time.Now()
	timing := c.Timing
	if timing == "" {
		timing = "none"
	}
	run := &report.Run{ID: started.UTC().Format("20060102-150405"), Started: started, Scenario: ScenarioSherman, Baseline: ShermanPlain,
		Config: [][2]string{
			{"system", "Sherman (sherman/): B-link tree, 1 KB pages, locks in memory-node device memory, on the in-process software rack"},
			{"rack", fmt.Sprintf("%d memory node(s) and %d client hosts (threads spread over them, each its own QPs) on in-memory links through the middlebox (middlebox.Loop, one shard; a side with several members meets in an L2 hub): plain and hierarchical forward every connection unchanged; cas-to-write and cas-to-write-node multiplex (see modes)", max(1, c.MemoryNodes), max(1, c.ClientHosts))},
			{"modes", "plain: every thread CASes lock words; hierarchical: Sherman's CN-local lock table with hand-over (<= 8); cas-to-write: plain clients, the middlebox moves each memory node's lock region onto one shared connection and converts lock CAS to WRITE (a release waits behind its data WRITE by the engine's barrier: drop, NAK, retransmission); cas-to-write-node: the same with the node's data region on the shared connection too (RC order keeps each release behind its data)"},
			{"links", "in-memory, no faults; bytes counted at the middlebox's ingress on both sides"},
			{"RNIC timing model (memory nodes)", timing},
			{"key space", fmt.Sprintf("%d keys, key = (CityHash64(n)+1) mod key space (Sherman's to_key); %.0f%% loaded before the run", c.KeySpace, 100*specs[0].WarmRatio)},
			{"operations", "search with probability read ratio, else insert (update or insert); zipf is YCSB's zipfian over key numbers"},
			{"duration per cell", fmt.Sprintf("%s measured after %s warm-up", c.Duration, c.Warmup)},
			{"seed", strconv.FormatUint(c.Seed, 10)},
			{"machine", fmt.Sprintf("%s, %d CPUs, %s/%s, %s", host, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())},
		}}
	for i, s := range specs {
		label := fmt.Sprintf("%s threads=%d %s", s.Workload(), s.Threads, s.Mode)
		if progress != nil {
			progress(i, len(specs), label)
		}
		cell, err := RunShermanCell(ctx, s)
		if err != nil {
			return run, fmt.Errorf("cell %d (%s): %w", i+1, label, err)
		}
		run.Cells = append(run.Cells, cell)
	}
	if progress != nil {
		progress(len(specs), len(specs), "done")
	}
	return run, nil
}
