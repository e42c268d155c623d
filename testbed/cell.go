package testbed

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/swordbox/swordbox/clover"
	"github.com/swordbox/swordbox/testbed/report"
	"github.com/swordbox/swordbox/testbed/ycsb"
)

// CellRack is a rack built for one Clover benchmark cell (a CellSpec): what
// RunCellOn needs of it. The in-process rack (NewCloverCellRack), the
// namespace rack (testbed/netns) and the virtual-time rack implement it, so
// that one runner derives every rack's figures the same way.
//
// A CellRack drives its own clients: in this process, in client processes,
// or in virtual time; it decides how the workload is split over its client
// hosts. The runner calls Load, WarmUp (when the spec has a warm-up),
// Counters, Measure, Counters and Close, in that order, once each.
type CellRack interface {
	// Load creates every key of the workload.
	Load(ctx context.Context) error
	// WarmUp drives the workload for the spec's warm-up, unmeasured, with
	// the seed ^Seed, so that the measured sequence is the one Seed names.
	WarmUp(ctx context.Context) error
	// Measure drives the workload (seed Seed) for the spec's duration and
	// returns what the clients measured.
	Measure(ctx context.Context) (*Measured, error)
	// Counters reads the rack's cumulative counters.
	Counters(ctx context.Context) (RackCounters, error)
	// Close stops everything the rack started.
	Close() error
}

// CellSetup is what the runner decided for a cell before the rack is
// built: the switch's steering setting and the keys it tracks (chosen from
// the measured workload, the same on every rack).
type CellSetup struct {
	// Steering is the controller's steering setting (SteerOff, ...).
	Steering string
	// Tracked are the keys the switch steers (nil with SteerOff).
	Tracked []uint64
	// Workload is the measured workload (seed Seed, spec.Threads clients).
	// Racks that drive their clients in this process use it; racks whose
	// clients live elsewhere rebuild theirs from the spec.
	Workload *ycsb.Workload
}

// CellRackBuilder builds and starts a rack for spec.
type CellRackBuilder func(ctx context.Context, spec CellSpec, setup CellSetup) (CellRack, error)

// Measured is what a rack's clients measured in the measured phase.
type Measured struct {
	// Load: operations, errors, elapsed time and latency histograms, over
	// every client (Elapsed: the longest of the client hosts').
	Load *Load
	// Metrics are Clover's counters over the phase, summed over every
	// client with clover.Metrics.Add.
	Metrics clover.Metrics
}

// RackCounters are a rack's cumulative counters at one instant.
type RackCounters struct {
	// WireBytes counts every byte of every frame that crossed the switch's
	// ports (Ethernet header to ICRC).
	WireBytes uint64
	// Switch holds the cells of swordbox.p4's stats counter by index
	// (SwitchStats names them); nil when the rack could not read them.
	Switch map[int64]uint64
}

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

// RunCellOn runs one cell on a fresh rack from build: it chooses the
// steering setting and the tracked keys, builds the rack, loads the keys,
// warms up (not measured), measures, and derives the cell's figures from
// the rack's counters and the clients' measurements. The rack is closed
// before RunCellOn returns, also on error.
func RunCellOn(ctx context.Context, spec CellSpec, build CellRackBuilder) (cell report.Cell, err error) {
	cell = report.Cell{System: "clover", Scenario: spec.Scenario, Mode: spec.Mode, Workload: string(spec.Workload), Param: spec.Param}
	steer, err := steeringFor(spec.Mode)
	if err != nil {
		return cell, err
	}
	w, err := ycsb.New(spec.workloadConfig(spec.Seed))
	if err != nil {
		return cell, fmt.Errorf("testbed: workload: %w", err)
	}
	setup := CellSetup{Steering: steer, Workload: w}
	if steer != SteerOff {
		setup.Tracked = HottestKeys(w, spec.Keys, spec.Tracked, spec.Seed)
	}
	r, err := build(ctx, spec, setup)
	if err != nil {
		return cell, err
	}
	defer func() {
		if cerr := r.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("testbed: tear down the rack: %w", cerr)
		}
	}()
	if err := r.Load(ctx); err != nil {
		return cell, err
	}
	if spec.Warmup > 0 {
		if err := r.WarmUp(ctx); err != nil {
			return cell, fmt.Errorf("testbed: warm-up: %w", err)
		}
	}
	c0, err := r.Counters(ctx)
	if err != nil {
		return cell, err
	}
	m, err := r.Measure(ctx)
	if err != nil {
		return cell, err
	}
	c1, err := r.Counters(ctx)
	if err != nil {
		return cell, err
	}
	fillCell(&cell, spec, steer, m, c0, c1)
	return cell, nil
}

// workloadConfig is the YCSB configuration of the spec's workload with
// seed: every client thread of the rack draws from its own stream.
func (spec CellSpec) workloadConfig(seed uint64) ycsb.Config {
	return ycsb.Config{Workload: spec.Workload, ZipfConstant: spec.Zipf, RecordCount: int64(spec.Keys),
		ValueSize: spec.ValueSize, Clients: spec.Threads, Seed: seed, Duration: spec.Duration}
}

