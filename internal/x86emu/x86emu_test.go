package x86emu

import (
	"encoding/binary"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// TestFMA32 checks the fused multiply-add against exact arithmetic.
func TestFMA32(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	exact := func(x, y, z float32) float32 {
		const prec = 400
		p := new(big.Float).SetPrec(prec).Mul(new(big.Float).SetPrec(prec).SetFloat64(float64(x)), new(big.Float).SetPrec(prec).SetFloat64(float64(y)))
		p.Add(p, new(big.Float).SetPrec(prec).SetFloat64(float64(z)))
		f, _ := p.Float32()
		return f
	}
	for i := range 250000 {
		x, y := float32(rng.NormFloat64()), float32(rng.NormFloat64())
		var z float32
		switch i % 5 {
		case 4: // float32's subnormal range
			x, y = x*0x1p-70, y*0x1p-60
			z = float32(rng.NormFloat64()) * 0x1p-130
		case 0:
			z = float32(rng.NormFloat64())
		case 1: // cancellation: z near -x*y
			z = -float32(float64(x)*float64(y)) * (1 + float32(rng.NormFloat64())*1e-7)
		case 2: // ties of the float32 rounding: z a float32 near x*y's half ulps
			z = float32(rng.NormFloat64()) * 1e-8
		default: // far apart magnitudes
			z = float32(rng.NormFloat64()) * 1e20
		}
		if got, want := fma32(x, y, z), exact(x, y, z); math.Float32bits(got) != math.Float32bits(want) && !(got == 0 && want == 0) {
			t.Fatalf("fma32(%g, %g, %g) = %g, want %g", x, y, z, got, want)
		}
	}
	// A case where rounding twice (to float64, then float32) is wrong:
	// x*y = 1 + 2^-24 (a float32 tie), z = 2^-60 tips it up.
	x, y, z := float32(1+math.Ldexp(1, -12)), float32(1+math.Ldexp(1, -12)), float32(math.Ldexp(1, -60))
	if got, want := fma32(x, y, z), exact(x, y, z); got != want {
		t.Fatalf("fma32 near a tie: %g, want %g", got, want)
	}
	if got := fma32(float32(math.Inf(1)), 1, 1); !math.IsInf(float64(got), 1) {
		t.Fatalf("fma32(Inf, 1, 1) = %g", got)
	}
	if got := fma32(1, 1, -1); got != 0 || math.Signbit(float64(got)) {
		t.Fatalf("fma32(1, 1, -1) = %g, want +0", got)
	}
}

const sumProg = `
#include "textflag.h"

// func sum(x *float32, n int) float32: n a multiple of 8.
TEXT ·sum(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VXORPS Y0, Y0, Y0
loop:
	CMPQ CX, $8
	JLT done
	VADDPS (SI), Y0, Y0
	ADDQ $32, SI
	SUBQ $8, CX
	JMP loop
done:
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+16(FP)
	RET

// func spin(n int)
TEXT ·spin(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
again:
	DECQ CX
	JNE again
	RET
`

func TestCall(t *testing.T) {
	p, err := Parse(sumProg)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, 24)
	var want float32
	for i := range x {
		x[i] = float32(i) * 0.5
		want += x[i]
	}
	args := new(Args).Ptr(unsafe.Pointer(&x[0])).Int(len(x))
	if err := p.Call("sum", args, Floats(x)); err != nil {
		t.Fatal(err)
	}
	if got := args.Float32At(16); got != want {
		t.Fatalf("sum = %g, want %g", got, want)
	}
	// A read past the lent memory fails the call.
	args = new(Args).Ptr(unsafe.Pointer(&x[0])).Int(len(x) + 8)
	if err := p.Call("sum", args, Floats(x)); err == nil || !strings.Contains(err.Error(), "outside the memory lent") {
		t.Fatalf("a read past the slice: %v", err)
	}
	// So does a loop that does not end (DECQ from 0 counts down 2^64).
	defer func(n int) { maxSteps = n }(maxSteps)
	maxSteps = 1000
	if err := p.Call("spin", new(Args).Int(0)); err == nil || !strings.Contains(err.Error(), "did not return") {
		t.Fatalf("an endless loop: %v", err)
	}
	if err := p.Call("spin", new(Args).Int(10)); err != nil {
		t.Fatal(err)
	}
}

