//go:build openblas

package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/graphmill/graphmill/tensor/openblas"
)

// TestGemmMatchesOpenBLAS cross-checks every kernel set against OpenBLAS on
// shapes large enough to cross every blocking boundary (run with
// "go test -tags openblas ./tensor/...").
func TestGemmMatchesOpenBLAS(t *testing.T) {
	shapes := []struct{ m, n, k int }{{600, 257, 602}, {1000, 16, 1433}, {37, 4200, 300}, {1111, 70, 129}}
	forEachKernel(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(4, 4))
		for _, s := range shapes {
			for _, tA := range []Op{NoTrans, Trans} {
				for _, tB := range []Op{NoTrans, Trans} {
					for _, th := range []int{1, 2} {
						ar, ac := shapeOf(tA, s.m, s.k)
						br, bc := shapeOf(tB, s.k, s.n)
						a, b := randMatrix(rng, ar, ac), randMatrix(rng, br, bc)
						c := randMatrix(rng, s.m, s.n)
						ref := c.Clone()
						name := fmt.Sprintf("%dx%dx%d/%s%s/t%d", s.m, s.n, s.k, tA, tB, th)
						if err := GemmThreads(th, tA, tB, 0.5, a, b, 2, c); err != nil {
							t.Fatal(err)
						}
						if err := openblas.Sgemm(th, tA == Trans, tB == Trans, s.m, s.n, s.k, 0.5, a.Data, a.Cols, b.Data, b.Cols, 2, ref.Data, ref.Cols); err != nil {
							t.Fatal(err)
						}
						tol := 2e-5 * math.Sqrt(float64(s.k))
						for i := range c.Data {
							if d := math.Abs(float64(c.Data[i] - ref.Data[i])); d > tol*(1+math.Abs(float64(ref.Data[i]))) {
								t.Fatalf("%s: C[%d,%d] = %v, OpenBLAS %v", name, i/s.n, i%s.n, c.Data[i], ref.Data[i])
							}
						}
					}
				}
			}
		}
	})
}
