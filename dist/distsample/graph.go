// Package distsample is distributed neighbour sampling over a partitioned
// dataset (DistDGL's DistGraph and DistNeighborSampler, SAR's
// DistNeighborSampler): every rank owns one part (its nodes' in-edges and
// feature rows, plus copies of its halo's rows), and a minibatch sampled
// on one rank reaches into the other parts for the neighbours and feature
// rows of the nodes they own.
//
//	g, err := distsample.Open(ctx, comm, dir, distsample.Options{Fanouts: []int{25, 10}, Features: src})
//	defer g.Close(ctx)
//	err = g.Sample(ctx, &assembler, mb, seeds, sample.EpochKey(seed, epoch)) // seeds: global ids
//	ids, _ := mb.Local()
//	err = g.Gather(ctx, ids, rows)
//
// Per hop, the frontier's nodes are grouped by owner; one request per
// remote owner is sent before the rank draws its own nodes' neighbours,
// and the owners answer concurrently (each rank serves its peers from one
// goroutine per peer). Feature rows likewise: halo copies already in the
// part are read locally, rows in the remote-row cache (Options.CacheBytes,
// filled by Presample with the remote rows sampling touches most) are
// copied, and the rest come in one request per owner.
//
// Draws are keyed by (key, hop, global node id) (package sample), and each
// part's in-neighbour lists are put in the whole graph's order (by global
// id) when it is opened, so a minibatch sampled here equals, block for
// block, the one a single process sampling the unpartitioned graph draws
// for the same seeds (Sample's test checks it).
//
// The protocol runs on dist.Comm's tagged point-to-point messages
// (TagRequest, TagReply), which the pure-Go TCP backend allows from
// several goroutines at once while collectives run; a Graph must be closed
// on every rank (Close waits at a barrier, so no rank stops serving while
// another may still ask it).
package distsample

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/graphmill/graphmill/batch"
	"github.com/graphmill/graphmill/dataset/parts"
	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/feature"
	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/npy"
	"github.com/graphmill/graphmill/sample"
)

// The point-to-point tags the protocol uses.
const (
	TagRequest uint32 = 0x6d730001
	TagReply   uint32 = 0x6d730002
)

// Request kinds.
const (
	kindSample byte = 1
	kindGather byte = 2
)

// Options configures a Graph.
type Options struct {
	// Fanouts per hop from the seeds (as sample.Config.Fanouts). Every
	// rank must give the same.
	Fanouts []int
	// Features is this rank's part's feature source (inner and halo rows,
	// local ids), e.g. a feature.Store over the part normalised as the run
	// wants; nil samples without features (Gather fails).
	Features feature.Source
	// CacheBytes is the budget of the remote-row cache (0: none), filled
	// by Presample.
	CacheBytes int64
}

// Stats counts the traffic of a Graph's minibatches so far.
type Stats struct {
	// Batches sampled; Requests sent to other ranks (sampling and feature
	// requests); RequestBytes and ReplyBytes on the wire.
	Batches, SampleRequests, GatherRequests int64
	RequestBytes, ReplyBytes                int64
	// Rows gathered: local (own or halo), from the cache, from other ranks.
	LocalRows, CachedRows, RemoteRows int64
	// RemoteFeatureBytes is the bytes of feature rows fetched from other
	// ranks.
	RemoteFeatureBytes int64
	// CachedNodes is the number of remote rows the cache holds.
	CachedNodes int
}

// CacheHitRate returns the fraction of the rows owned by other ranks
// (not halo copies) that the cache served.
func (s Stats) CacheHitRate() float64 {
	if s.CachedRows+s.RemoteRows == 0 {
		return 0
	}
	return float64(s.CachedRows) / float64(s.CachedRows+s.RemoteRows)
}

