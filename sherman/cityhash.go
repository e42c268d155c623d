package sherman

import (
	"encoding/binary"
	"math/bits"
)

// CityHash64 is Google's CityHash64 (version 1.1), the hash Sherman uses to
// map a page's global address to its lock word. Written from the published
// algorithm; cityhash_test.go checks it against reference values.
func CityHash64(s []byte) uint64 {
	n := len(s)
	switch {
	case n <= 16:
		return hashLen0to16(s)
	case n <= 32:
		return hashLen17to32(s)
	case n <= 64:
		return hashLen33to64(s)
	}
	x := fetch64(s, n-40)
	y := fetch64(s, n-16) + fetch64(s, n-56)
	z := hashLen16(fetch64(s, n-48)+uint64(n), fetch64(s, n-24))
	v1, v2 := weakHashLen32WithSeeds(s[n-64:], uint64(n), z)
	w1, w2 := weakHashLen32WithSeeds(s[n-32:], y+cityK1, x)
	x = x*cityK1 + fetch64(s, 0)
	rest := (n - 1) &^ 63
	p := s
	for {
		x = bits.RotateLeft64(x+y+v1+fetch64(p, 8), -37) * cityK1
		y = bits.RotateLeft64(y+v2+fetch64(p, 48), -42) * cityK1
		x ^= w2
		y += v1 + fetch64(p, 40)
		z = bits.RotateLeft64(z+w1, -33) * cityK1
		v1, v2 = weakHashLen32WithSeeds(p, v2*cityK1, x+w1)
		w1, w2 = weakHashLen32WithSeeds(p[32:], z+w2, y+fetch64(p, 16))
		z, x = x, z
		p = p[64:]
		rest -= 64
		if rest == 0 {
			break
		}
	}
	return hashLen16(hashLen16(v1, w1)+shiftMix(y)*cityK1+z, hashLen16(v2, w2)+x)
}

const (
	cityK0  = 0xc3a5c85c97cb3127
	cityK1  = 0xb492b66fbe98f273
	cityK2  = 0x9ae16a3b2f90404f
	cityMul = 0x9ddfea08eb382d69
)

func fetch64(s []byte, i int) uint64 { return binary.LittleEndian.Uint64(s[i:]) }
func fetch32(s []byte, i int) uint64 { return uint64(binary.LittleEndian.Uint32(s[i:])) }
func shiftMix(v uint64) uint64       { return v ^ v>>47 }

func hashLen16Mul(u, v, mul uint64) uint64 {
	a := (u ^ v) * mul
	a ^= a >> 47
	b := (v ^ a) * mul
	b ^= b >> 47
	return b * mul
}

func hashLen16(u, v uint64) uint64 { return hashLen16Mul(u, v, cityMul) }

func hashLen0to16(s []byte) uint64 {
	n := len(s)
	switch {
	case n >= 8:
		mul := cityK2 + uint64(n)*2
		a := fetch64(s, 0) + cityK2
		b := fetch64(s, n-8)
		c := bits.RotateLeft64(b, -37)*mul + a
		d := (bits.RotateLeft64(a, -25) + b) * mul
		return hashLen16Mul(c, d, mul)
	case n >= 4:
		mul := cityK2 + uint64(n)*2
		a := fetch32(s, 0)
		return hashLen16Mul(uint64(n)+a<<3, fetch32(s, n-4), mul)
	case n > 0:
		a, b, c := uint32(s[0]), uint32(s[n>>1]), uint32(s[n-1])
		y := a + b<<8
		z := uint32(n) + c<<2
		return shiftMix(uint64(y)*cityK2^uint64(z)*cityK0) * cityK2
	}
	return cityK2
}

func hashLen17to32(s []byte) uint64 {
	n := len(s)
	mul := cityK2 + uint64(n)*2
	a := fetch64(s, 0) * cityK1
	b := fetch64(s, 8)
	c := fetch64(s, n-8) * mul
	d := fetch64(s, n-16) * cityK2
	return hashLen16Mul(bits.RotateLeft64(a+b, -43)+bits.RotateLeft64(c, -30)+d, a+bits.RotateLeft64(b+cityK2, -18)+c, mul)
}

func hashLen33to64(s []byte) uint64 {
	n := len(s)
	mul := cityK2 + uint64(n)*2
	a := fetch64(s, 0) * cityK2
	b := fetch64(s, 8)
	c := fetch64(s, n-24)
	d := fetch64(s, n-32)
	e := fetch64(s, 16) * cityK2
	f := fetch64(s, 24) * 9
	g := fetch64(s, n-8)
	h := fetch64(s, n-16) * mul
	u := bits.RotateLeft64(a+g, -43) + (bits.RotateLeft64(b, -30)+c)*9
	v := ((a + g) ^ d) + f + 1
	w := bits.ReverseBytes64((u+v)*mul) + h
	x := bits.RotateLeft64(e+f, -42) + c
	y := (bits.ReverseBytes64((v+w)*mul) + g) * mul
	z := e + f + c
	a = bits.ReverseBytes64((x+z)*mul+y) + b
	b = shiftMix((z+a)*mul+d+h) * mul
	return b + x
}

func weakHashLen32WithSeeds(s []byte, a, b uint64) (uint64, uint64) {
	w, x, y, z := fetch64(s, 0), fetch64(s, 8), fetch64(s, 16), fetch64(s, 24)
	a += w
	b = bits.RotateLeft64(b+a+z, -21)
	c := a
	a += x
	a += y
	b += bits.RotateLeft64(a, -44)
	return a + z, b + c
}
