package middlebox

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/swordbox/swordbox/roce"
)

// Clover steering in software (paper section 4.4.2), with the rules of
// p4/swordbox.p4 (docs/swordbox-p4.md, "Semantics"), so that a rack
// without a P4 switch still gets it:
//
//   - A node WRITE (WRITE_ONLY or WRITE_FIRST whose DMA length is the node
//     size) of a tracked key makes that node the connection's pending node
//     (key, VA, entry version = bits 18..11 of the header word), and the
//     address map records VA -> key (one slot per hash, a collision
//     replaces). An untracked node WRITE clears the connection's pending
//     node.
//   - A new CMP_SWAP on a connection with a pending node: with write
//     steering on, if the key's cached tail is on the same memory node and
//     the CAS targets another VA (stale), the AtomicETH VA becomes the
//     tail's VA and bits 18..11 of compare and swap its entry version.
//     Steered or not, the pending node then becomes the key's cached tail.
//   - A node READ (READ of the node size), with read steering on: if the
//     address map holds its VA, for a tracked key whose cached tail is on
//     the same node and elsewhere, the READ's VA becomes the tail's.
//   - Retransmissions are never steered and change nothing (the engine's
//     gate hands them to its retransmission path, which forwards the
//     client's own bytes: a lost CAS(A, B) retransmitted repairs the chain).
//
// Decisions: the software keeps connections exactly (no hashed slots, so
// no takeovers); the tail cache is keyed by the exact key; the address map
// hashes the VA with CRC-32 like the P4 program. Not mirrored yet: the
// switch's check of every linking CAS at its ATOMIC ACK, which drops a
// cached tail whose CAS failed (docs/swordbox-p4.md). On the switch it
// repairs tails left stale by connection-slot evictions, which cannot
// happen here; a CAS lost after the middlebox can still leave a tail that
// was never linked until the next CAS of the key moves it. Unlike the switch, the
// middlebox recomputes the ICRC of steered frames. The controller-facing
// parts of the P4 program (outstanding-CAS registers, PacketOut repair)
// have no counterpart here.

// SteerConfig configures Clover steering (Config.Steering).
type SteerConfig struct {
	// Mode: "write", "read" or "both".
	Mode string `mapstructure:"mode" yaml:"mode"`
	// NodeSize is the DMA length of a node WRITE and READ: 16 + value size.
	NodeSize uint32 `mapstructure:"node-size" yaml:"node-size"`
	// Keys lists the tracked keys; empty tracks every key.
	Keys []uint64 `mapstructure:"keys" yaml:"keys"`
	// AddrSlots is the size of the address map (default 16384).
	AddrSlots int `mapstructure:"addr-slots" yaml:"addr-slots"`
}

func (s *SteerConfig) validate() error {
	switch s.Mode {
	case "write", "read", "both":
	default:
		return fmt.Errorf("steering mode %q: want write, read or both", s.Mode)
	}
	if s.NodeSize < 16 {
		return fmt.Errorf("steering node-size %d: below the 16-byte node header", s.NodeSize)
	}
	if s.AddrSlots < 0 || s.AddrSlots > 1<<24 {
		return fmt.Errorf("steering addr-slots %d out of range", s.AddrSlots)
	}
	return nil
}

type tail struct {
	va  uint64
	ver uint8
	srv [4]byte
}

type steerConn struct {
	pending bool
	key     uint64
	va      uint64
	ver     uint8
}

type addrSlot struct {
	va    uint64
	key   uint64
	valid bool
}

type steerer struct {
	write, read bool
	nodeSize    uint32
	all         bool
	tracked     map[uint64]bool
	tails       map[uint64]tail
	addrs       []addrSlot
}

func newSteerer(c *SteerConfig) *steerer {
	s := &steerer{write: c.Mode != "read", read: c.Mode != "write", nodeSize: c.NodeSize,
		all: len(c.Keys) == 0, tracked: map[uint64]bool{}, tails: map[uint64]tail{}}
	for _, k := range c.Keys {
		s.tracked[k] = true
	}
	n := c.AddrSlots
	if n == 0 {
		n = 16384
	}
	s.addrs = make([]addrSlot, n)
	return s
}

func (s *steerer) isTracked(k uint64) bool { return s.all || s.tracked[k] }

func (s *steerer) addrSlot(va uint64) *addrSlot {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], va)
	return &s.addrs[crc32.ChecksumIEEE(b[:])%uint32(len(s.addrs))]
}

const verShift, verMask = 11, 0xff

// request applies the steering rules to a new (not retransmitted) request
// of connection ci; it reports whether the frame was changed.
func (e *Engine) steerRequest(ci int32, p *roce.Packet) bool {
	s := e.steer
	c := &e.conns[ci]
	sc := &c.steer
	switch p.Opcode {
	case roce.OpRCWriteOnly, roce.OpRCWriteFirst:
		if p.RETH.DMALen() != s.nodeSize || len(p.Payload) < 16 {
			return false
		}
		hdr := binary.LittleEndian.Uint64(p.Payload[0:8])
		key := binary.LittleEndian.Uint64(p.Payload[8:16])
		if !s.isTracked(key) {
			*sc = steerConn{}
			return false
		}
		va := p.RETH.VA()
		*sc = steerConn{pending: true, key: key, va: va, ver: uint8(hdr >> verShift & verMask)}
		*s.addrSlot(va) = addrSlot{va: va, key: key, valid: true}
		e.c.SteerNodeWrites++
		return false
	case roce.OpRCCompareSwap:
		if !sc.pending {
			return false
		}
		changed := false
		t, ok := s.tails[sc.key]
		if s.write && ok && t.srv == c.srvIP && p.AtomicETH.VA() != t.va {
			p.AtomicETH.SetVA(t.va)
			m := uint64(verMask) << verShift
			v := uint64(t.ver) << verShift
			p.AtomicETH.SetCompare(p.AtomicETH.Compare()&^m | v)
			p.AtomicETH.SetSwapAdd(p.AtomicETH.SwapAdd()&^m | v)
			e.c.Steered++
			changed = true
		}
		s.tails[sc.key] = tail{va: sc.va, ver: sc.ver, srv: c.srvIP}
		sc.pending = false
		return changed
	case roce.OpRCReadRequest:
		if !s.read || p.RETH.DMALen() != s.nodeSize {
			return false
		}
		va := p.RETH.VA()
		a := s.addrSlot(va)
		if a.valid && a.va == va && s.isTracked(a.key) {
			if t, ok := s.tails[a.key]; ok && t.srv == c.srvIP {
				if t.va == va {
					return false // the tail itself
				}
				p.RETH.SetVA(t.va)
				e.c.Steered++
				return true
			}
		}
		e.c.SteerReadMisses++
	}
	return false
}
