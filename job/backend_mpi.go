//go:build mpi

package job

import (
	"context"

	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/dist/mpi"
)

// With -tags mpi, --dist-backend mpi runs the collectives on Open MPI
// (ranks from mpirun or srun).
func init() {
	backends["mpi"] = func(_ context.Context, _ dist.Info, o dist.Options) (dist.Comm, error) {
		return mpi.Init(o.OpTimeout)
	}
}
