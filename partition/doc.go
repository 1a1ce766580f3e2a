// Package partition splits a graph's nodes into K parts with few edges
// between parts and balanced sizes, as METIS does for ClusterGCN,
// GNNAutoScale and DistDGL, in pure Go. Package dataset/parts writes the
// result as a partitioned dataset that workers load part by part (and
// reads it back without linking this package).
//
// # Partitioning
//
// The partitioners work on a Graph: a compact symmetric CSR (int32 ids,
// 8 bytes per node + 8 bytes per undirected edge, no self-loops or
// repeated edges). Build one from a dataset's CSC with FromCSC, or from an
// edge list with FromEdges, then call Partition:
//
//	d, _ := dataset.Open(dir)
//	g, _ := partition.FromCSC(ctx, d.Graph, 0)
//	res, _ := partition.Partition(ctx, g, partition.Options{Parts: 16})
//	res.Parts          // part of every node
//	res.Stats.EdgeCut  // undirected edges between parts
//	book, _ := parts.Write(ctx, d, res.Parts, 16, out,
//		parts.WriteOptions{Method: "metis", Stats: res.Stats}) // partitioned dataset
//
// Methods:
//
//   - Multilevel ("metis", the default) is a multilevel k-way partitioner
//     in the manner of METIS's kmetis. Coarsening contracts a heavy-edge
//     matching (rating w(u,v)^2/weight(u), visiting vertices by increasing
//     degree, then pairing leftover vertices that share a neighbour, which
//     keeps power-law graphs shrinking) and accumulates vertex and edge
//     weights, down to about 30*K vertices; the contraction runs in
//     parallel, reusing its buffers from level to level. The coarsest
//     graph is split twice (three times for K <= 4 when it is 50 times
//     smaller than the input; in parallel) by
//     recursive bisection, and the best split kept. Each bisection is
//     itself multilevel: greedy graph growing from 8 random seeds with
//     Fiduccia-Mattheyses (FM) refinement, small connected components set
//     aside and packed in afterwards (so that the cut falls where the
//     graph is thin, not where the balance happens to be reached), and FM
//     at every level back up. While uncoarsening, every level is refined
//     by greedy boundary moves computed in parallel and applied best gain
//     first, then, on levels of up to 5,000 vertices or of fewer than 300
//     a part, one pass of k-way FM (negative moves allowed, rolled back
//     to the best prefix; gains evaluated lazily; at most about half as
//     many vertex visits as boundary vertices) and, on larger levels,
//     localized two-way FM
//     searches on each pair of adjacent parts (each from one boundary
//     vertex whose move loses little, a few moves deep, rolled back to
//     its best prefix; pairs that share no part searched in parallel;
//     skipped on the levels between one where they found under 1/2000
//     of the cut and the finest), within the balance limits, with a
//     balancing pass when a limit is exceeded, followed by greedy rounds
//     until they gain little.
//     Then rounds of V-cycles (Options.VCycles; by default two on graphs
//     of up to 32,768 edges, none on larger ones): the graph is coarsened
//     again, pairing only vertices of the same part, so the partition
//     carries to the coarsest level unchanged, and refined level by level
//     on the way back, where moving a coarse vertex moves a whole
//     cluster. A round runs two such cycles from the partition so far (in
//     parallel on small graphs) and keeps the better one only if it
//     lowers the cut (or mends the balance).
//   - Fennel is the one-pass streaming partitioner of Tsourakakis et al.
//     (WSDM 2014), with hard balance limits: a worse cut, but it needs
//     only the graph and 8*K+4 bytes per node more.
//   - Random assigns a random permutation to parts in equal runs.
//
// Balance: every part holds at most Imbalance (default 1.03, METIS's
// ufactor=30) times the average node count. Options.Weights adds
// constraints balanced at the same time (multi-constraint, as DGL's
// balance_ntypes and balance_edges); BalanceWeights builds the usual ones
// (training nodes, in-degrees) from a dataset.
//
// Results are deterministic for a seed, whatever the number of workers
// and, unless memory is too short to keep the coarse levels (see the
// memory paragraph below), whatever the memory.
// K must be in [1, number of nodes]; disconnected graphs and isolated
// nodes are fine (FromCSC and FromEdges drop self-loops and duplicates).
//
// Memory of Multilevel: the input Graph (8 B/node + 8 B/undirected edge)
// plus the coarse levels, which hold 8 B per stored entry (4 B id + 4 B
// weight, two entries per edge) plus 12 B per node. On graphs that coarsen
// well (meshes, social graphs) the levels together hold about as many
// entries as the input; on graphs whose edges do not shrink when
// coarsened (random edges between communities) they could hold ten times
// more, so coarse levels beyond Options.MaxCoarseBytes (default 6x the
// input graph) are dropped after use and only projected through. Add
// about 68 B/node of matching, mapping and refinement arrays (8 of them
// the localized searches' state), up to about 40 B for each boundary
// node and part next to it while a level's searches are set up, and the
// largest contraction in flight (two levels). Measured peak RSS of the
// whole benchmark process on the 5M-node, 25M-edge synthetic graph
// (undirected: 50M entries) is in partition/README.md. At the default
// budget the worst case is about 8 (input) + 48 (kept levels) + 16
// (levels kept because they halved the edges) + 32 (two levels in
// flight) = about 100 B per undirected edge, and typically far less. A
// level is kept only while the memory the process may still take
// (memstat.Room: the system's, or a memory cgroup's) holds two more of
// its size (the contractions still to come) beside about 100 B per input
// node (refinement; asked where that comes to 64 MiB or more), so a graph
// that does not fit at the default budget keeps fewer levels (a partition
// refined on fewer of them) instead of being killed: the 10M-node
// synthetic graph of 200M undirected edges (1.7 GB as a Graph) in a 20 GB
// memory cgroup, killed after 175 s before, partitions at K = 16 in 5.3
// minutes, peak 19.8 GB (gpmetis, at the 143 B per undirected edge it
// took on the 5M-node graph, would need about 29 GB).
// FromCSC additionally needs a reversed copy of the input's indices (4
// B/input edge) while it runs. The initial partitions (up to 4 recursive
// bisections of one coarse level, with their own coarse levels) take about
// 5x that level each; they run side by side only as far as the memory the
// process may still take holds them (memstat.Room: the system's, or a
// memory cgroup's), else one after another, and the partition is the same
// either way.
//
// Multilevel's working memory comes from an arena (internal/arena):
// anonymous memory populated in bulk and unmapped when Partition returns.
// On the virtual machines this project runs on, the first touch of a fresh
// page costs about 10 µs, against about 2 µs for a page populated in bulk:
// a partitioning run that starts from a cold heap (a new process) spent
// half its time in page faults on small graphs, and on the 5M-node
// synthetic graph the Go heap took 15-19 s of system time in a 40-50 s
// run (5-7 s from the arena). The arena gives memory back where a step's
// temporaries end: each initial run on a level of 4 MiB or more takes an
// arena of its own, which each bisection gives its temporaries back to
// (arena.Mark, Release); coarse levels dropped for memory give their
// pages back (arena.Discard); a V-cycle that runs alone gives back its
// levels. Otherwise it holds what it handed out (about 5.5x the input
// graph on the METIS mesh "wave") until Partition returns. Peak RSS: the
// 1M-node graph at K = 4 1.09 GB instead of 3.11, the 5M-node graph 4.6 GB
// instead of 4.9-5.5 (K = 4) and 3.4 instead of 3.9 (K = 16). Where
// anonymous mappings are not available it falls back to the Go heap. A
// process that partitions small graphs again and again on a warm heap
// gains nothing from the arena and pays the bulk population on every
// run: wave K=4 takes about 105-110 ms now from a warm or a cold heap,
// against 74 ms (warm) and 163 ms (cold) on the Go heap.
//
// # Partitioned datasets
//
// The on-disk format (partition book, one native dataset per part with its
// halo, node maps, global degrees), its writer and its reader are in
// package dataset/parts, so that a worker reading its part does not link
// the partitioner; "graphmill partition" partitions with this package and
// writes with that one.
//
// Package gpmetis runs METIS's gpmetis for comparisons, and
// bench/partitionbench is "graphmill bench partition".
package partition
