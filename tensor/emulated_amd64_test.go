//go:build amd64 && !noasm

package tensor

import (
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/graphmill/graphmill/internal/x86emu"
)

// The micro-kernels of an instruction set this CPU lacks run under
// x86emu, which interprets kernels_amd64.s itself: CI machines with AVX2
// only still test every AVX-512 kernel (microKernels adds them), and
// TestEmulatedKernelsMatchNative checks the interpreter against the CPU
// on every kernel the CPU can run.

var (
	kernelsProgram = sync.OnceValues(func() (*x86emu.Program, error) { return x86emu.ParseFiles("kernels_amd64.s") })
	ewProgram      = sync.OnceValues(func() (*x86emu.Program, error) {
		return x86emu.ParseFiles("ew_amd64.s", "epilogue_amd64.s", "gathead_amd64.s")
	})
)

// callEw runs an element-wise or aggregation kernel under x86emu, or
// panics.
func callEw(name string, args *x86emu.Args, mem ...[]byte) {
	p, err := ewProgram()
	if err == nil {
		err = p.Call(name, args, mem...)
	}
	if err != nil {
		panic(err)
	}
}

// bytesOf returns the n elements at p as bytes (nothing for a nil p).
func bytesOf[T any](p *T, n int) []byte {
	if p == nil || n <= 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), n*int(unsafe.Sizeof(*p)))
}

// The AVX-512 element-wise kernels under x86emu, lent the memory their
// contracts give them.

func emuEpilogue512(n int, seg, bias *float32, lanes *uint16, thrm1 int32, keep float32, pos *uint8) {
	args := new(x86emu.Args).Int(n).Ptr(unsafe.Pointer(seg)).Ptr(unsafe.Pointer(bias)).Ptr(unsafe.Pointer(lanes)).
		Uint32(uint32(thrm1)).Float32(keep).Ptr(unsafe.Pointer(pos))
	callEw("epilogueAVX512", args, bytesOf(seg, n), bytesOf(bias, n), bytesOf(lanes, n), bytesOf(pos, n/8))
}

func emuDropout512(n int, d, s *float32, lanes *uint16, thrm1 int32, keep float32) {
	args := new(x86emu.Args).Int(n).Ptr(unsafe.Pointer(d)).Ptr(unsafe.Pointer(s)).Ptr(unsafe.Pointer(lanes)).
		Uint32(uint32(thrm1)).Float32(keep)
	callEw("dropoutAVX512", args, bytesOf(d, n), bytesOf(s, n), bytesOf(lanes, n))
}

func emuSpmmRow512(n, m int, x []float32, ldx int, idx []int32, w []float32, wstep int, o []float32, lim, tail int, mean bool) {
	var scale *float32
	if mean {
		inv := 1 / float32(n)
		scale = &inv
	}
	args := new(x86emu.Args).Int(n).Int(m).Ptr(unsafe.Pointer(&x[0])).Int(ldx).Ptr(unsafe.Pointer(&idx[0])).
		Ptr(unsafe.Pointer(&w[0])).Int(wstep).Ptr(unsafe.Pointer(&o[0])).Int(lim).Int(tail).Ptr(unsafe.Pointer(scale))
	callEw("spmmRowAVX512", args, x86emu.Floats(x), bytesOf(&idx[0], len(idx)), x86emu.Floats(w), x86emu.Floats(o), bytesOf(scale, 1))
}

func emuSpmmRows512(rows int, indptr []int64, idx []int32, w []float32, wstep int, x []float32, ldx int, o []float32, ldo, lim, mean, mask int) {
	args := new(x86emu.Args).Int(rows).Ptr(unsafe.Pointer(&indptr[0])).Ptr(unsafe.Pointer(&idx[0])).Ptr(unsafe.Pointer(&w[0])).
		Int(wstep).Ptr(unsafe.Pointer(&x[0])).Int(ldx).Ptr(unsafe.Pointer(&o[0])).Int(ldo).Int(lim).Int(mean).Int(mask)
	callEw("spmmRowsAVX512", args, bytesOf(&indptr[0], len(indptr)), bytesOf(&idx[0], len(idx)), x86emu.Floats(w),
		x86emu.Floats(x), x86emu.Floats(o))
}

