package frontend

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"strings"
)

// TokKind classifies a token.
type TokKind int

const (
	TEOF TokKind = iota
	TIdent
	TInt
	TString
	TPunct // operators and punctuation; text holds the spelling
)

// pos is a source position (1-based line and column) in file (empty: the
// file being compiled).
type Pos struct {
	Line, Col int
	file      string
}

// FileOr is the file the position is in: the included file it came from,
// else def (the program's file).
func (p Pos) FileOr(def string) string {
	if p.file != "" {
		return p.file
	}
	return def
}

// Token is one lexical token. For tInt, val holds the magnitude, width the
// explicit width (0 when the literal has none) and signed whether it was
// written with an 's' width prefix.
type Token struct {
	Kind   TokKind
	Text   string
	p      Pos
	Val    *big.Int
	width  int
	signed bool
	// adj reports that the token follows the previous one without white
	// space (used to tell ">>" from the end of two nested type arguments).
	adj bool
}

// srcError is a front-end error carrying file, line and column.
type SrcError struct {
	File string
	P    Pos
	Msg  string
}

func (e *SrcError) Error() string {
	file := e.File
	if e.P.file != "" {
		file = e.P.file
	}
	return fmt.Sprintf("%s:%d:%d: %s", file, e.P.Line, e.P.Col, e.Msg)
}

// puncts lists multi-character operators, longest first.
var puncts = []string{
	"&&&", "|+|", "|-|",
	"==", "!=", "<=", ">=", "&&", "||", "++", "<<", "..",
	"{", "}", "(", ")", "[", "]", "<", ">", ";", ":", ",", ".", "=", "+", "-", "*", "/", "%",
	"&", "|", "^", "~", "!", "?", "@",
}

// Limits that keep hostile input from exhausting memory.
const (
	maxMacroTokens = 4096
	maxTokens      = 1 << 20
)

// lexer turns source text into tokens. It handles comments and the
// preprocessor lines this target understands: #include of the built-in
// <core.p4>, <v1model.p4> and <tna.p4>, #include "file" of user files,
// object-like #define and #undef, the conditionals #if, #ifdef, #ifndef,
// #elif, #else and #endif, and #error. Every other directive is refused.
type lexer struct {
	file   string
	src    string
	i      int
	line   int
	col    int
	macros map[string][]Token
	ctx    *lexCtx
	conds  []condFrame
}

// lexCtx is what the lexers of one program (its file and the files it
// includes) share.
type lexCtx struct {
	opts     *Options
	depth    int  // include nesting
	tna      bool // <tna.p4> was included
	v1model  bool // <v1model.p4> was included
	srcBytes int  // bytes of source read so far (includes counted)
}

// condFrame is one open #if/#ifdef/#ifndef.
type condFrame struct {
	p       Pos
	active  bool // the current branch is being compiled
	taken   bool // some branch of this conditional was taken
	outer   bool // the enclosing text is being compiled
	sawElse bool
}

// Include limits against hostile input.
const (
	maxIncludeDepth = 32
	maxSourceBytes  = 16 << 20
)

func lex(file string, src []byte) ([]Token, error) {
	return lexWith(file, src, &lexCtx{opts: &Options{}})
}

func lexWith(file string, src []byte, ctx *lexCtx) ([]Token, error) {
	lx := &lexer{file: file, src: string(src), line: 1, col: 1, macros: map[string][]Token{}, ctx: ctx}
	for k, v := range ctx.opts.Defines {
		body, err := lx.macroBody(k, v, Pos{Line: 1, Col: 1, file: "<defines>"})
		if err != nil {
			return nil, err
		}
		lx.macros[k] = body
	}
	out, err := lx.run(nil)
	if err != nil {
		return nil, err
	}
	return append(out, Token{Kind: TEOF, p: lx.pos()}), nil
}

func (lx *lexer) pos() Pos { return Pos{Line: lx.line, Col: lx.col, file: lx.file} }

