package roce

import (
	"encoding/binary"
	"fmt"
)

// Fields is the plain description of a RoCEv2 frame that Build writes. Only
// the fields of the extension headers the opcode carries are used (see
// Opcode.Ext); the others are ignored. Nothing is defaulted: a zero TTL is
// written as zero. The UDP destination port is always 4791 and the UDP
// checksum always 0.
type Fields struct {
	DstMAC, SrcMAC [6]byte
	VLAN           bool   // add an IEEE 802.1Q tag
	VLANTCI        uint16 // its tag control information (PCP, DEI, VID)

	SrcIP, DstIP [4]byte
	TOS          uint8
	IPID         uint16
	DontFragment bool
	TTL          uint8

	SrcPort uint16 // UDP source port (RoCEv2 uses it for flow entropy)

	// BTH.
	Opcode Opcode
	SE     bool
	MigReq bool
	PadCnt uint8 // 0-3; payload plus pad must be a multiple of 4
	TVer   uint8
	PKey   uint16
	FECN   bool
	BECN   bool
	DestQP uint32 // 24 bits
	AckReq bool
	PSN    uint32 // 24 bits

	// RETH, AtomicETH (VA, RKey) and IETH (RKey).
	VA      uint64
	RKey    uint32
	DMALen  uint32 // RETH
	SwapAdd uint64 // AtomicETH: swap value (CMP_SWAP) or addend (FETCH_ADD)
	Compare uint64 // AtomicETH: compare value (CMP_SWAP)

	// AETH.
	Syndrome Syndrome
	MSN      uint32 // 24 bits

	Orig uint64 // AtomicAckETH original remote data

	Imm uint32 // ImmDt

	// DETH.
	QKey  uint32
	SrcQP uint32 // 24 bits

	Payload []byte
}

// FrameLen returns the length of the frame Build writes for f.
func FrameLen(f *Fields) int {
	return ethLen(f) + IPv4MinLen + UDPLen + BTHLen + f.Opcode.Ext().Len() +
		len(f.Payload) + int(f.PadCnt) + ICRCLen
}

func ethLen(f *Fields) int {
	if f.VLAN {
		return EthernetLen + VLANTagLen
	}
	return EthernetLen
}

func buildErr(field, format string, args ...any) error {
	return fmt.Errorf("roce: build: %s: %s", field, fmt.Sprintf(format, args...))
}

// Build writes the frame described by f to the start of buf and returns its
// length. It computes the IPv4 total length and header checksum, the UDP
// length and the ICRC, and does not allocate unless it returns an error.
func Build(buf []byte, f *Fields) (int, error) {
	info := f.Opcode.Info()
	switch {
	case !info.Known:
		return 0, buildErr("bth.opcode", "unsupported opcode 0x%02x", uint8(f.Opcode))
	case f.PadCnt > 3:
		return 0, buildErr("bth.padcnt", "%d, above 3", f.PadCnt)
	case f.TVer > 15:
		return 0, buildErr("bth.tver", "%d, above 15", f.TVer)
	case f.DestQP > MaxQP:
		return 0, buildErr("bth.destqp", "0x%x exceeds 24 bits", f.DestQP)
	case f.PSN > MaxPSN:
		return 0, buildErr("bth.psn", "0x%x exceeds 24 bits", f.PSN)
	case !info.Payload && (len(f.Payload) != 0 || f.PadCnt != 0):
		return 0, buildErr("payload", "%s carries no payload (got %d bytes, pad %d)", info.Name, len(f.Payload), f.PadCnt)
	case (len(f.Payload)+int(f.PadCnt))%4 != 0:
		return 0, buildErr("bth.padcnt", "payload %d + pad %d is not a multiple of 4", len(f.Payload), f.PadCnt)
	case info.Ext&ExtAETH != 0 && f.MSN > 1<<24-1:
		return 0, buildErr("aeth.msn", "0x%x exceeds 24 bits", f.MSN)
	case info.Ext&ExtDETH != 0 && f.SrcQP > MaxQP:
		return 0, buildErr("deth.srcqp", "0x%x exceeds 24 bits", f.SrcQP)
	}
	n := FrameLen(f)
	l3 := ethLen(f)
	if n-l3 > 0xffff {
		return 0, buildErr("ipv4.total_length", "%d exceeds 65535", n-l3)
	}
	if len(buf) < n {
		return 0, buildErr("buffer", "%d bytes, frame needs %d", len(buf), n)
	}
	b := buf[:n]

	eth := Ethernet(b[:l3])
	eth.SetDst(f.DstMAC)
	eth.SetSrc(f.SrcMAC)
	if f.VLAN {
		eth.SetEtherType(EtherTypeVLAN)
		eth.SetTCI(f.VLANTCI)
		binary.BigEndian.PutUint16(eth[EthInnerTypeOff:], EtherTypeIPv4)
	} else {
		eth.SetEtherType(EtherTypeIPv4)
	}

	ip := IPv4(b[l3 : l3+IPv4MinLen])
	ip.SetVersionIHL(5)
	ip.SetTOS(f.TOS)
	ip.SetTotalLen(uint16(n - l3))
	ip.SetID(f.IPID)
	if f.DontFragment {
		ip.SetFlagsFrag(IPv4FlagDF)
	} else {
		ip.SetFlagsFrag(0)
	}
	ip.SetTTL(f.TTL)
	ip.SetProtocol(IPProtoUDP)
	ip.SetSrc(f.SrcIP)
	ip.SetDst(f.DstIP)
	ip.UpdateChecksum()

	l4 := l3 + IPv4MinLen
	udp := UDP(b[l4 : l4+UDPLen])
	udp.SetSrcPort(f.SrcPort)
	udp.SetDstPort(UDPPort)
	udp.SetLength(uint16(n - l4))
	udp.SetChecksum(0)

	off := l4 + UDPLen
	bth := BTH(b[off : off+BTHLen])
	bth[BTHOpcodeOff] = byte(f.Opcode)
	bth[BTHFlagsOff] = f.PadCnt<<4 | f.TVer
	bth.SetSE(f.SE)
	bth.SetMigReq(f.MigReq)
	bth.SetPKey(f.PKey)
	bth[BTHFBOff] = 0
	bth.SetFECN(f.FECN)
	bth.SetBECN(f.BECN)
	bth.SetDestQP(f.DestQP)
	bth[BTHAckPSNOff] = 0
	bth.SetPSN(f.PSN)
	bth.SetAckReq(f.AckReq)
	off += BTHLen

	ext := info.Ext
	if ext&ExtDETH != 0 {
		d := DETH(b[off : off+DETHLen])
		d.SetQKey(f.QKey)
		d.SetSrcQP(f.SrcQP)
		off += DETHLen
	}
	if ext&ExtRETH != 0 {
		r := RETH(b[off : off+RETHLen])
		r.SetVA(f.VA)
		r.SetRKey(f.RKey)
		r.SetDMALen(f.DMALen)
		off += RETHLen
	}
	if ext&ExtAtomicETH != 0 {
		a := AtomicETH(b[off : off+AtomicETHLen])
		a.SetVA(f.VA)
		a.SetRKey(f.RKey)
		a.SetSwapAdd(f.SwapAdd)
		a.SetCompare(f.Compare)
		off += AtomicETHLen
	}
	if ext&ExtAETH != 0 {
		a := AETH(b[off : off+AETHLen])
		a.SetSyndrome(f.Syndrome)
		a.SetMSN(f.MSN)
		off += AETHLen
	}
	if ext&ExtAtomicAckETH != 0 {
		AtomicAckETH(b[off : off+AtomicAckETHLen]).SetOrig(f.Orig)
		off += AtomicAckETHLen
	}
	if ext&ExtImmDt != 0 {
		ImmDt(b[off : off+ImmDtLen]).SetImm(f.Imm)
		off += ImmDtLen
	}
	if ext&ExtIETH != 0 {
		IETH(b[off : off+IETHLen]).SetRKey(f.RKey)
		off += IETHLen
	}
	off += copy(b[off:], f.Payload)
	for i := 0; i < int(f.PadCnt); i++ {
		b[off+i] = 0
	}
	off += int(f.PadCnt)
	crc := icrcOver(b[l3:off], IPv4MinLen)
	b[off] = byte(crc)
	b[off+1] = byte(crc >> 8)
	b[off+2] = byte(crc >> 16)
	b[off+3] = byte(crc >> 24)
	return n, nil
}

