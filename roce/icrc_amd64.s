//go:build amd64

#include "textflag.h"

// Carry-less-multiply ICRC for spans of 40..256 bytes with a 20-byte IPv4
// header: the method and the tables are described in icrc_fast.go. The
// variants (128-, 256- and 512-bit, by icrcLevel) read the span in place,
// from p to p+n-1 and nothing else: in the first two the leading partial
// block is one 16-byte load from p shuffled and the whole blocks follow it
// (the 256-bit one takes spans up to 128 bytes by a straight-line path that
// shuffles a leading partial pair instead); the third reads 64-byte chunks
// that end at the span's end, the first one byte-masked (masked-off bytes
// are not accessed).

// Field offsets of clmulTables (icrc_fast.go; checked by TestICRCClmulTables).
#define OFF_RED 256
#define OFF_SHUF 272
#define OFF_SHORT_T 304
#define OFF_SHORT_U 337
#define OFF_MASK 448
#define OFF_ZERO 512
#define OFF_ZERO_INV 576

// SETUP loads the tables and splits the span (SI = p, CX = n): R8 = the
// tables, DX = k = n%16, CX = F = n/16 (whole blocks), R9 = &kr[16-B] where
// B = F + (k > 0), the constants of the first block.
#define SETUP \
	LEAQ ·icrcClmulTab(SB), R8; \
	MOVQ CX, DX; \
	ANDQ $15, DX; \
	SHRQ $4, CX; \
	MOVQ $15, R9; \
	SUBQ CX, R9; \
	CMPQ DX, $1; \
	ADCQ $0, R9; \
	SHLQ $4, R9; \
	ADDQ R8, R9

// FOLD adds the contribution of the block in X1, whose constants R9 points
// to, into the accumulators X0 and X4, then moves to the next block: SI and
// R9 forward, CX (whole blocks left) down, setting the flags.
#define FOLD \
	MOVOU   (R9), X3; \
	MOVO    X1, X2; \
	PCLMULQDQ $0x00, X3, X1; \
	PCLMULQDQ $0x11, X3, X2; \
	PXOR    X1, X0; \
	PXOR    X2, X4; \
	ADDQ    $16, SI; \
	ADDQ    $16, R9; \
	DECQ    CX

// PAIR adds the contributions of the two blocks in Y1 (constants at R9) into
// Y0 and Y4 and moves SI and R9 on by two blocks, CX (blocks left) down by
// two.
#define PAIR \
	VPCLMULQDQ $0x00, (R9), Y1, Y2; \
	VPCLMULQDQ $0x11, (R9), Y1, Y1; \
	VPXOR   Y2, Y0, Y0; \
	VPXOR   Y1, Y4, Y4; \
	ADDQ    $32, SI; \
	ADDQ    $32, R9; \
	SUBQ    $2, CX

// AVX_REDUCE returns the ICRC from T in X0 (congruent to M*x^32, degree <=
// 94, in bits 33..127; R8 = the tables): Barrett with a 64-bit quotient. A =
// T >> 32 (bits 33..95 of T: T = A*x^32 + B) is reflected-64; the low
// quadword of clmul(A, mu) is q = floor(T/P); the remainder is B ^ (q*P' mod
// x^32), the latter bits 31..62 of the high quadword of clmul(q, P'). B and
// the initial state's share, inverted (zeroInv[n]; CX = n), are combined off
// the critical path. Then VZEROUPPER and return.
#define AVX_REDUCE \
	VPSRLDQ $4, X0, X1; \
	VPCLMULQDQ $0x00, OFF_RED(R8), X1, X1; \
	VPEXTRD $3, X0, BX; \
	XORL    OFF_ZERO_INV(R8)(CX*4), BX; \
	VPCLMULQDQ $0x10, OFF_RED(R8), X1, X1; \
	VPEXTRQ $1, X1, AX; \
	SHRQ    $31, AX; \
	XORL    BX, AX; \
	VZEROUPPER; \
	MOVL    AX, ret+16(FP); \
	RET

