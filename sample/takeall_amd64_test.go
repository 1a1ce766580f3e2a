//go:build !noasm

package sample

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/graphmill/graphmill/internal/rng"
	"github.com/graphmill/graphmill/internal/x86emu"
)

// TestTakeMasksKernel checks takeMasks16, natively where the CPU has
// AVX-512 and always under x86emu (lent exactly the memory of its
// contract), against takeMask: groups of up to eight destinations, lanes
// left out, lists of k+1 to 64 neighbours (across one to four sixteen-lane
// chunks, the last list ending the neighbour array), k of 1 to 63 drawn,
// and nothing written outside the drawn edges' slots.
func TestTakeMasksKernel(t *testing.T) {
	p, err := x86emu.ParseFiles("takeall_amd64.s", "relabel_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	// lent is the memory the emulated kernel is lent, and emuErr its
	// error, for the case being run.
	var lent [][]byte
	var emuErr error
	emulated := func(ind *int32, sp *int64, todo *int32, lanes int, ms *uint64, out *int32, pos *int64, ip *int64) {
		args := new(x86emu.Args).Ptr(unsafe.Pointer(ind)).Ptr(unsafe.Pointer(sp)).Ptr(unsafe.Pointer(todo)).Int(lanes).
			Ptr(unsafe.Pointer(ms)).Ptr(unsafe.Pointer(out)).Ptr(unsafe.Pointer(pos)).Ptr(unsafe.Pointer(ip))
		emuErr = p.Call("takeMasks16", args, lent...)
	}
	kernels := map[string]func(*int32, *int64, *int32, int, *uint64, *int32, *int64, *int64){"emulated": emulated}
	if takeMasks16Kernel != nil {
		kernels["native"] = takeMasks16Kernel
	}
	defer func(k func(*int32, *int64, *int32, int, *uint64, *int32, *int64, *int64)) { takeMasks16Kernel = k }(takeMasks16Kernel)
	r := rand.New(rand.NewPCG(3, 4))
	for _, k := range []int{1, 5, 8, 9, 15, 16, 17, 25, 40, 63} {
		for _, n := range []int{1, 3, 8} {
			t.Run(fmt.Sprintf("k=%d/n=%d", k, n), func(t *testing.T) {
				// n destinations, each followed by one that takes all its 3
				// neighbours; some of the n drawn. Their lists one after another,
				// the last ending ind.
				nd := 2 * n
				sp := make([]int64, 2*nd)
				ip := make([]int64, nd+1)
				todo := make([]int32, n)
				var ms [8]uint64
				lanes := uint8(0)
				lo := int64(r.IntN(5))
				for j := range n {
					i := 2 * j
					todo[j] = int32(i)
					d := k + 1 + r.IntN(64-k)
					sp[2*i], sp[2*i+1] = lo, lo+int64(d)
					lo += int64(d)
					ip[i+1] = ip[i] + int64(k)
					ip[i+2] = ip[i+1] + 3 // the next destination's edges
					if r.IntN(4) != 0 {
						lanes |= 1 << j
						var g rng.Rand
						g.Seed(r.Uint64())
						ms[j] = g.FloydMask(d, k)
					}
				}
				ind := make([]int32, lo)
				for q := range ind {
					ind[q] = r.Int32N(1 << 30)
				}
				bound := ip[nd]
				want := make([]int32, bound)
				wantPos := make([]int64, bound)
				for q := range want {
					want[q], wantPos[q] = -7, -9
				}
				for name, kern := range kernels {
					out, pos := slices.Clone(want), slices.Clone(wantPos)
					lent = [][]byte{x86emu.Bytes(ind), x86emu.Bytes(sp), x86emu.Bytes(todo), x86emu.Bytes(ms[:n]), x86emu.Bytes(out), x86emu.Bytes(pos), x86emu.Bytes(ip)}
					takeMasks16Kernel = kern
					emuErr = nil
					if !takeMasks(ind, sp, todo, lanes, &ms, out, pos, ip) {
						t.Fatalf("%s: takeMasks did not run its kernel", name)
					}
					if emuErr != nil {
						t.Fatal(emuErr)
					}
					wo, wp := slices.Clone(want), slices.Clone(wantPos)
					for j, i := range todo {
						if lanes>>j&1 != 0 {
							a, b, e := sp[2*i], sp[2*i+1], ip[i]
							takeMask(ms[j], ind[a:b], a, wo[e:e+int64(k)], wp[e:e+int64(k)])
						}
					}
					if !slices.Equal(out, wo) || !slices.Equal(pos, wp) {
						t.Fatalf("%s (lanes %08b): %v %v, want %v %v", name, lanes, out, pos, wo, wp)
					}
				}
			})
		}
	}
}
