package middlebox

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/swordbox/swordbox/clover"
	"github.com/swordbox/swordbox/roce"
)

// steerCase is a hand-written trace with the rewrites it must produce. The
// cases run on the steerer alone (TestSteerRules) and through the switch
// program as well (TestSteerDiffRules), which must agree frame by frame.
type steerCase struct {
	name  string
	mode  string
	chain bool // chain mode (rules 10-12 of docs/swordbox-p4.md)
	run   func(f *steerFix)
}

// steerFix is the fixture of a case: clients a, b, c; memory nodes m, m2;
// keys 1 and 2 tracked, 9 not; 64-byte nodes; tail-ttl 2ms.
type steerFix struct {
	t       *testing.T
	r       *steerRig
	a, b, c *dHost
	m, m2   *dHost
}

const (
	fixSize = 64
	fixTTL  = 2000 // µs
)

func newSteerFix(t *testing.T, mode string, chain, withP4 bool) *steerFix {
	clis, mems := steerHosts(3, 2)
	cfg := SteerConfig{Mode: mode, NodeSize: fixSize, Keys: []uint64{1, 2}, TailTTL: fixTTL * time.Microsecond, Chain: chainOpt(chain)}
	f := &steerFix{t: t, r: newSteerRig(t, cfg, append(append([]dHost{}, clis...), mems...), withP4)}
	f.a, f.b, f.c, f.m, f.m2 = &clis[0], &clis[1], &clis[2], &mems[0], &mems[1]
	return f
}

// write sends client c's node WRITE of (key, lh, ver) at va to memory node m.
func (f *steerFix) write(c, m *dHost, va, key uint64, lh uint32, ver uint8) {
	f.r.request(nodeWrite(f.t, c, m, va, nodeBytes(key, lh, ver, fixSize)))
}

// link sends client c's CAS linking (lh, ver) after the node at va of
// entry version tver; it returns the CAS's PSN and the frame as sent.
func (f *steerFix) link(c, m *dHost, va uint64, tver uint8, lh uint32, ver uint8) (uint32, []byte) {
	psn := c.next()
	fr := casFrame(f.t, c, m, psn, va, tailWord(tver), linkWord(tver, lh, ver))
	return psn, f.r.request(fr)
}

// ack sends memory node m's ATOMIC ACK (original value orig) of client
// c's CAS psn and returns the original value the client gets.
func (f *steerFix) ack(c, m *dHost, psn uint32, orig uint64) uint64 {
	f.t.Helper()
	p, err := roce.Parse(f.r.response(atomicAckFrame(f.t, c, m, psn, orig)))
	if err != nil {
		f.t.Fatal(err)
	}
	return p.AtomicAckETH.Orig()
}

// wantVouch checks that orig, an ATOMIC ACK's original value out, is the
// vouch for a link after the node (lh, ver), as the Clover client parses
// it (rule 13).
func (f *steerFix) wantVouch(orig uint64, lh uint32, ver uint8) {
	f.t.Helper()
	pred, ok := clover.Header(orig).Vouched()
	if !ok || pred != (clover.Ptr{LH: clover.LH(lh), Ver: ver}) || orig != uint64(clover.VouchWord(pred)) {
		f.t.Fatalf("ATOMIC ACK out %#x (vouched %v for %+v), want the vouch for LH %d version %d", orig, ok, pred, lh, ver)
	}
}

// readResp sends memory node m's response to client c's last READ: the
// first n bytes of node (key, lh, ver). It reports whether the response
// out is vouched for (rule 14: bit 63 of its header word), and checks that
// nothing else changed.
func (f *steerFix) readResp(c, m *dHost, key uint64, lh uint32, ver uint8, n uint32) bool {
	f.t.Helper()
	node := nodeBytes(key, lh, ver, fixSize)[:n]
	p, err := roce.Parse(f.r.response(readRespFrame(f.t, c, m, c.psn-1, node)))
	if err != nil {
		f.t.Fatal(err)
	}
	vouched := len(p.Payload) > 7 && p.Payload[7]&0x80 != 0
	if vouched {
		node[7] |= 0x80
	}
	if !bytes.Equal(p.Payload, node) {
		f.t.Fatalf("READ response out %x, want %x", p.Payload, node)
	}
	return vouched
}

func (f *steerFix) wantVouched(got, want bool) {
	f.t.Helper()
	if got != want {
		f.t.Fatalf("READ response vouched for: %v, want %v", got, want)
	}
}

func (f *steerFix) read(c, m *dHost, va uint64) uint64 {
	p, err := roce.Parse(f.r.request(readFrame(f.t, c, m, va, fixSize)))
	if err != nil {
		f.t.Fatal(err)
	}
	return p.RETH.VA()
}

// wantCAS checks a CAS as forwarded.
func (f *steerFix) wantCAS(fr []byte, va, cmp, swap uint64) {
	f.t.Helper()
	p, err := roce.Parse(fr)
	if err != nil {
		f.t.Fatal(err)
	}
	a := p.AtomicETH
	if a.VA() != va || a.Compare() != cmp || a.SwapAdd() != swap {
		f.t.Fatalf("CAS out: VA %#x compare %#x swap %#x; want %#x %#x %#x", a.VA(), a.Compare(), a.SwapAdd(), va, cmp, swap)
	}
}

func (f *steerFix) wantRead(got, want uint64) {
	f.t.Helper()
	if got != want {
		f.t.Fatalf("READ out at %#x, want %#x", got, want)
	}
}

func (f *steerFix) wantStat(i int, want uint64) {
	f.t.Helper()
	if got := f.r.s.stats[i]; got != want {
		f.t.Fatalf("stats %d (%s) = %d, want %d", i, steerStatNames[i], got, want)
	}
}

// Node addresses of the cases: H is key 1's head (entry version 3), X, Y,
// Z, W nodes appended after it (LHs 11..14, entry versions 4..7).
const (
	sH, sX, sY, sZ, sW = 0x1000, 0x2000, 0x3000, 0x4000, 0x5000
)

