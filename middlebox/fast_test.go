package middlebox

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/swordbox/swordbox/roce"
)

// twin runs every frame through two engines of the same configuration, one
// with the fast path (fast.go) and one without, and fails at the first
// frame whose outputs or counters differ.
type twin struct {
	t          testing.TB
	fast, slow *Engine
	fo, so     *Out
	n          int
	fastTaken  int // frames the fast path handled
}

func newTwin(t testing.TB, cfg Config) *twin {
	t.Helper()
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.fast = false
	return &twin{t: t, fast: a, slow: b, fo: NewOut(1024, 1<<18), so: NewOut(1024, 1<<18)}
}

// step processes frame on side in, in both engines, and returns the fast
// engine's output (valid until the next step).
func (w *twin) step(now int64, in Side, frame []byte) *Out {
	w.t.Helper()
	w.n++
	a, b := append([]byte(nil), frame...), append([]byte(nil), frame...)
	w.fo.Reset()
	w.so.Reset()
	hits := w.fast.fastHits
	w.fast.Process(now, in, a, w.fo)
	if w.fast.fastHits != hits {
		w.fastTaken++
	}
	w.slow.Process(now, in, b, w.so)
	if fc, sc := w.fast.Counters(), w.slow.Counters(); fc != sc {
		w.t.Fatalf("frame %d (%v side, % x): counters differ\nfast: %s\nslow: %s", w.n, in, frame, fc.String(), sc.String())
	}
	if w.fo.Len() != w.so.Len() {
		w.t.Fatalf("frame %d (%v side, % x): fast path emitted %d frames, general path %d", w.n, in, frame, w.fo.Len(), w.so.Len())
	}
	for i := range w.fo.Frames {
		if w.fo.Sides[i] != w.so.Sides[i] || w.fo.FromInput[i] != w.so.FromInput[i] || !bytes.Equal(w.fo.Frames[i], w.so.Frames[i]) {
			w.t.Fatalf("frame %d (%v side, % x): output %d differs\nfast: %v %v % x\nslow: %v %v % x", w.n, in, frame, i,
				w.fo.Sides[i], w.fo.FromInput[i], w.fo.Frames[i], w.so.Sides[i], w.so.FromInput[i], w.so.Frames[i])
		}
	}
	return w.fo
}

// A random protocol run: clients (preloaded and learned) send CMP_SWAP,
// FETCH_ADD, WRITEs on and off tracked words, small and multi-packet
// READs, multi-packet WRITEs; they retransmit, skip PSNs, send corrupted
// frames and frames with Ethernet padding; a server answers what reached
// it with coalesced ACKs, ATOMIC ACKs, READ responses, sequence NAKs and
// duplicates, sometimes corrupted. Both engines must agree on every frame.
func TestFastPathMatchesGeneral(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		remap := seed%3 != 0
		cfg := testConfig(remap, remap && seed%2 == 1)
		if seed == 4 {
			cfg.SkipICRCCheck = true
		}
		if seed == 5 {
			cfg.NAKRecovery = NAKBroadcast
		}
		runTwinTrace(t, seed, cfg, 4000)
	}
	// The lock rules (lockrules.go): failed CMP_SWAPs answered, held, and
	// converted ones answered at sending.
	for seed := uint64(7); seed <= 9; seed++ {
		cfg := testConfig(true, true)
		sv := &cfg.Servers[0]
		sv.AnswerFailedCAS, sv.WaitFailedCAS, sv.AnswerAtSend = true, seed >= 8, seed == 9
		cfg.Words = []WordConfig{{VA: 0x1000}, {VA: 0x1008}, {VA: 0x1010}}
		c := runTwinTrace(t, seed, cfg, 4000)
		if c.CASAnsweredLocally+c.CASWaitAnswered == 0 || seed >= 8 && c.CASWaited == 0 || seed == 9 && c.CASAnsweredAtSend == 0 {
			t.Errorf("seed %d: the lock rules never applied: %s", seed, c.String())
		}
	}
}

