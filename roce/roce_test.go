package roce

import (
	"bytes"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"strings"
	"testing"
)

// workedExampleHex is the 86-byte CMP_SWAP frame of platform.md, checked
// there against scapy and Wireshark.
const workedExampleHex = "020000000002020000000001080045000048000140004011" +
	"26a20a0000010a000002c35012b700340000" +
	"1340ffff000000118000000500007f00000010000000123400000000deadbeef0000000000000000" +
	"dce072ec"

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func workedExampleFields() Fields {
	return Fields{
		DstMAC: [6]byte{2, 0, 0, 0, 0, 2}, SrcMAC: [6]byte{2, 0, 0, 0, 0, 1},
		SrcIP: [4]byte{10, 0, 0, 1}, DstIP: [4]byte{10, 0, 0, 2},
		IPID: 1, DontFragment: true, TTL: 64,
		SrcPort: 50000,
		Opcode:  OpRCCompareSwap, MigReq: true, PKey: 0xffff, DestQP: 0x11, AckReq: true, PSN: 5,
		VA: 0x7f0000001000, RKey: 0x1234, SwapAdd: 0xdeadbeef, Compare: 0,
	}
}

func TestWorkedExampleBuild(t *testing.T) {
	want := mustHex(t, workedExampleHex)
	f := workedExampleFields()
	buf := make([]byte, 128)
	n, err := Build(buf, &f)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf[:n], want) {
		t.Fatalf("Build:\n got %x\nwant %x", buf[:n], want)
	}
}

func TestWorkedExampleParse(t *testing.T) {
	frame := mustHex(t, workedExampleHex)
	p, err := Parse(frame)
	if err != nil {
		t.Fatal(err)
	}
	if !p.IP.ChecksumOK() {
		t.Errorf("IPv4 checksum %#04x, want %#04x", p.IP.Checksum(), p.IP.ComputeChecksum())
	}
	if got := p.ComputeICRC(); got != 0xec72e0dc {
		t.Errorf("ICRC %#08x, want 0xec72e0dc (dce072ec on the wire)", got)
	}
	if !p.ICRCOK() {
		t.Error("ICRCOK false on the worked example")
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"opcode", p.Opcode, OpRCCompareSwap},
		{"opcode name", p.Opcode.String(), "RC_CMP_SWAP"},
		{"migreq", p.BTH.MigReq(), true},
		{"se", p.BTH.SE(), false},
		{"pkey", p.BTH.PKey(), uint16(0xffff)},
		{"qp", p.BTH.DestQP(), uint32(0x11)},
		{"ackreq", p.BTH.AckReq(), true},
		{"psn", p.BTH.PSN(), uint32(5)},
		{"va", p.AtomicETH.VA(), uint64(0x7f0000001000)},
		{"rkey", p.AtomicETH.RKey(), uint32(0x1234)},
		{"swap", p.AtomicETH.SwapAdd(), uint64(0xdeadbeef)},
		{"cmp", p.AtomicETH.Compare(), uint64(0)},
		{"ttl", p.IP.TTL(), uint8(64)},
		{"df", p.IP.DF(), true},
		{"udp len", p.UDP.Length(), uint16(52)},
		{"ip len", p.IP.TotalLen(), uint16(72)},
		{"payload", len(p.Payload), 0},
		{"reth absent", p.RETH == nil, true},
		{"icrc off", p.ICRCOff, 82},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	// The ICRC ignores the variant fields: changing them keeps it valid.
	p.IP.SetTTL(3)
	p.IP.SetTOS(0x02)
	p.IP.UpdateChecksum()
	p.BTH.SetFECN(true)
	p.BTH.SetBECN(true)
	if !p.ICRCOK() {
		t.Error("ICRC changed when only masked fields changed")
	}
	// ...and covers the invariant ones.
	p.BTH.SetPSN(6)
	if p.ICRCOK() {
		t.Error("ICRC still valid after the PSN changed")
	}
	p.SetICRC()
	if ok, err := VerifyICRC(frame); err != nil || !ok {
		t.Errorf("VerifyICRC after SetICRC = %v, %v", ok, err)
	}
}

