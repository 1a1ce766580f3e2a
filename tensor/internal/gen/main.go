//go:build ignore

// Command gen writes tensor/kernels_amd64.s, the amd64 assembly micro-kernels
// of package tensor. Run it with "go generate ./tensor" (see tensor/gen.go).
//
// The kernels are generated rather than hand-written because the register
// tile (MR rows × NR columns) is a parameter: one template produces the
// AVX2/FMA 6×16 kernel and the AVX-512 12×32 and 24×16 kernels, and the
// kernels for the first rows of each tile (for the last, partial row tile of
// C). It also writes kernels_amd64.go, their Go declarations.
package main

import (
	"bytes"
	"fmt"
	"go/format"
	"os"
)

var out bytes.Buffer

func p(format string, args ...any) { fmt.Fprintf(&out, "\t"+format+"\n", args...) }
func label(l string)               { fmt.Fprintf(&out, "%s:\n", l) }

// gemm emits func name(k int, a *float32, rsA, csA int, b *float32, c *float32, ldc int, alpha float32, accumulate int, pf *float32, n, da, db, dc int).
// It computes C[0:mr,0:nr] (+)= alpha * sum_k A[r*rsA + k*csA] * B[k*nr + j]
// (strides in elements; B packed as k rows of nr floats), adding to C when
// accumulate != 0 and overwriting C (without reading it) otherwise; then
// the same for n-1 more tiles (n >= 1), each with A, B and C da, db and dc
// floats on from the previous tile's: the next column panels of a row
// tile, or the next row tiles of a column panel. One call for a run of
// tiles saves the caller's loop and a call per tile, which were a third
// of a shallow product's time (Cora's dY·Wᵀ, depth 16).
//
// With aheadBytes > 0 (only for an A whose rows are contiguous, rsA 1) it
// also prefetches into L1, a depth at a time, a line every 64 of the mr·4
// bytes from aheadBytes on past row 0's element: the A of the row tile that
// far on in a transposed A read in place, whose rows (X's columns) the
// hardware prefetchers do not follow. With tiles mr·4 bytes apart, the
// tiles' prefetches together cover every line.
//
// With aheadRows > 0 (only for an A read in place untransposed, cs1A) it
// prefetches into L2 (PREFETCHT1) the A of the rows aheadRows on, each
// row's line once every 16 depths (a pass of 16, spread over its depths):
// the row tile that far on, whose mr rows the kernel reads as mr streams a
// row apart, more than the hardware prefetchers follow. Its FMAs take their
// A operand broadcast from memory, one instruction instead of two: a pass
// of 16 depths with separate broadcasts (784 instructions) ran at 0.87-0.92
// of the general kernel's speed on operands in cache. Measured on AMD EPYC
// Zen 5 (24×16 tiles, medians of paired rounds, A written out of cache
// before each call), speed against the general kernel at one and two
// threads: X·Wᵀ of 1024×512 by 16×512 1.12 and 1.02, of 4096×512 1.26 and
// 1.24; GraphSAGE's output layer (two 1024×256 inputs, 16 outputs) 1.35
// and 1.47, with 4096 rows 2.03 and 1.32; Cora's 2708×1433 by 1433×16 1.14
// and 1.11 (0.97 at one thread before passes of 4 took what those of 16
// leave of its depth blocks of 239). With A in cache from the call
// before: 0.96-1.01. Into L1
// (PREFETCHT0), two tiles of 2 KiB rows (96 KiB) outgrow it: 0.77-0.81 in
// cache. It needs R14, R15 and R9 (free in cs1A) for the offsets of
// aheadRows, +1 and +2 rows.
//
// With pfStep > 0 it also prefetches into L2 (PREFETCHT1) the bytes
// [pf, pf + n*k*pfStep), one line every 64/pfStep depths: what the caller
// packs next, so that the packing reads it from L2 instead of memory while
// the prefetches overlap the arithmetic. (pfStep 0: pf is ignored; the
// 24-row kernels have no register left for it.)
//
// Every kernel adds the depths to each element of C in the same order
// (one accumulator per element, depth 0 first), so an element comes out
// bitwise the same whichever kernel, full or partial tile, computed it: the
// fused products (GemmTNMulti, GemmNTMulti) rely on that. A kernel of few
// rows then has fewer independent sums than the FMA latency could hide (8
// are needed at 2 FMAs a cycle and 4 cycles): splitting each sum over
// alternate depths would hide it but change the rounding.
//
// With pair it computes the tiles two at a time, the second tile's B and C
// db and dc floats on from the first's (n even): the same sums, with twice
// the independent sums (a 2-row tile of two column panels has 8 on AVX2,
// where one has 4). It prefetches pfStep bytes a depth for each pair. The
// second tile's B has a pointer of its own: read as (DI)(R10*1), indexed,
// a 2-row pair took 6 cycles a depth, as long as a full 6×16 tile's 12
// FMAs, and about 4.3 with R13 (AMD EPYC Zen 3, panels in L1).
func gemm(name string, mr, nr int, wide bool, pfStep, aheadBytes, aheadRows int, layout aLayout, pair bool) {
	reg := "Y"
	vl := 8
	if wide {
		reg = "Z"
		vl = 16
	}
	nv := nr / vl // vectors per row of a tile
	nvt := nv     // vectors per row of the tiles computed at once
	if pair {
		nvt = 2 * nv
	}
	nacc := mr * nvt
	// cAt is where vector v of a row's vectors lies from DX, the row's C:
	// the second tile's (pair) R11 bytes on.
	cAt := func(v int) string {
		if v < nv {
			return fmt.Sprintf("%d(DX)", v*vl*4)
		}
		return fmt.Sprintf("%d(DX)(R11*1)", (v-nv)*vl*4)
	}
	if regs := map[bool]int{false: 16, true: 32}[wide]; nacc+nvt+2 > regs {
		panic(name + ": too many registers")
	}
	// Row-pointer registers: each covers three rows: (P), (P)(R8*1), (P)(R8*2).
	ptrs := []string{"SI", "AX", "BX", "R11", "R12", "R13", "DX", "R10"}
	ngroups := (mr + 2) / 3
	if ngroups > len(ptrs) {
		panic("too many rows")
	}
	bregs := nacc // first B register
	bc := []string{fmt.Sprintf("%s%d", reg, nacc+nvt), fmt.Sprintf("%s%d", reg, nacc+nvt+1)}
	if pair && ngroups > 3 {
		panic(name + ": R11 or R13 is a row pointer") // they hold dc and B below
	}
	fmt.Fprintf(&out, "\n// func %s(k int, a *float32, rsA, csA int, b *float32, c *float32, ldc int, alpha float32, accumulate int, pf *float32, n, da, db, dc int)\n", name)
	fmt.Fprintf(&out, "TEXT ·%s(SB), NOSPLIT, $0-112\n", name)
	// The prefetch pointer runs on from one tile to the next; a, b and c
	// are moved on in their argument slots.
	if pfStep > 0 {
		if ngroups > 4 {
			panic(name + ": no register for the prefetch pointer")
		}
		p("MOVQ pf+72(FP), R12")
	}
	label(name + "_tile")
	// Prefetch the C tile's lines before the depth loop, so that their
	// misses (C is written once per depth block, usually from memory)
	// overlap the arithmetic instead of stalling the stores at the end.
	// DX and R10 are free here: the row pointers below are set after.
	p("MOVQ ldc+48(FP), R10")
	p("SHLQ $2, R10")
	// cRows emits prefetches of the lines at offs of each of the tile's
	// rows of C.
	cRows := func(offs ...int) {
		for t := 0; t < 1+b2i(pair); t++ {
			p("MOVQ c+40(FP), DX")
			if t == 1 { // the second tile's C
				p("MOVQ dc+104(FP), CX")
				p("LEAQ (DX)(CX*4), DX")
			}
			for r := 0; r < mr; r++ {
				for _, off := range offs {
					p("PREFETCHT0 %d(DX)", off)
				}
				if r != mr-1 {
					p("ADDQ R10, DX")
				}
			}
		}
	}
	var lines []int
	for off := 0; off < nr*4; off += 64 {
		lines = append(lines, off)
	}
	cRows(lines...)
	// A row of the tile that does not start on a line boundary (C's
	// stride not a multiple of 16 floats, as in dY·Wᵀ with 602 outputs)
	// ends in one line more: prefetch each row's last line too. Without
	// it the stores missed that line, 5-11 % of such a product's time
	// (16384×256 by 256×602 at one thread, Intel Xeon, both kernel sets).
	// Tiles whose rows all start on a boundary skip it.
	p("MOVQ c+40(FP), CX")
	p("ORQ R10, CX")
	p("TESTQ $63, CX")
	p("JEQ %s_cpf", name)
	cRows(nr*4 - 4)
	label(name + "_cpf")
	p("MOVQ k+0(FP), CX")
	p("MOVQ a+8(FP), SI")
	p("MOVQ rsA+16(FP), R8")
	p("SHLQ $2, R8")
	p("MOVQ csA+24(FP), R9")
	p("SHLQ $2, R9")
	p("MOVQ b+32(FP), DI")
	if pair { // the second tile's B is at R13
		p("MOVQ db+96(FP), R13")
		p("LEAQ (DI)(R13*4), R13")
	}
	for g := 1; g < ngroups; g++ {
		// ptr[g] = ptr[g-1] + 3*rs
		p("LEAQ (%s)(R8*2), %s", ptrs[g-1], ptrs[g])
		p("ADDQ R8, %s", ptrs[g])
	}
	// aheadRegs hold the byte offsets of the rows aheadRows, +1 and +2 on
	// from a row pointer's first row (cs1A: R9, csA, is not read).
	aheadRegs := [3]string{"R14", "R15", "R9"}
	pass := unroll
	if aheadRows > 0 {
		if layout != cs1A {
			panic(name + ": rows ahead need an A read in place untransposed")
		}
		pass = 16 // one line a row
		p("IMUL3Q $%d, R8, R14", aheadRows)
		p("LEAQ (R14)(R8*1), R15")
		p("LEAQ (R15)(R8*1), R9")
	}
	for i := 0; i < nacc; i++ {
		p("VXORPS %s%d, %s%d, %s%d", reg, i, reg, i, reg, i)
	}
	// at is the operand at displacement off from base ("(base)" at 0).
	at := func(off int, base string) string {
		if off == 0 {
			return "(" + base + ")"
		}
		return fmt.Sprintf("%d(%s)", off, base)
	}
	tail := false
	// depth emits the work of depth d of the loop's pass: with a fixed
	// layout every address is a displacement from the pass's pointers.
	depth := func(d int) {
		for off := 0; off < mr*4 && aheadBytes > 0; off += 64 {
			p("PREFETCHT0 %d(SI)", aheadBytes+off+d*layout.depthBytes(mr))
		}
		if pfStep > 0 {
			p("PREFETCHT1 %s", at(d*pfStep, "R12"))
		}
		// Rows d, d+16, ... of the rows ahead: each row once a pass, at
		// the pass's first depth (a row that does not start on a line
		// boundary has its last line left to the hardware).
		for r := d; aheadRows > 0 && !tail && r < mr; r += pass {
			p("PREFETCHT1 (%s)(%s*1)", ptrs[r/3], aheadRegs[r%3])
		}
		for v := 0; v < nvt; v++ {
			base := "DI"
			if v >= nv {
				base = "R13"
			}
			p("VMOVUPS %d(%s), %s%d", d*nr*4+(v%nv)*vl*4, base, reg, bregs+v)
		}
		for r := 0; r < mr; r++ {
			var addr string
			if layout == packedA {
				addr = at(4*r+d*mr*4, "SI")
			} else {
				addr = at(d*layout.depthBytes(mr), ptrs[r/3]) + [3]string{"", "(R8*1)", "(R8*2)"}[r%3]
			}
			if aheadRows > 0 && nvt == 1 {
				// One instruction: the FMA broadcasts its memory operand.
				p("VFMADD231PS.BCST %s, %s%d, %s%d", addr, reg, bregs, reg, r)
				continue
			}
			b := bc[r%2]
			p("VBROADCASTSS %s, %s", addr, b)
			for v := 0; v < nvt; v++ {
				p("VFMADD231PS %s%d, %s, %s%d", reg, bregs+v, b, reg, r*nvt+v)
			}
		}
	}
	// next moves the pointers on by n depths.
	next := func(n int) {
		groups := ngroups
		if layout == packedA {
			groups = 1 // one pointer: every row is a displacement from it
		}
		for _, ptr := range ptrs[:groups] {
			if layout == anyA {
				p("ADDQ R9, %s", ptr)
			} else {
				p("ADDQ $%d, %s", n*layout.depthBytes(mr), ptr)
			}
		}
		p("ADDQ $%d, DI", n*nr*4)
		if pair {
			p("ADDQ $%d, R13", n*nr*4)
		}
		if pfStep > 0 {
			p("ADDQ $%d, R12", n*pfStep)
		}
	}
	p("TESTQ CX, CX")
	p("JEQ %s_done", name)
	if layout != anyA {
		// Passes of unroll depths (of 16 with rows ahead, then of unroll
		// for what is left), then one depth a pass: the same sums in the
		// same order as the general kernel, with a fifth of its pointer
		// and loop instructions.
		passes := []int{pass}
		if pass > unroll {
			passes = append(passes, unroll)
		}
		for i, n := range passes {
			after := name + "_loop" // at least one depth left (k > 0)
			if i > 0 {
				after = name + "_rest" // perhaps none left
			}
			if i+1 < len(passes) {
				after = fmt.Sprintf("%s_pass%d", name, passes[i+1])
			}
			loop := fmt.Sprintf("%s_loop%d", name, n)
			if i == 0 {
				loop = name + "_loopU"
			}
			tail = i > 0 // rows ahead only in the first passes
			p("CMPQ CX, $%d", n)
			p("JB %s", after)
			label(loop)
			for d := 0; d < n; d++ {
				depth(d)
			}
			next(n)
			p("SUBQ $%d, CX", n)
			p("CMPQ CX, $%d", n)
			p("JAE %s", loop)
			if after != name+"_loop" {
				label(after)
			}
		}
		p("TESTQ CX, CX")
		p("JEQ %s_done", name)
	}
	label(name + "_loop")
	tail = true // a depth a pass: no rows ahead (the last few depths)
	depth(0)
	next(1)
	p("DECQ CX")
	p("JNE %s_loop", name)
	label(name + "_done")
	p("MOVQ c+40(FP), DX")
	p("MOVQ ldc+48(FP), R10")
	p("SHLQ $2, R10")
	p("VBROADCASTSS alpha+56(FP), %s", bc[0])
	if pair { // the second tile's C is (DX)(R11*1)
		p("MOVQ dc+104(FP), R11")
		p("SHLQ $2, R11")
	}
	p("MOVQ accumulate+64(FP), CX")
	p("TESTQ CX, CX")
	p("JEQ %s_store", name)
	for r := 0; r < mr; r++ {
		for v := 0; v < nvt; v++ {
			p("VFMADD213PS %s, %s, %s%d", cAt(v), bc[0], reg, r*nvt+v)
			p("VMOVUPS %s%d, %s", reg, r*nvt+v, cAt(v))
		}
		if r != mr-1 {
			p("ADDQ R10, DX")
		}
	}
	p("JMP %s_next", name)
	label(name + "_store")
	for r := 0; r < mr; r++ {
		for v := 0; v < nvt; v++ {
			p("VMULPS %s, %s%d, %s%d", bc[0], reg, r*nvt+v, reg, r*nvt+v)
			p("VMOVUPS %s%d, %s", reg, r*nvt+v, cAt(v))
		}
		if r != mr-1 {
			p("ADDQ R10, DX")
		}
	}
	label(name + "_next")
	for _, x := range [][2]string{{"da+88(FP)", "a+8(FP)"}, {"db+96(FP)", "b+32(FP)"}, {"dc+104(FP)", "c+40(FP)"}} {
		p("MOVQ %s, CX", x[0])
		p("SHLQ $%d, CX", 2+b2i(pair)) // past both tiles of a pair
		p("ADDQ CX, %s", x[1])
	}
	if pair {
		p("SUBQ $2, n+80(FP)")
	} else {
		p("DECQ n+80(FP)")
	}
	p("JNE %s_tile", name)
	p("VZEROUPPER")
	p("RET")
}

