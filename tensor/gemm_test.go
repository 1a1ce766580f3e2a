package tensor

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// forEachKernel runs f once per kernel set available on this CPU (always
// including the pure-Go "generic" set) and once per set emulatedSets runs
// under x86emu (AVX-512's on an AVX2 CPU), restoring the default
// afterwards.
func forEachKernel(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	def := Kernel()
	defer SetKernel(def)
	for _, name := range Kernels() {
		if err := SetKernel(name); err != nil {
			t.Fatal(err)
		}
		t.Run(name, f)
	}
	for _, ks := range emulatedSets() {
		current.Store(ks)
		t.Run(ks.name, f)
	}
}

func randMatrix(rng *rand.Rand, rows, cols int) Matrix {
	m := New(rows, cols)
	for i := range m.Data {
		m.Data[i] = float32(rng.NormFloat64())
	}
	return m
}

// naiveGemm is the float64 reference: C = alpha*op(A)op(B) + beta*C,
// each sum over the depth in order. op(A)'s rows and op(B)'s columns are
// copied out first as float64 rows, so the loop is plain dot products
// (fast enough to run under the race detector).
func naiveGemm(tA, tB Op, alpha float32, a, b Matrix, beta float32, c Matrix) []float64 {
	m, n := c.Rows, c.Cols
	rows := float64Rows(a, tA == Trans)   // op(A): m rows of k
	cols := float64Rows(b, tB == NoTrans) // op(B)ᵀ: n rows of k
	k := a.Cols
	if tA == Trans {
		k = a.Rows
	}
	out := make([]float64, m*n)
	for i := range m {
		r := rows[i*k : (i+1)*k]
		for j := range n {
			var s float64
			for p, v := range cols[j*k : (j+1)*k] {
				s += r[p] * v
			}
			v := float64(alpha) * s
			if beta != 0 {
				v += float64(beta) * float64(c.At(i, j))
			}
			out[i*n+j] = v
		}
	}
	return out
}

// float64Rows returns x, or xᵀ when transposed, row-major in float64.
func float64Rows(x Matrix, transposed bool) []float64 {
	out := make([]float64, 0, x.Rows*x.Cols)
	if !transposed {
		for _, v := range x.Data[:x.Rows*x.Cols] {
			out = append(out, float64(v))
		}
		return out
	}
	for j := range x.Cols {
		for i := range x.Rows {
			out = append(out, float64(x.At(i, j)))
		}
	}
	return out
}

func shapeOf(op Op, rows, cols int) (int, int) {
	if op == Trans {
		return cols, rows
	}
	return rows, cols
}

// splitSmall lets the test's products, however small, run on several
// workers (minWorkerMACs 1), so that the parallel splits are checked.
func splitSmall(t *testing.T) {
	old := minWorkerMACs
	minWorkerMACs = 1
	t.Cleanup(func() { minWorkerMACs = old })
}

// TestGemmWorkers checks how many workers products get: no more than
// their share of multiply-adds (minWorkerMACs each), their tiles, panels
// and depth allow.
func TestGemmWorkers(t *testing.T) {
	for _, tc := range []struct {
		name        string
		tA, tB      Op
		m, n        int
		ks          []int // depths of the terms (one: a plain product)
		threads     int
		wantWorkers int
	}{
		{"layer forward", NoTrans, Trans, 11000, 256, []int{100, 100}, 2, 2},
		{"layer forward, 8 threads", NoTrans, Trans, 11000, 256, []int{100, 100}, 8, 8},
		{"output layer forward", NoTrans, Trans, 1024, 16, []int{256, 256}, 2, 1},
		{"output layer input gradient", NoTrans, NoTrans, 1024, 256, []int{16}, 2, 1},
		{"output layer weight gradient", Trans, NoTrans, 16, 256, []int{1024}, 2, 1},
		{"two workers' share", NoTrans, NoTrans, 1024, 256, []int{64}, 8, 2},
		{"one thread", NoTrans, NoTrans, 4096, 4096, []int{4096}, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mat := func(op Op, r, c int) Matrix {
				if op == Trans {
					r, c = c, r
				}
				return New(r, c)
			}
			c := New(tc.m, tc.n)
			j := newGemmJob(tc.tA, tc.tB, 1, mat(tc.tA, tc.m, tc.ks[0]), mat(tc.tB, tc.ks[0], tc.n), 0, c, nil)
			if len(tc.ks) > 1 {
				for _, k := range tc.ks {
					j.terms = append(j.terms, depthTerm{k: k})
				}
			}
			if got := j.workers(tc.threads); got != tc.wantWorkers {
				t.Fatalf("%d×%d, depths %v, %d threads: %d workers, want %d", tc.m, tc.n, tc.ks, tc.threads, got, tc.wantWorkers)
			}
		})
	}
}

func TestGemmMatchesNaive(t *testing.T) {
	splitSmall(t)
	cases := []gemmShape{
		{1, 1, 1}, {3, 5, 7}, {6, 16, 8}, {12, 32, 5}, {24, 16, 300}, {7, 17, 33},
		{13, 33, 257}, {50, 3, 1000}, {97, 70, 193}, {400, 40, 20}, {25, 4100, 9}, {2, 300, 64},
		{40, 900, 300},
		{130, 640, 256},  // A block and B depth block past panelsBudget: row tiles outer
		{140, 100, 1030}, // a deep, narrow weight gradient: computed swapped when A is transposed
	}
	// The operands and their float64 reference are made once and checked
	// on every thread count and kernel set (the naive loops are most of
	// the test's time, under the race detector most of all).
	checks := gemmChecks(rand.New(rand.NewPCG(1, 2)), cases, [][2]float32{{1, 0}, {0.5, 1}, {-2, 0.25}, {0, 0.5}})
	forEachKernel(t, func(t *testing.T) {
		for _, c := range checks {
			for _, th := range []int{1, 2, 3} {
				c.check(t, th)
			}
		}
	})
}

// gemmShape is a product's m, n and k.
type gemmShape struct{ m, n, k int }

// gemmChecks returns a gemmCheck of every shape, both ops of A and of B,
// and every (alpha, beta), in that order.
func gemmChecks(rng *rand.Rand, shapes []gemmShape, abs [][2]float32) []gemmCheck {
	var checks []gemmCheck
	for _, sh := range shapes {
		for _, tA := range []Op{NoTrans, Trans} {
			for _, tB := range []Op{NoTrans, Trans} {
				for _, ab := range abs {
					checks = append(checks, newGemmCheck(rng, tA, tB, sh, ab[0], ab[1]))
				}
			}
		}
	}
	return checks
}

