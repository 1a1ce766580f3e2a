package dist

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Options configure the pure-Go TCP backend.
type Options struct {
	// Security authenticates every connection (required: a secret).
	Security *Security
	// Bind is the local IP address this rank listens on and advertises
	// to the others (--bind, or the address of --iface). Default: the
	// address this machine uses to reach the master.
	Bind string
	// RendezvousTimeout bounds the wait for every rank to arrive
	// (0: the default, 2 minutes; Join refuses a negative one, as it
	// does for the two timeouts below).
	RendezvousTimeout time.Duration
	// OpTimeout bounds every collective and receive (0: the default, 10
	// minutes).
	OpTimeout time.Duration
	// PeerTimeout is the silence after which a peer is declared gone:
	// ranks send heartbeats every PeerTimeout/4 (0: the default, 4 s).
	PeerTimeout time.Duration
	// ChunkBytes is the ring's pipelining unit (default 256 KiB).
	ChunkBytes int
	// SmallBytes is the size up to which latency-optimal algorithms run
	// (default 64 KiB).
	SmallBytes int
	// NoSharedMemory keeps every collective on TCP even when all ranks
	// share a host (Join also honours GRAPHMILL_DIST_SHM=0).
	NoSharedMemory bool
	// ShmSlotBytes is the shared-memory transport's step size per rank
	// (default 1 MiB; the segment holds two slots per rank).
	ShmSlotBytes int
	// ShmRingBytes is the size of the shared-memory ring each ordered
	// pair of ranks sends point-to-point messages through (default
	// 256 KiB; larger messages stream through it).
	ShmRingBytes int
}

// ShmEnv is the environment variable that, set to 0, turns the
// shared-memory transport off in Join.
const ShmEnv = "GRAPHMILL_DIST_SHM"

// check refuses negative timeouts (zero means the default).
func (o *Options) check() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"RendezvousTimeout", o.RendezvousTimeout}, {"OpTimeout", o.OpTimeout}, {"PeerTimeout", o.PeerTimeout}} {
		if d.v < 0 {
			return fmt.Errorf("dist: Options.%s %v: want a positive duration (0: the default)", d.name, d.v)
		}
	}
	return nil
}

// abbreviateMax is how many items abbreviate lists before the count of
// the rest.
const abbreviateMax = 8

// abbreviate joins items with sep, the first abbreviateMax of them and
// then the count of the others, so that an error about 100,000 ranks
// stays one short line.
func abbreviate(items []string, sep string) string {
	if len(items) <= abbreviateMax {
		return strings.Join(items, sep)
	}
	return fmt.Sprintf("%s%s... (%d in all)", strings.Join(items[:abbreviateMax], sep), sep, len(items))
}

func (o *Options) defaults() {
	if o.RendezvousTimeout <= 0 {
		o.RendezvousTimeout = 2 * time.Minute
	}
	if o.OpTimeout <= 0 {
		o.OpTimeout = 10 * time.Minute
	}
	if o.PeerTimeout <= 0 {
		o.PeerTimeout = 4 * time.Second
	}
	if o.ChunkBytes <= 0 {
		o.ChunkBytes = 256 << 10
	}
	if o.SmallBytes <= 0 {
		o.SmallBytes = 64 << 10
	}
	if o.ShmSlotBytes <= 0 {
		o.ShmSlotBytes = 1 << 20
	}
	if o.ShmRingBytes <= 0 {
		o.ShmRingBytes = 256 << 10
	}
}

// Frame kinds.
const (
	fData uint8 = iota + 1
	fP2P
	fHeartbeat
	fAbort
	fBye
)

const headerLen = 32

// header is a message's fixed prefix: what collective it belongs to, so
// the receiver can check it against its own call.
type header struct {
	kind  uint8
	coll  Kind
	dtype DType
	op    Op
	tag   uint32
	seq   uint64
	count uint64 // elements of the whole collective on this rank
	n     uint64 // payload bytes
}

func (h *header) put(b []byte) {
	b[0], b[1], b[2], b[3] = h.kind, uint8(h.coll), uint8(h.dtype), uint8(h.op)
	binary.LittleEndian.PutUint32(b[4:], h.tag)
	binary.LittleEndian.PutUint64(b[8:], h.seq)
	binary.LittleEndian.PutUint64(b[16:], h.count)
	binary.LittleEndian.PutUint64(b[24:], h.n)
}

