package perftest

import (
	"context"
	"testing"
	"time"

	"github.com/swordbox/swordbox/netio"
)

func TestRunAllTests(t *testing.T) {
	for _, name := range Tests {
		t.Run(name, func(t *testing.T) {
			r, err := Run(context.Background(), Config{Test: name, QPs: 2, Depth: 4, Size: 256, Ops: 2000, NoWarmup: true, RegionSize: 1 << 20,
				Faults: netio.Faults{Drop: 0.01, Seed: 3}})
			if err != nil {
				t.Fatal(err)
			}
			if r.Ops < 2000 || r.OpsPerSec <= 0 || r.Latency.P50 <= 0 || r.Latency.P99 < r.Latency.P50 || r.Errors != 0 {
				t.Fatalf("%+v", r)
			}
			if (name[len(name)-4:] == "_lat") != (r.Depth == 1) {
				t.Fatalf("depth %d for %s", r.Depth, name)
			}
			t.Log(r)
		})
	}
	if _, err := Run(context.Background(), Config{Test: "nope"}); err == nil {
		t.Fatal("unknown test accepted")
	}
}

func TestRunDuration(t *testing.T) {
	r, err := Run(context.Background(), Config{Test: "write_bw", QPs: 1, Depth: 2, Size: 64, Duration: 100 * time.Millisecond, RegionSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if r.Seconds < 0.09 || r.Seconds > 10 || r.Ops == 0 {
		t.Fatalf("%+v", r)
	}
}

// A round trip longer than the measured time still gives a rate: the
// operations that completed over the window from the end of the warm-up
// on (it reported ops=16 seconds=0 ops-per-sec=0).
func TestRunRoundTripLongerThanDuration(t *testing.T) {
	r, err := Run(context.Background(), Config{Test: "write_bw", QPs: 1, Depth: 4, Size: 64, Duration: 20 * time.Millisecond, RegionSize: 1 << 20,
		Faults: netio.Faults{Delay: 100 * time.Millisecond, Seed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Ops == 0 || r.Seconds < 0.02 || r.OpsPerSec <= 0 || r.OpsPerSec != float64(r.Ops)/r.Seconds {
		t.Fatalf("%+v", r)
	}
}

// TestSteadyStateAllocations checks that the whole data path (requester,
// frames, link, responder, completions, and the load generator) allocates
// nothing per operation once warm: the process-wide allocation count over
// many operations stays below one per thousand operations.
func TestSteadyStateAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	for _, name := range []string{"write_bw", "read_bw", "atomic_bw"} {
		const ops = 100000
		s, err := NewSession(context.Background(), Config{Test: name, QPs: 4, Depth: 16, Size: 64, Ops: ops, NoWarmup: true, RegionSize: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ { // warm up pools and rings
			if _, err := s.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		allocs := testing.AllocsPerRun(3, func() {
			if _, err := s.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
		perOp := allocs / ops
		t.Logf("%s: %.0f allocations per run of %d operations (%.5f per operation)", name, allocs, ops, perOp)
		if perOp > 0.001 {
			t.Errorf("%s allocates %.4f times per operation", name, perOp)
		}
		s.Close()
	}
}

func benchmarkPerf(b *testing.B, test string, qps int) {
	s, err := NewSession(context.Background(), Config{Test: test, QPs: qps, Depth: 16, Size: 64, Ops: 1000, NoWarmup: true, RegionSize: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	s.Run(context.Background())
	s.cfg.Ops = uint64(b.N)
	b.ReportAllocs()
	b.ResetTimer()
	r, err := s.Run(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(r.OpsPerSec/1e6, "Mops/s")
	b.ReportMetric(r.Latency.P50, "p50-us")
	b.ReportMetric(r.CPUNsPerOp, "cpu-ns/op")
}

func BenchmarkWrite64QP1(b *testing.B)   { benchmarkPerf(b, "write_bw", 1) }
func BenchmarkWrite64QP16(b *testing.B)  { benchmarkPerf(b, "write_bw", 16) }
func BenchmarkRead64QP1(b *testing.B)    { benchmarkPerf(b, "read_bw", 1) }
func BenchmarkRead64QP16(b *testing.B)   { benchmarkPerf(b, "read_bw", 16) }
func BenchmarkAtomicQP1(b *testing.B)    { benchmarkPerf(b, "atomic_bw", 1) }
func BenchmarkAtomicQP16(b *testing.B)   { benchmarkPerf(b, "atomic_bw", 16) }
func BenchmarkWriteLatency(b *testing.B) { benchmarkPerf(b, "write_lat", 1) }
