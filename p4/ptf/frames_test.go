package ptf

import (
	"bytes"
	"hash/crc32"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/swordbox/swordbox/roce"
)

// The rack of the packet tests: two clients and a memory node, one per
// port; port 4 is a third client or, in the tests that say so, a second
// memory node.
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
	nodeSize  = 24 + valueSize // docs/clover-layout.md: header word, key, own LH, value
	rkey      = 0x1234
	keySlot   = 7
	hotKey    = 0x1122334455667788
	otherKey  = 0x0abcdef012 // tracked at keySlot+1 where a test says so
	coldKey   = 0x0badc0ffee // never tracked
	modeWrite = 1
	modeRead  = 2
	modeBoth  = modeWrite | modeRead

	// freshTTL keeps every confirmed tail fresh for the whole test (2^47
	// microseconds); the TTL tests set their own.
	freshTTL = 1 << 47

	nodeSlots = 65536
	addrSlots = 65536
	linkSlots = 8192
)

// Indices of the stats counter (docs/swordbox-p4.md, "Counters").
const (
	statRoCE           = 0
	statNodeWrites     = 1
	statCAS            = 2
	statCASSteered     = 3
	statReads          = 4
	statReadsSteered   = 5
	statReadMisses     = 6
	statRetransmits    = 7
	statAcksCleared    = 8
	statLinkTakeover   = 9
	statTailDropped    = 10
	statLinkUnresolved = 11
	statTailConfirmed  = 12
	statTailExpired    = 13
	statConfirmStale   = 14
	statLinkAmbiguous  = 15
	statVouched        = 20
	statReadsVouched   = 23
	statCount          = 24
	lhDeleted          = 0xFFFFFFFF
	memnodeIP          = 0x0a000003
)

// node is a Clover node as the switch learns it from its WRITE.
type node struct {
	va  uint64
	lh  uint32
	ev  uint8
	key uint64
}

// The nodes of the scenarios. T0 is a key's initial tail (entry version 5),
// never written through the switch; A1, A3 and B1 are appended after it.
// The VAs' high 32 bits are non-zero so that both halves of a VA matter.
var (
	nT0 = node{0x00007f0000010000, 0x70, 5, hotKey}
	nA1 = node{0x00007f0000020000, 0xA1, 1, hotKey}
	nA3 = node{0x00007f0000023000, 0xA3, 3, hotKey}
	nB1 = node{0x00007f1100030000, 0xB1, 2, hotKey}
)

// qp is one direction of an RC connection as the switch sees it.
type qp struct {
	from, to host
	sport    uint16
	destQP   uint32
}

var (
	qpA = qp{clientA, memnode, 49152, 0x11} // client A -> memory node QP 0x11
	qpB = qp{clientB, memnode, 49153, 0x12}
	qpC = qp{clientC, memnode, 49154, 0x13}
)

// back is the reverse direction: the memory node's responses to q's client.
func (q qp) back() qp { return qp{q.to, q.from, 50000, 0x20 | q.destQP} }

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

// hw is a Clover header word (docs/clover-layout.md): next LH in bits
// 59..28, next version in 26..19, entry version in 18..11.
func hw(nextLH uint32, nextVer, entryVer uint8) uint64 {
	return uint64(nextLH)<<28 | uint64(nextVer)<<19 | uint64(entryVer)<<11
}

// nodePayload is a node of value bytes: header word (next NULL, entry
// version n.ev), key and own logical handle, little-endian, then the value.
func nodePayload(n node, value int) []byte {
	p := make([]byte, 24+value)
	le64(p[0:], hw(0, 0, n.ev))
	le64(p[8:], n.key)
	le64(p[16:], uint64(n.lh))
	for i := 24; i < len(p); i++ {
		p[i] = byte(i)
	}
	return p
}

// nodeWrite is the WRITE_ONLY of node n with a value of value bytes.
func nodeWrite(t testing.TB, q qp, psn uint32, n node, value int) []byte {
	return writeOf(t, q, psn, roce.OpRCWriteOnly, n.va, nodePayload(n, value))
}

// writeOf is a WRITE request of payload (padded to 4 bytes on the wire, as
// the BTH pad count says).
func writeOf(t testing.TB, q qp, psn uint32, op roce.Opcode, va uint64, payload []byte) []byte {
	pad := (4 - len(payload)%4) % 4
	return q.build(t, roce.Fields{Opcode: op, AckReq: true, PSN: psn, VA: va, RKey: rkey, DMALen: uint32(len(payload)),
		Payload: payload, PadCnt: uint8(pad)})
}

