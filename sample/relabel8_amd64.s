//go:build !noasm

#include "textflag.h"

// func relabel8(tab *uint32, ntab int, idx *int32, n int, nodes *int32, nn int, gen uint32, t *relabel8Tables, pf int) (outNN int, done int)
//
// denseMap.relabel eight ids at a time (AVX2) over the first n&^7 ids of
// idx, stopping before a vector holding an id outside [0, ntab): see
// relabelVec. AVX2 has no conflict detection, compress or scatter, so per
// vector: load the entries (eight scalar loads: VPGATHERDD took 1.05x the
// time here and is microcoded slowly on Intel cores patched for Gather
// Data Sampling); where new ids repeat within the vector, find each
// lane's first occurrence among the lanes (compare the ids with
// themselves rotated by 1..7 lanes: the largest rotation that matches
// names the earliest lane); number the
// first occurrences of new ids in lane order (a table of nibble-packed
// ranks by the mask of new lanes); give every lane its first occurrence's
// local id (VPERMD); write every lane's entry back, gen<<24 | local id,
// one store each at tab[u] with u loaded again from idx (a seen lane's
// entry is unchanged, a repeat's is its first occurrence's); store the
// local ids; and append the new ids to nodes in lane order (a table of
// nibble-packed lane indices, VPERMD; a whole vector is written, which
// nodes' capacity allows).
//
// The entries are written at addresses known as soon as the ids are
// loaded. Written instead at the compressed new ids (only the new
// entries), the stores' addresses came at the end of the vector's
// arithmetic, and the next vectors' loads of the array, which may alias
// them, waited or were replayed: 2.7-4.0 ns an id against 1.1 without
// the stores (AMD EPYC Zen 5).
//
// The entries are prefetched 64 ids ahead where pf is not 0, as
// relabel16's (see relabelVec): 32 ahead
// left the misses of a 10M-node graph's 40 MB array exposed (Xeon with
// AMX, GRAPHMILL_KERNEL=avx2, [15,10,5], alternated in one process: the
// last hop relabelled at 6.2 and 5.6 ns an edge against 7.0 and 6.4, the
// minibatch took 0.964 of the time; 0.985-0.989 on the 1M-node graph,
// Cora unchanged). The prefetches sit at the loop's bottom, after the
// next vector's test for pf, and a vector of seen ids takes the loop's
// tail in place: without prefetches the loop takes one branch back
// instead of three branches a vector (the test skipping the prefetches,
// to the seen lanes' store and back). Measured (AMD EPYC Zen 5, one core,
// Cora's table, three hops of random edges' sources after 1,024 seeds,
// 41 paired rounds, medians): 0.932-0.935 of the time an id; with
// prefetches 0.995 (the 1M-node graph's table 0.998).
TEXT ·relabel8(SB), NOSPLIT, $0-88
	MOVQ tab+0(FP), SI
	MOVQ idx+16(FP), DI
	MOVQ n+24(FP), CX
	MOVQ nodes+32(FP), R8
	MOVQ nn+40(FP), R9
	MOVL gen+48(FP), AX
	MOVQ t+56(FP), R10
	MOVQ ntab+8(FP), BX
	DECQ BX
	VMOVD BX, X15
	VPBROADCASTD X15, Y15         // ntab-1 (the caller keeps ntab in [1, 2^31))
	MOVQ pf+64(FP), BX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14         // gen
	VPSLLD $24, Y14, Y8           // gen << 24
	MOVL $0xffffff, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13         // local-id mask
	VMOVDQU 2496(R10), Y12        // 0, 1, ..., 7
	VMOVDQU 2528(R10), Y11        // 7, 0, 1, ..., 6: rotates by one lane
	VMOVDQU 2560(R10), Y10        // 0, 4, ..., 28: nibble shifts
	MOVL $15, AX
	VMOVD AX, X9
	VPBROADCASTD X9, Y9           // nibble mask
	XORQ DX, DX                   // q
	ANDQ $~7, CX
	JZ done
	TESTQ BX, BX
	JNZ prefetch
