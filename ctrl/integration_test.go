package ctrl

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	p4 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/swordbox/swordbox/ctrl/p4rtc"
	"github.com/swordbox/swordbox/ctrl/rack"
	"github.com/swordbox/swordbox/roce"
	"github.com/swordbox/swordbox/roce/verbs"
)

// fakeClock is the loops' clock in tests that count poll periods.
type fakeClock struct{ t time.Time }

func (f *fakeClock) now() time.Time          { return f.t }
func (f *fakeClock) advance(d time.Duration) { f.t = f.t.Add(d) }

func TestPipelinePushThenEveryEntryReadable(t *testing.T) {
	r := newRig(t, time.Second)
	rk := r.rackConfig(func(c *rack.Config) {
		c.Steering = rack.SteerReadWrite
		c.TrackedKeys = []uint64{3, 7, 1 << 40}
	})
	c := r.controller(rk, nil)
	r.primary(c)
	if got := r.srv.Stats().PipelineCommit; got != 1 {
		t.Fatalf("pipeline commits %d, want 1", got)
	}
	ctx := context.Background()

	fwd, err := c.readTable(ctx, tForward)
	if err != nil {
		t.Fatal(err)
	}
	if ups := Reconcile(fwd, c.plan.Forward); len(fwd) != 3 || len(ups) != 0 {
		t.Fatalf("forward table: %d entries, %d differences from the plan", len(fwd), len(ups))
	}
	tracked, err := c.readTracked(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tracked, map[uint64]uint16{3: 0, 7: 1, 1 << 40: 2}) {
		t.Fatalf("tracked keys read back: %v", tracked)
	}
	if cfg := readConfig(t, c); !reflect.DeepEqual(cfg, map[string]uint64{pMode: modeWrite | modeRead | modeChain, pNodeSize: nodeSize, pTailTTL: uint64(time.Minute / time.Microsecond)}) {
		t.Fatalf("config default entry read back: %v", cfg)
	}
	// A second controller life (same P4Info) pushes nothing and writes nothing new.
	before := testCounterSum(t, c.Metrics.EntriesInstalled)
	if err := c.TakeCharge(ctx); err != nil {
		t.Fatal(err)
	}
	if r.srv.Stats().PipelineCommit != 1 {
		t.Fatal("pipeline pushed again over the same P4Info")
	}
	if after := testCounterSum(t, c.Metrics.EntriesInstalled); after-before != 1 { // the config default entry is always rewritten
		t.Fatalf("re-taking charge wrote %v entries, want only the config default entry", after-before)
	}
}

// readConfig reads the config table's default entry from the switch and
// returns set_config's parameters by name.
func readConfig(t testing.TB, c *Controller) map[string]uint64 {
	t.Helper()
	tb, err := c.Schema.Table(tConfig)
	if err != nil {
		t.Fatal(err)
	}
	ents, err := c.Client.Read(context.Background(), p4rtc.TableEntity(&p4.TableEntry{TableId: tb.GetPreamble().GetId(), IsDefaultAction: true}))
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 {
		t.Fatalf("config default entry: %d entities", len(ents))
	}
	return configParams(t, c.Schema, ents[0].GetTableEntry())
}

// steeredCASDropped drives the rig to the paper's broken-chain situation:
// two puts of the tracked key, the second from a client with a stale view,
// whose CAS the switch steers to the cached tail and which is then lost
// between switch and memory node. It returns the dropped frame and the
// header word the memory node must end up with at the tail.
func steeredCASDropped(t *testing.T, r *rig) (dropped []byte, tailOff int, want uint64) {
	t.Helper()
	const t0, n1, n2 = 0, 128, 256
	r.setMemWord(t0, hw(0, 0, 1))
	// Put 1: node N1 (handle 1, entry version 2), CAS T0 -> N1. The switch
	// has no tail yet: not steered; its successful ATOMIC ACK (seen by the
	// switch before the client's completion) makes N1 the cached tail.
	r.writeNode(n1, testKey, 1, 2)
	r.cas(11, t0, hw(0, 0, 1), hw(1, 2, 1))
	if wc := r.waitWC(11, 5*time.Second); wc.Status != verbs.StatusSuccess || wc.Orig != hw(0, 0, 1) {
		t.Fatalf("put 1: %+v", wc)
	}
	// Put 2 from a stale client: node N2, CAS still aimed at T0. The switch
	// steers it to N1 (compare/swap entry version := 2); the link drops it.
	r.tap.armCAS(1)
	r.writeNode(n2, testKey, 2, 3)
	r.cas(12, t0, hw(0, 0, 1), hw(2, 3, 1))
	select {
	case dropped = <-r.tap.dropped:
	case <-time.After(5 * time.Second):
		t.Fatal("the steered CAS never reached the memory-node link")
	}
	p, err := roce.Parse(dropped)
	if err != nil {
		t.Fatal(err)
	}
	if p.AtomicETH.VA() != r.mr.Addr()+n1 {
		t.Fatalf("dropped CAS targets 0x%x, want the cached tail 0x%x (not steered?)", p.AtomicETH.VA(), r.mr.Addr()+n1)
	}
	return dropped, n1, hw(2, 3, 2)
}

