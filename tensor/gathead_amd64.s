//go:build !noasm

#include "textflag.h"

// func headAxpyAVX2(n, m int, c, x, o, pf, pf2 *float32)
// o[k*8m : (k+1)*8m] += c[k] * x[k*8m : (k+1)*8m] for k < n (m vectors of
// eight per head), prefetching the row at pf (as long as x) and the line
// at pf2.
TEXT ·headAxpyAVX2(SB), NOSPLIT, $0-56
	MOVQ n+0(FP), CX
	MOVQ m+8(FP), R8
	MOVQ c+16(FP), AX
	MOVQ x+24(FP), SI
	MOVQ o+32(FP), DI
	MOVQ pf+40(FP), DX
	MOVQ pf2+48(FP), BX
	PREFETCHT0 (BX)
	TESTQ CX, CX
	JLE headAxpy_done
headAxpy_head:
	VBROADCASTSS (AX), Y0
	MOVQ R8, R9
headAxpy_vec:
	PREFETCHT0 (DX)
	VMOVUPS (DI), Y1
	VFMADD231PS (SI), Y0, Y1
	VMOVUPS Y1, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, DX
	DECQ R9
	JNZ headAxpy_vec
	ADDQ $4, AX
	DECQ CX
	JNZ headAxpy_head
headAxpy_done:
	VZEROUPPER
	RET

// func headDotAVX2(n, m int, x, y, out, pf *float32)
// out[k] = x[k*8m : (k+1)*8m] · y[k*8m : (k+1)*8m] for k < n, prefetching
// the row at pf (as long as y).
TEXT ·headDotAVX2(SB), NOSPLIT, $0-48
	MOVQ n+0(FP), CX
	MOVQ m+8(FP), R8
	MOVQ x+16(FP), SI
	MOVQ y+24(FP), DI
	MOVQ out+32(FP), AX
	MOVQ pf+40(FP), DX
	TESTQ CX, CX
	JLE headDot_done
headDot_head:
	VXORPS Y0, Y0, Y0
	MOVQ R8, R9
headDot_vec:
	PREFETCHT0 (DX)
	VMOVUPS (SI), Y1
	VFMADD231PS (DI), Y1, Y0
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, DX
	DECQ R9
	JNZ headDot_vec
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VMOVSS X0, (AX)
	ADDQ $4, AX
	DECQ CX
	JNZ headDot_head
headDot_done:
	VZEROUPPER
	RET

// func prefetch(p *float32)
TEXT ·prefetch(SB), NOSPLIT, $0-8
	MOVQ p+0(FP), AX
	PREFETCHT0 (AX)
	RET

// func spmmRow16AVX2(n int, x *float32, ldx int, idx *int32, w *float32, wstep int, o *float32, lim int, scale *float32)
// spmmRowAVX2 for rows of 16 values (m = 2), the output row held in two
// registers across the edges: the same fused multiply-adds in the same
// order, without a store and reload per edge.
TEXT ·spmmRow16AVX2(SB), NOSPLIT, $0-72
	MOVQ n+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ ldx+16(FP), R9
	MOVQ idx+24(FP), R10
	MOVQ w+32(FP), R11
	MOVQ wstep+40(FP), R12
	MOVQ o+48(FP), DI
	MOVQ lim+56(FP), R13
	TESTQ CX, CX
	JLE spmm16_done
	VMOVUPS (DI), Y1
	VMOVUPS 32(DI), Y2
spmm16_edge:
	VBROADCASTSS (R11), Y0
	ADDQ R12, R11
	CMPQ R13, $4
	JLE spmm16_row
	MOVLQSX 16(R10), AX
	IMULQ R9, AX
	PREFETCHT0 (SI)(AX*1)
spmm16_row:
	MOVLQSX (R10), AX
	IMULQ R9, AX
	VFMADD231PS (SI)(AX*1), Y0, Y1
	VFMADD231PS 32(SI)(AX*1), Y0, Y2
	ADDQ $4, R10
	DECQ R13
	DECQ CX
	JNZ spmm16_edge
	MOVQ scale+64(FP), AX
	TESTQ AX, AX
	JZ spmm16_store
	VBROADCASTSS (AX), Y0
	VMULPS Y1, Y0, Y1
	VMULPS Y2, Y0, Y2
