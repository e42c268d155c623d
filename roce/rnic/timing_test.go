package rnic

import (
	"sync"
	"testing"
	"time"

	"github.com/swordbox/swordbox/netio"
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
			// allows ops-1 before it.
			want := time.Duration(float64(tc.ops-1) / rate * 1e9)
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

// TestTimingThrottlesResponder runs CAS traffic on one word through a
// device with a low per-address cap and checks the cap held: the run takes
// at least n/rate. The same traffic without the timing model runs first, to
// show the pipeline is faster than the cap (else the check could not fail).
func TestTimingThrottlesResponder(t *testing.T) {
	const rate = 20000
	const per = 500
	// Credit (1ms) and slack (200us) let that much run ahead.
	need := time.Duration(float64(4*per)/rate*1e9) - 1200*time.Microsecond
	untimed, _ := casRun(t, nil)
	if untimed >= need/2 {
		t.Skipf("untimed run took %v, too slow to tell a cap of %d/s apart (needs < %v)", untimed, rate, need/2)
	}
	elapsed, slept := casRun(t, &Timing{AtomicsPerAddr: rate})
	t.Logf("%d atomics on one word: untimed %v; capped at %d/s %v (slept %v); the cap needs at least %v", 4*per, untimed, rate, elapsed, slept, need)
	if elapsed < need {
		t.Fatalf("%d atomics on one word in %v: faster than the cap of %d/s allows (%v)", 4*per, elapsed, rate, need)
	}
}

// casRun issues 4 x 500 CMP_SWAPs on one word from 4 QPs over a clean link
// and returns the time it took and the time the timing model slept.
func casRun(t *testing.T, tm *Timing) (time.Duration, time.Duration) {
	p := newPair(t, netio.Faults{}, fastCfg(), Config{Timing: tm, Workers: 2})
	var mu sync.Mutex
	var slept time.Duration
	if p.srv.timing != nil {
		p.srv.timing.sleep = func(d time.Duration) {
			mu.Lock()
			slept += d
			mu.Unlock()
			time.Sleep(d)
		}
	}
	cs, _ := p.qps(t, 4, 0)
	rm, _ := p.srv.Register(make([]byte, 64), verbs.AccessAll)
	lm, _ := p.cli.Register(make([]byte, 8), verbs.AccessAll)
	const per = 500
	start := time.Now()
	var wg sync.WaitGroup
	for _, q := range cs {
		wg.Add(1)
		go func(q *QP) {
			defer wg.Done()
			for k := 0; k < per; k += 50 {
				wrs := make([]verbs.SendWR, 50)
				for i := range wrs {
					wrs[i] = verbs.SendWR{ID: uint64(k + i), Op: verbs.OpCompareSwap, SG: []verbs.SGE{{Addr: lm.Addr(), Length: 8, LKey: lm.LKey()}}, RemoteAddr: rm.Addr(), RKey: rm.RKey()}
				}
				wrs[49].Flags = verbs.Signaled
				for q.PostSend(wrs) != nil {
					time.Sleep(100 * time.Microsecond) // queue full
				}
			}
		}(q)
	}
	wg.Wait()
	waitN(t, p.cliCQ, 4*per/50, 30*time.Second)
	elapsed := time.Since(start)
	if n := p.srv.Stats().AtomicsExecuted; n != 4*per {
		t.Fatalf("executed %d atomics, want %d", n, 4*per)
	}
	mu.Lock()
	defer mu.Unlock()
	return elapsed, slept
}

// TestTimingCredit: a resource idle for long lends at most Credit: after
// idleness about Credit*rate atomics start at once, the next one waits.
func TestTimingCredit(t *testing.T) {
	m := newTimingModel(nil, Timing{AtomicsPerAddr: 1e6, Credit: time.Millisecond})
	now := int64(10 * time.Second)
	free := 0
	for m.schedule(now, 1, false, 1, 8) == 0 {
		free++
	}
	if free < 999 || free > 1001 {
		t.Fatalf("%d atomics ran on credit, want about 1000 (1ms at 1M/s)", free)
	}
}

// TestVirtualTimingConstants checks the virtual-time model against its
// constants: n requests offered at once are executed one service interval
// of the binding resource apart, and responses leave after the memory
// access of their verb.
func TestVirtualTimingConstants(t *testing.T) {
	cx := VirtualConnectX5()
	ps := func(rate float64) float64 { return 1e12 / rate }
	for _, tc := range []struct {
		name     string
		op       vop
		dm       bool
		qps      int  // requests spread over this many QPs
		sameWord bool // atomics on one word
		interval float64
		out      time.Duration
	}{
		{"WRITE one QP", vopPosted, false, 1, false, ps(CX5QPMsgRate), 0},
		{"WRITE many QPs", vopPosted, false, 1000, false, ps(CX5MsgRate), 0},
		{"READ host", vopRead, false, 1000, false, ps(CX5MsgRate), CX5PCIeRTT},
		{"READ device memory", vopRead, true, 1000, false, ps(CX5MsgRate), CX5DMLatency},
		{"CAS one word host", vopAtomic, false, 1000, true, ps(CX5CASSameAddrHost), CX5PCIeRTT},
		{"CAS one word device memory", vopAtomic, true, 1000, true, ps(CX5CASSameAddrDM), CX5DMLatency},
		{"CAS one QP, many words", vopAtomic, false, 1, false, ps(CX5AtomicsPerQP), CX5PCIeRTT},
		{"CAS many QPs and words", vopAtomic, false, 1000, false, ps(CX5AtomicsAggregate), CX5PCIeRTT},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newVClock(cx)
			const n = 1000
			var first, last int64
			for i := 0; i < n; i++ {
				va := uint64(0x1000)
				if !tc.sameWord {
					va += uint64(i) * 64
				}
				exec, out := c.request(0, i%tc.qps, tc.op, tc.dm, 7, va, 8)
				if out != int64(tc.out) {
					t.Fatalf("response delay %d ns, want %v", out, tc.out)
				}
				if i == 0 {
					first = exec
				}
				last = exec
			}
			if first != int64(CX5ProcLatency) {
				t.Errorf("first executed at %d ns, want ProcLatency %v", first, CX5ProcLatency)
			}
			got := float64(last-first) * 1000 / (n - 1)
			if d := got/tc.interval - 1; d > 0.002 || d < -0.002 {
				t.Errorf("interval %.1f ps, want %.1f", got, tc.interval)
			}
		})
	}
	t.Run("requester", func(t *testing.T) {
		c := newVClock(cx)
		if at := c.transmit(1000); at != 1000+int64(CX5TxLatency) {
			t.Errorf("posted at 1000, leaves at %d, want %d", at, 1000+int64(CX5TxLatency))
		}
		var at int64
		for i := 0; i < 1000; i++ {
			at = c.transmit(1000)
		}
		if want := 1000 + int64(CX5TxLatency) + int64(1000*ps(CX5MsgRate)/1000); at < want-1 || at > want+1 {
			t.Errorf("1001st packet leaves at %d, want %d (one per 1/MsgRate)", at, want)
		}
		if e := c.response(5000); e != 5000+int64(CX5RxLatency) {
			t.Errorf("response at 5000 processed at %d, want %d", e, 5000+int64(CX5RxLatency))
		}
	})
}

