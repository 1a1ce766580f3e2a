// Command graphmill trains graph neural networks on graphs too large for one
// minibatch, one memory or one machine. Run "graphmill --help" for the commands.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/graphmill/graphmill/bench/comm"
	"github.com/graphmill/graphmill/bench/databench"
	"github.com/graphmill/graphmill/bench/diskbench"
	"github.com/graphmill/graphmill/bench/distbench"
	"github.com/graphmill/graphmill/bench/gemmbench"
	"github.com/graphmill/graphmill/bench/memorybench"
	"github.com/graphmill/graphmill/bench/partitionbench"
	"github.com/graphmill/graphmill/bench/pybench"
	"github.com/graphmill/graphmill/bench/samplebench"
	"github.com/graphmill/graphmill/bench/sarbench"
	"github.com/graphmill/graphmill/bench/trainbench"
	"github.com/graphmill/graphmill/dist/launch"
	"github.com/graphmill/graphmill/internal/atomicfile"
	"github.com/graphmill/graphmill/internal/cli"
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
	Version:       versionString(),
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
	// The benchmarks live under bench/; the CLI registers them.
	benchCmd.AddCommand(sarbench.Commands()...)
	benchCmd.AddCommand(comm.Command(), databench.Command(), diskbench.Command(), distbench.Command(), gemmbench.Command(), trainbench.GraphCommand(),
		memorybench.Command(), partitionbench.Command(), pybench.Command(), samplebench.Command(), trainbench.Command())
	rootCmd.SetVersionTemplate("{{.Version}}\n")
	atomicfile.OnLockWait = func(path, lock string) {
		fmt.Fprintf(cli.Stderr, "waiting for another graphmill writing %s (lock %s)\n", path, lock)
	}
}

// caught is the first signal received (nil while none).
var caught atomic.Value

// signalContext returns a context cancelled by the first SIGINT or
// SIGTERM: commands stop at their next check (training at the end of the
// step, saving what it has), writers remove their temporary files. A
// second signal removes every temporary file still being written and
// exits at once.
//
// While 'graphmill launch' runs its ranks (launch.Forwarding), the first
// two signals are its own: it passes the first on to the ranks, which
// stop and save on their own, waits for them (SIGKILL after --grace) and
// returns with the signal's status; it kills them at the second. The
// context is then left alone, and only a third signal quits here.
func signalContext() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 3)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		caught.Store(s)
		if launch.Forwarding() {
			<-sigs
			s = <-sigs
			stopProfiles()
			atomicfile.CleanupTemps()
			fmt.Fprintf(os.Stderr, "graphmill: %v a third time: quit\n", s)
			os.Exit(signalExitCode(s))
		}
		fmt.Fprintf(os.Stderr, "\ngraphmill: %v: stopping (send it again to quit at once)\n", s)
		cancel()
		// Every phase checks the context within a fraction of a second;
		// should one not (a system call on a stalled disk), quit anyway,
		// unless an output is being written (a large training state takes
		// seconds: quitting lost it), for up to writeGrace.
		start, tick := time.Now(), time.NewTicker(100*time.Millisecond)
	wait:
		for {
			select {
			case s = <-sigs:
				break wait
			case <-tick.C:
				if d := time.Since(start); d >= stopGrace && (atomicfile.Writing() == 0 || d >= writeGrace) {
					fmt.Fprintf(os.Stderr, "graphmill: still running %v after %v: quit\n", d.Round(100*time.Millisecond), s)
					break wait
				}
			}
		}
		stopProfiles()
		atomicfile.CleanupTemps()
		fmt.Fprintf(os.Stderr, "graphmill: %v again: quit, temporary files removed\n", s)
		os.Exit(signalExitCode(s))
	}()
	return ctx
}

// stopGrace is how long the first SIGINT or SIGTERM leaves the command to
// stop on its own before the process quits.
const stopGrace = 1500 * time.Millisecond

// writeGrace is how long it waits while an output is being written.
const writeGrace = 60 * time.Second

// signalExitCode is the shell's convention for a process ended by signal s.
func signalExitCode(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return 130
}

// main runs the command with a context that an interrupt (Ctrl-C) or
// SIGTERM cancels (signalContext), so long operations stop cleanly and
// atomic writes leave no partial output.
func main() {
	cli.RefuseUnknown(rootCmd)
	err := rootCmd.ExecuteContext(signalContext())
	stopProfiles()
	if err == nil {
		return
	}
	if s, ok := caught.Load().(os.Signal); ok {
		// Whatever the command was doing (training, waiting for a
		// sampler) ended because of the signal.
		atomicfile.CleanupTemps()
		fmt.Fprintf(os.Stderr, "graphmill: interrupted (%v): %s\n", s, strings.TrimSuffix(err.Error(), ": "+context.Canceled.Error()))
		os.Exit(signalExitCode(s))
	}
	fmt.Fprintln(os.Stderr, "graphmill:", err)
	var ec *launch.ExitError // launch passes on a failed rank's status
	if errors.As(err, &ec) {
		os.Exit(ec.Code)
	}
	os.Exit(1)
}
