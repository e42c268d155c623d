package target

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"
)

// files is an in-memory file system for CompileOptions.ReadFile.
type files map[string]string

func (f files) read(path string) ([]byte, error) {
	if s, ok := f[path]; ok {
		return []byte(s), nil
	}
	return nil, fs.ErrNotExist
}

// The v1model feature program, split over files: the header types in a
// file beside the program's directory (found relative to the including
// file), a constant in an include directory (-I), each behind include
// guards and included twice.
func TestIncludeRelativeAndIncludePath(t *testing.T) {
	main := strings.Replace(fmt.Sprintf(featureTmpl, "", "hdr.h.a = FROM_INC; hdr.h.b = FROM_LIB;"),
		"header h_t { bit<8> a; bit<8> b; bit<16> c; bit<32> d; bit<64> e; }\nheader g_t { bit<8> v; }",
		"#include \"lib/types.p4\"\n#include \"lib/types.p4\"", 1)
	fsys := files{
		"prog/main.p4": main,
		"prog/lib/types.p4": `#ifndef TYPES
#define TYPES
#include "consts.p4"
header h_t { bit<8> a; bit<8> b; bit<16> c; bit<32> d; bit<64> e; }
header g_t { bit<8> v; }
#endif
`,
		"prog/lib/consts.p4": "#include <defs.p4>\nconst bit<8> FROM_LIB = 8w2;\n",
		"inc/defs.p4":        "#pragma once\n",
		"inc/defs2.p4":       "const bit<8> FROM_INC = 8w1;\n",
	}
	// <defs.p4> is not a built-in: refused by name; "defs2.p4" through -I.
	_, err := CompileFile("prog/main.p4", CompileOptions{IncludeDirs: []string{"inc"}, ReadFile: fsys.read})
	wantErrAt(t, err, `prog/lib/consts.p4:1:1: #include <defs.p4>: only <core.p4>, <v1model.p4>, <tna.p4> (built in) and "file"`)
	fsys["prog/lib/consts.p4"] = "#include \"defs2.p4\"\nconst bit<8> FROM_LIB = 8w2;\n"
	_, err = CompileFile("prog/main.p4", CompileOptions{ReadFile: fsys.read})
	wantErrAt(t, err, `prog/lib/consts.p4:1:1: #include "defs2.p4": file not found (looked in prog/lib/defs2.p4)`)
	p, err := CompileFile("prog/main.p4", CompileOptions{IncludeDirs: []string{"nowhere", "inc"}, ReadFile: fsys.read})
	if err != nil {
		t.Fatal(err)
	}
	got := runFeature(t, NewDevice(p, Options{}), hv{a: 9, b: 9})
	if h := hvOf(got); h.a != 1 || h.b != 2 {
		t.Fatalf("got %+v, want a=1 (from the include path) b=2 (from the relative include)", h)
	}
	// An error inside an included file names that file.
	fsys["inc/defs2.p4"] = "const bit<8> FROM_INC = 8w1;\n  const bit<8> BAD = 9w1;\n"
	_, err = CompileFile("prog/main.p4", CompileOptions{IncludeDirs: []string{"inc"}, ReadFile: fsys.read})
	wantErrAt(t, err, "inc/defs2.p4:2:")
	wantErrAt(t, err, "expected bit<8>, found bit<9>")
}

