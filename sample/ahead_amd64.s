//go:build amd64 && !noasm

#include "textflag.h"

// func aheadRanges(grp *aheadGroup, a, b int) (floyd uint64, stop int)
// See ahead_amd64.go; aheadGroup's offsets are given beside its fields.
TEXT ·aheadRanges(SB), NOSPLIT, $0-40
	MOVQ grp+0(FP), R15
	MOVQ a+8(FP), DX              // j
	MOVQ b+16(FP), R9
	XORQ R10, R10                 // floyd
	MOVQ 0(R15), SI               // dst
	MOVQ 8(R15), DI               // sp
	MOVQ 16(R15), R11             // indptr
	MOVQ 24(R15), R12             // the ring of ranges
	MOVQ 88(R15), R13             // done
	MOVQ 104(R15), R14            // k
rangeR:
	CMPQ DX, R9
	JGE doneR
	LEAQ (DX)(DX*1), BX           // 2j
	CMPQ DX, R13
	JGE freshR
	MOVQ (DI)(BX*8), AX           // lo
	MOVQ 8(DI)(BX*8), CX          // hi
	JMP haveR
freshR:
	MOVLQSX (SI)(DX*4), CX        // v
	CMPQ CX, 96(R15)
	JAE stopR                     // not a node id (unsigned)
	MOVQ (R11)(CX*8), AX          // lo
	MOVQ 8(R11)(CX*8), CX         // hi
	CMPQ 112(R15), $0
	JEQ haveR
	MOVQ AX, (DI)(BX*8)
	MOVQ CX, 8(DI)(BX*8)
haveR:
	MOVQ DX, BX
	ANDQ $63, BX
	SHLQ $1, BX                   // the ring slot's ranges
	MOVQ AX, (R12)(BX*8)
	MOVQ CX, 8(R12)(BX*8)
	SUBQ AX, CX                   // d
	CMPQ CX, R14
	JLE nextR                     // d <= k: every neighbour
	CMPQ CX, $64
	JG nextR                      // d > 64: pick
	MOVLQSX (SI)(DX*4), AX        // v
	CMPQ AX, 96(R15)
	JAE stopR
	MOVQ 72(R15), BX
	TESTQ BX, BX
	JZ keyR
	MOVL (BX)(AX*4), AX           // v's key id
keyR:
	MOVL AX, AX                   // uint32
	XORQ 80(R15), AX              // the node's key: hk ^ v
	MOVQ DX, BX
	SUBQ a+8(FP), BX              // the lane
	MOVQ 32(R15), R8
	MOVQ AX, (R8)(BX*8)           // its seed
	MOVQ 40(R15), R8
	MOVQ CX, (R8)(BX*8)           // its degree
	BTSQ BX, R10
nextR:
	INCQ DX
	JMP rangeR
doneR:
	MOVQ R9, DX                   // b: no stop
stopR:
	MOVQ R10, floyd+24(FP)
	MOVQ DX, stop+32(FP)
	RET

// func aheadMasks(grp *aheadGroup, a, j, b int, e int64) (eOut int64, stop int)
TEXT ·aheadMasks(SB), NOSPLIT, $0-56
	MOVQ grp+0(FP), R15
	MOVQ a+8(FP), R8
	MOVQ j+16(FP), DX
	MOVQ b+24(FP), R9
	MOVQ e+32(FP), R10
	MOVQ 24(R15), R12             // the ring of ranges
	MOVQ 48(R15), SI              // ms
	MOVQ 56(R15), R11             // the ring of masks
	MOVQ 64(R15), R13             // ip
	MOVQ 104(R15), R14            // k
	MOVQ 120(R15), R15            // ind
maskM:
	CMPQ DX, R9
	JGE doneM
	MOVQ DX, BX
	ANDQ $63, BX                  // the ring slot
	LEAQ (BX)(BX*1), CX
	MOVQ 8(R12)(CX*8), DI         // hi
	MOVQ (R12)(CX*8), CX          // lo
	SUBQ CX, DI                   // d
	CMPQ DI, R14
	JG someM
	CMPQ DI, $63
	JA stopM                      // negative (or k >= 64)
	XORQ AX, AX
	BTSQ DI, AX
	DECQ AX                       // every neighbour; c = d
	JMP putM
someM:
	CMPQ DI, $64
	JG stopM                      // more than 64: pick
	MOVQ DX, DI
	SUBQ R8, DI
	MOVQ (SI)(DI*8), AX           // the lane's Floyd mask
	MOVQ R14, DI                  // c = k
putM:
	MOVQ AX, (R11)(BX*8)
	ADDQ DI, R10
	MOVQ R10, 8(R13)(DX*8)        // ip[j+1] = e
	INCQ DX
	TESTQ AX, AX
	JZ maskM
	LEAQ (R15)(CX*4), CX          // the list
bitM:
	TZCNTQ AX, DI
	PREFETCHT0 (CX)(DI*4)         // a drawn neighbour's line
	LEAQ -1(AX), DI
	ANDQ DI, AX
	JNZ bitM
	JMP maskM
doneM:
	MOVQ R9, DX                   // b: no stop
stopM:
	MOVQ R10, eOut+40(FP)
	MOVQ DX, stop+48(FP)
	RET
