package parts

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// BookFormat and BookVersion identify a partitioned dataset's book.
// Version 2 added the global degrees of every local node (ArrayInDegrees,
// ArrayOutDegrees); version 1 datasets are refused with a request to
// partition again.
const (
	BookFormat  = "graphmill-partition"
	BookVersion = 2
	// BookFile is the name of the book inside a partitioned dataset.
	BookFile = "partition.json"
)

// Names of the arrays of a partitioned dataset (top level and per part).
const (
	// ArrayPartIDs (top level): int32 [num_nodes], the part of every
	// original node.
	ArrayPartIDs = "part_ids"
	// ArrayOrigIDs (top level): int32 [num_nodes], the original id of
	// every reordered node (the nodes of part p are reordered ids
	// node_range[p][0]..node_range[p][1]-1).
	ArrayOrigIDs = "orig_ids"
	// ArrayNewIDs (top level): int32 [num_nodes], the reordered id of
	// every original node (the inverse of orig_ids).
	ArrayNewIDs = "new_ids"
	// ArrayGlobalIDs (per part): int32 [num_local], the original id of
	// every local node, inner nodes first.
	ArrayGlobalIDs = "global_ids"
	// ArrayHaloParts (per part): int32 [num_halo], the part owning each
	// halo node (local id num_inner+i).
	ArrayHaloParts = "halo_parts"
	// ArrayHaloLocal (per part): int32 [num_halo], each halo node's local
	// id in its owning part.
	ArrayHaloLocal = "halo_local_ids"
	// ArrayInDegrees (per part, since version 2): int32 [num_local], the
	// in-degree of every local node (inner and halo) in the full graph:
	// its number of in-edges, not counting weights or an added self-loop.
	ArrayInDegrees = "in_degrees"
	// ArrayOutDegrees (per part, since version 2): int32 [num_local], the
	// out-degree of every local node in the full graph.
	ArrayOutDegrees = "out_degrees"
)

// Book is the content of partition.json, the index of a partitioned
// dataset.
type Book struct {
	Format        string `json:"format"`
	FormatVersion int    `json:"format_version"`
	// Name and Source describe the original dataset.
	Name   string `json:"name"`
	Source string `json:"source,omitempty"`
	// NumParts is K; NumNodes and NumEdges are the original dataset's.
	NumParts int   `json:"num_parts"`
	NumNodes int   `json:"num_nodes"`
	NumEdges int64 `json:"num_edges"`
	// Method, Imbalance, Balance and Seed record how the partition was made
	// (Method is the partitioner's name, e.g. "metis"; Balance lists the
	// balanced quantities: "nodes", "train", "edges").
	Method    string   `json:"method"`
	Imbalance float64  `json:"imbalance"`
	Balance   []string `json:"balance"`
	Seed      uint64   `json:"seed"`
	// VCycles is the partitioner's rounds of V-cycles as asked for
	// (partition.Options.VCycles; 0, omitted: its default by graph size).
	VCycles int `json:"vcycles,omitempty"`
	// Stats are the partition's statistics on the undirected graph.
	Stats Stats `json:"stats"`
	// Arrays maps ArrayPartIDs, ArrayOrigIDs and ArrayNewIDs to their
	// .npy files in the book's directory.
	Arrays map[string]string `json:"arrays"`
	// Parts describes every part.
	Parts []PartInfo `json:"parts"`
}

// Stats describes a partition: its edge cut and balance. The partitioner
// (package partition) computes them; the book records them.
type Stats struct {
	// EdgeCut is the number (total weight) of undirected edges whose ends
	// lie in different parts; CutFraction divides it by the edge count.
	EdgeCut     int64   `json:"edge_cut"`
	CutFraction float64 `json:"cut_fraction"`
	// PartSizes holds the node count of every part.
	PartSizes []int64 `json:"part_sizes"`
	// Imbalance is the largest part size divided by the average (1 is
	// perfect balance).
	Imbalance float64 `json:"imbalance"`
	// WeightImbalance holds the same ratio for every extra weight vector.
	WeightImbalance []float64 `json:"weight_imbalance,omitempty"`
	// EmptyParts counts parts without nodes.
	EmptyParts int `json:"empty_parts"`
}

