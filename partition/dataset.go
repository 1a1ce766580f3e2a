package partition

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

// BookFormat and BookVersion identify a partitioned dataset's book.
const (
	BookFormat  = "graphmill-partition"
	BookVersion = 1
	// BookFile is the name of the book inside a partitioned dataset.
	BookFile = "partition.json"
)

// Names of the arrays of a partitioned dataset (top level and per part).
const (
	// ArrayPartIDs (top level): int32 [num_nodes], the part of every
	// original node.
	ArrayPartIDs = "part_ids"
	// ArrayOrigIDs (top level): int32 [num_nodes], the original id of
	// every reordered node (the nodes of part p are reordered ids
	// node_range[p][0]..node_range[p][1]-1).
	ArrayOrigIDs = "orig_ids"
	// ArrayNewIDs (top level): int32 [num_nodes], the reordered id of
	// every original node (the inverse of orig_ids).
	ArrayNewIDs = "new_ids"
	// ArrayGlobalIDs (per part): int32 [num_local], the original id of
	// every local node, inner nodes first.
	ArrayGlobalIDs = "global_ids"
	// ArrayHaloParts (per part): int32 [num_halo], the part owning each
	// halo node (local id num_inner+i).
	ArrayHaloParts = "halo_parts"
	// ArrayHaloLocal (per part): int32 [num_halo], each halo node's local
	// id in its owning part.
	ArrayHaloLocal = "halo_local_ids"
)

// Book is the content of partition.json, the index of a partitioned
// dataset.
type Book struct {
	Format        string `json:"format"`
	FormatVersion int    `json:"format_version"`
	// Name and Source describe the original dataset.
	Name   string `json:"name"`
	Source string `json:"source,omitempty"`
	// NumParts is K; NumNodes and NumEdges are the original dataset's.
	NumParts int   `json:"num_parts"`
	NumNodes int   `json:"num_nodes"`
	NumEdges int64 `json:"num_edges"`
	// Method, Imbalance, Balance and Seed record how the partition was made
	// (Balance lists the balanced quantities: "nodes", "train", "edges").
	Method    Method   `json:"method"`
	Imbalance float64  `json:"imbalance"`
	Balance   []string `json:"balance"`
	Seed      uint64   `json:"seed"`
	// Stats are the partition's statistics on the undirected graph.
	Stats Stats `json:"stats"`
	// Arrays maps ArrayPartIDs, ArrayOrigIDs and ArrayNewIDs to their
	// .npy files in the book's directory.
	Arrays map[string]string `json:"arrays"`
	// Parts describes every part.
	Parts []PartInfo `json:"parts"`
}

// PartInfo describes one part of a partitioned dataset.
type PartInfo struct {
	// Dir is the part's sub-directory, a native dataset.
	Dir string `json:"dir"`
	// NodeRange is the half-open range of reordered ids the part owns.
	NodeRange [2]int64 `json:"node_range"`
	// NumInner is the number of owned nodes (local ids 0..NumInner-1, in
	// reordered id order); NumHalo the number of halo nodes after them.
	NumInner int `json:"num_inner"`
	NumHalo  int `json:"num_halo"`
	// NumEdges is the number of stored edges: every in-edge of the inner
	// nodes.
	NumEdges int64 `json:"num_edges"`
	// Train, Val and Test count the part's split nodes.
	Train int `json:"train"`
	Val   int `json:"val"`
	Test  int `json:"test"`
	// Arrays maps ArrayGlobalIDs, ArrayHaloParts and ArrayHaloLocal to
	// their files in Dir (they are also listed in the part's meta.json).
	Arrays map[string]string `json:"arrays"`
}

// WriteOptions controls WriteDataset.
type WriteOptions struct {
	// Overwrite replaces an existing directory.
	Overwrite bool
	// Method, Imbalance, Balance and Seed are recorded in the book.
	Method    Method
	Imbalance float64
	Balance   []string
	Seed      uint64
	// Progress, if set, is called after each part is written.
	Progress func(done, total int)
}

