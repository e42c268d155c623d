package frontend

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParseProgram: the preprocessor and the parser never panic; they
// either parse or refuse with "file:line:col: reason".
func FuzzParseProgram(f *testing.F) {
	f.Add("#include <core.p4>\n#include <tna.p4>\nheader h_t { bit<8> a; }\n")
	f.Add("#if defined(X) && X > 1\n#define Y 2\n#elif 1\n#else\n#endif\nconst bit<8> A = Y;")
	f.Add("control C(inout bit<8> x) { R<bit<8>, _>(1) r; RA<bit<8>, _, bit<8>>(r) ra = { void apply(inout bit<8> v) { v = 1; } }; apply { } }")
	f.Add("parser P(packet_in p) { state start { p.advance(PORT_METADATA_SIZE); transition select(p.lookahead<bit<8>>()) { 1: accept; default: reject; } } }")
	f.Fuzz(func(t *testing.T, src string) {
		opts := &Options{ReadFile: func(string) ([]byte, error) { return []byte(src), nil }}
		_, err := ParseProgram("fuzz.p4", []byte(src), opts)
		var se *SrcError
		if err != nil && (!errors.As(err, &se) || !strings.Contains(err.Error(), ":")) {
			t.Fatalf("error without position: %v", err)
		}
	})
}
