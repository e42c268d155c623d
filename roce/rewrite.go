package roce

import (
	"encoding/binary"
	"fmt"
)

// In-place rewrites for the data path. Field setters (SetVA, SetRKey,
// SetDestQP, SetPSN, SetMSN, and every view setter) change no length and leave
// the IPv4 checksum valid; call SetICRC afterwards if the ICRC must be right.
// The length-changing rewrites fix the IPv4 total length and header
// checksum and the UDP length, clear a non-zero UDP checksum, drop any
// Ethernet trailer, and compute the ICRC when fixICRC is true; otherwise
// they move the old ICRC bytes to the new end unchanged (what a switch that
// does not recompute the ICRC emits).

func rewriteErr(op Opcode, what string) error {
	return fmt.Errorf("roce: rewrite: %s: %s", op, what)
}

// SetVA sets the remote address of a packet carrying a RETH or AtomicETH.
func (p *Packet) SetVA(va uint64) error {
	switch {
	case p.RETH != nil:
		p.RETH.SetVA(va)
	case p.AtomicETH != nil:
		p.AtomicETH.SetVA(va)
	default:
		return rewriteErr(p.Opcode, "no RETH or AtomicETH to carry a VA")
	}
	return nil
}

// VA returns the remote address of a packet carrying a RETH or AtomicETH.
func (p *Packet) VA() (uint64, bool) {
	switch {
	case p.RETH != nil:
		return p.RETH.VA(), true
	case p.AtomicETH != nil:
		return p.AtomicETH.VA(), true
	}
	return 0, false
}

// SetRKey sets the remote key of a packet carrying a RETH or AtomicETH.
func (p *Packet) SetRKey(rkey uint32) error {
	switch {
	case p.RETH != nil:
		p.RETH.SetRKey(rkey)
	case p.AtomicETH != nil:
		p.AtomicETH.SetRKey(rkey)
	default:
		return rewriteErr(p.Opcode, "no RETH or AtomicETH to carry an rkey")
	}
	return nil
}

// RKey returns the remote key of a packet carrying a RETH or AtomicETH.
func (p *Packet) RKey() (uint32, bool) {
	switch {
	case p.RETH != nil:
		return p.RETH.RKey(), true
	case p.AtomicETH != nil:
		return p.AtomicETH.RKey(), true
	}
	return 0, false
}

// SetDestQP sets the BTH destination QP (low 24 bits of qp).
func (p *Packet) SetDestQP(qp uint32) { p.BTH.SetDestQP(qp) }

// SetPSN sets the BTH PSN (low 24 bits of psn).
func (p *Packet) SetPSN(psn uint32) { p.BTH.SetPSN(psn) }

// SetMSN sets the MSN of a packet carrying an AETH.
func (p *Packet) SetMSN(msn uint32) error {
	if p.AETH == nil {
		return rewriteErr(p.Opcode, "no AETH to carry an MSN")
	}
	p.AETH.SetMSN(msn)
	return nil
}

// resizeMode says which checksums resize leaves correct.
type resizeMode uint8

const (
	resizeKeepICRC resizeMode = iota // IPv4 checksum fixed, old ICRC moved to the new end
	resizeFixICRC                    // IPv4 checksum and ICRC fixed
	resizeStale                      // neither: the caller recomputes both
)

// resize sets the packet's end to newEnd (the end of the new ICRC), fixing
// the lengths and the checksums mode asks for.
func (p *Packet) resize(newICRCOff int, mode resizeMode) {
	old := p.ICRCOff
	newEnd := newICRCOff + ICRCLen
	if mode == resizeKeepICRC {
		copy(p.Frame[newICRCOff:newEnd], p.Frame[old:old+ICRCLen])
	}
	p.Frame = p.Frame[:newEnd]
	p.ICRCOff = newICRCOff
	p.End = newEnd
	p.ICRC = p.Frame[newICRCOff:newEnd]
	p.Trailer = p.Frame[newEnd:]
	p.IP.SetTotalLen(uint16(newEnd - p.L3Off))
	if mode != resizeStale {
		p.IP.UpdateChecksum()
	}
	p.UDP.SetLength(uint16(newEnd - p.L4Off))
	p.UDP.SetChecksum(0)
	if mode == resizeFixICRC {
		p.SetICRC()
	}
}

func modeOf(fixICRC bool) resizeMode {
	if fixICRC {
		return resizeFixICRC
	}
	return resizeKeepICRC
}

// AtomicToWrite turns a parsed CMP_SWAP or FETCH_ADD into an RDMA WRITE_ONLY
// of the same VA, rkey, QP and PSN that stores the 8 bytes of store in
// little-endian order (the order atomics use in host memory), so memory ends
// as the atomic would have left it. The packet shrinks by 4 bytes; p is
// updated to describe the new frame (p.Frame).
func (p *Packet) AtomicToWrite(store uint64, fixICRC bool) error {
	return p.atomicToWrite(store, modeOf(fixICRC))
}

// AtomicToWriteStale is AtomicToWrite for a caller that computes the IPv4
// checksum and the ICRC itself (the middlebox): both are left stale, and
// the old ICRC is not moved.
func (p *Packet) AtomicToWriteStale(store uint64) error {
	return p.atomicToWrite(store, resizeStale)
}

// AtomicWriteLen20 is the length of the WRITE_ONLY that AtomicToWrite20
// makes, from the IPv4 header to the end of the ICRC.
const AtomicWriteLen20 = IPv4MinLen + UDPLen + BTHLen + RETHLen + 8 + ICRCLen

