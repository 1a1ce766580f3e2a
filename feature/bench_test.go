package feature

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/graphmill/graphmill/bench/membench"
	"github.com/graphmill/graphmill/internal/hugemem"
	"github.com/graphmill/graphmill/internal/par"
	"github.com/graphmill/graphmill/internal/rng"
)

var (
	benchOnce  sync.Once
	benchTable []float32
	benchIDs   []int32
)

const benchRows, benchDim, benchBatch = 1 << 20, 128, 100_000

func benchData() ([]float32, []int32) {
	benchOnce.Do(func() {
		benchTable, _ = hugemem.Alloc[float32](benchRows * benchDim)
		par.For(par.Workers(0), benchRows, func(_, lo, hi int) {
			r := rng.New(uint64(lo))
			for i := lo * benchDim; i < hi*benchDim; i++ {
				benchTable[i] = r.Normalish()
			}
		})
		r := rng.New(1)
		benchIDs = make([]int32, benchBatch)
		for i := range benchIDs {
			benchIDs[i] = int32(r.IntN(benchRows))
		}
	})
	return benchTable, benchIDs
}

// BenchmarkGather gathers 100k uniformly random rows of 128 values from a
// 1M-row in-memory table (512 MiB as float32) on one goroutine, and
// reports rows per CPU-second and the ratio to membench.RandomRows (a
// plain copy loop over the same table into a buffer of the same size).
func BenchmarkGather(b *testing.B) {
	table, ids := benchData()
	ceiling := membench.RandomRows(table, benchDim, benchBatch, 1, 300*time.Millisecond).CPUPerSec
	for _, dtype := range []DType{Float32, Float16, BFloat16} {
		b.Run(dtype.String(), func(b *testing.B) {
			var st *Store
			var err error
			switch dtype {
			case Float32:
				st, err = FromFloat32(table, benchRows, benchDim, Options{Workers: 1})
			default:
				h, free := hugemem.Alloc[byte](len(table) * 2)
				defer free()
				enc := EncodeF16
				if dtype == BFloat16 {
					enc = EncodeBF16
				}
				u := unsafeU16(h)
				par.For(par.Workers(0), benchRows, func(_, lo, hi int) { enc(u[lo*benchDim:hi*benchDim], table[lo*benchDim:hi*benchDim]) })
				st, err = New(h, dtype, benchRows, benchDim, Options{Workers: 1})
			}
			if err != nil {
				b.Fatal(err)
			}
			out := make([]float32, len(ids)*benchDim)
			_ = st.Gather(context.Background(), ids, out) // touch the output
			b.ResetTimer()
			res := membench.Work(1, func(int) int64 {
				for i := 0; i < b.N; i++ {
					if err := st.Gather(context.Background(), ids, out); err != nil {
						b.Error(err)
					}
				}
				return int64(b.N * len(ids))
			})
			b.ReportMetric(res.CPUPerSec/1e6, "Mrows/cpu-s")
			b.ReportMetric(res.CPUPerSec/ceiling, "x_ceiling")
			b.ReportMetric(0, "ns/op")
		})
	}
}