// active reports whether text at the cursor is compiled (not in a false
// conditional branch).
func (lx *lexer) active() bool {
	return len(lx.conds) == 0 || lx.conds[len(lx.conds)-1].active
}

// run appends the tokens of lx's source (without EOF) to out.
func (lx *lexer) run(out []Token) ([]Token, error) {
	lx.ctx.srcBytes += len(lx.src)
	if lx.ctx.srcBytes > maxSourceBytes {
		return nil, lx.errf(lx.pos(), "program too long (more than %d bytes with its includes)", maxSourceBytes)
	}
	prevEnd := -1
	for {
		ws := lx.skipSpace()
		if err := ws; err != nil {
			return nil, err
		}
		if lx.i < len(lx.src) && lx.src[lx.i] == '#' && lx.atLineStart() {
			var err error
			out, err = lx.directive(out)
			if err != nil {
				return nil, err
			}
			prevEnd = -1
			continue
		}
		if !lx.active() {
			// A false branch: skip to the end of the line.
			if lx.i >= len(lx.src) {
				break
			}
			for lx.i < len(lx.src) && lx.src[lx.i] != '\n' {
				lx.advance(1)
			}
			continue
		}
		start := lx.i
		t, err := lx.next()
		if err != nil {
			return nil, err
		}
		if t.Kind == TEOF {
			break
		}
		t.adj = prevEnd == start
		prevEnd = lx.i
		if t.Kind == TIdent {
			if body, ok := lx.macros[t.Text]; ok {
				for _, b := range body {
					b.p = t.p
					out = append(out, b)
				}
				if len(out) > maxTokens {
					return nil, lx.errf(t.p, "program too long (more than %d tokens)", maxTokens)
				}
				continue
			}
		}
		out = append(out, t)
		if len(out) > maxTokens {
			return nil, lx.errf(t.p, "program too long (more than %d tokens)", maxTokens)
		}
	}
	if len(lx.conds) > 0 {
		return nil, lx.errf(lx.conds[len(lx.conds)-1].p, "#if without #endif")
	}
	return out, nil
}

func (lx *lexer) errf(p Pos, format string, args ...any) error {
	return &SrcError{File: lx.file, P: p, Msg: fmt.Sprintf(format, args...)}
}

func (lx *lexer) atLineStart() bool {
	for j := lx.i - 1; j >= 0; j-- {
		switch lx.src[j] {
		case ' ', '\t', '\r':
			continue
		case '\n':
			return true
		default:
			return false
		}
	}
	return true
}

func (lx *lexer) advance(n int) {
	for k := 0; k < n && lx.i < len(lx.src); k++ {
		if lx.src[lx.i] == '\n' {
			lx.line++
			lx.col = 1
		} else {
			lx.col++
		}
		lx.i++
	}
}

func (lx *lexer) skipSpace() error {
	for lx.i < len(lx.src) {
		c := lx.src[lx.i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f':
			lx.advance(1)
		case strings.HasPrefix(lx.src[lx.i:], "//"):
			for lx.i < len(lx.src) && lx.src[lx.i] != '\n' {
				lx.advance(1)
			}
		case strings.HasPrefix(lx.src[lx.i:], "/*"):
			p := lx.pos()
			end := strings.Index(lx.src[lx.i+2:], "*/")
			if end < 0 {
				return lx.errf(p, "unterminated comment")
			}
			lx.advance(end + 4)
		default:
			return nil
		}
	}
	return nil
}

