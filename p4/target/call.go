package target

import (
	"github.com/swordbox/swordbox/p4/target/frontend"
	"hash/crc32"
)

// actionC is a compiled action. Its parameters live in slots of their own;
// a table copies an entry's action data into them before running the body.
type actionC struct {
	name      string // fully qualified (P4Info name)
	localName string
	id        uint32
	params    []actParam
	body      stmtFn
	anns      []frontend.Annotation
	p         frontend.Pos
	inInfo    bool
	eff       *effNode // the body's effects (placement check)
}

type actParam struct {
	name string
	t    *ptype
	dir  string
	slot int
}

func (c *compiler) declareAction(sc *scope, d *frontend.ActionDecl) *actionC {
	a := &actionC{name: c.fqName(d.Name, d.Anns), localName: d.Name, anns: d.Anns, p: d.P}
	inner := newScope(sc)
	for _, pr := range d.Params {
		t := c.resolveType(sc, pr.T)
		if pr.Dir == "" && t.kind != kBit && t.kind != kBool {
			c.fail(pr.P, "action data parameter %s: type %s is not supported (use bit<W>)", pr.Name, t)
		}
		switch t.kind {
		case kBit, kBool, kEnum, kError, kHeader, kStruct:
		default:
			c.fail(pr.P, "action parameter %s: type %s is not supported", pr.Name, t)
		}
		slot := c.alloc(t.size)
		a.params = append(a.params, actParam{name: pr.Name, t: t, dir: pr.Dir, slot: slot})
		c.defineIn(inner, pr.P, pr.Name, &symbol{kind: sVar, t: t, base: slot, readonly: pr.Dir == "in"})
	}
	saved := c.inAction
	c.inAction = a
	savedEff := c.effPush()
	body := c.block(inner, d.Body)
	a.eff = c.effPop(savedEff)
	c.inAction = saved
	a.body = body
	return a
}

// dataParams are the directionless parameters (set by the control plane).
func (a *actionC) dataParams() []actParam {
	var out []actParam
	for _, p := range a.params {
		if p.dir == "" {
			out = append(out, p)
		}
	}
	return out
}

// callAction compiles a direct call of an action with copy-in/copy-out.
func (c *compiler) callAction(sc *scope, a *actionC, e *frontend.CallExpr) stmtFn {
	if c.inParser {
		c.fail(e.P, "actions cannot be called from a parser")
	}
	if len(e.Args) != len(a.params) {
		c.fail(e.P, "action %s takes %d arguments, got %d", a.localName, len(a.params), len(e.Args))
	}
	var ins, outs []stmtFn
	for i, p := range a.params {
		arg := e.Args[i]
		pl := &lval{base: p.slot, t: p.t}
		switch p.dir {
		case "", "in":
			if st := c.assign(sc, pl, arg, arg.ExprPos()); st != nil {
				ins = append(ins, st)
			}
		case "out", "inout":
			v := c.expr(sc, arg)
			if v.lv == nil {
				c.fail(arg.ExprPos(), "argument for %s parameter %s must be assignable", p.dir, p.name)
			}
			if v.lv.readonly {
				c.fail(arg.ExprPos(), "argument for %s parameter %s: %s", p.dir, p.name, roReason(v.lv))
			}
			if v.t != p.t {
				c.fail(arg.ExprPos(), "type mismatch: parameter %s is %s, argument is %s", p.name, p.t, v.t)
			}
			if v.lv.sliced {
				c.fail(arg.ExprPos(), "slices as %s arguments are not supported", p.dir)
			}
			src, dst, n := v.lv.base, p.slot, p.t.size
			c.mention(src, n)
			if p.dir == "inout" {
				ins = append(ins, func(s *pktState) flow {
					copy(s.slots[dst:dst+n], s.slots[src:src+n])
					return flowNext
				})
			}
			outs = append(outs, c.dirtying(func(s *pktState) flow {
				copy(s.slots[src:src+n], s.slots[dst:dst+n])
				return flowNext
			}, src, n))
		}
	}
	c.effAdd(&effNode{kind: effCall, kids: []*effNode{a.effOrEmpty()}})
	in, body, out := seq(ins), a.body, seq(outs)
	return func(s *pktState) flow {
		in(s)
		body(s)
		out(s)
		if s.exited {
			return flowReturn
		}
		return flowNext
	}
}

