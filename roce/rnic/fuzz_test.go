package rnic

import (
	"testing"

	"github.com/swordbox/swordbox/roce"
	"github.com/swordbox/swordbox/roce/verbs"
)

// FuzzHandleFrame feeds arbitrary frames to a device's receive path (both
// the responder and the requester of a connected QP): no input may panic,
// and memory outside the registered region is never touched (Go's bounds
// checks would panic).
func FuzzHandleFrame(f *testing.F) {
	mk := func(fl roce.Fields) []byte {
		fl.SrcIP, fl.DstIP, fl.TTL, fl.PKey = [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 64, 0xffff
		fl.DestQP = qpnBase
		fl.PadCnt = uint8((4 - len(fl.Payload)%4) % 4)
		b := make([]byte, 512)
		n, err := roce.Build(b, &fl)
		if err != nil {
			f.Fatal(err)
		}
		return b[:n]
	}
	va := uint64(HostVABase)
	f.Add(mk(roce.Fields{Opcode: roce.OpRCWriteOnly, PSN: 0, VA: va, RKey: 0x101, DMALen: 4, Payload: []byte("abcd"), AckReq: true}))
	f.Add(mk(roce.Fields{Opcode: roce.OpRCWriteFirst, PSN: 0, VA: va, RKey: 0x101, DMALen: 600, Payload: make([]byte, 256)}))
	f.Add(mk(roce.Fields{Opcode: roce.OpRCReadRequest, PSN: 0, VA: va, RKey: 0x101, DMALen: 1000}))
	f.Add(mk(roce.Fields{Opcode: roce.OpRCCompareSwap, PSN: 0, VA: va + 8, RKey: 0x101, SwapAdd: 1}))
	f.Add(mk(roce.Fields{Opcode: roce.OpRCSendOnly, PSN: 0, Payload: []byte("hi!!")}))
	f.Add(mk(roce.Fields{Opcode: roce.OpRCAcknowledge, PSN: 3, Syndrome: 0x60}))
	f.Add(mk(roce.Fields{Opcode: roce.OpRCReadResponseOnly, PSN: 0, Payload: []byte("data")}))
	f.Add(mk(roce.Fields{Opcode: roce.OpRCAtomicAcknowledge, PSN: 0, Orig: 5}))
	f.Fuzz(func(t *testing.T, frame []byte) {
		d := engineDev(Config{MTU: 256, SkipICRC: true}, 2)
		cq := d.NewCQ(16)
		q, _ := d.NewQP(verbs.QPConfig{SendCQ: cq, RecvCQ: cq})
		if err := q.ConnectTo(q.Params(0), ConnParams{QPN: 0x55, PSN: 0, IP: [4]byte{10, 0, 0, 1}}); err != nil {
			t.Fatal(err)
		}
		m, _ := d.Register(make([]byte, 1024), verbs.AccessAll)
		lm, _ := d.Register(make([]byte, 1024), verbs.AccessAll)
		if m.RKey() != 0x101 {
			t.Fatalf("rkey %#x", m.RKey())
		}
		var c capture
		st := &rxState{b: nil}
		// The requester has a READ outstanding, so responses are examined.
		_ = q.sq.post(q, []verbs.SendWR{{ID: 1, Op: verbs.OpRead, SG: []verbs.SGE{{Addr: lm.Addr(), Length: 600, LKey: lm.LKey()}}, RemoteAddr: 0, RKey: 1}}, 0, &c)
		d.handleFrameTo(frame, 0, st, &c)
	})
}
