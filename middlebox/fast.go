package middlebox

import (
	"encoding/binary"

	"github.com/swordbox/swordbox/roce"
)

// The fast path.
//
// In steady state nearly every frame has the common layout (untagged
// Ethernet, a 20-byte IPv4 header, UDP to port 4791, a BTH without pad)
// and is the common case of its kind: an in-order WRITE_ONLY, READ
// (one response packet), CMP_SWAP or FETCH_ADD from a known connection
// whose addresses the engine has learned, or an ACK, ATOMIC ACK or READ
// response on a known outgoing connection. For those, Process works at constant offsets
// in the frame instead of parsing it into a roce.Packet first, and goes
// straight to the steps the general path would take (admit, record,
// atomicWord, forward; arrived, ack, atomicAck, readResp), which are
// shared.
//
// The fast path only ever decides to handle a frame before it changes
// anything: every test it makes is one of the general path's (the parser's
// fast layout included), so a frame it refuses takes the general path
// from the start, and a frame it accepts meets the same state changes,
// counters and output bytes either way. TestFastPathMatchesGeneral runs
// traces through two engines, one of them with the fast path off, and
// compares them frame by frame.
//
// Not on the fast path: Clover steering of requests (READ responses take
// it, and rule 14 of steer.go in readResp), learning a connection or its
// addresses, retransmissions and gaps, multi-packet requests, VLAN tags
// and IPv4 options.

// Offsets of the common layout.
const (
	xIP  = roce.EthernetLen
	xUDP = xIP + roce.IPv4MinLen
	xBTH = xUDP + roce.UDPLen
	xExt = xBTH + roce.BTHLen

	// IPv4 total lengths by kind (headers, extension header, ICRC).
	xHdrs      = roce.IPv4MinLen + roce.UDPLen + roce.BTHLen
	xReadLen   = xHdrs + roce.RETHLen + roce.ICRCLen
	xAtomicLen = xHdrs + roce.AtomicETHLen + roce.ICRCLen
	xAckLen    = xHdrs + roce.AETHLen + roce.ICRCLen
	xAtAckLen  = xAckLen + roce.AtomicAckETHLen

	xMinFrame = xIP + xAckLen // the shortest frame the fast path takes
)

// fastFits reports whether a frame in the layout of roce.ParseInto's fast
// path (roce.FixedLayout) has room for the fast path's fixed offsets and no
// pad. It is inlined: with roce.FixedLayout the layout check is one call.
func fastFits(f []byte) bool {
	return len(f) >= xMinFrame && f[xBTH+roce.BTHFlagsOff]&0x30 == 0 // PadCnt
}

// xHeaders is headers for the common layout (f at least xExt bytes long).
func xHeaders(f []byte) (*[roce.EthernetLen]byte, *[roce.IPv4MinLen]byte, *[roce.UDPLen]byte, *[roce.BTHLen]byte) {
	h := (*[xExt]byte)(f)
	return (*[roce.EthernetLen]byte)(h[:]), (*[roce.IPv4MinLen]byte)(h[xIP:]), (*[roce.UDPLen]byte)(h[xUDP:]), (*[roce.BTHLen]byte)(h[xBTH:])
}

