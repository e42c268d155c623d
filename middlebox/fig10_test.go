package middlebox

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/roce"
	"github.com/swordbox/swordbox/roce/rnic"
	"github.com/swordbox/swordbox/roce/verbs"
)

// The paper's Figure 10, test-sized: N client QPs, each in a closed loop
// of lock CMP_SWAP(0 -> 1) until it succeeds, then unlock CMP_SWAP(1 -> 0),
// all on one word of the memory node, through the middlebox either as
// plain CMP_SWAP (the engine only forwards) or multiplexed onto one
// connection with every CMP_SWAP replaced by a WRITE. With the RNIC's
// ConnectX-5 timing model, CMP_SWAP on one address is capped at the NIC,
// as in the paper; WRITEs are not.

type fig10Rack struct {
	cli, srv *rnic.Device
	qps      []*rnic.QP
	cqs      []*rnic.CQ
	bufs     []*rnic.MR
	mr       *rnic.MR
	loop     *Loop
	cancel   func()
	wg       sync.WaitGroup
}

// fig10Timing names the server RNIC's timing model: "off", "cx5" (the
// ConnectX-5 caps, e.g. 3 M CMP_SWAP/s on one address), or "cx5/100" (every
// cap divided by 100: the software RNIC moves far fewer operations per
// second than a NIC, so the unscaled caps never bind; scaled, the CAS cap
// sits below the software path's rate, as the NIC's sits below the
// network's in the paper, and WRITEs stay uncapped).
func fig10Timing(name string) *rnic.Timing {
	switch name {
	case "cx5":
		t := rnic.ConnectX5()
		return &t
	case "cx5/100":
		t := rnic.ConnectX5()
		t.AtomicsPerAddr /= 100
		t.AtomicsPerAddrDM /= 100
		t.AtomicsPerQP /= 100
		t.AtomicsAggregate /= 100
		return &t
	}
	return nil
}

func newFig10Rack(tb testing.TB, n int, casToWrite bool, timing string) *fig10Rack {
	tb.Helper()
	cliMAC, srvMAC := [6]byte{2, 0, 0, 0, 0, 1}, [6]byte{2, 0, 0, 0, 0, 2}
	cliIP, srvIP := [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}
	a, ma, err := netio.NewLink("cli", "mbox-c", netio.LinkConfig{Capacity: 8192})
	if err != nil {
		tb.Fatal(err)
	}
	mb, b, err := netio.NewLink("mbox-s", "srv", netio.LinkConfig{Capacity: 8192})
	if err != nil {
		tb.Fatal(err)
	}
	rc := rnic.Config{Timeout: 500 * time.Millisecond}
	sc := rc
	sc.Timing = fig10Timing(timing)
	rc.MAC, rc.IP, sc.MAC, sc.IP = cliMAC, cliIP, srvMAC, srvIP
	r := &fig10Rack{}
	if r.cli, err = rnic.New(a, rc); err != nil {
		tb.Fatal(err)
	}
	if r.srv, err = rnic.New(b, sc); err != nil {
		tb.Fatal(err)
	}
	if r.mr, err = r.srv.Register(make([]byte, 4096), verbs.AccessAll); err != nil {
		tb.Fatal(err)
	}
	scq := r.srv.NewCQ(64)
	var conns []ConnConfig
	for i := 0; i < n; i++ {
		cq := r.cli.NewCQ(16)
		q, err := r.cli.NewQP(verbs.QPConfig{SendCQ: cq, RecvCQ: cq})
		if err != nil {
			tb.Fatal(err)
		}
		s, err := r.srv.NewQP(verbs.QPConfig{SendCQ: scq, RecvCQ: scq})
		if err != nil {
			tb.Fatal(err)
		}
		psn := uint32(i*5003+1) & roce.MaxPSN
		if err := rnic.Connect(q, s, psn, 77); err != nil {
			tb.Fatal(err)
		}
		buf, err := r.cli.Register(make([]byte, 8), verbs.AccessAll)
		if err != nil {
			tb.Fatal(err)
		}
		r.qps, r.cqs, r.bufs = append(r.qps, q), append(r.cqs, cq), append(r.bufs, buf)
		conns = append(conns, ConnConfig{ClientIP: ipStr(cliIP), ServerIP: ipStr(srvIP), ClientMAC: macStr(cliMAC), ServerMAC: macStr(srvMAC),
			ClientPort: 0xC000 | uint16(q.QPN()&0x3fff), ServerPort: 0xC000 | uint16(s.QPN()&0x3fff),
			ClientQP: q.QPN(), ServerQP: s.QPN(), PSN: psn, PSNKnown: true})
	}
	sv := ServerConfig{IP: ipStr(srvIP)}
	cfg := Config{Servers: []ServerConfig{sv}, Conns: conns, PMTU: 1024}
	if casToWrite {
		lock := r.mr.Addr()
		cfg.Servers[0].Remap = []Range{{Lo: lock, Hi: lock + 8}}
		cfg.Servers[0].CASToWrite = []Range{{Lo: lock, Hi: lock + 8}}
		cfg.Words = []WordConfig{{VA: lock, Value: 0}}
	}
	s, err := NewSharded(cfg, 1)
	if err != nil {
		tb.Fatal(err)
	}
	r.loop = &Loop{S: s, Ports: [2]netio.Port{ma, mb}}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.wg.Add(1)
	go func() { defer r.wg.Done(); _ = r.loop.Run(ctx) }()
	return r
}

