package middlebox

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/swordbox/swordbox/roce"
)

var synACK = roce.ACKSyndrome(roce.CreditInvalid)
var synSeq = roce.NAKSyndrome(roce.NAKPSNSequenceError)

func TestIdentityWithoutRanges(t *testing.T) {
	r := newTestRack(t, 2, testConfig(false, false))
	f, psn := r.write(1, 0x5000, le64(42))
	orig := append([]byte(nil), f...)
	x := r.one(ClientSide, f)
	r.checkToServer(x, 1, roce.OpRCWriteOnly, psn)
	if !bytes.Equal(x.raw, orig) {
		t.Fatalf("identity forward changed the frame")
	}
	y := r.one(ServerSide, r.ack(1, psn, synACK, 1))
	r.checkToClient(y, 1, roce.OpRCAcknowledge, psn)
	if y.p.AETH.MSN() != 1 || !y.p.AETH.Syndrome().IsACK() {
		t.Fatalf("ACK MSN %d syndrome %v", y.p.AETH.MSN(), y.p.AETH.Syndrome())
	}
}

func TestRemapAndDecoalesce(t *testing.T) {
	r := newTestRack(t, 3, testConfig(true, false))
	s0 := r.cli[0].psn
	f1, p1 := r.write(1, 0x5000, le64(1))
	f2, p2 := r.write(2, 0x5008, le64(2))
	f0, p0 := r.write(0, 0x5010, le64(3))
	r.checkToServer(r.one(ClientSide, f1), 0, roce.OpRCWriteOnly, s0)
	r.checkToServer(r.one(ClientSide, f2), 0, roce.OpRCWriteOnly, s0+1)
	r.checkToServer(r.one(ClientSide, f0), 0, roce.OpRCWriteOnly, s0+2)
	res := r.run(ServerSide, r.ack(0, s0+2, synACK, 3))
	if len(res) != 3 {
		t.Fatalf("coalesced ACK: %d frames out, want 3", len(res))
	}
	for k, want := range []struct {
		cli int
		psn uint32
	}{{1, p1}, {2, p2}, {0, p0}} {
		r.checkToClient(res[k], want.cli, roce.OpRCAcknowledge, want.psn)
		if m := res[k].p.AETH.MSN(); m != 1 {
			t.Errorf("client %d: MSN %d, want 1", want.cli, m)
		}
	}
	c := r.e.Counters()
	if c.Remapped != 2 || c.ACKsOut != 3 || c.TotalDrops() != 0 {
		t.Fatalf("counters: %s", c.String())
	}
}

