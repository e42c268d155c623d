package middlebox

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/swordbox/swordbox/roce"
)

// Clover steering in software (paper section 4.4.2) with the rules of
// p4/swordbox.p4 (docs/swordbox-p4.md, "Semantics"), so that a rack without
// a P4 switch gets the same contract: a request is steered only to a tail
// whose link was seen to succeed (in chain mode, also onto links in
// flight, which the client then proves unless the steerer vouched for
// them), and only while that tail is younger than tail-ttl. The steerer is
// a deterministic function of (frame, time): the engine passes its clock.
//
//   - Node WRITE (WRITE_ONLY or WRITE_FIRST, DMA length == node size, at
//     least 24 payload bytes): the node's header word (entry version =
//     bits 18..11), key and own logical handle (docs/clover-layout.md) go
//     into the node map at crc32(LH) and the address map at crc32(VA),
//     tracked key or not; a collision replaces.
//   - CMP_SWAP record at crc32(client IP, server IP, PSN): the frame's
//     AtomicETH as forwarded, the forwarding time and, for a linking CAS of
//     a tracked key, the key and the node it links.
//   - A CMP_SWAP matching the record of its slot (same IPs and PSN, valid or
//     cleared by its ACK, same VA and swap next LH as the client sent them)
//     is a retransmission: its VA, compare and swap become the first copy's;
//     nothing else changes. Same IPs and PSN with another VA or LH (another
//     QP of the host): recorded as confirming nothing.
//   - Linking CAS (compare bits 63..19 zero, swap next LH neither 0 nor the
//     delete mark; the node map names the LH with the swap's version): with
//     write steering on, if the key's cached tail is on the same memory
//     node, at another VA and fresh (now - tail time < tail-ttl), VA := tail
//     VA and bits 18..11 of compare and swap := tail version.
//   - ATOMIC ACK of a recorded CAS (engine: the server's first answer to it)
//     clears the record; for a linking CAS of a tracked key, orig == compare
//     as forwarded makes the linked node the key's tail (time = when its CAS
//     was forwarded, its LH kept in every mode) unless the cached tail was
//     linked by a CAS forwarded later; a failure aimed at the cached tail
//     forgets that tail.
//   - Node READ (DMA length == node size), with read steering on: the
//     address map names the key of the exact VA; a fresh tail of a tracked
//     key on the same memory node at another VA replaces the RETH VA.
//   - Node READ response (rule 14; READ_RESPONSE_ONLY, UDP length == node
//     size + 28 as the switch compares it, so a padded response never
//     qualifies), with read steering on: when the node's key (payload bytes
//     8..15) is tracked and its confirmed tail is valid, fresh, on the
//     memory node the response comes from, with the node's own LH (bytes
//     16..19) and entry version, bit 63 of the header word is set: a bit
//     memory never holds, which tells the client the node is the chain's
//     confirmed tail, so it may take a steered READ's node.
//   - Delete-mark CAS, FETCH_ADD and other requests are never steered.
//
// Chain mode (SteerConfig.Chain, with write steering; rules 10-13 of
// docs/swordbox-p4.md, "Chain mode"):
//
//   - Each key also has a chain: the node of its last forwarded linking
//     CAS, confirmed or not. A linking CAS of a tracked key (not a
//     retransmission, not ambiguous) finding the key's chain valid, on the
//     same memory node and fresh (now - chain time < tail-ttl) is chained:
//     VA := the chain end's VA, bits 18..11 of compare and swap := its
//     version (left alone when the client aimed there already); its record
//     notes the chain's end as its predecessor, and its node becomes the
//     chain's end (time = now). When the chain's end is elsewhere but has
//     the entry version the client compares, the CAS is not chained (the
//     client could not tell the answer from a success on its own tail). A
//     node is chained at most once: a CAS linking a node that was chained
//     before (its client's retry after a failure the steerer did not see:
//     one it saw ended the chain, and clears the mark) is not chained. A
//     CAS so refused while the key's chain is live goes out unsteered (the
//     confirmed tail may have links in flight after it); a CAS of a key
//     without a live chain falls back to the confirmed tail (rule 5).
//   - At its ATOMIC ACK, a chained success whose predecessor is the
//     confirmed tail (by LH) becomes the confirmed tail, and its ACK is
//     vouched for (rule 13): the original value the client gets is
//     1<<63 | predecessor LH<<28 | (orig & 0x7F800), clover.VouchWord of
//     the predecessor, so its client needs no proof. A chained success
//     after any other predecessor, or a chained failure, ends the chain (a
//     failure aimed at the confirmed tail also forgets that tail). An
//     unchained success that becomes the tail starts a chain at its node
//     when the key has none live.
//   - A node READ while the key's chain is live (valid, on the READ's
//     memory node, fresh) and ends at a node other than the confirmed tail
//     (by LH) goes to the chain's end (rule 12): its response is vouched
//     for (rule 14) only if that node is confirmed by then. Otherwise the
//     READ is steered as above.
//
// Decisions where the switch program and a software box differ: the
// steerer uses the switch's hashing (CRC-32, IEEE, over the same bytes) and
// by default its table sizes, so that both collide alike (the differential
// test, steer_diff_test.go, depends on it); tracked keys are an exact set
// (or every key) and tails are kept per key, where the switch has a slot
// per key given by the controller (and guards slot reuse with tail_key,
// which a static set never needs). The engine calls the steerer for every
// request it forwards, retransmissions included, and for the first ATOMIC
// ACK of each atomic it forwarded unchanged; a CMP_SWAP the engine turns
// into a WRITE (cas-to-write ranges) has no ATOMIC ACK and confirms
// nothing. The switch program parses plain IPv4 without options and no
// VLAN tag; the steerer takes whatever the engine parses (RNICs send
// neither). The engine also passes every READ_RESPONSE_ONLY it forwards to
// a client (rule 14; a response it drops is not looked at, and rule 14
// changes no state) and sends each client the ATOMIC ACK value the steerer
// returns, for every repeat of the answer as well (the switch vouches for
// the first ACK only: its record is cleared then). Unlike the switch,
// whose hosts run with ICRC checking off, the engine recomputes the ICRC
// of every frame it rewrites: steered requests, vouched READ responses,
// and the ATOMIC ACKs it generates anyway. The switch's controller-facing
// parts (CAS repair by PacketOut, per-key counters) have no counterpart
// here.

