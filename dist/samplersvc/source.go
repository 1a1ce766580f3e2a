package samplersvc

import (
	"context"
	"fmt"
	"time"

	"github.com/graphmill/graphmill/batch"
	"github.com/graphmill/graphmill/loader"
	"github.com/graphmill/graphmill/sample"
	"github.com/graphmill/graphmill/train"
)

// Source is a train.BatchSource that streams every epoch's minibatches
// from the Client's services: with the spec a local run uses (its loader
// seed, batch size, fanouts, shard), the batches are the ones its loader
// would have sampled.
type Source struct {
	c    *Client
	spec EpochSpec
	nb   int
}

// NewSource returns a source of the epochs of spec over a split of
// numSeeds seeds.
func NewSource(c *Client, spec EpochSpec, numSeeds int) *Source {
	return &Source{c: c, spec: spec, nb: spec.NumBatches(numSeeds)}
}

// NumBatches returns the number of batches of an epoch.
func (s *Source) NumBatches() int { return s.nb }

// Epoch streams epoch epoch.
func (s *Source) Epoch(ctx context.Context, epoch int) train.BatchIter {
	it := &iter{start: time.Now(), nodes: s.c.info.NumNodes}
	e, err := s.c.Epoch(ctx, s.spec, uint64(epoch), s.nb)
	if err != nil {
		it.err = err
		return it
	}
	it.e = e
	return it
}

type iter struct {
	e     *Epoch
	err   error
	cur   *loader.Batch
	next  int
	start time.Time
	nodes int64
	stats loader.Stats
}

func (it *iter) Next() bool {
	if it.err != nil || it.e == nil {
		return false
	}
	t := time.Now()
	i, p, ok := it.e.Next()
	it.stats.Wait += time.Since(t)
	if !ok {
		it.err = it.e.Err()
		return false
	}
	if i != it.next {
		it.err = fmt.Errorf("samplersvc: batch %d arrived where %d was due", i, it.next)
		return false
	}
	it.next++
	b, err := Decode(p, it.nodes)
	if err != nil {
		it.err = fmt.Errorf("samplersvc: batch %d: %w", i, err)
		return false
	}
	b.Index = i
	it.cur = b
	it.stats.Batches++
	return true
}

// Decode turns a frame payload into the loader's batch (aliasing the
// payload where it can).
func Decode(payload []byte, numNodes int64) (*loader.Batch, error) {
	var wb batch.MiniBatch
	if err := batch.Decode(payload, &wb, batch.DecodeOptions{Alias: true, NumNodes: numNodes}); err != nil {
		return nil, err
	}
	local, err := wb.Local()
	if err != nil {
		return nil, err
	}
	mb := &sample.MiniBatch{InputNodes: local, Seeds: local[:len(wb.Seeds):len(wb.Seeds)], Blocks: make([]sample.Block, len(wb.Blocks))}
	for l := range wb.Blocks {
		b := &wb.Blocks[l]
		mb.Blocks[l] = sample.Block{SrcNodes: local[:b.NumSrc:b.NumSrc], NumDst: b.NumDst, Indptr: b.Indptr, Indices: b.Indices}
	}
	out := &loader.Batch{MiniBatch: mb, Labels: wb.Labels}
	switch wb.Features.DType {
	case 0:
	case batch.Float32:
		out.Features = wb.Features.F32
	default:
		return nil, fmt.Errorf("features of dtype %v; the trainer takes float32", wb.Features.DType)
	}
	return out, nil
}

func (it *iter) Batch() *loader.Batch { return it.cur }
func (it *iter) Err() error           { return it.err }

func (it *iter) Close() {
	if it.e != nil {
		it.e.Close()
	}
}

func (it *iter) Stats() loader.Stats {
	s := it.stats
	s.Elapsed = time.Since(it.start)
	return s
}
