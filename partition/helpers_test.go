package partition

import (
	"context"

	"github.com/graphmill/graphmill/graph"
)

func graphBuildDirected(n int, src, dst []int32) (*graph.CSC, error) {
	return graph.Build(context.Background(), n, src, dst, nil, graph.BuildOptions{})
}