// Defaults and limits of SteerConfig.
const (
	// DefaultTailTTL and MaxTailTTL are the rack's tail-ttl default and
	// limit for the switch (ctrl/rack): half of Clover's default T_r, 1h.
	DefaultTailTTL = 25 * time.Millisecond
	MaxTailTTL     = time.Hour
	// The switch program's table sizes (NODE_SLOTS, ADDR_SLOTS, LINK_SLOTS).
	DefaultSteerNodeSlots = 65536
	DefaultSteerAddrSlots = 65536
	DefaultSteerCASSlots  = 8192
	MaxSteerSlots         = 1 << 24
	// NodePrefixLen is the part of a Clover node the steerer parses:
	// header word, key and own logical handle (docs/clover-layout.md).
	NodePrefixLen    = 24
	MaxSteerNodeSize = 1 << 30
)

// SteerConfig configures Clover steering (Config.Steering). Zero sizes and
// a zero TailTTL mean their defaults.
type SteerConfig struct {
	// Mode: "write", "read" or "both". Learning (node WRITEs, CAS records,
	// confirmations) runs in every mode.
	Mode string `mapstructure:"mode" yaml:"mode"`
	// NodeSize is the DMA length of a node WRITE and READ: 24 + Clover's
	// value size (24..2^30).
	NodeSize uint32 `mapstructure:"node-size" yaml:"node-size"`
	// Keys lists the tracked keys; empty tracks every key.
	Keys []uint64 `mapstructure:"keys" yaml:"keys"`
	// TailTTL is how long after the forwarding of the CAS that linked it a
	// confirmed tail may be steered to (1µs..1h; default 25ms). It must stay
	// below half of Clover's T_r (the store's read timeout), as the switch's
	// tail_ttl (docs/swordbox-p4.md).
	TailTTL time.Duration `mapstructure:"tail-ttl" yaml:"tail-ttl"`
	// NodeSlots, AddrSlots and CASSlots size the node map, the address map
	// and the CAS records (1..2^24 each; defaults 65536, 65536, 8192: the
	// switch's).
	NodeSlots int `mapstructure:"node-slots" yaml:"node-slots"`
	AddrSlots int `mapstructure:"addr-slots" yaml:"addr-slots"`
	CASSlots  int `mapstructure:"cas-slots" yaml:"cas-slots"`
	// Chain turns on chain mode with write steering (docs/swordbox-p4.md,
	// "Chain mode"): a linking CAS is steered onto the node of the key's
	// last forwarded linking CAS, confirmed or not, instead of onto the
	// confirmed tail, and the Clover client proves the success unless the
	// steerer vouched for it (rule 13). Nil means true, the rack's default
	// (ctrl/rack, key chain); ignored in read mode.
	Chain *bool `mapstructure:"chain" yaml:"chain"`
}

