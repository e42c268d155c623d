package clover

import (
	"encoding/binary"
	"testing"
)

func TestHeaderWordBits(t *testing.T) {
	// The worked example of docs/clover-layout.md: link N (version g_n)
	// after tail T (version g_t).
	n, _ := MakeLH(3, 0x1240)
	for _, tc := range []struct {
		h                  Header
		want               uint64
		next               LH
		nv, ev             uint8
		bw, tail, validHdr bool
	}{
		{h: TailWord(7), want: 7 << 11, next: LHNull, ev: 7, tail: true, validHdr: true},
		{h: MakeHeader(n, 9, 7, false), want: uint64(n)<<28 | 9<<19 | 7<<11, next: n, nv: 9, ev: 7, validHdr: true},
		{h: MakeHeader(LHDeleted, 0, 255, true), want: 0xFFFFFFFF<<28 | 255<<11 | 1, next: LHDeleted, ev: 255, bw: true, validHdr: true},
		{h: Header(1 << 27), want: 1 << 27, tail: true},
		{h: Header(1 << 60), want: 1 << 60, tail: true},
		{h: Header(1 << 1), want: 2, tail: true},
	} {
		if uint64(tc.h) != tc.want {
			t.Errorf("%v = %#x, want %#x", tc.h, uint64(tc.h), tc.want)
		}
		if tc.h.Next() != tc.next || tc.h.NextVersion() != tc.nv || tc.h.EntryVersion() != tc.ev || tc.h.Bw() != tc.bw ||
			tc.h.IsTail() != tc.tail || tc.h.Valid() != tc.validHdr {
			t.Errorf("%#x decodes to %v tail %v valid %v", tc.want, tc.h, tc.h.IsTail(), tc.h.Valid())
		}
	}
	// Steering rewrites bits 18..11 only.
	h := MakeHeader(n, 9, 7, true)
	if s := h.WithEntryVersion(200); s.EntryVersion() != 200 || s.Next() != n || s.NextVersion() != 9 || !s.Bw() {
		t.Errorf("WithEntryVersion changed other bits: %v", s)
	}
	if !TailWord(5).IsTailWordModVersion() || MakeHeader(n, 0, 5, false).IsTailWordModVersion() ||
		MakeHeader(0, 1, 5, false).IsTailWordModVersion() || MakeHeader(0, 0, 5, true).IsTailWordModVersion() {
		t.Error("IsTailWordModVersion")
	}
}

