package sim

import (
	"context"
	"testing"
	"time"

	"github.com/swordbox/swordbox/roce"
	"github.com/swordbox/swordbox/roce/verbs"
)

// TestRepairInVirtualTime: the switch's link to the memory node loses a
// client's first CAS. The controller's own repair step, run by the loop
// every 100 us of virtual time, finds it outstanding in the switch and
// retransmits it by PacketOut; the memory node executes it and its ATOMIC
// ACK completes the client's CAS long before the RNIC's 50 ms timeout.
func TestRepairInVirtualTime(t *testing.T) {
	r, err := NewRack(context.Background(), Config{Seed: 1, Hosts: 1, MemorySize: 1 << 20, Steering: "write",
		RNICTimeout: 50 * time.Millisecond, RepairPeriod: 100 * time.Microsecond, RepairThreshold: 200 * time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	lost := 0
	r.SwitchLinks()[0].Lose = func(frame []byte) bool {
		var p roce.Packet
		if roce.ParseInto(&p, frame) == nil && p.Opcode == roce.OpRCCompareSwap && lost == 0 {
			lost++
			return true
		}
		return false
	}
	cli := r.Hosts[0]
	cq := cli.Device().NewCQ(8)
	q, _, err := r.Connect(cli, cq, r.Memory[0], nil, 8)
	if err != nil {
		t.Fatal(err)
	}
	local, _ := cli.Device().Register(make([]byte, 64), verbs.AccessAll)
	rm := r.MemoryMR[0].Remote()
	var done int64
	wcs := make([]verbs.WC, 4)
	cli.AfterFire = func() {
		if k := cq.Poll(wcs); k > 0 && done == 0 {
			if wcs[0].Status != verbs.StatusSuccess {
				t.Fatalf("completion %+v", wcs[0])
			}
			done = r.Sim.Now()
		}
	}
	// A linking CAS as Clover sends it: compare a tail word (0), swap
	// naming a node (any non-zero LH in bits 59..28).
	wr := verbs.SendWR{ID: 1, Op: verbs.OpCompareSwap, SG: []verbs.SGE{{Addr: local.Addr(), Length: 8, LKey: local.LKey()}},
		RemoteAddr: rm.Addr + 64, RKey: rm.RKey, Compare: 0, SwapAdd: 5 << 28, Flags: verbs.Signaled}
	if err := q.PostSend([]verbs.SendWR{wr}); err != nil {
		t.Fatal(err)
	}
	r.Sim.RunUntil(int64(time.Millisecond))
	if lost != 1 || r.Repairs() != 1 {
		t.Fatalf("lost %d CAS, repaired %d", lost, r.Repairs())
	}
	if done == 0 || done > int64(time.Millisecond) {
		t.Fatalf("CAS completed at %v of virtual time, want within 1ms (repair, not the RNIC's timeout)", time.Duration(done))
	}
	t.Logf("CAS lost, repaired, completed at %v", time.Duration(done))
}
