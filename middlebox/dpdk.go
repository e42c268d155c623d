//go:build dpdk

package middlebox

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/netio/dpdk"
)

// dpdkBurst is the number of mbufs moved per RX burst unless configured.
const dpdkBurst = 32

// maxDPDKBurst bounds DPDKConfig.Burst.
const maxDPDKBurst = 512

// dpdkStock is how many empty mbufs the loop keeps at hand for generated
// frames (ACKs, NAKs): refilled in one bulk allocation per burst.
const dpdkStock = 256

// dpdkPoolCache is the per-lcore cache of the loop's mempool; the loop's
// thread registers as an lcore (dpdk.RegisterThread) so that allocations
// and frees hit it, in LIFO order, instead of the pool's shared ring.
const dpdkPoolCache = 256

// mbufSlice returns n mbuf pointers in memory allocated as plain words.
// The pointers are to DPDK memory, never to Go memory, so the collector
// need not see them; and cgo's pointer check, which walks the whole
// allocation of every slice passed to C looking for Go pointers, then
// skips it instead of costing more than the rest of the data path.
func mbufSlice(n int) []*dpdk.Mbuf {
	w := make([]uintptr, n)
	return unsafe.Slice((**dpdk.Mbuf)(unsafe.Pointer(unsafe.SliceData(w))), n)
}

// dpdkCore is the zero-copy loop of one engine over DPDK ports: it receives
// bursts of mbufs, lets the engine rewrite each frame inside its mbuf,
// transmits the rewritten mbuf itself (trimmed when a CMP_SWAP became a
// shorter WRITE), copies generated frames (ACKs, NAKs, replays) into
// mbufs (the consumed input's own mbuf first, then a stock of empty ones),
// and frees what the engine dropped or consumed.
//
// Per burst it makes one cgo call (dpdk.TxBatch.FlushRx): transmit and
// free the previous burst's output, refill the stock, receive this burst.
// Nothing allocates after the first poll. Reusing a consumed input's mbuf
// within the burst relies on Out's contract: a generated frame lives in
// Out's arena, never in an input's bytes (TestDPDKLoopMatchesEngine holds
// the loop's output equal to the engine's).
type dpdkCore struct {
	eng  *Engine
	out  *Out
	b    *dpdk.TxBatch
	slot [2]int // TX list of the batch by Side
	rx   []*dpdk.EthPort
	side []Side // side of each rx port; sideByIP: decide per frame
	// sideByIP, for the benchmark's single input ring: a frame whose IPv4
	// source is a managed server arrives on the server side.
	sideByIP bool
	burst    int

	// Benchmark only: null replaces the engine (the loop-only pass), and
	// clock times the engine's share of each burst into engineNs.
	null     *nullEngine
	clock    bool
	engineNs int64

	in      []*dpdk.Mbuf // own allocation: cgo refuses memory that also holds Go pointers
	owner   []int        // Out index where input i's frames start
	frames  uint64
	outN    uint64
	fwdN    uint64 // inputs forwarded in their own mbuf
	genN    uint64 // generated frames
	genLen  uint64 // their bytes
	spareN  uint64 // generated frames sent in a consumed input's mbuf
	noMbuf  uint64
	chained uint64 // chained input frames dropped
}

func (d *dpdkCore) sideOf(f []byte) Side {
	if len(f) >= 30 && f[12] == 0x08 && f[13] == 0 {
		if _, ok := d.eng.serverOf(f[26:30]); ok {
			return ServerSide
		}
	}
	return ClientSide
}

// poll runs one round: every rx port once. It reports whether any frame
// was received. The output of a burst leaves with the next FlushRx, which
// poll's next call (or this one, for the next port) makes at once; call
// flush when done.
func (d *dpdkCore) poll(now int64) bool {
	if d.in == nil {
		if d.burst <= 0 {
			d.burst = dpdkBurst
		}
		d.in = mbufSlice(d.burst)
		d.owner = make([]int, d.burst+1)
	}
	got := false
	for pi, p := range d.rx {
		n := d.b.FlushRx(p, 0, d.in)
		if n == 0 {
			continue
		}
		got = true
		d.process(now, d.side[pi%len(d.side)], d.in[:n])
	}
	return got
}

