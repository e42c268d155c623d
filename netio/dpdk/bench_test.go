//go:build dpdk

package dpdk

import (
	"testing"
)

// BenchmarkRingPort moves bursts of 32 64-byte frames through the copying
// netio.Port over the net_ring0 loopback: Send (copy into mbufs, TX burst)
// then Recv (RX burst, copy out, free). ns/op and allocs/op are per frame.
func BenchmarkRingPort(b *testing.B) {
	needEAL(b)
	p := ringPort(b, newPool(b, 4095))
	const burst = 32
	frames := make([][]byte, burst)
	for i := range frames {
		frames[i] = frame(i, 64)
	}
	bufs := newBufs(burst)
	b.ReportAllocs()
	b.SetBytes(64)
	b.ResetTimer()
	for done := 0; done < b.N; done += burst {
		if _, err := p.Send(frames); err != nil {
			b.Fatal(err)
		}
		for got := 0; got < burst; {
			n, err := p.Recv(bufs)
			if err != nil {
				b.Fatal(err)
			}
			got += n
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mpps")
}

// BenchmarkRingZeroCopy is an io forwarding loop on the net_ring0 loopback
// with the zero-copy API: RX burst of 32 mbufs, TX burst of the same mbufs.
// With edit, each frame is also rewritten in place the way the middlebox
// shrinks a CAS into a WRITE and grows it back (a byte written, Trim(4),
// Append(4)). ns/op and allocs/op are per frame.
func BenchmarkRingZeroCopy(b *testing.B) {
	for _, edit := range []bool{false, true} {
		name := "io"
		if edit {
			name = "edit"
		}
		b.Run(name, func(b *testing.B) { benchZeroCopy(b, edit) })
	}
}

// preload puts burst 64-byte frames from pool into the loopback port p's
// ring, for a forwarding benchmark to keep moving, and returns a C-memory
// mbuf slice of that size for its bursts (free it with FreeMbufSlice).
func preload(b *testing.B, pool *Mempool, p *EthPort, burst int) []*Mbuf {
	b.Helper()
	ms := AllocMbufSlice(burst)
	if err := pool.AllocBulk(ms); err != nil {
		FreeMbufSlice(ms)
		b.Fatal(err)
	}
	for i, m := range ms {
		m.SetData(frame(i, 64))
	}
	if n := p.TxBurst(0, ms); n != burst {
		b.Fatalf("preload: TxBurst = %d", n)
	}
	return ms
}

func benchZeroCopy(b *testing.B, edit bool) {
	needEAL(b)
	pool := newPool(b, 4095)
	p := ringPort(b, pool)
	ms := preload(b, pool, p, 32)
	defer FreeMbufSlice(ms)
	b.ReportAllocs()
	b.SetBytes(64)
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := p.RxBurst(0, ms)
		if edit {
			for _, m := range ms[:n] {
				m.Data()[20]++
				if err := m.Trim(4); err != nil {
					b.Fatal(err)
				}
				if _, err := m.Append(4); err != nil {
					b.Fatal(err)
				}
			}
		}
		if k := p.TxBurst(0, ms[:n]); k != n {
			b.Fatalf("TxBurst = %d of %d", k, n)
		}
		done += n
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mpps")
}
