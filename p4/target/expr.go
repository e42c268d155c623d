package target

import (
	"github.com/swordbox/swordbox/p4/target/frontend"
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
func (c *compiler) expr(sc *scope, e frontend.Expr) *val {
	switch e := e.(type) {
	case *frontend.IdentExpr:
		return c.ident(sc, e)
	case *frontend.IntExpr:
		if e.Signed {
			c.fail(e.P, "signed literal %s: int<W> is not supported", e.Text)
		}
		if e.Width > 0 {
			if e.Width > maxWidth {
				c.fail(e.P, "literal %s: widths above %d are not supported", e.Text, maxWidth)
			}
			k, ok := toBits(e.Val, e.Width)
			if !ok {
				c.fail(e.P, "literal %s does not fit in bit<%d>", e.Text, e.Width)
			}
			return constVal(bitT(e.Width), k)
		}
		return intConst(e.Val)
	case *frontend.BoolExpr:
		k := uint64(0)
		if e.Val {
			k = 1
		}
		return constVal(boolT, k)
	case *frontend.StringExpr:
		return &val{t: stringT, isConst: true}
	case *frontend.MemberExpr:
		return c.member(sc, e)
	case *frontend.SliceExpr:
		return c.slice(sc, e)
	case *frontend.IndexExpr:
		c.fail(e.P, "array indexing (header stacks) is not supported")
	case *frontend.CallExpr:
		return c.call(sc, e)
	case *frontend.BinExpr:
		return c.binary(sc, e)
	case *frontend.UnExpr:
		return c.unary(sc, e)
	case *frontend.CastExpr:
		return c.cast(sc, e)
	case *frontend.CondExpr:
		return c.cond(sc, e)
	case *frontend.ListExpr:
		c.fail(e.P, "list expressions are only supported as hash and checksum data")
	case *frontend.DefaultExpr:
		c.fail(e.P, "default/_ is only allowed in select cases and table entries")
	case *frontend.NamedArg:
		c.fail(e.P, "named arguments are only supported in extern instantiations")
	case *frontend.TypeExpr:
		c.fail(e.P, "a type is not a value here")
	}
	c.fail(e.ExprPos(), "unsupported expression")
	return nil
}

func (c *compiler) ident(sc *scope, e *frontend.IdentExpr) *val {
	var s *symbol
	if e.Dot {
		s = c.global.lookup(e.Name)
	} else {
		s = sc.lookup(e.Name)
	}
	if s == nil {
		c.fail(e.P, "unknown name %s", e.Name)
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
func (c *compiler) member(sc *scope, e *frontend.MemberExpr) *val {
	x := c.expr(sc, e.X)
	switch {
	case x.typeRef != nil:
		t := x.typeRef
		if t.kind != kEnum && t.kind != kError {
			c.fail(e.P, "%s has no member %s", t, e.Name)
		}
		for i, m := range t.members {
			if m == e.Name {
				if t.kind == kEnum && t.width > 0 {
					return constVal(t, t.values[i])
				}
				return constVal(t, uint64(i))
			}
		}
		c.fail(e.P, "%s has no member %s", t, e.Name)
	case x.applied != nil:
		tb := x.applied
		apply := x.st
		switch e.Name {
		case "hit", "miss":
			hs := tb.hitSlot
			neg := e.Name == "miss"
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
		c.fail(e.P, "table apply result has no member %s", e.Name)
	case x.lv != nil && (x.t.kind == kHeader || x.t.kind == kStruct):
		if f := x.t.field(e.Name); f != nil {
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
				c.fail(e.P, "%s.%s is %s: this target computes with up to %d bits (wider fields are parsed, copied with their header and deparsed, never read)", x.t, e.Name, f.t, maxWidth)
			}
			if f.ro != "" && !x.lv.readonly {
				return c.locVal(&lval{base: slot, t: f.t, readonly: true, why: f.ro})
			}
			return c.locVal(&lval{base: slot, t: f.t, readonly: x.lv.readonly, why: x.lv.why})
		}
		if x.t.kind == kHeader {
			switch e.Name {
			case "isValid", "setValid", "setInvalid":
				return &val{recv: x, method: e.Name}
			}
		}
		c.fail(e.P, "%s has no field %s", x.t, e.Name)
	case x.sym != nil:
		return &val{sym: x.sym, method: e.Name}
	}
	c.fail(e.P, "no member %s here", e.Name)
	return nil
}

func (c *compiler) slice(sc *scope, e *frontend.SliceExpr) *val {
	x := c.expr(sc, e.X)
	if x.t == nil || x.t.kind != kBit {
		c.fail(e.P, "only bit<W> values can be sliced")
	}
	hi := c.constInt(sc, e.Hi)
	lo := c.constInt(sc, e.Lo)
	if lo < 0 || hi < lo || hi >= int64(x.t.width) {
		c.fail(e.P, "slice [%d:%d] out of range for %s", hi, lo, x.t)
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
func (c *compiler) rvalue(sc *scope, e frontend.Expr, want *ptype) *val {
	v := c.expr(sc, e)
	return c.convert(v, want, e.ExprPos())
}

func (c *compiler) convert(v *val, want *ptype, at frontend.Pos) *val {
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
func (c *compiler) typed(v *val, at frontend.Pos) *val {
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
func (c *compiler) binary(sc *scope, e *frontend.BinExpr) *val {
	if e.Op == "&&&" {
		c.fail(e.P, "&&& is only allowed in select cases and table entries")
	}
	l := c.expr(sc, e.L)
	r := c.expr(sc, e.R)
	if l.t == nil || r.t == nil {
		c.fail(e.P, "operands of %s must be values", e.Op)
	}
	// Both arbitrary-precision constants: fold exactly.
	if l.t.kind == kInt && r.t.kind == kInt {
		return c.foldInt(e, l.big, r.big)
	}
	switch e.Op {
	case "<<", ">>":
		if l.t.kind == kInt {
			c.fail(e.P, "cannot infer the width of %s; write it as <W>w<value>", l.big)
		}
		return c.shift(e, c.typed(l, e.L.ExprPos()), r)
	case "++":
		l, r = c.typed(l, e.L.ExprPos()), c.typed(r, e.R.ExprPos())
		if l.t.kind != kBit || r.t.kind != kBit {
			c.fail(e.P, "++ needs bit<W> operands, found %s and %s", l.t, r.t)
		}
		w := l.t.width + r.t.width
		if w > maxWidth {
			c.fail(e.P, "concatenation is %d bits wide; this target supports up to %d", w, maxWidth)
		}
		lf, rf, rw := l.fn, r.fn, uint(r.t.width)
		return c.fold(&val{t: bitT(w), fn: func(s *pktState) uint64 { return lf(s)<<rw | rf(s) }}, l, r)
	}
	// Give an int constant the type of the other side.
	if l.t.kind == kInt {
		l = c.convert(l, r.t, e.L.ExprPos())
	}
	if r.t.kind == kInt {
		r = c.convert(r, l.t, e.R.ExprPos())
	}
	l, r = c.typed(l, e.L.ExprPos()), c.typed(r, e.R.ExprPos())
	if l.t != r.t {
		c.fail(e.P, "type mismatch in %s: %s and %s", e.Op, l.t, r.t)
	}
	t := l.t
	lf, rf := l.fn, r.fn
	var v *val
	switch e.Op {
	case "&&", "||":
		if t.kind != kBool {
			c.fail(e.P, "%s needs bool operands, found %s", e.Op, t)
		}
		if e.Op == "&&" {
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
			c.fail(e.P, "%s on %s is not supported", e.Op, t)
		}
		v = &val{t: boolT, fn: cmpFn(e.Op, lf, rf, l, r)}
	case "<", ">", "<=", ">=":
		if t.kind != kBit {
			c.fail(e.P, "%s needs bit<W> operands, found %s", e.Op, t)
		}
		v = &val{t: boolT, fn: cmpFn(e.Op, lf, rf, l, r)}
	default:
		if t.kind != kBit {
			c.fail(e.P, "%s needs bit<W> operands, found %s", e.Op, t)
		}
		fn := arithFn(e.Op, t.width, lf, rf, l, r)
		if fn == nil {
			c.fail(e.P, "operator %s is not supported", e.Op)
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
func (c *compiler) shift(e *frontend.BinExpr, l, r *val) *val {
	if l.t.kind != kBit {
		c.fail(e.P, "%s needs a bit<W> left operand, found %s", e.Op, l.t)
	}
	w := l.t.width
	m := mask(w)
	lf := l.fn
	if r.t.kind == kInt {
		if r.big.Sign() < 0 {
			c.fail(e.P, "negative shift amount")
		}
		n := uint64(64)
		if r.big.IsUint64() && r.big.Uint64() < 64 {
			n = r.big.Uint64()
		}
		var fn exprFn
		if n >= uint64(w) {
			fn = func(*pktState) uint64 { return 0 }
		} else if e.Op == "<<" {
			fn = func(s *pktState) uint64 { return lf(s) << n & m }
		} else {
			fn = func(s *pktState) uint64 { return lf(s) >> n }
		}
		return c.fold(&val{t: l.t, fn: fn}, l)
	}
	r = c.typed(r, e.R.ExprPos())
	if r.t.kind != kBit {
		c.fail(e.P, "shift amount must be bit<W>, found %s", r.t)
	}
	rf := r.fn
	var fn exprFn
	if e.Op == "<<" {
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
func (c *compiler) foldInt(e *frontend.BinExpr, a, b *big.Int) *val {
	r := new(big.Int)
	b2 := func(x bool) *val {
		if x {
			return constVal(boolT, 1)
		}
		return constVal(boolT, 0)
	}
	switch e.Op {
	case "+":
		r.Add(a, b)
	case "-":
		r.Sub(a, b)
	case "*":
		r.Mul(a, b)
	case "/", "%":
		if b.Sign() <= 0 || a.Sign() < 0 {
			c.fail(e.P, "%s needs positive constant operands", e.Op)
		}
		if e.Op == "/" {
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
			c.fail(e.P, "shift amount out of range")
		}
		if e.Op == "<<" {
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
		c.fail(e.P, "operator %s is not defined on integers", e.Op)
	}
	if r.BitLen() > 4096 {
		c.fail(e.P, "constant too large")
	}
	return intConst(r)
}

func (c *compiler) unary(sc *scope, e *frontend.UnExpr) *val {
	x := c.expr(sc, e.X)
	if x.t == nil {
		c.fail(e.P, "operand of %s must be a value", e.Op)
	}
	if x.t.kind == kInt {
		switch e.Op {
		case "-":
			return intConst(new(big.Int).Neg(x.big))
		case "~":
			c.fail(e.P, "cannot infer the width of ~%s; write it as <W>w<value>", x.big)
		}
		c.fail(e.P, "%s is not defined on integers", e.Op)
	}
	x = c.typed(x, e.X.ExprPos())
	f := x.fn
	switch e.Op {
	case "!":
		if x.t.kind != kBool {
			c.fail(e.P, "! needs a bool, found %s", x.t)
		}
		return c.fold(&val{t: boolT, fn: func(s *pktState) uint64 { return f(s) ^ 1 }}, x)
	case "~", "-":
		if x.t.kind != kBit {
			c.fail(e.P, "%s needs a bit<W>, found %s", e.Op, x.t)
		}
		m := mask(x.t.width)
		if e.Op == "~" {
			return c.fold(&val{t: x.t, fn: func(s *pktState) uint64 { return ^f(s) & m }}, x)
		}
		return c.fold(&val{t: x.t, fn: func(s *pktState) uint64 { return -f(s) & m }}, x)
	}
	c.fail(e.P, "unsupported operator %s", e.Op)
	return nil
}

// cast compiles (T)x between bit<W> widths, bool and bit<1>, and
// serializable enums and their underlying type; an int constant cast to
// bit<W> is truncated.
func (c *compiler) cast(sc *scope, e *frontend.CastExpr) *val {
	to := c.resolveType(sc, e.T)
	x := c.expr(sc, e.X)
	if x.t == nil {
		c.fail(e.P, "cannot cast this expression")
	}
	if x.t.kind == kInt {
		switch {
		case to.kind == kBit:
			// An explicit cast of a constant truncates, as p4c does.
			m := new(big.Int).Lsh(bigOne(), uint(to.width))
			r := new(big.Int).Mod(x.big, m)
			return constVal(to, r.Uint64())
		case to.kind == kBool:
			c.fail(e.P, "cannot cast an integer to bool")
		case to.kind == kEnum && to.width > 0:
			k, ok := toBits(x.big, to.width)
			if !ok {
				c.fail(e.P, "constant does not fit in %s", to)
			}
			return constVal(to, k)
		}
		c.fail(e.P, "cannot cast an integer to %s", to)
	}
	x = c.typed(x, e.X.ExprPos())
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
			c.fail(e.P, "bool can only be cast to bit<1>")
		}
		return &val{t: to, fn: f, isConst: x.isConst, k: x.k}
	case to.kind == kBool && x.t.kind == kBit:
		if x.t.width != 1 {
			c.fail(e.P, "only bit<1> can be cast to bool")
		}
		return &val{t: to, fn: f, isConst: x.isConst, k: x.k}
	case to.kind == kBit && x.t.kind == kEnum && x.t.width > 0:
		if to.width != x.t.width {
			c.fail(e.P, "cannot cast %s (bit<%d>) to %s", x.t, x.t.width, to)
		}
		return &val{t: to, fn: f, isConst: x.isConst, k: x.k}
	case to.kind == kEnum && to.width > 0 && x.t.kind == kBit:
		if to.width != x.t.width {
			c.fail(e.P, "cannot cast %s to %s (bit<%d>)", x.t, to, to.width)
		}
		return &val{t: to, fn: f, isConst: x.isConst, k: x.k}
	}
	c.fail(e.P, "cannot cast %s to %s", x.t, to)
	return nil
}

func (c *compiler) cond(sc *scope, e *frontend.CondExpr) *val {
	cv := c.rvalue(sc, e.C, boolT)
	a := c.expr(sc, e.Then)
	b := c.expr(sc, e.Els)
	if a.t == nil || b.t == nil {
		c.fail(e.P, "?: needs values")
	}
	if a.t.kind == kInt && b.t.kind == kInt {
		c.fail(e.P, "cannot infer the width of ?: with two integer constants")
	}
	if a.t.kind == kInt {
		a = c.convert(a, b.t, e.Then.ExprPos())
	}
	if b.t.kind == kInt {
		b = c.convert(b, a.t, e.Els.ExprPos())
	}
	a, b = c.typed(a, e.Then.ExprPos()), c.typed(b, e.Els.ExprPos())
	if a.t != b.t {
		c.fail(e.P, "type mismatch in ?: %s and %s", a.t, b.t)
	}
	cf, af, bf := cv.fn, a.fn, b.fn
	return c.fold(&val{t: a.t, fn: func(s *pktState) uint64 {
		if cf(s) != 0 {
			return af(s)
		}
		return bf(s)
	}}, cv, a, b)
}
