package rnic

// PSNs are 24-bit serial numbers; comparisons are modulo 2^24 within half
// the space, as IBA 9.7.

const psnMask = 1<<24 - 1

func psnAdd(a, n uint32) uint32 { return (a + n) & psnMask }

// psnDiff returns b - a modulo 2^24 as a signed distance in (-2^23, 2^23].
func psnDiff(a, b uint32) int32 {
	d := int32((b - a) & psnMask)
	if d > 1<<23 {
		d -= 1 << 24
	}
	return d
}

// psnLT reports a < b.
func psnLT(a, b uint32) bool { return psnDiff(a, b) > 0 }

// psnLE reports a <= b.
func psnLE(a, b uint32) bool { return psnDiff(a, b) >= 0 }
