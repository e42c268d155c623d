package rnic

import (
	"fmt"
	"sync"

	"github.com/swordbox/swordbox/roce"
	"github.com/swordbox/swordbox/roce/verbs"
)

// The responder: the receive side of a QP as a deterministic engine. Its
// inputs are request packets (onRequest) and the end of a receive burst
// (flushAck); its outputs are responses through an emitter, receive
// completions and memory effects.
//
// Rules (IBA 9.7.5, and what the middlebox downstream depends on):
//   - A request with the expected PSN (ePSN) executes. Earlier PSNs are
//     duplicates: SEND/WRITE are not executed again but re-acknowledged,
//     READ is executed again from the duplicate's own VA and length, an
//     atomic is answered from the stored original value and never executed
//     twice. Later PSNs are a gap: one NAK sequence error per gap (the flag
//     clears when the expected PSN arrives).
//   - ACKs are coalesced (AckCoalesced, the default): an AckReq packet marks
//     an ACK pending, and one cumulative ACK for the newest PSN goes out at
//     the end of the receive burst, or when AckCoalesceMax AckReq packets are
//     pending. READ responses and atomic ACKs acknowledge implicitly and clear
//     the pending ACK. AckEach acknowledges every AckReq packet at once.
//   - MSN counts completed request messages; every AETH carries it.
//   - A SEND (or WRITE with immediate) with no posted receive gets an RNR
//     NAK and does not advance ePSN.
//   - Decision: after a NAK for remote access or invalid request the
//     responder stays usable (ePSN does not move); the requester moves its
//     QP to ERR as the IBA requires.

type recvWQE struct {
	id     uint64
	sg     [MaxSGE]verbs.SGE
	nsg    uint8
	length uint64
}

type atomicRec struct {
	psn   roce.PSN
	orig  uint64
	valid bool
}

// ackSyndrome is the syndrome of every positive ACK and response this
// responder sends: an invalid credit count (no end-to-end flow control,
// IBA 9.7.7.2.3), as RoCE RNICs do.
var ackSyndrome = roce.ACKSyndrome(roce.CreditInvalid)

// atomicReplay is how many executed atomics the responder remembers for
// duplicate replay (a power of two, at least MaxRdAtomic).
const atomicReplay = 64

const (
	msgNone = iota
	msgSend
	msgWrite
)

type recvSide struct {
	mu      sync.Mutex
	ring    []recvWQE
	head, n int
	ePSN    roce.PSN
	msn     uint32
	nakSent bool

	inMsg   uint8
	wrMR    *MR
	wrVA    uint64
	wrLeft  uint32
	wrLen   uint32
	sendOff uint32

	ackPending bool
	unacked    int

	atomics [atomicReplay]atomicRec
	nextAt  int

	// Counters (read with Stats).
	duplicates  uint64
	seqNAKsSent uint64
	rnrNAKsSent uint64
	acksSent    uint64
	atomicsDone uint64
}

func (rs *recvSide) reset() {
	rs.head, rs.n, rs.inMsg, rs.nakSent, rs.ackPending, rs.unacked = 0, 0, msgNone, false, false, 0
	rs.msn, rs.wrMR = 0, nil
	rs.atomics = [atomicReplay]atomicRec{}
}

func (rs *recvSide) post(q *QP, wrs []verbs.RecvWR) error {
	switch st := q.State(); st {
	case verbs.StateInit, verbs.StateRTR, verbs.StateRTS:
	case verbs.StateErr:
		for i := range wrs {
			q.recvCQ.push(verbs.WC{ID: wrs[i].ID, Status: verbs.StatusFlushed, Op: verbs.OpRecv, QPN: q.qpn})
		}
		return nil
	default:
		return fmt.Errorf("qp %#x: post recv in state %s", q.qpn, st)
	}
	if rs.n+len(wrs) > len(rs.ring) {
		return fmt.Errorf("qp %#x: post recv: receive queue full (%d of %d)", q.qpn, rs.n, len(rs.ring))
	}
	for i := range wrs {
		if len(wrs[i].SG) > MaxSGE {
			return fmt.Errorf("qp %#x: post recv %d: %d SGEs, at most %d", q.qpn, wrs[i].ID, len(wrs[i].SG), MaxSGE)
		}
	}
	for i := range wrs {
		r := &rs.ring[(rs.head+rs.n)%len(rs.ring)]
		*r = recvWQE{id: wrs[i].ID, length: sgTotal(wrs[i].SG)}
		r.nsg = uint8(copy(r.sg[:], wrs[i].SG))
		rs.n++
	}
	return nil
}

