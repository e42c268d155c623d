package target

import (
	"encoding/binary"
	"github.com/swordbox/swordbox/p4/target/frontend"
)

// parserC is a compiled parser: states as closures that return the index
// of the next state.
type parserC struct {
	states  []*stateC
	start   int
	perr    int    // slot of standard_metadata.parser_error
	timeout uint64 // error.ParserTimeout
}

type stateC struct {
	name string
	body stmtFn
	next func(*pktState) int
}

const (
	stateAccept = -1
	stateReject = -2
	// maxParserSteps bounds parser loops (ParserTimeout beyond).
	maxParserSteps = 1024
)

// run executes the parser; it reports whether it accepted. On reject,
// standard_metadata.parser_error holds the error.
func (p *parserC) run(s *pktState) bool {
	st := p.start
	for steps := 0; steps < maxParserSteps; steps++ {
		state := p.states[st]
		if state.body(s) == flowReject {
			return false
		}
		st = state.next(s)
		switch st {
		case stateAccept:
			return true
		case stateReject:
			return false
		}
	}
	s.slots[p.perr] = p.timeout
	return false
}

func (c *compiler) compileParser(d *frontend.ParserDecl, sc *scope) *parserC {
	return c.compileParserAs(d, sc, d.Name)
}

// compileParserAs compiles a parser whose locals are named name.local.
func (c *compiler) compileParserAs(d *frontend.ParserDecl, sc *scope, name string) *parserC {
	saveName, saveParser := c.ctlName, c.inParser
	c.ctlName = name
	c.inParser = true
	defer func() { c.ctlName, c.inParser = saveName, saveParser }()
	local := newScope(sc)
	for _, l := range d.Locals {
		switch l := l.(type) {
		case *frontend.VarDecl, *frontend.ConstDecl:
			c.localDecl(local, l)
		case *frontend.InstDecl:
			c.localDecl(local, l)
		default:
			c.fail(l.DeclPos(), "only variables, constants and instances can be declared in a parser")
		}
	}
	p := &parserC{start: -1, perr: c.prog.smParserError, timeout: c.prog.errCodes["ParserTimeout"]}
	index := map[string]int{"accept": stateAccept, "reject": stateReject}
	for i, st := range d.States {
		if st.Name == "accept" || st.Name == "reject" {
			c.fail(st.P, "state %s is predefined", st.Name)
		}
		if _, dup := index[st.Name]; dup {
			c.fail(st.P, "state %s declared twice", st.Name)
		}
		index[st.Name] = i
		if st.Name == "start" {
			p.start = i
		}
	}
	if p.start < 0 {
		c.fail(d.P, "parser %s has no start state", d.Name)
	}
	noMatch := c.prog.errCodes["NoMatch"]
	perr := c.prog.smParserError
	for _, st := range d.States {
		ssc := newScope(local)
		var list []stmtFn
		for _, s := range st.Stmts {
			if f := c.stmt(ssc, s); f != nil {
				list = append(list, f)
			}
		}
		sc := &stateC{name: st.Name, body: seq(list)}
		tr := st.Trans
		if tr == nil {
			c.fail(st.P, "state %s has no transition", st.Name)
		}
		target := func(name string, at frontend.Pos) int {
			i, ok := index[name]
			if !ok {
				c.fail(at, "unknown state %s", name)
			}
			return i
		}
		if tr.Sel == nil {
			n := target(tr.Target, tr.P)
			sc.next = func(*pktState) int { return n }
		} else {
			sc.next = c.selectFn(ssc, tr, target, noMatch, perr)
		}
		p.states = append(p.states, sc)
	}
	return p
}

type selCase struct {
	vals, masks []uint64
	next        int
}

