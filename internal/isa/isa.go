// Package isa reports which x86 vector instruction sets graphmill's
// assembly kernels may use: those the CPU has (golang.org/x/sys/cpu),
// capped by the environment variable GRAPHMILL_KERNEL.
//
// GRAPHMILL_KERNEL=generic runs every package's pure-Go code,
// GRAPHMILL_KERNEL=avx2 every package's AVX2 kernels and none of the
// AVX-512 ones, so one AVX-512 machine can measure and test what an
// AVX2-only machine would run (the sampler's relabelling, the random
// number lanes, half-precision decoding, Adam, tensor's kernel set).
// GRAPHMILL_KERNEL=avx512 or unset uses all the CPU has.
//
// It also reports the size of the CPU's L2 cache (L2Bytes), which the
// kernels' cache blocking adapts to, and whether 256-bit vectors run as
// two halves (HalfWidth256), where some kernels are scalar instead.
package isa

import (
	"fmt"
	"os"
	"strings"

	"github.com/klauspost/cpuid/v2"
	"golang.org/x/sys/cpu"
)

// Level is an instruction-set level: Generic < AVX2 < AVX512.
type Level int

// The levels, lowest first.
const (
	Generic Level = iota
	AVX2
	AVX512
)

func (l Level) String() string {
	switch l {
	case Generic:
		return "generic"
	case AVX2:
		return "avx2"
	case AVX512:
		return "avx512"
	}
	return fmt.Sprintf("Level(%d)", int(l))
}

// parseLevel parses a level's name (as Level.String writes it).
func parseLevel(name string) (Level, error) {
	for l := Generic; l <= AVX512; l++ {
		if strings.EqualFold(name, l.String()) {
			return l, nil
		}
	}
	return 0, fmt.Errorf("isa: unknown kernel level %q (want generic, avx2 or avx512)", name)
}

// Requested is GRAPHMILL_KERNEL's value ("" when unset).
var Requested = os.Getenv("GRAPHMILL_KERNEL")

// levelCap is the highest level the kernels may use: AVX512 unless
// GRAPHMILL_KERNEL names a lower one. An unknown name leaves it at AVX512
// (tensor reports the error when it reads the same variable).
var levelCap = capFrom(Requested)

func capFrom(name string) Level {
	if name == "" {
		return AVX512
	}
	l, err := parseLevel(name)
	if err != nil {
		return AVX512
	}
	return l
}

// The instruction sets usable under the cap. AVX2 includes FMA; each
// AVX512* includes AVX512F.
var (
	HasAVX2     = levelCap >= AVX2 && cpu.X86.HasAVX2 && cpu.X86.HasFMA
	HasF16C     = levelCap >= AVX2 && cpu.X86.HasAVX && cpu.X86.HasF16C
	HasAVX512F  = levelCap >= AVX512 && cpu.X86.HasAVX512F
	HasAVX512BW = HasAVX512F && cpu.X86.HasAVX512BW
	HasAVX512CD = HasAVX512F && cpu.X86.HasAVX512CD
)

// Scalar reports whether scalar assembly kernels (plain x86-64, for the
// few computations whose vector forms are slower on some CPUs) may run:
// at every level but generic.
var Scalar = levelCap > Generic

// HalfWidth256 reports that the CPU executes each 256-bit vector
// instruction as two 128-bit halves: AMD Zen 1 and Zen+ (family 17h,
// models below 30h) and Hygon Dhyana (family 18h), whose vector units are
// 128 bits wide. A kernel made mostly of 64-bit multiplies (four 32x32
// products a lane in vector registers) runs faster there as scalar code.
var HalfWidth256 = halfWidth256(cpuid.CPU.VendorID, cpuid.CPU.Family, cpuid.CPU.Model)

func halfWidth256(v cpuid.Vendor, family, model int) bool {
	switch {
	case v == cpuid.AMD && family == 0x17:
		return model < 0x30
	case v == cpuid.Hygon && family == 0x18:
		return true
	}
	return false
}

// L2Bytes is the size of one core's L2 cache in bytes, as CPUID reports it
// (github.com/klauspost/cpuid: golang.org/x/sys/cpu has no cache sizes),
// or 0 where it is unknown.
var L2Bytes = max(0, cpuid.CPU.Cache.L2)