func cas(t testing.TB, q qp, psn uint32, va, compare, swap uint64) []byte {
	return q.build(t, roce.Fields{Opcode: roce.OpRCCompareSwap, AckReq: true, PSN: psn, VA: va, RKey: rkey, Compare: compare, SwapAdd: swap})
}

// link is the CAS that links node n after the node at va, whose entry
// version the client believes is tailEv.
func link(t testing.TB, q qp, psn uint32, va uint64, tailEv uint8, n node) []byte {
	return cas(t, q, psn, va, hw(0, 0, tailEv), hw(n.lh, n.ev, tailEv))
}

func fetchAdd(t testing.TB, q qp, psn uint32, va, add uint64) []byte {
	return q.build(t, roce.Fields{Opcode: roce.OpRCFetchAdd, AckReq: true, PSN: psn, VA: va, RKey: rkey, SwapAdd: add})
}

func readReq(t testing.TB, q qp, psn uint32, va uint64, length uint32) []byte {
	return q.build(t, roce.Fields{Opcode: roce.OpRCReadRequest, AckReq: true, PSN: psn, VA: va, RKey: rkey, DMALen: length})
}

// atomicAck is the memory node's ATOMIC ACKNOWLEDGE of the CAS q sent
// with PSN psn; orig is the value the memory held before.
func atomicAck(t testing.TB, q qp, psn uint32, orig uint64) []byte {
	return q.back().build(t, roce.Fields{Opcode: roce.OpRCAtomicAcknowledge, PSN: psn, Syndrome: roce.ACKSyndrome(roce.CreditInvalid), MSN: 1, Orig: orig})
}

func le64(b []byte, v uint64) {
	for i := 0; i < 8; i++ {
		b[i] = byte(v >> (8 * i))
	}
}

// The hashed indices, computed as docs/swordbox-p4.md specifies them:
// crc32 (IEEE) of the fields concatenated most significant byte first,
// modulo the register size.
func nodeSlot(lh uint32) int64 {
	return int64(crc32.ChecksumIEEE([]byte{byte(lh >> 24), byte(lh >> 16), byte(lh >> 8), byte(lh)}) % nodeSlots)
}

func addrSlot(va uint64) int64 {
	var b [8]byte
	for i := range b {
		b[i] = byte(va >> (56 - 8*i))
	}
	return int64(crc32.ChecksumIEEE(b[:]) % addrSlots)
}

// linkSlot is the record index of a CAS of q with PSN psn: crc32(client
// IP, server IP, PSN (24 bits)) mod 8192.
func linkSlot(q qp, psn uint32) int64 {
	b := append(append(append([]byte(nil), q.from.ip[:]...), q.to.ip[:]...), byte(psn>>16), byte(psn>>8), byte(psn))
	return int64(crc32.ChecksumIEEE(b) % linkSlots)
}

// newSteerRig is a switch with the four hosts forwarded, the size filter
// set to the node size, hotKey tracked at keySlot, every tail fresh for
// the test, and the given mode.
func newSteerRig(t testing.TB, mode uint64) *rig {
	return programSteer(newRig(t, 1, 2, 3, 4), mode)
}

func programSteer(r *rig, mode uint64) *rig {
	for _, h := range []host{clientA, clientB, memnode, clientC} {
		r.forward(h.mac, h.port)
	}
	r.setConfig("node_size", nodeSize)
	r.setConfig("tail_ttl", freshTTL)
	r.setConfig("mode", mode)
	r.track(hotKey, keySlot)
	return r
}

// tailState is a key slot's cached tail.
type tailState struct {
	valid, ver uint64
	key, va    uint64
	dstIP, ts  uint64
}

func (r *rig) tail(slot int64) tailState {
	r.t.Helper()
	return tailState{
		valid: r.register("tail_valid", slot), ver: r.register("tail_ver", slot),
		key: r.register("tail_key", slot), va: r.register("tail_va_hi", slot)<<32 | r.register("tail_va_lo", slot),
		dstIP: r.register("tail_dst_ip", slot), ts: r.register("tail_ts", slot),
	}
}

