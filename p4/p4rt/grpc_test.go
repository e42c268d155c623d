package p4rt_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/p4/p4rt"
	"github.com/swordbox/swordbox/p4/target"
)

const devID = 7

// env is a server on 127.0.0.1:0 with ports 1 and 2 (host ends in hosts).
type env struct {
	t     *testing.T
	srv   *p4rt.Server
	cc    *grpc.ClientConn
	cl    p4v1.P4RuntimeClient
	src   []byte
	info  *configv1.P4Info
	hosts map[uint32]*netio.LinkPort
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvFor(t, "../swordbox.p4", nil, 1, 2)
}

// newEnvFor is an env running the program at path, with the given ports;
// dial options are added to the client's.
func newEnvFor(t *testing.T, path string, dial []grpc.DialOption, portIDs ...uint32) *env {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := target.Compile(path, src)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, src: src, info: prog.P4Info(), hosts: map[uint32]*netio.LinkPort{}}
	ports := map[uint32]netio.Port{}
	for _, p := range portIDs {
		a, b := netio.Pipe()
		ports[p], e.hosts[p] = a, b
	}
	e.srv = p4rt.New(p4rt.Options{DeviceID: devID, Ports: ports})
	e.srv.Start()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	e.srv.Register(gs)
	go gs.Serve(lis)
	e.cc, err = grpc.NewClient(lis.Addr().String(), append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, dial...)...)
	if err != nil {
		t.Fatal(err)
	}
	e.cl = p4v1.NewP4RuntimeClient(e.cc)
	t.Cleanup(func() {
		e.cc.Close()
		gs.Stop()
		e.srv.Close()
		for _, h := range e.hosts {
			h.Close()
		}
	})
	return e
}

// client is one StreamChannel.
type client struct {
	t      *testing.T
	st     p4v1.P4Runtime_StreamChannelClient
	cancel context.CancelFunc
	msgs   chan *p4v1.StreamMessageResponse
	done   chan error
	id     uint64
}

func (e *env) connect(id uint64) *client {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, err := e.cl.StreamChannel(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	c := &client{t: e.t, st: st, cancel: cancel, msgs: make(chan *p4v1.StreamMessageResponse, 64), done: make(chan error, 1), id: id}
	go func() {
		for {
			m, err := st.Recv()
			if err != nil {
				c.done <- err
				return
			}
			c.msgs <- m
		}
	}()
	e.t.Cleanup(cancel)
	c.arbitrate(devID, id)
	return c
}

func (c *client) arbitrate(device, id uint64) {
	c.t.Helper()
	if err := c.st.Send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Arbitration{Arbitration: &p4v1.MasterArbitrationUpdate{
		DeviceId: device, ElectionId: &p4v1.Uint128{Low: id},
	}}}); err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) next() *p4v1.StreamMessageResponse {
	c.t.Helper()
	select {
	case m := <-c.msgs:
		return m
	case err := <-c.done:
		c.t.Fatalf("stream ended: %v", err)
	case <-time.After(5 * time.Second):
		c.t.Fatal("no stream message")
	}
	return nil
}

// expectArbitration waits for an arbitration update with status code want
// and highest election ID high.
func (c *client) expectArbitration(want codes.Code, high uint64) {
	c.t.Helper()
	m := c.next().GetArbitration()
	if m == nil {
		c.t.Fatalf("client %d: not an arbitration update", c.id)
	}
	if codes.Code(m.GetStatus().GetCode()) != want || m.GetElectionId().GetLow() != high || m.GetDeviceId() != devID {
		c.t.Fatalf("client %d: arbitration %v, want status %v and election id %d", c.id, m, want, high)
	}
}

func (c *client) expectEnd(want codes.Code) {
	c.t.Helper()
	select {
	case err := <-c.done:
		if status.Code(err) != want {
			c.t.Fatalf("stream ended with %v, want %v", err, want)
		}
	case m := <-c.msgs:
		c.t.Fatalf("got %v, want the stream to end with %v", m, want)
	case <-time.After(5 * time.Second):
		c.t.Fatal("stream did not end")
	}
}

