// Package samplersvc is the gRPC transport of sampler services
// (graphmill.v1.Sampler, proto/graphmill/v1): Server prepares minibatches
// of a dataset and streams them; Client runs a trainer's epochs over one or
// more servers and is a train.BatchSource. The protocol itself (who sends
// what, credits, completion, reassignment) is package stream's state
// machines; this package moves their messages and does the sampling.
package samplersvc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/graphmill/graphmill/batch"
	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/dist/stream"
	"github.com/graphmill/graphmill/feature"
	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/internal/units"
	pb "github.com/graphmill/graphmill/proto/graphmill/v1"
	"github.com/graphmill/graphmill/sample"
)

// MaxFrameBytes is the largest frame either side accepts.
const MaxFrameBytes = 1 << 30

// Flow-control window and socket buffer sizes of both sides.
const (
	windowBytes = 16 << 20
	bufferBytes = 1 << 20
)

// ServerConfig configures a Server.
type ServerConfig struct {
	// Dataset is the served dataset.
	Dataset *dataset.Dataset
	// Version is reported by Info.
	Version string
	// GraphInMemory samples from a copy of the graph in huge-page memory
	// (dataset.GraphInMemory, made by NewServer and freed by Close)
	// instead of its file mappings.
	GraphInMemory bool
	// Workers is the number of batches a stream prepares at once (0: 2).
	Workers int
	// Heartbeat is the interval of heartbeats while a stream has nothing
	// to send (0: 1 s).
	Heartbeat time.Duration
	// Log receives one line per event worth a log (refused connections,
	// streams that end with an error); nil discards them.
	Log func(string)
}

// Server serves a dataset's minibatches. Register it on a grpc.Server
// built with ServerOptions.
type Server struct {
	pb.UnimplementedSamplerServer
	cfg   ServerConfig
	fp    uint64
	feats [2]feature.Source // raw, normalised (opened on first use)
	g     *graph.CSC        // the graph sampled: the dataset's, or its copy (GraphInMemory)
	free  func()            // frees the copy
	fmu   sync.Mutex

	segs    segments     // clients' shared segments between streams
	active  atomic.Int64 // streams open
	held    atomic.Int64 // bytes of prepared frames held by open streams
	batches atomic.Int64 // frames sent
}

// NewServer returns a server for cfg.Dataset.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.Dataset == nil {
		return nil, errors.New("samplersvc: no dataset")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 2
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = time.Second
	}
	if cfg.Log == nil {
		cfg.Log = func(string) {}
	}
	s := &Server{cfg: cfg, fp: cfg.Dataset.Fingerprint(), g: cfg.Dataset.Graph, free: func() {}}
	if cfg.GraphInMemory {
		s.g, s.free = cfg.Dataset.GraphInMemory()
	}
	return s, nil
}

// Close releases the feature stores the server opened and its copy of
// the graph. The server's streams must have ended (the gRPC server
// stopped).
func (s *Server) Close() {
	s.segs.close()
	s.fmu.Lock()
	defer s.fmu.Unlock()
	for i, f := range s.feats {
		if c, ok := f.(io.Closer); ok {
			c.Close()
		}
		s.feats[i] = nil
	}
	s.free()
	s.free = func() {}
}

// Active returns the number of open streams, and the bytes of prepared
// frames they hold (0 once every trainer is gone: a trainer that
// disconnects frees its stream's memory).
func (s *Server) Active() (streams int, heldBytes int64) {
	return int(s.active.Load()), s.held.Load()
}

