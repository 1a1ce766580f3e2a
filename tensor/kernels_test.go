package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestRowKernels checks every partial-tile kernel (microKernel.rows) of
// every kernel set on this CPU against a float64 reference: each depth
// remainder of their multi-step loops (k mod 4), strided A as packing
// leaves it (rs 1, cs mr) and as read in place, overwrite and accumulate,
// and that no element past its rows or columns of C is written.
func TestRowKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	tested := 0
	for _, name := range Kernels() {
		ks := kernelSets[name]
		for _, mk := range []*microKernel{ks.wide, ks.narrow} {
			if mk == nil {
				continue
			}
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
	}
	t.Logf("%d cases", tested)
}

func checkRowKernel(t *testing.T, rng *rand.Rand, desc string, fn kernelFn, rows, mr, nr, k int, strided, acc bool) {
	t.Helper()
	rs, cs := 1, mr // packed A
	if strided {
		rs, cs = k+3, 1 // A read in place: rows of a row-major matrix
	}
	a := make([]float32, max(1, (mr-1)*rs+max(k, 1)*cs+mr))
	for i := range a {
		a[i] = float32(rng.NormFloat64())
	}
	b := make([]float32, max(1, k*nr))
	for i := range b {
		b[i] = float32(rng.NormFloat64())
	}
	const ldc, guard = 40, float32(12345)
	c := make([]float32, (mr+1)*ldc)
	for i := range c {
		c[i] = guard
	}
	init := make([]float32, len(c))
	for i := 0; i < rows; i++ {
		for j := 0; j < nr; j++ {
			c[i*ldc+j] = float32(rng.NormFloat64())
			init[i*ldc+j] = c[i*ldc+j]
		}
	}
	const alpha = 0.75
	fn(k, a, rs, cs, b, c, ldc, alpha, acc)
	for i := 0; i <= mr; i++ {
		for j := 0; j < ldc; j++ {
			got := c[i*ldc+j]
			if i >= rows || j >= nr {
				if got != guard {
					t.Fatalf("%s: wrote C[%d,%d] = %v outside its %d×%d", desc, i, j, got, rows, nr)
				}
				continue
			}
			var s float64
			for p := 0; p < k; p++ {
				s += float64(a[i*rs+p*cs]) * float64(b[p*nr+j])
			}
			want := alpha * s
			if acc {
				want += float64(init[i*ldc+j])
			}
			if d := math.Abs(float64(got) - want); !(d <= 1e-4*math.Sqrt(float64(k+1))*(1+math.Abs(want))) {
				t.Fatalf("%s: C[%d,%d] = %v, want %v", desc, i, j, got, want)
			}
		}
	}
}

// BenchmarkMicroKernels times every micro-kernel, full tile and partial,
// on a 256-deep tile in L1 and reports the nanoseconds per depth step and
// the cost relative to its full tile (a partial tile ran the full kernel
// before it had its own).
func BenchmarkMicroKernels(b *testing.B) {
	for _, name := range Kernels() {
		ks := kernelSets[name]
		for _, mk := range []*microKernel{ks.wide, ks.narrow} {
			if mk == nil {
				continue
			}
			const k = 256
			a, bp, c := make([]float32, mk.mr*k), make([]float32, mk.nr*k), make([]float32, mk.mr*mk.nr)
			run := func(fn kernelFn, n int) time.Duration {
				t0 := time.Now()
				for i := 0; i < n; i++ {
					fn(k, a, 1, mk.mr, bp, c, mk.nr, 1, true)
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
}
