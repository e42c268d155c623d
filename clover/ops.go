package clover

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/swordbox/swordbox/roce/verbs"
)

// ---- cursor cache ----

func (c *Client) entry(key uint64) *cursorEntry {
	i, ok := c.index[key]
	if !ok {
		return nil
	}
	e := &c.ring[i]
	// Epoch rule: a pointer not known live in this epoch or the previous
	// one may name a slot whose 8-bit version wrapped; drop it.
	if !e.ptr.IsZero() && e.epoch+1 < c.epoch {
		e.ptr, e.valAt = Ptr{}, -1
	}
	return e
}

func (c *Client) insert(key uint64) *cursorEntry {
	if e := c.entry(key); e != nil {
		return e
	}
	old := &c.ring[c.pos]
	if old.used {
		delete(c.index, old.key)
	}
	*old = cursorEntry{key: key, used: true, valAt: -1, readSteered: c.steerSeen}
	c.index[key] = int32(c.pos)
	c.pos = (c.pos + 1) % len(c.ring)
	return old
}

func (c *Client) drop(key uint64) {
	if i, ok := c.index[key]; ok {
		c.ring[i] = cursorEntry{}
		delete(c.index, key)
	}
}

// validate records that p was seen as the key's tail by a verb posted at t.
func (c *Client) validate(e *cursorEntry, p Ptr, t time.Duration) {
	e.ptr, e.valAt, e.epoch = p, t, c.epoch
}

// fresh reports whether e's cursor was seen as the tail less than T_r before
// now: its slot cannot have been reclaimed since (a node is retired only
// after a successor is linked, and waits T_r at the MS before reuse).
func (c *Client) fresh(e *cursorEntry, now time.Duration) bool {
	return e.valAt >= 0 && now-e.valAt < c.cfg.ReadTimeout
}

// cursor returns the key's cache entry, asking the MS on a miss.
func (c *Client) cursor(ctx context.Context, key uint64) (*cursorEntry, error) {
	if e := c.entry(key); e != nil && !e.ptr.IsZero() {
		return e, nil
	}
	c.m.CursorMisses++
	t := c.now()
	ki, err := c.lookup(ctx, key)
	if err != nil {
		return nil, err
	}
	e := c.insert(key)
	// The MS's latest pointer never names a retired slot, so the node is
	// safe from reuse for T_r after the MS answered, hence after t.
	e.ptr, e.valAt, e.epoch, e.shortcut, e.class = ki.Latest, t, c.epoch, ki.Shortcut, ki.Class
	return e, nil
}

// ---- reads ----

// read READs n bytes of node p into the local read buffer and returns the
// view and the post time. Reads that take longer than T_r are retried: their
// bytes may mix two lives of the slot. A read of the node size may be
// steered by a switch to the key's confirmed tail; any other length never is.
func (c *Client) read(ctx context.Context, p Ptr, n int, gc bool) (Node, time.Duration, error) {
	off := c.offNodeR()
	if n < c.nsize {
		off = c.offSmall() + smWalk
	}
	return c.readAt(ctx, p, 0, off, n, gc)
}

// readAt READs n bytes at byte at of node p into the local buffer at off.
func (c *Client) readAt(ctx context.Context, p Ptr, at, off, n int, gc bool) (Node, time.Duration, error) {
	qp, va, rkey, err := c.remote(p.LH)
	if err != nil {
		return nil, 0, err
	}
	for {
		t := c.now()
		id, err := c.post(qp, off, n, verbs.SendWR{Op: verbs.OpRead, RemoteAddr: va + uint64(at), RKey: rkey, Flags: verbs.Signaled})
		if err != nil {
			return nil, 0, err
		}
		c.account(verbs.OpRead, n, gc)
		if !gc {
			c.m.RoundTrips++
		}
		if _, err := c.wait(ctx, id); err != nil {
			return nil, 0, err
		}
		if c.now()-t < c.cfg.ReadTimeout {
			nd := Node(c.buf[off : off+n])
			c.readVouched = false
			if n == c.nsize && at == 0 {
				if h := nd.Header(); uint64(h)&hdrVouch != 0 {
					nd.SetHeader(h &^ hdrVouch)
					c.readVouched = true
				}
			}
			return nd, t, nil
		}
		c.m.ReadTimeouts++
	}
}

// isNode reports whether n (at least NodeOverhead bytes) is the node p
// names: a node of key, in p's slot, with p's version.
func isNode(n Node, key uint64, p Ptr) bool {
	return n.Key() == key && n.Header().Valid() && n.Self() == p.LH && n.Header().EntryVersion() == p.Ver
}

