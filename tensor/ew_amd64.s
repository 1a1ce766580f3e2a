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
	MOVQ AX, X14
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
