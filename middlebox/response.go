package middlebox

import (
	"encoding/binary"

	"github.com/swordbox/swordbox/roce"
)

// response handles a frame from a managed server: ACK, NAK, ATOMIC ACK or
// READ response on an outgoing connection.
func (e *Engine) response(now int64, p *roce.Packet, out *Out) {
	psn := roce.PSN(p.BTH.PSN())
	oi, ok := e.rev.get(uint64(binary.BigEndian.Uint32(p.IP[roce.IPv4SrcOff:]))<<32|uint64(binary.BigEndian.Uint32(p.IP[roce.IPv4DstOff:])),
		uint64(p.BTH.DestQP()))
	if !ok {
		k := revKey{
			srv: [4]byte(p.IP[roce.IPv4SrcOff : roce.IPv4SrcOff+4]),
			cli: [4]byte(p.IP[roce.IPv4DstOff : roce.IPv4DstOff+4]),
			qp:  p.BTH.DestQP(),
		}
		if oi, ok = e.bind(k, psn, p, out); !ok {
			return
		}
	}
	e.arrived(now, oi, p.UDP.SrcPort())
	switch p.Opcode {
	case roce.OpRCAcknowledge:
		e.ack(now, oi, psn, p.AETH.Syndrome(), out)
	case roce.OpRCAtomicAcknowledge:
		if !p.AETH.Syndrome().IsACK() {
			e.c.Drops[DropMalformed]++
			return
		}
		e.atomicAck(oi, psn, p.AtomicAckETH.Orig(), out)
	default:
		e.readResp(oi, psn, p.Opcode, p.Frame, p.ICRCOff, p, out)
	}
}

// arrived notes a response on outgoing connection oi from UDP source port
// sport, and starts the bookkeeping of the clients it touches.
func (e *Engine) arrived(now int64, oi int32, sport uint16) {
	o := &e.conns[oi]
	o.lastSeen = now
	o.srvPort = sport
	e.epoch++
	e.touched = e.touched[:0]
}

// ack handles an ACK, NAK or RNR NAK (syndrome syn) for outgoing PSN psn
// on connection oi.
func (e *Engine) ack(now int64, oi int32, psn roce.PSN, syn roce.Syndrome, out *Out) {
	switch syn.Kind() {
	case roce.KindACK:
		e.c.ServerACKs++
		e.serverAck(oi, psn, out)
	case roce.KindNAK:
		e.c.ServerNAKs++
		if syn.NAKCode() == roce.NAKPSNSequenceError {
			e.c.ServerSeqNAKs++
			e.seqNAK(now, oi, psn, out)
		} else {
			e.otherNAK(oi, psn, syn, true, out)
		}
	case roce.KindRNRNAK:
		e.c.ServerNAKs++
		e.otherNAK(oi, psn, syn, false, out)
	default:
		e.c.Drops[DropMalformed]++
	}
}

// bind finds the learned connection a response with an unknown response key
// belongs to: the one unbound connection between these two hosts with an
// outstanding operation at this PSN. No candidate: the frame is not ours and
// passes through.
func (e *Engine) bind(k revKey, psn roce.PSN, p *roce.Packet, out *Out) (int32, bool) {
	found := int32(-1)
	for i := range e.conns {
		c := &e.conns[i]
		if c.bound || c.srvIP != k.srv || c.cliIP != k.cli || !c.outKnown {
			continue
		}
		en := c.slot(psn)
		if !en.valid || en.done || en.outPSN != psn {
			continue
		}
		if found >= 0 {
			e.c.Drops[DropAmbiguousReverse]++
			return -1, false
		}
		found = int32(i)
	}
	if found < 0 {
		e.pass(ServerSide, p.Frame, out)
		return -1, false
	}
	c := &e.conns[found]
	c.cliQP, c.bound, c.tmpl.ok = k.qp, true, false
	if p.AETH == nil {
		c.msn = 0
	} else {
		c.msn = e.msnBefore(c, psn, p)
	}
	r0, r1 := k.words()
	e.rev.put(r0, r1, found)
	e.c.Bound++
	return found, true
}

