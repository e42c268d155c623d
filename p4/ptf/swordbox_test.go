package ptf

import (
	"bytes"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/swordbox/swordbox/roce"
)

// One test per rule of docs/swordbox-p4.md, "Semantics", in its order. The
// frames are built with roce, enter the switch on in-memory ports, and
// the tests check the frames that come out and the registers and counters
// a controller reads over P4Runtime.

// Rule 1: node WRITEs are learned into the node map (by LH) and the address
// map (by VA), tracked key or not, when their DMA length is node_size.
func TestNodeWriteLearned(t *testing.T) {
	cold := node{0x00007f2200040000, 0xC0, 9, coldKey}
	short := func(n int) []byte { return nodePayload(nA1, valueSize)[:n] }
	for _, tc := range []struct {
		name     string
		mode     uint64
		nodeSize uint64 // the size filter
		op       roce.Opcode
		n        node
		payload  []byte
		learned  bool
	}{
		{"WRITE_ONLY of a tracked key's node", modeBoth, nodeSize, roce.OpRCWriteOnly, nA1, nodePayload(nA1, valueSize), true},
		{"WRITE_FIRST of a node", modeWrite, nodeSize, roce.OpRCWriteFirst, nA1, nodePayload(nA1, valueSize), true},
		{"node of an untracked key", modeRead, nodeSize, roce.OpRCWriteOnly, cold, nodePayload(cold, valueSize), true},
		{"WRITE of another size", modeBoth, nodeSize, roce.OpRCWriteOnly, nA1, nodePayload(nA1, valueSize-8), false},
		{"WRITE_LAST is not a node WRITE", modeBoth, nodeSize, roce.OpRCWriteLast, nA1, nodePayload(nA1, valueSize), false},
		{"steering off", 0, nodeSize, roce.OpRCWriteOnly, nA1, nodePayload(nA1, valueSize), false},
		// WRITEs shorter than the 24-byte node prefix carry no node, even
		// when the size filter says they are node-sized.
		{"WRITE of 8 bytes", modeBoth, 8, roce.OpRCWriteOnly, nA1, short(8), false},
		{"WRITE of 16 bytes", modeBoth, 16, roce.OpRCWriteOnly, nA1, short(16), false},
		{"WRITE of 23 bytes", modeBoth, 23, roce.OpRCWriteOnly, nA1, short(23), false},
		{"WRITE of exactly the prefix", modeBoth, 24, roce.OpRCWriteOnly, nA1, short(24), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newSteerRig(t, tc.mode)
			r.setConfig("node_size", tc.nodeSize)
			in := writeOf(t, qpA, 100, tc.op, tc.n.va, tc.payload)
			r.expectSame(1, 3, in, "node WRITE") // learning never changes the frame
			nodes, addrs := r.registerNonZero("node_lh"), r.registerNonZero("addr_key")
			if !tc.learned {
				if len(nodes) != 0 || len(addrs) != 0 {
					t.Fatalf("learned: node map %v, address map %v", nodes, addrs)
				}
				r.wantStats("not learned", map[int]int64{statNodeWrites: 0})
				return
			}
			ns, as := nodeSlot(tc.n.lh), addrSlot(tc.n.va)
			if len(nodes) != 1 || nodes[ns] != uint64(tc.n.lh) {
				t.Fatalf("node map = %v, want LH %#x at crc32(LH) mod 65536 = %d", nodes, tc.n.lh, ns)
			}
			for name, want := range map[string]uint64{"node_ver": uint64(tc.n.ev), "node_key": tc.n.key,
				"node_va_hi": tc.n.va >> 32, "node_va_lo": tc.n.va & 0xffffffff} {
				if got := r.register(name, ns); got != want {
					t.Errorf("%s[%d] = %#x, want %#x", name, ns, got, want)
				}
			}
			if len(addrs) != 1 || addrs[as] != tc.n.key {
				t.Fatalf("address map = %v, want key %#x at crc32(VA) mod 65536 = %d", addrs, tc.n.key, as)
			}
			if got := r.register("addr_va_hi", as)<<32 | r.register("addr_va_lo", as); got != tc.n.va {
				t.Errorf("addr_va[%d] = %#x, want %#x", as, got, tc.n.va)
			}
			// A retransmitted node WRITE records the same thing again.
			r.expectSame(1, 3, in, "retransmitted node WRITE")
			r.wantStats("learned twice", map[int]int64{statNodeWrites: 2, statRoCE: 2})
			if got := r.registerNonZero("node_lh"); len(got) != 1 {
				t.Errorf("node map after the retransmission = %v", got)
			}
		})
	}
}

// Rule 1, collisions: a node WRITE whose VA hashes to a held address-map
// slot replaces it; READs of the replaced VA then miss.
func TestAddressMapCollisionReplaces(t *testing.T) {
	r := newSteerRig(t, modeBoth)
	r.chain() // A1 (stale) and A3 (tail) of hotKey are mapped
	collide := uint64(0)
	for i := uint64(1); i < 1<<22; i++ {
		if va := nA1.va + i*64; addrSlot(va) == addrSlot(nA1.va) {
			collide = va
			break
		}
	}
	if collide == 0 {
		t.Fatal("no colliding VA found")
	}
	// The same READ is steered before the collision and misses after it.
	_, p := r.pass(4, 3, readReq(t, qpC, 300, nA1.va, nodeSize))
	if p.RETH.VA() != nA3.va {
		t.Fatalf("READ of A1 before the collision: VA %#x, want %#x", p.RETH.VA(), nA3.va)
	}
	r.expectSame(2, 3, nodeWrite(t, qpB, 200, node{collide, 0xC1, 1, coldKey}, valueSize), "node WRITE at a colliding VA")
	r.expectSame(4, 3, readReq(t, qpC, 301, nA1.va, nodeSize), "READ of the replaced VA")
	r.wantStats("after the collision", map[int]int64{statReadsSteered: 1, statReadMisses: 1})
}

