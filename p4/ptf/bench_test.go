package ptf

import (
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/p4/p4rt"
	"github.com/swordbox/swordbox/p4/target"
	"github.com/swordbox/swordbox/roce"
)

// steerDevice is swordbox.p4 on a bare target Device (no gRPC), programmed
// like newSteerRig: hosts forwarded, size filter, hotKey tracked, tails
// fresh for the whole run, mode.
func steerDevice(tb testing.TB, mode uint64) *target.Device {
	return steerDeviceClock(tb, mode, nil)
}

// steerDeviceClock is steerDevice on the given switch clock (microseconds;
// nil: the target's own).
func steerDeviceClock(tb testing.TB, mode uint64, now func() uint64) *target.Device {
	tb.Helper()
	src, info := loadProgram(tb)
	prog, err := target.Compile("swordbox.p4", src)
	if err != nil {
		tb.Fatal(err)
	}
	n := &names{t: tb, info: info}
	dev := target.NewDevice(prog, target.Options{CPUPort: p4rt.DefaultCPUPort, Now: now})
	must := func(err error) {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
	}
	fwd, setEg := prefix+"forward", prefix+"set_egress"
	for _, h := range []host{clientA, clientB, memnode, clientC} {
		must(dev.WriteTableEntry(p4v1.Update_INSERT, &p4v1.TableEntry{
			TableId: n.tableID(fwd),
			Match:   []*p4v1.FieldMatch{exact(n.matchFieldID(fwd, "hdr.ethernet.dst_addr"), enc(macU64(h.mac)))},
			Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{
				ActionId: n.actionID(setEg), Params: []*p4v1.Action_Param{{ParamId: n.paramID(setEg, "port"), Value: enc(uint64(h.port))}},
			}}},
		}))
	}
	tk, tr := prefix+"tracked_keys", prefix+"track"
	must(dev.WriteTableEntry(p4v1.Update_INSERT, &p4v1.TableEntry{
		TableId: n.tableID(tk),
		Match:   []*p4v1.FieldMatch{exact(n.matchFieldID(tk, "meta.clover_key"), enc(hotKey))},
		Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{
			ActionId: n.actionID(tr), Params: []*p4v1.Action_Param{{ParamId: n.paramID(tr, "slot"), Value: enc(keySlot)}},
		}}},
	}))
	must(dev.WriteTableEntry(p4v1.Update_MODIFY, n.configEntry(steerConfig{mode: mode, nodeSize: nodeSize, ttl: freshTTL})))
	return dev
}

// BenchmarkCASPath runs Clover appends through swordbox.p4 with write and
// read steering on: per iteration one node WRITE and one stale CAS on one
// of 64 connections, PSNs advancing in place (each connection in a PSN
// range of its own). A confirmed tail is cached first, so every CAS is
// steered. It reports ns per packet and the packet rate of one core.
func BenchmarkCASPath(b *testing.B) {
	dev := steerDevice(b, modeWrite|modeRead)
	var steered int
	dev.Process(clientA.port, nodeWrite(b, qpA, 1, nA1, valueSize), func(uint32, []byte) {})
	dev.Process(clientA.port, link(b, qpA, 2, nT0.va, nT0.ev, nA1), func(uint32, []byte) {})
	dev.Process(memnode.port, atomicAck(b, qpA, 2, hw(0, 0, nT0.ev)), func(uint32, []byte) {})
	const conns = 64
	type pair struct {
		write, cas []byte
		psn        uint32
	}
	pairs := make([]pair, conns)
	for i := range pairs {
		q := qp{clientB, memnode, uint16(40000 + i), uint32(0x100 + i)}
		n := node{nB1.va + uint64(i)<<12, 0x1000 + uint32(i), 2, hotKey}
		pairs[i] = pair{
			write: nodeWrite(b, q, 0, n, valueSize),
			cas:   link(b, q, 1, nT0.va, nT0.ev, n),
			psn:   uint32(i) << 18,
		}
	}
	bthPSN := roce.EthernetLen + 20 + 8 + 9 // BTH bytes 9..11 hold the PSN
	setPSN := func(f []byte, psn uint32) {
		f[bthPSN], f[bthPSN+1], f[bthPSN+2] = byte(psn>>16), byte(psn>>8), byte(psn)
	}
	var out int
	emit := func(port uint32, frame []byte) {
		out++
		if p, err := roce.Parse(frame); err == nil && p.Opcode == roce.OpRCCompareSwap && p.AtomicETH.VA() == nA1.va {
			steered++
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		p := &pairs[i%conns]
		p.psn = (p.psn + 2) & 0xffffff
		setPSN(p.write, p.psn)
		setPSN(p.cas, p.psn+1)
		dev.Process(clientB.port, p.write, emit)
		dev.Process(clientB.port, p.cas, emit)
	}
	b.StopTimer()
	cpu := cpuTime() - cpu0
	if out != 2*b.N || steered != b.N {
		b.Fatalf("%d frames out of %d, %d CAS steered of %d", out, 2*b.N, steered, b.N)
	}
	pkts := float64(2 * b.N)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/pkts, "ns/pkt")
	b.ReportMetric(pkts/b.Elapsed().Seconds()/1e6, "Mpps")
	// CPU time of the process per packet: on a shared machine the wall
	// clock also counts time the benchmark waited for a core.
	b.ReportMetric(float64(cpu.Nanoseconds())/pkts, "cpu-ns/pkt")
}

