// Package cora embeds the Cora citation graph (the Planetoid release,
// kimiyoung/planetoid, MIT License; see data/LICENSE-NOTE) as graphmill's
// native arrays, gzipped (about 120 KB), so that graphmill can train a
// model without downloading anything:
//
//	raw, err := cora.Raw()
//	if err != nil { ... }
//	// raw.NumNodes == 2708, raw.FeatureDim == 1433, raw.NumClasses == 7,
//	// with the standard 140/500/1000 split.
//
// The arrays are what the Planetoid importer makes of the original files
// (symmetrized, deduplicated, no self-loops, as PyG), generated once by
// gen.go ('go generate'); decoding them needs no importer, so the data
// path stays one way (importer -> dataset), and the importer's tests check
// that the embedded arrays still equal what it makes of the originals
// (kept in importer/testdata/planetoid).
package cora

//go:generate go run gen.go

import (
	"bytes"
	"compress/gzip"
	"embed"
	"fmt"
	"io"
	"slices"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/npy"
)

//go:embed data/*.npy.gz
var files embed.FS

// Name is the Planetoid name of the embedded dataset.
const Name = "cora"

// The embedded dataset's shape.
const (
	numNodes   = 2708
	featureDim = 1433
	numClasses = 7
)

// Raw decodes the embedded arrays and returns the dataset (2708 nodes,
// 1433 binary features, 7 classes, split 140/500/1000, Build = symmetrize,
// dedup, remove self-loops), a fresh value the caller may modify. Its
// edges are the stored graph's 10556 (each undirected edge in both
// directions, no duplicates), so writing it gives the Planetoid importer's
// dataset.
func Raw() (*dataset.Raw, error) {
	indptr, err := read[int64]("indptr", numNodes+1)
	if err != nil {
		return nil, err
	}
	indices, err := read[int32]("indices", -1)
	if err != nil {
		return nil, err
	}
	if indptr[0] != 0 || indptr[numNodes] != int64(len(indices)) {
		return nil, fmt.Errorf("cora: embedded indptr does not span the %d edges", len(indices))
	}
	r := &dataset.Raw{
		Name: Name, Source: "embedded:" + Name, NumNodes: numNodes,
		Build:      graph.BuildOptions{Symmetrize: true, Dedup: true, SelfLoops: graph.RemoveSelfLoops},
		FeatureDim: featureDim, NumClasses: numClasses,
		Src: make([]int32, 0, len(indices)), Dst: make([]int32, 0, len(indices)),
	}
	for v := range numNodes {
		lo, hi := indptr[v], indptr[v+1]
		if lo > hi {
			return nil, fmt.Errorf("cora: embedded indptr decreases at node %d", v)
		}
		for _, u := range indices[lo:hi] {
			if u < 0 || u >= numNodes {
				return nil, fmt.Errorf("cora: embedded edge %d->%d out of range", u, v)
			}
			r.Src = append(r.Src, u)
			r.Dst = append(r.Dst, int32(v))
		}
	}
	if r.Features, err = read[float32]("features", numNodes*featureDim); err != nil {
		return nil, err
	}
	if r.Labels, err = read[int32]("labels", numNodes); err != nil {
		return nil, err
	}
	for _, s := range []struct {
		name string
		dst  *[]int32
	}{{"train_idx", &r.Train}, {"val_idx", &r.Val}, {"test_idx", &r.Test}} {
		if *s.dst, err = read[int32](s.name, -1); err != nil {
			return nil, err
		}
		if slices.ContainsFunc(*s.dst, func(v int32) bool { return v < 0 || v >= numNodes }) {
			return nil, fmt.Errorf("cora: embedded %s holds a node outside [0, %d)", s.name, numNodes)
		}
	}
	return r, nil
}

// read decodes data/name.npy.gz, checking its dtype and (unless n < 0)
// its number of values.
func read[T npy.Elem](name string, n int) ([]T, error) {
	b, err := files.ReadFile("data/" + name + ".npy.gz")
	if err != nil {
		return nil, fmt.Errorf("cora: %w", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("cora: embedded %s: %w", name, err)
	}
	h, err := npy.ReadHeader(zr)
	if err != nil {
		return nil, fmt.Errorf("cora: embedded %s: %w", name, err)
	}
	if h.DType != npy.DTypeOf[T]() || (n >= 0 && h.Len() != int64(n)) {
		return nil, fmt.Errorf("cora: embedded %s holds %s %v, want %s of %d values", name, h.DType, h.Shape, npy.DTypeOf[T](), n)
	}
	out := make([]T, h.Len())
	if _, err := io.ReadFull(zr, npy.AsBytes(out)); err != nil {
		return nil, fmt.Errorf("cora: embedded %s: %w", name, err)
	}
	return out, nil
}
