package ptf

import (
	"bytes"
	"testing"

	"github.com/swordbox/swordbox/roce"
)

// The packet tests of chain mode: rules 10-14 of docs/swordbox-p4.md,
// "Chain mode", one case per rule and edge. Like the tests of
// swordbox_test.go they program the switch over P4Runtime by P4Info names
// and check the frames out, the registers and the counters; the TNA
// differential tests run each of them on both programs.

const (
	modeChain = 4 // config mode bit 2: chain mode, with write steering

	// The stats cells of chain mode (docs/swordbox-p4.md, "Counters").
	statCASChained     = 16
	statChainBroken    = 17
	statChainRefused   = 18
	statReadsChainEnd  = 19
	statEndUnconfirmed = 21
	statEndChainedFail = 22
	vouchMark          = uint64(1) << 63
	entryVersionMask   = uint64(0xff) << 11
)

// nC1 is a fourth node of hotKey, appended by client C.
var nC1 = node{0x00007f0000040000, 0xC1, 6, hotKey}

// specState is a key slot's chain end (the spec_* registers).
type specState struct {
	valid, key, lh, va, ver, dstIP, ts uint64
}

func (r *rig) spec(slot int64) specState {
	r.t.Helper()
	return specState{
		valid: r.register("spec_valid", slot), key: r.register("spec_key", slot), lh: r.register("spec_lh", slot),
		va: r.register("spec_va_hi", slot)<<32 | r.register("spec_va_lo", slot), ver: r.register("spec_ver", slot),
		dstIP: r.register("spec_dst_ip", slot), ts: r.register("spec_ts", slot),
	}
}

// wantSpec checks that the slot's chain ends at node n on the memory node,
// with spec_ts = ts.
func (r *rig) wantSpec(slot int64, n node, ts uint64, what string) {
	r.t.Helper()
	want := specState{valid: 1, key: n.key, lh: uint64(n.lh), va: n.va, ver: uint64(n.ev), dstIP: memnodeIP, ts: ts}
	if got := r.spec(slot); got != want {
		r.t.Fatalf("%s: chain end = %+v, want %+v", what, got, want)
	}
}

func (r *rig) wantNoSpec(slot int64, what string) {
	r.t.Helper()
	if got := r.register("spec_valid", slot); got != 0 {
		r.t.Fatalf("%s: spec_valid = %d, want 0 (chain end %+v)", what, got, r.spec(slot))
	}
}

// wantTailLH checks the confirmed tail (tail_* registers and tail_lh).
func (r *rig) wantTailLH(slot int64, n node, what string) {
	r.t.Helper()
	r.wantTail(slot, n, memnodeIP, what)
	if got := r.register("tail_lh", slot); got != uint64(n.lh) {
		r.t.Fatalf("%s: tail_lh = %#x, want %#x", what, got, n.lh)
	}
}

// wantLink checks the chain fields of the CAS record of q's CAS psn.
func (r *rig) wantLink(q qp, psn uint32, chained uint64, pred uint32, what string) {
	r.t.Helper()
	slot := linkSlot(q, psn)
	if c, p := r.register("link_chained", slot), r.register("link_pred_lh", slot); c != chained || p != uint64(pred) {
		r.t.Fatalf("%s: link_chained = %d, link_pred_lh = %#x; want %d, %#x", what, c, p, chained, pred)
	}
}

// wantKeyCount checks hotKey's cell of a per-key counter.
func (r *rig) wantKeyCount(name string, want int64) {
	r.t.Helper()
	if got := r.counter(name, keySlot); got != want {
		r.t.Errorf("%s[%d] = %d, want %d", name, keySlot, got, want)
	}
}

// forwardedAt is when q's CAS psn was forwarded (cas_out_ts).
func (r *rig) forwardedAt(q qp, psn uint32) uint64 {
	r.t.Helper()
	return r.register("cas_out_ts", linkSlot(q, psn))
}

// put sends q's node WRITE of n (PSN psn) and its CAS linking n after the
// node at va of entry version tailEv (PSN psn+1); it returns the CAS as
// sent and as forwarded.
func (r *rig) put(q qp, psn uint32, va uint64, tailEv uint8, n node) (in, out []byte, p roce.Packet) {
	r.t.Helper()
	r.expectSame(q.from.port, q.to.port, nodeWrite(r.t, q, psn, n, valueSize), "node WRITE")
	in = link(r.t, q, psn+1, va, tailEv, n)
	out, p = r.pass(q.from.port, q.to.port, in)
	return in, out, p
}

