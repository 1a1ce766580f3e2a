package partition

import "github.com/graphmill/graphmill/dataset"

// BalanceWeights returns the extra balance constraints of d, as DGL's
// balance_ntypes and balance_edges: with train, weight 1 for every
// training node (0 otherwise); with edges, every node's in-degree (the
// edges its part stores). names lists "nodes" and the constraints added.
func BalanceWeights(d *dataset.Dataset, train, edges bool) (weights [][]int32, names []string) {
	names = []string{"nodes"}
	if train {
		w := make([]int32, d.Meta.NumNodes)
		for _, v := range d.Train {
			w[v] = 1
		}
		weights = append(weights, w)
		names = append(names, "train")
	}
	if edges {
		weights = append(weights, d.Graph.InDegrees())
		names = append(names, "edges")
	}
	return weights, names
}
