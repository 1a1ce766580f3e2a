// Package x86emu interprets Go amd64 assembly text, so that tests can run
// kernels written for an instruction set the CPU lacks: CI machines may
// have AVX2 only, and the AVX-512 micro-kernels must be tested there too.
// It executes the source the assembler reads (the .s file itself), one
// instruction at a time, on a register file of its own and on memory the
// caller lends it as byte slices: every load and store is checked against
// those slices, so a kernel that reads or writes past its operands fails
// the test instead of passing by luck. Prefetches, which never fault, are
// not checked and do nothing.
//
// It knows the instructions graphmill's kernels use, not x86: an unknown
// mnemonic or operand form is an error when the program is parsed, never
// a silently wrong result. Floating-point arithmetic is IEEE single
// precision rounded to nearest even, as the hardware does with Go's
// default MXCSR; a fused multiply-add rounds once. NaN payloads are not
// modelled.
//
// No emulator for this exists to depend on: QEMU's TCG does not implement
// AVX-512, and Intel's SDE is proprietary and not packaged.
package x86emu

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Program is a parsed assembly file: its TEXT symbols, ready to Call.
type Program struct {
	funcs map[string]*function
}

type function struct {
	name    string
	argSize int
	code    []inst
	avx512  bool  // some instruction needs AVX-512 (EVEX encoding)
	err     error // the first line the interpreter cannot run, if any
}

// regClass is a register file.
type regClass uint8

const (
	classNone regClass = iota
	classGPR           // AX ... R15
	classX             // X0 ... X31 (128 bits)
	classY             // Y0 ... Y31 (256 bits)
	classZ             // Z0 ... Z31 (512 bits)
	classK             // K0 ... K7
	classFP            // the argument frame pseudo-register
)

type reg struct {
	class regClass
	n     uint8
}

// width is the register's width in 32-bit lanes (vector registers).
func (r reg) width() int {
	switch r.class {
	case classX:
		return 4
	case classY:
		return 8
	case classZ:
		return 16
	}
	return 0
}

type operandKind uint8

const (
	opReg operandKind = iota + 1
	opImm
	opMem
	opLabel
)

type operand struct {
	kind  operandKind
	reg   reg   // opReg
	imm   int64 // opImm
	mem   memRef
	label string // opLabel, resolved into target
	// target is the instruction index a label operand jumps to.
	target int
}

type memRef struct {
	base, index reg // class none where absent
	scale       int64
	off         int64
}

type inst struct {
	op   opcode
	args []operand
	bcst bool // .BCST: the memory operand is one element broadcast
	zero bool // .Z: lanes the mask leaves out are zeroed
	// masked: the instruction has a mask register (mask), given before
	// its destination and taken out of args.
	masked bool
	mask   reg
	line   int
	text   string
}

var gprNames = map[string]uint8{
	"AX": 0, "CX": 1, "DX": 2, "BX": 3, "SP": 4, "BP": 5, "SI": 6, "DI": 7,
	"R8": 8, "R9": 9, "R10": 10, "R11": 11, "R12": 12, "R13": 13, "R14": 14, "R15": 15,
}

func parseReg(s string) (reg, bool) {
	if n, ok := gprNames[s]; ok {
		return reg{classGPR, n}, true
	}
	if s == "FP" {
		return reg{classFP, 0}, true
	}
	if len(s) < 2 {
		return reg{}, false
	}
	var class regClass
	limit := 32
	switch s[0] {
	case 'X':
		class = classX
	case 'Y':
		class = classY
	case 'Z':
		class = classZ
	case 'K':
		class, limit = classK, 8
	default:
		return reg{}, false
	}
	n, err := strconv.Atoi(s[1:])
	if err != nil || n < 0 || n >= limit || strconv.Itoa(n) != s[1:] {
		return reg{}, false
	}
	return reg{class, uint8(n)}, true
}

