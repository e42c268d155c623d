// Package clockcheck enforces, in tests, the rule of verbs.Clock: code
// that runs on a verbs device takes every instant and every wait from the
// device's clock, never from the wall clock. It parses a package's
// non-test Go files and reports every reference to a function of package
// time that reads the wall clock or waits on it (time.Now, time.Sleep,
// time.After, timers and tickers, ...) and to the context functions that
// arm wall-clock timers (context.WithTimeout, context.WithDeadline). It
// also reports the ways to wait that a virtual-time scheduler cannot see,
// and goroutines it does not know of: go statements, channel types,
// sends, receives and select statements. What remains to block on is
// CQ.Wait and the clock's Sleep, WithTimeout and events (mutexes held
// only briefly, never across a wait, are allowed).
//
// It owns the list of forbidden functions and the source scan only; the
// memory systems (clover, sherman, swarm) call Test from a test of their
// own. References are found syntactically, through whatever name the file
// imports time or context under; a package that reaches the wall clock
// through another package (a helper that calls time.Now) is not caught,
// which is why the memory systems import only roce/verbs for devices.
package clockcheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Forbidden lists, by import path, the functions whose use reads or waits
// on the wall clock.
var Forbidden = map[string][]string{
	"time":    {"Now", "Since", "Until", "Sleep", "After", "AfterFunc", "Tick", "NewTimer", "NewTicker"},
	"context": {"WithTimeout", "WithDeadline", "WithTimeoutCause", "WithDeadlineCause"},
}

// Finding is one forbidden reference.
type Finding struct {
	Pos  token.Position
	Name string // e.g. "time.Now", "select statement"
}

func (f Finding) String() string { return fmt.Sprintf("%s: %s", f.Pos, f.Name) }

// Dir scans the non-test Go files of the package in dir.
func Dir(dir string) ([]Finding, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var out []Finding
	n := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("clockcheck: %w", err)
		}
		n++
		out = append(out, File(fset, f)...)
	}
	if n == 0 {
		return nil, fmt.Errorf("clockcheck: no non-test Go files in %s", dir)
	}
	return out, nil
}

// File reports the forbidden references of one parsed file.
func File(fset *token.FileSet, f *ast.File) []Finding {
	// local name -> import path, for the imports the rule covers
	names := map[string]string{}
	for _, im := range f.Imports {
		path, err := strconv.Unquote(im.Path.Value)
		if err != nil || Forbidden[path] == nil {
			continue
		}
		local := path
		if im.Name != nil {
			local = im.Name.Name
		}
		if local == "_" {
			continue
		}
		names[local] = path
	}
	var out []Finding
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			out = append(out, Finding{Pos: fset.Position(n.Pos()), Name: "go statement"})
		case *ast.ChanType:
			out = append(out, Finding{Pos: fset.Position(n.Pos()), Name: "channel type"})
		case *ast.SendStmt:
			out = append(out, Finding{Pos: fset.Position(n.Pos()), Name: "channel send"})
		case *ast.SelectStmt:
			out = append(out, Finding{Pos: fset.Position(n.Pos()), Name: "select statement"})
		case *ast.UnaryExpr:
			if n.Op == token.ARROW {
				out = append(out, Finding{Pos: fset.Position(n.Pos()), Name: "channel receive"})
			}
		}
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		x, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		path, ok := names[x.Name]
		if !ok {
			return true
		}
		for _, fn := range Forbidden[path] {
			if sel.Sel.Name == fn {
				out = append(out, Finding{Pos: fset.Position(sel.Pos()), Name: path + "." + fn})
			}
		}
		return true
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Pos.Offset < out[j].Pos.Offset })
	return out
}

// Test fails t for every forbidden reference in the non-test files of the
// package in dir (a package's own test passes ".").
func Test(t testing.TB, dir string) {
	t.Helper()
	fs, err := Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		t.Errorf("%v: in code that runs on a verbs device; take time and waits from the device's verbs.Clock and CQ.Wait", f)
	}
}
