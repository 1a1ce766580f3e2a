package dataset

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"

	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/internal/par"
	"github.com/graphmill/graphmill/npy"
)

// Dataset is an opened native dataset. Its slices alias read-only memory
// mappings of the .npy files: they must not be written to, and must not be
// used after Close.
type Dataset struct {
	// Dir is the directory the dataset was opened from.
	Dir  string
	Meta Meta
	// Graph is the CSC adjacency (in-neighbours per node).
	Graph *graph.CSC
	// Features holds NumNodes*FeatureDim float32 values row-major, or nil
	// when the dataset has no features or stores them in half precision
	// (see FeatureArray).
	Features []float32
	// FeatureArray is the raw features array (any dtype), or nil.
	FeatureArray *npy.Array
	// Labels holds one class per node, -1 for unlabelled; nil if absent.
	Labels []int32
	// Train, Val and Test hold node ids; nil if absent.
	Train, Val, Test []int32
	// OrigIDs holds, for a packed dataset (Meta.Packed), the original id
	// of every node; nil otherwise. ToOriginal and FromOriginal map ids.
	OrigIDs []int32

	arrays          []*npy.Array
	indptr, indices *npy.Array // the graph's mappings (AdviseGraphRandom)
	weights         *npy.Array // the edge weights' mapping, or nil (GraphInMemory)
	inv             *inverse   // of OrigIDs (FromOriginal)
}

// schema says which dtypes and shapes each array must have for meta m.
func schema(m Meta) map[string]struct {
	dtypes   []npy.DType
	shape    []int
	required bool
} {
	type spec = struct {
		dtypes   []npy.DType
		shape    []int
		required bool
	}
	s := map[string]spec{
		ArrayIndptr:     {[]npy.DType{npy.Int64}, []int{m.NumNodes + 1}, true},
		ArrayIndices:    {[]npy.DType{npy.Int32}, []int{int(m.NumEdges)}, true},
		ArrayEdgeWeight: {[]npy.DType{npy.Float32}, []int{int(m.NumEdges)}, m.Graph.HasWeights},
		ArrayFeatures:   {[]npy.DType{npy.Float32, npy.Float16, npy.Uint16}, []int{m.NumNodes, m.FeatureDim}, m.FeatureDim > 0},
		ArrayLabels:     {[]npy.DType{npy.Int32}, []int{m.NumNodes}, m.NumClasses > 0},
		ArrayOrigIDs:    {[]npy.DType{npy.Int32}, []int{m.NumNodes}, m.Packed != nil},
	}
	for _, split := range []string{"train", "val", "test"} {
		if k, ok := m.Splits[split]; ok {
			s[split+"_idx"] = spec{[]npy.DType{npy.Int32}, []int{k}, true}
		}
	}
	return s
}

// checkShapes checks meta.Arrays against the schema implied by the counts.
func checkShapes(dir string, m Meta) error {
	sch := schema(m)
	for name, a := range m.Arrays {
		spec, ok := sch[name]
		if !ok {
			if name == ArrayTrain || name == ArrayVal || name == ArrayTest {
				return fmt.Errorf("%s: array %s present but meta.json splits do not list it", dir, name)
			}
			continue // unknown arrays are allowed (forward compatibility)
		}
		if !slices.Contains(spec.dtypes, a.DType) {
			return fmt.Errorf("%s: array %s has dtype %s, want %v", dir, name, a.DType, spec.dtypes)
		}
		if !slices.Equal(a.Shape, spec.shape) {
			return fmt.Errorf("%s: array %s has shape %v, want %v (from meta.json counts)", dir, name, a.Shape, spec.shape)
		}
	}
	for name, spec := range sch {
		_, have := m.Arrays[name]
		if spec.required && !have {
			return fmt.Errorf("%s: array %s is missing", dir, name)
		}
		if !spec.required && have && (name == ArrayFeatures || name == ArrayLabels || name == ArrayEdgeWeight || name == ArrayOrigIDs) {
			return fmt.Errorf("%s: array %s present but meta.json counts say it should not be", dir, name)
		}
	}
	return nil
}