// flush completes every posted receive with StatusFlushed.
func (rs *recvSide) flush(q *QP) {
	for rs.n > 0 {
		r := &rs.ring[rs.head]
		q.recvCQ.push(verbs.WC{ID: r.id, Status: verbs.StatusFlushed, Op: verbs.OpRecv, QPN: q.qpn})
		rs.head = (rs.head + 1) % len(rs.ring)
		rs.n--
	}
	rs.inMsg = msgNone
}

// rxReq is a request packet as the responder sees it.
type rxReq struct {
	op      roce.Opcode
	psn     roce.PSN
	ackReq  bool
	se      bool
	va      uint64
	rkey    uint32
	dmaLen  uint32
	swapAdd uint64
	compare uint64
	imm     uint32
	payload []byte
}

func isSendOp(op roce.Opcode) bool  { return op <= roce.OpRCSendOnlyImm }
func isWriteOp(op roce.Opcode) bool { return op >= roce.OpRCWriteFirst && op <= roce.OpRCWriteOnlyImm }
func isAtomicOp(op roce.Opcode) bool {
	return op == roce.OpRCCompareSwap || op == roce.OpRCFetchAdd
}

// isRequestOp reports whether an RC opcode travels requester -> responder.
func isRequestOp(op roce.Opcode) bool {
	return isSendOp(op) || isWriteOp(op) || op == roce.OpRCReadRequest || isAtomicOp(op)
}

// onRequest processes one request packet: the PSN check, then the
// opcode's own rules, then the acknowledgement. Each rule is one function
// below, named after its counterpart in Linux rxe (rxe_resp.c).
func (rs *recvSide) onRequest(q *QP, r *rxReq, em emitter) {
	if st := q.State(); st != verbs.StateRTR && st != verbs.StateRTS {
		return // a QP before RTR, or in ERR, takes no requests
	}
	if !rs.checkPSN(q, r, em) {
		return
	}
	switch op := r.op; {
	case isSendOp(op):
		if !rs.executeSend(q, r, em) {
			return
		}
	case isWriteOp(op):
		if !rs.executeWrite(q, r, em) {
			return
		}
	case op == roce.OpRCReadRequest:
		rs.executeRead(q, r, em)
		return
	case isAtomicOp(op):
		rs.executeAtomic(q, r, em)
		return
	default:
		return
	}
	rs.ePSN = rs.ePSN.Add(1)
	rs.scheduleAck(q, r.ackReq, em)
}

// checkPSN sorts a request by its PSN against the expected one (IBA 9.7.5,
// responder PSN checks; rxe check_psn): a duplicate (the 2^23 PSNs before
// ePSN) goes to duplicate; a PSN ahead is a gap, answered by one NAK
// sequence error per gap; only ePSN itself goes on (true).
func (rs *recvSide) checkPSN(q *QP, r *rxReq, em emitter) bool {
	d := -rs.ePSN.Sub(r.psn) // r.psn - ePSN in (-2^23, 2^23]
	if d < 0 {
		rs.duplicate(q, r, em)
		return false
	}
	if d > 0 {
		if !rs.nakSent {
			rs.nakSent = true
			rs.seqNAKsSent++
			rs.sendAETH(q, rs.ePSN, roce.NAKSyndrome(roce.NAKPSNSequenceError), em)
		}
		return false
	}
	rs.nakSent = false
	return true
}

// checkOpSeq reports whether a packet that is the first (or not) of its
// message fits the message in progress (IBA 9.7.5, opcode sequence; rxe
// check_op_seq): a first or only packet only between messages, a middle or
// last one only inside a message of its kind.
func (rs *recvSide) checkOpSeq(firstPkt bool, kind uint8) bool {
	return firstPkt == (rs.inMsg == msgNone) && (firstPkt || rs.inMsg == kind)
}

