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

// func reluMaskAVX2(n int, o, dy, y *float32)
// o[i] = g[i] where y[i] > 0, else 0, for i < n&^7.
TEXT ·reluMaskAVX2(SB), NOSPLIT, $0-32
	MOVQ n+0(FP), CX
	MOVQ o+8(FP), DI
	MOVQ dy+16(FP), SI
	MOVQ y+24(FP), DX
	VXORPS Y15, Y15, Y15
	SHRQ $3, CX
	JZ reluMask_done
reluMask_loop:
	VMOVUPS (DX), Y1
	VCMPPS $14, Y15, Y1, Y2
	VANDPS (SI), Y2, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, DX
	DECQ CX
	JNZ reluMask_loop
reluMask_done:
	VZEROUPPER
	RET
