package target

import (
	"fmt"
	"strings"
	"testing"
)

// Programs the target must refuse, with the file, line and a reason. Each
// case puts one offending line in the ingress body (line bodyLine) or
// replaces a piece of the template.
func TestRefusesBodyErrors(t *testing.T) {
	cases := []struct {
		decls, body string
		line        int
		reason      string
	}{
		{"", "hdr.h.a = hdr.h.c;", bodyLine, "type mismatch: expected bit<8>, found bit<16>"},
		{"", "hdr.h.a = hdr.h.a + hdr.h.c;", bodyLine, "type mismatch in +: bit<8> and bit<16>"},
		{"", "hdr.h.a = 256;", bodyLine, "does not fit in bit<8>"},
		{"", "hdr.h.a = 9w3;", bodyLine, "expected bit<8>, found bit<9>"},
		{"", "if (hdr.h.a) { }", bodyLine, "expected bool, found bit<8>"},
		{"", "meta.f = 1;", bodyLine, "expected bool, found an integer"},
		{"", "hdr.h.a = hdr.h.c[8:0];", bodyLine, "expected bit<8>, found bit<9>"},
		{"", "hdr.h.a = hdr.h.a[8:1];", bodyLine, "slice [8:1] out of range for bit<8>"},
		{"", "hdr.h.e = hdr.h.e ++ hdr.h.a;", bodyLine, "concatenation is 72 bits wide"},
		{"", "hdr.h.zz = 1;", bodyLine, "h_t has no field zz"},
		{"", "nosuch = 1;", bodyLine, "unknown name nosuch"},
		{"", "hdr.h.a = hdr.h.a == 1;", bodyLine, "expected bit<8>, found bool"},
		{"", "hdr.h.a = ~5;", bodyLine, "cannot infer the width"},
		{"", "clone3(CloneType.I2E, 5, {});", bodyLine, "clone3 is not supported by this target"},
		{"", "clone(CloneType.I2E);", bodyLine, "clone takes 2 arguments"},
		{"", "clone_preserving_field_list(CloneType.I2E, 5, 300);", bodyLine, "field list index 300 out of range"},
		{"", "clone(5, 5);", bodyLine, "expected CloneType.I2E or CloneType.E2E"},
		{"", "resubmit(hdr.h.a);", bodyLine, "resubmit is not supported by this target (use resubmit_preserving_field_list)"},
		{"", "recirculate_preserving_field_list(256);", bodyLine, "field list index 256 out of range"},
		{"", "random(meta.x, 0, 8);", bodyLine, "random is not supported"},
		{"", "hdr.h.a = hdr.h.b < hdr.h.a;", bodyLine, "expected bit<8>, found bool"},
		{"", "bit<128> big;", bodyLine, "variables of type bit<128> are not supported"},
		{"", "bit<4096> big;", bodyLine, "bit<4096>: this target supports widths 1 to 64"},
		{"", "int<8> s;", bodyLine, "signed int<W> types are not supported"},
		{"", "varbit<8> v;", bodyLine, "varbit is not supported"},
		{"", "hdr.h.a = 8s1;", bodyLine, "int<W> is not supported"},
		{"", "mark_to_drop();", bodyLine, "standard_metadata"},
		{"", "hdr.h.a = (bool)hdr.h.a;", bodyLine, "only bit<1> can be cast to bool"},
		{"", "verify(true, error.NoMatch);", bodyLine, "verify is only allowed in parsers"},
		{"register<bit<32>>(4) r;", "r.write(hdr.h.c, 1);", bodyLine, "expected bit<32>, found bit<16>"},
		{"register<bit<32>>(4) r;", "r.write(0, hdr.h.c);", bodyLine, "expected bit<32>, found bit<16>"},
		{"register<bit<32>>(4) r;", "r.read(hdr.h.a, 0);", bodyLine, "register I.r holds bit<32>, result is bit<8>"},
		{"counter(4, CounterType.packets) c;", "c.count(hdr.h.a);", bodyLine, "expected bit<32>, found bit<8>"},
		{"action_selector(HashAlgorithm.crc16, 4, 65) as;", "", bodyLine - 3, "action_selector output width 65 out of range"},
		{"action a() {} table t { key = { hdr.h.a: exact; hdr.h.b: selector; } actions = { a; } }", "", bodyLine - 3, "selector key hdr.h.b needs implementation"},
		{"meter(4, MeterType.packets) m;", "m.execute_meter(0, hdr.h.b[0:0]);", bodyLine, "the result must be bit<W> with W >= 2"},
		{"direct_meter<bit<2>>(MeterType.packets) dm;", "", bodyLine - 3, "direct_meter I.dm is not attached to a table"},
		{"action a(bit<8> x) { }", "a();", bodyLine, "action a takes 1 arguments, got 0"},
		{"action a(inout bit<8> x) { }", "a(5);", bodyLine, "must be assignable"},
		{"", "hdr.h.a = sm.ingress_global_timestamp;", bodyLine, "expected bit<8>, found bit<48>"},
		{"", "sm.ingress_global_timestamp = 0;", bodyLine, "timestamps are read-only"},
		{"", "hdr.h.a = hdr.h.a / 0 + hdr.h.b[9:9];", bodyLine, "slice [9:9] out of range"},
		{"table t { key = { hdr.h.a: exact; } actions = { nope; } }", "", bodyLine - 3, "unknown action nope"},
		{"action a() {} table t { key = { hdr.h.a: exact; } actions = { a; } default_action = NoAction(); }", "", bodyLine - 3, "NoAction is not in the actions of table t"},
		{"action a(bit<8> v) {} table t { key = { hdr.h.a: exact; } actions = { a; } const entries = { (1, 2): a(1); } }", "", bodyLine - 3, "entry has 2 key values, table t has 1 keys"},
		{"action a() {} table t { key = { hdr.h.a: exact; } actions = { a; } implementation = foo; }", "", bodyLine - 3, "implementation must name an action_profile or action_selector"},
		{"action a() {} table t { key = { hdr.h.a: exact; } actions = { a; } support_timeout = hdr.h.a == 1; }", "", bodyLine - 3, "support_timeout must be a constant"},
		{"table t { key = { hdr.h.a: exact; } actions = { NoAction; } }", "t.apply(); t.apply().hit;", bodyLine, "expression statement must be a call"},
	}
	for _, c := range cases {
		src := fmt.Sprintf(featureTmpl, c.decls, c.body)
		_, err := Compile("test.p4", []byte(src))
		wantErrAt(t, err, fmt.Sprintf("test.p4:%d:", c.line))
		wantErrAt(t, err, c.reason)
	}
}

