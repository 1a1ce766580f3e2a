package tensor

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/graphmill/graphmill/internal/rng"
)

// This file holds the dense elementwise and row-wise kernels. Forward
// kernels write their result into dst (which may be one of the inputs when
// the shapes allow); backward kernels ("…Grad") ADD into the gradient they
// are given, so gradients from several uses of a value accumulate.

func sameShapes(op string, ms ...Matrix) error {
	for i, m := range ms {
		if err := m.Validate(); err != nil {
			return fmt.Errorf("%s: operand %d: %w", op, i, err)
		}
		if !m.SameShape(ms[0]) {
			return fmt.Errorf("%w: %s: operand %d is %d×%d, operand 0 is %d×%d", ErrShape, op, i, m.Rows, m.Cols, ms[0].Rows, ms[0].Cols)
		}
	}
	return nil
}

// parallelFor calls f(lo, hi) on chunks of [0, n) from Threads() goroutines,
// handing out chunks of the given size dynamically (good for skewed work
// such as high-degree rows). Single-threaded when n is small.
func parallelFor(n, chunk int, f func(lo, hi int)) error {
	nt := min(Threads(), (n+chunk-1)/chunk)
	if nt <= 1 {
		return protect(0, func(int) { f(0, n) })
	}
	var next atomic.Int64
	return parallel(nt, func(int) {
		for {
			lo := int(next.Add(int64(chunk))) - chunk
			if lo >= n {
				return
			}
			f(lo, min(lo+chunk, n))
		}
	})
}

// elementwise applies f to chunks of the flat index range in parallel.
func elementwise(n int, f func(lo, hi int)) error {
	if t0 := statStart(); t0 != 0 {
		defer statEnd(t0, &eltNs, &eltElems, int64(n))
	}
	return parallelFor(n, 1<<15, f)
}

// timedRows is parallelFor for the row-wise kernels, timed as element-wise
// work over elems values.
func timedRows(elems, n, chunk int, f func(lo, hi int)) error {
	if t0 := statStart(); t0 != 0 {
		defer statEnd(t0, &eltNs, &eltElems, int64(elems))
	}
	return parallelFor(n, chunk, f)
}

// Add sets dst = a + b elementwise.
func Add(dst, a, b Matrix) error {
	if err := sameShapes("Add", dst, a, b); err != nil {
		return err
	}
	return elementwise(len(dst.Data), func(lo, hi int) {
		d, x, y := dst.Data[lo:hi], a.Data[lo:hi], b.Data[lo:hi]
		for i := range d {
			d[i] = x[i] + y[i]
		}
	})
}

// Mul sets dst = a ⊙ b (elementwise product).
func Mul(dst, a, b Matrix) error {
	if err := sameShapes("Mul", dst, a, b); err != nil {
		return err
	}
	return elementwise(len(dst.Data), func(lo, hi int) {
		d, x, y := dst.Data[lo:hi], a.Data[lo:hi], b.Data[lo:hi]
		for i := range d {
			d[i] = x[i] * y[i]
		}
	})
}

// AddScaled sets dst += alpha*x (the BLAS axpy on matrices).
func AddScaled(dst Matrix, alpha float32, x Matrix) error {
	if err := sameShapes("AddScaled", dst, x); err != nil {
		return err
	}
	return elementwise(len(dst.Data), func(lo, hi int) { Axpy(alpha, x.Data[lo:hi], dst.Data[lo:hi]) })
}

// Scale sets dst = alpha*x.
func Scale(dst Matrix, alpha float32, x Matrix) error {
	if err := sameShapes("Scale", dst, x); err != nil {
		return err
	}
	return elementwise(len(dst.Data), func(lo, hi int) {
		d, s := dst.Data[lo:hi], x.Data[lo:hi]
		for i := range d {
			d[i] = alpha * s[i]
		}
	})
}

// AddBias sets dst[i, j] = x[i, j] + bias[j]; bias has x.Cols elements.
func AddBias(dst, x Matrix, bias []float32) error {
	if err := sameShapes("AddBias", dst, x); err != nil {
		return err
	}
	if len(bias) != x.Cols {
		return fmt.Errorf("%w: AddBias: bias has %d elements, x has %d columns", ErrShape, len(bias), x.Cols)
	}
	return timedRows(len(x.Data), x.Rows, 256, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			d, s := dst.Row(i), x.Row(i)
			for j, b := range bias {
				d[j] = s[j] + b
			}
		}
	})
}

