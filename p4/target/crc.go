package target

// crcSpec is a CRC of width 8 to 64 bits with the parameters of tna's
// CRCPolynomial: the polynomial (without its top bit), reversed (input and
// output reflected), the initial register value and the final xor. As in
// the Tofino SDE's hash library, the initial value is loaded into the
// register as given, also for reversed CRCs.
type crcSpec struct {
	w        int
	poly     uint64
	reversed bool
	init     uint64
	xor      uint64
	m        uint64
	table    [256]uint64
}

func newCRC(w int, poly uint64, reversed bool, init, xor uint64) *crcSpec {
	c := &crcSpec{w: w, poly: poly, reversed: reversed, init: init, xor: xor, m: mask(w)}
	if reversed {
		rp := reflect(poly, w)
		for i := range c.table {
			r := uint64(i)
			for k := 0; k < 8; k++ {
				if r&1 != 0 {
					r = r>>1 ^ rp
				} else {
					r >>= 1
				}
			}
			c.table[i] = r
		}
		return c
	}
	top := uint64(1) << uint(w-1)
	for i := range c.table {
		r := uint64(i) << uint(w-8)
		for k := 0; k < 8; k++ {
			if r&top != 0 {
				r = r<<1 ^ poly
			} else {
				r <<= 1
			}
		}
		c.table[i] = r & c.m
	}
	return c
}

// reflect reverses the low w bits of v.
func reflect(v uint64, w int) uint64 {
	var r uint64
	for i := 0; i < w; i++ {
		if v>>uint(i)&1 != 0 {
			r |= 1 << uint(w-1-i)
		}
	}
	return r
}

// sum is the CRC of b.
func (c *crcSpec) sum(b []byte) uint64 {
	crc := c.init & c.m
	if c.reversed {
		for _, x := range b {
			crc = crc>>8 ^ c.table[byte(crc)^x]
		}
	} else {
		sh := uint(c.w - 8)
		for _, x := range b {
			crc = (crc<<8 ^ c.table[byte(crc>>sh)^x]) & c.m
		}
	}
	return (crc ^ c.xor) & c.m
}