spmm16_store:
	VMOVUPS Y1, (DI)
	VMOVUPS Y2, 32(DI)
spmm16_done:
	VZEROUPPER
	RET

// func spmmRowAVX512(n, m int, x *float32, ldx int, idx *int32, w *float32, wstep int, o *float32, lim int, tail int, scale *float32)
// spmmRowAVX2 for rows of up to 16 vectors of 16 values (m <= 16) and a
// tail of up to 15 whose lanes are tail's set bits (masked loads fault on
// no masked-off lane): the output row is held in Z0-Z15 and Z16 across the
// edges (the same fused multiply-adds in the same order, without a store
// and reload of the row per edge), and each edge prefetches the row of
// idx[e+8] while e+8 < lim.
TEXT ·spmmRowAVX512(SB), NOSPLIT, $0-88
	MOVQ n+0(FP), CX
	MOVQ m+8(FP), R8
	MOVQ x+16(FP), SI
	MOVQ ldx+24(FP), R9
	MOVQ idx+32(FP), R10
	MOVQ w+40(FP), R11
	MOVQ wstep+48(FP), R12
	MOVQ o+56(FP), DI
	MOVQ lim+64(FP), R13
	MOVQ tail+72(FP), R14
	KMOVW R14, K1
	MOVQ R8, R15
	SHLQ $6, R15 // the tail's byte offset
	MOVQ R8, BX  // a row's lines to prefetch, less one: m, one more with a tail
	TESTQ R14, R14
	JZ spmm512_lines
	INCQ BX
spmm512_lines:
	TESTQ CX, CX
	JLE spmm512_done
	CMPQ R8, $1
	JLT spmm512_load_tail
	VMOVUPS 0(DI), Z0
	CMPQ R8, $2
	JLT spmm512_load_tail
	VMOVUPS 64(DI), Z1
	CMPQ R8, $3
	JLT spmm512_load_tail
	VMOVUPS 128(DI), Z2
	CMPQ R8, $4
	JLT spmm512_load_tail
	VMOVUPS 192(DI), Z3
	CMPQ R8, $5
	JLT spmm512_load_tail
	VMOVUPS 256(DI), Z4
	CMPQ R8, $6
	JLT spmm512_load_tail
	VMOVUPS 320(DI), Z5
	CMPQ R8, $7
	JLT spmm512_load_tail
	VMOVUPS 384(DI), Z6
	CMPQ R8, $8
	JLT spmm512_load_tail
	VMOVUPS 448(DI), Z7
	CMPQ R8, $9
	JLT spmm512_load_tail
	VMOVUPS 512(DI), Z8
	CMPQ R8, $10
	JLT spmm512_load_tail
	VMOVUPS 576(DI), Z9
	CMPQ R8, $11
	JLT spmm512_load_tail
	VMOVUPS 640(DI), Z10
	CMPQ R8, $12
	JLT spmm512_load_tail
	VMOVUPS 704(DI), Z11
	CMPQ R8, $13
	JLT spmm512_load_tail
	VMOVUPS 768(DI), Z12
	CMPQ R8, $14
	JLT spmm512_load_tail
	VMOVUPS 832(DI), Z13
	CMPQ R8, $15
	JLT spmm512_load_tail
	VMOVUPS 896(DI), Z14
	CMPQ R8, $16
	JLT spmm512_load_tail
	VMOVUPS 960(DI), Z15
spmm512_load_tail:
	TESTQ R14, R14
	JZ spmm512_edge
	VMOVUPS.Z (DI)(R15*1), K1, Z16
spmm512_edge:
	VBROADCASTSS (R11), Z17
	ADDQ R12, R11
	CMPQ R13, $8
	JLE spmm512_row
	MOVLQSX 32(R10), AX
	IMULQ R9, AX
	ADDQ SI, AX
	MOVQ BX, DX
spmm512_pf:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	DECQ DX
	JGE spmm512_pf
