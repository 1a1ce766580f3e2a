//go:build !noasm

#include "textflag.h"

// The wyrand constants, and the multiples 1..8 of the increment: the
// states of the next eight draws are s + k*C.
DATA lanesOffs<>+0(SB)/8, $0xa0761d6478bd642f
DATA lanesOffs<>+8(SB)/8, $0x40ec3ac8f17ac85e
DATA lanesOffs<>+16(SB)/8, $0xe162582d6a382c8d
DATA lanesOffs<>+24(SB)/8, $0x81d87591e2f590bc
DATA lanesOffs<>+32(SB)/8, $0x224e92f65bb2f4eb
DATA lanesOffs<>+40(SB)/8, $0xc2c4b05ad470591a
DATA lanesOffs<>+48(SB)/8, $0x633acdbf4d2dbd49
DATA lanesOffs<>+56(SB)/8, $0x03b0eb23c5eb2178
GLOBL lanesOffs<>(SB), RODATA|NOPTR, $64
DATA lanesInc4<>+0(SB)/8, $0x81d87591e2f590bc
GLOBL lanesInc4<>(SB), RODATA|NOPTR, $8
DATA lanesInc8<>+0(SB)/8, $0x03b0eb23c5eb2178
GLOBL lanesInc8<>(SB), RODATA|NOPTR, $8
DATA lanesD<>+0(SB)/8, $0xe7037ed1a0b428db
GLOBL lanesD<>(SB), RODATA|NOPTR, $8
DATA lanesM32<>+0(SB)/8, $0x00000000ffffffff
GLOBL lanesM32<>(SB), RODATA|NOPTR, $8

// WYMIX computes, in each 64-bit lane, v = hi ^ lo of the 128-bit product
// x * (x ^ D) from four 32x32-bit products:
// mid = (x0y0 >> 32) + lo32(x0y1) + lo32(x1y0),
// lo = mid << 32 | lo32(x0y0), hi = x1y1 + (x0y1 >> 32) + (x1y0 >> 32) + (mid >> 32).
// In: X (states), DREG (D), M (0xffffffff). Out: V. Clobbers T0-T7.
#define WYMIX(X, DREG, M, V, T0, T1, T2, T3, T4, T5, T6, AND, OR, XOR) \
	XOR DREG, X, T0; \
	VPSRLQ $32, X, T1; \
	VPSRLQ $32, T0, T2; \
	VPMULUDQ T0, X, T3; \
	VPMULUDQ T2, X, T4; \
	VPMULUDQ T0, T1, T5; \
	VPMULUDQ T2, T1, V; \
	VPSRLQ $32, T3, T6; \
	AND M, T4, T0; \
	VPADDQ T0, T6, T6; \
	AND M, T5, T0; \
	VPADDQ T0, T6, T6; \
	VPSRLQ $32, T4, T4; \
	VPSRLQ $32, T5, T5; \
	VPADDQ T4, V, V; \
	VPADDQ T5, V, V; \
	VPSRLQ $32, T6, T0; \
	VPADDQ T0, V, V; \
	VPSLLQ $32, T6, T6; \
	AND M, T3, T3; \
	OR T3, T6, T6; \
	XOR T6, V, V

// func lanes16AVX2(dst *uint16, draws int, s uint64)
// Writes the next draws (a multiple of 4) 64-bit draws of the stream at
// state s to dst, four at a time.
TEXT ·lanes16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ draws+8(FP), CX
	MOVQ s+16(FP), AX
	SHRQ $2, CX
	JZ   done2
	VMOVQ AX, X0
	VPBROADCASTQ X0, Y0
	VPADDQ lanesOffs<>(SB), Y0, Y0
	VPBROADCASTQ lanesInc4<>(SB), Y1
	VPBROADCASTQ lanesD<>(SB), Y2
	VPBROADCASTQ lanesM32<>(SB), Y3
loop2:
	WYMIX(Y0, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, VPAND, VPOR, VPXOR)
	VMOVDQU Y4, (DI)
	VPADDQ Y1, Y0, Y0
	ADDQ $32, DI
	DECQ CX
	JNZ  loop2
	VZEROUPPER
