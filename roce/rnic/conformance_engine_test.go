package rnic

import (
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/swordbox/swordbox/roce"
	"github.com/swordbox/swordbox/roce/verbs"
)

// Packet-level conformance tests of the requester and responder engines.
// The link-level tests in conformance_test.go check the same rules end to
// end over lossy links.

func TestEngineSegmentationByMTU(t *testing.T) {
	for _, mtu := range []int{256, 512, 1024, 2048, 4096} {
		for _, n := range []int{0, 1, mtu - 1, mtu, mtu + 1, 3*mtu + 5} {
			e := newEngine(t, Config{MTU: mtu}, 0xfffffe, 10)
			e.post(e.write(1, 0, 0, n))
			pk := e.cOut.take()
			want := (n + mtu - 1) / mtu
			if want == 0 {
				want = 1
			}
			if len(pk) != want {
				t.Fatalf("mtu %d, %d bytes: %d packets, want %d", mtu, n, len(pk), want)
			}
			total := 0
			for i, p := range pk {
				total += len(p.payload)
				if p.psn != roce.PSN(0xfffffe).Add(i) {
					t.Fatalf("packet %d PSN %#x", i, p.psn)
				}
				if i < len(pk)-1 && len(p.payload) != mtu {
					t.Fatalf("non-last packet of %d bytes", len(p.payload))
				}
				if p.ackReq != (i == len(pk)-1) {
					t.Fatalf("AckReq on packet %d of %d", i, len(pk))
				}
			}
			if total != n {
				t.Fatalf("payload total %d, want %d", total, n)
			}
			first, last := pk[0].op, pk[len(pk)-1].op
			if len(pk) == 1 && first != roce.OpRCWriteOnly || len(pk) > 1 && (first != roce.OpRCWriteFirst || last != roce.OpRCWriteLast) {
				t.Fatalf("opcodes %v", ops(pk))
			}
			if pk[0].dmaLen != uint32(n) {
				t.Fatalf("RETH DMA length %d", pk[0].dmaLen)
			}
			e.toServer(pk...)
			acks := e.sOut.take()
			if len(acks) != 1 || acks[0].op != roce.OpRCAcknowledge || acks[0].psn != pk[len(pk)-1].psn {
				t.Fatalf("acks %+v", acks)
			}
		}
	}
}

func TestEngineMaxOutstandingReadAtomic(t *testing.T) {
	e := newEngine(t, Config{MaxRdAtomic: 2}, 100, 200)
	e.post(e.read(1, 0, 0, 8), e.fadd(2, 8, 8, 1), e.read(3, 16, 0, 8), e.write(4, 0, 100, 8))
	pk := e.cOut.take()
	if !slices.Equal(ops(pk), []roce.Opcode{roce.OpRCReadRequest, roce.OpRCFetchAdd}) {
		t.Fatalf("with max_rd_atomic 2 sent %v", ops(pk))
	}
	e.toServer(pk[0])
	e.toClient(e.sOut.take()...) // READ completes: one more may go
	pk = e.cOut.take()
	if !slices.Equal(ops(pk), []roce.Opcode{roce.OpRCReadRequest, roce.OpRCWriteOnly}) {
		t.Fatalf("after one response sent %v", ops(pk))
	}
}

func TestEngineGoBackNOnSequenceNAK(t *testing.T) {
	e := newEngine(t, Config{MTU: 256}, 0xfffffd, 0)
	e.post(e.write(1, 0, 0, 256*3), e.write(2, 0, 1000, 256*2))
	pk := e.cOut.take() // PSNs fffffd..ffffff, 0, 1
	e.toServer(pk[0])
	e.toServer(pk[2], pk[3], pk[4]) // pk[1] lost
	resp := e.sOut.take()
	if len(resp) != 1 || resp[0].syndrome != roce.NAKSyndrome(roce.NAKPSNSequenceError) || resp[0].psn != pk[1].psn {
		t.Fatalf("responder sent %+v, want one NAK seq error for %#x", resp, pk[1].psn)
	}
	e.toClient(resp...)
	re := e.cOut.take()
	if !slices.Equal(psns(re), psns(pk[1:])) {
		t.Fatalf("go-back-N resent PSNs %x, want %x", psns(re), psns(pk[1:]))
	}
	e.toServer(re...)
	e.toClient(e.sOut.take()...)
	if w := e.wcs(e.ccq); len(w) != 2 || w[0].ID != 1 || w[1].ID != 2 {
		t.Fatalf("completions %+v", w)
	}
}