// gemmCheck is a product to check: random m×k and k×n operands (C random
// too, or NaN where beta is 0, which must ignore it) and naiveGemm's
// result.
type gemmCheck struct {
	tA, tB      Op
	k           int
	alpha, beta float32
	a, b, c     Matrix
	want        []float64
}

func newGemmCheck(rng *rand.Rand, tA, tB Op, sh gemmShape, alpha, beta float32) gemmCheck {
	ar, ac := shapeOf(tA, sh.m, sh.k)
	br, bc := shapeOf(tB, sh.k, sh.n)
	g := gemmCheck{tA: tA, tB: tB, k: sh.k, alpha: alpha, beta: beta,
		a: randMatrix(rng, ar, ac), b: randMatrix(rng, br, bc), c: randMatrix(rng, sh.m, sh.n)}
	if beta == 0 {
		for i := range g.c.Data {
			g.c.Data[i] = float32(math.NaN())
		}
	}
	g.want = naiveGemm(tA, tB, alpha, g.a, g.b, beta, g.c)
	return g
}

// check computes the product on threads workers, into a copy of C, and
// compares it with the reference.
func (g gemmCheck) check(t *testing.T, threads int) {
	t.Helper()
	m, n := g.c.Rows, g.c.Cols
	name := fmt.Sprintf("%dx%dx%d/%s%s/t%d/a%g,b%g", m, n, g.k, g.tA, g.tB, threads, g.alpha, g.beta)
	c := g.c.Clone()
	if err := GemmThreads(threads, g.tA, g.tB, g.alpha, g.a, g.b, g.beta, c); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	tol := 1e-4 * math.Sqrt(float64(g.k)) * 4
	for i, w := range g.want {
		if d := math.Abs(float64(c.Data[i]) - w); !(d <= tol*(1+math.Abs(w))) {
			t.Fatalf("%s: C[%d,%d] = %v, want %v", name, i/n, i%n, c.Data[i], w)
		}
	}
}

// TestGemmBlockings repeats some products under each blocking that the
// machine's sizes may choose: whole-depth packing of B turned off, so the
// one-depth-block-at-a-time loop is checked too, both loop orders of
// block (column panels outer, or row tiles outer as where L2 is small),
// and an A read in place in blocks of 256 deep where the kernel set
// would read it whole (inPlaceKC).
func TestGemmBlockings(t *testing.T) {
	splitSmall(t)
	defer func(f, p, k int) { fullDepthLimit, panelsBudget, inPlaceKC = f, p, k }(fullDepthLimit, panelsBudget, inPlaceKC)
	checks := gemmChecks(rand.New(rand.NewPCG(5, 5)), []gemmShape{{150, 70, 600}, {13, 33, 257}, {200, 300, 40}, {450, 100, 90}}, [][2]float32{{1.5, 0.5}})
	for _, bl := range []struct {
		name                      string
		fullDepth, panel, inPlace int
	}{
		{"depth blocks", 0, panelsBudget, 256},
		{"rows outer", fullDepthLimit, 1, inPlaceKC},
		{"panels outer", fullDepthLimit, 1 << 40, inPlaceKC},
		{"depth blocks, rows outer", 0, 1, 256},
		{"in-place depth blocks, panels outer", fullDepthLimit, 1 << 40, 256},
	} {
		fullDepthLimit, panelsBudget, inPlaceKC = bl.fullDepth, bl.panel, bl.inPlace
		t.Run(bl.name, func(t *testing.T) {
			forEachKernel(t, func(t *testing.T) {
				for _, c := range checks {
					c.check(t, 2)
				}
			})
		})
	}
}

// TestGemmPairedEdge checks products whose last row tile is partial with a
// pair kernel for its rows (microKernel.pairs): that block computes those
// tiles two column panels a call, leaving an odd or narrow last panel to
// the rows kernel, in both loop orders, and that C comes out bitwise as
// without the pairs.
func TestGemmPairedEdge(t *testing.T) {
	defer func(p int) { panelsBudget = p }(panelsBudget)
	for _, budget := range []int{1 << 40, 1} { // panels outer, rows outer
		panelsBudget = budget
		t.Run(fmt.Sprint("panelsBudget=", budget), testGemmPairedEdge)
	}
}

func testGemmPairedEdge(t *testing.T) {
	forEachKernel(t, func(t *testing.T) {
		mk := ks().wide
		if len(mk.pairs) == 0 {
			t.Skip("no pair kernels")
		}
		saved := mk.pairs
		defer func() { mk.pairs = saved }()
		var calls atomic.Int64
		counted := make([]kernelFn, len(saved))
		for r, fn := range saved {
			if fn != nil {
				counted[r] = func(k int, a []float32, rsA, csA int, b, c []float32, ldc int, alpha float32, acc bool, pf []float32, run tileRun) {
					calls.Add(1)
					fn(k, a, rsA, csA, b, c, ldc, alpha, acc, pf, run)
				}
			}
		}
		rng := rand.New(rand.NewPCG(9, 9))
		// Shapes that gemmThreads does not swap and block computes with
		// panels outer: more than 4 panels (or not transposed), deeper
		// than 64.
		for _, tc := range []struct{ m, n, k int }{{2*mk.mr + 1, 5 * mk.nr, 300}, {2*mk.mr + 2, 5 * mk.nr, 70}, {128, 4*mk.nr + 8, 600}, {128, 256, 4096}} {
			for _, tA := range []Op{NoTrans, Trans} {
				ar, ac := shapeOf(tA, tc.m, tc.k)
				a, b := randMatrix(rng, ar, ac), randMatrix(rng, tc.k, tc.n)
				c0 := randMatrix(rng, tc.m, tc.n)
				var got [2][]float32
				for i, pairs := range [][]kernelFn{nil, counted} {
					mk.pairs = pairs
					c := Matrix{Rows: c0.Rows, Cols: c0.Cols, Data: slices.Clone(c0.Data)}
					if err := GemmThreads(1, tA, NoTrans, 0.5, a, b, 0.25, c); err != nil {
						t.Fatal(err)
					}
					got[i] = c.Data
				}
				if n := calls.Swap(0); n == 0 {
					t.Fatalf("%v %dx%dx%d: no pair kernel called", tA, tc.m, tc.n, tc.k)
				}
				if !slices.Equal(got[0], got[1]) {
					t.Fatalf("%v %dx%dx%d: not bitwise the same as without pairs", tA, tc.m, tc.n, tc.k)
				}
				tol := 4e-4 * math.Sqrt(float64(tc.k))
				for i, w := range naiveGemm(tA, NoTrans, 0.5, a, b, 0.25, c0) {
					if d := math.Abs(float64(got[1][i]) - w); !(d <= tol*(1+math.Abs(w))) {
						t.Fatalf("%v %dx%dx%d: C[%d,%d] = %v, want %v", tA, tc.m, tc.n, tc.k, i/tc.n, i%tc.n, got[1][i], w)
					}
				}
			}
		}
	})
}