// wantTail checks that the slot caches node n on the memory node ip.
func (r *rig) wantTail(slot int64, n node, ip uint64, what string) {
	r.t.Helper()
	got := r.tail(slot)
	if got.valid != 1 || got.va != n.va || got.ver != uint64(n.ev) || got.key != n.key || got.dstIP != ip {
		r.t.Fatalf("%s: tail = %+v, want %#x ev %d key %#x on %#x", what, got, n.va, n.ev, n.key, ip)
	}
}

func (r *rig) wantNoTail(slot int64, what string) {
	r.t.Helper()
	if got := r.register("tail_valid", slot); got != 0 {
		r.t.Fatalf("%s: tail_valid = %d, want 0 (tail %+v)", what, got, r.tail(slot))
	}
}

// stats reads the whole stats counter.
func (r *rig) stats() [statCount]int64 {
	r.t.Helper()
	var s [statCount]int64
	es := r.read(&p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{CounterId: r.counterID("stats")}}})
	for _, e := range es {
		s[e.GetCounterEntry().GetIndex().GetIndex()] = e.GetCounterEntry().GetData().GetPacketCount()
	}
	return s
}

// wantStats checks the given stats indices (others are not looked at).
func (r *rig) wantStats(what string, want map[int]int64) {
	r.t.Helper()
	s := r.stats()
	for i, w := range want {
		if s[i] != w {
			r.t.Errorf("%s: stats[%d] = %d, want %d (all: %v)", what, i, s[i], w, s)
		}
	}
}

// pass sends frame on in and returns what leaves out, parsed.
func (r *rig) pass(in, out uint32, frame []byte) ([]byte, roce.Packet) {
	r.t.Helper()
	r.send(in, frame)
	got := r.expect(out)
	p, err := roce.Parse(got)
	if err != nil {
		r.t.Fatalf("frame out of port %d: %v", out, err)
	}
	return got, p
}

// confirm makes q's client append n after the node at va (entry version
// tailEv) and the memory node answer that the CAS succeeded: the node
// WRITE, the linking CAS (steered or not, whatever the switch does) and
// the ATOMIC ACK whose original value is the compare as forwarded. It
// returns the CAS as forwarded.
func (r *rig) confirm(q qp, psn uint32, va uint64, tailEv uint8, n node) roce.Packet {
	r.t.Helper()
	r.expectSame(q.from.port, q.to.port, nodeWrite(r.t, q, psn, n, valueSize), "node WRITE")
	_, p := r.pass(q.from.port, q.to.port, link(r.t, q, psn+1, va, tailEv, n))
	r.expectSame(q.to.port, q.from.port, atomicAck(r.t, q, psn+1, p.AtomicETH.Compare()), "ATOMIC ACK of a successful link")
	return p
}

// chain makes hotKey's chain T0 -> A1 -> A3 through client A, both links
// confirmed: A3 is the cached tail, A1 a stale node.
func (r *rig) chain() {
	r.t.Helper()
	r.confirm(qpA, 100, nT0.va, nT0.ev, nA1)
	r.confirm(qpA, 102, nA1.va, nA1.ev, nA3)
	r.wantTail(keySlot, nA3, memnodeIP, "after T0 -> A1 -> A3")
}

// sameExcept checks that got equals want outside the byte ranges given.
func sameExcept(t testing.TB, got, want []byte, ranges ...[2]int) {
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

// packetOut sends frame as a PacketOut to port.
func (r *rig) packetOut(port uint32, frame []byte) {
	r.t.Helper()
	if err := r.stream.Send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Packet{Packet: &p4v1.PacketOut{
		Payload: frame, Metadata: []*p4v1.PacketMetadata{{MetadataId: 1, Value: enc(uint64(port))}},
	}}}); err != nil {
		r.t.Fatal(err)
	}
	r.twin.packetOut(port, frame)
}

// untrack deletes key's tracked_keys entry.
func (r *rig) untrack(key uint64) {
	r.t.Helper()
	t := prefix + "tracked_keys"
	r.write(&p4v1.Update{Type: p4v1.Update_DELETE, Entity: &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{
		TableId: r.tableID(t),
		Match:   []*p4v1.FieldMatch{exact(r.matchFieldID(t, "meta.clover_key"), enc(key))},
	}}}})
}

// pause makes sure the switch clock (microseconds) moves between two frames.
func pause() { time.Sleep(2 * time.Millisecond) }
