package tensor

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/graphmill/graphmill/internal/isa"
	"github.com/graphmill/graphmill/internal/rng"
)

// Op says whether a GEMM operand is used as stored or transposed.
type Op uint8

const (
	// NoTrans uses the operand as stored.
	NoTrans Op = iota
	// Trans uses the transpose of the operand.
	Trans
)

// opNames[tA][tB] names a product's ops, "NN" to "TT" (KernelStats.GEMMShapes).
var opNames = [2][2]string{{"NN", "NT"}, {"TN", "TT"}}

// String returns "N" or "T", the BLAS letters.
func (o Op) String() string {
	if o == Trans {
		return "T"
	}
	return "N"
}

// Cache blocking parameters (in elements). kc is the depth of a packed
// panel; mc the rows of A processed against one packed block of B; nc the
// columns of B packed at once. They are chosen so that a kc×NR micro-panel
// of B stays in L1, an mc×kc block of A in L2 and a kc×nc block of B in L3.
const (
	blockMC = 384
	blockNC = 4096
)

// Gemm computes C = alpha*op(A)*op(B) + beta*C using Threads() goroutines.
// op(A) is m×k, op(B) is k×n and C is m×n. With beta == 0, C is only
// written, so it may hold garbage (even NaN) on entry.
//
// Errors: ErrShape if the shapes do not fit, ErrEmpty if m, n or k is zero,
// ErrAlias if C overlaps A or B. Gemm never panics on bad input.
func Gemm(tA, tB Op, alpha float32, a, b Matrix, beta float32, c Matrix) error {
	return GemmThreads(Threads(), tA, tB, alpha, a, b, beta, c)
}

// Epilogue is element-wise work that GemmEpilogue applies to C as each
// block of C gets its final value, while the block is still in cache:
// C[i, j] = act(C[i, j] + Bias[j]). It saves the separate passes over C
// (and their memory traffic) that a bias add and an activation would make.
type Epilogue struct {
	// Bias, when not nil, has one value per column of C, added to every row.
	Bias []float32
	// ReLU clamps negative values to 0 after the bias.
	ReLU bool
	// Dropout, when its P > 0, then multiplies each row of C by the
	// dropout factors of its key, exactly as DropoutRows does: the next
	// layer's input dropout fused into this layer's output.
	Dropout RowDropout
	// Positive, when not nil, gets the bits of C > 0 (NaN: not) at the end,
	// row i's in bytes [i·⌈n/8⌉, (i+1)·⌈n/8⌉), column j's as bit j%8 of
	// byte j/8 (see PositiveStride): the mask of a ReLU (and a fused
	// dropout) that GemmTNMultiReLUBits reads in backward, 1/32 of C's
	// bytes, instead of C itself.
	Positive []uint8

	posStride int      // bytes a row of Positive (check sets it)
	dc        dropCode // Dropout's lanes and factors (check sets it)
}

// PositiveStride is the bytes a row of an Epilogue's Positive bits take
// for an output of cols columns.
func PositiveStride(cols int) int { return (cols + 7) / 8 }

// RowDropout is node-keyed dropout (DropoutRows) of a matrix's rows:
// probability P, row i's factors drawn from the stream of (Seed, Keys[i]).
type RowDropout struct {
	P    float64
	Seed uint64
	Keys []int32
}

func (e *Epilogue) none() bool {
	return e == nil || (e.Bias == nil && !e.ReLU && e.Dropout.P == 0 && e.Positive == nil)
}

// positiveInEpilogue reports whether the epilogue can write Positive's
// bits as it goes: every block of C starts at a multiple of 8 columns
// (the micro-kernels' panels are), so no two workers write one byte.
// Otherwise (the portable kernels' 4-column panels) they are written in a
// pass after the product (positiveAfter).
func positiveInEpilogue() bool {
	k := ks()
	return k.wide.nr%8 == 0 && (k.narrow == nil || k.narrow.nr%8 == 0)
}

// positiveAfter runs product with ep's Positive taken out, then writes
// the bits from C: for kernels whose epilogue cannot write them itself.
func positiveAfter(ep Epilogue, c Matrix, product func(Epilogue) error) error {
	pos := ep.Positive
	ep.Positive = nil
	if err := product(ep); err != nil {
		return err
	}
	st := PositiveStride(c.Cols)
	for i := 0; i < c.Rows; i++ {
		ks().positive(pos[i*st:], c.Row(i))
	}
	return nil
}

// check validates the epilogue for an output with rows×cols elements.
func (e *Epilogue) check(rows, cols int) error {
	if e.Bias != nil && len(e.Bias) != cols {
		return fmt.Errorf("%w: gemm epilogue: bias has %d values for %d columns", ErrShape, len(e.Bias), cols)
	}
	if d := e.Dropout; d.P != 0 {
		if !(d.P > 0 && d.P < 1) {
			return fmt.Errorf("tensor: gemm epilogue: dropout probability %v not in [0, 1)", d.P)
		}
		if len(d.Keys) != rows {
			return fmt.Errorf("%w: gemm epilogue: %d dropout keys for %d rows", ErrShape, len(d.Keys), rows)
		}
		e.dc = newDropCode(d.P)
	}
	e.posStride = PositiveStride(cols)
	if e.Positive != nil && len(e.Positive) < rows*e.posStride {
		return fmt.Errorf("%w: gemm epilogue: %d bytes of positive bits for %d×%d", ErrShape, len(e.Positive), rows, cols)
	}
	return nil
}

// scratch returns a lane buffer for apply when the epilogue has dropout
// (release it with putLanes), nil otherwise.
func (e *Epilogue) scratch() *[]uint16 {
	if e == nil || e.Dropout.P == 0 {
		return nil
	}
	return getLanes()
}

// apply runs the epilogue on seg, the part of row row of C starting at
// column col; lanes (from scratch) is the dropout's scratch.
func (e *Epilogue) apply(seg []float32, row, col int, lanes *[]uint16) {
	var b []float32
	if e.Bias != nil {
		b = e.Bias[col : col+len(seg)]
	}
	k := ks()
	if k.epilogue != nil && b != nil && e.ReLU && e.Dropout.P != 0 && col%e.dc.per()+len(seg) <= len(*lanes) {
		// A training layer's epilogue in one pass over seg: the row's
		// dropout lanes drawn first.
		lead := col % e.dc.per()
		r := e.rowStream(row, col)
		ln := (*lanes)[:lead+len(seg)]
		r.Lanes(ln, e.dc.width)
		var pos []uint8
		if e.Positive != nil {
			pos = e.Positive[row*e.posStride+col/8:]
		}
		k.epilogue(seg, b, ln[lead:], e.dc.thr, e.dc.factors[1], pos)
		return
	}
	k.biasReLU(seg, b, e.ReLU)
	if e.Dropout.P != 0 {
		e.dropout(seg, row, col, lanes)
	}
	if e.Positive != nil {
		ks().positive(e.Positive[row*e.posStride+col/8:], seg)
	}
}

// dropout multiplies seg, the part of row row of C from column col, by the
// row's dropout factors from that column on.
func (e *Epilogue) dropout(seg []float32, row, col int, lanes *[]uint16) {
	r := e.rowStream(row, col)
	buf := *lanes
	lead := col % e.dc.per()
	for off := 0; off < len(seg); {
		// After the first part, each starts on a draw: the buffer holds
		// whole draws.
		lanes := buf[:min(len(buf), lead+len(seg)-off)]
		r.Lanes(lanes, e.dc.width)
		n := len(lanes) - lead
		ks().dropout(seg[off:off+n], seg[off:off+n], lanes[lead:], e.dc.thr, e.dc.factors[1])
		off, lead = off+n, 0
	}
}

// rowStream returns row row's dropout stream at the draw of column col:
// the draws of the columns before it skipped (per lanes each), so its
// next col%per lanes are those of the columns before col in that draw.
func (e *Epilogue) rowStream(row, col int) rng.Rand {
	var r rng.Rand
	r.Seed(rowSeed(e.Dropout.Seed, e.Dropout.Keys[row]))
	r.Skip(uint64(col / e.dc.per()))
	return r
}

// GemmEpilogue is Gemm followed by ep on every element of C (bias add then
// ReLU), fused: each block of C gets the epilogue as soon as its last
// depth block has been added, instead of in a separate pass.
func GemmEpilogue(tA, tB Op, alpha float32, a, b Matrix, beta float32, c Matrix, ep Epilogue) error {
	if err := ep.check(c.Rows, c.Cols); err != nil {
		return err
	}
	if ep.Positive != nil && !positiveInEpilogue() {
		return positiveAfter(ep, c, func(ep Epilogue) error { return GemmEpilogue(tA, tB, alpha, a, b, beta, c, ep) })
	}
	var e *Epilogue
	if !ep.none() {
		e = &ep
	}
	return gemmThreads(Threads(), tA, tB, alpha, a, b, beta, c, e)
}

// GemmThreads is Gemm with an explicit number of goroutines (threads <= 0
// means Threads()).
func GemmThreads(threads int, tA, tB Op, alpha float32, a, b Matrix, beta float32, c Matrix) error {
	return gemmThreads(threads, tA, tB, alpha, a, b, beta, c, nil)
}

func gemmThreads(threads int, tA, tB Op, alpha float32, a, b Matrix, beta float32, c Matrix, ep *Epilogue) error {
	if tA > Trans || tB > Trans {
		return fmt.Errorf("gemm: ops %d and %d: want NoTrans or Trans", tA, tB)
	}
	for _, x := range []struct {
		name string
		m    Matrix
	}{{"A", a}, {"B", b}, {"C", c}} {
		if err := x.m.Validate(); err != nil {
			return fmt.Errorf("gemm: operand %s: %w", x.name, err)
		}
	}
	m, k := a.Rows, a.Cols
	if tA == Trans {
		m, k = a.Cols, a.Rows
	}
	kb, n := b.Rows, b.Cols
	if tB == Trans {
		kb, n = b.Cols, b.Rows
	}
	if k != kb || c.Rows != m || c.Cols != n {
		return fmt.Errorf("%w: gemm %s%s: op(A) %d×%d, op(B) %d×%d, C %d×%d",
			ErrShape, tA, tB, m, k, kb, n, c.Rows, c.Cols)
	}
	if m == 0 || n == 0 || k == 0 {
		return fmt.Errorf("%w: gemm %s%s: op(A) %d×%d, op(B) %d×%d", ErrEmpty, tA, tB, m, k, kb, n)
	}
	if overlaps(c.Data, a.Data) || overlaps(c.Data, b.Data) {
		return fmt.Errorf("%w: gemm output C", ErrAlias)
	}
	if threads <= 0 {
		threads = Threads()
	}
	if t0 := statStart(); t0 != 0 {
		defer statEndGEMM(t0, opNames[tA][tB], m, n, k)
	}
	if m <= 128 && n >= 8*m || deepNarrowGrad(tA, tB, m, n, k) {
		return gemmSwapped(threads, tA, tB, alpha, a, b, beta, c, ep)
	}
	return gemm(threads, tA, tB, alpha, a, b, beta, c, ep)
}

