package diskbench

import (
	"container/heap"
	"context"
	"math"

	"github.com/graphmill/graphmill/batch"
	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/feature"
	"github.com/graphmill/graphmill/sample"
)

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
func ComparePolicies(ctx context.Context, dir string, o Options, cacheBytes int64) ([]PolicyResult, error) {
	d, err := dataset.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	g := d.Graph
	rowB := int64(d.Meta.FeatureDim) * 4
	base := d.FeatureArray.DataOffset
	budget := int(min(cacheBytes/rowB, int64(g.NumNodes)))
	s, err := sample.New(g, sample.Config{Fanouts: o.Fanouts})
	if err != nil {
		return nil, err
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
		return nil, err
	}
	pages := func(v int32) (int64, int64) {
		a := base + int64(v)*rowB
		return a / 4096, (a + rowB - 1) / 4096
	}
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
		return nil, err
	}
	counts := make([]uint32, g.NumNodes)
	for _, b := range pre {
		for _, v := range b {
			counts[v]++
		}
	}
	presample := feature.HotOrder(counts)
	res = append(res, static("presample", presample))
	res = append(res, belady("belady-superbatch", trace, degree, budget, g.NumNodes, o.Superbatch, pages))
	res = append(res, belady("belady-superbatch-presample", trace, presample, budget, g.NumNodes, o.Superbatch, pages))
	return res, nil
}

// belady replays trace with Ginex's superbatch Belady cache of budget
// rows, starting with the first rows of order (hottest first). Rows not
// used again within the superbatch are evicted coldest first, by their
// rank in order.
func belady(name string, trace [][]int32, order []int32, budget, n, superbatch int, pages func(int32) (int64, int64)) PolicyResult {
	const never = math.MaxInt32
	rank := make([]int64, n)
	for i := range rank {
		rank[i] = int64(n)
	}
	for i, v := range order {
		rank[v] = int64(i)
	}
	start := order[:min(budget, len(order))]
	// key orders eviction: the farthest next use first, and among rows
	// not used again in the superbatch, the coldest.
	key := func(next int32, v int32) int64 {
		if next == never {
			return int64(never) + rank[v]
		}
		return int64(next)
	}
	cached := make([]bool, n)
	cur := make([]int64, n) // eviction key of a cached row
	for _, v := range start {
		cached[v] = true
	}
	resident := append([]int32(nil), start...)
	ncached := len(start)
	last := make([]int32, n)
	for i := range last {
		last[i] = never
	}
	var hits, total int
	var read int64
	seen := map[int64]bool{}
	superbatch = max(superbatch, 1)
	for s0 := 0; s0 < len(trace); s0 += superbatch {
		s1 := min(len(trace), s0+superbatch)
		// Next uses within the superbatch, from a backward pass.
		next := make([][]int32, s1-s0)
		for t := s1 - 1; t >= s0; t-- {
			b := trace[t]
			nx := make([]int32, len(b))
			for i, v := range b {
				nx[i] = last[v]
				last[v] = int32(t)
			}
			next[t-s0] = nx
		}
		// The cached rows' next uses: their first in this superbatch.
		h := &useHeap{}
		kept := resident[:0]
		for _, v := range resident {
			if cached[v] {
				kept = append(kept, v)
				cur[v] = key(last[v], v)
				*h = append(*h, use{cur[v], v})
			}
		}
		resident = kept
		heap.Init(h)
		for t := s0; t < s1; t++ {
			clear(seen)
			for i, v := range trace[t] {
				total++
				nx := next[t-s0][i]
				if cached[v] {
					hits++
				} else {
					p0, p1 := pages(v)
					for p := p0; p <= p1; p++ {
						if !seen[p] {
							seen[p] = true
							read += 4096
						}
					}
					if ncached >= budget {
						// Evict the farthest next use, unless v's is farther.
						for h.Len() > 0 {
							top := (*h)[0]
							if !cached[top.v] || cur[top.v] != top.next {
								heap.Pop(h) // stale
								continue
							}
							break
						}
						if h.Len() == 0 || (*h)[0].next <= key(nx, v) {
							continue // bypass: v is needed later than all cached rows
						}
						cached[heap.Pop(h).(use).v] = false
						ncached--
					}
					cached[v] = true
					ncached++
					resident = append(resident, v)
				}
				cur[v] = key(nx, v)
				heap.Push(h, use{cur[v], v})
			}
		}
		// Drop evicted rows from the resident list and reset next uses.
		kept = resident[:0]
		for _, v := range resident {
			if cached[v] {
				kept = append(kept, v)
			}
		}
		resident = kept
		for t := s0; t < s1; t++ {
			for _, v := range trace[t] {
				last[v] = never
			}
		}
	}
	return PolicyResult{Policy: name, HitRate: float64(hits) / float64(max(total, 1)), ReadBytes: read}
}

type use struct {
	next int64 // eviction key
	v    int32
}

// useHeap is a max-heap of next uses.
type useHeap []use

func (h useHeap) Len() int           { return len(h) }
func (h useHeap) Less(i, j int) bool { return h[i].next > h[j].next }
func (h useHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *useHeap) Push(x any)        { *h = append(*h, x.(use)) }
func (h *useHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
