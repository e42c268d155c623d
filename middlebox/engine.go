package middlebox

import (
	"encoding/binary"
	"fmt"

	"github.com/swordbox/swordbox/roce"
)

// Engine is the deterministic middlebox: a function from (frame, side,
// time) to frames out, plus its tables. It is not safe for concurrent use;
// run one Engine per core (see Sharded).
type Engine struct {
	cfg     Config
	servers []server
	srvIPs  []uint32 // servers[i].ip, for a linear scan (few servers)
	conns   []conn
	req     connTable
	rev     connTable
	words   wordTable
	c       Counters
	pkt     roce.Packet
	epoch   uint32
	touched []int32 // scratch: clients touched by one response
	replay  bool
	verify  bool
	fast    bool // take the fast path (fast.go) when it applies; off in tests only
	// fastHits counts the frames the fast path handled (not a Counter: the
	// tests compare the Counters of engines with and without it).
	fastHits uint64
	steer    *steerer
	pmtu     uint32
	now      int64       // the time of the frame being processed (for parked requests sent later)
	ppkt     roce.Packet // a parked request being sent (releaseParked): e.pkt may be in use
	wake     []int32     // words with waiting CMP_SWAPs whose value changed (wordChanged)
	local    bool        // some server answers or holds failed lock CMP_SWAPs (lockrules.go)
	sent     []sentCopy  // copies of the WRITEs answered at sending (answerAtSend), until acknowledged
	sentFree []int32     // free slots of sent
}

// New returns an engine for cfg (validated; defaults applied).
func New(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := cfg.withDefaults()
	e := &Engine{
		cfg:     d,
		conns:   make([]conn, 0, d.MaxConns),
		req:     newConnTable(d.MaxConns),
		rev:     newConnTable(d.MaxConns),
		words:   newWordTable(d.MaxWords),
		touched: make([]int32, 0, d.MaxConns),
		wake:    make([]int32, 0, d.MaxWords+d.MaxConns),
		pmtu:    uint32(d.PMTU),
		replay:  d.NAKRecovery == NAKReplay,
		verify:  !d.SkipICRCCheck,
		fast:    true,
	}
	for _, s := range d.Servers {
		ip, _ := parseIP4(s.IP)
		sv := server{ip: ip.As4(), remap: s.Remap, cas: s.CASToWrite, shared: -1, local: s.AnswerFailedCAS || s.WaitFailedCAS, wait: s.WaitFailedCAS, atSend: s.AnswerAtSend}
		if s.SharedClientIP != "" {
			a, _ := parseIP4(s.SharedClientIP)
			sv.wantCli, sv.wantQP, sv.wantSet = a.As4(), s.SharedServerQP, true
		}
		e.local = e.local || sv.local
		e.srvIPs = append(e.srvIPs, uint32(ip4(sv.ip)))
		e.servers = append(e.servers, sv)
		if sv.atSend && e.sent == nil {
			e.sent, e.sentFree = make([]sentCopy, sentSlots), make([]int32, sentSlots)
			for i := range e.sentFree {
				e.sentFree[i] = int32(sentSlots - 1 - i)
			}
		}
	}
	for _, w := range d.Words {
		for si, s := range e.servers {
			if !inRanges(s.cas, w.VA) {
				continue
			}
			if wi := e.words.lookup(int32(si), w.VA, true); wi >= 0 {
				e.words.slots[wi].known, e.words.slots[wi].value = true, w.Value
			}
		}
	}
	if d.Steering != nil {
		e.steer = newSteerer(d.Steering, &e.c)
	}
	for i, cc := range d.Conns {
		p, _ := cc.parse()
		if _, err := e.addConn(p, false); err != nil {
			return nil, fmt.Errorf("middlebox: conns[%d]: %w", i, err)
		}
	}
	return e, nil
}

// AddConn preloads a connection (as if it were listed in Config.Conns).
func (e *Engine) AddConn(cc ConnConfig) error {
	p, err := cc.parse()
	if err != nil {
		return fmt.Errorf("middlebox: add conn: %w", err)
	}
	_, err = e.addConn(p, false)
	return err
}

// Counters returns a copy of the engine's counters.
func (e *Engine) Counters() Counters { return e.c }