// chain reports whether chain mode is on: Chain (default true) with write
// steering.
func (s *SteerConfig) chain() bool {
	return s.Mode != "read" && (s.Chain == nil || *s.Chain)
}

func (s *SteerConfig) validate() error {
	switch s.Mode {
	case "write", "read", "both":
	default:
		return fmt.Errorf("steering mode %q: want write, read or both", s.Mode)
	}
	if s.NodeSize < NodePrefixLen || s.NodeSize > MaxSteerNodeSize {
		return fmt.Errorf("steering node-size %d: want %d..%d (24 + the Clover value size)", s.NodeSize, NodePrefixLen, MaxSteerNodeSize)
	}
	if s.TailTTL != 0 && (s.TailTTL < time.Microsecond || s.TailTTL > MaxTailTTL) {
		return fmt.Errorf("steering tail-ttl %v: want 1µs..%v (0: default %v)", s.TailTTL, MaxTailTTL, DefaultTailTTL)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"node-slots", s.NodeSlots}, {"addr-slots", s.AddrSlots}, {"cas-slots", s.CASSlots}} {
		if f.v < 0 || f.v > MaxSteerSlots {
			return fmt.Errorf("steering %s %d: want 1..%d (0: default)", f.name, f.v, MaxSteerSlots)
		}
	}
	return nil
}

// Indices of the steerer's stats: those of swordbox.p4's stats counter.
const (
	stRoCE               = iota // requests seen
	stNodeWrites                // node WRITEs learned
	stCAS                       // linking CAS seen (not retransmissions)
	stCASSteered                // CAS steered
	stReads                     // node READs seen (read steering on)
	stReadsSteered              // READs steered
	stReadMisses                // node READs not steered (no fresh tail of a known key)
	stRetransmits               // CAS retransmissions forwarded as their first copy
	stAcksCleared               // ATOMIC ACKs that matched a record
	stLinkTakeover              // records overwritten before their ACK
	stTailDropped               // tails forgotten: a CAS aimed at them failed
	stLinkUnresolved            // linking CAS whose node the node map does not hold
	stTailConfirmed             // tails confirmed
	stTailExpired               // CAS not steered: tail older than the TTL
	stConfirmStale              // confirmations older than the cached tail
	stLinkAmbiguous             // CAS sharing client, server and PSN with the slot's record
	stCASChained                // CAS chained onto the key's last forwarded link (chain mode)
	stChainBroken               // chains ended: a chained CAS failed, or its predecessor was unconfirmed
	stChainRefused              // CAS not chained: the chain's end has the client's compare version, or its node was chained before
	stReadsChainEnd             // node READs steered to the chain's end: links after the confirmed tail in flight (rule 12)
	stVouched                   // ATOMIC ACKs of chained links rewritten to vouch for them (rule 13)
	stEndPredUnconfirmed        // chains ended: a chained success whose predecessor is not the confirmed tail
	stEndChainedFail            // chains ended: a chained CAS failed
	stReadsVouched              // node READ responses vouched for (rule 14)
	stCount              = 24
)

// The delete mark in a next pointer (docs/clover-layout.md).
const lhDeleted = 0xFFFFFFFF

// Entry-version bits 18..11 and next-LH bits 59..28 of a Clover header
// word; the next version sits at bits 26..19.
const verShift, verMask, nextShift, nextVerShift = 11, 0xff, 28, 19

// vouchMark is bit 63 of a Clover header word, which memory never holds
// (docs/clover-layout.md): set in a vouched ATOMIC ACK's original value
// (rule 13) and in a vouched READ response's header word (rule 14).
const vouchMark = 1 << 63

// readRespOverhead is a READ_RESPONSE_ONLY's UDP length minus its payload
// (with pad): UDP, BTH, AETH and ICRC.
const readRespOverhead = roce.UDPLen + roce.BTHLen + roce.AETHLen + roce.ICRCLen