// cpuTime is the user plus system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSwitchDataPlane is BenchmarkCASPath through the whole switch:
// frames enter an in-memory port, cross the P4Runtime server's receive loop
// and the target, and leave on the memory node's port, with at most 256
// frames in flight. allocs/op counts every goroutine of the process, and
// cpu-ns/pkt includes the host side (the sender polls for window room).
func BenchmarkSwitchDataPlane(b *testing.B) {
	r := newRigReaders(b, false, 1, 3)
	r.forward(memnode.mac, 3)
	r.setConfig("node_size", nodeSize)
	r.setConfig("mode", modeWrite|modeRead)
	r.track(hotKey, keySlot)
	const conns, window = 64, 256
	frames := make([][]byte, 0, 2*conns)
	for i := 0; i < conns; i++ {
		q := qp{clientA, memnode, uint16(40000 + i), uint32(0x100 + i)}
		n := node{nB1.va + uint64(i)<<12, 0x1000 + uint32(i), 2, hotKey}
		frames = append(frames, nodeWrite(b, q, 0, n, valueSize), link(b, q, 1, nT0.va, nT0.ev, n))
	}
	psns := make([]uint32, conns)
	for i := range psns {
		psns[i] = uint32(i) << 18 // a PSN range per connection: no two CAS share a record
	}
	bthPSN := roce.EthernetLen + 20 + 8 + 9
	var received atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		bufs := make([][]byte, 32)
		for i := range bufs {
			bufs[i] = make([]byte, netio.MaxFrameSize)
		}
		for {
			for i := range bufs {
				bufs[i] = bufs[i][:cap(bufs[i])]
			}
			n, err := r.hosts[3].Recv(bufs)
			if err != nil {
				return
			}
			received.Add(int64(n))
		}
	}()
	total := int64(2 * b.N)
	one := make([][]byte, 2)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		c := i % conns
		psns[c] = (psns[c] + 2) & 0xffffff
		w, x := frames[2*c], frames[2*c+1]
		w[bthPSN], w[bthPSN+1], w[bthPSN+2] = byte(psns[c]>>16), byte(psns[c]>>8), byte(psns[c])
		p := psns[c] + 1
		x[bthPSN], x[bthPSN+1], x[bthPSN+2] = byte(p>>16), byte(p>>8), byte(p)
		for int64(2*i)-received.Load() > window {
			runtime.Gosched()
		}
		one[0], one[1] = w, x
		if n, err := r.hosts[1].Send(one); n != 2 || err != nil {
			b.Fatalf("send: %d, %v", n, err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for received.Load() < total && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	b.StopTimer()
	cpu := cpuTime() - cpu0
	if got := received.Load(); got != total {
		b.Fatalf("%d frames out of %d", got, total)
	}
	pkts := float64(total)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/pkts, "ns/pkt")
	b.ReportMetric(pkts/b.Elapsed().Seconds()/1e6, "Mpps")
	b.ReportMetric(float64(cpu.Nanoseconds())/pkts, "cpu-ns/pkt")
}

// FuzzSwordboxFrames feeds mutated RoCEv2 frames to swordbox.p4 (steering
// on, hotKey tracked): the pipeline must never panic, and a frame it
// forwards is never longer than it came in (steering rewrites in place).
func FuzzSwordboxFrames(f *testing.F) {
	f.Add(nodeWrite(f, qpA, 100, nA1, valueSize))
	f.Add(link(f, qpA, 101, nT0.va, nT0.ev, nA1))
	f.Add(readReq(f, qpC, 300, nA1.va, nodeSize))
	f.Add(atomicAck(f, qpA, 101, hw(0, 0, nT0.ev)))
	f.Add(writeOf(f, qpA, 102, roce.OpRCWriteOnly, nA3.va, nodePayload(nA3, 0)[:20]))
	dev := steerDevice(f, modeWrite|modeRead)
	f.Fuzz(func(t *testing.T, frame []byte) {
		for _, port := range []uint32{clientA.port, p4rt.DefaultCPUPort} {
			dev.Process(port, frame, func(_ uint32, out []byte) {
				if port != p4rt.DefaultCPUPort && len(out) > len(frame) {
					t.Fatalf("frame grew from %d to %d bytes", len(frame), len(out))
				}
			})
		}
	})
}