// Rule 2: every COMPARE_SWAP is recorded at its link slot with its frame
// fields as forwarded; a linking CAS of a tracked key also records its key,
// slot and the node it links. FETCH_ADD is not recorded.
func TestCASRecorded(t *testing.T) {
	cold := node{0x00007f2200040000, 0xC0, 9, coldKey}
	for _, tc := range []struct {
		name    string
		write   *node // node WRITE before the CAS
		compare uint64
		swap    uint64
		tracked bool
	}{
		{"linking CAS of a tracked key", &nA1, hw(0, 0, 5), hw(nA1.lh, nA1.ev, 5), true},
		{"linking CAS of an untracked key", &cold, hw(0, 0, 5), hw(cold.lh, cold.ev, 5), false},
		{"linking CAS of a node never written", nil, hw(0, 0, 5), hw(nA1.lh, nA1.ev, 5), false},
		{"delete CAS", &nA1, hw(0, 0, 5), hw(lhDeleted, 0, 5), false},
		{"CAS that is not a link (compare has a next)", &nA1, hw(0x99, 0, 5), hw(nA1.lh, nA1.ev, 5), false},
		{"CAS of a plain word", nil, 40, 41, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newSteerRig(t, modeWrite)
			if tc.write != nil {
				r.expectSame(1, 3, nodeWrite(t, qpA, 100, *tc.write, valueSize), "node WRITE")
			}
			r.expectSame(1, 3, cas(t, qpA, 101, nT0.va, tc.compare, tc.swap), "CAS")
			slot := linkSlot(qpA, 101)
			if got := r.registerNonZero("cas_out_valid"); len(got) != 1 || got[slot] != 1 {
				t.Fatalf("cas_out_valid = %v, want slot crc32(client IP, server IP, PSN) mod 8192 = %d", got, slot)
			}
			want := map[string]uint64{
				"cas_out_src_mac": macU64(clientA.mac), "cas_out_dst_mac": macU64(memnode.mac),
				"cas_out_src_ip": 0x0a000001, "cas_out_dst_ip": memnodeIP, "cas_out_udp_sport": uint64(qpA.sport),
				"cas_out_dst_qp": uint64(qpA.destQP), "cas_out_psn": 101, "cas_out_pkey": 0xffff, "cas_out_va": nT0.va,
				"cas_out_rkey": rkey, "cas_out_swap": tc.swap, "cas_out_compare": tc.compare,
				"link_orig_va_hi": nT0.va >> 32, "link_orig_va_lo": nT0.va & 0xffffffff,
				"link_lh": tc.swap >> 28 & 0xffffffff, "link_tracked": 0,
			}
			if tc.tracked {
				for k, v := range map[string]uint64{"link_tracked": 1, "link_key_slot": keySlot, "link_key": hotKey,
					"link_va_hi": nA1.va >> 32, "link_va_lo": nA1.va & 0xffffffff, "link_ver": uint64(nA1.ev)} {
					want[k] = v
				}
			}
			for name, w := range want {
				if got := r.register(name, slot); got != w {
					t.Errorf("%s[%d] = %#x, want %#x", name, slot, got, w)
				}
			}
		})
	}
	t.Run("FETCH_ADD is not recorded", func(t *testing.T) {
		r := newSteerRig(t, modeWrite)
		r.expectSame(1, 3, fetchAdd(t, qpA, 101, nT0.va, 1), "FETCH_ADD")
		if got := r.registerNonZero("cas_out_valid"); len(got) != 0 {
			t.Fatalf("cas_out_valid = %v after a FETCH_ADD, want none", got)
		}
	})
	t.Run("steering off records nothing", func(t *testing.T) {
		r := newSteerRig(t, 0)
		r.expectSame(1, 3, nodeWrite(t, qpA, 100, nA1, valueSize), "node WRITE")
		r.expectSame(1, 3, link(t, qpA, 101, nT0.va, nT0.ev, nA1), "CAS")
		if got := r.registerNonZero("cas_out_valid"); len(got) != 0 {
			t.Fatalf("cas_out_valid = %v with steering off, want none", got)
		}
	})
}

// Rule 2, collisions: a CAS whose link slot holds another CAS still
// waiting for its ACK overwrites it (stats 9); the overwritten CAS's ACK
// then matches nothing and confirms nothing.
func TestLinkSlotCollision(t *testing.T) {
	r := newSteerRig(t, modeWrite)
	const psnA = 101
	psnB := uint32(0)
	for p := uint32(1); p < 1<<24; p++ {
		if linkSlot(qpB, p) == linkSlot(qpA, psnA) {
			psnB = p
			break
		}
	}
	if psnB == 0 {
		t.Fatal("no colliding PSN")
	}
	r.expectSame(1, 3, nodeWrite(t, qpA, psnA-1, nA1, valueSize), "A's node WRITE")
	r.expectSame(1, 3, link(t, qpA, psnA, nT0.va, nT0.ev, nA1), "A's CAS")
	r.expectSame(2, 3, nodeWrite(t, qpB, psnB-1, nB1, valueSize), "B's node WRITE")
	r.expectSame(2, 3, link(t, qpB, psnB, nT0.va, nT0.ev, nB1), "B's CAS in A's link slot")
	r.wantStats("after B's CAS", map[int]int64{statLinkTakeover: 1, statCAS: 2})
	if got := r.register("cas_out_psn", linkSlot(qpA, psnA)); got != uint64(psnB) {
		t.Fatalf("record PSN %d, want B's %d", got, psnB)
	}
	r.expectSame(3, 1, atomicAck(t, qpA, psnA, hw(0, 0, 5)), "ACK of A's overwritten CAS")
	r.wantNoTail(keySlot, "A's ACK after its record was overwritten")
	r.wantStats("A's ACK", map[int]int64{statAcksCleared: 0, statTailConfirmed: 0})
	r.expectSame(3, 2, atomicAck(t, qpB, psnB, hw(0, 0, 5)), "ACK of B's CAS")
	r.wantTail(keySlot, nB1, memnodeIP, "B's ACK")
	r.wantStats("B's ACK", map[int]int64{statAcksCleared: 1, statTailConfirmed: 1})
}

