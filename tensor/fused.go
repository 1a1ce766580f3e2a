package tensor

import (
	"fmt"
	"math"

	"github.com/graphmill/graphmill/internal/rng"
)

// Fused element-wise kernels: each does in one pass over memory what
// would otherwise take two or three (a separate activation backward, bias
// gradient, mask multiply and accumulate), and none needs a temporary.

// biasChunk is the number of rows whose column sums ReLUGradBias adds up
// in one partial sum; partials are added in chunk order, so the result
// does not depend on the number of threads.
const biasChunk = 256

// ReLUGradBias computes the gradient gz = dy ⊙ 1[y > 0] before a ReLU
// whose output is y, writing it to gz (which may be dy itself), and, when
// dbias is not nil, adds the column sums of gz to dbias (the gradient of a
// bias added before the ReLU): a ReLU backward fused with its neighbouring
// bias backward. With relu false it only sums dy into dbias (gz unused).
// The column sums are added in fixed chunks of rows, so they are
// reproducible but rounded differently from a row-by-row sum.
func ReLUGradBias(gz, y, dy Matrix, dbias []float32, relu bool) error {
	return ReLUGradBiasScaled(gz, y, dy, dbias, relu, 1)
}

// ReLUGradBiasScaled is ReLUGradBias with gz = scale·dy ⊙ 1[y > 0]: the
// backward of a ReLU whose output was then multiplied by dropout factors
// (0 or scale) in the same op (Epilogue.Dropout), so that y > 0 exactly
// where the ReLU passed and the element was kept. With relu false, scale
// must be 1.
func ReLUGradBiasScaled(gz, y, dy Matrix, dbias []float32, relu bool, scale float32) error {
	if !relu && scale != 1 {
		return fmt.Errorf("tensor: ReLUGradBiasScaled: scale %v without the ReLU", scale)
	}
	if err := sameShapes("ReLUGradBias", y, dy); err != nil {
		return err
	}
	if relu {
		if err := sameShapes("ReLUGradBias", gz, dy); err != nil {
			return err
		}
	} else {
		gz = dy
	}
	if dbias != nil && len(dbias) != dy.Cols {
		return fmt.Errorf("%w: ReLUGradBias: bias gradient has %d values for %d columns", ErrShape, len(dbias), dy.Cols)
	}
	rows, cols := dy.Rows, dy.Cols
	k := ks()
	chunks := (rows + biasChunk - 1) / biasChunk
	var partial []float32
	if dbias != nil {
		partial = getBuf(chunks * cols)
		defer putBuf(partial)
	}
	if t0 := statStart(); t0 != 0 {
		defer statEnd(t0, &eltNs, &eltElems, int64(len(dy.Data)))
	}
	err := parallelFor(chunks, 1, func(lo, hi int) {
		for ch := lo; ch < hi; ch++ {
			var p []float32
			if partial != nil {
				p = partial[ch*cols : (ch+1)*cols]
				clear(p)
			}
			for i := ch * biasChunk; i < min((ch+1)*biasChunk, rows); i++ {
				g, o := dy.Row(i), gz.Row(i)
				if relu {
					k.reluMask(o, g, y.Row(i), scale)
				}
				if p != nil {
					k.axpy(1, o, p) // p += o, bitwise (1·o is exact), vectorised
				}
			}
		}
	})
	if err != nil || dbias == nil {
		return err
	}
	for ch := 0; ch < chunks; ch++ {
		p := partial[ch*cols : (ch+1)*cols]
		for j, v := range p {
			dbias[j] += v
		}
	}
	return nil
}

// BiasAct sets dst = act(x + bias) row by row in one pass (bias, one value
// per column, may be nil; act is ReLU when relu is set, else the
// identity). dst may be x.
func BiasAct(dst, x Matrix, bias []float32, relu bool) error {
	if err := sameShapes("BiasAct", dst, x); err != nil {
		return err
	}
	if bias != nil && len(bias) != x.Cols {
		return fmt.Errorf("%w: BiasAct: bias has %d values for %d columns", ErrShape, len(bias), x.Cols)
	}
	k := ks()
	return timedRows(len(x.Data), x.Rows, 256, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			d := dst.Row(i)
			copy(d, x.Row(i))
			k.biasReLU(d, bias, relu)
		}
	})
}

