package clover

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/swordbox/swordbox/roce/verbs"
)

// Header word layout (docs/clover-layout.md, after the authors'
// mitsume_parameter.h).
const (
	hdrNextShift     = 28
	hdrNextMask      = 0xFFFFFFFF << hdrNextShift // bits 59..28
	hdrNextVerShift  = 19
	hdrNextVerMask   = 0xFF << hdrNextVerShift // bits 26..19
	hdrEntryVerShift = 11
	hdrEntryVerMask  = 0xFF << hdrEntryVerShift // bits 18..11
	hdrTxnMask       = 0x3FF << 1               // bits 10..1, zero for KV
	hdrBwMask        = 1                        // bit 0
	// hdrMustBeZero are bits 63..60 and 27.
	hdrMustBeZero = 0xF<<60 | 1<<27
	// hdrVouch is bit 63 of an ATOMIC ACK's original value that a steering
	// switch rewrote to vouch for a chained link: no header word in memory
	// has it.
	hdrVouch = 1 << 63
)

// Node layout: header word, key, the node's own logical handle, value (all
// little-endian).
const (
	NodeHeaderOff = 0
	NodeKeyOff    = 8
	NodeSelfOff   = 16
	NodeValueOff  = 24
	// NodeOverhead is the bytes of a node before its value.
	NodeOverhead = 24
)

// Header is a node's 8-byte header word: the CAS target.
type Header uint64

// MakeHeader packs a header word.
func MakeHeader(next LH, nextVer, entryVer uint8, bw bool) Header {
	h := uint64(next)<<hdrNextShift | uint64(nextVer)<<hdrNextVerShift | uint64(entryVer)<<hdrEntryVerShift
	if bw {
		h |= hdrBwMask
	}
	return Header(h)
}

// Next is the logical handle of the next node; 0 (LHNull) means this node is
// the tail, LHDeleted that the key was deleted after this node.
func (h Header) Next() LH { return LH(uint64(h) & hdrNextMask >> hdrNextShift) }

// NextVersion is the GC version the next node's slot must have.
func (h Header) NextVersion() uint8 { return uint8(uint64(h) & hdrNextVerMask >> hdrNextVerShift) }

// EntryVersion is this node's own GC version.
func (h Header) EntryVersion() uint8 {
	return uint8(uint64(h) & hdrEntryVerMask >> hdrEntryVerShift)
}

// Bw is the "replicated write in progress" bit.
func (h Header) Bw() bool { return uint64(h)&hdrBwMask != 0 }

// IsTail reports whether no node follows (next LH 0).
func (h Header) IsTail() bool { return h.Next() == LHNull }

// Valid reports whether the bits the layout fixes at zero are zero (bits
// 63..60, 27 and the transaction bits 10..1).
func (h Header) Valid() bool { return uint64(h)&(hdrMustBeZero|hdrTxnMask) == 0 }

// WithEntryVersion returns h with bits 18..11 replaced (what a steering
// switch does to a CAS's compare and swap values).
func (h Header) WithEntryVersion(v uint8) Header {
	return Header(uint64(h)&^hdrEntryVerMask | uint64(v)<<hdrEntryVerShift)
}

// TailWord is the header word of a tail node of entry version v: the value
// a linking CAS compares against.
func TailWord(v uint8) Header { return MakeHeader(LHNull, 0, v, false) }

// IsTailWordModVersion reports whether h is a tail word of some entry
// version (next NULL, next version 0, no flags): what a CAS's original value
// looks like when it succeeded on a node, steered or not.
func (h Header) IsTailWordModVersion() bool { return h.WithEntryVersion(0) == 0 }

// Vouched reports whether h, the original value of a linking CAS, is a
// steering switch's vouch (docs/clover-layout.md, "Vouched links"): bit 63
// set, the next-LH field naming the node the CAS linked after (a slot), the
// entry-version field its version, every other bit zero. The CAS then
// linked after pred, a node of the chain.
func (h Header) Vouched() (pred Ptr, ok bool) {
	if uint64(h)&^(hdrNextMask|hdrEntryVerMask) != hdrVouch || !h.Next().IsSlot() {
		return Ptr{}, false
	}
	return Ptr{LH: h.Next(), Ver: h.EntryVersion()}, true
}

// VouchWord is the word a steering switch puts in the ATOMIC ACK of a link
// after pred that it vouches for.
func VouchWord(pred Ptr) Header {
	return Header(hdrVouch | uint64(pred.LH)<<hdrNextShift | uint64(pred.Ver)<<hdrEntryVerShift)
}