// gemmSwapped computes a product with few rows and many columns (such as
// the weight gradient dYᵀ·X of a layer stored as out×in) as its transpose
// Cᵀ = op(B)ᵀ·op(A)ᵀ into a scratch matrix, then adds that to C. The large
// operand then plays A, which the kernels read in place (streaming it once)
// instead of packing it.
func gemmSwapped(threads int, tA, tB Op, alpha float32, a, b Matrix, beta float32, c Matrix, ep *Epilogue) error {
	m, n := c.Rows, c.Cols
	t := Matrix{Rows: n, Cols: m, Data: getBuf(n * m)}
	defer putBuf(t.Data)
	if err := gemm(threads, flipOp(tB), flipOp(tA), alpha, b, a, 0, t, nil); err != nil {
		return err
	}
	addTransposed(c, t.Data, beta, ep)
	return nil
}

// addTransposed sets C = beta·C + Tᵀ, then applies ep, where t holds T
// (C.Cols × C.Rows) row-major.
func addTransposed(c Matrix, t []float32, beta float32, ep *Epilogue) {
	lanes := ep.scratch()
	defer putLanes(lanes)
	m, n := c.Rows, c.Cols
	for i := 0; i < m; i++ {
		row := c.Data[i*n : (i+1)*n]
		for jj := range row {
			v := t[jj*m+i]
			switch beta {
			case 0:
				row[jj] = v
			case 1:
				row[jj] += v
			default:
				row[jj] = beta*row[jj] + v
			}
		}
		if ep != nil {
			ep.apply(row, i, 0, lanes)
		}
	}
}

// GemmTNMulti sets C[t] = beta·C[t] + alpha·Gᵀ·X[t] for every t: the
// weight gradients of the inputs X[t] of one output gradient G (the terms
// of a Dense layer). Where each product is a deep, narrow weight gradient
// (see deepNarrowGrad) they are computed as one transposed product whose
// rows are the X[t]'s columns side by side, so G, the large operand, is
// packed once for all of them instead of once per product. With alpha 1
// the results are bitwise those of separate Gemm(Trans, NoTrans) calls
// (on several threads, where both split the depth, as they do for deep
// products); otherwise they agree to float32 rounding.
func GemmTNMulti(alpha float32, g Matrix, xs []Matrix, beta float32, cs []Matrix) error {
	return gemmTNMulti(alpha, g, reluMaskOf{}, 0, xs, beta, cs, nil, nil)
}

// GemmTNMultiReLU is GemmTNMulti(1, G, xs, beta, cs) of the gradient
// G = scale·dY ⊙ 1[Y > 0] behind a ReLU (and dropout) output Y, which it
// never stores: where the products share one packing of G (see
// GemmTNMulti), G is masked as it is packed and dbias, when not nil, gets
// G's column sums added in the same pass, instead of a separate pass of
// ReLUGradBiasScaled writing G and a second reading it (a GraphSAGE first
// layer's backward, whose inputs need no gradient; see ReLUGradFused).
// Elsewhere it runs those two, G in scratch memory. The weight gradients are bitwise those of the two-pass way;
// dbias agrees to float32 rounding (summed by depth chunk, not row chunk).
func GemmTNMultiReLU(dy, y Matrix, scale float32, xs []Matrix, beta float32, cs []Matrix, dbias []float32) error {
	if err := sameShapes("GemmTNMultiReLU", y, dy); err != nil {
		return err
	}
	if dbias != nil && len(dbias) != dy.Cols {
		return fmt.Errorf("%w: GemmTNMultiReLU: bias gradient has %d values for %d columns", ErrShape, len(dbias), dy.Cols)
	}
	return gemmTNMulti(1, dy, reluMaskOf{y: y.Data}, scale, xs, beta, cs, dbias, nil)
}

// GemmTNMultiReLUBits is GemmTNMultiReLU with the ReLU's mask given as
// the bits of Y > 0 that Y's epilogue wrote (Epilogue.Positive, laid out
// for dy's columns) instead of Y: the same results, bitwise, reading 1/32
// of Y's bytes. The products must share one packing of dy
// (ReLUGradFused of dy's shape and the inputs' widths).
func GemmTNMultiReLUBits(dy Matrix, positive []uint8, scale float32, xs []Matrix, beta float32, cs []Matrix, dbias []float32) error {
	return gemmTNMultiReLUBits("GemmTNMultiReLUBits", dy, positive, scale, xs, beta, cs, dbias, nil)
}

// GemmTNMultiReLUBitsRows is GemmTNMultiReLUBits where dy's rows are
// written by rows(lo, hi), which the product calls for each block of rows
// just before it reads them (each row once; blocks on several goroutines
// at once): a gradient made a block at a time while it is in cache
// (AggregateGradRowsFunc) instead of through memory whole. Every row of
// dy is written by the time it returns.
func GemmTNMultiReLUBitsRows(dy Matrix, positive []uint8, scale float32, xs []Matrix, beta float32, cs []Matrix, dbias []float32, rows func(lo, hi int)) error {
	if rows == nil {
		return errors.New("tensor: GemmTNMultiReLUBitsRows: no rows function")
	}
	return gemmTNMultiReLUBits("GemmTNMultiReLUBitsRows", dy, positive, scale, xs, beta, cs, dbias, rows)
}

func gemmTNMultiReLUBits(op string, dy Matrix, positive []uint8, scale float32, xs []Matrix, beta float32, cs []Matrix, dbias []float32, rows func(lo, hi int)) error {
	if err := dy.Validate(); err != nil {
		return fmt.Errorf("gemm: operand dY: %w", err)
	}
	if st := PositiveStride(dy.Cols); len(positive) < dy.Rows*st {
		return fmt.Errorf("%w: %s: %d bytes of bits for dY %d×%d", ErrShape, op, len(positive), dy.Rows, dy.Cols)
	}
	if dbias != nil && len(dbias) != dy.Cols {
		return fmt.Errorf("%w: %s: bias gradient has %d values for %d columns", ErrShape, op, len(dbias), dy.Cols)
	}
	widths := make([]int, len(xs))
	for i, x := range xs {
		widths[i] = x.Cols
	}
	if !ReLUGradFused(dy.Rows, dy.Cols, widths) {
		return fmt.Errorf("tensor: %s: products of dY %d×%d and inputs %v do not share dY's packing (ReLUGradFused)", op, dy.Rows, dy.Cols, widths)
	}
	return gemmTNMulti(1, dy, reluMaskOf{bits: positive, stride: PositiveStride(dy.Cols)}, scale, xs, beta, cs, dbias, rows)
}

// reluMaskOf is where a weight gradient's output gradient G gets its ReLU
// mask from: Y's values laid out as G (y), or the bits of Y > 0, stride
// bytes a row (bits); neither: no mask.
type reluMaskOf struct {
	y      []float32
	bits   []uint8
	stride int
}

func (r reluMaskOf) none() bool { return r.y == nil && r.bits == nil }

// fromRow returns the mask from row p of G on.
func (r reluMaskOf) fromRow(p, ld int) reluMaskOf {
	if r.bits != nil {
		r.bits = r.bits[p*r.stride:]
		return r
	}
	if r.y != nil {
		r.y = r.y[p*ld:]
	}
	return r
}

// apply sets o = scale·g ⊙ mask for the n columns of row p of G from
// column col on (col a multiple of 8 with bits).
func (r reluMaskOf) apply(o, g []float32, p, ld, col int, scale float32) {
	if r.bits != nil {
		ks().reluMaskBits(o, g, r.bits[p*r.stride+col/8:], scale)
		return
	}
	ks().reluMask(o, g, r.y[p*ld+col:][:len(o)], scale)
}

// ReLUGradFused reports whether GemmTNMulti computes the weight gradients
// of inputs of these widths from an output gradient of rows×cols as one
// shared product (several deep, narrow products, see deepNarrowGrad), and
// so whether GemmTNMultiReLU masks the gradient as it packs it instead of
// storing it first.
func ReLUGradFused(rows, cols int, widths []int) bool {
	shared := len(widths) > 1
	for _, w := range widths {
		shared = shared && sharesG(rows, cols, w)
	}
	return shared
}

// sharesG reports whether the weight gradient of an input of width w
// from an output gradient of rows×cols can join GemmTNMulti's shared
// product (a deep, narrow one).
func sharesG(rows, cols, w int) bool {
	return rows > 0 && cols > 0 && w > 0 && deepNarrowGrad(Trans, NoTrans, cols, w, rows)
}

