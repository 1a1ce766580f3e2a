//go:build !noasm

#include "textflag.h"

// func takeAll8(ind *int32, indptr *int64, dst *int32, nd int, k int, sp *int64, out *int32, pos *int64, ip *int64, todo *int32, nind int) (nt int)
//
// takeAll with AVX2: per destination, its range, its offset, and eight lanes of its
// list copied without a branch on its length (a load of eight ids, lanes
// past the list included; a whole vector stored to out and two to pos,
// which takeAllSlack allows; the next destination's stores overwrite the
// excess); longer lists continue eight at a time. Only where the eight
// lanes would pass the end of ind (nind ids) is the load masked
// (VPMASKMOVD, which does not read the lanes masked off): a branch taken
// for the array's last few ids alone. Masked on every list, it cost AMD
// EPYC Zen 1 dearly: plain loads took 0.849 of a Cora minibatch's time
// with fanouts 25,10 and 0.858 with 15,10,5 (one core, paired rounds of
// 400 minibatches, medians). A destination with more than k neighbours
// is listed in todo (without a branch) and its lanes are overwritten by
// its draws. The masked load's lanes are made out of line, and the
// positions' lo broadcast from memory rather than moved from a general
// register: 0.87-0.92 of the time a destination on Cora (AMD EPYC Zen 5,
// one core, 2,500 random destinations, k 5 to 25, 21 paired rounds,
// medians); the longer lists' mask likewise (0.975 and 0.988 with k 25
// and 10 on a 100k-node graph of 20 edges a node).
//
// Sixteen lanes with AVX-512 (whole or masked stores) took 1.05 times as
// long on Cora (AMD EPYC Zen 5, paired rounds), its 3.9 neighbours a node
// fitting eight lanes and its 64-byte stores splitting more cache lines;
// 0.96-0.98 as long on graphs of 10 and 20 neighbours a node.
TEXT ·takeAll8(SB), NOSPLIT, $0-96
	MOVQ ind+0(FP), SI
	MOVQ indptr+8(FP), CX
	MOVQ dst+16(FP), DX
	MOVQ sp+40(FP), DI
	MOVQ out+48(FP), R8
	MOVQ pos+56(FP), R9
	MOVQ ip+64(FP), R10
	MOVQ todo+72(FP), R11
	MOVQ $·iota16(SB), AX
	VMOVDQU (AX), Y13             // 0, 1, ..., 7 (int32)
	VPMOVZXDQ X13, Y14            // 0, ..., 3 (int64)
	MOVQ $4, AX
	VMOVQ AX, X12
	VPBROADCASTQ X12, Y12
	VPADDQ Y12, Y14, Y15          // 4, ..., 7 (int64)
	VPADDQ Y12, Y12, Y10          // 8 (int64)
	XORQ AX, AX                   // i
	XORQ BX, BX                   // e
	XORQ R12, R12                 // nt
	MOVQ BX, (R10)                // ip[0] = 0
	CMPQ BX, nd+24(FP)
	JEQ done8
loop8:
	MOVLQSX (DX)(AX*4), R13       // v = dst[i]
	MOVQ 8(CX)(R13*8), R14        // hi
	VPBROADCASTQ (CX)(R13*8), Y3  // lo, for the positions
	MOVQ (CX)(R13*8), R13         // lo
	MOVQ R13, (DI)
	MOVQ R14, 8(DI)
	SUBQ R13, R14                 // d
	MOVL AX, (R11)(R12*4)         // todo[nt] = i, kept where d > k
	XORL R15, R15
	CMPQ R14, k+32(FP)
	SETGT R15
	ADDQ R15, R12
	LEAQ 8(R13), R15
	CMPQ R15, nind+80(FP)
	JA mask8
	VMOVDQU (SI)(R13*4), Y2       // lanes past the list: overwritten later
took8:
	VMOVDQU Y2, (R8)(BX*4)
	VPADDQ Y14, Y3, Y4
	VPADDQ Y15, Y3, Y5
	VMOVDQU Y4, (R9)(BX*8)
	VMOVDQU Y5, 32(R9)(BX*8)
	CMPQ R14, $8
	JGT long8
next8:
	CMPQ R14, k+32(FP)            // e += min(d, k)
	CMOVQGT k+32(FP), R14
	ADDQ R14, BX
	INCQ AX
	MOVQ BX, (R10)(AX*8)          // ip[i+1]
	ADDQ $16, DI
	CMPQ AX, nd+24(FP)
	JB loop8
done8:
	MOVQ R12, nt+88(FP)
	VZEROUPPER
	RET
