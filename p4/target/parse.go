package target

import (
	"fmt"
	"strings"
)

// parser is a recursive-descent parser for the P4_16 subset. Operator
// precedence follows p4c's grammar (p4parser.ypp), where ==/!= and the
// relational operators bind more loosely than the bitwise ones.
type parser struct {
	file  string
	toks  []token
	i     int
	types map[string]bool // type names declared so far (for casts)
}

// maxDepth bounds nesting so that hostile input cannot exhaust the stack.
const maxDepth = 200

func parseProgram(file string, src []byte, opts *CompileOptions) (prog *program, err error) {
	ctx := &lexCtx{opts: opts}
	toks, err := lexWith(file, src, ctx)
	if err != nil {
		return nil, err
	}
	p := &parser{file: file, toks: toks, types: map[string]bool{}}
	for _, n := range builtinTypeNames {
		p.types[n] = true
	}
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(*srcError); ok {
				prog, err = nil, e
				return
			}
			panic(r)
		}
	}()
	prog = &program{tna: ctx.tna}
	for p.peek().kind != tEOF {
		d := p.topDecl()
		if d == nil {
			continue
		}
		prog.decls = append(prog.decls, d)
	}
	return prog, nil
}

// builtinTypeNames are the types of core.p4 and v1model.p4.
var builtinTypeNames = []string{"packet_in", "packet_out", "standard_metadata_t", "CounterType", "MeterType",
	"HashAlgorithm", "register", "counter", "direct_counter", "meter", "direct_meter", "CloneType", "V1Switch",
	// tna.p4's externs and packages (its types are declared by the prelude).
	"Register", "RegisterAction", "RegisterParam", "DirectRegister", "DirectRegisterAction", "Hash", "CRCPolynomial",
	"Counter", "DirectCounter", "Meter", "DirectMeter", "Random", "Checksum", "Lpf", "DirectLpf", "Pipeline", "Switch"}

func (p *parser) fail(at pos, format string, args ...any) {
	panic(&srcError{file: p.file, p: at, msg: fmt.Sprintf(format, args...)})
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) peekN(n int) token {
	if p.i+n < len(p.toks) {
		return p.toks[p.i+n]
	}
	return p.toks[len(p.toks)-1]
}
func (p *parser) nextTok() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) is(text string) bool {
	t := p.peek()
	return (t.kind == tPunct || t.kind == tIdent) && t.text == text
}

func (p *parser) accept(text string) bool {
	if p.is(text) {
		p.i++
		return true
	}
	return false
}

func (p *parser) expect(text string) token {
	t := p.peek()
	if !p.is(text) {
		p.fail(t.p, "expected %q, found %s", text, describe(t))
	}
	return p.nextTok()
}

func describe(t token) string {
	switch t.kind {
	case tEOF:
		return "end of file"
	case tString:
		return fmt.Sprintf("string %q", t.text)
	}
	return fmt.Sprintf("%q", t.text)
}

var keywords = map[string]bool{
	"action": true, "apply": true, "bit": true, "bool": true, "const": true, "control": true, "default": true,
	"else": true, "enum": true, "error": true, "exit": true, "extern": true, "false": true, "header": true,
	"header_union": true, "if": true, "in": true, "inout": true, "int": true, "key": true, "match_kind": true,
	"out": true, "parser": true, "package": true, "return": true, "select": true, "state": true, "struct": true,
	"switch": true, "table": true, "transition": true, "true": true, "tuple": true, "typedef": true, "type": true,
	"varbit": true, "void": true, "entries": true, "actions": true, "string": true, "value_set": true, "list": true,
}

func (p *parser) ident() token {
	t := p.peek()
	if t.kind != tIdent {
		p.fail(t.p, "expected a name, found %s", describe(t))
	}
	// a few keywords may be used as names (P4's "nonTypeName")
	switch t.text {
	case "apply", "key", "actions", "state", "entries", "type", "priority":
	default:
		if keywords[t.text] {
			p.fail(t.p, "expected a name, found keyword %q", t.text)
		}
	}
	return p.nextTok()
}