// agree compares the cached tails and chain ends of steer.go and the
// switch, when the case runs through both.
func (f *steerFix) agree() {
	f.t.Helper()
	if f.r.dev != nil {
		f.r.checkTails()
	}
}

// wantTail checks key's confirmed tail: the node at va with LH lh.
func (f *steerFix) wantTail(key, va uint64, lh uint32) {
	f.t.Helper()
	if t, ok := f.r.s.tails[key]; !ok || !t.valid || t.va != va || t.lh != lh {
		f.t.Fatalf("key %d: tail %+v (cached %v), want VA %#x LH %d", key, t, ok, va, lh)
	}
	f.agree()
}

// wantNone checks that key has no valid entry in m, the steerer's tails
// or chain ends (what names which).
func (f *steerFix) wantNone(what string, m map[uint64]tail, key uint64) {
	f.t.Helper()
	if t := m[key]; t.valid {
		f.t.Fatalf("key %d: %s %+v, want none", key, what, t)
	}
	f.agree()
}

// wantEnd checks key's chain end (chain mode): the node at va with LH lh
// and entry version ver, whose CAS was forwarded at the rig time at (µs).
func (f *steerFix) wantEnd(key, va uint64, lh uint32, ver uint8, at uint64) {
	f.t.Helper()
	want := tail{valid: true, va: va, ver: ver, srv: f.m.ip, ts: int64(at) * 1000, lh: lh}
	if e := f.r.s.ends[key]; e != want {
		f.t.Fatalf("key %d: chain end %+v, want %+v", key, e, want)
	}
	f.agree()
}

// chainY is confirmX in chain mode (X is the tail and, seeded by its
// success, the chain's end), then b's CAS linking Y after X, aimed there
// by the client: chained, not rewritten, Y the chain's end. It returns
// b's PSN.
func (f *steerFix) chainY() uint32 {
	f.t.Helper()
	f.confirmX()
	f.wantEnd(1, sX, 11, 4, f.r.now)
	f.write(f.b, f.m, sY, 1, 12, 5)
	pb, out := f.link(f.b, f.m, sX, 4, 12, 5)
	f.wantCAS(out, sX, tailWord(4), linkWord(4, 12, 5))
	f.wantStat(stCASChained, 1)
	f.wantStat(stCASSteered, 0)
	f.wantEnd(1, sY, 12, 5, f.r.now)
	f.wantTail(1, sX, 11)
	return pb
}

// chainZ is chainY, then c's stale CAS linking Z after H, steered onto
// the unconfirmed chain end Y with Y's entry version. It returns b's and
// c's PSNs and c's CAS as sent.
func (f *steerFix) chainZ() (pb, pc uint32, sent []byte) {
	f.t.Helper()
	pb = f.chainY()
	f.write(f.c, f.m, sZ, 1, 13, 6)
	pc = f.c.next()
	sent = casFrame(f.t, f.c, f.m, pc, sH, tailWord(3), linkWord(3, 13, 6))
	f.wantCAS(f.r.request(sent), sY, tailWord(5), linkWord(5, 13, 6))
	f.wantStat(stCASChained, 2)
	f.wantStat(stCASSteered, 1)
	f.wantEnd(1, sZ, 13, 6, f.r.now)
	f.wantTail(1, sX, 11)
	return pb, pc, sent
}

// confirmX writes H and X and links X after H (a's CAS), confirmed by its
// ATOMIC ACK: X (version 4) is key 1's cached tail, at the clock's time.
func (f *steerFix) confirmX() {
	f.write(f.a, f.m, sH, 1, 10, 3)
	f.write(f.a, f.m, sX, 1, 11, 4)
	psn, out := f.link(f.a, f.m, sH, 3, 11, 4)
	f.wantCAS(out, sH, tailWord(3), linkWord(3, 11, 4))
	f.ack(f.a, f.m, psn, tailWord(3))
	f.wantStat(stTailConfirmed, 1)
}

