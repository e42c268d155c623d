package target

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// P4Runtime semantics of the entity methods, error code by error code.
func TestTableEntryErrors(t *testing.T) {
	p := mustCompileFile(t, "../testdata/basic_router.p4")
	d := NewDevice(p, Options{})
	tid := tableID(t, p, "MyIngress.ipv4_lpm")
	fwd := actionID(t, p, "MyIngress.ipv4_forward")
	mac := []byte{2, 0, 0, 0, 0, 1}
	good := func() *p4v1.TableEntry {
		return &p4v1.TableEntry{TableId: tid, Match: []*p4v1.FieldMatch{lpm(1, []byte{10, 0, 0, 0}, 8)}, Action: act(fwd, mac, []byte{1})}
	}
	mod := func(f func(e *p4v1.TableEntry)) *p4v1.TableEntry { e := good(); f(e); return e }
	if err := d.WriteTableEntry(p4v1.Update_INSERT, good()); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		ut   p4v1.Update_Type
		e    *p4v1.TableEntry
		code string
	}{
		{"duplicate insert", p4v1.Update_INSERT, good(), "AlreadyExists"},
		{"unknown table", p4v1.Update_INSERT, mod(func(e *p4v1.TableEntry) { e.TableId = 0x02000001 }), "NotFound"},
		{"modify missing", p4v1.Update_MODIFY, mod(func(e *p4v1.TableEntry) { e.Match = []*p4v1.FieldMatch{lpm(1, []byte{11, 0, 0, 0}, 8)} }), "NotFound"},
		{"delete missing", p4v1.Update_DELETE, mod(func(e *p4v1.TableEntry) { e.Match = []*p4v1.FieldMatch{lpm(1, []byte{10, 0, 0, 0}, 9)} }), "NotFound"},
		{"no action", p4v1.Update_INSERT, mod(func(e *p4v1.TableEntry) { e.Match[0] = lpm(1, []byte{12, 0, 0, 0}, 8); e.Action = nil }), "InvalidArgument"},
		{"action not in table", p4v1.Update_INSERT, mod(func(e *p4v1.TableEntry) { e.Match[0] = lpm(1, []byte{12, 0, 0, 0}, 8); e.Action = act(0x01000001) }), "InvalidArgument"},
		{"missing param", p4v1.Update_INSERT, mod(func(e *p4v1.TableEntry) { e.Match[0] = lpm(1, []byte{12, 0, 0, 0}, 8); e.Action = act(fwd, mac) }), "InvalidArgument"},
		{"param too wide", p4v1.Update_INSERT, mod(func(e *p4v1.TableEntry) {
			e.Match[0] = lpm(1, []byte{12, 0, 0, 0}, 8)
			e.Action = act(fwd, mac, []byte{2, 0})
		}), "OutOfRange"},
		{"match too wide", p4v1.Update_INSERT, mod(func(e *p4v1.TableEntry) { e.Match[0] = lpm(1, []byte{1, 12, 0, 0, 0}, 8) }), "OutOfRange"},
		{"prefix 0", p4v1.Update_INSERT, mod(func(e *p4v1.TableEntry) { e.Match[0] = lpm(1, []byte{0}, 0) }), "InvalidArgument"},
		{"bits past prefix", p4v1.Update_INSERT, mod(func(e *p4v1.TableEntry) { e.Match[0] = lpm(1, []byte{12, 0, 0, 1}, 8) }), "InvalidArgument"},
		{"wrong match kind", p4v1.Update_INSERT, mod(func(e *p4v1.TableEntry) { e.Match[0] = exact(1, []byte{12, 0, 0, 0}) }), "InvalidArgument"},
		{"unknown field", p4v1.Update_INSERT, mod(func(e *p4v1.TableEntry) { e.Match[0].FieldId = 2 }), "InvalidArgument"},
		{"priority on lpm table", p4v1.Update_INSERT, mod(func(e *p4v1.TableEntry) { e.Match[0] = lpm(1, []byte{12, 0, 0, 0}, 8); e.Priority = 1 }), "InvalidArgument"},
		{"insert default", p4v1.Update_INSERT, &p4v1.TableEntry{TableId: tid, IsDefaultAction: true, Action: act(fwd, mac, []byte{1})}, "InvalidArgument"},
		{"default with match", p4v1.Update_MODIFY, mod(func(e *p4v1.TableEntry) { e.IsDefaultAction = true }), "InvalidArgument"},
	}
	for _, c := range cases {
		err := d.WriteTableEntry(c.ut, c.e)
		if statusCode(err) != c.code {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
	}
	// Padded byte strings are accepted and read back canonical.
	padded := &p4v1.TableEntry{TableId: tid, Match: []*p4v1.FieldMatch{lpm(1, []byte{0, 0, 20, 0, 0, 0}, 8)},
		Action: act(fwd, []byte{0, 0, 0, 0, 0, 0, 0, 5}, []byte{0, 3})}
	if err := d.WriteTableEntry(p4v1.Update_INSERT, padded); err != nil {
		t.Fatal(err)
	}
	var got []*p4v1.TableEntry
	if err := d.ReadTableEntries(&p4v1.TableEntry{TableId: tid, Match: []*p4v1.FieldMatch{lpm(1, []byte{20, 0, 0, 0}, 8)}},
		func(e *p4v1.TableEntry) error { got = append(got, e); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("read by match: %d entries", len(got))
	}
	lp := got[0].Match[0].GetLpm()
	params := got[0].Action.GetAction().Params
	if !bytes.Equal(lp.Value, []byte{20, 0, 0, 0}) || lp.PrefixLen != 8 || !bytes.Equal(params[0].Value, []byte{5}) || !bytes.Equal(params[1].Value, []byte{3}) {
		t.Fatalf("read back %v", got[0])
	}
	// Wildcard read: both entries, insertion order.
	n := 0
	if err := d.ReadTableEntries(&p4v1.TableEntry{}, func(*p4v1.TableEntry) error { n++; return nil }); err != nil || n != 2 {
		t.Fatalf("wildcard read: %d entries, %v", n, err)
	}
}

const smallTables = `
    direct_counter(CounterType.packets_and_bytes) dc;
    action set_a(bit<8> v) { hdr.h.a = v; }
    action only_default() { }
    table ex {
        key = { hdr.h.b: exact; }
        actions = { set_a; @defaultonly only_default; }
        counters = dc;
        size = 2;
    }
    table tn {
        key = { hdr.h.c: ternary; }
        actions = { set_a; }
    }`

func TestTableSizeScopeAndDirectCounters(t *testing.T) {
	p := featureProgram(t, smallTables, "ex.apply(); tn.apply();")
	d := NewDevice(p, Options{})
	ex, tn := tableID(t, p, "I.ex"), tableID(t, p, "I.tn")
	setA, od := actionID(t, p, "I.set_a"), actionID(t, p, "I.only_default")
	ins := func(b byte, a *p4v1.TableAction) error {
		return d.WriteTableEntry(p4v1.Update_INSERT, &p4v1.TableEntry{TableId: ex, Match: []*p4v1.FieldMatch{exact(1, []byte{b})}, Action: a})
	}
	if err := ins(1, act(od)); statusCode(err) != "InvalidArgument" {
		t.Errorf("@defaultonly action in an entry: %v", err)
	}
	if err := ins(1, act(setA, []byte{9})); err != nil {
		t.Fatal(err)
	}
	if err := ins(2, act(setA, []byte{8})); err != nil {
		t.Fatal(err)
	}
	if err := ins(3, act(setA, []byte{7})); statusCode(err) != "ResourceExhausted" {
		t.Errorf("third entry in a size-2 table: %v", err)
	}
	tern := func(prio int32, m []byte) error {
		return d.WriteTableEntry(p4v1.Update_INSERT, &p4v1.TableEntry{TableId: tn, Priority: prio,
			Match: []*p4v1.FieldMatch{ternary(1, []byte{0}, m)}, Action: act(setA, []byte{1})})
	}
	if err := tern(0, []byte{0xff}); statusCode(err) != "InvalidArgument" {
		t.Errorf("ternary without priority: %v", err)
	}
	if err := tern(1, []byte{0}); statusCode(err) != "InvalidArgument" {
		t.Errorf("zero mask: %v", err)
	}
	if err := d.WriteTableEntry(p4v1.Update_INSERT, &p4v1.TableEntry{TableId: tn, Priority: 1,
		Match: []*p4v1.FieldMatch{ternary(1, []byte{1}, []byte{0xfe})}, Action: act(setA, []byte{1})}); statusCode(err) != "InvalidArgument" {
		t.Errorf("value outside mask: %v", err)
	}
	// Direct counters: two hits on b=1, one on b=2, misses not counted.
	for _, b := range []uint8{1, 1, 2, 5} {
		runFeature(t, d, hv{b: b})
	}
	counts := map[string]int64{}
	if err := d.ReadDirectCounterEntries(&p4v1.DirectCounterEntry{TableEntry: &p4v1.TableEntry{TableId: ex}}, func(e *p4v1.DirectCounterEntry) error {
		counts[fmt.Sprint(e.TableEntry.Match[0].GetExact().Value)] = e.Data.PacketCount
		if e.Data.ByteCount != e.Data.PacketCount*20 {
			t.Errorf("bytes %d for %d packets of 20 bytes", e.Data.ByteCount, e.Data.PacketCount)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if counts["[1]"] != 2 || counts["[2]"] != 1 || len(counts) != 2 {
		t.Fatalf("direct counters %v", counts)
	}
	if err := d.ReadDirectCounterEntries(&p4v1.DirectCounterEntry{TableEntry: &p4v1.TableEntry{TableId: tn}},
		func(*p4v1.DirectCounterEntry) error { return nil }); statusCode(err) != "InvalidArgument" {
		t.Errorf("direct counter of a table without one: %v", err)
	}
	// Write a direct counter, read it back through the table entry.
	if err := d.WriteDirectCounterEntry(&p4v1.DirectCounterEntry{TableEntry: &p4v1.TableEntry{TableId: ex,
		Match: []*p4v1.FieldMatch{exact(1, []byte{1})}}, Data: &p4v1.CounterData{PacketCount: 100, ByteCount: 5}}); err != nil {
		t.Fatal(err)
	}
	var e1 *p4v1.TableEntry
	if err := d.ReadTableEntries(&p4v1.TableEntry{TableId: ex, Match: []*p4v1.FieldMatch{exact(1, []byte{1})}, CounterData: &p4v1.CounterData{}},
		func(e *p4v1.TableEntry) error { e1 = e; return nil }); err != nil {
		t.Fatal(err)
	}
	if e1.CounterData.PacketCount != 100 || e1.CounterData.ByteCount != 5 {
		t.Fatalf("counter data %v", e1.CounterData)
	}
}

func TestRegisterAndCounterErrors(t *testing.T) {
	p := featureProgram(t, "register<bit<8>>(4) r; counter(2, CounterType.packets) c;", "c.count(0);")
	d := NewDevice(p, Options{})
	rid, cid := registerID(t, p, "I.r"), counterID(t, p, "I.c")
	bs := func(b ...byte) *p4v1.P4Data { return &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: b}} }
	cases := []struct {
		name string
		err  error
		code string
	}{
		{"register index", d.WriteRegisterEntry(&p4v1.RegisterEntry{RegisterId: rid, Index: &p4v1.Index{Index: 4}, Data: bs(1)}), "OutOfRange"},
		{"register value", d.WriteRegisterEntry(&p4v1.RegisterEntry{RegisterId: rid, Index: &p4v1.Index{Index: 0}, Data: bs(1, 0)}), "OutOfRange"},
		{"register id", d.WriteRegisterEntry(&p4v1.RegisterEntry{RegisterId: rid + 1, Data: bs(1)}), "NotFound"},
		{"register data", d.WriteRegisterEntry(&p4v1.RegisterEntry{RegisterId: rid, Data: &p4v1.P4Data{}}), "InvalidArgument"},
		{"counter index", d.WriteCounterEntry(&p4v1.CounterEntry{CounterId: cid, Index: &p4v1.Index{Index: 2}, Data: &p4v1.CounterData{}}), "OutOfRange"},
		{"counter negative index", d.WriteCounterEntry(&p4v1.CounterEntry{CounterId: cid, Index: &p4v1.Index{Index: -1}, Data: &p4v1.CounterData{}}), "InvalidArgument"},
		{"register negative index", d.ReadRegisterEntries(&p4v1.RegisterEntry{RegisterId: rid, Index: &p4v1.Index{Index: -1}}, nil), "InvalidArgument"},
		{"register empty value", d.WriteRegisterEntry(&p4v1.RegisterEntry{RegisterId: rid, Index: &p4v1.Index{Index: 0}, Data: bs()}), "OutOfRange"},
		{"register padded value", d.WriteRegisterEntry(&p4v1.RegisterEntry{RegisterId: rid, Index: &p4v1.Index{Index: 0}, Data: bs(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff)}), "OK"},
		{"counter id", d.ReadCounterEntries(&p4v1.CounterEntry{CounterId: 7}, nil), "NotFound"},
		{"register read index", d.ReadRegisterEntries(&p4v1.RegisterEntry{RegisterId: rid, Index: &p4v1.Index{Index: 9}}, nil), "OutOfRange"},
	}
	for _, c := range cases {
		if statusCode(c.err) != c.code {
			t.Errorf("%s: %v, want %s", c.name, c.err, c.code)
		}
	}
	// Unset index writes every cell.
	if err := d.WriteRegisterEntry(&p4v1.RegisterEntry{RegisterId: rid, Data: bs(0, 7)}); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := d.ReadRegisterEntries(&p4v1.RegisterEntry{RegisterId: rid}, func(e *p4v1.RegisterEntry) error {
		if !bytes.Equal(e.Data.GetBitstring(), []byte{7}) {
			t.Errorf("cell %d = % x", e.Index.Index, e.Data.GetBitstring())
		}
		n++
		return nil
	}); err != nil || n != 4 {
		t.Fatalf("%d cells, %v", n, err)
	}
	runFeature(t, d, hv{})
	var got []int64
	if err := d.ReadCounterEntries(&p4v1.CounterEntry{CounterId: cid}, func(e *p4v1.CounterEntry) error {
		got = append(got, e.Data.PacketCount)
		if e.Data.ByteCount != 0 {
			t.Errorf("a packets counter reports bytes")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[1 0]" {
		t.Fatalf("counter cells %v", got)
	}
}

// TestConcurrentWritesAndPackets runs control-plane writes and reads while
// packets flow (run it with -race).
func TestConcurrentWritesAndPackets(t *testing.T) {
	p := mustCompileFile(t, "../testdata/basic_router.p4")
	d := NewDevice(p, Options{})
	tid := tableID(t, p, "MyIngress.ipv4_lpm")
	fwd := actionID(t, p, "MyIngress.ipv4_forward")
	frame := ipv4Frame(t, "10.0.0.1", 64)
	var wg sync.WaitGroup
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				d.Process(1, frame, func(uint32, []byte) {})
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 200; i++ {
			e := &p4v1.TableEntry{TableId: tid, Match: []*p4v1.FieldMatch{lpm(1, []byte{10, byte(i), 0, 0}, 16)},
				Action: act(fwd, []byte{2, 0, 0, 0, 0, 1}, []byte{2})}
			if err := d.WriteTableEntry(p4v1.Update_INSERT, e); err != nil {
				t.Error(err)
				return
			}
			if err := d.ReadTableEntries(&p4v1.TableEntry{TableId: tid}, func(*p4v1.TableEntry) error { return nil }); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	wg.Wait()
	if s := d.Stats(); s.In != 4000 || s.Out+s.Dropped != 4000 {
		t.Fatalf("stats %+v", s)
	}
}
