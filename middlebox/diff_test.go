package middlebox

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/roce"
	"github.com/swordbox/swordbox/roce/rnic"
	"github.com/swordbox/swordbox/roce/verbs"
)

// The differential tests run the same random trace of READ, WRITE,
// CMP_SWAP and FETCH_ADD from 16 client QPs to one memory node twice:
// directly over a link, and through the middlebox over two links, with the
// same faults on every link. Each round, every client issues a few
// operations on addresses no other client touches in that round (so the
// outcome does not depend on how the server orders clients), and waits for
// them. Completions (status, atomic original values, READ data) and the
// final memory must be identical.

const (
	diffClients   = 16
	diffWords     = 64            // tracked 8-byte words at the start of the region
	diffSlots     = 32            // 4 KiB data slots after them
	diffWordBytes = diffWords * 8 // 512
	diffSlotSize  = 4096
	diffMemSize   = diffWordBytes + diffSlots*diffSlotSize
)

type diffOp struct {
	op      verbs.Opcode
	off     uint64 // offset in the server region
	n       uint32 // bytes (READ, WRITE)
	cmp     uint64
	swapAdd uint64
	data    []byte // WRITE payload
}

// diffTrace is rounds[r][client] = the client's operations in round r.
type diffTrace [][][]diffOp

func makeDiffTrace(seed uint64, rounds int) diffTrace {
	rng := rand.New(rand.NewPCG(seed, 7))
	tr := make(diffTrace, rounds)
	for r := range tr {
		words := rng.Perm(diffWords)
		slots := rng.Perm(diffSlots)
		tr[r] = make([][]diffOp, diffClients)
		for c := 0; c < diffClients; c++ {
			// Each client owns 2 words (with their 8-byte neighbourhood
			// untouched by others) and 1 data slot this round.
			myWords := []int{words[2*c], words[2*c+1]}
			slot := slots[c%diffSlots]
			if c >= diffSlots {
				slot = -1
			}
			k := 1 + rng.IntN(4)
			read := map[uint64]bool{}
			for i := 0; i < k; i++ {
				w := uint64(myWords[rng.IntN(2)]) * 8
				var o diffOp
				switch x := rng.IntN(10); {
				case x < 4:
					o = diffOp{op: verbs.OpCompareSwap, off: w, cmp: uint64(rng.IntN(3)), swapAdd: uint64(rng.IntN(3))}
				case x < 6:
					o = diffOp{op: verbs.OpFetchAdd, off: w, swapAdd: uint64(1 + rng.IntN(3))}
				case x < 7:
					o = diffOp{op: verbs.OpWrite, off: w, n: 8, data: le64(uint64(rng.IntN(3)))}
				case x < 8 || slot < 0:
					o = diffOp{op: verbs.OpRead, off: w, n: 8}
				case x < 9:
					n := 8 * (1 + rng.IntN(128)) // up to 1024: one packet
					d := make([]byte, n)
					for j := range d {
						d[j] = byte(rng.Uint32())
					}
					o = diffOp{op: verbs.OpWrite, off: diffWordBytes + uint64(slot)*diffSlotSize, n: uint32(n), data: d}
				default:
					o = diffOp{op: verbs.OpRead, off: diffWordBytes + uint64(slot)*diffSlotSize, n: uint32(1 + rng.IntN(3500))}
				}
				// A READ whose response is lost is executed again when the
				// client asks again, and then sees later writes of its own
				// QP (IBA 9.7.5.1.2): so no operation modifies what the same
				// client already read in this round, or the outcome would
				// depend on losses.
				if o.op != verbs.OpRead && read[o.off] {
					o = diffOp{op: verbs.OpRead, off: o.off, n: 8}
					if o.off >= diffWordBytes {
						o.n = 64
					}
				}
				if o.op == verbs.OpRead {
					read[o.off] = true
				}
				tr[r][c] = append(tr[r][c], o)
			}
		}
	}
	return tr
}

type diffMode int

const (
	diffDirect diffMode = iota
	diffMux             // every operation remapped onto client 0's connection
	diffMuxCAS          // and the words' atomics replaced by WRITEs
)

func (m diffMode) String() string { return [...]string{"direct", "mux", "mux+cas"}[m] }

// diffResult is what a run observed.
type diffResult struct {
	wcs      [][]string // per client, one line per completion
	mem      []byte
	cliStats rnic.Stats
	eng      Counters
}

