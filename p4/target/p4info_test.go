package target

import (
	"bytes"
	"os"
	"strings"
	"testing"

	configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

// TestP4InfoMatchesP4c checks names and IDs against P4Info files p4c
// generated for the p4lang tutorials' basic.p4 (same names as
// basic_router.p4): these numbers come from p4c, not from this code.
func TestP4InfoMatchesP4c(t *testing.T) {
	p := mustCompileFile(t, "../testdata/basic_router.p4")
	info := p.P4Info()
	want := map[string]uint32{
		"MyIngress.ipv4_lpm":     37375156,
		"MyIngress.ipv4_forward": 28792405,
		"MyIngress.drop":         25652968,
		"NoAction":               21257015,
	}
	got := map[string]uint32{}
	for _, tb := range info.Tables {
		got[tb.Preamble.Name] = tb.Preamble.Id
	}
	for _, a := range info.Actions {
		got[a.Preamble.Name] = a.Preamble.Id
	}
	for n, id := range want {
		if got[n] != id {
			t.Errorf("%s: id %d, p4c gives %d", n, got[n], id)
		}
	}
	tb := info.Tables[0]
	if tb.Preamble.Alias != "ipv4_lpm" || tb.Size != 1024 || len(tb.MatchFields) != 1 ||
		tb.MatchFields[0].Name != "hdr.ipv4.dstAddr" || tb.MatchFields[0].Bitwidth != 32 ||
		tb.MatchFields[0].GetMatchType() != configv1.MatchField_LPM {
		t.Errorf("table %v", tb)
	}
	// Actions in declaration order (NoAction from core.p4 first), as p4c.
	var names []string
	for _, a := range info.Actions {
		names = append(names, a.Preamble.Name)
	}
	if strings.Join(names, ",") != "NoAction,MyIngress.drop,MyIngress.ipv4_forward" {
		t.Errorf("actions %v", names)
	}
	fwd := info.Actions[2]
	if len(fwd.Params) != 2 || fwd.Params[0].Name != "dstAddr" || fwd.Params[0].Bitwidth != 48 ||
		fwd.Params[1].Id != 2 || fwd.Params[1].Bitwidth != 9 {
		t.Errorf("ipv4_forward params %v", fwd.Params)
	}
}

const infoProg = `#include <core.p4>
#include <v1model.p4>
@controller_header("packet_in")
header packet_in_header_t { bit<9> ingress_port; bit<7> _pad; }
@controller_header("packet_out")
header packet_out_header_t { bit<9> egress_port; bit<7> _pad; }
header h_t { bit<32> a; bit<16> b; }
struct headers { packet_in_header_t pin; packet_out_header_t pout; h_t h; }
struct meta_t { bit<8> x; }
parser P(packet_in pk, out headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout meta_t meta) { apply { } }
control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<48>>(16) r;
    counter(32, CounterType.bytes) c;
    direct_counter(CounterType.packets_and_bytes) dc;
    action drop() { mark_to_drop(sm); }
    @name(".global_act") action g(bit<16> v) { hdr.h.b = v; }
    @name("renamed") action loc() { }
    table t {
        key = { hdr.h.a[15:0]: exact; hdr.h.b: ternary @name("bee"); hdr.h.isValid(): exact; }
        actions = { drop; g; @defaultonly loc; @tableonly NoAction; }
        const default_action = loc();
        counters = dc;
        size = 64;
    }
    @id(0x12345) table u { key = { meta.x: exact; } actions = { drop; } }
    apply { t.apply(); u.apply(); }
}
control E(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action drop() { mark_to_drop(sm); }
    table t2 { key = { sm.egress_port: exact; } actions = { drop; } }
    apply { t2.apply(); }
}
control CC(inout headers hdr, inout meta_t meta) { apply { } }
control D(packet_out pk, in headers hdr) { apply { pk.emit(hdr.pin); pk.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
`

func TestP4InfoEntities(t *testing.T) {
	p := mustCompile(t, infoProg)
	info := p.P4Info()
	prefix := func(id uint32) uint32 { return id >> 24 }
	byName := map[string]*configv1.Preamble{}
	var pre []*configv1.Preamble
	for _, x := range info.Tables {
		pre = append(pre, x.Preamble)
	}
	for _, x := range info.Actions {
		pre = append(pre, x.Preamble)
	}
	for _, x := range info.Counters {
		pre = append(pre, x.Preamble)
	}
	for _, x := range info.DirectCounters {
		pre = append(pre, x.Preamble)
	}
	for _, x := range info.Registers {
		pre = append(pre, x.Preamble)
	}
	for _, x := range info.ControllerPacketMetadata {
		pre = append(pre, x.Preamble)
	}
	for _, x := range pre {
		byName[x.Name] = x
	}
	checks := []struct {
		name   string
		prefix uint32
		alias  string
	}{
		{"I.t", 0x02, "t"}, {"I.u", 0x02, "u"}, {"E.t2", 0x02, "t2"},
		{"I.drop", 0x01, "I.drop"}, {"E.drop", 0x01, "E.drop"}, {"global_act", 0x01, "global_act"},
		{"I.renamed", 0x01, "renamed"}, {"NoAction", 0x01, "NoAction"},
		{"I.c", 0x12, "c"}, {"I.dc", 0x13, "dc"}, {"I.r", 0x16, "r"},
		{"packet_in", 0x04, "packet_in"}, {"packet_out", 0x04, "packet_out"},
	}
	for _, c := range checks {
		x := byName[c.name]
		if x == nil {
			t.Errorf("no entity %s", c.name)
			continue
		}
		if prefix(x.Id) != c.prefix || x.Alias != c.alias {
			t.Errorf("%s: id 0x%08x alias %q, want prefix 0x%02x alias %q", c.name, x.Id, x.Alias, c.prefix, c.alias)
		}
	}
	// p4c hashes the controller header's type name: packet_in_header_t is
	// 81826293 in P4Info files p4c generated (e.g. SONiC PINS, Stratum).
	if id := byName["packet_in"].Id; id != 81826293 {
		t.Errorf("packet_in id %d, p4c gives 81826293", id)
	}
	if id := byName["I.u"].Id; id != 0x02012345 {
		t.Errorf("@id(0x12345) gave 0x%08x", id)
	}
	tb := info.Tables[0]
	if tb.Preamble.Name != "I.t" || tb.Size != 64 || tb.ConstDefaultActionId != byName["I.renamed"].Id ||
		len(tb.DirectResourceIds) != 1 || tb.DirectResourceIds[0] != byName["I.dc"].Id {
		t.Errorf("table t: %v", tb)
	}
	var mf []string
	for _, m := range tb.MatchFields {
		mf = append(mf, m.Name)
	}
	if strings.Join(mf, "|") != "hdr.h.a[15:0]|bee|hdr.h.isValid()" || tb.MatchFields[2].Bitwidth != 1 {
		t.Errorf("match fields %v", mf)
	}
	scopes := map[uint32]configv1.ActionRef_Scope{}
	for _, r := range tb.ActionRefs {
		scopes[r.Id] = r.Scope
	}
	if scopes[byName["I.renamed"].Id] != configv1.ActionRef_DEFAULT_ONLY || scopes[byName["NoAction"].Id] != configv1.ActionRef_TABLE_ONLY {
		t.Errorf("scopes %v", scopes)
	}
	if dc := info.DirectCounters[0]; dc.DirectTableId != tb.Preamble.Id || dc.Spec.Unit != configv1.CounterSpec_BOTH {
		t.Errorf("direct counter %v", dc)
	}
	if c := info.Counters[0]; c.Size != 32 || c.Spec.Unit != configv1.CounterSpec_BYTES {
		t.Errorf("counter %v", c)
	}
	if r := info.Registers[0]; r.Size != 16 || r.TypeSpec.GetBitstring().GetBit().GetBitwidth() != 48 {
		t.Errorf("register %v", r)
	}
	cpm := info.ControllerPacketMetadata[0]
	if len(cpm.Metadata) != 2 || cpm.Metadata[0].Name != "ingress_port" || cpm.Metadata[0].Bitwidth != 9 ||
		cpm.Preamble.Annotations[0] != `@controller_header("packet_in")` {
		t.Errorf("packet_in metadata %v", cpm)
	}
}

// TestFormatTextRoundTrip parses FormatText's output with the protobuf
// library's own text parser.
func TestFormatTextRoundTrip(t *testing.T) {
	for _, p := range []*Program{mustCompile(t, infoProg), mustCompileFile(t, "../testdata/basic_router.p4")} {
		info := p.P4Info()
		text := FormatText(info)
		back := &configv1.P4Info{}
		if err := prototext.Unmarshal(text, back); err != nil {
			t.Fatalf("%v\n%s", err, text)
		}
		if !proto.Equal(info, back) {
			t.Fatalf("round trip differs:\n%s", text)
		}
	}
	if !bytes.HasPrefix(FormatText(mustCompileFile(t, "../testdata/basic_router.p4").P4Info()),
		[]byte("pkg_info {\n  arch: \"v1model\"\n}\ntables {\n  preamble {\n    id: 37375156\n")) {
		t.Fatal("not in p4c's layout")
	}
}

// TestCommittedSwordboxP4InfoIsCurrent fails when p4/swordbox.p4info.txtpb
// differs from what `swordbox p4info p4/swordbox.p4` writes now.
func TestCommittedSwordboxP4InfoIsCurrent(t *testing.T) {
	committed, err := os.ReadFile("../swordbox.p4info.txtpb")
	if os.IsNotExist(err) {
		t.Skip("p4/swordbox.p4info.txtpb is not in the tree yet (generate it with: go run ./cmd/swordbox p4info p4/swordbox.p4)")
	}
	if err != nil {
		t.Fatal(err)
	}
	p := mustCompileFile(t, "../swordbox.p4")
	if fresh := FormatText(p.P4Info()); !bytes.Equal(fresh, committed) {
		t.Fatal("p4/swordbox.p4info.txtpb is stale: regenerate it with: go run ./cmd/swordbox p4info p4/swordbox.p4")
	}
}

// TestFormatTextMaps covers map fields (P4Info has none; P4Runtime's
// P4TypeInfo does) through a round trip with prototext.
func TestFormatTextMaps(t *testing.T) {
	ti := &configv1.P4TypeInfo{Headers: map[string]*configv1.P4HeaderTypeSpec{
		"b_t": {Members: []*configv1.P4HeaderTypeSpec_Member{{Name: "x", TypeSpec: &configv1.P4BitstringLikeTypeSpec{
			TypeSpec: &configv1.P4BitstringLikeTypeSpec_Bit{Bit: &configv1.P4BitTypeSpec{Bitwidth: 8}}}}}},
		"a_t": {},
	}}
	text := FormatText(ti)
	back := &configv1.P4TypeInfo{}
	if err := prototext.Unmarshal(text, back); err != nil || !proto.Equal(ti, back) {
		t.Fatalf("round trip: %v\n%s", err, text)
	}
	if !bytes.HasPrefix(text, []byte("headers {\n  key: \"a_t\"\n")) {
		t.Fatalf("map entries not in key order:\n%s", text)
	}
}
