//go:build amd64 && !noasm

package tensor

// biasReLUAVX2 sets x[i] = act(x[i] + b[i]) for i < n&^7 (mode bit 0: add
// b; bit 1: ReLU).
//
//go:noescape
func biasReLUAVX2(n int, x, b *float32, mode int)

// reluMaskAVX2 sets o[i] = g[i]*scale where y[i] > 0 and 0 elsewhere, for
// i < n&^7.
//
//go:noescape
func reluMaskAVX2(n int, o, dy, y *float32, scale float32)

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
func reluMaskVec(o, g, y []float32, scale float32) {
	n := len(o) &^ 7
	if n > 0 {
		_, _ = g[len(o)-1], y[len(o)-1]
		reluMaskAVX2(n, &o[0], &g[0], &y[0], scale)
	}
	if n < len(o) {
		reluMaskGeneric(o[n:], g[n:], y[n:], scale)
	}
}

// dropoutAVX2 sets d[i] = s[i] * (lanes[i] > thrm1 ? keep : 0) for i < n&^15.
//
//go:noescape
func dropoutAVX2(n int, d, s *float32, lanes *uint16, thrm1 int32, keep float32)

// dropoutVec is dropoutGeneric with AVX2 for the bulk, 16 elements a step.
func dropoutVec(d, s []float32, lanes []uint16, thr uint64, keep float32) {
	n := len(s) &^ 15
	if n > 0 {
		_, _ = d[n-1], lanes[n-1]
		dropoutAVX2(n, &d[0], &s[0], &lanes[0], int32(thr)-1, keep)
	}
	if n < len(s) {
		dropoutGeneric(d[n:len(s)], s[n:], lanes[n:], thr, keep)
	}
}

// dropoutAVX512 is dropoutAVX2 for i < n&^31 with sixteen elements a
// vector: on cores with full-width AVX-512 units it applies a mask in
// half the instructions (the input dropout of a GraphSAGE step, 5.3M
// values, spent 3.6 % of the step's CPU time in dropoutAVX2 on AMD EPYC
// Zen 5).
//
//go:noescape
func dropoutAVX512(n int, d, s *float32, lanes *uint16, thrm1 int32, keep float32)

// dropoutVec512 is dropoutVec with AVX-512 for the bulk.
func dropoutVec512(d, s []float32, lanes []uint16, thr uint64, keep float32) {
	dropoutBulk(dropoutAVX512, d, s, lanes, thr, keep)
}

// dropoutBulk runs kernel (dropoutAVX512, or a test's stand-in) on the
// first len(s)&^31 elements and dropoutVec on the rest.
func dropoutBulk(kernel func(int, *float32, *float32, *uint16, int32, float32), d, s []float32, lanes []uint16, thr uint64, keep float32) {
	n := len(s) &^ 31
	if n > 0 {
		_, _ = d[n-1], lanes[n-1]
		kernel(n, &d[0], &s[0], &lanes[0], int32(thr)-1, keep)
	}
	if n < len(s) {
		dropoutVec(d[n:len(s)], s[n:], lanes[n:], thr, keep)
	}
}

// dropoutBitsAVX512 is dropoutBitsGeneric: sixteen elements a step, the
// step's factors chosen by sixteen bits loaded straight into a mask
// register, a row's last partial step under a mask.
//
//go:noescape
func dropoutBitsAVX512(d, s *float32, rows, cols int, bits *uint64, keep float32)

// dropoutBitsAVX2 is dropoutBitsAVX512 with AVX2, eight elements a step.
//
//go:noescape
func dropoutBitsAVX2(d, s *float32, rows, cols int, bits *uint64, keep float32)

// dropoutBitsVec512 is dropoutBitsGeneric with AVX-512, dropoutBitsVec
// with AVX2.
func dropoutBitsVec512(d, s []float32, rows, cols int, bits []uint64, keep float32) {
	if dropoutBitsCheck(d, s, rows, cols, bits) {
		dropoutBitsAVX512(&d[0], &s[0], rows, cols, &bits[0], keep)
	}
}

func dropoutBitsVec(d, s []float32, rows, cols int, bits []uint64, keep float32) {
	if dropoutBitsCheck(d, s, rows, cols, bits) {
		dropoutBitsAVX2(&d[0], &s[0], rows, cols, &bits[0], keep)
	}
}

// dropoutBitsCheck reports whether there is work, and panics (an index
// out of range) where d, s or bits is too short for it.
func dropoutBitsCheck(d, s []float32, rows, cols int, bits []uint64) bool {
	if rows <= 0 || cols <= 0 {
		return false
	}
	_, _, _ = d[rows*cols-1], s[rows*cols-1], bits[rows*((cols+63)/64)-1]
	return true
}

// positiveAVX2 sets dst[i] to the bits of seg[8i:8i+8] > 0 (bit k for
// element 8i+k; NaN: not) for i < n/8 (n a multiple of 8).
//
//go:noescape
func positiveAVX2(n int, dst *uint8, seg *float32)

