package tensor

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// microKernels lists every micro-kernel (wide and narrow) of every kernel
// set on this CPU, with its set's name.
func microKernels() []namedKernel {
	var out []namedKernel
	for _, name := range Kernels() {
		ks := kernelSets[name]
		for _, mk := range []*microKernel{ks.wide, ks.narrow} {
			if mk != nil {
				out = append(out, namedKernel{name, mk})
			}
		}
	}
	return out
}

// testedMicroKernels are microKernels and, under x86emu, those of the
// assembly sets this CPU cannot run (emulatedMicroKernels): what the
// kernel tests check, so that every kernel is tested whatever the machine.
func testedMicroKernels() []namedKernel {
	return append(microKernels(), emulatedMicroKernels()...)
}

// namedKernel is a micro-kernel and the name of its kernel set.
type namedKernel struct {
	name string
	mk   *microKernel
}

// TestRowKernels checks every partial-tile kernel (microKernel.rows) of
// every kernel set (under x86emu where this CPU lacks it) against a
// float64 reference: each depth remainder of their multi-step loops (k
// mod 4), strided A as packing
// leaves it (rs 1, cs mr) and as read in place, overwrite and accumulate,
// and that no element past its rows or columns of C is written.
func TestRowKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	tested := 0
	for _, km := range testedMicroKernels() {
		name, mk := km.name, km.mk
		for r, fn := range mk.rows {
			if fn == nil {
				continue
			}
			if got, gr := mk.forRows(r); gr != r || got == nil {
				t.Fatalf("%s %dx%d: forRows(%d) gives %d rows", name, mk.mr, mk.nr, r, gr)
			}
			for _, k := range []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 256, 257} {
				for _, strided := range []bool{false, true} {
					for _, acc := range []bool{false, true} {
						desc := fmt.Sprintf("%s %dx%d rows %d k %d strided %v acc %v", name, mk.mr, mk.nr, r, k, strided, acc)
						checkRowKernel(t, rng, desc, fn, r, mk.mr, mk.nr, k, strided, acc)
						tested++
					}
				}
			}
		}
	}
	t.Logf("%d cases", tested)
}

// TestPairKernels checks every pair kernel (microKernel.pairs) against a
// float64 reference over runs of 2 and 4 panels, with A packed and read in
// place, and that its sums are bitwise its rows kernel's.
func TestPairKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	tested := 0
	for _, km := range testedMicroKernels() {
		name, mk := km.name, km.mk
		for r, fn := range mk.pairs {
			if fn == nil {
				continue
			}
			for _, k := range []int{0, 1, 2, 5, 256, 257} {
				for _, strided := range []bool{false, true} {
					rs, cs := 1, mk.mr
					if strided {
						rs, cs = k+3, 1
					}
					for _, acc := range []bool{false, true} {
						for _, n := range []int{2, 4} {
							const ldc = 4*32 + 8
							run := tileRun{n: n, db: k * mk.nr, dc: mk.nr}
							desc := fmt.Sprintf("%s %dx%d pair of rows %d k %d strided %v acc %v run %d", name, mk.mr, mk.nr, r, k, strided, acc, n)
							checkRun(t, rng, desc, fn, r, mk.mr, mk.nr, k, rs, cs, ldc, run, acc)
							a := randMatrix(rng, 1, (mk.mr-1)*rs+max(k, 1)*cs+mk.mr).Data
							b := randMatrix(rng, 1, n*max(k, 1)*mk.nr).Data
							c1 := randMatrix(rng, 1, (mk.mr+1)*ldc).Data
							c2 := slices.Clone(c1)
							mk.rows[r](k, a, rs, cs, b, c1, ldc, 0.75, acc, nil, run)
							fn(k, a, rs, cs, b, c2, ldc, 0.75, acc, nil, run)
							if !slices.Equal(c1, c2) {
								t.Fatalf("%s: not bitwise the rows kernel's", desc)
							}
							tested++
						}
					}
				}
			}
		}
	}
	t.Logf("%d cases", tested)
}