// SumRowsInto adds the column sums of x to dst (len x.Cols): dst[j] += Σ_i x[i, j].
// It is the gradient of AddBias with respect to the bias.
func SumRowsInto(dst []float32, x Matrix) error {
	if err := x.Validate(); err != nil {
		return err
	}
	if len(dst) != x.Cols {
		return fmt.Errorf("%w: SumRowsInto: dst has %d elements, x has %d columns", ErrShape, len(dst), x.Cols)
	}
	for i := 0; i < x.Rows; i++ {
		Axpy(1, x.Row(i), dst)
	}
	return nil
}

// mapGrad is the shared shape of the activation kernels.
func mapUnary(op string, dst, x Matrix, f func(v float32) float32) error {
	if err := sameShapes(op, dst, x); err != nil {
		return err
	}
	return elementwise(len(dst.Data), func(lo, hi int) {
		d, s := dst.Data[lo:hi], x.Data[lo:hi]
		for i, v := range s {
			d[i] = f(v)
		}
	})
}

// gradUnary sets dx += dy * f'(x) where deriv(x, y) returns f'(x) given
// the input x and the output y = f(x).
func gradUnary(op string, dx, x, y, dy Matrix, deriv func(x, y float32) float32) error {
	if err := sameShapes(op, dx, x, y, dy); err != nil {
		return err
	}
	return elementwise(len(dx.Data), func(lo, hi int) {
		d, xs, ys, g := dx.Data[lo:hi], x.Data[lo:hi], y.Data[lo:hi], dy.Data[lo:hi]
		for i := range d {
			d[i] += g[i] * deriv(xs[i], ys[i])
		}
	})
}

// ReLU sets dst = max(x, 0).
func ReLU(dst, x Matrix) error {
	return mapUnary("ReLU", dst, x, func(v float32) float32 { return max(v, 0) })
}

// ReLUGrad adds dy * 1[x > 0] to dx (y is the forward output, unused).
func ReLUGrad(dx, x, y, dy Matrix) error {
	return gradUnary("ReLUGrad", dx, x, y, dy, func(x, _ float32) float32 {
		if x > 0 {
			return 1
		}
		return 0
	})
}

// LeakyReLU sets dst = x for x > 0 and slope*x otherwise.
func LeakyReLU(dst, x Matrix, slope float32) error {
	return mapUnary("LeakyReLU", dst, x, func(v float32) float32 { return leaky(v, slope) })
}

// LeakyReLUGrad adds dy * (1 or slope) to dx.
func LeakyReLUGrad(dx, x, y, dy Matrix, slope float32) error {
	return gradUnary("LeakyReLUGrad", dx, x, y, dy, func(x, _ float32) float32 { return leakyDeriv(x, slope) })
}

func leaky(v, slope float32) float32 {
	if v > 0 {
		return v
	}
	return slope * v
}

func leakyDeriv(v, slope float32) float32 {
	if v > 0 {
		return 1
	}
	return slope
}

// ELU sets dst = x for x > 0 and alpha*(exp(x)-1) otherwise.
func ELU(dst, x Matrix, alpha float32) error {
	return mapUnary("ELU", dst, x, func(v float32) float32 {
		if v > 0 {
			return v
		}
		return alpha * float32(math.Expm1(float64(v)))
	})
}

// ELUGrad adds dy * ELU'(x) to dx, using y = ELU(x): ELU'(x) = y + alpha for x <= 0.
func ELUGrad(dx, x, y, dy Matrix, alpha float32) error {
	return gradUnary("ELUGrad", dx, x, y, dy, func(x, y float32) float32 {
		if x > 0 {
			return 1
		}
		return y + alpha
	})
}

// dropoutChunk is the number of elements drawn from one random stream in
// Dropout; chunks are seeded from (seed, chunk index), so the mask depends
// on the seed only, not on the number of threads.
const dropoutChunk = 1 << 14

