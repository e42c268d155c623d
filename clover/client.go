package clover

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/swordbox/swordbox/roce/verbs"
)

// MemoryNodeConn is a client's connection to one memory node: a connected RC
// queue pair and the node's Clover region.
type MemoryNodeConn struct {
	QP     verbs.QP
	Region verbs.RemoteRegion
}

// ClientConfig configures a Client.
type ClientConfig struct {
	// ID names the client in errors and metrics.
	ID int
	// ValueSize is the store's object size V: every node is 24+V bytes.
	ValueSize int
	// Device registers the client's local buffers and provides the clock
	// the client runs in: every instant and every wait of the client (T_r,
	// retire and alloc pauses) is in this clock's time.
	Device interface {
		verbs.Registrar
		verbs.Clocked
	}
	// MemoryNodes are indexed by memory node (the LH's memory node field).
	MemoryNodes []MemoryNodeConn
	// MS is the queue pair to the metadata server.
	MS verbs.QP
	// CQ receives the send and receive completions of every queue pair
	// above; the client is its only consumer.
	CQ verbs.CQ
	// CursorCache bounds the cached cursors (FIFO eviction, as the paper
	// found FIFO as good as LRU); default 65536.
	CursorCache int
	// AllocBatch is the number of slots fetched per ALLOC (default 32).
	AllocBatch int
	// RetireBatch is the number of retires sent per RETIRE (default 16).
	RetireBatch int
	// ReadTimeout is T_r, as configured at the metadata server (default
	// 50ms): a read that took longer is discarded and retried, and a cursor
	// validated longer ago is not trusted to identify its slot.
	ReadTimeout time.Duration
	// MaxChase bounds a get's chain walk from its cursor, and a put's walk
	// to the tail, before it jumps through the shortcut (default 4: past a
	// few hops the shortcut's READ and a walk from it cost less). A get
	// jumps once and walks on from the shortcut without a bound.
	MaxChase int
}

// Errors the client returns besides verbs failures.
var (
	// ErrUncertain: a put's linking CAS returned a value that could mean
	// either success through a steering switch or failure on a reused slot,
	// and the client could not tell which (see the package doc). The put
	// may or may not have taken effect.
	ErrUncertain = errors.New("clover: put outcome uncertain")
	// ErrValueSize: the value is not ValueSize bytes.
	ErrValueSize = errors.New("clover: value size")
)

// Metrics are one client's counters. Per-operation figures are these
// divided by Ops().
type Metrics struct {
	Gets, Puts, Creates, Deletes uint64
	NotFound                     uint64
	// CAS accounting: CASes issued (link and delete), failures (the word
	// was not a tail), retries (CASes after the first, per put), steered
	// successes (original value a tail word of another version).
	CAS, CASFailures, Retries, CASSteered uint64
	// CASVouched: steered successes the switch vouched for in the ATOMIC
	// ACK (docs/clover-layout.md, "Vouched links"), taken without a proof.
	CASVouched uint64
	Uncertain  uint64
	// Reads: node READs whose node was another version of the key while
	// the cursor was fresh (a steered READ), stale cursors (version or
	// key mismatch), recoveries through shortcut or MS.
	ReadsSteered, StaleCursors, Recoveries, ReadTimeouts uint64
	// ReadsUnproven: node READs a switch steered to a node it did not
	// vouch for (a chain's end whose link it had not confirmed), read again.
	ReadsUnproven uint64
	// SteeredNonTail: steered node READs whose node was no longer the tail
	// (the switch's cached tail lagged); the get then finished unsteered.
	SteeredNonTail uint64
	// Header READs: before and between a put's CASes beyond the one READ
	// every put makes (PreCASReads), finishing unsteered gets
	// (ChaseReads), and in recoveries through shortcut or MS
	// (RecoveryReads).
	PreCASReads, ChaseReads, RecoveryReads uint64
	// ChaseHops totals next-pointer hops of gets; ChaseHist[i] counts gets
	// with i hops (last bucket: that many or more); MaxChase is the longest.
	ChaseHops uint64
	ChaseHist [8]uint64
	MaxChase  int
	// Data path: verbs posted, sequential round trips waited, payload bytes
	// moved (WRITE/SEND sent, READ returned, 8 per atomic) and an estimate
	// of RoCEv2 bytes on the wire (requests + responses/ACKs, one ACK per
	// request, IPv4, no VLAN).
	Verbs, RoundTrips, PayloadBytes, WireBytes uint64
	Reads, Writes, Atomics                     uint64
	// GC: verbs and wire bytes spent finding predecessors of steered links.
	GCVerbs, GCWireBytes uint64
	// Control path: MS requests (alloc, lookup, create, delete, retire).
	MSRequests, MSWireBytes uint64
	// RetireUnknown: links whose predecessor is unknown (its slot is not
	// reclaimed). A steered success is proven by finding its predecessor,
	// so only a put whose proof ended in ErrUncertain leaves one unknown.
	RetireUnknown uint64
	// ProofWaits: pauses while proving a steered link whose node was not
	// yet in the chain (its predecessor's own link had not executed).
	ProofWaits uint64
	// AllocWaits: ALLOCs answered "no space" and retried after T_r/4.
	AllocWaits uint64
	// First-try operations, the "successful operations" of SwordBox's
	// Figure 5 as we read it: gets whose first node READ (steered or not)
	// returned the tail, and puts whose cursor was the tail (no header
	// READ beyond the persistence READ, no recovery) and whose one CAS
	// linked.
	GetsFirstTry, PutsFirstTry uint64
	// CursorMisses: lookups at the MS for a key this client held no
	// cursor for (its first touch of the key, or after a delete).
	CursorMisses uint64
}