// TestInPlaceDepthBlock checks the depth blocks of products whose A is
// read in place: whole (up to inPlaceKC) where the kernel set takes them
// so (microKernel.wholeDepth), 256 elsewhere, and never a packed B depth
// block larger than blocks of 256 make it for the widest C.
func TestInPlaceDepthBlock(t *testing.T) {
	forEachKernel(t, func(t *testing.T) {
		for _, tc := range []struct {
			n, k  int
			whole bool // one depth block where the kernel set reads A in place
		}{
			{16, 1433, true}, {256, 602, true}, {256, 4096, true}, {602, 602, true}, {512, 1024, true},
			{16, 9000, false},   // deeper than inPlaceKC
			{1024, 4096, false}, // B's block would be 16 MiB
			{4096, 4096, false}, {20000, 300, false},
		} {
			a, b, c := Matrix{Rows: 6, Cols: tc.k}, Matrix{Rows: tc.k, Cols: tc.n}, Matrix{Rows: 6, Cols: tc.n}
			j := newGemmJob(NoTrans, NoTrans, 1, a, b, 0, c, nil)
			npad := (min(tc.n, blockNC) + j.mk.nr - 1) / j.mk.nr * j.mk.nr
			if kc := min(j.kc, tc.k); kc > 256 && kc*npad > 256*blockNC {
				t.Errorf("n %d, k %d: depth blocks of %d, a packed B block of %d floats", tc.n, tc.k, j.kc, kc*npad)
			}
			whole := tc.whole && j.mk.wholeDepth
			if got := j.kc >= tc.k; got != whole {
				t.Errorf("n %d, k %d: depth blocks of %d, whole depth %v, want %v", tc.n, tc.k, j.kc, got, whole)
			}
		}
	})
}

// TestDepthChunk checks the depth split's chunks: they tile the depth in
// order, in multiples of the unit but the last, and the first nt take two
// thirds of it (to a unit per chunk).
func TestDepthChunk(t *testing.T) {
	for _, tc := range []struct{ total, unit, nt int }{
		{4096, 64, 2}, {2708, 64, 2}, {16384, 64, 2}, {256, 64, 2}, {300, 64, 2}, {4096, 64, 3}, {1000, 64, 4}, {64 * 7, 64, 2},
	} {
		at, big := 0, 0
		for ch := range 2 * tc.nt {
			lo, hi := depthChunk(tc.total, tc.unit, tc.nt, ch)
			if lo != at || hi < lo || hi != tc.total && hi%tc.unit != 0 {
				t.Fatalf("%+v: chunk %d is [%d, %d), want it from %d in units of %d", tc, ch, lo, hi, at, tc.unit)
			}
			if ch < tc.nt {
				big = hi
			}
			at = hi
		}
		if at != tc.total {
			t.Errorf("%+v: chunks end at %d", tc, at)
		}
		if want := 2 * tc.total / 3; big < want-tc.nt*tc.unit || big > want+tc.unit {
			t.Errorf("%+v: big chunks take %d, want about %d", tc, big, want)
		}
	}
}

// TestAheadNextRun checks that runs of prefetch chunks stay within a row
// of their span, take as many chunks as fit (one at least), and hand out
// the same addresses as chunk-at-a-time walks.
func TestAheadNextRun(t *testing.T) {
	data := make([]float32, 1000)
	spans := [4]aheadSpan{{data: data, ld: 100, rows: 3, cols: 50}, {data: data[500:], ld: 40, rows: 2, cols: 40}}
	const chunk = 16
	var want []int // each chunk's offset in data, walking one at a time
	one := ahead{spans: spans, left: 1 << 20}
	for pf := one.next(chunk); pf != nil; pf = one.next(chunk) {
		want = append(want, len(data)-len(pf))
	}
	for _, n := range []int{1, 2, 3, 5} {
		ah := ahead{spans: spans, left: 1 << 20}
		var got []int
		for ah.left > 0 {
			pf, m := ah.nextRun(chunk, n)
			if pf == nil {
				break
			}
			if m < 1 || m > n {
				t.Fatalf("n %d: a run of %d", n, m)
			}
			at := len(data) - len(pf)
			for r := range m {
				got = append(got, at+r*chunk)
			}
		}
		// Runs put a row's chunks in one piece: a row of 50 floats has
		// three whole chunks, then a partial one that ends it.
		if !slices.Equal(got, want) {
			t.Errorf("n %d: chunks at %v, want %v", n, got, want)
		}
	}
}

// TestPanelsBudgetFor checks the budget for column panels outer against
// the L2 sizes of the machines it was measured on.
func TestPanelsBudgetFor(t *testing.T) {
	for _, tc := range []struct{ l2, want int }{
		{0, 768 << 10},         // unknown
		{-1, 768 << 10},        // unknown
		{256 << 10, 192 << 10}, // Intel client cores
		{512 << 10, 384 << 10}, // AMD Zen 3
		{1 << 20, 768 << 10},   // AMD Zen 4 and Zen 5
		{2 << 20, 768 << 10},   // Intel Xeon (Sapphire Rapids and later)
	} {
		if got := panelsBudgetFor(tc.l2); got != tc.want {
			t.Errorf("panelsBudgetFor(%d) = %d, want %d", tc.l2, got, tc.want)
		}
	}
}

