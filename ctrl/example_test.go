package ctrl_test

import (
	"fmt"
	"time"

	"github.com/swordbox/swordbox/ctrl"
)

// The repair core fed snapshots by hand: a CAS seen unchanged for the
// threshold is due; once acknowledged it disappears from the snapshot.
func ExampleRepairTracker() {
	tr := ctrl.NewRepairTracker(ctrl.RepairPolicy{Threshold: 20 * time.Millisecond})
	t0 := time.Unix(0, 0)
	o := ctrl.Outstanding{Slot: 3, PSN: 42, Timestamp: 1000}
	for _, ms := range []int{0, 10, 20} {
		now := t0.Add(time.Duration(ms) * time.Millisecond)
		due := tr.Observe(now, []ctrl.Outstanding{o})
		for _, d := range due {
			tr.Sent(d.Slot, now)
		}
		fmt.Printf("t=%dms due %d\n", ms, len(due))
	}
	tr.Observe(t0.Add(30*time.Millisecond), nil)
	fmt.Println("following", tr.Pending())
	// Output:
	// t=0ms due 0
	// t=10ms due 0
	// t=20ms due 1
	// following 0
}

// Hot-key steering: two probe slots sweep the candidates until the hot
// keys are found.
func ExampleHotKeys() {
	h := ctrl.NewHotKeys(ctrl.HotKeyPolicy{N: 1, Probes: 2, MinDelta: 1, Candidates: []uint64{1, 2, 3, 4}})
	heat := map[uint64]uint64{4: 9}
	for i := 0; i < 3; i++ {
		tracked := h.Tracked()
		d := map[uint64]uint64{}
		for _, k := range tracked {
			d[k] = heat[k]
		}
		h.Step(d)
		fmt.Println("tracked", tracked, "-> hot", h.Hot())
	}
	// Output:
	// tracked [1 2] -> hot []
	// tracked [3 4] -> hot [4]
	// tracked [1 2 4] -> hot [4]
}
