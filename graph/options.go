package graph

// SelfLoopPolicy says what the builder does with edges from a node to itself.
type SelfLoopPolicy int

const (
	// KeepSelfLoops leaves self-loops in the input as they are.
	KeepSelfLoops SelfLoopPolicy = iota
	// RemoveSelfLoops drops every self-loop of the input.
	RemoveSelfLoops
	// AddSelfLoops makes every node have exactly one self-loop (existing
	// self-loops are replaced, so the result never holds two).
	AddSelfLoops
)

// String returns "keep", "remove" or "add".
func (p SelfLoopPolicy) String() string {
	switch p {
	case KeepSelfLoops:
		return "keep"
	case RemoveSelfLoops:
		return "remove"
	case AddSelfLoops:
		return "add"
	}
	return "unknown"
}

// BuildOptions controls how Build turns an edge list into a CSC graph.
type BuildOptions struct {
	// Symmetrize adds the reverse of every edge, so the graph is undirected
	// (a self-loop is its own reverse: it is not added twice).
	Symmetrize bool
	// Dedup removes repeated (src, dst) pairs after symmetrization, keeping
	// the first occurrence (and its weight).
	Dedup bool
	// SelfLoops is the self-loop policy; the zero value keeps them.
	SelfLoops SelfLoopPolicy
	// EdgeIDs stores, for each CSC position, the index of the edge in the
	// input list (reverse edges added by Symmetrize get id i+len(input),
	// added self-loops get -1).
	EdgeIDs bool
	// Workers bounds the goroutines used; 0 means runtime.GOMAXPROCS(0).
	Workers int
}