// axpy emits func name(n int, alpha float32, x, y *float32): y[i] += alpha*x[i]
// for i < n&^7; the caller handles the tail.
func axpy(name string) {
	fmt.Fprintf(&out, "\n// func %s(n int, alpha float32, x, y *float32)\n", name)
	fmt.Fprintf(&out, "TEXT ·%s(SB), NOSPLIT, $0-32\n", name)
	p("MOVQ n+0(FP), CX")
	p("VBROADCASTSS alpha+8(FP), Y15")
	p("MOVQ x+16(FP), SI")
	p("MOVQ y+24(FP), DI")
	p("CMPQ CX, $32")
	p("JLT %s_tail", name)
	label(name + "_loop32")
	for v := 0; v < 4; v++ {
		p("VMOVUPS %d(DI), Y%d", v*32, v)
	}
	for v := 0; v < 4; v++ {
		p("VFMADD231PS %d(SI), Y15, Y%d", v*32, v)
	}
	for v := 0; v < 4; v++ {
		p("VMOVUPS Y%d, %d(DI)", v, v*32)
	}
	p("ADDQ $128, SI")
	p("ADDQ $128, DI")
	p("SUBQ $32, CX")
	p("CMPQ CX, $32")
	p("JGE %s_loop32", name)
	label(name + "_tail")
	p("CMPQ CX, $8")
	p("JLT %s_done", name)
	p("VMOVUPS (DI), Y0")
	p("VFMADD231PS (SI), Y15, Y0")
	p("VMOVUPS Y0, (DI)")
	p("ADDQ $32, SI")
	p("ADDQ $32, DI")
	p("SUBQ $8, CX")
	p("JMP %s_tail", name)
	label(name + "_done")
	p("VZEROUPPER")
	p("RET")
}

