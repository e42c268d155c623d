package target

import "github.com/swordbox/swordbox/p4/target/frontend"

// controlC is a compiled control: its apply block.
type controlC struct {
	name string
	body stmtFn
	eff  *effNode // the apply block's effects (placement check)
}

// run executes the control; exit ends it early.
func (ctl *controlC) run(s *pktState) {
	s.exited = false
	ctl.body(s)
	s.exited = false
}

func (c *compiler) compileControl(d *frontend.ControlDecl, sc *scope, what string) *controlC {
	c.ctlName = ""
	if c.fqName(d.Name, d.Anns) != d.Name {
		c.fail(d.P, "@name on a control is not supported")
	}
	return c.compileControlAs(d, sc, d.Name)
}

// compileControlAs compiles a control whose locals are named name.local.
func (c *compiler) compileControlAs(d *frontend.ControlDecl, sc *scope, name string) *controlC {
	saveName, saveParser := c.ctlName, c.inParser
	defer func() { c.ctlName, c.inParser = saveName, saveParser }()
	c.ctlName = name
	c.inParser = false
	local := newScope(sc)
	savedEff := c.eff
	c.eff = nil
	for _, l := range d.Locals {
		c.localDecl(local, l)
	}
	c.effPush()
	body := c.block(local, d.Body)
	eff := c.effPop(savedEff)
	return &controlC{name: d.Name, body: body, eff: eff}
}

// localDecl declares one control or parser local.
func (c *compiler) localDecl(sc *scope, d frontend.Decl) {
	switch d := d.(type) {
	case *frontend.VarDecl:
		if d.T == nil {
			return // stray ';'
		}
		st := c.varDecl(sc, d)
		if st != nil {
			c.fail(d.P, "initialised variables are only supported inside apply blocks, actions and states")
		}
	case *frontend.ConstDecl:
		c.declareConst(sc, d)
	case *frontend.ActionDecl:
		a := c.declareAction(sc, d)
		c.defineIn(sc, d.P, d.Name, &symbol{kind: sAction, act: a})
	case *frontend.TableDecl:
		if c.inParser {
			c.fail(d.P, "tables are not allowed in parsers")
		}
		t := c.declareTable(sc, d)
		c.defineIn(sc, d.P, d.Name, &symbol{kind: sTable, tbl: t})
	case *frontend.InstDecl:
		if blk := c.blocks[d.T.Name]; blk != nil && d.T.Kind == "name" {
			c.declareSub(sc, d, blk)
			return
		}
		x := c.declareExtern(sc, d)
		c.defineIn(sc, d.P, d.Name, &symbol{kind: sExtern, ext: x})
	default:
		c.fail(d.DeclPos(), "unsupported local declaration")
	}
}

