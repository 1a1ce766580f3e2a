package diskio

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// batchBytes bounds the buffers the rate measurements allocate.
const batchBytes = 64 << 20

// RandomReadRate reads random blockSize-byte blocks (at multiples of
// blockSize, which must be a multiple of r.Align()) of the file with depth
// reads in flight (at most r.Depth()) for about dur, and returns reads/s.
func RandomReadRate(ctx context.Context, r *Reader, depth, blockSize int, dur time.Duration) (float64, error) {
	if blockSize <= 0 || blockSize%r.Align() != 0 {
		return 0, fmt.Errorf("diskio: block size %d is not a positive multiple of %d", blockSize, r.Align())
	}
	blocks := r.Size() / int64(blockSize)
	if blocks == 0 {
		return 0, fmt.Errorf("diskio: file of %d bytes holds no %d-byte block", r.Size(), blockSize)
	}
	depth = max(1, min(depth, r.Depth()))
	// Batches of several times depth keep the queue full but for the tail.
	reqs := make([]Req, max(depth, min(16*depth, batchBytes/blockSize)))
	for i := range reqs {
		reqs[i].Buf = AlignedBuf(blockSize)
	}
	start := time.Now()
	var reads int
	for time.Since(start) < dur {
		for i := range reqs {
			reqs[i].Off = rand.Int64N(blocks) * int64(blockSize)
		}
		if err := r.readBatch(ctx, reqs, depth); err != nil {
			return 0, err
		}
		reads += len(reqs)
	}
	return float64(reads) / time.Since(start).Seconds(), nil
}

// SequentialRate reads the file from the start (at most limit bytes, all of
// it when limit <= 0) in chunk-byte reads with depth in flight (at most
// r.Depth()), and returns bytes/s. chunk must be a multiple of r.Align().
func SequentialRate(ctx context.Context, r *Reader, chunk, depth int, limit int64) (float64, error) {
	if chunk <= 0 || chunk%r.Align() != 0 {
		return 0, fmt.Errorf("diskio: chunk %d is not a positive multiple of %d", chunk, r.Align())
	}
	end := r.Size()
	if limit > 0 {
		end = min(end, limit)
	}
	depth = max(1, min(depth, r.Depth()))
	reqs := make([]Req, max(depth, min(4*depth, batchBytes/chunk)))
	bufs := make([][]byte, len(reqs))
	for i := range bufs {
		bufs[i] = AlignedBuf(chunk)
	}
	start := time.Now()
	var total int64
	for off := int64(0); off < end; {
		batch := reqs[:0]
		for i := 0; i < len(reqs) && off < end; i++ {
			n := min(int64(chunk), end-off)
			n = (n + int64(r.Align()) - 1) / int64(r.Align()) * int64(r.Align())
			batch = append(batch, Req{Off: off, Buf: bufs[i][:n]})
			off += n
		}
		if err := r.readBatch(ctx, batch, depth); err != nil {
			return 0, err
		}
		for _, q := range batch {
			total += int64(min(q.N, int(end-q.Off)))
		}
	}
	return float64(total) / time.Since(start).Seconds(), nil
}
