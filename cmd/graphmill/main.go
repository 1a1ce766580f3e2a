// Command graphmill trains graph neural networks on graphs too large for one
// minibatch, one memory or one machine. Run "graphmill --help" for the commands.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// rootCmd is the top of the command tree. Each sub-command lives in its own
// file and attaches itself in an init function, so commands can be added
// without touching this file.
var rootCmd = &cobra.Command{
	Use:           "graphmill",
	Short:         "Train graph neural networks on large graphs",
	Long:          "graphmill imports graph datasets, samples them, and trains GNNs (GraphSAGE, GCN, GAT) on CPUs.",
	SilenceUsage:  true,
	SilenceErrors: true,
}

// benchCmd groups the benchmarks ("graphmill bench gemm", "graphmill bench sample", ...).
var benchCmd = &cobra.Command{
	Use:   "bench",
	Short: "Measure the speed of graphmill's components against machine ceilings or peers",
}

func init() {
	rootCmd.AddCommand(benchCmd)
}

func main() {
	if err := rootCmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "graphmill:", err)
		var ec *exitCode // launch passes on a failed rank's status
		if errors.As(err, &ec) {
			os.Exit(ec.code)
		}
		os.Exit(1)
	}
}
