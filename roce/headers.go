package roce

import (
	"encoding/binary"
	"math/bits"
)

// Every view is a []byte that starts at its header and is at least the
// header's length (Parse and Build guarantee it; a shorter view is a
// programming error and its accessors panic). Multi-byte fields are
// big-endian, as on the wire; 24-bit fields (QP, PSN, MSN) are uint32 and
// their setters keep the low 24 bits.

// UDPPort is the IANA destination port of RoCEv2.
const UDPPort = 4791

// EtherTypeIPv4 is the Ethernet type of IPv4.
const EtherTypeIPv4 = 0x0800

// IPProtoUDP is the IPv4 protocol number of UDP.
const IPProtoUDP = 17

// Header sizes in bytes.
const (
	EthernetLen     = 14
	VLANTagLen      = 4
	IPv4MinLen      = 20
	IPv4MaxLen      = 60
	UDPLen          = 8
	BTHLen          = 12
	RETHLen         = 16
	AtomicETHLen    = 28
	AETHLen         = 4
	AtomicAckETHLen = 8
	ImmDtLen        = 4
	DETHLen         = 8
	IETHLen         = 4
	ICRCLen         = 4
	CNPPayloadLen   = 16
)

// LinkMTUOverhead is how far a link's MTU (the IPv4 packet it carries)
// must exceed the RoCE path MTU: IPv4, UDP, BTH, RETH and ICRC, with room
// for the AtomicETH (docs/deploy.md, "NICs and the fabric"; the deploy
// scripts check the same figure).
const LinkMTUOverhead = 78

// Ethernet is a view of an Ethernet II header: 14 bytes, or 18 with one
// IEEE 802.1Q tag.
type Ethernet []byte

// Ethernet field offsets. With a VLAN tag, EthTypeOff holds EtherTypeVLAN,
// the tag control information follows, and the inner EtherType is at
// EthInnerTypeOff.
const (
	EthDstOff       = 0
	EthSrcOff       = 6
	EthTypeOff      = 12
	EthTCIOff       = 14
	EthInnerTypeOff = 16
)

// EtherTypeVLAN is the EtherType of an IEEE 802.1Q tag.
const EtherTypeVLAN = 0x8100

// Tagged reports whether the header carries an 802.1Q tag.
func (e Ethernet) Tagged() bool {
	return len(e) >= EthernetLen+VLANTagLen && e.EtherType() == EtherTypeVLAN
}

// TCI returns the 802.1Q tag control information (PCP 3 bits, DEI 1, VID
// 12) of a tagged header.
func (e Ethernet) TCI() uint16 { return binary.BigEndian.Uint16(e[EthTCIOff:]) }

// SetTCI sets the tag control information of a tagged header.
func (e Ethernet) SetTCI(v uint16) { binary.BigEndian.PutUint16(e[EthTCIOff:], v) }

// PayloadType returns the EtherType of the payload: the inner one when tagged.
func (e Ethernet) PayloadType() uint16 {
	if e.Tagged() {
		return binary.BigEndian.Uint16(e[EthInnerTypeOff:])
	}
	return e.EtherType()
}

// Dst returns the destination MAC address.
func (e Ethernet) Dst() (m [6]byte) { copy(m[:], e[EthDstOff:EthDstOff+6]); return }

// Src returns the source MAC address.
func (e Ethernet) Src() (m [6]byte) { copy(m[:], e[EthSrcOff:EthSrcOff+6]); return }

// EtherType returns the Ethernet type.
func (e Ethernet) EtherType() uint16 { return binary.BigEndian.Uint16(e[EthTypeOff:]) }

// SetDst sets the destination MAC address.
func (e Ethernet) SetDst(m [6]byte) { copy(e[EthDstOff:EthDstOff+6], m[:]) }

// SetSrc sets the source MAC address.
func (e Ethernet) SetSrc(m [6]byte) { copy(e[EthSrcOff:EthSrcOff+6], m[:]) }

