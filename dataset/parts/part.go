package parts

import (
	"fmt"
	"path/filepath"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/npy"
)

// Part is one opened part of a partitioned dataset: a native dataset over
// its local nodes (inner nodes first, then the halo) and the arrays that
// tie it to the whole graph.
type Part struct {
	// Dataset is the part's local dataset (memory-mapped): graph, features
	// of inner and halo nodes, labels and splits of inner nodes.
	*dataset.Dataset
	// Index is the part's number; Info its entry in the book.
	Index int
	Info  PartInfo
	// GlobalIDs holds the original id of every local node.
	GlobalIDs []int32
	// HaloParts and HaloLocal hold, for halo node num_inner+i, its owning
	// part and its local id there.
	HaloParts, HaloLocal []int32
	// InDegrees and OutDegrees hold every local node's degrees in the full
	// graph (a halo node's in-edges are not stored in this part, but its
	// in-degree is here, so GCN/APPNP normalisation is exact).
	InDegrees, OutDegrees []int32
}

// NumInner returns the number of nodes the part owns (local ids
// 0..NumInner()-1).
func (p *Part) NumInner() int { return p.Info.NumInner }

// NumLocal returns the number of local nodes, inner and halo.
func (p *Part) NumLocal() int { return p.Info.NumInner + p.Info.NumHalo }

// OpenPart opens part p of the partitioned dataset in dir, whose book is
// book (see ReadBook), and reads and checks its global ids, halo maps and
// global degrees. Close it when done.
func OpenPart(dir string, book *Book, p int) (_ *Part, err error) {
	if p < 0 || p >= book.NumParts {
		return nil, fmt.Errorf("parts: part %d outside [0, %d)", p, book.NumParts)
	}
	info := book.Parts[p]
	pd := filepath.Join(dir, info.Dir)
	d, err := dataset.Open(pd)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	nl := info.NumInner + info.NumHalo
	if d.Meta.NumNodes != nl {
		return nil, fmt.Errorf("%s: %d local nodes, the book says %d inner + %d halo", pd, d.Meta.NumNodes, info.NumInner, info.NumHalo)
	}
	part := &Part{Dataset: d, Index: p, Info: info}
	read := func(name string, n int, lo, hi int32) ([]int32, error) {
		file := name + ".npy"
		if f, ok := info.Arrays[name]; ok {
			file = f
		}
		if filepath.Base(file) != file {
			return nil, fmt.Errorf("%s: array %s names file %q outside the part", pd, name, file)
		}
		path := filepath.Join(pd, file)
		a, _, err := npy.ReadFile[int32](path)
		if err != nil {
			return nil, fmt.Errorf("array %s: %w", name, err)
		}
		if len(a) != n {
			return nil, fmt.Errorf("%s: %d values, want %d", path, len(a), n)
		}
		for i, v := range a {
			if v < lo || v >= hi {
				return nil, fmt.Errorf("%s: value %d at %d outside [%d, %d)", path, v, i, lo, hi)
			}
		}
		return a, nil
	}
	const maxID = 1<<31 - 1
	if part.GlobalIDs, err = read(ArrayGlobalIDs, nl, 0, int32(book.NumNodes)); err != nil {
		return nil, err
	}
	if part.HaloParts, err = read(ArrayHaloParts, info.NumHalo, 0, int32(book.NumParts)); err != nil {
		return nil, err
	}
	if part.HaloLocal, err = read(ArrayHaloLocal, info.NumHalo, 0, maxID); err != nil {
		return nil, err
	}
	for i, q := range part.HaloParts {
		if int(q) == p {
			return nil, fmt.Errorf("%s: halo node %d (global %d) is owned by its own part", pd, info.NumInner+i, part.GlobalIDs[info.NumInner+i])
		}
		if int(part.HaloLocal[i]) >= book.Parts[q].NumInner {
			return nil, fmt.Errorf("%s: halo node %d has local id %d in part %d, which owns %d nodes", pd, info.NumInner+i, part.HaloLocal[i], q, book.Parts[q].NumInner)
		}
	}
	if part.InDegrees, err = read(ArrayInDegrees, nl, 0, maxID); err != nil {
		return nil, err
	}
	if part.OutDegrees, err = read(ArrayOutDegrees, nl, 0, maxID); err != nil {
		return nil, err
	}
	// Every in-edge of an inner node is stored here, so its global
	// in-degree is its local one.
	g := d.Graph
	for v := 0; v < info.NumInner; v++ {
		if local := g.Indptr[v+1] - g.Indptr[v]; int64(part.InDegrees[v]) != local {
			return nil, fmt.Errorf("%s: inner node %d (global %d) has %d in-edges stored but in-degree %d", pd, v, part.GlobalIDs[v], local, part.InDegrees[v])
		}
	}
	return part, nil
}
