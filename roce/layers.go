package roce

import (
	"encoding/binary"
	"fmt"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// gopacket layers for RoCEv2. Importing this package registers LayerTypeBTH
// on UDP port 4791, so gopacket.NewPacket decodes RoCEv2 frames into
// BTHLayer, the extension header layers and a gopacket.Payload.
//
// The BTH layer owns the end of the packet: its LayerPayload excludes the
// pad bytes (Pad) and the ICRC (ICRC), so the layers after it see exactly the
// extension headers and the payload. The BTH opcode decides which extension
// headers follow; an extension header cannot tell on its own whether another
// one follows it (RETH is followed by ImmDt only in WRITE_ONLY_IMM, AETH by
// AtomicAckETH only in ATOMIC_ACK, DETH by ImmDt only in UD SEND_ONLY_IMM).
// Therefore each extension layer has a BTH field linking it to the BTH layer
// decoded before it; gopacket.NewPacket links them itself, and LayerSet
// gives a linked set for gopacket.DecodingLayerParser. An unlinked extension
// layer treats whatever follows it as payload.

// Layer type numbers (chosen to be unlikely to collide: 4791 * 10 + n).
const layerTypeBase = 47910

// Layer types.
var (
	LayerTypeBTH          = gopacket.RegisterLayerType(layerTypeBase+0, gopacket.LayerTypeMetadata{Name: "RoCEv2 BTH", Decoder: gopacket.DecodeFunc(decodeBTH)})
	LayerTypeDETH         = gopacket.RegisterLayerType(layerTypeBase+1, gopacket.LayerTypeMetadata{Name: "RoCEv2 DETH", Decoder: decodeExt(func() extLayer { return &DETHLayer{} })})
	LayerTypeRETH         = gopacket.RegisterLayerType(layerTypeBase+2, gopacket.LayerTypeMetadata{Name: "RoCEv2 RETH", Decoder: decodeExt(func() extLayer { return &RETHLayer{} })})
	LayerTypeAtomicETH    = gopacket.RegisterLayerType(layerTypeBase+3, gopacket.LayerTypeMetadata{Name: "RoCEv2 AtomicETH", Decoder: decodeExt(func() extLayer { return &AtomicETHLayer{} })})
	LayerTypeAETH         = gopacket.RegisterLayerType(layerTypeBase+4, gopacket.LayerTypeMetadata{Name: "RoCEv2 AETH", Decoder: decodeExt(func() extLayer { return &AETHLayer{} })})
	LayerTypeAtomicAckETH = gopacket.RegisterLayerType(layerTypeBase+5, gopacket.LayerTypeMetadata{Name: "RoCEv2 AtomicAckETH", Decoder: decodeExt(func() extLayer { return &AtomicAckETHLayer{} })})
	LayerTypeImmDt        = gopacket.RegisterLayerType(layerTypeBase+6, gopacket.LayerTypeMetadata{Name: "RoCEv2 ImmDt", Decoder: decodeExt(func() extLayer { return &ImmDtLayer{} })})
	LayerTypeIETH         = gopacket.RegisterLayerType(layerTypeBase+7, gopacket.LayerTypeMetadata{Name: "RoCEv2 IETH", Decoder: decodeExt(func() extLayer { return &IETHLayer{} })})
)

func init() {
	layers.RegisterUDPPortLayerType(UDPPort, LayerTypeBTH)
}

// extLayerType maps an extension header to its layer type.
func extLayerType(x Ext) gopacket.LayerType {
	switch x {
	case ExtDETH:
		return LayerTypeDETH
	case ExtRETH:
		return LayerTypeRETH
	case ExtAtomicETH:
		return LayerTypeAtomicETH
	case ExtAETH:
		return LayerTypeAETH
	case ExtAtomicAckETH:
		return LayerTypeAtomicAckETH
	case ExtImmDt:
		return LayerTypeImmDt
	case ExtIETH:
		return LayerTypeIETH
	}
	return gopacket.LayerTypeZero
}

// nextAfter returns the layer type that follows extension header x (0: the
// BTH itself) in a packet with the given BTH, or, without a BTH, the payload
// if any bytes remain.
func nextAfter(bth *BTHLayer, x Ext, rest []byte) gopacket.LayerType {
	if bth != nil {
		later := bth.Opcode.Ext() &^ (x<<1 - 1) // headers after x in wire order
		if x == 0 {
			later = bth.Opcode.Ext()
		}
		for _, y := range ExtOrder {
			if later&y != 0 {
				return extLayerType(y)
			}
		}
	}
	if len(rest) > 0 {
		return gopacket.LayerTypePayload
	}
	return gopacket.LayerTypeZero
}

func layerErr(df gopacket.DecodeFeedback, field string, have, need int) error {
	df.SetTruncated()
	return fmt.Errorf("roce: %s: truncated: %d bytes, need %d", field, have, need)
}

// BTHLayer is the gopacket layer of the Base Transport Header. Its payload
// is everything between the BTH and the pad bytes.
type BTHLayer struct {
	layers.BaseLayer
	Opcode Opcode
	SE     bool
	MigReq bool
	PadCnt uint8
	TVer   uint8
	PKey   uint16
	FECN   bool
	BECN   bool
	DestQP uint32
	AckReq bool
	PSN    uint32
	// Pad holds the PadCnt pad bytes (decoding); ICRC is the trailing ICRC
	// read little-endian (see Packet.StoredICRC).
	Pad  []byte
	ICRC uint32
}

// LayerType returns LayerTypeBTH.
func (b *BTHLayer) LayerType() gopacket.LayerType { return LayerTypeBTH }

// CanDecode returns LayerTypeBTH.
func (b *BTHLayer) CanDecode() gopacket.LayerClass { return LayerTypeBTH }

// NextLayerType returns the first extension header's type, or the payload.
func (b *BTHLayer) NextLayerType() gopacket.LayerType { return nextAfter(b, 0, b.Payload) }

// DecodeFromBytes decodes a UDP payload: BTH, the rest, pad and ICRC.
func (b *BTHLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < BTHLen+ICRCLen {
		return layerErr(df, "bth", len(data), BTHLen+ICRCLen)
	}
	h := BTH(data[:BTHLen])
	op := h.Opcode()
	if !op.Known() {
		return fmt.Errorf("roce: bth.opcode: unsupported opcode 0x%02x", uint8(op))
	}
	*b = BTHLayer{
		Opcode: op, SE: h.SE(), MigReq: h.MigReq(), PadCnt: h.PadCnt(), TVer: h.TVer(),
		PKey: h.PKey(), FECN: h.FECN(), BECN: h.BECN(), DestQP: h.DestQP(), AckReq: h.AckReq(), PSN: h.PSN(),
	}
	end := len(data) - ICRCLen
	rest := end - BTHLen
	if ext := op.Ext().Len(); rest < ext {
		return layerErr(df, "bth", rest, ext) // the extension headers of the opcode do not fit
	}
	if int(b.PadCnt) > rest-op.Ext().Len() {
		return fmt.Errorf("roce: bth.padcnt: %d exceeds the %d-byte payload", b.PadCnt, rest-op.Ext().Len())
	}
	b.ICRC = binary.LittleEndian.Uint32(data[end:])
	b.Pad = data[end-int(b.PadCnt) : end]
	b.Contents = data[:BTHLen]
	b.Payload = data[BTHLen : end-int(b.PadCnt)]
	return nil
}

// SerializeTo prepends the BTH and appends the pad bytes and the ICRC field.
// With opts.FixLengths, PadCnt is set to pad what follows the BTH to a
// multiple of 4. The ICRC is written as given: use SerializeLayers to
// compute it.
func (b *BTHLayer) SerializeTo(buf gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	if opts.FixLengths {
		b.PadCnt = uint8((4 - len(buf.Bytes())%4) % 4)
	}
	if b.PadCnt > 3 || b.TVer > 15 || b.DestQP > MaxQP || b.PSN > MaxPSN {
		return fmt.Errorf("roce: bth: field out of range (padcnt %d, tver %d, destqp %#x, psn %#x)", b.PadCnt, b.TVer, b.DestQP, b.PSN)
	}
	tail, err := buf.AppendBytes(int(b.PadCnt) + ICRCLen)
	if err != nil {
		return err
	}
	for i := 0; i < int(b.PadCnt); i++ {
		tail[i] = 0
	}
	binary.LittleEndian.PutUint32(tail[b.PadCnt:], b.ICRC)
	p, err := buf.PrependBytes(BTHLen)
	if err != nil {
		return err
	}
	h := BTH(p)
	h[BTHOpcodeOff] = byte(b.Opcode)
	h[BTHFlagsOff] = b.PadCnt<<4 | b.TVer
	h.SetSE(b.SE)
	h.SetMigReq(b.MigReq)
	h.SetPKey(b.PKey)
	h[BTHFBOff] = 0
	h.SetFECN(b.FECN)
	h.SetBECN(b.BECN)
	h.SetDestQP(b.DestQP)
	h[BTHAckPSNOff] = 0
	h.SetPSN(b.PSN)
	h.SetAckReq(b.AckReq)
	return nil
}

type extLayer interface {
	gopacket.DecodingLayer
	gopacket.Layer
	link(*BTHLayer)
}

func decodeExt(newLayer func() extLayer) gopacket.Decoder {
	return gopacket.DecodeFunc(func(data []byte, p gopacket.PacketBuilder) error {
		l := newLayer()
		if err := l.DecodeFromBytes(data, p); err != nil {
			return err
		}
		p.AddLayer(l)
		return p.NextDecoder(l.NextLayerType())
	})
}

func decodeBTH(data []byte, p gopacket.PacketBuilder) error {
	bth := &BTHLayer{}
	if err := bth.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(bth)
	rest := bth.Payload
	ext := bth.Opcode.Ext()
	for _, x := range ExtOrder {
		if ext&x == 0 {
			continue
		}
		l := newExtLayer(x)
		l.link(bth)
		if err := l.DecodeFromBytes(rest, p); err != nil {
			return err
		}
		p.AddLayer(l)
		rest = l.LayerPayload()
	}
	if len(rest) == 0 {
		return nil
	}
	return p.NextDecoder(gopacket.LayerTypePayload)
}

func newExtLayer(x Ext) extLayer {
	switch x {
	case ExtDETH:
		return &DETHLayer{}
	case ExtRETH:
		return &RETHLayer{}
	case ExtAtomicETH:
		return &AtomicETHLayer{}
	case ExtAETH:
		return &AETHLayer{}
	case ExtAtomicAckETH:
		return &AtomicAckETHLayer{}
	case ExtImmDt:
		return &ImmDtLayer{}
	}
	return &IETHLayer{}
}

// RETHLayer is the gopacket layer of the RDMA Extended Transport Header.
type RETHLayer struct {
	layers.BaseLayer
	VA     uint64
	RKey   uint32
	DMALen uint32
	// BTH links the layer to the packet's BTH layer (see the package notes).
	BTH *BTHLayer
}

func (l *RETHLayer) link(b *BTHLayer) { l.BTH = b }

// LayerType returns LayerTypeRETH.
func (l *RETHLayer) LayerType() gopacket.LayerType { return LayerTypeRETH }

// CanDecode returns LayerTypeRETH.
func (l *RETHLayer) CanDecode() gopacket.LayerClass { return LayerTypeRETH }

// NextLayerType returns ImmDt in WRITE_ONLY_IMM, otherwise the payload.
func (l *RETHLayer) NextLayerType() gopacket.LayerType { return nextAfter(l.BTH, ExtRETH, l.Payload) }

// DecodeFromBytes decodes a RETH.
func (l *RETHLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < RETHLen {
		return layerErr(df, "reth", len(data), RETHLen)
	}
	r := RETH(data)
	l.VA, l.RKey, l.DMALen = r.VA(), r.RKey(), r.DMALen()
	l.Contents, l.Payload = data[:RETHLen], data[RETHLen:]
	return nil
}

// SerializeTo prepends the RETH.
func (l *RETHLayer) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	p, err := b.PrependBytes(RETHLen)
	if err != nil {
		return err
	}
	r := RETH(p)
	r.SetVA(l.VA)
	r.SetRKey(l.RKey)
	r.SetDMALen(l.DMALen)
	return nil
}

