package netio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"sync"
	"testing"
	"time"
)

// numbered returns a 64-byte frame carrying seq in bytes 14..21.
func numbered(seq uint64) []byte {
	f := make([]byte, 64)
	binary.BigEndian.PutUint64(f[14:], seq)
	return f
}

func seqOf(f []byte) uint64 { return binary.BigEndian.Uint64(f[14:]) }

func newBufs(n int) [][]byte {
	b := make([][]byte, n)
	for i := range b {
		b[i] = make([]byte, MaxFrameSize)
	}
	return b
}

func TestLinkMovesFramesBothWaysInOrder(t *testing.T) {
	a, b := Pipe()
	defer a.Close()
	defer b.Close()
	tests := []struct {
		name     string
		from, to *LinkPort
	}{{"a to b", a, b}, {"b to a", b, a}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var frames [][]byte
			for i := range 10 {
				frames = append(frames, numbered(uint64(i)))
			}
			frames[3] = append(frames[3], bytes.Repeat([]byte{0xab}, 1000)...)
			n, err := tc.from.Send(frames)
			if err != nil || n != len(frames) {
				t.Fatalf("Send = %d, %v", n, err)
			}
			bufs := newBufs(4)
			var got [][]byte
			for len(got) < len(frames) {
				n, err := tc.to.Recv(bufs)
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range bufs[:n] {
					got = append(got, bytes.Clone(f))
				}
			}
			for i := range frames {
				if !bytes.Equal(got[i], frames[i]) {
					t.Fatalf("frame %d: got % x, want % x", i, got[i][:22], frames[i][:22])
				}
			}
			if s := tc.from.Stats(); s.FramesIn != 10 || s.FramesOut != 10 || s.Overflow != 0 {
				t.Fatalf("stats %v", s)
			}
		})
	}
}

func TestLinkSendCopiesCallerFrame(t *testing.T) {
	a, b := Pipe()
	f := numbered(7)
	a.Send([][]byte{f})
	f[14] = 0xff // the caller reuses its buffer at once
	bufs := newBufs(1)
	if n, err := b.Recv(bufs); n != 1 || err != nil || seqOf(bufs[0]) != 7 {
		t.Fatalf("Recv = %d, %v, seq %d", n, err, seqOf(bufs[0]))
	}
}

func TestLinkTailDropWhenFull(t *testing.T) {
	a, b, err := NewLink("a", "b", LinkConfig{Capacity: 4})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		a.Send([][]byte{numbered(uint64(i))})
	}
	if s := a.Stats(); s.FramesIn != 6 || s.FramesOut != 4 || s.Overflow != 2 {
		t.Fatalf("stats %v", s)
	}
	bufs := newBufs(8)
	n, _ := b.Recv(bufs)
	if n != 4 || seqOf(bufs[0]) != 0 || seqOf(bufs[3]) != 3 {
		t.Fatalf("got %d frames, first %d", n, seqOf(bufs[0]))
	}
}

func TestLinkRecvTruncatesToBufferCapacity(t *testing.T) {
	a, b := Pipe()
	a.Send([][]byte{bytes.Repeat([]byte{1}, 300)})
	bufs := [][]byte{make([]byte, 0, 100)}
	if n, _ := b.Recv(bufs); n != 1 || len(bufs[0]) != 100 {
		t.Fatalf("n=%d len=%d", n, len(bufs[0]))
	}
}

func TestLinkRejectsOversizeFrame(t *testing.T) {
	a, _ := Pipe()
	n, err := a.Send([][]byte{numbered(1), make([]byte, MaxFrameSize+1)})
	if n != 1 || err == nil {
		t.Fatalf("Send = %d, %v; want 1 and an error", n, err)
	}
}

func TestLinkCloseUnblocksRecv(t *testing.T) {
	a, b := Pipe()
	errc := make(chan error, 1)
	go func() {
		_, err := b.Recv(newBufs(1))
		errc <- err
	}()
	time.Sleep(10 * time.Millisecond)
	b.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("Recv after Close = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Recv still blocked after Close")
	}
	if _, err := b.Send([][]byte{numbered(1)}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send after Close = %v", err)
	}
	// The peer keeps working; what it sends to the closed end is counted.
	if n, err := a.Send([][]byte{numbered(1)}); n != 1 || err != nil {
		t.Fatalf("peer Send = %d, %v", n, err)
	}
	if s := a.Stats(); s.Overflow != 1 || s.FramesOut != 0 {
		t.Fatalf("peer stats %v", s)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
}

func TestLinkRejectsBadConfig(t *testing.T) {
	for _, cfg := range []LinkConfig{
		{Capacity: -1},
		{AtoB: Faults{Drop: 1.5}},
		{BtoA: Faults{Corrupt: -0.1}},
		{AtoB: Faults{Delay: -time.Second}},
	} {
		if _, _, err := NewLink("a", "b", cfg); err == nil {
			t.Errorf("NewLink(%+v) accepted", cfg)
		}
	}
}

func TestLinkSteadyStateDoesNotAllocate(t *testing.T) {
	a, b := Pipe()
	frames := [][]byte{numbered(1), numbered(2), numbered(3), numbered(4)}
	bufs := newBufs(4)
	round := func() {
		a.Send(frames)
		for got := 0; got < len(frames); {
			n, _ := b.Recv(bufs)
			got += n
		}
	}
	round()
	if allocs := testing.AllocsPerRun(1000, round); allocs != 0 {
		t.Fatalf("%v allocations per burst, want 0", allocs)
	}
}

func TestLinkConcurrentSendersAndReceiver(t *testing.T) {
	const senders, each = 4, 2000
	a, b, err := NewLink("a", "b", LinkConfig{Capacity: senders * each})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				a.Send([][]byte{numbered(uint64(s)<<32 | uint64(i))})
			}
		}()
	}
	next := make([]uint64, senders)
	bufs := newBufs(32)
	for total := 0; total < senders*each; {
		n, err := b.Recv(bufs)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range bufs[:n] {
			s, i := seqOf(f)>>32, seqOf(f)&0xffffffff
			if i != next[s] {
				t.Fatalf("sender %d: got frame %d, want %d", s, i, next[s])
			}
			next[s]++
		}
		total += n
	}
	wg.Wait()
	if s := a.Stats(); s.Overflow != 0 || s.FramesOut != senders*each {
		t.Fatalf("stats %v", s)
	}
}
