// Package synth generates synthetic graph datasets of any size for scale
// tests: power-law degrees, community structure, and features and labels a
// GNN can learn.
//
// Every node belongs to one of Classes communities (its label). Node v gets
// an in-degree drawn from a Pareto (power-law) distribution, scaled so the
// graph has exactly Edges edges; each of its in-neighbours is drawn, with
// probability Homophily, from v's own class, otherwise from the whole graph,
// both in proportion to a per-node popularity that follows the same
// power-law (Chung-Lu style), so out-degrees are heavy-tailed too. Features
// are a class centroid plus Gaussian noise, so features alone are
// informative, and neighbours (mostly of the same class) make them more so.
//
// Generate streams the result into the native dataset format chunk by
// chunk: nodes are generated in parallel chunks, each with its own random
// stream, and written in order, so memory stays at about 65 bytes per node (measured; plus about 60 MiB)
// whatever the edge and feature sizes, and the output is the same for a
// seed whatever the number of workers.
package synth

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/internal/half"
	"github.com/graphmill/graphmill/internal/par"
	"github.com/graphmill/graphmill/internal/rng"
	"github.com/graphmill/graphmill/npy"
)

// Config describes a synthetic dataset.
type Config struct {
	Name       string
	Nodes      int
	Edges      int64
	FeatureDim int
	// FeatureDType stores the features as "float32" ("" too), "float16"
	// or "bfloat16" (half the bytes; each value rounded to nearest even).
	FeatureDType string
	Classes      int
	// Homophily is the probability that an edge joins two nodes of the same
	// class (default 0.8 when zero; set a tiny positive value for none).
	Homophily float64
	// Exponent is the power-law exponent of the degree distribution (> 1;
	// default 2.5).
	Exponent float64
	// Signal scales the class centroids against unit noise (default 0.15).
	Signal float64
	// TrainFrac, ValFrac and TestFrac are the split fractions (defaults
	// 0.1, 0.05, 0.1 when all are zero).
	TrainFrac, ValFrac, TestFrac float64
	Seed                         uint64
	Workers                      int
	// Progress, if set, is called with the number of nodes written so far.
	Progress func(done, total int64)
}

func (c *Config) defaults() error {
	if c.Name == "" {
		c.Name = "synthetic"
	}
	if c.Homophily == 0 {
		c.Homophily = 0.8
	}
	if c.Exponent == 0 {
		c.Exponent = 2.5
	}
	if c.Signal == 0 {
		c.Signal = 0.15
	}
	if c.TrainFrac == 0 && c.ValFrac == 0 && c.TestFrac == 0 {
		c.TrainFrac, c.ValFrac, c.TestFrac = 0.1, 0.05, 0.1
	}
	switch {
	case c.Nodes < 2 || c.Nodes > graph.MaxNodes:
		return fmt.Errorf("synth: nodes must be in [2, %d], got %d", graph.MaxNodes, c.Nodes)
	case c.Edges < 0:
		return fmt.Errorf("synth: edges must be >= 0, got %d", c.Edges)
	case c.Edges > int64(c.Nodes)*int64(c.Nodes-1):
		return fmt.Errorf("synth: %d edges do not fit in a simple graph of %d nodes", c.Edges, c.Nodes)
	case c.FeatureDType != "" && c.FeatureDType != "float32" && c.FeatureDType != "float16" && c.FeatureDType != "bfloat16":
		return fmt.Errorf("synth: feature dtype %q: want float32, float16 or bfloat16", c.FeatureDType)
	case c.FeatureDim < 0:
		return fmt.Errorf("synth: feature dimension must be >= 0, got %d", c.FeatureDim)
	case c.Classes < 1 || c.Classes > c.Nodes:
		return fmt.Errorf("synth: classes must be in [1, nodes], got %d", c.Classes)
	case !(c.Homophily >= 0 && c.Homophily <= 1): // NaN too
		return fmt.Errorf("synth: homophily must be in [0, 1], got %g", c.Homophily)
	case !(c.Exponent > 1) || math.IsInf(c.Exponent, 1):
		return fmt.Errorf("synth: power-law exponent must be a finite number > 1, got %g", c.Exponent)
	case !(c.TrainFrac >= 0 && c.ValFrac >= 0 && c.TestFrac >= 0 && c.TrainFrac+c.ValFrac+c.TestFrac <= 1):
		return fmt.Errorf("synth: split fractions must be >= 0 and sum to at most 1, got %g, %g and %g", c.TrainFrac, c.ValFrac, c.TestFrac)
	case !(c.Signal >= 0) || math.IsInf(c.Signal, 1):
		return fmt.Errorf("synth: signal must be a finite number >= 0, got %g", c.Signal)
	}
	return nil
}