// Add adds o's counters to m (MaxChase: the larger).
func (m *Metrics) Add(o Metrics) { m.combine(o, 1) }

// Sub subtracts o's counters from m (MaxChase is left as it is): the
// counters of an interval, from snapshots at its ends.
func (m *Metrics) Sub(o Metrics) { m.combine(o, ^uint64(0)) }

// combine adds sign*o to m's counters (sign 1 or -1 as a uint64).
func (m *Metrics) combine(o Metrics, sign uint64) {
	for _, f := range []struct {
		d *uint64
		s uint64
	}{
		{&m.Gets, o.Gets}, {&m.Puts, o.Puts}, {&m.Creates, o.Creates}, {&m.Deletes, o.Deletes},
		{&m.NotFound, o.NotFound}, {&m.GetsFirstTry, o.GetsFirstTry}, {&m.PutsFirstTry, o.PutsFirstTry},
		{&m.CursorMisses, o.CursorMisses}, {&m.CAS, o.CAS}, {&m.CASFailures, o.CASFailures}, {&m.Retries, o.Retries},
		{&m.CASSteered, o.CASSteered}, {&m.CASVouched, o.CASVouched}, {&m.Uncertain, o.Uncertain}, {&m.ReadsSteered, o.ReadsSteered}, {&m.ReadsUnproven, o.ReadsUnproven},
		{&m.StaleCursors, o.StaleCursors}, {&m.Recoveries, o.Recoveries}, {&m.ReadTimeouts, o.ReadTimeouts},
		{&m.SteeredNonTail, o.SteeredNonTail}, {&m.PreCASReads, o.PreCASReads}, {&m.ChaseReads, o.ChaseReads},
		{&m.RecoveryReads, o.RecoveryReads}, {&m.ChaseHops, o.ChaseHops}, {&m.Verbs, o.Verbs},
		{&m.RoundTrips, o.RoundTrips}, {&m.PayloadBytes, o.PayloadBytes}, {&m.WireBytes, o.WireBytes},
		{&m.Reads, o.Reads}, {&m.Writes, o.Writes}, {&m.Atomics, o.Atomics}, {&m.GCVerbs, o.GCVerbs},
		{&m.GCWireBytes, o.GCWireBytes}, {&m.MSRequests, o.MSRequests}, {&m.MSWireBytes, o.MSWireBytes},
		{&m.RetireUnknown, o.RetireUnknown}, {&m.ProofWaits, o.ProofWaits}, {&m.AllocWaits, o.AllocWaits},
	} {
		*f.d += sign * f.s
	}
	for i := range m.ChaseHist {
		m.ChaseHist[i] += sign * o.ChaseHist[i]
	}
	if sign == 1 {
		m.MaxChase = max(m.MaxChase, o.MaxChase)
	}
}

