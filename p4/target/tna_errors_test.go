package target

import (
	"strings"
	"testing"
)

// tna programs the target refuses, by name, at file:line:col. The line
// numbers are tnaTmpl's: declarations at tnaLine, the ingress body at
// tnaLine+4.
func TestTNARefuses(t *testing.T) {
	reg := "Register<bit<32>, bit<32>>(4) r; "
	ra := reg + "RegisterAction<bit<32>, bit<32>, bit<32>>(r) ra = { void apply(inout bit<32> v, out bit<32> rv) { rv = v; } };"
	body := "test.p4:20:"
	decl := "test.p4:16:"
	cases := []struct {
		name          string
		c             tnaCase
		old, new      string // a replacement in the program (old == "": none)
		where, reason string
	}{
		{"multicast", tnaCase{igBody: "ig_tm_md.mcast_grp_a = 1;"}, "", "", body, "multicast (mcast_grp_a) is not supported by this target's tna model"},
		{"copy_to_cpu", tnaCase{igBody: "ig_tm_md.copy_to_cpu = 1;"}, "", "", body, "copy_to_cpu is not supported"},
		{"in intrinsic metadata", tnaCase{igBody: "ig_intr_md.ingress_port = 1;"}, "", "", body, "read-only"},
		{"Mirror", tnaCase{igDecls: "Mirror() m;"}, "", "", decl + "1:", "tna extern Mirror is not supported by this target"},
		{"Lpf", tnaCase{igDecls: "Lpf<bit<16>, bit<32>>(16) l;"}, "", "", decl + "1:", "tna extern Lpf is not supported"},
		{"v1model extern", tnaCase{igDecls: "register<bit<32>>(4) r;"}, "", "", decl + "1:", "register is a v1model extern; this program includes <tna.p4>"},
		{"v1model function", tnaCase{igBody: "mark_to_drop(ig_tm_md);"}, "", "", body, "mark_to_drop is a v1model function"},
		{"Hash RANDOM", tnaCase{igDecls: "Hash<bit<16>>(HashAlgorithm_t.RANDOM) h;"}, "", "", decl, "HashAlgorithm_t.RANDOM is not supported"},
		{"Hash CUSTOM without polynomial", tnaCase{igDecls: "Hash<bit<16>>(HashAlgorithm_t.CUSTOM) h;"}, "", "", decl, "needs a CRCPolynomial"},
		{"CRCPolynomial msb", tnaCase{igDecls: "CRCPolynomial<bit<16>>(16w0x1021, false, true, false, 16w0, 16w0) p;"}, "", "", decl, "msb = true is not supported"},
		{"RegisterAction method", tnaCase{igDecls: reg + "RegisterAction<bit<32>, bit<32>, bit<32>>(r) ra = { void apply(inout bit<32> v) { } bit<32> predicate() { } };"},
			"", "", decl, "RegisterAction method predicate is not supported"},
		{"RegisterAction type", tnaCase{igDecls: reg + "RegisterAction<bit<16>, bit<32>, bit<32>>(r) ra = { void apply(inout bit<16> v) { } };"},
			"", "", decl, "value type bit<16> differs from register r's bit<32>"},
		{"RegisterAction on a non-register", tnaCase{igDecls: "Hash<bit<32>>(HashAlgorithm_t.CRC32) r; RegisterAction<bit<32>, bit<32>, bit<32>>(r) ra = { void apply(inout bit<32> v) { } };"},
			"", "", decl, "RegisterAction needs a Register instance"},
		{"DirectRegisterAction on a Register", tnaCase{igDecls: reg + "DirectRegisterAction<bit<32>, bit<32>>(r) ra = { void apply(inout bit<32> v) { } };"},
			"", "", decl, "DirectRegisterAction needs a DirectRegister instance"},
		{"Hash CUSTOM with a non-polynomial", tnaCase{igDecls: reg + "Hash<bit<16>>(HashAlgorithm_t.CUSTOM, r) h;"}, "", "", decl, "expected a CRCPolynomial instance"},
		{"RegisterAction without apply", tnaCase{igDecls: reg + "RegisterAction<bit<32>, bit<32>, bit<32>>(r) ra;"}, "", "", decl, "needs an apply method"},
		{"execute_log", tnaCase{igDecls: ra, igBody: "hdr.h.d = ra.execute_log();"}, "", "", body, "RegisterAction has no method execute_log"},
		{"wide register", tnaCase{igDecls: "Register<bit<128>, bit<32>>(4) r;"}, "", "", decl, "register cells must be bit<W> or a struct"},
		{"named argument in a call", tnaCase{igDecls: ra, igBody: "hdr.h.d = ra.execute(index = 1);"}, "", "", body, "named arguments are only supported in extern instantiations"},
		{"no ig_intr_md", tnaCase{}, "pk.extract(ig_intr_md); ", "", "test.p4:8:1:", "must extract ingress_intrinsic_metadata_t first"},
		{"no port metadata", tnaCase{}, "pk.advance(PORT_METADATA_SIZE); ", "", "test.p4:8:1:", "must consume the port metadata"},
		{"advance by bits", tnaCase{}, "pk.advance(PORT_METADATA_SIZE)", "pk.advance(12)", "test.p4:9:", "advance by 12 bits: this target advances by whole bytes"},
		{"two pipes", tnaCase{}, "Switch(pipe) main;", "Switch(pipe, pipe) main;", "test.p4:", "Switch takes one Pipeline on this target"},
		{"blocks swapped", tnaCase{}, "Pipeline(IP(), Ing(),", "Pipeline(Ing(), IP(),", "test.p4:", "(ingress parser) must be a parser"},
		{"two architectures", tnaCase{}, "#include <tna.p4>", "#include <tna.p4>\n#include <v1model.p4>", "test.p4:3:1:", "already includes <tna.p4>"},
		{"t2na", tnaCase{}, "#include <tna.p4>", "#include <t2na.p4>", "test.p4:2:1:", "#include <t2na.p4>: only <core.p4>, <v1model.p4>, <tna.p4>"},
		{"wide field read", tnaCase{igBody: "hdr.h.e = hdr.w.x;"}, "struct headers { h_t h; }", "header w_t { bit<128> x; } struct headers { h_t h; w_t w; }",
			body, "w_t.x is bit<128>: this target computes with up to 64 bits"},
		{"wide controller header field", tnaCase{}, "struct headers { h_t h; }", "@controller_header(\"packet_in\") header pin_h { bit<128> x; } struct headers { h_t h; pin_h pin; }",
			"test.p4:8:", "controller header pin_h: field x is bit<128>"},
		{"sub-control applied twice", tnaCase{top: "control X(inout h_t h) { apply { } }", igDecls: "X() x; h_t tmp;", igBody: "x.apply(hdr.h); x.apply(tmp);"},
			"", "", body, "x is applied again with other arguments"},
		{"sub-parser in a control", tnaCase{top: "parser SP(packet_in pk) { state start { transition accept; } }", igDecls: "SP() sp;"},
			"", "", decl, "parser SP can only be instantiated in a parser"},
		{"Meter color-aware", tnaCase{igDecls: "Meter<bit<32>>(4, MeterType_t.PACKETS) m;", igBody: "hdr.h.a = m.execute(0, MeterColor_t.GREEN);"},
			"", "", body, "Meter.execute takes (index) on this target"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := tc.c.src()
			if tc.old != "" {
				if !strings.Contains(src, tc.old) {
					t.Fatalf("template lacks %q", tc.old)
				}
				src = strings.Replace(src, tc.old, tc.new, 1)
			}
			_, err := Compile("test.p4", []byte(src))
			wantErrAt(t, err, tc.reason)
			wantErrAt(t, err, tc.where)
		})
	}
}