// featureNPYType is the .npy dtype features of dtype are stored as
// (numpy has no bfloat16: its bit patterns are stored as uint16).
func featureNPYType(dtype string) npy.DType {
	switch dtype {
	case "float16":
		return npy.Float16
	case "bfloat16":
		return npy.Uint16
	}
	return npy.Float32
}

// encodeFeatures returns x's bytes as dtype, encoding into *buf for half
// precision.
func encodeFeatures(dtype string, x []float32, buf *[]uint16) []byte {
	if dtype != "float16" && dtype != "bfloat16" {
		return npy.AsBytes(x)
	}
	*buf = slices.Grow((*buf)[:0], len(x))[:len(x)]
	if dtype == "float16" {
		half.EncodeF16(*buf, x)
	} else {
		half.EncodeBF16(*buf, x)
	}
	return npy.AsBytes(*buf)
}

// chunkNodes is the number of nodes generated as one unit of work.
const chunkNodes = 1 << 14

// gen holds the per-node tables shared by all chunks.
type gen struct {
	cfg       Config
	class     []int32 // class of every node
	deg       []int32 // in-degree of every node
	global    alias   // popularity over all nodes
	perClass  []alias // popularity within each class, over members
	members   [][]int32
	centroids []float32 // Classes x FeatureDim
}

// sourcePrefix begins the Source of every dataset Generate writes (how
// Ensure tells them from a user's).
const sourcePrefix = "synthetic:"

// Ensure makes dir hold the dataset cfg describes: a dataset already there
// with the same node, edge and feature counts is reused (reused is true),
// another generated one is replaced by a freshly generated one, and any
// other dataset is an error. Benchmarks use it to generate their graphs
// once.
func Ensure(ctx context.Context, dir string, cfg Config) (reused bool, err error) {
	if d, err := dataset.Open(dir); err == nil {
		m := d.Meta
		d.Close()
		if m.NumNodes == cfg.Nodes && m.NumEdges == cfg.Edges && m.FeatureDim == cfg.FeatureDim && featureNPYType(m.FeatureDType) == featureNPYType(cfg.FeatureDType) {
			return true, nil
		}
		if !strings.HasPrefix(m.Source, sourcePrefix) {
			// A user's dataset (a benchmark's --dir given a copy of Cora
			// replaced it): only a generated one is replaced.
			return false, fmt.Errorf("%s holds the dataset %s, which was not generated: give a directory for the benchmark's synthetic graph", dir, m.Name)
		}
	}
	_, err = Generate(ctx, dir, cfg, true)
	return false, err
}

// Generate writes a synthetic dataset to dir (atomically; overwrite
// replaces an existing one) and returns its meta data.
func Generate(ctx context.Context, dir string, cfg Config, overwrite bool) (dataset.Meta, error) {
	if err := cfg.defaults(); err != nil {
		return dataset.Meta{}, err
	}
	g := &gen{cfg: cfg}
	g.tables()
	w, err := dataset.NewWriter(dir, overwrite)
	if err != nil {
		return dataset.Meta{}, err
	}
	defer w.Abort()
	meta, err := g.write(ctx, w)
	if err != nil {
		return dataset.Meta{}, err
	}
	if err := w.Commit(meta); err != nil {
		return dataset.Meta{}, err
	}
	return meta, nil
}

// nodeRand returns node v's private random stream for the table pass.
func (g *gen) nodeRand(v int) rng.Rand {
	var r rng.Rand
	r.Seed(rng.Derive(g.cfg.Seed, uint64(v)|1<<40))
	return r
}