// ackCAS sends the memory node's ATOMIC ACK of q's CAS psn.
func (r *rig) ackCAS(q qp, psn uint32, orig uint64, what string) {
	r.t.Helper()
	r.expectSame(q.to.port, q.from.port, atomicAck(r.t, q, psn, orig), what)
}

// ackVouched sends the memory node's ATOMIC ACK of q's CAS psn, a success
// (orig) of a chained link whose predecessor pred is the confirmed tail,
// and checks that it comes out vouched for (rule 13): orig replaced by bit
// 63, pred's LH in bits 59..28 and orig's entry version, every other byte
// as sent (the ICRC too: the switch does not recompute it).
func (r *rig) ackVouched(q qp, psn uint32, orig uint64, pred node, what string) {
	r.t.Helper()
	in := atomicAck(r.t, q, psn, orig)
	out, p := r.pass(q.to.port, q.from.port, in)
	want := vouchMark | uint64(pred.lh)<<28 | orig&entryVersionMask
	if got := p.AtomicAckETH.Orig(); got != want {
		r.t.Fatalf("%s: ACK orig %#x, want the vouch %#x", what, got, want)
	}
	off := p.ExtOff + 4 // AETH, then the AtomicAckETH's original value
	sameExcept(r.t, out, in, [2]int{off, off + 8})
}

// readResp is the memory node's READ_RESPONSE_ONLY to q's READ psn,
// carrying node n (next pointer next) with a value of value bytes.
func readResp(t testing.TB, q qp, psn uint32, n node, next uint64, value int) []byte {
	pl := nodePayload(n, value)
	le64(pl, next|uint64(n.ev)<<11)
	pad := (4 - len(pl)%4) % 4
	return q.back().build(t, roce.Fields{Opcode: roce.OpRCReadResponseOnly, PSN: psn,
		Syndrome: roce.ACKSyndrome(roce.CreditInvalid), MSN: 1, Payload: pl, PadCnt: uint8(pad)})
}

// wantReadVouched sends a READ response of node n (next NULL) to client C
// and checks whether it comes out vouched for (rule 14: bit 63 of the
// header word set, every other byte as sent).
func (r *rig) wantReadVouched(psn uint32, n node, vouched bool, what string) {
	r.t.Helper()
	in := readResp(r.t, qpC, psn, n, 0, valueSize)
	if !vouched {
		r.expectSame(3, 4, in, what)
		return
	}
	out, p := r.pass(3, 4, in)
	want := append([]byte(nil), in...)
	want[p.PayloadOff+7] |= 0x80
	if !bytes.Equal(out, want) {
		r.t.Fatalf("%s: READ response\n got %x\nwant %x (bit 63 of the header word set)", what, out, want)
	}
}

// wantCASOut checks a CAS as forwarded: at va, its compare and swap the
// sent ones with bits 18..11 set to version ev, every other byte as sent.
func wantCASOut(t *testing.T, in, out []byte, p roce.Packet, va uint64, ev uint8) {
	t.Helper()
	sent, err := roce.Parse(in)
	if err != nil {
		t.Fatal(err)
	}
	const evMask = 0xff << 11
	cmp := sent.AtomicETH.Compare()&^evMask | uint64(ev)<<11
	swap := sent.AtomicETH.SwapAdd()&^evMask | uint64(ev)<<11
	a := p.AtomicETH
	if a.VA() != va || a.Compare() != cmp || a.SwapAdd() != swap {
		t.Fatalf("CAS out: VA %#x compare %#x swap %#x; want %#x %#x %#x", a.VA(), a.Compare(), a.SwapAdd(), va, cmp, swap)
	}
	off := p.ExtOff // AtomicETH: VA 0..7, rkey 8..11, swap 12..19, compare 20..27
	sameExcept(t, out, in, [2]int{off, off + 8}, [2]int{off + 12, off + 28})
}

// seedChain links A1 after T0 (client A, PSNs 100 and 101) and confirms
// it: with no live chain, the unchained success makes A1 the confirmed
// tail and the chain's end.
func (r *rig) seedChain() {
	r.t.Helper()
	r.confirm(qpA, 100, nT0.va, nT0.ev, nA1)
	r.wantTailLH(keySlot, nA1, "A1 confirmed")
	r.wantSpec(keySlot, nA1, r.forwardedAt(qpA, 101), "A1 confirmed")
}