// gemmTNMulti is GemmTNMulti of G, or, with mask (Y's values, laid out as
// G), of scale·G ⊙ 1[mask > 0] with its column sums added to dbias.
func gemmTNMulti(alpha float32, g Matrix, mask reluMaskOf, scale float32, xs []Matrix, beta float32, cs []Matrix, dbias []float32, rows func(lo, hi int)) error {
	if len(xs) != len(cs) {
		return fmt.Errorf("%w: GemmTNMulti: %d inputs for %d outputs", ErrShape, len(xs), len(cs))
	}
	if err := g.Validate(); err != nil {
		return fmt.Errorf("gemm: operand G: %w", err)
	}
	shared := len(xs) > 1 // one product for all (ReLUGradFused)
	total := 0
	for i, x := range xs {
		c := cs[i]
		if err := x.Validate(); err != nil {
			return fmt.Errorf("gemm: operand X[%d]: %w", i, err)
		}
		if err := c.Validate(); err != nil {
			return fmt.Errorf("gemm: operand C[%d]: %w", i, err)
		}
		if x.Rows != g.Rows || c.Rows != g.Cols || c.Cols != x.Cols {
			return fmt.Errorf("%w: GemmTNMulti: G %d×%d, X[%d] %d×%d, C[%d] %d×%d", ErrShape, g.Rows, g.Cols, i, x.Rows, x.Cols, i, c.Rows, c.Cols)
		}
		if overlaps(c.Data, g.Data) || overlaps(c.Data, x.Data) {
			return fmt.Errorf("%w: gemm output C[%d]", ErrAlias, i)
		}
		for _, o := range cs[:i] {
			if overlaps(c.Data, o.Data) {
				return fmt.Errorf("%w: gemm outputs C[%d] overlap", ErrAlias, i)
			}
		}
		shared = shared && sharesG(g.Rows, g.Cols, x.Cols)
		total += x.Cols
	}
	if !shared { // rows is nil here: gemmTNMultiReLUBits checked ReLUGradFused
		if mask.y != nil { // G first, then the products
			gz := Matrix{Rows: g.Rows, Cols: g.Cols, Data: getBuf(len(g.Data))}
			defer putBuf(gz.Data)
			if err := ReLUGradBiasScaled(gz, Matrix{Rows: g.Rows, Cols: g.Cols, Data: mask.y}, g, dbias, true, scale); err != nil {
				return err
			}
			g = gz
		}
		for i := range xs {
			if err := Gemm(Trans, NoTrans, alpha, g, xs[i], beta, cs[i]); err != nil {
				return err
			}
		}
		return nil
	}
	m, k := g.Cols, g.Rows
	if t0 := statStart(); t0 != 0 {
		defer statEndGEMM(t0, "TN+", total, m, k)
	}
	// Tᵀ = [X[0] X[1] ...]ᵀ·G: total × m, op(A) read from the parts.
	t := getBuf(total * m)
	defer putBuf(t)
	j := newGemmJob(Trans, NoTrans, alpha, xs[0], g, 0, Matrix{Rows: total, Cols: m, Data: t}, nil)
	j.m = total
	j.mask, j.maskScale, j.db, j.rows = mask, scale, dbias, rows
	j.a, j.parts = nil, make([]aPart, len(xs))
	for i, x := range xs {
		j.parts[i] = aPart{a: x.Data, ld: x.Cols, cols: x.Cols}
	}
	if err := j.runParallel(Threads()); err != nil {
		return err
	}
	off := 0
	for _, c := range cs {
		addTransposed(c, t[off*m:], beta, nil)
		off += c.Cols
	}
	return nil
}

// GemmNTMulti sets C = act(beta·C + Σ_t X[t]·W[t]ᵀ + bias) (ep), the
// output of a Dense layer with several inputs, each weight stored [out,
// in]. Where the weights together are small enough to be packed whole, it
// is one product over the depth of all terms: each block of C gets every
// term's contribution while it is in cache, so C goes through memory once
// instead of once per term. The results are bitwise those of separate
// GemmEpilogue calls (the first with beta, the others accumulating, the
// last applying ep).
func GemmNTMulti(xs, ws []Matrix, beta float32, c Matrix, ep Epilogue) error {
	if len(xs) != len(ws) || len(xs) == 0 {
		return fmt.Errorf("%w: GemmNTMulti: %d inputs for %d weights", ErrShape, len(xs), len(ws))
	}
	if err := ep.check(c.Rows, c.Cols); err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return fmt.Errorf("gemm: operand C: %w", err)
	}
	if ep.Positive != nil && !positiveInEpilogue() {
		return positiveAfter(ep, c, func(ep Epilogue) error { return GemmNTMulti(xs, ws, beta, c, ep) })
	}
	m, n, ktot := c.Rows, c.Cols, 0
	for i, x := range xs {
		w := ws[i]
		if err := x.Validate(); err != nil {
			return fmt.Errorf("gemm: operand X[%d]: %w", i, err)
		}
		if err := w.Validate(); err != nil {
			return fmt.Errorf("gemm: operand W[%d]: %w", i, err)
		}
		if x.Rows != m || w.Rows != n || w.Cols != x.Cols || x.Cols == 0 {
			return fmt.Errorf("%w: GemmNTMulti: C %d×%d, X[%d] %d×%d, W[%d] %d×%d", ErrShape, m, n, i, x.Rows, x.Cols, i, w.Rows, w.Cols)
		}
		if overlaps(c.Data, x.Data) || overlaps(c.Data, w.Data) {
			return fmt.Errorf("%w: gemm output C", ErrAlias)
		}
		ktot += x.Cols
	}
	nr := ks().wide.nr
	if len(xs) == 1 || m == 0 || n == 0 || m <= 128 && n >= 8*m || ktot*min(blockNC, (n+nr-1)/nr*nr) > fullDepthLimit {
		for i := range xs {
			e := Epilogue{}
			if i == len(xs)-1 {
				e = ep
			}
			if i > 0 {
				beta = 1
			}
			if err := GemmEpilogue(NoTrans, Trans, 1, xs[i], ws[i], beta, c, e); err != nil {
				return err
			}
		}
		return nil
	}
	if t0 := statStart(); t0 != 0 {
		defer statEndGEMM(t0, "NT+", m, n, ktot)
	}
	var e *Epilogue
	if !ep.none() {
		e = &ep
	}
	j := newGemmJob(NoTrans, Trans, 1, xs[0], ws[0], beta, c, e)
	j.terms = make([]depthTerm, len(xs))
	for i, x := range xs {
		t := newGemmJob(NoTrans, Trans, 1, x, ws[i], beta, c, e)
		j.terms[i] = depthTerm{a: t.a, rsA: t.rsA, b: t.b, ldb: t.ldb, k: t.k, kc: t.kc}
	}
	return j.runParallel(Threads())
}

// deepNarrowGrad reports a weight gradient Xᵀ·dY (A transposed, deep k)
// with few output columns and many rows, e.g. dW = dYᵀ·X of a layer
// stored [out, in] with in <= max(4 column panels, 128): computed
// directly, A would be streamed from memory once per column panel (it is
// k×m, megabytes); swapped, the narrow operand becomes the packed A and
// the wide one is packed once, so each input is read once. (Up to 128
// columns on AVX2, 8 panels: GraphSAGE's first-layer weight gradients,
// 256 outputs × 100 inputs over 13.8k nodes, run 1.06× faster swapped one
// by one and 1.12× as GemmTNMulti's one shared product.)
//
// Not when a micro-kernel that prefetches its A ahead (microKernel.ahead)
// covers the output in one full panel (n == its nr): computed directly, A
// is then read once, in place, and C written without an edge tile, which
// measured 2.6× faster than swapping with AVX-512's narrow kernel (GCN's
// hidden 16 on Cora's 1433 features: 68 → 175 GFLOP/s), and with AVX2's
// 6×16 kernel 73-75 GFLOP/s against 52 (Intel Xeon). With a partial panel
// (n < nr) the edge tile costs more, and swapping wins.
func deepNarrowGrad(tA, tB Op, m, n, k int) bool {
	set := ks()
	if mk := set.forCols(n); n == mk.nr && mk.ahead != nil {
		return false
	}
	nr := set.wide.nr
	return tA == Trans && tB == NoTrans && k >= 1024 && n <= max(4*nr, 128) && m > 4*nr
}

func flipOp(o Op) Op {
	if o == Trans {
		return NoTrans
	}
	return Trans
}

// gemm runs a validated product.
func gemm(threads int, tA, tB Op, alpha float32, a, b Matrix, beta float32, c Matrix, ep *Epilogue) error {
	return newGemmJob(tA, tB, alpha, a, b, beta, c, ep).runParallel(threads)
}

// newGemmJob sets up a validated product: its micro-kernel, whether A is
// packed or streamed, and its depth blocks.
func newGemmJob(tA, tB Op, alpha float32, a, b Matrix, beta float32, c Matrix, ep *Epilogue) *gemmJob {
	m, k := a.Rows, a.Cols
	rsA, csA := a.Cols, 1
	if tA == Trans {
		m, k = a.Cols, a.Rows
		rsA, csA = 1, a.Cols
	}
	n := b.Cols
	if tB == Trans {
		n = b.Rows
	}
	mk := ks().forCols(n)
	j := &gemmJob{
		m: m, n: n, k: k,
		a: a.Data, rsA: rsA, csA: csA,
		b: b.Data, transB: tB == Trans, ldb: b.Cols,
		c: c.Data, ldc: c.Cols,
		alpha: alpha, beta: beta, mk: mk, ep: ep, transA: tA == Trans,
	}
	kc := 256 // measured best for packed operands with both the 6×16 and the 12×32 tiles
	if tA == NoTrans && mk.wholeDepth {
		// Deeper, but B's packed depth block no larger than blocks of
		// kc make it for the widest C (kc·blockNC floats, 4 MiB).
		npad := (min(n, blockNC) + mk.nr - 1) / mk.nr * mk.nr
		kc = max(kc, min(inPlaceKC, kc*blockNC/npad))
	}
	// The micro-kernel reads A in place through its strides where it is
	// read once: untransposed, mr sequential streams. A transposed A read
	// by several column panels is packed a block at a time (packABlock).
	if tA == Trans && n <= 4*mk.nr {
		// Few column panels (e.g. a weight gradient Xᵀ·dY with up to 128
		// outputs): shallow depth blocks with row tiles outer, so the tiles
		// of one block read kc rows of A sequentially (kc prefetcher
		// streams), each tile stays in L1 across the panels, and C, which
		// is small, stays in cache across blocks. Measured 1.5× faster.
		j.stream, kc = true, 16
		// One column panel: a run of row tiles a kernel call, each tile
		// prefetching the A of the one aheadTiles on (mk.ahead), which
		// leaves no stream to the hardware prefetchers, so that deeper
		// blocks (C read and written less often) cost no misses: aheadMACs
		// multiply-adds an element of a tile's rows a call. Cora's Xᵀ·dY
		// (1433×16 over 2708, 15.5 MB of A) at one thread, Intel Xeon:
		// AVX-512 (24 rows) 62-71 GFLOP/s before, 99-105 at 32 deep, 94-98
		// at 24, 100-106 at 48 (two tiles ahead; one ahead 82-86); AVX2 (6
		// rows, formerly swapped, see deepNarrowGrad: 52 GFLOP/s) 44-46 at
		// 16 deep, 61 at 32, 71-72 at 64, 73-75 at 128, 68-69 at 256.
		// Products under 1024 deep keep blocks of 16, and so the rounding
		// of their sums (C is rounded once a block): with 32, one weight
		// of TestDataParallelEqualsLargeBatch's Cora run moved from the
		// one process's by 1.3e-3 against a bar of 1e-3 (the others at
		// most 7.6e-4, as before), since Adam amplifies rounding.
		if n <= mk.nr && mk.ahead != nil {
			j.ahead = true
			if k >= 1024 {
				kc = aheadMACs / mk.mr
			}
		}
	}
	// Split k into equal blocks rather than leaving a thin last one.
	j.kc = (k + (k+kc-1)/kc - 1) / ((k + kc - 1) / kc)
	return j
}

