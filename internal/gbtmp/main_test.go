package gbtmp

import (
	"testing"
	"time"

	"github.com/graphmill/graphmill/tensor"
)

func TestShapes(t *testing.T) {
	fill := func(m tensor.Matrix) tensor.Matrix {
		for i := range m.Data {
			m.Data[i] = float32(i%7) - 3
		}
		return m
	}
	for _, rows := range []int{11000} {
		agg, w, y := fill(tensor.New(rows, 100)), fill(tensor.New(256, 100)), fill(tensor.New(rows, 256))
		dw := tensor.New(256, 100)
		dwt := tensor.New(100, 256)
		ep := tensor.Epilogue{Bias: make([]float32, 256), ReLU: true}
		for _, c := range []struct {
			name string
			f    func() error
		}{
			{"fwd NT beta0", func() error { return tensor.Gemm(tensor.NoTrans, tensor.Trans, 1, agg, w, 0, y) }},
			{"fwd NT beta1 ep", func() error { return tensor.GemmEpilogue(tensor.NoTrans, tensor.Trans, 1, agg, w, 1, y, ep) }},
			{"dW TN", func() error { return tensor.Gemm(tensor.Trans, tensor.NoTrans, 1, y, agg, 1, dw) }},
			{"dWt TN", func() error { return tensor.Gemm(tensor.Trans, tensor.NoTrans, 1, agg, y, 1, dwt) }},
		} {
			best := time.Hour
			for range 10 {
				t0 := time.Now()
				c.f()
				best = min(best, time.Since(t0))
			}
			t.Logf("rows %d %s: %.0f GFLOP/s (%v)", rows, c.name, 2*float64(rows)*100*256/best.Seconds()/1e9, best)
		}
	}
}
