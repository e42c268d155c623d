package target

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// One program per language feature: a 16-byte header h (a: 8, b: 8, c: 16,
// d: 32, e: 64 bits) goes through an ingress whose declarations and apply
// body the test case supplies; the test checks the header that comes out.

const featureTmpl = `#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; bit<16> c; bit<32> d; bit<64> e; }
header g_t { bit<8> v; }
struct headers { h_t h; g_t g; }
struct meta_t { bit<8> x; bit<16> y; bit<32> z; bool f; }
parser P(packet_in pk, out headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout meta_t meta) { apply { } }
control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
%s
    apply {
        sm.egress_spec = 1;
%s
    }
}
control E(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout meta_t meta) { apply { } }
control D(packet_out pk, in headers hdr) { apply { pk.emit(hdr.h); pk.emit(hdr.g); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
`

// bodyLine is the line of the first body line in featureTmpl when the
// declarations take one line.
const bodyLine = 15

type hv struct {
	a, b uint8
	c    uint16
	d    uint32
	e    uint64
}

func (h hv) bytes() []byte {
	b := make([]byte, 16)
	b[0], b[1] = h.a, h.b
	binary.BigEndian.PutUint16(b[2:], h.c)
	binary.BigEndian.PutUint32(b[4:], h.d)
	binary.BigEndian.PutUint64(b[8:], h.e)
	return b
}

func hvOf(b []byte) hv {
	return hv{a: b[0], b: b[1], c: binary.BigEndian.Uint16(b[2:]), d: binary.BigEndian.Uint32(b[4:]), e: binary.BigEndian.Uint64(b[8:])}
}

func featureProgram(tb testing.TB, decls, body string) *Program {
	tb.Helper()
	return mustCompile(tb, fmt.Sprintf(featureTmpl, decls, body))
}

var tail = []byte("TAIL")

// runFeature returns the output (nil when dropped).
func runFeature(tb testing.TB, d *Device, in hv) []byte {
	tb.Helper()
	outs := send(d, 3, append(in.bytes(), tail...))
	if len(outs) == 0 {
		return nil
	}
	if len(outs) != 1 || outs[0].port != 1 {
		tb.Fatalf("outputs %v", outs)
	}
	return outs[0].frame
}

func crc16ARC(b []byte) uint16 {
	// Bitwise reference (independent of the table-driven one): reflected
	// polynomial 0xA001, init 0.
	var crc uint16
	for _, x := range b {
		crc ^= uint16(x)
		for i := 0; i < 8; i++ {
			if crc&1 != 0 {
				crc = crc>>1 ^ 0xA001
			} else {
				crc >>= 1
			}
		}
	}
	return crc
}

