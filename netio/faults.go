package netio

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// Faults configures the fault injector on one direction of a link (or on the
// send side of any Port, see WithFaults). Every probability is per frame, in
// [0, 1]. The zero value injects nothing.
//
// Decisions where the papers are silent, and fixed here so results are
// reproducible:
//   - For every frame the injector draws the same five uniforms from a PCG
//     generator seeded with Seed, in this order: drop, corrupt, duplicate,
//     delay, reorder. Changing one probability therefore does not shift the
//     outcomes of the others, and the same frame sequence with the same seed
//     meets the same faults. Corruption draws one more number (the bit).
//   - A dropped frame meets no other fault. A corrupted frame is corrupted
//     before it is duplicated, so both copies carry the same flipped bit.
//     Delay and reorder are decided for each copy separately, on the
//     original's draws for the first copy and on fresh draws for the second.
//   - Corrupt flips exactly one bit in the UDP payload (for a RoCEv2 frame:
//     BTH, extension headers, payload or ICRC), never in BTH byte 4, which
//     the ICRC masks out. CRC-32 detects every single-bit error, so a
//     corrupted RoCEv2 frame always fails its ICRC check while its Ethernet,
//     IP and UDP headers stay valid and it still reaches the RoCE layer. A
//     frame that is not UDP gets one bit flipped after its Ethernet header.
//   - Delay holds a frame for Delay. DelayProb is the chance a frame is
//     delayed; when Delay > 0 and DelayProb is 0 every frame is delayed (a
//     link with fixed latency). Delayed frames leave in the order they came.
//   - Reorder holds a frame back until ReorderDepth later frames have been
//     delivered (default 3), so it arrives up to ReorderDepth places late,
//     or until ReorderHold has passed (default 1ms), so that a reordered
//     frame at the end of a burst is late, never lost. Which frames are
//     dropped, duplicated, corrupted, delayed or held is a pure function of
//     the seed and the frame sequence; the arrival order is too, unless a
//     hold expires (set ReorderHold long for tests that compare orders).
type Faults struct {
	Drop         float64
	Duplicate    float64
	Reorder      float64
	ReorderDepth int
	ReorderHold  time.Duration
	Delay        time.Duration
	DelayProb    float64
	Corrupt      float64
	Seed         int64
}

// Defaults applied to a Faults with Reorder > 0.
const (
	DefaultReorderDepth = 3
	DefaultReorderHold  = time.Millisecond
)

// maxHeldFrames bounds the frames the injector holds back (delayed or
// reordered) per direction; beyond it frames are not held but delivered at
// once, so a misconfigured delay cannot eat the memory of the machine.
const maxHeldFrames = 1 << 16

// Validate reports a configuration error, if any.
func (f Faults) Validate() error {
	probs := []struct {
		name string
		p    float64
	}{{"drop", f.Drop}, {"duplicate", f.Duplicate}, {"reorder", f.Reorder}, {"delay probability", f.DelayProb}, {"corrupt", f.Corrupt}}
	for _, p := range probs {
		if !(p.p >= 0 && p.p <= 1) {
			return fmt.Errorf("netio: faults: %s probability %v not in [0, 1]", p.name, p.p)
		}
	}
	if f.ReorderDepth < 0 || f.Delay < 0 || f.ReorderHold < 0 {
		return fmt.Errorf("netio: faults: negative reorder depth, hold or delay")
	}
	return nil
}

// Active reports whether f injects anything.
func (f Faults) Active() bool {
	return f.Drop > 0 || f.Duplicate > 0 || f.Reorder > 0 || f.Delay > 0 || f.Corrupt > 0
}

// Stats counts what happened to the frames of one link direction. FramesIn
// counts frames offered by the sender, FramesOut frames handed to the
// receiver's queue (duplicates included). Overflow counts frames lost because
// the receive queue was full or the receiving port was closed. Held is a
// gauge: frames delayed or held back for reordering right now. At any time
//
//	FramesIn - Dropped + Duplicated = FramesOut + Overflow + Held
type Stats struct {
	FramesIn   uint64
	FramesOut  uint64
	Dropped    uint64
	Duplicated uint64
	Reordered  uint64
	Delayed    uint64
	Corrupted  uint64
	Overflow   uint64
	Held       uint64
}

func (s Stats) String() string {
	return fmt.Sprintf("in=%d out=%d dropped=%d duplicated=%d reordered=%d delayed=%d corrupted=%d overflow=%d held=%d",
		s.FramesIn, s.FramesOut, s.Dropped, s.Duplicated, s.Reordered, s.Delayed, s.Corrupted, s.Overflow, s.Held)
}