// Parse reads Go amd64 assembly text. Each TEXT symbol becomes a function
// that runs from its first instruction to a RET.
func Parse(src string) (*Program, error) {
	p := &Program{funcs: map[string]*function{}}
	var fn *function
	labels := map[string]int{}
	finish := func() error {
		if fn == nil {
			return nil
		}
		for i := range fn.code {
			if fn.err != nil {
				break
			}
			for j := range fn.code[i].args {
				a := &fn.code[i].args[j]
				if a.kind != opLabel {
					continue
				}
				t, ok := labels[a.label]
				if !ok {
					return fmt.Errorf("x86emu: line %d: label %q not defined in %s", fn.code[i].line, a.label, fn.name)
				}
				a.target = t
			}
		}
		p.funcs[fn.name] = fn
		return nil
	}
	lines := strings.Split(src, "\n")
	for ln := 0; ln < len(lines); ln++ {
		lineNo, line := ln+1, lines[ln]
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#include") {
			continue
		}
		if strings.HasPrefix(line, "#define") {
			// A macro: a function that uses it cannot run here (its name
			// is not an instruction). Skip its continuation lines.
			for strings.HasSuffix(strings.TrimSpace(lines[ln]), "\\") && ln+1 < len(lines) {
				ln++
			}
			continue
		}
		if strings.HasPrefix(line, "#") {
			return nil, fmt.Errorf("x86emu: line %d: preprocessor directive %q not supported", lineNo, line)
		}
		if strings.HasPrefix(line, "DATA ") || strings.HasPrefix(line, "GLOBL ") {
			continue // a function that reads the data cannot run here
		}
		if strings.HasPrefix(line, "TEXT ") {
			if err := finish(); err != nil {
				return nil, err
			}
			name, argSize, err := parseText(line)
			if err != nil {
				return nil, fmt.Errorf("x86emu: line %d: %v", lineNo, err)
			}
			fn = &function{name: name, argSize: argSize}
			labels = map[string]int{}
			continue
		}
		if fn == nil {
			return nil, fmt.Errorf("x86emu: line %d: %q outside a TEXT symbol", lineNo, line)
		}
		if fn.err != nil {
			continue
		}
		if strings.HasSuffix(line, ":") && !strings.ContainsAny(line, " \t") {
			labels[strings.TrimSuffix(line, ":")] = len(fn.code)
			continue
		}
		in, err := parseInst(line)
		if err != nil {
			fn.err = fmt.Errorf("x86emu: %s, line %d: %q: %v", fn.name, lineNo, line, err)
			continue
		}
		in.line = lineNo
		fn.code = append(fn.code, in)
		fn.avx512 = fn.avx512 || in.evex()
	}
	if err := finish(); err != nil {
		return nil, err
	}
	return p, nil
}

// parseText reads "TEXT ·name(SB), FLAGS, $frame-args".
func parseText(line string) (string, int, error) {
	f := strings.Split(strings.TrimPrefix(line, "TEXT "), ",")
	if len(f) < 2 {
		return "", 0, fmt.Errorf("malformed TEXT line")
	}
	sym := strings.TrimSpace(f[0])
	sym = strings.TrimPrefix(sym, "·")
	sym, ok := strings.CutSuffix(sym, "(SB)")
	if !ok || sym == "" {
		return "", 0, fmt.Errorf("malformed TEXT symbol %q", f[0])
	}
	size := strings.TrimSpace(f[len(f)-1])
	_, args, ok := strings.Cut(size, "-")
	if !ok || !strings.HasPrefix(size, "$") {
		return "", 0, fmt.Errorf("TEXT %s: frame size %q without an argument size", sym, size)
	}
	if frame := strings.TrimPrefix(size[:len(size)-len(args)-1], "$"); frame != "0" {
		return "", 0, fmt.Errorf("TEXT %s: a local frame ($%s) is not supported", sym, frame)
	}
	n, err := strconv.Atoi(args)
	if err != nil || n < 0 || n > 1<<16 {
		return "", 0, fmt.Errorf("TEXT %s: argument size %q", sym, args)
	}
	return sym, n, nil
}

// evex reports whether the instruction needs AVX-512's EVEX encoding: a
// 512-bit or mask register, a vector register above 15, or an embedded
// broadcast.
func (in *inst) evex() bool {
	if in.bcst || in.masked {
		return true
	}
	for _, a := range in.args {
		if a.kind != opReg {
			continue
		}
		switch a.reg.class {
		case classZ, classK:
			return true
		case classX, classY:
			if a.reg.n >= 16 {
				return true
			}
		}
	}
	return false
}

// NeedsAVX512 reports whether the function name uses an instruction that
// only AVX-512 CPUs run, so that a test can check that the kernels meant
// for AVX2 CPUs do not. (Only instructions the interpreter knows count:
// see Err.)
func (p *Program) NeedsAVX512(name string) bool {
	fn, ok := p.funcs[name]
	return ok && fn.avx512
}

