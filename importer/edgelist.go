package importer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"unsafe"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/graph"
)

// Relabel says whether EdgeList renumbers node ids.
type Relabel int

const (
	// RelabelAuto keeps the ids when the largest id is below 2^31-1 and at
	// least half of the ids 0..max occur in the file; otherwise it
	// relabels (a sparse id space would create millions of isolated nodes).
	RelabelAuto Relabel = iota
	// RelabelNever keeps the ids: node v of the file is node v of the
	// graph, and NumNodes is max id + 1. Ids of 2^31-1 or more are an error.
	RelabelNever
	// RelabelAlways maps the distinct ids, in increasing order, to
	// 0..n-1.
	RelabelAlways
)

// EdgeListOptions controls EdgeList and ReadEdgeList.
type EdgeListOptions struct {
	// Relabel chooses whether node ids are kept or renumbered densely.
	Relabel Relabel
	// NumNodes, if positive, is the node count, so that nodes without
	// edges after the largest id exist. With RelabelAuto it keeps the ids
	// (a count given is an id space), and with RelabelNever too, every id
	// must be below it; with RelabelAlways it pads the renumbered nodes.
	NumNodes int
	// Build is copied to Raw.Build. The zero value builds the graph from
	// the edges as listed; set Symmetrize for a list of undirected edges
	// given in one direction.
	Build graph.BuildOptions
	// Name is stored in Raw.Name (default: the file name).
	Name string
}

// EdgeListInfo reports what ReadEdgeList found.
type EdgeListInfo struct {
	// Edges is the number of edge lines; Comments the number of comment
	// and blank lines.
	Edges, Comments int
	// MaxID is the largest node id in the file (-1 without edges).
	MaxID int64
	// Distinct is the number of distinct node ids seen (0 when not
	// computed, as with RelabelNever).
	Distinct int
	// Relabelled says whether ids were renumbered; then OrigIDs[v] is the
	// file's id of node v (nodes after them, which NumNodes added, have
	// none).
	Relabelled bool
	OrigIDs    []int64
	// Weighted says whether the lines carry a third (weight) column.
	Weighted bool
}

// EdgeList reads a plain-text edge list from path: one edge per line, two
// non-negative integer node ids separated by spaces, tabs or a comma, and
// an optional third column with a float weight. Lines starting with '#' or
// '%' and blank lines are skipped, as is a '#' comment after the columns;
// gzip and bzip2 files are decompressed (detected from their magic bytes).
// Errors name the file and line.
//
// Ids are kept or relabelled as opts.Relabel says; the returned info
// reports which (with the original ids when relabelled) and the counts.
func EdgeList(path string, opts EdgeListOptions) (*dataset.Raw, *EdgeListInfo, error) {
	f, err := openText(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if opts.Name == "" {
		opts.Name = baseName(path)
	}
	return ReadEdgeList(f, path, opts)
}

// ReadEdgeList is EdgeList reading an uncompressed stream; name is used in
// errors and as Raw.Source. It also returns what it found, including the
// original ids when they were relabelled.
func ReadEdgeList(rd io.Reader, name string, opts EdgeListOptions) (*dataset.Raw, *EdgeListInfo, error) {
	if opts.NumNodes < 0 || opts.NumNodes > maxNodes {
		return nil, nil, fmt.Errorf("%s: NumNodes %d out of range", name, opts.NumNodes)
	}
	info := &EdgeListInfo{MaxID: -1}
	var edges edgeStore
	var weights []float32
	var maxID int64
	columns := 0 // 2 or 3 once the first edge line is seen
	lineNo := 0
	// slow parses one whole line of any form (comments, weights, errors).
	slow := func(line []byte) error {
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		if lineNo == 1 {
			line = trimBOM(line)
		}
		i := skipSpace(line, 0)
		if i == len(line) || line[i] == '#' || line[i] == '%' {
			info.Comments++
			return nil
		}
		u, i, err := parseUint(line, i)
		if err != nil {
			if lineNo == 1 && errors.Is(err, errNotInt) {
				return fmt.Errorf("source %s: %w (a header line? remove it, or comment it out with #)", quote(line), err)
			}
			return fmt.Errorf("source %s: %w", quote(line), err)
		}
		i, ok := skipSep(line, i)
		if !ok {
			return fmt.Errorf("want two node ids, got %s", quote(line))
		}
		v, i, err := parseUint(line, i)
		if err == nil && i < len(line) && !isSpace(line[i]) && line[i] != ',' {
			err = errNotInt
		}
		if err != nil {
			return fmt.Errorf("destination %s: %w", quote(line), err)
		}
		cols := 2
		var w float64
		if j, ok := skipSep(line, i); ok && j < len(line) && line[j] != '#' {
			end := tokenEnd(line, j)
			w, err = strconv.ParseFloat(unsafe.String(&line[j], end-j), 32)
			if err != nil || math.IsNaN(w) || math.IsInf(w, 0) {
				return fmt.Errorf("weight %q is not a finite number", line[j:end])
			}
			cols, i = 3, end
		}
		if j := skipSpace(line, i); j < len(line) && line[j] != '#' {
			if line[j] == ',' {
				j = skipSpace(line, j+1)
			}
			if j < len(line) {
				return fmt.Errorf("unexpected extra column in %s (want \"src dst [weight]\")", quote(line))
			}
		}
		if columns == 0 {
			columns = cols
		} else if cols != columns {
			return fmt.Errorf("%d columns, but earlier lines have %d", cols, columns)
		}
		edges.add(u, v)
		if cols == 3 {
			weights = append(weights, float32(w))
		}
		maxID = max(maxID, u, v)
		return nil
	}
	br := blockReader{r: rd}
	for {
		block, err := br.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: line %d: %w", name, lineNo+1, err)
		}
		// block holds whole lines, each ending in '\n'. The loop handles
		// the common "digits blank digits" line inline and hands anything
		// else to slow.
		for p := 0; p < len(block); {
			lineNo++
			q := p
			var u, v uint64
			for q < len(block) && block[q]-'0' <= 9 {
				u = u*10 + uint64(block[q]-'0')
				q++
			}
			nu := q - p
			q0 := q
			for block[q] == ' ' || block[q] == '\t' {
				q++
			}
			if block[q] == ',' && columns != 3 {
				q++
				for block[q] == ' ' || block[q] == '\t' {
					q++
				}
			}
			sep := q > q0
			q1 := q
			for q < len(block) && block[q]-'0' <= 9 {
				v = v*10 + uint64(block[q]-'0')
				q++
			}
			nv := q - q1
			for block[q] == ' ' || block[q] == '\t' || block[q] == '\r' {
				q++
			}
			if nu > 0 && nu <= 18 && sep && nv > 0 && nv <= 18 && block[q] == '\n' && columns != 3 && lineNo > 1 {
				columns = 2
				edges.add(int64(u), int64(v))
				maxID = max(maxID, int64(u), int64(v))
				p = q + 1
				continue
			}
			end := p + bytes.IndexByte(block[p:], '\n')
			if err := slow(block[p:end]); err != nil {
				return nil, nil, fmt.Errorf("%s: line %d: %w", name, lineNo, err)
			}
			p = end + 1
		}
	}
	if edges.n > 0 {
		info.MaxID = maxID
	}
	info.Edges = edges.n
	info.Weighted = columns == 3
	r := &dataset.Raw{Name: opts.Name, Source: name, Build: opts.Build}
	if info.Weighted {
		r.EdgeWeights = weights
	}
	if err := relabelEdges(r, &edges, info, opts); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := validate(r); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return r, info, nil
}

