package target

// controlC is a compiled control: its apply block.
type controlC struct {
	name string
	body stmtFn
}

// run executes the control; exit ends it early.
func (ctl *controlC) run(s *pktState) {
	s.exited = false
	ctl.body(s)
	s.exited = false
}

func (c *compiler) compileControl(d *controlDecl, sc *scope, what string) *controlC {
	c.ctlName = ""
	if c.fqName(d.name, d.anns) != d.name {
		c.fail(d.p, "@name on a control is not supported")
	}
	return c.compileControlAs(d, sc, d.name)
}

// compileControlAs compiles a control whose locals are named name.local.
func (c *compiler) compileControlAs(d *controlDecl, sc *scope, name string) *controlC {
	saveName, saveParser := c.ctlName, c.inParser
	defer func() { c.ctlName, c.inParser = saveName, saveParser }()
	c.ctlName = name
	c.inParser = false
	local := newScope(sc)
	for _, l := range d.locals {
		c.localDecl(local, l)
	}
	body := c.block(local, d.body)
	return &controlC{name: d.name, body: body}
}

// localDecl declares one control or parser local.
func (c *compiler) localDecl(sc *scope, d decl) {
	switch d := d.(type) {
	case *varDecl:
		if d.t == nil {
			return // stray ';'
		}
		st := c.varDecl(sc, d)
		if st != nil {
			c.fail(d.p, "initialised variables are only supported inside apply blocks, actions and states")
		}
	case *constDecl:
		c.declareConst(sc, d)
	case *actionDecl:
		a := c.declareAction(sc, d)
		c.defineIn(sc, d.p, d.name, &symbol{kind: sAction, act: a})
	case *tableDecl:
		if c.inParser {
			c.fail(d.p, "tables are not allowed in parsers")
		}
		t := c.declareTable(sc, d)
		c.defineIn(sc, d.p, d.name, &symbol{kind: sTable, tbl: t})
	case *instDecl:
		if blk := c.blocks[d.t.name]; blk != nil && d.t.kind == "name" {
			c.declareSub(sc, d, blk)
			return
		}
		x := c.declareExtern(sc, d)
		c.defineIn(sc, d.p, d.name, &symbol{kind: sExtern, ext: x})
	default:
		c.fail(d.declPos(), "unsupported local declaration")
	}
}

// varDecl allocates a variable; it returns the initialising statement, if
// any. Variables without initialiser start at zero for every packet (all
// slots are cleared before the parser runs), which is what BMv2 does for
// metadata; P4 leaves them undefined.
func (c *compiler) varDecl(sc *scope, d *varDecl) stmtFn {
	t := c.resolveType(sc, d.t)
	switch t.kind {
	case kBit, kBool, kEnum, kError, kHeader, kStruct:
	default:
		c.fail(d.p, "variables of type %s are not supported", t)
	}
	var st stmtFn
	base := c.alloc(t.size)
	if d.init != nil {
		st = c.assign(sc, &lval{base: base, t: t}, d.init, d.p)
	}
	c.defineIn(sc, d.p, d.name, &symbol{kind: sVar, t: t, base: base})
	return st
}

func seq(list []stmtFn) stmtFn {
	switch len(list) {
	case 0:
		return func(*pktState) flow { return flowNext }
	case 1:
		return list[0]
	case 2:
		a, b := list[0], list[1]
		return func(s *pktState) flow {
			if f := a(s); f != flowNext {
				return f
			}
			return b(s)
		}
	}
	return func(s *pktState) flow {
		for _, st := range list {
			if f := st(s); f != flowNext {
				return f
			}
		}
		return flowNext
	}
}

func (c *compiler) block(sc *scope, b *blockStmt) stmtFn {
	inner := newScope(sc)
	var list []stmtFn
	for _, s := range b.stmts {
		if st := c.stmt(inner, s); st != nil {
			list = append(list, st)
		}
	}
	return seq(list)
}

