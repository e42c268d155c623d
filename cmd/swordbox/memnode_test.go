package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/roce/rnic"
	"github.com/swordbox/swordbox/roce/rnic/perftest"
)

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{{"64MiB", 64 << 20, true}, {"4096", 4096, true}, {"1G", 1 << 30, true}, {"256 KiB", 256 << 10, true}, {"x", 0, false}, {"-1", 0, false}} {
		got, err := parseBytes(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseBytes(%q) = %d, %v", tc.in, got, err)
		}
	}
}

// TestMemnodeOverConnectionManager starts a memory node on one end of an
// in-memory link and runs perf tests from a client RNIC on the other end,
// connecting through the node's TCP connection manager (the --remote path).
func TestMemnodeOverConnectionManager(t *testing.T) {
	a, b := netio.Pipe()
	n, err := startMemnode(memnodeConfig{Listen: "127.0.0.1:0", Size: "1MiB", Regions: 2, DeviceMemory: "4KiB", MAC: "02:00:00:00:01:02", IP: "10.0.1.2", MTU: 1024, Timing: "off"}, b)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if len(n.acc.Regions) != 3 || n.acc.Regions[2].Addr != 0 || n.acc.Regions[0].Len != 512<<10 {
		t.Fatalf("regions %+v", n.acc.Regions)
	}
	rc, _ := rnicConfig("02:00:00:00:01:01", "10.0.1.1", 1024, "off")
	cli, err := rnic.New(a, rc)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	for _, test := range []string{"write_bw", "atomic_lat"} {
		r, err := perftest.Run(context.Background(), perftest.Config{Test: test, QPs: 2, Depth: 8, Size: 64, Ops: 5000, NoWarmup: true,
			Dev: cli, Dialer: &rnic.Dialer{Dev: cli}, Remote: n.ln.Addr().String()})
		if err != nil {
			t.Fatal(err)
		}
		if r.Ops < 5000 || r.Errors != 0 {
			t.Fatalf("%+v", r)
		}
	}
}

func TestPerfCommandJSON(t *testing.T) {
	var out bytes.Buffer
	root := newRootCmd(new(cpuProfile))
	root.SetOut(&out)
	root.SetArgs([]string{"perf", "read_bw", "--qps", "2", "--depth", "4", "--duration", "200ms", "--drop", "0.01", "--json"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	var r perftest.Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if r.Test != "read_bw" || r.QPs != 2 || r.Ops == 0 || r.OpsPerSec <= 0 || r.Latency.P99 <= 0 || r.Retransmits == 0 {
		t.Fatalf("%+v", r)
	}
}

// TestMemnodeAcrossNamespaces runs `swordbox memnode` and `swordbox perf
// --remote` as separate processes in two network namespaces joined by a
// veth pair: connection setup over TCP, RoCEv2 over AF_PACKET.
func TestMemnodeAcrossNamespaces(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces, AF_PACKET)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2")
	}
	bin := filepath.Join(t.TempDir(), "swordbox")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	suffix := strings.ReplaceAll(t.Name(), "/", "")[:8] + time.Now().Format("150405")
	nsA, nsB := "sbA"+suffix, "sbB"+suffix
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v\n%s", args, err, out)
		}
	}
	run("netns", "add", nsA)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", nsA).Run() })
	run("netns", "add", nsB)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", nsB).Run() })
	run("link", "add", "vsbA", "netns", nsA, "type", "veth", "peer", "name", "vsbB", "netns", nsB)
	run("-n", nsA, "addr", "add", "10.77.0.1/24", "dev", "vsbA")
	run("-n", nsB, "addr", "add", "10.77.0.2/24", "dev", "vsbB")
	run("-n", nsA, "link", "set", "vsbA", "up")
	run("-n", nsB, "link", "set", "vsbB", "up")
	run("-n", nsA, "link", "set", "lo", "up")
	run("-n", nsB, "link", "set", "lo", "up")

	node := exec.Command("ip", "netns", "exec", nsA, bin, "memnode", "--listen", "10.77.0.1:7471", "--iface", "vsbA",
		"--mac", "02:00:00:77:00:01", "--ip", "10.77.1.1", "--size", "16MiB", "--duration", "60s")
	var nodeOut bytes.Buffer
	node.Stdout, node.Stderr = &nodeOut, &nodeOut
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Process.Kill(); node.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(nodeOut.String(), "listening") {
		if time.Now().After(deadline) {
			t.Fatalf("memnode did not start: %s", nodeOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	out, err := exec.Command("ip", "netns", "exec", nsB, bin, "perf", "write_bw", "--remote", "10.77.0.1:7471", "--iface", "vsbB",
		"--mac", "02:00:00:77:00:02", "--ip", "10.77.1.2", "--qps", "4", "--depth", "8", "--duration", "500ms", "--json").CombinedOutput()
	if err != nil {
		t.Fatalf("perf: %v\n%s\nmemnode: %s", err, out, nodeOut.String())
	}
	var r perftest.Result
	if err := json.Unmarshal(out[bytes.LastIndexByte(bytes.TrimSpace(out), '\n')+1:], &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Logf("across namespaces: %s", r)
	if r.Ops == 0 || r.Errors != 0 {
		t.Fatalf("%+v", r)
	}
}

// FuzzParseBytes: no input panics, and an accepted one is a non-negative
// count that the range check can compare.
func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"64MiB", "4096", "1G", "256 KiB", "x", "-1", "9223372036854775807K", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseBytes(s)
		if err == nil && v < 0 {
			t.Fatalf("parseBytes(%q) = %d", s, v)
		}
	})
}

// A data interface whose MTU cannot carry packets of the RoCE path MTU is
// refused when the port opens (memnode, perf --remote and the Clover hosts
// share openDataPort): a veth's 1500 bytes with --mtu 4096 ended the first
// 4096-byte WRITE in RETRY_EXC_ERR, the kernel sending none of its packets.
func TestDataPortMTUTooSmall(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (a veth pair)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2")
	}
	a, b := "sbmtu"+time.Now().Format("150405"), "sbmtp"+time.Now().Format("150405")
	if out, err := exec.Command("ip", "link", "add", a, "mtu", "1500", "type", "veth", "peer", "name", b).CombinedOutput(); err != nil {
		t.Fatalf("ip link add: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "link", "del", a).Run() })
	for _, args := range [][]string{
		{"memnode", "--iface", a, "--mtu", "4096", "--listen", "127.0.0.1:0", "--duration", "1s"},
		{"perf", "write_bw", "--remote", "127.0.0.1:1", "--iface", a, "--mtu", "2048", "--duration", "1s"},
		{"clover", "ms", "--iface", a, "--mtu", "4096", "--memnode", "127.0.0.1:1"},
	} {
		p := startSwordbox(t, nil, args...)
		if code := p.wait(20 * time.Second); code != 1 || !strings.Contains(p.stderr.String(), "on "+a+": its packets take ") ||
			!strings.Contains(p.stderr.String(), "more than the interface's MTU 1500") {
			t.Errorf("%v: exit %d\n%s", args, code, p.stderr)
		}
	}
	// A path MTU the interface carries opens.
	p := startSwordbox(t, nil, "memnode", "--iface", a, "--mtu", "1024", "--listen", "127.0.0.1:0", "--duration", "100ms")
	if code := p.wait(20 * time.Second); code != 0 {
		t.Errorf("memnode --mtu 1024 on a 1500-byte link: exit %d\n%s", code, p.stderr)
	}
}