done2:
	RET

// func lanes16AVX512(dst *uint16, draws int, s uint64)
// As lanes16AVX2, eight draws at a time (draws a multiple of 8).
TEXT ·lanes16AVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ draws+8(FP), CX
	MOVQ s+16(FP), AX
	SHRQ $3, CX
	JZ   done5
	VPBROADCASTQ AX, Z0
	VPADDQ lanesOffs<>(SB), Z0, Z0
	VPBROADCASTQ lanesInc8<>(SB), Z1
	VPBROADCASTQ lanesD<>(SB), Z2
	VPBROADCASTQ lanesM32<>(SB), Z3
loop5:
	WYMIX(Z0, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, VPANDQ, VPORQ, VPXORQ)
	VMOVDQU64 Z4, (DI)
	VPADDQ Z1, Z0, Z0
	ADDQ $64, DI
	DECQ CX
	JNZ  loop5
	VZEROUPPER
done5:
	RET

// lanesBit holds, in the low byte of each 16-bit lane j of a YMM
// register, the bit 1 << (j%8); lanesByte, at offset 32K (K = 0..3), the
// shuffle that puts byte 2K + j/8 of a draw in that low byte (and zero in
// the high byte): lanes 16K..16K+15 of the draw.
DATA lanesBit<>+0(SB)/8, $0x0008000400020001
DATA lanesBit<>+8(SB)/8, $0x0080004000200010
DATA lanesBit<>+16(SB)/8, $0x0008000400020001
DATA lanesBit<>+24(SB)/8, $0x0080004000200010
GLOBL lanesBit<>(SB), RODATA|NOPTR, $32
DATA lanesByte<>+0(SB)/8, $0x8000800080008000
DATA lanesByte<>+8(SB)/8, $0x8000800080008000
DATA lanesByte<>+16(SB)/8, $0x8001800180018001
DATA lanesByte<>+24(SB)/8, $0x8001800180018001
DATA lanesByte<>+32(SB)/8, $0x8002800280028002
DATA lanesByte<>+40(SB)/8, $0x8002800280028002
DATA lanesByte<>+48(SB)/8, $0x8003800380038003
DATA lanesByte<>+56(SB)/8, $0x8003800380038003
DATA lanesByte<>+64(SB)/8, $0x8004800480048004
DATA lanesByte<>+72(SB)/8, $0x8004800480048004
DATA lanesByte<>+80(SB)/8, $0x8005800580058005
DATA lanesByte<>+88(SB)/8, $0x8005800580058005
DATA lanesByte<>+96(SB)/8, $0x8006800680068006
DATA lanesByte<>+104(SB)/8, $0x8006800680068006
DATA lanesByte<>+112(SB)/8, $0x8007800780078007
DATA lanesByte<>+120(SB)/8, $0x8007800780078007
GLOBL lanesByte<>(SB), RODATA|NOPTR, $128

// WYDRAW advances the state S by C and leaves the draw hi ^ lo of
// S * (S ^ D) in AX. Clobbers DX.
#define WYDRAW(S, C, D) \
	ADDQ C, S; \
	MOVQ S, AX; \
	MOVQ S, DX; \
	XORQ D, DX; \
	MULQ DX; \
	XORQ DX, AX

// BITS16AVX2 widens 16 bits of the draw broadcast in Y0, those the
// shuffle SHUF picks, to 16 lanes at DST: 0x8000 where the bit is set
// and 0 where it is clear. In: Y5 (lanesBit). Clobbers Y1.
#define BITS16AVX2(SHUF, DST) \
	VPSHUFB SHUF, Y0, Y1; \
	VPAND Y5, Y1, Y1; \
	VPCMPEQW Y5, Y1, Y1; \
	VPSLLW $15, Y1, Y1; \
	VMOVDQU Y1, DST

