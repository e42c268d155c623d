package swarm

import (
	"context"
	"fmt"
	"time"

	"github.com/swordbox/swordbox/roce/verbs"
)

// state returns the cached state of key, asking the index on a miss; with
// create, a key the index does not know is inserted.
func (c *Client) state(key uint64, create bool) (*keyState, error) {
	if ks, ok := c.keys[key]; ok {
		return ks, nil
	}
	c.m.IndexLookups++
	kv, ok := c.cfg.Index.Lookup(key)
	if !ok {
		if !create {
			return nil, ErrNotFound
		}
		var err error
		if kv, _, err = c.cfg.Index.Insert(key); err != nil {
			return nil, err
		}
	}
	n := len(c.cfg.Nodes)
	ks := &keyState{kv: kv, c: make([]Word, n), mine: make([]Word, n), lock: map[int][]Word{}}
	c.keys[key] = ks
	return ks, nil
}

// reached counts the nodes known to hold at least w.
func (c *Client) reached(ks *keyState, w Word) int {
	k := 0
	for _, x := range ks.c {
		if x >= w {
			k++
		}
	}
	return k
}

// openOf counts the nodes whose MAX of w is still in flight and that are
// not yet known to hold w.
func (c *Client) openOf(ks *keyState, w Word, open []bool) int {
	k := 0
	for i, o := range open {
		if o && !c.dead[i] && ks.c[i] < w {
			k++
		}
	}
	return k
}

func raise(p *Word, w Word) {
	if w > *p {
		*p = w
	}
}

// round accounts one sequential round trip of the current operation.
func (c *Client) round() { c.rtt++; c.m.RoundTrips++ }

// maxWriteWRs returns node i's part of an In-n-Out write of w: the entry
// into w's out-of-place buffer, then CAS-MAX on the client's own word of
// the metadata array (FIFO order on the queue pair makes the entry visible
// before the word). done is called once the node holds at least w, or
// with false if the node failed. Only this client writes its own word and
// its CASes on one queue pair execute in order, so each CAS expects the
// value the previous one swapped in (ks.mine, advanced when a CAS is
// posted: postMax); an expected value that turns out stale costs one more
// CAS per retry.
func (c *Client) maxWriteWRs(i int, ks *keyState, w Word, entry []byte, bg bool, done func(bool)) []wr {
	l := c.cfg.Layout
	return []wr{
		{op: verbs.OpWrite, off: l.BufOff(w.PID(), w.Log()), n: len(entry), data: entry, bg: bg},
		c.casMaxWR(i, ks, w, ks.mine[i], bg, done),
	}
}

// postMax posts wrs (ending with a CAS-MAX of w) to node i and advances
// the expected value of the client's word there.
func (c *Client) postMax(i int, ks *keyState, w Word, wrs ...wr) bool {
	if !c.post(i, wrs...) {
		return false
	}
	raise(&ks.mine[i], w)
	return true
}

func (c *Client) casMaxWR(i int, ks *keyState, w, expected Word, bg bool, done func(bool)) wr {
	off := c.cfg.Layout.MetaOff(ks.kv) + 8*(c.cfg.ID-1)
	return wr{op: verbs.OpCompareSwap, off: off, cmp: uint64(expected), swap: uint64(w), bg: bg,
		onDone: func(ok bool, wc *verbs.WC, _ []byte) {
			if !ok {
				done(false)
				return
			}
			orig := Word(wc.Orig)
			if orig == expected {
				raise(&ks.c[i], w)
				done(true)
				return
			}
			if orig >= w {
				raise(&ks.c[i], orig)
				raise(&ks.mine[i], orig)
				done(true)
				return
			}
			c.m.CASRetries++
			if !c.postMax(i, ks, w, c.casMaxWR(i, ks, w, orig, bg, done)) {
				done(false)
			}
		}}
}