// stmt compiles one statement into a closure that reports how control
// flows on (next, return/exit, reject).
func (c *compiler) stmt(sc *scope, s stmt) stmtFn {
	switch s := s.(type) {
	case *blockStmt:
		return c.block(sc, s)
	case *emptyStmt:
		return nil
	case *declStmt:
		switch d := s.d.(type) {
		case *varDecl:
			return c.varDecl(sc, d)
		case *constDecl:
			c.declareConst(sc, d)
			return nil
		}
	case *assignStmt:
		if call, ok := s.r.(*callExpr); ok && c.tnaT != nil {
			if id, ok := call.fn.(*identExpr); ok && id.name == "port_metadata_unpack" && sc.lookup(id.name) == nil {
				l := c.expr(sc, s.l)
				if l.lv == nil || l.lv.readonly {
					c.fail(s.p, "left side of = is not assignable")
				}
				c.mention(l.lv.base, l.t.size)
				return c.portMetadataUnpack(sc, l.lv, call)
			}
		}
		l := c.expr(sc, s.l)
		if l.lv == nil {
			c.fail(s.p, "left side of = is not assignable")
		}
		if l.lv.readonly {
			c.fail(s.p, "cannot assign here: %s", roReason(l.lv))
		}
		return c.assign(sc, l.lv, s.r, s.p)
	case *callStmt:
		v := c.call(sc, s.e.(*callExpr))
		if v.st == nil {
			c.fail(s.p, "call has no effect")
		}
		return v.st
	case *ifStmt:
		cond := c.rvalue(sc, s.cond, boolT)
		cf := cond.fn
		then := c.stmt(sc, s.then)
		if then == nil {
			then = seq(nil)
		}
		if s.els == nil {
			return func(st *pktState) flow {
				r := cf(st)
				if st.exited {
					return flowReturn
				}
				if r != 0 {
					return then(st)
				}
				return flowNext
			}
		}
		els := c.stmt(sc, s.els)
		if els == nil {
			els = seq(nil)
		}
		return func(st *pktState) flow {
			r := cf(st)
			if st.exited {
				return flowReturn
			}
			if r != 0 {
				return then(st)
			}
			return els(st)
		}
	case *switchStmt:
		return c.switchStmt(sc, s)
	case *returnStmt:
		if c.inParser {
			c.fail(s.p, "return is not allowed in a parser")
		}
		return func(*pktState) flow { return flowReturn }
	case *exitStmt:
		if c.inParser {
			c.fail(s.p, "exit is not allowed in a parser")
		}
		return func(st *pktState) flow {
			st.exited = true
			return flowReturn
		}
	}
	c.fail(s.stmtPos(), "unsupported statement")
	return nil
}

// assign compiles l = r.
func (c *compiler) assign(sc *scope, l *lval, r expr, at pos) stmtFn {
	if !l.t.scalar() {
		rv := c.expr(sc, r)
		if rv.lv == nil || rv.t != l.t {
			if rv.t == nil {
				c.fail(at, "cannot assign this to %s", l.t)
			}
			c.fail(at, "type mismatch: cannot assign %s to %s", rv.t, l.t)
		}
		dst, src, n := l.base, rv.lv.base, l.t.size
		c.mention(dst, n)
		c.mention(src, n)
		if dst == src {
			return nil
		}
		return c.dirtying(func(s *pktState) flow {
			copy(s.slots[dst:dst+n], s.slots[src:src+n])
			return flowNext
		}, dst, n)
	}
	v := c.rvalue(sc, r, l.t)
	v = c.typed(v, r.exprPos())
	return c.dirtying(storeFn(l, v), l.base, 1)
}

func storeFn(l *lval, v *val) stmtFn {
	b := l.base
	if l.sliced {
		lo := uint(l.lo)
		m := mask(l.hi-l.lo+1) << lo
		f := v.fn
		return func(s *pktState) flow {
			s.slots[b] = s.slots[b]&^m | f(s)<<lo&m
			return flowNext
		}
	}
	if v.isConst {
		k := v.k
		return func(s *pktState) flow {
			s.slots[b] = k
			return flowNext
		}
	}
	if v.isSlot {
		src := v.slot
		return func(s *pktState) flow {
			s.slots[b] = s.slots[src]
			return flowNext
		}
	}
	f := v.fn
	return func(s *pktState) flow {
		s.slots[b] = f(s)
		return flowNext
	}
}

