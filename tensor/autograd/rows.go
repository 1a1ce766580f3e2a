package autograd

import "github.com/graphmill/graphmill/tensor"

// ConcatRows stacks a on top of b (same number of columns). GNNAutoScale
// uses it to put a batch's freshly computed rows above the halo rows pulled
// from the history.
func (t *Tape) ConcatRows(a, b *Var) *Var {
	if a.Value.Cols != b.Value.Cols {
		shapePanic("ConcatRows", "%s has %d columns, %s has %d", a.Name, a.Value.Cols, b.Name, b.Value.Cols)
	}
	ra := a.Value.Rows
	out := t.get(ra+b.Value.Rows, a.Value.Cols)
	copy(out.Data, a.Value.Data)
	copy(out.Data[len(a.Value.Data):], b.Value.Data)
	return t.record("ConcatRows", out, func(g tensor.Matrix) error {
		if err := into(a, func(da tensor.Matrix) error {
			return tensor.AddScaled(da, 1, g.RowSlice(0, ra))
		}); err != nil {
			return err
		}
		return into(b, func(db tensor.Matrix) error {
			return tensor.AddScaled(db, 1, g.RowSlice(ra, g.Rows))
		})
	}, a, b)
}