func (h *header) get(b []byte) {
	h.kind, h.coll, h.dtype, h.op = b[0], Kind(b[1]), DType(b[2]), Op(b[3])
	h.tag = binary.LittleEndian.Uint32(b[4:])
	h.seq = binary.LittleEndian.Uint64(b[8:])
	h.count = binary.LittleEndian.Uint64(b[16:])
	h.n = binary.LittleEndian.Uint64(b[24:])
}

type frame struct {
	h      header
	data   []byte
	pooled *[]byte
}

// queue is an unbounded FIFO of frames: readers never block on a slow
// consumer, so a busy rank never looks like a dead one to its peers.
type queue struct {
	mu     sync.Mutex
	items  []*frame
	head   int
	signal chan struct{}
}

func newQueue() *queue { return &queue{signal: make(chan struct{}, 1)} }

func (q *queue) push(f *frame) {
	q.mu.Lock()
	q.items = append(q.items, f)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

func (q *queue) tryPop() *frame {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.items) {
		return nil
	}
	f := q.items[q.head]
	q.items[q.head] = nil
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	}
	return f
}

type peer struct {
	rank int
	c    net.Conn
	br   *bufio.Reader

	wmu       sync.Mutex
	hdr       [headerLen]byte
	lastWrite atomic.Int64
	asyncq    chan *sendReq

	coll  *queue
	p2pMu sync.Mutex
	p2p   map[uint32]*queue
	left  atomic.Bool // said goodbye
	eof   chan struct{}
	link  link       // data and point-to-point frames: TCP, or the segment's ring
	rmu   sync.Mutex // the ring's single producer
}

func (p *peer) mailbox(tag uint32) *queue {
	p.p2pMu.Lock()
	defer p.p2pMu.Unlock()
	q := p.p2p[tag]
	if q == nil {
		q = newQueue()
		p.p2p[tag] = q
	}
	return q
}

type sendReq struct {
	h    header
	data []byte
	wg   *sync.WaitGroup
	err  *atomic.Pointer[error]
}

// TCP is the pure-Go backend: a full mesh of authenticated TCP
// connections.
type TCP struct {
	rank, size int
	opts       Options
	peers      []*peer // nil at own rank
	seq        callSeq

	failOnce sync.Once
	failErr  error
	failed   chan struct{}
	closing  atomic.Bool
	closeCh  chan struct{}
	wg       sync.WaitGroup
	pool     sync.Pool

	seg       *shmSeg // this host's segment, if any
	shm       *shmSeg // seg when every rank is on this host (collectives through it); else nil
	transport string
}

// Join meets the other ranks at rank 0's store, connects to every one of
// them and returns the group.
func Join(ctx context.Context, in Info, o Options) (*TCP, error) {
	if os.Getenv(ShmEnv) == "0" {
		o.NoSharedMemory = true
	}
	return join(ctx, in, o, in.Rank == 0)
}

// LocalGroup joins n ranks inside this process over loopback (for tests
// and examples): it returns every rank's group, index = rank.
func LocalGroup(ctx context.Context, n int, o Options) ([]*TCP, error) {
	if o.Security == nil {
		o.Security = &Security{Secret: []byte(NewSecret())}
	}
	st, err := ServeStore("127.0.0.1:0", o.Security)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	_, portS, _ := net.SplitHostPort(st.Addr())
	port, _ := strconv.Atoi(portS)
	gs := make([]*TCP, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := 0; r < n; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gs[r], errs[r] = join(ctx, Info{Rank: r, Size: n, MasterAddr: "127.0.0.1", MasterPort: port, Launcher: "local"}, o, false)
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			for _, g := range gs {
				if g != nil {
					g.Close()
				}
			}
			return nil, fmt.Errorf("rank %d: %w", r, err)
		}
	}
	return gs, nil
}

