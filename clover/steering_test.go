package clover

import (
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/swordbox/swordbox/roce"
)

// steering is a test model of the SwordBox steering switch of
// docs/swordbox-p4.md (one memory node, every key tracked, no hash
// collisions): it learns pending nodes from node WRITEs, caches each key's
// tail at the CAS that links it, steers stale CAS (VA and bits 18..11 of
// compare and swap) and stale node READs to the cached tail, and leaves
// retransmissions alone. It recomputes the ICRC of what it rewrites.
type steering struct {
	nodeSize uint32
	mnIP     [4]byte

	mu    sync.Mutex
	conns map[connKey]*connState
	tails map[uint64]tailState
	addrs map[uint64]uint64 // node VA -> key

	casSteered, readsSteered atomic.Uint64
}

type connKey struct {
	src [4]byte
	qp  uint32
}

type connState struct {
	lastPSN uint32
	havePSN bool
	pending bool
	key, va uint64
	ver     uint8
}

type tailState struct {
	va  uint64
	ver uint8
}

func newSteering(nodeSize int, mnIP [4]byte) *steering {
	return &steering{nodeSize: uint32(nodeSize), mnIP: mnIP, conns: map[connKey]*connState{}, tails: map[uint64]tailState{}, addrs: map[uint64]uint64{}}
}

func (s *steering) frame(f []byte) {
	p, err := roce.Parse(f)
	if err != nil || p.IP.Dst() != s.mnIP {
		return
	}
	op := p.BTH.Opcode()
	if op > 0x0C && op != 0x13 && op != 0x14 {
		return // not a request
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ck := connKey{src: p.IP.Src(), qp: p.BTH.DestQP()}
	cs := s.conns[ck]
	if cs == nil {
		cs = &connState{}
		s.conns[ck] = cs
	}
	psn := p.BTH.PSN()
	if cs.havePSN {
		if d := (psn - cs.lastPSN) & roce.MaxPSN; d == 0 || d&(1<<23) != 0 {
			return // retransmission: forwarded untouched
		}
	}
	cs.lastPSN, cs.havePSN = psn, true
	switch op {
	case 0x0A, 0x06: // WRITE_ONLY, WRITE_FIRST
		if p.RETH.DMALen() == s.nodeSize && len(p.Payload) >= 16 {
			h := Header(binary.LittleEndian.Uint64(p.Payload))
			cs.pending, cs.key, cs.va, cs.ver = true, binary.LittleEndian.Uint64(p.Payload[8:]), p.RETH.VA(), h.EntryVersion()
			s.addrs[cs.va] = cs.key
		} else {
			cs.pending = false
		}
	case 0x13: // COMPARE_SWAP
		if !cs.pending {
			return
		}
		if t, ok := s.tails[cs.key]; ok && t.va != p.AtomicETH.VA() {
			p.AtomicETH.SetVA(t.va)
			p.AtomicETH.SetCompare(uint64(Header(p.AtomicETH.Compare()).WithEntryVersion(t.ver)))
			p.AtomicETH.SetSwapAdd(uint64(Header(p.AtomicETH.SwapAdd()).WithEntryVersion(t.ver)))
			p.SetICRC()
			s.casSteered.Add(1)
		}
		s.tails[cs.key] = tailState{va: cs.va, ver: cs.ver}
		cs.pending = false
	case 0x0C: // READ_REQUEST
		if p.RETH.DMALen() != s.nodeSize {
			return
		}
		key, ok := s.addrs[p.RETH.VA()]
		if !ok {
			return
		}
		if t, ok := s.tails[key]; ok && t.va != p.RETH.VA() {
			p.RETH.SetVA(t.va)
			p.SetICRC()
			s.readsSteered.Add(1)
		}
	}
}
