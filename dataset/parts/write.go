package parts

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/internal/atomicfile"
	"github.com/graphmill/graphmill/npy"
)

// WriteOptions controls Write.
type WriteOptions struct {
	// Overwrite replaces an existing directory.
	Overwrite bool
	// Method, Imbalance, Balance, Seed, VCycles and Stats are recorded in
	// the book.
	Method    string
	Imbalance float64
	Balance   []string
	Seed      uint64
	VCycles   int
	Stats     Stats
	// Progress, if set, is called after each part is written.
	Progress func(done, total int)
}

// Write writes the dataset d split into k parts, assign[v] being the part
// of node v, as a partitioned dataset directory dir (see the package
// documentation for the format) and returns its book. The directory is
// written atomically: into a temporary sibling that is fsynced and renamed
// into place, so a crash or error leaves either the previous directory or
// the complete new one.
func Write(ctx context.Context, d *dataset.Dataset, assign []int32, k int, dir string, opts WriteOptions) (*Book, error) {
	n := d.Meta.NumNodes
	if len(assign) != n {
		return nil, fmt.Errorf("parts: %d part ids for a dataset of %d nodes", len(assign), n)
	}
	if k < 1 {
		return nil, fmt.Errorf("parts: %d parts; want at least 1", k)
	}
	for v, p := range assign {
		if p < 0 || int(p) >= k {
			return nil, fmt.Errorf("parts: node %d is in part %d, outside [0, %d)", v, p, k)
		}
	}
	// Begin locks dir, removes killed writers' leftovers and refuses to
	// replace anything but a partitioned dataset or an empty folder.
	outDir, err := atomicfile.Begin(dir, opts.Overwrite, DirKind)
	if err != nil {
		return nil, err
	}
	defer outDir.Abort()
	tmp := outDir.Tmp

	order, offsets := Reorder(assign, k)
	newIDs := Inverse(order)
	book := &Book{
		Format: BookFormat, FormatVersion: BookVersion,
		Name: d.Meta.Name, Source: sourceOf(d),
		NumParts: k, NumNodes: n, NumEdges: d.Meta.NumEdges,
		Method: opts.Method, Imbalance: opts.Imbalance, Balance: opts.Balance, Seed: opts.Seed, VCycles: opts.VCycles,
		Stats: opts.Stats,
		Arrays: map[string]string{
			ArrayPartIDs: ArrayPartIDs + ".npy",
			ArrayOrigIDs: ArrayOrigIDs + ".npy",
			ArrayNewIDs:  ArrayNewIDs + ".npy",
		},
	}
	for name, data := range map[string][]int32{ArrayPartIDs: assign, ArrayOrigIDs: order, ArrayNewIDs: newIDs} {
		if err := npy.WriteFile(filepath.Join(tmp, name+".npy"), data, len(data)); err != nil {
			return nil, err
		}
	}
	pw := &partWriter{d: d, parts: assign, newIDs: newIDs, offsets: offsets, localOf: make([]int32, n),
		inDeg: d.Graph.InDegrees(), outDeg: d.Graph.OutDegrees()}
	for i := range pw.localOf {
		pw.localOf[i] = -1
	}
	pw.splitOf = make([]int8, n)
	for s, ids := range [][]int32{d.Train, d.Val, d.Test} {
		for _, v := range ids {
			pw.splitOf[v] |= 1 << s
		}
	}
	for p := 0; p < k; p++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		info, err := pw.write(filepath.Join(tmp, fmt.Sprintf("part%d", p)), p, order[offsets[p]:offsets[p+1]])
		if err != nil {
			return nil, fmt.Errorf("part %d: %w", p, err)
		}
		book.Parts = append(book.Parts, info)
		if opts.Progress != nil {
			opts.Progress(p+1, k)
		}
	}
	b, err := json.MarshalIndent(book, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteSynced(filepath.Join(tmp, BookFile), append(b, '\n')); err != nil {
		return nil, err
	}
	if err := outDir.Commit(); err != nil {
		return nil, err
	}
	return book, nil
}

