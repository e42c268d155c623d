package p4rt_test

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/swordbox/swordbox/netio"
)

// P4Runtime conformance: every response code below is the one the
// P4Runtime specification (v1.5.0) prescribes, checked with a real gRPC
// client on loopback against p4/testdata/pre.p4.

const preP4 = "../testdata/pre.p4"

// prePorts are the front-panel ports of the PRE environment.
var prePorts = []uint32{1, 2, 3, 4, 5, 6}

func newPREEnv(t *testing.T, dial ...grpc.DialOption) (*env, *client) {
	t.Helper()
	e := newEnvFor(t, preP4, dial, prePorts...)
	c := e.connect(1)
	c.expectArbitration(codes.OK, 1)
	if err := e.setPipeline(1, p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, e.config()); err != nil {
		t.Fatal(err)
	}
	return e, c
}

func (e *env) counterID(name string) uint32 { return idOf(e.t, "counter", e.info.GetCounters(), name) }

// fwdEntry is I.fwd: arg -> set_port(port), with arg as given (bytes).
func (e *env) fwdEntry(arg []byte, port byte) *p4v1.TableEntry {
	return &p4v1.TableEntry{
		TableId: e.tableID("I.fwd"),
		Match:   []*p4v1.FieldMatch{{FieldId: 1, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: arg}}}},
		Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{
			ActionId: e.actionID("I.set_port"), Params: []*p4v1.Action_Param{{ParamId: 1, Value: []byte{port}}},
		}}},
	}
}

// entity wraps x in the Entity oneof member of its type (multicast groups
// and clone sessions in a PacketReplicationEngineEntry first).
func entity(x proto.Message) *p4v1.Entity {
	switch v := x.(type) {
	case *p4v1.MulticastGroupEntry:
		x = &p4v1.PacketReplicationEngineEntry{Type: &p4v1.PacketReplicationEngineEntry_MulticastGroupEntry{MulticastGroupEntry: v}}
	case *p4v1.CloneSessionEntry:
		x = &p4v1.PacketReplicationEngineEntry{Type: &p4v1.PacketReplicationEngineEntry_CloneSessionEntry{CloneSessionEntry: v}}
	}
	e := &p4v1.Entity{}
	m := e.ProtoReflect()
	fds := m.Descriptor().Oneofs().ByName("entity").Fields()
	for i := 0; i < fds.Len(); i++ {
		if fds.Get(i).Message().FullName() == x.ProtoReflect().Descriptor().FullName() {
			m.Set(fds.Get(i), protoreflect.ValueOfMessage(x.ProtoReflect()))
			return e
		}
	}
	panic(fmt.Sprintf("entity: %T is not an Entity member", x))
}

func upd(t p4v1.Update_Type, x proto.Message) *p4v1.Update {
	return &p4v1.Update{Type: t, Entity: entity(x)}
}

func replica(port byte, instance uint32) *p4v1.Replica {
	return &p4v1.Replica{PortKind: &p4v1.Replica_Port{Port: []byte{port}}, Instance: instance}
}

func (e *env) writeAtomic(a p4v1.WriteRequest_Atomicity, updates ...*p4v1.Update) error {
	_, err := e.cl.Write(context.Background(), &p4v1.WriteRequest{DeviceId: devID, ElectionId: &p4v1.Uint128{Low: 1}, Updates: updates, Atomicity: a})
	return err
}

func one(t *testing.T, what string, err error, want codes.Code) {
	t.Helper()
	if err == nil {
		if want != codes.OK {
			t.Errorf("%s: OK, want %v", what, want)
		}
		return
	}
	got := details(t, err)
	if len(got) != 1 || got[0] != want {
		t.Errorf("%s: %v (%v), want %v", what, got, err, want)
	}
}

func TestConformanceByteStrings(t *testing.T) {
	e, _ := newPREEnv(t)
	// Empty strings are OUT_OF_RANGE (Bytestrings: "If the string's byte
	// length is zero, the server always rejects the string"), and so are
	// values wider than the field; zero padding is accepted and reads back
	// in the shortest form (read-write symmetry).
	one(t, "empty match value", e.write(1, upd(p4v1.Update_INSERT, e.fwdEntry(nil, 2))), codes.OutOfRange)
	one(t, "empty param", e.write(1, upd(p4v1.Update_INSERT, func() *p4v1.TableEntry {
		te := e.fwdEntry([]byte{1}, 2)
		te.GetAction().GetAction().Params[0].Value = nil
		return te
	}())), codes.OutOfRange)
	one(t, "match value over 8 bits", e.write(1, upd(p4v1.Update_INSERT, e.fwdEntry([]byte{1, 0}, 2))), codes.OutOfRange)
	one(t, "port over 9 bits", e.write(1, upd(p4v1.Update_INSERT, func() *p4v1.TableEntry {
		te := e.fwdEntry([]byte{1}, 0)
		te.GetAction().GetAction().Params[0].Value = []byte{2, 0}
		return te
	}())), codes.OutOfRange)
	one(t, "register value over 16 bits", e.write(1, upd(p4v1.Update_MODIFY, &p4v1.RegisterEntry{RegisterId: e.registerID("I.r"), Index: &p4v1.Index{Index: 1},
		Data: &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: []byte{1, 0, 0}}}})), codes.OutOfRange)
	one(t, "padded match value", e.write(1, upd(p4v1.Update_INSERT, e.fwdEntry([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5}, 2))), codes.OK)
	es, err := e.read(entity(&p4v1.TableEntry{TableId: e.tableID("I.fwd")}))
	if err != nil || len(es) != 1 || !bytes.Equal(es[0].GetTableEntry().GetMatch()[0].GetExact().GetValue(), []byte{5}) {
		t.Errorf("read back: %v, %v; want one entry with match value 05", es, err)
	}
}

