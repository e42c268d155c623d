package rnic

import (
	"fmt"
	"time"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/roce"
)

// VirtualHost drives a device in virtual time: it owns the clock, the wire
// and the event queue (testbed/sim implements it). Every call comes from
// the one goroutine that runs the simulation.
type VirtualHost interface {
	// Now is the virtual time in nanoseconds.
	Now() int64
	// Transmit puts a copy of frame on the device's link at virtual time
	// at (>= Now()); frame is not kept.
	Transmit(frame []byte, at int64)
	// Schedule asks for Fire(token) at virtual time at (>= Now()).
	Schedule(at int64, token uint32)
}

// Virtual is a device driven in virtual time instead of by goroutines:
// frames arrive by Receive, the timing model (VirtualTiming) decides when
// the requester and responder engines see them, the host's Schedule brings
// them back by Fire, and Tick drives the retransmission timers. The engines
// are the ones the goroutine-driven device runs (requester.go,
// responder.go), unchanged; only the shell differs. Verbs (PostSend, CQ
// polls, QP state changes) work as on any device, from the simulation's
// goroutine; the device's clock is the host's.
//
// Each received frame is one receive burst: the responder acknowledges
// per request (ACK coalescing needs a burst to coalesce over).
type Virtual struct {
	d    *Device
	h    VirtualHost
	c    *vclock
	st   rxState
	b    *txBatch
	bufs [][]byte // frames waiting for Fire, by token
	free []uint32

	// Set around each engine call: how the frames it emits are timed.
	inFire   bool
	outDelay int64
	outQP    int
	last     *QP
}

// LastQP is the QP the last Fire ran an engine of (nil if none): after it,
// only that QP's completion queues can have new completions.
func (v *Virtual) LastQP() *QP { return v.last }

// CQs returns the QP's send and receive completion queues.
func (q *QP) CQs() (send, recv *CQ) { return q.sendCQ, q.recvCQ }

// NewVirtual creates a device driven by h with timing model t. cfg.Timing
// and cfg.Workers must be unset: time is t's and there are no goroutines.
func NewVirtual(cfg Config, t VirtualTiming, h VirtualHost) (*Virtual, error) {
	if cfg.Timing != nil || cfg.Workers != 0 {
		return nil, fmt.Errorf("rnic %s: virtual device: Timing and Workers must be unset (the virtual timing model and the simulation replace them)", cfg.Name)
	}
	if err := cfg.defaults(); err != nil {
		return nil, fmt.Errorf("rnic %s: %w", cfg.Name, err)
	}
	v := &Virtual{h: h, c: newVClock(t)}
	d := &Device{cfg: cfg, epoch: time.Now(), stop: make(chan struct{}), clock: h.Now}
	d.port = &virtualPort{v: v}
	d.batches.New = func() any { return newTxBatch(d, 32) }
	v.d = d
	v.b = newTxBatch(d, 32)
	v.st = rxState{b: v.b, touched: make([]*QP, 0, 1)}
	return v, nil
}

// Device returns the device (verbs, regions, QPs, stats).
func (v *Virtual) Device() *Device { return v.d }

// TickPeriod is how often the host should call Tick (virtual ns).
func (v *Virtual) TickPeriod() int64 {
	p := v.d.cfg.Timeout / 4
	if p < 100*time.Microsecond {
		p = 100 * time.Microsecond
	}
	if m := v.d.cfg.MinRNRDelay; m > 0 && m < p {
		p = m
	}
	return int64(p)
}