func TestEngineOneNAKPerGap(t *testing.T) {
	e := newEngine(t, Config{}, 10, 0)
	for i := 0; i < 6; i++ {
		e.post(e.write(uint64(i), 0, 8*i, 8))
	}
	pk := e.cOut.take()
	e.toServer(pk[2], pk[3], pk[4]) // gap at 10, 11
	if r := e.sOut.take(); len(r) != 1 || r[0].psn != 10 || r[0].syndrome != roce.NAKSyndrome(roce.NAKPSNSequenceError) {
		t.Fatalf("first gap: %+v", r)
	}
	e.toServer(pk[5])
	if r := e.sOut.take(); len(r) != 0 {
		t.Fatalf("second packet of the same gap answered: %+v", r)
	}
	e.toServer(pk[0]) // the gap closes partly, a new gap at 11 remains
	e.toServer(pk[3])
	r := e.sOut.take()
	if len(r) != 2 || r[0].op != roce.OpRCAcknowledge || r[0].syndrome != ackSyndrome || r[1].syndrome != roce.NAKSyndrome(roce.NAKPSNSequenceError) || r[1].psn != 11 {
		t.Fatalf("after partial fill: %+v", r)
	}
}

func TestEngineDuplicates(t *testing.T) {
	e := newEngine(t, Config{}, 50, 0)
	binary.LittleEndian.PutUint64(e.sbuf[64:], 1000)
	copy(e.cbuf[0:4], "abcd")
	e.post(e.write(1, 0, 0, 4), e.read(2, 100, 200, 4), e.fadd(3, 200, 64, 5))
	pk := e.cOut.take()
	e.toServer(pk...)
	first := e.sOut.take()
	// WRITE duplicate: not executed again, acknowledged.
	copy(e.sbuf[0:4], "zzzz")
	e.toServer(pk[0])
	r := e.sOut.take()
	if string(e.sbuf[0:4]) != "zzzz" || len(r) != 1 || r[0].op != roce.OpRCAcknowledge || r[0].psn != pk[2].psn {
		t.Fatalf("duplicate WRITE: memory %q, responses %+v", e.sbuf[0:4], r)
	}
	// READ duplicate: executed again (sees the new memory).
	copy(e.sbuf[200:204], "new!")
	e.toServer(pk[1])
	r = e.sOut.take()
	if len(r) != 1 || r[0].op != roce.OpRCReadResponseOnly || string(r[0].payload) != "new!" || r[0].psn != pk[1].psn {
		t.Fatalf("duplicate READ: %+v", r)
	}
	// Atomic duplicate: answered from the stored result, not executed.
	e.toServer(pk[2])
	r = e.sOut.take()
	if len(r) != 1 || r[0].op != roce.OpRCAtomicAcknowledge || r[0].orig != 1000 || binary.LittleEndian.Uint64(e.sbuf[64:]) != 1005 {
		t.Fatalf("duplicate FETCH_ADD: %+v, memory %d", r, binary.LittleEndian.Uint64(e.sbuf[64:]))
	}
	if e.s.rq.atomicsDone != 1 {
		t.Fatalf("atomics executed %d times", e.s.rq.atomicsDone)
	}
	e.toClient(first...)
	e.toClient(first...) // duplicate responses are ignored
	w := e.wcs(e.ccq)
	if len(w) != 3 || w[0].ID != 1 || w[1].ID != 2 || w[2].ID != 3 || w[2].Orig != 1000 {
		t.Fatalf("completions %+v", w)
	}
}

func TestEngineMSNAndCoalescing(t *testing.T) {
	for _, mode := range []AckMode{AckCoalesced, AckEach} {
		e := newEngine(t, Config{AckMode: mode}, 0, 0)
		for i := 0; i < 10; i++ {
			e.post(e.write(uint64(i), 0, 8*i, 8))
		}
		e.toServer(e.cOut.take()...)
		acks := e.sOut.take()
		want := 1
		if mode == AckEach {
			want = 10
		}
		if len(acks) != want {
			t.Fatalf("mode %d: %d ACKs for 10 AckReq packets in one burst, want %d", mode, len(acks), want)
		}
		last := acks[len(acks)-1]
		if last.psn != 9 || last.msn != 10 {
			t.Fatalf("mode %d: last ACK PSN %d MSN %d, want 9 and 10", mode, last.psn, last.msn)
		}
		for i, a := range acks {
			if mode == AckEach && (a.psn != roce.PSN(i) || a.msn != uint32(i+1)) {
				t.Fatalf("ACK %d: PSN %d MSN %d", i, a.psn, a.msn)
			}
		}
		e.toClient(acks...)
		if w := e.wcs(e.ccq); len(w) != 10 {
			t.Fatalf("cumulative ACK completed %d of 10", len(w))
		}
	}
	// The coalescing limit forces an ACK inside a long burst.
	e := newEngine(t, Config{AckCoalesceMax: 4}, 0, 0)
	for i := 0; i < 10; i++ {
		e.post(e.write(uint64(i), 0, 8*i, 8))
	}
	e.toServer(e.cOut.take()...)
	if acks := e.sOut.take(); !slices.Equal(psns(acks), []roce.PSN{3, 7, 9}) {
		t.Fatalf("coalescing limit 4: ACK PSNs %v", psns(acks))
	}
}

