package sample

import (
	"context"
	"fmt"
	"github.com/graphmill/graphmill/batch"
	"sync/atomic"

	"github.com/graphmill/graphmill/internal/par"
	"github.com/graphmill/graphmill/internal/rng"
)

// Batches splits seeds into minibatches of batchSize after shuffling them
// with a permutation drawn from seed (no shuffle when shuffle is false).
// The last, shorter batch is dropped when dropLast is set. The returned
// batches alias one shuffled copy of seeds.
func Batches(seeds []int32, batchSize int, shuffle bool, seed uint64, dropLast bool) ([][]int32, error) {
	if batchSize <= 0 {
		return nil, fmt.Errorf("sample: batch size %d; must be positive", batchSize)
	}
	perm := append([]int32(nil), seeds...)
	if shuffle {
		rng.Shuffle(rng.New(seed), perm)
	}
	var out [][]int32
	for lo := 0; lo < len(perm); lo += batchSize {
		hi := min(lo+batchSize, len(perm))
		if hi-lo < batchSize && dropLast {
			break
		}
		out = append(out, perm[lo:hi:hi])
	}
	return out, nil
}

// CountInputs samples minibatches (every one with the random key key, as
// the batches of one epoch) on workers goroutines and returns, for every node, how many of
// them read its features (how often it is in InputNodes). This is the
// pre-sampling pass GNNLab uses to rank nodes for a feature cache.
func (s *Sampler) CountInputs(ctx context.Context, batches [][]int32, key uint64, workers int) ([]uint32, error) {
	counts := make([]uint32, s.g.NumNodes)
	workers = par.Workers(workers)
	mbs := make([]batch.MiniBatch, workers)
	errs := make([]error, workers)
	err := par.Tasks(ctx, workers, len(batches), func(w, i int) {
		if errs[w] != nil {
			return
		}
		mb := &mbs[w]
		if err := s.SampleInto(mb, batches[i], key); err != nil {
			errs[w] = fmt.Errorf("batch %d: %w", i, err)
			return
		}
		for _, v := range mb.InputNodes {
			atomic.AddUint32(&counts[v], 1)
		}
	})
	for _, e := range errs {
		if e != nil {
			return nil, e
		}
	}
	if err != nil {
		return nil, err
	}
	return counts, nil
}