func (r *fig10Rack) close() {
	r.cancel()
	r.wg.Wait()
	r.cli.Close()
	r.srv.Close()
}

// run has every client lock and unlock until ops operations completed in
// total. It returns the lock acquisitions and an error on a broken
// invariant: an acquisition must see 0, a release must see 1 (the holder's
// own value); anything else means two clients held the lock at once.
func (r *fig10Rack) run(ops int64) (locks int64, err error) {
	var left atomic.Int64
	left.Store(ops)
	var nlocks atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, len(r.qps))
	lock := r.mr.Addr()
	for i := range r.qps {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			q, cq, buf := r.qps[i], r.cqs[i], r.bufs[i]
			wcs := make([]verbs.WC, 1)
			do := func(cmp, swap uint64) (uint64, error) {
				wr := verbs.SendWR{Op: verbs.OpCompareSwap, RemoteAddr: lock, RKey: r.mr.RKey(), Compare: cmp, SwapAdd: swap,
					Flags: verbs.Signaled, SG: []verbs.SGE{{Addr: buf.Addr(), Length: 8, LKey: buf.LKey()}}}
				if err := q.PostSend([]verbs.SendWR{wr}); err != nil {
					return 0, err
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if _, err := cq.Wait(ctx, wcs); err != nil {
					return 0, err
				}
				if wcs[0].Status != verbs.StatusSuccess {
					return 0, fmt.Errorf("client %d: CMP_SWAP %v", i, wcs[0].Status)
				}
				return wcs[0].Orig, nil
			}
			for left.Add(-2) >= 0 {
				for {
					v, err := do(0, 1)
					if err != nil {
						errc <- err
						return
					}
					if v == 0 {
						break
					}
					if v != 1 {
						errc <- fmt.Errorf("client %d: lock word holds %d", i, v)
						return
					}
					left.Add(-1)
				}
				nlocks.Add(1)
				v, err := do(1, 0)
				if err != nil {
					errc <- err
					return
				}
				if v != 1 {
					errc <- fmt.Errorf("client %d: released a lock it held and found %d: mutual exclusion broken", i, v)
					return
				}
			}
		}(i)
	}
	wg.Wait()
	close(errc)
	return nlocks.Load(), <-errc
}

func TestFigure10MutualExclusion(t *testing.T) {
	for _, conv := range []bool{false, true} {
		r := newFig10Rack(t, 8, conv, "off")
		locks, err := r.run(2000)
		c := r.loop.S.Counters()
		r.close()
		if err != nil {
			t.Fatalf("cas-to-write=%v: %v", conv, err)
		}
		if locks == 0 {
			t.Fatalf("cas-to-write=%v: no lock acquired", conv)
		}
		if conv && (c.CASToWrite == 0 || c.AtomicPassthrough != 0) {
			t.Fatalf("CMP_SWAP not all replaced: %s", c.String())
		}
		if !conv && c.CASToWrite != 0 {
			t.Fatalf("plain mode replaced CMP_SWAP: %s", c.String())
		}
		if c.TotalDrops() != 0 {
			t.Fatalf("drops: %s", c.String())
		}
	}
}

// BenchmarkFigure10 reports CMP_SWAP operations per second (ops/s) and lock
// acquisitions per second (locks/s); one b.N op is one CMP_SWAP.
func BenchmarkFigure10(b *testing.B) {
	for _, timing := range []string{"off", "cx5", "cx5/100"} {
		for _, n := range []int{1, 4, 16} {
			for _, conv := range []bool{false, true} {
				name := fmt.Sprintf("timing=%s/qps=%d/mode=%s", timing, n, map[bool]string{false: "cas", true: "cas-to-write"}[conv])
				b.Run(name, func(b *testing.B) {
					r := newFig10Rack(b, n, conv, timing)
					defer r.close()
					b.ResetTimer()
					start := time.Now()
					locks, err := r.run(int64(b.N))
					el := time.Since(start)
					b.StopTimer()
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(b.N)/el.Seconds(), "ops/s")
					b.ReportMetric(float64(locks)/el.Seconds(), "locks/s")
				})
			}
		}
	}
}