// v1modelFuncs are v1model's free functions (refused in tna programs).
var v1modelFuncs = map[string]bool{
	"mark_to_drop": true, "clone": true, "clone_preserving_field_list": true, "resubmit_preserving_field_list": true,
	"recirculate_preserving_field_list": true, "hash": true, "verify_checksum": true, "update_checksum": true,
	"digest": true, "clone3": true, "resubmit": true, "recirculate": true, "random": true, "truncate": true,
	"verify_checksum_with_payload": true, "update_checksum_with_payload": true, "log_msg": true,
}

// unsupportedBuiltins are v1model functions this target refuses.
var unsupportedBuiltins = map[string]bool{
	"clone3": true, "resubmit": true, "recirculate": true,
	"random": true, "truncate": true, "assert": true, "assume": true,
	"verify_checksum_with_payload": true, "update_checksum_with_payload": true, "static_assert": true,
}

// call compiles a call expression. The result carries the call's effect in
// st, and for value-returning calls a closure in fn.
func (c *compiler) call(sc *scope, e *frontend.CallExpr) *val {
	if id, ok := e.Fn.(*frontend.IdentExpr); ok && c.tnaT != nil && v1modelFuncs[id.Name] && sc.lookup(id.Name) == nil {
		c.fail(e.P, "%s is a v1model function; this program includes <tna.p4>", id.Name)
	}
	if id, ok := e.Fn.(*frontend.IdentExpr); ok && id.Name == "port_metadata_unpack" && c.tnaT != nil {
		c.fail(e.P, "port_metadata_unpack returns a value: assign it (md = port_metadata_unpack<T>(pkt);)")
	}
	if id, ok := e.Fn.(*frontend.IdentExpr); ok && id.Name == "digest" && sc.lookup("digest") == nil {
		return &val{t: voidT, st: c.digestCall(sc, e)}
	}
	if len(e.Targs) > 0 {
		c.fail(e.P, "packet_in.lookahead is not supported")
	}
	if id, ok := e.Fn.(*frontend.IdentExpr); ok {
		s := sc.lookup(id.Name)
		if id.Dot {
			s = c.global.lookup(id.Name)
		}
		if s != nil && s.kind == sAction {
			return &val{t: voidT, st: c.callAction(sc, s.act, e)}
		}
		if s != nil && s.kind != sType {
			c.fail(e.P, "%s is not callable", id.Name)
		}
		switch id.Name {
		case "mark_to_drop":
			return &val{t: voidT, st: c.markToDrop(sc, e)}
		case "clone", "clone_preserving_field_list":
			return &val{t: voidT, st: c.cloneCall(sc, e, id.Name == "clone_preserving_field_list")}
		case "resubmit_preserving_field_list", "recirculate_preserving_field_list":
			return &val{t: voidT, st: c.reentryCall(sc, e, id.Name)}
		case "hash":
			return &val{t: voidT, st: c.hashCall(sc, e)}
		case "verify_checksum", "update_checksum":
			return &val{t: voidT, st: c.checksumCall(sc, e, id.Name == "update_checksum")}
		case "verify":
			return &val{t: voidT, st: c.verifyCall(sc, e)}
		case "log_msg":
			// Logging only: accepted and ignored.
			for _, a := range e.Args {
				if _, ok := a.(*frontend.ListExpr); !ok {
					c.expr(sc, a)
				}
			}
			return &val{t: voidT, st: func(*pktState) flow { return flowNext }}
		}
		if unsupportedBuiltins[id.Name] {
			switch id.Name {
			case "resubmit", "recirculate":
				c.fail(e.P, "%s is not supported by this target (use %s_preserving_field_list)", id.Name, id.Name)
			}
			c.fail(e.P, "%s is not supported by this target", id.Name)
		}
		c.fail(e.P, "unknown function %s", id.Name)
	}
	fv := c.expr(sc, e.Fn)
	switch {
	case fv.recv != nil: // header methods
		l := fv.recv.lv
		b := l.base
		nargs := 0
		switch fv.method {
		case "isValid":
			if len(e.Args) != nargs {
				c.fail(e.P, "isValid takes no arguments")
			}
			return &val{t: boolT, fn: func(s *pktState) uint64 { return s.slots[b] }}
		case "setValid", "setInvalid":
			if len(e.Args) != nargs {
				c.fail(e.P, "%s takes no arguments", fv.method)
			}
			if l.readonly {
				c.fail(e.P, "cannot change a read-only header")
			}
			k := uint64(0)
			if fv.method == "setValid" {
				k = 1
			}
			return &val{t: voidT, st: func(s *pktState) flow {
				s.slots[b] = k
				return flowNext
			}}
		}
	case fv.sym != nil && fv.method != "":
		switch fv.sym.kind {
		case sTable:
			if fv.method != "apply" || len(e.Args) != 0 {
				c.fail(e.P, "tables only have apply()")
			}
			if c.inAction != nil {
				c.fail(e.P, "tables cannot be applied from an action")
			}
			st := fv.sym.tbl.applyFn()
			c.lastApply = c.effTable(fv.sym.tbl, callPos(e), nil)
			c.lastApplied = fv.sym.tbl
			c.effAdd(c.lastApply)
			return &val{t: voidT, st: st, applied: fv.sym.tbl}
		case sExtern:
			if fv.sym.ext.tna {
				return c.tnaExternCall(sc, fv.sym.ext, fv.method, e)
			}
			return &val{t: voidT, st: c.externCall(sc, fv.sym.ext, fv.method, e)}
		case sSub:
			if fv.method != "apply" {
				c.fail(e.P, "%s has only apply()", fv.sym.sub.name)
			}
			return &val{t: voidT, st: c.applySub(sc, fv.sym.sub, e)}
		case sPacketIn:
			switch fv.method {
			case "extract":
				return &val{t: voidT, st: c.extract(sc, e)}
			case "advance":
				return &val{t: voidT, st: c.advance(sc, e)}
			}
			c.fail(e.P, "packet_in.%s is not supported", fv.method)
		case sPacketOut:
			if fv.method != "emit" {
				c.fail(e.P, "packet_out.%s is not supported", fv.method)
			}
			return &val{t: voidT, st: c.emit(sc, e)}
		}
	}
	c.fail(e.P, "unsupported call")
	return nil
}