// executeSend places one SEND packet in the posted receive buffer (IBA
// 9.7.5, SEND; rxe send_data_in): a first packet needs a posted receive
// (else RNR NAK), every packet but the last is exactly one MTU, and the
// message must fit the buffer (else the receive completes in error and the
// requester gets NAK invalid request). It reports whether ePSN advances.
func (rs *recvSide) executeSend(q *QP, r *rxReq, em emitter) bool {
	op, mtu, plen := r.op, q.mtu, uint32(len(r.payload))
	firstPkt := op == roce.OpRCSendFirst || op == roce.OpRCSendOnly || op == roce.OpRCSendOnlyImm
	lastPkt := op != roce.OpRCSendFirst && op != roce.OpRCSendMiddle
	if !rs.checkOpSeq(firstPkt, msgSend) || (!lastPkt && plen != mtu) || plen > mtu {
		rs.nak(q, r.psn, roce.NAKInvalidRequest, em)
		return false
	}
	if firstPkt {
		if rs.n == 0 {
			rs.rnr(q, r.psn, em)
			return false
		}
		rs.sendOff = 0
	}
	rcv := &rs.ring[rs.head]
	if uint64(rs.sendOff)+uint64(plen) > rcv.length {
		rs.completeRecv(q, verbs.WC{Status: verbs.StatusLocalLengthError, Op: verbs.OpRecv})
		rs.nak(q, r.psn, roce.NAKInvalidRequest, em)
		return false
	}
	pl := r.payload
	if !q.dev.sgAccess(rcv.sg[:rcv.nsg], uint64(rs.sendOff), uint64(plen), verbs.AccessLocalWrite, func(b []byte, pos uint64) { copy(b, pl[pos:]) }) {
		rs.completeRecv(q, verbs.WC{Status: verbs.StatusLocalProtectionError, Op: verbs.OpRecv})
		rs.nak(q, r.psn, roce.NAKRemoteOperationalError, em)
		return false
	}
	rs.sendOff += plen
	if !lastPkt {
		rs.inMsg = msgSend
		return true
	}
	wc := verbs.WC{Status: verbs.StatusSuccess, Op: verbs.OpRecv, ByteLen: rs.sendOff}
	if op == roce.OpRCSendOnlyImm || op == roce.OpRCSendLastImm {
		wc.Imm, wc.HasImm = r.imm, true
	}
	rs.completeRecv(q, wc)
	rs.msn = (rs.msn + 1) & roce.MaxMSN
	rs.inMsg = msgNone
	return true
}

// checkWriteRKey validates the RETH of a first WRITE packet against the
// memory regions (IBA 9.7.5, R_Key and bounds; rxe check_rkey) and starts
// the message's cursor; a bad key, range or access is NAK remote access.
func (rs *recvSide) checkWriteRKey(q *QP, r *rxReq, em emitter) bool {
	m, _, res := q.dev.mrs.remote(r.rkey, r.va, r.dmaLen, verbs.AccessRemoteWrite)
	if res != accessOK {
		rs.nak(q, r.psn, roce.NAKRemoteAccessError, em)
		return false
	}
	rs.wrMR, rs.wrVA, rs.wrLeft, rs.wrLen = m, r.va, r.dmaLen, r.dmaLen
	return true
}

// executeWrite stores one RDMA WRITE packet (IBA 9.7.5, RDMA WRITE; rxe
// write_data_in): every packet but the last is exactly one MTU, the last
// ends the DMA length of the RETH, and a WRITE with immediate needs a
// posted receive (else RNR NAK). It reports whether ePSN advances.
func (rs *recvSide) executeWrite(q *QP, r *rxReq, em emitter) bool {
	op, mtu, plen := r.op, q.mtu, uint32(len(r.payload))
	firstPkt := op == roce.OpRCWriteFirst || op == roce.OpRCWriteOnly || op == roce.OpRCWriteOnlyImm
	lastPkt := op != roce.OpRCWriteFirst && op != roce.OpRCWriteMiddle
	imm := op == roce.OpRCWriteOnlyImm || op == roce.OpRCWriteLastImm
	if !rs.checkOpSeq(firstPkt, msgWrite) || plen > mtu {
		rs.nak(q, r.psn, roce.NAKInvalidRequest, em)
		return false
	}
	if firstPkt && !rs.checkWriteRKey(q, r, em) {
		return false
	}
	if (lastPkt && plen != rs.wrLeft) || (!lastPkt && (plen != mtu || plen >= rs.wrLeft)) {
		rs.inMsg = msgNone
		rs.nak(q, r.psn, roce.NAKInvalidRequest, em)
		return false
	}
	if imm && rs.n == 0 {
		rs.rnr(q, r.psn, em)
		return false
	}
	if plen > 0 {
		b, ok := rs.wrMR.slice(rs.wrVA, plen)
		if !ok {
			rs.inMsg = msgNone
			rs.nak(q, r.psn, roce.NAKRemoteAccessError, em)
			return false
		}
		rs.wrMR.mu.Lock()
		copy(b, r.payload)
		rs.wrMR.mu.Unlock()
	}
	rs.wrVA += uint64(plen)
	rs.wrLeft -= plen
	if !lastPkt {
		rs.inMsg = msgWrite
		return true
	}
	if imm {
		rs.completeRecv(q, verbs.WC{Status: verbs.StatusSuccess, Op: verbs.OpRecvImm, Imm: r.imm, HasImm: true, ByteLen: rs.wrLen})
	}
	rs.msn = (rs.msn + 1) & roce.MaxMSN
	rs.inMsg = msgNone
	rs.wrMR = nil
	return true
}