func (p *parser) annotations() []annotation {
	var out []annotation
	for p.is("@") {
		at := p.nextTok()
		name := p.nextTok()
		if name.kind != tIdent {
			p.fail(name.p, "expected annotation name")
		}
		a := annotation{name: name.text, p: at.p}
		if p.is("(") && p.peek().adj {
			p.nextTok()
			depth := 1
			var sb strings.Builder
			for depth > 0 {
				t := p.nextTok()
				if t.kind == tEOF {
					p.fail(at.p, "unterminated annotation")
				}
				if t.kind == tPunct && t.text == "(" {
					depth++
				}
				if t.kind == tPunct && t.text == ")" {
					depth--
					if depth == 0 {
						break
					}
				}
				a.args = append(a.args, t)
				if sb.Len() > 0 && !t.adj {
					sb.WriteByte(' ')
				}
				if t.kind == tString {
					sb.WriteString(`"` + t.text + `"`)
				} else {
					sb.WriteString(t.text)
				}
			}
			a.body = sb.String()
		} else if p.is("[") {
			p.fail(at.p, "structured annotations are not supported")
		}
		out = append(out, a)
	}
	return out
}

// topDecl parses one top-level declaration (nil for a stray ;).
func (p *parser) topDecl() decl {
	anns := p.annotations()
	t := p.peek()
	if t.kind == tPunct && t.text == ";" {
		p.nextTok()
		return nil
	}
	if t.kind != tIdent {
		p.fail(t.p, "expected a declaration, found %s", describe(t))
	}
	switch t.text {
	case "header", "header_union":
		p.nextTok()
		name := p.ident()
		p.types[name.text] = true
		d := &headerDecl{p: t.p, name: name.text, anns: anns, union: t.text == "header_union"}
		d.fields = p.fieldList()
		return d
	case "struct":
		p.nextTok()
		name := p.ident()
		p.types[name.text] = true
		return &structDecl{p: t.p, name: name.text, fields: p.fieldList(), anns: anns}
	case "typedef", "type":
		for _, a := range anns {
			if a.name == "p4runtime_translation" {
				p.fail(a.p, "@p4runtime_translation is not supported")
			}
		}
		p.nextTok()
		tr := p.typeRef()
		name := p.ident()
		p.expect(";")
		p.types[name.text] = true
		return &typedefDecl{p: t.p, name: name.text, t: tr}
	case "const":
		return p.constDecl()
	case "enum":
		return p.enumDecl()
	case "error", "match_kind":
		p.nextTok()
		d := &errorDecl{p: t.p, kind: t.text}
		p.expect("{")
		for !p.is("}") {
			d.members = append(d.members, p.ident().text)
			if !p.accept(",") {
				break
			}
		}
		p.expect("}")
		return d
	case "parser":
		return p.parserDecl(anns)
	case "control":
		return p.controlDecl(anns)
	case "action":
		return p.actionDecl(anns)
	case "extern", "package":
		p.fail(t.p, "%s declarations are not supported (the v1model externs are built in)", t.text)
	}
	// instantiation or function declaration
	tr := p.typeRef()
	if p.is("(") {
		args := p.args()
		name := p.ident()
		p.expect(";")
		return &instDecl{p: t.p, t: tr, args: args, name: name.text, anns: anns}
	}
	p.fail(t.p, "unsupported top-level declaration starting with %s", describe(t))
	return nil
}

func (p *parser) fieldList() []field {
	p.expect("{")
	var out []field
	for !p.is("}") {
		anns := p.annotations()
		at := p.peek().p
		tr := p.typeRef()
		name := p.ident()
		p.expect(";")
		out = append(out, field{p: at, name: name.text, t: tr, anns: anns})
	}
	p.expect("}")
	return out
}

func (p *parser) constDecl() *constDecl {
	t := p.expect("const")
	tr := p.typeRef()
	name := p.ident()
	p.expect("=")
	v := p.expr()
	p.expect(";")
	return &constDecl{p: t.p, t: tr, name: name.text, val: v}
}

func (p *parser) enumDecl() *enumDecl {
	t := p.expect("enum")
	d := &enumDecl{p: t.p}
	if p.is("bit") || p.is("int") {
		d.under = p.typeRef()
	}
	d.name = p.ident().text
	p.types[d.name] = true
	p.expect("{")
	for !p.is("}") {
		d.members = append(d.members, p.ident().text)
		if d.under != nil {
			p.expect("=")
			d.values = append(d.values, p.expr())
		}
		if !p.accept(",") {
			break
		}
	}
	p.expect("}")
	return d
}