func TestConformanceWriteCodes(t *testing.T) {
	e, _ := newPREEnv(t)
	if err := e.write(1, upd(p4v1.Update_INSERT, e.fwdEntry([]byte{1}, 2))); err != nil {
		t.Fatal(err)
	}
	isConst := e.fwdEntry([]byte{2}, 2)
	isConst.IsConst = true
	reg, ctr := e.registerID("I.r"), e.counterID("I.c")
	bits := func(b ...byte) *p4v1.P4Data { return &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: b}} }
	badAction := e.fwdEntry([]byte{3}, 2)
	badAction.GetAction().GetAction().ActionId = 12345
	badField := e.fwdEntry([]byte{3}, 2)
	badField.Match[0].FieldId = 9
	missing := &p4v1.DirectCounterEntry{TableEntry: &p4v1.TableEntry{TableId: e.tableID("I.fwd"), Match: e.fwdEntry([]byte{77}, 0).Match}, Data: &p4v1.CounterData{PacketCount: 1}}
	constTable := &p4v1.TableEntry{TableId: e.tableID("I.fixed"), Match: []*p4v1.FieldMatch{{FieldId: 1, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: []byte{4}}}}},
		Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{ActionId: e.actionID("NoAction")}}}}
	cases := []struct {
		name string
		u    *p4v1.Update
		want codes.Code
	}{
		// TableEntry: is_const "must be false in any INSERT, MODIFY, or
		// DELETE ... INVALID_ARGUMENT".
		{"is_const in INSERT", upd(p4v1.Update_INSERT, isConst), codes.InvalidArgument},
		{"INSERT into a const table", upd(p4v1.Update_INSERT, constTable), codes.PermissionDenied},
		{"INSERT existing", upd(p4v1.Update_INSERT, e.fwdEntry([]byte{1}, 3)), codes.AlreadyExists},
		{"MODIFY missing", upd(p4v1.Update_MODIFY, e.fwdEntry([]byte{9}, 3)), codes.NotFound},
		{"DELETE missing", upd(p4v1.Update_DELETE, e.fwdEntry([]byte{9}, 3)), codes.NotFound},
		// Unknown IDs.
		{"unknown table", upd(p4v1.Update_INSERT, &p4v1.TableEntry{TableId: 42}), codes.NotFound},
		{"unknown action", upd(p4v1.Update_INSERT, badAction), codes.InvalidArgument},
		{"unknown match field", upd(p4v1.Update_INSERT, badField), codes.InvalidArgument},
		{"unknown register", upd(p4v1.Update_MODIFY, &p4v1.RegisterEntry{RegisterId: 42, Data: bits(1)}), codes.NotFound},
		{"unknown counter", upd(p4v1.Update_MODIFY, &p4v1.CounterEntry{CounterId: 42, Data: &p4v1.CounterData{}}), codes.NotFound},
		{"unknown meter", upd(p4v1.Update_MODIFY, &p4v1.MeterEntry{MeterId: 42}), codes.NotFound},
		// Indexes: "INVALID_ARGUMENT for a negative index or
		// OUT_OF_RANGE if the index exceeds the size".
		{"register index -1", upd(p4v1.Update_MODIFY, &p4v1.RegisterEntry{RegisterId: reg, Index: &p4v1.Index{Index: -1}, Data: bits(1)}), codes.InvalidArgument},
		{"register index 8", upd(p4v1.Update_MODIFY, &p4v1.RegisterEntry{RegisterId: reg, Index: &p4v1.Index{Index: 8}, Data: bits(1)}), codes.OutOfRange},
		{"counter index -1", upd(p4v1.Update_MODIFY, &p4v1.CounterEntry{CounterId: ctr, Index: &p4v1.Index{Index: -1}, Data: &p4v1.CounterData{}}), codes.InvalidArgument},
		{"counter index 8", upd(p4v1.Update_MODIFY, &p4v1.CounterEntry{CounterId: ctr, Index: &p4v1.Index{Index: 8}, Data: &p4v1.CounterData{}}), codes.OutOfRange},
		{"counter INSERT", upd(p4v1.Update_INSERT, &p4v1.CounterEntry{CounterId: ctr, Index: &p4v1.Index{Index: 0}}), codes.InvalidArgument},
		{"counter MODIFY without data leaves it", upd(p4v1.Update_MODIFY, &p4v1.CounterEntry{CounterId: ctr, Index: &p4v1.Index{Index: 0}}), codes.OK},
		// DirectCounterEntry: "If a matching TableEntry is not found, the
		// server returns the error code NOT_FOUND"; INSERT and DELETE are
		// INVALID_ARGUMENT.
		{"direct counter of a missing entry", upd(p4v1.Update_MODIFY, missing), codes.NotFound},
		{"direct counter INSERT", upd(p4v1.Update_INSERT, missing), codes.InvalidArgument},
		// Multicast groups and clone sessions: id 0 is INVALID_ARGUMENT.
		{"multicast group 0", upd(p4v1.Update_INSERT, &p4v1.MulticastGroupEntry{}), codes.InvalidArgument},
		{"clone session 0", upd(p4v1.Update_INSERT, &p4v1.CloneSessionEntry{}), codes.InvalidArgument},
		{"multicast group duplicate replica", upd(p4v1.Update_INSERT, &p4v1.MulticastGroupEntry{MulticastGroupId: 1, Replicas: []*p4v1.Replica{replica(2, 0), replica(2, 0)}}), codes.InvalidArgument},
		{"DELETE missing multicast group", upd(p4v1.Update_DELETE, &p4v1.MulticastGroupEntry{MulticastGroupId: 5}), codes.NotFound},
		{"no entity", &p4v1.Update{Type: p4v1.Update_INSERT, Entity: &p4v1.Entity{}}, codes.InvalidArgument},
		{"no type", &p4v1.Update{Entity: entity(e.fwdEntry([]byte{4}, 2))}, codes.InvalidArgument},
	}
	for _, c := range cases {
		one(t, c.name, e.write(1, c.u), c.want)
	}
	// Reads: direct counter of a missing entry is NOT_FOUND, negative and
	// large indexes as for writes, unknown IDs NOT_FOUND.
	reads := []struct {
		name string
		ent  *p4v1.Entity
		want codes.Code
	}{
		{"read direct counter of a missing entry", entity(&p4v1.DirectCounterEntry{TableEntry: missing.TableEntry}), codes.NotFound},
		{"read register index -1", entity(&p4v1.RegisterEntry{RegisterId: reg, Index: &p4v1.Index{Index: -1}}), codes.InvalidArgument},
		{"read counter index 8", entity(&p4v1.CounterEntry{CounterId: ctr, Index: &p4v1.Index{Index: 8}}), codes.OutOfRange},
		{"read unknown table", entity(&p4v1.TableEntry{TableId: 42}), codes.NotFound},
		{"read unknown multicast group", entity(&p4v1.MulticastGroupEntry{MulticastGroupId: 9}), codes.NotFound},
		{"read empty entity", &p4v1.Entity{}, codes.InvalidArgument},
	}
	for _, r := range reads {
		_, err := e.read(r.ent)
		one(t, r.name, err, r.want)
	}
	// The direct counter of an existing entry reads and writes.
	hit := &p4v1.DirectCounterEntry{TableEntry: &p4v1.TableEntry{TableId: e.tableID("I.fwd"), Match: e.fwdEntry([]byte{1}, 0).Match}, Data: &p4v1.CounterData{PacketCount: 7, ByteCount: 70}}
	if err := e.write(1, upd(p4v1.Update_MODIFY, hit)); err != nil {
		t.Fatal(err)
	}
	es, err := e.read(entity(&p4v1.DirectCounterEntry{TableEntry: hit.TableEntry}))
	if err != nil || len(es) != 1 || es[0].GetDirectCounterEntry().GetData().GetPacketCount() != 7 {
		t.Errorf("direct counter read: %v, %v", es, err)
	}
}

