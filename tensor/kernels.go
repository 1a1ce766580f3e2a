package tensor

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/graphmill/graphmill/internal/isa"
)

// Why hand-written kernels: Go does not auto-vectorize, and no pure-Go
// library reaches BLAS speed (gonum's float32 GEMM runs at 5–11 GFLOP/s on
// cores where OpenBLAS runs at 60–180). GNN training time is dominated by
// dense products, so this package carries its own packed, cache-blocked GEMM
// with assembly micro-kernels chosen at run time by CPU feature detection,
// and a portable Go twin of every kernel that the tests run as well.

// microKernel computes C[0:mr, 0:nr] += alpha * Σ_p A[r*rsA+p*csA] * B[p*nr+j]
// for p < k, with B packed as k rows of nr floats and C rows ldc apart.
// With acc false it overwrites C instead (C = alpha * A·B) without reading it.
type microKernel struct {
	mr, nr int
	fn     kernelFn
	// rows[r], where not nil, computes only the first r (< mr) rows of a
	// tile: the last row tile of C, when mr does not divide its rows, for
	// less than the full kernel's cost (C of 128 rows is 21 tiles of 6 and
	// one of 2 on AVX2, which takes 0.6 of a full tile's time on Zen 4;
	// see BenchmarkMicroKernels).
	rows []kernelFn
	// pairs[r], where not nil, is rows[r] for two adjacent tiles at once
	// (an even run of tiles, taken two at a time): the same sums with
	// twice the independent sums, for tiles whose rows alone have too few
	// to keep the FMAs busy.
	pairs []kernelFn
	// pfBytes is how many bytes of pf every kernel of the tile prefetches
	// a depth (0: none).
	pfBytes int
	// ahead, where not nil, computes a full tile of an A whose rows are
	// contiguous (rsA 1: a transposed A read in place) like fn, and also
	// prefetches a depth at a time the A of a row tile further on, which
	// the hardware prefetchers do not follow (see gemmJob.block).
	ahead kernelFn
	// cs1 and packed, where not nil, compute a full tile like fn for an
	// A read in place untransposed (csA 1) and for a packed A (rsA 1,
	// csA mr), a few depths a pass with the addresses as displacements:
	// the same sums with fewer pointer and loop instructions (AVX-512's
	// 24×16 cs1 also prefetches the row tile two on; see internal/gen).
	cs1, packed kernelFn
	// wholeDepth says that a product whose A is read in place
	// untransposed takes its whole depth in one block, up to inPlaceKC
	// (AVX2's 6×16 set, where it was measured). Elsewhere such products
	// keep blocks of 256, and so their rounding.
	wholeDepth bool
}

// forCols returns the micro-kernel that computes a product with n
// columns: the narrow one where there is one and n fits it, else the wide.
func (set *kernelSet) forCols(n int) *microKernel {
	if set.narrow != nil && n <= set.narrow.nr {
		return set.narrow
	}
	return set.wide
}

// kernelFn is a micro-kernel: C[0:rows, 0:nr] (+)= alpha * A·B over k
// depths, A read at a[r*rsA + p*csA], B packed as k rows of nr floats,
// C's rows ldc apart; acc false overwrites C without reading it. It does
// the same for each tile of the run r (see tileRun). pf, when not empty,
// starts memory the kernel may prefetch into L2 meanwhile (the kernels of
// a microKernel take its pfBytes bytes a depth of each tile from it,
// whatever its length: a prefetch never faults).
type kernelFn func(k int, a []float32, rsA, csA int, b, c []float32, ldc int, alpha float32, acc bool, pf []float32, r tileRun)

// tileRun is the tiles one kernel call computes: n (>= 1) of them, tile t
// reading A at a[t*da:] and B at b[t*db:] and writing C at c[t*dc:]: the
// column panels of a row tile (da 0, db k·nr, dc nr) or the row tiles of a
// column panel (db 0, dc mr·ldc).
type tileRun struct{ n, da, db, dc int }