// TestLayoutKernels checks every full-tile kernel for a known layout of A
// (microKernel.ahead, cs1, packed) against a float64 reference, in that
// layout (ahead: rows contiguous, as a transposed A read in place and as
// packed; cs1: depths contiguous, rows apart; packed) with runs of row tiles
// as block makes them, and that its sums are bitwise the plain kernel's.
func TestLayoutKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	tested := 0
	for _, km := range testedMicroKernels() {
		name, mk := km.name, km.mk
		const ldc = 3*32 + 8
		for _, k := range []int{0, 1, 3, 4, 5, 8, 16, 23, 32, 257} {
			type layout struct {
				name   string
				fn     kernelFn
				rs, cs int
				da     int // the next row tile's A
			}
			var ls []layout
			if mk.ahead != nil {
				ls = append(ls, layout{"ahead", mk.ahead, 1, mk.mr, mk.mr}, layout{"ahead", mk.ahead, 1, 3*mk.mr + 5, mk.mr})
			}
			if mk.cs1 != nil {
				ls = append(ls, layout{"cs1", mk.cs1, k + 3, 1, mk.mr * (k + 3)})
			}
			if mk.packed != nil {
				ls = append(ls, layout{"packed", mk.packed, 1, mk.mr, mk.mr * max(k, 1)})
			}
			for _, l := range ls {
				for _, acc := range []bool{false, true} {
					for _, run := range []tileRun{oneTile, {n: 3, da: l.da, dc: mk.mr * ldc}} {
						desc := fmt.Sprintf("%s %dx%d %s k %d rs %d cs %d acc %v run %d", name, mk.mr, mk.nr, l.name, k, l.rs, l.cs, acc, run.n)
						checkRun(t, rng, desc, l.fn, mk.mr, mk.mr, mk.nr, k, l.rs, l.cs, ldc, run, acc)
						a := randMatrix(rng, 1, (mk.mr-1)*l.rs+max(k, 1)*l.cs+2*mk.mr).Data
						b := randMatrix(rng, 1, max(k, 1)*mk.nr).Data
						c1 := randMatrix(rng, 1, 3*mk.mr*ldc).Data
						c2 := slices.Clone(c1)
						mk.fn(k, a, l.rs, l.cs, b, c1, ldc, 0.75, acc, nil, oneTile)
						l.fn(k, a, l.rs, l.cs, b, c2, ldc, 0.75, acc, nil, oneTile)
						if !slices.Equal(c1, c2) {
							t.Fatalf("%s: not bitwise the plain kernel's", desc)
						}
						tested++
					}
				}
			}
		}
	}
	t.Logf("%d cases", tested)
}

func checkRowKernel(t *testing.T, rng *rand.Rand, desc string, fn kernelFn, rows, mr, nr, k int, strided, acc bool) {
	t.Helper()
	rs, cs := 1, mr // packed A
	if strided {
		rs, cs = k+3, 1 // A read in place: rows of a row-major matrix
	}
	const ldc = 3*32 + 8 // three panels of the widest tile side by side, and a margin
	for _, r := range []struct {
		name string
		run  tileRun
	}{
		{"one tile", oneTile},
		{"3 panels", tileRun{n: 3, db: k * nr, dc: nr}},
		{"3 row tiles", tileRun{n: 3, da: mr * max(rs, k), dc: mr * ldc}},
	} {
		checkRun(t, rng, desc+" "+r.name, fn, rows, mr, nr, k, rs, cs, ldc, r.run, acc)
	}
}

