package layout

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/internal/diskio"
	"github.com/graphmill/graphmill/npy"
)

// WriteOptions configures Write.
type WriteOptions struct {
	// Method is recorded in the copy's meta.json (Meta.Packed).
	Method Method
	// Overwrite replaces an existing graphmill dataset at the destination.
	Overwrite bool
	// Progress, if set, is called with the feature bytes written so far.
	Progress func(done, total int64)
}

// chunkBytes is the output written per step: large enough that the reads
// of its rows keep the device's queue full, small enough to stay out of
// the memory budget's way.
const chunkBytes = 16 << 20

// Write writes to dir a copy of d with its nodes renumbered: new node i is
// node order[i] of d. The graph, edge weights, features, labels and splits
// follow (every node keeps its in-neighbour list in the same order, and a
// split keeps its order), and orig_ids holds every new node's original id
// (composed with d's own when d was packed already). The copy is written
// atomically (dataset.Writer).
//
// The feature rows are read in the new order with many reads in flight
// (diskio, through the page cache, whose pages of the source are dropped
// afterwards), so that packing features larger than memory runs at the
// device's random-read rate rather than at one page fault at a time.
func Write(ctx context.Context, d *dataset.Dataset, dir string, order []int32, o WriteOptions) error {
	n := d.Meta.NumNodes
	if len(order) != n {
		return fmt.Errorf("layout: an order of %d nodes for a dataset of %d", len(order), n)
	}
	for name := range d.Meta.Arrays {
		if !slices.Contains(knownArrays, name) {
			return fmt.Errorf("layout: %s holds array %q, which packing does not know how to renumber", d.Dir, name)
		}
	}
	inv := make([]int32, n)
	for i := range inv {
		inv[i] = -1
	}
	for i, v := range order {
		if v < 0 || int(v) >= n || inv[v] >= 0 {
			return fmt.Errorf("layout: the order is not a permutation of the %d nodes (at %d: %d)", n, i, v)
		}
		inv[v] = int32(i)
	}
	w, err := dataset.NewWriter(dir, o.Overwrite)
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			w.Abort()
		}
	}()
	if err := writeGraph(ctx, w, d, order, inv); err != nil {
		return err
	}
	if d.FeatureArray != nil {
		if err := writeRows(ctx, w, d.FeatureArray, order, o.Progress); err != nil {
			return fmt.Errorf("writing features: %w", err)
		}
	}
	if d.Labels != nil {
		if err := dataset.Put(w, dataset.ArrayLabels, gather(d.Labels, order)); err != nil {
			return err
		}
	}
	for _, s := range []struct {
		name string
		ids  []int32
	}{{dataset.ArrayTrain, d.Train}, {dataset.ArrayVal, d.Val}, {dataset.ArrayTest, d.Test}} {
		if s.ids != nil {
			if err := dataset.Put(w, s.name, gather(inv, s.ids)); err != nil {
				return err
			}
		}
	}
	orig := order
	if d.OrigIDs != nil {
		orig = gather(d.OrigIDs, order)
	}
	if err := dataset.Put(w, dataset.ArrayOrigIDs, orig); err != nil {
		return err
	}
	m := d.Meta
	m.Splits = maps.Clone(m.Splits)
	m.Packed = &dataset.PackMeta{Method: string(o.Method), From: d.Dir}
	if err := w.Commit(m); err != nil {
		return err
	}
	ok = true
	return nil
}

// knownArrays are the arrays Write renumbers.
var knownArrays = []string{
	dataset.ArrayIndptr, dataset.ArrayIndices, dataset.ArrayEdgeWeight, dataset.ArrayFeatures,
	dataset.ArrayLabels, dataset.ArrayTrain, dataset.ArrayVal, dataset.ArrayTest, dataset.ArrayOrigIDs,
}

// gather returns src[ids[i]] for every i.
func gather(src, ids []int32) []int32 {
	out := make([]int32, len(ids))
	for i, v := range ids {
		out[i] = src[v]
	}
	return out
}

