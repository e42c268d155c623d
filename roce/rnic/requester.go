package rnic

import (
	"fmt"
	"sync"

	"github.com/swordbox/swordbox/roce"
	"github.com/swordbox/swordbox/roce/verbs"
)

// The requester: the send queue of a QP as a deterministic engine. Its
// inputs are work requests (post), responses (onResponse, in completer.go)
// and time (tick); its outputs are packets (through an emitter) and
// completions. It never
// starts goroutines or timers: the device's loops call it.
//
// PSNs are assigned when a work request is posted (a READ takes one PSN per
// response packet it will receive, as the IBA requires). A transmit cursor
// (cur, curPkt) walks the queue; go-back-N moves it back to the first PSN to
// resend. una is the oldest PSN not yet acknowledged, sentPSN one past the
// highest PSN ever sent: a response whose PSN is outside [una, sentPSN) is a
// duplicate or bogus and is ignored.

// wqe is a posted send work request.
type wqe struct {
	wr         verbs.SendWR // wr.SG is nil; the SGEs live in sg
	sg         [MaxSGE]verbs.SGE
	nsg        uint8
	length     uint32
	first      roce.PSN // PSN of the first packet
	npkts      uint32   // PSNs the request consumes
	readAtomic bool
	counted    bool   // counted in rdOut
	sentAt     int64  // when its first packet was first sent
	lastTx     int64  // when a packet of it was last sent
	resent     bool   // some packet was sent twice (no RTT sample, Karn)
	timed      bool   // sentAt is set
	got        uint32 // response packets received (READ, atomics)
	orig       uint64
}

func (w *wqe) sges() []verbs.SGE { return w.sg[:w.nsg] }
func (w *wqe) last() roce.PSN    { return w.first.Add(int(w.npkts) - 1) }

type sendQueue struct {
	mu         sync.Mutex
	ring       []wqe
	head, n    int
	cur        int      // queue index (from head) of the next wqe to transmit
	curPkt     uint32   // packet of that wqe to transmit next
	postPSN    roce.PSN // first PSN of the next posted wqe
	una        roce.PSN // oldest unacknowledged PSN
	sentPSN    roce.PSN // one past the highest PSN ever transmitted
	rdOut      int      // READ/atomic requests transmitted and not complete
	timerOn    bool
	deadline   int64
	retryLeft  int
	backoff    uint // consecutive timeouts without progress
	rnrLeft    int
	rnrUntil   int64
	recoverPSN roce.PSN // where the last go-back-N started
	minRTT     int64    // least round trip of a request sent once
	recovering bool     // a go-back-N is not yet acknowledged past its start
	scratch    []byte

	// Counters (read with Stats).
	retransmits uint64
	timeouts    uint64
	seqNAKs     uint64
	rnrNAKs     uint64
}

func (s *sendQueue) reset() {
	for i := range s.ring {
		s.ring[i] = wqe{}
	}
	s.head, s.n, s.cur, s.curPkt, s.rdOut = 0, 0, 0, 0, 0
	s.timerOn, s.rnrUntil, s.recovering = false, 0, false
}

func (s *sendQueue) at(i int) *wqe { return &s.ring[(s.head+i)%len(s.ring)] }

func isReadAtomic(op verbs.Opcode) bool {
	return op == verbs.OpRead || op == verbs.OpCompareSwap || op == verbs.OpFetchAdd
}

