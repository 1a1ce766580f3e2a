package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// adamRef is Adam/AdamW in float64, written from the papers' update rules.
func adamRef(w, g []float64, steps int, lr, wd float64, decoupled bool) []float64 {
	w = append([]float64{}, w...)
	m := make([]float64, len(w))
	v := make([]float64, len(w))
	for t := 1; t <= steps; t++ {
		for i := range w {
			gi := g[i]
			if decoupled {
				w[i] -= lr * wd * w[i]
			} else {
				gi += wd * w[i]
			}
			m[i] = 0.9*m[i] + 0.1*gi
			v[i] = 0.999*v[i] + 0.001*gi*gi
			mh := m[i] / (1 - math.Pow(0.9, float64(t)))
			vh := v[i] / (1 - math.Pow(0.999, float64(t)))
			w[i] -= lr * mh / (math.Sqrt(vh) + 1e-8)
		}
	}
	return w
}

func TestOptimizers(t *testing.T) {
	w0 := []float64{0.5, -1, 2, 0}
	g := []float64{0.1, -0.3, 0.02, 1}
	for _, c := range []struct {
		name string
		want []float64
	}{
		{"adam", adamRef(w0, g, 3, 0.01, 0.1, false)},
		{"adamw", adamRef(w0, g, 3, 0.01, 0.1, true)},
		{"sgd", func() []float64 {
			// SGD with momentum 0.9: v = 0.9v + (g + wd w); w -= lr v.
			w := append([]float64{}, w0...)
			v := make([]float64, len(w))
			for s := 0; s < 3; s++ {
				for i := range w {
					v[i] = 0.9*v[i] + g[i] + 0.1*w[i]
					w[i] -= 0.01 * v[i]
				}
			}
			return w
		}()},
	} {
		p := autograd.NewParam("p", tensor.New(1, 4))
		p.Grad = tensor.New(1, 4)
		for i := range w0 {
			p.Value.Data[i], p.Grad.Data[i] = float32(w0[i]), float32(g[i])
		}
		cfg := OptimConfig{Name: c.name, LR: 0.01, WeightDecay: 0.1}
		if c.name == "sgd" {
			cfg.Momentum = 0.9
		}
		opt, err := NewOptimizer(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for s := 0; s < 3; s++ {
			opt.Step([]*autograd.Var{p})
		}
		for i := range c.want {
			if math.Abs(float64(p.Value.Data[i])-c.want[i]) > 1e-5 {
				t.Fatalf("%s: w[%d] = %g, want %g", c.name, i, p.Value.Data[i], c.want[i])
			}
		}
	}
}

func TestOptimizerErrors(t *testing.T) {
	for _, c := range []OptimConfig{{Name: "adam", LR: 0}, {Name: "adam", LR: 0.1, WeightDecay: -1}, {Name: "lbfgs", LR: 0.1},
		{Name: "adam", LR: 0.1, Momentum: 0.9}, {Name: "sgd", LR: 0.1, Momentum: -0.5}} {
		if _, err := NewOptimizer(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

func TestSchedule(t *testing.T) {
	s := Schedule{Kind: "step", Base: 1, StepSize: 10, Gamma: 0.5}
	if s.LR(9) != 1 || s.LR(10) != 0.5 || s.LR(25) != 0.25 {
		t.Fatal("step schedule")
	}
	c := Schedule{Kind: "cosine", Base: 1, Epochs: 100}
	if c.LR(0) != 1 || math.Abs(c.LR(50)-0.5) > 1e-12 || c.LR(100) > 1e-12 {
		t.Fatal("cosine schedule")
	}
}

func TestNewModelErrors(t *testing.T) {
	for _, c := range []Config{
		{Kind: GCN, In: 4, Hidden: 4, Out: 2, Layers: 2},              // GCN without degrees
		{Kind: SAGE, In: 4, Hidden: 4, Out: 2, Layers: 0},             // no layers
		{Kind: SAGE, In: 4, Hidden: 4, Out: 2, Layers: 2, Dropout: 1}, // dropout 1
		{Kind: "mlp", In: 4, Hidden: 4, Out: 2, Layers: 2},
	} {
		if _, err := NewModel(c, nil); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

func TestParamNames(t *testing.T) {
	m, err := NewModel(Config{Kind: GAT, In: 5, Hidden: 3, Out: 2, Layers: 2, Heads: 4, OutHeads: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	names, ps := m.NamedParams()
	want := []string{"convs.0.lin.weight", "convs.0.att_src", "convs.0.att_dst", "convs.0.bias",
		"convs.1.lin.weight", "convs.1.att_src", "convs.1.att_dst", "convs.1.bias"}
	for i, n := range want {
		if names[i] != n {
			t.Fatalf("name %d = %s, want %s", i, names[i], n)
		}
	}
	if r, c := ps[0].Shape(); r != 12 || c != 5 {
		t.Fatalf("lin.weight is %dx%d, want 12x5 ([heads*out, in])", r, c)
	}
	if r, c := ps[7].Shape(); r != 1 || c != 2 {
		t.Fatalf("output bias is %dx%d, want 1x2 (heads averaged)", r, c)
	}
}

// TestAdamKernelBitwise checks that the vectorised Adam step gives bitwise
// the element-by-element one, with and without L2 decay, on lengths with
// and without a tail, with zero gradients and tiny second moments.
func TestAdamKernelBitwise(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 8, 13, 64, 1000} {
		for _, l2 := range []bool{false, true} {
			w, g, m, v := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
			for i := range w {
				w[i], g[i], m[i], v[i] = r.Float32()-0.5, r.Float32()-0.5, r.Float32()*0.1, r.Float32()*1e-3
				if i%5 == 0 {
					g[i], v[i] = 0, 1e-40
				}
			}
			k := adamCoef{b1: 0.9, c1: 1 - float32(0.9), b2: 0.999, c2: 1 - float32(0.999), step: 0.01 / 0.19, isb2: 1 / 0.0447, eps: 1e-8, wd: 5e-4}
			w2, m2, v2 := append([]float32(nil), w...), append([]float32(nil), m...), append([]float32(nil), v...)
			adamUpdate(w, g, m, v, &k, l2)
			adamGeneric(w2, g, m2, v2, &k, l2)
			for i := range w {
				if math.Float32bits(w[i]) != math.Float32bits(w2[i]) || math.Float32bits(m[i]) != math.Float32bits(m2[i]) || math.Float32bits(v[i]) != math.Float32bits(v2[i]) {
					t.Fatalf("n %d l2 %v [%d]: w m v %v %v %v, want %v %v %v", n, l2, i, w[i], m[i], v[i], w2[i], m2[i], v2[i])
				}
			}
		}
	}
}
