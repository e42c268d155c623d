package roce

import (
	"hash/crc32"
	"math/bits"
	"unsafe"
)

// Short-packet ICRC. On amd64 with PCLMULQDQ, spans with a 20-byte IPv4
// header take a carry-less-multiply routine that reads them in place (below,
// and icrc_amd64.s); IPv4 options are rare enough in RoCEv2 to keep to the
// portable paths, which are also the paths of other architectures.
//
// The portable copying path. crc32.Update is fast (carry-less multiply on
// amd64 and arm64) only over whole 16-byte blocks of at least 64 bytes; below
// that, and for a tail, it falls back to a table loop. A short packet is
// therefore copied, masked, into a stack buffer behind k zero bytes, so that
// the length is a multiple of 16 and at least 64, and handed to crc32.Update
// in one call.
//
// The algebra. Let R(s, m) be the raw CRC register (reflected, polynomial
// 0xEDB88320, no pre- or post-inversion) after m from state s. It is linear
// in (s, m): R(s, m) = R(0, m) ^ R(s, 0^len(m)); and leading zero bytes
// leave the zero state at zero: R(0, 0^k || m) = R(0, m). The ICRC of m (n
// bytes, masked) is ^R(R0, m), where R0 = R(0xFFFFFFFF, 0xFF^8) is the
// register after the standard initial value and the 8 bytes of 0xFF. So
//
//	ICRC = ^R(0, 0^k || m) ^ R(R0, 0^n)
//	     = crc32.Update(0xFFFFFFFF, IEEETable, 0^k || m) ^ icrcZeroK[n]
//
// (crc32.Update(c, ...) starts from register ^c and returns the inverted
// register.) icrcZeroK holds R(R0, 0^n) for every n up to icrcFastMax.
//
// Where it pays (BenchmarkICRCShort, amd64): crc32.Update costs about 16 ns
// whatever the length up to 80 bytes, and the copy with its zeroing and the
// store-to-load forwarding it defeats a few more; the table loop costs about
// 0.4 ns a byte. So spans shorter than icrcCopyMin keep the table loop (a
// 44-byte ACK is as fast that way), and spans longer than icrcFastMax read
// the payload in place, where crc32.Update takes it without a copy.

const (
	// icrcFastMin and icrcFastMax bound the L3..ICRC spans (bytes) that go to
	// icrcShort: every span of a 20-byte IPv4 header up to icrcFastMax, which
	// the carry-less-multiply routine takes where there is one (amd64 with
	// PCLMULQDQ, icrc_amd64.s); the others take the copying path from
	// icrcCopyMin and the table loop below it.
	icrcFastMin = IPv4MinLen + UDPLen + BTHLen
	icrcFastMax = 256
	// icrcCopyMin is the shortest span that takes the copying path.
	icrcCopyMin = 56
	// icrcSmallBuf is the smaller of the two stack buffers: spans that pad to
	// at most this many bytes use it, so that the common short packets do not
	// pay for zeroing the larger one.
	icrcSmallBuf = 128
	// clmulMinLen is the shortest input crc32.Update takes by carry-less
	// multiply (it then processes 16-byte blocks).
	clmulMinLen = 64
)

// icrcZeroK[n] = R(R0, 0^n): the contribution of the initial state and the
// 8 bytes of 0xFF to the register after n more bytes.
var icrcZeroK [icrcFastMax + 1]uint32

func init() {
	r := ^crcSeed // R0: crcSeed is the (inverted) CRC after the 8 bytes of 0xFF
	for n := range icrcZeroK {
		icrcZeroK[n] = r
		r = crc32.IEEETable[byte(r)] ^ r>>8 // one zero byte
	}
}

// icrcShort is icrcOver for len(l3) <= icrcFastMax. The caller guarantees
// len(l3) >= ihl+UDPLen+BTHLen and 20 <= ihl <= 60.
func icrcShort(l3 []byte, ihl int) uint32 {
	if useICRCAsm && ihl == IPv4MinLen {
		return icrcAsm20(l3)
	}
	if len(l3) < icrcCopyMin {
		return icrcInPlace(l3, ihl)
	}
	return icrcCopy(l3, ihl)
}

// icrcCopy is the copying path: icrcShort for icrcCopyMin <= len(l3) <=
// icrcFastMax.
func icrcCopy(l3 []byte, ihl int) uint32 {
	n := len(l3)
	padded := max((n+15)&^15, clmulMinLen)
	if padded <= icrcSmallBuf {
		var buf [icrcSmallBuf]byte
		return icrcPadded(noescape(&buf)[:padded], l3, ihl) ^ icrcZeroK[n]
	}
	var buf [icrcFastMax]byte
	return icrcPadded(noescape(&buf)[:padded], l3, ihl) ^ icrcZeroK[n]
}