func (e *env) setPipeline(id uint64, action p4v1.SetForwardingPipelineConfigRequest_Action, cfg *p4v1.ForwardingPipelineConfig) error {
	_, err := e.cl.SetForwardingPipelineConfig(context.Background(), &p4v1.SetForwardingPipelineConfigRequest{
		DeviceId: devID, ElectionId: &p4v1.Uint128{Low: id}, Action: action, Config: cfg,
	})
	return err
}

func (e *env) config() *p4v1.ForwardingPipelineConfig {
	return &p4v1.ForwardingPipelineConfig{P4Info: e.info, P4DeviceConfig: e.src, Cookie: &p4v1.ForwardingPipelineConfig_Cookie{Cookie: 42}}
}

func wantCode(t *testing.T, what string, err error, want codes.Code) {
	t.Helper()
	if got := status.Code(err); got != want {
		t.Errorf("%s: %v, want %v", what, err, want)
	}
}

// idOf returns the ID of the P4Info object called name.
func idOf[T interface{ GetPreamble() *configv1.Preamble }](t *testing.T, kind string, xs []T, name string) uint32 {
	t.Helper()
	for _, x := range xs {
		if x.GetPreamble().GetName() == name {
			return x.GetPreamble().GetId()
		}
	}
	t.Fatalf("no %s %s", kind, name)
	return 0
}

func (e *env) tableID(name string) uint32 { return idOf(e.t, "table", e.info.GetTables(), name) }

func (e *env) actionID(name string) uint32 { return idOf(e.t, "action", e.info.GetActions(), name) }

func (e *env) registerID(name string) uint32 {
	return idOf(e.t, "register", e.info.GetRegisters(), name)
}

// forwardEntry is forward: dst MAC -> set_egress(port). The match field and
// param IDs are 1 (the first of each).
func (e *env) forwardEntry(mac uint64, port byte) *p4v1.TableEntry {
	return &p4v1.TableEntry{
		TableId: e.tableID("SwordboxIngress.forward"),
		Match: []*p4v1.FieldMatch{{FieldId: 1, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{
			Value: []byte{byte(mac >> 40), byte(mac >> 32), byte(mac >> 24), byte(mac >> 16), byte(mac >> 8), byte(mac)}}}}},
		Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{
			ActionId: e.actionID("SwordboxIngress.set_egress"), Params: []*p4v1.Action_Param{{ParamId: 1, Value: []byte{port}}},
		}}},
	}
}

func update(t p4v1.Update_Type, te *p4v1.TableEntry) *p4v1.Update {
	return &p4v1.Update{Type: t, Entity: &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}}}
}

func (e *env) write(id uint64, updates ...*p4v1.Update) error {
	_, err := e.cl.Write(context.Background(), &p4v1.WriteRequest{DeviceId: devID, ElectionId: &p4v1.Uint128{Low: id}, Updates: updates})
	return err
}

func (e *env) read(entities ...*p4v1.Entity) ([]*p4v1.Entity, error) {
	rc, err := e.cl.Read(context.Background(), &p4v1.ReadRequest{DeviceId: devID, Entities: entities})
	if err != nil {
		return nil, err
	}
	var out []*p4v1.Entity
	for {
		r, err := rc.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		out = append(out, r.GetEntities()...)
	}
}

// details returns the per-update canonical codes of a failed Write.
func details(t *testing.T, err error) []codes.Code {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != codes.Unknown {
		t.Fatalf("batch error code %v, want UNKNOWN: %v", st.Code(), err)
	}
	var out []codes.Code
	for _, d := range st.Details() {
		pe, ok := d.(*p4v1.Error)
		if !ok {
			t.Fatalf("detail %T is not a p4.v1.Error", d)
		}
		out = append(out, codes.Code(pe.GetCanonicalCode()))
	}
	return out
}

