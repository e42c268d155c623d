package roce

import (
	"fmt"
	"testing"
)

// This file uses only the exported API and the shared test helpers, so it
// can be dropped into an older tree for before/after comparisons.

// BenchmarkICRCShort times SetICRC by L3..ICRC span: a 44-byte ACK, a 68-byte
// CMP_SWAP, SEND frames of the other spans (76 is the middlebox's CAS figure).
func BenchmarkICRCShort(b *testing.B) {
	for _, span := range []int{44, 52, 56, 60, 64, 68, 76, 92, 124, 128, 160, 200, 256, 300, 1100} {
		var f Fields
		name := "send"
		switch span {
		case 44:
			f, name = baseFields(OpRCAcknowledge), "ack"
		case 68:
			f, name = baseFields(OpRCCompareSwap), "cas"
		default:
			f = baseFields(OpRCSendOnly)
			f.Payload = make([]byte, span-IPv4MinLen-UDPLen-BTHLen)
		}
		frame := build(b, &f, 0)
		var p Packet
		if err := ParseInto(&p, frame); err != nil {
			b.Fatal(err)
		}
		if got := p.ICRCOff - p.L3Off; got != span {
			b.Fatalf("%s: span %d, want %d", name, got, span)
		}
		b.Run(fmt.Sprintf("%s=%d", name, span), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(span))
			for b.Loop() {
				p.SetICRC()
			}
		})
	}
}
