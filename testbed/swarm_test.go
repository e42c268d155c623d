package testbed

import (
	"context"
	"testing"
	"time"

	"github.com/swordbox/swordbox/testbed/ycsb"
)

// TestSwarmCell runs every mode side by side and a kill cell: every
// cell completes operations without errors, counts round trips, and the
// kill cell keeps completing operations after the crash.
func TestSwarmCell(t *testing.T) {
	ctx := context.Background()
	cells, err := RunSwarmAB(ctx, SwarmCellSpec{Workload: ycsb.WorkloadA, Keys: 256, ValueSize: 64, Zipf: 0.99,
		Threads: 4, ClientHosts: 2, Duration: 400 * time.Millisecond, Seed: 1}, SwarmModes, 4)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cells {
		mode := SwarmModes[i]
		t.Logf("%s: %.0f ops/s, get %.2f RTT (%.0f%% one), put %.2f RTT (%.0f%% one), %.1f frames/op, middlebox %v",
			mode, c.OpsPerSec, c.GetRTT, 100*c.GetOneRTT, c.PutRTT, 100*c.PutOneRTT, c.MemFramesPerOp, c.Steering)
		if c.Mode != mode || c.Ops == 0 || c.Errors != 0 || !(c.GetRTT >= 1) || !(c.PutRTT >= 1) {
			t.Errorf("%s: %d ops, %d errors, RTT %v/%v", mode, c.Ops, c.Errors, c.GetRTT, c.PutRTT)
		}
		if mode == SwarmMuxCAS && c.Steering["cas_to_write"] == 0 {
			t.Errorf("no CAS became a WRITE")
		}
	}
	c, err := RunSwarmCell(ctx, SwarmCellSpec{Mode: SwarmDirect, Workload: ycsb.WorkloadA, Keys: 256, ValueSize: 64, Zipf: 0.99,
		Threads: 4, ClientHosts: 2, Duration: 600 * time.Millisecond, Seed: 1, KillAt: 200 * time.Millisecond, KillNode: 0, Sample: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kill at %.2fs: series %v", c.KilledAtS, c.Series)
	if c.Errors != 0 || c.KilledAtS == 0 {
		t.Fatalf("kill cell: %d errors, killed at %v: %s", c.Errors, c.KilledAtS, c.Note)
	}
	// Writers pause when their buffers wait out the 200ms recycling grace
	// period (a 50ms sample can then be empty, crash or not): what must hold
	// is that operations go on after the crash, in every 200ms window.
	kill := int(c.KilledAtS / 0.05)
	for end := len(c.Series); end-4 >= kill; end -= 4 {
		var sum float64
		for _, v := range c.Series[end-4 : end] {
			sum += float64(v)
		}
		if sum == 0 {
			t.Errorf("no operation completed in the 200ms window ending at sample %d after the crash: %v", end, c.Series)
		}
	}
}
