package ptf

import (
	"bytes"
	"hash/crc32"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/swordbox/swordbox/roce"
)

// The rack of these tests: two clients and a memory node, one per port.
type host struct {
	mac  [6]byte
	ip   [4]byte
	port uint32
}

var (
	clientA = host{[6]byte{2, 0, 0, 0, 0, 1}, [4]byte{10, 0, 0, 1}, 1}
	clientB = host{[6]byte{2, 0, 0, 0, 0, 2}, [4]byte{10, 0, 0, 2}, 2}
	memnode = host{[6]byte{2, 0, 0, 0, 0, 3}, [4]byte{10, 0, 0, 3}, 3}
	clientC = host{[6]byte{2, 0, 0, 0, 0, 4}, [4]byte{10, 0, 0, 4}, 4}
)

const (
	valueSize = 64
	nodeSize  = 16 + valueSize
	rkey      = 0x1234
	keySlot   = 7
	hotKey    = 0x1122334455667788
	coldKey   = 0x0badc0ffee
	modeWrite = 1
	modeRead  = 2

	// Indices of the stats counter (docs/swordbox-p4.md).
	statNodeWrites   = 1
	statCAS          = 2
	statCASSteered   = 3
	statReadsSteered = 5
	statReadMisses   = 6
	statRetransmits  = 7
	statAcksCleared  = 8
)

// Node VAs: the initial tail T0 and the nodes the clients append. The high
// 32 bits are non-zero so that both halves of the cached VA matter.
const (
	vaT0 = 0x00007f0000010000
	vaA1 = 0x00007f0000020000
	vaA3 = 0x00007f0000023000
	vaB1 = 0x00007f1100030000
)

// qp is one direction of an RC connection as the switch sees it.
type qp struct {
	from, to host
	sport    uint16
	destQP   uint32
}

var (
	qpA    = qp{clientA, memnode, 49152, 0x11} // client A -> memory node QP 0x11
	qpB    = qp{clientB, memnode, 49153, 0x12}
	qpC    = qp{clientC, memnode, 49154, 0x13}
	ackToA = qp{memnode, clientA, 50000, 0x21} // memory node -> client A's QP 0x21
)

func (q qp) build(t testing.TB, f roce.Fields) []byte {
	t.Helper()
	f.DstMAC, f.SrcMAC, f.SrcIP, f.DstIP = q.to.mac, q.from.mac, q.from.ip, q.to.ip
	f.TTL, f.DontFragment, f.SrcPort = 64, true, q.sport
	f.MigReq, f.PKey, f.DestQP = true, 0xffff, q.destQP
	buf := make([]byte, roce.FrameLen(&f))
	n, err := roce.Build(buf, &f)
	if err != nil {
		t.Fatalf("build %v: %v", f.Opcode, err)
	}
	return buf[:n]
}

// hw is a Clover header word (docs/clover-layout.md).
func hw(nextLH uint32, nextVer, entryVer uint8) uint64 {
	return uint64(nextLH)<<28 | uint64(nextVer)<<19 | uint64(entryVer)<<11
}

// nodeWrite is the WRITE of a fresh node (next NULL, own entry version ev).
func nodeWrite(t testing.TB, q qp, psn uint32, va, key uint64, ev uint8, value int) []byte {
	payload := make([]byte, 16+value)
	le64(payload[0:], hw(0, 0, ev))
	le64(payload[8:], key)
	for i := 16; i < len(payload); i++ {
		payload[i] = byte(i)
	}
	return q.build(t, roce.Fields{Opcode: roce.OpRCWriteOnly, AckReq: true, PSN: psn, VA: va, RKey: rkey, DMALen: uint32(len(payload)), Payload: payload})
}

func cas(t testing.TB, q qp, psn uint32, va, compare, swap uint64) []byte {
	return q.build(t, roce.Fields{Opcode: roce.OpRCCompareSwap, AckReq: true, PSN: psn, VA: va, RKey: rkey, Compare: compare, SwapAdd: swap})
}

func readReq(t testing.TB, q qp, psn uint32, va uint64, length uint32) []byte {
	return q.build(t, roce.Fields{Opcode: roce.OpRCReadRequest, AckReq: true, PSN: psn, VA: va, RKey: rkey, DMALen: length})
}

func atomicAck(t testing.TB, q qp, psn uint32, orig uint64) []byte {
	return q.build(t, roce.Fields{Opcode: roce.OpRCAtomicAcknowledge, PSN: psn, Syndrome: roce.ACKSyndrome(roce.CreditInvalid), MSN: 1, Orig: orig})
}

func le64(b []byte, v uint64) {
	for i := 0; i < 8; i++ {
		b[i] = byte(v >> (8 * i))
	}
}

