//go:build dpdk

package mbbench

import (
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/swordbox/swordbox/middlebox"
	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/netio/dpdk"
)

// The benchmark's mempool cache and stock of empty mbufs, as RunDPDK's.
const (
	poolCache = 256
	stock     = 256
)

var poolSeq atomic.Uint64 // mempool names must be unique in the process

// nullEngine stands in for the engine in the benchmark's loop-only pass.
// It decides nothing and reads no byte of the frame, but loads the loop as
// the engine did in the same run: it forwards the same share of inputs in
// their own mbufs and generates the same number of frames per input, of
// the engine's mean length (copies of a template), spread evenly.
type nullEngine struct {
	den, fwd, gen  uint64 // per den inputs: fwd forwarded, gen generated
	fwdAcc, genAcc uint64
	tmpl           []byte
}

func (n *nullEngine) process(s middlebox.Side, f []byte, o *middlebox.Out) {
	if n.fwdAcc += n.fwd; n.fwdAcc >= n.den {
		n.fwdAcc -= n.den
		if len(o.Frames) < cap(o.Frames) {
			o.Frames = append(o.Frames, f)
			o.Sides = append(o.Sides, s.Other())
			o.FromInput = append(o.FromInput, true)
		}
	}
	for n.genAcc += n.gen; n.genAcc >= n.den; n.genAcc -= n.den {
		if len(o.Frames) < cap(o.Frames) {
			o.Frames = append(o.Frames, n.tmpl)
			o.Sides = append(o.Sides, s)
			o.FromInput = append(o.FromInput, false)
		}
	}
}

// BenchDPDK replays the mix through the engine's zero-copy DPDK loop
// (middlebox.DPDKLoop, the loop of middlebox.RunDPDK). Per
// core, on one OS thread registered as a DPDK lcore: a chunk of the
// recorded mix is transmitted, in trace order, on a loopback net_ring vdev
// (untimed: it comes back as that vdev's RX, as if from the wire); then
// the middlebox loop receives it in bursts, processes it and transmits on
// a second vdev, whose loopback it drains and frees after each burst (as
// a driver reclaims transmitted mbufs), until the input is empty (timed).
// Mpps per core: frames over the timed wall time, and over the thread's
// CPU time in it.
//
// The same run splits the loop's cost from the engine's, two ways (both in
// CoreStats.Counters; figures per input frame, wall time):
//   - engine-ns/frame and loop-ns/frame: within the timed engine passes,
//     the time of each burst's Engine.Process calls (two clock reads per
//     burst; with the benchmark's per-frame side lookup, Mix.SideOf, which
//     stands in for a second input port) and the rest of the loop (RX, TX, frees,
//     copying generated frames into mbufs, draining the sink).
//   - loop-only-ns/frame and loop-only-cpu-ns/frame (the thread's CPU
//     time, robust to a busy machine): after each engine pass the same
//     chunk goes through the loop again with the engine replaced by a
//     forwarder that decides nothing but loads the loop as the engine did
//     so far (same share of inputs forwarded in place, same number and
//     mean length of generated frames); loop-only-frames counts them. They
//     are not in FramesIn, Mpps or MppsCPU, which are the engine passes'.
func BenchDPDK(cfg DPDKBenchConfig) (BenchResult, error) {
	if cfg.Cores < 1 {
		return BenchResult{}, fmt.Errorf("middlebox: bench: %d cores", cfg.Cores)
	}
	io := "dpdk"
	if cfg.Ring {
		io = "ring"
	}
	vdevs := cfg.Vdevs
	if len(vdevs) == 0 {
		vdevs = benchVdevs(cfg.Cores)
	}
	if len(vdevs) != 2*cfg.Cores {
		return BenchResult{}, fmt.Errorf("middlebox: bench: %d vdevs for %d cores: want two per core", len(vdevs), cfg.Cores)
	}
	if len(vdevs) > dpdk.MaxPorts {
		// Refused before the EAL starts: past the limit a vdev fails to
		// probe, and the port is then missing ("no such device").
		return BenchResult{}, fmt.Errorf("middlebox: bench: %d cores need %d DPDK ports (two per core), more than this DPDK build's %d (RTE_MAX_ETHPORTS): at most %d cores",
			cfg.Cores, len(vdevs), dpdk.MaxPorts, dpdk.MaxPorts/2)
	}
	eal := cfg.EAL
	if len(eal) == 0 {
		eal = benchEAL(cfg.Cores, vdevs)
	}
	if err := dpdk.Init(eal); err != nil {
		return BenchResult{}, err
	}
	return runCores(BenchResult{IO: io, Cores: cfg.Cores, Mix: cfg.Mix}, func(k int, st *CoreStats) error {
		return benchDPDKCore(cfg, k, devName(vdevs[2*k]), devName(vdevs[2*k+1]), st)
	})
}

