package rnic

import (
	"encoding/binary"

	"github.com/swordbox/swordbox/roce"
	"github.com/swordbox/swordbox/roce/verbs"
)

// The completer: the requester's half that takes responses (Linux rxe's
// rxe_comp.c). A response first passes the PSN window [una, sentPSN), then
// its opcode's rule (onACK, onRNRNAK, onNAK, onReadResponse, onAtomicAck);
// each acknowledges what precedes it (ackBelow), completes work requests
// (completeHead), or moves the transmit cursor back for go-back-N (rewind,
// forceRewind). The sending half and the timer are in requester.go.

// rxResp is a response packet as the requester sees it.
type rxResp struct {
	op       roce.Opcode
	psn      roce.PSN
	syndrome roce.Syndrome
	msn      uint32
	orig     uint64
	payload  []byte
}

// onResponse processes one response packet: the QP must be in RTS with
// work outstanding, the PSN inside [una, sentPSN) (rxe check_psn: older is
// a duplicate, newer was never sent), then the opcode's rule; a response
// that made room lets the requester transmit again.
func (s *sendQueue) onResponse(q *QP, r *rxResp, now int64, em emitter) {
	if q.State() != verbs.StateRTS || s.n == 0 {
		return
	}
	psn := r.psn
	if !s.una.NotAfter(psn) || !psn.Before(s.sentPSN) {
		return // duplicate or from the future
	}
	var more bool
	switch r.op {
	case roce.OpRCAcknowledge:
		switch r.syndrome.Kind() {
		case roce.KindACK:
			s.onACK(q, psn, now)
			more = true
		case roce.KindRNRNAK:
			s.onRNRNAK(q, r, now)
		case roce.KindNAK:
			more = s.onNAK(q, r, now)
		}
	case roce.OpRCReadResponseFirst, roce.OpRCReadResponseMiddle, roce.OpRCReadResponseLast, roce.OpRCReadResponseOnly:
		s.onReadResponse(q, r, now)
		more = true
	case roce.OpRCAtomicAcknowledge:
		more = s.onAtomicAck(q, r, now)
	}
	if more {
		s.pump(q, now, em)
	}
}

// onACK takes a positive ACK (IBA 9.7.6, coalesced acknowledgement; rxe
// do_complete): everything up to psn is acknowledged; an ACK beyond a READ
// or atomic whose response never arrived means the response was lost, and
// the requester goes back to it.
func (s *sendQueue) onACK(q *QP, psn roce.PSN, now int64) {
	s.ackBelow(q, psn.Add(1), now)
	if s.n == 0 {
		return
	}
	if h := s.at(0); h.readAtomic && h.first.Add(int(h.got)).NotAfter(psn) {
		s.rewind(q, h.first.Add(int(h.got)), true, now)
	}
}

// onRNRNAK takes a receiver-not-ready NAK (IBA 9.7.5.2.8; rxe
// check_ack's RNR case): what precedes the PSN is acknowledged, the RNR
// retry budget shrinks (7 retries forever), and transmission resumes from
// the PSN after the NAK's timer (at least Config.MinRNRDelay).
func (s *sendQueue) onRNRNAK(q *QP, r *rxResp, now int64) {
	psn := r.psn
	s.ackBelow(q, psn, now)
	s.rnrNAKs++
	if q.dev.cfg.RNRRetry != 7 { // 7 means retry forever (IBA)
		s.rnrLeft--
		if s.rnrLeft < 0 {
			s.failAt(q, 0, verbs.StatusRNRRetryExceeded)
			return
		}
	}
	d := roce.RNRTimerDelay(r.syndrome.RNRTimer())
	if min := q.dev.cfg.MinRNRDelay; d < min {
		d = min
	}
	s.rnrUntil = now + int64(d)
	s.forceRewind(q, psn, now)
	s.timerOn, s.deadline = true, s.rnrUntil+int64(q.dev.cfg.Timeout)
	// The timer loop resumes after the RNR delay.
}

