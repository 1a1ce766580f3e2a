//go:build !noasm

#include "textflag.h"

// func heaviest1(adj, ew *int32, n int, vw, match *int32, lo, hi, vwv, maxvw int32) int32
//
// matcher.heaviest for one balance constraint and no partition to keep,
// in plain x86-64 (see heaviestFast): the same ratings (w^2 / max(1,
// vw[u]), one MULSD and one DIVSD, so the same choices), with the
// level's arrays, the best so far and the outside best in registers.
//
// Register use: SI the list's position, CX its end, R8 ew's offset from
// adj, R9 vw, R10 match, R11 lo, R12 hi - lo, R13 vw[v], R14 maxvw, R15
// the constant 1; AX best, X0 its rating, X1 the outside best rating;
// DX (u), BX, DI, X2, X3 per neighbour.
TEXT ·heaviest1(SB), NOSPLIT, $0-60
	MOVQ  adj+0(FP), SI
	MOVQ  ew+8(FP), R8
	MOVQ  n+16(FP), CX
	MOVQ  vw+24(FP), R9
	MOVQ  match+32(FP), R10
	MOVL  lo+40(FP), R11
	MOVL  hi+44(FP), R12
	SUBL  R11, R12
	MOVL  vwv+48(FP), R13
	MOVL  maxvw+52(FP), R14
	MOVL  $1, R15
	MOVL  $-1, AX
	XORPS X0, X0
	XORPS X1, X1
	TESTQ CX, CX
	JEQ   done
	SUBQ  SI, R8
	LEAQ  (SI)(CX*4), CX

loop:
	MOVLQSX (SI), DX
	MOVL    DX, BX
	SUBL    R11, BX
	CMPL    BX, R12
	JAE     outside
	MOVL    (R10)(DX*4), BX
	TESTL   BX, BX
	JGE     next
	MOVL    (SI)(R8*1), BX
	CVTSL2SD BX, X2
	MULSD   X2, X2
	MOVL    (R9)(DX*4), BX
	MOVL    BX, DI
	CMPL    DI, $1
	CMOVLLT R15, DI
	CVTSL2SD DI, X3
	DIVSD   X3, X2
	UCOMISD X0, X2
	JBE     next
	ADDL    R13, BX
	CMPL    BX, R14
	JGT     next
	MOVL    DX, AX
	MOVSD   X2, X0
	JMP     next

outside:
	MOVL    (SI)(R8*1), BX
	CVTSL2SD BX, X2
	MULSD   X2, X2
	MOVL    (R9)(DX*4), BX
	CMPL    BX, $1
	CMOVLLT R15, BX
	CVTSL2SD BX, X3
	DIVSD   X3, X2
	MAXSD   X2, X1

next:
	ADDQ $4, SI
	CMPQ SI, CX
	JB   loop

done:
	UCOMISD X0, X1
	JBE     ret
	MOVL    $-1, AX

ret:
	MOVL AX, ret+56(FP)
	RET