// selectFn compiles a select transition: the first case whose masked
// values match wins; none is NoMatch (reject). One slot key with constant
// cases takes a specialised loop.
func (c *compiler) selectFn(sc *scope, tr *frontend.Transition, target func(string, frontend.Pos) int, noMatch uint64, perr int) func(*pktState) int {
	var keys []exprFn
	var types []*ptype
	slot0 := -1
	for i, e := range tr.Sel {
		v := c.typed(c.rvalue(sc, e, nil), e.ExprPos())
		keys = append(keys, v.fn)
		types = append(types, v.t)
		if i == 0 && v.isSlot {
			slot0 = v.slot
		}
	}
	var cases []selCase
	for _, cs := range tr.Cases {
		sc2 := selCase{next: target(cs.Target, cs.P)}
		if len(cs.Keys) == 1 && len(keys) > 1 {
			if _, ok := cs.Keys[0].(*frontend.DefaultExpr); ok {
				sc2.vals = make([]uint64, len(keys))
				sc2.masks = make([]uint64, len(keys))
				cases = append(cases, sc2)
				continue
			}
		}
		if len(cs.Keys) != len(keys) {
			c.fail(cs.P, "select case has %d values, select has %d", len(cs.Keys), len(keys))
		}
		for i, k := range cs.Keys {
			v, m := c.keysetValue(sc, k, types[i])
			sc2.vals = append(sc2.vals, v)
			sc2.masks = append(sc2.masks, m)
		}
		cases = append(cases, sc2)
	}
	if len(keys) == 1 && slot0 >= 0 {
		// The common case: one header field, constant cases.
		vals := make([]uint64, len(cases))
		masks := make([]uint64, len(cases))
		nexts := make([]int, len(cases))
		for i, cs := range cases {
			vals[i], masks[i], nexts[i] = cs.vals[0], cs.masks[0], cs.next
		}
		return func(s *pktState) int {
			v := s.slots[slot0]
			for i, m := range masks {
				if v&m == vals[i] {
					return nexts[i]
				}
			}
			s.slots[perr] = noMatch
			return stateReject
		}
	}
	if len(keys) == 1 {
		k0 := keys[0]
		return func(s *pktState) int {
			v := k0(s)
			for i := range cases {
				cs := &cases[i]
				if v&cs.masks[0] == cs.vals[0] {
					return cs.next
				}
			}
			s.slots[perr] = noMatch
			return stateReject
		}
	}
	return func(s *pktState) int {
	next:
		for i := range cases {
			cs := &cases[i]
			for j, k := range keys {
				if k(s)&cs.masks[j] != cs.vals[j] {
					continue next
				}
			}
			return cs.next
		}
		s.slots[perr] = noMatch
		return stateReject
	}
}

// keysetValue evaluates a constant keyset element: a value, value &&& mask,
// or default/_ (mask 0). The value is returned already masked.
func (c *compiler) keysetValue(sc *scope, e frontend.Expr, t *ptype) (uint64, uint64) {
	if _, ok := e.(*frontend.DefaultExpr); ok {
		return 0, 0
	}
	m := mask(widthOf(t))
	if b, ok := e.(*frontend.BinExpr); ok && b.Op == "&&&" {
		v := c.rvalue(sc, b.L, t)
		mv := c.rvalue(sc, b.R, t)
		if !v.isConst || !mv.isConst {
			c.fail(e.ExprPos(), "keyset values must be compile-time constants")
		}
		return v.k & mv.k, mv.k
	}
	v := c.rvalue(sc, e, t)
	if !v.isConst {
		c.fail(e.ExprPos(), "keyset values must be compile-time constants")
	}
	return v.k, m
}

// Header (de)serialisation. Field values are big-endian bit strings.

// getBits reads w bits at bit offset bitOff of b (big endian).
func getBits(b []byte, bitOff, w int) uint64 {
	if bitOff&7 == 0 && w&7 == 0 {
		i := bitOff >> 3
		switch w {
		case 8:
			return uint64(b[i])
		case 16:
			return uint64(binary.BigEndian.Uint16(b[i:]))
		case 32:
			return uint64(binary.BigEndian.Uint32(b[i:]))
		case 64:
			return binary.BigEndian.Uint64(b[i:])
		}
		var v uint64
		for k := 0; k < w>>3; k++ {
			v = v<<8 | uint64(b[i+k])
		}
		return v
	}
	var v uint64
	pos, need := bitOff, w
	for need > 0 {
		bi := pos >> 3
		inb := pos & 7
		avail := 8 - inb
		take := min(avail, need)
		chunk := uint64(b[bi]>>uint(avail-take)) & mask(take)
		v = v<<uint(take) | chunk
		need -= take
		pos += take
	}
	return v
}