func runTwinTrace(t *testing.T, seed uint64, cfg Config, steps int) Counters {
	rng := rand.New(rand.NewPCG(seed, 99))
	r := newTestRack(t, 6, cfg)
	cfg = r.e.cfg
	// Clients 4 and 5 are not preloaded: the engine learns them.
	cfg.Conns = cfg.Conns[:4]
	w := newTwin(t, cfg)
	r.t = t

	type sent struct {
		in  Side
		raw []byte
	}
	var history []sent    // every frame sent, for retransmissions and corruption
	var toServer [][]byte // requests the server received and has not answered
	msn := uint32(0)

	send := func(in Side, f []byte) {
		out := w.step(int64(len(history)), in, f)
		history = append(history, sent{in, append([]byte(nil), f...)})
		for i, o := range out.Frames {
			if out.Sides[i] == ServerSide && rng.IntN(50) != 0 { // a few are lost
				toServer = append(toServer, append([]byte(nil), o...))
			}
		}
	}
	// hostOf returns the rack client whose connection a request to the
	// server travels on.
	hostOf := func(p *roce.Packet) int {
		for j, h := range r.cli {
			if h.srvQP == p.BTH.DestQP() && h.ip == p.IP.Src() {
				return j
			}
		}
		return -1
	}
	for step := 0; step < steps; step++ {
		i := rng.IntN(len(r.cli))
		// Mostly, the client resends from where the engine expects it (as
		// after a NAK or a timeout); sometimes it is out of step.
		h := r.cli[i]
		k0, k1 := reqKey{cli: h.ip, srv: testSrvIP, port: h.port, qp: h.srvQP}.words()
		if ci, ok := w.fast.req.get(k0, k1); ok && w.fast.conns[ci].inKnown && rng.IntN(8) != 0 {
			r.cli[i].psn = uint32(w.fast.conns[ci].inNext)
		}
		switch x := rng.IntN(100); {
		case x < 12:
			f, _ := r.cas(i, 0x1000+8*uint64(rng.IntN(3)), uint64(rng.IntN(2)), uint64(rng.IntN(2)))
			send(ClientSide, f)
		case x < 15:
			f, _ := r.fetchAdd(i, 0x1000+8*uint64(rng.IntN(3)), uint64(rng.IntN(5)))
			send(ClientSide, f)
		case x < 24:
			va := uint64(0x5000 + 64*rng.IntN(4))
			if rng.IntN(3) == 0 {
				va = 0x1000 + uint64(rng.IntN(24)) // on tracked words, aligned or not
			}
			n := 4 * (1 + rng.IntN(2))
			if rng.IntN(4) == 0 {
				n = 1 + rng.IntN(8) // padded
			}
			f := r.reqFields(i, roce.OpRCWriteOnly, r.cli[i].psn)
			f.VA, f.RKey, f.DMALen, f.Payload, f.PadCnt = va, 0x1234, uint32(n), le64(rng.Uint64())[:n], uint8((4-n%4)%4)
			r.cli[i].psn = uint32(roce.PSN(r.cli[i].psn).Add(1))
			send(ClientSide, buildFrame(t, &f))
		case x < 30:
			n := uint32(64)
			if rng.IntN(4) == 0 {
				n = 3000 // three response packets at PMTU 1024
			}
			f, _ := r.read(i, 0x8000, n, 1024)
			send(ClientSide, f)
		case x < 32:
			// A multi-packet WRITE.
			f := r.reqFields(i, roce.OpRCWriteFirst, r.cli[i].psn)
			f.VA, f.RKey, f.DMALen, f.Payload = 0x9000, 0x1234, 2048, make([]byte, 1024)
			send(ClientSide, buildFrame(t, &f))
			f = r.reqFields(i, roce.OpRCWriteLast, uint32(roce.PSN(r.cli[i].psn).Add(1)))
			f.Payload = make([]byte, 1024)
			send(ClientSide, buildFrame(t, &f))
			r.cli[i].psn = uint32(roce.PSN(r.cli[i].psn).Add(2))
		case x < 34 && len(history) > 0:
			// A retransmission of an earlier frame, or one from the server.
			h := history[len(history)-1-rng.IntN(min(len(history), 40))]
			send(h.in, h.raw)
		case x < 35:
			r.cli[i].psn = uint32(roce.PSN(r.cli[i].psn).Add(1 + rng.IntN(2))) // a gap
			f, _ := r.write(i, 0x5000, le64(1))
			send(ClientSide, f)
		case x < 38 && len(history) > 0:
			// A corrupted frame, its ICRC fixed or not, or padded.
			h := history[len(history)-1-rng.IntN(min(len(history), 40))]
			f := append([]byte(nil), h.raw...)
			switch rng.IntN(3) {
			case 0:
				f[rng.IntN(len(f))] ^= byte(1 + rng.IntN(255))
			case 1:
				f[rng.IntN(min(len(f), 64))] ^= byte(1 + rng.IntN(255))
				_ = roce.SetICRC(f)
			default:
				f = append(f, make([]byte, 1+rng.IntN(8))...) // Ethernet padding
			}
			send(h.in, f)
		case len(toServer) > 0:
			// The server answers the oldest requests it received.
			k := min(len(toServer), 1+rng.IntN(6))
			var last *roce.Packet
			lastJ := -1
			for _, q := range toServer[:k] {
				p, err := roce.Parse(q)
				if err != nil {
					continue
				}
				j := hostOf(&p)
				if j < 0 {
					continue
				}
				psn := p.BTH.PSN()
				switch p.Opcode {
				case roce.OpRCCompareSwap, roce.OpRCFetchAdd:
					msn++
					send(ServerSide, r.atomicAck(j, psn, uint64(rng.IntN(2)), msn))
				case roce.OpRCReadRequest:
					n := (p.RETH.DMALen() + 1023) / 1024
					for m := uint32(0); m < max(n, 1); m++ {
						op := roce.OpRCReadResponseMiddle
						switch {
						case n <= 1:
							op = roce.OpRCReadResponseOnly
						case m == 0:
							op = roce.OpRCReadResponseFirst
						case m == n-1:
							op = roce.OpRCReadResponseLast
						}
						if m == n-1 || n <= 1 {
							msn++
						}
						send(ServerSide, r.readResp(j, op, uint32(roce.PSN(psn).Add(int(m))), make([]byte, min(p.RETH.DMALen()-1024*m, 1024)), msn))
					}
				default:
					msn++
					pp := p
					last, lastJ = &pp, j
				}
			}
			if last != nil {
				syn := roce.ACKSyndrome(roce.CreditInvalid)
				psn := last.BTH.PSN()
				switch rng.IntN(10) {
				case 0:
					syn = roce.NAKSyndrome(roce.NAKPSNSequenceError)
				case 1:
					syn = roce.RNRNAKSyndrome(3)
				}
				f := r.ack(lastJ, psn, syn, msn)
				send(ServerSide, f)
				if rng.IntN(8) == 0 {
					send(ServerSide, f) // a duplicate
				}
			}
			toServer = toServer[k:]
		}
	}
	if w.fastTaken == 0 || w.fastTaken == w.n {
		t.Fatalf("seed %d: the fast path took %d of %d frames: the trace does not exercise both paths", seed, w.fastTaken, w.n)
	}
	c := w.fast.Counters()
	t.Logf("seed %d: %d frames, %d on the fast path; %s", seed, w.n, w.fastTaken, c.String())
	return c
}

