package samplersvc

import (
	"context"
	"encoding/binary"
	"math"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/graphmill/graphmill/batch"
	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/dataset/builtin"
	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/feature"
	"github.com/graphmill/graphmill/internal/testcert"
	"github.com/graphmill/graphmill/pipeline"
	pb "github.com/graphmill/graphmill/proto/graphmill/v1"
	"github.com/graphmill/graphmill/sample"
)

func cora(t *testing.T) *dataset.Dataset {
	t.Helper()
	d, err := builtin.Open(context.Background(), "cora")
	if err != nil {
		t.Skipf("cora unavailable: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// service is one in-process sampler service on loopback.
type service struct {
	s    *Server
	g    *grpc.Server
	addr string
}

func startService(t *testing.T, d *dataset.Dataset, sec *dist.Security, wrap func(*Server) pb.SamplerServer) *service {
	t.Helper()
	// The graph copied into memory, as graphmill serve does where it fits:
	// every test comparing with local sampling (from d.Graph, the
	// mapping) checks the copy too.
	s, err := NewServer(ServerConfig{Dataset: d, Heartbeat: 100 * time.Millisecond, GraphInMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	opts, err := ServerOptions(sec, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(opts...)
	var impl pb.SamplerServer = s
	if wrap != nil {
		impl = wrap(s)
	}
	pb.RegisterSamplerServer(g, impl)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(ln)
	sv := &service{s: s, g: g, addr: ln.Addr().String()}
	t.Cleanup(func() { g.Stop(); s.Close() })
	return sv
}

// rawClient is a gRPC client of the service without graphmill's client
// around it (its streams are driven message by message), closed with the
// test.
func (sv *service) rawClient(t *testing.T) pb.SamplerClient {
	t.Helper()
	cc, err := grpc.NewClient(sv.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxFrameBytes)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return pb.NewSamplerClient(cc)
}

// localBatches is what the local sampling pipeline gives for the spec's
// epoch (copies).
func localBatches(t *testing.T, d *dataset.Dataset, spec EpochSpec, epoch int) []*batch.MiniBatch {
	t.Helper()
	s, _ := sample.New(d.Graph, sample.Config{Fanouts: spec.Fanouts})
	st, err := feature.Open(d, feature.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if spec.NormalizeFeatures {
		st.NormalizeRows(context.Background())
	}
	l, err := pipeline.NewSampled(s, st, d.Labels, d.Train, pipeline.SampledConfig{BatchSize: spec.BatchSize, Shuffle: spec.Shuffle, Seed: spec.Seed, Shard: spec.Shard, Shards: spec.Shards, SampleWorkers: 1})
	if err != nil {
		t.Fatal(err)
	}
	it := l.Epoch(context.Background(), epoch)
	defer it.Close()
	var out []*batch.MiniBatch
	for it.Next() {
		b := it.Batch()
		raw, err := b.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		c := &batch.MiniBatch{}
		if err := c.UnmarshalBinary(raw); err != nil {
			t.Fatal(err)
		}
		c.Seq = b.Seq
		out = append(out, c)
		b.Release()
	}
	if it.Err() != nil {
		t.Fatal(it.Err())
	}
	return out
}

func sameBatch(t *testing.T, want, got *batch.MiniBatch) {
	t.Helper()
	if want.Seq != got.Seq {
		t.Fatalf("batch %d where %d was due", got.Seq, want.Seq)
	}
	if !slices.Equal(want.InputNodes, got.InputNodes) || len(want.Seeds) != len(got.Seeds) {
		t.Fatalf("batch %d: input nodes differ from local sampling", want.Seq)
	}
	for l := range want.Blocks {
		w, g := &want.Blocks[l], &got.Blocks[l]
		if w.NumSrc != g.NumSrc || w.NumDst != g.NumDst || !slices.Equal(w.Indptr, g.Indptr) || !slices.Equal(w.Indices, g.Indices) {
			t.Fatalf("batch %d block %d differs from local sampling", want.Seq, l)
		}
	}
	if !slices.Equal(want.Features.F32, got.Features.F32) || !slices.Equal(want.Labels, got.Labels) {
		t.Fatalf("batch %d: features or labels differ from local sampling", want.Seq)
	}
}

// source is NewSource for tests.
func source(t *testing.T, c *Client, spec EpochSpec, n int) *Source {
	t.Helper()
	s, err := NewSource(c, spec, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// logLines collects log lines from any goroutine.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) add(s string) {
	l.mu.Lock()
	l.lines = append(l.lines, s)
	l.mu.Unlock()
}

func (l *logLines) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

func goroutinesSettle(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base+3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base+3 {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines left (started with %d):\n%s", n, base, buf[:runtime.Stack(buf, true)])
	}
}

// TestStreamEqualsLocalLoader: one and three services stream exactly the
// local loader's batches (blocks, features, labels), sharded or not.
func TestStreamEqualsLocalLoader(t *testing.T) {
	d := cora(t)
	base := runtime.NumGoroutine()
	func() {
		var svcs []*service
		for i := 0; i < 3; i++ {
			svcs = append(svcs, startService(t, d, nil, nil))
		}
		for _, tc := range []struct {
			n    int
			spec EpochSpec
		}{
			{1, EpochSpec{Split: "train", Fanouts: []int{10, 5}, BatchSize: 16, Seed: 5, Shuffle: true, Features: true, Labels: true, NormalizeFeatures: true, Shards: 1}},
			{3, EpochSpec{Split: "train", Fanouts: []int{25, 10}, BatchSize: 8, Seed: 9, Shuffle: true, Features: true, Labels: true, Shards: 1}},
			{3, EpochSpec{Split: "train", Fanouts: []int{4, 4, 4}, BatchSize: 10, Seed: 2, Shuffle: true, Features: true, Labels: true, Shard: 1, Shards: 2}},
		} {
			var addrs []string
			for _, s := range svcs[:tc.n] {
				addrs = append(addrs, s.addr)
			}
			c, err := Dial(context.Background(), ClientConfig{Addrs: addrs, Credits: 2})
			if err != nil {
				t.Fatal(err)
			}
			tc.spec.Fingerprint = c.Info().Fingerprint
			src := source(t, c, tc.spec, len(d.Train))
			for epoch := 0; epoch < 2; epoch++ {
				want := localBatches(t, d, tc.spec, epoch)
				if src.NumBatches() != len(want) {
					t.Fatalf("%d batches, local loader %d", src.NumBatches(), len(want))
				}
				it := src.Epoch(context.Background(), epoch)
				i := 0
				for it.Next() {
					sameBatch(t, want[i], it.Batch())
					it.Batch().Release()
					i++
				}
				if it.Err() != nil || i != len(want) {
					t.Fatalf("%d of %d batches: %v", i, len(want), it.Err())
				}
				it.Close()
			}
			c.Close()
		}
	}()
	goroutinesSettle(t, base)
}

// TestLostSamplerMidEpoch stops one of three services after it sent a few
// frames: its unsent batches are reassigned and the epoch is still the
// local loader's, every batch exactly once.
func TestLostSamplerMidEpoch(t *testing.T) {
	d := cora(t)
	base := runtime.NumGoroutine()
	var svcs []*service
	var sent atomic.Int64
	for i := 0; i < 3; i++ {
		svcs = append(svcs, startService(t, d, nil, nil))
	}
	victim := svcs[1]
	spec := EpochSpec{Split: "train", Fanouts: []int{10, 5}, BatchSize: 4, Seed: 3, Shuffle: true, Features: true, Labels: true, Shards: 1}
	var lg logLines
	c, err := Dial(context.Background(), ClientConfig{Addrs: []string{svcs[0].addr, victim.addr, svcs[2].addr}, Credits: 2, Log: lg.add})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	src := source(t, c, spec, len(d.Train))
	want := localBatches(t, d, spec, 0)
	it := src.Epoch(context.Background(), 0)
	defer it.Close()
	i := 0
	for it.Next() {
		sameBatch(t, want[i], it.Batch())
		it.Batch().Release()
		i++
		if i == 5 {
			sent.Store(victim.s.batches.Load())
			victim.g.Stop() // connections closed: the sampler is gone
		}
	}
	if it.Err() != nil || i != len(want) {
		t.Fatalf("%d of %d batches: %v", i, len(want), it.Err())
	}
	// One line names the lost sampler, and one per survivor says which of
	// its batches it took.
	logs := lg.get()
	if len(logs) < 2 || !strings.Contains(logs[0], "sampler 1 ("+victim.addr+") lost") {
		t.Fatalf("logs %q", logs)
	}
	for _, l := range logs[1:] {
		if !strings.Contains(l, "reassigned to sampler") || strings.Contains(l, victim.addr) {
			t.Fatalf("log line %q: want the batches' new sampler", l)
		}
	}
	if c.Failovers() != 1 || src.Failovers() != 1 {
		t.Fatalf("%d failovers counted, want 1", c.Failovers())
	}
	if n := sent.Load(); n == 0 || n >= int64(len(want))/3 {
		t.Fatalf("the victim had sent %d of its ~%d batches when stopped: not mid-epoch", n, len(want)/3)
	}
	// The next epoch runs on the two survivors.
	it2 := src.Epoch(context.Background(), 1)
	defer it2.Close()
	want = localBatches(t, d, spec, 1)
	i = 0
	for it2.Next() {
		sameBatch(t, want[i], it2.Batch())
		it2.Batch().Release()
		i++
	}
	if it2.Err() != nil || i != len(want) {
		t.Fatalf("epoch 1: %d of %d batches: %v", i, len(want), it2.Err())
	}
	it.Close()
	it2.Close()
	c.Close()
	for _, s := range svcs {
		s.g.Stop()
	}
	goroutinesSettle(t, base)
}

// stalled accepts a stream and then says nothing.
type stalled struct{ *Server }

func (s stalled) Stream(st pb.Sampler_StreamServer) error {
	<-st.Context().Done()
	return st.Context().Err()
}

// TestSilentSamplerNamed: a sampler that accepts and never sends is named
// after the deadline and its batches reassigned.
func TestSilentSamplerNamed(t *testing.T) {
	d := cora(t)
	good := startService(t, d, nil, nil)
	silent := startService(t, d, nil, func(s *Server) pb.SamplerServer { return stalled{s} })
	var lg logLines
	c, err := Dial(context.Background(), ClientConfig{Addrs: []string{good.addr, silent.addr}, Deadline: 1500 * time.Millisecond, Log: lg.add})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	spec := EpochSpec{Split: "train", Fanouts: []int{5}, BatchSize: 32, Seed: 1, Features: true, Labels: true, Shards: 1}
	it := source(t, c, spec, len(d.Train)).Epoch(context.Background(), 0)
	defer it.Close()
	n := 0
	for it.Next() {
		it.Batch().Release()
		n++
	}
	if it.Err() != nil || n != spec.NumBatches(len(d.Train)) {
		t.Fatalf("%d batches: %v", n, it.Err())
	}
	// The loss, then where its batches went.
	logs := lg.get()
	if len(logs) != 2 || !strings.Contains(logs[0], silent.addr) || !strings.Contains(logs[0], "sent nothing for 1.5s") ||
		!strings.Contains(logs[1], "reassigned to sampler 0 ("+good.addr+")") {
		t.Fatalf("logs %q", logs)
	}
}

// TestDeadTrainerFreesStream: a trainer that goes away mid-epoch leaves no
// stream, no prepared frame and no goroutine on the server.
func TestDeadTrainerFreesStream(t *testing.T) {
	d := cora(t)
	base := runtime.NumGoroutine()
	svc := startService(t, d, nil, nil)
	c, err := Dial(context.Background(), ClientConfig{Addrs: []string{svc.addr}, Credits: 8})
	if err != nil {
		t.Fatal(err)
	}
	spec := EpochSpec{Split: "train", Fanouts: []int{25, 10}, BatchSize: 4, Seed: 1, Features: true, Labels: true, Shards: 1}
	it := source(t, c, spec, len(d.Train)).Epoch(context.Background(), 0)
	it.Next()
	time.Sleep(100 * time.Millisecond) // let it prepare ahead
	if n, _ := svc.s.Active(); n != 1 {
		t.Fatalf("mid-epoch: %d streams, want 1", n)
	}
	it.Close()
	c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if n, held := svc.s.Active(); n == 0 && held == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n, held := svc.s.Active(); n != 0 || held != 0 {
		t.Fatalf("after the trainer left: %d streams holding %d bytes", n, held)
	}
	svc.g.Stop()
	goroutinesSettle(t, base)
}

// TestAuthAndErrors: a wrong secret is refused with a message saying so;
// a bad request comes back with the server's error text.
func TestAuthAndErrors(t *testing.T) {
	d := cora(t)
	svc := startService(t, d, &dist.Security{Secret: []byte("right")}, nil)
	_, err := Dial(context.Background(), ClientConfig{Addrs: []string{svc.addr}, Security: &dist.Security{Secret: []byte("wrong")}, ConnectTimeout: 2 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "authentication failed (wrong secret)") {
		t.Fatalf("wrong secret: %v", err)
	}
	_, err = Dial(context.Background(), ClientConfig{Addrs: []string{svc.addr}, ConnectTimeout: 2 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "no credentials") {
		t.Fatalf("no secret: %v", err)
	}
	c, err := Dial(context.Background(), ClientConfig{Addrs: []string{svc.addr}, Security: &dist.Security{Secret: []byte("right")}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct {
		spec EpochSpec
		want string
	}{
		{EpochSpec{Split: "nope", Fanouts: []int{5}, BatchSize: 4}, `unknown split "nope"`},
		{EpochSpec{Split: "train", Fanouts: []int{0}, BatchSize: 4}, "fanout 0"},
		{EpochSpec{Split: "train", Fanouts: []int{5}, BatchSize: 4, Fingerprint: 12345}, "not the trainer's dataset"},
	} {
		it := source(t, c, tc.spec, len(d.Train)).Epoch(context.Background(), 0)
		for it.Next() {
			it.Batch().Release()
		}
		if err := it.Err(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.spec, err, tc.want)
		}
		it.Close()
	}
	// Waiting for a sampler that never comes ends after the timeout, naming it.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	t0 := time.Now()
	_, err = Dial(context.Background(), ClientConfig{Addrs: []string{addr}, ConnectTimeout: 500 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "did not answer within") || time.Since(t0) > 3*time.Second {
		t.Fatalf("absent sampler: %v after %v", err, time.Since(t0))
	}
}

// TestMutualTLS: with mutual TLS (and the secret inside it) a trainer with
// a certificate of the job's CA streams batches; one with another CA's is
// refused.
func TestMutualTLS(t *testing.T) {
	d := cora(t)
	dir := t.TempDir()
	job := testcert.WriteCA(t, dir, "job")
	other := testcert.WriteCA(t, dir, "other")
	sec := func(f testcert.Files) *dist.Security {
		return &dist.Security{Secret: []byte("s"), TLS: &dist.TLSFiles{Cert: f.Cert, Key: f.Key, CA: f.CA}}
	}
	svc := startService(t, d, sec(job), nil)
	c, err := Dial(context.Background(), ClientConfig{Addrs: []string{svc.addr}, Security: sec(job)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	spec := EpochSpec{Split: "train", Fanouts: []int{5}, BatchSize: 64, Seed: 1, Features: true, Labels: true, Shards: 1}
	it := source(t, c, spec, len(d.Train)).Epoch(context.Background(), 0)
	n := 0
	for it.Next() {
		it.Batch().Release()
		n++
	}
	it.Close()
	if it.Err() != nil || n != spec.NumBatches(len(d.Train)) {
		t.Fatalf("%d batches: %v", n, it.Err())
	}
	if _, err := Dial(context.Background(), ClientConfig{Addrs: []string{svc.addr}, Security: sec(other), ConnectTimeout: time.Second}); err == nil {
		t.Fatal("a certificate of another CA was accepted")
	}
	if _, err := Dial(context.Background(), ClientConfig{Addrs: []string{svc.addr}, Security: &dist.Security{Secret: []byte("s")}, ConnectTimeout: time.Second}); err == nil {
		t.Fatal("a client without TLS was accepted")
	}
}

// TestTrainerWaitsForSampler: a trainer that dials before its sampler
// listens waits for it (within the connect timeout).
func TestTrainerWaitsForSampler(t *testing.T) {
	d := cora(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	type res struct {
		c   *Client
		err error
	}
	done := make(chan res, 1)
	go func() {
		c, err := Dial(context.Background(), ClientConfig{Addrs: []string{addr}, ConnectTimeout: 20 * time.Second})
		done <- res{c, err}
	}()
	time.Sleep(500 * time.Millisecond)
	s, err := NewServer(ServerConfig{Dataset: d})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	g := grpc.NewServer()
	pb.RegisterSamplerServer(g, s)
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	go g.Serve(ln)
	defer g.Stop()
	r := <-done
	if r.err != nil {
		t.Fatalf("the trainer did not wait: %v", r.err)
	}
	defer r.c.Close()
	if r.c.Info().NumNodes != int64(d.Meta.NumNodes) {
		t.Fatalf("info %+v", r.c.Info())
	}
}

// TestGetRows: rows by id equal the dataset's; bad ids are refused.
func TestGetRows(t *testing.T) {
	d := cora(t)
	svc := startService(t, d, nil, nil)
	st, err := feature.Open(d, feature.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, c := range []struct {
		ids []int64
		err string
	}{
		{ids: []int64{0, 5, 2707, 5}},
		{ids: nil},
		{ids: []int64{2708}, err: "out of range"},
		{ids: []int64{-1}, err: "out of range"},
		{ids: make([]int64, maxRowsPerCall+1), err: "at most"},
	} {
		r, err := svc.s.GetRows(context.Background(), &pb.RowsRequest{Ids: c.ids})
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ids %v: err %v, want %q", c.ids[:min(len(c.ids), 4)], err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		want := make([]float32, len(c.ids)*st.Dim())
		ids := make([]int32, len(c.ids))
		for i, v := range c.ids {
			ids[i] = int32(v)
		}
		if err := st.Gather(context.Background(), ids, want); err != nil {
			t.Fatal(err)
		}
		if int(r.Dim) != st.Dim() || len(r.Rows) != 4*len(want) {
			t.Fatalf("ids %v: %d bytes of dimension %d", c.ids, len(r.Rows), r.Dim)
		}
		for i, w := range want {
			if g := math.Float32frombits(binary.LittleEndian.Uint32(r.Rows[4*i:])); g != w {
				t.Fatalf("ids %v: value %d is %v, want %v", c.ids, i, g, w)
			}
		}
	}
}

// TestGetRowsRefusesOversizedReply: a request whose reply would pass the
// message limit is refused before the rows are allocated, with the limit
// and the largest id count that fits (cora's 1433 features: 187324).
func TestGetRowsRefusesOversizedReply(t *testing.T) {
	d := cora(t)
	svc := startService(t, d, nil, nil)
	fit := int(maxRowsReplyBytes / (4 * 1433))
	if fit != 187324 {
		t.Fatalf("%d rows fit; want 187324", fit)
	}
	for _, n := range []int{fit + 1, 200_000, maxRowsPerCall} {
		ids := make([]int64, n)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := svc.s.GetRows(context.Background(), &pb.RowsRequest{Ids: ids})
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), "at most 187324 ids per call") || !strings.Contains(err.Error(), "limit of a reply") {
			t.Errorf("%d ids: got %v", n, err)
		} else if n == 200_000 {
			t.Log(err)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
			t.Errorf("%d ids: %d bytes allocated before the refusal", n, grew)
		}
	}
}

// TestBatchesOverflow: a batch size times a shard count past an int is
// an error that reports both, not a negative batch size.
func TestBatchesOverflow(t *testing.T) {
	seeds := []int32{0, 1, 2, 3}
	_, err := Batches(seeds, 4e9, 0, 4e9, false, false, 0, 0)
	if err == nil || !strings.Contains(err.Error(), "batch size 4000000000 times 4000000000 shards overflows") {
		t.Errorf("got %v", err)
	}
	d := cora(t)
	svc := startService(t, d, nil, nil)
	_, err = svc.s.plan(context.Background(), &pb.EpochRequest{Split: "train", Fanouts: []int32{5}, BatchSize: 4e9, NumShards: 4e9})
	if err == nil || !strings.Contains(err.Error(), "overflows") || strings.Contains(err.Error(), "-") {
		t.Errorf("got %v", err)
	}
	if bs, err := Batches(seeds, math.MaxInt/2, 1, 2, false, false, 0, 0); err != nil || len(bs) != 1 {
		t.Errorf("largest global batch: %v, %v", bs, err)
	}
}

// TestStreamPreparesAhead checks that a stream keeps its workers busy
// while its credits allow: credits that arrive while a batch is being
// prepared count at once. Handled one per turn of the send loop, they
// waited there, and after the first credits every batch was prepared
// alone, one worker idle.
func TestStreamPreparesAhead(t *testing.T) {
	d := cora(t)
	var running, overlapped, total atomic.Int32
	testHookEncode = func() func() {
		if running.Add(1) > 1 {
			overlapped.Add(1)
		}
		total.Add(1)
		time.Sleep(4 * time.Millisecond) // a batch that takes time to prepare
		return func() { running.Add(-1) }
	}
	t.Cleanup(func() { testHookEncode = nil })
	svc := startService(t, d, nil, nil) // two workers
	c, err := Dial(context.Background(), ClientConfig{Addrs: []string{svc.addr}, Credits: 6})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	spec := EpochSpec{Split: "train", Fanouts: []int{5, 5}, BatchSize: 4, Seed: 1, Shards: 1, Fingerprint: c.Info().Fingerprint}
	src := source(t, c, spec, len(d.Train))
	it := src.Epoch(context.Background(), 0)
	n := 0
	for it.Next() {
		it.Batch().Release()
		n++
	}
	if it.Err() != nil {
		t.Fatal(it.Err())
	}
	it.Close()
	// Both workers start a batch together except at the end and at most a
	// few times in between (the client's credit for a batch can arrive
	// just after the loop looked).
	if o, all := overlapped.Load(), total.Load(); all < int32(n) || 3*o < 2*all {
		t.Fatalf("%d of %d batch preparations ran beside another (want two thirds or more)", o, all)
	}
}

// TestStreamPyGLayout: with frontier draws, edge_index and input_labels,
// every batch also holds its edges in PyG's layout (each hop's in-edges,
// the seeds' first, as source and destination positions) and every input
// node's label; edge ids only when asked for; an edge index without
// frontier draws is refused.
func TestStreamPyGLayout(t *testing.T) {
	d := cora(t)
	svc := startService(t, d, nil, nil)
	cl := svc.rawClient(t)
	run := func(req *pb.EpochRequest) ([]*batch.MiniBatch, error) {
		st, err := cl.Stream(context.Background())
		if err != nil {
			return nil, err
		}
		defer st.CloseSend()
		if err := st.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Start{Start: req}}); err != nil {
			return nil, err
		}
		var out []*batch.MiniBatch
		for {
			fr, err := st.Recv()
			if err != nil {
				return nil, err
			}
			if fr.Kind == pb.Frame_KIND_END {
				return out, nil
			}
			if fr.Kind == pb.Frame_KIND_BATCH {
				mb := &batch.MiniBatch{}
				if err := mb.UnmarshalBinary(fr.Minibatch); err != nil {
					return nil, err
				}
				out = append(out, mb)
			}
		}
	}
	req := &pb.EpochRequest{Split: "train", Fanouts: []int32{4, 3}, BatchSize: 32, Seed: 3, NumShards: 1, InitialCredits: 100,
		Frontier: true, EdgeIndex: true, InputLabels: true}
	got, err := run(req)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != (len(d.Train)+31)/32 {
		t.Fatalf("%d batches", len(got))
	}
	for i, mb := range got {
		if mb.Labels != nil {
			t.Errorf("batch %d has the seeds' labels, which were not asked for", i)
		}
		for k, v := range mb.InputNodes {
			if mb.InputLabels[k] != int64(d.Labels[v]) {
				t.Fatalf("batch %d: input node %d has label %d, the dataset %d", i, v, mb.InputLabels[k], d.Labels[v])
			}
		}
		// Rebuilt from the blocks as graphmill.NeighborLoader did: each
		// hop's destinations are those past the previous hop's.
		L, e := len(mb.Blocks), mb.NumEdges()
		var src, dst []int64
		for h := 0; h < L; h++ {
			b := &mb.Blocks[L-1-h]
			first := 0
			if h > 0 {
				first = mb.Blocks[L-h].NumDst
			}
			for v := first; v < b.NumDst; v++ {
				for k := b.Indptr[v]; k < b.Indptr[v+1]; k++ {
					src, dst = append(src, int64(b.Indices[k])), append(dst, int64(v))
				}
			}
		}
		if len(src) != e || !slices.Equal(mb.EdgeIndex[:e], src) || !slices.Equal(mb.EdgeIndex[e:], dst) {
			t.Fatalf("batch %d: edge index differs from the blocks' edges by hop (%d edges listed, %d in the blocks)", i, len(src), e)
		}
		for l := range mb.Blocks {
			if mb.Blocks[l].EdgeIDs != nil {
				t.Fatalf("batch %d block %d has edge ids, which were not asked for", i, l)
			}
		}
	}
	// Asked for, every edge's id is its position in the dataset's CSC:
	// the in-edge of its destination from its source.
	req.EdgeIds = true
	got, err = run(req)
	if err != nil {
		t.Fatal(err)
	}
	g := d.Graph
	for i, mb := range got {
		for l := range mb.Blocks {
			b := &mb.Blocks[l]
			if len(b.EdgeIDs) != len(b.Indices) {
				t.Fatalf("batch %d block %d: %d edge ids for %d edges", i, l, len(b.EdgeIDs), len(b.Indices))
			}
			for v := 0; v < b.NumDst; v++ {
				gv := mb.InputNodes[v]
				for k := b.Indptr[v]; k < b.Indptr[v+1]; k++ {
					p := b.EdgeIDs[k]
					if p < g.Indptr[gv] || p >= g.Indptr[gv+1] || int64(g.Indices[p]) != mb.InputNodes[b.Indices[k]] {
						t.Fatalf("batch %d block %d: edge %d (%d -> %d) has id %d, not one of its in-edges", i, l, k, mb.InputNodes[b.Indices[k]], gv, p)
					}
				}
			}
		}
	}
	req.Frontier = false
	if _, err := run(req); err == nil || !strings.Contains(err.Error(), "needs frontier draws") {
		t.Fatalf("edge index without frontier draws: %v", err)
	}
}

// TestCreditWhileWaiting: a credit that comes in while the stream waits for
// its next batch starts the batch it allows at once, beside the one being
// prepared (the stream once saw credits only between batches, and a
// worker sat idle).
func TestCreditWhileWaiting(t *testing.T) {
	d := cora(t)
	release := make(chan struct{})
	var started atomic.Int32
	second := make(chan struct{})
	testHookEncode = func() func() {
		switch started.Add(1) {
		case 1:
			<-release // the first batch takes until the second has started
		case 2:
			close(second)
		}
		return func() {}
	}
	t.Cleanup(func() { testHookEncode = nil })
	svc := startService(t, d, nil, nil) // two workers
	st, err := svc.rawClient(t).Stream(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer st.CloseSend()
	req := &pb.EpochRequest{Split: "train", Fanouts: []int32{5, 5}, BatchSize: 16, Seed: 1, NumShards: 1, InitialCredits: 1}
	if err := st.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Start{Start: req}}); err != nil {
		t.Fatal(err)
	}
	for started.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := st.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Credit{Credit: &pb.Credit{Frames: 1}}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-second:
	case <-time.After(5 * time.Second):
		close(release)
		t.Fatal("the credit that came while batch 0 was prepared did not start batch 1")
	}
	close(release)
	for n := 0; n < 2; {
		fr, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if fr.Kind == pb.Frame_KIND_BATCH {
			if fr.Batch != uint32(n) {
				t.Fatalf("batch %d sent where %d was due", fr.Batch, n)
			}
			n++
		}
	}
}

// TestBadAddressRefusedAtOnce: an address without a valid port is an
// error before dialling, not after the whole connect timeout.
func TestBadAddressRefusedAtOnce(t *testing.T) {
	for _, a := range []string{"127.0.0.1:99999", "127.0.0.1:-5", "127.0.0.1:0", "127.0.0.1:nosuchservice", "nohost"} {
		start := time.Now()
		_, err := Dial(context.Background(), ClientConfig{Addrs: []string{a}, ConnectTimeout: time.Minute})
		if err == nil || !strings.Contains(err.Error(), a) || time.Since(start) > 5*time.Second {
			t.Errorf("%s: %v after %v", a, err, time.Since(start))
		}
	}
}
