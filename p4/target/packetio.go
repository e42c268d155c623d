package target

import (
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
)

// PacketIn and PacketOut framing, the way simple_switch_grpc does it: a
// frame the program sends to the CPU port starts with the header annotated
// @controller_header("packet_in") (the program emits it), and a PacketOut
// enters the pipeline on the CPU port with the @controller_header
// ("packet_out") header in front of its payload (the program's parser
// extracts it). Metadata IDs are the header's fields in order, from 1, as
// in the P4Info's controller_packet_metadata.

// PacketOutFrame appends to dst the packet_out header built from md
// followed by payload, ready for Process(CPUPort, ...). Metadata not given
// are zero. Errors are gRPC status errors (FAILED_PRECONDITION when the
// program has no packet_out header, INVALID_ARGUMENT or OUT_OF_RANGE for
// bad metadata).
func (p *Program) PacketOutFrame(dst []byte, md []*p4v1.PacketMetadata, payload []byte) ([]byte, error) {
	t := p.packetOut
	if t == nil {
		return nil, errf(codes.FailedPrecondition, "the program has no @controller_header(\"packet_out\") header")
	}
	slots := make([]uint64, t.size)
	seen := make([]bool, len(t.fields))
	for _, m := range md {
		i := int(m.MetadataId) - 1
		if i < 0 || i >= len(t.fields) {
			return nil, errf(codes.InvalidArgument, "packet_out: no metadata with id %d", m.MetadataId)
		}
		if seen[i] {
			return nil, errf(codes.InvalidArgument, "packet_out: metadata %s given twice", t.fields[i].name)
		}
		seen[i] = true
		v, err := decodeBits(m.Value, widthOf(t.fields[i].t), "packet_out metadata "+t.fields[i].name)
		if err != nil {
			return nil, err
		}
		slots[t.fields[i].off] = v
	}
	h := codecOf(t)
	buf := make([]byte, 0, h.bytes+8)
	buf = h.encode(buf, slots)
	dst = append(dst, buf...)
	return append(dst, payload...), nil
}

// SplitPacketIn parses the packet_in header at the front of a frame the
// program sent to the CPU port and returns its metadata (canonical byte
// strings, IDs from 1) and the rest of the frame.
func (p *Program) SplitPacketIn(frame []byte) ([]*p4v1.PacketMetadata, []byte, error) {
	t := p.packetIn
	if t == nil {
		return nil, nil, errf(codes.FailedPrecondition, "the program has no @controller_header(\"packet_in\") header")
	}
	h := codecOf(t)
	if len(frame) < h.bytes {
		return nil, nil, errf(codes.InvalidArgument, "packet_in: frame of %d bytes is shorter than the %d-byte header", len(frame), h.bytes)
	}
	slots := make([]uint64, t.size)
	h.decode(slots, frame[:h.bytes])
	var md []*p4v1.PacketMetadata
	for i, f := range t.fields {
		md = append(md, &p4v1.PacketMetadata{MetadataId: uint32(i + 1), Value: encodeBits(slots[f.off])})
	}
	return md, frame[h.bytes:], nil
}
