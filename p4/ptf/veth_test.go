package ptf

import (
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/roce"
)

// vethPorts makes a fresh network namespace with one veth pair per port
// (sw<N> for the switch, h<N> for the host), opens AF_PACKET ports on both
// ends and returns them. The namespace has no name: it disappears with the
// last socket in it.
func vethPorts(t *testing.T, ports ...uint32) (sw, hosts map[uint32]netio.Port) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespace, veth pairs and AF_PACKET sockets")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	ns, err := netns.New() // the locked thread is now inside ns
	if err != nil {
		t.Fatalf("new network namespace: %v", err)
	}
	defer func() {
		if err := netns.Set(orig); err != nil {
			panic(fmt.Sprintf("cannot return to the original network namespace: %v", err))
		}
		ns.Close()
	}()
	// No IPv6 in the namespace: the kernel would send MLD and neighbour
	// discovery frames out of the interfaces, which the test would receive.
	// /proc/sys/net is the namespace of the (locked) calling thread.
	for _, f := range []string{"/proc/sys/net/ipv6/conf/all/disable_ipv6", "/proc/sys/net/ipv6/conf/default/disable_ipv6"} {
		if err := os.WriteFile(f, []byte("1"), 0o644); err != nil && !os.IsNotExist(err) {
			t.Fatalf("disable IPv6 in the test namespace: %v", err)
		}
	}
	sw, hosts = map[uint32]netio.Port{}, map[uint32]netio.Port{}
	t.Cleanup(func() {
		for _, p := range sw {
			p.Close()
		}
		for _, p := range hosts {
			p.Close()
		}
	})
	open := func(name string) netio.Port {
		link, err := netlink.LinkByName(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := netlink.LinkSetUp(link); err != nil {
			t.Fatalf("%s up: %v", name, err)
		}
		p, err := netio.NewAFPacketPort(netio.AFPacketConfig{Interface: name})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, n := range ports {
		a, b := fmt.Sprintf("sw%d", n), fmt.Sprintf("h%d", n)
		if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: a}, PeerName: b}); err != nil {
			t.Fatalf("veth %s-%s: %v", a, b, err)
		}
		sw[n], hosts[n] = open(a), open(b)
	}
	return sw, hosts
}

// TestSteeringOverVeth runs the stale-CAS scenario with real Ethernet frames
// through the kernel: AF_PACKET ports on veth pairs in a namespace of its own.
func TestSteeringOverVeth(t *testing.T) {
	sw, hosts := vethPorts(t, 1, 2, 3, 4)
	r := programSteer(newRigPorts(t, true, sw, hosts), modeWrite)
	appendA(t, r)
	r.expectSame(2, 3, nodeWrite(t, qpB, 200, vaB1, hotKey, 2, valueSize), "B's node WRITE")
	r.send(2, cas(t, qpB, 201, vaT0, hw(0, 0, 5), hw(0xB1, 2, 5)))
	p, err := roce.Parse(r.expect(3))
	if err != nil {
		t.Fatal(err)
	}
	if p.AtomicETH.VA() != vaA1 || p.AtomicETH.Compare() != hw(0, 0, 1) {
		t.Fatalf("CAS over veth: VA %#x compare %#x, want %#x and %#x", p.AtomicETH.VA(), p.AtomicETH.Compare(), vaA1, hw(0, 0, 1))
	}
	if got := r.counter("key_cas_steered", keySlot); got != 1 {
		t.Errorf("key_cas_steered = %d, want 1", got)
	}
}
