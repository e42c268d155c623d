package target

import (
	"math/big"
)

// val is the compile-time description of an expression: its type and how
// to compute it (a closure over the packet slots), or a constant, or a
// reference to something that is not a value (a table, an extern, a type).
type val struct {
	t       *ptype
	fn      exprFn
	isConst bool
	k       uint64   // typed constant
	big     *big.Int // kInt constant
	lv      *lval    // assignable location (also: composite values)

	sym     *symbol // table, extern, action, packet_in/out
	typeRef *ptype  // a type name in expression position
	recv    *val    // method receiver
	method  string  // method name, with recv or sym
	st      stmtFn  // effect of a call
	applied *tableC // the result of t.apply()
	isSlot  bool    // fn just reads slots[slot] (lets hot paths skip the call)
	slot    int
}

// operand describes a scalar for specialised closures: a constant, a slot
// read, or a general closure.
type operand struct {
	kind uint8 // opConst, opSlot, opFn
	k    uint64
	slot int
	fn   exprFn
}

const (
	opConst = iota
	opSlot
	opFn
)

func operandOf(v *val) operand {
	switch {
	case v.isConst:
		return operand{kind: opConst, k: v.k, fn: v.fn}
	case v.isSlot:
		return operand{kind: opSlot, slot: v.slot, fn: v.fn}
	}
	return operand{kind: opFn, fn: v.fn}
}

// lval is a location in the slots: a whole value (scalar or composite) at
// base, or the bits hi..lo of a scalar.
type lval struct {
	base     int
	t        *ptype
	sliced   bool
	hi, lo   int
	readonly bool
	why      string // why it is read-only, when not an `in` parameter
}

// roReason explains why l cannot be written.
func roReason(l *lval) string {
	if l.why != "" {
		return l.why
	}
	return "it is read-only (an in parameter)"
}

func constVal(t *ptype, k uint64) *val {
	return &val{t: t, isConst: true, k: k, fn: func(*pktState) uint64 { return k }}
}

func intConst(v *big.Int) *val { return &val{t: intT, isConst: true, big: v} }

// expr compiles any expression.
func (c *compiler) expr(sc *scope, e expr) *val {
	switch e := e.(type) {
	case *identExpr:
		return c.ident(sc, e)
	case *intExpr:
		if e.signed {
			c.fail(e.p, "signed literal %s: int<W> is not supported", e.text)
		}
		if e.width > 0 {
			if e.width > maxWidth {
				c.fail(e.p, "literal %s: widths above %d are not supported", e.text, maxWidth)
			}
			k, ok := toBits(e.val, e.width)
			if !ok {
				c.fail(e.p, "literal %s does not fit in bit<%d>", e.text, e.width)
			}
			return constVal(bitT(e.width), k)
		}
		return intConst(e.val)
	case *boolExpr:
		k := uint64(0)
		if e.val {
			k = 1
		}
		return constVal(boolT, k)
	case *stringExpr:
		return &val{t: stringT, isConst: true}
	case *memberExpr:
		return c.member(sc, e)
	case *sliceExpr:
		return c.slice(sc, e)
	case *indexExpr:
		c.fail(e.p, "array indexing (header stacks) is not supported")
	case *callExpr:
		return c.call(sc, e)
	case *binExpr:
		return c.binary(sc, e)
	case *unExpr:
		return c.unary(sc, e)
	case *castExpr:
		return c.cast(sc, e)
	case *condExpr:
		return c.cond(sc, e)
	case *listExpr:
		c.fail(e.p, "list expressions are only supported as hash and checksum data")
	case *defaultExpr:
		c.fail(e.p, "default/_ is only allowed in select cases and table entries")
	case *namedArg:
		c.fail(e.p, "named arguments are only supported in extern instantiations")
	case *typeExpr:
		c.fail(e.p, "a type is not a value here")
	}
	c.fail(e.exprPos(), "unsupported expression")
	return nil
}

