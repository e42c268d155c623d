package sim

import (
	"fmt"
	"time"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/p4/p4rt"
)

// DefaultSwitchLatency is the switch's port-to-port pipeline latency,
// fixed whatever the program does, as on a Tofino; our assumption within
// the sub-microsecond range Tofino switches are sold with.
const DefaultSwitchLatency = 500 * time.Nanosecond

// Switch is the switch node: the P4Runtime server (its committed pipeline
// is the Go v1model target running the program the controller pushed)
// processes each frame when it arrives; the frames it emits enter their
// egress port's queue a fixed pipeline latency later.
type Switch struct {
	Server  *p4rt.Server
	sim     *Sim
	latency int64
	out     map[uint32]*Link // egress links by port (looked up, never iterated)
	ports   map[uint32]netio.Port
	// NoPort counts frames emitted to a port without a link.
	NoPort uint64
}

// NewSwitch creates a switch with the given front-panel port numbers;
// its P4Runtime server keeps the data plane's clock in virtual time. Use
// Connect to give each port its egress link.
func NewSwitch(s *Sim, ports []uint32, latency time.Duration, deviceID uint64) (*Switch, error) {
	if latency < 0 || latency > time.Millisecond {
		return nil, fmt.Errorf("sim: switch latency %v: want 0 to 1ms", latency)
	}
	sw := &Switch{sim: s, latency: int64(latency), out: map[uint32]*Link{}, ports: map[uint32]netio.Port{}}
	for _, p := range ports {
		sw.ports[p] = &switchPort{sw: sw, id: p}
	}
	sw.Server = p4rt.New(p4rt.Options{DeviceID: deviceID, Ports: sw.ports,
		Now: func() uint64 { return uint64(s.now / 1000) }})
	return sw, nil
}

// Connect sets the egress link of port.
func (sw *Switch) Connect(port uint32, l *Link) { sw.out[port] = l }

// Event implements Handler: a frame arrived on port arg.
func (sw *Switch) Event(_ *Sim, arg uint64, f *Frame) {
	if f != nil {
		sw.Server.Process(uint32(arg), f.B)
	}
}

// switchPort is a front-panel port as the P4Runtime server sees it: what
// the pipeline emits goes into the port's egress queue.
type switchPort struct {
	sw *Switch
	id uint32
}

func (p *switchPort) Name() string { return fmt.Sprintf("sim-p%d", p.id) }

func (p *switchPort) Recv([][]byte) (int, error) { return 0, netio.ErrClosed }

func (p *switchPort) Send(frames [][]byte) (int, error) {
	l := p.sw.out[p.id]
	if l == nil {
		p.sw.NoPort += uint64(len(frames))
		return 0, nil
	}
	n := 0
	at := p.sw.sim.now + p.sw.latency
	for _, f := range frames {
		if l.Send(at, f) {
			n++
		}
	}
	return n, nil
}

func (p *switchPort) Close() error { return nil }