// FuzzFastPath feeds a fuzzed frame, after some valid traffic, to both
// engines: they must agree.
func FuzzFastPath(f *testing.F) {
	seed := newTestRack(f, 3, testConfig(true, true))
	c1, _ := seed.cas(1, 0x1000, 0, 1)
	f.Add(byte(2), c1)
	f.Add(byte(3), seed.ack(0, 7, synACK, 1))
	f.Add(byte(3), seed.atomicAck(0, 7, 0, 1))
	f.Add(byte(0x82), c1)
	f.Fuzz(func(t *testing.T, side byte, frame []byte) {
		cfg := testConfig(true, true)
		if side&0x80 != 0 { // the lock rules: client 1 takes the word (answered at sending), client 0 waits on it
			sv := &cfg.Servers[0]
			sv.AnswerFailedCAS, sv.WaitFailedCAS, sv.AnswerAtSend = true, true, true
			cfg.Words = []WordConfig{{VA: 0x1000}}
		}
		r := newTestRack(t, 3, cfg)
		w := newTwin(t, r.e.cfg)
		a, _ := r.cas(1, 0x1000, 0, 1)
		b, _ := r.write(2, 0x5000, le64(7))
		c, _ := r.cas(0, 0x1000, 0, 2)
		for _, x := range [][]byte{a, b, c} {
			w.step(0, ClientSide, x)
		}
		in := append([]byte(nil), frame...)
		if side&2 != 0 {
			_ = roce.SetICRC(in)
		}
		if side&4 != 0 && len(in) >= xBTH+12 {
			// Aim at the connections' PSNs.
			binary.BigEndian.PutUint32(in[xBTH+8:], r.cli[int(side>>3)%3].psn)
			_ = roce.SetICRC(in)
		}
		w.step(1, Side(side&1), in)
	})
}

// Frames whose IPv4 total length is too short for the headers are not the
// fast path's (roce.ParseInto refuses them too): no panic, same drops.
func TestFastPathShortTotalLength(t *testing.T) {
	r := newTestRack(t, 3, testConfig(true, true))
	w := newTwin(t, r.e.cfg)
	a, _ := r.cas(1, 0x1000, 0, 1)
	w.step(0, ClientSide, a)
	for _, op := range []roce.Opcode{roce.OpRCReadResponseMiddle, roce.OpRCAcknowledge, roce.OpRCWriteOnly} {
		var f []byte
		if op == roce.OpRCWriteOnly {
			f, _ = r.write(1, 0x5000, le64(1))
		} else {
			f = r.readResp(0, roce.OpRCReadResponseMiddle, 7, make([]byte, 64), 1)
		}
		f[xBTH] = byte(op)
		for total := 0; total < xHdrs+roce.ICRCLen; total++ {
			binary.BigEndian.PutUint16(f[xIP+roce.IPv4TotalLenOff:], uint16(total))
			binary.BigEndian.PutUint16(f[xUDP+roce.UDPLengthOff:], uint16(total-roce.IPv4MinLen))
			side := ServerSide
			if op == roce.OpRCWriteOnly {
				side = ClientSide
			}
			w.step(1, side, f)
		}
	}
	if c := w.fast.Counters(); c.Drops[DropMalformed] == 0 {
		t.Fatalf("short frames not dropped as malformed: %s", c.String())
	}
}