loop:
	VMOVDQU (DI)(DX*4), Y0        // u
	VPMAXUD Y15, Y0, Y1
	VPCMPEQD Y15, Y1, Y1          // u <= ntab-1 (unsigned)
	VMOVMSKPS Y1, AX
	CMPL AX, $0xff
	JNE done
	MOVL 0(DI)(DX*4), R11
	MOVL (SI)(R11*4), R11
	VMOVD R11, X1
	MOVL 4(DI)(DX*4), R11
	MOVL (SI)(R11*4), R11
	VPINSRD $1, R11, X1, X1
	MOVL 8(DI)(DX*4), R11
	MOVL (SI)(R11*4), R11
	VPINSRD $2, R11, X1, X1
	MOVL 12(DI)(DX*4), R11
	MOVL (SI)(R11*4), R11
	VPINSRD $3, R11, X1, X1
	MOVL 16(DI)(DX*4), R11
	MOVL (SI)(R11*4), R11
	VMOVD R11, X2
	MOVL 20(DI)(DX*4), R11
	MOVL (SI)(R11*4), R11
	VPINSRD $1, R11, X2, X2
	MOVL 24(DI)(DX*4), R11
	MOVL (SI)(R11*4), R11
	VPINSRD $2, R11, X2, X2
	MOVL 28(DI)(DX*4), R11
	MOVL (SI)(R11*4), R11
	VPINSRD $3, R11, X2, X2
	VINSERTI128 $1, X2, Y1, Y1 // e = tab[u]
	VPSRLD $24, Y1, Y7
	VPCMPEQD Y14, Y7, Y7          // seen: e's generation is gen
	VMOVMSKPS Y7, AX
	CMPL AX, $0xff
	JEQ allseen
	// Repeats among the new lanes are rare: test for any (the new ids
	// compared with themselves rotated by 1..4 lanes, which covers every
	// pair of lanes; seen lanes replaced by distinct negative ids) and
	// find first occurrences only where there is one.
	VPBLENDVB Y7, 2592(R10), Y0, Y4
	VMOVDQA Y4, Y5
	VPERMD Y5, Y11, Y5
	VPCMPEQD Y4, Y5, Y6
	VPERMD Y5, Y11, Y5
	VPCMPEQD Y4, Y5, Y3
	VPOR Y3, Y6, Y6
	VPERMD Y5, Y11, Y5
	VPCMPEQD Y4, Y5, Y3
	VPOR Y3, Y6, Y6
	VPERMD Y5, Y11, Y5
	VPCMPEQD Y4, Y5, Y3
	VPOR Y3, Y6, Y6
	VMOVDQA Y12, Y3               // every lane its own first occurrence
	VPTEST Y6, Y6
	JZ firsts
	// first occurrence: lane j-s for the largest s in 1..7 with u[j-s] == u[j]
	VMOVDQA Y0, Y4
	VPERMD Y4, Y11, Y4
	VPCMPEQD Y0, Y4, Y5
	VPAND 2048(R10), Y5, Y5
	VPBLENDVB Y5, 2272(R10), Y3, Y3
	VPERMD Y4, Y11, Y4
	VPCMPEQD Y0, Y4, Y5
	VPAND 2080(R10), Y5, Y5
	VPBLENDVB Y5, 2304(R10), Y3, Y3
	VPERMD Y4, Y11, Y4
	VPCMPEQD Y0, Y4, Y5
	VPAND 2112(R10), Y5, Y5
	VPBLENDVB Y5, 2336(R10), Y3, Y3
	VPERMD Y4, Y11, Y4
	VPCMPEQD Y0, Y4, Y5
	VPAND 2144(R10), Y5, Y5
	VPBLENDVB Y5, 2368(R10), Y3, Y3
	VPERMD Y4, Y11, Y4
	VPCMPEQD Y0, Y4, Y5
	VPAND 2176(R10), Y5, Y5
	VPBLENDVB Y5, 2400(R10), Y3, Y3
	VPERMD Y4, Y11, Y4
	VPCMPEQD Y0, Y4, Y5
	VPAND 2208(R10), Y5, Y5
	VPBLENDVB Y5, 2432(R10), Y3, Y3
	VPERMD Y4, Y11, Y4
	VPCMPEQD Y0, Y4, Y5
	VPAND 2240(R10), Y5, Y5
	VPBLENDVB Y5, 2464(R10), Y3, Y3
