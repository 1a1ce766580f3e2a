package tensor

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// KernelStats is the time the kernels took, by class, and the work they
// did, summed over every call since EnableKernelStats (wall time of each
// call, which runs on Threads() goroutines).
type KernelStats struct {
	// GEMM is the time in dense products (with their fused epilogues);
	// GEMMFlops their floating-point operations (2·m·n·k each).
	GEMM      time.Duration
	GEMMFlops int64
	// Aggregate is the time in sparse aggregation and its backward (mean,
	// sum, weighted, GAT attention); AggregateElems the float32 values of
	// source rows they read and accumulated (edges × columns).
	Aggregate      time.Duration
	AggregateElems int64
	// Elementwise is the time in element-wise and row-wise kernels: adds,
	// bias, activations and their gradients, dropout, log-softmax.
	Elementwise      time.Duration
	ElementwiseElems int64
	// GEMMShapes splits GEMM by the products' shapes, keyed by their
	// class: the operands' ops ("NT+" and "TN+" for products whose A or
	// B comes in parts, GemmNTMulti and GemmTNMulti) and m×n×k, a
	// dimension of 1024 or more given as the power-of-two range it lies
	// in ("8k-16k"), so that minibatches of varying size share a class.
	// Nil when no product ran.
	GEMMShapes map[string]GEMMClass
}

// GEMMClass is the products of one shape class: how many, their time
// and their floating-point operations.
type GEMMClass struct {
	Calls int64
	Time  time.Duration
	Flops int64
}

// Sub returns s - o (the kernels' work between two readings).
func (s KernelStats) Sub(o KernelStats) KernelStats {
	return s.combine(o, -1)
}

// Add returns s + o (the work of two spans).
func (s KernelStats) Add(o KernelStats) KernelStats {
	return s.combine(o, 1)
}

// combine returns s + sign·o.
func (s KernelStats) combine(o KernelStats, sign int64) KernelStats {
	d := time.Duration(sign)
	r := KernelStats{
		GEMM: s.GEMM + d*o.GEMM, GEMMFlops: s.GEMMFlops + sign*o.GEMMFlops,
		Aggregate: s.Aggregate + d*o.Aggregate, AggregateElems: s.AggregateElems + sign*o.AggregateElems,
		Elementwise: s.Elementwise + d*o.Elementwise, ElementwiseElems: s.ElementwiseElems + sign*o.ElementwiseElems,
	}
	fold := func(m map[string]GEMMClass, sign int64) {
		for k, c := range m {
			if r.GEMMShapes == nil {
				r.GEMMShapes = map[string]GEMMClass{}
			}
			a := r.GEMMShapes[k]
			r.GEMMShapes[k] = GEMMClass{Calls: a.Calls + sign*c.Calls, Time: a.Time + time.Duration(sign)*c.Time, Flops: a.Flops + sign*c.Flops}
		}
	}
	fold(s.GEMMShapes, 1)
	fold(o.GEMMShapes, sign)
	for k, c := range r.GEMMShapes {
		if c.Calls == 0 {
			delete(r.GEMMShapes, k)
		}
	}
	if len(r.GEMMShapes) == 0 {
		r.GEMMShapes = nil
	}
	return r
}

var (
	statsOn                          atomic.Bool
	aggNs, aggElems, eltNs, eltElems atomic.Int64
	statsEpoch                       = time.Now()
)

// EnableKernelStats turns the kernels' timing on or off (off by default:
// then each kernel call pays one atomic load).
func EnableKernelStats(on bool) { statsOn.Store(on) }

// ReadKernelStats returns the totals so far.
func ReadKernelStats() KernelStats {
	k := KernelStats{
		Aggregate: time.Duration(aggNs.Load()), AggregateElems: aggElems.Load(),
		Elementwise: time.Duration(eltNs.Load()), ElementwiseElems: eltElems.Load(),
	}
	gemmShapes.Lock()
	defer gemmShapes.Unlock()
	for key, c := range gemmShapes.m {
		if k.GEMMShapes == nil {
			k.GEMMShapes = make(map[string]GEMMClass, len(gemmShapes.m))
		}
		k.GEMMShapes[key.String()] = c
		k.GEMM += c.Time
		k.GEMMFlops += c.Flops
	}
	return k
}

// gemmShapes holds KernelStats.GEMMShapes, keyed without a string so
// that timing a product allocates only for a class not seen before.
var gemmShapes struct {
	sync.Mutex
	m map[gemmKey]GEMMClass
}

// gemmKey is a product's shape class: its ops and m×n×k, each dimension
// of 1024 or more as minus the largest power of two at most it (dimClass).
type gemmKey struct {
	op      string
	m, n, k int
}

// dimClass returns d below 1024, else minus the largest power of two at
// most d.
func dimClass(d int) int {
	if d < 1024 {
		return d
	}
	p := 1024
	for p <= d/2 {
		p *= 2
	}
	return -p
}

// String formats the class as "NT 8k-16k×256×200".
func (g gemmKey) String() string {
	dim := func(d int) string {
		if d >= 0 {
			return fmt.Sprint(d)
		}
		return fmt.Sprintf("%dk-%dk", -d/1024, -d/512)
	}
	return g.op + " " + dim(g.m) + "×" + dim(g.n) + "×" + dim(g.k)
}

// statEndGEMM ends the timing of a product of op (see gemmKey) and shape
// m×n×k started at t0 (statStart), adding it to its class (GEMM and
// GEMMFlops are the classes' sums).
func statEndGEMM(t0 int64, op string, m, n, k int) {
	if t0 == 0 {
		return
	}
	ns := time.Duration(int64(time.Since(statsEpoch)) - t0)
	key := gemmKey{op, dimClass(m), dimClass(n), dimClass(k)}
	gemmShapes.Lock()
	defer gemmShapes.Unlock()
	if gemmShapes.m == nil {
		gemmShapes.m = map[gemmKey]GEMMClass{}
	}
	c := gemmShapes.m[key]
	gemmShapes.m[key] = GEMMClass{Calls: c.Calls + 1, Time: c.Time + ns, Flops: c.Flops + 2*int64(m)*int64(n)*int64(k)}
}

// statStart returns the start of a timed kernel call (0 when timing is off).
func statStart() int64 {
	if !statsOn.Load() {
		return 0
	}
	return int64(time.Since(statsEpoch))
}

func statEnd(t0 int64, ns, work *atomic.Int64, amount int64) {
	if t0 == 0 {
		return
	}
	ns.Add(int64(time.Since(statsEpoch)) - t0)
	work.Add(amount)
}