// func lanes1AVX2(dst *uint16, n int, s uint64)
// Writes the next n one-bit lanes of the stream at state s to dst, 64 a
// draw (a last partial draw consumed whole), widened to 16 bits (0x8000
// or 0).
TEXT ·lanes1AVX2(SB), NOSPLIT, $32-24
	MOVQ dst+0(FP), DI
	MOVQ n+8(FP), CX
	MOVQ s+16(FP), BX
	MOVQ $0xa0761d6478bd642f, R8
	MOVQ $0xe7037ed1a0b428db, R9
	VMOVDQU lanesBit<>(SB), Y5
	VMOVDQU lanesByte<>+0(SB), Y6
	VMOVDQU lanesByte<>+32(SB), Y7
	VMOVDQU lanesByte<>+64(SB), Y8
	VMOVDQU lanesByte<>+96(SB), Y9
	CMPQ CX, $64
	JB   tail1a
loop1a:
	WYDRAW(BX, R8, R9)
	VMOVQ AX, X0
	VPBROADCASTQ X0, Y0
	BITS16AVX2(Y6, 0(DI))
	BITS16AVX2(Y7, 32(DI))
	BITS16AVX2(Y8, 64(DI))
	BITS16AVX2(Y9, 96(DI))
	ADDQ $128, DI
	SUBQ $64, CX
	CMPQ CX, $64
	JAE  loop1a
tail1a:
	TESTQ CX, CX
	JZ   done1a
	// The last draw (CX < 64 lanes): whole groups of 16 lanes, each with
	// the next shuffle of lanesByte (R11), then the rest widened into the
	// frame and copied a lane at a time.
	WYDRAW(BX, R8, R9)
	VMOVQ AX, X0
	VPBROADCASTQ X0, Y0
	LEAQ lanesByte<>(SB), R11
group1a:
	VMOVDQU (R11), Y10
	CMPQ CX, $16
	JB   part1a
	BITS16AVX2(Y10, 0(DI))
	ADDQ $32, R11
	ADDQ $32, DI
	SUBQ $16, CX
	JMP  group1a
part1a:
	TESTQ CX, CX
	JZ   done1a
	BITS16AVX2(Y10, 0(SP))
	XORQ SI, SI
copy1a:
	MOVW (SP)(SI*2), AX
	MOVW AX, (DI)(SI*2)
	INCQ SI
	CMPQ SI, CX
	JB   copy1a
done1a:
	VZEROUPPER
	RET

// DRAW64AVX512 takes the next draw of the stream (state BX, constants R8
// and R9) and widens its 64 bits to lanes 0-31 in Z0 and 32-63 in Z1,
// 0x8000 where the bit is set and 0 where it is clear, from the mask
// registers K1 and K2 (AVX-512BW). Clobbers AX, DX.
#define DRAW64AVX512 \
	WYDRAW(BX, R8, R9); \
	KMOVQ AX, K1; \
	KSHIFTRQ $32, K1, K2; \
	VPMOVM2W K1, Z0; \
	VPMOVM2W K2, Z1; \
	VPSLLW $15, Z0, Z0; \
	VPSLLW $15, Z1, Z1

// func lanes1AVX512(dst *uint16, n int, s uint64)
// As lanes1AVX2, 32 lanes at a time from a mask register (AVX-512BW), a
// last partial group stored under a mask.
TEXT ·lanes1AVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ n+8(FP), CX
	MOVQ s+16(FP), BX
	MOVQ $0xa0761d6478bd642f, R8
	MOVQ $0xe7037ed1a0b428db, R9
	CMPQ CX, $64
	JB   tail1b
loop1b:
	DRAW64AVX512
	VMOVDQU16 Z0, (DI)
	VMOVDQU16 Z1, 64(DI)
	ADDQ $128, DI
	SUBQ $64, CX
	CMPQ CX, $64
	JAE  loop1b
tail1b:
	TESTQ CX, CX
	JZ   done1b
	DRAW64AVX512
	CMPQ CX, $32
	JB   part1b
	VMOVDQU16 Z0, (DI)
	VMOVDQA64 Z1, Z0
	ADDQ $64, DI
	SUBQ $32, CX
