//go:build dpdk

package middlebox

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/swordbox/swordbox/netio/dpdk"
)

// The zero-copy DPDK loop on net_ring vdevs: every frame of the mix is
// processed, nothing is dropped, and the engine multiplexed and converted.
func TestBenchDPDKRing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("DPDK without hugepages needs root here")
	}
	res, err := BenchDPDK(DPDKBenchConfig{Mix: benchMix, Cores: 1, Duration: benchDPDKDur(), Ring: true})
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
	for _, burst := range []int{1, 7, dpdkBurst, 64} {
		r, err := newRingBench(DPDKBenchConfig{Mix: benchMix, Cores: 1}, 0, "net_ring0", "net_ring1")
		if err != nil {
			t.Fatal(err)
		}
		r.d.burst = burst
		r.d.b.SetSink(nil) // the test reads the output ring itself
		ref, err := New(r.mix.EngineConfig())
		if err != nil {
			t.Fatal(err)
		}
		out := NewOut(4096, 1<<18)
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
			for r.d.poll(0) {
			}
			r.d.flush()
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
		if c := r.eng.Counters(); c.TotalDrops() != 0 || r.d.noMbuf != 0 || frames == 0 || r.d.spareN == 0 || r.d.spareN == r.d.genN {
			t.Fatalf("burst %d: %d frames, %d generated (%d in consumed inputs' mbufs), no-mbuf %d, %s",
				burst, frames, r.d.genN, r.d.spareN, r.d.noMbuf, c.String())
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
	r, err := newRingBench(DPDKBenchConfig{Mix: benchMix, Cores: 1}, 0, "net_ring0", "net_ring1")
	if err != nil {
		t.Fatal(err)
	}
	r.d.b.SetSink(nil)
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
	for r.d.poll(0) {
	}
	r.d.flush()
	out := 0
	for k := r.outp.RxBurst(0, ms); k > 0; k = r.outp.RxBurst(0, ms) {
		out += k
		dpdk.FreeBulk(ms[:k])
	}
	if r.d.chained != 1 || r.d.frames != uint64(len(tr.Frames)) || out == 0 {
		t.Fatalf("chained %d, frames %d, %d out", r.d.chained, r.d.frames, out)
	}
	if err := r.close(); err != nil {
		t.Fatal(err)
	}
}

// RunDPDK between net_ring0 (client side) and net_ring1 (server side),
// both loopbacks: non-RoCE frames pass to the other side, come back as that
// side's input, and so bounce between the two rings for as long as the
// loop runs. When it stops, every frame is in one of the rings exactly
// once, unchanged (what was queued at the end was flushed), and both sides
// received and sent.
func TestRunDPDKConservesFrames(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("DPDK without hugepages needs root here")
	}
	eal := benchEAL(1, benchVdevs(1))
	if err := dpdk.Init(eal); err != nil {
		t.Fatal(err)
	}
	m, err := NewMix(benchMix)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSharded(m.EngineConfig(), 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, burst := range []int{-1, maxDPDKBurst + 1} {
		if err := RunDPDK(context.Background(), s, DPDKConfig{EAL: eal, ClientPort: "net_ring0", ServerPort: "net_ring1", Burst: burst}); err == nil {
			t.Fatalf("burst %d accepted", burst)
		}
	}
	pool, err := dpdk.NewMempool(fmt.Sprintf("runtest%d-%d", os.Getpid(), poolSeq.Add(1)), 1023, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Free()
	const n = 300
	want := map[string]bool{}
	ms := make([]*dpdk.Mbuf, 1024)
	if err := pool.AllocBulk(ms[:n]); err != nil {
		t.Fatal(err)
	}
	for i, mb := range ms[:n] {
		f := make([]byte, 60+i%40)
		copy(f, []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x88, 0xb5}) // not IPv4: passed through
		binary.BigEndian.PutUint32(f[14:], uint32(i))
		want[string(f)] = true
		if err := mb.SetData(f); err != nil {
			t.Fatal(err)
		}
	}
	cp, err := dpdk.OpenPort("net_ring0", dpdk.PortConfig{Pool: pool})
	if err != nil {
		t.Fatal(err)
	}
	if k := cp.TxBurst(0, ms[:n]); k != n {
		t.Fatalf("inject: %d of %d", k, n)
	}
	cp.Close()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- RunDPDK(ctx, s, DPDKConfig{EAL: eal, ClientPort: "net_ring0", ServerPort: "net_ring1", Burst: 7})
	}()
	time.Sleep(100 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := 0
	for _, name := range []string{"net_ring0", "net_ring1"} {
		p, err := dpdk.OpenPort(name, dpdk.PortConfig{Pool: pool})
		if err != nil {
			t.Fatal(err)
		}
		for k := p.RxBurst(0, ms); k > 0; k = p.RxBurst(0, ms) {
			for _, mb := range ms[:k] {
				if !want[string(mb.Data())] {
					t.Errorf("%s: unexpected or duplicate frame %x", name, mb.Data())
				}
				delete(want, string(mb.Data()))
				got++
			}
			dpdk.FreeBulk(ms[:k])
		}
		p.Close()
	}
	c := s.Counters()
	if got != n || len(want) != 0 || c.TotalDrops() != 0 || c.RxClient <= n || c.RxServer <= n {
		t.Fatalf("%d of %d frames back, %d missing; %s", got, n, len(want), c.String())
	}
	if a := pool.Available(); a != 1023 {
		t.Fatalf("%d of 1023 mbufs back in the test's pool", a)
	}
	t.Logf("%s", c.String())
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
	r, err := newRingBench(DPDKBenchConfig{Mix: benchMix, Cores: 1}, 0, "net_ring0", "net_ring1")
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
		r.pass(false)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var frames, wall, cpu int64
	for frames < int64(b.N) {
		b.StopTimer()
		load()
		b.StartTimer()
		n, w, c := r.pass(loopOnly)
		frames, wall, cpu = frames+int64(n), wall+w, cpu+c
	}
	b.StopTimer()
	c := r.eng.Counters()
	if drops := c.TotalDrops() + r.d.noMbuf + r.d.b.NoMbuf() + r.d.b.TxDropped(); drops != 0 {
		b.Fatalf("%d drops: %s", drops, c.String())
	}
	b.ReportMetric(float64(frames)/(float64(wall)/1e9)/1e6, "Mpps")
	b.ReportMetric(float64(cpu)/float64(frames), "cpu-ns/frame") // the thread's CPU time: robust to a busy machine
}
