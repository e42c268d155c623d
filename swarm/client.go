package swarm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/swordbox/swordbox/roce/verbs"
)

// NodeConn is a client's connection to one memory node: a connected RC
// queue pair and the node's SWARM region.
type NodeConn struct {
	QP     verbs.QP
	Region verbs.RemoteRegion
}

// Config configures a Client.
type Config struct {
	// ID is the writer id, 1..Layout.Writers, unique among clients
	// (Membership.Join hands them out).
	ID     int
	Layout Layout
	// Device registers the client's local buffers and provides the clock
	// the client runs in (its waits, and Now unless set).
	Device interface {
		verbs.Registrar
		verbs.Clocked
	}
	// Nodes are the replicas, N = 2f+1 of them, each on its own memory node.
	Nodes []NodeConn
	// CQ receives the completions of every queue pair above; the client is
	// its only consumer.
	CQ         verbs.CQ
	Index      *Index
	Membership *Membership
	// Now is the client's clock (default: the device clock's Now, whose
	// epoch all devices of a rack share, so clients start synchronized).
	// Tests set it to skew clocks; it must advance at the device clock's
	// rate, since the client waits on that clock. Tick is the unit of
	// timestamps (default 100ns).
	Now  func() time.Duration
	Tick time.Duration
	// Grace is how long a superseded out-of-place buffer waits before its
	// writer reuses it (default 200ms); a read older than Grace/2 does not
	// write back (it restarts), so no write-back lands in a reused buffer.
	Grace time.Duration
	// MaxOutstanding bounds the verbs in flight to one node (default 64): a
	// node with that many unanswered is skipped, so a crashed node that is
	// not yet detected cannot fill the send queue.
	MaxOutstanding int
	// ReportCrashes tells the membership service about nodes whose queue
	// pair failed, so that other clients stop posting to them at once.
	ReportCrashes bool
	// MaxReadIters bounds Safe-Guess read iterations (default
	// 2*Writers+3, above the paper's 2n+1 bound); passing it is an error.
	MaxReadIters int
}

// Errors besides verbs failures.
var (
	ErrNotFound   = errors.New("swarm: key not found")
	ErrNoMajority = errors.New("swarm: no majority of replicas reachable")
	ErrValueSize  = errors.New("swarm: value size")
	ErrNoBuffer   = errors.New("swarm: out-of-place log exhausted")
	ErrReadBound  = errors.New("swarm: read iterations beyond the bound")
)

// Metrics are one client's counters.
type Metrics struct {
	Gets, Puts, NotFound uint64
	// RoundTrips counts sequential round trips waited for (on the
	// operation's critical path); GetRTT[i] and PutRTT[i] count operations
	// that took i+1 round trips (last bucket: that many or more).
	RoundTrips     uint64
	GetRTT, PutRTT [8]uint64
	// Verbs on the critical path and in the background (verify, in-place
	// copies), by kind.
	Verbs, BgVerbs         uint64
	Reads, Writes, Atomics uint64
	// Safe-Guess: writes on the fast path, on the slow path, slow-path
	// rewrites (TryLock WRITE won), reads that met a GUESSED tuple, read
	// iterations beyond the first, READ locks taken, READ locks failed.
	FastWrites, SlowWrites, Rewrites     uint64
	GuessedSeen, ReadIters               uint64
	ReadLocks, ReadLockFails, LockRounds uint64
	// In-n-Out: reads that needed the out-of-place buffer, write-backs,
	// CAS-MAX retries (stale expected value), reads restarted because a
	// buffer had been reused or a write-back came too late.
	OutOfPlace, WriteBacks, CASRetries, ReadRestarts uint64
	// BufferReuses: out-of-place buffers taken again after their grace.
	BufferReuses uint64
	// IndexLookups: cache misses sent to the index service.
	IndexLookups uint64
	// NodeFailures: memory nodes this client saw fail.
	NodeFailures uint64
}

// Ops is the number of completed operations.
func (m *Metrics) Ops() uint64 { return m.Gets + m.Puts }

// keyState is what a client caches per key: its slot, per node the known
// lower bound of the node's maximum (the max register's c[i]), per node
// the value of its own metadata word (the CAS-MAX expected value), per
// writer and node the last seen lock word, the last tuple it read, and the
// out-of-place buffers it holds for the key.
type keyState struct {
	kv   int
	c    []Word
	mine []Word
	lock map[int][]Word
	last Word
	bufs []int
}

type retired struct {
	log int
	at  time.Duration
}

// pend is one work request in flight.
type pend struct {
	node int
	slot int
	cb   func(ok bool, wc *verbs.WC, data []byte)
}

