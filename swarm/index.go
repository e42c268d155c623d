package swarm

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// ErrIndexFull: every key slot is taken.
var ErrIndexFull = errors.New("swarm: index full")

// Index is the index service: key -> key slot (the same slot on every
// replica). The paper treats it as a reliable black box with 1-RTT get and
// set; here it is an in-process service shared by the clients of one
// deployment, consulted on a client cache miss (Metrics.IndexLookups).
// It is safe for concurrent use.
type Index struct {
	mu   sync.Mutex
	m    map[uint64]int
	size int
}

// NewIndex returns an index over keys slots.
func NewIndex(keys int) *Index { return &Index{m: map[uint64]int{}, size: keys} }

// Lookup returns key's slot.
func (x *Index) Lookup(key uint64) (int, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	kv, ok := x.m[key]
	return kv, ok
}

// Insert maps key to a fresh slot unless it is mapped already; it returns
// the slot and whether it existed (a concurrent insert then becomes an
// update of the existing replicas, as in the paper).
func (x *Index) Insert(key uint64) (int, bool, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if kv, ok := x.m[key]; ok {
		return kv, true, nil
	}
	if len(x.m) >= x.size {
		return 0, false, fmt.Errorf("%w: %d slots", ErrIndexFull, x.size)
	}
	kv := len(x.m)
	x.m[key] = kv
	return kv, false, nil
}

// Membership is the membership service: it hands out writer ids and keeps
// the set of memory nodes suspected to have crashed, so that a crash one
// client detects (its queue pair to the node failed) stops every client
// from posting to that node. Suspicion is never revoked (crash-stop). It
// is safe for concurrent use.
type Membership struct {
	dead    []atomic.Bool
	next    atomic.Int32
	writers int
}

// NewMembership returns a membership service for nodes memory nodes and
// writers writer ids.
func NewMembership(nodes, writers int) *Membership {
	return &Membership{dead: make([]atomic.Bool, nodes), writers: writers}
}

// Join returns a fresh writer id (1..writers).
func (m *Membership) Join() (int, error) {
	id := int(m.next.Add(1))
	if id > m.writers {
		return 0, fmt.Errorf("swarm: membership: writer id %d beyond %d", id, m.writers)
	}
	return id, nil
}

// Suspect records that memory node i crashed.
func (m *Membership) Suspect(i int) {
	if i >= 0 && i < len(m.dead) {
		m.dead[i].Store(true)
	}
}

// Alive reports whether node i is not suspected.
func (m *Membership) Alive(i int) bool { return i >= 0 && i < len(m.dead) && !m.dead[i].Load() }
