// Package cora embeds the Cora citation graph in its original Planetoid
// files (kimiyoung/planetoid, MIT License; see data/LICENSE-NOTE), so that
// graphmill can train a model without downloading anything:
//
//	raw, err := cora.Raw()
//	if err != nil { ... }
//	// raw.NumNodes == 2708, raw.FeatureDim == 1433, raw.NumClasses == 7,
//	// with the standard 140/500/1000 split.
//
// The files are decoded by importer.PlanetoidFS on every call; the result
// is a fresh value the caller may modify.
package cora

import (
	"embed"
	"io/fs"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/importer"
)

//go:embed data/ind.cora.*
var files embed.FS

// Name is the Planetoid name of the embedded dataset.
const Name = "cora"

// FS returns the 8 embedded Planetoid files ind.cora.* at its root.
func FS() fs.FS {
	sub, err := fs.Sub(files, "data")
	if err != nil {
		panic(err) // "data" is a valid constant path
	}
	return sub
}

// Raw decodes the embedded files with the Planetoid importer and returns
// the dataset (2708 nodes, 1433 binary features, 7 classes, split
// 140/500/1000, Build = symmetrize, dedup, remove self-loops).
func Raw() (*dataset.Raw, error) {
	r, err := importer.PlanetoidFS(FS(), Name)
	if err != nil {
		return nil, err
	}
	r.Source = "embedded:" + Name
	return r, nil
}
