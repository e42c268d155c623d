//go:build dpdk

package dpdk

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestMbufEditsMatchDPDK runs the same random edits through the Go fast
// path and through DPDK's own inline functions (the C wrappers) on two
// mbufs and requires identical results: fields, errors and bytes.
func TestMbufEditsMatchDPDK(t *testing.T) {
	needEAL(t)
	pool := newPool(t, 63)
	goM, err := pool.Alloc()
	if err != nil {
		t.Fatal(err)
	}
	cM, err := pool.Alloc()
	if err != nil {
		t.Fatal(err)
	}
	defer goM.Free()
	defer cM.Free()
	rng := rand.New(rand.NewPCG(1, 2))
	goM.SetData(frame(1, 200))
	cM.SetData(frame(1, 200))
	type state struct{ off, dlen, plen int }
	st := func(m *Mbuf) state { return state{int(m.c().data_off), int(m.c().data_len), int(m.c().pkt_len)} }
	for i := range 20000 {
		n := rng.IntN(300)
		op := rng.IntN(4)
		var ge, ce error
		var gb, cb []byte
		switch op {
		case 0:
			gb, ge = goM.Append(n)
			cb, ce = cM.cAppend(n)
		case 1:
			ge, ce = goM.Trim(n), cM.cTrim(n)
		case 2:
			ge, ce = goM.Adj(n), cM.cAdj(n)
		case 3:
			gb, ge = goM.Prepend(n)
			cb, ce = cM.cPrepend(n)
		}
		if (ge == nil) != (ce == nil) || st(goM) != st(cM) || len(gb) != len(cb) {
			t.Fatalf("step %d op %d n %d: go %v %+v, dpdk %v %+v", i, op, n, ge, st(goM), ce, st(cM))
		}
		for j := range gb { // fill new bytes the same way
			gb[j], cb[j] = byte(i+j), byte(i+j)
		}
		if !bytes.Equal(goM.Data(), cM.Data()) {
			t.Fatalf("step %d: frame bytes differ", i)
		}
		if goM.Tailroom() != cM.Tailroom() || goM.Headroom() != cM.cHeadroom() {
			t.Fatalf("step %d: room differs", i)
		}
	}
}

// TestChainedMbuf builds a two-segment frame by hand: the copying Recv
// must return both segments, and edits go through DPDK's functions.
func TestChainedMbuf(t *testing.T) {
	needEAL(t)
	pool := newPool(t, 63)
	p := ringPort(t, pool)
	head, _ := pool.Alloc()
	tail, _ := pool.Alloc()
	whole := frame(3, 300)
	head.SetData(whole[:100])
	tail.SetData(whole[100:])
	h := head.c()
	h.next = tail.c()
	h.nb_segs = 2
	h.pkt_len = 300
	if head.Len() != 300 || head.Segments() != 2 || len(head.Data()) != 100 {
		t.Fatalf("chain: len %d segs %d first %d", head.Len(), head.Segments(), len(head.Data()))
	}
	if err := head.Trim(10); err != nil || head.Len() != 290 || tail.c().data_len != 190 {
		t.Fatalf("trim on chain: %v len %d", err, head.Len())
	}
	b, err := head.Append(10)
	if err != nil || head.Len() != 300 {
		t.Fatalf("append on chain: %v", err)
	}
	copy(b, whole[290:])
	if err := head.Trim(201); err == nil { // the last segment holds 200
		t.Fatal("trim past the last segment succeeded (DPDK refuses it)")
	}
	ms := []*Mbuf{head}
	if p.TxBurst(0, ms) != 1 {
		t.Fatal("TxBurst failed")
	}
	bufs := newBufs(1)
	if n, err := p.Recv(bufs); n != 1 || err != nil || !bytes.Equal(bufs[0], whole) {
		t.Fatalf("Recv = %d, %v; %d bytes, equal %v", n, err, len(bufs[0]), bytes.Equal(bufs[0], whole))
	}
	if pool.Available() != 63 {
		t.Fatalf("pool has %d of 63 free: the chain leaked", pool.Available())
	}
}

func TestAllocMbufSlice(t *testing.T) {
	needEAL(t)
	pool := newPool(t, 63)
	ms := AllocMbufSlice(16)
	defer FreeMbufSlice(ms)
	if len(ms) != 16 || ms[0] != nil {
		t.Fatalf("slice len %d, first %v", len(ms), ms[0])
	}
	if err := pool.AllocBulk(ms); err != nil {
		t.Fatal(err)
	}
	if pool.Available() != 63-16 {
		t.Fatalf("available %d", pool.Available())
	}
	FreeBulk(ms)
	if pool.Available() != 63 {
		t.Fatalf("available %d", pool.Available())
	}
}

// Chain makes a two-segment frame: lengths add up, Data shows the first
// segment, and freeing the head returns both mbufs.
func TestMbufChain(t *testing.T) {
	needEAL(t)
	const n = 63
	pool := newPool(t, n)
	head, err := pool.Alloc()
	if err != nil {
		t.Fatal(err)
	}
	tail, err := pool.Alloc()
	if err != nil {
		t.Fatal(err)
	}
	head.SetData(frame(1, 100))
	tail.SetData(frame(2, 50))
	if err := head.Chain(tail); err != nil {
		t.Fatal(err)
	}
	if head.Len() != 150 || head.Segments() != 2 || len(head.Data()) != 100 {
		t.Fatalf("chained: len %d, %d segments, first segment %d bytes", head.Len(), head.Segments(), len(head.Data()))
	}
	if err := head.SetData(frame(3, 60)); err == nil {
		t.Fatal("SetData on a chained mbuf succeeded")
	}
	head.Free()
	if got := pool.Available(); got != n {
		t.Fatalf("after Free: %d of %d mbufs in the pool", got, n)
	}
}
