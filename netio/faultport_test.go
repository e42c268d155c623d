package netio

import (
	"testing"
	"time"
)

func TestFaultPortDropsAndDelaysOnAnyPort(t *testing.T) {
	a, b, err := NewLink("a", "b", LinkConfig{Capacity: 8192})
	if err != nil {
		t.Fatal(err)
	}
	fp, err := NewFaultPort(a, Faults{Drop: 0.25, Delay: 20 * time.Millisecond, DelayProb: 0.5, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const n = 4000
	start := time.Now()
	for i := range n {
		if k, err := fp.Send([][]byte{numbered(uint64(i))}); k != 1 || err != nil {
			t.Fatalf("Send = %d, %v", k, err)
		}
	}
	got := drain(t, b, 60*time.Millisecond)
	s := fp.Stats()
	if !within(s.Dropped, n, 0.25) || !within(s.Delayed, n*3/4, 0.5) {
		t.Fatalf("stats %v", s)
	}
	if uint64(len(got)) != n-s.Dropped || s.FramesOut != n-s.Dropped {
		t.Fatalf("received %d, stats %v", len(got), s)
	}
	// Delayed frames were released by the goroutine, with no further
	// Send to push them: the last arrivals came after the delay.
	if time.Since(start) < 20*time.Millisecond {
		t.Fatal("drained before the delay elapsed")
	}
	if err := fp.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Send([][]byte{numbered(1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := fp.Recv(newBufs(1)); err != ErrClosed {
		t.Fatalf("Recv after Close = %v, want ErrClosed", err)
	}
}

func TestFaultPortRejectsBadFaults(t *testing.T) {
	a, _ := Pipe()
	if _, err := NewFaultPort(a, Faults{Duplicate: 2}); err == nil {
		t.Fatal("accepted duplicate probability 2")
	}
}
