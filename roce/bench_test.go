package roce

import (
	"fmt"
	"testing"
)

// Rewrite benchmarks copy a fresh 86-byte (CAS) or 62-byte (ACK) template
// into the working buffer on every iteration; the copy is part of the figure.

func BenchmarkParseCAS(b *testing.B) {
	frame := mustHex(b, workedExampleHex)
	var p Packet
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		if err := ParseInto(&p, frame); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCASToWriteICRC(b *testing.B) {
	tmpl := mustHex(b, workedExampleHex)
	buf := make([]byte, len(tmpl))
	var p Packet
	b.ReportAllocs()
	for b.Loop() {
		copy(buf, tmpl)
		if err := ParseInto(&p, buf); err != nil {
			b.Fatal(err)
		}
		if err := p.AtomicToWrite(0xdeadbeef, true); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAckToAtomicAckICRC(b *testing.B) {
	f := baseFields(OpRCAcknowledge)
	tmpl := build(b, &f, 0)
	buf := make([]byte, len(tmpl), len(tmpl)+AtomicAckETHLen)
	var p Packet
	b.ReportAllocs()
	for b.Loop() {
		buf = buf[:len(tmpl)]
		copy(buf, tmpl)
		if err := ParseInto(&p, buf); err != nil {
			b.Fatal(err)
		}
		if err := p.AckToAtomicAck(42, true); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBuildWrite128(b *testing.B) {
	f := baseFields(OpRCWriteOnly)
	f.Payload = make([]byte, 128)
	f.DMALen = 128
	buf := make([]byte, 256)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(buf, &f); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkICRC(b *testing.B) {
	for _, payload := range []int{0, 128, 1024, 4096} {
		f := baseFields(OpRCWriteOnly)
		f.Payload = make([]byte, payload)
		frame := build(b, &f, 0)
		var p Packet
		if err := ParseInto(&p, frame); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("frame=%d", len(frame)), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(p.ICRCOff - p.L3Off))
			for b.Loop() {
				p.SetICRC()
			}
		})
	}
}
