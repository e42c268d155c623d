// Package testbed assembles software racks and runs benchmarks on them.
//
// A Rack (rack.go) is the in-process software rack: the Go target running
// p4/swordbox.p4 (or the Tofino program p4/tna/swordbox.p4: switcharch.go),
// served over real gRPC on loopback by p4/p4rt and programmed by the real
// controller (ctrl) exactly as on a hardware rack; a memory node and host
// RNICs (roce/rnic) joined to the switch's ports by in-memory links (netio)
// that can inject faults. Every frame between two hosts crosses the switch,
// where the rack counts it. On top of it:
//
//   - Clover's rack (clover.go, cloverspace.go: how big its region must be)
//     and the benchmark cells of `swordbox bench` (bench.go: CellSpec,
//     RunCell). RunCellOn (cell.go) is the one cell runner of every rack: the
//     in-process rack, the namespace rack (testbed/netns) and the
//     virtual-time rack (testbed/sim) implement CellRack. suite.go turns a
//     scenario into cells (SuiteConfig, RunSuite).
//   - The cas-mux scenario (casmux.go: SwordBox Figure 10, lock CAS through
//     the middlebox).
//   - Sherman (sherman.go, sherman_bench.go) and SWARM-KV (swarm.go,
//     swarm_bench.go) on racks of in-memory links without a steering switch:
//     the middlebox sits between clients and memory nodes (for SWARM-KV, in
//     the modes that use it).
//   - Linearizability runs of Clover with the real switch program in the
//     loop, checked with porcupine (linearizability.go; the model is
//     testbed/kvmodel).
//   - The harness every system shares (harness.go: KV, Drive, Percentile).
//
// It owns assembly, the switch-port byte counters, the harness and the cell
// runner. It does not own any protocol: the switch, controller, middlebox,
// RNIC and memory systems are the project's real components, unmodified.
// YCSB workloads are testbed/ycsb's, report formats testbed/report's.
package testbed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	p4 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"

	"github.com/swordbox/swordbox/ctrl"
	"github.com/swordbox/swordbox/ctrl/p4rtc"
	"github.com/swordbox/swordbox/ctrl/rack"
	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/p4/p4rt"
	"github.com/swordbox/swordbox/p4/target"
	"github.com/swordbox/swordbox/roce/rnic"
	"github.com/swordbox/swordbox/roce/verbs"
)

// Steering modes of the switch, as the controller names them.
const (
	SteerOff       = rack.SteerOff
	SteerWrite     = "write"
	SteerReadWrite = "read-write"
)

// Config describes a rack. The zero value of every field has a sane default.
type Config struct {
	// Hosts is the number of host RNICs besides the memory node (clients,
	// metadata server). Default 2.
	Hosts int
	// Steering is the switch's mode: off, write or read-write.
	Steering string
	// ObjectSize is the Clover value size the switch's size filter expects
	// (node WRITEs and READs are 24 + ObjectSize bytes). Default 128.
	ObjectSize int
	// TailTTL is how long the switch may steer to a confirmed tail (the
	// controller's tail-ttl): below half of the memory system's T_r.
	// Default rack.DefaultTailTTL (half of Clover's default T_r).
	TailTTL time.Duration
	// TrackedKeys are the Clover keys the switch steers.
	TrackedKeys []uint64
	// MemorySize is the size of the memory node's region. Default 64 MiB.
	MemorySize int
	// MemoryInit, if set, lays out the memory node's region before it is
	// registered (a memory system's initialiser).
	MemoryInit func(buf []byte) error
	// MemoryWorkers shards the memory node's responder (SwordBox Figure 2).
	MemoryWorkers int
	// MemoryTiming is the memory node's NIC timing model (nil: untimed).
	MemoryTiming *rnic.Timing
	// MemoryOnAtomic, if set, observes every atomic the memory node
	// executes (rnic.Config.OnAtomic).
	MemoryOnAtomic func(rnic.ExecutedAtomic)
	// HostFaults are injected on every host link, both directions (not on
	// the memory node's link: see MemoryFaults).
	HostFaults, MemoryFaults netio.Faults
	// RNICTimeout is every RNIC's local ACK timeout (default 50ms, near a
	// ConnectX's default of 67ms). Shorter timeouts fire spuriously when the
	// machine's cores are oversubscribed, which a benchmark would then
	// measure as retransmissions that no lossy link caused.
	RNICTimeout time.Duration
	// RepairPeriod and RepairThreshold are the controller's CAS repair loop
	// (default 200ms and 400ms).
	RepairPeriod, RepairThreshold time.Duration
	// P4Source is a switch program file to run instead of the swordbox.p4
	// built into the binary.
	P4Source string
	// SwitchArch is the switch program's architecture, ArchV1Model (the
	// default) or ArchTNA (switcharch.go); P4Source must be written for it.
	SwitchArch string
	// Chain turns on chained write steering (rack.Config.Chain).
	Chain bool
	// SwitchTap, if set, sees every frame entering the switch.
	SwitchTap SwitchTap
	// Logf receives notable events (nil: silent).
	Logf func(format string, args ...any)
}

