package main

import (
	"context"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/internal/cli"
	"github.com/graphmill/graphmill/job"
)

func init() {
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Run a graphmill service (sampler)",
	}
	serve.AddCommand(newServeSamplerCmd())
	rootCmd.AddCommand(serve)
}

func newServeSamplerCmd() *cobra.Command {
	var (
		dsName, listen, tokenFile string
		tlsCert, tlsKey, tlsCA    string
		insecureListen, stopAtEOF bool
		workers                   int
		graphInMemory             string
	)
	c := &cobra.Command{
		Use:   "sampler",
		Short: "Serve a dataset's minibatches (sampled blocks, features, labels) to remote trainers over gRPC",
		Long: `Serve a dataset's minibatches to trainers ("graphmill train --sampler ADDR", or the Python
client): a trainer asks for an epoch (split, fanouts, batch size, epoch, seed, features and
labels, its share of the batches) and the sampler streams them as graphmill.v1.Frame messages
(proto/graphmill/v1/sampler.proto; stream semantics in docs/wire.md). Several samplers can feed
one trainer: it splits the batches between them and reassigns those of a sampler that dies.
Draws are keyed by (seed, epoch, hop, node), so a trainer gets exactly the minibatches its
local loader would sample.

Connections are authenticated as the distributed runtime's: with a shared secret
($GRAPHMILL_DIST_TOKEN or --dist-token-file) every call carries an HMAC of it (nothing secret
on the wire, replays refused), optionally inside mutual TLS (--tls-cert --tls-key --tls-ca).
Without a secret the service listens on loopback only, and a non-loopback --listen is refused
unless --insecure is given (as Redis's protected mode).

It prints "listening on HOST:PORT" once ready (--listen 127.0.0.1:0 picks a free port) and runs
until SIGINT or SIGTERM.`,
		Example: `  graphmill serve sampler --dataset data/products --listen 127.0.0.1:7070
  GRAPHMILL_DIST_TOKEN=s3cret graphmill serve sampler --dataset data/products --listen 0.0.0.0:7070
  graphmill train --dataset data/products --model sage --sampler host1:7070,host2:7070`,
		Args: cli.NoArgs("give the dataset with --dataset DIR"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var eof io.Reader
			if stopAtEOF {
				eof = cmd.InOrStdin()
			}
			return runServeSampler(cmd.Context(), cmd.OutOrStdout(), eof, dsName, listen, tokenFile, tlsCert, tlsKey, tlsCA, insecureListen, workers, graphInMemory)
		},
	}
	fl := c.Flags()
	fl.StringVar(&dsName, "dataset", "cora", "dataset directory, or \"cora\" for the built-in Cora")
	fl.StringVar(&listen, "listen", "127.0.0.1:7070", "address to listen on (port 0: a free port, printed)")
	fl.StringVar(&tokenFile, "dist-token-file", "", "file holding the shared secret (default: $"+dist.TokenEnv+")")
	fl.StringVar(&tlsCert, "tls-cert", "", "this service's certificate (PEM) for mutual TLS")
	fl.StringVar(&tlsKey, "tls-key", "", "the certificate's private key (PEM)")
	fl.StringVar(&tlsCA, "tls-ca", "", "CA (PEM) the trainers' certificates must chain to")
	fl.BoolVar(&stopAtEOF, "stop-at-eof", false, "stop when standard input reaches its end: for a parent process that holds a pipe to it (the Python client), so that the service stops however the parent ends, kill -9 included")
	fl.BoolVar(&insecureListen, "insecure", false, "allow a non-loopback --listen without a shared secret (anyone who can connect gets minibatches)")
	cli.CountVar(fl, &workers, "workers", 2, "minibatches each stream prepares at once")
	fl.StringVar(&graphInMemory, "graph-in-memory", "auto", "sample from a copy of the graph in huge-page memory made at start (yes), or through its file mapping (no); auto copies it when it takes at most half the available memory")
	return c
}

func runServeSampler(ctx context.Context, out io.Writer, eof io.Reader, dsName, listen, tokenFile, tlsCert, tlsKey, tlsCA string, insecureListen bool, workers int, graphInMemory string) error {
	sec, err := job.LoadSecurity(tokenFile, tlsCert, tlsKey, tlsCA)
	if err != nil {
		return err
	}
	return job.Serve(ctx, job.ServeSpec{Dataset: dsName, Listen: listen, Security: sec, Insecure: insecureListen, Workers: workers, GraphInMemory: graphInMemory, StopAtEOF: eof,
		Version: strings.SplitN(versionString(), "\n", 2)[0], Out: out})
}
