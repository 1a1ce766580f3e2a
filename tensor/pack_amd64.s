//go:build amd64 && !noasm

#include "textflag.h"

// Packing copies of GEMM operands (hand-written, SSE2: every amd64 CPU).
// packTW (W = 6, 12, 16, 32 floats) copies, for t < tiles and q < rows,
// the W floats at src + q*lds + t*W to dst + t*stride + q*W (lds and
// stride in floats): a group of rows read as that many sequential
// streams, each tile (or column panel) getting its rows written
// contiguously. Arguments: (dst, src *float32, lds, rows, tiles, stride int).
// Each row's piece is prefetched rows*lds floats ahead: the same piece of
// the next group of rows, which hardware prefetchers, stopping at 4 KiB
// pages, would fetch late (16384x602x256 Xᵀ·dY on Zen 4: 88 -> 94-97
// GFLOP/s).

#define PACK_PROLOGUE \
	MOVQ dst+0(FP), DI \
	MOVQ src+8(FP), SI \
	MOVQ lds+16(FP), R8 \
	SHLQ $2, R8 \
	MOVQ rows+24(FP), R9 \
	MOVQ tiles+32(FP), R10 \
	MOVQ stride+40(FP), R11 \
	SHLQ $2, R11 \
	MOVQ R8, R12 \
	IMULQ R9, R12

// PACK_LOOP(body, bytes, label): the tile and row loops around body, which
// copies one row's bytes from AX to DX.
#define PACK_LOOP(body, bytes, tileL, rowL, doneL) \
	TESTQ R9, R9 \
	JLE doneL \
	TESTQ R10, R10 \
	JLE doneL \
tileL: \
	MOVQ SI, AX \
	MOVQ DI, DX \
	MOVQ R9, CX \
rowL: \
	body \
	ADDQ R8, AX \
	ADDQ $bytes, DX \
	DECQ CX \
	JNZ rowL \
	ADDQ $bytes, SI \
	ADDQ R11, DI \
	DECQ R10 \
	JNZ tileL \
doneL: \
	RET

#define COPY24 \
	PREFETCHT0 (AX)(R12*1) \
	MOVUPS 0(AX), X0 \
	MOVQ 16(AX), X1 \
	MOVUPS X0, 0(DX) \
	MOVQ X1, 16(DX)

#define COPY48 \
	PREFETCHT0 (AX)(R12*1) \
	MOVUPS 0(AX), X0 \
	MOVUPS 16(AX), X1 \
	MOVUPS 32(AX), X2 \
	MOVUPS X0, 0(DX) \
	MOVUPS X1, 16(DX) \
	MOVUPS X2, 32(DX)

#define COPY64 \
	PREFETCHT0 (AX)(R12*1) \
	MOVUPS 0(AX), X0 \
	MOVUPS 16(AX), X1 \
	MOVUPS 32(AX), X2 \
	MOVUPS 48(AX), X3 \
	MOVUPS X0, 0(DX) \
	MOVUPS X1, 16(DX) \
	MOVUPS X2, 32(DX) \
	MOVUPS X3, 48(DX)

#define COPY128 \
	PREFETCHT0 (AX)(R12*1) \
	PREFETCHT0 64(AX)(R12*1) \
	MOVUPS 0(AX), X0 \
	MOVUPS 16(AX), X1 \
	MOVUPS 32(AX), X2 \
	MOVUPS 48(AX), X3 \
	MOVUPS 64(AX), X4 \
	MOVUPS 80(AX), X5 \
	MOVUPS 96(AX), X6 \
	MOVUPS 112(AX), X7 \
	MOVUPS X0, 0(DX) \
	MOVUPS X1, 16(DX) \
	MOVUPS X2, 32(DX) \
	MOVUPS X3, 48(DX) \
	MOVUPS X4, 64(DX) \
	MOVUPS X5, 80(DX) \
	MOVUPS X6, 96(DX) \
	MOVUPS X7, 112(DX)

// func packT6(dst, src *float32, lds, rows, tiles, stride int)
TEXT ·packT6(SB), NOSPLIT, $0-48
	PACK_PROLOGUE
	PACK_LOOP(COPY24, 24, p6_tile, p6_row, p6_done)

// func packT12(dst, src *float32, lds, rows, tiles, stride int)
TEXT ·packT12(SB), NOSPLIT, $0-48
	PACK_PROLOGUE
	PACK_LOOP(COPY48, 48, p12_tile, p12_row, p12_done)

// func packT16(dst, src *float32, lds, rows, tiles, stride int)
TEXT ·packT16(SB), NOSPLIT, $0-48
	PACK_PROLOGUE
	PACK_LOOP(COPY64, 64, p16_tile, p16_row, p16_done)

// func packT32(dst, src *float32, lds, rows, tiles, stride int)
TEXT ·packT32(SB), NOSPLIT, $0-48
	PACK_PROLOGUE
	PACK_LOOP(COPY128, 128, p32_tile, p32_row, p32_done)