// onNAK takes a NAK (IBA 9.7.5.2.3 NAK codes; rxe check_ack's NAK case):
// a PSN sequence error goes back N to the PSN, any other code fails the
// oldest request with the matching status and the QP. It reports whether
// the requester may transmit.
func (s *sendQueue) onNAK(q *QP, r *rxResp, now int64) bool {
	psn := r.psn
	s.ackBelow(q, psn, now)
	code := r.syndrome.NAKCode()
	if code == roce.NAKPSNSequenceError {
		s.seqNAKs++
		s.rewind(q, psn, false, now)
		return true
	}
	st := verbs.StatusRemoteOperationalError
	switch code {
	case roce.NAKInvalidRequest:
		st = verbs.StatusRemoteInvalidRequest
	case roce.NAKRemoteAccessError:
		st = verbs.StatusRemoteAccessError
	}
	s.failAt(q, 0, st)
	return false
}

// onReadResponse takes one READ response packet (IBA 9.7.6, READ
// responses; rxe read_reply on the completer side): it implicitly
// acknowledges what precedes it; it must be the next packet of the READ at
// the head (a later one means one was lost: go back to it), and its
// payload is scattered into the local buffers; the last completes the READ.
func (s *sendQueue) onReadResponse(q *QP, r *rxResp, now int64) {
	psn := r.psn
	s.ackBelow(q, psn, now)
	if s.n == 0 {
		return
	}
	h := s.at(0)
	if h.wr.Op != verbs.OpRead {
		return
	}
	exp := h.first.Add(int(h.got))
	if psn != exp {
		if exp.Before(psn) {
			s.rewind(q, exp, true, now)
		}
		return
	}
	if !s.readSegment(q, h, r) {
		return // malformed for this position: ignore, the timer recovers
	}
	h.got++
	s.una = psn.Add(1)
	s.progress(q, now)
	if h.got == h.npkts {
		s.completeHead(q, verbs.StatusSuccess, now)
	}
}

// onAtomicAck takes an ATOMIC ACK (IBA 9.7.6, atomic responses; rxe
// atomic_reply on the completer side): it implicitly acknowledges what
// precedes it, must answer the atomic at the head (a later PSN means the
// answer was lost: go back), and its original value lands, little-endian,
// in the request's 8-byte local buffer. It reports whether the requester
// may transmit.
func (s *sendQueue) onAtomicAck(q *QP, r *rxResp, now int64) bool {
	psn := r.psn
	s.ackBelow(q, psn, now)
	if s.n == 0 {
		return true
	}
	h := s.at(0)
	if h.wr.Op != verbs.OpCompareSwap && h.wr.Op != verbs.OpFetchAdd {
		return true
	}
	if psn != h.first {
		if h.first.Before(psn) {
			s.rewind(q, h.first, true, now)
		}
		return true
	}
	var le [8]byte
	binary.LittleEndian.PutUint64(le[:], r.orig)
	if !q.dev.sgAccess(h.sges(), 0, 8, verbs.AccessLocalWrite, func(b []byte, pos uint64) { copy(b, le[pos:]) }) {
		s.failAt(q, 0, verbs.StatusLocalProtectionError)
		return false
	}
	h.orig = r.orig
	h.got = 1
	s.una = psn.Add(1)
	s.progress(q, now)
	s.completeHead(q, verbs.StatusSuccess, now)
	return true
}

// readSegment checks a READ response packet against the position it
// fills and scatters its payload into the local buffers.
func (s *sendQueue) readSegment(q *QP, h *wqe, r *rxResp) bool {
	k := h.got
	mtu := q.mtu
	off := k * mtu
	want := h.length - off
	if want > mtu {
		want = mtu
	}
	if h.length == 0 {
		want = 0
	}
	first, last := k == 0, k == h.npkts-1
	var op roce.Opcode
	switch {
	case first && last:
		op = roce.OpRCReadResponseOnly
	case last:
		op = roce.OpRCReadResponseLast
	case first:
		op = roce.OpRCReadResponseFirst
	default:
		op = roce.OpRCReadResponseMiddle
	}
	// A retried READ that starts in the middle gets FIRST (or ONLY) at k.
	if r.op != op && !(k > 0 && (r.op == roce.OpRCReadResponseFirst && !last || r.op == roce.OpRCReadResponseOnly && last)) {
		return false
	}
	if uint32(len(r.payload)) != want {
		return false
	}
	pl := r.payload
	return q.dev.sgAccess(h.sges(), uint64(off), uint64(want), verbs.AccessLocalWrite, func(b []byte, pos uint64) { copy(b, pl[pos:]) })
}