// inPlaceKC is the depth block of a product whose A is read in place,
// untransposed, by a kernel set that takes such products whole
// (microKernel.wholeDepth: AVX2): whole up to 4096 deep (less for C wider
// than 256 columns, so that B's packing buffer stays within 4 MiB), where
// 256 suits the packed operands. C is then read and written once instead
// of once a block, and each row of A is one long sequential stream. Measured (AMD EPYC Zen 3,
// 512 KiB of L2 a core, paired rounds at one and two threads), speed
// against 256: X·W of 16384×602 by 602×256 1.03-1.14×, Cora's 2708×1433
// by 1433×16 1.43-1.58×, CiteSeer's 3327×3703 by 3703×16 1.38-1.50×,
// 8192×2048 by 2048×256 1.07-1.19×, 8192×1024 by 1024×128 1.03-1.06×,
// dY·Wᵀ of 8192×1024 by 1024×512 1.07-1.08× (blocks of 768 and 1024 in
// between).
// (A variable so that tests can cut such products into blocks.)
var inPlaceKC = 4096

// aheadMACs is the depth of a block times the rows of a tile where the
// tiles prefetch their A ahead (gemmJob.ahead): 32 deep with AVX-512's
// 24-row narrow tiles, 128 with AVX2's 6 rows.
const aheadMACs = 768

// minWorkerMACs is the fewest multiply-adds that runParallel gives a
// worker: a smaller product runs on fewer threads, down to one. Such a
// product reads a megabyte or two for a fraction of a millisecond of
// arithmetic, and a second thread mostly adds its wake-up and a second
// stream of cache misses. The products of GraphSAGE's output layer (256
// hidden, 16 classes, 1024 seeds: 4-8M multiply-adds, 0.1-0.35 ms each)
// took about as long on one thread as on two inside the training step, which
// took 1-2 % less CPU time (paired epochs); alone, with the operands in
// memory, one thread was 1.1-1.5× faster, and with them in cache two gained
// at most 1.35× (AMD EPYC Zen 5). (A variable so that tests can lower it
// and reach the parallel splits with small products.)
var minWorkerMACs = 1 << 23

// workers returns how many workers runParallel runs the product on, at
// most threads.
func (j *gemmJob) workers(threads int) int {
	tiles, panels := (j.m+j.mk.mr-1)/j.mk.mr, (j.n+j.mk.nr-1)/j.mk.nr
	k := j.k
	if j.terms != nil { // every term's depth
		k = 0
		for _, t := range j.terms {
			k += t.k
		}
	}
	return max(1, min(threads, max(tiles, panels, j.k/128), j.m*j.n*k/minWorkerMACs))
}

// runParallel splits the product into independent sub-products, one per
// worker, each run by the serial blocked algorithm with its own packing
// buffers, so workers never wait for each other (no barriers between
// blocks: a worker descheduled by a busy machine delays only itself).
// The split dimension is the one with the least duplicated work:
//
//   - rows of C (m): every worker packs all of op(B): (nt-1)·k·n extra;
//   - columns of C (n): every worker packs or streams all of op(A):
//     (nt-1)·m·k extra;
//   - depth (k): workers other than the first compute into private m×n
//     buffers that are then added to C: about 2·nt·m·n extra (this suits
//     weight gradients Xᵀ·dY, whose k is the number of nodes).
func (j *gemmJob) runParallel(threads int) error {
	mr, nr := j.mk.mr, j.mk.nr
	tiles, panels := (j.m+mr-1)/mr, (j.n+nr-1)/nr
	nt := j.workers(threads)
	if nt == 1 {
		return j.run()
	}
	const invalid = math.MaxInt
	costM, costN, costK := invalid, invalid, invalid
	if tiles >= nt {
		costM = (nt - 1) * j.k * j.n
	}
	if panels >= nt {
		// Every column chunk streams all of op(A) from memory (read in
		// place, or transposed, a cache line per depth per tile), which
		// costs about what packing it would. (Counted as free for A read
		// in place, the column split won on layer shapes, m >> n, and
		// measured 0.80-1.18x OpenBLAS on 16384x602x256 forward at two
		// threads against 1.16-1.22x split by rows.)
		costN = (nt - 1) * j.m * j.k
	}
	if j.k >= 128*nt && j.terms == nil {
		costK = 2 * nt * j.m * j.n
	}
	if !j.mask.none() || j.rows != nil {
		// A masked B's column sums (db) are made as it is packed, and B's
		// rows written as they are packed (rows): split the depth only,
		// so each element is packed, and each row written, once.
		costM, costN = invalid, invalid
	}
	// Choose the split, then cut it into more chunks than workers and let
	// workers take chunks as they come: on a busy machine a worker that
	// starts late (its core is taken) takes fewer chunks instead of making
	// the others wait for it.
	var total, unit int
	var kind byte
	switch {
	case costM == invalid && costN == invalid && costK == invalid:
		return j.run()
	case costN < costM && costN <= costK:
		kind, total, unit = 'n', j.n, nr
	case costM <= costK:
		kind, total, unit = 'm', j.m, mr
	default:
		kind, total, unit = 'k', j.k, 64
	}
	chunks := min((total+unit-1)/unit, 2*nt)
	chunk := func(ch int) (int, int) { return split(total, unit, chunks, ch) }
	if kind == 'k' {
		chunks = 2 * nt // depthChunk's (empty ones are skipped)
		chunk = func(ch int) (int, int) { return depthChunk(total, unit, nt, ch) }
	}
	var next atomic.Int64
	// Depth split: one private partial product per chunk (not per
	// worker), added to C in chunk order, so the result does not depend on
	// which worker took which chunk: the same inputs and thread count give
	// bit-identical results, which reproducible training needs.
	bufs := make([][]float32, chunks)
	var dbs [][]float32 // a masked B's column sums, per depth chunk
	if j.db != nil && kind == 'k' {
		dbs = make([][]float32, chunks)
	}
	defer func() {
		for _, b := range bufs {
			putBuf(b)
		}
		for _, b := range dbs {
			putBuf(b)
		}
	}()
	err := parallel(nt, func(w int) {
		for {
			ch := int(next.Add(1)) - 1
			if ch >= chunks {
				return
			}
			lo, hi := chunk(ch)
			if lo >= hi {
				continue
			}
			s := *j
			switch kind {
			case 'n':
				s.n = hi - lo
				s.col0 = j.col0 + lo
				if j.transB {
					s.b = j.b[lo*j.ldb:]
				} else {
					s.b = j.b[lo:]
				}
				s.c = j.c[lo:]
				if j.terms != nil { // B transposed
					s.terms = append([]depthTerm(nil), j.terms...)
					for q := range s.terms {
						s.terms[q].b = j.terms[q].b[lo*j.terms[q].ldb:]
					}
				}
			case 'm':
				s.m = hi - lo
				s.row0 = j.row0 + lo
				if j.parts != nil {
					s.parts = shiftParts(j.parts, 0, lo)
				} else {
					s.a = j.a[lo*j.rsA:]
				}
				s.c = j.c[lo*j.ldc:]
				if j.terms != nil {
					s.terms = append([]depthTerm(nil), j.terms...)
					for q := range s.terms {
						s.terms[q].a = j.terms[q].a[lo*j.terms[q].rsA:]
					}
				}
			case 'k':
				s.k = hi - lo
				if j.parts != nil {
					s.parts = shiftParts(j.parts, lo, 0)
				} else {
					s.a = j.a[lo*j.csA:]
				}
				if j.transB {
					s.b = j.b[lo:]
				} else {
					s.b = j.b[lo*j.ldb:]
				}
				if !j.mask.none() {
					s.mask = j.mask.fromRow(lo, j.ldb)
				}
				s.k0 = j.k0 + lo
				if dbs != nil {
					dbs[ch] = getBuf(j.n)
					clear(dbs[ch])
					s.db = dbs[ch]
				}
				s.ldc, s.beta, s.ep = j.n, 0, nil // the epilogue runs after the partial sums are added
				bufs[ch] = getBuf(j.m * j.n)
				s.c = bufs[ch]
			}
			if err := s.run(); err != nil {
				panic(err) // turned back into an error by parallel
			}
		}
	})
	if err != nil || kind != 'k' {
		return err
	}
	for _, d := range dbs { // in chunk order: the same sums whichever worker took which chunk
		if d != nil {
			ks().axpy(1, d, j.db)
		}
	}
	// Depth split: C = beta*C + Σ partial products, rows in parallel.
	return parallel(nt, func(w int) {
		lanes := j.ep.scratch()
		defer putLanes(lanes)
		i0, i1 := split(j.m, 1, nt, w)
		for i := i0; i < i1; i++ {
			row := j.c[i*j.ldc : i*j.ldc+j.n]
			first := true
			for _, buf := range bufs {
				if buf == nil {
					continue
				}
				part := buf[i*j.n : (i+1)*j.n]
				switch {
				case first && j.beta == 0:
					copy(row, part)
				case first && j.beta != 1:
					for c := range row {
						row[c] = j.beta*row[c] + part[c]
					}
				default:
					ks().axpy(1, part, row)
				}
				first = false
			}
			if j.ep != nil {
				j.ep.apply(row, j.row0+i, j.col0, lanes)
			}
		}
	})
}

// depthChunk returns chunk ch of runParallel's depth split over nt workers
// in 2·nt chunks: the first nt share two thirds of the depth, the other
// nt the rest, in multiples of unit (the last takes what is left). Each
// chunk costs a private partial product to add to C and a first block of
// B packed from memory (the kernels prefetch only within a chunk), so
// fewer chunks are faster; the small ones at the end still let a worker
// that started late, or lost its core, take less of the work. Measured
// against 4·nt equal chunks (AMD EPYC Zen 3, two threads, paired rounds):
// 1.05× on Xᵀ·dY of 4096×128 by 4096×256 and 1.08× on 4096×256 by
// 4096×256, the other layer shapes within 0.99-1.02× (three quarters in
// the big chunks measured the same).
func depthChunk(total, unit, nt, ch int) (lo, hi int) {
	units := (total + unit - 1) / unit
	at := func(c int) int { // the depth before chunk c: weights 2 and 1
		return min(units*(2*min(c, nt)+max(c-nt, 0))/(3*nt)*unit, total)
	}
	return at(ch), at(ch + 1)
}

// overlaps reports whether two slices share memory.
func overlaps(x, y []float32) bool {
	if len(x) == 0 || len(y) == 0 {
		return false
	}
	x0 := uintptr(unsafe.Pointer(&x[0]))
	y0 := uintptr(unsafe.Pointer(&y[0]))
	return x0 < y0+uintptr(len(y))*4 && y0 < x0+uintptr(len(x))*4
}

