package roce

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"unsafe"
)

// The ICRC (IBA annex A17, RoCEv2 over IPv4) is CRC-32 (IEEE) over 8 bytes
// of 0xFF followed by the IPv4 header through the end of the payload, with
// the variant fields masked to all ones: IPv4 TOS, TTL and header checksum,
// the UDP checksum, and BTH byte 4 (FECN, BECN, reserved). It is written
// little-endian after the payload.
//
// Implementation: the masked fields all lie in the IPv4, UDP and BT headers.
// With a 20-byte IPv4 header they are read in place with the masks ORed in;
// with IPv4 options they are copied to a stack buffer and masked. Their CRC is taken with
// a slicing-by-8 loop local to this package (crc32.Update would make the
// buffer escape to the heap, and its loop for short inputs is bytewise). The
// rest of the packet is read in place: by the same loop when short, and by
// one crc32.Update call (carry-less multiply) over a multiple of 16 bytes
// when long. The 8 leading 0xFF bytes are a precomputed CRC state. Spans of
// icrcFastMin to icrcFastMax bytes take neither (icrc_fast.go): with a
// 20-byte IPv4 header on amd64 with PCLMULQDQ they go to a carry-less
// multiply in assembly that reads them in place (icrc_amd64.s); otherwise
// they are copied, masked and zero-padded, and go to crc32.Update in one
// call.
//
// Entry points. ICRC20 (and ComputeICRC, for a 20-byte IPv4 header) inline
// to one call of the assembly entry icrc20, which checks the length and
// useICRCAsm itself and tail-calls icrc20Slow (the paths above, through
// icrcOver) when it does not apply: a caller that knows its layout reaches
// the carry-less multiply with no Go call in between. ICRCOf takes the same
// route for IHL 5; spans with IPv4 options go through icrcOver.

var (
	crcTab8  [8][256]uint32
	crcSeed  uint32 // CRC-32 state after the 8 bytes of 0xFF
	ffPrefix = [8]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
)

func init() {
	crcTab8[0] = *crc32.IEEETable
	for i := 0; i < 256; i++ {
		c := crcTab8[0][i]
		for j := 1; j < 8; j++ {
			c = crcTab8[0][c&0xff] ^ c>>8
			crcTab8[j][i] = c
		}
	}
	crcSeed = crc32.ChecksumIEEE(ffPrefix[:])
}

// crcUpdate is crc32.Update(crc, crc32.IEEETable, p) with slicing-by-8 (and
// one slicing-by-4 step for a 4-byte tail, which RoCEv2's 4-byte-aligned
// headers make the common case); it does not let p escape.
func crcUpdate(crc uint32, p []byte) uint32 {
	crc = ^crc
	for len(p) >= 8 {
		crc = crcStep8(crc, binary.LittleEndian.Uint32(p), binary.LittleEndian.Uint32(p[4:]))
		p = p[8:]
	}
	if len(p) >= 4 {
		crc ^= binary.LittleEndian.Uint32(p)
		crc = crcTab8[0][crc>>24] ^ crcTab8[1][crc>>16&0xff] ^ crcTab8[2][crc>>8&0xff] ^ crcTab8[3][crc&0xff]
		p = p[4:]
	}
	for _, v := range p {
		crc = crcTab8[0][byte(crc)^v] ^ crc>>8
	}
	return ^crc
}

// crcStep8 advances the (inverted) CRC register over 8 bytes given as two
// little-endian words.
func crcStep8(crc, lo, hi uint32) uint32 {
	lo ^= crc
	return crcTab8[0][hi>>24] ^ crcTab8[1][hi>>16&0xff] ^ crcTab8[2][hi>>8&0xff] ^ crcTab8[3][hi&0xff] ^
		crcTab8[4][lo>>24] ^ crcTab8[5][lo>>16&0xff] ^ crcTab8[6][lo>>8&0xff] ^ crcTab8[7][lo&0xff]
}

// crcHdr20 is the CRC of the masked IPv4 (20-byte header), UDP and BT
// headers, the first 40 bytes of l3, read in place: the masks are ORed into
// the little-endian words (TOS; TTL and checksum; UDP checksum; BTH byte 4).
func crcHdr20(crc uint32, l3 []byte) uint32 {
	_ = l3[39]
	le := binary.LittleEndian
	crc = ^crc
	crc = crcStep8(crc, le.Uint32(l3[0:])|0x0000ff00, le.Uint32(l3[4:]))
	crc = crcStep8(crc, le.Uint32(l3[8:])|0xffff00ff, le.Uint32(l3[12:]))
	crc = crcStep8(crc, le.Uint32(l3[16:]), le.Uint32(l3[20:]))
	crc = crcStep8(crc, le.Uint32(l3[24:])|0xffff0000, le.Uint32(l3[28:]))
	crc = crcStep8(crc, le.Uint32(l3[32:])|0x000000ff, le.Uint32(l3[36:]))
	return ^crc
}

// clmulMin is the length from which the remainder of a packet goes to
// crc32.Update (carry-less multiply on amd64/arm64) rather than crcUpdate.
const clmulMin = 128

// icrcOver computes the ICRC of l3, which holds the IPv4 header (ihl bytes),
// the UDP header, the BTH and everything up to, not including, the ICRC. The
// caller guarantees len(l3) >= ihl+UDPLen+BTHLen and 20 <= ihl <= 60.
func icrcOver(l3 []byte, ihl int) uint32 {
	if n := len(l3); n >= icrcFastMin && n <= icrcFastMax {
		return icrcShort(l3, ihl)
	}
	return icrcInPlace(l3, ihl)
}