// Ops is the number of completed operations.
func (m *Metrics) Ops() uint64 { return m.Gets + m.Puts + m.Creates + m.Deletes }

// RoCEv2 sizes used for the wire estimate.
const (
	wireBase     = 14 + 20 + 8 + 12 + 4 // Ethernet, IPv4, UDP, BTH, ICRC
	wireRETH     = 16
	wireAETH     = 4
	wireAtomic   = 28
	wireAtomicAk = 8
)

type cursorEntry struct {
	key      uint64
	used     bool
	ptr      Ptr
	valAt    time.Duration // when ptr was last seen as the tail (READ/CAS post time) or named by the MS; <0 unknown
	epoch    uint32        // client epoch of that validation
	shortcut ShortcutRef
	class    uint8
	// readSteered: a switch steered a node READ of this key lately (for a
	// new entry: of any key, steerSeen), so a
	// put's first hop past a stale cursor tries a steerable READ.
	readSteered bool
}

type pendingRetire struct {
	key    uint64
	from   Ptr // the predecessor (zero: unknown), or an unlinked node to free
	linked Ptr // the node linked after it (zero when freeing)
}

// Client is one Clover client (a compute-node thread). It is not safe for
// concurrent use: run one per goroutine, each with its own queue pairs and CQ.
type Client struct {
	cfg   ClientConfig
	mr    verbs.MemoryRegion
	buf   []byte
	base  uint64
	nsize int
	class int
	clock verbs.Clock
	start time.Duration // clock time at NewClient: now() counts from it

	wrID uint64
	wcs  [16]verbs.WC
	// Scratch work requests: the RNIC (like ibverbs) copies a work request
	// and its SGEs when it is posted, so one of each serves every post.
	swr   [1]verbs.SendWR
	sgs   [1]verbs.SGE
	rwr   [1]verbs.RecvWR
	done  []verbs.WC
	epoch uint32
	// steerSeen: a switch has steered one of this client's node READs.
	steerSeen bool
	// vouchSeen: a switch has vouched for one of this client's links.
	vouchSeen bool
	// readVouched: the last node-sized READ came back with the switch's
	// vouch bit (bit 63 of its header word, cleared by readAt).
	readVouched bool

	// cursor cache: FIFO ring + index
	ring  []cursorEntry
	index map[uint64]int32
	pos   int

	// slot buckets per memory node
	buckets [][]Ptr

	// MS RPC state
	reqID    uint32
	rpcWant  uint32
	rpcGot   bool
	rpcReply []byte
	rpcLen   int
	retires  []pendingRetire
	retireAt time.Duration // when the oldest queued retire was queued

	m Metrics
}

// Local buffer layout.
const (
	smAtomic    = 0
	smShortcutR = 8
	smShortcutW = 16
	smReadBack  = 24
	smWalk      = 32 // 16 bytes
	smSize      = 64
	recvBuffers = 4
	recvTag     = 1 << 63
)

func align64(n int) int { return (n + 63) &^ 63 }

