package target

import (
	"fmt"
	"math/big"
	"strings"
)

// tokKind classifies a token.
type tokKind int

const (
	tEOF tokKind = iota
	tIdent
	tInt
	tString
	tPunct // operators and punctuation; text holds the spelling
)

// pos is a source position (1-based line and column).
type pos struct{ line, col int }

// token is one lexical token. For tInt, val holds the magnitude, width the
// explicit width (0 when the literal has none) and signed whether it was
// written with an 's' width prefix.
type token struct {
	kind   tokKind
	text   string
	p      pos
	val    *big.Int
	width  int
	signed bool
	// adj reports that the token follows the previous one without white
	// space (used to tell ">>" from the end of two nested type arguments).
	adj bool
}

// srcError is a front-end error carrying file, line and column.
type srcError struct {
	file string
	p    pos
	msg  string
}

func (e *srcError) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.file, e.p.line, e.p.col, e.msg)
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

// lexer turns source text into tokens. It handles comments, the
// preprocessor lines this target understands (#include of the built-in
// core.p4/v1model.p4, object-like #define) and refuses every other
// directive.
type lexer struct {
	file   string
	src    string
	i      int
	line   int
	col    int
	macros map[string][]token
}

func lex(file string, src []byte) ([]token, error) {
	lx := &lexer{file: file, src: string(src), line: 1, col: 1, macros: map[string][]token{}}
	var out []token
	prevEnd := -1
	for {
		ws := lx.skipSpace()
		if err := ws; err != nil {
			return nil, err
		}
		if lx.i < len(lx.src) && lx.src[lx.i] == '#' && lx.atLineStart() {
			toks, err := lx.directive()
			if err != nil {
				return nil, err
			}
			out = append(out, toks...)
			prevEnd = -1
			continue
		}
		start := lx.i
		t, err := lx.next()
		if err != nil {
			return nil, err
		}
		t.adj = prevEnd == start
		prevEnd = lx.i
		if t.kind == tIdent {
			if body, ok := lx.macros[t.text]; ok {
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
		if t.kind == tEOF {
			return out, nil
		}
		if len(out) > maxTokens {
			return nil, lx.errf(t.p, "program too long (more than %d tokens)", maxTokens)
		}
	}
}

func (lx *lexer) errf(p pos, format string, args ...any) error {
	return &srcError{file: lx.file, p: p, msg: fmt.Sprintf(format, args...)}
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
			p := pos{lx.line, lx.col}
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

// directive handles one preprocessor line and returns the tokens it
// contributes (none).
func (lx *lexer) directive() ([]token, error) {
	p := pos{lx.line, lx.col}
	end := strings.IndexByte(lx.src[lx.i:], '\n')
	if end < 0 {
		end = len(lx.src) - lx.i
	}
	line := lx.src[lx.i : lx.i+end]
	for strings.HasSuffix(strings.TrimRight(line, " \t\r"), "\\") {
		return nil, lx.errf(p, "multi-line preprocessor directives are not supported")
	}
	if k := strings.Index(line, "//"); k >= 0 {
		line = line[:k]
	}
	fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "#"))
	if len(fields) == 0 {
		lx.advance(end)
		return nil, nil
	}
	switch fields[0] {
	case "include":
		if len(fields) == 2 && (fields[1] == "<core.p4>" || fields[1] == "<v1model.p4>") {
			lx.advance(end)
			return nil, nil
		}
		return nil, lx.errf(p, "#include %s: only <core.p4> and <v1model.p4> are available (built in)", strings.Join(fields[1:], " "))
	case "define":
		if len(fields) < 2 || strings.ContainsAny(fields[1], "()") {
			return nil, lx.errf(p, "only object-like #define NAME VALUE is supported")
		}
		name := fields[1]
		bodyText := strings.TrimSpace(line[strings.Index(line, name)+len(name):])
		sub := &lexer{file: lx.file, src: bodyText, line: p.line, col: 1, macros: lx.macros}
		var body []token
		for {
			if err := sub.skipSpace(); err != nil {
				return nil, err
			}
			t, err := sub.next()
			if err != nil {
				return nil, err
			}
			if t.kind == tEOF {
				break
			}
			if t.kind == tIdent {
				if mb, ok := lx.macros[t.text]; ok {
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
		lx.macros[name] = body
		lx.advance(end)
		return nil, nil
	default:
		return nil, lx.errf(p, "preprocessor directive #%s is not supported", fields[0])
	}
}

func isLetter(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (lx *lexer) next() (token, error) {
	p := pos{lx.line, lx.col}
	if lx.i >= len(lx.src) {
		return token{kind: tEOF, p: p}, nil
	}
	c := lx.src[lx.i]
	switch {
	case isLetter(c):
		j := lx.i
		for j < len(lx.src) && (isLetter(lx.src[j]) || isDigit(lx.src[j])) {
			j++
		}
		t := token{kind: tIdent, text: lx.src[lx.i:j], p: p}
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
			return token{}, lx.errf(p, "unterminated string")
		}
		t := token{kind: tString, text: lx.src[lx.i+1 : j], p: p}
		lx.advance(j + 1 - lx.i)
		return t, nil
	}
	for _, s := range puncts {
		if strings.HasPrefix(lx.src[lx.i:], s) {
			lx.advance(len(s))
			return token{kind: tPunct, text: s, p: p}, nil
		}
	}
	return token{}, lx.errf(p, "unexpected character %q", c)
}

// number lexes an integer literal: [width(w|s)]value with value decimal or
// 0x/0o/0b/0d prefixed, '_' separators allowed.
func (lx *lexer) number(p pos) (token, error) {
	j := lx.i
	for j < len(lx.src) && (isLetter(lx.src[j]) || isDigit(lx.src[j])) {
		j++
	}
	text := lx.src[lx.i:j]
	lx.advance(j - lx.i)
	t := token{kind: tInt, text: text, p: p}
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
	t.val = v
	return t, nil
}
