package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/swordbox/swordbox/testbed"
	"github.com/swordbox/swordbox/testbed/netns"
	"github.com/swordbox/swordbox/testbed/report"
	"github.com/swordbox/swordbox/testbed/ycsb"
)

// benchConfig is the typed configuration of `swordbox bench` (section
// "bench" of the config file, SWORDBOX_BENCH_* variables, flags).
type benchConfig struct {
	System      string        `mapstructure:"system"`
	SwitchArch  string        `mapstructure:"switch-arch"`
	Chain       bool          `mapstructure:"chain"`
	Scenario    string        `mapstructure:"scenario"`
	Keys        int           `mapstructure:"keys"`
	ValueSize   int           `mapstructure:"value-size"`
	Zipf        float64       `mapstructure:"zipf"`
	Workloads   []string      `mapstructure:"workloads"`
	Modes       []string      `mapstructure:"modes"`
	Sweep       []string      `mapstructure:"sweep"`
	Threads     int           `mapstructure:"threads"`
	ClientHosts int           `mapstructure:"client-hosts"`
	Duration    time.Duration `mapstructure:"duration"`
	Warmup      time.Duration `mapstructure:"warmup"`
	Seed        uint64        `mapstructure:"seed"`
	Timing      string        `mapstructure:"timing"`
	MemWorkers  int           `mapstructure:"memory-workers"`
	ReadTimeout time.Duration `mapstructure:"read-timeout"`
	Results     string        `mapstructure:"results"`
	JSON        bool          `mapstructure:"json"`
	Netns       bool          `mapstructure:"netns"`
	NoProgress  bool          `mapstructure:"no-progress"`

	// The virtual-time rack (bench_virtual.go).
	Clock           string        `mapstructure:"clock"`
	VirtualDuration time.Duration `mapstructure:"virtual-duration"`
	VirtualWarmup   time.Duration `mapstructure:"virtual-warmup"`

	// Sherman's own settings (bench_sherman.go).
	Sherman shermanBenchConfig `mapstructure:",squash"`
}