// varDecl allocates a variable; it returns the initialising statement, if
// any. Variables without initialiser start at zero for every packet (all
// slots are cleared before the parser runs), which is what BMv2 does for
// metadata; P4 leaves them undefined.
func (c *compiler) varDecl(sc *scope, d *frontend.VarDecl) stmtFn {
	t := c.resolveType(sc, d.T)
	switch t.kind {
	case kBit, kBool, kEnum, kError, kHeader, kStruct:
	default:
		c.fail(d.P, "variables of type %s are not supported", t)
	}
	var st stmtFn
	base := c.alloc(t.size)
	if d.Init != nil {
		st = c.assign(sc, &lval{base: base, t: t}, d.Init, d.P)
	}
	c.defineIn(sc, d.P, d.Name, &symbol{kind: sVar, t: t, base: base})
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

func (c *compiler) block(sc *scope, b *frontend.BlockStmt) stmtFn {
	inner := newScope(sc)
	var list []stmtFn
	for _, s := range b.Stmts {
		if st := c.stmt(inner, s); st != nil {
			list = append(list, st)
		}
	}
	return seq(list)
}

// stmt compiles one statement into a closure that reports how control
// flows on (next, return/exit, reject).
func (c *compiler) stmt(sc *scope, s frontend.Stmt) stmtFn {
	switch s := s.(type) {
	case *frontend.BlockStmt:
		return c.block(sc, s)
	case *frontend.EmptyStmt:
		return nil
	case *frontend.DeclStmt:
		switch d := s.D.(type) {
		case *frontend.VarDecl:
			return c.varDecl(sc, d)
		case *frontend.ConstDecl:
			c.declareConst(sc, d)
			return nil
		}
	case *frontend.AssignStmt:
		if call, ok := s.R.(*frontend.CallExpr); ok && c.tnaT != nil {
			if id, ok := call.Fn.(*frontend.IdentExpr); ok && id.Name == "port_metadata_unpack" && sc.lookup(id.Name) == nil {
				l := c.expr(sc, s.L)
				if l.lv == nil || l.lv.readonly {
					c.fail(s.P, "left side of = is not assignable")
				}
				c.mention(l.lv.base, l.t.size)
				return c.portMetadataUnpack(sc, l.lv, call)
			}
		}
		l := c.expr(sc, s.L)
		if l.lv == nil {
			c.fail(s.P, "left side of = is not assignable")
		}
		if l.lv.readonly {
			c.fail(s.P, "cannot assign here: %s", roReason(l.lv))
		}
		return c.assign(sc, l.lv, s.R, s.P)
	case *frontend.CallStmt:
		v := c.call(sc, s.E.(*frontend.CallExpr))
		if v.st == nil {
			c.fail(s.P, "call has no effect")
		}
		return v.st
	case *frontend.IfStmt:
		c.lastApply = nil
		cond := c.rvalue(sc, s.Cond, boolT)
		cf := cond.fn
		// if (t.apply().hit) and its variants: the table's effect is
		// recorded again below, each action with the branch it can take.
		var hitT *tableC
		var hitAt frontend.Pos
		hitThen := false
		if onHit, ok := hitBranch(s.Cond); ok && c.eff != nil && c.lastApply != nil &&
			len(c.eff.kids) > 0 && c.eff.kids[len(c.eff.kids)-1] == c.lastApply {
			hitT, hitAt, hitThen = c.lastApplied, c.lastApply.kids[0].at, onHit
			c.eff.kids = c.eff.kids[:len(c.eff.kids)-1]
		}
		savedEff := c.effPush()
		then := c.stmt(sc, s.Then)
		thenEff := c.effPop(savedEff)
		if then == nil {
			then = seq(nil)
		}
		savedEff = c.effPush()
		var els stmtFn
		if s.Els != nil {
			els = c.stmt(sc, s.Els)
		}
		elsEff := c.effPop(savedEff)
		if hitT != nil {
			hitEff, missEff := thenEff, elsEff
			if !hitThen {
				hitEff, missEff = elsEff, thenEff
			}
			c.effAdd(c.effTableHitMiss(hitT, hitAt, hitEff, missEff))
		} else {
			c.effAdd(&effNode{kind: effAlt, kids: []*effNode{thenEff, elsEff}})
		}
		if s.Els == nil {
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
	case *frontend.SwitchStmt:
		return c.switchStmt(sc, s)
	case *frontend.ReturnStmt:
		if c.inParser {
			c.fail(s.P, "return is not allowed in a parser")
		}
		c.effAdd(&effNode{kind: effReturn})
		return func(*pktState) flow { return flowReturn }
	case *frontend.ExitStmt:
		if c.inParser {
			c.fail(s.P, "exit is not allowed in a parser")
		}
		c.effAdd(&effNode{kind: effExit})
		return func(st *pktState) flow {
			st.exited = true
			return flowReturn
		}
	}
	c.fail(s.StmtPos(), "unsupported statement")
	return nil
}

// assign compiles l = r.
func (c *compiler) assign(sc *scope, l *lval, r frontend.Expr, at frontend.Pos) stmtFn {
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
	v = c.typed(v, r.ExprPos())
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
func (c *compiler) switchStmt(sc *scope, s *frontend.SwitchStmt) stmtFn {
	v := c.expr(sc, s.E)
	if v.applied == nil || v.method != "action_run" {
		c.fail(s.P, "switch is only supported on table.apply().action_run")
	}
	tb := v.applied
	apply := v.st
	// The table's effect was recorded by the apply; it is recorded again
	// below with each action followed by its case.
	if c.eff != nil && len(c.eff.kids) > 0 {
		c.eff.kids = c.eff.kids[:len(c.eff.kids)-1]
	}
	// case label -> body; labels without a body fall through to the next.
	bodies := make([]stmtFn, len(tb.actions))
	effs := make([]*effNode, len(tb.actions))
	var def stmtFn
	var defEff *effNode
	seen := map[string]bool{}
	var pending []int
	pendingDefault := false
	for i, cs := range s.Cases {
		if seen[cs.Label] {
			c.fail(cs.P, "duplicate case %s", cs.Label)
		}
		seen[cs.Label] = true
		if cs.Label == "default" {
			if i != len(s.Cases)-1 {
				c.fail(cs.P, "default must be the last case")
			}
			pendingDefault = true
		} else {
			idx := -1
			for j, a := range tb.actions {
				if a.act.localName == cs.Label || a.act.name == cs.Label {
					idx = j
				}
			}
			if idx < 0 {
				c.fail(cs.P, "%s is not an action of table %s", cs.Label, tb.name)
			}
			pending = append(pending, idx)
		}
		if cs.Body == nil {
			if i == len(s.Cases)-1 {
				c.fail(cs.P, "last case needs a body")
			}
			continue
		}
		savedEff := c.effPush()
		body := c.block(sc, cs.Body)
		bodyEff := c.effPop(savedEff)
		for _, j := range pending {
			bodies[j] = body
			effs[j] = bodyEff
		}
		if pendingDefault {
			def = body
			defEff = bodyEff
		}
		pending, pendingDefault = nil, false
	}
	if def != nil {
		for j := range bodies {
			if bodies[j] == nil {
				bodies[j] = def
				effs[j] = defEff
			}
		}
	}
	at := s.E.ExprPos()
	if m, ok := s.E.(*frontend.MemberExpr); ok {
		if ce, ok := m.X.(*frontend.CallExpr); ok {
			at = callPos(ce)
		}
	}
	c.effAdd(c.effTable(tb, at, effs))
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