func join(ctx context.Context, in Info, o Options, serveStore bool) (*TCP, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	o.defaults()
	if o.Security == nil || len(o.Security.Secret) == 0 {
		return nil, fmt.Errorf("dist: no shared secret: set %s on every rank", TokenEnv)
	}
	master := net.JoinHostPort(in.MasterAddr, strconv.Itoa(in.MasterPort))
	bind := o.Bind
	if bind == "" {
		bind = localAddrTowards(in.MasterAddr, in.MasterPort)
	}
	var store *Store
	if serveStore {
		host := in.MasterAddr
		if o.Bind != "" {
			host = o.Bind
		} else if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			host = "" // every interface: the master name may resolve to another of ours
		}
		var err error
		store, err = ServeStore(net.JoinHostPort(host, strconv.Itoa(in.MasterPort)), o.Security)
		if err != nil {
			return nil, err
		}
		defer store.Close()
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(bind, "0"))
	if err != nil {
		return nil, fmt.Errorf("rank %d: listening on %s (--bind/--iface): %w", in.Rank, bind, err)
	}
	defer ln.Close()
	sc, err := DialStore(ctx, master, o.Security, in.Rank, o.RendezvousTimeout)
	if err != nil {
		return nil, fmt.Errorf("rank %d: %w", in.Rank, err)
	}
	defer sc.Close()
	if err := sc.Set(ctx, "addr/"+strconv.Itoa(in.Rank), ln.Addr().String()); err != nil {
		return nil, err
	}
	keys := make([]string, in.Size)
	for i := range keys {
		keys[i] = "addr/" + strconv.Itoa(i)
	}
	addrs, missing, err := sc.Wait(ctx, keys, o.RendezvousTimeout)
	if err != nil {
		return nil, fmt.Errorf("rank %d: rendezvous: %w", in.Rank, err)
	}
	if len(missing) > 0 {
		ranks := make([]string, len(missing))
		for i, k := range missing {
			ranks[i] = strings.TrimPrefix(k, "addr/")
		}
		return nil, fmt.Errorf("rendezvous: rank(s) %s of %d never arrived within %v (not started, crashed, or a different shared secret)", abbreviate(ranks, ", "), in.Size, o.RendezvousTimeout)
	}
	g, err := connectMesh(ctx, in.Rank, in.Size, addrs, ln, o)
	if err != nil {
		return nil, err
	}
	if err := g.setupShm(ctx, sc, serveStore); err != nil {
		for _, p := range g.peers {
			if p != nil {
				p.c.Close()
			}
		}
		return nil, fmt.Errorf("rank %d: %w", in.Rank, err)
	}
	g.start()
	return g, nil
}

// localAddrTowards returns the local IP address used to reach host (a UDP
// "connection" sends nothing), or 127.0.0.1.
func localAddrTowards(host string, port int) string {
	c, err := net.Dial("udp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return "127.0.0.1"
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).IP.String()
}

// connectMesh dials every lower rank and accepts every higher one.
func connectMesh(ctx context.Context, rank, size int, addrs []string, ln net.Listener, o Options) (*TCP, error) {
	g := &TCP{rank: rank, size: size, opts: o, peers: make([]*peer, size), failed: make(chan struct{}), closeCh: make(chan struct{})}
	g.pool.New = func() any { b := make([]byte, o.ChunkBytes); return &b }
	conns := make([]net.Conn, size)
	deadline := time.Now().Add(o.RendezvousTimeout)
	errc := make(chan error, 2)
	var mu sync.Mutex
	// A cancelled context ends the accepts (the dials watch it already).
	stopAccept := context.AfterFunc(ctx, func() { ln.Close() })
	defer stopAccept()
	go func() { // accept the higher ranks
		want := size - 1 - rank
		if tl, ok := ln.(*net.TCPListener); ok {
			tl.SetDeadline(deadline)
		}
		for want > 0 {
			c, err := ln.Accept()
			if err != nil {
				errc <- fmt.Errorf("rank %d: waiting for higher ranks to connect: %w", rank, err)
				return
			}
			ac, pr, err := o.Security.acceptAuth(c, int32(rank), max(time.Until(deadline), time.Second))
			if err != nil {
				continue // logged; an impostor does not count
			}
			mu.Lock()
			if int(pr) <= rank || int(pr) >= size || conns[pr] != nil {
				mu.Unlock()
				ac.Close()
				o.Security.logf("rank %d: refused a connection claiming rank %d", rank, pr)
				continue
			}
			conns[pr] = ac
			mu.Unlock()
			want--
		}
		errc <- nil
	}()
	go func() { // dial the lower ranks
		for j := 0; j < rank; j++ {
			d := net.Dialer{Deadline: deadline}
			c, err := d.DialContext(ctx, "tcp", addrs[j])
			if err != nil {
				errc <- fmt.Errorf("rank %d: connecting to rank %d at %s: %w", rank, j, addrs[j], err)
				return
			}
			ac, pr, err := o.Security.dialAuth(c, int32(rank), max(time.Until(deadline), time.Second))
			if err != nil {
				c.Close()
				errc <- fmt.Errorf("rank %d: connecting to rank %d: %w", rank, j, err)
				return
			}
			if int(pr) != j {
				ac.Close()
				errc <- fmt.Errorf("rank %d: %s answered as rank %d, expected rank %d", rank, addrs[j], pr, j)
				return
			}
			mu.Lock()
			conns[j] = ac
			mu.Unlock()
		}
		errc <- nil
	}()
	var firstErr error
	for i := 0; i < 2; i++ {
		if err := <-errc; err != nil && firstErr == nil {
			firstErr = err
			ln.Close()
		}
	}
	if firstErr != nil {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("rank %d: connecting to the other ranks: %w", rank, ctx.Err())
		}
		return nil, firstErr
	}
	for j, c := range conns {
		if c == nil {
			continue
		}
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetNoDelay(true)
			tc.SetReadBuffer(4 << 20)
			tc.SetWriteBuffer(4 << 20)
		}
		p := &peer{rank: j, c: c, coll: newQueue(), p2p: map[uint32]*queue{}, asyncq: make(chan *sendReq, 1024), eof: make(chan struct{})}
		p.link = tcpLink{g, p}
		p.br = bufio.NewReaderSize(&deadlineReader{c: c, d: o.PeerTimeout}, 64<<10)
		p.lastWrite.Store(time.Now().UnixNano())
		g.peers[j] = p
	}
	return g, nil
}

