package dataset

import (
	"fmt"
	"math"
)

// CheckSplits checks the train, val and test splits of a graph of n nodes:
// every id in [0, n), none twice in a split, no node in two splits, and,
// with allLabelled (and labels not nil), every split node labelled (label
// >= 0; without it unlabelled split nodes are allowed: the loss and the
// scores skip them, as a test split whose labels are withheld). It uses
// two bits per node (n/4 bytes), not a copy of the splits.
func CheckSplits(n int, labels []int32, train, val, test []int32, allLabelled bool) error {
	names := [...]string{"train", "val", "test"}
	// owner holds each node's split in two bits: 0 none, 1 train, 2 val,
	// 3 test.
	owner := make([]uint8, (n+3)/4)
	for s, split := range [][]int32{train, val, test} {
		name := names[s]
		for i, v := range split {
			if v < 0 || int(v) >= n {
				return fmt.Errorf("%s[%d]=%d out of range [0,%d)", name, i, v, n)
			}
			shift := uint(v&3) * 2
			if o := owner[v>>2] >> shift & 3; o != 0 {
				if int(o) == s+1 {
					return fmt.Errorf("%s[%d]=%d appears twice in %s", name, i, v, name)
				}
				return fmt.Errorf("%s[%d]=%d is also in %s", name, i, v, names[o-1])
			}
			owner[v>>2] |= uint8(s+1) << shift
			if labels != nil && labels[v] < 0 && allLabelled {
				return fmt.Errorf("%s[%d]=%d is unlabelled", name, i, v)
			}
		}
	}
	return nil
}

// CheckWeights reports the first edge weight that is NaN or infinite.
func CheckWeights(w []float32) error {
	for i, x := range w {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("edge weight %d is %v, not finite", i, x)
		}
	}
	return nil
}