func (h Header) String() string {
	return fmt.Sprintf("{next %v nv %d ev %d bw %v}", h.Next(), h.NextVersion(), h.EntryVersion(), h.Bw())
}

// Node is a zero-copy view of a version node: header, key, value.
type Node []byte

// NodeSize is the RDMA length of a node with a value of valueSize bytes:
// the DMA length of every node WRITE and node READ (the switch's size
// filter).
func NodeSize(valueSize int) int { return NodeOverhead + valueSize }

// Header returns the header word.
func (n Node) Header() Header { return Header(binary.LittleEndian.Uint64(n[NodeHeaderOff:])) }

// SetHeader stores the header word.
func (n Node) SetHeader(h Header) { binary.LittleEndian.PutUint64(n[NodeHeaderOff:], uint64(h)) }

// Key returns the key this node is a version of.
func (n Node) Key() uint64 { return binary.LittleEndian.Uint64(n[NodeKeyOff:]) }

// SetKey stores the key.
func (n Node) SetKey(k uint64) { binary.LittleEndian.PutUint64(n[NodeKeyOff:], k) }

// Self is the logical handle of the slot the node was written to: a READ
// that a switch steered to another node says which node it returned.
func (n Node) Self() LH { return LH(binary.LittleEndian.Uint32(n[NodeSelfOff:])) }

// SetSelf stores the node's own handle (the high 32 bits of the word are zero).
func (n Node) SetSelf(l LH) { binary.LittleEndian.PutUint64(n[NodeSelfOff:], uint64(l)) }

// Value is the value bytes (a view).
func (n Node) Value() []byte { return n[NodeValueOff:] }

// EncodeNode writes a fresh node for slot p (next NULL, entry version
// p.Ver, own handle p.LH) for key and value into dst, which must hold
// NodeSize(len(value)) bytes.
func EncodeNode(dst []byte, p Ptr, key uint64, value []byte) error {
	if len(dst) < NodeSize(len(value)) {
		return fmt.Errorf("clover: encode node: buffer %d bytes, need %d", len(dst), NodeSize(len(value)))
	}
	n := Node(dst)
	n.SetHeader(TailWord(p.Ver))
	n.SetKey(key)
	n.SetSelf(p.LH)
	copy(n[NodeValueOff:], value)
	return nil
}

// LH is a 32-bit logical handle naming a node slot: memory node index in
// bits 31..24, slot offset in 64-byte units from the region's start in bits
// 23..0 (so a region spans at most 1 GiB and a rack at most 255 memory
// nodes). Offset unit 0 holds the region header and is never a slot, so LH
// 0 is free to mean NULL.
type LH uint32

// Reserved logical handles.
const (
	// LHNull is the NULL next pointer: the node is the tail.
	LHNull LH = 0
	// LHDeleted in a next pointer marks the key deleted after this node
	// (memory node 255 does not exist, so no slot has this handle).
	LHDeleted LH = 0xFFFFFFFF
)

// UnitSize is the granularity of slot offsets, and the alignment of every
// slot.
const UnitSize = 64

// MaxMemoryNodes is the number of memory nodes an LH can name.
const MaxMemoryNodes = 255

const lhUnitBits = 24

// MaxRegionSize is the largest region an LH can address.
const MaxRegionSize = UnitSize << lhUnitBits

// MakeLH names the slot at byte offset off of memory node mn. off must be a
// non-zero multiple of UnitSize below MaxRegionSize.
func MakeLH(mn int, off uint64) (LH, error) {
	if mn < 0 || mn >= MaxMemoryNodes {
		return 0, fmt.Errorf("clover: LH: memory node %d out of range [0, %d)", mn, MaxMemoryNodes)
	}
	if off == 0 || off%UnitSize != 0 || off >= MaxRegionSize {
		return 0, fmt.Errorf("clover: LH: offset %#x not a non-zero multiple of %d below %#x", off, UnitSize, MaxRegionSize)
	}
	return LH(uint32(mn)<<lhUnitBits | uint32(off/UnitSize)), nil
}

// MemoryNode is the index of the memory node holding the slot.
func (l LH) MemoryNode() int { return int(uint32(l) >> lhUnitBits) }

// Offset is the slot's byte offset from its region's start.
func (l LH) Offset() uint64 { return uint64(uint32(l)&(1<<lhUnitBits-1)) * UnitSize }

// IsSlot reports whether l names a slot (not NULL, not the delete mark).
func (l LH) IsSlot() bool { return l != LHNull && l != LHDeleted }

func (l LH) String() string {
	switch l {
	case LHNull:
		return "NULL"
	case LHDeleted:
		return "DELETED"
	}
	return fmt.Sprintf("mn%d+%#x", l.MemoryNode(), l.Offset())
}