// start runs the group's readers, senders and heartbeats.
func (g *TCP) start() {
	for _, p := range g.peers {
		if p == nil {
			continue
		}
		g.wg.Add(2)
		go g.reader(p)
		go g.sender(p)
	}
	g.wg.Add(1)
	go g.heartbeats()
	if g.seg != nil {
		g.wg.Add(1)
		go g.shmDrain()
	}
}

// deadlineReader refreshes the read deadline before every read, so a
// peer that stays silent longer than d (no data, no heartbeat) is an
// error.
type deadlineReader struct {
	c net.Conn
	d time.Duration
}

func (r *deadlineReader) Read(b []byte) (int, error) {
	r.c.SetReadDeadline(time.Now().Add(r.d))
	return r.c.Read(b)
}

// Rank returns this process's rank.
func (g *TCP) Rank() int { return g.rank }

// Size returns the number of ranks.
func (g *TCP) Size() int { return g.size }

// fail records the group's first error, tells every peer (so they fail
// now rather than at their next timeout) and then wakes every waiter.
func (g *TCP) fail(err error) {
	g.failOnce.Do(func() {
		g.failErr = err
		// Tell the peers first, then wake this rank's waiters: a caller
		// that exits on the error must not cut the message off.
		defer func() {
			close(g.failed)
			if g.seg != nil && !g.closing.Load() {
				g.seg.ring() // wake this rank's sleepers now
			}
		}()
		msg := []byte(fmt.Sprintf("rank %d: %v", g.rank, err))
		var wg sync.WaitGroup
		for _, p := range g.peers {
			if p == nil {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if p.wmu.TryLock() || waitLock(&p.wmu, 500*time.Millisecond) {
					p.c.SetWriteDeadline(time.Now().Add(time.Second))
					h := header{kind: fAbort, n: uint64(len(msg))}
					h.put(p.hdr[:])
					bufs := net.Buffers{p.hdr[:], msg}
					bufs.WriteTo(p.c)
					p.wmu.Unlock()
				}
			}()
		}
		wg.Wait()
	})
}

func waitLock(mu *sync.Mutex, d time.Duration) bool {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if mu.TryLock() {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}

// Err returns the error that broke the group, if any.
func (g *TCP) Err() error {
	select {
	case <-g.failed:
		return g.failErr
	default:
		return nil
	}
}

// gone describes a lost connection.
func (g *TCP) gone(p *peer, err error) error {
	if e := g.Err(); e != nil && p.link.direct() {
		return e // a ring write fails only once the group has failed
	}
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("rank %d is gone: nothing received for %v, not even a heartbeat (network cut, or the process stopped)", p.rank, g.opts.PeerTimeout)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return fmt.Errorf("rank %d is gone: connection closed (the process exited or was killed)", p.rank)
	}
	return fmt.Errorf("rank %d is gone: %v", p.rank, err)
}

