package roce

import (
	"errors"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

func addSeeds(f *testing.F) {
	f.Add(mustHex(f, workedExampleHex))
	for _, s := range samples() {
		f.Add(build(f, &s.f, 0))
	}
	f.Add([]byte{})
}

// FuzzParse feeds arbitrary frames to Parse and, when they parse, to the
// views, the ICRC, FieldsOf/Build and the rewrites. Errors must be
// *ParseError naming a field; nothing may panic or read out of range.
func FuzzParse(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Field == "" || !strings.HasPrefix(err.Error(), "roce: "+pe.Field+": ") {
				t.Fatalf("error %v does not name a field", err)
			}
			return
		}
		if p.L3Off > p.L4Off || p.L4Off > p.BTHOff || p.BTHOff > p.ExtOff || p.ExtOff > p.PayloadOff ||
			p.PayloadOff > p.ICRCOff || p.ICRCOff+ICRCLen != p.End || p.End > len(data) {
			t.Fatalf("offsets out of order: %+v", p)
		}
		if len(p.Payload)+len(p.Pad) != p.ICRCOff-p.PayloadOff || p.PayloadOff-p.ExtOff != p.Opcode.Ext().Len() {
			t.Fatalf("payload/ext lengths inconsistent")
		}
		_ = p.ICRCOK()
		if p.ComputeICRC() != refICRC(data) {
			t.Fatalf("ICRC %08x, recipe %08x", p.ComputeICRC(), refICRC(data))
		}

		// Re-building the parsed fields gives a frame that parses to the
		// same fields (padding/alignment permitting).
		g := FieldsOf(&p)
		buf := make([]byte, FrameLen(&g))
		if n, err := Build(buf, &g); err == nil {
			q, err := Parse(buf[:n])
			if err != nil {
				t.Fatalf("rebuilt frame does not parse: %v", err)
			}
			if !q.ICRCOK() {
				t.Fatal("rebuilt frame has a bad ICRC")
			}
			h := FieldsOf(&q)
			if h.Opcode != g.Opcode || h.PSN != g.PSN || h.DestQP != g.DestQP || h.VA != g.VA || h.MSN != g.MSN || string(h.Payload) != string(g.Payload) {
				t.Fatalf("rebuilt fields differ: %+v vs %+v", h, g)
			}
		}

		// Rewrites on a copy with room to grow.
		c := make([]byte, len(data), len(data)+AtomicAckETHLen)
		copy(c, data)
		var out []byte
		switch p.Opcode {
		case OpRCCompareSwap, OpRCFetchAdd:
			out, err = AtomicToWrite(c, 42, true)
		case OpRCAcknowledge:
			if !p.AETH.Syndrome().IsACK() {
				return
			}
			out, err = AckToAtomicAck(c, 42, true)
		default:
			return
		}
		if err != nil {
			t.Fatalf("rewrite of a parsed %v: %v", p.Opcode, err)
		}
		q, err := Parse(out)
		if err != nil {
			t.Fatalf("rewritten %v does not parse: %v", p.Opcode, err)
		}
		if !q.ICRCOK() || !q.IP.ChecksumOK() {
			t.Fatalf("rewritten %v: ICRC ok %v, IPv4 checksum ok %v", p.Opcode, q.ICRCOK(), q.IP.ChecksumOK())
		}
	})
}

