package job

import (
	"context"
	"strings"
	"testing"

	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/train"
)

// TestRoutesRefused checks that a Spec whose route cannot run is refused
// before any work, naming the reason.
func TestRoutesRefused(t *testing.T) {
	t.Setenv("GRAPHMILL_CACHE", t.TempDir())
	gcn := train.Defaults(nn.GCN)
	sarCfg := gcn
	sarCfg.Mode = "sar"
	for _, c := range []struct {
		name string
		spec Spec
		want string
	}{
		{"sar on a whole dataset", Spec{Dataset: "cora", Config: sarCfg}, "trains over a partitioned dataset"},
		{"mfg outside sar", Spec{Dataset: "cora", Config: gcn, MFG: true}, "sar, sa and one-shot"},
		{"remote cache without parts", Spec{Dataset: "cora", Config: gcn, RemoteCacheBytes: 1 << 20}, "distributed sampling over a partitioned dataset"},
		{"samplers in full mode", Spec{Dataset: "cora", Config: gcn, Samplers: []string{"127.0.0.1:1"}}, "sampled mode"},
		{"no such dataset", Spec{Dataset: t.TempDir() + "/none", Config: gcn}, "none"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Train(context.Background(), c.spec)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one naming %q", err, c.want)
			}
		})
	}
}