// newBenchCmd builds the bench command and its flags (a constructor, so that
// tests get a fresh command and fresh flags each time).
func newBenchCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "bench",
		Short: "Run the A/B benchmark of swordbox on the in-process software rack",
		Long: `bench assembles a software rack for every cell (one memory node, Clover's
metadata server, client hosts, and the Go switch target running swordbox.p4
under the real controller over gRPC) and runs the same workload, with the same
seed, with swordbox off, with write steering, and with write and read steering.

With no arguments it runs the paper's Figures 11-13: Clover, 1,024 keys,
128-byte values, zipf 0.99, YCSB C, B, A and write-only, each in the three
modes. It prints a table on stdout and writes results/<time>-<scenario>/ (and
points results/latest at it) with the JSON, a CSV, a Markdown report and PNG
plots. Progress goes to stderr: a bar on a terminal, one line per finished
cell otherwise. SIGINT or SIGTERM stops the run; the cells that completed are
printed and saved, marked partial.

Every number is checked before anything runs: a value outside its range
(shown in the flag's help) is refused, naming the flag and the range.

Scenarios:
  default   Figures 11-13 (workloads x modes)
  partial   Figure 14: hottest 0, 8, 16, 32, 64 and all keys steered, zipf 1.5, YCSB A
  zipf      Figure 16: zipf 0.6, 0.8, 0.99, 1.2, 1.5, YCSB A, every mode
  size      Figure 15: objects of 64 to 1,024 bytes, YCSB A, every mode
  cas-mux   Figure 10: N client QPs lock and unlock one word through the middlebox,
            plain CAS against CAS multiplexed and rewritten into WRITE (1..32 QPs)

--sweep replaces a scenario's swept values (e.g. --sweep 0,8,all for partial,
--sweep 1,16 for cas-mux).`,
		Args: cobra.NoArgs,
		RunE: runBench,
	}
	f := c.Flags()
	f.String("system", "clover", "memory system: clover, swarm (SWARM-KV: docs/swarm.md) or sherman (docs/sherman.md)")
	f.String("switch-arch", testbed.ArchV1Model, "switch program of the rack: v1model (p4/swordbox.p4) or tna (p4/tna/swordbox.p4, the Tofino program), both on the Go target; --system clover, in process")
	f.Bool("chain", true, "chained write steering: a CAS is steered onto the key's last forwarded link, not only onto a confirmed tail (docs/swordbox-p4.md, \"Chain mode\"); --chain=false steers to confirmed tails only; both switch programs have it")
	addShermanFlags(f)
	f.String("scenario", testbed.ScenarioDefault, "one of "+strings.Join(testbed.Scenarios, ", ")+"; threads with --clock virtual")
	f.Int("keys", 1024, "number of Clover keys (YCSB record count); also within the 1 GiB Clover region with --value-size and --threads, at most the switch's 4096 key slots when steered, and with --system swarm at most --threads x 31744 (docs/bench.md)")
	f.Int("value-size", 128, "object (value) size in bytes (16..1024 with --system swarm)")
	f.Float64("zipf", 0, "zipfian constant of key popularity (0: 0.99, or 1.5 for partial)")
	f.StringSlice("workloads", []string{"c", "b", "a", "write-only"}, "YCSB workloads of the default scenario (a, b, c, d, f, write-only)")
	f.StringSlice("modes", nil, "modes to compare (default off, write, write+read; cas-mux: cas, cas-to-write)")
	f.StringSlice("sweep", nil, "values of the scenario's swept parameter (tracked keys, zipf constants, sizes; client threads with --system sherman)")
	f.Int("threads", testbed.DefaultThreads, "client threads in all, each with its own QPs (the paper's design point: 240; at most 2048 with --netns)")
	f.Int("client-hosts", testbed.DefaultClientHosts, "client hosts (RNICs) the threads are spread over")
	f.Duration("duration", 8*time.Second, "measured time per cell")
	f.Duration("warmup", time.Second, "unmeasured time per cell before measuring")
	f.Uint64("seed", 1, "seed of every random choice (same seed, same operation sequence)")
	f.String("timing", "", "NIC timing model of the memory node: none, cx5 (ConnectX-5 atomic rates, SwordBox Figures 3-4) or cx5/N (every cap divided by N); default none, cx5/100 for cas-mux, cx5/700 for --system sherman")
	f.Int("memory-workers", 0, "responder workers of the memory node (0: apply in arrival order)")
	f.Duration("read-timeout", 0, "Clover's T_r: a READ slower than it is reissued, the switch steers to a tail for T_r/2 (0: 50ms)")
	f.String("results", "results", "directory under which <time>-<scenario>/ and the link latest are written (empty: none); checked before the run")
	f.Bool("json", false, "print the cells as a JSON array on stdout instead of the table")
	f.Bool("netns", false, "run every host as its own process in its own network namespace, joined by veth pairs (root; see docs/netns.md)")
	f.Bool("no-progress", false, "show no progress on stderr (else a bar on a terminal, one line per finished cell otherwise)")
	f.String("clock", clockWall, "wall: the software rack in real time; virtual: the virtual-time rack (testbed/sim, docs/sim.md), every time simulated, Clover and cas-mux, plus the threads scenario (Figure 5), and --system sherman")
	f.Duration("virtual-duration", 2*time.Millisecond, "with --clock virtual: measured virtual time per cell (--duration is wall time)")
	f.Duration("virtual-warmup", 2*time.Millisecond, "with --clock virtual: unmeasured virtual time per cell")
	return c
}

