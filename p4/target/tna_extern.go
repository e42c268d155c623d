package target

import (
	"encoding/binary"
	configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"github.com/swordbox/swordbox/p4/target/frontend"
)

// tna.p4's externs: Register, RegisterAction, RegisterParam, Hash,
// CRCPolynomial, Random, Checksum, Counter, DirectCounter, Meter and
// DirectMeter. Counter, DirectCounter, Meter and DirectMeter share the
// runtime state (and P4Runtime entities) of v1model's counter,
// direct_counter, meter and direct_meter.

// regAction is a compiled RegisterAction: the slots of its apply's value
// and return value, and its body.
type regAction struct {
	reg    *externC
	valT   *ptype
	valB   int
	rvT    *ptype
	rvSlot int
	body   stmtFn
}

// run runs the apply on a cell's value and returns the new value and the
// return value.
func (ra *regAction) run(s *pktState, cell uint64) (uint64, uint64) {
	n := ra.valT.size
	v := s.slots[ra.valB : ra.valB+n]
	ra.reg.layout.unpack(cell, v)
	s.slots[ra.rvSlot] = 0
	ra.body(s)
	return ra.reg.layout.pack(v), s.slots[ra.rvSlot]
}

// cellLayout packs a register cell type into 64 bits: a bit<W>, or a
// struct of bit<W>/bool fields, the first field in the high bits (the two
// 32-bit halves of a Register<pair, _>).
type cellLayout struct {
	shifts []uint
	masks  []uint64
	width  int
}

func (l *cellLayout) unpack(v uint64, slots []uint64) {
	for i, sh := range l.shifts {
		slots[i] = v >> sh & l.masks[i]
	}
}

func (l *cellLayout) pack(slots []uint64) uint64 {
	var v uint64
	for i, sh := range l.shifts {
		v |= (slots[i] & l.masks[i]) << sh
	}
	return v
}

func (c *compiler) cellLayoutOf(t *ptype, at frontend.Pos) *cellLayout {
	switch t.kind {
	case kBit:
		return &cellLayout{shifts: []uint{0}, masks: []uint64{mask(t.width)}, width: t.width}
	case kStruct:
		l := &cellLayout{}
		for _, f := range t.fields {
			if f.t.kind != kBit && f.t.kind != kBool {
				c.fail(at, "register cell type %s: field %s is %s (bit<W> fields only)", t, f.name, f.t)
			}
			l.width += widthOf(f.t)
		}
		if l.width > 64 || len(t.fields) == 0 {
			c.fail(at, "register cell type %s is %d bits wide; this target supports 1 to 64", t, l.width)
		}
		sh := l.width
		for _, f := range t.fields {
			w := widthOf(f.t)
			sh -= w
			l.shifts = append(l.shifts, uint(sh))
			l.masks = append(l.masks, mask(w))
		}
		return l
	}
	c.fail(at, "register cells must be bit<W> or a struct of bit<W> fields, found %s", t)
	return nil
}

// tnaRefused are tna.p4's externs this target refuses.
var tnaRefused = map[string]bool{
	"Mirror": true, "Digest": true,
	"ParserCounter": true, "ParserPriority": true, "Lpf": true, "DirectLpf": true, "Wred": true, "DirectWred": true,
	"MathUnit": true, "ActionProfile": true, "ActionSelector": true, "SelectorAction": true, "Atcam": true,
	"Alpm": true, "Pktgen": true, "PortMetadata": true,
}

// ctorArgs orders an instantiation's arguments, positional or named, by
// the constructor's parameter names; the first required are mandatory.
func (c *compiler) ctorArgs(d *frontend.InstDecl, names []string, required int) []frontend.Expr {
	out := make([]frontend.Expr, len(names))
	named := false
	for i, a := range d.Args {
		if na, ok := a.(*frontend.NamedArg); ok {
			named = true
			k := -1
			for j, n := range names {
				if n == na.Name {
					k = j
				}
			}
			if k < 0 {
				c.fail(na.P, "%s has no constructor parameter %s", d.T.Name, na.Name)
			}
			if out[k] != nil {
				c.fail(na.P, "%s: argument %s given twice", d.T.Name, na.Name)
			}
			out[k] = na.E
			continue
		}
		if named {
			c.fail(a.ExprPos(), "%s: positional argument after named ones", d.T.Name)
		}
		if i >= len(names) {
			c.fail(a.ExprPos(), "%s takes at most %d constructor arguments", d.T.Name, len(names))
		}
		out[i] = a
	}
	for i := 0; i < required; i++ {
		if out[i] == nil {
			c.fail(d.P, "%s needs its constructor argument %s", d.T.Name, names[i])
		}
	}
	return out
}

