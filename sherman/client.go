package sherman

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/swordbox/swordbox/roce/verbs"
)

// MemoryNodeConn is a client thread's connection to one memory node.
type MemoryNodeConn struct {
	// QP carries the one-sided verbs (READ, WRITE, CMP_SWAP).
	QP verbs.QP
	// RPC is a queue pair to the node's directory (MALLOC, NEW_ROOT).
	RPC verbs.QP
	// Remote addresses the node's data and lock regions.
	Remote Remote
}

// ClientConfig configures a client thread.
type ClientConfig struct {
	Host *Host
	// Thread is the thread's number on its host (lock tag low bits).
	Thread uint16
	// Device registers the thread's buffers and provides the clock the
	// thread runs in: its verb timeout, pauses and waits for a host-local
	// lock are in this clock's time.
	Device interface {
		Registrar
		verbs.Clocked
	}
	// CQ completes every queue pair of the thread (send and receive).
	CQ verbs.CQ
	// MemoryNodes by node number; node 0 holds the root pointer.
	MemoryNodes []MemoryNodeConn
	// ChunkSize must match the memory nodes' (default DefaultChunkSize).
	ChunkSize uint64
	// VerbTimeout fails an operation whose verb has not completed after
	// it (default 10s): the RNIC retransmits on its own, so this only
	// turns a hang into an error.
	VerbTimeout time.Duration
	// MaxLockRetries bounds the failed CAS on a lock held by one and the
	// same holder before the operation fails as a deadlock (Sherman: 10^6).
	MaxLockRetries int
}

// Metrics counts a client thread's work.
type Metrics struct {
	Ops, Searches, Inserts, Deletes uint64
	// Verbs posted, by kind; CASFailures are lock CAS that found the lock
	// held.
	Verbs, Reads, Writes, CAS, CASFailures uint64
	// HandOvers: remote locks received from a local releaser.
	HandOvers uint64
	// CacheHits and CacheMisses of the index cache; CacheStale: hits whose
	// leaf no longer covered the key.
	CacheHits, CacheMisses, CacheStale uint64
	// ReReads: page READs repeated because the versions disagreed.
	ReReads uint64
	// LeafSplits, InternalSplits, NewRoots, RootCASFailures, Mallocs.
	LeafSplits, InternalSplits, NewRoots, RootCASFailures, Mallocs uint64
}

// Add adds o's counters to m.
func (m *Metrics) Add(o Metrics) { m.combine(o, 1) }

// Sub subtracts o's counters from m: the counters of an interval, from
// snapshots at its ends.
func (m *Metrics) Sub(o Metrics) { m.combine(o, ^uint64(0)) }

// combine adds sign*o to m's counters (sign 1 or -1 as a uint64).
func (m *Metrics) combine(o Metrics, sign uint64) {
	for _, f := range []struct {
		d *uint64
		s uint64
	}{
		{&m.Ops, o.Ops}, {&m.Searches, o.Searches}, {&m.Inserts, o.Inserts}, {&m.Deletes, o.Deletes},
		{&m.Verbs, o.Verbs}, {&m.Reads, o.Reads}, {&m.Writes, o.Writes}, {&m.CAS, o.CAS},
		{&m.CASFailures, o.CASFailures}, {&m.HandOvers, o.HandOvers}, {&m.CacheHits, o.CacheHits},
		{&m.CacheMisses, o.CacheMisses}, {&m.CacheStale, o.CacheStale}, {&m.ReReads, o.ReReads},
		{&m.LeafSplits, o.LeafSplits}, {&m.InternalSplits, o.InternalSplits}, {&m.NewRoots, o.NewRoots},
		{&m.RootCASFailures, o.RootCASFailures}, {&m.Mallocs, o.Mallocs},
	} {
		*f.d += sign * f.s
	}
}

// Errors.
var (
	ErrKey      = errors.New("sherman: key must be below KeyMax")
	ErrValue    = errors.New("sherman: value must not be 0 (the null value)")
	ErrDeadlock = errors.New("sherman: lock held by the same holder for MaxLockRetries CAS")
	ErrCorrupt  = errors.New("sherman: tree structure broken")
	ErrNoSpace  = errors.New("sherman: memory node out of chunks")
)

// Client is one compute-node thread of Sherman: not safe for concurrent
// use; the only consumer of its CQ.
type Client struct {
	cfg   ClientConfig
	clock verbs.Clock
	host  *Host
	tag   uint64
	mr    verbs.MemoryRegion
	buf   []byte
	m     Metrics
	path  [maxLevels]GlobalAddress
	wrID  uint64
	wcs   []verbs.WC
	recv  map[uint64]bool

	rootOff uint64
	// the thread's local allocator: the current chunk [cur, end)
	cur, end  GlobalAddress
	nextAlloc int

	// releaseFirst reverses the release order in AddUnderLock (tests only).
	releaseFirst bool
}

