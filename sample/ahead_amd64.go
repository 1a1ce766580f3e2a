//go:build amd64 && !noasm

package sample

import "github.com/graphmill/graphmill/internal/isa"

// aheadKernels reports whether drawAhead runs its group loops in
// assembly (aheadRanges, aheadMasks: plain x86-64), which it does unless
// GRAPHMILL_KERNEL=generic.
//
// Written in assembly because drawAhead's Go loops capture some twenty
// variables of the hop, more than the registers: the compiler kept them
// on the stack and loaded and stored them around every destination
// (about 70 instructions a destination for the ranges). Measured: see
// drawAhead.
var aheadKernels = isa.Scalar

// aheadRanges is drawAhead's first loop over the destinations j in
// [a, b) of a group (a%16 == 0, b-a <= 16) with Floyd's lanes drawn by
// rng.FloydMasks8: it reads each one's range (from sp below grp.done, else
// from the offsets, kept in sp where grp.keep is 1), puts it in the ring
// and, where its degree d has k < d <= 64, sets lane j-a's seed (the
// node's key under grp.hk) and degree and the lane's bit in floyd. It stops
// at the first destination that is not a node id of the graph (stop: the
// index, b where there is none), which the Go loop then takes.
//
//go:noescape
func aheadRanges(grp *aheadGroup, a, b int) (floyd uint64, stop int)

// aheadMasks is drawAhead's second loop over the destinations j in
// [j, b) of a group starting at a: it sets each one's mask in the ring
// (every neighbour where d <= k, lane j-a's Floyd mask where d <= 64),
// adds the edges it draws to e and sets the block's offsets. It stops at
// the first destination with more than 64 neighbours or a negative
// degree (stop: the index, b where there is none), which the Go loop
// then takes, and returns e after the destinations before it.
//
//go:noescape
func aheadMasks(grp *aheadGroup, a, j, b int, e int64) (eOut int64, stop int)