type nodeEntry struct {
	lh      uint32
	ver     uint8
	va, key uint64
	chained bool // a CAS linking it was chained (chain mode)
}

type addrEntry struct{ va, key uint64 }

type casRecord struct {
	valid         bool
	tracked       bool // a linking CAS of a tracked key
	chained       bool // chained onto the node whose LH is predLH (chain mode)
	predLH        uint32
	ver           uint8
	cip, mip      [4]byte
	psn           uint32
	lh            uint32
	origVA        uint64 // VA as the client sent it
	key, nodeVA   uint64 // the key and the node it links
	va, cmp, swap uint64 // as forwarded
	ts            int64  // when forwarded
}

type tail struct {
	valid bool // false once dropped: ts still orders later confirmations
	va    uint64
	ver   uint8
	srv   [4]byte
	ts    int64  // when the CAS that linked it was forwarded
	lh    uint32 // its LH (kept after a drop, as the switch's tail_lh)
}

type steerer struct {
	write, read bool
	nodeSize    uint32
	ttl         int64 // nanoseconds
	all         bool
	tracked     map[uint64]bool
	chain       bool
	tails       map[uint64]tail // the confirmed tail of each key, when cached
	ends        map[uint64]tail // chain mode: the chain's end of each key (ts: when its CAS was forwarded)
	nodes       []nodeEntry
	nodes2      []nodeEntry // chain mode: the node map's second way
	addrs       []addrEntry
	cas         []casRecord
	stats       [stCount]uint64
	c           *Counters // the engine's counters (Steered, SteerNodeWrites, SteerReadMisses)
}

func orDefault(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}

// newSteerer returns the steerer of a validated config; it counts into c.
func newSteerer(cfg *SteerConfig, c *Counters) *steerer {
	ttl := cfg.TailTTL
	if ttl == 0 {
		ttl = DefaultTailTTL
	}
	s := &steerer{write: cfg.Mode != "read", read: cfg.Mode != "write", nodeSize: cfg.NodeSize,
		ttl: int64(ttl), all: len(cfg.Keys) == 0, tracked: map[uint64]bool{}, chain: cfg.chain(),
		tails: map[uint64]tail{}, ends: map[uint64]tail{},
		nodes: make([]nodeEntry, orDefault(cfg.NodeSlots, DefaultSteerNodeSlots)),
		addrs: make([]addrEntry, orDefault(cfg.AddrSlots, DefaultSteerAddrSlots)),
		cas:   make([]casRecord, orDefault(cfg.CASSlots, DefaultSteerCASSlots)),
		c:     c,
	}
	for _, k := range cfg.Keys {
		s.tracked[k] = true
	}
	if s.chain {
		s.nodes2 = make([]nodeEntry, len(s.nodes))
	}
	return s
}

func (s *steerer) isTracked(k uint64) bool { return s.all || s.tracked[k] }

// The slots are v1model's hash(crc32, {fields}, N): CRC-32 (IEEE) of the
// fields concatenated big-endian (a 24-bit PSN takes 3 bytes), mod N.

func (s *steerer) nodeIdx(lh uint32) uint32 {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], lh)
	return crc32.ChecksumIEEE(b[:]) % uint32(len(s.nodes))
}

// nodeSalt and nodeIdx2 index chain mode's second way of the node map:
// crc32(LH, LH + nodeSalt), as p4/swordbox.p4's NODE_SALT (a CRC is linear,
// so crc32(LH) alone maps whole families of LHs to one slot).
const nodeSalt = 0x9e3779b9

func (s *steerer) nodeIdx2(lh uint32) uint32 {
	var b [8]byte
	binary.BigEndian.PutUint32(b[:], lh)
	binary.BigEndian.PutUint32(b[4:], lh+nodeSalt)
	return crc32.ChecksumIEEE(b[:]) % uint32(len(s.nodes2))
}

func (s *steerer) nodeSlot2(lh uint32) *nodeEntry { return &s.nodes2[s.nodeIdx2(lh)] }

func (s *steerer) addrIdx(va uint64) uint32 {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], va)
	return crc32.ChecksumIEEE(b[:]) % uint32(len(s.addrs))
}