// A Read batch with one bad request: the other requests' entities arrive,
// then UNKNOWN with one p4.v1.Error per request (Read RPC, batch
// processing).
func TestConformanceReadBatchOneBad(t *testing.T) {
	e, _ := newPREEnv(t)
	if err := e.write(1, upd(p4v1.Update_INSERT, e.fwdEntry([]byte{1}, 2)),
		upd(p4v1.Update_INSERT, &p4v1.MulticastGroupEntry{MulticastGroupId: 3, Replicas: []*p4v1.Replica{replica(2, 0)}})); err != nil {
		t.Fatal(err)
	}
	es, err := e.read(entity(&p4v1.TableEntry{TableId: e.tableID("I.fwd")}), entity(&p4v1.RegisterEntry{RegisterId: 42}),
		entity(&p4v1.MulticastGroupEntry{}))
	if len(es) != 2 || es[0].GetTableEntry() == nil || es[1].GetPacketReplicationEngineEntry() == nil {
		t.Errorf("entities %v, want the table entry and the group", es)
	}
	got := details(t, err)
	want := []codes.Code{codes.OK, codes.NotFound, codes.OK}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("details %v, want %v", got, want)
	}
}

// finsy's delete_all: a wildcard Read over every entity kind, multicast
// groups and clone sessions included, then a DELETE of what it found.
func TestConformanceWildcardReadAndDeleteAll(t *testing.T) {
	e, _ := newPREEnv(t)
	if err := e.write(1,
		upd(p4v1.Update_INSERT, e.fwdEntry([]byte{1}, 2)),
		upd(p4v1.Update_INSERT, e.fwdEntry([]byte{2}, 3)),
		upd(p4v1.Update_INSERT, &p4v1.MulticastGroupEntry{MulticastGroupId: 3, Replicas: []*p4v1.Replica{replica(2, 0), replica(3, 1)}, Metadata: []byte("m")}),
		upd(p4v1.Update_INSERT, &p4v1.CloneSessionEntry{SessionId: 4, Replicas: []*p4v1.Replica{replica(4, 0)}, PacketLengthBytes: 100}),
	); err != nil {
		t.Fatal(err)
	}
	all := []*p4v1.Entity{
		entity(&p4v1.TableEntry{}), entity(&p4v1.MulticastGroupEntry{}), entity(&p4v1.CloneSessionEntry{}),
		entity(&p4v1.ActionProfileMember{}), entity(&p4v1.ActionProfileGroup{}), entity(&p4v1.MeterEntry{}), entity(&p4v1.DigestEntry{}),
	}
	es, err := e.read(all...)
	if err != nil {
		t.Fatalf("wildcard read: %v", err)
	}
	var dels []*p4v1.Update
	kinds := map[string]int{}
	for _, x := range es {
		kinds[fmt.Sprintf("%T", x.GetEntity())]++
		if te := x.GetTableEntry(); te != nil && te.GetIsConst() {
			continue // const entries cannot be deleted
		}
		if x.GetMeterEntry() != nil {
			continue // meter cells are only modified
		}
		dels = append(dels, &p4v1.Update{Type: p4v1.Update_DELETE, Entity: x})
	}
	if kinds["*v1.Entity_TableEntry"] != 3 || kinds["*v1.Entity_PacketReplicationEngineEntry"] != 2 || kinds["*v1.Entity_MeterEntry"] != 4 || len(kinds) != 3 {
		t.Errorf("read %v, want 3 table entries (one const), 2 PRE entries and 4 meter cells", kinds)
	}
	for _, x := range es {
		if g := x.GetPacketReplicationEngineEntry().GetMulticastGroupEntry(); g != nil {
			if len(g.Replicas) != 2 || string(g.Metadata) != "m" {
				t.Errorf("group read back %v", g)
			}
		}
		if c := x.GetPacketReplicationEngineEntry().GetCloneSessionEntry(); c != nil && c.PacketLengthBytes != 100 {
			t.Errorf("session read back %v", c)
		}
	}
	if err := e.write(1, dels...); err != nil {
		t.Fatalf("delete all: %v", err)
	}
	if es, err := e.read(all...); err != nil || len(es) != 1+4 {
		t.Errorf("after delete all: %v, %v; want the const entry and the meter cells only", es, err)
	}
}

// ROLLBACK_ON_ERROR and DATAPLANE_ATOMIC: all or nothing. Every update of
// a failed batch is reported: the failing one with its code, the others
// ABORTED.
func TestConformanceAtomicity(t *testing.T) {
	e, _ := newPREEnv(t)
	reg := e.registerID("I.r")
	setReg := func(v byte) *p4v1.Update {
		return upd(p4v1.Update_MODIFY, &p4v1.RegisterEntry{RegisterId: reg, Index: &p4v1.Index{Index: 2}, Data: &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: []byte{v}}}})
	}
	if err := e.write(1, upd(p4v1.Update_INSERT, e.fwdEntry([]byte{1}, 2)), setReg(1),
		upd(p4v1.Update_INSERT, &p4v1.MulticastGroupEntry{MulticastGroupId: 3, Replicas: []*p4v1.Replica{replica(2, 0)}})); err != nil {
		t.Fatal(err)
	}
	snapshot := func() string {
		es, err := e.read(entity(&p4v1.TableEntry{TableId: e.tableID("I.fwd"), CounterData: &p4v1.CounterData{}, MeterConfig: &p4v1.MeterConfig{}}),
			entity(&p4v1.MeterEntry{MeterId: e.meterID("I.pm")}),
			entity(&p4v1.RegisterEntry{RegisterId: reg}), entity(&p4v1.MulticastGroupEntry{}), entity(&p4v1.TableEntry{TableId: e.tableID("I.fwd"), IsDefaultAction: true}))
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, x := range es {
			s = append(s, prototext.Format(x))
		}
		sort.Strings(s)
		return strings.Join(s, "\n")
	}
	before := snapshot()
	withMeter := e.fwdEntry([]byte{1}, 3)
	withMeter.MeterConfig = &p4v1.MeterConfig{Cburst: 1, Pburst: 1}
	def := e.fwdEntry(nil, 4)
	def.Match, def.IsDefaultAction = nil, true
	for _, a := range []p4v1.WriteRequest_Atomicity{p4v1.WriteRequest_ROLLBACK_ON_ERROR, p4v1.WriteRequest_DATAPLANE_ATOMIC} {
		err := e.writeAtomic(a,
			upd(p4v1.Update_INSERT, e.fwdEntry([]byte{5}, 3)), // applied, rolled back
			upd(p4v1.Update_MODIFY, e.fwdEntry([]byte{1}, 4)), // applied, rolled back
			setReg(9), // applied, rolled back
			upd(p4v1.Update_DELETE, &p4v1.MulticastGroupEntry{MulticastGroupId: 3}), // applied, rolled back
			upd(p4v1.Update_MODIFY, def), // applied, rolled back
			upd(p4v1.Update_MODIFY, &p4v1.DirectCounterEntry{TableEntry: e.fwdEntry([]byte{1}, 0), Data: &p4v1.CounterData{PacketCount: 5}}), // applied, rolled back
			upd(p4v1.Update_MODIFY, &p4v1.MeterEntry{MeterId: e.meterID("I.pm"), Config: &p4v1.MeterConfig{Cburst: 3, Pburst: 3}}),           // applied, rolled back
			upd(p4v1.Update_MODIFY, withMeter),                // applied, rolled back
			upd(p4v1.Update_INSERT, e.fwdEntry([]byte{1}, 2)), // fails: exists
			upd(p4v1.Update_INSERT, e.fwdEntry([]byte{6}, 2)), // not attempted
		)
		want := []codes.Code{codes.Aborted, codes.Aborted, codes.Aborted, codes.Aborted, codes.Aborted, codes.Aborted, codes.Aborted, codes.Aborted, codes.AlreadyExists, codes.Aborted}
		if got := details(t, err); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%v: details %v, want %v", a, got, want)
		}
		if after := snapshot(); after != before {
			t.Errorf("%v: state changed by a failed batch:\nbefore\n%s\nafter\n%s", a, before, after)
		}
	}
	// A batch without errors is applied whole.
	if err := e.writeAtomic(p4v1.WriteRequest_DATAPLANE_ATOMIC, upd(p4v1.Update_INSERT, e.fwdEntry([]byte{5}, 3)), setReg(9)); err != nil {
		t.Fatal(err)
	}
	if snapshot() == before {
		t.Error("a good atomic batch changed nothing")
	}
}