// innerWrite is the reliable max register's write: MAX w at every node
// not known to hold it, and wait (unless bg) until a majority holds it: no
// round trip if one already does.
func (c *Client) innerWrite(ctx context.Context, ks *keyState, w Word, value []byte, bg bool) error {
	if c.reached(ks, w) >= c.f+1 {
		return nil
	}
	entry := make([]byte, c.cfg.Layout.EntrySize())
	PutEntry(entry, w, value)
	n := len(c.cfg.Nodes)
	open := make([]bool, n)
	tried := make([]bool, n)
	postNode := func(i int) {
		if ks.c[i] >= w || tried[i] || !c.usable(i, 2) {
			return
		}
		tried[i] = true
		closeI := func(bool) { open[i] = false }
		if m := ks.mine[i]; m >= w {
			// Our own word there holds (or, once our CASes in flight have
			// run, will hold) at least w: a CAS that changes nothing
			// confirms it.
			open[i] = c.post(i, c.casMaxWR(i, ks, m, m, bg, closeI))
			return
		}
		open[i] = c.postMax(i, ks, w, c.maxWriteWRs(i, ks, w, entry, bg, closeI)...)
	}
	for i := 0; i < n; i++ {
		postNode(i)
	}
	if bg {
		return nil
	}
	err := c.until(ctx, "max write", func() bool { return c.reached(ks, w) >= c.f+1 },
		func() bool { return c.reached(ks, w)+c.openOf(ks, w, open) < c.f+1 },
		func() bool { return c.more(tried, postNode) })
	c.round()
	return err
}

// readWR is an In-n-Out read of key ks on node i: one READ of the
// metadata array and the in-place entry. On success it raises c[i] and
// hands the view (its in-place value copied out of the local buffer) to
// got.
func (c *Client) readWR(i int, ks *keyState, got func(NodeView)) wr {
	l := c.cfg.Layout
	return wr{op: verbs.OpRead, off: l.MetaOff(ks.kv), n: l.ReadSpan(),
		onDone: func(good bool, _ *verbs.WC, data []byte) {
			if !good {
				return
			}
			v, err := l.ParseRead(data)
			if err != nil {
				return
			}
			if v.InPlace != nil {
				v.InPlace = append([]byte(nil), v.InPlace...)
			}
			raise(&ks.c[i], v.Max)
			got(v)
		}}
}

// mread is the reliable max register's read (an In-n-Out read of every
// node, the maximum over the first majority to answer, the value from an
// intact in-place copy or else from the out-of-place buffer, and the
// write-back when fewer than a majority is known to hold it). The value is
// left in c.val; the zero word means the key was never written.
func (c *Client) mread(ctx context.Context, ks *keyState, writeBack bool) (Word, error) {
	l := c.cfg.Layout
	n := len(c.cfg.Nodes)
	for attempt := 0; attempt < 8; attempt++ {
		start := c.cfg.Now()
		views := make([]NodeView, n)
		got := make([]bool, n)
		targets := make([]bool, n)
		ok := 0
		postNode := func(i int) {
			targets[i] = c.post(i, c.readWR(i, ks, func(v NodeView) {
				views[i], got[i] = v, true
				ok++
			}))
		}
		for i := 0; i < n; i++ {
			postNode(i)
		}
		err := c.until(ctx, "read", func() bool { return ok >= c.f+1 }, func() bool { return ok+c.pendingOf(targets, got) < c.f+1 },
			func() bool { return c.more(targets, postNode) })
		c.round()
		if err != nil {
			return 0, err
		}
		var m Word
		for i := range views {
			if got[i] && views[i].Max > m {
				m = views[i].Max
			}
		}
		c.clock.observe(m.TS())
		if m == 0 {
			ks.last = 0
			return 0, nil
		}
		var val []byte
		for i := range views {
			if got[i] && views[i].Max == m && views[i].InPlace != nil {
				val = views[i].InPlace
				break
			}
		}
		if val == nil {
			// Read the out-of-place buffer from every node that showed m
			// (so that a node crashing now costs no wait), keep the first
			// intact copy.
			c.m.OutOfPlace++
			asked, answered := 0, 0
			for i := range views {
				if !got[i] || views[i].Max != m {
					continue
				}
				if c.post(i, wr{op: verbs.OpRead, off: l.BufOff(m.PID(), m.Log()), n: l.EntrySize(),
					onDone: func(good bool, _ *verbs.WC, data []byte) {
						answered++
						if good && val == nil {
							if v, ok := CheckEntry(data[:l.EntrySize()], m); ok {
								val = append([]byte(nil), v...)
							}
						}
					}}) {
					asked++
				}
			}
			if asked > 0 {
				if err := c.until(ctx, "out-of-place read", func() bool { return val != nil || answered == asked }, func() bool { return false }, nil); err != nil {
					return 0, err
				}
				c.round()
			}
			if val == nil {
				// The buffer was reused (the word was superseded meanwhile),
				// torn, or its nodes failed: read again.
				c.m.ReadRestarts++
				continue
			}
		}
		copy(c.val, val)
		if writeBack && c.reached(ks, m) < c.f+1 {
			if c.cfg.Now()-start > c.cfg.Grace/2 {
				c.m.ReadRestarts++
				continue
			}
			c.m.WriteBacks++
			if err := c.innerWrite(ctx, ks, m, val, false); err != nil {
				return 0, err
			}
		}
		ks.last = m
		return m, nil
	}
	return 0, fmt.Errorf("swarm client %d: read of slot %d restarted 8 times", c.cfg.ID, ks.kv)
}

