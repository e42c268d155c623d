//go:build amd64

package roce

import "unsafe"

// The carry-less-multiply routine of icrc_amd64.s and the CPU features it
// needs: PCLMULQDQ and SSSE3 (PSHUFB); for its 256-bit variant also AVX2 and
// VPCLMULQDQ, with the OS saving the YMM state. Without the former,
// icrcShort takes the portable paths.
var (
	icrcHaveCLMUL, icrcHaveVPCLMUL = icrcCPUFeatures()

	// useICRCAsm reports whether icrcAsm20 may run, and icrcUseAVX whether
	// icrcClmul20 takes its 256-bit variant (read by the assembly). They are variables so that the tests can
	// check every path on a machine that has them all.
	useICRCAsm = icrcHaveCLMUL
	icrcUseAVX = icrcHaveVPCLMUL
)

// icrcClmulTab holds the constants and masks of the routines.
var icrcClmulTab = *makeClmulTables()

func icrcCPUFeatures() (clmul, vpclmul bool) {
	maxLeaf, _, _, _ := icrcCPUID(0, 0)
	if maxLeaf < 1 {
		return false, false
	}
	_, _, ecx1, _ := icrcCPUID(1, 0)
	const (
		pclmulqdq = 1 << 1  // CPUID.1:ECX
		ssse3     = 1 << 9  // CPUID.1:ECX
		osxsave   = 1 << 27 // CPUID.1:ECX
		avx       = 1 << 28 // CPUID.1:ECX
		avx2      = 1 << 5  // CPUID.7.0:EBX
		vpclmulqd = 1 << 10 // CPUID.7.0:ECX
		xmmYmm    = 1<<1 | 1<<2
	)
	clmul = ecx1&pclmulqdq != 0 && ecx1&ssse3 != 0
	if !clmul || maxLeaf < 7 || ecx1&osxsave == 0 || ecx1&avx == 0 || icrcXGETBV0()&xmmYmm != xmmYmm {
		return clmul, false
	}
	_, ebx7, ecx7, _ := icrcCPUID(7, 0)
	return clmul, ebx7&avx2 != 0 && ecx7&vpclmulqd != 0
}

// icrcAsm20 is icrcShort for a 20-byte IPv4 header by carry-less multiply,
// reading l3 in place (nothing before l3[0] or from len(l3) on). The caller
// guarantees icrcFastMin <= len(l3) <= icrcFastMax and useICRCAsm.
func icrcAsm20(l3 []byte) uint32 { return icrcClmul20(unsafe.SliceData(l3), len(l3)) }

// icrcClmul20 returns the ICRC of the n bytes at p, a span with a 20-byte
// IPv4 header, 40 <= n <= 256 (icrc_fast.go explains the method). It needs
// PCLMULQDQ and SSSE3, and with icrcUseAVX set also AVX2 and VPCLMULQDQ.
//
//go:noescape
func icrcClmul20(p *byte, n int) uint32

// icrcCPUID executes CPUID with the given EAX and ECX.
func icrcCPUID(eaxIn, ecxIn uint32) (eax, ebx, ecx, edx uint32)

// icrcXGETBV0 returns the low half of XCR0 (the OS-enabled state
// components); the caller checks OSXSAVE first.
func icrcXGETBV0() (eax uint32)

// icrcHaveAVX reports whether the CPU can run the 256-bit variant.
func icrcHaveAVX() bool { return icrcHaveVPCLMUL }