// Graph is one rank's view of a partitioned graph: its own part, and the
// other parts through their ranks.
type Graph struct {
	comm       dist.Comm
	rank, size int
	book       *parts.Book
	part       *parts.Part
	partOf     []int32 // global id -> owning part
	newIDs     []int32 // global id -> reordered id
	start      []int32 // first reordered id of each part
	halo       []int32 // global ids of the halo, increasing (local id = inner + index)
	inner      int
	local      *sample.Sampler // the part's graph, lists in global order, keyed by global id
	feat       feature.Source
	dim        int
	fanouts    []int
	cacheBytes int64

	cacheMu   sync.RWMutex
	cacheIdx  map[int32]int32 // global id -> row in cacheRows
	cacheRows []float32

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	nextID atomic.Uint32
	mu     sync.Mutex
	wait   map[uint32]chan []byte
	failMu sync.Mutex
	failed error

	st struct {
		batches, sreq, greq, reqB, repB, local, cached, remote, remoteB atomic.Int64
	}
}

// Open opens part comm.Rank() of the partitioned dataset in dir (the
// group must have one rank per part) and starts serving the other ranks.
// Every rank must call it.
func Open(ctx context.Context, comm dist.Comm, dir string, o Options) (_ *Graph, err error) {
	book, err := parts.ReadBook(dir)
	if err != nil {
		return nil, err
	}
	if book.NumParts != comm.Size() {
		return nil, fmt.Errorf("distsample: %s has %d parts for %d ranks; run one rank per part (graphmill partition --parts %d)", dir, book.NumParts, comm.Size(), comm.Size())
	}
	if err := sample.CheckFanouts(o.Fanouts); err != nil {
		return nil, err
	}
	p, err := parts.OpenPart(dir, book, comm.Rank())
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	if p.NumInner() == 0 {
		return nil, fmt.Errorf("distsample: part %d of %s owns no nodes", p.Index, dir)
	}
	g := &Graph{comm: comm, rank: comm.Rank(), size: comm.Size(), book: book, part: p, inner: p.NumInner(),
		fanouts: slices.Clone(o.Fanouts), feat: o.Features, cacheBytes: o.CacheBytes, wait: map[uint32]chan []byte{}}
	if o.Features != nil {
		if o.Features.NumRows() != p.NumLocal() {
			return nil, fmt.Errorf("distsample: feature source has %d rows for part %d's %d local nodes", o.Features.NumRows(), p.Index, p.NumLocal())
		}
		g.dim = o.Features.Dim()
	}
	readTop := func(name string) ([]int32, error) {
		file := book.Arrays[name]
		if file == "" {
			file = name + ".npy"
		}
		path := filepath.Join(dir, file)
		a, _, err := npy.ReadFile[int32](path)
		if err != nil {
			return nil, fmt.Errorf("distsample: %w", err)
		}
		if len(a) != book.NumNodes {
			return nil, fmt.Errorf("distsample: %s has %d values for %d nodes", path, len(a), book.NumNodes)
		}
		return a, nil
	}
	if g.partOf, err = readTop(parts.ArrayPartIDs); err != nil {
		return nil, err
	}
	if g.newIDs, err = readTop(parts.ArrayNewIDs); err != nil {
		return nil, err
	}
	for v, q := range g.partOf {
		if q < 0 || int(q) >= book.NumParts {
			return nil, fmt.Errorf("distsample: node %d is in part %d of %d", v, q, book.NumParts)
		}
		r := int64(g.newIDs[v])
		if rg := book.Parts[q].NodeRange; r < rg[0] || r >= rg[1] {
			return nil, fmt.Errorf("distsample: node %d has reordered id %d outside part %d's range %v", v, r, q, rg)
		}
	}
	g.start = make([]int32, book.NumParts)
	for q := range book.Parts {
		g.start[q] = int32(book.Parts[q].NodeRange[0])
	}
	g.halo = p.GlobalIDs[g.inner:]
	if !slices.IsSorted(g.halo) {
		return nil, fmt.Errorf("distsample: part %d's halo is not in increasing global id order", p.Index)
	}
	lg, err := globalOrder(p)
	if err != nil {
		return nil, err
	}
	if g.local, err = sample.New(lg, sample.Config{Fanouts: o.Fanouts, KeyIDs: p.GlobalIDs}); err != nil {
		return nil, err
	}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	for q := 0; q < g.size; q++ {
		if q == g.rank {
			continue
		}
		g.wg.Add(2)
		go g.serve(q)
		go g.dispatch(q)
	}
	return g, nil
}