func benchVdevs(cores int) []string {
	var v []string
	for k := 0; k < cores; k++ {
		v = append(v, fmt.Sprintf("net_ring%d", 2*k), fmt.Sprintf("net_ring%d", 2*k+1))
	}
	return v
}

func benchEAL(cores int, vdevs []string) []string {
	eal := dpdk.VirtualArgs(fmt.Sprintf("swordbox-mbox-%d", os.Getpid()), vdevs...)
	for i := range eal {
		if eal[i] == "-m" && i+1 < len(eal) {
			eal[i+1] = fmt.Sprint(256 + 128*cores) // room for one pool per core
		}
	}
	return eal
}

func devName(vdev string) string {
	for i := 0; i < len(vdev); i++ {
		if vdev[i] == ',' {
			return vdev[:i]
		}
	}
	return vdev
}

// ringBench is one core of BenchDPDK: a mix, its engine, and the loop
// between an input port (loopback: what is sent on it comes back as its
// RX) and an output port drained as a sink.
type ringBench struct {
	mix  *Mix
	eng  *middlebox.Engine
	pool *dpdk.Mempool
	in   *dpdk.EthPort
	outp *dpdk.EthPort
	b    *dpdk.TxBatch
	d    *middlebox.DPDKLoop
	tr   *Trace
	next int
	ms   []*dpdk.Mbuf // C memory (dpdk.AllocMbufSlice)
	null nullEngine
	// engineNs is the time the engine took over the bursts of the timed
	// engine passes (the loop's Decided hook).
	engineNs int64
	// The loop's hooks of an engine pass, of a timed one, and of a
	// loop-only pass: built once, so that a pass allocates nothing.
	engine, timed, loopOnly middlebox.DPDKHooks
	// The engine passes' load: inputs, inputs forwarded in place,
	// generated frames and their bytes.
	engIn, engFwd, engGen, engGenLen uint64
}

// benchPoolSize is the number of mbufs of a benchmark core's pool.
const benchPoolSize = 8191

// benchChunk is how many frames are loaded into the input ring at once,
// within net_ring's 1024-slot rings.
const benchChunk = 512