// putBits writes the w low bits of v at bit offset bitOff of b (big
// endian), leaving the bits around them unchanged.
func putBits(b []byte, bitOff, w int, v uint64) {
	if bitOff&7 == 0 && w&7 == 0 {
		i := bitOff >> 3
		switch w {
		case 8:
			b[i] = byte(v)
			return
		case 16:
			binary.BigEndian.PutUint16(b[i:], uint16(v))
			return
		case 32:
			binary.BigEndian.PutUint32(b[i:], uint32(v))
			return
		case 64:
			binary.BigEndian.PutUint64(b[i:], v)
			return
		}
		for k := w>>3 - 1; k >= 0; k-- {
			b[i+k] = byte(v)
			v >>= 8
		}
		return
	}
	pos, left := bitOff+w, w
	for left > 0 {
		end := pos - 1 // last bit to write (bit index from the start)
		bi := end >> 3
		inb := end & 7 // position within the byte, 0 = MSB
		room := inb + 1
		take := min(room, left)
		shift := uint(7 - inb)
		m := byte(mask(take)) << shift
		b[bi] = b[bi]&^m | byte(v)<<shift&m
		v >>= uint(take)
		left -= take
		pos -= take
	}
}

// headerCodec decodes and encodes one header type. Each field is read or
// written as one 64-bit big-endian word load/store (fast path) when 8 bytes
// are available from the field's first byte and the field does not
// straddle that word; otherwise bit by bit.
type headerCodec struct {
	bytes  int
	fields []codecField // all fields (encoding a header that was not extracted)
	used   []codecField // fields the program mentions (decoding, patching)
	// allUsed: every field is mentioned, so a modified header is encoded
	// from its slots rather than copied and patched.
	allUsed bool
}

type codecField struct {
	slot   int // relative to the header's base
	bitOff int
	w      int
	byteIx int    // first byte of the field
	shift  uint   // right shift of the 64-bit word at byteIx
	m      uint64 // mask of w bits
	fast   bool   // fits in the word at byteIx
}

func codecOf(t *ptype) *headerCodec {
	h := &headerCodec{bytes: t.bits / 8}
	for _, f := range t.fields {
		if f.t.kind == kWide {
			// One codec field per slot, the first holding the top bits.
			bitOff, first := f.bitOff, f.t.width-64*(f.t.size-1)
			for i := 0; i < f.t.size; i++ {
				w := 64
				if i == 0 {
					w = first
				}
				h.fields = append(h.fields, codecFieldAt(f.off+i, bitOff, w))
				bitOff += w
			}
			continue
		}
		h.fields = append(h.fields, codecFieldAt(f.off, f.bitOff, widthOf(f.t)))
	}
	h.used = h.fields
	h.allUsed = true
	return h
}

func codecFieldAt(slot, bitOff, w int) codecField {
	cf := codecField{slot: slot, bitOff: bitOff, w: w, byteIx: bitOff >> 3, m: mask(w)}
	inb := bitOff & 7
	if inb+w <= 64 {
		cf.fast = true
		cf.shift = uint(64 - inb - w)
	}
	return cf
}

// codecFor returns the codec of the header at base. Headers of the
// headers struct share one codec per instance, whose used fields are
// narrowed to the fields the program mentions once compilation is done
// (finishCodecs): the parser decodes only those, and the deparser copies
// the header's original bytes and patches only those.
func (c *compiler) codecFor(t *ptype, base int) *headerCodec {
	if c.headerIndex(base) < 0 {
		return codecOf(t)
	}
	if h := c.codecs[base]; h != nil {
		return h
	}
	h := codecOf(t)
	c.codecs[base] = h
	return h
}

// mention records that slots [base, base+n) are read or written somewhere.
func (c *compiler) mention(base, n int) {
	for i := base; i < base+n; i++ {
		c.mentioned[i] = true
	}
}

func (c *compiler) finishCodecs() {
	for base, h := range c.codecs {
		var used []codecField
		for _, f := range h.fields {
			if c.mentioned[base+f.slot] {
				used = append(used, f)
			}
		}
		h.used = used
		h.allUsed = len(used) == len(h.fields)
	}
}

// patch writes the used fields from slots into b, which holds the header's
// original bytes. Byte-wise stores (putBits) rather than 64-bit
// read-modify-writes, whose overlapping loads would stall on the stores
// before them.
func (h *headerCodec) patch(b []byte, slots []uint64) {
	for i := range h.used {
		f := &h.used[i]
		putBits(b, f.bitOff, f.w, slots[f.slot])
	}
}

// decode reads the header at b (len(b) >= h.bytes; room is how many bytes
// of b are readable) into slots.
func (h *headerCodec) decode(slots []uint64, b []byte) {
	room := len(b)
	for i := range h.used {
		f := &h.used[i]
		if f.fast && f.byteIx+8 <= room {
			slots[f.slot] = binary.BigEndian.Uint64(b[f.byteIx:]) >> f.shift & f.m
		} else {
			slots[f.slot] = getBits(b, f.bitOff, f.w)
		}
	}
}