// NewClient registers the client's buffers and posts its receive buffers on
// the MS queue pair.
func NewClient(cfg ClientConfig) (*Client, error) {
	if cfg.ValueSize <= 0 || len(cfg.MemoryNodes) == 0 || len(cfg.MemoryNodes) > MaxMemoryNodes || cfg.MS == nil || cfg.CQ == nil || cfg.Device == nil {
		return nil, fmt.Errorf("clover client %d: need a value size, 1..%d memory nodes, an MS queue pair, a CQ and a device", cfg.ID, MaxMemoryNodes)
	}
	class, err := ClassFor(NodeSize(cfg.ValueSize))
	if err != nil {
		return nil, fmt.Errorf("clover client %d: %w", cfg.ID, err)
	}
	if cfg.CursorCache <= 0 {
		cfg.CursorCache = 1 << 16
	}
	if cfg.AllocBatch <= 0 || cfg.AllocBatch > MaxBatch {
		cfg.AllocBatch = MaxBatch
	}
	if cfg.RetireBatch <= 0 || cfg.RetireBatch > MaxBatch {
		cfg.RetireBatch = 16
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = 50 * time.Millisecond
	}
	if cfg.MaxChase <= 0 {
		cfg.MaxChase = 4
	}
	clock := cfg.Device.Clock()
	c := &Client{cfg: cfg, nsize: NodeSize(cfg.ValueSize), class: class, clock: clock, start: clock.Now()}
	size := 2*align64(c.nsize) + smSize + MsgMax + recvBuffers*MsgMax
	c.buf = make([]byte, size)
	c.mr, err = cfg.Device.RegisterMR(c.buf, verbs.AccessLocalWrite)
	if err != nil {
		return nil, fmt.Errorf("clover client %d: register buffers: %w", cfg.ID, err)
	}
	c.buf = c.mr.Bytes()
	c.base = c.mr.Addr()
	c.ring = make([]cursorEntry, cfg.CursorCache)
	c.index = make(map[uint64]int32, cfg.CursorCache)
	c.buckets = make([][]Ptr, len(cfg.MemoryNodes))
	c.rpcReply = make([]byte, MsgMax)
	c.done = make([]verbs.WC, 0, 64)
	for i := 0; i < recvBuffers; i++ {
		if err := c.postRecv(i); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// now is the time since NewClient on the device's clock.
func (c *Client) now() time.Duration { return c.clock.Now() - c.start }

// Metrics returns a copy of the client's counters.
func (c *Client) Metrics() Metrics { return c.m }

// ValueSize is V.
func (c *Client) ValueSize() int { return c.cfg.ValueSize }

func (c *Client) offNodeW() int { return 0 }
func (c *Client) offNodeR() int { return align64(c.nsize) }
func (c *Client) offSmall() int { return 2 * align64(c.nsize) }
func (c *Client) offSend() int  { return c.offSmall() + smSize }
func (c *Client) offRecv(i int) int {
	return c.offSend() + MsgMax + i*MsgMax
}

func (c *Client) sge(off, n int) verbs.SGE {
	return verbs.SGE{Addr: c.base + uint64(off), Length: uint32(n), LKey: c.mr.LKey()}
}

func (c *Client) postRecv(i int) error {
	c.sgs[0] = c.sge(c.offRecv(i), MsgMax)
	c.rwr[0] = verbs.RecvWR{ID: recvTag | uint64(i), SG: c.sgs[:]}
	if err := c.cfg.MS.PostRecv(c.rwr[:]); err != nil {
		return fmt.Errorf("clover client %d: post receive: %w", c.cfg.ID, err)
	}
	return nil
}

// remote returns the VA and rkey of offset off on memory node mn.
func (c *Client) remote(l LH) (verbs.QP, uint64, uint32, error) {
	mn := l.MemoryNode()
	if !l.IsSlot() || mn >= len(c.cfg.MemoryNodes) {
		return nil, 0, 0, fmt.Errorf("clover client %d: handle %v names no memory node", c.cfg.ID, l)
	}
	conn := c.cfg.MemoryNodes[mn]
	if l.Offset()+uint64(c.nsize) > conn.Region.Len {
		return nil, 0, 0, fmt.Errorf("clover client %d: handle %v beyond region of %d bytes", c.cfg.ID, l, conn.Region.Len)
	}
	return conn.QP, conn.Region.Addr + l.Offset(), conn.Region.RKey, nil
}

// post posts one work request whose single SGE covers n bytes at local
// offset off (n = 0: no SGE) and returns its ID.
func (c *Client) post(qp verbs.QP, off, n int, wr verbs.SendWR) (uint64, error) {
	c.wrID++
	wr.ID = c.wrID
	if n > 0 {
		c.sgs[0] = c.sge(off, n)
		wr.SG = c.sgs[:]
	}
	c.swr[0] = wr
	err := qp.PostSend(c.swr[:])
	c.swr[0] = verbs.SendWR{}
	if err != nil {
		return 0, fmt.Errorf("clover client %d: post %v: %w", c.cfg.ID, wr.Op, err)
	}
	return wr.ID, nil
}

// account adds a data-path verb to the metrics.
func (c *Client) account(op verbs.Opcode, payload int, gc bool) {
	var wire int
	switch op {
	case verbs.OpRead:
		c.m.Reads++
		wire = wireBase + wireRETH + wireBase + wireAETH + payload
	case verbs.OpWrite:
		c.m.Writes++
		wire = wireBase + wireRETH + payload + wireBase + wireAETH
	case verbs.OpCompareSwap:
		c.m.Atomics++
		payload = 8
		wire = wireBase + wireAtomic + wireBase + wireAETH + wireAtomicAk
	}
	if gc {
		c.m.GCVerbs++
		c.m.GCWireBytes += uint64(wire)
		return
	}
	c.m.Verbs++
	c.m.PayloadBytes += uint64(payload)
	c.m.WireBytes += uint64(wire)
}

// wait blocks until work request id completes, absorbing other
// completions (receives from the MS, fire-and-forget writes).
func (c *Client) wait(ctx context.Context, id uint64) (verbs.WC, error) {
	for {
		keep := c.done[:0]
		var found *verbs.WC
		var wc verbs.WC
		for i := range c.done {
			switch d := c.done[i]; {
			case d.ID == id:
				wc = d
				found = &wc
			case d.ID > id:
				keep = append(keep, d)
			}
		}
		c.done = keep
		if found != nil {
			if wc.Status != verbs.StatusSuccess {
				return wc, fmt.Errorf("clover client %d: %v completed with %v", c.cfg.ID, wc.Op, wc.Status)
			}
			return wc, nil
		}
		if err := c.absorb(ctx, true); err != nil {
			return wc, err
		}
	}
}

// absorb takes completions off the CQ (blocking if block) and files them.
func (c *Client) absorb(ctx context.Context, block bool) error {
	n := c.cfg.CQ.Poll(c.wcs[:])
	if n == 0 && block {
		var err error
		n, err = c.cfg.CQ.Wait(ctx, c.wcs[:])
		if err != nil {
			return fmt.Errorf("clover client %d: wait for completion: %w", c.cfg.ID, err)
		}
	}
	for _, wc := range c.wcs[:n] {
		if wc.ID&recvTag != 0 {
			if err := c.onRecv(wc); err != nil {
				return err
			}
			continue
		}
		if wc.Status != verbs.StatusSuccess || len(c.done) < cap(c.done) {
			c.done = append(c.done, wc)
		}
		// A success nobody waits for (a shortcut WRITE, a SEND) is dropped
		// when the stash is full; errors are always kept.
	}
	return nil
}

func (c *Client) onRecv(wc verbs.WC) error {
	i := int(wc.ID &^ recvTag)
	if wc.Status != verbs.StatusSuccess {
		return fmt.Errorf("clover client %d: MS receive completed with %v", c.cfg.ID, wc.Status)
	}
	if int(wc.ByteLen) >= ReplyHeaderSize && i < recvBuffers {
		msg := Reply(c.buf[c.offRecv(i) : c.offRecv(i)+int(wc.ByteLen)])
		if e := msg.Epoch(); e > c.epoch {
			c.epoch = e
		}
		if msg.Type() != MsgEpoch|MsgReply && msg.ID() == c.rpcWant && !c.rpcGot {
			c.rpcLen = copy(c.rpcReply, msg)
			c.rpcGot = true
		}
	}
	return c.postRecv(i)
}

// rpc sends the request built in the send buffer (n bytes) and, if
// wantReply, waits for its reply (a view of c.rpcReply).
func (c *Client) rpc(ctx context.Context, n int, wantReply bool) (Reply, error) {
	c.reqID++
	req := Request(c.buf[c.offSend() : c.offSend()+n])
	req.SetID(c.reqID)
	c.m.MSRequests++
	c.m.MSWireBytes += uint64(wireBase + n + wireBase + wireAETH + wireBase + ReplyHeaderSize + wireBase + wireAETH)
	if wantReply {
		c.rpcWant, c.rpcGot = c.reqID, false
	}
	id, err := c.post(c.cfg.MS, c.offSend(), n, verbs.SendWR{Op: verbs.OpSend, Flags: verbs.Signaled})
	if err != nil {
		return nil, err
	}
	// The send buffer is reused by the next request: wait for the SEND.
	if _, err := c.wait(ctx, id); err != nil {
		return nil, err
	}
	if !wantReply {
		return nil, nil
	}
	for !c.rpcGot {
		if err := c.absorb(ctx, true); err != nil {
			return nil, err
		}
	}
	rp := Reply(c.rpcReply[:c.rpcLen])
	if err := checkReply(rp); err != nil {
		return nil, fmt.Errorf("clover client %d: MS reply: %w", c.cfg.ID, err)
	}
	return rp, nil
}

func (c *Client) sendBuf() []byte { return c.buf[c.offSend() : c.offSend()+MsgMax] }

// checkReply validates a reply's length against its type, status and count,
// so that the accessors used on it stay inside the message.
func checkReply(rp Reply) error {
	if len(rp) < ReplyHeaderSize {
		return fmt.Errorf("%d bytes, shorter than a header", len(rp))
	}
	need := ReplyHeaderSize
	switch rp.Type() &^ MsgReply {
	case MsgAlloc:
		if rp.Count() > MaxBatch {
			return fmt.Errorf("ALLOC reply with %d slots", rp.Count())
		}
		need += rp.Count() * AllocEntrySize
	case MsgCreate, MsgLookup:
		if rp.Status() == StatusOK || rp.Status() == StatusExists {
			need += keyRepSize
		}
	}
	if len(rp) < need {
		return fmt.Errorf("type %d status %d: %d bytes, need %d", rp.Type(), rp.Status(), len(rp), need)
	}
	return nil
}

// lookup asks the MS for a key's shortcut and latest version.
func (c *Client) lookup(ctx context.Context, key uint64) (KeyInfo, error) {
	b := c.sendBuf()
	Request(b).SetType(MsgLookup)
	Request(b).SetCount(0)
	clear(b[ReqHeaderSize : ReqHeaderSize+keyBodySize])
	binary.LittleEndian.PutUint64(b[ReqHeaderSize:], key)
	rp, err := c.rpc(ctx, ReqHeaderSize+keyBodySize, true)
	if err != nil {
		return KeyInfo{}, err
	}
	switch rp.Status() {
	case StatusOK:
		return getKeyInfo(rp.Body()), nil
	case StatusNotFound:
		return KeyInfo{}, ErrNotFound
	}
	return KeyInfo{}, fmt.Errorf("clover client %d: lookup key %d: MS status %d", c.cfg.ID, key, rp.Status())
}

// takeSlot returns a free slot on memory node mn, fetching a batch from the
// MS when the bucket is empty.
func (c *Client) takeSlot(ctx context.Context, mn int) (Ptr, error) {
	for wait := 0; len(c.buckets[mn]) == 0; wait++ {
		b := c.sendBuf()
		Request(b).SetType(MsgAlloc)
		Request(b).SetCount(c.cfg.AllocBatch)
		b[ReqHeaderSize+allocClassOff] = byte(c.class)
		b[ReqHeaderSize+allocMNOff] = byte(mn)
		b[ReqHeaderSize+2], b[ReqHeaderSize+3] = 0, 0
		rp, err := c.rpc(ctx, ReqHeaderSize+allocBodySize, true)
		if err != nil {
			return Ptr{}, err
		}
		if rp.Status() == StatusNoSpace && wait < 64 {
			// Memory is full until retired slots age past T_r: hand in
			// our own retires and wait.
			c.m.AllocWaits++
			if err := c.flushRetires(ctx); err != nil {
				return Ptr{}, err
			}
			if err := c.clock.Sleep(ctx, c.cfg.ReadTimeout/4); err != nil {
				return Ptr{}, err
			}
			continue
		}
		if rp.Status() != StatusOK || rp.Count() == 0 {
			return Ptr{}, fmt.Errorf("clover client %d: alloc on memory node %d: MS status %d: %w", c.cfg.ID, mn, rp.Status(), ErrNoSpace)
		}
		for i := 0; i < rp.Count(); i++ {
			e := rp.Body()[i*AllocEntrySize:]
			c.buckets[mn] = append(c.buckets[mn], Ptr{LH: LH(binary.LittleEndian.Uint32(e)), Ver: e[4]})
		}
	}
	last := len(c.buckets[mn]) - 1
	p := c.buckets[mn][last]
	c.buckets[mn] = c.buckets[mn][:last]
	return p, nil
}

// home is the memory node a new key's chain lives on. All versions of a key
// stay on one memory node so that a switch can steer them (steering never
// crosses memory nodes).
func (c *Client) home(key uint64) int {
	return int(splitmix(key) % uint64(len(c.cfg.MemoryNodes)))
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