// walk follows next pointers from p with header READs (header, key and
// handle: never node-sized, so no switch steers them) to the key's tail,
// and validates e's cursor there. It returns ErrNotFound if the chain ends
// in a delete mark, errStale if a slot on the way was reclaimed (or after
// limit hops). Each READ is counted in *reads.
//
// With steer set, its READs are node-sized instead, which a switch may
// steer to the key's confirmed tail: one READ instead of a walk. Callers set
// it where steering helped the key's gets (e.readSteered). A READ that comes
// back unsteered clears that and the walk goes on with header READs; so
// does one steered to a node that is no longer the tail (the switch's tail
// lags), or to a delete mark (it may be the key's chain from before a
// delete: the walk starts again from p).
func (c *Client) walk(ctx context.Context, key uint64, e *cursorEntry, p Ptr, limit int, reads *uint64, steer bool) error {
	from := p
	unproven, resteer := 0, -1
	for hops := 0; hops <= limit; hops++ {
		if hops == resteer {
			// A few hops unsteered after unproven READs: ask the switch
			// again (on a hot key a walk alone ends only in a lull).
			steer, unproven, resteer = true, 0, -1
			e.readSteered = true
		}
		size := NodeOverhead
		if steer {
			size = c.nsize
		}
		n, t, err := c.read(ctx, p, size, false)
		if err != nil {
			return err
		}
		*reads++
		steered := false
		if size == c.nsize {
			switch at, kind := c.steeredTo(n, key, p, t); kind {
			case steerSlow:
				steer, hops = false, hops-1 // read p again, unsteered
				continue
			case steerUnproven:
				hops--
				if unproven++; unproven > maxUnproven {
					steer, resteer = false, hops+1+c.cfg.MaxChase
				}
				continue
			case steerOK:
				p, steered = at, true
				c.m.ReadsSteered++
			default:
				if !n.Header().IsTail() {
					// A READ of a node that is not the tail came back
					// unsteered (a READ of the tail itself never is):
					// header READs, asking the switch again after a
					// few hops.
					e.readSteered, steer, resteer = false, false, hops+1+c.cfg.MaxChase
				}
			}
		}
		if !isNode(n, key, p) {
			return errStale
		}
		h := n.Header()
		switch {
		case h.Next() == LHDeleted && steered:
			p, steer, hops = from, false, -1
			continue
		case h.Next() == LHDeleted:
			return ErrNotFound
		case h.IsTail():
			c.validate(e, p, t)
			return nil
		}
		if steered {
			c.m.SteeredNonTail++
			steer = false
		}
		p = Ptr{LH: h.Next(), Ver: h.NextVersion()}
	}
	return errStale
}

// What a node READ that a switch may have steered came back with.
const (
	steerNone     = iota // the node asked for, or none of the key's
	steerOK              // another slot's node of the key: the switch's confirmed tail
	steerSlow            // the same, but too late to trust: read again
	steerUnproven        // another slot's node of the key the switch did not vouch for
)

// steeredTo judges node READ n, aimed at p and posted at t. A node of the
// key from another slot (its own handle says which) was steered by a
// switch to its confirmed tail, returned as at. The switch's contract
// (docs/swordbox-p4.md) makes that tail safe to read only within T_r/2 of
// the steering: a READ back later may have met a reused slot, and is
// counted as a read timeout (steerSlow).
func (c *Client) steeredTo(n Node, key uint64, p Ptr, t time.Duration) (at Ptr, kind int) {
	self, h := n.Self(), n.Header()
	if self == p.LH || !self.IsSlot() || n.Key() != key || !h.Valid() {
		return Ptr{}, steerNone
	}
	if c.now()-t >= c.cfg.ReadTimeout/2 {
		c.m.ReadTimeouts++
		return Ptr{}, steerSlow
	}
	c.steerSeen = true
	if !c.readVouched {
		// The chain's end, whose link the switch had not confirmed when
		// the response passed: it may never be linked.
		c.m.ReadsUnproven++
		return Ptr{}, steerUnproven
	}
	return Ptr{LH: self, Ver: h.EntryVersion()}, steerOK
}

var errStale = errors.New("clover: stale pointer")

// maxUnproven bounds the steered READs of one node a get or walk makes
// that come back without the switch's vouch before it walks unsteered.
const maxUnproven = 3

// recover finds the key's tail from its shortcut, then from the MS's latest
// pointer, and validates the cursor there.
func (c *Client) recover(ctx context.Context, key uint64, e *cursorEntry) error {
	c.m.Recoveries++
	if e.shortcut != 0 {
		s, err := c.readShortcut(ctx, e.shortcut)
		if err != nil {
			return err
		}
		if !s.IsZero() {
			err := c.walk(ctx, key, e, s, 1<<20, &c.m.RecoveryReads, e.readSteered || c.steerSeen)
			if err == nil || !(errors.Is(err, errStale) || errors.Is(err, ErrNotFound)) {
				return err
			}
			// stale, or a delete mark on a chain the key may have left:
			// ask the MS.
		}
	}
	for try := 0; try < 64; try++ {
		// Our own pending retires may be what holds the MS's pointer back.
		if err := c.flushRetires(ctx); err != nil {
			return err
		}
		if try > 0 {
			if err := c.clock.Sleep(ctx, c.cfg.ReadTimeout/16); err != nil {
				return err
			}
		}
		ki, err := c.lookup(ctx, key)
		if err != nil {
			return err
		}
		e.shortcut, e.class = ki.Shortcut, ki.Class
		err = c.walk(ctx, key, e, ki.Latest, 1<<20, &c.m.RecoveryReads, e.readSteered || c.steerSeen)
		if !errors.Is(err, errStale) {
			return err
		}
	}
	return fmt.Errorf("clover client %d: key %d: no live version found through the MS", c.cfg.ID, key)
}

func (c *Client) shortcutAddr(s ShortcutRef) (verbs.QP, uint64, uint32, error) {
	mn := s.MemoryNode()
	if mn >= len(c.cfg.MemoryNodes) {
		return nil, 0, 0, fmt.Errorf("clover client %d: shortcut %#x names no memory node", c.cfg.ID, uint32(s))
	}
	conn := c.cfg.MemoryNodes[mn]
	return conn.QP, conn.Region.Addr + uint64(ShortcutAreaOff+ShortcutSize*s.Index()), conn.Region.RKey, nil
}