// With SkipICRCCheck a frame that arrived corrupted leaves corrupted, also
// through the fast path, with the same bytes as the general path gives
// (the twin compares them; TestCarriedICRCError checks the ICRC itself
// against the intact frame's); with verification on,
// the engine drops it. Requests (a CMP_SWAP replaced by a WRITE, a WRITE, a
// READ) and a READ response, each corrupted in a field the engine does not
// act on.
func TestFastPathCorruption(t *testing.T) {
	for _, skip := range []bool{true, false} {
		cfg := testConfig(true, true)
		cfg.SkipICRCCheck = skip
		cfg.Words = []WordConfig{{VA: 0x1000}}
		r := newTestRack(t, 2, cfg) // builds the frames
		w := newTwin(t, r.e.cfg)
		// A clean round first: the engine learns what the fast path needs.
		f, _ := r.write(1, 0x5000, le64(1))
		o := w.step(0, ClientSide, f)
		p, err := roce.Parse(o.Frames[0])
		if err != nil {
			t.Fatal(err)
		}
		w.step(0, ServerSide, r.ack(0, p.BTH.PSN(), synACK, 1))

		rkey := roce.EthernetLen + roce.IPv4MinLen + roce.UDPLen + roce.BTHLen + roce.RETHRKeyOff
		payload := roce.EthernetLen + roce.IPv4MinLen + roce.UDPLen + roce.BTHLen + roce.RETHLen
		for _, tc := range []struct {
			name  string
			frame func() ([]byte, uint32)
			at    int
		}{
			{"CMP_SWAP", func() ([]byte, uint32) { return r.cas(1, 0x1000, 0, 1) }, rkey},
			{"WRITE", func() ([]byte, uint32) { return r.write(1, 0x5000, le64(2)) }, payload + 3},
			{"READ", func() ([]byte, uint32) { return r.read(1, 0x6000, 8, 1024) }, rkey},
		} {
			f, psn := tc.frame()
			checkCorrupted(t, w, skip, tc.name, ClientSide, f, tc.at)
			if !skip {
				r.cli[1].psn = psn // dropped: the client will send its next request at this PSN
			}
		}
		if skip {
			// The READ went to the server (corrupted); answer it.
			outPSN := w.fast.conns[0].outNext - 1
			resp := r.readResp(0, roce.OpRCReadResponseOnly, uint32(outPSN), le64(7), 3)
			checkCorrupted(t, w, skip, "READ response", ServerSide, resp, len(resp)-roce.ICRCLen-1)
		}
	}
}

// checkCorrupted flips a bit of frame at offset at, sends it from side in
// through the twin (which checks that both engines agree), and checks that
// the fast path took it and that it left with a wrong ICRC (skip) or was
// dropped for its ICRC.
func checkCorrupted(t *testing.T, w *twin, skip bool, name string, in Side, frame []byte, at int) {
	t.Helper()
	frame[at] ^= 0x10
	hits, bad := w.fast.fastHits, w.fast.c.Drops[DropBadICRC]
	out := w.step(0, in, frame)
	if w.fast.fastHits != hits+1 {
		t.Fatalf("skip %v, %s: not on the fast path", skip, name)
	}
	if !skip {
		if out.Len() != 0 || w.fast.c.Drops[DropBadICRC] != bad+1 {
			t.Fatalf("verify, %s: %d frames out, bad-ICRC drops %d -> %d", name, out.Len(), bad, w.fast.c.Drops[DropBadICRC])
		}
		return
	}
	j := slices.Index(out.FromInput, true) // the frame itself (a response may also complete earlier requests)
	if j < 0 || slices.Index(out.FromInput[j+1:], true) >= 0 {
		t.Fatalf("skip, %s: %d frames out, want the input once among them (%s)", name, out.Len(), w.fast.c.String())
	}
	p, err := roce.Parse(out.Frames[j])
	if err != nil {
		t.Fatalf("skip, %s: %v", name, err)
	}
	if p.ICRCOK() {
		t.Fatalf("skip, %s: the corruption was laundered (the frame left with a correct ICRC)", name)
	}
	if name == "CMP_SWAP" && p.Opcode != roce.OpRCWriteOnly {
		t.Fatalf("skip, %s: left as %v, want a WRITE_ONLY", name, p.Opcode)
	}
}
