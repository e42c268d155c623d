package middlebox

import (
	"bytes"
	"testing"

	"github.com/swordbox/swordbox/roce"
)

// FuzzEngine feeds the engine arbitrary frames on either side, between
// valid ones, with preloaded and unknown connections: it must never panic,
// every frame it emits must be well formed, and every frame it neither
// forwards nor answers must be counted as a drop with a reason.
func FuzzEngine(f *testing.F) {
	seedRack := newTestRack(f, 3, testConfig(true, true))
	c1, _ := seedRack.cas(1, 0x1000, 0, 1)
	w2, _ := seedRack.write(2, 0x5000, le64(7))
	rd, _ := seedRack.read(1, 0x8000, 3000, 1024)
	f.Add(byte(2), c1)
	f.Add(byte(2), w2)
	f.Add(byte(2), rd)
	f.Add(byte(3), seedRack.ack(0, 7, synACK, 1))
	f.Add(byte(3), seedRack.ack(0, 8, synSeq, 1))
	f.Add(byte(3), seedRack.atomicAck(0, 7, 0, 1))
	f.Add(byte(3), seedRack.readResp(0, roce.OpRCReadResponseFirst, 7, make([]byte, 1024), 1))
	f.Add(byte(0), []byte{})
	f.Add(byte(1), make([]byte, 14))
	f.Fuzz(func(t *testing.T, side byte, frame []byte) {
		r := newTestRack(t, 3, testConfig(true, true))
		// Some valid traffic first, so the fuzzed frame meets state.
		a, _ := r.cas(1, 0x1000, 0, 1)
		b, _ := r.write(2, 0x5000, le64(7))
		rr, _ := r.read(0, 0x8000, 3000, 1024)
		for _, x := range [][]byte{a, b, rr} {
			r.out.Reset()
			r.e.Process(0, ClientSide, x, r.out)
		}
		s := Side(side & 1)
		in := append([]byte(nil), frame...)
		if side&2 != 0 {
			_ = roce.SetICRC(in) // reach past the ICRC check
		}
		orig := append([]byte(nil), in...)
		before := r.e.Counters()
		r.out.Reset()
		r.e.Process(1, s, in, r.out)
		after := r.e.Counters()
		for i, o := range r.out.Frames {
			if r.out.FromInput[i] && bytes.Equal(o, orig) {
				continue // forwarded as it came (foreign, or needing no rewrite)
			}
			p, err := roce.Parse(o)
			if err != nil {
				t.Fatalf("emitted frame %d does not parse: %v", i, err)
			}
			if !p.ICRCOK() || !p.IP.ChecksumOK() {
				t.Fatalf("emitted frame %d: bad ICRC or IPv4 checksum", i)
			}
		}
		if r.out.Len() == 0 {
			handled := after.TotalDrops() > before.TotalDrops() ||
				// absorbed on purpose: a server ACK whose clients wait for earlier operations
				after.ServerACKs > before.ServerACKs || after.ServerNAKs > before.ServerNAKs ||
				after.RxServer > before.RxServer && after.DupResponses == before.DupResponses && isResponseFrame(in)
			if !handled {
				t.Fatalf("frame neither emitted nor counted as a drop: %s", after.String())
			}
		}
	})
}

func isResponseFrame(f []byte) bool {
	p, err := roce.Parse(f)
	return err == nil && isResponse(p.Opcode)
}
