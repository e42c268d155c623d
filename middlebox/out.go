package middlebox

import (
	"encoding/binary"

	"github.com/swordbox/swordbox/roce"
)

// Side is one of the engine's two sides.
type Side uint8

// The two sides: clients (and everything else in the rack) and memory
// servers. A frame received on one side normally leaves on the other.
const (
	ClientSide Side = 0
	ServerSide Side = 1
)

func (s Side) String() string {
	if s == ClientSide {
		return "client"
	}
	return "server"
}

// Other is the opposite side.
func (s Side) Other() Side { return 1 - s }

// Out collects the frames the engine emits, in order. Generated frames are
// written into Out's own arena; a forwarded input frame is appended as the
// caller's slice (rewritten in place), marked in FromInput, so that a
// zero-copy I/O loop can send the received buffer itself.
//
// An Out is reused: Reset it between bursts. Nothing allocates after
// NewOut.
type Out struct {
	Frames    [][]byte
	Sides     []Side
	FromInput []bool
	arena     []byte
	used      int
}

// NewOut returns an Out for up to maxFrames frames and arenaBytes bytes of
// generated frames per burst.
func NewOut(maxFrames, arenaBytes int) *Out {
	return &Out{
		Frames:    make([][]byte, 0, maxFrames),
		Sides:     make([]Side, 0, maxFrames),
		FromInput: make([]bool, 0, maxFrames),
		arena:     make([]byte, arenaBytes),
	}
}

// Reset empties o.
func (o *Out) Reset() {
	o.Frames = o.Frames[:0]
	o.Sides = o.Sides[:0]
	o.FromInput = o.FromInput[:0]
	o.used = 0
}

// Len returns the number of frames in o.
func (o *Out) Len() int { return len(o.Frames) }

func (o *Out) full() bool { return len(o.Frames) == cap(o.Frames) }

func (o *Out) addInput(s Side, f []byte) bool {
	if o.full() {
		return false
	}
	o.Frames = append(o.Frames, f)
	o.Sides = append(o.Sides, s)
	o.FromInput = append(o.FromInput, true)
	return true
}

// alloc reserves n bytes of the arena for a generated frame to side s.
func (o *Out) alloc(s Side, n int) []byte {
	if o.full() || o.used+n > len(o.arena) {
		return nil
	}
	b := o.arena[o.used : o.used+n : o.used+n]
	o.used += n
	o.Frames = append(o.Frames, b)
	o.Sides = append(o.Sides, s)
	o.FromInput = append(o.FromInput, false)
	return b
}

// Offsets of the frames the engine generates (Ethernet, 20-byte IPv4, UDP,
// BTH, AETH, optional AtomicAckETH, ICRC).
const (
	genIP       = roce.EthernetLen
	genUDP      = genIP + roce.IPv4MinLen
	genBTH      = genUDP + roce.UDPLen
	genAETH     = genBTH + roce.BTHLen
	genAtomic   = genAETH + roce.AETHLen
	ackLen      = genAtomic + roce.ICRCLen
	atomicAckLn = genAtomic + roce.AtomicAckETHLen + roce.ICRCLen
)

// writeResponseHeaders fills Ethernet, IPv4, UDP and BTH of a frame from
// the server to client c.
func writeResponseHeaders(f []byte, c *conn, op roce.Opcode, psn roce.PSN) {
	eth := roce.Ethernet(f)
	eth.SetDst(c.cliMAC)
	eth.SetSrc(c.srvMAC)
	eth.SetEtherType(roce.EtherTypeIPv4)
	ip := roce.IPv4(f[genIP:genUDP])
	ip.SetVersionIHL(5)
	ip.SetTOS(0)
	ip.SetTotalLen(uint16(len(f) - genIP))
	ip.SetID(0)
	ip.SetFlagsFrag(roce.IPv4FlagDF)
	ip.SetTTL(64)
	ip.SetProtocol(roce.IPProtoUDP)
	ip.SetSrc(c.srvIP)
	ip.SetDst(c.cliIP)
	ip.UpdateChecksum()
	u := roce.UDP(f[genUDP:genBTH])
	sp := c.srvPort
	if sp == 0 {
		sp = roce.UDPPort
	}
	u.SetSrcPort(sp)
	u.SetDstPort(roce.UDPPort)
	u.SetLength(uint16(len(f) - genUDP))
	u.SetChecksum(0)
	b := roce.BTH(f[genBTH:genAETH])
	b[roce.BTHOpcodeOff] = byte(op)
	b[roce.BTHFlagsOff] = 0x40 // MigReq set, no pad, TVer 0
	b.SetPKey(c.pkey)
	b[roce.BTHFBOff] = 0
	b.SetDestQP(c.cliQP)
	binary.BigEndian.PutUint32(f[genBTH+roce.BTHAckPSNOff:], uint32(psn&roce.MaxPSN))
}

// ackTemplate is a prebuilt ACK and ATOMIC ACK towards one client, with
// PSN, syndrome, MSN and original value zero: an answer is the template
// with those bytes filled in and its ICRC computed (putICRC: on this
// 44- or 52-byte span a carry-less multiply is as fast as updating the
// template's ICRC by table lookups, and leaves the L1 cache alone).
type ackTemplate struct {
	ok     bool
	port   uint16
	ack    [ackLen]byte
	atomic [atomicAckLn]byte
}

func (e *Engine) template(c *conn) *ackTemplate {
	if t := &c.tmpl; t.ok && t.port == c.srvPort {
		return t // inlined: the usual case
	}
	return buildTemplate(c)
}