// globalOrder returns the part's graph with every in-neighbour list sorted
// by global id (the whole graph's order), so that keyed draws pick the
// neighbours the whole graph's sampler picks.
func globalOrder(p *parts.Part) (*graph.CSC, error) {
	src := p.Graph
	g := &graph.CSC{NumNodes: src.NumNodes, Indptr: src.Indptr, Indices: slices.Clone(src.Indices)}
	gid := p.GlobalIDs
	var keys []uint64
	for v := 0; v < src.NumNodes; v++ {
		l := g.Indices[g.Indptr[v]:g.Indptr[v+1]]
		keys = keys[:0]
		sorted := true
		for i, u := range l {
			if u < 0 || int(u) >= len(gid) {
				return nil, fmt.Errorf("distsample: part %d: node %d has in-neighbour %d outside its %d local nodes", p.Index, v, u, len(gid))
			}
			keys = append(keys, uint64(uint32(gid[u]))<<32|uint64(uint32(u)))
			if i > 0 && keys[i] < keys[i-1] {
				sorted = false
			}
		}
		if !sorted {
			slices.Sort(keys)
			for i, k := range keys {
				l[i] = int32(uint32(k))
			}
		}
	}
	return g, nil
}

// Part returns the rank's open part.
func (g *Graph) Part() *parts.Part { return g.part }

// Book returns the partitioned dataset's book.
func (g *Graph) Book() *parts.Book { return g.book }

// Owner returns the part owning global node v.
func (g *Graph) Owner(v int32) int { return int(g.partOf[v]) }

// LocalID returns v's local id in its owning part.
func (g *Graph) LocalID(v int32) int32 { return g.newIDs[v] - g.start[g.partOf[v]] }

// Fanouts returns the fanouts the Graph samples with.
func (g *Graph) Fanouts() []int { return slices.Clone(g.fanouts) }

// Stats returns the traffic so far.
func (g *Graph) Stats() Stats {
	g.cacheMu.RLock()
	n := len(g.cacheIdx)
	g.cacheMu.RUnlock()
	return Stats{
		Batches: g.st.batches.Load(), SampleRequests: g.st.sreq.Load(), GatherRequests: g.st.greq.Load(),
		RequestBytes: g.st.reqB.Load(), ReplyBytes: g.st.repB.Load(),
		LocalRows: g.st.local.Load(), CachedRows: g.st.cached.Load(), RemoteRows: g.st.remote.Load(),
		RemoteFeatureBytes: g.st.remoteB.Load(), CachedNodes: n,
	}
}

// Close waits until every rank has closed (a barrier: no rank stops
// serving while another may still ask it), then stops serving and closes
// the part.
func (g *Graph) Close(ctx context.Context) error {
	err := g.comm.Barrier(ctx)
	g.cancel()
	g.wg.Wait()
	g.part.Close()
	return err
}

// Abort stops serving and closes the part without waiting for the other
// ranks (after an error, when the group is broken anyway).
func (g *Graph) Abort() {
	g.cancel()
	g.wg.Wait()
	g.part.Close()
}

// fail records the first transport error and wakes every waiter.
func (g *Graph) fail(err error) {
	g.failMu.Lock()
	if g.failed == nil {
		g.failed = err
	}
	g.failMu.Unlock()
	g.mu.Lock()
	for id, ch := range g.wait {
		close(ch)
		delete(g.wait, id)
	}
	g.mu.Unlock()
}

