package clockcheck

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestFile(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"clean", `package p
import "time"
func f(d time.Duration) time.Duration { return d * time.Millisecond }`, nil},
		{"calls", `package p
import ("context"; "time")
func f(ctx context.Context) {
	_ = time.Now()
	time.Sleep(1)
	<-time.After(1)
	_, c := context.WithTimeout(ctx, time.Second)
	c()
}`, []string{"time.Now", "time.Sleep", "channel receive", "time.After", "context.WithTimeout"}},
		{"channels and goroutines", `package p
import "context"
func f(ctx context.Context, w func()) {
	ch := make(chan int, 1)
	go w()
	ch <- 1
	select {
	case <-ctx.Done():
	default:
	}
}`, []string{"channel type", "go statement", "channel send", "select statement", "channel receive"}},
		{"method value", `package p
import "time"
var now = time.Now`, []string{"time.Now"}},
		{"renamed import", `package p
import (t "time"; c "context")
func f() { t.NewTimer(1); t.NewTicker(1); c.WithDeadline(nil, t.Time{}) }`, []string{"time.NewTimer", "time.NewTicker", "context.WithDeadline"}},
		{"shadowing name not an import", `package p
type clk struct{}
func (clk) Now() int { return 0 }
var time clk
var x = time.Now()`, nil},
		{"other packages", `package p
import "sync"
var mu sync.Mutex
func f() { mu.Lock(); defer mu.Unlock() }`, nil},
	} {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "x.go", tc.src, 0)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []string
		for _, fd := range File(fset, f) {
			got = append(got, fd.Name)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: found %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestDirSkipsTests: test files may use the wall clock; a directory with
// no non-test file is an error (a wrong path must not pass silently).
func TestDirSkipsTests(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a_test.go", "package p\nimport \"time\"\nvar x = time.Now()\n")
	if _, err := Dir(dir); err == nil {
		t.Fatal("a directory without non-test files passed")
	}
	write("a.go", "package p\nimport \"time\"\nvar y = time.Since\n")
	fs, err := Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 || fs[0].Name != "time.Since" || fs[0].Pos.Line != 3 {
		t.Fatalf("findings %v, want one time.Since on line 3 of a.go", fs)
	}
}