func TestCapabilities(t *testing.T) {
	e := newEnv(t)
	r, err := e.cl.Capabilities(context.Background(), &p4v1.CapabilitiesRequest{})
	if err != nil || r.GetP4RuntimeApiVersion() != "1.5.0" {
		t.Fatalf("Capabilities = %v, %v", r, err)
	}
}

func TestBeforePipeline(t *testing.T) {
	e := newEnv(t)
	c := e.connect(1)
	c.expectArbitration(codes.OK, 1)
	wantCode(t, "Write", e.write(1, update(p4v1.Update_INSERT, e.forwardEntry(1, 1))), codes.FailedPrecondition)
	_, err := e.read(&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{}}})
	wantCode(t, "Read", err, codes.FailedPrecondition)
	// GetForwardingPipelineConfig is OK with the config unset (P4Runtime,
	// GetForwardingPipelineConfig RPC): finsy waits for that to push one.
	r, err := e.cl.GetForwardingPipelineConfig(context.Background(), &p4v1.GetForwardingPipelineConfigRequest{DeviceId: devID})
	if err != nil || r.Config != nil {
		t.Errorf("GetForwardingPipelineConfig before a pipeline: %v, %v; want OK with no config", r, err)
	}
	if err := c.st.Send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Packet{Packet: &p4v1.PacketOut{Payload: []byte{1}}}}); err != nil {
		t.Fatal(err)
	}
	se := c.next().GetError()
	if codes.Code(se.GetCanonicalCode()) != codes.FailedPrecondition || se.GetPacketOut() == nil {
		t.Errorf("PacketOut before a pipeline: %v, want a FAILED_PRECONDITION StreamError", se)
	}
	// Frames arriving before a pipeline are dropped and counted.
	e.hosts[1].Send([][]byte{make([]byte, 60)})
	deadline := time.Now().Add(5 * time.Second)
	for e.srv.Stats().DroppedNoPipe != 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := e.srv.Stats().DroppedNoPipe; got != 1 {
		t.Errorf("DroppedNoPipe = %d, want 1", got)
	}
}