// icrcPadded copies l3 to the end of buf, which must be zero and a multiple
// of 16 and at least 64 bytes long, masks the variant fields, and returns
// crc32.Update(0xFFFFFFFF, IEEETable, buf), that is ^R(0, masked l3).
func icrcPadded(buf, l3 []byte, ihl int) uint32 {
	m := buf[len(buf)-len(l3):]
	copy(m, l3)
	maskICRCFields(m, ihl)
	return crc32.Update(0xffffffff, crc32.IEEETable, buf)
}

// noescape returns p unchanged, hidden from escape analysis, so that the
// stack buffers of icrcShort stay on the stack. crc32.Update reaches its
// implementation through a function variable, so escape analysis must assume
// that it keeps its argument, and would move the buffer to the heap (one
// allocation per call). crc32.Update does not retain its argument (it only
// reads it before it returns), so the buffer may live on the stack. This is
// the runtime's noescape, written as a load of the address through a uintptr
// variable rather than as a uintptr-to-Pointer conversion, which go vet
// rejects. It is safe because nothing between taking the address and loading
// it back can move the stack (no call: the function is inlined), and from
// then on the pointer is an ordinary typed one. Checked by
// TestICRCShortNoAllocs and by the tests under -race (which enables checkptr).
func noescape[T any](p *T) *T {
	x := uintptr(unsafe.Pointer(p))
	return *(**T)(unsafe.Pointer(&x))
}

// Carry-less-multiply ICRC (icrc_amd64.s) for spans of 40 to 256 bytes with a
// 20-byte IPv4 header, read in place. Its constants are computed here, from
// the polynomial, so that the tests check them on every architecture.
//
// Notation. A w-bit "reflected" value holds a polynomial of degree < w with
// bit i the coefficient of x^(w-1-i): the CRC register is reflected-32, 16
// message bytes loaded little-endian are reflected-128 (the first bit sent,
// bit 0 of byte 0, is the highest power). PCLMULQDQ of a reflected-a and a
// reflected-b value gives their product as reflected-(a+b-1).
//
// The span m (n bytes, 40 <= n <= 256) is cut from its end into F = n/16
// whole 16-byte blocks and, when k = n%16 > 0, a leading block of k bytes,
// read as 0^(16-k) || m[0:k] (one 16-byte load shuffled with a window of
// shuf; leading zeros do not change R(0, .), and the initial state is the
// icrcZeroK term as for the copying path). The masks are ORed into the first
// 48 bytes in registers (mask, indexed by span offset). With M the message
// polynomial and B = H*x^64 + L a block at distance d blocks from the end
// (H its low, L its high quadword),
//
//	M*x^32 = sum over blocks of H*x^(128d+96) + L*x^(128d+32)
//
// and each block contributes clmul(H, c[0]) ^ clmul(L, c[1]), with c =
// {x^(128d+95), x^(128d+31)} mod P as reflected-32 values in the high half
// of a quadword (clmulTables.kr). The products (reflected-127, of degree <=
// 94) read as reflected-128 values are x times the polynomial, hence the -1
// in the exponents; their sum T is congruent to M*x^32, of degree <= 94, in
// bits 33..127. The products are independent of each other: the blocks go
// two at a time through 256-bit VPCLMULQDQ, or four through 512-bit, where
// the CPU has it. The 256-bit variant takes spans of up to 128 bytes by a
// straight-line path (no loop): the span is read as 1 to 3 whole 32-byte
// pairs ending at its end after a leading pair of 1 to 32 bytes (two
// shuffled 16-byte loads); the only branches skip the pairs a span of up to
// 64 or 96 bytes does not have. (Always reading four pairs, the missing ones
// weighted by zero constants, was slower: BenchmarkICRCAsmVariants.) The
// 512-bit variant reads the span as 64-byte chunks ending at its end; the
// first is a byte-masked load that starts up to 63 bytes before the span,
// the bytes outside it masked off (not accessed, loaded as zeros), so that
// the leading block needs no shuffle.
//
// The reduction: Barrett with a 64-bit quotient, two dependent carry-less
// multiplies. Write T = A*x^32 + B (B of degree < 32, A < 63). With mu =
// floor(x^95/P) (degree 63), the quotient is q = floor(T/P) = floor(A*mu /
// x^63) (exact for deg T < 95), and the remainder T mod P = B ^ (q*P' mod
// x^32), P' = P - x^32, since q*x^32 contributes nothing below x^32. In the
// registers: T >> 32 holds A as reflected-64; the low quadword of clmul(A,
// mu) (reflected-127: its terms x^63.. are bits 63-..) is q as
// reflected-64; and bits 31..62 of the high quadword of clmul(q, P') are
// the terms x^31..x^0 of q*P' as reflected-32. That is the raw register
// R(0, m).

