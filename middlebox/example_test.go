package middlebox_test

import (
	"fmt"

	"github.com/swordbox/swordbox/middlebox"
	"github.com/swordbox/swordbox/roce"
)

// An engine that moves every operation to memory node 10.0.0.2 onto the
// connection of client 10.0.0.1, and replaces CMP_SWAP on a lock word
// (known to hold 0) by a WRITE of the outcome.
func ExampleEngine() {
	e, err := middlebox.New(middlebox.Config{
		Servers: []middlebox.ServerConfig{{
			IP:         "10.0.0.2",
			Remap:      []middlebox.Range{{}}, // every address
			CASToWrite: []middlebox.Range{{Lo: 0x1000, Hi: 0x1008}},
		}},
		Words: []middlebox.WordConfig{{VA: 0x1000, Value: 0}},
		Conns: []middlebox.ConnConfig{
			{ClientIP: "10.0.0.1", ServerIP: "10.0.0.2", ClientMAC: "02:00:00:00:00:01", ServerMAC: "02:00:00:00:00:02",
				ClientPort: 49152, ClientQP: 0x11, ServerQP: 0x21, PSN: 100, PSNKnown: true},
			{ClientIP: "10.0.0.3", ServerIP: "10.0.0.2", ClientMAC: "02:00:00:00:00:03", ServerMAC: "02:00:00:00:00:02",
				ClientPort: 49153, ClientQP: 0x13, ServerQP: 0x23, PSN: 500, PSNKnown: true},
		},
	})
	if err != nil {
		panic(err)
	}
	// Client 10.0.0.3 tries to take the lock: CMP_SWAP(0 -> 1) at its PSN 500.
	buf := make([]byte, 128)
	n, _ := roce.Build(buf, &roce.Fields{
		SrcMAC: [6]byte{2, 0, 0, 0, 0, 3}, DstMAC: [6]byte{2, 0, 0, 0, 0, 2},
		SrcIP: [4]byte{10, 0, 0, 3}, DstIP: [4]byte{10, 0, 0, 2}, TTL: 64, SrcPort: 49153,
		Opcode: roce.OpRCCompareSwap, PKey: 0xffff, DestQP: 0x23, AckReq: true, PSN: 500,
		VA: 0x1000, RKey: 7, Compare: 0, SwapAdd: 1,
	})
	out := middlebox.NewOut(64, 4096)
	e.Process(0, middlebox.ClientSide, buf[:n], out)
	p, _ := roce.Parse(out.Frames[0])
	fmt.Println(out.Sides[0], p.Opcode, "QP", p.BTH.DestQP(), "PSN", p.BTH.PSN(), "from", p.IP.Src(), "stores", p.Payload[0])
	c := e.Counters()
	fmt.Println(c.String())
	// Output:
	// server RC_WRITE_ONLY QP 33 PSN 100 from [10 0 0 1] stores 1
	// cas-to-write=1 remapped=1 requests=1 rx.client=1 tx.server=1
}