// Dropout zeroes each element of x with probability p and scales the others
// by 1/(1-p) (inverted dropout), writing the result to dst and the applied
// factors (0 or 1/(1-p)) to mask, which the backward pass multiplies by.
// The same seed gives the same mask. p must be in [0, 1); it is applied
// with 16-bit resolution (each 64-bit draw decides four elements), except
// p = 1/2, which one bit decides exactly (a draw decides 64). Pass
// the zero Matrix as mask when no backward pass needs it (e.g. dropout on
// input features).
func Dropout(dst, mask, x Matrix, p float64, seed uint64) error {
	noMask := mask.Data == nil && mask.Rows == 0 && mask.Cols == 0
	if noMask {
		mask = x // shape check only; never written
	}
	if err := sameShapes("Dropout", dst, mask, x); err != nil {
		return err
	}
	if !(p >= 0 && p < 1) {
		return fmt.Errorf("tensor: Dropout: probability %v not in [0, 1)", p)
	}
	return drawDropout(dst.Data, mask.Data, x.Data, noMask, p, seed)
}

// DropoutRows is Dropout with the mask of row i keyed by (seed, keys[i])
// instead of the row's position: a node's row is dropped the same way
// whichever minibatch, rank or process computes it (keys are the rows'
// global node ids), so a distributed step reproduces a single process's.
// keys must have one entry per row of x.
func DropoutRows(dst, mask, x Matrix, p float64, seed uint64, keys []int32) error {
	noMask := mask.Data == nil && mask.Rows == 0 && mask.Cols == 0
	if noMask {
		mask = x
	}
	if err := sameShapes("DropoutRows", dst, mask, x); err != nil {
		return err
	}
	if !(p >= 0 && p < 1) {
		return fmt.Errorf("tensor: DropoutRows: probability %v not in [0, 1)", p)
	}
	if len(keys) != x.Rows {
		return fmt.Errorf("tensor: DropoutRows: %d keys for %d rows", len(keys), x.Rows)
	}
	c := x.Cols
	return timedRows(len(x.Data), x.Rows, max(1, dropoutChunk/max(1, c)), func(lo, hi int) {
		dropoutRowRange(dst, mask, x, noMask, p, seed, keys, lo, hi)
	})
}

// Apply drops x's rows in place, row i keyed by d.Keys[i], exactly as
// DropoutRows(x, Matrix{}, x, d.P, d.Seed, d.Keys) does, but on the
// calling goroutine and outside the kernel statistics: for work beside a
// step, such as a loader applying a layer's input dropout to rows it has
// just gathered, while they are in cache.
func (d RowDropout) Apply(x Matrix) error {
	if !(d.P >= 0 && d.P < 1) {
		return fmt.Errorf("tensor: RowDropout: probability %v not in [0, 1)", d.P)
	}
	if len(d.Keys) != x.Rows || len(x.Data) != x.Rows*x.Cols {
		return fmt.Errorf("tensor: RowDropout: %d keys for a %dx%d matrix of %d values", len(d.Keys), x.Rows, x.Cols, len(x.Data))
	}
	if d.P > 0 {
		dropoutRowRange(x, x, x, true, d.P, d.Seed, d.Keys, 0, x.Rows)
	}
	return nil
}

// dropoutRowRange is DropoutRows of rows [lo, hi).
func dropoutRowRange(dst, mask, x Matrix, noMask bool, p float64, seed uint64, keys []int32, lo, hi int) {
	dc := newDropCode(p)
	c := x.Cols
	if noMask && dc.width == 1 && ks().dropoutBits != nil && (c+63)/64 <= dropoutWords {
		dropoutBitRows(dst, x, dc.factors[1], seed, keys, lo, hi)
		return
	}
	thr, keep := dc.thr, dc.factors[1]
	// Rows are drawn a block at a time: each row's stream writes its
	// lanes into one buffer, back to back, and one vectorised pass
	// applies the block's lanes to its rows (contiguous in x), so a
	// narrow row costs a seed and its draws, not a kernel call. A row
	// wider than the buffer is drawn and applied in parts.
	lp := getLanes()
	defer putLanes(lp)
	buf := *lp
	var r rng.Rand
	apply := func(e0 int, lanes []uint16) {
		e1 := e0 + len(lanes)
		ks().dropout(dst.Data[e0:e1], x.Data[e0:e1], lanes, thr, keep)
		if !noMask {
			dropoutGeneric(mask.Data[e0:e1], nil, lanes, thr, keep)
		}
	}
	for i := lo; i < hi; {
		if c > len(buf) {
			r.Seed(rowSeed(seed, keys[i]))
			for off := 0; off < c; off += len(buf) {
				lanes := buf[:min(len(buf), c-off)]
				r.Lanes(lanes, dc.width)
				apply(i*c+off, lanes)
			}
			i++
			continue
		}
		j := min(hi, i+len(buf)/c)
		for k := i; k < j; k++ {
			r.Seed(rowSeed(seed, keys[k]))
			r.Lanes(buf[(k-i)*c:(k-i+1)*c], dc.width)
		}
		apply(i*c, buf[:(j-i)*c])
		i = j
	}
}

