//go:build amd64 && !noasm

package nn

import "github.com/graphmill/graphmill/internal/isa"

// Adam's step in assembly: the compiled loop (a float64 square root and a
// division an element) took 1 % of a GraphSAGE training step's CPU time
// (AMD EPYC Zen 5); eight elements at a time it is bitwise the same.

var hasAVX2 = isa.HasAVX2

// adamAVX2 is adamGeneric for the first n elements (n a multiple of 8).
//
//go:noescape
func adamAVX2(n int, w, grad, m, v *float32, k *adamCoef, l2 int)

// adamUpdate is adamGeneric, in AVX2 where the CPU has it.
func adamUpdate(w, g, m, v []float32, k *adamCoef, l2 bool) {
	n := 0
	if hasAVX2 {
		n = len(w) &^ 7
	}
	if n > 0 {
		_, _, _ = g[n-1], m[n-1], v[n-1]
		flag := 0
		if l2 {
			flag = 1
		}
		adamAVX2(n, &w[0], &g[0], &m[0], &v[0], k, flag)
	}
	adamGeneric(w[n:], g[n:], m[n:], v[n:], k, l2)
}