// Receive takes a frame that arrived on the wire at the host's Now: the
// timing model books it and the host is asked to Fire it when the engine
// is to see it. Frames not for this device are counted and dropped.
func (v *Virtual) Receive(frame []byte) {
	now := v.h.Now()
	p := &v.st.pkt
	at := now
	if err := roce.ParseInto(p, frame); err == nil && p.IP.Dst() == v.d.cfg.IP {
		op := p.Opcode
		if isRequestOp(op) && v.d.QP(p.BTH.DestQP()) != nil {
			qi := int(p.BTH.DestQP()) - qpnBase
			kind, dm, key, va, n := vopPosted, false, uint32(0), uint64(0), uint32(0)
			switch {
			case isAtomicOp(op) && p.AtomicETH != nil:
				kind, key, va, n = vopAtomic, p.AtomicETH.RKey(), p.AtomicETH.VA(), 8
			case op == roce.OpRCReadRequest && p.RETH != nil:
				kind, key, va, n = vopRead, p.RETH.RKey(), p.RETH.VA(), p.RETH.DMALen()
			case p.RETH != nil:
				// The first packet of a WRITE names the range; later
				// packets of the message follow it in order.
				key, va, n = p.RETH.RKey(), p.RETH.VA(), p.RETH.DMALen()
			}
			if m := v.d.mrs.lookup(key); m != nil {
				dm = m.device
			}
			var out int64
			at, out = v.c.request(now, qi, kind, dm, key, va, n)
			v.h.Schedule(at, v.hold(frame, out, qi, p.BTH.DestQP()))
			return
		}
		at = v.c.response(now)
		v.h.Schedule(at, v.hold(frame, 0, -1, p.BTH.DestQP()))
		return
	}
	v.h.Schedule(at, v.hold(frame, 0, -1, 0))
}

// hold copies frame into a waiting buffer, with the response delay, the
// responder QP's index and the QPN behind it; the token is the buffer's
// index.
func (v *Virtual) hold(frame []byte, out int64, qi int, qpn uint32) uint32 {
	var tok uint32
	if n := len(v.free); n > 0 {
		tok = v.free[n-1]
		v.free = v.free[:n-1]
	} else {
		tok = uint32(len(v.bufs))
		v.bufs = append(v.bufs, make([]byte, 0, netio.MaxFrameSize+holdTail))
	}
	b := append(v.bufs[tok][:0], frame...)
	var tail [holdTail]byte
	putI64(tail[:8], out)
	putI64(tail[8:16], int64(qi))
	putI64(tail[16:], int64(qpn))
	v.bufs[tok] = append(b, tail[:]...)
	return tok
}

// holdTail is the size of what rides behind a held frame.
const holdTail = 24

// Fire runs the engine on the frame of token at the host's Now.
func (v *Virtual) Fire(token uint32) {
	b := v.bufs[token]
	n := len(b) - holdTail
	out, qi, qpn := getI64(b[n:n+8]), int(getI64(b[n+8:n+16])), uint32(getI64(b[n+16:]))
	v.inFire, v.outDelay, v.outQP = true, out, qi
	v.d.handleFrameTo(b[:n], v.h.Now(), &v.st, v.b)
	v.st.endBurst()
	v.inFire = false
	v.last = v.d.QP(qpn)
	v.free = append(v.free, token)
}

// Tick drives the retransmission and RNR timers of every QP at Now.
func (v *Virtual) Tick() {
	v.last = nil
	now := v.h.Now()
	p := v.d.qps.Load()
	if p == nil {
		return
	}
	for _, q := range *p {
		q.sq.mu.Lock()
		if q.sq.n > 0 {
			q.sq.tick(q, now, v.b)
		}
		q.sq.mu.Unlock()
	}
	v.b.flush()
}

// Close moves QPs still holding work to ERR.
func (v *Virtual) Close() error { return v.d.Close() }

func putI64(b []byte, x int64) {
	for i := 0; i < 8; i++ {
		b[i] = byte(uint64(x) >> (8 * i))
	}
}

func getI64(b []byte) int64 {
	var x uint64
	for i := 0; i < 8; i++ {
		x |= uint64(b[i]) << (8 * i)
	}
	return int64(x)
}

// virtualPort is a Virtual device's port: what the engines transmit goes to
// the host's wire at the time the timing model gives.
type virtualPort struct{ v *Virtual }

func (p *virtualPort) Name() string { return p.v.d.cfg.Name }

func (p *virtualPort) Recv([][]byte) (int, error) { return 0, netio.ErrClosed }

func (p *virtualPort) Send(frames [][]byte) (int, error) {
	v := p.v
	now := v.h.Now()
	for _, f := range frames {
		var at int64
		if v.inFire && v.outQP >= 0 {
			// A responder's output: after its memory access, and after
			// every earlier response of its QP.
			q := v.c.qpState(v.outQP)
			at = max(now+v.outDelay, q.lastOut)
			q.lastOut = at
		} else {
			// The requester: posted work, the rest of a window a response
			// opened, retransmissions.
			at = v.c.transmit(now)
		}
		v.h.Transmit(f, at)
	}
	return len(frames), nil
}

func (p *virtualPort) Close() error { return nil }
