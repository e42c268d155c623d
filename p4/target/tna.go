package target

import (
	"encoding/binary"
	"github.com/swordbox/swordbox/p4/target/frontend"

	"github.com/swordbox/swordbox/netio"
)

// The TNA architecture (tna.p4, Tofino 1): the Pipeline of six blocks
// (ingress parser, ingress, ingress deparser, egress parser, egress,
// egress deparser) in a Switch package of one pipe.

// tnaTypes are tna.p4's intrinsic metadata types (declared by tnaPrelude).
type tnaTypes struct {
	igIntr, igTM, igPrsr, igDprsr    *ptype
	egIntr, egPrsr, egDprsr, egOport *ptype
}

// Bytes in front of the frame in the parsers' input: the ingress parser
// sees ingress_intrinsic_metadata_t (8 bytes) and the port metadata (8
// bytes on Tofino 1, PORT_METADATA_SIZE); the egress parser sees
// egress_intrinsic_metadata_t (27 bytes).
const (
	tnaIgIntrBytes = 8
	tnaPortMDBytes = 8
	tnaIgPrefix    = tnaIgIntrBytes + tnaPortMDBytes
	tnaEgPrefix    = 27
)

// tnaProg is the TNA pipeline of a Program: the compiled blocks and the
// slots of the intrinsic metadata the runtime reads and writes.
type tnaProg struct {
	igParser, egParser          *parserC
	ingress, igDeparser         *controlC
	egress, egDeparser          *controlC
	igTstamp, igPrsrTstamp      int
	igPrsrErr                   int
	tmUcast, tmUcastSet         int
	tmBypass, igDrop            int
	igIntr, egIntr              int // base slots of the intrinsic metadata headers
	egPort, egPktLen            int
	egPrsrTstamp, egPrsrErr     int
	egDrop                      int
	resubType                   int // ig_dprsr_md.resubmit_type
	resubData, resubEmitted     int // a Resubmit's data and whether emit ran (0: the program has no Resubmit)
	egIntrCodec                 *headerCodec
	egSkip                      bool // the egress parser never extracts egress_intrinsic_metadata_t: it is skipped for it
	igErrSeen, egErrSeen        bool // the program reads parser_err: a parser error does not drop the packet
	needTS                      bool // the program reads a timestamp
	perr                        int  // the parsers' error code (an error member)
	extractedIgIntr, consumedMD bool // compile time: the ingress parser extracts ig_intr_md and consumes the port metadata
	extractedEgIntr             bool // compile time: the egress parser extracts eg_intr_md
}

// tnaParam is what a TNA block takes at one parameter position.
type tnaParam struct {
	t    *ptype
	dirs []string
	base int
	pkt  string // "in": packet_in, "out": packet_out
}

// bindTNA binds the parameters of a TNA block to the pipeline's instances;
// trailing parameters are optional (tna.p4 marks them @optional), the
// first min are not.
func (c *compiler) bindTNA(params []frontend.Param, at frontend.Pos, what string, min int, ws []tnaParam) *scope {
	sc := newScope(c.global)
	if len(params) < min || len(params) > len(ws) {
		c.fail(at, "tna %s takes %d to %d parameters, %s has %d", what, min, len(ws), what, len(params))
	}
	for i, pr := range params {
		w := ws[i]
		t := c.resolveType(c.global, pr.T)
		switch w.pkt {
		case "in":
			if t.name != "packet_in" || t.kind != kVoid {
				c.fail(pr.P, "%s parameter %d: expected packet_in, found %s", what, i+1, t)
			}
			c.defineIn(sc, pr.P, pr.Name, &symbol{kind: sPacketIn})
			continue
		case "out":
			if t.name != "packet_out" || t.kind != kVoid {
				c.fail(pr.P, "%s parameter %d: expected packet_out, found %s", what, i+1, t)
			}
			c.defineIn(sc, pr.P, pr.Name, &symbol{kind: sPacketOut})
			continue
		}
		if t != w.t {
			c.fail(pr.P, "%s parameter %d: expected %s, found %s", what, i+1, w.t, t)
		}
		ok := false
		for _, d := range w.dirs {
			ok = ok || d == pr.Dir
		}
		if !ok {
			c.fail(pr.P, "%s parameter %s must be %q", what, pr.Name, w.dirs[0])
		}
		c.defineIn(sc, pr.P, pr.Name, &symbol{kind: sVar, t: t, base: w.base, readonly: pr.Dir == "in"})
	}
	return sc
}