func TestSetAndGetPipeline(t *testing.T) {
	e := newEnv(t)
	c := e.connect(1)
	c.expectArbitration(codes.OK, 1)
	get := func(rt p4v1.GetForwardingPipelineConfigRequest_ResponseType) (*p4v1.ForwardingPipelineConfig, error) {
		r, err := e.cl.GetForwardingPipelineConfig(context.Background(), &p4v1.GetForwardingPipelineConfigRequest{DeviceId: devID, ResponseType: rt})
		return r.GetConfig(), err
	}

	// VERIFY checks without committing.
	if err := e.setPipeline(1, p4v1.SetForwardingPipelineConfigRequest_VERIFY, e.config()); err != nil {
		t.Fatalf("VERIFY: %v", err)
	}
	if cfg, err := get(p4v1.GetForwardingPipelineConfigRequest_ALL); err != nil || cfg != nil {
		t.Errorf("Get after VERIFY: %v, %v; want OK with no config", cfg, err)
	}

	// COMMIT needs a saved pipeline: NOT_FOUND (P4Runtime,
	// SetForwardingPipelineConfig RPC).
	wantCode(t, "COMMIT without save", e.setPipeline(1, p4v1.SetForwardingPipelineConfigRequest_COMMIT, nil), codes.NotFound)
	if err := e.setPipeline(1, p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_SAVE, e.config()); err != nil {
		t.Fatalf("VERIFY_AND_SAVE: %v", err)
	}
	if err := e.setPipeline(1, p4v1.SetForwardingPipelineConfigRequest_COMMIT, nil); err != nil {
		t.Fatalf("COMMIT: %v", err)
	}
	cfg, err := get(p4v1.GetForwardingPipelineConfigRequest_ALL)
	if err != nil || !proto.Equal(cfg.GetP4Info(), e.info) || !bytes.Equal(cfg.GetP4DeviceConfig(), e.src) || cfg.GetCookie().GetCookie() != 42 {
		t.Fatalf("Get ALL after COMMIT: cookie %v, %v", cfg.GetCookie(), err)
	}
	cfg, err = get(p4v1.GetForwardingPipelineConfigRequest_COOKIE_ONLY)
	if err != nil || cfg.GetP4Info() != nil || cfg.GetP4DeviceConfig() != nil || cfg.GetCookie().GetCookie() != 42 {
		t.Errorf("Get COOKIE_ONLY = %v, %v", cfg, err)
	}
	cfg, err = get(p4v1.GetForwardingPipelineConfigRequest_P4INFO_AND_COOKIE)
	if err != nil || cfg.GetP4Info() == nil || cfg.GetP4DeviceConfig() != nil {
		t.Errorf("Get P4INFO_AND_COOKIE: %v", err)
	}
	cfg, err = get(p4v1.GetForwardingPipelineConfigRequest_DEVICE_CONFIG_AND_COOKIE)
	if err != nil || cfg.GetP4Info() != nil || !bytes.Equal(cfg.GetP4DeviceConfig(), e.src) {
		t.Errorf("Get DEVICE_CONFIG_AND_COOKIE: %v", err)
	}

	// A P4Info equal in substance (documentation, annotations, object
	// order differ) is accepted.
	alt := proto.Clone(e.info).(*configv1.P4Info)
	alt.PkgInfo = &configv1.PkgInfo{Doc: &configv1.Documentation{Brief: "pushed by a controller"}}
	alt.Tables[0].Preamble.Annotations = append(alt.Tables[0].Preamble.Annotations, "@brief(\"x\")")
	alt.Registers[0], alt.Registers[len(alt.Registers)-1] = alt.Registers[len(alt.Registers)-1], alt.Registers[0]
	if err := e.setPipeline(1, p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT,
		&p4v1.ForwardingPipelineConfig{P4Info: alt, P4DeviceConfig: e.src}); err != nil {
		t.Errorf("VERIFY_AND_COMMIT with an equivalent P4Info: %v", err)
	}

	// Everything else is refused.
	renamed := proto.Clone(e.info).(*configv1.P4Info)
	renamed.Tables[0].Preamble.Name = "SwordboxIngress.other"
	wider := proto.Clone(e.info).(*configv1.P4Info)
	wider.Registers[0].TypeSpec.GetBitstring().GetBit().Bitwidth++
	for name, tc := range map[string]struct {
		action p4v1.SetForwardingPipelineConfigRequest_Action
		cfg    *p4v1.ForwardingPipelineConfig
		want   codes.Code
	}{
		"renamed table":      {p4v1.SetForwardingPipelineConfigRequest_VERIFY, &p4v1.ForwardingPipelineConfig{P4Info: renamed, P4DeviceConfig: e.src}, codes.InvalidArgument},
		"wider register":     {p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, &p4v1.ForwardingPipelineConfig{P4Info: wider, P4DeviceConfig: e.src}, codes.InvalidArgument},
		"bad P4 source":      {p4v1.SetForwardingPipelineConfigRequest_VERIFY, &p4v1.ForwardingPipelineConfig{P4Info: e.info, P4DeviceConfig: []byte("control {")}, codes.InvalidArgument},
		"no device config":   {p4v1.SetForwardingPipelineConfigRequest_VERIFY, &p4v1.ForwardingPipelineConfig{P4Info: e.info}, codes.InvalidArgument},
		"no P4Info":          {p4v1.SetForwardingPipelineConfigRequest_VERIFY, &p4v1.ForwardingPipelineConfig{P4DeviceConfig: e.src}, codes.InvalidArgument},
		"no config":          {p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, nil, codes.InvalidArgument},
		"COMMIT with config": {p4v1.SetForwardingPipelineConfigRequest_COMMIT, e.config(), codes.InvalidArgument},
		"unspecified":        {p4v1.SetForwardingPipelineConfigRequest_UNSPECIFIED, e.config(), codes.InvalidArgument},
		"reconcile":          {p4v1.SetForwardingPipelineConfigRequest_RECONCILE_AND_COMMIT, e.config(), codes.Unimplemented},
	} {
		wantCode(t, name, e.setPipeline(1, tc.action, tc.cfg), tc.want)
	}
	// The failed attempts left the committed pipeline alone.
	if e.srv.Stats().PipelineCommit != 2 {
		t.Errorf("%d commits, want 2", e.srv.Stats().PipelineCommit)
	}
	_, err = e.cl.GetForwardingPipelineConfig(context.Background(), &p4v1.GetForwardingPipelineConfigRequest{DeviceId: devID + 1})
	wantCode(t, "Get of another device", err, codes.NotFound)
}