func (g *Graph) err() error {
	g.failMu.Lock()
	defer g.failMu.Unlock()
	return g.failed
}

// recvLoop receives messages from peer under tag until the Graph closes,
// retrying the backend's idle timeouts (a peer may not ask anything for a
// long time, e.g. during evaluation).
func (g *Graph) recvLoop(peer int, tag uint32, handle func([]byte) error) {
	for {
		b, err := g.comm.Recv(g.ctx, peer, tag)
		if g.ctx.Err() != nil {
			return
		}
		if err != nil {
			if e, ok := g.comm.(interface{ Err() error }); ok && e.Err() == nil {
				continue // an idle timeout; the group is fine
			}
			g.fail(fmt.Errorf("distsample: rank %d: %w", peer, err))
			return
		}
		if err := handle(b); err != nil {
			g.fail(err)
			return
		}
	}
}

// dispatch routes peer's replies to the calls waiting for them.
func (g *Graph) dispatch(peer int) {
	defer g.wg.Done()
	g.recvLoop(peer, TagReply, func(b []byte) error {
		if len(b) < 4 {
			return fmt.Errorf("distsample: short reply (%d bytes) from rank %d", len(b), peer)
		}
		id := binary.LittleEndian.Uint32(b)
		g.mu.Lock()
		ch := g.wait[id]
		delete(g.wait, id)
		g.mu.Unlock()
		if ch == nil {
			return fmt.Errorf("distsample: reply %d from rank %d answers no request", id, peer)
		}
		g.st.repB.Add(int64(len(b)))
		ch <- b[4:]
		return nil
	})
}

// call sends a request to peer and returns the channel its reply arrives
// on (closed if the transport fails).
func (g *Graph) call(ctx context.Context, peer int, req []byte) (chan []byte, error) {
	if err := g.err(); err != nil {
		return nil, err
	}
	id := g.nextID.Add(1)
	binary.LittleEndian.PutUint32(req[4:], id)
	ch := make(chan []byte, 1)
	g.mu.Lock()
	g.wait[id] = ch
	g.mu.Unlock()
	g.st.reqB.Add(int64(len(req)))
	if err := g.comm.Send(ctx, peer, TagRequest, req); err != nil {
		g.mu.Lock()
		delete(g.wait, id)
		g.mu.Unlock()
		return nil, fmt.Errorf("distsample: request to rank %d: %w", peer, err)
	}
	return ch, nil
}

// await waits for a reply.
func (g *Graph) await(ctx context.Context, peer int, ch chan []byte) ([]byte, error) {
	select {
	case b, ok := <-ch:
		if !ok {
			return nil, g.err()
		}
		return b, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// A request is: kind (1 byte), hop (1 byte), fanout (int16), id (4
// bytes), key (8 bytes), n (4 bytes), n owner-local node ids (4 bytes
// each), all little-endian.
const reqHeader = 20

func newRequest(kind byte, hop, fanout int, key uint64, ids []int32) []byte {
	b := make([]byte, reqHeader+4*len(ids))
	b[0], b[1] = kind, byte(hop)
	binary.LittleEndian.PutUint16(b[2:], uint16(int16(fanout)))
	binary.LittleEndian.PutUint64(b[8:], key)
	binary.LittleEndian.PutUint32(b[16:], uint32(len(ids)))
	for i, v := range ids {
		binary.LittleEndian.PutUint32(b[reqHeader+4*i:], uint32(v))
	}
	return b
}

// serveWorkers is the number of requests of one peer answered at once
// (its sampling workers may have several in flight).
const serveWorkers = 2

// serve answers peer's requests, serveWorkers at a time (replies carry
// their request's id, so their order does not matter).
func (g *Graph) serve(peer int) {
	defer g.wg.Done()
	reqs := make(chan []byte, 2*serveWorkers)
	var wg sync.WaitGroup
	for w := 0; w < serveWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var sc serveScratch
			for b := range reqs {
				if err := g.answer(peer, b, &sc); err != nil {
					g.fail(err)
				}
			}
		}()
	}
	g.recvLoop(peer, TagRequest, func(b []byte) error {
		select {
		case reqs <- b:
		case <-g.ctx.Done():
		}
		return nil
	})
	close(reqs)
	wg.Wait()
}

