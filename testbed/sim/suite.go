package sim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/swordbox/swordbox/testbed"
	"github.com/swordbox/swordbox/testbed/report"
	"github.com/swordbox/swordbox/testbed/ycsb"
)

// RunSuite runs every cell of c (testbed.SuiteConfig.Cells, the same cells
// as the other racks) on a fresh virtual-time rack each, through the one
// cell runner (testbed.RunCellOn), with the knobs of base (ClientCPU,
// MSCPU, the rack's links, switch and NIC). c's durations are virtual
// time; every figure of the run is in virtual time, and the run's
// configuration says so. progress, if set, is called before each cell.
// The cells are Cells(c); the cas-mux scenario's are the testbed's
// (SuiteConfig.CASMuxCells), run by RunCASMux, with the full ConnectX-5
// caps unless --timing names others.
func RunSuite(ctx context.Context, c testbed.SuiteConfig, base CloverConfig, progress func(i, n int, label string)) (*report.Run, error) {
	if c.Scenario == testbed.ScenarioCASMux {
		return runCASMuxSuite(ctx, c, progress)
	}
	specs, err := Cells(c)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	started := time.Now()
	run := &report.Run{ID: started.UTC().Format("20060102-150405"), Started: started}
	if len(specs) > 0 {
		s := specs[0]
		nic := "ConnectX-5 model (rnic.VirtualConnectX5, docs/sim.md)"
		if s.Timing != nil {
			nic += fmt.Sprintf(", atomic caps from --timing %s", c.Timing)
		}
		cpu := base.ClientCPU
		if cpu == 0 {
			cpu = DefaultClientCPU
		}
		run.Scenario = s.Scenario
		run.Config = [][2]string{
			{"clock", "virtual: every time and rate below is simulated time (testbed/sim, docs/sim.md)"},
			{"system", "Clover (clover/) on the virtual-time rack (testbed/sim), clients under its cooperative scheduler"},
			{"rack", fmt.Sprintf("1 memory node, 1 metadata server, %d client hosts with %d client threads in all (each its own QPs), Go v1model switch running p4/swordbox.p4 under the ctrl controller over gRPC", s.ClientHosts, s.Threads)},
			{"links", fmt.Sprintf("%g Gb/s, %v propagation, switch pipeline %v, egress queues %d bytes (tail drop); bytes counted at the switch's ingress (Ethernet header to ICRC)",
				orF(base.Rack.Link.Gbps, DefaultGbps), orD(base.Rack.Link.Propagation, DefaultPropagation), orD(base.Rack.SwitchLatency, DefaultSwitchLatency), orI(base.Rack.SwitchQueueBytes, DefaultSwitchQueueBytes))},
			{"RNIC timing model (every RNIC)", nic},
			{"client CPU per operation", cpu.String()},
			{"metadata server CPU per completion", base.MSCPU.String()},
			{"keys", strconv.Itoa(s.Keys)},
			{"value size", strconv.Itoa(s.ValueSize) + " bytes"},
			{"zipf", strconv.FormatFloat(s.Zipf, 'g', -1, 64) + " (scrambled zipfian, YCSB)"},
			{"duration per cell", fmt.Sprintf("%s measured after %s warm-up, virtual time", s.Duration, s.Warmup)},
			{"seed", strconv.FormatUint(s.Seed, 10)},
			{"machine", fmt.Sprintf("%s, %d CPUs, %s/%s, %s", host, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())},
		}
	}
	build := CellRackWith(base)
	return run, runCells(ctx, run, len(specs), progress,
		func(i int) string { return fmt.Sprintf("%s %s %s", specs[i].Workload, specs[i].Param, specs[i].Mode) },
		func(i int) (report.Cell, error) { return testbed.RunCellOn(ctx, specs[i], build) })
}