// tables draws classes, degrees and popularity, and builds alias tables.
func (g *gen) tables() {
	c := &g.cfg
	n := c.Nodes
	g.class = make([]int32, n)
	g.deg = make([]int32, n)
	pop := make([]float32, n)
	alpha := c.Exponent
	raw := make([]float64, n)
	par.For(par.Workers(c.Workers), n, func(_, lo, hi int) {
		for v := lo; v < hi; v++ {
			r := g.nodeRand(v)
			g.class[v] = int32(r.IntN(c.Classes))
			// Pareto(1, alpha-1) for degree and popularity (independent draws).
			raw[v] = math.Pow(1-r.Float64(), -1/(alpha-1))
			pop[v] = float32(math.Pow(1-r.Float64(), -1/(alpha-1)))
		}
	})
	// Scale degrees to sum to exactly Edges, capping hubs so a node never
	// needs more distinct neighbours than a fraction of the graph.
	capDeg := float64(min(n-1, max(1, int(4*math.Sqrt(float64(n))*math.Max(1, float64(c.Edges)/float64(n))))))
	sum := 0.0
	for _, x := range raw {
		sum += x
	}
	scale := float64(c.Edges) / sum
	for iter := 0; iter < 20; iter++ {
		s := 0.0
		for _, x := range raw {
			s += math.Min(x*scale, capDeg)
		}
		if s <= 0 || math.Abs(s-float64(c.Edges)) < 0.5 {
			break
		}
		scale *= float64(c.Edges) / s
	}
	// Round with a carried residual so the total is exact.
	carry := 0.0
	total := int64(0)
	for v, x := range raw {
		want := math.Min(x*scale, capDeg) + carry
		d := math.Floor(want + 0.5)
		d = math.Max(0, math.Min(d, capDeg))
		carry = want - d
		g.deg[v] = int32(d)
		total += int64(d)
	}
	// Fix any remaining difference (from the cap) on the smallest degrees.
	for v := 0; total != c.Edges && v < n; v++ {
		if total < c.Edges && float64(g.deg[v]) < capDeg {
			g.deg[v]++
			total++
		} else if total > c.Edges && g.deg[v] > 0 {
			g.deg[v]--
			total--
		}
	}
	g.members = make([][]int32, c.Classes)
	counts := make([]int, c.Classes)
	for _, k := range g.class {
		counts[k]++
	}
	for k := range g.members {
		g.members[k] = make([]int32, 0, counts[k])
	}
	for v, k := range g.class {
		g.members[k] = append(g.members[k], int32(v))
	}
	g.global = newAlias(pop)
	g.perClass = make([]alias, c.Classes)
	buf := make([]float32, 0)
	for k, m := range g.members {
		buf = buf[:0]
		for _, v := range m {
			buf = append(buf, pop[v])
		}
		g.perClass[k] = newAlias(buf)
	}
	r := rng.New(rng.Derive(c.Seed, 1<<50))
	g.centroids = make([]float32, c.Classes*c.FeatureDim)
	for i := range g.centroids {
		g.centroids[i] = r.Normalish() * float32(c.Signal)
	}
}

// chunk is one generated run of nodes.
type chunk struct {
	lo, hi   int
	indices  []int32
	features []float32
	seen     []uint64 // a bit per node: a dense row's entries (all clear between rows)
}

// bitmapRows lets fill drop a dense row's repeats as they are drawn
// (tests turn it off to compare with sorting the row after every round).
var bitmapRows = true

