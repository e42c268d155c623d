//go:build !amd64

package roce

// There is no carry-less-multiply routine for this architecture: icrcShort
// takes the portable paths. The variables exist so that the tests build
// unchanged.
var (
	useICRCAsm   = false
	icrcLevel    uint8
	icrcMaxLevel uint8
)

// icrcClmulTab is the amd64 routine's tables, unused here (and left zero):
// it exists so that the tests that poison it build unchanged.
var icrcClmulTab clmulTables

// The variant levels of the amd64 routine, for the tests.
const (
	icrcLevelSSE    = 0
	icrcLevelAVX2   = 1
	icrcLevelAVX512 = 2
)

// icrc20 is ICRC20 without the slice: here, the portable path.
func icrc20(p *byte, n int) uint32 { return icrc20Slow(p, n) }

// icrcAsm20 is never called where useICRCAsm is false; it is the portable
// path so that the tests run unchanged.
func icrcAsm20(l3 []byte) uint32 { return icrcInPlace(l3, IPv4MinLen) }
