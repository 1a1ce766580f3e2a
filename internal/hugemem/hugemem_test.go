//go:build linux

package hugemem

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/graphmill/graphmill/internal/arena"
)

// smapsField returns the value of the field name (such as "VmFlags:")
// of the mapping holding address a in /proc/self/smaps.
func smapsField(t *testing.T, a uintptr, name string) string {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x", &lo, &hi); n == 2 && strings.Contains(line, " ") {
			in = lo <= a && a < hi
			continue
		}
		if in && strings.HasPrefix(line, name) {
			return strings.TrimPrefix(line, name)
		}
	}
	t.Fatalf("no mapping holds %#x", a)
	return ""
}

// vmFlags returns the VmFlags of the mapping holding address a.
func vmFlags(t *testing.T, a uintptr) []string {
	return strings.Fields(smapsField(t, a, "VmFlags:"))
}

// anonHuge returns the AnonHugePages of the mapping holding address a,
// in bytes.
func anonHuge(t *testing.T, a uintptr) int {
	var kb int
	if _, err := fmt.Sscanf(smapsField(t, a, "AnonHugePages:"), "%d kB", &kb); err != nil {
		t.Fatal(err)
	}
	return kb << 10
}

// TestMake checks Make's slice, and that it advises the whole huge pages
// of the part the caller fills, and nothing under a memory limit or for
// a small slice.
func TestMake(t *testing.T) {
	if b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil || strings.Contains(string(b), "[never]") {
		t.Skip("no transparent huge pages on this kernel")
	}
	advised := func(s []float32) bool {
		p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
		mid := (p + uintptr(len(s))*2) &^ (hugePage - 1) // a huge page inside the filled part
		return strings.Contains(" "+strings.Join(vmFlags(t, mid), " ")+" ", " hg ")
	}
	const n = 3 << 20 // 12 MiB of float32
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(1 << 40))
	limited := Make[float32](n, n+n/4)
	if advised(limited) {
		t.Error("advised under a memory limit")
	}
	debug.SetMemoryLimit(math.MaxInt64)
	s := Make[float32](n, n+n/4)
	if len(s) != n || cap(s) != n+n/4 {
		t.Fatalf("len %d cap %d, want %d and %d", len(s), cap(s), n, n+n/4)
	}
	for i := 0; i < n; i += 4096 {
		if s[i] != 0 {
			t.Fatalf("s[%d] = %v, want 0", i, s[i])
		}
	}
	if !advised(s) {
		t.Error("a 12 MiB slice not advised for huge pages")
	}
	// At most arena.HugeMaxRegion of one buffer: a page past it is not advised.
	big := Make[byte](arena.HugeMaxRegion+8*hugePage, arena.HugeMaxRegion+8*hugePage)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(big)))
	lo := (p + hugePage - 1) &^ (hugePage - 1)
	if f := vmFlags(t, lo+arena.HugeMaxRegion+2*hugePage); strings.Contains(" "+strings.Join(f, " ")+" ", " hg ") {
		t.Error("advised past arena.HugeMaxRegion")
	}
	if !strings.Contains(" "+strings.Join(vmFlags(t, lo), " ")+" ", " hg ") {
		t.Error("a large buffer's first huge page not advised")
	}
	if small := Make[byte](100, 1<<20); len(small) != 100 || cap(small) != 1<<20 {
		t.Fatalf("small: len %d cap %d", len(small), cap(small))
	}
}

// TestTable: a table is zeroed and, on memory the heap had already
// faulted in 4 KiB pages (a freed buffer's, written through), in huge
// pages.
func TestTable(t *testing.T) {
	if b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil || strings.Contains(string(b), "[never]") {
		t.Skip("no transparent huge pages on this kernel")
	}
	probe, free := Alloc[byte](2 * hugePage) // faulted in: a collapse of nothing fails
	defer free()
	if err := unix.Madvise(probe, unix.MADV_COLLAPSE); err == unix.EINVAL {
		t.Skip("no MADV_COLLAPSE (Linux 6.1+)")
	}
	const n = 3 << 20 // 12 MiB of uint32
	for range 4 {     // freed buffers written in 4 KiB pages for the heap to hand back
		b := make([]uint32, n)
		for i := range b {
			b[i] = 1
		}
		runtime.KeepAlive(b)
		runtime.GC()
	}
	s := Table[uint32](n)
	if len(s) != n {
		t.Fatalf("len %d, want %d", len(s), n)
	}
	for i, v := range s {
		if v != 0 {
			t.Fatalf("s[%d] = %d, want 0", i, v)
		}
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	mid := (p + 2*n) &^ (hugePage - 1)
	if got := anonHuge(t, mid); got < hugePage {
		t.Errorf("the table's mapping holds %d bytes of huge pages, want at least one page", got)
	}
}