// Client is one SWARM-KV client (an application thread). Not safe for
// concurrent use.
type Client struct {
	cfg   Config
	f     int
	mr    verbs.MemoryRegion
	buf   []byte
	base  uint64
	slotB int
	free  []int
	wcs   [32]verbs.WC
	wrs   [4]verbs.SendWR
	sges  [4]verbs.SGE
	wrID  uint64
	pend  map[uint64]pend
	out   []int
	dead  []bool
	why   []error
	keys  map[uint64]*keyState
	clock clock
	// dclock is the device's clock, for waits.
	dclock verbs.Clock
	logs   []int
	ret    []retired
	rtt    int // round trips of the current operation
	val    []byte
	m      Metrics
}

// localSlots is the number of local buffers for verbs in flight.
const localSlotsPerNode = 96

// NewClient checks cfg and registers the client's buffers.
func NewClient(cfg Config) (*Client, error) {
	if err := cfg.Layout.Validate(); err != nil {
		return nil, err
	}
	n := len(cfg.Nodes)
	if n < 1 || n%2 == 0 {
		return nil, fmt.Errorf("swarm client %d: %d replicas, want an odd number (2f+1)", cfg.ID, n)
	}
	if cfg.ID < 1 || cfg.ID > cfg.Layout.Writers {
		return nil, fmt.Errorf("swarm client: writer id %d, want 1..%d", cfg.ID, cfg.Layout.Writers)
	}
	if cfg.Device == nil || cfg.CQ == nil || cfg.Index == nil {
		return nil, fmt.Errorf("swarm client %d: need a device, a CQ and an index", cfg.ID)
	}
	for i, nc := range cfg.Nodes {
		if nc.QP == nil || nc.Region.Len < uint64(cfg.Layout.RegionSize()) {
			return nil, fmt.Errorf("swarm client %d: node %d: no queue pair, or region of %d bytes smaller than the layout's %d", cfg.ID, i, nc.Region.Len, cfg.Layout.RegionSize())
		}
	}
	if cfg.Tick < 0 || cfg.Grace < 0 || cfg.MaxReadIters < 0 || cfg.MaxOutstanding < 0 || (cfg.MaxOutstanding > 0 && cfg.MaxOutstanding < 8) {
		return nil, fmt.Errorf("swarm client %d: tick %s, grace %s, max read iterations %d, max outstanding %d: want tick, grace and iterations >= 0 (0: default), max outstanding 0 (default) or >= 8",
			cfg.ID, cfg.Tick, cfg.Grace, cfg.MaxReadIters, cfg.MaxOutstanding)
	}
	if cfg.Membership == nil {
		cfg.Membership = NewMembership(n, cfg.Layout.Writers)
	}
	dclock := cfg.Device.Clock()
	if cfg.Now == nil {
		cfg.Now = dclock.Now
	}
	if cfg.Tick <= 0 {
		cfg.Tick = 100 * time.Nanosecond
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 200 * time.Millisecond
	}
	if cfg.MaxOutstanding <= 0 {
		cfg.MaxOutstanding = 64
	}
	if cfg.MaxReadIters <= 0 {
		cfg.MaxReadIters = 2*cfg.Layout.Writers + 3
	}
	c := &Client{cfg: cfg, dclock: dclock, f: n / 2, pend: map[uint64]pend{}, out: make([]int, n), dead: make([]bool, n), why: make([]error, n),
		keys: map[uint64]*keyState{}, val: make([]byte, cfg.Layout.ValueSize)}
	c.clock = clock{now: cfg.Now, tick: cfg.Tick}
	c.slotB = align(max(cfg.Layout.ReadSpan(), cfg.Layout.BufSize()), 64)
	slots := localSlotsPerNode * n
	var err error
	c.mr, err = cfg.Device.RegisterMR(make([]byte, slots*c.slotB), verbs.AccessLocalWrite)
	if err != nil {
		return nil, fmt.Errorf("swarm client %d: register buffers: %w", cfg.ID, err)
	}
	c.buf, c.base = c.mr.Bytes(), c.mr.Addr()
	for i := slots - 1; i >= 0; i-- {
		c.free = append(c.free, i)
	}
	for i := cfg.Layout.LogBuffers - 1; i >= 0; i-- {
		c.logs = append(c.logs, i)
	}
	return c, nil
}

// NodeError returns why node i failed for this client (nil: it did not,
// or a post was refused).
func (c *Client) NodeError(i int) error {
	if i < 0 || i >= len(c.why) {
		return nil
	}
	return c.why[i]
}

// Metrics returns a copy of the counters.
func (c *Client) Metrics() Metrics { return c.m }