// Rule 3: a retransmitted CAS (same client, server and PSN as a valid
// record, same VA and swap LH as the client sent them) is forwarded
// exactly as its first copy, whatever the cache holds now; a CAS with the
// same PSN but another VA or LH is a new CAS.
func TestRetransmittedCASForwardedAsFirstCopy(t *testing.T) {
	t.Run("first copy steered, tail forgotten since", func(t *testing.T) {
		r := newSteerRig(t, modeWrite)
		r.confirm(qpA, 100, nT0.va, nT0.ev, nA1)
		r.expectSame(2, 3, nodeWrite(t, qpB, 200, nB1, valueSize), "B's node WRITE")
		in := link(t, qpB, 201, nT0.va, nT0.ev, nB1)
		first, p := r.pass(2, 3, in)
		if p.AtomicETH.VA() != nA1.va {
			t.Fatalf("B's first copy not steered: VA %#x", p.AtomicETH.VA())
		}
		r.setRegister("tail_valid", keySlot, 0) // a fresh CAS would not be steered now
		again, _ := r.pass(2, 3, in)
		if !bytes.Equal(again, first) {
			t.Fatalf("retransmission forwarded as\n%x\nfirst copy was\n%x", again, first)
		}
		r.wantStats("after the retransmission", map[int]int64{statRetransmits: 1, statCASSteered: 1, statCAS: 2, statLinkTakeover: 0})
		if got := r.counter("key_retransmits", keySlot); got != 1 {
			t.Errorf("key_retransmits = %d, want 1", got)
		}
	})
	t.Run("first copy unsteered, tail confirmed since", func(t *testing.T) {
		r := newSteerRig(t, modeWrite)
		r.expectSame(2, 3, nodeWrite(t, qpB, 200, nB1, valueSize), "B's node WRITE")
		in := link(t, qpB, 201, nT0.va, nT0.ev, nB1)
		r.expectSame(2, 3, in, "B's CAS with no tail cached")
		r.confirm(qpA, 100, nT0.va, nT0.ev, nA1) // A1 is now a fresh tail
		r.expectSame(2, 3, in, "B's retransmission")
		r.wantStats("after the retransmission", map[int]int64{statRetransmits: 1, statCASSteered: 0})
	})
	for _, tc := range []struct {
		name string
		va   uint64
		n    node
	}{
		{"same PSN, other VA", nA3.va, nB1},
		{"same PSN, other LH", nT0.va, nA3},
	} {
		t.Run(tc.name+" is a new CAS", func(t *testing.T) {
			r := newSteerRig(t, modeWrite)
			r.confirm(qpA, 100, nT0.va, nT0.ev, nA1)
			r.expectSame(2, 3, nodeWrite(t, qpB, 200, nB1, valueSize), "B's node WRITE")
			r.expectSame(2, 3, nodeWrite(t, qpB, 210, nA3, valueSize), "a second node WRITE")
			r.pass(2, 3, link(t, qpB, 201, nT0.va, nT0.ev, nB1))
			_, p := r.pass(2, 3, link(t, qpB, 201, tc.va, nT0.ev, tc.n))
			if p.AtomicETH.VA() != nA1.va || p.AtomicETH.SwapAdd()>>28&0xffffffff != uint64(tc.n.lh) {
				t.Fatalf("second CAS forwarded with VA %#x swap %#x, want steered to %#x linking %#x", p.AtomicETH.VA(), p.AtomicETH.SwapAdd(), nA1.va, tc.n.lh)
			}
			r.wantStats("second CAS", map[int]int64{statRetransmits: 0, statLinkTakeover: 1, statCASSteered: 2})
			slot := linkSlot(qpB, 201)
			if got := r.register("link_lh", slot); got != uint64(tc.n.lh) {
				t.Errorf("link_lh = %#x, want the new CAS's %#x", got, tc.n.lh)
			}
		})
	}
	// The ACK was lost after the switch: the client's copy is still the same
	// CAS (the memory node replays its result), forwarded as the first copy
	// and changing nothing; in particular it is not recorded as in flight.
	t.Run("after its ACK a copy is still a retransmission", func(t *testing.T) {
		r := newSteerRig(t, modeWrite)
		r.expectSame(1, 3, nodeWrite(t, qpA, 100, nA1, valueSize), "A's node WRITE")
		in := link(t, qpA, 101, nT0.va, nT0.ev, nA1)
		r.expectSame(1, 3, in, "A's CAS")
		r.expectSame(3, 1, atomicAck(t, qpA, 101, hw(0, 0, 9)), "ACK: A's CAS failed")
		r.expectSame(1, 3, in, "A's copy after the ACK")
		r.wantStats("copy after the ACK", map[int]int64{statRetransmits: 1, statCAS: 1, statLinkTakeover: 0, statLinkAmbiguous: 0})
		if v := r.register("cas_out_valid", linkSlot(qpA, 101)); v != 0 {
			t.Errorf("the copy made the CAS outstanding again: cas_out_valid = %d", v)
		}
	})
}

// Rule 4: a linking CAS is recognised by its compare (a tail word) and its
// swap's next LH and version, resolved through the node map.
func TestLinkingCASRecognition(t *testing.T) {
	cold := node{0x00007f2200040000, 0xC0, 9, coldKey}
	for _, tc := range []struct {
		name       string
		write      node
		compare    uint64
		swap       uint64
		linking    bool // counted in stats 2
		unresolved bool // stats 11
		steered    bool
	}{
		{"swap names the written node", nB1, hw(0, 0, 5), hw(nB1.lh, nB1.ev, 5), true, false, true},
		{"node map holds another version", nB1, hw(0, 0, 5), hw(nB1.lh, nB1.ev+1, 5), true, true, false},
		{"node never written", nB1, hw(0, 0, 5), hw(0xB7, 2, 5), true, true, false},
		{"node of an untracked key", cold, hw(0, 0, 5), hw(cold.lh, cold.ev, 5), true, false, false},
		{"compare has a next LH", nB1, hw(0x99, 0, 5), hw(nB1.lh, nB1.ev, 5), false, false, false},
		{"compare has a next version", nB1, hw(0, 3, 5), hw(nB1.lh, nB1.ev, 5), false, false, false},
		{"swap's next LH is NULL", nB1, hw(0, 0, 5), hw(0, nB1.ev, 5), false, false, false},
		{"swap's next LH is the delete mark", nB1, hw(0, 0, 5), hw(lhDeleted, nB1.ev, 5), false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newSteerRig(t, modeWrite)
			r.confirm(qpA, 100, nT0.va, nT0.ev, nA1)
			base := r.stats()
			r.expectSame(2, 3, nodeWrite(t, qpB, 200, tc.write, valueSize), "B's node WRITE")
			in := cas(t, qpB, 201, nT0.va, tc.compare, tc.swap)
			out, p := r.pass(2, 3, in)
			if steered := p.AtomicETH.VA() == nA1.va; steered != tc.steered {
				t.Fatalf("steered %v (VA %#x), want %v", steered, p.AtomicETH.VA(), tc.steered)
			}
			if !tc.steered && !bytes.Equal(out, in) {
				t.Fatalf("unsteered CAS modified:\n got %x\nwant %x", out, in)
			}
			s := r.stats()
			if d := s[statCAS] - base[statCAS]; d != b2i(tc.linking) {
				t.Errorf("stats[linking CAS] +%d, want +%d", d, b2i(tc.linking))
			}
			if d := s[statLinkUnresolved] - base[statLinkUnresolved]; d != b2i(tc.unresolved) {
				t.Errorf("stats[unresolved] +%d, want +%d", d, b2i(tc.unresolved))
			}
			wantTracked := uint64(0)
			if tc.steered {
				wantTracked = 1
			}
			if got := r.register("link_tracked", linkSlot(qpB, 201)); got != wantTracked {
				t.Errorf("link_tracked = %d, want %d", got, wantTracked)
			}
		})
	}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// Rules 5 and 6: nothing is steered to a node before the ATOMIC ACK of its
// linking CAS shows it succeeded.
func TestNoSteeringBeforeConfirmation(t *testing.T) {
	r := newSteerRig(t, modeBoth)
	r.expectSame(1, 3, nodeWrite(t, qpA, 100, nA1, valueSize), "A's node WRITE")
	r.expectSame(1, 3, link(t, qpA, 101, nT0.va, nT0.ev, nA1), "A's CAS")
	r.wantNoTail(keySlot, "A's CAS forwarded, not yet ACKed")
	// Another client's stale CAS and a READ of a node of the key pass as is.
	r.expectSame(2, 3, nodeWrite(t, qpB, 200, nB1, valueSize), "B's node WRITE")
	r.expectSame(2, 3, link(t, qpB, 201, nT0.va, nT0.ev, nB1), "B's CAS before A's ACK")
	r.expectSame(4, 3, readReq(t, qpC, 300, nB1.va, nodeSize), "READ before A's ACK")
	r.wantStats("before the ACK", map[int]int64{statCASSteered: 0, statReadsSteered: 0, statTailConfirmed: 0})
	// The ACK confirms A1; B's next CAS (Clover's retry, new PSN) is steered.
	r.expectSame(3, 1, atomicAck(t, qpA, 101, hw(0, 0, 5)), "A's ACK")
	r.wantTail(keySlot, nA1, memnodeIP, "A's ACK")
	_, p := r.pass(2, 3, link(t, qpB, 202, nT0.va, nT0.ev, nB1))
	if p.AtomicETH.VA() != nA1.va {
		t.Fatalf("B's retry after the confirmation: VA %#x, want %#x", p.AtomicETH.VA(), nA1.va)
	}
}