// newSteerRig is a switch with the four hosts forwarded, the size filter
// set to the node size, hotKey tracked at keySlot and the given mode.
func newSteerRig(t testing.TB, mode uint64) *rig {
	return programSteer(newRig(t, 1, 2, 3, 4), mode)
}

func programSteer(r *rig, mode uint64) *rig {
	for _, h := range []host{clientA, clientB, memnode, clientC} {
		r.forward(h.mac, h.port)
	}
	r.setRegister("node_size", 0, nodeSize)
	r.setRegister("steer_mode", 0, mode)
	r.track(hotKey, keySlot)
	return r
}

// appendA makes client A append node A1 (entry version 1) after T0
// (entry version 5): its node WRITE, then its CAS, both forwarded as is.
// The switch learns A1 as hotKey's tail.
func appendA(t *testing.T, r *rig) {
	t.Helper()
	r.expectSame(1, 3, nodeWrite(t, qpA, 100, vaA1, hotKey, 1, valueSize), "A's node WRITE")
	r.expectSame(1, 3, cas(t, qpA, 101, vaT0, hw(0, 0, 5), hw(0xA1, 1, 5)), "A's CAS (no cached tail yet)")
}

func (r *rig) tail(slot int64) (va uint64, ver uint64) {
	return r.register("tail_va_hi", slot)<<32 | r.register("tail_va_lo", slot), r.register("tail_ver", slot)
}

// sameExcept checks that got equals want outside the byte ranges given.
func sameExcept(t *testing.T, got, want []byte, ranges ...[2]int) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("length %d, want %d", len(got), len(want))
	}
	g, w := append([]byte(nil), got...), append([]byte(nil), want...)
	for _, rg := range ranges {
		for i := rg[0]; i < rg[1]; i++ {
			g[i], w[i] = 0, 0
		}
	}
	if !bytes.Equal(g, w) {
		t.Fatalf("frame changed outside the rewritten fields:\n got %x\nwant %x", got, want)
	}
}

func TestStaleCASSteered(t *testing.T) {
	r := newSteerRig(t, modeWrite)
	appendA(t, r)
	if va, ver := r.tail(keySlot); va != vaA1 || ver != 1 {
		t.Fatalf("tail after A's CAS = %#x ev %d, want %#x ev 1", va, ver, vaA1)
	}

	// B appends B1 (entry version 2) after the stale tail T0.
	r.expectSame(2, 3, nodeWrite(t, qpB, 200, vaB1, hotKey, 2, valueSize), "B's node WRITE")
	in := cas(t, qpB, 201, vaT0, hw(0, 0, 5), hw(0xB1, 2, 5))
	r.send(2, in)
	out := r.expect(3)

	p, err := roce.Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.AtomicETH.VA(); got != vaA1 {
		t.Errorf("steered CAS VA = %#x, want the cached tail %#x", got, vaA1)
	}
	if got, want := p.AtomicETH.Compare(), hw(0, 0, 1); got != want {
		t.Errorf("compare = %#x, want %#x (entry version of the tail)", got, want)
	}
	if got, want := p.AtomicETH.SwapAdd(), hw(0xB1, 2, 1); got != want {
		t.Errorf("swap = %#x, want %#x (next LH and version kept, entry version of the tail)", got, want)
	}
	// Nothing else changes; in particular the ICRC is the client's (the
	// switch does not recompute it, as on Tofino), so it no longer verifies.
	atomicOff := p.ExtOff
	sameExcept(t, out, in, [2]int{atomicOff, atomicOff + 8}, [2]int{atomicOff + 12, atomicOff + 28})
	if p.ICRCOK() {
		t.Error("the ICRC of the steered CAS verifies: the switch must not recompute it")
	}

	if got := r.counter("key_cas_steered", keySlot); got != 1 {
		t.Errorf("key_cas_steered[%d] = %d, want 1", keySlot, got)
	}
	if got := r.counter("stats", statCASSteered); got != 1 {
		t.Errorf("stats[CAS steered] = %d, want 1", got)
	}
	if got := r.counter("stats", statCAS); got != 2 {
		t.Errorf("stats[CAS] = %d, want 2", got)
	}
	if va, ver := r.tail(keySlot); va != vaB1 || ver != 2 {
		t.Errorf("tail after B's CAS = %#x ev %d, want %#x ev 2", va, ver, vaB1)
	}
	if got := r.register("tail_dst_ip", keySlot); got != 0x0a000003 {
		t.Errorf("tail_dst_ip = %#x, want 10.0.0.3", got)
	}
	r.expectQuiet()
}

