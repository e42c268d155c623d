package frontend

import (
	"fmt"
	"math/big"
	"strings"
)

// parser is a recursive-descent parser for the P4_16 subset. Operator
// precedence follows p4c's grammar (p4parser.ypp), where ==/!= and the
// relational operators bind more loosely than the bitwise ones.
type parser struct {
	file  string
	toks  []Token
	i     int
	types map[string]bool // type names declared so far (for casts)
}

// maxDepth bounds nesting so that hostile input cannot exhaust the stack.
const maxDepth = 200

func ParseProgram(file string, src []byte, opts *Options) (prog *Program, err error) {
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
			if e, ok := r.(*SrcError); ok {
				prog, err = nil, e
				return
			}
			panic(r)
		}
	}()
	prog = &Program{Tna: ctx.tna}
	for p.peek().Kind != TEOF {
		d := p.topDecl()
		if d == nil {
			continue
		}
		prog.Decls = append(prog.Decls, d)
	}
	return prog, nil
}

// builtinTypeNames are the types of core.p4 and v1model.p4.
var builtinTypeNames = []string{"packet_in", "packet_out", "standard_metadata_t", "CounterType", "MeterType",
	"HashAlgorithm", "register", "counter", "direct_counter", "meter", "direct_meter", "CloneType", "V1Switch",
	// tna.p4's externs and packages (its types are declared by the prelude).
	"Register", "RegisterAction", "RegisterParam", "DirectRegister", "DirectRegisterAction", "Hash", "CRCPolynomial",
	"Counter", "DirectCounter", "Meter", "DirectMeter", "Random", "Checksum", "Lpf", "DirectLpf", "Pipeline", "Switch"}

func (p *parser) fail(at Pos, format string, args ...any) {
	panic(&SrcError{File: p.file, P: at, Msg: fmt.Sprintf(format, args...)})
}

func (p *parser) peek() Token { return p.toks[p.i] }
func (p *parser) peekN(n int) Token {
	if p.i+n < len(p.toks) {
		return p.toks[p.i+n]
	}
	return p.toks[len(p.toks)-1]
}
func (p *parser) nextTok() Token {
	t := p.toks[p.i]
	if t.Kind != TEOF {
		p.i++
	}
	return t
}

func (p *parser) is(text string) bool {
	t := p.peek()
	return (t.Kind == TPunct || t.Kind == TIdent) && t.Text == text
}

func (p *parser) accept(text string) bool {
	if p.is(text) {
		p.i++
		return true
	}
	return false
}

func (p *parser) expect(text string) Token {
	t := p.peek()
	if !p.is(text) {
		p.fail(t.p, "expected %q, found %s", text, describe(t))
	}
	return p.nextTok()
}

func describe(t Token) string {
	switch t.Kind {
	case TEOF:
		return "end of file"
	case TString:
		return fmt.Sprintf("string %q", t.Text)
	}
	return fmt.Sprintf("%q", t.Text)
}

var keywords = map[string]bool{
	"action": true, "apply": true, "bit": true, "bool": true, "const": true, "control": true, "default": true,
	"else": true, "enum": true, "error": true, "exit": true, "extern": true, "false": true, "header": true,
	"header_union": true, "if": true, "in": true, "inout": true, "int": true, "key": true, "match_kind": true,
	"out": true, "parser": true, "package": true, "return": true, "select": true, "state": true, "struct": true,
	"switch": true, "table": true, "transition": true, "true": true, "tuple": true, "typedef": true, "type": true,
	"varbit": true, "void": true, "entries": true, "actions": true, "string": true, "value_set": true, "list": true,
}

func (p *parser) ident() Token {
	t := p.peek()
	if t.Kind != TIdent {
		p.fail(t.p, "expected a name, found %s", describe(t))
	}
	// a few keywords may be used as names (P4's "nonTypeName")
	switch t.Text {
	case "apply", "key", "actions", "state", "entries", "type", "priority":
	default:
		if keywords[t.Text] {
			p.fail(t.p, "expected a name, found keyword %q", t.Text)
		}
	}
	return p.nextTok()
}