// Err returns why the function name cannot run here (an instruction, an
// operand form, a macro or a data symbol the interpreter does not know;
// Call returns the same error), or nil.
func (p *Program) Err(name string) error {
	fn, ok := p.funcs[name]
	if !ok {
		return fmt.Errorf("x86emu: no function %s", name)
	}
	return fn.err
}

// Funcs lists the program's functions.
func (p *Program) Funcs() []string {
	names := make([]string, 0, len(p.funcs))
	for n := range p.funcs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func parseInst(line string) (inst, error) {
	mn, rest, _ := strings.Cut(line, " ")
	mn = strings.TrimSpace(mn)
	var in inst
	if base, ok := strings.CutSuffix(mn, ".BCST"); ok {
		mn, in.bcst = base, true
	}
	if base, ok := strings.CutSuffix(mn, ".Z"); ok {
		mn, in.zero = base, true
	}
	op, ok := opcodes[mn]
	if !ok {
		return in, fmt.Errorf("instruction %s not supported", mn)
	}
	in.op = op
	in.text = line
	rest = strings.TrimSpace(rest)
	if rest != "" {
		for _, s := range strings.Split(rest, ",") {
			a, err := parseOperand(strings.TrimSpace(s), op)
			if err != nil {
				return in, err
			}
			in.args = append(in.args, a)
		}
	}
	if n := len(in.args); n >= 3 && maskable[op] && in.args[n-2].kind == opReg && in.args[n-2].reg.class == classK {
		in.masked, in.mask = true, in.args[n-2].reg
		in.args = append(in.args[:n-2], in.args[n-1])
	}
	if err := checkForm(&in); err != nil {
		return in, err
	}
	return in, nil
}

func parseOperand(s string, op opcode) (operand, error) {
	if s == "" {
		return operand{}, fmt.Errorf("empty operand")
	}
	if s[0] == '$' {
		v, err := parseInt(s[1:])
		if err != nil {
			return operand{}, fmt.Errorf("immediate %q: %v", s, err)
		}
		return operand{kind: opImm, imm: v}, nil
	}
	if r, ok := parseReg(s); ok {
		return operand{kind: opReg, reg: r}, nil
	}
	if strings.Contains(s, "(") {
		m, err := parseMem(s)
		if err != nil {
			return operand{}, err
		}
		return operand{kind: opMem, mem: m}, nil
	}
	if isJump(op) {
		return operand{kind: opLabel, label: s}, nil
	}
	return operand{}, fmt.Errorf("operand %q not understood", s)
}

// parseMem reads off(base)(index*scale), name+off(FP) and their parts.
func parseMem(s string) (memRef, error) {
	m := memRef{scale: 1}
	i := strings.Index(s, "(")
	disp := s[:i]
	rest := s[i:]
	if disp != "" {
		// name+off(FP) or a plain displacement.
		if j := strings.LastIndexAny(disp, "+-"); j > 0 {
			disp = disp[j:]
		}
		v, err := parseInt(strings.TrimPrefix(disp, "+"))
		if err != nil {
			return m, fmt.Errorf("displacement in %q: %v", s, err)
		}
		m.off = v
	}
	for n := 0; rest != ""; n++ {
		if rest[0] != '(' {
			return m, fmt.Errorf("memory operand %q not understood", s)
		}
		j := strings.Index(rest, ")")
		if j < 0 {
			return m, fmt.Errorf("memory operand %q not closed", s)
		}
		part := rest[1:j]
		rest = rest[j+1:]
		switch n {
		case 0:
			r, ok := parseReg(part)
			if !ok || (r.class != classGPR && r.class != classFP) {
				return m, fmt.Errorf("base register %q of %q", part, s)
			}
			m.base = r
		case 1:
			name, sc, ok := strings.Cut(part, "*")
			r, rok := parseReg(name)
			v, err := strconv.Atoi(sc)
			if !ok || !rok || r.class != classGPR || err != nil || (v != 1 && v != 2 && v != 4 && v != 8) {
				return m, fmt.Errorf("index %q of %q", part, s)
			}
			m.index, m.scale = r, int64(v)
		default:
			return m, fmt.Errorf("memory operand %q not understood", s)
		}
	}
	return m, nil
}

func parseInt(s string) (int64, error) {
	neg := false
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	}
	v, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		return 0, err
	}
	if neg {
		return -int64(v), nil
	}
	return int64(v), nil
}