// axpyPF emits func name(n int, alpha float32, x, y, pf *float32): like axpy
// but it also prefetches the n floats at pf (the next source row of a
// sparse aggregation) while it works.
func axpyPF(name string) {
	fmt.Fprintf(&out, "\n// func %s(n int, alpha float32, x, y, pf *float32)\n", name)
	fmt.Fprintf(&out, "TEXT ·%s(SB), NOSPLIT, $0-40\n", name)
	p("MOVQ n+0(FP), CX")
	p("VBROADCASTSS alpha+8(FP), Y15")
	p("MOVQ x+16(FP), SI")
	p("MOVQ y+24(FP), DI")
	p("MOVQ pf+32(FP), DX")
	p("CMPQ CX, $32")
	p("JLT %s_tail", name)
	label(name + "_loop32")
	p("PREFETCHT0 (DX)")
	p("PREFETCHT0 64(DX)")
	for v := 0; v < 4; v++ {
		p("VMOVUPS %d(DI), Y%d", v*32, v)
	}
	for v := 0; v < 4; v++ {
		p("VFMADD231PS %d(SI), Y15, Y%d", v*32, v)
	}
	for v := 0; v < 4; v++ {
		p("VMOVUPS Y%d, %d(DI)", v, v*32)
	}
	p("ADDQ $128, SI")
	p("ADDQ $128, DI")
	p("ADDQ $128, DX")
	p("SUBQ $32, CX")
	p("CMPQ CX, $32")
	p("JGE %s_loop32", name)
	label(name + "_tail")
	p("CMPQ CX, $8")
	p("JLT %s_done", name)
	p("VMOVUPS (DI), Y0")
	p("VFMADD231PS (SI), Y15, Y0")
	p("VMOVUPS Y0, (DI)")
	p("ADDQ $32, SI")
	p("ADDQ $32, DI")
	p("SUBQ $8, CX")
	p("JMP %s_tail", name)
	label(name + "_done")
	p("VZEROUPPER")
	p("RET")
}