func TestArbitrationTwoClients(t *testing.T) {
	e := newEnv(t)
	c1 := e.connect(1)
	c1.expectArbitration(codes.OK, 1)
	wantCode(t, "set pipeline by the primary", e.setPipeline(1, p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, e.config()), codes.OK)

	c2 := e.connect(2)
	c2.expectArbitration(codes.OK, 2)
	c1.expectArbitration(codes.AlreadyExists, 2)

	wantCode(t, "Write by the backup", e.write(1, update(p4v1.Update_INSERT, e.forwardEntry(0x020000000001, 1))), codes.PermissionDenied)
	wantCode(t, "SetForwardingPipelineConfig by the backup", e.setPipeline(1, p4v1.SetForwardingPipelineConfigRequest_VERIFY, e.config()), codes.PermissionDenied)
	wantCode(t, "Write without election id", func() error {
		_, err := e.cl.Write(context.Background(), &p4v1.WriteRequest{DeviceId: devID})
		return err
	}(), codes.PermissionDenied)
	wantCode(t, "Write by the primary", e.write(2, update(p4v1.Update_INSERT, e.forwardEntry(0x020000000001, 1))), codes.OK)
	if _, err := e.read(&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{}}}); err != nil {
		t.Errorf("Read (allowed to anyone): %v", err)
	}

	// The backup may not send PacketOut.
	if err := c1.st.Send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Packet{Packet: &p4v1.PacketOut{Payload: []byte{1}}}}); err != nil {
		t.Fatal(err)
	}
	if se := c1.next().GetError(); codes.Code(se.GetCanonicalCode()) != codes.PermissionDenied {
		t.Errorf("PacketOut by the backup: %v, want PERMISSION_DENIED", se)
	}

	// A third client with the primary's election ID is refused; so is one
	// that names another device.
	c3 := e.connect(2)
	c3.expectEnd(codes.InvalidArgument)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := e.cl.StreamChannel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st.Send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Arbitration{Arbitration: &p4v1.MasterArbitrationUpdate{DeviceId: devID + 1, ElectionId: &p4v1.Uint128{Low: 5}}}})
	if _, err := st.Recv(); status.Code(err) != codes.NotFound {
		t.Errorf("arbitration for another device: %v, want NOT_FOUND", err)
	}

	// The primary leaves: the backup learns there is no primary, and
	// stays a backup until it announces an ID at least as high.
	c2.cancel()
	c1.expectArbitration(codes.NotFound, 2)
	wantCode(t, "Write by the old backup with no primary", e.write(1, update(p4v1.Update_INSERT, e.forwardEntry(0x020000000002, 1))), codes.PermissionDenied)
	c1.arbitrate(devID, 10)
	c1.expectArbitration(codes.OK, 10)
	wantCode(t, "Write by the new primary", e.write(10, update(p4v1.Update_INSERT, e.forwardEntry(0x020000000002, 1))), codes.OK)
}