// directive handles one preprocessor line, appending to out the tokens it
// contributes (those of an included file).
func (lx *lexer) directive(out []Token) ([]Token, error) {
	p := lx.pos()
	end := strings.IndexByte(lx.src[lx.i:], '\n')
	if end < 0 {
		end = len(lx.src) - lx.i
	}
	line := lx.src[lx.i : lx.i+end]
	if strings.HasSuffix(strings.TrimRight(line, " \t\r"), "\\") {
		return nil, lx.errf(p, "multi-line preprocessor directives are not supported")
	}
	if k := strings.Index(line, "//"); k >= 0 {
		line = line[:k]
	}
	if k := strings.Index(line, "/*"); k >= 0 && strings.Contains(line[k:], "*/") {
		line = line[:k]
	}
	body := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "#"))
	fields := strings.Fields(body)
	lx.advance(end)
	if len(fields) == 0 {
		return out, nil
	}
	rest := strings.TrimSpace(body[len(fields[0]):])
	// Conditionals are followed in false branches too.
	switch fields[0] {
	case "if", "ifdef", "ifndef":
		outer := lx.active()
		f := condFrame{p: p, outer: outer}
		if outer {
			var on bool
			switch fields[0] {
			case "if":
				v, err := lx.evalIf(rest, p)
				if err != nil {
					return nil, err
				}
				on = v != 0
			default:
				if len(fields) != 2 {
					return nil, lx.errf(p, "#%s takes one name", fields[0])
				}
				_, def := lx.macros[fields[1]]
				on = def == (fields[0] == "ifdef")
			}
			f.active, f.taken = on, on
		}
		lx.conds = append(lx.conds, f)
		return out, nil
	case "elif", "else":
		if len(lx.conds) == 0 {
			return nil, lx.errf(p, "#%s without #if", fields[0])
		}
		f := &lx.conds[len(lx.conds)-1]
		if f.sawElse {
			return nil, lx.errf(p, "#%s after #else", fields[0])
		}
		on := false
		if f.outer && !f.taken {
			if fields[0] == "else" {
				on = true
			} else {
				v, err := lx.evalIf(rest, p)
				if err != nil {
					return nil, err
				}
				on = v != 0
			}
		}
		f.sawElse = fields[0] == "else"
		f.active = on
		f.taken = f.taken || on
		return out, nil
	case "endif":
		if len(lx.conds) == 0 {
			return nil, lx.errf(p, "#endif without #if")
		}
		lx.conds = lx.conds[:len(lx.conds)-1]
		return out, nil
	}
	if !lx.active() {
		return out, nil
	}
	switch fields[0] {
	case "include":
		return lx.include(out, rest, p)
	case "define":
		if len(fields) < 2 || strings.ContainsAny(fields[1], "()") {
			return nil, lx.errf(p, "only object-like #define NAME VALUE is supported")
		}
		name := fields[1]
		b, err := lx.macroBody(name, strings.TrimSpace(rest[len(name):]), p)
		if err != nil {
			return nil, err
		}
		lx.macros[name] = b
		return out, nil
	case "undef":
		if len(fields) != 2 {
			return nil, lx.errf(p, "#undef takes one name")
		}
		delete(lx.macros, fields[1])
		return out, nil
	case "error":
		return nil, lx.errf(p, "#error %s", rest)
	}
	return nil, lx.errf(p, "preprocessor directive #%s is not supported", fields[0])
}

// macroBody lexes the body of an object-like macro, expanding the macros
// it uses.
func (lx *lexer) macroBody(name, text string, p Pos) ([]Token, error) {
	sub := &lexer{file: p.file, src: text, line: p.Line, col: 1, macros: lx.macros, ctx: lx.ctx}
	var body []Token
	for {
		if err := sub.skipSpace(); err != nil {
			return nil, err
		}
		t, err := sub.next()
		if err != nil {
			return nil, err
		}
		if t.Kind == TEOF {
			break
		}
		if t.Kind == TIdent {
			if mb, ok := lx.macros[t.Text]; ok {
				body = append(body, mb...)
				continue
			}
		}
		body = append(body, t)
		if len(body) > maxMacroTokens {
			return nil, lx.errf(p, "#define %s expands to more than %d tokens", name, maxMacroTokens)
		}
	}
	if len(body) > maxMacroTokens {
		return nil, lx.errf(p, "#define %s expands to more than %d tokens", name, maxMacroTokens)
	}
	return body, nil
}