// Rule 5: a steered CAS has its AtomicETH VA set to the tail's and bits
// 18..11 of compare and swap set to the tail's entry version; nothing else
// changes (the ICRC is the client's).
func TestStaleCASSteered(t *testing.T) {
	r := newSteerRig(t, modeWrite)
	r.confirm(qpA, 100, nT0.va, nT0.ev, nA1)
	r.expectSame(2, 3, nodeWrite(t, qpB, 200, nB1, valueSize), "B's node WRITE")
	// Bits outside the fields the switch owns are set, to see them kept:
	// compare bits 10..0 and swap bits 63..60, 27 and 10..0.
	const low, high = 0x7ff, 0xf<<60 | 1<<27
	in := cas(t, qpB, 201, nT0.va, hw(0, 0, 5)|low, hw(nB1.lh, nB1.ev, 5)|low|high)
	out, p := r.pass(2, 3, in)
	if got := p.AtomicETH.VA(); got != nA1.va {
		t.Errorf("steered CAS VA = %#x, want the tail %#x", got, nA1.va)
	}
	if got, want := p.AtomicETH.Compare(), hw(0, 0, nA1.ev)|low; got != want {
		t.Errorf("compare = %#x, want %#x", got, want)
	}
	if got, want := p.AtomicETH.SwapAdd(), hw(nB1.lh, nB1.ev, nA1.ev)|low|high; got != want {
		t.Errorf("swap = %#x, want %#x", got, want)
	}
	off := p.ExtOff // AtomicETH: VA 0..7, rkey 8..11, swap 12..19, compare 20..27
	sameExcept(t, out, in, [2]int{off, off + 8}, [2]int{off + 12, off + 28})
	if p.ICRCOK() {
		t.Error("the ICRC of the steered CAS verifies: the switch must not recompute it")
	}
	if got := r.counter("key_cas_steered", keySlot); got != 1 {
		t.Errorf("key_cas_steered[%d] = %d, want 1", keySlot, got)
	}
	r.wantStats("steered", map[int]int64{statCASSteered: 1, statCAS: 2})
	// The record holds the CAS as forwarded, and the client's VA.
	slot := linkSlot(qpB, 201)
	for name, want := range map[string]uint64{"cas_out_va": nA1.va, "cas_out_compare": p.AtomicETH.Compare(),
		"cas_out_swap": p.AtomicETH.SwapAdd(), "link_orig_va_lo": nT0.va & 0xffffffff} {
		if got := r.register(name, slot); got != want {
			t.Errorf("%s = %#x, want %#x", name, got, want)
		}
	}
	r.expectQuiet()
}

// Rule 5, the conditions: a fresh tail of the same key, on the same memory
// node, at another VA, with write steering on.
func TestCASNotSteered(t *testing.T) {
	mem2 := qp{clientB, clientC, 49160, 0x31} // port 4 plays a second memory node
	for _, tc := range []struct {
		name string
		mode uint64
		q    qp
		va   uint64
	}{
		{"CAS aimed at the tail itself", modeWrite, qpB, nA1.va},
		{"tail on another memory node", modeWrite, mem2, nT0.va},
		{"write steering off", modeRead, qpB, nT0.va},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newSteerRig(t, tc.mode)
			r.confirm(qpA, 100, nT0.va, nT0.ev, nA1)
			r.expectSame(2, tc.q.to.port, nodeWrite(t, tc.q, 200, nB1, valueSize), "B's node WRITE")
			r.expectSame(2, tc.q.to.port, link(t, tc.q, 201, tc.va, nA1.ev, nB1), "B's CAS")
			r.wantStats("B's CAS", map[int]int64{statCASSteered: 0, statCAS: 2, statTailExpired: 0})
		})
	}
}

// Rule 6: the ATOMIC ACK that matches a record clears it; a success
// (original value == compare as forwarded) confirms the linked node as the
// key's tail, with tail_ts = when its CAS was forwarded.
func TestConfirmationAtTheACK(t *testing.T) {
	t.Run("success confirms, at the forwarding time", func(t *testing.T) {
		r := newSteerRig(t, modeWrite)
		r.expectSame(1, 3, nodeWrite(t, qpA, 100, nA1, valueSize), "A's node WRITE")
		r.expectSame(1, 3, link(t, qpA, 101, nT0.va, nT0.ev, nA1), "A's CAS")
		slot := linkSlot(qpA, 101)
		forwarded := r.register("cas_out_ts", slot)
		pause() // the ACK comes later on the switch clock
		r.expectSame(3, 1, atomicAck(t, qpA, 101, hw(0, 0, 5)), "A's ACK")
		r.wantTail(keySlot, nA1, memnodeIP, "A's ACK")
		if got := r.register("tail_ts", keySlot); got != forwarded {
			t.Errorf("tail_ts = %d, want %d (when the CAS was forwarded)", got, forwarded)
		}
		if got := r.register("cas_out_valid", slot); got != 0 {
			t.Errorf("cas_out_valid = %d after the ACK, want 0", got)
		}
		r.wantStats("A's ACK", map[int]int64{statAcksCleared: 1, statTailConfirmed: 1})
	})
	t.Run("success of a steered CAS confirms its node", func(t *testing.T) {
		r := newSteerRig(t, modeWrite)
		r.confirm(qpA, 100, nT0.va, nT0.ev, nA1)
		p := r.confirm(qpB, 200, nT0.va, nT0.ev, nB1) // steered to A1, ACKed with the steered compare
		if p.AtomicETH.VA() != nA1.va {
			t.Fatalf("B's CAS not steered: %#x", p.AtomicETH.VA())
		}
		r.wantTail(keySlot, nB1, memnodeIP, "B's ACK")
	})
	for _, tc := range []struct {
		name string
		ack  func(t *testing.T) []byte
		out  uint32
	}{
		// orig equals the compare the client sent, not the one forwarded:
		// the steered CAS failed.
		{"orig == compare as sent, not as forwarded", func(t *testing.T) []byte { return atomicAck(t, qpB, 201, hw(0, 0, 5)) }, 2},
		{"ACK of another PSN", func(t *testing.T) []byte { return atomicAck(t, qpB, 202, hw(0, 0, 1)) }, 2},
		{"ACK from another memory node", func(t *testing.T) []byte {
			return qp{clientC, clientB, 50000, 0x32}.build(t, roce.Fields{Opcode: roce.OpRCAtomicAcknowledge, PSN: 201,
				Syndrome: roce.ACKSyndrome(roce.CreditInvalid), MSN: 1, Orig: hw(0, 0, 1)})
		}, 2},
	} {
		t.Run(tc.name+" confirms nothing", func(t *testing.T) {
			r := newSteerRig(t, modeWrite)
			r.confirm(qpA, 100, nT0.va, nT0.ev, nA1)
			r.expectSame(2, 3, nodeWrite(t, qpB, 200, nB1, valueSize), "B's node WRITE")
			r.pass(2, 3, link(t, qpB, 201, nT0.va, nT0.ev, nB1)) // steered to A1: compare hw(0,0,1)
			r.expectSame(3, tc.out, tc.ack(t), "ACK")
			if got := r.tail(keySlot); got.va == nB1.va {
				t.Fatalf("B1 confirmed: %+v", got)
			}
		})
	}
	t.Run("ACK of an untracked key's CAS clears only", func(t *testing.T) {
		r := newSteerRig(t, modeWrite)
		cold := node{0x00007f2200040000, 0xC0, 9, coldKey}
		r.confirm(qpA, 100, nT0.va, nT0.ev, cold)
		r.wantNoTail(keySlot, "untracked key's link")
		r.wantStats("untracked", map[int]int64{statAcksCleared: 1, statTailConfirmed: 0})
	})
}

