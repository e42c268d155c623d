package swarm

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
)

// Word is the 8-byte metadata word of In-n-Out, compared as an unsigned
// integer: timestamp (40 bits of clock ticks), writer id (8 bits),
// out-of-place buffer index in the writer's log (15 bits), VERIFIED flag
// (bit 0). Zero means "never written". The order of the fields makes the
// integer order the order of tuples (ts, writer) with VERIFIED above
// GUESSED for the same write; the buffer index only names where the value
// lives (a writer's timestamps strictly increase, so it never decides).
type Word uint64

// Field widths and limits of a Word.
const (
	tsBits  = 40
	pidBits = 8
	logBits = 15

	// MaxTS is the largest timestamp a word holds.
	MaxTS = 1<<tsBits - 1
	// MaxWriters is the largest writer id (ids run 1..MaxWriters).
	MaxWriters = 1<<pidBits - 1
	// MaxLogBuffers bounds the out-of-place buffers per writer per node.
	MaxLogBuffers = 1 << logBits

	// Verified is the flag bit.
	Verified Word = 1
)

// MakeWord builds a metadata word. It panics on out-of-range fields, which
// only a programming error can produce (callers check their inputs).
func MakeWord(ts uint64, pid, log int, verified bool) Word {
	if ts > MaxTS || pid < 1 || pid > MaxWriters || log < 0 || log >= MaxLogBuffers {
		panic(fmt.Sprintf("swarm: word fields out of range: ts %d pid %d log %d", ts, pid, log))
	}
	w := Word(ts<<(pidBits+logBits+1) | uint64(pid)<<(logBits+1) | uint64(log)<<1)
	if verified {
		w |= Verified
	}
	return w
}

// TS is the word's timestamp in clock ticks.
func (w Word) TS() uint64 { return uint64(w) >> (pidBits + logBits + 1) }

// PID is the writer id.
func (w Word) PID() int { return int(uint64(w)>>(logBits+1)) & MaxWriters }

// Log is the index of the value's out-of-place buffer in the writer's log.
func (w Word) Log() int { return int(uint64(w)>>1) & (MaxLogBuffers - 1) }

// IsVerified reports the VERIFIED flag.
func (w Word) IsVerified() bool { return w&Verified != 0 }

// ID is the write the word names, without the flag.
func (w Word) ID() Word { return w &^ Verified }

func (w Word) String() string {
	if w == 0 {
		return "⊥"
	}
	f := "G"
	if w.IsVerified() {
		f = "V"
	}
	return fmt.Sprintf("(%d,w%d,b%d,%s)", w.TS(), w.PID(), w.Log(), f)
}

// Lock modes of the timestamp lock. A lock word is a write's ID with the
// mode in bit 0.
const (
	LockRead  Word = 0
	LockWrite Word = 1
)

// Layout is the memory-node layout, identical on every replica.
//
// Per key (a "slot", padded to 64 bytes):
//
//	[timestamp-lock words: Writers x 8 B][metadata words: Writers x 8 B][in-place: word 8 B | hash 8 B | value]
//
// so that one READ fetches the metadata array and the in-place copy. After
// the slots, every writer's log of out-of-place buffers (padded to 8
// bytes): [word 8 B | hash 8 B | value].
type Layout struct {
	// Keys is the number of key slots (the index hands them out).
	Keys int
	// Writers is the number of writer ids (clients): the metadata array
	// has one word per writer (the paper's recommendation, so a writer's
	// CAS-MAX never contends) and so does the lock array.
	Writers int
	// ValueSize is the size of every value.
	ValueSize int
	// LogBuffers is the number of out-of-place buffers per writer.
	LogBuffers int
}

// Validate reports an unusable layout.
func (l Layout) Validate() error {
	switch {
	case l.Keys < 1:
		return fmt.Errorf("swarm: layout: %d keys, want at least 1", l.Keys)
	case l.Writers < 1 || l.Writers > MaxWriters:
		return fmt.Errorf("swarm: layout: %d writers, want 1..%d", l.Writers, MaxWriters)
	case l.ValueSize < 8 || l.ValueSize > 4096:
		return fmt.Errorf("swarm: layout: value size %d, want 8..4096", l.ValueSize)
	case l.LogBuffers < 2 || l.LogBuffers > MaxLogBuffers:
		return fmt.Errorf("swarm: layout: %d log buffers, want 2..%d", l.LogBuffers, MaxLogBuffers)
	}
	return nil
}

