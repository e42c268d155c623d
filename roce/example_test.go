package roce_test

import (
	"fmt"

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
