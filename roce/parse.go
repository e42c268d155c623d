package roce

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrNotRoCE is matched (errors.Is) by the errors Parse returns for frames
// that are not RoCEv2 at all (another EtherType, IP protocol or UDP port).
// Such errors are preallocated, so skipping foreign traffic does not allocate.
var ErrNotRoCE = errors.New("roce: not a RoCEv2 frame")

// ParseError reports a truncated or malformed field. Field names the
// header and field, e.g. "ipv4.total_length", "reth" (truncated header) or
// "bth.padcnt".
type ParseError struct {
	Field   string
	Reason  string
	notRoCE bool
}

func (e *ParseError) Error() string { return "roce: " + e.Field + ": " + e.Reason }

// Is makes errors.Is(err, ErrNotRoCE) true for frames that are not RoCEv2.
func (e *ParseError) Is(target error) bool { return target == ErrNotRoCE && e.notRoCE }

// NotRoCE reports whether the error means the frame is not RoCEv2 at all
// (rather than a malformed RoCEv2 frame).
func (e *ParseError) NotRoCE() bool { return e.notRoCE }

var (
	errEtherType = &ParseError{Field: "ethernet.ethertype", Reason: "not IPv4", notRoCE: true}
	errVLANType  = &ParseError{Field: "vlan.ethertype", Reason: "not IPv4", notRoCE: true}
	errProto     = &ParseError{Field: "ipv4.protocol", Reason: "not UDP", notRoCE: true}
	errFragment  = &ParseError{Field: "ipv4.fragment_offset", Reason: "non-first fragment", notRoCE: true}
	errPort      = &ParseError{Field: "udp.dst_port", Reason: "not 4791", notRoCE: true}
)