// SetEtherType sets the Ethernet type.
func (e Ethernet) SetEtherType(t uint16) { binary.BigEndian.PutUint16(e[EthTypeOff:], t) }

// IPv4 is a view of an IPv4 header (options included when IHL > 5).
type IPv4 []byte

// IPv4 field offsets.
const (
	IPv4VersionIHLOff = 0
	IPv4TOSOff        = 1
	IPv4TotalLenOff   = 2
	IPv4IDOff         = 4
	IPv4FlagsFragOff  = 6
	IPv4TTLOff        = 8
	IPv4ProtocolOff   = 9
	IPv4ChecksumOff   = 10
	IPv4SrcOff        = 12
	IPv4DstOff        = 16
)

// IPv4 flag bits in the flags/fragment-offset word.
const (
	IPv4FlagDF      = 0x4000
	IPv4FlagMF      = 0x2000
	IPv4FragOffMask = 0x1fff
)

// Version returns the IP version (4).
func (ip IPv4) Version() uint8 { return ip[IPv4VersionIHLOff] >> 4 }

// IHL returns the header length in 32-bit words.
func (ip IPv4) IHL() uint8 { return ip[IPv4VersionIHLOff] & 0x0f }

// HeaderLen returns the header length in bytes.
func (ip IPv4) HeaderLen() int { return int(ip.IHL()) * 4 }

// TOS returns the type-of-service byte (DSCP and ECN).
func (ip IPv4) TOS() uint8 { return ip[IPv4TOSOff] }

// TotalLen returns the total length (header and payload).
func (ip IPv4) TotalLen() uint16 { return binary.BigEndian.Uint16(ip[IPv4TotalLenOff:]) }

// ID returns the identification field.
func (ip IPv4) ID() uint16 { return binary.BigEndian.Uint16(ip[IPv4IDOff:]) }

// FlagsFrag returns the 16-bit flags and fragment-offset word.
func (ip IPv4) FlagsFrag() uint16 { return binary.BigEndian.Uint16(ip[IPv4FlagsFragOff:]) }

// DF reports the don't-fragment flag.
func (ip IPv4) DF() bool { return ip.FlagsFrag()&IPv4FlagDF != 0 }

// TTL returns the time to live.
func (ip IPv4) TTL() uint8 { return ip[IPv4TTLOff] }

// Protocol returns the protocol number.
func (ip IPv4) Protocol() uint8 { return ip[IPv4ProtocolOff] }

// Checksum returns the header checksum as on the wire.
func (ip IPv4) Checksum() uint16 { return binary.BigEndian.Uint16(ip[IPv4ChecksumOff:]) }

// Src returns the source address.
func (ip IPv4) Src() (a [4]byte) { copy(a[:], ip[IPv4SrcOff:IPv4SrcOff+4]); return }

// Dst returns the destination address.
func (ip IPv4) Dst() (a [4]byte) { copy(a[:], ip[IPv4DstOff:IPv4DstOff+4]); return }

// SetVersionIHL sets version 4 and the header length in 32-bit words.
func (ip IPv4) SetVersionIHL(ihl uint8) { ip[IPv4VersionIHLOff] = 4<<4 | ihl&0x0f }

// SetTOS sets the type-of-service byte.
func (ip IPv4) SetTOS(v uint8) { ip[IPv4TOSOff] = v }

// SetTotalLen sets the total length.
func (ip IPv4) SetTotalLen(v uint16) { binary.BigEndian.PutUint16(ip[IPv4TotalLenOff:], v) }

// SetID sets the identification field.
func (ip IPv4) SetID(v uint16) { binary.BigEndian.PutUint16(ip[IPv4IDOff:], v) }

// SetFlagsFrag sets the flags and fragment-offset word.
func (ip IPv4) SetFlagsFrag(v uint16) { binary.BigEndian.PutUint16(ip[IPv4FlagsFragOff:], v) }