// msnBefore estimates, for a connection learned in mid-life, the MSN its
// client had seen before the operations this response completes: the
// server's MSN minus the messages outstanding up to psn. (A connection
// learned from its first packet starts at 0 either way.)
func (e *Engine) msnBefore(c *conn, psn roce.PSN, p *roce.Packet) uint32 {
	msn := p.AETH.MSN()
	if p.Opcode == roce.OpRCReadResponseFirst {
		return msn
	}
	n := uint32(0)
	for q := c.ackedTo.Add(1); q.Sub(psn) <= 0; q = q.Add(1) {
		en := c.slot(q)
		if en.valid && en.outPSN == q && !en.done && (en.msgEnd && en.kind != kReadCont) {
			n++
		}
	}
	return (msn - n) & roce.MaxMSN
}

func (e *Engine) touch(ci int32) {
	c := &e.conns[ci]
	if c.mark != e.epoch {
		c.mark = e.epoch
		e.touched = append(e.touched, ci)
	}
}

// ackRange marks the outgoing PSNs (o.ackedTo, upto] as acknowledged by the
// server (explicitly or implicitly) and notes their clients. It reports
// false if upto is not an outstanding PSN of o.
func (e *Engine) ackRange(oi int32, upto roce.PSN) bool {
	o := &e.conns[oi]
	if upto.Sub(o.outNext) >= 0 {
		return false
	}
	if upto.Sub(o.ackedTo) <= 0 {
		return true
	}
	o.replaying = false
	for q := o.ackedTo.Add(1); ; q = q.Add(1) {
		en := o.slot(q)
		if en.valid && en.outPSN == q && !en.done {
			switch {
			case en.reread:
				e.complete(o, en) // answers nobody: the client has its answer or will resend
			case en.kind == kAtomicSent:
				e.sentDone(en) // answered at sending (answerAtSend)
			case en.kind == kPlain || en.kind == kAtomicConv:
				en.srvAcked = true
				e.touch(en.client)
			default:
				e.touch(en.client)
			}
		}
		if q == upto {
			break
		}
	}
	o.ackedTo = upto
	return true
}

func (e *Engine) flushTouched(out *Out) {
	for _, ci := range e.touched {
		e.flush(ci, out)
	}
}

// complete marks an entry acknowledged to its client. Small enough to be
// inlined; a multi-packet READ or a foreign entry takes completeMore.
func (e *Engine) complete(o *conn, en *entry) {
	en.done = true
	if en.kind == kRead && en.npkts > 1 || en.foreign {
		e.completeMore(o, en)
	}
}

// completeMore is complete's rarer part: a READ's later PSNs, and the
// foreign count.
func (e *Engine) completeMore(o *conn, en *entry) {
	if en.kind == kRead {
		for i := uint32(1); i < en.npkts; i++ {
			q := en.outPSN.Add(int(i))
			if s := o.slot(q); s.valid && s.outPSN == q && s.client == en.client {
				s.done = true
			}
		}
	}
	if en.foreign {
		e.servers[en.fsrv].foreign--
		en.foreign = false
	}
}

