package target

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// One TNA program per feature: the header h of featureTmpl's tests goes
// through an ingress and an egress whose declarations and apply bodies
// the case supplies (top: top-level declarations); the test checks the
// header that comes out.

const tnaTmpl = `#include <core.p4>
#include <tna.p4>
header h_t { bit<8> a; bit<8> b; bit<16> c; bit<32> d; bit<64> e; }
struct headers { h_t h; }
struct meta_t { bit<8> x; bit<32> z; }
struct pair_t { bit<32> lo; bit<32> hi; }
%s
parser IP(packet_in pk, out headers hdr, out meta_t md, out ingress_intrinsic_metadata_t ig_intr_md) {
    state start { pk.extract(ig_intr_md); pk.advance(PORT_METADATA_SIZE); transition parse_h; }
    state parse_h { pk.extract(hdr.h); transition accept; }
}
control Ing(inout headers hdr, inout meta_t md, in ingress_intrinsic_metadata_t ig_intr_md,
        in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
        inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
        inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
%s
    apply {
        ig_tm_md.ucast_egress_port = 1;
        ig_tm_md.bypass_egress = 1;
%s
    }
}
control IDep(packet_out pk, inout headers hdr, in meta_t md, in ingress_intrinsic_metadata_for_deparser_t dp) {
    apply { pk.emit(hdr); }
}
parser EP(packet_in pk, out headers hdr, out meta_t md, out egress_intrinsic_metadata_t eg_intr_md) {
    state start { pk.extract(eg_intr_md); pk.extract(hdr.h); transition accept; }
}
control Eg(inout headers hdr, inout meta_t md, in egress_intrinsic_metadata_t eg_intr_md,
        in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
        inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
        inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
%s
    apply {
%s
    }
}
control EDep(packet_out pk, inout headers hdr, in meta_t md, in egress_intrinsic_metadata_for_deparser_t dp) {
    apply { pk.emit(hdr); }
}
Pipeline(IP(), Ing(), IDep(), EP(), Eg(), EDep()) pipe;
Switch(pipe) main;
`

// tnaLine is the line of the ingress declarations in tnaTmpl when the
// top-level declarations take one line.
const tnaLine = 16

type tnaCase struct {
	top, igDecls, igBody, egDecls, egBody string
}

func (c tnaCase) src() string {
	return fmt.Sprintf(tnaTmpl, c.top, c.igDecls, c.igBody, c.egDecls, c.egBody)
}

// runTNA sends h (and a 4-byte tail) into port 3 and returns the header
// that leaves port 1 (nil: dropped).
func runTNA(tb testing.TB, d *Device, in hv) *hv {
	tb.Helper()
	outs := send(d, 3, append(in.bytes(), tail...))
	if len(outs) == 0 {
		return nil
	}
	if len(outs) != 1 || outs[0].port != 1 || len(outs[0].frame) != 20 || string(outs[0].frame[16:]) != string(tail) {
		tb.Fatalf("outputs %v", outs)
	}
	h := hvOf(outs[0].frame)
	return &h
}

// Bitwise references for the hash algorithms (independent of crc.go's
// tables): MSB-first CRCs and the reflected CRC-16/ARC.
func crcMSB(b []byte, w int, poly, init, xor uint64) uint64 {
	top, m := uint64(1)<<uint(w-1), mask(w)
	crc := init
	for _, x := range b {
		for i := 7; i >= 0; i-- {
			bit := uint64(x>>uint(i)) & 1
			fb := crc&top != 0
			crc = crc << 1 & m
			if fb != (bit == 1) {
				crc ^= poly
			}
		}
	}
	return (crc ^ xor) & m
}