// dropoutWords is the number of draws a bits buffer (bitsPool) holds.
const dropoutWords = 512

// bitsPool holds dropoutBitRows' buffers of draws (dropoutWords long),
// pooled for the reason lanePool is.
var bitsPool = sync.Pool{New: func() any {
	b := make([]uint64, dropoutWords)
	return &b
}}

// dropoutBitRows is dropoutRowRange without a mask at p = 1/2, where a
// bit of the stream decides an element: the rows' draws go to a buffer
// as they are, and the kernel set's dropoutBits applies a block of rows
// from their bits, with no 16-bit lanes in between (a row of 100
// elements: 2 draws instead of 100 lanes written and read back).
func dropoutBitRows(dst, x Matrix, keep float32, seed uint64, keys []int32, lo, hi int) {
	c := x.Cols
	w := (c + 63) / 64
	bp := bitsPool.Get().(*[]uint64)
	defer bitsPool.Put(bp)
	buf := *bp
	var r rng.Rand
	for i := lo; i < hi; {
		j := min(hi, i+len(buf)/w)
		for k := i; k < j; k++ {
			r.Seed(rowSeed(seed, keys[k]))
			row := buf[(k-i)*w : (k-i+1)*w]
			for t := range row {
				row[t] = r.Uint64()
			}
		}
		ks().dropoutBits(dst.Data[i*c:j*c], x.Data[i*c:j*c], j-i, c, buf[:(j-i)*w], keep)
		i = j
	}
}

// dropoutBitsGeneric sets d = s ⊙ factor for rows rows of cols values,
// the factor of element j of row i keep where bit j%64 of
// bits[i·⌈cols/64⌉ + j/64] is set and 0 where it is clear (branch-free,
// as dropoutGeneric).
func dropoutBitsGeneric(d, s []float32, rows, cols int, bits []uint64, keep float32) {
	kb := uint64(math.Float32bits(keep))
	w := (cols + 63) / 64
	for i := 0; i < rows; i++ {
		b := bits[i*w : (i+1)*w]
		dr, sr := d[i*cols:(i+1)*cols], s[i*cols:(i+1)*cols]
		for j, v := range sr {
			k := b[j/64] >> (j % 64) & 1
			dr[j] = v * math.Float32frombits(uint32(kb&-k))
		}
	}
}

// rowSeed is the seed of the dropout stream of the row keyed by key.
func rowSeed(seed uint64, key int32) uint64 {
	return seed ^ uint64(uint32(key))*0x9e3779b97f4a7c15
}

// DropoutMaskSegments is DropoutMask with segment i's factors,
// mask[offsets[i]:offsets[i+1]], keyed by (seed, keys[i]) instead of their
// positions: GAT's attention dropout keys each destination's edges by its
// node id, so a node's attention is dropped alike in every minibatch,
// rank or process that computes it. offsets has len(keys)+1 increasing
// entries from 0 to len(mask).
func DropoutMaskSegments(mask Matrix, p float64, seed uint64, offsets []int64, keys []int32) error {
	if !(p >= 0 && p < 1) {
		return fmt.Errorf("tensor: DropoutMaskSegments: probability %v not in [0, 1)", p)
	}
	if len(offsets) != len(keys)+1 || offsets[0] != 0 || offsets[len(keys)] != int64(len(mask.Data)) {
		return fmt.Errorf("tensor: DropoutMaskSegments: %d offsets for %d keys over %d values", len(offsets), len(keys), len(mask.Data))
	}
	for i := range keys {
		if offsets[i+1] < offsets[i] {
			return fmt.Errorf("tensor: DropoutMaskSegments: offsets decrease at %d", i)
		}
	}
	dc := newDropCode(p)
	return parallelFor(len(keys), 256, func(lo, hi int) {
		var r rng.Rand
		for i := lo; i < hi; i++ {
			r.Seed(rowSeed(seed, keys[i]))
			segmentFactors(mask.Data[offsets[i]:offsets[i+1]], &r, dc)
		}
	})
}

