package roce

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchPkt is the Packet the middlebox-shaped benchmarks parse into. It is a
// package-level pointer, so the Packet lives on the heap like the
// middlebox's Engine.pkt: every pointer store into it pays the GC
// write-barrier check, as in production.
var benchPkt = new(Packet)

// middleboxFrames returns the frame kinds the middlebox parses on its hot
// path: the client's CMP_SWAP, WRITE and READ request, the server's ACK and
// READ response. Payloads are 64 bytes, as in the middlebox benchmarks.
func middleboxFrames(tb testing.TB) []struct {
	name  string
	frame []byte
} {
	cas := workedExampleFields()
	write := baseFields(OpRCWriteOnly)
	write.Payload, write.DMALen, write.VA, write.RKey = seq(64), 64, 0x1000, 7
	read := baseFields(OpRCReadRequest)
	read.DMALen, read.VA, read.RKey = 64, 0x1000, 7
	ack := baseFields(OpRCAcknowledge)
	ack.Syndrome, ack.MSN = ACKSyndrome(CreditInvalid), 5
	resp := baseFields(OpRCReadResponseOnly)
	resp.Payload, resp.Syndrome, resp.MSN = seq(64), ACKSyndrome(CreditInvalid), 6
	var out []struct {
		name  string
		frame []byte
	}
	for _, k := range []struct {
		name string
		f    *Fields
	}{
		{"CMP_SWAP", &cas}, {"WRITE64", &write}, {"READ_REQUEST", &read},
		{"ACK", &ack}, {"READ_RESPONSE64", &resp},
	} {
		out = append(out, struct {
			name  string
			frame []byte
		}{k.name, build(tb, k.f, 0)})
	}
	return out
}

// BenchmarkParseHeap parses the middlebox's frame kinds into a
// heap-allocated Packet, plus a foreign UDP frame (not RoCEv2), a VLAN-tagged
// CMP_SWAP and a frame with IPv4 options (both off the common path).
func BenchmarkParseHeap(b *testing.B) {
	frames := middleboxFrames(b)
	cas := frames[0].frame
	foreign := append([]byte(nil), cas...)
	foreign[36] = 0 // UDP destination port
	vf := workedExampleFields()
	vf.VLAN, vf.VLANTCI = true, 100
	frames = append(frames,
		struct {
			name  string
			frame []byte
		}{"foreign", foreign},
		struct {
			name  string
			frame []byte
		}{"CMP_SWAP_VLAN", build(b, &vf, 0)},
		struct {
			name  string
			frame []byte
		}{"CMP_SWAP_IPopts", withIPOptions(cas, 8)},
	)
	for _, k := range frames {
		wantErr := k.name == "foreign"
		if err := ParseInto(benchPkt, k.frame); (err != nil) != wantErr {
			b.Fatalf("%s: %v", k.name, err)
		}
		b.Run(k.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(k.frame)))
			for b.Loop() {
				_ = ParseInto(benchPkt, k.frame)
			}
		})
	}
}

// BenchmarkParseHeapMix parses the middlebox's frame kinds, each buffer
// holding a kind drawn at random (seeded), visited in order as a receive
// ring would: branch prediction cannot learn the sequence. 4096 buffers
// (about 0.5 MB) stay in L2; 65536 (about 8 MB) mostly do not.
func BenchmarkParseHeapMix(b *testing.B) {
	kinds := middleboxFrames(b)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1 << 12, 1 << 16} {
		frames := make([][]byte, n)
		for i := range frames {
			frames[i] = append([]byte(nil), kinds[rng.IntN(len(kinds))].frame...)
		}
		b.Run(fmt.Sprintf("buffers=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := ParseInto(benchPkt, frames[i&(n-1)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
