package testbed

import (
	"context"
	"testing"
	"time"

	"github.com/swordbox/swordbox/testbed/ycsb"
)

func TestRunCellSmoke(t *testing.T) {
	for _, mode := range []string{ModeOff, ModeWriteRead} {
		c, err := RunCell(context.Background(), CellSpec{Scenario: "test", Mode: mode, Workload: ycsb.WorkloadA, Keys: 64, ValueSize: 128,
			Zipf: 0.99, Tracked: -1, Threads: 8, ClientHosts: 2, Warmup: 200 * time.Millisecond, Duration: time.Second, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %.0f ops/s p99 %.1fus bytes/op %.0f cas ok %.3f retries/op %.3f errors %d steering %v", mode, c.OpsPerSec, c.P99us, c.BytesPerOp, c.CASSuccessRate, c.RetriesPerOp, c.Errors, c.Steering)
		if c.Ops == 0 || c.Errors != 0 {
			t.Fatalf("cell: %+v", c)
		}
	}
}
