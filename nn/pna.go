package nn

import (
	"fmt"
	"math"

	"github.com/graphmill/graphmill/tensor/autograd"
)

// PNA (Corso et al., NeurIPS 2020, "Principal Neighbourhood
// Aggregation"), the model GNNAutoScale's large runs use, written only
// with the public ops. A PNAConv as PyG's with towers=1, pre_layers=1,
// post_layers=1 and no edge features:
//
//	m_ij = W_pre·[x_i ‖ x_j] + b_pre
//	a_i  = [mean, min, max, std]_j m_ij, each scaled by 1, log(d+1)/δ and δ/log(d+1)
//	out  = lin(W_post·[x_i ‖ a_i] + b_post)
//
// with d the destination's in-degree (at least 1) and δ the graph's mean
// log(d+1). The message is linear, so it is computed per node: mean, min
// and max of m_ij are W_i·x_i + b_pre plus the aggregate of W_j·x_j, and
// the std is the std of W_j·x_j alone; a destination without in-edges
// aggregates to 0, as in PyG. The first layer first maps the features to
// the hidden width with a Linear (enc.*).

// PNA is the model kind.
const PNA Kind = "pna"

// PNAConv is one PNA layer (see PNA). Enc, on the first layer, is the
// Linear that brings the input features to the hidden width first (as
// GNNAutoScale's PNA): PNA's messages are as wide as its input.
type PNAConv struct {
	Enc *Linear
	// Pre is W_pre (in × 2·in: the destination's half first, as [x_i ‖ x_j]).
	Pre       *Linear
	Post, Lin *Linear
	AvgLogDeg float64
	// AvgDeg is the graph's mean in-degree, which graphmill does not use
	// (it has no linear degree scalers) but PyG's PNAConv keeps, with δ,
	// in buffers: checkpoints hold aggr_module.avg_deg_lin = AvgDeg and
	// aggr_module.avg_deg_log = δ (see ConstBuffers).
	AvgDeg     float64
	in, outDim int
}

// NewPNAConv returns a PNAConv from in to out features; avgLogDeg is δ.
func NewPNAConv(ini *Init, in, out int, avgLogDeg float64) *PNAConv {
	return &PNAConv{
		Pre:       ini.Linear("pre_nns.0.0.", 2*in, in, true),
		Post:      ini.Linear("post_nns.0.0.", 13*in, out, true),
		Lin:       ini.Linear("lin.", out, out, true),
		AvgLogDeg: avgLogDeg, in: in, outDim: out,
	}
}

// Forward implements Layer.
func (l *PNAConv) Forward(tp *autograd.Tape, b *Block, x *autograd.Var, _ bool, _ uint64) *autograd.Var {
	if l.Enc != nil {
		x = l.Enc.Forward(tp, x)
	}
	in := l.in
	wDst, wSrc := Cols(tp, l.Pre.W, 0, in), Cols(tp, l.Pre.W, in, 2*in)
	xd := b.DstRows(tp, x)
	deg := b.InDegrees()
	has := make([]float32, len(deg)) // 1 where the destination has in-edges
	amp, att := make([]float32, len(deg)), make([]float32, len(deg))
	for i, d := range deg {
		if d > 0 {
			has[i] = 1
		}
		ld := math.Log(float64(max(d, 1)) + 1)
		amp[i], att[i] = float32(ld/l.AvgLogDeg), float32(l.AvgLogDeg/ld)
	}
	// The destination's half of the message, where it has in-edges.
	self := ScaleRows(tp, tp.AddBias(linear(tp, xd, wDst), l.Pre.B), has)
	z := linear(tp, x, wSrc)
	aggs := []*autograd.Var{
		tp.Add(self, b.Aggregate(tp, z, AggMean)),
		tp.Add(self, b.Aggregate(tp, z, AggMin)),
		tp.Add(self, b.Aggregate(tp, z, AggMax)),
		b.Aggregate(tp, z, AggStd),
	}
	a := Concat(tp, aggs...)
	h := Concat(tp, xd, a, ScaleRows(tp, a, amp), ScaleRows(tp, a, att))
	return l.Lin.Forward(tp, l.Post.Forward(tp, h))
}

// Params implements Layer.
func (l *PNAConv) Params() []*autograd.Var {
	var ps []*autograd.Var
	if l.Enc != nil {
		ps = l.Enc.Params()
	}
	return append(append(append(ps, l.Pre.Params()...), l.Post.Params()...), l.Lin.Params()...)
}

// OutDim implements Layer.
func (l *PNAConv) OutDim() int { return l.outDim }

// ConstBuffers implements ConstBuffered: the buffers of PyG's
// DegreeScalerAggregation (PNAConv's aggr_module, train_norm=False), the
// mean degree and mean log-degree of the degree histogram it was built
// with.
func (l *PNAConv) ConstBuffers() []ConstBuffer {
	return []ConstBuffer{
		{Name: "aggr_module.avg_deg_lin", Value: []float32{float32(l.AvgDeg)}, Unused: true},
		{Name: "aggr_module.avg_deg_log", Value: []float32{float32(l.AvgLogDeg)}, Tol: 1e-6,
			Why: fmt.Sprintf("graphmill's PNA scales by log(d+1)/δ with δ the avg_log_degree of its config (%g); "+
				"the checkpoint's PNAConv was built with another degree histogram", l.AvgLogDeg)},
	}
}

func init() {
	Register(Spec{
		Kind: PNA, Help: "PNA of Corso et al. (mean, min, max and std aggregators with degree scalers)", NeedsDegrees: true,
		Defaults: Defaults{Hidden: 64, Dropout: 0.5, LR: 0.005, Note: "hidden 64, dropout 0.5, Adam lr 0.005, weight decay 5e-4, 200 epochs"},
		Build: func(ini *Init, c *Config, deg []float32) ([]Layer, error) {
			if c.AvgLogDegree <= 0 {
				return nil, fmt.Errorf("nn: PNA needs the graph's mean log-degree (Config.AvgLogDegree, computed from the degree table)")
			}
			var avgDeg float64
			for _, d := range deg {
				avgDeg += float64(d)
			}
			if len(deg) > 0 {
				avgDeg /= float64(len(deg))
			}
			return StackLayers(c, func(l, in, out int) Layer {
				var p *PNAConv
				if l > 0 || c.Hidden < 1 {
					p = NewPNAConv(ini, in, out, c.AvgLogDegree)
				} else {
					enc := ini.Linear("enc.", in, c.Hidden, true)
					p = NewPNAConv(ini, c.Hidden, out, c.AvgLogDegree)
					p.Enc = enc
				}
				p.AvgDeg = avgDeg
				return p
			}), nil
		},
	})
}