func TestCASToWriteLearnsThenConverts(t *testing.T) {
	r := newTestRack(t, 3, testConfig(true, true))
	s0 := r.cli[0].psn
	const lock = 0x1000
	// The word is unknown: both CAS pass through, and the first ATOMIC ACK
	// teaches the value by replaying the logged operations.
	fa, pa := r.cas(1, lock, 0, 1)
	fb, pb := r.cas(2, lock, 0, 1)
	r.checkToServer(r.one(ClientSide, fa), 0, roce.OpRCCompareSwap, s0)
	r.checkToServer(r.one(ClientSide, fb), 0, roce.OpRCCompareSwap, s0+1)
	x := r.one(ServerSide, r.atomicAck(0, s0, 0, 1))
	r.checkToClient(x, 1, roce.OpRCAtomicAcknowledge, pa)
	if x.p.AtomicAckETH.Orig() != 0 {
		t.Fatalf("orig %d", x.p.AtomicAckETH.Orig())
	}
	if c := r.e.Counters(); c.WordsLearned != 1 {
		t.Fatalf("word not learned: %s", c.String())
	}
	x = r.one(ServerSide, r.atomicAck(0, s0+1, 1, 2))
	r.checkToClient(x, 2, roce.OpRCAtomicAcknowledge, pb)
	if x.p.AtomicAckETH.Orig() != 1 {
		t.Fatalf("orig %d", x.p.AtomicAckETH.Orig())
	}
	// Now the value (1) is known: unlock by client 1 (CAS 1->0) and a
	// lock attempt by client 2 (CAS 0->1) become WRITEs of 0 and 1.
	fu, pu := r.cas(1, lock, 1, 0)
	fl, pl := r.cas(2, lock, 0, 1)
	w1 := r.one(ClientSide, fu)
	r.checkToServer(w1, 0, roce.OpRCWriteOnly, s0+2)
	w2 := r.one(ClientSide, fl)
	r.checkToServer(w2, 0, roce.OpRCWriteOnly, s0+3)
	for k, w := range []emitted{w1, w2} {
		if w.p.RETH.VA() != lock || w.p.RETH.DMALen() != 8 || w.p.RETH.RKey() != 0x1234 {
			t.Fatalf("write %d: VA %#x len %d rkey %#x", k, w.p.RETH.VA(), w.p.RETH.DMALen(), w.p.RETH.RKey())
		}
		if got := binary.LittleEndian.Uint64(w.p.Payload); got != uint64(k) {
			t.Fatalf("write %d stores %d, want %d", k, got, k)
		}
		if len(w.raw) != len(fu)-4 {
			t.Fatalf("write %d: %d bytes, want CAS %d - 4", k, len(w.raw), len(fu))
		}
	}
	// One coalesced ACK for both WRITEs: each client gets an ATOMIC ACK
	// with the value before its own operation.
	res := r.run(ServerSide, r.ack(0, s0+3, synACK, 4))
	if len(res) != 2 {
		t.Fatalf("%d frames, want 2", len(res))
	}
	r.checkToClient(res[0], 1, roce.OpRCAtomicAcknowledge, pu)
	r.checkToClient(res[1], 2, roce.OpRCAtomicAcknowledge, pl)
	if res[0].p.AtomicAckETH.Orig() != 1 || res[1].p.AtomicAckETH.Orig() != 0 {
		t.Fatalf("orig values %d %d, want 1 0", res[0].p.AtomicAckETH.Orig(), res[1].p.AtomicAckETH.Orig())
	}
	if res[0].p.AETH.MSN() != 2 || res[1].p.AETH.MSN() != 2 {
		t.Fatalf("MSNs %d %d, want 2 2", res[0].p.AETH.MSN(), res[1].p.AETH.MSN())
	}
	// FETCH_ADD on another tracked word: learned, then converted.
	ff, pf := r.fetchAdd(0, 0x1008, 5)
	r.checkToServer(r.one(ClientSide, ff), 0, roce.OpRCFetchAdd, s0+4)
	r.checkToClient(r.one(ServerSide, r.atomicAck(0, s0+4, 10, 5)), 0, roce.OpRCAtomicAcknowledge, pf)
	ff, pf = r.fetchAdd(0, 0x1008, 5)
	w := r.one(ClientSide, ff)
	r.checkToServer(w, 0, roce.OpRCWriteOnly, s0+5)
	if got := binary.LittleEndian.Uint64(w.p.Payload); got != 20 {
		t.Fatalf("FETCH_ADD became a WRITE of %d, want 20", got)
	}
	x = r.one(ServerSide, r.ack(0, s0+5, synACK, 6))
	r.checkToClient(x, 0, roce.OpRCAtomicAcknowledge, pf)
	if x.p.AtomicAckETH.Orig() != 15 {
		t.Fatalf("orig %d, want 15", x.p.AtomicAckETH.Orig())
	}
	c := r.e.Counters()
	if c.CASToWrite != 2 || c.FAToWrite != 1 || c.AtomicPassthrough != 3 || c.TotalDrops() != 0 {
		t.Fatalf("counters: %s", c.String())
	}
}