func TestGemmErrors(t *testing.T) {
	a, b := New(3, 4), New(4, 5)
	shared := New(4, 4)
	cases := []struct {
		name    string
		tA, tB  Op
		a, b, c Matrix
		want    error
	}{
		{"ok", NoTrans, NoTrans, a, b, New(3, 5), nil},
		{"inner mismatch", NoTrans, NoTrans, a, New(5, 5), New(3, 5), ErrShape},
		{"bad C", NoTrans, NoTrans, a, b, New(3, 6), ErrShape},
		{"trans mismatch", Trans, NoTrans, a, b, New(4, 5), ErrShape},
		{"bad data len", NoTrans, NoTrans, Matrix{Rows: 3, Cols: 4, Data: make([]float32, 11)}, b, New(3, 5), ErrShape},
		{"zero rows", NoTrans, NoTrans, New(0, 4), b, New(0, 5), ErrEmpty},
		{"zero depth", NoTrans, NoTrans, New(3, 0), New(0, 5), New(3, 5), ErrEmpty},
		{"alias", NoTrans, NoTrans, shared, shared, shared, ErrAlias},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Gemm(tc.tA, tc.tB, 1, tc.a, tc.b, 0, tc.c)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	if err := Gemm(Op(7), NoTrans, 1, a, b, 0, New(3, 5)); err == nil || !strings.Contains(err.Error(), "want NoTrans or Trans") {
		t.Errorf("an op that is neither NoTrans nor Trans: %v", err)
	}
}

func TestAxpyDot(t *testing.T) {
	forEachKernel(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(3, 4))
		for _, n := range []int{0, 1, 7, 8, 9, 31, 32, 33, 100, 256} {
			x := randMatrix(rng, 1, n).Data
			y := randMatrix(rng, 1, n).Data
			var dot float64
			want := make([]float64, n)
			for i := range x {
				dot += float64(x[i]) * float64(y[i])
				want[i] = float64(y[i]) + 0.75*float64(x[i])
			}
			if got := Dot(x, y); math.Abs(float64(got)-dot) > 1e-4*(1+math.Abs(dot))*math.Sqrt(float64(n+1)) {
				t.Errorf("n=%d: Dot = %v, want %v", n, got, dot)
			}
			Axpy(0.75, x, y)
			for i := range y {
				if math.Abs(float64(y[i])-want[i]) > 1e-5*(1+math.Abs(want[i])) {
					t.Fatalf("n=%d: Axpy y[%d] = %v, want %v", n, i, y[i], want[i])
				}
			}
		}
	})
}