// Large failing batches: the per-update list of 5000 errors does not fit
// the 8 KiB of trailers gRPC C core (grpcio: p4runtime-shell, finsy) takes
// by default. A client with that limit still reads UNKNOWN and a message
// naming the failures; smaller batches keep their per-update codes.
func TestConformanceLargeFailingBatch(t *testing.T) {
	e, _ := newPREEnv(t, grpc.WithMaxHeaderListSize(8<<10))
	failing := func(n int) []*p4v1.Update {
		var u []*p4v1.Update
		for i := 0; i < n; i++ {
			u = append(u, upd(p4v1.Update_DELETE, e.fwdEntry([]byte{byte(i)}, 0)))
		}
		return u
	}
	for _, n := range []int{10, 100, 5000} {
		err := e.write(1, failing(n)...)
		st := status.Convert(err)
		if st.Code() != codes.Unknown {
			t.Fatalf("%d failures: %v, want UNKNOWN", n, err)
		}
		if !strings.Contains(st.Message(), fmt.Sprintf("%d of %d updates failed", n, n)) {
			t.Errorf("%d failures: message %q", n, st.Message())
		}
		ds := st.Details()
		switch {
		case len(ds) == n:
			for i, d := range ds {
				if pe, ok := d.(*p4v1.Error); !ok || codes.Code(pe.GetCanonicalCode()) != codes.NotFound {
					t.Fatalf("%d failures: detail %d = %v", n, i, d)
				}
			}
			if first := ds[0].(*p4v1.Error); first.GetMessage() == "" {
				t.Errorf("%d failures: the first failure has no message", n)
			}
			t.Logf("%d failures: %d per-update details", n, len(ds))
		case len(ds) == 0 && n == 5000:
			if !strings.Contains(st.Message(), "first failure: update 0: NotFound") {
				t.Errorf("%d failures: message %q does not name the first failure", n, st.Message())
			}
			t.Logf("%d failures: summary only (%d bytes)", n, len(st.Message()))
		default:
			t.Errorf("%d failures: %d details", n, len(ds))
		}
		if n == 10 {
			for _, d := range ds {
				if d.(*p4v1.Error).GetMessage() == "" {
					t.Errorf("10 failures: a detail without its message")
				}
			}
		}
	}
}

// A BMv2 JSON as device config is refused with what to send instead.
func TestConformanceBMv2JSONRefused(t *testing.T) {
	e := newEnvFor(t, preP4, nil, 1)
	c := e.connect(1)
	c.expectArbitration(codes.OK, 1)
	cfg := e.config()
	cfg.P4DeviceConfig = []byte(`{"header_types": [], "headers": [], "pipelines": [{"name": "ingress"}], "program": "pre.p4"}`)
	err := e.setPipeline(1, p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, cfg)
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "BMv2 JSON") || !strings.Contains(err.Error(), "P4 source") {
		t.Errorf("BMv2 JSON: %v", err)
	}
}

// preFrame is the 9-byte header of pre.p4 (op, arg; the rest zero) and a
// 2-byte payload.
func preFrame(op, arg byte) []byte { return []byte{op, arg, 0, 0, 0, 0, 0, 0, 0, 0xbe, 0xef} }

// exchange sends frame on port in, then a marker frame (op 0, arg 0xEE,
// unicast to port 1), and returns every frame that left before the marker,
// as "port:hex". The switch emits all copies of a frame before it reads
// the next one, and link sends are synchronous, so once the marker is out
// every copy of frame is queued on its host port.
func (e *env) exchange(in uint32, frame []byte) []string {
	e.t.Helper()
	e.hosts[in].Send([][]byte{frame, preFrame(0, 0xEE)})
	var got []string
	bufs := [][]byte{make([]byte, netio.MaxFrameSize)}
	sawMarker := false
	// drain takes every frame queued on the host ports.
	drain := func() {
		for _, p := range prePorts {
			for {
				bufs[0] = bufs[0][:cap(bufs[0])]
				n, err := e.hosts[p].TryRecv(bufs)
				if err != nil || n == 0 {
					break
				}
				if f := bufs[0]; p == 1 && len(f) >= 2 && f[0] == 0 && f[1] == 0xEE {
					sawMarker = true
					continue
				}
				got = append(got, fmt.Sprintf("%d:%x", p, bufs[0]))
			}
		}
	}
	for deadline := time.Now().Add(5 * time.Second); !sawMarker && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		drain()
	}
	if !sawMarker {
		e.t.Fatal("marker frame did not come out")
	}
	drain() // copies queued on other ports before the marker
	sort.Strings(got)
	return got
}