// blockReader returns a stream in blocks of whole lines, each block ending
// in '\n' (one is added after a last line without it).
type blockReader struct {
	r          io.Reader
	buf        []byte
	start, end int // unreturned data
	eof        bool
}

func (b *blockReader) next() ([]byte, error) {
	if b.buf == nil {
		b.buf = make([]byte, readBufSize)
	}
	for {
		if i := bytes.LastIndexByte(b.buf[b.start:b.end], '\n'); i >= 0 {
			blk := b.buf[b.start : b.start+i+1]
			b.start += i + 1
			return blk, nil
		}
		if b.eof {
			if b.start == b.end {
				return nil, io.EOF
			}
			// Last line without '\n'.
			if b.end == len(b.buf) {
				b.buf = append(b.buf, 0)
			}
			b.buf[b.end] = '\n'
			b.end++
			continue
		}
		// Move the partial line to the front; grow for very long lines.
		n := copy(b.buf, b.buf[b.start:b.end])
		b.start, b.end = 0, n
		if n == len(b.buf) {
			b.buf = append(b.buf, make([]byte, len(b.buf))...)
		}
		m, err := b.r.Read(b.buf[b.end:])
		b.end += m
		if err == io.EOF {
			b.eof = true
		} else if err != nil {
			return nil, err
		}
	}
}

// skipSep skips the separator between two columns: blanks with at most
// one comma. ok is false when there is no separator.
func skipSep(b []byte, i int) (int, bool) {
	j := skipSpace(b, i)
	if j < len(b) && b[j] == ',' {
		j = skipSpace(b, j+1)
	}
	return j, j > i && j < len(b)
}

