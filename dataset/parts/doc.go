// Package parts reads and writes partitioned datasets: a graph split into
// K parts, each a native dataset (package dataset) over its own nodes and
// their one-hop halo, plus a JSON partition book. A worker that trains on
// or serves one part imports this package alone; the partitioning
// algorithms that decide which node goes where are in package partition.
//
//	book, err := parts.ReadBook(dir)
//	p, err := parts.OpenPart(dir, book, rank)
//	defer p.Close()
//	p.Graph, p.Features, p.Train     // the local dataset (memory-mapped)
//	p.GlobalIDs[local]               // original id of a local node
//	p.InDegrees[local]               // its in-degree in the whole graph
//
// Write creates one from a dataset and a part assignment (this is what
// "graphmill partition" does after partitioning).
//
// # Format (format "graphmill-partition", format_version 2)
//
//	out/
//	  partition.json   the Book: format, format_version, name, num_parts,
//	                   num_nodes, num_edges, method, imbalance, balance,
//	                   seed, stats (edge_cut, part_sizes, imbalance, ...),
//	                   arrays (file names of the maps below), and parts: one
//	                   entry per part {dir, node_range [start, end),
//	                   num_inner, num_halo, num_edges, train, val, test,
//	                   arrays}
//	  part_ids.npy     int32 [num_nodes]  part of every original node
//	  orig_ids.npy     int32 [num_nodes]  original id of every reordered node
//	  new_ids.npy      int32 [num_nodes]  reordered id of every original node
//	  part0/ ... partK-1/   one native dataset (dataset.Open works) per part
//
// Reordering numbers the nodes part by part (each part's nodes keep their
// relative order), so part p owns the reordered ids node_range[p]; this is
// the reordering GNNAutoScale uses (see Reorder).
//
// A part directory holds num_inner+num_halo local nodes. Local ids
// 0..num_inner-1 are the part's own (inner) nodes in reordered order, so
// local id i is reordered id node_range[0]+i. They are followed by the
// halo nodes: the nodes owned by other parts that are in-neighbours (edge
// sources) of inner nodes, in increasing original id. The local graph
// (indptr.npy, indices.npy, edge_weight.npy if the dataset has weights,
// CSC: in-neighbours per node, sorted) holds every in-edge of every inner
// node, and no in-edges of halo nodes, so every edge of the original
// graph is stored in exactly one part: the part owning its destination.
// features.npy holds the features of inner and halo nodes (halo rows are
// copies, enough for one layer of aggregation without communication);
// labels.npy holds the inner nodes' labels and -1 for halo nodes;
// train_idx/val_idx/test_idx hold the local ids of the inner nodes in
// each split. The extra arrays are
//
//	global_ids.npy      int32 [num_local]  original id of every local node
//	halo_parts.npy      int32 [num_halo]   owning part of every halo node
//	halo_local_ids.npy  int32 [num_halo]   its local id in the owning part
//	in_degrees.npy      int32 [num_local]  in-degree in the whole graph
//	out_degrees.npy     int32 [num_local]  out-degree in the whole graph
//
// So global to local is part = part_ids[v], local = new_ids[v] -
// node_range[part][0], and local to global is global_ids[local]. The
// degrees count edges (not weights, no added self-loop): a halo node's
// in-edges live in its own part, yet GCN's and APPNP's symmetric
// normalisation of the messages it sends needs its full in-degree, which
// in_degrees.npy gives without the rest of the graph.
//
// Version 1 (before the degrees) is refused by ReadBook with a request to
// partition again; nothing else changed. Datasets are written atomically
// (a temporary sibling directory, fsynced and renamed into place).
package parts