func (g *TCP) reader(p *peer) {
	defer g.wg.Done()
	defer close(p.eof)
	var hb [headerLen]byte
	for {
		if _, err := io.ReadFull(p.br, hb[:]); err != nil {
			if g.closing.Load() || p.left.Load() && errors.Is(err, io.EOF) {
				return
			}
			g.fail(g.gone(p, err))
			return
		}
		var h header
		h.get(hb[:])
		switch h.kind {
		case fHeartbeat:
			continue
		case fBye:
			p.left.Store(true)
			continue
		case fAbort:
			msg := make([]byte, min(h.n, 1<<16))
			io.ReadFull(p.br, msg)
			g.fail(fmt.Errorf("rank %d failed: %s", p.rank, msg))
			return
		case fData, fP2P:
		default:
			g.fail(fmt.Errorf("rank %d sent a corrupt message (kind %d)", p.rank, h.kind))
			return
		}
		if h.n > 1<<40 {
			g.fail(fmt.Errorf("rank %d sent a message of %d bytes: corrupt", p.rank, h.n))
			return
		}
		f := &frame{h: h}
		if h.kind == fData && int(h.n) <= g.opts.ChunkBytes {
			f.pooled = g.pool.Get().(*[]byte)
			f.data = (*f.pooled)[:h.n]
		} else {
			f.data = make([]byte, h.n)
		}
		if _, err := io.ReadFull(p.br, f.data); err != nil {
			if g.closing.Load() {
				return
			}
			g.fail(g.gone(p, err))
			return
		}
		if h.kind == fData {
			p.coll.push(f)
		} else {
			p.mailbox(h.tag).push(f)
		}
	}
}

func (g *TCP) release(f *frame) {
	if f.pooled != nil {
		g.pool.Put(f.pooled)
		f.pooled, f.data = nil, nil
	}
}

// link carries data and point-to-point frames to one peer: its TCP
// connection (tcpLink), or, to a rank on this host, the shared-memory
// segment's ring (ringLink, shmp2p.go), whose drain goroutine feeds the
// same queues as the TCP reader. Heartbeats, goodbyes and aborts always
// use the TCP connection.
type link interface {
	// write sends one frame (header and payload).
	write(ctx context.Context, h header, data []byte) error
	// direct says that a write waits only for the receiving rank's drain,
	// never for its consumer, and fails only once the group has: then
	// asynchronous sends write from the caller's goroutine.
	direct() bool
}

// write sends one message to p over its link.
func (g *TCP) write(p *peer, h header, data []byte) error {
	return p.link.write(context.Background(), h, data)
}

// tcpLink is a peer's TCP connection.
type tcpLink struct {
	g *TCP
	p *peer
}

func (l tcpLink) direct() bool { return false }

// write sends the frame in pieces with a fresh write deadline each.
func (l tcpLink) write(_ context.Context, h header, data []byte) error {
	g, p := l.g, l.p
	p.wmu.Lock()
	defer p.wmu.Unlock()
	h.n = uint64(len(data))
	h.put(p.hdr[:])
	const piece = 4 << 20
	first := data[:min(len(data), piece)]
	p.c.SetWriteDeadline(time.Now().Add(g.opts.PeerTimeout))
	bufs := net.Buffers{p.hdr[:], first}
	if _, err := bufs.WriteTo(p.c); err != nil {
		return err
	}
	for rest := data[len(first):]; len(rest) > 0; {
		k := min(len(rest), piece)
		p.c.SetWriteDeadline(time.Now().Add(g.opts.PeerTimeout))
		if _, err := p.c.Write(rest[:k]); err != nil {
			return err
		}
		rest = rest[k:]
	}
	p.lastWrite.Store(time.Now().UnixNano())
	return nil
}

