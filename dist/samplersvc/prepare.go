package samplersvc

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/graphmill/graphmill/batch"
	"github.com/graphmill/graphmill/dist/stream"
)

// preparer prepares a stream's next batches on a few goroutines, as far
// ahead as the sender's credits allow, so that sampling overlaps sending.
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

// want queues the batches the sender will send next, as many as its
// credits allow (at most twice the workers).
func (pr *preparer) want(s *stream.Sender) {
	n := int(min(s.Credits(), uint64(2*pr.workers)))
	for _, b := range s.Peek(n) {
		if !pr.request(b) {
			return
		}
	}
}

// ready requests batch b (unless it is requested already) and returns a
// channel closed when its payload is ready.
func (pr *preparer) ready(b uint32) (<-chan struct{}, error) {
	for !pr.request(b) {
		// The queue is full of batches sent later; wait for one.
		select {
		case <-pr.ctx.Done():
			return nil, pr.ctx.Err()
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
				return nil, pr.ctx.Err()
			}
		}
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.results[b].done, nil
}

// get waits for batch b's payload.
func (pr *preparer) get(b uint32) (encoded, error) {
	done, err := pr.ready(b)
	if err != nil {
		return encoded{}, err
	}
	select {
	case <-done:
	case <-pr.ctx.Done():
		return encoded{}, pr.ctx.Err()
	}
	pr.mu.Lock()
	r := pr.results[b]
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
