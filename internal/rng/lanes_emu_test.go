//go:build amd64 && !noasm

package rng

import (
	"slices"
	"sync"
	"testing"
	"unsafe"

	"github.com/graphmill/graphmill/internal/x86emu"
)

// The AVX-512 kernels run under x86emu too, so that a CPU without AVX-512
// (CI's machines may have AVX2 only) still tests them, against the same
// one-draw-at-a-time loops as TestLanesKernels and TestFloydMasks8 use.

var lanesProgram = sync.OnceValues(func() (*x86emu.Program, error) { return x86emu.ParseFiles("lanes_amd64.s") })

func emuCall(t *testing.T, name string, args *x86emu.Args, mem ...[]byte) {
	t.Helper()
	p, err := lanesProgram()
	if err == nil {
		err = p.Call(name, args, mem...)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func TestLanesKernelsEmulated(t *testing.T) {
	avx2, avx512, avx512bw := hasAVX2, hasAVX512, hasAVX512BW
	defer func() { hasAVX2, hasAVX512, hasAVX512BW = avx2, avx512, avx512bw }()
	hasAVX2, hasAVX512, hasAVX512BW = false, false, false // the scalar loops
	for _, n := range []int{1, 15, 31, 32, 33, 63, 64, 65, 100, 128, 1000} {
		seed := uint64(n) * 77
		// lanes16AVX512: whole groups of eight draws, four lanes a draw.
		if d := n / 32 * 8; d > 0 {
			want := make([]uint16, 4*d)
			r := New(seed)
			s := r.state
			r.Lanes16(want)
			got := make([]uint16, 4*d)
			emuCall(t, "lanes16AVX512", new(x86emu.Args).Ptr(unsafe.Pointer(&got[0])).Int(d).Int(int(s)), x86emu.Bytes(got))
			if !slices.Equal(got, want) {
				t.Fatalf("lanes16AVX512, %d draws: differs from the scalar loop", d)
			}
		}
		// lanes1AVX512: n one-bit lanes, 64 a draw.
		want := make([]uint16, n)
		r := New(seed)
		s := r.state
		r.Lanes(want, 1)
		got := make([]uint16, n)
		emuCall(t, "lanes1AVX512", new(x86emu.Args).Ptr(unsafe.Pointer(&got[0])).Int(n).Int(int(s)), x86emu.Bytes(got))
		if !slices.Equal(got, want) {
			t.Fatalf("lanes1AVX512, %d lanes: differs from the scalar loop", n)
		}
	}
}

func TestFloydMasks8Emulated(t *testing.T) {
	for _, name := range []string{"floydMasks8AVX2", "floydMasks8AVX512"} {
		testFloydMasks8Emulated(t, name)
	}
}

func testFloydMasks8Emulated(t *testing.T, name string) {
	var r Rand
	r.Seed(43)
	for k := 1; k <= 64; k += 3 {
		for trial := 0; trial < 4; trial++ {
			seeds, ds, masks := make([]uint64, 8), make([]uint64, 8), make([]uint64, 8)
			for i := range 8 {
				seeds[i] = r.Uint64()
				ds[i] = uint64(k + int(r.Uint64()%uint64(65-k)))
			}
			args := new(x86emu.Args).Ptr(unsafe.Pointer(&seeds[0])).Ptr(unsafe.Pointer(&ds[0])).Int(k).Ptr(unsafe.Pointer(&masks[0]))
			emuCall(t, name, args, x86emu.Bytes(seeds), x86emu.Bytes(ds), x86emu.Bytes(masks))
			if redo := args.Uint64At(32); redo != 0 {
				t.Errorf("%s, k %d: the kernel asks to redo lanes %08b", name, k, redo)
			}
			for i := range 8 {
				var q Rand
				q.Seed(seeds[i])
				if want := q.FloydMask(int(ds[i]), k); masks[i] != want {
					t.Fatalf("%s, k %d lane %d (d %d): emulated kernel %x, FloydMask %x", name, k, i, ds[i], masks[i], want)
				}
			}
		}
	}
}

// TestAVX2LanesNeedNoAVX512 checks that the AVX2 kernels use no AVX-512
// instruction or register (which an AVX2 CPU would fault on).
func TestAVX2LanesNeedNoAVX512(t *testing.T) {
	p, err := lanesProgram()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range p.Funcs() {
		if p.Err(name) != nil {
			t.Logf("%s: not judged (%v)", name, p.Err(name))
			continue
		}
		if got, want := p.NeedsAVX512(name), name[len(name)-6:] == "AVX512"; got != want {
			t.Errorf("%s: needs AVX-512 %v", name, got)
		}
	}
}
