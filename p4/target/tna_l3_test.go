package target

import (
	"bytes"
	"net"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// testdata/tna/l3: a TNA router (ours) exercising what the public examples
// do not: egress with bridged metadata, the Checksum extern in a parser
// (verify) and a deparser (update), DirectCounter, packet-in/packet-out
// through the CPU port, port_metadata_unpack, parser_err, 128-bit fields.
// Frames are built and checked with gopacket.

func l3Frame(tb testing.TB, ttl uint8, dst net.IP, payload string) []byte {
	tb.Helper()
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: ttl, Protocol: layers.IPProtocolUDP, SrcIP: net.IP{10, 1, 1, 1}, DstIP: dst, Id: 77}
	udp := &layers.UDP{SrcPort: 40000, DstPort: 40001}
	_ = udp.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{ComputeChecksums: true, FixLengths: true}, eth, ip, udp, gopacket.Payload(payload)); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func TestTNAL3(t *testing.T) {
	p, err := CompileFile("testdata/tna/l3/l3.p4", CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := NewDevice(p, Options{CPUPort: 64})
	route := tableID(t, p, "Ig.route")
	add := func(prefix []byte, plen int32, a *p4v1.TableAction) {
		t.Helper()
		if err := d.WriteTableEntry(p4v1.Update_INSERT, &p4v1.TableEntry{TableId: route,
			Match: []*p4v1.FieldMatch{lpm(1, prefix, plen)}, Action: a}); err != nil {
			t.Fatal(err)
		}
	}
	add([]byte{10, 0, 0, 0}, 8, act(actionID(t, p, "Ig.fwd"), []byte{4}))
	add([]byte{10, 9, 0, 0}, 16, act(actionID(t, p, "Ig.to_cpu")))

	// Routed: out of port 4 through egress, TTL - 1, a valid checksum,
	// the source MAC carrying the bridged ingress port, no bridge header.
	in := l3Frame(t, 64, net.IP{10, 2, 3, 4}, "routed")
	outs := send(d, 5, in)
	if len(outs) != 1 || outs[0].port != 4 {
		t.Fatalf("routed: %v", outs)
	}
	pkt := gopacket.NewPacket(outs[0].frame, layers.LayerTypeEthernet, gopacket.Default)
	ip, _ := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	eth, _ := pkt.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	if ip == nil || eth == nil || pkt.ErrorLayer() != nil {
		t.Fatalf("routed frame does not decode: % x", outs[0].frame)
	}
	if ip.TTL != 63 || !bytes.Equal(eth.SrcMAC, net.HardwareAddr{2, 0, 0, 0, 0, 5}) || len(outs[0].frame) != len(in) {
		t.Fatalf("routed: ttl %d src %s len %d", ip.TTL, eth.SrcMAC, len(outs[0].frame))
	}
	want := ip.Checksum
	if err := ip.SerializeTo(gopacket.NewSerializeBuffer(), gopacket.SerializeOptions{ComputeChecksums: true}); err != nil {
		t.Fatal(err)
	}
	if ip.Checksum != want {
		t.Fatalf("egress deparser's IPv4 checksum %#04x, gopacket computes %#04x", want, ip.Checksum)
	}
	if app := pkt.ApplicationLayer(); app == nil || string(app.Payload()) != "routed" {
		t.Fatalf("payload lost")
	}

	// A corrupted checksum: Checksum.verify in the parser fails, dropped.
	bad := append([]byte{}, in...)
	bad[14+10] ^= 0xff
	if outs := send(d, 5, bad); len(outs) != 0 {
		t.Fatalf("bad checksum: %v", outs)
	}
	// Default action drop (drop_ctl) for an unrouted destination.
	if outs := send(d, 5, l3Frame(t, 64, net.IP{192, 168, 0, 1}, "x")); len(outs) != 0 {
		t.Fatalf("unrouted: %v", outs)
	}
	// The direct counter counted the two routed lookups (hit and miss is
	// not counted: the default action).
	var pk int64
	if err := d.ReadTableEntries(&p4v1.TableEntry{TableId: route, CounterData: &p4v1.CounterData{}}, func(e *p4v1.TableEntry) error {
		pk += e.GetCounterData().GetPacketCount()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if pk != 1 {
		t.Fatalf("route counters: %d packets, want 1 (the routed packet)", pk)
	}

	// To the CPU: PacketIn with the ingress port, the frame unchanged.
	cpuIn := l3Frame(t, 64, net.IP{10, 9, 1, 1}, "to cpu")
	outs = send(d, 6, cpuIn)
	if len(outs) != 1 || outs[0].port != 64 {
		t.Fatalf("to cpu: %v", outs)
	}
	md, rest, err := p.SplitPacketIn(outs[0].frame)
	if err != nil || len(md) != 1 || !bytes.Equal(md[0].Value, []byte{6}) || !bytes.Equal(rest, cpuIn) {
		t.Fatalf("packet in: %v %v % x", err, md, rest)
	}
	// From the CPU: PacketOut to port 3, sent as is.
	po, err := p.PacketOutFrame(nil, []*p4v1.PacketMetadata{{MetadataId: 1, Value: []byte{3}}}, cpuIn)
	if err != nil {
		t.Fatal(err)
	}
	if outs := send(d, 64, po); len(outs) != 1 || outs[0].port != 3 || !bytes.Equal(outs[0].frame, cpuIn) {
		t.Fatalf("packet out: %v", outs)
	}

	// A truncated IPv4 header: the program reads parser_err, so the packet
	// goes on (to port 9) with what was parsed, unchanged.
	short := in[:14+12]
	if outs := send(d, 5, short); len(outs) != 1 || outs[0].port != 9 || !bytes.Equal(outs[0].frame, short) {
		t.Fatalf("truncated: %v", outs)
	}

	// IPv6: 128-bit addresses parsed, copied with their header and
	// deparsed; hop limit - 1, the rest unchanged.
	eth6 := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv6}
	ip6 := &layers.IPv6{Version: 6, TrafficClass: 3, FlowLabel: 0xabcde, HopLimit: 9, NextHeader: layers.IPProtocolNoNextHeader,
		SrcIP: net.ParseIP("2001:db8::1"), DstIP: net.ParseIP("2001:db8:ffff:eeee:dddd:cccc:bbbb:aaaa")}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true}, eth6, ip6, gopacket.Payload("six")); err != nil {
		t.Fatal(err)
	}
	in6 := buf.Bytes()
	outs = send(d, 5, in6)
	if len(outs) != 1 || outs[0].port != 2 {
		t.Fatalf("ipv6: %v", outs)
	}
	want6 := append([]byte{}, in6...)
	want6[14+7]--
	if !bytes.Equal(outs[0].frame, want6) {
		t.Fatalf("ipv6:\n% x\nwant\n% x", outs[0].frame, want6)
	}
}

// BenchmarkTNAL3Forward: one routed IPv4 frame through the tna l3 router's
// whole pipeline (ingress, bridged metadata, egress, checksum update).
func BenchmarkTNAL3Forward(b *testing.B) {
	p, err := CompileFile("testdata/tna/l3/l3.p4", CompileOptions{})
	if err != nil {
		b.Fatal(err)
	}
	d := NewDevice(p, Options{CPUPort: 64})
	if err := d.WriteTableEntry(p4v1.Update_INSERT, &p4v1.TableEntry{TableId: tableID(b, p, "Ig.route"),
		Match: []*p4v1.FieldMatch{lpm(1, []byte{10, 0, 0, 0}, 8)}, Action: act(actionID(b, p, "Ig.fwd"), []byte{4})}); err != nil {
		b.Fatal(err)
	}
	frame := l3Frame(b, 64, net.IP{10, 2, 3, 4}, "bench")
	n := 0
	emit := func(uint32, []byte) { n++ }
	clk := startCPU(b)
	for i := 0; i < b.N; i++ {
		d.Process(5, frame, emit)
	}
	clk.report(b)
	if n != b.N {
		b.Fatalf("%d frames out of %d", n, b.N)
	}
}