// tnaEnum evaluates a constant of the tna enum named typ.
func (c *compiler) tnaEnum(sc *scope, e frontend.Expr, typ string) uint64 {
	v := c.expr(sc, e)
	s := c.global.lookup(typ)
	if s == nil || v.t != s.t || !v.isConst {
		c.fail(e.ExprPos(), "expected a %s constant", typ)
	}
	return v.k
}

// declareTNAExtern declares an instance of a tna extern.
func (c *compiler) declareTNAExtern(sc *scope, d *frontend.InstDecl, x *externC) *externC {
	p := c.prog
	x.tna = true
	targs := d.T.Args
	nargs := func(n int) {
		if len(targs) != n {
			c.fail(d.P, "%s takes %d type arguments, got %d", d.T.Name, n, len(targs))
		}
	}
	if len(d.Methods) != 0 && d.T.Name != "RegisterAction" && d.T.Name != "DirectRegisterAction" {
		c.fail(d.P, "%s instances have no initializer block", d.T.Name)
	}
	switch d.T.Name {
	case "Register":
		if len(targs) != 2 && len(targs) != 1 {
			c.fail(d.P, "Register takes type arguments <T, I>")
		}
		x.t = c.resolveType(sc, targs[0])
		x.layout = c.cellLayoutOf(x.t, d.P)
		if len(targs) == 2 && targs[1].Kind != "dontcare" {
			x.idxT = c.resolveType(sc, targs[1])
			if x.idxT.kind != kBit {
				c.fail(targs[1].P, "register index type must be bit<W>, found %s", x.idxT)
			}
		}
		args := c.ctorArgs(d, []string{"size", "initial_value"}, 1)
		x.size = c.cellsArg(sc, args[0])
		if args[1] != nil {
			x.init = c.cellConst(sc, args[1], x.t, x.layout)
		}
		x.kind = "register"
		x.idx = len(p.registers)
		p.registers = append(p.registers, x)
	case "RegisterParam":
		nargs(1)
		x.t = c.resolveType(sc, targs[0])
		if x.t.kind != kBit {
			c.fail(d.P, "RegisterParam<T>: T must be bit<W>, found %s", x.t)
		}
		args := c.ctorArgs(d, []string{"initial_value"}, 1)
		x.init = c.constValue(sc, args[0], x.t)
	case "RegisterAction":
		nargs(3)
		args := c.ctorArgs(d, []string{"reg"}, 1)
		reg, name := c.externArg(sc, args[0])
		if reg == nil || reg.kind != "register" || !reg.tna {
			c.fail(args[0].ExprPos(), "RegisterAction needs a Register instance")
		}
		t := c.resolveType(sc, targs[0])
		if t != reg.t {
			c.fail(targs[0].P, "RegisterAction value type %s differs from register %s's %s", t, name, reg.t)
		}
		if targs[1].Kind != "dontcare" {
			it := c.resolveType(sc, targs[1])
			if reg.idxT != nil && it != reg.idxT {
				c.fail(targs[1].P, "RegisterAction index type %s differs from register %s's %s", it, name, reg.idxT)
			}
		}
		u := c.resolveType(sc, targs[2])
		if u.kind != kBit && u.kind != kBool {
			c.fail(targs[2].P, "RegisterAction return type must be bit<W> or bool, found %s", u)
		}
		x.ra = c.registerAction(sc, d, reg, t, u)
	case "DirectRegister":
		nargs(1)
		x.t = c.resolveType(sc, targs[0])
		x.layout = c.cellLayoutOf(x.t, d.P)
		args := c.ctorArgs(d, []string{"initial_value"}, 0)
		if args[0] != nil {
			x.init = c.cellConst(sc, args[0], x.t, x.layout)
		}
		x.kind = "direct_register"
	case "DirectRegisterAction":
		nargs(2)
		args := c.ctorArgs(d, []string{"reg"}, 1)
		reg, name := c.externArg(sc, args[0])
		if reg == nil || reg.kind != "direct_register" {
			c.fail(args[0].ExprPos(), "DirectRegisterAction needs a DirectRegister instance")
		}
		t := c.resolveType(sc, targs[0])
		if t != reg.t {
			c.fail(targs[0].P, "DirectRegisterAction value type %s differs from direct register %s's %s", t, name, reg.t)
		}
		u := c.resolveType(sc, targs[1])
		if u.kind != kBit && u.kind != kBool {
			c.fail(targs[1].P, "DirectRegisterAction return type must be bit<W> or bool, found %s", u)
		}
		x.ra = c.registerAction(sc, d, reg, t, u)
	case "Hash":
		nargs(1)
		w := c.resolveType(sc, targs[0])
		if w.kind != kBit {
			c.fail(targs[0].P, "Hash<W>: W must be bit<W>, found %s", w)
		}
		x.t = w
		args := c.ctorArgs(d, []string{"algo", "poly"}, 1)
		x.algo = c.tnaHashAlgo(sc, args[0], args[1])
	case "CRCPolynomial":
		nargs(1)
		t := c.resolveType(sc, targs[0])
		if t.kind != kBit || t.width < 8 {
			c.fail(targs[0].P, "CRCPolynomial<T>: T must be bit<W> with 8 <= W <= 64, found %s", t)
		}
		args := c.ctorArgs(d, []string{"coeff", "reversed", "msb", "extended", "init", "xor"}, 6)
		coeff := c.constValue(sc, args[0], t)
		rev := c.constValue(sc, args[1], boolT) != 0
		if c.constValue(sc, args[2], boolT) != 0 {
			c.fail(args[2].ExprPos(), "CRCPolynomial with msb = true is not supported")
		}
		if c.constValue(sc, args[3], boolT) != 0 {
			c.fail(args[3].ExprPos(), "CRCPolynomial with extended = true is not supported")
		}
		init := c.constValue(sc, args[4], t)
		xor := c.constValue(sc, args[5], t)
		x.crc = newCRC(t.width, coeff, rev, init, xor)
	case "Random":
		nargs(1)
		x.t = c.resolveType(sc, targs[0])
		if x.t.kind != kBit {
			c.fail(targs[0].P, "Random<W>: W must be bit<W>, found %s", x.t)
		}
		if len(d.Args) != 0 {
			c.fail(d.P, "Random takes no constructor arguments")
		}
	case "Resubmit":
		// tna.p4: Resubmit() in the ingress deparser, emit() or
		// emit(hdr) of the data the resubmitted pass's parser sees
		// in place of the port metadata.
		if len(targs) != 0 || len(d.Args) != 0 {
			c.fail(d.P, "Resubmit takes no arguments on this target: Resubmit() (a mirror-type mode is not supported)")
		}
		if c.tnaRole != "ingress deparser" {
			c.fail(d.P, "Resubmit is an ingress deparser extern, not one of the %s", c.tnaRole)
		}
		t := p.tna
		if t.resubData == 0 {
			t.resubData, t.resubEmitted = c.alloc(1), c.alloc(1)
		}
	case "Checksum":
		if len(targs) != 0 || len(d.Args) != 0 {
			c.fail(d.P, "Checksum takes no arguments: Checksum()")
		}
		x.slot = c.alloc(1)
	case "Counter":
		nargs(2)
		if targs[1].Kind != "dontcare" {
			x.idxT = c.resolveType(sc, targs[1])
			if x.idxT.kind != kBit {
				c.fail(targs[1].P, "counter index type must be bit<W>, found %s", x.idxT)
			}
		}
		args := c.ctorArgs(d, []string{"size", "type"}, 2)
		x.size = c.cellsArg(sc, args[0])
		x.unit = c.tnaCounterUnit(sc, args[1])
		x.kind = "counter"
		x.idx = len(p.counters)
		p.counters = append(p.counters, x)
	case "DirectCounter":
		nargs(1)
		args := c.ctorArgs(d, []string{"type"}, 1)
		x.unit = c.tnaCounterUnit(sc, args[0])
		x.kind = "direct_counter"
		x.idx = len(p.directCounters)
		p.directCounters = append(p.directCounters, x)
	case "Meter":
		nargs(1)
		args := c.ctorArgs(d, []string{"size", "type"}, 2)
		x.size = c.cellsArg(sc, args[0])
		x.munit = c.tnaMeterUnit(sc, args[1])
		x.kind = "meter"
		x.idx = len(p.meters)
		p.meters = append(p.meters, x)
	case "DirectMeter":
		if len(targs) != 0 {
			c.fail(d.P, "DirectMeter takes no type arguments")
		}
		args := c.ctorArgs(d, []string{"type"}, 1)
		x.munit = c.tnaMeterUnit(sc, args[0])
		x.t = bitT(8)
		x.slot = c.alloc(1)
		x.kind = "direct_meter"
		x.idx = len(p.directMeters)
		p.directMeters = append(p.directMeters, x)
	default:
		c.fail(d.P, "unknown extern %s", d.T.Name)
	}
	return x
}

