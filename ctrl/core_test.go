package ctrl

import (
	"reflect"
	"slices"
	"testing"
	"time"

	p4 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/swordbox/swordbox/ctrl/p4rtc"
	"github.com/swordbox/swordbox/roce"
)

func cas(slot int, psn uint32, ts uint64) Outstanding {
	return Outstanding{
		Slot: slot, SrcMAC: [6]byte{2, 0, 0, 0, 0, 1}, DstMAC: [6]byte{2, 0, 0, 0, 0, 2},
		SrcIP: [4]byte{10, 0, 0, 1}, DstIP: [4]byte{10, 0, 0, 2}, SrcPort: 50000,
		DestQP: 0x11, PSN: psn, PKey: 0xffff, VA: 0x7f0000001000, RKey: 0x1234,
		Swap: 0xdeadbeef, Compare: 0, Timestamp: ts,
	}
}

func TestRepairTracker(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	type step struct {
		at   int
		snap []Outstanding
		due  []int // slots due
		sent bool  // mark every due one as sent
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"repaired once old enough, then every threshold", []step{
			{0, []Outstanding{cas(1, 5, 100)}, nil, true},
			{20, []Outstanding{cas(1, 5, 100)}, nil, true},
			{30, []Outstanding{cas(1, 5, 100)}, []int{1}, true},
			{40, []Outstanding{cas(1, 5, 100)}, nil, true},
			{60, []Outstanding{cas(1, 5, 100)}, []int{1}, true},
		}},
		{"acknowledged before the threshold: never", []step{
			{0, []Outstanding{cas(1, 5, 100)}, nil, true},
			{20, nil, nil, true},
			{40, nil, nil, true},
		}},
		{"a client retransmission (new timestamp) restarts the age", []step{
			{0, []Outstanding{cas(1, 5, 100)}, nil, true},
			{20, []Outstanding{cas(1, 5, 120)}, nil, true},
			{40, []Outstanding{cas(1, 5, 120)}, nil, true},
			{50, []Outstanding{cas(1, 5, 120)}, []int{1}, true},
		}},
		{"a newer CAS on the slot restarts the age", []step{
			{0, []Outstanding{cas(1, 5, 100)}, nil, true},
			{25, []Outstanding{cas(1, 6, 125)}, nil, true},
			{50, []Outstanding{cas(1, 6, 125)}, nil, true},
			{55, []Outstanding{cas(1, 6, 125)}, []int{1}, true},
		}},
		{"independent slots", []step{
			{0, []Outstanding{cas(1, 5, 100)}, nil, true},
			{10, []Outstanding{cas(1, 5, 100), cas(7, 9, 110)}, nil, true},
			{30, []Outstanding{cas(1, 5, 100), cas(7, 9, 110)}, []int{1}, true},
			{40, []Outstanding{cas(1, 5, 100), cas(7, 9, 110)}, []int{7}, true},
		}},
		{"not marked sent: due again at the next poll", []step{
			{0, []Outstanding{cas(1, 5, 100)}, nil, false},
			{30, []Outstanding{cas(1, 5, 100)}, []int{1}, false},
			{35, []Outstanding{cas(1, 5, 100)}, []int{1}, false},
		}},
	}
	for _, tc := range cases {
		tr := NewRepairTracker(RepairPolicy{Threshold: 30 * time.Millisecond})
		for i, st := range tc.steps {
			due := tr.Observe(ms(st.at), st.snap)
			var got []int
			for _, o := range due {
				got = append(got, o.Slot)
				if st.sent {
					tr.Sent(o.Slot, ms(st.at))
				}
			}
			if !slices.Equal(got, st.due) {
				t.Errorf("%s: step %d (t=%dms): due %v, want %v", tc.name, i, st.at, got, st.due)
			}
		}
	}
}

