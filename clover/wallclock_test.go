package clover_test

import (
	"testing"

	"github.com/swordbox/swordbox/roce/verbs/clockcheck"
)

// TestNoWallClock: the package takes time only from its device's clock
// (verbs.Clock), so that it runs unchanged in a virtual-time rack.
func TestNoWallClock(t *testing.T) { clockcheck.Test(t, ".") }