// dot emits func name(n int, x, y *float32) float32 over i < n&^7.
func dot(name string) {
	fmt.Fprintf(&out, "\n// func %s(n int, x, y *float32) float32\n", name)
	fmt.Fprintf(&out, "TEXT ·%s(SB), NOSPLIT, $0-28\n", name)
	p("MOVQ n+0(FP), CX")
	p("MOVQ x+8(FP), SI")
	p("MOVQ y+16(FP), DI")
	for v := 0; v < 4; v++ {
		p("VXORPS Y%d, Y%d, Y%d", v, v, v)
	}
	p("CMPQ CX, $32")
	p("JLT %s_tail", name)
	label(name + "_loop32")
	for v := 0; v < 4; v++ {
		p("VMOVUPS %d(SI), Y%d", v*32, v+4)
	}
	for v := 0; v < 4; v++ {
		p("VFMADD231PS %d(DI), Y%d, Y%d", v*32, v+4, v)
	}
	p("ADDQ $128, SI")
	p("ADDQ $128, DI")
	p("SUBQ $32, CX")
	p("CMPQ CX, $32")
	p("JGE %s_loop32", name)
	label(name + "_tail")
	p("CMPQ CX, $8")
	p("JLT %s_done", name)
	p("VMOVUPS (SI), Y4")
	p("VFMADD231PS (DI), Y4, Y0")
	p("ADDQ $32, SI")
	p("ADDQ $32, DI")
	p("SUBQ $8, CX")
	p("JMP %s_tail", name)
	label(name + "_done")
	p("VADDPS Y1, Y0, Y0")
	p("VADDPS Y3, Y2, Y2")
	p("VADDPS Y2, Y0, Y0")
	p("VEXTRACTF128 $1, Y0, X1")
	p("VADDPS X1, X0, X0")
	p("VHADDPS X0, X0, X0")
	p("VHADDPS X0, X0, X0")
	p("VZEROUPPER")
	p("MOVSS X0, ret+24(FP)")
	p("RET")
}