// flush acknowledges to client ci, in its PSN order, every outstanding
// operation that is complete: one ACK for a run of WRITEs (the last one's
// PSN: ACKs are cumulative), one ATOMIC ACK per atomic. It stops at the
// first incomplete operation, so no frame ever implicitly acknowledges an
// operation the server has not completed.
func (e *Engine) flush(ci int32, out *Out) {
	c := &e.conns[ci]
	if c.fcount > 0 {
		o := &e.conns[c.outConn]
		pend, pendPSN := false, roce.PSN(0)
	loop:
		for c.fcount > 0 {
			h := c.fifoHead()
			en := o.slot(h)
			if !en.valid || en.client != ci || en.outPSN != h || en.done {
				c.fifoPop() // cannot happen: entries are not overwritten before done
				continue
			}
			switch en.kind {
			case kPlain:
				if !en.srvAcked {
					break loop
				}
				pend, pendPSN = true, en.inPSN
				if en.msgEnd {
					c.msn = (c.msn + 1) & roce.MaxMSN
				}
			case kAtomicConv, kAtomicPass:
				if en.kind == kAtomicConv && !en.srvAcked || en.kind == kAtomicPass && !en.respSeen {
					break loop
				}
				c.msn = (c.msn + 1) & roce.MaxMSN
				e.emitAtomicAck(out, c, en.inPSN, en.prior, c.msn)
				c.rememberAtomic(en.inPSN, en.prior)
				pend = false
			default:
				break loop
			}
			e.complete(o, en)
			c.fifoPop()
		}
		if pend {
			e.emitAck(out, c, pendPSN, roce.ACKSyndrome(roce.CreditInvalid), c.msn)
		}
	}
	if c.fcount == 0 && c.park.ok && c.park.word == 0 {
		e.releaseParked(ci, out)
	}
	if c.nakPending { // rare: the call is made only then, inlined or not
		e.pendingNAK(c, out)
	}
}

// serverAck handles a (coalesced) ACK for outgoing PSN psn.
//
// It is kept out of ack for profile-guided optimization (without a
// profile it is too large to be inlined anyway). The profile's call edges
// name the function that makes the call, and the compiler inlines a hot
// call only into the function that holds it in the source: with serverAck
// inlined into ack, its calls to ackRange and flushTouched would be ack's,
// which the profile does not name, and would stay calls (measured:
// EngineMix/icrc-check ~3 ns/frame slower with PGO than with serverAck on
// its own, which inlines both).
//
//go:noinline
func (e *Engine) serverAck(oi int32, psn roce.PSN, out *Out) {
	o := &e.conns[oi]
	if psn.Sub(o.ackedTo) <= 0 {
		// A cumulative ACK again (the server's answer to a duplicate):
		// nothing new is acknowledged, and duplicates of completed
		// operations are answered by the middlebox itself (retransmit).
		e.c.Drops[DropDupIgnored]++
		return
	}
	if !e.ackRange(oi, psn) {
		e.c.Drops[DropUnknownResponse]++
		return
	}
	e.flushTouched(out)
}

// dupResponse re-sends to its owner the answer to a duplicate request the
// server answered again (the client's earlier answer was lost). The
// answer is only re-sent for an operation already acknowledged to the
// client; one still waiting on an earlier operation will be answered in
// order.
func (e *Engine) dupResponse(oi int32, psn roce.PSN, orig uint64, atomic bool, out *Out) {
	o := &e.conns[oi]
	en := o.slot(psn)
	if !en.valid || en.outPSN != psn || !en.done {
		e.c.Drops[DropDupIgnored]++
		return
	}
	c := &e.conns[en.client]
	switch en.kind {
	case kPlain:
		e.emitAck(out, c, en.inPSN, roce.ACKSyndrome(roce.CreditInvalid), c.msn)
	case kAtomicConv:
		e.emitAtomicAck(out, c, en.inPSN, en.prior, c.msn)
	case kAtomicPass:
		if atomic {
			orig = en.prior
		}
		e.emitAtomicAck(out, c, en.inPSN, orig, c.msn)
	default:
		e.c.Drops[DropDupIgnored]++
		return
	}
	e.c.DupResponses++
}

// seqNAK handles a NAK PSN sequence error at psn (go-back-N, section 4.5):
// everything before psn is acknowledged, and every client with operations
// outstanding on the connection gets its own NAK at its oldest outstanding
// PSN, so that it resends from there.
func (e *Engine) seqNAK(now int64, oi int32, psn roce.PSN, out *Out) {
	if !e.ackRange(oi, psn.Add(-1)) {
		e.c.Drops[DropUnknownResponse]++
		return
	}
	e.flushTouched(out)
	o := &e.conns[oi]
	if e.replay && oi == e.servers[o.srv].shared {
		e.replayFrom(oi, psn, now, out)
		return
	}
	e.epoch++
	n := len(o.ring)
	for q, i := o.outNext.Add(-n), 0; i < n; q, i = q.Add(1), i+1 {
		en := o.slot(q)
		if !en.valid || en.outPSN != q || en.done {
			continue
		}
		c := &e.conns[en.client]
		if c.mark == e.epoch || c.fcount == 0 || c.outConn != oi {
			continue
		}
		c.mark = e.epoch
		h := o.slot(c.fifoHead())
		e.emitAck(out, c, h.inPSN, roce.NAKSyndrome(roce.NAKPSNSequenceError), c.msn)
	}
}