// serveScratch is one serving goroutine's reused buffers.
type serveScratch struct {
	counts, srcs []int32
	rows         []float32
}

// answer answers one request of peer.
func (g *Graph) answer(peer int, b []byte, sc *serveScratch) error {
	if len(b) < reqHeader {
		return fmt.Errorf("distsample: short request (%d bytes) from rank %d", len(b), peer)
	}
	kind, hop, fanout := b[0], int(b[1]), int(int16(binary.LittleEndian.Uint16(b[2:])))
	id := binary.LittleEndian.Uint32(b[4:])
	key := binary.LittleEndian.Uint64(b[8:])
	n := int(binary.LittleEndian.Uint32(b[16:]))
	if len(b) != reqHeader+4*n {
		return fmt.Errorf("distsample: request from rank %d has %d bytes for %d nodes", peer, len(b), n)
	}
	ids := make([]int32, n)
	for i := range ids {
		v := int32(binary.LittleEndian.Uint32(b[reqHeader+4*i:]))
		if v < 0 || int(v) >= g.inner {
			return fmt.Errorf("distsample: rank %d asked for local node %d; part %d owns %d", peer, v, g.rank, g.inner)
		}
		ids[i] = v
	}
	var reply []byte
	switch kind {
	case kindSample:
		if cap(sc.counts) < n {
			sc.counts = make([]int32, n)
		}
		sc.counts = sc.counts[:n]
		var err error
		sc.srcs, err = g.local.Neighbors(ids, key, hop, fanout, sc.counts, sc.srcs[:0])
		if err != nil {
			return fmt.Errorf("distsample: sampling for rank %d: %w", peer, err)
		}
		reply = make([]byte, 4+4*(n+len(sc.srcs)))
		for i, c := range sc.counts {
			binary.LittleEndian.PutUint32(reply[4+4*i:], uint32(c))
		}
		o := 4 + 4*n
		gid := g.part.GlobalIDs
		for i, u := range sc.srcs {
			binary.LittleEndian.PutUint32(reply[o+4*i:], uint32(gid[u]))
		}
	case kindGather:
		if g.feat == nil {
			return fmt.Errorf("distsample: rank %d asked for feature rows; this rank serves none", peer)
		}
		sc.rows = slices.Grow(sc.rows[:0], n*g.dim)[:n*g.dim]
		if err := g.feat.Gather(g.ctx, ids, sc.rows); err != nil {
			return fmt.Errorf("distsample: rows for rank %d: %w", peer, err)
		}
		reply = make([]byte, 4+4*len(sc.rows))
		for i, x := range sc.rows {
			binary.LittleEndian.PutUint32(reply[4+4*i:], math.Float32bits(x))
		}
	default:
		return fmt.Errorf("distsample: unknown request kind %d from rank %d", kind, peer)
	}
	binary.LittleEndian.PutUint32(reply, id)
	if err := g.comm.Send(g.ctx, peer, TagReply, reply); err != nil {
		return fmt.Errorf("distsample: reply to rank %d: %w", peer, err)
	}
	return nil
}

// localPool holds Gather's scratch id arrays.
var localPool = sync.Pool{New: func() any { return new([]int32) }}

// errClosed is returned by calls on a closed Graph.
var errClosed = errors.New("distsample: closed")

