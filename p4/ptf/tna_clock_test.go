package ptf

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/swordbox/swordbox/p4/p4rt"
	"github.com/swordbox/swordbox/p4/target"
	"github.com/swordbox/swordbox/roce"
)

// devPair is the v1model and the TNA program on two bare Devices sharing
// one clock the test sets (microseconds; the TNA program sees it in
// nanoseconds), written to through the v1model program's P4Info.
type devPair struct {
	tb      testing.TB
	now     uint64
	v1, tna *target.Device
	n       *names
	x       *translator
	frames  int
	cfg     steerConfig // the config table's default action as last set
}

func newDevPair(tb testing.TB) *devPair {
	tb.Helper()
	src, info := loadProgram(tb)
	tsrc, tinfo := loadTNA(tb)
	d := &devPair{tb: tb, n: &names{t: tb, info: info}, x: newTranslator(tb, info, tinfo)}
	clock := func() uint64 { return d.now }
	for _, p := range []struct {
		dev  **target.Device
		file string
		src  []byte
	}{{&d.v1, "swordbox.p4", src}, {&d.tna, "tna/swordbox.p4", tsrc}} {
		prog, err := target.Compile(p.file, p.src)
		if err != nil {
			tb.Fatal(err)
		}
		*p.dev = target.NewDevice(prog, target.Options{CPUPort: p4rt.DefaultCPUPort, Now: clock})
	}
	return d
}

// apply makes one write on one device.
func apply(dev *target.Device, ut p4v1.Update_Type, e *p4v1.Entity) error {
	switch v := e.Entity.(type) {
	case *p4v1.Entity_TableEntry:
		return dev.WriteTableEntry(ut, v.TableEntry)
	case *p4v1.Entity_RegisterEntry:
		return dev.WriteRegisterEntry(v.RegisterEntry)
	case *p4v1.Entity_CounterEntry:
		return dev.WriteCounterEntry(v.CounterEntry)
	}
	return fmt.Errorf("devPair: %T is not written by these tests", e.Entity)
}

// write makes the write (v1model IDs) on both devices; both must accept it.
func (d *devPair) write(ut p4v1.Update_Type, e *p4v1.Entity) {
	d.tb.Helper()
	if err := apply(d.v1, ut, e); err != nil {
		d.tb.Fatalf("v1model: %v %v: %v", ut, e, err)
	}
	if err := apply(d.tna, ut, d.x.entity(d.tb, e)); err != nil {
		d.tb.Fatalf("tna: %v %v: %v", ut, e, err)
	}
}

// setConfig sets one parameter of the config table's default action on
// both devices, keeping the others as last set.
func (d *devPair) setConfig(param string, v uint64) {
	d.tb.Helper()
	d.cfg = d.cfg.with(d.tb, param, v)
	d.write(p4v1.Update_MODIFY, &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: d.n.configEntry(d.cfg)}})
}

func (d *devPair) setRegister(name string, index int64, v uint64) {
	d.tb.Helper()
	d.write(p4v1.Update_MODIFY, &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{
		RegisterId: d.n.registerID(name), Index: &p4v1.Index{Index: index},
		Data: &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: enc(v)}},
	}}})
}

func (d *devPair) forward(mac [6]byte, port uint32) {
	d.tb.Helper()
	t, a := prefix+"forward", prefix+"set_egress"
	d.write(p4v1.Update_INSERT, &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{
		TableId: d.n.tableID(t),
		Match:   []*p4v1.FieldMatch{exact(d.n.matchFieldID(t, "hdr.ethernet.dst_addr"), enc(macU64(mac)))},
		Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{
			ActionId: d.n.actionID(a), Params: []*p4v1.Action_Param{{ParamId: d.n.paramID(a, "port"), Value: enc(uint64(port))}},
		}}},
	}}})
}

func (d *devPair) trackEntry(key uint64, slot uint16) *p4v1.Entity {
	t, a := prefix+"tracked_keys", prefix+"track"
	return &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{
		TableId: d.n.tableID(t),
		Match:   []*p4v1.FieldMatch{exact(d.n.matchFieldID(t, "meta.clover_key"), enc(key))},
		Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{
			ActionId: d.n.actionID(a), Params: []*p4v1.Action_Param{{ParamId: d.n.paramID(a, "slot"), Value: enc(uint64(slot))}},
		}}},
	}}}
}