// benchSettings is the settings table of the "bench" section: the ranges
// of bench's numbers (Sherman's among them) and its cross-field check.
func benchSettings() *settingTable {
	return newSection([]string{"bench"},
		intSpan("keys", 1, 1<<20),
		intSpan("value-size", 1, 4072).because("a Clover node, 24-byte header and value, in one 4096-byte MTU"),
		span{key: "zipf", lo: testbed.MinZipf, hi: testbed.MaxZipf}.orZero("the scenario's default"),
		intSpan("threads", 1, 4096),
		intSpan("client-hosts", 1, 64),
		durSpan("duration", 10*time.Millisecond, 24*time.Hour),
		durSpan("warmup", 0, time.Hour),
		intSpan("memory-workers", 0, 64),
		durSpan("read-timeout", time.Millisecond, 10*time.Second).orZero("Clover's default, 50ms"),
		durSpan("virtual-duration", 100*time.Microsecond, time.Second),
		durSpan("virtual-warmup", 0, time.Second),
	).withSpans(shermanSpans()...).withCheck(func(cfg any) error {
		c := cfg.(*benchConfig)
		// Other systems default --client-hosts themselves and check it then.
		if (c.System == "" || c.System == "clover") && c.ClientHosts > c.Threads {
			return fmt.Errorf("--client-hosts %d is more than --threads %d: every client host needs a thread", c.ClientHosts, c.Threads)
		}
		if c.System == "" || c.System == "clover" {
			if err := checkCloverRegion(c.Keys, c.ValueSize, c.Threads); err != nil {
				return err
			}
		}
		if err := testbed.CheckSwitchArch(c.SwitchArch); err != nil {
			return fmt.Errorf("--switch-arch: %w", err)
		}
		if c.SwitchArch != testbed.ArchV1Model && ((c.System != "" && c.System != "clover") || c.Netns) {
			return fmt.Errorf("--switch-arch %s: only --system clover on the in-process rack runs it (not --netns, not swarm or sherman)", c.SwitchArch)
		}
		if c.Netns && c.Threads > netns.MaxThreads {
			return fmt.Errorf("--threads %d with --netns: the namespace rack holds at most %d (its one metadata-server process loses its connections past that: WR_FLUSH_ERR at 4096 threads on a 2-core machine); the in-process and virtual racks take up to 4096", c.Threads, netns.MaxThreads)
		}
		return nil
	})
}

func runBench(cmd *cobra.Command, _ []string) error {
	var cfg benchConfig
	if err := loadConfig(cmd, "bench", &cfg); err != nil {
		return err
	}
	switch cfg.Clock {
	case clockWall:
	case clockVirtual:
		return runBenchVirtual(cmd, cfg)
	default:
		return fmt.Errorf("bench: --clock %q: want %s or %s", cfg.Clock, clockWall, clockVirtual)
	}
	switch cfg.System {
	case "clover":
	case "swarm":
		return runBenchSwarm(cmd, cfg)
	case "sherman":
		return runBenchSherman(cmd, cfg)
	default:
		return fmt.Errorf("bench: --system %q: want clover, swarm or sherman", cfg.System)
	}
	if cfg.Netns {
		return runBenchNetns(cmd, cfg)
	}
	sc, err := suiteConfig(cfg)
	if err != nil {
		return err
	}
	var ncells int
	if sc.Scenario == testbed.ScenarioCASMux {
		mux, err := sc.CASMuxCells()
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		ncells = len(mux)
	} else {
		specs, err := sc.Cells()
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		ncells = len(specs)
	}
	return runSuiteCLI(cmd, cfg, "bench", sc.Scenario, ncells, time.Second,
		func(ctx context.Context, progress func(i, n int, label string)) (*report.Run, error) {
			return testbed.RunSuite(ctx, sc, progress)
		})
}

// suiteConfig turns the command's configuration into the suite's, checking
// the workload names.
func suiteConfig(cfg benchConfig) (testbed.SuiteConfig, error) {
	sc := testbed.SuiteConfig{Scenario: cfg.Scenario, Keys: cfg.Keys, ValueSize: cfg.ValueSize, Zipf: cfg.Zipf,
		Modes: cfg.Modes, Sweep: cfg.Sweep, Threads: cfg.Threads, ClientHosts: cfg.ClientHosts, Duration: cfg.Duration,
		Warmup: cfg.Warmup, Seed: cfg.Seed, Timing: cfg.Timing, MemoryWorkers: cfg.MemWorkers, ReadTimeout: cfg.ReadTimeout,
		SwitchArch: cfg.SwitchArch, Chain: cfg.Chain}
	for _, w := range cfg.Workloads {
		if _, _, err := ycsb.Preset(ycsb.Kind(w)); err != nil {
			return sc, fmt.Errorf("bench: --workloads: %w", err)
		}
		sc.Workloads = append(sc.Workloads, ycsb.Kind(w))
	}
	return sc, nil
}

