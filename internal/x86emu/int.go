package x86emu

import (
	"encoding/binary"
	"math/bits"
)

// execInt runs the integer vector, mask-register and remaining scalar
// instructions (those of the random-number kernels), and reports whether
// in was one of them.
func (m *machine) execInt(in *inst) bool {
	a := in.args
	switch in.op {
	case opMULQ: // DX:AX = AX * src, unsigned
		hi, lo := bits.Mul64(m.gpr[0], m.load64(a[0], 8))
		m.gpr[0], m.gpr[2] = lo, hi
		m.cf, m.of = hi != 0, hi != 0
	case opSHLL, opSHRL, opSHLQ, opSHRQ:
		m.shift(in)
	case opDECL, opINCL:
		x := uint32(m.gpr[a[0].reg.n])
		r := x + 1
		if in.op == opDECL {
			r = x - 1
			m.of = x == 1<<31
		} else {
			m.of = r == 1<<31
		}
		m.zf, m.sf = r == 0, int32(r) < 0
		m.gpr[a[0].reg.n] = uint64(r)
	case opKXORW, opKORW: // "KORW k2, k1, d": d = k1 op k2, 16 bits
		x, y := m.k[a[1].reg.n], m.k[a[0].reg.n]
		r := x ^ y
		if in.op == opKORW {
			r = x | y
		}
		m.k[a[2].reg.n] = r & 0xffff
	case opKMOVQ, opKMOVD:
		mask := ^uint64(0)
		if in.op == opKMOVD {
			mask = 1<<32 - 1
		}
		var x uint64
		if a[0].reg.class == classGPR {
			x = m.gpr[a[0].reg.n]
		} else {
			x = m.k[a[0].reg.n]
		}
		if a[1].reg.class == classGPR {
			m.gpr[a[1].reg.n] = x & mask
		} else {
			m.k[a[1].reg.n] = x & mask
		}
	case opKSHIFTRQ:
		sh := uint(a[0].imm)
		var r uint64
		if sh < 64 {
			r = m.k[a[1].reg.n] >> sh
		}
		m.k[a[2].reg.n] = r
	case opVMOVQ:
		if a[1].reg.class == classGPR {
			m.gpr[a[1].reg.n] = elem(&m.vec[a[0].reg.n], 0, 8)
			return true
		}
		var v [16]uint32
		setElem(&v, 0, 8, m.gpr[a[0].reg.n])
		m.vset(a[1].reg, v, 4)
	case opVPBROADCASTQ:
		w := a[1].reg.width()
		var x uint64
		switch {
		case a[0].kind == opMem:
			x = binary.LittleEndian.Uint64(m.bytes(m.addr(a[0].mem), 8))
		case a[0].reg.class == classGPR:
			x = m.gpr[a[0].reg.n]
		default:
			x = elem(&m.vec[a[0].reg.n], 0, 8)
		}
		var v [16]uint32
		for i := range w / 2 {
			setElem(&v, i, 8, x)
		}
		m.vset(a[1].reg, v, w)
	case opVPMOVM2W: // a word of ones where the mask's bit is set
		w := a[1].reg.width()
		var v [16]uint32
		for i := range 2 * w {
			if m.k[a[0].reg.n]>>i&1 != 0 {
				setElem(&v, i, 2, 0xffff)
			}
		}
		m.vset(a[1].reg, v, w)
	case opVPSRLQ, opVPSLLQ, opVPSLLW: // "OP $n, src, dst"
		w := a[2].reg.width()
		sh, es := uint(a[0].imm), in.esize
		v := m.vec[a[1].reg.n]
		for i := range 4 * w / es {
			x := elem(&v, i, es)
			switch {
			case sh >= uint(8*es):
				x = 0
			case in.op == opVPSRLQ:
				x >>= sh
			default:
				x <<= sh
			}
			setElem(&v, i, es, x)
		}
		m.vset(a[2].reg, v, w)
	case opVPTESTMQ, opVPCMPUQ: // "OP [$p,] s2, s1, k": k = s1 test/p s2
		x := a
		if in.op == opVPCMPUQ {
			x = a[1:]
		}
		w := x[1].reg.width()
		s2, s1 := m.vsrc(x[0], w, false, ^uint64(0), 8), m.vec[x[1].reg.n]
		var k uint64
		for i := range w / 2 {
			p, q := elem(&s1, i, 8), elem(&s2, i, 8)
			var t bool
			if in.op == opVPTESTMQ {
				t = p&q != 0
			} else {
				switch a[0].imm {
				case 0:
					t = p == q
				case 1:
					t = p < q
				case 2:
					t = p <= q
				case 4:
					t = p != q
				case 5:
					t = p >= q
				case 6:
					t = p > q
				case 7:
					t = true
				}
			}
			if t {
				k |= 1 << i
			}
		}
		m.k[x[2].reg.n] = k
	case opVPAND, opVPOR, opVPXOR, opVPANDQ, opVPORQ, opVPXORQ, opVPADDQ, opVPSUBQ, opVPMULUDQ, opVPSLLVQ:
		// "OP s2, s1, d": d = s1 op s2.
		w := a[2].reg.width()
		es := in.esize
		s2, s1 := m.vsrc(a[0], w, false, m.lanes(in), es), m.vec[a[1].reg.n]
		var v [16]uint32
		for i := range 4 * w / es {
			p, q := elem(&s1, i, es), elem(&s2, i, es)
			var r uint64
			switch in.op {
			case opVPAND, opVPANDQ:
				r = p & q
			case opVPOR, opVPORQ:
				r = p | q
			case opVPXOR, opVPXORQ:
				r = p ^ q
			case opVPADDQ:
				r = p + q
			case opVPSUBQ:
				r = p - q
			case opVPMULUDQ:
				r = uint64(uint32(p)) * uint64(uint32(q))
			case opVPSLLVQ:
				if q < 64 {
					r = p << q
				}
			}
			setElem(&v, i, es, r)
		}
		m.vout(in, a[2].reg, v, w)
	default:
		return false
	}
	return true
}

// shift runs SHLQ, SHRQ, SHLL and SHRL by an immediate or by CL.
func (m *machine) shift(in *inst) {
	a := in.args
	bitsN := uint(64)
	if in.op == opSHLL || in.op == opSHRL {
		bitsN = 32
	}
	var s uint
	if a[0].kind == opImm {
		s = uint(a[0].imm)
	} else {
		s = uint(m.gpr[1]) // CL
	}
	s &= bitsN - 1
	if s == 0 {
		return // flags unchanged
	}
	x := m.gpr[a[1].reg.n]
	if bitsN == 32 {
		x = uint64(uint32(x))
	}
	var r uint64
	if in.op == opSHLQ || in.op == opSHLL {
		r = x << s
		m.cf = x>>(bitsN-s)&1 != 0
	} else {
		r = x >> s
		m.cf = x>>(s-1)&1 != 0
	}
	if bitsN == 32 {
		r = uint64(uint32(r))
		m.zf, m.sf = r == 0, int32(r) < 0
	} else {
		m.zf, m.sf = r == 0, int64(r) < 0
	}
	m.gpr[a[1].reg.n] = r
}