// PartInfo describes one part of a partitioned dataset.
type PartInfo struct {
	// Dir is the part's sub-directory, a native dataset.
	Dir string `json:"dir"`
	// NodeRange is the half-open range of reordered ids the part owns.
	NodeRange [2]int64 `json:"node_range"`
	// NumInner is the number of owned nodes (local ids 0..NumInner-1, in
	// reordered id order); NumHalo the number of halo nodes after them.
	NumInner int `json:"num_inner"`
	NumHalo  int `json:"num_halo"`
	// NumEdges is the number of stored edges: every in-edge of the inner
	// nodes.
	NumEdges int64 `json:"num_edges"`
	// Train, Val and Test count the part's split nodes.
	Train int `json:"train"`
	Val   int `json:"val"`
	Test  int `json:"test"`
	// Arrays maps ArrayGlobalIDs, ArrayHaloParts, ArrayHaloLocal,
	// ArrayInDegrees and ArrayOutDegrees to their files in Dir (they are
	// also listed in the part's meta.json).
	Arrays map[string]string `json:"arrays"`
}

// ReadBook reads and checks the book of the partitioned dataset in dir.
func ReadBook(dir string) (*Book, error) {
	p := filepath.Join(dir, BookFile)
	b, err := os.ReadFile(p)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("%s: not a partitioned dataset (no %s); create one with 'graphmill partition'", dir, BookFile)
		}
		return nil, err
	}
	var book Book
	if err := json.Unmarshal(b, &book); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if book.Format != BookFormat {
		return nil, fmt.Errorf("%s: format is %q, want %q", p, book.Format, BookFormat)
	}
	if book.FormatVersion == 1 {
		return nil, fmt.Errorf("%s: format version 1 stores no global degrees (needed to normalise GCN/APPNP messages from halo nodes); partition the dataset again with this graphmill ('graphmill partition') to write version %d", p, BookVersion)
	}
	if book.FormatVersion != BookVersion {
		return nil, fmt.Errorf("%s: format version %d is not supported (this graphmill reads version %d)", p, book.FormatVersion, BookVersion)
	}
	if book.NumParts < 1 || len(book.Parts) != book.NumParts {
		return nil, fmt.Errorf("%s: %d parts listed, num_parts is %d", p, len(book.Parts), book.NumParts)
	}
	next := int64(0)
	for i, pi := range book.Parts {
		if pi.NodeRange[0] != next || pi.NodeRange[1] < pi.NodeRange[0] || int64(pi.NumInner) != pi.NodeRange[1]-pi.NodeRange[0] {
			return nil, fmt.Errorf("%s: part %d has node range %v and %d inner nodes, not contiguous from %d", p, i, pi.NodeRange, pi.NumInner, next)
		}
		if pi.NumHalo < 0 {
			return nil, fmt.Errorf("%s: part %d has %d halo nodes", p, i, pi.NumHalo)
		}
		if pi.Dir == "" || filepath.Base(pi.Dir) != pi.Dir || pi.Dir == "." || pi.Dir == ".." {
			return nil, fmt.Errorf("%s: part %d names directory %q outside the dataset", p, i, pi.Dir)
		}
		next = pi.NodeRange[1]
	}
	if next != int64(book.NumNodes) {
		return nil, fmt.Errorf("%s: node ranges cover %d nodes, num_nodes is %d", p, next, book.NumNodes)
	}
	return &book, nil
}

// PartOf returns the part owning the reordered id r, by binary search over
// the node ranges, or -1 if r is outside [0, NumNodes).
func (b *Book) PartOf(r int64) int {
	lo, hi := 0, len(b.Parts)
	for lo < hi {
		m := (lo + hi) / 2
		switch {
		case r < b.Parts[m].NodeRange[0]:
			hi = m
		case r >= b.Parts[m].NodeRange[1]:
			lo = m + 1
		default:
			return m
		}
	}
	return -1
}
