package sherman

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/swordbox/swordbox/roce/verbs"
)

// RPC messages between a client thread and a memory node's directory
// (Sherman's RawMessage, two-sided SEND/RECV). Layout, little-endian:
// type u8 | level u8 | client node u16 | client thread u16 | pad 2 | addr u64.
const (
	msgSize = 16

	// MsgMalloc asks the directory for a chunk; the reply carries its
	// address (null when the node is full).
	MsgMalloc = 1
	// MsgNewRoot tells the directory the tree has a new root (addr, level).
	MsgNewRoot = 2
	// MsgMallocReply answers MsgMalloc.
	MsgMallocReply = 3
)

// DefaultChunkSize is the unit the directory hands out (Sherman: 32 MiB;
// smaller here, so that racks in one process stay small).
const DefaultChunkSize = 1 << 20

// RootPointerOffset is where the root pointer lives on memory node 0: in
// the reserved first chunk, at half the chunk size (kRootPointerStoreOffest).
func RootPointerOffset(chunkSize uint64) uint64 { return chunkSize / 2 }

// MemoryNodeConfig describes one memory node.
type MemoryNodeConfig struct {
	// Node is the node's number in global addresses.
	Node uint16
	// Data is the node's host-memory region: pages and, on node 0, the
	// root pointer. Its size is a multiple of ChunkSize; chunk 0 is
	// reserved (null, root pointer).
	Data verbs.MemoryRegion
	// Locks is the node's lock region, LockRegionSize bytes, zeroed; on an
	// RNIC it is NIC device memory (rnic.Device.AllocDM).
	Locks verbs.MemoryRegion
	// ChunkSize defaults to DefaultChunkSize.
	ChunkSize uint64
}

// Remote is what a client needs to address a memory node.
type Remote struct {
	Data, Locks verbs.RemoteRegion
}

// MemoryNode is a memory node's directory thread: it serves MALLOC (chunk
// allocation) and records NEW_ROOT, over one RC queue pair per client
// thread. One-sided verbs on the node's regions need nothing from it.
type MemoryNode struct {
	cfg MemoryNodeConfig
	dev Registrar
	cq  verbs.CQ

	mu        sync.Mutex
	nextChunk uint64
	chunks    uint64
	root      GlobalAddress
	rootLevel int
	clients   map[uint32]*dirClient
	mallocs   uint64
}

// Registrar registers local memory (verbs.Device satisfies it).
type Registrar interface {
	RegisterMR(buf []byte, access verbs.Access) (verbs.MemoryRegion, error)
}

type dirClient struct {
	qp  verbs.QP
	mr  verbs.MemoryRegion
	buf []byte // recv slots, then one send slot
}

const dirRecvSlots = 4

// NewMemoryNode returns the directory of a memory node whose RPC queue pairs
// complete on cq (send and receive).
func NewMemoryNode(cfg MemoryNodeConfig, dev Registrar, cq verbs.CQ) (*MemoryNode, error) {
	if cfg.ChunkSize == 0 {
		cfg.ChunkSize = DefaultChunkSize
	}
	if cfg.ChunkSize < 4*PageSize || cfg.ChunkSize%PageSize != 0 {
		return nil, fmt.Errorf("sherman: memory node %d: chunk size %d: want a multiple of %d, at least %d", cfg.Node, cfg.ChunkSize, PageSize, 4*PageSize)
	}
	if cfg.Data == nil || cfg.Locks == nil || dev == nil || cq == nil {
		return nil, errors.New("sherman: memory node: need data and lock regions, a device and a CQ")
	}
	n := uint64(len(cfg.Data.Bytes()))
	if n%cfg.ChunkSize != 0 || n < 2*cfg.ChunkSize {
		return nil, fmt.Errorf("sherman: memory node %d: data region of %d bytes: want a multiple of the chunk size %d, at least two chunks", cfg.Node, n, cfg.ChunkSize)
	}
	if len(cfg.Locks.Bytes()) != LockRegionSize {
		return nil, fmt.Errorf("sherman: memory node %d: lock region of %d bytes, want %d", cfg.Node, len(cfg.Locks.Bytes()), LockRegionSize)
	}
	return &MemoryNode{cfg: cfg, dev: dev, cq: cq, nextChunk: 1, chunks: n / cfg.ChunkSize, rootLevel: -1, clients: map[uint32]*dirClient{}}, nil
}

