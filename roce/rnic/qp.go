package rnic

import (
	"fmt"
	"sync/atomic"

	"github.com/swordbox/swordbox/roce"
	"github.com/swordbox/swordbox/roce/verbs"
)

// MaxSGE is the number of scatter/gather elements a work request may carry.
const MaxSGE = 4

// Path is what a QP knows about its peer once it is in RTR: the addresses
// rdma_cm exchanges.
type Path struct {
	RemoteQPN uint32
	RemoteMAC [6]byte
	RemoteIP  [4]byte
	// RemotePSN is the PSN the peer's requester starts at: this QP's
	// responder expects it first.
	RemotePSN uint32
	// MTU is the path MTU (256, 512, 1024, 2048 or 4096); zero means the
	// device MTU.
	MTU int
}

// QP is a reliable-connected queue pair; it implements verbs.QP.
//
// Its requester (send queue) and responder (receive side) are independent
// engines with their own locks; see requester.go and responder.go.
type QP struct {
	dev    *Device
	qpn    uint32
	sendCQ *CQ
	recvCQ *CQ
	sigAll bool
	state  atomic.Uint32

	// Immutable once in RTR.
	path   Path
	mtu    uint32
	udpSrc uint16

	ipID atomic.Uint32

	sq sendQueue
	rq recvSide
}

var _ verbs.QP = (*QP)(nil)

// QPN returns the queue pair number.
func (q *QP) QPN() uint32 { return q.qpn }

// State returns the current state.
func (q *QP) State() verbs.QPState { return verbs.QPState(q.state.Load()) }

// Path returns the peer addressing set at RTR.
func (q *QP) Path() Path { return q.path }

// MTU returns the path MTU in bytes (valid from RTR).
func (q *QP) MTU() int { return int(q.mtu) }

// Device returns the device the QP belongs to.
func (q *QP) Device() *Device { return q.dev }

// validMTU reports whether m is an IB MTU.
func validMTU(m int) bool {
	switch m {
	case 256, 512, 1024, 2048, 4096:
		return true
	}
	return false
}

// ToInit moves the QP from RESET to INIT. Receives may be posted from INIT.
func (q *QP) ToInit() error {
	q.sq.mu.Lock()
	defer q.sq.mu.Unlock()
	q.rq.mu.Lock()
	defer q.rq.mu.Unlock()
	if st := q.State(); st != verbs.StateReset {
		return fmt.Errorf("qp %#x: modify %s -> INIT: invalid transition", q.qpn, st)
	}
	q.state.Store(uint32(verbs.StateInit))
	return nil
}

// ToRTR moves the QP from INIT to RTR with the peer's addressing: from now
// on the responder accepts requests starting at p.RemotePSN.
func (q *QP) ToRTR(p Path) error {
	q.sq.mu.Lock()
	defer q.sq.mu.Unlock()
	q.rq.mu.Lock()
	defer q.rq.mu.Unlock()
	if st := q.State(); st != verbs.StateInit {
		return fmt.Errorf("qp %#x: modify %s -> RTR: invalid transition", q.qpn, st)
	}
	if p.MTU == 0 {
		p.MTU = q.dev.cfg.MTU
	}
	if !validMTU(p.MTU) {
		return fmt.Errorf("qp %#x: modify -> RTR: path MTU %d not one of 256, 512, 1024, 2048, 4096", q.qpn, p.MTU)
	}
	if p.RemoteQPN > roce.MaxQP || p.RemotePSN > roce.MaxPSN {
		return fmt.Errorf("qp %#x: modify -> RTR: remote QPN %#x or PSN %#x exceeds 24 bits", q.qpn, p.RemoteQPN, p.RemotePSN)
	}
	q.path = p
	q.mtu = uint32(p.MTU)
	// Source port entropy per QP, like rxe and mlx5 (0xC000 | low bits).
	q.udpSrc = 0xC000 | uint16(q.qpn&0x3fff)
	q.rq.ePSN = roce.PSN(p.RemotePSN)
	q.state.Store(uint32(verbs.StateRTR))
	return nil
}

// ToRTS moves the QP from RTR to RTS; its requester starts at sqPSN.
func (q *QP) ToRTS(sqPSN uint32) error {
	q.sq.mu.Lock()
	defer q.sq.mu.Unlock()
	if st := q.State(); st != verbs.StateRTR {
		return fmt.Errorf("qp %#x: modify %s -> RTS: invalid transition", q.qpn, st)
	}
	if sqPSN > roce.MaxPSN {
		return fmt.Errorf("qp %#x: modify -> RTS: PSN %#x exceeds 24 bits", q.qpn, sqPSN)
	}
	s := &q.sq
	psn := roce.PSN(sqPSN)
	s.postPSN, s.una, s.sentPSN = psn, psn, psn
	s.retryLeft = q.dev.cfg.RetryCount
	s.rnrLeft = q.dev.cfg.RNRRetry
	q.state.Store(uint32(verbs.StateRTS))
	return nil
}

// ToErr moves the QP to ERR: every outstanding work request completes with
// StatusFlushed.
func (q *QP) ToErr() {
	q.sq.mu.Lock()
	q.sq.fail(q, verbs.StatusFlushed)
	q.sq.mu.Unlock()
}

