package roce

import (
	"hash/crc32"
	"unsafe"
)

// Short-packet ICRC. crc32.Update is fast (carry-less multiply on amd64 and
// arm64) only over whole 16-byte blocks of at least 64 bytes; below that, and
// for a tail, it falls back to a table loop. A short packet is therefore
// copied, masked, into a stack buffer behind k zero bytes, so that the length
// is a multiple of 16 and at least 64, and handed to crc32.Update in one call.
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
// 0.4 ns a byte. So spans shorter than icrcFastMin keep the table loop (a
// 44-byte ACK is as fast that way), and spans longer than icrcFastMax read
// the payload in place, where crc32.Update takes it without a copy.

const (
	// icrcFastMin and icrcFastMax bound the L3..ICRC spans (bytes) that take
	// the copying path.
	icrcFastMin = 56
	icrcFastMax = 256
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
	m[IPv4TOSOff] = 0xff
	m[IPv4TTLOff] = 0xff
	m[IPv4ChecksumOff] = 0xff
	m[IPv4ChecksumOff+1] = 0xff
	m[ihl+UDPChecksumOff] = 0xff
	m[ihl+UDPChecksumOff+1] = 0xff
	m[ihl+UDPLen+BTHFBOff] = 0xff
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
