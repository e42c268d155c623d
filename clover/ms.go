package clover

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// MSConfig configures the metadata server.
type MSConfig struct {
	// Regions are the layouts of the memory nodes' regions, indexed by
	// memory node (as InitRegion laid them out).
	Regions []RegionLayout
	// ReadTimeout is T_r: a retired slot waits this long before it can be
	// reused, and clients abandon reads older than it (default 50ms).
	ReadTimeout time.Duration
	// EpochPeriod is T_e: the MS starts a new epoch (and pushes it to
	// clients) this often; a slot whose 8-bit version wrapped waits
	// EpochWaits epochs before reuse (default 5s: a cursor idle for two epochs is dropped, so T_e must exceed the time between two uses of a key that should stay cached).
	EpochPeriod time.Duration
}

// EpochWaits is how many epochs a wrapped slot waits in the overflow list.
// Clients drop cursors not validated in the current or the previous epoch;
// with one more epoch for the push message in flight, three epochs suffice.
const EpochWaits = 3

// Slot states at the MS.
const (
	slotFree uint8 = iota
	slotAllocated
	slotRetired
)

type slotInfo struct {
	ver   uint8
	state uint8
	class uint8
	// passed: the key's latest pointer has moved past this node (or the
	// node is on no chain the pointer follows), so no walk from the pointer
	// can reach it.
	passed bool
}

type gcItem struct {
	lh      LH
	class   uint8
	due     time.Duration // ToGCList: reuse after this time
	epoch   uint32        // OverflowList: reuse from this epoch
	retired time.Duration // when the retire arrived
}

type keyMeta struct {
	shortcut ShortcutRef
	latest   Ptr
	class    uint8
}

type mnState struct {
	layout       RegionLayout
	nextChunk    int
	free         [len(SlabClasses)][]Ptr
	nextShortcut int
	freeShortcut []int
}

// MSStats are the metadata server's counters and slot accounting.
type MSStats struct {
	Keys                                   int
	Carved, Free, Allocated, Retired       int // slots by state (Retired = ToGC + Overflow)
	ToGC, Overflow                         int
	Epoch                                  uint32
	Allocs, Creates, Lookups, Retires      uint64
	Deletes                                uint64
	UnknownPredecessor, BadRetire, Wrapped uint64
	// Deferred: retired slots past T_r still waiting for the latest
	// pointer; ForcedReclaims: those reclaimed after MaxDefer anyway.
	Deferred              int
	ForcedReclaims        uint64
	Requests, BadRequests uint64
}

// MetaCore is the metadata server's deterministic core: key metadata, slab
// allocation, and GC with versions and epochs. It does no I/O and reads no
// clock: callers pass the time. Not safe for concurrent use (the server
// shell runs it on one goroutine).
type MetaCore struct {
	cfg       MSConfig
	mns       []mnState
	slots     map[LH]*slotInfo
	succ      map[LH]Ptr // successor of each slot in the ToGC/Overflow lists
	keys      map[uint64]*keyMeta
	toGC      []gcItem // FIFO by due time
	deferred  map[LH]gcItem
	deferQ    []gcItem // deferred items by retire time, for MaxDefer
	overflow  []gcItem // FIFO by epoch
	delayedSC []gcItem // shortcuts of deleted keys, reusable after T_r (lh = ShortcutRef)
	epoch     uint32
	epochAt   time.Duration
	stats     MSStats
}

// Errors of the core.
var (
	ErrExists   = errors.New("clover: key exists")
	ErrNotFound = errors.New("clover: key not found")
	ErrNoSpace  = errors.New("clover: no space")
)

