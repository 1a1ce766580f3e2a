package dataset

import "github.com/graphmill/graphmill/graph"

// Raw is a whole dataset held in memory, as importers produce it before it
// is written in the native format by Write. Node ids are 0..NumNodes-1.
type Raw struct {
	// Name is the dataset's name, stored in meta.json.
	Name string
	// Source describes where the data came from (a path or a generator).
	Source string
	// NumNodes is the number of nodes.
	NumNodes int
	// Src and Dst hold the edges as they appear in the source (edge i goes
	// from Src[i] to Dst[i]). Build options decide symmetrization etc.
	Src, Dst []int32
	// EdgeWeights holds one weight per input edge, or nil.
	EdgeWeights []float32
	// Build is how the importer recommends turning the edges into a graph
	// (e.g. Planetoid: symmetrize, dedup, remove self-loops, as PyG does).
	Build graph.BuildOptions
	// Features holds NumNodes*FeatureDim float32 values, row-major, or nil.
	Features []float32
	// FeatureDim is the number of features per node (0 without features).
	FeatureDim int
	// Labels holds one class per node in 0..NumClasses-1, or -1 for
	// unlabelled nodes; nil without labels.
	Labels []int32
	// NumClasses is the number of classes (0 without labels).
	NumClasses int
	// Train, Val and Test hold node ids of the splits, each sorted or in
	// the source's order; nil when the dataset has no split.
	Train, Val, Test []int32
}