mask8:
	VMOVQ R14, X0
	VPBROADCASTD X0, Y0
	VPCMPGTD Y13, Y0, Y1          // lanes below d
	VPMASKMOVD (SI)(R13*4), Y1, Y2 // the array ends within the lanes
	JMP took8
long8:
	// The rest of a list of more than eight and at most k neighbours,
	// eight lanes a step (R15: lanes done; R13 and BX advance with it and
	// BX is put back after; CX, scratch here, is indptr again after).
	CMPQ R14, k+32(FP)
	JGT next8
	MOVQ $8, R15
longloop8:
	ADDQ $8, R13
	ADDQ $8, BX
	LEAQ 8(R13), CX
	CMPQ CX, nind+80(FP)
	JA maskL8
	VMOVDQU (SI)(R13*4), Y2
tookL8:
	VMOVDQU Y2, (R8)(BX*4)
	VPADDQ Y10, Y4, Y4
	VPADDQ Y10, Y5, Y5
	VMOVDQU Y4, (R9)(BX*8)
	VMOVDQU Y5, 32(R9)(BX*8)
	ADDQ $8, R15
	CMPQ R15, R14
	JLT longloop8
	MOVQ indptr+8(FP), CX
	SUBQ R15, BX
	ADDQ $8, BX
	JMP next8
maskL8:
	VMOVQ R14, X0
	VPBROADCASTD X0, Y0           // d (int32)
	VMOVQ R15, X7
	VPBROADCASTD X7, Y7
	VPADDD Y13, Y7, Y7            // the lanes' positions in the list
	VPCMPGTD Y7, Y0, Y1           // lanes below d
	VPMASKMOVD (SI)(R13*4), Y1, Y2 // the array ends within the lanes
	JMP tookL8

// func takeMasks16(ind *int32, sp *int64, todo *int32, lanes int, ms *uint64, out *int32, pos *int64, ip *int64)
//
// takeMask with AVX-512 for the destinations todo[j] of the lanes j (< 8)
// set in lanes, each with a list of at most 64 (see takeMasks): sixteen
// neighbours at a time, only those mask ms[j] draws loaded (a masked
// load, which does not read the others), compressed to the front
// (VPCOMPRESSD), as are their offsets, which become CSC positions widened
// to 64 bits; both stored under a mask of as many lanes as were drawn,
// at the destination's offset ip[i]: nothing else is written.
TEXT ·takeMasks16(SB), NOSPLIT, $0-64
	MOVQ ind+0(FP), SI
	MOVQ sp+8(FP), DI
	MOVQ todo+16(FP), R8
	MOVQ lanes+24(FP), R9
	MOVQ ms+32(FP), R10
	MOVQ out+40(FP), R11
	MOVQ pos+48(FP), R12
	MOVQ ip+56(FP), R13
	MOVQ $·iota16(SB), AX
	VMOVDQU32 (AX), Z16           // 0, 1, ..., 15
	MOVL $8, AX
	VPBROADCASTD AX, Z17
	VPADDD Z17, Z16, Z17          // 8, ..., 15, 16, ...: lanes 8-15 to the front (VPERMD)
	XORQ DX, DX                   // j
	TESTQ R9, R9
	JZ doneM
entryM:
	TESTQ $1, R9
	JZ nextM
	MOVLQSX (R8)(DX*4), AX        // i = todo[j]
	SHLQ $4, AX
	MOVQ (DI)(AX*1), BX           // lo = sp[2i]
	SHRQ $1, AX
	MOVQ (R13)(AX*1), R14         // e = ip[i]
	MOVQ (R10)(DX*8), R15         // the mask
chunkM:
	MOVQ R15, AX
	ANDQ $0xffff, AX              // its sixteen bits from lo on
	TESTQ AX, AX
	JZ chunkNextM
	KMOVW AX, K1
	POPCNTL AX, CX                // drawn among them
	VMOVDQU32.Z (SI)(BX*4), K1, Z0
	VPCOMPRESSD.Z Z0, K1, Z1
	VPCOMPRESSD.Z Z16, K1, Z2     // their offsets from lo
	MOVL $1, AX
	SHLQ CX, AX
	DECQ AX
	KMOVW AX, K2                  // the first CX lanes
	VMOVDQU32 Z1, K2, (R11)(R14*4)
	VPBROADCASTQ BX, Z3
	VPMOVZXDQ Y2, Z4
	VPADDQ Z3, Z4, Z4
	VMOVDQU64 Z4, K2, (R12)(R14*8)
	CMPQ CX, $8
	JLE lowM
	VPERMD Z2, Z17, Z5
	VPMOVZXDQ Y5, Z5
	VPADDQ Z3, Z5, Z5
	KSHIFTRW $8, K2, K3
	VMOVDQU64 Z5, K3, 64(R12)(R14*8)