// NewMetaCore validates cfg and returns an empty metadata server.
func NewMetaCore(cfg MSConfig) (*MetaCore, error) {
	if len(cfg.Regions) == 0 || len(cfg.Regions) > MaxMemoryNodes {
		return nil, fmt.Errorf("clover: metadata server: %d memory nodes, want 1..%d", len(cfg.Regions), MaxMemoryNodes)
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = 50 * time.Millisecond
	}
	if cfg.EpochPeriod <= 0 {
		cfg.EpochPeriod = 5 * time.Second
	}
	m := &MetaCore{cfg: cfg, slots: map[LH]*slotInfo{}, succ: map[LH]Ptr{}, deferred: map[LH]gcItem{}, keys: map[uint64]*keyMeta{}, mns: make([]mnState, len(cfg.Regions))}
	for i, l := range cfg.Regions {
		if err := l.Validate(); err != nil {
			return nil, fmt.Errorf("clover: metadata server: memory node %d: %w", i, err)
		}
		m.mns[i].layout = l
		if i == 0 {
			m.mns[i].nextShortcut = 1 // ShortcutRef 0 means none
		}
	}
	return m, nil
}

// Config returns the effective configuration.
func (m *MetaCore) Config() MSConfig { return m.cfg }

// Epoch is the current epoch.
func (m *MetaCore) Epoch() uint32 { return m.epoch }

// Stats returns the counters and the slot accounting.
func (m *MetaCore) Stats() MSStats {
	s := m.stats
	s.Keys = len(m.keys)
	s.Carved = len(m.slots)
	s.Free, s.Allocated, s.Retired = 0, 0, 0
	for _, si := range m.slots {
		switch si.state {
		case slotFree:
			s.Free++
		case slotAllocated:
			s.Allocated++
		case slotRetired:
			s.Retired++
		}
	}
	s.ToGC, s.Overflow, s.Epoch = len(m.toGC)+len(m.deferred), len(m.overflow), m.epoch
	s.Deferred = len(m.deferred)
	return s
}

// carve turns a fresh chunk of memory node mn into free slots of class c.
func (m *MetaCore) carve(mn int, c int) bool {
	st := &m.mns[mn]
	if st.nextChunk >= st.layout.Chunks {
		return false
	}
	base := st.layout.ChunkOff(st.nextChunk)
	st.nextChunk++
	size := SlabClasses[c]
	for off := 0; off+size <= st.layout.ChunkSize; off += size {
		lh, err := MakeLH(mn, uint64(base+off))
		if err != nil {
			continue // cannot happen for a validated layout
		}
		v := initialVersion(lh)
		m.slots[lh] = &slotInfo{ver: v, state: slotFree, class: uint8(c)}
		st.free[c] = append(st.free[c], Ptr{LH: lh, Ver: v})
	}
	return true
}

// Alloc hands out up to n free slots of slab class c on memory node mn,
// each with the version its next node must carry.
func (m *MetaCore) Alloc(c, mn, n int, out []Ptr) ([]Ptr, error) {
	if c < 0 || c >= len(SlabClasses) || mn < 0 || mn >= len(m.mns) || n <= 0 || n > MaxBatch {
		return out, fmt.Errorf("clover: alloc class %d on memory node %d x%d: bad request", c, mn, n)
	}
	st := &m.mns[mn]
	for len(out) < n {
		if len(st.free[c]) == 0 && !m.carve(mn, c) {
			break
		}
		last := len(st.free[c]) - 1
		p := st.free[c][last]
		st.free[c] = st.free[c][:last]
		m.slots[p.LH].state = slotAllocated
		out = append(out, p)
	}
	m.stats.Allocs++
	if len(out) == 0 {
		return out, fmt.Errorf("clover: alloc class %d on memory node %d: %w", c, mn, ErrNoSpace)
	}
	return out, nil
}

// initialVersion spreads the first GC versions of fresh slots over
// 1..255 (by a hash of the slot), instead of starting every slot at 1: a
// client that a steering switch redirects tells the node it reached from
// the node it aimed at by their versions (see the package doc), which only
// works when neighbouring versions of a key do not all coincide.
func initialVersion(lh LH) uint8 {
	return uint8(splitmix(uint64(lh))%MaxVersion) + MinVersion
}

func (m *MetaCore) isAllocated(p Ptr) bool {
	si := m.slots[p.LH]
	return si != nil && si.state == slotAllocated && si.ver == p.Ver
}