func TestOpcodeTable(t *testing.T) {
	tests := []struct {
		op      Opcode
		name    string
		ext     Ext
		payload bool
	}{
		{OpRCSendFirst, "RC_SEND_FIRST", 0, true},
		{OpRCSendMiddle, "RC_SEND_MIDDLE", 0, true},
		{OpRCSendLast, "RC_SEND_LAST", 0, true},
		{OpRCSendLastImm, "RC_SEND_LAST_IMM", ExtImmDt, true},
		{OpRCSendOnly, "RC_SEND_ONLY", 0, true},
		{OpRCSendOnlyImm, "RC_SEND_ONLY_IMM", ExtImmDt, true},
		{OpRCWriteFirst, "RC_WRITE_FIRST", ExtRETH, true},
		{OpRCWriteMiddle, "RC_WRITE_MIDDLE", 0, true},
		{OpRCWriteLast, "RC_WRITE_LAST", 0, true},
		{OpRCWriteLastImm, "RC_WRITE_LAST_IMM", ExtImmDt, true},
		{OpRCWriteOnly, "RC_WRITE_ONLY", ExtRETH, true},
		{OpRCWriteOnlyImm, "RC_WRITE_ONLY_IMM", ExtRETH | ExtImmDt, true},
		{OpRCReadRequest, "RC_READ_REQUEST", ExtRETH, false},
		{OpRCReadResponseFirst, "RC_READ_RESPONSE_FIRST", ExtAETH, true},
		{OpRCReadResponseMiddle, "RC_READ_RESPONSE_MIDDLE", 0, true},
		{OpRCReadResponseLast, "RC_READ_RESPONSE_LAST", ExtAETH, true},
		{OpRCReadResponseOnly, "RC_READ_RESPONSE_ONLY", ExtAETH, true},
		{OpRCAcknowledge, "RC_ACK", ExtAETH, false},
		{OpRCAtomicAcknowledge, "RC_ATOMIC_ACK", ExtAETH | ExtAtomicAckETH, false},
		{OpRCCompareSwap, "RC_CMP_SWAP", ExtAtomicETH, false},
		{OpRCFetchAdd, "RC_FETCH_ADD", ExtAtomicETH, false},
		{OpRCSendLastInvalidate, "RC_SEND_LAST_INV", ExtIETH, true},
		{OpRCSendOnlyInvalidate, "RC_SEND_ONLY_INV", ExtIETH, true},
		{OpUDSendOnly, "UD_SEND_ONLY", ExtDETH, true},
		{OpUDSendOnlyImm, "UD_SEND_ONLY_IMM", ExtDETH | ExtImmDt, true},
		{OpCNP, "CNP", 0, true},
	}
	for _, tc := range tests {
		if got := tc.op.String(); got != tc.name {
			t.Errorf("%#02x.String() = %q, want %q", uint8(tc.op), got, tc.name)
		}
		if got := tc.op.Ext(); got != tc.ext {
			t.Errorf("%v.Ext() = %v, want %v", tc.op, got, tc.ext)
		}
		if got := tc.op.HasPayload(); got != tc.payload {
			t.Errorf("%v.HasPayload() = %v, want %v", tc.op, got, tc.payload)
		}
	}
	if got := len(Opcodes()); got != len(tests) {
		t.Errorf("Opcodes() has %d entries, table %d", got, len(tests))
	}
	if got := Opcode(0x15).String(); got != "OPCODE_0x15" {
		t.Errorf("unknown opcode name %q", got)
	}
	if Opcode(0x15).Known() {
		t.Error("0x15 reported known")
	}
	if got := (ExtRETH | ExtImmDt).String(); got != "RETH+ImmDt" {
		t.Errorf("Ext.String() = %q", got)
	}
}

