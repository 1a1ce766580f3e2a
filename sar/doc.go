// Package sar trains and runs GNNs on the whole graph across ranks, each
// holding a share of a partitioned dataset (dataset/parts), as IntelLabs'
// SAR (sequential aggregation and rematerialisation) does: a layer's
// aggregation pulls the other ranks' boundary rows one rank at a time,
// aggregates them into the running result and frees them, so a rank's
// memory falls as 1/N with N ranks.
//
//	s, err := sar.Open(ctx, comm, "data/products-8", sar.ShardOptions{Normalize: true})
//	e := sar.NewEngine(s, sar.SAR)                  // or sar.SA, sar.OneShot
//	res, err := sar.Run(ctx, e, cfg, train.Hooks{}) // train's full mode, over the ranks
//	logits, err := e.Logits(ctx, res.Model)         // inference of any checkpoint
//
// P parts on N ranks (P a multiple of N): rank r merges parts r·P/N ..
// (r+1)·P/N-1 into one Shard, groups the in-edges of its nodes by the rank
// owning their source, and agrees with every other rank which of its rows
// that rank reads (the exchange plan). Modes:
//
//   - SAR: per layer, rank after rank, receive its boundary rows, aggregate,
//     free. Sum, mean and GCN aggregation are linear, so their backward
//     pass is closed form: gradients of the fetched rows go back to their
//     owners and no row is fetched again. GAT's backward needs the rows
//     again (its coefficients' gradients): SAR fetches them again.
//   - SA: as SAR, but GAT keeps the fetched rows for backward.
//   - OneShot: one all-to-all-v per layer with every boundary row.
//
// GCN uses the exact normalisation with global degrees (every part stores
// its nodes' and halo's global in-degrees); GraphSAGE's mean divides by
// the global in-degree; GAT's edge softmax takes the attention terms of
// remote sources first, so every destination's maximum and sum are
// computed where it lives; APPNP propagates its MLP's predictions. With
// Engine.MFG a training step runs on message flow graphs: each layer only
// on the receptive field of the training nodes.
//
// Equivalence: the dropout masks are keyed by global node id (and GAT's
// attention dropout by the global edge index) and are exactly the masks
// tensor.Dropout draws for the whole graph in one process, the loss is
// the mean over all ranks' training nodes, and gradients are summed over
// the ranks: a step on N ranks computes the single process's full-graph
// step up to float32 rounding (tested for every model and mode, with and
// without MFG, on 1, 2 and 4 ranks), and Run follows 'graphmill train
// --mode full' epoch by epoch.
package sar
