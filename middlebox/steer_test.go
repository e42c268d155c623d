package middlebox

import (
	"encoding/binary"
	"testing"

	"github.com/swordbox/swordbox/roce"
)

func cloverNode(hdr, key uint64, size int) []byte {
	b := make([]byte, size)
	binary.LittleEndian.PutUint64(b[0:], hdr)
	binary.LittleEndian.PutUint64(b[8:], key)
	return b
}

func ver(v uint64) uint64 { return v << 11 }

// The software steering follows the P4 program's rules
// (docs/swordbox-p4.md): learn the pending node from a node WRITE, steer a
// stale CAS to the cached tail (VA and entry version), make the pending
// node the tail, steer node READs of known stale addresses.
func TestCloverSteering(t *testing.T) {
	const node = 16 + 48
	cfg := testConfig(false, false)
	cfg.Steering = &SteerConfig{Mode: "both", NodeSize: node}
	r := newTestRack(t, 3, cfg)
	const key = 42
	const X, Y, T = 0x10000, 0x20000, 0x30000
	// Client 1 appends node X (entry version 3) after the tail T it knows:
	// no tail cached yet, so the CAS goes as is, and X becomes the tail.
	f, _ := r.write(1, X, cloverNode(ver(3), key, node))
	r.one(ClientSide, f)
	f, _ = r.cas(1, T, ver(7), 0xabc<<28|ver(7))
	x := r.one(ClientSide, f)
	if x.p.AtomicETH.VA() != T {
		t.Fatalf("first CAS steered to %#x", x.p.AtomicETH.VA())
	}
	// Client 2 appends Y after the same stale tail T: steered to X, with
	// X's entry version in compare and swap.
	f, _ = r.write(2, Y, cloverNode(ver(5), key, node))
	r.one(ClientSide, f)
	f, _ = r.cas(2, T, 0x1<<60|ver(7), 0xdef<<28|ver(7)|1)
	x = r.one(ClientSide, f)
	if x.p.AtomicETH.VA() != X || x.p.AtomicETH.Compare() != 0x1<<60|ver(3) || x.p.AtomicETH.SwapAdd() != 0xdef<<28|ver(3)|1 {
		t.Fatalf("steered CAS: VA %#x compare %#x swap %#x", x.p.AtomicETH.VA(), x.p.AtomicETH.Compare(), x.p.AtomicETH.SwapAdd())
	}
	// A node READ of X (known address of the key, now stale) goes to Y; a
	// READ of an unknown address is a miss; a READ of the tail is left alone.
	f, _ = r.read(0, X, node, 1024)
	if x = r.one(ClientSide, f); x.p.RETH.VA() != Y {
		t.Fatalf("READ steered to %#x, want %#x", x.p.RETH.VA(), Y)
	}
	f, _ = r.read(0, 0x99000, node, 1024)
	if x = r.one(ClientSide, f); x.p.RETH.VA() != 0x99000 {
		t.Fatal("unknown READ steered")
	}
	c := r.e.Counters()
	if c.Steered != 2 || c.SteerNodeWrites != 2 || c.SteerReadMisses != 1 {
		t.Fatalf("counters: %s", c.String())
	}
	// A retransmission of the steered CAS is not steered again: the
	// client's own bytes go out (that repairs a chain whose CAS was lost).
	g := r.reqFields(2, roce.OpRCCompareSwap, r.cli[2].psn-1)
	g.VA, g.RKey, g.Compare, g.SwapAdd = T, 0x1234, 0x1<<60|ver(7), 0xdef<<28|ver(7)|1
	x = r.one(ClientSide, buildFrame(t, &g))
	if x.p.AtomicETH.VA() != T {
		t.Fatalf("retransmission steered to %#x", x.p.AtomicETH.VA())
	}
}