// post queues wrs and transmits what the window allows.
func (s *sendQueue) post(q *QP, wrs []verbs.SendWR, now int64, em emitter) error {
	switch st := q.State(); st {
	case verbs.StateRTS:
	case verbs.StateErr:
		for i := range wrs {
			q.sendCQ.push(verbs.WC{ID: wrs[i].ID, Status: verbs.StatusFlushed, Op: wrs[i].Op, QPN: q.qpn})
		}
		return nil
	default:
		return fmt.Errorf("qp %#x: post send in state %s", q.qpn, st)
	}
	if s.n+len(wrs) > len(s.ring) {
		return fmt.Errorf("qp %#x: post send: send queue full (%d of %d)", q.qpn, s.n, len(s.ring))
	}
	for i := range wrs {
		wr := &wrs[i]
		if len(wr.SG) > MaxSGE {
			return fmt.Errorf("qp %#x: post send %d: %d SGEs, at most %d", q.qpn, wr.ID, len(wr.SG), MaxSGE)
		}
		switch wr.Op {
		case verbs.OpSend, verbs.OpSendImm, verbs.OpWrite, verbs.OpWriteImm, verbs.OpRead:
			if sgTotal(wr.SG) > 1<<31 {
				return fmt.Errorf("qp %#x: post send %d: message longer than 2 GiB", q.qpn, wr.ID)
			}
		case verbs.OpCompareSwap, verbs.OpFetchAdd:
			if sgTotal(wr.SG) != 8 {
				return fmt.Errorf("qp %#x: post send %d: %s needs an 8-byte local buffer", q.qpn, wr.ID, wr.Op)
			}
		default:
			return fmt.Errorf("qp %#x: post send %d: opcode %s is not a send opcode", q.qpn, wr.ID, wr.Op)
		}
	}
	for i := range wrs {
		wr := &wrs[i]
		w := s.at(s.n)
		*w = wqe{wr: *wr}
		w.wr.SG = nil
		w.nsg = uint8(copy(w.sg[:], wr.SG))
		w.length = uint32(sgTotal(wr.SG))
		w.readAtomic = isReadAtomic(wr.Op)
		w.first = s.postPSN
		w.npkts = 1
		if wr.Op != verbs.OpCompareSwap && wr.Op != verbs.OpFetchAdd && w.length > q.mtu {
			w.npkts = (w.length + q.mtu - 1) / q.mtu
		}
		s.postPSN = s.postPSN.Add(int(w.npkts))
		s.n++
		need := verbs.Access(0)
		if w.readAtomic {
			need = verbs.AccessLocalWrite
		}
		if !q.dev.checkSG(w.sges(), need) {
			// A local protection error completes the request in error and
			// moves the QP to ERR, as on a real NIC.
			s.failAt(q, s.n-1, verbs.StatusLocalProtectionError)
			return nil
		}
	}
	s.pump(q, now, em)
	return nil
}

// pump transmits from the cursor as far as the limits allow.
func (s *sendQueue) pump(q *QP, now int64, em emitter) {
	if q.State() != verbs.StateRTS {
		return
	}
	cfg := &q.dev.cfg
	for s.cur < s.n {
		if s.rnrUntil != 0 {
			if now < s.rnrUntil {
				return
			}
			s.rnrUntil = 0
		}
		w := s.at(s.cur)
		if s.curPkt == 0 && !w.counted {
			if w.wr.Flags&verbs.Fence != 0 && s.rdOut > 0 {
				return
			}
			if w.readAtomic && s.rdOut >= cfg.MaxRdAtomic {
				return
			}
		}
		psn := w.first.Add(int(s.curPkt))
		if psn.Before(s.sentPSN) {
			s.retransmits++
			w.resent = true
		} else if s.curPkt == 0 {
			w.sentAt, w.timed = now, true
		}
		w.lastTx = now
		if !s.transmit(q, w, s.curPkt, em) {
			s.failAt(q, s.cur, verbs.StatusLocalProtectionError)
			return
		}
		if w.readAtomic {
			if !w.counted {
				w.counted = true
				s.rdOut++
			}
			s.cur++
			s.curPkt = 0
			if end := w.first.Add(int(w.npkts)); s.sentPSN.Before(end) {
				s.sentPSN = end
			}
		} else {
			s.curPkt++
			if s.curPkt == w.npkts {
				s.cur++
				s.curPkt = 0
			}
			if end := psn.Add(1); s.sentPSN.Before(end) {
				s.sentPSN = end
			}
		}
		if !s.timerOn {
			s.timerOn = true
			s.deadline = now + int64(cfg.Timeout)
		}
	}
}

// transmit emits packet k of w. For a READ, k > 0 re-requests the rest of
// the data from PSN first+k (IBA 9.7.4.1.4: a retried READ may start in the
// middle of the original).
func (s *sendQueue) transmit(q *QP, w *wqe, k uint32, em emitter) bool {
	var p txPkt
	p.psn = w.first.Add(int(k))
	mtu := q.mtu
	switch w.wr.Op {
	case verbs.OpRead:
		p.op = roce.OpRCReadRequest
		p.va = w.wr.RemoteAddr + uint64(k)*uint64(mtu)
		p.rkey = w.wr.RKey
		p.dmaLen = w.length - k*mtu
		if w.length == 0 {
			p.dmaLen = 0
		}
		p.ackReq = true
	case verbs.OpCompareSwap, verbs.OpFetchAdd:
		p.op = roce.OpRCCompareSwap
		if w.wr.Op == verbs.OpFetchAdd {
			p.op = roce.OpRCFetchAdd
		}
		p.va, p.rkey = w.wr.RemoteAddr, w.wr.RKey
		p.swapAdd, p.compare = w.wr.SwapAdd, w.wr.Compare
		p.ackReq = true
	default:
		off := k * mtu
		n := w.length - off
		if n > mtu {
			n = mtu
		}
		if cap(s.scratch) < int(mtu) {
			s.scratch = make([]byte, mtu)
		}
		buf := s.scratch[:n]
		if !q.dev.sgAccess(w.sges(), uint64(off), uint64(n), 0, func(b []byte, pos uint64) { copy(buf[pos:], b) }) {
			return false
		}
		p.payload = buf
		first, last := k == 0, k == w.npkts-1
		imm := w.wr.Op == verbs.OpSendImm || w.wr.Op == verbs.OpWriteImm
		send := w.wr.Op == verbs.OpSend || w.wr.Op == verbs.OpSendImm
		p.op = segOpcode(send, first, last, imm)
		if !send && first {
			p.va, p.rkey, p.dmaLen = w.wr.RemoteAddr, w.wr.RKey, w.length
		}
		if imm && last {
			p.imm = w.wr.Imm
		}
		p.ackReq = last
		p.se = last && w.wr.Flags&verbs.Solicited != 0
	}
	em.emit(q, p)
	return true
}