func (c *compiler) smArg(sc *scope, e *frontend.CallExpr, what string) *lval {
	if len(e.Args) != 1 {
		c.fail(e.P, "%s takes standard_metadata as its only argument", what)
	}
	v := c.expr(sc, e.Args[0])
	if v.lv == nil || v.t != c.smT || v.lv.readonly {
		c.fail(e.P, "%s takes standard_metadata as its only argument", what)
	}
	return v.lv
}

func (c *compiler) markToDrop(sc *scope, e *frontend.CallExpr) stmtFn {
	if c.inParser {
		c.fail(e.P, "mark_to_drop cannot be called from a parser")
	}
	l := c.smArg(sc, e, "mark_to_drop")
	spec := l.base + c.smT.field("egress_spec").off
	mg := l.base + c.smT.field("mcast_grp").off
	return func(s *pktState) flow {
		s.slots[spec] = dropPort
		s.slots[mg] = 0
		return flowNext
	}
}

// dropPort is v1model's drop port (egress_spec value set by mark_to_drop).
const dropPort = 511

// dataField is one element of hash or checksum data.
type dataField struct {
	fn   exprFn
	w    int
	slot int // >= 0: the value is slots[slot]
}

func (c *compiler) dataList(sc *scope, e frontend.Expr) []dataField {
	var elems []frontend.Expr
	if l, ok := e.(*frontend.ListExpr); ok {
		elems = l.Elems
	} else {
		elems = []frontend.Expr{e}
	}
	var out []dataField
	for i := 0; i < len(elems); i++ {
		el := elems[i]
		v := c.expr(sc, el)
		if v.t != nil && v.t.kind == kHeader && v.lv != nil {
			if c.tnaT == nil {
				c.fail(el.ExprPos(), "whole headers as hash or checksum data are not supported; list the fields")
			}
			// tna: a header stands for its fields, in order.
			var fs []frontend.Expr
			for _, f := range v.t.fields {
				fs = append(fs, &frontend.MemberExpr{P: el.ExprPos(), X: el, Name: f.name})
			}
			elems = append(append(append([]frontend.Expr{}, elems[:i]...), fs...), elems[i+1:]...)
			i--
			continue
		}
		v = c.typed(v, el.ExprPos())
		if v.t.kind != kBit && v.t.kind != kBool {
			c.fail(el.ExprPos(), "hash/checksum data must be bit<W> fields, found %s", v.t)
		}
		df := dataField{fn: v.fn, w: widthOf(v.t), slot: -1}
		if v.isSlot {
			df.slot = v.slot
		}
		out = append(out, df)
	}
	if len(out) == 0 {
		c.fail(e.ExprPos(), "empty hash/checksum data")
	}
	bits := 0
	for _, f := range out {
		bits += f.w
	}
	if bits > 8*maxDataBytes {
		c.fail(e.ExprPos(), "hash/checksum data of %d bits; this target supports up to %d", bits, 8*maxDataBytes)
	}
	return out
}