func (c *Client) readShortcut(ctx context.Context, s ShortcutRef) (Ptr, error) {
	qp, va, rkey, err := c.shortcutAddr(s)
	if err != nil {
		return Ptr{}, err
	}
	off := c.offSmall() + smShortcutR
	id, err := c.post(qp, off, ShortcutSize, verbs.SendWR{Op: verbs.OpRead, RemoteAddr: va, RKey: rkey, Flags: verbs.Signaled})
	if err != nil {
		return Ptr{}, err
	}
	c.account(verbs.OpRead, ShortcutSize, false)
	c.m.RoundTrips++
	if _, err := c.wait(ctx, id); err != nil {
		return Ptr{}, err
	}
	return DecodeShortcut(binary.LittleEndian.Uint64(c.buf[off:])), nil
}

// writeShortcut points the key's shortcut at p, off the critical path (the
// WRITE is posted, not waited for).
func (c *Client) writeShortcut(s ShortcutRef, p Ptr) error {
	if s == 0 {
		return nil
	}
	qp, va, rkey, err := c.shortcutAddr(s)
	if err != nil {
		return err
	}
	off := c.offSmall() + smShortcutW
	binary.LittleEndian.PutUint64(c.buf[off:], ShortcutWord(p))
	_, err = c.post(qp, off, ShortcutSize, verbs.SendWR{Op: verbs.OpWrite, RemoteAddr: va, RKey: rkey})
	c.account(verbs.OpWrite, ShortcutSize, false)
	return err
}

// Get copies the value of key into dst (which must hold ValueSize bytes)
// and returns ErrNotFound for a key that does not exist.
//
// A node READ may come back steered: a node of the key in another slot (its
// own handle says which). The switch steers only to a tail confirmed by the
// ATOMIC ACK of the CAS that linked it, younger than half of T_r, so such a
// node is linked and not reclaimed: if it is still the tail, its value is
// the key's current value and the cursor moves to it. If it is not (the
// switch's tail lags), the get finishes without steering: header READs to
// the tail, then a READ of the value alone (not node-sized).
//
// A get walks from its cursor with node READs; MaxChase hops behind, it
// READs the shortcut once and walks on from there to the tail.
func (c *Client) Get(ctx context.Context, key uint64, dst []byte) error {
	if err := c.maybeFlush(ctx); err != nil {
		return err
	}
	if len(dst) < c.cfg.ValueSize {
		return fmt.Errorf("clover client %d: get key %d: %w: buffer %d < %d", c.cfg.ID, key, ErrValueSize, len(dst), c.cfg.ValueSize)
	}
	e, err := c.cursor(ctx, key)
	if err != nil {
		return c.notFound(err)
	}
	hops := 0
	rechecked := false
	jumped := false // to the shortcut, once
	unproven := 0
	var lastAt Ptr // the node of the last vouched steered READ
	p := e.ptr
	// hop walks a few hops unsteered from p (hopUnsteered) and moves p to
	// the node reached, or back to the cursor if a slot on the way was
	// reclaimed; done: the tail's value is in dst.
	hop := func() (done bool, err error) {
		q, done, err := c.hopUnsteered(ctx, key, e, p, dst)
		switch {
		case errors.Is(err, errStale):
			p = e.ptr
			return false, nil
		case err != nil || done:
			return done, err
		}
		p = q
		return false, nil
	}
	for attempt := 0; ; attempt++ {
		if attempt > 1<<16 {
			return fmt.Errorf("clover client %d: get key %d: no progress", c.cfg.ID, key)
		}
		n, t, err := c.read(ctx, p, c.nsize, false)
		if err != nil {
			return err
		}
		h := n.Header()
		at, kind := c.steeredTo(n, key, p, t)
		steered := kind == steerOK
		switch {
		case isNode(n, key, p):
			// The node the pointer names.
			at = p
		case kind == steerSlow:
			continue // read again
		case kind == steerUnproven:
			if unproven++; unproven <= maxUnproven {
				continue // read again: the switch steers to a newer end, or vouches
			}
			// The switch does not vouch for this key's chain now: a few
			// hops unsteered, then ask it again.
			unproven = 0
			if done, err := hop(); err != nil || done {
				return c.gotUnsteered(err, hops)
			}
			continue
		case steered:
			e.readSteered = true
			c.m.ReadsSteered++
		default:
			c.m.StaleCursors++
			if err := c.recover(ctx, key, e); err != nil {
				return c.notFound(err)
			}
			p = e.ptr
			continue
		}
		switch next := h.Next(); {
		case next == LHDeleted:
			if steered {
				// The switch's tail may be on the key's chain from before
				// a delete: finish from our own pointer, unsteered.
				c.m.SteeredNonTail++
				err := c.getUnsteered(ctx, key, e, p, dst)
				if err == nil {
					c.m.Gets++
					c.chase(hops)
					return nil
				}
				if !errors.Is(err, ErrNotFound) {
					return err
				}
			}
			// Deleted, unless the key was created again since: ask the MS
			// once for a new chain.
			if rechecked {
				return c.notFound(ErrNotFound)
			}
			rechecked = true
			c.drop(key)
			if e, err = c.cursor(ctx, key); err != nil {
				return c.notFound(err)
			}
			p = e.ptr
		case next == LHNull:
			copy(dst, n.Value())
			c.validate(e, at, t)
			c.m.Gets++
			if attempt == 0 {
				c.m.GetsFirstTry++
			}
			c.chase(hops)
			return nil
		case steered:
			// A node the switch vouched for, with a successor: READ on
			// from there, which the switch steers to the chain's end;
			// if it steers back to this node (its tail lags the chain),
			// a few hops unsteered first.
			c.m.SteeredNonTail++
			hops++
			p = Ptr{LH: next, Ver: h.NextVersion()}
			if at != lastAt {
				lastAt = at
				continue
			}
			if done, err := hop(); err != nil || done {
				return c.gotUnsteered(err, hops)
			}
		default:
			hops++
			p = Ptr{LH: next, Ver: h.NextVersion()}
			if (hops%c.cfg.MaxChase != 0 && !e.readSteered) || jumped {
				continue
			}
			if e.shortcut != 0 {
				// Far behind: go on from the shortcut (written after
				// every put), with node READs to the tail, however far.
				s, err := c.readShortcut(ctx, e.shortcut)
				if err != nil {
					return err
				}
				c.m.Recoveries++
				if !s.IsZero() {
					p = s
				}
				jumped = true
				continue
			}
			if err := c.recover(ctx, key, e); err != nil {
				return c.notFound(err)
			}
			p = e.ptr
		}
	}
}

