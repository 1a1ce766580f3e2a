//go:build !noasm

#include "textflag.h"

// func takeAll16(ind *int32, sp *int64, nd int, k int, out *int32, pos *int64, ip *int64, todo *int32) (nt int)
//
// takeAll with AVX-512F: per destination, its offset, and sixteen lanes
// of its list copied without a branch on its length (a masked load of
// min(degree, 16) ids, a whole vector stored to out and two to pos,
// which takeAllSlack allows; the next destination's stores overwrite the
// excess); longer lists continue sixteen at a time. A destination with
// more than k neighbours is listed in todo (without a branch) and its
// lanes are overwritten by its draws.
TEXT ·takeAll16(SB), NOSPLIT, $0-72
	MOVQ ind+0(FP), SI
	MOVQ sp+8(FP), DI
	MOVQ nd+16(FP), CX
	MOVQ k+24(FP), DX
	MOVQ out+32(FP), R8
	MOVQ pos+40(FP), R9
	MOVQ ip+48(FP), R10
	MOVQ todo+56(FP), R11
	MOVQ $·iota16(SB), AX
	VMOVDQU32 (AX), Z29           // 0, 1, ..., 15 (int32)
	VPMOVZXDQ Y29, Z30            // 0, ..., 7 (int64)
	MOVQ $8, AX
	VPBROADCASTQ AX, Z28
	VPADDQ Z28, Z30, Z31          // 8, ..., 15 (int64)
	XORQ AX, AX                   // i
	XORQ BX, BX                   // e
	XORQ R12, R12                 // nt
	MOVQ BX, (R10)                // ip[0] = 0
	TESTQ CX, CX
	JZ done
loop:
	MOVQ (DI), R13                // lo
	MOVQ 8(DI), R14
	SUBQ R13, R14                 // d
	MOVL AX, (R11)(R12*4)         // todo[nt] = i, kept where d > k
	XORL R15, R15
	CMPQ R14, DX
	SETGT R15
	ADDQ R15, R12
	VPBROADCASTD R14, Z0
	VPCMPUD $1, Z0, Z29, K1       // lanes below d (d < 2^31: the graph is in cache)
	VMOVDQU32.Z (SI)(R13*4), K1, Z1
	VMOVDQU32 Z1, (R8)(BX*4)
	VPBROADCASTQ R13, Z2
	VPADDQ Z30, Z2, Z3
	VPADDQ Z31, Z2, Z4
	VMOVDQU64 Z3, (R9)(BX*8)
	VMOVDQU64 Z4, 64(R9)(BX*8)
	CMPQ R14, $16
	JGT long
next:
	CMPQ R14, DX                  // e += min(d, k)
	CMOVQGT DX, R14
	ADDQ R14, BX
	INCQ AX
	MOVQ BX, (R10)(AX*8)          // ip[i+1]
	ADDQ $16, DI
	CMPQ AX, CX
	JB loop
done:
	MOVQ R12, nt+64(FP)
	VZEROUPPER
	RET
long:
	// More than sixteen neighbours: the rest of the list when it has at
	// most k, sixteen lanes a step (R15: lanes done; R13 and BX advance
	// with it and BX is put back after).
	CMPQ R14, DX
	JGT next
	MOVQ $16, R15
	VPBROADCASTQ R15, Z5          // 16 (int64)
	VPBROADCASTD R15, Z6          // lanes done (int32)
	VMOVDQA32 Z6, Z8              // 16 (int32)
longloop:
	ADDQ $16, R13
	ADDQ $16, BX
	VPADDD Z29, Z6, Z7
	VPCMPUD $1, Z0, Z7, K1        // lanes below d
	VMOVDQU32.Z (SI)(R13*4), K1, Z1
	VMOVDQU32 Z1, (R8)(BX*4)
	VPADDQ Z5, Z3, Z3
	VPADDQ Z5, Z4, Z4
	VMOVDQU64 Z3, (R9)(BX*8)
	VMOVDQU64 Z4, 64(R9)(BX*8)
	VPADDD Z8, Z6, Z6
	ADDQ $16, R15
	CMPQ R15, R14
	JLT longloop
	SUBQ R15, BX
	ADDQ $16, BX
	JMP next

