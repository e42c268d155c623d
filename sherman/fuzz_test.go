package sherman

import (
	"encoding/binary"
	"testing"
)

// FuzzCheckTree: the checker and the page accessors meet arbitrary memory
// (a corrupted or hostile memory node) without panicking.
func FuzzCheckTree(f *testing.F) {
	const chunk = 4 * PageSize
	seed := make([]byte, 3*chunk)
	binary.LittleEndian.PutUint64(seed[chunk/2:], uint64(Addr(0, chunk)))
	initPage(page(seed[chunk:chunk+PageSize]), 0)
	page(seed[chunk : chunk+PageSize]).setConsistent()
	f.Add(seed[chunk/2:chunk/2+8], seed[chunk:chunk+PageSize], uint64(7))
	f.Fuzz(func(t *testing.T, root, pg []byte, k uint64) {
		mem := make([]byte, 3*chunk)
		copy(mem[chunk/2:chunk/2+8], root)
		copy(mem[chunk:], pg)
		copy(mem[2*chunk:], pg)
		_, _, _ = CheckTree([][]byte{mem}, chunk)
		p := page(mem[chunk : chunk+PageSize])
		_ = p.childFor(k)
		_, _ = p.lookupLeaf(k)
		_ = p.consistent()
	})
}