// packData serialises the fields MSB first into the state's data buffer;
// a trailing partial byte is padded with zero bits on the right.
func packData(s *pktState, fields []dataField) []byte {
	n := packBits(s.dataBuf[:cap(s.dataBuf)], s, fields)
	return s.dataBuf[:n]
}

// maxDataBytes bounds hash and checksum data (the buffer has 8 bytes more).
const maxDataBytes = 120

// Hash algorithms (values of HashAlgorithm, in declaration order).
const (
	algCRC32    = 0
	algCRC16    = 2
	algIdentity = 5
	algCsum16   = 6
)

var crc16Table = func() (t [256]uint16) {
	// CRC-16/ARC: polynomial 0x8005 reflected (0xA001), init 0, no final xor.
	for i := range t {
		crc := uint16(i)
		for j := 0; j < 8; j++ {
			if crc&1 != 0 {
				crc = crc>>1 ^ 0xA001
			} else {
				crc >>= 1
			}
		}
		t[i] = crc
	}
	return
}()

func crc16(b []byte) uint64 {
	var crc uint16
	for _, x := range b {
		crc = crc>>8 ^ crc16Table[byte(crc)^x]
	}
	return uint64(crc)
}

// crc32Slice4 are slicing-by-4 tables of the reflected IEEE polynomial:
// hash data is short (tens of bytes), where the standard library falls
// back to one table lookup per byte.
var crc32Slice4 = func() (t [4][256]uint32) {
	t[0] = *crc32.IEEETable
	for i := 0; i < 256; i++ {
		c := t[0][i]
		for k := 1; k < 4; k++ {
			c = t[0][c&0xff] ^ c>>8
			t[k][i] = c
		}
	}
	return
}()

// crc32IEEE equals crc32.ChecksumIEEE.
func crc32IEEE(b []byte) uint64 {
	if len(b) >= 64 {
		return uint64(crc32.ChecksumIEEE(b))
	}
	crc := ^uint32(0)
	for len(b) >= 4 {
		crc ^= uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
		crc = crc32Slice4[3][crc&0xff] ^ crc32Slice4[2][crc>>8&0xff] ^ crc32Slice4[1][crc>>16&0xff] ^ crc32Slice4[0][crc>>24]
		b = b[4:]
	}
	for _, x := range b {
		crc = crc32Slice4[0][byte(crc)^x] ^ crc>>8
	}
	return uint64(^crc)
}

// csum16 is the Internet checksum of b (RFC 1071): the complement of its
// folded ones' complement sum.
func csum16(b []byte) uint64 {
	return ^foldSum(onesSum(b, false)) & 0xffff
}

func identity(b []byte) uint64 {
	var v uint64
	for _, x := range b {
		v = v<<8 | uint64(x)
	}
	return v
}

func algoFunc(alg uint64) func([]byte) uint64 {
	switch alg {
	case algCRC32:
		return crc32IEEE
	case algCRC16:
		return crc16
	case algIdentity:
		return identity
	case algCsum16:
		return csum16
	}
	return nil
}

func (c *compiler) algo(sc *scope, e frontend.Expr) func([]byte) uint64 {
	v := c.expr(sc, e)
	ha := c.global.m["HashAlgorithm"].t
	if v.t != ha || !v.isConst {
		c.fail(e.ExprPos(), "expected a HashAlgorithm constant")
	}
	f := algoFunc(v.k)
	if f == nil {
		c.fail(e.ExprPos(), "HashAlgorithm.%s is not supported (crc32, crc16, identity and csum16 are)", ha.members[v.k])
	}
	return f
}

