//go:build !amd64 || noasm

package tensor

// emulatedMicroKernels is empty where there is no assembly to emulate.
func emulatedMicroKernels() []namedKernel { return nil }

// emulatedSets is empty where there is no assembly to emulate.
func emulatedSets() []*kernelSet { return nil }