// AtomicETHLayer is the gopacket layer of the Atomic Extended Transport Header.
type AtomicETHLayer struct {
	layers.BaseLayer
	VA      uint64
	RKey    uint32
	SwapAdd uint64
	Compare uint64
	BTH     *BTHLayer
}

func (l *AtomicETHLayer) link(b *BTHLayer) { l.BTH = b }

// LayerType returns LayerTypeAtomicETH.
func (l *AtomicETHLayer) LayerType() gopacket.LayerType { return LayerTypeAtomicETH }

// CanDecode returns LayerTypeAtomicETH.
func (l *AtomicETHLayer) CanDecode() gopacket.LayerClass { return LayerTypeAtomicETH }

// NextLayerType returns the payload if any bytes follow (malformed atomics).
func (l *AtomicETHLayer) NextLayerType() gopacket.LayerType {
	return nextAfter(l.BTH, ExtAtomicETH, l.Payload)
}

// DecodeFromBytes decodes an AtomicETH.
func (l *AtomicETHLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < AtomicETHLen {
		return layerErr(df, "atomiceth", len(data), AtomicETHLen)
	}
	a := AtomicETH(data)
	l.VA, l.RKey, l.SwapAdd, l.Compare = a.VA(), a.RKey(), a.SwapAdd(), a.Compare()
	l.Contents, l.Payload = data[:AtomicETHLen], data[AtomicETHLen:]
	return nil
}

