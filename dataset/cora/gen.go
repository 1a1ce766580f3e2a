//go:build ignore

// gen writes data/*.npy.gz, the embedded Cora, from the Planetoid files in
// importer/testdata/planetoid: it imports them with the Planetoid importer
// (as PyG does: symmetrized, deduplicated, no self-loops), writes the
// native dataset and gzips its arrays. Run it with 'go generate' in this
// directory; the importer's tests check that the result still matches.
package main

import (
	"compress/gzip"
	"context"
	"log"
	"os"
	"path/filepath"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/importer"
)

func main() {
	raw, err := importer.Planetoid("../../importer/testdata/planetoid", "cora")
	if err != nil {
		log.Fatal(err)
	}
	tmp, err := os.MkdirTemp("", "cora-gen-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "cora")
	if err := dataset.Write(context.Background(), dir, raw, dataset.WriteOptions{}); err != nil {
		log.Fatal(err)
	}
	for _, name := range []string{"indptr", "indices", "features", "labels", "train_idx", "val_idx", "test_idx"} {
		b, err := os.ReadFile(filepath.Join(dir, name+".npy"))
		if err != nil {
			log.Fatal(err)
		}
		f, err := os.Create(filepath.Join("data", name+".npy.gz"))
		if err != nil {
			log.Fatal(err)
		}
		zw, err := gzip.NewWriterLevel(f, gzip.BestCompression) // no name, zero time: reproducible
		if err != nil {
			log.Fatal(err)
		}
		if _, err := zw.Write(b); err != nil {
			log.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			log.Fatal(err)
		}
		if err := f.Close(); err != nil {
			log.Fatal(err)
		}
	}
}
