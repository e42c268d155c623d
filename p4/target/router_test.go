package target

import (
	"bytes"
	"net"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Packet tests in the style of PTF for p4/testdata/basic_router.p4. Frames
// are built and decoded with gopacket, an implementation we did not write,
// which also checks the IPv4 checksum the pipeline recomputes.

var (
	macHost = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x01}
	macSw   = net.HardwareAddr{0x02, 0, 0, 0, 0, 0xfe}
	macNH2  = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x22}
	macNH3  = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x33}
	payload = []byte("swordbox basic router payload")
)

func ipv4Frame(tb testing.TB, dst string, ttl uint8) []byte {
	tb.Helper()
	eth := &layers.Ethernet{SrcMAC: macHost, DstMAC: macSw, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: ttl, Protocol: layers.IPProtocolUDP, Id: 7, Flags: layers.IPv4DontFragment,
		SrcIP: net.ParseIP("10.9.9.9").To4(), DstIP: net.ParseIP(dst).To4()}
	udp := &layers.UDP{SrcPort: 1234, DstPort: 5678}
	udp.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		eth, ip, udp, gopacket.Payload(payload)); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func routerDevice(t *testing.T) (*Program, *Device) {
	p := mustCompileFile(t, "../testdata/basic_router.p4")
	return p, NewDevice(p, Options{CPUPort: 255})
}