// typeRef parses a type as written: bit<W>, int<W>, varbit<W>, bool,
// error, void, string, _ (a don't-care type argument) or a name with
// optional type arguments.
func (p *parser) typeRef() *typeRef {
	t := p.peek()
	if t.kind != tIdent {
		p.fail(t.p, "expected a type, found %s", describe(t))
	}
	var tr *typeRef
	switch t.text {
	case "bit", "int", "varbit":
		p.nextTok()
		tr = &typeRef{p: t.p, kind: t.text}
		if p.accept("<") {
			w := p.peek()
			switch {
			case w.kind == tInt:
				p.nextTok()
				tr.width = &intExpr{p: w.p, val: w.val, width: w.width, text: w.text}
			case w.kind == tIdent:
				p.nextTok()
				tr.width = &identExpr{p: w.p, name: w.text}
			case w.kind == tPunct && w.text == "(":
				p.nextTok()
				tr.width = p.expr()
				p.expect(")")
			default:
				p.fail(w.p, "expected a width")
			}
			p.expect(">")
		} else if t.text == "bit" {
			tr.width = &intExpr{p: t.p, val: bigOne(), text: "1"}
		} else {
			p.fail(t.p, "%s needs a width", t.text)
		}
	case "bool", "error", "void", "string":
		p.nextTok()
		tr = &typeRef{p: t.p, kind: t.text}
	case "tuple", "list":
		p.fail(t.p, "%s types are not supported", t.text)
	case "_":
		p.nextTok()
		tr = &typeRef{p: t.p, kind: "dontcare"}
	default:
		if keywords[t.text] {
			p.fail(t.p, "expected a type, found keyword %q", t.text)
		}
		p.nextTok()
		tr = &typeRef{p: t.p, kind: "name", name: t.text}
		if p.is("<") {
			p.nextTok()
			for {
				tr.args = append(tr.args, p.typeRef())
				if !p.accept(",") {
					break
				}
			}
			p.expect(">")
		}
	}
	if p.is("[") {
		p.fail(p.peek().p, "header stacks are not supported")
	}
	return tr
}

func (p *parser) params() []param {
	p.expect("(")
	var out []param
	for !p.is(")") {
		anns := p.annotations()
		at := p.peek().p
		dir := ""
		if p.is("in") || p.is("out") || p.is("inout") {
			dir = p.nextTok().text
		}
		tr := p.typeRef()
		name := p.ident()
		if p.is("=") {
			p.fail(name.p, "default parameter values are not supported")
		}
		out = append(out, param{p: at, dir: dir, t: tr, name: name.text, anns: anns})
		if !p.accept(",") {
			break
		}
	}
	p.expect(")")
	return out
}

func (p *parser) args() []expr {
	p.expect("(")
	var out []expr
	for !p.is(")") {
		if p.peek().kind == tIdent && p.peekN(1).kind == tPunct && p.peekN(1).text == "=" {
			n := p.nextTok()
			p.nextTok()
			out = append(out, &namedArg{p: n.p, name: n.text, e: p.expr()})
			if !p.accept(",") {
				break
			}
			continue
		}
		if p.is("_") {
			p.fail(p.peek().p, "don't-care arguments are not supported")
		}
		out = append(out, p.expr())
		if !p.accept(",") {
			break
		}
	}
	p.expect(")")
	return out
}

// declHeader parses the head of a parser or control declaration, `KIND
// name(params) {`, refusing what the target does not run: type parameters,
// constructor parameters and type-only declarations.
func (p *parser) declHeader(kind string) (keyword, name token, params []param) {
	keyword = p.expect(kind)
	name = p.ident()
	if p.is("<") {
		p.fail(p.peek().p, "generic %ss are not supported", kind)
	}
	params = p.params()
	if p.is("(") {
		p.fail(p.peek().p, "%s constructor parameters are not supported", kind)
	}
	if p.accept(";") {
		p.fail(keyword.p, "%s type declarations are not supported", kind)
	}
	p.expect("{")
	return keyword, name, params
}

