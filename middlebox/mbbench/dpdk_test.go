//go:build dpdk

package mbbench

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/swordbox/swordbox/middlebox"
	"github.com/swordbox/swordbox/netio/dpdk"
)

// More cores than the build's ports hold two vdevs each are refused
// before the EAL starts (17 cores failed in the EAL, "net_ring32": no such
// device).
func TestBenchDPDKTooManyCores(t *testing.T) {
	cores := dpdk.MaxPorts/2 + 1
	started := dpdk.Initialized()
	_, err := BenchDPDK(DPDKBenchConfig{Mix: DefaultMix, Cores: cores, Duration: time.Millisecond, Ring: true})
	want := fmt.Sprintf("middlebox: bench: %d cores need %d DPDK ports (two per core), more than this DPDK build's %d (RTE_MAX_ETHPORTS): at most %d cores",
		cores, 2*cores, dpdk.MaxPorts, dpdk.MaxPorts/2)
	if err == nil || err.Error() != want {
		t.Fatalf("err %v, want %s", err, want)
	}
	if !started && dpdk.Initialized() {
		t.Fatal("the EAL was started")
	}
}

// The zero-copy DPDK loop on net_ring vdevs: every frame of the mix is
// processed, nothing is dropped, and the engine multiplexed and converted.
func TestBenchDPDKRing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("DPDK without hugepages needs root here")
	}
	res, err := BenchDPDK(DPDKBenchConfig{Mix: DefaultMix, Cores: 1, Duration: benchDPDKDur(), Ring: true})
	if err != nil {
		t.Fatal(err)
	}
	c := res.PerCore[0]
	if c.FramesIn == 0 || c.Drops != 0 || !strings.Contains(c.Counters, "cas-to-write=") || !strings.Contains(c.Counters, "acks-out=") {
		t.Fatalf("core 0: %+v", c)
	}
	// The loop-only pass replays exactly the engine passes' frames; the
	// split figures are there and positive.
	if got := counterValue(t, c.Counters, "loop-only-frames"); got != float64(c.FramesIn) {
		t.Fatalf("loop-only pass: %v frames, engine passes %d", got, c.FramesIn)
	}
	for _, k := range []string{"engine-ns/frame", "loop-ns/frame", "loop-only-ns/frame", "loop-only-cpu-ns/frame"} {
		if v := counterValue(t, c.Counters, k); v <= 0 {
			t.Fatalf("%s = %v", k, v)
		}
	}
	t.Logf("net_ring: %.2f Mpps wall, %.2f Mpps per core of CPU time, %d frames; %s", c.Mpps, c.MppsCPU, c.FramesIn, c.Counters)
}

// dpdkThread skips tb unless it runs as root, initialises the EAL on a
// net_ring pair, locks the goroutine to its OS thread and, with lcore,
// registers that thread as a DPDK lcore (as the loops do). Defer the
// function it returns.
func dpdkThread(tb testing.TB, lcore bool) (done func()) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("DPDK without hugepages needs root here")
	}
	if err := dpdk.Init(benchEAL(1, benchVdevs(1))); err != nil {
		tb.Fatal(err)
	}
	runtime.LockOSThread()
	if lcore {
		if _, err := dpdk.RegisterThread(); err != nil {
			runtime.UnlockOSThread()
			tb.Fatal(err)
		}
	}
	return func() {
		if lcore {
			dpdk.UnregisterThread()
		}
		runtime.UnlockOSThread()
	}
}

// The loop's output is the engine's: the same trace through the ring loop
// (rewrites in place, generated frames copied into consumed inputs' mbufs
// and stock mbufs, one TX list) and through Engine.Process directly gives
// the same frames in the same order, byte for byte; and every mbuf goes
// back to the pool.
func TestDPDKLoopMatchesEngine(t *testing.T) {
	defer dpdkThread(t, true)()
	for _, burst := range []int{1, 7, 32, 64} {
		r, err := newRingBench(DPDKBenchConfig{Mix: DefaultMix, Cores: 1}, 0, "net_ring0", "net_ring1", burst)
		if err != nil {
			t.Fatal(err)
		}
		r.b.SetSink(nil) // the test reads the output ring itself
		ref, err := middlebox.New(r.mix.EngineConfig())
		if err != nil {
			t.Fatal(err)
		}
		out := middlebox.NewOut(4096, 1<<18)
		tr := NewTrace(256)
		ms := make([]*dpdk.Mbuf, 1024)
		var frames int
		for round := range 40 {
			r.mix.Fill(tr, 256)
			if err := r.load(tr.Frames); err != nil {
				t.Fatal(err)
			}
			var want [][]byte
			for i, f := range tr.Frames {
				out.Reset()
				ref.Process(0, tr.Sides[i], bytes.Clone(f), out)
				for _, o := range out.Frames {
					want = append(want, bytes.Clone(o))
				}
			}
			for r.d.Poll(0) {
			}
			r.d.Flush()
			var got [][]byte
			for n := r.outp.RxBurst(0, ms); n > 0; n = r.outp.RxBurst(0, ms) {
				for _, m := range ms[:n] {
					got = append(got, bytes.Clone(m.Data()))
				}
				dpdk.FreeBulk(ms[:n])
			}
			if len(got) != len(want) {
				t.Fatalf("burst %d round %d: loop sent %d frames, engine %d", burst, round, len(got), len(want))
			}
			for i := range got {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("burst %d round %d frame %d:\nloop   %x\nengine %x", burst, round, i, got[i], want[i])
				}
			}
			frames += len(got)
		}
		if c, st := r.eng.Counters(), r.d.Stats(); c.TotalDrops() != 0 || st.NoMbuf != 0 || frames == 0 || st.Spare == 0 || st.Spare == st.Generated {
			t.Fatalf("burst %d: %d frames, %d generated (%d in consumed inputs' mbufs), no-mbuf %d, %s",
				burst, frames, st.Generated, st.Spare, st.NoMbuf, c.String())
		}
		if err := r.close(); err != nil {
			t.Fatalf("burst %d: %v", burst, err)
		}
	}
}