// Rule 6, failures: a failed CAS drops the cached tail only if it was aimed
// (as forwarded) at that tail.
func TestFailedCASDropsTheTailItWasAimedAt(t *testing.T) {
	for _, tc := range []struct {
		name    string
		va      uint64 // where B's CAS is aimed
		dropped bool
	}{
		{"steered to the tail and failed", nT0.va, true},
		{"aimed at the tail by the client and failed", nA1.va, true},
		{"aimed elsewhere (another memory node's word) and failed", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newSteerRig(t, modeWrite)
			r.confirm(qpA, 100, nT0.va, nT0.ev, nA1)
			q := qpB
			if tc.va == 0 { // not steerable: sent to another memory node
				q = qp{clientB, clientC, 49160, 0x31}
				tc.va = nT0.va
			}
			r.expectSame(2, q.to.port, nodeWrite(t, q, 200, nB1, valueSize), "B's node WRITE")
			r.pass(2, q.to.port, link(t, q, 201, tc.va, nT0.ev, nB1))
			r.expectSame(q.to.port, 2, atomicAck(t, q, 201, hw(0xC3, 4, 1)), "ACK: B's CAS failed")
			if tc.dropped {
				r.wantNoTail(keySlot, "failure at the tail")
				r.wantStats("dropped", map[int]int64{statTailDropped: 1})
				// The next successful link teaches the tail again.
				r.confirm(qpB, 210, nA1.va, nA1.ev, nA3)
				r.wantTail(keySlot, nA3, memnodeIP, "next link")
				return
			}
			r.wantTail(keySlot, nA1, memnodeIP, "failure elsewhere")
			r.wantStats("kept", map[int]int64{statTailDropped: 0})
		})
	}
}

// Rule 6, reordering: a confirmation whose CAS was forwarded before the
// cached tail's is not applied; in order, both are.
func TestReorderedConfirmations(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ackFirst  qp // whose ACK comes first
		wantTail  node
		confirmed int64
		stale     int64
	}{
		{"later link ACKed first", qpB, nB1, 1, 1},
		{"in order", qpA, nB1, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newSteerRig(t, modeWrite)
			// A links A1 after T0, then B links B1 after A1 (aimed there by
			// the client: nothing is cached, nothing steered).
			r.expectSame(1, 3, nodeWrite(t, qpA, 100, nA1, valueSize), "A's node WRITE")
			r.expectSame(1, 3, link(t, qpA, 101, nT0.va, nT0.ev, nA1), "A's CAS")
			pause()
			r.expectSame(2, 3, nodeWrite(t, qpB, 200, nB1, valueSize), "B's node WRITE")
			r.expectSame(2, 3, link(t, qpB, 201, nA1.va, nA1.ev, nB1), "B's CAS")
			if a, b := r.register("cas_out_ts", linkSlot(qpA, 101)), r.register("cas_out_ts", linkSlot(qpB, 201)); a >= b {
				t.Fatalf("forward times A %d, B %d: want A's earlier", a, b)
			}
			ackA, ackB := atomicAck(t, qpA, 101, hw(0, 0, 5)), atomicAck(t, qpB, 201, hw(0, 0, 1))
			if tc.ackFirst == qpB {
				r.expectSame(3, 2, ackB, "B's ACK")
				r.expectSame(3, 1, ackA, "A's late ACK")
			} else {
				r.expectSame(3, 1, ackA, "A's ACK")
				r.expectSame(3, 2, ackB, "B's ACK")
			}
			r.wantTail(keySlot, tc.wantTail, memnodeIP, "both ACKs")
			r.wantStats("both ACKs", map[int]int64{statTailConfirmed: tc.confirmed, statConfirmStale: tc.stale, statAcksCleared: 2})
		})
	}
	// The later link is confirmed, then dropped (a CAS aimed at it fails);
	// the older link's late ACK must not bring back its node, which has a
	// successor.
	t.Run("later link confirmed then dropped", func(t *testing.T) {
		r := newSteerRig(t, modeWrite)
		r.expectSame(1, 3, nodeWrite(t, qpA, 100, nA1, valueSize), "A's node WRITE")
		r.expectSame(1, 3, link(t, qpA, 101, nT0.va, nT0.ev, nA1), "A's CAS")
		pause()
		r.expectSame(2, 3, nodeWrite(t, qpB, 200, nB1, valueSize), "B's node WRITE")
		r.expectSame(2, 3, link(t, qpB, 201, nA1.va, nA1.ev, nB1), "B's CAS")
		r.expectSame(3, 2, atomicAck(t, qpB, 201, hw(0, 0, 1)), "B's ACK")
		r.wantTail(keySlot, nB1, memnodeIP, "B's ACK")
		// C's CAS, aimed by the client at B1 (the tail: not steered), fails.
		r.expectSame(4, 3, nodeWrite(t, qpC, 300, nA3, valueSize), "C's node WRITE")
		r.expectSame(4, 3, link(t, qpC, 301, nB1.va, nB1.ev, nA3), "C's CAS aimed at B1")
		r.expectSame(3, 4, atomicAck(t, qpC, 301, hw(0x777, 1, nB1.ev)), "C's ACK: failed")
		r.wantNoTail(keySlot, "C's failed CAS aimed at the tail")
		r.expectSame(3, 1, atomicAck(t, qpA, 101, hw(0, 0, 5)), "A's late ACK")
		r.wantNoTail(keySlot, "A's late ACK after B's link was dropped")
		r.wantStats("late ACK", map[int]int64{statConfirmStale: 1, statTailDropped: 1})
	})
}

