//go:build dpdk

package dpdk

import (
	"bytes"
	"runtime"
	"testing"
)

// registered locks the test to its OS thread and registers the thread as
// an lcore for the rest of the test.
func registered(t testing.TB) int {
	t.Helper()
	runtime.LockOSThread()
	id, err := RegisterThread()
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		UnregisterThread()
		runtime.UnlockOSThread()
	})
	return id
}

func TestRegisterThread(t *testing.T) {
	needEAL(t)
	id := registered(t)
	if id == 0 { // lcore 0 is the EAL's main lcore (-l 0)
		t.Fatalf("registered thread got the main lcore")
	}
	// A second thread gets another lcore.
	other := make(chan int)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		id2, err := RegisterThread()
		if err != nil {
			other <- -1
			return
		}
		UnregisterThread()
		other <- id2
	}()
	if id2 := <-other; id2 < 0 || id2 == id {
		t.Fatalf("second thread: lcore %d, first %d", id2, id)
	}
}

// TxBatch over the net_ring0 loopback: what is queued comes back in order
// and intact at the next FlushRx, dropped and surplus mbufs go back to the
// pool, and nothing is lost or leaked.
func TestTxBatchFlushRx(t *testing.T) {
	const n = 1023
	pool, p, b := txBatchOnRing(t, n, 64)
	defer func() {
		b.Close()
		if got := pool.Available(); got != n {
			t.Errorf("after Close: %d of %d mbufs in the pool", got, n)
		}
	}()
	ms := AllocMbufSlice(MaxBurst)
	defer FreeMbufSlice(ms)
	for round := range 50 {
		var want [2][][]byte // by TX list
		for i := range 100 { // more than the stock of 64: Take refills within a burst
			m := b.Take()
			if m == nil {
				t.Fatalf("round %d: Take: pool empty", round)
			}
			if i%5 == 4 {
				b.Drop(m)
				continue
			}
			f := frame(round*100+i, 60+i)
			if err := m.SetData(f); err != nil {
				t.Fatal(err)
			}
			b.Queue(i%2, m)
			want[i%2] = append(want[i%2], f)
		}
		order := append(want[0], want[1]...) // list 0 leaves first (both on net_ring0)
		var got [][]byte
		for k := b.FlushRx(p, 0, ms); k > 0; k = b.FlushRx(p, 0, ms) {
			for _, m := range ms[:k] {
				got = append(got, bytes.Clone(m.Data()))
				b.Drop(m)
			}
		}
		if len(got) != len(order) {
			t.Fatalf("round %d: received %d frames, queued %d", round, len(got), len(order))
		}
		for i := range got {
			if !bytes.Equal(got[i], order[i]) {
				t.Fatalf("round %d: frame %d differs", round, i)
			}
		}
	}
	if b.TxDropped() != 0 || b.NoMbuf() != 0 {
		t.Fatalf("tx dropped %d, no mbuf %d", b.TxDropped(), b.NoMbuf())
	}
}

// What the ring refuses is freed and counted; a sink drains the port.
func TestTxBatchOverflowAndSink(t *testing.T) {
	const n = 4095
	pool, p, b := txBatchOnRing(t, n, TxBatchStock)
	const queued = 1500 // net_ring0's ring holds fewer
	for i := range queued {
		m := b.Take()
		if m == nil {
			t.Fatal("pool empty")
		}
		m.SetData(frame(i, 64))
		b.Queue(0, m)
	}
	b.Flush()
	ms := AllocMbufSlice(1024)
	defer FreeMbufSlice(ms)
	got := 0
	for k := p.RxBurst(0, ms); k > 0; k = p.RxBurst(0, ms) {
		got += k
		FreeBulk(ms[:k])
	}
	if got == 0 || got >= queued || uint64(queued-got) != b.TxDropped() {
		t.Fatalf("queued %d, received %d, tx dropped %d", queued, got, b.TxDropped())
	}
	b.SetSink(p)
	for i := range 100 {
		m := b.Take()
		m.SetData(frame(i, 64))
		b.Queue(1, m)
	}
	b.Flush()
	if k := p.RxBurst(0, ms); k != 0 || b.Drained() != 100 {
		t.Fatalf("after a flush with a sink: %d frames left in the ring, %d drained", k, b.Drained())
	}
	b.Close()
	if got := pool.Available(); got != n {
		t.Fatalf("after Close: %d of %d mbufs in the pool", got, n)
	}
}

// An empty pool: Take returns nil and counts it; nothing else breaks.
func TestTxBatchPoolEmpty(t *testing.T) {
	const n = 63
	pool, p, b := txBatchOnRing(t, n, 0)
	var held []*Mbuf
	for m := b.Take(); m != nil; m = b.Take() {
		held = append(held, m)
	}
	if len(held) != n || b.NoMbuf() == 0 {
		t.Fatalf("took %d of %d mbufs, no-mbuf %d", len(held), n, b.NoMbuf())
	}
	for _, m := range held {
		b.Drop(m)
	}
	b.Close()
	if got := pool.Available(); got != n {
		t.Fatalf("after Close: %d of %d mbufs in the pool", got, n)
	}
	if _, err := NewTxBatch(pool, [2]*EthPort{p, nil}, 0); err == nil {
		t.Fatal("NewTxBatch without a port succeeded")
	}
	if _, err := NewTxBatch(pool, [2]*EthPort{p, p}, TxBatchStock+1); err == nil {
		t.Fatalf("NewTxBatch with a stock of %d succeeded", TxBatchStock+1)
	}
}

// BenchmarkTxBatchForward is an io forwarding loop on the net_ring0
// loopback through TxBatch: one FlushRx per burst of 32 (TX of the last
// burst, RX of the next), every frame queued back. Compare with
// BenchmarkRingZeroCopy/io (one RxBurst and one TxBurst per burst).
// ns/op and allocs/op are per frame.
func BenchmarkTxBatchForward(b *testing.B) {
	needEAL(b)
	registered(b)
	pool := newPool(b, 4095)
	p := ringPort(b, pool)
	tb, err := NewTxBatch(pool, [2]*EthPort{p, p}, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer tb.Close()
	ms := preload(b, pool, p, 32)
	defer FreeMbufSlice(ms)
	b.ReportAllocs()
	b.SetBytes(64)
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := tb.FlushRx(p, 0, ms)
		for _, m := range ms[:n] {
			tb.Queue(0, m)
		}
		done += n
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mpps")
}

// txBatchOnRing returns, on a thread registered as an lcore, a pool of n
// mbufs, the net_ring0 loopback port over it, and a TxBatch sending both
// sides to that port with a stock of stock mbufs.
func txBatchOnRing(t *testing.T, n, stock int) (*Mempool, *EthPort, *TxBatch) {
	t.Helper()
	needEAL(t)
	registered(t)
	pool := newPool(t, n)
	p := ringPort(t, pool)
	b, err := NewTxBatch(pool, [2]*EthPort{p, p}, stock)
	if err != nil {
		t.Fatal(err)
	}
	return pool, p, b
}
