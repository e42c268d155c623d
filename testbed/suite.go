package testbed

import (
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/swordbox/swordbox/ctrl/rack"
	"github.com/swordbox/swordbox/roce/rnic"
	"github.com/swordbox/swordbox/testbed/report"
	"github.com/swordbox/swordbox/testbed/ycsb"
)

// Scenarios `swordbox bench` knows.
const (
	ScenarioDefault = "default" // Figures 11-13: YCSB C, B, A, write-only x off, write, write+read
	ScenarioPartial = "partial" // Figure 14: hottest 0, 8, 16, 32, 64, all keys steered, zipf 1.5
	ScenarioZipf    = "zipf"    // Figure 16: zipf constant sweep, 50% writes
	ScenarioSize    = "size"    // Figure 15: object size sweep, 50% writes
	ScenarioCASMux  = "cas-mux" // Figure 10: lock CAS through the middlebox
)

// Scenarios lists the scenario names in the order --help shows them.
var Scenarios = []string{ScenarioDefault, ScenarioPartial, ScenarioZipf, ScenarioSize, ScenarioCASMux}

// The default rack of a suite: the SwordBox paper's design point, where
// Clover collapses (Figure 5: 240 threads) on 7 client hosts (Figures
// 11-14 run up to 7 hosts).
const (
	DefaultThreads     = 240
	DefaultClientHosts = 7
)

// MinZipf and MaxZipf bound a zipfian constant of the bench: its --zipf
// and the zipf scenario's swept constants.
const (
	MinZipf = 0.01
	MaxZipf = 5.0
)

// SuiteConfig is everything a benchmark run is made of. The zero value of a
// field takes the default noted beside it.
type SuiteConfig struct {
	Scenario    string        // default
	Keys        int           // 1024
	ValueSize   int           // 128
	Zipf        float64       // 0.99 (1.5 for partial)
	Workloads   []ycsb.Kind   // default scenario: c, b, a, write-only
	Modes       []string      // off, write, write+read (cas-mux: cas, cas-to-write)
	Threads     int           // client threads (each its own QPs): 240, the paper's design point
	ClientHosts int           // client RNICs the threads share: 7
	Duration    time.Duration // measured time per cell: 8s
	Warmup      time.Duration // unmeasured time per cell: 1s
	Seed        uint64        // 1
	// Sweep overrides the scenario's swept values (tracked keys, zipf
	// constants, object sizes, client QPs).
	Sweep []string
	// Timing names the memory node's NIC timing model: "none", "cx5" or
	// "cx5/N" (default none; cx5/100 for cas-mux, whose effect is the NIC's
	// CAS cap, see TimingModel).
	Timing        string
	MemoryWorkers int
	// ReadTimeout is Clover's T_r (0: DefaultReadTimeout).
	ReadTimeout time.Duration
	// SwitchArch is the switch program's architecture: ArchV1Model ("",
	// the default) or ArchTNA (switcharch.go).
	SwitchArch string
	// Chain turns on chained write steering (rack.Config.Chain).
	Chain bool
}