// steer programs the pair as newSteerRig does a rig.
func (d *devPair) steer(mode uint64) {
	d.tb.Helper()
	for _, h := range []host{clientA, clientB, memnode, clientC} {
		d.forward(h.mac, h.port)
	}
	d.setConfig("node_size", nodeSize)
	d.setConfig("tail_ttl", freshTTL)
	d.setConfig("mode", mode)
	d.write(p4v1.Update_INSERT, d.trackEntry(hotKey, keySlot))
}

type outFrame struct {
	port  uint32
	frame []byte
}

// process runs frame through both programs at time at (microseconds),
// checks that they send the same frames out of the same ports and keep
// the same stats, and returns what left.
func (d *devPair) process(at uint64, port uint32, frame []byte) []outFrame {
	d.tb.Helper()
	d.now = at
	d.frames++
	run := func(dev *target.Device) []outFrame {
		var out []outFrame
		dev.Process(port, frame, func(p uint32, f []byte) { out = append(out, outFrame{p, append([]byte(nil), f...)}) })
		return out
	}
	a, b := run(d.v1), run(d.tna)
	if !slices.EqualFunc(a, b, func(x, y outFrame) bool { return x.port == y.port && bytes.Equal(x.frame, y.frame) }) {
		d.tb.Fatalf("frame %d (port %d, t=%dµs) %x:\nv1model sent %x\n    tna sent %x", d.frames, port, at, frame, a, b)
	}
	d.checkCounter("stats", fmt.Sprintf("after frame %d (%x)", d.frames, frame))
	return a
}

// read returns the described non-zero cells of every entity kind the
// programs keep state in, read from dev.
func (d *devPair) read(dev *target.Device, tna bool) []string {
	d.tb.Helper()
	var es []*p4v1.Entity
	must := func(err error) {
		d.tb.Helper()
		if err != nil {
			d.tb.Fatal(err)
		}
	}
	must(dev.ReadRegisterEntries(&p4v1.RegisterEntry{}, func(re *p4v1.RegisterEntry) error {
		if dec(re.GetData().GetBitstring()) != 0 {
			es = append(es, &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: re}})
		}
		return nil
	}))
	must(dev.ReadCounterEntries(&p4v1.CounterEntry{}, func(ce *p4v1.CounterEntry) error {
		if ce.GetData().GetPacketCount() != 0 || ce.GetData().GetByteCount() != 0 {
			es = append(es, &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: ce}})
		}
		return nil
	}))
	must(dev.ReadDirectCounterEntries(&p4v1.DirectCounterEntry{}, func(dc *p4v1.DirectCounterEntry) error {
		es = append(es, &p4v1.Entity{Entity: &p4v1.Entity_DirectCounterEntry{DirectCounterEntry: dc}})
		return nil
	}))
	return d.x.describe(es, tna, tsSameClock)
}

// checkState compares every register cell and counter of the two
// programs, and returns the state (described). It also checks that the
// TNA program accessed no register twice for one packet (a Tofino
// register sits in one stage, which a packet passes once).
func (d *devPair) checkState(what string) []string {
	d.tb.Helper()
	a, b := d.read(d.v1, false), d.read(d.tna, true)
	if !slices.Equal(a, b) {
		d.tb.Fatalf("%s: the programs' state differs:%s", what, diffLines(a, b))
	}
	if n := d.tna.Stats().RegisterReaccesses; n != 0 {
		d.tb.Fatalf("%s: the TNA program accessed a register a second time for one packet, %d times", what, n)
	}
	return a
}

// checkCounter compares one counter of the two programs.
func (d *devPair) checkCounter(name, what string) {
	d.tb.Helper()
	id := d.n.counterID(name)
	read := func(dev *target.Device, ids []uint32, tna bool) []string {
		var es []*p4v1.Entity
		for _, id := range ids {
			if err := dev.ReadCounterEntries(&p4v1.CounterEntry{CounterId: id}, func(ce *p4v1.CounterEntry) error {
				es = append(es, &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: ce}})
				return nil
			}); err != nil {
				d.tb.Fatal(err)
			}
		}
		return d.x.describe(es, tna, tsSameClock)
	}
	tid := d.x.ids[id]
	if a, b := read(d.v1, []uint32{id}, false), read(d.tna, append([]uint32{tid}, d.x.parts[tid]...), true); !slices.Equal(a, b) {
		d.tb.Fatalf("%s: counter %s differs:%s", what, name, diffLines(a, b))
	}
}