const entryHeader = 16 // word + hash

// SlotSize is the bytes per key slot.
func (l Layout) SlotSize() int { return align(16*l.Writers+entryHeader+l.ValueSize, 64) }

// LockOff is the offset of writer pid's timestamp-lock word of key slot kv.
func (l Layout) LockOff(kv, pid int) int { return kv*l.SlotSize() + 8*(pid-1) }

// MetaOff is the offset of key slot kv's metadata array (Writers words).
func (l Layout) MetaOff(kv int) int { return kv*l.SlotSize() + 8*l.Writers }

// InPlaceOff is the offset of key slot kv's in-place entry.
func (l Layout) InPlaceOff(kv int) int { return l.MetaOff(kv) + 8*l.Writers }

// ReadSpan is the length of one In-n-Out read: metadata array and in-place
// entry.
func (l Layout) ReadSpan() int { return 8*l.Writers + entryHeader + l.ValueSize }

// EntrySize is the length of an entry (in-place or out-of-place).
func (l Layout) EntrySize() int { return entryHeader + l.ValueSize }

// BufSize is the stride of out-of-place buffers.
func (l Layout) BufSize() int { return align(l.EntrySize(), 8) }

// SlotsSize is the bytes of all key slots (the word area the middlebox may
// track starts at 0 and ends here).
func (l Layout) SlotsSize() int { return l.Keys * l.SlotSize() }

// BufOff is the offset of writer pid's out-of-place buffer log.
func (l Layout) BufOff(pid, log int) int {
	return l.SlotsSize() + ((pid-1)*l.LogBuffers+log)*l.BufSize()
}

// RegionSize is the size of a memory node's region.
func (l Layout) RegionSize() int { return l.SlotsSize() + l.Writers*l.LogBuffers*l.BufSize() }

func align(n, a int) int { return (n + a - 1) / a * a }

// entryHash covers the write's ID (not the flag: verifying a write does not
// change its value) and the value, so that a torn entry, or an entry of
// another write, is recognised.
func entryHash(id Word, value []byte) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(id.ID()))
	h.Write(b[:])
	h.Write(value)
	return h.Sum64()
}

// PutEntry encodes an entry for word w and value into dst (EntrySize bytes).
func PutEntry(dst []byte, w Word, value []byte) {
	binary.LittleEndian.PutUint64(dst, uint64(w))
	binary.LittleEndian.PutUint64(dst[8:], entryHash(w, value))
	copy(dst[entryHeader:], value)
}

// CheckEntry reports whether src (EntrySize bytes) is an intact entry of
// the write w names, and returns its value.
func CheckEntry(src []byte, w Word) ([]byte, bool) {
	if len(src) < entryHeader {
		return nil, false
	}
	got := Word(binary.LittleEndian.Uint64(src))
	if got.ID() != w.ID() || w == 0 {
		return nil, false
	}
	v := src[entryHeader:]
	if binary.LittleEndian.Uint64(src[8:]) != entryHash(w, v) {
		return nil, false
	}
	return v, true
}

// NodeView is what one In-n-Out read of a node returns: the maximum of the
// metadata array and, when the in-place entry is an intact copy of that
// maximum's write, its value.
type NodeView struct {
	Max     Word
	InPlace []byte // nil: no valid in-place copy of Max
}

// ParseRead decodes an In-n-Out read of ReadSpan bytes.
func (l Layout) ParseRead(b []byte) (NodeView, error) {
	if len(b) < l.ReadSpan() {
		return NodeView{}, fmt.Errorf("swarm: read of %d bytes, want %d", len(b), l.ReadSpan())
	}
	var v NodeView
	for i := 0; i < l.Writers; i++ {
		if w := Word(binary.LittleEndian.Uint64(b[8*i:])); w > v.Max {
			v.Max = w
		}
	}
	if v.Max != 0 {
		if val, ok := CheckEntry(b[8*l.Writers:l.ReadSpan()], v.Max); ok {
			v.InPlace = val
		}
	}
	return v, nil
}
