package tensor

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkAggregate measures Aggregate (forward) and AggregateGrad on
// random blocks with 10 in-edges per destination and 256 features: "big"
// has 100k destinations over 200k sources (200 MB of source features, out
// of cache), "block" 2k destinations over 10k sources (a sampled minibatch
// block, 10 MB). The custom metric "Gedgefeat/s" is edges×features per
// second (divide by the thread count for per-core figures).
func BenchmarkAggregate(b *testing.B) {
	for _, sz := range []struct {
		name           string
		numDst, numSrc int
	}{{"big", 100_000, 200_000}, {"block", 2_000, 10_000}} {
		b.Run(sz.name, func(b *testing.B) { benchAggregate(b, sz.numDst, sz.numSrc) })
	}
}

func benchAggregate(b *testing.B, numDst, numSrc int) {
	rng := rand.New(rand.NewPCG(1, 2))
	const deg, f = 10, 256
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
