// Command custom-layer defines a GNN layer outside graphmill's nn package
// and trains it through the library in every mode: full-graph, sampled
// minibatches, GNNAutoScale and two-rank SAR (two ranks in this process,
// over Cora split in two parts). It prints each mode's test accuracy, and
// saves the full-graph model with train.Save and loads it back with
// train.Load.
//
// The layer is GraphSAGE's pooling aggregator (Hamilton et al. 2017):
//
//	out_i = W_self·x_i + W_neigh·max_j ReLU(W_pool·x_j + b_pool) + b
//
// Its Forward uses only nn's public ops: Block.Aggregate (here AggMax),
// Block.DstRows and the tape's dense ops. Nothing else is needed for it to
// run on sampled blocks, GNNAutoScale batches and SAR shards, or for the
// memory planner to count its bytes.
//
//	go run ./examples/custom-layer
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"sync"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/dataset/builtin"
	"github.com/graphmill/graphmill/dataset/parts"
	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/partition"
	"github.com/graphmill/graphmill/sar"
	"github.com/graphmill/graphmill/tensor/autograd"
	"github.com/graphmill/graphmill/train"
)

// SAGEPool is GraphSAGE's layer with the max-pooling aggregator.
type SAGEPool struct {
	Pool, Self, Neigh *nn.Linear
}

// Forward implements nn.Layer.
func (l *SAGEPool) Forward(tp *autograd.Tape, b *nn.Block, x *autograd.Var, _ bool, _ uint64) *autograd.Var {
	pooled := b.Aggregate(tp, tp.ReLU(l.Pool.Forward(tp, x)), nn.AggMax)
	return tp.Add(l.Self.Forward(tp, b.DstRows(tp, x)), l.Neigh.Forward(tp, pooled))
}

// Params implements nn.Layer.
func (l *SAGEPool) Params() []*autograd.Var {
	return append(append(l.Pool.Params(), l.Self.Params()...), l.Neigh.Params()...)
}

// OutDim implements nn.Layer.
func (l *SAGEPool) OutDim() int { return l.Self.W.Value.Rows }

// Kind is the model kind this program registers.
const Kind nn.Kind = "sage-pool"

func init() {
	nn.Register(nn.Spec{
		Kind: Kind, Help: "GraphSAGE with the max-pooling aggregator (examples/custom-layer)",
		Defaults: nn.Defaults{Hidden: 64, Dropout: 0.5, Epochs: 100, Note: "hidden 64, dropout 0.5, 100 epochs"},
		Build: func(ini *nn.Init, c *nn.Config, _ []float32) ([]nn.Layer, error) {
			return nn.StackLayers(c, func(l, in, out int) nn.Layer {
				// Tensor names are relative to the layer: the model names
				// them convs.{l}.pool.weight and so on, as PyG does.
				return &SAGEPool{
					Pool:  ini.Linear("pool.", in, c.Hidden, true),
					Self:  ini.Linear("self.", in, out, true),
					Neigh: ini.Linear("neigh.", c.Hidden, out, false),
				}
			}), nil
		},
	})
}

func main() {
	if _, err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run trains the layer in every mode, printing each test accuracy to w,
// and returns them by mode ("reloaded": the full-graph model saved with
// train.Save and loaded back with train.Load).
func run(ctx context.Context, w io.Writer) (map[string]float64, error) {
	acc := map[string]float64{}
	ds, err := builtin.Open(ctx, "cora")
	if err != nil {
		return nil, err
	}
	defer ds.Close()
	dir, err := os.MkdirTemp("", "custom-layer")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for _, mode := range []train.Mode{train.Full, train.Sampled, train.GAS} {
		cfg := train.Defaults(Kind)
		cfg.Mode = mode
		r, err := train.NewRunner(ds, cfg, train.Hooks{}, train.WithPartitioner(partition.Assign))
		if err != nil {
			return nil, err
		}
		res, err := r.Run(ctx)
		r.Close()
		if err != nil {
			return nil, err
		}
		acc[string(mode)] = res.Summary.TestAcc
		fmt.Fprintf(w, "%-8s test accuracy %.1f%%\n", mode, 100*res.Summary.TestAcc)
		if mode == train.Full {
			// Save the model with the feature handling it was trained
			// with (train.Save, not Model.Save), and load it back.
			names, _ := res.Model.NamedParams()
			fmt.Fprintf(w, "         tensors %v ...\n", names[:3])
			if acc["reloaded"], err = saveAndReload(ctx, ds, res, filepath.Join(dir, "sage-pool.safetensors")); err != nil {
				return nil, err
			}
			fmt.Fprintf(w, "         saved and reloaded: test accuracy %.1f%%\n", 100*acc["reloaded"])
		}
	}

	// SAR: Cora in two parts, two ranks in this process, each holding one
	// part and fetching the other's boundary rows per layer.
	dir = filepath.Join(dir, "parts")
	g, err := partition.FromCSC(ctx, ds.Graph, 0)
	if err != nil {
		return nil, err
	}
	p, err := partition.Partition(ctx, g, partition.Options{Parts: 2, Seed: 1})
	if err != nil {
		return nil, err
	}
	if _, err := parts.Write(ctx, ds, p.Parts, p.NumParts, dir, parts.WriteOptions{Overwrite: true}); err != nil {
		return nil, err
	}
	ranks, err := dist.LocalGroup(ctx, 2, dist.Options{})
	if err != nil {
		return nil, err
	}
	cfg := train.Defaults(Kind)
	results := make([]*train.Result, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for rank, comm := range ranks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer comm.Close()
			s, err := sar.Open(ctx, comm, dir, sar.ShardOptions{Normalize: cfg.NormalizeFeatures})
			if err != nil {
				errs[rank] = err
				return
			}
			results[rank], errs[rank] = sar.Run(ctx, sar.NewEngine(s, sar.SAR), cfg, train.Hooks{})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	acc["sar"] = results[0].Summary.TestAcc
	fmt.Fprintf(w, "%-8s test accuracy %.1f%% (2 ranks)\n", "sar", 100*results[0].Summary.TestAcc)
	return acc, nil
}

// saveAndReload saves a run's model to path with train.Save (its weights,
// config and the feature handling inference must repeat), loads it back
// with train.Load and returns its test accuracy.
func saveAndReload(ctx context.Context, ds *dataset.Dataset, res *train.Result, path string) (float64, error) {
	if err := train.Save(path, res, nil); err != nil {
		return 0, err
	}
	r, m, err := train.Load(ds, path, 0, 0)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	ev, err := r.Evaluate(ctx, m)
	return ev.TestAcc, err
}
