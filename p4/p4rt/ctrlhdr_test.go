package p4rt

import (
	"bytes"
	"testing"

	configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

func ctrlInfo() *configv1.P4Info {
	md := func(name string, fields ...any) *configv1.ControllerPacketMetadata {
		m := &configv1.ControllerPacketMetadata{Preamble: &configv1.Preamble{Id: 0x40000001, Name: name}}
		for i := 0; i < len(fields); i += 2 {
			m.Metadata = append(m.Metadata, &configv1.ControllerPacketMetadata_Metadata{
				Id: uint32(i/2 + 1), Name: fields[i].(string), Bitwidth: int32(fields[i+1].(int)),
			})
		}
		return m
	}
	return &configv1.P4Info{ControllerPacketMetadata: []*configv1.ControllerPacketMetadata{
		md("packet_in", "ingress_port", 9, "_pad", 7),
		md("packet_out", "egress_port", 9, "flag", 1, "_pad", 6),
		md("odd", "x", 3),
	}}
}

func TestCtrlHeaderDecode(t *testing.T) {
	h, err := newCtrlHeader(ctrlInfo(), "packet_in")
	if err != nil || h == nil || h.bytes != 2 {
		t.Fatalf("newCtrlHeader = %+v, %v", h, err)
	}
	for _, tc := range []struct {
		frame    []byte
		port     []byte
		payload  []byte
		wantFail bool
	}{
		{frame: []byte{0x80, 0x80, 0xaa}, port: []byte{0x01, 0x01}, payload: []byte{0xaa}}, // port 257
		{frame: []byte{0x00, 0x80}, port: []byte{0x01}, payload: []byte{}},                 // port 1
		{frame: []byte{0x7f, 0x80, 1, 2}, port: []byte{0xff}, payload: []byte{1, 2}},       // port 255
		{frame: []byte{0xff, 0xff}, port: []byte{0x01, 0xff}, payload: []byte{}},           // port 511, pad all ones
		{frame: []byte{0x01}, wantFail: true},
	} {
		md, payload, err := h.decode(tc.frame)
		if tc.wantFail {
			if err == nil {
				t.Errorf("decode(%x): no error", tc.frame)
			}
			continue
		}
		if err != nil {
			t.Fatalf("decode(%x): %v", tc.frame, err)
		}
		if len(md) != 2 || md[0].MetadataId != 1 || !bytes.Equal(md[0].Value, tc.port) {
			t.Errorf("decode(%x): metadata %v, want port %x", tc.frame, md, tc.port)
		}
		if !bytes.Equal(payload, tc.payload) {
			t.Errorf("decode(%x): payload %x, want %x", tc.frame, payload, tc.payload)
		}
	}
}

func TestCtrlHeaderEncode(t *testing.T) {
	h, err := newCtrlHeader(ctrlInfo(), "packet_out")
	if err != nil {
		t.Fatal(err)
	}
	pm := func(id uint32, v ...byte) *p4v1.PacketMetadata { return &p4v1.PacketMetadata{MetadataId: id, Value: v} }
	for _, tc := range []struct {
		name    string
		md      []*p4v1.PacketMetadata
		want    []byte
		wantErr bool
	}{
		{"port 1", []*p4v1.PacketMetadata{pm(1, 1)}, []byte{0x00, 0x80, 0xee}, false},
		{"port 511 and flag", []*p4v1.PacketMetadata{pm(1, 1, 0xff), pm(2, 1)}, []byte{0xff, 0xc0, 0xee}, false},
		{"padded value", []*p4v1.PacketMetadata{pm(1, 0, 0, 2)}, []byte{0x01, 0x00, 0xee}, false},
		{"missing fields are zero", nil, []byte{0, 0, 0xee}, false},
		{"too wide", []*p4v1.PacketMetadata{pm(1, 2, 0)}, nil, true},
		{"unknown id", []*p4v1.PacketMetadata{pm(9, 1)}, nil, true},
		{"flag too wide", []*p4v1.PacketMetadata{pm(2, 2)}, nil, true},
	} {
		got, err := h.encode(nil, tc.md, []byte{0xee})
		if tc.wantErr {
			if err == nil {
				t.Errorf("%s: no error", tc.name)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, tc.want) {
			t.Errorf("%s: encode = %x, %v; want %x", tc.name, got, err, tc.want)
		}
	}
	if _, err := newCtrlHeader(ctrlInfo(), "odd"); err == nil {
		t.Error("a 3-bit controller header was accepted")
	}
	if h, err := newCtrlHeader(ctrlInfo(), "absent"); h != nil || err != nil {
		t.Errorf("absent header: %v, %v", h, err)
	}
}

func TestCanonical(t *testing.T) {
	for v, want := range map[uint64][]byte{0: {0}, 1: {1}, 0x100: {1, 0}, 0xffffffffffffffff: bytes.Repeat([]byte{0xff}, 8)} {
		if got := canonical(v); !bytes.Equal(got, want) {
			t.Errorf("canonical(%#x) = %x, want %x", v, got, want)
		}
	}
}

func FuzzCtrlHeaderRoundTrip(f *testing.F) {
	f.Add([]byte{0x12, 0x34, 0x56})
	h, err := newCtrlHeader(ctrlInfo(), "packet_out")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		md, payload, err := h.decode(frame)
		if err != nil {
			return
		}
		back, err := h.encode(nil, md, payload)
		if err != nil {
			t.Fatalf("encode(decode(%x)): %v", frame, err)
		}
		if !bytes.Equal(back, frame) {
			t.Fatalf("round trip %x -> %x", frame, back)
		}
	})
}