// Ptr is a versioned pointer to a node: the slot and the GC version the
// slot must hold (a cursor, a shortcut target, the MS's latest pointer).
type Ptr struct {
	LH  LH
	Ver uint8
}

// IsZero reports the zero Ptr (no pointer).
func (p Ptr) IsZero() bool { return p.LH == LHNull }

func (p Ptr) String() string { return fmt.Sprintf("%v@v%d", p.LH, p.Ver) }

// ShortcutWord encodes a shortcut: an 8-byte LE word with the target in the
// next-pointer fields of a header word (bits 59..28 and 26..19), zero
// elsewhere; 0 means "no shortcut yet".
func ShortcutWord(p Ptr) uint64 { return uint64(MakeHeader(p.LH, p.Ver, 0, false)) }

// DecodeShortcut is the inverse of ShortcutWord.
func DecodeShortcut(w uint64) Ptr {
	h := Header(w)
	return Ptr{LH: h.Next(), Ver: h.NextVersion()}
}

// ShortcutRef names a key's shortcut: memory node in bits 31..24, index in
// that node's shortcut area in bits 23..0. Zero means none (index 0 of node
// 0 is never handed out).
type ShortcutRef uint32

// MakeShortcutRef names shortcut idx of memory node mn.
func MakeShortcutRef(mn, idx int) ShortcutRef {
	return ShortcutRef(uint32(mn)<<lhUnitBits | uint32(idx)&(1<<lhUnitBits-1))
}

// MemoryNode is the node holding the shortcut.
func (s ShortcutRef) MemoryNode() int { return int(uint32(s) >> lhUnitBits) }

// Index is the shortcut's index in that node's shortcut area.
func (s ShortcutRef) Index() int { return int(uint32(s) & (1<<lhUnitBits - 1)) }

// SlabClasses are the slot sizes, in bytes, of the slab allocator: 64-byte
// steps up to 256, then powers of two and their midpoints up to 16 KiB.
// (The authors' code uses 128-byte granularity and nine classes; 64 bytes
// keeps a 144-byte node, a 128-byte value's, in a 192-byte slot.)
var SlabClasses = [...]int{64, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384}

// ErrNoClass is returned for nodes larger than the largest slab class.
var ErrNoClass = errors.New("clover: node larger than the largest slab class")

// ClassFor returns the smallest slab class holding nodeSize bytes.
func ClassFor(nodeSize int) (int, error) {
	for i, c := range SlabClasses {
		if nodeSize <= c {
			return i, nil
		}
	}
	return 0, fmt.Errorf("%w: %d > %d bytes", ErrNoClass, nodeSize, SlabClasses[len(SlabClasses)-1])
}

// Region layout of a memory node.
const (
	// RegionHeaderSize is the region header at offset 0.
	RegionHeaderSize = UnitSize
	// ShortcutAreaOff is where the shortcut words start.
	ShortcutAreaOff = RegionHeaderSize
	// ShortcutSize is one shortcut word.
	ShortcutSize = 8
	// RegionMagic identifies an initialised Clover region ("CLOVERMN" LE).
	RegionMagic = 0x4E4D5245564F4C43

	regMagicOff     = 0
	regVersionOff   = 8
	regNodeOff      = 12
	regShortcutsOff = 16
	regChunkSizeOff = 20
	regChunksOff    = 24
	regDataOff      = 32
	regionVersion   = 1
)

// RegionLayout describes one memory node's region:
//
//	[0, 64)               region header (magic, layout)
//	[64, 64+8*Shortcuts)  shortcut words, padded to a chunk boundary
//	[DataOff, Size)       Chunks chunks of ChunkSize bytes; the metadata
//	                      server carves each into slots of one slab class
type RegionLayout struct {
	Shortcuts int
	Chunks    int
	ChunkSize int
}

// DefaultChunkSize is 1 MiB, as FaRM's and Clover's slabs.
const DefaultChunkSize = 1 << 20

// Validate checks the layout fits an LH and is aligned.
func (l RegionLayout) Validate() error {
	if l.Shortcuts < 0 || l.Chunks <= 0 || l.ChunkSize < SlabClasses[len(SlabClasses)-1] || l.ChunkSize%UnitSize != 0 {
		return fmt.Errorf("clover: region layout %+v: need shortcuts >= 0, chunks > 0, chunk size a multiple of %d of at least %d",
			l, UnitSize, SlabClasses[len(SlabClasses)-1])
	}
	if uint64(l.Size()) > MaxRegionSize {
		return fmt.Errorf("clover: region layout %+v: %d bytes exceeds the %d an LH can address", l, l.Size(), MaxRegionSize)
	}
	return nil
}

