//go:build linux

package samplersvc

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	pb "github.com/graphmill/graphmill/proto/graphmill/v1"
)

// clientFile is what a client does: a /dev/shm file of size bytes with a
// token at its start, unlinked unless keepName, named by /proc/self/fd/N.
func clientFile(t *testing.T, size int64, keepName bool) (path string, token []byte, f *os.File) {
	t.Helper()
	f, err := os.CreateTemp("/dev/shm", "graphmill-test-")
	if err != nil {
		t.Skipf("no /dev/shm: %v", err)
	}
	t.Cleanup(func() { f.Close(); os.Remove(f.Name()) })
	if !keepName {
		os.Remove(f.Name())
	}
	token = make([]byte, shmTokenLen)
	rand.Read(token)
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(token, 0); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("/proc/self/fd/%d", f.Fd()), token, f
}

func TestOpenSegmentChecks(t *testing.T) {
	path, token, _ := clientFile(t, 1<<20, false)
	linked, ltoken, lf := clientFile(t, 1<<20, true)
	other := filepath.Join(t.TempDir(), "file")
	os.WriteFile(other, make([]byte, 1<<20), 0o600)
	bad := bytes.Clone(token)
	bad[0] ^= 1
	for _, c := range []struct {
		name  string
		path  string
		size  uint64
		token []byte
		ok    bool
	}{
		{"the client's file", path, 1 << 20, token, true},
		{"wrong token (another machine's file)", path, 1 << 20, bad, false},
		{"short token", path, 1 << 20, token[:8], false},
		{"wrong size", path, 1 << 19, token, false},
		{"still linked", linked, 1 << 20, ltoken, false},
		{"by its name, linked", lf.Name(), 1 << 20, ltoken, false},
		{"not under /proc or /dev/shm", other, 1 << 20, make([]byte, shmTokenLen), false},
		{"missing", "/proc/self/fd/100000", 1 << 20, token, false},
	} {
		seg, err := openSegment(c.path, c.size, c.token)
		if (err == nil) != c.ok {
			t.Errorf("%s: err %v, want ok=%v", c.name, err, c.ok)
		}
		if seg != nil {
			seg.close()
		}
	}
}

