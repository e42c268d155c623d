package middlebox

import (
	"math/rand/v2"
	"testing"

	"github.com/swordbox/swordbox/roce"
)

// TestConvWrite checks the fast path's fixed-layout conversion (convWrite)
// against the general one (roce.Packet.AtomicToWriteStale): the same bytes.
func TestConvWrite(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 200; trial++ {
		op := roce.OpRCCompareSwap
		if trial%2 == 1 {
			op = roce.OpRCFetchAdd
		}
		f := roce.Fields{Opcode: op, TTL: 64, PKey: 0xffff, DestQP: rng.Uint32() & 0xffffff, PSN: rng.Uint32() & 0xffffff,
			VA: rng.Uint64(), RKey: rng.Uint32(), SwapAdd: rng.Uint64(), Compare: rng.Uint64(), SrcPort: uint16(rng.Uint32())}
		frame := buildFrame(t, &f)
		var a roce.Packet
		if err := roce.ParseInto(&a, append([]byte(nil), frame...)); err != nil {
			t.Fatal(err)
		}
		v := rng.Uint64()
		want := casToWrite(&a, v)
		got := convWrite(append([]byte(nil), frame...), roce.EthernetLen, v)
		if string(got) != string(want) {
			t.Fatalf("trial %d: frame\n%x\nwant\n%x", trial, got, want)
		}
	}
}