// assembleTNA binds Switch(Pipeline(...)) to the pipeline's instances of
// headers, metadata and intrinsic metadata, and compiles the six blocks.
func (c *compiler) assembleTNA(m *frontend.InstDecl, pipes map[string]*frontend.InstDecl) {
	if m.T.Kind != "name" || m.T.Name != "Switch" {
		c.fail(m.P, "main must be a Switch(pipe) instantiation in a tna program")
	}
	if len(m.Args) != 1 {
		c.fail(m.P, "Switch takes one Pipeline on this target (one pipe), got %d", len(m.Args))
	}
	var pipe *frontend.InstDecl
	if id, ok := m.Args[0].(*frontend.IdentExpr); ok {
		pipe = pipes[id.Name]
	}
	if pipe == nil {
		c.fail(m.Args[0].ExprPos(), "Switch argument must name a Pipeline(...) instance")
	}
	if len(pipe.Args) != 6 {
		c.fail(pipe.P, "Pipeline takes 6 blocks (ingress parser, ingress, ingress deparser, egress parser, egress, egress deparser), got %d", len(pipe.Args))
	}
	decls := make([]frontend.Decl, 6)
	for i, a := range pipe.Args {
		call, ok := a.(*frontend.CallExpr)
		var id *frontend.IdentExpr
		if ok {
			id, ok = call.Fn.(*frontend.IdentExpr)
		}
		if !ok || len(call.Args) != 0 {
			c.fail(a.ExprPos(), "Pipeline argument must be an instantiation Block()")
		}
		if c.blocks[id.Name] == nil {
			c.fail(a.ExprPos(), "unknown parser or control %s", id.Name)
		}
		decls[i] = c.blocks[id.Name]
	}
	what := []string{"ingress parser", "ingress", "ingress deparser", "egress parser", "egress", "egress deparser"}
	for i, d := range decls {
		_, isParser := d.(*frontend.ParserDecl)
		if isParser != (i == 0 || i == 3) {
			kind := "a control"
			if i == 0 || i == 3 {
				kind = "a parser"
			}
			c.fail(pipe.Args[i].ExprPos(), "Pipeline argument %d (%s) must be %s", i+1, what[i], kind)
		}
	}
	tt := &tnaTypes{}
	for _, x := range []struct {
		p    **ptype
		name string
	}{{&tt.igIntr, "ingress_intrinsic_metadata_t"}, {&tt.igTM, "ingress_intrinsic_metadata_for_tm_t"},
		{&tt.igPrsr, "ingress_intrinsic_metadata_from_parser_t"}, {&tt.igDprsr, "ingress_intrinsic_metadata_for_deparser_t"},
		{&tt.egIntr, "egress_intrinsic_metadata_t"}, {&tt.egPrsr, "egress_intrinsic_metadata_from_parser_t"},
		{&tt.egDprsr, "egress_intrinsic_metadata_for_deparser_t"}, {&tt.egOport, "egress_intrinsic_metadata_for_output_port_t"}} {
		s := c.global.lookup(x.name)
		if s == nil || s.kind != sType {
			c.fail(m.P, "tna.p4 type %s is missing", x.name)
		}
		*x.p = s.t
	}
	c.tnaT = tt
	// Requests this target's TNA model does not carry out are refused where
	// the program writes them.
	for _, f := range tt.igTM.fields {
		switch f.name {
		case "mcast_grp_a", "mcast_grp_b":
			f.ro = "multicast (" + f.name + ") is not supported by this target's tna model"
		case "copy_to_cpu":
			f.ro = "copy_to_cpu is not supported by this target's tna model (send to the CPU port with ucast_egress_port)"
		}
	}

	ipd, epd := decls[0].(*frontend.ParserDecl), decls[3].(*frontend.ParserDecl)
	if len(ipd.Params) < 3 || len(epd.Params) < 3 {
		c.fail(ipd.P, "tna parsers take (packet_in, out H, out M, ...)")
	}
	structOf := func(pr frontend.Param, what string) *ptype {
		t := c.resolveType(c.global, pr.T)
		if t.kind != kStruct {
			c.fail(pr.P, "%s type %s must be a struct", what, t)
		}
		return t
	}
	ih, im := structOf(ipd.Params[1], "ingress headers"), structOf(ipd.Params[2], "ingress metadata")
	eh, em := structOf(epd.Params[1], "egress headers"), structOf(epd.Params[2], "egress metadata")

	p := c.prog
	t := &tnaProg{}
	p.tna = t
	p.hdrT, p.metaT = ih, im
	ihBase, imBase := c.alloc(ih.size), c.alloc(im.size)
	igIntr, igTM, igPrsr, igDprsr := c.alloc(tt.igIntr.size), c.alloc(tt.igTM.size), c.alloc(tt.igPrsr.size), c.alloc(tt.igDprsr.size)
	ehBase, emBase := c.alloc(eh.size), c.alloc(em.size)
	egIntr, egPrsr, egDprsr, egOport := c.alloc(tt.egIntr.size), c.alloc(tt.egPrsr.size), c.alloc(tt.egDprsr.size), c.alloc(tt.egOport.size)
	t.perr = c.alloc(1)
	p.hdrBase, p.metaBase = ihBase, imBase
	p.smParserError = t.perr
	p.errCodes = map[string]uint64{}
	for i, m := range c.errT.members {
		p.errCodes[m] = uint64(i)
	}
	fld := func(base int, st *ptype, name string) int { return base + st.field(name).off }
	t.igTstamp = fld(igIntr, tt.igIntr, "ingress_mac_tstamp")
	t.igPrsrTstamp = fld(igPrsr, tt.igPrsr, "global_tstamp")
	t.igPrsrErr = fld(igPrsr, tt.igPrsr, "parser_err")
	t.tmUcast = fld(igTM, tt.igTM, "ucast_egress_port")
	t.tmUcastSet = c.alloc(1)
	c.watch[t.tmUcast] = t.tmUcastSet
	t.tmBypass = fld(igTM, tt.igTM, "bypass_egress")
	t.igDrop = fld(igDprsr, tt.igDprsr, "drop_ctl")
	t.resubType = fld(igDprsr, tt.igDprsr, "resubmit_type")
	t.igIntr, t.egIntr = igIntr, egIntr
	t.egPort = fld(egIntr, tt.egIntr, "egress_port")
	t.egPktLen = fld(egIntr, tt.egIntr, "pkt_length")
	t.egPrsrTstamp = fld(egPrsr, tt.egPrsr, "global_tstamp")
	t.egPrsrErr = fld(egPrsr, tt.egPrsr, "parser_err")
	t.egDrop = fld(egDprsr, tt.egDprsr, "drop_ctl")
	t.egIntrCodec = codecOf(tt.egIntr)
	if t.egIntrCodec.bytes != tnaEgPrefix || tt.igIntr.bits/8 != tnaIgIntrBytes {
		c.fail(m.P, "internal: intrinsic metadata sizes")
	}

	c.registerHeaders(ih, ihBase, ipd.Params[1].P, true)
	c.registerHeaders(eh, ehBase, epd.Params[1].P, false)

	pin, pout := tnaParam{pkt: "in"}, tnaParam{pkt: "out"}
	w := func(t *ptype, base int, dirs ...string) tnaParam { return tnaParam{t: t, base: base, dirs: dirs} }
	c.tnaRole = "ingress parser"
	sc := c.bindTNA(ipd.Params, ipd.P, "ingress parser", 3, []tnaParam{pin, w(ih, ihBase, "out"), w(im, imBase, "out", "inout"),
		w(tt.igIntr, igIntr, "out"), w(tt.igTM, igTM, "out"), w(tt.igPrsr, igPrsr, "out")})
	t.igParser = c.compileParser(ipd, sc)
	if !t.extractedIgIntr {
		c.fail(ipd.P, "the tna ingress parser must extract ingress_intrinsic_metadata_t first (as bf-p4c requires)")
	}
	if !t.consumedMD {
		c.fail(ipd.P, "the tna ingress parser must consume the port metadata (pkt.advance(PORT_METADATA_SIZE) or port_metadata_unpack), as bf-p4c requires")
	}
	c.tnaRole = "ingress"
	ctl := func(i int, sc *scope) *controlC {
		return c.compileControl(decls[i].(*frontend.ControlDecl), sc, what[i])
	}
	cd := func(i int) *frontend.ControlDecl { return decls[i].(*frontend.ControlDecl) }
	t.ingress = ctl(1, c.bindTNA(cd(1).Params, cd(1).P, "ingress", 2, []tnaParam{w(ih, ihBase, "inout"), w(im, imBase, "inout"),
		w(tt.igIntr, igIntr, "in"), w(tt.igPrsr, igPrsr, "in"), w(tt.igDprsr, igDprsr, "inout"), w(tt.igTM, igTM, "inout")}))
	c.tnaRole = "ingress deparser"
	t.igDeparser = ctl(2, c.bindTNA(cd(2).Params, cd(2).P, "ingress deparser", 3, []tnaParam{pout, w(ih, ihBase, "inout", "in"),
		w(im, imBase, "in"), w(tt.igDprsr, igDprsr, "in"), w(tt.igIntr, igIntr, "in")}))
	c.tnaRole = "egress parser"
	t.egParser = c.compileParser(epd, c.bindTNA(epd.Params, epd.P, "egress parser", 3, []tnaParam{pin, w(eh, ehBase, "out"),
		w(em, emBase, "out", "inout"), w(tt.egIntr, egIntr, "out"), w(tt.egPrsr, egPrsr, "out")}))
	t.egSkip = !t.extractedEgIntr
	c.tnaRole = "egress"
	t.egress = ctl(4, c.bindTNA(cd(4).Params, cd(4).P, "egress", 2, []tnaParam{w(eh, ehBase, "inout"), w(em, emBase, "inout"),
		w(tt.egIntr, egIntr, "in"), w(tt.egPrsr, egPrsr, "in"), w(tt.egDprsr, egDprsr, "inout"), w(tt.egOport, egOport, "inout")}))
	c.tnaRole = "egress deparser"
	t.egDeparser = ctl(5, c.bindTNA(cd(5).Params, cd(5).P, "egress deparser", 3, []tnaParam{pout, w(eh, ehBase, "inout", "in"),
		w(em, emBase, "in"), w(tt.egDprsr, egDprsr, "in"), w(tt.egIntr, egIntr, "in"), w(tt.egPrsr, egPrsr, "in")}))
	c.tnaRole = ""
	t.igErrSeen = c.mentioned[t.igPrsrErr]
	t.egErrSeen = c.mentioned[t.egPrsrErr]
	t.needTS = c.mentioned[t.igTstamp] || c.mentioned[t.igPrsrTstamp] || c.mentioned[t.egPrsrTstamp]
}

