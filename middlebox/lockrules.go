package middlebox

import (
	"github.com/swordbox/swordbox/roce"
)

// Rules for lock traffic on a shared connection (Sherman's lock words,
// docs/middlebox.md "Sherman"): a CMP_SWAP that is known to fail is
// answered by the engine itself, or held until its word changes
// (answerFailedCAS, waitOnWord); a converted CMP_SWAP is answered when its
// WRITE is sent (answerAtSend); and a request that may not yet move to
// another connection waits in the engine instead of being dropped and
// NAKed (parkBehindBarrier, releaseParked).

// parkBytes is the largest request frame a client connection can park: an
// 8-byte WRITE (a lock release, 82 bytes in the common layout), a CMP_SWAP
// or FETCH_ADD (86), a READ request (78), with room for a VLAN tag and IPv4
// options.
const parkBytes = 128

// parked is a client's request held behind the barrier (parkBehindBarrier):
// its PSN and a copy of the frame as received.
type parked struct {
	ok   bool
	n    uint8
	psn  roce.PSN
	word int32  // a CMP_SWAP waiting on a word (waitOnWord): the word's index + 1; 0: held at the barrier
	cmp  uint64 // its compare value
	buf  [parkBytes]byte
}

// requestICRCErr returns the ICRC error a parsed request carries (icrc.go):
// zero when the engine verifies ICRCs (a bad one was dropped before).
func (e *Engine) requestICRCErr(p *roce.Packet) uint32 {
	if e.verify {
		return 0
	}
	return icrcErrOf(p)
}

// answerFailedCAS is the local-answer rule (ServerConfig.AnswerFailedCAS): a CMP_SWAP (client connection
// ci, c = e.conns[ci], server si, client PSN psn) on a tracked word whose
// value is known and differs from its compare value cmp fails, and the
// engine answers it itself with an ATOMIC ACK carrying the known value
// instead of forwarding a WRITE of the unchanged value; with
// WaitFailedCAS it holds it instead (waitOnWord), and answers a held one
// that arrives again (answerWaiter). It reports whether it answered or
// held the request.
//
// The value is known for certain when every operation on the word travels
// on the server's shared connection, which the server executes in the
// order the engine sends them, and the engine has applied each one to its
// cache when sending it (words.go: seeded at startup, or learned from an
// ATOMIC ACK). The failed CMP_SWAP changes nothing, so placing it at this
// point of the shared connection's order is a valid linearization: every
// operation before it was sent, so issued, before it was answered, and
// every later one is sent after. Unknown, and forwarded as before: a word
// never seeded nor learned, or touched by an operation not on the shared
// connection (foreign: sendUnknown) or by a WRITE whose bytes the engine
// did not see (later packets), and every word of a server whose shared
// connection had an operation fail fatally (fatalOnShared: the cache
// applied an operation the server did not execute). Loss, duplicates and
// retransmissions on the shared connection do not make a value unknown:
// the server executes each PSN once, in order, and a retransmission is
// sent exactly as the original.
//
// The answer is an RC response like any other (IBA 9.7.5): it goes out
// only when the client has no operation outstanding (so it is in the
// client's PSN order and acknowledges nothing incomplete), it takes the
// client's next MSN, and it is remembered among the client's answered
// atomics, so a duplicate of the request (a retransmission, or a copy made
// by a link) is answered identically by answerForgotten, whose retransmission
// index entry it clears. A corrupted request (carried ICRC error bad, when
// the engine does not verify) is forwarded, for the server to drop.
func (e *Engine) answerFailedCAS(c *conn, ci, si int32, psn roce.PSN, va, cmp uint64, bad uint32, frame []byte, out *Out) bool {
	if pk := &c.park; pk.ok && pk.word != 0 && pk.psn == psn {
		return e.answerWaiter(c, ci, psn, bad, out)
	}
	sv := &e.servers[si]
	if !sv.local || e.steer != nil || sv.noLocal || bad != 0 || c.fcount != 0 || !c.ready() || sv.shared < 0 || va&7 != 0 {
		return false
	}
	if sv.shared != ci && !e.conns[sv.shared].ready() {
		return false
	}
	if !inRanges(sv.remap, va) || !inRanges(sv.cas, va) {
		return false
	}
	wi := e.words.lookup(si, va, false)
	if wi < 0 {
		return false
	}
	w := &e.words.slots[wi]
	if !w.known || w.value == cmp {
		return false
	}
	if sv.wait && e.waitOnWord(w, wi, c, ci, psn, cmp, frame) {
		return true
	}
	e.answerFailed(c, psn, w.value, out)
	return true
}

