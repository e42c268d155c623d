package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/swordbox/swordbox/swarm"
	"github.com/swordbox/swordbox/testbed"
	"github.com/swordbox/swordbox/testbed/report"
	"github.com/swordbox/swordbox/testbed/ycsb"
)

// SWARM-KV's defaults where the shared bench flags default to Clover's
// figures: the paper's 64-byte values and four clients with one operation
// outstanding each (here 8 threads on 2 hosts), 10,000 keys (the paper
// loads 100,000; see docs/swarm.md), YCSB A, B, C, D and write-only.
const (
	swarmKeys        = 10_000
	swarmValueSize   = 64
	swarmThreads     = 8
	swarmClientHosts = 2
)

var swarmWorkloads = []string{"a", "b", "c", "d", "write-only"}

// runBenchSwarm is `swordbox bench --system swarm`: SWARM-KV with 3
// replicas on 3 memory nodes, every workload in every mode, then YCSB A in
// every mode with memory node 0 killed a third into the measured run.
func runBenchSwarm(cmd *cobra.Command, cfg benchConfig) error {
	f := cmd.Flags()
	if cfg.Netns {
		return fmt.Errorf("bench: --netns: not available with --system swarm (the SWARM-KV rack is in-process)")
	}
	if cfg.Scenario != testbed.ScenarioDefault {
		return fmt.Errorf("bench: --scenario %q: --system swarm runs only %s", cfg.Scenario, testbed.ScenarioDefault)
	}
	if len(cfg.Sweep) > 0 {
		return fmt.Errorf("bench: --sweep: --system swarm has no swept parameter")
	}
	if !f.Changed("keys") {
		cfg.Keys = swarmKeys
	}
	if !f.Changed("value-size") {
		cfg.ValueSize = swarmValueSize
	}
	if !f.Changed("threads") {
		cfg.Threads = swarmThreads
	}
	if !f.Changed("client-hosts") {
		cfg.ClientHosts = swarmClientHosts
	}
	if !f.Changed("workloads") {
		cfg.Workloads = swarmWorkloads
	}
	if len(cfg.Modes) == 0 {
		cfg.Modes = testbed.SwarmModes
	}
	switch {
	case cfg.Keys < 1 || cfg.Keys > 1_000_000:
		return fmt.Errorf("bench: --keys %d: want 1..1000000 with --system swarm", cfg.Keys)
	case cfg.ValueSize < 16 || cfg.ValueSize > 1024:
		return fmt.Errorf("bench: --value-size %d: want 16..1024 with --system swarm (one packet per entry)", cfg.ValueSize)
	case cfg.Threads < 1 || cfg.Threads > swarm.MaxWriters:
		return fmt.Errorf("bench: --threads %d: want 1..%d with --system swarm (one writer id each)", cfg.Threads, swarm.MaxWriters)
	case cfg.ClientHosts < 1 || cfg.ClientHosts > cfg.Threads:
		return fmt.Errorf("bench: --client-hosts %d: want 1..%d (the threads)", cfg.ClientHosts, cfg.Threads)
	case cfg.Duration <= 0:
		return fmt.Errorf("bench: --duration %s: want more than 0", cfg.Duration)
	case cfg.Warmup < 0:
		return fmt.Errorf("bench: --warmup %s: want 0 or more", cfg.Warmup)
	case cfg.Zipf < 0 || cfg.Zipf > 10:
		return fmt.Errorf("bench: --zipf %v: want 0 (0.99) or up to 10", cfg.Zipf)
	}
	// A writer holds an out-of-place log buffer for every key it wrote
	// last (swarm/doc.go), at most swarm.MaxLogBuffers; keys spread over the
	// writers, so the threads bound the keys, with 1024 buffers each to
	// spare for the run's chance and testbed.SwarmInsertRoom keys for a
	// workload's inserts.
	most, why := cfg.Threads*(swarm.MaxLogBuffers-1024), ""
	if slices.ContainsFunc(cfg.Workloads, func(w string) bool {
		mix, _, _ := ycsb.Preset(ycsb.Kind(w))
		return mix.Insert > 0
	}) {
		most -= testbed.SwarmInsertRoom
		why = fmt.Sprintf(", less the %d kept for workload d's inserts", testbed.SwarmInsertRoom)
	}
	if cfg.Keys > most {
		return fmt.Errorf("bench: --keys %d with --threads %d: want at most %d with --system swarm (a writer holds a log buffer for each key it wrote last, at most %d%s)",
			cfg.Keys, cfg.Threads, max(most, 0), swarm.MaxLogBuffers-1024, why)
	}
	if cfg.Zipf == 0 {
		cfg.Zipf = ycsb.DefaultZipfConstant
	}
	for _, m := range cfg.Modes {
		if !slices.Contains(testbed.SwarmModes, m) {
			return fmt.Errorf("bench: --modes %q: want %s with --system swarm", m, strings.Join(testbed.SwarmModes, ", "))
		}
	}
	var kinds []ycsb.Kind
	for _, w := range cfg.Workloads {
		mix, _, err := ycsb.Preset(ycsb.Kind(w))
		if err != nil {
			return fmt.Errorf("bench: --workloads: %w", err)
		}
		if mix.ReadModifyWrite > 0 || mix.Scan > 0 {
			return fmt.Errorf("bench: --workloads %q: want a, b, c, d or write-only with --system swarm", w)
		}
		kinds = append(kinds, ycsb.Kind(w))
	}
	timingName := cfg.Timing
	if timingName == "" {
		timingName = "none"
	}
	timing, err := testbed.TimingModel(timingName)
	if err != nil {
		return fmt.Errorf("bench: --timing: %w", err)
	}
	// Every workload's modes run side by side (RunSwarmAB: interleaved
	// slices, so that the machine's changing load falls on every mode
	// alike); then the kill cells, each on its own.
	type job struct {
		spec testbed.SwarmCellSpec
		ab   bool
	}
	var jobs []job
	base := testbed.SwarmCellSpec{Keys: cfg.Keys, ValueSize: cfg.ValueSize, Zipf: cfg.Zipf, Threads: cfg.Threads,
		ClientHosts: cfg.ClientHosts, Warmup: cfg.Warmup, Duration: cfg.Duration, Seed: cfg.Seed, Timing: timing}
	for _, k := range kinds {
		s := base
		s.Workload = k
		jobs = append(jobs, job{s, true})
	}
	for _, m := range cfg.Modes {
		s := base
		s.Workload, s.Mode, s.KillAt, s.KillNode = ycsb.WorkloadA, m, (cfg.Duration / 3).Round(10*time.Millisecond), 0
		jobs = append(jobs, job{s, false})
	}
	rounds := int(min(8, max(1, cfg.Duration/(250*time.Millisecond))))
	var cells []testbed.SwarmCell
	var run *report.Run
	err = runSuiteCLI(cmd, cfg, "bench", "swarm", len(kinds)*len(cfg.Modes)+len(cfg.Modes), time.Second,
		func(ctx context.Context, progress func(i, n int, label string)) (*report.Run, error) {
			host, _ := os.Hostname()
			started := time.Now()
			run = &report.Run{ID: started.UTC().Format("20060102-150405") + "-swarm", Started: started, Scenario: "swarm", Baseline: testbed.SwarmDirect,
				Config: [][2]string{
					{"system", "SWARM-KV (swarm/): Safe-Guess over In-n-Out, 3 replicas on 3 memory nodes, majority 2"},
					{"rack", fmt.Sprintf("3 memory nodes and %d client hosts (%d client threads, each its own QP per memory node) on in-memory links joined by L2 forwarding; mux modes put the middlebox (one shard) between the clients' and the memory nodes' sides", cfg.ClientHosts, cfg.Threads)},
					{"links", "in-memory, no faults; bytes/op counts the memory nodes' links, both directions (Ethernet header to ICRC)"},
					{"RNIC timing model (memory nodes)", timingName},
					{"keys", strconv.Itoa(cfg.Keys)},
					{"value size", strconv.Itoa(cfg.ValueSize) + " bytes"},
					{"zipf", strconv.FormatFloat(cfg.Zipf, 'g', -1, 64)},
					{"duration per cell", fmt.Sprintf("%s measured after %s warm-up; a workload's modes run side by side in %d interleaved rounds (order rotating), each mode on its own rack", cfg.Duration, cfg.Warmup, rounds)},
					{"kill cells", fmt.Sprintf("YCSB A, memory node 0 crashed %s into the measured run, each cell on its own (not side by side)", (cfg.Duration / 3).Round(10*time.Millisecond))},
					{"seed", strconv.FormatUint(cfg.Seed, 10)},
					{"machine", fmt.Sprintf("%s, %d CPUs, %s/%s, %s", host, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())},
				}}
			n := len(kinds)*len(cfg.Modes) + len(cfg.Modes)
			for _, j := range jobs {
				var got []testbed.SwarmCell
				var err error
				label := fmt.Sprintf("%s, modes side by side", j.spec.Workload)
				progress(len(cells), n, label)
				if j.ab {
					got, err = testbed.RunSwarmAB(ctx, j.spec, cfg.Modes, rounds)
				} else {
					label = fmt.Sprintf("%s %s, memory node killed", j.spec.Workload, j.spec.Mode)
					var c testbed.SwarmCell
					c, err = testbed.RunSwarmCell(ctx, j.spec)
					got = []testbed.SwarmCell{c}
				}
				if err != nil {
					return run, fmt.Errorf("%s: %w", label, err)
				}
				for _, c := range got {
					cells = append(cells, c)
					run.Cells = append(run.Cells, c.Cell)
				}
			}
			progress(n, n, "done")
			return run, nil
		})
	if len(cells) > 0 && !cfg.JSON {
		fmt.Fprintln(cmd.OutOrStdout())
		writeSwarmTable(cmd.OutOrStdout(), cells)
	}
	if len(cells) > 0 && cfg.Results != "" && run != nil {
		dir := filepath.Join(cfg.Results, run.ID)
		if werr := saveSwarm(dir, cells); werr != nil && err == nil {
			err = werr
		}
	}
	return err
}

