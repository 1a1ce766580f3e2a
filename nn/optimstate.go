package nn

import (
	"fmt"

	"github.com/graphmill/graphmill/safetensors"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// StatefulOptimizer is an optimiser whose per-parameter state can be read
// and put back, so that training can stop and continue exactly (train's
// training-state file): Adam's moments and step count, SGD's momentum
// buffer. The optimisers NewOptimizer returns all are. The learning rate
// is not part of it: the training loop sets it every epoch (SetLR).
type StatefulOptimizer interface {
	Optimizer
	// StateNames names the arrays of a parameter's state, in the order
	// ParamState returns them (PyTorch's names: exp_avg and exp_avg_sq
	// for Adam, momentum_buffer for SGD with momentum; none for plain
	// SGD).
	StateNames() []string
	// ParamState returns p's state: its arrays (the optimiser's own, not
	// copies; one per StateNames entry, each as long as p's values) and
	// its step count (Adam; 0 for SGD). ok is false while p has none: no
	// step has updated it yet.
	ParamState(p *autograd.Var) (arrays [][]float32, step int, ok bool)
	// SetParamState gives p the state arrays (copied) and step count, as
	// ParamState returned them. Arrays of the wrong number or length, or a
	// step count that cannot be (Adam's below 1), are an error.
	SetParamState(p *autograd.Var, arrays [][]float32, step int) error
}

var (
	_ StatefulOptimizer = (*Adam)(nil)
	_ StatefulOptimizer = (*SGD)(nil)
)

// checkState checks state arrays against p and the names they should have.
func checkState(p *autograd.Var, names []string, arrays [][]float32) error {
	if p == nil {
		return fmt.Errorf("optimizer state: no parameter")
	}
	if len(arrays) != len(names) {
		return fmt.Errorf("optimizer state of %s: %d arrays, want %d (%v)", p.Name, len(arrays), len(names), names)
	}
	for i, a := range arrays {
		if len(a) != len(p.Value.Data) {
			return fmt.Errorf("optimizer state of %s: %s has %d values, the parameter %d", p.Name, names[i], len(a), len(p.Value.Data))
		}
	}
	return nil
}

// StateNames implements StatefulOptimizer.
func (a *Adam) StateNames() []string { return []string{"exp_avg", "exp_avg_sq"} }

// ParamState implements StatefulOptimizer.
func (a *Adam) ParamState(p *autograd.Var) ([][]float32, int, bool) {
	s := a.state[p]
	if s == nil {
		return nil, 0, false
	}
	return [][]float32{s.m, s.v}, s.t, true
}

// SetParamState implements StatefulOptimizer.
func (a *Adam) SetParamState(p *autograd.Var, arrays [][]float32, step int) error {
	if err := checkState(p, a.StateNames(), arrays); err != nil {
		return err
	}
	if step < 1 {
		return fmt.Errorf("optimizer state of %s: Adam step count %d, want >= 1", p.Name, step)
	}
	a.state[p] = &adamState{m: append([]float32(nil), arrays[0]...), v: append([]float32(nil), arrays[1]...), t: step}
	return nil
}

// StateNames implements StatefulOptimizer.
func (s *SGD) StateNames() []string {
	if s.cfg.Momentum != 0 {
		return []string{"momentum_buffer"}
	}
	return nil
}

// ParamState implements StatefulOptimizer.
func (s *SGD) ParamState(p *autograd.Var) ([][]float32, int, bool) {
	v := s.velocity[p]
	if v == nil {
		return nil, 0, false
	}
	return [][]float32{v}, 0, true
}

// SetParamState implements StatefulOptimizer.
func (s *SGD) SetParamState(p *autograd.Var, arrays [][]float32, step int) error {
	if err := checkState(p, s.StateNames(), arrays); err != nil {
		return err
	}
	if step != 0 {
		return fmt.Errorf("optimizer state of %s: SGD keeps no step count, got %d", p.Name, step)
	}
	if len(arrays) == 1 {
		s.velocity[p] = append([]float32(nil), arrays[0]...)
	}
	return nil
}

// Tensors returns the model's tensors as Save writes them: PyTorch's names
// and shapes, the buffers graphmill holds fixed included, so that
// LoadParams reads them back. Their data are the model's own arrays, not
// copies: write them before the weights change again.
func (m *Model) Tensors() []safetensors.Tensor {
	names, ps := m.NamedTensors()
	ts := make([]safetensors.Tensor, len(ps))
	for i, p := range ps {
		ts[i] = safetensors.Tensor{Name: names[i], Shape: torchShape(p, names[i], p.Value.Rows, p.Value.Cols), Data: p.Value.Data}
	}
	cnames, cs := m.namedConsts()
	for i, c := range cs {
		ts = append(ts, safetensors.Tensor{Name: cnames[i], Shape: []int{len(c.Value)}, Data: c.Value})
	}
	return ts
}
