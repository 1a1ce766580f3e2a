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
	"os"
	"slices"
	"strconv"
	"strings"
)

// Program is a parsed assembly file: its TEXT symbols, ready to Call.
type Program struct {
	funcs map[string]*function
	data  map[string][]byte // the file's DATA symbols (name<>), read-only
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
	classSB            // a data symbol of the file (memRef.sym)
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
	opAddr // $sym(SB): a data symbol's address, an immediate
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
	sym         string // the data symbol of an SB base
}

type inst struct {
	op   opcode
	args []operand
	bcst bool // .BCST: the memory operand is one element broadcast
	zero bool // .Z: lanes the mask leaves out are zeroed
	// esize is the bytes of the elements a mask's bits select (and of
	// .BCST's element): 4 but where elemSize says otherwise.
	esize int
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

// ParseFiles parses the assembly files paths as one text (a package's
// files, when one's functions call another's macros or data: not needed
// so far, but harmless).
func ParseFiles(paths ...string) (*Program, error) {
	var src []byte
	for _, f := range paths {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		src = append(append(src, b...), '\n')
	}
	return Parse(string(src))
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
	macros := map[string]macro{}
	type dataDef struct {
		sym       string
		off, size int
		v         uint64
		line      int
	}
	var defs []dataDef
	sizes := map[string]int{}
	for ln := 0; ln < len(lines); ln++ {
		lineNo, line := ln+1, stripComment(lines[ln])
		if line == "" || strings.HasPrefix(line, "#include") {
			continue
		}
		if strings.HasPrefix(line, "#define") {
			for strings.HasSuffix(line, "\\") && ln+1 < len(lines) {
				ln++
				line = strings.TrimSuffix(line, "\\") + " " + stripComment(lines[ln])
			}
			name, m, err := parseMacro(strings.TrimPrefix(line, "#define"))
			if err != nil {
				return nil, fmt.Errorf("x86emu: line %d: %v", lineNo, err)
			}
			macros[name] = m
			continue
		}
		if strings.HasPrefix(line, "#") {
			return nil, fmt.Errorf("x86emu: line %d: preprocessor directive %q not supported", lineNo, line)
		}
		if rest, ok := strings.CutPrefix(line, "DATA "); ok {
			// DATA name<>+off(SB)/size, $value
			loc, val, _ := strings.Cut(rest, ",")
			loc, sz, _ := strings.Cut(strings.TrimSpace(loc), "/")
			m, err := parseMem(loc)
			size, serr := strconv.Atoi(sz)
			v, verr := parseInt(strings.TrimPrefix(strings.TrimSpace(val), "$"))
			if err != nil || m.sym == "" || serr != nil || verr != nil || (size != 1 && size != 2 && size != 4 && size != 8) || !strings.HasPrefix(strings.TrimSpace(val), "$") {
				return nil, fmt.Errorf("x86emu: line %d: DATA %q not supported", lineNo, rest)
			}
			defs = append(defs, dataDef{m.sym, int(m.off), size, uint64(v), lineNo})
			continue
		}
		if rest, ok := strings.CutPrefix(line, "GLOBL "); ok {
			// GLOBL name<>(SB), flags, $size
			f := strings.Split(rest, ",")
			m, err := parseMem(strings.TrimSpace(f[0]))
			size, serr := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(f[len(f)-1]), "$"))
			if err != nil || m.sym == "" || serr != nil || size <= 0 || size > 1<<20 {
				return nil, fmt.Errorf("x86emu: line %d: GLOBL %q not supported", lineNo, rest)
			}
			sizes[m.sym] = size
			continue
		}
		if strings.HasPrefix(line, "TEXT ") {
			if err := finish(); err != nil {
				return nil, err
			}
			name, argSize, cannot, err := parseText(line)
			if err != nil {
				return nil, fmt.Errorf("x86emu: line %d: %v", lineNo, err)
			}
			fn = &function{name: name, argSize: argSize, err: cannot}
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
		stmts, err := expand(line, macros, 0)
		for _, st := range stmts {
			if err != nil {
				break
			}
			var in inst
			if in, err = parseInst(st); err == nil {
				in.line = lineNo
				fn.code = append(fn.code, in)
				fn.avx512 = fn.avx512 || in.evex()
			}
		}
		if err != nil {
			fn.err = fmt.Errorf("x86emu: %s, line %d: %q: %v", fn.name, lineNo, line, err)
		}
	}
	p.data = map[string][]byte{}
	for sym, n := range sizes {
		p.data[sym] = make([]byte, n)
	}
	for _, d := range defs {
		b, ok := p.data[d.sym]
		if !ok || d.off < 0 || d.off+d.size > len(b) {
			return nil, fmt.Errorf("x86emu: line %d: DATA outside the GLOBL of %s", d.line, d.sym)
		}
		for i := range d.size {
			b[d.off+i] = byte(d.v >> (8 * i))
		}
	}
	if err := finish(); err != nil {
		return nil, err
	}
	return p, nil
}

// macro is a #define: its parameters and its body's statements.
type macro struct {
	params []string
	body   []string
}

func stripComment(line string) string {
	if i := strings.Index(line, "//"); i >= 0 {
		line = line[:i]
	}
	return strings.TrimSpace(line)
}