// SetTTL sets the time to live.
func (ip IPv4) SetTTL(v uint8) { ip[IPv4TTLOff] = v }

// SetProtocol sets the protocol number.
func (ip IPv4) SetProtocol(v uint8) { ip[IPv4ProtocolOff] = v }

// SetChecksum sets the header checksum field.
func (ip IPv4) SetChecksum(v uint16) { binary.BigEndian.PutUint16(ip[IPv4ChecksumOff:], v) }

// SetSrc sets the source address.
func (ip IPv4) SetSrc(a [4]byte) { copy(ip[IPv4SrcOff:IPv4SrcOff+4], a[:]) }

// SetDst sets the destination address.
func (ip IPv4) SetDst(a [4]byte) { copy(ip[IPv4DstOff:IPv4DstOff+4], a[:]) }

// ComputeChecksum returns the header checksum of the header as it is now,
// treating the checksum field as zero. The one's-complement sum does not
// depend on byte order (RFC 1071 section 2(B)), so the words are added as
// they lie in memory, by little-endian loads, and the sum is swapped once:
// the data path recomputes this checksum on every rewritten frame.
func (ip IPv4) ComputeChecksum() uint16 {
	n := ip.HeaderLen()
	le := binary.LittleEndian
	_ = ip[19]
	// Words 0-4 without the checksum (bytes 10-11), then any options.
	sum := uint64(le.Uint32(ip[0:])) + uint64(le.Uint32(ip[4:])) + uint64(le.Uint32(ip[8:])&0xffff) +
		uint64(le.Uint32(ip[12:])) + uint64(le.Uint32(ip[16:]))
	for i := IPv4MinLen; i+3 < n; i += 4 {
		sum += uint64(le.Uint32(ip[i:]))
	}
	// At most 15 words: below 2^36, so four folds reach 16 bits.
	sum = sum&0xffffffff + sum>>32
	sum = sum&0xffff + sum>>16
	sum = sum&0xffff + sum>>16
	sum = sum&0xffff + sum>>16
	return ^bits.ReverseBytes16(uint16(sum))
}

// UpdateChecksum recomputes and stores the header checksum.
func (ip IPv4) UpdateChecksum() { ip.SetChecksum(ip.ComputeChecksum()) }

// ChecksumOK reports whether the stored header checksum is correct.
func (ip IPv4) ChecksumOK() bool { return ip.Checksum() == ip.ComputeChecksum() }

// UDP is a view of a UDP header.
type UDP []byte

// UDP field offsets.
const (
	UDPSrcPortOff  = 0
	UDPDstPortOff  = 2
	UDPLengthOff   = 4
	UDPChecksumOff = 6
)

// SrcPort returns the source port.
func (u UDP) SrcPort() uint16 { return binary.BigEndian.Uint16(u[UDPSrcPortOff:]) }

// DstPort returns the destination port.
func (u UDP) DstPort() uint16 { return binary.BigEndian.Uint16(u[UDPDstPortOff:]) }

// Length returns the UDP length (header and payload).
func (u UDP) Length() uint16 { return binary.BigEndian.Uint16(u[UDPLengthOff:]) }

// Checksum returns the UDP checksum (0: none).
func (u UDP) Checksum() uint16 { return binary.BigEndian.Uint16(u[UDPChecksumOff:]) }

// SetSrcPort sets the source port.
func (u UDP) SetSrcPort(v uint16) { binary.BigEndian.PutUint16(u[UDPSrcPortOff:], v) }

// SetDstPort sets the destination port.
func (u UDP) SetDstPort(v uint16) { binary.BigEndian.PutUint16(u[UDPDstPortOff:], v) }

// SetLength sets the UDP length.
func (u UDP) SetLength(v uint16) { binary.BigEndian.PutUint16(u[UDPLengthOff:], v) }

// SetChecksum sets the UDP checksum.
func (u UDP) SetChecksum(v uint16) { binary.BigEndian.PutUint16(u[UDPChecksumOff:], v) }