// AtomicToWrite20 is AtomicToWriteStale without parsing, for a frame whose
// CMP_SWAP or FETCH_ADD has a 20-byte IPv4 header at l3 and no pad (the
// caller has checked both, and the opcode): it rewrites f in place and
// returns it AtomicWriteLen20 bytes after l3, the IPv4 checksum and the
// ICRC left for the caller to compute.
//
// It is written to be inlined (the middlebox's fast path calls it once per
// CMP_SWAP it converts): the offsets are constants into the packet p, whose
// length the compiler then knows, so the writes need no bounds checks.
func AtomicToWrite20(f []byte, l3 int, store uint64) []byte {
	f = f[:l3+AtomicWriteLen20]
	p := f[l3:]
	const bth = IPv4MinLen + UDPLen
	const ext = bth + BTHLen
	p[bth+BTHOpcodeOff] = byte(OpRCWriteOnly)
	binary.BigEndian.PutUint32(p[ext+RETHDMALenOff:], 8)
	binary.LittleEndian.PutUint64(p[ext+RETHLen:], store)
	binary.BigEndian.PutUint16(p[IPv4TotalLenOff:], AtomicWriteLen20)
	binary.BigEndian.PutUint16(p[IPv4MinLen+UDPLengthOff:], AtomicWriteLen20-IPv4MinLen)
	binary.BigEndian.PutUint16(p[IPv4MinLen+UDPChecksumOff:], 0)
	return f
}

func (p *Packet) atomicToWrite(store uint64, mode resizeMode) error {
	if p.Opcode != OpRCCompareSwap && p.Opcode != OpRCFetchAdd {
		return rewriteErr(p.Opcode, "AtomicToWrite needs RC_CMP_SWAP or RC_FETCH_ADD")
	}
	ext := p.ExtOff
	p.BTH.SetOpcode(OpRCWriteOnly)
	p.BTH.SetPadCnt(0)
	p.Opcode = OpRCWriteOnly
	// VA and rkey are at the same offsets in AtomicETH and RETH.
	p.RETH = RETH(p.Frame[ext : ext+RETHLen])
	p.AtomicETH = nil
	p.RETH.SetDMALen(8)
	po := ext + RETHLen
	binary.LittleEndian.PutUint64(p.Frame[po:po+8], store)
	p.PayloadOff = po
	p.Payload = p.Frame[po : po+8]
	p.Pad = p.Frame[po+8 : po+8]
	p.resize(po+8, mode)
	return nil
}

// AckToAtomicAck turns a parsed positive RC ACK (a NAK or RNR NAK is
// refused: an ATOMIC ACK always acknowledges) into an ATOMIC ACK carrying
// orig as the original remote data. The packet grows by 8 bytes, which must fit in
// cap(p.Frame); p is updated to describe the new frame (p.Frame).
func (p *Packet) AckToAtomicAck(orig uint64, fixICRC bool) error {
	if p.Opcode != OpRCAcknowledge {
		return rewriteErr(p.Opcode, "AckToAtomicAck needs RC_ACK")
	}
	if s := p.AETH.Syndrome(); !s.IsACK() {
		return rewriteErr(p.Opcode, "AckToAtomicAck needs a positive ACK, not "+s.String())
	}
	if cap(p.Frame) < p.End+AtomicAckETHLen {
		return rewriteErr(p.Opcode, fmt.Sprintf("buffer capacity %d, need %d", cap(p.Frame), p.End+AtomicAckETHLen))
	}
	old := p.ICRCOff
	p.Frame = p.Frame[:p.End+AtomicAckETHLen]
	if !fixICRC {
		copy(p.Frame[old+AtomicAckETHLen:], p.Frame[old:old+ICRCLen])
	}
	p.BTH.SetOpcode(OpRCAtomicAcknowledge)
	p.BTH.SetPadCnt(0)
	p.Opcode = OpRCAtomicAcknowledge
	p.AtomicAckETH = AtomicAckETH(p.Frame[old : old+AtomicAckETHLen])
	p.AtomicAckETH.SetOrig(orig)
	po := old + AtomicAckETHLen
	p.PayloadOff = po
	p.Payload = p.Frame[po:po]
	p.Pad = p.Frame[po:po]
	// resize copies the ICRC from p.ICRCOff when !fixICRC: point it at the
	// already-moved bytes so the copy is a no-op.
	p.ICRCOff = po
	p.resize(po, modeOf(fixICRC))
	return nil
}

// AtomicToWrite parses frame, rewrites its CMP_SWAP or FETCH_ADD into a
// WRITE_ONLY storing store (see Packet.AtomicToWrite) and returns the
// rewritten frame, 4 bytes shorter, in the same memory.
func AtomicToWrite(frame []byte, store uint64, fixICRC bool) ([]byte, error) {
	var p Packet
	if err := ParseInto(&p, frame); err != nil {
		return nil, err
	}
	if err := p.AtomicToWrite(store, fixICRC); err != nil {
		return nil, err
	}
	return p.Frame, nil
}

// AckToAtomicAck parses frame, rewrites its RC ACK into an ATOMIC ACK with
// orig (see Packet.AckToAtomicAck) and returns the rewritten frame, 8 bytes
// longer, in the same memory (cap(frame) must allow it).
func AckToAtomicAck(frame []byte, orig uint64, fixICRC bool) ([]byte, error) {
	var p Packet
	if err := ParseInto(&p, frame); err != nil {
		return nil, err
	}
	if err := p.AckToAtomicAck(orig, fixICRC); err != nil {
		return nil, err
	}
	return p.Frame, nil
}
