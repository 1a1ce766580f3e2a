//go:build !noasm

package stream

import "github.com/graphmill/graphmill/internal/isa"

// ok reports whether the streaming kernels run (AVX2; tests change it).
var ok = isa.HasAVX2

// copyNT copies n int64s (a multiple of Line; d 64-byte aligned) with
// streaming stores.
//
//go:noescape
func copyNT(d, s *int64, n int)

// widenNT widens n int32s (a multiple of Line; d 64-byte aligned) with
// streaming stores.
//
//go:noescape
func widenNT(d *int64, s *int32, n int)

// fence is SFENCE.
func fence()
