package roce

import (
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
// error, *p is left in an unspecified state.
func ParseInto(p *Packet, frame []byte) error {
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
