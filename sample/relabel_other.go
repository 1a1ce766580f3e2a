//go:build !amd64 || noasm

package sample

// relabelWidths is empty: there is no vector relabelling kernel here.
var relabelWidths []int

// relabelSeenWidth is 0: no kernel to switch to.
var relabelSeenWidth int

// relabelVec relabels nothing: denseMap.relabel's loop does it all.
func relabelVec(tab []uint32, idx, nodes []int32, nn int, gen uint32) (int, int) { return nn, 0 }
