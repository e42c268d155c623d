package roce

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// This file uses only the exported API, the shared test helpers and
// icrcAsm20, so it can be dropped into an older tree (from the assembly on)
// for before/after comparisons.

// icrcMixFrames returns n parsed frames of the kinds a SwordBox middlebox
// checks most, in a fixed pseudo-random order: ACK (L3..ICRC span 44), READ
// request (56), CMP_SWAP (68), WRITE_ONLY with 8 to 64 bytes of payload (64
// to 120), READ response with 64 bytes (108).
func icrcMixFrames(tb testing.TB, n int) []Packet {
	tb.Helper()
	type kind struct {
		op  Opcode
		pay int
	}
	kinds := []kind{{OpRCAcknowledge, 0}, {OpRCReadRequest, 0}, {OpRCCompareSwap, 0}, {OpRCReadResponseOnly, 64}}
	for pay := 8; pay <= 64; pay += 8 {
		kinds = append(kinds, kind{OpRCWriteOnly, pay})
	}
	r := rand.New(rand.NewPCG(21, 22))
	ps := make([]Packet, n)
	for i := range ps {
		k := kinds[r.IntN(len(kinds))]
		f := baseFields(k.op)
		f.Payload = make([]byte, k.pay)
		for j := range f.Payload {
			f.Payload[j] = byte(r.Uint32())
		}
		f.PSN = r.Uint32() & 0xffffff
		if err := ParseInto(&ps[i], build(tb, &f, 0)); err != nil {
			tb.Fatal(err)
		}
	}
	return ps
}

// BenchmarkICRCMix times ComputeICRC (the middlebox's check) over the frame
// mix of icrcMixFrames, a different frame and length each call: unlike
// BenchmarkICRCSpans, branches on the length are not always predicted.
// ns/op is per frame.
func BenchmarkICRCMix(b *testing.B) {
	ps := icrcMixFrames(b, 256)
	b.ReportAllocs()
	var sink uint32
	i := 0
	for b.Loop() {
		sink += ps[i&255].ComputeICRC()
		i++
	}
	icrcMixSink = sink
}

var icrcMixSink uint32

// BenchmarkICRCAsmSweep times the default carry-less-multiply variant
// (icrcAsm20, which every tree with the assembly has) on its own, by span
// length: the middlebox's short spans, 44 to 128 bytes.
func BenchmarkICRCAsmSweep(b *testing.B) {
	if !useICRCAsm {
		b.Skip("no carry-less-multiply ICRC on this machine")
	}
	for _, n := range []int{44, 56, 64, 68, 72, 80, 88, 96, 104, 108, 112, 120, 128} {
		l3 := make([]byte, n)
		r := rand.New(rand.NewPCG(2, uint64(n)))
		for i := range l3 {
			l3[i] = byte(r.Uint32())
		}
		l3[0] = 0x45
		b.Run(fmt.Sprintf("span=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(n))
			var sink uint32
			for b.Loop() {
				sink += icrcAsm20(l3)
			}
			icrcMixSink = sink
		})
	}
}
