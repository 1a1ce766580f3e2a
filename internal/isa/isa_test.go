package isa

import (
	"testing"

	"golang.org/x/sys/cpu"
)

func TestCapFrom(t *testing.T) {
	for _, c := range []struct {
		env  string
		want Level
	}{
		{"", AVX512},
		{"generic", Generic},
		{"avx2", AVX2},
		{"AVX2", AVX2},
		{"avx512", AVX512},
		{"sse9", AVX512}, // unknown: no cap (tensor reports the error)
	} {
		if got := capFrom(c.env); got != c.want {
			t.Errorf("capFrom(%q) = %v, want %v", c.env, got, c.want)
		}
	}
}

func TestParseLevelRoundTrip(t *testing.T) {
	for l := Generic; l <= AVX512; l++ {
		got, err := parseLevel(l.String())
		if err != nil || got != l {
			t.Errorf("parseLevel(%q) = %v, %v", l.String(), got, err)
		}
	}
	if _, err := parseLevel("avx1024"); err == nil {
		t.Error("parseLevel accepted an unknown name")
	}
}

// TestFlagsWithinCPUAndCap checks that no flag claims more than the CPU
// has or the cap allows.
func TestFlagsWithinCPUAndCap(t *testing.T) {
	if HasAVX2 && (!cpu.X86.HasAVX2 || levelCap < AVX2) {
		t.Error("HasAVX2 beyond the CPU or the cap")
	}
	if HasAVX512F && (!cpu.X86.HasAVX512F || levelCap < AVX512) {
		t.Error("HasAVX512F beyond the CPU or the cap")
	}
	for name, f := range map[string]bool{"BW": HasAVX512BW, "CD": HasAVX512CD} {
		if f && !HasAVX512F {
			t.Errorf("HasAVX512%s without HasAVX512F", name)
		}
	}
	t.Logf("cap %v: AVX2 %v, F16C %v, AVX-512 F %v BW %v CD %v", levelCap, HasAVX2, HasF16C, HasAVX512F, HasAVX512BW, HasAVX512CD)
}