// A retransmitted CAS goes out as the very same WRITE on the same PSN.
func TestRetransmitSameOutgoingPSN(t *testing.T) {
	cfg := testConfig(true, true)
	cfg.NAKRecovery = NAKBroadcast // no replay after the retransmission
	r := newTestRack(t, 3, cfg)
	s0 := r.cli[0].psn
	f, _ := r.cas(1, 0x1000, 0, 1)
	r.one(ClientSide, f)
	r.one(ServerSide, r.atomicAck(0, s0, 0, 1)) // learned: 1
	fw, pw := r.cas(2, 0x1000, 0, 1)            // fails: WRITE of 1
	again := append([]byte(nil), fw...)
	first := r.one(ClientSide, fw)
	f3, _ := r.write(1, 0x5000, le64(9)) // another operation takes s0+2
	r.one(ClientSide, f3)
	second := r.one(ClientSide, again)
	r.checkToServer(second, 0, roce.OpRCWriteOnly, s0+1)
	if !bytes.Equal(first.raw, second.raw) {
		t.Fatalf("retransmission differs from the original:\n%x\n%x", first.raw, second.raw)
	}
	x := r.one(ServerSide, r.ack(0, s0+1, synACK, 2))
	r.checkToClient(x, 2, roce.OpRCAtomicAcknowledge, pw)
	if x.p.AtomicAckETH.Orig() != 1 {
		t.Fatalf("orig %d", x.p.AtomicAckETH.Orig())
	}
	if c := r.e.Counters(); c.Retransmits != 1 {
		t.Fatalf("counters: %s", c.String())
	}
}

func TestSequenceNAKBroadcast(t *testing.T) {
	cfg := testConfig(true, false)
	cfg.NAKRecovery = NAKBroadcast
	r := newTestRack(t, 3, cfg)
	s0 := r.cli[0].psn
	fa, pa := r.write(1, 0x5000, le64(1)) // s0
	fb, pb := r.write(2, 0x5008, le64(2)) // s0+1 (lost)
	fc, pc := r.write(1, 0x5010, le64(3)) // s0+2
	fd, pd := r.write(0, 0x5018, le64(4)) // s0+3
	for _, f := range [][]byte{fa, fb, fc, fd} {
		r.one(ClientSide, append([]byte(nil), f...))
	}
	res := r.run(ServerSide, r.ack(0, s0+1, synSeq, 1))
	if len(res) != 4 {
		t.Fatalf("%d frames, want ACK + 3 NAKs", len(res))
	}
	r.checkToClient(res[0], 1, roce.OpRCAcknowledge, pa)
	if !res[0].p.AETH.Syndrome().IsACK() {
		t.Fatal("first frame is not an ACK")
	}
	for k, want := range []struct {
		cli int
		psn uint32
	}{{2, pb}, {1, pc}, {0, pd}} {
		x := res[1+k]
		r.checkToClient(x, want.cli, roce.OpRCAcknowledge, want.psn)
		if x.p.AETH.Syndrome() != synSeq {
			t.Fatalf("frame %d: syndrome %v, want NAK sequence error", 1+k, x.p.AETH.Syndrome())
		}
	}
	// Clients go back: each retransmission lands on its original PSN.
	r.checkToServer(r.one(ClientSide, fb), 0, roce.OpRCWriteOnly, s0+1)
	r.checkToServer(r.one(ClientSide, fc), 0, roce.OpRCWriteOnly, s0+2)
	r.checkToServer(r.one(ClientSide, fd), 0, roce.OpRCWriteOnly, s0+3)
	res = r.run(ServerSide, r.ack(0, s0+3, synACK, 4))
	if len(res) != 3 {
		t.Fatalf("%d frames, want 3", len(res))
	}
	r.checkToClient(res[0], 2, roce.OpRCAcknowledge, pb)
	r.checkToClient(res[1], 1, roce.OpRCAcknowledge, pc)
	r.checkToClient(res[2], 0, roce.OpRCAcknowledge, pd)
	if m := res[1].p.AETH.MSN(); m != 2 {
		t.Fatalf("client 1 MSN %d, want 2", m)
	}
}

