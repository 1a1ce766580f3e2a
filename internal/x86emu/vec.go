package x86emu

import (
	"encoding/binary"
	"math"
)

// vsrc returns the w lanes of a vector source: a register's, w floats of
// memory, or (bcst) one float of memory repeated.
func (m *machine) vsrc(a operand, w int, bcst bool) [16]uint32 {
	var v [16]uint32
	switch {
	case a.kind == opReg:
		copy(v[:w], m.vec[a.reg.n][:w])
	case bcst:
		x := binary.LittleEndian.Uint32(m.bytes(m.addr(a.mem), 4))
		for i := range w {
			v[i] = x
		}
	default:
		b := m.bytes(m.addr(a.mem), 4*w)
		for i := range w {
			v[i] = binary.LittleEndian.Uint32(b[4*i:])
		}
	}
	return v
}

// vset writes the w lanes of v to a vector register and zeroes the lanes
// above them, as every VEX- and EVEX-encoded instruction does.
func (m *machine) vset(r reg, v [16]uint32, w int) {
	dst := &m.vec[r.n]
	copy(dst[:w], v[:w])
	clear(dst[w:])
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
	case opVMOVUPS:
		if a[1].kind == opMem {
			w := a[0].reg.width()
			b := m.bytes(m.addr(a[1].mem), 4*w)
			for i := range w {
				binary.LittleEndian.PutUint32(b[4*i:], m.vec[a[0].reg.n][i])
			}
			return
		}
		w := a[1].reg.width()
		m.vset(a[1].reg, m.vsrc(a[0], w, false), w)
	case opMOVSS:
		if a[1].kind == opMem {
			binary.LittleEndian.PutUint32(m.bytes(m.addr(a[1].mem), 4), m.vec[a[0].reg.n][0])
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
		x, y := m.vsrc(a[1], w, false), m.vsrc(a[0], w, false)
		var v [16]uint32
		for l := 0; l < w; l += 4 {
			v[l] = u32(f32(x[l]) + f32(x[l+1]))
			v[l+1] = u32(f32(x[l+2]) + f32(x[l+3]))
			v[l+2] = u32(f32(y[l]) + f32(y[l+1]))
			v[l+3] = u32(f32(y[l+2]) + f32(y[l+3]))
		}
		m.vset(a[2].reg, v, w)
	default:
		// Three-operand arithmetic: Go's "OP s2, s1, d" is Intel's
		// "op d, s1, s2".
		w := a[2].reg.width()
		s2 := m.vsrc(a[0], w, in.bcst)
		s1 := m.vec[a[1].reg.n]
		d := m.vec[a[2].reg.n]
		var v [16]uint32
		for i := range w {
			x, y, z := f32(s1[i]), f32(s2[i]), f32(d[i])
			switch in.op {
			case opVXORPS:
				v[i] = s1[i] ^ s2[i]
				continue
			case opVADDPS:
				v[i] = u32(x + y)
			case opVSUBPS:
				v[i] = u32(x - y)
			case opVMULPS:
				v[i] = u32(x * y)
			case opVFMADD231PS: // d = s1*s2 + d
				v[i] = u32(fma32(x, y, z))
			case opVFMADD213PS: // d = s1*d + s2
				v[i] = u32(fma32(x, z, y))
			default:
				m.failf("opcode not implemented")
			}
		}
		m.vset(a[2].reg, v, w)
	}
}

// fma32 returns x*y + z rounded once to float32. The product of two
// float32s is exact in float64; the sum is computed exactly as s + e (the
// TwoSum transformation), and s is rounded to odd where e is not zero, so
// that the final rounding to float32 (29 bits fewer) is correctly rounded
// to nearest even. Every operation converts explicitly, so the compiler may
// not fuse any of them.
func fma32(x, y, z float32) float32 {
	p := float64(float64(x) * float64(y))
	c := float64(z)
	s := float64(p + c)
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