// counters are the live, atomically readable form of Stats.
type counters struct {
	in, out, dropped, duplicated, reordered, delayed, corrupted, overflow, held atomic.Uint64
}

func (c *counters) snapshot() Stats {
	return Stats{
		FramesIn: c.in.Load(), FramesOut: c.out.Load(), Dropped: c.dropped.Load(),
		Duplicated: c.duplicated.Load(), Reordered: c.reordered.Load(), Delayed: c.delayed.Load(),
		Corrupted: c.corrupted.Load(), Overflow: c.overflow.Load(), Held: c.held.Load(),
	}
}

// sink receives the frames the injector lets through. It takes ownership of
// buf (a buffer from the injector's pool) and must eventually give it back
// with injector.put. It reports false when it had to discard the frame
// (counted as Overflow, not as out).
type sink interface {
	deliver(buf []byte) bool
}

// heldFrame is a frame the injector holds back.
type heldFrame struct {
	buf   []byte
	due   int64  // release time (ns on the caller's clock)
	after uint64 // reorder: release once this many frames have been delivered
}

// injector is the deterministic core of fault injection: frames and the time
// go in, frames come out through the sink. It does no I/O, starts no
// goroutine and reads no clock; its owner serialises calls.
type injector struct {
	f     Faults
	on    bool
	rng   *rand.Rand
	pool  [][]byte
	delay []heldFrame // FIFO: constant delay keeps due times ordered
	dhead int
	held  []heldFrame // reordered frames, few
	// delivered counts frames handed to the sink, for reorder depth.
	delivered uint64
	c         *counters
	out       sink
}

func newInjector(f Faults, c *counters, out sink) *injector {
	in := &injector{c: c, out: out}
	in.setFaults(f)
	return in
}