func TestReadResponsesMappedBack(t *testing.T) {
	r := newTestRack(t, 3, testConfig(true, false))
	s0 := r.cli[0].psn
	fr, pr := r.read(1, 0x8000, 2500, 1024) // 3 response packets: s0..s0+2
	r.checkToServer(r.one(ClientSide, fr), 0, roce.OpRCReadRequest, s0)
	fw, pw := r.write(2, 0x5000, le64(1)) // s0+3
	r.one(ClientSide, fw)
	fw1, pw1 := r.write(1, 0x5008, le64(1)) // s0+4
	r.one(ClientSide, fw1)
	// The server's ACK for s0+4 overtakes the READ response: client 2's
	// WRITE is acknowledged, client 1's waits behind its READ.
	res := r.run(ServerSide, r.ack(0, uint32(roce.PSN(s0).Add(4)), synACK, 3))
	if len(res) != 1 {
		t.Fatalf("%d frames, want 1", len(res))
	}
	r.checkToClient(res[0], 2, roce.OpRCAcknowledge, pw)
	data := bytes.Repeat([]byte{7}, 1024)
	ops := []roce.Opcode{roce.OpRCReadResponseFirst, roce.OpRCReadResponseMiddle, roce.OpRCReadResponseLast}
	for k, op := range ops {
		d := data
		if k == 2 {
			d = data[:452]
		}
		res = r.run(ServerSide, r.readResp(0, op, uint32(roce.PSN(s0).Add(k)), d, 1))
		want := 1
		if k == 2 {
			want = 2 // the response, then the ACK of the WRITE behind it
		}
		if len(res) != want {
			t.Fatalf("response %d: %d frames, want %d", k, len(res), want)
		}
		r.checkToClient(res[0], 1, op, uint32(roce.PSN(pr).Add(k)))
		if !bytes.Equal(res[0].p.Payload, d) {
			t.Fatalf("response %d: payload changed", k)
		}
		if op != roce.OpRCReadResponseMiddle && res[0].p.AETH.MSN() != uint32(k/2) {
			t.Fatalf("response %d: MSN %d", k, res[0].p.AETH.MSN())
		}
	}
	r.checkToClient(res[1], 1, roce.OpRCAcknowledge, pw1)
	if res[1].p.AETH.MSN() != 2 {
		t.Fatalf("MSN %d, want 2", res[1].p.AETH.MSN())
	}
}

func TestClientGapIsNAKedOnce(t *testing.T) {
	r := newTestRack(t, 2, testConfig(true, false))
	f0, p0 := r.write(1, 0x5000, le64(1))
	f1, _ := r.write(1, 0x5008, le64(1))
	f2, _ := r.write(1, 0x5010, le64(1))
	x := r.one(ClientSide, f1) // f0 was lost
	r.checkToClient(x, 1, roce.OpRCAcknowledge, p0)
	if x.p.AETH.Syndrome() != synSeq {
		t.Fatalf("syndrome %v", x.p.AETH.Syndrome())
	}
	r.none(ClientSide, f2)
	r.one(ClientSide, f0)
	if c := r.e.Counters(); c.Drops[DropPSNGap] != 2 || c.GapNAKs != 1 {
		t.Fatalf("counters: %s", c.String())
	}
}

// A client cannot move to another outgoing connection while operations
// are outstanding on its current one: that would let the server reorder
// them. The request waits in the engine (parked) and leaves once the
// earlier ones are done (lockrules_test.go has the Sherman release and the
// requests that cannot be parked).
func TestBarrier(t *testing.T) {
	cfg := testConfig(false, false)
	cfg.Servers[0].Remap = []Range{{Lo: 0x1000, Hi: 0x2000}}
	r := newTestRack(t, 2, cfg)
	s0 := r.cli[0].psn
	fw, pw := r.write(1, 0x5000, le64(1))
	r.checkToServer(r.one(ClientSide, fw), 1, roce.OpRCWriteOnly, pw)
	fc, _ := r.cas(1, 0x1000, 0, 1)
	r.none(ClientSide, fc)
	r.ackThenRequest(r.ack(1, pw, synACK, 1), 1, pw, roce.OpRCCompareSwap, s0)
	if c := r.e.Counters(); c.Parked != 1 || c.ParkedSent != 1 || c.Drops[DropBarrier] != 0 {
		t.Fatalf("counters: %s", c.String())
	}
}

