//go:build amd64 && !noasm

#include "textflag.h"

// func epilogueAVX2(n int, seg, bias *float32, lanes *uint16, thrm1 int32, keep float32, pos *uint8)
// For i < n&^7: seg[i] = max(0, seg[i]+bias[i]) (keeping a NaN) times
// (lanes[i] > thrm1 ? keep : 0); then, with pos not nil, the bits of
// seg[i] > 0 (NaN: not) into pos, bit k of byte i/8 for element 8(i/8)+k.
TEXT ·epilogueAVX2(SB), NOSPLIT, $0-48
	MOVQ n+0(FP), CX
	MOVQ seg+8(FP), DI
	MOVQ bias+16(FP), SI
	MOVQ lanes+24(FP), DX
	MOVL thrm1+32(FP), AX
	VMOVQ AX, X14
	VPBROADCASTD X14, Y14
	VBROADCASTSS keep+36(FP), Y13
	MOVQ pos+40(FP), R8
	VXORPS Y15, Y15, Y15
	SHRQ $3, CX
	JZ epi2_done
epi2_loop:
	VMOVUPS (DI), Y0
	VADDPS (SI), Y0, Y0
	VMAXPS Y0, Y15, Y0
	VPMOVZXWD (DX), Y1
	VPCMPGTD Y14, Y1, Y1
	VANDPS Y13, Y1, Y1
	VMULPS Y0, Y1, Y0
	VMOVUPS Y0, (DI)
	TESTQ R8, R8 // the same way every time: predicted
	JZ epi2_next
	VCMPPS $14, Y15, Y0, Y2
	VMOVMSKPS Y2, AX
	MOVB AX, (R8)
	INCQ R8
epi2_next:
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $16, DX
	DECQ CX
	JNZ epi2_loop
epi2_done:
	VZEROUPPER
	RET

// func epilogueAVX512(n int, seg, bias *float32, lanes *uint16, thrm1 int32, keep float32, pos *uint8)
// epilogueAVX2 for i < n&^15, sixteen elements a vector (pos: two bytes
// a vector).
TEXT ·epilogueAVX512(SB), NOSPLIT, $0-48
	MOVQ n+0(FP), CX
	MOVQ seg+8(FP), DI
	MOVQ bias+16(FP), SI
	MOVQ lanes+24(FP), DX
	MOVL thrm1+32(FP), AX
	VPBROADCASTD AX, Z14
	VBROADCASTSS keep+36(FP), Z13
	MOVQ pos+40(FP), R8
	VPXORD Z15, Z15, Z15
	SHRQ $4, CX
	JZ epi512_done
epi512_loop:
	VMOVUPS (DI), Z0
	VADDPS (SI), Z0, Z0
	VMAXPS Z0, Z15, Z0
	VPMOVZXWD (DX), Z1
	VPCMPGTD Z14, Z1, K1
	VMOVAPS.Z Z13, K1, Z2
	VMULPS Z0, Z2, Z0
	VMOVUPS Z0, (DI)
	TESTQ R8, R8 // the same way every time: predicted
	JZ epi512_next
	VCMPPS $14, Z15, Z0, K2
	KMOVW K2, (R8)
	ADDQ $2, R8
epi512_next:
	ADDQ $64, DI
	ADDQ $64, SI
	ADDQ $32, DX
	DECQ CX
	JNZ epi512_loop
epi512_done:
	VZEROUPPER
	RET
