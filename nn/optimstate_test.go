package nn

import (
	"math"
	"testing"

	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// TestOptimizerStateRoundTrip: an optimiser given another's state
// (ParamState, SetParamState) and the same weights takes the same next
// steps, bit for bit, as the one it came from; a fresh one does not.
// State of the wrong shape or step count is an error.
func TestOptimizerStateRoundTrip(t *testing.T) {
	for _, c := range []OptimConfig{
		{Name: "adam", LR: 0.01, WeightDecay: 0.1},
		{Name: "adamw", LR: 0.01, WeightDecay: 0.1},
		{Name: "sgd", LR: 0.01, WeightDecay: 0.1, Momentum: 0.9},
	} {
		newParam := func() *autograd.Var {
			p := autograd.NewParam("p", tensor.New(1, 5))
			p.Grad = tensor.New(1, 5)
			for i := range p.Value.Data {
				p.Value.Data[i], p.Grad.Data[i] = float32(i)-2, 0.1*float32(i+1)
			}
			return p
		}
		mk := func() StatefulOptimizer {
			o, err := NewOptimizer(c)
			if err != nil {
				t.Fatal(err)
			}
			return o.(StatefulOptimizer)
		}
		a, pa := mk(), newParam()
		if _, _, ok := a.ParamState(pa); ok {
			t.Fatalf("%s: state before any step", c.Name)
		}
		for s := 0; s < 3; s++ {
			a.Step([]*autograd.Var{pa})
		}
		arrays, step, ok := a.ParamState(pa)
		if !ok || len(arrays) != len(a.StateNames()) {
			t.Fatalf("%s: state %v %d %v", c.Name, arrays, step, ok)
		}
		b, pb := mk(), newParam()
		fresh, pf := mk(), newParam()
		copy(pb.Value.Data, pa.Value.Data)
		copy(pf.Value.Data, pa.Value.Data)
		if err := b.SetParamState(pb, arrays, step); err != nil {
			t.Fatal(err)
		}
		for s := 0; s < 2; s++ {
			// Gradients that change (Adam's step is the same at every t
			// under a constant one).
			for _, p := range []*autograd.Var{pa, pb, pf} {
				for i := range p.Grad.Data {
					p.Grad.Data[i] = 0.3 * float32(s+1) * float32(i*i-3)
				}
			}
			a.Step([]*autograd.Var{pa})
			b.Step([]*autograd.Var{pb})
			fresh.Step([]*autograd.Var{pf})
		}
		same := func(x, y *autograd.Var) bool {
			for i := range x.Value.Data {
				if math.Float32bits(x.Value.Data[i]) != math.Float32bits(y.Value.Data[i]) {
					return false
				}
			}
			return true
		}
		if !same(pa, pb) {
			t.Errorf("%s: restored state steps to %v, the original to %v", c.Name, pb.Value.Data, pa.Value.Data)
		}
		if same(pa, pf) {
			t.Errorf("%s: a fresh optimiser steps as the original: the test cannot tell", c.Name)
		}
		short := [][]float32{}
		for _, x := range arrays {
			short = append(short, x[1:])
		}
		if err := b.SetParamState(pb, short, step); err == nil {
			t.Errorf("%s: short arrays accepted", c.Name)
		}
		if err := b.SetParamState(pb, arrays[:0], step); err == nil {
			t.Errorf("%s: no arrays accepted", c.Name)
		}
		if err := b.SetParamState(pb, arrays, -1); err == nil {
			t.Errorf("%s: step -1 accepted", c.Name)
		}
	}
}
