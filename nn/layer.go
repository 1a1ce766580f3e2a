package nn

import (
	"fmt"
	"math"

	"github.com/graphmill/graphmill/internal/rng"
	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// Init draws a model's initial weights from its seed (Config.Seed): a
// Spec's Build receives one and makes every parameter with it, so the
// same config gives the same weights in every process. It also counts
// the elements it makes against a limit (NewModel's: the memory the
// process may use, or what a checkpoint holds), so that a config asking for more is an
// error before the memory is taken, not the Go runtime's fatal "out of
// memory" part-way through.
type Init struct {
	r           *rng.Rand
	made, limit int64
}

// NewInit returns an Init drawing from seed, with no limit.
func NewInit(seed uint64) *Init { return &Init{r: rng.New(seed), limit: math.MaxInt64} }

// tooMany is what Init panics with when a parameter would take the
// elements it made past its limit; NewModel recovers it as an error.
type tooMany struct{ atLeast int64 }

func (t tooMany) Error() string {
	return fmt.Sprintf("nn: at least %d parameters, past the limit", t.atLeast)
}

// matrix returns a new rows×cols matrix, counted against the limit. A
// negative size is a product of sizes that overflowed: too many as well.
func (in *Init) matrix(rows, cols int) tensor.Matrix {
	if rows < 0 || cols < 0 || (rows > 0 && int64(cols) > (in.limit-in.made)/int64(rows)) {
		t := tooMany{atLeast: math.MaxInt64}
		if rows >= 0 && cols >= 0 && int64(cols) <= (math.MaxInt64-in.made)/int64(rows) {
			t.atLeast = in.made + int64(rows)*int64(cols)
		}
		panic(t)
	}
	in.made += int64(rows) * int64(cols)
	return tensor.New(rows, cols)
}

// glorot returns a rows×cols matrix drawn from U(-a, a) with
// a = sqrt(6/(fanIn+fanOut)) (Glorot & Bengio 2010), as PyG's glorot.
func (in *Init) glorot(rows, cols, fanIn, fanOut int) tensor.Matrix {
	m := in.matrix(rows, cols)
	a := float32(math.Sqrt(6 / float64(fanIn+fanOut)))
	for i := range m.Data {
		m.Data[i] = (2*in.r.Float32() - 1) * a
	}
	return m
}

// Glorot returns a rows×cols parameter named name (relative to its layer,
// as Linear's) drawn from U(-a, a), a = sqrt(6/(rows+cols)) (Glorot &
// Bengio 2010, PyG's glorot).
func (in *Init) Glorot(name string, rows, cols int) *autograd.Var {
	return autograd.NewParam(name, in.glorot(rows, cols, cols, rows))
}

// Zeros returns a rows×cols parameter of zeros named name.
func (in *Init) Zeros(name string, rows, cols int) *autograd.Var {
	return autograd.NewParam(name, in.matrix(rows, cols))
}

// Linear is a dense layer x·Wᵀ + b with W stored [out, in] as in
// torch.nn.Linear (weights Glorot-initialised, bias zero).
type Linear struct {
	W, B *autograd.Var // B is nil without a bias
}

// Linear returns a Linear from inDim to outDim features whose tensors are
// named prefix+"weight" and prefix+"bias". Names are relative to the
// layer: the model prefixes every layer's tensors with "convs.{l}."
// (NamedParams), so prefix is the path within the layer, PyG's attribute
// name ("lin." gives convs.0.lin.weight), not "convs.0.lin.".
func (in *Init) Linear(prefix string, inDim, outDim int, bias bool) *Linear {
	l := &Linear{W: in.Glorot(prefix+"weight", outDim, inDim)}
	if bias {
		l.B = in.Zeros(prefix+"bias", 1, outDim)
	}
	return l
}

// Forward returns x·Wᵀ + b.
func (l *Linear) Forward(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
	y := linear(tp, x, l.W)
	if l.B != nil {
		y = tp.AddBias(y, l.B)
	}
	return y
}

// Params returns W and b.
func (l *Linear) Params() []*autograd.Var {
	if l.B == nil {
		return []*autograd.Var{l.W}
	}
	return []*autograd.Var{l.W, l.B}
}

// ScaleRows multiplies row i of x by s[i] (a constant, e.g. a degree
// scaler).
func ScaleRows(tp *autograd.Tape, x *autograd.Var, s []float32) *autograd.Var {
	if len(s) != x.Value.Rows {
		panic(fmt.Sprintf("nn.ScaleRows: %d factors for %d rows", len(s), x.Value.Rows))
	}
	out := tensor.New(x.Value.Rows, x.Value.Cols)
	for i, f := range s {
		tensor.Axpy(f, x.Value.Row(i), out.Row(i))
	}
	return tp.Custom("ScaleRows", out, func(g tensor.Matrix, grads []tensor.Matrix) error {
		if dx := grads[0]; dx.Data != nil {
			for i, f := range s {
				tensor.Axpy(f, g.Row(i), dx.Row(i))
			}
		}
		return nil
	}, x)
}

// Cols returns columns [from, to) of x.
func Cols(tp *autograd.Tape, x *autograd.Var, from, to int) *autograd.Var {
	rows, cols := x.Shape()
	if from < 0 || to > cols || from > to {
		panic(fmt.Sprintf("nn.Cols: columns [%d, %d) of %d", from, to, cols))
	}
	if from == 0 && to == cols {
		return x
	}
	out := tensor.New(rows, to-from)
	for i := range rows {
		copy(out.Row(i), x.Value.Row(i)[from:to])
	}
	return tp.Custom("Cols", out, func(g tensor.Matrix, grads []tensor.Matrix) error {
		if dx := grads[0]; dx.Data != nil {
			for i := range rows {
				tensor.Axpy(1, g.Row(i), dx.Row(i)[from:to])
			}
		}
		return nil
	}, x)
}

// Concat returns the columns of xs side by side.
func Concat(tp *autograd.Tape, xs ...*autograd.Var) *autograd.Var {
	out := xs[0]
	for _, x := range xs[1:] {
		out = tp.ConcatCols(out, x)
	}
	return out
}

// Mix returns a·x + b·y as one op (one matrix where Scale, Scale and Add
// would make three).
func Mix(tp *autograd.Tape, a float32, x *autograd.Var, b float32, y *autograd.Var) *autograd.Var {
	if !x.Value.SameShape(y.Value) {
		panic(fmt.Sprintf("nn.Mix: %d×%d and %d×%d", x.Value.Rows, x.Value.Cols, y.Value.Rows, y.Value.Cols))
	}
	out := tensor.New(x.Value.Rows, x.Value.Cols)
	for i, v := range x.Value.Data {
		out.Data[i] = a*v + b*y.Value.Data[i]
	}
	return tp.Custom("Mix", out, func(g tensor.Matrix, grads []tensor.Matrix) error {
		if grads[0].Data != nil {
			tensor.Axpy(a, g.Data, grads[0].Data)
		}
		if grads[1].Data != nil {
			tensor.Axpy(b, g.Data, grads[1].Data)
		}
		return nil
	}, x, y)
}
