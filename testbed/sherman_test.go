package testbed

import (
	"strings"
	"testing"
	"time"
)

func TestShermanCells(t *testing.T) {
	ok := ShermanSuiteConfig{KeySpace: 1024, Duration: time.Second, ReadRatios: []int{50}, Dists: []string{DistZipf}, Threads: []int{4, 8}, Timing: "cx5/100"}
	specs, err := ok.Cells()
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2*len(ShermanModes) || specs[0].Zipf != 0.99 || specs[0].WarmRatio != 0.8 || specs[0].Timing == nil {
		t.Fatalf("%d cells, first %+v", len(specs), specs[0])
	}
	if w := specs[0].Workload(); w != "read50-zipf0.99" {
		t.Errorf("workload %q", w)
	}
	for _, tc := range []struct {
		mut  func(*ShermanSuiteConfig)
		want string
	}{
		{func(c *ShermanSuiteConfig) { c.ReadRatios = []int{-1} }, "read ratio"},
		{func(c *ShermanSuiteConfig) { c.Dists = []string{"normal"} }, "distribution"},
		{func(c *ShermanSuiteConfig) { c.Threads = []int{0} }, "threads"},
		{func(c *ShermanSuiteConfig) { c.KeySpace = 1 }, "key space"},
		{func(c *ShermanSuiteConfig) { c.Modes = []string{"optimistic"} }, "mode"},
		{func(c *ShermanSuiteConfig) { c.Timing = "cx5/0" }, "timing"},
		{func(c *ShermanSuiteConfig) { c.Duration = 0 }, "duration"},
	} {
		c := ok
		tc.mut(&c)
		if _, err := c.Cells(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err %v, want one about %q", err, tc.want)
		}
	}
}

// ShermanKey spreads key numbers over the key space and is a pure function.
func TestShermanKey(t *testing.T) {
	seen := map[uint64]bool{}
	for n := uint64(0); n < 1000; n++ {
		k := ShermanKey(n, 1<<20)
		if k >= 1<<20 || k != ShermanKey(n, 1<<20) {
			t.Fatalf("key %d of number %d", k, n)
		}
		seen[k] = true
	}
	if len(seen) < 990 {
		t.Errorf("1000 key numbers gave %d distinct keys", len(seen))
	}
}