// tnaParserErr maps a parser error to tna's parser_err flags.
func (t *tnaProg) parserErr(p *Program, code uint64) uint64 {
	switch code {
	case p.errCodes["PacketTooShort"]:
		return 0x0002 // PARSER_ERROR_PARTIAL_HDR
	case p.errCodes["ParserTimeout"]:
		return 0x0008 // PARSER_ERROR_TIMEOUT_USER
	}
	return 0x0001 // PARSER_ERROR_NO_MATCH (a select without match, reject, or a failed verify)
}

// passTNA runs one frame through the TNA pipeline: the ingress parser on
// the intrinsic metadata, the port metadata and the frame; ingress; the
// ingress deparser; then, unless ingress set bypass_egress, the egress
// parser on egress_intrinsic_metadata_t and the ingress deparser's output,
// egress and the egress deparser. It returns the egress port and whether
// the packet leaves (s.out holds it).
//
// Resubmit (tna.p4): when ingress leaves ig_dprsr_md.resubmit_type
// non-zero, the ingress deparser runs (its Resubmit.emit gives the data),
// nothing leaves, and the frame as received enters the ingress parser
// again with resubmit_flag 1 and the resubmit data in place of the port
// metadata, before any other packet (the Device's lock is held). As on
// Tofino a packet is resubmitted once: a resubmitted pass that asks again
// is dropped (Stats.ReentryLimit). Each pass is a packet for the
// one-access-per-register count (Stats.RegisterReaccesses): a pass goes
// through the stages once.
func (d *Device) passTNA(s *pktState, in uint32, frame []byte) (uint32, bool) {
	return d.passTNAFrom(s, in, frame, false, 0)
}

