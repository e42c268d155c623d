package sim

import (
	"context"
	"testing"
	"time"

	"github.com/swordbox/swordbox/testbed"
	"github.com/swordbox/swordbox/testbed/ycsb"
)

// TestRunCellOnVirtualRack: the benchmark's one cell runner on the
// virtual-time rack, steering off and write+read: figures in virtual
// time, the switch's counters read through the controller, and the same
// cell twice from one seed.
func TestRunCellOnVirtualRack(t *testing.T) {
	spec := testbed.CellSpec{Scenario: "default", Workload: ycsb.WorkloadA, Keys: 256, ValueSize: 128, Zipf: 0.99, Tracked: -1,
		Threads: 24, ClientHosts: 3, Warmup: 100 * time.Microsecond, Duration: 300 * time.Microsecond, Seed: 3}
	for _, mode := range []string{testbed.ModeOff, testbed.ModeWriteRead} {
		t.Run(mode, func(t *testing.T) {
			spec.Mode = mode
			a, err := testbed.RunCellOn(context.Background(), spec, NewCellRack)
			if err != nil {
				t.Fatal(err)
			}
			b, err := testbed.RunCellOn(context.Background(), spec, NewCellRack)
			if err != nil {
				t.Fatal(err)
			}
			if a.Ops < 500 || a.Errors != 0 || a.Seconds < 300e-6 || a.Seconds > 400e-6 {
				t.Fatalf("%d ops, %d errors in %.6f virtual seconds (%s)", a.Ops, a.Errors, a.Seconds, a.Note)
			}
			if a.Ops != b.Ops || a.BytesPerOp != b.BytesPerOp || a.P99us != b.P99us {
				t.Fatalf("one seed, two cells: %+v / %+v", a, b)
			}
			if mode != testbed.ModeOff && a.Steering["reads_steered"] == 0 {
				t.Fatalf("no READ steered: %v", a.Steering)
			}
			t.Logf("%s: %.2f Mops, CAS ok %.3f, %.0f bytes/op, p99 %.1f us", mode, a.OpsPerSec/1e6, a.CASSuccessRate, a.BytesPerOp, a.P99us)
		})
	}
	// Steering with no key tracked (partial's first cell) steers nothing.
	spec.Tracked = 0
	c, err := testbed.RunCellOn(context.Background(), spec, NewCellRack)
	if err != nil {
		t.Fatal(err)
	}
	if c.Steering["reads_steered"] != 0 || c.Steering["cas_steered"] != 0 || c.Steering["cas_seen"] == 0 {
		t.Fatalf("no key tracked, yet: %v", c.Steering)
	}
	spec.MemoryWorkers = 2
	if _, err := testbed.RunCellOn(context.Background(), spec, NewCellRack); err == nil {
		t.Fatal("memory workers accepted")
	}
}

// TestRunSuiteVirtual: the default scenario's cells, cut to one workload
// and two modes, through RunSuite: the run says its clock is virtual.
func TestRunSuiteVirtual(t *testing.T) {
	sc := testbed.SuiteConfig{Scenario: testbed.ScenarioDefault, Workloads: []ycsb.Kind{ycsb.WorkloadB}, Modes: []string{testbed.ModeOff, testbed.ModeWriteRead},
		Keys: 256, Threads: 24, ClientHosts: 3, Duration: 200 * time.Microsecond, Warmup: 100 * time.Microsecond}
	run, err := RunSuite(context.Background(), sc, CloverConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Cells) != 2 || run.Config[0][0] != "clock" || run.Config[0][1][:7] != "virtual" {
		t.Fatalf("%d cells, config %v", len(run.Cells), run.Config)
	}
	sc.Scenario, sc.Modes, sc.Sweep = testbed.ScenarioCASMux, nil, []string{"4"}
	run, err = RunSuite(context.Background(), sc, CloverConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := CountCells(sc); len(run.Cells) != 2 || n != 2 || run.Config[0][0] != "clock" {
		t.Fatalf("cas-mux: %d cells (counted %d), config %v", len(run.Cells), n, run.Config)
	}
}

func TestThreadCells(t *testing.T) {
	cells, err := Cells(testbed.SuiteConfig{Scenario: ScenarioThreads, Sweep: []string{"4", "100"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 6 || cells[0].Threads != 4 || cells[0].ClientHosts != 4 || cells[5].Threads != 100 || cells[5].Param != "threads=100" || cells[0].Workload != ycsb.WorkloadA {
		t.Fatalf("cells %+v", cells)
	}
	if _, err := Cells(testbed.SuiteConfig{Scenario: ScenarioThreads, Sweep: []string{"0"}}); err == nil {
		t.Fatal("0 threads accepted")
	}
}

// TestDesignPointNoUnprovenPut: the default bench's YCSB-A cell at the
// paper's design point (240 threads on 7 hosts, 1,024 keys, zipf 0.99),
// write and read steering in chain mode, seeds 1-3, the real switch
// program under the real controller: every put is proven (no
// ErrUncertain), no operation fails, and the cell ends on time (an
// unproven put waits a second of virtual time first). With a one-way node
// map, seed 3 left 3 puts unproven: a client's cursor had moved onto a
// node that a steered CAS failed on, in a segment of the chain not yet
// linked (clover/doc.go, "Steering"). The node map's second way made the
// steered failures behind it rare enough that the old client passes these
// seeds too (seeds 1-16 measured); the check stays for the property.
func TestDesignPointNoUnprovenPut(t *testing.T) {
	if testing.Short() {
		t.Skip("240 threads for 4 ms of virtual time: not under -short")
	}
	for seed := uint64(1); seed <= 3; seed++ {
		spec := testbed.CellSpec{Scenario: "default", Mode: testbed.ModeWriteRead, Workload: ycsb.WorkloadA, Keys: 1024, ValueSize: 128,
			Zipf: 0.99, Tracked: -1, Threads: 240, ClientHosts: 7, Warmup: 2 * time.Millisecond, Duration: 2 * time.Millisecond,
			Seed: seed, Chain: true}
		c, err := testbed.RunCellOn(context.Background(), spec, NewCellRack)
		if err != nil {
			t.Fatal(err)
		}
		if c.Errors != 0 || c.Mechanism["uncertain"] != 0 || c.Seconds > 2.5e-3 {
			t.Fatalf("seed %d: %d errors, %v unproven puts, %.6f virtual seconds (%s)", seed, c.Errors, c.Mechanism["uncertain"], c.Seconds, c.Note)
		}
		t.Logf("seed %d: %.2f Mops, CAS ok %.4f, non-tail %.4f/op", seed, c.OpsPerSec/1e6, c.CASSuccessRate, c.Mechanism["steered_nontail_per_op"])
	}
}