// writeSwarmTable prints SWARM-KV's own figures: round trips per
// operation, Safe-Guess and In-n-Out counters, frames on the memory nodes'
// links, the middlebox's work, and the throughput series of kill cells.
func writeSwarmTable(w io.Writer, cells []testbed.SwarmCell) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tmode\tops/s\tget RTT\tget 1-RTT\tput RTT\tput 1-RTT\tfast puts\tout-of-place/op\tverbs/op\tmem frames/op\tmem bytes/op\tCAS->WRITE\t")
	for _, c := range cells {
		wl := c.Workload
		if c.KilledAtS > 0 {
			wl += " (kill)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t%.3f\t%.1f\t%.1f\t%.0f\t%d\t\n", wl, c.Mode, c.OpsPerSec,
			num(c.GetRTT, 2), share(c.GetOneRTT), num(c.PutRTT, 2), share(c.PutOneRTT), share(c.FastWrites),
			c.OutOfPlacePerOp, c.VerbsPerOp, c.MemFramesPerOp, c.BytesPerOp, c.Steering["cas_to_write"])
	}
	tw.Flush()
	for _, c := range cells {
		if c.KilledAtS > 0 {
			fmt.Fprintf(w, "\n%s, memory node 0 killed at %.2fs; ops/s per %.0f ms:\n  %s\n", c.Mode, c.KilledAtS, c.SampleMS, series(c.Series))
		}
	}
}