lowM:
	ADDQ CX, R14
chunkNextM:
	ADDQ $16, BX
	SHRQ $16, R15
	TESTQ R15, R15
	JNZ chunkM
nextM:
	INCQ DX
	SHRQ $1, R9
	TESTQ R9, R9
	JNZ entryM
doneM:
	VZEROUPPER
	RET

// func takeRingKernel(ind *int32, span *int64, ring *uint64, ip *int64, n int, out *int32, pos *int64, w *int64)
//
// takeRingGo without its bounds checks, and with TZCNT where Go (built
// for any amd64) counts trailing zeros with BSF: three times TZCNT's
// time on AMD EPYC Zen 1. A CPU without BMI1 runs TZCNT as BSF, which
// gives the same count of a mask that is not zero (every mask read here
// has a bit for each position taken). Scalar, so it runs on every amd64.
TEXT ·takeRingKernel(SB), NOSPLIT, $0-64
	MOVQ ind+0(FP), SI
	MOVQ span+8(FP), DI
	MOVQ ring+16(FP), R8
	MOVQ ip+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ out+40(FP), R10
	MOVQ pos+48(FP), R11
	MOVQ w+56(FP), R12
	TESTQ CX, CX
	JLE doneR
	MOVQ (R9), AX
	SHLQ $3, AX
	SUBQ AX, R12                  // w - ip[0]: position x is staged at (R12)(x*8)
itemR:
	MOVQ (R9), DX                 // x = p
	MOVQ 8(R9), R14               // q
	CMPQ DX, R14
	JGE nextR
	MOVQ (DI), BX                 // lo
	MOVQ 8(DI), AX
	SUBQ BX, AX                   // degree
	CMPQ AX, $64
	JG longR
	MOVQ (R8), AX                 // the mask
bitR:
	TZCNTQ AX, R15
	ADDQ BX, R15                  // lo + t
	MOVL (SI)(R15*4), R13
	MOVL R13, (R10)(DX*4)
	MOVQ R15, (R12)(DX*8)
	LEAQ -1(AX), R13
	ANDQ R13, AX
	INCQ DX
	CMPQ DX, R14
	JLT bitR
	JMP nextR
longR:
	MOVQ (R11)(DX*8), R15         // a position pick drew
	MOVL (SI)(R15*4), R13
	MOVL R13, (R10)(DX*4)
	MOVQ R15, (R12)(DX*8)
	INCQ DX
	CMPQ DX, R14
	JLT longR
nextR:
	ADDQ $16, DI
	ADDQ $8, R8
	ADDQ $8, R9
	DECQ CX
	JNZ itemR
doneR:
	RET

// func takeMasksScalar(ind *int32, sp *int64, todo *int32, lanes int, ms *uint64, out *int32, pos *int64, ip *int64)
//
// takeMasks16 in scalar code, one neighbour a step (TZCNT, which runs as
// BSF without BMI1: the same count for the non-zero masks and lanes
// read), for CPUs without AVX-512: takeMasksGo without its bounds checks,
// and with TZCNT where Go built for any amd64 counts with BSF (three
// times TZCNT's time on AMD EPYC Zen 1).
TEXT ·takeMasksScalar(SB), NOSPLIT, $0-64
	MOVQ ind+0(FP), SI
	MOVQ sp+8(FP), DI
	MOVQ todo+16(FP), R8
	MOVQ lanes+24(FP), R9
	MOVQ ms+32(FP), R10
	MOVQ out+40(FP), R11
	MOVQ pos+48(FP), R12
	MOVQ ip+56(FP), R13
	TESTQ R9, R9
	JZ doneS
laneS:
	TZCNTQ R9, CX                 // the lane j
	MOVLQSX (R8)(CX*4), DX        // its destination i
	MOVQ DX, AX
	SHLQ $4, AX
	MOVQ (DI)(AX*1), BX           // lo = sp[2i]
	MOVQ (R13)(DX*8), R14         // e = ip[i]
	MOVQ (R10)(CX*8), AX          // the mask
	TESTQ AX, AX
	JZ nextS
bitS:
	TZCNTQ AX, R15
	ADDQ BX, R15                  // lo + t
	MOVL (SI)(R15*4), DX
	MOVL DX, (R11)(R14*4)
	MOVQ R15, (R12)(R14*8)
	INCQ R14
	LEAQ -1(AX), DX
	ANDQ DX, AX
	JNZ bitS
nextS:
	LEAQ -1(R9), AX
	ANDQ AX, R9
	JNZ laneS
doneS:
	RET
