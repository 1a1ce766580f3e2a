//go:build !amd64 || noasm

package rng

// lanesFast and bitsFast have no vector kernels here: Lanes16 and Lanes
// draw one at a time.
func lanesFast(dst []uint16, s uint64) int { return 0 }

func bitsFast(dst []uint16, s uint64) int { return 0 }