// Multicast groups and clone sessions written through P4Runtime replicate
// real frames on the switch's ports; resubmitted and recirculated frames
// come out once, with their preserved field list.
func TestConformancePREPackets(t *testing.T) {
	e, _ := newPREEnv(t)
	if err := e.write(1,
		upd(p4v1.Update_INSERT, &p4v1.MulticastGroupEntry{MulticastGroupId: 7, Replicas: []*p4v1.Replica{replica(2, 1), replica(3, 2)}}),
		upd(p4v1.Update_INSERT, &p4v1.CloneSessionEntry{SessionId: 9, Replicas: []*p4v1.Replica{replica(4, 5)}}),
		upd(p4v1.Update_INSERT, &p4v1.CloneSessionEntry{SessionId: 10, Replicas: []*p4v1.Replica{{PortKind: &p4v1.Replica_EgressPort{EgressPort: 5}}}, PacketLengthBytes: 3}),
	); err != nil {
		t.Fatal(err)
	}
	// Header: op arg rid(2) itype mark kept lost port, payload beef.
	cases := []struct {
		name  string
		frame []byte
		want  []string
	}{
		{"multicast", preFrame(1, 7), []string{"2:0107000105aa070702beef", "3:0107000205aa070703beef"}},
		{"I2E clone", preFrame(2, 9), []string{"1:0209000000aa090901beef", "4:0209000501000000 04beef"}},
		{"I2E clone keeping field list 1", preFrame(3, 9), []string{"1:0309000000aa090901beef", "4:0309000501000900 04beef"}},
		{"E2E clone", preFrame(4, 9), []string{"1:0409000000aa090901beef", "4:0409000502aa090004beef"}},
		{"truncated clone", preFrame(2, 10), []string{"1:020a000000aa0a0a01beef", "5:020a00"}},
		{"resubmit", preFrame(7, 9), []string{"1:0709000006aa0a0001beef"}},
		{"recirculate (egress rewrote op 8 to 9)", preFrame(8, 9), []string{"1:0909000004aa0b0001beef"}},
	}
	for _, c := range cases {
		var want []string
		for _, w := range c.want {
			want = append(want, strings.ReplaceAll(w, " ", ""))
		}
		if got := e.exchange(1, c.frame); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s:\n got %v\nwant %v", c.name, got, want)
		}
	}
	// MODIFY a group: the new replicas are used; DELETE: frames drop.
	if err := e.write(1, upd(p4v1.Update_MODIFY, &p4v1.MulticastGroupEntry{MulticastGroupId: 7, Replicas: []*p4v1.Replica{replica(6, 3)}})); err != nil {
		t.Fatal(err)
	}
	if got := e.exchange(1, preFrame(1, 7)); fmt.Sprint(got) != "[6:0107000305aa070706beef]" {
		t.Errorf("after MODIFY: %v", got)
	}
	if err := e.write(1, upd(p4v1.Update_DELETE, &p4v1.MulticastGroupEntry{MulticastGroupId: 7})); err != nil {
		t.Fatal(err)
	}
	if got := e.exchange(1, preFrame(1, 7)); len(got) != 0 {
		t.Errorf("after DELETE: %v", got)
	}
	// The deprecated egress_port reads back as written.
	es, err := e.read(entity(&p4v1.CloneSessionEntry{SessionId: 10}))
	if err != nil || len(es) != 1 || es[0].GetPacketReplicationEngineEntry().GetCloneSessionEntry().GetReplicas()[0].GetEgressPort() != 5 {
		t.Errorf("clone session 10 read back: %v, %v", es, err)
	}
}

// Range and optional matches: entries by priority; a range or optional
// field left out is a don't-care; the whole range given explicitly and
// low > high are INVALID_ARGUMENT.
func TestConformanceRangeAndOptional(t *testing.T) {
	e, _ := newPREEnv(t)
	tid, tag := e.tableID("I.classify"), e.actionID("I.tag")
	entry := func(prio int32, lo, hi []byte, mark []byte, v byte) *p4v1.TableEntry {
		te := &p4v1.TableEntry{TableId: tid, Priority: prio, Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{
			ActionId: tag, Params: []*p4v1.Action_Param{{ParamId: 1, Value: []byte{v}}}}}}}
		if lo != nil {
			te.Match = append(te.Match, &p4v1.FieldMatch{FieldId: 1, FieldMatchType: &p4v1.FieldMatch_Range_{Range: &p4v1.FieldMatch_Range{Low: lo, High: hi}}})
		}
		if mark != nil {
			te.Match = append(te.Match, &p4v1.FieldMatch{FieldId: 2, FieldMatchType: &p4v1.FieldMatch_Optional_{Optional: &p4v1.FieldMatch_Optional{Value: mark}}})
		}
		return te
	}
	if err := e.write(1,
		upd(p4v1.Update_INSERT, entry(10, []byte{10}, []byte{20}, nil, 1)),       // arg 10..20
		upd(p4v1.Update_INSERT, entry(20, []byte{15}, []byte{15}, nil, 2)),       // arg 15, higher priority
		upd(p4v1.Update_INSERT, entry(30, []byte{18}, []byte{30}, []byte{7}, 3)), // arg 18..30 and mark 7
		upd(p4v1.Update_INSERT, entry(1, nil, nil, []byte{9}, 4)),                // mark 9, any arg
	); err != nil {
		t.Fatal(err)
	}
	one(t, "whole range", e.write(1, upd(p4v1.Update_INSERT, entry(5, []byte{0}, []byte{0xff}, nil, 9))), codes.InvalidArgument)
	one(t, "low above high", e.write(1, upd(p4v1.Update_INSERT, entry(5, []byte{9}, []byte{8}, nil, 9))), codes.InvalidArgument)
	one(t, "no priority", e.write(1, upd(p4v1.Update_INSERT, entry(0, []byte{1}, []byte{2}, nil, 9))), codes.InvalidArgument)
	one(t, "range over 8 bits", e.write(1, upd(p4v1.Update_INSERT, entry(5, []byte{1}, []byte{1, 0}, nil, 9))), codes.OutOfRange)
	cases := []struct {
		arg, mark, want byte // want: the tag in kept (the arg itself on a miss)
	}{
		{9, 0, 9}, {10, 0, 1}, {15, 0, 2}, {20, 0, 1}, {21, 0, 21},
		{19, 7, 3}, {25, 7, 3}, {25, 8, 25}, {40, 9, 4}, {15, 9, 2},
	}
	for _, c := range cases {
		f := preFrame(6, c.arg)
		f[5] = c.mark
		got := e.exchange(1, f)
		if len(got) != 1 || !strings.HasPrefix(got[0], "1:") || got[0][2+12:2+14] != fmt.Sprintf("%02x", c.want) {
			t.Errorf("arg %d mark %d: %v, want kept %d", c.arg, c.mark, got, c.want)
		}
	}
	// Read back: the ranges and optional values as written, don't-cares
	// left out.
	es, err := e.read(entity(&p4v1.TableEntry{TableId: tid}))
	if err != nil || len(es) != 4 {
		t.Fatalf("read: %v, %v", es, err)
	}
	for _, x := range es {
		te := x.GetTableEntry()
		if te.GetPriority() == 1 && (len(te.Match) != 1 || te.Match[0].GetOptional() == nil) {
			t.Errorf("mark-only entry read back as %v", te)
		}
		if te.GetPriority() == 30 && (len(te.Match) != 2 || !bytes.Equal(te.Match[0].GetRange().GetHigh(), []byte{30})) {
			t.Errorf("range and optional entry read back as %v", te)
		}
	}
}

func (e *env) meterID(name string) uint32 { return idOf(e.t, "meter", e.info.GetMeters(), name) }

