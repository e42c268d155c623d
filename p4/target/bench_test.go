package target

import (
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"github.com/swordbox/swordbox/roce"
)

// Benchmarks report ns/op (wall clock) and allocs/op per packet, plus
// cpu-ns/op: the CPU time of the benchmark's own thread per packet
// (getrusage RUSAGE_THREAD), which stays meaningful when other processes
// share the cores, and Mpps-cpu = 1e3 / cpu-ns/op (packets per second on
// one core).

// cpuClock measures the CPU time of the calling thread (locked to it).
type cpuClock struct{ start time.Duration }

func threadCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU(b *testing.B) *cpuClock {
	runtime.LockOSThread()
	b.ReportAllocs()
	b.ResetTimer()
	return &cpuClock{start: threadCPU()}
}

func (c *cpuClock) report(b *testing.B) {
	cpu := threadCPU() - c.start
	b.StopTimer()
	runtime.UnlockOSThread()
	ns := float64(cpu.Nanoseconds()) / float64(b.N)
	b.ReportMetric(ns, "cpu-ns/op")
	if ns > 0 {
		b.ReportMetric(1e3/ns, "Mpps-cpu")
	}
}

func BenchmarkRouterForward(b *testing.B) {
	p := mustCompileFile(b, "../testdata/basic_router.p4")
	d := NewDevice(p, Options{})
	for i := 0; i < 100; i++ {
		err := d.WriteTableEntry(p4v1.Update_INSERT, &p4v1.TableEntry{
			TableId: tableID(b, p, "MyIngress.ipv4_lpm"),
			Match:   []*p4v1.FieldMatch{lpm(1, []byte{10, byte(i), 0, 0}, 16)},
			Action:  act(actionID(b, p, "MyIngress.ipv4_forward"), []byte{2, 0, 0, 0, 0, byte(i)}, []byte{2}),
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	frame := ipv4Frame(b, "10.42.1.1", 64)
	n := 0
	emit := func(uint32, []byte) { n++ }
	clk := startCPU(b)
	for i := 0; i < b.N; i++ {
		d.Process(1, frame, emit)
	}
	clk.report(b)
	if n != b.N {
		b.Fatalf("%d frames out of %d", n, b.N)
	}
}

// swordboxCAS builds a CAS frame of a tracked key's connection.
func swordboxCASFrame(b testing.TB, psn uint32, va uint64) []byte {
	f := roce.Fields{
		DstMAC: [6]byte{2, 0, 0, 0, 0, 2}, SrcMAC: [6]byte{2, 0, 0, 0, 0, 1},
		SrcIP: [4]byte{10, 0, 0, 1}, DstIP: [4]byte{10, 0, 0, 2}, TTL: 64, SrcPort: 50000,
		Opcode: roce.OpRCCompareSwap, PKey: 0xffff, DestQP: 0x11, AckReq: true, PSN: psn,
		VA: va, RKey: 0x1234, SwapAdd: 0xdeadbeef, Compare: 0x1000,
	}
	buf := make([]byte, 256)
	n, err := roce.Build(buf, &f)
	if err != nil {
		b.Fatal(err)
	}
	return buf[:n]
}

// BenchmarkSwordboxCAS runs p4/swordbox.p4 with write and read steering on,
// on the CAS path: the CAS record's lookup (a hash, four register reads),
// the linking-CAS check (its compare is a tail word; its swap names a node
// the node map does not hold: a hash, two reads, not learned), the CAS
// record (23 register writes), forwarding with a direct counter. Each packet has a new PSN so
// none is a retransmission; p4/ptf's BenchmarkCASPath runs steered CASes.
func BenchmarkSwordboxCAS(b *testing.B) {
	if _, err := os.Stat("../swordbox.p4"); err != nil {
		b.Skip("p4/swordbox.p4 not present")
	}
	p := mustCompileFile(b, "../swordbox.p4")
	d := NewDevice(p, Options{CPUPort: 255})
	if err := d.WriteTableEntry(p4v1.Update_INSERT, &p4v1.TableEntry{
		TableId: tableID(b, p, "SwordboxIngress.forward"),
		Match:   []*p4v1.FieldMatch{exact(1, []byte{2, 0, 0, 0, 0, 2})},
		Action:  act(actionID(b, p, "SwordboxIngress.set_egress"), []byte{2}),
	}); err != nil {
		b.Fatal(err)
	}
	// config: set_config(mode 3, node_size 144, tail_ttl 0).
	if err := d.WriteTableEntry(p4v1.Update_MODIFY, &p4v1.TableEntry{TableId: tableID(b, p, "SwordboxIngress.config"), IsDefaultAction: true,
		Action: act(actionID(b, p, "SwordboxIngress.set_config"), []byte{3}, []byte{144}, []byte{0})}); err != nil {
		b.Fatal(err)
	}
	frame := swordboxCASFrame(b, 1, 0x7f0000001000)
	n := 0
	emit := func(uint32, []byte) { n++ }
	clk := startCPU(b)
	for i := 0; i < b.N; i++ {
		// BTH PSN is the last 3 bytes of the BTH (Ethernet 14 + IPv4 20 + UDP 8 + 9).
		psn := uint32(i+1) & 0xffffff
		frame[51], frame[52], frame[53] = byte(psn>>16), byte(psn>>8), byte(psn)
		d.Process(1, frame, emit)
	}
	clk.report(b)
	if n != b.N {
		b.Fatalf("%d frames out of %d", n, b.N)
	}
}

// BenchmarkCompileSwordbox measures the front end and compiler on
// p4/swordbox.p4 (what SetForwardingPipelineConfig pays).
func BenchmarkCompileSwordbox(b *testing.B) {
	src, err := os.ReadFile("../swordbox.p4")
	if err != nil {
		b.Skip("p4/swordbox.p4 not present")
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Compile("swordbox.p4", src); err != nil {
			b.Fatal(err)
		}
	}
}