// answerWaiter handles a CMP_SWAP of client ci (c) at PSN psn that is
// waiting on a word (waitOnWord) and arrives again: its requester's
// retransmission timer fired (the word kept a value that fails it for that
// long), or a link copied it. It is answered now, as failed, with the
// word's value (while a CMP_SWAP waits, its word is known and fails it:
// wakeWaiters sends it otherwise). A corrupted copy (carried ICRC error
// bad) is dropped: the waiting one stands. It reports true: the frame is
// handled.
func (e *Engine) answerWaiter(c *conn, ci int32, psn roce.PSN, bad uint32, out *Out) bool {
	if bad != 0 {
		e.c.ParkedDuplicates++
		return true
	}
	w := &e.words.slots[c.park.word-1]
	e.unwait(w, ci)
	c.park.ok, c.park.word = false, 0
	e.c.CASWaitAnswered++
	e.answerFailed(c, psn, w.value, out)
	return true
}

// answerFailed answers client c's CMP_SWAP at PSN psn, which fails on a
// word holding v, with an ATOMIC ACK carrying v: the client's next PSN and
// MSN, remembered for its duplicates (answerForgotten), whose
// retransmission index entry it clears.
func (e *Engine) answerFailed(c *conn, psn roce.PSN, v uint64, out *Out) {
	c.inRing[uint32(psn)&uint32(len(c.inRing)-1)] = inRef{out: -1}
	c.inNext = psn.Add(1)
	c.nakSent, c.nakPending = false, false
	c.msn = (c.msn + 1) & roce.MaxMSN
	e.emitAtomicAck(out, c, psn, v, c.msn)
	c.rememberAtomic(psn, v)
	e.c.CASAnsweredLocally++
}

// parkBehindBarrier is the parking rule: a single-packet request (class
// cls, client PSN psn, the frame as received) whose home connection
// differs from the one its client's operations are outstanding on may not
// leave yet (the barrier, package doc); instead of dropping it and NAKing
// the client once they complete (which costs the client a NAK and a
// retransmission, one round trip to the client and back), the engine keeps
// a copy and sends it itself once they complete (releaseParked). The
// ordering is the barrier's: the request leaves the engine, and changes
// the cached value of any word it writes, only after the server has
// acknowledged every earlier operation of its client (Sherman: the lock's
// release only after the page WRITE it follows). The client's expected
// PSN does not move, so a later request is a gap (dropped, NAKed once the
// parked one completes) and the parked request's own retransmission is
// dropped (the copy goes). It reports whether the request was parked or
// already was; false for multi-packet requests and SENDs, frames larger
// than parkBytes, or a client that has another request parked (the caller
// drops and NAKs as before). frame is nil when the parked request itself
// is being sent.
func (e *Engine) parkBehindBarrier(c *conn, cls opClass, psn roce.PSN, frame []byte) bool {
	if frame == nil || cls != opWriteOnly && cls != opRead && cls != opAtomic {
		return false
	}
	pk := &c.park
	if pk.ok {
		if pk.psn == psn {
			e.c.ParkedDuplicates++
			return true
		}
		return false
	}
	if len(frame) > parkBytes {
		return false
	}
	pk.ok, pk.psn, pk.n = true, psn, uint8(len(frame))
	copy(pk.buf[:], frame)
	e.c.Parked++
	return true
}

// releaseParked sends the request client ci parked (parkBehindBarrier),
// now that it has no operation outstanding: it goes through the same route,
// admission and recording as when it arrived, as a generated frame. A
// gap NAK that a later request earned while it was parked stays pending
// (for after it completes). If it is still not admitted (its ring is
// full), the client is NAKed at its PSN, as without parking.
func (e *Engine) releaseParked(ci int32, out *Out) {
	c := &e.conns[ci]
	pk := &c.park
	pk.ok = false
	p := &e.ppkt
	if pk.psn != c.inNext || roce.ParseInto(p, pk.buf[:pk.n]) != nil {
		e.c.Drops[DropMalformed]++ // cannot happen: the PSN does not move while parked, the frame parsed
		e.gap(c, out)
		return
	}
	si := c.srv
	sv := &e.servers[si]
	cls := classify(p.Opcode)
	home, va, dmaLen, inRange := e.routeRequest(c, ci, sv, cls, p)
	home, npkts, ok := e.admit(c, ci, sv, cls, inRange, home, pk.psn, dmaLen, nil, out)
	if !ok {
		e.gap(c, out)
		return
	}
	pend := c.nakPending
	bad := e.requestICRCErr(p)
	o, first, frame := e.forwardRequest(e.now, si, ci, home, pk.psn, npkts, cls, va, dmaLen, p)
	c.nakPending = pend
	e.forwardCopy(o, first, frame, out)
	e.c.ParkedSent++
	if first.kind == kAtomicConv { // a FETCH_ADD is refused there (en.fa)
		e.answerAtSend(c, o, first, frame, bad, out)
	}
}

