package middlebox

// Tracked 8-byte words (paper section 4.2): the engine applies every
// operation it sends on a server's shared connection to its cache of the
// word, in the order it transmits them, so it knows each CMP_SWAP's and
// FETCH_ADD's outcome before the server does.
//
// A word's value is unknown until learned. While unknown, atomics pass
// through unchanged, and the engine logs each operation it sends on the
// word (up to wordLogLen of them). When the ATOMIC ACK of a logged atomic
// returns the word's value before it, the engine replays that atomic and
// every later logged operation to obtain the current value: learning works
// even while other operations on the word are in flight.
//
// Operations on the word that do not travel on the shared connection
// ("foreign": from a connection not yet bound, see engine.go) make the
// word unknown, and no word of that server is learned while one is in
// flight, because the server may order it anywhere among the shared
// connection's operations.

const wordLogLen = 8

type wopKind uint8

const (
	wopCAS wopKind = iota + 1
	wopFA
	wopWrite // v = v&^a | b&a (a: byte mask, b: data), both little-endian as in memory
)

type wop struct {
	kind wopKind
	a, b uint64
}

func (o wop) apply(v uint64) uint64 {
	switch o.kind {
	case wopCAS:
		if v == o.a {
			return o.b
		}
		return v
	case wopFA:
		return v + o.a
	case wopWrite:
		return v&^o.a | o.b&o.a
	}
	return v
}

type word struct {
	srv   int32
	va    uint64
	used  bool
	known bool
	value uint64
	seq   uint32 // operations sent on the word
	// log holds the operations with sequence numbers logBase .. logBase+logN-1
	// (valid while !known).
	logBase uint32
	logN    uint8
	log     [wordLogLen]wop
	// whead and wtail are the CMP_SWAPs waiting for the word to change
	// (lockrules.go), a FIFO through conn.wnext (conn index + 1; 0: none);
	// wakeMark: the word is in Engine.wake.
	whead, wtail int32
	wakeMark     bool
}

type wordTable struct {
	slots []word
	mask  uint64
	used  int
	limit int
}

func newWordTable(max int) wordTable {
	n := 1
	for n < 2*max {
		n <<= 1
	}
	return wordTable{slots: make([]word, n), mask: uint64(n - 1), limit: max}
}

func hashVA(va uint64) uint64 {
	va ^= va >> 33
	va *= 0xff51afd7ed558ccd
	va ^= va >> 33
	return va
}

// lookup returns the word at va on server srv (8-aligned), creating it if create is set
// and the table has room; -1 if absent.
func (t *wordTable) lookup(srv int32, va uint64, create bool) int32 {
	i := hashVA(va^uint64(srv)<<52) & t.mask
	for {
		w := &t.slots[i]
		if !w.used {
			if !create || t.used >= t.limit {
				return -1
			}
			*w = word{srv: srv, va: va, used: true}
			t.used++
			return int32(i)
		}
		if w.va == va && w.srv == srv {
			return int32(i)
		}
		i = (i + 1) & t.mask
	}
}

// send records an operation the engine transmits on the shared connection
// and returns its sequence number.
func (w *word) send(o wop) uint32 {
	w.seq++
	s := w.seq
	if w.known {
		w.value = o.apply(w.value)
		return s
	}
	if w.logN == 0 {
		w.logBase = s
	}
	if int(w.logN) < wordLogLen && w.logBase+uint32(w.logN) == s {
		w.log[w.logN] = o
		w.logN++
	} else {
		// Overflow: restart the log at this operation; acks of older
		// ones can no longer be replayed.
		w.logBase, w.logN = s, 1
		w.log[0] = o
	}
	return s
}

// sendUnknown records an operation whose effect is not modelled (foreign):
// the word becomes unknown and the log restarts after it.
func (w *word) sendUnknown() {
	w.seq++
	w.known = false
	w.logN = 0
}

// learn is called with the value the word held before operation s (from
// its ATOMIC ACK). It reports whether the word became known.
func (w *word) learn(s uint32, before uint64) bool {
	if w.known || w.logN == 0 {
		return false
	}
	d := s - w.logBase
	if d >= uint32(w.logN) || w.logBase+uint32(w.logN)-1 != w.seq {
		return false
	}
	v := before
	for i := d; i < uint32(w.logN); i++ {
		v = w.log[i].apply(v)
	}
	w.known, w.value, w.logN = true, v, 0
	return true
}

// writeOp returns the wopWrite of a WRITE that covers bytes [lo, hi) of
// the word at wva, with data the payload bytes for that part.
func writeOp(wva, va uint64, payload []byte) wop {
	var mask, data uint64
	for i := uint64(0); i < 8; i++ {
		a := wva + i
		if a < va || a >= va+uint64(len(payload)) {
			continue
		}
		mask |= 0xff << (8 * i)
		data |= uint64(payload[a-va]) << (8 * i)
	}
	return wop{kind: wopWrite, a: mask, b: data}
}
