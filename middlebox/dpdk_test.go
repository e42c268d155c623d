//go:build dpdk

package middlebox

import (
	"os"
	"strings"
	"testing"
	"time"
)

// The zero-copy DPDK loop on net_ring vdevs: every frame of the mix is
// processed, nothing is dropped, and the engine multiplexed and converted.
func TestBenchDPDKRing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("DPDK without hugepages needs root here")
	}
	res, err := BenchDPDK(DPDKBenchConfig{Mix: benchMix, Cores: 1, Duration: benchDPDKDur(), Ring: true})
	if err != nil {
		t.Fatal(err)
	}
	c := res.PerCore[0]
	if c.FramesIn == 0 || c.Drops != 0 || !strings.Contains(c.Counters, "cas-to-write=") || !strings.Contains(c.Counters, "acks-out=") {
		t.Fatalf("core 0: %+v", c)
	}
	t.Logf("net_ring: %.2f Mpps wall, %.2f Mpps per core of CPU time, %d frames", c.Mpps, c.MppsCPU, c.FramesIn)
}

func benchDPDKDur() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("MBOX_DPDK_DUR")); err == nil {
		return d
	}
	return 300 * time.Millisecond
}
