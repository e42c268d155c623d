package p4rtc

import (
	"bytes"
	"strings"
	"testing"

	p4cfg "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4 "github.com/p4lang/p4runtime/go/p4/v1"
)

// testInfo is a small P4Info in the shape p4c writes for v1model.
func testInfo() *p4cfg.P4Info {
	pre := func(id uint32, name, alias string) *p4cfg.Preamble {
		return &p4cfg.Preamble{Id: id, Name: name, Alias: alias}
	}
	bits := func(w int32) *p4cfg.P4DataTypeSpec {
		return &p4cfg.P4DataTypeSpec{TypeSpec: &p4cfg.P4DataTypeSpec_Bitstring{
			Bitstring: &p4cfg.P4BitstringLikeTypeSpec{TypeSpec: &p4cfg.P4BitstringLikeTypeSpec_Bit{Bit: &p4cfg.P4BitTypeSpec{Bitwidth: w}}}}}
	}
	return &p4cfg.P4Info{
		Tables: []*p4cfg.Table{{
			Preamble: pre(1001, "Ingress.forward", "forward"),
			MatchFields: []*p4cfg.MatchField{{Id: 1, Name: "hdr.ethernet.dst_addr", Bitwidth: 48,
				Match: &p4cfg.MatchField_MatchType_{MatchType: p4cfg.MatchField_EXACT}}},
			Size: 1024,
		}, {
			Preamble: pre(1002, "Ingress.acl", ""),
			MatchFields: []*p4cfg.MatchField{{Id: 1, Name: "port", Bitwidth: 9,
				Match: &p4cfg.MatchField_MatchType_{MatchType: p4cfg.MatchField_TERNARY}}},
		}},
		Actions: []*p4cfg.Action{
			{Preamble: pre(2001, "Ingress.set_egress", "set_egress"), Params: []*p4cfg.Action_Param{{Id: 1, Name: "port", Bitwidth: 9}}},
			{Preamble: pre(2002, "Ingress.drop", "drop")},
			{Preamble: pre(2003, "Egress.drop", "drop")},
		},
		Registers: []*p4cfg.Register{{Preamble: pre(3001, "Ingress.steer_mode", "steer_mode"), TypeSpec: bits(8), Size: 1}},
		Counters:  []*p4cfg.Counter{{Preamble: pre(4001, "Ingress.stats", "stats"), Size: 16}},
		ControllerPacketMetadata: []*p4cfg.ControllerPacketMetadata{{
			Preamble: pre(5001, "packet_out", "packet_out"),
			Metadata: []*p4cfg.ControllerPacketMetadata_Metadata{{Id: 1, Name: "egress_port", Bitwidth: 9}},
		}},
	}
}

func TestSchemaResolvesByNameAliasAndSuffix(t *testing.T) {
	s, err := NewSchema(testInfo())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Ingress.forward", "forward"} {
		tb, err := s.Table(name)
		if err != nil || tb.GetPreamble().GetId() != 1001 {
			t.Fatalf("%s: %v %v", name, tb, err)
		}
	}
	if tb, err := s.Table("acl"); err != nil || tb.GetPreamble().GetId() != 1002 {
		t.Fatalf("suffix without alias: %v %v", tb, err)
	}
	if _, err := s.Action("drop"); err == nil || !strings.Contains(err.Error(), "ambiguous") {
		t.Fatalf("ambiguous alias: %v", err)
	}
	if a, err := s.Action("Egress.drop"); err != nil || a.GetPreamble().GetId() != 2003 {
		t.Fatalf("full name of an ambiguous alias: %v %v", a, err)
	}
	if _, err := s.Register("nope"); err == nil || !strings.Contains(err.Error(), `no register named "nope"`) {
		t.Fatalf("missing: %v", err)
	}
	if got := s.Name(3001); got != "Ingress.steer_mode" {
		t.Fatalf("Name(3001) = %q", got)
	}
}

