// Package feature serves node feature rows to minibatch training: Gather
// copies the rows of a minibatch's input nodes into one contiguous float32
// buffer, in parallel, from features held in memory or memory-mapped from
// a dataset directory (so features larger than RAM are read from disk as
// they are needed), stored as float32, float16 or bfloat16 (half the
// bytes, converted on the fly), with an optional hot-row cache in front.
//
//	st, err := feature.Open(d, feature.Options{
//		CacheBytes: 2 << 30,                     // --feature-cache 2GiB
//		CacheOrder: feature.DegreeOrder(d.Graph), // or HotOrder(pre-sampled counts)
//	})
//	ids, err := mb.Local() // a batch.MiniBatch's input nodes as int32 ids
//	out := make([]float32, len(ids)*st.Dim())
//	err = st.Gather(context.Background(), ids, out)
//
// The cache is torch-quiver's and PaGraph's idea on CPUs: the hottest rows
// are copied into a compact in-memory table (huge pages, in the storage
// dtype) under a byte budget, with a node-to-slot map, so that when the
// features live on disk or in a remote tier most gathered rows come from
// fast memory. Which rows are hot is the caller's choice: DegreeOrder ranks
// nodes by how often they can be sampled (their appearances as a source in
// the CSC), HotOrder ranks them by any score, such as the counts of a
// pre-sampling pass (sample.Sampler.CountInputs, GNNLab's policy).
//
// F16ToF32, F32ToF16, BF16ToF32 and F32ToBF16 are exact conversions with
// round-to-nearest-even; ConvertDataset writes a dataset's features as
// float16 or bfloat16.
package feature