// DirKind says what Write may replace with overwrite: a partitioned
// dataset (a partition.json of this format). An empty folder is always
// accepted.
var DirKind = atomicfile.Kind{Name: "graphmill partitioned dataset", Is: func(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, BookFile))
	if err != nil {
		return false
	}
	var bk struct {
		Format string `json:"format"`
	}
	return json.Unmarshal(b, &bk) == nil && bk.Format == BookFormat
}, Foreign: func(dir string) []string {
	// The book, its arrays and the parts' folders.
	own := map[string]bool{BookFile: true}
	if b, err := os.ReadFile(filepath.Join(dir, BookFile)); err == nil {
		var bk struct {
			NumParts int               `json:"num_parts"`
			Arrays   map[string]string `json:"arrays"`
		}
		if json.Unmarshal(b, &bk) == nil {
			for _, f := range bk.Arrays {
				own[f] = true
			}
			for p := range min(bk.NumParts, 1<<16) {
				own[fmt.Sprintf("part%d", p)] = true
			}
		}
	}
	return atomicfile.Unlisted(dir, own)
}}

// Reorder returns the node numbering of a partitioned dataset: order[r] is
// the original id of reordered id r, with the nodes of part p (in
// increasing original id) at order[offsets[p]:offsets[p+1]].
func Reorder(assign []int32, k int) (order []int32, offsets []int64) {
	offsets = make([]int64, k+1)
	for _, p := range assign {
		offsets[p+1]++
	}
	for p := 0; p < k; p++ {
		offsets[p+1] += offsets[p]
	}
	next := make([]int64, k)
	copy(next, offsets[:k])
	order = make([]int32, len(assign))
	for v, p := range assign {
		order[next[p]] = int32(v)
		next[p]++
	}
	return order, offsets
}

// Inverse returns the inverse of a permutation: inv[perm[i]] = i.
func Inverse(perm []int32) []int32 {
	inv := make([]int32, len(perm))
	for i, v := range perm {
		inv[v] = int32(i)
	}
	return inv
}

// partWriter writes the parts of one partitioned dataset.
type partWriter struct {
	d             *dataset.Dataset
	parts         []int32
	newIDs        []int32
	offsets       []int64
	inDeg, outDeg []int32 // the full graph's degrees
	localOf       []int32 // scratch: local id of a global node in the current part, or -1
	splitOf       []int8  // bit 0 train, 1 val, 2 test
}