// parseMacro reads "NAME body" or "NAME(p, q) body", statements of the
// body separated by semicolons.
func parseMacro(def string) (string, macro, error) {
	def = strings.TrimSpace(def)
	end := strings.IndexAny(def, " \t(")
	if end < 0 {
		end = len(def)
	}
	name, rest := def[:end], def[end:]
	var m macro
	if strings.HasPrefix(rest, "(") {
		j := strings.Index(rest, ")")
		if j < 0 {
			return "", m, fmt.Errorf("macro %s: parameters not closed", name)
		}
		for _, p := range strings.Split(rest[1:j], ",") {
			m.params = append(m.params, strings.TrimSpace(p))
		}
		rest = rest[j+1:]
	}
	for _, st := range strings.Split(rest, ";") {
		if st = strings.TrimSpace(st); st != "" {
			m.body = append(m.body, st)
		}
	}
	if name == "" {
		return "", m, fmt.Errorf("#define without a name")
	}
	return name, m, nil
}

// expand returns the statements of a line, its macros expanded (their
// parameters replaced as whole words).
func expand(line string, macros map[string]macro, depth int) ([]string, error) {
	if depth > 16 {
		return nil, fmt.Errorf("macros nested too deep")
	}
	var out []string
	for _, st := range strings.Split(line, ";") {
		st = strings.TrimSpace(st)
		if st == "" {
			continue
		}
		end := strings.IndexAny(st, " \t(")
		if end < 0 {
			end = len(st)
		}
		m, ok := macros[st[:end]]
		if !ok {
			out = append(out, st)
			continue
		}
		var args []string
		if len(m.params) > 0 {
			rest := strings.TrimSpace(st[end:])
			if !strings.HasPrefix(rest, "(") || !strings.HasSuffix(rest, ")") {
				return nil, fmt.Errorf("macro %s needs its %d arguments", st[:end], len(m.params))
			}
			for _, a := range strings.Split(rest[1:len(rest)-1], ",") {
				args = append(args, strings.TrimSpace(a))
			}
			if len(args) != len(m.params) {
				return nil, fmt.Errorf("macro %s takes %d arguments, given %d", st[:end], len(m.params), len(args))
			}
		} else if strings.TrimSpace(st[end:]) != "" {
			return nil, fmt.Errorf("macro %s takes no arguments", st[:end])
		}
		for _, b := range m.body {
			for i, p := range m.params {
				b = replaceWord(b, p, args[i])
			}
			sub, err := expand(b, macros, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
		}
	}
	return out, nil
}

// replaceWord replaces the whole-word occurrences of w in s by r.
func replaceWord(s, w, r string) string {
	isWord := func(c byte) bool {
		return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], w)
		if j < 0 {
			b.WriteString(s[i:])
			break
		}
		j += i
		end := j + len(w)
		if (j > 0 && isWord(s[j-1])) || (end < len(s) && isWord(s[end])) {
			b.WriteString(s[i:end])
		} else {
			b.WriteString(s[i:j])
			b.WriteString(r)
		}
		i = end
	}
	return b.String()
}

// parseText reads "TEXT ·name(SB), FLAGS, $frame-args": the name, the
// argument size, why the function cannot run (a local frame) and whether
// the line is malformed.
func parseText(line string) (string, int, error, error) {
	f := strings.Split(strings.TrimPrefix(line, "TEXT "), ",")
	if len(f) < 2 {
		return "", 0, nil, fmt.Errorf("malformed TEXT line")
	}
	sym := strings.TrimSpace(f[0])
	sym = strings.TrimPrefix(sym, "·")
	sym, ok := strings.CutSuffix(sym, "(SB)")
	if !ok || sym == "" {
		return "", 0, nil, fmt.Errorf("malformed TEXT symbol %q", f[0])
	}
	size := strings.TrimSpace(f[len(f)-1])
	_, args, ok := strings.Cut(size, "-")
	if !ok || !strings.HasPrefix(size, "$") {
		return "", 0, nil, fmt.Errorf("TEXT %s: frame size %q without an argument size", sym, size)
	}
	n, err := strconv.Atoi(args)
	if err != nil || n < 0 || n > 1<<16 {
		return "", 0, nil, fmt.Errorf("TEXT %s: argument size %q", sym, args)
	}
	if frame := strings.TrimPrefix(size[:len(size)-len(args)-1], "$"); frame != "0" {
		return sym, n, fmt.Errorf("x86emu: %s: a local frame ($%s) is not supported", sym, frame), nil
	}
	return sym, n, nil, nil
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
	in.esize = 4
	if e, ok := elemSize[op]; ok {
		in.esize = e
	}
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
	if strings.HasPrefix(s, "$") && strings.HasSuffix(s, "(SB)") {
		// $sym(SB): the address of a data symbol.
		m, err := parseMem(s[1:])
		if err != nil {
			return operand{}, err
		}
		return operand{kind: opAddr, mem: m}, nil
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
	if strings.HasPrefix(rest, "(SB)") {
		// name<>+off(SB) or ·name+off(SB): a data symbol (one the file
		// defines with DATA, or Call fails).
		name, off, _ := strings.Cut(disp, "+")
		sym, ok := strings.CutSuffix(name, "<>")
		if !ok {
			sym, ok = name, strings.HasPrefix(name, "·") && len(name) > len("·")
		}
		if !ok || sym == "" {
			return m, fmt.Errorf("symbol %q: only data symbols (name<> or ·name) are supported", s)
		}
		if off != "" {
			v, err := parseInt(off)
			if err != nil {
				return m, fmt.Errorf("offset in %q: %v", s, err)
			}
			m.off = v
		}
		if rest != "(SB)" {
			return m, fmt.Errorf("memory operand %q not understood", s)
		}
		m.base, m.sym = reg{class: classSB}, sym
		return m, nil
	}
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
			if !ok || !rok || (r.class != classGPR && r.class != classZ) || err != nil || (v != 1 && v != 2 && v != 4 && v != 8) {
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
	if rest, ok := strings.CutPrefix(s, "~"); ok {
		v, err := parseInt(rest)
		return ^v, err
	}
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