// ackBelow completes SEND/WRITE requests whose packets all precede upto; a
// READ or atomic at the head stops it (those complete only by their
// responses).
func (s *sendQueue) ackBelow(q *QP, upto roce.PSN, now int64) {
	moved := false
	for s.n > 0 {
		w := s.at(0)
		if w.readAtomic {
			break
		}
		if w.last().Before(upto) {
			s.una = w.last().Add(1)
			s.completeHead(q, verbs.StatusSuccess, now)
			moved = true
			continue
		}
		if s.una.Before(upto) {
			s.una = upto
			moved = true
			if s.cur == 0 && w.first.Add(int(s.curPkt)).Before(upto) {
				s.curPkt = uint32(upto.Sub(w.first))
			}
		}
		break
	}
	if moved {
		s.progress(q, now)
	}
}

// progress resets the retry budget and the timer after forward progress.
func (s *sendQueue) progress(q *QP, now int64) {
	s.retryLeft = q.dev.cfg.RetryCount
	s.backoff = 0
	if s.recovering && s.recoverPSN.Before(s.una) {
		s.recovering = false
	}
	s.rnrLeft = q.dev.cfg.RNRRetry
	if s.una.Before(s.sentPSN) {
		s.timerOn, s.deadline = true, now+int64(q.dev.cfg.Timeout)
	} else {
		s.timerOn = false
	}
}

// completeHead completes the oldest wqe and removes it.
func (s *sendQueue) completeHead(q *QP, st verbs.Status, now int64) {
	w := s.at(0)
	if st == verbs.StatusSuccess && w.timed && !w.resent {
		s.rttSample(now - w.sentAt)
	}
	if w.counted {
		s.rdOut--
	}
	q.completeSend(w, st)
	*w = wqe{}
	s.head = (s.head + 1) % len(s.ring)
	s.n--
	if s.cur > 0 {
		s.cur--
	} else {
		s.curPkt = 0
	}
}

// rttSample records a round-trip measurement of a request sent once
// (Karn's rule). Samples include the time a completed request waited behind
// older ones (head-of-line), so only the least is kept: the path, not the
// queue.
func (s *sendQueue) rttSample(r int64) {
	if r > 0 && (s.minRTT == 0 || r < s.minRTT) {
		s.minRTT = r
	}
}

// rewind moves the transmit cursor back to psn for go-back-N, unless the
// news is stale. Responses to packets sent before a go-back-N keep arriving
// after it, with gaps that say nothing about the packets just resent;
// acting on each would resend the window again and again. So a rewind
// inferred from a response (implicit: a READ response or atomic ACK is
// missing), or a NAK naming the PSN the last go-back-N started from, is
// ignored when it is stale: when the missing PSN was last sent less than a
// round trip ago (with a round-trip sample), or else when the last
// go-back-N, not yet acknowledged past its start, already resent it. Other
// NAKs (a retransmission was lost) are always honored.
func (s *sendQueue) rewind(q *QP, psn roce.PSN, implicit bool, now int64) {
	if implicit || psn == s.recoverPSN {
		if s.minRTT > 0 {
			if w := s.find(psn); w != nil && now-w.lastTx < s.minRTT {
				return
			}
		} else if s.recovering && s.recoverPSN.NotAfter(psn) {
			return // the last go-back-N already resent psn
		}
	}
	s.forceRewind(q, psn, now)
}

// find returns the queued wqe that holds psn, or nil.
func (s *sendQueue) find(psn roce.PSN) *wqe {
	for i := 0; i < s.n; i++ {
		w := s.at(i)
		if w.first.NotAfter(psn) && psn.Before(w.first.Add(int(w.npkts))) {
			return w
		}
	}
	return nil
}

// forceRewind moves the cursor back to psn if it is ahead of it.
func (s *sendQueue) forceRewind(q *QP, psn roce.PSN, now int64) {
	s.recoverPSN, s.recovering = psn, true
	for i := 0; i < s.n; i++ {
		w := s.at(i)
		if w.first.NotAfter(psn) && psn.Before(w.first.Add(int(w.npkts))) {
			if i < s.cur || (i == s.cur && psn.Before(w.first.Add(int(s.curPkt)))) {
				s.cur, s.curPkt = i, uint32(psn.Sub(w.first))
				if w.wr.Op == verbs.OpCompareSwap || w.wr.Op == verbs.OpFetchAdd {
					s.curPkt = 0
				}
			}
			return
		}
	}
}
