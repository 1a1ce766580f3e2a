package diskbench

import (
	"context"
	"time"

	"github.com/graphmill/graphmill/batch"
	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/feature"
	"github.com/graphmill/graphmill/layout"
	"github.com/graphmill/graphmill/sample"
)

// LayoutResult is one node layout (package layout) replayed on a sampled
// epoch with the superbatch policy training uses.
type LayoutResult struct {
	Layout string `json:"layout"`
	// ReadBytes is what the misses read: each batch's distinct pages of
	// missed rows, in bytes.
	ReadBytes int64 `json:"read_bytes"`
	// RowAmplification is ReadBytes over the bytes of the rows missed.
	RowAmplification float64 `json:"row_read_amplification"`
	// VsOriginal is ReadBytes over the original layout's.
	VsOriginal float64 `json:"vs_original"`
	// DataOffset is where the rows start in the file: the original file's,
	// or a page for a packed copy (dataset.FeatureAlign).
	DataOffset int64 `json:"data_offset"`
	// Seconds is the time the layout's order took to compute.
	Seconds float64 `json:"order_seconds"`
}

// PolicyResult is one cache policy replayed on a sampled epoch.
type PolicyResult struct {
	Policy string `json:"policy"`
	// HitRate is the fraction of the batches' rows served by the cache.
	HitRate float64 `json:"hit_rate"`
	// ReadBytes is what the misses read: each batch's distinct pages of
	// missed rows, in bytes.
	ReadBytes int64 `json:"read_bytes"`
}

// ComparePolicies replays one epoch of sampled batches (the benchmark's
// fanouts and batch size) against three caches of cacheBytes of float32
// rows: "degree", the static out-degree order training uses; "presample",
// GNNLab's order by how often another epoch's batches sampled each node;
// and "belady-superbatch", Ginex's: the batches are sampled a superbatch
// ahead, and a missed row replaces the cached row whose next use in the
// superbatch is farthest (a row used later than everything cached is
// read but not kept), starting from the degree cache.
//
// Then the layouts of graphmill data pack (package layout) replayed on the
// same epoch: the bytes the superbatch policy reads when the rows are
// stored in each layout's order rather than in the original one.
func ComparePolicies(ctx context.Context, dir string, o Options, cacheBytes int64) ([]PolicyResult, []LayoutResult, error) {
	d, err := dataset.Open(dir)
	if err != nil {
		return nil, nil, err
	}
	defer d.Close()
	g := d.Graph
	rowB := int64(d.Meta.FeatureDim) * 4
	base := d.FeatureArray.DataOffset
	budget := int(min(cacheBytes/rowB, int64(g.NumNodes)))
	s, err := sample.New(g, sample.Config{Fanouts: o.Fanouts})
	if err != nil {
		return nil, nil, err
	}
	epoch := func(e int) ([][]int32, error) {
		key := sample.EpochKey(11, e)
		bs, err := sample.Batches(d.Train, o.Batch, true, key, false)
		if err != nil {
			return nil, err
		}
		out := make([][]int32, len(bs))
		var mb batch.MiniBatch
		for i, b := range bs {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if err := s.SampleInto(&mb, b, key); err != nil {
				return nil, err
			}
			ids, err := mb.Local()
			if err != nil {
				return nil, err
			}
			out[i] = append([]int32(nil), ids...)
		}
		return out, nil
	}
	trace, err := epoch(0)
	if err != nil {
		return nil, nil, err
	}
	pagesAt := func(pos []int32, base int64) func(v int32) (int64, int64) {
		return func(v int32) (int64, int64) {
			if pos != nil {
				v = pos[v]
			}
			a := base + int64(v)*rowB
			return a / 4096, (a + rowB - 1) / 4096
		}
	}
	pages := pagesAt(nil, base)
	// static replays a fixed cache.
	static := func(name string, order []int32) PolicyResult {
		in := make([]bool, g.NumNodes)
		for _, v := range order[:min(budget, len(order))] {
			in[v] = true
		}
		var hits, total int
		var read int64
		seen := map[int64]bool{}
		for _, b := range trace {
			clear(seen)
			for _, v := range b {
				total++
				if in[v] {
					hits++
					continue
				}
				p0, p1 := pages(v)
				for p := p0; p <= p1; p++ {
					if !seen[p] {
						seen[p] = true
						read += 4096
					}
				}
			}
		}
		return PolicyResult{Policy: name, HitRate: float64(hits) / float64(max(total, 1)), ReadBytes: read}
	}
	degree := feature.DegreeOrder(g)
	res := []PolicyResult{static("degree", degree)}
	pre, err := epoch(1)
	if err != nil {
		return nil, nil, err
	}
	counts := make([]uint32, g.NumNodes)
	for _, b := range pre {
		for _, v := range b {
			counts[v]++
		}
	}
	presample := feature.HotOrder(counts)
	res = append(res, static("presample", presample))
	for _, p := range []struct {
		name  string
		order []int32
	}{{"belady-superbatch", degree}, {"belady-superbatch-presample", presample}} {
		r, err := belady(p.name, trace, p.order, budget, g.NumNodes, o.Superbatch, pages)
		if err != nil {
			return nil, nil, err
		}
		res = append(res, r)
	}
	lays, err := compareLayouts(ctx, d, o, trace, degree, budget, rowB, pagesAt)
	return res, lays, err
}