func TestTableEntryChecksEverything(t *testing.T) {
	s, _ := NewSchema(testInfo())
	mac := []byte{0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 1} // over-long but the value fits 48 bits
	e, err := s.TableEntry("forward", []Match{Exact("hdr.ethernet.dst_addr", mac)}, "set_egress", P("port", 3))
	if err != nil {
		t.Fatal(err)
	}
	if e.GetTableId() != 1001 || e.GetMatch()[0].GetFieldId() != 1 {
		t.Fatalf("ids: %v", e)
	}
	if v := e.GetMatch()[0].GetExact().GetValue(); !bytes.Equal(v, []byte{2, 0, 0, 0, 0, 1}) {
		t.Fatalf("match value not canonical: %x", v)
	}
	a := e.GetAction().GetAction()
	if a.GetActionId() != 2001 || !bytes.Equal(a.GetParams()[0].GetValue(), []byte{3}) {
		t.Fatalf("action: %v", a)
	}
	bad := []struct {
		name string
		err  func() error
		want string
	}{
		{"unknown field", func() error {
			_, err := s.TableEntry("forward", []Match{Exact("hdr.nope", []byte{1})}, "set_egress", P("port", 1))
			return err
		}, `no match field "hdr.nope"`},
		{"wrong kind", func() error {
			_, err := s.TableEntry("forward", []Match{LPM("hdr.ethernet.dst_addr", []byte{1}, 8)}, "set_egress", P("port", 1))
			return err
		}, "match kind is EXACT"},
		{"too wide", func() error {
			_, err := s.TableEntry("forward", []Match{Exact("hdr.ethernet.dst_addr", make([]byte, 6))}, "set_egress", P("port", 512))
			return err
		}, "does not fit in 9 bits"},
		{"missing param", func() error {
			_, err := s.TableEntry("forward", nil, "set_egress")
			return err
		}, `parameter "port" not given`},
		{"unknown param", func() error {
			_, err := s.TableEntry("forward", nil, "set_egress", P("port", 1), P("vlan", 2))
			return err
		}, `no parameter "vlan"`},
	}
	for _, b := range bad {
		if err := b.err(); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: got %v, want %q", b.name, err, b.want)
		}
	}
	if tb, _ := s.Table("acl"); !NeedsPriority(tb) {
		t.Error("ternary table needs a priority")
	}
}

func TestReadsAndPacketOut(t *testing.T) {
	s, _ := NewSchema(testInfo())
	q, err := s.RegisterRead("steer_mode", -1)
	if err != nil || q.GetRegisterEntry().GetRegisterId() != 3001 || q.GetRegisterEntry().GetIndex() != nil {
		t.Fatalf("wildcard register read: %v %v", q, err)
	}
	q, _ = s.CounterRead("stats", 7)
	if q.GetCounterEntry().GetIndex().GetIndex() != 7 {
		t.Fatalf("counter read: %v", q)
	}
	md, err := s.PacketOutMetadata(P("egress_port", 2))
	if err != nil || len(md) != 1 || md[0].GetMetadataId() != 1 || !bytes.Equal(md[0].GetValue(), []byte{2}) {
		t.Fatalf("packet out: %v %v", md, err)
	}
	if _, err := s.PacketOutMetadata(P("egress_port", 600)); err == nil {
		t.Fatal("600 fits in 9 bits?")
	}
	if w := RegisterWidth(s.info.GetRegisters()[0]); w != 8 {
		t.Fatalf("width %d", w)
	}
	_ = p4.Update_INSERT
}

func TestCanonicalAndUint(t *testing.T) {
	cases := []struct {
		in    []byte
		width int
		want  []byte
		ok    bool
	}{
		{[]byte{0, 0, 5}, 8, []byte{5}, true},
		{[]byte{}, 8, []byte{0}, true},
		{[]byte{0, 0}, 8, []byte{0}, true},
		{[]byte{1, 0}, 8, nil, false},
		{[]byte{1, 0xff}, 9, []byte{1, 0xff}, true},
		{[]byte{2, 0}, 9, nil, false},
	}
	for _, c := range cases {
		got, err := Canonical(c.in, c.width)
		if (err == nil) != c.ok || !bytes.Equal(got, c.want) {
			t.Errorf("Canonical(%x, %d) = %x, %v", c.in, c.width, got, err)
		}
	}
	for _, v := range []uint64{0, 1, 255, 256, 1 << 40, ^uint64(0)} {
		got, err := ToUint(Uint(v))
		if err != nil || got != v {
			t.Errorf("round trip %d: %d %v", v, got, err)
		}
	}
	if _, err := ToUint(make([]byte, 9)); err != nil {
		t.Errorf("nine zero bytes are 0: %v", err)
	}
	if _, err := ToUint([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0}); err == nil {
		t.Error("65-bit value accepted")
	}
}