// cellConst evaluates a register's initial value: a constant, or for a
// struct cell a list of constants, one per field.
func (c *compiler) cellConst(sc *scope, e frontend.Expr, t *ptype, l *cellLayout) uint64 {
	if t.kind != kStruct {
		return c.constValue(sc, e, t)
	}
	list, ok := e.(*frontend.ListExpr)
	if !ok || len(list.Elems) != len(t.fields) {
		c.fail(e.ExprPos(), "initial value of a %s register: a list of %d constants", t, len(t.fields))
	}
	slots := make([]uint64, len(t.fields))
	for i, f := range t.fields {
		slots[i] = c.constValue(sc, list.Elems[i], f.t)
	}
	return l.pack(slots)
}

func (c *compiler) tnaCounterUnit(sc *scope, e frontend.Expr) configv1.CounterSpec_Unit {
	switch c.tnaEnum(sc, e, "CounterType_t") {
	case 0:
		return configv1.CounterSpec_PACKETS
	case 1:
		return configv1.CounterSpec_BYTES
	}
	return configv1.CounterSpec_BOTH
}

func (c *compiler) tnaMeterUnit(sc *scope, e frontend.Expr) configv1.MeterSpec_Unit {
	if c.tnaEnum(sc, e, "MeterType_t") == 0 {
		return configv1.MeterSpec_PACKETS
	}
	return configv1.MeterSpec_BYTES
}

