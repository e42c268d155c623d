package target

import (
	"bytes"
	"os"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// swordbox.p4 on this target: it compiles, and PacketOut / PacketIn framing
// through its @controller_header headers round-trips. (The steering
// behaviour is tested by p4/ptf.)
func swordbox(t *testing.T) *Program {
	t.Helper()
	if _, err := os.Stat("../swordbox.p4"); err != nil {
		t.Skip("p4/swordbox.p4 not present")
	}
	return mustCompileFile(t, "../swordbox.p4")
}

func TestSwordboxPacketOutAndPacketIn(t *testing.T) {
	p := swordbox(t)
	d := NewDevice(p, Options{CPUPort: 255})
	dstMAC := []byte{2, 0, 0, 0, 0, 9}
	if err := d.WriteTableEntry(p4v1.Update_INSERT, &p4v1.TableEntry{
		TableId: tableID(t, p, "SwordboxIngress.forward"),
		Match:   []*p4v1.FieldMatch{exact(1, dstMAC)},
		Action:  act(actionID(t, p, "SwordboxIngress.send_to_cpu")),
	}); err != nil {
		t.Fatal(err)
	}
	payload := append(append([]byte{}, dstMAC...), 2, 0, 0, 0, 0, 1, 0x88, 0xb5, 'h', 'i')

	// PacketOut to port 3: the packet_out header is consumed, the payload
	// leaves port 3 unchanged.
	frame, err := p.PacketOutFrame(nil, []*p4v1.PacketMetadata{{MetadataId: 1, Value: []byte{3}}}, payload)
	if err != nil {
		t.Fatal(err)
	}
	if len(frame) != 2+len(payload) || frame[0] != 0x01 || frame[1] != 0x80 {
		t.Fatalf("packet_out frame % x (egress_port 3 in 9 bits, then 7 pad bits)", frame[:2])
	}
	outs := send(d, 255, frame)
	if len(outs) != 1 || outs[0].port != 3 || !bytes.Equal(outs[0].frame, payload) {
		t.Fatalf("PacketOut: %v", outs)
	}
	// A frame for dstMAC goes to the CPU with packet_in (ingress port 4).
	outs = send(d, 4, payload)
	if len(outs) != 1 || outs[0].port != 255 {
		t.Fatalf("PacketIn: %v", outs)
	}
	md, rest, err := p.SplitPacketIn(outs[0].frame)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rest, payload) || len(md) != 2 || md[0].MetadataId != 1 || !bytes.Equal(md[0].Value, []byte{4}) {
		t.Fatalf("PacketIn metadata %v, payload % x", md, rest)
	}
	// Bad metadata.
	if _, err := p.PacketOutFrame(nil, []*p4v1.PacketMetadata{{MetadataId: 9, Value: []byte{1}}}, payload); statusCode(err) != "InvalidArgument" {
		t.Errorf("unknown metadata id: %v", err)
	}
	if _, err := p.PacketOutFrame(nil, []*p4v1.PacketMetadata{{MetadataId: 1, Value: []byte{2, 0}}}, payload); statusCode(err) != "OutOfRange" {
		t.Errorf("port 512: %v", err)
	}
	if _, _, err := p.SplitPacketIn([]byte{1}); statusCode(err) != "InvalidArgument" {
		t.Errorf("short packet_in: %v", err)
	}
}

func TestPacketIOWithoutControllerHeaders(t *testing.T) {
	p := mustCompileFile(t, "../testdata/basic_router.p4")
	if _, err := p.PacketOutFrame(nil, nil, nil); statusCode(err) != "FailedPrecondition" {
		t.Errorf("PacketOutFrame: %v", err)
	}
	if _, _, err := p.SplitPacketIn([]byte{1, 2}); statusCode(err) != "FailedPrecondition" {
		t.Errorf("SplitPacketIn: %v", err)
	}
}
