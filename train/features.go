package train

import (
	"context"
	"fmt"

	"github.com/graphmill/graphmill/feature"
	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/internal/memstat"
	"github.com/graphmill/graphmill/tensor"
)

// Option sets an optional input of NewRunner.
type Option func(*Runner)

// WithFeatures makes the run read its features from src instead of the
// dataset's own (a remote, partitioned or pre-built store). The source is
// used as given: Config.NormalizeFeatures, FeatureCacheBytes and
// FeatureDType do not apply to it, and the caller closes it.
func WithFeatures(src feature.Source) Option { return func(r *Runner) { r.feat = src } }

// Partitioner assigns each node of g to one of parts parts (GAS's
// clusters); the result has one entry per node, in [0, parts).
type Partitioner func(ctx context.Context, g *graph.CSC, parts int, seed uint64, workers int) ([]int32, error)

// WithPartitioner gives GAS mode its partitioner (graphmill train passes
// the multilevel one from package partition; train itself does not link
// the partitioner).
func WithPartitioner(p Partitioner) Option { return func(r *Runner) { r.partitioner = p } }

// The values of Config.FeaturesInMemory.
const (
	FeaturesAuto   = "auto"
	FeaturesMemory = "yes"
	FeaturesDisk   = "no"
	FeaturesMapped = "mapped"
)

// Where the features are read from (featurePlace).
const (
	placeMemory = "memory" // an in-memory copy
	placeMapped = "mapped" // through the file mapping
	placeDisk   = "disk"   // explicit batched reads (feature.Disk)
)

// featurePlace decides where the dataset's features, size bytes as
// stored, are read from (Config.FeaturesInMemory). A conversion
// (FeatureDType) makes its own in-memory copy. Under data parallelism
// every rank copies them, and ranks on one machine start at once, each
// seeing the same available memory, so auto counts one copy per rank;
// features that do not fit in half the available memory are read from
// disk with explicit reads, in full-graph mode too for inference alone
// (Load: layer-wise inference through the mapping of features larger
// than memory thrashed the page cache without end).
func (r *Runner) featurePlace(size int64, convert bool) string {
	switch {
	case convert || r.cfg.FeaturesInMemory == FeaturesMapped:
		return placeMapped
	case r.cfg.FeaturesInMemory == FeaturesMemory:
		return placeMemory
	case r.cfg.FeaturesInMemory == FeaturesDisk:
		return placeDisk
	}
	ranks := int64(1)
	if r.cfg.Parallel != nil {
		ranks = int64(max(r.cfg.Parallel.Size(), 1))
	}
	avail := memstat.Available()
	fits := avail > 0 && size*ranks <= avail/2
	switch {
	case !fits && (r.cfg.Mode != Full || r.inference) && avail > 0:
		return placeDisk
	case r.cfg.Mode == Full || r.cfg.FeatureCacheBytes > 0 || r.cfg.MaxMemoryBytes > 0 || !fits:
		return placeMapped
	}
	return placeMemory
}