// func takeAll8(ind *int32, sp *int64, nd int, k int, out *int32, pos *int64, ip *int64, todo *int32) (nt int)
//
// takeAll16 with AVX2, eight lanes a step (VPMASKMOVD loads; masked-off
// lanes are not read).
TEXT ·takeAll8(SB), NOSPLIT, $0-72
	MOVQ ind+0(FP), SI
	MOVQ sp+8(FP), DI
	MOVQ nd+16(FP), CX
	MOVQ k+24(FP), DX
	MOVQ out+32(FP), R8
	MOVQ pos+40(FP), R9
	MOVQ ip+48(FP), R10
	MOVQ todo+56(FP), R11
	MOVQ $·iota16(SB), AX
	VMOVDQU (AX), Y13             // 0, 1, ..., 7 (int32)
	VPMOVZXDQ X13, Y14            // 0, ..., 3 (int64)
	MOVQ $4, AX
	VMOVQ AX, X12
	VPBROADCASTQ X12, Y12
	VPADDQ Y12, Y14, Y15          // 4, ..., 7 (int64)
	XORQ AX, AX                   // i
	XORQ BX, BX                   // e
	XORQ R12, R12                 // nt
	MOVQ BX, (R10)                // ip[0] = 0
	TESTQ CX, CX
	JZ done8
loop8:
	MOVQ (DI), R13                // lo
	MOVQ 8(DI), R14
	SUBQ R13, R14                 // d
	MOVL AX, (R11)(R12*4)         // todo[nt] = i, kept where d > k
	XORL R15, R15
	CMPQ R14, DX
	SETGT R15
	ADDQ R15, R12
	VMOVQ R14, X0
	VPBROADCASTD X0, Y0
	VPCMPGTD Y13, Y0, Y1          // lanes below d
	VPMASKMOVD (SI)(R13*4), Y1, Y2
	VMOVDQU Y2, (R8)(BX*4)
	VMOVQ R13, X3
	VPBROADCASTQ X3, Y3
	VPADDQ Y14, Y3, Y4
	VPADDQ Y15, Y3, Y5
	VMOVDQU Y4, (R9)(BX*8)
	VMOVDQU Y5, 32(R9)(BX*8)
	CMPQ R14, $8
	JGT long8
next8:
	CMPQ R14, DX                  // e += min(d, k)
	CMOVQGT DX, R14
	ADDQ R14, BX
	INCQ AX
	MOVQ BX, (R10)(AX*8)          // ip[i+1]
	ADDQ $16, DI
	CMPQ AX, CX
	JB loop8
done8:
	MOVQ R12, nt+64(FP)
	VZEROUPPER
	RET
long8:
	// The rest of a list of more than eight and at most k neighbours,
	// as takeAll16 does.
	CMPQ R14, DX
	JGT next8
	MOVQ $8, R15
	VMOVQ R15, X6
	VPBROADCASTQ X6, Y9           // 8 (int64)
	VPBROADCASTD X6, Y6           // lanes done (int32)
	VMOVDQA Y6, Y8                // 8 (int32)
longloop8:
	ADDQ $8, R13
	ADDQ $8, BX
	VPADDD Y13, Y6, Y7
	VPCMPGTD Y7, Y0, Y1           // lanes below d
	VPMASKMOVD (SI)(R13*4), Y1, Y2
	VMOVDQU Y2, (R8)(BX*4)
	VPADDQ Y9, Y4, Y4
	VPADDQ Y9, Y5, Y5
	VMOVDQU Y4, (R9)(BX*8)
	VMOVDQU Y5, 32(R9)(BX*8)
	VPADDD Y8, Y6, Y6
	ADDQ $8, R15
	CMPQ R15, R14
	JLT longloop8
	SUBQ R15, BX
	ADDQ $8, BX
	JMP next8
