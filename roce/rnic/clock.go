package rnic

import (
	"context"
	"sync"
	"time"

	"github.com/swordbox/swordbox/roce/verbs"
)

// wallEpoch is the epoch of every device's clock in this process, so that
// instants read from different devices are comparable.
var wallEpoch = time.Now()

// WallClock is the wall clock as a verbs.Clock: monotonic time since a
// process-wide epoch; waits are Go timers. Every Device's Clock is this.
type WallClock struct{}

var _ verbs.Clock = WallClock{}

// Clock implements verbs.Device: a software RNIC runs in wall-clock time.
func (d *Device) Clock() verbs.Clock { return WallClock{} }

// Now implements verbs.Clock.
func (WallClock) Now() time.Duration { return time.Since(wallEpoch) }

// Sleep implements verbs.Clock.
func (WallClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// WithTimeout implements verbs.Clock.
func (WallClock) WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}

// NewEvent implements verbs.Clock.
func (WallClock) NewEvent() verbs.Event { return &wallEvent{ch: make(chan struct{})} }

// wallEvent is a channel closed once.
type wallEvent struct {
	once sync.Once
	ch   chan struct{}
}

func (e *wallEvent) Set() { e.once.Do(func() { close(e.ch) }) }

func (e *wallEvent) Wait(ctx context.Context) error {
	select {
	case <-e.ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