func TestRingAndWindowFull(t *testing.T) {
	cfg := testConfig(true, false)
	cfg.RingSize = 8
	r := newTestRack(t, 2, cfg)
	for k := 0; k < 8; k++ {
		f, _ := r.write(1, 0x5000, le64(1))
		r.one(ClientSide, f)
	}
	f, _ := r.write(1, 0x5000, le64(1))
	r.none(ClientSide, f)
	if c := r.e.Counters(); c.Drops[DropRingFull] != 1 {
		t.Fatalf("counters: %s", c.String())
	}
	// Client 2 (window 16 PSNs): two READs of 6 packets, then a third
	// would keep 18 of its PSNs outstanding.
	r2 := newTestRack(t, 3, testConfig(true, false))
	for k := 0; k < 2; k++ {
		f, _ = r2.read(2, 0x8000, 6*1024, 1024)
		r2.one(ClientSide, f)
	}
	f, _ = r2.read(2, 0x8000, 6*1024, 1024)
	r2.none(ClientSide, f)
	if c := r2.e.Counters(); c.Drops[DropWindowFull] != 1 {
		t.Fatalf("counters: %s", c.String())
	}
}

// Without preloading, connections are learned from requests, bound to
// their responses, and remapped once bound.
func TestLearnedConnections(t *testing.T) {
	r := newTestRack(t, 0, testConfig(true, false))
	for i := 0; i < 2; i++ {
		r.cli = append(r.cli, testHost{ip: [4]byte{10, 0, 0, byte(1 + i)}, mac: [6]byte{2, 0, 0, 0, 0, byte(1 + i)},
			port: uint16(49152 + i), cliQP: uint32(0x100 + i), srvQP: uint32(0x200 + i), psn: uint32(1000*i + 7)})
	}
	f0, p0 := r.write(0, 0x5000, le64(1))
	orig := append([]byte(nil), f0...)
	x := r.one(ClientSide, f0)
	if !bytes.Equal(x.raw, orig) {
		t.Fatal("first request of a learned connection was changed")
	}
	f1, p1 := r.write(1, 0x5000, le64(1))
	r.checkToServer(r.one(ClientSide, f1), 1, roce.OpRCWriteOnly, p1) // unbound: own connection
	r.checkToClient(r.one(ServerSide, r.ack(0, p0, synACK, 1)), 0, roce.OpRCAcknowledge, p0)
	r.checkToClient(r.one(ServerSide, r.ack(1, p1, synACK, 1)), 1, roce.OpRCAcknowledge, p1)
	f1, p1 = r.write(1, 0x5000, le64(1))
	r.checkToServer(r.one(ClientSide, f1), 0, roce.OpRCWriteOnly, p0+1) // bound: remapped
	x = r.one(ServerSide, r.ack(0, p0+1, synACK, 2))
	r.checkToClient(x, 1, roce.OpRCAcknowledge, p1)
	if x.p.AETH.MSN() != 2 {
		t.Fatalf("MSN %d, want 2", x.p.AETH.MSN())
	}
	if c := r.e.Counters(); c.Learned != 2 || c.Bound != 2 || c.RangeUnbound != 1 {
		t.Fatalf("counters: %s", c.String())
	}
}

// The client lost the ATOMIC ACK and retransmits.
func TestDuplicateAnswered(t *testing.T) {
	r := newTestRack(t, 2, testConfig(true, true))
	s0 := r.cli[0].psn
	f, p := r.cas(1, 0x1000, 0, 1)
	again := append([]byte(nil), f...)
	r.one(ClientSide, f)
	r.checkToClient(r.one(ServerSide, r.atomicAck(0, s0, 0, 1)), 1, roce.OpRCAtomicAcknowledge, p)
	// The middlebox answers the duplicate of a completed operation itself
	// (a server would answer a duplicate WRITE with a cumulative ACK for
	// its newest PSN, which may belong to another client).
	x := r.one(ClientSide, again)
	r.checkToClient(x, 1, roce.OpRCAtomicAcknowledge, p)
	if x.p.AtomicAckETH.Orig() != 0 {
		t.Fatal("duplicate answer changed the value")
	}
	if c := r.e.Counters(); c.RetransmitsAnswered != 1 {
		t.Fatalf("counters: %s", c.String())
	}
}

