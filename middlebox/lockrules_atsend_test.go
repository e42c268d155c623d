package middlebox

import (
	"testing"

	"github.com/swordbox/swordbox/roce"
)

// atSendConfig is waitConfig with converted CMP_SWAPs answered when sent.
func atSendConfig() Config {
	cfg := waitConfig()
	cfg.Servers[0].AnswerAtSend = true
	return cfg
}

// The first waiter's CMP_SWAP goes out right behind the release, as a
// WRITE of its swap value, and is answered in the same step, before the
// server acknowledges it; the server's ACK then answers only the release.
func TestAtSendWaiterAnsweredWithRelease(t *testing.T) {
	r := newTestRack(t, 4, atSendConfig())
	s0 := r.cli[0].psn
	f1, p1 := r.cas(1, 0x1000, 0, 0xa)
	r.none(ClientSide, f1)
	fr, pr := r.write(3, 0x1000, le64(0))
	res := r.run(ClientSide, fr)
	if len(res) != 3 {
		t.Fatalf("%d frames, want the release, the waiter's WRITE and its ATOMIC ACK", len(res))
	}
	r.checkToServer(res[0], 0, roce.OpRCWriteOnly, s0)
	r.checkGrantWrite(res[1], s0+1, 0xa)
	r.checkAtomicAck(res[2], 1, p1, 0, 1)
	res = r.run(ServerSide, r.ack(0, s0+1, synACK, 2))
	if len(res) != 1 {
		t.Fatalf("%d frames, want the release's ACK only", len(res))
	}
	r.checkToClient(res[0], 3, roce.OpRCAcknowledge, pr)
	if c := r.e.Counters(); c.CASAnsweredAtSend != 1 || c.TotalDrops() != 0 {
		t.Fatalf("counters: %s", c.String())
	}
}

// freeConfig is atSendConfig with the lock word free (0).
func freeConfig() Config {
	cfg := atSendConfig()
	cfg.Words[0].Value = 0
	return cfg
}

// A CMP_SWAP that takes a free lock is answered when its WRITE is sent.
// The client can go on at once on its own connection (no barrier: the
// WRITE is in no client's FIFO), a duplicate of the CMP_SWAP is answered
// identically before and after the server's ACK, and the ACK (also its
// duplicate) answers nobody.
func TestAtSendFreeLock(t *testing.T) {
	r := newTestRack(t, 3, freeConfig())
	s0 := r.cli[0].psn
	f, psn := r.cas(1, 0x1000, 0, 0xa)
	again := append([]byte(nil), f...)
	res := r.run(ClientSide, f)
	if len(res) != 2 {
		t.Fatalf("%d frames, want the WRITE and the ATOMIC ACK", len(res))
	}
	r.checkToServer(res[0], 0, roce.OpRCWriteOnly, s0)
	r.checkAtomicAck(res[1], 1, psn, 0, 1)
	dup := func() {
		t.Helper()
		r.checkAtomicAck(r.one(ClientSide, append([]byte(nil), again...)), 1, psn, 0, 1)
	}
	dup() // before the server's ACK
	// The page READ goes on the client's own connection while the WRITE is
	// unacknowledged (its first request there: outgoing PSN pr-1).
	fr, pr := r.read(1, 0x5000, 64, 1024)
	r.checkToServer(r.one(ClientSide, fr), 1, roce.OpRCReadRequest, pr-1)
	// A second CMP_SWAP on the word fails against the cached owner.
	f2, p2 := r.cas(2, 0x1000, 0, 0xb)
	r.none(ClientSide, f2) // waits
	ack := r.ack(0, s0, synACK, 1)
	r.none(ServerSide, append([]byte(nil), ack...))
	r.none(ServerSide, ack) // duplicate ACK
	dup()                   // after it
	// The holder releases; the waiter takes the lock, answered at once.
	f3, p3 := r.write(1, 0x1000, le64(0))
	_ = f3
	x := r.one(ServerSide, r.readResp(1, roce.OpRCReadResponseOnly, pr-1, make([]byte, 64), 1))
	r.checkToClient(x, 1, roce.OpRCReadResponseOnly, pr)
	res = r.run(ClientSide, f3)
	if len(res) != 3 {
		t.Fatalf("%d frames, want the release, the waiter's WRITE, its ATOMIC ACK", len(res))
	}
	r.checkToServer(res[0], 0, roce.OpRCWriteOnly, s0+1)
	r.checkToServer(res[1], 0, roce.OpRCWriteOnly, s0+2)
	r.checkToClient(res[2], 2, roce.OpRCAtomicAcknowledge, p2)
	x = r.one(ServerSide, r.ack(0, s0+2, synACK, 3))
	r.checkToClient(x, 1, roce.OpRCAcknowledge, p3)
	c := r.e.Counters()
	if c.CASAnsweredAtSend != 2 || c.RetransmitsAnswered != 2 || c.TotalDrops() != 1 || c.Drops[DropDupIgnored] != 1 {
		t.Fatalf("counters: %s", c.String())
	}
}

