package rnic

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/swordbox/swordbox/roce/verbs"
)

// TestSimulatedLossyLink drives one QP pair's engines through a simulated
// network in virtual time: packets are dropped, duplicated and delayed by
// random jitter (which reorders them), all from a seed, so every run is
// reproducible and no scheduler noise is involved. Random WRITE, READ,
// CMP_SWAP and FETCH_ADD requests are checked against a model of the
// memory; the QP must never exhaust its retries, and no atomic may execute
// twice.
func TestSimulatedLossyLink(t *testing.T) {
	ops := 20000
	if testing.Short() {
		ops = 3000
	}
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			simulate(t, seed, ops, 0.02, 0.01, 0.03)
		})
	}
}

const simDebug = false

type simPkt struct {
	at    int64
	toSrv bool
	p     txPkt
}

func simulate(t *testing.T, seed uint64, nops int, drop, dup, reorder float64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	mtu := []int{256, 1024, 4096}[seed%3]
	e := newEngine(t, Config{MTU: mtu, Timeout: time.Millisecond, RetryCount: 7}, uint32(0xffffff-seed*100), uint32(seed))
	const depth, slot = 16, 4096
	model := make([]byte, len(e.sbuf))
	var net []simPkt
	send := func(now int64, toSrv bool, pk []txPkt) {
		for _, p := range pk {
			if rng.Float64() < drop {
				continue
			}
			copies := 1
			if rng.Float64() < dup {
				copies = 2
			}
			for c := 0; c < copies; c++ {
				// 20us one way; with probability reorder a packet is held
				// up to 40us more, so later ones overtake it.
				d := int64(20000)
				if rng.Float64() < reorder {
					d += int64(rng.IntN(40000))
				}
				net = append(net, simPkt{at: now + d, toSrv: toSrv, p: p})
			}
		}
	}
	type pend struct {
		op       verbs.Opcode
		off, n   int
		want     []byte
		orig     uint64
		slot     int
		signaled bool
	}
	outstanding := map[uint64]*pend{}
	free := []int{}
	for i := 0; i < depth; i++ {
		free = append(free, i)
	}
	var nextID, doneID uint64 = 1, 1
	atomics := 0
	overlapsRead := func(off, n int) bool {
		for _, o := range outstanding {
			if o.op == verbs.OpRead && off < o.off+o.n && o.off < off+n {
				return true
			}
		}
		return false
	}
	lastTick := int64(0)
	dbg := 0
	for doneID <= uint64(nops) {
		// Post while the window has room.
		for nextID <= uint64(nops) && len(free) > 0 {
			s := free[len(free)-1]
			free = free[:len(free)-1]
			pd := &pend{slot: s, signaled: true}
			var wr verbs.SendWR
			switch k := rng.IntN(10); {
			case k < 4:
				n := 1 + rng.IntN(3*mtu)
				if n > slot {
					n = slot
				}
				off := rng.IntN(len(model) - n)
				if overlapsRead(off, n) {
					off, n = 0, 0 // an empty WRITE touches nothing
				}
				for i := 0; i < n; i++ {
					e.cbuf[s*slot+i] = byte(rng.Uint32())
				}
				copy(model[off:], e.cbuf[s*slot:s*slot+n])
				pd.op, pd.off, pd.n = verbs.OpWrite, off, n
				wr = e.write(nextID, s*slot, off, n)
				if rng.IntN(3) == 0 && nextID < uint64(nops) {
					wr.Flags, pd.signaled = 0, false
				}
			case k < 7:
				n := rng.IntN(3 * mtu)
				if n > slot {
					n = slot
				}
				off := rng.IntN(len(model) - n)
				pd.op, pd.off, pd.n, pd.want = verbs.OpRead, off, n, append([]byte(nil), model[off:off+n]...)
				wr = e.read(nextID, s*slot, off, n)
			default:
				off := rng.IntN(len(model)/8) * 8
				for overlapsRead(off, 8) {
					off = rng.IntN(len(model)/8) * 8
				}
				cur := binary.LittleEndian.Uint64(model[off:])
				pd.op, pd.off, pd.n, pd.orig = verbs.OpFetchAdd, off, 8, cur
				wr = e.fadd(nextID, s*slot, off, 3)
				binary.LittleEndian.PutUint64(model[off:], cur+3)
				if k == 9 {
					wr.Op, wr.Compare, wr.SwapAdd = verbs.OpCompareSwap, cur, rng.Uint64()
					pd.op = verbs.OpCompareSwap
					binary.LittleEndian.PutUint64(model[off:], wr.SwapAdd)
				}
				atomics++
			}
			outstanding[nextID] = pd
			e.post(wr)
			nextID++
		}
		send(e.now, true, e.cOut.take())
		// Advance to the next event: a delivery or a timer tick.
		next := lastTick + int64(100*time.Microsecond)
		for _, p := range net {
			if p.at < next {
				next = p.at
			}
		}
		if next < e.now {
			next = e.now
		}
		e.now = next
		var due, rest []simPkt
		for _, p := range net {
			if p.at <= e.now {
				due = append(due, p)
			} else {
				rest = append(rest, p)
			}
		}
		net = rest
		for _, p := range due {
			if p.toSrv {
				e.toServer(p.p)
			} else {
				e.toClient(p.p)
			}
		}
		send(e.now, false, e.sOut.take())
		if e.now-lastTick >= int64(100*time.Microsecond) {
			lastTick = e.now
			if simDebug && e.c.sq.timerOn && e.now >= e.c.sq.deadline && dbg < 8 {
				dbg++
				h := e.c.sq.at(0)
				t.Logf("timeout at %v: %v; head lastTx %v ago, net %d, server ePSN %#x nakSent %v", time.Duration(e.now), e.c, time.Duration(e.now-h.lastTx), len(net), e.s.rq.ePSN, e.s.rq.nakSent)
			}
			e.c.sq.tick(e.c, e.now, &e.cOut)
		}
		send(e.now, true, e.cOut.take())
		for _, wc := range e.wcs(e.ccq) {
			if wc.Status != verbs.StatusSuccess {
				t.Fatalf("seed %d: completion %+v at virtual %v; %v", seed, wc, time.Duration(e.now), e.c)
			}
			for id := doneID; id <= wc.ID; id++ {
				pd := outstanding[id]
				if id < wc.ID && pd.signaled {
					t.Fatalf("signaled request %d completed implicitly", id)
				}
				got := e.cbuf[pd.slot*slot:]
				switch pd.op {
				case verbs.OpRead:
					if !bytes.Equal(got[:pd.n], pd.want) {
						t.Fatalf("seed %d: READ %d differs from the model", seed, id)
					}
				case verbs.OpFetchAdd, verbs.OpCompareSwap:
					if wc.ID == id && wc.Orig != pd.orig || binary.LittleEndian.Uint64(got) != pd.orig {
						t.Fatalf("seed %d: %s %d returned %#x, model %#x", seed, pd.op, id, wc.Orig, pd.orig)
					}
				}
				delete(outstanding, id)
				free = append(free, pd.slot)
			}
			doneID = wc.ID + 1
		}
		if false && simDebug && rng.IntN(20000) == 0 {
			t.Logf("virtual %v: done %d, net %d; %v", time.Duration(e.now), doneID-1, len(net), e.c)
		}
		if len(net) > 100000 || e.now > int64(100*time.Second) {
			t.Fatalf("seed %d: no end after 100s of virtual time (%d of %d done); %v", seed, doneID-1, nops, e.c)
		}
	}
	if !bytes.Equal(e.sbuf, model) {
		t.Fatalf("seed %d: memory differs from the model", seed)
	}
	if e.s.rq.atomicsDone != uint64(atomics) {
		t.Fatalf("seed %d: %d atomics executed for %d posted", seed, e.s.rq.atomicsDone, atomics)
	}
	t.Logf("seed %d mtu %d: %d ops in %v virtual; retransmits %d, timeouts %d, NAKs %d; responder duplicates %d",
		seed, mtu, nops, time.Duration(e.now), e.c.sq.retransmits, e.c.sq.timeouts, e.c.sq.seqNAKs, e.s.rq.duplicates)
}