func TestWriteErrorsAndRead(t *testing.T) {
	e := newEnv(t)
	c := e.connect(1)
	c.expectArbitration(codes.OK, 1)
	if err := e.setPipeline(1, p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, e.config()); err != nil {
		t.Fatal(err)
	}
	a, b, d := e.forwardEntry(0x020000000001, 1), e.forwardEntry(0x020000000002, 2), e.forwardEntry(0x020000000003, 2)
	if err := e.write(1, update(p4v1.Update_INSERT, a), update(p4v1.Update_INSERT, b)); err != nil {
		t.Fatal(err)
	}

	// Per-update status in the details, code UNKNOWN for the batch; the
	// good updates of the batch are applied (CONTINUE_ON_ERROR).
	err := e.write(1,
		update(p4v1.Update_INSERT, a),                                 // duplicate
		update(p4v1.Update_INSERT, d),                                 // fine
		update(p4v1.Update_DELETE, e.forwardEntry(0x0200000000ff, 1)), // absent
		update(p4v1.Update_MODIFY, e.forwardEntry(0x0200000000fe, 1)), // absent
		&p4v1.Update{Type: p4v1.Update_INSERT, Entity: &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{
			RegisterId: e.registerID("SwordboxIngress.tail_valid"), Index: &p4v1.Index{Index: 0}, Data: &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: []byte{1}}},
		}}}}, // registers are only modified
		&p4v1.Update{Type: p4v1.Update_MODIFY, Entity: &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{
			RegisterId: e.registerID("SwordboxIngress.tail_valid"), Index: &p4v1.Index{Index: 0}, Data: &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: []byte{3}}},
		}}}}, // fine
		&p4v1.Update{Type: p4v1.Update_INSERT, Entity: &p4v1.Entity{Entity: &p4v1.Entity_ValueSetEntry{ValueSetEntry: &p4v1.ValueSetEntry{}}}},
	)
	want := []codes.Code{codes.AlreadyExists, codes.OK, codes.NotFound, codes.NotFound, codes.InvalidArgument, codes.OK, codes.NotFound}
	if got := details(t, err); len(got) != len(want) {
		t.Fatalf("details %v, want %v", got, want)
	} else {
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("update %d: %v, want %v", i, got[i], want[i])
			}
		}
	}
	wantCode(t, "Write to another device", func() error {
		_, err := e.cl.Write(context.Background(), &p4v1.WriteRequest{DeviceId: devID + 1, ElectionId: &p4v1.Uint128{Low: 1}})
		return err
	}(), codes.NotFound)
	wantCode(t, "atomicity 7", func() error {
		_, err := e.cl.Write(context.Background(), &p4v1.WriteRequest{DeviceId: devID, ElectionId: &p4v1.Uint128{Low: 1}, Atomicity: 7})
		return err
	}(), codes.InvalidArgument)

	// Reads: wildcard over every table, wildcard over one table, one entry.
	tableRead := func(te *p4v1.TableEntry) int {
		es, err := e.read(&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}})
		if err != nil {
			t.Fatalf("read %v: %v", te, err)
		}
		return len(es)
	}
	if n := tableRead(&p4v1.TableEntry{}); n != 3 {
		t.Errorf("wildcard read of all tables: %d entries, want 3", n)
	}
	if n := tableRead(&p4v1.TableEntry{TableId: e.tableID("SwordboxIngress.forward")}); n != 3 {
		t.Errorf("wildcard read of forward: %d entries, want 3", n)
	}
	if n := tableRead(&p4v1.TableEntry{TableId: e.tableID("SwordboxIngress.tracked_keys")}); n != 0 {
		t.Errorf("wildcard read of tracked_keys: %d entries, want 0", n)
	}
	one := proto.Clone(b).(*p4v1.TableEntry)
	one.Action = nil
	es, err := e.read(&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: one}})
	if err != nil || len(es) != 1 || !proto.Equal(es[0].GetTableEntry().GetAction(), b.GetAction()) {
		t.Errorf("single read = %v, %v", es, err)
	}
	es, err = e.read(&p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{
		RegisterId: e.registerID("SwordboxIngress.tail_valid"), Index: &p4v1.Index{Index: 0}}}})
	if err != nil || len(es) != 1 || !bytes.Equal(es[0].GetRegisterEntry().GetData().GetBitstring(), []byte{3}) {
		t.Errorf("register read = %v, %v", es, err)
	}
	es, err = e.read(&p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{
		RegisterId: e.registerID("SwordboxIngress.cas_out_valid")}}})
	if err != nil || len(es) != 8192 {
		t.Errorf("wildcard register read: %d entries, %v; want 8192 (link slots)", len(es), err)
	}
	// The target has no meters: a wildcard read finds none, an ID is
	// NOT_FOUND.
	if es, err := e.read(&p4v1.Entity{Entity: &p4v1.Entity_MeterEntry{MeterEntry: &p4v1.MeterEntry{}}}); err != nil || len(es) != 0 {
		t.Errorf("wildcard read of meters: %v, %v", es, err)
	}
	_, err = e.read(&p4v1.Entity{Entity: &p4v1.Entity_MeterEntry{MeterEntry: &p4v1.MeterEntry{MeterId: 5}}})
	wantCode(t, "read of meter 5", err, codes.Unknown)
	rc, err := e.cl.Read(context.Background(), &p4v1.ReadRequest{DeviceId: devID + 1})
	if err == nil {
		_, err = rc.Recv()
	}
	wantCode(t, "read of another device", err, codes.NotFound)
}