func TestPassthrough(t *testing.T) {
	r := newTestRack(t, 1, testConfig(true, true))
	arp := make([]byte, 60)
	binary.BigEndian.PutUint16(arp[12:], 0x0806)
	f := r.reqFields(0, roce.OpRCCompareSwap, 5)
	f.DstIP = [4]byte{10, 0, 0, 200} // not a managed server
	other := buildFrame(t, &f)
	for _, tc := range []struct {
		name  string
		side  Side
		frame []byte
	}{{"arp from client", ClientSide, arp}, {"arp from server", ServerSide, arp}, {"other server", ClientSide, other}} {
		r.out.Reset()
		want := append([]byte(nil), tc.frame...)
		r.e.Process(0, tc.side, tc.frame, r.out)
		if r.out.Len() != 1 || r.out.Sides[0] != tc.side.Other() || !bytes.Equal(r.out.Frames[0], want) || !r.out.FromInput[0] {
			t.Fatalf("%s: not passed through unchanged", tc.name)
		}
	}
	if c := r.e.Counters(); c.Passthrough != 3 {
		t.Fatalf("counters: %s", c.String())
	}
}

// With NAKReplay the middlebox resends its own copies from the NAK's PSN,
// in order, and the clients see nothing but their answers.
func TestSequenceNAKReplay(t *testing.T) {
	r := newTestRack(t, 3, testConfig(true, true))
	s0 := r.cli[0].psn
	fa, pa := r.write(1, 0x5000, le64(1)) // s0
	fb, pb := r.write(2, 0x5008, le64(2)) // s0+1 (lost)
	fc, pc := r.cas(1, 0x1000, 0, 1)      // s0+2
	fd, pd := r.write(0, 0x5018, le64(4)) // s0+3
	var sent [][]byte
	fb2 := append([]byte(nil), fb...)
	for _, f := range [][]byte{fa, fb, fc, fd} {
		sent = append(sent, r.one(ClientSide, f).raw)
	}
	res := r.run(ServerSide, r.ack(0, s0+1, synSeq, 1))
	if len(res) != 4 {
		t.Fatalf("%d frames, want the ACK of s0 and 3 replayed requests", len(res))
	}
	r.checkToClient(res[0], 1, roce.OpRCAcknowledge, pa)
	for k := 1; k < 4; k++ {
		if res[k].side != ServerSide || !bytes.Equal(res[k].raw, sent[k]) {
			t.Fatalf("replayed frame %d differs from the request first sent", k)
		}
	}
	// Client 2 resends its lost WRITE too: forwarded again (the server
	// treats the copy it already has as a duplicate).
	x := r.run(ClientSide, fb2)
	if len(x) < 1 || !bytes.Equal(x[0].raw, sent[1]) {
		t.Fatalf("client retransmission not forwarded as sent")
	}
	res = r.run(ServerSide, r.atomicAck(0, s0+2, 0, 3))
	if len(res) != 2 {
		t.Fatalf("%d frames, want 2", len(res))
	}
	r.checkToClient(res[0], 2, roce.OpRCAcknowledge, pb)
	r.checkToClient(res[1], 1, roce.OpRCAtomicAcknowledge, pc)
	r.checkToClient(r.one(ServerSide, r.ack(0, s0+3, synACK, 4)), 0, roce.OpRCAcknowledge, pd)
	if c := r.e.Counters(); c.Replayed < 3 || c.NAKsOut != 0 {
		t.Fatalf("counters: %s", c.String())
	}
}

// With a replay log too small for everything outstanding, a replay sends
// the copies still in the log, in order and as first sent, and counts the
// overwritten ones (their clients' retransmissions recover them).
func TestSequenceNAKReplayLogWrapped(t *testing.T) {
	cfg := testConfig(true, false)
	cfg.ReplayLogBytes, cfg.Window = 4096, 64
	r := newTestRack(t, 2, cfg)
	s0 := r.cli[0].psn
	var sent [][]byte
	for k := 0; k < 40; k++ { // 40 WRITEs of 138 bytes: 5520 bytes > 4096
		f, _ := r.write(k%2, 0x5000+uint64(8*k), make([]byte, 64))
		sent = append(sent, r.one(ClientSide, f).raw)
	}
	res := r.run(ServerSide, r.ack(0, s0+1, synSeq, 1)) // NAK at s0+1: s0 acknowledged
	if len(res) < 2 || res[0].side != ClientSide {
		t.Fatalf("%d frames, want the ACK of s0 then replayed requests", len(res))
	}
	replayed := res[1:]
	c := r.e.Counters()
	if int(c.Replayed) != len(replayed) || int(c.ReplayLost)+len(replayed) != len(sent)-1 || c.ReplayLost == 0 {
		t.Fatalf("replayed %d, lost %d, of %d outstanding: %s", len(replayed), c.ReplayLost, len(sent)-1, c.String())
	}
	first := len(sent) - len(replayed)
	if want := 4096 / len(sent[0]); len(replayed) != want {
		t.Fatalf("%d copies replayed, want the %d newest that fit in 4096 bytes", len(replayed), want)
	}
	for k, e := range replayed {
		if e.side != ServerSide || !bytes.Equal(e.raw, sent[first+k]) {
			t.Fatalf("replayed frame %d differs from request %d as first sent", k, first+k)
		}
	}
}