func (e *Engine) addConn(p connParams, learned bool) (int32, error) {
	si, ok := e.serverOf(p.srvIP[:])
	if !ok {
		return -1, fmt.Errorf("middlebox: connection to %v: not a configured server", p.srvIP)
	}
	k := reqKey{cli: p.cliIP, srv: p.srvIP, port: p.cliPort, qp: p.srvQP}
	if _, dup := e.req.get(k.words()); dup {
		return -1, fmt.Errorf("middlebox: connection %v:%d -> %v QP %#x: already known", p.cliIP, p.cliPort, p.srvIP, p.srvQP)
	}
	if len(e.conns) == cap(e.conns) {
		return -1, fmt.Errorf("middlebox: connection table full (%d)", cap(e.conns))
	}
	ci := int32(len(e.conns))
	sv := &e.servers[si]
	isShared := false
	if sv.shared < 0 {
		if sv.wantSet {
			isShared = sv.wantCli == p.cliIP && sv.wantQP == p.srvQP
		} else {
			isShared = true
		}
	}
	rs := e.cfg.ConnRingSize
	if isShared {
		rs = e.cfg.RingSize
	}
	e.conns = append(e.conns, conn{
		srv: si, cliIP: p.cliIP, srvIP: p.srvIP, cliMAC: p.cliMAC, srvMAC: p.srvMAC, macKnown: p.macKnown,
		cliPort: p.cliPort, srvPort: p.srvPort, srvQP: p.srvQP, cliQP: p.cliQP, bound: !learned,
		learned: learned, outConn: -1, msgOut: -1, pkey: 0xffff,
		fifo: make([]roce.PSN, e.cfg.Window), inRing: make([]inRef, e.cfg.Window),
		ring: make([]entry, rs), rmask: uint32(rs - 1),
	})
	c := &e.conns[ci]
	if isShared && e.replay {
		c.log = newReplayLog(e.cfg.ReplayLogBytes)
	}
	if p.psnKnown {
		psn := roce.PSN(p.psn)
		c.inKnown, c.inNext = true, psn
		c.outKnown, c.outNext, c.ackedTo = true, psn, psn.Add(-1)
	}
	if isShared {
		sv.shared = ci
	}
	k0, k1 := k.words()
	e.req.put(k0, k1, ci)
	if !learned {
		r0, r1 := revKey{srv: p.srvIP, cli: p.cliIP, qp: p.cliQP}.words()
		e.rev.put(r0, r1, ci)
	}
	return ci, nil
}

// Process handles one frame received on side in at time now (nanoseconds,
// any epoch; used for idle bookkeeping only). The frame may be rewritten in
// place; every frame to send, including the input when it is forwarded,
// is appended to out in order. Process never panics on input and does not
// allocate in the steady state (learning a connection allocates once).
func (e *Engine) Process(now int64, in Side, frame []byte, out *Out) {
	e.now = now
	if in == ClientSide {
		e.c.RxClient++
		if e.fast && e.fastRequest(now, frame, out) {
			e.fastHits++
		} else {
			e.general(now, in, frame, out)
		}
	} else {
		e.c.RxServer++
		if e.fast && e.fastResponse(now, frame, out) {
			e.fastHits++
		} else {
			e.general(now, in, frame, out)
		}
	}
	// The waiting CMP_SWAPs of the words the frame changed are woken
	// (lockrules.go): their requests go out after the frame's.
	if len(e.wake) > 0 {
		e.wakeWaiters(out)
	}
}

// general is Process for a frame the fast path did not take: parsed in
// full, then a request, a response or passed through.
func (e *Engine) general(now int64, in Side, frame []byte, out *Out) {
	p := &e.pkt
	if err := roce.ParseInto(p, frame); err != nil {
		if pe, ok := err.(*roce.ParseError); ok && pe.NotRoCE() {
			e.pass(in, frame, out)
			return
		}
		e.c.Drops[DropMalformed]++
		return
	}
	if in == ClientSide {
		si, ok := e.serverOf(p.IP[roce.IPv4DstOff : roce.IPv4DstOff+4])
		if !ok || !isRequest(p.Opcode) {
			e.pass(in, frame, out)
			return
		}
		if e.verify && !p.ICRCOK() {
			e.c.Drops[DropBadICRC]++
			return
		}
		e.request(now, si, p, out)
		return
	}
	_, ok := e.serverOf(p.IP[roce.IPv4SrcOff : roce.IPv4SrcOff+4])
	if !ok || !isResponse(p.Opcode) {
		e.pass(in, frame, out)
		return
	}
	if e.verify && !p.ICRCOK() {
		e.c.Drops[DropBadICRC]++
		return
	}
	e.response(now, p, out)
}

func (e *Engine) pass(in Side, frame []byte, out *Out) {
	if !out.addInput(in.Other(), frame) {
		e.c.Drops[DropOutOverflow]++
		return
	}
	e.c.Passthrough++
	e.tx(in.Other())
}

func (e *Engine) tx(s Side) {
	if s == ClientSide {
		e.c.TxClient++
	} else {
		e.c.TxServer++
	}
}

func isRequest(op roce.Opcode) bool {
	return op <= roce.OpRCReadRequest || op == roce.OpRCCompareSwap || op == roce.OpRCFetchAdd ||
		op == roce.OpRCSendLastInvalidate || op == roce.OpRCSendOnlyInvalidate
}

