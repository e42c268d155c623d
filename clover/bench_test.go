package clover

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/swordbox/swordbox/netio"

	"github.com/swordbox/swordbox/testbed/ycsb"
)

// Frame sizes of one node READ on the wire: request (Ethernet, IPv4, UDP,
// BTH, RETH, ICRC) and READ_RESPONSE_ONLY (… AETH, payload, ICRC).
func idealReadBytes(valueSize int) int {
	return (14 + 20 + 8 + 12 + 16 + 4) + (14 + 20 + 8 + 12 + 4 + NodeSize(valueSize) + 4)
}

// loadKeys creates keys [0, n) with all clients in parallel.
func loadKeys(tb testing.TB, r *testRack, keys []uint64) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, len(r.clients))
	for i, c := range r.clients {
		wg.Add(1)
		go func(i int, c *Client) {
			defer wg.Done()
			v := make([]byte, c.ValueSize())
			for j := i; j < len(keys); j += len(r.clients) {
				binary.LittleEndian.PutUint64(v, keys[j])
				if err := c.Create(ctx, keys[j], v); err != nil {
					errs <- err
					return
				}
			}
			errs <- c.Flush(ctx)
		}(i, c)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// runYCSB runs b.N operations of workload w split over the rack's clients
// and reports throughput, wire bytes and the CAS figures.
func runYCSB(b *testing.B, r *testRack, w *ycsb.Workload) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	before := sumMetrics(r.clients)
	hubBytes, hubFrames := r.hub.bytes.Load(), r.hub.frames.Load()
	var wg sync.WaitGroup
	errs := make(chan error, len(r.clients))
	b.ResetTimer()
	start := time.Now()
	for i, c := range r.clients {
		n := b.N / len(r.clients)
		if i < b.N%len(r.clients) {
			n++
		}
		wg.Add(1)
		go func(i, n int, c *Client) {
			defer wg.Done()
			s := w.Stream(i)
			v := make([]byte, c.ValueSize())
			var op ycsb.Op
			for k := 0; k < n; k++ {
				s.Next(&op)
				var err error
				switch op.Type {
				case ycsb.OpRead:
					err = c.Get(ctx, op.Key, v)
				default:
					s.FillValue(v)
					err = c.Put(ctx, op.Key, v)
				}
				if err != nil {
					errs <- fmt.Errorf("client %d: %v %d: %w", i, op.Type, op.Key, err)
					return
				}
			}
		}(i, n, c)
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	after := sumMetrics(r.clients)
	ops := float64(b.N)
	wire := float64(r.hub.bytes.Load() - hubBytes)
	b.ReportMetric(ops/elapsed.Seconds(), "ops/s")
	b.ReportMetric(wire/ops, "wireB/op")
	b.ReportMetric(float64(after.Verbs-before.Verbs)/ops, "verbs/op")
	b.ReportMetric(float64(r.hub.frames.Load()-hubFrames)/ops, "frames/op")
	b.ReportMetric(float64(after.MSRequests-before.MSRequests)/ops, "msreq/op")
	if cas := after.CAS - before.CAS; cas > 0 {
		b.ReportMetric(1-float64(after.CASFailures-before.CASFailures)/float64(cas), "CASsuccess")
		puts := float64(after.Puts - before.Puts)
		b.ReportMetric(float64(after.Retries-before.Retries)/puts, "retries/put")
		b.ReportMetric(float64(after.ChaseHops-before.ChaseHops)/float64(after.Gets-before.Gets), "hops/get")
		b.ReportMetric(float64(after.GCWireBytes-before.GCWireBytes)/ops, "gcB/op")
	}
}

func benchRack(b *testing.B, clients, keys, valueSize int) (*testRack, []uint64) {
	return benchRackDelay(b, clients, keys, valueSize, 0)
}

// benchRackDelay gives every compute-node link a fixed one-way delay, so
// that operations of many clients overlap as on a real network, where a
// round trip is long against the CPU time of an operation.
func benchRackDelay(b *testing.B, clients, keys, valueSize int, delay time.Duration) (*testRack, []uint64) {
	nodes := keys + 64*clients + 4096
	class, _ := ClassFor(NodeSize(valueSize))
	perChunk := (1 << 20) / SlabClasses[class]
	layout := RegionLayout{Shortcuts: keys + 16, Chunks: nodes/perChunk + 2*clients + 8, ChunkSize: 1 << 20}
	r := newTestRack(b, rackConfig{clients: clients, valueSize: valueSize, layout: layout, cache: 2 * keys, timeout: 100 * time.Millisecond, epoch: time.Minute,
		faults: netio.Faults{Delay: delay}})
	w, _ := ycsb.New(ycsb.Config{Workload: ycsb.WorkloadC, RecordCount: int64(keys)})
	ks := make([]uint64, keys)
	for i := range ks {
		ks[i] = w.RecordKey(int64(i))
	}
	loadKeys(b, r, ks)
	// Warm every client's cursor cache (the paper's CNs cache hot metadata;
	// here every key is hot) so the timed run measures the data path.
	ctx := context.Background()
	var wg sync.WaitGroup
	for _, c := range r.clients {
		wg.Add(1)
		go func(c *Client) {
			defer wg.Done()
			for _, k := range ks {
				if _, err := c.cursor(ctx, k); err != nil {
					b.Error(err)
					return
				}
			}
		}(c)
	}
	wg.Wait()
	return r, ks
}

// BenchmarkReadOnlyUniform is the no-contention end: 100,000 keys,
// 128-byte values, uniform keys, read only.
func BenchmarkReadOnlyUniform(b *testing.B) {
	for _, clients := range []int{1, 4} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			r, _ := benchRack(b, clients, 100_000, 128)
			w, err := ycsb.New(ycsb.Config{Workload: ycsb.WorkloadC, Distribution: ycsb.DistUniform, RecordCount: 100_000, ValueSize: 128, Clients: clients, Seed: 1})
			if err != nil {
				b.Fatal(err)
			}
			runYCSB(b, r, w)
			b.ReportMetric(float64(idealReadBytes(128)), "idealB/op")
		})
	}
}

