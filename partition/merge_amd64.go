//go:build !noasm

package partition

// The masked merge loops of contractRange on amd64: mergeUnitMasked and
// mergeWeightedMasked in assembly (merge_amd64.s). Contracting wave's
// levels took 0.75-0.80 of the Go loops' time (one core, AMD EPYC Zen 1;
// paired, best of 30), and partitioning it at K = 4 0.94 (medians of 30).
var maskedUnit, maskedWeighted = mergeUnitMaskedAsm, mergeWeightedMaskedAsm

//go:noescape
func mergeUnitAsm(lst *int32, n int, cmap, ht, out, outw *int32, d int, base int32) int

//go:noescape
func mergeWeightedAsm(lst, wts *int32, n int, cmap, ht, out, outw *int32, d int, base int32) int

// mergeUnitMaskedAsm is mergeUnitMasked in assembly. The lengths of out
// and outw are checked here; the entries of lst must index cmap and
// those of cmap ht, as contractRange's callers ensure (a validated
// graph, a complete map to the coarse vertices).
func mergeUnitMaskedAsm(lst, cmap, ht, out, outw []int32, d int, base int32) int {
	if len(lst) == 0 {
		return d
	}
	if d < 0 || d+len(lst) > len(out) || len(outw) < len(out) {
		panic("partition: merge list beyond its output")
	}
	return mergeUnitAsm(&lst[0], len(lst), &cmap[0], &ht[0], &out[0], &outw[0], d, base)
}

// mergeWeightedMaskedAsm is mergeWeightedMasked in assembly, with the
// checks of mergeUnitMaskedAsm.
func mergeWeightedMaskedAsm(lst, wts, cmap, ht, out, outw []int32, d int, base int32) int {
	if len(lst) == 0 {
		return d
	}
	if d < 0 || d+len(lst) > len(out) || len(outw) < len(out) || len(wts) < len(lst) {
		panic("partition: merge list beyond its output")
	}
	return mergeWeightedAsm(&lst[0], &wts[0], len(lst), &cmap[0], &ht[0], &out[0], &outw[0], d, base)
}
