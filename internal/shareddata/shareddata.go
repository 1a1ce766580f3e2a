// Package shareddata locates the shared real datasets (Planetoid, npz,
// METIS, edge lists) that tests and benchmarks read: $GRAPHMILL_DATA when
// set, else the first "shared/data" folder found beside the working
// directory or one of its parents (the project's checkout sits next to
// "shared"). A test whose file is missing skips, naming the path.
package shareddata

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the shared data directory ($GRAPHMILL_DATA, else the nearest
// shared/data above the working directory, else "../shared/data").
func Dir() string {
	if d := os.Getenv("GRAPHMILL_DATA"); d != "" {
		return d
	}
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; {
			p := filepath.Join(d, "shared", "data")
			if st, err := os.Stat(p); err == nil && st.IsDir() {
				return p
			}
			parent := filepath.Dir(d)
			if parent == d {
				break
			}
			d = parent
		}
	}
	return filepath.Join("..", "shared", "data")
}

// Path joins elem to Dir.
func Path(elem ...string) string { return filepath.Join(append([]string{Dir()}, elem...)...) }

// Need returns Path(elem...) and skips tb when it does not exist.
func Need(tb testing.TB, elem ...string) string {
	tb.Helper()
	p := Path(elem...)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("shared data %s not available ($GRAPHMILL_DATA or ../shared/data): %v", p, err)
	}
	return p
}