func isResponse(op roce.Opcode) bool {
	return op >= roce.OpRCReadResponseFirst && op <= roce.OpRCAtomicAcknowledge
}

// opClass classifies a request.
type opClass uint8

const (
	opSend      opClass = iota + 1 // SEND*, WRITE with immediate: consumes a receive WQE, never remapped
	opWriteOnly                    // single-packet WRITE
	opMultiFirst
	opMultiMid
	opMultiLast
	opRead
	opAtomic
)

func classify(op roce.Opcode) opClass {
	switch op {
	case roce.OpRCWriteOnly:
		return opWriteOnly
	case roce.OpRCReadRequest:
		return opRead
	case roce.OpRCCompareSwap, roce.OpRCFetchAdd:
		return opAtomic
	case roce.OpRCWriteFirst:
		return opMultiFirst
	case roce.OpRCWriteMiddle, roce.OpRCSendMiddle:
		return opMultiMid
	case roce.OpRCWriteLast:
		return opMultiLast
	case roce.OpRCSendFirst:
		return opMultiFirst
	case roce.OpRCSendLast, roce.OpRCSendLastImm, roce.OpRCWriteLastImm, roce.OpRCSendLastInvalidate:
		return opMultiLast
	}
	return opSend
}

// lookupReq finds or learns the connection of a request.
func (e *Engine) lookupReq(si int32, p *roce.Packet) (int32, bool) {
	// The key's two words straight from the headers (reqKey.words order).
	k0 := uint64(binary.BigEndian.Uint32(p.IP[roce.IPv4SrcOff:]))<<32 | uint64(binary.BigEndian.Uint32(p.IP[roce.IPv4DstOff:]))
	k1 := uint64(p.UDP.SrcPort())<<32 | uint64(p.BTH.DestQP())
	if ci, ok := e.req.get(k0, k1); ok {
		return ci, true
	}
	k := reqKey{
		cli:  [4]byte(p.IP[roce.IPv4SrcOff : roce.IPv4SrcOff+4]),
		srv:  [4]byte(p.IP[roce.IPv4DstOff : roce.IPv4DstOff+4]),
		port: p.UDP.SrcPort(),
		qp:   p.BTH.DestQP(),
	}
	ci, err := e.addConn(connParams{cliIP: k.cli, srvIP: k.srv, cliPort: k.port, srvQP: k.qp}, true)
	if err != nil {
		e.c.Drops[DropTableFull]++
		return -1, false
	}
	e.c.Learned++
	return ci, true
}

// request handles a request from a client on the general path, one rule
// after another: the connection's addresses are learned (learnRequest),
// the PSN gate passes only the expected PSN (gateRequest), the route picks
// the outgoing connection (routeRequest), admission checks that it fits
// (admit), and the request is recorded, transformed and forwarded
// (forwardRequest).
func (e *Engine) request(now int64, si int32, p *roce.Packet, out *Out) {
	ci, ok := e.lookupReq(si, p)
	if !ok {
		return
	}
	c := &e.conns[ci]
	c.lastSeen = now
	psn := roce.PSN(p.BTH.PSN())
	learnRequest(c, p, psn)
	if !e.gateRequest(now, ci, psn, p, out) {
		return
	}
	if c.park.ok && (c.park.word == 0 || p.Opcode != roce.OpRCCompareSwap) {
		// The parked request's PSN (the expected one does not move while
		// it is parked): a copy of it, or, from a broken requester, another
		// request at that PSN; the parked one stands (a waiting CMP_SWAP's
		// copy is answered: answerFailedCAS).
		e.c.ParkedDuplicates++
		return
	}
	cls := classify(p.Opcode)
	sv := &e.servers[si]
	home, va, dmaLen, inRange := e.routeRequest(c, ci, sv, cls, p)
	var bad uint32
	if p.Opcode == roce.OpRCCompareSwap {
		bad = e.requestICRCErr(p)
		if e.answerFailedCAS(c, ci, si, psn, va, p.AtomicETH.Compare(), bad, p.Frame, out) {
			return
		}
	}
	home, npkts, ok := e.admit(c, ci, sv, cls, inRange, home, psn, dmaLen, p.Frame, out)
	if !ok {
		return
	}
	o, first, frame := e.forwardRequest(now, si, ci, home, psn, npkts, cls, va, dmaLen, p)
	e.forward(o, first, frame, out)
	if first.kind == kAtomicConv && e.sent != nil {
		e.answerAtSend(c, o, first, frame, bad, out)
	}
}