// encode appends the header, built from slots, to b, which must have
// capacity for the header plus 8 bytes of slack.
func (h *headerCodec) encode(b []byte, slots []uint64) []byte {
	o := len(b)
	bw := bitWriter{dst: b[o : o+h.bytes+8]}
	for i := range h.fields {
		f := &h.fields[i]
		bw.put(slots[f.slot], uint(f.w))
	}
	bw.flush()
	return b[:o+h.bytes]
}

// bitWriter packs fields MSB first into dst, which needs 8 bytes of slack
// beyond the data: whole 64-bit words as they fill, the rest at flush.
type bitWriter struct {
	dst []byte
	acc uint64
	n   uint // bits in acc
	at  int  // bytes of dst written
}

// put appends the w low bits of v (w <= 64).
func (bw *bitWriter) put(v uint64, w uint) {
	if bw.n+w <= 64 {
		bw.acc = bw.acc<<w | v
		bw.n += w
		return
	}
	r := 64 - bw.n
	binary.BigEndian.PutUint64(bw.dst[bw.at:], bw.acc<<r|v>>(w-r))
	bw.at += 8
	bw.n = w - r
	bw.acc = v & (1<<bw.n - 1)
}

// flush writes the bits left (a trailing partial byte padded with zero
// bits) and returns the number of bytes used.
func (bw *bitWriter) flush() int {
	if bw.n > 0 {
		binary.BigEndian.PutUint64(bw.dst[bw.at:], bw.acc<<(64-bw.n))
		bw.at += int(bw.n+7) / 8
		bw.n = 0
	}
	return bw.at
}

// packBits writes fields MSB first into dst (which needs 8 bytes of slack
// beyond the data) and returns the number of bytes used; a trailing
// partial byte is padded with zero bits.
func packBits(dst []byte, s *pktState, fields []dataField) int {
	bw := bitWriter{dst: dst}
	for i := range fields {
		f := &fields[i]
		var v uint64
		if f.slot >= 0 {
			v = s.slots[f.slot]
		} else {
			v = f.fn(s)
		}
		bw.put(v, uint(f.w))
	}
	return bw.flush()
}

func (c *compiler) extract(sc *scope, e *frontend.CallExpr) stmtFn {
	if !c.inParser {
		c.fail(e.P, "extract is only allowed in parsers")
	}
	if len(e.Args) != 1 {
		c.fail(e.P, "only the one-argument extract(hdr) is supported")
	}
	v := c.expr(sc, e.Args[0])
	if v.lv == nil || v.t.kind != kHeader || v.lv.readonly {
		c.fail(e.Args[0].ExprPos(), "extract needs a header")
	}
	base := v.lv.base
	if t := c.prog.tna; t != nil {
		switch {
		case c.tnaRole == "ingress parser" && base == t.igIntr:
			t.extractedIgIntr = true
		case c.tnaRole == "egress parser" && base == t.egIntr:
			t.extractedEgIntr = true
		}
	}
	h := c.codecFor(v.t, base)
	perr := c.prog.smParserError
	tooShort := c.prog.errCodes["PacketTooShort"]
	k := c.headerIndex(base)
	return func(s *pktState) flow {
		n := h.bytes
		if s.off+n > len(s.pkt) {
			s.slots[perr] = tooShort
			return flowReject
		}
		h.decode(s.slots[base:], s.pkt[s.off:])
		s.slots[base] = 1
		if k >= 0 {
			s.hoff1[k] = int32(s.off + 1)
			s.dirty[k] = false
		}
		s.off += n
		return flowNext
	}
}

func (c *compiler) emit(sc *scope, e *frontend.CallExpr) stmtFn {
	if len(e.Args) != 1 {
		c.fail(e.P, "emit takes one argument")
	}
	v := c.expr(sc, e.Args[0])
	if v.lv == nil || (v.t.kind != kHeader && v.t.kind != kStruct) {
		c.fail(e.Args[0].ExprPos(), "emit needs a header or a struct of headers")
	}
	var list []stmtFn
	var walk func(t *ptype, base int, at frontend.Pos)
	walk = func(t *ptype, base int, at frontend.Pos) {
		if t.kind == kStruct {
			for _, f := range t.fields {
				walk(f.t, base+f.off, at)
			}
			return
		}
		if t.kind != kHeader {
			c.fail(at, "emit: %s is not a header", t)
		}
		h := c.codecFor(t, base)
		k := c.headerIndex(base)
		c.emitBytes += h.bytes
		list = append(list, func(s *pktState) flow {
			if s.slots[base] == 0 {
				return flowNext
			}
			if k >= 0 && s.hoff1[k] != 0 && !(s.dirty[k] && h.allUsed) {
				o := int(s.hoff1[k] - 1)
				at := len(s.out)
				s.out = append(s.out, s.pkt[o:o+h.bytes]...)
				if s.dirty[k] {
					h.patch(s.out[at:at+h.bytes], s.slots[base:])
				}
				return flowNext
			}
			s.out = h.encode(s.out, s.slots[base:])
			return flowNext
		})
	}
	walk(v.t, v.lv.base, e.P)
	return seq(list)
}

