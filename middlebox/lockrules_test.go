package middlebox

import (
	"testing"

	"github.com/swordbox/swordbox/roce"
)

// localConfig is a rack whose lock words (0x1000..0x2000) are remapped and
// converted, with failed CMP_SWAPs answered locally; the rest of the
// address space stays on each client's own connection.
func localConfig() Config {
	cfg := testConfig(false, true)
	cfg.Servers[0].Remap = []Range{{Lo: 0x1000, Hi: 0x2000}}
	cfg.Servers[0].AnswerFailedCAS = true
	cfg.Words = []WordConfig{{VA: 0x1000, Value: 5}}
	return cfg
}

// A CMP_SWAP on a known word whose compare value differs fails; the
// engine answers it with the known value, in the client's PSN and MSN
// order, and sends nothing to the server. Where the outcome is not
// certain the CMP_SWAP is forwarded as before.
func TestFailedCASAnsweredLocally(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(cfg *Config)
		// before runs on the rack before client 1's CMP_SWAP(0 -> 9)
		before func(r *testRack)
		local  bool
		toSrv  roce.Opcode // the request the server gets when not local
	}{
		{name: "known value differs", local: true},
		{name: "rule off (the paper)", setup: func(cfg *Config) { cfg.Servers[0].AnswerFailedCAS = false }, toSrv: roce.OpRCWriteOnly},
		{name: "value unknown", setup: func(cfg *Config) { cfg.Words = nil }, toSrv: roce.OpRCCompareSwap},
		{name: "compare equals the value", setup: func(cfg *Config) { cfg.Words[0].Value = 0 }, toSrv: roce.OpRCWriteOnly},
		{name: "client has an operation outstanding", before: func(r *testRack) {
			f, _ := r.write(1, 0x1008, le64(3)) // on the shared connection, not yet acknowledged
			r.one(ClientSide, f)
		}, toSrv: roce.OpRCWriteOnly},
		{name: "fatal NAK on the shared connection", before: func(r *testRack) {
			s0 := r.cli[0].psn
			f, _ := r.write(2, 0x1008, le64(3))
			r.one(ClientSide, f)
			r.one(ServerSide, r.ack(0, s0, roce.NAKSyndrome(roce.NAKRemoteAccessError), 0))
		}, toSrv: roce.OpRCWriteOnly},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := localConfig()
			if tc.setup != nil {
				tc.setup(&cfg)
			}
			r := newTestRack(t, 3, cfg)
			if tc.before != nil {
				tc.before(r)
			}
			f, psn := r.cas(1, 0x1000, 0, 9)
			x := r.one(ClientSide, f)
			if !tc.local {
				if x.side != ServerSide || x.p.Opcode != tc.toSrv {
					t.Fatalf("got %v to the %v side, want %v to the server", x.p.Opcode, x.side, tc.toSrv)
				}
				if c := r.e.Counters(); c.CASAnsweredLocally != 0 {
					t.Fatalf("counters: %s", c.String())
				}
				return
			}
			r.checkToClient(x, 1, roce.OpRCAtomicAcknowledge, psn)
			if x.p.AtomicAckETH.Orig() != 5 || x.p.AETH.MSN() != 1 {
				t.Fatalf("ATOMIC ACK orig %d MSN %d, want 5 and 1", x.p.AtomicAckETH.Orig(), x.p.AETH.MSN())
			}
			// The next request is in order and its answer takes MSN 2; the
			// shared connection's PSNs did not move.
			s0 := r.cli[0].psn
			f, psn = r.cas(1, 0x1000, 5, 9)
			r.checkToServer(r.one(ClientSide, f), 0, roce.OpRCWriteOnly, s0)
			x = r.one(ServerSide, r.ack(0, s0, synACK, 1))
			r.checkToClient(x, 1, roce.OpRCAtomicAcknowledge, psn)
			if x.p.AtomicAckETH.Orig() != 5 || x.p.AETH.MSN() != 2 {
				t.Fatalf("second ATOMIC ACK orig %d MSN %d, want 5 and 2", x.p.AtomicAckETH.Orig(), x.p.AETH.MSN())
			}
			if c := r.e.Counters(); c.CASAnsweredLocally != 1 || c.CASToWrite != 1 || c.TotalDrops() != 0 {
				t.Fatalf("counters: %s", c.String())
			}
		})
	}
}

