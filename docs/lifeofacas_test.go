// Package docs holds tests that keep the prose in this directory true to
// the code it names.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestLifeOfACASNamesExist: every function docs/life-of-a-cas.md names in
// its step tables exists where the row says, so the walk through the code
// cannot go stale silently. A row names a file (a Go file's name is looked
// up as a function or method in that file's package, or in the file given
// in parentheses; a P4 file's as a word of the program).
func TestLifeOfACASNamesExist(t *testing.T) {
	doc, err := os.ReadFile("life-of-a-cas.md")
	if err != nil {
		t.Fatal(err)
	}
	ticked := regexp.MustCompile("`([^`]+)`")
	paren := regexp.MustCompile(`\(([a-z0-9/_]+\.go)\)`)
	step := regexp.MustCompile(`^\s*\d+\s*$`)
	rows := 0
	for _, line := range strings.Split(string(doc), "\n") {
		cols := strings.Split(line, "|")
		if len(cols) < 5 || !step.MatchString(cols[1]) {
			continue
		}
		rows++
		file, names := strings.TrimSpace(cols[2]), cols[3]
		for _, m := range ticked.FindAllStringSubmatch(names, -1) {
			name := m[1]
			where := file
			if p := paren.FindStringSubmatch(names); p != nil && strings.HasPrefix(name, filepath.Base(filepath.Dir(p[1]))+".") {
				where = p[1] // pkg.Func (pkg/file.go)
			}
			if !defined(t, filepath.Join("..", where), name) {
				t.Errorf("step %s: %s names %q, not found in %s", strings.TrimSpace(cols[1]), file, name, where)
			}
		}
	}
	if rows < 20 {
		t.Fatalf("read %d step rows from life-of-a-cas.md; the table format changed?", rows)
	}
}

// defined reports whether name is defined at path: for a Go file, as a
// function or method (the part after the last dot) in the file's package;
// otherwise as a word of the file.
func defined(t *testing.T, path, name string) bool {
	t.Helper()
	if !strings.HasSuffix(path, ".go") {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`).Match(b)
	}
	fn := name[strings.LastIndex(name, ".")+1:]
	decl := regexp.MustCompile(`(?m)^func (\([^)]*\) )?` + regexp.QuoteMeta(fn) + `\b`)
	files, err := filepath.Glob(filepath.Join(filepath.Dir(path), "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if decl.Match(b) {
			return true
		}
	}
	return false
}
