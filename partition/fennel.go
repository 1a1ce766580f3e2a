package partition

import (
	"context"
	"math"
)

// fennel streams the nodes in id order and puts each into the part that
// maximises (neighbours already there) - alpha*gamma*size^(gamma-1), with
// gamma = 1.5 and alpha = sqrt(k)*m/n^1.5 as in the Fennel paper, among
// the parts with room under the balance limit of every constraint.
func fennel(ctx context.Context, g *Graph, k int, opts Options) ([]int32, error) {
	n := g.NumNodes()
	vw, ncon := vertexWeights(n, opts.Weights, nil)
	tot := make([]int64, ncon)
	for v := 0; v < n; v++ {
		for c := 0; c < ncon; c++ {
			tot[c] += int64(vw[v*ncon+c])
		}
	}
	limit := make([]int64, ncon)
	for c := range limit {
		limit[c] = balanceLimit(tot[c], k, opts.Imbalance)
	}
	const gamma = 1.5
	m := float64(g.NumEdges())
	alpha := math.Sqrt(float64(k)) * m / math.Pow(float64(n), gamma)
	if alpha == 0 {
		alpha = 1
	}
	pw := make([]int64, k*ncon)
	parts := make([]int32, n)
	for v := range parts {
		parts[v] = -1
	}
	conn := make([]float64, k)
	var touched []int32
	fits := func(v int, q int32) bool {
		for c := 0; c < ncon; c++ {
			w := int64(vw[v*ncon+c])
			if w > 0 && pw[int(q)*ncon+c]+w > limit[c] {
				return false
			}
		}
		return true
	}
	penalty := func(q int32) float64 { return alpha * gamma * math.Sqrt(float64(pw[int(q)*ncon])) }
	for v := 0; v < n; v++ {
		if v&65535 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		for j := g.Xadj[v]; j < g.Xadj[v+1]; j++ {
			if q := parts[g.Adjncy[j]]; q >= 0 {
				if conn[q] == 0 {
					touched = append(touched, q)
				}
				w := 1.0
				if g.EdgeWeights != nil {
					w = float64(g.EdgeWeights[j])
				}
				conn[q] += w
			}
		}
		best, bestScore := int32(-1), math.Inf(-1)
		for _, q := range touched {
			if s := conn[q] - penalty(q); s > bestScore && fits(v, q) {
				best, bestScore = q, s
			}
		}
		// The best part without neighbours is the lightest one with room.
		light, lightW := int32(-1), int64(math.MaxInt64)
		for q := int32(0); q < int32(k); q++ {
			if w := pw[int(q)*ncon]; w < lightW && conn[q] == 0 && fits(v, q) {
				light, lightW = q, w
			}
		}
		if light >= 0 && -penalty(light) > bestScore {
			best = light
		}
		if best < 0 {
			// Nothing fits every constraint: the part lightest in nodes.
			for q := int32(0); q < int32(k); q++ {
				if best < 0 || pw[int(q)*ncon] < pw[int(best)*ncon] {
					best = q
				}
			}
		}
		parts[v] = best
		for c := 0; c < ncon; c++ {
			pw[int(best)*ncon+c] += int64(vw[v*ncon+c])
		}
		for _, q := range touched {
			conn[q] = 0
		}
		touched = touched[:0]
	}
	return parts, nil
}
