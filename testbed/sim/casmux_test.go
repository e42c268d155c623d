package sim

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/swordbox/swordbox/testbed"
)

// TestCASMuxVirtual: the lock benchmark of Figure 10 through the
// middlebox engine in virtual time: mutual exclusion holds (RunCASMux
// checks every lock and unlock), CAS-to-WRITE rewrites CMP_SWAPs, and
// with 16 QPs each mode runs at the cap that binds it: plain CAS at the
// memory NIC's 3 Mops on one word (Figure 4), CAS-to-WRITE at the one
// middlebox core's 2.8 Mops (Figure 10).
func TestCASMuxVirtual(t *testing.T) {
	res := map[string]float64{}
	for _, mode := range []string{testbed.ModeCAS, testbed.ModeCASToWrite} {
		c, err := RunCASMux(context.Background(), testbed.CASMuxSpec{Mode: mode, QPs: 16, Warmup: 50 * time.Microsecond, Duration: 200 * time.Microsecond}, 1)
		if err != nil {
			t.Fatal(err)
		}
		if c.Ops < 100 {
			t.Fatalf("%s: %d ops", mode, c.Ops)
		}
		if mode == testbed.ModeCASToWrite && c.Steering["cas_to_write"] == 0 {
			t.Fatalf("no CMP_SWAP rewritten: %v", c.Steering)
		}
		res[mode] = c.OpsPerSec / 1e6
		t.Logf("%s: %.2f Mops, lock success %.3f, p99 %.1f us", mode, c.OpsPerSec/1e6, c.CASSuccessRate, c.P99us)
	}
	for mode, want := range map[string]float64{testbed.ModeCAS: 3.0, testbed.ModeCASToWrite: 2.8} {
		if math.Abs(res[mode]/want-1) > 0.02 {
			t.Errorf("%s: %.2f Mops, want %.1f", mode, res[mode], want)
		}
	}
}