// runCells runs n cells one after the other into run, telling progress
// before each, and stops at the first error or when ctx ends.
func runCells(ctx context.Context, run *report.Run, n int, progress func(i, n int, label string),
	label func(i int) string, cell func(i int) (report.Cell, error)) error {
	for i := 0; i < n; i++ {
		if progress != nil {
			progress(i, n, label(i))
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		c, err := cell(i)
		if err != nil {
			return fmt.Errorf("cell %d (%s): %w", i+1, label(i), err)
		}
		run.Cells = append(run.Cells, c)
	}
	if progress != nil {
		progress(n, n, "done")
	}
	run.Notes = append(run.Notes, testbed.ColdNotes(run.Cells)...)
	return nil
}

// ScenarioThreads is the scenario only the virtual-time rack runs: Figure
// 5, Clover's CAS success against client threads, YCSB A (50 % writes),
// every mode; --sweep names the thread counts.
const ScenarioThreads = "threads"

// DefaultThreadSweep are the thread counts of ScenarioThreads.
var DefaultThreadSweep = []string{"16", "60", "120", "240", "480", "1000"}

// CountCells is the number of cells RunSuite runs for c.
func CountCells(c testbed.SuiteConfig) (int, error) {
	if c.Scenario == testbed.ScenarioCASMux {
		cells, err := casMuxConfig(c).CASMuxCells()
		return len(cells), err
	}
	cells, err := Cells(c)
	return len(cells), err
}

// casMuxConfig is c with the virtual rack's default timing for cas-mux:
// the ConnectX-5 caps as they are (the wall-clock rack divides them by
// 100 because it is slower than a NIC; virtual time is not).
func casMuxConfig(c testbed.SuiteConfig) testbed.SuiteConfig {
	if c.Timing == "" {
		c.Timing = "cx5"
	}
	return c
}

// runCASMuxSuite runs the cas-mux scenario's cells (Figure 10) in virtual
// time.
func runCASMuxSuite(ctx context.Context, c testbed.SuiteConfig, progress func(i, n int, label string)) (*report.Run, error) {
	c = casMuxConfig(c)
	cells, err := c.CASMuxCells()
	if err != nil {
		return nil, err
	}
	started := time.Now()
	run := &report.Run{ID: started.UTC().Format("20060102-150405"), Started: started, Scenario: testbed.ScenarioCASMux, Baseline: testbed.ModeCAS}
	if len(cells) > 0 {
		run.Config = [][2]string{
			{"clock", "virtual: every time and rate below is simulated time (testbed/sim, docs/sim.md)"},
			{"system", "a Sherman-style lock: CMP_SWAP(0 -> 1) until it succeeds, then CMP_SWAP(1 -> 0), every client QP on one word"},
			{"rack", fmt.Sprintf("one client RNIC with one QP per client, the middlebox engine (cas: up to %d cores, one per client QP; cas-to-write: one core, %v per packet), one memory node, 100 Gb/s links", MiddleboxCores, MiddleboxPacketTime)},
			{"RNIC timing model", "ConnectX-5 model (rnic.VirtualConnectX5), atomic caps from --timing " + c.Timing},
			{"duration per cell", fmt.Sprintf("%s measured after %s warm-up, virtual time", cells[0].Duration, cells[0].Warmup)},
			{"seed", strconv.FormatUint(c.Seed, 10)},
		}
	}
	return run, runCells(ctx, run, len(cells), progress,
		func(i int) string { return fmt.Sprintf("qps=%d %s", cells[i].QPs, cells[i].Mode) },
		func(i int) (report.Cell, error) { return RunCASMux(ctx, cells[i], c.Seed) })
}

// Cells expands c into the cells the virtual-time rack runs on Clover:
// the testbed's scenarios, and ScenarioThreads (cas-mux is not Clover's:
// see CountCells and RunSuite).
func Cells(c testbed.SuiteConfig) ([]testbed.CellSpec, error) {
	switch c.Scenario {
	case testbed.ScenarioCASMux:
		return nil, errors.New("sim: scenario cas-mux runs the lock benchmark, not Clover cells (RunSuite runs it)")
	case ScenarioThreads:
	default:
		return c.Cells()
	}
	sweep := c.Sweep
	if len(sweep) == 0 {
		sweep = DefaultThreadSweep
	}
	base := c
	base.Scenario, base.Sweep = testbed.ScenarioDefault, nil
	base.Workloads = []ycsb.Kind{ycsb.WorkloadA}
	cells, err := base.Cells()
	if err != nil {
		return nil, err
	}
	var out []testbed.CellSpec
	for _, v := range sweep {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxThreads {
			return nil, fmt.Errorf("sim: scenario threads: --sweep %q: want thread counts from 1 to %d", v, MaxThreads)
		}
		for _, s := range cells {
			s.Scenario, s.Threads, s.Param = ScenarioThreads, n, "threads="+v
			s.ClientHosts = min(s.ClientHosts, n)
			out = append(out, s)
		}
	}
	if err := testbed.CheckCells(out, c.SwitchArch); err != nil {
		return nil, err
	}
	return out, nil
}

func orF(v, d float64) float64 {
	if v == 0 {
		return d
	}
	return v
}

func orD(v, d time.Duration) time.Duration {
	if v == 0 {
		return d
	}
	return v
}

func orI(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}