// oneTile is a run of one tile.
var oneTile = tileRun{n: 1}

// forRows returns the kernel for a tile of which only the first mw rows
// are wanted, and how many rows it computes (mw or more): the smallest of
// mk.rows that covers mw, else the full tile.
func (mk *microKernel) forRows(mw int) (kernelFn, int) {
	for r := mw; r < len(mk.rows); r++ {
		if mk.rows[r] != nil {
			return mk.rows[r], r
		}
	}
	return mk.fn, mk.mr
}

// kernelSet is one implementation of every kernel.
type kernelSet struct {
	name   string
	wide   *microKernel // the default GEMM micro-kernel
	narrow *microKernel // optional, used when the output has at most narrow.nr columns
	axpy   func(alpha float32, x, y []float32)
	axpyPF func(alpha float32, x, y, pf []float32) // axpy that prefetches pf
	dot    func(x, y []float32) float32
	// biasReLU sets seg = act(seg + bias) (bias may be nil; act is ReLU
	// when relu): the GEMM epilogue.
	biasReLU func(seg, bias []float32, relu bool)
	// epilogue, when not nil, is biasReLU(seg, bias, true), dropout(seg,
	// seg, lanes, thr, keep) and, when pos is not nil, positive(pos, seg)
	// in one pass over seg (bias and lanes as long as seg): a training
	// layer's GEMM epilogue (epilogueGeneric).
	epilogue func(seg, bias []float32, lanes []uint16, thr uint64, keep float32, pos []uint8)
	// reluMask sets o = g*scale where y > 0 and 0 elsewhere (ReLU
	// backward; scale is a fused dropout's keep factor, or 1).
	reluMask func(o, g, y []float32, scale float32)
	// reluMaskBits is reluMask with the mask given as bits (bit i%8 of
	// bits[i/8] set where y[i] > 0).
	reluMaskBits func(o, g []float32, bits []uint8, scale float32)
	// reluMaskBitsPack masks rows of B by bits and packs them into whole
	// column panels, adding them to db (see reluMaskBitsPackGeneric).
	reluMaskBitsPack func(dst, g []float32, bits []uint8, ld, bstride, rows, panels, nr, stride int, scale float32, db []float32)
	// positive sets bit i%8 of dst[i/8] where seg[i] > 0 and clears it
	// elsewhere, writing whole bytes (bits past seg cleared).
	positive func(dst []uint8, seg []float32)
	// dropout sets d = s ⊙ factor for the dropout factors of lanes
	// (drawn 16-bit lanes, one per element: kept, scaled by keep, where
	// lanes[i] >= thr; s must not be nil).
	dropout func(d, s []float32, lanes []uint16, thr uint64, keep float32)
	// dropoutBits, when not nil, sets d = s ⊙ factor for rows rows of cols
	// values (back to back in d and s), the factor of element j of row i
	// keep where bit j%64 of bits[i·w + j/64] is set and 0 where it is
	// clear, w = ⌈cols/64⌉: a dropout at p = 1/2 applied straight from
	// its draws (dropoutBitsGeneric).
	dropoutBits func(d, s []float32, rows, cols int, bits []uint64, keep float32)
	// spmmRow, when not nil, adds Σ_{e<n} w[e·wstep/4]·x[idx[e]·ldx/4:]
	// [:16m + the tail's lanes] to o (ldx and wstep in bytes), prefetching
	// ahead while e+8 < lim, and then, with mean, multiplies it by 1/n:
	// the row kernel of rows of any width, the row in registers, up to
	// spmm512Cols columns a call (spmmRowVec512).
	spmmRow func(n, m int, x []float32, ldx int, idx []int32, w []float32, wstep int, o []float32, lim, tail int, mean bool)
	// spmmRows, when not nil, is spmmRows16AVX2 for rows of fewer than 16
	// values, the lanes of mask (spmmRowsVec512).
	spmmRows func(rows int, indptr []int64, idx []int32, w []float32, wstep int, x []float32, ldx int, o []float32, ldo, lim, mean, mask int)
}