func (s *steerer) casIdx(cip, mip [4]byte, psn uint32) uint32 {
	b := [11]byte{cip[0], cip[1], cip[2], cip[3], mip[0], mip[1], mip[2], mip[3], byte(psn >> 16), byte(psn >> 8), byte(psn)}
	return crc32.ChecksumIEEE(b[:]) % uint32(len(s.cas))
}

func (s *steerer) nodeSlot(lh uint32) *nodeEntry { return &s.nodes[s.nodeIdx(lh)] }
func (s *steerer) addrSlot(va uint64) *addrEntry { return &s.addrs[s.addrIdx(va)] }
func (s *steerer) casSlot(cip, mip [4]byte, psn uint32) *casRecord {
	return &s.cas[s.casIdx(cip, mip, psn)]
}

// fresh reports whether the cached tail t may be steered to at now.
func (s *steerer) fresh(t tail, now int64) bool { return now-t.ts < s.ttl }

// request applies the rules to a request frame forwarded at now (new or
// retransmitted; the engine calls it only for frames it forwards) and
// reports whether it rewrote the frame.
func (s *steerer) request(now int64, p *roce.Packet) bool {
	op := p.Opcode
	if op > roce.OpRCReadRequest && op != roce.OpRCCompareSwap && op != roce.OpRCFetchAdd {
		return false
	}
	s.stats[stRoCE]++
	switch {
	case (op == roce.OpRCWriteOnly || op == roce.OpRCWriteFirst) && p.RETH != nil &&
		p.RETH.DMALen() == s.nodeSize && len(p.Payload) >= NodePrefixLen:
		s.nodeWrite(p.RETH.VA(), p.Payload)
	case op == roce.OpRCCompareSwap && p.AtomicETH != nil:
		return s.compareSwap(now, p)
	case op == roce.OpRCReadRequest && p.RETH != nil && p.RETH.DMALen() == s.nodeSize && s.read:
		return s.nodeRead(now, p)
	}
	return false
}

func (s *steerer) nodeWrite(va uint64, pl []byte) {
	hw := binary.LittleEndian.Uint64(pl[0:8])
	key := binary.LittleEndian.Uint64(pl[8:16])
	lh := binary.LittleEndian.Uint32(pl[16:20])
	ne := nodeEntry{lh: lh, ver: uint8(hw >> verShift & verMask), va: va, key: key}
	*s.nodeSlot(lh) = ne
	if s.chain {
		*s.nodeSlot2(lh) = ne
	}
	*s.addrSlot(va) = addrEntry{va: va, key: key}
	s.stats[stNodeWrites]++
	s.c.SteerNodeWrites++
}

