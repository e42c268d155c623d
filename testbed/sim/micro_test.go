package sim

import (
	"fmt"
	"math"
	"testing"

	"github.com/swordbox/swordbox/roce/verbs"
)

// runGen measures a generator on a fresh rack of one client host: 50us of
// warm-up, then 200us of virtual time.
func runGen(t testing.TB, cfg GenConfig) float64 {
	t.Helper()
	r := newTestRack(t, 1, 1)
	g, err := NewGen(r, r.Hosts[0], 0, cfg)
	if err != nil {
		t.Fatal(err)
	}
	mops := g.Measure(50_000, 200_000)
	if g.Err != nil {
		t.Fatal(g.Err)
	}
	return mops
}

// TestFigures3and4 reproduces the microbenchmarks of SwordBox section 3.2
// in virtual time and checks them within 20 % of the paper's values.
// Figure 3: twenty QPs on data-independent addresses, CAS plateaus at
// 51.8 Mops and WRITE at 92.6 (the authors' figure data). Figure 4:
// serialized CAS on one address, "approximately 3" Mops in host memory
// and 8.97 in device memory; serialized WRITEs on one QP 6.2x the host
// CAS and 2.5x the device-memory CAS.
func TestFigures3and4(t *testing.T) {
	const window = 16 // outstanding per QP (max_rd_atomic of a ConnectX-5)
	for _, tc := range []struct {
		name  string
		cfg   GenConfig
		paper float64
	}{
		{"fig3 CAS 20 QPs distinct", GenConfig{Op: verbs.OpCompareSwap, QPs: 20, Window: window}, 51.8},
		{"fig3 WRITE 20 QPs distinct", GenConfig{Op: verbs.OpWrite, QPs: 20, Window: window}, 92.6},
		{"fig4 CAS one word host", GenConfig{Op: verbs.OpCompareSwap, QPs: 20, Window: window, SameAddr: true}, 3.0},
		{"fig4 CAS one word device", GenConfig{Op: verbs.OpCompareSwap, QPs: 20, Window: window, SameAddr: true, DeviceMemory: true}, 8.97},
		{"fig4 WRITE one QP host", GenConfig{Op: verbs.OpWrite, QPs: 1, Window: 64, SameAddr: true}, 6.2 * 3.0},
		{"fig4 WRITE one QP device", GenConfig{Op: verbs.OpWrite, QPs: 1, Window: 64, SameAddr: true, DeviceMemory: true}, 2.5 * 8.97},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runGen(t, tc.cfg)
			off := (got - tc.paper) / tc.paper
			t.Logf("%-28s virtual %6.2f Mops, paper %6.2f (%+.0f %%)", tc.name, got, tc.paper, 100*off)
			if math.Abs(off) > 0.2 {
				t.Errorf("%.2f Mops, paper %.2f: off by %+.0f %%", got, tc.paper, 100*off)
			}
		})
	}
}

// TestFigure3Sweep: throughput rises with QPs until the device's caps
// bind: a CAS QP is held at 2.7 Mops (so 20 QPs are needed for the
// plateau), WRITEs at the window's round trip until the request unit.
func TestFigure3Sweep(t *testing.T) {
	var prevC, prevW float64
	for _, q := range []int{1, 2, 4, 8, 16, 20, 32} {
		c := runGen(t, GenConfig{Op: verbs.OpCompareSwap, QPs: q, Window: 16})
		w := runGen(t, GenConfig{Op: verbs.OpWrite, QPs: q, Window: 16})
		t.Logf("QPs %2d: CAS %5.1f Mops, WRITE %5.1f Mops", q, c, w)
		if c < prevC*0.999 || w < prevW*0.999 {
			t.Errorf("throughput fell with more QPs: CAS %.1f after %.1f, WRITE %.1f after %.1f", c, prevC, w, prevW)
		}
		if q == 1 && math.Abs(c-2.7) > 0.1 {
			t.Errorf("one QP of CAS: %.2f Mops, want the per-QP cap 2.7", c)
		}
		prevC, prevW = c, w
	}
}

func ExampleNewGen() {
	// A rack of one memory node and one client, 20 QPs of CAS on
	// data-independent addresses (SwordBox Figure 3).
	r, err := NewRack(contextBackground(), Config{Seed: 1, Hosts: 1, MemorySize: 1 << 20})
	if err != nil {
		panic(err)
	}
	defer r.Close()
	g, err := NewGen(r, r.Hosts[0], 0, GenConfig{Op: verbs.OpCompareSwap, QPs: 20, Window: 16})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%.1f Mops\n", g.Measure(50_000, 200_000))
	// Output: 54.0 Mops
}