var (
	kernelsMu   sync.Mutex
	kernelNames []string
	kernelSets  = map[string]*kernelSet{}
	current     atomic.Pointer[kernelSet]
	threads     atomic.Int64
)

func registerKernels(name string, ks *kernelSet) {
	ks.name = name
	kernelsMu.Lock()
	defer kernelsMu.Unlock()
	kernelNames = append(kernelNames, name)
	kernelSets[name] = ks
	current.Store(ks) // registration order is slowest first
}

func init() {
	// Registered slowest first, so the best available set ends up current.
	registerKernels("generic", &kernelSet{
		wide: &microKernel{mr: 4, nr: 4, fn: gemmKernelGeneric},
		axpy: axpyGeneric, dot: dotGeneric,
		axpyPF:   func(alpha float32, x, y, _ []float32) { axpyGeneric(alpha, x, y) },
		biasReLU: biasReLUGeneric, epilogue: epilogueGeneric, reluMask: reluMaskGeneric, dropout: dropoutGeneric, dropoutBits: dropoutBitsGeneric,
		reluMaskBits: reluMaskBitsGeneric, reluMaskBitsPack: reluMaskBitsPackGeneric, positive: positiveGeneric,
	})
	registerArchKernels()
	// GRAPHMILL_KERNEL=generic (or avx2, avx512) overrides the choice; it
	// also caps the other packages' kernels (internal/isa).
	if name := isa.Requested; name != "" {
		if err := SetKernel(name); err != nil {
			fmt.Fprintln(os.Stderr, "graphmill:", err, "- keeping", Kernel())
		}
	}
}

func ks() *kernelSet { return current.Load() }

// Kernels lists the kernel sets usable on this CPU, slowest first; the last
// one is the default. "generic" (pure Go) is always present.
func Kernels() []string {
	kernelsMu.Lock()
	defer kernelsMu.Unlock()
	return append([]string(nil), kernelNames...)
}

// Kernel returns the name of the kernel set in use.
func Kernel() string { return ks().name }

// SetKernel selects a kernel set by name (one of Kernels()). Tests use it to
// run the same cases against the generic Go code and each assembly set.
// It affects all goroutines; do not call it while kernels are running.
func SetKernel(name string) error {
	kernelsMu.Lock()
	defer kernelsMu.Unlock()
	k, ok := kernelSets[name]
	if !ok {
		return fmt.Errorf("tensor: kernel set %q not available on this CPU (have %v)", name, kernelNames)
	}
	current.Store(k)
	return nil
}

// Threads returns the number of goroutines the kernels use by default
// (initially GOMAXPROCS).
func Threads() int {
	if t := threads.Load(); t > 0 {
		return int(t)
	}
	return runtime.GOMAXPROCS(0)
}

// SetThreads sets the default number of goroutines used by the kernels;
// n <= 0 restores the default (GOMAXPROCS).
func SetThreads(n int) { threads.Store(int64(max(n, 0))) }

// Axpy computes y[i] += alpha*x[i]. It panics if len(y) < len(x).
func Axpy(alpha float32, x, y []float32) {
	if len(y) < len(x) {
		panic("tensor.Axpy: y shorter than x")
	}
	ks().axpy(alpha, x, y)
}

// Dot returns Σ x[i]*y[i]. It panics if len(y) < len(x).
func Dot(x, y []float32) float32 {
	if len(y) < len(x) {
		panic("tensor.Dot: y shorter than x")
	}
	return ks().dot(x, y)
}

func axpyGeneric(alpha float32, x, y []float32) {
	y = y[:len(x)]
	i := 0
	for ; i+4 <= len(x); i += 4 {
		y[i] += alpha * x[i]
		y[i+1] += alpha * x[i+1]
		y[i+2] += alpha * x[i+2]
		y[i+3] += alpha * x[i+3]
	}
	for ; i < len(x); i++ {
		y[i] += alpha * x[i]
	}
}