func TestEngineRetryExceeded(t *testing.T) {
	e := newEngine(t, Config{Timeout: time.Millisecond, RetryCount: 3}, 0, 0)
	e.post(e.write(1, 0, 0, 8), e.write(2, 0, 8, 8))
	sent := len(e.cOut.take())
	// Timeouts back off: 1ms, then 2, 4, 8ms (adaptive retransmission).
	for i, wait := range []time.Duration{1, 2, 4} {
		e.tick(wait*time.Millisecond - 1)
		if re := e.cOut.take(); len(re) != 0 {
			t.Fatalf("retry %d came early", i)
		}
		e.tick(1)
		if re := e.cOut.take(); len(re) != 2 || re[0].psn != 0 {
			t.Fatalf("retry %d resent %+v", i, re)
		}
	}
	e.tick(8 * time.Millisecond)
	w := e.wcs(e.ccq)
	if sent != 2 || len(w) != 2 || w[0].Status != verbs.StatusRetryExceeded || w[1].Status != verbs.StatusFlushed || e.c.State() != verbs.StateErr {
		t.Fatalf("after retries: %+v state %s", w, e.c.State())
	}
	// Posting on a QP in ERR completes flushed.
	e.post(e.write(3, 0, 0, 8))
	if w := e.wcs(e.ccq); len(w) != 1 || w[0].Status != verbs.StatusFlushed {
		t.Fatalf("post in ERR: %+v", w)
	}
}

func TestEngineRNR(t *testing.T) {
	e := newEngine(t, Config{RNRTimer: 100 * time.Microsecond, RNRRetry: 2}, 0, 0)
	send := verbs.SendWR{ID: 1, Op: verbs.OpSend, SG: e.sge(0, 16), Flags: verbs.Signaled}
	e.post(send)
	e.toServer(e.cOut.take()...)
	r := e.sOut.take()
	if len(r) != 1 || r[0].syndrome.Kind() != roce.KindRNRNAK || roce.RNRTimerDelay(r[0].syndrome.RNRTimer()) < 100*time.Microsecond {
		t.Fatalf("SEND without receive: %+v", r)
	}
	e.toClient(r...)
	if re := e.cOut.take(); len(re) != 0 {
		t.Fatal("resent before the RNR delay")
	}
	e.tick(50 * time.Microsecond)
	if re := e.cOut.take(); len(re) != 0 {
		t.Fatal("resent before the RNR delay")
	}
	e.tick(100 * time.Microsecond)
	re := e.cOut.take()
	if len(re) != 1 || re[0].op != roce.OpRCSendOnly {
		t.Fatalf("after the RNR delay: %+v", re)
	}
	rb := make([]byte, 64)
	rm, _ := e.sd.Register(rb, verbs.AccessLocalWrite)
	if err := e.s.PostRecv([]verbs.RecvWR{{ID: 9, SG: []verbs.SGE{{Addr: rm.Addr(), Length: 64, LKey: rm.LKey()}}}}); err != nil {
		t.Fatal(err)
	}
	e.toServer(re...)
	e.toClient(e.sOut.take()...)
	if w := e.wcs(e.ccq); len(w) != 1 || w[0].Status != 0 {
		t.Fatalf("send after receive posted: %+v", w)
	}
	if w := e.wcs(e.scq); len(w) != 1 || w[0].ID != 9 || w[0].ByteLen != 16 {
		t.Fatalf("receive completion: %+v", w)
	}
	// RNR retry exhaustion: 2 retries, then RNR_RETRY_EXC_ERR.
	e.post(send)
	for i := 0; i < 3; i++ {
		e.toServer(e.cOut.take()...)
		e.toClient(e.sOut.take()...)
		e.tick(time.Millisecond)
	}
	if w := e.wcs(e.ccq); len(w) != 1 || w[0].Status != verbs.StatusRNRRetryExceeded {
		t.Fatalf("RNR exhaustion: %+v", w)
	}
}

func TestEngineRemoteAccessErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		wr   func(e *engine) verbs.SendWR
		want verbs.Status
	}{
		{"bad rkey", func(e *engine) verbs.SendWR { w := e.write(1, 0, 0, 8); w.RKey ^= 0x100; return w }, verbs.StatusRemoteAccessError},
		{"beyond bounds", func(e *engine) verbs.SendWR { return e.write(1, 0, 1<<16-4, 8) }, verbs.StatusRemoteAccessError},
		{"read beyond bounds", func(e *engine) verbs.SendWR { return e.read(1, 0, 1<<16-4, 8) }, verbs.StatusRemoteAccessError},
		{"no write right", func(e *engine) verbs.SendWR {
			m, _ := e.sd.Register(make([]byte, 64), verbs.AccessRemoteRead)
			w := e.write(1, 0, 0, 8)
			w.RemoteAddr, w.RKey = m.Addr(), m.RKey()
			return w
		}, verbs.StatusRemoteAccessError},
		{"no atomic right", func(e *engine) verbs.SendWR {
			m, _ := e.sd.Register(make([]byte, 64), verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
			w := e.fadd(1, 0, 0, 1)
			w.RemoteAddr, w.RKey = m.Addr(), m.RKey()
			return w
		}, verbs.StatusRemoteAccessError},
		{"unaligned atomic", func(e *engine) verbs.SendWR { return e.fadd(1, 0, 4, 1) }, verbs.StatusRemoteInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, Config{}, 0, 0)
			e.post(tc.wr(e), e.write(2, 0, 0, 8))
			e.toServer(e.cOut.take()[0])
			r := e.sOut.take()
			if len(r) != 1 || r[0].syndrome.Kind() != roce.KindNAK {
				t.Fatalf("responder sent %+v", r)
			}
			e.toClient(r...)
			w := e.wcs(e.ccq)
			if len(w) != 2 || w[0].Status != tc.want || w[1].Status != verbs.StatusFlushed || e.c.State() != verbs.StateErr {
				t.Fatalf("completions %+v, state %s", w, e.c.State())
			}
		})
	}
}

func TestEngineReadReassemblyAndLostResponse(t *testing.T) {
	e := newEngine(t, Config{MTU: 256}, 0xfffffe, 0)
	for i := range 1000 {
		e.sbuf[i] = byte(i * 3)
	}
	e.post(e.read(1, 0, 0, 1000)) // 4 responses, PSNs fffffe..1
	e.toServer(e.cOut.take()...)
	resp := e.sOut.take()
	if !slices.Equal(ops(resp), []roce.Opcode{roce.OpRCReadResponseFirst, roce.OpRCReadResponseMiddle, roce.OpRCReadResponseMiddle, roce.OpRCReadResponseLast}) {
		t.Fatalf("responses %v", ops(resp))
	}
	e.toClient(resp[0], resp[2]) // response 1 lost: the READ is re-requested from there
	re := e.cOut.take()
	if len(re) != 1 || re[0].op != roce.OpRCReadRequest || re[0].psn != resp[1].psn || re[0].dmaLen != 1000-256 || re[0].va != e.smr.Addr()+256 {
		t.Fatalf("re-request %+v", re)
	}
	e.toServer(re...)
	e.toClient(e.sOut.take()...)
	w := e.wcs(e.ccq)
	if len(w) != 1 || w[0].Status != 0 || w[0].ByteLen != 1000 || string(e.cbuf[:1000]) != string(e.sbuf[:1000]) {
		t.Fatalf("completion %+v", w)
	}
}

func TestEngineQPStateMachine(t *testing.T) {
	d := engineDev(Config{}, 1)
	cq := d.NewCQ(16)
	q, _ := d.NewQP(verbs.QPConfig{SendCQ: cq, RecvCQ: cq})
	if q.State() != verbs.StateReset {
		t.Fatal(q.State())
	}
	if err := q.ToRTR(Path{}); err == nil {
		t.Fatal("RESET -> RTR allowed")
	}
	if err := q.PostSend(nil); err == nil {
		t.Fatal("post send in RESET allowed")
	}
	if err := q.ToInit(); err != nil {
		t.Fatal(err)
	}
	if err := q.PostRecv([]verbs.RecvWR{{ID: 1}}); err != nil {
		t.Fatal("post recv in INIT refused:", err)
	}
	if err := q.ToRTS(0); err == nil {
		t.Fatal("INIT -> RTS allowed")
	}
	if err := q.ToRTR(Path{MTU: 1000}); err == nil {
		t.Fatal("MTU 1000 accepted")
	}
	if err := q.ToRTR(Path{RemoteQPN: 5}); err != nil {
		t.Fatal(err)
	}
	if err := q.ToRTS(1 << 24); err == nil {
		t.Fatal("25-bit PSN accepted")
	}
	if err := q.ToRTS(7); err != nil || q.State() != verbs.StateRTS {
		t.Fatal(err, q.State())
	}
	q.ToErr()
	w := make([]verbs.WC, 4)
	if n := cq.Poll(w); n != 1 || w[0].Status != verbs.StatusFlushed || w[0].ID != 1 {
		t.Fatalf("ERR flushed %+v", w[:n])
	}
	q.ToReset()
	if q.State() != verbs.StateReset || q.ToInit() != nil {
		t.Fatal("RESET from ERR")
	}
}