// Remote returns the node's regions as clients address them.
func (m *MemoryNode) Remote() Remote {
	r := func(mr verbs.MemoryRegion) verbs.RemoteRegion {
		return verbs.RemoteRegion{Addr: mr.Addr(), RKey: mr.RKey(), Len: uint64(len(mr.Bytes()))}
	}
	return Remote{Data: r(m.cfg.Data), Locks: r(m.cfg.Locks)}
}

// Root returns the newest root the node was told of by NEW_ROOT (null and
// -1 before any).
func (m *MemoryNode) Root() (GlobalAddress, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.root, m.rootLevel
}

// ChunksUsed is the number of chunks handed out.
func (m *MemoryNode) ChunksUsed() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.nextChunk - 1
}

// AddClient serves a client thread's RPC queue pair (connected, with its
// CQs being the node's CQ).
func (m *MemoryNode) AddClient(qp verbs.QP) error {
	buf := make([]byte, (dirRecvSlots+1)*msgSize)
	mr, err := m.dev.RegisterMR(buf, verbs.AccessLocalWrite)
	if err != nil {
		return fmt.Errorf("sherman: memory node %d: %w", m.cfg.Node, err)
	}
	c := &dirClient{qp: qp, mr: mr, buf: buf}
	m.mu.Lock()
	m.clients[qp.QPN()] = c
	m.mu.Unlock()
	for i := 0; i < dirRecvSlots; i++ {
		if err := c.postRecv(i); err != nil {
			return err
		}
	}
	return nil
}

func (c *dirClient) postRecv(i int) error {
	return c.qp.PostRecv([]verbs.RecvWR{{ID: uint64(i), SG: []verbs.SGE{{Addr: c.mr.Addr() + uint64(i*msgSize), Length: msgSize, LKey: c.mr.LKey()}}}})
}

// Serve runs the directory until ctx is done.
func (m *MemoryNode) Serve(ctx context.Context) error {
	wcs := make([]verbs.WC, 16)
	for {
		n, err := m.cq.Wait(ctx, wcs)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		for _, wc := range wcs[:n] {
			if err := m.complete(wc); err != nil {
				return err
			}
		}
	}
}

func (m *MemoryNode) complete(wc verbs.WC) error {
	if wc.Op != verbs.OpRecv {
		return nil // our SEND completions (errors: the client's QP broke)
	}
	m.mu.Lock()
	c := m.clients[wc.QPN]
	m.mu.Unlock()
	if c == nil || wc.Status != verbs.StatusSuccess {
		return nil
	}
	slot := int(wc.ID)
	req := c.buf[slot*msgSize : (slot+1)*msgSize]
	typ, level, addr := req[0], int(req[1]), GlobalAddress(binary.LittleEndian.Uint64(req[8:]))
	var reply bool
	var out GlobalAddress
	m.mu.Lock()
	switch typ {
	case MsgMalloc:
		if m.nextChunk < m.chunks {
			out = Addr(m.cfg.Node, m.nextChunk*m.cfg.ChunkSize)
			m.nextChunk++
		}
		m.mallocs++
		reply = true
	case MsgNewRoot:
		if level > m.rootLevel {
			m.root, m.rootLevel = addr, level
		}
	}
	m.mu.Unlock()
	if err := c.postRecv(slot); err != nil {
		return fmt.Errorf("sherman: memory node %d: %w", m.cfg.Node, err)
	}
	if !reply {
		return nil
	}
	s := c.buf[dirRecvSlots*msgSize:]
	clear(s[:msgSize])
	s[0] = MsgMallocReply
	binary.LittleEndian.PutUint64(s[8:], uint64(out))
	// A client has at most one MALLOC outstanding, so one send slot per
	// client suffices: its next request follows our reply.
	err := c.qp.PostSend([]verbs.SendWR{{Op: verbs.OpSend, SG: []verbs.SGE{{Addr: c.mr.Addr() + uint64(dirRecvSlots*msgSize), Length: msgSize, LKey: c.mr.LKey()}}}})
	if err != nil {
		return fmt.Errorf("sherman: memory node %d: reply: %w", m.cfg.Node, err)
	}
	return nil
}