// HashAlgorithm_t members, in declaration order.
const (
	tnaIdentity = iota
	tnaRandom
	tnaCRC8
	tnaCRC16
	tnaCRC32
	tnaCRC64
	tnaCustom
)

// The predefined CRCs, as the Tofino SDE's hash library defines crc_8,
// crc_16, crc_32 and crc_64.
var (
	crc8Spec  = newCRC(8, 0x07, false, 0, 0)
	crc64Spec = newCRC(64, 0x42f0e1eba9ea3693, false, 0, 0)
)

// externArg resolves a constructor argument that names an extern instance
// (a Register for a RegisterAction, a CRCPolynomial for a Hash). It returns
// nil when the argument is not a plain name bound to an extern instance.
func (c *compiler) externArg(sc *scope, e frontend.Expr) (*externC, string) {
	id, ok := e.(*frontend.IdentExpr)
	if !ok {
		return nil, ""
	}
	s := sc.lookup(id.Name)
	if s == nil || s.kind != sExtern {
		return nil, id.Name
	}
	return s.ext, id.Name
}

func (c *compiler) tnaHashAlgo(sc *scope, algo, poly frontend.Expr) func([]byte) uint64 {
	a := c.tnaEnum(sc, algo, "HashAlgorithm_t")
	if poly != nil {
		if a != tnaCustom {
			c.fail(poly.ExprPos(), "a CRCPolynomial goes with HashAlgorithm_t.CUSTOM")
		}
		crc, _ := c.externArg(sc, poly)
		if crc == nil || crc.crc == nil {
			c.fail(poly.ExprPos(), "expected a CRCPolynomial instance")
		}
		return crc.crc.sum
	}
	switch a {
	case tnaIdentity:
		return identity
	case tnaCRC8:
		return crc8Spec.sum
	case tnaCRC16:
		return crc16
	case tnaCRC32:
		return crc32IEEE
	case tnaCRC64:
		return crc64Spec.sum
	case tnaCustom:
		c.fail(algo.ExprPos(), "HashAlgorithm_t.CUSTOM needs a CRCPolynomial: Hash<W>(HashAlgorithm_t.CUSTOM, poly)")
	}
	c.fail(algo.ExprPos(), "HashAlgorithm_t.RANDOM is not supported (IDENTITY, CRC8, CRC16, CRC32, CRC64 and CUSTOM are)")
	return nil
}