// checkRun checks one call of fn over the tiles of run against float64
// sums, and that it writes nothing in C outside each tile's rows × nr.
func checkRun(t *testing.T, rng *rand.Rand, desc string, fn kernelFn, rows, mr, nr, k, rs, cs, ldc int, run tileRun, acc bool) {
	t.Helper()
	last := run.n - 1
	a := randMatrix(rng, 1, last*run.da+max(1, (mr-1)*rs+max(k, 1)*cs+mr)).Data
	b := randMatrix(rng, 1, last*run.db+max(1, k*nr)).Data
	const guard = float32(12345)
	c := make([]float32, last*run.dc+(mr+1)*ldc)
	for i := range c {
		c[i] = guard
	}
	want := make([]float64, len(c)) // NaN: not written
	for i := range want {
		want[i] = math.NaN()
	}
	const alpha = 0.75
	for q := 0; q <= last; q++ {
		for i := 0; i < rows; i++ {
			for j := 0; j < nr; j++ {
				at := q*run.dc + i*ldc + j
				c[at] = float32(rng.NormFloat64())
				var s float64
				for p := 0; p < k; p++ {
					s += float64(a[q*run.da+i*rs+p*cs]) * float64(b[q*run.db+p*nr+j])
				}
				want[at] = alpha * s
				if acc {
					want[at] += float64(c[at])
				}
			}
		}
	}
	fn(k, a, rs, cs, b, c, ldc, alpha, acc, a, run) // prefetching A: any memory will do
	for at, got := range c {
		w := want[at]
		if math.IsNaN(w) {
			if got != guard {
				t.Fatalf("%s: wrote C[%d,%d] = %v outside its tiles", desc, at/ldc, at%ldc, got)
			}
			continue
		}
		if d := math.Abs(float64(got) - w); !(d <= 1e-4*math.Sqrt(float64(k+1))*(1+math.Abs(w))) {
			t.Fatalf("%s: C[%d,%d] = %v, want %v", desc, at/ldc, at%ldc, got, w)
		}
	}
}

// BenchmarkMicroKernels times every micro-kernel, full tile and partial,
// on a 256-deep tile in L1 and reports the nanoseconds per depth step and
// the cost relative to its full tile (a partial tile ran the full kernel
// before it had its own).
func BenchmarkMicroKernels(b *testing.B) {
	for _, km := range microKernels() {
		name, mk := km.name, km.mk
		const k = 256
		a, bp, c := make([]float32, mk.mr*k), make([]float32, mk.nr*k), make([]float32, mk.mr*mk.nr)
		run := func(fn kernelFn, n int) time.Duration {
			t0 := time.Now()
			for i := 0; i < n; i++ {
				fn(k, a, 1, mk.mr, bp, c, mk.nr, 1, true, nil, oneTile)
			}
			return time.Since(t0)
		}
		for r := 1; r <= mk.mr; r++ {
			fn := mk.fn
			if r < mk.mr {
				if r >= len(mk.rows) || mk.rows[r] == nil {
					continue
				}
				fn = mk.rows[r]
			}
			b.Run(fmt.Sprintf("%s/%dx%d/rows=%d", name, mk.mr, mk.nr, r), func(b *testing.B) {
				// The full kernel before and after, so both see the
				// same clock.
				full := run(mk.fn, b.N)
				b.ResetTimer()
				part := run(fn, b.N)
				b.StopTimer()
				full += run(mk.fn, b.N)
				b.ReportMetric(float64(part.Nanoseconds())/float64(b.N)/k, "ns/depth")
				b.ReportMetric(2*float64(part)/float64(full), "of_full")
			})
		}
	}
}

