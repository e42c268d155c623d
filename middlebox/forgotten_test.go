package middlebox

import (
	"testing"

	"github.com/swordbox/swordbox/roce"
)

// A client lost the answers to its CMP_SWAP (sent as a WRITE) and to its
// WRITE, and, its retransmission timer backing off, resends them only after
// the shared connection's ring has wrapped and their map entries are
// reused. The engine still answers both, the CMP_SWAP with the original
// value it returned the first time. (Dropping them, as the engine once did,
// left the client retrying until RETRY_EXC_ERR: seen in
// sherman's TestLinearizableHotKeys/cas-to-write/faults.)
func TestDuplicateAnsweredAfterRingWrap(t *testing.T) {
	cfg := testConfig(true, true)
	cfg.Words = []WordConfig{{VA: 0x1000, Value: 5}}
	r := newTestRack(t, 3, cfg)
	s := r.cli[0].psn // the shared connection's next outgoing PSN
	msn := uint32(0)
	serverAck := func(client int, op roce.Opcode, psn uint32) emitted {
		t.Helper()
		msn++
		x := r.one(ServerSide, r.ack(0, s, synACK, msn))
		r.checkToClient(x, client, op, psn)
		s++
		return x
	}

	f, casPSN := r.cas(1, 0x1000, 5, 9)
	casAgain := append([]byte(nil), f...)
	r.checkToServer(r.one(ClientSide, f), 0, roce.OpRCWriteOnly, s)
	if x := serverAck(1, roce.OpRCAtomicAcknowledge, casPSN); x.p.AtomicAckETH.Orig() != 5 {
		t.Fatalf("ATOMIC ACK carries %d, want 5", x.p.AtomicAckETH.Orig())
	}
	f, wPSN := r.write(1, 0x5000, le64(7))
	wAgain := append([]byte(nil), f...)
	r.checkToServer(r.one(ClientSide, f), 0, roce.OpRCWriteOnly, s)
	serverAck(1, roce.OpRCAcknowledge, wPSN)
	f, rdPSN := r.read(1, 0x5000, 8, 1024)
	rdAgain := append([]byte(nil), f...)
	r.checkToServer(r.one(ClientSide, f), 0, roce.OpRCReadRequest, s)
	msn++
	r.checkToClient(r.one(ServerSide, r.readResp(0, roce.OpRCReadResponseOnly, s, le64(7), msn)), 1, roce.OpRCReadResponseOnly, rdPSN)
	s++

	// Client 2 moves the shared connection's ring past those entries.
	for i := 0; i < cfg.RingSize; i++ {
		f, p := r.write(2, 0x6000, le64(uint64(i)))
		r.checkToServer(r.one(ClientSide, f), 0, roce.OpRCWriteOnly, s)
		serverAck(2, roce.OpRCAcknowledge, p)
	}

	x := r.one(ClientSide, casAgain)
	r.checkToClient(x, 1, roce.OpRCAtomicAcknowledge, casPSN)
	if x.p.AtomicAckETH.Orig() != 5 {
		t.Fatalf("repeated ATOMIC ACK carries %d, want 5", x.p.AtomicAckETH.Orig())
	}
	r.checkToClient(r.one(ClientSide, wAgain), 1, roce.OpRCAcknowledge, wPSN)
	// A READ's data is not kept: the READ is executed again, on a new PSN,
	// and its response goes back to the client at the client's PSN.
	r.checkToServer(r.one(ClientSide, rdAgain), 0, roce.OpRCReadRequest, s)
	msn++
	x = r.one(ServerSide, r.readResp(0, roce.OpRCReadResponseOnly, s, le64(7), msn))
	r.checkToClient(x, 1, roce.OpRCReadResponseOnly, rdPSN)
	s++
	// The shared connection goes on, and the READ answered nobody else.
	f, p := r.write(2, 0x6000, le64(1))
	r.checkToServer(r.one(ClientSide, f), 0, roce.OpRCWriteOnly, s)
	serverAck(2, roce.OpRCAcknowledge, p)
	c := r.e.Counters()
	if c.RetransmitsAnswered != 2 || c.ForgottenAnswered != 2 || c.ReadsReissued != 1 || c.Drops[DropStaleRetransmit] != 0 {
		t.Fatalf("counters: %s", c.String())
	}
	if got := r.e.conns[1].fcount; got != 0 {
		t.Fatalf("client 1 has %d operations outstanding, want 0", got)
	}
}

// A client connection remembers the answers of its last clientAtomics
// atomics, and no older ones.
func TestAnsweredAtomicsRemembered(t *testing.T) {
	var c conn
	for i := 0; i < clientAtomics+3; i++ {
		c.rememberAtomic(roce.PSN(100+i), uint64(i))
	}
	for i := 0; i < clientAtomics+3; i++ {
		v, ok := c.answeredAtomic(roce.PSN(100 + i))
		if want := i >= 3; ok != want || ok && v != uint64(i) {
			t.Errorf("PSN %d: %d %v, want remembered %v", 100+i, v, ok, want)
		}
	}
}