var steerCases = []steerCase{
	{name: "tail cached only at the ACK of its successful link", mode: "both", run: func(f *steerFix) {
		f.write(f.a, f.m, sH, 1, 10, 3)
		f.write(f.a, f.m, sX, 1, 11, 4)
		pa, out := f.link(f.a, f.m, sH, 3, 11, 4)
		f.wantCAS(out, sH, tailWord(3), linkWord(3, 11, 4))
		// b's CAS after H before a's ACK: nothing confirmed, not steered.
		f.write(f.b, f.m, sY, 1, 12, 5)
		pb, out := f.link(f.b, f.m, sH, 3, 12, 5)
		f.wantCAS(out, sH, tailWord(3), linkWord(3, 12, 5))
		f.wantRead(f.read(f.c, f.m, sH), sH)
		f.ack(f.a, f.m, pa, tailWord(3))        // success: X is the tail
		f.ack(f.b, f.m, pb, linkWord(3, 11, 4)) // b failed on H (not the cached tail): X stays
		f.wantStat(stTailConfirmed, 1)
		f.wantStat(stTailDropped, 0)
		// c's stale CAS after H goes to X with X's entry version.
		f.write(f.c, f.m, sZ, 1, 13, 6)
		_, out = f.link(f.c, f.m, sH, 3, 13, 6)
		f.wantCAS(out, sX, tailWord(4), linkWord(4, 13, 6))
		// READs: a stale node goes to the tail, the tail and unknown
		// addresses stay.
		f.wantRead(f.read(f.a, f.m, sH), sX)
		f.wantRead(f.read(f.a, f.m, sX), sX)
		f.wantRead(f.read(f.a, f.m, 0x9000), 0x9000)
		f.wantStat(stCASSteered, 1)
		f.wantStat(stReadsSteered, 1)
		f.wantStat(stReadMisses, 2) // before the confirmation, and the unknown address
	}},
	{name: "a failed CAS aimed at the cached tail forgets it", mode: "both", run: func(f *steerFix) {
		f.confirmX()
		f.write(f.c, f.m, sZ, 1, 13, 6)
		psn, out := f.link(f.c, f.m, sH, 3, 13, 6)
		f.wantCAS(out, sX, tailWord(4), linkWord(4, 13, 6))
		f.ack(f.c, f.m, psn, linkWord(4, 12, 5)) // X had a successor nobody saw
		f.wantStat(stTailDropped, 1)
		_, out = f.link(f.c, f.m, sH, 3, 13, 6)
		f.wantCAS(out, sH, tailWord(3), linkWord(3, 13, 6))
		f.wantRead(f.read(f.a, f.m, sH), sH)
	}},
	{name: "tails expire tail-ttl after their link was forwarded", mode: "both", run: func(f *steerFix) {
		f.write(f.a, f.m, sH, 1, 10, 3)
		f.write(f.a, f.m, sX, 1, 11, 4)
		t0 := f.r.now
		psn, _ := f.link(f.a, f.m, sH, 3, 11, 4)
		f.r.now = t0 + fixTTL/2
		f.ack(f.a, f.m, psn, tailWord(3)) // confirmed later; the age counts from t0
		f.r.now = t0 + fixTTL - 1
		f.wantRead(f.read(f.b, f.m, sH), sX)
		f.r.now = t0 + fixTTL
		f.wantRead(f.read(f.b, f.m, sH), sH)
		f.write(f.b, f.m, sY, 1, 12, 5)
		_, out := f.link(f.b, f.m, sH, 3, 12, 5)
		f.wantCAS(out, sH, tailWord(3), linkWord(3, 12, 5))
		f.wantStat(stTailExpired, 1)
		f.wantStat(stReadMisses, 1)
	}},
	{name: "a confirmation older than the cached tail is not applied", mode: "both", run: func(f *steerFix) {
		f.write(f.a, f.m, sH, 1, 10, 3)
		f.write(f.a, f.m, sX, 1, 11, 4)
		f.write(f.b, f.m, sY, 1, 12, 5)
		pa, _ := f.link(f.a, f.m, sH, 3, 11, 4)
		f.r.now += 10
		pb, _ := f.link(f.b, f.m, sX, 4, 12, 5) // b knew X already
		f.ack(f.b, f.m, pb, tailWord(4))        // Y confirmed first
		f.ack(f.a, f.m, pa, tailWord(3))        // then X's, older: not applied
		f.wantStat(stTailConfirmed, 1)
		f.wantStat(stConfirmStale, 1)
		f.wantRead(f.read(f.c, f.m, sX), sY)
	}},
	{name: "a retransmitted CAS goes out as its first copy", mode: "both", run: func(f *steerFix) {
		f.confirmX()
		f.write(f.c, f.m, sZ, 1, 13, 6)
		psn := f.c.next()
		sent := casFrame(f.t, f.c, f.m, psn, sH, tailWord(3), linkWord(3, 13, 6))
		f.wantCAS(f.r.request(sent), sX, tailWord(4), linkWord(4, 13, 6))
		// The tail moves to Y and then expires: the copy is unchanged.
		f.write(f.b, f.m, sY, 1, 12, 5)
		pb, _ := f.link(f.b, f.m, sX, 4, 12, 5)
		f.ack(f.b, f.m, pb, tailWord(4))
		f.r.now += 10 * fixTTL
		f.wantCAS(f.r.request(sent), sX, tailWord(4), linkWord(4, 13, 6))
		f.wantStat(stRetransmits, 1)
		// Its ACK still settles it: a failure on X (not the tail) keeps Y.
		f.ack(f.c, f.m, psn, linkWord(4, 12, 5))
		f.wantStat(stTailDropped, 0)
		// Once ACKed, a copy (its ACK was lost after the box) is still the
		// same CAS: forwarded as the first copy, nothing recorded again.
		f.wantCAS(f.r.request(sent), sX, tailWord(4), linkWord(4, 13, 6))
		f.wantStat(stRetransmits, 2)
		f.wantStat(stLinkAmbiguous, 0)
	}},
	{name: "never steered: delete mark, FETCH_ADD, untracked key, other memory node, unknown node", mode: "both", run: func(f *steerFix) {
		f.confirmX()
		w := linkWord(3, lhDeleted, 0)
		f.wantCAS(f.r.request(casFrame(f.t, f.c, f.m, f.c.next(), sH, tailWord(3), w)), sH, tailWord(3), w)
		p, _ := roce.Parse(f.r.request(faFrame(f.t, f.c, f.m, sH, 1)))
		if p.AtomicETH.VA() != sH {
			f.t.Fatal("FETCH_ADD steered")
		}
		f.write(f.c, f.m, 0x8000, 9, 40, 1) // untracked key 9
		_, out := f.link(f.c, f.m, 0x7000, 2, 40, 1)
		f.wantCAS(out, 0x7000, tailWord(2), linkWord(2, 40, 1))
		f.write(f.c, f.m2, sZ, 1, 13, 6) // key 1's node on the other memory node
		_, out = f.link(f.c, f.m2, sH, 3, 13, 6)
		f.wantCAS(out, sH, tailWord(3), linkWord(3, 13, 6))
		f.wantRead(f.read(f.c, f.m2, sH), sH)
		_, out = f.link(f.c, f.m, sH, 3, 13, 7) // version differs from the node written
		f.wantCAS(out, sH, tailWord(3), linkWord(3, 13, 7))
		f.wantStat(stLinkUnresolved, 1)
		f.wantStat(stCASSteered, 0)
	}},
	{name: "write mode leaves READs alone", mode: "write", run: func(f *steerFix) {
		f.confirmX()
		f.wantRead(f.read(f.b, f.m, sH), sH)
		f.wantStat(stReads, 0)
		f.write(f.b, f.m, sY, 1, 12, 5)
		_, out := f.link(f.b, f.m, sH, 3, 12, 5)
		f.wantCAS(out, sX, tailWord(4), linkWord(4, 12, 5))
	}},
	{name: "read mode learns but leaves CAS alone", mode: "read", run: func(f *steerFix) {
		f.confirmX()
		f.write(f.b, f.m, sY, 1, 12, 5)
		_, out := f.link(f.b, f.m, sH, 3, 12, 5)
		f.wantCAS(out, sH, tailWord(3), linkWord(3, 12, 5))
		f.wantRead(f.read(f.b, f.m, sH), sX)
	}},
	// Rule 14: READ responses of the confirmed tail are vouched for.
	{name: "a READ response of the fresh confirmed tail is vouched for, others are not", mode: "both", run: func(f *steerFix) {
		t0 := f.r.now
		f.confirmX() // X (LH 11, version 4) is the tail: its LH is kept in every mode (rule 6)
		f.wantTail(1, sX, 11)
		f.wantRead(f.read(f.c, f.m, sH), sX)
		f.wantVouched(f.readResp(f.c, f.m, 1, 11, 4, fixSize), true)
		f.wantVouched(f.readResp(f.c, f.m, 1, 10, 3, fixSize), false)  // H: another LH
		f.wantVouched(f.readResp(f.c, f.m, 1, 11, 5, fixSize), false)  // another entry version
		f.wantVouched(f.readResp(f.c, f.m2, 1, 11, 4, fixSize), false) // from another memory node
		f.wantVouched(f.readResp(f.c, f.m, 2, 11, 4, fixSize), false)  // another (tracked) key
		f.wantVouched(f.readResp(f.c, f.m, 9, 11, 4, fixSize), false)  // an untracked key
		f.wantVouched(f.readResp(f.c, f.m, 1, 11, 4, 32), false)       // not node-sized
		f.wantStat(stReadsVouched, 1)
		f.r.now = t0 + fixTTL - 1
		f.wantVouched(f.readResp(f.c, f.m, 1, 11, 4, fixSize), true)
		f.r.now = t0 + fixTTL // the tail expired
		f.wantVouched(f.readResp(f.c, f.m, 1, 11, 4, fixSize), false)
		f.wantStat(stReadsVouched, 2)
		if f.r.c.SteerVouched != 2 {
			f.t.Fatalf("counter SteerVouched %d, want 2", f.r.c.SteerVouched)
		}
	}},
	{name: "a READ response of a dropped tail is not vouched for", mode: "both", run: func(f *steerFix) {
		f.confirmX()
		f.write(f.c, f.m, sZ, 1, 13, 6)
		psn, _ := f.link(f.c, f.m, sH, 3, 13, 6) // steered to X
		f.ack(f.c, f.m, psn, linkWord(4, 12, 5)) // and failed: X is forgotten
		f.read(f.a, f.m, sX)
		f.wantVouched(f.readResp(f.a, f.m, 1, 11, 4, fixSize), false)
		f.wantStat(stReadsVouched, 0)
	}},
	{name: "write mode vouches for no READ response", mode: "write", run: func(f *steerFix) {
		f.confirmX()
		f.read(f.a, f.m, sX)
		f.wantVouched(f.readResp(f.a, f.m, 1, 11, 4, fixSize), false)
	}},
	// Chain mode: rules 10-14 of docs/swordbox-p4.md, "Chain mode".
	{name: "chain: an unchained success starts a chain when none is live", mode: "both", chain: true, run: func(f *steerFix) {
		// a's and b's CASes go out before any tail or chain (b aimed at X
		// by the client); a's ACK starts the chain at X; b's confirms Y
		// but leaves the live chain at X, which is behind Y (forwarded
		// before Y's link), so READs go to Y, the confirmed tail (rule
		// 7, not 12), whose response is vouched for.
		f.write(f.a, f.m, sH, 1, 10, 3)
		f.write(f.a, f.m, sX, 1, 11, 4)
		f.write(f.b, f.m, sY, 1, 12, 5)
		t0 := f.r.now
		pa, _ := f.link(f.a, f.m, sH, 3, 11, 4)
		f.r.now += 10
		pb, out := f.link(f.b, f.m, sX, 4, 12, 5)
		f.wantCAS(out, sX, tailWord(4), linkWord(4, 12, 5))
		f.ack(f.a, f.m, pa, tailWord(3))
		f.wantEnd(1, sX, 11, 4, t0)
		f.ack(f.b, f.m, pb, tailWord(4))
		f.wantTail(1, sY, 12)
		f.wantEnd(1, sX, 11, 4, t0)
		f.wantRead(f.read(f.c, f.m, sH), sY)
		f.wantVouched(f.readResp(f.c, f.m, 1, 12, 5, fixSize), true)
		f.wantStat(stReadsChainEnd, 0)
		f.wantStat(stReadsSteered, 1)
		f.wantStat(stReadsVouched, 1)
		f.wantStat(stCASChained, 0)
	}},
	{name: "chain: a CAS aimed at the chain's end is chained as is, a stale one is steered onto the unconfirmed end", mode: "write", chain: true, run: func(f *steerFix) {
		f.chainZ()
		f.wantStat(stChainRefused, 0)
	}},
	{name: "chain: refused when the chain's end has the client's compare version at another VA, and not steered", mode: "both", chain: true, run: func(f *steerFix) {
		f.chainY()
		f.write(f.c, f.m, sZ, 1, 13, 6)
		// c compares version 5, Y's, at H: refused, and with the chain
		// live it is not steered to the confirmed tail X either (rule
		// 10's fallback): it goes out as sent.
		_, out := f.link(f.c, f.m, sH, 5, 13, 6)
		f.wantCAS(out, sH, tailWord(5), linkWord(5, 13, 6))
		f.wantStat(stChainRefused, 1)
		f.wantStat(stCASChained, 1)
		f.wantStat(stCASSteered, 0)
		f.wantEnd(1, sY, 12, 5, f.r.now)
	}},
	{name: "chain: a CAS linking a node chained before is refused and not steered while the chain is live", mode: "both", chain: true, run: func(f *steerFix) {
		pb := f.chainY()
		// b retries Y after H (its CAS's outcome unseen): Y was chained.
		_, out := f.link(f.b, f.m, sH, 3, 12, 5)
		f.wantCAS(out, sH, tailWord(3), linkWord(3, 12, 5))
		f.wantStat(stChainRefused, 1)
		f.wantStat(stCASSteered, 0)
		// b's first CAS failed on X: the chain ends, Y's mark is cleared
		// and X, the confirmed tail it was aimed at, is forgotten. The
		// next retry is neither refused nor chained nor steered.
		f.ack(f.b, f.m, pb, linkWord(4, 20, 7))
		f.wantStat(stEndChainedFail, 1)
		_, out = f.link(f.b, f.m, sH, 3, 12, 5)
		f.wantCAS(out, sH, tailWord(3), linkWord(3, 12, 5))
		f.wantStat(stChainRefused, 1)
		f.wantStat(stCASChained, 1)
	}},
	{name: "chain: a chained success after the confirmed tail confirms its node", mode: "both", chain: true, run: func(f *steerFix) {
		t0 := f.r.now
		pb, pc, _ := f.chainZ()
		f.r.now += 10
		f.ack(f.b, f.m, pb, tailWord(4))
		f.wantTail(1, sY, 12)
		if tl := f.r.s.tails[1]; tl.ts != int64(t0)*1000 {
			f.t.Fatalf("tail time %d ns, want %d (when b's CAS was forwarded)", tl.ts, t0*1000)
		}
		f.ack(f.c, f.m, pc, tailWord(5))
		f.wantTail(1, sZ, 13)
		f.wantEnd(1, sZ, 13, 6, t0)
		f.wantStat(stTailConfirmed, 3)
		f.wantStat(stChainBroken, 0)
	}},
	{name: "chain: a chained success after an unconfirmed predecessor ends the chain", mode: "both", chain: true, run: func(f *steerFix) {
		pb, pc, _ := f.chainZ()
		if got := f.ack(f.c, f.m, pc, tailWord(5)); got != tailWord(5) { // Z's ACK before Y's: not vouched
			f.t.Fatalf("ATOMIC ACK out %#x, want %#x", got, tailWord(5))
		}
		f.wantNone("chain end", f.r.s.ends, 1)
		f.wantTail(1, sX, 11)
		f.wantStat(stChainBroken, 1)
		f.wantStat(stEndPredUnconfirmed, 1)
		f.wantStat(stEndChainedFail, 0)
		f.wantVouch(f.ack(f.b, f.m, pb, tailWord(4)), 11, 4) // Y still confirmed, and vouched; no chain started
		f.wantTail(1, sY, 12)
		f.wantNone("chain end", f.r.s.ends, 1)
		// Without a live chain a stale CAS goes to the confirmed tail.
		f.write(f.a, f.m, sW, 1, 14, 7)
		_, out := f.link(f.a, f.m, sH, 3, 14, 7)
		f.wantCAS(out, sY, tailWord(5), linkWord(5, 14, 7))
		f.wantStat(stCASChained, 2)
		f.wantStat(stCASSteered, 2)
	}},
	{name: "chain: a chained failure aimed at the confirmed tail ends the chain and drops the tail", mode: "both", chain: true, run: func(f *steerFix) {
		pb := f.chainY() // aimed at X, the confirmed tail
		if got := f.ack(f.b, f.m, pb, linkWord(4, 20, 7)); got != linkWord(4, 20, 7) {
			f.t.Fatalf("a failure's ATOMIC ACK out %#x", got)
		}
		f.wantNone("chain end", f.r.s.ends, 1)
		f.wantNone("tail", f.r.s.tails, 1)
		f.wantStat(stChainBroken, 1)
		f.wantStat(stEndChainedFail, 1)
		f.wantStat(stEndPredUnconfirmed, 0)
		f.wantStat(stTailDropped, 1)
	}},
	{name: "chain: a chained failure elsewhere ends the chain and keeps the tail", mode: "both", chain: true, run: func(f *steerFix) {
		_, pc, _ := f.chainZ() // c's CAS went to Y, not the tail X
		f.ack(f.c, f.m, pc, linkWord(5, 20, 7))
		f.wantNone("chain end", f.r.s.ends, 1)
		f.wantTail(1, sX, 11)
		f.wantStat(stChainBroken, 1)
		f.wantStat(stEndChainedFail, 1)
		f.wantStat(stTailDropped, 0)
	}},
	{name: "chain: a CAS to another memory node or sharing another QP's client, server and PSN is not chained", mode: "both", chain: true, run: func(f *steerFix) {
		f.confirmX()
		t0, pa := f.r.now, f.a.psn-1 // a's CAS linking X
		f.write(f.c, f.m2, sZ, 1, 13, 6)
		_, out := f.link(f.c, f.m2, sH, 3, 13, 6)
		f.wantCAS(out, sH, tailWord(3), linkWord(3, 13, 6))
		// Another QP of a's host, with the PSN of a's CAS (ACKed): steered
		// to the tail (rule 5), not chained.
		a2 := *f.a
		a2.qp++
		f.write(f.c, f.m, sY, 1, 12, 5)
		out = f.r.request(casFrame(f.t, &a2, f.m, pa, sH, tailWord(3), linkWord(3, 12, 5)))
		f.wantCAS(out, sX, tailWord(4), linkWord(4, 12, 5))
		f.wantStat(stLinkAmbiguous, 1)
		f.wantStat(stCASChained, 0)
		f.wantEnd(1, sX, 11, 4, t0)
	}},
	{name: "chain: a chain end older than tail-ttl is not used", mode: "both", chain: true, run: func(f *steerFix) {
		t0 := f.r.now
		f.confirmX() // X the tail and the chain's end, at t0
		f.r.now = t0 + fixTTL - 1
		f.write(f.b, f.m, sY, 1, 12, 5)
		_, out := f.link(f.b, f.m, sH, 3, 12, 5) // the last µs of X's chain
		f.wantCAS(out, sX, tailWord(4), linkWord(4, 12, 5))
		f.wantEnd(1, sY, 12, 5, t0+fixTTL-1)
		f.r.now = t0 + 2*fixTTL - 1 // Y's chain ends now, X is older still
		f.write(f.c, f.m, sZ, 1, 13, 6)
		_, out = f.link(f.c, f.m, sH, 3, 13, 6)
		f.wantCAS(out, sH, tailWord(3), linkWord(3, 13, 6))
		f.wantStat(stCASChained, 1)
		f.wantStat(stTailExpired, 1)
		// The next unchained success starts a new chain: the old one is
		// not live.
		f.write(f.a, f.m, sW, 1, 14, 7)
		pa, out := f.link(f.a, f.m, sY, 5, 14, 7)
		f.wantCAS(out, sY, tailWord(5), linkWord(5, 14, 7))
		f.ack(f.a, f.m, pa, tailWord(5))
		f.wantTail(1, sW, 14)
		f.wantEnd(1, sW, 14, 7, f.r.now)
	}},
	{name: "chain: node READs go to the chain's end while links after the confirmed tail are in flight", mode: "both", chain: true, run: func(f *steerFix) {
		pb := f.chainY()
		f.wantRead(f.read(f.c, f.m, sH), sY) // rule 12
		f.wantVouched(f.readResp(f.c, f.m, 1, 12, 5, fixSize), false)
		f.wantRead(f.read(f.c, f.m, sY), sY) // aimed there already: counted, not rewritten
		f.wantStat(stReadsChainEnd, 2)
		f.wantStat(stReadsSteered, 1)
		f.wantStat(stReadMisses, 0)
		f.wantVouch(f.ack(f.b, f.m, pb, tailWord(4)), 11, 4) // Y confirmed: the chain's end is the tail
		f.wantRead(f.read(f.c, f.m, sH), sY)                 // rule 7 again
		f.wantVouched(f.readResp(f.c, f.m, 1, 12, 5, fixSize), true)
		f.wantRead(f.read(f.c, f.m, sY), sY)
		f.wantVouched(f.readResp(f.c, f.m, 1, 12, 5, fixSize), true)
		f.wantStat(stReadsSteered, 2)
		f.wantStat(stReadsChainEnd, 2)
		f.wantStat(stReadsVouched, 2)
		// The chain's end on another memory node, or expired, is not used.
		f.r.now += fixTTL
		f.wantRead(f.read(f.c, f.m, sH), sH)
		f.wantVouched(f.readResp(f.c, f.m, 1, 10, 3, fixSize), false)
		f.wantStat(stReadMisses, 1)
	}},
	{name: "chain: the ACK of a chained link after the confirmed tail vouches for it", mode: "both", chain: true, run: func(f *steerFix) {
		pb, pc, _ := f.chainZ()
		// Y after X (the confirmed tail): vouched, naming X; then Z
		// after Y, now the confirmed tail: vouched, naming Y.
		f.wantVouch(f.ack(f.b, f.m, pb, tailWord(4)), 11, 4)
		f.wantVouch(f.ack(f.c, f.m, pc, tailWord(5)), 12, 5)
		f.wantTail(1, sZ, 13)
		f.wantStat(stVouched, 2)
		// An unchained success is not vouched for.
		f.write(f.a, f.m, sW, 1, 14, 7)
		f.r.now += fixTTL // the chain is no longer live
		pa, out := f.link(f.a, f.m, sZ, 6, 14, 7)
		f.wantCAS(out, sZ, tailWord(6), linkWord(6, 14, 7))
		if got := f.ack(f.a, f.m, pa, tailWord(6)); got != tailWord(6) {
			f.t.Fatalf("unchained success: ATOMIC ACK out %#x, want %#x", got, tailWord(6))
		}
		f.wantStat(stVouched, 2)
	}},
	{name: "chain: a chained CAS's retransmission goes out as its first copy", mode: "both", chain: true, run: func(f *steerFix) {
		pb, pc, sent := f.chainZ()
		f.write(f.a, f.m, sW, 1, 14, 7)
		_, out := f.link(f.a, f.m, sH, 3, 14, 7) // the chain moves on to W
		f.wantCAS(out, sZ, tailWord(6), linkWord(6, 14, 7))
		f.r.now += 10 * fixTTL
		f.wantCAS(f.r.request(sent), sY, tailWord(5), linkWord(5, 13, 6))
		f.wantStat(stRetransmits, 1)
		f.wantStat(stCASChained, 3)
		f.ack(f.b, f.m, pb, tailWord(4))
		f.ack(f.c, f.m, pc, tailWord(5))
		f.wantTail(1, sZ, 13)
		f.wantCAS(f.r.request(sent), sY, tailWord(5), linkWord(5, 13, 6))
		f.wantStat(stRetransmits, 2)
		f.wantStat(stLinkAmbiguous, 0)
	}},
	{name: "chain: with read steering only the chain setting does nothing", mode: "read", chain: true, run: func(f *steerFix) {
		f.confirmX()
		f.write(f.b, f.m, sY, 1, 12, 5)
		pb, _ := f.link(f.b, f.m, sX, 4, 12, 5)
		f.ack(f.b, f.m, pb, tailWord(4))
		f.wantRead(f.read(f.c, f.m, sH), sY)
		f.write(f.c, f.m, sZ, 1, 13, 6)
		_, out := f.link(f.c, f.m, sH, 3, 13, 6)
		f.wantCAS(out, sH, tailWord(3), linkWord(3, 13, 6))
		f.wantNone("chain end", f.r.s.ends, 1)
		for _, i := range []int{stCASChained, stChainBroken, stChainRefused, stReadsChainEnd, stVouched} {
			f.wantStat(i, 0)
		}
	}},
}