// FuzzLayers feeds arbitrary frames to gopacket (NewPacket and a
// DecodingLayerParser with a LayerSet), and arbitrary UDP payloads to every
// RoCEv2 layer's DecodeFromBytes. Nothing may panic; a layer's error must
// name a field; a BTH that decodes must agree with Parse.
func FuzzLayers(f *testing.F) {
	addSeeds(f)
	var (
		eth     layers.Ethernet
		dot1q   layers.Dot1Q
		ip4     layers.IPv4
		udp     layers.UDP
		payload gopacket.Payload
		set     LayerSet
	)
	parser := gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &eth, &dot1q, &ip4, &udp, &payload)
	all := set.DecodingLayers()
	for _, l := range all {
		parser.AddDecodingLayer(l)
	}
	unlinked := []gopacket.DecodingLayer{&BTHLayer{}, &DETHLayer{}, &RETHLayer{}, &AtomicETHLayer{}, &AETHLayer{},
		&AtomicAckETHLayer{}, &ImmDtLayer{}, &IETHLayer{}}
	f.Fuzz(func(t *testing.T, data []byte) {
		pkt := gopacket.NewPacket(data, layers.LayerTypeEthernet, gopacket.Default)
		var decoded []gopacket.LayerType
		_ = parser.DecodeLayers(data, &decoded)

		if l := pkt.Layer(LayerTypeBTH); l != nil {
			if p, err := Parse(data); err == nil {
				b := l.(*BTHLayer)
				if b.Opcode != p.Opcode || b.PSN != p.BTH.PSN() || b.DestQP != p.BTH.DestQP() || b.ICRC != p.StoredICRC() {
					t.Fatalf("BTH layer %+v disagrees with Parse", b)
				}
			}
		}
		// Raw UDP payloads: skip the fixed Ethernet/IPv4/UDP prefix if present.
		udpPayload := data
		if len(data) > 42 {
			udpPayload = data[42:]
		}
		for _, l := range unlinked {
			if err := l.DecodeFromBytes(udpPayload, gopacket.NilDecodeFeedback); err != nil {
				if !strings.HasPrefix(err.Error(), "roce: ") {
					t.Fatalf("%T: error %q does not name a field", l, err)
				}
				continue
			}
			_ = l.NextLayerType()
			if n := len(l.LayerPayload()); n > len(udpPayload) {
				t.Fatalf("%T: payload longer than input", l)
			}
		}
	})
}

// FuzzBuild builds frames from arbitrary field values: Build either returns
// an error naming a field or a frame that parses back to the same fields.
func FuzzBuild(f *testing.F) {
	f.Add(uint8(OpRCCompareSwap), uint8(0), uint32(5), uint32(0x11), uint64(0x7f0000001000), uint32(0x1234), uint32(0), uint8(0x1f), []byte{})
	f.Add(uint8(OpRCSendOnly), uint8(3), uint32(1), uint32(2), uint64(0), uint32(0), uint32(0), uint8(0), []byte{1, 2, 3, 4, 5})
	f.Fuzz(func(t *testing.T, op, pad uint8, psn, qp uint32, va uint64, rkey, msn uint32, syn uint8, payload []byte) {
		fl := baseFields(Opcode(op))
		fl.PadCnt, fl.PSN, fl.DestQP, fl.VA, fl.RKey, fl.MSN, fl.Syndrome, fl.Payload = pad, psn, qp, va, rkey, msn, Syndrome(syn), payload
		buf := make([]byte, 70000)
		n, err := Build(buf, &fl)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "roce: build: ") {
				t.Fatalf("error %q does not name a field", err)
			}
			return
		}
		p, err := Parse(buf[:n])
		if err != nil {
			t.Fatalf("built frame does not parse: %v", err)
		}
		if !p.ICRCOK() || p.Opcode != Opcode(op) || p.BTH.PSN() != psn || p.BTH.DestQP() != qp || string(p.Payload) != string(payload) {
			t.Fatalf("parsed %+v does not match the fields", p)
		}
	})
}

