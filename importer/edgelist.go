package importer

import (
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
	// NumNodes, if positive, is the node count when ids are kept (so that
	// trailing isolated nodes exist); ids must be below it.
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
	// computed: ids kept without relabelling and RelabelNever).
	Distinct int
	// Relabelled says whether ids were renumbered; then OrigIDs[v] is the
	// file's id of node v.
	Relabelled bool
	OrigIDs    []int64
	// Weighted says whether the lines carry a third (weight) column.
	Weighted bool
}

// EdgeList reads a plain-text edge list from path: one edge per line, two
// non-negative integer node ids separated by spaces, tabs or a comma, and
// an optional third column with a float weight. Lines starting with '#' or
// '%' and blank lines are skipped; gzip and bzip2 files are decompressed
// (detected from their magic bytes). Errors name the file and line.
func EdgeList(path string, opts EdgeListOptions) (*dataset.Raw, error) {
	f, err := openText(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if opts.Name == "" {
		opts.Name = baseName(path)
	}
	r, _, err := ReadEdgeList(f, path, opts)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// ReadEdgeList is EdgeList reading an uncompressed stream; name is used in
// errors and as Raw.Source. It also returns what it found, including the
// original ids when they were relabelled.
func ReadEdgeList(rd io.Reader, name string, opts EdgeListOptions) (*dataset.Raw, *EdgeListInfo, error) {
	if opts.NumNodes < 0 || opts.NumNodes > maxNodes {
		return nil, nil, fmt.Errorf("%s: NumNodes %d out of range", name, opts.NumNodes)
	}
	lr := newLineReader(rd)
	info := &EdgeListInfo{MaxID: -1}
	var src, dst chunked
	var weights []float32
	columns := 0
	for {
		line, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: line %d: %w", name, lr.line+1, err)
		}
		if lr.line == 1 {
			line = trimBOM(line)
		}
		i := skipSpace(line, 0)
		if i == len(line) || line[i] == '#' || line[i] == '%' {
			info.Comments++
			continue
		}
		u, i, err := parseUint(line, i)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: line %d: source %s: %w", name, lr.line, quote(line), err)
		}
		i, ok := skipSep(line, i)
		if !ok {
			return nil, nil, fmt.Errorf("%s: line %d: want two node ids, got %s", name, lr.line, quote(line))
		}
		v, i, err := parseUint(line, i)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: line %d: destination %s: %w", name, lr.line, quote(line), err)
		}
		cols := 2
		var w float64
		if j, ok := skipSep(line, i); ok && j < len(line) && line[j] != '#' {
			end := tokenEnd(line, j)
			w, err = strconv.ParseFloat(unsafe.String(&line[j], end-j), 32)
			if err != nil || math.IsNaN(w) || math.IsInf(w, 0) {
				return nil, nil, fmt.Errorf("%s: line %d: weight %q is not a finite number", name, lr.line, line[j:end])
			}
			cols, i = 3, end
		}
		if j := skipSpace(line, i); j < len(line) && line[j] != '#' {
			if line[j] == ',' {
				j = skipSpace(line, j+1)
			}
			if j < len(line) {
				return nil, nil, fmt.Errorf("%s: line %d: unexpected extra column in %s (want \"src dst [weight]\")", name, lr.line, quote(line))
			}
		}
		if columns == 0 {
			columns = cols
		} else if cols != columns {
			return nil, nil, fmt.Errorf("%s: line %d: %d columns, but earlier lines have %d", name, lr.line, cols, columns)
		}
		src.add(u)
		dst.add(v)
		if cols == 3 {
			weights = append(weights, float32(w))
		}
		info.MaxID = max(info.MaxID, u, v)
	}
	info.Edges = src.n
	info.Weighted = columns == 3
	r := &dataset.Raw{Name: opts.Name, Source: name, Build: opts.Build}
	if info.Weighted {
		r.EdgeWeights = weights
	}
	if err := relabelEdges(r, &src, &dst, info, opts); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := validate(r); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return r, info, nil
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
func relabelEdges(r *dataset.Raw, src, dst *chunked, info *EdgeListInfo, opts EdgeListOptions) error {
	keep := opts.Relabel == RelabelNever
	if opts.Relabel == RelabelAuto && info.MaxID < maxNodes-1 {
		span := info.MaxID + 1
		if opts.NumNodes > 0 {
			span = max(span, int64(opts.NumNodes))
		}
		// Count distinct ids with a bitmap when it is small.
		if span <= 64*int64(src.n)+64 {
			seen := make([]uint64, (span+63)/64)
			// Ids are below 2^31-1 here, so the blocks are int32.
			for _, c := range []*chunked{src, dst} {
				for _, block := range c.blocks32 {
					for _, v := range block {
						seen[v>>6] |= 1 << (v & 63)
					}
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
				return fmt.Errorf("node id %d out of range [0,%d) given by NumNodes", info.MaxID, opts.NumNodes)
			}
			n = opts.NumNodes
		}
		r.NumNodes = n
		r.Src, r.Dst = src.narrow(), dst.narrow()
		return nil
	}
	ids := make([]int64, 0, src.n+dst.n)
	for _, c := range []*chunked{src, dst} {
		for _, block := range c.int64s() {
			ids = append(ids, block...)
		}
	}
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
	}
	lookup := func(v int64) int32 {
		k, _ := slices.BinarySearch(ids, v)
		return int32(k)
	}
	r.Src, r.Dst = src.mapped(lookup), dst.mapped(lookup)
	return nil
}

// chunked is an append-only id sequence stored in fixed-size blocks, so
// that growing it never copies what was already parsed. It stores int32
// until an id needs more bits, then switches to int64.
type chunked struct {
	blocks32 [][]int32
	blocks   [][]int64 // used once wide
	wide     bool
	n        int
}

const chunkSize = 1 << 16

func (c *chunked) add(v int64) {
	if v > math.MaxInt32 && !c.wide {
		c.widen()
	}
	if c.wide {
		if c.n%chunkSize == 0 {
			c.blocks = append(c.blocks, make([]int64, 0, chunkSize))
		}
		last := &c.blocks[len(c.blocks)-1]
		*last = append(*last, v)
	} else {
		if c.n%chunkSize == 0 {
			c.blocks32 = append(c.blocks32, make([]int32, 0, chunkSize))
		}
		last := &c.blocks32[len(c.blocks32)-1]
		*last = append(*last, int32(v))
	}
	c.n++
}

func (c *chunked) widen() {
	for _, b := range c.blocks32 {
		w := make([]int64, len(b), chunkSize)
		for i, v := range b {
			w[i] = int64(v)
		}
		c.blocks = append(c.blocks, w)
	}
	c.blocks32, c.wide = nil, true
}

// int64s returns the blocks as int64 values, widening them if needed.
func (c *chunked) int64s() [][]int64 {
	if !c.wide {
		c.widen()
	}
	return c.blocks
}

// narrow returns the values as int32 (the caller checked the range).
func (c *chunked) narrow() []int32 {
	out := make([]int32, 0, c.n)
	for _, b := range c.blocks32 {
		out = append(out, b...)
	}
	for _, b := range c.blocks {
		for _, v := range b {
			out = append(out, int32(v))
		}
	}
	return out
}

func (c *chunked) mapped(f func(int64) int32) []int32 {
	out := make([]int32, 0, c.n)
	for _, b := range c.int64s() {
		for _, v := range b {
			out = append(out, f(v))
		}
	}
	return out
}
