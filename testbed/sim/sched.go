package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/swordbox/swordbox/roce/rnic"
	"github.com/swordbox/swordbox/roce/verbs"
)

// Sched runs client goroutines (memory systems' clients and servers,
// unchanged) in virtual time, one at a time: a goroutine runs only while
// it holds the run token, and gives it back when it waits, in exactly the
// places roce/verbs allows: CQ.Wait, the clock's Sleep and WithTimeout,
// and an Event's Wait. The loop wakes it at the virtual instant its wait
// ends (a completion, a timer) and hands it the token again. Goroutines
// woken at one instant run in the order they were woken; so a run is
// deterministic, whatever the Go scheduler does.
//
// Code running under the scheduler must not block anywhere else (a
// channel, a mutex held across a wait, the wall clock): the loop would
// wait for it forever. clover, sherman and swarm are checked for that by
// roce/verbs/clockcheck.
type Sched struct {
	sim   *Sim
	runq  []*Proc
	head  int
	back  chan struct{}
	cur   *Proc
	procs []*Proc
	// cqs maps a device's completion queue to its wrapper, to wake the
	// goroutine waiting on it when the device completes work.
	cqs      map[*rnic.CQ]*CQ
	hostCQs  map[*Host][]*CQ
	ctxWait  []*Proc // parked with a context that can be done
	root     context.Context
	stopRoot context.CancelFunc
	stopped  bool
}

// Proc is a goroutine under the scheduler.
type Proc struct {
	s     *Sched
	name  string
	wake  chan struct{}
	state procState
	gen   uint64 // parks so far: stale wake-ups carry an older one
	ctx   context.Context
	Err   error // what its function returned
}

type procState uint8

const (
	procNew procState = iota
	procRunnable
	procRunning
	procParked
	procDone
)

// NewSched returns the scheduler of s. Its goroutines get a context that
// is cancelled by Stop.
func NewSched(s *Sim) *Sched {
	root, cancel := context.WithCancel(context.Background())
	return &Sched{sim: s, back: make(chan struct{}), cqs: map[*rnic.CQ]*CQ{}, hostCQs: map[*Host][]*CQ{},
		root: root, stopRoot: cancel}
}

// Go starts fn as a goroutine under the scheduler; it first runs when the
// loop next runs goroutines (Run), in the order of Go calls.
func (s *Sched) Go(name string, fn func(ctx context.Context) error) *Proc {
	p := &Proc{s: s, name: name, wake: make(chan struct{})}
	s.procs = append(s.procs, p)
	go func() {
		<-p.wake
		p.Err = fn(s.root)
		p.state = procDone
		s.cur = nil
		s.back <- struct{}{}
	}()
	s.ready(p)
	return p
}

// ready makes p runnable (from the loop or from the running goroutine).
func (s *Sched) ready(p *Proc) {
	if p.state == procRunnable || p.state == procDone || p.state == procRunning {
		return
	}
	p.state = procRunnable
	s.runq = append(s.runq, p)
}

// wakeGen readies p if it is still parked in its park number gen.
func (s *Sched) wakeGen(p *Proc, gen uint64) {
	if p.state == procParked && p.gen == gen {
		s.ready(p)
	}
}

// runReady runs the runnable goroutines until none is left.
func (s *Sched) runReady() {
	for s.head < len(s.runq) {
		p := s.runq[s.head]
		s.runq[s.head] = nil
		s.head++
		if s.head == len(s.runq) {
			s.runq, s.head = s.runq[:0], 0
		}
		if p.state != procRunnable {
			continue
		}
		p.state = procRunning
		s.cur = p
		p.wake <- struct{}{}
		<-s.back
	}
}

// park gives the token back and blocks until the loop hands it over again.
// ctx, if it can be done, wakes the goroutine when it is.
func (s *Sched) park(p *Proc, ctx context.Context) {
	p.state = procParked
	p.ctx = ctx
	if ctx != nil && ctx.Done() != nil {
		s.ctxWait = append(s.ctxWait, p)
	}
	s.cur = nil
	s.back <- struct{}{}
	<-p.wake
	p.gen++
	p.ctx = nil
}

// current returns the goroutine holding the token, or an error for a
// caller outside the scheduler.
func (s *Sched) current(what string) (*Proc, error) {
	if s.cur == nil {
		return nil, fmt.Errorf("sim: %s outside a goroutine of the scheduler (start it with Sched.Go)", what)
	}
	return s.cur, nil
}

