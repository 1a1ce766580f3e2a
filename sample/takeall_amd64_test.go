//go:build !noasm

package sample

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/graphmill/graphmill/internal/isa"
	"github.com/graphmill/graphmill/internal/rng"
	"github.com/graphmill/graphmill/internal/x86emu"
)

// takeMasksKernelCase is a way to run a takeMasks kernel (takeMasks16
// natively or under x86emu, takeMasksScalar).
type takeMasksKernelCase struct {
	name string
	run  func(*int32, *int64, *int32, int, *uint64, *int32, *int64, *int64)
}

// takeMasksKernels returns takeMasks16 under x86emu, lent exactly the
// memory of its contract (*lent, set before each call; its error goes to
// *emuErr), natively where the CPU has AVX-512, and takeMasksScalar.
func takeMasksKernels(t testing.TB) (kernels []takeMasksKernelCase, lent *[][]byte, emuErr *error) {
	p, err := x86emu.ParseFiles("takeall_amd64.s", "relabel_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	lent, emuErr = new([][]byte), new(error)
	emulated := func(ind *int32, sp *int64, todo *int32, lanes int, ms *uint64, out *int32, pos *int64, ip *int64) {
		args := new(x86emu.Args).Ptr(unsafe.Pointer(ind)).Ptr(unsafe.Pointer(sp)).Ptr(unsafe.Pointer(todo)).Int(lanes).
			Ptr(unsafe.Pointer(ms)).Ptr(unsafe.Pointer(out)).Ptr(unsafe.Pointer(pos)).Ptr(unsafe.Pointer(ip))
		*emuErr = p.Call("takeMasks16", args, *lent...)
	}
	kernels = []takeMasksKernelCase{{"emulated", emulated}}
	kernels = append(kernels, takeMasksKernelCase{"scalar", takeMasksScalar})
	if isa.HasAVX512F {
		kernels = append(kernels, takeMasksKernelCase{"native", takeMasks16})
	}
	return kernels, lent, emuErr
}

// checkTakeMasks runs takeMasks with each kernel on a group of
// len(ds) destinations drawing k of ds[j] > k neighbours (the lanes of
// drawn, their masks seeded with seeds[j]), each followed by a
// destination that takes all its 3 neighbours, the lists one after
// another from lo0 on, the last ending the neighbour array; it wants
// takeMasksGo's edges and positions, and nothing written elsewhere.
func checkTakeMasks(t *testing.T, kernels []takeMasksKernelCase, lent *[][]byte, emuErr *error, k int, ds []int, drawn uint8, seeds []uint64, lo0 int64) {
	defer func(k takeMasksFunc) { takeMasksKernel = k }(takeMasksKernel)
	n := len(ds)
	nd := 2 * n
	sp := make([]int64, 2*nd)
	ip := make([]int64, nd+1)
	todo := make([]int32, n)
	var ms [8]uint64
	lo := lo0
	for j, d := range ds {
		i := 2 * j
		todo[j] = int32(i)
		sp[2*i], sp[2*i+1] = lo, lo+int64(d)
		lo += int64(d)
		ip[i+1] = ip[i] + int64(k)
		ip[i+2] = ip[i+1] + 3
		if drawn>>j&1 != 0 {
			var g rng.Rand
			g.Seed(seeds[j])
			ms[j] = g.FloydMask(d, k)
		}
	}
	ind := make([]int32, lo)
	for q := range ind {
		ind[q] = int32(q*7919) % (1 << 30)
	}
	bound := ip[nd]
	empty := make([]int32, bound)
	emptyPos := make([]int64, bound)
	for q := range empty {
		empty[q], emptyPos[q] = -7, -9
	}
	wo, wp := slices.Clone(empty), slices.Clone(emptyPos)
	takeMasksGo(ind, sp, todo, drawn, &ms, k, wo, wp, ip)
	for _, kern := range kernels {
		out, pos := slices.Clone(empty), slices.Clone(emptyPos)
		*lent = [][]byte{x86emu.Bytes(ind), x86emu.Bytes(sp), x86emu.Bytes(todo), x86emu.Bytes(ms[:n]), x86emu.Bytes(out), x86emu.Bytes(pos), x86emu.Bytes(ip)}
		*emuErr = nil
		ran := false
		takeMasksKernel = func(a *int32, b *int64, c *int32, d int, e *uint64, f *int32, g *int64, h *int64) {
			ran = true
			kern.run(a, b, c, d, e, f, g, h)
		}
		takeMasks(ind, sp, todo, drawn, &ms, k, out, pos, ip)
		if !ran && drawn != 0 {
			t.Fatalf("%s: takeMasks did not run its kernel", kern.name)
		}
		if *emuErr != nil {
			t.Fatal(*emuErr)
		}
		if !slices.Equal(out, wo) || !slices.Equal(pos, wp) {
			t.Fatalf("%s (k %d, lists %v, lanes %08b): %v %v, want %v %v", kern.name, k, ds, drawn, out, pos, wo, wp)
		}
	}
}

// TestTakeMasksKernel checks takeMasks16, natively where the CPU has
// AVX-512 and always under x86emu, against takeMask: groups of up to
// eight destinations, lanes left out, lists of k+1 to 64 neighbours
// (across one to four sixteen-lane chunks), k of 1 to 63 drawn.
func TestTakeMasksKernel(t *testing.T) {
	kernels, lent, emuErr := takeMasksKernels(t)
	r := rand.New(rand.NewPCG(3, 4))
	for _, k := range []int{1, 5, 8, 9, 15, 16, 17, 25, 40, 63} {
		for _, n := range []int{1, 3, 8} {
			t.Run(fmt.Sprintf("k=%d/n=%d", k, n), func(t *testing.T) {
				ds := make([]int, n)
				seeds := make([]uint64, n)
				drawn := uint8(0)
				for j := range n {
					ds[j] = k + 1 + r.IntN(64-k)
					seeds[j] = r.Uint64()
					if r.IntN(4) != 0 {
						drawn |= 1 << j
					}
				}
				checkTakeMasks(t, kernels, lent, emuErr, k, ds, drawn, seeds, int64(r.IntN(5)))
			})
		}
	}
}

// FuzzTakeMasks is TestTakeMasksKernel on groups from the input: a list
// length per byte (up to eight), the lanes drawn and k from two more.
func FuzzTakeMasks(f *testing.F) {
	kernels, lent, emuErr := takeMasksKernels(f)
	f.Add([]byte{20, 64, 7}, uint8(0b101), uint8(5), uint64(1))
	f.Add([]byte{64, 64, 64, 64, 64, 64, 64, 64}, uint8(0xff), uint8(63), uint64(2))
	f.Fuzz(func(t *testing.T, lists []byte, drawn, k8 uint8, seed uint64) {
		if len(lists) == 0 || len(lists) > 8 {
			return
		}
		k := 1 + int(k8)%63
		ds := make([]int, len(lists))
		seeds := make([]uint64, len(lists))
		for j, b := range lists {
			ds[j] = k + 1 + int(b)%(64-k)
			seeds[j] = rng.Derive(seed, uint64(j))
		}
		checkTakeMasks(t, kernels, lent, emuErr, k, ds, drawn&(1<<len(lists)-1), seeds, int64(seed%3))
	})
}
