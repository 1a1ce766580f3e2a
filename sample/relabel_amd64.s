//go:build !noasm

#include "textflag.h"

// func relabel16(tab *uint32, ntab int, idx *int32, n int, nodes *int32, nn int, gen uint32, pf int) (outNN int, done int)
//
// denseMap.relabel sixteen ids at a time (AVX-512F and CD) over the first
// n&^15 ids of idx, stopping before a vector holding an id outside
// [0, ntab): see relabelVec. Per vector: gather the entries, split the
// lanes into seen (the current generation), first occurrences of new ids
// (no equal id in an earlier lane, VPCONFLICTD) and repeats; number the
// new ones in lane order (VPEXPANDD of 0..15), give a repeat its first
// occurrence's local id (the lowest of its conflict bits, VPERMD), store
// the local ids, append the new ids to nodes (a whole vector is written,
// which nodes' capacity allows) and scatter every lane's entry, gen<<24 |
// local id (a seen lane's unchanged, a repeat's its first occurrence's),
// under a full mask: a mask of the new lanes only came at the end of the
// vector's arithmetic, and the next vectors' gathers, which may alias the
// scatter, waited for it (0.90-0.93x the time on ids in cache; the same
// as relabel8's stores). Where pf is not 0 the entries of the ids 64
// ahead are prefetched (see relabelVec), at the loop's bottom as in
// relabel8 (0.988-0.994 of the time an id here, with and without).
TEXT ·relabel16(SB), NOSPLIT, $0-80
	MOVQ tab+0(FP), SI
	MOVQ idx+16(FP), DI
	MOVQ n+24(FP), CX
	MOVQ nodes+32(FP), R8
	MOVQ nn+40(FP), R9
	MOVL gen+48(FP), AX
	MOVQ ntab+8(FP), BX
	VPBROADCASTD BX, Z20          // ntab (the caller keeps it below 2^31)
	MOVQ pf+56(FP), BX
	VPBROADCASTD AX, Z21          // gen
	SHLL $24, AX
	VPBROADCASTD AX, Z22          // gen << 24
	MOVL $0xffffff, AX
	VPBROADCASTD AX, Z23          // local-id mask
	MOVL $31, AX
	VPBROADCASTD AX, Z24          // 31
	VPXORD Z25, Z25, Z25          // 0
	MOVQ $·iota16(SB), AX
	VMOVDQU32 (AX), Z26           // 0, 1, ..., 15
	XORQ DX, DX                   // q
	ANDQ $~15, CX
	JZ done
	TESTQ BX, BX
	JNZ prefetch
loop:
	VMOVDQU32 (DI)(DX*4), Z0      // u
	VPCMPUD $5, Z20, Z0, K1       // u >= ntab (unsigned)
	KORTESTW K1, K1
	JNZ done
	KXNORW K2, K2, K2
	VPGATHERDD (SI)(Z0*4), K2, Z1 // e = tab[u]
	VPSRLD $24, Z1, Z2
	VPCMPEQD Z21, Z2, K3          // seen: e's generation is gen
	KORTESTW K3, K3
	JCS allseen
	VPCONFLICTD Z0, Z3            // earlier lanes with the same id
	VPTESTNMD Z3, Z3, K4          // first occurrences
	KANDNW K4, K3, K5             // new: first occurrences not seen
	VPEXPANDD Z26, K5, Z4         // rank among the new lanes
	VPBROADCASTD R9, Z5
	VPADDD Z5, Z4, Z4             // new local ids
	VPANDD Z23, Z1, Z6            // seen lanes' local ids
	VMOVDQA32 Z4, K5, Z6
	// a repeated id takes the local id of its first occurrence, the
	// lowest lane of its conflict bits
	KNOTW K4, K6
	VPSUBD Z3, Z25, Z7
	VPANDD Z3, Z7, Z7
	VPLZCNTD Z7, Z7
	VPSUBD Z7, Z24, Z7
	VPERMD Z6, Z7, K6, Z6
	VMOVDQU32 Z6, (DI)(DX*4)
	VPCOMPRESSD Z0, K5, Z8
	VMOVDQU32 Z8, (R8)(R9*4)
	KMOVW K5, AX
	POPCNTL AX, AX
	ADDQ AX, R9
	VPORD Z22, Z6, Z9
	KXNORW K7, K7, K7
	VPSCATTERDD Z9, K7, (SI)(Z0*4)
next:
	ADDQ $16, DX
	CMPQ DX, CX
	JAE done
	TESTQ BX, BX
	JZ loop
	JMP prefetch
done:
	MOVQ R9, outNN+64(FP)
	MOVQ DX, done+72(FP)
	VZEROUPPER
	RET
allseen:
	// Every lane seen: its local id is its entry's, and nothing is
	// written to the array or the nodes.
	VPANDD Z23, Z1, Z6
	VMOVDQU32 Z6, (DI)(DX*4)
	ADDQ $16, DX
	CMPQ DX, CX
	JAE done
	TESTQ BX, BX
	JZ loop
prefetch:
	// prefetch the entries of the ids 64 ahead
	LEAQ 64(DX), R10
	CMPQ R10, CX
	JAE loop
	LEAQ (DI)(R10*4), R11
	MOVL 0(R11), R12
	PREFETCHT0 (SI)(R12*4)
	MOVL 4(R11), R12
	PREFETCHT0 (SI)(R12*4)
	MOVL 8(R11), R12
	PREFETCHT0 (SI)(R12*4)
	MOVL 12(R11), R12
	PREFETCHT0 (SI)(R12*4)
	MOVL 16(R11), R12
	PREFETCHT0 (SI)(R12*4)
	MOVL 20(R11), R12
	PREFETCHT0 (SI)(R12*4)
	MOVL 24(R11), R12
	PREFETCHT0 (SI)(R12*4)
	MOVL 28(R11), R12
	PREFETCHT0 (SI)(R12*4)
	MOVL 32(R11), R12
	PREFETCHT0 (SI)(R12*4)
	MOVL 36(R11), R12
	PREFETCHT0 (SI)(R12*4)
	MOVL 40(R11), R12
	PREFETCHT0 (SI)(R12*4)
	MOVL 44(R11), R12
	PREFETCHT0 (SI)(R12*4)
	MOVL 48(R11), R12
	PREFETCHT0 (SI)(R12*4)
	MOVL 52(R11), R12
	PREFETCHT0 (SI)(R12*4)
	MOVL 56(R11), R12
	PREFETCHT0 (SI)(R12*4)
	MOVL 60(R11), R12
	PREFETCHT0 (SI)(R12*4)
	JMP loop

DATA ·iota16+0(SB)/4, $0
DATA ·iota16+4(SB)/4, $1
DATA ·iota16+8(SB)/4, $2
DATA ·iota16+12(SB)/4, $3
DATA ·iota16+16(SB)/4, $4
DATA ·iota16+20(SB)/4, $5
DATA ·iota16+24(SB)/4, $6
DATA ·iota16+28(SB)/4, $7
DATA ·iota16+32(SB)/4, $8
DATA ·iota16+36(SB)/4, $9
DATA ·iota16+40(SB)/4, $10
DATA ·iota16+44(SB)/4, $11
DATA ·iota16+48(SB)/4, $12
DATA ·iota16+52(SB)/4, $13
DATA ·iota16+56(SB)/4, $14
DATA ·iota16+60(SB)/4, $15
GLOBL ·iota16(SB), RODATA, $64