// Create registers key with first node first (written by the client into a
// slot it was allocated) and gives it a shortcut on the same memory node.
func (m *MetaCore) Create(key uint64, first Ptr, class uint8) (KeyInfo, error) {
	m.stats.Creates++
	if k := m.keys[key]; k != nil {
		return KeyInfo{Shortcut: k.shortcut, Latest: k.latest, Class: k.class}, ErrExists
	}
	if !m.isAllocated(first) || int(class) >= len(SlabClasses) {
		return KeyInfo{}, fmt.Errorf("clover: create key %d: node %v is not an allocated slot", key, first)
	}
	mn := first.LH.MemoryNode()
	st := &m.mns[mn]
	var idx int
	if n := len(st.freeShortcut); n > 0 {
		idx = st.freeShortcut[n-1]
		st.freeShortcut = st.freeShortcut[:n-1]
	} else if st.nextShortcut < st.layout.Shortcuts {
		idx = st.nextShortcut
		st.nextShortcut++
	} else {
		return KeyInfo{}, fmt.Errorf("clover: create key %d: shortcuts of memory node %d: %w", key, mn, ErrNoSpace)
	}
	k := &keyMeta{shortcut: MakeShortcutRef(mn, idx), latest: first, class: class}
	m.keys[key] = k
	return KeyInfo{Shortcut: k.shortcut, Latest: k.latest, Class: k.class}, nil
}

// Lookup returns a key's shortcut and the latest version the MS knows.
func (m *MetaCore) Lookup(key uint64) (KeyInfo, error) {
	m.stats.Lookups++
	k := m.keys[key]
	if k == nil {
		return KeyInfo{}, ErrNotFound
	}
	return KeyInfo{Shortcut: k.shortcut, Latest: k.latest, Class: k.class}, nil
}

// retireSlot moves an allocated slot to the ToGCList. passed says no walk
// from the key's latest pointer can reach it (a node never linked, or of a
// deleted key).
func (m *MetaCore) retireSlot(p Ptr, now time.Duration, passed bool) bool {
	if !m.isAllocated(p) {
		m.stats.BadRetire++
		return false
	}
	si := m.slots[p.LH]
	si.state = slotRetired
	si.passed = si.passed || passed
	m.toGC = append(m.toGC, gcItem{lh: p.LH, class: si.class, due: now + m.cfg.ReadTimeout, retired: now})
	return true
}

// pass records that the latest pointer moved off node p; a reclaim that
// was waiting for it proceeds.
func (m *MetaCore) pass(p Ptr) {
	si := m.slots[p.LH]
	if si == nil || si.ver != p.Ver {
		return
	}
	si.passed = true
	if it, ok := m.deferred[p.LH]; ok {
		delete(m.deferred, p.LH)
		m.reclaim(it)
	}
}

// Retire processes one retire entry: the old node goes to the ToGCList for
// T_r, and the key's latest pointer moves to the new node if that node is
// still live (so the MS never points at a retired slot, whatever order
// retires arrive in). It reports whether a slot was retired.
func (m *MetaCore) Retire(e RetireEntry, now time.Duration) bool {
	m.stats.Retires++
	ok := false
	if e.Old.LH == LHNull {
		m.stats.UnknownPredecessor++
	} else if ok = m.retireSlot(e.Old, now, m.keys[e.Key] == nil || e.New.IsZero()); ok {
		m.succ[e.Old.LH] = e.New
	}
	k := m.keys[e.Key]
	if k == nil {
		return ok
	}
	// The latest pointer advances only along known links (old -> new
	// pairs) from where it is: it never regresses and never skips a node,
	// so it rests on the first node of the chain whose retire has not
	// arrived, which is live. Clients hand in retires well within T_r
	// (Client flushes them at T_r/4), so that node's successors are not
	// reclaimed while it is the latest.
	for i := 0; i < 1<<16; i++ {
		next, known := m.succ[k.latest.LH]
		si := m.slots[k.latest.LH]
		if !known || si == nil || si.ver != k.latest.Ver || next.IsZero() {
			break
		}
		m.pass(k.latest)
		k.latest = next
	}
	// Links of unknown predecessor (steered, not found) cannot be
	// followed; if the pointer is stuck on a slot no longer live, take the
	// newest live node announced.
	if !m.isAllocated(k.latest) && m.isAllocated(e.New) {
		m.pass(k.latest)
		k.latest = e.New
	}
	return ok
}