func (p *parser) annotations() []Annotation {
	var out []Annotation
	for p.is("@") {
		at := p.nextTok()
		name := p.nextTok()
		if name.Kind != TIdent {
			p.fail(name.p, "expected annotation name")
		}
		a := Annotation{Name: name.Text, P: at.p}
		if p.is("(") && p.peek().adj {
			p.nextTok()
			depth := 1
			var sb strings.Builder
			for depth > 0 {
				t := p.nextTok()
				if t.Kind == TEOF {
					p.fail(at.p, "unterminated annotation")
				}
				if t.Kind == TPunct && t.Text == "(" {
					depth++
				}
				if t.Kind == TPunct && t.Text == ")" {
					depth--
					if depth == 0 {
						break
					}
				}
				a.Args = append(a.Args, t)
				if sb.Len() > 0 && !t.adj {
					sb.WriteByte(' ')
				}
				if t.Kind == TString {
					sb.WriteString(`"` + t.Text + `"`)
				} else {
					sb.WriteString(t.Text)
				}
			}
			a.Body = sb.String()
		} else if p.is("[") {
			p.fail(at.p, "structured annotations are not supported")
		}
		out = append(out, a)
	}
	return out
}

// topDecl parses one top-level declaration (nil for a stray ;).
func (p *parser) topDecl() Decl {
	anns := p.annotations()
	t := p.peek()
	if t.Kind == TPunct && t.Text == ";" {
		p.nextTok()
		return nil
	}
	if t.Kind != TIdent {
		p.fail(t.p, "expected a declaration, found %s", describe(t))
	}
	switch t.Text {
	case "header", "header_union":
		p.nextTok()
		name := p.ident()
		p.types[name.Text] = true
		d := &HeaderDecl{P: t.p, Name: name.Text, Anns: anns, Union: t.Text == "header_union"}
		d.Fields = p.fieldList()
		return d
	case "struct":
		p.nextTok()
		name := p.ident()
		p.types[name.Text] = true
		return &StructDecl{P: t.p, Name: name.Text, Fields: p.fieldList(), Anns: anns}
	case "typedef", "type":
		for _, a := range anns {
			if a.Name == "p4runtime_translation" {
				p.fail(a.P, "@p4runtime_translation is not supported")
			}
		}
		p.nextTok()
		tr := p.typeRef()
		name := p.ident()
		p.expect(";")
		p.types[name.Text] = true
		return &TypedefDecl{P: t.p, Name: name.Text, T: tr}
	case "const":
		return p.constDecl()
	case "enum":
		return p.enumDecl()
	case "error", "match_kind":
		p.nextTok()
		d := &ErrorDecl{P: t.p, Kind: t.Text}
		p.expect("{")
		for !p.is("}") {
			d.Members = append(d.Members, p.ident().Text)
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
		p.fail(t.p, "%s declarations are not supported (the v1model externs are built in)", t.Text)
	}
	// instantiation or function declaration
	tr := p.typeRef()
	if p.is("(") {
		args := p.args()
		name := p.ident()
		p.expect(";")
		return &InstDecl{P: t.p, T: tr, Args: args, Name: name.Text, Anns: anns}
	}
	p.fail(t.p, "unsupported top-level declaration starting with %s", describe(t))
	return nil
}

func (p *parser) fieldList() []Field {
	p.expect("{")
	var out []Field
	for !p.is("}") {
		anns := p.annotations()
		at := p.peek().p
		tr := p.typeRef()
		name := p.ident()
		p.expect(";")
		out = append(out, Field{P: at, Name: name.Text, T: tr, Anns: anns})
	}
	p.expect("}")
	return out
}

func (p *parser) constDecl() *ConstDecl {
	t := p.expect("const")
	tr := p.typeRef()
	name := p.ident()
	p.expect("=")
	v := p.expr()
	p.expect(";")
	return &ConstDecl{P: t.p, T: tr, Name: name.Text, Val: v}
}

func (p *parser) enumDecl() *EnumDecl {
	t := p.expect("enum")
	d := &EnumDecl{P: t.p}
	if p.is("bit") || p.is("int") {
		d.Under = p.typeRef()
	}
	d.Name = p.ident().Text
	p.types[d.Name] = true
	p.expect("{")
	for !p.is("}") {
		d.Members = append(d.Members, p.ident().Text)
		if d.Under != nil {
			p.expect("=")
			d.Values = append(d.Values, p.expr())
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
func (p *parser) typeRef() *TypeRef {
	t := p.peek()
	if t.Kind != TIdent {
		p.fail(t.p, "expected a type, found %s", describe(t))
	}
	var tr *TypeRef
	switch t.Text {
	case "bit", "int", "varbit":
		p.nextTok()
		tr = &TypeRef{P: t.p, Kind: t.Text}
		if p.accept("<") {
			w := p.peek()
			switch {
			case w.Kind == TInt:
				p.nextTok()
				tr.Width = &IntExpr{P: w.p, Val: w.Val, Width: w.width, Text: w.Text}
			case w.Kind == TIdent:
				p.nextTok()
				tr.Width = &IdentExpr{P: w.p, Name: w.Text}
			case w.Kind == TPunct && w.Text == "(":
				p.nextTok()
				tr.Width = p.expr()
				p.expect(")")
			default:
				p.fail(w.p, "expected a width")
			}
			p.expect(">")
		} else if t.Text == "bit" {
			tr.Width = &IntExpr{P: t.p, Val: big.NewInt(1), Text: "1"}
		} else {
			p.fail(t.p, "%s needs a width", t.Text)
		}
	case "bool", "error", "void", "string":
		p.nextTok()
		tr = &TypeRef{P: t.p, Kind: t.Text}
	case "tuple", "list":
		p.fail(t.p, "%s types are not supported", t.Text)
	case "_":
		p.nextTok()
		tr = &TypeRef{P: t.p, Kind: "dontcare"}
	default:
		if keywords[t.Text] {
			p.fail(t.p, "expected a type, found keyword %q", t.Text)
		}
		p.nextTok()
		tr = &TypeRef{P: t.p, Kind: "name", Name: t.Text}
		if p.is("<") {
			p.nextTok()
			for {
				tr.Args = append(tr.Args, p.typeRef())
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

func (p *parser) params() []Param {
	p.expect("(")
	var out []Param
	for !p.is(")") {
		anns := p.annotations()
		at := p.peek().p
		dir := ""
		if p.is("in") || p.is("out") || p.is("inout") {
			dir = p.nextTok().Text
		}
		tr := p.typeRef()
		name := p.ident()
		if p.is("=") {
			p.fail(name.p, "default parameter values are not supported")
		}
		out = append(out, Param{P: at, Dir: dir, T: tr, Name: name.Text, anns: anns})
		if !p.accept(",") {
			break
		}
	}
	p.expect(")")
	return out
}

func (p *parser) args() []Expr {
	p.expect("(")
	var out []Expr
	for !p.is(")") {
		if p.peek().Kind == TIdent && p.peekN(1).Kind == TPunct && p.peekN(1).Text == "=" {
			n := p.nextTok()
			p.nextTok()
			out = append(out, &NamedArg{P: n.p, Name: n.Text, E: p.expr()})
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
func (p *parser) declHeader(kind string) (keyword, name Token, params []Param) {
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

func (p *parser) parserDecl(anns []Annotation) *ParserDecl {
	t, name, params := p.declHeader("parser")
	d := &ParserDecl{P: t.p, Name: name.Text, anns: anns, Params: params}
	for !p.is("}") {
		p.annotations() // annotations on parser states are accepted and ignored
		if p.is("state") {
			st := p.nextTok()
			sname := p.ident()
			ps := &ParserState{P: st.p, Name: sname.Text}
			p.expect("{")
			for !p.is("}") && !p.is("transition") {
				ps.Stmts = append(ps.Stmts, p.stmt(0))
			}
			if p.is("transition") {
				ps.Trans = p.transition()
			}
			p.expect("}")
			d.States = append(d.States, ps)
			continue
		}
		d.Locals = append(d.Locals, p.localDecl())
	}
	p.expect("}")
	return d
}

func (p *parser) transition() *Transition {
	t := p.expect("transition")
	tr := &Transition{P: t.p}
	if p.is("select") {
		p.nextTok()
		p.expect("(")
		for !p.is(")") {
			tr.Sel = append(tr.Sel, p.expr())
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
			tr.Cases = append(tr.Cases, SelectCase{P: at, Keys: keys, Target: target.Text})
		}
		p.expect("}")
		p.accept(";")
		return tr
	}
	tr.Target = p.ident().Text
	p.expect(";")
	return tr
}

// keyset parses a select case label or a table entry key: a single keyset
// element or a parenthesised tuple of them.
func (p *parser) keyset() []Expr {
	if p.is("(") {
		save := p.i
		p.nextTok()
		var elems []Expr
		for {
			elems = append(elems, p.keysetElem())
			if !p.accept(",") {
				break
			}
		}
		if p.is(")") && (len(elems) > 1 || p.peekN(1).Kind == TPunct && p.peekN(1).Text == ":") {
			p.nextTok()
			return elems
		}
		// a parenthesised expression that continues (e.g. (a) + b)
		p.i = save
	}
	return []Expr{p.keysetElem()}
}

func (p *parser) keysetElem() Expr {
	t := p.peek()
	if p.is("default") || p.is("_") {
		p.nextTok()
		return &DefaultExpr{P: t.p}
	}
	e := p.expr()
	if p.is("&&&") {
		op := p.nextTok()
		m := p.expr()
		return &BinExpr{P: op.p, Op: "&&&", L: e, R: m}
	}
	if p.is("..") {
		p.fail(p.peek().p, "range keysets are not supported")
	}
	return e
}

func (p *parser) controlDecl(anns []Annotation) *ControlDecl {
	t, name, params := p.declHeader("control")
	d := &ControlDecl{P: t.p, Name: name.Text, Anns: anns, Params: params}
	for !p.is("apply") {
		if p.is("}") {
			p.fail(p.peek().p, "control %s has no apply block", name.Text)
		}
		d.Locals = append(d.Locals, p.localDecl())
	}
	p.expect("apply")
	d.Body = p.block(0)
	p.expect("}")
	return d
}

// localDecl parses a declaration inside a parser or control body.
func (p *parser) localDecl() Decl {
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
		return &VarDecl{P: t.p} // filtered by the checker (empty)
	}
	tr := p.typeRef()
	if p.is("(") {
		args := p.args()
		name := p.ident()
		d := &InstDecl{P: t.p, T: tr, Args: args, Name: name.Text, Anns: anns}
		if p.is("=") || p.is("{") {
			p.accept("=")
			d.Methods = p.initializerBlock()
		}
		p.expect(";")
		return d
	}
	name := p.ident()
	d := &VarDecl{P: t.p, T: tr, Name: name.Text}
	if p.accept("=") {
		d.Init = p.expr()
	}
	p.expect(";")
	return d
}

// initializerBlock parses the methods of an instantiation's initializer,
// { RET name(params) { ... } ... }.
func (p *parser) initializerBlock() []*MethodDecl {
	p.expect("{")
	var ms []*MethodDecl
	for !p.is("}") {
		p.annotations()
		at := p.peek().p
		ret := p.typeRef()
		name := p.ident()
		m := &MethodDecl{P: at, Ret: ret, Name: name.Text, Params: p.params()}
		m.Body = p.block(0)
		ms = append(ms, m)
	}
	p.expect("}")
	return ms
}

func (p *parser) actionDecl(anns []Annotation) *ActionDecl {
	t := p.expect("action")
	name := p.ident()
	d := &ActionDecl{P: t.p, Name: name.Text, Anns: anns}
	d.Params = p.params()
	d.Body = p.block(0)
	return d
}

// tableDecl parses a table: its key, actions, entries and the other
// properties (as expressions).
func (p *parser) tableDecl(anns []Annotation) *TableDecl {
	t := p.expect("table")
	name := p.ident()
	d := &TableDecl{P: t.p, Name: name.Text, Anns: anns}
	p.expect("{")
	for !p.is("}") {
		p.annotations()
		at := p.peek()
		prop := TableProp{P: at.p}
		if p.accept("const") {
			prop.IsConst = true
		}
		pn := p.ident()
		prop.Name = pn.Text
		p.expect("=")
		switch pn.Text {
		case "key":
			p.expect("{")
			for !p.is("}") {
				kp := p.peek().p
				e := p.expr()
				p.expect(":")
				mk := p.ident()
				kanns := p.annotations()
				p.expect(";")
				prop.Keys = append(prop.Keys, KeyElem{P: kp, E: e, Match: mk.Text, Anns: kanns})
			}
			p.expect("}")
			p.accept(";")
		case "actions":
			p.expect("{")
			for !p.is("}") {
				aanns := p.annotations()
				ap := p.peek().p
				an := p.ident()
				ar := ActionRefAST{P: ap, Name: an.Text, Anns: aanns}
				if p.is("(") {
					ar.Args = p.args()
				}
				p.expect(";")
				prop.Actions = append(prop.Actions, ar)
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
				ar := ActionRefAST{P: ap, Name: an.Text, Anns: aanns}
				if p.is("(") {
					ar.Args = p.args()
				}
				p.expect(";")
				prop.Entries = append(prop.Entries, EntryAST{P: ep, Keys: keys, Action: ar})
			}
			p.expect("}")
			p.accept(";")
		default:
			prop.Val = p.expr()
			p.expect(";")
		}
		d.Props = append(d.Props, prop)
	}
	p.expect("}")
	return d
}

func (p *parser) block(depth int) *BlockStmt {
	if depth > maxDepth {
		p.fail(p.peek().p, "nesting too deep")
	}
	t := p.expect("{")
	b := &BlockStmt{p: t.p}
	for !p.is("}") {
		if p.peek().Kind == TEOF {
			p.fail(t.p, "unterminated block")
		}
		b.Stmts = append(b.Stmts, p.stmt(depth+1))
	}
	p.expect("}")
	return b
}

func (p *parser) isTypeStart() bool {
	t := p.peek()
	if t.Kind != TIdent {
		return false
	}
	switch t.Text {
	case "bit", "int", "varbit", "bool":
		return true
	}
	n := p.peekN(1)
	if n.Kind == TIdent && !keywords[t.Text] {
		return true // T name
	}
	if p.types[t.Text] && n.Kind == TPunct && n.Text == "<" {
		return true
	}
	return false
}

// stmt parses a statement; depth bounds nesting against hostile input.
func (p *parser) stmt(depth int) Stmt {
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
		return &EmptyStmt{p: t.p}
	case p.is("if"):
		p.nextTok()
		p.expect("(")
		c := p.expr()
		p.expect(")")
		s := &IfStmt{p: t.p, Cond: c, Then: p.stmt(depth + 1)}
		if p.accept("else") {
			s.Els = p.stmt(depth + 1)
		}
		return s
	case p.is("return"):
		p.nextTok()
		if !p.is(";") {
			p.fail(t.p, "return with a value is not supported")
		}
		p.expect(";")
		return &ReturnStmt{P: t.p}
	case p.is("exit"):
		p.nextTok()
		p.expect(";")
		return &ExitStmt{P: t.p}
	case p.is("switch"):
		p.nextTok()
		p.expect("(")
		e := p.expr()
		p.expect(")")
		s := &SwitchStmt{P: t.p, E: e}
		p.expect("{")
		for !p.is("}") {
			cp := p.peek()
			label := ""
			if p.accept("default") {
				label = "default"
			} else {
				label = p.ident().Text
			}
			p.expect(":")
			c := SwitchCase{P: cp.p, Label: label}
			if p.is("{") {
				c.Body = p.block(depth + 1)
			}
			s.Cases = append(s.Cases, c)
		}
		p.expect("}")
		return s
	case p.is("const"):
		return &DeclStmt{p: t.p, D: p.constDecl()}
	case p.is("transition"):
		p.fail(t.p, "transition must be the last statement of a state")
	}
	if p.isTypeStart() {
		tr := p.typeRef()
		name := p.ident()
		d := &VarDecl{P: t.p, T: tr, Name: name.Text}
		if p.accept("=") {
			d.Init = p.expr()
		}
		p.expect(";")
		return &DeclStmt{p: t.p, D: d}
	}
	e := p.expr()
	if p.is("=") {
		eq := p.nextTok()
		r := p.expr()
		p.expect(";")
		return &AssignStmt{P: eq.p, L: e, R: r}
	}
	p.expect(";")
	if _, ok := e.(*CallExpr); !ok {
		p.fail(t.p, "expression statement must be a call")
	}
	return &CallStmt{P: t.p, E: e}
}

// Expressions, by p4c precedence (lowest first).
func (p *parser) expr() Expr { return p.exprDepth(0) }

func (p *parser) exprDepth(depth int) Expr {
	if depth > maxDepth {
		p.fail(p.peek().p, "expression nesting too deep")
	}
	c := p.binary(0, depth)
	if p.is("?") {
		q := p.nextTok()
		a := p.exprDepth(depth + 1)
		p.expect(":")
		b := p.exprDepth(depth + 1)
		return &CondExpr{P: q.p, C: c, Then: a, Els: b}
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
func (p *parser) binOp(level int) (string, Pos, bool) {
	t := p.peek()
	if t.Kind != TPunct {
		return "", t.p, false
	}
	for _, op := range precLevels[level] {
		if op == ">>" {
			if t.Text == ">" && p.peekN(1).Kind == TPunct && p.peekN(1).Text == ">" && p.peekN(1).adj {
				p.i += 2
				return ">>", t.p, true
			}
			continue
		}
		if t.Text == op {
			if op == ">" && p.peekN(1).Kind == TPunct && p.peekN(1).Text == ">" && p.peekN(1).adj {
				continue // it is a shift, handled at its level
			}
			p.i++
			return op, t.p, true
		}
	}
	return "", t.p, false
}

func (p *parser) binary(level, depth int) Expr {
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
		l = &BinExpr{P: at, Op: op, L: l, R: r}
	}
}

func (p *parser) unary(depth int) Expr {
	if depth > maxDepth {
		p.fail(p.peek().p, "expression nesting too deep")
	}
	t := p.peek()
	if t.Kind == TPunct {
		switch t.Text {
		case "!", "~", "-", "+":
			p.nextTok()
			x := p.unary(depth + 1)
			if t.Text == "+" {
				return x
			}
			return &UnExpr{P: t.p, Op: t.Text, X: x}
		case "(":
			// cast?
			n := p.peekN(1)
			if n.Kind == TIdent && (n.Text == "bit" || n.Text == "int" || n.Text == "bool" || n.Text == "varbit" ||
				(p.types[n.Text] && p.peekN(2).Kind == TPunct && (p.peekN(2).Text == ")" || p.peekN(2).Text == "<"))) {
				p.nextTok()
				tr := p.typeRef()
				p.expect(")")
				x := p.unary(depth + 1)
				return &CastExpr{P: t.p, T: tr, X: x}
			}
		}
	}
	return p.postfix(depth)
}

// isGenericFunc reports whether e names a function called with type
// arguments (digest<T>(...)).
func isGenericFunc(e Expr) bool {
	id, ok := e.(*IdentExpr)
	return ok && (id.Name == "digest" || id.Name == "port_metadata_unpack")
}

// postfix parses member access, calls (also generic ones), slices and
// indexes after a primary expression.
func (p *parser) postfix(depth int) Expr {
	e := p.primary(depth)
	for {
		t := p.peek()
		switch {
		case p.is("."):
			p.nextTok()
			name := p.nextTok()
			if name.Kind != TIdent {
				p.fail(name.p, "expected a member name")
			}
			e = &MemberExpr{P: name.p, X: e, Name: name.Text}
			if name.Text == "lookahead" && p.is("<") {
				p.nextTok()
				var targs []*TypeRef
				for {
					targs = append(targs, p.typeRef())
					if !p.accept(",") {
						break
					}
				}
				p.expect(">")
				args := p.args()
				e = &CallExpr{P: name.p, Fn: e, Targs: targs, Args: args}
			}
		case p.is("<") && isGenericFunc(e):
			// digest<T>(...) (v1model) and port_metadata_unpack<T>(pkt)
			// (tna): the generic free functions.
			p.nextTok()
			tr := p.typeRef()
			p.expect(">")
			e = &CallExpr{P: t.p, Fn: e, Targs: []*TypeRef{tr}, Args: p.args()}
		case p.is("("):
			e = &CallExpr{P: t.p, Fn: e, Args: p.args()}
		case p.is("["):
			p.nextTok()
			hi := p.exprDepth(depth + 1)
			if p.accept(":") {
				lo := p.exprDepth(depth + 1)
				p.expect("]")
				e = &SliceExpr{P: t.p, X: e, Hi: hi, Lo: lo}
			} else {
				p.expect("]")
				e = &IndexExpr{P: t.p, x: e, idx: hi}
			}
		default:
			return e
		}
	}
}

// primary parses literals, names, parenthesised expressions and lists.
func (p *parser) primary(depth int) Expr {
	t := p.peek()
	switch t.Kind {
	case TInt:
		p.nextTok()
		return &IntExpr{P: t.p, Val: t.Val, Width: t.width, Signed: t.signed, Text: t.Text}
	case TString:
		p.nextTok()
		return &StringExpr{p: t.p, val: t.Text}
	case TIdent:
		switch t.Text {
		case "true", "false":
			p.nextTok()
			return &BoolExpr{p: t.p, Val: t.Text == "true"}
		case "error":
			p.nextTok()
			return &IdentExpr{P: t.p, Name: "error"}
		case "bit", "int", "bool", "varbit":
			return &TypeExpr{P: t.p, t: p.typeRef()}
		}
		if keywords[t.Text] && t.Text != "apply" && t.Text != "key" && t.Text != "type" {
			p.fail(t.p, "unexpected keyword %q in expression", t.Text)
		}
		p.nextTok()
		return &IdentExpr{P: t.p, Name: t.Text}
	case TPunct:
		switch t.Text {
		case "(":
			p.nextTok()
			e := p.exprDepth(depth + 1)
			p.expect(")")
			return e
		case "{":
			p.nextTok()
			l := &ListExpr{P: t.p}
			for !p.is("}") {
				l.Elems = append(l.Elems, p.exprDepth(depth+1))
				if !p.accept(",") {
					break
				}
			}
			p.expect("}")
			return l
		case ".":
			p.nextTok()
			n := p.ident()
			return &IdentExpr{P: t.p, Name: n.Text, Dot: true}
		}
	}
	p.fail(t.p, "unexpected %s in expression", describe(t))
	return nil
}