func emuDropoutBits512(d, s []float32, rows, cols int, bits []uint64, keep float32) {
	if !dropoutBitsCheck(d, s, rows, cols, bits) {
		return
	}
	args := new(x86emu.Args).Ptr(unsafe.Pointer(&d[0])).Ptr(unsafe.Pointer(&s[0])).Int(rows).Int(cols).
		Ptr(unsafe.Pointer(&bits[0])).Float32(keep)
	callEw("dropoutBitsAVX512", args, x86emu.Floats(d), x86emu.Floats(s), bytesOf(&bits[0], len(bits)))
}

// asmSymbol returns the assembly function a generated kernelFn wraps
// (sgemmAVX2x6x16Fn wraps sgemmAVX2x6x16).
func asmSymbol(fn kernelFn) string {
	name := runtime.FuncForPC(reflect.ValueOf(fn).Pointer()).Name()
	name = name[strings.LastIndex(name, ".")+1:]
	return strings.TrimSuffix(name, "Fn")
}

// emulated returns a kernelFn that runs fn's assembly under x86emu,
// lending it a, b, c and pf (so any access outside them fails), and
// panics with x86emu's error if the call fails.
func emulated(fn kernelFn) kernelFn {
	if fn == nil {
		return nil
	}
	sym := asmSymbol(fn)
	p, err := kernelsProgram()
	if err != nil {
		panic(err)
	}
	if !p.Has(sym) {
		panic("tensor: no assembly function " + sym + " in kernels_amd64.s")
	}
	pair := strings.HasSuffix(sym, "Pair")
	return func(k int, a []float32, rsA, csA int, b, c []float32, ldc int, alpha float32, acc bool, pf []float32, r tileRun) {
		if pair && r.n%2 != 0 {
			panic("tensor: a pair kernel's run has an odd number of tiles")
		}
		args := new(x86emu.Args).Int(k).Ptr(unsafe.Pointer(&a[0])).Int(rsA).Int(csA).
			Ptr(unsafe.Pointer(&b[0])).Ptr(unsafe.Pointer(&c[0])).Int(ldc).Float32(alpha).Int(b2i(acc)).
			Ptr(unsafe.Pointer(pfStart(pf, b))).Int(r.n).Int(r.da).Int(r.db).Int(r.dc)
		if err := p.Call(sym, args, x86emu.Floats(a), x86emu.Floats(b), x86emu.Floats(c), x86emu.Floats(pf)); err != nil {
			panic(fmt.Sprintf("%v (k %d, rsA %d, csA %d, len(a) %d, len(b) %d, len(c) %d, ldc %d, run %+v)", err, k, rsA, csA, len(a), len(b), len(c), ldc, r))
		}
	}
}

// emulatedKernel is mk with every kernel run under x86emu.
func emulatedKernel(mk *microKernel) *microKernel {
	if mk == nil {
		return nil
	}
	e := *mk
	e.fn, e.ahead, e.cs1, e.packed = emulated(mk.fn), emulated(mk.ahead), emulated(mk.cs1), emulated(mk.packed)
	e.rows = make([]kernelFn, len(mk.rows))
	for r, fn := range mk.rows {
		e.rows[r] = emulated(fn)
	}
	e.pairs = make([]kernelFn, len(mk.pairs))
	for r, fn := range mk.pairs {
		e.pairs[r] = emulated(fn)
	}
	return &e
}

// archSets are the assembly kernel sets, whether or not this CPU runs
// them, and whether it does.
func archSets() []struct {
	name   string
	set    *kernelSet
	native bool
} {
	return []struct {
		name   string
		set    *kernelSet
		native bool
	}{{"avx2", avx2Set(), hasAVX2}, {"avx512", avx512Set(), hasAVX512}}
}

// emulateAll (GRAPHMILL_TEST_EMULATE=1) emulates the sets this CPU runs
// too, to see here what a CPU without them tests.
var emulateAll = os.Getenv("GRAPHMILL_TEST_EMULATE") == "1"

// emulatedMicroKernels are the micro-kernels of the assembly sets this CPU
// cannot run (every set's with emulateAll), under x86emu.
func emulatedMicroKernels() []namedKernel {
	var out []namedKernel
	for _, s := range archSets() {
		if s.native && !emulateAll {
			continue
		}
		for _, mk := range []*microKernel{s.set.wide, s.set.narrow} {
			if mk != nil {
				out = append(out, namedKernel{s.name + " (emulated)", emulatedKernel(mk)})
			}
		}
	}
	return out
}