func TestFreshCASUntouched(t *testing.T) {
	r := newSteerRig(t, modeWrite)
	appendA(t, r)
	r.expectSame(2, 3, nodeWrite(t, qpB, 200, vaB1, hotKey, 2, valueSize), "B's node WRITE")
	r.expectSame(2, 3, cas(t, qpB, 201, vaA1, hw(0, 0, 1), hw(0xB1, 2, 1)), "B's CAS on the current tail")
	if got := r.counter("key_cas_steered", keySlot); got != 0 {
		t.Errorf("key_cas_steered = %d, want 0", got)
	}
	if va, ver := r.tail(keySlot); va != vaB1 || ver != 2 {
		t.Errorf("tail = %#x ev %d, want %#x ev 2", va, ver, vaB1)
	}
	// A second CAS of B for the same WRITE (Clover's own retry, new PSN)
	// is not steered: the pending node was consumed.
	r.expectSame(2, 3, cas(t, qpB, 202, vaT0, hw(0, 0, 5), hw(0xB1, 2, 5)), "B's second CAS for one WRITE")
}

func TestRetransmittedCASNotSteered(t *testing.T) {
	r := newSteerRig(t, modeWrite)
	appendA(t, r)
	r.expectSame(2, 3, nodeWrite(t, qpB, 200, vaB1, hotKey, 2, valueSize), "B's node WRITE")
	r.send(2, cas(t, qpB, 201, vaT0, hw(0, 0, 5), hw(0xB1, 2, 5)))
	if p, _ := roce.Parse(r.expect(3)); p.AtomicETH.VA() != vaA1 {
		t.Fatalf("B's CAS was not steered (VA %#x)", p.AtomicETH.VA())
	}
	// A's CAS was lost after the switch: A retransmits its WRITE and CAS
	// (go-back-N, same PSNs). Neither is steered nor changes the cache.
	r.expectSame(1, 3, nodeWrite(t, qpA, 100, vaA1, hotKey, 1, valueSize), "A's retransmitted WRITE")
	r.expectSame(1, 3, cas(t, qpA, 101, vaT0, hw(0, 0, 5), hw(0xA1, 1, 5)), "A's retransmitted CAS")
	if got := r.counter("key_retransmits", keySlot); got != 1 {
		t.Errorf("key_retransmits = %d, want 1", got)
	}
	if got := r.counter("stats", statRetransmits); got != 2 {
		t.Errorf("stats[retransmissions] = %d, want 2 (WRITE and CAS)", got)
	}
	if va, ver := r.tail(keySlot); va != vaB1 || ver != 2 {
		t.Errorf("tail = %#x ev %d, want %#x ev 2 (unchanged by the retransmission)", va, ver, vaB1)
	}
	if got := r.counter("key_cas_steered", keySlot); got != 1 {
		t.Errorf("key_cas_steered = %d, want 1", got)
	}
}

func TestUntrackedKeyUntouched(t *testing.T) {
	r := newSteerRig(t, modeWrite|modeRead)
	r.expectSame(1, 3, nodeWrite(t, qpA, 100, vaA1, coldKey, 1, valueSize), "A's node WRITE")
	r.expectSame(1, 3, cas(t, qpA, 101, vaT0, hw(0, 0, 5), hw(0xA1, 1, 5)), "A's CAS")
	r.expectSame(2, 3, nodeWrite(t, qpB, 200, vaB1, coldKey, 2, valueSize), "B's node WRITE")
	r.expectSame(2, 3, cas(t, qpB, 201, vaT0, hw(0, 0, 5), hw(0xB1, 2, 5)), "B's stale CAS of an untracked key")
	r.expectSame(4, 3, readReq(t, qpC, 300, vaA1, nodeSize), "READ of an untracked key's node")
	for i, want := range map[int64]int64{statNodeWrites: 0, statCASSteered: 0, statReadsSteered: 0, statReadMisses: 1} {
		if got := r.counter("stats", i); got != want {
			t.Errorf("stats[%d] = %d, want %d", i, got, want)
		}
	}
	if got := r.register("tail_valid", keySlot); got != 0 {
		t.Errorf("tail_valid of the tracked slot = %d, want 0", got)
	}
}

// readSetup makes A append A1 after T0 and then A3 after A1: A1 is a stale
// node of hotKey, A3 its tail.
func readSetup(t *testing.T, r *rig) {
	t.Helper()
	appendA(t, r)
	r.expectSame(1, 3, nodeWrite(t, qpA, 102, vaA3, hotKey, 3, valueSize), "A's second node WRITE")
	r.expectSame(1, 3, cas(t, qpA, 103, vaA1, hw(0, 0, 1), hw(0xA3, 3, 1)), "A's second CAS")
}