func TestSegmentAlloc(t *testing.T) {
	path, token, _ := clientFile(t, 64<<10, false)
	seg, err := openSegment(path, 64<<10, token)
	if err != nil {
		t.Fatal(err)
	}
	defer seg.close()
	type step struct {
		alloc   int // bytes, or 0 to free
		free    int // offset to free
		wantOff int // -1: no room; for a free, -1: an error
	}
	if err := seg.hold([]uint64{4096, 100, 4096}); err == nil {
		t.Error("hold of an odd list accepted")
	}
	for _, bad := range [][]uint64{{100, 10}, {0, 10}, {4096, 0}, {4096, 1 << 20}, {4096, 5000, 8192, 10}} {
		if err := seg.hold(bad); err == nil {
			t.Errorf("hold(%v) accepted", bad)
		}
		seg.live = nil
	}
	// payloads of an earlier stream are left alone, and can be freed
	if err := seg.hold([]uint64{8192, 100}); err != nil {
		t.Fatal(err)
	}
	if off, _, _ := seg.alloc(5000); off != 12288 {
		t.Errorf("alloc beside a held payload at %d, want 12288", off)
	}
	for _, off := range []uint64{8192, 12288} {
		if err := seg.free(off); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range []step{
		{alloc: 100, wantOff: 4096},
		{alloc: 5000, wantOff: 8192},
		{alloc: 4096, wantOff: 16384},
		{free: 8192},
		{alloc: 4000, wantOff: 8192}, // first fit: the freed gap
		{alloc: 4096, wantOff: 12288},
		{alloc: 60 << 10, wantOff: -1}, // no room
		{free: 8192},
		{free: 8192, wantOff: -1}, // twice
		{free: 5, wantOff: -1},
		{alloc: 40 << 10, wantOff: 20480},
	} {
		if s.alloc > 0 {
			off, b, ok := seg.alloc(s.alloc)
			if !ok {
				off = -1
			} else if len(b) != s.alloc {
				t.Errorf("step %d: %d bytes, want %d", i, len(b), s.alloc)
			}
			if off != s.wantOff {
				t.Errorf("step %d: alloc(%d) at %d, want %d", i, s.alloc, off, s.wantOff)
			}
			continue
		}
		if err := seg.free(uint64(s.free)); (err == nil) != (s.wantOff == 0) {
			t.Errorf("step %d: free(%d): %v", i, s.free, err)
		}
	}
	// Reserved once: the backed prefix reaches the last payload's end, so
	// space freed and allocated again is not reserved again.
	if want := 20480 + 40<<10; seg.backed != want {
		t.Errorf("backed prefix ends at %d, want %d", seg.backed, want)
	}
}

// TestStreamOverSharedMemory: with a client's segment, payloads come in
// the file (frames carry offset and length), equal to in-message ones;
// released space is reused; a wrong token falls back to in-message frames.
func TestStreamOverSharedMemory(t *testing.T) {
	d := cora(t)
	svc := startService(t, d, nil, nil)
	cl := svc.rawClient(t)
	const size = 64 << 20
	epoch := func(path string, token []byte, f *os.File, release bool) (payloads [][]byte, inShm int, high int) {
		st, err := cl.Stream(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		req := &pb.EpochRequest{Split: "train", Fanouts: []int32{10, 5}, BatchSize: 16, Seed: 2, Shuffle: true,
			WithFeatures: true, WithLabels: true, NumShards: 1, InitialCredits: 2, ShmPath: path, ShmToken: token, ShmSize: size}
		if err := st.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Start{Start: req}}); err != nil {
			t.Fatal(err)
		}
		for {
			fr, err := st.Recv()
			if err != nil {
				t.Fatal(err)
			}
			if fr.Kind == pb.Frame_KIND_END && int(fr.BatchCount) == 9 {
				break
			}
			if fr.Kind != pb.Frame_KIND_BATCH {
				continue
			}
			p := fr.Minibatch
			if fr.ShmLength > 0 {
				inShm++
				p = make([]byte, fr.ShmLength)
				if _, err := f.ReadAt(p, int64(fr.ShmOffset)); err != nil {
					t.Fatal(err)
				}
				high = max(high, int(fr.ShmOffset+fr.ShmLength))
				if release {
					st.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Release{Release: &pb.Release{Offsets: []uint64{fr.ShmOffset}}}})
				}
			}
			payloads = append(payloads, p)
			st.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Credit{Credit: &pb.Credit{Frames: 1}}})
		}
		st.CloseSend()
		return payloads, inShm, high
	}
	plain, n, _ := epoch("", nil, nil, false)
	if n != 0 || len(plain) != 9 {
		t.Fatalf("without shared memory: %d of %d payloads in it", n, len(plain))
	}
	path, token, f := clientFile(t, size, false)
	shm, n, high := epoch(path, token, f, true)
	if n != 9 {
		t.Fatalf("%d of 9 payloads in shared memory", n)
	}
	for i := range plain {
		if !bytes.Equal(plain[i], shm[i]) {
			t.Fatalf("batch %d differs over shared memory", i)
		}
	}
	// Released space is reused: at most the 2 credited frames, the 2
	// prepared ahead and one being written are live at once.
	maxPage := 0
	for _, p := range plain {
		maxPage = max(maxPage, (len(p)+shmPage-1)/shmPage*shmPage)
	}
	if high > shmPage+5*maxPage {
		t.Errorf("released space not reused: payloads reach byte %d; 5 of at most %d bytes would end by %d", high, maxPage, shmPage+5*maxPage)
	}
	// Unreleased, every payload keeps its space.
	path2, token2, f2 := clientFile(t, size, false)
	if _, n, high := epoch(path2, token2, f2, false); n != 9 || high < shmPage+9*(maxPage/2) {
		t.Errorf("without releases: %d payloads in shared memory reaching byte %d", n, high)
	}
	bad := bytes.Clone(token)
	bad[5] ^= 1
	_, n, _ = epoch(path, bad, f, false)
	if n != 0 {
		t.Errorf("a wrong token still got %d payloads in shared memory", n)
	}
	// The client's next epoch finds its segment mapped already (the same
	// mapping, its backed prefix kept), and the payloads are the same.
	idle := func() *segment {
		svc.s.segs.mu.Lock()
		defer svc.s.segs.mu.Unlock()
		if e := svc.s.segs.idle[string(token)]; e != nil {
			return e.seg
		}
		return nil
	}
	first := idle()
	if first == nil || first.backed == 0 {
		t.Fatalf("the segment of an ended stream is not kept (%v)", first)
	}
	again, n, _ := epoch(path, token, f, true)
	for end := time.Now().Add(5 * time.Second); idle() == nil && time.Now().Before(end); {
		time.Sleep(time.Millisecond) // the stream's end on the server
	}
	if n != 9 || idle() != first {
		t.Errorf("the next epoch mapped the segment again (%d payloads in it)", n)
	}
	for i := range plain {
		if !bytes.Equal(plain[i], again[i]) {
			t.Fatalf("batch %d differs on the kept segment", i)
		}
	}
	// Another file under the same token is not taken for it.
	if _, err := svc.s.segs.open(path2, size, token); err == nil {
		t.Error("a segment opened for another file with the token")
	}
}

// TestIdleSegmentsUnmapped: a segment no stream uses is unmapped after
// segmentIdle, and at Close.
func TestIdleSegmentsUnmapped(t *testing.T) {
	defer func(d time.Duration) { segmentIdle = d }(segmentIdle)
	segmentIdle = 20 * time.Millisecond
	var ss segments
	for _, wait := range []bool{true, false} {
		path, token, _ := clientFile(t, 1<<20, false)
		seg, err := ss.open(path, 1<<20, token)
		if err != nil {
			t.Fatal(err)
		}
		ss.done(seg, token)
		if wait {
			time.Sleep(200 * time.Millisecond)
		} else {
			ss.close()
		}
		ss.mu.Lock()
		n, mapped := len(ss.idle), seg.mem != nil
		ss.mu.Unlock()
		if n != 0 || mapped {
			t.Errorf("wait=%v: %d idle segments, mapping %v", wait, n, mapped)
		}
	}
}