func TestSteerRules(t *testing.T) {
	for _, c := range steerCases {
		t.Run(c.name, func(t *testing.T) { c.run(newSteerFix(t, c.mode, c.chain, false)) })
	}
}

// steerConn is the connection the server answers client i's requests on:
// the shared one (0) when every request is remapped.
func steerConn(remap bool, i int) int {
	if remap {
		return 0
	}
	return i
}

// Through the engine, direct and with every request remapped onto the
// shared connection (other PSNs on the wire): a confirmed tail steers a
// stale CAS (the ICRC recomputed: run checks it), the CAS's retransmission
// goes out as the steered first copy through the engine's retransmission
// path, and the server's ATOMIC ACK of its failure forgets the tail.
func TestEngineSteering(t *testing.T) {
	for _, remap := range []bool{false, true} {
		t.Run(map[bool]string{false: "direct", true: "remapped"}[remap], func(t *testing.T) {
			cfg := testConfig(remap, false)
			cfg.Steering = &SteerConfig{Mode: "both", NodeSize: fixSize}
			r := newTestRack(t, 3, cfg)
			conn := func(i int) int { return steerConn(remap, i) }
			const key = 42
			node := func(lh uint32, v uint8) []byte { return nodeBytes(key, lh, v, fixSize) }
			f, _ := r.write(1, sH, node(10, 3))
			r.one(ClientSide, f)
			f, _ = r.write(1, sX, node(11, 4))
			r.one(ClientSide, f)
			f, psn := r.cas(1, sH, tailWord(3), linkWord(3, 11, 4))
			out := r.one(ClientSide, f).p.BTH.PSN()
			r.checkToClient(r.one(ServerSide, r.atomicAck(conn(1), out, tailWord(3), 1)), 1, roce.OpRCAtomicAcknowledge, psn)
			if r.e.steer.stats[stTailConfirmed] != 1 {
				t.Fatalf("tail not confirmed through the engine: %v", r.e.steer.stats)
			}
			f, _ = r.write(2, sY, node(12, 5))
			r.one(ClientSide, f)
			sent, _ := r.cas(2, sH, tailWord(3), linkWord(3, 12, 5))
			for i := 0; i < 2; i++ { // the CAS, then its retransmission
				x := r.one(ClientSide, append([]byte(nil), sent...))
				a := x.p.AtomicETH
				if a.VA() != sX || a.Compare() != tailWord(4) || a.SwapAdd() != linkWord(4, 12, 5) {
					t.Fatalf("copy %d: VA %#x compare %#x swap %#x", i, a.VA(), a.Compare(), a.SwapAdd())
				}
				out = x.p.BTH.PSN()
			}
			if c := r.e.Counters(); c.Retransmits != 1 || c.Steered != 1 || r.e.steer.stats[stRetransmits] != 1 {
				t.Fatalf("counters %s; steer stats %v", c.String(), r.e.steer.stats)
			}
			r.run(ServerSide, r.atomicAck(conn(2), out, linkWord(4, 13, 6), 2))
			if r.e.steer.stats[stTailDropped] != 1 {
				t.Fatalf("a failed steered CAS did not drop the tail: %v", r.e.steer.stats)
			}
			f, _ = r.read(0, sH, fixSize, 1024)
			if x := r.one(ClientSide, f); x.p.RETH.VA() != sH {
				t.Fatalf("READ steered to %#x after the tail was dropped", x.p.RETH.VA())
			}
			if c := r.e.Counters(); c.SteerReadMisses != 1 || c.SteerNodeWrites != 3 {
				t.Fatalf("counters %s", c.String())
			}
		})
	}
}

