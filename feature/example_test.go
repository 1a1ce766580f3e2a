package feature_test

import (
	"context"
	"fmt"

	"github.com/graphmill/graphmill/feature"
)

// Gather rows of a small in-memory table, with the two hottest rows cached.
func Example() {
	x := []float32{
		0, 0.5, // node 0
		1, 1.5, // node 1
		2, 2.5, // node 2
	}
	st, err := feature.FromFloat32(x, 3, 2, feature.Options{
		CacheBytes: 2 * 2 * 4,                           // two rows of two float32
		CacheOrder: feature.HotOrder([]uint32{1, 9, 5}), // node 1 hottest, then 2
	})
	if err != nil {
		panic(err)
	}
	out := make([]float32, 3*st.Dim())
	if err := st.Gather(context.Background(), []int32{2, 0, 1}, out); err != nil {
		panic(err)
	}
	fmt.Println(out)
	cs := st.CacheStats()
	fmt.Printf("cached %d rows, hit rate %.2f\n", cs.Rows, cs.HitRate())
	// Output:
	// [2 2.5 0 0.5 1 1.5]
	// cached 2 rows, hit rate 0.67
}

// Half-precision conversions round to nearest even.
func ExampleF32ToF16() {
	h := feature.F32ToF16(0.1)
	fmt.Printf("%#04x %v\n", h, feature.F16ToF32(h))
	fmt.Printf("%#04x\n", feature.F32ToF16(65520)) // ties to even: infinity
	// Output:
	// 0x2e66 0.099975586
	// 0x7c00
}
