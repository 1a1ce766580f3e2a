package dataset

import (
	"context"
	"slices"
	"sync"

	"github.com/graphmill/graphmill/internal/diskio"
	"github.com/graphmill/graphmill/npy"
)

// GraphReader reads into the page cache, with many reads in flight, the
// pages that sampling is about to touch in a graph larger than memory:
// nodes' offsets in indptr.npy and their in-neighbour lists in
// indices.npy. Sampling reads the graph through the file mappings, one
// page fault at a time per sampling thread; handed each hop's nodes a
// chunk at a time just before it reads them (sample.Config.Prefetch),
// the reader issues their pages at once instead (deduplicated, adjacent
// ones coalesced, those already in the page cache skipped), at the
// device's random-read rate. It reads through the page cache (no
// O_DIRECT): the pages are then where the mappings find them.
type GraphReader struct {
	d               *Dataset
	indptr, indices *diskio.Reader
	ipBase, ixBase  int64 // where the arrays' data start in their files
	maxPagesPerNode int64
	pool            sync.Pool // *graphScratch
	closeOnce       sync.Once
}

type graphScratch struct {
	pages []int64
	vec   []byte     // mincore's answer
	runs  [][2]int64 // first page, pages
	reqs  []diskio.Req
	buf   []byte
}

const (
	pageSize = 4096
	// maxRun caps a coalesced request (16 pages), and readGroup the
	// requests read per batch: at most 4 MiB of scratch per call.
	maxRun    = 16
	readGroup = 64
)

// OpenGraphReader opens the dataset's graph files for GraphReader's reads.
func (d *Dataset) OpenGraphReader() (*GraphReader, error) {
	ip, err := diskio.Open(d.indptr.Path, diskio.Options{})
	if err != nil {
		return nil, err
	}
	ix, err := diskio.Open(d.indices.Path, diskio.Options{})
	if err != nil {
		ip.Close()
		return nil, err
	}
	// A hub's whole list is not read ahead: sampling touches only the
	// fanout's positions in it.
	return &GraphReader{d: d, indptr: ip, indices: ix, ipBase: d.indptr.DataOffset, ixBase: d.indices.DataOffset, maxPagesPerNode: 8}, nil
}

// Close releases the files.
func (r *GraphReader) Close() error {
	var err error
	r.closeOnce.Do(func() {
		err = r.indptr.Close()
		if e := r.indices.Close(); err == nil {
			err = e
		}
	})
	return err
}

// Stats returns the reads done and bytes read since the reader opened.
func (r *GraphReader) Stats() diskio.Stats {
	a, b := r.indptr.Stats(), r.indices.Stats()
	return diskio.Stats{Reads: a.Reads + b.Reads, Bytes: a.Bytes + b.Bytes}
}

// Prefetch reads the pages of the given nodes' offsets, then those of
// their in-neighbour lists (of at most 8 pages a node), into the page
// cache. It is a hint: errors are dropped (sampling then faults the pages
// in itself). Safe for concurrent use.
func (r *GraphReader) Prefetch(nodes []int32) {
	sc, _ := r.pool.Get().(*graphScratch)
	if sc == nil {
		sc = &graphScratch{}
	}
	defer r.pool.Put(sc)
	g := r.d.Graph
	sc.pages = sc.pages[:0]
	for _, v := range nodes {
		a := r.ipBase + 8*int64(v)
		sc.pages = append(sc.pages, a/pageSize, (a+15)/pageSize)
	}
	if !r.read(sc, r.indptr, r.d.indptr) {
		return
	}
	sc.pages = sc.pages[:0]
	for _, v := range nodes {
		lo, hi := g.Indptr[v], g.Indptr[v+1]
		if hi <= lo {
			continue
		}
		p0, p1 := (r.ixBase+4*lo)/pageSize, (r.ixBase+4*hi-1)/pageSize
		if p1-p0 >= r.maxPagesPerNode {
			continue
		}
		for p := p0; p <= p1; p++ {
			sc.pages = append(sc.pages, p)
		}
	}
	r.read(sc, r.indices, r.d.indices)
}

// read reads sc.pages (sorted and deduplicated here, those already in the
// page cache dropped, adjacent ones coalesced) from f, the file of array
// a; false on an error.
func (r *GraphReader) read(sc *graphScratch, f *diskio.Reader, a *npy.Array) bool {
	slices.Sort(sc.pages)
	pages := slices.Compact(sc.pages)
	last := (f.Size() - 1) / pageSize
	pages = r.uncached(sc, pages, a, last)
	for len(pages) > 0 {
		sc.runs = sc.runs[:0]
		n := int64(0)
		for len(pages) > 0 && len(sc.runs) < readGroup {
			p, k := pages[0], int64(1)
			for int(k) < len(pages) && k < maxRun && pages[k] == p+k {
				k++
			}
			pages = pages[k:]
			if k = min(k, last-p+1); k > 0 {
				sc.runs = append(sc.runs, [2]int64{p, k})
				n += k
			}
		}
		if int64(cap(sc.buf)) < n*pageSize {
			sc.buf = make([]byte, n*pageSize)
		}
		sc.reqs = sc.reqs[:0]
		off := int64(0)
		for _, run := range sc.runs {
			b := run[1] * pageSize
			sc.reqs = append(sc.reqs, diskio.Req{Off: run[0] * pageSize, Buf: sc.buf[off : off+b]})
			off += b
		}
		if err := f.ReadBatch(context.Background(), sc.reqs); err != nil {
			return false
		}
	}
	return true
}

// uncached keeps, of the sorted pages (at most last), those the page cache
// lacks: one mincore call per span of pages a few apart.
func (r *GraphReader) uncached(sc *graphScratch, pages []int64, a *npy.Array, last int64) []int64 {
	out := pages[:0]
	for i := 0; i < len(pages); {
		j := i + 1
		for j < len(pages) && pages[j]-pages[j-1] <= 4 && pages[j]-pages[i] < 256 {
			j++
		}
		first, end := pages[i], min(pages[j-1], last)+1
		if end <= first {
			break
		}
		sc.vec = slices.Grow(sc.vec[:0], int(end-first))[:end-first]
		resident(a.Data, a.DataOffset, first, sc.vec)
		for _, p := range pages[i:j] {
			if p < end && sc.vec[p-first]&1 == 0 {
				out = append(out, p)
			}
		}
		i = j
	}
	return out
}