// aLayout is what a kernel knows of where A's elements lie.
type aLayout int

const (
	anyA    aLayout = iota // rows rsA and depths csA apart, both given at run time
	cs1A                   // depths contiguous (csA 1: A read in place, untransposed)
	packedA                // rows contiguous and depths mr apart (rsA 1, csA mr: packed)
)

// depthBytes is how far apart in bytes a row's consecutive depths lie
// (0 for anyA: not known when generating).
func (l aLayout) depthBytes(mr int) int {
	switch l {
	case cs1A:
		return 4
	case packedA:
		return 4 * mr
	}
	return 0
}

// unroll is how many depths a pass of a fixed-layout kernel computes.
const unroll = 4

// tile is one register tile of a kernel set: the full mr×nr kernel and the
// kernels for the first r rows of a tile, for each r in rows.
type tile struct {
	prefix string // function names: prefix + "x" + rows + "x" + nr
	set    string // Go names: set+"Rows" lists the partial kernels by rows, set+"PF" is pfStep
	mr, nr int
	wide   bool
	rows   []int
	// pfStep is the bytes prefetched a depth (see gemm); 24 rows leave
	// no register for it.
	pfStep int
	// ahead, if not 0, adds a full-tile kernel prefix+"x"+mr+"x"+nr+"Ahead"
	// (Go name set+"Ahead") for an A whose rows are contiguous (rsA 1, a
	// transposed A read in place) that prefetches, a depth at a time, the
	// A of the row tile ahead tiles on (see gemm's aheadBytes).
	ahead int
	// layouts, if set, adds full-tile kernels for A read in place
	// untransposed (prefix+...+"Cs1", Go name set+"Cs1") and for A packed
	// (..."Packed", set+"Packed"), which compute unroll depths a pass.
	layouts bool
	// pairs lists the row counts r of partial tiles that also get a kernel
	// prefix+"x"+r+"x"+nr+"Pair" (Go: set+"Pairs"[r]) computing two
	// adjacent column panels' tiles at once (see gemm's pair): those
	// whose tile alone has fewer independent sums than the FMAs need.
	pairs []int
	// cs1Ahead, if not 0 (and not layouts), adds a full-tile kernel
	// prefix+...+"Cs1" (Go name set+"Cs1") for an A read in place
	// untransposed that prefetches the A of the row tile cs1Ahead tiles on
	// (see gemm's aheadRows), 16 depths a pass.
	cs1Ahead int
}

