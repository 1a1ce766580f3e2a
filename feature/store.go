package feature

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/internal/hugemem"
	"github.com/graphmill/graphmill/internal/par"
	"github.com/graphmill/graphmill/internal/prefetch"
)

// DType is how feature values are stored.
type DType int

const (
	// Float32 stores 4 bytes per value.
	Float32 DType = iota
	// Float16 stores IEEE binary16 (numpy float16), 2 bytes per value.
	Float16
	// BFloat16 stores bfloat16 (the top half of a float32), 2 bytes per
	// value; numpy has no bfloat16, so files hold its uint16 bit patterns.
	BFloat16
)

// String returns "float32", "float16" or "bfloat16", the names
// dataset.Meta.FeatureDType uses.
func (t DType) String() string {
	switch t {
	case Float32:
		return "float32"
	case Float16:
		return "float16"
	case BFloat16:
		return "bfloat16"
	}
	return fmt.Sprintf("DType(%d)", int(t))
}

// Size returns the bytes per value.
func (t DType) Size() int {
	if t == Float32 {
		return 4
	}
	return 2
}

// ParseDType parses "float32" (or ""), "float16"/"half"/"f16" or
// "bfloat16"/"bf16".
func ParseDType(s string) (DType, error) {
	switch s {
	case "", "float32", "f32":
		return Float32, nil
	case "float16", "half", "f16":
		return Float16, nil
	case "bfloat16", "bf16":
		return BFloat16, nil
	}
	return 0, fmt.Errorf("feature dtype %q: want float32, float16 or bfloat16", s)
}

// Options configures a Store.
type Options struct {
	// Workers bounds the goroutines one Gather uses (0 = GOMAXPROCS).
	// Gathers of less than 256 KiB run on the calling goroutine.
	Workers int
	// InMemory copies the rows into anonymous memory (with transparent
	// huge pages; the copy, made once, uses every core whatever Workers
	// says) instead of reading them through the file mapping. Leave
	// it off for features larger than RAM: they are then read from disk
	// through the mapping as they are gathered, and the hot cache keeps
	// the most used rows in memory.
	InMemory bool
	// CacheBytes is the hot-row cache budget in bytes (0 = no cache). The
	// cache holds the first rows of CacheOrder, as many as fit, in the
	// storage dtype, plus a map of which nodes are cached (a bitmap with
	// counts, 0.14 bytes a node) that is not counted in the budget. A
	// budget at least the size of all rows is clamped to them
	// (CacheStats.Clamped says so).
	CacheBytes int64
	// CacheOrder lists nodes hottest first (see DegreeOrder and HotOrder);
	// required when CacheBytes > 0.
	CacheOrder []int32
}

// Store serves feature rows by node id as float32, whatever the storage
// dtype. It is safe for concurrent use.
type Store struct {
	n, dim int
	dtype  DType
	rowB   int
	data   []byte // backing rows (mapping or in-memory copy)
	mapped bool   // data is the dataset file's mapping (Open without InMemory)
	free   []func()

	// Hot cache.
	hot    *hotSet // the cached nodes and their slots; nil without cache
	cache  []byte
	cached int
	clamp  bool

	// scale, when set, multiplies every gathered row (row normalisation
	// applied on the fly; see NormalizeRows).
	scale []float32

	hits, misses atomic.Int64
	workers      int
}

// Source serves feature rows by node id as float32: the one interface the
// loader, the training step and layer-wise inference read features through.
// Local implementations are Store (in memory, memory-mapped, half precision,
// with a hot-row cache); a remote or partitioned source implements the same
// three methods. Gather must be safe for concurrent use.
type Source interface {
	NumRows() int
	Dim() int
	// Gather copies the rows of ids, as float32, into out
	// (len(ids)*Dim() values, row i for ids[i]).
	Gather(ctx context.Context, ids []int32, out []float32) error
}

var _ Source = (*Store)(nil)