// belady replays trace with the superbatch policy training uses
// (feature.ReplaySuperbatch) on a cache of budget rows starting with the
// first of order, counting each batch's distinct pages of missed rows.
func belady(name string, trace [][]int32, order []int32, budget, n, superbatch int, pages func(int32) (int64, int64)) (PolicyResult, error) {
	var total int
	for _, b := range trace {
		total += len(b)
	}
	var read int64
	seen := map[int64]bool{}
	cur := -1
	hits, err := feature.ReplaySuperbatch(trace, order, n, budget, superbatch, func(t int, v int32) {
		if t != cur {
			clear(seen)
			cur = t
		}
		p0, p1 := pages(v)
		for p := p0; p <= p1; p++ {
			if !seen[p] {
				seen[p] = true
				read += 4096
			}
		}
	})
	return PolicyResult{Policy: name, HitRate: float64(hits) / float64(max(total, 1)), ReadBytes: read}, err
}

// compareLayouts replays trace with the superbatch policy on the degree
// cache, with the rows stored in the original order and in each layout's.
func compareLayouts(ctx context.Context, d *dataset.Dataset, o Options, trace [][]int32, degree []int32, budget int, rowB int64,
	pagesAt func(pos []int32, base int64) func(int32) (int64, int64)) ([]LayoutResult, error) {
	var total int64
	for _, b := range trace {
		total += int64(len(b))
	}
	var out []LayoutResult
	for _, m := range append([]layout.Method{""}, layout.Methods...) {
		var pos []int32
		name := "original"
		base := d.FeatureArray.DataOffset
		var secs float64
		if m != "" {
			t0 := time.Now()
			order, err := layout.Order(ctx, d, layout.Config{Method: m, Fanouts: o.Fanouts, BatchSize: o.Batch, Seed: 5})
			if err != nil {
				return nil, err
			}
			secs = time.Since(t0).Seconds()
			// A packed copy's rows start on a page (dataset.FeatureAlign).
			pos, name, base = layout.Inverse(order), string(m), dataset.FeatureAlign
		}
		r, err := belady(name, trace, degree, budget, d.Graph.NumNodes, o.Superbatch, pagesAt(pos, base))
		if err != nil {
			return nil, err
		}
		missed := float64(total) * (1 - r.HitRate)
		lr := LayoutResult{Layout: name, ReadBytes: r.ReadBytes, RowAmplification: float64(r.ReadBytes) / max(1, missed*float64(rowB)),
			DataOffset: base, Seconds: secs}
		if len(out) > 0 {
			lr.VsOriginal = float64(lr.ReadBytes) / float64(max(1, out[0].ReadBytes))
		} else {
			lr.VsOriginal = 1
		}
		out = append(out, lr)
	}
	return out, nil
}
