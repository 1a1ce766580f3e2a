package train

import (
	"testing"

	"github.com/graphmill/graphmill/partition"
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

// withTestParts gives GAS runs in tests the multilevel partitioner, as
// graphmill train does (the train package itself does not import it).
var withTestParts = WithPartitioner(partition.Assign)