// positiveVec is positiveGeneric with AVX2 for the whole bytes.
func positiveVec(dst []uint8, seg []float32) {
	n := len(seg) &^ 7
	if n > 0 {
		_ = dst[n/8-1]
		positiveAVX2(n, &dst[0], &seg[0])
	}
	if n < len(seg) {
		positiveGeneric(dst[n/8:], seg[n:])
	}
}

// reluMaskBitsAVX2 sets o[i] = g[i]*scale where bit i%8 of bits[i/8] is
// set, +0 elsewhere, for i < n (a multiple of 8).
//
//go:noescape
func reluMaskBitsAVX2(n int, o, dy *float32, bits *uint8, scale float32)

// reluMaskBitsVec is reluMaskBitsGeneric with AVX2 for the bulk.
func reluMaskBitsVec(o, g []float32, bits []uint8, scale float32) {
	n := len(o) &^ 7
	if n > 0 {
		_, _ = g[n-1], bits[n/8-1]
		reluMaskBitsAVX2(n, &o[0], &g[0], &bits[0], scale)
	}
	if n < len(o) {
		reluMaskBitsGeneric(o[n:], g[n:], bits[n/8:], scale)
	}
}

// reluMaskBitsPackAVX2 is reluMaskBitsPackGeneric for nr a multiple of 8
// (pointers to the first elements; ld, bstride, nr and stride as there).
//
//go:noescape
func reluMaskBitsPackAVX2(dst, dy *float32, bits *uint8, ld, bstride, rows, panels, nr, stride int, scale float32, db *float32)

// reluMaskBitsPackVec is reluMaskBitsPackGeneric in AVX2 (nr a multiple
// of 8).
func reluMaskBitsPackVec(dst, g []float32, bits []uint8, ld, bstride, rows, panels, nr, stride int, scale float32, db []float32) {
	if rows <= 0 || panels <= 0 {
		return
	}
	// Bounds, checked once here because the assembly does not.
	_ = g[(rows-1)*ld+panels*nr-1]
	_ = bits[(rows-1)*bstride+(panels*nr+7)/8-1]
	_ = dst[(panels-1)*stride+rows*nr-1]
	var dp *float32
	if db != nil {
		_ = db[panels*nr-1]
		dp = &db[0]
	}
	reluMaskBitsPackAVX2(&dst[0], &g[0], &bits[0], ld, bstride, rows, panels, nr, stride, scale, dp)
}

// epilogueAVX2 sets, for i < n&^7, seg[i] = max(0, seg[i]+bias[i])
// (keeping a NaN) × (lanes[i] > thrm1 ? keep : 0) and, with pos not nil,
// the bits of seg[i] > 0 into pos (bit k of byte i/8 for element
// 8(i/8)+k): the kernel set's epilogue in one pass.
//
//go:noescape
func epilogueAVX2(n int, seg, bias *float32, lanes *uint16, thrm1 int32, keep float32, pos *uint8)

// epilogueAVX512 is epilogueAVX2 for i < n&^15, sixteen elements a vector.
//
//go:noescape
func epilogueAVX512(n int, seg, bias *float32, lanes *uint16, thrm1 int32, keep float32, pos *uint8)

// epilogueVec is epilogueGeneric with AVX2 for the bulk (whole groups of
// eight elements), the rest by the AVX2 passes it fuses.
func epilogueVec(seg, bias []float32, lanes []uint16, thr uint64, keep float32, pos []uint8) {
	epilogueBulk(epilogueAVX2, 8, seg, bias, lanes, thr, keep, pos)
}

// epilogueVec512 is epilogueVec with sixteen elements a vector.
func epilogueVec512(seg, bias []float32, lanes []uint16, thr uint64, keep float32, pos []uint8) {
	epilogueBulk(epilogueAVX512, 16, seg, bias, lanes, thr, keep, pos)
}

// epilogueBulk runs kernel on the first len(seg) rounded down to a
// multiple of w elements and epilogueGeneric's passes, vectorised, on the
// rest (which starts at a whole byte of pos: w is a multiple of 8).
func epilogueBulk(kernel func(int, *float32, *float32, *uint16, int32, float32, *uint8), w int, seg, bias []float32, lanes []uint16, thr uint64, keep float32, pos []uint8) {
	n := len(seg) / w * w
	if n > 0 {
		_, _ = bias[n-1], lanes[n-1]
		var p *uint8
		if pos != nil {
			_ = pos[n/8-1]
			p = &pos[0]
		}
		kernel(n, &seg[0], &bias[0], &lanes[0], int32(thr)-1, keep, p)
	}
	if n < len(seg) {
		rest := seg[n:]
		biasReLUVec(rest, bias[n:len(seg)], true)
		dropoutVec(rest, rest, lanes[n:], thr, keep)
		if pos != nil {
			positiveVec(pos[n/8:], rest)
		}
	}
}
