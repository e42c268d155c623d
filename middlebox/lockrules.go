package middlebox

import (
	"github.com/swordbox/swordbox/roce"
)

// Two rules for lock traffic on a shared connection (Sherman's lock words,
// docs/middlebox.md "Sherman"): a CMP_SWAP that is known to fail is
// answered by the engine itself (answerFailedCAS), and a request that may
// not yet move to another connection waits in the engine instead of being
// dropped and NAKed (parkBehindBarrier, releaseParked).

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
	o, first, frame := e.forwardRequest(e.now, si, ci, home, pk.psn, npkts, cls, va, dmaLen, p)
	c.nakPending = pend
	e.forwardCopy(o, first, frame, out)
	e.c.ParkedSent++
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
	sv := &e.servers[e.conns[oi].srv]
	if sv.shared == oi {
		sv.noLocal = true
	}
	if c.fcount == 0 && c.park.ok && c.park.word == 0 {
		c.park.ok = false
		e.c.ParkedDiscarded++
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