func diffInitMem() []byte {
	m := make([]byte, diffMemSize)
	for i := 0; i < diffWords; i++ {
		binary.LittleEndian.PutUint64(m[i*8:], uint64(i%3))
	}
	for i := diffWordBytes; i < len(m); i++ {
		m[i] = byte(i * 7)
	}
	return m
}

// diffOptions configures one run of runDiff; the zero value is a clean
// in-memory run.
type diffOptions struct {
	faults netio.Faults // on every link (each direction seeded apart)
	timed  bool         // the RNICs with ConnectX-5 timing
	// nakRecovery is the middlebox's Config.NAKRecovery ("": the default).
	nakRecovery string
	// log, when set, records every frame the middlebox's ports see.
	log *diffLogger
	// ports, when set, supplies the client's, the middlebox's client- and
	// server-side, and the server's ports (the namespace test).
	ports func(t *testing.T) [4]netio.Port
}

func runDiff(t *testing.T, tr diffTrace, mode diffMode, opt diffOptions) diffResult {
	t.Helper()
	faults, timed := opt.faults, opt.timed
	cliMAC, srvMAC := [6]byte{2, 0, 0, 0, 0, 1}, [6]byte{2, 0, 0, 0, 0, 2}
	cliIP, srvIP := [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}
	var cliPort, srvPort netio.Port
	var loop *Loop
	f2 := faults
	if f2.Seed != 0 {
		f2.Seed += 100
	}
	if opt.ports != nil {
		ports := opt.ports(t)
		cliPort, srvPort = ports[0], ports[3]
		loop = &Loop{Ports: [2]netio.Port{ports[1], ports[2]}}
	} else if mode == diffDirect {
		a, b, err := netio.NewLink("cli", "srv", netio.LinkConfig{AtoB: faults, BtoA: f2, Capacity: 8192})
		if err != nil {
			t.Fatal(err)
		}
		cliPort, srvPort = a, b
	} else {
		f3, f4 := faults, f2
		if f3.Seed != 0 {
			f3.Seed += 200
			f4.Seed += 300
		}
		a, ma, err := netio.NewLink("cli", "mbox-c", netio.LinkConfig{AtoB: faults, BtoA: f2, Capacity: 8192})
		if err != nil {
			t.Fatal(err)
		}
		mb, b, err := netio.NewLink("mbox-s", "srv", netio.LinkConfig{AtoB: f3, BtoA: f4, Capacity: 8192})
		if err != nil {
			t.Fatal(err)
		}
		cliPort, srvPort = a, b
		if opt.log != nil {
			loop = &Loop{Ports: [2]netio.Port{&logPort{Port: ma, name: "C", log: opt.log}, &logPort{Port: mb, name: "S", log: opt.log}}}
		} else {
			loop = &Loop{Ports: [2]netio.Port{ma, mb}}
		}
	}
	// On clean links a timeout means a bug, unless the machine is so
	// loaded that a timer fires before the answer is scheduled: use a
	// generous timeout there. Lossy links need a short one.
	rcfg := rnic.Config{Timeout: 5 * time.Millisecond, RetryCount: 7}
	if faults == (netio.Faults{}) {
		rcfg.Timeout = 200 * time.Millisecond
	}
	if timed {
		rcfg.Timing = &rnic.Timing{}
	}
	ccfg, scfg := rcfg, rcfg
	ccfg.MAC, ccfg.IP = cliMAC, cliIP
	scfg.MAC, scfg.IP = srvMAC, srvIP
	cli, err := rnic.New(cliPort, ccfg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := rnic.New(srvPort, scfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	defer srv.Close()
	mem := diffInitMem()
	smr, err := srv.Register(mem, verbs.AccessAll)
	if err != nil {
		t.Fatal(err)
	}
	scq := srv.NewCQ(64)
	type client struct {
		qp  *rnic.QP
		cq  *rnic.CQ
		buf []byte
		mr  *rnic.MR
	}
	cls := make([]client, diffClients)
	var conns []ConnConfig
	for i := range cls {
		cq := cli.NewCQ(256)
		q, err := cli.NewQP(verbs.QPConfig{SendCQ: cq, RecvCQ: cq})
		if err != nil {
			t.Fatal(err)
		}
		s, err := srv.NewQP(verbs.QPConfig{SendCQ: scq, RecvCQ: scq})
		if err != nil {
			t.Fatal(err)
		}
		psnC, psnS := uint32(i*7919+3)&roce.MaxPSN, uint32(i*104729+5)&roce.MaxPSN
		switch i {
		case 0:
			psnC = roce.MaxPSN - 40 // the shared connection's PSNs wrap early in the run
		case 5:
			psnC = roce.MaxPSN - 2 // and one client's own
		}
		if err := rnic.Connect(q, s, psnC, psnS); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 8*4096)
		mr, err := cli.Register(buf, verbs.AccessAll)
		if err != nil {
			t.Fatal(err)
		}
		cls[i] = client{qp: q, cq: cq, buf: buf, mr: mr}
		conns = append(conns, ConnConfig{
			ClientIP: ipStr(cliIP), ServerIP: ipStr(srvIP), ClientMAC: macStr(cliMAC), ServerMAC: macStr(srvMAC),
			ClientPort: 0xC000 | uint16(q.QPN()&0x3fff), ServerPort: 0xC000 | uint16(s.QPN()&0x3fff),
			ClientQP: q.QPN(), ServerQP: s.QPN(), PSN: psnC, PSNKnown: true,
		})
	}
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	if loop != nil {
		sc := ServerConfig{IP: ipStr(srvIP), Remap: []Range{{}}}
		cfg := Config{Servers: []ServerConfig{sc}, Conns: conns, PMTU: 1024, RingSize: 1024, Window: 64, NAKRecovery: opt.nakRecovery}
		if mode == diffMuxCAS {
			cfg.Servers[0].CASToWrite = []Range{{Lo: smr.Addr(), Hi: smr.Addr() + diffWordBytes}}
			// Half the words are seeded (known from the start), half are
			// learned from ATOMIC ACKs.
			for i := 0; i < diffWords; i += 2 {
				cfg.Words = append(cfg.Words, WordConfig{VA: smr.Addr() + uint64(i*8), Value: uint64(i % 3)})
			}
		}
		s, err := NewSharded(cfg, 1)
		if err != nil {
			t.Fatal(err)
		}
		loop.S = s
		wg.Add(1)
		go func() { defer wg.Done(); _ = loop.Run(ctx) }()
	}
	defer func() { cancel(); wg.Wait() }()

	res := diffResult{wcs: make([][]string, diffClients)}
	wcbuf := make([]verbs.WC, 64)
	for r, round := range tr {
		want := 0
		for c, ops := range round {
			cl := &cls[c]
			var wrs []verbs.SendWR
			for i, o := range ops {
				loc := uint64(i) * 4096
				wr := verbs.SendWR{ID: uint64(r<<16 | i), Op: o.op, RemoteAddr: smr.Addr() + o.off, RKey: smr.RKey(),
					Compare: o.cmp, SwapAdd: o.swapAdd, Flags: verbs.Signaled}
				n := o.n
				if o.op == verbs.OpCompareSwap || o.op == verbs.OpFetchAdd {
					n = 8
				}
				if o.op == verbs.OpWrite {
					copy(cl.buf[loc:], o.data)
				} else {
					clear(cl.buf[loc : loc+uint64(n)])
				}
				wr.SG = []verbs.SGE{{Addr: cl.mr.Addr() + loc, Length: n, LKey: cl.mr.LKey()}}
				wrs = append(wrs, wr)
			}
			if err := cl.qp.PostSend(wrs); err != nil {
				t.Fatalf("%v round %d client %d: post: %v", mode, r, c, err)
			}
			want += len(ops)
		}
		for c, ops := range round {
			cl := &cls[c]
			got := 0
			wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Second)
			for got < len(ops) {
				k, err := cl.cq.Wait(wctx, wcbuf)
				if err != nil {
					wcancel()
					extra := ""
					if loop != nil {
						x := loop.S.Counters()
						extra = x.String()
					}
					t.Fatalf("%v round %d client %d: %d of %d completions: %v\nclient rnic %+v\nserver rnic %+v\nmiddlebox %s",
						mode, r, c, got, len(ops), err, cli.Stats(), srv.Stats(), extra)
				}
				for _, wc := range wcbuf[:k] {
					i := int(wc.ID & 0xffff)
					line := fmt.Sprintf("r%d op%d %v %v orig=%d", r, i, wc.Op, wc.Status, wc.Orig)
					if wc.Op == verbs.OpRead && wc.Status == verbs.StatusSuccess {
						loc := i * 4096
						line += fmt.Sprintf(" data=%x", cl.buf[loc:loc+int(ops[i].n)])
					}
					res.wcs[c] = append(res.wcs[c], line)
				}
				got += k
			}
			wcancel()
		}
	}
	// Stop everything before reading the server's memory: over AF_PACKET
	// the only synchronisation between its writes and this goroutine is
	// the kernel's, which the race detector cannot see.
	res.cliStats = cli.Stats()
	cli.Close()
	srv.Close()
	if loop != nil {
		cancel()
		wg.Wait()
		res.eng = loop.S.Counters()
	}
	res.mem = append([]byte(nil), smr.Bytes()...)
	return res
}

