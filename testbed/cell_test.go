package testbed

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/swordbox/swordbox/clover"
	"github.com/swordbox/swordbox/testbed/report"
	"github.com/swordbox/swordbox/testbed/ycsb"
)

// fakeCellRack records the runner's calls and answers with fixed figures.
type fakeCellRack struct {
	calls      []string
	setup      CellSetup
	counters   []RackCounters
	measured   *Measured
	fail       string // the call that fails
	closeError error
}

func (f *fakeCellRack) call(name string) error {
	f.calls = append(f.calls, name)
	if f.fail == name {
		return errors.New(name + " failed")
	}
	return nil
}

func (f *fakeCellRack) Load(context.Context) error   { return f.call("load") }
func (f *fakeCellRack) WarmUp(context.Context) error { return f.call("warmup") }
func (f *fakeCellRack) Measure(context.Context) (*Measured, error) {
	return f.measured, f.call("measure")
}
func (f *fakeCellRack) Counters(context.Context) (RackCounters, error) {
	c := f.counters[0]
	f.counters = f.counters[1:]
	return c, f.call("counters")
}
func (f *fakeCellRack) Close() error { f.call("close"); return f.closeError }

func hist(vals ...int64) *hdrhistogram.Histogram {
	h := newHist()
	for _, v := range vals {
		h.RecordValue(v)
	}
	return h
}

func fakeMeasured() *Measured {
	return &Measured{
		Load: &Load{Ops: 400, Reads: 200, Writes: 200, Errors: 2, Elapsed: 2 * time.Second, FirstErr: errors.New("boom"),
			All: hist(1000, 2000, 4000), Read: hist(1000, 4000), Write: hist(2000)},
		Metrics: clover.Metrics{Verbs: 1200, CAS: 100, CASFailures: 10, Retries: 4, ChaseHops: 3, Recoveries: 1, CASSteered: 7},
	}
}

// TestRunCellOn: the runner calls the rack in order (warm-up only when the
// spec has one), closes it on every path, and derives the figures from
// the measured phase and the counters at its ends.
func TestRunCellOn(t *testing.T) {
	spec := CellSpec{Scenario: "t", Mode: ModeWriteRead, Workload: ycsb.WorkloadA, Keys: 64, ValueSize: 64, Zipf: 0.99,
		Tracked: 8, Threads: 4, ClientHosts: 2, Warmup: time.Second, Duration: time.Second, Seed: 1}
	counters := func() []RackCounters {
		return []RackCounters{{WireBytes: 1000, Switch: map[int64]uint64{3: 10}}, {WireBytes: 41000, Switch: map[int64]uint64{3: 25, 5: 7}}}
	}
	for _, tc := range []struct {
		name     string
		mode     string
		warmup   time.Duration
		fail     string
		closeErr error
		want     []string
		wantErr  string
	}{
		{"all", ModeWriteRead, time.Second, "", nil, []string{"load", "warmup", "counters", "measure", "counters", "close"}, ""},
		{"no warm-up", ModeOff, 0, "", nil, []string{"load", "counters", "measure", "counters", "close"}, ""},
		{"load fails", ModeOff, time.Second, "load", nil, []string{"load", "close"}, "load failed"},
		{"measure fails", ModeOff, time.Second, "measure", nil, []string{"load", "warmup", "counters", "measure", "close"}, "measure failed"},
		{"close fails", ModeOff, 0, "", errors.New("stuck"), []string{"load", "counters", "measure", "counters", "close"}, "stuck"},
		{"bad mode", "sideways", 0, "", nil, nil, "sideways"},
	} {
		f := &fakeCellRack{counters: counters(), measured: fakeMeasured(), fail: tc.fail, closeError: tc.closeErr}
		s := spec
		s.Mode, s.Warmup = tc.mode, tc.warmup
		_, err := RunCellOn(context.Background(), s, func(_ context.Context, _ CellSpec, setup CellSetup) (CellRack, error) {
			f.setup = setup
			return f, nil
		})
		if !reflect.DeepEqual(f.calls, tc.want) {
			t.Errorf("%s: calls %v, want %v", tc.name, f.calls, tc.want)
		}
		if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.wantErr)
		}
		switch tc.mode {
		case ModeOff:
			if f.setup.Steering != SteerOff || f.setup.Tracked != nil || f.setup.Workload == nil {
				t.Errorf("%s: setup %+v", tc.name, f.setup)
			}
		case ModeWriteRead:
			if f.setup.Steering != SteerReadWrite || len(f.setup.Tracked) != 8 {
				t.Errorf("%s: steering %q, %d keys tracked, want 8", tc.name, f.setup.Steering, len(f.setup.Tracked))
			}
		}
	}
}

func TestFillCell(t *testing.T) {
	var cell report.Cell
	fillCell(&cell, CellSpec{Threads: 4}, SteerReadWrite, fakeMeasured(),
		RackCounters{WireBytes: 1000, Switch: map[int64]uint64{3: 10}}, RackCounters{WireBytes: 41000, Switch: map[int64]uint64{3: 25, 5: 7}})
	for _, tc := range []struct {
		name      string
		got, want float64
	}{
		{"ops/s", cell.OpsPerSec, 400.0 / 2},
		{"bytes/op", cell.BytesPerOp, 100},
		{"verbs/op", cell.VerbsPerOp, 3},
		{"CAS success", cell.CASSuccessRate, 0.9},
		{"retries/op", cell.RetriesPerOp, 8.0 / 400},
		{"p99 read", cell.ReadP99us, 4},
		{"CAS steered ok", cell.Mechanism["cas_steered_ok"], 7},
	} {
		if math.Abs(tc.got-tc.want) > 0.01*math.Abs(tc.want) {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if cell.Ops != 400 || cell.Errors != 2 || cell.Clients != 4 || !strings.Contains(cell.Note, "boom") {
		t.Errorf("cell %+v", cell)
	}
	if cell.Steering[SwitchStats[3]] != 15 || cell.Steering[SwitchStats[5]] != 7 {
		t.Errorf("steering %v", cell.Steering)
	}
	// Without counters from the switch, no steering figures.
	var off report.Cell
	fillCell(&off, CellSpec{Threads: 4}, SteerOff, fakeMeasured(), RackCounters{}, RackCounters{WireBytes: 400})
	if off.Steering != nil || off.BytesPerOp != 1 {
		t.Errorf("cell without switch counters: steering %v, bytes/op %v", off.Steering, off.BytesPerOp)
	}
}