type gemmJob struct {
	m, n, k     int
	a           []float32
	rsA, csA    int
	b           []float32
	transB      bool
	ldb         int
	c           []float32
	ldc         int
	alpha, beta float32
	ep          *Epilogue // applied to each block of C once it is final (nil: none)
	col0        int       // column of C's first column in the whole product (for the bias)
	row0        int       // row of C's first row in the whole product (for the dropout keys)
	mk          *microKernel
	kc          int
	transA      bool // op(A) is A transposed
	stream      bool // read A in place with shallow blocks, row tiles outer
	ahead       bool // stream with one column panel, full tiles by mk.ahead
	// ap holds the tiles of op(A) of one block that the micro-kernel cannot
	// read in place (a last, partial tile; a tile that spans two parts),
	// packed once for all column panels; apRows their first rows.
	ap     []float32
	apRows []int
	tmp    []float32 // mr×nr edge output tile
	// parts, when not nil, replace a: op(A) is [X₀ X₁ ...]ᵀ, A transposed,
	// its storage rows the parts' rows side by side (GemmTNMulti); a tile
	// within one part is read in place, and arow holds the part of a
	// storage row while a tile that spans two parts is packed.
	parts []aPart
	arow  []float32
	// terms, when not nil, are products summed into C (GemmNTMulti):
	// op(A) is [A₀ A₁ ...] and op(B) [B₀; B₁; ...] along the depth.
	// runTerms takes them in turn (use), depth0 being the depth where the
	// current one starts, so that only the first overwrites C.
	terms  []depthTerm
	depth0 int
	// mask, unless none, is B's ReLU mask (B not transposed): B is packed
	// as maskScale·B ⊙ mask (GemmTNMultiReLU, GemmTNMultiReLUBits), and
	// db, when not nil, gets that matrix's column sums added as it is
	// packed (one value per column of C; each element of B is packed once
	// per job).
	mask      reluMaskOf
	maskScale float32
	db        []float32
	// rows, when not nil, writes B's rows [lo, hi) of the whole product
	// (B not transposed, a depth split only): packB calls it for the rows
	// it is about to read that it has not had written yet (produced, of
	// this job's depths, which start at depth k0 of the whole product).
	rows     func(lo, hi int)
	k0       int
	produced int
	// ah is what the packing after the current block reads, which the
	// micro-kernels prefetch meanwhile (nil spans: nothing).
	ah ahead
	// tileAh is the row tile of an A read in place aheadTiles on from
	// the current one, with row tiles outer (see setTileAhead).
	tileAh ahead
	tiles  []tile  // block's row tiles
	tilesP *[]tile // where tiles came from (tilePool)
}

// tile is one row tile of a block: its first row i and rows mw, where its
// A is (a, strides rs and cs), and the kernel fn that computes its kr
// (>= mw) rows.
type tile struct {
	a                 []float32
	i, mw, rs, cs, kr int
	fn                kernelFn
	// da is how far on from a the next row tile's A would lie (packed
	// next to it, or in place), run how many full tiles from this one on
	// lie so (0: this one is partial), which one kernel call computes.
	da, run int
	// pair, where not nil, computes this partial tile for two adjacent
	// column panels at once (microKernel.pairs).
	pair kernelFn
}

// aheadTiles is how many row tiles ahead setTileAhead fetches A.
const aheadTiles = 2

// depthTerm is one product of a sum of products: A read in place, B
// transposed, k deep in blocks of kc.
type depthTerm struct {
	a     []float32
	rsA   int
	b     []float32
	ldb   int
	k, kc int
}

// use makes term q the job's operands.
func (j *gemmJob) use(q int) {
	t := j.terms[q]
	j.a, j.rsA, j.b, j.ldb, j.k, j.kc = t.a, t.rsA, t.b, t.ldb, t.k, t.kc
}

// runTerms is run for a sum of products (j.terms): op(B) of every term
// packed whole, then each block of C rows gets all terms' depth blocks
// while it is in cache, and the epilogue.
func (j *gemmJob) runTerms() error {
	mr, nr := j.mk.mr, j.mk.nr
	ktot, kcMax := 0, 0
	for _, t := range j.terms {
		ktot, kcMax = ktot+t.k, max(kcMax, min(t.kc, t.k))
	}
	ncMax := min(blockNC, (j.n+nr-1)/nr*nr)
	bp := getBuf(ncMax * ktot)
	defer putBuf(bp)
	j.allocTiles(kcMax)
	j.tmp = getBuf(mr * nr)
	defer j.freeTiles()
	defer putBuf(j.tmp)
	j.scale()
	for jc := 0; jc < j.n; jc += blockNC {
		nb := min(blockNC, j.n-jc)
		npad := (nb + nr - 1) / nr * nr
		off := 0
		for q := range j.terms {
			j.use(q)
			for pc := 0; pc < j.k; pc += j.kc {
				j.packB(bp[(off+pc)*npad:], jc, nb, pc, min(j.kc, j.k-pc))
			}
			off += j.k
		}
		for ic := 0; ic < j.m; ic += blockMC {
			off = 0
			for q := range j.terms {
				j.use(q)
				j.depth0 = off
				for pc := 0; pc < j.k; pc += j.kc {
					// The kernels fetch the next block's A meanwhile, as
					// run's do: GraphSAGE's first layer, two 12000×100
					// inputs by 256 outputs, ran at 142 GFLOP/s at one
					// thread without (a plain product 12000×200 at 174),
					// at 165 with (Intel Xeon, AVX-512; AVX2 91 → 99).
					mb, kb := min(blockMC, j.m-ic), min(j.kc, j.k-pc)
					j.setAhead(mb, npad, kb, aheadSpan{}, j.termAhead(q, ic, pc))
					j.block(bp[(off+pc)*npad:], ic, mb, jc, nb, pc, kb)
				}
				off += j.k
			}
			if j.ep != nil {
				j.epilogue(ic, min(ic+blockMC, j.m), jc, nb)
			}
		}
	}
	return nil
}

// aPart is one block of columns of a transposed A stored as parts: cols
// columns of a matrix with leading dimension ld.
type aPart struct {
	a        []float32
	ld, cols int
}

// shiftParts returns parts starting at storage row row0 and column col0 of
// their side-by-side concatenation.
func shiftParts(parts []aPart, row0, col0 int) []aPart {
	out := make([]aPart, 0, len(parts))
	for _, p := range parts {
		if col0 >= p.cols {
			col0 -= p.cols
			continue
		}
		out = append(out, aPart{a: p.a[row0*p.ld+col0:], ld: p.ld, cols: p.cols - col0})
		col0 = 0
	}
	return out
}

// aRow returns columns [i0, i0+n) of storage row p of a transposed A (the
// values of op(A) rows i0.. at depth p): in place, or gathered from the
// parts into j.arow where they span two.
func (j *gemmJob) aRow(p, i0, n int) []float32 {
	if j.parts == nil {
		return j.a[p*j.csA+i0:][:n]
	}
	dst := j.arow[:n]
	for _, pt := range j.parts {
		if i0 >= pt.cols {
			i0 -= pt.cols
			continue
		}
		if len(dst) == n && i0+n <= pt.cols {
			return pt.a[p*pt.ld+i0:][:n]
		}
		w := copy(dst, pt.a[p*pt.ld+i0:p*pt.ld+pt.cols])
		dst, i0 = dst[w:], 0
		if len(dst) == 0 {
			break
		}
	}
	return j.arow[:n]
}

// fullDepthLimit is the largest packed op(B) (k × nc floats, 1 MiB) packed
// whole rather than one kc-deep block at a time. Then each block of C rows
// stays in cache while all depth blocks are added to it, so C goes through
// memory once instead of once per depth block. (Only where C has more than
// one block of rows: with one, the loops read C as often either way, and
// packing B a block at a time lets the kernels prefetch the next block's
// source; a two-thread depth split's chunks, each a private C of the
// product's rows, gained 1-3 %.)
// (A variable so that tests can turn it off.)
var fullDepthLimit = 1 << 18

// l2Budget is the bytes of L2 that the kernels of a block share between
// its packed operands and what they prefetch ahead (setAhead). (L2 is 1-2
// MiB per core on the machines it was measured best on; on AMD Zen 3's 512
// KiB, prefetching less ahead was 4-12 % slower on the products that pack
// A, Xᵀ·dY, which then pack from memory.)
const l2Budget = 768 << 10

// panelsBudget is the most bytes of A block and B depth block that block
// runs with column panels outer, reading the A block again from L2 for
// every panel: three quarters of this CPU's L2 (the other lines in use
// need room), at most l2Budget, which was measured best on 1-2 MiB L2s
// (Intel Xeon, AMD Zen 4 and Zen 5), and l2Budget where the size is
// unknown. On AMD Zen 3 (512 KiB) it is 384 KiB instead of 768, and the
// products of GNN layers whose blocks overflow the L2 run rows outer:
// paired rounds at one thread, 1.08-1.27× on dY·Wᵀ of 4096×256 by
// 256×128 (a 393 KiB A block read in place, 128 KiB of B) and 1.03-1.10×
// on X·W of 16384×602 by 602×256, the others within 0.96-1.04× (two
// threads 0.99-1.08×).
var panelsBudget = panelsBudgetFor(isa.L2Bytes)

// panelsBudgetFor returns panelsBudget for an L2 of l2 bytes (0: unknown).
func panelsBudgetFor(l2 int) int {
	if l2 <= 0 {
		return l2Budget
	}
	return min(l2Budget, l2/4*3)
}