// DataOff is the offset of chunk 0.
func (l RegionLayout) DataOff() int {
	end := ShortcutAreaOff + ShortcutSize*l.Shortcuts
	return (end + l.ChunkSize - 1) / l.ChunkSize * l.ChunkSize
}

// Size is the region's size in bytes.
func (l RegionLayout) Size() int { return l.DataOff() + l.Chunks*l.ChunkSize }

// ShortcutOff is the offset of shortcut i.
func (l RegionLayout) ShortcutOff(i int) int { return ShortcutAreaOff + ShortcutSize*i }

// ChunkOff is the offset of chunk c.
func (l RegionLayout) ChunkOff(c int) int { return l.DataOff() + c*l.ChunkSize }

// InitRegion prepares buf, the registered memory of memory node mn, to hold
// a Clover region: it zeroes it (every shortcut empty, every slot's header
// word 0, which no live node has since entry versions start at 1) and writes
// the region header. It is the memory-node layout initialiser: run it once,
// before the node accepts connections.
func InitRegion(buf []byte, mn int, l RegionLayout) error {
	if err := l.Validate(); err != nil {
		return err
	}
	if len(buf) < l.Size() {
		return fmt.Errorf("clover: init region of memory node %d: %d bytes, layout needs %d", mn, len(buf), l.Size())
	}
	clear(buf[:l.Size()])
	binary.LittleEndian.PutUint64(buf[regMagicOff:], RegionMagic)
	binary.LittleEndian.PutUint32(buf[regVersionOff:], regionVersion)
	binary.LittleEndian.PutUint32(buf[regNodeOff:], uint32(mn))
	binary.LittleEndian.PutUint32(buf[regShortcutsOff:], uint32(l.Shortcuts))
	binary.LittleEndian.PutUint32(buf[regChunkSizeOff:], uint32(l.ChunkSize))
	binary.LittleEndian.PutUint32(buf[regChunksOff:], uint32(l.Chunks))
	binary.LittleEndian.PutUint32(buf[regDataOff:], uint32(l.DataOff()))
	return nil
}

// ReadRegionHeader decodes the header InitRegion wrote.
func ReadRegionHeader(buf []byte) (mn int, l RegionLayout, err error) {
	if len(buf) < RegionHeaderSize || binary.LittleEndian.Uint64(buf[regMagicOff:]) != RegionMagic {
		return 0, l, errors.New("clover: region header: bad magic")
	}
	if v := binary.LittleEndian.Uint32(buf[regVersionOff:]); v != regionVersion {
		return 0, l, fmt.Errorf("clover: region header: version %d, want %d", v, regionVersion)
	}
	l = RegionLayout{
		Shortcuts: int(binary.LittleEndian.Uint32(buf[regShortcutsOff:])),
		ChunkSize: int(binary.LittleEndian.Uint32(buf[regChunkSizeOff:])),
		Chunks:    int(binary.LittleEndian.Uint32(buf[regChunksOff:])),
	}
	return int(binary.LittleEndian.Uint32(buf[regNodeOff:])), l, l.Validate()
}

// Entry versions cycle through 1..255; 0 is never a live node's version, so
// zeroed memory never passes for a node.
const (
	MinVersion = 1
	MaxVersion = 255
)

// NextVersion is the version a slot gets when it is reused, and whether the
// 8-bit version wrapped (the slot must then wait out the epoch timeout).
func NextVersion(v uint8) (uint8, bool) {
	if v >= MaxVersion || v < MinVersion {
		return MinVersion, true
	}
	return v + 1, false
}

// SetupMemoryNode allocates a region for layout l, registers it on dev with
// every remote right, and initialises it as memory node mn: the memory
// node's whole job in Clover (it runs no code on the data path). Clients
// address it through the returned region's Addr, RKey and length.
func SetupMemoryNode(dev interface {
	RegisterMR(buf []byte, access verbs.Access) (verbs.MemoryRegion, error)
}, mn int, l RegionLayout) (verbs.MemoryRegion, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	mr, err := dev.RegisterMR(make([]byte, l.Size()), verbs.AccessAll)
	if err != nil {
		return nil, fmt.Errorf("clover: memory node %d: register region: %w", mn, err)
	}
	if err := InitRegion(mr.Bytes(), mn, l); err != nil {
		return nil, err
	}
	return mr, nil
}

// Remote describes a registered region to clients.
func Remote(mr verbs.MemoryRegion) verbs.RemoteRegion {
	return verbs.RemoteRegion{Addr: mr.Addr(), RKey: mr.RKey(), Len: uint64(len(mr.Bytes()))}
}
