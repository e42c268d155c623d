package sherman

import (
	"encoding/binary"
	"fmt"
	"math"
)

// GlobalAddress names a byte of the disaggregated memory: the memory node
// in the low 16 bits and the offset in that node's region in the high 48
// bits (Sherman's GlobalAddress bit-field union, as laid out on x86). The
// zero address is null: offset 0 of every node lies in its reserved first
// chunk.
type GlobalAddress uint64

// Addr builds a global address.
func Addr(node uint16, offset uint64) GlobalAddress {
	return GlobalAddress(uint64(node) | offset<<16)
}

// Node is the memory node of a.
func (a GlobalAddress) Node() uint16 { return uint16(a) }

// Offset is a's offset in its node's region.
func (a GlobalAddress) Offset() uint64 { return uint64(a) >> 16 }

// Add returns a moved by off bytes within its node.
func (a GlobalAddress) Add(off uint64) GlobalAddress { return Addr(a.Node(), a.Offset()+off) }

func (a GlobalAddress) String() string {
	if a == 0 {
		return "null"
	}
	return fmt.Sprintf("%d:%#x", a.Node(), a.Offset())
}

// Page layout (Sherman's LeafPage and InternalPage, packed, little-endian).
const (
	// PageSize is the size of every internal and leaf page.
	PageSize = 1024
	// offCRC holds the CRC, the embedded lock or the cache frequency in
	// Sherman; with the lock in device memory and CRC off it is unused.
	offFront    = 8 // u8 front version
	offLeftmost = 9 // GlobalAddress; null in a leaf
	offSibling  = 17
	offLevel    = 25 // u8; leaves are level 0
	offLastIdx  = 26 // i16, index of the last internal entry
	offLowest   = 28 // fence keys [lowest, highest)
	offHighest  = 36
	offRecords  = 44

	// InternalEntrySize and InternalCardinality: {key u64, ptr u64}.
	InternalEntrySize   = 16
	InternalCardinality = (PageSize - 35 - 2 - 8) / InternalEntrySize // 61
	// LeafEntrySize and LeafCardinality: {f_version:4, key u64, value
	// u64, r_version:4}; leaf entries are unsorted.
	LeafEntrySize   = 18
	LeafCardinality = (PageSize - 35 - 2 - 8) / LeafEntrySize // 54

	offInternalRear = offRecords + InternalCardinality*InternalEntrySize // 1020
	offLeafRear     = offRecords + LeafCardinality*LeafEntrySize         // 1016
)

// Keys and values: KeyMax is the highest fence and is not a usable key;
// value 0 marks an empty or deleted leaf entry.
const (
	KeyMin    uint64 = 0
	KeyMax    uint64 = math.MaxUint64
	ValueNull uint64 = 0
)

// Locks: 256 KiB of device memory per memory node, 32,768 8-byte words; a
// page's lock is word CityHash64(page address) % NumLocks on the page's
// own node.
const (
	LockRegionSize = 256 << 10
	NumLocks       = LockRegionSize / 8
	// MaxHandOver bounds how often a host hands a remote lock to its next
	// local waiter before releasing it (kMaxHandOverTime).
	MaxHandOver = 8
)

// LockIndex is the lock word of the page at a.
func LockIndex(a GlobalAddress) uint64 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(a))
	return CityHash64(b[:]) % NumLocks
}

// page is a view of one page's bytes.
type page []byte