func (c *SuiteConfig) defaults() {
	if c.Scenario == "" {
		c.Scenario = ScenarioDefault
	}
	if c.Keys <= 0 {
		c.Keys = 1024
	}
	if c.ValueSize <= 0 {
		c.ValueSize = 128
	}
	if c.Zipf <= 0 {
		c.Zipf = 0.99
		if c.Scenario == ScenarioPartial {
			c.Zipf = 1.5
		}
	}
	if len(c.Workloads) == 0 {
		c.Workloads = []ycsb.Kind{ycsb.WorkloadC, ycsb.WorkloadB, ycsb.WorkloadA, ycsb.WorkloadWriteOnly}
	}
	if len(c.Modes) == 0 {
		c.Modes = []string{ModeOff, ModeWrite, ModeWriteRead}
		if c.Scenario == ScenarioCASMux {
			c.Modes = []string{ModeCAS, ModeCASToWrite}
		}
	}
	if c.Threads <= 0 {
		c.Threads = DefaultThreads
	}
	if c.ClientHosts <= 0 {
		c.ClientHosts = DefaultClientHosts
	}
	if c.Duration <= 0 {
		c.Duration = 8 * time.Second
	}
	if c.Warmup < 0 {
		c.Warmup = 0
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.SwitchArch == "" {
		c.SwitchArch = ArchV1Model
	}
	if c.Timing == "" {
		c.Timing = "none"
		if c.Scenario == ScenarioCASMux {
			c.Timing = "cx5/100"
		}
	}
}

// Cells expands the configuration into the cells to run, in order.
func (c SuiteConfig) Cells() ([]CellSpec, error) {
	if c.Scenario == ScenarioZipf && c.Zipf != 0 {
		return nil, fmt.Errorf("testbed: scenario zipf sweeps the zipfian constant: --zipf %g would be ignored (give the constants with --sweep)", c.Zipf)
	}
	c.defaults()
	for _, m := range c.Modes {
		if _, err := steeringFor(m); err != nil {
			return nil, err
		}
	}
	timing, err := TimingModel(c.Timing)
	if err != nil {
		return nil, err
	}
	if err := CheckSwitchArch(c.SwitchArch); err != nil {
		return nil, fmt.Errorf("testbed: %w", err)
	}
	base := CellSpec{Scenario: c.Scenario, Keys: c.Keys, ValueSize: c.ValueSize, Zipf: c.Zipf, Tracked: -1, Threads: c.Threads,
		ClientHosts: c.ClientHosts, Warmup: c.Warmup, Duration: c.Duration, Seed: c.Seed, Timing: timing, MemoryWorkers: c.MemoryWorkers, ReadTimeout: c.ReadTimeout,
		SwitchArch: c.SwitchArch, Chain: c.Chain}
	var out []CellSpec
	sweep := func(def []string) []string {
		if len(c.Sweep) > 0 {
			return c.Sweep
		}
		return def
	}
	switch c.Scenario {
	case ScenarioDefault:
		if len(c.Sweep) > 0 {
			return nil, fmt.Errorf("testbed: scenario default sweeps nothing (its cells are the workloads x the modes): --sweep %s is for partial, zipf, size or cas-mux", strings.Join(c.Sweep, ","))
		}
		for _, w := range c.Workloads {
			for _, m := range c.Modes {
				s := base
				s.Workload, s.Mode = w, m
				out = append(out, s)
			}
		}
	case ScenarioPartial:
		for _, v := range sweep([]string{"0", "8", "16", "32", "64", "all"}) {
			n := -1
			if v != "all" {
				if n, err = strconv.Atoi(v); err != nil || n < 0 || n > c.Keys {
					return nil, fmt.Errorf("testbed: partial: tracked keys %q: want 0..%d (the keys) or all", v, c.Keys)
				}
			}
			s := base
			s.Workload, s.Mode, s.Tracked, s.Param = ycsb.WorkloadA, ModeWriteRead, n, "tracked="+v
			out = append(out, s)
		}
	case ScenarioZipf:
		for _, v := range sweep([]string{"0.6", "0.8", "0.99", "1.2", "1.5"}) {
			z, err := strconv.ParseFloat(v, 64)
			if err != nil || !(z >= MinZipf && z <= MaxZipf) {
				return nil, fmt.Errorf("testbed: zipf: constant %q: want %g..%g", v, MinZipf, MaxZipf)
			}
			for _, m := range c.Modes {
				s := base
				s.Workload, s.Mode, s.Zipf, s.Param = ycsb.WorkloadA, m, z, "zipf="+v
				out = append(out, s)
			}
		}
	case ScenarioSize:
		for _, v := range sweep([]string{"64", "128", "256", "512", "1024"}) {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 || n > rack.MaxObjectSize {
				return nil, fmt.Errorf("testbed: size: object size %q: want 1..%d bytes (a Clover node, %d-byte header and value, in one 4096-byte MTU)", v, rack.MaxObjectSize, rack.NodeOverhead)
			}
			for _, m := range c.Modes {
				s := base
				s.Workload, s.Mode, s.ValueSize, s.Param = ycsb.WorkloadA, m, n, "size="+v
				out = append(out, s)
			}
		}
	case ScenarioCASMux:
		return nil, fmt.Errorf("testbed: scenario cas-mux has no Clover cells (see CASMuxCells)")
	default:
		return nil, fmt.Errorf("testbed: unknown scenario %q (want one of %v)", c.Scenario, Scenarios)
	}
	if err := CheckCells(out, c.SwitchArch); err != nil {
		return nil, err
	}
	return out, nil
}

// CheckCells refuses, before anything runs, cells no rack can hold: a
// Clover region an LH cannot address (CloverChunks), or more keys to steer
// than the switch program of architecture arch has key slots.
func CheckCells(cells []CellSpec, arch string) error {
	slots := -1
	for _, s := range cells {
		if _, err := CloverChunks(s.Keys, s.ValueSize, s.Threads); err != nil {
			return fmt.Errorf("testbed: cell %s: %w", s.label(), err)
		}
		if s.Mode == ModeOff {
			continue
		}
		tracked := s.Tracked
		if tracked < 0 || tracked > s.Keys {
			tracked = s.Keys
		}
		if slots < 0 {
			n, err := SwitchKeySlots(arch)
			if err != nil {
				return fmt.Errorf("testbed: %w", err)
			}
			slots = n
		}
		if tracked > slots {
			return fmt.Errorf("testbed: cell %s: steers %d keys, the switch program has %d key slots (steer at most %d: fewer keys, mode off, or the partial scenario with at most %d tracked)",
				s.label(), tracked, slots, slots, slots)
		}
	}
	return nil
}

// CASMuxCells expands a cas-mux configuration: every client QP count of the
// sweep (default 1, 2, 4, 8, 16, 32) in every mode.
func (c SuiteConfig) CASMuxCells() ([]CASMuxSpec, error) {
	c.defaults()
	if c.Scenario != ScenarioCASMux {
		return nil, fmt.Errorf("testbed: scenario %q is not cas-mux", c.Scenario)
	}
	timing, err := TimingModel(c.Timing)
	if err != nil {
		return nil, err
	}
	for _, m := range c.Modes {
		if m != ModeCAS && m != ModeCASToWrite {
			return nil, fmt.Errorf("testbed: cas-mux: mode %q: want %s or %s", m, ModeCAS, ModeCASToWrite)
		}
	}
	qps := c.Sweep
	if len(qps) == 0 {
		qps = []string{"1", "2", "4", "8", "16", "32"}
	}
	var out []CASMuxSpec
	for _, v := range qps {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > 1024 {
			return nil, fmt.Errorf("testbed: cas-mux: client QPs %q: want 1..1024", v)
		}
		for _, m := range c.Modes {
			out = append(out, CASMuxSpec{Mode: m, QPs: n, Duration: c.Duration, Warmup: c.Warmup, Timing: timing})
		}
	}
	return out, nil
}

// TimingModel resolves a timing model name: "none" (untimed), "cx5" (the
// RNIC's ConnectX-5 preset, from the SwordBox paper's Figures 3 and 4), or
// "cx5/N" (every ConnectX-5 cap divided by N). The software rack moves far
// fewer operations per second than a NIC, so the unscaled caps never bind
// on it; divided by 100, the CAS cap on one address sits below the software
// path's rate, as the NIC's sits below the network's in the paper.
func TimingModel(name string) (*rnic.Timing, error) {
	switch {
	case name == "" || name == "none":
		return nil, nil
	case name == "cx5":
		t := rnic.ConnectX5()
		return &t, nil
	case strings.HasPrefix(name, "cx5/"):
		d, err := strconv.ParseFloat(strings.TrimPrefix(name, "cx5/"), 64)
		if err != nil || d <= 0 || math.IsInf(d, 0) {
			return nil, fmt.Errorf("testbed: timing model %q: want cx5/N with N > 0", name)
		}
		t := rnic.ConnectX5()
		t.AtomicsPerAddr /= d
		t.AtomicsPerAddrDM /= d
		t.AtomicsPerQP /= d
		t.AtomicsAggregate /= d
		return &t, nil
	}
	return nil, fmt.Errorf("testbed: timing model %q: want none, cx5 or cx5/N", name)
}

// RunSuite runs every cell of the configuration on a fresh rack each and
// returns the run. progress, if set, is called before each cell with its
// index, the total and a label.
func RunSuite(ctx context.Context, c SuiteConfig, progress func(i, n int, label string)) (*report.Run, error) {
	c.defaults()
	var specs []CellSpec
	var mux []CASMuxSpec
	var err error
	if c.Scenario == ScenarioCASMux {
		mux, err = c.CASMuxCells()
	} else {
		specs, err = c.Cells()
	}
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	machine := fmt.Sprintf("%s, %d CPUs, %s/%s, %s", host, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	started := time.Now()
	run := &report.Run{ID: started.UTC().Format("20060102-150405"), Started: started, Scenario: c.Scenario, Config: [][2]string{
		{"system", "Clover (clover/) on the in-process software rack (testbed)"},
		{"rack", fmt.Sprintf("1 memory node, 1 metadata server, %d client hosts with %d client threads in all (each its own QPs), Go switch target running %s under the ctrl controller over gRPC", c.ClientHosts, c.Threads, switchProgramName(c.SwitchArch))},
		{"links", "in-memory, no faults; bytes counted at the switch's ingress (Ethernet header to ICRC)"},
		{"RNIC timing model (memory node)", c.Timing},
		{"memory node responder workers", strconv.Itoa(c.MemoryWorkers)},
		{"Clover's T_r (read timeout; the switch steers to a tail for T_r/2)", readTimeout(c.ReadTimeout).String()},
		{"keys", strconv.Itoa(c.Keys)},
		{"value size", strconv.Itoa(c.ValueSize) + " bytes"},
		{"zipf", strconv.FormatFloat(c.Zipf, 'g', -1, 64) + " (scrambled zipfian, YCSB)"},
		{"duration per cell", fmt.Sprintf("%s measured after %s warm-up", c.Duration, c.Warmup)},
		{"seed", strconv.FormatUint(c.Seed, 10)},
		{"machine", machine},
	}}
	if c.Scenario == ScenarioCASMux {
		run.Baseline = ModeCAS
		run.Config = [][2]string{
			{"system", "a Sherman-style lock: CMP_SWAP(0 -> 1) until it succeeds, then CMP_SWAP(1 -> 0), every client QP on one word"},
			{"rack", "one client RNIC with one QP per client, the middlebox (middlebox.Loop, one shard, in-memory ports), one memory node; cas: CMP_SWAPs forwarded on their own QPs; cas-to-write: multiplexed onto one server connection, CMP_SWAP replaced by WRITE"},
			{"links", "in-memory, no faults; bytes counted at the middlebox's ingress on both sides"},
			{"RNIC timing model (memory node)", c.Timing},
			{"duration per cell", fmt.Sprintf("%s measured after %s warm-up", c.Duration, c.Warmup)},
			{"machine", machine},
		}
		for i, s := range mux {
			label := fmt.Sprintf("qps=%d %s", s.QPs, s.Mode)
			if progress != nil {
				progress(i, len(mux), label)
			}
			cell, err := RunCASMux(ctx, s)
			if err != nil {
				return run, fmt.Errorf("cell %d (%s): %w", i+1, label, err)
			}
			run.Cells = append(run.Cells, cell)
		}
		if progress != nil {
			progress(len(mux), len(mux), "done")
		}
		return run, nil
	}
	for i, s := range specs {
		label := fmt.Sprintf("%s %s %s", s.Workload, s.Param, s.Mode)
		if progress != nil {
			progress(i, len(specs), label)
		}
		cell, err := RunCell(ctx, s)
		if err != nil {
			return run, fmt.Errorf("cell %d (%s): %w", i+1, label, err)
		}
		run.Cells = append(run.Cells, cell)
	}
	if progress != nil {
		progress(len(specs), len(specs), "done")
	}
	run.Notes = append(run.Notes, contentionNotes(run.Cells)...)
	run.Notes = append(run.Notes, ColdNotes(run.Cells)...)
	return run, nil
}

// ColdCursorMisses is the share of operations that were a thread's first
// touch of their key (cursor misses per operation) above which a cell is
// called cold in the run's notes. A long run has few (0.01-0.06 per
// operation at the design point after 80 ms of virtual warm-up, against
// 0.67-0.78 after the default 2 ms).
const ColdCursorMisses = 0.1

// ColdNotes says when cells measured threads meeting keys for the first
// time (every rack's suite adds it to the run's notes): such an operation
// starts from the metadata server's latest pointer, near the tail, where a
// thread that has run for a while holds a cursor left where it last saw
// the tail, often far behind it.
func ColdNotes(cells []report.Cell) []string {
	n, worst := 0, 0.0
	for _, c := range cells {
		if v := c.Mechanism["cursor_misses_per_op"]; v > ColdCursorMisses {
			n++
			worst = math.Max(worst, v)
		}
	}
	if n == 0 {
		return nil
	}
	return []string{fmt.Sprintf("%d of %d cells measured cold cursor caches: up to %.2f operations in one were a thread's first touch of its key (a metadata-server lookup instead of a cursor). A long run has few (0.01-0.06 per operation at the design point), and its figures differ (stale cursors cost off more, and steering wins less of its READs): lengthen the warm-up (--warmup, or --virtual-warmup 80ms with --clock virtual) to measure the steady state (docs/bench.md, \"Short virtual cells start cold\").", n, len(cells), worst)}
}

// contentionNotes says, per workload, how much contention the rack showed
// with swordbox off: the share of CAS that succeeded and the retries per
// operation. That is what steering can win back, and the first thing to
// read next to a ratio.
func contentionNotes(cells []report.Cell) []string {
	var notes []string
	for _, c := range cells {
		if c.Mode != ModeOff || math.IsNaN(c.CASSuccessRate) {
			continue
		}
		what := c.Workload
		if c.Param != "" {
			what += " " + c.Param
		}
		notes = append(notes, fmt.Sprintf("%s: with swordbox off %.1f%% of CAS succeeded and operations averaged %.2f retries; that is the contention steering can remove (the SwordBox paper's Figure 5 reports under 4%% successful operations at 240 threads).",
			what, 100*c.CASSuccessRate, c.RetriesPerOp))
	}
	if len(notes) > 0 {
		notes = append(notes, fmt.Sprintf("Every host, the switch and the controller share this machine's %d CPUs: what steering adds to the software switch's per-packet work costs throughput here, where a hardware pipeline's cost does not change.", runtime.NumCPU()))
	}
	return notes
}

// readTimeout is the T_r a cell runs with.
func readTimeout(d time.Duration) time.Duration {
	if d <= 0 {
		return DefaultReadTimeout
	}
	return d
}

// label names a cell in errors: its workload, parameter and mode.
func (s CellSpec) label() string {
	var parts []string
	for _, p := range []string{string(s.Workload), s.Param, s.Mode} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, " ")
}
