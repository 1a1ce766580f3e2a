package tensor

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// randomCSR returns a block with numDst destinations over numSrc sources and
// skewed degrees (including zero-degree destinations and repeated edges).
func randomCSR(rng *rand.Rand, numDst, numSrc, maxDeg int) *CSR {
	g := &CSR{Indptr: []int64{0}, NumSrc: numSrc}
	for d := 0; d < numDst; d++ {
		deg := rng.IntN(maxDeg + 1)
		if d%17 == 0 {
			deg = 0
		}
		if d%23 == 1 {
			deg = 5 * maxDeg
		}
		for range deg {
			g.Indices = append(g.Indices, int32(rng.IntN(numSrc)))
			g.Weights = append(g.Weights, rng.Float32())
		}
		g.Indptr = append(g.Indptr, int64(len(g.Indices)))
	}
	return g
}

// dense returns the NumDst×NumSrc matrix of the aggregation weights.
func dense(g *CSR, mode Reduce) [][]float64 {
	a := make([][]float64, g.NumDst())
	for d := range a {
		a[d] = make([]float64, g.NumSrc)
		for e := g.Indptr[d]; e < g.Indptr[d+1]; e++ {
			a[d][g.Indices[e]] += float64(g.edgeWeight(mode, d, e))
		}
	}
	return a
}

func TestAggregateMatchesDense(t *testing.T) {
	forEachKernel(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(8, 9))
		for _, sz := range []struct{ dst, src, deg, f int }{{1, 1, 1, 1}, {5, 9, 3, 7}, {300, 200, 12, 33}, {400, 500, 8, 40}} {
			g := randomCSR(rng, sz.dst, sz.src, sz.deg)
			if err := g.Validate(); err != nil {
				t.Fatal(err)
			}
			x := randMatrix(rng, sz.src, sz.f)
			dy := randMatrix(rng, sz.dst, sz.f)
			dx0 := randMatrix(rng, sz.src, sz.f) // gradients accumulate into this
			for _, mode := range []Reduce{Sum, Mean, Weighted} {
				a := dense(g, mode)
				wantOut := make([]float64, sz.dst*sz.f)
				wantDx := make([]float64, sz.src*sz.f)
				for d := 0; d < sz.dst; d++ {
					for s := 0; s < sz.src; s++ {
						if a[d][s] == 0 {
							continue
						}
						for j := 0; j < sz.f; j++ {
							wantOut[d*sz.f+j] += a[d][s] * float64(x.At(s, j))
							wantDx[s*sz.f+j] += a[d][s] * float64(dy.At(d, j))
						}
					}
				}
				for i := range wantDx {
					wantDx[i] += float64(dx0.Data[i])
				}
				for _, th := range []int{1, 2, 4} {
					name := fmt.Sprintf("%v/%d→%d/f%d/t%d", mode, sz.src, sz.dst, sz.f, th)
					SetThreads(th)
					out := randMatrix(rng, sz.dst, sz.f) // garbage to be overwritten
					if err := Aggregate(out, g, x, mode); err != nil {
						t.Fatal(err)
					}
					dx := dx0.Clone()
					if err := AggregateGrad(dx, g, dy, mode); err != nil {
						t.Fatal(err)
					}
					for i, w := range wantOut {
						if math.Abs(float64(out.Data[i])-w) > 1e-4*(1+math.Abs(w)) {
							t.Fatalf("%s: out[%d,%d] = %v, want %v", name, i/sz.f, i%sz.f, out.Data[i], w)
						}
					}
					for i, w := range wantDx {
						if math.Abs(float64(dx.Data[i])-w) > 1e-4*(1+math.Abs(w)) {
							t.Fatalf("%s: dx[%d,%d] = %v, want %v", name, i/sz.f, i%sz.f, dx.Data[i], w)
						}
					}
				}
			}
		}
		SetThreads(0)
	})
}

func TestGATAggregateMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 11))
	g := randomCSR(rng, 200, 150, 10)
	const heads, f = 3, 5
	h := randMatrix(rng, 150, heads*f)
	el, er := randMatrix(rng, 150, heads), randMatrix(rng, 200, heads)
	out := New(200, heads*f)
	alpha := make([]float32, g.NumEdges()*heads)
	SetThreads(3)
	defer SetThreads(0)
	if err := GATAggregate(out, alpha, g, h, el, er, heads, 0.2); err != nil {
		t.Fatal(err)
	}
	for d := 0; d < g.NumDst(); d++ {
		for k := 0; k < heads; k++ {
			e0, e1 := g.Indptr[d], g.Indptr[d+1]
			var z []float64
			var sum float64
			for e := e0; e < e1; e++ {
				v := float64(el.At(int(g.Indices[e]), k) + er.At(d, k))
				if v < 0 {
					v *= 0.2
				}
				z = append(z, math.Exp(v))
				sum += math.Exp(v)
			}
			for j := 0; j < f; j++ {
				var want float64
				for i, e := 0, e0; e < e1; i, e = i+1, e+1 {
					want += z[i] / sum * float64(h.At(int(g.Indices[e]), k*f+j))
				}
				if got := float64(out.At(d, k*f+j)); math.Abs(got-want) > 1e-5*(1+math.Abs(want)) {
					t.Fatalf("out[%d, head %d, %d] = %v, want %v", d, k, j, got, want)
				}
			}
		}
	}
}

func TestCSRValidate(t *testing.T) {
	cases := []struct {
		name string
		g    CSR
		ok   bool
	}{
		{"ok", CSR{Indptr: []int64{0, 1, 3}, Indices: []int32{0, 1, 0}, NumSrc: 2}, true},
		{"no dst ok", CSR{Indptr: []int64{0}, NumSrc: 3}, true},
		{"empty indptr", CSR{NumSrc: 2}, false},
		{"bad start", CSR{Indptr: []int64{1, 1}, Indices: []int32{0}, NumSrc: 2}, false},
		{"decreasing", CSR{Indptr: []int64{0, 2, 1}, Indices: []int32{0, 1}, NumSrc: 2}, false},
		{"bad end", CSR{Indptr: []int64{0, 1}, Indices: []int32{0, 1}, NumSrc: 2}, false},
		{"source range", CSR{Indptr: []int64{0, 1}, Indices: []int32{2}, NumSrc: 2}, false},
		{"negative source", CSR{Indptr: []int64{0, 1}, Indices: []int32{-1}, NumSrc: 2}, false},
		{"weights", CSR{Indptr: []int64{0, 1}, Indices: []int32{0}, Weights: []float32{1, 2}, NumSrc: 2}, false},
	}
	for _, c := range cases {
		err := c.g.Validate()
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrGraph)) {
			t.Errorf("%s: Validate = %v", c.name, err)
		}
	}
}