// Sample assembles the minibatch of seeds (global ids, distinct) keyed by
// key into mb: the same blocks and input nodes (global ids) that a
// sample.Sampler over the whole graph draws with the same fanouts and key
// (EdgeIDs aside, which it leaves nil).
func (g *Graph) Sample(ctx context.Context, a *sample.Assembler, mb *batch.MiniBatch, seeds []int32, key uint64) error {
	return g.SampleFanouts(ctx, a, mb, seeds, key, g.fanouts)
}

// SampleFanouts is Sample with other fanouts (evaluation samples every
// neighbour: fanouts of -1). Fanouts above 32767 are not supported.
func (g *Graph) SampleFanouts(ctx context.Context, a *sample.Assembler, mb *batch.MiniBatch, seeds []int32, key uint64, fanouts []int) error {
	if err := sample.CheckFanouts(fanouts); err != nil {
		return err
	}
	for _, k := range fanouts {
		if k > math.MaxInt16 {
			return fmt.Errorf("distsample: fanout %d above %d", k, math.MaxInt16)
		}
	}
	if len(fanouts) > 255 {
		return fmt.Errorf("distsample: %d hops", len(fanouts))
	}
	if g.ctx.Err() != nil {
		return errClosed
	}
	n := int32(len(g.partOf))
	for i, v := range seeds {
		if v < 0 || v >= n {
			return fmt.Errorf("distsample: seed %d (index %d) is not a node id in [0, %d)", v, i, n)
		}
	}
	a.NumNodes = int(n) // relabel as a Sampler over the whole graph does
	if err := a.Begin(mb, seeds, len(fanouts)); err != nil {
		return err
	}
	type group struct {
		pos    []int32 // positions in the frontier
		ids    []int32 // owner-local ids
		counts []int32
		srcs   []int32
		ch     chan []byte
	}
	groups := make([]group, g.size)
	var counts, srcs []int32
	for h, k := range fanouts {
		dst := a.Frontier()
		for q := range groups {
			groups[q].pos, groups[q].ids = groups[q].pos[:0], groups[q].ids[:0]
		}
		for i, v := range dst {
			q := g.partOf[v]
			gr := &groups[q]
			gr.pos = append(gr.pos, int32(i))
			gr.ids = append(gr.ids, g.newIDs[v]-g.start[q])
		}
		// Remote requests first, then the local draws while they travel.
		for q := range groups {
			gr := &groups[q]
			gr.ch = nil
			if q == g.rank || len(gr.ids) == 0 {
				continue
			}
			ch, err := g.call(ctx, q, newRequest(kindSample, h, k, key, gr.ids))
			if err != nil {
				return err
			}
			gr.ch = ch
			g.st.sreq.Add(1)
		}
		own := &groups[g.rank]
		if len(own.ids) > 0 {
			own.counts = slices.Grow(own.counts[:0], len(own.ids))[:len(own.ids)]
			var err error
			own.srcs, err = g.local.Neighbors(own.ids, key, h, k, own.counts, own.srcs[:0])
			if err != nil {
				return err
			}
			gid := g.part.GlobalIDs
			for i, u := range own.srcs {
				own.srcs[i] = gid[u]
			}
		}
		for q := range groups {
			gr := &groups[q]
			if gr.ch == nil {
				continue
			}
			b, err := g.await(ctx, q, gr.ch)
			if err != nil {
				return err
			}
			m := len(gr.ids)
			if len(b) < 4*m || len(b)%4 != 0 {
				return fmt.Errorf("distsample: rank %d's reply has %d bytes for %d nodes", q, len(b), m)
			}
			gr.counts = slices.Grow(gr.counts[:0], m)[:m]
			total := 0
			for i := range gr.counts {
				c := int32(binary.LittleEndian.Uint32(b[4*i:]))
				gr.counts[i] = c
				total += int(c)
			}
			if len(b) != 4*(m+total) {
				return fmt.Errorf("distsample: rank %d's reply has %d bytes for %d nodes and %d neighbours", q, len(b), m, total)
			}
			gr.srcs = slices.Grow(gr.srcs[:0], total)[:total]
			for i := range gr.srcs {
				gr.srcs[i] = int32(binary.LittleEndian.Uint32(b[4*(m+i):]))
			}
		}
		// Merge the owners' draws back into frontier order.
		counts = slices.Grow(counts[:0], len(dst))[:len(dst)]
		for q := range groups {
			gr := &groups[q]
			for j, p := range gr.pos {
				counts[p] = gr.counts[j]
			}
		}
		off := make([]int, g.size)
		srcs = srcs[:0]
		for i, v := range dst {
			q := g.partOf[v]
			c := int(counts[i])
			srcs = append(srcs, groups[q].srcs[off[q]:off[q]+c]...)
			off[q] += c
		}
		if err := a.AddHop(counts, srcs); err != nil {
			return err
		}
	}
	g.st.batches.Add(1)
	return a.Finish()
}

