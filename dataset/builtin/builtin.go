// Package builtin resolves dataset names given on the command line: a path
// to a native dataset directory, or the name of a dataset compiled into the
// binary ("cora"), which is written once to the user's cache directory in
// the native format and opened from there.
package builtin

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/dataset/cora"
)

// Names lists the built-in datasets.
var Names = []string{"cora"}

// cacheVersion changes whenever an embedded dataset's conversion changes,
// so stale cached copies are not reused.
const cacheVersion = "v1"

// Resolve returns the directory of the dataset called nameOrDir: nameOrDir
// itself if it is a directory, or the cached native copy of a built-in
// dataset, writing it first if needed.
func Resolve(ctx context.Context, nameOrDir string) (string, error) {
	if st, err := os.Stat(nameOrDir); err == nil && st.IsDir() {
		return nameOrDir, nil
	}
	switch strings.ToLower(nameOrDir) {
	case "cora":
		return materialize(ctx, "cora", cora.Raw)
	}
	return "", fmt.Errorf("dataset %q: no such directory, and not a built-in dataset (built-in: %s)", nameOrDir, strings.Join(Names, ", "))
}

// Open resolves nameOrDir and opens the dataset.
func Open(ctx context.Context, nameOrDir string) (*dataset.Dataset, error) {
	dir, err := Resolve(ctx, nameOrDir)
	if err != nil {
		return nil, err
	}
	return dataset.Open(dir)
}

// CacheDir is where built-in datasets are materialized:
// $GRAPHMILL_CACHE, else the user cache directory, else the temp directory.
func CacheDir() string {
	if d := os.Getenv("GRAPHMILL_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "graphmill")
	}
	return filepath.Join(os.TempDir(), "graphmill-cache")
}

func materialize(ctx context.Context, name string, raw func() (*dataset.Raw, error)) (string, error) {
	dir := filepath.Join(CacheDir(), name+"-"+cacheVersion)
	if d, err := dataset.Open(dir); err == nil {
		d.Close()
		return dir, nil
	}
	r, err := raw()
	if err != nil {
		return "", fmt.Errorf("built-in %s: %w", name, err)
	}
	r.Source = "embedded " + name + " (Planetoid files compiled into graphmill)"
	// Overwrite: a damaged cached copy is replaced atomically.
	if err := dataset.Write(ctx, dir, r, dataset.WriteOptions{Overwrite: true}); err != nil {
		return "", fmt.Errorf("writing built-in %s to %s: %w", name, dir, err)
	}
	return dir, nil
}