// BenchmarkContendedZipf is the other end: 50% writes, zipf 0.99 on 1,024
// keys, 128-byte values, without a switch (steering is measured on the
// testbed's rack, with the real switch program: swordbox bench).
func BenchmarkContendedZipf(b *testing.B) {
	for _, clients := range []int{8, 32, 128} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			r, _ := benchRack(b, clients, 1024, 128)
			w, err := ycsb.New(ycsb.Config{Workload: ycsb.WorkloadA, RecordCount: 1024, ValueSize: 128, Clients: clients, Seed: 1})
			if err != nil {
				b.Fatal(err)
			}
			runYCSB(b, r, w)
		})
	}
}

// BenchmarkClientOps measures one client's warm get and put on the software
// RNIC (one memory node, no contention) with allocations per operation.
func BenchmarkClientOps(b *testing.B) {
	r := newTestRack(b, rackConfig{clients: 1, valueSize: 128, layout: smallLayout(), timeout: 100 * time.Millisecond, epoch: time.Minute})
	c := r.clients[0]
	ctx := context.Background()
	v := make([]byte, 128)
	if err := c.Create(ctx, 1, v); err != nil {
		b.Fatal(err)
	}
	b.Run("get", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := c.Get(ctx, 1, v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("put", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := c.Put(ctx, 1, v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkContendedZipfDelay is BenchmarkContendedZipf on links with a
// 100us one-way delay: many clients' operations in flight at once.
func BenchmarkContendedZipfDelay(b *testing.B) {
	for _, clients := range []int{32, 128} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			r, _ := benchRackDelay(b, clients, 1024, 128, 100*time.Microsecond)
			w, err := ycsb.New(ycsb.Config{Workload: ycsb.WorkloadA, RecordCount: 1024, ValueSize: 128, Clients: clients, Seed: 1})
			if err != nil {
				b.Fatal(err)
			}
			runYCSB(b, r, w)
		})
	}
}
