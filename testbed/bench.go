package testbed

import (
	"context"
	"sort"
	"time"

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
	// Chain turns on chained write steering (rack.Config.Chain).
	Chain bool
}

// RunCell runs one cell on a fresh in-process rack (NewCloverCellRack):
// it loads the keys, runs the workload for the warm-up (not measured) and
// then for the measured duration, and returns what it measured.
func RunCell(ctx context.Context, spec CellSpec) (report.Cell, error) {
	return RunCellOn(ctx, spec, NewCloverCellRack)
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
