//go:build linux && amd64 && !noasm

package sample

import (
	"fmt"
	"slices"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestTakeAllArrayEnd runs every takeAll kernel on neighbour arrays
// that end right before a page the process may not read (PROT_NONE), so
// that a load of a lane past the array faults: the kernels read whole
// vectors past a list's end except where the array ends within them.
// The last lists (of 0 to 20 neighbours, a fanout below and above them)
// end at the array's end, less 0 to 9 ids.
func TestTakeAllArrayEnd(t *testing.T) {
	page := unix.Getpagesize()
	mem, err := unix.Mmap(-1, 0, 2*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		t.Skip(err)
	}
	defer unix.Munmap(mem)
	if err := unix.Mprotect(mem[page:], unix.PROT_NONE); err != nil {
		t.Skip(err)
	}
	all := unsafe.Slice((*int32)(unsafe.Pointer(&mem[0])), page/4)
	for i := range all {
		all[i] = int32(i % 50)
	}
	for _, short := range []int{0, 1, 3, 7, 8, 9} {
		for _, last := range []int{0, 1, 2, 5, 7, 8, 9, 15, 16, 20} {
			// ind: the page's last ids but short, so that the last list
			// (of last ids) ends short ids before the guard page.
			n := 60 + last + short
			ind := all[len(all)-n : len(all)-short : len(all)-short]
			// 51 nodes: 0-48 of one id each, 49 of the 11 ids before
			// the last list, 50 of the array's last ids.
			indptr := make([]int64, 52)
			for v := range 50 {
				indptr[v] = int64(v)
			}
			indptr[50] = int64(len(ind) - last)
			indptr[51] = int64(len(ind))
			dst := []int32{3, 50, 49, 50}
			for _, k := range []int{4, 25} {
				t.Run(fmt.Sprintf("short=%d/last=%d/k=%d", short, last, k), func(t *testing.T) {
					wsp, wo, wp, wip, wtodo := runTakeAll(0, ind, indptr, dst, k)
					for _, w := range takeAllWidths {
						sp, out, pos, ip, todo := runTakeAll(w, ind, indptr, dst, k)
						if !slices.Equal(sp, wsp) || !slices.Equal(out, wo) || !slices.Equal(pos, wp) || !slices.Equal(ip, wip) || !slices.Equal(todo, wtodo) {
							t.Fatalf("width %d differs from the Go loop", w)
						}
					}
				})
			}
		}
	}
}