// func icrc20(p *byte, n int) uint32
//
// The ICRC of the n bytes at p: R(0, masked span) by carry-less multiply,
// in the variant icrcLevel selects, then inverted and XORed with
// icrcZeroK[n] (the initial state's share). Spans outside 40..256 bytes, and
// every span when useICRCAsm is false, go to icrc20Slow (a tail call: the
// arguments are where it expects them).
TEXT ·icrc20(SB), NOSPLIT, $0-20
	MOVQ n+8(FP), CX
	LEAQ -40(CX), AX
	CMPQ AX, $216                // n-40 > 256-40, unsigned: n < 40 or n > 256
	JA   slow
	CMPB ·useICRCAsm(SB), $0
	JE   slow
	MOVQ p+0(FP), SI
	MOVBLZX ·icrcLevel(SB), AX
	CMPQ AX, $1
	JE   avx
	JA   avx512

	// SSE: one block at a time.
	SETUP
	PXOR X0, X0
	PXOR X4, X4
	TESTQ DX, DX
	JZ   sse_whole

	// Leading block 0^(16-k) || m[0:k]: load m[0:16] (n >= 16), mask it,
	// shift its first k bytes to the top with the window shuf[k:k+16].
	MOVOU (SI), X1
	MOVOU OFF_MASK(R8), X2
	POR   X2, X1
	MOVOU OFF_SHUF(R8)(DX*1), X2
	PSHUFB X2, X1
	MOVOU (R9), X3
	MOVO  X1, X2
	PCLMULQDQ $0x00, X3, X1
	PCLMULQDQ $0x11, X3, X2
	PXOR  X1, X0
	PXOR  X2, X4
	ADDQ  $16, R9

sse_whole:
	// Whole blocks from span offset k. The masked bytes (offsets <= 32) lie
	// in the first two, or three when k = 0; R10 walks the mask from k.
	LEAQ OFF_MASK(R8)(DX*1), R10
	ADDQ DX, SI
	MOVOU (SI), X1
	MOVOU (R10), X2
	POR   X2, X1
	FOLD
	MOVOU (SI), X1
	MOVOU 16(R10), X2
	POR   X2, X1
	FOLD
	JZ    sse_reduce
	MOVOU (SI), X1
	MOVOU 32(R10), X2
	POR   X2, X1
	FOLD
	JZ    sse_reduce

sse_loop:
	MOVOU (SI), X1
	FOLD
	JNZ   sse_loop

sse_reduce:
	// T = X0 ^ X4; then as AVX_REDUCE, in SSE2 (no PEXTRD/PEXTRQ, which
	// are SSE4.1).
	PXOR  X4, X0
	MOVO  X0, X1
	PSRLDQ $4, X1                // A
	MOVOU OFF_RED(R8), X3
	PCLMULQDQ $0x00, X3, X1      // q = clmul(A, mu), low quadword
	PSHUFD $0xff, X0, X0
	MOVL  X0, BX                 // B
	MOVQ  n+8(FP), CX
	XORL  OFF_ZERO_INV(R8)(CX*4), BX
	PCLMULQDQ $0x10, X3, X1      // clmul(q, P')
	PSRLDQ $8, X1
	MOVQ  X1, AX
	SHRQ  $31, AX
	XORL  BX, AX
	MOVL  AX, ret+16(FP)
	RET