// DropoutMask fills mask with the dropout factors (0, or 1/(1-p) for kept
// elements) that Dropout draws for seed, without an input to scale: the
// attention dropout of GAT multiplies these into its coefficients.
func DropoutMask(mask Matrix, p float64, seed uint64) error {
	if !(p >= 0 && p < 1) {
		return fmt.Errorf("tensor: DropoutMask: probability %v not in [0, 1)", p)
	}
	return drawDropout(nil, mask.Data, nil, false, p, seed)
}

// drawDropout draws the dropout factors for len(mask or x) elements into
// mask (unless noMask) and, when x is not nil, dst = x * factor.
//
// Dropout runs over every input feature each step, so it must be cheap:
// a concrete wyrand stream per chunk (math/rand/v2 through its interface
// made it the most expensive op of a GCN epoch), four 16-bit lanes per
// draw (64 one-bit lanes at p = 1/2: dropCode), a branch-free keep/drop
// choice, and chunks in parallel.
func drawDropout(dst, mask, x []float32, noMask bool, p float64, seed uint64) error {
	dc := newDropCode(p)
	n := len(x)
	if x == nil {
		n = len(mask)
	}
	chunks := (n + dropoutChunk - 1) / dropoutChunk
	return timedRows(n, chunks, 4, func(lo, hi int) {
		for ch := lo; ch < hi; ch++ {
			r := rng.New(rng.Derive(seed, uint64(ch)))
			i0, i1 := ch*dropoutChunk, min((ch+1)*dropoutChunk, n)
			var ms []float32
			if !noMask {
				ms = mask[i0:i1]
			}
			if ms == nil && x != nil {
				dropoutStream(dst[i0:i1], x[i0:i1], r, dc)
				continue
			}
			m, lm, thr, w := dc.walk()
			fs := dc.factors
			var v uint64
			for i := 0; i < i1-i0; i++ {
				if i&m == 0 {
					v = r.Uint64()
				}
				k := kept(v&lm, thr)
				v >>= w
				f := fs[k]
				if ms != nil {
					ms[i] = f
				}
				if x != nil {
					dst[i0+i] = x[i0+i] * f
				}
			}
		}
	})
}

// dropoutLanes is the number of 16-bit lanes a dropout kernel draws ahead
// and then applies in one pass.
const dropoutLanes = 4096

// lanePool holds dropout lane buffers (dropoutLanes long). A stack
// buffer handed to a kernel set's function (an indirect call) escapes to
// the heap, so the buffers are pooled instead: no allocation per call.
var lanePool = sync.Pool{New: func() any {
	b := make([]uint16, dropoutLanes)
	return &b
}}

func getLanes() *[]uint16 { return lanePool.Get().(*[]uint16) }

// putLanes returns a buffer from getLanes (nil: none).
func putLanes(b *[]uint16) {
	if b != nil {
		lanePool.Put(b)
	}
}

// dropoutStream sets d = s ⊙ factor for the factors the stream r draws
// (one lane of dc's width per element, lowest first): the lanes are drawn
// a buffer at a time and applied by the kernel set's dropout.
func dropoutStream(d, s []float32, r *rng.Rand, dc dropCode) {
	lp := getLanes()
	defer putLanes(lp)
	buf := *lp
	for off := 0; off < len(s); off += len(buf) {
		lanes := buf[:min(len(buf), len(s)-off)]
		r.Lanes(lanes, dc.width)
		ks().dropout(d[off:off+len(lanes)], s[off:off+len(lanes)], lanes, dc.thr, dc.factors[1])
	}
}

