package sample

import (
	"testing"

	"github.com/graphmill/graphmill/internal/membench"

	"github.com/graphmill/graphmill/internal/rng"
)

// BenchmarkRelabel compares the partitioned hash relabelling with the
// generation-stamped dense array on 540k random ids of a 10M-node graph
// (the size of the last hop of fanouts 15,10,5 with batch 1024).
func BenchmarkRelabel(b *testing.B) {
	r := rng.New(1)
	src := make([]int32, 540000)
	for i := range src {
		src[i] = int32(r.IntN(10_000_000))
	}
	idx := make([]int32, len(src))
	nodes := make([]int32, 0, 1<<21)
	for _, mode := range []string{"hash", "dense"} {
		b.Run(mode, func(b *testing.B) {
			var m idMap
			var d denseMap
			res := membench.Work(1, func(int) int64 {
				for i := 0; i < b.N; i++ {
					copy(idx, src)
					switch mode {
					case "hash":
						nodes = m.relabel(idx, nodes[:0])
					case "dense":
						d.begin(10_000_000)
						nodes = d.relabel(idx, nodes[:0])
					}
				}
				return int64(b.N * len(idx))
			})
			b.ReportMetric(1e9/res.CPUPerSec, "cpu-ns/id")
		})
	}
}
