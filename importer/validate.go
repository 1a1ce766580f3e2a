package importer

import (
	"fmt"
	"math"

	"github.com/graphmill/graphmill/dataset"
)

// maxNodes is the largest node count a Raw can hold: ids are int32.
const maxNodes = math.MaxInt32

// validate checks every invariant of a Raw that the importers promise:
// consistent lengths, node ids in range, labels in range, splits in range,
// without duplicates, pairwise disjoint and labelled. Every importer runs it
// before returning, so a nil error from an importer implies a usable Raw.
func validate(r *dataset.Raw) error {
	if r == nil {
		return fmt.Errorf("nil dataset")
	}
	n := r.NumNodes
	if n < 0 || n > maxNodes {
		return fmt.Errorf("node count %d out of range [0,%d]", n, maxNodes)
	}
	if n == 0 {
		// An empty or all-comment file: a 0-node dataset trains nothing.
		return fmt.Errorf("no nodes and no edges: nothing to import")
	}
	if len(r.Src) != len(r.Dst) {
		return fmt.Errorf("%d edge sources but %d edge destinations", len(r.Src), len(r.Dst))
	}
	for i, v := range r.Src {
		if v < 0 || int(v) >= n {
			return fmt.Errorf("edge %d: source %d out of range [0,%d)", i, v, n)
		}
	}
	for i, v := range r.Dst {
		if v < 0 || int(v) >= n {
			return fmt.Errorf("edge %d: destination %d out of range [0,%d)", i, v, n)
		}
	}
	if r.EdgeWeights != nil {
		if len(r.EdgeWeights) != len(r.Src) {
			return fmt.Errorf("%d edge weights for %d edges", len(r.EdgeWeights), len(r.Src))
		}
		if err := dataset.CheckWeights(r.EdgeWeights); err != nil {
			return err
		}
	}
	if r.FeatureDim < 0 {
		return fmt.Errorf("negative feature dimension %d", r.FeatureDim)
	}
	if r.FeatureDim == 0 && r.Features != nil {
		return fmt.Errorf("%d feature values but feature dimension 0", len(r.Features))
	}
	if r.FeatureDim > 0 && len(r.Features) != n*r.FeatureDim {
		return fmt.Errorf("%d feature values, want %d nodes x %d = %d", len(r.Features), n, r.FeatureDim, n*r.FeatureDim)
	}
	if r.NumClasses < 0 {
		return fmt.Errorf("negative class count %d", r.NumClasses)
	}
	if r.Labels != nil {
		if len(r.Labels) != n {
			return fmt.Errorf("%d labels for %d nodes", len(r.Labels), n)
		}
		for i, l := range r.Labels {
			if l < -1 || int(l) >= r.NumClasses {
				return fmt.Errorf("node %d: label %d out of range [0,%d) (or -1 for unlabelled)", i, l, r.NumClasses)
			}
		}
	} else if r.NumClasses != 0 {
		return fmt.Errorf("%d classes but no labels", r.NumClasses)
	}
	return dataset.CheckSplits(n, r.Labels, r.Train, r.Val, r.Test, true)
}