// writeGraph writes the renumbered CSC: new node i's in-neighbours are
// node order[i]'s, renamed by inv, in their order; its edge weights too.
func writeGraph(ctx context.Context, w *dataset.Writer, d *dataset.Dataset, order, inv []int32) error {
	g := d.Graph
	n := g.NumNodes
	indptr := make([]int64, n+1)
	for i, v := range order {
		indptr[i+1] = indptr[i] + g.Indptr[v+1] - g.Indptr[v]
	}
	if err := dataset.Put(w, dataset.ArrayIndptr, indptr); err != nil {
		return err
	}
	ne := int(indptr[n])
	iw, err := w.Create(dataset.ArrayIndices, npy.Int32, ne)
	if err != nil {
		return err
	}
	var ww *npy.Writer
	if g.Weights != nil {
		if ww, err = w.Create(dataset.ArrayEdgeWeight, npy.Float32, ne); err != nil {
			iw.Abort()
			return err
		}
	}
	abort := func(err error) error {
		iw.Abort()
		if ww != nil {
			ww.Abort()
		}
		return fmt.Errorf("writing the graph: %w", err)
	}
	const chunk = 1 << 20 // edges per write
	idx := make([]int32, 0, chunk)
	var wt []float32
	if ww != nil {
		wt = make([]float32, 0, chunk)
	}
	flush := func() error {
		if _, err := iw.Write(npy.AsBytes(idx)); err != nil {
			return err
		}
		if ww != nil {
			if _, err := ww.Write(npy.AsBytes(wt)); err != nil {
				return err
			}
			wt = wt[:0]
		}
		idx = idx[:0]
		return ctx.Err()
	}
	for _, v := range order {
		lo, hi := g.Indptr[v], g.Indptr[v+1]
		for e := lo; e < hi; e++ {
			idx = append(idx, inv[g.Indices[e]])
			if ww != nil {
				wt = append(wt, g.Weights[e])
			}
			if len(idx) == chunk {
				if err := flush(); err != nil {
					return abort(err)
				}
			}
		}
	}
	if err := flush(); err != nil {
		return abort(err)
	}
	if err := iw.Close(); err != nil {
		return abort(err)
	}
	if ww != nil {
		if err := ww.Close(); err != nil {
			return fmt.Errorf("writing the edge weights: %w", err)
		}
	}
	return nil
}

// writeRows writes a's rows (any dtype) in the order given, reading each
// chunk's rows with batched reads in flight.
func writeRows(ctx context.Context, w *dataset.Writer, a *npy.Array, order []int32, progress func(done, total int64)) error {
	if len(a.Shape) != 2 {
		return fmt.Errorf("features of shape %v, want [nodes, dim]", a.Shape)
	}
	rowB := int64(a.Shape[1]) * int64(a.DType.Size())
	aw, err := w.Create(dataset.ArrayFeatures, a.DType, a.Shape...)
	if err != nil {
		return err
	}
	r, err := diskio.Open(a.Path, diskio.Options{})
	if err != nil {
		aw.Abort()
		return err
	}
	defer func() {
		r.Close()
		// The source's pages were read once, for this copy only.
		_ = diskio.DropCache(a.Path)
	}()
	rows := max(1, int(chunkBytes/max(rowB, 1)))
	buf := make([]byte, int64(rows)*rowB)
	reqs := make([]diskio.Req, rows)
	total := int64(len(order)) * rowB
	for lo := 0; lo < len(order); lo += rows {
		k := min(rows, len(order)-lo)
		for i, v := range order[lo : lo+k] {
			reqs[i] = diskio.Req{Off: a.DataOffset + int64(v)*rowB, Buf: buf[int64(i)*rowB : int64(i+1)*rowB]}
		}
		if err := r.ReadBatch(ctx, reqs[:k]); err != nil {
			aw.Abort()
			return err
		}
		for _, q := range reqs[:k] {
			if q.N != len(q.Buf) {
				aw.Abort()
				return fmt.Errorf("%s: short read at offset %d", a.Path, q.Off)
			}
		}
		if _, err := aw.Write(buf[:int64(k)*rowB]); err != nil {
			aw.Abort()
			return err
		}
		if progress != nil {
			progress(int64(lo+k)*rowB, total)
		}
	}
	return aw.Close()
}