// otherNAK forwards a NAK other than a sequence error (or an RNR NAK) to
// the owner of the operation, with the owner's PSN. Fatal NAKs complete the
// operation (the client's QP goes to the error state anyway).
func (e *Engine) otherNAK(oi int32, psn roce.PSN, syn roce.Syndrome, fatal bool, out *Out) {
	if !e.ackRange(oi, psn.Add(-1)) {
		e.c.Drops[DropUnknownResponse]++
		return
	}
	e.flushTouched(out)
	o := &e.conns[oi]
	en := o.slot(psn)
	if !en.valid || en.outPSN != psn || en.done {
		e.c.Drops[DropUnknownResponse]++
		return
	}
	if en.kind == kAtomicSent { // answered at sending (answerAtSend): its client is not told
		if !fatal {
			e.c.Drops[DropRespBlocked]++ // the server wants it again: the next NAK or retransmission resends it
			return
		}
		e.sentDone(en)
		e.c.AtSendFailed++
		e.sharedFailed(oi)
		return
	}
	c := &e.conns[en.client]
	if c.fcount == 0 || c.fifoHead() != psn || c.outConn != oi {
		e.c.Drops[DropRespBlocked]++
		return
	}
	e.emitAck(out, c, en.inPSN, syn, c.msn)
	if fatal {
		e.complete(o, en)
		c.fifoPop()
		e.fatalOnShared(oi, c)
	}
}

// atomicAck handles the ATOMIC ACK of an atomic sent unchanged: it learns
// the word's value and answers the client in order.
func (e *Engine) atomicAck(oi int32, psn roce.PSN, orig uint64, out *Out) {
	o := &e.conns[oi]
	if psn.Sub(o.outNext) >= 0 {
		e.c.Drops[DropUnknownResponse]++
		return
	}
	en := o.slot(psn)
	if !en.valid || en.outPSN != psn || en.kind != kAtomicPass {
		e.c.Drops[DropUnknownResponse]++
		return
	}
	if en.done {
		e.dupResponse(oi, psn, orig, false, out)
		return
	}
	e.ackRange(oi, psn.Add(-1))
	if psn.Sub(o.ackedTo) > 0 {
		o.ackedTo = psn
	}
	if !en.respSeen {
		// The client's answer (and every repeat of it) carries prior: the
		// word read, or the steerer's vouch for a chained link (rule 13);
		// the word is learned from what memory held.
		prior := orig
		if e.steer != nil {
			c := &e.conns[en.client]
			prior = e.steer.atomicAck(e.now, c.cliIP, c.srvIP, uint32(en.inPSN), orig) // confirms or drops a cached tail
		}
		en.respSeen, en.prior = true, prior
		if en.word >= 0 && !en.foreign && e.servers[o.srv].foreign == 0 {
			if e.words.slots[en.word].learn(en.wordSeq, orig) {
				e.c.WordsLearned++
			}
		}
	}
	e.touch(en.client)
	e.flushTouched(out)
}

