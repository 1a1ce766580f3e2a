package job_test

import (
	"context"
	"fmt"
	"log"

	"github.com/graphmill/graphmill/job"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/train"
)

// A Go program trains with a Spec: here GCN on the built-in Cora, with the
// published settings for 20 epochs. With a partitioned dataset, a
// communicator (Spec.Comm) or sampler services (Spec.Samplers), the same
// call takes the distributed routes.
func Example() {
	cfg := train.Defaults(nn.GCN)
	cfg.Epochs = 20
	res, err := job.Train(context.Background(), job.Spec{Dataset: "cora", Config: cfg})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %d epochs, test accuracy above 0.7: %v\n", res.Dataset, res.Summary.Epochs, res.Summary.TestAcc > 0.7)
	// Output: cora: 20 epochs, test accuracy above 0.7: true
}
