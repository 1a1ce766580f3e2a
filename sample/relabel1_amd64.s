//go:build !noasm

#include "textflag.h"

// func relabel1(tab *uint32, ntab int, idx *int32, n int, nodes *int32, nn int, gen uint32, pf int) (outNN int, done int)
//
// denseMap.relabel's loop, one id at a time, in plain x86-64, stopping at
// an id outside [0, ntab) (done is then its position): see relabelVec.
// New or seen is chosen without a branch (CMOV), and the count of nodes
// is carried by an add with carry, so the only chain from one id to the
// next is that add (and, for an id repeated within a few ids, the array's
// store forwarded to its next load). Every id's entry is written back
// (a seen id's unchanged) and every id is written to nodes[nn], kept only
// where it is new, as the Go loop does. The entries of the ids 128 ahead
// are prefetched where pf is not 0, eight at a time.
//
// It is the kernel of CPUs that run 256-bit vectors as two halves
// (isa.HalfWidth256), where relabel8's permutes, inserts and extracts
// cost more than the ids' own work. Measured (AMD EPYC Zen 1, one core,
// the 1M-node synthetic graph, [15,10,5], paired against relabel8 in
// rounds of 20 minibatches, medians of 40): the last hop relabelled in
// 0.891 of the time prefetching 64 ids ahead, 0.846 at 128, 0.878 at
// 256; the minibatch took 0.967-0.972 of it. On the 10M-node graph
// (memory-bound) 0.991, the minibatch 1.002; BenchmarkRelabel's dense
// array on 10M 17.6 ns an id against the hash map's 22.9, so the same
// bound (DenseRelabelNodesVector) holds. On a graph held in cache whose
// ids are mostly seen relabel8 is faster (its whole vectors of seen ids
// take a short path): Cora's [15,10,5] last hop in 0.47-0.50 of
// relabel1's time, but its first hop (mostly new ids) in 1.66-1.74.
//
// Register use: SI tab, BX ntab, DI idx, CX n, R8 nodes, R9 nn, R14 gen,
// R15 gen<<24, R10 pf, DX the position; AX, R11-R13 per id.
#define STEP \
	MOVL    (DI)(DX*4), R11 \
	CMPQ    R11, BX \
	JAE     done \
	MOVL    (SI)(R11*4), AX \
	MOVL    AX, R12 \
	SHRL    $24, R12 \
	LEAL    (R15)(R9*1), R13 \
	XORL    R14, R12 \
	CMOVLEQ AX, R13 \
	MOVL    R13, (SI)(R11*4) \
	MOVL    R11, (R8)(R9*4) \
	ANDL    $0xffffff, R13 \
	MOVL    R13, (DI)(DX*4) \
	NEGL    R12 \
	ADCQ    $0, R9 \
	INCQ    DX

#define PF(off) \
	MOVL off(DI)(DX*4), AX \
	PREFETCHT0 (SI)(AX*4)

TEXT ·relabel1(SB), NOSPLIT, $0-80
	MOVQ tab+0(FP), SI
	MOVQ ntab+8(FP), BX
	MOVQ idx+16(FP), DI
	MOVQ n+24(FP), CX
	MOVQ nodes+32(FP), R8
	MOVQ nn+40(FP), R9
	MOVL gen+48(FP), R14
	MOVL R14, R15
	SHLL $24, R15
	MOVQ pf+56(FP), R10
	XORQ DX, DX
loop8:
	LEAQ 8(DX), AX
	CMPQ AX, CX
	JA   tail
	TESTQ R10, R10
	JZ   steps
	LEAQ 136(DX), AX
	CMPQ AX, CX
	JA   steps
	// The ids 128 ahead are within idx and may be outside the array:
	// a prefetch of any address does not fault.
	PF(512)
	PF(516)
	PF(520)
	PF(524)
	PF(528)
	PF(532)
	PF(536)
	PF(540)
steps:
	STEP
	STEP
	STEP
	STEP
	STEP
	STEP
	STEP
	STEP
	JMP  loop8
tail:
	CMPQ DX, CX
	JAE  done
	STEP
	JMP  tail
done:
	MOVQ R9, outNN+64(FP)
	MOVQ DX, done+72(FP)
	RET
