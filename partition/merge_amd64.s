//go:build !noasm

#include "textflag.h"

// SLOT finds the slot of the list entry at SI (register use below): cu
// (AX) from cmap, the slot (BX) from ht less base or d where cu is new
// (DI -1 then), and writes ht[cu] and out[d].
#define SLOT \
	MOVLQSX (SI), AX \
	MOVLQSX (R8)(AX*4), AX \
	MOVL    (R9)(AX*4), BX \
	SUBL    R12, BX \
	MOVL    BX, DI \
	SARL    $31, DI \
	TESTL   BX, BX \
	CMOVLLT DX, BX \
	LEAL    (BX)(R12*1), R13 \
	MOVL    R13, (R9)(AX*4) \
	MOVL    AX, (R10)(DX*4) \
	MOVLQSX BX, BX

// ADVANCE grows d where the entry was new and moves to the next entry,
// leaving the flags of the end test.
#define ADVANCE \
	MOVLQSX DI, DI \
	SUBQ    DI, DX \
	ADDQ    $4, SI \
	CMPQ    SI, CX

// func mergeUnitAsm(lst *int32, n int, cmap, ht, out, outw *int32, d int, base int32) int
//
// mergeUnitMasked's loop in plain x86-64: the slot (ht[cu] - base, or d
// for a new entry) is chosen with CMOV, ht[cu] and out[d] are written
// either way and outw[slot] counts one more; d grows by the slot's sign
// bit. Everything stays in registers: the Go loop kept the slot and
// three slice headers on the stack (reloaded every entry) and checked
// four bounds an entry.
//
// Register use: SI the list's position, CX its end, R8 cmap, R9 ht,
// R10 out, R11 outw, DX d, R12 base; AX (cu), BX (slot), DI (new: -1),
// R13 per entry.
TEXT ·mergeUnitAsm(SB), NOSPLIT, $0-72
	MOVQ  lst+0(FP), SI
	MOVQ  n+8(FP), CX
	MOVQ  cmap+16(FP), R8
	MOVQ  ht+24(FP), R9
	MOVQ  out+32(FP), R10
	MOVQ  outw+40(FP), R11
	MOVQ  d+48(FP), DX
	MOVL  base+56(FP), R12
	TESTQ CX, CX
	JEQ   unitdone
	LEAQ  (SI)(CX*4), CX

unitloop:
	SLOT
	INCL    (R11)(BX*4)
	ADVANCE
	JB      unitloop

unitdone:
	MOVQ DX, ret+64(FP)
	RET

// func mergeWeightedAsm(lst, wts *int32, n int, cmap, ht, out, outw *int32, d int, base int32) int
//
// mergeUnitAsm adding the edge weights wts (R14: their offset from the
// list) instead of ones.
TEXT ·mergeWeightedAsm(SB), NOSPLIT, $0-80
	MOVQ  lst+0(FP), SI
	MOVQ  wts+8(FP), R14
	MOVQ  n+16(FP), CX
	MOVQ  cmap+24(FP), R8
	MOVQ  ht+32(FP), R9
	MOVQ  out+40(FP), R10
	MOVQ  outw+48(FP), R11
	MOVQ  d+56(FP), DX
	MOVL  base+64(FP), R12
	TESTQ CX, CX
	JEQ   wdone
	SUBQ  SI, R14
	LEAQ  (SI)(CX*4), CX

wloop:
	SLOT
	MOVL    (SI)(R14*1), R13
	ADDL    R13, (R11)(BX*4)
	ADVANCE
	JB      wloop

wdone:
	MOVQ DX, ret+72(FP)
	RET