// SerializeTo prepends the AtomicETH.
func (l *AtomicETHLayer) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	p, err := b.PrependBytes(AtomicETHLen)
	if err != nil {
		return err
	}
	a := AtomicETH(p)
	a.SetVA(l.VA)
	a.SetRKey(l.RKey)
	a.SetSwapAdd(l.SwapAdd)
	a.SetCompare(l.Compare)
	return nil
}

// AETHLayer is the gopacket layer of the ACK Extended Transport Header.
type AETHLayer struct {
	layers.BaseLayer
	Syndrome Syndrome
	MSN      uint32
	BTH      *BTHLayer
}

func (l *AETHLayer) link(b *BTHLayer) { l.BTH = b }

// LayerType returns LayerTypeAETH.
func (l *AETHLayer) LayerType() gopacket.LayerType { return LayerTypeAETH }

// CanDecode returns LayerTypeAETH.
func (l *AETHLayer) CanDecode() gopacket.LayerClass { return LayerTypeAETH }

// NextLayerType returns AtomicAckETH in ATOMIC_ACK, otherwise the payload.
func (l *AETHLayer) NextLayerType() gopacket.LayerType { return nextAfter(l.BTH, ExtAETH, l.Payload) }

// DecodeFromBytes decodes an AETH.
func (l *AETHLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < AETHLen {
		return layerErr(df, "aeth", len(data), AETHLen)
	}
	a := AETH(data)
	l.Syndrome, l.MSN = a.Syndrome(), a.MSN()
	l.Contents, l.Payload = data[:AETHLen], data[AETHLen:]
	return nil
}