// learnRequest takes from a client's request what the connection does not
// know yet: the MAC addresses and P_Key its answers must carry, and, on the
// first request seen, the PSN both sides of the connection start from.
func learnRequest(c *conn, p *roce.Packet, psn roce.PSN) {
	if !c.macKnown {
		c.cliMAC, c.srvMAC, c.macKnown = p.Eth.Src(), p.Eth.Dst(), true
		c.tmpl.ok = false
	}
	if !c.pkeyKnown {
		c.pkey, c.pkeyKnown = p.BTH.PKey(), true
		c.tmpl.ok = false
	}
	if !c.inKnown {
		c.inKnown, c.inNext = true, psn
	}
	if !c.outKnown {
		c.outKnown, c.outNext, c.ackedTo = true, psn, psn.Add(-1)
	}
}

// gateRequest is the in-order gate per client (package doc; the
// responder's PSN check, IBA 9.7.5): an earlier PSN is a retransmission
// (retransmit), a later one a gap (dropped, the client told once by gap),
// and only the expected PSN goes on (true).
func (e *Engine) gateRequest(now int64, ci int32, psn roce.PSN, p *roce.Packet, out *Out) bool {
	c := &e.conns[ci]
	d := psn.Sub(c.inNext)
	switch {
	case d < 0:
		e.retransmit(now, ci, psn, p, out)
		return false
	case d > 0:
		e.c.Drops[DropPSNGap]++
		e.gap(c, out)
		return false
	}
	return true
}

// routeRequest finds where a request would go (the paper's remapping):
// its own connection, unless its VA is in a remapped range of the server
// (single-packet requests only; a multi-packet one is counted), or it
// continues a message that went elsewhere. It returns that connection, the
// request's VA and DMA length, and whether the VA is in a remapped range.
func (e *Engine) routeRequest(c *conn, ci int32, sv *server, cls opClass, p *roce.Packet) (home int32, va uint64, dmaLen uint32, inRange bool) {
	home = ci
	switch {
	case p.RETH != nil:
		va, dmaLen = p.RETH.VA(), p.RETH.DMALen()
	case p.AtomicETH != nil:
		va = p.AtomicETH.VA()
	}
	switch cls {
	case opWriteOnly, opRead, opAtomic:
		inRange = inRanges(sv.remap, va)
	case opMultiFirst:
		if p.RETH != nil && inRanges(sv.remap, va) {
			e.c.RangeMultiPacket++
		}
	case opMultiMid, opMultiLast:
		if c.inMsg && c.msgOut >= 0 {
			home = c.msgOut
		}
	}
	return home, va, dmaLen, inRange
}

// forwardRequest readies an admitted request to be forwarded: steered
// first (Clover, steer.go; remap ranges matched the client's own address,
// before steering), recorded in the map (paper Figure 7), its atomic
// turned into a WRITE or its WRITE noted where the VA is a CAS word
// (words.go), retargeted to its outgoing connection and PSN, and its ICRC
// computed with the received frame's error carried (icrc.go). It returns
// the outgoing connection, the first map entry and the frame, for forward
// (a received frame) or forwardCopy (a parked one).
func (e *Engine) forwardRequest(now int64, si, ci, home int32, psn roce.PSN, npkts uint32, cls opClass, va uint64, dmaLen uint32, p *roce.Packet) (*conn, *entry, []byte) {
	c, sv := &e.conns[ci], &e.servers[si]
	var bad uint32 // the ICRC error to carry (icrc.go); with verification, the frame is intact
	if !e.verify {
		bad = icrcErrOf(p)
	}
	steered := false
	if e.steer != nil {
		steered = e.steer.request(now, p)
		if steered && cls == opAtomic {
			va = p.AtomicETH.VA()
		}
	}
	o := &e.conns[home]
	first := e.record(c, o, ci, home, psn, npkts, cls, p.Opcode == roce.OpRCFetchAdd)
	outPSN := first.outPSN
	remapped := home != ci
	onShared := home == sv.shared

	frame := p.Frame
	rewrite := remapped || outPSN != psn || steered
	switch cls {
	case opAtomic:
		if inRanges(sv.cas, va) {
			frame, rewrite = e.atomicOnWord(si, p, first, va, onShared, rewrite)
		}
	case opWriteOnly, opMultiFirst:
		if len(sv.cas) > 0 && inRanges(sv.cas, va) {
			e.writeOnWords(si, p.Payload, dmaLen, first, va, onShared)
		}
	}
	if onShared && sv.atSend {
		noteSharedData(o, sv, first, npkts, cls, va, dmaLen)
	}
	if remapped {
		retargetRequest(p.Frame, p.L3Off, p.L4Off, p.BTHOff, o)
		e.c.Remapped++
	}
	if rewrite {
		p.BTH.SetPSN(uint32(outPSN))
		if first.converted() {
			bad = roce.ICRCErrorShorter4(bad)
		}
		finish(p, bad)
		frame = p.Frame
	}
	return o, first, frame
}

