//go:build amd64 && !noasm

#include "textflag.h"

// func adamAVX2(n int, w, grad, m, v *float32, k *adamCoef, l2 int)
// adamGeneric for n elements (a multiple of 8), eight at a time: the same
// operations in the same order, none fused.
TEXT ·adamAVX2(SB), NOSPLIT, $0-56
	MOVQ n+0(FP), CX
	MOVQ w+8(FP), DI
	MOVQ grad+16(FP), SI
	MOVQ m+24(FP), R8
	MOVQ v+32(FP), R9
	MOVQ k+40(FP), AX
	MOVQ l2+48(FP), BX
	VBROADCASTSS 0(AX), Y8   // b1
	VBROADCASTSS 4(AX), Y9   // c1
	VBROADCASTSS 8(AX), Y10  // b2
	VBROADCASTSS 12(AX), Y11 // c2
	VBROADCASTSS 16(AX), Y12 // step
	VBROADCASTSS 20(AX), Y13 // isb2
	VBROADCASTSS 24(AX), Y14 // eps
	VBROADCASTSS 28(AX), Y15 // wd
	SHRQ $3, CX
	JZ adam_done
adam_loop:
	VMOVUPS (SI), Y0 // g
	VMOVUPS (DI), Y1 // w
	TESTQ BX, BX
	JZ adam_moments
	VMULPS Y1, Y15, Y2
	VADDPS Y2, Y0, Y0 // g + wd·w
adam_moments:
	VMULPS (R8), Y8, Y3
	VMULPS Y0, Y9, Y4
	VADDPS Y4, Y3, Y3 // m = b1·m + c1·g
	VMOVUPS Y3, (R8)
	VMULPS (R9), Y10, Y5
	VMULPS Y0, Y11, Y6
	VMULPS Y0, Y6, Y6
	VADDPS Y6, Y5, Y5 // v = b2·v + (c2·g)·g
	VMOVUPS Y5, (R9)
	VSQRTPS Y5, Y7
	VMULPS Y13, Y7, Y7
	VADDPS Y14, Y7, Y7 // √v·isb2 + eps
	VMULPS Y3, Y12, Y4
	VDIVPS Y7, Y4, Y4 // step·m / (…)
	VSUBPS Y4, Y1, Y1
	VMOVUPS Y1, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, R8
	ADDQ $32, R9
	DECQ CX
	JNZ adam_loop
adam_done:
	VZEROUPPER
	RET
