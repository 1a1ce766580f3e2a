package tensor_test

import (
	"fmt"

	"github.com/graphmill/graphmill/tensor"
)

// Multiply two small matrices: C = 1·A·B + 0·C. Integer values are exact
// whichever kernel set (generic, AVX2, AVX-512) runs.
func ExampleGemm() {
	a, _ := tensor.FromSlice(2, 3, []float32{1, 2, 3, 4, 5, 6})
	b, _ := tensor.FromSlice(3, 2, []float32{1, 0, 0, 1, 1, 1})
	c := tensor.New(2, 2)
	if err := tensor.Gemm(tensor.NoTrans, tensor.NoTrans, 1, a, b, 0, c); err != nil {
		panic(err)
	}
	fmt.Println(c.Row(0), c.Row(1))
	// Aᵀ·A, without transposing A in memory.
	ata := tensor.New(3, 3)
	if err := tensor.Gemm(tensor.Trans, tensor.NoTrans, 1, a, a, 0, ata); err != nil {
		panic(err)
	}
	fmt.Println(ata.Row(0))
	// Output:
	// [4 5] [10 11]
	// [17 22 27]
}

// Aggregate the rows of source nodes into their destinations over a graph
// compressed by destination: destination 0 has sources 0 and 1,
// destination 1 has source 2.
func ExampleAggregate() {
	g := &tensor.CSR{Indptr: []int64{0, 2, 3}, Indices: []int32{0, 1, 2}, NumSrc: 3}
	x, _ := tensor.FromSlice(3, 2, []float32{1, 2, 3, 4, 10, 20})
	for _, mode := range []tensor.Reduce{tensor.Sum, tensor.Mean} {
		out := tensor.New(2, 2)
		if err := tensor.Aggregate(out, g, x, mode); err != nil {
			panic(err)
		}
		fmt.Println(mode, out.Row(0), out.Row(1))
	}
	// Output:
	// sum [4 6] [10 20]
	// mean [2 3] [10 20]
}
