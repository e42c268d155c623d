package testbed

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/swordbox/swordbox/clover"
	"github.com/swordbox/swordbox/ctrl"
	"github.com/swordbox/swordbox/roce/rnic"
	"github.com/swordbox/swordbox/testbed/report"
	"github.com/swordbox/swordbox/testbed/ycsb"
)

// Bench modes: what the switch does for one cell.
const (
	ModeOff       = "off"
	ModeWrite     = "write"
	ModeWriteRead = "write+read"
)

// steeringFor maps a bench mode to the controller's steering setting.
func steeringFor(mode string) (string, error) {
	switch mode {
	case ModeOff:
		return SteerOff, nil
	case ModeWrite:
		return SteerWrite, nil
	case ModeWriteRead:
		return SteerReadWrite, nil
	}
	return "", fmt.Errorf("testbed: mode %q: want off, write or write+read", mode)
}

// CellSpec is one cell of a benchmark: Clover on a fresh rack, one workload,
// one steering mode.
type CellSpec struct {
	Scenario string
	Mode     string
	Workload ycsb.Kind
	// Param labels the swept parameter in the report (may be empty).
	Param     string
	Keys      int
	ValueSize int
	Zipf      float64
	// Tracked is how many of the hottest keys the switch steers; a
	// negative value steers every key.
	Tracked     int
	Threads     int
	ClientHosts int
	Warmup      time.Duration
	Duration    time.Duration
	Seed        uint64
	// Timing is the memory node's NIC timing model (nil: untimed).
	Timing *rnic.Timing
	// MemoryWorkers shards the memory node's responder.
	MemoryWorkers int
	// ReadTimeout is Clover's T_r (0: DefaultReadTimeout).
	ReadTimeout time.Duration
	// SwitchArch is the switch program's architecture ("": ArchV1Model).
	SwitchArch string
}

