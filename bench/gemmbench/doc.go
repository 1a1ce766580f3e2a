// Package gemmbench is 'graphmill bench gemm': graphmill's float32 GEMM on the shapes of GNN
// training against gonum and OpenBLAS, measured in the same run (harness in tensor/bench).
package gemmbench