// gotUnsteered ends a get whose unsteered hops found the tail (err nil)
// or failed.
func (c *Client) gotUnsteered(err error, hops int) error {
	if err != nil {
		return c.notFound(err)
	}
	c.m.Gets++
	c.chase(hops)
	return nil
}

// hopUnsteered walks at most MaxChase hops from p with header READs. If
// it reaches the tail it READs the tail's value into dst (done); otherwise
// it returns the node it reached, for the caller to READ steered again.
// errStale: a slot on the way was reclaimed, or the value READ came too
// late.
func (c *Client) hopUnsteered(ctx context.Context, key uint64, e *cursorEntry, p Ptr, dst []byte) (Ptr, bool, error) {
	for range c.cfg.MaxChase {
		n, t, err := c.read(ctx, p, NodeOverhead, false)
		if err != nil {
			return Ptr{}, false, err
		}
		c.m.ChaseReads++
		if !isNode(n, key, p) {
			return Ptr{}, false, errStale
		}
		h := n.Header()
		switch {
		case h.Next() == LHDeleted:
			return Ptr{}, false, ErrNotFound
		case h.IsTail():
			c.validate(e, p, t)
			if fresh, err := c.tailValue(ctx, e, dst); err != nil || !fresh {
				return Ptr{}, false, cmp.Or(err, errStale)
			}
			return p, true, nil
		}
		p = Ptr{LH: h.Next(), Ver: h.NextVersion()}
	}
	return p, false, nil
}

// getUnsteered finishes a get from p without node-sized READs: header
// READs to the tail, then the tail's value alone. The tail was seen as the
// tail by the last header READ, so its slot cannot be reused before T_r has
// passed since: the value READ must complete by then.
func (c *Client) getUnsteered(ctx context.Context, key uint64, e *cursorEntry, p Ptr, dst []byte) error {
	for try := 0; try < 64; try++ {
		if err := c.walk(ctx, key, e, p, 1<<20, &c.m.ChaseReads, false); err != nil {
			if !errors.Is(err, errStale) {
				return err
			}
			if err := c.recover(ctx, key, e); err != nil {
				return err
			}
		}
		if fresh, err := c.tailValue(ctx, e, dst); err != nil || fresh {
			return err
		}
		p = e.ptr
	}
	return fmt.Errorf("clover client %d: get key %d: %w", c.cfg.ID, key, errStale)
}

// tailValue READs the value of the tail e.ptr, just validated, into dst if
// the cursor is still fresh when the READ completes (fresh); a cursor no
// longer fresh may name a reused slot, so dst is left alone.
func (c *Client) tailValue(ctx context.Context, e *cursorEntry, dst []byte) (fresh bool, err error) {
	v, _, err := c.readAt(ctx, e.ptr, NodeValueOff, c.offNodeR(), c.cfg.ValueSize, false)
	if err != nil || !c.fresh(e, c.now()) {
		return false, err
	}
	copy(dst, v)
	return true, nil
}

func (c *Client) chase(hops int) {
	c.m.ChaseHops += uint64(hops)
	b := hops
	if b >= len(c.m.ChaseHist) {
		b = len(c.m.ChaseHist) - 1
	}
	c.m.ChaseHist[b]++
	if hops > c.m.MaxChase {
		c.m.MaxChase = hops
	}
}

func (c *Client) notFound(err error) error {
	if errors.Is(err, ErrNotFound) {
		c.m.NotFound++
	}
	return err
}

// ---- writes ----

// writeNode WRITEs a fresh node for key into slot n. The READ that
// persists it (an RDMA READ on the same queue pair completes after the
// WRITE before it) is the caller's: Put reads its cursor's header, Create
// the node's own.
func (c *Client) writeNode(ctx context.Context, key uint64, n Ptr, value []byte) error {
	qp, va, rkey, err := c.remote(n.LH)
	if err != nil {
		return err
	}
	if err := EncodeNode(c.buf[c.offNodeW():c.offNodeW()+c.nsize], n, key, value); err != nil {
		return err
	}
	id, err := c.post(qp, c.offNodeW(), c.nsize, verbs.SendWR{Op: verbs.OpWrite, RemoteAddr: va, RKey: rkey, Flags: verbs.Signaled})
	if err != nil {
		return err
	}
	c.account(verbs.OpWrite, c.nsize, false)
	c.m.RoundTrips++
	_, err = c.wait(ctx, id)
	return err
}