func TestAggregateErrors(t *testing.T) {
	g := &CSR{Indptr: []int64{0, 1, 2}, Indices: []int32{0, 1}, NumSrc: 2}
	cases := []struct {
		name   string
		out, x Matrix
		mode   Reduce
		want   error
	}{
		{"ok", New(2, 3), New(2, 3), Sum, nil},
		{"x rows", New(2, 3), New(3, 3), Sum, ErrShape},
		{"out rows", New(1, 3), New(2, 3), Mean, ErrShape},
		{"cols", New(2, 4), New(2, 3), Sum, ErrShape},
		{"weights missing", New(2, 3), New(2, 3), Weighted, ErrGraph},
	}
	for _, c := range cases {
		err := Aggregate(c.out, g, c.x, c.mode)
		if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
}

func TestGCNWeights(t *testing.T) {
	// Path 0-1-2 as a symmetric graph: deg = 1, 2, 1.
	g := &CSR{Indptr: []int64{0, 1, 3, 4}, Indices: []int32{1, 0, 2, 1}, NumSrc: 3}
	w, err := GCNWeights(g, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := float32(1 / math.Sqrt(2))
	want := []float32{r, r, r, r}
	for i := range w {
		if math.Abs(float64(w[i]-want[i])) > 1e-6 {
			t.Fatalf("weights %v, want %v", w, want)
		}
	}
	if _, err := GCNWeights(g, []float32{1}, nil); !errors.Is(err, ErrShape) {
		t.Fatalf("wrong degree length: %v", err)
	}
}

func TestTranspose(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	g := randomCSR(rng, 50, 40, 6)
	tr := g.T()
	seen := make([]bool, g.NumEdges())
	for s := 0; s < g.NumSrc; s++ {
		for q := tr.Indptr[s]; q < tr.Indptr[s+1]; q++ {
			e := tr.Edge[q]
			d := int(tr.Dst[q])
			if seen[e] || g.Indices[e] != int32(s) || e < g.Indptr[d] || e >= g.Indptr[d+1] {
				t.Fatalf("transposed entry %d (src %d, dst %d, edge %d) is wrong", q, s, d, e)
			}
			seen[e] = true
		}
	}
	for e, ok := range seen {
		if !ok {
			t.Fatalf("edge %d missing from transpose", e)
		}
	}
}

// TestSparseParallelDeterministic runs the sparse kernels, forward and
// backward, with 1 and 4 goroutines on a block large enough to be split,
// and requires bitwise-equal results: every output row is owned by one
// goroutine and summed in edge order. Run with -race to check the backward
// scatter-free design.
func TestSparseParallelDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	g := randomCSR(rng, 3000, 2000, 12)
	const heads, f = 2, 8
	x := randMatrix(rng, 2000, heads*f)
	el, er := randMatrix(rng, 2000, heads), randMatrix(rng, 3000, heads)
	dy := randMatrix(rng, 3000, heads*f)
	run := func(threads int) [][]float32 {
		SetThreads(threads)
		defer SetThreads(0)
		var res [][]float32
		for _, mode := range []Reduce{Sum, Mean, Weighted} {
			out, dx := New(3000, heads*f), New(2000, heads*f)
			if err := errors.Join(Aggregate(out, g, x, mode), AggregateGrad(dx, g, dy, mode)); err != nil {
				t.Fatal(err)
			}
			res = append(res, out.Data, dx.Data)
		}
		out, alpha := New(3000, heads*f), make([]float32, g.NumEdges()*heads)
		dh, del, der := New(2000, heads*f), New(2000, heads), New(3000, heads)
		if err := errors.Join(GATAggregate(out, alpha, g, x, el, er, heads, 0.2),
			GATAggregateGrad(dh, del, der, g, x, el, er, alpha, dy, heads, 0.2)); err != nil {
			t.Fatal(err)
		}
		return append(res, out.Data, alpha, dh.Data, del.Data, der.Data)
	}
	one, four := run(1), run(4)
	for i := range one {
		for j := range one[i] {
			if one[i][j] != four[i][j] {
				t.Fatalf("result %d element %d: %v with 1 thread, %v with 4", i, j, one[i][j], four[i][j])
			}
		}
	}
}

// TestAggregateGradSetFrom checks that the gradient is added to the rows
// before from and set in the others, bitwise as AggregateGrad and
// AggregateGradSet give them, with every kernel set and row widths on and
// off the row kernel's vectors.
func TestAggregateGradSetFrom(t *testing.T) {
	forEachKernel(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(5, 6))
		g := randomCSR(rng, 40, 30, 6)
		for _, cols := range []int{3, 16} {
			dy := randMatrix(rng, g.NumDst(), cols)
			for _, from := range []int{0, 11, g.NumSrc} {
				start := randMatrix(rng, g.NumSrc, cols)
				got := start.Clone()
				if err := AggregateGradSetFrom(got, g, dy, Mean, from); err != nil {
					t.Fatal(err)
				}
				added, set := start.Clone(), New(g.NumSrc, cols)
				if err := AggregateGrad(added, g, dy, Mean); err != nil {
					t.Fatal(err)
				}
				if err := AggregateGradSet(set, g, dy, Mean); err != nil {
					t.Fatal(err)
				}
				want := New(g.NumSrc, cols)
				copy(want.Data, added.Data[:from*cols])
				copy(want.Data[from*cols:], set.Data[from*cols:])
				bitwise(t, fmt.Sprintf("cols %d from %d", cols, from), got, want)
			}
		}
	})
}
