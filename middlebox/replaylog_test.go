package middlebox

import (
	"bytes"
	"testing"
	"unsafe"
)

func TestReplayLog(t *testing.T) {
	l := newReplayLog(128)
	if len(l.buf) != 128 {
		t.Fatalf("size %d, want 128", len(l.buf))
	}
	frame := func(n int, b byte) []byte { return bytes.Repeat([]byte{b}, n) }
	type rec struct {
		at uint64
		f  []byte
	}
	var recs []rec
	for i := 0; i < 10; i++ {
		f := frame(30+i*3, byte(i+1))
		recs = append(recs, rec{l.put(f), f})
	}
	// The log holds the newest 128 bytes: the last three frames (57+54+51
	// = 162 > 128 means only the last two are whole).
	for i, r := range recs {
		whole := l.pos-r.at <= 128
		if got := l.has(r.at, len(r.f)); got != whole {
			t.Errorf("frame %d (at %d, %d bytes, pos %d): has = %v, want %v", i, r.at, len(r.f), l.pos, got, whole)
		}
		if !whole {
			continue
		}
		dst := make([]byte, len(r.f))
		l.get(dst, r.at)
		if !bytes.Equal(dst, r.f) {
			t.Errorf("frame %d: read back %x, want %x", i, dst, r.f)
		}
	}
	if !l.has(recs[9].at, len(recs[9].f)) || l.has(recs[7].at, len(recs[7].f)) {
		t.Errorf("want the newest frame kept and an older one lost")
	}
	if l.has(l.pos, 0) || l.has(0, 200) {
		t.Errorf("has accepted an empty or over-long copy")
	}
}

// TestReplayLogWrap checks copies that straddle the end of the ring.
func TestReplayLogWrap(t *testing.T) {
	l := newReplayLog(64)
	for i := 0; i < 200; i++ {
		f := make([]byte, 1+i%40)
		for j := range f {
			f[j] = byte(i*7 + j)
		}
		at := l.put(f)
		dst := make([]byte, len(f))
		if !l.has(at, len(f)) {
			t.Fatalf("put %d: copy lost at once", i)
		}
		l.get(dst, at)
		if !bytes.Equal(dst, f) {
			t.Fatalf("put %d (at %d): read back %x, want %x", i, at, dst, f)
		}
	}
}

// TestEntrySize keeps a map entry in one cache line: the shared ring is
// walked at line rate and its size is what the cache holds.
func TestEntrySize(t *testing.T) {
	if n := unsafe.Sizeof(entry{}); n > 64 {
		t.Fatalf("entry is %d bytes, want <= 64", n)
	}
}