// cas issues CAS(target, TailWord(target.Ver) -> swap) and returns the
// original value.
func (c *Client) cas(ctx context.Context, target Ptr, swap Header) (Header, error) {
	qp, va, rkey, err := c.remote(target.LH)
	if err != nil {
		return 0, err
	}
	off := c.offSmall() + smAtomic
	id, err := c.post(qp, off, 8, verbs.SendWR{Op: verbs.OpCompareSwap, RemoteAddr: va, RKey: rkey,
		Compare: uint64(TailWord(target.Ver)), SwapAdd: uint64(swap), Flags: verbs.Signaled})
	if err != nil {
		return 0, err
	}
	c.account(verbs.OpCompareSwap, 8, false)
	c.m.RoundTrips++
	c.m.CAS++
	wc, err := c.wait(ctx, id)
	if err != nil {
		return 0, err
	}
	// The original value is in the completion and, little-endian, in the
	// local buffer; both must agree.
	orig := Header(binary.LittleEndian.Uint64(c.buf[off:]))
	if wc.Orig != uint64(orig) {
		orig = Header(wc.Orig)
	}
	return orig, nil
}

type linkResult uint8

const (
	linked linkResult = iota
	linkDeleted
)

// toTail validates e's cursor as the key's tail: header READs from the
// cursor, at most MaxChase hops, then from shortcut and MS. The first READ also
// persists a node WRITE posted before it on the same queue pair.
func (c *Client) toTail(ctx context.Context, key uint64, e *cursorEntry, from Ptr, reads *uint64) error {
	// A cursor far behind the tail is cheaper to leave for the shortcut
	// (written after every put) than to walk hop by hop.
	err := c.walk(ctx, key, e, from, c.cfg.MaxChase, reads, e.readSteered)
	if errors.Is(err, errStale) {
		err = c.recover(ctx, key, e)
	}
	if errors.Is(err, ErrNotFound) {
		// A delete mark ends this chain; the key may have been created
		// again since (a cursor on its old chain): the MS knows.
		err = c.recheckDeleted(ctx, key, e)
	}
	return err
}

// link CASes the key's tail header to point at next, from a cursor seen as
// the tail less than T_r/2 before, walking and retrying until it succeeds.
// How a result is judged when a switch may have steered the CAS is in the
// package doc ("Steering").
func (c *Client) link(ctx context.Context, key uint64, e *cursorEntry, next Ptr) (Ptr, linkResult, error) {
	casHops := 0
	for try := 0; ; try++ {
		if try > 1<<16 {
			return Ptr{}, 0, fmt.Errorf("clover client %d: key %d: CAS made no progress", c.cfg.ID, key)
		}
		if try > 0 {
			c.m.Retries++
		}
		if !c.fresh(e, c.now()+c.cfg.ReadTimeout/2) {
			if err := c.toTail(ctx, key, e, e.ptr, &c.m.PreCASReads); err != nil {
				if errors.Is(err, ErrNotFound) {
					return Ptr{}, linkDeleted, nil
				}
				return Ptr{}, 0, err
			}
		}
		x := e.ptr
		orig, err := c.cas(ctx, x, MakeHeader(next.LH, next.Ver, x.Ver, false))
		if err != nil {
			return Ptr{}, 0, err
		}
		if pred, ok := orig.Vouched(); ok && next.LH != LHDeleted && pred.LH.MemoryNode() == x.LH.MemoryNode() {
			// A switch steered the CAS and saw it link n after pred, a
			// node it had confirmed in the chain: no proof needed.
			c.m.CASSteered++
			c.m.CASVouched++
			c.vouchSeen = true
			return pred, linked, nil
		}
		switch {
		case orig == TailWord(x.Ver):
			return x, linked, nil
		case orig.IsTailWordModVersion() && next.LH != LHDeleted:
			// A tail word of another version: a switch steered the CAS
			// to another node, which may be a node the switch chained
			// onto before its own link executed; or a slow CAS that may
			// have met a reused slot. It succeeded if and only if n is
			// (or becomes) linked after x: prove it, which also finds n's
			// predecessor.
			pred, err := c.proveLink(ctx, key, x, next, e.shortcut)
			if err != nil {
				// If n is linked, its predecessor is never retired.
				c.m.Uncertain++
				c.m.RetireUnknown++
				return Ptr{}, 0, fmt.Errorf("clover client %d: key %d: %w (%v)", c.cfg.ID, key, ErrUncertain, err)
			}
			c.m.CASSteered++
			return pred, linked, nil
		}
		// The CAS failed: its compare was a tail word and the word was not.
		c.m.CASFailures++
		var err2 error
		switch {
		case orig.Valid() && orig.Next().IsSlot() && orig.EntryVersion() != x.Ver:
			// A switch steered the CAS onto another node, which had a
			// successor the switch did not learn. In chain mode that node
			// may not be in the chain yet (its own link in flight, or
			// failed and about to be retried), nor its successors: a
			// cursor must never move onto a node the chain may not hold.
			// Try again from x, still fresh; the switch has ended that
			// chain, or steers to a tail it confirmed, or x's successor
			// comes back below.
		case orig.Valid() && orig.Next().IsSlot() && c.chaining() && casHops < vouchedCASHops:
			casHops++
			e.ptr = Ptr{LH: orig.Next(), Ver: orig.NextVersion()}
		case orig.Valid() && orig.Next().IsSlot():
			// x (or a confirmed tail of x's version the switch steered the
			// CAS to: in the chain) has a successor: walk on from there.
			// Every hop is checked, so a reclaimed slot on the way only
			// sends us to the MS.
			err2 = c.toTail(ctx, key, e, Ptr{LH: orig.Next(), Ver: orig.NextVersion()}, &c.m.PreCASReads)
		case orig.Valid() && orig.Next() == LHDeleted:
			err2 = c.recheckDeleted(ctx, key, e)
		default:
			// Not a header word of ours (a reused slot): start over from x.
			e.valAt = -1
		}
		if errors.Is(err2, ErrNotFound) {
			return Ptr{}, linkDeleted, nil
		}
		if err2 != nil {
			return Ptr{}, 0, err2
		}
	}
}