// RunCell builds a rack for spec, loads the keys, runs the workload for the
// warm-up (not measured) and then for the measured duration, and returns
// what it measured.
func RunCell(ctx context.Context, spec CellSpec) (report.Cell, error) {
	cell := report.Cell{System: "clover", Scenario: spec.Scenario, Mode: spec.Mode, Workload: string(spec.Workload), Param: spec.Param}
	steer, err := steeringFor(spec.Mode)
	if err != nil {
		return cell, err
	}
	wcfg := ycsb.Config{Workload: spec.Workload, ZipfConstant: spec.Zipf, RecordCount: int64(spec.Keys),
		ValueSize: spec.ValueSize, Clients: spec.Threads, Seed: spec.Seed, Duration: spec.Duration}
	w, err := ycsb.New(wcfg)
	if err != nil {
		return cell, fmt.Errorf("testbed: workload: %w", err)
	}
	var tracked []uint64
	if steer != SteerOff {
		tracked = HottestKeys(w, spec.Keys, spec.Tracked, spec.Seed)
	}
	cr, err := NewCloverRack(ctx, CloverConfig{
		Rack: Config{Steering: steer, TrackedKeys: tracked, MemoryTiming: spec.Timing, MemoryWorkers: spec.MemoryWorkers,
			SwitchArch: spec.SwitchArch},
		ClientHosts: spec.ClientHosts, Threads: spec.Threads, ValueSize: spec.ValueSize, Keys: spec.Keys,
		ReadTimeout: spec.ReadTimeout,
	})
	if err != nil {
		return cell, err
	}
	defer cr.Close()
	if err := cr.Load(ctx, w); err != nil {
		return cell, err
	}
	kvs := cr.KVs()
	if spec.Warmup > 0 {
		// The warm-up uses a different seed so that the measured operation
		// sequence is exactly the one the seed names.
		ww, err := ycsb.New(func() ycsb.Config { c := wcfg; c.Seed = ^spec.Seed; return c }())
		if err != nil {
			return cell, err
		}
		if _, err := Drive(ctx, ww, kvs, spec.ValueSize, spec.Warmup); err != nil {
			return cell, fmt.Errorf("testbed: warm-up: %w", err)
		}
	}
	m0, w0 := cr.Metrics(), cr.Wire()
	s0, _ := cr.Ctrl.ReadCounter(ctx, "SwordboxIngress.stats", nil)
	load, err := Drive(ctx, w, kvs, spec.ValueSize, spec.Duration)
	if err != nil {
		return cell, err
	}
	m1, w1 := cr.Metrics(), cr.Wire()
	s1, _ := cr.Ctrl.ReadCounter(ctx, "SwordboxIngress.stats", nil)

	ops := float64(load.Ops)
	cell.Ops, cell.Errors, cell.Seconds, cell.Clients = load.Ops, load.Errors, load.Elapsed.Seconds(), spec.Threads
	cell.OpsPerSec = ops / load.Elapsed.Seconds()
	cell.P50us, cell.P99us, cell.P999us = Percentile(load.All, 50), Percentile(load.All, 99), Percentile(load.All, 99.9)
	cell.ReadP99us, cell.WriteP99us = Percentile(load.Read, 99), Percentile(load.Write, 99)
	cell.BytesPerOp = float64(w1.Bytes-w0.Bytes) / ops
	cell.VerbsPerOp = float64(m1.Verbs-m0.Verbs) / ops
	cas, fails := m1.CAS-m0.CAS, m1.CASFailures-m0.CASFailures
	cell.CASSuccessRate = math.NaN()
	if cas > 0 {
		cell.CASSuccessRate = 1 - float64(fails)/float64(cas)
	}
	// Retries: CAS attempts after a put's first, next-pointer hops of gets,
	// and recoveries through the shortcut or the metadata server.
	retries := (m1.Retries - m0.Retries) + (m1.ChaseHops - m0.ChaseHops) + (m1.Recoveries - m0.Recoveries)
	cell.RetriesPerOp = float64(retries) / ops
	var m clover.Metrics
	m.Add(m1)
	m.Sub(m0)
	cell.Mechanism = map[string]float64{
		"verbs_per_op":           float64(m.Verbs) / ops,
		"precas_reads_per_op":    float64(m.PreCASReads) / ops,
		"recoveries_per_op":      float64(m.Recoveries) / ops,
		"read_timeouts_per_op":   float64(m.ReadTimeouts) / ops,
		"recovery_reads_per_op":  float64(m.RecoveryReads) / ops,
		"chase_hops_per_op":      float64(m.ChaseHops) / ops,
		"cas_per_op":             float64(m.CAS) / ops,
		"reads_per_op":           float64(m.Reads) / ops,
		"ms_requests_per_op":     float64(m.MSRequests) / ops,
		"steered_reads_per_op":   float64(m.ReadsSteered) / ops,
		"steered_nontail_per_op": float64(m.SteeredNonTail) / ops,
		"cas_steered_ok":         float64(m.CASSteered),
		"retire_unknown":         float64(m.RetireUnknown),
		"uncertain":              float64(m.Uncertain),
	}
	if s0 != nil && s1 != nil {
		cell.Steering = map[string]uint64{}
		for i, name := range SwitchStats {
			cell.Steering[name] = s1[int64(i)] - s0[int64(i)]
		}
		if steer != SteerOff {
			cell.Mechanism["cas_unlearned"] = float64(cell.Steering["links_unresolved"])
			cell.Mechanism["link_takeovers"] = float64(cell.Steering["link_takeovers"])
			cell.Mechanism["tails_dropped"] = float64(cell.Steering["tails_dropped"])
		}
	}
	if load.Errors > 0 && load.FirstErr != nil {
		cell.Note = fmt.Sprintf("%d errors, first: %v", load.Errors, load.FirstErr)
	}
	return cell, nil
}

// SwitchStats names the cells of swordbox.p4's stats counter, by index
// (docs/swordbox-p4.md, "Counters").
var SwitchStats = ctrl.StatNames

// HottestKeys returns the n most popular keys of the workload's key chooser
// (all keys when n < 0 or n >= keys), estimated by drawing from the same
// generators as the clients with a fixed seed, so the tracked set is the
// same on every run.
func HottestKeys(w *ycsb.Workload, keys, n int, seed uint64) []uint64 {
	if n < 0 || n >= keys {
		out := make([]uint64, keys)
		for i := range out {
			out[i] = w.RecordKey(int64(i))
		}
		return out
	}
	if n == 0 {
		return nil
	}
	cfg := w.Config()
	cfg.Clients, cfg.Seed, cfg.Workload, cfg.Mix = 1, seed^0x5eed, ycsb.WorkloadC, ycsb.Proportions{}
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
	sort.Slice(ks, func(i, j int) bool {
		if count[ks[i]] != count[ks[j]] {
			return count[ks[i]] > count[ks[j]]
		}
		return ks[i] < ks[j]
	})
	if len(ks) > n {
		ks = ks[:n]
	}
	return ks
}
