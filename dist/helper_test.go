package dist

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

const cutHelperEnv = "GRAPHMILL_CUTLINK_RANK"

// TestRankHelper is one rank of a group of processes that all-reduce in
// a loop (it does nothing unless a test started it): it prints its
// transport, RUNNING after a few all-reduces, and the error that ends
// the loop.
func TestRankHelper(t *testing.T) {
	rs := os.Getenv(cutHelperEnv)
	if rs == "" {
		t.Skip("helper process of the multi-process tests")
	}
	rank, _ := strconv.Atoi(rs)
	port, _ := strconv.Atoi(os.Getenv("GRAPHMILL_CUTLINK_PORT"))
	size, _ := strconv.Atoi(os.Getenv("GRAPHMILL_CUTLINK_SIZE"))
	sec := &Security{Secret: []byte(os.Getenv(TokenEnv))}
	ctx := context.Background()
	g, err := Join(ctx, Info{Rank: rank, Size: size, MasterAddr: os.Getenv("GRAPHMILL_CUTLINK_MASTER"), MasterPort: port},
		Options{Security: sec, Bind: os.Getenv("GRAPHMILL_CUTLINK_BIND"), RendezvousTimeout: 20 * time.Second, OpTimeout: 60 * time.Second, PeerTimeout: 2 * time.Second})
	if err != nil {
		fmt.Printf("JOIN-ERROR %v\n", err)
		os.Exit(3)
	}
	fmt.Printf("TRANSPORT %s\n", g.Transport())
	buf := make([]float32, 1<<20)
	for i := 0; ; i++ {
		if err := g.AllReduce(ctx, buf, Sum); err != nil {
			fmt.Printf("ERROR %v\n", err)
			os.Exit(2)
		}
		if i == 5 {
			fmt.Println("RUNNING")
		}
	}
}
