package x86emu

import (
	"encoding/binary"
	"math"
)

// elem returns element i of esize bytes (2, 4 or 8) of v.
func elem(v *[16]uint32, i, esize int) uint64 {
	switch esize {
	case 2:
		return uint64(v[i/2] >> (16 * (i & 1)) & 0xffff)
	case 8:
		return uint64(v[2*i]) | uint64(v[2*i+1])<<32
	}
	return uint64(v[i])
}

// setElem sets element i of esize bytes of v to x.
func setElem(v *[16]uint32, i, esize int, x uint64) {
	switch esize {
	case 2:
		sh := 16 * (i & 1)
		v[i/2] = v[i/2]&^(0xffff<<sh) | uint32(x&0xffff)<<sh
	case 8:
		v[2*i], v[2*i+1] = uint32(x), uint32(x>>32)
	default:
		v[i] = uint32(x)
	}
}

func getN(b []byte, n int) uint64 {
	switch n {
	case 2:
		return uint64(binary.LittleEndian.Uint16(b))
	case 8:
		return binary.LittleEndian.Uint64(b)
	}
	return uint64(binary.LittleEndian.Uint32(b))
}

func putN(b []byte, n int, x uint64) {
	switch n {
	case 2:
		binary.LittleEndian.PutUint16(b, uint16(x))
	case 8:
		binary.LittleEndian.PutUint64(b, x)
	default:
		binary.LittleEndian.PutUint32(b, uint32(x))
	}
}

// full reports whether lanes holds all n (at most 32) elements.
func full(lanes uint64, n int) bool { return lanes&(1<<n-1) == 1<<n-1 }

// vsrc returns the w 32-bit lanes of a vector source: a register's, 4w
// bytes of memory, or (bcst) one element of esize bytes repeated. Of
// memory it reads only the elements of lanes (a mask register's bits, an
// element of esize bytes a bit), as the CPU does, which suppresses the
// faults of the elements left out.
func (m *machine) vsrc(a operand, w int, bcst bool, lanes uint64, esize int) [16]uint32 {
	var v [16]uint32
	n := 4 * w / esize
	switch {
	case a.kind == opReg:
		copy(v[:w], m.vec[a.reg.n][:w])
	case lanes&(1<<n-1) == 0:
	case bcst:
		x := getN(m.bytes(m.addr(a.mem), esize), esize)
		for i := range n {
			setElem(&v, i, esize, x)
		}
	case full(lanes, n):
		b := m.bytes(m.addr(a.mem), 4*w)
		for i := range w {
			v[i] = binary.LittleEndian.Uint32(b[4*i:])
		}
	default:
		base := m.addr(a.mem)
		for i := range n {
			if lanes>>i&1 != 0 {
				setElem(&v, i, esize, getN(m.bytes(base+uint64(esize*i), esize), esize))
			}
		}
	}
	return v
}

// lanes returns the elements an instruction loads, computes and stores:
// its mask register's, or all.
func (m *machine) lanes(in *inst) uint64 {
	if in.masked {
		return m.k[in.mask.n]
	}
	return ^uint64(0)
}

// vset writes the w lanes of v to a vector register and zeroes the lanes
// above them, as every VEX- and EVEX-encoded instruction does.
func (m *machine) vset(r reg, v [16]uint32, w int) {
	dst := &m.vec[r.n]
	copy(dst[:w], v[:w])
	clear(dst[w:])
}

// vout is vset under the instruction's mask: the elements it leaves out
// keep their value, or are zeroed (.Z).
func (m *machine) vout(in *inst, r reg, v [16]uint32, w int) {
	if in.masked {
		k, es := m.k[in.mask.n], in.esize
		for i := range 4 * w / es {
			if k>>i&1 == 0 {
				x := elem(&m.vec[r.n], i, es)
				if in.zero {
					x = 0
				}
				setElem(&v, i, es, x)
			}
		}
	}
	m.vset(r, v, w)
}

// vstore writes the w 32-bit lanes of register r to memory at a, the
// elements (of esize bytes) of lanes only.
func (m *machine) vstore(a memRef, r reg, w int, lanes uint64, esize int) {
	base := m.addr(a)
	n := 4 * w / esize
	if full(lanes, n) {
		b := m.wbytes(base, 4*w)
		for i := range w {
			binary.LittleEndian.PutUint32(b[4*i:], m.vec[r.n][i])
		}
		return
	}
	for i := range n {
		if lanes>>i&1 != 0 {
			putN(m.wbytes(base+uint64(esize*i), esize), esize, elem(&m.vec[r.n], i, esize))
		}
	}
}

