package frontend

import "math/big"

// The abstract syntax of the P4_16 subset. The parser produces it; the
// target's compiler resolves names and types and compiles it to closures.

type Annotation struct {
	Name string
	Args []Token // raw tokens between the parentheses
	P    Pos
	Body string // the annotation's argument text as written (for P4Info)
}

// typeRef is a type as written.
type TypeRef struct {
	P     Pos
	Kind  string // "bit", "int", "varbit", "bool", "name", "void", "error", "string"
	Width Expr   // for bit/int/varbit
	Name  string // for "name"
	Args  []*TypeRef
}

type Field struct {
	P    Pos
	Name string
	T    *TypeRef
	Anns []Annotation
}

type Param struct {
	P    Pos
	Dir  string // "", "in", "out", "inout"
	T    *TypeRef
	Name string
	anns []Annotation
}

type Decl interface{ DeclPos() Pos }

type HeaderDecl struct {
	P      Pos
	Name   string
	Fields []Field
	Anns   []Annotation
	Union  bool
}

type StructDecl struct {
	P      Pos
	Name   string
	Fields []Field
	Anns   []Annotation
}

type TypedefDecl struct {
	P    Pos
	Name string
	T    *TypeRef
}

type ConstDecl struct {
	P    Pos
	T    *TypeRef
	Name string
	Val  Expr
}

type EnumDecl struct {
	P       Pos
	Name    string
	Under   *TypeRef // nil for plain enums
	Members []string
	Values  []Expr // for serializable enums
}

type ErrorDecl struct {
	P       Pos
	Members []string
	Kind    string // "error" or "match_kind"
}

type VarDecl struct {
	P    Pos
	T    *TypeRef
	Name string
	Init Expr
}

// instDecl is an instantiation: Type<args>(ctorArgs) name;
type InstDecl struct {
	P       Pos
	T       *TypeRef
	Args    []Expr
	Name    string
	Anns    []Annotation
	Methods []*MethodDecl // the initializer block's methods (RegisterAction's apply)
}

// methodDecl is a method implemented in an instantiation's initializer
// block: RegisterAction<T, I, U>(reg) ra = { void apply(...) { ... } };
type MethodDecl struct {
	P      Pos
	Ret    *TypeRef
	Name   string
	Params []Param
	Body   *BlockStmt
}

type ActionDecl struct {
	P      Pos
	Name   string
	Params []Param
	Body   *BlockStmt
	Anns   []Annotation
}

type TableProp struct {
	P       Pos
	Name    string
	IsConst bool
	// key
	Keys []KeyElem
	// actions
	Actions []ActionRefAST
	// default_action / other expression-valued properties
	Val Expr
	// entries
	Entries []EntryAST
}

type KeyElem struct {
	P     Pos
	E     Expr
	Match string
	Anns  []Annotation
}

type ActionRefAST struct {
	P    Pos
	Name string
	Args []Expr
	Anns []Annotation
}

type EntryAST struct {
	P      Pos
	Keys   []Expr // a single expr or one per key (tuple)
	Action ActionRefAST
}

type TableDecl struct {
	P     Pos
	Name  string
	Props []TableProp
	Anns  []Annotation
}

type ParserState struct {
	P     Pos
	Name  string
	Stmts []Stmt
	Trans *Transition // nil: reject (P4 requires a transition)
}

type Transition struct {
	P      Pos
	Target string // direct transition
	Sel    []Expr // select expressions
	Cases  []SelectCase
}

type SelectCase struct {
	P      Pos
	Keys   []Expr
	Target string
}

type ParserDecl struct {
	P      Pos
	Name   string
	Params []Param
	Locals []Decl
	States []*ParserState
	anns   []Annotation
}

type ControlDecl struct {
	P      Pos
	Name   string
	Params []Param
	Locals []Decl
	Body   *BlockStmt
	Anns   []Annotation
}

type ExternDecl struct {
	p    Pos
	name string
}

func (d *HeaderDecl) DeclPos() Pos  { return d.P }
func (d *StructDecl) DeclPos() Pos  { return d.P }
func (d *TypedefDecl) DeclPos() Pos { return d.P }
func (d *ConstDecl) DeclPos() Pos   { return d.P }
func (d *EnumDecl) DeclPos() Pos    { return d.P }
func (d *ErrorDecl) DeclPos() Pos   { return d.P }
func (d *VarDecl) DeclPos() Pos     { return d.P }
func (d *InstDecl) DeclPos() Pos    { return d.P }
func (d *ActionDecl) DeclPos() Pos  { return d.P }
func (d *TableDecl) DeclPos() Pos   { return d.P }
func (d *ParserDecl) DeclPos() Pos  { return d.P }
func (d *ControlDecl) DeclPos() Pos { return d.P }
func (d *ExternDecl) DeclPos() Pos  { return d.p }

