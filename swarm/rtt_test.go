package swarm_test

import (
	"context"
	"testing"
	"time"

	"github.com/swordbox/swordbox/testbed"
)

// TestRoundTripsPerOp counts the common case (paper Table 2: SWARM-KV
// gets and updates take 1 RTT): without contention, with the background
// verify and in-place copy of each write landed before the next
// operation, every update and every get by any client takes exactly one
// round trip. A get is one READ per replica (metadata array and in-place
// copy in one READ); an update is, per replica, WRITE of the out-of-place
// buffer, CAS-MAX of the writer's metadata word and a READ of the array,
// in one doorbell; the background adds a CAS (VERIFIED) and the in-place
// WRITE per replica. It holds with and without the middlebox.
func TestRoundTripsPerOp(t *testing.T) {
	for _, mode := range []struct {
		name           string
		mbox, casWrite bool
	}{{"direct", false, false}, {"middlebox", true, false}, {"cas-to-write", true, true}} {
		t.Run(mode.name, func(t *testing.T) {
			r := newRack(t, testbed.SwarmConfig{Threads: 2, Keys: 8, Middlebox: mode.mbox, CASToWrite: mode.casWrite})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			a, b := r.Clients[0], r.Clients[1]
			const n = 3 // replicas
			if err := a.Put(ctx, 1, val(1, 64)); err != nil {
				t.Fatal(err)
			}
			for _, c := range r.Clients {
				if err := c.Drain(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := b.Get(ctx, 1, nil); err != nil { // b learns the key from the index
				t.Fatal(err)
			}
			ma0, mb0 := a.Metrics(), b.Metrics()
			w0 := r.MemoryWire()
			const ops = 40
			for i := 0; i < ops; i++ {
				if err := a.Put(ctx, 1, val(uint64(i+2), 64)); err != nil {
					t.Fatal(err)
				}
				if err := a.Drain(ctx); err != nil {
					t.Fatal(err)
				}
				for _, c := range r.Clients {
					if _, err := c.Get(ctx, 1, nil); err != nil {
						t.Fatal(err)
					}
					if err := c.Drain(ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
			ma, mb := a.Metrics(), b.Metrics()
			if got := ma.PutRTT[0] - ma0.PutRTT[0]; got != ops || ma.Puts-ma0.Puts != ops {
				t.Errorf("%d updates: %d took one round trip (histogram %v)", ops, got, ma.PutRTT)
			}
			gets := (ma.Gets - ma0.Gets) + (mb.Gets - mb0.Gets)
			one := (ma.GetRTT[0] - ma0.GetRTT[0]) + (mb.GetRTT[0] - mb0.GetRTT[0])
			if gets != 2*ops || one != gets {
				t.Errorf("%d gets: %d took one round trip (histograms %v %v)", gets, one, ma.GetRTT, mb.GetRTT)
			}
			if rt := (ma.RoundTrips - ma0.RoundTrips) + (mb.RoundTrips - mb0.RoundTrips); rt != 3*ops {
				t.Errorf("%d operations took %d round trips", 3*ops, rt)
			}
			// Verbs on the critical path: an update 3 per replica, a get 1.
			verbs := (ma.Verbs - ma0.Verbs) + (mb.Verbs - mb0.Verbs)
			if want := uint64(ops*3*n + 2*ops*n); verbs != want {
				t.Errorf("critical-path verbs %d, want %d", verbs, want)
			}
			if bg := ma.BgVerbs - ma0.BgVerbs; bg != uint64(ops*2*n) {
				t.Errorf("background verbs %d, want %d (VERIFIED CAS and in-place WRITE per replica)", bg, ops*2*n)
			}
			if oop := ma.OutOfPlace + mb.OutOfPlace - ma0.OutOfPlace - mb0.OutOfPlace; oop != 0 {
				t.Errorf("%d gets read the out-of-place buffer", oop)
			}
			w1 := r.MemoryWire()
			t.Logf("%s: %.1f frames and %.0f bytes per operation on the memory nodes' links", mode.name,
				float64(w1.Frames-w0.Frames)/(3*ops), float64(w1.Bytes-w0.Bytes)/(3*ops))
		})
	}
}
