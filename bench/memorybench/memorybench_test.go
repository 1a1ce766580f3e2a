package memorybench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func ptr[T any](v T) *T { return &v }

// TestJudge checks the report's verdicts: a bound is held only when a
// bounded run ran and every one held (a failed one breaks it; none is not
// measured), and the GAS growth is judged only when measured on a graph
// at least 4x larger.
func TestJudge(t *testing.T) {
	const mib = 1 << 20
	held := Run{Nodes: 1000, Mode: "bounded", Bound: 2 * mib, UnderBound: ptr(true)}
	exceeded := Run{Nodes: 1000, Mode: "gas-bounded", Bound: 2 * mib, UnderBound: ptr(false)}
	failed := Run{Nodes: 4000, Mode: "gas-bounded", Bound: 2 * mib, Error: "refused"}
	gasA := Run{Nodes: 1000, Mode: "gas", RestBytes: 100 * mib}
	gasB := Run{Nodes: 4000, Mode: "gas", RestBytes: 120 * mib}
	gasWide := Run{Nodes: 4000, Mode: "gas", RestBytes: 200 * mib}
	gasHalf := Run{Nodes: 2000, Mode: "gas", RestBytes: 110 * mib}
	for _, c := range []struct {
		name      string
		runs, gas []Run
		held      *bool
		bounded   int
		growth    *float64
		met       *bool
		text      []string
	}{
		{name: "no bounded run (--modes gas)", runs: []Run{gasA}, gas: []Run{gasA},
			text: []string{"bounds held: not measured", "GAS rest growth: not measured"}},
		{name: "every bounded run failed", runs: []Run{failed, failed}, held: ptr(false), bounded: 2,
			text: []string{"bounds held: MISSED"}},
		{name: "one held, one failed", runs: []Run{held, failed}, held: ptr(false), bounded: 2},
		{name: "one exceeded", runs: []Run{held, exceeded}, held: ptr(false), bounded: 2},
		{name: "all held", runs: []Run{held, held}, held: ptr(true), bounded: 2, text: []string{"bounds held: met (2 bounded runs)"}},
		{name: "growth met", runs: []Run{gasA, gasB}, gas: []Run{gasA, gasB}, growth: ptr(1.2), met: ptr(true),
			text: []string{"GAS rest grows 1.20x for a 4.00x larger graph (target < 1.3x): met"}},
		{name: "growth missed", runs: []Run{gasA, gasWide}, gas: []Run{gasA, gasWide}, growth: ptr(2.0), met: ptr(false),
			text: []string{"(target < 1.3x): MISSED"}},
		{name: "graph grew 2x: not judged", runs: []Run{gasA, gasHalf}, gas: []Run{gasA, gasHalf}, growth: ptr(1.1),
			text: []string{"not judged"}},
		{name: "no rest on the smaller", runs: []Run{{Nodes: 1000, Mode: "gas"}, gasB}, gas: []Run{{Nodes: 1000, Mode: "gas"}, gasB},
			text: []string{"GAS rest growth: not measured"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := &Report{Runs: c.runs}
			rep.judge(c.gas)
			if (rep.BoundHeld == nil) != (c.held == nil) || rep.BoundHeld != nil && *rep.BoundHeld != *c.held || rep.BoundedRuns != c.bounded {
				t.Errorf("bound held %v over %d runs, want %v over %d", str(rep.BoundHeld), rep.BoundedRuns, str(c.held), c.bounded)
			}
			if (rep.GASGrowth == nil) != (c.growth == nil) || rep.GASGrowth != nil && *rep.GASGrowth != *c.growth {
				t.Errorf("growth %v, want %v", str(rep.GASGrowth), str(c.growth))
			}
			if (rep.GASGrowthMet == nil) != (c.met == nil) || rep.GASGrowthMet != nil && *rep.GASGrowthMet != *c.met {
				t.Errorf("growth met %v, want %v", str(rep.GASGrowthMet), str(c.met))
			}
			var b bytes.Buffer
			printChecks(&b, rep)
			for _, want := range c.text {
				if !strings.Contains(b.String(), want) {
					t.Errorf("text %q lacks %q", b.String(), want)
				}
			}
			if c.held == nil {
				js, _ := json.Marshal(rep)
				if !strings.Contains(string(js), `"bound_held":null`) {
					t.Errorf("JSON %s: bound_held not null", js)
				}
			}
		})
	}
}

func str[T any](p *T) any {
	if p == nil {
		return "nil"
	}
	return *p
}