// readResp maps a READ response packet (opcode op, in frame f with its
// ICRC at icrcOff) back to the client that issued the READ: its MACs, IPs,
// QP, PSN and MSN. p is the parsed packet, or nil when f has the fast
// path's layout (fast.go).
func (e *Engine) readResp(oi int32, psn roce.PSN, op roce.Opcode, f []byte, icrcOff int, p *roce.Packet, out *Out) {
	o := &e.conns[oi]
	if psn.Sub(o.outNext) >= 0 {
		e.c.Drops[DropUnknownResponse]++
		return
	}
	en := o.slot(psn)
	if !en.valid || en.outPSN != psn || (en.kind != kRead && en.kind != kReadCont) {
		e.c.Drops[DropUnknownResponse]++
		return
	}
	first := psn
	if en.kind == kReadCont {
		first = en.readFirst(psn)
	}
	rd := o.slot(first)
	if !rd.valid || rd.outPSN != first || rd.kind != kRead || rd.client != en.client {
		e.c.Drops[DropUnknownResponse]++
		return
	}
	ci := en.client
	c := &e.conns[ci]
	last := op == roce.OpRCReadResponseLast || op == roce.OpRCReadResponseOnly
	switch {
	case !rd.done && !rd.reread:
		e.ackRange(oi, first.Add(-1))
		e.flushTouched(out)
		if c.fcount == 0 || c.fifoHead() != first || c.outConn != oi {
			e.c.Drops[DropRespBlocked]++
			return
		}
	case !rd.done: // a READ sent again (reissueRead): a duplicate response
		e.ackRange(oi, first.Add(-1))
		e.flushTouched(out)
		e.c.DupResponses++
	default:
		e.c.DupResponses++
	}
	if psn.Sub(o.ackedTo) > 0 {
		o.ackedTo = psn
	}
	msn := c.msn
	completes := last && !rd.done && !rd.reread && psn == first.Add(int(rd.npkts)-1)
	if completes {
		msn = (msn + 1) & roce.MaxMSN
	}
	hasAETH := op != roce.OpRCReadResponseMiddle
	var bad uint32 // the ICRC error to carry (icrc.go); with verification, the frame is intact
	if p == nil {  // the fast path: the common layout, at constant offsets
		if !e.verify {
			bad = icrcErrAt(f, xIP, icrcOff)
		}
		if e.steer != nil && op == roce.OpRCReadResponseOnly {
			// Rule 14 (steer.go): before the IPs are retargeted.
			e.steer.readResponse(e.now, [4]byte(f[xIP+roce.IPv4SrcOff:]),
				int(binary.BigEndian.Uint16(f[xUDP+roce.UDPLengthOff:])), f[xExt+roce.AETHLen:icrcOff])
		}
		if hasAETH {
			put24(f[xExt+roce.AETHMSNOff:], msn)
		}
		if oi != ci {
			retargetResponse(f, xIP, xUDP, xBTH, c)
		}
		put24(f[xBTH+roce.BTHAckPSNOff+1:], uint32(en.inPSN))
		ip := roce.IPv4(f[xIP:xUDP])
		ip.SetChecksum(ip.ComputeChecksum()) // not UpdateChecksum: see fastRequest
		putICRC(f, xIP, icrcOff, bad)
	} else {
		if !e.verify {
			bad = icrcErrOf(p)
		}
		if e.steer != nil && op == roce.OpRCReadResponseOnly {
			e.steer.readResponse(e.now, p.IP.Src(), int(p.UDP.Length()), p.Payload)
		}
		if oi != ci {
			retargetResponse(f, p.L3Off, p.L4Off, p.BTHOff, c)
		}
		p.BTH.SetPSN(uint32(en.inPSN))
		if p.AETH != nil {
			p.AETH.SetMSN(msn)
		}
		finish(p, bad)
	}
	if !out.addInput(ClientSide, f) {
		e.c.Drops[DropOutOverflow]++
		return
	}
	e.c.ReadRespOut++
	e.c.TxClient++
	if completes {
		c.msn = msn
		e.complete(o, rd)
		c.fifoPop()
		e.flush(ci, out)
	}
	if rd.reread && last && !rd.done && psn == first.Add(int(rd.npkts)-1) {
		e.complete(o, rd)
	}
}

// readFirst returns the outgoing PSN of the READ a continuation entry at
// psn belongs to.
func (en *entry) readFirst(psn roce.PSN) roce.PSN { return psn.Add(-int(en.npkts)) }
