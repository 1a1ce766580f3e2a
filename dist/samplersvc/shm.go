package samplersvc

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

// Shared-memory frames. A client on the sampler's machine creates a file
// in /dev/shm (mode 0600, a random name), writes 32 random bytes (its
// token) at its start, unlinks it at once and passes the server the path
// /proc/PID/fd/N of its open descriptor with the token
// (EpochRequest.shm_path, shm_token). The server opens that path, checks
// the file is an unlinked tmpfs file of the announced size whose first 32
// bytes are the token (so it can only be the client's segment: a remote
// server, or a path to any other file, is refused and the stream falls
// back to in-message frames), and then writes payloads straight into the
// file; frames carry (offset, length) only. The name never outlives its
// creation, so a killed client or server leaves nothing behind; the
// memory goes when both have unmapped it.

const (
	shmTokenLen = 32
	shmPage     = 4096
	// shmMaxSize bounds the segment a client may announce.
	shmMaxSize = 1 << 40
)

// segment is a client's shared file mapped by the server, and the
// allocation of its space to payloads (first fit from the start, so the
// pages touched stay about the payloads in flight).
type segment struct {
	mem  []byte
	fd   int
	mu   sync.Mutex
	live []span // sorted by off
	id   fileID // the file (fileIdentity), to recognise it in a later stream
	// backed is the end of the prefix already backed by memory: nothing
	// gives a segment's pages back, so only what lies past it needs a
	// reservation (a fallocate over 27 MiB of backed pages cost 2 ms a
	// batch).
	backed int
}

type span struct{ off, end int }

// segmentIdle is how long a client's segment stays mapped after its
// stream ends, for the client's next stream (its next epoch).
var segmentIdle = 30 * time.Second

// segments keeps clients' segments mapped between their streams. A
// client's next epoch is a new stream that presents the same file and
// token: it finds the pages mapped and reserved already instead of
// faulting each payload page in again (10,000 faults per 40 MiB payload,
// for every live payload, at every epoch) and reserving them again. A
// segment idle for segmentIdle is unmapped: its client may be gone, and
// the mapping would keep the file's memory.
type segments struct {
	mu   sync.Mutex
	idle map[string]*idleSegment // by token
}

type idleSegment struct {
	seg   *segment
	timer *time.Timer
}

// open returns the client's segment: the one its last stream used when
// path is still that file (and size and token the same), else a fresh
// mapping (openSegment).
func (ss *segments) open(path string, size uint64, token []byte) (*segment, error) {
	id, err := fileIdentity(path)
	if err != nil {
		return nil, err
	}
	ss.mu.Lock()
	e := ss.idle[string(token)]
	if e != nil && e.seg.id == id && uint64(len(e.seg.mem)) == size && e.timer.Stop() {
		delete(ss.idle, string(token))
		ss.mu.Unlock()
		e.seg.live = nil // the client says which payloads it still holds (hold)
		return e.seg, nil
	}
	ss.mu.Unlock()
	return openSegment(path, size, token)
}

// done keeps seg for its client's next stream.
func (ss *segments) done(seg *segment, token []byte) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.idle == nil {
		ss.idle = map[string]*idleSegment{}
	}
	key := string(token)
	if old := ss.idle[key]; old != nil && old.timer.Stop() {
		old.seg.close() // two streams of one client ran at once: keep the later
	}
	e := &idleSegment{seg: seg}
	e.timer = time.AfterFunc(segmentIdle, func() {
		ss.mu.Lock()
		defer ss.mu.Unlock()
		if ss.idle[key] == e {
			delete(ss.idle, key)
		}
		seg.close()
	})
	ss.idle[key] = e
}

// close unmaps every idle segment.
func (ss *segments) close() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for key, e := range ss.idle {
		if e.timer.Stop() {
			e.seg.close()
		}
		delete(ss.idle, key)
	}
}

// alloc reserves n bytes (rounded up to pages) and returns their offset
// and the slice; ok is false when no gap is large enough or the file
// system cannot back them.
func (s *segment) alloc(n int) (int, []byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	size := (n + shmPage - 1) / shmPage * shmPage
	off := shmPage // the first page holds the token
	i := 0
	for ; i < len(s.live); i++ {
		if s.live[i].off-off >= size {
			break
		}
		off = s.live[i].end
	}
	if off+size > len(s.mem) {
		return 0, nil, false
	}
	if end := off + size; end > s.backed {
		// Everything up to end, gaps included (first fit fills them
		// soon), so that the backed prefix grows. (It had stayed empty,
		// starting below the first payload, and every payload was
		// reserved again: 1.9 ms of a 40 MiB batch's 19.)
		from := max(s.backed, shmPage)
		if err := s.reserve(from, end-from); err != nil {
			return 0, nil, false
		}
		s.backed = end
	}
	s.live = append(s.live, span{})
	copy(s.live[i+1:], s.live[i:])
	s.live[i] = span{off, off + size}
	return off, s.mem[off : off+n : off+n], true
}

// hold marks payloads of earlier streams (offset, length pairs) as
// allocated.
func (s *segment) hold(pairs []uint64) error {
	if len(pairs)%2 != 0 {
		return fmt.Errorf("%d numbers of busy shared-memory payloads; want (offset, length) pairs", len(pairs))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 0; i < len(pairs); i += 2 {
		off, n := pairs[i], pairs[i+1]
		if off%shmPage != 0 || off < shmPage || n == 0 || n > uint64(len(s.mem)) || off > uint64(len(s.mem))-n {
			return fmt.Errorf("busy shared-memory payload [%d, +%d) is not a payload of a segment of %d bytes", off, n, len(s.mem))
		}
		end := int((off + n + shmPage - 1) / shmPage * shmPage)
		j := sort.Search(len(s.live), func(j int) bool { return s.live[j].off >= int(off) })
		if (j > 0 && s.live[j-1].end > int(off)) || (j < len(s.live) && s.live[j].off < end) {
			return fmt.Errorf("busy shared-memory payloads overlap at %d", off)
		}
		s.live = append(s.live, span{})
		copy(s.live[j+1:], s.live[j:])
		s.live[j] = span{int(off), end}
	}
	return nil
}

// free returns the space allocated at off.
func (s *segment) free(off uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := sort.Search(len(s.live), func(i int) bool { return uint64(s.live[i].off) >= off })
	if i == len(s.live) || uint64(s.live[i].off) != off {
		return fmt.Errorf("release of shared-memory offset %d, which holds no payload", off)
	}
	s.live = append(s.live[:i], s.live[i+1:]...)
	return nil
}
