// Package sample draws neighbour-sampled minibatches (message-flow graphs)
// from a graph.CSC for minibatch GNN training, the way GraphSAGE, DGL's
// NeighborSampler, PyG's NeighborLoader and torch-quiver do, at close to the
// memory system's speed.
//
// A Sampler is built once for a graph and a list of fanouts, one per hop,
// starting at the seeds (PyG's and quiver's order: Fanouts{25, 10} takes 25
// in-neighbours of every seed and then 10 of every node reached):
//
//	s, err := sample.New(g, sample.Config{Fanouts: []int{25, 10}})
//	mb, err := s.Sample(seeds, 42)           // one minibatch, seeded with 42
//	for _, b := range mb.Blocks { ... }      // input layer first
//	mb.InputNodes                            // nodes whose features the first layer reads
//
// Each Block (graph.Block) is one layer's bipartite message-flow graph,
// compressed over its destination nodes: the sampled in-edges of
// destination i are Indices[Indptr[i]:Indptr[i+1]], and Indices holds
// LOCAL positions among the block's NumSrc sources. A block holds no node
// ids: the first block's sources are mb.InputNodes, and every later
// block's sources are the previous block's destinations. The first NumDst
// source nodes are the destination nodes
// themselves (DGL's to_block convention, PyG's "seeds first"), so a layer's
// output rows line up with the next layer's input rows and a GNN can take
// the destination's own features as h[:NumDst]. The last block's
// destinations are the seeds, in the order given. EdgeIDs holds each
// sampled edge's global id: g.EdgeIDs[p] when the graph has edge ids, else
// the edge's position p in the CSC. When the graph has edge weights, Weights
// holds each sampled edge's weight. A Block converts to the aggregation
// kernels' tensor.CSR by copying the fields:
//
//	tensor.CSR{Indptr: b.Indptr, Indices: b.Indices, Weights: b.Weights, NumSrc: b.NumSrc}
//
// (a model's layers take an nn.Block, which engine.Blocks makes from a
// minibatch's blocks with their sources' node ids).
//
// Sampling is uniform without replacement by default; Config.Replace draws
// with replacement and Config.Weighted draws in proportion to the graph's
// edge weights. A fanout of -1 takes every in-neighbour.
// SampleExcluding leaves given edge ids out of the population (link
// prediction: do not let a model see the edges it must predict).
//
// Draws are keyed, not streamed: the neighbours drawn for node v at hop h
// depend only on (key, h, v), where key is the value passed to Sample
// (sample.EpochKey(seed, epoch) for every batch of an epoch). So the
// minibatches do not depend on the number of sampling goroutines, and a
// node sampled in the same epoch by another batch, another rank or a
// sampler service over the same graph draws the same neighbours; a part of
// a partitioned graph keys its nodes by their global ids (Config.KeyIDs).
// Re-seeding the generator per node costs one 64-bit mix, well below the
// cost of the node's neighbour-range load. A Sampler is safe for concurrent use; its
// per-call scratch (the relabelling hash map and bitsets) is pooled, and
// SampleInto reuses a MiniBatch's buffers, so steady-state sampling does not
// allocate.
//
// Uniform sampling without replacement (the default) runs each hop as one
// loop that reads the new destinations' neighbour ranges, draws, and
// loads the sampled sources, prefetching the ranges 16 destinations ahead
// and the neighbour lists 8 ahead (twice as far in hops of few draws;
// internal/prefetch), so the cache
// misses overlap the draws' arithmetic instead of alternating with it:
// 12-26 % more edges per CPU-second than separate passes. On a graph
// whose offsets and neighbour lists fit in 2 MiB (Cora, CiteSeer,
// PubMed), which stays in cache, a hop runs in passes instead: one kernel
// reads every range and copies the lists of the destinations that keep
// all their neighbours, eight ids at a time without a branch on a list's
// length (AVX2), then the others draw (half the time a Cora minibatch
// took in the one loop). A graph of up to 16 MiB draws so the hops whose
// fanout is at least half its mean degree. Floyd's draws
// for a node of degree at most 64 keep the chosen set in one register
// (rng.FloydMask).
//
// Relabelling global ids to local positions takes one of two maps. On a
// graph of at most DenseRelabelNodes nodes (4M; DenseRelabelNodesVector,
// 16M, where AVX-512 F and CD relabel sixteen ids at a time, or AVX2
// eight; GRAPHMILL_KERNEL=avx2 or generic narrows the choice) it is a
// generation-stamped array of 4 bytes per node, allocated once per
// concurrent call, whose entries are prefetched ahead and updated without
// an unpredictable branch; new nodes are numbered in first-seen order. On a
// larger graph it is a radix-partitioned hash map: a hop's ids are
// distributed by hash into partitions of about 2,000, each relabelled with
// a small table (64 KiB) that stays in the core's cache, so memory per
// concurrent call is proportional to the minibatch, not to the graph; new
// nodes are numbered by partition. The array is faster while it is within
// a few times the last-level cache: on a 1M-node id space 1.2-1.6x
// (Xeon, Ice Lake), on 10M nodes 0.8x. Config.Relabel forces either
// (RelabelHash, RelabelDense); the default is RelabelAuto. Both give the
// same minibatch up to the numbering of its nodes, and an Assembler told
// the graph's node count numbers them as the Sampler does.
//
// At every hop but the last, the new nodes are numbered by buckets of
// 1024 ids, in increasing order (first-seen or partition order within a
// bucket: order.go): the next hop then reads the graph from low ids to
// high instead of at random, which took a [15,10,5] minibatch on a
// 1M-node graph 0.80 of the time (Xeon with AMX).
package sample