// wakeDone readies every goroutine parked with a context that is done.
func (s *Sched) wakeDone() {
	keep := s.ctxWait[:0]
	for _, p := range s.ctxWait {
		if p.state != procParked || p.ctx == nil {
			continue
		}
		if p.ctx.Err() != nil {
			s.ready(p)
			continue
		}
		keep = append(keep, p)
	}
	for i := len(keep); i < len(s.ctxWait); i++ {
		s.ctxWait[i] = nil
	}
	s.ctxWait = keep
}

// Run runs goroutines and events up to virtual time end: runnable
// goroutines first, then the next event, and so on.
func (s *Sched) Run(end int64) {
	for {
		s.runReady()
		if len(s.sim.q) == 0 || s.sim.q[0].at > end {
			break
		}
		s.sim.Step()
	}
	if s.sim.now < end {
		s.sim.now = end
	}
}

// Stop cancels every goroutine's context and runs them until each has
// returned or parked again with nothing left to wake it. It reports the
// names of goroutines still parked (stuck on a wait that never ends).
func (s *Sched) Stop() error {
	s.stopped = true
	s.stopRoot()
	for round := 0; round < 1000; round++ {
		s.wakeDone()
		for _, p := range s.procs {
			if p.state == procParked {
				s.ready(p)
			}
		}
		s.runReady()
		live := 0
		for _, p := range s.procs {
			if p.state != procDone {
				live++
			}
		}
		if live == 0 {
			return nil
		}
	}
	var stuck []string
	for _, p := range s.procs {
		if p.state != procDone {
			stuck = append(stuck, p.name)
		}
	}
	return fmt.Errorf("sim: goroutines still running after stop: %v", stuck)
}

// Procs are the goroutines started so far.
func (s *Sched) Procs() []*Proc { return s.procs }

// ---- completion queues ----

// CQ is a completion queue of a host as the scheduler's goroutines see it
// (verbs.CQ): Wait parks the goroutine until the device completes work on
// it.
type CQ struct {
	s      *Sched
	Q      *rnic.CQ
	waiter *Proc
	wgen   uint64
	// CPU, when positive, is the CPU time its consumer spends per
	// completion: Poll and Wait return only after that much virtual time
	// per completion they took (a CPU-bound server, such as a metadata
	// server answering two-sided requests).
	CPU time.Duration
}

var _ verbs.CQ = (*CQ)(nil)

// Poll implements verbs.CQ.
func (c *CQ) Poll(wcs []verbs.WC) int {
	k := c.Q.Poll(wcs)
	c.charge(k)
	return k
}

// charge spends c.CPU per completion of the goroutine that took them.
func (c *CQ) charge(k int) {
	if c.CPU <= 0 || k == 0 || c.s.cur == nil {
		return
	}
	p := c.s.cur
	c.s.sim.Schedule(c.s.sim.now+int64(k)*int64(c.CPU), &wakeTimer{p: p, gen: p.gen}, 0, nil)
	c.s.park(p, nil)
}

