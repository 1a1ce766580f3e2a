package dist

import "context"

// Trainer adapts a Comm to the small interface data-parallel training
// uses (train.Parallel), so package train needs no import of dist.
type Trainer struct{ Comm }

// Broadcast copies rank 0's data to every rank.
func (t Trainer) Broadcast(ctx context.Context, data []float32) error {
	return t.Comm.Broadcast(ctx, data, 0)
}

// AllReduceSum sums data over the ranks in place.
func (t Trainer) AllReduceSum(ctx context.Context, data []float32) error {
	return t.Comm.AllReduce(ctx, data, Sum)
}