func (c *compiler) ident(sc *scope, e *identExpr) *val {
	var s *symbol
	if e.dot {
		s = c.global.lookup(e.name)
	} else {
		s = sc.lookup(e.name)
	}
	if s == nil {
		c.fail(e.p, "unknown name %s", e.name)
	}
	switch s.kind {
	case sVar:
		return c.locVal(&lval{base: s.base, t: s.t, readonly: s.readonly})
	case sConst:
		v := *s.cval
		return &v
	case sType:
		return &val{typeRef: s.t}
	}
	return &val{sym: s}
}

// locVal makes the value of a location.
func (c *compiler) locVal(l *lval) *val {
	v := &val{t: l.t, lv: l}
	if l.sliced {
		b, lo, m := l.base, uint(l.lo), mask(l.hi-l.lo+1)
		v.fn = func(s *pktState) uint64 { return s.slots[b] >> lo & m }
	} else if l.t.scalar() {
		b := l.base
		v.fn = func(s *pktState) uint64 { return s.slots[b] }
		v.isSlot, v.slot = true, b
	}
	return v
}

// member compiles x.name: an enum or error member of a type, hit/miss/
// action_run of a table's apply result, a header or struct field (lazily
// read timestamps, read-only intrinsic fields, wide fields refused), a
// header method, or a method of an extern, table or packet.
func (c *compiler) member(sc *scope, e *memberExpr) *val {
	x := c.expr(sc, e.x)
	switch {
	case x.typeRef != nil:
		t := x.typeRef
		if t.kind != kEnum && t.kind != kError {
			c.fail(e.p, "%s has no member %s", t, e.name)
		}
		for i, m := range t.members {
			if m == e.name {
				if t.kind == kEnum && t.width > 0 {
					return constVal(t, t.values[i])
				}
				return constVal(t, uint64(i))
			}
		}
		c.fail(e.p, "%s has no member %s", t, e.name)
	case x.applied != nil:
		tb := x.applied
		apply := x.st
		switch e.name {
		case "hit", "miss":
			hs := tb.hitSlot
			neg := e.name == "miss"
			return &val{t: boolT, fn: func(s *pktState) uint64 {
				apply(s)
				if neg {
					return 1 - s.slots[hs]
				}
				return s.slots[hs]
			}}
		case "action_run":
			return &val{t: voidT, applied: tb, st: apply, method: "action_run"}
		}
		c.fail(e.p, "table apply result has no member %s", e.name)
	case x.lv != nil && (x.t.kind == kHeader || x.t.kind == kStruct):
		if f := x.t.field(e.name); f != nil {
			// header fields' offsets already skip slot 0, the validity bit
			slot := x.lv.base + f.off
			if f.t.scalar() {
				// Whole headers are mentioned where they are copied.
				c.mention(slot, 1)
			}
			if x.t == c.smT && (slot == c.prog.tsSlots[0] || slot == c.prog.tsSlots[1]) {
				// Timestamps are read lazily (the clock costs more than
				// most statements) and cannot be written.
				return &val{t: f.t, lv: &lval{base: slot, t: f.t, readonly: true, why: "timestamps are read-only"}, fn: func(s *pktState) uint64 {
					if !s.tsSet {
						s.ts, s.tsSet = s.dev.now(), true
					}
					return s.ts
				}}
			}
			if f.t.kind == kWide {
				c.fail(e.p, "%s.%s is %s: this target computes with up to %d bits (wider fields are parsed, copied with their header and deparsed, never read)", x.t, e.name, f.t, maxWidth)
			}
			if f.ro != "" && !x.lv.readonly {
				return c.locVal(&lval{base: slot, t: f.t, readonly: true, why: f.ro})
			}
			return c.locVal(&lval{base: slot, t: f.t, readonly: x.lv.readonly, why: x.lv.why})
		}
		if x.t.kind == kHeader {
			switch e.name {
			case "isValid", "setValid", "setInvalid":
				return &val{recv: x, method: e.name}
			}
		}
		c.fail(e.p, "%s has no field %s", x.t, e.name)
	case x.sym != nil:
		return &val{sym: x.sym, method: e.name}
	}
	c.fail(e.p, "no member %s here", e.name)
	return nil
}