// Gather copies the feature rows of global nodes ids into out (row-major,
// len(ids) × dim): own and halo rows from the part, cached remote rows
// from the cache, the rest from their owners (one request per owner, sent
// before the local rows are read).
func (g *Graph) Gather(ctx context.Context, ids []int32, out []float32) error {
	if g.feat == nil {
		return errors.New("distsample: no feature source")
	}
	if len(out) != len(ids)*g.dim {
		return fmt.Errorf("distsample: output holds %d values for %d rows of %d", len(out), len(ids), g.dim)
	}
	type group struct {
		pos, ids []int32
		ch       chan []byte
	}
	groups := make([]group, g.size)
	// Every row is gathered from the part in one pass, straight into out:
	// own and halo rows by their local ids, the others (cached or remote)
	// as a placeholder row that is overwritten below.
	lp := localPool.Get().(*[]int32)
	local := slices.Grow((*lp)[:0], len(ids))[:len(ids)]
	defer func() { *lp = local; localPool.Put(lp) }()
	nLocal, cached := 0, int64(0)
	type fill struct{ pos, row int32 }
	var fromCache []fill
	g.cacheMu.RLock()
	for i, v := range ids {
		if v < 0 || int(v) >= len(g.partOf) {
			g.cacheMu.RUnlock()
			return fmt.Errorf("distsample: node %d (index %d) is not a node id in [0, %d)", v, i, len(g.partOf))
		}
		q := int(g.partOf[v])
		if q == g.rank {
			local[i] = g.newIDs[v] - g.start[q]
			nLocal++
			continue
		}
		if j, ok := slices.BinarySearch(g.halo, v); ok {
			local[i] = int32(g.inner + j)
			nLocal++
			continue
		}
		local[i] = 0
		if r, ok := g.cacheIdx[v]; ok {
			fromCache = append(fromCache, fill{int32(i), r})
			continue
		}
		gr := &groups[q]
		gr.pos, gr.ids = append(gr.pos, int32(i)), append(gr.ids, g.newIDs[v]-g.start[q])
	}
	for q := range groups {
		gr := &groups[q]
		if len(gr.ids) == 0 {
			continue
		}
		ch, err := g.call(ctx, q, newRequest(kindGather, 0, 0, 0, gr.ids))
		if err != nil {
			g.cacheMu.RUnlock()
			return err
		}
		gr.ch = ch
		g.st.greq.Add(1)
	}
	if err := g.feat.Gather(ctx, local, out); err != nil {
		g.cacheMu.RUnlock()
		return err
	}
	for _, f := range fromCache {
		copy(out[int(f.pos)*g.dim:(int(f.pos)+1)*g.dim], g.cacheRows[int(f.row)*g.dim:(int(f.row)+1)*g.dim])
		cached++
	}
	g.cacheMu.RUnlock()
	remote := int64(0)
	for q := range groups {
		gr := &groups[q]
		if gr.ch == nil {
			continue
		}
		b, err := g.await(ctx, q, gr.ch)
		if err != nil {
			return err
		}
		if len(b) != 4*len(gr.ids)*g.dim {
			return fmt.Errorf("distsample: rank %d sent %d bytes for %d rows of %d", q, len(b), len(gr.ids), g.dim)
		}
		for j, p := range gr.pos {
			row := out[int(p)*g.dim : (int(p)+1)*g.dim]
			src := b[4*j*g.dim:]
			for k := range row {
				row[k] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*k:]))
			}
		}
		remote += int64(len(gr.ids))
		g.st.remoteB.Add(int64(len(b)))
	}
	g.st.local.Add(int64(nLocal))
	g.st.cached.Add(cached)
	g.st.remote.Add(remote)
	return nil
}

