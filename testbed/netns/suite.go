package netns

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/swordbox/swordbox/testbed"
	"github.com/swordbox/swordbox/testbed/report"
)

// RunSuite runs every cell of c (testbed.SuiteConfig.Cells, the same cells
// as the in-process rack) on a fresh rack of namespaces each. SIGINT and
// SIGTERM end the run like ctx does: the running cell's rack is torn down
// and the cells measured so far are returned. progress, if set, is called
// before each cell with its index, the total and a label.
func RunSuite(ctx context.Context, c testbed.SuiteConfig, opts Options, progress func(i, n int, label string)) (*report.Run, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	specs, err := c.Cells()
	if err != nil {
		return nil, err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	host, _ := os.Hostname()
	started := time.Now()
	run := &report.Run{ID: started.UTC().Format("20060102-150405"), Started: started}
	if len(specs) > 0 {
		s := specs[0]
		timing := "none"
		if s.Timing != nil {
			timing = "cx5"
		}
		run.Scenario = s.Scenario
		run.Config = [][2]string{
			{"system", "Clover (clover/) on the namespace rack (testbed/netns)"},
			{"rack", fmt.Sprintf("one process per host, each in its own network namespace: 1 memory node (swordbox memnode), 1 metadata server and %d client hosts with %d client threads in all (swordbox clover), the Go v1model switch running p4/swordbox.p4 (swordbox switch) under the ctrl controller (swordbox ctrl run) over gRPC", s.ClientHosts, s.Threads)},
			{"links", "veth pairs, AF_PACKET on both ends, no faults; bytes counted by the kernel at the switch's ports (Ethernet header to ICRC); connection managers and gRPC on a separate management bridge"},
			{"RNIC timing model (memory node)", timing},
			{"memory node responder workers", strconv.Itoa(s.MemoryWorkers)},
			{"keys", strconv.Itoa(s.Keys)},
			{"value size", strconv.Itoa(s.ValueSize) + " bytes"},
			{"zipf", strconv.FormatFloat(s.Zipf, 'g', -1, 64) + " (scrambled zipfian, YCSB)"},
			{"duration per cell", fmt.Sprintf("%s measured after %s warm-up", s.Duration, s.Warmup)},
			{"seed", strconv.FormatUint(s.Seed, 10) + " (client host h drives its threads with netns.HostSeed(seed, h))"},
			{"machine", fmt.Sprintf("%s, %d CPUs, %s/%s, %s", host, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())},
		}
	}
	for i, s := range specs {
		label := fmt.Sprintf("%s %s %s", s.Workload, s.Param, s.Mode)
		if progress != nil {
			progress(i, len(specs), label)
		}
		cell, err := RunCell(ctx, s, opts)
		if err != nil {
			return run, fmt.Errorf("cell %d (%s): %w", i+1, label, err)
		}
		run.Cells = append(run.Cells, cell)
	}
	if progress != nil {
		progress(len(specs), len(specs), "done")
	}
	run.Notes = append(run.Notes, testbed.ColdNotes(run.Cells)...)
	return run, nil
}