func malformed(field, format string, args ...any) error {
	return &ParseError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Packet locates every header of a parsed RoCEv2 frame. The views alias the
// frame: setters write through to it. Absent extension headers are nil.
type Packet struct {
	Frame []byte // the frame as given to Parse

	Eth Ethernet
	IP  IPv4 // header only (IHL*4 bytes)
	UDP UDP
	BTH BTH

	Opcode       Opcode
	DETH         DETH
	RETH         RETH
	AtomicETH    AtomicETH
	AETH         AETH
	AtomicAckETH AtomicAckETH
	ImmDt        ImmDt
	IETH         IETH

	Payload []byte // payload without pad bytes
	Pad     []byte // PadCnt pad bytes
	ICRC    []byte // the 4 ICRC bytes
	Trailer []byte // bytes after the IPv4 packet (Ethernet padding), usually empty

	// Offsets into Frame.
	L3Off      int // IPv4 header
	L4Off      int // UDP header
	BTHOff     int
	ExtOff     int // first extension header (== PayloadOff if none)
	PayloadOff int
	ICRCOff    int
	End        int // end of the IPv4 packet (ICRCOff + 4)
}

// Parse parses a RoCEv2 frame (Ethernet, IPv4, UDP port 4791). It does not
// allocate on success or for frames that are not RoCEv2.
func Parse(frame []byte) (Packet, error) {
	var p Packet
	err := ParseInto(&p, frame)
	return p, err
}

// ParseInto is Parse into a caller's Packet (cheaper on hot paths). On
// error, *p is left in an unspecified state, except that it never shows a
// header of a frame parsed before: every field is overwritten.
//
// The common frame (untagged Ethernet, IPv4 without options or fragments,
// UDP port 4791, supported opcode, consistent lengths) takes a fast path
// that checks the fixed offsets at once and writes each field of *p once
// (an absent extension header only when it is not nil already), without
// zeroing *p first; every other frame, and every error, goes through the
// field-by-field path (parseSlow), which produces the error messages. The
// fast path accepts a subset of the frames parseSlow accepts and leaves
// the same Packet for them (TestParseDifferential*).
func ParseInto(p *Packet, frame []byte) error {
	end, ok := FixedLayout(frame)
	if !ok {
		return parseSlow(p, frame)
	}
	_ = frame[fastMinLen-1] // one bounds check for every fixed offset below
	bthFlags := frame[fastBTHOff+BTHFlagsOff]
	op := Opcode(frame[fastBTHOff+BTHOpcodeOff])
	l := &extLayouts[op]
	icrc := end - ICRCLen
	off := fastExtOff + int(l.extLen)
	plen := icrc - off
	pad := int(bthFlags >> 4 & 3)
	if !l.known || plen < 0 || (plen != 0 && !l.payload) || pad > plen {
		return parseSlow(p, frame)
	}
	// *p is on the heap in the callers that matter: the cost is in the
	// number of stores, so absent headers are stored only if not nil.
	p.Frame = frame
	p.Eth = Ethernet(frame[:EthernetLen])
	p.IP = IPv4(frame[EthernetLen:fastL4Off])
	p.UDP = UDP(frame[fastL4Off:fastBTHOff])
	p.BTH = BTH(frame[fastBTHOff:fastExtOff])
	p.Opcode = op
	if o := fastExtOff + int(l.reth); l.reth != extAbsent {
		p.RETH = RETH(frame[o : o+RETHLen])
	} else if p.RETH != nil {
		p.RETH = nil
	}
	if o := fastExtOff + int(l.atomic); l.atomic != extAbsent {
		p.AtomicETH = AtomicETH(frame[o : o+AtomicETHLen])
	} else if p.AtomicETH != nil {
		p.AtomicETH = nil
	}
	if o := fastExtOff + int(l.aeth); l.aeth != extAbsent {
		p.AETH = AETH(frame[o : o+AETHLen])
	} else if p.AETH != nil {
		p.AETH = nil
	}
	// DETH, AtomicAckETH, ImmDt and IETH are the less frequent headers (UD,
	// ATOMIC ACK, the _IMM and _INV opcodes): one test skips all four when
	// the opcode has none and no earlier frame left one set.
	if l.rare || p.DETH != nil || p.AtomicAckETH != nil || p.ImmDt != nil || p.IETH != nil {
		if o := fastExtOff + int(l.deth); l.deth != extAbsent {
			p.DETH = DETH(frame[o : o+DETHLen])
		} else if p.DETH != nil {
			p.DETH = nil
		}
		if o := fastExtOff + int(l.atomicAck); l.atomicAck != extAbsent {
			p.AtomicAckETH = AtomicAckETH(frame[o : o+AtomicAckETHLen])
		} else if p.AtomicAckETH != nil {
			p.AtomicAckETH = nil
		}
		if o := fastExtOff + int(l.immDt); l.immDt != extAbsent {
			p.ImmDt = ImmDt(frame[o : o+ImmDtLen])
		} else if p.ImmDt != nil {
			p.ImmDt = nil
		}
		if o := fastExtOff + int(l.ieth); l.ieth != extAbsent {
			p.IETH = IETH(frame[o : o+IETHLen])
		} else if p.IETH != nil {
			p.IETH = nil
		}
	}
	p.Payload = frame[off : icrc-pad]
	p.Pad = frame[icrc-pad : icrc]
	p.ICRC = frame[icrc:end]
	p.Trailer = frame[end:]
	p.L3Off = EthernetLen
	p.L4Off = fastL4Off
	p.BTHOff = fastBTHOff
	p.ExtOff = fastExtOff
	p.PayloadOff = off
	p.ICRCOff = icrc
	p.End = end
	return nil
}

// FixedLayout reports whether frame has the layout of ParseInto's fast
// path: untagged Ethernet, IPv4 without options or fragments, UDP to port
// 4791, IPv4 and UDP lengths that agree and leave room for the BTH and the
// ICRC; and returns the end of its IPv4 packet. It checks neither the
// opcode nor what follows the BTH: data paths that work at fixed offsets
// (the middlebox's) check those themselves.
func FixedLayout(frame []byte) (end int, ok bool) {
	if len(frame) < fastMinLen {
		return 0, false
	}
	_ = frame[fastMinLen-1] // one bounds check for every fixed offset below
	be := binary.BigEndian
	if be.Uint16(frame[EthTypeOff:]) != EtherTypeIPv4 ||
		frame[EthernetLen+IPv4VersionIHLOff] != 0x45 || // version 4, IHL 20
		frame[EthernetLen+IPv4ProtocolOff] != IPProtoUDP ||
		be.Uint16(frame[EthernetLen+IPv4FlagsFragOff:])&(IPv4FlagMF|IPv4FragOffMask) != 0 ||
		be.Uint16(frame[fastL4Off+UDPDstPortOff:]) != UDPPort {
		return 0, false
	}
	total := int(be.Uint16(frame[EthernetLen+IPv4TotalLenOff:]))
	end = EthernetLen + total
	if total < IPv4MinLen+UDPLen+BTHLen+ICRCLen || end > len(frame) ||
		int(be.Uint16(frame[fastL4Off+UDPLengthOff:])) != total-IPv4MinLen {
		return 0, false
	}
	return end, true
}

// Fast-path layout: untagged Ethernet, 20-byte IPv4 header, UDP, BTH.
const (
	fastL4Off  = EthernetLen + IPv4MinLen // 34
	fastBTHOff = fastL4Off + UDPLen       // 42
	fastExtOff = fastBTHOff + BTHLen      // 54
	fastMinLen = fastExtOff + ICRCLen     // 58: no extension header, no payload
)

// extAbsent marks an extension header the opcode does not carry.
const extAbsent = 0xff

// extLayout is an opcode's extension-header layout for the fast path: each
// header's offset from the first extension header (extAbsent when absent)
// and their total length. Built from opTable by init, in the order
// parseSlow lays the headers out.
type extLayout struct {
	deth, reth, atomic, aeth, atomicAck, immDt, ieth uint8
	extLen                                           uint8
	known, payload                                   bool
	rare                                             bool // DETH, AtomicAckETH, ImmDt or IETH
}

var extLayouts [256]extLayout

// init runs after opcode.go's init has filled opTable (files initialise in
// name order); TestExtLayouts checks the table against opTable.
func init() {
	for i := range extLayouts {
		info := opTable[i]
		l := extLayout{known: info.Known, payload: info.Payload}
		off := 0
		at := func(e Ext, n int) uint8 {
			if info.Ext&e == 0 {
				return extAbsent
			}
			o := off
			off += n
			return uint8(o)
		}
		l.deth = at(ExtDETH, DETHLen)
		l.reth = at(ExtRETH, RETHLen)
		l.atomic = at(ExtAtomicETH, AtomicETHLen)
		l.aeth = at(ExtAETH, AETHLen)
		l.atomicAck = at(ExtAtomicAckETH, AtomicAckETHLen)
		l.immDt = at(ExtImmDt, ImmDtLen)
		l.ieth = at(ExtIETH, IETHLen)
		l.extLen = uint8(off)
		l.rare = info.Ext&(ExtDETH|ExtAtomicAckETH|ExtImmDt|ExtIETH) != 0
		extLayouts[i] = l
	}
}

// parseSlow is the field-by-field parse: every frame the fast path does
// not take, and every error with its message.
func parseSlow(p *Packet, frame []byte) error {
	*p = Packet{Frame: frame}
	if len(frame) < EthernetLen {
		return malformed("ethernet", "truncated: %d bytes, need %d", len(frame), EthernetLen)
	}
	l3 := EthernetLen
	switch Ethernet(frame).EtherType() {
	case EtherTypeIPv4:
	case EtherTypeVLAN:
		if len(frame) < EthernetLen+VLANTagLen {
			return malformed("vlan", "truncated: %d bytes, need %d", len(frame), EthernetLen+VLANTagLen)
		}
		if Ethernet(frame).PayloadType() != EtherTypeIPv4 {
			return errVLANType
		}
		l3 += VLANTagLen
	default:
		return errEtherType
	}
	p.Eth = Ethernet(frame[:l3])
	p.L3Off = l3
	rest := len(frame) - l3
	if rest > IPv4ProtocolOff && frame[l3+IPv4ProtocolOff] != IPProtoUDP {
		return errProto // even when truncated: not ours
	}
	if rest < IPv4MinLen {
		return malformed("ipv4", "truncated: %d bytes, need %d", rest, IPv4MinLen)
	}
	ip := IPv4(frame[l3:])
	if v := ip.Version(); v != 4 {
		return malformed("ipv4.version", "%d, want 4", v)
	}
	ihl := ip.HeaderLen()
	if ihl < IPv4MinLen {
		return malformed("ipv4.ihl", "%d bytes, below %d", ihl, IPv4MinLen)
	}
	if rest < ihl {
		return malformed("ipv4", "truncated: %d bytes, IHL says %d", rest, ihl)
	}
	p.IP = IPv4(frame[l3 : l3+ihl])
	ff := p.IP.FlagsFrag()
	if ff&IPv4FragOffMask != 0 {
		return errFragment
	}
	total := int(p.IP.TotalLen())
	if total < ihl+UDPLen {
		return malformed("ipv4.total_length", "%d, below IHL %d + UDP %d", total, ihl, UDPLen)
	}
	if total > rest {
		if rest >= ihl+UDPLen && UDP(frame[l3+ihl:]).DstPort() != UDPPort {
			return errPort
		}
		return malformed("ipv4.total_length", "%d exceeds the %d bytes after Ethernet", total, rest)
	}
	l4 := l3 + ihl
	p.L4Off = l4
	p.UDP = UDP(frame[l4 : l4+UDPLen])
	if p.UDP.DstPort() != UDPPort {
		return errPort
	}
	if ff&IPv4FlagMF != 0 {
		return malformed("ipv4.flags", "fragmented RoCEv2 packet (MF set)")
	}
	end := l3 + total
	p.End = end
	if ul := int(p.UDP.Length()); ul != total-ihl {
		return malformed("udp.length", "%d, IPv4 says %d", ul, total-ihl)
	}
	bo := l4 + UDPLen
	p.BTHOff = bo
	if end-bo < BTHLen+ICRCLen {
		return malformed("bth", "truncated: %d bytes after UDP, need %d for BTH and ICRC", end-bo, BTHLen+ICRCLen)
	}
	p.BTH = BTH(frame[bo : bo+BTHLen])
	op := p.BTH.Opcode()
	p.Opcode = op
	info := opTable[op]
	if !info.Known {
		return malformed("bth.opcode", "unsupported opcode 0x%02x", uint8(op))
	}
	icrc := end - ICRCLen
	off := bo + BTHLen
	p.ExtOff = off
	ext := info.Ext
	if ext&ExtDETH != 0 {
		if icrc-off < DETHLen {
			return extTruncated("deth", icrc-off, DETHLen)
		}
		p.DETH = DETH(frame[off : off+DETHLen])
		off += DETHLen
	}
	if ext&ExtRETH != 0 {
		if icrc-off < RETHLen {
			return extTruncated("reth", icrc-off, RETHLen)
		}
		p.RETH = RETH(frame[off : off+RETHLen])
		off += RETHLen
	}
	if ext&ExtAtomicETH != 0 {
		if icrc-off < AtomicETHLen {
			return extTruncated("atomiceth", icrc-off, AtomicETHLen)
		}
		p.AtomicETH = AtomicETH(frame[off : off+AtomicETHLen])
		off += AtomicETHLen
	}
	if ext&ExtAETH != 0 {
		if icrc-off < AETHLen {
			return extTruncated("aeth", icrc-off, AETHLen)
		}
		p.AETH = AETH(frame[off : off+AETHLen])
		off += AETHLen
	}
	if ext&ExtAtomicAckETH != 0 {
		if icrc-off < AtomicAckETHLen {
			return extTruncated("atomicacketh", icrc-off, AtomicAckETHLen)
		}
		p.AtomicAckETH = AtomicAckETH(frame[off : off+AtomicAckETHLen])
		off += AtomicAckETHLen
	}
	if ext&ExtImmDt != 0 {
		if icrc-off < ImmDtLen {
			return extTruncated("immdt", icrc-off, ImmDtLen)
		}
		p.ImmDt = ImmDt(frame[off : off+ImmDtLen])
		off += ImmDtLen
	}
	if ext&ExtIETH != 0 {
		if icrc-off < IETHLen {
			return extTruncated("ieth", icrc-off, IETHLen)
		}
		p.IETH = IETH(frame[off : off+IETHLen])
		off += IETHLen
	}
	p.PayloadOff = off
	plen := icrc - off
	if !info.Payload && plen != 0 {
		return malformed("payload", "%s carries no payload, found %d bytes", info.Name, plen)
	}
	pad := int(p.BTH.PadCnt())
	if pad > plen {
		return malformed("bth.padcnt", "%d exceeds the %d-byte payload", pad, plen)
	}
	p.Payload = frame[off : icrc-pad]
	p.Pad = frame[icrc-pad : icrc]
	p.ICRCOff = icrc
	p.ICRC = frame[icrc:end]
	p.Trailer = frame[end:]
	return nil
}

func extTruncated(field string, have, need int) error {
	return malformed(field, "truncated: %d bytes before the ICRC, need %d", have, need)
}
