// Package membench measures the memory-system ceilings that graphmill's
// data-loading code is judged against, on the machine it runs on and in
// the same run: independent random small reads over a large array (the
// access pattern of neighbour sampling), sequential copy bandwidth, and
// random-row gathers (the access pattern of feature fetching). Each
// measurement runs on a given number of goroutines at once and reports the
// total rate, so "sampler edges/s divided by RandomReads(..., workers)" is
// a fair ratio for the same worker count.
//
//	a, free := hugemem.Alloc[uint32](n) // like the graph: huge pages
//	defer free()
//	r := membench.RandomReads(a, 1, 300*time.Millisecond)
//	fmt.Println(r.PerSec) // reads per second
package membench

import (
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/graphmill/graphmill/internal/cputime"
	"github.com/graphmill/graphmill/internal/hugemem"
	"github.com/graphmill/graphmill/internal/prefetch"
	"github.com/graphmill/graphmill/internal/rng"
)

// Result is one measurement.
type Result struct {
	// Ops is the number of operations done (reads, bytes or rows).
	Ops int64
	// Elapsed is the wall time they took.
	Elapsed time.Duration
	// PerSec is Ops per second.
	PerSec float64
	// Workers is the number of goroutines that ran concurrently.
	Workers int
	// CPUPerSec is the rate per CPU-second of each goroutine's own thread,
	// summed over the goroutines: the rate the workers would reach if each
	// had a core to itself. On a machine shared with other work, it is far
	// less noisy than PerSec.
	CPUPerSec float64

	// Per worker: operations and thread CPU time (for Add).
	ops []int64
	cpu []time.Duration
}

// Add returns the measurement of r's and o's work together, as if one
// run had done both: operations and wall times summed, and each worker's
// rate per CPU-second taken over both runs' CPU time. r may be the zero
// Result; otherwise both must have the same number of workers.
func (r Result) Add(o Result) Result {
	if r.Workers == 0 {
		return o
	}
	if o.Workers != r.Workers {
		panic("membench: Add of results with different worker counts")
	}
	ops := make([]int64, r.Workers)
	cpu := make([]time.Duration, r.Workers)
	for w := range ops {
		ops[w] = r.ops[w] + o.ops[w]
		cpu[w] = r.cpu[w] + o.cpu[w]
	}
	return result(ops, cpu, r.Elapsed+o.Elapsed)
}

// Alternate is the benchmarks' paired runner: it runs each of runs in
// turn, rounds times (runs[0], runs[1], ..., runs[0], runs[1], ...), so
// that every contender sees the same stretches of a machine whose speed
// drifts (virtual machines' do when their neighbours load the host), and
// stops at the first error. The benchmarks that compare graphmill with a
// peer (gemm with OpenBLAS, partition with gpmetis, the Python client with
// the Go loader and PyG) and work with its ceiling (Paired) all take turns
// through it.
func Alternate(rounds int, runs ...func(round int) error) error {
	for i := 0; i < rounds; i++ {
		for _, run := range runs {
			if err := run(i); err != nil {
				return err
			}
		}
	}
	return nil
}

// Paired measures work against a ceiling over the same stretch of time:
// it runs rounds rounds (at least one), each of work(round) and then of
// ceiling(d), where d is the wall time the round's work took (at least
// 5 ms), and returns both summed with Add. On a machine whose speed
// drifts from one second to the next (random-read rates here move between
// about 40M and 64M per second within seconds), a ceiling measured once,
// before the work, can fall in a fast stretch and the work in a slow one;
// interleaved in slices of equal length, both see the same machine.
func Paired(rounds int, work func(round int) Result, ceiling func(d time.Duration) Result) (w, c Result) {
	ws, cs := PairedSet(rounds, []func(int) Result{work}, []func(time.Duration) Result{ceiling})
	return ws[0], cs[0]
}

// PairedSet is Paired for several contenders, each with its own ceiling
// (work[i] with ceiling[i]; the slices have the same length): a round runs
// each contender's work and then its ceiling for as long, contender after
// contender. Contenders that differ in their number of workers then see
// the same stretches of the machine too, so that the ratio of one's rate
// to another's (two workers' scaling over one) is paired in time as well.
func PairedSet(rounds int, work []func(round int) Result, ceiling []func(d time.Duration) Result) (w, c []Result) {
	const minSlice = 5 * time.Millisecond
	w, c = make([]Result, len(work)), make([]Result, len(work))
	runs := make([]func(int) error, 0, 2*len(work))
	for i := range work {
		var last time.Duration
		runs = append(runs, func(round int) error {
			r := work[i](round)
			w[i], last = w[i].Add(r), r.Elapsed
			return nil
		}, func(int) error {
			c[i] = c[i].Add(ceiling[i](max(last, minSlice)))
			return nil
		})
	}
	Alternate(max(rounds, 1), runs...)
	return w, c
}