// modelDiff computes what the trace must produce: within a round the
// clients touch disjoint addresses, so executing each client's operations
// in its own order, round by round, is the only correct outcome.
func modelDiff(tr diffTrace) diffResult {
	mem := diffInitMem()
	res := diffResult{wcs: make([][]string, diffClients)}
	for r, round := range tr {
		for c, ops := range round {
			for i, o := range ops {
				line := ""
				switch o.op {
				case verbs.OpCompareSwap, verbs.OpFetchAdd:
					v := binary.LittleEndian.Uint64(mem[o.off:])
					nv := v + o.swapAdd
					if o.op == verbs.OpCompareSwap {
						nv = v
						if v == o.cmp {
							nv = o.swapAdd
						}
					}
					binary.LittleEndian.PutUint64(mem[o.off:], nv)
					line = fmt.Sprintf("r%d op%d %v %v orig=%d", r, i, o.op, verbs.StatusSuccess, v)
				case verbs.OpWrite:
					copy(mem[o.off:], o.data)
					line = fmt.Sprintf("r%d op%d %v %v orig=%d", r, i, o.op, verbs.StatusSuccess, 0)
				case verbs.OpRead:
					line = fmt.Sprintf("r%d op%d %v %v orig=%d data=%x", r, i, o.op, verbs.StatusSuccess, 0, mem[o.off:o.off+uint64(o.n)])
				}
				res.wcs[c] = append(res.wcs[c], line)
			}
		}
	}
	res.mem = mem
	return res
}