// New returns a store over data, numRows rows of dim values of dtype,
// little-endian and row-major (len(data) must be numRows*dim*dtype.Size()).
// The store reads data in place unless opts.InMemory is set.
func New(data []byte, dtype DType, numRows, dim int, opts Options) (*Store, error) {
	if dtype != Float32 && dtype != Float16 && dtype != BFloat16 {
		return nil, fmt.Errorf("feature: unknown dtype %v", dtype)
	}
	if numRows < 0 || dim <= 0 {
		return nil, fmt.Errorf("feature: %d rows of dimension %d", numRows, dim)
	}
	rowB := dim * dtype.Size()
	if int64(len(data)) != int64(numRows)*int64(rowB) {
		return nil, fmt.Errorf("feature: %d bytes for %d rows of %d %v values", len(data), numRows, dim, dtype)
	}
	s := &Store{n: numRows, dim: dim, dtype: dtype, rowB: rowB, data: data, workers: par.Workers(opts.Workers)}
	if opts.InMemory && len(data) > 0 {
		buf, free := hugemem.Alloc[byte](len(data))
		s.free = append(s.free, free)
		const chunk = 1 << 20
		par.For(par.Workers(0), (len(data)+chunk-1)/chunk, func(_, lo, hi int) {
			a, b := lo*chunk, min(hi*chunk, len(data))
			copy(buf[a:b], data[a:b])
		})
		s.data = buf
	}
	if opts.CacheBytes < 0 {
		return nil, fmt.Errorf("feature: negative cache budget %d", opts.CacheBytes)
	}
	if opts.CacheBytes > 0 {
		if err := s.buildCache(opts.CacheBytes, opts.CacheOrder); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// FromFloat32 returns a store over x, numRows rows of dim float32 values.
func FromFloat32(x []float32, numRows, dim int, opts Options) (*Store, error) {
	return New(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), len(x)*4), Float32, numRows, dim, opts)
}

// Open returns a store over a dataset's features, whatever their stored
// dtype (dataset.Meta.FeatureDType).
func Open(d *dataset.Dataset, opts Options) (*Store, error) {
	a := d.FeatureArray
	if a == nil {
		return nil, fmt.Errorf("feature: dataset %s has no features", d.Dir)
	}
	dt, err := arrayDType(d)
	if err != nil {
		return nil, err
	}
	if len(a.Shape) != 2 {
		return nil, fmt.Errorf("feature: features array has shape %v, want [nodes, dim]", a.Shape)
	}
	s, err := New(a.Data, dt, a.Shape[0], a.Shape[1], opts)
	if err == nil {
		s.mapped = !opts.InMemory
	}
	return s, err
}

// buildCache copies the first rows of order into the cache table.
func (s *Store) buildCache(budget int64, order []int32) error {
	set, k, clamp, err := hotRows(s.n, s.rowB, budget, order)
	if err != nil || k == 0 {
		return err
	}
	hot := newHotSet(set)
	s.hot, s.cached, s.clamp = &hot, k, clamp
	buf, free := hugemem.Alloc[byte](k * s.rowB)
	s.free = append(s.free, free)
	s.cache = buf
	par.For(s.workers, s.n, func(_, lo, hi int) {
		for v := lo; v < hi; v++ {
			if sl, ok := hot.slot(int32(v)); ok {
				copy(buf[sl*s.rowB:(sl+1)*s.rowB], s.data[v*s.rowB:(v+1)*s.rowB])
			}
		}
	})
	return nil
}

// hotRows picks the rows a cache of budget bytes holds, the first of order
// (hottest first) that fit, rows of rowB bytes out of n: it returns them
// as a bitmap (bit v%64 of set[v/64]; nil when nothing fits), their
// number, and whether the budget exceeded all rows (clamped).
func hotRows(n, rowB int, budget int64, order []int32) (set []uint64, k int, clamp bool, err error) {
	if order == nil {
		return nil, 0, false, errors.New("feature: a cache budget needs a CacheOrder (e.g. DegreeOrder)")
	}
	rows := budget / int64(rowB)
	if rows >= int64(n) {
		clamp = budget > int64(n)*int64(rowB)
		rows = int64(n)
	}
	rows = min(rows, int64(len(order)))
	if rows == 0 {
		return nil, 0, clamp, nil
	}
	set = make([]uint64, (n+63)/64)
	for _, v := range order {
		if k == int(rows) {
			break
		}
		if v < 0 || int(v) >= n {
			return nil, 0, false, fmt.Errorf("feature: cache order holds %d, not a row in [0, %d)", v, n)
		}
		if set[v/64]>>(v%64)&1 != 0 {
			continue // repeated: keep the first
		}
		set[v/64] |= 1 << (v % 64)
		k++
	}
	return set, k, clamp, nil
}