// TestAheadCovers checks that the chunks ahead.next hands out, one per
// kernel call, cover every row of its spans (contiguous or not) when there
// are calls enough, and then run out.
func TestAheadCovers(t *testing.T) {
	buf := make([]float32, 10000)
	for _, tc := range []struct {
		name  string
		a, b  aheadSpan
		chunk int
	}{
		{"contiguous", aheadSpan{data: buf, ld: 40, rows: 30, cols: 40}, aheadSpan{}, 64},
		{"strided rows", aheadSpan{data: buf[5:], ld: 100, rows: 20, cols: 30}, aheadSpan{}, 16},
		{"chunk past a row", aheadSpan{data: buf, ld: 100, rows: 20, cols: 30}, aheadSpan{}, 64},
		{"two spans", aheadSpan{data: buf, ld: 50, rows: 10, cols: 20}, aheadSpan{data: buf[3000:], ld: 64, rows: 8, cols: 64}, 32},
		{"second only", aheadSpan{}, aheadSpan{data: buf[100:], ld: 7, rows: 9, cols: 3}, 8},
	} {
		j := &gemmJob{}
		j.setAhead(0, 0, 0, tc.a, aheadSpans{tc.b})
		covered := make([]bool, len(buf))
		calls := 0
		for pf := j.ah.next(tc.chunk); pf != nil; pf = j.ah.next(tc.chunk) {
			off := len(buf) - len(pf)
			if &pf[0] != &buf[off] {
				t.Fatalf("%s: chunk outside the buffer", tc.name)
			}
			for i := off; i < min(off+tc.chunk, len(buf)); i++ {
				covered[i] = true
			}
			if calls++; calls > 1000 {
				t.Fatalf("%s: next never runs out", tc.name)
			}
		}
		for _, sp := range []aheadSpan{tc.a, tc.b} {
			if sp.rows == 0 {
				continue
			}
			off := len(buf) - len(sp.data)
			for r := 0; r < sp.rows; r++ {
				for c := 0; c < sp.cols; c++ {
					if !covered[off+r*sp.ld+c] {
						t.Fatalf("%s: row %d col %d not prefetched", tc.name, r, c)
					}
				}
			}
		}
	}
	// setTileAhead: a tile of 6 rows of an A read in place, strided (ld
	// 50, depths 10-29) and contiguous (ld 20), and past the last row.
	for _, ld := range []int{50, 20} {
		pc := 10
		if ld == 20 {
			pc = 0
		}
		j := &gemmJob{a: buf, m: 40, rsA: ld, csA: 1, mk: &microKernel{mr: 6, pfBytes: 8}}
		j.setTileAhead(30, pc, 20)
		covered := make([]bool, len(buf))
		const chunk = 20 * 8 / 4 // kb · pfBytes / 4, as block asks
		for pf := j.tileAh.next(chunk); pf != nil; pf = j.tileAh.next(chunk) {
			for i := len(buf) - len(pf); i < len(buf)-len(pf)+chunk; i++ {
				covered[i] = true
			}
		}
		for r := 30; r < 36; r++ {
			for c := pc; c < pc+20; c++ {
				if !covered[r*ld+c] {
					t.Fatalf("tile ahead, ld %d: row %d depth %d not prefetched", ld, r, c)
				}
			}
		}
		if j.setTileAhead(40, pc, 20); j.tileAh.next(chunk) != nil {
			t.Fatalf("tile ahead past the last row prefetches")
		}
	}
	// A sum of products (runTerms): each block prefetches the next block's
	// A, across depth blocks (the 300-deep term has two), terms and row
	// blocks, and the last prefetches nothing.
	const m = 2*blockMC + 100
	defer func(k int) { inPlaceKC = k }(inPlaceKC)
	inPlaceKC = 256 // blocks of 256 deep whatever the kernel set
	var xs []Matrix
	for _, k := range []int{100, 300, 40} {
		xs = append(xs, New(m, k))
	}
	jt := newGemmJob(NoTrans, Trans, 1, xs[0], New(8, 100), 0, New(m, 8), nil)
	mk := *jt.mk
	mk.pfBytes = max(mk.pfBytes, 8)
	jt.mk = &mk
	for _, x := range xs {
		tj := newGemmJob(NoTrans, Trans, 1, x, New(8, x.Cols), 0, New(m, 8), nil)
		jt.terms = append(jt.terms, depthTerm{a: tj.a, rsA: tj.rsA, b: tj.b, ldb: tj.ldb, k: tj.k, kc: tj.kc})
	}
	type blk struct{ q, ic, pc, kb int }
	var order []blk // runTerms' order
	for ic := 0; ic < m; ic += blockMC {
		for q, tm := range jt.terms {
			for pc := 0; pc < tm.k; pc += tm.kc {
				order = append(order, blk{q, ic, pc, min(tm.kc, tm.k-pc)})
			}
		}
	}
	if len(order) != 3*4 {
		t.Fatalf("runTerms' blocks: %d, want 12 (the 300-deep term in two)", len(order))
	}
	for i, b := range order {
		jt.use(b.q)
		sp := jt.termAhead(b.q, b.ic, b.pc)
		if &jt.a[0] != &xs[b.q].Data[0] || jt.k != xs[b.q].Cols {
			t.Fatalf("block %d: termAhead left term %d's operands changed", i, b.q)
		}
		if i == len(order)-1 {
			if sp[0].rows != 0 {
				t.Fatalf("the last block prefetches %+v", sp[0])
			}
			continue
		}
		nx := order[i+1]
		x := xs[nx.q]
		want := aheadSpan{data: x.Data[nx.ic*x.Cols+nx.pc:], ld: x.Cols, rows: min(blockMC, m-nx.ic), cols: nx.kb}
		if got := sp[0]; &got.data[0] != &want.data[0] || got.ld != want.ld || got.rows != want.rows || got.cols != want.cols || sp[1].rows != 0 {
			t.Fatalf("block %d (term %d, rows %d, depth %d): prefetches %d×%d (ld %d), want term %d's rows %d, depth %d: %d×%d",
				i, b.q, b.ic, b.pc, got.rows, got.cols, got.ld, nx.q, nx.ic, nx.pc, want.rows, want.cols)
		}
	}
	// A block whose packed operands leave room for 100 floats in L2 gets
	// two chunks of 64.
	j := &gemmJob{}
	j.setAhead(1, 1, l2Budget/8-50, aheadSpan{data: buf, ld: 10, rows: 1000, cols: 10}, aheadSpans{})
	n := 0
	for j.ah.next(64) != nil {
		n++
	}
	if n != 2 {
		t.Fatalf("L2 room for 100 floats: %d chunks of 64, want 2", n)
	}
}