// DropoutGrad is the backward of Dropout(_, _, x, p, seed) without a
// stored mask: it draws the same factors again from the counter-based
// streams (one per chunk of elements, keyed by seed and chunk index) and
// sets dx = dy ⊙ factor, or adds that to dx with acc. The forward pass
// thus keeps no mask at all, and the backward is one pass.
func DropoutGrad(dx, dy Matrix, p float64, seed uint64, acc bool) error {
	if err := sameShapes("DropoutGrad", dx, dy); err != nil {
		return err
	}
	if !(p >= 0 && p < 1) {
		return fmt.Errorf("tensor: DropoutGrad: probability %v not in [0, 1)", p)
	}
	dc := newDropCode(p)
	n := len(dy.Data)
	chunks := (n + dropoutChunk - 1) / dropoutChunk
	return timedRows(n, chunks, 4, func(lo, hi int) {
		for ch := lo; ch < hi; ch++ {
			r := rng.New(rng.Derive(seed, uint64(ch)))
			i0, i1 := ch*dropoutChunk, min((ch+1)*dropoutChunk, n)
			d, g := dx.Data[i0:i1], dy.Data[i0:i1]
			if !acc {
				dropoutStream(d, g, r, dc)
				continue
			}
			m, lm, thr, w := dc.walk()
			fs := dc.factors
			var v uint64
			for i := range g {
				if i&m == 0 {
					v = r.Uint64()
				}
				k := kept(v&lm, thr)
				v >>= w
				d[i] += g[i] * fs[k]
			}
		}
	})
}

// reluMaskGeneric sets o = g*scale where y > 0 and 0 elsewhere (a NaN y
// gives 0, as the unfused ReLU backward does). It is branch-free: half of a
// ReLU's outputs are 0 in no predictable pattern, and a branch per element
// costs a misprediction every other element.
func reluMaskGeneric(o, g, y []float32, scale float32) {
	g = g[:len(o)]
	y = y[:len(o)]
	for j := range o {
		b := math.Float32bits(y[j])
		// y > 0: sign bit clear, not zero, not NaN (b <= 0x7f800000).
		pos := (b - 1) < 0x7f800000
		keep := uint32(0)
		if pos {
			keep = ^uint32(0)
		}
		o[j] = math.Float32frombits(math.Float32bits(g[j]*scale) & keep)
	}
}

// reluMaskBitsGeneric sets o = g*scale where bit j%8 of bits[j/8] is set
// and +0 elsewhere (the product masked, as reluMaskGeneric masks it).
func reluMaskBitsGeneric(o, g []float32, bits []uint8, scale float32) {
	g = g[:len(o)]
	for j := range o {
		keep := -uint32(bits[j/8] >> (j % 8) & 1)
		o[j] = math.Float32frombits(math.Float32bits(g[j]*scale) & keep)
	}
}

// reluMaskBitsPackGeneric packs rows rows of g*scale masked by bits (as
// reluMaskBitsGeneric masks them; g rows ld floats apart, bits rows
// bstride bytes apart, column j's bit j%8 of byte j/8) into panels whole
// column panels of nr floats (a multiple of 8), panel q at dst[q*stride:]
// with row r at r*nr, and adds each row to db (when not nil) in row
// order: the masked output gradient of a weight gradient's B, packed
// (gemmJob.packBBits), with its column sums, in one pass.
func reluMaskBitsPackGeneric(dst, g []float32, bits []uint8, ld, bstride, rows, panels, nr, stride int, scale float32, db []float32) {
	for r := 0; r < rows; r++ {
		for q := 0; q < panels; q++ {
			o := dst[q*stride+r*nr:][:nr]
			reluMaskBitsGeneric(o, g[r*ld+q*nr:], bits[r*bstride+q*nr/8:], scale)
			if db != nil {
				axpyGeneric(1, o, db[q*nr:][:nr])
			}
		}
	}
}

// positiveGeneric sets bit i%8 of dst[i/8] where seg[i] > 0 (not NaN, not
// zero of either sign) and clears it elsewhere, writing whole bytes.
func positiveGeneric(dst []uint8, seg []float32) {
	for i := 0; i < len(seg); i += 8 {
		var b uint8
		for k, v := range seg[i:min(i+8, len(seg))] {
			if v > 0 {
				b |= 1 << k
			}
		}
		dst[i/8] = b
	}
}

// epilogueGeneric is the kernel set's epilogue as the passes it fuses.
func epilogueGeneric(seg, bias []float32, lanes []uint16, thr uint64, keep float32, pos []uint8) {
	biasReLUGeneric(seg, bias, true)
	dropoutGeneric(seg, seg, lanes, thr, keep)
	if pos != nil {
		positiveGeneric(pos, seg)
	}
}

// biasReLUGeneric sets seg = act(seg + bias) (bias nil: no bias).
func biasReLUGeneric(seg, bias []float32, relu bool) {
	switch {
	case bias != nil && relu:
		b := bias[:len(seg)]
		for i, v := range seg {
			seg[i] = relu0(v + b[i])
		}
	case bias != nil:
		b := bias[:len(seg)]
		for i, v := range seg {
			seg[i] = v + b[i]
		}
	case relu:
		for i, v := range seg {
			seg[i] = relu0(v)
		}
	}
}

// relu0 is max(0, v) keeping a NaN, as the AVX2 kernel computes it.
func relu0(v float32) float32 {
	if v > 0 || v != v {
		return v
	}
	return 0
}
