//go:build mpi

package mpi

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/graphmill/graphmill/dist/disttest"
)

// TestConformanceMPI runs the conformance suite on every rank when the
// test binary runs under mpirun:
//
//	go test -c -tags mpi -o /tmp/mpitest ./dist/mpi
//	mpirun -np 4 --oversubscribe /tmp/mpitest -test.run ConformanceMPI
func TestConformanceMPI(t *testing.T) {
	if os.Getenv("OMPI_COMM_WORLD_SIZE") == "" {
		t.Skip("not under mpirun: run the compiled test with mpirun -np 4 --oversubscribe (see .ci/run)")
	}
	c, err := Init(2 * time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := disttest.Run(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("rank %d of %d: conformance suite passed", c.Rank(), c.Size())
}