// executeRead answers an RDMA READ request (IBA 9.7.5, RDMA READ; rxe
// read_reply): it must not interrupt a message, its R_Key and range must
// allow remote reads (else NAK), and it consumes one PSN per response
// packet; the responses acknowledge implicitly.
func (rs *recvSide) executeRead(q *QP, r *rxReq, em emitter) {
	if rs.inMsg != msgNone {
		rs.nak(q, r.psn, roce.NAKInvalidRequest, em)
		return
	}
	m, b, res := q.dev.mrs.remote(r.rkey, r.va, r.dmaLen, verbs.AccessRemoteRead)
	if res != accessOK {
		rs.nak(q, r.psn, roce.NAKRemoteAccessError, em)
		return
	}
	rs.msn = (rs.msn + 1) & roce.MaxMSN
	rs.ePSN = rs.ePSN.Add(int(readPackets(r.dmaLen, q.mtu)))
	rs.ackPending, rs.unacked = false, 0
	rs.readResponses(q, m, b, r.psn, em)
}

// executeAtomic performs a CMP_SWAP or FETCH_ADD (IBA 9.7.5, atomic
// operations; rxe atomic_reply): an 8-byte aligned VA with remote atomic
// access, executed once under the region's lock, its original value kept
// for the replay of a duplicate, and answered by an ATOMIC ACK, which
// acknowledges implicitly.
func (rs *recvSide) executeAtomic(q *QP, r *rxReq, em emitter) {
	if rs.inMsg != msgNone || r.va%8 != 0 {
		rs.nak(q, r.psn, roce.NAKInvalidRequest, em)
		return
	}
	m, b, res := q.dev.mrs.remote(r.rkey, r.va, 8, verbs.AccessRemoteAtomic)
	if res != accessOK {
		rs.nak(q, r.psn, roce.NAKRemoteAccessError, em)
		return
	}
	if t := q.dev.timing; t != nil {
		t.throttleAtomic(q, m, r.va)
	}
	cas := r.op == roce.OpRCCompareSwap
	orig := atomicApply(m, b, cas, r.compare, r.swapAdd)
	if f := q.dev.cfg.OnAtomic; f != nil {
		f(ExecutedAtomic{Now: q.dev.now(), MR: m, VA: r.va, CAS: cas, Compare: r.compare, SwapAdd: r.swapAdd, Orig: orig})
	}
	rs.atomicsDone++
	rs.atomics[rs.nextAt] = atomicRec{psn: r.psn, orig: orig, valid: true}
	rs.nextAt = (rs.nextAt + 1) % atomicReplay
	rs.msn = (rs.msn + 1) & roce.MaxMSN
	rs.ePSN = rs.ePSN.Add(1)
	rs.ackPending, rs.unacked = false, 0
	em.emit(q, txPkt{op: roce.OpRCAtomicAcknowledge, psn: r.psn, syndrome: ackSyndrome, msn: rs.msn, orig: orig})
}

