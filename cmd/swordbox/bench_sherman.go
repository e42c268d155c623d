package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/swordbox/swordbox/testbed"
	"github.com/swordbox/swordbox/testbed/report"
	"github.com/swordbox/swordbox/testbed/sim"
)

// shermanDefaultTiming is the memory nodes' timing model when --timing is
// not given: the ConnectX-5 caps divided by 700, so that the cap on one
// device-memory lock word sits below the rack's READ rate by the paper's
// factor (9 M CAS/s against about 40 M READs/s: 4.4; the Sherman rack moves
// about 55k READs/s, 9e6/700 = 12.9k CAS/s). docs/sherman.md has the
// figures at cx5/100 too.
const shermanDefaultTiming = "cx5/700"

// shermanBenchConfig holds the settings only `bench --system sherman` reads.
type shermanBenchConfig struct {
	ReadRatios  []int    `mapstructure:"read-ratios"`
	Dists       []string `mapstructure:"dists"`
	KeySpace    int      `mapstructure:"key-space"`
	MemoryNodes int      `mapstructure:"memory-nodes"`
}

// shermanSpans are the ranges of the numbers only `bench --system sherman`
// reads, part of the "bench" section (benchSettings).
func shermanSpans() []span {
	return []span{intSpan("key-space", 64, 1<<22), intSpan("memory-nodes", 1, 16)}
}

// addShermanFlags registers the flags of `bench --system sherman`.
func addShermanFlags(f *pflag.FlagSet) {
	f.IntSlice("read-ratios", testbed.DefaultShermanReadRatios, "sherman: percentages of searches (the rest are inserts), each 0..100")
	f.StringSlice("dists", testbed.DefaultShermanDists, "sherman: key distributions, uniform and/or zipf (constant --zipf, default 0.99)")
	f.Int("key-space", 65536, "sherman: key space (80% loaded before the run, as Sherman's benchmark)")
	f.Int("memory-nodes", 1, "sherman: memory nodes")
}

// runBenchSherman is `swordbox bench --system sherman`: the Sherman A/B
// benchmark, plain locks against Sherman's hierarchical locks against the
// middlebox's CAS to WRITE, over read ratios, key distributions and a
// sweep of client threads (--sweep).
func runBenchSherman(cmd *cobra.Command, cfg benchConfig) error {
	suite, err := shermanSuite(cmd, cfg, cfg.Sherman)
	if err != nil {
		return err
	}
	specs, err := suite.Cells()
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return runSuiteCLI(cmd, cfg, "bench", testbed.ScenarioSherman, len(specs), 3*time.Second,
		func(ctx context.Context, progress func(i, n int, label string)) (*report.Run, error) {
			return testbed.RunShermanSuite(ctx, suite, progress)
		})
}

// shermanVirtualTiming is the memory node's timing model with --clock
// virtual when --timing is not given: the ConnectX-5 caps as they are
// (the wall-clock rack divides them because it is slower than a NIC;
// virtual time is not), as for the virtual cas-mux scenario.
const shermanVirtualTiming = "cx5"

// runBenchShermanVirtual is `swordbox bench --system sherman --clock
// virtual`: the same cells on the virtual-time rack (testbed/sim), one
// memory node, --virtual-duration and --virtual-warmup per cell.
func runBenchShermanVirtual(cmd *cobra.Command, cfg benchConfig) error {
	if cfg.Sherman.MemoryNodes != 1 {
		return fmt.Errorf("bench: --memory-nodes %d: --clock virtual runs Sherman on one memory node", cfg.Sherman.MemoryNodes)
	}
	if cfg.MemWorkers != 0 {
		return fmt.Errorf("bench: --memory-workers %d: the virtual-time rack has none (the NIC model orders requests); drop it", cfg.MemWorkers)
	}
	v := cfg
	if v.Timing == "" {
		v.Timing = shermanVirtualTiming
	}
	v.Duration, v.Warmup = cfg.VirtualDuration, cfg.VirtualWarmup
	suite, err := shermanSuite(cmd, v, cfg.Sherman)
	if err != nil {
		return err
	}
	specs, err := suite.Cells()
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	// The estimate: about 2 s of wall time per 1,000 thread-milliseconds
	// of virtual time, plus 30 us per key for the load (measured here:
	// docs/sherman.md, "Virtual time").
	threads := 0
	for _, s := range specs {
		threads += s.Threads
	}
	per := time.Duration(0)
	if len(specs) > 0 {
		per = time.Duration(float64(threads)/float64(len(specs))*(suite.Duration+suite.Warmup).Seconds()*2*float64(time.Second)) +
			time.Duration(suite.KeySpace)*30*time.Microsecond
	}
	wall := cfg
	wall.Duration, wall.Warmup = 0, 0
	return runSuiteCLI(cmd, wall, "bench --clock virtual", testbed.ScenarioSherman, len(specs), per,
		func(ctx context.Context, progress func(i, n int, label string)) (*report.Run, error) {
			return sim.RunShermanSuite(ctx, suite, progress)
		})
}

