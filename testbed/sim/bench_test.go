package sim

import (
	"testing"

	"github.com/swordbox/swordbox/roce/verbs"
)

// benchFrames runs the simulation until b.N more frames have been
// delivered: one op of the benchmark is one simulated packet, so ns/op is
// wall time per packet and allocs/op allocations per packet.
func benchFrames(b *testing.B, s *Sim) {
	b.ReportAllocs()
	b.ResetTimer()
	end := s.Frames() + uint64(b.N)
	for s.Frames() < end && s.Step() {
	}
	b.StopTimer()
	if s.Frames() < end {
		b.Fatalf("the queue ran dry after %d frames", s.Frames())
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pkts/s")
}

// BenchmarkRack: the whole rack in its loop, real switch program and RNIC
// engines: 20 QPs of 8-byte WRITEs (Figure 3's plateau), or of CAS.
func BenchmarkRack(b *testing.B) {
	for _, op := range []verbs.Opcode{verbs.OpWrite, verbs.OpCompareSwap} {
		b.Run(op.String(), func(b *testing.B) {
			r := newTestRack(b, 1, 1)
			if _, err := NewGen(r, r.Hosts[0], 0, GenConfig{Op: op, QPs: 20, Window: 16}); err != nil {
				b.Fatal(err)
			}
			r.Sim.RunUntil(20_000)
			benchFrames(b, r.Sim)
		})
	}
}

// pingPong bounces a frame between two links forever.
type pingPong struct {
	l [2]*Link
}

func (p *pingPong) Event(s *Sim, arg uint64, f *Frame) {
	p.l[arg^1].Send(s.Now(), f.B)
}

// BenchmarkLoop: the event loop and links alone (64 frames in flight).
func BenchmarkLoop(b *testing.B) {
	s := New(1)
	p := &pingPong{}
	var err error
	for i := range p.l {
		if p.l[i], err = NewLink(s, LinkConfig{QueueBytes: 1 << 20}, p, uint64(i)); err != nil {
			b.Fatal(err)
		}
	}
	frame := make([]byte, 86)
	for i := 0; i < 64; i++ {
		p.l[0].Send(0, frame)
	}
	benchFrames(b, s)
}
