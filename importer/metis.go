package importer

import (
	"fmt"
	"io"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/graph"
)

// METIS reads a graph in the METIS format (also used by Chaco, KaHIP and
// the DIMACS10 archive) from path, decompressing gzip or bzip2 files.
//
// The first non-comment line is "n m [fmt [ncon]]"; then line i (1-based)
// lists the 1-based neighbours of vertex i, preceded by a vertex size if
// fmt's hundreds digit is 1 and ncon vertex weights if its tens digit is 1,
// each neighbour followed by an edge weight if its units digit is 1. Lines
// starting with '%' are comments; an empty line is a vertex without
// neighbours. The lists must hold exactly 2m entries (every undirected
// edge appears in both endpoint lines), ids must be in 1..n and a vertex
// may not list itself.
//
// Every adjacency entry becomes one edge of the Raw (2m edges, ids
// 0-based). Vertex sizes and weights are checked but not kept; edge
// weights become EdgeWeights. Build is {Symmetrize, Dedup}, so the graph
// is undirected even if a file lists an edge in one direction only.
func METIS(path string) (*dataset.Raw, error) {
	f, err := openText(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := ReadMETIS(f, path)
	if err != nil {
		return nil, err
	}
	r.Name = baseName(path)
	return r, nil
}

// ReadMETIS is METIS reading an uncompressed stream; name is used in
// errors and as Raw.Source.
func ReadMETIS(rd io.Reader, name string) (*dataset.Raw, error) {
	lr := newLineReader(rd)
	// Header.
	var header []byte
	for {
		line, err := lr.next()
		if err == io.EOF {
			return nil, fmt.Errorf("%s: no header line \"n m [fmt [ncon]]\"", name)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", name, lr.line+1, err)
		}
		if lr.line == 1 {
			line = trimBOM(line)
		}
		if i := skipSpace(line, 0); i < len(line) && line[i] != '%' {
			header = line
			break
		}
	}
	var hdr [4]int64
	nh := 0
	for i := skipSpace(header, 0); i < len(header); i = skipSpace(header, i) {
		if nh == 4 {
			return nil, fmt.Errorf("%s: line %d: header %s has more than 4 fields", name, lr.line, quote(header))
		}
		v, j, err := parseUint(header, i)
		if err == nil && j < len(header) && !isSpace(header[j]) {
			err = errNotInt
		}
		if err != nil {
			return nil, fmt.Errorf("%s: line %d: header %s: %w", name, lr.line, quote(header), err)
		}
		hdr[nh] = v
		nh++
		i = j
	}
	if nh < 2 {
		return nil, fmt.Errorf("%s: line %d: header %s: want \"n m [fmt [ncon]]\"", name, lr.line, quote(header))
	}
	n, m, format := hdr[0], hdr[1], hdr[2]
	if n > maxNodes {
		return nil, fmt.Errorf("%s: header: %d vertices, more than %d", name, n, maxNodes)
	}
	if m > (1<<62)/2 || 2*m > 1<<40 {
		return nil, fmt.Errorf("%s: header: edge count %d too large", name, m)
	}
	if format > 111 || format%10 > 1 || format/10%10 > 1 {
		return nil, fmt.Errorf("%s: header: fmt %d not understood (want digits 0/1, e.g. 1, 11, 111)", name, format)
	}
	hasSize, hasVW, hasEW := format/100 == 1, format/10%10 == 1, format%10 == 1
	ncon := int64(0)
	if hasVW {
		ncon = 1
		if nh == 4 {
			ncon = hdr[3]
		}
		if ncon < 1 || ncon > 1<<20 {
			return nil, fmt.Errorf("%s: header: ncon %d out of range", name, ncon)
		}
	} else if nh == 4 && hdr[3] != 0 {
		return nil, fmt.Errorf("%s: header: ncon %d given but fmt %d has no vertex weights", name, hdr[3], format)
	}
	lead := ncon // numbers before the adjacency pairs
	if hasSize {
		lead++
	}
	want := 2 * m
	// Preallocate for the announced size, but not beyond what the input
	// could hold (a hostile header must not exhaust memory).
	capHint := min(want, 1<<24)
	r := &dataset.Raw{
		Source:   name,
		NumNodes: int(n),
		Src:      make([]int32, 0, capHint),
		Dst:      make([]int32, 0, capHint),
		Build:    graph.BuildOptions{Symmetrize: true, Dedup: true, SelfLoops: graph.KeepSelfLoops},
	}
	if hasEW {
		r.EdgeWeights = make([]float32, 0, capHint)
	}
	var vertex int64 // vertices read so far
	for {
		line, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", name, lr.line+1, err)
		}
		if len(line) > 0 && line[0] == '%' {
			continue
		}
		if vertex == n {
			if skipSpace(line, 0) != len(line) {
				return nil, fmt.Errorf("%s: line %d: data after the %d vertex lines: %s", name, lr.line, n, quote(line))
			}
			continue
		}
		u := int32(vertex)
		vertex++
		k := int64(0) // numbers on this line
		for i := skipSpace(line, 0); i < len(line); i = skipSpace(line, i) {
			v, j, err := parseUint(line, i)
			if err == nil && j < len(line) && !isSpace(line[j]) {
				err = errNotInt
			}
			if err != nil {
				return nil, fmt.Errorf("%s: line %d (vertex %d): %s: %w", name, lr.line, vertex, quote(line[i:tokenEnd(line, i)]), err)
			}
			i = j
			switch {
			case k < lead:
				// A vertex size or weight: parsed (non-negative) and dropped.
			case !hasEW || (k-lead)%2 == 0:
				if v < 1 || v > n {
					return nil, fmt.Errorf("%s: line %d (vertex %d): neighbour %d out of range [1,%d]", name, lr.line, vertex, v, n)
				}
				if v == vertex {
					return nil, fmt.Errorf("%s: line %d: vertex %d lists itself (self-loops are not allowed in METIS files)", name, lr.line, vertex)
				}
				if int64(len(r.Src)) == want {
					return nil, fmt.Errorf("%s: line %d (vertex %d): more than 2m = %d adjacency entries (header m = %d)", name, lr.line, vertex, want, m)
				}
				r.Src = append(r.Src, u)
				r.Dst = append(r.Dst, int32(v-1))
			default:
				if v > 1<<24 {
					return nil, fmt.Errorf("%s: line %d (vertex %d): edge weight %d too large for float32", name, lr.line, vertex, v)
				}
				r.EdgeWeights = append(r.EdgeWeights, float32(v))
			}
			k++
		}
		if k < lead {
			return nil, fmt.Errorf("%s: line %d (vertex %d): %d numbers, want at least %d vertex size/weights", name, lr.line, vertex, k, lead)
		}
		if hasEW && (k-lead)%2 != 0 {
			return nil, fmt.Errorf("%s: line %d (vertex %d): neighbour without edge weight", name, lr.line, vertex)
		}
	}
	if vertex < n {
		hint := ""
		if lead > 0 {
			hint = fmt.Sprintf(" (fmt %03d: every vertex line starts with %d vertex size/weight number(s); a line without them has its first neighbours read as weights)", format, lead)
		}
		return nil, fmt.Errorf("%s: truncated: %d vertex lines, header says n = %d%s", name, vertex, n, hint)
	}
	if int64(len(r.Src)) != want {
		return nil, fmt.Errorf("%s: %d adjacency entries, but header m = %d needs 2m = %d", name, len(r.Src), m, want)
	}
	if err := validate(r); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return r, nil
}