// FuzzViews reads every field of every view over arbitrary bytes, writes the
// values into a zeroed header with the setters and reads them back: getters
// and setters must agree bit for bit, and a setter must not touch any other
// field.
func FuzzViews(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 64 {
			return
		}
		d := data[len(data)-64:]

		b, nb := BTH(d), BTH(make([]byte, BTHLen))
		nb.SetOpcode(b.Opcode())
		nb.SetSE(b.SE())
		nb.SetMigReq(b.MigReq())
		nb.SetPadCnt(b.PadCnt())
		nb.SetTVer(b.TVer())
		nb.SetPKey(b.PKey())
		nb.SetFECN(b.FECN())
		nb.SetBECN(b.BECN())
		nb.SetDestQP(b.DestQP())
		nb.SetAckReq(b.AckReq())
		nb.SetPSN(b.PSN())
		// Everything but the reserved bits (byte 4 bits 5-0, byte 8 bits 6-0).
		mask := []byte{0xff, 0xff, 0xff, 0xff, 0xc0, 0xff, 0xff, 0xff, 0x80, 0xff, 0xff, 0xff}
		for i := range mask {
			if nb[i] != b[i]&mask[i] {
				t.Fatalf("BTH byte %d: %02x, want %02x", i, nb[i], b[i]&mask[i])
			}
		}

		ip, nip := IPv4(d), IPv4(make([]byte, IPv4MinLen))
		nip.SetVersionIHL(5)
		nip.SetTOS(ip.TOS())
		nip.SetTotalLen(ip.TotalLen())
		nip.SetID(ip.ID())
		nip.SetFlagsFrag(ip.FlagsFrag())
		nip.SetTTL(ip.TTL())
		nip.SetProtocol(ip.Protocol())
		nip.SetSrc(ip.Src())
		nip.SetDst(ip.Dst())
		nip.UpdateChecksum()
		if string(nip[1:10]) != string(ip[1:10]) || string(nip[12:20]) != string(ip[12:20]) || !nip.ChecksumOK() {
			t.Fatalf("IPv4 %x from %x", []byte(nip), d[:20])
		}
		var sum uint32 // the stored checksum makes the one's complement sum 0xffff
		for i := 0; i < IPv4MinLen; i += 2 {
			sum += uint32(nip[i])<<8 | uint32(nip[i+1])
		}
		for sum > 0xffff {
			sum = sum&0xffff + sum>>16
		}
		if sum != 0xffff {
			t.Fatalf("IPv4 checksum %04x does not verify (sum %04x)", nip.Checksum(), sum)
		}

		r, nr := RETH(d), RETH(make([]byte, RETHLen))
		nr.SetVA(r.VA())
		nr.SetRKey(r.RKey())
		nr.SetDMALen(r.DMALen())
		a, na := AtomicETH(d), AtomicETH(make([]byte, AtomicETHLen))
		na.SetVA(a.VA())
		na.SetRKey(a.RKey())
		na.SetSwapAdd(a.SwapAdd())
		na.SetCompare(a.Compare())
		ae, nae := AETH(d), AETH(make([]byte, AETHLen))
		nae.SetSyndrome(ae.Syndrome())
		nae.SetMSN(ae.MSN())
		aa, naa := AtomicAckETH(d), AtomicAckETH(make([]byte, AtomicAckETHLen))
		naa.SetOrig(aa.Orig())
		im, nim := ImmDt(d[:4]), ImmDt(make([]byte, ImmDtLen))
		nim.SetImm(im.Imm())
		ie, nie := IETH(d[:4]), IETH(make([]byte, IETHLen))
		nie.SetRKey(ie.RKey())
		u, nu := UDP(d), UDP(make([]byte, UDPLen))
		nu.SetSrcPort(u.SrcPort())
		nu.SetDstPort(u.DstPort())
		nu.SetLength(u.Length())
		nu.SetChecksum(u.Checksum())
		e, ne := Ethernet(d), Ethernet(make([]byte, EthernetLen+VLANTagLen))
		ne.SetDst(e.Dst())
		ne.SetSrc(e.Src())
		ne.SetEtherType(e.EtherType())
		ne.SetTCI(e.TCI())
		copy(ne[EthInnerTypeOff:], e[EthInnerTypeOff:EthInnerTypeOff+2])
		for _, c := range []struct {
			name      string
			got, want []byte
		}{
			{"RETH", nr, d[:RETHLen]}, {"AtomicETH", na, d[:AtomicETHLen]}, {"AETH", nae, d[:AETHLen]},
			{"AtomicAckETH", naa, d[:AtomicAckETHLen]}, {"ImmDt", nim, d[:ImmDtLen]}, {"IETH", nie, d[:IETHLen]},
			{"UDP", nu, d[:UDPLen]}, {"Ethernet", ne, d[:EthernetLen+VLANTagLen]},
		} {
			if string(c.got) != string(c.want) {
				t.Fatalf("%s: %x, want %x", c.name, c.got, c.want)
			}
		}
		if e.Tagged() != (e.EtherType() == EtherTypeVLAN) || (e.Tagged() && e.PayloadType() != uint16(d[16])<<8|uint16(d[17])) {
			t.Fatal("Ethernet tag accessors disagree")
		}

		de, nde := DETH(d), DETH(make([]byte, DETHLen))
		nde.SetQKey(de.QKey())
		nde.SetSrcQP(de.SrcQP())
		if string(nde[:4]) != string(d[:4]) || nde[4] != 0 || string(nde[5:8]) != string(d[5:8]) {
			t.Fatalf("DETH %x from %x", []byte(nde), d[:8])
		}
	})
}