// TestGemmConcurrentCallers runs products from several goroutines at once
// (sharing the worker pool and the buffer pools) and checks every result.
func TestGemmConcurrentCallers(t *testing.T) {
	splitSmall(t)
	rng := rand.New(rand.NewPCG(9, 9))
	a, b := randMatrix(rng, 130, 70), randMatrix(rng, 70, 90)
	want := naiveGemm(NoTrans, NoTrans, 1, a, b, 0, New(130, 90))
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func() {
			c := New(130, 90)
			for range 5 {
				if err := GemmThreads(2, NoTrans, NoTrans, 1, a, b, 0, c); err != nil {
					errs <- err
					return
				}
				for i, w := range want {
					if math.Abs(float64(c.Data[i])-w) > 1e-3*(1+math.Abs(w)) {
						errs <- fmt.Errorf("C[%d] = %v, want %v", i, c.Data[i], w)
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestGemmEpilogue checks that the fused bias + ReLU (+ dropout) epilogue
// gives exactly (bitwise) what Gemm followed by a separate pass over each
// row gives, on every path of the product: rows, columns and depth split, the
// swapped product for few rows, whole-depth and depth-blocked packing.
func TestGemmEpilogue(t *testing.T) {
	splitSmall(t)
	defer func(v int) { fullDepthLimit = v }(fullDepthLimit)
	forEachKernel(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(9, 9))
		combo := 0
		for _, limit := range []int{1 << 18, 0} {
			if limit == 0 && testing.Short() {
				continue // -short: whole-depth packing only
			}
			fullDepthLimit = limit
			for _, tc := range []struct{ m, n, k int }{{300, 256, 100}, {40, 500, 64}, {64, 16, 2000}, {1030, 16, 256}, {7, 3, 5}, {500, 300, 600}, {300, 100, 1100}} {
				for _, tA := range []Op{NoTrans, Trans} {
					for _, tB := range []Op{NoTrans, Trans} {
						for _, beta := range []float32{0, 1} {
							// The epilogue kind and thread count rotate over the
							// cases (every combination of them would take 6× longer).
							combo++
							keys := make([]int32, tc.m)
							for i := range keys {
								keys[i] = int32(rng.IntN(1 << 20))
							}
							// p = 1/2 takes one-bit lanes, 0.3 16-bit ones.
							drop := RowDropout{P: []float64{0.5, 0.3}[combo/8%2], Seed: uint64(combo), Keys: keys}
							for _, ep := range []Epilogue{{ReLU: true}, {Bias: make([]float32, tc.n)}, {Bias: make([]float32, tc.n), ReLU: true}, {Bias: make([]float32, tc.n), ReLU: true, Dropout: drop}}[combo%4 : combo%4+1] {
								for _, th := range []int{1 + combo/4%2} {
									if ep.Bias != nil {
										for i := range ep.Bias {
											ep.Bias[i] = rng.Float32() - 0.5
										}
									}
									ar, ac := shapeOf(tA, tc.m, tc.k)
									br, bc := shapeOf(tB, tc.k, tc.n)
									a, b := randMatrix(rng, ar, ac), randMatrix(rng, br, bc)
									c0 := randMatrix(rng, tc.m, tc.n)
									want := c0.Clone()
									if err := GemmThreads(th, tA, tB, 1, a, b, beta, want); err != nil {
										t.Fatal(err)
									}
									if err := ep.check(want.Rows, want.Cols); err != nil {
										t.Fatal(err)
									}
									for i := 0; i < want.Rows; i++ {
										ep.apply(want.Row(i), i, 0, ep.scratch())
									}
									got := c0.Clone()
									old := Threads()
									SetThreads(th)
									err := GemmEpilogue(tA, tB, 1, a, b, beta, got, ep)
									SetThreads(old)
									if err != nil {
										t.Fatal(err)
									}
									for i := range want.Data {
										if math.Float32bits(got.Data[i]) != math.Float32bits(want.Data[i]) {
											t.Fatalf("%dx%dx%d %s%s beta %g bias %v relu %v threads %d limit %d: C[%d] = %v, want %v",
												tc.m, tc.n, tc.k, tA, tB, beta, ep.Bias != nil, ep.ReLU, th, limit, i, got.Data[i], want.Data[i])
										}
									}
								}
							}
						}
					}
				}
			}
		}
	})
	if err := GemmEpilogue(NoTrans, NoTrans, 1, New(2, 3), New(3, 4), 0, New(2, 4), Epilogue{Bias: make([]float32, 3)}); !errors.Is(err, ErrShape) {
		t.Fatalf("bias of the wrong length: %v, want ErrShape", err)
	}
}

// TestGemmTNMulti checks that the weight gradients of several inputs
// computed with one packing of G are bitwise those of separate products
// with alpha 1 (as backward passes call it; with another alpha a row in an
// edge tile of one product may sit in a full tile of the other, which
// rounds alpha·sum + C once instead of twice), close otherwise, for shapes that take the shared path (deep, narrow) and shapes that do
// not, on one thread and on several, in every kernel set.
func TestGemmTNMulti(t *testing.T) {
	splitSmall(t)
	forEachKernel(t, func(t *testing.T) {
		defer SetThreads(Threads())
		for _, threads := range []int{1, 3} {
			SetThreads(threads)
			for _, tc := range []struct {
				k, m        int
				cols        []int
				alpha, beta float32
			}{
				{3000, 256, []int{100, 100}, 1, 1},
				{2500, 200, []int{37, 64, 5}, 1, 0},
				{1030, 150, []int{128, 1}, 1, 0.5},
				{3000, 256, []int{100, 100}, 0.75, 1},
				{300, 256, []int{100, 100}, 1, 1}, // too shallow: separate products
				{2000, 64, []int{100, 100}, 1, 1}, // too few rows: separate products
			} {
				r := rand.New(rand.NewPCG(uint64(tc.k), uint64(len(tc.cols))))
				g := randMatrix(r, tc.k, tc.m)
				var xs, got, want []Matrix
				for _, c := range tc.cols {
					xs = append(xs, randMatrix(r, tc.k, c))
					w := randMatrix(r, tc.m, c)
					want, got = append(want, w), append(got, w.Clone())
				}
				for i := range xs {
					if err := Gemm(Trans, NoTrans, tc.alpha, g, xs[i], tc.beta, want[i]); err != nil {
						t.Fatal(err)
					}
				}
				if err := GemmTNMulti(tc.alpha, g, xs, tc.beta, got); err != nil {
					t.Fatal(err)
				}
				for i := range got {
					for e := range got[i].Data {
						w, d := want[i].Data[e], got[i].Data[e]
						if tc.alpha == 1 && math.Float32bits(d) != math.Float32bits(w) || math.Abs(float64(d-w)) > 1e-5*(1+math.Abs(float64(w))) {
							t.Fatalf("threads %d, %+v: C[%d] element %d = %v, separate product %v", threads, tc, i, e, got[i].Data[e], want[i].Data[e])
						}
					}
				}
			}
		}
	})
}

// TestGemmTNMultiReLU checks the masked weight gradients against the two
// passes they fuse (ReLUGradBiasScaled writing G, then GemmTNMulti): the
// weight gradients bitwise, the bias gradient (summed in another order)
// to float32 rounding, on shapes that take the shared, fused path and on
// shapes that do not, with and without a bias and a dropout scale, on one
// thread and on several, in every kernel set. A mask that kept one more
// element than the two passes did would change a weight gradient.
func TestGemmTNMultiReLU(t *testing.T) {
	splitSmall(t)
	forEachKernel(t, func(t *testing.T) {
		defer SetThreads(Threads())
		for _, threads := range []int{1, 3} {
			SetThreads(threads)
			for _, tc := range []struct {
				k, m  int
				cols  []int
				scale float32
				bias  bool
			}{
				{3000, 256, []int{100, 100}, 1, true},
				{2500, 200, []int{37, 64}, 2, true},
				{1030, 150, []int{128}, 1, false},
				{300, 256, []int{100, 100}, 2, true}, // too shallow: G materialised
			} {
				r := rand.New(rand.NewPCG(uint64(tc.k), 7))
				dy, y := randMatrix(r, tc.k, tc.m), randMatrix(r, tc.k, tc.m) // y: about half positive
				var xs, got, want []Matrix
				for _, c := range tc.cols {
					xs = append(xs, randMatrix(r, tc.k, c))
					w := randMatrix(r, tc.m, c)
					want, got = append(want, w), append(got, w.Clone())
				}
				var dbWant, dbGot []float32
				if tc.bias {
					dbWant = randMatrix(r, 1, tc.m).Data
					dbGot = append([]float32(nil), dbWant...)
				}
				gz := New(tc.k, tc.m)
				if err := ReLUGradBiasScaled(gz, y, dy, dbWant, true, tc.scale); err != nil {
					t.Fatal(err)
				}
				if err := GemmTNMulti(1, gz, xs, 1, want); err != nil {
					t.Fatal(err)
				}
				if err := GemmTNMultiReLU(dy, y, tc.scale, xs, 1, got, dbGot); err != nil {
					t.Fatal(err)
				}
				for i := range got {
					for e, w := range want[i].Data {
						if d := got[i].Data[e]; math.Float32bits(d) != math.Float32bits(w) {
							t.Fatalf("threads %d, %+v: dW[%d] element %d = %v, two passes %v", threads, tc, i, e, d, w)
						}
					}
				}
				for c, w := range dbWant {
					if d := dbGot[c]; math.Abs(float64(d-w)) > 1e-4*(1+math.Abs(float64(w))) {
						t.Fatalf("threads %d, %+v: dbias[%d] = %v, two passes %v", threads, tc, c, d, w)
					}
				}
			}
		}
	})
	if err := GemmTNMultiReLU(New(4, 3), New(4, 2), 1, []Matrix{New(4, 2)}, 0, []Matrix{New(3, 2)}, nil); !errors.Is(err, ErrShape) {
		t.Fatalf("Y and dY of different shapes: %v, want ErrShape", err)
	}
	if err := GemmTNMultiReLU(New(4, 3), New(4, 3), 1, []Matrix{New(4, 2)}, 0, []Matrix{New(3, 2)}, make([]float32, 2)); !errors.Is(err, ErrShape) {
		t.Fatalf("bias gradient of the wrong length: %v, want ErrShape", err)
	}
}

// TestGemmTNMultiErrors checks that mismatched shapes and aliased outputs
// are errors, not panics.
func TestGemmTNMultiErrors(t *testing.T) {
	g, x := New(10, 4), New(10, 3)
	c := New(4, 3)
	for name, call := range map[string]func() error{
		"count": func() error { return GemmTNMulti(1, g, []Matrix{x}, 0, nil) },
		"rows":  func() error { return GemmTNMulti(1, g, []Matrix{New(9, 3)}, 0, []Matrix{c}) },
		"out":   func() error { return GemmTNMulti(1, g, []Matrix{x}, 0, []Matrix{New(3, 4)}) },
		"alias": func() error { return GemmTNMulti(1, g, []Matrix{x, x}, 0, []Matrix{c, c}) },
		"aliasedG": func() error {
			return GemmTNMulti(1, g, []Matrix{g}, 0, []Matrix{{Rows: 4, Cols: 4, Data: g.Data[:16]}})
		},
	} {
		if err := call(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestGemmNTMulti checks that a sum of products computed in one pass over
// C is bitwise the separate products (the first with beta, the last with
// the epilogue), for shapes that take the one-pass path and shapes that
// fall back, on one thread and on several, in every kernel set.
func TestGemmNTMulti(t *testing.T) {
	splitSmall(t)
	forEachKernel(t, func(t *testing.T) {
		defer SetThreads(Threads())
		for _, threads := range []int{1, 3} {
			SetThreads(threads)
			for _, tc := range []struct {
				m, n int
				ks   []int
				beta float32
				ep   bool
			}{
				{1000, 256, []int{100, 100}, 0, true},
				{777, 130, []int{37, 64, 5}, 1, false},
				{500, 16, []int{300, 3}, 0.5, true},
				{301, 40, []int{700}, 0, true},         // one term
				{50, 600, []int{20, 30}, 0, true},      // few rows, many columns: swapped products
				{300, 256, []int{1500, 1500}, 1, true}, // too deep to pack whole
			} {
				r := rand.New(rand.NewPCG(uint64(tc.m), uint64(tc.n)))
				var xs, ws []Matrix
				for _, k := range tc.ks {
					xs, ws = append(xs, randMatrix(r, tc.m, k)), append(ws, randMatrix(r, tc.n, k))
				}
				want := randMatrix(r, tc.m, tc.n)
				got := want.Clone()
				ep := Epilogue{}
				if tc.ep {
					ep = Epilogue{Bias: randMatrix(r, 1, tc.n).Data, ReLU: true}
				}
				beta := tc.beta
				for i := range xs {
					e := Epilogue{}
					if i == len(xs)-1 {
						e = ep
					}
					if err := GemmEpilogue(NoTrans, Trans, 1, xs[i], ws[i], beta, want, e); err != nil {
						t.Fatal(err)
					}
					beta = 1
				}
				if err := GemmNTMulti(xs, ws, tc.beta, got, ep); err != nil {
					t.Fatal(err)
				}
				for e := range got.Data {
					if math.Float32bits(got.Data[e]) != math.Float32bits(want.Data[e]) {
						t.Fatalf("threads %d, %+v: element %d = %v, separate products %v", threads, tc, e, got.Data[e], want.Data[e])
					}
				}
			}
		}
	})
	g := New(4, 3)
	for name, err := range map[string]error{
		"count": GemmNTMulti([]Matrix{g}, nil, 0, New(4, 2), Epilogue{}),
		"shape": GemmNTMulti([]Matrix{g}, []Matrix{New(2, 4)}, 0, New(4, 2), Epilogue{}),
		"bias":  GemmNTMulti([]Matrix{g}, []Matrix{New(2, 3)}, 0, New(4, 2), Epilogue{Bias: []float32{1}}),
		"alias": GemmNTMulti([]Matrix{g}, []Matrix{New(2, 3)}, 0, Matrix{Rows: 4, Cols: 2, Data: g.Data[:8]}, Epilogue{}),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestEpilogueDropout checks the epilogue's row dropout against
// DropoutRows after a separate bias and ReLU, applied to whole rows and to
// rows cut into segments at columns that are and are not multiples of a
// draw's lanes (four 16-bit ones, or 64 bits at p = 1/2).
func TestEpilogueDropout(t *testing.T) {
	splitSmall(t)
	forEachKernel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(5, 5))
		for _, tc := range []struct {
			rows, cols int
			cuts       []int
			p          float64
		}{{9, 256, nil, 0.3}, {5, 100, []int{32, 64}, 0.3}, {7, 1100, []int{5, 13, 600}, 0.3}, {3, 3, []int{1}, 0.3},
			{9, 256, nil, 0.5}, {5, 100, []int{32, 64}, 0.5}, {7, 1100, []int{5, 13, 600, 640}, 0.5}, {3, 3, []int{1}, 0.5}} {
			c := randMatrix(r, tc.rows, tc.cols)
			keys := make([]int32, tc.rows)
			for i := range keys {
				keys[i] = int32(r.IntN(1000))
			}
			// Infinities and a NaN: a dropped infinity gives NaN (0·∞),
			// and NaN is not positive.
			c.Data[1], c.Data[len(c.Data)/2], c.Data[len(c.Data)-1] = float32(math.Inf(1)), float32(math.NaN()), float32(math.Inf(-1))
			ep := Epilogue{Bias: randMatrix(r, 1, tc.cols).Data, ReLU: true, Dropout: RowDropout{P: tc.p, Seed: 11, Keys: keys}}
			bytes := true // the cuts fall on whole bytes of the positive bits
			for _, x := range tc.cuts {
				bytes = bytes && x%8 == 0
			}
			if bytes {
				ep.Positive = make([]uint8, tc.rows*PositiveStride(tc.cols))
			}
			if err := ep.check(tc.rows, tc.cols); err != nil {
				t.Fatal(err)
			}
			want := c.Clone()
			for i := 0; i < want.Rows; i++ {
				biasReLUGeneric(want.Row(i), ep.Bias, true)
			}
			if err := DropoutRows(want, Matrix{}, want, tc.p, 11, keys); err != nil {
				t.Fatal(err)
			}
			got := c.Clone()
			for i := 0; i < got.Rows; i++ {
				row := got.Row(i)
				cuts := append(append([]int{0}, tc.cuts...), tc.cols)
				for k := 0; k+1 < len(cuts); k++ {
					ep.apply(row[cuts[k]:cuts[k+1]], i, cuts[k], ep.scratch())
				}
			}
			for e := range want.Data {
				if math.Float32bits(got.Data[e]) != math.Float32bits(want.Data[e]) {
					t.Fatalf("%+v: element %d = %v, DropoutRows after bias and ReLU %v", tc, e, got.Data[e], want.Data[e])
				}
			}
			if ep.Positive != nil {
				st := PositiveStride(tc.cols)
				wantBits := make([]uint8, st)
				for i := 0; i < tc.rows; i++ {
					positiveGeneric(wantBits, want.Row(i))
					if !slices.Equal(ep.Positive[i*st:(i+1)*st], wantBits) {
						t.Fatalf("%+v: row %d's positive bits %x, want %x", tc, i, ep.Positive[i*st:(i+1)*st], wantBits)
					}
				}
			}
		}
		if err := GemmEpilogue(NoTrans, NoTrans, 1, New(2, 2), New(2, 2), 0, New(2, 2), Epilogue{Dropout: RowDropout{P: 0.5, Keys: []int32{1}}}); err == nil {
			t.Error("dropout keys for 1 of 2 rows: no error")
		}
	})
}

// TestPackTiles checks the packing copies (assembly on amd64 for the tile
// and panel widths of the kernels) against packTilesGeneric, with the
// guard values around each tile left alone.
func TestPackTiles(t *testing.T) {
	for _, w := range []int{4, 6, 12, 16, 32} {
		for _, c := range []struct{ rows, tiles, extra int }{{1, 1, 0}, {3, 5, 7}, {8, 4, 1}, {16, 2, 0}} {
			lds := c.tiles*w + c.extra
			src := make([]float32, (c.rows-1)*lds+c.tiles*w)
			for i := range src {
				src[i] = float32(i + 1)
			}
			stride := c.rows*w + 3
			want := make([]float32, c.tiles*stride)
			got := make([]float32, c.tiles*stride)
			for i := range want {
				want[i], got[i] = -1, -1
			}
			packTilesGeneric(want, src, lds, w, c.rows, c.tiles, stride)
			packTiles(got, src, lds, w, c.rows, c.tiles, stride)
			if !slices.Equal(got, want) {
				t.Fatalf("w=%d %+v: got %v, want %v", w, c, got, want)
			}
			for ti := 0; ti < c.tiles; ti++ {
				if v := want[ti*stride+2]; v != src[2+ti*w] {
					t.Fatalf("w=%d %+v: tile %d starts %v, want %v", w, c, ti, v, src[2+ti*w])
				}
			}
		}
	}
}

// BenchmarkPackABlock packs the transposed A of a weight gradient Xᵀ·dY
// (X 16384×602, as in GraphSAGE's first layer on 602 features) block by
// block as run does, X from memory, and reports the bytes of X packed a
// second. The same with 512 rows of X (1.2 MB) measures it from cache.
func BenchmarkPackABlock(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, rows := range []int{16384, 512} {
		x, dy, c := randMatrix(rng, rows, 602), randMatrix(rng, rows, 256), New(602, 256)
		j := newGemmJob(Trans, NoTrans, 1, x, dy, 0, c, nil)
		j.allocTiles(j.kc)
		b.Run(fmt.Sprintf("X=%dx602/%s", rows, Kernel()), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				for pc := 0; pc < j.k; pc += j.kc {
					for ic := 0; ic < j.m; ic += blockMC {
						j.apRows = j.apRows[:0]
						j.packABlock(ic, min(blockMC, j.m-ic), pc, min(j.kc, j.k-pc))
					}
				}
			}
			b.ReportMetric(float64(4*len(x.Data))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
		putBuf(j.ap)
	}
}

// TestPositiveBits checks the ReLU-mask bits end to end in every kernel
// set, on one thread and several: the bits a product's epilogue writes
// (Epilogue.Positive, with bias, ReLU and dropout; through GemmNTMulti's
// one product over the depth and through GemmEpilogue) are those of C > 0,
// and GemmTNMultiReLUBits reading them gives bitwise GemmTNMultiReLU's
// weight and bias gradients, which read C itself.
func TestPositiveBits(t *testing.T) {
	splitSmall(t)
	forEachKernel(t, func(t *testing.T) {
		defer SetThreads(Threads())
		compared := 0
		defer func() {
			if compared == 0 {
				t.Error("no case took the shared product that reads the bits")
			}
		}()
		for _, threads := range []int{1, 3} {
			SetThreads(threads)
			for _, tc := range []struct{ k, m int }{{3000, 256}, {2100, 200}, {1500, 100}} {
				r := rand.New(rand.NewPCG(uint64(tc.k), 9))
				x0, x1 := randMatrix(r, tc.k, 100), randMatrix(r, tc.k, 100)
				w0, w1 := randMatrix(r, tc.m, 100), randMatrix(r, tc.m, 100)
				keys := make([]int32, tc.k)
				for i := range keys {
					keys[i] = int32(r.IntN(1 << 20))
				}
				st := PositiveStride(tc.m)
				for _, multi := range []bool{true, false} {
					y := New(tc.k, tc.m)
					bits := make([]uint8, tc.k*st)
					for i := range bits {
						bits[i] = 0xa5 // stale: every byte must be written
					}
					ep := Epilogue{Bias: randMatrix(r, 1, tc.m).Data, ReLU: true, Dropout: RowDropout{P: 0.5, Seed: 3, Keys: keys}, Positive: bits}
					var err error
					if multi {
						err = GemmNTMulti([]Matrix{x0, x1}, []Matrix{w0, w1}, 0, y, ep)
					} else {
						err = GemmEpilogue(NoTrans, Trans, 1, x0, w0, 0, y, ep)
					}
					if err != nil {
						t.Fatal(err)
					}
					for i := 0; i < tc.k; i++ {
						for j := 0; j < tc.m; j++ {
							got := bits[i*st+j/8]>>(j%8)&1 == 1
							if got != (y.At(i, j) > 0) {
								t.Fatalf("threads %d, %+v, multi %v: bit (%d, %d) = %v for C %v", threads, tc, multi, i, j, got, y.At(i, j))
							}
						}
						if pad := tc.m % 8; pad != 0 && bits[i*st+st-1]>>pad != 0 {
							t.Fatalf("threads %d, %+v: row %d's padding bits set", threads, tc, i)
						}
					}
					if !multi || !ReLUGradFused(tc.k, tc.m, []int{100, 100}) {
						continue
					}
					compared++
					dy := randMatrix(r, tc.k, tc.m)
					want := []Matrix{randMatrix(r, tc.m, 100), randMatrix(r, tc.m, 100)}
					got := []Matrix{want[0].Clone(), want[1].Clone()}
					dbWant := randMatrix(r, 1, tc.m).Data
					dbGot := append([]float32(nil), dbWant...)
					if err := GemmTNMultiReLU(dy, y, 2, []Matrix{x0, x1}, 1, want, dbWant); err != nil {
						t.Fatal(err)
					}
					if err := GemmTNMultiReLUBits(dy, bits, 2, []Matrix{x0, x1}, 1, got, dbGot); err != nil {
						t.Fatal(err)
					}
					for i := range got {
						bitwise(t, fmt.Sprintf("threads %d, %+v: dW[%d]", threads, tc, i), got[i], want[i])
					}
					bitwise(t, fmt.Sprintf("threads %d, %+v: dbias", threads, tc), Matrix{Rows: 1, Cols: tc.m, Data: dbGot}, Matrix{Rows: 1, Cols: tc.m, Data: dbWant})
					// The same with dY's rows written as the product asks for
					// them: each once, before it reads them.
					made := New(tc.k, tc.m)
					for i := range made.Data {
						made.Data[i] = float32(math.NaN()) // stale
					}
					times := make([]atomic.Int32, tc.k)
					got = []Matrix{want[0].Clone(), want[1].Clone()}
					dbRows := append([]float32(nil), dbWant...)
					dbTwice := append([]float32(nil), dbWant...)
					wantTwice := []Matrix{want[0].Clone(), want[1].Clone()}
					if err := GemmTNMultiReLUBits(dy, bits, 2, []Matrix{x0, x1}, 1, wantTwice, dbTwice); err != nil {
						t.Fatal(err)
					}
					err = GemmTNMultiReLUBitsRows(made, bits, 2, []Matrix{x0, x1}, 1, got, dbRows, func(lo, hi int) {
						for i := lo; i < hi; i++ {
							times[i].Add(1)
							copy(made.Row(i), dy.Row(i))
						}
					})
					if err != nil {
						t.Fatal(err)
					}
					for i := range times {
						if n := times[i].Load(); n != 1 {
							t.Fatalf("threads %d, %+v: row %d of dY written %d times", threads, tc, i, n)
						}
					}
					for i := range got {
						bitwise(t, fmt.Sprintf("threads %d, %+v: rows: dW[%d]", threads, tc, i), got[i], wantTwice[i])
					}
					bitwise(t, fmt.Sprintf("threads %d, %+v: rows: dbias", threads, tc), Matrix{Rows: 1, Cols: tc.m, Data: dbRows}, Matrix{Rows: 1, Cols: tc.m, Data: dbTwice})
				}
			}
		}
	})
	if err := GemmTNMultiReLUBits(New(300, 256), make([]uint8, 300*32), 1, []Matrix{New(300, 100), New(300, 100)}, 0, []Matrix{New(256, 100), New(256, 100)}, nil); err == nil {
		t.Fatal("GemmTNMultiReLUBits on products that do not share dY's packing: no error")
	}
	if err := GemmTNMultiReLUBits(New(3000, 256), make([]uint8, 10), 1, []Matrix{New(3000, 100), New(3000, 100)}, 0, []Matrix{New(256, 100), New(256, 100)}, nil); !errors.Is(err, ErrShape) {
		t.Fatalf("too few bits: %v, want ErrShape", err)
	}
}

// TestMaskBitsKernels checks every kernel set's positive and reluMaskBits
// against their definitions on lengths with and without a tail, with NaN,
// zeros of both signs, infinities and subnormals: reluMaskBits of the bits
// of y is bitwise reluMask of y.
func TestMaskBitsKernels(t *testing.T) {
	forEachKernel(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(10, 10))
		special := []float32{float32(math.NaN()), 0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), 1e-40, -1e-40}
		for _, n := range []int{0, 1, 7, 8, 9, 33, 100, 256} {
			y, g := make([]float32, n), make([]float32, n)
			for i := range y {
				y[i], g[i] = rng.Float32()-0.5, rng.Float32()-0.5
				if i%5 == 0 {
					y[i] = special[(i/5)%len(special)]
				}
				if i%7 == 3 {
					g[i] = special[(i/7)%len(special)]
				}
			}
			bits := make([]uint8, (n+7)/8)
			for i := range bits {
				bits[i] = 0xff
			}
			ks().positive(bits, y)
			for i, v := range y {
				if got := bits[i/8]>>(i%8)&1 == 1; got != (v > 0) {
					t.Fatalf("n %d: positive bit %d = %v for %v", n, i, got, v)
				}
			}
			if n%8 != 0 && bits[n/8]>>(n%8) != 0 {
				t.Fatalf("n %d: bits past the end set: %08b", n, bits[n/8])
			}
			o, want := make([]float32, n), make([]float32, n)
			ks().reluMaskBits(o, g, bits, 1.5)
			ks().reluMask(want, g, y, 1.5)
			for i := range o {
				if math.Float32bits(o[i]) != math.Float32bits(want[i]) {
					t.Fatalf("n %d: reluMaskBits [%d] = %v, reluMask %v (y %v, g %v)", n, i, o[i], want[i], y[i], g[i])
				}
			}
		}
	})
}

// TestReLUMaskBitsPack checks every kernel set's masked packing from bits
// against reluMaskBits row by row: the packed panels bitwise, and db as
// the rows added one after another with axpy (bitwise: 1·x is exact),
// with and without db, for panel widths of 8, 16 and 32 columns.
func TestReLUMaskBitsPack(t *testing.T) {
	forEachKernel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(11, 11))
		for _, tc := range []struct{ rows, panels, nr, extra int }{{1, 1, 8, 0}, {8, 8, 32, 3}, {5, 3, 16, 9}, {8, 2, 32, 17}} {
			ld := tc.panels*tc.nr + tc.extra
			bstride := PositiveStride(ld) + 2
			g := randMatrix(r, tc.rows, ld).Data
			g[len(g)/2], g[len(g)-1] = float32(math.NaN()), float32(math.Inf(-1)) // masked: +0; kept: scaled
			bits := make([]uint8, tc.rows*bstride)
			for i := range bits {
				bits[i] = uint8(r.Uint32())
			}
			stride := tc.rows*tc.nr + 5
			for _, withDB := range []bool{false, true} {
				dst := make([]float32, (tc.panels-1)*stride+tc.rows*tc.nr)
				want := make([]float32, len(dst))
				var db, wantDB []float32
				if withDB {
					db = randMatrix(r, 1, tc.panels*tc.nr).Data
					wantDB = append([]float32(nil), db...)
				}
				ks().reluMaskBitsPack(dst, g, bits, ld, bstride, tc.rows, tc.panels, tc.nr, stride, 1.25, db)
				row := make([]float32, tc.panels*tc.nr)
				for i := 0; i < tc.rows; i++ {
					ks().reluMaskBits(row, g[i*ld:], bits[i*bstride:], 1.25)
					for q := 0; q < tc.panels; q++ {
						copy(want[q*stride+i*tc.nr:][:tc.nr], row[q*tc.nr:])
					}
					if withDB {
						ks().axpy(1, row, wantDB)
					}
				}
				bitwise(t, fmt.Sprintf("%+v db %v: packed", tc, withDB), Matrix{Rows: 1, Cols: len(dst), Data: dst}, Matrix{Rows: 1, Cols: len(want), Data: want})
				if withDB {
					bitwise(t, fmt.Sprintf("%+v: db", tc), Matrix{Rows: 1, Cols: len(db), Data: db}, Matrix{Rows: 1, Cols: len(wantDB), Data: wantDB})
				}
			}
		}
	})
}