func (s *steerer) compareSwap(now int64, p *roce.Packet) bool {
	a := p.AtomicETH
	va, cmp, swap := a.VA(), a.Compare(), a.SwapAdd()
	lh, ver := uint32(swap>>nextShift), uint8(swap>>nextVerShift)
	cip, mip, psn := p.IP.Src(), p.IP.Dst(), p.BTH.PSN()
	r := s.casSlot(cip, mip, psn)
	// The record at this slot has this CAS's client, server and PSN (valid,
	// or cleared by its ACK): the same VA and new node make it a
	// retransmission; anything else is another QP of the same client host
	// with the same PSN, which an ACK could not tell apart: it confirms
	// nothing.
	same := r.psn == psn && r.cip == cip && r.mip == mip
	if same && r.origVA == va && r.lh == lh {
		// A retransmission: forwarded exactly as the first copy.
		a.SetVA(r.va)
		a.SetCompare(r.cmp)
		a.SetSwapAdd(r.swap)
		s.stats[stRetransmits]++
		return r.va != va || r.cmp != cmp || r.swap != swap
	}
	if r.valid {
		s.stats[stLinkTakeover]++
	}
	steered, linking, chained := false, false, false
	var key, nodeVA uint64
	var predLH uint32
	if cmp>>19 == 0 && lh != 0 && lh != lhDeleted {
		s.stats[stCAS]++
		n := s.nodeSlot(lh)
		if (n.lh != lh || n.ver != ver) && s.chain {
			n = s.nodeSlot2(lh) // chain mode: the second way
		}
		if n.lh == lh && n.ver == ver {
			key, nodeVA = n.key, n.va
			linking = s.isTracked(key)
		} else {
			s.stats[stLinkUnresolved]++
		}
		// specLive: the key's chain is live for this CAS (chain mode).
		e, ok := s.ends[key]
		specLive := linking && !same && s.chain && ok && e.valid && e.srv == mip && s.fresh(e, now)
		if specLive {
			// Not chained: a CAS linking a node chained before (its
			// client's retry after a failure the steerer may not have
			// seen: the chain may have grown from that node since, and
			// chained it could close a loop reachable from nowhere; a
			// failure the steerer saw cleared the mark), and a CAS that,
			// steered to the chain's end, would return the very tail word
			// its client compares (a success it would not prove).
			if n.chained || e.va != va && e.ver == uint8(cmp>>verShift) {
				s.stats[stChainRefused]++
			} else {
				// Chained onto the key's last forwarded link, confirmed or
				// not; its node is the chain's end now.
				chained, predLH = true, e.lh
				if e.va != va {
					steered = s.steerTo(a, e, cmp, swap)
				}
				s.stats[stCASChained]++
				s.ends[key] = tail{valid: true, va: nodeVA, ver: ver, srv: mip, ts: now, lh: lh}
				n.chained = true
			}
		}
		if t, ok := s.tails[key]; linking && !chained && ok && t.valid && t.srv == mip && t.va != va {
			switch {
			case !s.fresh(t, now):
				s.stats[stTailExpired]++
			case s.write && !specLive:
				// Rule 5. A CAS refused for chaining while the key's
				// chain is live passes unsteered: the confirmed tail may
				// have successors in flight.
				steered = s.steerTo(a, t, cmp, swap)
			}
		}
	}
	if same {
		linking = false
		s.stats[stLinkAmbiguous]++
	}
	*r = casRecord{valid: true, tracked: linking, chained: chained, predLH: predLH, ver: ver, cip: cip, mip: mip, psn: psn, lh: lh,
		origVA: va, key: key, nodeVA: nodeVA, va: a.VA(), cmp: a.Compare(), swap: a.SwapAdd(), ts: now}
	return steered
}

// steerTo rewrites the CAS a (compare cmp and swap swap as the client
// sent them) onto node t: its VA, and t's entry version in bits 18..11 of
// compare and swap (rule 5 of docs/swordbox-p4.md). It reports true.
func (s *steerer) steerTo(a roce.AtomicETH, t tail, cmp, swap uint64) bool {
	m, v := uint64(verMask)<<verShift, uint64(t.ver)<<verShift
	a.SetVA(t.va)
	a.SetCompare(cmp&^m | v)
	a.SetSwapAdd(swap&^m | v)
	s.stats[stCASSteered]++
	s.c.Steered++
	return true
}

func (s *steerer) nodeRead(now int64, p *roce.Packet) bool {
	s.stats[stReads]++
	va := p.RETH.VA()
	if e := s.addrSlot(va); e.va == va && s.isTracked(e.key) {
		mip := p.IP.Dst()
		t, ok := s.tails[e.key]
		fresh := ok && t.valid && t.srv == mip && s.fresh(t, now)
		to := t.va
		if c, live := s.ends[e.key]; s.chain && live && c.valid && c.srv == mip && s.fresh(c, now) && c.lh != t.lh && c.ts >= t.ts {
			// Rule 12: links after the confirmed tail are in flight (it
			// may have a successor already; the chain's end was forwarded
			// after the tail's link, not left behind by an unchained
			// one): the READ goes to the chain's end, whose response is
			// vouched for (rule 14) only if its link is confirmed by then.
			fresh, to = true, c.va
			s.stats[stReadsChainEnd]++
		}
		if fresh {
			if to == va {
				return false // the node steering would choose
			}
			p.RETH.SetVA(to)
			s.stats[stReadsSteered]++
			s.c.Steered++
			return true
		}
	}
	s.stats[stReadMisses]++
	s.c.SteerReadMisses++
	return false
}