// more posts a round's verbs to the nodes not yet in it (tried false),
// alive and with room, and reports whether it posted any.
func (c *Client) more(tried []bool, postNode func(int)) bool {
	posted := false
	for i := range tried {
		if !tried[i] && c.alive(i) && c.out[i] < c.cfg.MaxOutstanding {
			postNode(i)
			posted = posted || tried[i]
		}
	}
	return posted
}

// pendingOf counts targeted nodes, alive, that have not answered.
func (c *Client) pendingOf(targets, got []bool) int {
	k := 0
	for i := range targets {
		if targets[i] && !got[i] && !c.dead[i] {
			k++
		}
	}
	return k
}

// tryLock is the timestamp lock of writer pid on the key: TryLock(id,
// mode). Each node runs its CAS loop (every failed CAS shows a strictly
// larger word) in parallel; once a majority has left its loop the lock is
// taken unless one of them shows a larger timestamp or the same one in the
// opposite mode.
func (c *Client) tryLock(ctx context.Context, ks *keyState, pid int, id, mode Word) (bool, error) {
	n := len(c.cfg.Nodes)
	target := id.ID() | mode
	st := ks.lock[pid]
	if st == nil {
		st = make([]Word, n)
		ks.lock[pid] = st
	}
	off := c.cfg.Layout.LockOff(ks.kv, pid)
	done := make([]bool, n)
	gone := make([]bool, n)
	iters := make([]int, n)
	ndone, finished := 0, false
	var step func(i int)
	step = func(i int) {
		s := st[i]
		if s.ID() >= id.ID() {
			done[i] = true
			ndone++
			return
		}
		if finished {
			return
		}
		iters[i]++
		if !c.post(i, wr{op: verbs.OpCompareSwap, off: off, cmp: uint64(s), swap: uint64(target),
			onDone: func(ok bool, wc *verbs.WC, _ []byte) {
				if !ok {
					gone[i] = true
					return
				}
				if Word(wc.Orig) == s {
					st[i] = target
				} else {
					raise(&st[i], Word(wc.Orig))
				}
				step(i)
			}}) {
			gone[i] = true
		}
	}
	for i := 0; i < n; i++ {
		step(i)
	}
	err := c.until(ctx, "timestamp lock", func() bool { return ndone >= c.f+1 }, func() bool {
		k := ndone
		for i := range done {
			if !done[i] && !gone[i] && !c.dead[i] {
				k++
			}
		}
		return k < c.f+1
	}, func() bool {
		posted := false
		for i := range done {
			if gone[i] && !done[i] && c.usable(i, 1) {
				gone[i] = false
				step(i)
				posted = posted || !gone[i]
			}
		}
		return posted
	})
	finished = true
	rounds := 0
	won := true
	for i := range done {
		if !done[i] {
			continue
		}
		rounds = max(rounds, iters[i])
		if st[i].ID() > id.ID() || st[i] == id.ID()|(mode^1) {
			won = false
		}
	}
	for k := 0; k < rounds; k++ {
		c.round()
	}
	c.m.LockRounds += uint64(rounds)
	return won && err == nil, err
}

// takeBuf returns a free out-of-place buffer index of this writer: a
// never-used one, or the oldest superseded one once Grace has passed since
// it was superseded.
func (c *Client) takeBuf(ctx context.Context) (int, error) {
	if k := len(c.logs); k > 0 {
		b := c.logs[k-1]
		c.logs = c.logs[:k-1]
		return b, nil
	}
	if len(c.ret) == 0 {
		return 0, fmt.Errorf("swarm client %d: %w (%d buffers, all holding current values)", c.cfg.ID, ErrNoBuffer, c.cfg.Layout.LogBuffers)
	}
	r := c.ret[0]
	if wait := r.at + c.cfg.Grace - c.cfg.Now(); wait > 0 {
		if err := c.dclock.Sleep(ctx, wait); err != nil {
			return 0, err
		}
	}
	c.ret = c.ret[1:]
	c.m.BufferReuses++
	return r.log, nil
}

// supersede retires the client's buffers of key except keep: a write of
// the key with a larger timestamp is at a majority.
func (c *Client) supersede(ks *keyState, keep int) {
	now := c.cfg.Now()
	for _, b := range ks.bufs {
		if b != keep {
			c.ret = append(c.ret, retired{log: b, at: now})
		}
	}
	ks.bufs = append(ks.bufs[:0], keep)
}