// Through the engine, direct and remapped, with responses on the fast
// path and on the general one: the ATOMIC ACK of a chained link whose
// predecessor is the confirmed tail reaches its client vouched for (rule
// 13), as does the response of a READ steered to the tail (rule 14), and
// both carry correct ICRCs (run checks every frame out), unlike the
// switch's, which leaves them stale.
func TestEngineSteeringVouches(t *testing.T) {
	for _, remap := range []bool{false, true} {
		for _, fast := range []bool{true, false} {
			t.Run(fmt.Sprintf("remap=%v/fast=%v", remap, fast), func(t *testing.T) {
				cfg := testConfig(remap, false)
				cfg.Steering = &SteerConfig{Mode: "both", NodeSize: fixSize} // chain mode: the default
				r := newTestRack(t, 3, cfg)
				r.e.fast = fast
				conn := func(i int) int { return steerConn(remap, i) }
				const key = 42
				node := func(lh uint32, v uint8) []byte { return nodeBytes(key, lh, v, fixSize) }
				for _, w := range []struct {
					i  int
					va uint64
					lh uint32
					v  uint8
				}{{1, sH, 10, 3}, {1, sX, 11, 4}} {
					f, _ := r.write(w.i, w.va, node(w.lh, w.v))
					r.one(ClientSide, f)
				}
				// X after H, unchained: confirmed, not vouched for; the
				// key's chain starts at X.
				f, psn := r.cas(1, sH, tailWord(3), linkWord(3, 11, 4))
				out := r.one(ClientSide, f).p.BTH.PSN()
				x := r.one(ServerSide, r.atomicAck(conn(1), out, tailWord(3), 1))
				r.checkToClient(x, 1, roce.OpRCAtomicAcknowledge, psn)
				if got := x.p.AtomicAckETH.Orig(); got != tailWord(3) {
					t.Fatalf("unchained success: ATOMIC ACK out %#x, want %#x", got, tailWord(3))
				}
				// Y after H (stale): chained onto X, and vouched for.
				f, _ = r.write(2, sY, node(12, 5))
				r.one(ClientSide, f)
				f, psn = r.cas(2, sH, tailWord(3), linkWord(3, 12, 5))
				y := r.one(ClientSide, f)
				if y.p.AtomicETH.VA() != sX {
					t.Fatalf("CAS out at %#x, want X %#x", y.p.AtomicETH.VA(), sX)
				}
				x = r.one(ServerSide, r.atomicAck(conn(2), y.p.BTH.PSN(), tailWord(4), 2))
				r.checkToClient(x, 2, roce.OpRCAtomicAcknowledge, psn)
				if pred, ok := clover.Header(x.p.AtomicAckETH.Orig()).Vouched(); !ok || pred != (clover.Ptr{LH: 11, Ver: 4}) {
					t.Fatalf("chained success: ATOMIC ACK out %#x (vouched %v for %+v), want the vouch for X", x.p.AtomicAckETH.Orig(), ok, pred)
				}
				// A READ of H goes to Y, the tail; its response is vouched
				// for, one of another node is not.
				for _, c := range []struct {
					va, to uint64
					lh     uint32
					v      uint8
					vouch  bool
				}{{sH, sY, 12, 5, true}, {0x9000, 0x9000, 11, 4, false}} {
					f, psn = r.read(0, c.va, fixSize, 1024)
					rd := r.one(ClientSide, f)
					if rd.p.RETH.VA() != c.to {
						t.Fatalf("READ of %#x out at %#x, want %#x", c.va, rd.p.RETH.VA(), c.to)
					}
					hits := r.e.fastHits
					x = r.one(ServerSide, r.readResp(conn(0), roce.OpRCReadResponseOnly, rd.p.BTH.PSN(), node(c.lh, c.v), 1))
					if fast != (r.e.fastHits != hits) {
						t.Fatalf("the READ response took the fast path: %v, want %v", r.e.fastHits != hits, fast)
					}
					r.checkToClient(x, 0, roce.OpRCReadResponseOnly, psn)
					want := node(c.lh, c.v)
					if c.vouch {
						want[7] |= 0x80
					}
					if !bytes.Equal(x.p.Payload, want) {
						t.Fatalf("READ response of %#x out %x, want %x", c.to, x.p.Payload[:24], want[:24])
					}
				}
				if c := r.e.Counters(); c.SteerVouched != 2 {
					t.Fatalf("counters %s: want steer-vouched 2", c.String())
				}
			})
		}
	}
}