func (p *parser) parserDecl(anns []annotation) *parserDecl {
	t, name, params := p.declHeader("parser")
	d := &parserDecl{p: t.p, name: name.text, anns: anns, params: params}
	for !p.is("}") {
		p.annotations() // annotations on parser states are accepted and ignored
		if p.is("state") {
			st := p.nextTok()
			sname := p.ident()
			ps := &parserState{p: st.p, name: sname.text}
			p.expect("{")
			for !p.is("}") && !p.is("transition") {
				ps.stmts = append(ps.stmts, p.stmt(0))
			}
			if p.is("transition") {
				ps.trans = p.transition()
			}
			p.expect("}")
			d.states = append(d.states, ps)
			continue
		}
		d.locals = append(d.locals, p.localDecl())
	}
	p.expect("}")
	return d
}

func (p *parser) transition() *transition {
	t := p.expect("transition")
	tr := &transition{p: t.p}
	if p.is("select") {
		p.nextTok()
		p.expect("(")
		for !p.is(")") {
			tr.sel = append(tr.sel, p.expr())
			if !p.accept(",") {
				break
			}
		}
		p.expect(")")
		p.expect("{")
		for !p.is("}") {
			at := p.peek().p
			keys := p.keyset()
			p.expect(":")
			target := p.ident()
			p.expect(";")
			tr.cases = append(tr.cases, selectCase{p: at, keys: keys, target: target.text})
		}
		p.expect("}")
		p.accept(";")
		return tr
	}
	tr.target = p.ident().text
	p.expect(";")
	return tr
}

// keyset parses a select case label or a table entry key: a single keyset
// element or a parenthesised tuple of them.
func (p *parser) keyset() []expr {
	if p.is("(") {
		save := p.i
		p.nextTok()
		var elems []expr
		for {
			elems = append(elems, p.keysetElem())
			if !p.accept(",") {
				break
			}
		}
		if p.is(")") && (len(elems) > 1 || p.peekN(1).kind == tPunct && p.peekN(1).text == ":") {
			p.nextTok()
			return elems
		}
		// a parenthesised expression that continues (e.g. (a) + b)
		p.i = save
	}
	return []expr{p.keysetElem()}
}

func (p *parser) keysetElem() expr {
	t := p.peek()
	if p.is("default") || p.is("_") {
		p.nextTok()
		return &defaultExpr{p: t.p}
	}
	e := p.expr()
	if p.is("&&&") {
		op := p.nextTok()
		m := p.expr()
		return &binExpr{p: op.p, op: "&&&", l: e, r: m}
	}
	if p.is("..") {
		p.fail(p.peek().p, "range keysets are not supported")
	}
	return e
}

func (p *parser) controlDecl(anns []annotation) *controlDecl {
	t, name, params := p.declHeader("control")
	d := &controlDecl{p: t.p, name: name.text, anns: anns, params: params}
	for !p.is("apply") {
		if p.is("}") {
			p.fail(p.peek().p, "control %s has no apply block", name.text)
		}
		d.locals = append(d.locals, p.localDecl())
	}
	p.expect("apply")
	d.body = p.block(0)
	p.expect("}")
	return d
}

// localDecl parses a declaration inside a parser or control body.
func (p *parser) localDecl() decl {
	anns := p.annotations()
	t := p.peek()
	switch {
	case p.is("action"):
		return p.actionDecl(anns)
	case p.is("table"):
		return p.tableDecl(anns)
	case p.is("const"):
		return p.constDecl()
	case p.is("value_set"):
		p.fail(t.p, "value_set is not supported")
	case p.is(";"):
		p.nextTok()
		return &varDecl{p: t.p} // filtered by the checker (empty)
	}
	tr := p.typeRef()
	if p.is("(") {
		args := p.args()
		name := p.ident()
		d := &instDecl{p: t.p, t: tr, args: args, name: name.text, anns: anns}
		if p.is("=") || p.is("{") {
			p.accept("=")
			d.methods = p.initializerBlock()
		}
		p.expect(";")
		return d
	}
	name := p.ident()
	d := &varDecl{p: t.p, t: tr, name: name.text}
	if p.accept("=") {
		d.init = p.expr()
	}
	p.expect(";")
	return d
}