// registerAction compiles a RegisterAction's apply(inout T value[, out U
// rv]) into slots of its own.
func (c *compiler) registerAction(sc *scope, d *frontend.InstDecl, reg *externC, t, u *ptype) *regAction {
	var m *frontend.MethodDecl
	for _, md := range d.Methods {
		if md.Name != "apply" {
			c.fail(md.P, "RegisterAction method %s is not supported (apply is)", md.Name)
		}
		if m != nil {
			c.fail(md.P, "apply declared twice")
		}
		m = md
	}
	if m == nil {
		c.fail(d.P, "RegisterAction %s needs an apply method: = { void apply(inout T value, out U rv) { ... } }", d.Name)
	}
	if m.Ret.Kind != "void" {
		c.fail(m.P, "apply returns void")
	}
	if len(m.Params) < 1 || len(m.Params) > 2 {
		c.fail(m.P, "apply takes (inout T value) or (inout T value, out U rv)")
	}
	ra := &regAction{reg: reg, valT: t, rvT: u}
	inner := newScope(sc)
	v := m.Params[0]
	if vt := c.resolveType(sc, v.T); vt != t || v.Dir != "inout" {
		c.fail(v.P, "apply's first parameter must be inout %s", t)
	}
	ra.valB = c.alloc(t.size)
	c.defineIn(inner, v.P, v.Name, &symbol{kind: sVar, t: t, base: ra.valB})
	ra.rvSlot = c.alloc(1)
	if len(m.Params) == 2 {
		r := m.Params[1]
		if rt := c.resolveType(sc, r.T); rt != u || r.Dir != "out" {
			c.fail(r.P, "apply's second parameter must be out %s", u)
		}
		c.defineIn(inner, r.P, r.Name, &symbol{kind: sVar, t: u, base: ra.rvSlot})
	}
	saved := c.inAction
	c.inAction = &actionC{name: d.Name + ".apply", localName: "apply"}
	ra.body = c.block(inner, m.Body)
	c.inAction = saved
	return ra
}

// indexArg compiles a register index.
func (c *compiler) indexArg(sc *scope, x *externC, e frontend.Expr) exprFn {
	want := x.idxT
	v := c.expr(sc, e)
	if v.t != nil && v.t.kind == kInt && want == nil {
		want = bitT(32)
	}
	v = c.typed(c.convert(v, want, e.ExprPos()), e.ExprPos())
	if v.t.kind != kBit {
		c.fail(e.ExprPos(), "register index must be bit<W>, found %s", v.t)
	}
	return v.fn
}

// valCall makes the value of a call with an effect: usable as an
// expression and as a statement.
func valCall(t *ptype, f exprFn) *val {
	return &val{t: t, fn: f, st: func(s *pktState) flow {
		f(s)
		return flowNext
	}}
}

