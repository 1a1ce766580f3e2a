package x86emu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"unsafe"
)

// maxSteps bounds the instructions one Call executes, so that a kernel
// whose loop never ends fails its test instead of hanging it (a var for
// this package's tests).
var maxSteps = 1 << 31

// region is memory lent to a call: the bytes at [base, base+len(b)).
type region struct {
	base uintptr
	b    []byte
	ro   bool // the file's data: stores fail
}

// machine is the state of one call.
type machine struct {
	gpr            [16]uint64
	vec            [32][16]uint32
	k              [8]uint64
	zf, sf, cf, of bool
	mem            []region
	fp             uint64 // address of the argument frame
	prog           *Program
	fn             *function
	pc             int
}

// Args builds the argument frame of a call as Go's ABI0 lays it out:
// each value at the next offset aligned to its size. Results follow the
// arguments, aligned to the pointer size, and are read back after Call.
type Args struct{ b []byte }

func (a *Args) align(n int) {
	for len(a.b)%n != 0 {
		a.b = append(a.b, 0)
	}
}

// Int appends an int (or uintptr).
func (a *Args) Int(v int) *Args {
	a.align(8)
	a.b = binary.LittleEndian.AppendUint64(a.b, uint64(v))
	return a
}

// Ptr appends a pointer.
func (a *Args) Ptr(p unsafe.Pointer) *Args { return a.Int(int(uintptr(p))) }

// Float32 appends a float32.
func (a *Args) Float32(v float32) *Args {
	a.align(4)
	a.b = binary.LittleEndian.AppendUint32(a.b, math.Float32bits(v))
	return a
}

// Uint32 appends a uint32.
func (a *Args) Uint32(v uint32) *Args {
	a.align(4)
	a.b = binary.LittleEndian.AppendUint32(a.b, v)
	return a
}

// Float32At reads the float32 at byte offset off of the frame (a result
// after Call).
func (a *Args) Float32At(off int) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(a.b[off:]))
}

// Uint64At reads the 8 bytes at byte offset off of the frame.
func (a *Args) Uint64At(off int) uint64 { return binary.LittleEndian.Uint64(a.b[off:]) }

// Floats returns the bytes of s, to lend to Call.
func Floats(s []float32) []byte { return Bytes(s) }

// Bytes returns the bytes of s (of a type without pointers), to lend to
// Call.
func Bytes[E any](s []E) []byte {
	if len(s) == 0 {
		return nil
	}
	var e E
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), int(unsafe.Sizeof(e))*len(s))
}

// Has reports whether the program defines the function name.
func (p *Program) Has(name string) bool { _, ok := p.funcs[name]; return ok }

// Call runs the function name on the argument frame args (extended to the
// function's argument size, results included) with the slices of mem as
// the only memory it may load from or store to, besides its frame.
func (p *Program) Call(name string, args *Args, mem ...[]byte) error {
	if err := p.Err(name); err != nil {
		return err
	}
	fn := p.funcs[name]
	if len(args.b) > fn.argSize {
		return fmt.Errorf("x86emu: %s takes %d bytes of arguments and results, given %d", name, fn.argSize, len(args.b))
	}
	for len(args.b) < fn.argSize {
		args.b = append(args.b, 0)
	}
	m := &machine{fn: fn, prog: p}
	for _, b := range p.data {
		m.mem = append(m.mem, region{uintptr(unsafe.Pointer(&b[0])), b, true})
	}
	if len(args.b) > 0 {
		m.fp = uint64(uintptr(unsafe.Pointer(&args.b[0])))
		m.mem = append(m.mem, region{uintptr(m.fp), args.b, false})
	}
	for _, b := range mem {
		if len(b) > 0 {
			m.mem = append(m.mem, region{uintptr(unsafe.Pointer(&b[0])), b, false})
		}
	}
	return m.run()
}

// fault is an error raised during execution (panicked and recovered).
type fault struct{ err error }

func (m *machine) failf(format string, a ...any) {
	in := &m.fn.code[m.pc]
	panic(fault{fmt.Errorf("x86emu: %s, line %d (%s): %s", m.fn.name, in.line, in.text, fmt.Sprintf(format, a...))})
}

func (m *machine) run() (err error) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(fault)
			if !ok {
				panic(r)
			}
			err = f.err
		}
	}()
	code := m.fn.code
	for steps := 0; ; steps++ {
		if m.pc >= len(code) {
			return fmt.Errorf("x86emu: %s ran past its last instruction", m.fn.name)
		}
		if steps == maxSteps {
			return fmt.Errorf("x86emu: %s did not return after %d instructions", m.fn.name, steps)
		}
		in := &code[m.pc]
		if in.op == opRET {
			return nil
		}
		next := m.pc + 1
		if isJump(in.op) {
			if m.cond(in.op) {
				next = in.args[0].target
			}
		} else {
			m.exec(in)
		}
		m.pc = next
	}
}

func (m *machine) cond(op opcode) bool {
	switch op {
	case opJMP:
		return true
	case opJEQ:
		return m.zf
	case opJNE:
		return !m.zf
	case opJLT:
		return m.sf != m.of
	case opJGE:
		return m.sf == m.of
	case opJLE:
		return m.zf || m.sf != m.of
	case opJGT:
		return !m.zf && m.sf == m.of
	case opJB:
		return m.cf
	case opJAE:
		return !m.cf
	}
	panic("x86emu: not a jump")
}