// shermanSuite checks every number the user typed, naming the flag.
func shermanSuite(cmd *cobra.Command, cfg benchConfig, sc shermanBenchConfig) (testbed.ShermanSuiteConfig, error) {
	s := testbed.ShermanSuiteConfig{Modes: cfg.Modes, ReadRatios: sc.ReadRatios, Dists: sc.Dists, KeySpace: sc.KeySpace,
		Zipf: cfg.Zipf, ClientHosts: cfg.ClientHosts, MemoryNodes: sc.MemoryNodes, Warmup: cfg.Warmup, Duration: cfg.Duration,
		Seed: cfg.Seed, Timing: cfg.Timing}
	if cfg.Netns {
		return s, fmt.Errorf("bench: --netns: not available with --system sherman")
	}
	if f := cmd.Flags().Lookup("scenario"); f != nil && f.Changed {
		return s, fmt.Errorf("bench: --scenario applies to --system clover; sherman's cells are set by --read-ratios, --dists, --modes and --sweep (threads)")
	}
	if s.Timing == "" {
		s.Timing = shermanDefaultTiming
	}
	for _, m := range s.Modes {
		if !slices.Contains(testbed.ShermanModes, m) {
			return s, fmt.Errorf("bench: --modes %q: with --system sherman want %s", m, strings.Join(testbed.ShermanModes, ", "))
		}
	}
	for _, r := range s.ReadRatios {
		if r < 0 || r > 100 {
			return s, fmt.Errorf("bench: --read-ratios %d: want 0..100", r)
		}
	}
	for _, d := range s.Dists {
		if d != testbed.DistUniform && d != testbed.DistZipf {
			return s, fmt.Errorf("bench: --dists %q: want %s or %s", d, testbed.DistUniform, testbed.DistZipf)
		}
	}
	if s.KeySpace < 64 || s.KeySpace > 1<<22 {
		return s, fmt.Errorf("bench: --key-space %d: want 64..4194304", s.KeySpace)
	}
	if s.MemoryNodes < 1 || s.MemoryNodes > 16 {
		return s, fmt.Errorf("bench: --memory-nodes %d: want 1..16", s.MemoryNodes)
	}
	if s.ClientHosts < 1 || s.ClientHosts > 100 {
		return s, fmt.Errorf("bench: --client-hosts %d: want 1..100", s.ClientHosts)
	}
	if s.Zipf < 0 || s.Zipf >= 10 {
		return s, fmt.Errorf("bench: --zipf %g: want 0 (0.99) or (0, 10)", s.Zipf)
	}
	if s.Duration <= 0 {
		return s, fmt.Errorf("bench: --duration %s: want > 0", s.Duration)
	}
	if s.Warmup < 0 {
		return s, fmt.Errorf("bench: --warmup %s: want >= 0", s.Warmup)
	}
	for _, v := range cfg.Sweep {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1024 {
			return s, fmt.Errorf("bench: --sweep %q: with --system sherman the sweep is client threads, 1..1024", v)
		}
		s.Threads = append(s.Threads, n)
	}
	if _, err := testbed.TimingModel(s.Timing); err != nil {
		return s, fmt.Errorf("bench: --timing: %w", err)
	}
	return s, nil
}