func TestFeatures(t *testing.T) {
	in := hv{a: 100, b: 7, c: 0x1234, d: 0x11223344, e: 0xffffffffffffffff}
	be32 := func(v uint32) []byte { b := make([]byte, 4); binary.BigEndian.PutUint32(b, v); return b }
	cases := []struct {
		name  string
		decls string
		body  string
		in    hv
		want  func(h hv) hv // nil: dropped
	}{
		{"add wraps", "", "hdr.h.a = hdr.h.a + 8w200;", in, func(h hv) hv { h.a = 44; return h }},
		{"sub wraps", "", "hdr.h.b = hdr.h.b - 8;", in, func(h hv) hv { h.b = 255; return h }},
		{"mul wraps", "", "hdr.h.c = hdr.h.c * 16;", in, func(h hv) hv { h.c = 0x2340; return h }},
		{"64-bit wrap", "", "hdr.h.e = hdr.h.e + 1;", in, func(h hv) hv { h.e = 0; return h }},
		{"div mod", "", "hdr.h.a = hdr.h.a / 7; hdr.h.b = hdr.h.b % 4;", in, func(h hv) hv { h.a, h.b = 14, 3; return h }},
		{"div by zero is 0", "", "hdr.h.a = hdr.h.a / (hdr.h.b - 7);", in, func(h hv) hv { h.a = 0; return h }},
		{"unary minus", "", "hdr.h.b = -hdr.h.b;", in, func(h hv) hv { h.b = 249; return h }},
		{"saturating", "", "hdr.h.a = hdr.h.a |+| 8w200; hdr.h.b = hdr.h.b |-| 8w9;", in, func(h hv) hv { h.a, h.b = 255, 0; return h }},
		{"slice read", "", "hdr.h.a = hdr.h.d[15:8];", in, func(h hv) hv { h.a = 0x33; return h }},
		{"slice write", "", "hdr.h.d[7:0] = 0xff; hdr.h.d[31:28] = 4w0;", in, func(h hv) hv { h.d = 0x012233ff; return h }},
		{"slice of slice", "", "hdr.h.a = (bit<8>)hdr.h.d[23:8][11:4];", in, func(h hv) hv { h.a = 0x23; return h }},
		{"concat", "", "hdr.h.d = hdr.h.a ++ hdr.h.b ++ hdr.h.c;", in, func(h hv) hv { h.d = 0x64071234; return h }},
		{"concat literals", "", "hdr.h.d = 7w0 ++ 1w1 ++ hdr.h.c ++ hdr.h.b;", in, func(h hv) hv { h.d = 0x01123407; return h }},
		{"cast truncates", "", "hdr.h.a = (bit<8>)hdr.h.d; hdr.h.c = (bit<16>)hdr.h.e;", in, func(h hv) hv { h.a, h.c = 0x44, 0xffff; return h }},
		{"cast widens", "", "hdr.h.e = (bit<64>)hdr.h.d;", in, func(h hv) hv { h.e = 0x11223344; return h }},
		{"cast bool", "", "hdr.h.a = (bit<8>)((bit<1>)(hdr.h.b == 7));", in, func(h hv) hv { h.a = 1; return h }},
		{"shift const", "", "hdr.h.c = hdr.h.c << 4; hdr.h.d = hdr.h.d >> 8;", in, func(h hv) hv { h.c, h.d = 0x2340, 0x112233; return h }},
		{"shift var", "", "hdr.h.d = hdr.h.d >> hdr.h.b; hdr.h.e = hdr.h.e << hdr.h.a;", in, func(h hv) hv { h.d, h.e = 0x11223344>>7, 0; return h }},
		{"shift past width", "", "hdr.h.a = hdr.h.a << 8;", in, func(h hv) hv { h.a = 0; return h }},
		{"bitwise and p4c precedence", "", "hdr.h.a = ~hdr.h.a & 0x0f | 0x80 ^ 0x01;", in, func(h hv) hv { h.a = (^uint8(100) & 0x0f) | 0x81; return h }},
		{"& binds tighter than ==", "", "if (hdr.h.b & 3 == 3) { hdr.h.a = 1; } else { hdr.h.a = 2; }", in, func(h hv) hv { h.a = 1; return h }},
		{"comparisons", "", "if (hdr.h.a > hdr.h.b && hdr.h.b >= 7 && hdr.h.c != 0 && !(hdr.h.d < 5) && hdr.h.b <= 7) { hdr.h.a = 1; }", in, func(h hv) hv { h.a = 1; return h }},
		{"or short-circuit", "", "if (hdr.h.a == 1 || hdr.h.b == 7) { hdr.h.a = 3; }", in, func(h hv) hv { h.a = 3; return h }},
		{"conditional expr", "", "hdr.h.a = hdr.h.b == 7 ? 8w9 : hdr.h.a;", in, func(h hv) hv { h.a = 9; return h }},
		{"else if chain", "", "if (hdr.h.a == 1) { hdr.h.b = 1; } else if (hdr.h.a == 100) { hdr.h.b = 2; } else { hdr.h.b = 3; }", in, func(h hv) hv { h.b = 2; return h }},
		{"locals", "", "bit<16> t = hdr.h.c; t = t + 1; hdr.h.c = t; bool q = t == 0x1235; if (q) { hdr.h.a = 0; }", in, func(h hv) hv { h.c, h.a = 0x1235, 0; return h }},
		{"constants", "const bit<8> K = 0x10; const bit<8> K2 = K + 2;", "hdr.h.a = K2;", in, func(h hv) hv { h.a = 0x12; return h }},
		{"metadata zeroed", "", "hdr.h.d = meta.z; meta.f = hdr.h.a == 100; if (meta.f) { hdr.h.b = 0; }", in, func(h hv) hv { h.d, h.b = 0, 0; return h }},
		{"setValid emits", "", "hdr.g.setValid(); hdr.g.v = 0x55;", in, nil},
		{"setInvalid", "", "hdr.h.setInvalid();", in, nil},
		{"isValid", "", "if (hdr.h.isValid() && !hdr.g.isValid()) { hdr.h.a = 1; }", in, func(h hv) hv { h.a = 1; return h }},
		{"mark_to_drop", "", "mark_to_drop(sm);", in, nil},
		{"exit", "", "hdr.h.a = 5; exit; hdr.h.a = 6;", in, func(h hv) hv { h.a = 5; return h }},
		{"action return", "action r() { hdr.h.a = 1; return; hdr.h.a = 2; }", "r(); hdr.h.b = 1;", in, func(h hv) hv { h.a, h.b = 1, 1; return h }},
		{"action exit", "action x() { hdr.h.a = 1; exit; }", "x(); hdr.h.b = 1;", in, func(h hv) hv { h.a = 1; return h }},
		{"action inout", "action inc(inout bit<8> v, in bit<8> by) { v = v + by; }", "inc(hdr.h.a, 5); inc(hdr.h.b, hdr.h.a);", in, func(h hv) hv { h.a, h.b = 105, 112; return h }},
		{"action out", "action get(out bit<16> o) { o = 0xbeef; }", "get(hdr.h.c);", in, func(h hv) hv { h.c = 0xbeef; return h }},
		{"action data direct", "action set(bit<32> v) { hdr.h.d = v; }", "set(32w7);", in, func(h hv) hv { h.d = 7; return h }},
		{"struct copy", "", "hdr.h = hdr.h; meta.x = hdr.h.a; hdr.h.b = meta.x;", in, func(h hv) hv { h.b = 100; return h }},
		{"header copy", "", "hdr.g.setValid(); hdr.g.v = 1; hdr.g = hdr.g; hdr.h.a = hdr.g.v;", in, nil},
		{"parser_error NoError", "", "if (sm.parser_error == error.NoError) { hdr.h.a = 1; }", in, func(h hv) hv { h.a = 1; return h }},
		{"identity hash", "", "hash(hdr.h.d, HashAlgorithm.identity, 32w0, { hdr.h.c }, 32w0);", in, func(h hv) hv { h.d = 0x1234; return h }},
		{"crc32 hash", "", "hash(hdr.h.d, HashAlgorithm.crc32, 32w0, { hdr.h.d, hdr.h.c }, 32w0);", in,
			func(h hv) hv { h.d = crc32.ChecksumIEEE(append(be32(0x11223344), 0x12, 0x34)); return h }},
		{"crc16 hash base and max", "", "hash(hdr.h.c, HashAlgorithm.crc16, 16w100, { hdr.h.a, hdr.h.b }, 32w1000);", in,
			func(h hv) hv { h.c = 100 + crc16ARC([]byte{100, 7})%1000; return h }},
		{"hash of non-byte-aligned data", "", "hash(hdr.h.d, HashAlgorithm.crc32, 32w0, { hdr.h.c[3:0], hdr.h.a }, 32w0);", in,
			func(h hv) hv { h.d = crc32.ChecksumIEEE([]byte{0x46, 0x40}); return h }},
		{"unchanged header passes through", "", "", in, func(h hv) hv { return h }},
		{"register read into header", "register<bit<32>>(1) r;", "r.read(hdr.h.d, 0);", in, func(h hv) hv { h.d = 0; return h }},
		{"checksum update into header", "", "update_checksum(true, { hdr.h.a, hdr.h.b }, hdr.h.c, HashAlgorithm.csum16);", in,
			func(h hv) hv { h.c = ^uint16(100<<8 | 7); return h }},
		{"emit twice", "", "", in, nil},
		{"log_msg ignored", "", `log_msg("hello {}", {hdr.h.a});`, in, func(h hv) hv { return h }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := fmt.Sprintf(featureTmpl, c.decls, c.body)
			if c.name == "emit twice" {
				src = strings.Replace(src, "pk.emit(hdr.h); pk.emit(hdr.g);", "pk.emit(hdr); pk.emit(hdr.h); pk.emit(hdr.h); pk.emit(hdr);", 1)
			}
			p := mustCompile(t, src)
			d := NewDevice(p, Options{})
			got := runFeature(t, d, c.in)
			switch c.name {
			case "setValid emits":
				want := append(append(c.in.bytes(), 0x55), tail...)
				if string(got) != string(want) {
					t.Fatalf("got % x, want % x", got, want)
				}
				return
			case "header copy":
				h := c.in
				h.a = 1
				want := append(append(h.bytes(), 1), tail...)
				if string(got) != string(want) {
					t.Fatalf("got % x, want % x", got, want)
				}
				return
			case "emit twice":
				h := c.in.bytes()
				want := append(append(append(append([]byte{}, h...), h...), h...), h...)
				if string(got) != string(append(want, tail...)) {
					t.Fatalf("got % x, want the header 4 times and the payload", got)
				}
				return
			case "setInvalid":
				if string(got) != string(tail) {
					t.Fatalf("got % x, want only the payload", got)
				}
				return
			}
			if c.want == nil {
				if got != nil {
					t.Fatalf("got % x, want dropped", got)
				}
				return
			}
			if got == nil {
				t.Fatal("dropped")
			}
			if len(got) != 16+len(tail) || string(got[16:]) != string(tail) {
				t.Fatalf("frame % x: header and payload do not line up", got)
			}
			if w := c.want(c.in); hvOf(got) != w {
				t.Fatalf("got %+v, want %+v", hvOf(got), w)
			}
		})
	}
}

