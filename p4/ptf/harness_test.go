package ptf

import (
	"bytes"
	"context"
	"net"
	"os"
	"testing"
	"time"

	configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/p4/p4rt"
	"github.com/swordbox/swordbox/p4/target"
)

const (
	programPath = "../swordbox.p4"
	deviceID    = 1
	recvTimeout = 5 * time.Second
	prefix      = "SwordboxIngress."
)

// rig is one switch running swordbox.p4 behind a P4Runtime server, with a
// primary controller stream and the host ends of its ports.
type rig struct {
	*names
	t      testing.TB
	info   *configv1.P4Info
	cl     p4v1.P4RuntimeClient
	stream p4v1.P4Runtime_StreamChannelClient
	hosts  map[uint32]netio.Port
	rx     map[uint32]chan []byte
	pktIn  chan *p4v1.PacketIn
	srv    *p4rt.Server
	cfg    steerConfig // the config table's default action as last set
	// twin runs the same test on p4/tna/swordbox.p4 and checks that it
	// sees the same frames and state (tna_diff_test.go); nil otherwise.
	twin *twin
}

func loadProgram(t testing.TB) ([]byte, *configv1.P4Info) {
	t.Helper()
	src, err := os.ReadFile(programPath)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := target.Compile("swordbox.p4", src)
	if err != nil {
		t.Fatalf("compile swordbox.p4: %v", err)
	}
	return src, prog.P4Info()
}

// newRig starts a switch with the given front-panel ports, becomes primary
// and pushes swordbox.p4 with VERIFY_AND_COMMIT.
func newRig(t testing.TB, ports ...uint32) *rig {
	t.Helper()
	return newRigReaders(t, true, ports...)
}

// newRigReaders is newRig; without readers the host ends of the ports are
// left to the caller (benchmarks read them without copying).
func newRigReaders(t testing.TB, readers bool, ports ...uint32) *rig {
	t.Helper()
	sw, hosts := map[uint32]netio.Port{}, map[uint32]netio.Port{}
	for _, p := range ports {
		sw[p], hosts[p] = netio.Pipe()
	}
	return newRigPorts(t, readers, sw, hosts)
}

// newRigPorts builds the rig on given switch ports and their host ends.
func newRigPorts(t testing.TB, readers bool, swPorts, hosts map[uint32]netio.Port) *rig {
	t.Helper()
	src, info := loadProgram(t)
	return startRig(t, readers, swPorts, hosts, src, info, newTwin(t, readers, hosts, info))
}

// startRig starts a switch running the program src (whose P4Info is info)
// on the given ports, with the twin tw (nil: none).
func startRig(t testing.TB, readers bool, swPorts, hosts map[uint32]netio.Port, src []byte, info *configv1.P4Info, tw *twin) *rig {
	t.Helper()
	r := &rig{names: &names{t: t, info: info}, t: t, info: info, hosts: hosts, rx: map[uint32]chan []byte{}, pktIn: make(chan *p4v1.PacketIn, 64), twin: tw}
	for p, h := range hosts {
		ch := make(chan []byte, 256)
		r.rx[p] = ch
		if !readers {
			continue
		}
		go func(h netio.Port) {
			bufs := [][]byte{make([]byte, netio.MaxFrameSize)}
			for {
				bufs[0] = bufs[0][:cap(bufs[0])]
				if _, err := h.Recv(bufs); err != nil {
					return
				}
				ch <- append([]byte(nil), bufs[0]...)
			}
		}(h)
	}
	r.srv = p4rt.New(p4rt.Options{DeviceID: deviceID, Ports: swPorts})
	r.srv.Start()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	r.srv.Register(gs)
	go gs.Serve(lis)
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		cc.Close()
		gs.Stop()
		r.srv.Close()
		for _, h := range r.hosts {
			h.Close()
		}
	})
	r.cl = p4v1.NewP4RuntimeClient(cc)
	r.stream, err = r.cl.StreamChannel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.stream.Send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Arbitration{Arbitration: &p4v1.MasterArbitrationUpdate{
		DeviceId: deviceID, ElectionId: &p4v1.Uint128{Low: 1},
	}}}); err != nil {
		t.Fatal(err)
	}
	m, err := r.stream.Recv()
	if err != nil || m.GetArbitration().GetStatus().GetCode() != 0 {
		t.Fatalf("arbitration: %v, %v", m, err)
	}
	go func() {
		for {
			m, err := r.stream.Recv()
			if err != nil {
				return
			}
			if p := m.GetPacket(); p != nil {
				r.twin.packetIn(p)
				r.pktIn <- p
			}
		}
	}()
	_, err = r.cl.SetForwardingPipelineConfig(ctx, &p4v1.SetForwardingPipelineConfigRequest{
		DeviceId: deviceID, ElectionId: &p4v1.Uint128{Low: 1},
		Action: p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT,
		Config: &p4v1.ForwardingPipelineConfig{P4Info: info, P4DeviceConfig: src},
	})
	if err != nil {
		t.Fatalf("SetForwardingPipelineConfig: %v", err)
	}
	return r
}