func TestCASRepairEndToEnd(t *testing.T) {
	r := newRig(t, time.Hour) // the client never retransmits by itself
	clk := &fakeClock{t: time.Unix(1e6, 0)}
	rk := r.rackConfig(nil)
	c := r.controller(rk, clk.now)
	r.primary(c)
	ctx := context.Background()

	dropped, tail, want := steeredCASDropped(t, r)
	r.cli.Close() // the client fails before it could retransmit
	if got := r.memWord(tail); got != hw(0, 0, 2) {
		t.Fatalf("tail header before repair 0x%x: the CAS was not lost", got)
	}

	period := rk.RepairPeriod
	polls := 0
	for ; polls < 3 && r.memWord(tail) != want; polls++ {
		if _, err := c.RepairStep(ctx); err != nil {
			t.Fatal(err)
		}
		clk.advance(period)
		// Let a retransmission sent by this poll cross the switch (liveness bound).
		if testRepairs(c) > 0 {
			eventually(t, 5*time.Second, "the memory node applies the repaired CAS", func() bool { return r.memWord(tail) == want })
		}
	}
	if r.memWord(tail) != want {
		t.Fatalf("after %d polls the tail header is 0x%x, want 0x%x", polls, r.memWord(tail), want)
	}
	t.Logf("repaired within %d poll periods (threshold %s = %d periods)", polls, rk.RepairThreshold, rk.RepairThreshold/period)
	if testRepairs(c) != 1 {
		t.Fatalf("%v repairs sent, want 1", testRepairs(c))
	}
	// The memory node's ATOMIC ACK cleared the switch's record.
	eventually(t, 5*time.Second, "the outstanding CAS is cleared", func() bool {
		o, err := c.ReadOutstanding(ctx)
		return err == nil && len(o) == 0
	})
	// What was retransmitted is what was lost: same headers and AtomicETH,
	// only the IPv4 ID (and so the checksums) may differ.
	var buf [128]byte
	o := steeredRecord(t, dropped)
	frame, err := CASFrame(buf[:], &o)
	if err != nil {
		t.Fatal(err)
	}
	pd, _ := roce.Parse(dropped)
	pr, _ := roce.Parse(frame)
	fd, fr := roce.FieldsOf(&pd), roce.FieldsOf(&pr)
	fd.IPID, fr.IPID, fd.Payload, fr.Payload = 0, 0, nil, nil
	if !reflect.DeepEqual(fd, fr) {
		t.Fatalf("repair differs from the lost CAS:\n%+v\n%+v", fr, fd)
	}
}

// steeredRecord is the Outstanding record a dropped CAS frame implies.
func steeredRecord(t *testing.T, frame []byte) Outstanding {
	p, err := roce.Parse(frame)
	if err != nil {
		t.Fatal(err)
	}
	f := roce.FieldsOf(&p)
	return Outstanding{SrcMAC: f.SrcMAC, DstMAC: f.DstMAC, SrcIP: f.SrcIP, DstIP: f.DstIP, SrcPort: f.SrcPort,
		DestQP: f.DestQP, PSN: f.PSN, PKey: f.PKey, VA: f.VA, RKey: f.RKey, Swap: f.SwapAdd, Compare: f.Compare}
}