// advance compiles pkt.advance(bits): the cursor skips bits (a multiple of
// 8 on this target); past the end of the packet is PacketTooShort.
func (c *compiler) advance(sc *scope, e *frontend.CallExpr) stmtFn {
	if !c.inParser {
		c.fail(e.P, "advance is only allowed in parsers")
	}
	if len(e.Args) != 1 {
		c.fail(e.P, "advance takes (bits)")
	}
	v := c.typed(c.rvalue(sc, e.Args[0], bitT(32)), e.Args[0].ExprPos())
	if t := c.prog.tna; t != nil && c.tnaRole == "ingress parser" {
		t.consumedMD = true
	}
	perr := c.prog.smParserError
	tooShort := c.prog.errCodes["PacketTooShort"]
	if v.isConst {
		if v.k%8 != 0 {
			c.fail(e.Args[0].ExprPos(), "advance by %d bits: this target advances by whole bytes", v.k)
		}
		n := int(v.k / 8)
		return func(s *pktState) flow {
			if s.off+n > len(s.pkt) {
				s.slots[perr] = tooShort
				return flowReject
			}
			s.off += n
			return flowNext
		}
	}
	f := v.fn
	return func(s *pktState) flow {
		bits := f(s)
		if bits%8 != 0 || uint64(s.off)+bits/8 > uint64(len(s.pkt)) {
			s.slots[perr] = tooShort
			return flowReject
		}
		s.off += int(bits / 8)
		return flowNext
	}
}

// portMetadataUnpack compiles l = port_metadata_unpack<T>(pkt): the next 64
// bits (the port metadata, all zero on this target) decoded as T, which
// must be a header or struct of bit<W> fields of at most 64 bits; the
// cursor advances by 64 bits.
func (c *compiler) portMetadataUnpack(sc *scope, l *lval, e *frontend.CallExpr) stmtFn {
	if !c.inParser {
		c.fail(e.P, "port_metadata_unpack is only allowed in parsers")
	}
	if len(e.Targs) != 1 || len(e.Args) != 1 {
		c.fail(e.P, "port_metadata_unpack takes <T>(pkt)")
	}
	t := c.resolveType(sc, e.Targs[0])
	if t != l.t || l.sliced {
		c.fail(e.P, "port_metadata_unpack<%s> assigned to a %s", t, l.t)
	}
	if v := c.expr(sc, e.Args[0]); v.sym == nil || v.sym.kind != sPacketIn || v.method != "" {
		c.fail(e.Args[0].ExprPos(), "port_metadata_unpack takes the packet_in")
	}
	if t.kind != kHeader && t.kind != kStruct {
		c.fail(e.P, "port_metadata_unpack<T>: T must be a header or struct")
	}
	bits := 0
	for _, f := range t.fields {
		if f.t.kind != kBit {
			c.fail(e.P, "port_metadata_unpack<%s>: field %s must be bit<W>", t, f.name)
		}
		bits += f.t.width
	}
	if bits > 64 {
		c.fail(e.P, "port_metadata_unpack<%s>: %d bits, more than the 64 of the port metadata", t, bits)
	}
	if tp := c.prog.tna; tp != nil && c.tnaRole == "ingress parser" {
		tp.consumedMD = true
	}
	base, n := l.base, t.size
	valid := t.kind == kHeader
	perr := c.prog.smParserError
	tooShort := c.prog.errCodes["PacketTooShort"]
	return c.dirtying(func(s *pktState) flow {
		if s.off+tnaPortMDBytes > len(s.pkt) {
			s.slots[perr] = tooShort
			return flowReject
		}
		// The port metadata is all zero: no control plane sets it.
		clear(s.slots[base : base+n])
		if valid {
			s.slots[base] = 1
		}
		s.off += tnaPortMDBytes
		return flowNext
	}, base, n)
}