// icrcInPlace is icrcOver reading the payload in place (any length); it is
// the path for spans longer than icrcFastMax.
func icrcInPlace(l3 []byte, ihl int) uint32 {
	if ihl == IPv4MinLen {
		return icrcRest(crcHdr20(crcSeed, l3), l3[IPv4MinLen+UDPLen+BTHLen:])
	}
	// Masked copy of the IPv4, UDP and BT headers (a multiple of 4 bytes).
	var hdr [IPv4MaxLen + UDPLen + BTHLen]byte
	n := ihl + UDPLen + BTHLen
	copy(hdr[:n], l3[:n])
	maskICRCFields(hdr[:n], ihl)
	return icrcRest(crcUpdate(crcSeed, hdr[:n]), l3[n:])
}

// maskICRCFields sets the fields the ICRC does not cover to all ones in a
// copy of the IPv4 (ihl bytes), UDP and BT headers: TOS, TTL, the IPv4
// and UDP checksums, and BTH byte 4.
func maskICRCFields(h []byte, ihl int) {
	_ = h[ihl+UDPLen+BTHFBOff]
	h[IPv4TOSOff] = 0xff
	h[IPv4TTLOff] = 0xff
	h[IPv4ChecksumOff] = 0xff
	h[IPv4ChecksumOff+1] = 0xff
	h[ihl+UDPChecksumOff] = 0xff
	h[ihl+UDPChecksumOff+1] = 0xff
	h[ihl+UDPLen+BTHFBOff] = 0xff
}

func icrcRest(crc uint32, rest []byte) uint32 {
	if len(rest) < clmulMin {
		return crcUpdate(crc, rest)
	}
	// Hand crc32.Update a multiple of 16 bytes: its tail loop is bytewise.
	k := len(rest) & 15
	crc = crcUpdate(crc, rest[:k])
	return crc32.Update(crc, crc32.IEEETable, rest[k:])
}

// ICRCOf returns the ICRC of an IPv4 RoCEv2 packet given as its bytes from
// the IPv4 header to the end of the payload, without the ICRC itself: the
// building block for code that writes frames without parsing them. It reads
// the IHL; only the length of l3 is checked, not the headers' contents.
func ICRCOf(l3 []byte) (uint32, error) {
	if len(l3) < IPv4MinLen {
		return 0, fmt.Errorf("roce: icrc: %d bytes, need an IPv4 header", len(l3))
	}
	ihl := IPv4(l3).HeaderLen()
	if ihl < IPv4MinLen || len(l3) < ihl+UDPLen+BTHLen {
		return 0, fmt.Errorf("roce: icrc: %d bytes with IHL %d, need IPv4, UDP and BTH", len(l3), ihl)
	}
	if ihl == IPv4MinLen {
		return ICRC20(l3), nil
	}
	return icrcOver(l3, ihl), nil
}

// ICRC20 returns the ICRC of l3, the bytes of an IPv4 RoCEv2 packet from
// its IPv4 header, which must be 20 bytes long (no options; IHL 5, which is
// not checked), up to, not including, the ICRC: UDP header, BTH, extension
// headers and payload. len(l3) must be at least 40 (IPv4, UDP and BTH); a
// shorter l3 panics. It is ICRCOf for callers that already know the layout,
// and the shortest route to the carry-less-multiply routine: on amd64 with
// PCLMULQDQ it inlines to one call of the assembly for spans of 40 to 256
// bytes, which falls back (by a tail call) to the portable path for longer
// spans and on other CPUs; other architectures take the portable path.
func ICRC20(l3 []byte) uint32 { return icrc20(unsafe.SliceData(l3), len(l3)) }

// icrc20Slow is ICRC20 where icrc20 has no carry-less-multiply route (n
// outside 40..256, or no PCLMULQDQ, or not amd64). The assembly reaches it by
// a tail call, so it has icrc20's signature.
func icrc20Slow(p *byte, n int) uint32 {
	if n < icrcFastMin {
		panic(fmt.Sprintf("roce: ICRC20 of %d bytes, need at least %d (IPv4, UDP, BTH)", n, icrcFastMin))
	}
	return icrcOver(unsafe.Slice(p, n), IPv4MinLen)
}

// ComputeICRC returns the ICRC the packet should carry, computed from its
// current contents. With a 20-byte IPv4 header it is ICRC20.
func (p *Packet) ComputeICRC() uint32 {
	l3 := p.Frame[p.L3Off:p.ICRCOff]
	if ihl := p.IP.HeaderLen(); ihl != IPv4MinLen {
		return icrcOver(l3, ihl)
	}
	return ICRC20(l3)
}

// StoredICRC returns the ICRC carried by the packet (read little-endian).
func (p *Packet) StoredICRC() uint32 { return binary.LittleEndian.Uint32(p.ICRC) }

// ICRCOK reports whether the packet's ICRC is correct.
func (p *Packet) ICRCOK() bool { return p.StoredICRC() == p.ComputeICRC() }

// SetICRC computes the ICRC and writes it into the packet.
func (p *Packet) SetICRC() {
	binary.LittleEndian.PutUint32(p.ICRC, p.ComputeICRC())
}

// VerifyICRC parses frame and reports whether its ICRC is correct.
func VerifyICRC(frame []byte) (bool, error) {
	var p Packet
	if err := ParseInto(&p, frame); err != nil {
		return false, err
	}
	return p.ICRCOK(), nil
}

// SetICRC parses frame and writes the correct ICRC into it.
func SetICRC(frame []byte) error {
	var p Packet
	if err := ParseInto(&p, frame); err != nil {
		return err
	}
	p.SetICRC()
	return nil
}
