package clover

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"
)

func testCore(t testing.TB) *MetaCore {
	t.Helper()
	m, err := NewMetaCore(MSConfig{
		Regions:     []RegionLayout{{Shortcuts: 16, Chunks: 2, ChunkSize: 1 << 14}, {Shortcuts: 16, Chunks: 1, ChunkSize: 1 << 14}},
		ReadTimeout: 10 * time.Millisecond, EpochPeriod: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func checkAccounting(t *testing.T, m *MetaCore) {
	t.Helper()
	s := m.Stats()
	if s.Free+s.Allocated+s.Retired != s.Carved || s.ToGC+s.Overflow != s.Retired {
		t.Fatalf("slot accounting broken: %+v", s)
	}
}

func TestMSAllocCreateLookup(t *testing.T) {
	m := testCore(t)
	c, _ := ClassFor(NodeSize(128)) // 192-byte slots: 85 per 16 KiB chunk
	ptrs, err := m.Alloc(c, 1, 32, nil)
	if err != nil || len(ptrs) != 32 {
		t.Fatalf("Alloc = %d, %v", len(ptrs), err)
	}
	seen := map[LH]bool{}
	for _, p := range ptrs {
		if seen[p.LH] || p.LH.MemoryNode() != 1 || p.Ver != initialVersion(p.LH) || p.Ver < MinVersion || p.LH.Offset()%UnitSize != 0 ||
			p.LH.Offset() < uint64(m.cfg.Regions[1].DataOff()) || p.LH.Offset()+192 > uint64(m.cfg.Regions[1].Size()) {
			t.Fatalf("bad or duplicate slot %v", p)
		}
		seen[p.LH] = true
	}
	// Memory node 1 has one chunk of 85 slots: the third batch runs dry.
	more, err := m.Alloc(c, 1, 32, nil)
	if len(more) != 32 || err != nil {
		t.Fatalf("second batch: %d %v", len(more), err)
	}
	more, err = m.Alloc(c, 1, 32, nil)
	if len(more) != 21 || err != nil {
		t.Fatalf("third batch: %d %v, want the 21 left", len(more), err)
	}
	if _, err := m.Alloc(c, 1, 1, nil); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("exhausted node: %v", err)
	}
	ki, err := m.Create(7, ptrs[0], uint8(c))
	if err != nil || ki.Latest != ptrs[0] || ki.Shortcut.MemoryNode() != 1 {
		t.Fatalf("Create = %+v %v", ki, err)
	}
	if _, err := m.Create(7, ptrs[1], uint8(c)); !errors.Is(err, ErrExists) {
		t.Fatalf("second create: %v", err)
	}
	if _, err := m.Create(8, Ptr{LH: ptrs[1].LH, Ver: 9}, uint8(c)); err == nil {
		t.Fatal("create with a wrong version accepted")
	}
	if got, err := m.Lookup(7); err != nil || got != ki {
		t.Fatalf("Lookup = %+v %v", got, err)
	}
	if _, err := m.Lookup(8); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Lookup(8): %v", err)
	}
	checkAccounting(t, m)
}

func TestMSRetireGCAndLatest(t *testing.T) {
	m := testCore(t)
	c, _ := ClassFor(NodeSize(128))
	p, _ := m.Alloc(c, 0, 4, nil)
	x, y, z, w := p[0], p[1], p[2], p[3]
	m.Create(1, x, uint8(c))
	now := time.Duration(0)
	// Retires in the worst order: W<-Z arrives before Y<-X's.
	m.Retire(RetireEntry{Key: 1, Old: z, New: w}, now)
	if ki, _ := m.Lookup(1); ki.Latest != x {
		t.Fatalf("latest moved from a node not being retired: %v", ki.Latest)
	}
	m.Retire(RetireEntry{Key: 1, Old: y, New: z}, now)
	m.Retire(RetireEntry{Key: 1, Old: x, New: y}, now)
	if ki, _ := m.Lookup(1); ki.Latest != w {
		t.Fatalf("latest = %v, want the live tail %v", ki.Latest, w)
	}
	if m.Retire(RetireEntry{Key: 1, Old: x, New: y}, now) {
		t.Fatal("double retire accepted")
	}
	checkAccounting(t, m)
	// Not reusable before T_r.
	m.Tick(9 * time.Millisecond)
	if s := m.Stats(); s.ToGC != 3 {
		t.Fatalf("ToGC = %d before T_r", s.ToGC)
	}
	m.Tick(10 * time.Millisecond)
	s := m.Stats()
	if s.ToGC != 0 || s.Free < 3 {
		t.Fatalf("after T_r: %+v", s)
	}
	// The reclaimed slots come back with their next version.
	var again []Ptr
	for len(again) < s.Free {
		got, err := m.Alloc(c, 0, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		again = append(again, got...)
	}
	found := 0
	for _, q := range again {
		if q.LH == x.LH || q.LH == y.LH || q.LH == z.LH {
			found++
			if want, _ := NextVersion(initialVersion(q.LH)); q.Ver != want {
				t.Errorf("reused slot %v has version %d, want %d", q.LH, q.Ver, want)
			}
		}
	}
	if found != 3 {
		t.Errorf("found %d of 3 reclaimed slots", found)
	}
	checkAccounting(t, m)
}

func TestMSVersionWrapWaitsEpochs(t *testing.T) {
	m := testCore(t)
	c, _ := ClassFor(NodeSize(8))
	now := time.Duration(0)
	p, _ := m.Alloc(c, 0, 1, nil)
	slot := p[0]
	// Reuse one slot until its version wraps; it is the only one we hand
	// back, so Alloc returns it again after T_r unless it waits.
	for v := int(slot.Ver); v < MaxVersion; v++ {
		m.Free(slot, now)
		now += 10 * time.Millisecond
		m.Tick(now)
		st := &m.mns[0]
		// Take our slot back out of the free list.
		fl := st.free[c]
		if fl[len(fl)-1].LH != slot.LH || fl[len(fl)-1].Ver != uint8(v+1) {
			t.Fatalf("reuse %d: top of free list %v, want %v@v%d", v, fl[len(fl)-1], slot.LH, v+1)
		}
		slot = fl[len(fl)-1]
		st.free[c] = fl[:len(fl)-1]
		m.slots[slot.LH].state = slotAllocated
	}
	if slot.Ver != MaxVersion {
		t.Fatalf("version %d", slot.Ver)
	}
	m.Free(slot, now)
	now += 10 * time.Millisecond
	m.Tick(now)
	s := m.Stats()
	if s.Overflow != 1 || s.Wrapped != 1 {
		t.Fatalf("wrapped slot not in the overflow list: %+v", s)
	}
	e0 := m.Epoch()
	for m.Epoch() < e0+EpochWaits-1 {
		now += 100 * time.Millisecond
		m.Tick(now)
		if m.Stats().Overflow != 1 {
			t.Fatalf("overflowed slot released at epoch %d, before %d", m.Epoch(), e0+EpochWaits)
		}
	}
	now += 100 * time.Millisecond
	if !m.Tick(now) {
		t.Fatal("no new epoch")
	}
	if s := m.Stats(); s.Overflow != 0 {
		t.Fatalf("overflowed slot still waiting at epoch %d", m.Epoch())
	}
	fl := m.mns[0].free[c]
	if top := fl[len(fl)-1]; top.LH != slot.LH || top.Ver != MinVersion {
		t.Fatalf("wrapped slot back as %v, want version %d", top, MinVersion)
	}
	checkAccounting(t, m)
}

func TestMSDeleteAndShortcutReuse(t *testing.T) {
	m := testCore(t)
	c, _ := ClassFor(NodeSize(8))
	p, _ := m.Alloc(c, 0, 2, nil)
	ki, _ := m.Create(5, p[0], uint8(c))
	if err := m.Delete(5, p[0], 0); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Lookup(5); !errors.Is(err, ErrNotFound) {
		t.Fatal("deleted key found")
	}
	if err := m.Delete(5, p[0], 0); !errors.Is(err, ErrNotFound) {
		t.Fatal("double delete")
	}
	m.Tick(10 * time.Millisecond)
	ki2, err := m.Create(6, p[1], uint8(c))
	if err != nil || ki2.Shortcut != ki.Shortcut {
		t.Fatalf("shortcut not reused after T_r: %v %v (%v)", ki2.Shortcut, ki.Shortcut, err)
	}
	checkAccounting(t, m)
}

func TestMSHandleMessages(t *testing.T) {
	m := testCore(t)
	c, _ := ClassFor(NodeSize(128))
	req := make([]byte, MsgMax)
	rep := make([]byte, MsgMax)
	r := Request(req)
	r.SetType(MsgAlloc)
	r.SetCount(4)
	r.SetID(77)
	req[ReqHeaderSize+allocClassOff] = byte(c)
	req[ReqHeaderSize+allocMNOff] = 0
	n := m.Handle(req[:ReqHeaderSize+allocBodySize], rep, 0)
	rp := Reply(rep[:n])
	if rp.Type() != MsgAlloc|MsgReply || rp.Status() != StatusOK || rp.ID() != 77 || rp.Count() != 4 || n != ReplyHeaderSize+4*AllocEntrySize {
		t.Fatalf("alloc reply % x", rep[:n])
	}
	first := Ptr{LH: LH(binary.LittleEndian.Uint32(rp.Body())), Ver: rp.Body()[4]}
	// CREATE then LOOKUP.
	r.SetType(MsgCreate)
	r.SetID(78)
	binary.LittleEndian.PutUint64(req[ReqHeaderSize:], 99)
	binary.LittleEndian.PutUint32(req[ReqHeaderSize+keyBodyLHOff:], uint32(first.LH))
	req[ReqHeaderSize+keyBodyVerOff] = first.Ver
	req[ReqHeaderSize+keyBodyClassOff] = byte(c)
	n = m.Handle(req[:ReqHeaderSize+keyBodySize], rep, 0)
	if rp = Reply(rep[:n]); rp.Status() != StatusOK || getKeyInfo(rp.Body()).Latest != first {
		t.Fatalf("create reply % x", rep[:n])
	}
	r.SetType(MsgLookup)
	n = m.Handle(req[:ReqHeaderSize+keyBodySize], rep, 0)
	if rp = Reply(rep[:n]); rp.Status() != StatusOK || getKeyInfo(rp.Body()).Latest != first {
		t.Fatalf("lookup reply % x", rep[:n])
	}
	binary.LittleEndian.PutUint64(req[ReqHeaderSize:], 100)
	n = m.Handle(req[:ReqHeaderSize+keyBodySize], rep, 0)
	if Reply(rep[:n]).Status() != StatusNotFound {
		t.Fatal("lookup of a missing key")
	}
	// Malformed requests.
	for _, bad := range [][]byte{nil, {1}, {MsgAlloc, 0, 1, 0, 0, 0, 0, 0}, {99, 0, 0, 0, 0, 0, 0, 0}, {MsgRetire, 0, 200, 0, 0, 0, 0, 0}} {
		n = m.Handle(bad, rep, 0)
		if n != ReplyHeaderSize || Reply(rep[:n]).Status() != StatusBadReq {
			t.Errorf("request % x: reply % x", bad, rep[:n])
		}
	}
}

func FuzzMSHandle(f *testing.F) {
	f.Add([]byte{MsgAlloc, 0, 4, 0, 1, 0, 0, 0, 2, 0, 0, 0})
	f.Add([]byte{MsgRetire, 0, 1, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 0, 2, 0, 0, 1, 1, 0, 0, 0})
	f.Add([]byte{MsgCreate, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0x41, 0, 0, 0, 1, 2, 0, 0})
	f.Fuzz(func(t *testing.T, req []byte) {
		m := testCore(t)
		rep := make([]byte, MsgMax)
		var now time.Duration
		// Feed the message several times, with time passing, to reach GC.
		for i := 0; i < 3; i++ {
			n := m.Handle(req, rep, now)
			if n < ReplyHeaderSize || n > MsgMax {
				t.Fatalf("reply length %d", n)
			}
			now += 20 * time.Millisecond
			m.Tick(now)
		}
		checkAccounting(t, m)
	})
}

// TestMSReclaimWaitsForLatestPointer: a node retired before its
// predecessor's retire arrives is not reclaimed at T_r (a client falling
// back to the MS's pointer would walk through it), but as soon as the
// pointer passes it, or after two epochs at the latest.
func TestMSReclaimWaitsForLatestPointer(t *testing.T) {
	m := testCore(t)
	c, _ := ClassFor(NodeSize(8))
	p, _ := m.Alloc(c, 0, 4, nil)
	x, y, z, w := p[0], p[1], p[2], p[3]
	m.Create(1, x, uint8(c))
	m.Retire(RetireEntry{Key: 1, Old: y, New: z}, 0) // x's retire is late
	m.Tick(10 * time.Millisecond)
	if s := m.Stats(); s.Deferred != 1 || m.slots[y.LH].state != slotRetired {
		t.Fatalf("y reclaimed while the MS pointer (x) still leads to it: %+v", s)
	}
	m.Retire(RetireEntry{Key: 1, Old: x, New: y}, 11*time.Millisecond)
	if ki, _ := m.Lookup(1); ki.Latest != z {
		t.Fatalf("latest %v, want %v", ki.Latest, z)
	}
	if s := m.Stats(); s.Deferred != 0 || m.slots[y.LH].state != slotFree {
		t.Fatalf("y not reclaimed once the pointer passed it: %+v", s)
	}
	// A retire whose predecessor never arrives: reclaimed after 2 epochs.
	m.Retire(RetireEntry{Key: 1, Old: w, New: Ptr{LH: z.LH, Ver: z.Ver}}, 20*time.Millisecond)
	m.Tick(30 * time.Millisecond)
	if s := m.Stats(); s.Deferred != 1 {
		t.Fatalf("w not deferred: %+v", s)
	}
	m.Tick(20*time.Millisecond + 2*m.cfg.EpochPeriod)
	if s := m.Stats(); s.Deferred != 0 || s.ForcedReclaims != 1 {
		t.Fatalf("w not force-reclaimed after two epochs: %+v", s)
	}
	checkAccounting(t, m)
}

// FuzzCheckReply: whatever a reply holds, once checkReply accepts it the
// client's accessors stay inside it.
func FuzzCheckReply(f *testing.F) {
	m := testCore(f)
	rep := make([]byte, MsgMax)
	req := []byte{MsgAlloc, 0, 2, 0, 1, 0, 0, 0, 2, 0, 0, 0}
	f.Add(rep[:m.Handle(req, rep, 0)])
	f.Add([]byte{MsgLookup | MsgReply, StatusOK, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		rp := Reply(b)
		if checkReply(rp) != nil {
			return
		}
		switch rp.Type() &^ MsgReply {
		case MsgAlloc:
			for i := 0; i < rp.Count(); i++ {
				_ = binary.LittleEndian.Uint32(rp.Body()[i*AllocEntrySize:])
				_ = rp.Body()[i*AllocEntrySize+4]
			}
		case MsgCreate, MsgLookup:
			if rp.Status() == StatusOK || rp.Status() == StatusExists {
				_ = getKeyInfo(rp.Body())
			}
		}
	})
}