func TestPreprocessor(t *testing.T) {
	cases := []struct {
		name, src, want string // want: the value of X, or an error
		defines         map[string]string
	}{
		{"if arithmetic", "#if 1 + 2 * 3 == 7 && !(4 < 2)\n#define X 1\n#else\n#define X 2\n#endif", "1", nil},
		{"elif chain", "#if V == 1\n#define X 1\n#elif V == 2\n#define X 2\n#elif V == 3\n#define X 3\n#else\n#define X 4\n#endif", "3", map[string]string{"V": "3"}},
		{"undefined names are 0", "#if NOPE == 0\n#define X 5\n#endif", "5", nil},
		{"defined forms", "#if defined(A) && defined B && !defined C\n#define X 6\n#endif", "6", map[string]string{"A": "", "B": "1"}},
		{"ifdef ifndef nest", "#ifdef A\n#ifndef A\n#define X 1\n#else\n#define X 7\n#endif\n#endif", "7", map[string]string{"A": "1"}},
		{"skipped branches are not compiled", "#if 0\nthis is not P4 $\n#include \"missing.p4\"\n#error no\n#endif\n#define X 8", "8", nil},
		{"undef", "#define X 9\n#undef X\n#define X 10", "10", nil},
		{"tofino target selection", "#if __TARGET_TOFINO__ == 2\n#define X 2\n#else\n#define X 1\n#endif", "1", nil},
		{"error", "#error stop here", "test.p4:1:1: #error stop here", nil},
		{"elif without if", "#elif 1", "test.p4:1:1: #elif without #if", nil},
		{"else after else", "#if 1\n#else\n#else\n#endif", "test.p4:3:1: #else after #else", nil},
		{"unterminated", "#if 1\n#define X 1", "test.p4:1:1: #if without #endif", nil},
		{"division by zero", "#if 1 / 0\n#endif", "test.p4:1:1: #if: division by zero", nil},
		{"function-like macro", "#define F(x) x", "only object-like #define", nil},
		{"garbage", "#if 1 +\n#endif", "#if: expression ends early", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := c.src + "\n" + fmt.Sprintf(featureTmpl, "", "hdr.h.a = X;")
			p, err := CompileWith("test.p4", []byte(src), CompileOptions{Defines: c.defines})
			if strings.Contains(c.want, " ") || strings.Contains(c.want, ":") {
				wantErrAt(t, err, c.want)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			h := hvOf(runFeature(t, NewDevice(p, Options{}), hv{}))
			if fmt.Sprint(h.a) != c.want {
				t.Fatalf("X = %d, want %s", h.a, c.want)
			}
		})
	}
}

func TestIncludeRecursionIsBounded(t *testing.T) {
	fsys := files{"a.p4": "#include \"b.p4\"\n", "b.p4": "#include \"a.p4\"\n"}
	_, err := CompileFile("a.p4", CompileOptions{ReadFile: fsys.read})
	wantErrAt(t, err, "includes nested more than 32 deep")
}

// Sub-controls and sub-parsers in a v1model program: instances applied in
// the ingress and the parser, their locals named after the instance.
func TestV1modelSubParserAndControl(t *testing.T) {
	src := strings.Replace(fmt.Sprintf(featureTmpl, "Bump() b1; Bump() b2;", "b1.apply(hdr.h.a, 8w3); b2.apply(hdr.h.b, hdr.h.a);"),
		"struct meta_t", `control Bump(inout bit<8> x, in bit<8> k) {
    action add() { x = x + k; }
    table bump { actions = { add; } default_action = add; }
    apply { bump.apply(); }
}
parser GetH(packet_in pk, out h_t h) { state start { pk.extract(h); transition accept; } }
struct meta_t`, 1)
	src = strings.Replace(src, "state start { pk.extract(hdr.h); transition accept; }",
		"GetH() gh; state start { gh.apply(pk, hdr.h); transition accept; }", 1)
	p := mustCompile(t, src)
	h := hvOf(runFeature(t, NewDevice(p, Options{}), hv{a: 10, b: 1}))
	if h.a != 13 || h.b != 14 {
		t.Fatalf("got %+v, want a = 10+3, b = 1+13", h)
	}
	for _, name := range []string{"I.b1.bump", "I.b2.bump"} {
		tableID(t, p, name)
	}
	// A sub-parser's reject rejects the parser; the packet goes on with
	// parser_error set (v1model).
	short := mustCompile(t, src)
	d := NewDevice(short, Options{})
	if outs := send(d, 3, []byte{1, 2, 3}); len(outs) != 1 || d.Stats().ParserErrors != 1 {
		t.Fatalf("short packet: %v, stats %+v", outs, d.Stats())
	}
}

func TestIncludeRefusesDevicesAndRecursiveInstances(t *testing.T) {
	_, err := Compile("test.p4", []byte("#include \"/dev/zero\"\n"))
	wantErrAt(t, err, `test.p4:1:1: #include "/dev/zero": /dev/zero is not a regular file`)
	_, err = Compile("test.p4", []byte("#include \"/\"\n"))
	wantErrAt(t, err, "is not a regular file")
	for _, top := range []string{
		"control X(inout h_t h) { X() x; apply { x.apply(h); } }",
		"control X(inout h_t h) { Y() y; apply { y.apply(h); } } control Y(inout h_t h) { X() x; apply { x.apply(h); } }",
	} {
		src := tnaCase{top: top, igDecls: "X() x;", igBody: "x.apply(hdr.h);"}.src()
		_, err := Compile("test.p4", []byte(src))
		wantErrAt(t, err, "instantiates itself (recursively)")
	}
}
