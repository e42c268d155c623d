package rnic

import (
	"bytes"
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/roce"
	"github.com/swordbox/swordbox/roce/verbs"
)

// Link-level conformance tests: each RC rule end to end, over in-memory
// links that drop, reorder and duplicate frames (seeded).

// tapPort records what crosses a port: the frames received (in order) and
// the size of every Send call.
type tapPort struct {
	netio.Port
	mu    sync.Mutex
	rx    [][]byte
	tx    [][]byte
	sends []int
}

func (p *tapPort) Recv(bufs [][]byte) (int, error) {
	n, err := p.Port.Recv(bufs)
	p.mu.Lock()
	for i := 0; i < n; i++ {
		p.rx = append(p.rx, append([]byte(nil), bufs[i]...))
	}
	p.mu.Unlock()
	return n, err
}

func (p *tapPort) Send(frames [][]byte) (int, error) {
	p.mu.Lock()
	p.sends = append(p.sends, len(frames))
	for _, f := range frames {
		p.tx = append(p.tx, append([]byte(nil), f...))
	}
	p.mu.Unlock()
	return p.Port.Send(frames)
}

func TestLinkSegmentationAllMTUs(t *testing.T) {
	for i, mtu := range []int{256, 512, 1024, 2048, 4096} {
		p := newPair(t, lossy(int64(10+i)), Config{MTU: mtu, Timeout: 5 * time.Millisecond}, Config{MTU: mtu})
		cs, _ := p.qps(t, 1, 0xfffff8)
		rm, _ := p.srv.Register(make([]byte, 1<<16), verbs.AccessAll)
		lbuf := make([]byte, 1<<16)
		lm, _ := p.cli.Register(lbuf, verbs.AccessAll)
		for j := range 20000 {
			lbuf[j] = byte(j*31 + i)
		}
		n := 5*mtu + 3
		err := cs[0].PostSend([]verbs.SendWR{
			{ID: 1, Op: verbs.OpWrite, SG: []verbs.SGE{{Addr: lm.Addr(), Length: uint32(n), LKey: lm.LKey()}}, RemoteAddr: rm.Addr(), RKey: rm.RKey()},
			{ID: 2, Op: verbs.OpRead, SG: []verbs.SGE{{Addr: lm.Addr() + 30000, Length: uint32(n), LKey: lm.LKey()}}, RemoteAddr: rm.Addr(), RKey: rm.RKey(), Flags: verbs.Signaled},
		})
		if err != nil {
			t.Fatal(err)
		}
		w := waitN(t, p.cliCQ, 1, 10*time.Second)
		if w[0].Status != 0 || w[0].ID != 2 || !bytes.Equal(lbuf[30000:30000+n], lbuf[:n]) || !bytes.Equal(rm.Bytes()[:n], lbuf[:n]) {
			t.Fatalf("mtu %d: %+v", mtu, w)
		}
	}
}

func TestLinkRemoteAccessErrorFlushes(t *testing.T) {
	p := newPair(t, lossy(3), fastCfg(), fastCfg())
	cs, _ := p.qps(t, 1, 0)
	rm, _ := p.srv.Register(make([]byte, 4096), verbs.AccessRemoteRead)
	lm, _ := p.cli.Register(make([]byte, 4096), verbs.AccessAll)
	sg := []verbs.SGE{{Addr: lm.Addr(), Length: 8, LKey: lm.LKey()}}
	err := cs[0].PostSend([]verbs.SendWR{
		{ID: 1, Op: verbs.OpRead, SG: sg, RemoteAddr: rm.Addr(), RKey: rm.RKey()},
		{ID: 2, Op: verbs.OpWrite, SG: sg, RemoteAddr: rm.Addr(), RKey: rm.RKey()}, // no write right
		{ID: 3, Op: verbs.OpWrite, SG: sg, RemoteAddr: rm.Addr(), RKey: rm.RKey()},
	})
	if err != nil {
		t.Fatal(err)
	}
	w := waitN(t, p.cliCQ, 2, 10*time.Second)
	if w[0].ID != 2 || w[0].Status != verbs.StatusRemoteAccessError || w[1].ID != 3 || w[1].Status != verbs.StatusFlushed {
		t.Fatalf("completions %+v", w)
	}
	if cs[0].State() != verbs.StateErr {
		t.Fatal(cs[0].State())
	}
}