// SerializeTo prepends the AETH.
func (l *AETHLayer) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	if l.MSN > 1<<24-1 {
		return fmt.Errorf("roce: aeth.msn: %#x exceeds 24 bits", l.MSN)
	}
	p, err := b.PrependBytes(AETHLen)
	if err != nil {
		return err
	}
	a := AETH(p)
	a.SetSyndrome(l.Syndrome)
	a.SetMSN(l.MSN)
	return nil
}

// AtomicAckETHLayer is the gopacket layer of the Atomic ACK Extended
// Transport Header.
type AtomicAckETHLayer struct {
	layers.BaseLayer
	Orig uint64
	BTH  *BTHLayer
}

func (l *AtomicAckETHLayer) link(b *BTHLayer) { l.BTH = b }

// LayerType returns LayerTypeAtomicAckETH.
func (l *AtomicAckETHLayer) LayerType() gopacket.LayerType { return LayerTypeAtomicAckETH }

// CanDecode returns LayerTypeAtomicAckETH.
func (l *AtomicAckETHLayer) CanDecode() gopacket.LayerClass { return LayerTypeAtomicAckETH }

// NextLayerType returns the payload if any bytes follow.
func (l *AtomicAckETHLayer) NextLayerType() gopacket.LayerType {
	return nextAfter(l.BTH, ExtAtomicAckETH, l.Payload)
}