// With SkipICRCCheck, a corrupted READ response the engine vouches for
// keeps its corruption: it leaves with the ICRC of the intact vouched
// response (icrc.go), which is wrong for its bytes, on the fast path and
// on the general one.
func TestEngineVouchKeepsCorruption(t *testing.T) {
	for _, fast := range []bool{true, false} {
		t.Run(fmt.Sprintf("fast=%v", fast), func(t *testing.T) {
			cfg := testConfig(false, false)
			cfg.SkipICRCCheck = true
			cfg.Steering = &SteerConfig{Mode: "both", NodeSize: fixSize}
			r := newTestRack(t, 2, cfg)
			r.e.fast = fast
			node := func(lh uint32, v uint8) []byte { return nodeBytes(42, lh, v, fixSize) }
			f, _ := r.write(1, sH, node(10, 3))
			r.one(ClientSide, f)
			f, _ = r.write(1, sX, node(11, 4))
			r.one(ClientSide, f)
			f, _ = r.cas(1, sH, tailWord(3), linkWord(3, 11, 4))
			out := r.one(ClientSide, f).p.BTH.PSN()
			r.one(ServerSide, r.atomicAck(1, out, tailWord(3), 1)) // X is the tail
			f, _ = r.read(0, sH, fixSize, 1024)
			rd := r.one(ClientSide, f)
			resp := r.readResp(0, roce.OpRCReadResponseOnly, rd.p.BTH.PSN(), node(11, 4), 1)
			corrupt := append([]byte(nil), resp...)
			corrupt[len(corrupt)-roce.ICRCLen-1] ^= 0x10 // the node's last value byte
			good := r.one(ServerSide, resp)
			if good.p.Payload[7]&0x80 == 0 {
				t.Fatal("the intact response was not vouched for")
			}
			r.out.Reset()
			r.e.Process(0, ServerSide, corrupt, r.out) // a duplicate response, sent on
			if r.out.Len() != 1 {
				t.Fatalf("%d frames out for the corrupted response (%s)", r.out.Len(), r.e.c.String())
			}
			var p roce.Packet
			if err := roce.ParseInto(&p, r.out.Frames[0]); err != nil {
				t.Fatal(err)
			}
			if p.Payload[7]&0x80 == 0 || p.ICRCOK() || p.StoredICRC() != good.p.StoredICRC() {
				t.Fatalf("vouched %v, ICRC %#x (correct: %v); want vouched with the intact response's ICRC %#x",
					p.Payload[7]&0x80 != 0, p.StoredICRC(), p.ICRCOK(), good.p.StoredICRC())
			}
		})
	}
}

func TestSteerConfigValidate(t *testing.T) {
	ok := SteerConfig{Mode: "both", NodeSize: 24}
	if err := ok.validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		want string
		mod  func(*SteerConfig)
	}{
		{"mode", func(s *SteerConfig) { s.Mode = "on" }},
		{"node-size 23", func(s *SteerConfig) { s.NodeSize = 23 }},
		{"node-size", func(s *SteerConfig) { s.NodeSize = MaxSteerNodeSize + 1 }},
		{"tail-ttl", func(s *SteerConfig) { s.TailTTL = time.Nanosecond }},
		{"tail-ttl", func(s *SteerConfig) { s.TailTTL = -time.Second }},
		{"tail-ttl", func(s *SteerConfig) { s.TailTTL = MaxTailTTL + 1 }},
		{"node-slots", func(s *SteerConfig) { s.NodeSlots = -1 }},
		{"addr-slots", func(s *SteerConfig) { s.AddrSlots = MaxSteerSlots + 1 }},
		{"cas-slots", func(s *SteerConfig) { s.CASSlots = -5 }},
	} {
		s := ok
		c.mod(&s)
		err := s.validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one naming %q", s, err, c.want)
		}
	}
}
