package rnic

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/roce/verbs"
)

// TestWallClock checks the wall clock against verbs.Clock's contract:
// what each wait returns, and that time does not run backwards across
// devices. No assertion depends on how long anything took beyond the
// lower bound a timer guarantees.
func TestWallClock(t *testing.T) {
	a, b, err := netio.NewLink("clk-a", "clk-b", netio.LinkConfig{})
	if err != nil {
		t.Fatal(err)
	}
	devA, err := New(a, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer devA.Close()
	devB, err := New(b, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer devB.Close()
	var clk verbs.Clock = devA.Clock()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	bg := context.Background()

	t.Run("now", func(t *testing.T) {
		t0 := clk.Now()
		if t1 := devB.Clock().Now(); t1 < t0 {
			t.Fatalf("device B's clock read %v after device A's read %v: not one epoch", t1, t0)
		}
	})
	t.Run("sleep", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			ctx  context.Context
			d    time.Duration
			want error
		}{
			{"zero", bg, 0, nil},
			{"negative", bg, -time.Second, nil},
			{"elapses", bg, time.Millisecond, nil},
			{"canceled", canceled, time.Hour, context.Canceled},
			{"canceled zero", canceled, 0, context.Canceled},
		} {
			t0 := clk.Now()
			if err := clk.Sleep(tc.ctx, tc.d); !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Errorf("%s: Sleep(%v) = %v, want %v", tc.name, tc.d, err, tc.want)
			}
			if tc.want == nil && clk.Now()-t0 < tc.d {
				t.Errorf("%s: Sleep(%v) returned after %v", tc.name, tc.d, clk.Now()-t0)
			}
		}
	})
	t.Run("timeout", func(t *testing.T) {
		ctx, cancel := clk.WithTimeout(bg, time.Millisecond)
		defer cancel()
		<-ctx.Done()
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Fatalf("expired context: Err %v, want DeadlineExceeded", ctx.Err())
		}
		ctx, cancel = clk.WithTimeout(bg, time.Hour)
		cancel()
		if !errors.Is(ctx.Err(), context.Canceled) {
			t.Fatalf("canceled context: Err %v, want Canceled", ctx.Err())
		}
	})
	t.Run("event", func(t *testing.T) {
		ev := clk.NewEvent()
		if err := ev.Wait(canceled); !errors.Is(err, context.Canceled) {
			t.Fatalf("Wait on an unset event with a canceled context = %v", err)
		}
		done := make(chan error, 1)
		go func() { done <- ev.Wait(bg) }()
		ev.Set()
		ev.Set() // setting twice is allowed
		if err := <-done; err != nil {
			t.Fatalf("Wait woken by Set = %v", err)
		}
		if err := ev.Wait(bg); err != nil {
			t.Fatalf("Wait on a set event = %v", err)
		}
	})
}