func TestLinkDeviceMemory(t *testing.T) {
	p := newPair(t, lossy(4), fastCfg(), Config{DeviceMemory: 4096})
	cs, _ := p.qps(t, 1, 0)
	dm, err := p.srv.AllocDM(1024, verbs.AccessAll)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := p.srv.Register(make([]byte, 1024), verbs.AccessAll)
	if dm.Addr() != 0 || !dm.IsDeviceMemory() || dm.RKey() == host.RKey() {
		t.Fatalf("device memory: addr %#x rkey %#x (host rkey %#x)", dm.Addr(), dm.RKey(), host.RKey())
	}
	if _, err := p.srv.AllocDM(4096, verbs.AccessAll); err == nil {
		t.Fatal("allocated beyond the device memory size")
	}
	lm, _ := p.cli.Register(make([]byte, 64), verbs.AccessAll)
	sg := []verbs.SGE{{Addr: lm.Addr(), Length: 8, LKey: lm.LKey()}}
	// A lock acquire in device memory (Sherman's CAS(0, 1)) twice: the
	// second fails; then the same address with the host rkey is outside
	// the host region: remote access error.
	err = cs[0].PostSend([]verbs.SendWR{
		{ID: 1, Op: verbs.OpCompareSwap, SG: sg, RemoteAddr: 64, RKey: dm.RKey(), Compare: 0, SwapAdd: 1, Flags: verbs.Signaled},
		{ID: 2, Op: verbs.OpCompareSwap, SG: sg, RemoteAddr: 64, RKey: dm.RKey(), Compare: 0, SwapAdd: 1, Flags: verbs.Signaled},
		{ID: 3, Op: verbs.OpCompareSwap, SG: sg, RemoteAddr: 64, RKey: host.RKey(), Compare: 0, SwapAdd: 1, Flags: verbs.Signaled},
	})
	if err != nil {
		t.Fatal(err)
	}
	w := waitN(t, p.cliCQ, 3, 10*time.Second)
	if w[0].Orig != 0 || w[1].Orig != 1 || w[0].Status != 0 || w[1].Status != 0 || w[2].Status != verbs.StatusRemoteAccessError {
		t.Fatalf("completions %+v", w)
	}
	if binary.LittleEndian.Uint64(dm.Bytes()[64:]) != 1 {
		t.Fatal("lock word not set")
	}
}

func TestLinkRetryExceeded(t *testing.T) {
	p := newPair(t, netio.Faults{Drop: 1, Seed: 5}, Config{Timeout: time.Millisecond, RetryCount: 2}, Config{})
	cs, _ := p.qps(t, 1, 0)
	lm, _ := p.cli.Register(make([]byte, 64), verbs.AccessAll)
	sg := []verbs.SGE{{Addr: lm.Addr(), Length: 8, LKey: lm.LKey()}}
	if err := cs[0].PostSend([]verbs.SendWR{{ID: 1, Op: verbs.OpWrite, SG: sg, RemoteAddr: HostVABase, RKey: 0x101}, {ID: 2, Op: verbs.OpRead, SG: sg, RemoteAddr: HostVABase, RKey: 0x101}}); err != nil {
		t.Fatal(err)
	}
	w := waitN(t, p.cliCQ, 2, 5*time.Second)
	if w[0].Status != verbs.StatusRetryExceeded || w[1].Status != verbs.StatusFlushed || cs[0].State() != verbs.StateErr {
		t.Fatalf("%+v %s", w, cs[0].State())
	}
	// Two retries (each resends both requests), and the third timeout fails.
	if s := p.cli.Stats(); s.Timeouts != 3 || s.Retransmits != 4 {
		t.Fatalf("%d timeouts and %d retransmissions, want 3 and 4", s.Timeouts, s.Retransmits)
	}
}

