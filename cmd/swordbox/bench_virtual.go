package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/swordbox/swordbox/testbed"
	"github.com/swordbox/swordbox/testbed/report"
	"github.com/swordbox/swordbox/testbed/sim"
)

// Clocks of `swordbox bench --clock`.
const (
	clockWall    = "wall"
	clockVirtual = "virtual"
)

// runBenchVirtual is `swordbox bench --clock virtual`: the suite's cells
// (and the threads scenario, Figure 5) on the virtual-time rack
// (testbed/sim), every time in them simulated; --virtual-duration and
// --virtual-warmup are the measured and unmeasured virtual time per cell.
func runBenchVirtual(cmd *cobra.Command, cfg benchConfig) error {
	if cfg.System == "sherman" {
		return runBenchShermanVirtual(cmd, cfg)
	}
	if cfg.System != "" && cfg.System != "clover" {
		return fmt.Errorf("bench: --clock virtual runs Clover and Sherman (--system %s runs on the wall clock)", cfg.System)
	}
	if cfg.Netns {
		return fmt.Errorf("bench: --clock virtual and --netns: the namespace rack runs on the wall clock; drop one")
	}
	if cfg.SwitchArch != "" && cfg.SwitchArch != testbed.ArchV1Model {
		return fmt.Errorf("bench: --clock virtual runs p4/swordbox.p4 (--switch-arch %s); drop --switch-arch", testbed.ArchV1Model)
	}
	sc, err := suiteConfig(cfg)
	if err != nil {
		return err
	}
	sc.Duration, sc.Warmup = cfg.VirtualDuration, cfg.VirtualWarmup
	ncells, err := sim.CountCells(sc)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	// The estimate: about 6 s of wall time per 1,000 thread-milliseconds of
	// virtual time on this project's machines (docs/sim.md).
	threads := sc.Threads
	switch sc.Scenario {
	case sim.ScenarioThreads:
		threads = 1000
	case testbed.ScenarioCASMux:
		threads = 32
	}
	// About 3 s of wall time per thread and virtual second here (measured:
	// 2.9 s for the default 240-thread cells, 2.6 s with 80 ms warm-ups).
	per := time.Duration(float64(threads)*(sc.Duration+sc.Warmup).Seconds()*3*float64(time.Second)) + 300*time.Millisecond
	wall := cfg
	wall.Duration, wall.Warmup = 0, 0
	return runSuiteCLI(cmd, wall, "bench --clock virtual", sc.Scenario, ncells, per,
		func(ctx context.Context, progress func(i, n int, label string)) (*report.Run, error) {
			return sim.RunSuite(ctx, sc, sim.CloverConfig{}, progress)
		})
}
