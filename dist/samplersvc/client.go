package samplersvc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/dist/stream"
	pb "github.com/graphmill/graphmill/proto/graphmill/v1"
)

// ClientConfig configures a Client.
type ClientConfig struct {
	// Addrs are the sampler services, host:port each.
	Addrs []string
	// ConnectTimeout bounds the wait for every service to answer Info (a
	// trainer started before its samplers waits for them); 0: 60 s.
	ConnectTimeout time.Duration
	// Security authenticates the client as the runtime does (nil: none).
	Security *dist.Security
	// Deadline is the silence after which a sampler that owes batches is
	// given up and its batches reassigned (0: 30 s; samplers send
	// heartbeats every second while idle).
	Deadline time.Duration
	// Credits is the number of frames each sampler may send ahead (0: 4).
	Credits uint32
	// Log receives a line per lost sampler (nil: discarded).
	Log func(string)
}

// Client is a trainer's connection to its sampler services.
type Client struct {
	cfg   ClientConfig
	conns []*grpc.ClientConn
	cl    []pb.SamplerClient
	info  *pb.InfoReply
	alive []bool // per address: still used in later epochs
	mu    sync.Mutex
	// failovers counts the samplers lost mid-epoch whose batches went
	// to the others.
	failovers atomic.Int64
}

// Failovers returns the number of samplers lost so far whose batches were
// reassigned to the others.
func (c *Client) Failovers() int64 { return c.failovers.Load() }

// Dial connects to every service and waits (up to ConnectTimeout) until
// each answers Info; they must serve the same graph.
func Dial(ctx context.Context, cfg ClientConfig) (*Client, error) {
	if len(cfg.Addrs) == 0 {
		return nil, errors.New("samplersvc: no sampler addresses")
	}
	for _, a := range cfg.Addrs {
		// A malformed address is known now, not after the connect
		// timeout (gRPC's resolver retries it until then).
		_, port, err := net.SplitHostPort(a)
		if err != nil || port == "" {
			return nil, fmt.Errorf("samplersvc: sampler address %q is not HOST:PORT (e.g. 127.0.0.1:7070)", a)
		}
		if n, err := net.LookupPort("tcp", port); err != nil || n < 1 {
			return nil, fmt.Errorf("samplersvc: sampler address %q: port %q is not a port (1..65535)", a, port)
		}
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = 60 * time.Second
	}
	if cfg.Deadline <= 0 {
		cfg.Deadline = 30 * time.Second
	}
	if cfg.Credits == 0 {
		cfg.Credits = 4
	}
	if cfg.Log == nil {
		cfg.Log = func(string) {}
	}
	opts := []grpc.DialOption{grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxFrameBytes), grpc.MaxCallSendMsgSize(64<<20)),
		grpc.WithInitialWindowSize(windowBytes), grpc.WithInitialConnWindowSize(windowBytes),
		grpc.WithWriteBufferSize(bufferBytes), grpc.WithReadBufferSize(bufferBytes)}
	tc := insecure.NewCredentials()
	if s := cfg.Security; s != nil {
		if s.TLS != nil {
			c, err := s.TLSConfig(false)
			if err != nil {
				return nil, err
			}
			tc = credentials.NewTLS(c)
		}
		if len(s.Secret) > 0 {
			opts = append(opts, grpc.WithPerRPCCredentials(callCreds{secret: s.Secret}))
		}
	}
	opts = append(opts, grpc.WithTransportCredentials(tc))
	c := &Client{cfg: cfg}
	for _, a := range cfg.Addrs {
		cc, err := grpc.NewClient(a, opts...)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("sampler %s: %w", a, err)
		}
		c.conns = append(c.conns, cc)
		c.cl = append(c.cl, pb.NewSamplerClient(cc))
		c.alive = append(c.alive, true)
	}
	wctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	infos := make([]*pb.InfoReply, len(c.cl))
	errs := make([]error, len(c.cl))
	var wg sync.WaitGroup
	for i, cl := range c.cl {
		wg.Add(1)
		go func() {
			defer wg.Done()
			infos[i], errs[i] = cl.Info(wctx, &pb.InfoRequest{}, grpc.WaitForReady(true))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			c.Close()
			if wctx.Err() != nil && ctx.Err() == nil {
				return nil, fmt.Errorf("sampler %s did not answer within --connect-timeout %v: %v", cfg.Addrs[i], cfg.ConnectTimeout, statusMessage(err))
			}
			return nil, fmt.Errorf("sampler %s: %v", cfg.Addrs[i], statusMessage(err))
		}
		if infos[i].Fingerprint != infos[0].Fingerprint {
			c.Close()
			return nil, fmt.Errorf("samplers %s and %s serve different graphs (%s and %s)", cfg.Addrs[0], cfg.Addrs[i], infos[0].Name, infos[i].Name)
		}
	}
	c.info = infos[0]
	return c, nil
}

// statusMessage returns a gRPC error's message (the Go-side error text).
func statusMessage(err error) string {
	if s, ok := status.FromError(err); ok {
		return s.Message()
	}
	return err.Error()
}