// run computes the product serially (parallel callers give each worker its
// own sub-product): the GotoBLAS/BLIS loop nest over column blocks (nc),
// depth blocks (kc) and row blocks (mc) around the micro-kernel.
func (j *gemmJob) run() error {
	if j.terms != nil {
		return j.runTerms()
	}
	mr, nr := j.mk.mr, j.mk.nr
	ncMax := min(blockNC, (j.n+nr-1)/nr*nr)
	kcMax := min(j.kc, j.k)
	fullDepth := !j.stream && j.k*ncMax <= fullDepthLimit && j.m > blockMC
	bp := getBuf(ncMax * kcMax)
	if fullDepth {
		putBuf(bp)
		bp = getBuf(ncMax * j.k)
	}
	defer putBuf(bp)
	if j.parts != nil {
		j.arow = getBuf(min(blockMC, j.m))
		defer putBuf(j.arow)
	}
	j.allocTiles(kcMax)
	j.tmp = getBuf(mr * nr)
	defer j.freeTiles()
	defer putBuf(j.tmp)
	j.scale()
	if j.alpha == 0 {
		if j.ep != nil {
			j.epilogue(0, j.m, 0, j.n)
		}
		return nil
	}
	for jc := 0; jc < j.n; jc += blockNC {
		nb := min(blockNC, j.n-jc)
		npad := (nb + nr - 1) / nr * nr
		if fullDepth {
			// Depth block pc is packed at bp[pc*npad:].
			for pc := 0; pc < j.k; pc += j.kc {
				j.packB(bp[pc*npad:], jc, nb, pc, min(j.kc, j.k-pc))
			}
			for ic := 0; ic < j.m; ic += blockMC {
				for pc := 0; pc < j.k; pc += j.kc {
					// Next: A's block at the next depth, else at the
					// next row block's first (B is packed already).
					mb, kb := min(blockMC, j.m-ic), min(j.kc, j.k-pc)
					if pc+j.kc < j.k {
						j.setAhead(mb, npad, kb, aheadSpan{}, j.aSource(ic, pc+j.kc))
					} else {
						j.setAhead(mb, npad, kb, aheadSpan{}, j.aSource(ic+blockMC, 0))
					}
					j.block(bp[pc*npad:], ic, mb, jc, nb, pc, kb)
				}
				if j.ep != nil {
					j.epilogue(ic, min(ic+blockMC, j.m), jc, nb)
				}
			}
			continue
		}
		for pc := 0; pc < j.k; pc += j.kc {
			kb := min(j.kc, j.k-pc)
			j.packB(bp, jc, nb, pc, kb)
			for ic := 0; ic < j.m; ic += blockMC {
				// Next: A's next row block, else B's and A's first
				// row block at the next depth.
				mb := min(blockMC, j.m-ic)
				if ic+blockMC < j.m {
					j.setAhead(mb, npad, kb, aheadSpan{}, j.aSource(ic+blockMC, pc))
				} else if np := pc + j.kc; np < j.k {
					j.setAhead(mb, npad, kb, j.bSource(jc, nb, np), j.aSource(0, np))
				} else {
					j.ah = ahead{}
				}
				j.block(bp, ic, mb, jc, nb, pc, kb)
				if j.ep != nil && pc+kb >= j.k {
					j.epilogue(ic, min(ic+blockMC, j.m), jc, nb)
				}
			}
		}
	}
	return nil
}

// epilogue applies j.ep to rows [i0, i1) and columns [jc, jc+nb) of C.
func (j *gemmJob) epilogue(i0, i1, jc, nb int) {
	lanes := j.ep.scratch()
	defer putLanes(lanes)
	for i := i0; i < i1; i++ {
		j.ep.apply(j.c[i*j.ldc+jc:i*j.ldc+jc+nb], j.row0+i, j.col0+jc, lanes)
	}
}

// scale multiplies C by beta. With beta == 0 it leaves C alone (the first
// depth block overwrites it, so NaNs there do not leak) unless alpha == 0
// too, when it clears C.
func (j *gemmJob) scale() {
	if j.beta == 1 || (j.beta == 0 && j.alpha != 0) {
		return
	}
	for i := 0; i < j.m; i++ {
		row := j.c[i*j.ldc : i*j.ldc+j.n]
		if j.beta == 0 {
			clear(row)
			continue
		}
		for c := range row {
			row[c] *= j.beta
		}
	}
}

// packB packs columns [jc, jc+nb) × depths [pc, pc+kb) of op(B) into dst
// as column panels of nr: element (p, jj) of panel q goes to
// dst[q*kb*nr + p*nr + jj], zero padded to nr columns.
func (j *gemmJob) packB(dst []float32, jc, nb, pc, kb int) {
	nr := j.mk.nr
	if j.rows != nil && pc+kb > j.produced {
		j.rows(j.k0+max(pc, j.produced), j.k0+pc+kb)
		j.produced = pc + kb
	}
	if !j.transB {
		// Row by row, so op(B) is read sequentially.
		full := nb / nr
		if full*nr < nb {
			clear(dst[full*kb*nr : (full+1)*kb*nr]) // the partial panel's padding
		}
		// Columns [from, nb) are packed below: all of them, or, with the
		// mask's bits, the partial panel left by packBBits.
		from := 0
		if j.mask.bits != nil && jc%8 == 0 && nr%8 == 0 {
			j.packBBits(dst, jc, full, pc, kb)
			if from = full * nr; from == nb {
				return
			}
		}
		var masked []float32
		if !j.mask.none() {
			masked = getBuf(nb - from)
			defer putBuf(masked)
		}
		// packGroup rows at a time (see packABlock), one when masked.
		for p := 0; p < kb; {
			g, lds := min(packGroup, kb-p), j.ldb
			src := j.b[(pc+p)*j.ldb+jc+from:]
			if masked != nil {
				g, lds = 1, nb-from
				j.mask.apply(masked, src[:nb-from], pc+p, j.ldb, jc+from, j.maskScale)
				if j.db != nil {
					ks().axpy(1, masked, j.db[jc+from:jc+nb]) // += , bitwise (1·x is exact)
				}
				src = masked
			}
			packTiles(dst[from/nr*kb*nr+p*nr:], src, lds, nr, g, full-from/nr, kb*nr)
			packTail(dst, full*kb*nr+p*nr, src, lds, nr, g, full*nr-from, nb-from)
			p += g
		}
		return
	}
	for q := 0; q*nr < nb; q++ {
		j0 := jc + q*nr
		w := min(nr, jc+nb-j0)
		panel := dst[q*kb*nr : (q+1)*kb*nr]
		if w < nr {
			clear(panel)
		}
		for jj := 0; jj < w; jj++ {
			src := j.b[(j0+jj)*j.ldb+pc:]
			src = src[:kb]
			for p, v := range src {
				panel[p*nr+jj] = v
			}
		}
	}
}

// packBBits packs the first panels whole column panels of scale·B ⊙ the
// mask's bits (B not transposed; jc a multiple of 8), adding their column
// sums to db (when not nil) as it goes: packGroup rows at a time, mask,
// sums and packing in one pass (reluMaskBitsPack). (Row by row, three
// passes and calls a row, the masked packing of a GraphSAGE first layer's
// output gradient took 4.6 % of the training step's CPU time beside the
// plain packing's: AMD EPYC Zen 5.)
func (j *gemmJob) packBBits(dst []float32, jc, panels, pc, kb int) {
	nr := j.mk.nr
	var db []float32
	if j.db != nil {
		db = j.db[jc : jc+panels*nr]
	}
	m := j.mask
	for p := 0; p < kb; p += packGroup {
		row := pc + p
		ks().reluMaskBitsPack(dst[p*nr:], j.b[row*j.ldb+jc:], m.bits[row*m.stride+jc/8:], j.ldb, m.stride, min(packGroup, kb-p), panels, nr, kb*nr, j.maskScale, db)
	}
}

// packATile packs rows [i0, i0+rows) × depths [pc, pc+kb) of op(A) into dst
// as kb groups of mr floats (zero padded to mr rows).
func (j *gemmJob) packATile(dst []float32, i0, rows, pc, kb int) {
	mr := j.mk.mr
	dst = dst[:kb*mr]
	if rows < mr {
		clear(dst)
	}
	if j.csA == 1 { // A not transposed: rows of A are contiguous in p
		for r := 0; r < rows; r++ {
			src := j.a[(i0+r)*j.rsA+pc:]
			src = src[:kb]
			for p, v := range src {
				dst[p*mr+r] = v
			}
		}
		return
	}
	// A transposed: rsA == 1, so the mr values for one p are contiguous.
	for p := 0; p < kb; p++ {
		copy(dst[p*mr:p*mr+rows], j.aRow(pc+p, i0, rows))
	}
}

// packsA reports whether block packs whole blocks of op(A) (packABlock):
// A transposed (a weight gradient Xᵀ·dY, X stored row-major) and read by
// more than one column panel. In place, each depth of a tile is mr floats
// of a different row of X, a whole row of X apart: a stride that L1
// prefetchers follow poorly (Intel's not at all beyond 2 KiB), so depths
// miss L1, and every panel read the block again that way. Packed once per
// block, reading each row's segment sequentially, the tiles are read
// contiguously by all the panels. Measured (Xeon, Ice Lake, AVX-512, one
// thread, alternated in one process): Xᵀ·dY of X 16384×602, dY 256
// columns 1.18-1.30× faster; 128-column outputs (shallow blocks) of X
// with 602-1433 columns 1.09-1.12×; X 4096×128 by 256 columns 1.0-1.03×.
// Packing tile by tile instead (mr floats of each of kb rows, the same
// strided reads) was 0.9× in place. An op(A) in parts (GemmTNMulti's
// inputs, a row of each part apart) is packed the same way, each depth's
// row gathered from the parts (aRow): the GraphSAGE first layer's weight
// gradient, two 12000×100 inputs by 256 columns, 1.07× (one thread) and
// 1.09-1.10× (two) in the median of six alternations, with or without
// the ReLU mask. A single panel (n <= nr) reads A once, and keeps reading
// it in place.
func (j *gemmJob) packsA() bool {
	return j.transA && j.n > j.mk.nr
}

// ahead is memory that the next packing of a job reads: the micro-kernels
// of the block before it prefetch it into L2, each call a chunk (see
// kernelFn's pf), so that packing copies from L2 rather than from memory
// and the misses overlap the arithmetic. Its rows are walked in order.
type ahead struct {
	spans       [4]aheadSpan
	s, row, col int // where the next chunk starts (floats within the row)
	left        int // floats still to hand out
}

// aheadSpan is rows × cols floats, rows ld apart, from data[0] on.
type aheadSpan struct {
	data           []float32
	ld, rows, cols int
}

// prefetches reports whether the kernels prefetch the next packing's
// source (or the next block's A, read in place).
func (j *gemmJob) prefetches() bool {
	return j.mk.pfBytes > 0
}

// setAhead points the kernel calls of the block of rows mb, columns nb
// and depth kb to come at a and b (empty spans are skipped), as much of
// them as L2 holds beside the block's packed operands: where the two
// blocks together outgrow it, the prefetches would evict the operands the
// kernels are reading (16384x602x256 Xᵀ·dY, a 640 KiB working set, ran
// 2-6 % slower prefetching the whole next 640 KiB).
func (j *gemmJob) setAhead(mb, nb, kb int, b aheadSpan, a aheadSpans) {
	j.ah = ahead{spans: [4]aheadSpan{b.flat(), a[0].flat(), a[1].flat(), a[2].flat()}, left: l2Budget/4 - kb*(mb+nb)}
}

