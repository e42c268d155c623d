package testbed

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/swordbox/swordbox/roce/rnic"
	"github.com/swordbox/swordbox/swarm"
	"github.com/swordbox/swordbox/testbed/report"
	"github.com/swordbox/swordbox/testbed/ycsb"
)

// SwarmInsertRoom is the index slots a SWARM-KV cell keeps beyond its keys
// for a workload's inserts (YCSB D).
const SwarmInsertRoom = 32768

// SWARM-KV bench modes: what sits between the clients and the memory
// nodes.
const (
	// SwarmDirect: clients reach the memory nodes through plain L2
	// forwarding.
	SwarmDirect = "direct"
	// SwarmMux: the middlebox multiplexes every client QP onto one shared
	// connection per memory node.
	SwarmMux = "mux"
	// SwarmMuxCAS: multiplexing, and the middlebox replaces the CMP_SWAPs
	// on the key slots (CAS-MAX of metadata words, timestamp locks) by
	// WRITEs of their outcome.
	SwarmMuxCAS = "mux+cas-to-write"
)

// SwarmModes lists the modes in their default order.
var SwarmModes = []string{SwarmDirect, SwarmMux, SwarmMuxCAS}

// SwarmCellSpec is one cell of the SWARM-KV bench.
type SwarmCellSpec struct {
	Mode        string
	Workload    ycsb.Kind
	Keys        int
	ValueSize   int
	Zipf        float64
	Threads     int
	ClientHosts int
	Warmup      time.Duration
	Duration    time.Duration
	Seed        uint64
	Timing      *rnic.Timing
	// KillAt, when positive, crashes memory node KillNode that long into
	// the measured run.
	KillAt   time.Duration
	KillNode int
	// Sample is the period of the throughput series (default 100ms).
	Sample time.Duration
}

// SwarmCell is what a SWARM-KV cell measured: the common cell, round
// trips per operation as the clients counted them, and the throughput
// series.
type SwarmCell struct {
	report.Cell
	// Mean round trips per get and per put, and the share of each that
	// took one round trip.
	GetRTT, PutRTT       float64
	GetOneRTT, PutOneRTT float64
	// Share of puts on Safe-Guess's fast path; out-of-place reads and
	// CAS-MAX retries per operation.
	FastWrites, OutOfPlacePerOp, CASRetriesPerOp float64
	// Frames on the memory nodes' links per operation (both directions).
	MemFramesPerOp float64
	// Series is the completed operations per second in each Sample period
	// of the measured run.
	Series   []float64
	SampleMS float64
	// KilledAtS is when the memory node was killed (seconds into the run).
	KilledAtS float64
}

// swarmBed is one mode's rack, loaded and warmed up.
type swarmBed struct {
	spec SwarmCellSpec
	wcfg ycsb.Config
	r    *SwarmRack
}

// newSwarmBed builds a SWARM-KV rack for spec (3 memory nodes, one replica
// of every key on each), loads the keys and runs the warm-up.
func newSwarmBed(ctx context.Context, spec SwarmCellSpec) (*swarmBed, error) {
	var mbox, conv bool
	switch spec.Mode {
	case SwarmDirect:
	case SwarmMux:
		mbox = true
	case SwarmMuxCAS:
		mbox, conv = true, true
	default:
		return nil, fmt.Errorf("testbed: swarm mode %q: want %s, %s or %s", spec.Mode, SwarmDirect, SwarmMux, SwarmMuxCAS)
	}
	wcfg := ycsb.Config{Workload: spec.Workload, ZipfConstant: spec.Zipf, RecordCount: int64(spec.Keys),
		ValueSize: spec.ValueSize, Clients: spec.Threads, Seed: spec.Seed, Duration: spec.Duration}
	w, err := ycsb.New(wcfg)
	if err != nil {
		return nil, fmt.Errorf("testbed: workload: %w", err)
	}
	slots := spec.Keys
	if mix, _, _ := ycsb.Preset(spec.Workload); mix.Insert > 0 {
		slots += SwarmInsertRoom
	}
	r, err := NewSwarmRack(ctx, SwarmConfig{Threads: spec.Threads, ClientHosts: spec.ClientHosts, Keys: slots,
		ValueSize: spec.ValueSize, Middlebox: mbox, CASToWrite: conv, Timing: spec.Timing})
	if err != nil {
		return nil, err
	}
	if err := r.Load(ctx, w, spec.Keys); err != nil {
		r.Close()
		return nil, err
	}
	if spec.Warmup > 0 {
		ww, err := ycsb.New(func() ycsb.Config { c := wcfg; c.Seed = ^spec.Seed; return c }())
		if err == nil {
			_, err = Drive(ctx, ww, r.KVs(), spec.ValueSize, spec.Warmup)
		}
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("testbed: warm-up: %w", err)
		}
	}
	return &swarmBed{spec: spec, wcfg: wcfg, r: r}, nil
}

// swarmTally accumulates one mode's measured slices.
type swarmTally struct {
	load       *Load
	m0         swarm.Metrics
	w0         WireStats
	mb0        map[string]uint64
	series     []float64
	killedAtS  float64
	note       string
	sampleTime time.Duration
}