// initializerBlock parses the methods of an instantiation's initializer,
// { RET name(params) { ... } ... }.
func (p *parser) initializerBlock() []*methodDecl {
	p.expect("{")
	var ms []*methodDecl
	for !p.is("}") {
		p.annotations()
		at := p.peek().p
		ret := p.typeRef()
		name := p.ident()
		m := &methodDecl{p: at, ret: ret, name: name.text, params: p.params()}
		m.body = p.block(0)
		ms = append(ms, m)
	}
	p.expect("}")
	return ms
}

func (p *parser) actionDecl(anns []annotation) *actionDecl {
	t := p.expect("action")
	name := p.ident()
	d := &actionDecl{p: t.p, name: name.text, anns: anns}
	d.params = p.params()
	d.body = p.block(0)
	return d
}

// tableDecl parses a table: its key, actions, entries and the other
// properties (as expressions).
func (p *parser) tableDecl(anns []annotation) *tableDecl {
	t := p.expect("table")
	name := p.ident()
	d := &tableDecl{p: t.p, name: name.text, anns: anns}
	p.expect("{")
	for !p.is("}") {
		p.annotations()
		at := p.peek()
		prop := tableProp{p: at.p}
		if p.accept("const") {
			prop.isConst = true
		}
		pn := p.ident()
		prop.name = pn.text
		p.expect("=")
		switch pn.text {
		case "key":
			p.expect("{")
			for !p.is("}") {
				kp := p.peek().p
				e := p.expr()
				p.expect(":")
				mk := p.ident()
				kanns := p.annotations()
				p.expect(";")
				prop.keys = append(prop.keys, keyElem{p: kp, e: e, match: mk.text, anns: kanns})
			}
			p.expect("}")
			p.accept(";")
		case "actions":
			p.expect("{")
			for !p.is("}") {
				aanns := p.annotations()
				ap := p.peek().p
				an := p.ident()
				ar := actionRefAST{p: ap, name: an.text, anns: aanns}
				if p.is("(") {
					ar.args = p.args()
				}
				p.expect(";")
				prop.actions = append(prop.actions, ar)
			}
			p.expect("}")
			p.accept(";")
		case "entries":
			p.expect("{")
			for !p.is("}") {
				ep := p.peek().p
				if p.is("priority") {
					p.fail(ep, "entry priorities are not supported")
				}
				keys := p.keyset()
				p.expect(":")
				aanns := p.annotations()
				ap := p.peek().p
				an := p.ident()
				ar := actionRefAST{p: ap, name: an.text, anns: aanns}
				if p.is("(") {
					ar.args = p.args()
				}
				p.expect(";")
				prop.entries = append(prop.entries, entryAST{p: ep, keys: keys, action: ar})
			}
			p.expect("}")
			p.accept(";")
		default:
			prop.val = p.expr()
			p.expect(";")
		}
		d.props = append(d.props, prop)
	}
	p.expect("}")
	return d
}

func (p *parser) block(depth int) *blockStmt {
	if depth > maxDepth {
		p.fail(p.peek().p, "nesting too deep")
	}
	t := p.expect("{")
	b := &blockStmt{p: t.p}
	for !p.is("}") {
		if p.peek().kind == tEOF {
			p.fail(t.p, "unterminated block")
		}
		b.stmts = append(b.stmts, p.stmt(depth+1))
	}
	p.expect("}")
	return b
}

func (p *parser) isTypeStart() bool {
	t := p.peek()
	if t.kind != tIdent {
		return false
	}
	switch t.text {
	case "bit", "int", "varbit", "bool":
		return true
	}
	n := p.peekN(1)
	if n.kind == tIdent && !keywords[t.text] {
		return true // T name
	}
	if p.types[t.text] && n.kind == tPunct && n.text == "<" {
		return true
	}
	return false
}