// emulatedSets are the kernel sets this CPU cannot run (every one with
// emulateAll) whose assembly all runs under x86emu: AVX-512's on a CPU
// with AVX2 (its other kernels are AVX2's). forEachKernel runs the GEMM
// tests on them too, but not with -short (CI's pass under the race
// detector), where the micro-kernel tests still run every kernel.
func emulatedSets() []*kernelSet {
	if hasAVX512 && !emulateAll || !hasAVX2 || testing.Short() {
		return nil
	}
	return []*kernelSet{emulatedAVX512Set()}
}

// emulatedAVX512Set is avx512Set with its AVX-512 kernels under x86emu.
func emulatedAVX512Set() *kernelSet {
	ks := avx512Set()
	ks.name = "avx512 (emulated)"
	ks.wide, ks.narrow = emulatedKernel(ks.wide), emulatedKernel(ks.narrow)
	ks.epilogue = func(seg, bias []float32, lanes []uint16, thr uint64, keep float32, pos []uint8) {
		epilogueBulk(emuEpilogue512, 16, seg, bias, lanes, thr, keep, pos)
	}
	ks.dropout = func(d, s []float32, lanes []uint16, thr uint64, keep float32) {
		dropoutBulk(emuDropout512, d, s, lanes, thr, keep)
	}
	ks.dropoutBits = emuDropoutBits512
	ks.spmmRow, ks.spmmRows = emuSpmmRow512, emuSpmmRows512
	return ks
}

// TestEmulatedElementwiseMatchNative checks AVX-512's epilogue and
// dropouts under x86emu bitwise against the CPU's, where it has AVX-512.
func TestEmulatedElementwiseMatchNative(t *testing.T) {
	if !hasAVX512 {
		t.Skip("no AVX-512 on this CPU")
	}
	nat, emu := avx512Set(), emulatedAVX512Set()
	rng := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{0, 15, 16, 31, 32, 33, 100, 1000} {
		seg, bias := randMatrix(rng, 1, n).Data, randMatrix(rng, 1, n).Data
		const thr = 1 << 15
		lanes := make([]uint16, n)
		for i := range lanes {
			lanes[i] = uint16(rng.Uint32())
			if i%5 < 2 {
				lanes[i] = thr - 1 + uint16(i%5) // either side of the threshold
			}
		}
		for _, withPos := range []bool{false, true} {
			var p1, p2 []uint8
			if withPos {
				p1, p2 = make([]uint8, (n+7)/8), make([]uint8, (n+7)/8)
			}
			s1, s2 := slices.Clone(seg), slices.Clone(seg)
			nat.epilogue(s1, bias, lanes, thr, 2, p1)
			emu.epilogue(s2, bias, lanes, thr, 2, p2)
			if !slices.Equal(s1, s2) || !slices.Equal(p1, p2) {
				t.Fatalf("epilogue of %d (positive bits %v): emulated differs from native", n, withPos)
			}
		}
		d1, d2 := make([]float32, n), make([]float32, n)
		nat.dropout(d1, seg, lanes, thr, 1.5)
		emu.dropout(d2, seg, lanes, thr, 1.5)
		if !slices.Equal(d1, d2) {
			t.Fatalf("dropout of %d: emulated differs from native", n)
		}
		for _, cols := range []int{1, 7, 16, 17, 64, 65, 100} {
			if n < cols {
				continue
			}
			rows := n / cols
			bits := make([]uint64, rows*((cols+63)/64))
			for i := range bits {
				bits[i] = rng.Uint64()
			}
			d1, d2 := make([]float32, rows*cols), make([]float32, rows*cols)
			nat.dropoutBits(d1, seg, rows, cols, bits, 2)
			emu.dropoutBits(d2, seg, rows, cols, bits, 2)
			if !slices.Equal(d1, d2) {
				t.Fatalf("dropoutBits of %d×%d: emulated differs from native", rows, cols)
			}
		}
	}
}