// WriteDataset writes the dataset d split by the partition res as a
// partitioned dataset directory dir (see the package documentation for the
// format) and returns its book. The directory is written atomically: into
// a temporary sibling that is fsynced and renamed into place, so a crash
// or error leaves either the previous directory or the complete new one.
func WriteDataset(ctx context.Context, d *dataset.Dataset, res *Result, dir string, opts WriteOptions) (*Book, error) {
	n := d.Meta.NumNodes
	if len(res.Parts) != n {
		return nil, fmt.Errorf("partition: %d part ids for a dataset of %d nodes", len(res.Parts), n)
	}
	k := res.NumParts
	for v, p := range res.Parts {
		if p < 0 || int(p) >= k {
			return nil, fmt.Errorf("partition: node %d is in part %d, outside [0, %d)", v, p, k)
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

	order, offsets := Reorder(res.Parts, k)
	newIDs := Inverse(order)
	book := &Book{
		Format: BookFormat, FormatVersion: BookVersion,
		Name: d.Meta.Name, Source: d.Dir,
		NumParts: k, NumNodes: n, NumEdges: d.Meta.NumEdges,
		Method: opts.Method, Imbalance: opts.Imbalance, Balance: opts.Balance, Seed: opts.Seed,
		Stats: res.Stats,
		Arrays: map[string]string{
			ArrayPartIDs: ArrayPartIDs + ".npy",
			ArrayOrigIDs: ArrayOrigIDs + ".npy",
			ArrayNewIDs:  ArrayNewIDs + ".npy",
		},
	}
	for name, data := range map[string][]int32{ArrayPartIDs: res.Parts, ArrayOrigIDs: order, ArrayNewIDs: newIDs} {
		if err := npy.WriteFile(filepath.Join(tmp, name+".npy"), data, len(data)); err != nil {
			return nil, err
		}
	}
	pw := &partWriter{d: d, parts: res.Parts, newIDs: newIDs, offsets: offsets, localOf: make([]int32, n)}
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

// DirKind says what WriteDataset may replace with overwrite: a partitioned
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
}}

// partWriter writes the parts of one partitioned dataset.
type partWriter struct {
	d       *dataset.Dataset
	parts   []int32
	newIDs  []int32
	offsets []int64
	localOf []int32 // scratch: local id of a global node in the current part, or -1
	splitOf []int8  // bit 0 train, 1 val, 2 test
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
		Source:   d.Dir,
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
		Arrays: map[string]string{ArrayGlobalIDs: ArrayGlobalIDs + ".npy", ArrayHaloParts: ArrayHaloParts + ".npy", ArrayHaloLocal: ArrayHaloLocal + ".npy"},
	}
	steps := []func() error{
		func() error { return dataset.Put(w, dataset.ArrayIndptr, indptr) },
		func() error { return dataset.Put(w, dataset.ArrayIndices, indices) },
		func() error { return dataset.Put(w, ArrayGlobalIDs, local) },
		func() error { return dataset.Put(w, ArrayHaloParts, haloParts) },
		func() error { return dataset.Put(w, ArrayHaloLocal, haloLocal) },
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

// ReadBook reads and checks the book of the partitioned dataset in dir.
func ReadBook(dir string) (*Book, error) {
	p := filepath.Join(dir, BookFile)
	b, err := os.ReadFile(p)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("%s: not a partitioned dataset (no %s); create one with 'graphmill partition'", dir, BookFile)
		}
		return nil, err
	}
	var book Book
	if err := json.Unmarshal(b, &book); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if book.Format != BookFormat {
		return nil, fmt.Errorf("%s: format is %q, want %q", p, book.Format, BookFormat)
	}
	if book.FormatVersion != BookVersion {
		return nil, fmt.Errorf("%s: format version %d is not supported (this graphmill reads version %d)", p, book.FormatVersion, BookVersion)
	}
	if len(book.Parts) != book.NumParts {
		return nil, fmt.Errorf("%s: %d parts listed, num_parts is %d", p, len(book.Parts), book.NumParts)
	}
	next := int64(0)
	for i, pi := range book.Parts {
		if pi.NodeRange[0] != next || pi.NodeRange[1] < pi.NodeRange[0] || int64(pi.NumInner) != pi.NodeRange[1]-pi.NodeRange[0] {
			return nil, fmt.Errorf("%s: part %d has node range %v and %d inner nodes, not contiguous from %d", p, i, pi.NodeRange, pi.NumInner, next)
		}
		if filepath.Base(pi.Dir) != pi.Dir {
			return nil, fmt.Errorf("%s: part %d names directory %q outside the dataset", p, i, pi.Dir)
		}
		next = pi.NodeRange[1]
	}
	if next != int64(book.NumNodes) {
		return nil, fmt.Errorf("%s: node ranges cover %d nodes, num_nodes is %d", p, next, book.NumNodes)
	}
	return &book, nil
}

// OpenPart opens part p of the partitioned dataset in dir (whose book is
// book) as a native dataset, and reads its global ids.
func OpenPart(dir string, book *Book, p int) (*dataset.Dataset, []int32, error) {
	if p < 0 || p >= book.NumParts {
		return nil, nil, fmt.Errorf("partition: part %d outside [0, %d)", p, book.NumParts)
	}
	pd := filepath.Join(dir, book.Parts[p].Dir)
	d, err := dataset.Open(pd)
	if err != nil {
		return nil, nil, err
	}
	ids, _, err := npy.ReadFile[int32](filepath.Join(pd, ArrayGlobalIDs+".npy"))
	if err != nil {
		d.Close()
		return nil, nil, err
	}
	if len(ids) != d.Meta.NumNodes {
		d.Close()
		return nil, nil, fmt.Errorf("%s: %d global ids for %d local nodes", pd, len(ids), d.Meta.NumNodes)
	}
	return d, ids, nil
}

// BalanceWeights returns the extra balance constraints of d, as DGL's
// balance_ntypes and balance_edges: with train, weight 1 for every
// training node (0 otherwise); with edges, every node's in-degree (the
// edges its part stores). names lists "nodes" and the constraints added.
func BalanceWeights(d *dataset.Dataset, train, edges bool) (weights [][]int32, names []string) {
	names = []string{"nodes"}
	if train {
		w := make([]int32, d.Meta.NumNodes)
		for _, v := range d.Train {
			w[v] = 1
		}
		weights = append(weights, w)
		names = append(names, "train")
	}
	if edges {
		weights = append(weights, d.Graph.InDegrees())
		names = append(names, "edges")
	}
	return weights, names
}
