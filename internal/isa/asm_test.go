package isa

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var (
	// wideReg is a 256- or 512-bit vector register operand.
	wideReg = regexp.MustCompile(`\b[YZ]([0-9]|[12][0-9]|3[01])\b`)
	// lowWide is a 256- or 512-bit register whose upper half SSE code
	// shares (VZEROUPPER clears those of these only).
	lowWide = regexp.MustCompile(`\b[YZ]([0-9]|1[0-5])\b`)
	// xmmReg is a 128-bit vector register operand.
	xmmReg = regexp.MustCompile(`\bX([0-9]|[12][0-9]|3[01])\b`)
	// macroCall is a line that starts with a macro's name (an identifier
	// in capitals and digits, maybe with arguments).
	macroCall = regexp.MustCompile(`^([A-Z][A-Z0-9_]*)\b`)
)

// asmFunc is one TEXT function of an assembly file, its instruction lines
// with the macros it uses expanded.
type asmFunc struct {
	file, name string
	lines      []string
}

// TestNoLegacySSEAmidAVX checks every assembly function of the module that
// uses 256- or 512-bit registers for a legacy (non-VEX) SSE instruction on
// an XMM register before its VZEROUPPER, and for a return without one (in
// the order of the text, which is the order the code runs in but for its
// loops). On Intel Xeons that instruction
// costs a transition of the vector state whenever the upper halves are
// dirty, on every pass of a loop: a MOVQ from a general register into X0 in
// the AVX2 dropout-bit kernel (rng.lanes1AVX2) made it 49 times slower
// (7.0 µs against 0.14 for 4096 lanes, slower than pure Go), and the AVX2
// training step's kernel_efficiency was 0.64-0.68 with it, 0.73-0.78
// without (an Intel Xeon with AMX, session 42; AMD's cores have no such
// penalty). The VEX forms (VMOVQ, VMOVD, VCVTSI2SSQ, VDIVSS, ...) do the
// same work.
func TestNoLegacySSEAmidAVX(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var funcs []asmFunc
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".s") {
			return nil
		}
		found, err := parseAsm(path)
		funcs = append(funcs, found...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(funcs) < 20 {
		t.Fatalf("found %d assembly functions under %s: the walk is broken", len(funcs), root)
	}
	wide := 0
	for _, f := range funcs {
		if !slices.ContainsFunc(f.lines, wideReg.MatchString) {
			continue
		}
		wide++
		cleared, dirty := false, false
		for _, l := range f.lines {
			op := strings.Fields(l)[0]
			switch {
			case op == "VZEROUPPER":
				cleared, dirty = true, false
			case op == "RET" && dirty:
				t.Errorf("%s: %s returns without VZEROUPPER after using the upper halves of Y0-Y15/Z0-Z15 (Go's own code is SSE)", filepath.Base(f.file), f.name)
			case !cleared && !strings.HasPrefix(op, "V") && xmmReg.MatchString(l):
				t.Errorf("%s: %s uses 256/512-bit registers and a legacy SSE instruction before VZEROUPPER: %q (use its VEX form)", filepath.Base(f.file), f.name, l)
			}
			if lowWide.MatchString(l) {
				dirty = true
			}
		}
	}
	t.Logf("%d assembly functions, %d with 256/512-bit registers", len(funcs), wide)
}

// expand appends stmt to lines and, where it invokes one of macros, the
// macro's statements, themselves expanded (to a depth of 8).
func expand(lines []string, stmt string, macros map[string][]string, depth int) []string {
	lines = append(lines, stmt)
	if m := macroCall.FindStringSubmatch(stmt); m != nil && depth < 8 {
		for _, s := range macros[m[1]] {
			lines = expand(lines, s, macros, depth+1)
		}
	}
	return lines
}

// parseAsm returns the TEXT functions of the Go assembly file at path,
// each with its instructions (comments and labels dropped, statements
// split at semicolons) and the bodies of the file's macros it invokes
// expanded in place (arguments are kept in the invoking line, which is
// also kept, so that registers passed to a macro count).
func parseAsm(path string) ([]asmFunc, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	macros := map[string][]string{}
	var funcs []asmFunc
	var macro string // the macro being defined, while its lines continue
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		cont := strings.HasSuffix(strings.TrimSpace(line), `\`)
		line = strings.TrimSuffix(strings.TrimSpace(line), `\`)
		if strings.HasPrefix(line, "#define") {
			fields := strings.Fields(line)
			macro = strings.SplitN(fields[1], "(", 2)[0]
			macros[macro] = nil
			line = strings.Join(fields[2:], " ")
			if strings.Contains(fields[1], "(") && !strings.Contains(fields[1], ")") {
				// The parameter list runs on past the name's field.
				if i := strings.Index(line, ")"); i >= 0 {
					line = line[i+1:]
				}
			}
		}
		for _, stmt := range strings.Split(line, ";") {
			stmt = strings.TrimSpace(stmt)
			if stmt == "" || strings.HasSuffix(stmt, ":") || strings.HasPrefix(stmt, "#") {
				continue
			}
			switch {
			case macro != "":
				macros[macro] = append(macros[macro], stmt)
			case strings.HasPrefix(stmt, "TEXT"):
				funcs = append(funcs, asmFunc{file: path, name: strings.TrimSuffix(strings.Fields(stmt)[1], ",")})
			case len(funcs) > 0 && !strings.HasPrefix(stmt, "DATA") && !strings.HasPrefix(stmt, "GLOBL"):
				fn := &funcs[len(funcs)-1]
				fn.lines = expand(fn.lines, stmt, macros, 0)
			}
		}
		if !cont {
			macro = ""
		}
	}
	return funcs, sc.Err()
}
