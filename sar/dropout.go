package sar

import (
	"math"

	"github.com/graphmill/graphmill/internal/par"
	"github.com/graphmill/graphmill/internal/rng"
	"github.com/graphmill/graphmill/tensor"
)

// Dropout keyed by global node id: the factor of element (v, c) of a
// matrix whose row v is global node v is a function of (seed, v*cols+c)
// alone, and it is exactly the factor tensor.Dropout draws for that element
// of the whole graph's matrix in one process (its masks come from wyrand
// streams of 2^14 elements, and wyrand can be entered at any position).
// Its lanes are tensor.DropoutLaneWidth(p) bits wide, as tensor draws them.
// So a rank that holds rows of some nodes draws the masks the single
// process draws for the same nodes, and N ranks train as one process does.

const dropChunk = 1 << 14 // tensor's dropoutChunk

// dropFactors fills mask (len(rows)*cols) with the dropout factors of the
// rows whose global ids are rows, for probability p and seed.
func dropFactors[T int32 | int64](mask []float32, rows []T, cols int, p float64, seed uint64) {
	thr := uint64(math.Round(p * 65536))
	dropped, kept := tensor.DropoutFactors(p)
	factors := [2]float32{dropped, kept}
	w := tensor.DropoutLaneWidth(p)
	per := int64(64 / w) // lanes a draw
	par.For(par.Workers(0), len(rows), func(_, lo, hi int) {
		lastCh := int64(-1)
		var base rng.Rand
		for i := lo; i < hi; i++ {
			m := mask[i*cols : (i+1)*cols]
			idx := int64(rows[i]) * int64(cols)
			for c := 0; c < cols; {
				ch := idx / dropChunk
				if ch != lastCh {
					base.Seed(rng.Derive(seed, uint64(ch)))
					lastCh = ch
				}
				j := idx % dropChunk
				// Draw j/per of the chunk's stream; lanes j%per.. of it.
				r := base
				r.Skip(uint64(j / per))
				v := r.Uint64()
				for lane := j % per; lane < per && c < cols; lane++ {
					k := 1 ^ ((rng.Lane(v, int(lane), w) - thr) >> 63)
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