// ServerOptions returns the grpc.Server options of a sampler server:
// message size limits, and authentication as the distributed runtime's
// (sec.Secret checked on every call, sec.TLS as mutual TLS); sec nil
// means no authentication (the caller restricts the listener to
// loopback). Stopping the server waits for its streams' handlers to
// return (grpc.WaitForHandlers), so that Server.Close, after it, frees
// nothing a stream still reads.
func ServerOptions(sec *dist.Security, log func(string)) ([]grpc.ServerOption, error) {
	if log == nil {
		log = func(string) {}
	}
	// Large flow-control windows and buffers: frames are megabytes, and
	// gRPC's 64 KiB defaults cap a stream far below the link's rate.
	opts := []grpc.ServerOption{grpc.MaxRecvMsgSize(64 << 20), grpc.MaxSendMsgSize(MaxFrameBytes),
		grpc.InitialWindowSize(windowBytes), grpc.InitialConnWindowSize(windowBytes),
		grpc.WriteBufferSize(bufferBytes), grpc.ReadBufferSize(bufferBytes), grpc.WaitForHandlers(true)}
	if sec == nil {
		return opts, nil
	}
	if sec.TLS != nil {
		tc, err := sec.TLSConfig(true)
		if err != nil {
			return nil, err
		}
		opts = append(opts, grpc.Creds(credentials.NewTLS(tc)))
	}
	if len(sec.Secret) > 0 {
		v := &verifier{secret: sec.Secret, log: log, seen: map[string]time.Time{}}
		opts = append(opts, grpc.UnaryInterceptor(v.unary), grpc.StreamInterceptor(v.stream))
	}
	return opts, nil
}

// Info describes the served dataset.
func (s *Server) Info(ctx context.Context, _ *pb.InfoRequest) (*pb.InfoReply, error) {
	d := s.cfg.Dataset
	m := d.Meta
	return &pb.InfoReply{
		Name: m.Name, NumNodes: int64(m.NumNodes), NumEdges: int64(m.NumEdges), FeatureDim: int32(m.FeatureDim),
		NumClasses: int32(m.NumClasses), Version: s.cfg.Version, Fingerprint: s.fp,
		SplitSizes: map[string]int64{"train": int64(len(d.Train)), "val": int64(len(d.Val)), "test": int64(len(d.Test))},
		Packed:     m.Packed != nil,
	}, nil
}

// features returns the dataset's feature source, row-normalised or not.
func (s *Server) features(ctx context.Context, normalize bool) (feature.Source, error) {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	i := 0
	if normalize {
		i = 1
	}
	if s.feats[i] != nil {
		return s.feats[i], nil
	}
	if s.cfg.Dataset.FeatureArray == nil {
		return nil, fmt.Errorf("dataset %s has no features", s.cfg.Dataset.Meta.Name)
	}
	st, err := feature.Open(s.cfg.Dataset, feature.Options{Workers: 1})
	if err != nil {
		return nil, err
	}
	if normalize {
		if _, err := st.NormalizeRows(ctx); err != nil {
			st.Close()
			return nil, err
		}
	}
	s.feats[i] = st
	return st, nil
}

// plan is a validated EpochRequest.
type plan struct {
	req     *pb.EpochRequest
	sampler *sample.Sampler
	batches [][]int32 // every batch of the epoch (this shard's part)
	feat    feature.Source
	labels  []int32
	key     uint64
	seg     *segment // the client's shared memory, or nil
	cached  []byte   // the client's cached-rows bitmap, or nil
}

// testHookEncode, set by tests, is called as a batch's preparation starts;
// the function it returns, as it ends.
var testHookEncode func() func()

// encoded is a prepared payload: in the shared segment at shmOff, or on
// the heap (shmOff -1), with miss feature rows after the batch frame.
type encoded struct {
	payload []byte
	shmOff  int
	miss    int
}

// Batches returns the seed batches of an epoch as a local loader cuts
// them: split's seeds shuffled with sample.EpochKey(seed, epoch) when
// shuffle is set, global batches of batchSize×shards, shard shard of each.
func Batches(seeds []int32, batchSize, shard, shards int, shuffle, dropLast bool, seed, epoch uint64) ([][]int32, error) {
	if shards < 1 {
		shards = 1
	}
	if shard < 0 || shard >= shards {
		return nil, fmt.Errorf("shard %d of %d", shard, shards)
	}
	if batchSize < 1 {
		return nil, fmt.Errorf("batch size %d; must be positive", batchSize)
	}
	if batchSize > math.MaxInt/shards {
		return nil, fmt.Errorf("batch size %d times %d shards overflows the global batch (at most %d seeds); give a smaller batch size or fewer shards", batchSize, shards, math.MaxInt)
	}
	bs, err := sample.Batches(seeds, batchSize*shards, shuffle, sample.EpochKey(seed, int(epoch)), dropLast)
	if err != nil {
		return nil, err
	}
	if shards > 1 {
		for i, b := range bs {
			bs[i] = b[len(b)*shard/shards : len(b)*(shard+1)/shards]
		}
	}
	return bs, nil
}