// clmulTables is read by icrc_amd64.s at the offsets clmulOff*.
type clmulTables struct {
	// kr[i] holds the block constants for distance 15-i: consecutive
	// blocks use consecutive entries, the first of B blocks kr[16-B].
	kr [icrcFastMax / 16][2]uint64
	// red holds the reduction's constants: red[0] = mu = floor(x^95 / P)
	// as reflected-64, red[1] = P - x^32 as reflected-32 in the high half.
	red  [2]uint64
	shuf [32]byte // PSHUFB window: 16 x 0x80, then 0..15
	// shortT[r] = max(r-16, 0) and shortU[r] = min(r, 16), r = 0..32: the
	// load offset and shuffle windows of the 256-bit straight-line path's
	// leading partial pair of r bytes.
	shortT [33]byte
	shortU [33]byte
	_      [14]byte
	// mask has 0xff at the masked span offsets (IHL 20) and zeros from
	// offset 33 on (clmulOffZero: the mask of blocks past the headers); the
	// 64 bytes before it are zero, the mask of bytes before the span.
	maskPad [64]byte
	mask    [128]byte
	// zeroInv[n] = ^icrcZeroK[n]: XORed into the raw register it gives the
	// ICRC.
	zeroInv [icrcFastMax + 1]uint32
}

// Offsets of clmulTables' fields, as icrc_amd64.s uses them (checked by
// TestICRCClmulTables).
const (
	clmulOffK       = 0
	clmulOffRed     = 256
	clmulOffShuf    = 272
	clmulOffShortT  = 304
	clmulOffShortU  = 337
	clmulOffMask    = 448
	clmulOffZero    = 512
	clmulOffZeroInv = 576
)

// crcPoly is the CRC-32 (IEEE) polynomial, bit i the coefficient of x^i.
const crcPoly = 1<<32 | 0x04c11db7

// xPowMod returns x^e mod P, bit i the coefficient of x^i.
func xPowMod(e int) uint64 {
	r := uint64(1)
	for ; e > 0; e-- {
		r <<= 1
		if r&(1<<32) != 0 {
			r ^= crcPoly
		}
	}
	return r
}

// refl32hi returns a polynomial of degree < 32 as a reflected-32 value in
// the high half of a quadword.
func refl32hi(p uint64) uint64 { return uint64(bits.Reverse32(uint32(p))) << 32 }

// barrettMu returns floor(x^95 / P), a polynomial of degree 63, bit i the
// coefficient of x^i, by long division.
func barrettMu() uint64 {
	var q uint64
	rem := [2]uint64{0, 1 << 31} // x^95: bit 95 is bit 31 of the high word
	for i := 95; i >= 32; i-- {
		if rem[i/64]>>(i%64)&1 == 0 {
			continue
		}
		q |= 1 << (i - 32)
		s := i - 32 // subtract P*x^s
		rem[0] ^= crcPoly << s
		if s > 0 {
			rem[1] ^= crcPoly >> (64 - s)
		}
	}
	return q
}

func makeClmulTables() *clmulTables {
	t := new(clmulTables)
	for i := range t.kr {
		d := len(t.kr) - 1 - i
		t.kr[i] = [2]uint64{refl32hi(xPowMod(128*d + 95)), refl32hi(xPowMod(128*d + 31))}
	}
	t.red = [2]uint64{bits.Reverse64(barrettMu()), refl32hi(crcPoly & 0xffffffff)}
	for _, off := range []int{IPv4TOSOff, IPv4TTLOff, IPv4ChecksumOff, IPv4ChecksumOff + 1,
		IPv4MinLen + UDPChecksumOff, IPv4MinLen + UDPChecksumOff + 1, IPv4MinLen + UDPLen + BTHFBOff} {
		t.mask[off] = 0xff
	}
	for r := range t.shortT {
		t.shortT[r], t.shortU[r] = byte(max(r-16, 0)), byte(min(r, 16))
	}
	// The raw register after the initial value and 8 bytes of 0xFF, then
	// after n zero bytes (as icrcZeroK, which init has not filled yet).
	reg := ^crc32.ChecksumIEEE(ffPrefix[:])
	for n := range t.zeroInv {
		t.zeroInv[n] = ^reg
		reg = crc32.IEEETable[byte(reg)] ^ reg>>8
	}
	for i := range 16 {
		t.shuf[i] = 0x80
		t.shuf[16+i] = byte(i)
	}
	return t
}