func TestTNAFeatures(t *testing.T) {
	in := hv{a: 100, b: 7, c: 0x1234, d: 0x11223344, e: 0x0102030405060708}
	data := in.bytes()[4:8] // hdr.h.d
	pairReg := `Register<pair_t, bit<32>>(16, {1, 2}) r;
    RegisterAction<pair_t, bit<32>, bit<32>>(r) ra = {
        void apply(inout pair_t v, out bit<32> rv) { rv = v.hi; v.lo = v.lo + hdr.h.d; v.hi = v.hi + 1; }
    };`
	cases := []struct {
		name string
		c    tnaCase
		want func(h hv) *hv // nil result: dropped
	}{
		{"bypass_egress: ingress only", tnaCase{igBody: "hdr.h.a = 1;", egBody: "hdr.h.a = 2;"},
			func(h hv) *hv { h.a = 1; return &h }},
		{"egress runs without bypass_egress", tnaCase{igBody: "ig_tm_md.bypass_egress = 0; hdr.h.a = 1;",
			egBody: "hdr.h.a = hdr.h.a + 1; hdr.h.c = (bit<16>)eg_intr_md.egress_port; hdr.h.d = (bit<32>)eg_intr_md.pkt_length;"},
			func(h hv) *hv { h.a, h.c, h.d = 2, 1, 20; return &h }},
		{"ingress_port", tnaCase{igBody: "hdr.h.c = (bit<16>)ig_intr_md.ingress_port; hdr.h.b = (bit<8>)ig_intr_md.resubmit_flag;"},
			func(h hv) *hv { h.c, h.b = 3, 0; return &h }},
		{"drop_ctl bit 0 drops", tnaCase{igBody: "ig_dprsr_md.drop_ctl = 1;"}, func(h hv) *hv { return nil }},
		{"drop_ctl 0b110 does not drop", tnaCase{igBody: "ig_dprsr_md.drop_ctl = 6;"}, func(h hv) *hv { return &h }},
		{"egress drop_ctl drops", tnaCase{igBody: "ig_tm_md.bypass_egress = 0;", egBody: "eg_dprsr_md.drop_ctl = 1;"},
			func(h hv) *hv { return nil }},
		{"RegisterAction: 32-bit halves, return value, state kept", tnaCase{igDecls: pairReg,
			igBody: "hdr.h.c = (bit<16>)ra.execute(3); hdr.h.b = (bit<8>)ra.execute(3);"},
			func(h hv) *hv { h.c, h.b = 2, 3; return &h }},
		{"RegisterAction once per packet", tnaCase{igDecls: pairReg,
			igBody: "hdr.h.c = (bit<16>)ra.execute(3);"},
			func(h hv) *hv { h.c = 2; return &h }},
		{"RegisterAction without rv; Register.read and write", tnaCase{
			igDecls: `Register<bit<32>, _>(8) r;
    RegisterAction<bit<32>, _, bit<32>>(r) inc = { void apply(inout bit<32> v) { v = v + 5; } };`,
			igBody: "inc.execute(0); inc.execute(0); hdr.h.d = r.read(0); r.write(1, 32w7); hdr.h.a = (bit<8>)r.read(1);"},
			func(h hv) *hv { h.d, h.a = 10, 7; return &h }},
		{"RegisterAction index out of range: zero value, write dropped", tnaCase{
			igDecls: `Register<bit<32>, bit<32>>(8, 9) r;
    RegisterAction<bit<32>, bit<32>, bit<32>>(r) ra = { void apply(inout bit<32> v, out bit<32> rv) { v = v + 1; rv = v; } };`,
			igBody: "hdr.h.a = (bit<8>)ra.execute(100); hdr.h.b = (bit<8>)ra.execute(100); hdr.h.d = ra.execute(7);"},
			func(h hv) *hv { h.a, h.b, h.d = 1, 1, 10; return &h }},
		{"RegisterAction conditional update", tnaCase{
			igDecls: `Register<bit<32>, bit<32>>(8) r;
    RegisterAction<bit<32>, bit<32>, bit<1>>(r) cas = {
        void apply(inout bit<32> v, out bit<1> ok) { ok = 0; if (v == hdr.h.d) { v = 32w99; ok = 1; } }
    };`,
			igBody: "r.write(2, 32w0x11223344); hdr.h.a = (bit<8>)cas.execute(2); hdr.h.b = (bit<8>)cas.execute(2); hdr.h.d = r.read(2);"},
			func(h hv) *hv { h.a, h.b, h.d = 1, 0, 99; return &h }},
		{"RegisterParam", tnaCase{igDecls: `RegisterParam<bit<32>>(42) prm; Register<bit<32>, bit<32>>(1) r;
    RegisterAction<bit<32>, bit<32>, bit<32>>(r) ra = { void apply(inout bit<32> v, out bit<32> rv) { rv = v + prm.read(); } };`,
			igBody: "hdr.h.d = ra.execute(0);"}, func(h hv) *hv { h.d = 42; return &h }},
		{"Hash CRC32", tnaCase{igDecls: "Hash<bit<32>>(HashAlgorithm_t.CRC32) hs;", igBody: "hdr.h.d = hs.get({hdr.h.d});"},
			func(h hv) *hv { h.d = crc32.ChecksumIEEE(data); return &h }},
		{"Hash CRC32 into 16 bits", tnaCase{igDecls: "Hash<bit<16>>(HashAlgorithm_t.CRC32) hs;", igBody: "hdr.h.c = hs.get({hdr.h.d});"},
			func(h hv) *hv { h.c = uint16(crc32.ChecksumIEEE(data)); return &h }},
		{"Hash CRC16", tnaCase{igDecls: "Hash<bit<16>>(HashAlgorithm_t.CRC16) hs;", igBody: "hdr.h.c = hs.get({hdr.h.d});"},
			func(h hv) *hv { h.c = crc16ARC(data); return &h }},
		{"Hash CRC8", tnaCase{igDecls: "Hash<bit<8>>(HashAlgorithm_t.CRC8) hs;", igBody: "hdr.h.a = hs.get({hdr.h.d});"},
			func(h hv) *hv { h.a = uint8(crcMSB(data, 8, 0x07, 0, 0)); return &h }},
		{"Hash CRC64", tnaCase{igDecls: "Hash<bit<64>>(HashAlgorithm_t.CRC64) hs;", igBody: "hdr.h.e = hs.get({hdr.h.d});"},
			func(h hv) *hv { h.e = crcMSB(data, 64, 0x42f0e1eba9ea3693, 0, 0); return &h }},
		{"Hash IDENTITY", tnaCase{igDecls: "Hash<bit<16>>(HashAlgorithm_t.IDENTITY) hs;", igBody: "hdr.h.c = hs.get({hdr.h.a, hdr.h.b, hdr.h.d});"},
			func(h hv) *hv { h.c = 0x3344; return &h }},
		{"Hash CUSTOM (CRC-16/CCITT-FALSE)", tnaCase{igDecls: `CRCPolynomial<bit<16>>(16w0x1021, false, false, false, 16w0xffff, 16w0) poly;
    Hash<bit<16>>(HashAlgorithm_t.CUSTOM, poly) hs;`, igBody: "hdr.h.c = hs.get({hdr.h.d, hdr.h.a});"},
			func(h hv) *hv {
				h.c = uint16(crcMSB(append(append([]byte{}, data...), 100), 16, 0x1021, 0xffff, 0))
				return &h
			}},
		{"Checksum.update", tnaCase{igDecls: "Checksum() ck;", igBody: "hdr.h.c = ck.update({hdr.h.d, hdr.h.a, hdr.h.b});"},
			func(h hv) *hv { h.c = uint16(csum16([]byte{0x11, 0x22, 0x33, 0x44, 100, 7})); return &h }},
		{"sub-control with its own table", tnaCase{
			top:     `control Add(inout h_t h, in bit<8> k) { action add() { h.a = h.a + k; } table t { actions = { add; } default_action = add; } apply { t.apply(); } }`,
			igDecls: "Add() add1; Add() add2;", igBody: "add1.apply(hdr.h, 8w5); add2.apply(hdr.h, hdr.h.b);"},
			func(h hv) *hv { h.a = 112; return &h }},
		{"sub-control exit ends ingress", tnaCase{top: `control X(inout h_t h) { apply { h.a = 9; exit; } }`,
			igDecls: "X() x;", igBody: "x.apply(hdr.h); hdr.h.a = 10;"},
			func(h hv) *hv { h.a = 9; return &h }},
		{"Meter is GREEN until configured", tnaCase{igDecls: "Meter<bit<32>>(4, MeterType_t.BYTES) m;", igBody: "hdr.h.a = m.execute(2); hdr.h.b = m.execute(9);"},
			func(h hv) *hv { h.a, h.b = 0, 0; return &h }},
		{"DirectMeter in a table's action", tnaCase{igDecls: `DirectMeter(MeterType_t.PACKETS) dm;
    action color() { hdr.h.a = dm.execute(); }
    table t { key = { hdr.h.b : exact; } actions = { color; } meters = dm; const entries = { 7 : color(); } }`,
			igBody: "t.apply();"}, func(h hv) *hv { h.a = 0; return &h }},
		{"Random is bounded by its width", tnaCase{igDecls: "Random<bit<4>>() rnd;", igBody: "hdr.h.a = (bit<8>)rnd.get(); hdr.h.b = (bit<8>)rnd.get();"},
			nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := mustCompile(t, tc.c.src())
			d := NewDevice(p, Options{})
			got := runTNA(t, d, in)
			// Accessing a register twice for one packet is counted.
			twice := strings.Count(tc.c.igBody, "ra.execute") + strings.Count(tc.c.igBody, "r.read") +
				strings.Count(tc.c.igBody, "r.write") + strings.Count(tc.c.igBody, "inc.execute") + strings.Count(tc.c.igBody, "cas.execute")
			if st := d.Stats(); (st.RegisterReaccesses > 0) != (twice > 1) {
				t.Errorf("%d register re-accesses for %d accesses in the program", st.RegisterReaccesses, twice)
			}
			if tc.want == nil {
				if got == nil || got.a > 15 || got.b > 15 {
					t.Fatalf("got %+v", got)
				}
				return
			}
			want := tc.want(in)
			switch {
			case want == nil && got != nil:
				t.Fatalf("got %+v, want a drop", *got)
			case want != nil && got == nil:
				t.Fatalf("dropped, want %+v", *want)
			case want != nil && *got != *want:
				t.Fatalf("got %+v, want %+v", *got, *want)
			}
		})
	}
}

