package partition

import (
	"context"

	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/npy"
)

func graphBuildDirected(n int, src, dst []int32) (*graph.CSC, error) {
	return graph.Build(context.Background(), n, src, dst, nil, graph.BuildOptions{})
}

func npyRead(path string) ([]int32, error) {
	a, _, err := npy.ReadFile[int32](path)
	return a, err
}
