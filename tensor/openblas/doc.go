// Package openblas is a minimal cgo wrapper of OpenBLAS's cblas_sgemm with an
// explicit thread count. It exists only as a yardstick: tests built with
// "-tags openblas" cross-check package tensor's GEMM against it, and
// "graphmill bench gemm" reports our speed as a ratio of its speed.
//
// Without the openblas build tag (the default, pure-Go, static build) the
// package compiles to a stub whose Available is false and whose Sgemm
// returns an error. Building with the tag needs cgo and libopenblas-dev.
package openblas
