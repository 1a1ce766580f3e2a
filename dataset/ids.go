package dataset

import (
	"fmt"
	"sync"
)

// checkPermutation checks that ids holds every id of [0, len(ids)) once.
func checkPermutation(ids []int32) error {
	seen := make([]bool, len(ids))
	for i, v := range ids {
		if v < 0 || int(v) >= len(ids) {
			return fmt.Errorf("orig_ids[%d] = %d is not a node id in [0, %d)", i, v, len(ids))
		}
		if seen[v] {
			return fmt.Errorf("orig_ids[%d] = %d: original id given twice", i, v)
		}
		seen[v] = true
	}
	return nil
}

// ToOriginal replaces, in place, the node ids of d in ids by their
// original ids: for a packed dataset (Meta.Packed), the ids of the dataset
// it was packed from. It does nothing for other datasets.
func (d *Dataset) ToOriginal(ids []int32) {
	if d.OrigIDs == nil {
		return
	}
	for i, v := range ids {
		ids[i] = d.OrigIDs[v]
	}
}

// FromOriginal replaces, in place, original node ids by the node ids of d
// (the inverse of ToOriginal). Ids outside [0, num_nodes) are refused.
func (d *Dataset) FromOriginal(ids []int32) error {
	n := d.Meta.NumNodes
	for i, v := range ids {
		if v < 0 || int(v) >= n {
			return fmt.Errorf("node id %d (at %d) is not in [0, %d)", v, i, n)
		}
	}
	if d.OrigIDs == nil {
		return nil
	}
	inv := d.newIDs()
	for i, v := range ids {
		ids[i] = inv[v]
	}
	return nil
}

// newIDs returns the inverse of OrigIDs, built on first use.
func (d *Dataset) newIDs() []int32 {
	d.inv.once.Do(func() {
		d.inv.ids = make([]int32, len(d.OrigIDs))
		for i, v := range d.OrigIDs {
			d.inv.ids[v] = int32(i)
		}
	})
	return d.inv.ids
}

// inverse is the lazily built inverse of OrigIDs (a Dataset refers to it,
// so that copying a Dataset copies no lock).
type inverse struct {
	once sync.Once
	ids  []int32
}

// InOriginalOrder returns per-node values (width of them a node, in d's
// node order) in the original node order: node v's values go where its
// original id puts them. For a dataset that is not packed it returns vals.
func InOriginalOrder[T any](d *Dataset, vals []T, width int) []T {
	if d.OrigIDs == nil {
		return vals
	}
	out := make([]T, len(vals))
	for v, o := range d.OrigIDs {
		copy(out[int(o)*width:int(o+1)*width], vals[v*width:(v+1)*width])
	}
	return out
}