// include handles #include <...> (the built-in architecture files) and
// #include "file" (a user file, looked up beside the including file, then
// in Options.IncludeDirs in order).
func (lx *lexer) include(out []Token, arg string, p Pos) ([]Token, error) {
	switch arg {
	case "<core.p4>":
		return out, nil
	case "<v1model.p4>":
		if lx.ctx.tna {
			return nil, lx.errf(p, "#include <v1model.p4>: the program already includes <tna.p4> (one architecture per program)")
		}
		lx.ctx.v1model = true
		return out, nil
	case "<tna.p4>":
		if lx.ctx.v1model {
			return nil, lx.errf(p, "#include <tna.p4>: the program already includes <v1model.p4> (one architecture per program)")
		}
		if lx.ctx.tna {
			return out, nil
		}
		lx.ctx.tna = true
		sub := &lexer{file: "tna.p4", src: tnaPrelude, line: 1, col: 1, macros: lx.macros, ctx: lx.ctx}
		return sub.run(out)
	}
	if len(arg) < 2 || arg[0] != '"' || arg[len(arg)-1] != '"' {
		return nil, lx.errf(p, "#include %s: only <core.p4>, <v1model.p4>, <tna.p4> (built in) and \"file\" are available", arg)
	}
	name := arg[1 : len(arg)-1]
	if lx.ctx.depth >= maxIncludeDepth {
		return nil, lx.errf(p, "#include %q: includes nested more than %d deep", name, maxIncludeDepth)
	}
	path, src, err := lx.ctx.opts.find(name, lx.file)
	if err != nil {
		return nil, lx.errf(p, "#include %q: %v", name, err)
	}
	lx.ctx.depth++
	sub := &lexer{file: path, src: string(src), line: 1, col: 1, macros: lx.macros, ctx: lx.ctx}
	out, err = sub.run(out)
	lx.ctx.depth--
	return out, err
}

// evalIf evaluates the expression of #if or #elif: integers, macros
// (undefined names are 0), defined(NAME), ! ~ * / % + - < <= > >= == !=
// & ^ | && || and parentheses, as the C preprocessor does.
func (lx *lexer) evalIf(text string, p Pos) (int64, error) {
	sub := &lexer{file: p.file, src: text, line: p.Line, col: 1, macros: map[string][]Token{}, ctx: lx.ctx}
	var toks []Token
	for {
		if err := sub.skipSpace(); err != nil {
			return 0, err
		}
		t, err := sub.next()
		if err != nil {
			return 0, err
		}
		if t.Kind == TEOF {
			break
		}
		toks = append(toks, t)
	}
	// defined(X) / defined X, then macro expansion.
	var ex []Token
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.Kind == TIdent && t.Text == "defined" {
			j := i + 1
			paren := j < len(toks) && toks[j].Text == "("
			if paren {
				j++
			}
			if j >= len(toks) || toks[j].Kind != TIdent {
				return 0, lx.errf(p, "#if: defined needs a name")
			}
			_, def := lx.macros[toks[j].Text]
			v := int64(0)
			if def {
				v = 1
			}
			ex = append(ex, Token{Kind: TInt, Val: big.NewInt(v), p: t.p})
			if paren {
				j++
				if j >= len(toks) || toks[j].Text != ")" {
					return 0, lx.errf(p, "#if: defined( needs a )")
				}
			}
			i = j
			continue
		}
		if t.Kind == TIdent {
			if body, ok := lx.macros[t.Text]; ok {
				ex = append(ex, body...)
				continue
			}
		}
		ex = append(ex, t)
	}
	for i, t := range ex {
		if t.Kind == TIdent {
			ex[i] = Token{Kind: TInt, Val: new(big.Int), p: t.p}
		}
	}
	ev := &ppEval{toks: ex, lx: lx, p: p}
	v, err := ev.expr(0)
	if err != nil {
		return 0, err
	}
	if ev.i != len(ev.toks) {
		return 0, lx.errf(p, "#if: unexpected %s", describe(ev.toks[ev.i]))
	}
	return v, nil
}