// stmt parses a statement; depth bounds nesting against hostile input.
func (p *parser) stmt(depth int) stmt {
	if depth > maxDepth {
		p.fail(p.peek().p, "nesting too deep")
	}
	p.annotations()
	t := p.peek()
	switch {
	case p.is("{"):
		return p.block(depth + 1)
	case p.is(";"):
		p.nextTok()
		return &emptyStmt{p: t.p}
	case p.is("if"):
		p.nextTok()
		p.expect("(")
		c := p.expr()
		p.expect(")")
		s := &ifStmt{p: t.p, cond: c, then: p.stmt(depth + 1)}
		if p.accept("else") {
			s.els = p.stmt(depth + 1)
		}
		return s
	case p.is("return"):
		p.nextTok()
		if !p.is(";") {
			p.fail(t.p, "return with a value is not supported")
		}
		p.expect(";")
		return &returnStmt{p: t.p}
	case p.is("exit"):
		p.nextTok()
		p.expect(";")
		return &exitStmt{p: t.p}
	case p.is("switch"):
		p.nextTok()
		p.expect("(")
		e := p.expr()
		p.expect(")")
		s := &switchStmt{p: t.p, e: e}
		p.expect("{")
		for !p.is("}") {
			cp := p.peek()
			label := ""
			if p.accept("default") {
				label = "default"
			} else {
				label = p.ident().text
			}
			p.expect(":")
			c := switchCase{p: cp.p, label: label}
			if p.is("{") {
				c.body = p.block(depth + 1)
			}
			s.cases = append(s.cases, c)
		}
		p.expect("}")
		return s
	case p.is("const"):
		return &declStmt{p: t.p, d: p.constDecl()}
	case p.is("transition"):
		p.fail(t.p, "transition must be the last statement of a state")
	}
	if p.isTypeStart() {
		tr := p.typeRef()
		name := p.ident()
		d := &varDecl{p: t.p, t: tr, name: name.text}
		if p.accept("=") {
			d.init = p.expr()
		}
		p.expect(";")
		return &declStmt{p: t.p, d: d}
	}
	e := p.expr()
	if p.is("=") {
		eq := p.nextTok()
		r := p.expr()
		p.expect(";")
		return &assignStmt{p: eq.p, l: e, r: r}
	}
	p.expect(";")
	if _, ok := e.(*callExpr); !ok {
		p.fail(t.p, "expression statement must be a call")
	}
	return &callStmt{p: t.p, e: e}
}

// Expressions, by p4c precedence (lowest first).
func (p *parser) expr() expr { return p.exprDepth(0) }

func (p *parser) exprDepth(depth int) expr {
	if depth > maxDepth {
		p.fail(p.peek().p, "expression nesting too deep")
	}
	c := p.binary(0, depth)
	if p.is("?") {
		q := p.nextTok()
		a := p.exprDepth(depth + 1)
		p.expect(":")
		b := p.exprDepth(depth + 1)
		return &condExpr{p: q.p, c: c, then: a, els: b}
	}
	return c
}

var precLevels = [][]string{
	{"||"},
	{"&&"},
	{"==", "!="},
	{"<", ">", "<=", ">="},
	{"|"},
	{"^"},
	{"&"},
	{"<<", ">>"},
	{"++", "+", "-", "|+|", "|-|"},
	{"*", "/", "%"},
}

// binOp reports the binary operator at the cursor for level, consuming it.
// ">>" is two adjacent '>' tokens.
func (p *parser) binOp(level int) (string, pos, bool) {
	t := p.peek()
	if t.kind != tPunct {
		return "", t.p, false
	}
	for _, op := range precLevels[level] {
		if op == ">>" {
			if t.text == ">" && p.peekN(1).kind == tPunct && p.peekN(1).text == ">" && p.peekN(1).adj {
				p.i += 2
				return ">>", t.p, true
			}
			continue
		}
		if t.text == op {
			if op == ">" && p.peekN(1).kind == tPunct && p.peekN(1).text == ">" && p.peekN(1).adj {
				continue // it is a shift, handled at its level
			}
			p.i++
			return op, t.p, true
		}
	}
	return "", t.p, false
}

func (p *parser) binary(level, depth int) expr {
	if level == len(precLevels) {
		return p.unary(depth)
	}
	l := p.binary(level+1, depth)
	for {
		op, at, ok := p.binOp(level)
		if !ok {
			return l
		}
		r := p.binary(level+1, depth)
		l = &binExpr{p: at, op: op, l: l, r: r}
	}
}