part1b:
	// CX < 32 lanes left: stored under the mask of CX ones (none: no
	// store, which would hold up a load of the bytes it spans).
	TESTQ CX, CX
	JZ   done1b
	MOVL $1, R10
	SHLL CX, R10
	DECL R10
	KMOVD R10, K3
	VMOVDQU16 Z0, K3, (DI)
done1b:
	VZEROUPPER
	RET

// The Floyd mask kernels' constants: splitmix64's (each multiplier's
// high half apart, for MUL64M), and, for AVX2's, wyrand's D, the low-half
// mask and zero four times (memory operands of a YMM width).
DATA floydGolden<>+0(SB)/8, $0x9e3779b97f4a7c15
GLOBL floydGolden<>(SB), RODATA|NOPTR, $8
DATA floydC1<>+0(SB)/8, $0xbf58476d1ce4e5b9
GLOBL floydC1<>(SB), RODATA|NOPTR, $8
DATA floydC1hi<>+0(SB)/8, $0xbf58476d
GLOBL floydC1hi<>(SB), RODATA|NOPTR, $8
DATA floydC2<>+0(SB)/8, $0x94d049bb133111eb
GLOBL floydC2<>(SB), RODATA|NOPTR, $8
DATA floydC2hi<>+0(SB)/8, $0x94d049bb
GLOBL floydC2hi<>(SB), RODATA|NOPTR, $8
DATA floydD4<>+0(SB)/8, $0xe7037ed1a0b428db
DATA floydD4<>+8(SB)/8, $0xe7037ed1a0b428db
DATA floydD4<>+16(SB)/8, $0xe7037ed1a0b428db
DATA floydD4<>+24(SB)/8, $0xe7037ed1a0b428db
GLOBL floydD4<>(SB), RODATA|NOPTR, $32
DATA floydM4<>+0(SB)/8, $0x00000000ffffffff
DATA floydM4<>+8(SB)/8, $0x00000000ffffffff
DATA floydM4<>+16(SB)/8, $0x00000000ffffffff
DATA floydM4<>+24(SB)/8, $0x00000000ffffffff
GLOBL floydM4<>(SB), RODATA|NOPTR, $32
DATA floydZero4<>+0(SB)/8, $0
DATA floydZero4<>+8(SB)/8, $0
DATA floydZero4<>+16(SB)/8, $0
DATA floydZero4<>+24(SB)/8, $0
GLOBL floydZero4<>(SB), RODATA|NOPTR, $32

// MUL64M sets each 64-bit lane of X to X * c (mod 2^64) for the constant
// c at CLO (its high half at CHI) from three 32x32-bit products:
// lo32(x)·lo32(c) + (lo32(x)·hi32(c) + hi32(x)·lo32(c)) << 32.
// Clobbers T0-T2.
#define MUL64M(X, CLO, CHI, T0, T1, T2) \
	VPBROADCASTQ CLO, T0; \
	VPBROADCASTQ CHI, T1; \
	VPSRLQ $32, X, T2; \
	VPMULUDQ T1, X, T1; \
	VPMULUDQ T0, T2, T2; \
	VPMULUDQ T0, X, X; \
	VPADDQ T2, T1, T1; \
	VPSLLQ $32, T1, T1; \
	VPADDQ T1, X, X

// MIX64 sets each 64-bit lane of X to Mix(X), splitmix64's finaliser
// (XOR: VPXOR, or VPXORQ for Z registers). Clobbers T0-T2.
#define MIX64(X, T0, T1, T2, XOR) \
	VPBROADCASTQ floydGolden<>(SB), T0; \
	VPADDQ T0, X, X; \
	VPSRLQ $30, X, T0; \
	XOR T0, X, X; \
	MUL64M(X, floydC1<>(SB), floydC1hi<>(SB), T0, T1, T2); \
	VPSRLQ $27, X, T0; \
	XOR T0, X, X; \
	MUL64M(X, floydC2<>(SB), floydC2hi<>(SB), T0, T1, T2); \
	VPSRLQ $31, X, T0; \
	XOR T0, X, X