// BTH is a view of the 12-byte InfiniBand Base Transport Header.
type BTH []byte

// BTH field offsets and bit masks.
const (
	BTHOpcodeOff = 0
	BTHFlagsOff  = 1 // SE(7) M(6) PadCnt(5:4) TVer(3:0)
	BTHPKeyOff   = 2
	BTHFBOff     = 4 // FECN(7) BECN(6) reserved(5:0)
	BTHDestQPOff = 5 // 24 bits
	BTHAckPSNOff = 8 // AckReq(31) reserved(30:24) PSN(23:0)

	bthSE     = 0x80
	bthMigReq = 0x40
	bthFECN   = 0x80
	bthBECN   = 0x40
	bthAckReq = 0x80

	// MaxQP and MaxPSN are the largest 24-bit values.
	MaxQP  = 1<<24 - 1
	MaxPSN = 1<<24 - 1
)

// Opcode returns the opcode.
func (b BTH) Opcode() Opcode { return Opcode(b[BTHOpcodeOff]) }

// SE reports the solicited-event bit.
func (b BTH) SE() bool { return b[BTHFlagsOff]&bthSE != 0 }

// MigReq reports the migration-request bit.
func (b BTH) MigReq() bool { return b[BTHFlagsOff]&bthMigReq != 0 }

// PadCnt returns the number of pad bytes (0-3) at the end of the payload.
func (b BTH) PadCnt() uint8 { return b[BTHFlagsOff] >> 4 & 3 }

// TVer returns the transport header version.
func (b BTH) TVer() uint8 { return b[BTHFlagsOff] & 0x0f }

// PKey returns the partition key.
func (b BTH) PKey() uint16 { return binary.BigEndian.Uint16(b[BTHPKeyOff:]) }

// FECN reports the forward explicit congestion notification bit.
func (b BTH) FECN() bool { return b[BTHFBOff]&bthFECN != 0 }

// BECN reports the backward explicit congestion notification bit.
func (b BTH) BECN() bool { return b[BTHFBOff]&bthBECN != 0 }

// DestQP returns the 24-bit destination queue pair number.
func (b BTH) DestQP() uint32 {
	return uint32(b[BTHDestQPOff])<<16 | uint32(b[BTHDestQPOff+1])<<8 | uint32(b[BTHDestQPOff+2])
}

// AckReq reports the acknowledge-request bit.
func (b BTH) AckReq() bool { return b[BTHAckPSNOff]&bthAckReq != 0 }

// PSN returns the 24-bit packet sequence number.
func (b BTH) PSN() uint32 { return binary.BigEndian.Uint32(b[BTHAckPSNOff:]) & MaxPSN }

// SetOpcode sets the opcode.
func (b BTH) SetOpcode(op Opcode) { b[BTHOpcodeOff] = byte(op) }

func setBit(p *byte, mask byte, on bool) {
	if on {
		*p |= mask
	} else {
		*p &^= mask
	}
}

// SetSE sets the solicited-event bit.
func (b BTH) SetSE(on bool) { setBit(&b[BTHFlagsOff], bthSE, on) }

// SetMigReq sets the migration-request bit.
func (b BTH) SetMigReq(on bool) { setBit(&b[BTHFlagsOff], bthMigReq, on) }

// SetPadCnt sets the pad count (low 2 bits of v).
func (b BTH) SetPadCnt(v uint8) { b[BTHFlagsOff] = b[BTHFlagsOff]&^0x30 | (v&3)<<4 }

// SetTVer sets the transport header version (low 4 bits of v).
func (b BTH) SetTVer(v uint8) { b[BTHFlagsOff] = b[BTHFlagsOff]&^0x0f | v&0x0f }

// SetPKey sets the partition key.
func (b BTH) SetPKey(v uint16) { binary.BigEndian.PutUint16(b[BTHPKeyOff:], v) }