// dropoutGeneric sets d[i] = s[i] * factor, the factor being keep where
// lanes[i] >= thr and 0 below (branch-free); nil s stands for ones, so d
// receives the factors themselves.
func dropoutGeneric(d, s []float32, lanes []uint16, thr uint64, keep float32) {
	kb := uint64(math.Float32bits(keep))
	lanes = lanes[:len(d)]
	for i, l := range lanes {
		f := math.Float32frombits(uint32(kb & -kept(uint64(l), thr)))
		if s != nil {
			f *= s[i]
		}
		d[i] = f
	}
}

// DropoutFactors returns the factors Dropout multiplies a dropped and a
// kept element by for probability p: 0 and float32(1/(1-p)).
func DropoutFactors(p float64) (dropped, kept float32) {
	f := newDropCode(p).factors
	return f[0], f[1]
}

// DropoutLaneWidth returns the bits of its stream each element's dropout
// choice takes for probability p (rng.Lanes' width): 1 for p = 1/2,
// which one bit decides exactly, 16 for every other p (16-bit
// resolution).
func DropoutLaneWidth(p float64) uint { return newDropCode(p).width }

// dropCode is how a dropout of probability p turns the draws of its
// streams into choices: each element takes the next lane of width bits
// (rng.Lanes, lowest first), widened to 16 bits; it is dropped where the
// lane is below thr = round(p·65536) and kept, scaled by 1/(1-p),
// elsewhere. One bit decides p = 1/2 (the default of most models: not
// GAT's or GCNII's 0.6) exactly, so such a dropout takes a sixteenth of
// the draws that 16-bit lanes take, and the draws were most of its cost.
type dropCode struct {
	thr     uint64
	factors [2]float32 // a dropped element's and a kept one's
	width   uint
}

func newDropCode(p float64) dropCode {
	dc := dropCode{thr: uint64(math.Round(p * 65536)), factors: [2]float32{0, float32(1 / (1 - p))}, width: 16}
	if p == 0.5 {
		dc.width = 1
	}
	return dc
}

// per is the number of lanes a draw holds, a power of two: element i of
// a stream is lane i&(per-1) of its draw i/per.
func (dc dropCode) per() int { return 64 / int(dc.width) }

// kept returns 1 where a lane (of at most 63 bits) is at or above thr,
// the element kept, and 0 below, dropped, without a branch: the index of
// its factor in dropCode.factors.
func kept(lane, thr uint64) uint64 { return (1 ^ (lane-thr)>>63) & 1 }

// walk returns what a scalar loop through a stream keeps in registers:
// the mask m of a lane's index in its draw (a new draw where i&m == 0),
// the mask lm of the lowest lane of a draw v, the threshold thr of the
// lane unwidened (v&lm below it: dropped), and the width to shift v by
// to the next lane. One shift by a loop-invariant amount an element
// (masked, so Go adds no check for counts over 63): these loops ran
// 1.5-2× slower with the lane widened first, and 2-3× through a method
// that kept v in memory.
func (dc dropCode) walk() (m int, lm, thr uint64, width uint) {
	lm = 1<<dc.width - 1
	return dc.per() - 1, lm, dc.thr >> (16 - dc.width), dc.width & 63
}

// LogSoftmax sets each row of dst to the log-softmax of the row of x:
// dst[i, j] = x[i, j] - log Σ_k exp(x[i, k]), computed stably.
func LogSoftmax(dst, x Matrix) error {
	if err := sameShapes("LogSoftmax", dst, x); err != nil {
		return err
	}
	if x.Cols == 0 && x.Rows > 0 {
		return fmt.Errorf("%w: LogSoftmax of rows with no columns", ErrEmpty)
	}
	return timedRows(len(x.Data), x.Rows, 128, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			s, d := x.Row(i), dst.Row(i)
			lse := logSumExp(s)
			for j, v := range s {
				d[j] = v - lse
			}
		}
	})
}

// LogSoftmaxGrad adds the gradient of LogSoftmax to dx given its output y
// and the output gradient dy: dx += dy - exp(y) * Σ_j dy[i, j].
func LogSoftmaxGrad(dx, y, dy Matrix) error {
	if err := sameShapes("LogSoftmaxGrad", dx, y, dy); err != nil {
		return err
	}
	return timedRows(len(y.Data), y.Rows, 128, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			ys, g, d := y.Row(i), dy.Row(i), dx.Row(i)
			var s float32
			for _, v := range g {
				s += v
			}
			for j, v := range ys {
				d[j] += g[j] - float32(math.Exp(float64(v)))*s
			}
		}
	})
}

