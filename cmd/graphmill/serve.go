package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"

	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/dist/samplersvc"
	"github.com/graphmill/graphmill/job"
	pb "github.com/graphmill/graphmill/proto/graphmill/v1"
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
		insecureListen            bool
		workers                   int
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
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServeSampler(cmd.Context(), cmd.OutOrStdout(), dsName, listen, tokenFile, tlsCert, tlsKey, tlsCA, insecureListen, workers)
		},
	}
	fl := c.Flags()
	fl.StringVar(&dsName, "dataset", "cora", "dataset directory, or \"cora\" for the built-in Cora")
	fl.StringVar(&listen, "listen", "127.0.0.1:7070", "address to listen on (port 0: a free port, printed)")
	fl.StringVar(&tokenFile, "dist-token-file", "", "file holding the shared secret (default: $"+dist.TokenEnv+")")
	fl.StringVar(&tlsCert, "tls-cert", "", "this service's certificate (PEM) for mutual TLS")
	fl.StringVar(&tlsKey, "tls-key", "", "the certificate's private key (PEM)")
	fl.StringVar(&tlsCA, "tls-ca", "", "CA (PEM) the trainers' certificates must chain to")
	fl.BoolVar(&insecureListen, "insecure", false, "allow a non-loopback --listen without a shared secret (anyone who can connect gets minibatches)")
	fl.IntVar(&workers, "workers", 2, "minibatches each stream prepares at once")
	return c
}

// loadSecurity returns the service security from a token file or the
// environment and TLS files (nil when none is configured).
func loadSecurity(tokenFile, cert, key, ca string) (*dist.Security, error) {
	var sec *dist.Security
	if tokenFile != "" || os.Getenv(dist.TokenEnv) != "" {
		secret, err := dist.LoadSecret(os.Getenv, tokenFile)
		if err != nil {
			return nil, err
		}
		sec = &dist.Security{Secret: secret}
	}
	if cert != "" || key != "" || ca != "" {
		if cert == "" || key == "" || ca == "" {
			return nil, fmt.Errorf("mutual TLS needs --tls-cert, --tls-key and --tls-ca together")
		}
		if sec == nil {
			sec = &dist.Security{}
		}
		sec.TLS = &dist.TLSFiles{Cert: cert, Key: key, CA: ca}
	}
	return sec, nil
}

// isLoopback reports whether a listen address's host is a loopback one.
func isLoopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("--listen %q: %w", addr, err)
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

func runServeSampler(ctx context.Context, out io.Writer, dsName, listen, tokenFile, tlsCert, tlsKey, tlsCA string, insecureListen bool, workers int) error {
	sec, err := loadSecurity(tokenFile, tlsCert, tlsKey, tlsCA)
	if err != nil {
		return err
	}
	loop, err := isLoopback(listen)
	if err != nil {
		return err
	}
	if (sec == nil || len(sec.Secret) == 0) && !loop && !insecureListen {
		return fmt.Errorf("--listen %s is not a loopback address and no shared secret is set: set %s (or --dist-token-file) so that trainers authenticate, or pass --insecure to serve anyone who can connect", listen, dist.TokenEnv)
	}
	ds, err := job.OpenDataset(ctx, dsName, "serve sampler")
	if err != nil {
		return err
	}
	defer ds.Close()
	logf := func(s string) { fmt.Fprintln(os.Stderr, "graphmill sampler:", s) }
	srv, err := samplersvc.NewServer(samplersvc.ServerConfig{Dataset: ds, Version: strings.SplitN(versionString(), "\n", 2)[0], Workers: workers, Log: logf})
	if err != nil {
		return err
	}
	defer srv.Close()
	opts, err := samplersvc.ServerOptions(sec, logf)
	if err != nil {
		return err
	}
	g := grpc.NewServer(opts...)
	pb.RegisterSamplerServer(g, srv)
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	auth := "no authentication (loopback only)"
	switch {
	case sec != nil && len(sec.Secret) > 0 && sec.TLS != nil:
		auth = "shared secret inside mutual TLS"
	case sec != nil && len(sec.Secret) > 0:
		auth = "shared secret"
	case sec != nil:
		auth = "mutual TLS"
	case !loop:
		auth = "NO authentication (--insecure)"
	}
	m := ds.Meta
	fmt.Fprintf(out, "serving %s (%d nodes, %d edges, %d features) with %s\nlistening on %s\n", m.Name, m.NumNodes, m.NumEdges, m.FeatureDim, auth, ln.Addr())
	if f, ok := out.(*os.File); ok {
		f.Sync()
	}
	errc := make(chan error, 1)
	go func() { errc <- g.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		stopped := make(chan struct{})
		go func() { g.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(2 * time.Second):
			g.Stop()
		}
		return nil
	}
}