// passTNAFrom is passTNA for a first pass (resub false) or a resubmitted
// one carrying data.
func (d *Device) passTNAFrom(s *pktState, in uint32, frame []byte, resub bool, data uint64) (uint32, bool) {
	p := d.prog
	t := p.tna
	d.pktSeq++
	clear(s.slots)
	clear(s.hoff1)
	s.exited, s.tsSet, s.pending, s.depth = false, false, 0, 0
	s.clone.set = false
	var ts uint64
	if t.needTS {
		ts = d.now() * 1000 & mask(48) // nanoseconds
	}
	if s.inBuf == nil {
		// Allocated on first use (not in the pool's New): v1model's
		// states stay as they were.
		outCap := netio.MaxFrameSize + p.outSlack
		s.inBuf = make([]byte, 0, outCap+tnaIgPrefix)
		s.egBuf = make([]byte, 0, outCap+tnaEgPrefix+p.outSlack+8)
	}
	b := append(s.inBuf[:0], make([]byte, tnaIgPrefix)...)
	b[0] = byte(in>>8) & 1 // resubmit_flag 0, packet_version 0, ingress_port's top bit
	b[1] = byte(in)
	binary.BigEndian.PutUint16(b[2:], uint16(ts>>32))
	binary.BigEndian.PutUint32(b[4:], uint32(ts))
	if resub {
		b[0] |= 0x80 // resubmit_flag
		binary.BigEndian.PutUint64(b[tnaIgIntrBytes:], data)
	}
	b = append(b, frame...)
	s.inBuf = b
	s.pkt, s.off, s.pre = b, 0, tnaIgPrefix
	s.slots[t.igPrsrTstamp] = ts
	if !d.tnaParse(s, t.igParser, t.igErrSeen, t.igPrsrErr) {
		return 0, false
	}
	t.ingress.run(s)
	if t.resubData != 0 && s.slots[t.resubType] != 0 {
		deparseInto(s, t.igDeparser, b, p.outSlack)
		if resub {
			d.stats.ReentryLimit++
			d.stats.Dropped++
			return 0, false
		}
		d.stats.Resubmits++
		return d.passTNAFrom(s, in, frame, true, s.slots[t.resubData])
	}
	if s.slots[t.igDrop]&1 != 0 || s.slots[t.tmUcastSet] == 0 {
		d.stats.Dropped++
		return 0, false
	}
	port := s.slots[t.tmUcast]
	deparseInto(s, t.igDeparser, b, p.outSlack)
	if s.slots[t.tmBypass] != 0 {
		d.stats.Out++
		return uint32(port), true
	}
	// Egress: the egress parser sees egress_intrinsic_metadata_t, then the
	// packet as the ingress deparser made it.
	s.slots[t.egPort] = port
	s.slots[t.egPktLen] = uint64(len(s.out)) & mask(16)
	s.slots[t.egPrsrTstamp] = ts
	e := t.egIntrCodec.encode(s.egBuf[:0], s.slots[t.egIntr:])
	e = append(e, s.out...)
	s.egBuf = e
	s.pkt, s.off, s.pre = e, 0, tnaEgPrefix
	if t.egSkip {
		s.off = tnaEgPrefix
	}
	s.exited = false
	if !d.tnaParse(s, t.egParser, t.egErrSeen, t.egPrsrErr) {
		return 0, false
	}
	t.egress.run(s)
	if s.slots[t.egDrop]&1 != 0 {
		d.stats.Dropped++
		return 0, false
	}
	deparseInto(s, t.egDeparser, e, p.outSlack)
	d.stats.Out++
	return uint32(port), true
}

// tnaParse runs a tna parser; on a parser error the packet is dropped
// unless the program reads parser_err (errSlot), which then holds the
// error's flags. It reports whether the packet goes on.
func (d *Device) tnaParse(s *pktState, pc *parserC, errSeen bool, errSlot int) bool {
	if pc.run(s) {
		return true
	}
	d.stats.ParserErrors++
	if !errSeen {
		d.stats.Dropped++
		return false
	}
	s.slots[errSlot] = d.prog.tna.parserErr(d.prog, s.slots[d.prog.tna.perr])
	return true
}