// A duplicate of a locally answered CMP_SWAP (a retransmission, or a copy
// a link made) gets the very answer the first one got, even after the word
// has changed, after the shared connection's ring has turned over, and
// after the client's retransmission index slot has been reused.
func TestLocalAnswerDuplicates(t *testing.T) {
	cfg := localConfig()
	r := newTestRack(t, 3, cfg)
	f, psn := r.cas(1, 0x1000, 0, 9)
	again := append([]byte(nil), f...)
	if x := r.one(ClientSide, f); x.side != ClientSide || x.p.AtomicAckETH.Orig() != 5 {
		t.Fatalf("first answer: %v orig %d", x.p.Opcode, x.p.AtomicAckETH.Orig())
	}
	check := func(when string) {
		t.Helper()
		x := r.one(ClientSide, append([]byte(nil), again...))
		r.checkToClient(x, 1, roce.OpRCAtomicAcknowledge, psn)
		if x.p.AtomicAckETH.Orig() != 5 {
			t.Fatalf("%s: duplicate answered with %d, want 5", when, x.p.AtomicAckETH.Orig())
		}
	}
	check("at once")

	// Client 2 takes the lock (5 -> 7) and turns the shared ring over.
	s := r.cli[0].psn
	msn := uint32(0)
	f2, _ := r.cas(2, 0x1000, 5, 7)
	r.checkToServer(r.one(ClientSide, f2), 0, roce.OpRCWriteOnly, s)
	msn++
	r.one(ServerSide, r.ack(0, s, synACK, msn))
	s++
	for i := 0; i < cfg.RingSize; i++ {
		f, _ := r.write(2, 0x1008, le64(uint64(i)))
		r.checkToServer(r.one(ClientSide, f), 0, roce.OpRCWriteOnly, s)
		msn++
		r.one(ServerSide, r.ack(0, s, synACK, msn))
		s++
	}
	check("after the word changed and the shared ring turned over")

	// Client 1 reuses its retransmission index (Window PSNs) with WRITEs
	// on its own connection.
	s1 := r.cli[1].psn
	for i := 0; i < cfg.Window+2; i++ {
		f, _ := r.write(1, 0x5000, le64(uint64(i)))
		x := r.one(ClientSide, f)
		r.one(ServerSide, r.ack(1, x.p.BTH.PSN(), synACK, uint32(i+1)))
	}
	_ = s1
	check("after the client's retransmission index wrapped")
	if c := r.e.Counters(); c.CASAnsweredLocally != 1 || c.ForgottenAnswered != 3 || c.Drops[DropStaleRetransmit] != 0 {
		t.Fatalf("counters: %s", c.String())
	}
}

// The release-ordering barrier with parking: client 1's lock release
// (WRITE of 0 to a remapped lock word) follows its data WRITE, still
// outstanding on its own connection. The release waits in the engine and
// leaves for the shared connection only once the server has acknowledged
// the data, in the same burst as that acknowledgement; the lock word's
// cached value changes only then. Its retransmission meanwhile is dropped,
// and a later request is a gap, NAKed once the release completes.
func TestBarrierParksRelease(t *testing.T) {
	cfg := localConfig()
	cfg.Words[0].Value = 0x77 // held by client 1
	r := newTestRack(t, 3, cfg)
	s0 := r.cli[0].psn
	fd, pd := r.write(1, 0x5000, make([]byte, 64)) // the page, own connection
	r.checkToServer(r.one(ClientSide, fd), 1, roce.OpRCWriteOnly, pd)
	fr, pr := r.write(1, 0x1000, le64(0)) // the release
	again := append([]byte(nil), fr...)
	r.none(ClientSide, fr)
	r.none(ClientSide, again) // its retransmission
	// Another client's CMP_SWAP(0 -> 9) still fails: the release has not
	// left the engine.
	fc, pc := r.cas(2, 0x1000, 0, 9)
	x := r.one(ClientSide, fc)
	r.checkToClient(x, 2, roce.OpRCAtomicAcknowledge, pc)
	if x.p.AtomicAckETH.Orig() != 0x77 {
		t.Fatalf("CMP_SWAP answered %#x before the release left, want 0x77", x.p.AtomicAckETH.Orig())
	}
	fl, pl := r.write(1, 0x5040, le64(1)) // client 1's next request: a gap while the release waits
	r.none(ClientSide, fl)

	if x := r.ackThenRequest(r.ack(1, pd, synACK, 1), 1, pd, roce.OpRCWriteOnly, s0); x.p.RETH.VA() != 0x1000 {
		t.Fatalf("release to %#x", x.p.RETH.VA())
	}
	r.ackThenNAK(r.ack(0, s0, synACK, 1), 1, pr, pl)
	// Now the lock is free in the engine's cache: CMP_SWAP(0 -> 9) is sent.
	fc, _ = r.cas(2, 0x1000, 0, 9)
	r.checkToServer(r.one(ClientSide, fc), 0, roce.OpRCWriteOnly, s0+1)
	c := r.e.Counters()
	if c.Parked != 1 || c.ParkedSent != 1 || c.ParkedDuplicates != 1 || c.Drops[DropBarrier] != 0 || c.Drops[DropPSNGap] != 1 || c.GapNAKs != 1 {
		t.Fatalf("counters: %s", c.String())
	}
}

