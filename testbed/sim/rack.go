package sim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"

	"github.com/swordbox/swordbox/ctrl"
	"github.com/swordbox/swordbox/ctrl/p4rtc"
	"github.com/swordbox/swordbox/ctrl/rack"
	swp4 "github.com/swordbox/swordbox/p4"
	"github.com/swordbox/swordbox/p4/target"
	"github.com/swordbox/swordbox/roce/rnic"
	"github.com/swordbox/swordbox/roce/verbs"
	"github.com/swordbox/swordbox/testbed"
)

// Config describes a virtual-time rack: one switch, MemoryNodes memory
// nodes on ports 1.., and Hosts other RNICs after them.
type Config struct {
	// Seed seeds the simulation's PRNG.
	Seed uint64
	// Hosts is the number of host RNICs besides the memory nodes (1 to
	// 4000); MemoryNodes the number of memory nodes (1 to 16).
	Hosts, MemoryNodes int
	// Steering is the switch's mode as the controller names it (off,
	// write, read, read-write); TrackedKeys the keys it steers;
	// ObjectSize the value size its size filter expects (default 128);
	// TailTTL how long it may steer to a confirmed tail (default
	// rack.DefaultTailTTL), in virtual time.
	Steering    string
	TrackedKeys []uint64
	ObjectSize  int
	TailTTL     time.Duration
	// Chain turns on chained write steering (rack.Config.Chain).
	Chain bool
	// MemorySize is each memory node's region (default 64 MiB);
	// MemoryInit lays a region out before it is registered.
	MemorySize int
	MemoryInit func(node int, buf []byte) error
	// MemoryOnAtomic, if set, observes every atomic a memory node
	// executes, at its virtual time (rnic.Config.OnAtomic).
	MemoryOnAtomic func(node int, a rnic.ExecutedAtomic)
	// Link is every cable's configuration; QueueBytes is ignored (the
	// switch's egress queues take SwitchQueueBytes, hosts'
	// DefaultHostQueueBytes).
	Link LinkConfig
	// SwitchLatency is the switch's pipeline latency (0: the default);
	// SwitchQueueBytes its egress queue depth (0: the default).
	SwitchLatency    time.Duration
	SwitchQueueBytes int
	// NIC is every RNIC's timing model (zero: rnic.VirtualConnectX5()).
	NIC *rnic.VirtualTiming
	// RNICTimeout is every RNIC's ACK timeout (default 8ms, rnic's).
	RNICTimeout time.Duration
	// RepairPeriod, when positive, runs the controller's CAS repair step
	// (ctrl.Controller.RepairStep) every RepairPeriod of virtual time,
	// with RepairThreshold (default 2x the period). 0: repair off.
	RepairPeriod, RepairThreshold time.Duration
}

// Rack is a virtual-time rack programmed by the real controller.
type Rack struct {
	Sim    *Sim
	Switch *Switch
	Ctrl   *ctrl.Controller
	// Memory are the memory nodes (ports 1..), MemoryMR their regions;
	// Hosts the other RNICs (ports after them).
	Memory   []*Host
	MemoryMR []*rnic.MR
	Hosts    []*Host

	cfg     Config
	links   []*Link // switch egress links, by member
	grpcSrv *grpc.Server
	psn     uint32
	repairs int
}

