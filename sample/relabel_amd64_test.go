//go:build !noasm

package sample

import (
	"testing"
	"unsafe"

	"github.com/graphmill/graphmill/internal/x86emu"
)

// TestRelabel8TablesLayout checks the offsets relabel8's assembly reads
// its tables at.
func TestRelabel8TablesLayout(t *testing.T) {
	var r relabel8Tables
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"prefix", unsafe.Offsetof(r.prefix), 0},
		{"compress", unsafe.Offsetof(r.compress), 1024},
		{"valid", unsafe.Offsetof(r.valid), 2048},
		{"back", unsafe.Offsetof(r.back), 2272},
		{"iota", unsafe.Offsetof(r.iota), 2496},
		{"rot", unsafe.Offsetof(r.rot), 2528},
		{"shifts", unsafe.Offsetof(r.shifts), 2560},
		{"sentinel", unsafe.Offsetof(r.sentinel), 2592},
	} {
		if c.got != c.want {
			t.Errorf("relabel8Tables.%s at %d, the assembly reads it at %d", c.name, c.got, c.want)
		}
	}
	// A few entries by hand: mask 0b1010_0110 has new lanes 1, 2, 5, 7.
	const m = 0xa6
	if got, want := tables8.compress[m]&0xffff, uint32(1|2<<4|5<<8|7<<12); got != want {
		t.Errorf("compress[%#x] = %#x, want %#x", m, got, want)
	}
	for j, want := range []uint32{0, 0, 1, 2, 2, 2, 3, 3} {
		if got := tables8.prefix[m] >> (4 * j) & 15; got != want {
			t.Errorf("prefix[%#x] lane %d = %d, want %d", m, j, got, want)
		}
	}
}

// TestDenseRelabelVectorEmulated runs TestDenseRelabelVector's cases with
// the sixteen-lane kernel under x86emu, lent exactly the memory its
// contract gives it: CPUs without AVX-512 (CI's may have AVX2 only) test
// it too.
func TestDenseRelabelVectorEmulated(t *testing.T) {
	p, err := x86emu.ParseFiles("relabel_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	defer func(k func(*uint32, int, *int32, int, *int32, int, uint32, int) (int, int)) { relabel16Kernel = k }(relabel16Kernel)
	relabel16Kernel = func(tab *uint32, ntab int, idx *int32, n int, nodes *int32, nn int, gen uint32, pf int) (int, int) {
		args := new(x86emu.Args).Ptr(unsafe.Pointer(tab)).Int(ntab).Ptr(unsafe.Pointer(idx)).Int(n).
			Ptr(unsafe.Pointer(nodes)).Int(nn).Uint32(gen).Int(pf)
		err := p.Call("relabel16", args, unsafe.Slice((*byte)(unsafe.Pointer(tab)), 4*ntab),
			unsafe.Slice((*byte)(unsafe.Pointer(idx)), 4*n), unsafe.Slice((*byte)(unsafe.Pointer(nodes)), 4*(nn+n)))
		if err != nil {
			t.Fatal(err)
		}
		return int(args.Uint64At(64)), int(args.Uint64At(72))
	}
	checkDenseRelabelVector(t, []int{16})
}