func TestSizeFilter(t *testing.T) {
	r := newSteerRig(t, modeWrite|modeRead)
	readSetup(t, r)
	// B writes a node of another size: not a node WRITE for the switch, so
	// its stale CAS passes untouched.
	r.expectSame(2, 3, nodeWrite(t, qpB, 200, vaB1, hotKey, 2, valueSize/2), "B's WRITE of another size")
	r.expectSame(2, 3, cas(t, qpB, 201, vaT0, hw(0, 0, 5), hw(0xB1, 2, 5)), "B's CAS after a WRITE of another size")
	// A READ of a stale node with another length is untouched; the same
	// READ with the node length is steered.
	r.expectSame(4, 3, readReq(t, qpC, 300, vaA1, nodeSize/2), "READ of another size")
	r.send(4, readReq(t, qpC, 301, vaA1, nodeSize))
	if p, _ := roce.Parse(r.expect(3)); p.RETH.VA() != vaA3 {
		t.Fatalf("node-sized READ not steered: VA %#x, want %#x", p.RETH.VA(), vaA3)
	}
	if got := r.counter("stats", statCASSteered); got != 0 {
		t.Errorf("stats[CAS steered] = %d, want 0", got)
	}
	if va, _ := r.tail(keySlot); va != vaA3 {
		t.Errorf("tail = %#x, want %#x", va, vaA3)
	}
}

func TestReadSteered(t *testing.T) {
	r := newSteerRig(t, modeWrite|modeRead)
	readSetup(t, r)
	in := readReq(t, qpC, 300, vaA1, nodeSize)
	r.send(4, in)
	out := r.expect(3)
	p, err := roce.Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	if p.RETH.VA() != vaA3 {
		t.Fatalf("READ VA = %#x, want the tail %#x", p.RETH.VA(), vaA3)
	}
	sameExcept(t, out, in, [2]int{p.ExtOff, p.ExtOff + 8})
	if got := r.counter("key_reads_steered", keySlot); got != 1 {
		t.Errorf("key_reads_steered = %d, want 1", got)
	}
	// A READ of the tail itself is left alone and is not a miss.
	r.expectSame(4, 3, readReq(t, qpC, 301, vaA3, nodeSize), "READ of the tail")
	if got := r.counter("stats", statReadsSteered); got != 1 {
		t.Errorf("stats[reads steered] = %d, want 1", got)
	}
	if got := r.counter("stats", statReadMisses); got != 0 {
		t.Errorf("stats[read misses] = %d, want 0", got)
	}
}

func TestReadMissUntouched(t *testing.T) {
	r := newSteerRig(t, modeWrite|modeRead)
	readSetup(t, r)
	r.expectSame(4, 3, readReq(t, qpC, 300, 0x00007f0000099000, nodeSize), "READ of an address never written")
	if got := r.counter("stats", statReadMisses); got != 1 {
		t.Errorf("stats[read misses] = %d, want 1", got)
	}
	// With read steering off, even a stale node READ passes untouched.
	r.setRegister("steer_mode", 0, modeWrite)
	r.expectSame(4, 3, readReq(t, qpC, 301, vaA1, nodeSize), "stale READ with read steering off")
	if got := r.counter("stats", statReadsSteered); got != 0 {
		t.Errorf("stats[reads steered] = %d, want 0", got)
	}
}