func (p *parser) unary(depth int) expr {
	if depth > maxDepth {
		p.fail(p.peek().p, "expression nesting too deep")
	}
	t := p.peek()
	if t.kind == tPunct {
		switch t.text {
		case "!", "~", "-", "+":
			p.nextTok()
			x := p.unary(depth + 1)
			if t.text == "+" {
				return x
			}
			return &unExpr{p: t.p, op: t.text, x: x}
		case "(":
			// cast?
			n := p.peekN(1)
			if n.kind == tIdent && (n.text == "bit" || n.text == "int" || n.text == "bool" || n.text == "varbit" ||
				(p.types[n.text] && p.peekN(2).kind == tPunct && (p.peekN(2).text == ")" || p.peekN(2).text == "<"))) {
				p.nextTok()
				tr := p.typeRef()
				p.expect(")")
				x := p.unary(depth + 1)
				return &castExpr{p: t.p, t: tr, x: x}
			}
		}
	}
	return p.postfix(depth)
}

// isGenericFunc reports whether e names a function called with type
// arguments (digest<T>(...)).
func isGenericFunc(e expr) bool {
	id, ok := e.(*identExpr)
	return ok && (id.name == "digest" || id.name == "port_metadata_unpack")
}

// postfix parses member access, calls (also generic ones), slices and
// indexes after a primary expression.
func (p *parser) postfix(depth int) expr {
	e := p.primary(depth)
	for {
		t := p.peek()
		switch {
		case p.is("."):
			p.nextTok()
			name := p.nextTok()
			if name.kind != tIdent {
				p.fail(name.p, "expected a member name")
			}
			e = &memberExpr{p: name.p, x: e, name: name.text}
			if name.text == "lookahead" && p.is("<") {
				p.nextTok()
				var targs []*typeRef
				for {
					targs = append(targs, p.typeRef())
					if !p.accept(",") {
						break
					}
				}
				p.expect(">")
				args := p.args()
				e = &callExpr{p: name.p, fn: e, targs: targs, args: args}
			}
		case p.is("<") && isGenericFunc(e):
			// digest<T>(...) (v1model) and port_metadata_unpack<T>(pkt)
			// (tna): the generic free functions.
			p.nextTok()
			tr := p.typeRef()
			p.expect(">")
			e = &callExpr{p: t.p, fn: e, targs: []*typeRef{tr}, args: p.args()}
		case p.is("("):
			e = &callExpr{p: t.p, fn: e, args: p.args()}
		case p.is("["):
			p.nextTok()
			hi := p.exprDepth(depth + 1)
			if p.accept(":") {
				lo := p.exprDepth(depth + 1)
				p.expect("]")
				e = &sliceExpr{p: t.p, x: e, hi: hi, lo: lo}
			} else {
				p.expect("]")
				e = &indexExpr{p: t.p, x: e, idx: hi}
			}
		default:
			return e
		}
	}
}

// primary parses literals, names, parenthesised expressions and lists.
func (p *parser) primary(depth int) expr {
	t := p.peek()
	switch t.kind {
	case tInt:
		p.nextTok()
		return &intExpr{p: t.p, val: t.val, width: t.width, signed: t.signed, text: t.text}
	case tString:
		p.nextTok()
		return &stringExpr{p: t.p, val: t.text}
	case tIdent:
		switch t.text {
		case "true", "false":
			p.nextTok()
			return &boolExpr{p: t.p, val: t.text == "true"}
		case "error":
			p.nextTok()
			return &identExpr{p: t.p, name: "error"}
		case "bit", "int", "bool", "varbit":
			return &typeExpr{p: t.p, t: p.typeRef()}
		}
		if keywords[t.text] && t.text != "apply" && t.text != "key" && t.text != "type" {
			p.fail(t.p, "unexpected keyword %q in expression", t.text)
		}
		p.nextTok()
		return &identExpr{p: t.p, name: t.text}
	case tPunct:
		switch t.text {
		case "(":
			p.nextTok()
			e := p.exprDepth(depth + 1)
			p.expect(")")
			return e
		case "{":
			p.nextTok()
			l := &listExpr{p: t.p}
			for !p.is("}") {
				l.elems = append(l.elems, p.exprDepth(depth+1))
				if !p.accept(",") {
					break
				}
			}
			p.expect("}")
			return l
		case ".":
			p.nextTok()
			n := p.ident()
			return &identExpr{p: t.p, name: n.text, dot: true}
		}
	}
	p.fail(t.p, "unexpected %s in expression", describe(t))
	return nil
}