// NLLLoss returns the mean negative log-likelihood -mean_i logp[i, labels[i]]
// over the rows whose label is >= 0 (a negative label marks a row to ignore)
// and the number of rows counted. logp is typically LogSoftmax output.
func NLLLoss(logp Matrix, labels []int32) (loss float32, count int, err error) {
	if err := logp.Validate(); err != nil {
		return 0, 0, err
	}
	if len(labels) != logp.Rows {
		return 0, 0, fmt.Errorf("%w: NLLLoss: %d labels for %d rows", ErrShape, len(labels), logp.Rows)
	}
	return meanNLL("NLLLoss", labels, logp.Cols, func(i, y int) float32 { return logp.At(i, y) })
}

// meanNLL returns -mean_i logp(i, labels[i]) over the rows whose label is
// >= 0, summed in row order, and their count, or an error naming op at
// the first label not below cols.
func meanNLL(op string, labels []int32, cols int, logp func(i, y int) float32) (loss float32, count int, err error) {
	var sum float64
	for i, y := range labels {
		if y < 0 {
			continue
		}
		if int(y) >= cols {
			return 0, 0, fmt.Errorf("%w: %s: label %d of row %d not below %d classes", ErrShape, op, y, i, cols)
		}
		sum -= float64(logp(i, int(y)))
		count++
	}
	if count == 0 {
		return 0, 0, nil
	}
	return float32(sum / float64(count)), count, nil
}

// NLLLossGrad adds g * d(NLLLoss)/d(logp) to dlogp: -g/count at each
// labelled (row, label) position.
func NLLLossGrad(dlogp Matrix, labels []int32, count int, g float32) error {
	if len(labels) != dlogp.Rows {
		return fmt.Errorf("%w: NLLLossGrad: %d labels for %d rows", ErrShape, len(labels), dlogp.Rows)
	}
	if count == 0 {
		return nil
	}
	f := -g / float32(count)
	for i, y := range labels {
		if y >= 0 {
			dlogp.Data[i*dlogp.Cols+int(y)] += f
		}
	}
	return nil
}

// CrossEntropy returns NLLLoss(LogSoftmax(x), labels), bitwise, and the
// number of rows counted, computing the log-softmax at the labelled rows
// (label >= 0) only: in full-graph training on Cora, 140 of 2708. It sets
// lse[i] (len(lse) must be x.Rows) to row i's log-sum-exp at those rows,
// for CrossEntropyGrad, and leaves the others alone.
func CrossEntropy(x Matrix, labels []int32, lse []float32) (loss float32, count int, err error) {
	if err := x.Validate(); err != nil {
		return 0, 0, err
	}
	if len(labels) != x.Rows || len(lse) != x.Rows {
		return 0, 0, fmt.Errorf("%w: CrossEntropy: %d labels and %d log-sum-exps for %d rows", ErrShape, len(labels), len(lse), x.Rows)
	}
	if x.Cols == 0 && x.Rows > 0 {
		return 0, 0, fmt.Errorf("%w: CrossEntropy of rows with no columns", ErrEmpty)
	}
	if err := timedRows(len(x.Data), x.Rows, 128, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if labels[i] >= 0 {
				lse[i] = logSumExp(x.Row(i))
			}
		}
	}); err != nil {
		return 0, 0, err
	}
	return meanNLL("CrossEntropy", labels, x.Cols, func(i, y int) float32 { return x.At(i, y) - lse[i] })
}

// logSumExp returns log Σ exp(s[j]), as LogSoftmax computes it.
func logSumExp(s []float32) float32 {
	m := s[0]
	for _, v := range s {
		m = max(m, v)
	}
	var sum float64
	for _, v := range s {
		sum += math.Exp(float64(v - m))
	}
	return m + float32(math.Log(sum))
}

