package target

// Instantiated sub-parsers and sub-controls: a parser or control declared
// at top level, instantiated inside another parser or control
// (`Sub() inst;`) and applied there (`inst.apply(args);`).
//
// Each instance is compiled once, inline, at its first apply: its
// parameters are bound to the arguments' locations (directional arguments
// must be whole locations of the parameter's type; in arguments that are
// not locations are copied into slots of their own at every apply). An
// instance applied again must be applied to the same locations. Names
// inside an instance are qualified by the enclosing control and the
// instance name, as p4c does ("Ingress.inst.table").

// maxSubDepth bounds the nesting of instances (each level is compiled
// inline).
const maxSubDepth = 32

type subInst struct {
	d        decl // *parserDecl or *controlDecl
	name     string
	p        pos
	compiled stmtFn
	bound    []int // the argument locations of the first apply (-1: copied)
}

// declareSub declares an instance of a parser or control.
func (c *compiler) declareSub(sc *scope, d *instDecl, blk decl) {
	if len(d.args) != 0 {
		c.fail(d.p, "%s takes no constructor arguments", d.t.name)
	}
	if len(d.methods) != 0 {
		c.fail(d.p, "%s instance with an initializer block", d.t.name)
	}
	_, isParser := blk.(*parserDecl)
	if isParser != c.inParser {
		if isParser {
			c.fail(d.p, "parser %s can only be instantiated in a parser", d.t.name)
		}
		c.fail(d.p, "control %s can only be instantiated in a control", d.t.name)
	}
	if c.subs == nil {
		c.subs = map[*instDecl]*subInst{}
	}
	si := &subInst{d: blk, name: d.name, p: d.p}
	c.subs[d] = si
	c.defineIn(sc, d.p, d.name, &symbol{kind: sSub, sub: si})
}

// applySub compiles inst.apply(args).
func (c *compiler) applySub(sc *scope, si *subInst, e *callExpr) stmtFn {
	var params []param
	var name string
	switch d := si.d.(type) {
	case *parserDecl:
		params, name = d.params, d.name
	case *controlDecl:
		params, name = d.params, d.name
	}
	if c.inAction != nil {
		c.fail(e.p, "%s.apply cannot be called from an action", si.name)
	}
	if len(e.args) != len(params) {
		c.fail(e.p, "%s.apply takes %d arguments, got %d", si.name, len(params), len(e.args))
	}
	inner := newScope(c.global)
	var ins []stmtFn
	var bound []int
	for i, pr := range params {
		arg := e.args[i]
		t := c.resolveType(c.global, pr.t)
		if t.kind == kVoid && (t.name == "packet_in" || t.name == "packet_out") {
			v := c.expr(sc, arg)
			want := sPacketIn
			if t.name == "packet_out" {
				want = sPacketOut
			}
			if v.sym == nil || v.sym.kind != want || v.method != "" {
				c.fail(arg.exprPos(), "argument %d of %s.apply must be the %s", i+1, si.name, t.name)
			}
			c.defineIn(inner, pr.p, pr.name, &symbol{kind: want})
			bound = append(bound, -2)
			continue
		}
		v := c.expr(sc, arg)
		whole := v.lv != nil && !v.lv.sliced && v.t == t && (v.isSlot || !t.scalar())
		switch pr.dir {
		case "out", "inout":
			if v.lv == nil {
				c.fail(arg.exprPos(), "argument for %s parameter %s must be assignable", pr.dir, pr.name)
			}
			if v.lv.readonly {
				c.fail(arg.exprPos(), "argument for %s parameter %s: %s", pr.dir, pr.name, roReason(v.lv))
			}
			if !whole {
				c.fail(arg.exprPos(), "argument for %s parameter %s must be a whole location of type %s", pr.dir, pr.name, t)
			}
			c.mention(v.lv.base, t.size)
			c.defineIn(inner, pr.p, pr.name, &symbol{kind: sVar, t: t, base: v.lv.base})
			bound = append(bound, v.lv.base)
		default:
			if whole {
				c.mention(v.lv.base, t.size)
				c.defineIn(inner, pr.p, pr.name, &symbol{kind: sVar, t: t, base: v.lv.base, readonly: true})
				bound = append(bound, v.lv.base)
				continue
			}
			if !t.scalar() {
				c.fail(arg.exprPos(), "argument for %s: expected a location of type %s", pr.name, t)
			}
			slot := c.alloc(1)
			if st := c.assign(sc, &lval{base: slot, t: t}, arg, arg.exprPos()); st != nil {
				ins = append(ins, st)
			}
			c.defineIn(inner, pr.p, pr.name, &symbol{kind: sVar, t: t, base: slot, readonly: true})
			bound = append(bound, -1)
		}
	}
	if si.compiled != nil {
		for i := range bound {
			if bound[i] != si.bound[i] || bound[i] == -1 {
				c.fail(e.p, "%s is applied again with other arguments (this target compiles an instance once, for one set of argument locations)", si.name)
			}
		}
	} else {
		for _, d := range c.subStack {
			if d == si.d {
				c.fail(e.p, "%s instantiates itself (recursively)", name)
			}
		}
		if len(c.subStack) >= maxSubDepth {
			c.fail(e.p, "sub-parsers and sub-controls nested more than %d deep", maxSubDepth)
		}
		c.subStack = append(c.subStack, si.d)
		defer func() { c.subStack = c.subStack[:len(c.subStack)-1] }()
		si.bound = bound
		saveName, saveParser, saveLocals := c.ctlName, c.inParser, c.locals
		prefix := si.name
		if c.ctlName != "" {
			prefix = c.ctlName + "." + si.name
		}
		switch d := si.d.(type) {
		case *parserDecl:
			pc := c.compileParserAs(d, inner, prefix)
			si.compiled = func(s *pktState) flow {
				if !pc.run(s) {
					return flowReject
				}
				return flowNext
			}
		case *controlDecl:
			cc := c.compileControlAs(d, inner, prefix)
			body := cc.body
			si.compiled = func(s *pktState) flow {
				body(s)
				if s.exited {
					return flowReturn
				}
				return flowNext
			}
		}
		c.ctlName, c.inParser, c.locals = saveName, saveParser, saveLocals
	}
	return seq(append(ins, si.compiled))
}
