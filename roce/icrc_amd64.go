//go:build amd64

package roce

import "unsafe"

// The carry-less-multiply routine of icrc_amd64.s and the CPU features it
// needs: PCLMULQDQ and SSSE3 (PSHUFB); for its 256-bit variant also AVX2 and
// VPCLMULQDQ, with the OS saving the YMM state; for its 512-bit variant
// AVX-512 F and BW, BMI2 and VPCLMULQDQ, with the OS saving the ZMM and
// opmask state. Without the first, icrcShort takes the portable paths.
var (
	icrcHaveCLMUL, icrcMaxLevel = icrcCPUFeatures()

	// useICRCAsm reports whether icrcAsm20 may run, and icrcLevel which
	// variant icrcClmul20 takes (read by the assembly). They are variables
	// so that the tests can check every path on a machine that has them all.
	//
	// The default is at most the AVX2 variant. The AVX-512 one is a little
	// faster on spans read over and over (BenchmarkICRCAsmVariants), but its
	// first, byte-masked load starts up to 63 bytes before the span, and a
	// masked-off byte still brings its cache line in: in a DPDK mbuf that
	// line is the headroom, which nothing else touches, so every frame paid
	// a cache miss (swordbox middlebox bench --io ring: the engine's
	// ns/frame 260-284 with AVX-512 against 170-222 with AVX2 or SSE).
	useICRCAsm = icrcHaveCLMUL
	icrcLevel  = min(icrcMaxLevel, icrcLevelAVX2)
)

// The variants of icrcClmul20, by icrcLevel.
const (
	icrcLevelSSE    = 0 // 128-bit PCLMULQDQ, one block at a time
	icrcLevelAVX2   = 1 // 256-bit VPCLMULQDQ, two blocks
	icrcLevelAVX512 = 2 // 512-bit VPCLMULQDQ, four blocks, masked loads
)

// icrcClmulTab holds the constants and masks of the routines.
var icrcClmulTab = *makeClmulTables()

func icrcCPUFeatures() (clmul bool, level uint8) {
	maxLeaf, _, _, _ := icrcCPUID(0, 0)
	if maxLeaf < 1 {
		return false, 0
	}
	_, _, ecx1, _ := icrcCPUID(1, 0)
	const (
		pclmulqdq = 1 << 1  // CPUID.1:ECX
		ssse3     = 1 << 9  // CPUID.1:ECX
		osxsave   = 1 << 27 // CPUID.1:ECX
		avx       = 1 << 28 // CPUID.1:ECX
		avx2      = 1 << 5  // CPUID.7.0:EBX
		bmi2      = 1 << 8  // CPUID.7.0:EBX
		avx512f   = 1 << 16 // CPUID.7.0:EBX
		avx512bw  = 1 << 30 // CPUID.7.0:EBX
		vpclmulqd = 1 << 10 // CPUID.7.0:ECX
		xmmYmm    = 1<<1 | 1<<2
		zmmK      = 1<<5 | 1<<6 | 1<<7 // opmask, ZMM0-15 high halves, ZMM16-31
	)
	clmul = ecx1&pclmulqdq != 0 && ecx1&ssse3 != 0
	if !clmul || maxLeaf < 7 || ecx1&osxsave == 0 || ecx1&avx == 0 {
		return clmul, icrcLevelSSE
	}
	xcr0 := icrcXGETBV0()
	if xcr0&xmmYmm != xmmYmm {
		return clmul, icrcLevelSSE
	}
	_, ebx7, ecx7, _ := icrcCPUID(7, 0)
	if ebx7&avx2 == 0 || ecx7&vpclmulqd == 0 {
		return clmul, icrcLevelSSE
	}
	if ebx7&(avx512f|avx512bw|bmi2) != avx512f|avx512bw|bmi2 || xcr0&zmmK != zmmK {
		return clmul, icrcLevelAVX2
	}
	return clmul, icrcLevelAVX512
}

// icrcAsm20 is icrcShort for a 20-byte IPv4 header by carry-less multiply,
// reading l3 in place (nothing before l3[0] or from len(l3) on). The caller
// guarantees icrcFastMin <= len(l3) <= icrcFastMax and useICRCAsm.
func icrcAsm20(l3 []byte) uint32 { return icrc20(unsafe.SliceData(l3), len(l3)) }

// icrc20 returns the ICRC of the n bytes at p, a span with a 20-byte IPv4
// header (icrc_fast.go explains the method): by carry-less multiply, in the
// variant icrcLevel selects, when useICRCAsm and 40 <= n <= 256; otherwise
// by a tail call to icrc20Slow. It is ICRC20 without the slice.
//
//go:noescape
func icrc20(p *byte, n int) uint32

// icrcCPUID executes CPUID with the given EAX and ECX.
func icrcCPUID(eaxIn, ecxIn uint32) (eax, ebx, ecx, edx uint32)

// icrcXGETBV0 returns the low half of XCR0 (the OS-enabled state
// components); the caller checks OSXSAVE first.
func icrcXGETBV0() (eax uint32)
