package middlebox

import (
	"math/rand/v2"
	"testing"

	"github.com/swordbox/swordbox/roce"
)

// The incremental update agrees with a full recomputation by the roce
// package, for any change of the span and any payload length.
func TestIncrementalICRC(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, plen := range []int{0, 4, 8, 60, 64, 1024, 4096} {
		for trial := 0; trial < 50; trial++ {
			f := roce.Fields{Opcode: roce.OpRCWriteOnly, TTL: 64, SrcPort: 1234, PKey: 0xffff, DestQP: 0x11, PSN: 5,
				VA: 0x1000, RKey: 7, DMALen: uint32(plen), Payload: make([]byte, plen)}
			if plen == 0 {
				f.Opcode, f.Payload = roce.OpRCReadRequest, nil
			}
			for i := range f.Payload {
				f.Payload[i] = byte(rng.Uint32())
			}
			frame := buildFrame(t, &f)
			p, err := roce.Parse(frame)
			if err != nil {
				t.Fatal(err)
			}
			var sp icrcSpan
			a, b := p.L3Off+12, p.BTHOff+roce.BTHLen
			sp.save(frame, a, b)
			for k := 0; k < 1+rng.IntN(10); k++ {
				frame[a+rng.IntN(b-a)] = byte(rng.Uint32())
			}
			sp.update(frame, p.L3Off, p.ICRCOff, []int{p.L4Off + 6, p.L4Off + 7, p.BTHOff + 4})
			if !p.ICRCOK() {
				t.Fatalf("payload %d trial %d: incremental ICRC %#x, full %#x", plen, trial, p.StoredICRC(), p.ComputeICRC())
			}
		}
	}
}

// A frame that arrived with a wrong ICRC still has a wrong one afterwards.
func TestIncrementalICRCKeepsCorruption(t *testing.T) {
	f := roce.Fields{Opcode: roce.OpRCReadRequest, TTL: 64, PKey: 0xffff, DestQP: 0x11, PSN: 5, VA: 0x1000, DMALen: 8}
	frame := buildFrame(t, &f)
	p, _ := roce.Parse(frame)
	frame[p.ExtOff] ^= 0x40 // corrupt the VA
	var sp icrcSpan
	sp.save(frame, p.L3Off+12, p.BTHOff+12)
	p.BTH.SetPSN(99)
	sp.update(frame, p.L3Off, p.ICRCOff, nil)
	if p.ICRCOK() {
		t.Fatal("corruption laundered")
	}
	frame[p.ExtOff] ^= 0x40
	if !p.ICRCOK() {
		t.Fatal("update wrong")
	}
}