// StreamClient returns the gRPC client of service i (benchmarks).
func (c *Client) StreamClient(i int) pb.SamplerClient { return c.cl[i] }

// Info returns what the services serve.
func (c *Client) Info() *pb.InfoReply { return c.info }

// Close closes the connections.
func (c *Client) Close() {
	for _, cc := range c.conns {
		cc.Close()
	}
}

// EpochSpec describes how an epoch's batches are cut and sampled (the
// fields of graphmill.v1.EpochRequest).
type EpochSpec struct {
	Split             string
	Fanouts           []int
	BatchSize         int
	Seed              uint64
	Shuffle, DropLast bool
	Features, Labels  bool
	NormalizeFeatures bool
	Shard, Shards     int
	Fingerprint       uint64
}

// NumBatches returns the number of batches of an epoch over n seeds.
func (s EpochSpec) NumBatches(n int) int {
	g := s.BatchSize * max(1, s.Shards)
	if s.DropLast {
		return n / g
	}
	return (n + g - 1) / g
}

// event is something that happened on a stream.
type event struct {
	s     int
	frame *pb.Frame
	err   error
}

// Epoch is one epoch streamed from the services.
type Epoch struct {
	c       *Client
	ctx     context.Context
	cancel  context.CancelFunc
	r       *stream.Receiver
	addrs   []int // stream s -> address index
	streams []pb.Sampler_StreamClient
	dead    []bool
	events  chan event
	wg      sync.WaitGroup
	tick    *time.Ticker
	err     error
	done    bool
}

// Epoch starts epoch epoch of numBatches batches over the live services.
func (c *Client) Epoch(ctx context.Context, spec EpochSpec, epoch uint64, numBatches int) (*Epoch, error) {
	c.mu.Lock()
	var addrs []int
	for i, ok := range c.alive {
		if ok {
			addrs = append(addrs, i)
		}
	}
	c.mu.Unlock()
	if len(addrs) == 0 {
		return nil, errors.New("every sampler service was lost")
	}
	ctx, cancel := context.WithCancel(ctx)
	r, msgs, err := stream.NewReceiver(epoch, numBatches, len(addrs), c.cfg.Credits, c.cfg.Deadline, time.Now())
	if err != nil {
		cancel()
		return nil, err
	}
	e := &Epoch{c: c, ctx: ctx, cancel: cancel, r: r, addrs: addrs, streams: make([]pb.Sampler_StreamClient, len(addrs)),
		dead: make([]bool, len(addrs)), events: make(chan event, 16*len(addrs)), tick: time.NewTicker(c.cfg.Deadline / 4)}
	fan := make([]int32, len(spec.Fanouts))
	for i, k := range spec.Fanouts {
		fan[i] = int32(k)
	}
	for _, m := range msgs {
		s := m.To
		if len(m.Start.Batches) == 0 {
			// More samplers than batches: this one has no share (an empty
			// list would mean "every batch"), so it sits the epoch out.
			e.dead[s] = true
			if err := e.r.OnLost(s, errors.New("no batches to prepare")); err != nil {
				e.Close()
				return nil, err
			}
			continue
		}
		st, err := c.cl[addrs[s]].Stream(ctx, grpc.ForceCodecV2(newFrameCodec()))
		if err == nil {
			req := &pb.EpochRequest{Split: spec.Split, Fanouts: fan, BatchSize: uint32(spec.BatchSize), Epoch: epoch, Seed: spec.Seed,
				Shuffle: spec.Shuffle, DropLast: spec.DropLast, WithFeatures: spec.Features, WithLabels: spec.Labels,
				Shard: uint32(spec.Shard), NumShards: uint32(max(1, spec.Shards)), Batches: m.Start.Batches, Sender: m.Start.Sender,
				InitialCredits: m.Start.Credits, Fingerprint: spec.Fingerprint, NormalizeFeatures: spec.NormalizeFeatures}
			err = st.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Start{Start: req}})
		}
		if err != nil {
			if lerr := e.lose(s, err); lerr != nil {
				e.Close()
				return nil, lerr
			}
			continue
		}
		e.streams[s] = st
		e.wg.Add(1)
		go e.recv(s, st)
	}
	return e, nil
}