func TestRepairTrackerGivesUp(t *testing.T) {
	tr := NewRepairTracker(RepairPolicy{Threshold: time.Millisecond, MaxAttempts: 3})
	t0 := time.Unix(0, 0)
	sent := 0
	for i := 0; i < 20; i++ {
		now := t0.Add(time.Duration(i) * time.Millisecond)
		for _, o := range tr.Observe(now, []Outstanding{cas(3, 1, 1)}) {
			tr.Sent(o.Slot, now)
			sent++
		}
	}
	if sent != 3 || tr.Abandoned != 1 {
		t.Fatalf("sent %d abandoned %d, want 3 and 1", sent, tr.Abandoned)
	}
}

func TestCASFrameRebuildsWhatTheSwitchForwarded(t *testing.T) {
	o := cas(4, 5, 0)
	var buf [128]byte
	frame, err := CASFrame(buf[:], &o)
	if err != nil {
		t.Fatal(err)
	}
	if len(frame) != 86 {
		t.Fatalf("CAS frame is %d bytes, want 86", len(frame))
	}
	p, err := roce.Parse(frame)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := roce.VerifyICRC(frame); !ok || err != nil {
		t.Fatalf("ICRC: %v %v", ok, err)
	}
	if !p.IP.ChecksumOK() || p.IP.TTL() != 64 || !p.IP.DF() {
		t.Fatalf("IPv4 header: checksum ok %v, TTL %d, DF %v", p.IP.ChecksumOK(), p.IP.TTL(), p.IP.DF())
	}
	f := roce.FieldsOf(&p)
	want := roce.Fields{
		DstMAC: o.DstMAC, SrcMAC: o.SrcMAC, SrcIP: o.SrcIP, DstIP: o.DstIP,
		DontFragment: true, TTL: 64, SrcPort: 50000, Opcode: roce.OpRCCompareSwap,
		MigReq: true, AckReq: true, PKey: 0xffff, DestQP: 0x11, PSN: 5,
		VA: 0x7f0000001000, RKey: 0x1234, SwapAdd: 0xdeadbeef, Compare: 0,
	}
	if len(f.Payload) != 0 {
		t.Fatalf("payload %x", f.Payload)
	}
	f.Payload = nil
	if !reflect.DeepEqual(f, want) {
		t.Fatalf("rebuilt\n%+v\nwant\n%+v", f, want)
	}
	// platform.md's worked example is this CAS with IPv4 ID 1; ours has ID
	// 0, so the two frames differ exactly in the ID, the IPv4 checksum and the ICRC.
	o.PSN = 1 << 24
	if _, err := CASFrame(buf[:], &o); err != nil {
		t.Fatalf("PSN register wider than 24 bits must be masked: %v", err)
	}
}

func TestHotKeysFollowTheWorkload(t *testing.T) {
	h := NewHotKeys(HotKeyPolicy{N: 2, Probes: 2, MinDelta: 1, Candidates: []uint64{10, 11, 12, 13, 14, 15}})
	if got := h.Tracked(); !slices.Equal(got, []uint64{10, 11}) {
		t.Fatalf("initial probes %v", got)
	}
	// Keys 12 and 13 are hot; the engine must find them by probing.
	heat := map[uint64]uint64{12: 100, 13: 80, 10: 3}
	activity := func(tracked []uint64) map[uint64]uint64 {
		d := map[uint64]uint64{}
		for _, k := range tracked {
			d[k] = heat[k]
		}
		return d
	}
	tracked := h.Tracked()
	for i := 0; i < 4; i++ {
		tracked = h.Step(activity(tracked))
	}
	if got := h.Hot(); !slices.Equal(got, []uint64{12, 13}) {
		t.Fatalf("hot %v, want [12 13] (tracked %v)", got, tracked)
	}
	// The workload moves to 15 and 10.
	heat = map[uint64]uint64{15: 50, 10: 60}
	for i := 0; i < 4; i++ {
		tracked = h.Step(activity(tracked))
	}
	if got := h.Hot(); !slices.Equal(got, []uint64{10, 15}) {
		t.Fatalf("hot %v, want [10 15]", got)
	}
	if len(tracked) > 4 {
		t.Fatalf("tracked %v exceeds N + probes", tracked)
	}
}