// TestTNADifferentialClock runs both programs on one controlled clock:
// TestTailTTLBoundary's scenario (a tail is fresh while now - tail_ts <
// tail_ttl, tail_ts being when its linking CAS was forwarded), then random
// Clover traffic with retransmitted and duplicated requests, failed and
// reordered confirmations, two memory nodes, ages around tail_ttl and
// control-plane changes in between.
func TestTNADifferentialClock(t *testing.T) {
	t.Run("TTL boundary", func(t *testing.T) {
		d := newDevPair(t)
		d.steer(modeBoth)
		const ttl, fwd = 100, 1000
		d.setConfig("tail_ttl", ttl)
		d.process(fwd, 1, nodeWrite(t, qpA, 100, nA1, valueSize))
		d.process(fwd, 1, link(t, qpA, 101, nT0.va, nT0.ev, nA1))
		d.process(fwd+5*ttl, 3, atomicAck(t, qpA, 101, hw(0, 0, nT0.ev)))
		d.process(fwd, 2, nodeWrite(t, qpB, 200, nB1, valueSize))
		steered := 0
		for i, at := range []uint64{fwd, fwd + ttl - 1, fwd + ttl, fwd + 5*ttl} {
			psn := uint32(201 + 2*i)
			c := d.process(at, 2, link(t, qpB, psn, nT0.va, nT0.ev, nB1))
			r := d.process(at, 4, readReq(t, qpC, psn, nB1.va, nodeSize))
			for _, o := range append(c, r...) {
				p, err := roce.Parse(o.frame)
				if err == nil && (p.AtomicETH != nil && p.AtomicETH.VA() == nA1.va || p.RETH != nil && p.RETH.VA() == nA1.va) {
					steered++
				}
			}
		}
		// Both programs steered the CAS and the READ inside the TTL, not
		// after: the scenario did reach the boundary.
		if steered != 4 {
			t.Fatalf("%d requests steered, want 4 (2 inside the TTL, on both programs alike)", steered)
		}
		d.checkState("after the TTL boundary")
	})
	// Chain mode's two freshness tests on the same boundary: an unchained
	// success starts a chain when the key's is not live (now - spec_ts >=
	// tail_ttl, rule 11), and a CAS is chained onto a live one only
	// (rule 10).
	t.Run("chain TTL boundary", func(t *testing.T) {
		const ttl, fwd = 100, 1000
		for _, c := range []struct {
			delta   uint64
			end     node // the chain's end after the second ACK
			chained bool // a CAS at fwd+delta is chained
		}{{ttl - 1, nA1, true}, {ttl, nB1, false}} {
			d := newDevPair(t)
			d.steer(modeBoth | modeChain)
			d.setConfig("tail_ttl", ttl)
			d.process(fwd, 1, nodeWrite(t, qpA, 100, nA1, valueSize))
			d.process(fwd, 2, nodeWrite(t, qpB, 200, nB1, valueSize))
			d.process(fwd, 4, nodeWrite(t, qpC, 300, nA3, valueSize))
			d.process(fwd, 1, link(t, qpA, 101, nT0.va, nT0.ev, nA1))
			d.process(fwd, 2, link(t, qpB, 201, nA1.va, nA1.ev, nB1))
			d.process(fwd+1, 3, atomicAck(t, qpA, 101, hw(0, 0, nT0.ev)))       // A1 confirmed: the chain starts there, spec_ts = fwd
			d.process(fwd+c.delta, 3, atomicAck(t, qpB, 201, hw(0, 0, nA1.ev))) // B1 confirmed: a new chain only if A1's is stale
			d.process(fwd+c.delta, 4, link(t, qpC, 301, nT0.va, nT0.ev, nA3))
			s := d.checkState(fmt.Sprintf("at fwd+%d", c.delta))
			end := fmt.Sprintf("register %sspec_lh[%d] = %d", prefix, keySlot, c.end.lh)
			if c.chained {
				end = fmt.Sprintf("register %sspec_lh[%d] = %d", prefix, keySlot, nA3.lh) // A3 chained onto A1
			}
			chained := fmt.Sprintf("counter %sstats[%d] = 1 packets", prefix, statCASChained)
			if !slices.Contains(s, end) || slices.ContainsFunc(s, func(l string) bool { return strings.HasPrefix(l, chained) }) != c.chained {
				t.Errorf("at fwd+%d: want %q and chained %v; state %v", c.delta, end, c.chained, s)
			}
		}
	})
	// A chain ends (a chained CAS failed) after its key's slot went to
	// another key, which started a chain of its own there: that chain
	// stays (rule 11 ends the chain of the key the CAS linked).
	t.Run("chain end after the slot was reassigned", func(t *testing.T) {
		d := newDevPair(t)
		d.steer(modeBoth | modeChain)
		nO1 := node{0x00007f0000050000, 0x51, 4, otherKey}
		const at = 1000
		d.process(at, 1, nodeWrite(t, qpA, 100, nA1, valueSize))
		d.process(at, 2, nodeWrite(t, qpB, 200, nA3, valueSize))
		d.process(at, 4, nodeWrite(t, qpC, 300, nO1, valueSize))
		d.process(at, 1, link(t, qpA, 101, nT0.va, nT0.ev, nA1))
		d.process(at+1, 3, atomicAck(t, qpA, 101, hw(0, 0, nT0.ev))) // A1 confirmed, hotKey's chain starts there
		d.process(at+2, 2, link(t, qpB, 201, nT0.va, nT0.ev, nA3))   // chained onto A1
		d.write(p4v1.Update_DELETE, d.trackEntry(hotKey, keySlot))
		d.write(p4v1.Update_INSERT, d.trackEntry(otherKey, keySlot))
		d.process(at+3, 4, link(t, qpC, 301, nT0.va, nT0.ev, nO1))
		d.process(at+4, 3, atomicAck(t, qpC, 301, hw(0, 0, nT0.ev)))    // O1 confirmed: otherKey's chain starts in the slot
		d.process(at+5, 3, atomicAck(t, qpB, 201, hw(0x99, 1, nA1.ev))) // A3's chained CAS failed: hotKey's chain ends
		s := d.checkState("at the end")
		for _, want := range []string{
			fmt.Sprintf("register %sspec_valid[%d] = 1", prefix, keySlot),
			fmt.Sprintf("register %sspec_lh[%d] = %d", prefix, keySlot, nO1.lh),
			fmt.Sprintf("counter %sstats[%d] = 1 packets 0 bytes", prefix, statChainBroken),
		} {
			if !slices.Contains(s, want) {
				t.Errorf("want %q; state %v", want, s)
			}
		}
	})
	steps, seeds := 1500, 3
	if testing.Short() {
		steps, seeds = 1000, 1
	}
	for seed := range seeds {
		t.Run(fmt.Sprintf("random traffic seed %d", seed), func(t *testing.T) {
			randomTraffic(t, uint64(seed), steps, false)
		})
	}
	// Chain mode: the seeds together must steer, confirm, see
	// retransmissions, chain, refuse, end chains (both ways), steer READs
	// to a chain's end and vouch for links and READ responses;
	// 1500 frames each, also under -short.
	var chainState []string
	ran := 0
	for seed := range max(seeds, 2) {
		t.Run(fmt.Sprintf("random traffic in chain mode seed %d", seed), func(t *testing.T) {
			ran++
			chainState = append(chainState, randomTraffic(t, uint64(seed), 1500, true)...)
		})
	}
	if ran == 0 {
		return // -run chose other subtests
	}
	// The stats of rules 12 to 14 (docs/swordbox-p4.md, "Counters").
	for _, i := range []int{statCASSteered, statTailConfirmed, statReadsSteered, statRetransmits, statCASChained, statChainBroken,
		statChainRefused, statReadsChainEnd, statVouched, statEndUnconfirmed, statEndChainedFail, statReadsVouched} {
		want := fmt.Sprintf("counter %sstats[%d]", prefix, i)
		if !slices.ContainsFunc(chainState, func(l string) bool { return len(l) > len(want) && l[:len(want)] == want }) {
			t.Errorf("%s stayed 0 in every chain-mode run: the random traffic does not exercise it", want)
		}
	}
}