// A request the engine cannot park (larger than parkBytes) is dropped at
// the barrier and the client NAKed once its operations complete, as
// before parking.
func TestBarrierDropsUnparkable(t *testing.T) {
	r := newTestRack(t, 2, localConfig())
	s0 := r.cli[0].psn
	fw, pw := r.write(1, 0x5000, le64(1))
	r.checkToServer(r.one(ClientSide, fw), 1, roce.OpRCWriteOnly, pw)
	fb, pb := r.write(1, 0x1000, make([]byte, 64)) // 138 bytes
	r.none(ClientSide, append([]byte(nil), fb...))
	r.ackThenNAK(r.ack(1, pw, synACK, 1), 1, pw, pb)
	r.checkToServer(r.one(ClientSide, fb), 0, roce.OpRCWriteOnly, s0)
	if c := r.e.Counters(); c.Drops[DropBarrier] != 1 || c.Parked != 0 {
		t.Fatalf("counters: %s", c.String())
	}
}

// waitConfig is localConfig with failed CMP_SWAPs waiting for the word to
// change; the lock word holds 0x77 (taken).
func waitConfig() Config {
	cfg := localConfig()
	cfg.Servers[0].WaitFailedCAS = true
	cfg.Words[0].Value = 0x77
	return cfg
}

// CMP_SWAPs that would fail wait in the engine, in arrival order; the
// release that frees the word is sent first, and the first waiter's
// CMP_SWAP right behind it, as a WRITE of its swap value; the second
// waiter goes when the first releases.
func TestFailedCASWaitsForRelease(t *testing.T) {
	r := newTestRack(t, 4, waitConfig())
	s0 := r.cli[0].psn
	f1, p1 := r.cas(1, 0x1000, 0, 0xa)
	r.none(ClientSide, f1)
	f2, p2 := r.cas(2, 0x1000, 0, 0xb)
	r.none(ClientSide, f2)
	fr, pr := r.write(3, 0x1000, le64(0)) // the holder releases
	res := r.run(ClientSide, fr)
	if len(res) != 2 {
		t.Fatalf("%d frames, want the release and the first waiter", len(res))
	}
	r.checkToServer(res[0], 0, roce.OpRCWriteOnly, s0)
	r.checkGrantWrite(res[1], s0+1, 0xa)
	res = r.run(ServerSide, r.ack(0, s0+1, synACK, 2))
	if len(res) != 2 {
		t.Fatalf("%d frames, want the release's ACK and the waiter's ATOMIC ACK", len(res))
	}
	r.checkToClient(res[0], 3, roce.OpRCAcknowledge, pr)
	r.checkToClient(res[1], 1, roce.OpRCAtomicAcknowledge, p1)
	if res[1].p.AtomicAckETH.Orig() != 0 {
		t.Fatalf("first waiter told %#x, want 0 (it took the lock)", res[1].p.AtomicAckETH.Orig())
	}
	fr, _ = r.write(1, 0x1000, le64(0))
	res = r.run(ClientSide, fr)
	if len(res) != 2 {
		t.Fatalf("%d frames, want the release and the second waiter", len(res))
	}
	r.checkToServer(res[1], 0, roce.OpRCWriteOnly, s0+3)
	res = r.run(ServerSide, r.ack(0, s0+3, synACK, 4))
	r.checkToClient(res[len(res)-1], 2, roce.OpRCAtomicAcknowledge, p2)
	if c := r.e.Counters(); c.CASWaited != 2 || c.CASWoken != 2 || c.CASAnsweredLocally != 0 || c.TotalDrops() != 0 {
		t.Fatalf("counters: %s", c.String())
	}
}