// func floydMasks8AVX512(seeds, ds *[8]uint64, k int, masks *[8]uint64) (redo uint64)
// In each of eight lanes i: a Rand seeded with seeds[i] (Mix), then
// FloydMask(ds[i], k) into masks[i], for k >= 1 and k <= ds[i] <= 64
// (other lanes get unspecified masks). FloydMask's rejection step is left
// out: redo has bit i set where a bounded draw's low product was below its
// bound (a draw FloydMask may reject, with odds of about 2^-58), and such
// lanes must be drawn again one at a time.
TEXT ·floydMasks8AVX512(SB), NOSPLIT, $0-40
	MOVQ seeds+0(FP), SI
	MOVQ ds+8(FP), DI
	MOVQ k+16(FP), CX
	MOVQ masks+24(FP), R8
	// s = Mix(seed): splitmix64's finaliser.
	VMOVDQU64 (SI), Z0
	MIX64(Z0, Z8, Z9, Z10, VPXORQ)
	// Z2: j = d - k (the candidate's index), Z3: j + 1 (the bound), Z4:
	// ones, Z1: the mask, K1: lanes to draw again.
	VMOVDQU64 (DI), Z2
	VPBROADCASTQ CX, Z9
	VPSUBQ Z9, Z2, Z2
	MOVQ $1, AX
	VPBROADCASTQ AX, Z4
	VPADDQ Z4, Z2, Z3
	VPXORQ Z1, Z1, Z1
	KXORW K1, K1, K1
	MOVQ $0xa0761d6478bd642f, AX
	VPBROADCASTQ AX, Z5
	VPBROADCASTQ lanesD<>(SB), Z6
	VPBROADCASTQ lanesM32<>(SB), Z7
	TESTQ CX, CX
	JLE  floydOut
floydLoop:
	// x = the next draw; (hi, lo) = x * (j+1), hi the candidate.
	VPADDQ Z5, Z0, Z0
	WYMIX(Z0, Z6, Z7, Z8, Z10, Z11, Z12, Z13, Z14, Z15, Z16, VPANDQ, VPORQ, VPXORQ)
	VPSRLQ $32, Z8, Z9
	VPMULUDQ Z3, Z8, Z10
	VPMULUDQ Z3, Z9, Z11
	VPSRLQ $32, Z10, Z12
	VPADDQ Z12, Z11, Z12
	VPSRLQ $32, Z12, Z13
	VPSLLQ $32, Z11, Z14
	VPADDQ Z14, Z10, Z14
	VPCMPUQ $1, Z3, Z14, K2
	KORW K2, K1, K1
	// The candidate's bit, or j's where the candidate is taken.
	VPSLLVQ Z13, Z4, Z15
	VPTESTMQ Z1, Z15, K3
	VPSLLVQ Z2, Z4, K3, Z15
	VPORQ Z15, Z1, Z1
	VPADDQ Z4, Z2, Z2
	VPADDQ Z4, Z3, Z3
	DECQ CX
	JNZ  floydLoop
floydOut:
	VMOVDQU64 Z1, (R8)
	KMOVW K1, AX
	MOVQ AX, redo+32(FP)
	VZEROUPPER
	RET

// FLOYDSTEP2 is one Floyd draw of four lanes: state S, mask M, bound BD
// (j + 1); Y14 holds ones and Y15 wyrand's increment, Y1-Y8 are
// clobbered, and the lanes whose low product was below 64 go to R9's bits
// from SH on (through AX).
#define FLOYDSTEP2(S, M, BD, SH) \
	VPADDQ Y15, S, S; \
	WYMIX(S, floydD4<>(SB), floydM4<>(SB), Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, VPAND, VPOR, VPXOR); \
	VPSRLQ $32, Y1, Y2; \
	VPMULUDQ BD, Y1, Y3; \
	VPMULUDQ BD, Y2, Y4; \
	VPSRLQ $32, Y3, Y5; \
	VPADDQ Y5, Y4, Y5; \
	VPSRLQ $32, Y5, Y6; \
	VPSLLQ $32, Y4, Y7; \
	VPADDQ Y7, Y3, Y7; \
	VPSRLQ $6, Y7, Y7; \
	VPCMPEQQ floydZero4<>(SB), Y7, Y7; \
	VMOVMSKPD Y7, AX; \
	SHLQ $SH, AX; \
	ORQ AX, R9; \
	VPSLLVQ Y6, Y14, Y2; \
	VPAND M, Y2, Y3; \
	VPSRLVQ Y6, Y3, Y3; \
	VPSUBQ Y14, BD, Y4; \
	VPSLLVQ Y4, Y3, Y3; \
	VPOR Y2, M, M; \
	VPOR Y3, M, M; \
	VPADDQ Y14, BD, BD

