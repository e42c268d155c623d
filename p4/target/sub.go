package target

import "github.com/swordbox/swordbox/p4/target/frontend"

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
	d        frontend.Decl // *parserDecl or *controlDecl
	name     string
	p        frontend.Pos
	compiled stmtFn
	bound    []int    // the argument locations of the first apply (-1: copied)
	eff      *effNode // a sub-control's effects (placement check)
}

// declareSub declares an instance of a parser or control.
func (c *compiler) declareSub(sc *scope, d *frontend.InstDecl, blk frontend.Decl) {
	if len(d.Args) != 0 {
		c.fail(d.P, "%s takes no constructor arguments", d.T.Name)
	}
	if len(d.Methods) != 0 {
		c.fail(d.P, "%s instance with an initializer block", d.T.Name)
	}
	_, isParser := blk.(*frontend.ParserDecl)
	if isParser != c.inParser {
		if isParser {
			c.fail(d.P, "parser %s can only be instantiated in a parser", d.T.Name)
		}
		c.fail(d.P, "control %s can only be instantiated in a control", d.T.Name)
	}
	if c.subs == nil {
		c.subs = map[*frontend.InstDecl]*subInst{}
	}
	si := &subInst{d: blk, name: d.Name, p: d.P}
	c.subs[d] = si
	c.defineIn(sc, d.P, d.Name, &symbol{kind: sSub, sub: si})
}

// applySub compiles inst.apply(args).
func (c *compiler) applySub(sc *scope, si *subInst, e *frontend.CallExpr) stmtFn {
	var params []frontend.Param
	var name string
	switch d := si.d.(type) {
	case *frontend.ParserDecl:
		params, name = d.Params, d.Name
	case *frontend.ControlDecl:
		params, name = d.Params, d.Name
	}
	if c.inAction != nil {
		c.fail(e.P, "%s.apply cannot be called from an action", si.name)
	}
	if len(e.Args) != len(params) {
		c.fail(e.P, "%s.apply takes %d arguments, got %d", si.name, len(params), len(e.Args))
	}
	inner := newScope(c.global)
	var ins []stmtFn
	var bound []int
	for i, pr := range params {
		arg := e.Args[i]
		t := c.resolveType(c.global, pr.T)
		if t.kind == kVoid && (t.name == "packet_in" || t.name == "packet_out") {
			v := c.expr(sc, arg)
			want := sPacketIn
			if t.name == "packet_out" {
				want = sPacketOut
			}
			if v.sym == nil || v.sym.kind != want || v.method != "" {
				c.fail(arg.ExprPos(), "argument %d of %s.apply must be the %s", i+1, si.name, t.name)
			}
			c.defineIn(inner, pr.P, pr.Name, &symbol{kind: want})
			bound = append(bound, -2)
			continue
		}
		v := c.expr(sc, arg)
		whole := v.lv != nil && !v.lv.sliced && v.t == t && (v.isSlot || !t.scalar())
		switch pr.Dir {
		case "out", "inout":
			if v.lv == nil {
				c.fail(arg.ExprPos(), "argument for %s parameter %s must be assignable", pr.Dir, pr.Name)
			}
			if v.lv.readonly {
				c.fail(arg.ExprPos(), "argument for %s parameter %s: %s", pr.Dir, pr.Name, roReason(v.lv))
			}
			if !whole {
				c.fail(arg.ExprPos(), "argument for %s parameter %s must be a whole location of type %s", pr.Dir, pr.Name, t)
			}
			c.mention(v.lv.base, t.size)
			c.defineIn(inner, pr.P, pr.Name, &symbol{kind: sVar, t: t, base: v.lv.base})
			bound = append(bound, v.lv.base)
		default:
			if whole {
				c.mention(v.lv.base, t.size)
				c.defineIn(inner, pr.P, pr.Name, &symbol{kind: sVar, t: t, base: v.lv.base, readonly: true})
				bound = append(bound, v.lv.base)
				continue
			}
			if !t.scalar() {
				c.fail(arg.ExprPos(), "argument for %s: expected a location of type %s", pr.Name, t)
			}
			slot := c.alloc(1)
			if st := c.assign(sc, &lval{base: slot, t: t}, arg, arg.ExprPos()); st != nil {
				ins = append(ins, st)
			}
			c.defineIn(inner, pr.P, pr.Name, &symbol{kind: sVar, t: t, base: slot, readonly: true})
			bound = append(bound, -1)
		}
	}
	if si.compiled != nil {
		for i := range bound {
			if bound[i] != si.bound[i] || bound[i] == -1 {
				c.fail(e.P, "%s is applied again with other arguments (this target compiles an instance once, for one set of argument locations)", si.name)
			}
		}
	} else {
		for _, d := range c.subStack {
			if d == si.d {
				c.fail(e.P, "%s instantiates itself (recursively)", name)
			}
		}
		if len(c.subStack) >= maxSubDepth {
			c.fail(e.P, "sub-parsers and sub-controls nested more than %d deep", maxSubDepth)
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
		case *frontend.ParserDecl:
			pc := c.compileParserAs(d, inner, prefix)
			si.compiled = func(s *pktState) flow {
				if !pc.run(s) {
					return flowReject
				}
				return flowNext
			}
		case *frontend.ControlDecl:
			cc := c.compileControlAs(d, inner, prefix)
			si.eff = cc.eff
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
	if si.eff != nil {
		c.effAdd(&effNode{kind: effCall, kids: []*effNode{si.eff}})
	}
	return seq(append(ins, si.compiled))
}
