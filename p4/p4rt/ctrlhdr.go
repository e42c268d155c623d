package p4rt

import (
	"fmt"

	configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// ctrlHeader is the layout of one @controller_header ("packet_in" or
// "packet_out") taken from the P4Info: its fields in header order, packed
// most significant bit first, as the P4 deparser emits them.
type ctrlHeader struct {
	name   string
	fields []ctrlField
	bytes  int // total size; the P4 header is a whole number of bytes
}

type ctrlField struct {
	id    uint32
	name  string
	width int
}

// newCtrlHeader returns the layout of the controller header named name, or
// nil when the P4Info has none.
func newCtrlHeader(info *configv1.P4Info, name string) (*ctrlHeader, error) {
	for _, m := range info.GetControllerPacketMetadata() {
		if m.GetPreamble().GetName() != name {
			continue
		}
		h := &ctrlHeader{name: name}
		bits := 0
		for _, f := range m.GetMetadata() {
			if f.GetBitwidth() <= 0 || f.GetBitwidth() > 64 {
				return nil, fmt.Errorf("controller header %s: field %s: bit width %d not supported (1..64)", name, f.GetName(), f.GetBitwidth())
			}
			h.fields = append(h.fields, ctrlField{id: f.GetId(), name: f.GetName(), width: int(f.GetBitwidth())})
			bits += int(f.GetBitwidth())
		}
		if bits%8 != 0 {
			return nil, fmt.Errorf("controller header %s: %d bits is not a whole number of bytes", name, bits)
		}
		h.bytes = bits / 8
		return h, nil
	}
	return nil, nil
}

// decode splits a CPU-port frame into the controller header's metadata and
// the packet behind it.
func (h *ctrlHeader) decode(frame []byte) ([]*p4v1.PacketMetadata, []byte, error) {
	if len(frame) < h.bytes {
		return nil, nil, fmt.Errorf("%s: frame of %d bytes is shorter than the %d-byte controller header", h.name, len(frame), h.bytes)
	}
	md := make([]*p4v1.PacketMetadata, 0, len(h.fields))
	off := 0
	for _, f := range h.fields {
		v := getBits(frame[:h.bytes], off, f.width)
		off += f.width
		md = append(md, &p4v1.PacketMetadata{MetadataId: f.id, Value: canonical(v)})
	}
	return md, frame[h.bytes:], nil
}

// encode appends the controller header built from md, then payload, to dst.
// Fields md leaves out are zero; an unknown ID or a value wider than its
// field is an error.
func (h *ctrlHeader) encode(dst []byte, md []*p4v1.PacketMetadata, payload []byte) ([]byte, error) {
	vals := make([]uint64, len(h.fields))
	for _, m := range md {
		i := -1
		for j, f := range h.fields {
			if f.id == m.GetMetadataId() {
				i = j
				break
			}
		}
		if i < 0 {
			return nil, fmt.Errorf("%s: unknown metadata id %d", h.name, m.GetMetadataId())
		}
		v, err := bytesToUint(m.GetValue(), h.fields[i].width)
		if err != nil {
			return nil, fmt.Errorf("%s: metadata %s: %w", h.name, h.fields[i].name, err)
		}
		vals[i] = v
	}
	start := len(dst)
	dst = append(dst, make([]byte, h.bytes)...)
	off := 0
	for i, f := range h.fields {
		putBits(dst[start:start+h.bytes], off, f.width, vals[i])
		off += f.width
	}
	return append(dst, payload...), nil
}

// getBits reads width bits starting at bit off (0 = most significant bit of
// b[0]).
func getBits(b []byte, off, width int) uint64 {
	var v uint64
	for i := 0; i < width; i++ {
		bit := off + i
		v = v<<1 | uint64(b[bit/8]>>(7-bit%8)&1)
	}
	return v
}

// putBits writes the low width bits of v starting at bit off.
func putBits(b []byte, off, width int, v uint64) {
	for i := 0; i < width; i++ {
		bit := off + i
		if v>>(width-1-i)&1 == 1 {
			b[bit/8] |= 1 << (7 - bit%8)
		} else {
			b[bit/8] &^= 1 << (7 - bit%8)
		}
	}
}

// canonical is the P4Runtime canonical binary string of v: big-endian with
// no leading zero bytes, at least one byte.
func canonical(v uint64) []byte {
	n := 1
	for x := v >> 8; x != 0; x >>= 8 {
		n++
	}
	out := make([]byte, n)
	for i := n - 1; i >= 0; i-- {
		out[i] = byte(v)
		v >>= 8
	}
	return out
}

// bytesToUint decodes a P4Runtime binary string (canonical or padded) of a
// field of width bits.
func bytesToUint(b []byte, width int) (uint64, error) {
	var v uint64
	for i, c := range b {
		if v>>56 != 0 {
			return 0, fmt.Errorf("value of %d bytes is wider than %d bits", len(b)-i+8, width)
		}
		v = v<<8 | uint64(c)
	}
	if width < 64 && v>>width != 0 {
		return 0, fmt.Errorf("value %#x does not fit in %d bits", v, width)
	}
	return v, nil
}