// forwardCopy is forward for a frame that is not the received one (a
// parked request): it is copied into out's arena.
func (e *Engine) forwardCopy(o *conn, first *entry, frame []byte, out *Out) {
	if o.log != nil && len(frame) <= len(o.log.buf) {
		first.fpos, first.flen = o.log.put(frame), uint16(len(frame))
	}
	f := out.alloc(ServerSide, len(frame))
	if f == nil {
		e.c.Drops[DropOutOverflow]++ // like a loss on the way: replay or the client's timer recovers it
		return
	}
	copy(f, frame)
	e.c.Requests++
	e.c.TxServer++
}

// fatalOnShared applies a fatal NAK on outgoing connection oi to the two
// lock rules: on a server's shared connection it means the cache applied
// an operation the server did not execute, so no value of that server is
// trusted for local answers again (answerFailedCAS); and the client c,
// whose QP the NAK puts in the error state, loses a request it parked.
func (e *Engine) fatalOnShared(oi int32, c *conn) {
	if c.fcount == 0 && c.park.ok && c.park.word == 0 {
		c.park.ok = false
		e.c.ParkedDiscarded++
	}
	e.sharedFailed(oi)
}

// sharedFailed applies a fatal NAK on outgoing connection oi to the word
// cache: on a server's shared connection the cache applied an operation
// the server did not execute, so no value of that server is trusted for
// local answers again, and the CMP_SWAPs waiting on its words go to the
// server.
func (e *Engine) sharedFailed(oi int32) {
	sv := &e.servers[e.conns[oi].srv]
	if sv.shared == oi {
		sv.noLocal = true
	}
	if sv.noLocal {
		for i := range e.conns { // rare: the waiting CMP_SWAPs go to the server
			if w := e.conns[i].park.word; e.conns[i].park.ok && w != 0 && e.words.slots[w-1].srv == e.conns[oi].srv {
				e.wordChanged(w - 1)
			}
		}
	}
}

// waitOnWord is the waiting rule (ServerConfig.WaitFailedCAS): a CMP_SWAP
// (client ci, c, PSN psn, compare cmp, frame as received) that
// answerFailedCAS found would fail on word wi (w) waits in the engine,
// queued on the word in arrival order, instead of being answered at once:
// its requester would CAS again at once, and the spinning of every waiter
// through the engine and the client NICs would delay the holder. The
// client's expected PSN does not move (a later request is a gap, NAKed
// after it completes). Whenever the engine sends an operation that changes
// the word, or makes it unknown, its waiters are evaluated again in order
// (wakeWaiters): one whose compare value now matches, or every one of an
// unknown word, is sent as when it arrived (releaseParked), so the first
// waiter takes a released lock in the very step that sends the release.
// A waiter's retransmission (the requester's RC timer fired: the word kept
// a value that fails it for that long) is answered as failed with the
// value then known (answerFailedCAS), so no requester exhausts its retries
// behind a lock that is not released. It reports false for a frame larger
// than parkBytes (answered at once).
func (e *Engine) waitOnWord(w *word, wi int32, c *conn, ci int32, psn roce.PSN, cmp uint64, frame []byte) bool {
	if len(frame) > parkBytes {
		return false
	}
	pk := &c.park
	pk.ok, pk.psn, pk.n, pk.word, pk.cmp = true, psn, uint8(len(frame)), wi+1, cmp
	copy(pk.buf[:], frame)
	c.wnext = 0
	if w.wtail == 0 {
		w.whead = ci + 1
	} else {
		e.conns[w.wtail-1].wnext = ci + 1
	}
	w.wtail = ci + 1
	c.nakSent, c.nakPending = false, false
	e.c.CASWaited++
	return true
}

// unwait takes client ci out of word w's waiters.
func (e *Engine) unwait(w *word, ci int32) {
	prev := int32(0)
	for x := w.whead; x != 0; x = e.conns[x-1].wnext {
		if x == ci+1 {
			e.dequeue(w, prev, x)
			return
		}
		prev = x
	}
}

// dequeue removes waiter x (conn index + 1), whose predecessor is prev (0:
// x is the head), from word w's waiters.
func (e *Engine) dequeue(w *word, prev, x int32) {
	next := e.conns[x-1].wnext
	if prev == 0 {
		w.whead = next
	} else {
		e.conns[prev-1].wnext = next
	}
	if w.wtail == x {
		w.wtail = prev
	}
	e.conns[x-1].wnext = 0
}