// An atomic on a tracked word from a connection that cannot be remapped
// yet (learned, not bound) is not ordered with the shared connection: no
// word of the server is learned while it is in flight.
func TestForeignOperationBlocksLearning(t *testing.T) {
	r := newTestRack(t, 0, testConfig(true, true))
	for i := 0; i < 2; i++ {
		r.cli = append(r.cli, testHost{ip: [4]byte{10, 0, 0, byte(1 + i)}, mac: [6]byte{2, 0, 0, 0, 0, byte(1 + i)},
			port: uint16(49152 + i), cliQP: uint32(0x100 + i), srvQP: uint32(0x200 + i), psn: uint32(1000*i + 7)})
	}
	f, p0 := r.write(0, 0x5000, le64(1))
	r.one(ClientSide, f)
	r.one(ServerSide, r.ack(0, p0, synACK, 1)) // client 0's connection (shared) is bound
	f, p1 := r.cas(1, 0x1000, 0, 1)
	r.checkToServer(r.one(ClientSide, f), 1, roce.OpRCCompareSwap, p1) // own connection: foreign
	f, q := r.cas(0, 0x1000, 0, 1)
	r.checkToServer(r.one(ClientSide, f), 0, roce.OpRCCompareSwap, q)
	r.one(ServerSide, r.atomicAck(0, q, 1, 2))
	if c := r.e.Counters(); c.WordsLearned != 0 {
		t.Fatalf("learned while a foreign CAS was in flight: %s", c.String())
	}
	r.checkToClient(r.one(ServerSide, r.atomicAck(1, p1, 0, 1)), 1, roce.OpRCAtomicAcknowledge, p1)
	f, q = r.cas(0, 0x1000, 1, 0)
	r.one(ClientSide, f)
	r.one(ServerSide, r.atomicAck(0, q, 1, 3))
	f, _ = r.cas(0, 0x1000, 0, 1)
	r.checkToServer(r.one(ClientSide, f), 0, roce.OpRCWriteOnly, q+1)
	if c := r.e.Counters(); c.WordsLearned != 1 || c.CASToWrite != 1 {
		t.Fatalf("counters: %s", c.String())
	}
}

// Server answers other than ACKs and sequence NAKs, and answers that match
// nothing.
func TestServerResponseEdgeCases(t *testing.T) {
	for _, tc := range []struct {
		name     string
		syn      roce.Syndrome
		offset   int // PSN of the answer relative to client 2's WRITE on the shared connection
		wantCli  int // -1: no frame
		wantSyn  roce.Syndrome
		wantDrop DropReason
	}{
		{"remote access error goes to its owner", roce.NAKSyndrome(roce.NAKRemoteAccessError), 0, 2, roce.NAKSyndrome(roce.NAKRemoteAccessError), numDropReasons},
		{"RNR NAK goes to its owner", roce.RNRNAKSyndrome(3), 0, 2, roce.RNRNAKSyndrome(3), numDropReasons},
		{"ACK beyond anything sent", synACK, 5, -1, 0, DropUnknownResponse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newTestRack(t, 3, testConfig(true, false))
			s0 := r.cli[0].psn
			f, _ := r.write(1, 0x5000, le64(1)) // s0
			r.one(ClientSide, f)
			f, p2 := r.write(2, 0x5008, le64(2)) // s0+1
			r.one(ClientSide, f)
			res := r.run(ServerSide, r.ack(0, uint32(roce.PSN(s0).Add(1+tc.offset)), tc.syn, 1))
			c := r.e.Counters()
			if tc.wantCli < 0 {
				if len(res) != 0 || c.Drops[tc.wantDrop] != 1 {
					t.Fatalf("%d frames; counters %s", len(res), c.String())
				}
				return
			}
			// Client 1's WRITE before it is implicitly acknowledged first.
			if len(res) != 2 {
				t.Fatalf("%d frames, want ACK to client 1 and the NAK to client 2", len(res))
			}
			r.checkToClient(res[1], tc.wantCli, roce.OpRCAcknowledge, p2)
			if res[1].p.AETH.Syndrome() != tc.wantSyn {
				t.Fatalf("syndrome %v, want %v", res[1].p.AETH.Syndrome(), tc.wantSyn)
			}
		})
	}
}