// Rules 5 and 7, freshness: a tail is steered to only while now - tail_ts
// < tail_ttl. The switch clock is real here: a TTL of 0 or 1µs (with a
// pause) is expired, 2^47µs is fresh. TestTailTTLBoundary checks the
// exact boundary with a controlled clock.
func TestTailTTL(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ttl   uint64
		fresh bool
	}{
		{"tail_ttl 0 steers nothing", 0, false},
		{"tail_ttl 1µs, tail older", 1, false},
		{"tail_ttl huge", freshTTL, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newSteerRig(t, modeBoth)
			r.setConfig("tail_ttl", tc.ttl)
			r.chain()
			pause()
			r.staleCASAndRead(tc.fresh, tc.fresh)
			want := map[int]int64{statTailExpired: 1, statReadMisses: 1, statCASSteered: 0, statReadsSteered: 0}
			if tc.fresh {
				want = map[int]int64{statTailExpired: 0, statReadMisses: 0, statCASSteered: 1, statReadsSteered: 1}
			}
			r.wantStats("after the CAS and the READ", want)
			if !tc.fresh {
				if got := r.counter("key_read_misses", keySlot); got != 1 {
					t.Errorf("key_read_misses = %d, want 1", got)
				}
			}
		})
	}
}

// Rule 7: a node-sized READ of a VA the address map holds, of a tracked key
// whose fresh tail is on the same memory node, is steered to the tail.
func TestReadSteering(t *testing.T) {
	cold := node{0x00007f2200040000, 0xC0, 9, coldKey}
	other := node{0x00007f2200050000, 0xD0, 4, otherKey}
	mem2 := qp{clientA, clientC, 49170, 0x41}
	for _, tc := range []struct {
		name     string
		setup    func(r *rig)
		q        qp
		va       uint64
		length   uint32
		mode     uint64
		steered  bool
		miss     bool // stats 6
		keyMiss  bool // key_read_misses[keySlot]
		counted  bool // stats 4 (a node READ seen)
		outPort  uint32
		tailNode node
	}{
		{name: "stale node of the key", q: qpC, va: nA1.va, length: nodeSize, mode: modeBoth, steered: true, counted: true},
		{name: "the tail itself", q: qpC, va: nA3.va, length: nodeSize, mode: modeBoth, counted: true},
		{name: "node written but not linked", q: qpC, va: nB1.va, length: nodeSize, mode: modeRead, steered: true, counted: true,
			setup: func(r *rig) { r.expectSame(2, 3, nodeWrite(r.t, qpB, 200, nB1, valueSize), "B1's WRITE") }},
		{name: "address never written", q: qpC, va: 0x00007f0000099000, length: nodeSize, mode: modeBoth, miss: true, counted: true},
		{name: "node of an untracked key", q: qpC, va: cold.va, length: nodeSize, mode: modeBoth, miss: true, counted: true,
			setup: func(r *rig) { r.expectSame(2, 3, nodeWrite(r.t, qpB, 200, cold, valueSize), "cold WRITE") }},
		{name: "tracked node's VA reused by an untracked key", q: qpC, va: nA1.va, length: nodeSize, mode: modeBoth, miss: true, counted: true,
			setup: func(r *rig) {
				r.expectSame(2, 3, nodeWrite(r.t, qpB, 200, node{nA1.va, 0xC0, 9, coldKey}, valueSize), "cold WRITE into A1's slot")
			}},
		{name: "node of another tracked key with no tail", q: qpC, va: other.va, length: nodeSize, mode: modeBoth, miss: true, counted: true,
			setup: func(r *rig) {
				r.track(otherKey, keySlot+1)
				r.expectSame(2, 3, nodeWrite(r.t, qpB, 200, other, valueSize), "other key's WRITE")
			}},
		{name: "tail on another memory node", q: mem2, va: nA1.va, length: nodeSize, mode: modeBoth, miss: true, keyMiss: true, counted: true},
		{name: "tail expired", q: qpC, va: nA1.va, length: nodeSize, mode: modeBoth, miss: true, keyMiss: true, counted: true,
			setup: func(r *rig) { r.setConfig("tail_ttl", 1); pause() }},
		{name: "READ of another length", q: qpC, va: nA1.va, length: nodeSize - 8, mode: modeBoth},
		{name: "read steering off", q: qpC, va: nA1.va, length: nodeSize, mode: modeWrite},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newSteerRig(t, tc.mode)
			r.chain()
			if tc.setup != nil {
				tc.setup(r)
			}
			in := readReq(t, tc.q, 300, tc.va, tc.length)
			out, p := r.pass(tc.q.from.port, tc.q.to.port, in)
			if tc.steered {
				if p.RETH.VA() != nA3.va {
					t.Fatalf("READ VA = %#x, want the tail %#x", p.RETH.VA(), nA3.va)
				}
				sameExcept(t, out, in, [2]int{p.ExtOff, p.ExtOff + 8})
			} else if !bytes.Equal(out, in) {
				t.Fatalf("READ modified: VA %#x", p.RETH.VA())
			}
			r.wantStats("READ", map[int]int64{statReadsSteered: b2i(tc.steered), statReadMisses: b2i(tc.miss), statReads: b2i(tc.counted)})
			if got := r.counter("key_reads_steered", keySlot); got != b2i(tc.steered) {
				t.Errorf("key_reads_steered = %d, want %d", got, b2i(tc.steered))
			}
			if got := r.counter("key_read_misses", keySlot); got != b2i(tc.keyMiss) {
				t.Errorf("key_read_misses = %d, want %d", got, b2i(tc.keyMiss))
			}
		})
	}
}

// Rule 8: delete CASes and FETCH_ADD are never steered, even with a fresh
// tail of the key.
func TestDeleteCASAndFetchAddNeverSteered(t *testing.T) {
	r := newSteerRig(t, modeBoth)
	r.chain()
	r.expectSame(2, 3, nodeWrite(t, qpB, 200, nB1, valueSize), "B's node WRITE")
	r.expectSame(2, 3, cas(t, qpB, 201, nA1.va, hw(0, 0, nA1.ev), hw(lhDeleted, 0, nA1.ev)), "delete CAS")
	r.expectSame(2, 3, cas(t, qpB, 202, nA1.va, hw(nB1.lh, nB1.ev, nA1.ev), hw(lhDeleted, 0, nA1.ev)), "delete CAS of a linked node")
	r.expectSame(2, 3, fetchAdd(t, qpB, 203, nA1.va, 1), "FETCH_ADD")
	r.wantStats("after delete CAS and FETCH_ADD", map[int]int64{statCASSteered: 0})
	for _, psn := range []uint32{201, 202} {
		if got := r.register("cas_out_valid", linkSlot(qpB, psn)); got != 1 {
			t.Errorf("delete CAS %d not recorded", psn)
		}
	}
}

