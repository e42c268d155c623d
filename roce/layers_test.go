package roce

import (
	"bytes"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

func wantLayerTypes(f *Fields) []gopacket.LayerType {
	ts := []gopacket.LayerType{layers.LayerTypeEthernet}
	if f.VLAN {
		ts = append(ts, layers.LayerTypeDot1Q)
	}
	ts = append(ts, layers.LayerTypeIPv4, layers.LayerTypeUDP, LayerTypeBTH)
	for _, x := range ExtOrder {
		if f.Opcode.Ext()&x != 0 {
			ts = append(ts, extLayerType(x))
		}
	}
	if len(f.Payload) > 0 {
		ts = append(ts, gopacket.LayerTypePayload)
	}
	return ts
}

func checkLayerFields(t *testing.T, name string, f *Fields, get func(gopacket.LayerType) gopacket.Layer) {
	t.Helper()
	bth := get(LayerTypeBTH).(*BTHLayer)
	if bth.Opcode != f.Opcode || bth.SE != f.SE || bth.MigReq != f.MigReq || bth.PadCnt != f.PadCnt ||
		bth.TVer != f.TVer || bth.PKey != f.PKey || bth.FECN != f.FECN || bth.BECN != f.BECN ||
		bth.DestQP != f.DestQP || bth.AckReq != f.AckReq || bth.PSN != f.PSN || len(bth.Pad) != int(f.PadCnt) {
		t.Errorf("%s: BTH %+v, fields %+v", name, bth, f)
	}
	ext := f.Opcode.Ext()
	if ext&ExtRETH != 0 {
		if l := get(LayerTypeRETH).(*RETHLayer); l.VA != f.VA || l.RKey != f.RKey || l.DMALen != f.DMALen {
			t.Errorf("%s: RETH %+v", name, l)
		}
	}
	if ext&ExtAtomicETH != 0 {
		if l := get(LayerTypeAtomicETH).(*AtomicETHLayer); l.VA != f.VA || l.RKey != f.RKey || l.SwapAdd != f.SwapAdd || l.Compare != f.Compare {
			t.Errorf("%s: AtomicETH %+v", name, l)
		}
	}
	if ext&ExtAETH != 0 {
		if l := get(LayerTypeAETH).(*AETHLayer); l.Syndrome != f.Syndrome || l.MSN != f.MSN {
			t.Errorf("%s: AETH %+v", name, l)
		}
	}
	if ext&ExtAtomicAckETH != 0 {
		if l := get(LayerTypeAtomicAckETH).(*AtomicAckETHLayer); l.Orig != f.Orig {
			t.Errorf("%s: AtomicAckETH %+v", name, l)
		}
	}
	if ext&ExtImmDt != 0 {
		if l := get(LayerTypeImmDt).(*ImmDtLayer); l.Imm != f.Imm {
			t.Errorf("%s: ImmDt %+v", name, l)
		}
	}
	if ext&ExtIETH != 0 {
		if l := get(LayerTypeIETH).(*IETHLayer); l.RKey != f.RKey {
			t.Errorf("%s: IETH %+v", name, l)
		}
	}
	if ext&ExtDETH != 0 {
		if l := get(LayerTypeDETH).(*DETHLayer); l.QKey != f.QKey || l.SrcQP != f.SrcQP {
			t.Errorf("%s: DETH %+v", name, l)
		}
	}
	if len(f.Payload) > 0 {
		if l := get(gopacket.LayerTypePayload); !bytes.Equal(l.LayerContents(), f.Payload) {
			t.Errorf("%s: payload %x, want %x", name, l.LayerContents(), f.Payload)
		}
	}
}

func TestGopacketNewPacket(t *testing.T) {
	for _, s := range samples() {
		frame := build(t, &s.f, 0)
		pkt := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
		if el := pkt.ErrorLayer(); el != nil {
			t.Errorf("%s: %v", s.name, el.Error())
			continue
		}
		var got []gopacket.LayerType
		for _, l := range pkt.Layers() {
			got = append(got, l.LayerType())
		}
		want := wantLayerTypes(&s.f)
		if !equalTypes(got, want) {
			t.Errorf("%s: layers %v, want %v", s.name, got, want)
			continue
		}
		checkLayerFields(t, s.name, &s.f, pkt.Layer)
		if icrc := pkt.Layer(LayerTypeBTH).(*BTHLayer).ICRC; icrc != refICRC(frame) {
			t.Errorf("%s: BTH layer ICRC %08x, want %08x", s.name, icrc, refICRC(frame))
		}

		// Serialize the decoded layers again: identical bytes.
		var sl []gopacket.SerializableLayer
		for _, l := range pkt.Layers() {
			sl = append(sl, l.(gopacket.SerializableLayer))
		}
		buf := gopacket.NewSerializeBuffer()
		if err := SerializeLayers(buf, gopacket.SerializeOptions{}, sl...); err != nil {
			t.Fatalf("%s: serialize: %v", s.name, err)
		}
		if !bytes.Equal(buf.Bytes(), frame) {
			t.Errorf("%s: serialized\n%x\nwant\n%x", s.name, buf.Bytes(), frame)
		}
	}
}

func TestGopacketLazy(t *testing.T) {
	for _, s := range samples() {
		frame := build(t, &s.f, 0)
		pkt := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.DecodeOptions{Lazy: true, NoCopy: true})
		want := wantLayerTypes(&s.f)
		// Ask for the last layer first: lazy decoding must reach it.
		if pkt.Layer(want[len(want)-1]) == nil {
			t.Errorf("%s: lazy decode did not reach %v", s.name, want[len(want)-1])
			continue
		}
		checkLayerFields(t, s.name, &s.f, pkt.Layer)
	}
}