spmm512_row:
	MOVLQSX (R10), AX
	IMULQ R9, AX
	ADDQ SI, AX
	CMPQ R8, $1
	JLT spmm512_row_tail
	VFMADD231PS 0(AX), Z17, Z0
	CMPQ R8, $2
	JLT spmm512_row_tail
	VFMADD231PS 64(AX), Z17, Z1
	CMPQ R8, $3
	JLT spmm512_row_tail
	VFMADD231PS 128(AX), Z17, Z2
	CMPQ R8, $4
	JLT spmm512_row_tail
	VFMADD231PS 192(AX), Z17, Z3
	CMPQ R8, $5
	JLT spmm512_row_tail
	VFMADD231PS 256(AX), Z17, Z4
	CMPQ R8, $6
	JLT spmm512_row_tail
	VFMADD231PS 320(AX), Z17, Z5
	CMPQ R8, $7
	JLT spmm512_row_tail
	VFMADD231PS 384(AX), Z17, Z6
	CMPQ R8, $8
	JLT spmm512_row_tail
	VFMADD231PS 448(AX), Z17, Z7
	CMPQ R8, $9
	JLT spmm512_row_tail
	VFMADD231PS 512(AX), Z17, Z8
	CMPQ R8, $10
	JLT spmm512_row_tail
	VFMADD231PS 576(AX), Z17, Z9
	CMPQ R8, $11
	JLT spmm512_row_tail
	VFMADD231PS 640(AX), Z17, Z10
	CMPQ R8, $12
	JLT spmm512_row_tail
	VFMADD231PS 704(AX), Z17, Z11
	CMPQ R8, $13
	JLT spmm512_row_tail
	VFMADD231PS 768(AX), Z17, Z12
	CMPQ R8, $14
	JLT spmm512_row_tail
	VFMADD231PS 832(AX), Z17, Z13
	CMPQ R8, $15
	JLT spmm512_row_tail
	VFMADD231PS 896(AX), Z17, Z14
	CMPQ R8, $16
	JLT spmm512_row_tail
	VFMADD231PS 960(AX), Z17, Z15
spmm512_row_tail:
	TESTQ R14, R14
	JZ spmm512_next
	VFMADD231PS (AX)(R15*1), Z17, K1, Z16
spmm512_next:
	ADDQ $4, R10
	DECQ R13
	DECQ CX
	JNZ spmm512_edge
	MOVQ scale+80(FP), AX
	TESTQ AX, AX
	JZ spmm512_store
	VBROADCASTSS (AX), Z17
	CMPQ R8, $1
	JLT spmm512_scale_tail
	VMULPS Z17, Z0, Z0
	CMPQ R8, $2
	JLT spmm512_scale_tail
	VMULPS Z17, Z1, Z1
	CMPQ R8, $3
	JLT spmm512_scale_tail
	VMULPS Z17, Z2, Z2
	CMPQ R8, $4
	JLT spmm512_scale_tail
	VMULPS Z17, Z3, Z3
	CMPQ R8, $5
	JLT spmm512_scale_tail
	VMULPS Z17, Z4, Z4
	CMPQ R8, $6
	JLT spmm512_scale_tail
	VMULPS Z17, Z5, Z5
	CMPQ R8, $7
	JLT spmm512_scale_tail
	VMULPS Z17, Z6, Z6
	CMPQ R8, $8
	JLT spmm512_scale_tail
	VMULPS Z17, Z7, Z7
	CMPQ R8, $9
	JLT spmm512_scale_tail
	VMULPS Z17, Z8, Z8
	CMPQ R8, $10
	JLT spmm512_scale_tail
	VMULPS Z17, Z9, Z9
	CMPQ R8, $11
	JLT spmm512_scale_tail
	VMULPS Z17, Z10, Z10
	CMPQ R8, $12
	JLT spmm512_scale_tail
	VMULPS Z17, Z11, Z11
	CMPQ R8, $13
	JLT spmm512_scale_tail
	VMULPS Z17, Z12, Z12
	CMPQ R8, $14
	JLT spmm512_scale_tail
	VMULPS Z17, Z13, Z13
	CMPQ R8, $15
	JLT spmm512_scale_tail
	VMULPS Z17, Z14, Z14
	CMPQ R8, $16
	JLT spmm512_scale_tail
	VMULPS Z17, Z15, Z15
