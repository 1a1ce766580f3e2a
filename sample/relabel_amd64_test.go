//go:build !noasm

package sample

import (
	"testing"
	"unsafe"
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
