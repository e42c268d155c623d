package target

import (
	"encoding/binary"
	"os"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/swordbox/swordbox/roce"
)

// p4/tna/swordbox.p4's chain mode takes two passes for a linking CAS: the
// first reads the key's chain end and the node's mark and decides, the
// second writes them (docs/swordbox-p4.md, "The Tofino program"). This
// target resubmits at once, so nothing changes in between and the
// differential tests (p4/ptf) cannot reach what the second pass checks
// again for a Tofino, where other packets pass in between. These tests run
// a second pass by hand, with a first pass's decision that the state no
// longer matches, as such a packet would.

const (
	tsbValue   = 32
	tsbKey     = 7
	tsbKeySlot = 3
	tsbClient  = 1
	tsbMem     = 11
)

type tsbNode struct {
	va uint64
	lh uint32
	ev uint8
}

var (
	tsbT0 = tsbNode{0x7f0000001000, 0x10, 1}
	tsbA1 = tsbNode{0x7f0000002000, 0x11, 2}
	tsbA2 = tsbNode{0x7f0000003000, 0x12, 3}
	tsbA3 = tsbNode{0x7f0000004000, 0x13, 4}
)

func tsbHW(nextLH uint32, nextVer, entryVer uint8) uint64 {
	return uint64(nextLH)<<28 | uint64(nextVer)<<19 | uint64(entryVer)<<11
}

// tsbFrame builds a RoCEv2 frame from the client to the memory node (or
// back, for an ACK).
func tsbFrame(t *testing.T, f roce.Fields, back bool) []byte {
	t.Helper()
	c, m := [6]byte{2, 0, 0, 0, 0, tsbClient}, [6]byte{2, 0, 0, 0, 0, tsbMem}
	cip, mip := [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 1, 1}
	f.SrcMAC, f.DstMAC, f.SrcIP, f.DstIP = c, m, cip, mip
	if back {
		f.SrcMAC, f.DstMAC, f.SrcIP, f.DstIP = m, c, mip, cip
	}
	f.TTL, f.SrcPort, f.PKey, f.DestQP = 64, 49152, 0xffff, 0x11
	buf := make([]byte, roce.FrameLen(&f))
	n, err := roce.Build(buf, &f)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}

func tsbNodeWrite(t *testing.T, psn uint32, n tsbNode) []byte {
	p := make([]byte, 24+tsbValue)
	binary.LittleEndian.PutUint64(p[0:], tsbHW(0, 0, n.ev))
	binary.LittleEndian.PutUint64(p[8:], tsbKey)
	binary.LittleEndian.PutUint64(p[16:], uint64(n.lh))
	return tsbFrame(t, roce.Fields{Opcode: roce.OpRCWriteOnly, AckReq: true, PSN: psn, VA: n.va, RKey: 9, DMALen: uint32(len(p)), Payload: p}, false)
}

// tsbLink is the CAS linking n after the node at `at`.
func tsbLink(t *testing.T, psn uint32, at, n tsbNode) []byte {
	return tsbFrame(t, roce.Fields{Opcode: roce.OpRCCompareSwap, AckReq: true, PSN: psn, VA: at.va, RKey: 9,
		Compare: tsbHW(0, 0, at.ev), SwapAdd: tsbHW(n.lh, n.ev, at.ev)}, false)
}

func tsbAck(t *testing.T, psn uint32, orig uint64) []byte {
	return tsbFrame(t, roce.Fields{Opcode: roce.OpRCAtomicAcknowledge, PSN: psn, Syndrome: roce.ACKSyndrome(roce.CreditInvalid), MSN: 1, Orig: orig}, true)
}

