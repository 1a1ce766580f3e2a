//go:build amd64 && !noasm

package tensor

import (
	"math"
	"unsafe"

	"github.com/graphmill/graphmill/internal/rng"
)

// biasReLUAVX2 sets x[i] = act(x[i] + b[i]) for i < n&^7 (mode bit 0: add
// b; bit 1: ReLU).
//
//go:noescape
func biasReLUAVX2(n int, x, b *float32, mode int)

// reluMaskAVX2 sets o[i] = g[i] where y[i] > 0 and 0 elsewhere, for i < n&^7.
//
//go:noescape
func reluMaskAVX2(n int, o, dy, y *float32)

// biasReLUVec is biasReLUGeneric with AVX2 for the bulk.
func biasReLUVec(seg, bias []float32, relu bool) {
	if bias == nil && !relu {
		return
	}
	n := len(seg) &^ 7
	if n > 0 {
		mode, bp := 0, &seg[0] // bp: any valid pointer when there is no bias
		if bias != nil {
			mode, bp = 1, &bias[0]
		}
		if relu {
			mode |= 2
		}
		biasReLUAVX2(n, &seg[0], bp, mode)
	}
	if n < len(seg) {
		var b []float32
		if bias != nil {
			b = bias[n:]
		}
		biasReLUGeneric(seg[n:], b, relu)
	}
}

// reluMaskVec is reluMaskGeneric with AVX2 for the bulk.
func reluMaskVec(o, g, y []float32) {
	n := len(o) &^ 7
	if n > 0 {
		_, _ = g[len(o)-1], y[len(o)-1]
		reluMaskAVX2(n, &o[0], &g[0], &y[0])
	}
	if n < len(o) {
		reluMaskGeneric(o[n:], g[n:], y[n:])
	}
}

// dropoutAVX2 sets d[i] = s[i] * (lanes[i] > thrm1 ? keep : 0) for i < n&^15.
//
//go:noescape
func dropoutAVX2(n int, d, s *float32, lanes *uint16, thrm1 int32, keep float32)

// dropoutVec is dropoutApplyGeneric with the draws made first (four 16-bit
// lanes each, the same stream and order) and applied 16 at a time.
func dropoutVec(d, s []float32, r *rng.Rand, thr uint64, keep float32) {
	d = d[:len(s)]
	var draws [256]uint64 // 1024 lanes
	for off := 0; off < len(s); off += 4 * len(draws) {
		m := min(4*len(draws), len(s)-off)
		nd := (m + 3) / 4
		for i := range draws[:nd] {
			draws[i] = r.Uint64()
		}
		lanes := (*[4 * len(draws)]uint16)(unsafe.Pointer(&draws[0]))
		bulk := m &^ 15
		if bulk > 0 {
			dropoutAVX2(bulk, &d[off], &s[off], &lanes[0], int32(thr)-1, keep)
		}
		for i := bulk; i < m; i++ {
			k := 1 ^ ((uint64(lanes[i]) - thr) >> 63)
			d[off+i] = s[off+i] * math.Float32frombits(uint32(uint64(math.Float32bits(keep))&-k))
		}
	}
}
