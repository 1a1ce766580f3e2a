//go:build !noasm

#include "textflag.h"

// func decodeF16F16C(dst *float32, src *uint16, n int)
// Converts n halves (n a multiple of 8) with VCVTPH2PS, 32 per iteration
// while possible.
TEXT ·decodeF16F16C(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
loop32:
	CMPQ CX, $32
	JLT  loop8
	VCVTPH2PS 0(SI), Y0
	VCVTPH2PS 16(SI), Y1
	VCVTPH2PS 32(SI), Y2
	VCVTPH2PS 48(SI), Y3
	VMOVUPS   Y0, 0(DI)
	VMOVUPS   Y1, 32(DI)
	VMOVUPS   Y2, 64(DI)
	VMOVUPS   Y3, 96(DI)
	ADDQ $64, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  loop32
loop8:
	CMPQ CX, $8
	JLT  done
	VCVTPH2PS 0(SI), Y0
	VMOVUPS   Y0, 0(DI)
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  loop8
done:
	VZEROUPPER
	RET

// func decodeBF16AVX2(dst *float32, src *uint16, n int)
// Widens n bfloat16 values (n a multiple of 8) to float32: zero-extend
// each 16-bit word and shift it into the top half.
TEXT ·decodeBF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
bloop32:
	CMPQ CX, $32
	JLT  bloop8
	VPMOVZXWD 0(SI), Y0
	VPMOVZXWD 16(SI), Y1
	VPMOVZXWD 32(SI), Y2
	VPMOVZXWD 48(SI), Y3
	VPSLLD    $16, Y0, Y0
	VPSLLD    $16, Y1, Y1
	VPSLLD    $16, Y2, Y2
	VPSLLD    $16, Y3, Y3
	VMOVDQU   Y0, 0(DI)
	VMOVDQU   Y1, 32(DI)
	VMOVDQU   Y2, 64(DI)
	VMOVDQU   Y3, 96(DI)
	ADDQ $64, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  bloop32
bloop8:
	CMPQ CX, $8
	JLT  bdone
	VPMOVZXWD 0(SI), Y0
	VPSLLD    $16, Y0, Y0
	VMOVDQU   Y0, 0(DI)
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  bloop8
bdone:
	VZEROUPPER
	RET
