package samplersvc

import (
	"context"
	"fmt"

	"github.com/graphmill/graphmill/batch"
	"github.com/graphmill/graphmill/pipeline"
)

// Source is a train.BatchSource that streams every epoch's minibatches
// from the Client's services: with the spec a local run uses (its loader
// seed, batch size, fanouts, shard), the batches are the ones its sampling
// pipeline would have prepared. It is a one-stage pipeline (package
// pipeline) whose stage takes the stream's next batch.
type Source struct {
	c    *Client
	spec EpochSpec
	nb   int
	p    *pipeline.Pipeline

	e   *Epoch // the current epoch's streams
	err error  // why the current epoch could not start
}

// NewSource returns a source of the epochs of spec over a split of
// numSeeds seeds.
func NewSource(c *Client, spec EpochSpec, numSeeds int) (*Source, error) {
	s := &Source{c: c, spec: spec, nb: spec.NumBatches(numSeeds)}
	p, err := pipeline.New(pipeline.Config{Stages: []pipeline.Stage{{Name: "receive", Workers: 1, Run: s.receive}}})
	if err != nil {
		return nil, err
	}
	s.p = p
	return s, nil
}

// NumBatches returns the number of batches of an epoch.
func (s *Source) NumBatches() int { return s.nb }

// Failovers returns the number of samplers lost so far whose batches went
// to the others (train reports it per epoch).
func (s *Source) Failovers() int64 { return s.c.Failovers() }

// Epoch streams epoch epoch.
func (s *Source) Epoch(ctx context.Context, epoch int) *pipeline.Iter {
	s.Close()
	s.e, s.err = s.c.Epoch(ctx, s.spec, uint64(epoch), s.nb)
	return s.p.Epoch(ctx, epoch, s.nb)
}

// Close ends the current epoch's streams (Epoch does it for the previous
// epoch).
func (s *Source) Close() {
	if s.e != nil {
		s.e.Close()
		s.e = nil
	}
}

// receive is the pipeline's stage: batch i is the stream's next.
func (s *Source) receive(_ context.Context, i int, mb *batch.MiniBatch) error {
	if s.err != nil {
		return s.err
	}
	j, p, ok := s.e.Next()
	if !ok {
		if err := s.e.Err(); err != nil {
			return err
		}
		return fmt.Errorf("samplersvc: the stream ended before batch %d", i)
	}
	if j != i {
		return fmt.Errorf("samplersvc: batch %d arrived where %d was due", j, i)
	}
	if err := Decode(p, mb, s.c.info.NumNodes); err != nil {
		return fmt.Errorf("samplersvc: batch %d: %w", i, err)
	}
	if i == s.nb-1 {
		s.e.Next() // every batch is in: end the streams
	}
	return nil
}

// Decode decodes a frame payload into mb, aliasing the payload (which
// must then stay unchanged while mb is in use), and checks it carries
// float32 feature rows if any.
func Decode(payload []byte, mb *batch.MiniBatch, numNodes int64) error {
	epoch, seq := mb.Epoch, mb.Seq
	if err := batch.Decode(payload, mb, batch.DecodeOptions{Alias: true, NumNodes: numNodes}); err != nil {
		return err
	}
	mb.Epoch, mb.Seq = epoch, seq // the trainer's numbering, not the sampler's
	if t := mb.Features.DType; t != 0 && t != batch.Float32 {
		return fmt.Errorf("features of dtype %v; the trainer takes float32", t)
	}
	return nil
}
