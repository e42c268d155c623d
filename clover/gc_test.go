package clover

import (
	"testing"
	"time"
)

// TestGCSafetyUnderSlotReuse runs contended puts and gets on a pool of
// slots small enough that every slot is reclaimed and reused many times
// (T_r 20ms), with some versions wrapping through the overflow list, and
// checks linearizability (no read of a reused slot's data passes for the
// key's value), the chain invariants, and the MS's slot accounting.
func TestGCSafetyUnderSlotReuse(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	layout := RegionLayout{Shortcuts: 64, Chunks: 2, ChunkSize: 1 << 14} // 256 slots of 128 bytes
	r := newTestRack(t, rackConfig{clients: 8, valueSize: 64, layout: layout, tr: 20 * time.Millisecond, epoch: 50 * time.Millisecond})
	for _, c := range r.clients {
		c.cfg.AllocBatch = 8
		c.cfg.RetireBatch = 4
	}
	hist := runHistory(t, r, 4, 600, 3)
	checkLinearizable(t, hist)
	time.Sleep(200 * time.Millisecond) // let the last retires age out
	st := r.ms.Stats()
	m := sumMetrics(r.clients)
	t.Logf("puts %d, slots carved %d, ToGC %d overflow %d, wrapped %d, bad retires %d, unknown predecessors %d; client stale cursors %d recoveries %d read timeouts %d",
		m.Puts, st.Carved, st.ToGC, st.Overflow, st.Wrapped, st.BadRetire, st.UnknownPredecessor, m.StaleCursors, m.Recoveries, m.ReadTimeouts)
	if m.CASSteered != 0 || m.ReadsSteered != 0 || m.Uncertain != 0 {
		t.Errorf("no switch, yet %d CAS and %d READs judged steered, %d uncertain: a reused slot passed for a fresh cursor", m.CASSteered, m.ReadsSteered, m.Uncertain)
	}
	if reuse := float64(m.Puts) / float64(st.Carved); reuse < 5 {
		t.Errorf("each slot reused %.1f times on average: the pool is too large for this test", reuse)
	}
	if st.Wrapped == 0 {
		t.Errorf("no version wrapped: the overflow path was not exercised")
	}
	if st.BadRetire != 0 || st.UnknownPredecessor != 0 {
		t.Errorf("without steering every retire must name a live predecessor: %d bad, %d unknown", st.BadRetire, st.UnknownPredecessor)
	}
	if st.Free+st.Allocated+st.Retired != st.Carved {
		t.Errorf("slot accounting: %+v", st)
	}
	// Allocated = one tail per key + slots in client buckets + retires not
	// yet sent (flushed at the end of runHistory: none).
	inBuckets := 0
	for _, c := range r.clients {
		for _, b := range c.buckets {
			inBuckets += len(b)
		}
	}
	if st.Allocated != 4+inBuckets {
		t.Errorf("%d slots allocated, want 4 tails + %d in client buckets: a leak", st.Allocated, inBuckets)
	}
	r.checkChains(t, []uint64{1, 2, 3, 4})
}