// Free returns slots a client was allocated but never linked (a rejected
// create); they wait T_r like retired slots.
func (m *MetaCore) Free(p Ptr, now time.Duration) bool { return m.retireSlot(p, now, true) }

// Delete drops key; its tail node and its shortcut are reclaimed after T_r.
func (m *MetaCore) Delete(key uint64, tail Ptr, now time.Duration) error {
	m.stats.Deletes++
	k := m.keys[key]
	if k == nil {
		return ErrNotFound
	}
	delete(m.keys, key)
	if tail.LH.IsSlot() {
		m.retireSlot(tail, now, true)
	}
	// The rest of the chain is unreachable from any MS pointer now.
	m.pass(k.latest)
	m.delayedSC = append(m.delayedSC, gcItem{lh: LH(k.shortcut), due: now + m.cfg.ReadTimeout})
	return nil
}

// Tick advances time: ToGCList entries older than T_r get their next
// version and go to the FreeList (or, when the version wrapped, to the
// OverflowList for EpochWaits epochs), and a new epoch starts every T_e.
// It reports whether a new epoch started (the shell then pushes it).
func (m *MetaCore) Tick(now time.Duration) (newEpoch bool) {
	for now-m.epochAt >= m.cfg.EpochPeriod {
		m.epoch++
		m.epochAt += m.cfg.EpochPeriod
		newEpoch = true
	}
	i := 0
	for ; i < len(m.toGC) && m.toGC[i].due <= now; i++ {
		it := m.toGC[i]
		if !m.slots[it.lh].passed {
			// The latest pointer has not moved past this node: a client
			// falling back to the MS may still walk through it (a retire of
			// an earlier node is late). Wait for the pointer, up to MaxDefer.
			m.deferred[it.lh] = it
			m.deferQ = append(m.deferQ, it)
			continue
		}
		m.reclaim(it)
	}
	m.toGC = m.toGC[i:]
	i = 0
	for ; i < len(m.deferQ) && now-m.deferQ[i].retired >= m.maxDefer(); i++ {
		it := m.deferQ[i]
		if d, ok := m.deferred[it.lh]; ok && d.retired == it.retired {
			delete(m.deferred, it.lh)
			m.stats.ForcedReclaims++
			m.reclaim(it)
		}
	}
	m.deferQ = m.deferQ[i:]
	i = 0
	for ; i < len(m.overflow) && m.overflow[i].epoch <= m.epoch; i++ {
		m.release(m.overflow[i])
	}
	m.overflow = m.overflow[i:]
	i = 0
	for ; i < len(m.delayedSC) && m.delayedSC[i].due <= now; i++ {
		sc := ShortcutRef(m.delayedSC[i].lh)
		st := &m.mns[sc.MemoryNode()]
		st.freeShortcut = append(st.freeShortcut, sc.Index())
	}
	m.delayedSC = m.delayedSC[i:]
	return newEpoch
}

// maxDefer bounds how long a retired slot waits for the latest pointer:
// two epochs.
func (m *MetaCore) maxDefer() time.Duration { return 2 * m.cfg.EpochPeriod }

// reclaim gives a retired slot its next version and frees it, or parks it
// in the OverflowList when the version wrapped.
func (m *MetaCore) reclaim(it gcItem) {
	si := m.slots[it.lh]
	v, wrapped := NextVersion(si.ver)
	si.ver = v
	si.passed = false
	if wrapped {
		m.stats.Wrapped++
		it.epoch = m.epoch + EpochWaits
		m.overflow = append(m.overflow, it)
		return
	}
	m.release(it)
}

func (m *MetaCore) release(it gcItem) {
	delete(m.succ, it.lh)
	si := m.slots[it.lh]
	si.state = slotFree
	st := &m.mns[it.lh.MemoryNode()]
	st.free[it.class] = append(st.free[it.class], Ptr{LH: it.lh, Ver: si.ver})
}