// Open memory-maps the dataset in dir. It rejects, naming the array and
// the problem, a directory whose meta.json is missing or malformed, whose
// arrays are missing, truncated or of the wrong dtype or shape, whose
// offsets do not span the edges, or whose labels or split ids are out of
// range, or whose edges name a source node that does not exist. The edge
// check is one parallel pass over indices (about 0.1 ns per edge when the
// file is cached), so that no command can index out of range on a corrupt
// file; Verify also checks the features for NaN and Inf.
func Open(dir string) (_ *Dataset, err error) {
	m, err := readMeta(dir)
	if err != nil {
		return nil, err
	}
	if err := checkShapes(dir, m); err != nil {
		return nil, err
	}
	d := &Dataset{Dir: dir, Meta: m}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	open := func(name string) (*npy.Array, error) {
		am, ok := m.Arrays[name]
		if !ok {
			return nil, nil
		}
		if filepath.Base(am.File) != am.File {
			return nil, fmt.Errorf("%s: array %s names file %q outside the dataset", dir, name, am.File)
		}
		var a *npy.Array
		if am.Raw {
			a, err = npy.OpenRaw(filepath.Join(dir, am.File), am.DType, am.Shape, am.Offset)
		} else if am.Offset != 0 {
			err = fmt.Errorf("an offset (%d) is for raw arrays only", am.Offset)
		} else {
			a, err = npy.Open(filepath.Join(dir, am.File))
		}
		if err != nil {
			return nil, fmt.Errorf("array %s: %w", name, err)
		}
		d.arrays = append(d.arrays, a)
		if a.DType != am.DType || !slices.Equal(a.Shape, am.Shape) {
			return nil, fmt.Errorf("%s: array %s holds %s %v but meta.json says %s %v", a.Path, name, a.DType, a.Shape, am.DType, am.Shape)
		}
		return a, nil
	}
	arrays := map[string]*npy.Array{}
	for name := range m.Arrays {
		a, err := open(name)
		if err != nil {
			return nil, err
		}
		arrays[name] = a
	}
	d.indptr, d.indices = arrays[ArrayIndptr], arrays[ArrayIndices]
	indptr, _ := npy.View[int64](arrays[ArrayIndptr])
	indices, _ := npy.View[int32](arrays[ArrayIndices])
	d.Graph = &graph.CSC{NumNodes: m.NumNodes, Indptr: indptr, Indices: indices}
	if indptr[0] != 0 || indptr[m.NumNodes] != m.NumEdges {
		return nil, fmt.Errorf("%s: array indptr runs from %d to %d, want 0 to num_edges=%d", dir, indptr[0], indptr[m.NumNodes], m.NumEdges)
	}
	if err := checkIndptr(dir, indptr, m.NumEdges); err != nil {
		return nil, err
	}
	if err := checkIndices(context.Background(), dir, indptr, indices, m.NumNodes); err != nil {
		return nil, err
	}
	if a := arrays[ArrayEdgeWeight]; a != nil {
		d.weights = a
		d.Graph.Weights, _ = npy.View[float32](a)
	}
	if a := arrays[ArrayFeatures]; a != nil {
		d.FeatureArray = a
		if a.DType == npy.Float32 {
			d.Features, _ = npy.View[float32](a)
		}
	}
	if a := arrays[ArrayLabels]; a != nil {
		d.Labels, _ = npy.View[int32](a)
		for v, c := range d.Labels {
			if c < -1 || int(c) >= m.NumClasses {
				return nil, fmt.Errorf("%s: labels[%d] = %d is outside [-1, %d)", a.Path, v, c, m.NumClasses)
			}
		}
	}
	if a := arrays[ArrayOrigIDs]; a != nil {
		d.OrigIDs, _ = npy.View[int32](a)
		d.inv = &inverse{}
		if err := checkPermutation(d.OrigIDs); err != nil {
			return nil, fmt.Errorf("%s: %w", a.Path, err)
		}
	}
	for _, s := range []struct {
		name string
		dst  *[]int32
	}{{ArrayTrain, &d.Train}, {ArrayVal, &d.Val}, {ArrayTest, &d.Test}} {
		a := arrays[s.name]
		if a == nil {
			continue
		}
		*s.dst, _ = npy.View[int32](a)
		for i, v := range *s.dst {
			if v < 0 || int(v) >= m.NumNodes {
				return nil, fmt.Errorf("%s: %s[%d] = %d is not a node id in [0, %d)", a.Path, s.name, i, v, m.NumNodes)
			}
		}
	}
	return d, nil
}

// checkIndptr checks that offsets never decrease and stay within the edges,
// so that every neighbour slice is valid.
func checkIndptr(dir string, indptr []int64, numEdges int64) error {
	errs := make([]error, par.Workers(0))
	par.For(len(errs), len(indptr)-1, func(w, lo, hi int) {
		for v := lo; v < hi; v++ {
			if indptr[v+1] < indptr[v] || indptr[v+1] > numEdges {
				errs[w] = fmt.Errorf("%s: array indptr is invalid at node %d (%d then %d, num_edges %d)", dir, v, indptr[v], indptr[v+1], numEdges)
				return
			}
		}
	})
	return errors.Join(errs...)
}

// Close unmaps the dataset's arrays and clears the fields that point
// into them (Graph, Features, Labels, the splits, ...).
func (d *Dataset) Close() error {
	var errs []error
	for _, a := range d.arrays {
		errs = append(errs, a.Close())
	}
	d.arrays = nil
	// What pointed into the mappings goes with them: a use after Close is
	// then a nil dataset's error (or a nil dereference), not a fault on
	// unmapped memory that no recover catches.
	d.Graph, d.Features, d.FeatureArray, d.Labels = nil, nil, nil, nil
	d.Train, d.Val, d.Test, d.OrigIDs = nil, nil, nil, nil
	d.indptr, d.indices, d.weights = nil, nil, nil
	return errors.Join(errs...)
}

