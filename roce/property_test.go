package roce

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"pgregory.net/rapid"
)

// genFields draws a random valid Fields: every field the opcode carries is
// random, every other field is zero.
func genFields(t *rapid.T) Fields {
	ops := Opcodes()
	op := ops[rapid.IntRange(0, len(ops)-1).Draw(t, "op")]
	var f Fields
	copy(f.DstMAC[:], rapid.SliceOfN(rapid.Byte(), 6, 6).Draw(t, "dmac"))
	copy(f.SrcMAC[:], rapid.SliceOfN(rapid.Byte(), 6, 6).Draw(t, "smac"))
	copy(f.SrcIP[:], rapid.SliceOfN(rapid.Byte(), 4, 4).Draw(t, "sip"))
	copy(f.DstIP[:], rapid.SliceOfN(rapid.Byte(), 4, 4).Draw(t, "dip"))
	if f.VLAN = rapid.Bool().Draw(t, "vlan"); f.VLAN {
		f.VLANTCI = rapid.Uint16().Draw(t, "tci")
	}
	f.TOS = rapid.Uint8().Draw(t, "tos")
	f.IPID = rapid.Uint16().Draw(t, "id")
	f.DontFragment = rapid.Bool().Draw(t, "df")
	f.TTL = rapid.Uint8().Draw(t, "ttl")
	f.SrcPort = rapid.Uint16().Draw(t, "sport")
	f.Opcode = op
	f.SE = rapid.Bool().Draw(t, "se")
	f.MigReq = rapid.Bool().Draw(t, "m")
	f.TVer = rapid.Uint8Range(0, 15).Draw(t, "tver")
	f.PKey = rapid.Uint16().Draw(t, "pkey")
	f.FECN = rapid.Bool().Draw(t, "fecn")
	f.BECN = rapid.Bool().Draw(t, "becn")
	f.DestQP = rapid.Uint32Range(0, MaxQP).Draw(t, "qp")
	f.AckReq = rapid.Bool().Draw(t, "a")
	f.PSN = rapid.Uint32Range(0, MaxPSN).Draw(t, "psn")
	ext := op.Ext()
	if ext&(ExtRETH|ExtAtomicETH) != 0 {
		f.VA = rapid.Uint64().Draw(t, "va")
	}
	if ext&(ExtRETH|ExtAtomicETH|ExtIETH) != 0 {
		f.RKey = rapid.Uint32().Draw(t, "rkey")
	}
	if ext&ExtRETH != 0 {
		f.DMALen = rapid.Uint32().Draw(t, "dmalen")
	}
	if ext&ExtAtomicETH != 0 {
		f.SwapAdd = rapid.Uint64().Draw(t, "swap")
		f.Compare = rapid.Uint64().Draw(t, "cmp")
	}
	if ext&ExtAETH != 0 {
		f.Syndrome = Syndrome(rapid.Uint8().Draw(t, "syndrome"))
		f.MSN = rapid.Uint32Range(0, 1<<24-1).Draw(t, "msn")
	}
	if ext&ExtAtomicAckETH != 0 {
		f.Orig = rapid.Uint64().Draw(t, "orig")
	}
	if ext&ExtImmDt != 0 {
		f.Imm = rapid.Uint32().Draw(t, "imm")
	}
	if ext&ExtDETH != 0 {
		f.QKey = rapid.Uint32().Draw(t, "qkey")
		f.SrcQP = rapid.Uint32Range(0, MaxQP).Draw(t, "srcqp")
	}
	if op.HasPayload() {
		f.Payload = rapid.SliceOfN(rapid.Byte(), 0, 600).Draw(t, "payload")
		f.PadCnt = uint8((4 - len(f.Payload)%4) % 4)
		if len(f.Payload) == 0 {
			f.Payload = nil
		}
	}
	return f
}

func TestPropertyBuildParseBuild(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := genFields(t)
		buf := make([]byte, FrameLen(&f))
		n, err := Build(buf, &f)
		if err != nil {
			t.Fatalf("Build: %v", err)
		}
		frame := buf[:n]
		p, err := Parse(frame)
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		if !p.ICRCOK() || p.ComputeICRC() != refICRC(frame) || !p.IP.ChecksumOK() {
			t.Fatalf("ICRC ok %v (recipe %08x, ours %08x), IPv4 checksum ok %v", p.ICRCOK(), refICRC(frame), p.ComputeICRC(), p.IP.ChecksumOK())
		}
		g := FieldsOf(&p)
		if len(g.Payload) == 0 {
			g.Payload = nil
		}
		if !reflect.DeepEqual(f, g) {
			t.Fatalf("FieldsOf(Parse(Build(f))) != f\n f %+v\n g %+v", f, g)
		}
		buf2 := make([]byte, n)
		if _, err := Build(buf2, &g); err != nil {
			t.Fatalf("second Build: %v", err)
		}
		if !bytes.Equal(frame, buf2) {
			t.Fatalf("build, parse, build differs\n%x\n%x", frame, buf2)
		}

		// gopacket: decode and serialize back to the same bytes.
		pkt := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.NoCopy)
		if el := pkt.ErrorLayer(); el != nil {
			t.Fatalf("gopacket: %v", el.Error())
		}
		var sl []gopacket.SerializableLayer
		for _, l := range pkt.Layers() {
			sl = append(sl, l.(gopacket.SerializableLayer))
		}
		sb := gopacket.NewSerializeBuffer()
		if err := SerializeLayers(sb, gopacket.SerializeOptions{}, sl...); err != nil {
			t.Fatalf("gopacket serialize: %v", err)
		}
		// gopacket's Ethernet layer pads frames to the 60-byte minimum.
		want := frame
		if len(want) < 60 {
			want = append(append([]byte(nil), frame...), make([]byte, 60-len(frame))...)
		}
		if !bytes.Equal(sb.Bytes(), want) {
			t.Fatalf("gopacket round trip differs\n%x\n%x", want, sb.Bytes())
		}
	})
}
