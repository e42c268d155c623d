package rnic

import (
	"sync"
	"testing"
	"time"

	"github.com/swordbox/swordbox/roce/verbs"
)

func TestTimingSchedule(t *testing.T) {
	cx := ConnectX5()
	for _, tc := range []struct {
		name    string
		dm      bool
		sameVA  bool
		qps     int
		rate    float64 // the cap that binds
		ops     int
		noLimit bool
	}{
		{"one host word", false, true, 1, 0, 30000, false},
		{"one device-memory word", true, true, 64, CX5CASSameAddrDM, 90000, false},
		{"one QP, many words", false, false, 1, CX5AtomicsPerQP, 27000, false},
		{"many QPs and words: aggregate", false, false, 64, CX5AtomicsAggregate, 550000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newTimingModel(nil, cx)
			rate := tc.rate
			if rate == 0 {
				// One host word from one QP: the tighter of the per-address
				// and per-QP caps.
				rate = min(CX5CASSameAddrHost, CX5AtomicsPerQP)
			}
			var last time.Duration
			for i := 0; i < tc.ops; i++ {
				va := uint64(0x1000)
				if !tc.sameVA {
					va += uint64(i%AddrSlots) * 8
				}
				last = m.schedule(0, uint32(i%tc.qps), tc.dm, 0x105, va)
			}
			// All ops offered at time 0: the last one starts when the cap
			// allows ops-1 before it, less the burst tolerance.
			want := time.Duration(float64(tc.ops-1)/rate*1e9) - 100*time.Microsecond
			if d := last - want; d < -2*time.Microsecond || d > time.Duration(float64(tc.ops)*1e9/rate/100) {
				t.Fatalf("last start %v, want about %v (cap %.3g/s)", last, want, rate)
			}
		})
	}
	// Uncapped model never waits.
	m := newTimingModel(nil, Timing{})
	for i := 0; i < 1000; i++ {
		if w := m.schedule(0, 1, false, 1, 8); w != 0 {
			t.Fatalf("uncapped wait %v", w)
		}
	}
}

// TestTimingThrottlesResponder runs CAS traffic on one word through a device
// with the ConnectX-5 model and checks the sleeps it asked for add up to the
// time the cap requires (no wall-clock assertion: the sleep is recorded).
func TestTimingThrottlesResponder(t *testing.T) {
	// A cap low enough to bind whatever the speed of the machine.
	const rate = 20000
	tm := Timing{AtomicsPerAddr: rate}
	p := newPair(t, lossy(11), fastCfg(), Config{Timing: &tm, Workers: 2})
	var mu sync.Mutex
	var slept time.Duration
	p.srv.timing.sleep = func(d time.Duration) {
		mu.Lock()
		slept += d
		mu.Unlock()
		time.Sleep(d)
	}
	cs, _ := p.qps(t, 4, 0)
	rm, _ := p.srv.Register(make([]byte, 64), verbs.AccessAll)
	lm, _ := p.cli.Register(make([]byte, 8), verbs.AccessAll)
	const per = 500
	var wg sync.WaitGroup
	for _, q := range cs {
		wg.Add(1)
		go func(q *QP) {
			defer wg.Done()
			for k := 0; k < per; k += 50 {
				wrs := make([]verbs.SendWR, 50)
				for i := range wrs {
					wrs[i] = verbs.SendWR{ID: uint64(k + i), Op: verbs.OpCompareSwap, SG: []verbs.SGE{{Addr: lm.Addr(), Length: 8, LKey: lm.LKey()}}, RemoteAddr: rm.Addr(), RKey: rm.RKey(), Compare: 0, SwapAdd: 0}
				}
				wrs[49].Flags = verbs.Signaled
				for {
					if err := q.PostSend(wrs); err == nil {
						break
					}
					time.Sleep(100 * time.Microsecond) // queue full
				}
			}
		}(q)
	}
	wg.Wait()
	waitN(t, p.cliCQ, 4*per/50, 30*time.Second)
	n := p.srv.Stats().AtomicsExecuted
	need := time.Duration(float64(n)/rate*1e9) - 100*time.Microsecond
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d atomics on one word: slept %v in total, the cap needs at least %v", n, slept, need)
	if n != 4*per {
		t.Fatalf("executed %d atomics, want %d", n, 4*per)
	}
	// Sleeps of the 2 workers may overlap, and a sleep that was due while
	// the pipeline was busy anyway is shorter: allow a factor of 2.
	if slept < need/2 {
		t.Fatalf("throttled %v, far less than the %v the cap requires", slept, need)
	}
}
