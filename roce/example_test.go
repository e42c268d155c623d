package roce_test

import (
	"fmt"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/swordbox/swordbox/roce"
)

func ExampleBuild() {
	f := roce.Fields{
		DstMAC: [6]byte{2, 0, 0, 0, 0, 2}, SrcMAC: [6]byte{2, 0, 0, 0, 0, 1},
		SrcIP: [4]byte{10, 0, 0, 1}, DstIP: [4]byte{10, 0, 0, 2},
		IPID: 1, DontFragment: true, TTL: 64, SrcPort: 50000,
		Opcode: roce.OpRCCompareSwap, MigReq: true, PKey: 0xffff, DestQP: 0x11, AckReq: true, PSN: 5,
		VA: 0x7f0000001000, RKey: 0x1234, SwapAdd: 0xdeadbeef,
	}
	var buf [128]byte
	n, err := roce.Build(buf[:], &f)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d bytes, ICRC %x\n", n, buf[n-4:n])
	// Output: 86 bytes, ICRC dce072ec
}

func ExampleParse() {
	f := roce.Fields{TTL: 64, Opcode: roce.OpRCAcknowledge, DestQP: 0x11, PSN: 5,
		Syndrome: roce.ACKSyndrome(roce.CreditInvalid), MSN: 1}
	var buf [128]byte
	n, _ := roce.Build(buf[:], &f)

	p, err := roce.Parse(buf[:n])
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Opcode, p.BTH.DestQP(), p.BTH.PSN(), p.AETH.Syndrome(), p.AETH.MSN(), p.ICRCOK())
	// Output: RC_ACK 17 5 ACK credit=31 1 true
}

func ExamplePacket_AtomicToWrite() {
	// A CMP_SWAP as a client sends it...
	f := roce.Fields{TTL: 64, Opcode: roce.OpRCCompareSwap, DestQP: 0x11, PSN: 5, AckReq: true,
		VA: 0x7f0000001000, RKey: 0x1234, Compare: 0, SwapAdd: 0xdeadbeef}
	var buf [128]byte
	n, _ := roce.Build(buf[:], &f)

	// ...becomes, in place, the WRITE of the swap value (the middlebox knows
	// the CAS succeeds), 4 bytes shorter, with lengths, checksum and ICRC fixed.
	p, _ := roce.Parse(buf[:n])
	if err := p.AtomicToWrite(f.SwapAdd, true); err != nil {
		panic(err)
	}
	fmt.Println(n, "->", len(p.Frame), p.Opcode, p.RETH.DMALen(), p.IP.TotalLen(), p.UDP.Length(), p.ICRCOK())
	fmt.Printf("payload % x\n", p.Payload)
	// Output:
	// 86 -> 82 RC_WRITE_ONLY 8 68 48 true
	// payload ef be ad de 00 00 00 00
}

func ExampleAckToAtomicAck() {
	f := roce.Fields{TTL: 64, Opcode: roce.OpRCAcknowledge, DestQP: 0x11, PSN: 5,
		Syndrome: roce.ACKSyndrome(roce.CreditInvalid), MSN: 1}
	buf := make([]byte, roce.FrameLen(&f), roce.FrameLen(&f)+roce.AtomicAckETHLen)
	roce.Build(buf, &f)

	out, err := roce.AckToAtomicAck(buf, 42, true) // 42: the original value
	if err != nil {
		panic(err)
	}
	p, _ := roce.Parse(out)
	fmt.Println(len(buf), "->", len(out), p.Opcode, p.AtomicAckETH.Orig(), p.IP.TotalLen(), p.UDP.Length(), p.ICRCOK())
	// Output: 62 -> 70 RC_ATOMIC_ACK 42 56 36 true
}

func ExampleLayerSet() {
	f := roce.Fields{TTL: 64, Opcode: roce.OpRCWriteOnlyImm, DestQP: 7, PSN: 1,
		VA: 0x1000, RKey: 9, DMALen: 4, Imm: 0xcafe, Payload: []byte{1, 2, 3, 4}}
	frame := make([]byte, roce.FrameLen(&f))
	roce.Build(frame, &f)

	var (
		eth     layers.Ethernet
		ip4     layers.IPv4
		udp     layers.UDP
		payload gopacket.Payload
		set     roce.LayerSet
	)
	parser := gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &eth, &ip4, &udp, &payload)
	for _, l := range set.DecodingLayers() {
		parser.AddDecodingLayer(l)
	}
	var decoded []gopacket.LayerType
	if err := parser.DecodeLayers(frame, &decoded); err != nil {
		panic(err)
	}
	fmt.Println(decoded)
	fmt.Printf("%v va=%#x imm=%#x payload=%x\n", set.BTH.Opcode, set.RETH.VA, set.ImmDt.Imm, []byte(payload))
	// Output:
	// [Ethernet IPv4 UDP RoCEv2 BTH RoCEv2 RETH RoCEv2 ImmDt Payload]
	// RC_WRITE_ONLY_IMM va=0x1000 imm=0xcafe payload=01020304
}
