package isa

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/klauspost/cpuid/v2"
)

// Machine describes the CPU that runs the kernels, for benchmark reports:
// the same case measures differently on an AVX2 and an AVX-512 machine,
// so every report names the one it was measured on.
type Machine struct {
	// CPU is the processor's brand string (CPUID), e.g. "AMD EPYC 9R45";
	// a virtual machine may report a shortened one.
	CPU string `json:"cpu"`
	// Vendor, Family and Model are CPUID's, family and model with their
	// extended fields added (as /proc/cpuinfo shows them): AMD family 26
	// is Zen 5, 25 Zen 3 and 4, 23 Zen 1 and 2; Intel family 6 model 143
	// Sapphire Rapids.
	Vendor string `json:"vendor"`
	Family int    `json:"family"`
	Model  int    `json:"model"`
	// ISA is the widest instruction set the kernels use: "avx512", "avx2"
	// or "generic" (the CPU's, capped by GRAPHMILL_KERNEL).
	ISA string `json:"isa"`
	// LogicalCPUs is the number of logical CPUs this process may use.
	LogicalCPUs int `json:"logical_cpus"`
	// L2Bytes is one core's L2 cache (0 where CPUID does not say).
	L2Bytes int `json:"l2_bytes"`
	// HalfWidth256 reports 256-bit vectors run as two halves (see
	// HalfWidth256), where some kernels are scalar instead.
	HalfWidth256 bool `json:"half_width_256"`
}

// Describe returns this machine's description.
func Describe() Machine {
	return Machine{
		CPU:          strings.TrimSpace(cpuid.CPU.BrandName),
		Vendor:       cpuid.CPU.VendorString,
		Family:       cpuid.CPU.Family,
		Model:        cpuid.CPU.Model,
		ISA:          usedLevel().String(),
		LogicalCPUs:  runtime.NumCPU(),
		L2Bytes:      L2Bytes,
		HalfWidth256: HalfWidth256,
	}
}

// usedLevel is the widest level the kernels use: AVX512 where
// HasAVX512F, AVX2 where HasAVX2, else Generic.
func usedLevel() Level {
	switch {
	case HasAVX512F:
		return AVX512
	case HasAVX2:
		return AVX2
	}
	return Generic
}

// String is one line for a report's header, e.g. "AMD EPYC (AuthenticAMD
// family 26 model 2), avx512 kernels, 2 logical CPUs, 1024 KiB L2".
func (m Machine) String() string {
	cpu := m.CPU
	if cpu == "" {
		cpu = "unknown CPU"
	}
	s := fmt.Sprintf("%s (%s family %d model %d), %s kernels, %d logical CPUs", cpu, m.Vendor, m.Family, m.Model, m.ISA, m.LogicalCPUs)
	if m.L2Bytes > 0 {
		s += fmt.Sprintf(", %d KiB L2", m.L2Bytes>>10)
	}
	if m.HalfWidth256 {
		s += ", 256-bit vectors in two halves"
	}
	return s
}