// A chained frame (two segments) is dropped, counted, and its mbufs freed;
// the frames around it go through.
func TestDPDKLoopDropsChained(t *testing.T) {
	defer dpdkThread(t, false)()
	r, err := newRingBench(DPDKBenchConfig{Mix: DefaultMix, Cores: 1}, 0, "net_ring0", "net_ring1", 0)
	if err != nil {
		t.Fatal(err)
	}
	r.b.SetSink(nil)
	tr := NewTrace(8)
	r.mix.Fill(tr, 8)
	ms := make([]*dpdk.Mbuf, 64)
	if err := r.pool.AllocBulk(ms[:len(tr.Frames)+1]); err != nil {
		t.Fatal(err)
	}
	for i, f := range tr.Frames {
		ms[i].SetData(f)
	}
	head, tail := ms[2], ms[len(tr.Frames)]
	f := tr.Frames[2]
	head.SetData(f[:40])
	tail.SetData(f[40:])
	if err := head.Chain(tail); err != nil {
		t.Fatal(err)
	}
	if k := r.in.TxBurst(0, ms[:len(tr.Frames)]); k != len(tr.Frames) {
		t.Fatalf("inject: %d of %d", k, len(tr.Frames))
	}
	for r.d.Poll(0) {
	}
	r.d.Flush()
	out := 0
	for k := r.outp.RxBurst(0, ms); k > 0; k = r.outp.RxBurst(0, ms) {
		out += k
		dpdk.FreeBulk(ms[:k])
	}
	if st := r.d.Stats(); st.Chained != 1 || st.Frames != uint64(len(tr.Frames)) || out == 0 {
		t.Fatalf("chained %d, frames %d, %d out", st.Chained, st.Frames, out)
	}
	if err := r.close(); err != nil {
		t.Fatal(err)
	}
}

// counterValue returns the number after "key=" in a counters string.
func counterValue(t *testing.T, counters, key string) float64 {
	t.Helper()
	for _, f := range strings.Fields(counters) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			return x
		}
	}
	t.Fatalf("no %s in %q", key, counters)
	return 0
}

func benchDPDKDur() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("MBOX_DPDK_DUR")); err == nil {
		return d
	}
	return 300 * time.Millisecond
}

// BenchmarkDPDKLoop runs the benchmark's ring loop (BenchDPDK, one core)
// for b.N input frames: "engine" with the engine, "loop-only" with the
// engine replaced by the forwarder that loads the loop as the engine did
// in a calibration pass (see BenchDPDK). Loading the input ring is not
// timed. ns/op and allocs/op are per input frame (b.N is rounded up to
// whole chunks of 512); the difference between the two is the engine's
// share.
func BenchmarkDPDKLoop(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("DPDK without hugepages needs root here")
	}
	for _, name := range []string{"engine", "loop-only"} {
		b.Run(name, func(b *testing.B) { benchDPDKLoop(b, name == "loop-only") })
	}
}

func benchDPDKLoop(b *testing.B, loopOnly bool) {
	defer dpdkThread(b, true)()
	r, err := newRingBench(DPDKBenchConfig{Mix: DefaultMix, Cores: 1}, 0, "net_ring0", "net_ring1", 0)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := r.close(); err != nil {
			b.Error(err)
		}
	}()
	load := func() {
		if err := r.load(r.nextChunk()); err != nil {
			b.Fatal(err)
		}
	}
	for range 8 { // calibration: the engine's load for the loop-only forwarder
		load()
		r.pass(false, false)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var frames, wall, cpu int64
	for frames < int64(b.N) {
		b.StopTimer()
		load()
		b.StartTimer()
		n, w, c := r.pass(loopOnly, false)
		frames, wall, cpu = frames+int64(n), wall+w, cpu+c
	}
	b.StopTimer()
	c := r.eng.Counters()
	if drops := c.TotalDrops() + r.d.Stats().NoMbuf + r.b.NoMbuf() + r.b.TxDropped(); drops != 0 {
		b.Fatalf("%d drops: %s", drops, c.String())
	}
	b.ReportMetric(float64(frames)/(float64(wall)/1e9)/1e6, "Mpps")
	b.ReportMetric(float64(cpu)/float64(frames), "cpu-ns/frame") // the thread's CPU time: robust to a busy machine
}