// runSuiteCLI is the shell around a suite run: it checks that the results
// can be written before anything runs, announces the run, shows progress
// (a bar on a terminal, one line per finished cell elsewhere), stops on
// SIGINT or SIGTERM, prints and saves whatever cells completed (also when a
// later cell failed or the run was interrupted; the run is then marked
// partial), and names what failed. setup is the per-cell time beyond the
// warm-up and the measurement, for the estimate.
func runSuiteCLI(cmd *cobra.Command, cfg benchConfig, name, scenario string, ncells int, setup time.Duration,
	run func(ctx context.Context, progress func(i, n int, label string)) (*report.Run, error)) error {
	if err := checkResultsDir(cfg.Results); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	errOut := cmd.ErrOrStderr()
	per := cfg.Duration + cfg.Warmup + setup
	fmt.Fprintf(errOut, "swordbox %s: scenario %s, %d cells, about %s\n", name, scenario, ncells, (time.Duration(ncells) * per).Round(time.Second))
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	prog := newProgress(errOut, name, ncells, !cfg.NoProgress)
	r, err := run(ctx, prog.update)
	prog.finish()
	if r != nil && err != nil {
		r.Partial = true
		why := "a cell failed"
		if ctx.Err() != nil {
			why = "interrupted"
		}
		r.Notes = append(r.Notes, fmt.Sprintf("Partial run (%s): %d of %d cells completed; %v", why, len(r.Cells), ncells, err))
	}
	if r != nil && len(r.Cells) > 0 {
		if werr := emit(cmd, cfg, r); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s: interrupted: %w", name, err)
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// checkResultsDir makes sure the results can be written under dir before a
// run starts, so that a bad path fails in a second, not after the run.
func checkResultsDir(dir string) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--results %s: cannot create it: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".swordbox-check-*")
	if err != nil {
		return fmt.Errorf("--results %s: cannot write there: %w", dir, err)
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// emit prints the table (or JSON) and writes the results directory,
// results/<time>-<scenario>/, pointing results/latest at it.
func emit(cmd *cobra.Command, cfg benchConfig, run *report.Run) error {
	out := cmd.OutOrStdout()
	if run.Partial {
		fmt.Fprintf(cmd.ErrOrStderr(), "PARTIAL RESULTS: %d cells completed\n", len(run.Cells))
	}
	if cfg.JSON {
		if err := report.WriteJSON(out, run.Cells); err != nil {
			return err
		}
	} else {
		if err := report.WriteTable(out, run.Cells); err != nil {
			return err
		}
		fmt.Fprintln(out)
		if err := report.WriteMechanism(out, run.Cells); err != nil {
			return err
		}
		if rs := report.Ratios(run.Cells, run.BaselineMode()); len(rs) > 0 {
			fmt.Fprintln(out)
			fmt.Fprintf(out, "against %s (same workload and seed): throughput x, bytes/op ÷, p99 read ÷, p99 write ÷\n", run.BaselineMode())
			for _, r := range rs {
				fmt.Fprintf(out, "  %-10s %-12s %-12s %6s  %6s  %6s  %6s\n", r.Workload, r.Param, r.Mode,
					ratio(r.Throughput), ratio(r.BytesReduction), ratio(r.ReadP99Reduction), ratio(r.WriteP99Reduction))
			}
		}
	}
	for _, n := range testbed.ColdNotes(run.Cells) {
		fmt.Fprintln(cmd.ErrOrStderr(), "note:", n)
	}
	if cfg.Results == "" {
		return nil
	}
	dir, err := report.SaveUnder(cfg.Results, run)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "results in %s (also %s)\n", dir, filepath.Join(cfg.Results, "latest"))
	return nil
}

// ratio formats a ratio for the terminal, n/a when it does not apply.
func ratio(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}