func TestSpuriousRepairChangesNothing(t *testing.T) {
	r := newRig(t, time.Hour) // alive, but slower than the controller
	clk := &fakeClock{t: time.Unix(1e6, 0)}
	rk := r.rackConfig(nil)
	c := r.controller(rk, clk.now)
	r.primary(c)
	ctx := context.Background()

	// The CAS reaches the memory node and is applied; its ATOMIC ACK is lost
	// on the way back, so the switch still holds it as outstanding.
	r.setMemWord(512, 40)
	r.tap.armAck(1)
	r.cas(21, 512, 40, 41)
	select {
	case <-r.tap.dropped:
	case <-time.After(5 * time.Second):
		t.Fatal("the ATOMIC ACK never came back")
	}
	if r.memWord(512) != 41 {
		t.Fatalf("CAS not applied: 0x%x", r.memWord(512))
	}
	before := r.memRead(0, 1<<16)

	for i := 0; i < 3 && testRepairs(c) == 0; i++ {
		if _, err := c.RepairStep(ctx); err != nil {
			t.Fatal(err)
		}
		clk.advance(rk.RepairPeriod)
	}
	if testRepairs(c) != 1 {
		t.Fatalf("%v repairs sent, want 1", testRepairs(c))
	}
	// The memory node sees a duplicate and replays its ACK: the client
	// completes with the original value, memory is unchanged.
	wc := r.waitWC(21, 5*time.Second)
	if wc.Status != verbs.StatusSuccess || wc.Orig != 40 {
		t.Fatalf("client completion %+v, want success with original 40", wc)
	}
	if !slices.Equal(before, r.memRead(0, 1<<16)) {
		t.Fatal("the spurious repair changed the memory node's region")
	}
	eventually(t, 5*time.Second, "the outstanding CAS is cleared", func() bool {
		o, err := c.ReadOutstanding(ctx)
		return err == nil && len(o) == 0
	})
	// And the connection still works.
	r.cas(22, 512, 41, 42)
	if wc := r.waitWC(22, 5*time.Second); wc.Status != verbs.StatusSuccess || wc.Orig != 41 || r.memWord(512) != 42 {
		t.Fatalf("next CAS: %+v, memory 0x%x", wc, r.memWord(512))
	}
}

func TestFailoverBackupTakesOverAndKeepsRepairing(t *testing.T) {
	r := newRig(t, time.Hour)
	rkA := r.rackConfig(func(c *rack.Config) {
		c.ElectionID = 2
		c.RepairPeriod, c.RepairThreshold = 5*time.Millisecond, 10*time.Millisecond
	})
	rkB := r.rackConfig(func(c *rack.Config) {
		c.ElectionID = 1
		c.Takeover = true
		c.RepairPeriod, c.RepairThreshold = 5*time.Millisecond, 10*time.Millisecond
	})
	a := r.controller(rkA, nil)
	ctxA, stopA := context.WithCancel(context.Background())
	doneA := make(chan error, 1)
	go func() { doneA <- a.Run(ctxA) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Client.WaitRole(ctx, p4rtc.Primary); err != nil {
		t.Fatal(err)
	}
	b := r.controller(rkB, nil)
	ctxB, stopB := context.WithCancel(context.Background())
	defer stopB()
	go b.Run(ctxB)
	if err := b.Client.WaitRole(ctx, p4rtc.Backup); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the primary takes charge", a.InCharge)
	if e, err := a.readTable(ctx, tForward); err != nil || len(e) != 3 {
		t.Fatalf("forward table after the primary took charge: %d entries, %v", len(e), err)
	}

	// Only the primary writes: the backup wrote nothing, and the switch
	// refuses its writes.
	if n := testCounterSum(t, b.Metrics.EntriesInstalled); n != 0 {
		t.Fatalf("the backup wrote %v entries", n)
	}
	e, _ := trackEntry(b.Schema, 99, 9)
	err := b.Client.Write(ctx, []*p4.Update{p4rtc.Insert(p4rtc.TableEntity(e))})
	if st, _ := status.FromError(errors.Unwrap(err)); err == nil || (st.Code() != codes.PermissionDenied && !containsCode(err, codes.PermissionDenied)) {
		t.Fatalf("backup write: %v, want PERMISSION_DENIED", err)
	}

	// The primary dies.
	stopA()
	<-doneA
	a.Close()
	if err := b.Client.WaitRole(ctx, p4rtc.Primary); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the new primary takes charge", b.InCharge)
	if got := b.Client.Election(); got.Low <= 2 {
		t.Fatalf("backup's election id %v after takeover, want above 2", got)
	}
	// ... and the new primary keeps repairing.
	_, tail, want := steeredCASDropped(t, r)
	r.cli.Close()
	eventually(t, 10*time.Second, "the new primary repairs the lost CAS", func() bool { return r.memWord(tail) == want })
	if testRepairs(b) < 1 {
		t.Fatal("repaired, but not by the backup")
	}
	if got := r.srv.Stats().PipelineCommit; got != 1 {
		t.Fatalf("%d pipeline commits: the takeover wiped the switch state", got)
	}
}

func containsCode(err error, c codes.Code) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if st, ok := status.FromError(e); ok && st.Code() == c {
			return true
		}
	}
	return false
}