func (in *injector) setFaults(f Faults) {
	if f.Reorder > 0 && f.ReorderDepth == 0 {
		f.ReorderDepth = DefaultReorderDepth
	}
	if f.Reorder > 0 && f.ReorderHold == 0 {
		f.ReorderHold = DefaultReorderHold
	}
	if f.Delay > 0 && f.DelayProb == 0 {
		f.DelayProb = 1
	}
	in.f = f
	in.on = f.Active()
	seed := uint64(f.Seed)
	in.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// get returns an empty pooled buffer with capacity MaxFrameSize.
func (in *injector) get() []byte {
	if n := len(in.pool); n > 0 {
		b := in.pool[n-1]
		in.pool = in.pool[:n-1]
		return b[:0]
	}
	return make([]byte, 0, MaxFrameSize)
}

// put returns a buffer to the pool.
func (in *injector) put(b []byte) { in.pool = append(in.pool, b[:0]) }

// push offers one frame (copied) at time now.
func (in *injector) push(now int64, frame []byte) {
	in.c.in.Add(1)
	buf := append(in.get(), frame...)
	if !in.on {
		in.emit(buf)
		return
	}
	f := &in.f
	rDrop, rCorrupt, rDup, rDelay, rReorder := in.rng.Float64(), in.rng.Float64(), in.rng.Float64(), in.rng.Float64(), in.rng.Float64()
	if rDrop < f.Drop {
		in.c.dropped.Add(1)
		in.put(buf)
		return
	}
	if rCorrupt < f.Corrupt {
		corruptFrame(buf, in.rng.Uint64())
		in.c.corrupted.Add(1)
	}
	var dup []byte
	if rDup < f.Duplicate {
		dup = append(in.get(), buf...)
		in.c.duplicated.Add(1)
	}
	in.route(now, buf, rDelay, rReorder)
	if dup != nil {
		in.route(now, dup, in.rng.Float64(), in.rng.Float64())
	}
}

// route delays, holds back or delivers one copy.
func (in *injector) route(now int64, buf []byte, rDelay, rReorder float64) {
	f := &in.f
	roomy := len(in.delay)-in.dhead+len(in.held) < maxHeldFrames
	switch {
	case rDelay < f.DelayProb && f.Delay > 0 && roomy:
		in.c.delayed.Add(1)
		in.c.held.Add(1)
		in.delay = append(in.delay, heldFrame{buf: buf, due: now + int64(f.Delay)})
	case rReorder < f.Reorder && roomy:
		in.c.reordered.Add(1)
		in.c.held.Add(1)
		in.held = append(in.held, heldFrame{buf: buf, due: now + int64(f.ReorderHold), after: in.delivered + uint64(f.ReorderDepth)})
	default:
		in.emit(buf)
	}
}

// emit hands a frame to the sink and releases reordered frames whose depth
// has been reached.
func (in *injector) emit(buf []byte) {
	in.delivered++
	if in.out.deliver(buf) {
		in.c.out.Add(1)
	} else {
		in.c.overflow.Add(1)
	}
	for i := 0; i < len(in.held); {
		if in.delivered >= in.held[i].after {
			h := in.held[i]
			in.removeHeld(i)
			in.c.held.Add(^uint64(0))
			in.emit(h.buf)
			i = 0 // emit may have changed held
			continue
		}
		i++
	}
}

func (in *injector) removeHeld(i int) {
	copy(in.held[i:], in.held[i+1:])
	in.held[len(in.held)-1] = heldFrame{}
	in.held = in.held[:len(in.held)-1]
}

// release delivers every held frame that is due at now.
func (in *injector) release(now int64) {
	for in.dhead < len(in.delay) && in.delay[in.dhead].due <= now {
		h := in.delay[in.dhead]
		in.delay[in.dhead] = heldFrame{}
		in.dhead++
		in.c.held.Add(^uint64(0))
		in.emit(h.buf)
	}
	if in.dhead == len(in.delay) {
		in.delay, in.dhead = in.delay[:0], 0
	} else if in.dhead > 1024 && in.dhead*2 > len(in.delay) {
		n := copy(in.delay, in.delay[in.dhead:])
		clear(in.delay[n:])
		in.delay, in.dhead = in.delay[:n], 0
	}
	for i := 0; i < len(in.held); {
		if in.held[i].due <= now {
			h := in.held[i]
			in.removeHeld(i)
			in.c.held.Add(^uint64(0))
			in.emit(h.buf)
			i = 0
			continue
		}
		i++
	}
}

// nextDue returns the earliest time a held frame becomes due, and false when
// nothing is held.
func (in *injector) nextDue() (int64, bool) {
	var t int64
	ok := false
	if in.dhead < len(in.delay) {
		t, ok = in.delay[in.dhead].due, true
	}
	for _, h := range in.held {
		if !ok || h.due < t {
			t, ok = h.due, true
		}
	}
	return t, ok
}

// flush delivers every held frame at once, in due order per queue.
func (in *injector) flush() {
	in.release(1<<63 - 1)
}

// Offsets used to find the UDP payload of a frame.
const (
	ethHeaderLen    = 14
	ethTypeOffset   = 12
	vlanHeaderLen   = 4
	etherTypeIPv4   = 0x0800
	etherTypeIPv6   = 0x86dd
	etherTypeVLAN   = 0x8100
	etherTypeQinQ   = 0x88a8
	ipv4ProtoOffset = 9
	ipv6NextOffset  = 6
	ipv6HeaderLen   = 40
	ipProtoUDP      = 17
	udpHeaderLen    = 8
	// bthMaskedByte is the BTH byte (FECN, BECN, reserved) the ICRC does
	// not cover; flipping a bit there would not break the ICRC.
	bthMaskedByte = 4
)

// udpPayloadOffset returns the offset of the UDP payload in an Ethernet
// frame, or -1 when the frame is not a well-formed UDP over IPv4/IPv6 frame.
func udpPayloadOffset(frame []byte) int {
	off := ethHeaderLen
	if len(frame) < off {
		return -1
	}
	et := int(frame[ethTypeOffset])<<8 | int(frame[ethTypeOffset+1])
	for et == etherTypeVLAN || et == etherTypeQinQ {
		if len(frame) < off+vlanHeaderLen {
			return -1
		}
		et = int(frame[off+2])<<8 | int(frame[off+3])
		off += vlanHeaderLen
	}
	switch et {
	case etherTypeIPv4:
		if len(frame) < off+20 {
			return -1
		}
		ihl := int(frame[off]&0x0f) * 4
		if ihl < 20 || frame[off+ipv4ProtoOffset] != ipProtoUDP {
			return -1
		}
		off += ihl
	case etherTypeIPv6:
		if len(frame) < off+ipv6HeaderLen || frame[off+ipv6NextOffset] != ipProtoUDP {
			return -1
		}
		off += ipv6HeaderLen
	default:
		return -1
	}
	off += udpHeaderLen
	if off > len(frame) {
		return -1
	}
	return off
}

// corruptFrame flips one bit chosen by r (see Faults). Frames with no byte
// to corrupt are left alone.
func corruptFrame(frame []byte, r uint64) {
	start := udpPayloadOffset(frame)
	if start < 0 {
		start = ethHeaderLen
	}
	if start >= len(frame) {
		if len(frame) == 0 {
			return
		}
		start = 0
	}
	span := uint64(len(frame) - start)
	pos := int(r % span)
	if pos == bthMaskedByte && span > 1 && start == udpPayloadOffset(frame) {
		pos = (pos + 1) % int(span)
	}
	frame[start+pos] ^= 1 << ((r >> 32) % 8)
}