// CrossEntropyGrad adds g·d(CrossEntropy)/dx to dx, given the lse that
// CrossEntropy set and the count it returned: at each labelled row,
// (softmax(x_i) − onehot(labels[i]))·g/count, with the arithmetic of
// LogSoftmaxGrad applied to NLLLossGrad's gradient (bitwise the same);
// the unlabelled rows are left alone (their gradient is zero).
func CrossEntropyGrad(dx, x Matrix, labels []int32, lse []float32, count int, g float32) error {
	if err := sameShapes("CrossEntropyGrad", dx, x); err != nil {
		return err
	}
	if len(labels) != x.Rows || len(lse) != x.Rows {
		return fmt.Errorf("%w: CrossEntropyGrad: %d labels and %d log-sum-exps for %d rows", ErrShape, len(labels), len(lse), x.Rows)
	}
	if count == 0 {
		return nil
	}
	f := -g / float32(count)
	return timedRows(len(x.Data), x.Rows, 128, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			y := int(labels[i])
			if y < 0 {
				continue
			}
			xs, d, l := x.Row(i), dx.Row(i), lse[i]
			for j, v := range xs {
				var gj float32
				if j == y {
					gj = f
				}
				d[j] += gj - float32(math.Exp(float64(v-l)))*f
			}
		}
	})
}

// BCEWithLogits returns the mean over all elements of the binary cross-entropy
// between sigmoid(x) and targets t in [0, 1], computed stably as
// max(x, 0) - x*t + log(1 + exp(-|x|)).
func BCEWithLogits(x, t Matrix) (float32, error) {
	if err := sameShapes("BCEWithLogits", x, t); err != nil {
		return 0, err
	}
	if len(x.Data) == 0 {
		return 0, fmt.Errorf("%w: BCEWithLogits", ErrEmpty)
	}
	var sum float64
	for i, v := range x.Data {
		xv := float64(v)
		sum += math.Max(xv, 0) - xv*float64(t.Data[i]) + math.Log1p(math.Exp(-math.Abs(xv)))
	}
	return float32(sum / float64(len(x.Data))), nil
}

// BCEWithLogitsGrad adds g * (sigmoid(x) - t) / len to dx.
func BCEWithLogitsGrad(dx, x, t Matrix, g float32) error {
	if err := sameShapes("BCEWithLogitsGrad", dx, x, t); err != nil {
		return err
	}
	f := g / float32(len(x.Data))
	for i, v := range x.Data {
		sig := 1 / (1 + math.Exp(-float64(v)))
		dx.Data[i] += f * (float32(sig) - t.Data[i])
	}
	return nil
}

// RowSum writes the sum of each row of x into dst (len x.Rows).
func RowSum(dst []float32, x Matrix) error {
	return rowReduce("RowSum", dst, x, func(r []float32) float32 {
		var s float32
		for _, v := range r {
			s += v
		}
		return s
	})
}

// RowMax writes the maximum of each row of x into dst (len x.Rows).
func RowMax(dst []float32, x Matrix) error {
	return rowReduce("RowMax", dst, x, func(r []float32) float32 {
		m := r[0]
		for _, v := range r {
			m = max(m, v)
		}
		return m
	})
}

// RowArgmax writes the column of the (first) maximum of each row of x into dst.
func RowArgmax(dst []int32, x Matrix) error {
	if err := x.Validate(); err != nil {
		return err
	}
	if len(dst) != x.Rows {
		return fmt.Errorf("%w: RowArgmax: dst has %d elements for %d rows", ErrShape, len(dst), x.Rows)
	}
	if x.Cols == 0 && x.Rows > 0 {
		return fmt.Errorf("%w: RowArgmax of rows with no columns", ErrEmpty)
	}
	for i := range dst {
		r := x.Row(i)
		best := 0
		for j, v := range r {
			if v > r[best] {
				best = j
			}
		}
		dst[i] = int32(best)
	}
	return nil
}

func rowReduce(op string, dst []float32, x Matrix, f func([]float32) float32) error {
	if err := x.Validate(); err != nil {
		return err
	}
	if len(dst) != x.Rows {
		return fmt.Errorf("%w: %s: dst has %d elements for %d rows", ErrShape, op, len(dst), x.Rows)
	}
	if x.Cols == 0 && x.Rows > 0 {
		return fmt.Errorf("%w: %s of rows with no columns", ErrEmpty, op)
	}
	for i := range dst {
		dst[i] = f(x.Row(i))
	}
	return nil
}