// TestFlags checks the conditional jumps after CMPQ on signed and
// unsigned orderings.
func TestFlags(t *testing.T) {
	const prog = `
TEXT ·cmp(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), AX
	MOVQ y+8(FP), BX
	MOVQ $0, DX
	CMPQ AX, BX
	JLT lt
	ORQ $1, DX
lt:
	CMPQ AX, BX
	JB below
	ORQ $2, DX
below:
	CMPQ AX, BX
	JLE le
	ORQ $4, DX
le:
	CMPQ AX, BX
	JGT gt
	ORQ $8, DX
gt:
	CMPQ AX, BX
	JEQ eq
	ORQ $16, DX
eq:
	MOVQ DX, ret+16(FP)
	RET
`
	p, err := Parse(prog)
	if err != nil {
		t.Fatal(err)
	}
	vals := []int64{math.MinInt64, -5, -1, 0, 1, 5, math.MaxInt64}
	for _, x := range vals {
		for _, y := range vals {
			args := new(Args).Int(int(x)).Int(int(y))
			if err := p.Call("cmp", args); err != nil {
				t.Fatal(err)
			}
			var want uint64
			if !(x < y) {
				want |= 1
			}
			if !(uint64(x) < uint64(y)) {
				want |= 2
			}
			if !(x <= y) {
				want |= 4
			}
			if !(x > y) {
				want |= 8
			}
			if x != y {
				want |= 16
			}
			if got := args.Uint64At(16); got != want {
				t.Fatalf("cmp(%d, %d) = %05b, want %05b", x, y, got, want)
			}
		}
	}
}

// TestMacrosAndData runs a function that reads the file's data through
// a macro with parameters (nested in another), and checks that the data
// cannot be written.
func TestMacrosAndData(t *testing.T) {
	const prog = `
DATA tab<>+0(SB)/8, $40
DATA tab<>+8(SB)/4, $2
GLOBL tab<>(SB), RODATA|NOPTR, $16
#define ADD2(S, D) \
	ADDQ S, D; \
	ADDQ S, D
#define ADDTAB(D) ADD2(tab<>+8(SB), D) // a comment
TEXT ·f(SB), NOSPLIT, $0-8
	MOVQ tab<>(SB), AX
	ADDTAB(AX); ADDQ $1, AX
	MOVQ AX, ret+0(FP)
	RET
TEXT ·g(SB), NOSPLIT, $0-0
	MOVQ $1, tab<>(SB)
	RET
`
	p, err := Parse(prog)
	if err != nil {
		t.Fatal(err)
	}
	args := new(Args)
	if err := p.Call("f", args); err != nil {
		t.Fatal(err)
	}
	if got := args.Uint64At(0); got != 45 {
		t.Fatalf("f = %d, want 45", got)
	}
	if err := p.Call("g", new(Args)); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("a store to the file's data: %v", err)
	}
}

// TestMasks checks masked loads, arithmetic and stores: the lanes a mask
// leaves out are neither read nor written (a masked load past the lent
// memory is fine), and keep their value or are zeroed.
func TestMasks(t *testing.T) {
	const prog = `
TEXT ·f(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ o+8(FP), DI
	MOVQ k+16(FP), AX
	KMOVW AX, K1
	VBROADCASTSS (DI), Z1
	VMOVUPS.Z (SI), K1, Z0
	VFMADD231PS (SI), Z0, K1, Z1
	VMOVUPS Z1, K1, (DI)
	RET
`
	p, err := Parse(prog)
	if err != nil {
		t.Fatal(err)
	}
	x := []float32{1, 2, 3}
	o := make([]float32, 16)
	for i := range o {
		o[i] = 10
	}
	args := new(Args).Ptr(unsafe.Pointer(&x[0])).Ptr(unsafe.Pointer(&o[0])).Int(0b101)
	if err := p.Call("f", args, Floats(x), Floats(o)); err != nil {
		t.Fatal(err)
	}
	want := []float32{11, 10, 19, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10}
	if !slices.Equal(o, want) {
		t.Fatalf("masked lanes: got %v, want %v", o, want)
	}
	// With a lane past x in the mask, the load faults.
	args = new(Args).Ptr(unsafe.Pointer(&x[0])).Ptr(unsafe.Pointer(&o[0])).Int(0b1001)
	if err := p.Call("f", args, Floats(x), Floats(o)); err == nil {
		t.Fatal("a masked load of a lane past the lent memory did not fail")
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"TEXT ·f(SB), NOSPLIT, $0-8\n\tVPGATHERDD (AX), Z1\n\tRET", "not supported"},
		{"TEXT ·f(SB), NOSPLIT, $0-8\n\tJMP nowhere\n\tRET", "not defined"},
		{"TEXT ·f(SB), NOSPLIT, $16-8\n\tRET", "local frame"},
		{"\tRET", "outside a TEXT"},
		{"TEXT ·f(SB), NOSPLIT, $0-8\n\tVADDPS Y1, Z2, Z3\n\tRET", "mixed vector widths"},
		{"TEXT ·f(SB), NOSPLIT, $0-8\n\tVXORPS.BCST (AX), Z2, Z3\n\tRET", ".BCST"},
		{"TEXT ·f(SB), NOSPLIT, $0-8\n\tMOVQ (AX), (BX)\n\tRET", "operands"},
		{"#define M \\\n\tVPDPBUSD Z1, Z2, Z3\nTEXT ·f(SB), NOSPLIT, $0-8\n\tM\n\tRET", "instruction VPDPBUSD not supported"},
		{"#define M(a, b) ADDQ a, b\nTEXT ·f(SB), NOSPLIT, $0-8\n\tM(AX)\n\tRET", "takes 2 arguments"},
		{"TEXT ·f(SB), NOSPLIT, $0-8\n\tMOVQ g(SB), AX\n\tRET", "only data symbols"},
		{"TEXT ·f(SB), NOSPLIT, $0-8\n\tMOVQ ·g(SB), AX\n\tRET", "no data symbol ·g"},
		{"DATA c<>+8(SB)/8, $1\nGLOBL c<>(SB), RODATA, $8\n", "outside the GLOBL"},
		{"#ifdef X\nTEXT ·f(SB), NOSPLIT, $0-8\n\tRET", "preprocessor"},
		{"TEXT ·f(SB), NOSPLIT, $0-8\n\tVCMPPS $32, Z1, Z2, K1\n\tRET", "predicate"},
		{"TEXT ·f(SB), NOSPLIT, $0-8\n\tVMOVUPS.Z Z1, Z2\n\tRET", ".Z needs a mask"},
	} {
		// Structural errors fail Parse; a line the interpreter cannot
		// run fails its function only.
		p, err := Parse(tc.src)
		if err == nil {
			err = p.Err("f")
			if cerr := p.Call("f", new(Args)); err != nil && cerr == nil {
				t.Errorf("%q: Call ran a function that cannot run", tc.src)
			} else if err == nil {
				err = cerr // a symbol is looked up when the call runs
			}
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error with %q", tc.src, err, tc.want)
		}
	}
}