// ---- P4Info name resolution ----

// names resolves swordbox.p4's objects by their P4Info names.
type names struct {
	t    testing.TB
	info *configv1.P4Info
}

func (r *names) tableID(name string) uint32 {
	for _, x := range r.info.GetTables() {
		if x.GetPreamble().GetName() == name {
			return x.GetPreamble().GetId()
		}
	}
	r.t.Fatalf("no table %s in the P4Info", name)
	return 0
}

func (r *names) matchFieldID(table, field string) uint32 {
	for _, x := range r.info.GetTables() {
		if x.GetPreamble().GetName() == table {
			for _, f := range x.GetMatchFields() {
				if f.GetName() == field {
					return f.GetId()
				}
			}
		}
	}
	r.t.Fatalf("no match field %s in table %s", field, table)
	return 0
}

func (r *names) actionID(name string) uint32 {
	for _, x := range r.info.GetActions() {
		if x.GetPreamble().GetName() == name {
			return x.GetPreamble().GetId()
		}
	}
	r.t.Fatalf("no action %s in the P4Info", name)
	return 0
}

func (r *names) paramID(action, param string) uint32 {
	for _, x := range r.info.GetActions() {
		if x.GetPreamble().GetName() == action {
			for _, p := range x.GetParams() {
				if p.GetName() == param {
					return p.GetId()
				}
			}
		}
	}
	r.t.Fatalf("no param %s in action %s", param, action)
	return 0
}

func (r *names) registerID(name string) uint32 {
	for _, x := range r.info.GetRegisters() {
		if x.GetPreamble().GetName() == prefix+name {
			return x.GetPreamble().GetId()
		}
	}
	r.t.Fatalf("no register %s in the P4Info", name)
	return 0
}

func (r *names) counterID(name string) uint32 {
	for _, x := range r.info.GetCounters() {
		if x.GetPreamble().GetName() == prefix+name {
			return x.GetPreamble().GetId()
		}
	}
	r.t.Fatalf("no counter %s in the P4Info", name)
	return 0
}

// ---- P4Runtime operations ----

func enc(v uint64) []byte {
	n := 1
	for x := v >> 8; x != 0; x >>= 8 {
		n++
	}
	out := make([]byte, n)
	for i := n - 1; i >= 0; i-- {
		out[i] = byte(v)
		v >>= 8
	}
	return out
}

func dec(b []byte) uint64 {
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v
}

func (r *rig) write(updates ...*p4v1.Update) {
	r.t.Helper()
	r.twin.write(updates)
	_, err := r.cl.Write(context.Background(), &p4v1.WriteRequest{DeviceId: deviceID, ElectionId: &p4v1.Uint128{Low: 1}, Updates: updates})
	if err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

func (r *rig) read(e *p4v1.Entity) []*p4v1.Entity {
	r.t.Helper()
	rc, err := r.cl.Read(context.Background(), &p4v1.ReadRequest{DeviceId: deviceID, Entities: []*p4v1.Entity{e}})
	if err != nil {
		r.t.Fatalf("read: %v", err)
	}
	var out []*p4v1.Entity
	for {
		resp, err := rc.Recv()
		if err != nil {
			break
		}
		out = append(out, resp.GetEntities()...)
	}
	r.twin.read(e, out)
	return out
}

func exact(id uint32, v []byte) *p4v1.FieldMatch {
	return &p4v1.FieldMatch{FieldId: id, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: v}}}
}

// forward installs dst MAC -> set_egress(port).
func (r *rig) forward(mac [6]byte, port uint32) {
	r.t.Helper()
	t, a := prefix+"forward", prefix+"set_egress"
	r.write(&p4v1.Update{Type: p4v1.Update_INSERT, Entity: &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{
		TableId: r.tableID(t),
		Match:   []*p4v1.FieldMatch{exact(r.matchFieldID(t, "hdr.ethernet.dst_addr"), enc(macU64(mac)))},
		Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{
			ActionId: r.actionID(a), Params: []*p4v1.Action_Param{{ParamId: r.paramID(a, "port"), Value: enc(uint64(port))}},
		}}},
	}}}})
}

// toCPU installs dst MAC -> send_to_cpu.
func (r *rig) toCPU(mac [6]byte) {
	r.t.Helper()
	t := prefix + "forward"
	r.write(&p4v1.Update{Type: p4v1.Update_INSERT, Entity: &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{
		TableId: r.tableID(t),
		Match:   []*p4v1.FieldMatch{exact(r.matchFieldID(t, "hdr.ethernet.dst_addr"), enc(macU64(mac)))},
		Action:  &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{ActionId: r.actionID(prefix + "send_to_cpu")}}},
	}}}})
}

// track installs key -> track(slot).
func (r *rig) track(key uint64, slot uint16) {
	r.t.Helper()
	t, a := prefix+"tracked_keys", prefix+"track"
	r.write(&p4v1.Update{Type: p4v1.Update_INSERT, Entity: &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{
		TableId: r.tableID(t),
		Match:   []*p4v1.FieldMatch{exact(r.matchFieldID(t, "meta.clover_key"), enc(key))},
		Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{
			ActionId: r.actionID(a), Params: []*p4v1.Action_Param{{ParamId: r.paramID(a, "slot"), Value: enc(uint64(slot))}},
		}}},
	}}}})
}

