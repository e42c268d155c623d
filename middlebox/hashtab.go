package middlebox

// connTable maps a connection key (packed into two words) to a connection
// index: open addressing with linear probing, sized at creation, so lookups
// and inserts never allocate and cost a multiply and a compare or two (a Go
// map with a struct key costs several times that on the hot path).
type connTable struct {
	slots []connSlot
	mask  uint64
	n     int
}

type connSlot struct {
	k0, k1 uint64
	v      int32
	used   bool
}

func newConnTable(max int) connTable {
	n := 16
	for n < 2*max {
		n <<= 1
	}
	return connTable{slots: make([]connSlot, n), mask: uint64(n - 1)}
}

func hashKey(k0, k1 uint64) uint64 {
	h := k0*0x9e3779b97f4a7c15 ^ k1*0xc2b2ae3d27d4eb4f
	return h ^ h>>29
}

func (t *connTable) get(k0, k1 uint64) (int32, bool) {
	for i := hashKey(k0, k1) & t.mask; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if !s.used {
			return -1, false
		}
		if s.k0 == k0 && s.k1 == k1 {
			return s.v, true
		}
	}
}

// put inserts or replaces; the caller keeps the table at most half full.
func (t *connTable) put(k0, k1 uint64, v int32) {
	for i := hashKey(k0, k1) & t.mask; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if !s.used {
			*s = connSlot{k0: k0, k1: k1, v: v, used: true}
			t.n++
			return
		}
		if s.k0 == k0 && s.k1 == k1 {
			s.v = v
			return
		}
	}
}

func ip4(a [4]byte) uint64 {
	return uint64(a[0])<<24 | uint64(a[1])<<16 | uint64(a[2])<<8 | uint64(a[3])
}

func (k reqKey) words() (uint64, uint64) {
	return ip4(k.cli)<<32 | ip4(k.srv), uint64(k.port)<<32 | uint64(k.qp)
}

func (k revKey) words() (uint64, uint64) {
	return ip4(k.srv)<<32 | ip4(k.cli), uint64(k.qp)
}