// Where the rule does not apply the CMP_SWAP is answered at the server's
// ACK, as before.
func TestAtSendNotApplied(t *testing.T) {
	for _, tc := range []struct {
		name   string
		setup  func(cfg *Config)
		before func(r *testRack)
	}{
		{name: "rule off", setup: func(cfg *Config) { cfg.Servers[0].AnswerAtSend = false }},
		{name: "client has an operation outstanding", before: func(r *testRack) {
			f, _ := r.write(1, 0x1008, le64(3)) // on the shared connection, not yet acknowledged
			r.one(ClientSide, f)
		}},
		{name: "after a fatal NAK on the shared connection", before: func(r *testRack) {
			s0 := r.cli[0].psn
			f, _ := r.write(2, 0x1008, le64(3))
			r.one(ClientSide, f)
			r.one(ServerSide, r.ack(0, s0, roce.NAKSyndrome(roce.NAKRemoteAccessError), 0))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := freeConfig()
			if tc.setup != nil {
				tc.setup(&cfg)
			}
			r := newTestRack(t, 3, cfg)
			if tc.before != nil {
				tc.before(r)
			}
			f, _ := r.cas(1, 0x1000, 0, 9)
			res := r.run(ClientSide, f)
			if len(res) != 1 || res[0].side != ServerSide {
				t.Fatalf("%d frames (first to the %v side), want only the request to the server", len(res), res[0].side)
			}
			if c := r.e.Counters(); c.CASAnsweredAtSend != 0 {
				t.Fatalf("counters: %s", c.String())
			}
		})
	}
	t.Run("a corrupted CMP_SWAP (ICRC not verified)", func(t *testing.T) {
		cfg := freeConfig()
		cfg.SkipICRCCheck = true
		r := newTestRack(t, 3, cfg)
		f, _ := r.cas(1, 0x1000, 0, 9)
		f[len(f)-1] ^= 1 // the ICRC
		r.out.Reset()
		r.e.Process(0, ClientSide, f, r.out)
		if len(r.out.Frames) != 1 || r.out.Sides[0] != ServerSide {
			t.Fatalf("%d frames, want only the (still corrupted) WRITE to the server", len(r.out.Frames))
		}
	})
	t.Run("FETCH_ADD", func(t *testing.T) {
		r := newTestRack(t, 3, freeConfig())
		f, _ := r.fetchAdd(1, 0x1000, 2)
		if x := r.one(ClientSide, f); x.side != ServerSide || x.p.Opcode != roce.OpRCWriteOnly {
			t.Fatalf("%v to the %v side, want a WRITE to the server", x.p.Opcode, x.side)
		}
	})
}

// rule is checked with every copy slot taken: the next CMP_SWAP is
// answered at its ACK, and a slot freed by an ACK serves again.
func TestAtSendStoreFull(t *testing.T) {
	cfg := freeConfig()
	cfg.MaxWords = 512
	cfg.RingSize = 1024
	cfg.Words = nil
	for i := 0; i <= sentSlots; i++ {
		cfg.Words = append(cfg.Words, WordConfig{VA: 0x1000 + 8*uint64(i)})
	}
	r := newTestRack(t, 2, cfg)
	s0 := r.cli[0].psn
	for i := 0; i < sentSlots; i++ {
		f, _ := r.cas(1, 0x1000+8*uint64(i), 0, 1)
		if res := r.run(ClientSide, f); len(res) != 2 {
			t.Fatalf("CMP_SWAP %d: %d frames, want the WRITE and its answer", i, len(res))
		}
	}
	f, psn := r.cas(1, 0x1000+8*sentSlots, 0, 1)
	r.checkToServer(r.one(ClientSide, f), 0, roce.OpRCWriteOnly, s0+sentSlots)
	x := r.one(ServerSide, r.ack(0, s0+sentSlots, synACK, sentSlots+1))
	r.checkToClient(x, 1, roce.OpRCAtomicAcknowledge, psn)
	if c := r.e.Counters(); c.AtSendStoreFull != 1 || c.CASAnsweredAtSend != sentSlots || len(r.e.sentFree) != sentSlots {
		t.Fatalf("counters: %s; free slots %d", c.String(), len(r.e.sentFree))
	}
}