// steerConfig is the argument of the config table's default action
// set_config(mode, node_size, tail_ttl).
type steerConfig struct{ mode, nodeSize, ttl uint64 }

// with returns c with the set_config parameter param set to v.
func (c steerConfig) with(tb testing.TB, param string, v uint64) steerConfig {
	tb.Helper()
	switch param {
	case "mode":
		c.mode = v
	case "node_size":
		c.nodeSize = v
	case "tail_ttl":
		c.ttl = v
	default:
		tb.Fatalf("set_config has no parameter %s", param)
	}
	return c
}

// configEntry is the config table's default entry with set_config(c), as
// the controller modifies it.
func (n *names) configEntry(c steerConfig) *p4v1.TableEntry {
	n.t.Helper()
	a := prefix + "set_config"
	return &p4v1.TableEntry{TableId: n.tableID(prefix + "config"), IsDefaultAction: true,
		Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{ActionId: n.actionID(a), Params: []*p4v1.Action_Param{
			{ParamId: n.paramID(a, "mode"), Value: enc(c.mode)},
			{ParamId: n.paramID(a, "node_size"), Value: enc(c.nodeSize)},
			{ParamId: n.paramID(a, "tail_ttl"), Value: enc(c.ttl)},
		}}}}}
}

// setConfig sets one parameter of the config table's default action,
// keeping the others as last set.
func (r *rig) setConfig(param string, v uint64) {
	r.t.Helper()
	r.cfg = r.cfg.with(r.t, param, v)
	r.write(&p4v1.Update{Type: p4v1.Update_MODIFY, Entity: &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: r.configEntry(r.cfg)}}})
}

func (r *rig) setRegister(name string, index int64, v uint64) {
	r.t.Helper()
	r.write(&p4v1.Update{Type: p4v1.Update_MODIFY, Entity: &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{
		RegisterId: r.registerID(name), Index: &p4v1.Index{Index: index},
		Data: &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: enc(v)}},
	}}}})
}

func (r *rig) register(name string, index int64) uint64 {
	r.t.Helper()
	es := r.read(&p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{
		RegisterId: r.registerID(name), Index: &p4v1.Index{Index: index},
	}}})
	if len(es) != 1 {
		r.t.Fatalf("register %s[%d]: %d entities", name, index, len(es))
	}
	return dec(es[0].GetRegisterEntry().GetData().GetBitstring())
}

// registerNonZero returns the indices of a register whose value is not zero
// (a wildcard read, as the controller polls cas_out_valid).
func (r *rig) registerNonZero(name string) map[int64]uint64 {
	r.t.Helper()
	out := map[int64]uint64{}
	for _, e := range r.read(&p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{RegisterId: r.registerID(name)}}}) {
		if v := dec(e.GetRegisterEntry().GetData().GetBitstring()); v != 0 {
			out[e.GetRegisterEntry().GetIndex().GetIndex()] = v
		}
	}
	return out
}

func (r *rig) counter(name string, index int64) int64 {
	r.t.Helper()
	es := r.read(&p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{
		CounterId: r.counterID(name), Index: &p4v1.Index{Index: index},
	}}})
	if len(es) != 1 {
		r.t.Fatalf("counter %s[%d]: %d entities", name, index, len(es))
	}
	return es[0].GetCounterEntry().GetData().GetPacketCount()
}

// ---- data plane ----

func (r *rig) send(port uint32, frame []byte) {
	r.t.Helper()
	if _, err := r.hosts[port].Send([][]byte{frame}); err != nil {
		r.t.Fatalf("send on port %d: %v", port, err)
	}
	r.twin.send(port, frame)
}

// expect returns the next frame out of port.
func (r *rig) expect(port uint32) []byte {
	r.t.Helper()
	select {
	case f := <-r.rx[port]:
		r.twin.expect(port, f)
		return f
	case <-time.After(recvTimeout):
		r.t.Fatalf("no frame on port %d within %v", port, recvTimeout)
		return nil
	}
}

// expectSame sends frame on in and checks it leaves out unmodified.
func (r *rig) expectSame(in, out uint32, frame []byte, what string) {
	r.t.Helper()
	r.send(in, frame)
	if got := r.expect(out); !bytes.Equal(got, frame) {
		r.t.Fatalf("%s: frame was modified:\n got %x\nwant %x", what, got, frame)
	}
}

// expectQuiet checks that no frame is waiting on any port.
func (r *rig) expectQuiet() {
	r.t.Helper()
	for p, ch := range r.rx {
		select {
		case f := <-ch:
			r.t.Fatalf("unexpected frame on port %d: %x", p, f)
		default:
		}
	}
	r.twin.expectQuiet()
}

func macU64(m [6]byte) uint64 {
	var v uint64
	for _, b := range m {
		v = v<<8 | uint64(b)
	}
	return v
}
