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
	MOVQ AX, X0
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
