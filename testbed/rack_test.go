package testbed

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/swordbox/swordbox/roce/rnic"
	"github.com/swordbox/swordbox/roce/verbs"
)

// post runs one work request to completion and returns its completion.
func post(t *testing.T, q *rnic.QP, cq verbs.CQ, wr verbs.SendWR) verbs.WC {
	t.Helper()
	wr.Flags |= verbs.Signaled
	if err := q.PostSend([]verbs.SendWR{wr}); err != nil {
		t.Fatalf("post %v: %v", wr.Op, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var wc [1]verbs.WC
	if _, err := cq.Wait(ctx, wc[:]); err != nil {
		t.Fatalf("%v: no completion: %v", wr.Op, err)
	}
	if wc[0].Status != verbs.StatusSuccess {
		t.Fatalf("%v: status %v", wr.Op, wc[0].Status)
	}
	return wc[0]
}

// TestRackVerbsThroughSwitch drives every one-sided verb from a host through
// the switch running swordbox.p4 (programmed over gRPC by the controller) to
// the memory node, in every steering mode, and checks memory, completions and
// the switch's byte counters.
func TestRackVerbsThroughSwitch(t *testing.T) {
	for _, mode := range []string{SteerOff, SteerWrite, SteerReadWrite} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			r, err := NewRack(ctx, Config{Hosts: 1, Steering: mode, MemorySize: 1 << 20, TrackedKeys: []uint64{7}})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			h := r.Hosts[0]
			cq := h.NewCQ(16)
			q, err := h.NewQP(qpConfig(cq, 16))
			if err != nil {
				t.Fatal(err)
			}
			mq, err := r.Memory.NewQP(qpConfig(r.Memory.NewCQ(16), 16))
			if err != nil {
				t.Fatal(err)
			}
			if err := rnic.Connect(q, mq, 100, 200); err != nil {
				t.Fatal(err)
			}
			local, err := h.Register(make([]byte, 4096), verbs.AccessAll)
			if err != nil {
				t.Fatal(err)
			}
			remote := r.MemoryMR.Remote()
			copy(local.Bytes(), "through the switch")
			post(t, q, cq, verbs.SendWR{Op: verbs.OpWrite, SG: []verbs.SGE{{Addr: local.Addr(), Length: 18, LKey: local.LKey()}},
				RemoteAddr: remote.Addr + 64, RKey: remote.RKey})
			if got := string(r.MemoryMR.Bytes()[64:82]); got != "through the switch" {
				t.Fatalf("memory after WRITE = %q", got)
			}
			post(t, q, cq, verbs.SendWR{Op: verbs.OpRead, SG: []verbs.SGE{{Addr: local.Addr() + 1024, Length: 18, LKey: local.LKey()}},
				RemoteAddr: remote.Addr + 64, RKey: remote.RKey})
			if got := string(local.Bytes()[1024:1042]); got != "through the switch" {
				t.Fatalf("READ returned %q", got)
			}
			wc := post(t, q, cq, verbs.SendWR{Op: verbs.OpCompareSwap, SG: []verbs.SGE{{Addr: local.Addr() + 2048, Length: 8, LKey: local.LKey()}},
				RemoteAddr: remote.Addr + 256, RKey: remote.RKey, Compare: 0, SwapAdd: 0xfeed})
			if wc.Orig != 0 || binary.LittleEndian.Uint64(r.MemoryMR.Bytes()[256:]) != 0xfeed {
				t.Fatalf("CAS: orig %#x, memory %#x", wc.Orig, binary.LittleEndian.Uint64(r.MemoryMR.Bytes()[256:]))
			}
			wc = post(t, q, cq, verbs.SendWR{Op: verbs.OpFetchAdd, SG: []verbs.SGE{{Addr: local.Addr() + 2048, Length: 8, LKey: local.LKey()}},
				RemoteAddr: remote.Addr + 256, RKey: remote.RKey, SwapAdd: 1})
			if wc.Orig != 0xfeed || binary.LittleEndian.Uint64(r.MemoryMR.Bytes()[256:]) != 0xfeee {
				t.Fatalf("FETCH_ADD: orig %#x", wc.Orig)
			}
			w := r.Wire()
			// Four requests and four responses at least, each at least a
			// RoCEv2 frame of Ethernet+IPv4+UDP+BTH+ICRC = 58 bytes.
			if w.Frames < 8 || w.Bytes < 8*58 {
				t.Fatalf("switch counted %d frames, %d bytes", w.Frames, w.Bytes)
			}
		})
	}
}