// NewRack builds a rack at virtual time 0 and has the controller program
// the switch over gRPC on loopback (pipeline, forwarding, steering,
// tracked keys) before it returns.
func NewRack(ctx context.Context, cfg Config) (_ *Rack, err error) {
	if cfg.MemoryNodes == 0 {
		cfg.MemoryNodes = 1
	}
	if cfg.MemoryNodes < 1 || cfg.MemoryNodes > 16 {
		return nil, fmt.Errorf("sim: %d memory nodes: want 1 to 16", cfg.MemoryNodes)
	}
	if cfg.Hosts < 1 || cfg.Hosts > 4000 {
		return nil, fmt.Errorf("sim: %d hosts: want 1 to 4000", cfg.Hosts)
	}
	if cfg.Steering == "" {
		cfg.Steering = rack.SteerOff
	}
	if cfg.ObjectSize <= 0 {
		cfg.ObjectSize = 128
	}
	if cfg.TailTTL <= 0 {
		cfg.TailTTL = rack.DefaultTailTTL
	}
	if cfg.MemorySize <= 0 {
		cfg.MemorySize = 64 << 20
	}
	if cfg.SwitchLatency == 0 {
		cfg.SwitchLatency = DefaultSwitchLatency
	}
	if cfg.SwitchQueueBytes == 0 {
		cfg.SwitchQueueBytes = DefaultSwitchQueueBytes
	}
	if cfg.RepairPeriod < 0 || cfg.RepairThreshold < 0 {
		return nil, errors.New("sim: negative repair period or threshold")
	}
	if cfg.RepairPeriod > 0 && cfg.RepairThreshold == 0 {
		cfg.RepairThreshold = 2 * cfg.RepairPeriod
	}
	nic := rnic.VirtualConnectX5()
	if cfg.NIC != nil {
		nic = *cfg.NIC
	}
	prog, err := target.Compile(swp4.SwordboxFile, swp4.SwordboxSource)
	if err != nil {
		return nil, fmt.Errorf("sim: switch program: %w", err)
	}

	s := New(cfg.Seed)
	r := &Rack{Sim: s, cfg: cfg}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	members := cfg.MemoryNodes + cfg.Hosts
	ports := make([]uint32, members)
	for i := range ports {
		ports[i] = uint32(1 + i)
	}
	if r.Switch, err = NewSwitch(s, ports, cfg.SwitchLatency, 1); err != nil {
		return nil, err
	}
	for i := 0; i < members; i++ {
		name := fmt.Sprintf("host%d", i-cfg.MemoryNodes+1)
		// Behind a steering switch every host runs with ICRC checking
		// off, as in the paper: the switch rewrites requests and
		// responses without recomputing it (docs/swordbox-p4.md, rule 9).
		rc := rnic.Config{Name: name, MAC: testbed.HostMAC(i), IP: testbed.HostIP(i), Timeout: cfg.RNICTimeout, SkipICRC: true}
		if i < cfg.MemoryNodes {
			rc.Name = fmt.Sprintf("mem%d", i)
			if f := cfg.MemoryOnAtomic; f != nil {
				node := i
				rc.OnAtomic = func(a rnic.ExecutedAtomic) { f(node, a) }
			}
		}
		h, herr := NewHost(s, rc, nic)
		if herr != nil {
			return nil, fmt.Errorf("sim: %s: %w", rc.Name, herr)
		}
		up := cfg.Link
		up.QueueBytes = DefaultHostQueueBytes
		toSwitch, lerr := NewLink(s, up, r.Switch, uint64(ports[i]))
		if lerr != nil {
			return nil, lerr
		}
		h.Attach(toSwitch)
		down := cfg.Link
		down.QueueBytes = cfg.SwitchQueueBytes
		toHost, lerr := NewLink(s, down, h, hostRx)
		if lerr != nil {
			return nil, lerr
		}
		r.Switch.Connect(ports[i], toHost)
		r.links = append(r.links, toHost)
		if i < cfg.MemoryNodes {
			buf := make([]byte, cfg.MemorySize)
			if cfg.MemoryInit != nil {
				if err := cfg.MemoryInit(i, buf); err != nil {
					return nil, fmt.Errorf("sim: %s: lay out region: %w", rc.Name, err)
				}
			}
			mr, merr := h.Device().Register(buf, verbs.AccessAll)
			if merr != nil {
				return nil, fmt.Errorf("sim: %s: register region: %w", rc.Name, merr)
			}
			r.Memory, r.MemoryMR = append(r.Memory, h), append(r.MemoryMR, mr)
		} else {
			r.Hosts = append(r.Hosts, h)
		}
	}
	if err := r.program(ctx, prog); err != nil {
		return nil, err
	}
	return r, nil
}