// Port numbers on the switch.
const (
	MemoryPort    = 1
	firstHostPort = 2
)

// Rack is a running software rack.
type Rack struct {
	cfg Config

	Switch *p4rt.Server
	// SwitchAddr is the P4Runtime gRPC address on loopback.
	SwitchAddr string
	Ctrl       *ctrl.Controller

	// Memory is the memory node's RNIC and MemoryMR its registered region.
	Memory   *rnic.Device
	MemoryMR *rnic.MR
	// Hosts are the other RNICs, on switch ports 2, 3, ...
	Hosts []*rnic.Device

	ports []*countingPort // switch side, by port order: memory node first
	links []*netio.LinkPort

	grpcSrv *grpc.Server
	cancel  context.CancelFunc
	ctrlErr chan error
	closed  atomic.Bool
}

// HostMAC and HostIP give a rack member's addresses: member 0 is the memory
// node, member i>0 is Hosts[i-1].
func HostMAC(i int) [6]byte { return [6]byte{0x02, 0, 0, 0, byte(i >> 8), byte(i + 1)} }
func HostIP(i int) [4]byte  { return [4]byte{10, 0, byte(i >> 8), byte(i + 1)} }

// RackHost is the controller's entry for rack member i (addresses
// HostMAC(i), HostIP(i)) named name on switch port port.
func RackHost(name string, port, i int) rack.Host {
	mac, ip := HostMAC(i), HostIP(i)
	return rack.Host{Name: name, Port: port, MAC: net.HardwareAddr(mac[:]).String(), IP: netip.AddrFrom4(ip).String()}
}