// TestEmulatedKernelsMatchNative runs every micro-kernel this CPU can run
// natively and under x86emu on the same random operands, and wants C
// bitwise the same: the check that lets x86emu stand in for the CPU where
// the CPU lacks the instruction set.
func TestEmulatedKernelsMatchNative(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	tested := 0
	for _, s := range archSets() {
		if !s.native {
			continue
		}
		for _, mk := range []*microKernel{s.set.wide, s.set.narrow} {
			if mk == nil {
				continue
			}
			type kernel struct {
				name   string
				fn     kernelFn
				rows   int
				rs, cs int
				pair   bool
			}
			ks := []kernel{{"full", mk.fn, mk.mr, 1, mk.mr, false}}
			for r, fn := range mk.rows {
				if fn != nil {
					ks = append(ks, kernel{fmt.Sprintf("rows %d", r), fn, r, 1, mk.mr, false})
				}
			}
			for r, fn := range mk.pairs {
				if fn != nil {
					ks = append(ks, kernel{fmt.Sprintf("pair of rows %d", r), fn, r, 1, mk.mr, true})
				}
			}
			if mk.ahead != nil {
				ks = append(ks, kernel{"ahead", mk.ahead, mk.mr, 1, mk.mr, false})
			}
			if mk.cs1 != nil {
				ks = append(ks, kernel{"cs1", mk.cs1, mk.mr, 0, 1, false}) // rs set per depth below
			}
			if mk.packed != nil {
				ks = append(ks, kernel{"packed", mk.packed, mk.mr, 1, mk.mr, false})
			}
			for _, kn := range ks {
				for _, k := range []int{0, 1, 3, 4, 5, 16, 23, 33, 257} {
					for _, acc := range []bool{false, true} {
						rs, cs := kn.rs, kn.cs
						if rs == 0 {
							rs = k + 3
						}
						const ldc = 2*32 + 8
						n := 2
						run := tileRun{n: n, db: max(k, 1) * mk.nr, dc: mk.nr}
						if !kn.pair {
							run = tileRun{n: n, da: mk.mr * max(k, 1), dc: mk.mr * ldc}
							if kn.cs == 1 {
								run.da = mk.mr * rs
							}
						}
						a := randMatrix(rng, 1, n*((mk.mr-1)*rs+max(k, 1)*cs+mk.mr)).Data
						b := randMatrix(rng, 1, n*max(k, 1)*mk.nr).Data
						c1 := randMatrix(rng, 1, (n*mk.mr+1)*ldc).Data
						c2 := slices.Clone(c1)
						kn.fn(k, a, rs, cs, b, c1, ldc, 0.75, acc, nil, run)
						emulated(kn.fn)(k, a, rs, cs, b, c2, ldc, 0.75, acc, nil, run)
						if !slices.Equal(c1, c2) {
							i := 0
							for c1[i] == c2[i] {
								i++
							}
							t.Fatalf("%s %dx%d %s (%s) k %d acc %v: C[%d] emulated %v, native %v", s.name, mk.mr, mk.nr, kn.name, asmSymbol(kn.fn), k, acc, i, c2[i], c1[i])
						}
						tested++
					}
				}
			}
		}
	}
	if tested == 0 {
		t.Skip("this CPU runs no assembly kernel set")
	}
	t.Logf("%d cases", tested)
}

// TestAVX2KernelsNeedNoAVX512 checks that no kernel meant for AVX2 CPUs
// (or for any amd64 CPU) uses an AVX-512 instruction or register, which an
// AVX-512 machine would run and an AVX2 one fault on, and that the AVX-512
// ones are recognised as such. (Functions x86emu cannot run are not
// judged: their lines after the first it does not know are not read.)
func TestAVX2KernelsNeedNoAVX512(t *testing.T) {
	judged, skipped := 0, 0
	for _, prog := range []func() (*x86emu.Program, error){kernelsProgram, ewProgram} {
		p, err := prog()
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range p.Funcs() {
			if p.Err(name) != nil {
				skipped++
				continue
			}
			avx512 := strings.Contains(name, "AVX512")
			if got := p.NeedsAVX512(name); got != avx512 {
				t.Errorf("%s: needs AVX-512 %v, named for AVX-512 %v", name, got, avx512)
			}
			judged++
		}
	}
	if judged < 30 {
		t.Errorf("only %d functions judged", judged)
	}
	t.Logf("%d functions judged, %d that x86emu cannot run not", judged, skipped)
}