var tiles = []tile{
	// A partial tile of r rows runs the smallest kernel of r rows or more
	// (into scratch when it has more): AVX-512 every second or fourth
	// count, less code for about the same time. (5 of 6 rows on AVX2 took
	// as long as 6 on Zen 4.)
	{"sgemmAVX2", "avx2", 6, 16, false, []int{1, 2, 3, 4}, 8, 2, true, []int{1, 2}, 0},
	{"sgemmAVX512", "avx512Wide", 12, 32, true, []int{2, 4, 6, 8, 10}, 32, 0, false, nil, 0},
	{"sgemmAVX512", "avx512Narrow", 24, 16, true, []int{4, 8, 12, 16, 20}, 0, 2, false, nil, 2},
}

// stub writes the Go declaration of kernel n and its kernelFn, which
// calls it directly rather than through a func value (a 6×16 call is about
// 0.5 µs of work).
func stub(w *bytes.Buffer, n string, pair bool) {
	fmt.Fprintf(w, "\n//go:noescape\nfunc %s(k int, a *float32, rsA, csA int, b *float32, c *float32, ldc int, alpha float32, accumulate int, pf *float32, n, da, db, dc int)\n", n)
	fmt.Fprintf(w, "\nfunc %sFn(k int, a []float32, rsA, csA int, b, c []float32, ldc int, alpha float32, acc bool, pf []float32, r tileRun) {\n", n)
	if pair {
		w.WriteString("\tif r.n%2 != 0 {\n\t\tpanic(\"tensor: a pair kernel's run has an odd number of tiles\")\n\t}\n")
	}
	fmt.Fprintf(w, "\t%s(k, &a[0], rsA, csA, &b[0], &c[0], ldc, alpha, b2i(acc), pfStart(pf, b), r.n, r.da, r.db, r.dc)\n}\n", n)
}