// Wait implements verbs.CQ in virtual time.
func (c *CQ) Wait(ctx context.Context, wcs []verbs.WC) (int, error) {
	p, err := c.s.current("CQ.Wait")
	if err != nil {
		return 0, err
	}
	for {
		if k := c.Poll(wcs); k > 0 {
			return k, nil
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if c.waiter != nil && c.waiter != p && c.waiter.state == procParked {
			return 0, errors.New("sim: two goroutines wait on one completion queue")
		}
		c.waiter, c.wgen = p, p.gen
		c.s.park(p, ctx)
		c.waiter = nil
	}
}

// check wakes the CQ's waiter if it has completions.
func (c *CQ) check() {
	if c.waiter != nil && c.Q.Len() > 0 {
		c.s.wakeGen(c.waiter, c.wgen)
	}
}

// NewCQ creates a completion queue of depth on host h under the
// scheduler.
func (s *Sched) NewCQ(h *Host, depth int) *CQ {
	c := &CQ{s: s, Q: h.Device().NewCQ(depth)}
	s.cqs[c.Q] = c
	if _, ok := s.hostCQs[h]; !ok {
		s.watch(h)
	}
	s.hostCQs[h] = append(s.hostCQs[h], c)
	return c
}

// watch hooks the scheduler into h's engine steps: after each, the CQs of
// the QP that ran are checked; after a timer tick, all of h's.
func (s *Sched) watch(h *Host) {
	prev := h.AfterFire
	h.AfterFire = func() {
		if prev != nil {
			prev()
		}
		q := h.V.LastQP()
		if q == nil {
			for _, c := range s.hostCQs[h] {
				c.check()
			}
			return
		}
		sq, rq := q.CQs()
		if c := s.cqs[sq]; c != nil {
			c.check()
		}
		if rq != sq {
			if c := s.cqs[rq]; c != nil {
				c.check()
			}
		}
	}
}

// ---- the clock ----

// Clock is virtual time as a verbs.Clock for the scheduler's goroutines.
type Clock struct{ s *Sched }

var _ verbs.Clock = Clock{}

// Clock returns the scheduler's clock.
func (s *Sched) Clock() Clock { return Clock{s} }

// Now implements verbs.Clock: virtual time since the simulation began.
func (c Clock) Now() time.Duration { return time.Duration(c.s.sim.now) }

// wakeTimer wakes a goroutine parked in Sleep.
type wakeTimer struct {
	p   *Proc
	gen uint64
}

func (w *wakeTimer) Event(s *Sim, _ uint64, _ *Frame) { w.p.s.wakeGen(w.p, w.gen) }

// Sleep implements verbs.Clock in virtual time.
func (c Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	p, err := c.s.current("Clock.Sleep")
	if err != nil {
		return err
	}
	c.s.sim.Schedule(c.s.sim.now+int64(d), &wakeTimer{p: p, gen: p.gen}, 0, nil)
	c.s.park(p, ctx)
	return ctx.Err()
}

// vctx is a context whose deadline is in virtual time: a timer event of
// the loop cancels it.
type vctx struct {
	context.Context
	cancel context.CancelFunc
	s      *Sched
	fired  bool
	done   bool
}

func (v *vctx) Err() error {
	if v.fired {
		return context.DeadlineExceeded
	}
	return v.Context.Err()
}

// Event implements Handler: the deadline.
func (v *vctx) Event(s *Sim, _ uint64, _ *Frame) {
	if v.done {
		return
	}
	v.fired, v.done = true, true
	v.cancel()
	v.s.wakeDone()
}

// WithTimeout implements verbs.Clock in virtual time.
func (c Clock) WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	inner, cancel := context.WithCancel(ctx)
	v := &vctx{Context: inner, cancel: cancel, s: c.s}
	if d <= 0 {
		v.fired, v.done = true, true
		cancel()
		return v, func() {}
	}
	c.s.sim.Schedule(c.s.sim.now+int64(d), v, 0, nil)
	return v, func() {
		if !v.done {
			v.done = true
			cancel()
		}
	}
}

// vevent is a verbs.Event between the scheduler's goroutines.
type vevent struct {
	s       *Sched
	set     bool
	waiters []*Proc
	gens    []uint64
}

// NewEvent implements verbs.Clock.
func (c Clock) NewEvent() verbs.Event { return &vevent{s: c.s} }

func (e *vevent) Wait(ctx context.Context) error {
	for !e.set {
		if err := ctx.Err(); err != nil {
			return err
		}
		p, err := e.s.current("Event.Wait")
		if err != nil {
			return err
		}
		e.waiters, e.gens = append(e.waiters, p), append(e.gens, p.gen)
		e.s.park(p, ctx)
	}
	return nil
}

func (e *vevent) Set() {
	if e.set {
		return
	}
	e.set = true
	for i, p := range e.waiters {
		e.s.wakeGen(p, e.gens[i])
	}
	e.waiters, e.gens = nil, nil
}

// ---- the device ----

// Device is a host's RNIC as the scheduler's goroutines see it: a
// verbs.Device whose completion queues and clock are the scheduler's.
type Device struct {
	s *Sched
	H *Host
}

var _ verbs.Device = Device{}

// Device returns host h as a verbs.Device under the scheduler.
func (s *Sched) Device(h *Host) Device { return Device{s: s, H: h} }

// RegisterMR implements verbs.Device.
func (d Device) RegisterMR(buf []byte, access verbs.Access) (verbs.MemoryRegion, error) {
	return d.H.Device().RegisterMR(buf, access)
}

// CreateCQ implements verbs.Device.
func (d Device) CreateCQ(depth int) (verbs.CQ, error) { return d.s.NewCQ(d.H, depth), nil }

// CreateQP implements verbs.Device: the CQs must be this scheduler's.
func (d Device) CreateQP(cfg verbs.QPConfig) (verbs.QP, error) {
	sc, ok1 := cfg.SendCQ.(*CQ)
	rc, ok2 := cfg.RecvCQ.(*CQ)
	if !ok1 || !ok2 {
		return nil, errors.New("sim: create QP: CQs must come from the scheduler's CreateCQ")
	}
	cfg.SendCQ, cfg.RecvCQ = sc.Q, rc.Q
	return d.H.Device().CreateQP(cfg)
}

// Clock implements verbs.Device.
func (d Device) Clock() verbs.Clock { return d.s.Clock() }
