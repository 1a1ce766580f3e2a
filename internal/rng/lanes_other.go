//go:build !amd64 || noasm

package rng

// lanesFast has no vector kernels here: Lanes16 draws one at a time.
func lanesFast(dst []uint16, s uint64) int { return 0 }