func TestTNADropsWithoutDestination(t *testing.T) {
	src := strings.Replace(tnaCase{}.src(), "ig_tm_md.ucast_egress_port = 1;", "if (hdr.h.a == 1) { ig_tm_md.ucast_egress_port = 1; }", 1)
	d := NewDevice(mustCompile(t, src), Options{})
	if got := runTNA(t, d, hv{a: 2}); got != nil {
		t.Fatalf("no ucast_egress_port written: got %+v, want a drop", *got)
	}
	if got := runTNA(t, d, hv{a: 1}); got == nil {
		t.Fatal("ucast_egress_port written: dropped")
	}
	if st := d.Stats(); st.In != 2 || st.Out != 1 || st.Dropped != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestTNARandomSeeded(t *testing.T) {
	p := mustCompile(t, tnaCase{igDecls: "Random<bit<32>>() rnd;", igBody: "hdr.h.d = rnd.get();"}.src())
	seq := func(seed uint64) []uint32 {
		d := NewDevice(p, Options{RandomSeed: seed})
		var out []uint32
		for i := 0; i < 4; i++ {
			out = append(out, runTNA(t, d, hv{}).d)
		}
		return out
	}
	a, b, c := seq(1), seq(1), seq(2)
	if fmt.Sprint(a) != fmt.Sprint(b) || fmt.Sprint(a) == fmt.Sprint(c) || a[0] == a[1] {
		t.Fatalf("seed 1: %v and %v, seed 2: %v", a, b, c)
	}
}

// Counters and registers through P4Runtime by their P4Info names.
func TestTNACounterAndRegisterEntities(t *testing.T) {
	p := mustCompile(t, tnaCase{
		igDecls: `Counter<bit<32>, bit<32>>(8, CounterType_t.PACKETS_AND_BYTES) ctr;
    Register<pair_t, bit<32>>(4, {5, 7}) r;
    RegisterAction<pair_t, bit<32>, bit<32>>(r) ra = { void apply(inout pair_t v, out bit<32> rv) { v.lo = v.lo + 1; rv = v.hi; } };`,
		igBody: "ctr.count(2); hdr.h.d = ra.execute(1);"}.src())
	d := NewDevice(p, Options{})
	runTNA(t, d, hv{})
	runTNA(t, d, hv{})
	var pk, by int64
	if err := d.ReadCounterEntries(&p4v1.CounterEntry{CounterId: counterID(t, p, "Ing.ctr"), Index: &p4v1.Index{Index: 2}},
		func(e *p4v1.CounterEntry) error { pk, by = e.Data.PacketCount, e.Data.ByteCount; return nil }); err != nil {
		t.Fatal(err)
	}
	if pk != 2 || by != 40 {
		t.Fatalf("counter: %d packets %d bytes, want 2 and 40 (the frames as received)", pk, by)
	}
	rid := registerID(t, p, "Ing.r")
	read := func(i int64) []uint64 {
		var got []uint64
		if err := d.ReadRegisterEntries(&p4v1.RegisterEntry{RegisterId: rid, Index: &p4v1.Index{Index: i}}, func(e *p4v1.RegisterEntry) error {
			for _, m := range e.Data.GetStruct().GetMembers() {
				v, _ := decodeBits(m.GetBitstring(), 32, "")
				got = append(got, v)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := read(1); fmt.Sprint(got) != "[7 7]" {
		t.Fatalf("register cell 1 = %v, want [7 7] (lo 5 + 2 packets, hi 7)", got)
	}
	if got := read(0); fmt.Sprint(got) != "[5 7]" {
		t.Fatalf("register cell 0 = %v, want the initial value [5 7]", got)
	}
	val := &p4v1.P4Data{Data: &p4v1.P4Data_Struct{Struct: &p4v1.P4StructLike{Members: []*p4v1.P4Data{
		{Data: &p4v1.P4Data_Bitstring{Bitstring: []byte{1}}}, {Data: &p4v1.P4Data_Bitstring{Bitstring: []byte{0x10, 0}}}}}}}
	if err := d.WriteRegisterEntry(&p4v1.RegisterEntry{RegisterId: rid, Index: &p4v1.Index{Index: 1}, Data: val}); err != nil {
		t.Fatal(err)
	}
	if got := runTNA(t, d, hv{}); got.d != 0x1000 {
		t.Fatalf("rv after a P4Runtime write: %#x, want 0x1000", got.d)
	}
	if got := read(1); fmt.Sprint(got) != "[2 4096]" {
		t.Fatalf("register cell 1 = %v", got)
	}
}

var _ = binary.BigEndian

func TestTNADirectRegister(t *testing.T) {
	p := mustCompile(t, tnaCase{igDecls: `DirectRegister<bit<32>>(32w10) dr;
    DirectRegisterAction<bit<32>, bit<32>>(dr) dra = { void apply(inout bit<32> v, out bit<32> rv) { v = v + 1; rv = v; } };
    action count() { hdr.h.d = dra.execute(); }
    action other() { hdr.h.d = dra.execute(); }
    table t { key = { hdr.h.a : exact; } actions = { count; } registers = dr; const entries = { 100 : count(); 101 : count(); } }
    table u { key = { hdr.h.a : exact; } actions = { other; } default_action = other; }`,
		igBody: "if (hdr.h.b == 0) { t.apply(); } else { u.apply(); }"}.src())
	d := NewDevice(p, Options{})
	for i, c := range []struct {
		a, b uint8
		want uint32
	}{
		{100, 0, 11}, {100, 0, 12}, {101, 0, 11}, {100, 0, 13},
		{102, 0, 5},  // a miss: NoAction, d unchanged
		{100, 1, 11}, // another table's action: the initial value, nothing written
		{100, 0, 14},
	} {
		got := runTNA(t, d, hv{a: c.a, b: c.b, d: 5})
		if got == nil || got.d != c.want {
			t.Fatalf("packet %d (a=%d b=%d): got %+v, want d=%d", i, c.a, c.b, got, c.want)
		}
	}
}