// flush sends what the last burst left queued.
func (d *dpdkCore) flush() { d.b.Flush() }

// process runs the engine on one burst and queues its output.
func (d *dpdkCore) process(now int64, side Side, in []*dpdk.Mbuf) {
	o := d.out
	o.Reset()
	var t0 time.Time
	if d.clock {
		t0 = time.Now()
	}
	for i, m := range in {
		d.owner[i] = o.Len()
		f := m.Data()
		if m.Segments() != 1 {
			// A chained frame (a PMD's scatter RX; not with the pool's
			// data room of MaxFrameSize): the engine would see only its
			// first segment. Dropped (freed below: no output).
			d.chained++
			continue
		}
		s := side
		if d.null != nil {
			d.null.process(s, f, o)
			continue
		}
		if d.sideByIP {
			s = d.sideOf(f)
		}
		d.eng.Process(now, s, f, o)
	}
	if d.clock {
		d.engineNs += int64(time.Since(t0))
	}
	d.owner[len(in)] = o.Len()
	d.frames += uint64(len(in))
	d.outN += uint64(o.Len())
	for i, m := range in {
		lo, hi := d.owner[i], d.owner[i+1]
		fwd := false
		for j := lo; j < hi; j++ {
			if o.FromInput[j] {
				fwd = true
				break
			}
		}
		spare := m // the input's mbuf, when the engine consumed the frame
		if fwd {
			spare = nil
		}
		used := false
		for j := lo; j < hi; j++ {
			f, sl := o.Frames[j], d.slot[o.Sides[j]]
			if o.FromInput[j] && !used {
				used = true
				d.fwdN++
				if n := m.Len(); len(f) != n { // single segment: checked above
					if buf := m.Data(); len(f) < n && len(f) > 0 && &f[0] == &buf[0] {
						_ = m.Trim(n - len(f)) // a CMP_SWAP became a shorter WRITE in place
					} else {
						_ = m.SetData(f)
					}
				}
				d.b.Queue(sl, m)
				continue
			}
			d.genN++
			d.genLen += uint64(len(f))
			g := spare
			if g != nil {
				spare = nil
				d.spareN++
			} else if g = d.b.Take(); g == nil {
				d.noMbuf++
				continue
			}
			if g.SetData(f) != nil { // a frame too long for the mbuf
				d.b.Drop(g)
				d.noMbuf++
				continue
			}
			d.b.Queue(sl, g)
		}
		if spare != nil {
			d.b.Drop(spare)
		}
	}
}

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