// Handle serves one request message into reply (which must hold MsgMax
// bytes) and returns the reply's length. Malformed requests get
// StatusBadReq; nothing panics on input.
func (m *MetaCore) Handle(req []byte, reply []byte, now time.Duration) int {
	m.stats.Requests++
	rp := Reply(reply[:ReplyHeaderSize])
	clear(rp)
	if len(req) < ReqHeaderSize {
		m.stats.BadRequests++
		rp.SetType(MsgReply)
		rp.SetStatus(StatusBadReq)
		rp.SetEpoch(m.epoch)
		return ReplyHeaderSize
	}
	r := Request(req)
	rp.SetType(r.Type() | MsgReply)
	rp.SetID(r.ID())
	rp.SetEpoch(m.epoch)
	need, err := reqSize(r.Type(), r.Count())
	if err != nil || len(req) < need {
		m.stats.BadRequests++
		rp.SetStatus(StatusBadReq)
		return ReplyHeaderSize
	}
	body := r.Body()
	out := reply[ReplyHeaderSize:]
	switch r.Type() {
	case MsgAlloc:
		var buf [MaxBatch]Ptr
		ptrs, err := m.Alloc(int(body[allocClassOff]), int(body[allocMNOff]), r.Count(), buf[:0])
		if err != nil && len(ptrs) == 0 {
			rp.SetStatus(statusOf(err))
			return ReplyHeaderSize
		}
		for i, p := range ptrs {
			e := out[i*AllocEntrySize:]
			binary.LittleEndian.PutUint32(e, uint32(p.LH))
			e[4], e[5], e[6], e[7] = p.Ver, 0, 0, 0
		}
		rp.SetCount(len(ptrs))
		return ReplyHeaderSize + len(ptrs)*AllocEntrySize
	case MsgCreate, MsgLookup:
		key := binary.LittleEndian.Uint64(body[keyBodyKeyOff:])
		var ki KeyInfo
		var err error
		if r.Type() == MsgCreate {
			first := Ptr{LH: LH(binary.LittleEndian.Uint32(body[keyBodyLHOff:])), Ver: body[keyBodyVerOff]}
			ki, err = m.Create(key, first, body[keyBodyClassOff])
		} else {
			ki, err = m.Lookup(key)
		}
		rp.SetStatus(statusOf(err))
		if err != nil && !errors.Is(err, ErrExists) {
			return ReplyHeaderSize
		}
		putKeyInfo(out, ki)
		return ReplyHeaderSize + keyRepSize
	case MsgRetire:
		n := 0
		for i := 0; i < r.Count(); i++ {
			if m.Retire(getRetire(body[i*RetireEntrySize:]), now) {
				n++
			}
		}
		rp.SetCount(n)
		return ReplyHeaderSize
	case MsgDelete:
		key := binary.LittleEndian.Uint64(body[keyBodyKeyOff:])
		tail := Ptr{LH: LH(binary.LittleEndian.Uint32(body[keyBodyLHOff:])), Ver: body[keyBodyVerOff]}
		rp.SetStatus(statusOf(m.Delete(key, tail, now)))
		return ReplyHeaderSize
	}
	rp.SetStatus(StatusBadReq)
	return ReplyHeaderSize
}

func statusOf(err error) uint8 {
	switch {
	case err == nil:
		return StatusOK
	case errors.Is(err, ErrExists):
		return StatusExists
	case errors.Is(err, ErrNotFound):
		return StatusNotFound
	case errors.Is(err, ErrNoSpace):
		return StatusNoSpace
	}
	return StatusBadReq
}

// EncodeEpoch writes the MS's epoch push message into b (ReplyHeaderSize
// bytes) and returns its length.
func EncodeEpoch(b []byte, epoch uint32) int {
	rp := Reply(b[:ReplyHeaderSize])
	clear(rp)
	rp.SetType(MsgEpoch | MsgReply)
	rp.SetEpoch(epoch)
	return ReplyHeaderSize
}