// NewRack builds and starts a rack and returns once the controller has
// programmed the switch (forwarding, steering mode, size filter, tracked
// keys).
func NewRack(ctx context.Context, cfg Config) (_ *Rack, err error) {
	if cfg.Hosts <= 0 {
		cfg.Hosts = 2
	}
	if cfg.Hosts > 250 {
		return nil, fmt.Errorf("testbed: %d hosts: at most 250", cfg.Hosts)
	}
	if cfg.Steering == "" {
		cfg.Steering = SteerOff
	}
	if cfg.ObjectSize <= 0 {
		cfg.ObjectSize = 128
	}
	if cfg.MemorySize <= 0 {
		cfg.MemorySize = 64 << 20
	}
	if cfg.RNICTimeout <= 0 {
		cfg.RNICTimeout = 50 * time.Millisecond
	}
	if cfg.RepairPeriod <= 0 {
		// Each poll reads all 8192 CAS records over P4Runtime, on the
		// cores the data path shares: 5 polls a second cost little, and
		// with tails confirmed at their ACK a late repair breaks nothing.
		cfg.RepairPeriod = 200 * time.Millisecond
	}
	if cfg.TailTTL <= 0 {
		cfg.TailTTL = rack.DefaultTailTTL
	}
	if cfg.RepairThreshold <= 0 {
		cfg.RepairThreshold = 400 * time.Millisecond
	}
	prog, src, p4src, err := SwitchProgram(cfg.SwitchArch, cfg.P4Source)
	if err != nil {
		return nil, fmt.Errorf("testbed: %w", err)
	}

	r := &Rack{cfg: cfg, ctrlErr: make(chan error, 1)}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()

	// Links: switch port p <-> member. Member 0 is the memory node.
	swPorts := map[uint32]netio.Port{}
	memberPorts := make([]netio.Port, cfg.Hosts+1)
	for i := 0; i <= cfg.Hosts; i++ {
		p := uint32(MemoryPort + i)
		faults := cfg.HostFaults
		if i == 0 {
			faults = cfg.MemoryFaults
		}
		f := faults
		f2 := faults
		if f.Seed != 0 {
			f.Seed += int64(2 * i)
			f2.Seed += int64(2*i + 1)
		}
		sw, host, lerr := netio.NewLink(fmt.Sprintf("sw-p%d", p), fmt.Sprintf("member%d", i),
			netio.LinkConfig{Capacity: 4096, AtoB: f, BtoA: f2})
		if lerr != nil {
			return nil, fmt.Errorf("testbed: link to port %d: %w", p, lerr)
		}
		cp := &countingPort{Port: tapped(sw, p, cfg.SwitchTap)}
		r.ports = append(r.ports, cp)
		r.links = append(r.links, sw, host)
		swPorts[p] = cp
		memberPorts[i] = host
	}

	// The switch and its P4Runtime server on loopback.
	r.Switch = p4rt.New(p4rt.Options{DeviceID: 1, Ports: swPorts, Logf: cfg.Logf})
	r.Switch.Start()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("testbed: P4Runtime listener: %w", err)
	}
	r.SwitchAddr = lis.Addr().String()
	r.grpcSrv = grpc.NewServer()
	r.Switch.Register(r.grpcSrv)
	go r.grpcSrv.Serve(lis)

	// RNICs. Behind a steering switch every host runs with ICRC checking
	// off (the switch rewrites requests and responses without recomputing
	// it), as in the paper (section 5.1).
	r.Memory, err = rnic.New(memberPorts[0], rnic.Config{Name: "mem0", MAC: HostMAC(0), IP: HostIP(0),
		SkipICRC: true, Workers: cfg.MemoryWorkers, Timing: cfg.MemoryTiming, Timeout: cfg.RNICTimeout, OnAtomic: cfg.MemoryOnAtomic})
	if err != nil {
		return nil, fmt.Errorf("testbed: memory node: %w", err)
	}
	memBuf := make([]byte, cfg.MemorySize)
	if cfg.MemoryInit != nil {
		if err := cfg.MemoryInit(memBuf); err != nil {
			return nil, fmt.Errorf("testbed: memory node: lay out region: %w", err)
		}
	}
	if r.MemoryMR, err = r.Memory.Register(memBuf, allAccess); err != nil {
		return nil, fmt.Errorf("testbed: memory node: register region: %w", err)
	}
	for i := 1; i <= cfg.Hosts; i++ {
		d, herr := rnic.New(memberPorts[i], rnic.Config{Name: fmt.Sprintf("host%d", i), MAC: HostMAC(i), IP: HostIP(i), Timeout: cfg.RNICTimeout, SkipICRC: true})
		if herr != nil {
			return nil, fmt.Errorf("testbed: host %d: %w", i, herr)
		}
		r.Hosts = append(r.Hosts, d)
	}

	// The controller, over gRPC, with the rack's configuration.
	rc := rack.Defaults()
	rc.Switch = r.SwitchAddr
	rc.DeviceID = 1
	rc.ElectionID = 10
	rc.Push = true
	// Named for the record only: ctrl.Options below hands the controller the
	// P4Info and device config built into this binary.
	rc.P4Info = strings.TrimSuffix(src, ".p4") + ".p4info.txtpb"
	rc.DeviceConfig = src
	rc.Metrics = ""
	rc.Steering = cfg.Steering
	rc.ObjectSize = cfg.ObjectSize
	rc.TrackedKeys = cfg.TrackedKeys
	rc.TailTTL = cfg.TailTTL
	rc.Chain = cfg.Chain
	rc.RepairPeriod = cfg.RepairPeriod
	rc.RepairThreshold = cfg.RepairThreshold
	for i := 0; i <= cfg.Hosts; i++ {
		name := fmt.Sprintf("host%d", i)
		if i == 0 {
			name = "mem0"
		}
		rc.Hosts = append(rc.Hosts, RackHost(name, MemoryPort+i, i))
	}
	mr := r.MemoryMR.Remote()
	rc.MemoryNodes = []rack.MemoryNode{{Host: "mem0", Regions: []rack.Region{{
		Base: fmt.Sprintf("%#x", mr.Addr), Length: fmt.Sprintf("%#x", mr.Len)}}}}
	parsed, err := rc.Parse()
	if err != nil {
		return nil, fmt.Errorf("testbed: controller configuration: %w", err)
	}
	r.Ctrl, err = ctrl.New(parsed, ctrl.Options{P4Info: prog.P4Info(), DeviceConfig: p4src})
	if err != nil {
		return nil, fmt.Errorf("testbed: controller: %w", err)
	}
	cctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.ctrlErr <- r.Ctrl.Run(cctx) }()

	if err := r.waitProgrammed(ctx, prog); err != nil {
		return nil, err
	}
	return r, nil
}

