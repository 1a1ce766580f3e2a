package nn

import (
	"fmt"
	"math"
	"strings"

	"github.com/graphmill/graphmill/tensor/autograd"
)

// Optimizer updates parameters from their gradients.
type Optimizer interface {
	// Step applies one update to params using their Grad.
	Step(params []*autograd.Var)
	// SetLR changes the learning rate (for schedules).
	SetLR(lr float64)
}

// OptimConfig selects and configures an optimiser.
type OptimConfig struct {
	// Name is "adam", "adamw" or "sgd".
	Name string  `json:"name"`
	LR   float64 `json:"lr"`
	// WeightDecay is L2 regularisation added to the gradient (adam, sgd)
	// or decoupled decay (adamw), as in PyTorch.
	WeightDecay float64 `json:"weight_decay"`
	// Momentum is SGD's momentum.
	Momentum float64 `json:"momentum"`
	// Beta1, Beta2 and Eps are Adam's (defaults 0.9, 0.999, 1e-8).
	Beta1 float64 `json:"beta1,omitempty"`
	Beta2 float64 `json:"beta2,omitempty"`
	Eps   float64 `json:"eps,omitempty"`
	// Decay, when set, overrides WeightDecay per parameter (Kipf & Welling
	// decay only the first GCN layer).
	Decay map[*autograd.Var]float64 `json:"-"`
}

// NewOptimizer returns the optimiser c names.
func NewOptimizer(c OptimConfig) (Optimizer, error) {
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	if !(c.LR > 0) || !finite(c.LR) {
		return nil, fmt.Errorf("learning rate must be a finite number > 0, got %g", c.LR)
	}
	if !(c.WeightDecay >= 0) || !finite(c.WeightDecay) {
		return nil, fmt.Errorf("weight decay must be a finite number >= 0, got %g", c.WeightDecay)
	}
	if !finite(c.Momentum) || !(c.Beta1 >= 0 && c.Beta1 < 1) || !(c.Beta2 >= 0 && c.Beta2 < 1) || !(c.Eps >= 0) || !finite(c.Eps) {
		return nil, fmt.Errorf("momentum %g, beta1 %g, beta2 %g, eps %g: want finite numbers, the betas in [0, 1) and eps >= 0", c.Momentum, c.Beta1, c.Beta2, c.Eps)
	}
	if c.Momentum < 0 {
		return nil, fmt.Errorf("momentum must be >= 0, got %g", c.Momentum)
	}
	switch strings.ToLower(c.Name) {
	case "adam", "adamw":
		if c.Momentum != 0 {
			// Ignoring it would train otherwise than asked.
			return nil, fmt.Errorf("momentum %g is SGD's: %s keeps moments of its own (beta1, beta2)", c.Momentum, c.Name)
		}
		if c.Beta1 == 0 {
			c.Beta1 = 0.9
		}
		if c.Beta2 == 0 {
			c.Beta2 = 0.999
		}
		if c.Eps == 0 {
			c.Eps = 1e-8
		}
		return &Adam{cfg: c, decoupled: strings.ToLower(c.Name) == "adamw", state: map[*autograd.Var]*adamState{}}, nil
	case "sgd":
		return &SGD{cfg: c, velocity: map[*autograd.Var][]float32{}}, nil
	}
	return nil, fmt.Errorf("unknown optimizer %q: want adam, adamw or sgd", c.Name)
}

// States is how many arrays of a parameter's size the optimiser keeps
// per parameter (Adam's two moments, SGD's velocity with momentum).
func (c OptimConfig) States() int {
	switch strings.ToLower(c.Name) {
	case "adam", "adamw":
		return 2
	case "sgd":
		if c.Momentum != 0 {
			return 1
		}
	}
	return 0
}

func (c *OptimConfig) decay(p *autograd.Var) float64 {
	if d, ok := c.Decay[p]; ok {
		return d
	}
	return c.WeightDecay
}

// Adam is Kingma & Ba's optimiser with PyTorch's semantics; with decoupled
// set it is AdamW (Loshchilov & Hutter).
type Adam struct {
	cfg       OptimConfig
	decoupled bool
	state     map[*autograd.Var]*adamState
}

type adamState struct {
	m, v []float32
	t    int
}

// SetLR implements Optimizer.
func (a *Adam) SetLR(lr float64) { a.cfg.LR = lr }

