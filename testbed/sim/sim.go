// Package sim is the virtual-time rack: one discrete-event loop in
// simulated nanoseconds driving the project's real components with
// hardware timing.
//
// It owns the event queue and the virtual clock (Sim), links with
// propagation delay, serialization at line rate and a tail-drop output
// queue at their sending end (Link), the switch node (Switch: the Go
// v1model target running p4/swordbox.p4 behind its real P4Runtime server,
// with a fixed pipeline latency), RNIC host nodes (Host: roce/rnic's
// engines behind rnic.Virtual and its timing model), and the assembly of a
// rack programmed by the real controller over gRPC on loopback (Rack); the
// cooperative scheduler under which clients written against roce/verbs run
// unchanged, one at a time, in virtual time (Sched, with its verbs.Device,
// CQ and Clock); raw verbs traffic generators (Gen: SwordBox Figures 3-4);
// Clover's metadata server and clients on the rack (CloverRack, RunClover);
// the middlebox engine as a node with per-core service time and the lock
// benchmark through it (Middlebox, RunCASMux: SwordBox Figure 10);
// Sherman's benchmark cells through it (RunShermanCell, RunShermanSuite);
// and the rack as a benchmark cell's rack (NewCellRack, RunSuite, the
// threads scenario) for testbed's one cell runner. It does not own any
// protocol: frames are real RoCEv2 frames built and parsed by roce,
// switched by the P4 program, answered by the RNIC engines. docs/sim.md
// lists every timing constant with its source and the figures measured.
//
// Determinism: the loop runs on one goroutine; events at the same instant
// run in the order they were scheduled (a sequence number breaks ties);
// randomness comes only from the seeded PRNG (Sim.Rand); nothing iterates
// a map. The same configuration and seed give the same trace, byte for
// byte (Sim.TraceHash). The gRPC and controller goroutines only run before
// the loop starts (programming the switch), or while the loop waits for
// them (a repair step), never beside it.
//
// Steady state allocates nothing per event: events are values in a binary
// heap, and frames live in pooled buffers (Frame) that return to the pool
// once delivered.
package sim

import (
	"math/rand/v2"

	"github.com/swordbox/swordbox/netio"
)

// Handler receives the events scheduled for it: arg and f are what the
// scheduler passed (f is nil for an event without a frame). A handler must
// not keep f: the loop returns it to the pool after the call.
type Handler interface {
	Event(s *Sim, arg uint64, f *Frame)
}

// Frame is a pooled frame buffer.
type Frame struct {
	B   []byte
	buf []byte
}

type event struct {
	at  int64
	seq uint64
	h   Handler
	arg uint64
	f   *Frame
}

// Sim is one discrete-event simulation: a virtual clock in nanoseconds and
// a queue of events.
type Sim struct {
	now    int64
	seq    uint64
	q      []event
	pool   []*Frame
	rng    *rand.Rand
	events uint64
	frames uint64

	// Trace, when set, folds every delivered frame (time, handler's
	// argument, bytes) into the trace hash.
	Trace bool
	hash  uint64
	stop  bool
}

// New returns a simulation at time 0 whose PRNG is seeded with seed.
func New(seed uint64) *Sim {
	return &Sim{rng: rand.New(rand.NewPCG(seed, 0x5eed)), hash: fnvOffset}
}

// Now is the virtual time in nanoseconds.
func (s *Sim) Now() int64 { return s.now }

// Rand is the simulation's only source of randomness.
func (s *Sim) Rand() *rand.Rand { return s.rng }

// Events is the number of events run so far; Frames the number of frames
// delivered.
func (s *Sim) Events() uint64 { return s.events }

// Frames is the number of frames delivered so far.
func (s *Sim) Frames() uint64 { return s.frames }

// TraceHash is the FNV-1a hash of the trace so far (with Trace set).
func (s *Sim) TraceHash() uint64 { return s.hash }

// NewFrame returns a pooled buffer holding a copy of b.
func (s *Sim) NewFrame(b []byte) *Frame {
	var f *Frame
	if n := len(s.pool); n > 0 {
		f = s.pool[n-1]
		s.pool = s.pool[:n-1]
	} else {
		f = &Frame{buf: make([]byte, netio.MaxFrameSize)}
	}
	f.B = f.buf[:copy(f.buf, b)]
	return f
}

// Release returns a frame to the pool (for a frame that was never
// scheduled).
func (s *Sim) Release(f *Frame) {
	if f != nil {
		f.B = nil
		s.pool = append(s.pool, f)
	}
}

// Schedule runs h.Event(s, arg, f) at virtual time at; a time in the past
// runs at Now. The event owns f from now on.
func (s *Sim) Schedule(at int64, h Handler, arg uint64, f *Frame) {
	if at < s.now {
		at = s.now
	}
	s.seq++
	s.q = append(s.q, event{at: at, seq: s.seq, h: h, arg: arg, f: f})
	s.up(len(s.q) - 1)
}

func less(a, b *event) bool {
	return a.at < b.at || a.at == b.at && a.seq < b.seq
}

func (s *Sim) up(i int) {
	q := s.q
	for i > 0 {
		p := (i - 1) / 2
		if !less(&q[i], &q[p]) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
}

func (s *Sim) down(i int) {
	q := s.q
	n := len(q)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && less(&q[r], &q[l]) {
			m = r
		}
		if !less(&q[m], &q[i]) {
			return
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
}

// Pending is the number of events in the queue.
func (s *Sim) Pending() int { return len(s.q) }

// Step runs the earliest event and reports false if there was none.
func (s *Sim) Step() bool {
	if len(s.q) == 0 {
		return false
	}
	e := s.q[0]
	last := len(s.q) - 1
	s.q[0] = s.q[last]
	s.q[last] = event{}
	s.q = s.q[:last]
	if last > 0 {
		s.down(0)
	}
	s.now = e.at
	s.events++
	if e.f != nil {
		s.frames++
		if s.Trace {
			s.fold(e.at, e.arg, e.f.B)
		}
	}
	e.h.Event(s, e.arg, e.f)
	if e.f != nil {
		s.Release(e.f)
	}
	return true
}

// RunUntil runs events up to and including virtual time end (or until the
// queue is empty or Stop is called), then sets the clock to end if it got
// there.
func (s *Sim) RunUntil(end int64) {
	s.stop = false
	for !s.stop && len(s.q) > 0 && s.q[0].at <= end {
		s.Step()
	}
	if !s.stop && s.now < end {
		s.now = end
	}
}

// Run runs until the queue is empty or Stop is called.
func (s *Sim) Run() {
	s.stop = false
	for !s.stop && s.Step() {
	}
}

// Stop makes Run or RunUntil return after the current event.
func (s *Sim) Stop() { s.stop = true }

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func (s *Sim) fold(at int64, arg uint64, b []byte) {
	h := s.hash
	for _, x := range [2]uint64{uint64(at), arg} {
		for i := 0; i < 8; i++ {
			h ^= uint64(byte(x >> (8 * i)))
			h *= fnvPrime
		}
	}
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	s.hash = h
}