// wordChanged notes that the engine sends an operation on word wi (or
// makes it unknown): if CMP_SWAPs wait on it, it is woken once the current
// frame is handled (Process, wakeWaiters), so their requests go out after
// the operation that changed it.
func (e *Engine) wordChanged(wi int32) {
	w := &e.words.slots[wi]
	if w.whead != 0 && !w.wakeMark {
		w.wakeMark = true
		e.wake = append(e.wake, wi)
	}
}

// wakeWaiters evaluates again, in arrival order, the CMP_SWAPs waiting on
// the words whose value changed (waitOnWord): a waiter whose compare value
// now equals the known value, or every waiter of a word no longer known
// (or of a server whose shared connection failed), is sent as when it
// arrived. A waiter that succeeds changes the word, so the rest are
// evaluated again against its value.
func (e *Engine) wakeWaiters(out *Out) {
	for i := 0; i < len(e.wake); i++ {
		wi := e.wake[i]
		w := &e.words.slots[wi]
		w.wakeMark = false
		prev := int32(0)
		for x := w.whead; x != 0; {
			c := &e.conns[x-1]
			next := c.wnext
			if w.known && !e.servers[w.srv].noLocal && c.park.cmp != w.value {
				prev, x = x, next
				continue
			}
			e.dequeue(w, prev, x)
			c.park.word = 0
			e.releaseParked(x-1, out)
			e.c.CASWoken++
			x = next
		}
	}
	e.wake = e.wake[:0]
}

// sentSlots is how many WRITEs answered at sending (answerAtSend) may wait
// for the server's ACK at once; one more is answered at its ACK.
const sentSlots = 256

// sentCopy is the engine's copy of a WRITE it answered at sending, kept
// until the server acknowledges it (the replay log may overwrite its own).
type sentCopy struct {
	n   uint8
	buf [parkBytes]byte
}

// answerAtSend is the answer-at-send rule (ServerConfig.AnswerAtSend): a
// CMP_SWAP of client c that the engine has just sent as a WRITE of its
// outcome on its server's shared connection o (map entry en, frame as
// sent) is answered now, with an ATOMIC ACK carrying the prior value,
// instead of when the server acknowledges the WRITE. Its client's only
// outstanding operation was this one (so the answer is in its PSN order
// and acknowledges nothing incomplete); its entry leaves the client's FIFO
// (kAtomicSent: the client may move on to another connection at once) and
// completes when the server acknowledges its PSN; a duplicate of the
// request is answered from the client's answered atomics
// (answerForgotten).
//
// Why the answer may go before the server executed the WRITE: the word's
// value the client learns is the engine's cached one, in which the engine
// applied every operation on the word in the order it sent them on the
// shared connection; the server executes them in that order, and nothing
// reads the word at the server except later operations on the shared
// connection, which it executes after this WRITE. So the CMP_SWAP takes
// effect, for every observer, at this point of the shared connection's
// order: a later CMP_SWAP on the word, converted or answered by the
// engine, sees its outcome (mutual exclusion of a lock so acquired). The
// release-after-data ordering is untouched: the release that freed the
// word was sent only after the server acknowledged every earlier
// operation of its client (parkBehindBarrier), the data WRITE among them,
// so an operation the new holder sends after this answer, on any
// connection, reaches a server that has already executed that data. That
// holds when the data and the release travel on different connections.
// When they travel on the shared connection itself (the releasing client's
// own connection is the shared one, or its operations followed an
// outstanding one there), nothing holds the release: RC order puts the
// data before the grant at the server, but only among the shared
// connection's operations, and the new holder's READ goes on its own. So
// no CMP_SWAP is answered at sending while a request that may change
// memory other than the lock words is unacknowledged on the shared
// connection (dataOutstanding): it is answered at the server's ACK, which
// acknowledges that request too.
//
// What is acknowledged may not be lost: the engine keeps its own copy of
// the WRITE in e.sent until the server acknowledges its PSN, and resends
// it (replayFrom) whenever the server NAKs an earlier or equal PSN
// (sequence error) and whenever a client resends a request on the shared
// connection while this WRITE is the oldest one unacknowledged
// (retransmit), since no client will resend it. Duplicates reach the
// server at most as RC duplicates (re-ACKed, executed once). A frame that
// arrived corrupted (bad, carried when the engine does not verify ICRCs)
// is not answered: the server drops it and its client must resend it. A
// fatal NAK for such a WRITE (only a configuration error can cause one:
// a lock word outside the server's region or rkey) cannot be taken back;
// it is counted (AtSendFailed) and ends local answers for the server, as
// any fatal NAK on the shared connection does. With every copy slot taken
// the CMP_SWAP is answered at the server's ACK, as without the rule.
func (e *Engine) answerAtSend(c, o *conn, en *entry, frame []byte, bad uint32, out *Out) {
	sv := &e.servers[o.srv]
	if !sv.atSend || en.fa || bad != 0 || sv.noLocal || e.steer != nil || o.log == nil || c.fcount != 1 ||
		c.fifoHead() != en.outPSN || !c.ready() || len(frame) > parkBytes {
		return
	}
	if dataOutstanding(o) {
		e.c.AtSendBehindData++
		return
	}
	if len(e.sentFree) == 0 {
		e.c.AtSendStoreFull++
		return
	}
	slot := e.sentFree[len(e.sentFree)-1]
	e.sentFree = e.sentFree[:len(e.sentFree)-1]
	cp := &e.sent[slot]
	cp.n = uint8(len(frame))
	copy(cp.buf[:], frame)
	en.kind, en.npkts = kAtomicSent, uint32(slot)
	c.fifoPop()
	c.inRing[uint32(en.inPSN)&uint32(len(c.inRing)-1)] = inRef{out: -1}
	c.msn = (c.msn + 1) & roce.MaxMSN
	e.emitAtomicAck(out, c, en.inPSN, en.prior, c.msn)
	c.rememberAtomic(en.inPSN, en.prior)
	e.c.CASAnsweredAtSend++
	e.pendingNAK(c, out)
}