// Meters and direct meters through P4Runtime, exercised by frames. With
// zero rates the buckets never refill, so the colours do not depend on
// the wall clock: GREEN while both buckets have a token, YELLOW while only
// the peak one has, then RED.
func TestConformanceMeters(t *testing.T) {
	e, _ := newPREEnv(t)
	cfg := &p4v1.MeterConfig{Cir: 0, Cburst: 1, Pir: 0, Pburst: 2}
	pm := e.meterID("I.pm")
	fwd := e.fwdEntry([]byte{4}, 1)
	fwd.MeterConfig = cfg
	if err := e.write(1,
		upd(p4v1.Update_MODIFY, &p4v1.MeterEntry{MeterId: pm, Index: &p4v1.Index{Index: 2}, Config: cfg}),
		upd(p4v1.Update_INSERT, fwd),
	); err != nil {
		t.Fatal(err)
	}
	// lost (byte 7 of the header) carries the colour.
	colours := func(op, arg byte) []string {
		var out []string
		for i := 0; i < 4; i++ {
			got := e.exchange(1, preFrame(op, arg))
			if len(got) != 1 {
				t.Fatalf("op %d: %v", op, got)
			}
			out = append(out, got[0][2+14:2+16])
		}
		return out
	}
	want := "[00 01 02 02]"
	if got := colours(11, 2); fmt.Sprint(got) != want {
		t.Errorf("meter pm[2]: colours %v, want %v", got, want)
	}
	if got := colours(11, 3); fmt.Sprint(got) != "[00 00 00 00]" {
		t.Errorf("unconfigured meter pm[3]: colours %v, want GREEN", got)
	}
	if got := colours(0, 4); fmt.Sprint(got) != want {
		t.Errorf("direct meter of fwd[4]: colours %v, want %v", got, want)
	}
	// Read back: MeterEntry, DirectMeterEntry, TableEntry.meter_config.
	es, err := e.read(entity(&p4v1.MeterEntry{MeterId: pm, Index: &p4v1.Index{Index: 2}}),
		entity(&p4v1.DirectMeterEntry{TableEntry: &p4v1.TableEntry{TableId: fwd.TableId, Match: fwd.Match}}),
		entity(&p4v1.TableEntry{TableId: fwd.TableId, MeterConfig: &p4v1.MeterConfig{}}))
	if err != nil || len(es) != 3 {
		t.Fatalf("read: %v, %v", es, err)
	}
	for i, c := range []*p4v1.MeterConfig{es[0].GetMeterEntry().GetConfig(), es[1].GetDirectMeterEntry().GetConfig(), es[2].GetTableEntry().GetMeterConfig()} {
		if !proto.Equal(c, cfg) {
			t.Errorf("read %d: config %v, want %v", i, c, cfg)
		}
	}
	// Codes: INSERT of a meter entry, a direct meter of a missing entry,
	// cir above pir, meter_config on a table without a direct meter.
	missing := &p4v1.TableEntry{TableId: fwd.TableId, Match: e.fwdEntry([]byte{99}, 0).Match}
	noMeter := &p4v1.TableEntry{TableId: e.tableID("I.classify"), Priority: 1, MeterConfig: cfg,
		Match:  []*p4v1.FieldMatch{{FieldId: 2, FieldMatchType: &p4v1.FieldMatch_Optional_{Optional: &p4v1.FieldMatch_Optional{Value: []byte{1}}}}},
		Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{ActionId: e.actionID("NoAction")}}}}
	one(t, "meter INSERT", e.write(1, upd(p4v1.Update_INSERT, &p4v1.MeterEntry{MeterId: pm})), codes.InvalidArgument)
	one(t, "direct meter of a missing entry", e.write(1, upd(p4v1.Update_MODIFY, &p4v1.DirectMeterEntry{TableEntry: missing, Config: cfg})), codes.NotFound)
	one(t, "cir above pir", e.write(1, upd(p4v1.Update_MODIFY, &p4v1.MeterEntry{MeterId: pm, Config: &p4v1.MeterConfig{Cir: 5, Pir: 1}})), codes.InvalidArgument)
	one(t, "meter_config without a direct meter", e.write(1, upd(p4v1.Update_INSERT, noMeter)), codes.InvalidArgument)
	_, err = e.read(entity(&p4v1.DirectMeterEntry{TableEntry: missing}))
	one(t, "read direct meter of a missing entry", err, codes.NotFound)
	// A DirectMeterEntry without config resets the meter: GREEN again.
	if err := e.write(1, upd(p4v1.Update_MODIFY, &p4v1.DirectMeterEntry{TableEntry: &p4v1.TableEntry{TableId: fwd.TableId, Match: fwd.Match}})); err != nil {
		t.Fatal(err)
	}
	if got := colours(0, 4); fmt.Sprint(got) != "[00 00 00 00]" {
		t.Errorf("reset direct meter: colours %v", got)
	}
}

// Digests end to end: a DigestEntry enables learning; frames through a
// port make digest messages; DigestLists arrive on the primary's stream;
// a message is not learned again until its list is acknowledged.
func TestConformanceDigests(t *testing.T) {
	e, c := newPREEnv(t)
	id := idOf(t, "digest", e.info.GetDigests(), "learn_t")
	learn := func(arg byte) {
		e.hosts[3].Send([][]byte{preFrame(12, arg)})
	}
	nextList := func() *p4v1.DigestList {
		t.Helper()
		for {
			m := c.next()
			if l := m.GetDigest(); l != nil {
				return l
			}
		}
	}
	listVals := func(l *p4v1.DigestList) string {
		var out []string
		for _, d := range l.GetData() {
			m := d.GetStruct().GetMembers()
			out = append(out, fmt.Sprintf("%x/%x", m[0].GetBitstring(), m[1].GetBitstring()))
		}
		return strings.Join(out, " ")
	}
	// Not enabled: nothing is sent (checked below by the list IDs).
	learn(1)
	time.Sleep(20 * time.Millisecond)
	cfg := &p4v1.DigestEntry_Config{MaxTimeoutNs: 0, MaxListSize: 1, AckTimeoutNs: int64(time.Hour)}
	if err := e.write(1, upd(p4v1.Update_INSERT, &p4v1.DigestEntry{DigestId: id, Config: cfg})); err != nil {
		t.Fatal(err)
	}
	learn(2)
	l := nextList()
	if l.GetDigestId() != id || l.GetListId() != 1 || listVals(l) != "02/03" || l.GetTimestamp() == 0 {
		t.Fatalf("first list: %v (%s)", l, listVals(l))
	}
	// The same data again: cached until the ack; new data goes through.
	learn(2)
	learn(4)
	if l := nextList(); listVals(l) != "04/03" || l.GetListId() != 2 {
		t.Fatalf("second list: %v (%s), want 04/03 only", l, listVals(l))
	}
	if err := c.st.Send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_DigestAck{DigestAck: &p4v1.DigestListAck{DigestId: id, ListId: 1}}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // the ack and the frame take different paths
	learn(2)
	if l := nextList(); listVals(l) != "02/03" || l.GetListId() != 3 {
		t.Fatalf("after the ack: %v (%s)", l, listVals(l))
	}
	// An ack for a digest that is not enabled is a StreamError.
	if err := c.st.Send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_DigestAck{DigestAck: &p4v1.DigestListAck{DigestId: id + 1, ListId: 1}}}); err != nil {
		t.Fatal(err)
	}
	for {
		m := c.next()
		if se := m.GetError(); se != nil {
			if codes.Code(se.GetCanonicalCode()) != codes.NotFound || se.GetDigestListAck() == nil {
				t.Errorf("bad ack: %v", se)
			}
			break
		}
	}
	// Read and codes.
	es, err := e.read(entity(&p4v1.DigestEntry{}))
	if err != nil || len(es) != 1 || !proto.Equal(es[0].GetDigestEntry().GetConfig(), cfg) {
		t.Errorf("read: %v, %v", es, err)
	}
	one(t, "INSERT twice", e.write(1, upd(p4v1.Update_INSERT, &p4v1.DigestEntry{DigestId: id, Config: cfg})), codes.AlreadyExists)
	one(t, "unknown digest", e.write(1, upd(p4v1.Update_INSERT, &p4v1.DigestEntry{DigestId: 5, Config: cfg})), codes.NotFound)
	one(t, "no config", e.write(1, upd(p4v1.Update_MODIFY, &p4v1.DigestEntry{DigestId: id})), codes.InvalidArgument)
	one(t, "DELETE", e.write(1, upd(p4v1.Update_DELETE, &p4v1.DigestEntry{DigestId: id})), codes.OK)
	_, err = e.read(entity(&p4v1.DigestEntry{DigestId: id}))
	one(t, "read disabled", err, codes.NotFound)
	if st := e.srv.Stats(); st.DigestLists != 3 || st.DigestDrops != 0 {
		t.Errorf("stats: %d lists, %d drops", st.DigestLists, st.DigestDrops)
	}
}