// ID is the client's writer id.
func (c *Client) ID() int { return c.cfg.ID }

func (c *Client) alive(i int) bool {
	if c.dead[i] {
		return false
	}
	if !c.cfg.Membership.Alive(i) {
		c.dead[i] = true
		return false
	}
	return true
}

// fail records that node i failed for this client: its queue pair
// completed work in error (or refused a post), which on RC means the
// connection is gone. Only a crash is reported to the membership service
// (Config.ReportCrashes): a queue pair can also fail because its link lost
// too many frames in a row, and one client's broken connection must not
// take the node away from the others.
func (c *Client) fail(i int) {
	if !c.dead[i] {
		c.dead[i] = true
		c.m.NodeFailures++
		if c.cfg.ReportCrashes {
			c.cfg.Membership.Suspect(i)
		}
	}
}

// usable reports whether node i can take n more verbs now.
func (c *Client) usable(i, n int) bool {
	return c.alive(i) && c.out[i]+n <= c.cfg.MaxOutstanding && len(c.free) >= n
}

// wr describes one verb to post.
type wr struct {
	op      verbs.Opcode
	off     int    // remote offset in the node's region
	n       int    // bytes (READ, WRITE)
	data    []byte // WRITE payload (copied)
	cmp     uint64
	swap    uint64
	bg      bool
	onDone  func(ok bool, wc *verbs.WC, data []byte)
	discard bool
}

// post posts wrs to node i with one doorbell. It returns false (and posts
// nothing) if the node is dead or too busy; a failed post marks it dead.
func (c *Client) post(i int, wrs ...wr) bool {
	if !c.usable(i, len(wrs)) {
		return false
	}
	nc := c.cfg.Nodes[i]
	ids := make([]uint64, len(wrs))
	for k, w := range wrs {
		s := c.free[len(c.free)-1]
		c.free = c.free[:len(c.free)-1]
		off := s * c.slotB
		n := w.n
		switch w.op {
		case verbs.OpWrite:
			copy(c.buf[off:off+n], w.data)
		case verbs.OpCompareSwap:
			n = 8
		}
		c.wrID++
		ids[k] = c.wrID
		c.sges[k] = verbs.SGE{Addr: c.base + uint64(off), Length: uint32(n), LKey: c.mr.LKey()}
		c.wrs[k] = verbs.SendWR{ID: c.wrID, Op: w.op, SG: c.sges[k : k+1], RemoteAddr: nc.Region.Addr + uint64(w.off),
			RKey: nc.Region.RKey, Compare: w.cmp, SwapAdd: w.swap, Flags: verbs.Signaled}
		c.pend[c.wrID] = pend{node: i, slot: s, cb: w.onDone}
		c.out[i]++
		if w.bg {
			c.m.BgVerbs++
		} else {
			c.m.Verbs++
		}
		switch w.op {
		case verbs.OpRead:
			c.m.Reads++
		case verbs.OpWrite:
			c.m.Writes++
		case verbs.OpCompareSwap:
			c.m.Atomics++
		}
	}
	err := nc.QP.PostSend(c.wrs[:len(wrs)])
	for k := range wrs {
		c.wrs[k] = verbs.SendWR{}
	}
	if err != nil {
		for _, id := range ids {
			p := c.pend[id]
			delete(c.pend, id)
			c.out[i]--
			c.free = append(c.free, p.slot)
		}
		c.fail(i)
		return false
	}
	return true
}

// absorb takes completions off the CQ (blocking for one if block) and runs
// their callbacks.
func (c *Client) absorb(ctx context.Context, block bool) error {
	n := c.cfg.CQ.Poll(c.wcs[:])
	if n == 0 && block {
		var err error
		n, err = c.cfg.CQ.Wait(ctx, c.wcs[:])
		if err != nil {
			return fmt.Errorf("swarm client %d: wait for completion: %w", c.cfg.ID, err)
		}
	}
	for k := 0; k < n; k++ {
		wc := c.wcs[k]
		p, ok := c.pend[wc.ID]
		if !ok {
			continue
		}
		delete(c.pend, wc.ID)
		c.out[p.node]--
		good := wc.Status == verbs.StatusSuccess
		if !good {
			if c.why[p.node] == nil {
				c.why[p.node] = fmt.Errorf("swarm client %d: node %d: %v completed with %v", c.cfg.ID, p.node, wc.Op, wc.Status)
			}
			c.fail(p.node)
		}
		if p.cb != nil {
			off := p.slot * c.slotB
			p.cb(good, &wc, c.buf[off:off+c.slotB])
		}
		c.free = append(c.free, p.slot)
	}
	return nil
}