// TestASourceParts checks what the kernels prefetch for the next packing
// of an op(A) in parts (GemmTNMulti's inputs): each part's storage rows
// of the next depth block, over the columns the row block takes from it,
// and nothing past the last row.
func TestASourceParts(t *testing.T) {
	x0, x1 := make([]float32, 40*30), make([]float32, 40*50)
	j := &gemmJob{m: 80, k: 40, kc: 16, transA: true, mk: &microKernel{mr: 6, pfBytes: 8},
		parts: []aPart{{a: x0, ld: 30, cols: 30}, {a: x1, ld: 50, cols: 50}}}
	for _, tc := range []struct{ ic, pc int }{{0, 0}, {0, 16}, {20, 32}, {35, 8}} {
		j.setAhead(0, 0, 0, aheadSpan{}, j.aSource(tc.ic, tc.pc))
		covered := map[*float32]bool{}
		for pf := j.ah.next(4); pf != nil; pf = j.ah.next(4) {
			for i := range min(4, len(pf)) {
				covered[&pf[i]] = true
			}
		}
		kb := min(j.kc, j.k-tc.pc)
		want := 0
		for i := tc.ic; i < j.m; i++ { // op(A) row i, blockMC > m
			x, ld, c := x0, 30, i
			if i >= 30 {
				x, ld, c = x1, 50, i-30
			}
			for p := tc.pc; p < tc.pc+kb; p++ {
				if !covered[&x[p*ld+c]] {
					t.Fatalf("ic %d pc %d: op(A) row %d depth %d not prefetched", tc.ic, tc.pc, i, p)
				}
				want++
			}
		}
		// A chunk may run up to 3 floats past the end of a span's row.
		if len(covered) > want+3*2*kb {
			t.Fatalf("ic %d pc %d: %d floats prefetched for %d wanted", tc.ic, tc.pc, len(covered), want)
		}
	}
	for _, sp := range j.aSource(80, 0) {
		if sp.rows != 0 {
			t.Fatalf("past the last row: %+v", sp)
		}
	}
}

// TestGeneratedKernelsCurrent runs the kernel generator into a scratch
// directory and checks that kernels_amd64.s and kernels_amd64.go are what
// it writes now: an edit of internal/gen without "go generate ./tensor"
// fails here rather than shipping stale kernels.
func TestGeneratedKernelsCurrent(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil || testing.Short() {
		t.Skip("needs the go tool (and not -short)")
	}
	gen, err := filepath.Abs(filepath.Join("internal", "gen", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(goTool, "run", gen)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run internal/gen: %v\n%s", err, out)
	}
	for _, f := range []string{"kernels_amd64.s", "kernels_amd64.go"} {
		want, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run go generate ./tensor", f)
		}
	}
}

// TestPeakProbe checks PeakProbe's count of operations against its work,
// with every kernel set, on one thread and on several.
func TestPeakProbe(t *testing.T) {
	forEachKernel(t, func(t *testing.T) {
		mk := ks().wide
		for _, th := range []int{1, 3} {
			run, flops := PeakProbe(th)
			if want := 2 * float64(th*peakCalls*peakDepth*mk.mr*mk.nr); flops != want {
				t.Errorf("%d threads: %g operations, want %g", th, flops, want)
			}
			run()
		}
	})
}