// tsbSwitch is p4/tna/swordbox.p4 in chain mode with write steering, key 7
// tracked, A1 the confirmed tail and the chain's end moved on to A2 by a
// chained CAS, A3 written.
func tsbSwitch(t *testing.T) (*Program, *Device) {
	t.Helper()
	if _, err := os.Stat("../tna/swordbox.p4"); err != nil {
		t.Skip("p4/tna/swordbox.p4 not present")
	}
	p := mustCompileFile(t, "../tna/swordbox.p4")
	d := NewDevice(p, Options{CPUPort: 255, Now: func() uint64 { return 1000 }})
	b := func(v uint64, n int) []byte {
		out := make([]byte, n)
		for i := range n {
			out[n-1-i] = byte(v >> (8 * i))
		}
		return out
	}
	for _, h := range []uint64{tsbClient, tsbMem} {
		if err := d.WriteTableEntry(p4v1.Update_INSERT, &p4v1.TableEntry{TableId: tableID(t, p, "SwordboxIngress.forward"),
			Match:  []*p4v1.FieldMatch{exact(1, []byte{2, 0, 0, 0, 0, byte(h)})},
			Action: act(actionID(t, p, "SwordboxIngress.set_egress"), b(h, 2))}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := act(actionID(t, p, "SwordboxIngress.set_config"), []byte{5}, b(24+tsbValue, 4), b(1000000, 6))
	if err := d.WriteTableEntry(p4v1.Update_MODIFY, &p4v1.TableEntry{TableId: tableID(t, p, "SwordboxIngress.config"), IsDefaultAction: true, Action: cfg}); err != nil {
		t.Fatal(err)
	}
	if err := d.WriteTableEntry(p4v1.Update_INSERT, &p4v1.TableEntry{TableId: tableID(t, p, "SwordboxIngress.tracked_keys"),
		Match: []*p4v1.FieldMatch{exact(1, b(tsbKey, 8))}, Action: act(actionID(t, p, "SwordboxIngress.track"), b(tsbKeySlot, 2))}); err != nil {
		t.Fatal(err)
	}
	send(d, tsbClient, tsbNodeWrite(t, 1, tsbA1))
	send(d, tsbClient, tsbLink(t, 2, tsbT0, tsbA1))
	send(d, tsbMem, tsbAck(t, 2, tsbHW(0, 0, tsbT0.ev))) // A1 confirmed; the chain starts at A1
	send(d, tsbClient, tsbNodeWrite(t, 3, tsbA2))
	if va := tsbOutVA(t, send(d, tsbClient, tsbLink(t, 4, tsbT0, tsbA2))); va != tsbA1.va {
		t.Fatalf("A2's CAS went to %#x, want chained onto A1 %#x", va, tsbA1.va)
	}
	send(d, tsbClient, tsbNodeWrite(t, 5, tsbA3))
	if got := tsbReg(t, p, d, "spec_lh", tsbKeySlot); got != uint64(tsbA2.lh) {
		t.Fatalf("chain end %#x, want A2 %#x", got, tsbA2.lh)
	}
	return p, d
}

func tsbOutVA(t *testing.T, outs []out) uint64 {
	t.Helper()
	if len(outs) != 1 || outs[0].port != tsbMem {
		t.Fatalf("outputs %v", outs)
	}
	pk, err := roce.Parse(outs[0].frame)
	if err != nil || pk.AtomicETH == nil {
		t.Fatalf("not a CAS out: %v", err)
	}
	return pk.AtomicETH.VA()
}

func tsbReg(t *testing.T, p *Program, d *Device, name string, i int64) uint64 {
	t.Helper()
	var v uint64
	if err := d.ReadRegisterEntries(&p4v1.RegisterEntry{RegisterId: registerID(t, p, "SwordboxIngress."+name), Index: &p4v1.Index{Index: i}},
		func(re *p4v1.RegisterEntry) error {
			for _, c := range re.GetData().GetBitstring() {
				v = v<<8 | uint64(c)
			}
			return nil
		}); err != nil {
		t.Fatal(err)
	}
	return v
}

// tsbStat sums cell i of stats and its parts.
func tsbStat(t *testing.T, p *Program, d *Device, i int64) uint64 {
	t.Helper()
	var n uint64
	for _, c := range p.P4Info().GetCounters() {
		name := c.GetPreamble().GetName()
		if name != "SwordboxIngress.stats" && (len(name) < 27 || name[:26] != "SwordboxIngress.stats_part") {
			continue
		}
		if err := d.ReadCounterEntries(&p4v1.CounterEntry{CounterId: c.GetPreamble().GetId(), Index: &p4v1.Index{Index: i}},
			func(ce *p4v1.CounterEntry) error { n += uint64(ce.GetData().GetPacketCount()); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// secondPass runs frame's second pass with the first pass's decision:
// the chain is live and does not refuse it, decided by the end endLH.
func secondPass(t *testing.T, d *Device, frame []byte, endLH uint32) []out {
	t.Helper()
	data := uint64(1)<<63 | uint64(endLH) // resub_t: live, refused 0, ..., end_lh
	s := d.pool.Get().(*pktState)
	defer d.pool.Put(s)
	d.mu.Lock()
	port, ok := d.passTNAFrom(s, tsbClient, frame, true, data)
	d.mu.Unlock()
	if !ok {
		return nil
	}
	return []out{{port, append([]byte(nil), s.out...)}}
}

func TestTNASwordboxChainSecondPass(t *testing.T) {
	const (
		statChained = 16
		statRefused = 18
		statSteered = 3
	)
	t.Run("the end the first pass saw: chained", func(t *testing.T) {
		p, d := tsbSwitch(t)
		if va := tsbOutVA(t, secondPass(t, d, tsbLink(t, 6, tsbT0, tsbA3), tsbA2.lh)); va != tsbA2.va {
			t.Fatalf("A3's CAS went to %#x, want chained onto A2 %#x", va, tsbA2.va)
		}
		if got := tsbReg(t, p, d, "spec_lh", tsbKeySlot); got != uint64(tsbA3.lh) {
			t.Errorf("chain end %#x, want A3", got)
		}
		if n := tsbStat(t, p, d, statChained); n != 2 {
			t.Errorf("stats[16] = %d, want 2", n)
		}
	})
	// Not chained, and not steered by rule 5 either: the key's chain is
	// live (rule 10), so links after the confirmed tail are in flight.
	t.Run("the end moved since the first pass: not chained, not steered", func(t *testing.T) {
		p, d := tsbSwitch(t)
		chained, steered := tsbStat(t, p, d, statChained), tsbStat(t, p, d, statSteered)
		if va := tsbOutVA(t, secondPass(t, d, tsbLink(t, 6, tsbT0, tsbA3), tsbA1.lh)); va != tsbT0.va {
			t.Fatalf("A3's CAS went to %#x, want unsteered to T0 %#x (the chain is live: no rule 5)", va, tsbT0.va)
		}
		if got := tsbReg(t, p, d, "spec_lh", tsbKeySlot); got != uint64(tsbA2.lh) {
			t.Errorf("chain end %#x, want A2 still", got)
		}
		if n := tsbStat(t, p, d, statChained); n != chained {
			t.Errorf("stats[16] = %d, want %d (not chained)", n, chained)
		}
		if n := tsbStat(t, p, d, statSteered); n != steered {
			t.Errorf("stats[3] = %d, want %d (not steered)", n, steered)
		}
		if d.Stats().RegisterReaccesses != 0 {
			t.Errorf("%d register reaccesses", d.Stats().RegisterReaccesses)
		}
	})
	t.Run("the node was chained since the first pass: refused, not steered", func(t *testing.T) {
		p, d := tsbSwitch(t)
		// A2's CAS again (its client's retry): A2 is marked chained.
		if va := tsbOutVA(t, secondPass(t, d, tsbLink(t, 7, tsbT0, tsbA2), tsbA2.lh)); va != tsbT0.va {
			t.Fatalf("the retry went to %#x, want unsteered to T0 %#x (refused while the chain is live: no rule 5)", va, tsbT0.va)
		}
		if n := tsbStat(t, p, d, statRefused); n != 1 {
			t.Errorf("stats[18] = %d, want 1", n)
		}
		if got := tsbReg(t, p, d, "spec_lh", tsbKeySlot); got != uint64(tsbA2.lh) {
			t.Errorf("chain end %#x, want A2 still", got)
		}
	})
}