// inPlace posts (in the background) the in-place copy of w at every live
// node.
func (c *Client) inPlace(ks *keyState, w Word, value []byte) {
	l := c.cfg.Layout
	entry := make([]byte, l.EntrySize())
	PutEntry(entry, w, value)
	for i := range c.cfg.Nodes {
		c.post(i, wr{op: verbs.OpWrite, off: l.InPlaceOff(ks.kv), n: len(entry), data: entry, bg: true})
	}
}

// write is Safe-Guess's write.
func (c *Client) write(ctx context.Context, ks *keyState, value []byte) error {
	l := c.cfg.Layout
	n := len(c.cfg.Nodes)
	log, err := c.takeBuf(ctx)
	if err != nil {
		return err
	}
	ks.bufs = append(ks.bufs, log)
	w := MakeWord(c.clock.guess(), c.cfg.ID, log, false)
	entry := make([]byte, l.EntrySize())
	PutEntry(entry, w, value)
	// One round trip: M.Write(w) and M.Read() together, the READ behind the
	// CAS on each queue pair, so it sees the node after our write.
	views := make([]Word, n)
	got := make([]bool, n)
	targets := make([]bool, n)
	open := make([]bool, n)
	ok := 0
	postNode := func(i int) {
		var wrs []wr
		if m := ks.mine[i]; m >= w {
			// Our word there holds a larger word a write-back of ours put
			// there: MAX of w changes nothing; a CAS that changes nothing
			// confirms the word, and the READ shows the larger tuple.
			wrs = []wr{c.casMaxWR(i, ks, m, m, false, func(bool) { open[i] = false })}
		} else {
			wrs = c.maxWriteWRs(i, ks, w, entry, false, func(bool) { open[i] = false })
		}
		wrs = append(wrs, c.readWR(i, ks, func(v NodeView) {
			views[i], got[i] = v.Max, true
			ok++
		}))
		targets[i] = c.postMax(i, ks, w, wrs...)
		open[i] = targets[i]
	}
	for i := 0; i < n; i++ {
		postNode(i)
	}
	err = c.until(ctx, "write", func() bool { return ok >= c.f+1 && c.reached(ks, w) >= c.f+1 },
		func() bool {
			return ok+c.pendingOf(targets, got) < c.f+1 || c.reached(ks, w)+c.openOf(ks, w, open) < c.f+1
		}, func() bool { return c.more(targets, postNode) })
	c.round()
	if err != nil {
		return err
	}
	var m Word
	for i := range views {
		if got[i] && views[i] > m {
			m = views[i]
		}
	}
	if m <= w {
		// Fast path: the guess was fresh. Verify and copy in place in the
		// background (FIFO order puts the verify before our next CAS).
		c.m.FastWrites++
		vw := w | Verified
		ventry := make([]byte, l.EntrySize())
		PutEntry(ventry, vw, value)
		for i := 0; i < n; i++ {
			if ks.mine[i] != w {
				continue
			}
			i := i
			if c.post(i, wr{op: verbs.OpCompareSwap, off: l.MetaOff(ks.kv) + 8*(c.cfg.ID-1), cmp: uint64(w), swap: uint64(vw), bg: true,
				onDone: func(good bool, wc *verbs.WC, _ []byte) {
					if good && Word(wc.Orig) == w {
						raise(&ks.c[i], vw)
					}
				}},
				wr{op: verbs.OpWrite, off: l.InPlaceOff(ks.kv), n: len(ventry), data: ventry, bg: true}) {
				ks.mine[i] = vw
			}
		}
		c.supersede(ks, log)
		return nil
	}
	// Slow path: m > w; w may have been stale, or fresh and overtaken.
	c.m.SlowWrites++
	c.clock.observe(m.TS())
	won, err := c.tryLock(ctx, ks, c.cfg.ID, w, LockWrite)
	if err != nil {
		return err
	}
	if !won {
		// A reader locked w in READ mode: w was fresh and is linearized.
		c.supersede(ks, log)
		return nil
	}
	// No reader has returned w and none will: write again with a timestamp
	// surely fresh, already VERIFIED.
	c.m.Rewrites++
	log2, err := c.takeBuf(ctx)
	if err != nil {
		return err
	}
	ks.bufs = append(ks.bufs, log2)
	ts := c.clock.guess()
	if ts <= m.TS() {
		c.clock.last = m.TS() + 1
		ts = c.clock.last
	}
	w2 := MakeWord(ts, c.cfg.ID, log2, true)
	if err := c.innerWrite(ctx, ks, w2, value, false); err != nil {
		return err
	}
	c.inPlace(ks, w2, value)
	c.supersede(ks, log2)
	return nil
}