// program serves P4Runtime on loopback and has the controller take charge
// of the switch, synchronously: when it returns the switch matches the
// configuration. The controller's periodic loops do not run (they would
// run on the wall clock); repair is stepped in virtual time by Repair.
func (r *Rack) program(ctx context.Context, prog *target.Program) error {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("sim: P4Runtime listener: %w", err)
	}
	r.grpcSrv = grpc.NewServer()
	r.Switch.Server.Register(r.grpcSrv)
	go r.grpcSrv.Serve(lis)

	cfg := r.cfg
	rc := rack.Defaults()
	rc.Switch = lis.Addr().String()
	rc.DeviceID = 1
	rc.ElectionID = 10
	rc.Push = true
	rc.P4Info = "p4/swordbox.p4info.txtpb"
	rc.DeviceConfig = swp4.SwordboxFile
	rc.Metrics = ""
	rc.Steering = cfg.Steering
	rc.ObjectSize = cfg.ObjectSize
	rc.TrackedKeys = cfg.TrackedKeys
	rc.TailTTL = cfg.TailTTL
	rc.Chain = cfg.Chain
	if cfg.RepairPeriod > 0 {
		rc.RepairPeriod, rc.RepairThreshold = cfg.RepairPeriod, cfg.RepairThreshold
	}
	for i := 0; i < cfg.MemoryNodes+cfg.Hosts; i++ {
		name := fmt.Sprintf("host%d", i-cfg.MemoryNodes+1)
		if i < cfg.MemoryNodes {
			name = fmt.Sprintf("mem%d", i)
		}
		rc.Hosts = append(rc.Hosts, testbed.RackHost(name, 1+i, i))
	}
	for i, mr := range r.MemoryMR {
		rm := mr.Remote()
		rc.MemoryNodes = append(rc.MemoryNodes, rack.MemoryNode{Host: fmt.Sprintf("mem%d", i), Regions: []rack.Region{{
			Base: fmt.Sprintf("%#x", rm.Addr), Length: fmt.Sprintf("%#x", rm.Len)}}})
	}
	parsed, err := rc.Parse()
	if err != nil {
		return fmt.Errorf("sim: controller configuration: %w", err)
	}
	epoch := time.Unix(0, 0)
	r.Ctrl, err = ctrl.New(parsed, ctrl.Options{P4Info: prog.P4Info(), DeviceConfig: swp4.SwordboxSource,
		Now: func() time.Time { return epoch.Add(time.Duration(r.Sim.now)) }})
	if err != nil {
		return fmt.Errorf("sim: controller: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := r.Ctrl.Client.WaitRole(wctx, p4rtc.Primary); err != nil {
		return fmt.Errorf("sim: controller: not primary: %w", err)
	}
	if err := r.Ctrl.TakeCharge(wctx); err != nil {
		return fmt.Errorf("sim: controller: take charge: %w", err)
	}
	if cfg.RepairPeriod > 0 {
		r.Sim.Schedule(int64(cfg.RepairPeriod), repairTimer{r}, 0, nil)
	}
	return nil
}

// repairTimer steps the controller's CAS repair at virtual intervals.
type repairTimer struct{ r *Rack }

func (t repairTimer) Event(s *Sim, _ uint64, _ *Frame) {
	t.r.repairStep()
	s.Schedule(s.now+int64(t.r.cfg.RepairPeriod), t, 0, nil)
}

// repairStep runs one poll of the controller's repair loop while the
// simulation waits: the PacketOuts it sends reach the pipeline on the
// server's stream goroutine, so the step waits until the server has
// injected every one (they then sit in the egress queues, timed at this
// instant).
func (r *Rack) repairStep() {
	before := r.Switch.Server.Stats().PacketOuts
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sent, _ := r.Ctrl.RepairStep(ctx)
	want := before + uint64(sent)
	for r.Switch.Server.Stats().PacketOuts < want && ctx.Err() == nil {
		time.Sleep(50 * time.Microsecond)
	}
	// The server counts a PacketOut before processing it under its lock:
	// taking the lock once more waits for the last one.
	r.Switch.Server.P4Info()
	r.repairs += sent
}

// Repairs is the number of CAS the controller retransmitted.
func (r *Rack) Repairs() int { return r.repairs }

// Connect creates a QP on a whose completions go to acq, connected to a
// new QP on b whose completions go to bcq (nil: a CQ of its own, of
// 4*depth), each with room for depth work requests; in process (rdma_cm's
// exchange without the socket), with distinct deterministic starting PSNs.
func (r *Rack) Connect(a *Host, acq *rnic.CQ, b *Host, bcq *rnic.CQ, depth int) (*rnic.QP, *rnic.QP, error) {
	if depth <= 0 {
		depth = 64
	}
	mk := func(h *Host, cq *rnic.CQ) (*rnic.QP, error) {
		if cq == nil {
			cq = h.Device().NewCQ(4 * depth)
		}
		return h.Device().NewQP(verbs.QPConfig{SendCQ: cq, RecvCQ: cq, MaxSendWR: depth, MaxRecvWR: depth})
	}
	qa, err := mk(a, acq)
	if err != nil {
		return nil, nil, fmt.Errorf("sim: %s: create QP: %w", a.Device().Name(), err)
	}
	qb, err := mk(b, bcq)
	if err != nil {
		return nil, nil, fmt.Errorf("sim: %s: create QP: %w", b.Device().Name(), err)
	}
	r.psn += 0x10001
	if err := rnic.Connect(qa, qb, r.psn&0xffffff, (r.psn*7)&0xffffff); err != nil {
		return nil, nil, fmt.Errorf("sim: connect %s to %s: %w", a.Device().Name(), b.Device().Name(), err)
	}
	return qa, qb, nil
}

// SwitchLinks are the switch's egress links by member (memory nodes
// first): their counters are the queues' drops and depths.
func (r *Rack) SwitchLinks() []*Link { return r.links }

// Close stops the controller and the P4Runtime server.
func (r *Rack) Close() error {
	if r.Ctrl != nil {
		r.Ctrl.Close()
	}
	if r.grpcSrv != nil {
		r.grpcSrv.Stop()
	}
	return nil
}