// Statements.
type Stmt interface{ StmtPos() Pos }

type BlockStmt struct {
	p     Pos
	Stmts []Stmt
}
type AssignStmt struct {
	P    Pos
	L, R Expr
}
type CallStmt struct {
	P Pos
	E Expr
}
type IfStmt struct {
	p    Pos
	Cond Expr
	Then Stmt
	Els  Stmt
}
type SwitchStmt struct {
	P     Pos
	E     Expr
	Cases []SwitchCase
}
type SwitchCase struct {
	P     Pos
	Label string     // action name or "default"
	Body  *BlockStmt // nil: fall through to the next case
}
type ReturnStmt struct{ P Pos }
type ExitStmt struct{ P Pos }
type EmptyStmt struct{ p Pos }
type DeclStmt struct {
	p Pos
	D Decl // *varDecl or *constDecl
}

func (s *BlockStmt) StmtPos() Pos  { return s.p }
func (s *AssignStmt) StmtPos() Pos { return s.P }
func (s *CallStmt) StmtPos() Pos   { return s.P }
func (s *IfStmt) StmtPos() Pos     { return s.p }
func (s *SwitchStmt) StmtPos() Pos { return s.P }
func (s *ReturnStmt) StmtPos() Pos { return s.P }
func (s *ExitStmt) StmtPos() Pos   { return s.P }
func (s *EmptyStmt) StmtPos() Pos  { return s.p }
func (s *DeclStmt) StmtPos() Pos   { return s.p }

// Expressions.
type Expr interface{ ExprPos() Pos }

type IdentExpr struct {
	P    Pos
	Name string
	Dot  bool // written with a leading '.' (top-level scope)
}
type IntExpr struct {
	P      Pos
	Val    *big.Int
	Width  int
	Signed bool
	Text   string
}
type BoolExpr struct {
	p   Pos
	Val bool
}
type StringExpr struct {
	p   Pos
	val string
}
type MemberExpr struct {
	P    Pos
	X    Expr
	Name string
}
type SliceExpr struct {
	P      Pos
	X      Expr
	Hi, Lo Expr
}
type IndexExpr struct {
	P   Pos
	x   Expr
	idx Expr
}
type CallExpr struct {
	P     Pos
	Fn    Expr
	Targs []*TypeRef
	Args  []Expr
}
type BinExpr struct {
	P    Pos
	Op   string
	L, R Expr
}
type UnExpr struct {
	P  Pos
	Op string
	X  Expr
}
type CastExpr struct {
	P Pos
	T *TypeRef
	X Expr
}
type CondExpr struct {
	P            Pos
	C, Then, Els Expr
}
type ListExpr struct {
	P     Pos
	Elems []Expr
}
type DefaultExpr struct{ P Pos } // "default" or "_"
type NamedArg struct {           // name = value, in an argument list
	P    Pos
	Name string
	E    Expr
}
type TypeExpr struct { // a type used where an expression is expected (e.g. bit<8>.minSizeInBits)
	P Pos
	t *TypeRef
}

func (e *IdentExpr) ExprPos() Pos   { return e.P }
func (e *IntExpr) ExprPos() Pos     { return e.P }
func (e *BoolExpr) ExprPos() Pos    { return e.p }
func (e *StringExpr) ExprPos() Pos  { return e.p }
func (e *MemberExpr) ExprPos() Pos  { return e.P }
func (e *SliceExpr) ExprPos() Pos   { return e.P }
func (e *IndexExpr) ExprPos() Pos   { return e.P }
func (e *CallExpr) ExprPos() Pos    { return e.P }
func (e *BinExpr) ExprPos() Pos     { return e.P }
func (e *UnExpr) ExprPos() Pos      { return e.P }
func (e *CastExpr) ExprPos() Pos    { return e.P }
func (e *CondExpr) ExprPos() Pos    { return e.P }
func (e *ListExpr) ExprPos() Pos    { return e.P }
func (e *DefaultExpr) ExprPos() Pos { return e.P }
func (e *NamedArg) ExprPos() Pos    { return e.P }
func (e *TypeExpr) ExprPos() Pos    { return e.P }

// Program is a whole parsed source.
type Program struct {
	Decls []Decl
	Tna   bool // the program includes <tna.p4>
	// main is the package instantiation V1Switch(...) main.
	main *InstDecl
}
