//go:build !amd64 || noasm

package tensor

// Without assembly (other architectures, or the noasm build tag) only the
// generic kernels of kernels_generic.go are registered.

func registerArchKernels() {}