// admit decides where an in-order request of client connection ci goes,
// starting from home, and checks that it fits: the barrier between
// connections, the READ's size, the client's window and the outgoing
// ring (c is e.conns[ci]). It returns the outgoing connection and the PSNs
// the request takes there, or false after counting the drop.
func (e *Engine) admit(c *conn, ci int32, sv *server, cls opClass, inRange bool, home int32, psn roce.PSN, dmaLen uint32, frame []byte, out *Out) (int32, uint32, bool) {
	if inRange && sv.shared >= 0 && sv.shared != ci {
		s := &e.conns[sv.shared]
		switch {
		case !c.bound:
			e.c.RangeUnbound++
		case !s.ready():
			e.c.Drops[DropSharedNotReady]++
			return 0, 0, false
		default:
			home = sv.shared
		}
	}
	if cls != opSend && cls != opMultiFirst && cls != opMultiMid && cls != opMultiLast && !inRange &&
		c.fcount > 0 && c.outConn >= 0 {
		home = c.outConn // follow the outstanding operations (keeps the client's order)
	}
	if c.fcount > 0 && c.outConn != home {
		if e.parkBehindBarrier(c, cls, psn, frame) {
			return 0, 0, false
		}
		e.c.Drops[DropBarrier]++
		e.gap(c, out) // the client will have to resend from here
		return 0, 0, false
	}
	o := &e.conns[home]

	npkts := uint32(1)
	if cls == opRead {
		if dmaLen > e.pmtu {
			npkts = (dmaLen + e.pmtu - 1) / e.pmtu
		}
		if npkts > uint32(len(o.ring)/2) || npkts > uint32(len(c.inRing)/2) {
			e.c.Drops[DropReadTooLarge]++
			return 0, 0, false
		}
	}
	if c.fcount+1 > len(c.fifo) {
		e.c.Drops[DropWindowFull]++
		return 0, 0, false
	}
	if c.fcount > 0 {
		// The client PSNs outstanding (READs take several) must fit the
		// retransmission index, or a retransmission could not be found.
		oldest := e.conns[c.outConn].slot(c.fifoHead()).inPSN
		if int(psn.Add(int(npkts)).Sub(oldest)) > len(c.inRing) {
			e.c.Drops[DropWindowFull]++
			return 0, 0, false
		}
	}
	for i := uint32(0); i < npkts; i++ {
		s := o.slot(o.outNext + roce.PSN(i)) // slot masks to the ring
		if s.valid && !s.done {
			e.c.Drops[DropRingFull]++
			return 0, 0, false
		}
	}
	return home, npkts, true
}

// record enters an admitted request of client connection ci at client PSN
// psn into the map of its outgoing connection home and into the client's
// bookkeeping (c and o are e.conns[ci] and e.conns[home]), and returns
// its (first) map entry.
func (e *Engine) record(c, o *conn, ci, home int32, psn roce.PSN, npkts uint32, cls opClass, fa bool) *entry {
	outPSN := o.outNext
	first := o.slot(outPSN)
	// Zeroed, then the fields set in place: a composite literal would be
	// built on the stack and copied.
	*first = entry{}
	first.client, first.inPSN, first.outPSN, first.valid, first.word, first.msgEnd, first.kind = ci, psn, outPSN, true, -1, true, kPlain
	switch cls {
	case opMultiFirst, opMultiMid:
		first.msgEnd = false
	case opAtomic:
		first.kind, first.fa = kAtomicPass, fa
	case opRead:
		first.kind, first.npkts = kRead, npkts
		if npkts > 1 { // a one-packet READ (the common case) skips the call
			recordReadCont(c, o, ci, home, psn, outPSN, npkts)
		}
	}
	c.inRing[uint32(psn)&uint32(len(c.inRing)-1)] = inRef{out: home, outPSN: outPSN}
	c.fifoPush(outPSN)
	c.outConn = home
	switch cls {
	case opMultiFirst:
		c.inMsg, c.msgOut = true, home
	case opMultiLast, opSend:
		c.inMsg = false
	}
	c.inNext = psn.Add(int(npkts))
	c.nakSent, c.nakPending = false, false
	o.outNext = outPSN.Add(int(npkts))
	return first
}

// forward sends a recorded request, ready to go, to the server on
// connection o, keeping a copy for replay when o is a shared connection
// (only those have a log: a request whose outgoing connection is shared is
// on its own server's shared connection, since a client's requests only
// ever travel to the server it addressed).
func (e *Engine) forward(o *conn, first *entry, frame []byte, out *Out) {
	if o.log != nil && len(frame) <= len(o.log.buf) {
		first.fpos, first.flen = o.log.put(frame), uint16(len(frame))
	}
	if !out.addInput(ServerSide, frame) {
		e.c.Drops[DropOutOverflow]++
		return
	}
	e.c.Requests++
	e.c.TxServer++
}

