package feature

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/internal/diskio"
	"github.com/graphmill/graphmill/internal/hugemem"
	"github.com/graphmill/graphmill/internal/prefetch"
	"github.com/graphmill/graphmill/npy"
)

// pageSize is the unit rows are read in: the page and O_DIRECT block size.
const pageSize = 4096

// DiskOptions configures OpenDisk.
type DiskOptions struct {
	// CacheBytes is the budget of the rows kept in memory (0 = none): the
	// first rows of CacheOrder that fit, in the storage dtype, filled by
	// one sequential pass over the file. The node-to-slot map (4 bytes a
	// node) is not counted.
	CacheBytes int64
	// CacheOrder lists nodes hottest first (DegreeOrder, HotOrder);
	// required when CacheBytes > 0.
	CacheOrder []int32
	// Normalize computes the row normalisation factors (as
	// Store.NormalizeRows) in the same sequential pass; Disk.Normalized
	// says whether they apply (not when some value is negative).
	Normalize bool
	// Depth is the number of reads in flight (0 = 64: the device's random
	// 4 KiB read rate levels off there).
	Depth int
	// Buffered reads through the page cache, with random-access advice,
	// instead of O_DIRECT into the store's own buffers.
	Buffered bool
	// Backend is the read backend: "auto" (""), "uring" or "pread" (see
	// package diskio).
	Backend string
	// Superbatch makes the cache dynamic, as Ginex's: Plan hands it the
	// rows of the next batches, and as they are gathered a missed row
	// replaces the cached row whose next use is farthest (rows not used
	// again in the planned batches first, coldest in CacheOrder first).
	// The cache starts as the static one. It takes 8 bytes per cached row
	// and 4 per node more, and the plan's rows while it lasts.
	Superbatch bool
	// Progress, if set, is called as the sequential pass advances, with
	// the bytes read so far and the file's size (from several goroutines,
	// one call at a time).
	Progress func(done, total int64)
}

// Disk serves feature rows from the .npy file on disk with explicit,
// batched reads: the rows a Gather misses in its cache are grouped by
// page, adjacent pages are coalesced into one request, and the requests
// are read many at once (package diskio: io_uring or concurrent preads),
// with O_DIRECT, so the file's pages never sit in the page cache as well
// as in the cache here. This is how training runs on features larger than
// memory: reading them through the file mapping instead issues one
// synchronous page fault per faulting thread, each pulling a whole
// readahead window for a 1 KiB row. It is safe for concurrent use.
type Disk struct {
	n, dim int
	dtype  DType
	rowB   int
	base   int64 // file offset of row 0
	rd     *diskio.Reader

	slot   []int32
	cache  []byte
	cached int
	clamp  bool
	free   func()
	scale  []float32

	scratch sync.Pool
	sb      *superbatch // Belady's cache over planned batches, or nil

	hits, misses                       atomic.Int64
	reads, pages, readBytes, readNanos atomic.Int64
	fillBytes, fillNanos               atomic.Int64
}

var _ Source = (*Disk)(nil)

// OpenDisk opens a dataset's features for explicit reads from disk,
// fills the cache and computes the normalisation factors (opts) in one
// sequential pass, and returns the store. ctx cancels the pass.
func OpenDisk(ctx context.Context, d *dataset.Dataset, opts DiskOptions) (*Disk, error) {
	a := d.FeatureArray
	if a == nil {
		return nil, fmt.Errorf("feature: dataset %s has no features", d.Dir)
	}
	dt, err := arrayDType(d)
	if err != nil {
		return nil, err
	}
	return openDiskFile(ctx, a.Path, a.Header, dt, opts)
}