func TestEngineFence(t *testing.T) {
	e := newEngine(t, Config{}, 0, 0)
	fenced := e.write(3, 0, 0, 8)
	fenced.Flags |= verbs.Fence
	e.post(e.read(1, 0, 0, 8), e.write(2, 0, 8, 8), fenced)
	pk := e.cOut.take()
	if !slices.Equal(ops(pk), []roce.Opcode{roce.OpRCReadRequest, roce.OpRCWriteOnly}) {
		t.Fatalf("before the READ completed: %v", ops(pk))
	}
	e.toServer(pk...)
	e.toClient(e.sOut.take()...)
	if pk := e.cOut.take(); len(pk) != 1 || pk[0].op != roce.OpRCWriteOnly || pk[0].psn != 2 {
		t.Fatalf("fenced WRITE after the READ completed: %+v", pk)
	}
}

func TestEngineWriteImmAndSolicited(t *testing.T) {
	e := newEngine(t, Config{}, 0, 0)
	wr := e.write(1, 0, 0, 8)
	wr.Op, wr.Imm, wr.Flags = verbs.OpWriteImm, 0xfeed, verbs.Signaled|verbs.Solicited
	e.post(wr)
	pk := e.cOut.take()
	if len(pk) != 1 || pk[0].op != roce.OpRCWriteOnlyImm || pk[0].imm != 0xfeed || !pk[0].se {
		t.Fatalf("%+v", pk)
	}
	e.toServer(pk...) // no receive posted: RNR
	if r := e.sOut.take(); len(r) != 1 || r[0].syndrome.Kind() != roce.KindRNRNAK {
		t.Fatalf("WRITE with immediate and no receive: %+v", r)
	}
	if err := e.s.PostRecv([]verbs.RecvWR{{ID: 4}}); err != nil {
		t.Fatal(err)
	}
	e.toServer(pk...)
	w := e.wcs(e.scq)
	if len(w) != 1 || w[0].Op != verbs.OpRecvImm || w[0].Imm != 0xfeed || !w[0].HasImm || w[0].ByteLen != 8 || w[0].ID != 4 {
		t.Fatalf("receive completion %+v", w)
	}
}

func TestEngineUnsignaledAndLocalErrors(t *testing.T) {
	e := newEngine(t, Config{}, 0, 0)
	un := e.write(1, 0, 0, 8)
	un.Flags = 0
	e.post(un, e.write(2, 0, 8, 8))
	e.toServer(e.cOut.take()...)
	e.toClient(e.sOut.take()...)
	if w := e.wcs(e.ccq); len(w) != 1 || w[0].ID != 2 {
		t.Fatalf("unsignaled WRITE produced %+v", w)
	}
	// An SGE outside its region: LOC_PROT_ERR, QP in ERR.
	bad := e.write(3, 1<<16-4, 0, 8)
	e.post(bad)
	if w := e.wcs(e.ccq); len(w) != 1 || w[0].Status != verbs.StatusLocalProtectionError || e.c.State() != verbs.StateErr {
		t.Fatalf("%+v %s", w, e.c.State())
	}
	// Malformed requests are refused at post time.
	e2 := newEngine(t, Config{}, 0, 0)
	if err := e2.c.sq.post(e2.c, []verbs.SendWR{{Op: verbs.OpFetchAdd, SG: e2.sge(0, 4)}}, 0, &e2.cOut); err == nil {
		t.Fatal("4-byte atomic accepted")
	}
	if err := e2.c.sq.post(e2.c, []verbs.SendWR{{Op: verbs.OpRecv}}, 0, &e2.cOut); err == nil {
		t.Fatal("RECV accepted as a send opcode")
	}
}