// atomicOnWord handles a CMP_SWAP or FETCH_ADD on a tracked word (see
// atomicWord), replacing it by a WRITE when the word's value is known.
func (e *Engine) atomicOnWord(si int32, p *roce.Packet, en *entry, va uint64, onShared, rewrite bool) ([]byte, bool) {
	conv, v := e.atomicWord(si, en, va, p.Opcode == roce.OpRCFetchAdd, p.AtomicETH.SwapAdd(), p.AtomicETH.Compare(), onShared)
	if !conv {
		return p.Frame, rewrite
	}
	return casToWrite(p, v), true
}

// atomicWord applies a CMP_SWAP or FETCH_ADD (swap or addend sa, compare
// cmp) on a tracked word to the word's cache and to its map entry en. It
// reports whether the atomic is to be replaced by a WRITE of v (the word's
// value is known); otherwise it is sent unchanged and logged so that its
// ATOMIC ACK can teach the value.
func (e *Engine) atomicWord(si int32, en *entry, va uint64, isFA bool, sa, cmp uint64, onShared bool) (bool, uint64) {
	wi := e.words.lookup(si, va&^7, true)
	en.fa = isFA
	if wi < 0 || va&7 != 0 {
		en.kind = kAtomicPass
		return false, 0
	}
	w := &e.words.slots[wi]
	if !onShared {
		w.sendUnknown()
		e.wordChanged(wi)
		e.servers[si].foreign++
		en.kind, en.word, en.foreign, en.fsrv = kAtomicPass, wi, true, si
		return false, 0
	}
	o := wop{kind: wopCAS, a: cmp, b: sa}
	if isFA {
		o = wop{kind: wopFA, a: sa}
	}
	if w.known {
		prior := w.value
		w.send(o)
		e.wordChanged(wi)
		en.kind, en.prior, en.written, en.word = kAtomicConv, prior, w.value, wi
		if isFA {
			e.c.FAToWrite++
		} else {
			e.c.CASToWrite++
		}
		return true, w.value
	}
	en.kind, en.word = kAtomicPass, wi
	en.wordSeq = w.send(o)
	e.wordChanged(wi)
	e.c.AtomicPassthrough++
	return false, 0
}

// writeOnWords applies a WRITE (its first packet's payload pl; dmaLen bytes
// in all) to the tracked words it covers.
func (e *Engine) writeOnWords(si int32, pl []byte, dmaLen uint32, en *entry, va uint64, onShared bool) {
	end := va + uint64(len(pl))
	if uint64(dmaLen) > uint64(len(pl)) {
		end = va + uint64(dmaLen) // later packets: unknown bytes
	}
	for wva := va &^ 7; wva < end; wva += 8 {
		wi := e.words.lookup(si, wva, false)
		if wi < 0 {
			continue
		}
		w := &e.words.slots[wi]
		e.wordChanged(wi)
		if !onShared {
			w.sendUnknown() // not ordered with the shared connection
			continue
		}
		if end > va+uint64(len(pl)) && wva+8 > va+uint64(len(pl)) {
			w.sendUnknown() // bytes in later packets
			continue
		}
		w.send(writeOp(wva, va, pl))
	}
	if !onShared {
		e.servers[si].foreign++
		en.foreign, en.fsrv = true, si
	}
}

// recordReadCont records the continuation entries of a READ of npkts
// response packets from client ci (c) at PSN psn, sent on connection home
// (o) at outPSN: one per later response packet, in the map and in the
// client's retransmission index.
func recordReadCont(c, o *conn, ci, home int32, psn, outPSN roce.PSN, npkts uint32) {
	for i := uint32(1); i < npkts; i++ {
		op := outPSN.Add(int(i))
		*o.slot(op) = entry{client: ci, inPSN: psn.Add(int(i)), outPSN: op, valid: true, word: -1, kind: kReadCont, npkts: i}
		c.inRing[(uint32(psn)+i)&uint32(len(c.inRing)-1)] = inRef{out: home, outPSN: op}
	}
}