// A WRITE answered at sending that the server never got is resent from the
// engine's own copy: when the server NAKs its PSN (sequence error), even
// after the replay log has overwritten its copy there; and, when that NAK
// is lost too, when a client resends a later request on the shared
// connection. A fatal NAK for it answers nobody and ends answers at
// sending.
func TestAtSendLoss(t *testing.T) {
	// setup: client 1's CMP_SWAP, answered at sending, is lost on the way
	// to the server, and client 2 sends 60 WRITEs on the shared connection
	// after it (more than the 4 KiB replay log holds).
	setup := func(t *testing.T) (r *testRack, s0 uint32, lost, later []byte) {
		cfg := freeConfig()
		cfg.ReplayLogBytes, cfg.Window, cfg.RingSize = 4096, 64, 256
		r = newTestRack(t, 3, cfg)
		s0 = r.cli[0].psn
		f, _ := r.cas(1, 0x1000, 0, 0xa)
		res := r.run(ClientSide, f)
		if len(res) != 2 {
			t.Fatalf("%d frames, want the WRITE and its answer", len(res))
		}
		lost = res[0].raw
		for i := 0; i < 60; i++ {
			f, _ := r.write(2, 0x1008, le64(uint64(i)))
			if i == 0 {
				later = append([]byte(nil), f...)
			}
			r.checkToServer(r.one(ClientSide, f), 0, roce.OpRCWriteOnly, s0+1+uint32(i))
		}
		return r, s0, lost, later
	}
	resent := func(t *testing.T, r *testRack, res []emitted, lost []byte) {
		t.Helper()
		if len(res) == 0 || res[0].side != ServerSide || string(res[0].raw) != string(lost) {
			t.Fatalf("%d frames, want the lost WRITE again first", len(res))
		}
		for _, x := range res {
			if x.side != ServerSide {
				t.Fatalf("a frame to the client side: %v", x.p.Opcode)
			}
		}
		if c := r.e.Counters(); c.AtSendResent != 1 || c.ReplayLost == 0 {
			t.Fatalf("counters: %s", c.String())
		}
	}
	t.Run("sequence NAK", func(t *testing.T) {
		r, s0, lost, _ := setup(t)
		resent(t, r, r.run(ServerSide, r.ack(0, s0, roce.NAKSyndrome(roce.NAKPSNSequenceError), 0)), lost)
	})
	t.Run("NAK lost, a later request resent", func(t *testing.T) {
		r, _, lost, later := setup(t)
		res := r.run(ClientSide, later)
		if len(res) < 2 || res[0].p.BTH.PSN() != lost2PSN(t, lost)+1 {
			t.Fatalf("%d frames, want the retransmission, then the replay", len(res))
		}
		resent(t, r, res[1:], lost)
	})
	t.Run("fatal NAK", func(t *testing.T) {
		r, s0, _, _ := setup(t)
		if res := r.run(ServerSide, r.ack(0, s0, roce.NAKSyndrome(roce.NAKRemoteAccessError), 0)); len(res) != 0 {
			t.Fatalf("%d frames, want none (client 1 has its answer)", len(res))
		}
		if c := r.e.Counters(); c.AtSendFailed != 1 || len(r.e.sentFree) != sentSlots || !r.e.servers[0].noLocal {
			t.Fatalf("counters: %s", c.String())
		}
	})
	t.Run("ACKed: the copy's slot is free", func(t *testing.T) {
		r, s0, _, _ := setup(t)
		r.run(ServerSide, r.ack(0, s0, synACK, 1))
		if c := r.e.Counters(); len(r.e.sentFree) != sentSlots || c.AtSendResent != 0 {
			t.Fatalf("counters: %s", c.String())
		}
	})
}

func lost2PSN(t *testing.T, f []byte) uint32 {
	t.Helper()
	p, err := roce.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return p.BTH.PSN()
}

// checkAtomicAck checks an ATOMIC ACK to client i at psn carrying orig and
// MSN msn.
func (r *testRack) checkAtomicAck(x emitted, i int, psn uint32, orig uint64, msn uint32) {
	r.t.Helper()
	r.checkToClient(x, i, roce.OpRCAtomicAcknowledge, psn)
	if x.p.AtomicAckETH.Orig() != orig || x.p.AETH.MSN() != msn {
		r.t.Fatalf("ATOMIC ACK to client %d: orig %#x MSN %d, want %#x and %d", i, x.p.AtomicAckETH.Orig(), x.p.AETH.MSN(), orig, msn)
	}
}