// tnaExternCall compiles a method call on a tna extern.
func (c *compiler) tnaExternCall(sc *scope, x *externC, method string, e *frontend.CallExpr) *val {
	if c.inParser && !(x.kind == "Checksum") {
		c.fail(e.P, "%s cannot be used in a parser", x.kind)
	}
	nargs := func(n int, sig string) {
		if len(e.Args) != n {
			c.fail(e.P, "%s.%s takes %s", x.kind, method, sig)
		}
	}
	switch x.kind + "." + method {
	case "RegisterAction.execute":
		nargs(1, "(index)")
		ra := x.ra
		ix := c.indexArg(sc, ra.reg, e.Args[0])
		c.effAccess(ra.reg, "register", callPos(e))
		ridx := ra.reg.idx
		return valCall(ra.rvT, func(s *pktState) uint64 {
			s.dev.touchRegister(ridx)
			cells := s.dev.regs[ridx]
			i := ix(s)
			if i >= uint64(len(cells)) {
				_, rv := ra.run(s, 0)
				return rv
			}
			cell, rv := ra.run(s, cells[i])
			cells[i] = cell
			return rv
		})
	case "DirectRegisterAction.execute":
		nargs(0, "no arguments")
		ra := x.ra
		c.effAccess(ra.reg, "register", callPos(e))
		reg, init := ra.reg, ra.reg.init
		return valCall(ra.rvT, func(s *pktState) uint64 {
			// The cell of the entry that hit, in the table the register is
			// attached to; otherwise (a miss, another table) the initial
			// value, and the write is dropped.
			if p := s.dcell; p != nil && s.dcellOf == reg {
				cell, rv := ra.run(s, *p^init)
				*p = cell ^ init
				return rv
			}
			_, rv := ra.run(s, init)
			return rv
		})
	case "register.read":
		nargs(1, "(index)")
		if x.t.kind != kBit {
			c.fail(e.P, "Register.read of a %s register is not supported (use a RegisterAction)", x.t)
		}
		ix := c.indexArg(sc, x, e.Args[0])
		c.effAccess(x, "register", callPos(e))
		ridx := x.idx
		return valCall(x.t, func(s *pktState) uint64 {
			s.dev.touchRegister(ridx)
			cells := s.dev.regs[ridx]
			if i := ix(s); i < uint64(len(cells)) {
				return cells[i]
			}
			return 0
		})
	case "register.write":
		nargs(2, "(index, value)")
		if x.t.kind != kBit {
			c.fail(e.P, "Register.write of a %s register is not supported (use a RegisterAction)", x.t)
		}
		ix := c.indexArg(sc, x, e.Args[0])
		v := c.typed(c.rvalue(sc, e.Args[1], x.t), e.Args[1].ExprPos()).fn
		c.effAccess(x, "register", callPos(e))
		ridx := x.idx
		return &val{t: voidT, st: func(s *pktState) flow {
			s.dev.touchRegister(ridx)
			cells := s.dev.regs[ridx]
			if i := ix(s); i < uint64(len(cells)) {
				cells[i] = v(s)
			}
			return flowNext
		}}
	case "RegisterParam.read":
		nargs(0, "no arguments")
		return constVal(x.t, x.init)
	case "Hash.get":
		nargs(1, "(data)")
		data := c.dataList(sc, e.Args[0])
		f, m := x.algo, mask(x.t.width)
		return valCall(x.t, func(s *pktState) uint64 { return f(packData(s, data)) & m })
	case "Resubmit.emit":
		return c.resubmitEmit(sc, e)
	case "Random.get":
		nargs(0, "no arguments")
		m := mask(x.t.width)
		return valCall(x.t, func(s *pktState) uint64 { return s.dev.random() & m })
	case "Checksum.add", "Checksum.subtract":
		nargs(1, "(data)")
		data := c.dataList(sc, e.Args[0])
		acc, sub := x.slot, method == "subtract"
		return &val{t: voidT, st: func(s *pktState) flow {
			sum := onesSum(packData(s, data), sub)
			s.slots[acc] = foldSum(s.slots[acc] + sum)
			return flowNext
		}}
	case "Checksum.verify":
		nargs(0, "no arguments")
		acc := x.slot
		return valCall(boolT, func(s *pktState) uint64 { return b2u(foldSum(s.slots[acc]) == 0xffff) })
	case "Checksum.get":
		nargs(0, "no arguments")
		acc := x.slot
		return valCall(bitT(16), func(s *pktState) uint64 { return ^foldSum(s.slots[acc]) & 0xffff })
	case "Checksum.update":
		if len(e.Args) != 1 && len(e.Args) != 2 {
			c.fail(e.P, "Checksum.update takes (data) or (data, zeros_as_ones)")
		}
		data := c.dataList(sc, e.Args[0])
		zao := false
		if len(e.Args) == 2 {
			zao = c.constValue(sc, e.Args[1], boolT) != 0
		}
		return valCall(bitT(16), func(s *pktState) uint64 {
			v := csum16(packData(s, data))
			if zao && v == 0 {
				v = 0xffff
			}
			return v
		})
	case "counter.count", "direct_counter.count":
		if len(e.Args) > 0 && x.kind == "direct_counter" || len(e.Args) > 1 {
			c.fail(e.P, "%s.count with adjust_byte_count is not supported", x.kind)
		}
		st := c.externCall0(sc, x, method, e)
		if x.kind == "counter" {
			c.effAccess(x, "counter", callPos(e))
		}
		return &val{t: voidT, st: st}
	case "meter.execute":
		if len(e.Args) != 1 {
			c.fail(e.P, "Meter.execute takes (index) on this target (color-aware metering and adjust_byte_count are not supported)")
		}
		ix := c.typed(c.rvalue(sc, e.Args[0], bitT(32)), e.Args[0].ExprPos()).fn
		c.effAccess(x, "meter", callPos(e))
		idx, unit := x.idx, x.munit
		return valCall(bitT(8), func(s *pktState) uint64 {
			cells := s.dev.meters[idx]
			v := uint64(colorGreen)
			if i := ix(s); i < uint64(len(cells)) {
				v = cells[i].exec(s.now(), meterSize(s, unit))
			}
			return tnaColor(v)
		})
	case "direct_meter.execute":
		if len(e.Args) != 0 {
			c.fail(e.P, "DirectMeter.execute takes no arguments on this target")
		}
		ms := x.slot
		return valCall(bitT(8), func(s *pktState) uint64 { return tnaColor(s.slots[ms]) })
	}
	c.fail(e.P, "%s has no method %s on this target", x.kind, method)
	return nil
}