// sender writes p's asynchronous messages in order.
func (g *TCP) sender(p *peer) {
	defer g.wg.Done()
	for {
		select {
		case r := <-p.asyncq:
			var err error
			if g.Err() != nil {
				err = g.Err()
			} else if err = g.write(p, r.h, r.data); err != nil {
				err = g.gone(p, err)
				g.fail(err)
			}
			if err != nil {
				r.err.CompareAndSwap(nil, &err)
			}
			r.wg.Done()
		case <-g.closeCh:
			return
		}
	}
}

func (g *TCP) heartbeats() {
	defer g.wg.Done()
	every := g.opts.PeerTimeout / 4
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-g.closeCh:
			return
		case <-g.failed:
			return
		}
		now := time.Now().UnixNano()
		for _, p := range g.peers {
			if p == nil || now-p.lastWrite.Load() < int64(every) || !p.wmu.TryLock() {
				continue
			}
			h := header{kind: fHeartbeat}
			h.put(p.hdr[:])
			p.c.SetWriteDeadline(time.Now().Add(g.opts.PeerTimeout))
			_, err := p.c.Write(p.hdr[:])
			p.lastWrite.Store(time.Now().UnixNano())
			p.wmu.Unlock()
			if err != nil && !g.closing.Load() {
				g.fail(g.gone(p, err))
			}
		}
	}
}

// Close says goodbye to every peer, waits briefly for theirs (so no
// message in flight is cut off) and closes the connections.
func (g *TCP) Close() error {
	if g.closing.Swap(true) {
		return nil
	}
	if g.Err() == nil {
		for _, p := range g.peers {
			if p == nil {
				continue
			}
			p.wmu.Lock()
			h := header{kind: fBye}
			h.put(p.hdr[:])
			p.c.SetWriteDeadline(time.Now().Add(time.Second))
			p.c.Write(p.hdr[:])
			if cw, ok := p.c.(interface{ CloseWrite() error }); ok {
				cw.CloseWrite()
			}
			p.wmu.Unlock()
		}
		end := time.After(2 * time.Second)
	wait:
		for _, p := range g.peers {
			if p == nil {
				continue
			}
			select {
			case <-p.eof:
			case <-end:
				break wait
			}
		}
	}
	close(g.closeCh)
	for _, p := range g.peers {
		if p != nil {
			p.c.Close()
		}
	}
	g.wg.Wait()
	if g.seg != nil {
		g.seg.close()
	}
	return g.Err()
}

// call is one collective in progress on this rank.
type call struct {
	callDesc
	ctx   context.Context
	timer *time.Timer
	sends sync.WaitGroup
	serr  atomic.Pointer[error]
	start time.Time // shared memory: the deadline's start (no timer)
	// shmErr carries a mismatch found while polling shared memory.
	shmErr error
}

