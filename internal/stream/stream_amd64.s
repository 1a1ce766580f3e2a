//go:build !noasm

#include "textflag.h"

// func copyNT(d, s *int64, n int)
TEXT ·copyNT(SB), NOSPLIT, $0-24
	MOVQ d+0(FP), DI
	MOVQ s+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JEQ  done

loop:
	VMOVDQU  0(SI), Y0
	VMOVDQU  32(SI), Y1
	VMOVNTDQ Y0, 0(DI)
	VMOVNTDQ Y1, 32(DI)
	ADDQ     $64, SI
	ADDQ     $64, DI
	DECQ     CX
	JNE      loop
	VZEROUPPER

done:
	RET

// func widenNT(d *int64, s *int32, n int)
TEXT ·widenNT(SB), NOSPLIT, $0-24
	MOVQ d+0(FP), DI
	MOVQ s+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JEQ  done

loop:
	VPMOVSXDQ 0(SI), Y0
	VPMOVSXDQ 16(SI), Y1
	VMOVNTDQ  Y0, 0(DI)
	VMOVNTDQ  Y1, 32(DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	DECQ      CX
	JNE       loop
	VZEROUPPER

done:
	RET

// func fence()
TEXT ·fence(SB), NOSPLIT, $0-0
	SFENCE
	RET
