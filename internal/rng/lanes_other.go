//go:build !amd64 || noasm

package rng

// lanesFast and bitsFast have no vector kernels here: Lanes16 and Lanes
// draw one at a time.
func lanesFast(dst []uint16, s uint64) int { return 0 }

func bitsFast(dst []uint16, s uint64) int { return 0 }

// FloydMasksVector reports whether FloydMasks8 draws its lanes with a
// vector kernel: not here.
func FloydMasksVector() bool { return false }

// floydFast has no vector kernel here: FloydMasks8 draws every lane one
// at a time.
func floydFast(seeds, ds *[8]uint64, k int, masks *[8]uint64) uint64 { return 0xff }
