package tensor

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkAggregate measures Aggregate (forward) and AggregateGrad on a
// random block: 100k destinations with 10 in-edges each from 200k sources,
// 256 features. The custom metric "Gedgefeat/s" is edges×features per second
// (divide by the thread count for per-core figures).
func BenchmarkAggregate(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	const numDst, numSrc, deg, f = 100_000, 200_000, 10, 256
	g := &CSR{Indptr: make([]int64, numDst+1), Indices: make([]int32, numDst*deg), NumSrc: numSrc}
	for d := 0; d < numDst; d++ {
		g.Indptr[d+1] = int64((d + 1) * deg)
		for e := d * deg; e < (d+1)*deg; e++ {
			g.Indices[e] = int32(rng.IntN(numSrc))
		}
	}
	x := randMatrix(rng, numSrc, f)
	out := New(numDst, f)
	g.T()
	for _, th := range []int{1, 2} {
		for _, mode := range []Reduce{Sum, Mean} {
			b.Run(fmt.Sprintf("fwd/%v/f%d/t%d", mode, f, th), func(b *testing.B) {
				SetThreads(th)
				defer SetThreads(0)
				for b.Loop() {
					if err := Aggregate(out, g, x, mode); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(g.NumEdges())*f*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gedgefeat/s")
			})
		}
		b.Run(fmt.Sprintf("bwd/mean/f%d/t%d", f, th), func(b *testing.B) {
			SetThreads(th)
			defer SetThreads(0)
			for b.Loop() {
				if err := AggregateGrad(x, g, out, Mean); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(g.NumEdges())*f*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gedgefeat/s")
		})
	}
}
