package sar

import (
	"context"

	"github.com/graphmill/graphmill/train"
)

// Traffic is what one rank has sent through its engine, in bytes (see
// BytesSent for how each kind is counted).
type Traffic struct {
	// Exchange is the rows and gradients of every aggregation: the
	// training steps' and evaluation's forward passes'.
	Exchange int64
	// StepExchange is the training steps' (Grad's) part of Exchange, and
	// MinStepExchange its analytic minimum, MinBytesPerStep summed over
	// the Steps steps; MinStepExchange is 0 with MFG, whose steps send
	// the receptive field's rows only, less than a full-graph step.
	StepExchange, MinStepExchange int64
	// Reduce is the all-reduces (parameter gradients, loss, metrics) at
	// the ring's cost.
	Reduce int64
	// Steps is the number of training steps run.
	Steps int64
}

// Sent is all the bytes the rank sent: Exchange and Reduce.
func (t Traffic) Sent() int64 { return t.Exchange + t.Reduce }

func (t Traffic) add(u Traffic) Traffic {
	return Traffic{Exchange: t.Exchange + u.Exchange, StepExchange: t.StepExchange + u.StepExchange,
		MinStepExchange: t.MinStepExchange + u.MinStepExchange, Reduce: t.Reduce + u.Reduce, Steps: t.Steps + u.Steps}
}

// Traffic returns this rank's counters since the engine was made.
func (e *Engine) Traffic() Traffic {
	ex, red := e.BytesSent()
	return Traffic{Exchange: ex, StepExchange: e.stepExchange, MinStepExchange: e.minStepExchange, Reduce: red, Steps: e.steps}
}

// GroupTraffic is every rank's Traffic.
type GroupTraffic struct {
	// Ranks holds rank r's counters at index r.
	Ranks []Traffic
	// Total sums them (Steps too: the ranks' steps, each run everywhere).
	Total Traffic
	// Busiest is the rank that sent the most (Sent; the lowest such rank).
	Busiest int
}

// GatherTraffic returns every rank's Traffic, gathered with one
// all-gather over the shard's communicator (not counted in the figures).
// It is a collective: every rank calls it, at the same point of the run,
// and every rank gets the same result.
func (e *Engine) GatherTraffic(ctx context.Context) (GroupTraffic, error) {
	const k = 5
	t := e.Traffic()
	send := []int64{t.Exchange, t.StepExchange, t.MinStepExchange, t.Reduce, t.Steps}
	recv := make([]int64, k*e.Shard.Size)
	if err := e.Shard.comm.AllGather(ctx, send, recv); err != nil {
		return GroupTraffic{}, err
	}
	g := GroupTraffic{Ranks: make([]Traffic, e.Shard.Size)}
	for r := range g.Ranks {
		v := recv[k*r : k*r+k]
		g.Ranks[r] = Traffic{Exchange: v[0], StepExchange: v[1], MinStepExchange: v[2], Reduce: v[3], Steps: v[4]}
		g.Total = g.Total.add(g.Ranks[r])
		if g.Ranks[r].Sent() > g.Ranks[g.Busiest].Sent() {
			g.Busiest = r
		}
	}
	return g, nil
}

// PerEpoch returns the figures per training epoch (one step each) over
// epochs epochs, for train.Summary.
func (g GroupTraffic) PerEpoch(epochs int) *train.Traffic {
	n := int64(max(epochs, 1))
	tr := &train.Traffic{
		Ranks: len(g.Ranks), Sent: g.Total.Sent() / n, Exchange: g.Total.Exchange / n,
		StepExchange: g.Total.StepExchange / n, MinStepExchange: g.Total.MinStepExchange / n, Reduce: g.Total.Reduce / n,
		BusiestRank: g.Busiest,
	}
	for _, r := range g.Ranks {
		tr.RankSent = append(tr.RankSent, r.Sent()/n)
		tr.RankExchange = append(tr.RankExchange, r.Exchange/n)
	}
	return tr
}