avx:
	// AVX2 + VPCLMULQDQ: the same sums, two blocks per instruction.
	CMPQ  CX, $128
	JA    avx_long

	// Spans of 40..128 bytes, straight-line. The span is P = (n-1)/32
	// (1..3) whole pairs ending at its end, at p+r+32i (i < P), after a
	// leading partial pair of r = n-32P (1..32) bytes, read as the 32
	// bytes 0^(32-r) || m[0:r]. Its low block 0^(32-r) || m[0:r-16] (zero
	// when r <= 16) is m[0:16] shuffled by the window shuf[t], t = max(r-16,
	// 0); its high block m[r-16:r] (when r >= 16) or 0^(16-r) || m[0:r] is
	// the 16 bytes at p+t shuffled by the window shuf[u], u = min(r, 16)
	// (the identity when u = 16). The pairs take the constants from K =
	// &kr[14-2P] on, 32 bytes each. The masks (span offsets <= 32) fall in
	// the partial pair and the first whole pair. Only the second and third
	// whole pairs are behind a branch (P > 1, P > 2).
	LEAQ  ·icrcClmulTab(SB), R8
	LEAQ  -1(CX), AX
	ANDQ  $-32, AX               // 32P
	MOVQ  CX, DX
	SUBQ  AX, DX                 // r
	LEAQ  224(R8), R9
	SUBQ  AX, R9                 // K
	MOVBLZX OFF_SHORT_T(R8)(DX*1), R10 // t
	MOVBLZX OFF_SHORT_U(R8)(DX*1), R12 // u
	VMOVDQU (SI), X1
	VPOR    OFF_MASK(R8), X1, X1
	VPSHUFB OFF_SHUF(R8)(R10*1), X1, X1
	VMOVDQU (SI)(R10*1), X2
	VPOR    OFF_MASK(R8)(R10*1), X2, X2
	VPSHUFB OFF_SHUF(R8)(R12*1), X2, X2
	VINSERTI128 $1, X2, Y1, Y1
	VMOVDQU (SI)(DX*1), Y2
	VPOR    OFF_MASK(R8)(DX*1), Y2, Y2
	VPCLMULQDQ $0x00, (R9), Y1, Y0
	VPCLMULQDQ $0x11, (R9), Y1, Y1
	VPCLMULQDQ $0x00, 32(R9), Y2, Y4
	VPCLMULQDQ $0x11, 32(R9), Y2, Y2
	VPXOR   Y1, Y0, Y0
	VPXOR   Y2, Y4, Y4
	VPXOR   Y4, Y0, Y0
	CMPQ    AX, $32
	JE      short_lanes          // P = 1
	VMOVDQU 32(SI)(DX*1), Y3
	VPCLMULQDQ $0x00, 64(R9), Y3, Y6
	VPCLMULQDQ $0x11, 64(R9), Y3, Y3
	VPXOR   Y3, Y6, Y6
	VPXOR   Y6, Y0, Y0
	CMPQ    AX, $64
	JE      short_lanes          // P = 2
	VMOVDQU 64(SI)(DX*1), Y5
	VPCLMULQDQ $0x00, 96(R9), Y5, Y7
	VPCLMULQDQ $0x11, 96(R9), Y5, Y5
	VPXOR   Y5, Y7, Y7
	VPXOR   Y7, Y0, Y0

short_lanes:
	VEXTRACTI128 $1, Y0, X1
	VPXOR   X1, X0, X0
	AVX_REDUCE

avx_long:
	SETUP
	VPXOR Y0, Y0, Y0
	VPXOR Y4, Y4, Y4
	LEAQ  OFF_MASK(R8)(DX*1), R10 // mask window at span offset k
	TESTQ DX, DX
	JZ    avx_aligned

	// First pair: the leading block 0^(16-k) || m[0:k] (as in the SSE
	// routine) and the first whole block, at span offset k.
	VMOVDQU (SI), X1
	VPOR    OFF_MASK(R8), X1, X1
	VPSHUFB OFF_SHUF(R8)(DX*1), X1, X1
	ADDQ    DX, SI
	VMOVDQU (SI), X2
	VPOR    (R10), X2, X2
	VINSERTI128 $1, X2, Y1, Y1
	SUBQ    $16, SI               // PAIR moves on by 32
	SUBQ    $16, R10
	INCQ    CX                    // blocks left, counting the leading one
	JMP     avx_first

avx_aligned:
	VMOVDQU (SI), Y1
	VPOR    (R10), Y1, Y1

avx_first:
	PAIR
	ADDQ    $32, R10
	// At least one block is left (n >= 40). The next pair, or the single
	// block left, may still hold masked bytes (span offsets up to 32).
	CMPQ    CX, $2
	JB      avx_lanes
	VMOVDQU (SI), Y1
	VPOR    (R10), Y1, Y1
	PAIR
	LEAQ    OFF_ZERO(R8), R10     // no masked bytes further on

avx_pairs:
	CMPQ    CX, $2
	JB      avx_lanes
	VMOVDQU (SI), Y1
	PAIR
	JMP     avx_pairs