const maxLevels = 16

// Local buffer layout.
const (
	bufPage    = 0
	bufSibling = PageSize
	bufCAS     = 2 * PageSize
	bufZero    = bufCAS + 8
	bufWord    = bufZero + 8
	bufRPCSend = bufWord + 8
	bufRPCRecv = bufRPCSend + msgSize
	bufSize    = bufRPCRecv + msgSize
)

// NewClient connects a thread and, if the tree has no root yet, creates an
// empty root leaf (Sherman's Tree constructor: the first CAS wins).
func NewClient(ctx context.Context, cfg ClientConfig) (*Client, error) {
	if cfg.Host == nil || cfg.Device == nil || cfg.CQ == nil || len(cfg.MemoryNodes) == 0 {
		return nil, errors.New("sherman: client: need a host, a device, a CQ and memory nodes")
	}
	if len(cfg.MemoryNodes) > cfg.Host.cfg.MemoryNodes {
		return nil, fmt.Errorf("sherman: client: %d memory nodes, host configured for %d", len(cfg.MemoryNodes), cfg.Host.cfg.MemoryNodes)
	}
	if cfg.ChunkSize == 0 {
		cfg.ChunkSize = DefaultChunkSize
	}
	if cfg.VerbTimeout <= 0 {
		cfg.VerbTimeout = 10 * time.Second
	}
	if cfg.MaxLockRetries <= 0 {
		cfg.MaxLockRetries = 1_000_000
	}
	buf := make([]byte, bufSize)
	mr, err := cfg.Device.RegisterMR(buf, verbs.AccessAll)
	if err != nil {
		return nil, fmt.Errorf("sherman: client: %w", err)
	}
	c := &Client{cfg: cfg, clock: cfg.Device.Clock(), host: cfg.Host, tag: uint64(cfg.Host.cfg.ID)<<32 + uint64(cfg.Thread) + 1, mr: mr, buf: buf,
		wcs: make([]verbs.WC, 8), recv: map[uint64]bool{}, rootOff: RootPointerOffset(cfg.ChunkSize)}
	c.nextAlloc = int(cfg.Thread) % len(cfg.MemoryNodes)
	root, err := c.readRoot(ctx)
	if err != nil {
		return nil, err
	}
	if root == 0 {
		addr, err := c.alloc(ctx)
		if err != nil {
			return nil, err
		}
		p := c.page(bufPage)
		initPage(p, 0)
		p.setConsistent()
		if err := c.write(ctx, bufPage, addr, PageSize); err != nil {
			return nil, err
		}
		if _, err := c.casRoot(ctx, 0, addr); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Metrics returns the thread's counters.
func (c *Client) Metrics() Metrics { return c.m }

func (c *Client) page(off int) page { return page(c.buf[off : off+PageSize]) }

// ---- verbs ----

func (c *Client) sge(off, n int) []verbs.SGE {
	return []verbs.SGE{{Addr: c.mr.Addr() + uint64(off), Length: uint32(n), LKey: c.mr.LKey()}}
}

func (c *Client) conn(node uint16) (*MemoryNodeConn, error) {
	if int(node) >= len(c.cfg.MemoryNodes) {
		return nil, fmt.Errorf("%w: address on memory node %d of %d", ErrCorrupt, node, len(c.cfg.MemoryNodes))
	}
	return &c.cfg.MemoryNodes[node], nil
}

// post posts wrs with one doorbell (only the last signalled) and waits for
// the last one's completion.
func (c *Client) post(ctx context.Context, qp verbs.QP, wrs []verbs.SendWR) (verbs.WC, error) {
	for i := range wrs {
		c.wrID++
		wrs[i].ID = c.wrID
		if i == len(wrs)-1 {
			wrs[i].Flags |= verbs.Signaled
		}
		c.m.Verbs++
		switch wrs[i].Op {
		case verbs.OpRead:
			c.m.Reads++
		case verbs.OpWrite:
			c.m.Writes++
		case verbs.OpCompareSwap:
			c.m.CAS++
		}
	}
	if err := qp.PostSend(wrs); err != nil {
		return verbs.WC{}, fmt.Errorf("sherman: post: %w", err)
	}
	return c.waitID(ctx, c.wrID)
}

// waitID waits for the completion with id; receive completions that come
// meanwhile are remembered for waitRecv.
func (c *Client) waitID(ctx context.Context, id uint64) (verbs.WC, error) {
	wctx, cancel := c.clock.WithTimeout(ctx, c.cfg.VerbTimeout)
	defer cancel()
	for {
		n, err := c.cfg.CQ.Wait(wctx, c.wcs)
		if err != nil {
			return verbs.WC{}, fmt.Errorf("sherman: waiting for completion %d: %w", id, err)
		}
		var got *verbs.WC
		for i := range c.wcs[:n] {
			wc := c.wcs[i]
			if wc.Status != verbs.StatusSuccess {
				return wc, fmt.Errorf("sherman: %v completed with %v", wc.Op, wc.Status)
			}
			if wc.Op == verbs.OpRecv {
				c.recv[wc.ID] = true
				continue
			}
			if wc.ID == id {
				got = &c.wcs[i]
			}
		}
		if got != nil {
			return *got, nil
		}
		if id == 0 && len(c.recv) > 0 {
			return verbs.WC{}, nil
		}
	}
}

func (c *Client) remoteData(a GlobalAddress, n int) (*MemoryNodeConn, uint64, error) {
	mn, err := c.conn(a.Node())
	if err != nil {
		return nil, 0, err
	}
	if a.Offset()+uint64(n) > mn.Remote.Data.Len {
		return nil, 0, fmt.Errorf("%w: %v + %d beyond the node's region", ErrCorrupt, a, n)
	}
	return mn, mn.Remote.Data.Addr + a.Offset(), nil
}

func (c *Client) read(ctx context.Context, off int, a GlobalAddress, n int) error {
	mn, ra, err := c.remoteData(a, n)
	if err != nil {
		return err
	}
	_, err = c.post(ctx, mn.QP, []verbs.SendWR{{Op: verbs.OpRead, SG: c.sge(off, n), RemoteAddr: ra, RKey: mn.Remote.Data.RKey}})
	return err
}

func (c *Client) write(ctx context.Context, off int, a GlobalAddress, n int) error {
	mn, ra, err := c.remoteData(a, n)
	if err != nil {
		return err
	}
	_, err = c.post(ctx, mn.QP, []verbs.SendWR{{Op: verbs.OpWrite, SG: c.sge(off, n), RemoteAddr: ra, RKey: mn.Remote.Data.RKey}})
	return err
}

func (c *Client) readRoot(ctx context.Context) (GlobalAddress, error) {
	if err := c.read(ctx, bufWord, Addr(0, c.rootOff), 8); err != nil {
		return 0, err
	}
	return GlobalAddress(binary.LittleEndian.Uint64(c.buf[bufWord:])), nil
}

// casRoot swaps the root pointer (host memory of node 0) from old to new.
func (c *Client) casRoot(ctx context.Context, old, new GlobalAddress) (bool, error) {
	mn, ra, err := c.remoteData(Addr(0, c.rootOff), 8)
	if err != nil {
		return false, err
	}
	wc, err := c.post(ctx, mn.QP, []verbs.SendWR{{Op: verbs.OpCompareSwap, SG: c.sge(bufWord, 8), RemoteAddr: ra, RKey: mn.Remote.Data.RKey, Compare: uint64(old), SwapAdd: uint64(new)}})
	if err != nil {
		return false, err
	}
	return wc.Orig == uint64(old), nil
}

// lockWord is the remote address of lock idx on node.
func (c *Client) lockWord(node uint16, idx uint64) (*MemoryNodeConn, uint64, error) {
	mn, err := c.conn(node)
	if err != nil {
		return nil, 0, err
	}
	return mn, mn.Remote.Locks.Addr + idx*8, nil
}

// ---- locks ----

func (c *Client) local(node uint16, idx uint64) *localLock {
	if c.host.locks == nil {
		return nil
	}
	return &c.host.locks[node][idx]
}

// lock acquires the lock of the page at a: the local ticket first (with
// hierarchical locks; a hand-over ends there), then CAS(0 -> tag) on the
// lock word until it succeeds, without backoff, as Sherman does.
func (c *Client) lock(ctx context.Context, a GlobalAddress) error {
	node, idx := a.Node(), LockIndex(a)
	l := c.local(node, idx)
	if l != nil && l.acquire(c.clock) {
		c.m.HandOvers++
		return nil
	}
	err := c.remoteLock(ctx, node, idx)
	if err != nil && l != nil {
		l.release() // local waiters go on and meet the error themselves
	}
	return err
}

// remoteLock CASes the lock word until it holds our tag.
func (c *Client) remoteLock(ctx context.Context, node uint16, idx uint64) error {
	mn, ra, err := c.lockWord(node, idx)
	if err != nil {
		return err
	}
	var prev uint64
	retries := 0
	for {
		wc, err := c.post(ctx, mn.QP, []verbs.SendWR{{Op: verbs.OpCompareSwap, SG: c.sge(bufCAS, 8), RemoteAddr: ra, RKey: mn.Remote.Locks.RKey, Compare: 0, SwapAdd: c.tag}})
		if err != nil {
			return err
		}
		if wc.Orig == 0 {
			return nil
		}
		c.m.CASFailures++
		if wc.Orig == c.tag {
			return fmt.Errorf("%w: lock %d of node %d already holds our own tag %#x", ErrCorrupt, idx, node, c.tag)
		}
		if wc.Orig != prev {
			prev, retries = wc.Orig, 0
		}
		retries++
		if retries > c.cfg.MaxLockRetries {
			return fmt.Errorf("%w: lock %d of node %d held by %#x", ErrDeadlock, idx, node, prev)
		}
	}
}

// unlock releases the lock of the page at a without writing the page: to
// the next local waiter, or by an 8-byte WRITE of 0 to the lock word.
func (c *Client) unlock(ctx context.Context, a GlobalAddress) error {
	node, idx := a.Node(), LockIndex(a)
	l := c.local(node, idx)
	if l != nil && l.canHandOver() {
		l.release()
		return nil
	}
	mn, ra, err := c.lockWord(node, idx)
	if err != nil {
		return err
	}
	_, err = c.post(ctx, mn.QP, []verbs.SendWR{{Op: verbs.OpWrite, SG: c.sge(bufZero, 8), RemoteAddr: ra, RKey: mn.Remote.Locks.RKey}})
	if l != nil {
		l.release()
	}
	return err
}

// writeAndUnlock writes n bytes at buffer offset off to a+pageOff and
// releases the lock of the page at a: with a hand-over, a plain WRITE;
// otherwise the WRITE and the 8-byte WRITE of 0 to the lock word, chained
// in one doorbell on one QP, so that RC makes the release visible only
// after the data (write_page_and_unlock).
func (c *Client) writeAndUnlock(ctx context.Context, off int, a GlobalAddress, pageOff, n int) error {
	node, idx := a.Node(), LockIndex(a)
	l := c.local(node, idx)
	if l != nil && l.canHandOver() {
		err := c.write(ctx, off, a.Add(uint64(pageOff)), n)
		l.release()
		return err
	}
	mn, ra, err := c.remoteData(a.Add(uint64(pageOff)), n)
	if err != nil {
		return err
	}
	_, la, err := c.lockWord(node, idx)
	if err != nil {
		return err
	}
	_, err = c.post(ctx, mn.QP, []verbs.SendWR{
		{Op: verbs.OpWrite, SG: c.sge(off, n), RemoteAddr: ra, RKey: mn.Remote.Data.RKey},
		{Op: verbs.OpWrite, SG: c.sge(bufZero, 8), RemoteAddr: la, RKey: mn.Remote.Locks.RKey},
	})
	if l != nil {
		l.release()
	}
	return err
}

// ---- allocation (LocalAllocator + MALLOC) ----

func (c *Client) alloc(ctx context.Context) (GlobalAddress, error) {
	if c.cur == 0 || c.cur.Offset()+PageSize > c.end.Offset() {
		node := uint16(c.nextAlloc)
		c.nextAlloc = (c.nextAlloc + 1) % len(c.cfg.MemoryNodes)
		chunk, err := c.malloc(ctx, node)
		if err != nil {
			return 0, err
		}
		c.cur, c.end = chunk, chunk.Add(c.cfg.ChunkSize)
	}
	a := c.cur
	c.cur = c.cur.Add(PageSize)
	return a, nil
}

func (c *Client) rpcMsg(typ byte, level int, a GlobalAddress) {
	m := c.buf[bufRPCSend : bufRPCSend+msgSize]
	clear(m)
	m[0], m[1] = typ, byte(level)
	binary.LittleEndian.PutUint16(m[2:], c.host.cfg.ID)
	binary.LittleEndian.PutUint16(m[4:], c.cfg.Thread)
	binary.LittleEndian.PutUint64(m[8:], uint64(a))
}

func (c *Client) malloc(ctx context.Context, node uint16) (GlobalAddress, error) {
	mn, err := c.conn(node)
	if err != nil {
		return 0, err
	}
	c.wrID++
	rid := c.wrID
	if err := mn.RPC.PostRecv([]verbs.RecvWR{{ID: rid, SG: c.sge(bufRPCRecv, msgSize)}}); err != nil {
		return 0, fmt.Errorf("sherman: malloc: %w", err)
	}
	c.rpcMsg(MsgMalloc, 0, 0)
	if _, err := c.post(ctx, mn.RPC, []verbs.SendWR{{Op: verbs.OpSend, SG: c.sge(bufRPCSend, msgSize)}}); err != nil {
		return 0, fmt.Errorf("sherman: malloc: %w", err)
	}
	for !c.recv[rid] {
		if _, err := c.waitID(ctx, 0); err != nil {
			return 0, fmt.Errorf("sherman: malloc reply: %w", err)
		}
	}
	delete(c.recv, rid)
	c.m.Mallocs++
	r := c.buf[bufRPCRecv:]
	a := GlobalAddress(binary.LittleEndian.Uint64(r[8:]))
	if r[0] != MsgMallocReply {
		return 0, fmt.Errorf("%w: malloc reply of type %d", ErrCorrupt, r[0])
	}
	if a == 0 {
		return 0, fmt.Errorf("%w (node %d)", ErrNoSpace, node)
	}
	return a, nil
}

// broadcastNewRoot tells every memory node's directory (NEW_ROOT).
func (c *Client) broadcastNewRoot(ctx context.Context, root GlobalAddress, level int) error {
	for i := range c.cfg.MemoryNodes {
		c.rpcMsg(MsgNewRoot, level, root)
		if _, err := c.post(ctx, c.cfg.MemoryNodes[i].RPC, []verbs.SendWR{{Op: verbs.OpSend, SG: c.sge(bufRPCSend, msgSize)}}); err != nil {
			return fmt.Errorf("sherman: new root: %w", err)
		}
	}
	return nil
}

// ---- the tree ----

func checkKey(k uint64) error {
	if k >= KeyMax {
		return ErrKey
	}
	return nil
}

// readPage reads the page at a into buffer off until its versions agree
// (page_search's re-read), and records it on the path.
func (c *Client) readPage(ctx context.Context, off int, a GlobalAddress) (page, error) {
	p := c.page(off)
	for tries := 0; ; tries++ {
		if err := c.read(ctx, off, a, PageSize); err != nil {
			return nil, err
		}
		if p.consistent() {
			break
		}
		c.m.ReReads++
		if tries > 1000 {
			return nil, fmt.Errorf("%w: page %v never consistent", ErrCorrupt, a)
		}
	}
	if l := p.level(); l < maxLevels {
		c.path[l] = a
	} else {
		return nil, fmt.Errorf("%w: page %v has level %d", ErrCorrupt, a, l)
	}
	return p, nil
}

// Search returns k's value.
func (c *Client) Search(ctx context.Context, k uint64) (uint64, bool, error) {
	if err := checkKey(k); err != nil {
		return 0, false, err
	}
	c.m.Ops++
	c.m.Searches++
	var p GlobalAddress
	var entry *cacheEntry
	if c.host.cache != nil {
		if p, entry = c.host.cache.lookup(k); entry != nil {
			c.m.CacheHits++
		} else {
			c.m.CacheMisses++
		}
	}
	if entry == nil {
		root, err := c.readRoot(ctx)
		if err != nil {
			return 0, false, err
		}
		p = root
	}
	for hops := 0; ; hops++ {
		if hops > 10000 || p == 0 {
			return 0, false, fmt.Errorf("%w: search for %d lost at %v", ErrCorrupt, k, p)
		}
		pg, err := c.readPage(ctx, bufPage, p)
		if err != nil {
			return 0, false, err
		}
		if pg.isLeaf() {
			if entry != nil && (k < pg.lowest() || k >= pg.highest()) {
				c.m.CacheStale++
				c.host.cache.invalidate(entry)
				entry = nil
				if p, err = c.readRoot(ctx); err != nil {
					return 0, false, err
				}
				continue
			}
			if k >= pg.highest() {
				p = pg.sibling()
				continue
			}
			v, ok := pg.lookupLeaf(k)
			return v, ok, nil
		}
		if pg.level() == 1 && c.host.cache != nil {
			c.host.cache.add(pg)
		}
		if k >= pg.highest() {
			p = pg.sibling()
			continue
		}
		if k < pg.lowest() {
			return 0, false, fmt.Errorf("%w: key %d below page %v's lowest %d", ErrCorrupt, k, p, pg.lowest())
		}
		p = pg.childFor(k)
	}
}

// Insert inserts k or updates its value.
func (c *Client) Insert(ctx context.Context, k, v uint64) error {
	if err := checkKey(k); err != nil {
		return err
	}
	if v == ValueNull {
		return ErrValue
	}
	c.m.Ops++
	c.m.Inserts++
	return c.modify(ctx, k, v)
}

// Delete removes k (nothing if absent).
func (c *Client) Delete(ctx context.Context, k uint64) error {
	if err := checkKey(k); err != nil {
		return err
	}
	c.m.Ops++
	c.m.Deletes++
	return c.modify(ctx, k, ValueNull)
}

// modify is insert (v != 0) and delete (v == 0): find the leaf through the
// cache or from the root, then store under its lock.
func (c *Client) modify(ctx context.Context, k, v uint64) error {
	clear(c.path[:])
	if c.host.cache != nil {
		if leaf, entry := c.host.cache.lookup(k); entry != nil {
			c.m.CacheHits++
			root, err := c.readRoot(ctx)
			if err != nil {
				return err
			}
			ok, err := c.leafStore(ctx, leaf, k, v, root, true)
			if err != nil || ok {
				return err
			}
			c.m.CacheStale++
			c.host.cache.invalidate(entry)
		} else {
			c.m.CacheMisses++
		}
	}
	root, err := c.readRoot(ctx)
	if err != nil {
		return err
	}
	p := root
	for hops := 0; ; hops++ {
		if hops > 10000 || p == 0 {
			return fmt.Errorf("%w: descent for %d lost at %v", ErrCorrupt, k, p)
		}
		pg, err := c.readPage(ctx, bufPage, p)
		if err != nil {
			return err
		}
		if pg.isLeaf() {
			break
		}
		if pg.level() == 1 && c.host.cache != nil {
			c.host.cache.add(pg)
		}
		if k >= pg.highest() {
			p = pg.sibling()
			continue
		}
		p = pg.childFor(k)
		if pg.level() == 1 {
			break
		}
	}
	_, err = c.leafStore(ctx, p, k, v, root, false)
	return err
}

// leafStore stores (k, v) in the leaf at a under its lock (v 0: delete).
// It reports false when the leaf came from the cache and does not cover k.
func (c *Client) leafStore(ctx context.Context, a GlobalAddress, k, v uint64, root GlobalAddress, fromCache bool) (bool, error) {
	for hops := 0; ; hops++ {
		if hops > 10000 || a == 0 {
			return false, fmt.Errorf("%w: leaf store of %d lost at %v", ErrCorrupt, k, a)
		}
		if err := c.lock(ctx, a); err != nil {
			return false, err
		}
		if err := c.read(ctx, bufPage, a, PageSize); err != nil {
			return false, err
		}
		pg := c.page(bufPage)
		if !pg.consistent() || !pg.isLeaf() {
			return false, fmt.Errorf("%w: locked leaf %v inconsistent or not a leaf (level %d)", ErrCorrupt, a, pg.level())
		}
		if fromCache && (k < pg.lowest() || k >= pg.highest()) {
			return false, c.unlock(ctx, a)
		}
		if k >= pg.highest() {
			next := pg.sibling()
			if err := c.unlock(ctx, a); err != nil {
				return false, err
			}
			a, fromCache = next, false
			continue
		}
		if k < pg.lowest() {
			return false, fmt.Errorf("%w: key %d below leaf %v's lowest %d", ErrCorrupt, k, a, pg.lowest())
		}
		return true, c.leafUpdate(ctx, a, pg, k, v, root)
	}
}

// leafUpdate changes the locked leaf pg at a: update, insert or delete k,
// write the entry back and unlock, or split.
func (c *Client) leafUpdate(ctx context.Context, a GlobalAddress, pg page, k, v uint64, root GlobalAddress) error {
	if v == ValueNull { // leaf_page_del
		for i := 0; i < LeafCardinality; i++ {
			if pg.lkey(i) == k && pg.lvalue(i) != ValueNull {
				pg.setLEntry(i, k, ValueNull)
				return c.writeAndUnlock(ctx, bufPage+leafOff(i), a, leafOff(i), LeafEntrySize)
			}
		}
		return c.unlock(ctx, a)
	}
	cnt, empty, upd := 0, -1, -1
	for i := 0; i < LeafCardinality; i++ {
		if pg.lvalue(i) != ValueNull {
			cnt++
			if pg.lkey(i) == k {
				pg.setLEntry(i, k, v)
				upd = i
				break
			}
		} else if empty < 0 {
			empty = i
		}
	}
	if upd < 0 {
		if empty < 0 {
			return fmt.Errorf("%w: leaf %v full", ErrCorrupt, a)
		}
		pg.setLEntry(empty, k, v)
		upd = empty
		cnt++
	}
	if cnt < LeafCardinality {
		return c.writeAndUnlock(ctx, bufPage+leafOff(upd), a, leafOff(upd), LeafEntrySize)
	}
	// Split: sort the entries, move the upper half to a new sibling.
	c.m.LeafSplits++
	recs := make([][LeafEntrySize]byte, LeafCardinality)
	for i := range recs {
		copy(recs[i][:], pg[leafOff(i):])
	}
	sort.Slice(recs, func(i, j int) bool {
		return binary.LittleEndian.Uint64(recs[i][1:]) < binary.LittleEndian.Uint64(recs[j][1:])
	})
	for i := range recs {
		copy(pg[leafOff(i):], recs[i][:])
	}
	sibAddr, err := c.alloc(ctx)
	if err != nil {
		return err
	}
	sib := c.page(bufSibling)
	initPage(sib, 0)
	m := cnt / 2
	splitKey := pg.lkey(m)
	for i := m; i < cnt; i++ {
		sib.put64(leafOff(i-m)+1, pg.lkey(i))
		sib.put64(leafOff(i-m)+9, pg.lvalue(i))
		pg.put64(leafOff(i)+1, 0)
		pg.put64(leafOff(i)+9, ValueNull)
	}
	pg.setLastIndex(pg.lastIndex() - (cnt - m))
	sib.setLastIndex(sib.lastIndex() + (cnt - m))
	return c.finishSplit(ctx, a, pg, sib, sibAddr, splitKey, root, 0)
}

// finishSplit gives the sibling the upper fences and the page's old
// sibling, links it, writes it, then writes the page back with the release,
// and links the sibling into the level above.
func (c *Client) finishSplit(ctx context.Context, a GlobalAddress, pg, sib page, sibAddr GlobalAddress, splitKey uint64, root GlobalAddress, level int) error {
	sib.setLowest(splitKey)
	sib.setHighest(pg.highest())
	pg.setHighest(splitKey)
	sib.setSibling(pg.sibling())
	pg.setSibling(sibAddr)
	sib.setConsistent()
	if err := c.write(ctx, bufSibling, sibAddr, PageSize); err != nil {
		return err
	}
	pg.setConsistent()
	if err := c.writeAndUnlock(ctx, bufPage, a, 0, PageSize); err != nil {
		return err
	}
	return c.afterSplit(ctx, a, splitKey, sibAddr, root, level)
}

// afterSplit links a new sibling into the level above: a new root if the
// split page was the root, else the parent from the path, else a descent.
func (c *Client) afterSplit(ctx context.Context, a GlobalAddress, splitKey uint64, sibAddr, root GlobalAddress, level int) error {
	if level+1 >= maxLevels {
		return fmt.Errorf("%w: tree taller than %d levels", ErrCorrupt, maxLevels)
	}
	if root == a {
		ok, err := c.newRoot(ctx, a, splitKey, sibAddr, level+1, root)
		if err != nil || ok {
			return err
		}
	}
	if up := c.path[level+1]; up != 0 {
		return c.internalStore(ctx, up, splitKey, sibAddr, root, level+1)
	}
	return c.insertInternal(ctx, splitKey, sibAddr, level+1)
}

// newRoot writes a root of level over left and right and swings the root
// pointer to it (CAS); on success it tells every directory (NEW_ROOT).
func (c *Client) newRoot(ctx context.Context, left GlobalAddress, k uint64, right GlobalAddress, level int, oldRoot GlobalAddress) (bool, error) {
	addr, err := c.alloc(ctx)
	if err != nil {
		return false, err
	}
	p := c.page(bufPage)
	initPage(p, level)
	p.setLeftmost(left)
	p.setIEntry(0, k, right)
	p.setLastIndex(0)
	p.setConsistent()
	if err := c.write(ctx, bufPage, addr, PageSize); err != nil {
		return false, err
	}
	ok, err := c.casRoot(ctx, oldRoot, addr)
	if err != nil {
		return false, err
	}
	if !ok {
		c.m.RootCASFailures++
		return false, nil
	}
	c.m.NewRoots++
	return true, c.broadcastNewRoot(ctx, addr, level)
}

// insertInternal inserts (k, child) into the page of level that covers k,
// found by a descent from the current root (insert_internal). While the
// root is lower than level (a root split is being installed), it waits.
func (c *Client) insertInternal(ctx context.Context, k uint64, child GlobalAddress, level int) error {
	for tries := 0; ; tries++ {
		if tries > 2000 {
			return fmt.Errorf("%w: no level %d to insert %d into", ErrCorrupt, level, k)
		}
		root, err := c.readRoot(ctx)
		if err != nil {
			return err
		}
		p := root
		for hops := 0; p != 0 && hops < 10000; hops++ {
			pg, err := c.readPage(ctx, bufPage, p)
			if err != nil {
				return err
			}
			if pg.level() < level {
				break // the root is not tall enough yet
			}
			if k >= pg.highest() {
				p = pg.sibling()
				continue
			}
			if pg.level() == level {
				return c.internalStore(ctx, p, k, child, root, level)
			}
			p = pg.childFor(k)
		}
		if err := c.clock.Sleep(ctx, 50*time.Microsecond); err != nil {
			return err
		}
	}
}

// internalStore inserts (k, child) into the internal page at a of level
// under its lock, moving right as needed, and splits it when full.
func (c *Client) internalStore(ctx context.Context, a GlobalAddress, k uint64, child, root GlobalAddress, level int) error {
	for hops := 0; ; hops++ {
		if hops > 10000 || a == 0 {
			return fmt.Errorf("%w: internal store of %d lost at %v", ErrCorrupt, k, a)
		}
		if err := c.lock(ctx, a); err != nil {
			return err
		}
		if err := c.read(ctx, bufPage, a, PageSize); err != nil {
			return err
		}
		pg := c.page(bufPage)
		if !pg.consistent() || pg.level() != level || pg.isLeaf() {
			return fmt.Errorf("%w: locked internal page %v inconsistent or of level %d, want %d", ErrCorrupt, a, pg.level(), level)
		}
		if k >= pg.highest() {
			next := pg.sibling()
			if err := c.unlock(ctx, a); err != nil {
				return err
			}
			a = next
			continue
		}
		if k < pg.lowest() {
			return fmt.Errorf("%w: key %d below internal page %v's lowest %d", ErrCorrupt, k, a, pg.lowest())
		}
		return c.internalUpdate(ctx, a, pg, k, child, root, level)
	}
}

func (c *Client) internalUpdate(ctx context.Context, a GlobalAddress, pg page, k uint64, child, root GlobalAddress, level int) error {
	cnt := pg.lastIndex() + 1
	if cnt >= InternalCardinality {
		return fmt.Errorf("%w: internal page %v full", ErrCorrupt, a)
	}
	update, at := false, 0
	for i := cnt - 1; i >= 0; i-- {
		if pg.ikey(i) == k {
			pg.setIEntry(i, k, child)
			update = true
			break
		}
		if pg.ikey(i) < k {
			at = i + 1
			break
		}
	}
	if !update {
		for i := cnt; i > at; i-- {
			pg.setIEntry(i, pg.ikey(i-1), pg.iptr(i-1))
		}
		pg.setIEntry(at, k, child)
		pg.setLastIndex(pg.lastIndex() + 1)
	}
	cnt = pg.lastIndex() + 1
	if cnt < InternalCardinality {
		pg.setConsistent()
		return c.writeAndUnlock(ctx, bufPage, a, 0, PageSize)
	}
	c.m.InternalSplits++
	sibAddr, err := c.alloc(ctx)
	if err != nil {
		return err
	}
	sib := c.page(bufSibling)
	initPage(sib, level)
	m := cnt / 2
	splitKey := pg.ikey(m)
	for i := m + 1; i < cnt; i++ {
		sib.setIEntry(i-m-1, pg.ikey(i), pg.iptr(i))
	}
	pg.setLastIndex(pg.lastIndex() - (cnt - m))
	sib.setLastIndex(sib.lastIndex() + (cnt - m - 1))
	sib.setLeftmost(pg.iptr(m))
	return c.finishSplit(ctx, a, pg, sib, sibAddr, splitKey, root, level)
}

// ---- lock benchmarks ----

// WithLock runs fn while holding the lock of the page at a (Sherman's
// lock_bench with a critical section): the same acquire and release as a
// tree operation.
func (c *Client) WithLock(ctx context.Context, a GlobalAddress, fn func() error) error {
	if err := c.lock(ctx, a); err != nil {
		return err
	}
	ferr := fn()
	if err := c.unlock(ctx, a); err != nil {
		return err
	}
	return ferr
}

// AddUnderLock takes the lock of the page at a, READs the 8-byte word at
// a+off, adds delta and writes it back with the release chained behind it
// in one doorbell, as a leaf entry write-back does; it returns the new
// value. Lost updates mean that a release became visible before the data
// it guards.
func (c *Client) AddUnderLock(ctx context.Context, a GlobalAddress, off int, delta uint64) (uint64, error) {
	if off < 0 || off+8 > PageSize {
		return 0, fmt.Errorf("sherman: add under lock: offset %d outside the page", off)
	}
	if err := c.lock(ctx, a); err != nil {
		return 0, err
	}
	if err := c.read(ctx, bufPage+off, a.Add(uint64(off)), 8); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint64(c.buf[bufPage+off:]) + delta
	binary.LittleEndian.PutUint64(c.buf[bufPage+off:], v)
	if c.releaseFirst {
		return v, c.unsafeReleaseThenWrite(ctx, bufPage+off, a, off, 8)
	}
	return v, c.writeAndUnlock(ctx, bufPage+off, a, off, 8)
}

// unsafeReleaseThenWrite is the wrong order: the release, completed, a
// pause of 200us (a data WRITE delayed on its way), and only then the
// data. It is the negative control of the ordering tests (plain locks
// only).
func (c *Client) unsafeReleaseThenWrite(ctx context.Context, off int, a GlobalAddress, pageOff, n int) error {
	if c.host.locks != nil {
		return errors.New("sherman: release-first control runs with plain locks only")
	}
	if err := c.unlock(ctx, a); err != nil {
		return err
	}
	if err := c.clock.Sleep(ctx, 200*time.Microsecond); err != nil {
		return err
	}
	return c.write(ctx, off, a.Add(uint64(pageOff)), n)
}