func TestCRC16IsARC(t *testing.T) {
	// The CRC catalogue's check value of CRC-16/ARC.
	if got := crc16([]byte("123456789")); got != 0xBB3D {
		t.Fatalf("crc16(123456789) = 0x%04x, want 0xbb3d", got)
	}
	if crc16ARC([]byte("123456789")) != 0xBB3D {
		t.Fatal("bitwise reference is wrong")
	}
}

func TestRegistersAndCountersPersist(t *testing.T) {
	decls := `register<bit<32>>(8) r; counter(4, CounterType.packets_and_bytes) c;`
	body := `bit<32> v; r.read(v, (bit<32>)hdr.h.a); v = v + 1; r.write((bit<32>)hdr.h.a, v); hdr.h.d = v; c.count(2);
        r.read(v, 32w100); hdr.h.c = (bit<16>)v; r.write(32w100, 5);`
	p := featureProgram(t, decls, body)
	d := NewDevice(p, Options{})
	for i := 1; i <= 3; i++ {
		got := hvOf(runFeature(t, d, hv{a: 3}))
		if got.d != uint32(i) || got.c != 0 {
			t.Fatalf("packet %d: d=%d c=%d, want %d and 0 (out-of-range read is 0)", i, got.d, got.c, i)
		}
	}
	var cells []uint64
	rid := registerID(t, p, "I.r")
	if err := d.ReadRegisterEntries(&p4v1.RegisterEntry{RegisterId: rid}, func(e *p4v1.RegisterEntry) error {
		v, _ := decodeBits(e.Data.GetBitstring(), 32, "")
		cells = append(cells, v)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(cells) != 8 || cells[3] != 3 {
		t.Fatalf("register cells %v, want 8 cells with [3] = 3", cells)
	}
	var cd *p4v1.CounterData
	if err := d.ReadCounterEntries(&p4v1.CounterEntry{CounterId: counterID(t, p, "I.c"), Index: &p4v1.Index{Index: 2}},
		func(e *p4v1.CounterEntry) error { cd = e.Data; return nil }); err != nil {
		t.Fatal(err)
	}
	if cd.PacketCount != 3 || cd.ByteCount != 3*20 {
		t.Fatalf("counter %v, want 3 packets, 60 bytes", cd)
	}
}

// Tables: ternary priorities, const entries, hit/miss, switch on action_run.
const tableDecls = `
    action set_a(bit<8> v) { hdr.h.a = v; }
    action set_b(bit<8> v) { hdr.h.b = v; }
    action nop() { }
    table tern {
        key = { hdr.h.c: ternary; hdr.h.a: exact; }
        actions = { set_a; set_b; nop; }
        default_action = nop();
    }
    table consts {
        key = { hdr.h.d: lpm; hdr.h.c: ternary; }
        actions = { set_a; set_b; @defaultonly nop; }
        const entries = {
            (0x11220000 &&& 0xffff0000, _): set_a(1);
            (0x11000000 &&& 0xff000000, 0x1204): set_a(2);
            (_, 4 &&& 0xf): set_a(3);
        }
        const default_action = nop();
    }`

func TestTablesTernaryAndConstEntries(t *testing.T) {
	body := `if (tern.apply().hit) { hdr.h.e = 1; } else { hdr.h.e = 2; }
        switch (consts.apply().action_run) {
            set_a: { hdr.h.d = 0xaaaa; }
            default: { hdr.h.d = 0xdddd; }
        }`
	p := featureProgram(t, tableDecls, body)
	d := NewDevice(p, Options{})
	tid := tableID(t, p, "I.tern")
	setA, setB := actionID(t, p, "I.set_a"), actionID(t, p, "I.set_b")
	ins := func(c, m []byte, a byte, prio int32, act *p4v1.TableAction) {
		t.Helper()
		if err := d.WriteTableEntry(p4v1.Update_INSERT, &p4v1.TableEntry{TableId: tid, Priority: prio,
			Match: []*p4v1.FieldMatch{ternary(1, c, m), exact(2, []byte{a})}, Action: act}); err != nil {
			t.Fatal(err)
		}
	}
	ins([]byte{0x12, 0x00}, []byte{0xff, 0x00}, 100, 10, act(setB, []byte{0x10}))
	ins([]byte{0x12, 0x34}, []byte{0xff, 0xff}, 100, 20, act(setB, []byte{0x20}))
	ins([]byte{0x00, 0x04}, []byte{0x00, 0x0f}, 100, 5, act(setB, []byte{0x30}))
	cases := []struct {
		in       hv
		a, b     uint8
		e        uint64
		d        uint32
		whatHits string
	}{
		// priority 20 beats 10 and 5; const entry /16 wins over /8.
		{hv{a: 100, b: 7, c: 0x1234, d: 0x11223344}, 1, 0x20, 1, 0xaaaa, "prio 20, lpm /16"},
		{hv{a: 100, b: 7, c: 0x1204, d: 0x11993344}, 2, 0x10, 1, 0xaaaa, "prio 10, lpm /8 with c=0x1204"},
		{hv{a: 100, b: 9, c: 0x0004, d: 0x22000000}, 3, 0x30, 1, 0xaaaa, "prio 5, ternary c low nibble 4"},
		{hv{a: 99, b: 6, c: 0x1235, d: 0x11993344}, 99, 6, 2, 0xdddd, "misses"},
	}
	for _, c := range cases {
		got := hvOf(runFeature(t, d, c.in))
		if got.a != c.a || got.b != c.b || got.e != c.e || got.d != c.d {
			t.Errorf("%s: got %+v, want a=%d b=%#x e=%d d=%#x", c.whatHits, got, c.a, c.b, c.e, c.d)
		}
	}
	// Const table: writes refused; its entries read back.
	cid := tableID(t, p, "I.consts")
	for _, ti := range p.P4Info().Tables {
		if ti.Preamble.Id == cid && (!ti.IsConstTable || !ti.HasInitialEntries || ti.ConstDefaultActionId == 0) {
			t.Errorf("P4Info of a const table: %v", ti)
		}
	}
	n := 0
	if err := d.ReadTableEntries(&p4v1.TableEntry{TableId: cid}, func(*p4v1.TableEntry) error { n++; return nil }); err != nil || n != 3 {
		t.Fatalf("const entries read: %d, %v; want 3", n, err)
	}
	err := d.WriteTableEntry(p4v1.Update_INSERT, &p4v1.TableEntry{TableId: cid, Priority: 1,
		Match: []*p4v1.FieldMatch{lpm(1, []byte{1, 0, 0, 0}, 8)}, Action: act(setA, []byte{1})})
	wantCode(t, err, "PermissionDenied")
	err = d.WriteTableEntry(p4v1.Update_MODIFY, &p4v1.TableEntry{TableId: cid, IsDefaultAction: true, Action: act(setA, []byte{1})})
	wantCode(t, err, "PermissionDenied")
}

func TestParserSelect(t *testing.T) {
	src := strings.Replace(featureTmpl, `state start { pk.extract(hdr.h); transition accept; }`, `
    state start {
        pk.extract(hdr.h);
        transition select(hdr.h.a, hdr.h.b) {
            (1, _): one;
            (2, 0x10 &&& 0xf0): two;
            (3, 5): reject;
            default: accept;
        }
    }
    state one { pk.extract(hdr.g); transition accept; }
    state two { verify(hdr.h.c == 0, error.HeaderTooShort); transition accept; }`, 1)
	src = fmt.Sprintf(src, "", `if (sm.parser_error == error.NoMatch) { hdr.h.c = 1; }
        if (sm.parser_error == error.HeaderTooShort) { hdr.h.c = 2; }
        if (sm.parser_error == error.PacketTooShort) { hdr.h.c = 3; }
        if (hdr.g.isValid()) { hdr.g.v = hdr.g.v + 1; }`)
	p := mustCompile(t, src)
	d := NewDevice(p, Options{})
	run := func(a, b uint8, c uint16, extra []byte) []byte {
		f := append(hv{a: a, b: b, c: c}.bytes(), extra...)
		outs := send(d, 3, f)
		if len(outs) != 1 {
			t.Fatalf("a=%d b=%d: %d outputs", a, b, len(outs))
		}
		return outs[0].frame
	}
	// (1, _): g extracted and incremented.
	if got := run(1, 99, 0, []byte{0x41, 0x42}); got[16] != 0x42 || got[17] != 0x42 || hvOf(got).c != 0 {
		t.Errorf("(1,_): % x", got)
	}
	// (1, _) but no byte left for g: PacketTooShort, g invalid.
	if got := run(1, 99, 0, nil); hvOf(got).c != 3 || len(got) != 16 {
		t.Errorf("(1,_) short: % x", got)
	}
	// (2, 0x1X) with c != 0: verify fails -> HeaderTooShort.
	if got := run(2, 0x17, 5, nil); hvOf(got).c != 2 {
		t.Errorf("verify: % x", got)
	}
	// (2, 0x27): mask does not match -> default accept.
	if got := run(2, 0x27, 5, nil); hvOf(got).c != 5 {
		t.Errorf("mask miss: % x", got)
	}
	// (3, 5): explicit reject: no error code (NoError), packet continues.
	if got := run(3, 5, 9, nil); hvOf(got).c != 9 {
		t.Errorf("reject: % x", got)
	}
}

func TestEnumsAndSerializableEnums(t *testing.T) {
	src := strings.Replace(featureTmpl, "struct headers", `enum Color { Red, Green }
enum bit<8> Kind { A = 1, B = 0x20 }
struct headers`, 1)
	src = fmt.Sprintf(src, "", `Color c = Color.Green; if (c == Color.Green) { hdr.h.a = (bit<8>)Kind.B; }
        Kind k = (Kind)hdr.h.b; if (k == Kind.A) { hdr.h.b = 0xaa; }`)
	p := mustCompile(t, src)
	got := hvOf(runFeature(t, NewDevice(p, Options{}), hv{a: 0, b: 1}))
	if got.a != 0x20 || got.b != 0xaa {
		t.Fatalf("got %+v", got)
	}
}

func wantCode(tb testing.TB, err error, code string) {
	tb.Helper()
	if err == nil {
		tb.Fatalf("no error, want %s", code)
	}
	if !strings.Contains(fmt.Sprint(statusCode(err)), code) {
		tb.Fatalf("error %v, want code %s", err, code)
	}
}

func TestTimestamps(t *testing.T) {
	p := featureProgram(t, "", `bit<48> ts = sm.ingress_global_timestamp; hdr.h.e = (bit<64>)ts;
        hdr.h.d = (bit<32>)sm.egress_global_timestamp; hdr.h.c = sm.ingress_global_timestamp[47:32];`)
	now := uint64(0x123456789abc)
	d := NewDevice(p, Options{Now: func() uint64 { return now }})
	got := hvOf(runFeature(t, d, hv{}))
	if got.e != now || got.d != uint32(now) || got.c != uint16(now>>32) {
		t.Fatalf("timestamps e=%#x d=%#x, want %#x", got.e, got.d, now)
	}
}

// TestPatchUnalignedFields modifies one unaligned field of a header whose
// other fields the program never mentions: the deparser copies the
// original bytes and patches just that field.
func TestPatchUnalignedFields(t *testing.T) {
	p := mustCompile(t, `#include <core.p4>
#include <v1model.p4>
header x_t { bit<3> f; bit<13> o; bit<4> v; bit<4> w; bit<8> z; bit<1> q; bit<7> r; }
struct H { x_t x; }
struct M { }
parser P(packet_in pk, out H h, inout M m, inout standard_metadata_t sm) { state start { pk.extract(h.x); transition accept; } }
control V(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; h.x.o = h.x.o + 1; h.x.w = 4w0; h.x.q = 1; }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out pk, in H h) { apply { pk.emit(h.x); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;`)
	in := []byte{0xbf, 0xff, 0x5a, 0x77, 0x00, 0xee}
	outs := send(NewDevice(p, Options{}), 1, in)
	// f=101 o=1_1111_1111_1111 (+1 wraps to 0) v=0101 w=1010->0000 z=0x77 q=0->1 r=0.
	want := []byte{0xa0, 0x00, 0x50, 0x77, 0x80, 0xee}
	if len(outs) != 1 || !bytes.Equal(outs[0].frame, want) {
		t.Fatalf("got % x, want % x", outs, want)
	}
}

func TestCRC32MatchesStdlib(t *testing.T) {
	b := make([]byte, 200)
	for i := range b {
		b[i] = byte(i*37 + 11)
	}
	for n := 0; n <= len(b); n++ {
		if got, want := crc32IEEE(b[:n]), uint64(crc32.ChecksumIEEE(b[:n])); got != want {
			t.Fatalf("len %d: %#x, want %#x", n, got, want)
		}
	}
}

func TestExactTableTwoKeys(t *testing.T) {
	p := featureProgram(t, `action set_d(bit<32> v) { hdr.h.d = v; }
    table two { key = { hdr.h.a: exact; hdr.h.c: exact; } actions = { set_d; NoAction; } default_action = NoAction(); }`,
		"two.apply();")
	d := NewDevice(p, Options{})
	if err := d.WriteTableEntry(p4v1.Update_INSERT, &p4v1.TableEntry{TableId: tableID(t, p, "I.two"),
		Match:  []*p4v1.FieldMatch{exact(1, []byte{5}), exact(2, []byte{0x12, 0x34})},
		Action: act(actionID(t, p, "I.set_d"), []byte{0xab})}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		a    uint8
		c    uint16
		want uint32
	}{{5, 0x1234, 0xab}, {5, 0x1235, 7}, {6, 0x1234, 7}} {
		if got := hvOf(runFeature(t, d, hv{a: c.a, c: c.c, d: 7})).d; got != c.want {
			t.Errorf("a=%d c=%#x: d=%#x, want %#x", c.a, c.c, got, c.want)
		}
	}
}
