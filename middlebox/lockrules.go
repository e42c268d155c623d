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
	ok  bool
	n   uint8
	psn roce.PSN
	buf [parkBytes]byte
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
// instead of forwarding a WRITE of the unchanged value. It reports whether
// it answered.
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
func (e *Engine) answerFailedCAS(c *conn, ci, si int32, psn roce.PSN, va, cmp uint64, bad uint32, out *Out) bool {
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
	c.inRing[uint32(psn)&uint32(len(c.inRing)-1)] = inRef{out: -1}
	c.inNext = psn.Add(1)
	c.nakSent, c.nakPending = false, false
	c.msn = (c.msn + 1) & roce.MaxMSN
	e.emitAtomicAck(out, c, psn, w.value, c.msn)
	c.rememberAtomic(psn, w.value)
	e.c.CASAnsweredLocally++
	return true
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
	if c.fcount == 0 && c.park.ok {
		c.park.ok = false
		e.c.ParkedDiscarded++
	}
}