// recv moves stream s's frames to the events channel.
func (e *Epoch) recv(s int, st pb.Sampler_StreamClient) {
	defer e.wg.Done()
	for {
		f, err := st.Recv()
		select {
		case e.events <- event{s: s, frame: f, err: err}:
		case <-e.ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// name names stream s's sampler.
func (e *Epoch) name(s int) string {
	return fmt.Sprintf("sampler %d (%s)", s, e.c.cfg.Addrs[e.addrs[s]])
}

// lose gives up stream s.
func (e *Epoch) lose(s int, cause error) error {
	if e.dead[s] {
		return nil
	}
	e.dead[s] = true
	msg := statusMessage(cause)
	switch status.Code(cause) {
	case codes.InvalidArgument, codes.Unauthenticated, codes.PermissionDenied:
		// The request is at fault, not the sampler: another would refuse
		// it too.
		return fmt.Errorf("%s refused the epoch: %s", e.name(s), msg)
	}
	e.c.failovers.Add(1)
	rest := "no sampler is left"
	if slices.Contains(e.dead, false) {
		rest = "its unsent batches go to the others"
	}
	e.c.cfg.Log(fmt.Sprintf("%s lost: %s; %s", e.name(s), msg, rest))
	e.c.mu.Lock()
	e.c.alive[e.addrs[s]] = false
	e.c.mu.Unlock()
	if err := e.r.OnLost(s, fmt.Errorf("%s: %s", e.c.cfg.Addrs[e.addrs[s]], msg)); err != nil {
		return err
	}
	return nil
}

// flush sends the receiver's messages; a stream that cannot take one is
// lost.
func (e *Epoch) flush() error {
	for {
		msgs := e.r.Outbox()
		if len(msgs) == 0 {
			return nil
		}
		for _, m := range msgs {
			if e.dead[m.To] || e.streams[m.To] == nil {
				continue
			}
			var cm *pb.ClientMessage
			switch {
			case m.Credit > 0:
				cm = &pb.ClientMessage{Msg: &pb.ClientMessage_Credit{Credit: &pb.Credit{Frames: m.Credit}}}
			case m.Assign != nil:
				cm = &pb.ClientMessage{Msg: &pb.ClientMessage_Assign{Assign: &pb.Assign{Epoch: e.r.Epoch(), Batches: m.Assign}}}
				e.c.cfg.Log(fmt.Sprintf("%d batches of epoch %d (%s) reassigned to %s", len(m.Assign), e.r.Epoch(), batchList(m.Assign), e.name(m.To)))
			default:
				continue
			}
			if err := e.streams[m.To].Send(cm); err != nil {
				if lerr := e.lose(m.To, err); lerr != nil {
					return lerr
				}
			}
		}
	}
}

// Next returns the epoch's next batch (index order) and its payload (the
// batch wire encoding); ok is false at the end of the epoch or on error
// (see Err).
func (e *Epoch) Next() (index int, payload []byte, ok bool) {
	if e.err != nil || e.done {
		return 0, nil, false
	}
	for {
		if i, p, ok := e.r.Next(); ok {
			if err := e.flush(); err != nil {
				e.err = err
				return 0, nil, false
			}
			return i, p, true
		}
		if err := e.flush(); err != nil {
			e.err = err
			return 0, nil, false
		}
		if e.r.Done() {
			e.finish()
			return 0, nil, false
		}
		select {
		case ev := <-e.events:
			if e.dead[ev.s] {
				continue
			}
			if ev.err != nil {
				if err := e.lose(ev.s, ev.err); err != nil {
					e.err = err
					return 0, nil, false
				}
				continue
			}
			f := ev.frame
			sf := stream.Frame{Sender: f.Sender, Epoch: f.Epoch, Sequence: f.Sequence, Kind: stream.Kind(f.Kind), Batch: f.Batch, Count: f.BatchCount, Payload: f.Minibatch}
			if err := e.r.OnFrame(ev.s, sf, time.Now()); err != nil {
				if lerr := e.lose(ev.s, err); lerr != nil {
					e.err = lerr
					return 0, nil, false
				}
			}
		case <-e.tick.C:
			for _, s := range e.r.Tick(time.Now()) {
				err := fmt.Errorf("sent nothing for %v while batch %d was due", e.c.cfg.Deadline, e.r.NextIndex())
				if lerr := e.lose(s, status.Error(codes.DeadlineExceeded, err.Error())); lerr != nil {
					e.err = lerr
					return 0, nil, false
				}
			}
		case <-e.ctx.Done():
			e.err = e.ctx.Err()
			return 0, nil, false
		}
	}
}

// finish ends the streams after a complete epoch.
func (e *Epoch) finish() {
	e.done = true
	for s, st := range e.streams {
		if st != nil && !e.dead[s] {
			st.CloseSend()
		}
	}
}

// Err returns the epoch's error.
func (e *Epoch) Err() error { return e.err }

// Close ends the epoch's streams (cancelling them if unfinished) and waits
// for its goroutines.
func (e *Epoch) Close() {
	if !e.done {
		e.finish()
	}
	e.cancel()
	e.wg.Wait()
	e.tick.Stop()
}

// Lost names the samplers lost so far, for messages.
func (e *Epoch) Lost() string {
	var s []string
	for q, d := range e.dead {
		if d {
			s = append(s, e.name(q))
		}
	}
	return strings.Join(s, ", ")
}

// batchList names batch indices for a log line: the first few, then how
// many more.
func batchList(b []uint32) string {
	const show = 6
	var sb strings.Builder
	sb.WriteString("batches ")
	for i, x := range b {
		if i == show {
			fmt.Fprintf(&sb, " and %d more", len(b)-show)
			break
		}
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprint(&sb, x)
	}
	return sb.String()
}
