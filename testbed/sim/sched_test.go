package sim

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/swordbox/swordbox/roce/verbs"
)

// TestSchedTimeline: a goroutine under the scheduler posts a WRITE and
// waits on its CQ; it wakes at the instant the timeline gives (2122 ns,
// TestTimeline), sleeps 1 us of virtual time, and a timeout context on a
// CQ nobody completes ends at its virtual deadline.
func TestSchedTimeline(t *testing.T) {
	r := newTestRack(t, 1, 1)
	s := NewSched(r.Sim)
	dev := s.Device(r.Hosts[0])
	cq, _ := dev.CreateCQ(16)
	q, _, err := r.Connect(r.Hosts[0], cq.(*CQ).Q, r.Memory[0], nil, 16)
	if err != nil {
		t.Fatal(err)
	}
	local, _ := dev.RegisterMR(make([]byte, 64), verbs.AccessAll)
	rm := r.MemoryMR[0].Remote()
	var woke, slept, timedOut time.Duration
	var waitErr error
	clock := dev.Clock()
	s.Go("writer", func(ctx context.Context) error {
		wr := verbs.SendWR{ID: 1, Op: verbs.OpWrite, SG: []verbs.SGE{{Addr: local.Addr(), Length: 8, LKey: local.LKey()}},
			RemoteAddr: rm.Addr, RKey: rm.RKey, Flags: verbs.Signaled}
		if err := q.PostSend([]verbs.SendWR{wr}); err != nil {
			return err
		}
		wcs := make([]verbs.WC, 4)
		if _, err := cq.Wait(ctx, wcs); err != nil {
			return err
		}
		woke = clock.Now()
		if err := clock.Sleep(ctx, time.Microsecond); err != nil {
			return err
		}
		slept = clock.Now()
		tctx, cancel := clock.WithTimeout(ctx, 5*time.Microsecond)
		defer cancel()
		_, waitErr = cq.Wait(tctx, wcs)
		timedOut = clock.Now()
		return nil
	})
	s.Run(100_000)
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if p := s.Procs()[0]; p.Err != nil {
		t.Fatal(p.Err)
	}
	if woke != 2122 || slept != 3122 || timedOut != 8122 || !errors.Is(waitErr, context.DeadlineExceeded) {
		t.Fatalf("woke %v, slept until %v, timed out at %v with %v; want 2.122us, 3.122us, 8.122us, deadline exceeded", woke, slept, timedOut, waitErr)
	}
}

// TestSchedEvent: one goroutine waits on an event another sets after a
// sleep; goroutines woken at one instant run in the order they were woken.
func TestSchedEvent(t *testing.T) {
	s := NewSched(New(1))
	clock := s.Clock()
	ev := clock.NewEvent()
	var order []string
	for _, name := range []string{"a", "b"} {
		s.Go(name, func(ctx context.Context) error {
			if err := ev.Wait(ctx); err != nil {
				return err
			}
			order = append(order, name)
			return nil
		})
	}
	s.Go("setter", func(ctx context.Context) error {
		if err := clock.Sleep(ctx, 500); err != nil {
			return err
		}
		order = append(order, "set")
		ev.Set()
		return nil
	})
	s.Run(1000)
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if len(order) != 3 || order[0] != "set" || order[1] != "a" || order[2] != "b" {
		t.Fatalf("order %v, want [set a b]", order)
	}
}