// FuzzParse parses arbitrary text and runs what parses on an empty frame:
// neither may panic (every access outside the frame is an error).
func FuzzParse(f *testing.F) {
	f.Add(sumProg)
	f.Add("TEXT ·f(SB), NOSPLIT, $0-16\n\tMOVQ a+0(FP), AX\n\tVMOVUPS (AX), Z1\n\tRET")
	f.Add("TEXT ·f(SB), NOSPLIT, $0-8\nl:\n\tKMOVW K1, a+0(FP)\n\tDECQ a+0(FP)\n\tJNE l\n\tRET")
	defer func(n int) { maxSteps = n }(maxSteps)
	maxSteps = 10000
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Parse(src)
		if err != nil {
			return
		}
		for _, name := range p.Funcs() {
			_ = p.Call(name, new(Args))
		}
	})
}

// TestQwordOps checks the qword instructions added for the sampler's
// AVX2 and AVX-512 kernels against Go: VPCMPEQQ (all-ones qwords where
// equal), VPSRLVQ (a count of 64 or more gives 0), VMOVMSKPD (the qwords'
// sign bits) and VPMOVZXDQ (dwords widened).
func TestQwordOps(t *testing.T) {
	const prog = `
TEXT ·f(SB), NOSPLIT, $0-24
	MOVQ a+0(FP), SI
	MOVQ o+8(FP), DI
	VMOVDQU (SI), Y0
	VMOVDQU 32(SI), Y1
	VPCMPEQQ Y1, Y0, Y2
	VMOVDQU Y2, (DI)
	VPSRLVQ Y1, Y0, Y3
	VMOVDQU Y3, 32(DI)
	VMOVMSKPD Y0, AX
	MOVQ AX, m+16(FP)
	VPMOVZXDQ X1, Y4
	VMOVDQU Y4, 64(DI)
	VPMOVZXDQ Y0, Z5
	VMOVDQU64 Z5, 96(DI)
	VZEROUPPER
	RET
`
	p, err := Parse(prog)
	if err != nil {
		t.Fatal(err)
	}
	a := []uint64{7, 1 << 63, 0xffff_fffe_0000_0003, 5, 7, 3, 64, 2}
	o := make([]uint64, 20)
	args := new(Args).Ptr(unsafe.Pointer(&a[0])).Ptr(unsafe.Pointer(&o[0]))
	if err := p.Call("f", args, Bytes(a), Bytes(o)); err != nil {
		t.Fatal(err)
	}
	x, y := a[:4], a[4:]
	for i := range 4 {
		eq := uint64(0)
		if x[i] == y[i] {
			eq = ^uint64(0)
		}
		var sh uint64
		if y[i] < 64 {
			sh = x[i] >> y[i]
		}
		if o[i] != eq || o[4+i] != sh {
			t.Errorf("qword %d: VPCMPEQQ %#x, VPSRLVQ %#x; want %#x, %#x", i, o[i], o[4+i], eq, sh)
		}
	}
	if got, want := args.Uint64At(16), uint64(0b0110); got != want {
		t.Errorf("VMOVMSKPD: %04b, want %04b", got, want)
	}
	dw := Bytes(a)
	for i := range 4 { // X1's dwords are y[0] and y[1]'s halves
		if got, want := o[8+i], uint64(binary.LittleEndian.Uint32(dw[32+4*i:])); got != want {
			t.Errorf("VPMOVZXDQ X to Y, dword %d: %#x, want %#x", i, got, want)
		}
	}
	for i := range 8 {
		if got, want := o[12+i], uint64(binary.LittleEndian.Uint32(dw[4*i:])); got != want {
			t.Errorf("VPMOVZXDQ Y to Z, dword %d: %#x, want %#x", i, got, want)
		}
	}
}