func (p page) u64(off int) uint64          { return binary.LittleEndian.Uint64(p[off:]) }
func (p page) put64(off int, v uint64)     { binary.LittleEndian.PutUint64(p[off:], v) }
func (p page) front() uint8                { return p[offFront] }
func (p page) leftmost() GlobalAddress     { return GlobalAddress(p.u64(offLeftmost)) }
func (p page) sibling() GlobalAddress      { return GlobalAddress(p.u64(offSibling)) }
func (p page) level() int                  { return int(p[offLevel]) }
func (p page) lastIndex() int              { return int(int16(binary.LittleEndian.Uint16(p[offLastIdx:]))) }
func (p page) lowest() uint64              { return p.u64(offLowest) }
func (p page) highest() uint64             { return p.u64(offHighest) }
func (p page) isLeaf() bool                { return p.leftmost() == 0 }
func (p page) setLeftmost(a GlobalAddress) { p.put64(offLeftmost, uint64(a)) }
func (p page) setSibling(a GlobalAddress)  { p.put64(offSibling, uint64(a)) }
func (p page) setLevel(l int)              { p[offLevel] = byte(l) }
func (p page) setLastIndex(i int)          { binary.LittleEndian.PutUint16(p[offLastIdx:], uint16(int16(i))) }
func (p page) setLowest(k uint64)          { p.put64(offLowest, k) }
func (p page) setHighest(k uint64)         { p.put64(offHighest, k) }

func (p page) rearOff() int {
	if p.isLeaf() {
		return offLeafRear
	}
	return offInternalRear
}

// consistent: the front and rear versions agree (Sherman's
// check_consistent with the CRC off).
func (p page) consistent() bool { return p[offFront] == p[p.rearOff()] }

// setConsistent bumps the front version and copies it to the rear.
func (p page) setConsistent() {
	p[offFront]++
	p[p.rearOff()] = p[offFront]
}

// initPage clears p and makes it an empty page of level with fences
// [KeyMin, KeyMax) (Sherman's Header constructor: last_index -1).
func initPage(p page, level int) {
	clear(p)
	p.setLevel(level)
	p.setLastIndex(-1)
	p.setLowest(KeyMin)
	p.setHighest(KeyMax)
}

// Internal entries.
func (p page) ikey(i int) uint64 { return p.u64(offRecords + i*InternalEntrySize) }
func (p page) iptr(i int) GlobalAddress {
	return GlobalAddress(p.u64(offRecords + i*InternalEntrySize + 8))
}
func (p page) setIEntry(i int, k uint64, a GlobalAddress) {
	p.put64(offRecords+i*InternalEntrySize, k)
	p.put64(offRecords+i*InternalEntrySize+8, uint64(a))
}

// childFor is the child of internal page p that covers k (internal_page_search).
func (p page) childFor(k uint64) GlobalAddress {
	cnt := min(p.lastIndex()+1, InternalCardinality) // a torn or hostile page stays in bounds
	if cnt <= 0 || k < p.ikey(0) {
		return p.leftmost()
	}
	for i := 1; i < cnt; i++ {
		if k < p.ikey(i) {
			return p.iptr(i - 1)
		}
	}
	return p.iptr(cnt - 1)
}

// Leaf entries.
func leafOff(i int) int { return offRecords + i*LeafEntrySize }

func (p page) lfv(i int) uint8     { return p[leafOff(i)] & 0xf }
func (p page) lkey(i int) uint64   { return p.u64(leafOff(i) + 1) }
func (p page) lvalue(i int) uint64 { return p.u64(leafOff(i) + 9) }
func (p page) lrv(i int) uint8     { return p[leafOff(i)+17] & 0xf }

// lvalid: a live entry (value not null, versions agree).
func (p page) lvalid(i int) bool { return p.lvalue(i) != ValueNull && p.lfv(i) == p.lrv(i) }

// setLEntry writes key and value and bumps the entry's versions (4 bits).
func (p page) setLEntry(i int, k, v uint64) {
	fv := (p.lfv(i) + 1) & 0xf
	o := leafOff(i)
	p[o] = p[o]&0xf0 | fv
	p.put64(o+1, k)
	p.put64(o+9, v)
	p[o+17] = p[o+17]&0xf0 | fv
}

// lookupLeaf returns k's value in leaf p (leaf_page_search).
func (p page) lookupLeaf(k uint64) (uint64, bool) {
	for i := 0; i < LeafCardinality; i++ {
		if p.lkey(i) == k && p.lvalid(i) {
			return p.lvalue(i), true
		}
	}
	return 0, false
}