firsts:
	VPCMPEQD Y12, Y3, Y6          // first occurrences
	VPANDN Y6, Y7, Y6             // new: first occurrences not seen
	VMOVMSKPS Y6, AX
	MOVL (R10)(AX*4), R12         // ranks among the new lanes, by nibble
	MOVL 1024(R10)(AX*4), R13     // the new lanes in order, by nibble
	POPCNTL AX, AX                // the count of new ids
	VMOVD R12, X5
	VPBROADCASTD X5, Y5
	VPSRLVD Y10, Y5, Y5
	VPAND Y9, Y5, Y5
	VMOVD R9, X4
	VPBROADCASTD X4, Y4
	VPADDD Y4, Y5, Y5             // new local ids
	VPAND Y13, Y1, Y1             // seen lanes' local ids
	VPBLENDVB Y7, Y1, Y5, Y5
	VPERMD Y5, Y3, Y5             // each lane takes its first occurrence's
	VPOR Y8, Y5, Y7               // the entries
	MOVL 0(DI)(DX*4), R11
	VMOVD X7, R12
	MOVL R12, (SI)(R11*4)
	MOVL 4(DI)(DX*4), R11
	VPEXTRD $1, X7, R12
	MOVL R12, (SI)(R11*4)
	MOVL 8(DI)(DX*4), R11
	VPEXTRD $2, X7, R12
	MOVL R12, (SI)(R11*4)
	MOVL 12(DI)(DX*4), R11
	VPEXTRD $3, X7, R12
	MOVL R12, (SI)(R11*4)
	VEXTRACTI128 $1, Y7, X7
	MOVL 16(DI)(DX*4), R11
	VMOVD X7, R12
	MOVL R12, (SI)(R11*4)
	MOVL 20(DI)(DX*4), R11
	VPEXTRD $1, X7, R12
	MOVL R12, (SI)(R11*4)
	MOVL 24(DI)(DX*4), R11
	VPEXTRD $2, X7, R12
	MOVL R12, (SI)(R11*4)
	MOVL 28(DI)(DX*4), R11
	VPEXTRD $3, X7, R12
	MOVL R12, (SI)(R11*4)
	VMOVDQU Y5, (DI)(DX*4)        // the local ids
	VMOVD R13, X6
	VPBROADCASTD X6, Y6
	VPSRLVD Y10, Y6, Y6
	VPAND Y9, Y6, Y6
	VPERMD Y0, Y6, Y6             // the new ids in lane order
	VMOVDQU Y6, (R8)(R9*4)
	ADDQ AX, R9
next:
	ADDQ $8, DX
	CMPQ DX, CX
	JAE done
	TESTQ BX, BX
	JZ loop
	JMP prefetch
done:
	MOVQ R9, outNN+72(FP)
	MOVQ DX, done+80(FP)
	VZEROUPPER
	RET
allseen:
	// Every lane seen: its local id is its entry's, and nothing is
	// written to the array or the nodes.
	VPAND Y13, Y1, Y5
	VMOVDQU Y5, (DI)(DX*4)
	ADDQ $8, DX
	CMPQ DX, CX
	JAE done
	TESTQ BX, BX
	JZ loop
prefetch:
	// prefetch the entries of the ids 64 ahead
	LEAQ 64(DX), R12
	CMPQ R12, CX
	JAE loop
	MOVL 256(DI)(DX*4), AX
	PREFETCHT0 (SI)(AX*4)
	MOVL 260(DI)(DX*4), AX
	PREFETCHT0 (SI)(AX*4)
	MOVL 264(DI)(DX*4), AX
	PREFETCHT0 (SI)(AX*4)
	MOVL 268(DI)(DX*4), AX
	PREFETCHT0 (SI)(AX*4)
	MOVL 272(DI)(DX*4), AX
	PREFETCHT0 (SI)(AX*4)
	MOVL 276(DI)(DX*4), AX
	PREFETCHT0 (SI)(AX*4)
	MOVL 280(DI)(DX*4), AX
	PREFETCHT0 (SI)(AX*4)
	MOVL 284(DI)(DX*4), AX
	PREFETCHT0 (SI)(AX*4)
	JMP loop