func dotGeneric(x, y []float32) float32 {
	y = y[:len(x)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i] * y[i]
		s1 += x[i+1] * y[i+1]
		s2 += x[i+2] * y[i+2]
		s3 += x[i+3] * y[i+3]
	}
	for ; i < len(x); i++ {
		s0 += x[i] * y[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// gemmKernelGeneric is the pure-Go 4×4 micro-kernel.
func gemmKernelGeneric(k int, a []float32, rsA, csA int, b, c []float32, ldc int, alpha float32, acc bool, _ []float32, r tileRun) {
	for t := range r.n {
		gemmTileGeneric(k, a[t*r.da:], rsA, csA, b[t*r.db:], c[t*r.dc:], ldc, alpha, acc)
	}
}

// gemmTileGeneric is gemmKernelGeneric's one tile.
func gemmTileGeneric(k int, a []float32, rsA, csA int, b, c []float32, ldc int, alpha float32, acc bool) {
	var c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33 float32
	b = b[:4*k]
	ai := 0
	for p := 0; p < k; p++ {
		bp := b[4*p : 4*p+4 : 4*p+4]
		b0, b1, b2, b3 := bp[0], bp[1], bp[2], bp[3]
		a0 := a[ai]
		a1 := a[ai+rsA]
		a2 := a[ai+2*rsA]
		a3 := a[ai+3*rsA]
		ai += csA
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
	}
	if !acc {
		for r := 0; r < 4; r++ {
			clear(c[r*ldc : r*ldc+4])
		}
	}
	r := c[0:4:4]
	r[0] += alpha * c00
	r[1] += alpha * c01
	r[2] += alpha * c02
	r[3] += alpha * c03
	r = c[ldc : ldc+4 : ldc+4]
	r[0] += alpha * c10
	r[1] += alpha * c11
	r[2] += alpha * c12
	r[3] += alpha * c13
	r = c[2*ldc : 2*ldc+4 : 2*ldc+4]
	r[0] += alpha * c20
	r[1] += alpha * c21
	r[2] += alpha * c22
	r[3] += alpha * c23
	r = c[3*ldc : 3*ldc+4 : 3*ldc+4]
	r[0] += alpha * c30
	r[1] += alpha * c31
	r[2] += alpha * c32
	r[3] += alpha * c33
}

// PeakProbe returns run, which computes peakCalls tiles of the current
// kernel set's main micro-kernel (mr×nr, peakDepth deep) on each of threads
// goroutines, each over its own operands, which stay in the L1 cache, and
// the floating-point operations that one call of run performs. It is the
// arithmetic ceiling that a product's speed is read against (bench gemm):
// the same kernel with none of a product's loads from L2 or memory.
func PeakProbe(threads int) (run func(), flops float64) {
	mk := ks().wide
	threads = max(1, threads)
	type operands struct{ a, b, c []float32 }
	ops := make([]operands, threads)
	for i := range ops {
		ops[i] = operands{make([]float32, mk.mr*peakDepth), make([]float32, mk.nr*peakDepth), make([]float32, mk.mr*mk.nr)}
	}
	tiles := func(o operands) {
		for range peakCalls {
			mk.fn(peakDepth, o.a, 1, mk.mr, o.b, o.c, mk.nr, 1, true, nil, oneTile)
		}
	}
	run = func() {
		if err := parallel(threads, func(w int) { tiles(ops[w]) }); err != nil {
			panic(err) // a kernel's internal error
		}
	}
	return run, 2 * float64(threads*peakCalls*peakDepth*mk.mr*mk.nr)
}

// peakDepth and peakCalls size PeakProbe's work: about a millisecond a
// thread at AVX2's peak.
const (
	peakDepth = 256
	peakCalls = 2000
)