// cacheSlots is hotRows as a node-to-slot map (-1: not cached), slots in
// id order: the cache is laid out as the file is, so that a sequential
// pass fills it front to back.
func cacheSlots(n, rowB int, budget int64, order []int32) (slot []int32, k int, clamp bool, err error) {
	set, k, clamp, err := hotRows(n, rowB, budget, order)
	if set == nil {
		return nil, 0, clamp, err
	}
	slot = make([]int32, n)
	k = 0
	for v := range slot {
		slot[v] = -1
		if set[v/64]>>(v%64)&1 != 0 {
			slot[v] = int32(k)
			k++
		}
	}
	return slot, k, clamp, nil
}

// NormalizeRows makes every later Gather divide each row by its sum (rows
// summing to 0 are left as they are), as PyG's NormalizeFeatures does, with
// no copy of the features: the store keeps one float32 factor per row. It
// reads every row once, and does nothing (returning false) when some value
// is negative, infinite or NaN, since row normalisation is meant for non-negative
// bag-of-words style features. Call it before the store is shared.
func (s *Store) NormalizeRows(ctx context.Context) (bool, error) {
	scale := make([]float32, s.n)
	const chunk = 1024
	nonNeg := atomic.Bool{}
	nonNeg.Store(true)
	errs := make([]error, s.workers)
	par.For(s.workers, (s.n+chunk-1)/chunk, func(w, lo, hi int) {
		buf := make([]float32, chunk*s.dim)
		ids := make([]int32, chunk)
		for c := lo; c < hi && nonNeg.Load(); c++ {
			a, b := c*chunk, min((c+1)*chunk, s.n)
			for i := range ids[:b-a] {
				ids[i] = int32(a + i)
			}
			x := buf[:(b-a)*s.dim]
			if err := s.gather(ids[:b-a], x, true, nil); err != nil {
				errs[w] = err
				return
			}
			if err := ctx.Err(); err != nil {
				errs[w] = err
				return
			}
			for i := 0; i < b-a; i++ {
				f, ok := rowScale(x[i*s.dim : (i+1)*s.dim])
				if !ok {
					nonNeg.Store(false)
					return
				}
				scale[a+i] = f
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return false, err
	}
	if !nonNeg.Load() {
		return false, nil
	}
	s.scale = scale
	return true, nil
}

// Float32Rows returns the rows in place, row-major, when they are stored
// as float32 with no scaling (a zero-copy view); ok is false otherwise.
func (s *Store) Float32Rows() (rows []float32, ok bool) {
	if s.dtype != Float32 || s.scale != nil || s.data == nil {
		return nil, false
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(s.data))), len(s.data)/4), true
}

// NumRows returns the number of rows (nodes).
func (s *Store) NumRows() int { return s.n }

// Dim returns the number of values per row.
func (s *Store) Dim() int { return s.dim }

// DType returns the storage dtype.
func (s *Store) DType() DType { return s.dtype }

// Close releases in-memory copies. The store must not be used afterwards.
func (s *Store) Close() error {
	for _, f := range s.free {
		f()
	}
	s.free = nil
	s.data, s.cache = nil, nil
	return nil
}

// CacheStats describes the hot cache and its use since the last ResetStats.
type CacheStats struct {
	// Rows and Bytes are the cached rows and the bytes their table takes.
	Rows  int
	Bytes int64
	// MapBytes is the size of the map of the cached nodes to their slots.
	MapBytes int64
	// Clamped reports that the budget exceeded the features and was
	// clamped to them.
	Clamped bool
	// Hits and Misses count gathered rows served from the cache and from
	// the backing store.
	Hits, Misses int64
}

// HitRate returns Hits / (Hits + Misses), or 0 before any gather.
func (c CacheStats) HitRate() float64 {
	if c.Hits+c.Misses == 0 {
		return 0
	}
	return float64(c.Hits) / float64(c.Hits+c.Misses)
}

// CacheStats returns the cache's size and hit counts.
func (s *Store) CacheStats() CacheStats {
	return CacheStats{
		Rows: s.cached, Bytes: int64(len(s.cache)), MapBytes: s.hot.bytes(),
		Clamped: s.clamp, Hits: s.hits.Load(), Misses: s.misses.Load(),
	}
}

// ResetStats zeroes the hit and miss counters.
func (s *Store) ResetStats() {
	s.hits.Store(0)
	s.misses.Store(0)
}

// parallelBytes is the gather size below which Gather runs on the calling
// goroutine.
const parallelBytes = 256 << 10

// Gather copies the rows of ids, converted to float32 (and scaled, after
// NormalizeRows), into out, which must hold len(ids)*Dim() values: row i of
// out is the feature row of node ids[i]. It returns an error, and leaves out
// partly written, if an id is out of range or ctx is done.
func (s *Store) Gather(ctx context.Context, ids []int32, out []float32) error {
	return s.GatherEach(ctx, ids, out, nil)
}

// eachBytes is the size of the ranges of rows GatherEach hands to done:
// a part of L1, so that done's work on them finds them there.
const eachBytes = 16 << 10

// GatherEach is Gather that calls done(lo, hi), when not nil, as soon as
// rows [lo, hi) of out are written, a few KiB of rows at a time, so that
// work on them (a layer's input dropout) finds them in cache. Every row
// is in exactly one range; done may be called from several goroutines at
// once.
func (s *Store) GatherEach(ctx context.Context, ids []int32, out []float32, done func(lo, hi int)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(out) != len(ids)*s.dim {
		return fmt.Errorf("feature: output holds %d values, want %d ids x %d", len(out), len(ids), s.dim)
	}
	k := min(s.workers, max(1, len(ids)*s.dim*4/parallelBytes))
	if k <= 1 {
		return s.gather(ids, out, false, done)
	}
	errs := make([]error, k)
	par.For(k, len(ids), func(w, lo, hi int) {
		var each func(a, b int)
		if done != nil {
			each = func(a, b int) { done(lo+a, lo+b) }
		}
		errs[w] = s.gather(ids[lo:hi], out[lo*s.dim:hi*s.dim], false, each)
	})
	return errors.Join(errs...)
}

// gather is the sequential GatherEach; raw leaves rows unscaled and the
// cache statistics untouched. Rows go out to done in ranges of step.
func (s *Store) gather(ids []int32, out []float32, raw bool, done func(lo, hi int)) error {
	step := len(ids)
	if done != nil {
		step = max(1, eachBytes/(4*s.dim))
	}
	src, fast := s.Float32Rows()
	fast = fast && s.hot == nil
	pf := s.prefetcher(ids, out)
	hits := 0
	for lo := 0; lo < len(ids); lo += step {
		hi := min(len(ids), lo+step)
		var err error
		if fast {
			err = s.copyRows(src, ids, out, lo, hi, &pf)
		} else {
			var h int
			h, err = s.decodeRows(ids, out, lo, hi, raw, &pf)
			hits += h
		}
		if err != nil {
			return err
		}
		if done != nil {
			done(lo, hi)
		}
	}
	if s.hot != nil && !raw {
		s.hits.Add(int64(hits))
		s.misses.Add(int64(len(ids) - hits))
	}
	return nil
}

// copyRows is gather's common case, rows [lo, hi) of float32 rows src
// with no cache and no scaling: a loop of nothing but the bound check,
// the copy and, every few rows, a prefetch of the rows a few KiB ahead
// (so that their misses, and on a file mapping their TLB misses, overlap
// the copies). The general loop's per-row dispatch cost a fifth of the
// gather's rate.
func (s *Store) copyRows(src []float32, ids []int32, out []float32, lo, hi int, pf *rowPrefetcher) error {
	dim, n := s.dim, uint32(s.n)
	for i, v := range ids[lo:hi] {
		i += lo
		if i == pf.next {
			pf.advance(i)
		}
		if uint32(v) >= n {
			return s.badID(v, i)
		}
		copy(out[i*dim:(i+1)*dim], src[int(v)*dim:int(v+1)*dim])
	}
	return nil
}

// decodeRows is gather's general case for rows [lo, hi): from the cache
// or the table, decoded to float32 and scaled (unless raw). It returns
// how many came from the cache.
func (s *Store) decodeRows(ids []int32, out []float32, lo, hi int, raw bool, pf *rowPrefetcher) (int, error) {
	dim, n := s.dim, uint32(s.n)
	hits := 0
	for i, v := range ids[lo:hi] {
		i += lo
		if i == pf.next {
			pf.advance(i)
		}
		if uint32(v) >= n {
			return hits, s.badID(v, i)
		}
		row, hit := pf.row(i, v)
		if hit {
			hits++
		}
		decodeRow(out[i*dim:(i+1)*dim], row, s.dtype)
		if s.scale != nil && !raw {
			scaleRow(out[i*dim:(i+1)*dim], s.scale[v])
		}
	}
	return hits, nil
}

// badID is the error of a gather's id v at position i out of range.
func (s *Store) badID(v int32, i int) error {
	return fmt.Errorf("feature: id %d (position %d) is not a row in [0, %d)", v, i, s.n)
}

// rowPrefetcher prefetches the stored rows of a gather's ids a few KiB
// ahead of the copy (prefetch.RowsAhead), a group at a time, so that
// their misses (and a file mapping's TLB misses) overlap the copies: a
// gather of random rows runs 1.4-2x faster so on these VMs. With a hot
// cache, the row is prefetched from the cache or the table as the cache's
// map says (the map is small enough to be found in cache itself), and
// its slot kept for the copy.
//
// The output rows the group will be written to are prefetched with them:
// a batch's feature matrix is large (21 MB for 53k rows of 100 features)
// and was last written a few steps ago, so its lines are no longer in
// cache, and each copy's stores waited for them. `bench train --quick`
// (Intel Xeon, AVX-512), four alternated pairs: the gather's CPU 53-55 ->
// 45-47 ms an epoch, the epoch's 306-315 -> 293-302 ms (six more pairs,
// the change toggled in one binary, agree); the full run (a
// 400 MB table, its rows from memory) and `graphmill train` on a 1M-node
// graph unchanged. After the stored rows: prefetched before them, the
// gather gained half as much. (Unlike streaming stores, see
// docs/benchmarks.md session 49, the rows stay in cache for the step,
// which reads them next.)
type rowPrefetcher struct {
	s                  *Store
	ids                []int32
	out                []float32 // the gather's output: len(ids) rows of s.dim floats
	ahead, group, next int
	// slots holds, with a hot cache, the slot of row i at i%len(slots) (-1
	// where not cached) from when it was prefetched (at most ahead+group
	// rows before it is copied).
	slots [2 * prefetch.MaxRowsAhead]int32
}

// prefetcher starts prefetching for a gather of ids into out: the loop
// calls advance(i) when it reaches row i == next.
func (s *Store) prefetcher(ids []int32, out []float32) rowPrefetcher {
	ahead, group := prefetch.RowsAhead(s.rowB)
	p := rowPrefetcher{s: s, ids: ids, out: out, ahead: ahead, group: group}
	p.rows(0, min(ahead, len(ids)))
	return p
}

// advance prefetches for the group of rows starting ahead of row i.
func (p *rowPrefetcher) advance(i int) {
	p.next += p.group
	ids := p.ids
	if a := i + p.ahead; a < len(ids) {
		p.rows(a, min(a+p.group, len(ids)))
	}
}

// rows prefetches the stored rows of ids[lo:hi] and the output rows
// they go to.
func (p *rowPrefetcher) rows(lo, hi int) {
	s := p.s
	ids := p.ids[lo:hi]
	if s.hot == nil {
		prefetch.Rows(s.data, s.rowB, ids)
	} else {
		var miss, hit [prefetch.MaxRowsAhead]int32 // hi-lo <= ahead
		nm, nh := 0, 0
		for j, v := range ids {
			sl := int32(-1)
			if uint32(v) < uint32(s.n) {
				if c, ok := s.hot.slot(v); ok {
					sl, hit[nh] = int32(c), int32(c)
					nh++
				} else {
					miss[nm] = v
					nm++
				}
			}
			p.slots[(lo+j)%len(p.slots)] = sl
		}
		prefetch.Rows(s.data, s.rowB, miss[:nm])
		prefetch.Rows(s.cache, s.rowB, hit[:nh])
	}
	prefetch.Floats(p.out[lo*s.dim : hi*s.dim])
}

// row returns the stored bytes of row i of the gather, node v (in range),
// and whether they come from the cache.
func (p *rowPrefetcher) row(i int, v int32) ([]byte, bool) {
	s := p.s
	if s.hot != nil {
		if sl := int(p.slots[i%len(p.slots)]); sl >= 0 {
			return s.cache[sl*s.rowB : (sl+1)*s.rowB], true
		}
	}
	return s.data[int(v)*s.rowB : int(v+1)*s.rowB], false
}

// DegreeOrder ranks nodes by how often they appear as a source in g
// (their out-degree in the CSC, i.e. how often neighbour sampling can
// reach them), hottest first, ties by id: the in-degree order of
// torch-quiver and PaGraph, taken in the direction sampling uses.
func DegreeOrder(g *graph.CSC) []int32 {
	deg := g.OutDegrees()
	score := make([]uint32, len(deg))
	for i, d := range deg {
		score[i] = uint32(d)
	}
	return HotOrder(score)
}

// HotOrder returns the nodes with a positive score, highest score first,
// ties by id (e.g. counts from sample.Sampler.CountInputs, GNNLab's
// pre-sampling policy). Scores up to the number of nodes (degrees and
// counts, nearly always) are ranked by a counting sort, in linear time (a
// tenth of a comparison sort's on 32M nodes); larger ones by a sort.
func HotOrder(score []uint32) []int32 {
	var top uint32
	positive := 0
	for _, c := range score {
		top = max(top, c)
		if c > 0 {
			positive++
		}
	}
	order := make([]int32, positive)
	if int64(top) > int64(len(score)) {
		keys := make([]uint64, 0, positive)
		for v, c := range score {
			if c > 0 {
				keys = append(keys, uint64(^c)<<32|uint64(v))
			}
		}
		slices.Sort(keys)
		for i, k := range keys {
			order[i] = int32(uint32(k))
		}
		return order
	}
	// at[c] is where the nodes of score c start: higher scores first.
	at := make([]int, top+2)
	for _, c := range score {
		if c > 0 {
			at[top-c+1]++
		}
	}
	for i := 1; i < len(at); i++ {
		at[i] += at[i-1]
	}
	for v, c := range score {
		if c > 0 {
			order[at[top-c]] = int32(v)
			at[top-c]++
		}
	}
	return order
}

// decodeRow converts one stored row of dtype to float32 in dst (len(dst)
// values).
func decodeRow(dst []float32, row []byte, dtype DType) {
	switch dtype {
	case Float32:
		copy(dst, unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(row))), len(dst)))
	case Float16:
		DecodeF16(dst, unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(row))), len(dst)))
	case BFloat16:
		DecodeBF16(dst, unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(row))), len(dst)))
	}
}

// scaleRow multiplies a gathered row by its normalisation factor.
func scaleRow(dst []float32, inv float32) {
	for j := range dst {
		dst[j] *= inv
	}
}

// rowScale returns the factor that makes row sum to 1 (1 for a row summing
// to 0), or false when some value is negative, infinite or NaN.
func rowScale(row []float32) (float32, bool) {
	var sum float64
	for _, v := range row {
		if !(v >= 0) || math.IsInf(float64(v), 1) {
			return 0, false
		}
		sum += float64(v)
	}
	if sum == 0 {
		return 1, true
	}
	return float32(1 / sum), true
}
