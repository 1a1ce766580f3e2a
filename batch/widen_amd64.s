//go:build !noasm

#include "textflag.h"

// func widenNT(d *int64, s *int32, n int)
// d[i] = s[i] for i < n (n a multiple of 8, d 64-byte aligned) with
// non-temporal stores (AVX2), then SFENCE.
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
	SFENCE
	VZEROUPPER

done:
	RET