func TestOutstandingCASRecordedAndCleared(t *testing.T) {
	r := newSteerRig(t, modeWrite)
	appendA(t, r)
	out := r.registerNonZero("cas_out_valid")
	if len(out) != 1 {
		t.Fatalf("outstanding CAS entries = %v, want one", out)
	}
	var idx int64
	for i := range out {
		idx = i
	}
	for name, want := range map[string]uint64{
		"cas_out_src_mac": macU64(clientA.mac), "cas_out_dst_mac": macU64(memnode.mac),
		"cas_out_src_ip": 0x0a000001, "cas_out_dst_ip": 0x0a000003, "cas_out_udp_sport": 49152,
		"cas_out_dst_qp": 0x11, "cas_out_psn": 101, "cas_out_pkey": 0xffff, "cas_out_va": vaT0,
		"cas_out_rkey": rkey, "cas_out_swap": hw(0xA1, 1, 5), "cas_out_compare": hw(0, 0, 5),
	} {
		if got := r.register(name, idx); got != want {
			t.Errorf("%s[%d] = %#x, want %#x", name, idx, got, want)
		}
	}
	if ts := r.register("cas_out_ts", idx); ts == 0 {
		t.Log("cas_out_ts is 0: the target's ingress_global_timestamp starts at 0")
	}

	// An ATOMIC ACK of another PSN does not clear it; the one of the CAS does.
	r.expectSame(3, 1, atomicAck(t, ackToA, 99, 0), "ATOMIC ACK of another PSN")
	if got := r.register("cas_out_valid", idx); got != 1 {
		t.Fatalf("cas_out_valid = %d after an unrelated ACK, want 1", got)
	}
	r.expectSame(3, 1, atomicAck(t, ackToA, 101, hw(0, 0, 5)), "ATOMIC ACK of the CAS")
	if got := r.register("cas_out_valid", idx); got != 0 {
		t.Errorf("cas_out_valid = %d after the ATOMIC ACK, want 0", got)
	}
	if got := r.counter("stats", statAcksCleared); got != 1 {
		t.Errorf("stats[acks cleared] = %d, want 1", got)
	}

	// A steered CAS is recorded as forwarded (after the rewrite).
	r.expectSame(2, 3, nodeWrite(t, qpB, 200, vaB1, hotKey, 2, valueSize), "B's node WRITE")
	r.send(2, cas(t, qpB, 201, vaT0, hw(0, 0, 5), hw(0xB1, 2, 5)))
	r.expect(3)
	out = r.registerNonZero("cas_out_valid")
	if len(out) != 1 {
		t.Fatalf("outstanding CAS entries = %v, want one (B's)", out)
	}
	for i := range out {
		if got := r.register("cas_out_va", i); got != vaA1 {
			t.Errorf("B's outstanding CAS VA = %#x, want the steered %#x", got, vaA1)
		}
		if got := r.register("cas_out_compare", i); got != hw(0, 0, 1) {
			t.Errorf("B's outstanding CAS compare = %#x, want %#x", got, hw(0, 0, 1))
		}
	}
}

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

	// send_to_cpu: PacketIn with ingress_port.
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

	// PacketOut to port 2, bypassing the forward table.
	out := frame([6]byte{2, 7, 7, 7, 7, 7}, 5)
	if err := r.stream.Send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Packet{Packet: &p4v1.PacketOut{
		Payload: out, Metadata: []*p4v1.PacketMetadata{{MetadataId: 1, Value: enc(2)}},
	}}}); err != nil {
		t.Fatal(err)
	}
	if got := r.expect(2); !bytes.Equal(got, out) {
		t.Errorf("PacketOut frame %x, want %x", got, out)
	}

	// The direct counter of the forward entry counted both frames to B.
	tid := r.tableID(prefix + "forward")
	es := r.read(&p4v1.Entity{Entity: &p4v1.Entity_DirectCounterEntry{DirectCounterEntry: &p4v1.DirectCounterEntry{
		TableEntry: &p4v1.TableEntry{TableId: tid, Match: []*p4v1.FieldMatch{exact(r.matchFieldID(prefix+"forward", "hdr.ethernet.dst_addr"), enc(macU64(clientB.mac)))}},
	}}})
	if len(es) != 1 || es[0].GetDirectCounterEntry().GetData().GetPacketCount() != 2 {
		t.Errorf("direct counter of forward[B] = %v, want 2 packets", es)
	}
	r.expectQuiet()
}

func TestNoSteeringAcrossMemoryNodes(t *testing.T) {
	r := newSteerRig(t, modeWrite|modeRead)
	appendA(t, r) // hotKey's tail A1 lives on memnode (10.0.0.3)
	// B appends a node on another memory node (clientC's port plays it) with
	// a stale CAS there: the cached tail is on another node, so the CAS is
	// not moved across nodes.
	mem2 := qp{clientB, clientC, 49160, 0x31}
	r.expectSame(2, 4, nodeWrite(t, mem2, 400, vaB1, hotKey, 2, valueSize), "B's node WRITE to the second memory node")
	r.expectSame(2, 4, cas(t, mem2, 401, vaT0, hw(0, 0, 5), hw(0xB1, 2, 5)), "B's CAS on the second memory node")
	if got := r.counter("stats", statCASSteered); got != 0 {
		t.Errorf("stats[CAS steered] = %d, want 0", got)
	}
	// The tail moved to the second node; a READ of A1 on the first node
	// is a miss, not a READ steered to an address of another node.
	if got := r.register("tail_dst_ip", keySlot); got != 0x0a000004 {
		t.Fatalf("tail_dst_ip = %#x, want 10.0.0.4", got)
	}
	r.expectSame(4, 3, readReq(t, qpC, 300, vaA1, nodeSize), "READ of A1 on the first node")
	if got := r.counter("stats", statReadMisses); got != 1 {
		t.Errorf("stats[read misses] = %d, want 1", got)
	}
}

