package sherman

import (
	"context"
	"sort"
	"sync"

	"github.com/swordbox/swordbox/roce/verbs"
)

// HostConfig describes one compute node (CN): the state its client threads
// share.
type HostConfig struct {
	// ID is the CN's node number, unique in the cluster: lock tags are
	// (ID << 32) + thread + 1.
	ID uint16
	// MemoryNodes is the number of memory nodes (the local lock table has
	// NumLocks entries per memory node).
	MemoryNodes int
	// HierarchicalLocks turns on Sherman's CN-local lock table: threads of
	// one host queue locally (a ticket lock) before the remote CAS, and a
	// releaser with local waiters hands the remote lock over (at most
	// MaxHandOver times in a row) instead of releasing it.
	HierarchicalLocks bool
	// NoIndexCache turns off the level-1 index cache.
	NoIndexCache bool
}

// Host is a compute node's shared state: the local lock table and the index
// cache. Its client threads (Client) use it concurrently.
type Host struct {
	cfg   HostConfig
	locks [][]localLock
	cache *indexCache
}

// NewHost returns a compute node's shared state.
func NewHost(cfg HostConfig) *Host {
	if cfg.MemoryNodes <= 0 {
		cfg.MemoryNodes = 1
	}
	h := &Host{cfg: cfg}
	if cfg.HierarchicalLocks {
		h.locks = make([][]localLock, cfg.MemoryNodes)
		for i := range h.locks {
			h.locks[i] = make([]localLock, NumLocks)
		}
	}
	if !cfg.NoIndexCache {
		h.cache = &indexCache{}
	}
	return h
}

// localLock is one entry of the CN-local lock table (Sherman's
// LocalLockNode): a FIFO ticket lock, and the hand-over state its holder
// reads and writes.
type localLock struct {
	mu       sync.Mutex
	next     uint32 // next ticket
	serving  uint32 // ticket now served
	handOver bool   // the remote lock was handed to the current holder
	handTime uint8  // holders in a row since the remote lock was taken
	// wake is set at the next release; waiters block on it, an event of
	// their device's clock, so that a virtual-time scheduler sees the wait.
	wake verbs.Event
}

// acquire takes a ticket and waits for its turn, on clk; it reports whether
// the remote lock came with it (handed over). The wait ignores any
// operation's context: a ticket taken cannot be given back, or every later
// ticket would wait for it forever.
func (l *localLock) acquire(clk verbs.Clock) bool {
	l.mu.Lock()
	t := l.next
	l.next++
	for t != l.serving {
		if l.wake == nil {
			l.wake = clk.NewEvent()
		}
		ev := l.wake
		l.mu.Unlock()
		_ = ev.Wait(context.Background()) // never done: Wait returns only when set
		l.mu.Lock()
	}
	l.handTime++
	ho := l.handOver
	l.mu.Unlock()
	return ho
}

// canHandOver decides, at release, whether the remote lock goes to the next
// local waiter (some waits, and fewer than MaxHandOver hand-overs so far).
func (l *localLock) canHandOver() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.next-l.serving <= 1 {
		l.handOver = false
	} else {
		l.handOver = l.handTime < MaxHandOver
	}
	if !l.handOver {
		l.handTime = 0
	}
	return l.handOver
}

// release serves the next ticket.
func (l *localLock) release() {
	l.mu.Lock()
	l.serving++
	if l.wake != nil {
		l.wake.Set()
		l.wake = nil
	}
	l.mu.Unlock()
}

// indexCache is the CN's cache of level-1 internal pages (Sherman's
// IndexCache, without its size bound and eviction): entries sorted by
// their lowest fence, non-overlapping.
type indexCache struct {
	mu      sync.RWMutex
	entries []*cacheEntry
}

type cacheEntry struct {
	lowest, highest uint64
	page            page
}

// lookup returns the leaf a cached level-1 page names for k.
func (c *indexCache) lookup(k uint64) (GlobalAddress, *cacheEntry) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].lowest > k }) - 1
	if i < 0 || k >= c.entries[i].highest {
		return 0, nil
	}
	e := c.entries[i]
	return e.page.childFor(k), e
}

// add caches a copy of level-1 page p, replacing entries it overlaps.
func (c *indexCache) add(p page) {
	e := &cacheEntry{lowest: p.lowest(), highest: p.highest(), page: append(page(nil), p...)}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.entries[:0:0]
	at := -1
	for _, x := range c.entries {
		if x.highest <= e.lowest || x.lowest >= e.highest {
			if at < 0 && x.lowest >= e.highest {
				at = len(out)
				out = append(out, e)
			}
			out = append(out, x)
		}
	}
	if at < 0 {
		out = append(out, e)
	}
	c.entries = out
}

// invalidate drops e if it is still cached.
func (c *indexCache) invalidate(e *cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, x := range c.entries {
		if x == e {
			c.entries = append(c.entries[:i:i], c.entries[i+1:]...)
			return
		}
	}
}
