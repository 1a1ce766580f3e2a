package train

import (
	"testing"

	"github.com/graphmill/graphmill/safetensors"
)

func readCheckpoint(t *testing.T, path string) (*safetensors.File, error) {
	t.Helper()
	f, err := safetensors.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return f, nil
}