// Presample fills the remote-row cache: it samples the given batches (as
// an epoch keyed by key would), counts how often each remote node that is
// not a halo copy is an input node, and fetches the rows of the most
// frequent ones that fit in Options.CacheBytes. Features are static, so
// the cache is never refreshed. It returns the number of rows cached, and
// zeroes the traffic counters (presampling is not minibatch traffic).
func (g *Graph) Presample(ctx context.Context, batches [][]int32, key uint64) (int, error) {
	if g.cacheBytes <= 0 || g.feat == nil || g.dim == 0 {
		return 0, nil
	}
	counts := map[int32]int32{}
	var a sample.Assembler
	var mb batch.MiniBatch
	for _, b := range batches {
		if err := g.Sample(ctx, &a, &mb, b, key); err != nil {
			return 0, err
		}
		for _, u := range mb.InputNodes {
			v := int32(u)
			if int(g.partOf[v]) == g.rank {
				continue
			}
			if _, ok := slices.BinarySearch(g.halo, v); ok {
				continue
			}
			counts[v]++
		}
	}
	g.st.batches.Add(-int64(len(batches)))
	type nc struct {
		v int32
		c int32
	}
	cand := make([]nc, 0, len(counts))
	for v, c := range counts {
		cand = append(cand, nc{v, c})
	}
	slices.SortFunc(cand, func(x, y nc) int {
		if x.c != y.c {
			return int(y.c - x.c)
		}
		return int(x.v - y.v)
	})
	rows := int(g.cacheBytes / int64(4*g.dim))
	if rows < len(cand) {
		cand = cand[:rows]
	}
	ids := make([]int32, len(cand))
	for i, x := range cand {
		ids[i] = x.v
	}
	slices.Sort(ids)
	data := make([]float32, len(ids)*g.dim)
	if err := g.Gather(ctx, ids, data); err != nil {
		return 0, err
	}
	g.ResetStats() // the presampling traffic is not minibatch traffic
	idx := make(map[int32]int32, len(ids))
	for i, v := range ids {
		idx[v] = int32(i)
	}
	g.cacheMu.Lock()
	g.cacheIdx, g.cacheRows = idx, data
	g.cacheMu.Unlock()
	return len(ids), nil
}

// counters returns the traffic counters, in ResetStats's order.
func (g *Graph) counters() []*atomic.Int64 {
	return []*atomic.Int64{&g.st.batches, &g.st.sreq, &g.st.greq, &g.st.reqB, &g.st.repB, &g.st.local, &g.st.cached, &g.st.remote, &g.st.remoteB}
}

// saveStats and restoreStats keep evaluation's traffic out of the
// minibatch figures.
func (g *Graph) saveStats() []int64 {
	var v []int64
	for _, c := range g.counters() {
		v = append(v, c.Load())
	}
	return v
}

func (g *Graph) restoreStats(v []int64) {
	for i, c := range g.counters() {
		c.Store(v[i])
	}
}

// ResetStats zeroes the traffic counters.
func (g *Graph) ResetStats() {
	for _, c := range g.counters() {
		c.Store(0)
	}
}
