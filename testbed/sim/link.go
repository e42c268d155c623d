package sim

import (
	"fmt"
	"time"
)

// Ethernet framing on the wire beyond the frame a Port carries: frames
// shorter than EthMinFrame are padded to it, and each frame costs
// EthOverhead more bytes of line time (FCS 4, preamble and start delimiter
// 8, inter-frame gap 12; IEEE 802.3).
const (
	EthMinFrame = 60
	EthOverhead = 24
)

// Link defaults (docs/sim.md gives the source of each).
const (
	// DefaultGbps: the testbed of SwordBox section 6 (100 Gb/s NICs and ToR).
	DefaultGbps = 100
	// DefaultPropagation: 2 m of cable at about 5 ns/m; our assumption
	// for a rack.
	DefaultPropagation = 10 * time.Nanosecond
	// DefaultSwitchQueueBytes: the depth of one switch egress queue, a
	// 64th of a Tofino's 22 MB shared packet buffer; our assumption.
	DefaultSwitchQueueBytes = 22 << 20 / 64
	// DefaultHostQueueBytes: a NIC's transmit queue does not drop (the
	// requester stalls instead); 64 MiB of backlog is never reached by
	// the windows RC allows.
	DefaultHostQueueBytes = 64 << 20
)

// LinkConfig configures one direction of a link.
type LinkConfig struct {
	// Gbps is the line rate (0: DefaultGbps); Propagation the one-way
	// delay (0: DefaultPropagation).
	Gbps        float64
	Propagation time.Duration
	// QueueBytes is the depth of the output queue at the sending end, in
	// bytes of line time: a frame that would find more backlog than that
	// (the one on the wire included) is dropped at the tail.
	QueueBytes int
}

func (c *LinkConfig) check() error {
	if c.Gbps == 0 {
		c.Gbps = DefaultGbps
	}
	if c.Propagation == 0 {
		c.Propagation = DefaultPropagation
	}
	if c.Gbps < 0.001 || c.Gbps > 10000 {
		return fmt.Errorf("sim: link rate %g Gb/s: want 0.001 to 10000", c.Gbps)
	}
	if c.Propagation < 0 || c.Propagation > time.Second {
		return fmt.Errorf("sim: link propagation %v: want 0 to 1s", c.Propagation)
	}
	if c.QueueBytes < EthMinFrame+EthOverhead {
		return fmt.Errorf("sim: queue of %d bytes: want at least %d (one minimal frame)", c.QueueBytes, EthMinFrame+EthOverhead)
	}
	return nil
}

// Link is one direction of a cable: a FIFO output queue at the sender,
// serialization at line rate, propagation, then delivery to a handler
// (with arg, the receiving port).
type Link struct {
	cfg      LinkConfig
	psByte   float64 // picoseconds per byte of line time
	prop     int64
	busy     int64 // ps: when the last queued frame has left the sender
	to       Handler
	arg      uint64
	sim      *Sim
	Frames   uint64 // frames delivered
	Bytes    uint64 // frame bytes delivered (without Ethernet overhead)
	Drops    uint64 // frames dropped at the tail of the output queue
	MaxQueue int    // largest backlog seen, bytes
	// Lose, if set, is asked about every frame the queue accepted: true
	// loses it on the wire (after its line time), counted in Lost. Fault
	// injection; it must be deterministic (use Sim.Rand).
	Lose func(frame []byte) bool
	Lost uint64
}

// NewLink returns a link of s delivering to h.Event(s, arg, frame).
func NewLink(s *Sim, cfg LinkConfig, h Handler, arg uint64) (*Link, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	return &Link{cfg: cfg, psByte: 8000 / cfg.Gbps, prop: int64(cfg.Propagation), to: h, arg: arg, sim: s}, nil
}

// WireBytes is the line time of a frame of n bytes, in bytes.
func WireBytes(n int) int {
	if n < EthMinFrame {
		n = EthMinFrame
	}
	return n + EthOverhead
}

// Send queues a copy of frame at virtual time at (>= Now) and reports
// false if the queue dropped it.
func (l *Link) Send(at int64, frame []byte) bool {
	w := WireBytes(len(frame))
	t := at * 1000
	backlog := 0
	if l.busy > t {
		backlog = int(float64(l.busy-t) / l.psByte)
	}
	if backlog+w > l.cfg.QueueBytes {
		l.Drops++
		return false
	}
	if backlog+w > l.MaxQueue {
		l.MaxQueue = backlog + w
	}
	start := max(t, l.busy)
	l.busy = start + int64(float64(w)*l.psByte+0.5)
	arrive := (l.busy+999)/1000 + l.prop
	if l.Lose != nil && l.Lose(frame) {
		l.Lost++
		return true
	}
	l.Frames++
	l.Bytes += uint64(len(frame))
	l.sim.Schedule(arrive, l.to, l.arg, l.sim.NewFrame(frame))
	return true
}
