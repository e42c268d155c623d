package target

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// The TNA examples of the Tofino SDE (open-p4studio, Apache-2.0; see
// testdata/tna/open-p4studio/README.md), unchanged: their user includes
// are found through the include path (as bf-p4c -I), and they forward
// and hash as their text and their PTF tests say.

const openP4Studio = "testdata/tna/open-p4studio"

func compileOpenP4Studio(tb testing.TB, name string) *Program {
	tb.Helper()
	p, err := CompileFile(openP4Studio+"/"+name+"/"+name+".p4", CompileOptions{IncludeDirs: []string{openP4Studio}})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// udpFrame is Ethernet / IPv4 / UDP with the given MAC addresses.
func udpFrame(dst, src []byte, payload string) []byte {
	f := append(append([]byte{}, dst...), src...)
	f = append(f, 0x08, 0x00)
	ip := []byte{0x45, 0, 0, 0, 0, 101, 0, 0, 64, 17, 0, 0, 1, 2, 3, 4, 100, 99, 98, 97}
	binary.BigEndian.PutUint16(ip[2:], uint16(20+8+len(payload)))
	f = append(f, ip...)
	udp := []byte{0x12, 0x34, 0xab, 0xcd, 0, 0, 0, 0}
	binary.BigEndian.PutUint16(udp[4:], uint16(8+len(payload)))
	f = append(f, udp...)
	return append(f, payload...)
}

// crc32BZIP2 is CRC-32/BZIP2 computed bit by bit (MSB first, polynomial
// 0x04C11DB7, init and final xor all ones): the reference the program's
// PTF test takes from crcmod's 'crc-32-bzip2'.
func crc32BZIP2(b []byte) uint32 {
	crc := ^uint32(0)
	for _, x := range b {
		crc ^= uint32(x) << 24
		for k := 0; k < 8; k++ {
			if crc&0x80000000 != 0 {
				crc = crc<<1 ^ 0x04C11DB7
			} else {
				crc <<= 1
			}
		}
	}
	return ^crc
}

func TestOpenP4StudioCustomHash(t *testing.T) {
	p := compileOpenP4Studio(t, "tna_custom_hash")
	d := NewDevice(p, Options{})
	frame := udpFrame([]byte{0, 0, 0xde, 0xad, 0xbe, 0xef}, []byte{0, 0, 0x01, 0x02, 0x03, 0x04}, "payload")

	// output_port has no entries and no default action: ucast_egress_port
	// is never set, so the packet has no destination and is dropped.
	if outs := send(d, 3, frame); len(outs) != 0 {
		t.Fatalf("no output port yet: %d frames out", len(outs))
	}
	// As the PTF test does: the default action sets the output port.
	if err := d.WriteTableEntry(p4v1.Update_MODIFY, &p4v1.TableEntry{
		TableId: tableID(t, p, "SwitchIngress.output_port"), IsDefaultAction: true,
		Action: act(actionID(t, p, "SwitchIngress.set_output_port"), []byte{5}),
	}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []uint32{0xdeadbeef, 0, 1, 0x12345678, 0xffffffff} {
		var dst, src [6]byte
		binary.BigEndian.PutUint32(dst[2:], v)
		binary.BigEndian.PutUint32(src[2:], v^0x5a5a5a5a)
		in := udpFrame(dst[:], src[:], "payload")
		outs := send(d, 3, in)
		if len(outs) != 1 || outs[0].port != 5 {
			t.Fatalf("value %#x: got %v, want one frame on port 5", v, outs)
		}
		got := outs[0].frame
		var key [4]byte
		binary.BigEndian.PutUint32(key[:], v)
		want1 := crc32.ChecksumIEEE(key[:])
		binary.BigEndian.PutUint32(key[:], v^0x5a5a5a5a)
		want2 := crc32BZIP2(key[:])
		if h := binary.BigEndian.Uint32(got[2:6]); h != want1 {
			t.Errorf("value %#x: dst[31:0] = %#x, want crc32 %#x", v, h, want1)
		}
		if h := binary.BigEndian.Uint32(got[8:12]); h != want2 {
			t.Errorf("value %#x: src[31:0] = %#x, want crc-32-bzip2 %#x", v, h, want2)
		}
		// Everything else is unchanged: the MACs' top 16 bits, IPv4, UDP,
		// the payload; bypass_egress: nothing of egress is in front.
		if !bytes.Equal(got[:2], in[:2]) || !bytes.Equal(got[6:8], in[6:8]) || !bytes.Equal(got[12:], in[12:]) {
			t.Errorf("value %#x: frame\n% x\nwant only the hashed bytes changed from\n% x", v, got, in)
		}
	}
	// Not IPv4: the parser rejects (default: reject), the program does not
	// read parser_err, so the packet is dropped, as on Tofino.
	arp := udpFrame([]byte{0, 0, 1, 1, 1, 1}, []byte{0, 0, 2, 2, 2, 2}, "x")
	arp[12], arp[13] = 0x08, 0x06
	if outs := send(d, 3, arp); len(outs) != 0 {
		t.Fatalf("ARP: %d frames out, want the parser to drop it", len(outs))
	}
	st := d.Stats()
	if st.ParserErrors != 1 || st.Dropped != 2 {
		t.Fatalf("stats %+v, want 1 parser error and 2 drops", st)
	}
}

// registerPair reads a Register<pair, _> cell through P4Runtime.
func registerPair(tb testing.TB, d *Device, id uint32, i int64) [2]uint64 {
	tb.Helper()
	var got [2]uint64
	n := 0
	if err := d.ReadRegisterEntries(&p4v1.RegisterEntry{RegisterId: id, Index: &p4v1.Index{Index: i}}, func(e *p4v1.RegisterEntry) error {
		ms := e.GetData().GetStruct().GetMembers()
		if len(ms) != 2 {
			tb.Fatalf("register data %v, want a struct of 2", e.GetData())
		}
		for k, m := range ms {
			v, err := decodeBits(m.GetBitstring(), 32, "")
			if err != nil {
				return err
			}
			got[k] = v
		}
		n++
		return nil
	}); err != nil || n != 1 {
		tb.Fatalf("read register: %v (%d entries)", err, n)
	}
	return got
}

func TestOpenP4StudioRegister(t *testing.T) {
	p := compileOpenP4Studio(t, "tna_register")
	d := NewDevice(p, Options{})
	reg := registerID(t, p, "SwitchIngress.test_reg")
	// The program's initial value, as its PTF test checks.
	if got := registerPair(t, d, reg, 5); got != [2]uint64{5, 7} {
		t.Fatalf("test_reg[5] = %v, want the initial {5, 7}", got)
	}
	dst := []byte{0, 0x11, 0x22, 0x33, 0x44, 0x55}
	if err := d.WriteTableEntry(p4v1.Update_INSERT, &p4v1.TableEntry{
		TableId: tableID(t, p, "SwitchIngress.reg_match"),
		Match:   []*p4v1.FieldMatch{exact(1, dst)},
		Action:  act(actionID(t, p, "SwitchIngress.register_action"), []byte{0, 0, 0, 5}),
	}); err != nil {
		t.Fatal(err)
	}
	if err := d.WriteTableEntry(p4v1.Update_INSERT, &p4v1.TableEntry{
		TableId: tableID(t, p, "SwitchIngress.reg_match_dir"),
		Match:   []*p4v1.FieldMatch{exact(1, []byte{0, 0, 0, 0, 0, 1})},
		Action:  act(actionID(t, p, "SwitchIngress.register_action_dir")),
	}); err != nil {
		t.Fatal(err)
	}
	// "Send the packet back where it came from", unchanged, through the
	// empty egress (bool_register_table holds 1: bypass_egress = ~1 = 0):
	// the egress parser does not extract egress_intrinsic_metadata_t, so
	// the target skips it for the parser, as bf-p4c does.
	frame := udpFrame(dst, []byte{0, 0, 0, 0, 0, 1}, "tna_register")
	const n = 3
	for i := 0; i < n; i++ {
		outs := send(d, 7, frame)
		if len(outs) != 1 || outs[0].port != 7 || !bytes.Equal(outs[0].frame, frame) {
			t.Fatalf("packet %d: got %v, want the frame back on port 7", i, outs)
		}
	}
	// test_reg_action: first += test_asn (1), second += 100 while below
	// test_cdn (100000000).
	if got := registerPair(t, d, reg, 5); got != [2]uint64{5 + n, 7 + 100*n} {
		t.Fatalf("test_reg[5] = %v after %d packets, want {%d, %d}", got, n, 5+n, 7+100*n)
	}
	if got := registerPair(t, d, reg, 4); got != [2]uint64{5, 7} {
		t.Fatalf("test_reg[4] = %v, want it untouched", got)
	}
	// bool_register_table through P4Runtime: 0 makes bypass_egress 1; the
	// frame still comes back unchanged, now without egress.
	boolReg := registerID(t, p, "SwitchIngress.bool_register_table")
	if err := d.WriteRegisterEntry(&p4v1.RegisterEntry{RegisterId: boolReg, Index: &p4v1.Index{Index: 1},
		Data: &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: []byte{0}}}}); err != nil {
		t.Fatal(err)
	}
	other := udpFrame([]byte{0, 9, 9, 9, 9, 9}, []byte{0, 8, 8, 8, 8, 8}, "miss")
	if outs := send(d, 2, other); len(outs) != 1 || outs[0].port != 2 || !bytes.Equal(outs[0].frame, other) {
		t.Fatalf("a frame that misses both tables: got %v, want it back on port 2", outs)
	}
	if got := registerPair(t, d, reg, 5); got != [2]uint64{5 + n, 7 + 100*n} {
		t.Fatalf("test_reg[5] = %v after a miss, want it unchanged", got)
	}
}