// func floydMasks8AVX2(seeds, ds *[8]uint64, k int, masks *[8]uint64) (redo uint64)
// floydMasks8AVX512 with AVX2: lanes 0-3 and 4-7 in two sets of
// registers, their draws interleaved (one set alone waited on its chain
// of products: 65-67 ns for the eight lanes against 76-82 one at a time).
// AVX2 has no unsigned 64-bit compare, so redo flags a lane where a low
// product was below 64 (it is below its bound, at most 64, only then);
// and no masked shift, so a candidate already drawn is replaced by adding
// j's bit, made from the candidate's bit found in the mask:
// (mask & bit) >> t << j.
TEXT ·floydMasks8AVX2(SB), NOSPLIT, $0-40
	MOVQ seeds+0(FP), SI
	MOVQ ds+8(FP), DI
	MOVQ k+16(FP), CX
	MOVQ masks+24(FP), R8
	XORQ R9, R9                   // redo
	MOVQ $1, AX
	VMOVQ AX, X14
	VPBROADCASTQ X14, Y14         // ones
	VPBROADCASTQ lanesOffs<>(SB), Y15 // wyrand's increment
	// States Y0 and Y11: Rand.Seed's.
	VMOVDQU (SI), Y0
	VMOVDQU 32(SI), Y11
	MIX64(Y0, Y1, Y2, Y3, VPXOR)
	MIX64(Y11, Y1, Y2, Y3, VPXOR)
	// Bounds Y10 and Y13: j + 1 = d - k + 1; masks Y9 and Y12.
	VMOVQ CX, X1
	VPBROADCASTQ X1, Y1
	VPSUBQ Y14, Y1, Y1
	VMOVDQU (DI), Y10
	VMOVDQU 32(DI), Y13
	VPSUBQ Y1, Y10, Y10
	VPSUBQ Y1, Y13, Y13
	VPXOR Y9, Y9, Y9
	VPXOR Y12, Y12, Y12
	TESTQ CX, CX
	JLE floydOut2
floydLoop2:
	FLOYDSTEP2(Y0, Y9, Y10, 0)
	FLOYDSTEP2(Y11, Y12, Y13, 4)
	DECQ CX
	JNZ  floydLoop2
floydOut2:
	VMOVDQU Y9, (R8)
	VMOVDQU Y12, 32(R8)
	MOVQ R9, redo+32(FP)
	VZEROUPPER
	RET

// SEEDMIX sets R to Mix(R) (splitmix64's finaliser); clobbers AX.
#define SEEDMIX(R) \
	ADDQ floydGolden<>(SB), R; \
	MOVQ R, AX; \
	SHRQ $30, AX; \
	XORQ AX, R; \
	IMULQ floydC1<>(SB), R; \
	MOVQ R, AX; \
	SHRQ $27, AX; \
	XORQ AX, R; \
	IMULQ floydC2<>(SB), R; \
	MOVQ R, AX; \
	SHRQ $31, AX; \
	XORQ AX, R

// FLOYDSCALAR is one Floyd draw of one lane: state S, mask M, bound BD
// (j + 1); a low product below the bound jumps to REDO, which returns to
// BACK. Clobbers AX, DX.
#define FLOYDSCALAR(S, M, BD, REDO, BACK) \
	ADDQ lanesOffs<>(SB), S; \
	MOVQ S, AX; \
	XORQ floydD4<>(SB), AX; \
	MULQ S; \
	XORQ DX, AX; \
	MULQ BD; \
	CMPQ AX, BD; \
	JCS REDO; \