// variant is a full-tile kernel of a tile beside its general one.
type variant struct {
	suffix, doc string // name suffix; what A is, for the Go comment
	aheadBytes  int
	aheadRows   int
	layout      aLayout
}

// variants returns the full-tile variants t asks for (ahead, layouts).
func (t tile) variants() []variant {
	var vs []variant
	if t.ahead > 0 {
		vs = append(vs, variant{"Ahead", fmt.Sprintf("whose rows are contiguous,\n// prefetching the A of the row tile %d on", t.ahead), t.ahead * t.mr * 4, 0, anyA})
	}
	if t.layouts {
		vs = append(vs,
			variant{"Cs1", fmt.Sprintf("read in place untransposed (csA 1),\n// %d depths a pass", unroll), 0, 0, cs1A},
			variant{"Packed", fmt.Sprintf("packed (rsA 1, csA mr),\n// %d depths a pass", unroll), 0, 0, packedA})
	} else if t.cs1Ahead > 0 {
		vs = append(vs, variant{"Cs1", fmt.Sprintf("read in place untransposed (csA 1),\n// prefetching the A of the row tile %d on, 16 depths a pass", t.cs1Ahead), 0, t.cs1Ahead * t.mr, cs1A})
	}
	return vs
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func name(t tile, r int) string { return fmt.Sprintf("%sx%dx%d", t.prefix, r, t.nr) }

func main() {
	out.WriteString("// Code generated by tensor/internal/gen; DO NOT EDIT.\n\n//go:build !noasm\n\n#include \"textflag.h\"\n")
	var stubs bytes.Buffer
	stubs.WriteString("// Code generated by tensor/internal/gen; DO NOT EDIT.\n\n//go:build amd64 && !noasm\n\npackage tensor\n\n")
	stubs.WriteString("// The micro-kernels of kernels_amd64.s: each computes C[0:R, 0:NR] (+)= alpha*A·B\n")
	stubs.WriteString("// (see kernelFn) for its R rows and NR columns; nameFn is its kernelFn.\n")
	for _, t := range tiles {
		for _, r := range append([]int{t.mr}, t.rows...) {
			n := name(t, r)
			gemm(n, r, t.nr, t.wide, t.pfStep, 0, 0, anyA, false)
			stub(&stubs, n, false)
		}
		for _, r := range t.pairs {
			n := name(t, r) + "Pair"
			gemm(n, r, t.nr, t.wide, t.pfStep, 0, 0, anyA, true)
			stub(&stubs, n, true)
		}
	}
	for _, t := range tiles {
		for _, v := range t.variants() {
			n := name(t, t.mr) + v.suffix
			gemm(n, t.mr, t.nr, t.wide, t.pfStep, v.aheadBytes, v.aheadRows, v.layout, false)
			stub(&stubs, n, false)
			fmt.Fprintf(&stubs, "\n// %s%s computes a full %d×%d tile of an A %s.\nvar %s%s kernelFn = %sFn\n", t.set, v.suffix, t.mr, t.nr, v.doc, t.set, v.suffix, n)
		}
	}
	for _, t := range tiles {
		fmt.Fprintf(&stubs, "\n// %sPF is the bytes a depth the %d×%d kernels prefetch.\nconst %sPF = %d\n", t.set, t.mr, t.nr, t.set, t.pfStep)
		fmt.Fprintf(&stubs, "\n// %sRows[r] computes the first r rows of a %d×%d tile.\nvar %sRows = []kernelFn{", t.set, t.mr, t.nr, t.set)
		for _, r := range t.rows {
			fmt.Fprintf(&stubs, "\n\t%d: %sFn,", r, name(t, r))
		}
		stubs.WriteString("\n}\n")
		if len(t.pairs) > 0 {
			fmt.Fprintf(&stubs, "\n// %sPairs[r] computes the first r rows of two adjacent %d×%d tiles at once\n// (an even run of them: see gemm in internal/gen).\nvar %sPairs = []kernelFn{", t.set, t.mr, t.nr, t.set)
			for _, r := range t.pairs {
				fmt.Fprintf(&stubs, "\n\t%d: %sPairFn,", r, name(t, r))
			}
			stubs.WriteString("\n}\n")
		}
	}
	axpy("axpyAVX2")
	axpyPF("axpyPFAVX2")
	dot("dotAVX2")
	goSrc, err := format.Source(stubs.Bytes())
	if err != nil {
		panic(err)
	}
	for file, b := range map[string][]byte{"kernels_amd64.s": out.Bytes(), "kernels_amd64.go": goSrc} {
		if err := os.WriteFile(file, b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