// fastRequest handles f, received from a client, if it is the common case
// (see above), and reports whether it did.
func (e *Engine) fastRequest(now int64, f []byte, out *Out) bool {
	end, ok := roce.FixedLayout(f)
	if !ok || !fastFits(f) || e.steer != nil {
		return false
	}
	total := end - xIP
	op := roce.Opcode(f[xBTH+roce.BTHOpcodeOff])
	var cls opClass
	switch op {
	case roce.OpRCWriteOnly:
		cls = opWriteOnly
		if total < xReadLen {
			return false
		}
	case roce.OpRCReadRequest:
		cls = opRead
		if total != xReadLen {
			return false
		}
	case roce.OpRCCompareSwap, roce.OpRCFetchAdd:
		cls = opAtomic
		if total != xAtomicLen {
			return false
		}
	default:
		return false
	}
	_ = f[xIP+xReadLen-1] // the shortest of the three
	be := binary.BigEndian
	si, ok := e.serverOf(f[xIP+roce.IPv4DstOff : xIP+roce.IPv4DstOff+4])
	if !ok {
		return false
	}
	ci, ok := e.req.get(uint64(be.Uint32(f[xIP+roce.IPv4SrcOff:]))<<32|uint64(be.Uint32(f[xIP+roce.IPv4DstOff:])),
		uint64(be.Uint16(f[xUDP+roce.UDPSrcPortOff:]))<<32|uint64(be.Uint32(f[xBTH+roce.BTHDestQPOff-1:])&roce.MaxQP))
	if !ok {
		return false
	}
	c := &e.conns[ci]
	psn := roce.PSN(be.Uint32(f[xBTH+roce.BTHAckPSNOff:]) & roce.MaxPSN)
	if psn != c.inNext || !c.inKnown || !c.outKnown || !c.macKnown || !c.pkeyKnown || c.park.ok {
		return false
	}
	bad := icrcErrAt(f, xIP, end-roce.ICRCLen) // carried into the rewritten frame's ICRC (putICRC)
	if bad != 0 && e.verify {
		e.c.Drops[DropBadICRC]++
		return true
	}

	c.lastSeen = now
	sv := &e.servers[si]
	va := be.Uint64(f[xExt:]) // the RETH's or AtomicETH's
	var dmaLen uint32
	if cls != opAtomic {
		dmaLen = be.Uint32(f[xExt+roce.RETHDMALenOff:])
	}
	if op == roce.OpRCCompareSwap && e.local && e.answerFailedCAS(c, ci, si, psn, va, be.Uint64(f[xExt+roce.AtomicCompareOff:]), bad, f, out) {
		return true
	}
	inRange := inRanges(sv.remap, va)
	home, npkts, ok := e.admit(c, ci, sv, cls, inRange, ci, psn, dmaLen, f, out)
	if !ok {
		return true
	}
	o := &e.conns[home]
	first := e.record(c, o, ci, home, psn, npkts, cls, op == roce.OpRCFetchAdd)
	if home == sv.shared && sv.atSend {
		noteSharedData(o, sv, first, npkts, cls, va, dmaLen)
	}
	if home != ci {
		eth, ip, udp, b := xHeaders(f)
		retargetRequestHdrs(eth, ip, udp, b, o)
		e.c.Remapped++
	}
	icrcOff := end - roce.ICRCLen
	conv, rbad := false, bad
	switch cls {
	case opAtomic:
		if inRanges(sv.cas, va) {
			var v uint64
			conv, v = e.atomicWord(si, first, va, op == roce.OpRCFetchAdd,
				be.Uint64(f[xExt+roce.AtomicSwapAddOff:]), be.Uint64(f[xExt+roce.AtomicCompareOff:]), home == sv.shared)
			if conv {
				f = roce.AtomicToWrite20(f, xIP, v)
				icrcOff = xIP + roce.AtomicWriteLen20 - roce.ICRCLen
				bad = roce.ICRCErrorShorter4(bad)
			}
		}
	case opWriteOnly:
		if len(sv.cas) > 0 && inRanges(sv.cas, va) {
			e.writeOnWords(si, f[xExt+roce.RETHLen:icrcOff], dmaLen, first, va, home == sv.shared)
		}
	}
	if outPSN := first.outPSN; home != ci || outPSN != psn || conv {
		put24(f[xBTH+roce.BTHAckPSNOff+1:], uint32(outPSN))
		// ComputeChecksum is called here, not through UpdateChecksum, so that
		// PGO inlines it: the profile names this call site, and a call inside
		// an inlined wrapper matches no call site of the profile.
		ip := roce.IPv4(f[xIP:xUDP])
		ip.SetChecksum(ip.ComputeChecksum())
		putICRC(f, xIP, icrcOff, bad)
	}
	e.forward(o, first, f, out)
	if conv && op == roce.OpRCCompareSwap && e.sent != nil { // e.sent: some server answers at sending
		e.answerAtSend(c, o, first, f, rbad, out)
	}
	return true
}

// fastResponse handles f, received from a server, if it is an ACK, ATOMIC
// ACK or READ response in the common layout on a known outgoing
// connection, and reports whether it did.
func (e *Engine) fastResponse(now int64, f []byte, out *Out) bool {
	end, ok := roce.FixedLayout(f)
	if !ok || !fastFits(f) {
		return false
	}
	total := end - xIP
	op := roce.Opcode(f[xBTH+roce.BTHOpcodeOff])
	switch {
	case op == roce.OpRCAcknowledge && total == xAckLen:
	case op == roce.OpRCAtomicAcknowledge && total == xAtAckLen:
	case op == roce.OpRCReadResponseMiddle:
	case op >= roce.OpRCReadResponseFirst && op <= roce.OpRCReadResponseOnly && total >= xAckLen:
	default:
		return false
	}
	be := binary.BigEndian
	if _, ok := e.serverOf(f[xIP+roce.IPv4SrcOff : xIP+roce.IPv4SrcOff+4]); !ok {
		return false
	}
	oi, ok := e.rev.get(uint64(be.Uint32(f[xIP+roce.IPv4SrcOff:]))<<32|uint64(be.Uint32(f[xIP+roce.IPv4DstOff:])),
		uint64(be.Uint32(f[xBTH+roce.BTHDestQPOff-1:])&roce.MaxQP))
	if !ok {
		return false
	}
	if e.verify && icrcErrAt(f, xIP, end-roce.ICRCLen) != 0 {
		e.c.Drops[DropBadICRC]++
		return true
	}
	psn := roce.PSN(be.Uint32(f[xBTH+roce.BTHAckPSNOff:]) & roce.MaxPSN)
	syn := roce.Syndrome(f[xExt+roce.AETHSyndromeOff])
	e.arrived(now, oi, be.Uint16(f[xUDP+roce.UDPSrcPortOff:]))
	switch op {
	case roce.OpRCAcknowledge:
		e.ack(now, oi, psn, syn, out)
		return true
	case roce.OpRCAtomicAcknowledge:
	default:
		e.readResp(oi, psn, op, f, end-roce.ICRCLen, nil, out)
		return true
	}
	if !syn.IsACK() {
		e.c.Drops[DropMalformed]++
		return true
	}
	_ = f[xIP+xAtAckLen-1]
	e.atomicAck(oi, psn, be.Uint64(f[xExt+roce.AETHLen+roce.AtomicAckOrigOff:]), out)
	return true
}
