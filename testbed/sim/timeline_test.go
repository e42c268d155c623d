package sim

import (
	"context"
	"testing"

	"github.com/swordbox/swordbox/roce/verbs"
)

// newTestRack is a rack of one memory node and hosts clients, steering
// off.
func newTestRack(t testing.TB, hosts int, seed uint64) *Rack {
	t.Helper()
	r, err := NewRack(context.Background(), Config{Seed: seed, Hosts: hosts, MemorySize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// recorder notes the virtual time of every engine step of a host.
type recorder struct{ at []int64 }

func record(r *Rack, h *Host) *recorder {
	rec := &recorder{}
	prev := h.AfterFire
	h.AfterFire = func() {
		rec.at = append(rec.at, r.Sim.Now())
		if prev != nil {
			prev()
		}
	}
	return rec
}

// TestTimeline checks the event loop against timelines computed by hand
// from the constants (ConnectX-5 model, 100 Gb/s links with 10 ns of
// propagation, 500 ns switch): one request at time 0 from host 1 to the
// memory node through the switch and back.
func TestTimeline(t *testing.T) {
	// Line time at 100 Gb/s: 0.08 ns per byte, frame + 24 bytes of
	// Ethernet overhead, arrival rounded up to the ns, then 10 ns.
	//
	// WRITE of 8 bytes: 14+20+8+12 (BTH) +16 (RETH) +8 +4 (ICRC) = 82
	// bytes, 106 on the wire = 8.48 ns. ACK: 14+20+8+12+4 (AETH) +4 =
	// 62 bytes, 86 on the wire = 6.88 ns.
	//   posted at 0, leaves the client at TxLatency = 600
	//   at the switch: ceil(600+8.48) + 10 = 619; out at 619+500 = 1119
	//   at the memory node: ceil(1119+8.48) + 10 = 1138
	//   executed after ProcLatency: 1238; ACK leaves at once (posted write)
	//   at the switch: ceil(1238+6.88) + 10 = 1255; out at 1755
	//   at the client: ceil(1755+6.88) + 10 = 1772
	//   completion after RxLatency = 100+250: 2122
	// READ of 64 bytes: request 14+20+8+12+16+4 = 74 bytes, 98 on the wire
	// = 7.84 ns; response READ_RESPONSE_ONLY 14+20+8+12+4 (AETH) +64 +4 =
	// 126 bytes, 150 on the wire = 12 ns.
	//   switch: ceil(607.84)+10 = 618, out 1118; node: ceil(1125.84)+10 = 1136
	//   executed 1236; response leaves after the PCIe round trip: 1736
	//   switch: 1748+10 = 1758, out 2258; client: 2270+10 = 2280; done 2630
	// CMP_SWAP: 14+20+8+12+28 (AtomicETH) +4 = 86 bytes, 110 = 8.8 ns;
	// ATOMIC ACK 14+20+8+12+4+8+4 = 70 bytes, 94 = 7.52 ns.
	//   switch: ceil(608.8)+10 = 619, out 1119; node: ceil(1127.8)+10 = 1138
	//   executed 1238 (every atomic unit idle); response after PCIe: 1738
	//   switch: ceil(1745.52)+10 = 1756, out 2256; client: ceil(2263.52)+10 = 2274
	//   done 2624
	for _, tc := range []struct {
		name       string
		op         verbs.Opcode
		n          uint32
		exec, done int64
	}{
		{"write", verbs.OpWrite, 8, 1238, 2122},
		{"read", verbs.OpRead, 64, 1236, 2630},
		{"cas", verbs.OpCompareSwap, 8, 1238, 2624},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newTestRack(t, 1, 1)
			cli, mem := r.Hosts[0], r.Memory[0]
			cq := cli.Device().NewCQ(8)
			q, _, err := r.Connect(cli, cq, mem, nil, 8)
			if err != nil {
				t.Fatal(err)
			}
			local, _ := cli.Device().Register(make([]byte, 4096), verbs.AccessAll)
			memRec, cliRec := record(r, mem), record(r, cli)
			rm := r.MemoryMR[0].Remote()
			wr := verbs.SendWR{ID: 1, Op: tc.op, SG: []verbs.SGE{{Addr: local.Addr(), Length: tc.n, LKey: local.LKey()}},
				RemoteAddr: rm.Addr, RKey: rm.RKey, Flags: verbs.Signaled}
			if err := q.PostSend([]verbs.SendWR{wr}); err != nil {
				t.Fatal(err)
			}
			r.Sim.RunUntil(100_000)
			if len(memRec.at) != 1 || memRec.at[0] != tc.exec {
				t.Errorf("memory node executed at %v, want [%d]", memRec.at, tc.exec)
			}
			if len(cliRec.at) != 1 || cliRec.at[0] != tc.done {
				t.Errorf("client processed the response at %v, want [%d]", cliRec.at, tc.done)
			}
			wcs := make([]verbs.WC, 4)
			if k := cq.Poll(wcs); k != 1 || wcs[0].Status != verbs.StatusSuccess || wcs[0].ID != 1 {
				t.Errorf("completions %+v", wcs[:k])
			}
		})
	}
}