func TestLinkRNRThenReceive(t *testing.T) {
	p := newPair(t, lossy(6), fastCfg(), Config{RNRTimer: 200 * time.Microsecond})
	cs, ss := p.qps(t, 1, 0xffffff)
	lbuf := make([]byte, 8192)
	for i := range lbuf {
		lbuf[i] = byte(i)
	}
	lm, _ := p.cli.Register(lbuf, verbs.AccessAll)
	var wrs []verbs.SendWR
	for i := 0; i < 4; i++ {
		wrs = append(wrs, verbs.SendWR{ID: uint64(i), Op: verbs.OpSend, SG: []verbs.SGE{{Addr: lm.Addr() + uint64(i*100), Length: 2500, LKey: lm.LKey()}}, Flags: verbs.Signaled})
	}
	if err := cs[0].PostSend(wrs); err != nil {
		t.Fatal(err)
	}
	// The responder has no receive yet: wait for its first RNR NAK.
	for deadline := time.Now().Add(10 * time.Second); p.srv.Stats().RNRNAKsSent == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no RNR NAK for a SEND without a posted receive")
		}
	}
	rbuf := make([]byte, 4*4096)
	rm, _ := p.srv.Register(rbuf, verbs.AccessLocalWrite)
	for i := 0; i < 4; i++ {
		if err := ss[0].PostRecv([]verbs.RecvWR{{ID: uint64(10 + i), SG: []verbs.SGE{{Addr: rm.Addr() + uint64(i*4096), Length: 4096, LKey: rm.LKey()}}}}); err != nil {
			t.Fatal(err)
		}
	}
	w := waitN(t, p.cliCQ, 4, 10*time.Second)
	r := waitN(t, p.srvCQ, 4, 10*time.Second)
	for i := 0; i < 4; i++ {
		if w[i].Status != 0 || r[i].ID != uint64(10+i) || r[i].ByteLen != 2500 || !bytes.Equal(rbuf[i*4096:i*4096+2500], lbuf[i*100:i*100+2500]) {
			t.Fatalf("send %d: %+v / %+v", i, w[i], r[i])
		}
	}
	if p.srv.Stats().RNRNAKsSent == 0 {
		t.Fatal("no RNR NAK was sent")
	}
}