// fillCell derives a cell's figures from the measured phase and the rack's
// counters at its ends.
func fillCell(cell *report.Cell, spec CellSpec, steer string, ms *Measured, c0, c1 RackCounters) {
	load, m := ms.Load, ms.Metrics
	ops := float64(load.Ops)
	cell.Ops, cell.Errors, cell.Seconds, cell.Clients = load.Ops, load.Errors, load.Elapsed.Seconds(), spec.Threads
	cell.OpsPerSec = ops / load.Elapsed.Seconds()
	cell.P50us, cell.P99us, cell.P999us = Percentile(load.All, 50), Percentile(load.All, 99), Percentile(load.All, 99.9)
	cell.ReadP99us, cell.WriteP99us = Percentile(load.Read, 99), Percentile(load.Write, 99)
	cell.BytesPerOp = float64(c1.WireBytes-c0.WireBytes) / ops
	cell.VerbsPerOp = float64(m.Verbs) / ops
	cell.CASSuccessRate = math.NaN()
	if m.CAS > 0 {
		cell.CASSuccessRate = 1 - float64(m.CASFailures)/float64(m.CAS)
	}
	// Retries: CAS attempts after a put's first, next-pointer hops of gets,
	// and recoveries through the shortcut or the metadata server.
	cell.RetriesPerOp = float64(m.Retries+m.ChaseHops+m.Recoveries) / ops
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
		"unproven_reads_per_op":  float64(m.ReadsUnproven) / ops,
		"cas_vouched":            float64(m.CASVouched),
		"cas_steered_ok":         float64(m.CASSteered),
		"retire_unknown":         float64(m.RetireUnknown),
		"uncertain":              float64(m.Uncertain),
		"first_try_per_op":       float64(m.GetsFirstTry+m.PutsFirstTry) / ops,
		"cursor_misses_per_op":   float64(m.CursorMisses) / ops,
	}
	if c0.Switch != nil && c1.Switch != nil {
		cell.Steering = map[string]uint64{}
		for i, name := range SwitchStats {
			cell.Steering[name] = c1.Switch[int64(i)] - c0.Switch[int64(i)]
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
}

// cloverCellRack is the in-process rack (CloverRack) as a CellRack.
type cloverCellRack struct {
	cr      *CloverRack
	spec    CellSpec
	w, warm *ycsb.Workload
	kvs     []KV
}

// NewCloverCellRack builds the in-process software rack for spec: one
// memory node, Clover's metadata server and spec.ClientHosts client hosts
// in this process, with the switch target under the real controller.
func NewCloverCellRack(ctx context.Context, spec CellSpec, setup CellSetup) (CellRack, error) {
	if setup.Workload == nil {
		return nil, errors.New("testbed: in-process rack: no workload")
	}
	warm, err := ycsb.New(spec.workloadConfig(^spec.Seed))
	if err != nil {
		return nil, fmt.Errorf("testbed: warm-up workload: %w", err)
	}
	cr, err := NewCloverRack(ctx, CloverConfig{
		Rack: Config{Steering: setup.Steering, TrackedKeys: setup.Tracked, MemoryTiming: spec.Timing, MemoryWorkers: spec.MemoryWorkers,
			SwitchArch: spec.SwitchArch, Chain: spec.Chain},
		ClientHosts: spec.ClientHosts, Threads: spec.Threads, ValueSize: spec.ValueSize, Keys: spec.Keys,
		ReadTimeout: spec.ReadTimeout,
	})
	if err != nil {
		return nil, err
	}
	return &cloverCellRack{cr: cr, spec: spec, w: setup.Workload, warm: warm, kvs: cr.KVs()}, nil
}

func (r *cloverCellRack) Load(ctx context.Context) error { return r.cr.Load(ctx, r.w) }

func (r *cloverCellRack) WarmUp(ctx context.Context) error {
	_, err := Drive(ctx, r.warm, r.kvs, r.spec.ValueSize, r.spec.Warmup)
	return err
}

func (r *cloverCellRack) Measure(ctx context.Context) (*Measured, error) {
	m0 := r.cr.Metrics()
	load, err := Drive(ctx, r.w, r.kvs, r.spec.ValueSize, r.spec.Duration)
	if err != nil {
		return nil, err
	}
	m := r.cr.Metrics()
	m.Sub(m0)
	return &Measured{Load: load, Metrics: m}, nil
}

func (r *cloverCellRack) Counters(ctx context.Context) (RackCounters, error) {
	c := RackCounters{WireBytes: r.cr.Wire().Bytes}
	// A switch whose counters cannot be read leaves the cell without
	// steering counters; the measurement itself stands.
	c.Switch, _ = r.cr.Ctrl.ReadCounter(ctx, "SwordboxIngress.stats", nil)
	return c, nil
}

func (r *cloverCellRack) Close() error { return r.cr.Close() }