// TestVirtualAtomicsStallAccess: a READ covering a word with atomics
// queued executes only after the last of them; a READ of other words, or
// with the stall off, does not wait.
func TestVirtualAtomicsStallAccess(t *testing.T) {
	for _, stall := range []bool{true, false} {
		cx := VirtualConnectX5()
		cx.AtomicsStallAccess = stall
		cx.MsgRate = 0 // only the atomic units queue
		c := newVClock(cx)
		var last int64
		for i := 0; i < 10; i++ {
			last, _ = c.request(0, i, vopAtomic, false, 7, 0x1008, 8)
		}
		over, _ := c.request(0, 20, vopRead, false, 7, 0x1000, 64)
		other, _ := c.request(0, 21, vopRead, false, 7, 0x2000, 64)
		wantOver := int64(CX5ProcLatency)
		if stall {
			// The last CAS starts at ProcLatency + 9 intervals and holds
			// the word one more.
			wantOver = last + 334 // 1/3 Mops, rounded up to the ns
		}
		if over < wantOver-1 || over > wantOver+1 || other != int64(CX5ProcLatency) {
			t.Errorf("stall %v: READ over the word at %d (want %d), elsewhere at %d (want %d)", stall, over, wantOver, other, int64(CX5ProcLatency))
		}
	}
}