func f32(x uint32) float32 { return math.Float32frombits(x) }
func u32(x float32) uint32 { return math.Float32bits(x) }

func (m *machine) execVec(in *inst) {
	a := in.args
	switch in.op {
	case opVZEROUPPER:
		for r := range 16 {
			clear(m.vec[r][4:])
		}
	case opVMOVUPS, opVMOVDQU, opVMOVDQU16, opVMOVDQU32, opVMOVDQU64:
		if a[1].kind == opMem {
			m.vstore(a[1].mem, a[0].reg, a[0].reg.width(), m.lanes(in), in.esize)
			return
		}
		w := a[1].reg.width()
		m.vout(in, a[1].reg, m.vsrc(a[0], w, false, m.lanes(in), in.esize), w)
	case opMOVSS:
		if a[1].kind == opMem {
			binary.LittleEndian.PutUint32(m.wbytes(m.addr(a[1].mem), 4), m.vec[a[0].reg.n][0])
			return
		}
		// A legacy SSE load: lanes 1-3 cleared, the upper lanes kept.
		v := &m.vec[a[1].reg.n]
		v[0] = binary.LittleEndian.Uint32(m.bytes(m.addr(a[0].mem), 4))
		v[1], v[2], v[3] = 0, 0, 0
	case opVBROADCASTSS:
		w := a[1].reg.width()
		var x uint32
		if a[0].kind == opMem {
			x = binary.LittleEndian.Uint32(m.bytes(m.addr(a[0].mem), 4))
		} else {
			x = m.vec[a[0].reg.n][0]
		}
		var v [16]uint32
		for i := range w {
			v[i] = x
		}
		m.vset(a[1].reg, v, w)
	case opVEXTRACTF128:
		var v [16]uint32
		lo := 4 * int(a[0].imm&1)
		copy(v[:4], m.vec[a[1].reg.n][lo:lo+4])
		m.vset(a[2].reg, v, 4)
	case opVHADDPS:
		w := a[2].reg.width()
		x, y := m.vsrc(a[1], w, false, ^uint64(0), 4), m.vsrc(a[0], w, false, ^uint64(0), 4)
		var v [16]uint32
		for l := 0; l < w; l += 4 {
			v[l] = u32(f32(x[l]) + f32(x[l+1]))
			v[l+1] = u32(f32(x[l+2]) + f32(x[l+3]))
			v[l+2] = u32(f32(y[l]) + f32(y[l+1]))
			v[l+3] = u32(f32(y[l+2]) + f32(y[l+3]))
		}
		m.vset(a[2].reg, v, w)
	case opVPBROADCASTD:
		w := a[1].reg.width()
		var x uint32
		switch a[0].kind {
		case opReg:
			if a[0].reg.class == classGPR {
				x = uint32(m.gpr[a[0].reg.n])
			} else {
				x = m.vec[a[0].reg.n][0]
			}
		default:
			x = binary.LittleEndian.Uint32(m.bytes(m.addr(a[0].mem), 4))
		}
		var v [16]uint32
		for i := range w {
			v[i] = x
		}
		m.vset(a[1].reg, v, w)
	case opVPMOVZXWD:
		w := a[1].reg.width()
		b := m.bytes(m.addr(a[0].mem), 2*w)
		var v [16]uint32
		for i := range w {
			v[i] = uint32(binary.LittleEndian.Uint16(b[2*i:]))
		}
		m.vset(a[1].reg, v, w)
	case opVPMOVZXDQ: // the source's low dwords, each widened to a qword
		w := a[1].reg.width()
		src := m.vec[a[0].reg.n]
		var v [16]uint32
		for i := range w / 2 {
			v[2*i] = src[i]
		}
		m.vset(a[1].reg, v, w)
	case opVPCMPGTD, opVCMPPS:
		// Go's "VPCMPGTD s2, s1, d" sets d where s1 > s2; "VCMPPS $p,
		// s2, s1, d" where s1 p s2.
		x := a
		if in.op == opVCMPPS {
			x = a[1:]
		}
		w := x[1].reg.width()
		s2, s1 := m.vsrc(x[0], w, false, ^uint64(0), 4), m.vec[x[1].reg.n]
		var mask uint64
		for i := range w {
			var t bool
			if in.op == opVPCMPGTD {
				t = int32(s1[i]) > int32(s2[i])
			} else {
				t = cmpPredicate(f32(s1[i]), f32(s2[i]), a[0].imm)
			}
			if t {
				mask |= 1 << i
			}
		}
		m.setMask(x[2], mask, w)
	case opVMOVAPS, opVMOVDQA64, opVMOVDQA32:
		if a[1].kind == opMem {
			w := a[0].reg.width()
			m.aligned(a[1].mem, 4*w)
			m.vstore(a[1].mem, a[0].reg, w, m.lanes(in), in.esize)
			return
		}
		w := a[1].reg.width()
		if a[0].kind == opMem {
			m.aligned(a[0].mem, 4*w)
		}
		m.vout(in, a[1].reg, m.vsrc(a[0], w, false, m.lanes(in), in.esize), w)
	case opVMOVD:
		if a[1].reg.class == classGPR {
			m.gpr[a[1].reg.n] = uint64(m.vec[a[0].reg.n][0])
			return
		}
		m.vset(a[1].reg, [16]uint32{uint32(m.gpr[a[0].reg.n])}, 4)
	case opVCVTSI2SSQ, opVDIVSS:
		// "OP s2, s1, d": d[0] = s1[0] op s2[0], d[1:4] = s1[1:4].
		v := m.vec[a[1].reg.n]
		if in.op == opVDIVSS {
			v[0] = u32(f32(v[0]) / f32(m.vec[a[0].reg.n][0]))
		} else {
			v[0] = u32(float32(int64(m.gpr[a[0].reg.n])))
		}
		m.vset(a[2].reg, v, 4)
	case opKMOVW:
		var x uint64
		switch {
		case a[0].kind == opMem:
			x = uint64(binary.LittleEndian.Uint16(m.bytes(m.addr(a[0].mem), 2)))
		case a[0].reg.class == classGPR:
			x = m.gpr[a[0].reg.n]
		default:
			x = m.kmask(a[0].reg)
		}
		x &= 0xffff
		switch {
		case a[1].kind == opMem:
			binary.LittleEndian.PutUint16(m.wbytes(m.addr(a[1].mem), 2), uint16(x))
		case a[1].reg.class == classGPR:
			m.gpr[a[1].reg.n] = x
		default:
			m.k[a[1].reg.n] = x
		}
	case opKSHIFTRW:
		sh := uint(a[0].imm)
		x := m.kmask(a[1].reg) & 0xffff
		if sh > 15 {
			x = 0
		}
		m.k[a[2].reg.n] = x >> min(sh, 16)
	case opVMOVSS, opVMOVSD:
		n := 1
		if in.op == opVMOVSD {
			n = 2
		}
		if a[1].kind == opMem {
			b := m.wbytes(m.addr(a[1].mem), 4*n)
			for i := range n {
				binary.LittleEndian.PutUint32(b[4*i:], m.vec[a[0].reg.n][i])
			}
			return
		}
		var v [16]uint32
		b := m.bytes(m.addr(a[0].mem), 4*n)
		for i := range n {
			v[i] = binary.LittleEndian.Uint32(b[4*i:])
		}
		m.vset(a[1].reg, v, 4)
	case opVMULSS:
		// "VMULSS s2, s1, d": d[0] = s1[0]*s2[0], d[1:4] = s1[1:4].
		v := m.vec[a[1].reg.n]
		v[0] = u32(f32(v[0]) * f32(m.vec[a[0].reg.n][0]))
		m.vset(a[2].reg, v, 4)
	default:
		// Three-operand arithmetic: Go's "OP s2, s1, d" is Intel's
		// "op d, s1, s2".
		w := a[2].reg.width()
		s2 := m.vsrc(a[0], w, in.bcst, m.lanes(in), in.esize)
		s1 := m.vec[a[1].reg.n]
		d := m.vec[a[2].reg.n]
		var v [16]uint32
		switch in.op {
		case opVXORPS, opVPXORD:
			for i := range w {
				v[i] = s1[i] ^ s2[i]
			}
		case opVMAXPS: // s1 where s1 > s2, else s2 (NaN or equal: s2)
			for i := range w {
				v[i] = s2[i]
				if f32(s1[i]) > f32(s2[i]) {
					v[i] = s1[i]
				}
			}
		case opVADDPS:
			for i := range w {
				v[i] = u32(f32(s1[i]) + f32(s2[i]))
			}
		case opVSUBPS:
			for i := range w {
				v[i] = u32(f32(s1[i]) - f32(s2[i]))
			}
		case opVMULPS:
			for i := range w {
				v[i] = u32(f32(s1[i]) * f32(s2[i]))
			}
		case opVFMADD231PS: // d = s1*s2 + d
			for i := range w {
				v[i] = u32(fma32(f32(s1[i]), f32(s2[i]), f32(d[i])))
			}
		case opVFMADD213PS: // d = s1*d + s2
			for i := range w {
				v[i] = u32(fma32(f32(s1[i]), f32(d[i]), f32(s2[i])))
			}
		default:
			m.failf("opcode not implemented")
		}
		m.vout(in, a[2].reg, v, w)
	}
}