// hashCall: hash(out O result, in HashAlgorithm algo, in T base, in D data, in M max).
// result = base + (hash(data) mod max), in O's width; max == 0 means no modulo.
func (c *compiler) hashCall(sc *scope, e *frontend.CallExpr) stmtFn {
	if len(e.Args) != 5 {
		c.fail(e.P, "hash takes (out result, algorithm, base, data, max)")
	}
	res := c.expr(sc, e.Args[0])
	if res.lv == nil || res.t.kind != kBit {
		c.fail(e.Args[0].ExprPos(), "hash result must be an assignable bit<W>")
	}
	if res.lv.readonly {
		c.fail(e.Args[0].ExprPos(), "hash result: %s", roReason(res.lv))
	}
	f := c.algo(sc, e.Args[1])
	base := c.intArg(sc, e.Args[2])
	data := c.dataList(sc, e.Args[3])
	max := c.intArg(sc, e.Args[4])
	l := res.lv
	return c.dirtying(func(s *pktState) flow {
		h := f(packData(s, data))
		if m := max(s); m != 0 {
			h %= m
		}
		storeUint(l, s, base(s)+h)
		return flowNext
	}, l.base, 1)
}

// intArg compiles a generic integer argument (bit<W> or an int constant).
func (c *compiler) intArg(sc *scope, e frontend.Expr) exprFn {
	v := c.expr(sc, e)
	if v.t != nil && v.t.kind == kInt {
		k, ok := toBits(v.big, 64)
		if !ok || v.big.Sign() < 0 {
			c.fail(e.ExprPos(), "constant out of range")
		}
		return func(*pktState) uint64 { return k }
	}
	v = c.typed(v, e.ExprPos())
	if v.t.kind != kBit {
		c.fail(e.ExprPos(), "expected bit<W>, found %s", v.t)
	}
	return v.fn
}

// checksumCall: verify_checksum(in bool cond, in T data, in O checksum, algo)
// sets standard_metadata.checksum_error when cond holds and the checksum
// differs; update_checksum(cond, data, inout checksum, algo) writes it.
func (c *compiler) checksumCall(sc *scope, e *frontend.CallExpr, update bool) stmtFn {
	if len(e.Args) != 4 {
		c.fail(e.P, "checksum functions take (condition, data, checksum, algorithm)")
	}
	cond := c.rvalue(sc, e.Args[0], boolT).fn
	data := c.dataList(sc, e.Args[1])
	ck := c.expr(sc, e.Args[2])
	if ck.t == nil || ck.t.kind != kBit || ck.fn == nil {
		c.fail(e.Args[2].ExprPos(), "checksum must be a bit<W> field")
	}
	f := c.algo(sc, e.Args[3])
	m := mask(ck.t.width)
	if update {
		if ck.lv == nil {
			c.fail(e.Args[2].ExprPos(), "update_checksum needs an assignable checksum field")
		}
		if ck.lv.readonly {
			c.fail(e.Args[2].ExprPos(), "update_checksum: %s", roReason(ck.lv))
		}
		l := ck.lv
		return c.dirtying(func(s *pktState) flow {
			if cond(s) != 0 {
				storeUint(l, s, f(packData(s, data))&m)
			}
			return flowNext
		}, l.base, 1)
	}
	ckf := ck.fn
	errSlot := c.prog.smChecksumError
	return func(s *pktState) flow {
		if cond(s) != 0 && f(packData(s, data))&m != ckf(s) {
			s.slots[errSlot] = 1
		}
		return flowNext
	}
}

// verifyCall: verify(bool condition, error err) in a parser.
func (c *compiler) verifyCall(sc *scope, e *frontend.CallExpr) stmtFn {
	if !c.inParser {
		c.fail(e.P, "verify is only allowed in parsers")
	}
	if len(e.Args) != 2 {
		c.fail(e.P, "verify takes (condition, error)")
	}
	cond := c.rvalue(sc, e.Args[0], boolT).fn
	ev := c.rvalue(sc, e.Args[1], c.errT)
	if !ev.isConst {
		c.fail(e.Args[1].ExprPos(), "verify needs an error constant")
	}
	code := ev.k
	perr := c.prog.smParserError
	return func(s *pktState) flow {
		if cond(s) == 0 {
			s.slots[perr] = code
			return flowReject
		}
		return flowNext
	}
}
