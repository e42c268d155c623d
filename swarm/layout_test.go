package swarm

import (
	"bytes"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestWordFields(t *testing.T) {
	for _, tc := range []struct {
		ts       uint64
		pid, log int
		v        bool
	}{{1, 1, 0, false}, {MaxTS, MaxWriters, MaxLogBuffers - 1, true}, {12345, 7, 300, true}} {
		w := MakeWord(tc.ts, tc.pid, tc.log, tc.v)
		if w.TS() != tc.ts || w.PID() != tc.pid || w.Log() != tc.log || w.IsVerified() != tc.v {
			t.Errorf("%+v: decoded %v", tc, w)
		}
		if w.ID().IsVerified() || w.ID()|Verified != w|Verified {
			t.Errorf("%v: ID %v", w, w.ID())
		}
	}
}

// TestWordOrder: integer order of words is the order of (ts, writer) with
// VERIFIED above GUESSED, whatever the buffer index.
func TestWordOrder(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		gen := func(name string) (uint64, int, int, bool) {
			return rapid.Uint64Range(1, MaxTS).Draw(rt, name+"ts"), rapid.IntRange(1, MaxWriters).Draw(rt, name+"pid"),
				rapid.IntRange(0, MaxLogBuffers-1).Draw(rt, name+"log"), rapid.Bool().Draw(rt, name+"v")
		}
		ta, pa, la, va := gen("a")
		tb, pb, lb, vb := gen("b")
		a, b := MakeWord(ta, pa, la, va), MakeWord(tb, pb, lb, vb)
		if ta != tb && (a < b) != (ta < tb) {
			rt.Fatalf("%v vs %v: timestamps decide", a, b)
		}
		if ta == tb && pa != pb && (a < b) != (pa < pb) {
			rt.Fatalf("%v vs %v: writers decide", a, b)
		}
		if ta == tb && pa == pb && la == lb && va != vb && (a < b) != vb {
			rt.Fatalf("%v vs %v: VERIFIED is above GUESSED", a, b)
		}
	})
}

func TestLayoutValidate(t *testing.T) {
	ok := Layout{Keys: 1, Writers: 1, ValueSize: 8, LogBuffers: 2}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []Layout{
		{Keys: 0, Writers: 1, ValueSize: 8, LogBuffers: 2},
		{Keys: 1, Writers: 0, ValueSize: 8, LogBuffers: 2},
		{Keys: 1, Writers: MaxWriters + 1, ValueSize: 8, LogBuffers: 2},
		{Keys: 1, Writers: 1, ValueSize: 7, LogBuffers: 2},
		{Keys: 1, Writers: 1, ValueSize: 8, LogBuffers: MaxLogBuffers + 1},
	} {
		if bad.Validate() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestLayoutDisjoint: slots and buffers of a layout never overlap and fit
// the region.
func TestLayoutDisjoint(t *testing.T) {
	l := Layout{Keys: 3, Writers: 4, ValueSize: 64, LogBuffers: 5}
	type span struct{ lo, hi int }
	var spans []span
	for kv := 0; kv < l.Keys; kv++ {
		spans = append(spans, span{l.LockOff(kv, 1), l.LockOff(kv, l.Writers) + 8}, span{l.MetaOff(kv), l.MetaOff(kv) + l.ReadSpan()})
	}
	for p := 1; p <= l.Writers; p++ {
		for b := 0; b < l.LogBuffers; b++ {
			spans = append(spans, span{l.BufOff(p, b), l.BufOff(p, b) + l.EntrySize()})
		}
	}
	for i, a := range spans {
		if a.hi > l.RegionSize() {
			t.Errorf("span %d beyond the region", i)
		}
		for j, b := range spans[i+1:] {
			if a.lo < b.hi && b.lo < a.hi {
				t.Errorf("spans %d and %d overlap: %v %v", i, i+1+j, a, b)
			}
		}
	}
}

// TestEntry: an entry checks against its word (flag ignored), not against
// another write's word, and not once a byte changed (a torn read).
func TestEntry(t *testing.T) {
	l := Layout{Keys: 1, Writers: 2, ValueSize: 16, LogBuffers: 2}
	w := MakeWord(5, 1, 1, false)
	v := bytes.Repeat([]byte{7}, 16)
	e := make([]byte, l.EntrySize())
	PutEntry(e, w, v)
	if got, ok := CheckEntry(e, w|Verified); !ok || !bytes.Equal(got, v) {
		t.Fatal("intact entry rejected")
	}
	if _, ok := CheckEntry(e, MakeWord(5, 1, 0, false)); ok {
		t.Error("entry accepted for another write")
	}
	for i := range e {
		e[i] ^= 0x80 // bit 0 of byte 0 is the flag, which the entry ignores
		if _, ok := CheckEntry(e, w); ok {
			t.Errorf("entry with byte %d changed accepted", i)
		}
		e[i] ^= 0x80
	}
	read := make([]byte, l.ReadSpan())
	read[8] = 0 // metadata words: writer 2's word holds w
	copy(read[8:], []byte{byte(w), byte(w >> 8), byte(w >> 16), byte(w >> 24), byte(w >> 32), byte(w >> 40), byte(w >> 48), byte(w >> 56)})
	copy(read[16:], e)
	nv, err := l.ParseRead(read)
	if err != nil || nv.Max != w || !bytes.Equal(nv.InPlace, v) {
		t.Errorf("ParseRead: %v %v %v", nv.Max, nv.InPlace, err)
	}
	if _, err := l.ParseRead(read[:5]); err == nil {
		t.Error("short read accepted")
	}
}

func FuzzParseRead(f *testing.F) {
	l := Layout{Keys: 1, Writers: 2, ValueSize: 16, LogBuffers: 2}
	f.Add(make([]byte, l.ReadSpan()))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := l.ParseRead(b)
		if err != nil {
			return
		}
		if v.InPlace != nil {
			if _, ok := CheckEntry(b[16:l.ReadSpan()], v.Max); !ok {
				t.Fatal("in-place value returned for an entry that does not check")
			}
		}
	})
}

// TestClock: guesses strictly increase, and after observing a timestamp
// the clock reads at least that timestamp plus the push, never going back.
func TestClock(t *testing.T) {
	now := time.Duration(0)
	k := clock{now: func() time.Duration { return now }, tick: time.Microsecond, push: 3}
	var last uint64
	for i := 0; i < 100; i++ {
		if i%10 == 0 {
			k.observe(last + 50)
		}
		if i%7 == 0 {
			now += time.Microsecond
		}
		g := k.guess()
		if g <= last {
			t.Fatalf("guess %d after %d", g, last)
		}
		if i%10 == 0 && g < last+53 {
			t.Fatalf("guess %d after observing %d", g, last+50)
		}
		last = g
	}
}