func compareDiff(t *testing.T, name string, a, b diffResult) {
	t.Helper()
	for c := range a.wcs {
		if len(a.wcs[c]) != len(b.wcs[c]) {
			t.Fatalf("%s: client %d: %d completions vs %d", name, c, len(a.wcs[c]), len(b.wcs[c]))
		}
		for i := range a.wcs[c] {
			if a.wcs[c][i] != b.wcs[c][i] {
				t.Fatalf("%s: client %d completion %d:\n first:  %.200s\n second: %.200s\nmbox client rnic %+v\nmiddlebox %s", name, c, i, a.wcs[c][i], b.wcs[c][i], b.cliStats, b.eng.String())
			}
		}
	}
	if !bytes.Equal(a.mem, b.mem) {
		for i := range a.mem {
			if a.mem[i] != b.mem[i] {
				t.Fatalf("%s: final memory differs first at offset %d", name, i)
			}
		}
	}
}

func TestDifferentialCleanLinks(t *testing.T) {
	tr := makeDiffTrace(1, 30)
	direct := runDiff(t, tr, diffDirect, diffOptions{})
	compareDiff(t, "model vs direct", modelDiff(tr), direct)
	for _, mode := range []diffMode{diffMux, diffMuxCAS} {
		m := runDiff(t, tr, mode, diffOptions{})
		compareDiff(t, mode.String(), direct, m)
		// Nothing was lost, so no client may have timed out, and the
		// middlebox dropped nothing.
		if m.cliStats.Timeouts != 0 || m.eng.TotalDrops() != 0 {
			t.Fatalf("%v on clean links: %d client timeouts; middlebox %s", mode, m.cliStats.Timeouts, m.eng.String())
		}
		if m.eng.Remapped == 0 || m.eng.ACKsOut == 0 {
			t.Fatalf("%v: nothing was multiplexed: %s", mode, m.eng.String())
		}
		if mode == diffMuxCAS && (m.eng.CASToWrite == 0 || m.eng.FAToWrite == 0 || m.eng.WordsLearned == 0) {
			t.Fatalf("%v: no atomics replaced or learned: %s", mode, m.eng.String())
		}
		t.Logf("%v: %s", mode, m.eng.String())
	}
}

