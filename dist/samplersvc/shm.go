package samplersvc

import (
	"fmt"
	"sort"
	"sync"
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
	mem   []byte
	fd    int
	mu    sync.Mutex
	live  []span // sorted by off
	bytes int64  // allocated
}

type span struct{ off, end int }

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
	if err := s.reserve(off, size); err != nil {
		return 0, nil, false
	}
	s.live = append(s.live, span{})
	copy(s.live[i+1:], s.live[i:])
	s.live[i] = span{off, off + size}
	s.bytes += int64(size)
	return off, s.mem[off : off+n : off+n], true
}

// free returns the space allocated at off.
func (s *segment) free(off uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := sort.Search(len(s.live), func(i int) bool { return uint64(s.live[i].off) >= off })
	if i == len(s.live) || uint64(s.live[i].off) != off {
		return fmt.Errorf("release of shared-memory offset %d, which holds no payload", off)
	}
	s.bytes -= int64(s.live[i].end - s.live[i].off)
	s.live = append(s.live[:i], s.live[i+1:]...)
	return nil
}