func TestPacketInGoesToPrimaryOnly(t *testing.T) {
	e := newEnv(t)
	c1 := e.connect(1)
	c1.expectArbitration(codes.OK, 1)
	if err := e.setPipeline(1, p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, e.config()); err != nil {
		t.Fatal(err)
	}
	c2 := e.connect(2)
	c2.expectArbitration(codes.OK, 2)
	c1.expectArbitration(codes.AlreadyExists, 2)
	cpuMAC := uint64(0x0200000000cc)
	te := e.forwardEntry(cpuMAC, 0)
	te.Action = &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{ActionId: e.actionID("SwordboxIngress.send_to_cpu")}}}
	if err := e.write(2, update(p4v1.Update_INSERT, te)); err != nil {
		t.Fatal(err)
	}
	frame := make([]byte, 60)
	copy(frame, []byte{2, 0, 0, 0, 0, 0xcc})
	e.hosts[2].Send([][]byte{frame})
	p := c2.next().GetPacket()
	if p == nil || !bytes.Equal(p.GetPayload(), frame) || len(p.GetMetadata()) != 2 || !bytes.Equal(p.GetMetadata()[0].GetValue(), []byte{2}) {
		t.Fatalf("PacketIn = %v, want the frame from port 2", p)
	}
	select {
	case m := <-c1.msgs:
		t.Errorf("the backup got %v", m)
	case <-time.After(50 * time.Millisecond):
	}
	// PacketOut with a bad metadata ID is INVALID_ARGUMENT.
	c2.st.Send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Packet{Packet: &p4v1.PacketOut{
		Payload: frame, Metadata: []*p4v1.PacketMetadata{{MetadataId: 99, Value: []byte{1}}}}}})
	if se := c2.next().GetError(); codes.Code(se.GetCanonicalCode()) != codes.InvalidArgument {
		t.Errorf("PacketOut with an unknown metadata id: %v", se)
	}
}