// DecodeFromBytes decodes an AtomicAckETH.
func (l *AtomicAckETHLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < AtomicAckETHLen {
		return layerErr(df, "atomicacketh", len(data), AtomicAckETHLen)
	}
	l.Orig = AtomicAckETH(data).Orig()
	l.Contents, l.Payload = data[:AtomicAckETHLen], data[AtomicAckETHLen:]
	return nil
}

// SerializeTo prepends the AtomicAckETH.
func (l *AtomicAckETHLayer) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	p, err := b.PrependBytes(AtomicAckETHLen)
	if err != nil {
		return err
	}
	AtomicAckETH(p).SetOrig(l.Orig)
	return nil
}

// ImmDtLayer is the gopacket layer of the Immediate Data header.
type ImmDtLayer struct {
	layers.BaseLayer
	Imm uint32
	BTH *BTHLayer
}

func (l *ImmDtLayer) link(b *BTHLayer) { l.BTH = b }

// LayerType returns LayerTypeImmDt.
func (l *ImmDtLayer) LayerType() gopacket.LayerType { return LayerTypeImmDt }

// CanDecode returns LayerTypeImmDt.
func (l *ImmDtLayer) CanDecode() gopacket.LayerClass { return LayerTypeImmDt }

// NextLayerType returns the payload.
func (l *ImmDtLayer) NextLayerType() gopacket.LayerType { return nextAfter(l.BTH, ExtImmDt, l.Payload) }

// DecodeFromBytes decodes an ImmDt.
func (l *ImmDtLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < ImmDtLen {
		return layerErr(df, "immdt", len(data), ImmDtLen)
	}
	l.Imm = ImmDt(data).Imm()
	l.Contents, l.Payload = data[:ImmDtLen], data[ImmDtLen:]
	return nil
}

// SerializeTo prepends the ImmDt.
func (l *ImmDtLayer) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	p, err := b.PrependBytes(ImmDtLen)
	if err != nil {
		return err
	}
	ImmDt(p).SetImm(l.Imm)
	return nil
}

// IETHLayer is the gopacket layer of the Invalidate Extended Transport Header.
type IETHLayer struct {
	layers.BaseLayer
	RKey uint32
	BTH  *BTHLayer
}

func (l *IETHLayer) link(b *BTHLayer) { l.BTH = b }

// LayerType returns LayerTypeIETH.
func (l *IETHLayer) LayerType() gopacket.LayerType { return LayerTypeIETH }

// CanDecode returns LayerTypeIETH.
func (l *IETHLayer) CanDecode() gopacket.LayerClass { return LayerTypeIETH }

// NextLayerType returns the payload.
func (l *IETHLayer) NextLayerType() gopacket.LayerType { return nextAfter(l.BTH, ExtIETH, l.Payload) }

