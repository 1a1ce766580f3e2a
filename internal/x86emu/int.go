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
	case opVPTESTMQ, opVPTESTNMD, opVPCMPUQ, opVPCMPUD, opVPCMPEQD, opVPCMPEQQ:
		// "OP [$p,] s2, s1, k": k = s1 test/p s2 (VPCMPEQD with a vector
		// destination, AVX2's: all-ones lanes where equal).
		x := a
		if in.op == opVPCMPUQ || in.op == opVPCMPUD {
			x = a[1:]
		}
		w, es := x[1].reg.width(), in.esize
		s2, s1 := m.vsrc(x[0], w, false, ^uint64(0), es), m.vec[x[1].reg.n]
		var k uint64
		for i := range 4 * w / es {
			p, q := elem(&s1, i, es), elem(&s2, i, es)
			var t bool
			switch in.op {
			case opVPTESTMQ:
				t = p&q != 0
			case opVPTESTNMD:
				t = p&q == 0
			case opVPCMPEQD, opVPCMPEQQ:
				t = p == q
			default:
				t = cmpUnsigned(p, q, a[0].imm)
			}
			if t {
				k |= 1 << i
			}
		}
		if es == 8 && x[2].reg.class != classK {
			k = spreadQwords(k)
		}
		m.setMask(x[2], k, w)
	case opVMOVMSKPD: // the sign bits of the qwords
		w := a[0].reg.width()
		var k uint64
		for i := range w / 2 {
			k |= uint64(m.vec[a[0].reg.n][2*i+1]>>31) << i
		}
		m.gpr[a[1].reg.n] = k
	case opKORTESTW: // ZF: no bit of k1|k2 set; CF: all sixteen
		x := (m.k[a[0].reg.n] | m.k[a[1].reg.n]) & 0xffff
		m.zf, m.cf, m.sf, m.of = x == 0, x == 0xffff, false, false
	case opKXNORW, opKANDNW: // "KANDNW k2, k1, d": d = ^k1 & k2
		x, y := m.k[a[1].reg.n], m.k[a[0].reg.n]
		r := ^(x ^ y)
		if in.op == opKANDNW {
			r = ^x & y
		}
		m.k[a[2].reg.n] = r & 0xffff
	case opKNOTW:
		m.k[a[1].reg.n] = ^m.k[a[0].reg.n] & 0xffff
	case opPOPCNTL:
		x := uint32(m.gpr[a[0].reg.n])
		m.gpr[a[1].reg.n] = uint64(bits.OnesCount32(x))
		m.zf, m.cf, m.sf, m.of = x == 0, false, false, false
	case opVPSRLD:
		w := a[2].reg.width()
		v := m.vec[a[1].reg.n]
		for i := range w {
			if a[0].imm >= 32 {
				v[i] = 0
			} else {
				v[i] >>= uint(a[0].imm)
			}
		}
		m.vset(a[2].reg, v, w)
	case opVPCONFLICTD: // lane i: the lanes j < i holding the same value
		src := m.vec[a[0].reg.n]
		var v [16]uint32
		for i := range 16 {
			for j := range i {
				if src[j] == src[i] {
					v[i] |= 1 << j
				}
			}
		}
		m.vset(a[1].reg, v, 16)
	case opVPLZCNTD:
		var v [16]uint32
		for i, x := range m.vec[a[0].reg.n] {
			v[i] = uint32(bits.LeadingZeros32(x))
		}
		m.vset(a[1].reg, v, 16)
	case opVPERMD: // "VPERMD table, idx, d": d[i] = table[idx[i] mod lanes]
		w := a[2].reg.width()
		table, idx := m.vsrc(a[0], w, false, ^uint64(0), 4), m.vec[a[1].reg.n]
		var v [16]uint32
		for i := range w {
			v[i] = table[int(idx[i])&(w-1)]
		}
		m.vout(in, a[2].reg, v, w)
	case opVPEXPANDD, opVPCOMPRESSD:
		// Expand: the mask's lanes, in order, take the source's first
		// lanes; compress: the mask's lanes go, in order, to the first
		// lanes. The others keep their value (zeroed with .Z).
		k := m.lanes(in)
		src, v := m.vec[a[0].reg.n], m.vec[a[1].reg.n]
		j := 0
		for i := range 16 {
			if k>>i&1 == 0 {
				continue
			}
			if in.op == opVPEXPANDD {
				v[i] = src[j]
			} else {
				v[j] = src[i]
			}
			j++
		}
		if in.op == opVPCOMPRESSD && in.zero {
			clear(v[j:])
		} else if in.op == opVPEXPANDD && in.zero {
			for i := range 16 {
				if k>>i&1 == 0 {
					v[i] = 0
				}
			}
		}
		m.vset(a[1].reg, v, 16)
	case opVPGATHERDD, opVPSCATTERDD:
		// Lane i of the mask (cleared as each completes) reads or writes
		// the dword at base + index[i]·scale, the index sign-extended;
		// a scatter writes its lanes in order, so the last of equal
		// addresses stays.
		g := a[0]
		if in.op == opVPSCATTERDD {
			g = a[1]
		}
		base := g.mem
		base.index = reg{}
		addr0 := m.addr(base)
		idx := m.vec[g.mem.index.n]
		k := m.k[in.mask.n]
		for i := range 16 {
			if k>>i&1 == 0 {
				continue
			}
			at := addr0 + uint64(int64(int32(idx[i]))*g.mem.scale)
			if in.op == opVPGATHERDD {
				m.vec[a[1].reg.n][i] = binary.LittleEndian.Uint32(m.bytes(at, 4))
			} else {
				binary.LittleEndian.PutUint32(m.wbytes(at, 4), m.vec[a[0].reg.n][i])
			}
		}
		m.k[in.mask.n] = 0
	case opVPAND, opVPOR, opVPXOR, opVPANDQ, opVPORQ, opVPXORQ, opVPADDQ, opVPSUBQ, opVPMULUDQ, opVPSLLVQ, opVPSRLVQ,
		opVPANDD, opVPORD, opVPADDD, opVPSUBD:
		// "OP s2, s1, d": d = s1 op s2.
		w := a[2].reg.width()
		es := in.esize
		s2, s1 := m.vsrc(a[0], w, false, m.lanes(in), es), m.vec[a[1].reg.n]
		var v [16]uint32
		for i := range 4 * w / es {
			p, q := elem(&s1, i, es), elem(&s2, i, es)
			var r uint64
			switch in.op {
			case opVPAND, opVPANDQ, opVPANDD:
				r = p & q
			case opVPOR, opVPORQ, opVPORD:
				r = p | q
			case opVPXOR, opVPXORQ:
				r = p ^ q
			case opVPADDQ, opVPADDD:
				r = p + q
			case opVPSUBQ, opVPSUBD:
				r = p - q
			case opVPMULUDQ:
				r = uint64(uint32(p)) * uint64(uint32(q))
			case opVPSLLVQ:
				if q < 64 {
					r = p << q
				}
			case opVPSRLVQ:
				if q < 64 {
					r = p >> q
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

// cmpUnsigned evaluates VPCMPU's predicate p: EQ, LT, LE, FALSE, NE, NLT,
// NLE, TRUE.
func cmpUnsigned(x, y uint64, p int64) bool {
	switch p {
	case 0:
		return x == y
	case 1:
		return x < y
	case 2:
		return x <= y
	case 4:
		return x != y
	case 5:
		return x >= y
	case 6:
		return x > y
	case 7:
		return true
	}
	return false
}

// spreadQwords turns a mask of qword elements into one of their dwords
// (element i's bit to bits 2i and 2i+1), for setMask's vector lanes.
func spreadQwords(k uint64) uint64 {
	var d uint64
	for i := range 8 {
		if k>>i&1 != 0 {
			d |= 3 << (2 * i)
		}
	}
	return d
}