// chainA3 seeds the chain at A1 and sends A's CAS linking A3 after A1
// (PSNs 102, 103), aimed by the client at the chain's end: chained, not
// rewritten. A3 is the chain's end, A1 still the confirmed tail.
func (r *rig) chainA3() {
	r.t.Helper()
	r.seedChain()
	in, out, _ := r.put(qpA, 102, nA1.va, nA1.ev, nA3)
	if !bytes.Equal(out, in) {
		r.t.Fatalf("A's CAS aimed at the chain's end was rewritten:\n got %x\nwant %x", out, in)
	}
	r.wantLink(qpA, 103, 1, nA1.lh, "A's CAS")
}

// chainB1 is chainA3, then B's CAS linking B1 after T0 (PSNs 200, 201),
// steered onto A3; it returns B's CAS as sent and as forwarded.
func (r *rig) chainB1() (in, out []byte) {
	r.t.Helper()
	r.chainA3()
	in, out, p := r.put(qpB, 200, nT0.va, nT0.ev, nB1)
	if p.AtomicETH.VA() != nA3.va {
		r.t.Fatalf("B's CAS not chained onto A3: VA %#x", p.AtomicETH.VA())
	}
	return in, out
}

// modeScript runs the same puts, ACKs and READ in any mode and returns
// every frame out: A1 after T0 and A3 after A1 (aimed at them by the
// client, both confirmed), B's stale CAS aimed at T0, C's READ of A1.
func modeScript(r *rig) [][]byte {
	r.t.Helper()
	var outs [][]byte
	for _, s := range []struct {
		q      qp
		psn    uint32
		va     uint64
		tailEv uint8
		n      node
		ack    bool
	}{
		{qpA, 100, nT0.va, nT0.ev, nA1, true},
		{qpA, 102, nA1.va, nA1.ev, nA3, true},
		{qpB, 200, nT0.va, nT0.ev, nB1, false},
	} {
		_, out, p := r.put(s.q, s.psn, s.va, s.tailEv, s.n)
		outs = append(outs, out)
		if s.ack {
			r.ackCAS(s.q, s.psn+1, p.AtomicETH.Compare(), "ACK: success")
		}
	}
	out, _ := r.pass(4, 3, readReq(r.t, qpC, 300, nA1.va, nodeSize))
	return append(outs, out)
}