// vouchedCASHops bounds the CASes a put in chain mode makes along the chain
// after unsteered failures (each at the successor the last one returned)
// before it walks to the tail instead.
const vouchedCASHops = 1 << 12

// errUnproven: a steered link whose node did not appear after x in time.
var errUnproven = errors.New("clover: steered link not seen in the chain in time")

// proveLink finds n's predecessor by header READs from x, waiting while
// the tail reached is not n's predecessor: a chaining switch may link n
// after a node whose own linking CAS has not executed yet (lost and being
// retransmitted, or failed and being retried by its client), and n appears
// in the chain when it does. Every hop is checked (key, own handle,
// version), so a reclaimed slot on the way ends the walk (errStale): the
// walk then starts again from the key's shortcut s (written only after a
// link was proven, so every node after it is linked too), at most
// proofRestarts times, since n may come after it; a walk that falls more
// than T_r behind the chain's growth (a loaded machine, a hot key) meets
// such slots. It gives up proofPatience after it started (errUnproven).
// Either error leaves n's fate unknown.
func (c *Client) proveLink(ctx context.Context, key uint64, x, n Ptr, s ShortcutRef) (Ptr, error) {
	if s != 0 && c.chaining() {
		// x may be far behind the chain's end, where a chaining switch
		// linked n: look a few hops on from the shortcut first (every
		// node after it is linked), then walk from x.
		if sc, err := c.readShortcut(ctx, s); err == nil && !sc.IsZero() {
			if p, found, err := c.findLink(ctx, key, sc, n, 2*c.cfg.MaxChase, true); err == nil && found {
				return p, nil
			}
		} else if err != nil {
			return Ptr{}, err
		}
	}
	deadline := c.now() + proofPatience
	wait := proofWaitMin
	restarts := 0
	for from := x; ; {
		p, found, err := c.findLink(ctx, key, from, n, 1<<20, true)
		if errors.Is(err, errStale) && s != 0 && restarts < proofRestarts && c.now() < deadline {
			restarts++
			sc, err := c.readShortcut(ctx, s)
			if err != nil {
				return Ptr{}, err
			}
			if sc.IsZero() {
				return Ptr{}, errStale
			}
			from = sc
			continue
		}
		if err != nil || found {
			return p, err
		}
		if c.now()+wait >= deadline {
			return Ptr{}, errUnproven
		}
		c.m.ProofWaits++
		if err := c.clock.Sleep(ctx, wait); err != nil {
			return Ptr{}, err
		}
		wait = min(2*wait, proofWaitMax)
		from = p // the tail reached: n, if it comes, comes after it
	}
}

// proofWaitMin and proofWaitMax bound proveLink's pause between walks
// (doubling): about a round trip at first, and short against T_r, so that
// the tail each walk resumes from is never old enough to be reclaimed.
// proofPatience is how long it waits in all: about the time an RC
// requester takes to give up on a request (7 retries, the local ACK
// timeout doubling from 8 ms), since the predecessor's linking CAS may be
// that late.
const (
	proofWaitMin  = 2 * time.Microsecond
	proofWaitMax  = time.Millisecond
	proofPatience = time.Second
	proofRestarts = 4
)

// recheckDeleted asks the MS, after a CAS met a delete mark, whether the key
// exists: ErrNotFound if not; otherwise e is validated at the tail of the
// key's chain (it was created again, and the mark was on its old chain,
// reached through a stale cursor or a tail a switch cached before the
// delete).
func (c *Client) recheckDeleted(ctx context.Context, key uint64, e *cursorEntry) error {
	ki, err := c.lookup(ctx, key)
	if err != nil {
		return err
	}
	e.shortcut, e.class = ki.Shortcut, ki.Class
	err = c.walk(ctx, key, e, ki.Latest, 1<<20, &c.m.RecoveryReads, false)
	if errors.Is(err, errStale) {
		return c.recover(ctx, key, e)
	}
	return err
}

// findLink walks from x, with header READs that no switch steers, for the
// node whose next pointer is n, at most limit hops: found means n is linked
// with that node (returned) as its predecessor; the tail reached without
// it (returned, found false) means n is not linked after x yet. A
// reclaimed slot on the way (or the limit) leaves it unknown: errStale. gc
// counts the READs as GC traffic.
func (c *Client) findLink(ctx context.Context, key uint64, x, n Ptr, limit int, gc bool) (Ptr, bool, error) {
	p := x
	for hops := 0; hops < limit; hops++ {
		nd, _, err := c.read(ctx, p, NodeOverhead, gc)
		if err != nil {
			return Ptr{}, false, err
		}
		if !gc {
			c.m.PreCASReads++
		}
		if !isNode(nd, key, p) {
			return Ptr{}, false, errStale
		}
		h := nd.Header()
		if !h.Next().IsSlot() {
			return p, false, nil
		}
		next := Ptr{LH: h.Next(), Ver: h.NextVersion()}
		if next == n {
			return p, true, nil
		}
		p = next
	}
	return Ptr{}, false, errStale
}