// ToReset moves the QP to RESET from any state, discarding all work.
func (q *QP) ToReset() {
	q.sq.mu.Lock()
	defer q.sq.mu.Unlock()
	q.rq.mu.Lock()
	defer q.rq.mu.Unlock()
	q.state.Store(uint32(verbs.StateReset))
	q.sq.reset()
	q.rq.reset()
}

// PostSend posts a batch of work requests with one doorbell: all are queued,
// then transmission starts once. On a QP in ERR each completes flushed.
func (q *QP) PostSend(wrs []verbs.SendWR) error {
	b := q.dev.getBatch()
	q.sq.mu.Lock()
	err := q.sq.post(q, wrs, q.dev.now(), b)
	q.sq.mu.Unlock()
	q.dev.putBatch(b)
	return err
}

// PostRecv posts receive buffers (allowed from INIT).
func (q *QP) PostRecv(wrs []verbs.RecvWR) error {
	q.rq.mu.Lock()
	defer q.rq.mu.Unlock()
	return q.rq.post(q, wrs)
}

// complete pushes a completion for a send work request.
func (q *QP) completeSend(w *wqe, st verbs.Status) {
	if st == verbs.StatusSuccess && !(q.sigAll || w.wr.Flags&verbs.Signaled != 0) {
		return
	}
	wc := verbs.WC{ID: w.wr.ID, Status: st, Op: w.wr.Op, QPN: q.qpn}
	if st == verbs.StatusSuccess {
		switch w.wr.Op {
		case verbs.OpCompareSwap, verbs.OpFetchAdd:
			wc.ByteLen = 8
			wc.Orig = w.orig
		default:
			wc.ByteLen = w.length
		}
	}
	q.sendCQ.push(wc)
}

// sgTotal returns the byte count of a scatter/gather list.
func sgTotal(sg []verbs.SGE) uint64 {
	var n uint64
	for _, s := range sg {
		n += uint64(s.Length)
	}
	return n
}

// sgAccess visits the local bytes of sg from offset off for n bytes, calling
// fn with each contiguous piece under its region's lock. It reports false if
// an SGE does not resolve to a region with the rights need.
func (d *Device) sgAccess(sg []verbs.SGE, off, n uint64, need verbs.Access, fn func(b []byte, pos uint64)) bool {
	pos := uint64(0)
	for _, s := range sg {
		if n == 0 {
			break
		}
		l := uint64(s.Length)
		if off >= l {
			off -= l
			continue
		}
		take := l - off
		if take > n {
			take = n
		}
		m := d.mrs.lookup(s.LKey)
		if m == nil || m.access&need != need {
			return false
		}
		b, ok := m.slice(s.Addr+off, uint32(take))
		if !ok {
			return false
		}
		m.mu.Lock()
		fn(b, pos)
		m.mu.Unlock()
		pos += take
		n -= take
		off = 0
	}
	return n == 0
}

// checkSG validates every SGE of a work request against the local region
// table (length, key, bounds, rights).
func (d *Device) checkSG(sg []verbs.SGE, need verbs.Access) bool {
	for _, s := range sg {
		m := d.mrs.lookup(s.LKey)
		if m == nil || m.access&need != need {
			return false
		}
		if _, ok := m.slice(s.Addr, s.Length); !ok {
			return false
		}
	}
	return true
}

// emitter receives the packets the engines produce. The device's transmit
// batch implements it; tests can capture packets directly.
type emitter interface {
	emit(q *QP, p txPkt)
}

// txPkt is one packet to transmit, in terms of the fields the engines set.
// The wire encoding (roce.Build) happens in the emitter.
type txPkt struct {
	op       roce.Opcode
	psn      roce.PSN
	ackReq   bool
	se       bool
	va       uint64
	rkey     uint32
	dmaLen   uint32
	swapAdd  uint64
	compare  uint64
	syndrome roce.Syndrome
	msn      uint32
	orig     uint64
	imm      uint32
	payload  []byte
}

// String summarizes the QP's transport state (for diagnostics).
func (q *QP) String() string {
	q.sq.mu.Lock()
	s := &q.sq
	str := fmt.Sprintf("qp %#x %s sq[n=%d cur=%d curPkt=%d una=%#x sent=%#x post=%#x rdOut=%d timer=%v recover=%#x minRTT=%d retry=%d",
		q.qpn, q.State(), s.n, s.cur, s.curPkt, s.una, s.sentPSN, s.postPSN, s.rdOut, s.timerOn, s.recoverPSN, s.minRTT, s.retryLeft)
	if s.n > 0 {
		w := s.at(0)
		str += fmt.Sprintf(" head{%s first=%#x npkts=%d got=%d}", w.wr.Op, w.first, w.npkts, w.got)
	}
	q.sq.mu.Unlock()
	q.rq.mu.Lock()
	str += fmt.Sprintf("] rq[ePSN=%#x msn=%d nakSent=%v inMsg=%d]", q.rq.ePSN, q.rq.msn, q.rq.nakSent, q.rq.inMsg)
	q.rq.mu.Unlock()
	return str
}