// until processes completions until cond holds. Before every wait, more
// brings in the nodes not yet in the round (ones that were busy). When
// short reports that the nodes in play cannot satisfy cond, the operation
// fails if fewer than a majority of the nodes is alive, or when nothing
// is in flight and nothing more could be posted.
func (c *Client) until(ctx context.Context, site string, cond, short, more func() bool) error {
	for !cond() {
		// Every round goes to every live replica; one skipped because it
		// was busy joins as soon as it has room, so that the operation
		// never depends on the nodes it happened to reach first.
		posted := more != nil && more()
		if short() {
			if !posted {
				alive := 0
				for i := range c.cfg.Nodes {
					if c.alive(i) {
						alive++
					}
				}
				if alive < c.f+1 || len(c.pend) == 0 {
					return fmt.Errorf("swarm client %d: %s: %w", c.cfg.ID, site, ErrNoMajority)
				}
			}
		}
		if len(c.pend) == 0 {
			if cond() {
				break
			}
			return fmt.Errorf("swarm client %d: %s: nothing left in flight: %w", c.cfg.ID, site, ErrNoMajority)
		}
		if err := c.absorb(ctx, true); err != nil {
			return fmt.Errorf("%s: %w", site, err)
		}
	}
	return nil
}

// settle runs before every operation: while fewer than a majority of the
// nodes not known dead have room for an operation's verbs (at most half of
// MaxOutstanding in flight), it waits for completions. A node that stopped
// answering fills up and is skipped as long as a majority has room; when
// not even a majority has, the operation waits until a node catches up or
// its queue pair fails (the RNIC's retry limit is the failure detector).
func (c *Client) settle(ctx context.Context) error {
	for {
		room, alive := 0, 0
		for i := range c.cfg.Nodes {
			if c.alive(i) {
				alive++
				if c.out[i] <= c.cfg.MaxOutstanding/2 {
					room++
				}
			}
		}
		if room >= c.f+1 {
			return nil
		}
		if alive < c.f+1 {
			return fmt.Errorf("swarm client %d: %d of %d nodes alive: %w", c.cfg.ID, alive, len(c.cfg.Nodes), ErrNoMajority)
		}
		if err := c.absorb(ctx, true); err != nil {
			return fmt.Errorf("settle (out %v): %w", c.out, err)
		}
	}
}

// Drain waits until no verb of this client is in flight (or ctx ends):
// background work included. Tests use it before they compare counters.
func (c *Client) Drain(ctx context.Context) error {
	for len(c.pend) > 0 {
		if err := c.absorb(ctx, true); err != nil {
			return err
		}
	}
	return nil
}

// clock guesses timestamps: ticks of the local clock plus an offset that
// only grows, pushed forward (like a hybrid logical clock) whenever a
// larger timestamp is seen, so that a stale guess is followed by a fresh
// one. Guesses strictly increase.
type clock struct {
	now    func() time.Duration
	tick   time.Duration
	offset uint64
	last   uint64
	push   uint64
}

func (k *clock) read() uint64 { return uint64(k.now()/k.tick) + k.offset }

func (k *clock) guess() uint64 {
	t := k.read()
	if t <= k.last {
		t = k.last + 1
	}
	k.last = t
	return t
}

// observe moves the clock to at least ts + push.
func (k *clock) observe(ts uint64) {
	if want := ts + k.push; k.read() < want {
		k.offset += want - k.read()
	}
}

// Add adds o's counters to m.
func (m *Metrics) Add(o Metrics) {
	m.Gets += o.Gets
	m.Puts += o.Puts
	m.NotFound += o.NotFound
	m.RoundTrips += o.RoundTrips
	for i := range m.GetRTT {
		m.GetRTT[i] += o.GetRTT[i]
		m.PutRTT[i] += o.PutRTT[i]
	}
	m.Verbs += o.Verbs
	m.BgVerbs += o.BgVerbs
	m.Reads += o.Reads
	m.Writes += o.Writes
	m.Atomics += o.Atomics
	m.FastWrites += o.FastWrites
	m.SlowWrites += o.SlowWrites
	m.Rewrites += o.Rewrites
	m.GuessedSeen += o.GuessedSeen
	m.ReadIters += o.ReadIters
	m.ReadLocks += o.ReadLocks
	m.ReadLockFails += o.ReadLockFails
	m.LockRounds += o.LockRounds
	m.OutOfPlace += o.OutOfPlace
	m.WriteBacks += o.WriteBacks
	m.CASRetries += o.CASRetries
	m.ReadRestarts += o.ReadRestarts
	m.IndexLookups += o.IndexLookups
	m.BufferReuses += o.BufferReuses
	m.NodeFailures += o.NodeFailures
}