// TestChainRules checks rules 10-12 of docs/swordbox-p4.md ("Chain
// mode") one case per rule and edge.
func TestChainRules(t *testing.T) {
	const modeChainBoth = modeBoth | modeChain
	for _, tc := range []struct {
		name string
		mode uint64
		run  func(t *testing.T, r *rig)
	}{
		{name: "rule 11: an unchained success seeds a chain when none is live", mode: modeChainBoth, run: func(t *testing.T, r *rig) {
			r.seedChain()
			r.wantStats("seeded", map[int]int64{statTailConfirmed: 1, statCASChained: 0, statCASSteered: 0})
		}},
		{name: "rule 11: an unchained success leaves a live chain alone", mode: modeChainBoth, run: func(t *testing.T, r *rig) {
			// A's and B's CASes go out before any tail or chain exists (B
			// aimed at A1 by the client); A's ACK seeds the chain at A1,
			// B's confirms B1 but the chain stays at A1.
			r.put(qpA, 100, nT0.va, nT0.ev, nA1)
			in, out, _ := r.put(qpB, 200, nA1.va, nA1.ev, nB1)
			if !bytes.Equal(in, out) {
				t.Fatal("B's CAS rewritten with no tail and no chain")
			}
			r.ackCAS(qpA, 101, hw(0, 0, nT0.ev), "A's ACK: success")
			r.wantSpec(keySlot, nA1, r.forwardedAt(qpA, 101), "A's ACK")
			r.ackCAS(qpB, 201, hw(0, 0, nA1.ev), "B's ACK: success")
			r.wantTailLH(keySlot, nB1, "B's ACK")
			r.wantSpec(keySlot, nA1, r.forwardedAt(qpA, 101), "B's ACK (the chain was live)")
			r.wantStats("both ACKs", map[int]int64{statTailConfirmed: 2, statCASChained: 0})
		}},
		{name: "rule 10: a CAS aimed at the chain's end is chained, not rewritten", mode: modeChainBoth, run: func(t *testing.T, r *rig) {
			r.chainA3()
			r.wantSpec(keySlot, nA3, r.forwardedAt(qpA, 103), "A3 chained")
			r.wantTailLH(keySlot, nA1, "A3 chained, not confirmed")
			r.wantStats("A3 chained", map[int]int64{statCASChained: 1, statCASSteered: 0, statChainRefused: 0})
			r.wantKeyCount("key_cas_steered", 0)
		}},
		{name: "rule 10: a stale CAS is steered onto the unconfirmed chain end", mode: modeChainBoth, run: func(t *testing.T, r *rig) {
			in, out := r.chainB1()
			p, _ := roce.Parse(out)
			wantCASOut(t, in, out, p, nA3.va, nA3.ev) // A3's VA and entry version, not the tail A1's
			if p.ICRCOK() {
				t.Error("the ICRC of the chained CAS verifies: the switch must not recompute it")
			}
			r.wantLink(qpB, 201, 1, nA3.lh, "B's CAS")
			slot := linkSlot(qpB, 201)
			for name, want := range map[string]uint64{"cas_out_va": nA3.va, "cas_out_compare": p.AtomicETH.Compare(),
				"cas_out_swap": p.AtomicETH.SwapAdd(), "link_orig_va_lo": nT0.va & 0xffffffff, "link_tracked": 1} {
				if got := r.register(name, slot); got != want {
					t.Errorf("%s = %#x, want %#x", name, got, want)
				}
			}
			r.wantSpec(keySlot, nB1, r.forwardedAt(qpB, 201), "B1 chained")
			r.wantTailLH(keySlot, nA1, "B1 chained")
			r.wantStats("B1 chained", map[int]int64{statCASChained: 2, statCASSteered: 1, statCAS: 3})
			r.wantKeyCount("key_cas_steered", 1)
		}},
		{name: "rule 10: the chain's end has the client's compare version at another VA: refused, passes unsteered while the chain is live", mode: modeChainBoth, run: func(t *testing.T, r *rig) {
			r.chainA3()
			// B compares against entry version 3, A3's, at T0's VA.
			in, out, _ := r.put(qpB, 200, nT0.va, nA3.ev, nB1)
			if !bytes.Equal(out, in) {
				t.Fatalf("B's refused CAS was rewritten while the chain is live:\n got %x\nwant %x", out, in)
			}
			r.wantLink(qpB, 201, 0, 0, "B's refused CAS")
			r.wantSpec(keySlot, nA3, r.forwardedAt(qpA, 103), "after the refusal")
			r.wantStats("refused", map[int]int64{statChainRefused: 1, statCASChained: 1, statCASSteered: 0})
		}},
		{name: "rule 11: a chained success after the confirmed tail confirms its node", mode: modeChainBoth, run: func(t *testing.T, r *rig) {
			r.chainB1()
			r.ackVouched(qpA, 103, hw(0, 0, nA1.ev), nA1, "A's ACK: success after the confirmed tail A1")
			r.wantTailLH(keySlot, nA3, "A's ACK")
			if got, want := r.register("tail_ts", keySlot), r.forwardedAt(qpA, 103); got != want {
				t.Errorf("tail_ts = %d, want %d (when A's CAS was forwarded)", got, want)
			}
			r.wantSpec(keySlot, nB1, r.forwardedAt(qpB, 201), "A's ACK")
			r.ackVouched(qpB, 201, hw(0, 0, nA3.ev), nA3, "B's ACK: success after A3, now confirmed")
			r.wantTailLH(keySlot, nB1, "B's ACK")
			r.wantSpec(keySlot, nB1, r.forwardedAt(qpB, 201), "B's ACK")
			r.wantStats("both ACKs", map[int]int64{statTailConfirmed: 3, statChainBroken: 0, statAcksCleared: 3, statVouched: 2})
		}},
		{name: "rule 11: a chained success after an unconfirmed predecessor ends the chain", mode: modeChainBoth, run: func(t *testing.T, r *rig) {
			r.chainB1()
			r.ackCAS(qpB, 201, hw(0, 0, nA3.ev), "B's ACK first: success after A3")
			r.wantNoSpec(keySlot, "B's ACK before A3's")
			r.wantTailLH(keySlot, nA1, "B's ACK before A3's")
			r.wantStats("B's ACK", map[int]int64{statChainBroken: 1, statEndUnconfirmed: 1, statTailConfirmed: 1, statVouched: 0})
			// A3's own ACK still confirms it (its predecessor is the tail)
			// and vouches for it, but starts no chain.
			r.ackVouched(qpA, 103, hw(0, 0, nA1.ev), nA1, "A's late ACK: success")
			r.wantTailLH(keySlot, nA3, "A's late ACK")
			r.wantNoSpec(keySlot, "A's late ACK")
			// Without a live chain a stale CAS goes to the confirmed tail.
			in, out, p := r.put(qpC, 400, nT0.va, nT0.ev, nC1)
			wantCASOut(t, in, out, p, nA3.va, nA3.ev)
			r.wantLink(qpC, 401, 0, 0, "C's CAS")
			r.wantStats("C's CAS", map[int]int64{statCASChained: 2, statCASSteered: 2, statChainBroken: 1})
		}},
		{name: "rule 11: a chained failure aimed at the confirmed tail ends the chain and drops the tail", mode: modeChainBoth, run: func(t *testing.T, r *rig) {
			r.chainA3() // aimed at A1, the confirmed tail
			r.ackCAS(qpA, 103, hw(0xC3, 4, nA1.ev), "A's ACK: failed, A1 had a successor")
			r.wantNoSpec(keySlot, "A's failure")
			r.wantNoTail(keySlot, "A's failure")
			r.wantStats("A's failure", map[int]int64{statChainBroken: 1, statEndChainedFail: 1, statTailDropped: 1, statTailConfirmed: 1})
		}},
		{name: "rule 11: a chained failure elsewhere ends the chain and keeps the tail", mode: modeChainBoth, run: func(t *testing.T, r *rig) {
			r.chainB1() // B's CAS went to A3, not the confirmed tail A1
			r.ackCAS(qpB, 201, hw(0xC3, 4, nA3.ev), "B's ACK: failed, A3 had a successor")
			r.wantNoSpec(keySlot, "B's failure")
			r.wantTailLH(keySlot, nA1, "B's failure")
			r.wantStats("B's failure", map[int]int64{statChainBroken: 1, statEndChainedFail: 1, statTailDropped: 0})
		}},
		{name: "rule 10: a CAS to another memory node is not chained", mode: modeChainBoth, run: func(t *testing.T, r *rig) {
			mem2 := qp{clientB, clientC, 49160, 0x31} // port 4 plays a second memory node
			r.seedChain()
			in, out, _ := r.put(mem2, 200, nT0.va, nT0.ev, nB1)
			if !bytes.Equal(in, out) {
				t.Fatal("a CAS to another memory node was rewritten")
			}
			r.wantLink(mem2, 201, 0, 0, "B's CAS")
			r.wantSpec(keySlot, nA1, r.forwardedAt(qpA, 101), "B's CAS")
			r.wantStats("B's CAS", map[int]int64{statCASChained: 0, statCASSteered: 0})
		}},
		{name: "rule 10: an ambiguous CAS (another QP, same client, server and PSN) is not chained", mode: modeChainBoth, run: func(t *testing.T, r *rig) {
			qpA2 := qp{clientA, memnode, 49155, 0x14} // another QP of client A's host
			r.seedChain()
			seeded := r.forwardedAt(qpA, 101) // the ambiguous CAS takes the record's slot
			// PSN 101, that of A's CAS linking A1 (ACKed), another node.
			in, out, p := r.put(qpA2, 100, nT0.va, nT0.ev, nA3)
			wantCASOut(t, in, out, p, nA1.va, nA1.ev) // rule 5: the confirmed tail
			r.wantLink(qpA2, 101, 0, 0, "the ambiguous CAS")
			if got := r.register("link_tracked", linkSlot(qpA2, 101)); got != 0 {
				t.Errorf("link_tracked = %d for an ambiguous CAS, want 0", got)
			}
			r.wantSpec(keySlot, nA1, seeded, "the ambiguous CAS")
			r.wantStats("the ambiguous CAS", map[int]int64{statLinkAmbiguous: 1, statCASChained: 0, statCASSteered: 1})
		}},
		{name: "rule 10: a chain end older than tail_ttl is not used", mode: modeChainBoth, run: func(t *testing.T, r *rig) {
			r.seedChain()
			r.setConfig("tail_ttl", 1)
			pause()
			in, out, _ := r.put(qpB, 200, nT0.va, nT0.ev, nB1)
			if !bytes.Equal(in, out) {
				t.Fatal("B's CAS rewritten after the chain's end and the tail expired")
			}
			r.wantLink(qpB, 201, 0, 0, "B's CAS")
			r.wantStats("B's CAS", map[int]int64{statCASChained: 0, statTailExpired: 1, statCASSteered: 0})
			// The next unchained success starts a new chain: the old one is
			// not live.
			in, out, _ = r.put(qpC, 400, nA1.va, nA1.ev, nC1)
			if !bytes.Equal(in, out) {
				t.Fatal("C's CAS aimed at the tail rewritten")
			}
			r.ackCAS(qpC, 401, hw(0, 0, nA1.ev), "C's ACK: success")
			r.wantTailLH(keySlot, nC1, "C's ACK")
			r.wantSpec(keySlot, nC1, r.forwardedAt(qpC, 401), "C's ACK")
		}},
		{name: "rule 12: while links are in flight a node READ goes to the chain's end", mode: modeChainBoth, run: func(t *testing.T, r *rig) {
			r.chainA3()
			// A READ of the confirmed tail A1 goes to A3, the chain's end.
			out, p := r.pass(4, 3, readReq(t, qpC, 300, nA1.va, nodeSize))
			if p.RETH.VA() != nA3.va {
				t.Fatalf("READ of A1 while A3's link is in flight: VA %#x, want A3's %#x", p.RETH.VA(), nA3.va)
			}
			sameExcept(t, out, readReq(t, qpC, 300, nA1.va, nodeSize), [2]int{p.ExtOff, p.ExtOff + 8})
			// A READ of the chain's end itself is left alone.
			r.expectSame(4, 3, readReq(t, qpC, 301, nA3.va, nodeSize), "READ of A3, the chain's end")
			r.wantStats("READs while busy", map[int]int64{statReadsChainEnd: 2, statReadsSteered: 1, statReadMisses: 0, statReads: 2})
			r.wantKeyCount("key_reads_steered", 1)
			r.ackVouched(qpA, 103, hw(0, 0, nA1.ev), nA1, "A's ACK: success")
			// The chain's end is the confirmed tail now: rule 7.
			_, p = r.pass(4, 3, readReq(t, qpC, 302, nA1.va, nodeSize))
			if p.RETH.VA() != nA3.va {
				t.Fatalf("READ of A1 after A3's confirmation: VA %#x, want %#x", p.RETH.VA(), nA3.va)
			}
			r.wantStats("READ after the confirmation", map[int]int64{statReadsChainEnd: 2, statReadsSteered: 2})
		}},
		{name: "rule 14: a READ response of the confirmed tail is vouched for, of any other node not", mode: modeChainBoth, run: func(t *testing.T, r *rig) {
			r.chainA3()
			r.wantReadVouched(300, nA1, true, "A1, the confirmed tail")
			r.wantReadVouched(301, nA3, false, "A3, the chain's end, its link in flight")
			r.ackVouched(qpA, 103, hw(0, 0, nA1.ev), nA1, "A's ACK: success")
			r.wantReadVouched(302, nA3, true, "A3, confirmed")
			r.wantReadVouched(303, nA1, false, "A1, no longer the confirmed tail")
			stale := nA3
			stale.ev++
			r.wantReadVouched(304, stale, false, "A3's slot with another entry version")
			// A response whose header word has a successor is vouched for
			// too (the node is in the chain): only the node counts.
			in := readResp(t, qpC, 305, nA3, hw(0xC3, 4, 0), valueSize)
			out, p := r.pass(3, 4, in)
			if out[p.PayloadOff+7]&0x80 == 0 {
				t.Error("READ response of the confirmed tail with a successor was not vouched for")
			}
			// Not a node: a response shorter or longer than a node.
			short := q2back(t, qpC, 306, make([]byte, 16))
			r.expectSame(3, 4, short, "a 16-byte READ response")
			long := readResp(t, qpC, 307, nA3, 0, valueSize+8)
			r.expectSame(3, 4, long, "a READ response longer than a node")
			r.wantStats("responses", map[int]int64{statReadsVouched: 3})
		}},
		{name: "rule 14: no vouch without read steering, nor for an untracked key", mode: modeChain | modeWrite, run: func(t *testing.T, r *rig) {
			r.seedChain()
			r.wantReadVouched(300, nA1, false, "A1, write steering only")
			r.wantStats("write steering only", map[int]int64{statReadsVouched: 0})
		}},
		{name: "rule 3: a chained CAS's retransmission goes out as its first copy", mode: modeChainBoth, run: func(t *testing.T, r *rig) {
			in, first := r.chainB1()
			// The chain moves on to C1 after B1.
			_, _, p := r.put(qpC, 400, nT0.va, nT0.ev, nC1)
			if p.AtomicETH.VA() != nB1.va {
				t.Fatalf("C's CAS not chained onto B1: VA %#x", p.AtomicETH.VA())
			}
			again, _ := r.pass(2, 3, in)
			if !bytes.Equal(again, first) {
				t.Fatalf("retransmission forwarded as\n%x\nfirst copy was\n%x", again, first)
			}
			r.wantLink(qpB, 201, 1, nA3.lh, "after the retransmission")
			r.wantSpec(keySlot, nC1, r.forwardedAt(qpC, 401), "after the retransmission")
			r.wantStats("retransmission", map[int]int64{statRetransmits: 1, statCASChained: 3, statCASSteered: 2})
			r.wantKeyCount("key_retransmits", 1)
			// Settled in order, then a copy after its ACK: still the first copy.
			r.ackVouched(qpA, 103, hw(0, 0, nA1.ev), nA1, "A's ACK")
			r.ackVouched(qpB, 201, hw(0, 0, nA3.ev), nA3, "B's ACK")
			r.wantTailLH(keySlot, nB1, "B's ACK")
			if again, _ = r.pass(2, 3, in); !bytes.Equal(again, first) {
				t.Fatalf("copy after the ACK forwarded as\n%x\nfirst copy was\n%x", again, first)
			}
			r.wantStats("copy after the ACK", map[int]int64{statRetransmits: 2, statCASChained: 3, statLinkAmbiguous: 0})
		}},
		{name: "the chain bit alone (mode 4) rewrites nothing", mode: modeChain, run: func(t *testing.T, r *rig) {
			r.confirm(qpA, 100, nT0.va, nT0.ev, nA1)
			r.wantTail(keySlot, nA1, memnodeIP, "A1 confirmed") // mode 4 learns
			in, out, _ := r.put(qpB, 200, nT0.va, nT0.ev, nB1)
			if !bytes.Equal(in, out) {
				t.Fatal("CAS rewritten in mode 4")
			}
			r.expectSame(4, 3, readReq(t, qpC, 300, nB1.va, nodeSize), "READ in mode 4")
			r.wantStats("mode 4", map[int]int64{statCASSteered: 0, statReadsSteered: 0, statCASChained: 0,
				statChainBroken: 0, statChainRefused: 0, statReadsChainEnd: 0})
		}},
		{name: "the chain bit without the write bit: modes 4 and 6 keep no chain, mode 6 steers as mode 2", mode: modeRead,
			run: func(t *testing.T, r *rig) {
				want := modeScript(r)
				wantStats := r.stats()
				for _, mode := range []uint64{modeChain, modeRead | modeChain} {
					r := newSteerRig(t, mode)
					got := modeScript(r)
					if mode == modeRead|modeChain {
						for i := range got {
							if !bytes.Equal(got[i], want[i]) {
								p, _ := roce.Parse(got[i])
								t.Errorf("mode %d, frame %d differs from mode %d's: %v VA %#x", mode, i, modeRead, p.Opcode, frameVA(p))
							}
						}
						if s := r.stats(); s != wantStats {
							t.Errorf("mode %d stats %v, mode %d's %v", mode, s, modeRead, wantStats)
						}
					}
					if got := r.spec(keySlot); got.valid != 0 {
						t.Errorf("mode %d: the key has a chain: %+v", mode, got)
					}
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, newSteerRig(t, tc.mode))
		})
	}
}

// frameVA is the VA of a request's RETH or AtomicETH.
func frameVA(p roce.Packet) uint64 {
	switch {
	case p.AtomicETH != nil:
		return p.AtomicETH.VA()
	case p.RETH != nil:
		return p.RETH.VA()
	}
	return 0
}

// q2back is the memory node's READ_RESPONSE_ONLY to q's READ psn with an
// arbitrary payload.
func q2back(t testing.TB, q qp, psn uint32, payload []byte) []byte {
	return q.back().build(t, roce.Fields{Opcode: roce.OpRCReadResponseOnly, PSN: psn,
		Syndrome: roce.ACKSyndrome(roce.CreditInvalid), MSN: 1, Payload: payload})
}