func TestSyndrome(t *testing.T) {
	tests := []struct {
		s     Syndrome
		raw   uint8
		kind  SyndromeKind
		value uint8
		str   string
	}{
		{ACKSyndrome(CreditInvalid), 0x1f, KindACK, 31, "ACK credit=31"},
		{ACKSyndrome(3), 0x03, KindACK, 3, "ACK credit=3"},
		{RNRNAKSyndrome(14), 0x2e, KindRNRNAK, 14, "RNR_NAK timer=14"},
		{NAKSyndrome(NAKPSNSequenceError), 0x60, KindNAK, 0, "NAK PSN_SEQUENCE_ERROR"},
		{NAKSyndrome(NAKInvalidRequest), 0x61, KindNAK, 1, "NAK INVALID_REQUEST"},
		{NAKSyndrome(NAKRemoteAccessError), 0x62, KindNAK, 2, "NAK REMOTE_ACCESS_ERROR"},
		{NAKSyndrome(NAKRemoteOperationalError), 0x63, KindNAK, 3, "NAK REMOTE_OPERATIONAL_ERROR"},
		{Syndrome(0x45), 0x45, KindReserved, 5, "RESERVED 0x45"},
	}
	for _, tc := range tests {
		if uint8(tc.s) != tc.raw || tc.s.Kind() != tc.kind || tc.s.Value() != tc.value || tc.s.String() != tc.str {
			t.Errorf("syndrome %#02x: kind %d value %d %q; want %#02x kind %d value %d %q",
				uint8(tc.s), tc.s.Kind(), tc.s.Value(), tc.s.String(), tc.raw, tc.kind, tc.value, tc.str)
		}
	}
}

func TestBTHAccessors(t *testing.T) {
	b := BTH(make([]byte, BTHLen))
	b.SetOpcode(OpRCWriteOnly)
	b.SetSE(true)
	b.SetMigReq(true)
	b.SetPadCnt(3)
	b.SetTVer(0xf)
	b.SetPKey(0xabcd)
	b.SetFECN(true)
	b.SetBECN(true)
	b.SetDestQP(0xfedcba)
	b.SetAckReq(true)
	b.SetPSN(0xabcdef)
	if got := hex.EncodeToString(b); got != "0affabcdc0fedcba80abcdef" {
		t.Errorf("all set: %s", got)
	}
	if !b.SE() || !b.MigReq() || b.PadCnt() != 3 || b.TVer() != 15 || b.PKey() != 0xabcd ||
		!b.FECN() || !b.BECN() || b.DestQP() != 0xfedcba || !b.AckReq() || b.PSN() != 0xabcdef {
		t.Error("getters disagree with setters")
	}
	b.SetSE(false)
	b.SetMigReq(false)
	b.SetPadCnt(1)
	b.SetTVer(0)
	b.SetFECN(false)
	b.SetAckReq(false)
	b.SetPSN(0x1000001) // truncated to 24 bits
	if got := hex.EncodeToString(b); got != "0a10abcd40fedcba00000001" {
		t.Errorf("after clearing: %s", got)
	}
}

func TestParseErrors(t *testing.T) {
	good := mustHex(t, workedExampleHex)
	mod := func(f func(b []byte) []byte) []byte {
		b := append([]byte(nil), good...)
		return f(b)
	}
	tests := []struct {
		name    string
		frame   []byte
		field   string
		notRoCE bool
	}{
		{"empty", nil, "ethernet", false},
		{"ethertype", mod(func(b []byte) []byte { b[12] = 0x86; b[13] = 0xdd; return b }), "ethernet.ethertype", true},
		{"short ip", good[:30], "ipv4", false},
		{"vlan short", mod(func(b []byte) []byte { b[12] = 0x81; b[13] = 0; return b[:16] }), "vlan", false},
		{"vlan inner type", mod(func(b []byte) []byte { b[12] = 0x81; b[13] = 0; return b }), "vlan.ethertype", true},
		{"version", mod(func(b []byte) []byte { b[14] = 0x65; return b }), "ipv4.version", false},
		{"ihl", mod(func(b []byte) []byte { b[14] = 0x44; return b }), "ipv4.ihl", false},
		{"proto", mod(func(b []byte) []byte { b[23] = 6; return b }), "ipv4.protocol", true},
		{"frag", mod(func(b []byte) []byte { b[21] = 8; return b }), "ipv4.fragment_offset", true},
		{"port", mod(func(b []byte) []byte { b[36] = 0; return b }), "udp.dst_port", true},
		{"total long", good[:80], "ipv4.total_length", false},
		{"total short", mod(func(b []byte) []byte { b[17] = 20; return b }), "ipv4.total_length", false},
		{"udp len", mod(func(b []byte) []byte { b[39] = 0x30; return b }), "udp.length", false},
		{"opcode", mod(func(b []byte) []byte { b[42] = 0x15; return b }), "bth.opcode", false},
		{"atomiceth", mod(func(b []byte) []byte { b[17] = 60; b[39] = 40; return b[:74] }), "atomiceth", false},
		{"payload on cas", mod(func(b []byte) []byte { b[42] = byte(OpRCReadRequest); return b }), "payload", false},
		{"bth", mod(func(b []byte) []byte { b[17] = 40; b[39] = 20; return b[:54] }), "bth", false},
		{"padcnt", mod(func(b []byte) []byte {
			b[42] = byte(OpRCSendOnly)
			b[43] |= 0x30
			b[17] = 44
			b[39] = 24
			return b[:58]
		}), "bth.padcnt", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.frame)
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *ParseError", err)
			}
			if pe.Field != tc.field {
				t.Errorf("field %q (%v), want %q", pe.Field, err, tc.field)
			}
			if errors.Is(err, ErrNotRoCE) != tc.notRoCE {
				t.Errorf("errors.Is(ErrNotRoCE) = %v, want %v", !tc.notRoCE, tc.notRoCE)
			}
			if !strings.HasPrefix(err.Error(), "roce: "+tc.field+": ") {
				t.Errorf("message %q does not name the field", err)
			}
		})
	}
}