// waitProgrammed polls the switch, as an observer, until the controller has
// installed a forward entry per member and the steering mode it was given.
func (r *Rack) waitProgrammed(ctx context.Context, prog *target.Program) error {
	obs, err := p4rtc.Dial(p4rtc.Options{Addr: r.SwitchAddr, DeviceID: 1, Observer: true})
	if err != nil {
		return fmt.Errorf("testbed: observer: %w", err)
	}
	defer obs.Close()
	schema, err := p4rtc.NewSchema(prog.P4Info())
	if err != nil {
		return fmt.Errorf("testbed: observer: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		last := errors.New("no pipeline yet")
		if r.Switch.P4Info() != nil {
			last = SwitchProgrammed(ctx, obs, schema, r.cfg.Steering, r.cfg.Chain, len(r.ports), len(r.cfg.TrackedKeys))
		}
		if last == nil {
			return nil
		}
		select {
		case err := <-r.ctrlErr:
			return fmt.Errorf("testbed: controller stopped before programming the switch: %v", err)
		case <-ctx.Done():
			return fmt.Errorf("testbed: switch not programmed in time: %v", last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// SteerModeValue is the mode parameter of swordbox.p4's config table
// (set_config) for a controller steering setting (docs/swordbox-p4.md).
func SteerModeValue(steering string) (uint64, error) {
	switch steering {
	case SteerOff:
		return 0, nil
	case SteerWrite:
		return 1, nil
	case "read":
		return 2, nil
	case SteerReadWrite:
		return 3, nil
	}
	return 0, fmt.Errorf("testbed: steering %q: want off, write, read or read-write", steering)
}

// SteerModeChain is the mode bit of chained write steering
// (docs/swordbox-p4.md, "Chain mode"), set with write steering only.
const SteerModeChain = 4

// SwitchProgrammed reads a switch running swordbox.p4 through the observer
// client obs and reports nil once it holds at least members forward
// entries, the config table's default entry with the steering mode and at least tracked
// tracked keys: what the controller installs when it takes charge. It
// reads once; callers poll. chain adds the chain bit to write steering.
func SwitchProgrammed(ctx context.Context, obs *p4rtc.Client, schema *p4rtc.Schema, steering string, chain bool, members, tracked int) error {
	wantMode, err := SteerModeValue(steering)
	if err != nil {
		return err
	}
	if chain && wantMode&1 != 0 {
		wantMode |= SteerModeChain
	}
	count := func(table string) (int, error) {
		te, err := schema.TableRead(table)
		if err != nil {
			return 0, err
		}
		ents, err := obs.Read(ctx, te)
		return len(ents), err
	}
	if n, err := count("SwordboxIngress.forward"); err != nil {
		return err
	} else if n < members {
		return fmt.Errorf("%d of %d forward entries", n, members)
	}
	v, err := configMode(ctx, obs, schema)
	if err != nil {
		return err
	}
	if v != wantMode {
		return fmt.Errorf("config mode %d, want %d", v, wantMode)
	}
	if tracked > 0 {
		if n, err := count("SwordboxIngress.tracked_keys"); err != nil {
			return err
		} else if n < tracked {
			return fmt.Errorf("%d of %d tracked keys", n, tracked)
		}
	}
	return nil
}

// configMode reads the mode parameter of the config table's default entry.
func configMode(ctx context.Context, obs *p4rtc.Client, schema *p4rtc.Schema) (uint64, error) {
	t, err := schema.Table("SwordboxIngress.config")
	if err != nil {
		return 0, err
	}
	a, err := schema.Action("SwordboxIngress.set_config")
	if err != nil {
		return 0, err
	}
	var modeID uint32
	for _, p := range a.GetParams() {
		if p.GetName() == "mode" {
			modeID = p.GetId()
		}
	}
	ents, err := obs.Read(ctx, p4rtc.TableEntity(&p4.TableEntry{TableId: t.GetPreamble().GetId(), IsDefaultAction: true}))
	if err != nil {
		return 0, err
	}
	if len(ents) != 1 {
		return 0, fmt.Errorf("config default entry: %d entries", len(ents))
	}
	act := ents[0].GetTableEntry().GetAction().GetAction()
	if act.GetActionId() != a.GetPreamble().GetId() {
		return 0, fmt.Errorf("config default action %d, want set_config", act.GetActionId())
	}
	for _, p := range act.GetParams() {
		if p.GetParamId() == modeID {
			return p4rtc.ToUint(p.GetValue())
		}
	}
	return 0, fmt.Errorf("config default entry without the mode parameter")
}

// ConnectToMemory creates a QP on host h connected to a new QP on the memory
// node, in process (the rdma_cm exchange without the socket).
func (r *Rack) ConnectToMemory(h *rnic.Device, depth int) (*rnic.QP, error) {
	return r.connect(h, r.Memory, depth)
}

// ConnectHosts connects a QP of host a to a QP of host b (two-sided traffic,
// for example to a metadata server).
func (r *Rack) ConnectHosts(a, b *rnic.Device, depth int) (*rnic.QP, *rnic.QP, error) {
	qa, qb, err := r.pair(a, b, depth)
	return qa, qb, err
}

func (r *Rack) connect(h, peer *rnic.Device, depth int) (*rnic.QP, error) {
	q, _, err := r.pair(h, peer, depth)
	return q, err
}

var psnSeed atomic.Uint32

func (r *Rack) pair(a, b *rnic.Device, depth int) (*rnic.QP, *rnic.QP, error) {
	if depth <= 0 {
		depth = 64
	}
	mk := func(d *rnic.Device) (*rnic.QP, error) {
		cq := d.NewCQ(4 * depth)
		return d.NewQP(qpConfig(cq, depth))
	}
	qa, err := mk(a)
	if err != nil {
		return nil, nil, fmt.Errorf("testbed: %s: create QP: %w", a.Name(), err)
	}
	qb, err := mk(b)
	if err != nil {
		return nil, nil, fmt.Errorf("testbed: %s: create QP: %w", b.Name(), err)
	}
	// Distinct, deterministic starting PSNs per connection.
	s := psnSeed.Add(0x10001)
	if err := rnic.Connect(qa, qb, s&0xffffff, (s*7)&0xffffff); err != nil {
		return nil, nil, fmt.Errorf("testbed: connect %s to %s: %w", a.Name(), b.Name(), err)
	}
	return qa, qb, nil
}

// WireStats is what crossed the switch's ports.
type WireStats struct {
	Frames, Bytes uint64
}

// Wire returns the frames and bytes (Ethernet header to ICRC) the switch
// received on all its ports since the rack started. Every frame between two
// members enters the switch exactly once, so this is the traffic on the wire
// (without preamble, FCS and inter-frame gap).
func (r *Rack) Wire() WireStats {
	var w WireStats
	for _, p := range r.ports {
		w.Frames += p.frames.Load()
		w.Bytes += p.bytes.Load()
	}
	return w
}

// Close stops the controller, the switch and every RNIC.
func (r *Rack) Close() error {
	if r.closed.Swap(true) {
		return nil
	}
	if r.cancel != nil {
		r.cancel()
		select {
		case <-r.ctrlErr:
		case <-time.After(5 * time.Second):
		}
	}
	if r.Ctrl != nil {
		r.Ctrl.Close()
	}
	for _, h := range r.Hosts {
		h.Close()
	}
	if r.Memory != nil {
		r.Memory.Close()
	}
	if r.grpcSrv != nil {
		r.grpcSrv.Stop()
	}
	if r.Switch != nil {
		r.Switch.Close()
	}
	for _, l := range r.links {
		l.Close()
	}
	return nil
}

// countingPort counts the frames and bytes a switch port receives.
type countingPort struct {
	netio.Port
	frames, bytes atomic.Uint64
}

func (c *countingPort) Recv(bufs [][]byte) (int, error) {
	n, err := c.Port.Recv(bufs)
	var b uint64
	for i := 0; i < n; i++ {
		b += uint64(len(bufs[i]))
	}
	c.frames.Add(uint64(n))
	c.bytes.Add(b)
	return n, err
}

var allAccess = verbs.AccessAll

func qpConfig(cq verbs.CQ, depth int) verbs.QPConfig {
	return verbs.QPConfig{SendCQ: cq, RecvCQ: cq, MaxSendWR: depth, MaxRecvWR: depth}
}
