package rnic

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/roce"
	"github.com/swordbox/swordbox/roce/verbs"
)

// TestRandomOpsAgainstModel runs random WRITE, READ, CMP_SWAP and FETCH_ADD
// operations on 8 QPs over a link with 1% loss and reordering in both
// directions, and checks every completion against a reference model of the
// memory, the final memory against the model, and that no atomic executed
// twice (shared FETCH_ADD counters return each value exactly once, and the
// responder executed exactly as many atomics as were posted).
//
// Each QP owns a private area (so the model of that area is exact: the
// responder applies one QP's requests in PSN order) and all QPs share a set
// of counters. A READ that is retried may legitimately observe a later
// WRITE of the same QP (the IBA re-executes duplicate READs), so the driver
// never posts a modifying operation overlapping an outstanding READ.
func TestRandomOpsAgainstModel(t *testing.T) {
	total := 100_000
	if testing.Short() {
		total = 10_000
	}
	const (
		nQP      = 8
		depth    = 16
		area     = 32 << 10
		counters = 16
		maxLen   = 3000
	)
	var dumpOnce sync.Once
	hook := func(s string) {
		t.Log("retry exceeded:", s)
		dumpOnce.Do(func() {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			os.WriteFile(filepath.Join(os.TempDir(), "rnic-retry-exceeded-goroutines.txt"), buf[:n], 0o644)
		})
	}
	faults := netio.Faults{Drop: 0.01, Reorder: 0.01, ReorderDepth: 3, ReorderHold: 200 * time.Microsecond, Seed: 42}
	cfg := fastCfg()
	cfg.MaxSendWR = 64
	srvCfg := cfg
	srvCfg.Workers = 2
	p := newPair(t, faults, cfg, srvCfg)
	p.cli.onRetryExceeded.Store(&hook)
	remote := make([]byte, nQP*area+counters*8)
	rmr, err := p.srv.Register(remote, verbs.AccessAll)
	if err != nil {
		t.Fatal(err)
	}
	var cs []*QP
	var cqs []*CQ
	for i := 0; i < nQP; i++ {
		cq := p.cli.NewCQ(64)
		c, err := p.cli.NewQP(verbs.QPConfig{SendCQ: cq, RecvCQ: cq})
		if err != nil {
			t.Fatal(err)
		}
		s, err := p.srv.NewQP(verbs.QPConfig{SendCQ: p.srvCQ, RecvCQ: p.srvCQ})
		if err != nil {
			t.Fatal(err)
		}
		if err := Connect(c, s, uint32(roce.PSN(0xffff00).Add(i*37)), uint32(i)*1000); err != nil {
			t.Fatal(err)
		}
		cs, cqs = append(cs, c), append(cqs, cq)
	}
	model := make([]byte, len(remote)) // per-QP areas; counters checked separately
	var mu sync.Mutex
	counterOrigs := make([][]uint64, counters)
	var atomicsPosted int64
	var wg sync.WaitGroup
	errs := make(chan error, nQP)
	for qi := 0; qi < nQP; qi++ {
		wg.Add(1)
		go func(qi int) {
			defer wg.Done()
			if err := drive(p, cs[qi], cqs[qi], rmr, qi, total/nQP, depth, area, counters, maxLen, model[qi*area:(qi+1)*area], &mu, counterOrigs, &atomicsPosted); err != nil {
				errs <- fmt.Errorf("qp %d: %w", qi, err)
			}
		}(qi)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Final memory equals the model.
	for qi := 0; qi < nQP; qi++ {
		if !bytes.Equal(remote[qi*area:(qi+1)*area], model[qi*area:(qi+1)*area]) {
			t.Fatalf("qp %d: final memory differs from the model", qi)
		}
	}
	// Every shared counter returned 0..k-1 exactly once and holds k.
	for c := 0; c < counters; c++ {
		o := counterOrigs[c]
		sort.Slice(o, func(i, j int) bool { return o[i] < o[j] })
		for i, v := range o {
			if v != uint64(i) {
				t.Fatalf("counter %d: FETCH_ADD results %v...: value %d at rank %d (an atomic executed twice or was lost)", c, o[:min(len(o), 10)], v, i)
			}
		}
		if got := binary.LittleEndian.Uint64(remote[nQP*area+c*8:]); got != uint64(len(o)) {
			t.Fatalf("counter %d = %d after %d FETCH_ADDs", c, got, len(o))
		}
	}
	st := p.srv.Stats()
	if int64(st.AtomicsExecuted) != atomicsPosted {
		t.Fatalf("responder executed %d atomics, %d were posted", st.AtomicsExecuted, atomicsPosted)
	}
	ls := p.linkA.Stats()
	t.Logf("client->server link: %v", ls)
	t.Logf("server->client link: %v", p.linkB.Stats())
	t.Logf("client: %+v", p.cli.Stats())
	t.Logf("server: %+v", st)
	if ls.Dropped == 0 || ls.Reordered == 0 {
		t.Fatal("the link injected no faults: the test proves nothing")
	}
}

type pending struct {
	op       verbs.Opcode
	off, len int    // remote range relative to the QP's area (or counter index)
	slot     int    // local buffer slot
	want     []byte // expected READ data
	orig     uint64 // expected CAS original value
	counter  int
	isShared bool
}

func drive(p *pair, q *QP, cq *CQ, rmr *MR, qi, n, depth, area, counters, maxLen int, model []byte,
	mu *sync.Mutex, counterOrigs [][]uint64, atomicsPosted *int64) error {
	rng := rand.New(rand.NewPCG(uint64(qi)+1, 99))
	const slotSize = 4096
	local := make([]byte, depth*slotSize)
	lmr, err := p.cli.Register(local, verbs.AccessAll)
	if err != nil {
		return err
	}
	areaVA := rmr.Addr() + uint64(qi*area)
	countersVA := rmr.Addr() + uint64(8*area)
	outstanding := make(map[uint64]*pending)
	freeSlots := make([]int, 0, depth)
	for i := depth - 1; i >= 0; i-- {
		freeSlots = append(freeSlots, i)
	}
	var nextID, doneID uint64 = 1, 1
	wcs := make([]verbs.WC, 32)
	overlapsRead := func(off, l int) bool {
		for _, o := range outstanding {
			if o.op == verbs.OpRead && off < o.off+o.len && o.off < off+l {
				return true
			}
		}
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	posted, unsig := 0, 0
	batch := make([]verbs.SendWR, 0, 4)
	for doneID <= uint64(n) {
		// Post a doorbell batch of up to 4 requests while slots are free.
		batch = batch[:0]
		for posted < n && len(freeSlots) > 0 && len(batch) < 4 {
			slot := freeSlots[len(freeSlots)-1]
			sva := lmr.Addr() + uint64(slot*slotSize)
			pd := &pending{slot: slot}
			wr := verbs.SendWR{ID: nextID, Flags: verbs.Signaled}
			k := rng.IntN(10)
			switch {
			case k < 4: // WRITE
				l := 1 + rng.IntN(maxLen)
				off := rng.IntN(area - l)
				if overlapsRead(off, l) {
					k = 9 // fall through to a FETCH_ADD instead
					break
				}
				for i := 0; i < l; i++ {
					local[slot*slotSize+i] = byte(rng.Uint32())
				}
				copy(model[off:off+l], local[slot*slotSize:slot*slotSize+l])
				pd.op, pd.off, pd.len = verbs.OpWrite, off, l
				wr.Op, wr.RemoteAddr, wr.RKey = verbs.OpWrite, areaVA+uint64(off), rmr.RKey()
				wr.SG = []verbs.SGE{{Addr: sva, Length: uint32(l), LKey: lmr.LKey()}}
				// Unsignaled now and then: it completes implicitly with the
				// next signaled request (never the last, never many in a row).
				if rng.IntN(4) == 0 && posted < n-1 && unsig < depth/2 {
					wr.Flags = 0
					unsig++
				} else {
					unsig = 0
				}
			case k < 7: // READ
				l := rng.IntN(maxLen + 1)
				off := rng.IntN(area - l)
				unsig = 0
				pd.op, pd.off, pd.len = verbs.OpRead, off, l
				pd.want = append([]byte(nil), model[off:off+l]...)
				wr.Op, wr.RemoteAddr, wr.RKey = verbs.OpRead, areaVA+uint64(off), rmr.RKey()
				wr.SG = []verbs.SGE{{Addr: sva, Length: uint32(l), LKey: lmr.LKey()}}
			case k < 8: // CMP_SWAP on a word of the private area
				off := rng.IntN(area/8) * 8
				if overlapsRead(off, 8) {
					k = 9
					break
				}
				cur := binary.LittleEndian.Uint64(model[off:])
				cmp := cur
				if rng.IntN(2) == 0 {
					cmp = rng.Uint64()
				}
				swp := rng.Uint64()
				unsig = 0
				pd.op, pd.off, pd.len, pd.orig = verbs.OpCompareSwap, off, 8, cur
				if cmp == cur {
					binary.LittleEndian.PutUint64(model[off:], swp)
				}
				wr.Op, wr.RemoteAddr, wr.RKey, wr.Compare, wr.SwapAdd = verbs.OpCompareSwap, areaVA+uint64(off), rmr.RKey(), cmp, swp
				wr.SG = []verbs.SGE{{Addr: sva, Length: 8, LKey: lmr.LKey()}}
			}
			if k >= 8 { // FETCH_ADD +1 on a shared counter
				c := rng.IntN(counters)
				unsig = 0
				pd = &pending{slot: slot, op: verbs.OpFetchAdd, counter: c, isShared: true}
				wr = verbs.SendWR{ID: nextID, Flags: verbs.Signaled, Op: verbs.OpFetchAdd, RemoteAddr: countersVA + uint64(c*8), RKey: rmr.RKey(), SwapAdd: 1,
					SG: []verbs.SGE{{Addr: sva, Length: 8, LKey: lmr.LKey()}}}
			}
			if wr.Op == verbs.OpCompareSwap || wr.Op == verbs.OpFetchAdd {
				mu.Lock()
				*atomicsPosted++
				mu.Unlock()
			}
			freeSlots = freeSlots[:len(freeSlots)-1]
			outstanding[nextID] = pd
			batch = append(batch, wr)
			nextID++
			posted++
		}
		if len(batch) > 0 {
			if err := q.PostSend(batch); err != nil {
				return err
			}
		}
		var k int
		var err error
		if len(batch) > 0 && len(freeSlots) > 0 && posted < n {
			k = cq.Poll(wcs) // keep the window full
		} else {
			k, err = cq.Wait(ctx, wcs)
		}
		if err != nil {
			return fmt.Errorf("waiting for completion of %d (posted %d): %w; %v; peer %v", doneID, posted, err, q, p.srv.QP(q.path.RemoteQPN))
		}
		for _, wc := range wcs[:k] {
			if wc.Status != verbs.StatusSuccess {
				return fmt.Errorf("completion %+v; peer %v", wc, p.srv.QP(q.path.RemoteQPN))
			}
			if wc.ID < doneID {
				return fmt.Errorf("completion %d out of order (expected >= %d)", wc.ID, doneID)
			}
			// Unsignaled requests before wc.ID completed implicitly.
			for id := doneID; id <= wc.ID; id++ {
				pd := outstanding[id]
				if id == wc.ID {
					if err := checkWC(wc, pd, local[pd.slot*slotSize:], mu, counterOrigs); err != nil {
						return err
					}
				} else if pd.op != verbs.OpWrite {
					return fmt.Errorf("request %d (%s) completed without a completion", id, pd.op)
				}
				delete(outstanding, id)
				freeSlots = append(freeSlots, pd.slot)
			}
			doneID = wc.ID + 1
		}
	}
	return nil
}

func checkWC(wc verbs.WC, pd *pending, slot []byte, mu *sync.Mutex, counterOrigs [][]uint64) error {
	if wc.Op != pd.op {
		return fmt.Errorf("completion %d: opcode %s, posted %s", wc.ID, wc.Op, pd.op)
	}
	switch pd.op {
	case verbs.OpWrite:
		if wc.ByteLen != uint32(pd.len) {
			return fmt.Errorf("write %d: byte length %d, want %d", wc.ID, wc.ByteLen, pd.len)
		}
	case verbs.OpRead:
		if wc.ByteLen != uint32(pd.len) || !bytes.Equal(slot[:pd.len], pd.want) {
			return fmt.Errorf("read %d: %d bytes at +%d differ from the model", wc.ID, pd.len, pd.off)
		}
	case verbs.OpCompareSwap:
		if wc.Orig != pd.orig || binary.LittleEndian.Uint64(slot) != pd.orig {
			return fmt.Errorf("cas %d: original %#x, model says %#x", wc.ID, wc.Orig, pd.orig)
		}
	case verbs.OpFetchAdd:
		if binary.LittleEndian.Uint64(slot) != wc.Orig {
			return fmt.Errorf("fadd %d: local buffer %#x, completion %#x", wc.ID, binary.LittleEndian.Uint64(slot), wc.Orig)
		}
		mu.Lock()
		counterOrigs[pd.counter] = append(counterOrigs[pd.counter], wc.Orig)
		mu.Unlock()
	}
	return nil
}
