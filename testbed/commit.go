package testbed

import (
	"encoding/binary"

	"github.com/swordbox/swordbox/clover"
	"github.com/swordbox/swordbox/roce/rnic"
	"github.com/swordbox/swordbox/testbed/kvmodel"
)

// CloverCommit reads a put's link from an atomic a memory node executed
// (rnic.Config.OnAtomic): a CMP_SWAP that swapped a node's tail word for a
// link to another node of the same key on memory node 0
// (docs/clover-layout.md). Prev and Value are the first 8 bytes of the two
// nodes' values, which the linearizability runs make unique; At is left to
// the caller's clock. It is what kvmodel.Witness replays.
func CloverCommit(a rnic.ExecutedAtomic) (kvmodel.Commit, bool) {
	cmp, swp := clover.Header(a.Compare), clover.Header(a.SwapAdd)
	if !a.CAS || !a.Swapped() || !cmp.IsTail() || !swp.Next().IsSlot() || swp.Next().MemoryNode() != 0 {
		return kvmodel.Commit{}, false
	}
	mem := a.MR.Bytes()
	pred, next := a.VA-a.MR.Addr(), swp.Next().Offset()
	if pred+clover.NodeOverhead+8 > uint64(len(mem)) || next+clover.NodeOverhead+8 > uint64(len(mem)) {
		return kvmodel.Commit{}, false
	}
	p, n := clover.Node(mem[pred:]), clover.Node(mem[next:])
	if p.Key() != n.Key() {
		return kvmodel.Commit{}, false
	}
	return kvmodel.Commit{Key: p.Key(), At: a.Now, Prev: binary.LittleEndian.Uint64(p.Value()), Value: binary.LittleEndian.Uint64(n.Value())}, true
}