// Action profiles and selectors: members, groups and one-shot action sets
// through P4Runtime; frames go where the member the selector picks says.
// The selector hashes {mark, lost} with identity into 8 bits, so lost
// picks: member index = lost mod (sum of weights).
func TestConformanceActionProfiles(t *testing.T) {
	e, _ := newPREEnv(t)
	sel, ap := idOf(t, "action profile", e.info.GetActionProfiles(), "I.sel"), idOf(t, "action profile", e.info.GetActionProfiles(), "I.ap")
	toPort := func(p byte) *p4v1.Action {
		return &p4v1.Action{ActionId: e.actionID("I.to_port"), Params: []*p4v1.Action_Param{{ParamId: 1, Value: []byte{p}}}}
	}
	member := func(prof, id uint32, p byte) *p4v1.ActionProfileMember {
		return &p4v1.ActionProfileMember{ActionProfileId: prof, MemberId: id, Action: toPort(p)}
	}
	group := func(id uint32, ms ...[2]int32) *p4v1.ActionProfileGroup {
		g := &p4v1.ActionProfileGroup{ActionProfileId: sel, GroupId: id}
		for _, m := range ms {
			g.Members = append(g.Members, &p4v1.ActionProfileGroup_Member{MemberId: uint32(m[0]), Weight: m[1]})
		}
		return g
	}
	entry := func(table string, arg byte, ta *p4v1.TableAction) *p4v1.TableEntry {
		return &p4v1.TableEntry{TableId: e.tableID(table), Action: ta,
			Match: []*p4v1.FieldMatch{{FieldId: 1, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: []byte{arg}}}}}}
	}
	byMember := func(id uint32) *p4v1.TableAction {
		return &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileMemberId{ActionProfileMemberId: id}}
	}
	byGroup := func(id uint32) *p4v1.TableAction {
		return &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileGroupId{ActionProfileGroupId: id}}
	}
	oneShot := &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileActionSet{ActionProfileActionSet: &p4v1.ActionProfileActionSet{
		ActionProfileActions: []*p4v1.ActionProfileAction{{Action: toPort(5), Weight: 1}, {Action: toPort(6), Weight: 1}}}}}
	if err := e.write(1,
		upd(p4v1.Update_INSERT, member(sel, 1, 2)), upd(p4v1.Update_INSERT, member(sel, 2, 3)), upd(p4v1.Update_INSERT, member(sel, 3, 4)),
		upd(p4v1.Update_INSERT, member(ap, 1, 6)),
	); err != nil {
		t.Fatal(err)
	}
	if err := e.write(1, upd(p4v1.Update_INSERT, group(10, [2]int32{1, 1}, [2]int32{2, 2}, [2]int32{3, 1}))); err != nil {
		t.Fatal(err)
	}
	if err := e.write(1,
		upd(p4v1.Update_INSERT, entry("I.ecmp", 1, byGroup(10))),
		upd(p4v1.Update_INSERT, entry("I.ecmp", 2, byMember(3))),
		upd(p4v1.Update_INSERT, entry("I.ecmp", 3, oneShot)),
		upd(p4v1.Update_INSERT, entry("I.prof", 1, byMember(1))),
	); err != nil {
		t.Fatal(err)
	}
	port := func(op, arg, lost byte) string {
		f := preFrame(op, arg)
		f[7] = lost
		got := e.exchange(1, f)
		if len(got) != 1 {
			return fmt.Sprint(got)
		}
		return got[0][:1]
	}
	// Group 10: picks [m1, m2, m2, m3] -> ports 2 3 3 4.
	var got []string
	for lost := byte(0); lost < 5; lost++ {
		got = append(got, port(13, 1, lost))
	}
	if fmt.Sprint(got) != "[2 3 3 4 2]" {
		t.Errorf("group 10 by lost 0..4: ports %v, want [2 3 3 4 2]", got)
	}
	if p := port(13, 2, 7); p != "4" {
		t.Errorf("member 3: port %s", p)
	}
	if a, b := port(13, 3, 0), port(13, 3, 1); a != "5" || b != "6" {
		t.Errorf("one-shot: ports %s %s, want 5 6", a, b)
	}
	if p := port(14, 1, 0); p != "6" {
		t.Errorf("action profile member: port %s", p)
	}
	// MODIFY a member: the group follows.
	if err := e.write(1, upd(p4v1.Update_MODIFY, member(sel, 1, 5))); err != nil {
		t.Fatal(err)
	}
	if p := port(13, 1, 0); p != "5" {
		t.Errorf("after member MODIFY: port %s", p)
	}
	// Codes.
	one(t, "member exists", e.write(1, upd(p4v1.Update_INSERT, member(sel, 1, 2))), codes.AlreadyExists)
	one(t, "member in a group", e.write(1, upd(p4v1.Update_DELETE, member(sel, 1, 0))), codes.FailedPrecondition)
	one(t, "member of an entry", e.write(1, upd(p4v1.Update_DELETE, member(ap, 1, 0))), codes.FailedPrecondition)
	one(t, "group of an entry", e.write(1, upd(p4v1.Update_DELETE, group(10))), codes.FailedPrecondition)
	one(t, "group with a missing member", e.write(1, upd(p4v1.Update_INSERT, group(11, [2]int32{9, 1}))), codes.NotFound)
	one(t, "weight 0", e.write(1, upd(p4v1.Update_INSERT, group(11, [2]int32{1, 0}))), codes.InvalidArgument)
	one(t, "groups on a profile without selector", e.write(1, upd(p4v1.Update_INSERT, &p4v1.ActionProfileGroup{ActionProfileId: ap, GroupId: 1})), codes.InvalidArgument)
	one(t, "entry with a missing member", e.write(1, upd(p4v1.Update_INSERT, entry("I.ecmp", 4, byMember(9)))), codes.NotFound)
	one(t, "direct action on an indirect table", e.write(1, upd(p4v1.Update_INSERT, entry("I.ecmp", 4, &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: toPort(1)}}))), codes.InvalidArgument)
	one(t, "member on a direct table", e.write(1, upd(p4v1.Update_INSERT, entry("I.fwd", 4, byMember(1)))), codes.InvalidArgument)
	one(t, "unknown profile", e.write(1, upd(p4v1.Update_INSERT, member(42, 1, 2))), codes.NotFound)
	if err := e.write(1, upd(p4v1.Update_INSERT, member(ap, 2, 1)), upd(p4v1.Update_INSERT, member(ap, 3, 1)), upd(p4v1.Update_INSERT, member(ap, 4, 1))); err != nil {
		t.Fatal(err)
	}
	one(t, "profile full", e.write(1, upd(p4v1.Update_INSERT, member(ap, 5, 1))), codes.ResourceExhausted)
	// Read back, wildcard and by entry.
	es, err := e.read(entity(&p4v1.ActionProfileMember{}), entity(&p4v1.ActionProfileGroup{}), entity(&p4v1.TableEntry{TableId: e.tableID("I.ecmp")}))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, x := range es {
		kinds[fmt.Sprintf("%T", x.GetEntity())]++
		if g := x.GetActionProfileGroup(); g != nil && (len(g.Members) != 3 || g.Members[1].Weight != 2) {
			t.Errorf("group read back %v", g)
		}
		if te := x.GetTableEntry(); te != nil && te.Match[0].GetExact().GetValue()[0] == 3 && !proto.Equal(te.Action, oneShot) {
			t.Errorf("one-shot entry read back %v", te.Action)
		}
	}
	if kinds["*v1.Entity_ActionProfileMember"] != 3+4 || kinds["*v1.Entity_ActionProfileGroup"] != 1 || kinds["*v1.Entity_TableEntry"] != 3 {
		t.Errorf("read %v", kinds)
	}
	// Deleting in order works: entries, group, members.
	if err := e.write(1, upd(p4v1.Update_DELETE, entry("I.ecmp", 1, nil)), upd(p4v1.Update_DELETE, entry("I.ecmp", 2, nil))); err != nil {
		t.Fatal(err)
	}
	if err := e.write(1, upd(p4v1.Update_DELETE, group(10))); err != nil {
		t.Fatal(err)
	}
	if err := e.write(1, upd(p4v1.Update_DELETE, member(sel, 1, 0)), upd(p4v1.Update_DELETE, member(sel, 2, 0)), upd(p4v1.Update_DELETE, member(sel, 3, 0))); err != nil {
		t.Fatal(err)
	}
	// A failed atomic batch of member and group updates leaves them as
	// they were.
	state := func() string {
		es, err := e.read(entity(&p4v1.ActionProfileMember{}), entity(&p4v1.ActionProfileGroup{}))
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, x := range es {
			s = append(s, prototext.Format(x))
		}
		return strings.Join(s, "|")
	}
	before := state()
	err = e.writeAtomic(p4v1.WriteRequest_ROLLBACK_ON_ERROR,
		upd(p4v1.Update_INSERT, member(sel, 7, 2)), upd(p4v1.Update_INSERT, group(12, [2]int32{7, 1})),
		upd(p4v1.Update_MODIFY, member(ap, 2, 9)), upd(p4v1.Update_INSERT, member(ap, 5, 1)))
	if got := details(t, err); fmt.Sprint(got) != fmt.Sprint([]codes.Code{codes.Aborted, codes.Aborted, codes.Aborted, codes.ResourceExhausted}) {
		t.Errorf("rollback details %v", got)
	}
	if after := state(); after != before {
		t.Errorf("rollback changed the profiles:\n%s\n%s", before, after)
	}
}