// flat returns sp as one long row where its rows are contiguous.
func (sp aheadSpan) flat() aheadSpan {
	if sp.ld == sp.cols {
		sp.cols, sp.rows = sp.rows*sp.cols, min(sp.rows, 1)
	}
	return sp
}

// setTileAhead points the first kernel calls of a row tile, with row tiles
// outer and A read in place (not transposed), at the tile of A whose first
// row is i, depths [pc, pc+kb): each tile of A comes from memory on its
// first panel, and the hardware prefetchers follow its mr rows late. With
// dY·Wᵀ of 16384×256 by 256×602 at one thread it ran 1-6 % faster
// (medians of alternated rounds, both kernel sets, Zen 4).
func (j *gemmJob) setTileAhead(i, pc, kb int) {
	j.tileAh = ahead{}
	if j.transA || i >= j.m || !j.prefetches() {
		return
	}
	// As many chunks (kernel calls) as the rows take, a row at least one.
	chunk := kb * j.mk.pfBytes / 4
	sp := aheadSpan{data: j.a[i*j.rsA+pc:], ld: j.rsA, rows: min(j.mk.mr, j.m-i), cols: kb}.flat()
	j.tileAh.spans[0], j.tileAh.left = sp, sp.rows*(sp.cols+chunk-1)/chunk*chunk
}

// next returns where a kernel call should prefetch chunk floats from (nil
// once all is covered) and moves past them. A chunk past the end of a row
// ends it: the next chunk starts the next row. (Small enough to inline:
// block asks at every kernel call, mostly of an empty ahead.)
func (ah *ahead) next(chunk int) []float32 {
	if ah.left <= 0 {
		return nil
	}
	pf, _ := ah.walk(chunk, 1)
	return pf
}

// nextRun is next for a run of up to n tiles that one kernel call
// computes, each prefetching chunk floats on from the one before: it also
// returns how many of them (at least 1) lie in the current row, and moves
// past them all.
func (ah *ahead) nextRun(chunk, n int) ([]float32, int) {
	if ah.left <= 0 {
		return nil, 0
	}
	return ah.walk(chunk, n)
}

// walk is next's and nextRun's walk over the spans; it empties ah when
// they run out.
func (ah *ahead) walk(chunk, n int) ([]float32, int) {
	for ah.s < len(ah.spans) {
		sp := &ah.spans[ah.s]
		if ah.row >= sp.rows {
			ah.s, ah.row, ah.col = ah.s+1, 0, 0
			continue
		}
		m := 1
		if n > 1 {
			m = max(1, min(n, (sp.cols-ah.col)/chunk))
		}
		ah.left -= m * chunk
		pf := sp.data[ah.row*sp.ld+ah.col:]
		if ah.col += m * chunk; ah.col >= sp.cols {
			ah.row, ah.col = ah.row+1, 0
		}
		return pf, m
	}
	ah.left = 0
	return nil, 0
}

// aSource is the storage of rows [ic, ic+mc) × depths [pc, pc+kc) of
// op(A), which packABlock reads, or the first panel's kernels where A is
// read in place (nothing if ic is past the end).
func (j *gemmJob) aSource(ic, pc int) aheadSpans {
	var sp aheadSpans
	if !j.prefetches() || ic >= j.m {
		return sp
	}
	mb, kb := min(blockMC, j.m-ic), min(j.kc, j.k-pc)
	switch {
	case j.parts != nil: // storage row p of each part the rows lie in
		n := 0
		for i := ic; i < ic+mb && n < len(sp); n++ {
			pt, c, ok := j.partAt(i)
			if !ok {
				break
			}
			w := min(ic+mb-i, pt.cols-c)
			sp[n] = aheadSpan{data: pt.a[pc*pt.ld+c:], ld: pt.ld, rows: kb, cols: w}
			i += w
		}
	case j.transA: // op(A)'s depth p is storage row p (csA apart)
		sp[0] = aheadSpan{data: j.a[pc*j.csA+ic:], ld: j.csA, rows: kb, cols: mb}
	default:
		sp[0] = aheadSpan{data: j.a[ic*j.rsA+pc:], ld: j.rsA, rows: mb, cols: kb}
	}
	return sp
}

// termAhead is the A that the block after term q's block of rows ic and
// depth pc reads in a sum of products (runTerms): term q's next depth
// block, else the next term's first, else the first term's at the next
// row block.
func (j *gemmJob) termAhead(q, ic, pc int) aheadSpans {
	switch {
	case pc+j.kc < j.k:
		return j.aSource(ic, pc+j.kc)
	case q+1 < len(j.terms):
		j.use(q + 1)
		defer j.use(q)
		return j.aSource(ic, 0)
	default:
		j.use(0)
		defer j.use(q)
		return j.aSource(ic+blockMC, 0)
	}
}

// aheadSpans is aSource's spans: one, or one per part of an op(A) in
// parts that the rows span (the first three; empty ones unused).
type aheadSpans [3]aheadSpan

// bSource is what packB reads for columns [jc, jc+nb) × depths [pc,
// pc+kc) of op(B).
func (j *gemmJob) bSource(jc, nb, pc int) aheadSpan {
	if !j.prefetches() || j.rows != nil {
		return aheadSpan{} // (rows is writing B's rows as they are packed)
	}
	kb := min(j.kc, j.k-pc)
	if j.transB {
		return aheadSpan{data: j.b[jc*j.ldb+pc:], ld: j.ldb, rows: nb, cols: kb}
	}
	return aheadSpan{data: j.b[pc*j.ldb+jc:], ld: j.ldb, rows: kb, cols: nb}
}

// packGroup is the number of depths whose rows packABlock (and packB, for
// B's column panels) reads together: each tile then gets that many depths (8·48 bytes on AVX-512, whole cache
// lines) written contiguously, instead of one 48-byte piece per tile per
// depth, a whole tile (kb·mr floats, 12 KiB at kc 256) apart. Measured
// (AMD EPYC Zen 4, one thread, X 16384×602 from memory): 1 row 3.7 GB/s,
// 4 rows 5.5, 8 rows 6.2, 16 rows 4.6, 32 rows 2.3, whole tiles (one tile
// at a time) 2.2, with the Go copy loop.
const packGroup = 8

// packABlock packs rows [ic, ic+mb) × depths [pc, pc+kb) of a transposed
// op(A) into j.ap as whole tiles (kb groups of mr floats each, the last
// tile zero padded), reading each depth's mb floats sequentially, and
// lists the tiles in j.apRows.
func (j *gemmJob) packABlock(ic, mb, pc, kb int) {
	mr := j.mk.mr
	nTiles := (mb + mr - 1) / mr
	full := mb / mr
	stride := kb * mr
	dst := j.ap[:nTiles*stride]
	if full < nTiles {
		clear(dst[full*stride:])
	}
	for p := 0; p < kb; p += packGroup {
		// Rows of A in place: packGroup depths at a time.
		g := min(packGroup, kb-p)
		if j.parts != nil {
			j.packPartsGroup(dst, ic, mb, pc+p, p, g, stride)
			continue
		}
		src := j.a[(pc+p)*j.csA+ic:]
		packTiles(dst[p*mr:], src, j.csA, mr, g, full, stride)
		packTail(dst, full*stride+p*mr, src, j.csA, mr, g, full*mr, mb)
	}
	for t := 0; t < nTiles; t++ {
		j.apRows = append(j.apRows, ic+t*mr)
	}
}

// packPartsGroup is packABlock's step for an op(A) in parts: depths
// [d, d+g) of rows [ic, ic+mb), stored from depth p of each tile. The runs
// of whole tiles inside one part are packed from the part in place, g
// depths at a time as for a plain A; only a tile that spans two parts, or
// the last, partial one, is copied from each part it spans, a few floats
// a depth (copyCols). (Gathering every depth's row first, then packing it
// alone, spent 3 % of a GraphSAGE training step's CPU time in copies of a
// few hundred bytes: AMD EPYC Zen 5. Gathering such a tile depth by depth
// through aRow and a copy call each: a 10000-deep product of two 100-column
// parts 1-2 % slower.)
func (j *gemmJob) packPartsGroup(dst []float32, ic, mb, d, p, g, stride int) {
	mr := j.mk.mr
	nTiles := (mb + mr - 1) / mr
	for t := 0; t < nTiles; {
		i := ic + t*mr
		rows := min(mr, ic+mb-i)
		if rows == mr {
			if pt, li, _ := j.partAt(i); li+mr <= pt.cols {
				run := min((pt.cols-li)/mr, (ic+mb-i)/mr)
				packTiles(dst[t*stride+p*mr:], pt.a[d*pt.ld+li:], pt.ld, mr, g, run, stride)
				t += run
				continue
			}
		}
		// The tile's rows from each part they lie in, depth by depth.
		for o, li := 0, i; o < rows; {
			pt, c, _ := j.partAt(li)
			n := min(rows-o, pt.cols-c)
			copyCols(dst[t*stride+p*mr+o:], mr, pt.a[d*pt.ld+c:], pt.ld, n, g)
			o, li = o+n, li+n
		}
		t++
	}
}

// copyCols copies n floats of each of rows rows, from src (lds apart) to
// dst (ldd apart): a tile's rows from one part of a transposed A, a few
// floats a depth (a loop, not a memmove call per depth).
func copyCols(dst []float32, ldd int, src []float32, lds, n, rows int) {
	for q := 0; q < rows; q++ {
		d, s := dst[q*ldd:][:n], src[q*lds:][:n]
		for x, v := range s {
			d[x] = v
		}
	}
}

// partAt returns the part holding op(A) row i and i's column within it
// (ok false past the parts).
func (j *gemmJob) partAt(i int) (pt aPart, col int, ok bool) {
	for _, pt := range j.parts {
		if i < pt.cols {
			return pt, i, true
		}
		i -= pt.cols
	}
	return aPart{}, 0, false
}

// packTilesGeneric copies, for t < tiles and q < rows, the w floats at
// src[q*lds+t*w:] to dst[t*stride+q*w:]: rows depths of whole tiles of a
// transposed A (packABlock) or whole column panels of B (packB).
func packTilesGeneric(dst, src []float32, lds, w, rows, tiles, stride int) {
	for q := 0; q < rows; q++ {
		s := src[q*lds:]
		for t := 0; t < tiles; t++ {
			copy(dst[t*stride+q*w:t*stride+q*w+w], s[t*w:])
		}
	}
}

