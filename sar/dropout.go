package sar

import (
	"math"
	"math/bits"

	"github.com/graphmill/graphmill/internal/par"
	"github.com/graphmill/graphmill/internal/rng"
	"github.com/graphmill/graphmill/tensor"
)

// Dropout keyed by global node id: the factor of element (v, c) of a
// matrix whose row v is global node v is a function of (seed, v*cols+c)
// alone, and it is exactly the factor tensor.Dropout draws for that element
// of the whole graph's matrix in one process (its masks come from wyrand
// streams of 2^14 elements, and wyrand can be entered at any position).
// So a rank that holds rows of some nodes draws the masks the single
// process draws for the same nodes, and N ranks train as one process does.

const (
	dropChunk = 1 << 14 // tensor's dropoutChunk
	wyInc     = 0xa0761d6478bd642f
	wyMul     = 0xe7037ed1a0b428db
)

// dropFactors fills mask (len(rows)*cols) with the dropout factors of the
// rows whose global ids are rows, for probability p and seed.
func dropFactors[T int32 | int64](mask []float32, rows []T, cols int, p float64, seed uint64) {
	thr := uint64(math.Round(p * 65536))
	factors := [2]float32{0, float32(1 / (1 - p))}
	par.For(par.Workers(0), len(rows), func(_, lo, hi int) {
		lastCh := int64(-1)
		var base uint64
		for i := lo; i < hi; i++ {
			m := mask[i*cols : (i+1)*cols]
			idx := int64(rows[i]) * int64(cols)
			for c := 0; c < cols; {
				ch := idx / dropChunk
				if ch != lastCh {
					base, lastCh = rng.Mix(rng.Derive(seed, uint64(ch))), ch
				}
				j := idx % dropChunk
				// Draw j/4 of the chunk's stream; lanes j%4.. of it.
				s := base + uint64(j/4+1)*wyInc
				hi, lo := bits.Mul64(s, s^wyMul)
				b := (hi ^ lo) >> (16 * uint(j&3))
				for lane := int(j & 3); lane < 4 && c < cols; lane++ {
					k := 1 ^ ((b&0xffff - thr) >> 63)
					b >>= 16
					m[c] = factors[k&1]
					c++
					idx++
					if idx%dropChunk == 0 {
						break
					}
				}
			}
		}
	})
}

// dropoutRows applies keyed dropout to x, whose row i is global node
// rows[i].
func dropoutRows(x tensor.Matrix, rows []int32, p float64, seed uint64) tensor.Matrix {
	mask := make([]float32, len(x.Data))
	dropFactors(mask, rows, x.Cols, p, seed)
	out := tensor.New(x.Rows, x.Cols)
	for i, v := range x.Data {
		out.Data[i] = v * mask[i]
	}
	return out
}
