package roce

import (
	"encoding/binary"
	"hash/crc32"
)

// The ICRC (IBA annex A17, RoCEv2 over IPv4) is CRC-32 (IEEE) over 8 bytes
// of 0xFF followed by the IPv4 header through the end of the payload, with
// the variant fields masked to all ones: IPv4 TOS, TTL and header checksum,
// the UDP checksum, and BTH byte 4 (FECN, BECN, reserved). It is written
// little-endian after the payload.
//
// Implementation: the masked fields all lie in the first IHL*4+13 bytes. That
// prefix is copied to a stack buffer and masked, its CRC is taken with a
// slicing-by-8 loop local to this package (crc32.Update would make the
// buffer escape to the heap), and the remainder of the packet is passed to
// one crc32.Update call in place, which uses the CPU's carry-less multiply
// for long payloads. The 8 leading 0xFF bytes are a precomputed CRC state.

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

// crcUpdate is crc32.Update(crc, crc32.IEEETable, p) with slicing-by-8; it
// does not let p escape.
func crcUpdate(crc uint32, p []byte) uint32 {
	crc = ^crc
	for len(p) >= 8 {
		crc ^= binary.LittleEndian.Uint32(p)
		crc = crcTab8[0][p[7]] ^ crcTab8[1][p[6]] ^ crcTab8[2][p[5]] ^ crcTab8[3][p[4]] ^
			crcTab8[4][crc>>24] ^ crcTab8[5][crc>>16&0xff] ^ crcTab8[6][crc>>8&0xff] ^ crcTab8[7][crc&0xff]
		p = p[8:]
	}
	for _, v := range p {
		crc = crcTab8[0][byte(crc)^v] ^ crc>>8
	}
	return ^crc
}

// icrcOver computes the ICRC of l3, which holds the IPv4 header (ihl bytes),
// the UDP header, the BTH and everything up to, not including, the ICRC. The
// caller guarantees len(l3) >= ihl+UDPLen+BTHLen and 20 <= ihl <= 60.
func icrcOver(l3 []byte, ihl int) uint32 {
	var hdr [IPv4MaxLen + UDPLen + BTHLen]byte
	n := ihl + UDPLen + BTHFBOff + 1
	copy(hdr[:n], l3[:n])
	hdr[IPv4TOSOff] = 0xff
	hdr[IPv4TTLOff] = 0xff
	hdr[IPv4ChecksumOff] = 0xff
	hdr[IPv4ChecksumOff+1] = 0xff
	hdr[ihl+UDPChecksumOff] = 0xff
	hdr[ihl+UDPChecksumOff+1] = 0xff
	hdr[ihl+UDPLen+BTHFBOff] = 0xff
	crc := crcUpdate(crcSeed, hdr[:n])
	return crc32.Update(crc, crc32.IEEETable, l3[n:])
}

// ComputeICRC returns the ICRC the packet should carry, computed from its
// current contents.
func (p *Packet) ComputeICRC() uint32 {
	return icrcOver(p.Frame[p.L3Off:p.ICRCOff], p.IP.HeaderLen())
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