// SetFECN sets the FECN bit.
func (b BTH) SetFECN(on bool) { setBit(&b[BTHFBOff], bthFECN, on) }

// SetBECN sets the BECN bit.
func (b BTH) SetBECN(on bool) { setBit(&b[BTHFBOff], bthBECN, on) }

// SetDestQP sets the destination QP (low 24 bits of v).
func (b BTH) SetDestQP(v uint32) {
	b[BTHDestQPOff] = byte(v >> 16)
	b[BTHDestQPOff+1] = byte(v >> 8)
	b[BTHDestQPOff+2] = byte(v)
}

// SetAckReq sets the acknowledge-request bit.
func (b BTH) SetAckReq(on bool) { setBit(&b[BTHAckPSNOff], bthAckReq, on) }

// SetPSN sets the PSN (low 24 bits of v), keeping AckReq and the reserved bits.
func (b BTH) SetPSN(v uint32) {
	b[BTHAckPSNOff+1] = byte(v >> 16)
	b[BTHAckPSNOff+2] = byte(v >> 8)
	b[BTHAckPSNOff+3] = byte(v)
}

// RETH is a view of the 16-byte RDMA Extended Transport Header.
type RETH []byte

// RETH field offsets.
const (
	RETHVAOff     = 0
	RETHRKeyOff   = 8
	RETHDMALenOff = 12
)

// VA returns the remote virtual address.
func (r RETH) VA() uint64 { return binary.BigEndian.Uint64(r[RETHVAOff:]) }

// RKey returns the remote key.
func (r RETH) RKey() uint32 { return binary.BigEndian.Uint32(r[RETHRKeyOff:]) }

// DMALen returns the DMA length.
func (r RETH) DMALen() uint32 { return binary.BigEndian.Uint32(r[RETHDMALenOff:]) }

// SetVA sets the remote virtual address.
func (r RETH) SetVA(v uint64) { binary.BigEndian.PutUint64(r[RETHVAOff:], v) }

// SetRKey sets the remote key.
func (r RETH) SetRKey(v uint32) { binary.BigEndian.PutUint32(r[RETHRKeyOff:], v) }

// SetDMALen sets the DMA length.
func (r RETH) SetDMALen(v uint32) { binary.BigEndian.PutUint32(r[RETHDMALenOff:], v) }

// AtomicETH is a view of the 28-byte Atomic Extended Transport Header.
type AtomicETH []byte

// AtomicETH field offsets.
const (
	AtomicVAOff      = 0
	AtomicRKeyOff    = 8
	AtomicSwapAddOff = 12
	AtomicCompareOff = 20
)

// VA returns the remote virtual address.
func (a AtomicETH) VA() uint64 { return binary.BigEndian.Uint64(a[AtomicVAOff:]) }

// RKey returns the remote key.
func (a AtomicETH) RKey() uint32 { return binary.BigEndian.Uint32(a[AtomicRKeyOff:]) }

// SwapAdd returns the swap value (CMP_SWAP) or addend (FETCH_ADD).
func (a AtomicETH) SwapAdd() uint64 { return binary.BigEndian.Uint64(a[AtomicSwapAddOff:]) }

// Compare returns the compare value (CMP_SWAP).
func (a AtomicETH) Compare() uint64 { return binary.BigEndian.Uint64(a[AtomicCompareOff:]) }

// SetVA sets the remote virtual address.
func (a AtomicETH) SetVA(v uint64) { binary.BigEndian.PutUint64(a[AtomicVAOff:], v) }

// SetRKey sets the remote key.
func (a AtomicETH) SetRKey(v uint32) { binary.BigEndian.PutUint32(a[AtomicRKeyOff:], v) }

// SetSwapAdd sets the swap value or addend.
func (a AtomicETH) SetSwapAdd(v uint64) { binary.BigEndian.PutUint64(a[AtomicSwapAddOff:], v) }

// SetCompare sets the compare value.
func (a AtomicETH) SetCompare(v uint64) { binary.BigEndian.PutUint64(a[AtomicCompareOff:], v) }

