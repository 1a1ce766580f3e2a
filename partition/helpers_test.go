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

// cutOf returns the edge cut of where on level l, from the lists: the
// oracle the refiner's running cut is checked against.
func cutOf(l *level, where []int32) int64 {
	c := int64(0)
	for v := 0; v < l.n; v++ {
		for j := l.xadj[v]; j < l.xadj[v+1]; j++ {
			if where[l.adj[j]] != where[v] {
				c += int64(l.ewAt(j))
			}
		}
	}
	return c / 2
}