func TestParseTrailer(t *testing.T) {
	// A bare ACK padded by the sender to a longer Ethernet frame.
	f := Fields{Opcode: OpRCAcknowledge, TTL: 64, Syndrome: ACKSyndrome(CreditInvalid), MSN: 7, PSN: 9, DestQP: 3}
	buf := make([]byte, 80)
	n, err := Build(buf, &f)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(buf[:n+6])
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Trailer) != 6 || p.End != n || !p.ICRCOK() || p.AETH.MSN() != 7 {
		t.Errorf("trailer %d end %d (n %d) icrc %v msn %d", len(p.Trailer), p.End, n, p.ICRCOK(), p.AETH.MSN())
	}
}

func TestNoAllocs(t *testing.T) {
	frame := mustHex(t, workedExampleHex)
	f := workedExampleFields()
	buf := make([]byte, 128)
	var p Packet
	notRoCE := append([]byte(nil), frame...)
	notRoCE[36] = 0 // UDP port
	ackF := baseFields(OpRCAcknowledge)
	ack := build(t, &ackF, AtomicAckETHLen)
	ackBuf := make([]byte, len(ack), len(ack)+AtomicAckETHLen)
	casBuf := make([]byte, len(frame))
	for name, fn := range map[string]func(){
		"AtomicToWrite": func() {
			copy(casBuf, frame)
			_ = ParseInto(&p, casBuf)
			_ = p.AtomicToWrite(1, true)
		},
		"AckToAtomicAck": func() {
			ackBuf = ackBuf[:len(ack)]
			copy(ackBuf, ack)
			_ = ParseInto(&p, ackBuf)
			_ = p.AckToAtomicAck(1, true)
		},
		"setters": func() {
			copy(casBuf, frame)
			if err := ParseInto(&p, casBuf); err != nil {
				t.Fatal(err)
			}
			_ = p.SetVA(1)
			_ = p.SetRKey(2)
			p.SetDestQP(3)
			p.SetPSN(4)
			p.SetICRC()
		},
		"Parse":         func() { _, _ = Parse(frame) },
		"ParseInto":     func() { _ = ParseInto(&p, frame) },
		"Parse foreign": func() { _, _ = Parse(notRoCE) },
		"Build":         func() { _, _ = Build(buf, &f) },
		"VerifyICRC":    func() { _, _ = VerifyICRC(frame) },
	} {
		if a := testing.AllocsPerRun(100, fn); a != 0 {
			t.Errorf("%s: %v allocs/op, want 0", name, a)
		}
	}
}

// refICRC is the platform.md recipe, literally: copy IPv4 header..payload,
// mask the variant fields, CRC-32 over 8 x 0xFF followed by the copy.
func refICRC(frame []byte) uint32 {
	l3 := 14
	if frame[12] == 0x81 && frame[13] == 0x00 {
		l3 = 18
	}
	ihl := int(frame[l3]&0x0f) * 4
	total := int(frame[l3+2])<<8 | int(frame[l3+3])
	data := append([]byte(nil), frame[l3:l3+total-4]...)
	data[1], data[8], data[10], data[11] = 0xff, 0xff, 0xff, 0xff
	data[ihl+6], data[ihl+7] = 0xff, 0xff
	data[ihl+8+4] = 0xff
	return crc32.ChecksumIEEE(append(bytes.Repeat([]byte{0xff}, 8), data...))
}

