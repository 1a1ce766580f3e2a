package trainbench

import (
	"github.com/graphmill/graphmill/nn"
	"testing"

	"github.com/graphmill/graphmill/train"
)

// TestCeilingRows: the aggregation ceiling's table is the whole graph in
// full-graph mode and a batch's parts' nodes in GAS mode.
func TestCeilingRows(t *testing.T) {
	full := train.Defaults(nn.GCN)
	gas := full
	gas.Mode, gas.Parts, gas.PartsPerBatch = train.GAS, 40, 10
	odd := gas
	odd.Parts, odd.PartsPerBatch = 3, 1
	for _, c := range []struct {
		name string
		cfg  train.Config
		n    int
		want int
	}{
		{"full: every node", full, 100_000, 100_000},
		{"gas: a quarter", gas, 100_000, 25_000},
		{"gas: rounded up", odd, 100, 34},
	} {
		if got := ceilingRows(c.cfg, c.n); got != c.want {
			t.Errorf("%s: %d rows, want %d", c.name, got, c.want)
		}
	}
}