// FieldsOf returns the Fields that describe a parsed packet. Payload aliases
// the frame. Build(FieldsOf(p)) reproduces the frame exactly when it has a
// 20-byte IPv4 header, UDP checksum 0, zero pad bytes and zero reserved bits
// (all frames Build writes).
func FieldsOf(p *Packet) Fields {
	f := Fields{
		DstMAC:       p.Eth.Dst(),
		SrcMAC:       p.Eth.Src(),
		VLAN:         p.Eth.Tagged(),
		SrcIP:        p.IP.Src(),
		DstIP:        p.IP.Dst(),
		TOS:          p.IP.TOS(),
		IPID:         p.IP.ID(),
		DontFragment: p.IP.DF(),
		TTL:          p.IP.TTL(),
		SrcPort:      p.UDP.SrcPort(),
		Opcode:       p.Opcode,
		SE:           p.BTH.SE(),
		MigReq:       p.BTH.MigReq(),
		PadCnt:       p.BTH.PadCnt(),
		TVer:         p.BTH.TVer(),
		PKey:         p.BTH.PKey(),
		FECN:         p.BTH.FECN(),
		BECN:         p.BTH.BECN(),
		DestQP:       p.BTH.DestQP(),
		AckReq:       p.BTH.AckReq(),
		PSN:          p.BTH.PSN(),
		Payload:      p.Payload,
	}
	if f.VLAN {
		f.VLANTCI = p.Eth.TCI()
	}
	if p.DETH != nil {
		f.QKey, f.SrcQP = p.DETH.QKey(), p.DETH.SrcQP()
	}
	if p.RETH != nil {
		f.VA, f.RKey, f.DMALen = p.RETH.VA(), p.RETH.RKey(), p.RETH.DMALen()
	}
	if p.AtomicETH != nil {
		f.VA, f.RKey = p.AtomicETH.VA(), p.AtomicETH.RKey()
		f.SwapAdd, f.Compare = p.AtomicETH.SwapAdd(), p.AtomicETH.Compare()
	}
	if p.AETH != nil {
		f.Syndrome, f.MSN = p.AETH.Syndrome(), p.AETH.MSN()
	}
	if p.AtomicAckETH != nil {
		f.Orig = p.AtomicAckETH.Orig()
	}
	if p.ImmDt != nil {
		f.Imm = p.ImmDt.Imm()
	}
	if p.IETH != nil {
		f.RKey = p.IETH.RKey()
	}
	return f
}
