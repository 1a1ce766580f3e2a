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
	benchOnce.Do(func() { benchTable, benchIDs = randomTable(benchRows, benchDim, 1) })
	return benchTable, benchIDs
}

// randomTable returns a table of rows rows of dim random values in
// huge-page memory and benchBatch random ids into it (seeded by seed).
func randomTable(rows, dim int, seed uint64) ([]float32, []int32) {
	table, _ := hugemem.Alloc[float32](rows * dim)
	par.For(par.Workers(0), rows, func(_, lo, hi int) {
		r := rng.New(uint64(lo))
		for i := lo * dim; i < hi*dim; i++ {
			table[i] = r.Normalish()
		}
	})
	r := rng.New(seed)
	ids := make([]int32, benchBatch)
	for i := range ids {
		ids[i] = int32(r.IntN(rows))
	}
	return table, ids
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

// BenchmarkGatherCached gathers 100k uniformly random rows on one
// goroutine through a hot cache holding a tenth of the rows (chosen at
// random; "nocache": none), from an in-memory float32 table: 1M rows of
// 128 values, and 10M rows of 8 (a row a cache line, where the cache's
// lookup weighs most). It reports rows per CPU-second, the ratio to
// membench.RandomRows over the same table (no cache; paired: each gather
// followed by the ceiling for as long) and the hit rate.
func BenchmarkGatherCached(b *testing.B) {
	for _, c := range []struct {
		name      string
		rows, dim int
		cache     bool
	}{{"1Mx128", benchRows, benchDim, true}, {"10Mx8", 10 << 20, 8, true}, {"10Mx8/nocache", 10 << 20, 8, false}} {
		b.Run(c.name, func(b *testing.B) {
			table, ids := benchData()
			if c.rows != benchRows {
				table, ids = benchSmallRows(c.rows, c.dim)
			}
			opts := Options{Workers: 1}
			if c.cache {
				order := make([]int32, c.rows)
				for i := range order {
					order[i] = int32(i)
				}
				r := rng.New(3)
				for i := len(order) - 1; i > 0; i-- {
					j := r.IntN(i + 1)
					order[i], order[j] = order[j], order[i]
				}
				opts.CacheBytes, opts.CacheOrder = int64(c.rows/10)*int64(4*c.dim), order
			}
			st, err := FromFloat32(table, c.rows, c.dim, opts)
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			out := make([]float32, len(ids)*c.dim)
			_ = st.Gather(context.Background(), ids, out) // touch the output
			st.ResetStats()
			b.ResetTimer()
			w, ceil := membench.Paired(b.N, func(int) membench.Result {
				return membench.Work(1, func(int) int64 {
					if err := st.Gather(context.Background(), ids, out); err != nil {
						b.Error(err)
					}
					return int64(len(ids))
				})
			}, func(d time.Duration) membench.Result {
				return membench.RandomRows(table, c.dim, benchBatch, 1, d)
			})
			b.ReportMetric(w.CPUPerSec/1e6, "Mrows/cpu-s")
			b.ReportMetric(w.CPUPerSec/ceil.CPUPerSec, "x_ceiling")
			b.ReportMetric(st.CacheStats().HitRate(), "hit_rate")
			b.ReportMetric(0, "ns/op")
		})
	}
}

var (
	smallOnce  sync.Once
	smallTable []float32
	smallIDs   []int32
)

// benchSmallRows returns BenchmarkGatherCached's table of rows rows of dim
// values (made once) and 100k random ids into it.
func benchSmallRows(rows, dim int) ([]float32, []int32) {
	smallOnce.Do(func() { smallTable, smallIDs = randomTable(rows, dim, 2) })
	return smallTable, smallIDs
}
