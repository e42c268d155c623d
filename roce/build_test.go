package roce

import (
	"errors"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
)

func TestBuildErrors(t *testing.T) {
	tests := []struct {
		name  string
		mod   func(f *Fields)
		buf   int
		field string
	}{
		{"unknown opcode", func(f *Fields) { f.Opcode = 0x15 }, 256, "bth.opcode"},
		{"padcnt", func(f *Fields) { f.PadCnt = 4 }, 256, "bth.padcnt"},
		{"tver", func(f *Fields) { f.TVer = 16 }, 256, "bth.tver"},
		{"destqp", func(f *Fields) { f.DestQP = 1 << 24 }, 256, "bth.destqp"},
		{"psn", func(f *Fields) { f.PSN = 1 << 24 }, 256, "bth.psn"},
		{"payload on READ request", func(f *Fields) { f.Opcode = OpRCReadRequest }, 256, "payload"},
		{"pad on ACK", func(f *Fields) { f.Opcode, f.Payload, f.PadCnt = OpRCAcknowledge, nil, 1 }, 256, "payload"},
		{"alignment", func(f *Fields) { f.PadCnt = 1 }, 256, "bth.padcnt"},
		{"msn", func(f *Fields) { f.Opcode, f.Payload, f.MSN = OpRCAcknowledge, nil, 1<<24 }, 256, "aeth.msn"},
		{"srcqp", func(f *Fields) { f.Opcode, f.SrcQP = OpUDSendOnly, 1<<24 }, 256, "deth.srcqp"},
		{"too long", func(f *Fields) { f.Payload = make([]byte, 65536) }, 70000, "ipv4.total_length"},
		{"buffer", func(f *Fields) {}, 60, "buffer"},
	}
	for _, tc := range tests {
		f := baseFields(OpRCWriteOnly)
		f.Payload = seq(16)
		tc.mod(&f)
		n, err := Build(make([]byte, tc.buf), &f)
		if err == nil {
			t.Errorf("%s: built %d bytes, want an error", tc.name, n)
			continue
		}
		if want := "roce: build: " + tc.field + ": "; !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %q does not start with %q", tc.name, err, want)
		}
	}
}

func TestParseErrorKinds(t *testing.T) {
	frame := mustHex(t, workedExampleHex)
	frame[36] = 0 // UDP port
	_, err := Parse(frame)
	var pe *ParseError
	if !errors.As(err, &pe) || !pe.NotRoCE() || !errors.Is(err, ErrNotRoCE) {
		t.Errorf("foreign port: %v", err)
	}
	_, err = Parse(frame[:10])
	if !errors.As(err, &pe) || pe.NotRoCE() || errors.Is(err, ErrNotRoCE) {
		t.Errorf("truncated: %v", err)
	}
	if ok, err := VerifyICRC(frame[:10]); ok || err == nil {
		t.Errorf("VerifyICRC on garbage: %v %v", ok, err)
	}
	if err := SetICRC(frame[:10]); err == nil {
		t.Error("SetICRC on garbage succeeded")
	}
}

func TestGopacketDecodeFromExtension(t *testing.T) {
	// Decoding may start at an extension layer type (unlinked: what follows
	// is payload).
	r := make([]byte, RETHLen+4)
	RETH(r).SetVA(0x1234)
	pkt := gopacket.NewPacket(r, LayerTypeRETH, gopacket.Default)
	l, ok := pkt.Layer(LayerTypeRETH).(*RETHLayer)
	if !ok || l.VA != 0x1234 || pkt.Layer(gopacket.LayerTypePayload) == nil {
		t.Errorf("RETH decode: %v", pkt)
	}
	pkt = gopacket.NewPacket(r[:3], LayerTypeAETH, gopacket.Default)
	if pkt.ErrorLayer() == nil {
		t.Error("truncated AETH decoded")
	}
}
