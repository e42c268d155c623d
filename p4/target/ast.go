package target

import "math/big"

// The abstract syntax of the P4_16 subset. The parser produces it; the
// checker (check.go) resolves names and types and compiles it to closures.

type annotation struct {
	name string
	args []token // raw tokens between the parentheses
	p    pos
	body string // the annotation's argument text as written (for P4Info)
}

// typeRef is a type as written.
type typeRef struct {
	p     pos
	kind  string // "bit", "int", "varbit", "bool", "name", "void", "error", "string"
	width expr   // for bit/int/varbit
	name  string // for "name"
	args  []*typeRef
}

type field struct {
	p    pos
	name string
	t    *typeRef
	anns []annotation
}

type param struct {
	p    pos
	dir  string // "", "in", "out", "inout"
	t    *typeRef
	name string
	anns []annotation
}

type decl interface{ declPos() pos }

type headerDecl struct {
	p      pos
	name   string
	fields []field
	anns   []annotation
	union  bool
}

type structDecl struct {
	p      pos
	name   string
	fields []field
	anns   []annotation
}

type typedefDecl struct {
	p    pos
	name string
	t    *typeRef
}

type constDecl struct {
	p    pos
	t    *typeRef
	name string
	val  expr
}

type enumDecl struct {
	p       pos
	name    string
	under   *typeRef // nil for plain enums
	members []string
	values  []expr // for serializable enums
}

type errorDecl struct {
	p       pos
	members []string
	kind    string // "error" or "match_kind"
}

type varDecl struct {
	p    pos
	t    *typeRef
	name string
	init expr
}

// instDecl is an instantiation: Type<args>(ctorArgs) name;
type instDecl struct {
	p       pos
	t       *typeRef
	args    []expr
	name    string
	anns    []annotation
	methods []*methodDecl // the initializer block's methods (RegisterAction's apply)
}

// methodDecl is a method implemented in an instantiation's initializer
// block: RegisterAction<T, I, U>(reg) ra = { void apply(...) { ... } };
type methodDecl struct {
	p      pos
	ret    *typeRef
	name   string
	params []param
	body   *blockStmt
}

type actionDecl struct {
	p      pos
	name   string
	params []param
	body   *blockStmt
	anns   []annotation
}

type tableProp struct {
	p       pos
	name    string
	isConst bool
	// key
	keys []keyElem
	// actions
	actions []actionRefAST
	// default_action / other expression-valued properties
	val expr
	// entries
	entries []entryAST
}

type keyElem struct {
	p     pos
	e     expr
	match string
	anns  []annotation
}

type actionRefAST struct {
	p    pos
	name string
	args []expr
	anns []annotation
}

type entryAST struct {
	p      pos
	keys   []expr // a single expr or one per key (tuple)
	action actionRefAST
}

type tableDecl struct {
	p     pos
	name  string
	props []tableProp
	anns  []annotation
}

type parserState struct {
	p     pos
	name  string
	stmts []stmt
	trans *transition // nil: reject (P4 requires a transition)
}

type transition struct {
	p      pos
	target string // direct transition
	sel    []expr // select expressions
	cases  []selectCase
}

type selectCase struct {
	p      pos
	keys   []expr
	target string
}

type parserDecl struct {
	p      pos
	name   string
	params []param
	locals []decl
	states []*parserState
	anns   []annotation
}

type controlDecl struct {
	p      pos
	name   string
	params []param
	locals []decl
	body   *blockStmt
	anns   []annotation
}

type externDecl struct {
	p    pos
	name string
}

func (d *headerDecl) declPos() pos  { return d.p }
func (d *structDecl) declPos() pos  { return d.p }
func (d *typedefDecl) declPos() pos { return d.p }
func (d *constDecl) declPos() pos   { return d.p }
func (d *enumDecl) declPos() pos    { return d.p }
func (d *errorDecl) declPos() pos   { return d.p }
func (d *varDecl) declPos() pos     { return d.p }
func (d *instDecl) declPos() pos    { return d.p }
func (d *actionDecl) declPos() pos  { return d.p }
func (d *tableDecl) declPos() pos   { return d.p }
func (d *parserDecl) declPos() pos  { return d.p }
func (d *controlDecl) declPos() pos { return d.p }
func (d *externDecl) declPos() pos  { return d.p }