// fill generates the in-neighbours and features of nodes [lo, hi).
func (g *gen) fill(ck *chunk) {
	c := &g.cfg
	var r rng.Rand
	r.Seed(rng.Derive(c.Seed, uint64(ck.lo/chunkNodes)))
	ck.indices = ck.indices[:0]
	for v := ck.lo; v < ck.hi; v++ {
		d := int(g.deg[v])
		start := len(ck.indices)
		k := g.class[v]
		// A row of 1/64 of the nodes or more draws many repeats. They are
		// dropped as they are drawn, against a bit per node (at most 8
		// bytes per entry of the row), where sorting the row again after
		// every round was 98 % of generating 2M edges over 20k nodes. The
		// draws, and so the row, are the same either way.
		dense := d >= 64 && int64(d)*64 >= int64(c.Nodes) && bitmapRows
		if dense && ck.seen == nil {
			ck.seen = make([]uint64, (c.Nodes+63)/64)
		}
		for round := 0; len(ck.indices)-start < d; round++ {
			for need := d - (len(ck.indices) - start); need > 0; need-- {
				var u int32
				switch {
				case round >= 16:
					// Dense rows that popularity draws fill slowly: finish
					// them with uniform draws.
					u = int32(r.IntN(c.Nodes))
				case r.Float64() < c.Homophily && len(g.members[k]) > 1:
					u = g.members[k][g.perClass[k].draw(&r)]
				default:
					u = int32(g.global.draw(&r))
				}
				if u == int32(v) {
					need++
					continue
				}
				if dense {
					w, bit := u>>6, uint64(1)<<(u&63)
					if ck.seen[w]&bit != 0 {
						continue
					}
					ck.seen[w] |= bit
				}
				ck.indices = append(ck.indices, u)
			}
			if !dense {
				list := ck.indices[start:]
				slices.Sort(list)
				ck.indices = ck.indices[:start+len(slices.Compact(list))]
			}
		}
		if dense {
			list := ck.indices[start:]
			for _, u := range list {
				ck.seen[u>>6] = 0
			}
			slices.Sort(list)
		}
	}
	f := c.FeatureDim
	ck.features = slices.Grow(ck.features[:0], (ck.hi-ck.lo)*f)[:(ck.hi-ck.lo)*f]
	for i := 0; i < ck.hi-ck.lo; i++ {
		cen := g.centroids[int(g.class[ck.lo+i])*f : int(g.class[ck.lo+i]+1)*f]
		row := ck.features[i*f : (i+1)*f]
		for j := range row {
			row[j] = cen[j] + r.Normalish()
		}
	}
}

