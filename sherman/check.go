package sherman

import (
	"encoding/binary"
	"fmt"
)

// TreeStats describes a tree CheckTree walked.
type TreeStats struct {
	Height         int // levels, leaves included
	Pages, Leaves  int
	Keys           int
	PagesPerLevel  []int
	RootLevel      int
	Root           GlobalAddress
	EmptyEntrySlot int // leaf slots without a live entry
}

// CheckTree checks the invariants of a quiescent tree in the memory nodes'
// data regions (mem[i]: node i's Data bytes) and returns its contents:
// every page consistent (front == rear version) and of its level; on every
// level, the sibling chain runs from fence KeyMin to KeyMax with each
// page's highest fence the next page's lowest; internal keys strictly
// increase inside their page's fences; the children of a level, in order,
// are exactly the sibling chain of the level below, each with the fences
// its parent gives it; every live leaf entry lies inside its leaf's fences,
// has agreeing entry versions, and no key appears twice in the tree.
func CheckTree(mem [][]byte, chunkSize uint64) (map[uint64]uint64, TreeStats, error) {
	var st TreeStats
	if chunkSize == 0 {
		chunkSize = DefaultChunkSize
	}
	if len(mem) == 0 {
		return nil, st, fmt.Errorf("check: no memory nodes")
	}
	ro := RootPointerOffset(chunkSize)
	root := GlobalAddress(binary.LittleEndian.Uint64(mem[0][ro:]))
	st.Root = root
	get := func(a GlobalAddress) (page, error) {
		if a == 0 || int(a.Node()) >= len(mem) || a.Offset() < chunkSize || a.Offset()+PageSize > uint64(len(mem[a.Node()])) {
			return nil, fmt.Errorf("check: page address %v outside the allocated chunks", a)
		}
		p := page(mem[a.Node()][a.Offset() : a.Offset()+PageSize])
		if !p.consistent() {
			return nil, fmt.Errorf("check: page %v inconsistent (front %d, rear %d)", a, p.front(), p[p.rearOff()])
		}
		return p, nil
	}
	rp, err := get(root)
	if err != nil {
		return nil, st, fmt.Errorf("check: root: %w", err)
	}
	st.RootLevel = rp.level()
	kv := map[uint64]uint64{}
	first := root
	// want: the pages (and fences) the level above names, in order.
	type named struct {
		a      GlobalAddress
		lo, hi uint64
	}
	var want []named
	seen := map[GlobalAddress]bool{}
	for level := st.RootLevel; level >= 0; level-- {
		var chain []named
		var children []named
		lo := KeyMin
		for a := first; a != 0; {
			if seen[a] {
				return nil, st, fmt.Errorf("check: page %v reached twice", a)
			}
			seen[a] = true
			p, err := get(a)
			if err != nil {
				return nil, st, err
			}
			if p.level() != level {
				return nil, st, fmt.Errorf("check: page %v has level %d on level %d's chain", a, p.level(), level)
			}
			if (level == 0) != p.isLeaf() {
				return nil, st, fmt.Errorf("check: page %v of level %d: leaf %v", a, level, p.isLeaf())
			}
			if p.lowest() != lo {
				return nil, st, fmt.Errorf("check: page %v lowest %d, previous page's highest %d", a, p.lowest(), lo)
			}
			if p.highest() <= p.lowest() {
				return nil, st, fmt.Errorf("check: page %v fences [%d, %d) empty", a, p.lowest(), p.highest())
			}
			chain = append(chain, named{a, p.lowest(), p.highest()})
			st.Pages++
			if level > 0 {
				cnt := p.lastIndex() + 1
				if cnt < 1 || cnt >= InternalCardinality {
					return nil, st, fmt.Errorf("check: internal page %v holds %d entries", a, cnt)
				}
				prev := p.lowest()
				child := p.leftmost()
				for i := 0; i < cnt; i++ {
					k := p.ikey(i)
					if k <= prev || k >= p.highest() {
						return nil, st, fmt.Errorf("check: internal page %v key %d at %d not in (%d, %d)", a, k, i, prev, p.highest())
					}
					children = append(children, named{child, prev, k})
					prev, child = k, p.iptr(i)
				}
				children = append(children, named{child, prev, p.highest()})
			} else {
				st.Leaves++
				for i := 0; i < LeafCardinality; i++ {
					if p.lvalue(i) == ValueNull {
						st.EmptyEntrySlot++
						continue
					}
					if p.lfv(i) != p.lrv(i) {
						return nil, st, fmt.Errorf("check: leaf %v entry %d torn (versions %d, %d)", a, i, p.lfv(i), p.lrv(i))
					}
					k := p.lkey(i)
					if k < p.lowest() || k >= p.highest() {
						return nil, st, fmt.Errorf("check: leaf %v holds key %d outside [%d, %d)", a, k, p.lowest(), p.highest())
					}
					if _, dup := kv[k]; dup {
						return nil, st, fmt.Errorf("check: key %d appears twice", k)
					}
					kv[k] = p.lvalue(i)
				}
			}
			lo = p.highest()
			a = p.sibling()
		}
		if lo != KeyMax {
			return nil, st, fmt.Errorf("check: level %d's chain ends at fence %d, not KeyMax", level, lo)
		}
		if want != nil {
			if len(want) != len(chain) {
				return nil, st, fmt.Errorf("check: level %d: parents name %d pages, the sibling chain has %d", level, len(want), len(chain))
			}
			for i := range want {
				if want[i] != chain[i] {
					return nil, st, fmt.Errorf("check: level %d page %d: parent names %v [%d, %d), chain has %v [%d, %d)",
						level, i, want[i].a, want[i].lo, want[i].hi, chain[i].a, chain[i].lo, chain[i].hi)
				}
			}
		}
		st.PagesPerLevel = append(st.PagesPerLevel, len(chain))
		want = children
		if level > 0 {
			p, _ := get(first)
			first = p.leftmost()
		}
	}
	st.Height = st.RootLevel + 1
	st.Keys = len(kv)
	return kv, st, nil
}

// CheckLocksFree reports the first lock word of a lock region that is not 0
// (every lock must be free when no operation runs).
func CheckLocksFree(locks []byte) error {
	for i := 0; i+8 <= len(locks); i += 8 {
		if v := binary.LittleEndian.Uint64(locks[i:]); v != 0 {
			return fmt.Errorf("check: lock %d holds %#x with no operation running", i/8, v)
		}
	}
	return nil
}