// With SkipICRCCheck, a corrupted retransmission the engine sends on (a
// CMP_SWAP it replaces by a WRITE, and a WRITE) keeps its corruption: the
// same ICRC as the intact retransmission's, which is correct, with the
// corrupted byte (the rkey) different.
func TestRetransmitKeepsCorruption(t *testing.T) {
	cfg := testConfig(true, true)
	cfg.NAKRecovery = NAKBroadcast // no replay after the retransmission
	cfg.SkipICRCCheck = true
	r := newTestRack(t, 3, cfg)
	s0 := r.cli[0].psn
	f, _ := r.cas(1, 0x1000, 0, 1)
	r.one(ClientSide, f)
	r.one(ServerSide, r.atomicAck(0, s0, 0, 1)) // learned: 1
	cas, _ := r.cas(2, 0x1000, 0, 1)            // replaced by a WRITE of 1
	wr, _ := r.write(1, 0x5000, le64(9))
	rkey := roce.EthernetLen + roce.IPv4MinLen + roce.UDPLen + roce.BTHLen + roce.RETHRKeyOff
	for _, frame := range [][]byte{cas, wr} {
		intact := append([]byte(nil), frame...)
		corrupt := append([]byte(nil), frame...)
		corrupt[rkey] ^= 0x10
		r.one(ClientSide, frame)
		good := r.one(ClientSide, intact) // a retransmission, sent on
		r.out.Reset()
		r.e.Process(0, ClientSide, corrupt, r.out)
		if r.out.Len() != 1 {
			t.Fatalf("%d frames out for the corrupted retransmission (%s)", r.out.Len(), r.e.c.String())
		}
		var p roce.Packet
		if err := roce.ParseInto(&p, r.out.Frames[0]); err != nil {
			t.Fatal(err)
		}
		if p.ICRCOK() || p.StoredICRC() != good.p.StoredICRC() || p.Opcode != good.p.Opcode {
			t.Fatalf("%v: ICRC %#x (correct: %v), want the intact retransmission's %#x (wrong for these bytes)", p.Opcode, p.StoredICRC(), p.ICRCOK(), good.p.StoredICRC())
		}
	}
	if c := r.e.Counters(); c.Retransmits != 4 {
		t.Fatalf("counters: %s", c.String())
	}
}

// An answer the engine generates for the owner of the shared connection
// carries the UDP source port the server's responses on that connection
// carry now, also after the server changed it (the answer templates are
// rebuilt).
func TestAnswersFollowServerPort(t *testing.T) {
	r := newTestRack(t, 2, testConfig(true, false))
	for _, port := range []uint16{50000, 50000, 50001, 4791} {
		s0 := r.cli[0].psn
		f0, p0 := r.write(0, 0x5010, le64(3))
		r.checkToServer(r.one(ClientSide, f0), 0, roce.OpRCWriteOnly, s0)
		ack := r.respFields(0, roce.OpRCAcknowledge, s0)
		ack.Syndrome, ack.MSN, ack.SrcPort = synACK, 1, port
		x := r.one(ServerSide, buildFrame(t, &ack))
		r.checkToClient(x, 0, roce.OpRCAcknowledge, p0)
		if got := x.p.UDP.SrcPort(); got != port {
			t.Fatalf("server port %d: the answer's UDP source port is %d", port, got)
		}
	}
}