// DecodeFromBytes decodes an IETH.
func (l *IETHLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < IETHLen {
		return layerErr(df, "ieth", len(data), IETHLen)
	}
	l.RKey = IETH(data).RKey()
	l.Contents, l.Payload = data[:IETHLen], data[IETHLen:]
	return nil
}

// SerializeTo prepends the IETH.
func (l *IETHLayer) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	p, err := b.PrependBytes(IETHLen)
	if err != nil {
		return err
	}
	IETH(p).SetRKey(l.RKey)
	return nil
}

// DETHLayer is the gopacket layer of the Datagram Extended Transport Header.
type DETHLayer struct {
	layers.BaseLayer
	QKey  uint32
	SrcQP uint32
	BTH   *BTHLayer
}

func (l *DETHLayer) link(b *BTHLayer) { l.BTH = b }

// LayerType returns LayerTypeDETH.
func (l *DETHLayer) LayerType() gopacket.LayerType { return LayerTypeDETH }

// CanDecode returns LayerTypeDETH.
func (l *DETHLayer) CanDecode() gopacket.LayerClass { return LayerTypeDETH }

// NextLayerType returns ImmDt in UD SEND_ONLY_IMM, otherwise the payload.
func (l *DETHLayer) NextLayerType() gopacket.LayerType { return nextAfter(l.BTH, ExtDETH, l.Payload) }

// DecodeFromBytes decodes a DETH.
func (l *DETHLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < DETHLen {
		return layerErr(df, "deth", len(data), DETHLen)
	}
	d := DETH(data)
	l.QKey, l.SrcQP = d.QKey(), d.SrcQP()
	l.Contents, l.Payload = data[:DETHLen], data[DETHLen:]
	return nil
}

// SerializeTo prepends the DETH.
func (l *DETHLayer) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	if l.SrcQP > MaxQP {
		return fmt.Errorf("roce: deth.srcqp: %#x exceeds 24 bits", l.SrcQP)
	}
	p, err := b.PrependBytes(DETHLen)
	if err != nil {
		return err
	}
	d := DETH(p)
	d.SetQKey(l.QKey)
	d.SetSrcQP(l.SrcQP)
	return nil
}

// LayerSet holds one linked instance of every RoCEv2 layer, for a
// gopacket.DecodingLayerParser:
//
//	var s roce.LayerSet
//	parser := gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &eth, &dot1q, &ip4, &udp, &payload)
//	for _, l := range s.DecodingLayers() { parser.AddDecodingLayer(l) }
type LayerSet struct {
	BTH          BTHLayer
	DETH         DETHLayer
	RETH         RETHLayer
	AtomicETH    AtomicETHLayer
	AETH         AETHLayer
	AtomicAckETH AtomicAckETHLayer
	ImmDt        ImmDtLayer
	IETH         IETHLayer
}

// DecodingLayers links the extension layers to the BTH layer and returns
// all of them.
func (s *LayerSet) DecodingLayers() []gopacket.DecodingLayer {
	ls := []extLayer{&s.DETH, &s.RETH, &s.AtomicETH, &s.AETH, &s.AtomicAckETH, &s.ImmDt, &s.IETH}
	out := []gopacket.DecodingLayer{&s.BTH}
	for _, l := range ls {
		l.link(&s.BTH)
		out = append(out, l)
	}
	return out
}

// SerializeLayers is gopacket.SerializeLayers for a RoCEv2 frame (Ethernet,
// IPv4, UDP, BTH, ...): with opts.ComputeChecksums it then computes the ICRC
// over the result (which must parse as RoCEv2).
func SerializeLayers(buf gopacket.SerializeBuffer, opts gopacket.SerializeOptions, ls ...gopacket.SerializableLayer) error {
	if err := gopacket.SerializeLayers(buf, opts, ls...); err != nil {
		return err
	}
	if !opts.ComputeChecksums {
		return nil
	}
	return SetICRC(buf.Bytes())
}
