package sim

import (
	"github.com/swordbox/swordbox/roce/rnic"
)

// Host is an RNIC on the rack: rnic's engines driven in virtual time by
// the simulation (rnic.Virtual), with its link towards the switch.
type Host struct {
	sim  *Sim
	V    *rnic.Virtual
	Out  *Link
	tick bool
	// AfterFire, if set, runs after every engine step of the device (a
	// frame processed): where a traffic generator or the client scheduler
	// looks at its completion queues.
	AfterFire func()
}

// Arguments of a host's events.
const (
	hostRx   = 0
	hostTick = 1 << 62
	hostFire = 1 << 63
)

// Now implements rnic.VirtualHost.
func (h *Host) Now() int64 { return h.sim.now }

// Transmit implements rnic.VirtualHost.
func (h *Host) Transmit(frame []byte, at int64) { h.Out.Send(at, frame) }

// Schedule implements rnic.VirtualHost.
func (h *Host) Schedule(at int64, token uint32) { h.sim.Schedule(at, h, hostFire|uint64(token), nil) }

// Event implements Handler.
func (h *Host) Event(s *Sim, arg uint64, f *Frame) {
	switch {
	case f != nil:
		h.V.Receive(f.B)
	case arg&hostFire != 0:
		h.V.Fire(uint32(arg))
		if h.AfterFire != nil {
			h.AfterFire()
		}
	case arg == hostTick:
		h.V.Tick()
		if h.AfterFire != nil {
			h.AfterFire()
		}
		s.Schedule(s.now+h.V.TickPeriod(), h, hostTick, nil)
	}
}

// NewHost creates an RNIC with timing t on s; call Attach to give it its
// link.
func NewHost(s *Sim, cfg rnic.Config, t rnic.VirtualTiming) (*Host, error) {
	h := &Host{sim: s}
	v, err := rnic.NewVirtual(cfg, t, h)
	if err != nil {
		return nil, err
	}
	h.V = v
	return h, nil
}

// Attach sets the host's outgoing link and starts its timers.
func (h *Host) Attach(out *Link) {
	h.Out = out
	if !h.tick {
		h.tick = true
		h.sim.Schedule(h.sim.now+h.V.TickPeriod(), h, hostTick, nil)
	}
}

// Device returns the host's RNIC.
func (h *Host) Device() *rnic.Device { return h.V.Device() }