func TestRefusesProgramErrors(t *testing.T) {
	base := fmt.Sprintf(featureTmpl, "", "")
	cases := []struct {
		old, new string
		where    string
		reason   string
	}{
		{"#include <v1model.p4>", `#include "mine.p4"`, "test.p4:2:1:", `#include "mine.p4": file not found`},
		{"#include <v1model.p4>", `#include <psa.p4>`, "test.p4:2:1:", "only <core.p4>, <v1model.p4>, <tna.p4> (built in)"},
		{"#include <v1model.p4>", "#ifdef X", "test.p4:2:1:", "#if without #endif"},
		{"#include <v1model.p4>", "#pragma once", "test.p4:2:1:", "directive #pragma is not supported"},
		{"header g_t { bit<8> v; }", "header g_t { bit<7> v; }", "test.p4:4:1:", "not a whole number of bytes"},
		{"header g_t { bit<8> v; }", "header g_t { bit<8> v; } header_union u_t { g_t g; }", "test.p4:4:26:", "header_union is not supported"},
		{"struct headers { h_t h; g_t g; }", "struct headers { h_t h; g_t[2] g; }", "test.p4:5:", "header stacks are not supported"},
		{"struct headers { h_t h; g_t g; }", "struct headers { h_t h; g_t g; } extern Foo { }", "test.p4:5:", "extern declarations are not supported"},
		{"V1Switch(P(), VC(), I(), E(), CC(), D()) main;", "V1Switch(P(), VC(), I(), E(), CC()) main;", "test.p4:21:1:", "V1Switch takes 6 blocks"},
		{"V1Switch(P(), VC(), I(), E(), CC(), D()) main;", "", "test.p4:1:1:", "no package instantiation named main"},
		{"state start { pk.extract(hdr.h); transition accept; }", "state start { pk.extract(hdr.h); transition nowhere; }", "test.p4:8:", "unknown state nowhere"},
		{"state start { pk.extract(hdr.h); transition accept; }", "state begin { transition accept; }", "test.p4:7:1:", "has no start state"},
		{"state start { pk.extract(hdr.h); transition accept; }", "state start { hdr.h.a = pk.lookahead<bit<8>>(); transition accept; }", "test.p4:8:", "lookahead is not supported"},
		{"state start { pk.extract(hdr.h); transition accept; }", "state start { pk.extract(hdr.h); transition select(hdr.h.a) { 1 .. 5: accept; } }", "test.p4:8:", "range keysets are not supported"},
		{"apply { pk.emit(hdr.h); pk.emit(hdr.g); }", "apply { pk.emit(hdr.h); hdr.g.setValid(); }", "test.p4:20:", "read-only"},
		{"control VC(inout headers hdr, inout meta_t meta)", "control VC(inout headers hdr, in meta_t meta)", "test.p4:10:", "verifyChecksum parameter meta must be \"inout\""},
		{"struct meta_t {", "/* never closed\nstruct meta_t {", "test.p4:6:1:", "unterminated comment"},
		{"header g_t", "header g_t $", "test.p4:4:12:", "unexpected character"},
		{"header g_t", "@p4runtime_translation(\"x\", 32) type bit<8> port_t;\nheader g_t", "test.p4:4:1:", "@p4runtime_translation is not supported"},
	}
	for _, c := range cases {
		if c.where == "" {
			continue
		}
		if !strings.Contains(base, c.old) {
			t.Fatalf("template lacks %q", c.old)
		}
		src := strings.Replace(base, c.old, c.new, 1)
		_, err := Compile("test.p4", []byte(src))
		wantErrAt(t, err, c.where)
		wantErrAt(t, err, c.reason)
	}
}