// newRingBench sets core k up, with bursts of burst frames (0: the loop's
// default). Call it on a locked OS thread registered with
// dpdk.RegisterThread; close it on that thread.
func newRingBench(cfg DPDKBenchConfig, k int, inName, outName string, burst int) (_ *ringBench, err error) {
	mc := cfg.Mix
	mc.Server = byte(k + 1)
	mc.Seed += uint64(k)
	m, err := NewMix(mc)
	if err != nil {
		return nil, err
	}
	e, err := middlebox.New(m.EngineConfig())
	if err != nil {
		return nil, err
	}
	r := &ringBench{mix: m, eng: e, tr: NewTrace(4 * benchChunk), ms: dpdk.AllocMbufSlice(benchChunk)}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	if r.pool, err = dpdk.NewMempool(fmt.Sprintf("mbbench%d-%d", os.Getpid(), poolSeq.Add(1)), benchPoolSize, poolCache, 0); err != nil {
		return nil, err
	}
	if r.in, err = dpdk.OpenPort(inName, dpdk.PortConfig{Pool: r.pool}); err != nil {
		return nil, err
	}
	if r.outp, err = dpdk.OpenPort(outName, dpdk.PortConfig{Pool: r.pool}); err != nil {
		return nil, err
	}
	if r.b, err = dpdk.NewTxBatch(r.pool, [2]*dpdk.EthPort{r.outp, r.outp}, stock); err != nil {
		return nil, err
	}
	r.b.SetSink(r.outp)
	r.d, err = middlebox.NewDPDKLoop(middlebox.DPDKLoopConfig{Engine: e, Out: middlebox.NewOut(4096, 1<<18), Batch: r.b,
		TX: [2]int{0, 0}, RX: []*dpdk.EthPort{r.in}, Sides: []middlebox.Side{middlebox.ClientSide}, Burst: burst})
	if err != nil {
		return nil, err
	}
	// Frames take their side from the mix (one ring carries both sides).
	r.engine = middlebox.DPDKHooks{SideOf: m.SideOf}
	r.timed = middlebox.DPDKHooks{SideOf: m.SideOf, Decided: func(d time.Duration) { r.engineNs += int64(d) }}
	r.loopOnly = middlebox.DPDKHooks{Process: r.null.process}
	r.d.SetHooks(r.engine)
	r.null.tmpl = make([]byte, netio.MaxFrameSize)
	return r, nil
}

// close drains both rings, returns every mbuf and releases the pool. It
// fails if mbufs are missing from the pool then (a leak in the loop).
func (r *ringBench) close() error {
	if r.d != nil {
		r.null = nullEngine{den: 1} // drop every frame
		r.d.SetHooks(r.loopOnly)
		for r.d.Poll(0) { // the input ring, if a pass stopped half-way
		}
	}
	if r.b != nil {
		r.b.Close()
	}
	for _, p := range []*dpdk.EthPort{r.in, r.outp} {
		if p != nil {
			for n := p.RxBurst(0, r.ms); n > 0; n = p.RxBurst(0, r.ms) {
				dpdk.FreeBulk(r.ms[:n])
			}
			p.Close()
		}
	}
	dpdk.FreeMbufSlice(r.ms)
	var err error
	if r.pool != nil {
		if n := r.pool.Available(); n != benchPoolSize {
			err = fmt.Errorf("middlebox: bench: %d of %d mbufs back in the pool", n, benchPoolSize)
		}
		r.pool.Free()
	}
	return err
}

// nextChunk returns the next frames of the mix, in trace order.
func (r *ringBench) nextChunk() [][]byte {
	if r.next == len(r.tr.Frames) {
		r.mix.Fill(r.tr, 4*benchChunk)
		r.next = 0
	}
	n := min(benchChunk, len(r.tr.Frames)-r.next)
	f := r.tr.Frames[r.next : r.next+n]
	r.next += n
	return f
}

// load copies frames into mbufs and transmits them on the input port
// (untimed: the traffic source).
func (r *ringBench) load(frames [][]byte) error {
	ms := r.ms[:len(frames)]
	if err := r.pool.AllocBulk(ms); err != nil {
		return fmt.Errorf("middlebox: bench: %w", err)
	}
	for j, f := range frames {
		if err := ms[j].SetData(f); err != nil {
			dpdk.FreeBulk(ms)
			return fmt.Errorf("middlebox: bench: %w", err)
		}
	}
	sent := 0
	for sent < len(ms) {
		k := r.in.TxBurst(0, ms[sent:])
		if k == 0 {
			break
		}
		sent += k
	}
	if sent < len(ms) {
		dpdk.FreeBulk(ms[sent:])
		return fmt.Errorf("middlebox: bench: input ring took %d of %d frames", sent, len(ms))
	}
	return nil
}

