package main

import (
	"os"
	"os/exec"
	"time"

	"github.com/spf13/cobra"

	"github.com/graphmill/graphmill/dist/launch"
)

func init() { rootCmd.AddCommand(newLaunchCmd()) }

func newLaunchCmd() *cobra.Command {
	var n, port int
	var grace time.Duration
	c := &cobra.Command{
		Use:   "launch -n N [--] PROGRAM ARGS...",
		Short: "Run N local ranks of a program (as torchrun --standalone or mpirun -np)",
		Long: `Run N ranks of PROGRAM on this machine, each a direct child process with the rank
variables torchrun sets (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
MASTER_PORT), a fresh shared secret in GRAPHMILL_DIST_TOKEN, and rank 0's store on a free
loopback port. Output lines are prefixed by rank. When one rank fails, the others are
stopped (SIGTERM, then SIGKILL after --grace) and launch exits with the status of the
first failure (128+signal for a rank killed by a signal). Ctrl-C or SIGTERM is passed on to
the ranks, which stop at the end of their step (rank 0 saves what train was asked to save);
launch waits --grace for them, then kills them, and exits 128+signal; a second signal kills
them at once.`,
		Example: `  graphmill launch -n 2 -- graphmill train --model sage
  graphmill launch -n 4 -- python3 my_torch_script.py`,
		Args: cobra.ArbitraryArgs, // none: launch.Local says what to give
		RunE: func(cmd *cobra.Command, args []string) error {
			if self, err := os.Executable(); err == nil && len(args) > 0 && args[0] == "graphmill" {
				if _, err := exec.LookPath("graphmill"); err != nil {
					args[0] = self // this one, when none is on PATH
				}
			}
			return launch.Local(cmd.Context(), n, port, grace, args, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	c.Flags().IntVarP(&n, "nproc", "n", 2, "number of ranks")
	c.Flags().IntVar(&port, "master-port", 0, "port of rank 0's store (0: a free one)")
	c.Flags().DurationVar(&grace, "grace", 3*time.Second, "time the ranks get to stop after one fails or a signal is passed on, before SIGKILL")
	c.Flags().SetInterspersed(false)
	return c
}