func (b *swarmBed) begin() *swarmTally {
	t := &swarmTally{load: &Load{All: newHist(), Read: newHist(), Write: newHist()}, m0: b.r.Metrics(), w0: b.r.MemoryWire()}
	t.mb0 = b.mboxCounters()
	return t
}

func (b *swarmBed) mboxCounters() map[string]uint64 {
	if b.r.Mbox == nil {
		return nil
	}
	c := b.r.Mbox.Counters()
	return map[string]uint64{"remapped": c.Remapped, "cas_to_write": c.CASToWrite, "server_acks": c.ServerACKs,
		"client_retransmits": c.Retransmits, "replayed": c.Replayed}
}

// slice drives the workload (seed) for d, sampling throughput every
// Sample and killing the memory node at KillAt if set.
func (b *swarmBed) slice(ctx context.Context, t *swarmTally, seed uint64, d time.Duration) error {
	spec := b.spec
	wcfg := b.wcfg
	wcfg.Seed, wcfg.Duration = seed, d
	w, err := ycsb.New(wcfg)
	if err != nil {
		return err
	}
	var done atomic.Uint64
	kvs := b.r.KVs()
	for i := range kvs {
		kvs[i] = &countingKV{KV: kvs[i], n: &done}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	if spec.Sample > 0 {
		t.sampleTime = spec.Sample
		wg.Add(1)
		go func() {
			defer wg.Done()
			tk := time.NewTicker(spec.Sample)
			defer tk.Stop()
			var last uint64
			var killed <-chan time.Time
			if spec.KillAt > 0 {
				k := time.NewTimer(spec.KillAt)
				defer k.Stop()
				killed = k.C
			}
			start := time.Now()
			for {
				select {
				case <-tk.C:
					n := done.Load()
					t.series = append(t.series, float64(n-last)/spec.Sample.Seconds())
					last = n
				case <-killed:
					t.killedAtS = time.Since(start).Seconds()
					if err := b.r.CrashNode(spec.KillNode); err != nil {
						t.note = err.Error()
					}
				case <-stop:
					return
				}
			}
		}()
	}
	load, err := Drive(ctx, w, kvs, spec.ValueSize, d)
	close(stop)
	wg.Wait()
	if err != nil {
		return err
	}
	l := t.load
	l.Ops += load.Ops
	l.Reads += load.Reads
	l.Writes += load.Writes
	l.Errors += load.Errors
	l.Elapsed += load.Elapsed
	l.All.Merge(load.All)
	l.Read.Merge(load.Read)
	l.Write.Merge(load.Write)
	if l.FirstErr == nil {
		l.FirstErr = load.FirstErr
	}
	return nil
}

// cell turns a tally into the cell's figures.
func (b *swarmBed) cell(t *swarmTally) SwarmCell {
	spec := b.spec
	cell := SwarmCell{Cell: report.Cell{System: "swarm", Scenario: "swarm", Mode: spec.Mode, Workload: string(spec.Workload)}}
	if spec.KillAt > 0 {
		cell.Scenario = "swarm-kill"
		cell.Param = fmt.Sprintf("kill mem%d at %s", spec.KillNode, spec.KillAt)
	}
	load := t.load
	m0, m1, w0, w1 := t.m0, b.r.Metrics(), t.w0, b.r.MemoryWire()
	ops := float64(load.Ops)
	cell.Series, cell.KilledAtS, cell.Note = t.series, t.killedAtS, t.note
	cell.SampleMS = float64(t.sampleTime.Milliseconds())
	cell.Ops, cell.Errors, cell.Seconds, cell.Clients = load.Ops, load.Errors, load.Elapsed.Seconds(), spec.Threads
	cell.OpsPerSec = ops / load.Elapsed.Seconds()
	cell.P50us, cell.P99us, cell.P999us = Percentile(load.All, 50), Percentile(load.All, 99), Percentile(load.All, 99.9)
	cell.ReadP99us, cell.WriteP99us = Percentile(load.Read, 99), Percentile(load.Write, 99)
	cell.BytesPerOp = float64(w1.Bytes-w0.Bytes) / ops
	cell.MemFramesPerOp = float64(w1.Frames-w0.Frames) / ops
	cell.VerbsPerOp = float64((m1.Verbs+m1.BgVerbs)-(m0.Verbs+m0.BgVerbs)) / ops
	cell.CASSuccessRate = math.NaN()
	if cas := m1.Atomics - m0.Atomics; cas > 0 {
		cell.CASSuccessRate = 1 - float64(m1.CASRetries-m0.CASRetries)/float64(cas)
	}
	cell.RetriesPerOp = float64((m1.ReadIters-m0.ReadIters)+(m1.Rewrites-m0.Rewrites)+(m1.CASRetries-m0.CASRetries)+(m1.ReadRestarts-m0.ReadRestarts)) / ops
	cell.GetRTT, cell.GetOneRTT = rttStats(m0.GetRTT, m1.GetRTT)
	cell.PutRTT, cell.PutOneRTT = rttStats(m0.PutRTT, m1.PutRTT)
	cell.FastWrites = math.NaN()
	if puts := m1.Puts - m0.Puts; puts > 0 {
		cell.FastWrites = float64(m1.FastWrites-m0.FastWrites) / float64(puts)
	}
	cell.OutOfPlacePerOp = float64(m1.OutOfPlace-m0.OutOfPlace) / ops
	cell.CASRetriesPerOp = float64(m1.CASRetries-m0.CASRetries) / ops
	if mb1 := b.mboxCounters(); mb1 != nil {
		cell.Steering = map[string]uint64{}
		for k, v := range mb1 {
			cell.Steering[k] = v - t.mb0[k]
		}
	}
	if load.Errors > 0 && load.FirstErr != nil {
		cell.Note = fmt.Sprintf("%d errors, first: %v", load.Errors, load.FirstErr)
	}
	return cell
}

// RunSwarmCell runs one cell on its own rack: warm-up, then the measured
// run in one piece (the kill cells: memory node KillNode crashed KillAt
// into it, throughput sampled every Sample, default 100ms).
func RunSwarmCell(ctx context.Context, spec SwarmCellSpec) (SwarmCell, error) {
	if spec.Sample <= 0 {
		spec.Sample = 100 * time.Millisecond
	}
	b, err := newSwarmBed(ctx, spec)
	if err != nil {
		return SwarmCell{}, err
	}
	defer b.r.Close()
	t := b.begin()
	if err := b.slice(ctx, t, spec.Seed, spec.Duration); err != nil {
		return SwarmCell{}, err
	}
	return b.cell(t), nil
}

// RunSwarmAB measures one workload in several modes side by side: a rack
// per mode, all loaded and warmed up, then Rounds rounds in which every
// mode runs the same operations (seed Seed+round) for Duration/Rounds, the
// modes' order rotating from round to round, so that a change in the
// machine's load falls on every mode alike. Each cell sums its mode's
// slices.
func RunSwarmAB(ctx context.Context, spec SwarmCellSpec, modes []string, rounds int) ([]SwarmCell, error) {
	if rounds < 1 {
		return nil, fmt.Errorf("testbed: swarm A/B: %d rounds", rounds)
	}
	spec.KillAt, spec.Sample = 0, 0
	var beds []*swarmBed
	defer func() {
		for _, b := range beds {
			b.r.Close()
		}
	}()
	for _, m := range modes {
		s := spec
		s.Mode = m
		b, err := newSwarmBed(ctx, s)
		if err != nil {
			return nil, fmt.Errorf("mode %s: %w", m, err)
		}
		beds = append(beds, b)
	}
	tallies := make([]*swarmTally, len(beds))
	for i, b := range beds {
		tallies[i] = b.begin()
	}
	d := spec.Duration / time.Duration(rounds)
	for r := 0; r < rounds; r++ {
		for k := range beds {
			i := (r + k) % len(beds)
			if err := beds[i].slice(ctx, tallies[i], spec.Seed+uint64(r), d); err != nil {
				return nil, fmt.Errorf("mode %s, round %d: %w", modes[i], r, err)
			}
		}
	}
	cells := make([]SwarmCell, len(beds))
	for i, b := range beds {
		cells[i] = b.cell(tallies[i])
	}
	return cells, nil
}

// rttStats returns the mean round trips and the share at one round trip
// of the operations counted between two histograms (the last bucket, 8 or
// more, counts as 8).
func rttStats(a, b [8]uint64) (mean, one float64) {
	var n, sum uint64
	for i := range a {
		d := b[i] - a[i]
		n += d
		sum += d * uint64(i+1)
	}
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	return float64(sum) / float64(n), float64(b[0]-a[0]) / float64(n)
}

// countingKV counts completed operations for the throughput series.
type countingKV struct {
	KV
	n *atomic.Uint64
}

func (c *countingKV) Get(ctx context.Context, key uint64, buf []byte) ([]byte, error) {
	v, err := c.KV.Get(ctx, key, buf)
	if err == nil {
		c.n.Add(1)
	}
	return v, err
}

func (c *countingKV) Put(ctx context.Context, key uint64, value []byte) error {
	err := c.KV.Put(ctx, key, value)
	if err == nil {
		c.n.Add(1)
	}
	return err
}

// Load inserts the workload's first keys records, spread over the
// clients.
func (r *SwarmRack) Load(ctx context.Context, w *ycsb.Workload, keys int) error {
	n := len(r.Clients)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for c := 0; c < n; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			val := make([]byte, r.Layout.ValueSize)
			for i := c; i < keys; i += n {
				key := w.RecordKey(int64(i))
				binary.LittleEndian.PutUint64(val, key)
				if err := r.Clients[c].Put(ctx, key, val); err != nil {
					errs[c] = fmt.Errorf("testbed: swarm: load key %d: %w", key, err)
					return
				}
			}
		}(c)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

var _ KV = (*swarm.Client)(nil)