func equalTypes(a, b []gopacket.LayerType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestGopacketDecodingLayerParser(t *testing.T) {
	var (
		eth     layers.Ethernet
		dot1q   layers.Dot1Q
		ip4     layers.IPv4
		udp     layers.UDP
		payload gopacket.Payload
		set     LayerSet
	)
	parser := gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &eth, &dot1q, &ip4, &udp, &payload)
	for _, l := range set.DecodingLayers() {
		parser.AddDecodingLayer(l)
	}
	byType := map[gopacket.LayerType]gopacket.Layer{
		LayerTypeBTH: &set.BTH, LayerTypeDETH: &set.DETH, LayerTypeRETH: &set.RETH, LayerTypeAtomicETH: &set.AtomicETH,
		LayerTypeAETH: &set.AETH, LayerTypeAtomicAckETH: &set.AtomicAckETH, LayerTypeImmDt: &set.ImmDt,
		LayerTypeIETH: &set.IETH, gopacket.LayerTypePayload: &payload,
	}
	var decoded []gopacket.LayerType
	for _, s := range samples() {
		frame := build(t, &s.f, 0)
		if err := parser.DecodeLayers(frame, &decoded); err != nil {
			t.Errorf("%s: %v", s.name, err)
			continue
		}
		if want := wantLayerTypes(&s.f); !equalTypes(decoded, want) {
			t.Errorf("%s: layers %v, want %v", s.name, decoded, want)
			continue
		}
		checkLayerFields(t, s.name, &s.f, func(lt gopacket.LayerType) gopacket.Layer { return byType[lt] })
	}
}

func TestGopacketSerializeComputes(t *testing.T) {
	// Build a padded SEND and a CAS from layers alone, letting gopacket fix
	// the lengths and checksums and SerializeLayers compute the ICRC.
	eth := &layers.Ethernet{SrcMAC: []byte{2, 0, 0, 0, 0, 1}, DstMAC: []byte{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Flags: layers.IPv4DontFragment, Protocol: layers.IPProtocolUDP,
		SrcIP: []byte{10, 0, 0, 1}, DstIP: []byte{10, 0, 0, 2}}
	udp := &layers.UDP{SrcPort: 50000, DstPort: UDPPort}
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := udp.SetNetworkLayerForChecksum(ip); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		ls   []gopacket.SerializableLayer
		op   Opcode
		pad  uint8
	}{
		{"send", []gopacket.SerializableLayer{&BTHLayer{Opcode: OpRCSendOnly, PKey: 0xffff, DestQP: 9, PSN: 1}, gopacket.Payload(seq(5))}, OpRCSendOnly, 3},
		{"cas", []gopacket.SerializableLayer{&BTHLayer{Opcode: OpRCCompareSwap, PKey: 0xffff, DestQP: 9, PSN: 2, AckReq: true},
			&AtomicETHLayer{VA: 0x1000, RKey: 5, SwapAdd: 6, Compare: 7}}, OpRCCompareSwap, 0},
	}
	for _, tc := range tests {
		buf := gopacket.NewSerializeBuffer()
		if err := SerializeLayers(buf, opts, append([]gopacket.SerializableLayer{eth, ip, udp}, tc.ls...)...); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		p, err := Parse(buf.Bytes())
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if p.Opcode != tc.op || p.BTH.PadCnt() != tc.pad || !p.ICRCOK() || !p.IP.ChecksumOK() {
			t.Errorf("%s: opcode %v pad %d icrc %v ipcsum %v", tc.name, p.Opcode, p.BTH.PadCnt(), p.ICRCOK(), p.IP.ChecksumOK())
		}
		if p.ComputeICRC() != refICRC(buf.Bytes()) {
			t.Errorf("%s: ICRC differs from the recipe", tc.name)
		}
	}
}

func TestGopacketErrors(t *testing.T) {
	f := baseFields(OpRCWriteOnlyImm)
	f.Payload = seq(4)
	frame := build(t, &f, 0)
	// The BTH layer knows which extension headers its opcode needs and
	// reports them truncated: cut inside the RETH and inside the ImmDt.
	for _, cut := range []int{BTHLen + 10, BTHLen + RETHLen + 2} {
		short := append([]byte(nil), frame[:42+cut+ICRCLen]...)
		IPv4(short[14:]).SetTotalLen(uint16(len(short) - 14))
		UDP(short[34:]).SetLength(uint16(len(short) - 34))
		pkt := gopacket.NewPacket(short, layers.LayerTypeEthernet, gopacket.Default)
		if pkt.ErrorLayer() == nil {
			t.Errorf("cut %d: no error layer", cut)
		}
	}
	var reth RETHLayer
	if err := reth.DecodeFromBytes(make([]byte, 15), gopacket.NilDecodeFeedback); err == nil || err.Error() != "roce: reth: truncated: 15 bytes, need 16" {
		t.Errorf("standalone RETH: %v", err)
	}
	var bth BTHLayer
	if err := bth.DecodeFromBytes([]byte{0x15, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, gopacket.NilDecodeFeedback); err == nil {
		t.Error("unknown opcode decoded")
	}
}