// scheduleAck acknowledges a SEND or WRITE packet that asked for it (IBA
// 9.7.5, ACK generation; coalescing is this RNIC's, see the file comment):
// at once under AckEach or when AckCoalesceMax are pending, otherwise at
// the end of the receive burst (flushAck).
func (rs *recvSide) scheduleAck(q *QP, ackReq bool, em emitter) {
	if !ackReq {
		return
	}
	rs.ackPending = true
	rs.unacked++
	if q.dev.cfg.AckMode == AckEach || rs.unacked >= q.dev.cfg.AckCoalesceMax {
		rs.sendAck(q, em)
	}
}

// readPackets returns the number of response packets of a READ of n bytes.
func readPackets(n, mtu uint32) uint32 {
	if n == 0 {
		return 1
	}
	return (n + mtu - 1) / mtu
}

// readResponses emits the responses of a READ of b, starting at psn.
func (rs *recvSide) readResponses(q *QP, m *MR, b []byte, psn roce.PSN, em emitter) {
	mtu := q.mtu
	n := readPackets(uint32(len(b)), mtu)
	m.mu.Lock()
	for k := uint32(0); k < n; k++ {
		var p txPkt
		p.psn = psn.Add(int(k))
		off := k * mtu
		end := off + mtu
		if end > uint32(len(b)) {
			end = uint32(len(b))
		}
		p.payload = b[off:end]
		switch {
		case n == 1:
			p.op = roce.OpRCReadResponseOnly
		case k == 0:
			p.op = roce.OpRCReadResponseFirst
		case k == n-1:
			p.op = roce.OpRCReadResponseLast
		default:
			p.op = roce.OpRCReadResponseMiddle
		}
		p.syndrome, p.msn = ackSyndrome, rs.msn
		em.emit(q, p)
	}
	m.mu.Unlock()
}

// duplicate handles a request whose PSN precedes ePSN.
func (rs *recvSide) duplicate(q *QP, r *rxReq, em emitter) {
	rs.duplicates++
	switch {
	case r.op == roce.OpRCReadRequest:
		m, b, res := q.dev.mrs.remote(r.rkey, r.va, r.dmaLen, verbs.AccessRemoteRead)
		if res != accessOK {
			return
		}
		rs.readResponses(q, m, b, r.psn, em)
	case isAtomicOp(r.op):
		for i := range rs.atomics {
			a := &rs.atomics[i]
			if a.valid && a.psn == r.psn {
				em.emit(q, txPkt{op: roce.OpRCAtomicAcknowledge, psn: r.psn, syndrome: ackSyndrome, msn: rs.msn, orig: a.orig})
				return
			}
		}
		// Too old to replay: drop (the requester cannot still be waiting).
	case isSendOp(r.op) || isWriteOp(r.op):
		rs.scheduleAck(q, true, em)
	}
}

func (rs *recvSide) completeRecv(q *QP, wc verbs.WC) {
	r := &rs.ring[rs.head]
	wc.ID, wc.QPN = r.id, q.qpn
	q.recvCQ.push(wc)
	rs.head = (rs.head + 1) % len(rs.ring)
	rs.n--
}

func (rs *recvSide) sendAETH(q *QP, psn roce.PSN, syn roce.Syndrome, em emitter) {
	rs.ackPending, rs.unacked = false, 0
	em.emit(q, txPkt{op: roce.OpRCAcknowledge, psn: psn, syndrome: syn, msn: rs.msn})
}

// sendAck emits a cumulative ACK for everything before ePSN.
func (rs *recvSide) sendAck(q *QP, em emitter) {
	rs.acksSent++
	rs.sendAETH(q, rs.ePSN.Add(-1), ackSyndrome, em)
}

// flushAck emits the pending coalesced ACK, if any.
func (rs *recvSide) flushAck(q *QP, em emitter) {
	if rs.ackPending {
		rs.sendAck(q, em)
	}
}

func (rs *recvSide) nak(q *QP, psn roce.PSN, code uint8, em emitter) {
	rs.sendAETH(q, psn, roce.NAKSyndrome(code), em)
}

func (rs *recvSide) rnr(q *QP, psn roce.PSN, em emitter) {
	rs.rnrNAKsSent++
	rs.nakSent = true // later packets of this gap get no sequence NAK
	rs.sendAETH(q, psn, roce.RNRNAKSyndrome(roce.RNRTimerCode(q.dev.cfg.RNRTimer)), em)
}