// tail_key: a slot reassigned to another key never steers that key's
// requests to the previous key's node, even when a confirmation for the
// previous key lands after the controller reset the slot.
func TestTailKeyGuardsAReassignedSlot(t *testing.T) {
	r := newSteerRig(t, modeBoth)
	other := node{0x00007f2200050000, 0xD0, 4, otherKey}
	otherNext := node{0x00007f2200060000, 0xD1, 5, otherKey}
	r.confirm(qpA, 100, nT0.va, nT0.ev, nA1)
	// hotKey's next link is in flight when the controller gives its slot to
	// otherKey (and resets tail_valid, as docs/swordbox-p4.md says).
	r.expectSame(1, 3, nodeWrite(t, qpA, 102, nA3, valueSize), "A3's WRITE")
	r.expectSame(1, 3, link(t, qpA, 103, nA1.va, nA1.ev, nA3), "A3's CAS")
	r.untrack(hotKey)
	r.track(otherKey, keySlot)
	r.setRegister("tail_valid", keySlot, 0)
	r.expectSame(3, 1, atomicAck(t, qpA, 103, hw(0, 0, nA1.ev)), "A3's late ACK")
	if got := r.tail(keySlot); got.valid == 1 && got.key != hotKey {
		t.Fatalf("the late confirmation cached %+v under another key", got)
	}
	// otherKey's requests are not steered to hotKey's A3.
	r.expectSame(2, 3, nodeWrite(t, qpB, 200, other, valueSize), "other key's node WRITE")
	r.expectSame(2, 3, nodeWrite(t, qpB, 202, otherNext, valueSize), "other key's next node WRITE")
	r.expectSame(2, 3, link(t, qpB, 203, other.va, other.ev, otherNext), "other key's CAS")
	r.expectSame(4, 3, readReq(t, qpC, 300, other.va, nodeSize), "other key's READ")
	r.wantStats("other key", map[int]int64{statCASSteered: 0, statReadsSteered: 0})
	// Its own confirmation then replaces the slot's tail.
	r.expectSame(3, 2, atomicAck(t, qpB, 203, hw(0, 0, other.ev)), "other key's ACK")
	r.wantTail(keySlot, otherNext, memnodeIP, "other key's ACK")
	_, p := r.pass(4, 3, readReq(t, qpC, 301, other.va, nodeSize))
	if p.RETH.VA() != otherNext.va {
		t.Errorf("other key's READ after its confirmation: VA %#x, want %#x", p.RETH.VA(), otherNext.va)
	}
}

// A PacketOut is sent as is: never steered, and it changes no steering
// state (no record, no retransmission, no learning).
func TestPacketOutNeverSteered(t *testing.T) {
	r := newSteerRig(t, modeBoth)
	r.chain()
	before := r.stats()
	records := r.registerNonZero("cas_out_valid")
	frames := [][]byte{
		nodeWrite(t, qpB, 200, nB1, valueSize),
		link(t, qpB, 201, nT0.va, nT0.ev, nB1),
		readReq(t, qpB, 202, nA1.va, nodeSize),
		link(t, qpA, 103, nA1.va, nA1.ev, nA3), // a copy of A's recorded CAS, already ACKed
	}
	for _, f := range frames {
		r.packetOut(3, f)
		if got := r.expect(3); !bytes.Equal(got, f) {
			t.Fatalf("PacketOut changed:\n got %x\nwant %x", got, f)
		}
	}
	if after := r.stats(); after != before {
		t.Errorf("stats changed by PacketOuts: %v -> %v", before, after)
	}
	if got := r.registerNonZero("cas_out_valid"); len(got) != len(records) {
		t.Errorf("records %v -> %v", records, got)
	}
	if got := r.registerNonZero("node_lh"); got[nodeSlot(nB1.lh)] != 0 {
		t.Error("B1 learned from a PacketOut")
	}
	r.wantTail(keySlot, nA3, memnodeIP, "after PacketOuts")
	r.expectQuiet()
}

// The steering modes: off forwards only and learns nothing; write steers
// CAS only; read steers READs only; both steer both. Every non-zero mode
// learns and confirms.
func TestSteeringModes(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		mode                  uint64
		learns, casSt, readSt bool
	}{
		{"off", 0, false, false, false},
		{"write", modeWrite, true, true, false},
		{"read", modeRead, true, false, true},
		{"both", modeBoth, true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newSteerRig(t, tc.mode)
			r.confirm(qpA, 100, nT0.va, nT0.ev, nA1)
			r.confirm(qpA, 102, nA1.va, nA1.ev, nA3)
			if tc.learns {
				r.wantTail(keySlot, nA3, memnodeIP, "learned")
			} else {
				r.wantNoTail(keySlot, "mode off")
				if got := r.registerNonZero("node_lh"); len(got) != 0 {
					t.Errorf("node map %v with steering off", got)
				}
			}
			r.staleCASAndRead(tc.casSt, tc.readSt)
			if got := len(r.registerNonZero("cas_out_valid")) > 0; got != tc.learns {
				t.Errorf("CAS recorded %v, want %v", got, tc.learns)
			}
		})
	}
}

// Forwarding by MAC, PacketIn to the controller, PacketOut to a port, and
// the forward table's direct counter.
func TestForwardingAndPacketIO(t *testing.T) {
	r := newRig(t, 1, 2)
	r.forward(clientB.mac, 2)
	cpuMAC := [6]byte{2, 0, 0, 0, 0, 0xcc}
	r.toCPU(cpuMAC)

	frame := func(dst [6]byte, tag byte) []byte {
		f := make([]byte, 60)
		copy(f[0:6], dst[:])
		copy(f[6:12], clientA.mac[:])
		f[12], f[13] = 0x88, 0xb5 // local experimental EtherType
		f[14] = tag
		return f
	}
	r.expectSame(1, 2, frame(clientB.mac, 1), "forwarded frame")

	// Unknown destination: dropped by the default action. The marker sent
	// behind it on the same port is the first frame out.
	r.send(1, frame([6]byte{2, 9, 9, 9, 9, 9}, 2))
	marker := frame(clientB.mac, 3)
	r.send(1, marker)
	if got := r.expect(2); !bytes.Equal(got, marker) {
		t.Fatalf("expected the marker only, got %x", got)
	}

	toCPU := frame(cpuMAC, 4)
	r.send(1, toCPU)
	select {
	case p := <-r.pktIn:
		if !bytes.Equal(p.GetPayload(), toCPU) {
			t.Errorf("PacketIn payload %x, want %x", p.GetPayload(), toCPU)
		}
		if len(p.GetMetadata()) == 0 || p.GetMetadata()[0].GetMetadataId() != 1 || dec(p.GetMetadata()[0].GetValue()) != 1 {
			t.Errorf("PacketIn metadata %v, want ingress_port 1", p.GetMetadata())
		}
	case <-time.After(recvTimeout):
		t.Fatal("no PacketIn")
	}

	out := frame([6]byte{2, 7, 7, 7, 7, 7}, 5)
	r.packetOut(2, out)
	if got := r.expect(2); !bytes.Equal(got, out) {
		t.Errorf("PacketOut frame %x, want %x", got, out)
	}

	tid := r.tableID(prefix + "forward")
	es := r.read(&p4v1.Entity{Entity: &p4v1.Entity_DirectCounterEntry{DirectCounterEntry: &p4v1.DirectCounterEntry{
		TableEntry: &p4v1.TableEntry{TableId: tid, Match: []*p4v1.FieldMatch{exact(r.matchFieldID(prefix+"forward", "hdr.ethernet.dst_addr"), enc(macU64(clientB.mac)))}},
	}}})
	if len(es) != 1 || es[0].GetDirectCounterEntry().GetData().GetPacketCount() != 2 {
		t.Errorf("direct counter of forward[B] = %v, want 2 packets", es)
	}
	r.expectQuiet()
}

