package roce

import (
	"testing"
	"time"
)

func TestPSNArithmetic(t *testing.T) {
	for _, tc := range []struct {
		p, q   PSN
		sub    int32
		before bool
	}{
		{5, 5, 0, false},
		{5, 6, -1, true},
		{6, 5, 1, false},
		{MaxPSN, 0, -1, true}, // 0 follows 0xffffff
		{0, MaxPSN, 1, false},
		{0, 1 << 23, -1 << 23, true}, // exactly half the space ahead: after
		{1 << 23, 0, -1 << 23, true}, // and the other way round too (the ambiguous point)
		{0, 1<<23 + 1, 1<<23 - 1, false},
		{10, MaxPSN - 9, 20, false},
	} {
		if got := tc.p.Sub(tc.q); got != tc.sub {
			t.Errorf("%#x.Sub(%#x) = %d, want %d", tc.p, tc.q, got, tc.sub)
		}
		if got := tc.p.Before(tc.q); got != tc.before {
			t.Errorf("%#x.Before(%#x) = %v, want %v", tc.p, tc.q, got, tc.before)
		}
		if got := tc.p.NotAfter(tc.q); got != (tc.before || tc.p == tc.q) {
			t.Errorf("%#x.NotAfter(%#x) = %v", tc.p, tc.q, got)
		}
	}
	for _, tc := range []struct {
		p    PSN
		n    int
		want PSN
	}{
		{0, 1, 1}, {MaxPSN, 1, 0}, {0, -1, MaxPSN}, {MaxPSN - 1, 5, 3}, {7, 1 << 24, 7}, {3, -5, MaxPSN - 1},
	} {
		if got := tc.p.Add(tc.n); got != tc.want {
			t.Errorf("%#x.Add(%d) = %#x, want %#x", tc.p, tc.n, got, tc.want)
		}
	}
}

// TestRNRTimer checks the encoding against IBA Table 45's entries.
func TestRNRTimer(t *testing.T) {
	for _, tc := range []struct {
		code uint8
		d    time.Duration
	}{
		{0, 655360 * time.Microsecond}, {1, 10 * time.Microsecond}, {2, 20 * time.Microsecond},
		{14, 1280 * time.Microsecond}, {18, 5120 * time.Microsecond}, {31, 491520 * time.Microsecond},
	} {
		if got := RNRTimerDelay(tc.code); got != tc.d {
			t.Errorf("RNRTimerDelay(%d) = %v, want %v", tc.code, got, tc.d)
		}
		if tc.code != 0 {
			if got := RNRTimerCode(tc.d); got != tc.code {
				t.Errorf("RNRTimerCode(%v) = %d, want %d", tc.d, got, tc.code)
			}
		}
	}
	if got := RNRTimerCode(11 * time.Microsecond); got != 2 {
		t.Errorf("RNRTimerCode(11µs) = %d, want 2 (the shortest timer of at least 11µs)", got)
	}
	if got := RNRTimerCode(time.Second); got != 0 {
		t.Errorf("RNRTimerCode(1s) = %d, want 0 (the longest)", got)
	}
	if got := RNRTimerCode(0); got != 1 {
		t.Errorf("RNRTimerCode(0) = %d, want 1", got)
	}
}
