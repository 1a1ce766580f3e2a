// Package importer reads graph datasets in the formats they are published
// in and returns them as a *dataset.Raw, ready for dataset.Write:
//
//   - Planetoid / PlanetoidFS: the original Planetoid pickles
//     ind.<name>.{x,y,tx,ty,allx,ally,graph,test.index} of Cora, CiteSeer
//     and PubMed, assembled exactly as PyG does, with the standard split;
//   - NPZ: NumPy .npz archives of scipy CSR matrices (shchur/gnn-benchmark
//     and klicperajo/ppnp), with an optional seeded random split;
//   - OGB: the raw CSV layout of Open Graph Benchmark node-property
//     datasets (raw/edge.csv.gz, node-feat, node-label, split/...);
//   - EdgeList / ReadEdgeList: plain or compressed text edge lists (SNAP
//     style), optionally weighted, with optional id relabelling;
//   - METIS / ReadMETIS: graphs in the METIS/Chaco format.
//
// Every importer validates what it reads: ids out of range, negative ids,
// labels out of range, wrong dtypes, truncated data and inconsistent shapes
// are reported as errors that name the file and the problem (and, for text
// formats, the line). A nil error guarantees a consistent Raw: all node ids
// in 0..NumNodes-1, matching lengths, labels in 0..NumClasses-1 or -1 for
// unlabelled nodes, and pairwise-disjoint splits of labelled nodes.
//
// Each importer also sets Raw.Build to how the source is meant to be read
// (for example Planetoid: symmetrize, dedup, remove self-loops, as PyG);
// callers may change it before writing.
//
// A typical conversion:
//
//	raw, err := importer.Planetoid("data/planetoid", "cora")
//	if err != nil {
//		log.Fatal(err) // e.g. "planetoid cora: missing file data/planetoid/ind.cora.allx: ..."
//	}
//	raw.Build.SelfLoops = graph.AddSelfLoops // GCN-style, if wanted
//	err = dataset.Write(ctx, "out/cora", raw)
//
// Cora's original files are in testdata/planetoid; package dataset/cora
// embeds what this importer makes of them (native arrays), so the
// built-in dataset needs no importer.
package importer