// write streams the dataset into w.
func (g *gen) write(ctx context.Context, w *dataset.Writer) (dataset.Meta, error) {
	c := &g.cfg
	n := c.Nodes
	indptr := make([]int64, n+1)
	for v, d := range g.deg {
		indptr[v+1] = indptr[v] + int64(d)
	}
	if err := dataset.Put(w, dataset.ArrayIndptr, indptr); err != nil {
		return dataset.Meta{}, err
	}
	indices, err := w.Create(dataset.ArrayIndices, npy.Int32, int(c.Edges))
	if err != nil {
		return dataset.Meta{}, err
	}
	defer indices.Abort()
	var feats *npy.Writer
	if c.FeatureDim > 0 {
		if feats, err = w.Create(dataset.ArrayFeatures, featureNPYType(c.FeatureDType), n, c.FeatureDim); err != nil {
			return dataset.Meta{}, err
		}
		defer feats.Abort()
	}
	// Ordered pipeline: workers fill chunks, this goroutine writes them in
	// order. Each chunk has its own result channel, queued in order.
	workers := par.Workers(c.Workers)
	nchunks := (n + chunkNodes - 1) / chunkNodes
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type job struct {
		ck   *chunk
		done chan *chunk
	}
	jobs := make(chan job)
	queue := make(chan job, 2*workers)
	free := make(chan *chunk, 3*workers)
	for i := 0; i < 3*workers; i++ {
		free <- &chunk{}
	}
	go func() {
		defer close(queue)
		for i := 0; i < nchunks; i++ {
			var ck *chunk
			select {
			case ck = <-free:
			case <-ctx.Done():
				return
			}
			ck.lo, ck.hi = i*chunkNodes, min(n, (i+1)*chunkNodes)
			j := job{ck, make(chan *chunk, 1)}
			select {
			case queue <- j:
			case <-ctx.Done():
				return
			}
			select {
			case jobs <- j:
			case <-ctx.Done():
				j.done <- nil // queued but never filled: tell the writer
				return
			}
		}
	}()
	done := make(chan struct{})
	for i := 0; i < workers; i++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for {
				select {
				case j := <-jobs:
					g.fill(j.ck)
					j.done <- j.ck
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	var werr error
	var half []uint16 // the chunk's features in half precision
	for j := range queue {
		ck := <-j.done
		if ck == nil {
			if werr == nil {
				werr = ctx.Err()
			}
			continue
		}
		if werr == nil {
			if _, err := indices.Write(npy.AsBytes(ck.indices)); err != nil {
				werr = err
			} else if feats != nil {
				_, werr = feats.Write(encodeFeatures(c.FeatureDType, ck.features, &half))
			}
			if werr == nil && ctx.Err() != nil {
				werr = ctx.Err()
			}
			if werr != nil {
				cancel()
			}
			if c.Progress != nil {
				c.Progress(int64(ck.hi), int64(n))
			}
		}
		free <- ck
	}
	if werr == nil {
		// The producer may have stopped on cancellation before queueing
		// a chunk: the arrays are short, and the cancellation is why.
		werr = ctx.Err()
	}
	cancel()
	for i := 0; i < workers; i++ {
		<-done
	}
	if werr != nil {
		return dataset.Meta{}, werr
	}
	if err := indices.Close(); err != nil {
		return dataset.Meta{}, err
	}
	if feats != nil {
		if err := feats.Close(); err != nil {
			return dataset.Meta{}, err
		}
	}
	if err := dataset.Put(w, dataset.ArrayLabels, g.class); err != nil {
		return dataset.Meta{}, err
	}
	splits := g.splits()
	meta := dataset.Meta{
		Name: c.Name, Source: fmt.Sprintf(sourcePrefix+" seed %d, homophily %g, exponent %g, signal %g", c.Seed, c.Homophily, c.Exponent, c.Signal),
		NumNodes: n, NumEdges: c.Edges, FeatureDim: c.FeatureDim, NumClasses: c.Classes, FeatureDType: c.FeatureDType,
		Graph:  dataset.GraphMeta{SelfLoops: graph.RemoveSelfLoops.String(), Dedup: true},
		Splits: map[string]int{},
	}
	for _, s := range []string{"train", "val", "test"} {
		meta.Splits[s] = len(splits[s])
		if err := dataset.Put(w, s+"_idx", splits[s]); err != nil {
			return dataset.Meta{}, err
		}
	}
	return meta, nil
}

// splits assigns every node to train, val, test or none by its own hash.
func (g *gen) splits() map[string][]int32 {
	c := &g.cfg
	out := map[string][]int32{"train": {}, "val": {}, "test": {}}
	for v := 0; v < c.Nodes; v++ {
		x := float64(rng.Mix(c.Seed^uint64(v)*0x9e3779b97f4a7c15)>>11) / (1 << 53)
		switch {
		case x < c.TrainFrac:
			out["train"] = append(out["train"], int32(v))
		case x < c.TrainFrac+c.ValFrac:
			out["val"] = append(out["val"], int32(v))
		case x < c.TrainFrac+c.ValFrac+c.TestFrac:
			out["test"] = append(out["test"], int32(v))
		}
	}
	return out
}

// alias is Walker's alias table for O(1) draws from a discrete distribution.
type alias struct {
	prob  []float32
	alias []int32
}

// newAlias builds the table of weights w (all >= 0, not all 0) with
// Vose's method.
func newAlias(w []float32) alias {
	n := len(w)
	a := alias{prob: make([]float32, n), alias: make([]int32, n)}
	if n == 0 {
		return a
	}
	sum := 0.0
	for _, x := range w {
		sum += float64(x)
	}
	scaled := make([]float64, n)
	var small, large []int32
	for i, x := range w {
		scaled[i] = float64(x) * float64(n) / sum
		if scaled[i] < 1 {
			small = append(small, int32(i))
		} else {
			large = append(large, int32(i))
		}
	}
	for len(small) > 0 && len(large) > 0 {
		s, l := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		a.prob[s], a.alias[s] = float32(scaled[s]), l
		scaled[l] -= 1 - scaled[s]
		if scaled[l] < 1 {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	for _, i := range append(small, large...) {
		a.prob[i], a.alias[i] = 1, i
	}
	return a
}

func (a *alias) draw(r *rng.Rand) int {
	i := r.IntN(len(a.prob))
	if r.Float32() < a.prob[i] {
		return i
	}
	return int(a.alias[i])
}