func TestICRCMatchesRecipe(t *testing.T) {
	// Every payload length from 0 to 300 (both CRC paths and every tail),
	// with and without IPv4 options.
	for _, opts := range []int{0, 4, 40} {
		for n := 0; n <= 300; n++ {
			f := baseFields(OpRCSendOnly)
			f.Payload = make([]byte, n)
			for i := range f.Payload {
				f.Payload[i] = byte(i*31 + n)
			}
			f.PadCnt = uint8((4 - n%4) % 4)
			f.TOS, f.TTL = 0x12, 9
			frame := build(t, &f, 0)
			if opts > 0 {
				frame = withIPOptions(frame, opts)
			}
			p, err := Parse(frame)
			if err != nil {
				t.Fatalf("opts %d n %d: %v", opts, n, err)
			}
			if got, want := p.ComputeICRC(), refICRC(frame); got != want {
				t.Fatalf("opts %d n %d: ICRC %08x, recipe %08x", opts, n, got, want)
			}
			if got, err := ICRCOf(frame[p.L3Off:p.ICRCOff]); err != nil || got != p.ComputeICRC() {
				t.Fatalf("opts %d n %d: ICRCOf %08x, %v", opts, n, got, err)
			}
		}
	}
}

// withIPOptions inserts n bytes of IPv4 options (NOPs) and fixes lengths and
// the IPv4 checksum.
func withIPOptions(frame []byte, n int) []byte {
	out := append([]byte(nil), frame[:34]...)
	out = append(out, bytes.Repeat([]byte{1}, n)...)
	out = append(out, frame[34:]...)
	ip := IPv4(out[14:])
	ip.SetVersionIHL(uint8(5 + n/4))
	ip.SetTotalLen(ip.TotalLen() + uint16(n))
	ip.UpdateChecksum()
	return out
}

func TestVLAN(t *testing.T) {
	f := workedExampleFields()
	f.VLAN, f.VLANTCI = true, 3<<13|100 // PCP 3, VID 100
	buf := make([]byte, 128)
	n, err := Build(buf, &f)
	if err != nil {
		t.Fatal(err)
	}
	want := mustHex(t, workedExampleHex)
	want = append(append(append([]byte(nil), want[:12]...), 0x81, 0x00, 0x60, 0x64), want[12:]...)
	if !bytes.Equal(buf[:n], want) {
		t.Fatalf("tagged worked example:\n got %x\nwant %x", buf[:n], want)
	}
	p, err := Parse(buf[:n])
	if err != nil {
		t.Fatal(err)
	}
	if !p.Eth.Tagged() || p.Eth.TCI() != f.VLANTCI || p.Eth.PayloadType() != EtherTypeIPv4 || p.L3Off != 18 || !p.ICRCOK() {
		t.Errorf("tagged: tagged %v tci %#x l3 %d icrc %v", p.Eth.Tagged(), p.Eth.TCI(), p.L3Off, p.ICRCOK())
	}
	if g := FieldsOf(&p); g.VLAN != true || g.VLANTCI != f.VLANTCI {
		t.Errorf("FieldsOf: vlan %v tci %#x", g.VLAN, g.VLANTCI)
	}
	out, err := AtomicToWrite(buf[:n], 9, true)
	if err != nil {
		t.Fatal(err)
	}
	if q, err := Parse(out); err != nil || !q.ICRCOK() || q.IP.TotalLen() != 68 || len(out) != n-4 {
		t.Errorf("tagged CAS to WRITE: %v", err)
	}
}

func TestICRCOfErrors(t *testing.T) {
	frame := mustHex(t, workedExampleHex)
	for _, l3 := range [][]byte{frame[14:30], frame[14 : 14+IPv4MinLen+UDPLen+BTHLen-1], {0x44, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}} {
		if _, err := ICRCOf(l3); err == nil || !strings.HasPrefix(err.Error(), "roce: icrc: ") {
			t.Errorf("ICRCOf(%d bytes): %v", len(l3), err)
		}
	}
	if got, err := ICRCOf(frame[14 : len(frame)-4]); err != nil || got != 0xec72e0dc {
		t.Errorf("ICRCOf(worked example) = %08x, %v", got, err)
	}
}
