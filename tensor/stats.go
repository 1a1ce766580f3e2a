package tensor

import (
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
}

// Sub returns s - o (the kernels' work between two readings).
func (s KernelStats) Sub(o KernelStats) KernelStats {
	return KernelStats{
		GEMM: s.GEMM - o.GEMM, GEMMFlops: s.GEMMFlops - o.GEMMFlops,
		Aggregate: s.Aggregate - o.Aggregate, AggregateElems: s.AggregateElems - o.AggregateElems,
		Elementwise: s.Elementwise - o.Elementwise, ElementwiseElems: s.ElementwiseElems - o.ElementwiseElems,
	}
}

var (
	statsOn                          atomic.Bool
	gemmNs, gemmFlops                atomic.Int64
	aggNs, aggElems, eltNs, eltElems atomic.Int64
	statsEpoch                       = time.Now()
)

// EnableKernelStats turns the kernels' timing on or off (off by default:
// then each kernel call pays one atomic load).
func EnableKernelStats(on bool) { statsOn.Store(on) }

// ReadKernelStats returns the totals so far.
func ReadKernelStats() KernelStats {
	return KernelStats{
		GEMM: time.Duration(gemmNs.Load()), GEMMFlops: gemmFlops.Load(),
		Aggregate: time.Duration(aggNs.Load()), AggregateElems: aggElems.Load(),
		Elementwise: time.Duration(eltNs.Load()), ElementwiseElems: eltElems.Load(),
	}
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