// ppEval is a precedence-climbing evaluator for #if expressions.
type ppEval struct {
	toks  []Token
	i     int
	lx    *lexer
	p     Pos
	depth int
}

var ppPrec = map[string]int{"||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6,
	"<": 7, "<=": 7, ">": 7, ">=": 7, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10}

// expr evaluates a binary expression whose operators bind tighter than
// minPrec (precedence climbing).
func (ev *ppEval) expr(minPrec int) (int64, error) {
	ev.depth++
	defer func() { ev.depth-- }()
	if ev.depth > maxDepth {
		return 0, ev.lx.errf(ev.p, "#if: expression nesting too deep")
	}
	l, err := ev.unary()
	if err != nil {
		return 0, err
	}
	for ev.i < len(ev.toks) {
		t := ev.toks[ev.i]
		prec, ok := ppPrec[t.Text]
		if t.Kind != TPunct || !ok || prec <= minPrec {
			break
		}
		ev.i++
		r, err := ev.expr(prec)
		if err != nil {
			return 0, err
		}
		b := func(x bool) int64 {
			if x {
				return 1
			}
			return 0
		}
		switch t.Text {
		case "||":
			l = b(l != 0 || r != 0)
		case "&&":
			l = b(l != 0 && r != 0)
		case "|":
			l |= r
		case "^":
			l ^= r
		case "&":
			l &= r
		case "==":
			l = b(l == r)
		case "!=":
			l = b(l != r)
		case "<":
			l = b(l < r)
		case "<=":
			l = b(l <= r)
		case ">":
			l = b(l > r)
		case ">=":
			l = b(l >= r)
		case "+":
			l += r
		case "-":
			l -= r
		case "*":
			l *= r
		case "/", "%":
			if r == 0 {
				return 0, ev.lx.errf(ev.p, "#if: division by zero")
			}
			if t.Text == "/" {
				l /= r
			} else {
				l %= r
			}
		}
	}
	return l, nil
}

func (ev *ppEval) unary() (int64, error) {
	if ev.i >= len(ev.toks) {
		return 0, ev.lx.errf(ev.p, "#if: expression ends early")
	}
	t := ev.toks[ev.i]
	ev.i++
	switch {
	case t.Kind == TInt:
		if !t.Val.IsInt64() {
			return 0, ev.lx.errf(ev.p, "#if: integer %s too large", t.Val)
		}
		return t.Val.Int64(), nil
	case t.Kind == TPunct && t.Text == "(":
		v, err := ev.expr(0)
		if err != nil {
			return 0, err
		}
		if ev.i >= len(ev.toks) || ev.toks[ev.i].Text != ")" {
			return 0, ev.lx.errf(ev.p, "#if: missing )")
		}
		ev.i++
		return v, nil
	case t.Kind == TPunct && (t.Text == "!" || t.Text == "-" || t.Text == "~" || t.Text == "+"):
		ev.depth++
		defer func() { ev.depth-- }()
		if ev.depth > maxDepth {
			return 0, ev.lx.errf(ev.p, "#if: expression nesting too deep")
		}
		v, err := ev.unary()
		if err != nil {
			return 0, err
		}
		switch t.Text {
		case "!":
			if v == 0 {
				return 1, nil
			}
			return 0, nil
		case "-":
			return -v, nil
		case "~":
			return ^v, nil
		}
		return v, nil
	}
	return 0, ev.lx.errf(ev.p, "#if: unexpected %s", describe(t))
}