// fma32 returns x*y + z rounded once to float32. The product of two
// float32s is exact in float64, so the sum s rounded to float64 rounds
// to float32 as the exact sum would unless s lies exactly halfway between
// two float32s (a float32 midpoint between the exact sum and s would be a
// float64 nearer the sum than s) or in float32's subnormal range. There the
// sum is computed exactly as s + e (the TwoSum transformation), and s is
// rounded to odd where e is not zero, so that rounding it to float32 (29
// bits fewer) is correct. Every operation converts explicitly, so the
// compiler may not fuse any of them.
func fma32(x, y, z float32) float32 {
	p := float64(float64(x) * float64(y))
	c := float64(z)
	s := float64(p + c)
	if math.Float64bits(s)&(1<<29-1) != 1<<28 && math.Abs(s) >= 0x1p-126 {
		return float32(s)
	}
	if math.IsInf(s, 0) || math.IsNaN(s) {
		return float32(s)
	}
	bv := float64(s - p)
	e := float64(float64(p-float64(s-bv)) + float64(c-bv))
	if e != 0 && math.Float64bits(s)&1 == 0 {
		// Rounded to odd: the exact sum truncated, its last bit set. Of
		// s's two neighbours, that is the one on e's side.
		if e > 0 {
			s = math.Nextafter(s, math.Inf(1))
		} else {
			s = math.Nextafter(s, math.Inf(-1))
		}
	}
	return float32(s)
}

