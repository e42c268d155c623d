//go:build linux

package middlebox

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/swordbox/swordbox/netio"
)

// inNS runs fn on an OS thread inside ns (sockets keep their namespace).
func inNS(ns netns.NsHandle, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked if the namespace cannot be restored: the thread dies
		orig, err := netns.Get()
		if err != nil {
			errc <- err
			return
		}
		defer orig.Close()
		if err := netns.Set(ns); err != nil {
			errc <- err
			return
		}
		err = fn()
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// threeNamespaces makes namespaces c (client), m (middlebox) and s
// (server), joined by veth pairs c-m and m-s, all up, and removes them
// when the test ends. It returns the namespaces and the interface names
// [c's, m's towards c, m's towards s, s's].
func threeNamespaces(t *testing.T) ([3]netns.NsHandle, [4]string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	tag := fmt.Sprintf("%06x", rand.Uint32()&0xffffff)
	names := [3]string{"mbox-" + tag + "-c", "mbox-" + tag + "-m", "mbox-" + tag + "-s"}
	ifs := [4]string{"mb" + tag + "c", "mb" + tag + "mc", "mb" + tag + "ms", "mb" + tag + "s"}
	var nss [3]netns.NsHandle
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	for i, n := range names {
		ns, err := netns.NewNamed(n) // enters it
		if err != nil {
			netns.Set(orig)
			t.Fatalf("namespace %s: %v", n, err)
		}
		nss[i] = ns
		name := n
		t.Cleanup(func() { ns.Close(); netns.DeleteNamed(name) })
		lo, err := netlink.LinkByName("lo")
		if err == nil {
			netlink.LinkSetUp(lo)
		}
	}
	if err := netns.Set(orig); err != nil {
		t.Fatal(err)
	}
	// veths in the original namespace, then moved.
	pairs := []struct {
		a, b     string
		nsA, nsB netns.NsHandle
	}{{ifs[0], ifs[1], nss[0], nss[1]}, {ifs[2], ifs[3], nss[1], nss[2]}}
	for _, p := range pairs {
		if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: p.a, MTU: 4500}, PeerName: p.b}); err != nil {
			t.Fatalf("veth %s-%s: %v", p.a, p.b, err)
		}
		for _, x := range []struct {
			name string
			ns   netns.NsHandle
		}{{p.a, p.nsA}, {p.b, p.nsB}} {
			l, err := netlink.LinkByName(x.name)
			if err != nil {
				t.Fatal(err)
			}
			if err := netlink.LinkSetNsFd(l, int(x.ns)); err != nil {
				t.Fatal(err)
			}
			name := x.name
			if err := inNS(x.ns, func() error {
				os.WriteFile("/proc/sys/net/ipv6/conf/"+name+"/disable_ipv6", []byte("1"), 0o644)
				l, err := netlink.LinkByName(name)
				if err != nil {
					return err
				}
				return netlink.LinkSetUp(l)
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return nss, ifs
}

// The differential trace through the middlebox's Loop on AF_PACKET ports
// in a namespace of its own, between two software RNICs in theirs, over
// real veth pairs: the same results as the model.
func TestDifferentialOverVethNamespaces(t *testing.T) {
	nss, ifs := threeNamespaces(t)
	ports := func(t *testing.T) [4]netio.Port {
		var ports [4]netio.Port
		nsOf := [4]netns.NsHandle{nss[0], nss[1], nss[1], nss[2]}
		for i := range ports {
			i := i
			if err := inNS(nsOf[i], func() error {
				p, err := netio.NewAFPacketPort(netio.AFPacketConfig{Interface: ifs[i]})
				ports[i] = p
				return err
			}); err != nil {
				t.Fatalf("AF_PACKET on %s: %v", ifs[i], err)
			}
		}
		return ports
	}
	tr := makeDiffTrace(3, 10)
	m := runDiff(t, tr, diffMuxCAS, diffOptions{ports: ports})
	compareDiff(t, "mux+cas over veth", modelDiff(tr), m)
	if m.eng.CASToWrite == 0 || m.eng.Remapped == 0 {
		t.Fatalf("nothing multiplexed: %s", m.eng.String())
	}
	t.Logf("over veth: %s", m.eng.String())
}
