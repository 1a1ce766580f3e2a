package batch

import (
	"bytes"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.gmbf")

// TestGolden pins the encoding of three batches (frontier: a version 2
// frame) to files in testdata, which
// also serve readers in other languages (the Python client's tests) as
// reference frames.
func TestGolden(t *testing.T) {
	for name, mk := range map[string]func() *MiniBatch{"sampled": sampled, "gas": gas, "frontier": frontier} {
		f, err := mk().MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		path := "testdata/" + name + ".gmbf"
		if *update {
			if err := os.WriteFile(path, f, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(f, want) {
			t.Errorf("%s: the encoding changed; if on purpose, bump Version, update docs/wire.md and run go test ./batch -run Golden -update", name)
		}
	}
}
