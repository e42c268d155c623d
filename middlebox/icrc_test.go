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

// raw8, raw16 and raw24 (independent per-byte lookups) equal the serial
// raw CRC.
func TestIndependentLookups(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 1000; trial++ {
		var b16 [16]byte
		var b8 [8]byte
		for i := range b16 {
			b16[i] = byte(rng.Uint32())
		}
		copy(b8[:], b16[3:])
		if got, want := raw16(&b16), rawCRC(0, b16[:]); got != want {
			t.Fatalf("%x: raw16 %#x, rawCRC %#x", b16, got, want)
		}
		if got, want := raw8(&b8), rawCRC(0, b8[:]); got != want {
			t.Fatalf("%x: raw8 %#x, rawCRC %#x", b8, got, want)
		}
		v := rng.Uint32() & psnMask
		if got, want := raw24(v), rawCRC(0, []byte{byte(v >> 16), byte(v >> 8), byte(v)}); got != want {
			t.Fatalf("%#x: raw24 %#x, rawCRC %#x", v, got, want)
		}
	}
}

// The incremental CMP_SWAP/FETCH_ADD to WRITE update agrees with a full
// recomputation, with a new PSN and a retargeted connection, and keeps a
// corrupted frame corrupted.
func TestConvICRC(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := 0; trial < 200; trial++ {
		op := roce.OpRCCompareSwap
		if trial%2 == 1 {
			op = roce.OpRCFetchAdd
		}
		oldPSN, newPSN := rng.Uint32()&psnMask, rng.Uint32()&psnMask
		f := roce.Fields{Opcode: op, TTL: 64, SrcPort: uint16(rng.Uint32()), PKey: 0xffff, DestQP: rng.Uint32() & 0xffffff,
			PSN: oldPSN, AckReq: trial%3 == 0, VA: rng.Uint64(), RKey: rng.Uint32(), SwapAdd: rng.Uint64(), Compare: rng.Uint64()}
		frame := buildFrame(t, &f)
		corrupt := trial%5 == 4
		var p roce.Packet
		if err := roce.ParseInto(&p, frame); err != nil {
			t.Fatal(err)
		}
		if corrupt {
			frame[p.ExtOff+20] ^= 0x10 // the compare value
		}
		// The connection pair's constant, as reqDelta computes it.
		var d [kSpanEnd - kSpanStart]byte
		o := conn{cliIP: [4]byte{10, 9, 8, byte(trial)}, srvIP: [4]byte{10, 0, 0, 2}, cliPort: uint16(rng.Uint32()), srvQP: rng.Uint32() & 0xffffff}
		for i := 0; i < 4; i++ {
			d[i] = p.IP[roce.IPv4SrcOff+i] ^ o.cliIP[i]
			d[4+i] = p.IP[roce.IPv4DstOff+i] ^ o.srvIP[i]
		}
		binaryPut16(d[kPortOff-kSpanStart:], p.UDP.SrcPort()^o.cliPort)
		put24(d[kQPOff-kSpanStart:], p.BTH.DestQP()^o.srvQP)
		k := rawCRC(0, d[:])

		var cv convPre
		saveConv(&cv, &p)
		if !cv.ok {
			t.Fatalf("trial %d: layout refused", trial)
		}
		casToWrite(&p, rng.Uint64())
		retargetRequest(p.Frame, p.L3Off, p.L4Off, p.BTHOff, &o)
		p.BTH.SetPSN(newPSN)
		ipChecksum(p.IP)
		convICRC(p.Frame, p.L3Off, p.ICRCOff, &cv, k, oldPSN, newPSN)
		if got := p.ICRCOK(); got == corrupt {
			t.Fatalf("trial %d (corrupt %v): incremental ICRC %#x, full %#x", trial, corrupt, p.StoredICRC(), p.ComputeICRC())
		}
	}
}

// BenchmarkConvICRC compares the ICRC of a CMP_SWAP turned WRITE computed
// incrementally (convICRC) and in full (roce.Packet.SetICRC).
func BenchmarkConvICRC(b *testing.B) {
	f := roce.Fields{Opcode: roce.OpRCCompareSwap, TTL: 64, PKey: 0xffff, DestQP: 0x11, PSN: 5, VA: 0x1000, RKey: 7, SwapAdd: 1}
	frame := buildFrame(b, &f)
	var p roce.Packet
	if err := roce.ParseInto(&p, frame); err != nil {
		b.Fatal(err)
	}
	var cv convPre
	saveConv(&cv, &p)
	casToWrite(&p, 1)
	p.BTH.SetPSN(9)
	b.Run("full", func(b *testing.B) {
		for b.Loop() {
			p.SetICRC()
		}
	})
	b.Run("incremental", func(b *testing.B) {
		for b.Loop() {
			convICRC(p.Frame, p.L3Off, p.ICRCOff, &cv, 0, 5, 9)
		}
	})
	if !p.ICRCOK() {
		b.Fatal("wrong ICRC")
	}
}
