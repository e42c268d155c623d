package ctrl

import (
	"slices"
)

// HotKeyPolicy configures hot-key steering.
type HotKeyPolicy struct {
	N          int      // keys to keep steered: the hottest N
	Probes     int      // extra slots that sample candidates not yet hot
	MinDelta   uint64   // activity per period a key needs to enter the hot set
	Candidates []uint64 // the keys that may become hot, probed in this order
}

// HotKeys is the deterministic core of hot-key steering.
//
// swordbox.p4 counts activity per tracked key only (its per-key counters
// are indexed by the slot the controller gives a key in tracked_keys), so
// a key's heat can be measured only while it is tracked. HotKeys therefore
// keeps two groups in the table: the hot set (at most N keys, the ones
// steered on purpose) and a few probe slots that cycle through the
// candidate keys, one period each. At every step the activity of hot keys
// and probes during the last period is compared: the N most active (ties
// kept by incumbents, then by lower key) form the new hot set, a newcomer
// needing at least MinDelta; then the probes advance round-robin over the
// candidates outside the hot set. Steering a probe key for one period is
// harmless: steering is correct for any key, it only costs switch state.
//
// A key's activity is the sum of its per-key counters (CAS steered, READs
// steered, READ misses, retransmitted CAS): the events where steering the
// key matters, which is what contention is.
type HotKeys struct {
	policy HotKeyPolicy
	hot    []uint64
	probes []uint64
	cursor int
}

// NewHotKeys returns the engine with an empty hot set.
func NewHotKeys(p HotKeyPolicy) *HotKeys {
	h := &HotKeys{policy: p}
	h.advanceProbes()
	return h
}

// Adopt sets the hot set (e.g. the keys found in the switch's table when
// this controller takes over), keeping at most N.
func (h *HotKeys) Adopt(keys []uint64) {
	h.hot = append([]uint64(nil), keys...)
	slices.Sort(h.hot)
	if len(h.hot) > h.policy.N {
		h.hot = h.hot[:h.policy.N]
	}
	h.probes = nil
	h.advanceProbes()
}

// Hot returns the hot set, sorted.
func (h *HotKeys) Hot() []uint64 { return slices.Clone(h.hot) }

// Tracked returns the keys that should be in the tracked-keys table: the
// hot set and the current probes, sorted.
func (h *HotKeys) Tracked() []uint64 {
	out := append(slices.Clone(h.hot), h.probes...)
	slices.Sort(out)
	return slices.Compact(out)
}

// Step takes the activity of every tracked key during the last period and
// returns the new tracked set (as Tracked).
func (h *HotKeys) Step(delta map[uint64]uint64) []uint64 {
	incumbent := map[uint64]bool{}
	for _, k := range h.hot {
		incumbent[k] = true
	}
	var cands []uint64
	cands = append(cands, h.hot...)
	for _, k := range h.probes {
		if !incumbent[k] && delta[k] >= max(h.policy.MinDelta, 1) {
			cands = append(cands, k)
		}
	}
	slices.SortStableFunc(cands, func(a, b uint64) int {
		da, db := delta[a], delta[b]
		switch {
		case da != db:
			if da > db {
				return -1
			}
			return 1
		case incumbent[a] != incumbent[b]:
			if incumbent[a] {
				return -1
			}
			return 1
		case a < b:
			return -1
		case a > b:
			return 1
		}
		return 0
	})
	if len(cands) > h.policy.N {
		cands = cands[:h.policy.N]
	}
	slices.Sort(cands)
	h.hot = cands
	h.advanceProbes()
	return h.Tracked()
}

// advanceProbes picks the next Probes candidates (round-robin) that are not hot.
func (h *HotKeys) advanceProbes() {
	h.probes = h.probes[:0]
	n := len(h.policy.Candidates)
	if n == 0 || h.policy.Probes <= 0 {
		return
	}
	hot := map[uint64]bool{}
	for _, k := range h.hot {
		hot[k] = true
	}
	for tried := 0; tried < n && len(h.probes) < h.policy.Probes; tried++ {
		k := h.policy.Candidates[h.cursor%n]
		h.cursor = (h.cursor + 1) % n
		if !hot[k] {
			h.probes = append(h.probes, k)
		}
	}
}

// SlotPlan is the change of the tracked-keys table from one key set to
// another: keys to delete (with their slots), keys to insert with the slots
// given to them. Slots freed by deletions are reused, lowest first; a
// reused slot must have its cached tail reset before the insert.
type SlotPlan struct {
	Delete map[uint64]uint16
	Insert map[uint64]uint16
}

// PlanSlots computes the table change from cur (key -> slot) to the key
// set want, with capacity slots in all. Keys kept keep their slots. It
// returns the new mapping too. Keys that do not fit are left out (the
// caller sized want within capacity).
func PlanSlots(cur map[uint64]uint16, want []uint64, capacity int) (SlotPlan, map[uint64]uint16) {
	p := SlotPlan{Delete: map[uint64]uint16{}, Insert: map[uint64]uint16{}}
	wantSet := map[uint64]bool{}
	for _, k := range want {
		wantSet[k] = true
	}
	next := map[uint64]uint16{}
	used := map[uint16]bool{}
	for k, s := range cur {
		if wantSet[k] {
			next[k] = s
			used[s] = true
		} else {
			p.Delete[k] = s
		}
	}
	slot := 0
	sorted := slices.Clone(want)
	slices.Sort(sorted)
	for _, k := range sorted {
		if _, ok := next[k]; ok {
			continue
		}
		for slot < capacity && used[uint16(slot)] {
			slot++
		}
		if slot >= capacity {
			break
		}
		next[k] = uint16(slot)
		p.Insert[k] = uint16(slot)
		used[uint16(slot)] = true
	}
	return p, next
}

// DiffSlots is the table change from cur to want (both key -> slot): a key
// whose slot differs is deleted and inserted again, so that its new slot
// gets a fresh cached tail.
func DiffSlots(cur, want map[uint64]uint16) SlotPlan {
	p := SlotPlan{Delete: map[uint64]uint16{}, Insert: map[uint64]uint16{}}
	for k, s := range cur {
		if ws, ok := want[k]; !ok || ws != s {
			p.Delete[k] = s
		}
	}
	for k, s := range want {
		if cs, ok := cur[k]; !ok || cs != s {
			p.Insert[k] = s
		}
	}
	return p
}