// AdviseHuge asks for transparent huge pages on the dataset's mappings. It
// is a hint: on kernels whose transparent huge pages cover anonymous memory
// only (the "madvise" setting of these machines) file mappings stay on 4 KiB
// pages, and the 1.7-2x faster random access needs a copy into anonymous
// huge-page memory instead (feature.Options.InMemory, internal/hugemem).
func (d *Dataset) AdviseHuge() {
	for _, a := range d.arrays {
		a.AdviseHuge()
	}
}

// checkIndices checks that every source id is a node in [0, n), in
// parallel, and names the first bad edge it finds.
func checkIndices(ctx context.Context, dir string, indptr []int64, indices []int32, n int) error {
	const chunk = 1 << 20
	chunks := (len(indices) + chunk - 1) / chunk
	bad := make([]int64, par.Workers(0))
	for i := range bad {
		bad[i] = -1
	}
	un := uint32(n)
	par.For(len(bad), chunks, func(w, lo, hi int) {
		for c := lo; c < hi; c++ {
			if ctx.Err() != nil {
				return
			}
			s := indices[c*chunk : min(len(indices), (c+1)*chunk)]
			// A branch-free reduction (negative ids become large as
			// uint32); the search runs only on failure.
			var mx uint32
			for _, u := range s {
				mx = max(mx, uint32(u))
			}
			if mx >= un {
				for j, u := range s {
					if uint32(u) >= un {
						bad[w] = int64(c*chunk + j)
						return
					}
				}
			}
		}
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	first := int64(-1)
	for _, p := range bad {
		if p >= 0 && (first < 0 || p < first) {
			first = p
		}
	}
	if first < 0 {
		return nil
	}
	// The node whose in-edges hold position first.
	v, _ := slices.BinarySearchFunc(indptr[1:], first, func(e, t int64) int {
		if e <= t {
			return -1
		}
		return 1
	})
	return fmt.Errorf("%s: array indices[%d] = %d (an in-neighbour of node %d) is outside [0, %d); the file is corrupt (re-import or regenerate the dataset)",
		dir, first, indices[first], v, n)
}

// Verify checks every edge (as Open does), every edge weight, the splits
// (CheckSplits) and every feature value: NaN and Inf are errors naming
// the edge, or the node and column. It reads the whole dataset
// (use it after copying one, or in 'graphmill data verify').
func (d *Dataset) Verify(ctx context.Context) error {
	g := d.Graph
	if err := checkIndices(ctx, d.Dir, g.Indptr, g.Indices, g.NumNodes); err != nil {
		return err
	}
	if err := CheckWeights(g.Weights); err != nil {
		return fmt.Errorf("%s: %w", d.Dir, err)
	}
	// Repeated or shared split nodes (Open checks their range only: a
	// dataset an older version or another tool wrote still opens).
	if err := CheckSplits(g.NumNodes, d.Labels, d.Train, d.Val, d.Test, false); err != nil {
		return fmt.Errorf("%s: splits: %w", d.Dir, err)
	}
	return d.checkFinite(ctx)
}

// checkFinite reports the first NaN or Inf feature value.
func (d *Dataset) checkFinite(ctx context.Context) error {
	a := d.FeatureArray
	f := d.Meta.FeatureDim
	if a == nil || f == 0 || d.Meta.NumNodes == 0 {
		return nil
	}
	var nonFinite func(row int) int // first bad column of row, or -1
	switch a.DType {
	case npy.Float32:
		x := d.Features
		nonFinite = func(v int) int {
			for j, b := range x[v*f : (v+1)*f] {
				if math.Float32bits(b)>>23&0xff == 0xff {
					return j
				}
			}
			return -1
		}
	case npy.Float16, npy.Uint16:
		x, _ := npy.View[uint16](a)
		shift, mask := uint16(10), uint16(0x1f) // float16
		if a.DType == npy.Uint16 {
			shift, mask = 7, 0xff // bfloat16
		}
		nonFinite = func(v int) int {
			for j, b := range x[v*f : (v+1)*f] {
				if b>>shift&mask == mask {
					return j
				}
			}
			return -1
		}
	default:
		return nil
	}
	type hit struct{ row, col int }
	hits := make([]hit, par.Workers(0))
	for i := range hits {
		hits[i] = hit{-1, -1}
	}
	par.For(len(hits), d.Meta.NumNodes, func(w, lo, hi int) {
		for v := lo; v < hi; v++ {
			if v%65536 == 0 && ctx.Err() != nil {
				return
			}
			if j := nonFinite(v); j >= 0 {
				hits[w] = hit{v, j}
				return
			}
		}
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, h := range hits {
		if h.row >= 0 {
			return fmt.Errorf("%s: array features[%d, %d] is NaN or Inf (node %d); training on it would give NaN losses", a.Path, h.row, h.col, h.row)
		}
	}
	return nil
}
