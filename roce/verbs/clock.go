package verbs

import (
	"context"
	"time"
)

// Clock is the time a device's users run in: the wall clock on an RDMA host
// and on the software racks, simulated nanoseconds on a virtual-time rack.
// A memory system takes every instant and every wait from the clock of the
// device it runs on and never from package time, so the same code runs on
// every rack.
//
// # Why this shape
//
// A virtual-time rack runs its goroutines under a cooperative scheduler:
// one runs at a time, and virtual time advances only when every one of
// them waits on something the scheduler knows about. A goroutine blocked on
// a channel the scheduler cannot see (time.After, a timer's channel, a
// plain channel another client closes) would stop the simulation. So the
// places where a memory system may wait are exactly:
//
//   - CQ.Wait, for completions (bounded, when needed, by a context from
//     WithTimeout: no select that mixes a timer channel with other
//     channels);
//   - Sleep, for a pause of the clock's time;
//   - Event.Wait, for a wake-up by another goroutine on the same clock
//     (a host-local lock handing over to a waiter).
//
// The three are methods of the clock, not free functions over a duration,
// because only the device knows which scheduler its goroutines run under.
// Now is a duration since the clock's epoch rather than a time.Time: a
// virtual clock has no calendar, and every user computes intervals only.
//
// All devices of one rack share one epoch, so instants read from clocks of
// different devices are comparable (SWARM-KV's timestamps rely on it). The
// wall clock of roce/rnic counts from one epoch per process; processes of a
// namespace rack are not synchronized with one another.
type Clock interface {
	// Now is the time since the clock's epoch. It never decreases.
	Now() time.Duration
	// Sleep blocks until d of the clock's time has passed (d <= 0: not at
	// all) or ctx is done; it returns ctx.Err() in the latter case and nil
	// otherwise.
	Sleep(ctx context.Context, d time.Duration) error
	// WithTimeout is context.WithTimeout in the clock's time: the returned
	// context is done, with Err context.DeadlineExceeded, once d of the
	// clock's time has passed, or when ctx is done or cancel is called.
	// Its Deadline is meaningful only on the wall clock; use Done and Err.
	WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc)
	// NewEvent returns an unset event whose waiters block on this clock.
	NewEvent() Event
}

// Event is a one-shot wake-up between goroutines that run on one clock:
// Wait blocks until Set has been called (once set, an event stays set).
type Event interface {
	// Wait blocks until the event is set or ctx is done; it returns
	// ctx.Err() in the latter case and nil otherwise.
	Wait(ctx context.Context) error
	// Set sets the event and wakes its waiters. Setting a set event does
	// nothing.
	Set()
}

// Clocked is a device that provides a clock (every Device does). Memory
// systems whose configuration takes only part of a device take this part
// to tell time.
type Clocked interface {
	Clock() Clock
}