// openDiskFile opens the .npy file at path whose header is h.
func openDiskFile(ctx context.Context, path string, h npy.Header, dt DType, opts DiskOptions) (*Disk, error) {
	if len(h.Shape) != 2 || h.Shape[1] <= 0 {
		return nil, fmt.Errorf("feature: %s has shape %v, want [nodes, dim]", path, h.Shape)
	}
	if opts.CacheBytes < 0 {
		return nil, fmt.Errorf("feature: negative cache budget %d", opts.CacheBytes)
	}
	rd, err := diskio.Open(path, diskio.Options{Depth: opts.Depth, Direct: !opts.Buffered, Backend: opts.Backend})
	if err != nil {
		return nil, err
	}
	s := &Disk{n: h.Shape[0], dim: h.Shape[1], dtype: dt, rowB: h.Shape[1] * dt.Size(), base: h.DataOffset, rd: rd}
	if want := s.base + int64(s.n)*int64(s.rowB); rd.Size() < want {
		rd.Close()
		return nil, fmt.Errorf("feature: %s has %d bytes, its rows need %d", path, rd.Size(), want)
	}
	if opts.CacheBytes > 0 {
		if s.slot, s.cached, s.clamp, err = cacheSlots(s.n, s.rowB, opts.CacheBytes, opts.CacheOrder); err != nil {
			rd.Close()
			return nil, err
		}
		if s.cached > 0 {
			// Its pages are faulted in by scan, ahead of the pass.
			s.cache, s.free = hugemem.AllocLazy[byte](s.cached * s.rowB)
		} else {
			s.slot = nil
		}
	}

	if s.cached > 0 || opts.Normalize {
		if err := s.scan(ctx, opts.Normalize, opts.Progress); err != nil {
			s.Close()
			return nil, err
		}
	}
	if opts.Superbatch && s.cached > 0 {
		s.sb = newSuperbatch(s.slot, s.cached, opts.CacheOrder)
	}
	return s, nil
}

// arrayDType is the stored dtype of d's features (see Open).
func arrayDType(d *dataset.Dataset) (DType, error) {
	a := d.FeatureArray
	dt, err := ParseDType(d.Meta.FeatureDType)
	if err != nil {
		return 0, err
	}
	if d.Meta.FeatureDType == "" && a.DType == npy.Float16 {
		// No feature_dtype in meta.json: the array's own dtype says it
		// (bfloat16 cannot be told from uint16 that way, so it must be named).
		dt = Float16
	}
	switch {
	case dt == Float32 && a.DType != npy.Float32,
		dt == Float16 && a.DType != npy.Float16,
		dt == BFloat16 && a.DType != npy.Uint16:
		return 0, fmt.Errorf("feature: dataset %s says %v features but stores %s", d.Dir, dt, a.DType)
	}
	return dt, nil
}

// scanChunk is the size of one read of the sequential pass: large enough
// that one request keeps the device streaming (a single 4 MiB O_DIRECT
// read in flight already reads at about the device's sequential rate
// here). Three workers keep two in flight while one copies rows out (with
// two, the pass ran at 0.68-1.1 of the rate of two 8 MiB reads in flight).
const scanChunk = 8 << 20

