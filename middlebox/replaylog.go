package middlebox

// replayLog keeps the middlebox's copy of every request it forwards on a
// shared connection, for NAKReplay: after a server's NAK PSN sequence
// error, the engine resends its own copies instead of waiting for each
// client's retransmission timer.
//
// It is one byte ring written front to back: a copy is appended where the
// previous one ended (wrapping at the end), and its map entry remembers the
// absolute position it starts at. The ring is written sequentially, so
// recording a copy costs a streaming memmove and no per-slot buffer (an
// earlier design kept one heap buffer per map entry: 4096 scattered
// buffers that evicted the map itself from the cache). A copy is lost once
// the ring has wrapped past it; a replay then skips it (counted as
// ReplayLost) and that client's own retransmission recovers the request,
// which is what happens with no replay at all.
type replayLog struct {
	buf  []byte // power-of-two length
	mask uint64
	pos  uint64 // bytes ever appended
}

// newReplayLog returns a log of size bytes (a power of two).
func newReplayLog(size int) *replayLog {
	return &replayLog{buf: make([]byte, size), mask: uint64(size - 1)}
}

// put appends f and returns the position of its copy. Frames longer than
// the log are not kept (their position is already overwritten on return).
func (l *replayLog) put(f []byte) uint64 {
	at := l.pos
	o := at & l.mask
	n := copy(l.buf[o:], f)
	if n < len(f) {
		copy(l.buf, f[n:])
	}
	l.pos += uint64(len(f))
	return at
}

// has reports whether the n-byte copy at position at is still intact.
func (l *replayLog) has(at uint64, n int) bool {
	return n > 0 && n <= len(l.buf) && l.pos-at <= uint64(len(l.buf)) && l.pos-at >= uint64(n)
}

// get copies the n-byte copy at position at into dst (len(dst) == n); the
// caller checked has.
func (l *replayLog) get(dst []byte, at uint64) {
	o := at & l.mask
	k := copy(dst, l.buf[o:])
	if k < len(dst) {
		copy(dst[k:], l.buf)
	}
}