// Only an append CAS links the connection's pending node: a CAS whose
// compare has a non-NULL next (not an append) passes untouched and leaves
// the pending node for the real one.
func TestOnlyAnAppendCASIsSteered(t *testing.T) {
	r := newSteerRig(t, modeWrite)
	appendA(t, r)
	r.expectSame(2, 3, nodeWrite(t, qpB, 200, vaB1, hotKey, 2, valueSize), "B's node WRITE (entry version 2)")
	r.expectSame(2, 3, cas(t, qpB, 201, vaT0, hw(0x99, 0, 5), hw(0xB1, 2, 5)), "CAS that is not an append (next LH set)")
	r.expectSame(2, 3, cas(t, qpB, 202, vaT0, hw(0, 3, 5), hw(0xB1, 2, 5)), "CAS that is not an append (next version set)")
	if va, _ := r.tail(keySlot); va != vaA1 {
		t.Fatalf("tail = %#x after unrelated CAS, want %#x", va, vaA1)
	}
	r.send(2, cas(t, qpB, 203, vaT0, hw(0, 0, 5), hw(0xB1, 2, 5)))
	if p, _ := roce.Parse(r.expect(3)); p.AtomicETH.VA() != vaA1 {
		t.Fatalf("the append CAS was not steered: VA %#x", p.AtomicETH.VA())
	}
	if va, ver := r.tail(keySlot); va != vaB1 || ver != 2 {
		t.Errorf("tail = %#x ev %d, want %#x ev 2", va, ver, vaB1)
	}
}

// The mode register: off forwards everything untouched and learns nothing;
// read-only steering learns tails at the CAS but rewrites only READs.
func TestSteeringModes(t *testing.T) {
	t.Run("off", func(t *testing.T) {
		r := newSteerRig(t, 0)
		appendA(t, r)
		r.expectSame(2, 3, nodeWrite(t, qpB, 200, vaB1, hotKey, 2, valueSize), "B's node WRITE")
		r.expectSame(2, 3, cas(t, qpB, 201, vaT0, hw(0, 0, 5), hw(0xB1, 2, 5)), "stale CAS with steering off")
		r.expectSame(4, 3, readReq(t, qpC, 300, vaA1, nodeSize), "stale READ with steering off")
		if got := r.register("tail_valid", keySlot); got != 0 {
			t.Errorf("tail_valid = %d with steering off, want 0", got)
		}
		if got := r.registerNonZero("cas_out_valid"); len(got) != 0 {
			t.Errorf("outstanding CAS recorded with steering off: %v", got)
		}
	})
	t.Run("read only", func(t *testing.T) {
		r := newSteerRig(t, modeRead)
		readSetup(t, r)
		r.expectSame(2, 3, nodeWrite(t, qpB, 200, vaB1, hotKey, 2, valueSize), "B's node WRITE")
		r.expectSame(2, 3, cas(t, qpB, 201, vaA1, hw(0, 0, 1), hw(0xB1, 2, 1)), "stale CAS with write steering off")
		if va, _ := r.tail(keySlot); va != vaB1 {
			t.Fatalf("tail = %#x, want %#x (learned without write steering)", va, vaB1)
		}
		r.send(4, readReq(t, qpC, 300, vaA1, nodeSize))
		if p, _ := roce.Parse(r.expect(3)); p.RETH.VA() != vaB1 {
			t.Errorf("READ VA = %#x, want the tail %#x", p.RETH.VA(), vaB1)
		}
		if got := r.registerNonZero("cas_out_valid"); len(got) != 0 {
			t.Errorf("outstanding CAS recorded without write steering: %v", got)
		}
	})
}

// connSlot computes swordbox.p4's connection slot of a 4-tuple the way the
// target hashes (fields concatenated MSB first: 13 bytes; crc32 IEEE;
// tag = 1 + crc mod (2^32-1); slot = tag mod 1024).
func connSlot(q qp) uint32 {
	b := []byte{q.from.ip[0], q.from.ip[1], q.from.ip[2], q.from.ip[3], q.to.ip[0], q.to.ip[1], q.to.ip[2], q.to.ip[3],
		byte(q.sport >> 8), byte(q.sport), byte(q.destQP >> 16), byte(q.destQP >> 8), byte(q.destQP)}
	tag := 1 + crc32.ChecksumIEEE(b)%0xFFFFFFFF
	return tag & 1023
}

