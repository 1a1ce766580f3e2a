package train_test

import (
	"context"
	"fmt"
	"log"

	"github.com/graphmill/graphmill/dataset/builtin"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/train"
)

// Example trains the published 2-layer GCN on the built-in Cora: the
// defaults of a model kind, a runner over the dataset (its features read
// through the feature store, row-normalised on the fly), and Run, which
// keeps the weights with the best validation accuracy.
func Example() {
	ctx := context.Background()
	ds, err := builtin.Open(ctx, "cora")
	if err != nil {
		log.Fatal(err)
	}
	defer ds.Close()
	cfg := train.Defaults(nn.GCN)
	cfg.Epochs = 100
	r, err := train.NewRunner(ds, cfg, train.Hooks{})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	res, err := r.Run(ctx)
	if err != nil {
		log.Fatal(err)
	}
	s := res.Summary
	fmt.Printf("%s, %s mode, %d parameters, %d epochs\n", s.Model, s.Mode, s.NumParams, s.Epochs)
	fmt.Println("test accuracy over 78%:", s.TestAcc > 0.78)
	// Output:
	// gcn, full mode, 23063 parameters, 100 epochs
	// test accuracy over 78%: true
}