// packTail copies the columns [from, to) of rows rows of src (lds apart)
// into the last, partial tile or panel, row q to dst[off+q*w:], if there
// is one (from < to). Its padding beyond to-from is left as it is
// (cleared once by the caller).
func packTail(dst []float32, off int, src []float32, lds, w, rows, from, to int) {
	if from >= to {
		return
	}
	for q := 0; q < rows; q++ {
		copy(dst[off+q*w:off+q*w+to-from], src[q*lds+from:q*lds+to])
	}
}

// allocTiles sizes j.ap and j.apRows for the tiles block packs: at most
// one partial tile, plus one per boundary between parts, or a whole
// block's tiles (packsA).
func (j *gemmJob) allocTiles(kcMax int) {
	n := max(1, len(j.parts))
	if j.packsA() {
		n += blockMC/j.mk.mr + 1
	}
	j.ap = getBuf(n * j.mk.mr * kcMax)
	j.apRows = make([]int, 0, n)
	j.tilesP = tilePool.Get().(*[]tile)
	if need := (blockMC + j.mk.mr - 1) / j.mk.mr; cap(*j.tilesP) < need {
		*j.tilesP = make([]tile, 0, need)
	}
	j.tiles = (*j.tilesP)[:0]
}

// freeTiles returns the buffers allocTiles took.
func (j *gemmJob) freeTiles() {
	putBuf(j.ap)
	clear(j.tiles[:cap(j.tiles)]) // drop the tiles' references to the operands
	*j.tilesP = j.tiles[:0]
	tilePool.Put(j.tilesP)
	j.ap, j.tiles, j.tilesP = nil, nil, nil
}

// tilePool holds blocks' row-tile lists (gemmJob.tiles), so that each
// worker of each product does not grow its own: growing them was 3% of
// a sampled training step's CPU time.
var tilePool = sync.Pool{New: func() any { t := []tile(nil); return &t }}

// partTile returns op(A) rows [i, i+mr) from depth pc in place, in the
// part that holds them, with the part's leading dimension as the depth
// stride; nil where the rows span two parts.
func (j *gemmJob) partTile(i, pc int) ([]float32, int) {
	pt, li, ok := j.partAt(i)
	if !ok || li+j.mk.mr > pt.cols {
		return nil, 0
	}
	return pt.a[pc*pt.ld+li:], pt.ld
}

// block multiplies rows [ic, ic+mb) × depths [pc, pc+kb) of op(A) by the
// packed depth block bp of op(B) (columns [jc, jc+nb)) into C.
func (j *gemmJob) block(bp []float32, ic, mb, jc, nb, pc, kb int) {
	mr, nr := j.mk.mr, j.mk.nr
	fn := j.mk.fn
	acc := j.beta != 0 || pc > 0 || j.depth0 > 0 // false: overwrite C, it was not scaled
	// Loop order: normally column panels outer, so a kc×nr micro-panel of
	// B stays in L1 while the A block streams from L2 (BLIS order). For a
	// shallow product (small k) the cost is writing C, so row tiles go
	// outer and C is written a full row tile at a time. Row tiles go outer
	// too when the A block and this depth block of B together outgrow L2
	// (panelsBudget):
	// the A block, read again for every panel, would come from L3, while
	// an A tile stays in L1 across the panels and B streams from L2 in one
	// sequential pass per tile (dY·Wᵀ of 16384×256 by 256×602 on AVX-512:
	// 0.95× OpenBLAS panels outer, 1.02–1.04× rows outer; products whose
	// blocks fit, such as 4096×256 by 256×128, stay faster panels outer).
	rowsOuter := j.k <= 64 || j.stream || 4*kb*(mb+(nb+nr-1)/nr*nr) > panelsBudget
	nPanels := (nb + nr - 1) / nr
	if j.ahead { // one panel: the same loop, with runs of row tiles
		rowsOuter = false
	}
	nTiles := (mb + mr - 1) / mr
	j.apRows = j.apRows[:0]
	packA := j.packsA() && nPanels > 1
	if packA {
		j.packABlock(ic, mb, pc, kb)
	}
	for t := 0; t < nTiles && !packA; t++ {
		i, mw := ic+t*mr, min(mr, mb-t*mr)
		if mw == mr && j.parts == nil {
			continue
		}
		if a, _ := j.partTile(i, pc); mw == mr && a != nil {
			continue
		}
		j.packATile(j.ap[len(j.apRows)*mr*kb:], i, mw, pc, kb)
		j.apRows = append(j.apRows, i)
	}
	// Each row tile's A (packed, a part's, or in place) and kernel, found
	// once for all its panels.
	j.tiles = j.tiles[:0]
	for t := 0; t < nTiles; t++ {
		i, mw := ic+t*mr, min(mr, mb-t*mr)
		tl := tile{i: i, mw: mw, rs: 1, cs: mr, fn: fn, kr: mr}
		p := slices.Index(j.apRows, i)
		switch {
		case p >= 0:
			tl.a, tl.da = j.ap[p*mr*kb:], mr*kb
			if j.mk.packed != nil {
				tl.fn = j.mk.packed
			}
		case j.parts != nil:
			tl.a, tl.cs = j.partTile(i, pc)
		default:
			tl.a = j.a[i*j.rsA+pc*j.csA:]
			tl.rs, tl.cs, tl.da = j.rsA, j.csA, mr*j.rsA
			if j.csA == 1 && j.mk.cs1 != nil {
				tl.fn = j.mk.cs1
			}
		}
		if j.ahead && p < 0 {
			tl.fn = j.mk.ahead // in place: rows contiguous (rs 1)
		}
		if mw < mr {
			tl.fn, tl.kr = j.mk.forRows(mw) // the last row tile: its rows only
			if tl.kr == mw && mw < len(j.mk.pairs) {
				tl.pair = j.mk.pairs[mw]
			}
		}
		j.tiles = append(j.tiles, tl)
	}
	for t := len(j.tiles) - 1; t >= 0; t-- {
		tl := &j.tiles[t]
		if tl.mw < mr {
			continue
		}
		tl.run = 1
		if t+1 < len(j.tiles) {
			nx := &j.tiles[t+1]
			if nx.run > 0 && tl.da > 0 && nx.da == tl.da && nx.rs == tl.rs && nx.cs == tl.cs && len(tl.a) > tl.da && &tl.a[tl.da] == &nx.a[0] {
				tl.run += nx.run
			}
		}
	}
	chunk := kb * j.mk.pfBytes / 4
	outer, inner := nPanels, nTiles
	if rowsOuter {
		outer, inner = nTiles, nPanels
	}
	for o := 0; o < outer; o++ {
		for in := 0; in < inner; {
			q, t := o, in
			if rowsOuter {
				q, t = in, o
			}
			jr := q * nr
			nw := min(nr, nb-jr)
			tl := &j.tiles[t]
			i, mw := tl.i, tl.mw
			if rowsOuter && in == 0 && !packA {
				j.setTileAhead(i+aheadTiles*mr, pc, kb)
			}
			// A partial tile with a pair kernel waits on an even panel
			// for the next, if full too, and computes both on it: a tile
			// of 2 rows alone has 4 independent sums, too few to cover
			// the FMAs' latency, a pair 8. On AMD EPYC Zen 3 a 2-row pair
			// took 0.5-0.6 of the time of its two tiles a call each, a
			// third of two full tiles' (a third of their FMAs); in Xᵀ·dY
			// of 4096×128 by 4096×256 (C's 128 rows: 21 tiles of 6 and
			// one of 2) the 2-row tiles' share of the time fell from 3.0
			// to 1.9 %, for 1.6 % of the arithmetic. (Computing the pair
			// on the even panel instead, which would bring the odd one
			// into L1 for its full tiles, measured the same.)
			paired := !rowsOuter && tl.pair != nil && (q|1)*nr+nr <= nb
			if paired && q%2 == 0 {
				in++
				continue
			}
			pf, pfn := j.tileAh.next(chunk), 0
			if pf == nil {
				n := 1 // tiles this call may compute while prefetching
				if !rowsOuter && tl.run > 1 && nw == nr && tl.kr == mw {
					n = tl.run
				}
				pf, pfn = j.ah.nextRun(chunk, n)
			}
			// Once nothing is left to prefetch, one call computes the
			// full tiles to come in line: with rows outer the tile's
			// full panels, else the panel's next tiles whose A lie in
			// line (a call per tile cost a third of Cora's dY·Wᵀ, 16
			// deep, in this loop and the calls). With panels outer a
			// call computes such a run while prefetching too, as many
			// of its tiles as the next chunks lie in one piece for
			// (ahead.nextRun): Xᵀ·dY of 4096×128 by 4096×256 and X·W of
			// 4096×128 by 128×256 1.013-1.028× at one and two threads
			// (AMD EPYC Zen 3, paired rounds), the other layer shapes
			// unchanged.
			fn, run := tl.fn, oneTile
			switch {
			case paired: // q is odd: the tile of panels q-1 and q
				fn, q, jr, run = tl.pair, q-1, jr-nr, tileRun{n: 2, db: kb * nr, dc: nr}
			case pfn > 1:
				run = tileRun{n: pfn, da: tl.da, dc: mr * j.ldc}
			case pf != nil || nw < nr:
			case rowsOuter && tl.kr == mw:
				run = tileRun{n: (nb - jr) / nr, db: kb * nr, dc: nr}
				if tl.pair != nil && run.n > 1 {
					fn, run.n = tl.pair, run.n&^1
				}
			case !rowsOuter && tl.run > 1:
				run = tileRun{n: tl.run, da: tl.da, dc: mr * j.ldc}
			}
			if paired {
				in++ // one row tile, of two panels
			} else {
				in += run.n
			}
			panels := 1 // B panels the call reads
			if run.db > 0 {
				panels = run.n
			}
			bpanel := bp[q*kb*nr : (q+panels)*kb*nr]
			if tl.kr == mw && nw == nr {
				fn(kb, tl.a, tl.rs, tl.cs, bpanel, j.c[i*j.ldc+jc+jr:], j.ldc, j.alpha, acc, pf, run)
				continue
			}
			tl.fn(kb, tl.a, tl.rs, tl.cs, bpanel, j.tmp, nr, j.alpha, false, pf, oneTile)
			for r := 0; r < mw; r++ {
				dst := j.c[(i+r)*j.ldc+jc+jr:]
				dst = dst[:nw]
				src := j.tmp[r*nr : r*nr+nw]
				if !acc {
					copy(dst, src)
					continue
				}
				for jj, v := range src {
					dst[jj] += v
				}
			}
		}
	}
}