spmm512_scale_tail:
	VMULPS Z17, Z16, Z16
spmm512_store:
	CMPQ R8, $1
	JLT spmm512_store_tail
	VMOVUPS Z0, 0(DI)
	CMPQ R8, $2
	JLT spmm512_store_tail
	VMOVUPS Z1, 64(DI)
	CMPQ R8, $3
	JLT spmm512_store_tail
	VMOVUPS Z2, 128(DI)
	CMPQ R8, $4
	JLT spmm512_store_tail
	VMOVUPS Z3, 192(DI)
	CMPQ R8, $5
	JLT spmm512_store_tail
	VMOVUPS Z4, 256(DI)
	CMPQ R8, $6
	JLT spmm512_store_tail
	VMOVUPS Z5, 320(DI)
	CMPQ R8, $7
	JLT spmm512_store_tail
	VMOVUPS Z6, 384(DI)
	CMPQ R8, $8
	JLT spmm512_store_tail
	VMOVUPS Z7, 448(DI)
	CMPQ R8, $9
	JLT spmm512_store_tail
	VMOVUPS Z8, 512(DI)
	CMPQ R8, $10
	JLT spmm512_store_tail
	VMOVUPS Z9, 576(DI)
	CMPQ R8, $11
	JLT spmm512_store_tail
	VMOVUPS Z10, 640(DI)
	CMPQ R8, $12
	JLT spmm512_store_tail
	VMOVUPS Z11, 704(DI)
	CMPQ R8, $13
	JLT spmm512_store_tail
	VMOVUPS Z12, 768(DI)
	CMPQ R8, $14
	JLT spmm512_store_tail
	VMOVUPS Z13, 832(DI)
	CMPQ R8, $15
	JLT spmm512_store_tail
	VMOVUPS Z14, 896(DI)
	CMPQ R8, $16
	JLT spmm512_store_tail
	VMOVUPS Z15, 960(DI)
spmm512_store_tail:
	TESTQ R14, R14
	JZ spmm512_done
	VMOVUPS Z16, K1, (DI)(R15*1)
spmm512_done:
	VZEROUPPER
	RET

// func spmmRowAVX2(n, m int, x *float32, ldx int, idx *int32, w *float32, wstep int, o *float32, lim int, tail *int32, scale *float32)
// o[0:8m] += w[e*wstep] * x[idx[e]*ldx : +8m] for e < n, in order (ldx and
// wstep in bytes; wstep 0 repeats w[0]; m <= 12), and, when tail is not
// nil, the same for the up to 7 values after them whose lanes of the 8
// int32s at tail are negative (VMASKMOVPS: masked-off lanes are neither
// read nor written); then, when scale is not nil and n > 0, the row is
// multiplied by *scale (a mean's 1/n). The output row is held in Y0-Y11
// and Y12 across the edges, and each edge prefetches the row of idx[e+8]
// while e+8 < lim (the indices readable from idx). Without the registers
// (a load, fused multiply-add and store of the row per edge) it took
// 1.1-2x the time (AMD EPYC Zen 5).
TEXT ·spmmRowAVX2(SB), NOSPLIT, $0-88
	MOVQ n+0(FP), CX
	MOVQ m+8(FP), R8
	MOVQ x+16(FP), SI
	MOVQ ldx+24(FP), R9
	MOVQ idx+32(FP), R10
	MOVQ w+40(FP), R11
	MOVQ wstep+48(FP), R12
	MOVQ o+56(FP), DI
	MOVQ lim+64(FP), R13
	MOVQ tail+72(FP), R14
	MOVQ R8, R15
	SHLQ $5, R15 // the tail's byte offset
	MOVQ R8, BX  // vectors of a row: m, one more with a tail
	TESTQ R14, R14
	JZ spmm2r_lines
	INCQ BX
	VMOVDQU (R14), Y13