func TestLinkAtomicsExactlyOnceAcrossQPs(t *testing.T) {
	f := lossy(7)
	f.Duplicate = 0.3
	// OnAtomic sees each atomic once, replays of duplicates not: every
	// original value 0, 3, 6, ... exactly once.
	var mu sync.Mutex
	seen := map[uint64]int{}
	p := newPair(t, f, fastCfg(), Config{Workers: 4, OnAtomic: func(a ExecutedAtomic) {
		mu.Lock()
		defer mu.Unlock()
		if a.CAS || a.SwapAdd != 3 || a.VA-a.MR.Addr() != 8 || !a.Swapped() {
			t.Errorf("observed %+v, want FETCH_ADD 3 at offset 8", a)
		}
		seen[a.Orig]++
	}})
	cs, _ := p.qps(t, 8, 0xfffffa)
	rm, _ := p.srv.Register(make([]byte, 64), verbs.AccessAll)
	var wg sync.WaitGroup
	const per = 200
	for _, q := range cs {
		wg.Add(1)
		go func(q *QP) {
			defer wg.Done()
			lm, _ := p.cli.Register(make([]byte, 8*per), verbs.AccessAll)
			var wrs []verbs.SendWR
			for i := 0; i < per; i++ {
				wrs = append(wrs, verbs.SendWR{ID: uint64(i), Op: verbs.OpFetchAdd, SG: []verbs.SGE{{Addr: lm.Addr() + uint64(8*i), Length: 8, LKey: lm.LKey()}}, RemoteAddr: rm.Addr() + 8, RKey: rm.RKey(), SwapAdd: 3})
			}
			wrs[per-1].Flags = verbs.Signaled
			if err := q.PostSend(wrs); err != nil {
				t.Error(err)
			}
		}(q)
	}
	wg.Wait()
	w := waitN(t, p.cliCQ, 8, 20*time.Second)
	for _, c := range w {
		if c.Status != 0 {
			t.Fatalf("%+v", c)
		}
	}
	if got := binary.LittleEndian.Uint64(rm.Bytes()[8:]); got != 8*per*3 {
		t.Fatalf("counter %d, want %d", got, 8*per*3)
	}
	if s := p.srv.Stats(); s.AtomicsExecuted != 8*per || s.Duplicates == 0 {
		t.Fatalf("executed %d atomics for %d posted (%d duplicates seen)", s.AtomicsExecuted, 8*per, s.Duplicates)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := uint64(0); i < 8*per; i++ {
		if seen[3*i] != 1 {
			t.Fatalf("OnAtomic saw original value %d %d times, want once (%d values seen)", 3*i, seen[3*i], len(seen))
		}
	}
}

// TestLinkICRC checks that frames with a bad ICRC are dropped when
// verification is on, and accepted when it is off (a memory node behind a
// steering switch).
func TestLinkICRC(t *testing.T) {
	for _, skip := range []bool{false, true} {
		a, b := netio.Pipe()
		srv, err := New(b, Config{SkipICRC: skip, IP: [4]byte{10, 0, 0, 2}})
		if err != nil {
			t.Fatal(err)
		}
		cq := srv.NewCQ(16)
		q, _ := srv.NewQP(verbs.QPConfig{SendCQ: cq, RecvCQ: cq})
		if err := q.ConnectTo(q.Params(0), ConnParams{QPN: 0x42, PSN: 7, IP: [4]byte{10, 0, 0, 1}}); err != nil {
			t.Fatal(err)
		}
		m, _ := srv.Register(make([]byte, 64), verbs.AccessAll)
		f := roce.Fields{SrcIP: [4]byte{10, 0, 0, 1}, DstIP: [4]byte{10, 0, 0, 2}, TTL: 64, SrcPort: 5000, Opcode: roce.OpRCWriteOnly,
			PKey: 0xffff, DestQP: q.QPN(), PSN: 7, AckReq: true, VA: m.Addr(), RKey: m.RKey(), DMALen: 4, Payload: []byte("ICRC")}
		buf := make([]byte, 256)
		n, err := roce.Build(buf, &f)
		if err != nil {
			t.Fatal(err)
		}
		buf[n-1] ^= 0xff // break the ICRC
		if _, err := a.Send([][]byte{buf[:n]}); err != nil {
			t.Fatal(err)
		}
		// The ACK (or nothing) tells us whether the WRITE was taken.
		rb := [][]byte{make([]byte, netio.MaxFrameSize)}
		got := make(chan bool, 1)
		go func() { k, _ := a.Recv(rb); got <- k == 1 }()
		// Accepted: the ACK comes (allow a loaded machine seconds).
		// Dropped: nothing comes; 50ms of silence is enough to move on,
		// and the counters below decide.
		wait := 50 * time.Millisecond
		if skip {
			wait = 5 * time.Second
		}
		select {
		case <-got:
			if !skip {
				t.Fatal("frame with a bad ICRC was answered")
			}
		case <-time.After(wait):
			if skip {
				t.Fatal("SkipICRC: frame not accepted")
			}
		}
		if (string(m.Bytes()[:4]) == "ICRC") != skip || (srv.Stats().RxBadICRC == 1) == skip {
			t.Fatalf("skip=%v: memory %q, stats %+v", skip, m.Bytes()[:4], srv.Stats())
		}
		srv.Close()
		a.Close()
	}
}

// TestLinkDoorbellBatch checks that one PostSend of many requests leaves in
// one burst (one Send call on the port).
func TestLinkDoorbellBatch(t *testing.T) {
	a, b := netio.Pipe()
	tap := &tapPort{Port: a}
	cli, _ := New(tap, Config{IP: [4]byte{10, 0, 0, 1}})
	srv, _ := New(b, Config{IP: [4]byte{10, 0, 0, 2}})
	defer cli.Close()
	defer srv.Close()
	ccq, scq := cli.NewCQ(16), srv.NewCQ(16)
	c, _ := cli.NewQP(verbs.QPConfig{SendCQ: ccq, RecvCQ: ccq})
	s, _ := srv.NewQP(verbs.QPConfig{SendCQ: scq, RecvCQ: scq})
	if err := Connect(c, s, 1, 2); err != nil {
		t.Fatal(err)
	}
	rm, _ := srv.Register(make([]byte, 4096), verbs.AccessAll)
	lm, _ := cli.Register(make([]byte, 4096), verbs.AccessAll)
	var wrs []verbs.SendWR
	for i := 0; i < 8; i++ {
		wrs = append(wrs, verbs.SendWR{ID: uint64(i), Op: verbs.OpWrite, SG: []verbs.SGE{{Addr: lm.Addr(), Length: 64, LKey: lm.LKey()}}, RemoteAddr: rm.Addr() + uint64(64*i), RKey: rm.RKey()})
	}
	wrs[7].Flags = verbs.Signaled
	if err := c.PostSend(wrs); err != nil {
		t.Fatal(err)
	}
	waitN(t, ccq, 1, 5*time.Second)
	tap.mu.Lock()
	defer tap.mu.Unlock()
	if len(tap.sends) == 0 || tap.sends[0] != 8 {
		t.Fatalf("send calls %v, want the 8 WRITEs in the first", tap.sends)
	}
}

// TestLinkShardedResponderReorders reproduces SwordBox Figure 2: with the
// responder sharded over workers, the order in which the memory node
// applies requests of different QPs differs from their arrival order, while
// each QP's own order is kept. The apply order is observed through a shared
// FETCH_ADD counter (its original values number the atomics in the order
// they executed); the arrival order is what the server's port delivered.
func TestLinkShardedResponderReorders(t *testing.T) {
	for _, workers := range []int{0, 4} {
		a, b := netio.Pipe()
		tap := &tapPort{Port: b}
		cli, _ := New(a, Config{IP: [4]byte{10, 0, 0, 1}})
		srv, _ := New(tap, Config{IP: [4]byte{10, 0, 0, 2}, Workers: workers})
		ccq, scq := cli.NewCQ(1024), srv.NewCQ(16)
		rm, _ := srv.Register(make([]byte, 64), verbs.AccessAll)
		const nQP, per = 8, 64
		lm, _ := cli.Register(make([]byte, nQP*per*8), verbs.AccessAll)
		var qs []*QP
		for i := 0; i < nQP; i++ {
			c, _ := cli.NewQP(verbs.QPConfig{SendCQ: ccq, RecvCQ: ccq})
			s, _ := srv.NewQP(verbs.QPConfig{SendCQ: scq, RecvCQ: scq})
			if err := Connect(c, s, 0, 0); err != nil {
				t.Fatal(err)
			}
			qs = append(qs, c)
		}
		for k := 0; k < per; k++ {
			for i, q := range qs {
				off := uint64((i*per + k) * 8)
				if err := q.PostSend([]verbs.SendWR{{ID: uint64(i<<16 | k), Op: verbs.OpFetchAdd, SG: []verbs.SGE{{Addr: lm.Addr() + off, Length: 8, LKey: lm.LKey()}}, RemoteAddr: rm.Addr(), RKey: rm.RKey(), SwapAdd: 1, Flags: verbs.Signaled}}); err != nil {
					t.Fatal(err)
				}
			}
		}
		w := waitN(t, ccq, nQP*per, 10*time.Second)
		applied := make([]uint32, nQP*per) // apply rank -> (qp index, k)
		lastRank := make([]int64, nQP)
		for i := range lastRank {
			lastRank[i] = -1
		}
		for _, c := range w {
			qi, k := int(c.ID>>16), uint32(c.ID&0xffff)
			applied[c.Orig] = uint32(qi)<<16 | k
			if int64(c.Orig) <= lastRank[qi] {
				t.Fatalf("QP %d applied out of its own order", qi)
			}
			lastRank[qi] = int64(c.Orig)
		}
		tap.mu.Lock()
		var arrived []uint32
		seen := map[uint32]bool{}
		for _, f := range tap.rx {
			var pk roce.Packet
			if roce.ParseInto(&pk, f) == nil && pk.Opcode == roce.OpRCFetchAdd {
				id := (pk.BTH.DestQP()-qpnBase)<<16 | pk.BTH.PSN()
				if !seen[id] { // first arrival; a retransmission is not an arrival
					seen[id] = true
					arrived = append(arrived, id)
				}
			}
		}
		if len(arrived) != len(applied) {
			t.Fatalf("%d distinct atomics arrived, %d applied", len(arrived), len(applied))
		}
		tap.mu.Unlock()
		differ := 0
		for i := range arrived {
			if arrived[i] != applied[i] {
				differ++
			}
		}
		t.Logf("workers %d: %d of %d atomics applied at a different position than they arrived", workers, differ, len(arrived))
		if workers == 0 && differ != 0 {
			t.Fatal("unsharded responder reordered")
		}
		if workers > 0 && differ == 0 {
			t.Fatal("sharded responder applied in arrival order")
		}
		cli.Close()
		srv.Close()
	}
}