// addr computes a memory operand's address.
func (m *machine) addr(r memRef) uint64 {
	a := uint64(r.off)
	switch r.base.class {
	case classGPR:
		a += m.gpr[r.base.n]
	case classFP:
		a += m.fp
	case classSB:
		b, ok := m.prog.data[r.sym]
		if !ok {
			m.failf("no data symbol %s (the file defines none such)", r.sym)
		}
		a += uint64(uintptr(unsafe.Pointer(&b[0])))
	}
	if r.index.class == classGPR {
		a += m.gpr[r.index.n] * uint64(r.scale)
	}
	return a
}

// bytes returns the n lent bytes at address a, to load, or fails the
// call.
func (m *machine) bytes(a uint64, n int) []byte { return m.access(a, n, false) }

// wbytes is bytes for a store.
func (m *machine) wbytes(a uint64, n int) []byte { return m.access(a, n, true) }

func (m *machine) access(a uint64, n int, write bool) []byte {
	for _, r := range m.mem {
		if off := a - uint64(r.base); a >= uint64(r.base) && off+uint64(n) <= uint64(len(r.b)) {
			if write && r.ro {
				m.failf("store of %d bytes at %#x to read-only data", n, a)
			}
			return r.b[off : off+uint64(n)]
		}
	}
	m.failf("access of %d bytes at %#x outside the memory lent to the call", n, a)
	return nil
}

func (m *machine) load64(a operand, size int) uint64 {
	switch a.kind {
	case opImm:
		return uint64(a.imm)
	case opAddr:
		return m.addr(a.mem)
	case opReg:
		return m.gpr[a.reg.n]
	}
	b := m.bytes(m.addr(a.mem), size)
	if size == 4 {
		return uint64(binary.LittleEndian.Uint32(b))
	}
	return binary.LittleEndian.Uint64(b)
}

// store64 writes v to a general register (a 32-bit write zeroes the
// upper half, as x86 does) or to memory.
func (m *machine) store64(a operand, v uint64, size int) {
	if a.kind == opReg {
		if size == 4 {
			v = uint64(uint32(v))
		}
		m.gpr[a.reg.n] = v
		return
	}
	b := m.wbytes(m.addr(a.mem), size)
	if size == 4 {
		binary.LittleEndian.PutUint32(b, uint32(v))
		return
	}
	binary.LittleEndian.PutUint64(b, v)
}

func (m *machine) setLogic(r uint64) {
	m.zf, m.sf, m.cf, m.of = r == 0, int64(r) < 0, false, false
}

func (m *machine) setAdd(x, y, r uint64) {
	m.zf, m.sf = r == 0, int64(r) < 0
	m.cf = r < x
	m.of = int64(^(x^y)&(x^r)) < 0
}

// setSub sets the flags of r = x - y.
func (m *machine) setSub(x, y, r uint64) {
	m.zf, m.sf = r == 0, int64(r) < 0
	m.cf = x < y
	m.of = int64((x^y)&(x^r)) < 0
}

func (m *machine) exec(in *inst) {
	a := in.args
	switch in.op {
	case opPREFETCH:
		// A prefetch never faults, and does nothing we model.
	case opMOVQ:
		m.store64(a[1], m.load64(a[0], 8), 8)
	case opMOVL:
		m.store64(a[1], m.load64(a[0], 4), 4)
	case opADDQ:
		x, y := m.load64(a[1], 8), m.load64(a[0], 8)
		r := x + y
		m.setAdd(x, y, r)
		m.store64(a[1], r, 8)
	case opSUBQ:
		x, y := m.load64(a[1], 8), m.load64(a[0], 8)
		r := x - y
		m.setSub(x, y, r)
		m.store64(a[1], r, 8)
	case opANDQ, opORQ, opXORQ:
		x, y := m.load64(a[1], 8), m.load64(a[0], 8)
		var r uint64
		switch in.op {
		case opANDQ:
			r = x & y
		case opORQ:
			r = x | y
		default:
			r = x ^ y
		}
		m.setLogic(r)
		m.store64(a[1], r, 8)
	case opTESTQ:
		m.setLogic(m.load64(a[0], 8) & m.load64(a[1], 8))
	case opCMPQ:
		// Go's CMPQ x, y compares x with y (Intel's operand order).
		x, y := m.load64(a[0], 8), m.load64(a[1], 8)
		m.setSub(x, y, x-y)
	case opINCQ, opDECQ:
		x := m.load64(a[0], 8)
		var r uint64
		if in.op == opINCQ {
			r = x + 1
			m.of = r == 1<<63
		} else {
			r = x - 1
			m.of = x == 1<<63
		}
		m.zf, m.sf = r == 0, int64(r) < 0 // CF is left as it was
		m.store64(a[0], r, 8)
	case opIMULQ:
		x, y := int64(m.gpr[a[1].reg.n]), int64(m.load64(a[0], 8))
		r := x * y
		m.cf = x != 0 && (r/x != y || x == -1 && y == math.MinInt64) // the product does not fit
		m.of = m.cf
		m.gpr[a[1].reg.n] = uint64(r)
	case opMOVLQSX:
		m.gpr[a[1].reg.n] = uint64(int64(int32(m.load64(a[0], 4))))
	case opLEAQ:
		m.gpr[a[1].reg.n] = m.addr(a[0].mem)
	case opIMUL3Q:
		x, y := int64(m.gpr[a[1].reg.n]), a[0].imm
		hi, lo := bits.Mul64(uint64(x), uint64(y))
		// The signed high half: the unsigned one less y where x < 0 and x
		// where y < 0.
		if x < 0 {
			hi -= uint64(y)
		}
		if y < 0 {
			hi -= uint64(x)
		}
		m.cf = hi != uint64(int64(lo)>>63) // the product does not fit
		m.of = m.cf
		m.gpr[a[2].reg.n] = lo
	default:
		if !m.execInt(in) {
			m.execVec(in)
		}
	}
}