func TestNodeEncodingLittleEndian(t *testing.T) {
	buf := make([]byte, NodeSize(4))
	self := Ptr{LH: 0x01abcdef, Ver: 42}
	if err := EncodeNode(buf, self, 0x1122334455667788, []byte{1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	want := []byte{0, 0x50, 1, 0, 0, 0, 0, 0, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
		0xef, 0xcd, 0xab, 0x01, 0, 0, 0, 0, 1, 2, 3, 4}
	if string(buf) != string(want) {
		t.Fatalf("node bytes % x\nwant       % x", buf, want)
	}
	n := Node(buf)
	if n.Header().EntryVersion() != 42 || !n.Header().IsTail() || n.Key() != 0x1122334455667788 || n.Self() != self.LH || string(n.Value()) != "\x01\x02\x03\x04" {
		t.Errorf("decode: %v key %#x self %v value %v", n.Header(), n.Key(), n.Self(), n.Value())
	}
	if EncodeNode(buf[:NodeSize(4)-1], self, 1, []byte{1, 2, 3, 4}) == nil {
		t.Error("EncodeNode accepted a short buffer")
	}
	if NodeSize(128) != 152 {
		t.Errorf("NodeSize(128) = %d", NodeSize(128))
	}
}

func TestLHMapping(t *testing.T) {
	for _, tc := range []struct {
		mn  int
		off uint64
		ok  bool
	}{
		{0, 64, true}, {0, 0, false}, {1, 100, false}, {254, MaxRegionSize - 64, true}, {255, 64, false}, {-1, 64, false}, {0, MaxRegionSize, false},
	} {
		l, err := MakeLH(tc.mn, tc.off)
		if (err == nil) != tc.ok {
			t.Errorf("MakeLH(%d, %#x): err %v, want ok %v", tc.mn, tc.off, err, tc.ok)
			continue
		}
		if tc.ok && (l.MemoryNode() != tc.mn || l.Offset() != tc.off || !l.IsSlot()) {
			t.Errorf("MakeLH(%d, %#x) = %v round-trips to %d, %#x", tc.mn, tc.off, l, l.MemoryNode(), l.Offset())
		}
	}
	if LHNull.IsSlot() || LHDeleted.IsSlot() {
		t.Error("reserved handles are slots")
	}
	p := Ptr{LH: 0x01000040, Ver: 77}
	if DecodeShortcut(ShortcutWord(p)) != p || DecodeShortcut(0) != (Ptr{}) {
		t.Error("shortcut word round trip")
	}
	s := MakeShortcutRef(5, 1234)
	if s.MemoryNode() != 5 || s.Index() != 1234 {
		t.Errorf("shortcut ref %#x", uint32(s))
	}
}

func TestSlabClassesAndRegion(t *testing.T) {
	for _, tc := range []struct{ size, class int }{{16, 64}, {64, 64}, {65, 128}, {144, 192}, {1040, 1536}, {16384, 16384}} {
		i, err := ClassFor(tc.size)
		if err != nil || SlabClasses[i] != tc.class {
			t.Errorf("ClassFor(%d) = %d (%v), want class %d", tc.size, i, err, tc.class)
		}
	}
	if _, err := ClassFor(16385); err == nil {
		t.Error("ClassFor(16385) accepted")
	}
	for i, c := range SlabClasses {
		if c%UnitSize != 0 || (i > 0 && c <= SlabClasses[i-1]) {
			t.Errorf("class %d = %d not increasing multiples of %d", i, c, UnitSize)
		}
	}
	l := RegionLayout{Shortcuts: 1000, Chunks: 3, ChunkSize: 1 << 16}
	buf := make([]byte, l.Size())
	for i := range buf {
		buf[i] = 0xAA
	}
	if err := InitRegion(buf, 7, l); err != nil {
		t.Fatal(err)
	}
	if l.DataOff() != 1<<16 || l.Size() != 4<<16 || l.ShortcutOff(2) != 80 || l.ChunkOff(1) != 2<<16 {
		t.Errorf("layout offsets: data %d size %d", l.DataOff(), l.Size())
	}
	mn, got, err := ReadRegionHeader(buf)
	if err != nil || mn != 7 || got != l {
		t.Errorf("ReadRegionHeader = %d %+v %v", mn, got, err)
	}
	if binary.LittleEndian.Uint64(buf[l.ShortcutOff(999):]) != 0 || buf[l.Size()-1] != 0 {
		t.Error("InitRegion left bytes unzeroed")
	}
	if InitRegion(buf[:100], 0, l) == nil || (RegionLayout{Chunks: 1, ChunkSize: 100}).Validate() == nil ||
		(RegionLayout{Chunks: 1 << 12, ChunkSize: 1 << 20}).Validate() == nil {
		t.Error("bad layouts accepted")
	}
	if v, wrap := NextVersion(254); v != 255 || wrap {
		t.Error("NextVersion(254)")
	}
	if v, wrap := NextVersion(255); v != 1 || !wrap {
		t.Error("NextVersion(255) must wrap to 1")
	}
}

func FuzzReadRegionHeader(f *testing.F) {
	good := make([]byte, 64)
	l := RegionLayout{Shortcuts: 10, Chunks: 1, ChunkSize: 1 << 14}
	buf := make([]byte, l.Size())
	InitRegion(buf, 3, l)
	copy(good, buf)
	f.Add(good)
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, b []byte) {
		mn, got, err := ReadRegionHeader(b)
		if err != nil {
			return
		}
		if got.Validate() != nil || mn < 0 {
			t.Fatalf("accepted invalid header: %d %+v", mn, got)
		}
		// A decoded node view never reads outside its bytes.
		if len(b) >= NodeOverhead {
			n := Node(b)
			_ = n.Header().String()
			_ = n.Key()
			_ = n.Self()
			_ = n.Value()
		}
	})
}

// TestVouchWord checks the vouch word of docs/clover-layout.md ("Vouched
// links") both ways, and that no word a memory node holds reads as one.
func TestVouchWord(t *testing.T) {
	lh, err := MakeLH(0, 4096)
	if err != nil {
		t.Fatal(err)
	}
	pred := Ptr{LH: lh, Ver: 9}
	w := VouchWord(pred)
	if uint64(w) != 1<<63|uint64(pred.LH)<<28|9<<11 {
		t.Fatalf("VouchWord = %#x", uint64(w))
	}
	if got, ok := w.Vouched(); !ok || got != pred {
		t.Fatalf("Vouched() = %v, %v; want %v", got, ok, pred)
	}
	for _, tc := range []struct {
		name string
		h    Header
	}{
		{"a tail word", TailWord(9)},
		{"a header with a next pointer", MakeHeader(pred.LH, 3, 9, false)},
		{"the vouch bit with a NULL next", Header(1<<63 | 9<<11)},
		{"the vouch bit with the delete mark", Header(1<<63 | uint64(LHDeleted)<<28)},
		{"the vouch bit with a next version", w | Header(3<<19)},
	} {
		if _, ok := tc.h.Vouched(); ok {
			t.Errorf("%s (%#x) reads as a vouch", tc.name, uint64(tc.h))
		}
	}
}