// openFeatures opens the dataset's features as the run's source: read in
// place through the file mapping whatever their stored dtype (float32,
// float16, bfloat16), row-normalised on the fly (one float32 factor per
// node, never a normalised copy), with the hot-row cache under
// Config.FeatureCacheBytes, and converted to an in-memory copy of
// Config.FeatureDType when that differs from the stored dtype; or read
// from a copy in huge-page memory (Config.FeaturesInMemory), after which
// the mapping's pages leave the resident set; or read from disk with
// explicit batched reads behind a cache filled by one sequential pass
// (openDisk).
func (r *Runner) openFeatures(ctx context.Context) error {
	m := r.ds.Meta
	if r.feat != nil {
		if r.feat.NumRows() != m.NumNodes || r.feat.Dim() != m.FeatureDim {
			return fmt.Errorf("feature source has %d rows of %d values; dataset %s has %d nodes and %d features",
				r.feat.NumRows(), r.feat.Dim(), m.Name, m.NumNodes, m.FeatureDim)
		}
		r.cfg.NormalizeFeatures = false
		return nil
	}
	if r.ds.FeatureArray == nil {
		return fmt.Errorf("dataset %s has no features: training needs them", m.Name)
	}
	opts := feature.Options{Workers: 1, CacheBytes: r.cfg.FeatureCacheBytes}
	convert := false
	var to feature.DType
	if r.cfg.FeatureDType != "" {
		var err error
		if to, err = feature.ParseDType(r.cfg.FeatureDType); err != nil {
			return err
		}
		convert = to.String() != m.FeatureDType && !(m.FeatureDType == "" && to == feature.Float32)
	}
	size := int64(len(r.ds.FeatureArray.Data))
	place := r.featurePlace(size, convert)
	if place == placeDisk {
		return r.openDisk(ctx)
	}
	if opts.CacheBytes > 0 {
		var err error
		if opts.CacheOrder, err = r.cacheOrder(ctx, false); err != nil {
			return err
		}
	}
	first := opts
	if convert {
		first = feature.Options{Workers: 1} // the cache goes on the converted copy
	}
	first.InMemory = place == placeMemory
	st, err := feature.Open(r.ds, first)
	if err != nil {
		return err
	}
	if first.InMemory {
		r.ds.FeatureArray.DropResident()
		r.inMemory = size
	}
	if r.cfg.NormalizeFeatures {
		// Row normalisation is meant for non-negative bag-of-words style
		// features; on features with negative values a row may sum to
		// about zero and blow up, so it is skipped there.
		ok, err := st.NormalizeRows(ctx)
		if err != nil {
			st.Close()
			return err
		}
		r.cfg.NormalizeFeatures = ok
	}
	if convert {
		c, err := feature.Convert(ctx, st, to, opts)
		st.Close()
		if err != nil {
			return err
		}
		st = c
	}
	r.feat, r.owned = st, st
	return nil
}

// Close releases the feature store NewRunner opened (not a source given
// with WithFeatures). Run, Evaluate and Predict return an error
// afterwards.
func (r *Runner) Close() error {
	r.closed = true
	if r.owned != nil {
		r.owned.Close()
		r.owned = nil
	}
	if r.disk != nil {
		r.disk.Close()
		r.disk = nil
	}
	if r.graphIO != nil {
		r.graphIO.Close()
		r.graphIO = nil
	}
	if r.freeGraph != nil {
		r.g = r.ds.Graph
		r.freeGraph()
		r.freeGraph = nil
	}
	return nil
}

// denseFeatures returns every node's input row as one matrix, kept for the
// run: full-graph steps read it whole.
func (r *Runner) denseFeatures(ctx context.Context) (tensor.Matrix, error) {
	if r.dense.Data == nil {
		x, err := denseRows(ctx, r.feat)
		if err != nil {
			return x, err
		}
		r.dense = x
	}
	return r.dense, nil
}

// inferSource is what layer-wise inference reads: the dense rows when a
// full-graph run already holds them, else the source.
func (r *Runner) inferSource() feature.Source {
	if r.dense.Data != nil {
		if s, err := feature.FromFloat32(r.dense.Data, r.dense.Rows, r.dense.Cols, feature.Options{Workers: 1}); err == nil {
			return s
		}
	}
	return r.feat
}

// denseRows returns all of src's rows as one matrix: src's own storage
// when it holds them as plain float32 (no copy), else a gathered copy.
func denseRows(ctx context.Context, src feature.Source) (tensor.Matrix, error) {
	if s, ok := src.(interface{ Float32Rows() ([]float32, bool) }); ok {
		if d, ok := s.Float32Rows(); ok {
			return tensor.Matrix{Rows: src.NumRows(), Cols: src.Dim(), Data: d}, nil
		}
	}
	n, dim := src.NumRows(), src.Dim()
	out := tensor.New(n, dim)
	const chunk = 1 << 14
	ids := make([]int32, 0, chunk)
	for lo := 0; lo < n; lo += chunk {
		hi := min(n, lo+chunk)
		ids = ids[:0]
		for v := lo; v < hi; v++ {
			ids = append(ids, int32(v))
		}
		if err := src.Gather(ctx, ids, out.Data[lo*dim:hi*dim]); err != nil {
			return tensor.Matrix{}, err
		}
	}
	return out, nil
}

// gatherSource copies the rows ids of src into a new matrix.
func gatherSource(ctx context.Context, src feature.Source, ids []int32, ws *tensor.Workspace) (tensor.Matrix, error) {
	out := ws.Get(len(ids), src.Dim()) // every row is written (nil ws: tensor.New)
	return out, src.Gather(ctx, ids, out.Data)
}
