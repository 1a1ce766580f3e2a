// Package dataset is graphmill's native on-disk dataset: a directory with
// one numpy .npy file per array plus a meta.json describing them.
//
//	cora/
//	  meta.json        name, counts, dtypes, shapes, format version
//	  indptr.npy       int64 [num_nodes+1]   CSC offsets (in-edges per node)
//	  indices.npy      int32 [num_edges]     source node of every in-edge
//	  edge_weight.npy  float32 [num_edges]   optional
//	  features.npy     float32 [num_nodes, feature_dim]  optional
//	  labels.npy       int32 [num_nodes]     class, or -1 if unlabelled; optional
//	  train_idx.npy, val_idx.npy, test_idx.npy   int32 node ids; optional
//	  orig_ids.npy     int32 [num_nodes]     packed datasets: every node's original id
//
// numpy.load(path, mmap_mode="r") opens every array unchanged. Open maps
// the arrays into memory without copying them, so a dataset of many
// gigabytes opens in milliseconds. Write and Writer produce a directory
// atomically: everything is written into a temporary sibling directory,
// fsynced and renamed into place, so a crash leaves either the previous
// dataset or the new one, never a mixture.
package dataset

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/graphmill/graphmill/npy"
)

// FormatName and FormatVersion identify the native format in meta.json.
const (
	FormatName    = "graphmill-dataset"
	FormatVersion = 1
)

// Array names of the native format.
const (
	ArrayIndptr     = "indptr"
	ArrayIndices    = "indices"
	ArrayEdgeWeight = "edge_weight"
	ArrayFeatures   = "features"
	ArrayLabels     = "labels"
	ArrayTrain      = "train_idx"
	ArrayVal        = "val_idx"
	ArrayTest       = "test_idx"
	// ArrayOrigIDs holds, in a packed dataset (Meta.Packed), the original
	// id of every node.
	ArrayOrigIDs = "orig_ids"
)

// ArrayMeta describes one stored array.
type ArrayMeta struct {
	File  string    `json:"file"`
	DType npy.DType `json:"dtype"`
	Shape []int     `json:"shape"`
	// Raw marks a file that holds the elements only, from byte Offset on,
	// with no .npy header (npy.OpenRaw): graphmill.NeighborLoader's
	// features in a PyTorch tensor's shared memory. Datasets graphmill
	// writes never use it.
	Raw    bool  `json:"raw,omitempty"`
	Offset int64 `json:"offset,omitempty"`
}

// Meta is the content of meta.json.
type Meta struct {
	Format        string `json:"format"`
	FormatVersion int    `json:"format_version"`
	Name          string `json:"name"`
	Source        string `json:"source,omitempty"`
	NumNodes      int    `json:"num_nodes"`
	NumEdges      int64  `json:"num_edges"`
	FeatureDim    int    `json:"feature_dim"`
	// FeatureDType is "float32" (default when empty), "float16" (stored
	// as numpy float16) or "bfloat16" (stored as uint16 bit patterns,
	// since numpy has no bfloat16).
	FeatureDType string `json:"feature_dtype,omitempty"`
	NumClasses   int    `json:"num_classes"`
	// Graph records how the stored graph was built from the source edges.
	Graph GraphMeta `json:"graph"`
	// Splits maps "train", "val", "test" to their sizes.
	Splits map[string]int `json:"splits"`
	// Arrays maps array names (ArrayIndptr, ...) to their files.
	Arrays map[string]ArrayMeta `json:"arrays"`
	// Packed is set when the nodes were renumbered for locality on disk
	// (graphmill data pack): node v of this dataset is node orig_ids[v] of
	// the dataset it was packed from, and every array, splits included,
	// is in the new order.
	Packed *PackMeta `json:"packed,omitempty"`
}

// PackMeta records how a packed dataset's nodes were ordered.
type PackMeta struct {
	// Method is the layout's ranking ("sample", "degree", "partition").
	Method string `json:"method"`
	// From is the directory of the dataset it was packed from.
	From string `json:"from,omitempty"`
}

// GraphMeta records the build options applied to the source edges.
type GraphMeta struct {
	Layout     string `json:"layout"` // always "csc": in-neighbours per node
	Symmetric  bool   `json:"symmetrized"`
	Dedup      bool   `json:"dedup"`
	SelfLoops  string `json:"self_loops"`
	HasWeights bool   `json:"has_weights"`
}

func readMeta(dir string) (Meta, error) {
	var m Meta
	p := filepath.Join(dir, "meta.json")
	b, err := os.ReadFile(p)
	if err != nil {
		if os.IsNotExist(err) {
			return m, fmt.Errorf("%s: not a graphmill dataset (no meta.json); import one with 'graphmill data import'", dir)
		}
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%s: %w", p, err)
	}
	if m.Format != FormatName {
		return m, fmt.Errorf("%s: format is %q, want %q", p, m.Format, FormatName)
	}
	if m.FormatVersion != FormatVersion {
		return m, fmt.Errorf("%s: format version %d is not supported (this graphmill reads version %d)", p, m.FormatVersion, FormatVersion)
	}
	if m.NumNodes < 0 || m.NumEdges < 0 || m.FeatureDim < 0 || m.NumClasses < 0 {
		return m, fmt.Errorf("%s: negative count", p)
	}
	return m, nil
}