// retransmit maps a client's retransmission to the outgoing connection and
// PSN of the original, and sends it again exactly as it was sent the first
// time.
func (e *Engine) retransmit(now int64, ci int32, psn roce.PSN, p *roce.Packet, out *Out) {
	c := &e.conns[ci]
	ref := c.inRing[uint32(psn)&uint32(len(c.inRing)-1)]
	if ref.out < 0 || int(ref.out) >= len(e.conns) {
		e.answerForgotten(now, ci, psn, p, out)
		return
	}
	o := &e.conns[ref.out]
	en := o.slot(ref.outPSN)
	if !en.valid || en.client != ci || en.inPSN != psn || en.outPSN != ref.outPSN {
		e.answerForgotten(now, ci, psn, p, out)
		return
	}
	// Answered here, not by the server: a duplicate of an operation already
	// acknowledged to the client (its answer was lost on the way back), and
	// one the server has acknowledged but that waits for an earlier
	// operation of the client. (A server answers a duplicate WRITE with a
	// cumulative ACK for its newest PSN, which may belong to another client.)
	switch {
	case en.done && (en.kind == kPlain || en.kind == kAtomicConv || en.kind == kAtomicPass && en.respSeen):
		if en.kind == kPlain {
			e.emitAck(out, c, psn, roce.ACKSyndrome(roce.CreditInvalid), c.msn)
		} else {
			e.emitAtomicAck(out, c, psn, en.prior, c.msn)
		}
		e.c.RetransmitsAnswered++
		return
	case !en.done && (en.kind == kPlain || en.kind == kAtomicConv) && en.srvAcked,
		!en.done && en.kind == kAtomicPass && en.respSeen:
		e.c.RetransmitsAbsorbed++
		return
	}
	var bad uint32 // the ICRC error to carry (icrc.go); with verification, the frame is intact
	if !e.verify {
		bad = icrcErrOf(p)
	}
	if e.steer != nil {
		e.steer.request(now, p) // a CMP_SWAP goes out as its first copy did
	}
	if en.kind == kAtomicConv {
		if p.AtomicETH == nil {
			e.c.Drops[DropStaleRetransmit]++
			return
		}
		casToWrite(p, en.written)
		bad = roce.ICRCErrorShorter4(bad)
	}
	if ref.out != ci {
		retargetRequest(p.Frame, p.L3Off, p.L4Off, p.BTHOff, o)
	}
	p.BTH.SetPSN(uint32(en.outPSN))
	finish(p, bad)
	if !out.addInput(ServerSide, p.Frame) {
		e.c.Drops[DropOutOverflow]++
		return
	}
	e.c.Retransmits++
	e.c.TxServer++
	// The oldest request the server has not acknowledged is being resent:
	// the server may be waiting for it, and will then want every later
	// one, which their own clients may have resent too early (the server
	// discarded them) and will not resend before their timers expire.
	// Or a WRITE answered at sending is the oldest: nobody else resends it.
	if e.replay && ref.out == e.servers[o.srv].shared && (!o.replaying || now-o.lastReplay >= int64(e.cfg.ReplayHoldoff)) {
		switch {
		case en.outPSN == o.ackedTo.Add(1):
			next := en.outPSN.Add(1)
			if en.kind == kRead {
				next = en.outPSN.Add(int(en.npkts))
			}
			e.replayFrom(ref.out, next, now, out)
		case sentPending(o):
			e.replayFrom(ref.out, o.ackedTo.Add(1), now, out)
		}
	}
}

// answerForgotten answers a client's retransmission (PSN psn, packet p)
// whose map entry has been reused since. Entries are only reused once
// done, so the operation is complete, and it was acknowledged to the
// client when it precedes the client's oldest outstanding operation; its
// answer was lost, and the client's retransmission timer, backing off
// exponentially, outlasted the outgoing ring. A responder answers every
// duplicate request and never drops one silently (IBA 9.7.5, duplicate
// requests; rxe duplicate_request): a SEND or WRITE packet with an ACK at
// its PSN, an atomic with the original value it returned, which the
// engine keeps for the client's last answered atomics as a responder keeps
// its last max_rd_atomic results (conn.atomics), and a READ by executing it
// again (reissueRead). An atomic no longer remembered, and an operation
// still outstanding, are dropped (DropStaleRetransmit). Dropping the
// duplicate silently would leave the client retrying until RETRY_EXC_ERR.
func (e *Engine) answerForgotten(now int64, ci int32, psn roce.PSN, p *roce.Packet, out *Out) {
	c := &e.conns[ci]
	if !c.ready() || c.fcount > 0 && psn.Sub(e.conns[c.outConn].slot(c.fifoHead()).inPSN) >= 0 {
		e.c.Drops[DropStaleRetransmit]++
		return
	}
	switch classify(p.Opcode) {
	case opRead:
		if !e.reissueRead(now, ci, psn, p, out) {
			e.c.Drops[DropStaleRetransmit]++
		}
		return
	case opAtomic:
		orig, ok := c.answeredAtomic(psn)
		if !ok {
			e.c.Drops[DropStaleRetransmit]++
			return
		}
		e.emitAtomicAck(out, c, psn, orig, c.msn)
	default:
		e.emitAck(out, c, psn, roce.ACKSyndrome(roce.CreditInvalid), c.msn)
	}
	e.c.RetransmitsAnswered++
	e.c.ForgottenAnswered++
}