func TestHotKeyTrackingMovesTheTrackedSet(t *testing.T) {
	r := newRig(t, time.Second)
	rk := r.rackConfig(func(c *rack.Config) {
		c.TrackedKeys = nil
		c.HotKeys, c.HotKeyProbes, c.HotKeyRange = 2, 2, "1-8"
	})
	c := r.controller(rk, nil)
	r.primary(c)
	ctx := context.Background()

	// Traffic that makes a tracked key active: a node WRITE of the key and a
	// linking CAS aimed at a tail word never used before (region offsets
	// from 16384 on, zero). Unsteered, it succeeds there and its ATOMIC ACK
	// confirms the node as the key's tail; from then on the next CAS is
	// steered to that tail or chained onto the key's last link (entry
	// version rewritten), where it succeeds too. Node versions start at 1:
	// a CAS comparing version 0 is never refused for chaining (rule 10),
	// and a refused CAS passes unsteered while the key's chain is live.
	var id uint64 = 1000
	scratch := 16384
	hammer := func(keys []uint64, rounds int) {
		for i := 0; i < rounds; i++ {
			for _, k := range keys {
				off := int(k) * 1024
				id++
				r.writeNode(off+128*(i%7+1), k, uint32(id), uint8(i+1))
				r.cas(id, scratch, hw(0, 0, 0), hw(uint32(id), uint8(i+1), 0))
				scratch += 8
				r.waitWC(id, 5*time.Second)
			}
		}
	}
	settle := func(want []uint64) {
		t.Helper()
		for step := 0; step < 12; step++ {
			hammer(want, 4)
			if err := c.HotKeyStep(ctx); err != nil {
				t.Fatal(err)
			}
			if slices.Equal(c.hot.Hot(), want) {
				t.Logf("hot set %v after %d steps", want, step+1)
				return
			}
		}
		t.Fatalf("hot set %v, want %v", c.hot.Hot(), want)
	}
	settle([]uint64{3, 5})
	settle([]uint64{6, 8})
	got, err := c.readTracked(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []uint64{6, 8} {
		if _, ok := got[k]; !ok {
			t.Fatalf("hot key %d not in the switch's tracked_keys %v", k, got)
		}
	}
	if len(got) > 4 {
		t.Fatalf("tracked_keys holds %d keys, more than hot + probes", len(got))
	}

	// What the controller saw is on /metrics.
	srv := httptest.NewServer(c.Metrics.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	for _, want := range []string{
		"swordbox_ctrl_arbitration_role 2",
		`swordbox_ctrl_entries_installed_total{table="SwordboxIngress.forward"} 3`,
		"swordbox_ctrl_tracked_keys ",
		"swordbox_ctrl_hot_key_changes_total ",
		`swordbox_ctrl_switch_counter_packets{counter="stats",index="cas_steered"} `,
		`swordbox_ctrl_key_counter_packets{counter="activity",key="6"} `,
		"swordbox_ctrl_repairs_sent_total 0",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(text, `index="cas_steered"} 0`+"\n") {
		t.Error("the switch's cas_steered counter was not mirrored")
	}
}

func TestReassignedSlotGetsAFreshTail(t *testing.T) {
	r := newRig(t, time.Second)
	c := r.controller(r.rackConfig(func(c *rack.Config) { c.TrackedKeys = []uint64{5} }), nil)
	r.primary(c)
	ctx := context.Background()
	cell, err := registerCell(c.Schema, rTailValid, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Client.Write(ctx, []*p4.Update{p4rtc.Modify(&p4.Entity{Entity: &p4.Entity_RegisterEntry{RegisterEntry: cell}})}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	// The operator changes the tracked keys: slot 0 now belongs to key 9.
	c2 := r.controller(r.rackConfig(func(c *rack.Config) { c.TrackedKeys = []uint64{9}; c.ElectionID = 2 }), nil)
	r.primary(c2)
	if got, _ := c2.readTracked(ctx); !reflect.DeepEqual(got, map[uint64]uint16{9: 0}) {
		t.Fatalf("tracked %v", got)
	}
	v, err := c2.ReadRegister(ctx, rTailValid, []int64{0})
	if err != nil || v[0] != 0 {
		t.Fatalf("tail_valid[0] = %d (%v): key 9 inherited key 5's cached tail", v[0], err)
	}
}