// A connection whose slot is taken over by another 4-tuple forgets its
// pending node: its CAS is then not steered (never steered with another
// connection's state).
func TestConnectionSlotTakeover(t *testing.T) {
	collider := func(t *testing.T, of qp) qp {
		t.Helper()
		other := qp{clientC, memnode, 0, 0x13}
		for p := 1; ; p++ {
			other.sport = uint16(50000 + p)
			if connSlot(other) == connSlot(of) {
				return other
			}
			if p > 1<<15 {
				t.Fatal("no colliding 4-tuple found")
			}
		}
	}
	// A request that is not a node WRITE never evicts the owner of a slot: it
	// passes untracked, and the owner's node WRITE and CAS stay paired.
	t.Run("request does not evict", func(t *testing.T) {
		r := newSteerRig(t, modeWrite)
		appendA(t, r)
		other := collider(t, qpB)
		r.expectSame(2, 3, nodeWrite(t, qpB, 200, vaB1, hotKey, 2, valueSize), "B's node WRITE")
		r.expectSame(4, 3, readReq(t, other, 7, 0x00007f0000050000, 8), "C's request in B's slot")
		r.send(2, cas(t, qpB, 201, vaT0, hw(0, 0, 5), hw(0xB1, 2, 5)))
		if p, _ := roce.Parse(r.expect(3)); p.AtomicETH.VA() != vaA1 {
			t.Fatalf("B's CAS not steered after C's request: VA %#x, want %#x", p.AtomicETH.VA(), vaA1)
		}
		if got := r.counter("stats", 9); got != 0 {
			t.Errorf("stats[slot takeovers] = %d, want 0", got)
		}
		if got := r.counter("stats", 11); got != 1 {
			t.Errorf("stats[foreign requests] = %d, want 1 (C's request)", got)
		}
		if va, _ := r.tail(keySlot); va != vaB1 {
			t.Errorf("tail = %#x, want %#x (B's node)", va, vaB1)
		}
	})
	// A node WRITE of another connection takes the slot over: the evicted
	// connection's CAS then passes untouched and its node is forgotten.
	t.Run("node WRITE evicts", func(t *testing.T) {
		r := newSteerRig(t, modeWrite)
		appendA(t, r)
		other := collider(t, qpB)
		r.expectSame(2, 3, nodeWrite(t, qpB, 200, vaB1, hotKey, 2, valueSize), "B's node WRITE")
		r.expectSame(4, 3, nodeWrite(t, other, 7, 0x00007f0000050000, coldKey, 3, valueSize), "C's node WRITE in B's slot")
		r.expectSame(2, 3, cas(t, qpB, 201, vaT0, hw(0, 0, 5), hw(0xB1, 2, 5)), "B's CAS after losing its slot")
		if got := r.counter("stats", 9); got != 1 {
			t.Errorf("stats[slot takeovers] = %d, want 1 (C took B's slot)", got)
		}
		if va, _ := r.tail(keySlot); va != vaA1 {
			t.Errorf("tail = %#x, want %#x (B's node was forgotten)", va, vaA1)
		}
	})
}

// PSNs are 24-bit serial numbers: the request after PSN 0xffffff is PSN 0,
// which is new, not a retransmission.
func TestPSNWrapIsNotARetransmission(t *testing.T) {
	r := newSteerRig(t, modeWrite)
	appendA(t, r)
	r.expectSame(2, 3, nodeWrite(t, qpB, 0xffffff, vaB1, hotKey, 2, valueSize), "B's node WRITE at PSN 0xffffff")
	r.send(2, cas(t, qpB, 0, vaT0, hw(0, 0, 5), hw(0xB1, 2, 5)))
	if p, _ := roce.Parse(r.expect(3)); p.AtomicETH.VA() != vaA1 {
		t.Fatalf("CAS at PSN 0 after 0xffffff not steered: VA %#x", p.AtomicETH.VA())
	}
	if got := r.counter("stats", statRetransmits); got != 0 {
		t.Errorf("stats[retransmissions] = %d, want 0", got)
	}
}

// The address map keeps one VA per slot (crc32 of the VA mod 16384): a node
// WRITE whose VA collides replaces the older entry, whose READs then miss.
func TestAddressMapCollisionReplaces(t *testing.T) {
	slot := func(va uint64) uint32 {
		var b [8]byte
		for i := range b {
			b[i] = byte(va >> (56 - 8*i))
		}
		return crc32.ChecksumIEEE(b[:]) % 16384
	}
	r := newSteerRig(t, modeWrite|modeRead)
	readSetup(t, r) // A1 (stale) and A3 (tail) of hotKey are mapped
	collide := uint64(vaA1)
	for i := uint64(1); ; i++ {
		if va := vaA1 + i*64; slot(va) == slot(vaA1) {
			collide = va
			break
		}
		if i > 1<<22 {
			t.Fatal("no colliding VA found")
		}
	}
	r.track(coldKey, keySlot+1)
	r.expectSame(2, 3, nodeWrite(t, qpB, 200, collide, coldKey, 1, valueSize), "node WRITE at a colliding VA")
	r.expectSame(4, 3, readReq(t, qpC, 300, vaA1, nodeSize), "READ of the replaced VA")
	if got := r.counter("stats", statReadMisses); got != 1 {
		t.Errorf("stats[read misses] = %d, want 1", got)
	}
	if got := r.counter("key_reads_steered", keySlot); got != 0 {
		t.Errorf("key_reads_steered = %d, want 0", got)
	}
}

// statTailDropped is the stats index of cached tails dropped because the CAS
// that made them failed at the memory node.
const statTailDropped = 10

