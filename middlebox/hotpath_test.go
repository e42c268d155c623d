package middlebox

import (
	"math/rand/v2"
	"testing"

	"github.com/swordbox/swordbox/roce"
)

// TestIPChecksum compares the engine's IPv4 checksum with roce's on random
// headers, including all-ones words that exercise every carry fold.
func TestIPChecksum(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 20000; trial++ {
		ip := make(roce.IPv4, roce.IPv4MinLen)
		for i := range ip {
			switch trial % 3 {
			case 0:
				ip[i] = byte(rng.Uint32())
			case 1:
				ip[i] = 0xff
			default:
				ip[i] = byte(0xf0 | rng.Uint32())
			}
		}
		ip[0] = 0x45
		want := ip.ComputeChecksum()
		ipChecksum(ip)
		if got := ip.Checksum(); got != want || !ip.ChecksumOK() {
			t.Fatalf("trial %d: header %x: checksum %#04x, want %#04x", trial, ip, got, want)
		}
	}
	// With options: the general path.
	ip := make(roce.IPv4, 24)
	ip[0] = 0x46
	ip[22] = 0x12
	ipChecksum(ip)
	if !ip.ChecksumOK() {
		t.Fatalf("header with options: checksum %#04x wrong", ip.Checksum())
	}
}

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