// Idle timeouts over gRPC: an entry that is not hit for its TTL is
// notified to the primary (key, metadata and TTL set), and reads report
// time_since_last_hit when asked.
func TestConformanceIdleTimeout(t *testing.T) {
	e, c := newPREEnv(t)
	aged := e.tableID("I.aged")
	te := &p4v1.TableEntry{TableId: aged, IdleTimeoutNs: int64(20 * time.Millisecond), ControllerMetadata: 77,
		Match:  []*p4v1.FieldMatch{{FieldId: 1, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: []byte{1}}}}},
		Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{ActionId: e.actionID("NoAction")}}}}
	start := time.Now()
	if err := e.write(1, upd(p4v1.Update_INSERT, te)); err != nil {
		t.Fatal(err)
	}
	var n *p4v1.IdleTimeoutNotification
	for n == nil {
		n = c.next().GetIdleTimeoutNotification()
	}
	if waited := time.Since(start); waited < 20*time.Millisecond {
		t.Errorf("notified after %v, before the TTL", waited)
	}
	if len(n.TableEntry) != 1 || n.Timestamp == 0 {
		t.Fatalf("notification %v", n)
	}
	got := n.TableEntry[0]
	if got.TableId != aged || !proto.Equal(got.Match[0], te.Match[0]) || got.IdleTimeoutNs != te.IdleTimeoutNs || got.ControllerMetadata != 77 {
		t.Errorf("notified entry %v", got)
	}
	es, err := e.read(entity(&p4v1.TableEntry{TableId: aged, TimeSinceLastHit: &p4v1.TableEntry_IdleTimeout{}}))
	if err != nil || len(es) != 1 || es[0].GetTableEntry().GetTimeSinceLastHit() == nil || es[0].GetTableEntry().GetIdleTimeoutNs() != te.IdleTimeoutNs {
		t.Errorf("read: %v, %v", es, err)
	}
	one(t, "an entry without TTL", e.write(1, upd(p4v1.Update_INSERT, e.fwdEntry([]byte{1}, 2))), codes.OK)
	withTTL := e.fwdEntry([]byte{2}, 2)
	withTTL.IdleTimeoutNs = 1
	one(t, "TTL on a table without idle timeouts", e.write(1, upd(p4v1.Update_INSERT, withTTL)), codes.InvalidArgument)
}
