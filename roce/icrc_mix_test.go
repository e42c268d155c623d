package roce

import (
	"math/rand/v2"
	"testing"
)

// This file uses only the exported API and the shared test helpers, so it
// can be dropped into an older tree for before/after comparisons.

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