// buildTemplate (re)builds c's answer templates: the first answer, or the
// server's UDP source port changed.
func buildTemplate(c *conn) *ackTemplate {
	t := &c.tmpl
	writeResponseHeaders(t.ack[:], c, roce.OpRCAcknowledge, 0)
	writeResponseHeaders(t.atomic[:], c, roce.OpRCAtomicAcknowledge, 0)
	t.ok, t.port = true, c.srvPort
	return t
}

// putAnswer fills the PSN, syndrome and MSN of an answer copied from a
// template (whose PSN word's first byte is already zero).
func putAnswer(f []byte, psn roce.PSN, syn roce.Syndrome, msn uint32) {
	_ = f[genAETH+3]
	put24(f[genBTH+roce.BTHAckPSNOff+1:], uint32(psn))
	f[genAETH] = byte(syn)
	put24(f[genAETH+1:], msn)
}

// emitAck appends an ACK (or NAK: any syndrome) to client c.
func (e *Engine) emitAck(out *Out, c *conn, psn roce.PSN, syn roce.Syndrome, msn uint32) {
	f := out.alloc(ClientSide, ackLen)
	if f == nil {
		e.c.Drops[DropOutOverflow]++
		return
	}
	t := e.template(c)
	*(*[ackLen]byte)(f) = t.ack
	putAnswer(f, psn, syn, msn)
	putICRC(f, genIP, genAtomic, 0)
	e.c.TxClient++
	if syn.IsACK() {
		e.c.ACKsOut++
	} else {
		e.c.NAKsOut++
	}
}

// emitAtomicAck appends an ATOMIC ACK carrying orig to client c.
func (e *Engine) emitAtomicAck(out *Out, c *conn, psn roce.PSN, orig uint64, msn uint32) {
	f := out.alloc(ClientSide, atomicAckLn)
	if f == nil {
		e.c.Drops[DropOutOverflow]++
		return
	}
	t := e.template(c)
	*(*[atomicAckLn]byte)(f) = t.atomic
	putAnswer(f, psn, roce.ACKSyndrome(roce.CreditInvalid), msn)
	binary.BigEndian.PutUint64(f[genAtomic:], orig)
	end := genAtomic + roce.AtomicAckETHLen
	putICRC(f, genIP, end, 0)
	e.c.TxClient++
	e.c.AtomicACKsOut++
}

// retargetRequest rewrites a request in place (IPv4 header at l3, UDP at
// l4, BTH at bth) so that it travels on connection o: MACs, IPs, UDP
// source port, destination QP.
func retargetRequest(f []byte, l3, l4, bth int, o *conn) {
	eth, ip, udp, b := headers(f, l3, l4, bth)
	retargetRequestHdrs(eth, ip, udp, b, o)
}

// retargetRequestHdrs is retargetRequest on the headers themselves (from
// headers, or from xHeaders on the fast path, where the offsets are
// constants and the bounds are checked once).
func retargetRequestHdrs(eth *[roce.EthernetLen]byte, ip *[roce.IPv4MinLen]byte, udp *[roce.UDPLen]byte, b *[roce.BTHLen]byte, o *conn) {
	*(*[6]byte)(eth[roce.EthDstOff:]) = o.srvMAC
	*(*[6]byte)(eth[roce.EthSrcOff:]) = o.cliMAC
	*(*[4]byte)(ip[roce.IPv4SrcOff:]) = o.cliIP
	*(*[4]byte)(ip[roce.IPv4DstOff:]) = o.srvIP
	binary.BigEndian.PutUint16(udp[roce.UDPSrcPortOff:], o.cliPort)
	udp[roce.UDPChecksumOff], udp[roce.UDPChecksumOff+1] = 0, 0
	put24(b[roce.BTHDestQPOff:], o.srvQP)
}

// headers returns the Ethernet, IPv4 (the first 20 bytes), UDP and BT
// headers of f, at the offsets given, as arrays: the bounds are checked
// once here, not at every field.
func headers(f []byte, l3, l4, bth int) (*[roce.EthernetLen]byte, *[roce.IPv4MinLen]byte, *[roce.UDPLen]byte, *[roce.BTHLen]byte) {
	return (*[roce.EthernetLen]byte)(f), (*[roce.IPv4MinLen]byte)(f[l3:]), (*[roce.UDPLen]byte)(f[l4:]), (*[roce.BTHLen]byte)(f[bth:])
}

// retargetResponse rewrites a response in place (IPv4 header at l3, UDP at
// l4, BTH at bth) so that it reaches client c as if its own connection had
// carried it.
func retargetResponse(f []byte, l3, l4, bth int, c *conn) {
	eth, ip, udp, b := headers(f, l3, l4, bth)
	*(*[6]byte)(eth[roce.EthDstOff:]) = c.cliMAC
	*(*[6]byte)(eth[roce.EthSrcOff:]) = c.srvMAC
	*(*[4]byte)(ip[roce.IPv4SrcOff:]) = c.srvIP
	*(*[4]byte)(ip[roce.IPv4DstOff:]) = c.cliIP
	udp[roce.UDPChecksumOff], udp[roce.UDPChecksumOff+1] = 0, 0
	put24(b[roce.BTHDestQPOff:], c.cliQP)
}

// casToWrite rewrites a parsed CMP_SWAP or FETCH_ADD in place into an RDMA
// WRITE_ONLY storing v (roce.Packet.AtomicToWriteStale) and returns the
// frame, 4 bytes shorter. The caller fixes the IPv4 checksum and the ICRC.
func casToWrite(p *roce.Packet, v uint64) []byte {
	_ = p.AtomicToWriteStale(v) // cannot fail: the caller checked the opcode
	return p.Frame
}