// The P4Info of a tna program, as bf-p4c --p4runtime-force-std-externs
// emits it for P4Runtime: arch "tna", the standard entities with
// control-qualified names (the pipe's name stripped), registers (also of
// a struct type, declared in type_info) and no entity for RegisterAction,
// RegisterParam or DirectRegister, which P4Runtime does not address.
func TestTNAP4Info(t *testing.T) {
	info := compileOpenP4Studio(t, "tna_register").P4Info()
	if info.PkgInfo.Arch != "tna" {
		t.Fatalf("arch %q", info.PkgInfo.Arch)
	}
	regs := map[string]string{}
	for _, r := range info.Registers {
		spec := fmt.Sprint(r.TypeSpec.GetBitstring().GetBit().GetBitwidth())
		if s := r.TypeSpec.GetStruct(); s != nil {
			spec = s.Name
		}
		regs[r.Preamble.Name] = fmt.Sprintf("%s size %d id prefix %#x", spec, r.Size, r.Preamble.Id>>24)
	}
	want := map[string]string{
		"SwitchIngress.bool_register_table": "1 size 1024 id prefix 0x16",
		"SwitchIngress.test_reg":            "pair size 1024 id prefix 0x16",
	}
	if fmt.Sprint(regs) != fmt.Sprint(want) {
		t.Fatalf("registers %v, want %v", regs, want)
	}
	pair := info.TypeInfo.GetStructs()["pair"]
	if pair == nil || len(pair.Members) != 2 || pair.Members[0].Name != "first" || pair.Members[1].Name != "second" ||
		pair.Members[1].TypeSpec.GetBitstring().GetBit().GetBitwidth() != 32 {
		t.Fatalf("type_info pair: %v", pair)
	}
	var tables []string
	for _, tb := range info.Tables {
		tables = append(tables, tb.Preamble.Name)
	}
	if fmt.Sprint(tables) != "[SwitchIngress.reg_match SwitchIngress.reg_match_dir]" {
		t.Fatalf("tables %v", tables)
	}
	if len(info.Externs) != 0 || len(info.Counters) != 0 || len(info.DirectCounters) != 0 {
		t.Fatalf("externs %v counters %v direct counters %v", info.Externs, info.Counters, info.DirectCounters)
	}
	l3, err := CompileFile("testdata/tna/l3/l3.p4", CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	li := l3.P4Info()
	if len(li.DirectCounters) != 1 || li.DirectCounters[0].Preamble.Name != "Ig.route_ctr" ||
		li.DirectCounters[0].DirectTableId != li.Tables[0].Preamble.Id || li.Tables[0].DirectResourceIds[0] != li.DirectCounters[0].Preamble.Id {
		t.Fatalf("direct counter %v, table %v", li.DirectCounters, li.Tables[0])
	}
	var cpm []string
	for _, m := range li.ControllerPacketMetadata {
		cpm = append(cpm, m.Preamble.Name+":"+m.Metadata[0].Name)
	}
	if fmt.Sprint(cpm) != "[packet_in:ingress_port packet_out:egress_port]" {
		t.Fatalf("controller packet metadata %v", cpm)
	}
}
