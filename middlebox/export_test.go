package middlebox

import "testing"

// The fast-path twin (fast_test.go) for the external tests of this
// directory (package middlebox_test), which replay package mbbench's mix
// and so cannot be in this package: mbbench imports it.

// Twin runs every frame through an engine with the fast path and one
// without, and fails at the first frame whose outputs or counters differ.
type Twin = twin

// NewTwin returns a twin of two engines of configuration cfg.
func NewTwin(t testing.TB, cfg Config) *Twin { return newTwin(t, cfg) }

// Step processes frame on side in, in both engines.
func (w *twin) Step(now int64, in Side, frame []byte) { w.step(now, in, frame) }

// Taken returns the frames stepped and how many of them the fast path
// handled.
func (w *twin) Taken() (frames, fast int) { return w.n, w.fastTaken }

// FastCounters returns the counters of the engine with the fast path.
func (w *twin) FastCounters() Counters { return w.fast.Counters() }
