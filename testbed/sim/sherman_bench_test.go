package sim

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/swordbox/swordbox/testbed"
	"github.com/swordbox/swordbox/testbed/report"
)

// shermanSweep is a short sweep of the Sherman benchmark in virtual time:
// 50 % writes, zipf 0.99, 2 and 8 threads, every mode, the ConnectX-5
// caps.
func shermanSweep(t *testing.T, seed uint64) *report.Run {
	t.Helper()
	run, err := RunShermanSuite(context.Background(), testbed.ShermanSuiteConfig{ReadRatios: []int{50}, Dists: []string{testbed.DistZipf},
		Threads: []int{2, 8}, KeySpace: 2048, ClientHosts: 2, Warmup: 100 * time.Microsecond, Duration: 300 * time.Microsecond,
		Seed: seed, Timing: "cx5"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// TestShermanSweepVirtual: every cell ran operations, searches and
// inserts, its tree was checked (RunShermanCell fails on a broken
// invariant or a held lock), the converted modes converted lock CAS, and
// one seed gives the same cells twice.
func TestShermanSweepVirtual(t *testing.T) {
	a := shermanSweep(t, 7)
	if want := 2 * len(testbed.ShermanModes); len(a.Cells) != want {
		t.Fatalf("%d cells, want %d", len(a.Cells), want)
	}
	for _, c := range a.Cells {
		if c.Ops == 0 || c.Steering["reads"] == 0 || c.Steering["writes"] == 0 {
			t.Errorf("%s %s: %d operations (%d searches, %d inserts)", c.Param, c.Mode, c.Ops, c.Steering["reads"], c.Steering["writes"])
		}
		conv := c.Mode == testbed.ShermanCASToWrite || c.Mode == testbed.ShermanCASToWriteNode
		if conv != (c.Steering["mbox_cas_to_write"] > 0) {
			t.Errorf("%s %s: middlebox converted %d lock CAS", c.Param, c.Mode, c.Steering["mbox_cas_to_write"])
		}
		if c.Note == "" {
			t.Errorf("%s %s: no tree check noted", c.Param, c.Mode)
		}
	}
	b := shermanSweep(t, 7)
	if fa, fb := fmt.Sprint(a.Cells), fmt.Sprint(b.Cells); fa != fb {
		t.Fatalf("same seed, different cells:\n%s\n%s", fa, fb)
	}
}