// A waiting CMP_SWAP's retransmission (its requester's timer fired) is
// answered as failed with the value then known, and the CMP_SWAP waits no
// more: the release later sends only itself. A duplicate of that answer
// is answered identically.
func TestWaitingCASRetransmissionAnswered(t *testing.T) {
	r := newTestRack(t, 4, waitConfig())
	s0 := r.cli[0].psn
	f1, p1 := r.cas(1, 0x1000, 0, 0xa)
	again := append([]byte(nil), f1...)
	again2 := append([]byte(nil), f1...)
	r.none(ClientSide, f1)
	x := r.one(ClientSide, again)
	r.checkToClient(x, 1, roce.OpRCAtomicAcknowledge, p1)
	if x.p.AtomicAckETH.Orig() != 0x77 || x.p.AETH.MSN() != 1 {
		t.Fatalf("answer orig %#x MSN %d, want 0x77 and 1", x.p.AtomicAckETH.Orig(), x.p.AETH.MSN())
	}
	fr, _ := r.write(3, 0x1000, le64(0))
	r.checkToServer(r.one(ClientSide, fr), 0, roce.OpRCWriteOnly, s0)
	x = r.one(ClientSide, again2)
	if x.p.AtomicAckETH.Orig() != 0x77 {
		t.Fatalf("duplicate answered %#x, want 0x77", x.p.AtomicAckETH.Orig())
	}
	if c := r.e.Counters(); c.CASWaited != 1 || c.CASWaitAnswered != 1 || c.CASWoken != 0 {
		t.Fatalf("counters: %s", c.String())
	}
}

// A fatal NAK on the shared connection makes the engine distrust its
// cache: waiting CMP_SWAPs are sent to the server.
func TestWaitersSentAfterFatalNAK(t *testing.T) {
	r := newTestRack(t, 4, waitConfig())
	s0 := r.cli[0].psn
	f1, _ := r.cas(1, 0x1000, 0, 0xa)
	r.none(ClientSide, f1)
	fw, _ := r.write(3, 0x1008, le64(3))
	r.checkToServer(r.one(ClientSide, fw), 0, roce.OpRCWriteOnly, s0)
	res := r.run(ServerSide, r.ack(0, s0, roce.NAKSyndrome(roce.NAKRemoteAccessError), 0))
	if len(res) != 2 {
		t.Fatalf("%d frames, want the NAK and the waiter", len(res))
	}
	r.checkToServer(res[1], 0, roce.OpRCWriteOnly, s0+1)
	if c := r.e.Counters(); c.CASWoken != 1 {
		t.Fatalf("counters: %s", c.String())
	}
}

// ackThenRequest feeds the server's frame f and checks that the engine
// emits two frames: client i's ACK at ackPSN, then a request op at outPSN
// on the shared connection (client 0's), which it returns.
func (r *testRack) ackThenRequest(f []byte, i int, ackPSN uint32, op roce.Opcode, outPSN uint32) emitted {
	r.t.Helper()
	res := r.run(ServerSide, f)
	if len(res) != 2 {
		r.t.Fatalf("%d frames, want an ACK and a request", len(res))
	}
	r.checkToClient(res[0], i, roce.OpRCAcknowledge, ackPSN)
	r.checkToServer(res[1], 0, op, outPSN)
	return res[1]
}

// ackThenNAK feeds the server's frame f and checks that the engine emits
// two frames to client i: an ACK at ackPSN, then a NAK PSN sequence error
// at nakPSN.
func (r *testRack) ackThenNAK(f []byte, i int, ackPSN, nakPSN uint32) {
	r.t.Helper()
	res := r.run(ServerSide, f)
	if len(res) != 2 {
		r.t.Fatalf("%d frames, want an ACK and a NAK", len(res))
	}
	r.checkToClient(res[0], i, roce.OpRCAcknowledge, ackPSN)
	r.checkToClient(res[1], i, roce.OpRCAcknowledge, nakPSN)
	if res[1].p.AETH.Syndrome() != synSeq {
		r.t.Fatalf("second frame %v, want NAK", res[1].p.AETH.Syndrome())
	}
}