// The switch checks every linking CAS's outcome at its ATOMIC ACK: a CAS
// whose original value differs from its compare value linked nothing, so its
// node must not stay the key's cached tail (its slot may be freed and reused
// by another key, and READs and CASes would be steered there).
func TestFailedLinkDropsItsTail(t *testing.T) {
	t.Run("failure drops the tail", func(t *testing.T) {
		r := newSteerRig(t, modeWrite|modeRead)
		appendA(t, r)
		r.expectSame(3, 1, atomicAck(t, ackToA, 101, hw(0xdead, 0, 5)), "ATOMIC ACK of a failed CAS")
		if got := r.register("tail_valid", keySlot); got != 0 {
			t.Fatalf("tail_valid = %d after A's CAS failed, want 0", got)
		}
		if got := r.counter("stats", statTailDropped); got != 1 {
			t.Errorf("stats[tails dropped] = %d, want 1", got)
		}
		// With no tail, B's CAS passes as is, and its node becomes the tail.
		r.expectSame(2, 3, nodeWrite(t, qpB, 200, vaB1, hotKey, 2, valueSize), "B's node WRITE")
		r.expectSame(2, 3, cas(t, qpB, 201, vaT0, hw(0, 0, 5), hw(0xB1, 2, 5)), "B's CAS with no cached tail")
		if va, _ := r.tail(keySlot); va != vaB1 || r.register("tail_valid", keySlot) != 1 {
			t.Errorf("tail = %#x valid %d, want %#x valid 1", va, r.register("tail_valid", keySlot), vaB1)
		}
	})
	t.Run("success keeps the tail", func(t *testing.T) {
		r := newSteerRig(t, modeWrite)
		appendA(t, r)
		r.expectSame(3, 1, atomicAck(t, ackToA, 101, hw(0, 0, 5)), "ATOMIC ACK of a successful CAS")
		if va, _ := r.tail(keySlot); va != vaA1 || r.register("tail_valid", keySlot) != 1 {
			t.Errorf("tail = %#x valid %d, want %#x valid 1", va, r.register("tail_valid", keySlot), vaA1)
		}
		if got := r.counter("stats", statTailDropped); got != 0 {
			t.Errorf("stats[tails dropped] = %d, want 0", got)
		}
	})
	t.Run("failure of an older link leaves a newer tail", func(t *testing.T) {
		r := newSteerRig(t, modeWrite)
		appendA(t, r)
		r.expectSame(2, 3, nodeWrite(t, qpB, 200, vaB1, hotKey, 2, valueSize), "B's node WRITE")
		r.send(2, cas(t, qpB, 201, vaT0, hw(0, 0, 5), hw(0xB1, 2, 5)))
		r.expect(3) // steered to A1; B1 is now the cached tail
		r.expectSame(3, 1, atomicAck(t, ackToA, 101, hw(0xdead, 0, 5)), "late failure of A's CAS")
		if va, _ := r.tail(keySlot); va != vaB1 || r.register("tail_valid", keySlot) != 1 {
			t.Errorf("tail = %#x valid %d, want %#x valid 1 (A's failure is about A1 only)", va, r.register("tail_valid", keySlot), vaB1)
		}
	})
}

// The address map names the key of the last node written at each VA,
// tracked or not. When a tracked key's retired node slot is reused by an
// untracked key, READs of the new node must not be steered to the tracked
// key's tail (another key's node).
func TestReusedSlotOfUntrackedKeyNotSteered(t *testing.T) {
	r := newSteerRig(t, modeWrite|modeRead)
	appendA(t, r) // hotKey's tail: A1
	r.expectSame(2, 3, nodeWrite(t, qpB, 200, vaB1, hotKey, 2, valueSize), "B's node WRITE")
	r.send(2, cas(t, qpB, 201, vaT0, hw(0, 0, 5), hw(0xB1, 2, 5)))
	r.expect(3) // steered to A1; B1 is hotKey's tail now
	// A1's slot, retired, is reused by an untracked key.
	r.expectSame(4, 3, nodeWrite(t, qpC, 300, vaA1, coldKey, 9, valueSize), "C's node WRITE of an untracked key into A1's slot")
	r.expectSame(4, 3, readReq(t, qpC, 301, vaA1, nodeSize), "READ of the untracked key's node")
	// A READ of hotKey's old node is still steered.
	r.expectSame(1, 3, nodeWrite(t, qpA, 102, vaT0+0x1000, hotKey, 3, valueSize), "A's node WRITE (not linked)")
	r.send(1, readReq(t, qpA, 103, vaT0+0x1000, nodeSize))
	if p, _ := roce.Parse(r.expect(3)); p.RETH.VA() != vaB1 {
		t.Errorf("READ of a tracked key's node: VA %#x, want %#x (steered to the tail)", p.RETH.VA(), vaB1)
	}
}
