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
// Out's arena, never in an input's bytes (package mbbench's
// TestDPDKLoopMatchesEngine holds the loop's output equal to the engine's).
type dpdkCore struct {
	eng   *Engine
	out   *Out
	b     *dpdk.TxBatch
	slot  [2]int // TX list of the batch by Side
	rx    []*dpdk.EthPort
	side  []Side // side of each rx port
	burst int
	hooks DPDKHooks // zero for RunDPDK

	in    []*dpdk.Mbuf // own allocation: cgo refuses memory that also holds Go pointers
	owner []int        // Out index where input i's frames start
	st    DPDKLoopStats
}

// DPDKLoopStats counts what a DPDK loop did.
type DPDKLoopStats struct {
	Frames         uint64 // input frames received
	Out            uint64 // frames the engine output
	Forwarded      uint64 // inputs sent on in their own mbuf
	Generated      uint64 // generated frames (ACKs, NAKs, replays) copied into mbufs
	GeneratedBytes uint64 // their bytes
	Spare          uint64 // generated frames sent in a consumed input's mbuf
	NoMbuf         uint64 // output frames lost for want of an mbuf (or too long for one)
	Chained        uint64 // chained (multi-segment) input frames dropped
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

// process runs the engine on one burst and queues its output, input by
// input in arrival order.
func (d *dpdkCore) process(now int64, side Side, in []*dpdk.Mbuf) {
	d.decide(now, side, in)
	for i, m := range in {
		d.emit(m, d.owner[i], d.owner[i+1])
	}
}

// decide resets the engine's output and lets the engine (or the
// Process hook) decide every frame of the burst; owner[i] becomes the
// index of input i's first output frame, owner[len(in)] the end. A
// chained frame is not decided: the engine reads a frame as one slice, and
// a chain would show it only its first segment (a PMD's scatter RX; not
// with the pool's data room of MaxFrameSize), so it has no output and emit
// frees it.
func (d *dpdkCore) decide(now int64, side Side, in []*dpdk.Mbuf) {
	o := d.out
	o.Reset()
	var t0 time.Time
	if d.hooks.Decided != nil {
		t0 = time.Now()
	}
	for i, m := range in {
		d.owner[i] = o.Len()
		f := m.Data()
		if m.Segments() != 1 {
			d.st.Chained++
			continue
		}
		switch {
		case d.hooks.Process != nil:
			d.hooks.Process(side, f, o)
		case d.hooks.SideOf != nil:
			d.eng.Process(now, d.hooks.SideOf(f), f, o)
		default:
			d.eng.Process(now, side, f, o)
		}
	}
	if d.hooks.Decided != nil {
		d.hooks.Decided(time.Since(t0))
	}
	d.owner[len(in)] = o.Len()
	d.st.Frames += uint64(len(in))
	d.st.Out += uint64(o.Len())
}

// emit queues input m's output frames, Out's frames lo to hi: the first
// frame the engine forwarded leaves in m itself (sendInPlace), every other
// frame is copied into an mbuf (sendGenerated), m itself first if the
// engine consumed it; an m that carries nothing out is freed.
func (d *dpdkCore) emit(m *dpdk.Mbuf, lo, hi int) {
	o := d.out
	spare := m // the input's mbuf, when the engine consumed the frame
	if forwarded(o, lo, hi) {
		spare = nil
	}
	used := false
	for j := lo; j < hi; j++ {
		f, slot := o.Frames[j], d.slot[o.Sides[j]]
		if o.FromInput[j] && !used {
			used = true
			d.sendInPlace(m, f, slot)
			continue
		}
		d.sendGenerated(f, slot, spare)
		spare = nil // the first generated frame takes it
	}
	if spare != nil {
		d.b.Drop(spare)
	}
}

// forwarded reports whether the engine forwarded its input among Out's
// frames lo to hi (rather than consuming it or dropping it).
func forwarded(o *Out, lo, hi int) bool {
	for j := lo; j < hi; j++ {
		if o.FromInput[j] {
			return true
		}
	}
	return false
}

// sendInPlace queues a forwarded frame f in its own (single-segment) mbuf
// m: rewritten in place, and trimmed when it became shorter at the same
// start (a CMP_SWAP became a WRITE); any other change of bounds points the
// mbuf's data at f.
func (d *dpdkCore) sendInPlace(m *dpdk.Mbuf, f []byte, slot int) {
	d.st.Forwarded++
	if n := m.Len(); len(f) != n {
		if buf := m.Data(); len(f) < n && len(f) > 0 && &f[0] == &buf[0] {
			_ = m.Trim(n - len(f))
		} else {
			_ = m.SetData(f)
		}
	}
	d.b.Queue(slot, m)
}

// sendGenerated queues a copy of the generated frame f in spare (a
// consumed input's mbuf) or, when that is nil, in an mbuf of the stock. A
// frame that finds no mbuf, or one too long for it, is lost and counted
// (NoMbuf).
func (d *dpdkCore) sendGenerated(f []byte, slot int, spare *dpdk.Mbuf) {
	d.st.Generated++
	d.st.GeneratedBytes += uint64(len(f))
	g := spare
	if g != nil {
		d.st.Spare++
	} else if g = d.b.Take(); g == nil {
		d.st.NoMbuf++
		return
	}
	if g.SetData(f) != nil {
		d.b.Drop(g)
		d.st.NoMbuf++
		return
	}
	d.b.Queue(slot, g)
}

// DPDKLoop is one engine's zero-copy loop over DPDK ports, the loop
// RunDPDK runs, for a caller that sets up the EAL, the ports, the mempool
// and the thread itself: package mbbench's benchmark and its tests. Call
// its methods from one OS thread, locked and preferably registered as a
// DPDK lcore (dpdk.RegisterThread).
type DPDKLoop struct{ c dpdkCore }

// DPDKLoopConfig says what a DPDKLoop moves frames between.
type DPDKLoopConfig struct {
	Engine *Engine
	Out    *Out          // the engine's output, reset every burst
	Batch  *dpdk.TxBatch // transmits, frees and keeps the stock of empty mbufs
	TX     [2]int        // the batch's TX list of each Side
	RX     []*dpdk.EthPort
	Sides  []Side // the side each RX port's frames arrive on
	Burst  int    // frames per RX burst (0: 32)
}

// DPDKHooks change how the loop decides a burst, for a caller that
// measures the loop; RunDPDK sets none.
type DPDKHooks struct {
	// SideOf, when set, says which side each frame arrived on, instead of
	// its port (a benchmark that feeds both sides through one ring).
	SideOf func(frame []byte) Side
	// Process, when set, stands in for the engine: it is called with the
	// port's side for every frame and appends that frame's output to o (a
	// loop-only measurement).
	Process func(s Side, frame []byte, o *Out)
	// Decided, when set, receives the time the engine (or Process) took
	// over each burst: two clock reads per burst.
	Decided func(time.Duration)
}

// NewDPDKLoop returns the loop cfg describes.
func NewDPDKLoop(cfg DPDKLoopConfig) (*DPDKLoop, error) {
	if cfg.Engine == nil || cfg.Out == nil || cfg.Batch == nil || len(cfg.RX) == 0 || len(cfg.Sides) == 0 {
		return nil, fmt.Errorf("middlebox: DPDK loop: need an engine, an Out, a TX batch, RX ports and their sides")
	}
	if cfg.Burst < 0 || cfg.Burst > maxDPDKBurst {
		return nil, fmt.Errorf("middlebox: DPDK loop: burst %d: want 1 to %d", cfg.Burst, maxDPDKBurst)
	}
	return &DPDKLoop{c: dpdkCore{eng: cfg.Engine, out: cfg.Out, b: cfg.Batch, slot: cfg.TX, rx: cfg.RX, side: cfg.Sides, burst: cfg.Burst}}, nil
}

// SetHooks replaces the loop's hooks (DPDKHooks{} for none).
func (l *DPDKLoop) SetHooks(h DPDKHooks) { l.c.hooks = h }

// Poll receives one burst from every RX port and processes it; the output
// leaves with the next Poll or Flush. It reports whether any frame came.
// now is the engine's clock (nanoseconds).
func (l *DPDKLoop) Poll(now int64) bool { return l.c.poll(now) }

// Flush sends what the last burst left queued.
func (l *DPDKLoop) Flush() { l.c.flush() }

// Stats returns the loop's counts so far.
func (l *DPDKLoop) Stats() DPDKLoopStats { return l.c.st }

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