// While a CMP_SWAP waits on its word, another request at its PSN (which
// only a broken requester sends) is dropped as a copy of the waiting one,
// which stands and is sent when the word is released; the waiters' queue
// stays intact.
func TestWaitingCASOtherRequestAtItsPSN(t *testing.T) {
	r := newTestRack(t, 4, waitConfig())
	s0 := r.cli[0].psn
	f1, p1 := r.cas(1, 0x1000, 0, 0xa)
	r.none(ClientSide, f1)
	fw := r.reqFields(1, roce.OpRCWriteOnly, p1)
	fw.VA, fw.RKey, fw.DMALen, fw.Payload = 0x5000, 0x1234, 8, le64(1)
	r.none(ClientSide, buildFrame(t, &fw))
	fr, pr := r.write(3, 0x1000, le64(0))
	res := r.run(ClientSide, fr)
	if len(res) != 2 {
		t.Fatalf("%d frames, want the release and the waiter", len(res))
	}
	r.checkToServer(res[1], 0, roce.OpRCWriteOnly, s0+1)
	res = r.run(ServerSide, r.ack(0, s0+1, synACK, 2))
	r.checkToClient(res[0], 3, roce.OpRCAcknowledge, pr)
	r.checkAtomicAck(res[1], 1, p1, 0, 1)
	if c := r.e.Counters(); c.ParkedDuplicates != 1 || c.CASWoken != 1 {
		t.Fatalf("counters: %s", c.String())
	}
}

// The holder whose own connection is the shared one writes its data and
// releases on that connection (no barrier: one connection, RC order at
// the server). The waiter's grant goes out behind the release, but it is
// not answered at sending while the data WRITE is unacknowledged: the new
// holder's page READ goes on its own connection, which the server does not
// order behind the shared one, and would read the page without the data
// (a lost or delayed data WRITE: an insert lost, seen in
// TestLinearizableHotKeys/cas-to-write/faults). It is answered when the
// server acknowledges the grant, which acknowledges the data before it;
// once no data is outstanding on the shared connection, grants are
// answered at sending again.
func TestAtSendWaitsForDataOnShared(t *testing.T) {
	r := newTestRack(t, 3, freeConfig())
	s0 := r.cli[0].psn
	f, p0 := r.cas(0, 0x1000, 0, 0xa) // client 0, whose connection is the shared one, takes the lock
	res := r.run(ClientSide, f)
	if len(res) != 2 {
		t.Fatalf("%d frames, want the WRITE and the ATOMIC ACK", len(res))
	}
	r.checkAtomicAck(res[1], 0, p0, 0, 1)
	f1, p1 := r.cas(1, 0x1000, 0, 0xb)
	r.none(ClientSide, f1)                // waits
	fd, _ := r.write(0, 0x5000, le64(42)) // the data, on client 0's connection: the shared one
	r.checkToServer(r.one(ClientSide, fd), 0, roce.OpRCWriteOnly, s0+1)
	fr, pr := r.write(0, 0x1000, le64(0)) // the release, behind it
	res = r.run(ClientSide, fr)
	if len(res) != 2 {
		t.Fatalf("%d frames, want the release and the grant only (no ATOMIC ACK while the data is unacknowledged)", len(res))
	}
	r.checkToServer(res[0], 0, roce.OpRCWriteOnly, s0+2)
	r.checkToServer(res[1], 0, roce.OpRCWriteOnly, s0+3)
	// The server acknowledges through the grant: the release and the grant
	// are answered.
	res = r.run(ServerSide, r.ack(0, s0+3, synACK, 4))
	if len(res) != 2 {
		t.Fatalf("%d frames, want the release's ACK and the grant's ATOMIC ACK", len(res))
	}
	r.checkToClient(res[0], 0, roce.OpRCAcknowledge, pr)
	r.checkAtomicAck(res[1], 1, p1, 0, 1)
	// Nothing of data outstanding: client 1's release lets client 2's
	// CMP_SWAP be answered at sending.
	fr1, _ := r.write(1, 0x1000, le64(0))
	r.checkToServer(r.one(ClientSide, fr1), 0, roce.OpRCWriteOnly, s0+4)
	f2, p2 := r.cas(2, 0x1000, 0, 0xc)
	res = r.run(ClientSide, f2)
	if len(res) != 2 {
		t.Fatalf("%d frames, want the WRITE and the ATOMIC ACK", len(res))
	}
	r.checkAtomicAck(res[1], 2, p2, 0, 1)
	if c := r.e.Counters(); c.CASAnsweredAtSend != 2 || c.AtSendBehindData != 1 {
		t.Fatalf("counters: %s", c.String())
	}
}