// Put writes value (ValueSize bytes) as the new version of key: WRITE the
// node into a free slot; READ the cursor's header (which persists the node
// and validates the cursor; header READs on to the tail if it moved); CAS
// the tail's header.
func (c *Client) Put(ctx context.Context, key uint64, value []byte) error {
	if err := c.maybeFlush(ctx); err != nil {
		return err
	}
	if len(value) != c.cfg.ValueSize {
		return fmt.Errorf("clover client %d: put key %d: %w: %d != %d", c.cfg.ID, key, ErrValueSize, len(value), c.cfg.ValueSize)
	}
	e, err := c.cursor(ctx, key)
	if err != nil {
		return c.notFound(err)
	}
	mn := e.ptr.LH.MemoryNode()
	n, err := c.takeSlot(ctx, mn)
	if err != nil {
		return err
	}
	if err := c.writeNode(ctx, key, n, value); err != nil {
		return err
	}
	t0 := c.now() // before the CAS: n cannot be reclaimed before t0 + T_r
	x, res, err := c.putLink(ctx, key, e, n)
	if err != nil {
		return err
	}
	if res == linkDeleted {
		c.drop(key)
		c.queueRetire(ctx, pendingRetire{key: key, from: n}) // never linked: free it
		return c.notFound(ErrNotFound)
	}
	c.validate(e, n, t0)
	if err := c.writeShortcut(e.shortcut, n); err != nil {
		return err
	}
	c.m.Puts++
	return c.queueRetire(ctx, pendingRetire{key: key, from: x, linked: n})
}

// putLink validates the cursor (its first READ persists the node just
// written) and links n.
func (c *Client) putLink(ctx context.Context, key uint64, e *cursorEntry, n Ptr) (Ptr, linkResult, error) {
	var reads uint64
	recoveries := c.m.Recoveries
	var err error
	ok, atTail := false, false
	if c.chaining() && !c.fresh(e, c.now()+c.cfg.ReadTimeout/2) {
		// A cursor older than T_r/2: the MS's latest pointer instead
		// (it never names a retired slot), else the walk below.
		t := c.now()
		ki, lerr := c.lookup(ctx, key)
		switch {
		case lerr != nil && !errors.Is(lerr, ErrNotFound):
			return Ptr{}, 0, lerr
		case lerr == nil && !ki.Latest.IsZero():
			e.ptr, e.valAt, e.shortcut, e.class = ki.Latest, t, ki.Shortcut, ki.Class
		}
	}
	if c.chaining() && c.fresh(e, c.now()+c.cfg.ReadTimeout/2) {
		ok, atTail, err = c.persistAt(ctx, key, e)
		reads = 1
		if err != nil {
			return Ptr{}, 0, err
		}
	}
	if !ok {
		reads = 0
		err = c.toTail(ctx, key, e, e.ptr, &reads)
		atTail = reads == 1
	}
	if reads > 1 {
		c.m.PreCASReads += reads - 1 // the first is the persistence READ every put makes
	}
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return Ptr{}, linkDeleted, nil
		}
		return Ptr{}, 0, err
	}
	atTail, retries := atTail && c.m.Recoveries == recoveries, c.m.Retries
	x, res, err := c.link(ctx, key, e, n)
	if err == nil && res == linked && atTail && c.m.Retries == retries {
		c.m.PutsFirstTry++
	}
	return x, res, err
}

// persistAt is a put's persistence READ where a switch vouches for the
// key's links: one READ of the cursor (node-sized where the key's READs
// were steered, so that the switch steers it to its confirmed tail), after
// which the put CASes the node reached, tail or not. A switch chains that
// CAS onto the key's chain end and vouches for the link, so the walk to
// the tail, which on a hot key never ends while others link faster than a
// walker hops, is left out; a CAS the switch does not steer fails on the
// node's successor and the put walks on from there (link). ok false: the
// READ showed nothing to CAS at (a reclaimed slot, a delete mark, a
// steered READ back too late, a cursor no longer fresh), so the put walks
// as without a switch. atTail: the node reached is the tail.
func (c *Client) persistAt(ctx context.Context, key uint64, e *cursorEntry) (ok, atTail bool, err error) {
	p, size := e.ptr, NodeOverhead
	if e.readSteered {
		size = c.nsize
	}
	n, t, err := c.read(ctx, p, size, false)
	if err != nil {
		return false, false, err
	}
	valAt := e.valAt
	if size == c.nsize {
		switch at, kind := c.steeredTo(n, key, p, t); kind {
		case steerSlow:
			return false, false, nil
		case steerUnproven:
			// Nothing learned about p; CAS it while it is fresh.
			return c.fresh(e, c.now()+c.cfg.ReadTimeout/2), false, nil
		case steerOK:
			// The switch's confirmed tail: a node of the chain whose slot
			// is safe until T_r/2 after the READ was posted. Giving it
			// the validation time t - T_r/4 lets link CAS it within
			// T_r/4 of t, and the CAS lands before t + T_r/2.
			c.m.ReadsSteered++
			p, valAt = at, t-c.cfg.ReadTimeout/4
		}
	}
	if !isNode(n, key, p) || n.Header().Next() == LHDeleted {
		return false, false, nil
	}
	if n.Header().IsTail() {
		c.validate(e, p, t)
		return true, true, nil
	}
	if p != e.ptr {
		c.m.SteeredNonTail++
	}
	e.ptr, e.valAt = p, valAt
	return c.fresh(e, c.now()+c.cfg.ReadTimeout/2), false, nil
}

