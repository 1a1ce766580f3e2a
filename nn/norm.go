package nn

import (
	"math"
	"sync"

	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// Buffered is a layer with state that is saved and copied with its
// parameters but not trained: batch normalisation's running statistics.
type Buffered interface {
	// Buffers returns the state, named relative to the layer as its
	// parameters are.
	Buffers() []*autograd.Var
}

// vectors holds the parameters stored 1×n here that PyTorch holds as
// vectors of n (the normalisations' weights; biases are known by name).
var vectors sync.Map

// BatchNorm normalises every column of its input over the rows (the
// batch's destinations; in full-graph mode every node, across all
// processes of a SAR run, whose statistics Block.SumRows gathers), then
// scales and shifts it, as torch.nn.BatchNorm1d. Training updates running
// statistics (momentum 0.1, unbiased variance), which evaluation uses.
type BatchNorm struct {
	Weight, Bias            *autograd.Var
	RunningMean, RunningVar *autograd.Var
	Momentum, Eps           float64
}

// NewBatchNorm returns a BatchNorm over cols columns whose tensors are
// named prefix+"weight", prefix+"bias", prefix+"running_mean" and
// prefix+"running_var" (PyTorch's names within a module).
func NewBatchNorm(prefix string, cols int) *BatchNorm {
	w := tensor.New(1, cols)
	rv := tensor.New(1, cols)
	for i := range w.Data {
		w.Data[i], rv.Data[i] = 1, 1
	}
	n := &BatchNorm{
		Weight:      autograd.NewParam(prefix+"weight", w),
		Bias:        autograd.NewParam(prefix+"bias", tensor.New(1, cols)),
		RunningMean: &autograd.Var{Name: prefix + "running_mean", Value: tensor.New(1, cols)},
		RunningVar:  &autograd.Var{Name: prefix + "running_var", Value: rv},
		Momentum:    0.1, Eps: 1e-5,
	}
	vectors.Store(n.Weight, true)
	return n
}

// Params returns the scale and shift.
func (n *BatchNorm) Params() []*autograd.Var { return []*autograd.Var{n.Weight, n.Bias} }

// Buffers returns the running statistics.
func (n *BatchNorm) Buffers() []*autograd.Var { return []*autograd.Var{n.RunningMean, n.RunningVar} }

// Forward normalises x (rows: b's destinations) with the batch's
// statistics when train, else with the running ones.
func (n *BatchNorm) Forward(tp *autograd.Tape, b *Block, x *autograd.Var, train bool) *autograd.Var {
	cols := x.Value.Cols
	if !train || tp.NoGrad() {
		mean, inv := tensor.New(1, cols), tensor.New(1, cols)
		for j := range cols {
			mean.Data[j] = n.RunningMean.Value.Data[j]
			inv.Data[j] = float32(1 / math.Sqrt(float64(n.RunningVar.Value.Data[j])+n.Eps))
		}
		return n.affine(tp, normalize(tp, x, tp.Const(mean), inv))
	}
	rows := b.CountRows(x.Value.Rows)
	if rows == 0 {
		return x
	}
	mean := tp.Scale(b.SumRows(tp, x), 1/float32(rows))
	xc := subRow(tp, x, mean)
	v := tp.Scale(b.SumRows(tp, tp.Mul(xc, xc)), 1/float32(rows))
	y := scaleByStd(tp, xc, v, n.Eps)
	// Running statistics, with the unbiased variance as PyTorch keeps.
	m := float32(n.Momentum)
	unbias := float32(rows) / float32(max(rows-1, 1))
	for j := range cols {
		rm, rv := &n.RunningMean.Value.Data[j], &n.RunningVar.Value.Data[j]
		*rm = (1-m)*(*rm) + m*mean.Value.Data[j]
		*rv = (1-m)*(*rv) + m*v.Value.Data[j]*unbias
	}
	return n.affine(tp, y)
}

// affine is y·weight + bias, per column.
func (n *BatchNorm) affine(tp *autograd.Tape, y *autograd.Var) *autograd.Var {
	return tp.AddBias(scaleCols(tp, y, n.Weight), n.Bias)
}

// subRow is x minus the row r (1 × cols) from every row.
func subRow(tp *autograd.Tape, x, r *autograd.Var) *autograd.Var {
	out := tensor.New(x.Value.Rows, x.Value.Cols)
	for i := 0; i < out.Rows; i++ {
		o, xr := out.Row(i), x.Value.Row(i)
		for j, v := range xr {
			o[j] = v - r.Value.Data[j]
		}
	}
	return tp.Custom("SubRow", out, func(g tensor.Matrix, grads []tensor.Matrix) error {
		if dx := grads[0]; dx.Data != nil {
			tensor.Axpy(1, g.Data, dx.Data)
		}
		if dr := grads[1]; dr.Data != nil {
			for i := 0; i < g.Rows; i++ {
				tensor.Axpy(-1, g.Row(i), dr.Data)
			}
		}
		return nil
	}, x, r)
}

// scaleCols multiplies every row of x by the row s (1 × cols).
func scaleCols(tp *autograd.Tape, x, s *autograd.Var) *autograd.Var {
	out := tensor.New(x.Value.Rows, x.Value.Cols)
	for i := 0; i < out.Rows; i++ {
		o, xr := out.Row(i), x.Value.Row(i)
		for j, v := range xr {
			o[j] = v * s.Value.Data[j]
		}
	}
	return tp.Custom("ScaleCols", out, func(g tensor.Matrix, grads []tensor.Matrix) error {
		for i := 0; i < g.Rows; i++ {
			gr, xr := g.Row(i), x.Value.Row(i)
			if dx := grads[0]; dx.Data != nil {
				d := dx.Row(i)
				for j, v := range gr {
					d[j] += v * s.Value.Data[j]
				}
			}
			if ds := grads[1]; ds.Data != nil {
				for j, v := range gr {
					ds.Data[j] += v * xr[j]
				}
			}
		}
		return nil
	}, x, s)
}

// normalize is (x - mean)·inv per column, for constant statistics.
func normalize(tp *autograd.Tape, x, mean *autograd.Var, inv tensor.Matrix) *autograd.Var {
	return scaleCols(tp, subRow(tp, x, mean), tp.Const(inv))
}

// scaleByStd is xc / sqrt(v + eps) per column, with the gradient into v.
func scaleByStd(tp *autograd.Tape, xc, v *autograd.Var, eps float64) *autograd.Var {
	cols := xc.Value.Cols
	inv := make([]float32, cols)
	for j := range inv {
		inv[j] = float32(1 / math.Sqrt(float64(v.Value.Data[j])+eps))
	}
	out := tensor.New(xc.Value.Rows, cols)
	for i := 0; i < out.Rows; i++ {
		o, xr := out.Row(i), xc.Value.Row(i)
		for j, x := range xr {
			o[j] = x * inv[j]
		}
	}
	return tp.Custom("ScaleByStd", out, func(g tensor.Matrix, grads []tensor.Matrix) error {
		dv := make([]float64, cols)
		for i := 0; i < g.Rows; i++ {
			gr, xr := g.Row(i), xc.Value.Row(i)
			if dx := grads[0]; dx.Data != nil {
				d := dx.Row(i)
				for j, gv := range gr {
					d[j] += gv * inv[j]
				}
			}
			for j, gv := range gr {
				dv[j] += float64(gv) * float64(xr[j])
			}
		}
		if d := grads[1]; d.Data != nil {
			for j := range dv {
				i3 := float64(inv[j]) * float64(inv[j]) * float64(inv[j])
				d.Data[j] += float32(-0.5 * dv[j] * i3)
			}
		}
		return nil
	}, xc, v)
}

// LayerNorm normalises every row over its columns, then scales and
// shifts it per column, as torch.nn.LayerNorm over the last dimension. It
// reads no other rows, so it needs no block.
type LayerNorm struct {
	Weight, Bias *autograd.Var
	Eps          float64
}

// NewLayerNorm returns a LayerNorm over cols columns, its tensors named
// prefix+"weight" and prefix+"bias".
func NewLayerNorm(prefix string, cols int) *LayerNorm {
	w := tensor.New(1, cols)
	for i := range w.Data {
		w.Data[i] = 1
	}
	n := &LayerNorm{Weight: autograd.NewParam(prefix+"weight", w), Bias: autograd.NewParam(prefix+"bias", tensor.New(1, cols)), Eps: 1e-5}
	vectors.Store(n.Weight, true)
	return n
}

// Params returns the scale and shift.
func (n *LayerNorm) Params() []*autograd.Var { return []*autograd.Var{n.Weight, n.Bias} }

// Forward normalises the rows of x.
func (n *LayerNorm) Forward(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
	rows, cols := x.Shape()
	y := tensor.New(rows, cols)
	inv := make([]float32, rows)
	for i := range rows {
		xr := x.Value.Row(i)
		var s, ss float64
		for _, v := range xr {
			s += float64(v)
		}
		mu := s / float64(cols)
		for _, v := range xr {
			d := float64(v) - mu
			ss += d * d
		}
		r := 1 / math.Sqrt(ss/float64(cols)+n.Eps)
		inv[i] = float32(r)
		yr := y.Row(i)
		for j, v := range xr {
			yr[j] = float32((float64(v) - mu) * r)
		}
	}
	norm := tp.Custom("LayerNorm", y, func(g tensor.Matrix, grads []tensor.Matrix) error {
		dx := grads[0]
		if dx.Data == nil {
			return nil
		}
		// dx = inv/C · (C·g - Σg - y·Σ(g·y)) per row.
		for i := range rows {
			gr, yr, d := g.Row(i), y.Row(i), dx.Row(i)
			var sg, sgy float64
			for j, gv := range gr {
				sg += float64(gv)
				sgy += float64(gv) * float64(yr[j])
			}
			c := float64(cols)
			for j, gv := range gr {
				d[j] += float32(float64(inv[i]) / c * (c*float64(gv) - sg - float64(yr[j])*sgy))
			}
		}
		return nil
	}, x)
	return tp.AddBias(scaleCols(tp, norm, n.Weight), n.Bias)
}