// Work runs fn on workers goroutines, each locked to its OS thread, and
// returns the summed operation count with wall and per-thread CPU rates.
// fn(w) does the work of worker w and returns its operation count.
func Work(workers int, fn func(w int) int64) Result {
	return work(workers, time.Now(), fn)
}

// work is Work with its wall time counted from start.
func work(workers int, start time.Time, fn func(w int) int64) Result {
	workers = max(workers, 1)
	var wg sync.WaitGroup
	ops := make([]int64, workers)
	cpu := make([]time.Duration, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			c0 := cputime.Thread()
			ops[w] = fn(w)
			cpu[w] = cputime.Thread() - c0
		}(w)
	}
	wg.Wait()
	return result(ops, cpu, time.Since(start))
}

func result(ops []int64, cpu []time.Duration, el time.Duration) Result {
	r := Result{Elapsed: el, Workers: len(ops), ops: ops, cpu: cpu}
	for w, o := range ops {
		r.Ops += o
		if cpu[w] > 0 {
			r.CPUPerSec += float64(o) / cpu[w].Seconds()
		}
	}
	r.PerSec = float64(r.Ops) / el.Seconds()
	return r
}

// sink defeats dead-code elimination of the measured loads.
var sink uint64

var sinkMu sync.Mutex

// run starts workers goroutines, each calling step(w, r) until the time
// budget is spent, and sums the operations step reports.
func run(workers int, d time.Duration, step func(w int, r *rng.Rand) (ops int64, sum uint64)) Result {
	// The wall time starts where the deadline does, so that it is at
	// least d (it was a few microseconds short when counted from later).
	start := time.Now()
	deadline := start.Add(d)
	return work(workers, start, func(w int) int64 {
		r := rng.New(rng.Derive(0x5eed, uint64(w)))
		var s uint64
		var ops int64
		// At least one step, even when the worker starts after the
		// deadline on a loaded machine (else it would report no work).
		for {
			n, x := step(w, r)
			ops += n
			s += x
			if !time.Now().Before(deadline) {
				break
			}
		}
		sinkMu.Lock()
		sink += s
		sinkMu.Unlock()
		return ops
	})
}

// RandomReads measures independent random 4-byte reads per second over a
// on workers goroutines for about d. Every read's address comes from a
// random generator, not from a previous read, so the memory system may
// serve many at once, as it can for a sampler that reads the neighbour
// lists of many nodes.
func RandomReads(a []uint32, workers int, d time.Duration) Result {
	n := uint64(len(a))
	return run(workers, d, func(_ int, r *rng.Rand) (int64, uint64) {
		const batch = 1 << 14
		var s uint64
		for i := 0; i < batch; i += 4 {
			x := r.Uint64()
			// Two 32-bit draws per 64-bit number, multiply-shift to [0,n).
			i0 := (x & 0xffffffff) * n >> 32
			i1 := (x >> 32) * n >> 32
			y := r.Uint64()
			i2 := (y & 0xffffffff) * n >> 32
			i3 := (y >> 32) * n >> 32
			s += uint64(a[i0]) + uint64(a[i1]) + uint64(a[i2]) + uint64(a[i3])
		}
		return batch, s
	})
}

// Arithmetic measures a random generator's steps per second on workers
// goroutines for about d: integer arithmetic in registers, touching no
// memory. Each worker's rate per CPU-second is what one core computes
// while the others compute too, so the ratio of two workers' CPUPerSec to
// one's is the host's own scaling of computation: under 2 where virtual
// CPUs share a physical core, or the cores share a power budget and slow
// their clocks when more of them are busy. Work that is part computation
// cannot scale better than that.
func Arithmetic(workers int, d time.Duration) Result {
	return run(workers, d, func(_ int, r *rng.Rand) (int64, uint64) {
		const steps = 1 << 14
		var s uint64
		for i := 0; i < steps; i++ {
			s += r.Uint64()
		}
		return steps, s
	})
}

