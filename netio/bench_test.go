package netio

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
)

// BenchmarkLink measures one goroutine sending bursts of 64-byte frames and
// another receiving them over a fault-free in-memory link; ns/op and
// allocs/op are per frame.
func BenchmarkLink(b *testing.B) {
	for _, burst := range []int{1, 32} {
		b.Run(fmt.Sprintf("burst=%d", burst), func(b *testing.B) { benchLink(b, burst, Faults{}) })
	}
}

// BenchmarkLinkFaults is BenchmarkLink with 1% drop, duplicate and reorder
// and 0.1% corruption on the link.
func BenchmarkLinkFaults(b *testing.B) {
	f := Faults{Drop: 0.01, Duplicate: 0.01, Reorder: 0.01, Corrupt: 0.001, Seed: 1}
	b.Run("burst=32", func(b *testing.B) { benchLink(b, 32, f) })
}

func benchLink(b *testing.B, burst int, f Faults) {
	const capacity = 4096
	tx, rx, err := NewLink("tx", "rx", LinkConfig{Capacity: capacity, AtoB: f})
	if err != nil {
		b.Fatal(err)
	}
	frames := make([][]byte, burst)
	for i := range frames {
		frames[i] = numbered(uint64(i))
	}
	var consumed atomic.Uint64
	done := make(chan struct{})
	go func() {
		defer close(done)
		bufs := newBufs(64)
		for {
			n, err := rx.Recv(bufs)
			if err != nil {
				return
			}
			consumed.Add(uint64(n))
		}
	}()
	run := func(n int) {
		for sent := 0; sent < n; {
			// Flow control: a sender that outran the receiver would
			// measure tail drops, not the link.
			for tx.tx.c.out.Load()-consumed.Load() > capacity/2 {
				runtime.Gosched()
			}
			k := min(burst, n-sent)
			tx.Send(frames[:k])
			sent += k
		}
		for tx.tx.c.held.Load() > 0 || tx.tx.c.out.Load() != consumed.Load() {
			runtime.Gosched()
		}
	}
	run(4 * capacity) // warm up: the buffer pool reaches its steady size
	b.ReportAllocs()
	b.SetBytes(64)
	b.ResetTimer()
	run(b.N)
	b.StopTimer()
	rx.Close()
	<-done
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mpps")
	b.ReportMetric(float64(tx.Stats().Overflow), "overflows")
}