func num(v float64, prec int) string {
	if math.IsNaN(v) {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

func share(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return strconv.FormatFloat(100*v, 'f', 1, 64) + "%"
}

func series(s []float64) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strings.Join(parts, " ")
}

// saveSwarm writes swarm.json (every SWARM-KV cell with its series) and
// swarm.md (the table above) next to the standard report.
func saveSwarm(dir string, cells []testbed.SwarmCell) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	type out struct {
		Cell                                         report.Cell `json:"cell"`
		GetRTT, PutRTT, GetOneRTT, PutOneRTT         *float64
		FastWrites, OutOfPlacePerOp, CASRetriesPerOp *float64
		MemFramesPerOp                               float64
		Series                                       []float64
		SampleMS, KilledAtS                          float64
	}
	nn := func(v float64) *float64 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		return &v
	}
	var js []out
	for _, c := range cells {
		js = append(js, out{c.Cell, nn(c.GetRTT), nn(c.PutRTT), nn(c.GetOneRTT), nn(c.PutOneRTT), nn(c.FastWrites),
			nn(c.OutOfPlacePerOp), nn(c.CASRetriesPerOp), c.MemFramesPerOp, c.Series, c.SampleMS, c.KilledAtS})
	}
	b, err := json.MarshalIndent(js, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "swarm.json"), b, 0o644); err != nil {
		return err
	}
	var sb strings.Builder
	sb.WriteString("# SWARM-KV\n\n```\n")
	writeSwarmTable(&sb, cells)
	sb.WriteString("```\n")
	return os.WriteFile(filepath.Join(dir, "swarm.md"), []byte(sb.String()), 0o644)
}