// tick runs the retransmission timer and resumes after an RNR delay.
func (s *sendQueue) tick(q *QP, now int64, em emitter) {
	if q.State() != verbs.StateRTS {
		return
	}
	if s.timerOn && now >= s.deadline && s.rnrUntil == 0 {
		if !s.una.Before(s.sentPSN) {
			s.timerOn = false
		} else {
			s.timeouts++
			s.retryLeft--
			if s.retryLeft < 0 {
				if hook := q.dev.onRetryExceeded.Load(); hook != nil {
					w := s.at(0)
					(*hook)(fmt.Sprintf("qp %#x n=%d cur=%d curPkt=%d una=%#x sent=%#x post=%#x rdOut=%d recover=%#x minRTT=%d head{%s first=%#x npkts=%d got=%d len=%d}",
						q.qpn, s.n, s.cur, s.curPkt, s.una, s.sentPSN, s.postPSN, s.rdOut, s.recoverPSN, s.minRTT, w.wr.Op, w.first, w.npkts, w.got, w.length))
				}
				s.failAt(q, 0, verbs.StatusRetryExceeded)
				return
			}
			s.forceRewind(q, s.una, now)
			// Adaptive retransmission (as mlx5 does): each consecutive
			// timeout doubles the next one, up to 64 times the base.
			if s.backoff < 6 {
				s.backoff++
			}
			s.deadline = now + int64(q.dev.cfg.Timeout)<<s.backoff
		}
	}
	s.pump(q, now, em)
}

// failAt completes the wqe at queue index i with st, every other
// outstanding one flushed, and moves the QP to ERR (flushing receives too).
func (s *sendQueue) failAt(q *QP, i int, st verbs.Status) {
	q.state.Store(uint32(verbs.StateErr))
	for k := 0; s.n > 0; k++ {
		status := verbs.StatusFlushed
		if k == i {
			status = st
		}
		w := s.at(0)
		q.completeSend(w, status)
		*w = wqe{}
		s.head = (s.head + 1) % len(s.ring)
		s.n--
	}
	s.cur, s.curPkt, s.rdOut, s.timerOn = 0, 0, 0, false
	q.rq.mu.Lock()
	q.rq.flush(q)
	q.rq.mu.Unlock()
}

// fail moves the QP to ERR, flushing everything.
func (s *sendQueue) fail(q *QP, st verbs.Status) { s.failAt(q, -1, st) }

// segOpcodes are the opcodes of the packets of a SEND ([0]) or RDMA WRITE
// ([1]) message, by position: only, only with immediate, first, middle,
// last, last with immediate.
var segOpcodes = [2][6]roce.Opcode{
	{roce.OpRCSendOnly, roce.OpRCSendOnlyImm, roce.OpRCSendFirst, roce.OpRCSendMiddle, roce.OpRCSendLast, roce.OpRCSendLastImm},
	{roce.OpRCWriteOnly, roce.OpRCWriteOnlyImm, roce.OpRCWriteFirst, roce.OpRCWriteMiddle, roce.OpRCWriteLast, roce.OpRCWriteLastImm},
}

// segOpcode returns the opcode of a packet of a SEND (send) or WRITE
// message; imm matters only on the packet that ends it.
func segOpcode(send, first, last, imm bool) roce.Opcode {
	t := &segOpcodes[1]
	if send {
		t = &segOpcodes[0]
	}
	switch {
	case first && last && imm:
		return t[1]
	case first && last:
		return t[0]
	case first:
		return t[2]
	case last && imm:
		return t[5]
	case last:
		return t[4]
	}
	return t[3]
}