avx_lanes:
	// Add the high lanes into the low ones; then the single block left, if
	// any (its mask window at R10).
	VPXOR   Y4, Y0, Y0
	VEXTRACTI128 $1, Y0, X4
	VPXOR   X4, X0, X0
	TESTQ   CX, CX
	JZ      avx_reduce
	VMOVDQU (SI), X1
	VPOR    (R10), X1, X1
	VPCLMULQDQ $0x00, (R9), X1, X2
	VPCLMULQDQ $0x11, (R9), X1, X1
	VPXOR   X2, X0, X0
	VPXOR   X1, X0, X0

avx_reduce:
	MOVQ    n+8(FP), CX          // CX counted blocks
	AVX_REDUCE

avx512:
	// AVX-512 + VPCLMULQDQ: four blocks per instruction, in C = n'/64
	// chunks of the message m' = 0^z || m (z = -n mod 16, n' = n + z
	// rounded up to 64) that end at the span's end. The first chunk is
	// loaded byte-masked from p + s0, s0 = n - 64C in -63..0: the bytes
	// before p are masked off, so they are neither read (masked-off bytes
	// do not fault) nor counted (they load as zeros), and its lanes before
	// the first block take constants that multiply zeros. The masks of the
	// variant fields (span offsets up to 32) are ORed into the first two
	// chunks.
	LEAQ ·icrcClmulTab(SB), R8
	MOVQ CX, DX
	NEGQ DX
	ANDQ $15, DX                 // z
	LEAQ 63(CX)(DX*1), R11
	ANDQ $-64, R11               // 64C
	LEAQ 256(R8), R9
	SUBQ R11, R9                 // R9 = &kr[16-4C]
	MOVQ CX, BX
	SUBQ R11, BX                 // s0
	MOVQ BX, R12
	NEGQ R12
	MOVQ $-1, AX
	SHLXQ R12, AX, AX            // bytes -s0..63 of the chunk
	KMOVQ AX, K1
	ADDQ BX, SI                  // p + s0
	LEAQ OFF_MASK(R8)(BX*1), R10 // mask window at span offset s0
	VMOVDQU8.Z (SI), K1, Z1
	VPORQ   (R10), Z1, Z1
	VPCLMULQDQ $0x00, (R9), Z1, Z0
	VPCLMULQDQ $0x11, (R9), Z1, Z4
	SHRQ    $6, R11              // C
	DECQ    R11
	JZ      avx512_lanes
	ADDQ    $64, SI
	ADDQ    $64, R9
	VMOVDQU64 (SI), Z1
	VPORQ   64(R10), Z1, Z1
	VPCLMULQDQ $0x00, (R9), Z1, Z2
	VPCLMULQDQ $0x11, (R9), Z1, Z1
	VPXORQ  Z2, Z0, Z0
	VPXORQ  Z1, Z4, Z4
	DECQ    R11
	JZ      avx512_lanes

avx512_chunk:
	ADDQ    $64, SI
	ADDQ    $64, R9
	VMOVDQU64 (SI), Z1
	VPCLMULQDQ $0x00, (R9), Z1, Z2
	VPCLMULQDQ $0x11, (R9), Z1, Z1
	VPXORQ  Z2, Z0, Z0
	VPXORQ  Z1, Z4, Z4
	DECQ    R11
	JNZ     avx512_chunk

avx512_lanes:
	VPXORQ  Z4, Z0, Z0
	VEXTRACTI64X4 $1, Z0, Y1
	VPXOR   Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPXOR   X1, X0, X0
	AVX_REDUCE                   // CX = n still

slow:
	JMP ·icrc20Slow(SB)

// func icrcCPUID(eaxIn, ecxIn uint32) (eax, ebx, ecx, edx uint32)
TEXT ·icrcCPUID(SB), NOSPLIT, $0-24
	MOVL eaxIn+0(FP), AX
	MOVL ecxIn+4(FP), CX
	CPUID
	MOVL AX, eax+8(FP)
	MOVL BX, ebx+12(FP)
	MOVL CX, ecx+16(FP)
	MOVL DX, edx+20(FP)
	RET

// func icrcXGETBV0() (eax uint32)
TEXT ·icrcXGETBV0(SB), NOSPLIT, $0-4
	MOVL $0, CX
	XGETBV
	MOVL AX, eax+0(FP)
	RET
