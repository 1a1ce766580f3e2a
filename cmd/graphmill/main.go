// Command graphmill trains graph neural networks on graphs too large for one
// minibatch, one memory or one machine. Run "graphmill --help" for the commands.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// rootCmd is the top of the command tree. Each sub-command lives in its own
// file and attaches itself in an init function, so commands can be added
// without touching this file.
var rootCmd = &cobra.Command{
	Use:   "graphmill",
	Short: "Train graph neural networks on large graphs",
	Long: `graphmill imports graph datasets (Planetoid, npz, OGB, edge lists, METIS) or generates them,
partitions them, and trains GNNs (GCN, GraphSAGE, GAT, APPNP) on CPUs: full-graph, on sampled
minibatches, or with GNNAutoScale's historical embeddings, under an optional memory bound.
"graphmill train" with no flags trains a GCN on the built-in Cora.`,
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

// main runs the command with a context that an interrupt (Ctrl-C) or
// SIGTERM cancels, so long operations stop cleanly and atomic writes leave
// no partial output; a second interrupt kills the process.
func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // the next signal gets the default behaviour
	}()
	err := rootCmd.ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "graphmill:", err)
		os.Exit(1)
	}
}