func (s *Server) plan(ctx context.Context, req *pb.EpochRequest) (*plan, error) {
	d := s.cfg.Dataset
	var seeds []int32
	switch req.Split {
	case "train":
		seeds = d.Train
	case "val":
		seeds = d.Val
	case "test":
		seeds = d.Test
	default:
		return nil, fmt.Errorf("unknown split %q: want train, val or test", req.Split)
	}
	if len(seeds) == 0 {
		return nil, fmt.Errorf("dataset %s has an empty %s split", d.Meta.Name, req.Split)
	}
	if req.Fingerprint != 0 && req.Fingerprint != s.fp {
		return nil, fmt.Errorf("this sampler serves %s (fingerprint %016x), not the trainer's dataset (fingerprint %016x: other edges, labels, splits or features): give the trainer and the sampler the same dataset", d.Meta.Name, s.fp, req.Fingerprint)
	}
	if req.BatchSize < 1 {
		return nil, fmt.Errorf("batch size %d; must be positive", req.BatchSize)
	}
	fan := make([]int, len(req.Fanouts))
	for i, k := range req.Fanouts {
		fan[i] = int(k)
	}
	// A packed dataset's draws are keyed by original id, so that it serves
	// the original dataset's batches (renumbered).
	smp, err := sample.New(s.g, sample.Config{Fanouts: fan, Frontier: req.Frontier, Replace: req.Replace, KeyIDs: d.OrigIDs})
	if err != nil {
		return nil, err
	}
	bs, err := Batches(seeds, int(req.BatchSize), int(req.Shard), int(req.NumShards), req.Shuffle, req.DropLast, req.Seed, req.Epoch)
	if err != nil {
		return nil, err
	}
	p := &plan{req: req, sampler: smp, batches: bs, key: sample.EpochKey(req.Seed, int(req.Epoch))}
	for _, b := range req.Batches {
		if int(b) >= len(bs) {
			return nil, fmt.Errorf("batch %d of an epoch of %d batches", b, len(bs))
		}
	}
	if req.WithFeatures {
		if p.feat, err = s.features(ctx, req.NormalizeFeatures); err != nil {
			return nil, err
		}
	}
	if len(req.Cached) > 0 && req.WithFeatures {
		if want := (d.Meta.NumNodes + 7) / 8; len(req.Cached) != want {
			return nil, fmt.Errorf("cached-rows bitmap of %d bytes; %d nodes need %d", len(req.Cached), d.Meta.NumNodes, want)
		}
		p.cached = req.Cached
	}
	if req.EdgeIndex && !req.Frontier {
		return nil, errors.New("an edge index (PyG's layout) needs frontier draws")
	}
	if req.WithLabels || req.InputLabels {
		if d.Labels == nil {
			return nil, fmt.Errorf("dataset %s has no labels", d.Meta.Name)
		}
		p.labels = d.Labels
	}
	return p, nil
}

