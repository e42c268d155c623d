package rnic

import (
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/swordbox/swordbox/roce/verbs"
)

// Virtual address layout of a Device. Host memory regions get addresses from
// HostVABase upwards, each aligned to vaAlign, so traces are the same from run
// to run (the address never depends on where Go put the buffer). Device
// memory regions are zero-based (IBV_ACCESS_ZERO_BASED, as ibv_reg_dm_mr
// registers NIC memory): their addresses start at 0, and only their rkey tells
// them apart.
const (
	HostVABase = 0x7f00_0000_0000
	vaAlign    = 1 << 21
)

// MR is a registered memory region; it implements verbs.MemoryRegion.
//
// Every DMA the RNIC performs on a region (responder WRITE, READ and atomics,
// requester gathers and READ-response scatters) holds the region's lock, so
// an atomic is atomic with respect to every other operation from every QP.
type MR struct {
	buf    []byte
	va     uint64
	key    uint32
	access verbs.Access
	device bool
	mu     sync.Mutex
	dead   atomic.Bool
}

var _ verbs.MemoryRegion = (*MR)(nil)

// Bytes returns the registered memory.
func (m *MR) Bytes() []byte { return m.buf }

// Addr returns the virtual address of Bytes()[0].
func (m *MR) Addr() uint64 { return m.va }

// LKey returns the local key. As on mlx5, the local and remote keys of a
// region are the same number.
func (m *MR) LKey() uint32 { return m.key }

// RKey returns the remote key.
func (m *MR) RKey() uint32 { return m.key }

// Access returns the region's access rights.
func (m *MR) Access() verbs.Access { return m.access }

// IsDeviceMemory reports whether the region is NIC device memory.
func (m *MR) IsDeviceMemory() bool { return m.device }

// Remote describes the region for a peer.
func (m *MR) Remote() verbs.RemoteRegion {
	return verbs.RemoteRegion{Addr: m.va, RKey: m.key, Len: uint64(len(m.buf))}
}

// slice returns the bytes [va, va+n) of the region, or ok=false when the range
// is not inside it.
func (m *MR) slice(va uint64, n uint32) ([]byte, bool) {
	if va < m.va {
		return nil, false
	}
	off := va - m.va
	if off > uint64(len(m.buf)) || uint64(n) > uint64(len(m.buf))-off {
		return nil, false
	}
	return m.buf[off : off+uint64(n)], true
}

// mrTable maps keys to regions. Lookups are lock-free (copy on write).
type mrTable struct {
	mu      sync.Mutex
	regions atomic.Pointer[[]*MR]
	nextVA  uint64
	tag     uint8
}

// Keys are index<<8 | tag: the index selects the table slot, the tag (which
// changes with every registration) makes a stale key of a deregistered region
// miss instead of hitting its successor.
func (t *mrTable) lookup(key uint32) *MR {
	p := t.regions.Load()
	if p == nil {
		return nil
	}
	idx := key >> 8
	if int(idx) >= len(*p) {
		return nil
	}
	m := (*p)[idx]
	if m == nil || m.key != key || m.dead.Load() {
		return nil
	}
	return m
}

func (t *mrTable) register(buf []byte, access verbs.Access, device bool) (*MR, error) {
	if len(buf) == 0 {
		return nil, fmt.Errorf("register region: empty buffer")
	}
	if access&(verbs.AccessRemoteWrite|verbs.AccessRemoteAtomic) != 0 && access&verbs.AccessLocalWrite == 0 {
		// The IB rule: remote write or atomic access requires local write.
		return nil, fmt.Errorf("register region: remote write/atomic access requires local write")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var old []*MR
	if p := t.regions.Load(); p != nil {
		old = *p
	}
	idx := -1
	for i := 1; i < len(old); i++ { // slot 0 unused: key 0 is never valid
		if old[i] == nil {
			idx = i
			break
		}
	}
	next := make([]*MR, len(old), len(old)+1)
	copy(next, old)
	if idx < 0 {
		if len(next) == 0 {
			next = append(next, nil)
		}
		idx = len(next)
		next = append(next, nil)
	}
	if idx >= 1<<24 {
		return nil, fmt.Errorf("register region: too many regions")
	}
	t.tag++
	if t.tag == 0 {
		t.tag = 1
	}
	m := &MR{buf: buf, key: uint32(idx)<<8 | uint32(t.tag), access: access, device: device}
	if device {
		m.va = 0
	} else {
		if t.nextVA == 0 {
			t.nextVA = HostVABase
		}
		m.va = t.nextVA
		t.nextVA += (uint64(len(buf)) + vaAlign - 1) &^ (vaAlign - 1)
	}
	next[idx] = m
	t.regions.Store(&next)
	return m, nil
}

func (t *mrTable) deregister(m *MR) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.regions.Load()
	if p == nil || int(m.key>>8) >= len(*p) || (*p)[m.key>>8] != m {
		return fmt.Errorf("deregister region %#x: not registered", m.key)
	}
	next := make([]*MR, len(*p))
	copy(next, *p)
	next[m.key>>8] = nil
	m.dead.Store(true)
	t.regions.Store(&next)
	return nil
}

// access check results, mapped onto NAK codes by the responder and onto
// completion statuses by the requester.
type accessResult uint8

const (
	accessOK accessResult = iota
	accessBadKey
	accessBounds
	accessPerm
	accessAlign
)

// remote resolves [va, va+n) under rkey for the rights need.
func (t *mrTable) remote(rkey uint32, va uint64, n uint32, need verbs.Access) (*MR, []byte, accessResult) {
	m := t.lookup(rkey)
	if m == nil {
		return nil, nil, accessBadKey
	}
	if m.access&need != need {
		return nil, nil, accessPerm
	}
	b, ok := m.slice(va, n)
	if !ok {
		return nil, nil, accessBounds
	}
	return m, b, accessOK
}

// atomicApply executes a CMP_SWAP (cas=true) or FETCH_ADD on the
// little-endian 8-byte word b, under the region lock, and returns the
// original value.
func atomicApply(m *MR, b []byte, cas bool, compare, swapAdd uint64) uint64 {
	m.mu.Lock()
	orig := binary.LittleEndian.Uint64(b)
	if cas {
		if orig == compare {
			binary.LittleEndian.PutUint64(b, swapAdd)
		}
	} else {
		binary.LittleEndian.PutUint64(b, orig+swapAdd)
	}
	m.mu.Unlock()
	return orig
}