// noteSharedData notes a request sent on server sv's shared connection o
// (map entry first, npkts outgoing PSNs, class cls, at va for dmaLen bytes)
// that may change memory other than sv's lock words (cas-to-write ranges):
// anything but a READ, an atomic on a lock word or a WRITE within them.
// answerAtSend answers no CMP_SWAP while such a request is unacknowledged
// (dataOutstanding).
func noteSharedData(o *conn, sv *server, first *entry, npkts uint32, cls opClass, va uint64, dmaLen uint32) {
	switch cls {
	case opRead:
		return
	case opAtomic:
		if inRanges(sv.cas, va) {
			return
		}
	case opWriteOnly:
		if inRanges(sv.cas, va) && (dmaLen == 0 || inRanges(sv.cas, va+uint64(dmaLen)-1)) {
			return
		}
	}
	o.dataTo, o.dataOut = first.outPSN.Add(int(npkts)-1), true
}

// dataOutstanding reports whether a request noted by noteSharedData on
// shared connection o is not yet acknowledged by the server. Outstanding
// PSNs lie within the ring after o.ackedTo, so a dataTo outside that
// window was acknowledged (the flag is cleared then).
func dataOutstanding(o *conn) bool {
	if !o.dataOut {
		return false
	}
	if d := o.dataTo.Sub(o.ackedTo); d > 0 && int(d) <= len(o.ring) {
		return true
	}
	o.dataOut = false
	return false
}

// sentDone completes a WRITE answered at sending (kAtomicSent): the server
// acknowledged it, or refused it fatally. Its copy's slot is free again.
func (e *Engine) sentDone(en *entry) {
	en.done = true
	e.sentFree = append(e.sentFree, int32(en.npkts))
}

// resendSent puts the engine's copy of the WRITE answered at sending (en,
// kAtomicSent) in out, towards the server. It reports false when out is
// full.
func (e *Engine) resendSent(en *entry, out *Out) bool {
	cp := &e.sent[en.npkts]
	f := out.alloc(ServerSide, int(cp.n))
	if f == nil {
		e.c.Drops[DropOutOverflow]++ // the next NAK or client retransmission resends it
		return false
	}
	copy(f, cp.buf[:cp.n])
	e.c.AtSendResent++
	e.c.TxServer++
	return true
}

// sentPending reports whether the oldest PSN of shared connection o that the
// server has not acknowledged belongs to a WRITE answered at sending: no
// client will resend it, so the engine does (retransmit).
func sentPending(o *conn) bool {
	q := o.ackedTo.Add(1)
	en := o.slot(q)
	return q != o.outNext && en.valid && en.outPSN == q && en.kind == kAtomicSent && !en.done
}

// pendingNAK sends the gap NAK client c earned while an operation was
// outstanding, once none is.
func (e *Engine) pendingNAK(c *conn, out *Out) {
	if c.fcount == 0 && c.nakPending && !c.nakSent {
		e.emitAck(out, c, c.inNext, roce.NAKSyndrome(roce.NAKPSNSequenceError), c.msn)
		c.nakSent, c.nakPending = true, false
		e.c.GapNAKs++
	}
}