func TestHotKeysIncumbentsWinTies(t *testing.T) {
	h := NewHotKeys(HotKeyPolicy{N: 1, Probes: 1, MinDelta: 5, Candidates: []uint64{1, 2, 3}})
	h.Adopt([]uint64{3})
	// Probe 1 as active as incumbent 3: 3 stays. Below MinDelta never enters.
	h.Step(map[uint64]uint64{3: 7, 1: 7})
	if got := h.Hot(); !slices.Equal(got, []uint64{3}) {
		t.Fatalf("hot %v", got)
	}
	h2 := NewHotKeys(HotKeyPolicy{N: 1, Probes: 1, MinDelta: 5, Candidates: []uint64{1, 2}})
	h2.Step(map[uint64]uint64{1: 4})
	if got := h2.Hot(); len(got) != 0 {
		t.Fatalf("a key below MinDelta entered: %v", got)
	}
}

func TestPlanSlots(t *testing.T) {
	cur := map[uint64]uint16{10: 0, 11: 1, 12: 2}
	p, next := PlanSlots(cur, []uint64{11, 20, 21}, 4)
	if len(p.Delete) != 2 || p.Delete[10] != 0 || p.Delete[12] != 2 {
		t.Fatalf("delete %v", p.Delete)
	}
	if p.Insert[20] != 0 || p.Insert[21] != 2 || len(p.Insert) != 2 {
		t.Fatalf("insert %v (freed slots reused lowest first)", p.Insert)
	}
	if next[11] != 1 || len(next) != 3 {
		t.Fatalf("next %v", next)
	}
	_, next = PlanSlots(nil, []uint64{1, 2, 3}, 2)
	if len(next) != 2 {
		t.Fatalf("capacity not respected: %v", next)
	}
}

func TestReconcile(t *testing.T) {
	s, err := p4rtc.NewSchema(testP4Info(t))
	if err != nil {
		t.Fatal(err)
	}
	mk := func(mac byte, port uint64) *p4.TableEntry {
		e, err := s.TableEntry(tForward, []p4rtc.Match{p4rtc.Exact(fEthDst, []byte{2, 0, 0, 0, 0, mac})}, aSetEgress, p4rtc.P(pPort, port))
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	have := []*p4.TableEntry{mk(1, 1), mk(2, 9), mk(3, 3)}
	// A server may answer with padded bytestrings: still the same entry.
	padded := mk(1, 1)
	padded.Action.GetAction().Params[0].Value = []byte{0, 1}
	have[0] = padded
	want := []*p4.TableEntry{mk(1, 1), mk(2, 2), mk(4, 4)}
	ups := Reconcile(have, want)
	var kinds []string
	for _, u := range ups {
		kinds = append(kinds, u.GetType().String())
	}
	if !slices.Equal(kinds, []string{"MODIFY", "INSERT", "DELETE"}) {
		t.Fatalf("updates %v", kinds)
	}
	if len(Reconcile(want, want)) != 0 {
		t.Fatal("reconciling equal tables writes something")
	}
}

func TestDiffSlots(t *testing.T) {
	p := DiffSlots(map[uint64]uint16{1: 0, 2: 1, 3: 2}, map[uint64]uint16{2: 1, 3: 5, 4: 0})
	if !reflect.DeepEqual(p.Delete, map[uint64]uint16{1: 0, 3: 2}) || !reflect.DeepEqual(p.Insert, map[uint64]uint16{3: 5, 4: 0}) {
		t.Fatalf("delete %v insert %v", p.Delete, p.Insert)
	}
}

func BenchmarkRepairTrackerObserve(b *testing.B) {
	tr := NewRepairTracker(RepairPolicy{Threshold: time.Hour})
	snap := make([]Outstanding, 64)
	for i := range snap {
		snap[i] = cas(i, uint32(i), uint64(i))
	}
	now := time.Unix(0, 0)
	tr.Observe(now, snap)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tr.Observe(now, snap)
	}
}

func BenchmarkCASFrame(b *testing.B) {
	o := cas(1, 5, 0)
	var buf [128]byte
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := CASFrame(buf[:], &o); err != nil {
			b.Fatal(err)
		}
	}
}