// read is Safe-Guess's read; the value is left in c.val. It returns false
// when the key was never written.
func (c *Client) read(ctx context.Context, ks *keyState, opStart time.Duration) (bool, error) {
	seed := ks.last
	seen := map[int]Word{}
	seenVal := map[int][]byte{}
	for iter := 0; iter < c.cfg.MaxReadIters; iter++ {
		if iter > 0 {
			c.m.ReadIters++
		}
		m, err := c.mread(ctx, ks, true)
		if err != nil {
			return false, err
		}
		if m == 0 {
			return false, nil
		}
		if m.IsVerified() {
			return true, nil
		}
		c.m.GuessedSeen++
		prev, had := seen[m.PID()]
		if (had && prev == m) || (iter == 0 && seed == m) {
			// Seen in two sequential reads: lock it against its writer's
			// rewrite, and it may be returned.
			won, err := c.tryLock(ctx, ks, m.PID(), m, LockRead)
			if err != nil {
				return false, err
			}
			if won {
				c.m.ReadLocks++
				if c.cfg.Now()-opStart < c.cfg.Grace/2 {
					vw := m | Verified
					_ = c.innerWrite(ctx, ks, vw, c.val, true)
					c.inPlace(ks, vw, c.val)
				}
				return true, nil
			}
			c.m.ReadLockFails++
		} else if had {
			// The same writer started a newer write, so the older one
			// completed: its value is a valid answer.
			copy(c.val, seenVal[m.PID()])
			return true, nil
		}
		seen[m.PID()] = m
		seenVal[m.PID()] = append([]byte(nil), c.val...)
	}
	return false, fmt.Errorf("swarm client %d: %w (%d)", c.cfg.ID, ErrReadBound, c.cfg.MaxReadIters)
}

func (c *Client) begin() time.Duration {
	c.rtt = 0
	return c.cfg.Now()
}

func (c *Client) end(hist *[8]uint64, start time.Duration) {
	b := c.rtt - 1
	if b < 0 {
		b = 0
	}
	if b > 7 {
		b = 7
	}
	hist[b]++
	if c.rtt > 0 {
		per := uint64((c.cfg.Now() - start) / time.Duration(c.rtt) / c.cfg.Tick)
		c.clock.push = (7*c.clock.push + per) / 8
	}
}

// Get reads key's value into buf (ValueSize bytes) and returns it.
func (c *Client) Get(ctx context.Context, key uint64, buf []byte) ([]byte, error) {
	start := c.begin()
	ks, err := c.state(key, false)
	if err != nil {
		c.m.NotFound++
		return nil, err
	}
	if err := c.settle(ctx); err != nil {
		return nil, err
	}
	found, err := c.read(ctx, ks, start)
	if err != nil {
		return nil, err
	}
	c.m.Gets++
	c.end(&c.m.GetRTT, start)
	if !found {
		c.m.NotFound++
		return nil, ErrNotFound
	}
	if len(buf) < len(c.val) {
		buf = make([]byte, len(c.val))
	}
	return buf[:copy(buf, c.val)], nil
}

// Put writes value (ValueSize bytes) under key, inserting the key if the
// index does not know it (a concurrent insert of the same key becomes an
// update of the replicas the index chose).
func (c *Client) Put(ctx context.Context, key uint64, value []byte) error {
	return c.put(ctx, key, value, true)
}

// Update writes value under key and fails with ErrNotFound if the key was
// never inserted.
func (c *Client) Update(ctx context.Context, key uint64, value []byte) error {
	return c.put(ctx, key, value, false)
}

func (c *Client) put(ctx context.Context, key uint64, value []byte, create bool) error {
	if len(value) != c.cfg.Layout.ValueSize {
		return fmt.Errorf("swarm client %d: %w: %d bytes, want %d", c.cfg.ID, ErrValueSize, len(value), c.cfg.Layout.ValueSize)
	}
	start := c.begin()
	ks, err := c.state(key, create)
	if err != nil {
		if err == ErrNotFound {
			c.m.NotFound++
		}
		return err
	}
	if err := c.settle(ctx); err != nil {
		return err
	}
	if err := c.write(ctx, ks, value); err != nil {
		return err
	}
	c.m.Puts++
	c.end(&c.m.PutRTT, start)
	return nil
}