// pass runs the loop until the input ring is empty and its output sent:
// with the engine (its time per burst added to engineNs when clock is
// set), or (loopOnly) with the null engine set to the engine's load so
// far. It returns the frames, wall and thread CPU nanoseconds.
func (r *ringBench) pass(loopOnly, clock bool) (frames uint64, wall, cpu int64) {
	d := r.d
	if loopOnly {
		r.null.den, r.null.fwd, r.null.gen = max(r.engIn, 1), r.engFwd, r.engGen
		r.null.tmpl = r.null.tmpl[:cap(r.null.tmpl)]
		if r.engGen > 0 {
			r.null.tmpl = r.null.tmpl[:min(int(r.engGenLen/r.engGen), cap(r.null.tmpl))]
		}
		d.SetHooks(r.loopOnly)
	} else if clock {
		d.SetHooks(r.timed)
	}
	s0 := d.Stats()
	t0, c0 := time.Now(), threadCPU()
	for d.Poll(0) {
	}
	d.Flush()
	cpu = threadCPU() - c0
	wall = int64(time.Since(t0))
	s := d.Stats()
	if !loopOnly {
		r.engIn += s.Frames - s0.Frames
		r.engFwd += s.Forwarded - s0.Forwarded
		r.engGen += s.Generated - s0.Generated
		r.engGenLen += s.GeneratedBytes - s0.GeneratedBytes
	}
	d.SetHooks(r.engine)
	return s.Frames - s0.Frames, wall, cpu
}

func benchDPDKCore(cfg DPDKBenchConfig, k int, inName, outName string, st *CoreStats) (err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if _, err := dpdk.RegisterThread(); err == nil { // else uncached: slower, still right
		defer dpdk.UnregisterThread()
	}
	r, err := newRingBench(cfg, k, inName, outName, 0)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := r.close(); err == nil {
			err = cerr
		}
	}()
	d := r.d
	// Alternate, on this one thread: load a chunk of the recorded mix into
	// the input ring (untimed: this is the traffic source), run the
	// middlebox loop until the ring is empty (timed, wall and thread CPU),
	// then load the same chunk again and run it through the loop alone.
	var engFrames, loopFrames, outN uint64
	var wall, cpu, loopWall, loopCPU int64
	deadline := time.Now().Add(cfg.Duration)
	for time.Now().Before(deadline) {
		frames := r.nextChunk()
		if err := r.load(frames); err != nil {
			return err
		}
		o0 := d.Stats().Out
		n, w, c := r.pass(false, true)
		engFrames, wall, cpu = engFrames+n, wall+w, cpu+c
		outN += d.Stats().Out - o0
		if err := r.load(frames); err != nil {
			return err
		}
		n, w, c = r.pass(true, false)
		loopFrames, loopWall, loopCPU = loopFrames+n, loopWall+w, loopCPU+c
	}
	c, ls := r.eng.Counters(), d.Stats()
	noMbuf, txDrops := ls.NoMbuf+r.b.NoMbuf(), r.b.TxDropped()
	*st = CoreStats{FramesIn: engFrames, FramesOut: outN, Busy: float64(wall) / 1e9, CPU: float64(cpu) / 1e9,
		Drops: c.TotalDrops() + noMbuf + txDrops + ls.Chained}
	per := func(ns int64, n uint64) float64 { return float64(ns) / float64(max(n, 1)) }
	st.Counters = fmt.Sprintf("%s no-mbuf=%d tx-drops=%d chained=%d engine-ns/frame=%.1f loop-ns/frame=%.1f loop-only-ns/frame=%.1f loop-only-cpu-ns/frame=%.1f loop-only-frames=%d",
		c.String(), noMbuf, txDrops, ls.Chained, per(r.engineNs, engFrames), per(wall-r.engineNs, engFrames),
		per(loopWall, loopFrames), per(loopCPU, loopFrames), loopFrames)
	if wall > 0 {
		st.Mpps = float64(engFrames) / (float64(wall) / 1e9) / 1e6
	}
	if cpu > 0 {
		st.MppsCPU = float64(engFrames) / (float64(cpu) / 1e9) / 1e6
	}
	return nil
}