// TestDifferentialDebug is a debugging aid, run only when asked: a lossy
// run with every frame the middlebox sees logged, the log written to the
// test's artifact directory when it fails (go test -artifacts keeps it).
func TestDifferentialDebug(t *testing.T) {
	if !*diffDebug {
		t.Skip("debugging aid: go test ./middlebox -run DifferentialDebug -mbox.diff-debug [-mbox.diff-nak broadcast] -artifacts")
	}
	log := &diffLogger{start: time.Now()}
	defer func() {
		if t.Failed() {
			path := filepath.Join(t.ArtifactDir(), "mbox-diff.log")
			if err := os.WriteFile(path, []byte(strings.Join(log.lines, "\n")), 0o644); err != nil {
				t.Error(err)
			}
			t.Logf("frame log: %s", path)
		}
	}()
	tr := makeDiffTrace(2, 25)
	faults := netio.Faults{Drop: 0.02, Reorder: 0.05, ReorderDepth: 3, ReorderHold: 100 * time.Microsecond, Duplicate: 0.01, Seed: 11}
	model := modelDiff(tr)
	direct := runDiff(t, tr, diffDirect, diffOptions{faults: faults})
	compareDiff(t, "direct vs model", model, direct)
	m := runDiff(t, tr, diffMux, diffOptions{faults: faults, nakRecovery: *diffNAK, log: log})
	compareDiff(t, "mux", model, m)
}

func TestDifferentialLossAndReorder(t *testing.T) {
	if testing.Short() {
		t.Skip("lossy differential run takes seconds")
	}
	for _, tc := range []struct {
		seed   uint64
		faults netio.Faults
	}{
		{2, netio.Faults{Drop: 0.02, Reorder: 0.05, ReorderDepth: 3, ReorderHold: 100 * time.Microsecond, Duplicate: 0.01, Seed: 11}},
		{3, netio.Faults{Drop: 0.05, Reorder: 0.1, ReorderDepth: 4, ReorderHold: 200 * time.Microsecond, Duplicate: 0.05, Seed: 3}},
	} {
		tr := makeDiffTrace(tc.seed, 20)
		direct := runDiff(t, tr, diffDirect, diffOptions{faults: tc.faults})
		compareDiff(t, "model vs direct", modelDiff(tr), direct)
		for _, mode := range []diffMode{diffMux, diffMuxCAS} {
			m := runDiff(t, tr, mode, diffOptions{faults: tc.faults})
			compareDiff(t, mode.String(), direct, m)
			t.Logf("drop %.2f: %v: client rnic timeouts %d (direct %d) retransmits %d; middlebox %s", tc.faults.Drop, mode,
				m.cliStats.Timeouts, direct.cliStats.Timeouts, m.cliStats.Retransmits, m.eng.String())
		}
	}
}

var (
	diffDebug = flag.Bool("mbox.diff-debug", false, "run TestDifferentialDebug")
	diffNAK   = flag.String("mbox.diff-nak", "", "TestDifferentialDebug: the middlebox's NAK recovery (\"broadcast\" to watch the paper's recovery)")
)

type diffLogger struct {
	mu    sync.Mutex
	lines []string
	start time.Time
}

type logPort struct {
	netio.Port
	name string
	log  *diffLogger
}

func summarize(dir string, f []byte) string {
	p, err := roce.Parse(f)
	if err != nil {
		return dir + " ?"
	}
	s := fmt.Sprintf("%s %v qp=%#x psn=%d", dir, p.Opcode, p.BTH.DestQP(), p.BTH.PSN())
	if p.AETH != nil {
		s += " " + p.AETH.Syndrome().String()
	}
	return s
}

func (l *logPort) Recv(b [][]byte) (int, error) {
	n, err := l.Port.Recv(b)
	l.log.mu.Lock()
	for _, f := range b[:n] {
		l.log.lines = append(l.log.lines, fmt.Sprintf("%8d %s", time.Since(l.log.start).Microseconds(), summarize(l.name+" in ", f)))
	}
	l.log.mu.Unlock()
	return n, err
}

func (l *logPort) Send(fs [][]byte) (int, error) {
	l.log.mu.Lock()
	for _, f := range fs {
		l.log.lines = append(l.log.lines, fmt.Sprintf("%8d %s", time.Since(l.log.start).Microseconds(), summarize(l.name+" out", f)))
	}
	l.log.mu.Unlock()
	return l.Port.Send(fs)
}