// Statements.
type stmt interface{ stmtPos() pos }

type blockStmt struct {
	p     pos
	stmts []stmt
}
type assignStmt struct {
	p    pos
	l, r expr
}
type callStmt struct {
	p pos
	e expr
}
type ifStmt struct {
	p    pos
	cond expr
	then stmt
	els  stmt
}
type switchStmt struct {
	p     pos
	e     expr
	cases []switchCase
}
type switchCase struct {
	p     pos
	label string     // action name or "default"
	body  *blockStmt // nil: fall through to the next case
}
type returnStmt struct{ p pos }
type exitStmt struct{ p pos }
type emptyStmt struct{ p pos }
type declStmt struct {
	p pos
	d decl // *varDecl or *constDecl
}

func (s *blockStmt) stmtPos() pos  { return s.p }
func (s *assignStmt) stmtPos() pos { return s.p }
func (s *callStmt) stmtPos() pos   { return s.p }
func (s *ifStmt) stmtPos() pos     { return s.p }
func (s *switchStmt) stmtPos() pos { return s.p }
func (s *returnStmt) stmtPos() pos { return s.p }
func (s *exitStmt) stmtPos() pos   { return s.p }
func (s *emptyStmt) stmtPos() pos  { return s.p }
func (s *declStmt) stmtPos() pos   { return s.p }

// Expressions.
type expr interface{ exprPos() pos }

type identExpr struct {
	p    pos
	name string
	dot  bool // written with a leading '.' (top-level scope)
}
type intExpr struct {
	p      pos
	val    *big.Int
	width  int
	signed bool
	text   string
}
type boolExpr struct {
	p   pos
	val bool
}
type stringExpr struct {
	p   pos
	val string
}
type memberExpr struct {
	p    pos
	x    expr
	name string
}
type sliceExpr struct {
	p      pos
	x      expr
	hi, lo expr
}
type indexExpr struct {
	p   pos
	x   expr
	idx expr
}
type callExpr struct {
	p     pos
	fn    expr
	targs []*typeRef
	args  []expr
}
type binExpr struct {
	p    pos
	op   string
	l, r expr
}
type unExpr struct {
	p  pos
	op string
	x  expr
}
type castExpr struct {
	p pos
	t *typeRef
	x expr
}
type condExpr struct {
	p            pos
	c, then, els expr
}
type listExpr struct {
	p     pos
	elems []expr
}
type defaultExpr struct{ p pos } // "default" or "_"
type namedArg struct {           // name = value, in an argument list
	p    pos
	name string
	e    expr
}
type typeExpr struct { // a type used where an expression is expected (e.g. bit<8>.minSizeInBits)
	p pos
	t *typeRef
}

func (e *identExpr) exprPos() pos   { return e.p }
func (e *intExpr) exprPos() pos     { return e.p }
func (e *boolExpr) exprPos() pos    { return e.p }
func (e *stringExpr) exprPos() pos  { return e.p }
func (e *memberExpr) exprPos() pos  { return e.p }
func (e *sliceExpr) exprPos() pos   { return e.p }
func (e *indexExpr) exprPos() pos   { return e.p }
func (e *callExpr) exprPos() pos    { return e.p }
func (e *binExpr) exprPos() pos     { return e.p }
func (e *unExpr) exprPos() pos      { return e.p }
func (e *castExpr) exprPos() pos    { return e.p }
func (e *condExpr) exprPos() pos    { return e.p }
func (e *listExpr) exprPos() pos    { return e.p }
func (e *defaultExpr) exprPos() pos { return e.p }
func (e *namedArg) exprPos() pos    { return e.p }
func (e *typeExpr) exprPos() pos    { return e.p }

// program is a whole parsed source.
type program struct {
	decls []decl
	tna   bool // the program includes <tna.p4>
	// main is the package instantiation V1Switch(...) main.
	main *instDecl
}