// Create makes a new key with its first value; ErrExists if it exists.
func (c *Client) Create(ctx context.Context, key uint64, value []byte) error {
	if err := c.maybeFlush(ctx); err != nil {
		return err
	}
	if len(value) != c.cfg.ValueSize {
		return fmt.Errorf("clover client %d: create key %d: %w", c.cfg.ID, key, ErrValueSize)
	}
	mn := c.home(key)
	n, err := c.takeSlot(ctx, mn)
	if err != nil {
		return err
	}
	t0 := c.now()
	if err := c.writeNode(ctx, key, n, value); err != nil {
		return err
	}
	if _, _, err := c.read(ctx, n, NodeOverhead, false); err != nil { // persists it
		return err
	}
	b := c.sendBuf()
	Request(b).SetType(MsgCreate)
	Request(b).SetCount(0)
	clear(b[ReqHeaderSize : ReqHeaderSize+keyBodySize])
	binary.LittleEndian.PutUint64(b[ReqHeaderSize+keyBodyKeyOff:], key)
	binary.LittleEndian.PutUint32(b[ReqHeaderSize+keyBodyLHOff:], uint32(n.LH))
	b[ReqHeaderSize+keyBodyVerOff] = n.Ver
	b[ReqHeaderSize+keyBodyClassOff] = byte(c.class)
	rp, err := c.rpc(ctx, ReqHeaderSize+keyBodySize, true)
	if err != nil {
		return err
	}
	switch rp.Status() {
	case StatusOK:
	case StatusExists:
		if err := c.queueRetire(ctx, pendingRetire{key: key, from: n}); err != nil {
			return err
		}
		return fmt.Errorf("clover client %d: create key %d: %w", c.cfg.ID, key, ErrExists)
	default:
		return fmt.Errorf("clover client %d: create key %d: MS status %d", c.cfg.ID, key, rp.Status())
	}
	ki := getKeyInfo(rp.Body())
	e := c.insert(key)
	e.shortcut, e.class = ki.Shortcut, ki.Class
	c.validate(e, n, t0)
	c.m.Creates++
	return c.writeShortcut(ki.Shortcut, n)
}

// Delete removes key: it CASes the tail's next pointer to the delete mark
// (so every client's chase ends there) and tells the MS, which reclaims the
// tail and the shortcut after T_r. No switch steers it (its swap names no
// node).
func (c *Client) Delete(ctx context.Context, key uint64) error {
	if err := c.maybeFlush(ctx); err != nil {
		return err
	}
	e, err := c.cursor(ctx, key)
	if err != nil {
		return c.notFound(err)
	}
	x, res, err := c.link(ctx, key, e, Ptr{LH: LHDeleted})
	if err != nil {
		return err
	}
	c.drop(key)
	if res == linkDeleted {
		return c.notFound(ErrNotFound)
	}
	if err := c.flushRetires(ctx); err != nil {
		return err
	}
	b := c.sendBuf()
	Request(b).SetType(MsgDelete)
	Request(b).SetCount(0)
	clear(b[ReqHeaderSize : ReqHeaderSize+keyBodySize])
	binary.LittleEndian.PutUint64(b[ReqHeaderSize+keyBodyKeyOff:], key)
	binary.LittleEndian.PutUint32(b[ReqHeaderSize+keyBodyLHOff:], uint32(x.LH))
	b[ReqHeaderSize+keyBodyVerOff] = x.Ver
	if _, err := c.rpc(ctx, ReqHeaderSize+keyBodySize, true); err != nil {
		return err
	}
	c.m.Deletes++
	return nil
}

// ---- retirement ----

func (c *Client) queueRetire(ctx context.Context, r pendingRetire) error {
	if len(c.retires) == 0 {
		c.retireAt = c.now()
	}
	c.retires = append(c.retires, r)
	if len(c.retires) >= c.cfg.RetireBatch {
		return c.flushRetires(ctx)
	}
	return nil
}

// maybeFlush sends queued retires once the oldest has waited T_r/4: the MS
// must learn every link well within T_r (see MetaCore.Retire).
func (c *Client) maybeFlush(ctx context.Context) error {
	if len(c.retires) > 0 && c.now()-c.retireAt >= c.cfg.ReadTimeout/4 {
		return c.flushRetires(ctx)
	}
	return nil
}

// Flush sends the retires queued so far to the MS. Every operation flushes
// retires older than T_r/4; a client that stops issuing operations must call
// Flush (or Close) so that the MS learns its last links.
func (c *Client) Flush(ctx context.Context) error { return c.flushRetires(ctx) }

// flushRetires sends the queued retires as one RETIRE.
func (c *Client) flushRetires(ctx context.Context) error {
	if len(c.retires) == 0 {
		return nil
	}
	b := c.sendBuf()
	n := 0
	for _, r := range c.retires {
		putRetire(b[ReqHeaderSize+n*RetireEntrySize:], RetireEntry{Key: r.key, Old: r.from, New: r.linked})
		n++
	}
	c.retires = c.retires[:0]
	Request(b).SetType(MsgRetire)
	Request(b).SetCount(n)
	_, err := c.rpc(ctx, ReqHeaderSize+n*RetireEntrySize, false)
	return err
}

// chaining reports whether a switch steers both this client's node READs
// and its CASes, and vouches for the links it chains: then a put CASes
// from where its persistence READ landed instead of walking to the tail
// (persistAt), and CASes on along the chain after an unsteered failure.
func (c *Client) chaining() bool { return c.steerSeen && c.vouchSeen }