// reissueRead sends a completed READ whose map entry is gone (see
// answerForgotten) to the server again, as a new request on the connection
// the client's operations travel on (its original one when none are
// outstanding), the way a responder executes a duplicate READ again (IBA
// 9.7.5, duplicate requests). Its entries are in no client's FIFO
// (entry.reread): its response goes to the client as a duplicate response,
// it acknowledges nothing to the client, and it completes with its last
// response packet or when the server acknowledges a later PSN. It reports
// false when the READ does not fit (the client's next retransmission tries
// again).
func (e *Engine) reissueRead(now int64, ci int32, psn roce.PSN, p *roce.Packet, out *Out) bool {
	c := &e.conns[ci]
	if p.RETH == nil {
		return false
	}
	home := ci
	if ref := c.inRing[uint32(psn)&uint32(len(c.inRing)-1)]; ref.out >= 0 && int(ref.out) < len(e.conns) {
		home = ref.out
	}
	if c.fcount > 0 {
		home = c.outConn
	}
	o := &e.conns[home]
	if !o.outKnown {
		return false
	}
	npkts := uint32(1)
	if l := p.RETH.DMALen(); l > e.pmtu {
		npkts = (l + e.pmtu - 1) / e.pmtu
	}
	if npkts > uint32(len(o.ring)/2) || npkts > uint32(len(c.inRing)/2) {
		return false
	}
	for i := uint32(0); i < npkts; i++ {
		if s := o.slot(o.outNext + roce.PSN(i)); s.valid && !s.done {
			e.c.Drops[DropRingFull]++
			return false
		}
	}
	outPSN := o.outNext
	first := o.slot(outPSN)
	*first = entry{client: ci, inPSN: psn, outPSN: outPSN, valid: true, word: -1, msgEnd: true, kind: kRead, npkts: npkts, reread: true}
	recordReadCont(c, o, ci, home, psn, outPSN, npkts)
	c.inRing[uint32(psn)&uint32(len(c.inRing)-1)] = inRef{out: home, outPSN: outPSN}
	o.outNext = outPSN.Add(int(npkts))
	var bad uint32 // the ICRC error to carry (icrc.go); with verification, the frame is intact
	if !e.verify {
		bad = icrcErrOf(p)
	}
	if e.steer != nil {
		e.steer.request(now, p)
	}
	if home != ci {
		retargetRequest(p.Frame, p.L3Off, p.L4Off, p.BTHOff, o)
	}
	p.BTH.SetPSN(uint32(outPSN))
	finish(p, bad)
	e.forward(o, first, p.Frame, out)
	e.c.ReadsReissued++
	return true
}

// replayFrom resends, in order, the middlebox's copies of the requests on
// connection oi from outgoing PSN from on.
func (e *Engine) replayFrom(oi int32, from roce.PSN, now int64, out *Out) {
	o := &e.conns[oi]
	if o.log == nil {
		return
	}
	o.replaying, o.lastReplay = true, now
	for q := from; q != o.outNext; q = q.Add(1) {
		en := o.slot(q)
		if !en.valid || en.outPSN != q || en.kind == kReadCont || en.done {
			continue
		}
		if en.kind == kAtomicSent { // answered at sending: the engine's own copy
			if !e.resendSent(en, out) {
				return
			}
			continue
		}
		if en.flen == 0 {
			continue
		}
		if !o.log.has(en.fpos, int(en.flen)) {
			e.c.ReplayLost++ // overwritten: the client's retransmission recovers it
			continue
		}
		f := out.alloc(ServerSide, int(en.flen))
		if f == nil {
			e.c.Drops[DropOutOverflow]++ // the clients' timers recover the rest
			return
		}
		o.log.get(f, en.fpos)
		e.c.Replayed++
		e.c.TxServer++
	}
}

// gap handles a client request the engine cannot accept in order: like a
// responder, it tells the client once (NAK PSN sequence error at the
// expected PSN) — but only when none of the client's operations are
// outstanding, because the NAK implicitly acknowledges everything before
// it; otherwise the NAK waits until they complete.
func (e *Engine) gap(c *conn, out *Out) {
	if c.nakSent || !c.ready() {
		return
	}
	if c.fcount > 0 || c.park.ok {
		c.nakPending = true
		return
	}
	e.emitAck(out, c, c.inNext, roce.NAKSyndrome(roce.NAKPSNSequenceError), c.msn)
	c.nakSent, c.nakPending = true, false
	e.c.GapNAKs++
}

// serverOf returns the index of the managed server with IPv4 address a.
func (e *Engine) serverOf(a []byte) (int32, bool) {
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	for i, ip := range e.srvIPs {
		if ip == v {
			return int32(i), true
		}
	}
	return -1, false
}