// begin starts a collective: its sequence number and deadline.
func (g *TCP) begin(ctx context.Context, kind Kind, dt DType, op Op, count int) (*call, error) {
	c := &call{callDesc: g.seq.next(kind, dt, op, count), ctx: ctx}
	if g.closing.Load() {
		return nil, fmt.Errorf("%v: the group is closed", c)
	}
	if err := g.Err(); err != nil {
		return nil, fmt.Errorf("%v: the group is broken: %w", c, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if g.shm != nil {
		c.start = time.Now()
	} else {
		c.timer = time.NewTimer(g.opts.OpTimeout)
	}
	return c, nil
}

// end waits for the call's asynchronous sends.
func (g *TCP) end(c *call, err error) error {
	c.sends.Wait()
	if c.timer != nil {
		c.timer.Stop()
	}
	if err == nil {
		if e := c.serr.Load(); e != nil {
			err = fmt.Errorf("%v: %w", c, *e)
		}
	}
	return err
}

func (c *call) header(kind uint8) header {
	return header{kind: kind, coll: c.kind, dtype: c.dtype, op: c.op, seq: c.seq, count: c.count}
}

// desc is the call a collective frame's header describes.
func (h *header) desc() callDesc {
	return callDesc{kind: h.coll, seq: h.seq, dtype: h.dtype, op: h.op, count: h.count}
}

// sendAsync queues data to rank to; the call's end waits for it.
func (g *TCP) sendAsync(c *call, to int, data []byte) {
	if p := g.peers[to]; p.link.direct() {
		// A ring write waits only for the receiver's drain goroutine,
		// never for its caller: write from here (the caller's buffer is
		// then read by the caller's goroutine alone).
		if err := g.write(p, c.header(fData), data); err != nil {
			err = g.gone(p, err)
			g.fail(err)
			c.serr.CompareAndSwap(nil, &err)
		}
		return
	}
	c.sends.Add(1)
	g.peers[to].asyncq <- &sendReq{h: c.header(fData), data: data, wg: &c.sends, err: &c.serr}
}

// sendNow writes data to rank to from the calling goroutine.
func (g *TCP) sendNow(c *call, to int, data []byte) error {
	if err := g.write(g.peers[to], c.header(fData), data); err != nil {
		err = g.gone(g.peers[to], err)
		g.fail(err)
		return fmt.Errorf("%v: %w", c, err)
	}
	return nil
}

// recv returns the next message of the call from rank from, checking it
// belongs to the same collective with the same size and carries want
// bytes (want < 0: any).
func (g *TCP) recv(c *call, from int, want int) (*frame, error) {
	p := g.peers[from]
	f, err := g.pop(c, p.coll, from)
	if err != nil {
		return nil, err
	}
	h := &f.h
	if err := c.mismatch(g.rank, from, h.desc()); err != nil {
		g.fail(err)
		return nil, err
	}
	if want >= 0 && int(h.n) != want {
		err := fmt.Errorf("%v: rank %d sent %d bytes where %d were expected", c, from, h.n, want)
		g.fail(err)
		return nil, err
	}
	return f, nil
}

func (g *TCP) pop(c *call, q *queue, from int) (*frame, error) {
	for {
		if f := q.tryPop(); f != nil {
			return f, nil
		}
		select {
		case <-q.signal:
		case <-g.failed:
			if f := q.tryPop(); f != nil {
				return f, nil
			}
			return nil, fmt.Errorf("%v: %w", c, g.failErr)
		case <-c.ctx.Done():
			err := fmt.Errorf("%v: %w", c, c.ctx.Err())
			g.fail(err)
			return nil, err
		case <-c.timer.C:
			err := fmt.Errorf("%v: nothing from rank %d within %v (does it run the same collectives?)", c, from, g.opts.OpTimeout)
			g.fail(err)
			return nil, err
		}
	}
}

// Send delivers data to rank to under tag.
func (g *TCP) Send(ctx context.Context, to int, tag uint32, data []byte) error {
	if to < 0 || to >= g.size || to == g.rank {
		return fmt.Errorf("dist: send to rank %d from rank %d of %d", to, g.rank, g.size)
	}
	if err := g.Err(); err != nil {
		return fmt.Errorf("send to rank %d (tag %d): the group is broken: %w", to, tag, err)
	}
	h := header{kind: fP2P, coll: KindSend, dtype: Bytes, tag: tag}
	p := g.peers[to]
	if err := p.link.write(ctx, h, data); err != nil {
		if !p.link.direct() {
			err = g.gone(p, err)
			g.fail(err)
		}
		return fmt.Errorf("send to rank %d (tag %d): %w", to, tag, err)
	}
	return nil
}

// Recv returns the next message from rank from under tag.
func (g *TCP) Recv(ctx context.Context, from int, tag uint32) ([]byte, error) {
	if from < 0 || from >= g.size || from == g.rank {
		return nil, fmt.Errorf("dist: receive from rank %d at rank %d of %d", from, g.rank, g.size)
	}
	c := &call{callDesc: callDesc{kind: KindSend}, ctx: ctx, timer: time.NewTimer(g.opts.OpTimeout)}
	defer c.timer.Stop()
	q := g.peers[from].mailbox(tag)
	for {
		if f := q.tryPop(); f != nil {
			return f.data, nil
		}
		select {
		case <-q.signal:
		case <-g.failed:
			if f := q.tryPop(); f != nil {
				return f.data, nil
			}
			return nil, fmt.Errorf("receive from rank %d (tag %d): %w", from, tag, g.failErr)
		case <-ctx.Done():
			return nil, fmt.Errorf("receive from rank %d (tag %d): %w", from, tag, ctx.Err())
		case <-c.timer.C:
			return nil, fmt.Errorf("receive from rank %d (tag %d): nothing within %v", from, tag, g.opts.OpTimeout)
		}
	}
}

// ranksString lists ranks for messages.
func ranksString(r []int) string {
	sort.Ints(r)
	s := make([]string, len(r))
	for i, v := range r {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ", ")
}