// scan reads the file once, in order, copying the cached rows into the
// cache and, with normalize, computing every row's factor. Rows that
// straddle two chunks are read afterwards on their own.
func (s *Disk) scan(ctx context.Context, normalize bool, progress func(done, total int64)) error {
	start := time.Now()
	total := s.base + int64(s.n)*int64(s.rowB)
	chunks := (total + scanChunk - 1) / scanChunk
	var scale []float32
	var nonNeg atomic.Bool
	if normalize {
		scale = make([]float32, s.n)
		nonNeg.Store(true)
	}
	// Without a cache, the pass only serves normalisation: it stops at the
	// first negative value.
	stopped := func() bool { return s.cached == 0 && !nonNeg.Load() }
	// The cache's pages are faulted in front to back by a goroutine of
	// their own while the pass reads (the slots are in file order, so it
	// runs ahead of the copies; a page the copies reach first they fault
	// in themselves): faulting 20 GiB in took 6-46 s here, in one go
	// before the pass (compaction for huge pages on fragmented memory),
	// as long as the pass itself.
	populated := make(chan struct{})
	var stop atomic.Bool
	go func() {
		defer close(populated)
		const piece = 64 << 20
		for off := 0; off < len(s.cache) && !stop.Load() && ctx.Err() == nil; off += piece {
			hugemem.Populate(s.cache[off:min(off+piece, len(s.cache))], 1)
		}
	}()
	defer func() {
		stop.Store(true)
		<-populated // a piece at most: a tenth of a second
	}()
	var next, done atomic.Int64
	var mu sync.Mutex // serialises progress and the straddlers' list
	var straddle []int32
	const workers = 3 // two reads in flight while one copies
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := diskio.AlignedBuf(scanChunk)
			row := make([]float32, s.dim)
			for {
				c := next.Add(1) - 1
				if c >= chunks || stopped() {
					return
				}
				off := c * scanChunk
				req := []diskio.Req{{Off: off, Buf: buf[:(min(scanChunk, total-off)+pageSize-1)&^(pageSize-1)]}}
				if err := s.rd.ReadBatch(ctx, req); err != nil {
					errs[w] = err
					next.Store(chunks) // the other workers stop too
					return
				}
				got := min(off+int64(req[0].N), total)
				// The rows wholly inside [off, got), and the one that
				// begins here and ends in the next chunk.
				lo := max(0, (off-s.base+int64(s.rowB)-1)/int64(s.rowB))
				hi := max(lo, (got-s.base)/int64(s.rowB))
				if hi < int64(s.n) && s.base+hi*int64(s.rowB) < got {
					mu.Lock()
					straddle = append(straddle, int32(hi))
					mu.Unlock()
				}
				for v := lo; v < hi; v++ {
					s.keepRow(int32(v), buf[s.base+v*int64(s.rowB)-off:][:s.rowB], row, scale, &nonNeg)
				}
				d := done.Add(got - off)
				if progress != nil {
					mu.Lock()
					progress(d, total)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if len(straddle) > 0 && !stopped() {
		slices.Sort(straddle)
		raw := make([][]byte, len(straddle))
		if err := s.readRows(ctx, straddle, func(i int, b []byte) { raw[i] = append([]byte(nil), b...) }); err != nil {
			return err
		}
		row := make([]float32, s.dim)
		for i, v := range straddle {
			s.keepRow(v, raw[i], row, scale, &nonNeg)
		}
	}
	// The straddlers' reads count as the pass's, not as Gathers'.
	s.fillBytes.Add(done.Load() + s.readBytes.Load())
	s.fillNanos.Add(int64(time.Since(start)))
	s.ResetStats()
	if normalize && nonNeg.Load() {
		s.scale = scale
	}
	return nil
}

// keepRow takes row v's stored bytes b during the scan: into the cache if
// v is cached, and into scale (using tmp to decode) while every row so far
// was non-negative.
func (s *Disk) keepRow(v int32, b []byte, tmp, scale []float32, nonNeg *atomic.Bool) {
	if s.slot != nil {
		if sl := s.slot[v]; sl >= 0 {
			copy(s.cache[int(sl)*s.rowB:int(sl+1)*s.rowB], b)
		}
	}
	if scale != nil && nonNeg.Load() {
		decodeRow(tmp, b, s.dtype)
		f, ok := rowScale(tmp)
		if !ok {
			nonNeg.Store(false)
			return
		}
		scale[v] = f
	}
}

// Normalized reports whether Gather row-normalises (DiskOptions.Normalize
// on features with no negative value).
func (s *Disk) Normalized() bool { return s.scale != nil }

// NumRows returns the number of rows.
func (s *Disk) NumRows() int { return s.n }

// Dim returns the number of values per row.
func (s *Disk) Dim() int { return s.dim }

// DType returns the storage dtype.
func (s *Disk) DType() DType { return s.dtype }

// Backend names how the rows are read: "io_uring" or "pread", with
// "+O_DIRECT" or "+page cache".
func (s *Disk) Backend() string {
	if s.rd.Direct() {
		return s.rd.Backend() + "+O_DIRECT"
	}
	return s.rd.Backend() + "+page cache"
}

// Close releases the cache and the file. The store must not be used
// afterwards.
func (s *Disk) Close() error {
	if s.free != nil {
		s.free()
		s.free = nil
	}
	s.cache, s.slot = nil, nil
	return s.rd.Close()
}

// CacheStats returns the cache's size and hit counts.
func (s *Disk) CacheStats() CacheStats {
	return CacheStats{
		Rows: s.cached, Bytes: int64(len(s.cache)), MapBytes: int64(len(s.slot)) * 4,
		Clamped: s.clamp, Hits: s.hits.Load(), Misses: s.misses.Load(),
	}
}

// IOStats counts a Disk's reads.
type IOStats struct {
	// Reads, Pages and Bytes count the requests, the pages and the bytes
	// Gathers read from disk (adjacent pages are one request); Seconds is
	// the wall time Gathers spent waiting for them.
	Reads, Pages, Bytes int64
	Seconds             float64
	// FillBytes and FillSeconds are the sequential pass's.
	FillBytes   int64
	FillSeconds float64
	// Admitted and Evicted count the rows a superbatch cache took in
	// and let go; Planned and Unplanned the gathers of planned batches
	// and the others.
	Admitted, Evicted, Planned, Unplanned int64
}

// PagesPerSecond is the read rate while Gathers waited on the disk.
func (s IOStats) PagesPerSecond() float64 {
	if s.Seconds <= 0 {
		return 0
	}
	return float64(s.Pages) / s.Seconds
}

// IOStats returns the reads so far.
func (s *Disk) IOStats() IOStats {
	st := IOStats{
		Reads: s.reads.Load(), Pages: s.pages.Load(), Bytes: s.readBytes.Load(),
		Seconds:   time.Duration(s.readNanos.Load()).Seconds(),
		FillBytes: s.fillBytes.Load(), FillSeconds: time.Duration(s.fillNanos.Load()).Seconds(),
	}
	if sb := s.sb; sb != nil {
		sb.mu.Lock()
		st.Admitted, st.Evicted, st.Planned, st.Unplanned = sb.admitted, sb.evicted, sb.planned, sb.unplanned
		sb.mu.Unlock()
	}
	return st
}

// ResetStats zeroes the hit, miss and read counters (not the fill's).
func (s *Disk) ResetStats() {
	s.hits.Store(0)
	s.misses.Store(0)
	s.reads.Store(0)
	s.pages.Store(0)
	s.readBytes.Store(0)
	s.readNanos.Store(0)
}

// Gather copies the rows of ids, as float32 (and normalised, see
// Normalized), into out: cached rows from memory, the others read from
// disk, each page they lie on once. With a superbatch cache
// (DiskOptions.Superbatch), a gather of the next planned batch (Plan)
// also updates the cache by Belady's rule.
func (s *Disk) Gather(ctx context.Context, ids []int32, out []float32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(out) != len(ids)*s.dim {
		return fmt.Errorf("feature: output holds %d values, want %d ids x %d", len(out), len(ids), s.dim)
	}
	if sb := s.sb; sb != nil {
		// The cache changes as planned batches are gathered: gathers
		// run one at a time.
		sb.mu.Lock()
		defer sb.mu.Unlock()
		return s.gather(ctx, ids, out, sb.take(ids))
	}
	return s.gather(ctx, ids, out, nil)
}

// gather is Gather; next, when set, holds the next use of every id (a
// planned batch), and the cache is updated as rows are hit and read.
func (s *Disk) gather(ctx context.Context, ids []int32, out []float32, next []int32) error {
	sc := s.getScratch()
	defer s.scratch.Put(sc)
	miss := sc.miss[:0]
	hits := 0
	// The cached rows are prefetched a few KiB ahead of the copy, with
	// the output rows, as Store's gather does (rowPrefetcher): a copy
	// from a cache of every row ran at 0.3x the in-memory store's speed.
	ahead, group := prefetch.RowsAhead(s.rowB)
	var slots [prefetch.MaxRowsAhead]int32
	fetch := func(lo, hi int) {
		n := 0
		for _, v := range ids[lo:hi] {
			if uint32(v) < uint32(s.n) && s.slot[v] >= 0 {
				slots[n] = s.slot[v]
				n++
			}
		}
		prefetch.Rows(s.cache, s.rowB, slots[:n])
		prefetch.Floats(out[lo*s.dim : hi*s.dim])
	}
	at := len(ids) // the next row whose group is prefetched
	if s.slot != nil {
		fetch(0, min(ahead, len(ids)))
		at = 0
	}
	for i, v := range ids {
		if i == at {
			at += group
			if a := i + ahead; a < len(ids) {
				fetch(a, min(a+group, len(ids)))
			}
		}
		if uint32(v) >= uint32(s.n) {
			return fmt.Errorf("feature: id %d (position %d) is not a row in [0, %d)", v, i, s.n)
		}
		if s.slot != nil {
			if sl := s.slot[v]; sl >= 0 {
				dst := out[i*s.dim : (i+1)*s.dim]
				decodeRow(dst, s.cache[int(sl)*s.rowB:int(sl+1)*s.rowB], s.dtype)
				if s.scale != nil {
					scaleRow(dst, s.scale[v])
				}
				if next != nil {
					s.sb.touch(v, next[i])
				}
				hits++
				continue
			}
		}
		miss = append(miss, int32(i))
	}
	sc.miss = miss
	if s.slot != nil {
		s.hits.Add(int64(hits))
		s.misses.Add(int64(len(miss)))
	}
	if len(miss) == 0 {
		return nil
	}
	// Read in file order: sort the missed positions by id.
	keys := sc.keys[:0]
	for _, i := range miss {
		keys = append(keys, uint64(ids[i])<<32|uint64(uint32(i)))
	}
	slices.Sort(keys)
	sc.keys = keys
	return s.readSorted(ctx, sc, keys, func(k uint64, b []byte) {
		v, i := int32(k>>32), int(uint32(k))
		dst := out[i*s.dim : (i+1)*s.dim]
		decodeRow(dst, b, s.dtype)
		if s.scale != nil {
			scaleRow(dst, s.scale[v])
		}
		if next != nil {
			s.admit(v, next[i], b)
		}
	})
}

// readRows reads the stored bytes of rows (sorted ids) from disk and hands
// each to use with its index in rows (b is valid during the call only).
func (s *Disk) readRows(ctx context.Context, rows []int32, use func(i int, b []byte)) error {
	sc := s.getScratch()
	defer s.scratch.Put(sc)
	keys := sc.keys[:0]
	for i, v := range rows {
		keys = append(keys, uint64(v)<<32|uint64(i))
	}
	sc.keys = keys
	return s.readSorted(ctx, sc, keys, func(k uint64, b []byte) { use(int(uint32(k)), b) })
}

// diskScratch is one Gather's working memory (pooled).
type diskScratch struct {
	miss  []int32
	keys  []uint64
	pages []int64
	buf   []byte
	reqs  []diskio.Req
	refs  []rowRef
}

// rowRef locates one row of a read window: its key and where its bytes
// start in the window's buffer.
type rowRef struct {
	key uint64
	at  int
}

// The read window: the pages one batch of requests reads before its rows
// are decoded (bounding a Gather's buffer whatever its size), and the
// largest request (adjacent pages beyond it start a new request).
const (
	windowPages = 4096 // 16 MiB
	maxReqPages = 32   // 128 KiB
)

func (s *Disk) getScratch() *diskScratch {
	if sc, ok := s.scratch.Get().(*diskScratch); ok {
		return sc
	}
	return &diskScratch{}
}

// readSorted reads the rows of keys (id<<32 | anything, sorted by id) a
// window at a time: the pages of the window's rows, each once, adjacent
// ones coalesced into one request, all requests in flight together; then
// use gets every row's bytes (valid during the call only).
func (s *Disk) readSorted(ctx context.Context, sc *diskScratch, keys []uint64, use func(key uint64, b []byte)) error {
	rowB := int64(s.rowB)
	for start := 0; start < len(keys); {
		pg, refs := sc.pages[:0], sc.refs[:0]
		end := start
		for ; end < len(keys); end++ {
			if end > start && keys[end]>>32 == keys[end-1]>>32 {
				refs = append(refs, rowRef{key: keys[end], at: refs[len(refs)-1].at}) // a repeated id
				continue
			}
			a := s.base + int64(keys[end]>>32)*rowB
			p0, p1 := a/pageSize, (a+rowB-1)/pageSize
			last := int64(-1)
			if len(pg) > 0 {
				last = pg[len(pg)-1]
			}
			from := max(p0, last+1)
			if len(pg)+int(p1-from+1) > windowPages && end > start {
				break
			}
			// Rows come in file order, so p0 is either the last page added
			// (shared with the previous row) or the next one.
			at := len(pg)
			if p0 == last {
				at--
			}
			for p := from; p <= p1; p++ {
				pg = append(pg, p)
			}
			refs = append(refs, rowRef{key: keys[end], at: at*pageSize + int(a-p0*pageSize)})
		}
		need := len(pg) * pageSize
		if len(sc.buf) < need {
			sc.buf = diskio.AlignedBuf(max(need, min(2*len(sc.buf), windowPages*pageSize)))
		}
		buf := sc.buf[:need]
		reqs := sc.reqs[:0]
		for j := 0; j < len(pg); {
			k := j + 1
			for k < len(pg) && pg[k] == pg[k-1]+1 && k-j < maxReqPages {
				k++
			}
			reqs = append(reqs, diskio.Req{Off: pg[j] * pageSize, Buf: buf[j*pageSize : k*pageSize]})
			j = k
		}
		t := time.Now()
		err := s.rd.ReadBatch(ctx, reqs)
		s.readNanos.Add(int64(time.Since(t)))
		if err != nil {
			return err
		}
		var n int64
		for _, r := range reqs {
			n += int64(r.N)
		}
		s.reads.Add(int64(len(reqs)))
		s.pages.Add(int64(len(pg)))
		s.readBytes.Add(n)
		for _, r := range refs {
			use(r.key, buf[r.at:r.at+s.rowB])
		}
		sc.pages, sc.refs, sc.reqs = pg, refs, reqs
		start = end
	}
	return nil
}