// Rules 5, 6 and 7 on a controlled switch clock (the bare target, no gRPC):
// a tail is fresh while now - tail_ts < tail_ttl, and tail_ts is when its
// linking CAS was forwarded, not when its ACK came back.
func TestTailTTLBoundary(t *testing.T) {
	var now uint64
	dev := steerDeviceClock(t, modeBoth, func() uint64 { return now })
	_, info := loadProgram(t)
	n := &names{t: t, info: info}
	const ttl = 100
	if err := dev.WriteTableEntry(p4v1.Update_MODIFY, n.configEntry(steerConfig{mode: modeBoth, nodeSize: nodeSize, ttl: ttl})); err != nil {
		t.Fatal(err)
	}
	process := func(at uint64, port uint32, frame []byte) roce.Packet {
		t.Helper()
		now = at
		var out []byte
		dev.Process(port, frame, func(_ uint32, f []byte) { out = append([]byte(nil), f...) })
		if out == nil {
			t.Fatalf("frame dropped at %d", at)
		}
		p, err := roce.Parse(out)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	const fwd = 1000
	process(fwd, 1, nodeWrite(t, qpA, 100, nA1, valueSize))
	process(fwd, 1, link(t, qpA, 101, nT0.va, nT0.ev, nA1))
	process(fwd+5*ttl, 3, atomicAck(t, qpA, 101, hw(0, 0, nT0.ev))) // the ACK comes long after
	process(fwd, 2, nodeWrite(t, qpB, 200, nB1, valueSize))
	for i, tc := range []struct {
		at      uint64
		steered bool
	}{
		{fwd, true}, {fwd + ttl - 1, true}, {fwd + ttl, false}, {fwd + 5*ttl, false},
	} {
		psn := uint32(201 + 2*i)
		c := process(tc.at, 2, link(t, qpB, psn, nT0.va, nT0.ev, nB1))
		rd := process(tc.at, 4, readReq(t, qpC, psn, nB1.va, nodeSize))
		if got := c.AtomicETH.VA() == nA1.va; got != tc.steered {
			t.Errorf("CAS at now = tail_ts + %d: steered %v, want %v (tail_ttl %d)", tc.at-fwd, got, tc.steered, ttl)
		}
		if got := rd.RETH.VA() == nA1.va; got != tc.steered {
			t.Errorf("READ at now = tail_ts + %d: steered %v, want %v (tail_ttl %d)", tc.at-fwd, got, tc.steered, ttl)
		}
	}
}

// TestSamePSNOnTwoQPsConfirmsNothing: two QPs of one client host to one
// memory node number their packets independently, so two CASes in flight
// can share (client IP, server IP, PSN), the key of a CAS record, which is
// all an ATOMIC ACK carries of its request. The second must confirm
// nothing, whichever ACK comes first; and a CAS whose key matches a record
// already cleared by its ACK must not be confirmed by a duplicate of that
// ACK either.
func TestSamePSNOnTwoQPsConfirmsNothing(t *testing.T) {
	t.Run("in flight together", func(t *testing.T) {
		r := newSteerRig(t, modeWrite)
		qpA2 := qp{clientA, memnode, 49155, 0x14} // another QP of client A's host
		r.expectSame(1, 3, nodeWrite(t, qpA, 100, nA1, valueSize), "A1's WRITE (QP 1)")
		r.expectSame(1, 3, nodeWrite(t, qpA2, 100, nB1, valueSize), "B1's WRITE (QP 2)")
		r.expectSame(1, 3, link(t, qpA, 101, nT0.va, nT0.ev, nA1), "QP 1's CAS T0 -> A1")
		r.expectSame(1, 3, link(t, qpA2, 101, nT0.va, nT0.ev, nB1), "QP 2's CAS T0 -> B1, same PSN")
		// The memory node executes QP 1's CAS first: it succeeds, QP 2's fails.
		r.expectSame(3, 1, atomicAck(t, qpA, 101, hw(0, 0, nT0.ev)), "ACK: QP 1's CAS succeeded")
		r.expectSame(3, 1, atomicAck(t, qpA2, 101, hw(nA1.lh, nA1.ev, nT0.ev)), "ACK: QP 2's CAS failed")
		if got := r.tail(keySlot); got.valid == 1 && got.va == nB1.va {
			t.Fatalf("B1, whose CAS failed, is the cached tail: %+v", got)
		}
		r.wantStats("ambiguous CAS", map[int]int64{statLinkAmbiguous: 1})
	})
	t.Run("after the first's ACK, with that ACK duplicated", func(t *testing.T) {
		r := newSteerRig(t, modeWrite)
		qpA2 := qp{clientA, memnode, 49155, 0x14}
		r.expectSame(1, 3, nodeWrite(t, qpA, 100, nA1, valueSize), "A1's WRITE (QP 1)")
		r.expectSame(1, 3, link(t, qpA, 101, nT0.va, nT0.ev, nA1), "QP 1's CAS T0 -> A1")
		ack := atomicAck(t, qpA, 101, hw(0, 0, nT0.ev))
		r.expectSame(3, 1, ack, "ACK: QP 1's CAS succeeded")
		r.expectSame(1, 3, nodeWrite(t, qpA2, 100, nB1, valueSize), "B1's WRITE (QP 2)")
		// QP 2's CAS, aimed at T0 by a stale cursor, is steered to A1; it
		// shares QP 1's (client, server, PSN).
		r.pass(1, 3, link(t, qpA2, 101, nT0.va, nT0.ev, nB1))
		// A duplicate of QP 1's ACK (orig = T0's tail word) arrives.
		r.expectSame(3, 1, ack, "duplicated ACK of QP 1's CAS")
		if got := r.tail(keySlot); got.valid == 1 && got.va == nB1.va {
			t.Fatalf("B1 confirmed by a duplicate of another CAS's ACK: %+v", got)
		}
	})
}

// staleCASAndRead sends, after chain (tail A3), B's CAS linking B1 aimed at
// T0 and a READ of A1, and checks whether each was steered to A3.
func (r *rig) staleCASAndRead(casSteered, readSteered bool) {
	r.t.Helper()
	r.expectSame(2, 3, nodeWrite(r.t, qpB, 200, nB1, valueSize), "B's node WRITE")
	_, p := r.pass(2, 3, link(r.t, qpB, 201, nT0.va, nT0.ev, nB1))
	_, q := r.pass(4, 3, readReq(r.t, qpC, 300, nA1.va, nodeSize))
	if got := p.AtomicETH.VA() == nA3.va; got != casSteered {
		r.t.Errorf("CAS steered %v, want %v", got, casSteered)
	}
	if got := q.RETH.VA() == nA3.va; got != readSteered {
		r.t.Errorf("READ steered %v, want %v", got, readSteered)
	}
}