// encode prepares batch i of the plan in wb and returns its frame
// payload: in the shared segment when the stream has one with room, else
// appended to buf.
func (p *plan) encode(ctx context.Context, i int, wb *batch.MiniBatch, buf []byte) (encoded, error) {
	if testHookEncode != nil {
		defer testHookEncode()()
	}
	e := encoded{shmOff: -1}
	if err := p.sampler.SampleInto(wb, p.batches[i], p.key); err != nil {
		return e, err
	}
	// Edge ids are sent only when asked for: the trainer does not read
	// them, and they would double the blocks' bytes. Their arrays are
	// kept for the next batch: dropped, every batch allocated them afresh,
	// and the first writes to their pages were most of the service's page
	// faults.
	if !p.req.EdgeIds {
		var kept [8][]int64
		eids := kept[:0]
		for l := range wb.Blocks {
			eids = append(eids, wb.Blocks[l].EdgeIDs)
			wb.Blocks[l].EdgeIDs = nil
		}
		defer func() {
			for l, a := range eids {
				wb.Blocks[l].EdgeIDs = a[:0]
			}
		}()
	}
	ids, err := wb.Local()
	if err != nil {
		return e, err
	}
	var miss []int32 // the rows after the frame
	if p.feat != nil {
		if p.cached != nil || p.req.RowsAfterFrame {
			wb.Features.DType, wb.Features.Rows, wb.Features.Dim = 0, 0, 0
			miss = ids
			if p.cached != nil {
				// Only the rows the client does not hold.
				miss = nil
				for _, v := range ids {
					if p.cached[v>>3]&(1<<(v&7)) == 0 {
						miss = append(miss, v)
					}
				}
			}
		} else if err := p.feat.Gather(ctx, ids, wb.Features.SetF32(len(ids), p.feat.Dim())); err != nil {
			return e, err
		}
	}
	if p.req.WithLabels {
		wb.Labels = wb.Labels[:0]
		for _, v := range ids[:len(wb.Seeds)] {
			wb.Labels = append(wb.Labels, p.labels[v])
		}
	}
	if p.req.InputLabels {
		if err := wb.SetInputLabels(p.labels); err != nil {
			return e, err
		}
	}
	if p.req.EdgeIndex {
		if err := wb.SetEdgeIndex(); err != nil {
			return e, err
		}
	}
	wb.Epoch, wb.Seq, wb.Sender = uint32(p.req.Epoch), uint64(i), p.req.Sender
	flen := wb.EncodedLen()
	n := flen
	if p.feat != nil {
		n += len(miss) * p.feat.Dim() * 4
	}
	out := buf[:0]
	if p.seg != nil {
		if off, b, ok := p.seg.alloc(n); ok {
			out, e.shmOff = b[:0], off
		}
	}
	if cap(out) < n {
		out = make([]byte, 0, n)
	}
	if out, err = wb.AppendBinary(out); err == nil && p.feat != nil && n > flen {
		out = out[:n]
		// float32 rows, little-endian as the machine (amd64, arm64); the
		// frame's size is a multiple of 64, so they are aligned.
		rows := unsafe.Slice((*float32)(unsafe.Pointer(&out[flen])), len(miss)*p.feat.Dim())
		err = p.feat.Gather(ctx, miss, rows)
	}
	if err != nil {
		if e.shmOff >= 0 {
			p.seg.free(uint64(e.shmOff))
		}
		return encoded{shmOff: -1}, err
	}
	e.payload, e.miss = out, len(miss)
	return e, nil
}