// Step implements Optimizer.
func (a *Adam) Step(params []*autograd.Var) {
	b1, b2, eps, lr := a.cfg.Beta1, a.cfg.Beta2, a.cfg.Eps, a.cfg.LR
	for _, p := range params {
		if len(p.Grad.Data) != len(p.Value.Data) {
			continue // no gradient this step
		}
		s := a.state[p]
		if s == nil {
			s = &adamState{m: make([]float32, len(p.Value.Data)), v: make([]float32, len(p.Value.Data))}
			a.state[p] = s
		}
		s.t++
		bc1 := 1 - math.Pow(b1, float64(s.t))
		bc2 := 1 - math.Pow(b2, float64(s.t))
		wd := a.cfg.decay(p)
		w := p.Value.Data
		fb1, fb2 := float32(b1), float32(b2)
		k := adamCoef{b1: fb1, c1: 1 - fb1, b2: fb2, c2: 1 - fb2, step: float32(lr / bc1),
			isb2: float32(1 / math.Sqrt(bc2)), eps: float32(eps), wd: float32(wd)}
		if wd != 0 && a.decoupled {
			f := float32(lr * wd)
			for i := range w {
				w[i] -= f * w[i]
			}
		}
		adamUpdate(w, p.Grad.Data, s.m, s.v, &k, wd != 0 && !a.decoupled)
	}
}

// adamCoef are the constants of one parameter's Adam step, laid out as
// adamAVX2 reads them: m = b1·m + c1·g and v = b2·v + c2·g·g (c = 1 - b),
// w -= step·m / (√v·isb2 + eps), with wd·w added to g first for L2 decay.
type adamCoef struct{ b1, c1, b2, c2, step, isb2, eps, wd float32 }

// adamGeneric is the Adam step of w, its moments m and v, from gradient
// g, one element at a time, each operation rounded to float32 in turn
// (adamAVX2 does the same operations in the same order, eight at a time).
func adamGeneric(w, g, m, v []float32, k *adamCoef, l2 bool) {
	g, m, v = g[:len(w)], m[:len(w)], v[:len(w)]
	for i := range w {
		gi := g[i]
		if l2 {
			gi += k.wd * w[i]
		}
		m[i] = k.b1*m[i] + k.c1*gi
		v[i] = k.b2*v[i] + k.c2*gi*gi
		w[i] -= k.step * m[i] / (float32(math.Sqrt(float64(v[i])))*k.isb2 + k.eps)
	}
}

// SGD is stochastic gradient descent with optional momentum and L2 decay.
type SGD struct {
	cfg      OptimConfig
	velocity map[*autograd.Var][]float32
}

// SetLR implements Optimizer.
func (s *SGD) SetLR(lr float64) { s.cfg.LR = lr }

// Step implements Optimizer.
func (s *SGD) Step(params []*autograd.Var) {
	lr, mom := float32(s.cfg.LR), float32(s.cfg.Momentum)
	for _, p := range params {
		if len(p.Grad.Data) != len(p.Value.Data) {
			continue
		}
		wd := float32(s.cfg.decay(p))
		w, g := p.Value.Data, p.Grad.Data
		var v []float32
		if mom != 0 {
			v = s.velocity[p]
			if v == nil {
				v = make([]float32, len(w))
				s.velocity[p] = v
			}
		}
		for i := range w {
			gi := g[i] + wd*w[i]
			if v != nil {
				v[i] = mom*v[i] + gi
				gi = v[i]
			}
			w[i] -= lr * gi
		}
	}
}

// Schedule gives the learning rate of an epoch.
type Schedule struct {
	// Kind is "constant", "step" (multiply by Gamma every StepSize epochs)
	// or "cosine" (cosine decay to 0 over Epochs).
	Kind     string  `json:"kind"`
	Base     float64 `json:"base"`
	StepSize int     `json:"step_size,omitempty"`
	Gamma    float64 `json:"gamma,omitempty"`
	Epochs   int     `json:"epochs,omitempty"`
}

// LR returns the learning rate for epoch (0-based).
func (s Schedule) LR(epoch int) float64 {
	switch s.Kind {
	case "step":
		if s.StepSize > 0 {
			return s.Base * math.Pow(s.Gamma, float64(epoch/s.StepSize))
		}
	case "cosine":
		if s.Epochs > 0 {
			return s.Base * 0.5 * (1 + math.Cos(math.Pi*float64(epoch)/float64(s.Epochs)))
		}
	}
	return s.Base
}

// Same reports whether s and o give the same rate at every epoch (the
// fields their kind does not read aside).
func (s Schedule) Same(o Schedule) bool {
	if s.Kind != o.Kind || s.Base != o.Base {
		return false
	}
	switch s.Kind {
	case "step":
		return s.StepSize == o.StepSize && s.Gamma == o.Gamma
	case "cosine":
		return s.Epochs == o.Epochs
	}
	return true
}

// ParseSchedule validates a schedule name.
func ParseSchedule(s string) error {
	switch s {
	case "constant", "step", "cosine":
		return nil
	}
	return fmt.Errorf("unknown lr schedule %q: want constant, step or cosine", s)
}
