package middlebox_test

import (
	"testing"

	"github.com/swordbox/swordbox/middlebox"
	"github.com/swordbox/swordbox/middlebox/mbbench"
)

// The recorded benchmark mix, both ICRC modes: every frame handled alike,
// and (the point of the fast path) most of them by the fast path.
func TestFastPathMatchesGeneralOnMix(t *testing.T) {
	for _, skip := range []bool{false, true} {
		mc := mbbench.DefaultMix
		mc.SkipICRCCheck = skip
		m, err := mbbench.NewMix(mc)
		if err != nil {
			t.Fatal(err)
		}
		w := middlebox.NewTwin(t, m.EngineConfig())
		tr := mbbench.NewTrace(4096)
		for batch := 0; batch < 3; batch++ {
			m.Fill(tr, 4096)
			for i, f := range tr.Frames {
				w.Step(int64(i), tr.Sides[i], f)
			}
		}
		if n, fast := w.Taken(); fast < n*3/4 {
			t.Fatalf("skip-icrc-check %v: the fast path took %d of %d frames", skip, fast, n)
		}
		if c := w.FastCounters(); c.CASToWrite == 0 || c.TotalDrops() != 0 {
			t.Fatalf("skip-icrc-check %v: %s", skip, c.String())
		}
	}
}