// atomicAck applies the ATOMIC ACK (original value orig), arrived at now,
// of the atomic that client cip sent to memory node mip with PSN psn (the
// client's PSN: the one its record was made with). It returns the original
// value the client is to get: orig, or the vouch word of rule 13.
func (s *steerer) atomicAck(now int64, cip, mip [4]byte, psn uint32, orig uint64) uint64 {
	r := s.casSlot(cip, mip, psn)
	if !r.valid || r.psn != psn || r.cip != cip || r.mip != mip {
		return orig
	}
	r.valid = false
	s.stats[stAcksCleared]++
	if !r.tracked {
		return orig
	}
	t, ok := s.tails[r.key]
	if r.chained {
		if s.chainedAck(mip, r, t, orig) {
			// Rule 13: the link is vouched for: bit 63, the
			// predecessor's LH in the next field, the entry version
			// kept (clover.VouchWord).
			s.stats[stVouched]++
			s.c.SteerVouched++
			return vouchMark | uint64(r.predLH)<<nextShift | orig&(verMask<<verShift)
		}
		return orig
	}
	switch {
	case orig == r.cmp && (!ok || r.ts >= t.ts):
		// Linked after a node that was the tail: the new tail.
		s.tails[r.key] = tail{valid: true, va: r.nodeVA, ver: r.ver, srv: mip, ts: r.ts, lh: r.lh}
		s.stats[stTailConfirmed]++
		if e := s.ends[r.key]; s.chain && (!e.valid || !s.fresh(e, now)) {
			// No live chain of the key: one starts at the new tail.
			s.ends[r.key] = tail{valid: true, va: r.nodeVA, ver: r.ver, srv: mip, ts: r.ts, lh: r.lh}
		}
	case orig == r.cmp:
		s.stats[stConfirmStale]++ // the cached tail was linked by a later CAS
	case ok && t.valid && t.va == r.va:
		// Aimed at the cached tail and failed: that tail has a successor
		// the steerer did not learn. Its time stays, so that an older
		// link's late confirmation does not bring back a node with a
		// successor.
		t.valid = false
		s.tails[r.key] = t
		s.stats[stTailDropped]++
	}
	return orig
}

// chainedAck settles the ACK of a chained CAS r: its node is linked only
// if its predecessor is, so a success is confirmed only after the
// confirmed tail t, and then reported true (its ACK is vouched for); a
// success after any other predecessor, or a failure, ends the key's chain.
func (s *steerer) chainedAck(mip [4]byte, r *casRecord, t tail, orig uint64) bool {
	if orig == r.cmp {
		if t.valid && t.lh == r.predLH {
			s.tails[r.key] = tail{valid: true, va: r.nodeVA, ver: r.ver, srv: mip, ts: r.ts, lh: r.lh}
			s.stats[stTailConfirmed]++
			return true
		}
		s.stats[stEndPredUnconfirmed]++
	} else {
		s.stats[stEndChainedFail]++
		// The chain ends here: its client's retry may be chained again.
		for _, n := range [2]*nodeEntry{s.nodeSlot(r.lh), s.nodeSlot2(r.lh)} {
			if n.lh == r.lh {
				n.chained = false
			}
		}
		if t.valid && t.va == r.va {
			// The chain's end had a successor the steerer did not learn,
			// and it was the confirmed tail: forget it.
			t.valid = false
			s.tails[r.key] = t
			s.stats[stTailDropped]++
		}
	}
	if e, ok := s.ends[r.key]; ok {
		e.valid = false
		s.ends[r.key] = e
	}
	s.stats[stChainBroken]++
	return false
}

// readResponse applies rule 14 to a READ_RESPONSE_ONLY from memory node
// srv arrived at now, with UDP length udpLen and payload (pad excluded),
// and reports whether it vouched for it. With read steering on, a response
// of a node (udpLen == node size + 28, as the switch compares it, so a
// padded response is never vouched for) whose key is tracked and whose
// own LH and entry version are those of the key's confirmed tail, fresh
// and on srv, gets bit 63 of its header word set: the node is the chain's
// confirmed tail, and its client may take it although steered.
func (s *steerer) readResponse(now int64, srv [4]byte, udpLen int, payload []byte) bool {
	if !s.read || udpLen != int(s.nodeSize)+readRespOverhead || len(payload) < NodePrefixLen {
		return false
	}
	hw := binary.LittleEndian.Uint64(payload[0:8])
	key := binary.LittleEndian.Uint64(payload[8:16])
	lh := binary.LittleEndian.Uint32(payload[16:20])
	if !s.isTracked(key) {
		return false
	}
	t, ok := s.tails[key]
	if !ok || !t.valid || t.lh != lh || t.ver != uint8(hw>>verShift) || t.srv != srv || !s.fresh(t, now) {
		return false
	}
	binary.LittleEndian.PutUint64(payload[0:8], hw|vouchMark)
	s.stats[stReadsVouched]++
	s.c.SteerVouched++
	return true
}
