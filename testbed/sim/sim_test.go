package sim

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/swordbox/swordbox/roce/verbs"
)

// sink records what reaches it: virtual time and argument of each event.
type sink struct {
	at   []int64
	args []uint64
	lens []int
}

func (k *sink) Event(s *Sim, arg uint64, f *Frame) {
	k.at, k.args = append(k.at, s.Now()), append(k.args, arg)
	if f != nil {
		k.lens = append(k.lens, len(f.B))
	}
}

func TestEventOrder(t *testing.T) {
	s := New(1)
	k := &sink{}
	// Same instant: scheduling order; earlier instants first.
	s.Schedule(20, k, 1, nil)
	s.Schedule(10, k, 2, nil)
	s.Schedule(20, k, 3, nil)
	s.Schedule(10, k, 4, nil)
	s.Schedule(0, k, 5, nil)
	s.Run()
	want := []uint64{5, 2, 4, 1, 3}
	for i, a := range want {
		if k.args[i] != a {
			t.Fatalf("order %v, want %v", k.args, want)
		}
	}
	if k.at[4] != 20 || s.Now() != 20 {
		t.Fatalf("times %v, now %d", k.at, s.Now())
	}
}

// TestLinkTimeline: back-to-back frames serialize at line rate behind
// each other; a short queue drops at the tail.
func TestLinkTimeline(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   LinkConfig
		sizes []int
		at    []int64 // arrivals
		drops uint64
	}{
		// 100 Gb/s, 10 ns: a 1000-byte frame is 1024 bytes of line time,
		// 81.92 ns; the second starts when the first has left.
		{"100G back to back", LinkConfig{QueueBytes: 1 << 20}, []int{1000, 1000, 40},
			[]int64{92, 174, 181}, 0}, // ceil(81.92)+10, ceil(163.84)+10, ceil(163.84+6.72)+10
		// 10 Gb/s, 1 us: 0.8 ns per byte; 124 bytes of line time are
		// 99.2 ns (ceil 100, + 1000), the second frame leaves at 198.4.
		{"10G", LinkConfig{Gbps: 10, Propagation: time.Microsecond, QueueBytes: 1 << 20}, []int{100, 100},
			[]int64{1100, 1199}, 0},
		// A queue of 2140 bytes holds two 1024-byte frames: the third is
		// dropped; the 84 bytes of a minimal frame still fit beside them.
		{"tail drop", LinkConfig{QueueBytes: 2140}, []int{1000, 1000, 1000, 60},
			[]int64{92, 174, 181}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(1)
			k := &sink{}
			l, err := NewLink(s, tc.cfg, k, 7)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range tc.sizes {
				l.Send(0, make([]byte, n))
			}
			s.Run()
			if len(k.at) != len(tc.at) || l.Drops != tc.drops {
				t.Fatalf("arrivals %v drops %d, want %v drops %d", k.at, l.Drops, tc.at, tc.drops)
			}
			for i := range tc.at {
				if k.at[i] != tc.at[i] || k.args[i] != 7 {
					t.Fatalf("arrivals %v (args %v), want %v", k.at, k.args, tc.at)
				}
			}
		})
	}
}

func TestLinkConfigRefused(t *testing.T) {
	s := New(1)
	for _, c := range []LinkConfig{{Gbps: -1, QueueBytes: 1000}, {Propagation: -1, QueueBytes: 1000}, {QueueBytes: 10}} {
		if _, err := NewLink(s, c, &sink{}, 0); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// mixedRun runs random READ, WRITE, CMP_SWAP and FETCH_ADD traffic from
// three hosts (drawn from the simulation's PRNG) and returns the trace
// hash, the memory's hash and the completion count.
func mixedRun(t testing.TB, seed uint64) (uint64, uint64, int) {
	r := newTestRack(t, 3, seed)
	r.Sim.Trace = true
	rng := r.Sim.Rand()
	rm := r.MemoryMR[0].Remote()
	done := 0
	for _, h := range r.Hosts {
		cq := h.Device().NewCQ(256)
		local, err := h.Device().Register(make([]byte, 64<<10), verbs.AccessAll)
		if err != nil {
			t.Fatal(err)
		}
		var qps []interface{ PostSend([]verbs.SendWR) error }
		for i := 0; i < 4; i++ {
			q, _, err := r.Connect(h, cq, r.Memory[0], nil, 16)
			if err != nil {
				t.Fatal(err)
			}
			qps = append(qps, q)
		}
		wcs := make([]verbs.WC, 64)
		post := func(qi int, id uint64) {
			wr := verbs.SendWR{ID: id, SG: []verbs.SGE{{Addr: local.Addr() + uint64(qi*16+int(id%16))*256, Length: 8, LKey: local.LKey()}},
				RemoteAddr: rm.Addr + uint64(rng.IntN(512))*8, RKey: rm.RKey, Flags: verbs.Signaled, SwapAdd: rng.Uint64(), Compare: rng.Uint64() % 4}
			switch rng.IntN(4) {
			case 0:
				wr.Op = verbs.OpRead
				wr.SG[0].Length = uint32(8 + rng.IntN(200))
			case 1:
				wr.Op = verbs.OpWrite
				wr.SG[0].Length = uint32(8 + rng.IntN(200))
			case 2:
				wr.Op = verbs.OpCompareSwap
			default:
				wr.Op = verbs.OpFetchAdd
			}
			if err := qps[qi].PostSend([]verbs.SendWR{wr}); err != nil {
				t.Fatal(err)
			}
		}
		h.AfterFire = func() {
			for k := cq.Poll(wcs); k > 0; k = cq.Poll(wcs) {
				for _, wc := range wcs[:k] {
					if wc.Status != verbs.StatusSuccess {
						t.Fatalf("completion %+v", wc)
					}
					done++
					qi := 0
					for i, q := range qps {
						if q.(interface{ QPN() uint32 }).QPN() == wc.QPN {
							qi = i
						}
					}
					post(qi, wc.ID+16)
				}
			}
		}
		for qi := range qps {
			for s := 0; s < 8; s++ {
				post(qi, uint64(qi*1000+s))
			}
		}
	}
	r.Sim.RunUntil(200_000)
	mem := r.MemoryMR[0].Bytes()
	var mh uint64 = fnvOffset
	for i := 0; i < 512*8; i += 8 {
		mh = (mh ^ binary.LittleEndian.Uint64(mem[rm.Addr-r.MemoryMR[0].Addr()+uint64(i):])) * fnvPrime
	}
	return r.Sim.TraceHash(), mh, done
}

// TestDeterminism: the same seed gives the same trace (every delivered
// frame, byte for byte, with its time), the same memory and the same
// completions; another seed gives another trace.
func TestDeterminism(t *testing.T) {
	h1, m1, n1 := mixedRun(t, 42)
	h2, m2, n2 := mixedRun(t, 42)
	if h1 != h2 || m1 != m2 || n1 != n2 {
		t.Fatalf("seed 42 twice: trace %#x / %#x, memory %#x / %#x, completions %d / %d", h1, h2, m1, m2, n1, n2)
	}
	if n1 < 1000 {
		t.Fatalf("only %d completions in 200us", n1)
	}
	h3, _, _ := mixedRun(t, 43)
	if h3 == h1 {
		t.Fatalf("seeds 42 and 43 gave the same trace %#x", h1)
	}
	t.Logf("seed 42: %d completions, trace %#x", n1, h1)
}
