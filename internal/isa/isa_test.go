package isa

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/cpuid/v2"
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

// TestL2BytesMatchesSysfs checks the L2 size read from CPUID against the
// one Linux reports for CPU 0 (skipped where either is unknown).
func TestL2BytesMatchesSysfs(t *testing.T) {
	if L2Bytes == 0 {
		t.Skip("CPUID reports no L2 size")
	}
	dirs, _ := filepath.Glob("/sys/devices/system/cpu/cpu0/cache/index*")
	for _, d := range dirs {
		level, err1 := os.ReadFile(filepath.Join(d, "level"))
		size, err2 := os.ReadFile(filepath.Join(d, "size"))
		if err1 != nil || err2 != nil || strings.TrimSpace(string(level)) != "2" {
			continue
		}
		kib, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(string(size)), "K"))
		if err != nil {
			t.Fatalf("%s/size: %q", d, size)
		}
		if L2Bytes != kib<<10 {
			t.Fatalf("L2Bytes = %d, Linux reports %d KiB", L2Bytes, kib)
		}
		return
	}
	t.Skip("no L2 in /sys/devices/system/cpu/cpu0/cache")
}

// TestHalfWidth256 checks which CPUs count as running 256-bit vectors in
// two halves: Zen 1 and Zen+ (and Hygon's Zen 1), not Zen 2 and later nor
// Intel.
func TestHalfWidth256(t *testing.T) {
	for _, c := range []struct {
		v             cpuid.Vendor
		family, model int
		want          bool
	}{
		{cpuid.AMD, 0x17, 0x01, true},  // Zen 1 (EPYC 7001)
		{cpuid.AMD, 0x17, 0x08, true},  // Zen+
		{cpuid.AMD, 0x17, 0x31, false}, // Zen 2 (EPYC 7002)
		{cpuid.AMD, 0x19, 0x01, false}, // Zen 3
		{cpuid.AMD, 0x1a, 0x02, false}, // Zen 5
		{cpuid.Hygon, 0x18, 0x00, true},
		{cpuid.Intel, 0x06, 0xa7, false},
		{cpuid.Intel, 0x17, 0x01, false},
	} {
		if got := halfWidth256(c.v, c.family, c.model); got != c.want {
			t.Errorf("%v family %#x model %#x: %v, want %v", c.v, c.family, c.model, got, c.want)
		}
	}
}

// TestDescribe checks the machine description against what the package
// itself reports, and its one-line form.
func TestDescribe(t *testing.T) {
	m := Describe()
	want := Generic
	if HasAVX2 {
		want = AVX2
	}
	if HasAVX512F {
		want = AVX512
	}
	if m.ISA != want.String() {
		t.Errorf("ISA %q, want %q", m.ISA, want)
	}
	if m.LogicalCPUs < 1 || m.L2Bytes != L2Bytes || m.HalfWidth256 != HalfWidth256 {
		t.Errorf("Describe() = %+v: logical CPUs, L2 or half width disagree with the package (L2 %d, half width %v)", m, L2Bytes, HalfWidth256)
	}
	if m.Vendor != cpuid.CPU.VendorString || m.Family != cpuid.CPU.Family || m.Model != cpuid.CPU.Model {
		t.Errorf("Describe() = %+v: vendor, family or model differ from CPUID's", m)
	}
	s := m.String()
	for _, part := range []string{m.ISA + " kernels", "family " + strconv.Itoa(m.Family) + " model " + strconv.Itoa(m.Model)} {
		if !strings.Contains(s, part) {
			t.Errorf("String() = %q lacks %q", s, part)
		}
	}
	for _, c := range []struct {
		m    Machine
		want string
	}{
		{Machine{CPU: "AMD EPYC", Vendor: "AuthenticAMD", Family: 26, Model: 2, ISA: "avx512", LogicalCPUs: 2, L2Bytes: 1 << 20},
			"AMD EPYC (AuthenticAMD family 26 model 2), avx512 kernels, 2 logical CPUs, 1024 KiB L2"},
		{Machine{Vendor: "AuthenticAMD", Family: 23, Model: 1, ISA: "avx2", LogicalCPUs: 2, HalfWidth256: true},
			"unknown CPU (AuthenticAMD family 23 model 1), avx2 kernels, 2 logical CPUs, 256-bit vectors in two halves"},
	} {
		if got := c.m.String(); got != c.want {
			t.Errorf("String() = %q, want %q", got, c.want)
		}
	}
}
