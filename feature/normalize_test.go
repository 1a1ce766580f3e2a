package feature

import (
	"context"
	"math"
	"testing"
)

// TestNormalizeRows checks on-the-fly row normalisation against a
// normalised copy computed the way training used to (float64 row sums,
// one float32 factor per row): bitwise equal, for every dtype, with and
// without the hot cache; and that features with a negative value are left
// as they are.
func TestNormalizeRows(t *testing.T) {
	const n, dim = 3000, 29
	x := randomRows(n, dim, 7)
	for i := range x {
		x[i] = float32(math.Abs(float64(x[i])))
	}
	for i := 0; i < dim; i++ {
		x[5*dim+i] = 0 // a row summing to 0 stays 0
	}
	ids := make([]int32, 0, n)
	for v := n - 1; v >= 0; v -= 3 {
		ids = append(ids, int32(v))
	}
	ctx := context.Background()
	for _, dt := range []DType{Float32, Float16, BFloat16} {
		for _, cache := range []int64{0, 200 * int64(dim) * int64(dt.Size())} {
			b, stored := encode(x, dt)
			opts := Options{Workers: 2, CacheBytes: cache}
			if cache > 0 {
				opts.CacheOrder = ids
			}
			st, err := New(b, dt, n, dim, opts)
			if err != nil {
				t.Fatal(err)
			}
			ok, err := st.NormalizeRows(ctx)
			if err != nil || !ok {
				t.Fatalf("%v: NormalizeRows = %v, %v", dt, ok, err)
			}
			if _, direct := st.Float32Rows(); direct {
				t.Fatalf("%v: Float32Rows offers unscaled rows after NormalizeRows", dt)
			}
			got := make([]float32, len(ids)*dim)
			if err := st.Gather(ctx, ids, got); err != nil {
				t.Fatal(err)
			}
			for i, v := range ids {
				row := stored[int(v)*dim : int(v+1)*dim]
				var s float64
				for _, f := range row {
					s += float64(f)
				}
				for j, f := range row {
					want := f
					if s != 0 {
						want = f * float32(1/s)
					}
					if g := got[i*dim+j]; math.Float32bits(g) != math.Float32bits(want) {
						t.Fatalf("%v cache %d: node %d value %d = %v, want %v", dt, cache, v, j, g, want)
					}
				}
			}
			st.Close()
		}
	}
	y := append([]float32(nil), x...)
	y[len(y)-1] = -1
	st, err := FromFloat32(y, n, dim, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := st.NormalizeRows(ctx); ok || err != nil {
		t.Fatalf("negative feature: NormalizeRows = %v, %v; want false, nil", ok, err)
	}
	if d, direct := st.Float32Rows(); !direct || &d[0] != &y[0] {
		t.Fatal("Float32Rows of an unscaled float32 store is not the rows in place")
	}
}

// TestConvert checks that a converted in-memory copy returns the source's
// rows rounded through the target dtype.
func TestConvert(t *testing.T) {
	const n, dim = 1000, 16
	x := randomRows(n, dim, 3)
	src, err := FromFloat32(x, n, dim, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ids := []int32{999, 0, 17, 17, 500}
	for _, dt := range []DType{Float32, Float16, BFloat16} {
		c, err := Convert(context.Background(), src, dt, Options{CacheBytes: 64 * int64(dim), CacheOrder: []int32{17, 3}})
		if err != nil {
			t.Fatal(err)
		}
		if c.DType() != dt {
			t.Fatalf("converted dtype %v, want %v", c.DType(), dt)
		}
		_, want := encode(x, dt)
		got := make([]float32, len(ids)*dim)
		if err := c.Gather(context.Background(), ids, got); err != nil {
			t.Fatal(err)
		}
		for i, v := range ids {
			for j := 0; j < dim; j++ {
				if got[i*dim+j] != want[int(v)*dim+j] {
					t.Fatalf("%v: node %d value %d = %v, want %v", dt, v, j, got[i*dim+j], want[int(v)*dim+j])
				}
			}
		}
		if cs := c.CacheStats(); cs.Hits != 2 || cs.Misses != 3 {
			t.Fatalf("%v: cache hits %d misses %d, want 2 and 3", dt, cs.Hits, cs.Misses)
		}
		c.Close()
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Convert(ctx, src, Float16, Options{}); err == nil {
		t.Fatal("Convert ignored a cancelled context")
	}
}

// TestNormalizeRowsDeclinesInfinity: a row holding +Inf would come out as
// NaN (Inf·0); NormalizeRows leaves the rows as they are and says so.
func TestNormalizeRowsDeclinesInfinity(t *testing.T) {
	st, err := FromFloat32([]float32{float32(math.Inf(1)), 1, 2, 3}, 2, 2, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := st.NormalizeRows(context.Background()); ok || err != nil {
		t.Fatalf("NormalizeRows = %v, %v; want false, nil", ok, err)
	}
}