func addRoute(t *testing.T, p *Program, d *Device, prefix []byte, plen int32, mac net.HardwareAddr, port byte) {
	t.Helper()
	err := d.WriteTableEntry(p4v1.Update_INSERT, &p4v1.TableEntry{
		TableId: tableID(t, p, "MyIngress.ipv4_lpm"),
		Match:   []*p4v1.FieldMatch{lpm(1, prefix, plen)},
		Action:  act(actionID(t, p, "MyIngress.ipv4_forward"), mac, []byte{port}),
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkForwarded decodes an output frame and checks every field the router
// is supposed to change or keep.
func checkForwarded(t *testing.T, o out, port uint32, dstMAC net.HardwareAddr, dst string, ttl uint8) {
	t.Helper()
	if o.port != port {
		t.Fatalf("egress port %d, want %d", o.port, port)
	}
	pkt := gopacket.NewPacket(o.frame, layers.LayerTypeEthernet, gopacket.Default)
	eth, _ := pkt.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	ip, _ := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	udp, _ := pkt.Layer(layers.LayerTypeUDP).(*layers.UDP)
	if eth == nil || ip == nil || udp == nil {
		t.Fatalf("output does not decode as Ethernet/IPv4/UDP: %v", pkt)
	}
	if !bytes.Equal(eth.DstMAC, dstMAC) || !bytes.Equal(eth.SrcMAC, macSw) {
		t.Errorf("MACs %s -> %s, want %s -> %s", eth.SrcMAC, eth.DstMAC, macSw, dstMAC)
	}
	if ip.TTL != ttl || ip.DstIP.String() != dst {
		t.Errorf("TTL %d dst %s, want %d %s", ip.TTL, ip.DstIP, ttl, dst)
	}
	// Recompute the checksum with gopacket and compare with the pipeline's.
	got := ip.Checksum
	re := gopacket.NewSerializeBuffer()
	ip2 := *ip
	if err := ip2.SerializeTo(re, gopacket.SerializeOptions{ComputeChecksums: true}); err != nil {
		t.Fatal(err)
	}
	if ip2.Checksum != got {
		t.Errorf("IPv4 checksum 0x%04x, gopacket computes 0x%04x", got, ip2.Checksum)
	}
	if !bytes.Equal(udp.Payload, payload) {
		t.Errorf("payload %q, want %q", udp.Payload, payload)
	}
}

func TestRouterForwardsByLongestPrefix(t *testing.T) {
	p, d := routerDevice(t)
	addRoute(t, p, d, []byte{10, 0, 1, 0}, 24, macNH2, 2)
	addRoute(t, p, d, []byte{10, 0, 0, 0}, 16, macNH3, 3)
	cases := []struct {
		dst  string
		port uint32
		mac  net.HardwareAddr
	}{
		{"10.0.1.5", 2, macNH2},
		{"10.0.1.255", 2, macNH2},
		{"10.0.2.5", 3, macNH3},
		{"10.0.255.1", 3, macNH3},
	}
	for _, c := range cases {
		outs := send(d, 1, ipv4Frame(t, c.dst, 64))
		if len(outs) != 1 {
			t.Fatalf("%s: %d frames out, want 1", c.dst, len(outs))
		}
		checkForwarded(t, outs[0], c.port, c.mac, c.dst, 63)
	}
}

func TestRouterDrops(t *testing.T) {
	p, d := routerDevice(t)
	addRoute(t, p, d, []byte{10, 0, 0, 0}, 8, macNH2, 2)
	good := ipv4Frame(t, "10.1.2.3", 64)
	if n := len(send(d, 1, good)); n != 1 {
		t.Fatalf("control frame: %d out, want 1", n)
	}
	badSum := append([]byte(nil), good...)
	badSum[14+10] ^= 0xff
	arp := append([]byte(nil), good...)
	arp[12], arp[13] = 0x08, 0x06
	cases := map[string][]byte{
		"no route":       ipv4Frame(t, "192.168.1.1", 64),
		"ttl 1":          ipv4Frame(t, "10.1.2.3", 1),
		"bad checksum":   badSum,
		"not ipv4":       arp,
		"truncated ipv4": good[:14+12],
		"runt":           good[:5],
		"empty":          {},
	}
	for name, f := range cases {
		if outs := send(d, 1, f); len(outs) != 0 {
			t.Errorf("%s: %d frames out, want dropped", name, len(outs))
		}
	}
}

func TestRouterDefaultActionAndDelete(t *testing.T) {
	p, d := routerDevice(t)
	tid := tableID(t, p, "MyIngress.ipv4_lpm")
	fwd := actionID(t, p, "MyIngress.ipv4_forward")
	// Default entry reads back as the program's drop().
	var def *p4v1.TableEntry
	if err := d.ReadTableEntries(&p4v1.TableEntry{TableId: tid, IsDefaultAction: true}, func(e *p4v1.TableEntry) error {
		def = e
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if def.GetAction().GetAction().GetActionId() != actionID(t, p, "MyIngress.drop") {
		t.Fatalf("default entry %v, want MyIngress.drop", def)
	}
	// Default action to port 4: a miss is forwarded there.
	if err := d.WriteTableEntry(p4v1.Update_MODIFY, &p4v1.TableEntry{TableId: tid, IsDefaultAction: true,
		Action: act(fwd, macNH3, []byte{4})}); err != nil {
		t.Fatal(err)
	}
	outs := send(d, 1, ipv4Frame(t, "172.16.0.1", 10))
	if len(outs) != 1 {
		t.Fatalf("%d frames out, want 1", len(outs))
	}
	checkForwarded(t, outs[0], 4, macNH3, "172.16.0.1", 9)
	// Reset the default (MODIFY without action): dropped again.
	if err := d.WriteTableEntry(p4v1.Update_MODIFY, &p4v1.TableEntry{TableId: tid, IsDefaultAction: true}); err != nil {
		t.Fatal(err)
	}
	if n := len(send(d, 1, ipv4Frame(t, "172.16.0.1", 10))); n != 0 {
		t.Fatalf("after reset: %d out, want 0", n)
	}
	// Insert, delete: forwarded, then dropped.
	addRoute(t, p, d, []byte{172, 16, 0, 0}, 12, macNH2, 2)
	if n := len(send(d, 1, ipv4Frame(t, "172.16.0.1", 10))); n != 1 {
		t.Fatalf("with route: %d out, want 1", n)
	}
	del := &p4v1.TableEntry{TableId: tid, Match: []*p4v1.FieldMatch{lpm(1, []byte{172, 16, 0, 0}, 12)}}
	if err := d.WriteTableEntry(p4v1.Update_DELETE, del); err != nil {
		t.Fatal(err)
	}
	if n := len(send(d, 1, ipv4Frame(t, "172.16.0.1", 10))); n != 0 {
		t.Fatalf("after delete: %d out, want 0", n)
	}
	if err := d.WriteTableEntry(p4v1.Update_DELETE, del); status.Code(err) != codes.NotFound {
		t.Fatalf("second delete: %v, want NOT_FOUND", err)
	}
}