// AETH is a view of the 4-byte ACK Extended Transport Header.
type AETH []byte

// AETH field offsets.
const (
	AETHSyndromeOff = 0
	AETHMSNOff      = 1 // 24 bits
)

// Syndrome returns the raw syndrome byte.
func (a AETH) Syndrome() Syndrome { return Syndrome(a[AETHSyndromeOff]) }

// MSN returns the 24-bit message sequence number.
func (a AETH) MSN() uint32 {
	return uint32(a[AETHMSNOff])<<16 | uint32(a[AETHMSNOff+1])<<8 | uint32(a[AETHMSNOff+2])
}

// SetSyndrome sets the syndrome byte.
func (a AETH) SetSyndrome(s Syndrome) { a[AETHSyndromeOff] = byte(s) }

// SetMSN sets the MSN (low 24 bits of v).
func (a AETH) SetMSN(v uint32) {
	a[AETHMSNOff] = byte(v >> 16)
	a[AETHMSNOff+1] = byte(v >> 8)
	a[AETHMSNOff+2] = byte(v)
}

// AtomicAckETH is a view of the 8-byte Atomic ACK Extended Transport Header.
type AtomicAckETH []byte

// AtomicAckOrigOff is the offset of the original remote data.
const AtomicAckOrigOff = 0

// Orig returns the original remote data.
func (a AtomicAckETH) Orig() uint64 { return binary.BigEndian.Uint64(a[AtomicAckOrigOff:]) }

// SetOrig sets the original remote data.
func (a AtomicAckETH) SetOrig(v uint64) { binary.BigEndian.PutUint64(a[AtomicAckOrigOff:], v) }

// ImmDt is a view of the 4-byte Immediate Data header.
type ImmDt []byte

// ImmDtOff is the offset of the immediate data.
const ImmDtOff = 0

// Imm returns the immediate data.
func (i ImmDt) Imm() uint32 { return binary.BigEndian.Uint32(i[ImmDtOff:]) }

// SetImm sets the immediate data.
func (i ImmDt) SetImm(v uint32) { binary.BigEndian.PutUint32(i[ImmDtOff:], v) }

// IETH is a view of the 4-byte Invalidate Extended Transport Header.
type IETH []byte

// IETHRKeyOff is the offset of the key to invalidate.
const IETHRKeyOff = 0

// RKey returns the key to invalidate.
func (i IETH) RKey() uint32 { return binary.BigEndian.Uint32(i[IETHRKeyOff:]) }

// SetRKey sets the key to invalidate.
func (i IETH) SetRKey(v uint32) { binary.BigEndian.PutUint32(i[IETHRKeyOff:], v) }

// DETH is a view of the 8-byte Datagram Extended Transport Header.
type DETH []byte

// DETH field offsets.
const (
	DETHQKeyOff  = 0
	DETHSrcQPOff = 5 // 24 bits after a reserved byte
)

// QKey returns the queue key.
func (d DETH) QKey() uint32 { return binary.BigEndian.Uint32(d[DETHQKeyOff:]) }

// SrcQP returns the 24-bit source queue pair number.
func (d DETH) SrcQP() uint32 {
	return uint32(d[DETHSrcQPOff])<<16 | uint32(d[DETHSrcQPOff+1])<<8 | uint32(d[DETHSrcQPOff+2])
}

// SetQKey sets the queue key.
func (d DETH) SetQKey(v uint32) { binary.BigEndian.PutUint32(d[DETHQKeyOff:], v) }

// SetSrcQP sets the source QP (low 24 bits of v); the reserved byte is zeroed.
func (d DETH) SetSrcQP(v uint32) {
	d[DETHSrcQPOff-1] = 0
	d[DETHSrcQPOff] = byte(v >> 16)
	d[DETHSrcQPOff+1] = byte(v >> 8)
	d[DETHSrcQPOff+2] = byte(v)
}
