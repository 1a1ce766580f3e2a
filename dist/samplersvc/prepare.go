package samplersvc

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/graphmill/graphmill/batch"
	"github.com/graphmill/graphmill/dist/stream"
)

// preparer prepares a stream's next batches on a few goroutines, a few
// ahead of the one being sent (want), so that sampling overlaps sending.
type preparer struct {
	ctx     context.Context
	cancel  context.CancelFunc
	p       *plan
	workers int
	jobs    chan uint32
	wg      sync.WaitGroup
	held    *atomic.Int64

	mu      sync.Mutex
	results map[uint32]*result
}

type result struct {
	done chan struct{}
	enc  encoded
	err  error
}

func newPreparer(ctx context.Context, p *plan, workers int, held *atomic.Int64) *preparer {
	ctx, cancel := context.WithCancel(ctx)
	pr := &preparer{ctx: ctx, cancel: cancel, p: p, workers: workers, jobs: make(chan uint32, 4*workers+4), held: held, results: map[uint32]*result{}}
	for w := 0; w < workers; w++ {
		pr.wg.Add(1)
		go func() {
			defer pr.wg.Done()
			var wb batch.MiniBatch
			for {
				select {
				case <-ctx.Done():
					return
				case b := <-pr.jobs:
					pr.mu.Lock()
					r := pr.results[b]
					pr.mu.Unlock()
					bp := payloadPool.Get().(*[]byte)
					r.enc, r.err = p.encode(ctx, int(b), &wb, (*bp)[:0])
					*bp = nil
					payloadPool.Put(bp)
					held.Add(int64(len(r.enc.payload)))
					close(r.done)
				}
			}
		}()
	}
	return pr
}

// request queues batch b unless it is queued or prepared already; it
// returns false when the queue is full.
func (pr *preparer) request(b uint32) bool {
	pr.mu.Lock()
	if _, ok := pr.results[b]; ok {
		pr.mu.Unlock()
		return true
	}
	r := &result{done: make(chan struct{})}
	pr.results[b] = r
	pr.mu.Unlock()
	select {
	case pr.jobs <- b:
		return true
	default:
		pr.mu.Lock()
		delete(pr.results, b)
		pr.mu.Unlock()
		return false
	}
}

// want queues the batches the sender will send next, twice as many as
// the workers, whatever the sender's credits: a credit comes back only
// after the stream has sent a batch and the client has taken it, and the
// stream loop sees it only between batches, so that work bounded by the
// credits left a worker idle while the loop waited for the other's batch
// (measured: the workers waited for jobs a tenth of the time, and the
// service kept 1.5 of 2 cores busy). The prepared payloads are at most
// twice the workers, as they were with credits to spare.
func (pr *preparer) want(s *stream.Sender) {
	for _, b := range s.Peek(2 * pr.workers) {
		if !pr.request(b) {
			return
		}
	}
}

// get waits for batch b's payload.
func (pr *preparer) get(b uint32) (encoded, error) {
	for !pr.request(b) {
		// The queue is full of batches sent later; wait for one.
		select {
		case <-pr.ctx.Done():
			return encoded{}, pr.ctx.Err()
		default:
		}
		pr.mu.Lock()
		var any *result
		for _, r := range pr.results {
			any = r
			break
		}
		pr.mu.Unlock()
		if any != nil {
			select {
			case <-any.done:
			case <-pr.ctx.Done():
				return encoded{}, pr.ctx.Err()
			}
		}
	}
	pr.mu.Lock()
	r := pr.results[b]
	pr.mu.Unlock()
	select {
	case <-r.done:
	case <-pr.ctx.Done():
		return encoded{}, pr.ctx.Err()
	}
	pr.mu.Lock()
	delete(pr.results, b)
	pr.mu.Unlock()
	return r.enc, r.err
}

// payloadPool recycles frame payload buffers: a payload is free again
// once gRPC has serialised its frame (Send marshals it before returning;
// the server installs no stats handler or tracer that could read it
// later), and reusing it spares the page faults of a fresh multi-megabyte
// buffer per batch.
var payloadPool = sync.Pool{New: func() any { return new([]byte) }}

// done records that a prepared payload was sent, and recycles it (a
// payload in shared memory is the client's until it releases it).
func (pr *preparer) done(e encoded) {
	pr.held.Add(-int64(len(e.payload)))
	if e.shmOff >= 0 {
		return
	}
	bp := payloadPool.Get().(*[]byte)
	*bp = e.payload[:0]
	payloadPool.Put(bp)
}

// close stops the workers and releases what was prepared and not sent.
func (pr *preparer) close() {
	pr.cancel()
	pr.wg.Wait()
	pr.mu.Lock()
	defer pr.mu.Unlock()
	for b, r := range pr.results {
		select {
		case <-r.done:
			pr.held.Add(-int64(len(r.enc.payload)))
		default:
		}
		delete(pr.results, b)
	}
}