// tnaColor maps a meter colour (GREEN 0, YELLOW 1, RED 2) to
// MeterColor_t (RED is 3).
func tnaColor(v uint64) uint64 {
	if v == colorRed {
		return 3
	}
	return v
}

// onesSum is the ones' complement sum of b as 16-bit big-endian words (a
// trailing odd byte padded with zero), or of their complements.
func onesSum(b []byte, complement bool) uint64 {
	var sum uint64
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint64(b[i])<<8 | uint64(b[i+1])
	}
	words := uint64(len(b) / 2)
	if len(b)%2 == 1 {
		sum += uint64(b[len(b)-1]) << 8
		words++
	}
	if complement {
		// The sum of the words' complements, 0xffff - w each.
		sum = words*0xffff - sum
	}
	return sum
}

// foldSum folds carries into 16 bits.
func foldSum(sum uint64) uint64 {
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return sum
}

// random returns the next value of the Device's generator (xorshift64*,
// seeded by Options.RandomSeed); the Device's lock orders the calls.
func (d *Device) random() uint64 {
	x := d.rng
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	d.rng = x
	return x * 0x2545F4914F6CDD1D
}

// touchRegister records an access of a tna program to register idx: a
// second access in the same packet is counted in
// Stats.RegisterReaccesses (on Tofino a register lives in one stage's
// stateful ALU, which a packet passes once).
func (d *Device) touchRegister(idx int) {
	if d.regSeen[idx] == d.pktSeq {
		d.stats.RegisterReaccesses++
		return
	}
	d.regSeen[idx] = d.pktSeq
}

// resubmitEmit compiles Resubmit.emit() and Resubmit.emit(hdr): the
// packet's resubmit data is hdr as the deparser would emit it (none: zero;
// an invalid header: zero), at most the 64 bits of the port metadata it
// replaces on Tofino 1, left-aligned. Whether the packet is resubmitted is
// ig_dprsr_md.resubmit_type's (passTNA).
func (c *compiler) resubmitEmit(sc *scope, e *frontend.CallExpr) *val {
	t := c.prog.tna
	data, emitted := t.resubData, t.resubEmitted
	if len(e.Args) == 0 {
		return &val{t: voidT, st: func(s *pktState) flow {
			s.slots[data], s.slots[emitted] = 0, 1
			return flowNext
		}}
	}
	if len(e.Args) != 1 {
		c.fail(e.P, "Resubmit.emit takes () or (hdr)")
	}
	v := c.expr(sc, e.Args[0])
	if v.lv == nil || v.t.kind != kHeader {
		c.fail(e.Args[0].ExprPos(), "Resubmit.emit needs a header")
	}
	if v.t.bits > 64 {
		c.fail(e.Args[0].ExprPos(), "resubmit data %s is %d bits; Tofino 1 carries at most 64", v.t, v.t.bits)
	}
	h, base := codecOf(v.t), v.lv.base
	return &val{t: voidT, st: func(s *pktState) flow {
		var buf [16]byte
		if s.slots[base] != 0 {
			h.encode(buf[:0], s.slots[base:])
		}
		s.slots[data], s.slots[emitted] = binary.BigEndian.Uint64(buf[:8]), 1
		return flowNext
	}}
}