// write writes part p, whose inner nodes (original ids, increasing) are
// inner, as a native dataset at dir.
func (pw *partWriter) write(dir string, p int, inner []int32) (PartInfo, error) {
	d, g := pw.d, pw.d.Graph
	ni := len(inner)
	for i, v := range inner {
		pw.localOf[v] = int32(i)
	}
	// Halo: in-neighbours of inner nodes owned elsewhere, by original id.
	var halo []int32
	nedges := int64(0)
	for _, v := range inner {
		lo, hi := g.Indptr[v], g.Indptr[v+1]
		nedges += hi - lo
		for _, u := range g.Indices[lo:hi] {
			if pw.localOf[u] == -1 {
				pw.localOf[u] = -2
				halo = append(halo, u)
			}
		}
	}
	slices.Sort(halo)
	for i, u := range halo {
		pw.localOf[u] = int32(ni + i)
	}
	defer func() {
		for _, v := range inner {
			pw.localOf[v] = -1
		}
		for _, u := range halo {
			pw.localOf[u] = -1
		}
	}()
	nl := ni + len(halo)
	indptr := make([]int64, nl+1)
	indices := make([]int32, nedges)
	var weights []float32
	if g.Weights != nil {
		weights = make([]float32, nedges)
	}
	var keys []uint64
	pos := int64(0)
	for i, v := range inner {
		lo, hi := g.Indptr[v], g.Indptr[v+1]
		if weights == nil {
			for j, u := range g.Indices[lo:hi] {
				indices[pos+int64(j)] = pw.localOf[u]
			}
			slices.Sort(indices[pos : pos+hi-lo])
		} else {
			keys = keys[:0]
			for j := lo; j < hi; j++ {
				keys = append(keys, uint64(pw.localOf[g.Indices[j]])<<32|uint64(j-lo))
			}
			slices.Sort(keys)
			for t, key := range keys {
				indices[pos+int64(t)] = int32(key >> 32)
				weights[pos+int64(t)] = g.Weights[lo+int64(key&0xffffffff)]
			}
		}
		pos += hi - lo
		indptr[i+1] = pos
	}
	for i := ni; i < nl; i++ {
		indptr[i+1] = pos
	}
	local := make([]int32, nl) // original ids of local nodes
	copy(local, inner)
	copy(local[ni:], halo)
	haloParts := make([]int32, len(halo))
	haloLocal := make([]int32, len(halo))
	for i, u := range halo {
		q := pw.parts[u]
		haloParts[i] = q
		haloLocal[i] = int32(int64(pw.newIDs[u]) - pw.offsets[q])
	}

	w, err := dataset.NewWriter(dir, false)
	if err != nil {
		return PartInfo{}, err
	}
	defer w.Abort()
	m := dataset.Meta{
		Name:     fmt.Sprintf("%s-part%d", d.Meta.Name, p),
		Source:   sourceOf(d),
		NumNodes: nl, NumEdges: nedges,
		FeatureDim: d.Meta.FeatureDim, FeatureDType: d.Meta.FeatureDType,
		NumClasses: d.Meta.NumClasses,
		Graph:      d.Meta.Graph,
		Splits:     map[string]int{},
	}
	m.Graph.HasWeights = weights != nil
	info := PartInfo{
		Dir:       fmt.Sprintf("part%d", p),
		NodeRange: [2]int64{pw.offsets[p], pw.offsets[p+1]},
		NumInner:  ni, NumHalo: len(halo), NumEdges: nedges,
		Arrays: map[string]string{},
	}
	for _, name := range []string{ArrayGlobalIDs, ArrayHaloParts, ArrayHaloLocal, ArrayInDegrees, ArrayOutDegrees} {
		info.Arrays[name] = name + ".npy"
	}
	inDeg := make([]int32, nl)
	outDeg := make([]int32, nl)
	for i, v := range local {
		inDeg[i], outDeg[i] = pw.inDeg[v], pw.outDeg[v]
	}
	steps := []func() error{
		func() error { return dataset.Put(w, dataset.ArrayIndptr, indptr) },
		func() error { return dataset.Put(w, dataset.ArrayIndices, indices) },
		func() error { return dataset.Put(w, ArrayGlobalIDs, local) },
		func() error { return dataset.Put(w, ArrayHaloParts, haloParts) },
		func() error { return dataset.Put(w, ArrayHaloLocal, haloLocal) },
		func() error { return dataset.Put(w, ArrayInDegrees, inDeg) },
		func() error { return dataset.Put(w, ArrayOutDegrees, outDeg) },
	}
	if weights != nil {
		steps = append(steps, func() error { return dataset.Put(w, dataset.ArrayEdgeWeight, weights) })
	}
	if fa := d.FeatureArray; fa != nil && d.Meta.FeatureDim > 0 {
		steps = append(steps, func() error { return copyRows(w, fa, local, d.Meta.FeatureDim) })
	}
	if d.Labels != nil {
		labels := make([]int32, nl)
		for i := range labels {
			labels[i] = -1
		}
		for i, v := range inner {
			labels[i] = d.Labels[v]
		}
		steps = append(steps, func() error { return dataset.Put(w, dataset.ArrayLabels, labels) })
	}
	for s, name := range []string{"train", "val", "test"} {
		if _, ok := d.Meta.Splits[name]; !ok {
			continue
		}
		var ids []int32
		for i, v := range inner {
			if pw.splitOf[v]&(1<<s) != 0 {
				ids = append(ids, int32(i))
			}
		}
		if ids == nil {
			ids = []int32{}
		}
		m.Splits[name] = len(ids)
		switch s {
		case 0:
			info.Train = len(ids)
		case 1:
			info.Val = len(ids)
		case 2:
			info.Test = len(ids)
		}
		steps = append(steps, func() error { return dataset.Put(w, name+"_idx", ids) })
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return PartInfo{}, err
		}
	}
	if err := w.Commit(m); err != nil {
		return PartInfo{}, err
	}
	return info, nil
}

// copyRows writes the feature rows of the given nodes, in any dtype.
func copyRows(w *dataset.Writer, fa *npy.Array, nodes []int32, dim int) error {
	aw, err := w.Create(dataset.ArrayFeatures, fa.DType, len(nodes), dim)
	if err != nil {
		return err
	}
	row := dim * fa.DType.Size()
	for _, v := range nodes {
		if _, err := aw.Write(fa.Data[int(v)*row : (int(v)+1)*row]); err != nil {
			aw.Abort()
			return err
		}
	}
	return aw.Close()
}

// sourceOf returns d's folder as an absolute path, as the book and the
// parts record it (relative, it would name another folder from anywhere
// but where 'graphmill partition' ran).
func sourceOf(d *dataset.Dataset) string {
	if abs, err := filepath.Abs(d.Dir); err == nil {
		return abs
	}
	return d.Dir
}