spmm2r_lines:
	INCQ BX
	SHRQ $1, BX  // its lines, less one (the prefetch loop makes one more, for the misalignment)
	TESTQ CX, CX
	JLE spmm2r_done
	CMPQ R8, $1
	JLT spmm2r_load_tail
	VMOVUPS 0(DI), Y0
	CMPQ R8, $2
	JLT spmm2r_load_tail
	VMOVUPS 32(DI), Y1
	CMPQ R8, $3
	JLT spmm2r_load_tail
	VMOVUPS 64(DI), Y2
	CMPQ R8, $4
	JLT spmm2r_load_tail
	VMOVUPS 96(DI), Y3
	CMPQ R8, $5
	JLT spmm2r_load_tail
	VMOVUPS 128(DI), Y4
	CMPQ R8, $6
	JLT spmm2r_load_tail
	VMOVUPS 160(DI), Y5
	CMPQ R8, $7
	JLT spmm2r_load_tail
	VMOVUPS 192(DI), Y6
	CMPQ R8, $8
	JLT spmm2r_load_tail
	VMOVUPS 224(DI), Y7
	CMPQ R8, $9
	JLT spmm2r_load_tail
	VMOVUPS 256(DI), Y8
	CMPQ R8, $10
	JLT spmm2r_load_tail
	VMOVUPS 288(DI), Y9
	CMPQ R8, $11
	JLT spmm2r_load_tail
	VMOVUPS 320(DI), Y10
	CMPQ R8, $12
	JLT spmm2r_load_tail
	VMOVUPS 352(DI), Y11
spmm2r_load_tail:
	TESTQ R14, R14
	JZ spmm2r_edge
	VMASKMOVPS (DI)(R15*1), Y13, Y12
spmm2r_edge:
	VBROADCASTSS (R11), Y14
	ADDQ R12, R11
	CMPQ R13, $8
	JLE spmm2r_row
	MOVLQSX 32(R10), AX
	IMULQ R9, AX
	ADDQ SI, AX
	MOVQ BX, DX
spmm2r_pf:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	DECQ DX
	JGE spmm2r_pf
spmm2r_row:
	MOVLQSX (R10), AX
	IMULQ R9, AX
	ADDQ SI, AX
	CMPQ R8, $1
	JLT spmm2r_row_tail
	VFMADD231PS 0(AX), Y14, Y0
	CMPQ R8, $2
	JLT spmm2r_row_tail
	VFMADD231PS 32(AX), Y14, Y1
	CMPQ R8, $3
	JLT spmm2r_row_tail
	VFMADD231PS 64(AX), Y14, Y2
	CMPQ R8, $4
	JLT spmm2r_row_tail
	VFMADD231PS 96(AX), Y14, Y3
	CMPQ R8, $5
	JLT spmm2r_row_tail
	VFMADD231PS 128(AX), Y14, Y4
	CMPQ R8, $6
	JLT spmm2r_row_tail
	VFMADD231PS 160(AX), Y14, Y5
	CMPQ R8, $7
	JLT spmm2r_row_tail
	VFMADD231PS 192(AX), Y14, Y6
	CMPQ R8, $8
	JLT spmm2r_row_tail
	VFMADD231PS 224(AX), Y14, Y7
	CMPQ R8, $9
	JLT spmm2r_row_tail
	VFMADD231PS 256(AX), Y14, Y8
	CMPQ R8, $10
	JLT spmm2r_row_tail
	VFMADD231PS 288(AX), Y14, Y9
	CMPQ R8, $11
	JLT spmm2r_row_tail
	VFMADD231PS 320(AX), Y14, Y10
	CMPQ R8, $12
	JLT spmm2r_row_tail
	VFMADD231PS 352(AX), Y14, Y11
spmm2r_row_tail:
	TESTQ R14, R14
	JZ spmm2r_next
	VMASKMOVPS (AX)(R15*1), Y13, Y15
	VFMADD231PS Y15, Y14, Y12