func (n *nullEngine) process(s Side, f []byte, o *Out) {
	if n.fwdAcc += n.fwd; n.fwdAcc >= n.den {
		n.fwdAcc -= n.den
		if len(o.Frames) < cap(o.Frames) {
			o.Frames = append(o.Frames, f)
			o.Sides = append(o.Sides, s.other())
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

// RunDPDK runs one engine (shard 0 of s) between two DPDK ports on the
// calling goroutine's OS thread until ctx is done. Several cores need one
// port pair each (RSS is not used): run one RunDPDK per pair.
func RunDPDK(ctx context.Context, s *Sharded, cfg DPDKConfig) error {
	if s.Shards() != 1 {
		return fmt.Errorf("middlebox: DPDK run drives one engine per port pair; got %d shards", s.Shards())
	}
	if cfg.Burst < 0 || cfg.Burst > maxDPDKBurst {
		return fmt.Errorf("middlebox: DPDK run: burst %d: want 1 to %d", cfg.Burst, maxDPDKBurst)
	}
	if err := dpdk.Init(cfg.EAL); err != nil {
		return err
	}
	pool, err := dpdk.NewMempool(fmt.Sprintf("mbox%d-%d", os.Getpid(), poolSeq.Add(1)), 8191, dpdkPoolCache, 0)
	if err != nil {
		return err
	}
	cp, err := dpdk.OpenPort(cfg.ClientPort, dpdk.PortConfig{Pool: pool})
	if err != nil {
		return fmt.Errorf("middlebox: client side: %w", err)
	}
	defer cp.Close()
	sp, err := dpdk.OpenPort(cfg.ServerPort, dpdk.PortConfig{Pool: pool})
	if err != nil {
		return fmt.Errorf("middlebox: server side: %w", err)
	}
	defer sp.Close()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if _, err := dpdk.RegisterThread(); err == nil { // else uncached: slower, still right
		defer dpdk.UnregisterThread()
	}
	b, err := dpdk.NewTxBatch(pool, [2]*dpdk.EthPort{cp, sp}, dpdkStock)
	if err != nil {
		return fmt.Errorf("middlebox: %w", err)
	}
	defer b.Close()
	sh := s.shards[0]
	d := &dpdkCore{eng: sh.eng, out: sh.out, b: b, slot: [2]int{0, 1}, burst: cfg.Burst,
		rx: []*dpdk.EthPort{cp, sp}, side: []Side{ClientSide, ServerSide}}
	start := time.Now()
	idle := 0
	for ctx.Err() == nil {
		sh.mu.Lock()
		got := d.poll(int64(time.Since(start)))
		sh.mu.Unlock()
		if got {
			idle = 0
		} else if idle++; idle > 1024 {
			time.Sleep(20 * time.Microsecond)
		}
	}
	d.flush()
	return nil
}

var poolSeq atomic.Uint64 // mempool names must be unique in the process

// BenchDPDK replays the mix through the engine's zero-copy DPDK loop. Per
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
//     burst; with the benchmark's per-frame side lookup, which stands in
//     for a second input port) and the rest of the loop (RX, TX, frees,
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
	eng  *Engine
	pool *dpdk.Mempool
	in   *dpdk.EthPort
	outp *dpdk.EthPort
	d    *dpdkCore
	tr   *Trace
	next int
	ms   []*dpdk.Mbuf
	null nullEngine
	// The engine passes' load: inputs, inputs forwarded in place,
	// generated frames and their bytes.
	engIn, engFwd, engGen, engGenLen uint64
}

// benchPoolSize is the number of mbufs of a benchmark core's pool.
const benchPoolSize = 8191

// benchChunk is how many frames are loaded into the input ring at once,
// within net_ring's 1024-slot rings.
const benchChunk = 512

// newRingBench sets core k up. Call it on a locked OS thread registered
// with dpdk.RegisterThread; close it on that thread.
func newRingBench(cfg DPDKBenchConfig, k int, inName, outName string) (_ *ringBench, err error) {
	mc := cfg.Mix
	mc.Server = byte(k + 1)
	mc.Seed += uint64(k)
	m, err := NewMix(mc)
	if err != nil {
		return nil, err
	}
	e, err := New(m.EngineConfig())
	if err != nil {
		return nil, err
	}
	r := &ringBench{mix: m, eng: e, tr: NewTrace(4 * benchChunk), ms: mbufSlice(benchChunk)}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	if r.pool, err = dpdk.NewMempool(fmt.Sprintf("mbox%d-%d", os.Getpid(), poolSeq.Add(1)), benchPoolSize, dpdkPoolCache, 0); err != nil {
		return nil, err
	}
	if r.in, err = dpdk.OpenPort(inName, dpdk.PortConfig{Pool: r.pool}); err != nil {
		return nil, err
	}
	if r.outp, err = dpdk.OpenPort(outName, dpdk.PortConfig{Pool: r.pool}); err != nil {
		return nil, err
	}
	b, err := dpdk.NewTxBatch(r.pool, [2]*dpdk.EthPort{r.outp, r.outp}, dpdkStock)
	if err != nil {
		return nil, err
	}
	b.SetSink(r.outp)
	r.d = &dpdkCore{eng: e, out: NewOut(4096, 1<<18), b: b, slot: [2]int{0, 0},
		rx: []*dpdk.EthPort{r.in}, side: []Side{ClientSide}, sideByIP: true}
	r.null.tmpl = make([]byte, netio.MaxFrameSize)
	return r, nil
}

// close drains both rings, returns every mbuf and releases the pool. It
// fails if mbufs are missing from the pool then (a leak in the loop).
func (r *ringBench) close() error {
	if r.d != nil {
		r.null = nullEngine{den: 1} // drop every frame
		r.d.null = &r.null
		for r.d.poll(0) { // the input ring, if a pass stopped half-way
		}
		r.d.b.Close()
	}
	for _, p := range []*dpdk.EthPort{r.in, r.outp} {
		if p != nil {
			for n := p.RxBurst(0, r.ms); n > 0; n = p.RxBurst(0, r.ms) {
				dpdk.FreeBulk(r.ms[:n])
			}
			p.Close()
		}
	}
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
// with the engine, or (loopOnly) with the null engine set to the engine's
// load so far. It returns the frames, wall and thread CPU nanoseconds.
func (r *ringBench) pass(loopOnly bool) (frames uint64, wall, cpu int64) {
	d := r.d
	d.null = nil
	if loopOnly {
		r.null.den, r.null.fwd, r.null.gen = max(r.engIn, 1), r.engFwd, r.engGen
		r.null.tmpl = r.null.tmpl[:cap(r.null.tmpl)]
		if r.engGen > 0 {
			r.null.tmpl = r.null.tmpl[:min(int(r.engGenLen/r.engGen), cap(r.null.tmpl))]
		}
		d.null = &r.null
	}
	f0, fwd0, gen0, len0 := d.frames, d.fwdN, d.genN, d.genLen
	t0, c0 := time.Now(), threadCPU()
	for d.poll(0) {
	}
	d.flush()
	cpu = threadCPU() - c0
	wall = int64(time.Since(t0))
	if !loopOnly {
		r.engIn += d.frames - f0
		r.engFwd += d.fwdN - fwd0
		r.engGen += d.genN - gen0
		r.engGenLen += d.genLen - len0
	}
	d.null = nil
	return d.frames - f0, wall, cpu
}

func benchDPDKCore(cfg DPDKBenchConfig, k int, inName, outName string, st *CoreStats) (err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if _, err := dpdk.RegisterThread(); err == nil { // else uncached: slower, still right
		defer dpdk.UnregisterThread()
	}
	r, err := newRingBench(cfg, k, inName, outName)
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
		o0 := d.outN
		d.clock = true
		n, w, c := r.pass(false)
		d.clock = false
		engFrames, wall, cpu = engFrames+n, wall+w, cpu+c
		outN += d.outN - o0
		if err := r.load(frames); err != nil {
			return err
		}
		n, w, c = r.pass(true)
		loopFrames, loopWall, loopCPU = loopFrames+n, loopWall+w, loopCPU+c
	}
	c := r.eng.Counters()
	noMbuf, txDrops := d.noMbuf+d.b.NoMbuf(), d.b.TxDropped()
	*st = CoreStats{FramesIn: engFrames, FramesOut: outN, Busy: float64(wall) / 1e9, CPU: float64(cpu) / 1e9,
		Drops: c.TotalDrops() + noMbuf + txDrops + d.chained}
	per := func(ns int64, n uint64) float64 { return float64(ns) / float64(max(n, 1)) }
	st.Counters = fmt.Sprintf("%s no-mbuf=%d tx-drops=%d chained=%d engine-ns/frame=%.1f loop-ns/frame=%.1f loop-only-ns/frame=%.1f loop-only-cpu-ns/frame=%.1f loop-only-frames=%d",
		c.String(), noMbuf, txDrops, d.chained, per(d.engineNs, engFrames), per(wall-d.engineNs, engFrames),
		per(loopWall, loopFrames), per(loopCPU, loopFrames), loopFrames)
	if wall > 0 {
		st.Mpps = float64(engFrames) / (float64(wall) / 1e9) / 1e6
	}
	if cpu > 0 {
		st.MppsCPU = float64(engFrames) / (float64(cpu) / 1e9) / 1e6
	}
	return nil
}