// sentCAS is a CAS the random traffic sent, and how it was forwarded.
type sentCAS struct {
	q       qp
	psn     uint32
	frame   []byte
	forward uint64 // the compare as forwarded (what a successful CAS's ACK returns)
	n       node   // the node it links
}

// randomTraffic sends steps random frames through a devPair, checking
// every frame out and the stats after each, and all state at the end. In
// chain mode (docs/swordbox-p4.md, "Chain mode") it starts in mode 7,
// changes to any mode 0..7, and draws entry versions from 0..7, so that a
// chain's end often has the version a CAS compares (rule 10's refusal).
func randomTraffic(t *testing.T, seed uint64, steps int, chain bool) []string {
	d := newDevPair(t)
	rng := rand.New(rand.NewPCG(seed, 0x7e57))
	modes, evs := 4, 256
	if chain {
		d.steer(modeBoth | modeChain)
		modes, evs = 8, 8
	} else {
		d.steer(modeBoth)
	}
	const ttl = 400
	d.setConfig("tail_ttl", ttl)
	d.write(p4v1.Update_INSERT, d.trackEntry(otherKey, keySlot+1))
	slotKey := uint64(otherKey) // the key tracked at keySlot+1
	// Two memory nodes (memnode and clientC's port as a second one), four
	// QPs to the first (two of client A's host) and one to the second.
	qpA2 := qp{clientA, memnode, 49155, 0x14}
	qpM2 := qp{clientB, clientC, 49170, 0x41}
	qps := []qp{qpA, qpB, qpC, qpA2, qpM2}
	keys := []uint64{hotKey, hotKey, hotKey, otherKey, coldKey} // most nodes of one key: its tail gets steered to
	var nodes []node
	for i := range 24 {
		va := uint64(0x00007f0000010000) + uint64(i)*0x1000
		if i%5 == 4 {
			va += uint64(i) << 32 // another high half
		}
		nodes = append(nodes, node{va: va, lh: 0x100 + uint32(i), ev: uint8(rng.IntN(evs)), key: keys[rng.IntN(len(keys))]})
	}
	psn := map[qp]uint32{}
	var sent []sentCAS
	var acked []sentCAS // the CASes whose ACK said success, in order
	now := uint64(1000)
	pick := func() node { return nodes[rng.IntN(len(nodes))] }
	for range steps {
		// Mostly a few microseconds between frames; now and then an age
		// around tail_ttl, or well past it.
		switch r := rng.IntN(32); {
		case r == 0:
			now += uint64(rng.IntN(3 * ttl))
		case r == 1:
			now += ttl - 2 + uint64(rng.IntN(4))
		default:
			now += uint64(rng.IntN(4))
		}
		q := qps[rng.IntN(len(qps))]
		psn[q]++
		p := psn[q] & 0xffffff
		switch op := rng.IntN(100); {
		case op < 20: // a node WRITE (sometimes WRITE_FIRST, sometimes of another size)
			n, size, wop := pick(), valueSize, roce.OpRCWriteOnly
			if rng.IntN(10) == 0 {
				size = valueSize - 8
			}
			if rng.IntN(10) == 0 {
				wop = roce.OpRCWriteFirst
			}
			d.process(now, q.from.port, writeOf(t, q, p, wop, n.va, nodePayload(n, size)))
		case op < 45: // a linking CAS, aimed at some node
			target, n := pick(), pick()
			f := link(t, q, p, target.va, target.ev, n)
			if rng.IntN(8) == 0 && len(sent) > 0 {
				// The same client, server and PSN as an earlier CAS with
				// other content (another QP of the host, or a reused PSN).
				s := sent[rng.IntN(len(sent))]
				q, p = s.q, s.psn
				f = link(t, q, p, target.va, target.ev, n)
			}
			s := casForwarded(t, d, now, q, p, f)
			s.n = n
			sent = append(sent, s)
		case op < 52 && len(sent) > 0: // a retransmission, exactly as the client first sent it
			s := sent[rng.IntN(len(sent))]
			d.process(now, s.q.from.port, s.frame)
		case op < 72 && len(sent) > 0: // an ATOMIC ACK (mostly of a recent CAS): success, failure or a duplicate
			s := sent[max(0, len(sent)-1-rng.IntN(4))]
			if rng.IntN(4) == 0 {
				s = sent[rng.IntN(len(sent))]
			}
			orig := s.forward
			if rng.IntN(3) == 0 {
				orig = hw(pick().lh, uint8(rng.IntN(256)), uint8(rng.IntN(256)))
			} else {
				acked = append(acked, s)
			}
			d.process(now, s.q.to.port, atomicAck(t, s.q, s.psn, orig))
		case op < 88 && rng.IntN(3) == 0: // a READ response (rule 14), mostly of a node whose link's ACK said success
			n, rq := pick(), q
			if rng.IntN(4) != 0 && len(acked) > 0 {
				s := acked[max(0, len(acked)-1-rng.IntN(3))]
				n, rq = s.n, s.q
			}
			payload := nodePayload(n, valueSize)
			switch r := rng.IntN(10); {
			case r == 0: // another entry version than the node's
				payload = nodePayload(node{n.va, n.lh, n.ev + 1, n.key}, valueSize)
			case r == 1: // shorter than a node, with and without a node prefix
				payload = payload[:[]int{nodeSize - 8, 24, 20, 8}[rng.IntN(4)]]
			}
			d.process(now, rq.to.port, readResponse(t, rq.back(), p, payload))
		case op < 88: // a READ of a node (or of another size)
			n, size := pick(), uint32(nodeSize)
			if rng.IntN(8) == 0 {
				size = 8
			}
			d.process(now, q.from.port, readReq(t, q, p, n.va, size))
		case op < 91:
			d.process(now, q.from.port, fetchAdd(t, q, p, pick().va, 1))
		case op < 94: // a delete CAS, and a CAS of a plain word
			d.process(now, q.from.port, cas(t, q, p, pick().va, hw(0, 0, 3), hw(lhDeleted, 0, 3)))
			d.process(now, q.from.port, cas(t, q, p+1, pick().va, 40, 41))
		case op < 96: // a PacketOut of a CAS (never steered)
			out, err := d.v1.Program().PacketOutFrame(nil, []*p4v1.PacketMetadata{{MetadataId: 1, Value: enc(uint64(memnode.port))}},
				link(t, q, p, pick().va, 1, pick()))
			if err != nil {
				t.Fatal(err)
			}
			d.process(now, p4rt.DefaultCPUPort, out)
		case op < 97:
			m := uint64(rng.IntN(modes))
			if chain && rng.IntN(4) != 0 {
				m = modeChain | 1 | uint64(rng.IntN(2))*2 // mostly 5 or 7
			}
			d.setConfig("mode", m)
		case op < 98: // the controller reassigns a slot
			d.setRegister("tail_valid", int64(keySlot+rng.IntN(2)), 0)
		case op < 99: // untrack and track again; in chain mode sometimes another key in the slot
			d.write(p4v1.Update_DELETE, d.trackEntry(slotKey, keySlot+1))
			if chain && rng.IntN(2) == 0 {
				slotKey = otherKey + coldKey - slotKey
			}
			d.write(p4v1.Update_INSERT, d.trackEntry(slotKey, keySlot+1))
		default:
			d.process(now, q.from.port, nodeWrite(t, q, p, pick(), valueSize))
		}
	}
	// The traffic did what it is for: both programs steered and confirmed.
	s := d.checkState("at the end")
	t.Logf("seed %d, %d frames: %s", seed, d.frames, strings.Join(slices.DeleteFunc(slices.Clone(s), func(l string) bool {
		return !strings.HasPrefix(l, "counter "+prefix+"stats[")
	}), "; "))
	if chain {
		return s // TestTNADifferentialClock checks the chain-mode runs together
	}
	for _, i := range []int{statCASSteered, statTailConfirmed, statReadsSteered, statRetransmits, statReadsVouched} {
		want := fmt.Sprintf("counter %sstats[%d]", prefix, i)
		if !slices.ContainsFunc(s, func(l string) bool { return len(l) > len(want) && l[:len(want)] == want }) {
			t.Errorf("seed %d: %s stayed 0: the random traffic does not exercise it", seed, want)
		}
	}
	return s
}

// readResponse is the memory node's READ_RESPONSE_ONLY on q (the
// response direction) with PSN psn, carrying payload.
func readResponse(t testing.TB, q qp, psn uint32, payload []byte) []byte {
	pad := (4 - len(payload)%4) % 4
	return q.build(t, roce.Fields{Opcode: roce.OpRCReadResponseOnly, PSN: psn, Syndrome: roce.ACKSyndrome(roce.CreditInvalid), MSN: 1,
		Payload: payload, PadCnt: uint8(pad)})
}

// casForwarded sends a CAS and returns it with the compare as forwarded.
func casForwarded(t *testing.T, d *devPair, now uint64, q qp, p uint32, f []byte) sentCAS {
	t.Helper()
	s := sentCAS{q: q, psn: p, frame: f}
	for _, o := range d.process(now, q.from.port, f) {
		if pk, err := roce.Parse(o.frame); err == nil && pk.AtomicETH != nil {
			s.forward = pk.AtomicETH.Compare()
		}
	}
	return s
}