func (c *compiler) slice(sc *scope, e *sliceExpr) *val {
	x := c.expr(sc, e.x)
	if x.t == nil || x.t.kind != kBit {
		c.fail(e.p, "only bit<W> values can be sliced")
	}
	hi := c.constInt(sc, e.hi)
	lo := c.constInt(sc, e.lo)
	if lo < 0 || hi < lo || hi >= int64(x.t.width) {
		c.fail(e.p, "slice [%d:%d] out of range for %s", hi, lo, x.t)
	}
	w := int(hi - lo + 1)
	// A slice of a location is itself a location, unless the value is not
	// what the slot holds (the lazily read timestamps).
	if x.lv != nil && (x.isSlot || x.lv.sliced) {
		l := *x.lv
		if l.sliced {
			l.lo += int(lo)
			l.hi = l.lo + w - 1
		} else {
			l.sliced, l.hi, l.lo = true, int(hi), int(lo)
		}
		l.t = bitT(w)
		return c.locVal(&l)
	}
	f := x.fn
	ulo, m := uint(lo), mask(w)
	v := &val{t: bitT(w), fn: func(s *pktState) uint64 { return f(s) >> ulo & m }}
	return c.fold(v, x)
}

// fold turns v into a constant when all its operands are constants.
func (c *compiler) fold(v *val, operands ...*val) *val {
	for _, o := range operands {
		if !o.isConst {
			return v
		}
	}
	return constVal(v.t, v.fn(nil))
}

// rvalue compiles a scalar expression and converts it to want (nil: keep
// its type; int constants stay arbitrary-precision).
func (c *compiler) rvalue(sc *scope, e expr, want *ptype) *val {
	v := c.expr(sc, e)
	return c.convert(v, want, e.exprPos())
}

func (c *compiler) convert(v *val, want *ptype, at pos) *val {
	if v.t == nil || (v.fn == nil && !(v.isConst && v.t.kind == kInt)) {
		if v.t != nil && !v.t.scalar() && want != nil && v.t == want {
			return v
		}
		c.fail(at, "not a value")
	}
	if want == nil {
		return v
	}
	if v.t.kind == kInt {
		switch want.kind {
		case kBit:
			k, ok := toBits(v.big, want.width)
			if !ok {
				c.fail(at, "constant %s does not fit in %s", v.big, want)
			}
			return constVal(want, k)
		case kInt:
			return v
		}
		c.fail(at, "type mismatch: expected %s, found an integer", want)
	}
	if v.t != want {
		c.fail(at, "type mismatch: expected %s, found %s", want, v.t)
	}
	return v
}

// typed makes sure v has a concrete scalar type (not an int constant).
func (c *compiler) typed(v *val, at pos) *val {
	if v.t == nil || !v.t.scalar() || v.fn == nil {
		if v.t != nil && v.t.kind == kInt {
			c.fail(at, "cannot infer the width of integer %s here; write it as <W>w<value> or cast it", v.big)
		}
		c.fail(at, "not a scalar value")
	}
	return v
}