// SeqCopy measures sequential copy bandwidth in bytes per second (bytes
// copied, each read once and written once): every worker copies its own
// buffer of size bytes into another, repeatedly.
func SeqCopy(size int, workers int, d time.Duration) Result {
	workers = max(workers, 1)
	src := make([][]byte, workers)
	dst := make([][]byte, workers)
	for w := range src {
		src[w] = make([]byte, size)
		dst[w] = make([]byte, size)
		for i := 0; i < size; i += 4096 {
			src[w][i] = byte(i)
			dst[w][i] = 1
		}
	}
	const chunk = 1 << 20
	off := make([]int, workers)
	res := run(workers, d, func(w int, _ *rng.Rand) (int64, uint64) {
		o := off[w]
		if o+chunk > size {
			o = 0
		}
		n := copy(dst[w][o:o+chunk], src[w][o:o+chunk])
		off[w] = o + chunk
		return int64(n), uint64(dst[w][o])
	})
	runtime.KeepAlive(dst)
	return res
}

// RandomRows measures random-row gathers per second: each worker copies
// rows of dim float32 values chosen uniformly at random from table into a
// contiguous output buffer of outRows rows (a minibatch's worth: the
// output must be written to memory too), as a feature gather does, with
// no other work: a batch of ids is drawn first, then the rows are copied
// in order with the rows a few KiB ahead prefetched
// (internal/prefetch.RowsAhead), the fastest copy of random rows known
// here (1.3-1.8x a plain copy loop on these VMs, whose rows' misses
// overlap less). Multiply Result.PerSec by 4*dim for bytes per second.
func RandomRows(table []float32, dim, outRows int, workers int, d time.Duration) Result {
	var raw []byte
	if len(table) > 0 {
		raw = unsafe.Slice((*byte)(unsafe.Pointer(&table[0])), 4*len(table))
	}
	return RandomRowBytes(raw, 4*dim, outRows, workers, d)
}

// RandomRowBytes is RandomRows over rows of rowB bytes (the table's rows
// of any element type: float16 rows of dim values are 2*dim bytes), each
// copied as it is into an output of rows as wide: the ceiling of a gather
// that reads rows of that width.
func RandomRowBytes(table []byte, rowB, outRows int, workers int, d time.Duration) Result {
	rows := uint64(len(table) / rowB)
	const batch = 1024
	outRows = max(outRows, batch)
	outs := make([][]byte, max(workers, 1))
	ids := make([][]int32, len(outs))
	pos := make([]int, len(outs))
	for w := range outs {
		outs[w] = make([]byte, outRows*rowB)
		ids[w] = make([]int32, batch)
		// Fault the destination in first (a fresh page's first touch costs
		// about 11 µs on these VMs): the ceiling is the copy's, not the
		// page faults' of a buffer the size of a batch.
		for i := 0; i < len(outs[w]); i += 4096 {
			outs[w][i] = 1
		}
	}
	ahead, group := prefetch.RowsAhead(rowB)
	return run(workers, d, func(w int, r *rng.Rand) (int64, uint64) {
		out := outs[w]
		p := pos[w]
		if p+batch > outRows {
			p = 0
		}
		id := ids[w]
		for i := range id {
			id[i] = int32((r.Uint64() >> 32) * rows >> 32)
		}
		prefetch.Rows(table, rowB, id[:ahead])
		next := 0 // the row at which the next group is prefetched (no division per row)
		for i, v := range id {
			if i == next {
				next += group
				if a := i + ahead; a < batch {
					prefetch.Rows(table, rowB, id[a:min(a+group, batch)])
				}
			}
			o := (p + i) * rowB
			copy(out[o:o+rowB], table[int(v)*rowB:int(v+1)*rowB])
		}
		pos[w] = p + batch
		return batch, uint64(out[p*rowB])
	})
}

// LoadLatency measures the latency of a dependent load (nanoseconds) when
// the data loaded spans size bytes: a pointer chase through every cache
// line of an array of that size, in one random cycle, loads times. It
// shows where the caches end on the machine it runs on (a random access
// into an array larger than them costs a trip to memory), which bounds
// code that looks ids up in arrays as large as a graph's node count.
func LoadLatency(size, loads int) float64 {
	const line = 64 / 4 // uint32s per cache line
	lines := max(2, size/64)
	a, free := hugemem.Alloc[uint32](lines * line)
	defer free()
	// Sattolo's shuffle: one cycle through every line.
	next := make([]uint32, lines)
	for i := range next {
		next[i] = uint32(i)
	}
	r := rng.New(uint64(size))
	for i := lines - 1; i > 0; i-- {
		j := r.IntN(i)
		next[i], next[j] = next[j], next[i]
	}
	for i, n := range next {
		a[i*line] = n * line
	}
	p := uint32(0)
	for range min(loads, lines) { // one lap to warm the caches and TLB
		p = a[p]
	}
	t0 := time.Now()
	for range loads {
		p = a[p]
	}
	el := time.Since(t0)
	runtime.KeepAlive(p)
	return float64(el.Nanoseconds()) / float64(loads)
}
