package ptf

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

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
	// A veth drops what is sent before both ends have carrier: wait for
	// every interface to be operationally up before the first frame.
	deadline := time.Now().Add(5 * time.Second)
	for _, n := range ports {
		for _, name := range []string{fmt.Sprintf("sw%d", n), fmt.Sprintf("h%d", n)} {
			for {
				link, err := netlink.LinkByName(name)
				if err != nil {
					t.Fatal(err)
				}
				if link.Attrs().OperState == netlink.OperUp {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s not up after 5s: %v", name, link.Attrs().OperState)
				}
				time.Sleep(time.Millisecond)
			}
		}
	}
	return sw, hosts
}

// TestSteeringOverVeth runs the confirmed-then-stale-CAS scenario with real Ethernet frames
// through the kernel: AF_PACKET ports on veth pairs in a namespace of its own.
func TestSteeringOverVeth(t *testing.T) {
	sw, hosts := vethPorts(t, 1, 2, 3, 4)
	r := programSteer(newRigPorts(t, true, sw, hosts), modeWrite)
	r.confirm(qpA, 100, nT0.va, nT0.ev, nA1)
	r.expectSame(2, 3, nodeWrite(t, qpB, 200, nB1, valueSize), "B's node WRITE")
	r.send(2, link(t, qpB, 201, nT0.va, nT0.ev, nB1))
	p, err := roce.Parse(r.expect(3))
	if err != nil {
		t.Fatal(err)
	}
	if p.AtomicETH.VA() != nA1.va || p.AtomicETH.Compare() != hw(0, 0, nA1.ev) {
		t.Fatalf("CAS over veth: VA %#x compare %#x, want %#x and %#x", p.AtomicETH.VA(), p.AtomicETH.Compare(), nA1.va, hw(0, 0, nA1.ev))
	}
	if got := r.counter("key_cas_steered", keySlot); got != 1 {
		t.Errorf("key_cas_steered = %d, want 1", got)
	}
}