spmm2r_next:
	ADDQ $4, R10
	DECQ R13
	DECQ CX
	JNZ spmm2r_edge
	MOVQ scale+80(FP), AX
	TESTQ AX, AX
	JZ spmm2r_store
	VBROADCASTSS (AX), Y14
	CMPQ R8, $1
	JLT spmm2r_scale_tail
	VMULPS Y14, Y0, Y0
	CMPQ R8, $2
	JLT spmm2r_scale_tail
	VMULPS Y14, Y1, Y1
	CMPQ R8, $3
	JLT spmm2r_scale_tail
	VMULPS Y14, Y2, Y2
	CMPQ R8, $4
	JLT spmm2r_scale_tail
	VMULPS Y14, Y3, Y3
	CMPQ R8, $5
	JLT spmm2r_scale_tail
	VMULPS Y14, Y4, Y4
	CMPQ R8, $6
	JLT spmm2r_scale_tail
	VMULPS Y14, Y5, Y5
	CMPQ R8, $7
	JLT spmm2r_scale_tail
	VMULPS Y14, Y6, Y6
	CMPQ R8, $8
	JLT spmm2r_scale_tail
	VMULPS Y14, Y7, Y7
	CMPQ R8, $9
	JLT spmm2r_scale_tail
	VMULPS Y14, Y8, Y8
	CMPQ R8, $10
	JLT spmm2r_scale_tail
	VMULPS Y14, Y9, Y9
	CMPQ R8, $11
	JLT spmm2r_scale_tail
	VMULPS Y14, Y10, Y10
	CMPQ R8, $12
	JLT spmm2r_scale_tail
	VMULPS Y14, Y11, Y11
spmm2r_scale_tail:
	VMULPS Y14, Y12, Y12
spmm2r_store:
	CMPQ R8, $1
	JLT spmm2r_store_tail
	VMOVUPS Y0, 0(DI)
	CMPQ R8, $2
	JLT spmm2r_store_tail
	VMOVUPS Y1, 32(DI)
	CMPQ R8, $3
	JLT spmm2r_store_tail
	VMOVUPS Y2, 64(DI)
	CMPQ R8, $4
	JLT spmm2r_store_tail
	VMOVUPS Y3, 96(DI)
	CMPQ R8, $5
	JLT spmm2r_store_tail
	VMOVUPS Y4, 128(DI)
	CMPQ R8, $6
	JLT spmm2r_store_tail
	VMOVUPS Y5, 160(DI)
	CMPQ R8, $7
	JLT spmm2r_store_tail
	VMOVUPS Y6, 192(DI)
	CMPQ R8, $8
	JLT spmm2r_store_tail
	VMOVUPS Y7, 224(DI)
	CMPQ R8, $9
	JLT spmm2r_store_tail
	VMOVUPS Y8, 256(DI)
	CMPQ R8, $10
	JLT spmm2r_store_tail
	VMOVUPS Y9, 288(DI)
	CMPQ R8, $11
	JLT spmm2r_store_tail
	VMOVUPS Y10, 320(DI)
	CMPQ R8, $12
	JLT spmm2r_store_tail
	VMOVUPS Y11, 352(DI)
spmm2r_store_tail:
	TESTQ R14, R14
	JZ spmm2r_done
	VMASKMOVPS Y12, Y13, (DI)(R15*1)
spmm2r_done:
	VZEROUPPER
	RET

// func spmmRows16AVX2(rows int, indptr *int64, idx *int32, w *float32, wstep int, x *float32, ldx int, o *float32, ldo int, lim int, mean int)
// For each row r < rows, with its edges e in [indptr[r], indptr[r+1]):
// o[r*ldo:][:16] = Σ_e w[e*wstep]·x[idx[e]*ldx:][:16] in order of e, the
// row in registers from zero (ldx, ldo and wstep in bytes), times 1/n (n
// its edges, none: no scaling) when mean != 0; each edge prefetches the
// row of idx[e+4] while e+4 < lim. The fused multiply-adds are
// spmmRow16AVX2's on a row of zeros: the results are bitwise its own.
TEXT ·spmmRows16AVX2(SB), NOSPLIT, $0-88
	MOVQ rows+0(FP), BX
	MOVQ indptr+8(FP), R8
	MOVQ idx+16(FP), R10
	MOVQ w+24(FP), R11
	MOVQ wstep+32(FP), R12
	MOVQ x+40(FP), SI
	MOVQ ldx+48(FP), R9
	MOVQ o+56(FP), DI
	MOVQ ldo+64(FP), R14
	MOVQ lim+72(FP), R13
	MOVQ mean+80(FP), DX
	TESTQ BX, BX
	JLE rows16_done
