package tensor

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// TestAggregateRowKernelBitwise checks that the aggregation's row kernel
// (forward, and backward over the transpose, setting and adding) gives
// bitwise the results of one AVX2 axpy per edge in the same order, for
// every reduction, row widths it handles, on one thread and two, and
// after the transpose's weights were built for another reduction. For
// widths not a multiple of 8 the last values are a fused multiply-add
// each too (fma32), not axpy's separately rounded scalar tail.
func TestAggregateRowKernelBitwise(t *testing.T) {
	if !headKernels() {
		t.Skip("no AVX2 row kernel on this machine")
	}
	defer SetThreads(Threads())
	axpy := func(alpha float32, x, y []float32) {
		n := len(x) &^ 7
		ks().axpy(alpha, x[:n], y[:n])
		for i := n; i < len(x); i++ {
			y[i] = fma32(alpha, x[i], y[i])
		}
	}
	forEachKernel(t, func(t *testing.T) {
		if !headKernels() {
			t.Skip("the portable kernels have no row kernel")
		}
		aggregateRowKernelBitwise(t, axpy)
	})
}

// aggregateRowKernelBitwise is TestAggregateRowKernelBitwise with the
// current kernel set: widths of a vector or several, with a tail or only
// one, and (AVX-512) past the 256 columns its row kernel holds at once.
func aggregateRowKernelBitwise(t *testing.T, axpy func(alpha float32, x, y []float32)) {
	for _, cols := range []int{8, 16, 24, 64, 3, 12, 100, 31, 256, 257, 300, 517} {
		for _, threads := range []int{1, 2} {
			t.Run(fmt.Sprintf("cols%d_threads%d", cols, threads), func(t *testing.T) {
				SetThreads(threads)
				rng := rand.New(rand.NewPCG(uint64(cols), 1))
				g := randomCSR(rng, 300, 500, 9)
				x := randMatrix(rng, g.NumSrc, cols)
				dy := randMatrix(rng, g.NumDst(), cols)
				for _, mode := range []Reduce{Mean, Sum, Weighted, Mean} {
					got := New(g.NumDst(), cols)
					if err := Aggregate(got, g, x, mode); err != nil {
						t.Fatal(err)
					}
					want := New(g.NumDst(), cols)
					for d := 0; d < g.NumDst(); d++ {
						o := want.Row(d)
						for e := g.Indptr[d]; e < g.Indptr[d+1]; e++ {
							w := float32(1)
							if mode == Weighted {
								w = g.Weights[e]
							}
							axpy(w, x.Row(int(g.Indices[e])), o)
						}
						if n := g.Indptr[d+1] - g.Indptr[d]; mode == Mean && n > 0 {
							inv := 1 / float32(n)
							for j := range o {
								o[j] *= inv
							}
						}
					}
					bitwise(t, fmt.Sprintf("Aggregate(%v)", mode), got, want)
					tr := g.T()
					wantG := randMatrix(rng, g.NumSrc, cols)
					gotAdd := wantG.Clone()
					for s := 0; s < g.NumSrc; s++ {
						o := wantG.Row(s)
						for q := tr.Indptr[s]; q < tr.Indptr[s+1]; q++ {
							d := int(tr.Dst[q])
							axpy(g.edgeWeight(mode, d, tr.Edge[q]), dy.Row(d), o)
						}
					}
					if err := AggregateGrad(gotAdd, g, dy, mode); err != nil {
						t.Fatal(err)
					}
					bitwise(t, fmt.Sprintf("AggregateGrad(%v)", mode), gotAdd, wantG)
					gotSet := randMatrix(rng, g.NumSrc, cols)
					if err := AggregateGradSet(gotSet, g, dy, mode); err != nil {
						t.Fatal(err)
					}
					wantSet := New(g.NumSrc, cols)
					if err := aggregateGradRef(wantSet, g, dy, mode, axpy); err != nil {
						t.Fatal(err)
					}
					bitwise(t, fmt.Sprintf("AggregateGradSet(%v)", mode), gotSet, wantSet)
				}
			})
		}
	}
}

// fma32 is a·x + y rounded once to float32 (exact in big.Float first).
func fma32(a, x, y float32) float32 {
	p := new(big.Float).SetPrec(128).SetFloat64(float64(a))
	p.Mul(p, new(big.Float).SetFloat64(float64(x)))
	p.Add(p, new(big.Float).SetFloat64(float64(y)))
	f, _ := p.Float32()
	return f
}

func aggregateGradRef(dx Matrix, g *CSR, dy Matrix, mode Reduce, axpy func(float32, []float32, []float32)) error {
	tr := g.T()
	for s := 0; s < g.NumSrc; s++ {
		for q := tr.Indptr[s]; q < tr.Indptr[s+1]; q++ {
			d := int(tr.Dst[q])
			axpy(g.edgeWeight(mode, d, tr.Edge[q]), dy.Row(d), dx.Row(s))
		}
	}
	return nil
}

func bitwise(t *testing.T, what string, got, want Matrix) {
	t.Helper()
	for i, v := range want.Data {
		if math.Float32bits(got.Data[i]) != math.Float32bits(v) {
			t.Fatalf("%s: element %d is %v, want %v (bitwise)", what, i, got.Data[i], v)
		}
	}
}