// Stream serves one epoch's share of minibatches to one trainer.
func (s *Server) Stream(st pb.Sampler_StreamServer) (err error) {
	ctx, cancel := context.WithCancel(st.Context())
	defer cancel()
	s.active.Add(1)
	defer s.active.Add(-1)
	defer func() {
		if err != nil && ctx.Err() == nil {
			s.cfg.Log(fmt.Sprintf("stream ended: %v", err))
		}
	}()
	first, err := st.Recv()
	if err != nil {
		return err
	}
	req := first.GetStart()
	if req == nil {
		return status.Error(codes.InvalidArgument, "graphmill sampler: a stream must start with an EpochRequest")
	}
	p, err := s.plan(ctx, req)
	if err != nil {
		return status.Error(codes.InvalidArgument, "graphmill sampler: "+err.Error())
	}
	if req.ShmPath != "" {
		// Shared memory when the client's file opens and checks out; in-message frames otherwise.
		if seg, err := s.segs.open(req.ShmPath, req.ShmSize, req.ShmToken); err != nil {
			s.cfg.Log(fmt.Sprintf("stream without shared memory: %v", err))
		} else {
			defer s.segs.done(seg, req.ShmToken)
			if err := seg.hold(req.ShmBusy); err != nil {
				return status.Error(codes.InvalidArgument, "graphmill sampler: "+err.Error())
			}
			p.seg = seg
		}
	}
	share := req.Batches
	if len(share) == 0 {
		share = make([]uint32, len(p.batches))
		for i := range share {
			share[i] = uint32(i)
		}
	}
	credits := req.InitialCredits
	if credits == 0 {
		credits = 1
	}
	snd, err := stream.NewSender(stream.Start{Sender: req.Sender, Epoch: req.Epoch, Batches: share, Credits: credits})
	if err != nil {
		return status.Error(codes.InvalidArgument, "graphmill sampler: "+err.Error())
	}
	// The client's messages arrive on a goroutine of their own, which
	// reads ahead into a buffer so that the loop below finds every message
	// already sent when it drains them.
	msgs := make(chan *pb.ClientMessage, 64)
	recvErr := make(chan error, 1)
	go func() {
		for {
			m, err := st.Recv()
			if err != nil {
				recvErr <- err
				return
			}
			select {
			case msgs <- m:
			case <-ctx.Done():
				recvErr <- ctx.Err()
				return
			}
		}
	}()
	pre := newPreparer(ctx, p, s.cfg.Workers, &s.held)
	defer pre.close()
	hb := time.NewTicker(s.cfg.Heartbeat)
	defer hb.Stop()
	send := func(f stream.Frame, e encoded) error {
		fr := &pb.Frame{Sender: f.Sender, Epoch: f.Epoch, Sequence: f.Sequence, Kind: pb.Frame_Kind(f.Kind), Batch: f.Batch, BatchCount: f.Count, Minibatch: f.Payload, TailRows: uint64(e.miss)}
		if e.shmOff >= 0 {
			fr.ShmOffset, fr.ShmLength, fr.Minibatch = uint64(e.shmOff), uint64(len(e.payload)), nil
		}
		pb.AlignPayload(fr)
		if err := st.Send(fr); err != nil {
			return err
		}
		if f.Kind == stream.KindBatch {
			s.batches.Add(1)
		}
		return nil
	}
	handle := func(m *pb.ClientMessage) error {
		switch {
		case m.GetCredit() != nil:
			snd.Credit(m.GetCredit().Frames)
		case m.GetAssign() != nil:
			a := m.GetAssign()
			for _, b := range a.Batches {
				if int(b) >= len(p.batches) {
					return status.Errorf(codes.InvalidArgument, "graphmill sampler: batch %d of an epoch of %d batches", b, len(p.batches))
				}
			}
			if err := snd.Assign(a.Epoch, a.Batches); err != nil {
				return status.Error(codes.InvalidArgument, "graphmill sampler: "+err.Error())
			}
		case m.GetRelease() != nil:
			if p.seg == nil {
				// The client's payloads of an earlier stream, released
				// on this one, which the server could not map: nothing
				// of it is allocated here.
				return nil
			}
			for _, off := range m.GetRelease().Offsets {
				if err := p.seg.free(off); err != nil {
					return status.Error(codes.InvalidArgument, "graphmill sampler: "+err.Error())
				}
			}
		case m.GetStart() != nil:
			return status.Error(codes.InvalidArgument, "graphmill sampler: an EpochRequest in the middle of a stream")
		default:
			return status.Error(codes.InvalidArgument, "graphmill sampler: an empty client message (no credit, assign, release or start)")
		}
		return nil
	}
	// drain handles every client message already here, without waiting.
	drain := func() error {
		for {
			select {
			case m := <-msgs:
				if err := handle(m); err != nil {
					return err
				}
			default:
				return nil
			}
		}
	}
	for {
		// Prepare ahead what the credits allow, counting every credit
		// already received: taken one per turn of this loop, the credits
		// that came in while a batch was prepared waited in the channel,
		// and the stream prepared one batch at a time (measured: 37-43
		// batches/s with shared memory and two workers, the service's
		// second core idle).
		if err := drain(); err != nil {
			return err
		}
		pre.want(snd)
		switch snd.Next() {
		case stream.SendBatch:
			// While the next batch is prepared, a credit that comes in is
			// taken at once, so that the idle worker starts the batch it
			// allows (waited for the batch alone, the loop saw credits
			// only between batches, and the workers waited for jobs a
			// tenth of the time: 1.5 of 2 cores busy). The batch is
			// waited for again from the loop's top: a message may have
			// changed which batch is next.
			done, err := pre.ready(snd.NextBatch())
			if err != nil {
				return status.Errorf(codes.Internal, "graphmill sampler: batch %d: %v", snd.NextBatch(), err)
			}
			select {
			case <-done:
			case m := <-msgs:
				if err := handle(m); err != nil {
					return err
				}
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
			e, err := pre.get(snd.NextBatch())
			if err != nil {
				return status.Errorf(codes.Internal, "graphmill sampler: batch %d: %v", snd.NextBatch(), err)
			}
			err = send(snd.Batch(e.payload), e)
			pre.done(e) // sent or not, the stream holds it no longer
			if err != nil {
				return err
			}
			continue
		case stream.SendEnd:
			if err := send(snd.End(), encoded{shmOff: -1}); err != nil {
				return err
			}
			continue
		}
		select {
		case m := <-msgs:
			if err := handle(m); err != nil {
				return err
			}
		case err := <-recvErr:
			if err == io.EOF {
				return nil // the trainer has what it needs
			}
			return err
		case <-hb.C:
			if err := send(snd.Heartbeat(), encoded{shmOff: -1}); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// maxRowsPerCall bounds the ids of one GetRows call.
const maxRowsPerCall = 1_000_000

// maxRowsReplyBytes bounds the rows of one GetRows reply: the largest
// message either side accepts (MaxFrameBytes), less room for the reply's
// other fields and length prefixes.
const maxRowsReplyBytes = MaxFrameBytes - 64

// GetRows returns feature rows by node id. A request whose reply would
// pass maxRowsReplyBytes is refused before anything is allocated.
func (s *Server) GetRows(ctx context.Context, req *pb.RowsRequest) (*pb.RowsReply, error) {
	n := int64(s.cfg.Dataset.Meta.NumNodes)
	if len(req.Ids) > maxRowsPerCall {
		return nil, status.Errorf(codes.InvalidArgument, "graphmill sampler: %d rows asked; at most %d per call", len(req.Ids), maxRowsPerCall)
	}
	feat, err := s.features(ctx, req.NormalizeFeatures)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, "graphmill sampler: "+err.Error())
	}
	dim := feat.Dim()
	if rowBytes := 4 * int64(dim); rowBytes > 0 && int64(len(req.Ids)) > maxRowsReplyBytes/rowBytes {
		return nil, status.Errorf(codes.InvalidArgument, "graphmill sampler: %d rows of %d features are %s, over the %s limit of a reply message; at most %d ids per call at this dimension",
			len(req.Ids), dim, units.Bytes(int64(len(req.Ids))*rowBytes), units.Bytes(MaxFrameBytes), min(maxRowsReplyBytes/rowBytes, maxRowsPerCall))
	}
	ids := make([]int32, len(req.Ids))
	for i, v := range req.Ids {
		if v < 0 || v >= n {
			return nil, status.Errorf(codes.InvalidArgument, "graphmill sampler: node %d out of range [0, %d)", v, n)
		}
		ids[i] = int32(v)
	}
	rows := make([]float32, len(ids)*dim)
	if err := feat.Gather(ctx, ids, rows); err != nil {
		return nil, status.Error(codes.Internal, "graphmill sampler: "+err.Error())
	}
	var b []byte
	if len(rows) > 0 {
		b = unsafe.Slice((*byte)(unsafe.Pointer(&rows[0])), 4*len(rows))
	}
	return &pb.RowsReply{Dim: uint32(dim), Rows: b}, nil
}
