//go:build linux

// Package nstest builds throw-away network namespaces joined by a veth pair
// for the tests of netio and netio/dpdk. It needs root (CAP_SYS_ADMIN and
// CAP_NET_ADMIN); Pair skips the test otherwise. Everything it creates is
// removed when the test ends, whether it passed or failed.
package nstest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// End is one side of a Pair: a named namespace holding one veth.
type End struct {
	NS     netns.NsHandle
	NSName string
	Iface  string
}

// Do runs fn on an OS thread that has entered e's namespace, so sockets
// and interface lookups made by fn belong to it. Sockets keep their
// namespace after fn returns.
func (e End) Do(fn func() error) error {
	return do(e.NS, fn)
}

func do(ns netns.NsHandle, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		// The thread is never unlocked: it dies with the goroutine if it
		// could not be put back, so no other goroutine inherits the namespace.
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			errc <- fmt.Errorf("nstest: current namespace: %w", err)
			return
		}
		defer orig.Close()
		if err := netns.Set(ns); err != nil {
			errc <- fmt.Errorf("nstest: enter namespace: %w", err)
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

// Pair makes two namespaces, A and B, joined by a veth pair whose ends are
// up, with IPv6 off so that the kernel sends nothing on its own. It skips
// the test when not root and registers the removal of both namespaces.
func Pair(t testing.TB) (a, b End) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	tag := fmt.Sprintf("%08x", rand.Uint32()) // interface names: at most 15 bytes
	a = End{NSName: "netio-" + tag + "-a", Iface: "nio" + tag + "a"}
	b = End{NSName: "netio-" + tag + "-b", Iface: "nio" + tag + "b"}
	for _, e := range []*End{&a, &b} {
		ns, err := newNamed(e.NSName)
		if err != nil {
			t.Fatalf("nstest: create namespace %s: %v", e.NSName, err)
		}
		e.NS = ns
		name, h := e.NSName, ns
		t.Cleanup(func() {
			h.Close()
			if err := netns.DeleteNamed(name); err != nil {
				t.Errorf("nstest: delete namespace %s: %v", name, err)
			}
			if _, err := os.Stat(filepath.Join("/run/netns", name)); err == nil {
				t.Errorf("nstest: namespace %s still exists", name)
			}
		})
	}
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: a.Iface, MTU: 9000}, PeerName: b.Iface}
	if err := netlink.LinkAdd(veth); err != nil {
		t.Fatalf("nstest: add veth %s-%s: %v", a.Iface, b.Iface, err)
	}
	for _, e := range []End{a, b} {
		l, err := netlink.LinkByName(e.Iface)
		if err != nil {
			netlink.LinkDel(veth)
			t.Fatalf("nstest: find %s: %v", e.Iface, err)
		}
		if err := netlink.LinkSetNsFd(l, int(e.NS)); err != nil {
			netlink.LinkDel(veth)
			t.Fatalf("nstest: move %s to %s: %v", e.Iface, e.NSName, err)
		}
	}
	for _, e := range []End{a, b} {
		err := e.Do(func() error {
			p := filepath.Join("/proc/sys/net/ipv6/conf", e.Iface, "disable_ipv6")
			if err := os.WriteFile(p, []byte("1"), 0o644); err != nil && !os.IsNotExist(err) {
				return err
			}
			l, err := netlink.LinkByName(e.Iface)
			if err != nil {
				return err
			}
			return netlink.LinkSetUp(l)
		})
		if err != nil {
			t.Fatalf("nstest: bring up %s in %s: %v", e.Iface, e.NSName, err)
		}
	}
	// The kernel activates a veth's queue asynchronously (linkwatch, up to
	// a second); frames sent before that are silently dropped.
	for _, e := range []End{a, b} {
		err := e.Do(func() error {
			for start := time.Now(); time.Since(start) < 5*time.Second; time.Sleep(5 * time.Millisecond) {
				l, err := netlink.LinkByName(e.Iface)
				if err != nil {
					return err
				}
				if l.Attrs().OperState == netlink.OperUp {
					return nil
				}
			}
			return fmt.Errorf("%s not operationally up after 5s", e.Iface)
		})
		if err != nil {
			t.Fatalf("nstest: %v", err)
		}
	}
	return a, b
}

// newNamed creates a named namespace without leaving the calling thread
// in it.
func newNamed(name string) (netns.NsHandle, error) {
	var h netns.NsHandle
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			errc <- err
			return
		}
		defer orig.Close()
		h, err = netns.NewNamed(name) // enters the new namespace
		if err == nil && netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return h, <-errc
}