rows16_row:
	MOVQ (R8), CX
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	CMPQ CX, 8(R8)
	JGE rows16_store
rows16_edge:
	MOVQ CX, AX
	IMULQ R12, AX
	VBROADCASTSS (R11)(AX*1), Y0
	LEAQ 4(CX), AX
	CMPQ AX, R13
	JGE rows16_fma
	MOVLQSX (R10)(AX*4), AX
	IMULQ R9, AX
	PREFETCHT0 (SI)(AX*1)
rows16_fma:
	MOVLQSX (R10)(CX*4), AX
	IMULQ R9, AX
	VFMADD231PS (SI)(AX*1), Y0, Y1
	VFMADD231PS 32(SI)(AX*1), Y0, Y2
	INCQ CX
	CMPQ CX, 8(R8)
	JLT rows16_edge
	TESTQ DX, DX
	JZ rows16_store
	SUBQ (R8), CX
	VCVTSI2SSQ CX, X3, X3
	MOVL $0x3f800000, AX
	VMOVD AX, X0
	VDIVSS X3, X0, X0
	VBROADCASTSS X0, Y0
	VMULPS Y1, Y0, Y1
	VMULPS Y2, Y0, Y2
rows16_store:
	VMOVUPS Y1, (DI)
	VMOVUPS Y2, 32(DI)
	ADDQ R14, DI
	ADDQ $8, R8
	DECQ BX
	JNZ rows16_row
rows16_done:
	VZEROUPPER
	RET

// func spmmRowsAVX512(rows int, indptr *int64, idx *int32, w *float32, wstep int, x *float32, ldx int, o *float32, ldo int, lim int, mean int, mask int)
// spmmRows16AVX2 for rows of fewer than 16 values, the lanes of mask (a
// row of the output in Z1, masked loads and stores: no fault on a masked-off
// lane): spmmRowAVX512's fused multiply-adds for a row of zero full
// vectors and that tail, bitwise its results; each edge prefetches the
// row of idx[e+8] while e+8 < lim.
TEXT ·spmmRowsAVX512(SB), NOSPLIT, $0-96
	MOVQ rows+0(FP), BX
	MOVQ indptr+8(FP), R8
	MOVQ idx+16(FP), R10
	MOVQ w+24(FP), R11
	MOVQ wstep+32(FP), R12
	MOVQ x+40(FP), SI
	MOVQ ldx+48(FP), R9
	MOVQ o+56(FP), DI
	MOVQ ldo+64(FP), R14
	MOVQ lim+72(FP), R13
	MOVQ mean+80(FP), DX
	MOVQ mask+88(FP), AX
	KMOVW AX, K1
	TESTQ BX, BX
	JLE rowsm_done
rowsm_row:
	MOVQ (R8), CX
	VPXORD Z1, Z1, Z1
	CMPQ CX, 8(R8)
	JGE rowsm_store
rowsm_edge:
	MOVQ CX, AX
	IMULQ R12, AX
	VBROADCASTSS (R11)(AX*1), Z0
	LEAQ 8(CX), AX
	CMPQ AX, R13
	JGE rowsm_fma
	MOVLQSX (R10)(AX*4), AX
	IMULQ R9, AX
	PREFETCHT0 (SI)(AX*1)
rowsm_fma:
	MOVLQSX (R10)(CX*4), AX
	IMULQ R9, AX
	VFMADD231PS (SI)(AX*1), Z0, K1, Z1
	INCQ CX
	CMPQ CX, 8(R8)
	JLT rowsm_edge
	TESTQ DX, DX
	JZ rowsm_store
	SUBQ (R8), CX
	VCVTSI2SSQ CX, X3, X3
	MOVL $0x3f800000, AX
	VMOVD AX, X2
	VDIVSS X3, X2, X2
	VBROADCASTSS X2, Z0
	VMULPS Z0, Z1, Z1
rowsm_store:
	VMOVUPS Z1, K1, (DI)
	ADDQ R14, DI
	ADDQ $8, R8
	DECQ BX
	JNZ rowsm_row
rowsm_done:
	VZEROUPPER
	RET