// binary compiles a binary operation: integer constants fold exactly;
// otherwise an int constant takes the other operand's type, both sides
// must have the same type, and arithmetic is modulo 2^W.
func (c *compiler) binary(sc *scope, e *binExpr) *val {
	if e.op == "&&&" {
		c.fail(e.p, "&&& is only allowed in select cases and table entries")
	}
	l := c.expr(sc, e.l)
	r := c.expr(sc, e.r)
	if l.t == nil || r.t == nil {
		c.fail(e.p, "operands of %s must be values", e.op)
	}
	// Both arbitrary-precision constants: fold exactly.
	if l.t.kind == kInt && r.t.kind == kInt {
		return c.foldInt(e, l.big, r.big)
	}
	switch e.op {
	case "<<", ">>":
		if l.t.kind == kInt {
			c.fail(e.p, "cannot infer the width of %s; write it as <W>w<value>", l.big)
		}
		return c.shift(e, c.typed(l, e.l.exprPos()), r)
	case "++":
		l, r = c.typed(l, e.l.exprPos()), c.typed(r, e.r.exprPos())
		if l.t.kind != kBit || r.t.kind != kBit {
			c.fail(e.p, "++ needs bit<W> operands, found %s and %s", l.t, r.t)
		}
		w := l.t.width + r.t.width
		if w > maxWidth {
			c.fail(e.p, "concatenation is %d bits wide; this target supports up to %d", w, maxWidth)
		}
		lf, rf, rw := l.fn, r.fn, uint(r.t.width)
		return c.fold(&val{t: bitT(w), fn: func(s *pktState) uint64 { return lf(s)<<rw | rf(s) }}, l, r)
	}
	// Give an int constant the type of the other side.
	if l.t.kind == kInt {
		l = c.convert(l, r.t, e.l.exprPos())
	}
	if r.t.kind == kInt {
		r = c.convert(r, l.t, e.r.exprPos())
	}
	l, r = c.typed(l, e.l.exprPos()), c.typed(r, e.r.exprPos())
	if l.t != r.t {
		c.fail(e.p, "type mismatch in %s: %s and %s", e.op, l.t, r.t)
	}
	t := l.t
	lf, rf := l.fn, r.fn
	var v *val
	switch e.op {
	case "&&", "||":
		if t.kind != kBool {
			c.fail(e.p, "%s needs bool operands, found %s", e.op, t)
		}
		if e.op == "&&" {
			v = &val{t: boolT, fn: func(s *pktState) uint64 {
				if lf(s) == 0 {
					return 0
				}
				return rf(s)
			}}
		} else {
			v = &val{t: boolT, fn: func(s *pktState) uint64 {
				if lf(s) != 0 {
					return 1
				}
				return rf(s)
			}}
		}
	case "==", "!=":
		if !t.scalar() {
			c.fail(e.p, "%s on %s is not supported", e.op, t)
		}
		v = &val{t: boolT, fn: cmpFn(e.op, lf, rf, l, r)}
	case "<", ">", "<=", ">=":
		if t.kind != kBit {
			c.fail(e.p, "%s needs bit<W> operands, found %s", e.op, t)
		}
		v = &val{t: boolT, fn: cmpFn(e.op, lf, rf, l, r)}
	default:
		if t.kind != kBit {
			c.fail(e.p, "%s needs bit<W> operands, found %s", e.op, t)
		}
		fn := arithFn(e.op, t.width, lf, rf, l, r)
		if fn == nil {
			c.fail(e.p, "operator %s is not supported", e.op)
		}
		v = &val{t: t, fn: fn}
	}
	return c.fold(v, l, r)
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func cmpFn(op string, lf, rf exprFn, l, r *val) exprFn {
	if l.isSlot && r.isConst {
		a, k := l.slot, r.k
		switch op {
		case "==":
			return func(s *pktState) uint64 { return b2u(s.slots[a] == k) }
		case "!=":
			return func(s *pktState) uint64 { return b2u(s.slots[a] != k) }
		}
	}
	if l.isSlot && r.isSlot {
		a, b := l.slot, r.slot
		switch op {
		case "==":
			return func(s *pktState) uint64 { return b2u(s.slots[a] == s.slots[b]) }
		case "!=":
			return func(s *pktState) uint64 { return b2u(s.slots[a] != s.slots[b]) }
		}
	}
	if r.isConst {
		k := r.k
		switch op {
		case "==":
			return func(s *pktState) uint64 { return b2u(lf(s) == k) }
		case "!=":
			return func(s *pktState) uint64 { return b2u(lf(s) != k) }
		}
	}
	switch op {
	case "==":
		return func(s *pktState) uint64 { return b2u(lf(s) == rf(s)) }
	case "!=":
		return func(s *pktState) uint64 { return b2u(lf(s) != rf(s)) }
	case "<":
		return func(s *pktState) uint64 { return b2u(lf(s) < rf(s)) }
	case ">":
		return func(s *pktState) uint64 { return b2u(lf(s) > rf(s)) }
	case "<=":
		return func(s *pktState) uint64 { return b2u(lf(s) <= rf(s)) }
	default:
		return func(s *pktState) uint64 { return b2u(lf(s) >= rf(s)) }
	}
}

// arithFn implements P4's unsigned arithmetic modulo 2^w.
func arithFn(op string, w int, lf, rf exprFn, l, r *val) exprFn {
	m := mask(w)
	if l.isSlot && r.isConst {
		a, k := l.slot, r.k
		switch op {
		case "+":
			return func(s *pktState) uint64 { return (s.slots[a] + k) & m }
		case "-":
			return func(s *pktState) uint64 { return (s.slots[a] - k) & m }
		case "&":
			return func(s *pktState) uint64 { return s.slots[a] & k }
		}
	}
	if r.isConst {
		k := r.k
		switch op {
		case "+":
			return func(s *pktState) uint64 { return (lf(s) + k) & m }
		case "-":
			return func(s *pktState) uint64 { return (lf(s) - k) & m }
		case "&":
			return func(s *pktState) uint64 { return lf(s) & k }
		case "|":
			return func(s *pktState) uint64 { return lf(s) | k }
		}
	}
	switch op {
	case "+":
		return func(s *pktState) uint64 { return (lf(s) + rf(s)) & m }
	case "-":
		return func(s *pktState) uint64 { return (lf(s) - rf(s)) & m }
	case "*":
		return func(s *pktState) uint64 { return (lf(s) * rf(s)) & m }
	case "/":
		// Division by zero yields 0 (P4 leaves it undefined).
		return func(s *pktState) uint64 {
			d := rf(s)
			if d == 0 {
				return 0
			}
			return lf(s) / d
		}
	case "%":
		return func(s *pktState) uint64 {
			d := rf(s)
			if d == 0 {
				return 0
			}
			return lf(s) % d
		}
	case "&":
		return func(s *pktState) uint64 { return lf(s) & rf(s) }
	case "|":
		return func(s *pktState) uint64 { return lf(s) | rf(s) }
	case "^":
		return func(s *pktState) uint64 { return lf(s) ^ rf(s) }
	case "|+|":
		return func(s *pktState) uint64 {
			a, b := lf(s), rf(s)
			if a+b > m || a+b < a {
				return m
			}
			return a + b
		}
	case "|-|":
		return func(s *pktState) uint64 {
			a, b := lf(s), rf(s)
			if b > a {
				return 0
			}
			return a - b
		}
	}
	return nil
}

// shift compiles << and >>: a shift by W or more bits yields 0.
func (c *compiler) shift(e *binExpr, l, r *val) *val {
	if l.t.kind != kBit {
		c.fail(e.p, "%s needs a bit<W> left operand, found %s", e.op, l.t)
	}
	w := l.t.width
	m := mask(w)
	lf := l.fn
	if r.t.kind == kInt {
		if r.big.Sign() < 0 {
			c.fail(e.p, "negative shift amount")
		}
		n := uint64(64)
		if r.big.IsUint64() && r.big.Uint64() < 64 {
			n = r.big.Uint64()
		}
		var fn exprFn
		if n >= uint64(w) {
			fn = func(*pktState) uint64 { return 0 }
		} else if e.op == "<<" {
			fn = func(s *pktState) uint64 { return lf(s) << n & m }
		} else {
			fn = func(s *pktState) uint64 { return lf(s) >> n }
		}
		return c.fold(&val{t: l.t, fn: fn}, l)
	}
	r = c.typed(r, e.r.exprPos())
	if r.t.kind != kBit {
		c.fail(e.p, "shift amount must be bit<W>, found %s", r.t)
	}
	rf := r.fn
	var fn exprFn
	if e.op == "<<" {
		fn = func(s *pktState) uint64 {
			n := rf(s)
			if n >= 64 {
				return 0
			}
			return lf(s) << n & m
		}
	} else {
		fn = func(s *pktState) uint64 {
			n := rf(s)
			if n >= 64 {
				return 0
			}
			return lf(s) >> n
		}
	}
	return c.fold(&val{t: l.t, fn: fn}, l, r)
}

// foldInt folds an operation on two arbitrary-precision constants.
func (c *compiler) foldInt(e *binExpr, a, b *big.Int) *val {
	r := new(big.Int)
	b2 := func(x bool) *val {
		if x {
			return constVal(boolT, 1)
		}
		return constVal(boolT, 0)
	}
	switch e.op {
	case "+":
		r.Add(a, b)
	case "-":
		r.Sub(a, b)
	case "*":
		r.Mul(a, b)
	case "/", "%":
		if b.Sign() <= 0 || a.Sign() < 0 {
			c.fail(e.p, "%s needs positive constant operands", e.op)
		}
		if e.op == "/" {
			r.Quo(a, b)
		} else {
			r.Rem(a, b)
		}
	case "&":
		r.And(a, b)
	case "|":
		r.Or(a, b)
	case "^":
		r.Xor(a, b)
	case "<<", ">>":
		if b.Sign() < 0 || b.Cmp(big.NewInt(4096)) > 0 {
			c.fail(e.p, "shift amount out of range")
		}
		if e.op == "<<" {
			r.Lsh(a, uint(b.Int64()))
		} else {
			r.Rsh(a, uint(b.Int64()))
		}
	case "==":
		return b2(a.Cmp(b) == 0)
	case "!=":
		return b2(a.Cmp(b) != 0)
	case "<":
		return b2(a.Cmp(b) < 0)
	case ">":
		return b2(a.Cmp(b) > 0)
	case "<=":
		return b2(a.Cmp(b) <= 0)
	case ">=":
		return b2(a.Cmp(b) >= 0)
	default:
		c.fail(e.p, "operator %s is not defined on integers", e.op)
	}
	if r.BitLen() > 4096 {
		c.fail(e.p, "constant too large")
	}
	return intConst(r)
}

func (c *compiler) unary(sc *scope, e *unExpr) *val {
	x := c.expr(sc, e.x)
	if x.t == nil {
		c.fail(e.p, "operand of %s must be a value", e.op)
	}
	if x.t.kind == kInt {
		switch e.op {
		case "-":
			return intConst(new(big.Int).Neg(x.big))
		case "~":
			c.fail(e.p, "cannot infer the width of ~%s; write it as <W>w<value>", x.big)
		}
		c.fail(e.p, "%s is not defined on integers", e.op)
	}
	x = c.typed(x, e.x.exprPos())
	f := x.fn
	switch e.op {
	case "!":
		if x.t.kind != kBool {
			c.fail(e.p, "! needs a bool, found %s", x.t)
		}
		return c.fold(&val{t: boolT, fn: func(s *pktState) uint64 { return f(s) ^ 1 }}, x)
	case "~", "-":
		if x.t.kind != kBit {
			c.fail(e.p, "%s needs a bit<W>, found %s", e.op, x.t)
		}
		m := mask(x.t.width)
		if e.op == "~" {
			return c.fold(&val{t: x.t, fn: func(s *pktState) uint64 { return ^f(s) & m }}, x)
		}
		return c.fold(&val{t: x.t, fn: func(s *pktState) uint64 { return -f(s) & m }}, x)
	}
	c.fail(e.p, "unsupported operator %s", e.op)
	return nil
}

// cast compiles (T)x between bit<W> widths, bool and bit<1>, and
// serializable enums and their underlying type; an int constant cast to
// bit<W> is truncated.
func (c *compiler) cast(sc *scope, e *castExpr) *val {
	to := c.resolveType(sc, e.t)
	x := c.expr(sc, e.x)
	if x.t == nil {
		c.fail(e.p, "cannot cast this expression")
	}
	if x.t.kind == kInt {
		switch {
		case to.kind == kBit:
			// An explicit cast of a constant truncates, as p4c does.
			m := new(big.Int).Lsh(bigOne(), uint(to.width))
			r := new(big.Int).Mod(x.big, m)
			return constVal(to, r.Uint64())
		case to.kind == kBool:
			c.fail(e.p, "cannot cast an integer to bool")
		case to.kind == kEnum && to.width > 0:
			k, ok := toBits(x.big, to.width)
			if !ok {
				c.fail(e.p, "constant does not fit in %s", to)
			}
			return constVal(to, k)
		}
		c.fail(e.p, "cannot cast an integer to %s", to)
	}
	x = c.typed(x, e.x.exprPos())
	f := x.fn
	switch {
	case x.t == to:
		return x
	case to.kind == kBit && x.t.kind == kBit:
		m := mask(to.width)
		if to.width >= x.t.width {
			return &val{t: to, fn: f, isConst: x.isConst, k: x.k}
		}
		return c.fold(&val{t: to, fn: func(s *pktState) uint64 { return f(s) & m }}, x)
	case to.kind == kBit && x.t.kind == kBool:
		if to.width != 1 {
			c.fail(e.p, "bool can only be cast to bit<1>")
		}
		return &val{t: to, fn: f, isConst: x.isConst, k: x.k}
	case to.kind == kBool && x.t.kind == kBit:
		if x.t.width != 1 {
			c.fail(e.p, "only bit<1> can be cast to bool")
		}
		return &val{t: to, fn: f, isConst: x.isConst, k: x.k}
	case to.kind == kBit && x.t.kind == kEnum && x.t.width > 0:
		if to.width != x.t.width {
			c.fail(e.p, "cannot cast %s (bit<%d>) to %s", x.t, x.t.width, to)
		}
		return &val{t: to, fn: f, isConst: x.isConst, k: x.k}
	case to.kind == kEnum && to.width > 0 && x.t.kind == kBit:
		if to.width != x.t.width {
			c.fail(e.p, "cannot cast %s to %s (bit<%d>)", x.t, to, to.width)
		}
		return &val{t: to, fn: f, isConst: x.isConst, k: x.k}
	}
	c.fail(e.p, "cannot cast %s to %s", x.t, to)
	return nil
}

func (c *compiler) cond(sc *scope, e *condExpr) *val {
	cv := c.rvalue(sc, e.c, boolT)
	a := c.expr(sc, e.then)
	b := c.expr(sc, e.els)
	if a.t == nil || b.t == nil {
		c.fail(e.p, "?: needs values")
	}
	if a.t.kind == kInt && b.t.kind == kInt {
		c.fail(e.p, "cannot infer the width of ?: with two integer constants")
	}
	if a.t.kind == kInt {
		a = c.convert(a, b.t, e.then.exprPos())
	}
	if b.t.kind == kInt {
		b = c.convert(b, a.t, e.els.exprPos())
	}
	a, b = c.typed(a, e.then.exprPos()), c.typed(b, e.els.exprPos())
	if a.t != b.t {
		c.fail(e.p, "type mismatch in ?: %s and %s", a.t, b.t)
	}
	cf, af, bf := cv.fn, a.fn, b.fn
	return c.fold(&val{t: a.t, fn: func(s *pktState) uint64 {
		if cf(s) != 0 {
			return af(s)
		}
		return bf(s)
	}}, cv, a, b)
}
