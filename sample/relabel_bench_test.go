package sample

import (
	"fmt"
	"testing"

	"github.com/graphmill/graphmill/bench/membench"

	"github.com/graphmill/graphmill/internal/rng"
)

// BenchmarkRelabel compares the partitioned hash relabelling with the
// generation-stamped dense array on ids shaped like the last hop of fanouts
// 15,10,5 with batch 1024, on id spaces of 1M and 10M nodes: 108k previous
// nodes and 540k sampled sources, a quarter of them among the previous
// nodes.
func BenchmarkRelabel(b *testing.B) {
	for _, space := range []int{1_000_000, 10_000_000} {
		r := rng.New(1)
		seen := map[int32]bool{}
		prev := make([]int32, 0, 108000)
		for len(prev) < cap(prev) {
			u := int32(r.IntN(space))
			if !seen[u] {
				seen[u] = true
				prev = append(prev, u)
			}
		}
		src := make([]int32, 540000)
		for i := range src {
			if i%4 == 0 {
				src[i] = prev[r.IntN(len(prev))]
			} else {
				src[i] = int32(r.IntN(space))
			}
		}
		idx := make([]int32, len(src))
		nodes := make([]int32, 0, len(prev)+len(src))
		for _, mode := range []string{"hash", "dense"} {
			b.Run(fmt.Sprintf("nodes=%d/%s", space, mode), func(b *testing.B) {
				var m idMap
				var d denseMap
				res := membench.Work(1, func(int) int64 {
					for i := 0; i < b.N; i++ {
						copy(idx, src)
						nodes = append(nodes[:0], prev...)
						switch mode {
						case "hash":
							nodes = m.relabel(idx, nodes)
						case "dense":
							d.begin(space)
							d.insertSeeds(prev)
							nodes, _, _ = d.relabel(idx, nodes)
						}
					}
					return int64(b.N * len(idx))
				})
				b.ReportMetric(1e9/res.CPUPerSec, "cpu-ns/id")
			})
		}
	}
}