// kmask returns a mask register's bits.
func (m *machine) kmask(r reg) uint64 { return m.k[r.n] }

// setMask writes the w bits of mask to a mask register (the bits above
// cleared) or, for a vector destination (AVX2's compares), all-ones lanes
// where set.
func (m *machine) setMask(d operand, mask uint64, w int) {
	if d.reg.class == classK {
		m.k[d.reg.n] = mask
		return
	}
	var v [16]uint32
	for i := range w {
		if mask>>i&1 != 0 {
			v[i] = ^uint32(0)
		}
	}
	m.vset(d.reg, v, w)
}

// aligned fails the call where an aligned move's address is not a
// multiple of its size (the CPU faults).
func (m *machine) aligned(r memRef, size int) {
	if a := m.addr(r); a%uint64(size) != 0 {
		m.failf("aligned access of %d bytes at %#x", size, a)
	}
}

// cmpPredicate evaluates VCMPPS's predicate p (0-31; 16-31 are 0-15
// with the other signalling behaviour, which is not modelled).
func cmpPredicate(x, y float32, p int64) bool {
	unord := x != x || y != y
	switch p & 15 {
	case 0: // EQ_OQ
		return x == y
	case 1: // LT_OS
		return x < y
	case 2: // LE_OS
		return x <= y
	case 3: // UNORD_Q
		return unord
	case 4: // NEQ_UQ
		return x != y
	case 5: // NLT_US
		return !(x < y)
	case 6: // NLE_US
		return !(x <= y)
	case 7: // ORD_Q
		return !unord
	case 8: // EQ_UQ
		return x == y || unord
	case 9: // NGE_US
		return !(x >= y)
	case 10: // NGT_US
		return !(x > y)
	case 11: // FALSE_OQ
		return false
	case 12: // NEQ_OQ
		return x != y && !unord
	case 13: // GE_OS
		return x >= y
	case 14: // GT_OS
		return x > y
	}
	return true // TRUE_UQ
}