// relabelEdges fills r.NumNodes, r.Src and r.Dst from the int64 ids.
func relabelEdges(r *dataset.Raw, edges *edgeStore, info *EdgeListInfo, opts EdgeListOptions) error {
	// A node count given keeps the ids: renumbering them would move an
	// edge "0 99" of 100 nodes onto node 1, or one "0 5" of 3 nodes into
	// range.
	keep := opts.Relabel == RelabelNever || opts.Relabel == RelabelAuto && opts.NumNodes > 0
	if opts.Relabel == RelabelAuto && !keep && info.MaxID < maxNodes-1 {
		span := info.MaxID + 1
		// Count distinct ids with a bitmap when it is small.
		if span <= 64*int64(edges.n)+64 {
			seen := make([]uint64, (span+63)/64)
			// Ids are below 2^31-1 here, so the blocks are int32.
			for _, b := range edges.blocks32() {
				for _, v := range b {
					seen[v>>6] |= 1 << (v & 63)
				}
			}
			d := 0
			for _, w := range seen {
				d += bits.OnesCount64(w)
			}
			info.Distinct = d
			keep = 2*int64(d) >= span
		}
	}
	if keep {
		if info.MaxID >= maxNodes-1 {
			return fmt.Errorf("node id %d too large to keep (max %d); relabel the ids", info.MaxID, maxNodes-2)
		}
		n := int(info.MaxID + 1)
		if opts.NumNodes > 0 {
			if n > opts.NumNodes {
				return fmt.Errorf("node id %d is out of range: the node count given (--num-nodes) is %d, so ids are 0..%d", info.MaxID, opts.NumNodes, opts.NumNodes-1)
			}
			n = opts.NumNodes
		}
		r.NumNodes = n
		r.Src, r.Dst = edges.split(nil)
		return nil
	}
	ids := make([]int64, 0, 2*edges.n)
	edges.ids(func(v int64) { ids = append(ids, v) })
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if len(ids) >= maxNodes {
		return fmt.Errorf("%d distinct node ids, more than %d", len(ids), maxNodes-1)
	}
	info.Distinct = len(ids)
	info.Relabelled = true
	info.OrigIDs = slices.Clip(ids)
	r.NumNodes = len(ids)
	if opts.NumNodes > len(ids) {
		r.NumNodes = opts.NumNodes
	} else if opts.NumNodes > 0 && opts.NumNodes < len(ids) {
		return fmt.Errorf("%d distinct node ids, more than the node count given (--num-nodes) of %d", len(ids), opts.NumNodes)
	}
	lookup := func(v int64) int32 {
		k, _ := slices.BinarySearch(ids, v)
		return int32(k)
	}
	r.Src, r.Dst = edges.split(lookup)
	return nil
}

// edgeStore is an append-only list of (src, dst) pairs stored in
// fixed-size blocks, so that growing it never copies what was already
// parsed. It stores int32 pairs until an id needs more bits, then switches
// to int64.
type edgeStore struct {
	cur    []int32   // block being filled (int32 mode)
	full32 [][]int32 // filled blocks (int32 mode)
	wide   [][]int64 // all blocks once an id exceeded int32
	n      int
}

const chunkSize = 1 << 17 // ids per block

func (e *edgeStore) add(u, v int64) {
	e.n++
	if uint64(u|v) <= math.MaxInt32 && e.wide == nil {
		if len(e.cur) == cap(e.cur) {
			if e.cur != nil {
				e.full32 = append(e.full32, e.cur)
			}
			e.cur = make([]int32, 0, chunkSize)
		}
		e.cur = append(e.cur, int32(u), int32(v))
		return
	}
	if e.wide == nil {
		e.widen()
	}
	last := &e.wide[len(e.wide)-1]
	if len(*last) == cap(*last) {
		e.wide = append(e.wide, make([]int64, 0, chunkSize))
		last = &e.wide[len(e.wide)-1]
	}
	*last = append(*last, u, v)
}

func (e *edgeStore) blocks32() [][]int32 {
	if e.cur == nil {
		return e.full32
	}
	return append(e.full32[:len(e.full32):len(e.full32)], e.cur)
}

func (e *edgeStore) widen() {
	for _, b := range e.blocks32() {
		w := make([]int64, len(b), chunkSize)
		for i, v := range b {
			w[i] = int64(v)
		}
		e.wide = append(e.wide, w)
	}
	if e.wide == nil {
		e.wide = [][]int64{make([]int64, 0, chunkSize)}
	}
	e.cur, e.full32 = nil, nil
}

// ids calls f with every id, sources and destinations alike.
func (e *edgeStore) ids(f func(int64)) {
	for _, b := range e.blocks32() {
		for _, v := range b {
			f(int64(v))
		}
	}
	for _, b := range e.wide {
		for _, v := range b {
			f(v)
		}
	}
}

// split returns the sources and destinations mapped through f (nil: the
// ids as they are, which the caller checked fit in int32).
func (e *edgeStore) split(f func(int64) int32) (src, dst []int32) {
	src, dst = make([]int32, 0, e.n), make([]int32, 0, e.n)
	if f == nil {
		for _, b := range e.blocks32() {
			for i := 0; i+1 < len(b); i += 2 {
				src = append(src, b[i])
				dst = append(dst, b[i+1])
			}
		}
		f = func(v int64) int32 { return int32(v) }
	} else {
		for _, b := range e.blocks32() {
			for i := 0; i+1 < len(b); i += 2 {
				src = append(src, f(int64(b[i])))
				dst = append(dst, f(int64(b[i+1])))
			}
		}
	}
	for _, b := range e.wide {
		for i := 0; i+1 < len(b); i += 2 {
			src = append(src, f(b[i]))
			dst = append(dst, f(b[i+1]))
		}
	}
	return src, dst
}
