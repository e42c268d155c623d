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
)

// RunSuite runs every cell of c (testbed.SuiteConfig.Cells, the same cells
// as the other racks) on a fresh virtual-time rack each, through the one
// cell runner (testbed.RunCellOn), with the knobs of base (ClientCPU,
// MSCPU, the rack's links, switch and NIC). c's durations are virtual
// time; every figure of the run is in virtual time, and the run's
// configuration says so. progress, if set, is called before each cell.
// The cas-mux scenario needs the middlebox, which the virtual-time rack
// does not have: it is refused.
func RunSuite(ctx context.Context, c testbed.SuiteConfig, base CloverConfig, progress func(i, n int, label string)) (*report.Run, error) {
	if c.Scenario == testbed.ScenarioCASMux {
		return nil, errors.New("sim: scenario cas-mux needs the middlebox, which the virtual-time rack does not run")
	}
	specs, err := c.Cells()
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
	for i, s := range specs {
		label := fmt.Sprintf("%s %s %s", s.Workload, s.Param, s.Mode)
		if progress != nil {
			progress(i, len(specs), label)
		}
		if err := ctx.Err(); err != nil {
			return run, err
		}
		cell, err := testbed.RunCellOn(ctx, s, build)
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