func isLetter(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (lx *lexer) next() (Token, error) {
	p := lx.pos()
	if lx.i >= len(lx.src) {
		return Token{Kind: TEOF, p: p}, nil
	}
	c := lx.src[lx.i]
	switch {
	case isLetter(c):
		j := lx.i
		for j < len(lx.src) && (isLetter(lx.src[j]) || isDigit(lx.src[j])) {
			j++
		}
		t := Token{Kind: TIdent, Text: lx.src[lx.i:j], p: p}
		lx.advance(j - lx.i)
		return t, nil
	case isDigit(c):
		return lx.number(p)
	case c == '"':
		j := lx.i + 1
		for j < len(lx.src) && lx.src[j] != '"' && lx.src[j] != '\n' {
			if lx.src[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(lx.src) || lx.src[j] != '"' {
			return Token{}, lx.errf(p, "unterminated string")
		}
		t := Token{Kind: TString, Text: lx.src[lx.i+1 : j], p: p}
		lx.advance(j + 1 - lx.i)
		return t, nil
	}
	for _, s := range puncts {
		if strings.HasPrefix(lx.src[lx.i:], s) {
			lx.advance(len(s))
			return Token{Kind: TPunct, Text: s, p: p}, nil
		}
	}
	return Token{}, lx.errf(p, "unexpected character %q", c)
}

// number lexes an integer literal: [width(w|s)]value with value decimal or
// 0x/0o/0b/0d prefixed, '_' separators allowed.
func (lx *lexer) number(p Pos) (Token, error) {
	j := lx.i
	for j < len(lx.src) && (isLetter(lx.src[j]) || isDigit(lx.src[j])) {
		j++
	}
	text := lx.src[lx.i:j]
	lx.advance(j - lx.i)
	t := Token{Kind: TInt, Text: text, p: p}
	body := text
	// width prefix: digits followed by w or s
	k := 0
	for k < len(body) && isDigit(body[k]) {
		k++
	}
	if k > 0 && k < len(body) && (body[k] == 'w' || body[k] == 's') {
		w, ok := new(big.Int).SetString(body[:k], 10)
		if !ok || !w.IsInt64() || w.Int64() <= 0 || w.Int64() > 2048 {
			return t, lx.errf(p, "bad width in literal %s", text)
		}
		t.width = int(w.Int64())
		t.signed = body[k] == 's'
		body = body[k+1:]
	}
	base := 10
	if len(body) > 1 && body[0] == '0' {
		switch body[1] {
		case 'x', 'X':
			base, body = 16, body[2:]
		case 'b', 'B':
			base, body = 2, body[2:]
		case 'o', 'O':
			base, body = 8, body[2:]
		case 'd', 'D':
			base, body = 10, body[2:]
		}
	}
	body = strings.ReplaceAll(body, "_", "")
	v, ok := new(big.Int).SetString(body, base)
	if !ok || body == "" {
		return t, lx.errf(p, "bad integer literal %s", text)
	}
	t.Val = v
	return t, nil
}

// Options are the front end's options.
type Options struct {
	// IncludeDirs are searched in order for #include "file" when the file
	// is not found beside the file that includes it (as p4c's -I).
	IncludeDirs []string
	// Defines are object-like macros defined before the program (as
	// p4c's -D NAME=VALUE).
	Defines map[string]string
	// ReadFile reads an included file; nil means the file system (regular
	// files of at most 16 MiB).
	ReadFile func(path string) ([]byte, error)
}

// readSource reads a program or an included file: a regular file of at
// most maxSourceBytes (not a device, a FIFO or a directory).
func ReadSource(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSourceBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxSourceBytes {
		return nil, fmt.Errorf("%s is longer than %d bytes", path, maxSourceBytes)
	}
	return b, nil
}

// find locates an included file: beside the including file from, then in
// IncludeDirs in order.
func (o *Options) find(name, from string) (string, []byte, error) {
	read := o.ReadFile
	if read == nil {
		read = ReadSource
	}
	var cands []string
	if filepath.IsAbs(name) {
		cands = []string{name}
	} else {
		cands = append(cands, filepath.Join(filepath.Dir(from), name))
		for _, d := range o.IncludeDirs {
			cands = append(cands, filepath.Join(d, name))
		}
	}
	for _, c := range cands {
		b, err := read(c)
		if err == nil {
			return c, b, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", nil, err
		}
	}
	return "", nil, fmt.Errorf("file not found (looked in %s)", strings.Join(cands, ", "))
}
