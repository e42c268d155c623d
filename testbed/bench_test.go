package testbed

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/swordbox/swordbox/testbed/report"
	"github.com/swordbox/swordbox/testbed/ycsb"
)

func TestRunCellSmoke(t *testing.T) {
	var offRetries float64
	for _, mode := range []string{ModeOff, ModeWriteRead} {
		c, err := RunCell(context.Background(), CellSpec{Scenario: "test", Mode: mode, Workload: ycsb.WorkloadA, Keys: 64, ValueSize: 128,
			Zipf: 0.99, Tracked: -1, Threads: 8, ClientHosts: 2, Warmup: 200 * time.Millisecond, Duration: time.Second, Seed: 1, Chain: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %.0f ops/s p99 %.1fus bytes/op %.0f cas ok %.3f retries/op %.3f errors %d steering %v", mode, c.OpsPerSec, c.P99us, c.BytesPerOp, c.CASSuccessRate, c.RetriesPerOp, c.Errors, c.Steering)
		if c.Ops == 0 || c.Errors != 0 {
			t.Fatalf("cell: %+v", c)
		}
		// The switch's own counters: off only forwards; steering learns
		// node WRITEs and sees the linking CASes, read steering the READs.
		learned := c.Steering["node_writes"] > 0 && c.Steering["cas_seen"] > 0
		if (mode != ModeOff) != learned || (mode == ModeWriteRead) != (c.Steering["node_reads"] > 0) {
			t.Errorf("%s: switch steering counters %v", mode, c.Steering)
		}
		switch mode {
		case ModeOff:
			offRetries = c.RetriesPerOp
		case ModeWriteRead:
			// Chain mode (the bench's default) steers each CAS onto the
			// key's last forwarded link and vouches for the links it
			// confirms, and READs are steered to the chain's end and
			// vouched for. A put CASes from wherever its persistence READ
			// landed (clover/doc.go, "Steering"), so CAS success is not
			// the measure here (98.3-99.5 % over runs, off 99.1-99.5 %):
			// the clients' retries are.
			if c.Steering["cas_chained"] == 0 || c.Steering["reads_vouched"] == 0 || c.Steering["links_vouched"] == 0 || c.RetriesPerOp >= offRetries/10 {
				t.Errorf("write+read: %d CAS chained, %d READs and %d links vouched for, %.3f retries/op against %.3f off",
					c.Steering["cas_chained"], c.Steering["reads_vouched"], c.Steering["links_vouched"], c.RetriesPerOp, offRetries)
			}
		}
	}
}

// The cas-mux cell keeps mutual exclusion (RunCASMux checks every lock and
// unlock) in both modes, and the middlebox really rewrites CAS into WRITE in
// the cas-to-write mode and never in the cas mode.
// An interrupted cas-mux cell stops at once, without a result, whatever
// its --duration (it slept the whole duration, deaf to SIGINT and SIGTERM).
func TestRunCASMuxStopsWithItsContext(t *testing.T) {
	for _, spec := range []CASMuxSpec{
		{Mode: ModeCASToWrite, QPs: 2, Duration: time.Hour},
		{Mode: ModeCAS, QPs: 2, Duration: time.Second, Warmup: time.Hour},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := RunCASMux(ctx, spec)
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%+v: err %v, want the context's", spec, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%+v: still running 20s after its context ended", spec)
		}
	}
}

func TestRunCASMux(t *testing.T) {
	for _, mode := range []string{ModeCAS, ModeCASToWrite} {
		c, err := RunCASMux(context.Background(), CASMuxSpec{Mode: mode, QPs: 4, Duration: 500 * time.Millisecond, Warmup: 100 * time.Millisecond})
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if c.Ops == 0 || c.CASSuccessRate <= 0 || c.CASSuccessRate > 1 {
			t.Fatalf("%s: cell %+v", mode, c)
		}
		conv := c.Steering["cas_to_write"]
		if (mode == ModeCASToWrite) != (conv > 0) {
			t.Errorf("%s: middlebox converted %d CAS into WRITE", mode, conv)
		}
	}
}

func TestCASMuxCells(t *testing.T) {
	cells, err := SuiteConfig{Scenario: ScenarioCASMux, Sweep: []string{"1", "16"}}.CASMuxCells()
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 4 || cells[0].Timing == nil || cells[3].QPs != 16 || cells[3].Mode != ModeCASToWrite {
		t.Errorf("cells = %+v", cells)
	}
	if _, err := (SuiteConfig{Scenario: ScenarioCASMux, Modes: []string{"write"}}).CASMuxCells(); err == nil {
		t.Error("mode write accepted for cas-mux")
	}
	if _, err := (SuiteConfig{Scenario: ScenarioCASMux, Sweep: []string{"0"}}).CASMuxCells(); err == nil {
		t.Error("0 QPs accepted")
	}
}

func TestSuiteCells(t *testing.T) {
	tests := []struct {
		cfg     SuiteConfig
		n       int
		wantErr bool
	}{
		{SuiteConfig{}, 12, false},
		{SuiteConfig{Workloads: []ycsb.Kind{ycsb.WorkloadA}}, 3, false},
		{SuiteConfig{Scenario: ScenarioPartial}, 6, false},
		{SuiteConfig{Scenario: ScenarioZipf}, 15, false},
		{SuiteConfig{Scenario: ScenarioSize, Sweep: []string{"64", "256"}}, 6, false},
		{SuiteConfig{Scenario: ScenarioPartial, Sweep: []string{"x"}}, 0, true},
		{SuiteConfig{Scenario: ScenarioSize, Sweep: []string{"0"}}, 0, true},
		// Swept values in the ranges of the flags they stand for.
		{SuiteConfig{Scenario: ScenarioSize, Sweep: []string{"4072"}}, 3, false},
		{SuiteConfig{Scenario: ScenarioSize, Sweep: []string{"4073"}}, 0, true},
		{SuiteConfig{Scenario: ScenarioZipf, Sweep: []string{"NaN"}}, 0, true},
		{SuiteConfig{Scenario: ScenarioZipf, Sweep: []string{"5.01"}}, 0, true},
		{SuiteConfig{Scenario: ScenarioZipf, Sweep: []string{"0.01", "5"}}, 6, false},
		{SuiteConfig{Scenario: ScenarioPartial, Keys: 64, Sweep: []string{"64", "all"}}, 2, false},
		{SuiteConfig{Scenario: ScenarioPartial, Keys: 64, Sweep: []string{"65"}}, 0, true},
		{SuiteConfig{Sweep: []string{"5"}}, 0, true},
		{SuiteConfig{Scenario: ScenarioZipf, Zipf: 1.2}, 0, true},
		{SuiteConfig{Modes: []string{"sideways"}}, 0, true},
		{SuiteConfig{Scenario: "nope"}, 0, true},
		{SuiteConfig{Timing: "cx9"}, 0, true},
	}
	for _, tc := range tests {
		cells, err := tc.cfg.Cells()
		if (err != nil) != tc.wantErr || len(cells) != tc.n {
			t.Errorf("%+v: %d cells, err %v; want %d cells, error %v", tc.cfg, len(cells), err, tc.n, tc.wantErr)
		}
	}
	// Partial steering sweeps the tracked keys at zipf 1.5 with read and
	// write steering; the default scenario steers every key.
	cells, _ := SuiteConfig{Scenario: ScenarioPartial}.Cells()
	if cells[1].Tracked != 8 || cells[5].Tracked != -1 || cells[0].Zipf != 1.5 || cells[0].Mode != ModeWriteRead {
		t.Errorf("partial cells: %+v", cells)
	}
}

func TestTimingModel(t *testing.T) {
	full, err := TimingModel("cx5")
	if err != nil || full == nil {
		t.Fatal(err)
	}
	scaled, err := TimingModel("cx5/100")
	if err != nil || scaled == nil || scaled.AtomicsPerAddr*100 != full.AtomicsPerAddr || scaled.AtomicsAggregate*100 != full.AtomicsAggregate {
		t.Fatalf("cx5/100 = %+v (cx5 %+v), %v", scaled, full, err)
	}
	if m, err := TimingModel("none"); m != nil || err != nil {
		t.Errorf("none = %v, %v", m, err)
	}
	for _, bad := range []string{"cx5/0", "cx5/x", "cx4"} {
		if _, err := TimingModel(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestContentionNotes(t *testing.T) {
	cells := []report.Cell{
		{Mode: ModeOff, Workload: "a", CASSuccessRate: 0.942, RetriesPerOp: 1.28},
		{Mode: ModeWrite, Workload: "a", CASSuccessRate: 1},
		{Mode: ModeOff, Workload: "c", CASSuccessRate: math.NaN()},
	}
	notes := contentionNotes(cells)
	if len(notes) != 2 || !strings.Contains(notes[0], "a: with swordbox off 94.2% of CAS succeeded") || !strings.Contains(notes[0], "1.28 retries") {
		t.Errorf("notes = %q", notes)
	}
	if n := contentionNotes(cells[1:]); len(n) != 0 {
		t.Errorf("notes without an off cell with CAS: %q", n)
	}
}

func TestColdNotes(t *testing.T) {
	cell := func(misses float64) report.Cell {
		return report.Cell{Mechanism: map[string]float64{"cursor_misses_per_op": misses}}
	}
	for _, tc := range []struct {
		name  string
		cells []report.Cell
		want  string // "" for no note
	}{
		{"steady", []report.Cell{cell(0.03), cell(0.05)}, ""},
		{"no mechanism (cas-mux, Sherman)", []report.Cell{{}}, ""},
		{"at the threshold", []report.Cell{cell(ColdCursorMisses)}, ""},
		{"cold", []report.Cell{cell(0.03), cell(0.78), cell(0.52)}, "2 of 3 cells measured cold cursor caches: up to 0.78"},
	} {
		notes := ColdNotes(tc.cells)
		switch {
		case tc.want == "" && len(notes) != 0:
			t.Errorf("%s: notes %q, want none", tc.name, notes)
		case tc.want != "" && (len(notes) != 1 || !strings.Contains(notes[0], tc.want)):
			t.Errorf("%s: notes %q, want one containing %q", tc.name, notes, tc.want)
		}
	}
}

// sleepyKV answers every operation after a millisecond, or when its
// context ends.
type sleepyKV struct{}

func (sleepyKV) Get(ctx context.Context, _ uint64, buf []byte) ([]byte, error) {
	return buf, sleepyKV{}.Put(ctx, 0, nil)
}

func (sleepyKV) Put(ctx context.Context, _ uint64, _ []byte) error {
	select {
	case <-time.After(time.Millisecond):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// A measurement cut short by its context (SIGINT or SIGTERM in the bench)
// is an error, not a cell: it passed for a whole --duration before.
func TestDriveInterruptedIsNoMeasurement(t *testing.T) {
	w, err := ycsb.New(ycsb.Config{Workload: ycsb.WorkloadA, RecordCount: 16, ValueSize: 8, Clients: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	kvs := []KV{sleepyKV{}, sleepyKV{}}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	l, err := Drive(ctx, w, kvs, 8, time.Hour)
	if !errors.Is(err, context.DeadlineExceeded) || l == nil || l.Ops == 0 {
		t.Fatalf("Drive interrupted after 100ms of 1h: load %+v, err %v; want the operations so far and the context's error", l, err)
	}
	// A measurement that ran its whole duration stands.
	if l, err := Drive(context.Background(), w, kvs, 8, 50*time.Millisecond); err != nil || l.Ops == 0 {
		t.Fatalf("Drive for 50ms: load %+v, err %v", l, err)
	}
}