func TestWriteModifyDeleteAndCounters(t *testing.T) {
	e := newEnv(t)
	c := e.connect(1)
	c.expectArbitration(codes.OK, 1)
	if err := e.setPipeline(1, p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, e.config()); err != nil {
		t.Fatal(err)
	}
	const mac = 0x020000000002
	if err := e.write(1, update(p4v1.Update_INSERT, e.forwardEntry(mac, 1))); err != nil {
		t.Fatal(err)
	}
	// A frame to mac leaves on port 1.
	frame := make([]byte, 60)
	copy(frame, []byte{2, 0, 0, 0, 0, 2})
	recv := func(p uint32) []byte {
		got := make(chan []byte, 1)
		go func() {
			bufs := [][]byte{make([]byte, netio.MaxFrameSize)}
			if n, err := e.hosts[p].Recv(bufs); err == nil && n == 1 {
				got <- bufs[0]
			}
		}()
		select {
		case f := <-got:
			return f
		case <-time.After(5 * time.Second):
			t.Fatalf("no frame on port %d", p)
			return nil
		}
	}
	e.hosts[2].Send([][]byte{frame})
	if !bytes.Equal(recv(1), frame) {
		t.Fatal("frame not forwarded to port 1")
	}
	// MODIFY moves it to port 2 (hairpin).
	if err := e.write(1, update(p4v1.Update_MODIFY, e.forwardEntry(mac, 2))); err != nil {
		t.Fatalf("MODIFY: %v", err)
	}
	e.hosts[2].Send([][]byte{frame})
	if !bytes.Equal(recv(2), frame) {
		t.Fatal("frame not forwarded to port 2 after MODIFY")
	}
	es, err := e.read(&p4v1.Entity{Entity: &p4v1.Entity_DirectCounterEntry{DirectCounterEntry: &p4v1.DirectCounterEntry{
		TableEntry: &p4v1.TableEntry{TableId: e.tableID("SwordboxIngress.forward")}}}})
	if err != nil || len(es) != 1 || es[0].GetDirectCounterEntry().GetData().GetPacketCount() != 2 {
		t.Fatalf("direct counter read = %v, %v; want one entry with 2 packets", es, err)
	}
	// Counters can be reset by the primary.
	dce := es[0].GetDirectCounterEntry()
	dce.Data = &p4v1.CounterData{}
	if err := e.write(1, &p4v1.Update{Type: p4v1.Update_MODIFY, Entity: &p4v1.Entity{Entity: &p4v1.Entity_DirectCounterEntry{DirectCounterEntry: dce}}}); err != nil {
		t.Fatalf("direct counter reset: %v", err)
	}
	var statsID uint32
	for _, x := range e.info.GetCounters() {
		if x.GetPreamble().GetName() == "SwordboxIngress.stats" {
			statsID = x.GetPreamble().GetId()
		}
	}
	if err := e.write(1, &p4v1.Update{Type: p4v1.Update_MODIFY, Entity: &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{
		CounterId: statsID, Index: &p4v1.Index{Index: 3}, Data: &p4v1.CounterData{PacketCount: 5}}}}}); err != nil {
		t.Fatalf("counter write: %v", err)
	}
	es, err = e.read(&p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{CounterId: statsID}}})
	if err != nil || len(es) != 24 || es[3].GetCounterEntry().GetData().GetPacketCount() != 5 {
		t.Fatalf("counter wildcard read: %d entries, %v", len(es), err)
	}
	es, _ = e.read(&p4v1.Entity{Entity: &p4v1.Entity_DirectCounterEntry{DirectCounterEntry: &p4v1.DirectCounterEntry{
		TableEntry: &p4v1.TableEntry{TableId: e.tableID("SwordboxIngress.forward")}}}})
	if len(es) != 1 || es[0].GetDirectCounterEntry().GetData().GetPacketCount() != 0 {
		t.Errorf("direct counter after reset = %v", es)
	}
	// DELETE removes the entry; the frame is then dropped.
	if err := e.write(1, update(p4v1.Update_DELETE, e.forwardEntry(mac, 2))); err != nil {
		t.Fatalf("DELETE: %v", err)
	}
	if es, err := e.read(&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{}}}); err != nil || len(es) != 0 {
		t.Errorf("entries after DELETE: %v, %v", es, err)
	}
}
