//go:build !amd64 || noasm

package partition

// The masked merge loops of contractRange: the Go loops here.
var maskedUnit, maskedWeighted = mergeUnitMasked, mergeWeightedMasked