// storeUint writes a raw value into a location (used by externs' out
// arguments).
func storeUint(l *lval, s *pktState, v uint64) {
	if l.sliced {
		lo := uint(l.lo)
		m := mask(l.hi-l.lo+1) << lo
		s.slots[l.base] = s.slots[l.base]&^m | v<<lo&m
		return
	}
	s.slots[l.base] = v & mask(widthOf(l.t))
}

func widthOf(t *ptype) int {
	switch t.kind {
	case kBit, kEnum:
		if t.width == 0 {
			return 32
		}
		return t.width
	case kBool:
		return 1
	}
	return 32
}

// switchStmt compiles switch (t.apply().action_run): case labels without
// a body fall through to the next; default covers the actions not named.
func (c *compiler) switchStmt(sc *scope, s *switchStmt) stmtFn {
	v := c.expr(sc, s.e)
	if v.applied == nil || v.method != "action_run" {
		c.fail(s.p, "switch is only supported on table.apply().action_run")
	}
	tb := v.applied
	apply := v.st
	// case label -> body; labels without a body fall through to the next.
	bodies := make([]stmtFn, len(tb.actions))
	var def stmtFn
	seen := map[string]bool{}
	var pending []int
	pendingDefault := false
	for i, cs := range s.cases {
		if seen[cs.label] {
			c.fail(cs.p, "duplicate case %s", cs.label)
		}
		seen[cs.label] = true
		if cs.label == "default" {
			if i != len(s.cases)-1 {
				c.fail(cs.p, "default must be the last case")
			}
			pendingDefault = true
		} else {
			idx := -1
			for j, a := range tb.actions {
				if a.act.localName == cs.label || a.act.name == cs.label {
					idx = j
				}
			}
			if idx < 0 {
				c.fail(cs.p, "%s is not an action of table %s", cs.label, tb.name)
			}
			pending = append(pending, idx)
		}
		if cs.body == nil {
			if i == len(s.cases)-1 {
				c.fail(cs.p, "last case needs a body")
			}
			continue
		}
		body := c.block(sc, cs.body)
		for _, j := range pending {
			bodies[j] = body
		}
		if pendingDefault {
			def = body
		}
		pending, pendingDefault = nil, false
	}
	if def != nil {
		for j := range bodies {
			if bodies[j] == nil {
				bodies[j] = def
			}
		}
	}
	rs := tb.runSlot
	return func(st *pktState) flow {
		if f := apply(st); f != flowNext {
			return f
		}
		if b := bodies[st.slots[rs]]; b != nil {
			return b(st)
		}
		return flowNext
	}
}

// Unchanged headers are deparsed by copying the bytes they were extracted
// from; every store into a header of hdr marks it dirty so that it is
// re-encoded from its fields instead.

// headersIn lists the headers of hdr that overlap slots [base, base+n).
func (c *compiler) headersIn(base, n int) []int {
	var ks []int
	for k, b := range c.prog.hdrBases {
		size := c.prog.hdrSizes[k]
		if base < b+size && b < base+n {
			ks = append(ks, k)
		}
	}
	return ks
}

// dirtying wraps st so that it marks the headers it writes (slots
// [base, base+n)) as modified.
func (c *compiler) dirtying(st stmtFn, base, n int) stmtFn {
	if st == nil {
		return nil
	}
	for slot, flag := range c.watch {
		if slot >= base && slot < base+n {
			inner, f := st, flag
			st = func(s *pktState) flow {
				s.slots[f] = 1
				return inner(s)
			}
		}
	}
	ks := c.headersIn(base, n)
	switch len(ks) {
	case 0:
		return st
	case 1:
		k := ks[0]
		return func(s *pktState) flow {
			s.dirty[k] = true
			return st(s)
		}
	}
	return func(s *pktState) flow {
		for _, k := range ks {
			s.dirty[k] = true
		}
		return st(s)
	}
}

// headerIndex returns the index in hdr of the header at base, or -1.
func (c *compiler) headerIndex(base int) int {
	for k, b := range c.prog.hdrBases {
		if b == base {
			return k
		}
	}
	return -1
}