BACK: \
	LEAQ -1(BD), AX; \
	BTQ DX, M; \
	CMOVQCS AX, DX; \
	BTSQ DX, M; \
	INCQ BD

// LANESEED loads lane L's seed and degree into S and BD, and sets S to
// Mix(S), BD to d-k+1 and M to 0 (k in k+16(FP)); clobbers AX.
#define LANESEED(L, S, M, BD) \
	MOVQ seeds+0(FP), AX; \
	MOVQ (8*(L))(AX), S; \
	MOVQ ds+8(FP), AX; \
	MOVQ (8*(L))(AX), BD; \
	SUBQ k+16(FP), BD; \
	INCQ BD; \
	XORQ M, M; \
	SEEDMIX(S)

// FLOYD4 draws lanes L..L+3 side by side (their draws interleaved, so
// that the core overlaps four chains of products).
#define FLOYD4(L, LOOP, R0, B0, R1, B1, R2, B2, R3, B3) \
	LANESEED(L, R8, R9, R10); \
	LANESEED(L+1, R11, R12, R13); \
	LANESEED(L+2, SI, DI, R14); \
	LANESEED(L+3, R15, BX, CX); \
	MOVQ k+16(FP), AX; \
	MOVQ AX, left-8(SP); \
LOOP: \
	FLOYDSCALAR(R8, R9, R10, R0, B0); \
	FLOYDSCALAR(R11, R12, R13, R1, B1); \
	FLOYDSCALAR(SI, DI, R14, R2, B2); \
	FLOYDSCALAR(R15, BX, CX, R3, B3); \
	DECQ left-8(SP); \
	JNZ LOOP; \
	MOVQ masks+24(FP), AX; \
	MOVQ R9, (8*(L))(AX); \
	MOVQ R12, (8*(L)+8)(AX); \
	MOVQ DI, (8*(L)+16)(AX); \
	MOVQ BX, (8*(L)+24)(AX)

// REDOBIT is the out-of-line stub R of a lane whose draw may be
// rejected: it sets the lane's BIT in redo and goes back to B.
#define REDOBIT(R, BIT, B) \
R: \
	ORQ $BIT, redo+32(FP); \
	JMP B

// func floydMasks8Scalar(seeds, ds *[8]uint64, k int, masks *[8]uint64) (redo uint64)
// floydMasks8AVX512 in scalar code (MULQ's 128-bit products), four lanes
// side by side, for CPUs whose 256-bit vectors run as two 128-bit halves
// (isa.HalfWidth256): there AVX2's 32x32-bit vector products cost more
// than one MULQ each. redo flags exactly the lanes where a low product
// was below its bound. Measured (AMD EPYC Zen 1, family 17h model 1,
// BenchmarkFloydMasks8, eight FloydMask(20, 5) lanes with their seeding):
// 122-124 ns against AVX2's 154-155 (two lanes side by side: 126, one at
// a time in this code: 165, in Go: 195).
TEXT ·floydMasks8Scalar(SB), NOSPLIT, $8-40
	MOVQ $0, redo+32(FP)
	CMPQ k+16(FP), $0
	JLE zeroS
	FLOYD4(0, loop0, r0, b0, r1, b1, r2, b2, r3, b3)
	FLOYD4(4, loop4, r4, b4, r5, b5, r6, b6, r7, b7)
	RET
zeroS:
	MOVQ masks+24(FP), AX
	MOVQ $0, (AX)
	MOVQ $0, 8(AX)
	MOVQ $0, 16(AX)
	MOVQ $0, 24(AX)
	MOVQ $0, 32(AX)
	MOVQ $0, 40(AX)
	MOVQ $0, 48(AX)
	MOVQ $0, 56(AX)
	RET
	REDOBIT(r0, 1, b0)
	REDOBIT(r1, 2, b1)
	REDOBIT(r2, 4, b2)
	REDOBIT(r3, 8, b3)
	REDOBIT(r4, 16, b4)
	REDOBIT(r5, 32, b5)
	REDOBIT(r6, 64, b6)
	REDOBIT(r7, 128, b7)
