package sim

import (
	"context"
	"testing"
)

func contextBackground() context.Context { return context.Background() }

// twice runs run with seed twice and fails unless both give the same
// count and event count, and at least min of the count.
func twice(t *testing.T, what string, min int, seed uint64, run func(*testing.T, uint64) (int, uint64)) {
	t.Helper()
	n1, e1 := run(t, seed)
	n2, e2 := run(t, seed)
	if n1 < min || n1 != n2 || e1 != e2 {
		t.Fatalf("runs: %d %s / %d events, then %d / %d", n1, what, e1, n2, e2)
	}
	t.Logf("%d %s, %d events", n1, what, e1)
}
