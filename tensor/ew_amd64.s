//go:build amd64 && !noasm

#include "textflag.h"

// Element-wise AVX2 kernels of the fused epilogues (hand-written; the
// GEMM micro-kernels are generated into kernels_amd64.s).

// func biasReLUAVX2(n int, x, b *float32, mode int)
// x[i] = act(x[i] + b[i]) for i < n&^7; mode bit 0: add b, bit 1: ReLU
// (max(0, v), which keeps a NaN).
TEXT ·biasReLUAVX2(SB), NOSPLIT, $0-32
	MOVQ n+0(FP), CX
	MOVQ x+8(FP), DI
	MOVQ b+16(FP), SI
	MOVQ mode+24(FP), DX
	VXORPS Y15, Y15, Y15
	SHRQ $3, CX
	JZ biasReLU_done
	CMPQ DX, $1
	JEQ biasReLU_bias
	CMPQ DX, $2
	JEQ biasReLU_relu
biasReLU_both:
	VMOVUPS (DI), Y0
	VADDPS (SI), Y0, Y0
	VMAXPS Y0, Y15, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	DECQ CX
	JNZ biasReLU_both
	JMP biasReLU_done
biasReLU_bias:
	VMOVUPS (DI), Y0
	VADDPS (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	DECQ CX
	JNZ biasReLU_bias
	JMP biasReLU_done
biasReLU_relu:
	VMOVUPS (DI), Y0
	VMAXPS Y0, Y15, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	DECQ CX
	JNZ biasReLU_relu
biasReLU_done:
	VZEROUPPER
	RET

// func reluMaskAVX2(n int, o, dy, y *float32, scale float32)
// o[i] = g[i]*scale where y[i] > 0, else 0, for i < n&^7.
TEXT ·reluMaskAVX2(SB), NOSPLIT, $0-36
	MOVQ n+0(FP), CX
	MOVQ o+8(FP), DI
	MOVQ dy+16(FP), SI
	MOVQ y+24(FP), DX
	VBROADCASTSS scale+32(FP), Y14
	VXORPS Y15, Y15, Y15
	SHRQ $3, CX
	JZ reluMask_done
reluMask_loop:
	VMOVUPS (DX), Y1
	VCMPPS $14, Y15, Y1, Y2
	VMULPS (SI), Y14, Y3
	VANDPS Y3, Y2, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, DX
	DECQ CX
	JNZ reluMask_loop
reluMask_done:
	VZEROUPPER
	RET

// func dropoutAVX2(n int, d, s *float32, lanes *uint16, thrm1 int32, keep float32)
// d[i] = s[i] * (lanes[i] > thrm1 ? keep : 0) for i < n&^15 (lanes are the
// 16-bit draws, zero-extended and compared as int32).
TEXT ·dropoutAVX2(SB), NOSPLIT, $0-40
	MOVQ n+0(FP), CX
	MOVQ d+8(FP), DI
	MOVQ s+16(FP), SI
	MOVQ lanes+24(FP), DX
	MOVL thrm1+32(FP), AX
	VMOVQ AX, X14
	VPBROADCASTD X14, Y14
	VBROADCASTSS keep+36(FP), Y13
	SHRQ $4, CX
	JZ dropout_done
dropout_loop:
	VPMOVZXWD (DX), Y0
	VPMOVZXWD 16(DX), Y1
	VPCMPGTD Y14, Y0, Y0
	VPCMPGTD Y14, Y1, Y1
	VANDPS Y13, Y0, Y0
	VANDPS Y13, Y1, Y1
	VMULPS (SI), Y0, Y0
	VMULPS 32(SI), Y1, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ $64, DI
	ADDQ $64, SI
	ADDQ $32, DX
	DECQ CX
	JNZ dropout_loop
dropout_done:
	VZEROUPPER
	RET

// func dropoutAVX512(n int, d, s *float32, lanes *uint16, thrm1 int32, keep float32)
// dropoutAVX2 for i < n&^31, sixteen elements a vector: the factor (keep
// where lanes[i] > thrm1, else +0) is made under a mask register and
// multiplies s[i], as dropoutAVX2's does.
TEXT ·dropoutAVX512(SB), NOSPLIT, $0-40
	MOVQ n+0(FP), CX
	MOVQ d+8(FP), DI
	MOVQ s+16(FP), SI
	MOVQ lanes+24(FP), DX
	MOVL thrm1+32(FP), AX
	VPBROADCASTD AX, Z14
	VBROADCASTSS keep+36(FP), Z13
	SHRQ $5, CX
	JZ dropout512_done
dropout512_loop:
	VPMOVZXWD (DX), Z0
	VPMOVZXWD 32(DX), Z1
	VPCMPGTD Z14, Z0, K1
	VPCMPGTD Z14, Z1, K2
	VMOVAPS.Z Z13, K1, Z2
	VMOVAPS.Z Z13, K2, Z3
	VMULPS (SI), Z2, Z2
	VMULPS 64(SI), Z3, Z3
	VMOVUPS Z2, (DI)
	VMOVUPS Z3, 64(DI)
	ADDQ $128, DI
	ADDQ $128, SI
	ADDQ $64, DX
	DECQ CX
	JNZ dropout512_loop
dropout512_done:
	VZEROUPPER
	RET

// func positiveAVX2(n int, dst *uint8, seg *float32)
// dst[i] = the sign bits of seg[8i:8i+8] > 0 (ordered compare: NaN is not
// > 0), bit k for element 8i+k, for i < n/8.
TEXT ·positiveAVX2(SB), NOSPLIT, $0-24
	MOVQ n+0(FP), CX
	MOVQ dst+8(FP), DI
	MOVQ seg+16(FP), SI
	VXORPS Y15, Y15, Y15
	SHRQ $3, CX
	JZ positive_done
positive_loop:
	VMOVUPS (SI), Y0
	VCMPPS $14, Y15, Y0, Y1
	VMOVMSKPS Y1, AX
	MOVB AX, (DI)
	ADDQ $32, SI
	INCQ DI
	DECQ CX
	JNZ positive_loop
positive_done:
	VZEROUPPER
	RET

// bitSelect is the dwords 1, 2, 4, ..., 128: lane k tests bit k of a byte.
DATA bitSelect<>+0(SB)/4, $1
DATA bitSelect<>+4(SB)/4, $2
DATA bitSelect<>+8(SB)/4, $4
DATA bitSelect<>+12(SB)/4, $8
DATA bitSelect<>+16(SB)/4, $16
DATA bitSelect<>+20(SB)/4, $32
DATA bitSelect<>+24(SB)/4, $64
DATA bitSelect<>+28(SB)/4, $128
GLOBL bitSelect<>(SB), RODATA|NOPTR, $32

// func reluMaskBitsAVX2(n int, o, dy *float32, bits *uint8, scale float32)
// o[i] = dy[i]*scale where bit i%8 of bits[i/8] is set, +0 elsewhere
// (the product ANDed with the lane's mask, as reluMaskAVX2 does), for
// i < n&^7.
TEXT ·reluMaskBitsAVX2(SB), NOSPLIT, $0-36
	MOVQ n+0(FP), CX
	MOVQ o+8(FP), DI
	MOVQ dy+16(FP), SI
	MOVQ bits+24(FP), DX
	VBROADCASTSS scale+32(FP), Y14
	VMOVDQU bitSelect<>(SB), Y13
	SHRQ $3, CX
	JZ reluMaskBits_done
reluMaskBits_loop:
	VPBROADCASTB (DX), Y0
	VPAND Y13, Y0, Y0
	VPCMPEQD Y13, Y0, Y0
	VMULPS (SI), Y14, Y1
	VANDPS Y1, Y0, Y1
	VMOVUPS Y1, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	INCQ DX
	DECQ CX
	JNZ reluMaskBits_loop
reluMaskBits_done:
	VZEROUPPER
	RET

// func reluMaskBitsPackAVX2(dst, dy *float32, bits *uint8, ld, bstride, rows, panels, nr, stride int, scale float32, db *float32)
// For each panel q < panels, each vector of eight columns c of it and each
// row r < rows, in that order: v = dy*scale where the bit of (r, q*nr+c)
// is set (bits[r*bstride + (q*nr+c)/8], bit k for column +k), +0
// elsewhere, for dy at r*ld + q*nr + c (floats); v is stored to dst at
// q*stride + r*nr + c (floats) and, when db is not nil, added to db at
// q*nr + c, row after row (each db value gets its rows in row order).
TEXT ·reluMaskBitsPackAVX2(SB), NOSPLIT, $0-88
	MOVQ dst+0(FP), DI
	MOVQ dy+8(FP), SI
	MOVQ bits+16(FP), DX
	MOVQ ld+24(FP), R8
	SHLQ $2, R8
	MOVQ panels+48(FP), R10
	MOVQ nr+56(FP), R11
	SHLQ $2, R11
	MOVQ stride+64(FP), R12
	SHLQ $2, R12
	VBROADCASTSS scale+72(FP), Y14
	MOVQ db+80(FP), R13
	VMOVDQU bitSelect<>(SB), Y13
	XORQ R15, R15 // the vector's byte offset in dy's and db's rows
	MOVQ rows+40(FP), R9
	TESTQ R9, R9
	JLE rmbp_done
	TESTQ R10, R10
	JLE rmbp_done
rmbp_panel:
	XORQ R14, R14 // the vector's byte offset in the panel's rows
rmbp_vec:
	LEAQ (SI)(R15*1), AX
	LEAQ (DI)(R14*1), CX
	MOVQ R15, BX
	SHRQ $5, BX // the vector's byte of bits: its first column / 8
	ADDQ DX, BX
	MOVQ rows+40(FP), R9
	VXORPS Y4, Y4, Y4
	TESTQ R13, R13
	JZ rmbp_row
	VMOVUPS (R13)(R15*1), Y4
rmbp_row:
	VPBROADCASTB (BX), Y0
	VPAND Y13, Y0, Y0
	VPCMPEQD Y13, Y0, Y0
	VMULPS (AX), Y14, Y1
	VANDPS Y1, Y0, Y1
	VMOVUPS Y1, (CX)
	VADDPS Y1, Y4, Y4
	ADDQ R8, AX
	ADDQ R11, CX
	ADDQ bstride+32(FP), BX
	DECQ R9
	JNZ rmbp_row
	TESTQ R13, R13
	JZ rmbp_next
	VMOVUPS Y4, (R13)(R15*1)
rmbp_next:
	ADDQ $32, R15
	ADDQ $32, R14
	CMPQ R14, R11
	JLT rmbp_vec
	ADDQ R12, DI
	DECQ R10
	JNZ rmbp_panel
rmbp_done:
	VZEROUPPER
	RET

// func dropoutBitsAVX512(d, s *float32, rows, cols int, bits *uint64, keep float32)
// d = s * factor for rows rows of cols values, the factor keep where the
// element's bit is set and +0 where it is clear (a multiply, as the lanes
// kernels do: 0 times an infinity is NaN); row i's bits start at word
// i*ceil(cols/64) of bits. Sixteen elements a step, their bits loaded
// straight into K1; a row's last cols%16 in parts of 8, 4, 2 and 1 with
// plain loads and stores (VL masks on registers only): a masked store
// whose 64 bytes reach into the next row would stall that row's first
// load (in place, d = s) until it commits, which cost more than the
// whole row.
TEXT ·dropoutBitsAVX512(SB), NOSPLIT, $0-44
	MOVQ d+0(FP), DI
	MOVQ s+8(FP), SI
	MOVQ rows+16(FP), R8
	MOVQ cols+24(FP), R9
	MOVQ bits+32(FP), DX
	VBROADCASTSS keep+40(FP), Z13
	// R10: the bytes of a row's bits; R11: its whole steps; R12: the
	// elements after them.
	MOVQ R9, R10
	ADDQ $63, R10
	SHRQ $6, R10
	SHLQ $3, R10
	MOVQ R9, R11
	SHRQ $4, R11
	MOVQ R9, R12
	ANDQ $15, R12
	TESTQ R8, R8
	JZ dropbits_done
dropbits_row:
	XORQ BX, BX
	MOVQ R11, CX
	TESTQ CX, CX
	JZ dropbits_tail
dropbits_step:
	KMOVW (DX)(BX*2), K1
	VMOVAPS.Z Z13, K1, Z0
	VMULPS (SI), Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	INCQ BX
	DECQ CX
	JNZ dropbits_step
dropbits_tail:
	TESTQ R12, R12
	JZ dropbits_next
	KMOVW (DX)(BX*2), K1
	TESTQ $8, R12
	JZ dropbits_4
	VMOVAPS.Z Y13, K1, Y0
	VMULPS (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	KSHIFTRW $8, K1, K1
	ADDQ $32, SI
	ADDQ $32, DI
dropbits_4:
	TESTQ $4, R12
	JZ dropbits_2
	VMOVAPS.Z X13, K1, X0
	VMULPS (SI), X0, X0
	VMOVUPS X0, (DI)
	KSHIFTRW $4, K1, K1
	ADDQ $16, SI
	ADDQ $16, DI
dropbits_2:
	TESTQ $2, R12
	JZ dropbits_1
	VMOVAPS.Z X13, K1, X0
	VMOVSD (SI), X1
	VMULPS X1, X0, X0
	VMOVSD X0, (DI)
	KSHIFTRW $2, K1, K1
	ADDQ $8, SI
	ADDQ $8, DI
dropbits_1:
	TESTQ $1, R12
	JZ dropbits_next
	VMOVAPS.Z X13, K1, X0
	VMOVSS (SI), X1
	VMULSS X1, X0, X0
	VMOVSS X0, (DI)
	ADDQ $4, SI
	ADDQ $4, DI
dropbits_next:
	ADDQ R10, DX
	DECQ R8
	JNZ dropbits_row
dropbits_done:
	VZEROUPPER
	RET

// dropBitsPat holds 1, 2, 4, ..., 128 in the dwords of a YMM register:
// the bit of each of eight elements in a byte of dropout bits.
DATA dropBitsPat<>+0(SB)/8, $0x0000000200000001
DATA dropBitsPat<>+8(SB)/8, $0x0000000800000004
DATA dropBitsPat<>+16(SB)/8, $0x0000002000000010
DATA dropBitsPat<>+24(SB)/8, $0x0000008000000040
GLOBL dropBitsPat<>(SB), RODATA|NOPTR, $32

// DROPBITS8 leaves in Y0 the factors of eight elements whose bits are
// the low byte of AX: keep (Y13) where set, +0 where clear. In: Y12
// (dropBitsPat).
#define DROPBITS8 \
	VMOVD AX, X0; \
	VPBROADCASTD X0, Y0; \
	VPAND Y12, Y0, Y0; \
	VPCMPEQD Y12, Y0, Y0; \
	VANDPS Y13, Y0, Y0

// func dropoutBitsAVX2(d, s *float32, rows, cols int, bits *uint64, keep float32)
// dropoutBitsAVX512 with AVX2: eight elements a step, their factors from
// a byte of bits broadcast and compared with each element's bit; a row's
// last cols%8 in parts of 4, 2 and 1.
TEXT ·dropoutBitsAVX2(SB), NOSPLIT, $0-44
	MOVQ d+0(FP), DI
	MOVQ s+8(FP), SI
	MOVQ rows+16(FP), R8
	MOVQ cols+24(FP), R9
	MOVQ bits+32(FP), DX
	VBROADCASTSS keep+40(FP), Y13
	VMOVDQU dropBitsPat<>(SB), Y12
	// R10: the bytes of a row's bits; R11: its whole steps; R12: the
	// elements after them.
	MOVQ R9, R10
	ADDQ $63, R10
	SHRQ $6, R10
	SHLQ $3, R10
	MOVQ R9, R11
	SHRQ $3, R11
	MOVQ R9, R12
	ANDQ $7, R12
	TESTQ R8, R8
	JZ dropbits2_done
dropbits2_row:
	XORQ BX, BX
	MOVQ R11, CX
	TESTQ CX, CX
	JZ dropbits2_tail
dropbits2_step:
	MOVBLZX (DX)(BX*1), AX
	DROPBITS8
	VMULPS (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	INCQ BX
	DECQ CX
	JNZ dropbits2_step
dropbits2_tail:
	TESTQ R12, R12
	JZ dropbits2_next
	MOVBLZX (DX)(BX*1), AX
	DROPBITS8
	TESTQ $4, R12
	JZ dropbits2_2
	VMULPS (SI), X0, X1
	VMOVUPS X1, (DI)
	VEXTRACTF128 $1, Y0, X0
	ADDQ $16, SI
	ADDQ $16, DI
dropbits2_2:
	TESTQ $2, R12
	JZ dropbits2_1
	VMOVSD (SI), X1
	VMULPS X1, X0, X1
	VMOVSD X1, (DI)
	VPSRLDQ $8, X0, X0
	ADDQ $8, SI
	ADDQ $8, DI
dropbits2_1:
	TESTQ $1, R12
	JZ dropbits2_next
	VMOVSS (SI), X1
	VMULSS X1, X0, X1
	VMOVSS X1, (DI)
	ADDQ $4, SI
	ADDQ $4, DI
dropbits2_next:
	ADDQ R10, DX
	DECQ R8
	JNZ dropbits2_row
dropbits2_done:
	VZEROUPPER
	RET
