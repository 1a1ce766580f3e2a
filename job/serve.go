package job

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"google.golang.org/grpc"

	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/dist/samplersvc"
	pb "github.com/graphmill/graphmill/proto/graphmill/v1"
)

// ServeSpec describes a sampler service: Dataset's minibatches served over
// gRPC on Listen (port 0: a free one).
type ServeSpec struct {
	Dataset, Listen string
	// Security authenticates trainers (nil: none, which only a loopback
	// Listen or Insecure allows).
	Security *dist.Security
	Insecure bool
	// GraphInMemory says whether the service samples from a copy of the
	// graph in huge-page memory: "yes", "no", or "auto" ("" too) when it
	// takes at most half the available memory.
	GraphInMemory string
	// Workers is the minibatches each stream prepares at once.
	Workers int
	// Version is what the service reports as its program's version.
	Version string
	// Out receives "serving ..." and "listening on HOST:PORT" once ready;
	// Log the service's events (nil: stderr).
	Out io.Writer
	Log func(string)
	// StopAtEOF, when set, stops the service when reading it reaches its
	// end: a parent process's pipe, closed however the parent ends (kill
	// -9 included), so that a service the parent started never outlives it.
	StopAtEOF io.Reader
}

// Serve runs the sampler service until ctx is done (then stops it within
// 2 s) or it fails.
func Serve(ctx context.Context, s ServeSpec) error {
	if s.StopAtEOF != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			io.Copy(io.Discard, s.StopAtEOF)
			cancel()
		}()
	}
	sec := s.Security
	loop, err := isLoopback(s.Listen)
	if err != nil {
		return err
	}
	if g := s.GraphInMemory; g != "" && g != "auto" && g != "yes" && g != "no" {
		return fmt.Errorf("graph in memory %q: want auto, yes or no", g)
	}
	if (sec == nil || len(sec.Secret) == 0) && !loop && !s.Insecure {
		return fmt.Errorf("--listen %s is not a loopback address and no shared secret is set: set %s (or --dist-token-file) so that trainers authenticate, or pass --insecure to serve anyone who can connect", s.Listen, dist.TokenEnv)
	}
	ds, err := OpenDataset(ctx, s.Dataset, "serve sampler")
	if err != nil {
		return err
	}
	defer ds.Close()
	logf := s.Log
	if logf == nil {
		logf = func(m string) { fmt.Fprintln(os.Stderr, "graphmill sampler:", m) }
	}
	inMem := s.GraphInMemory == "yes" || s.GraphInMemory != "no" && ds.GraphFitsInMemory(1)
	srv, err := samplersvc.NewServer(samplersvc.ServerConfig{Dataset: ds, Version: s.Version, Workers: s.Workers, Log: logf, GraphInMemory: inMem})
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
	ln, err := net.Listen("tcp", s.Listen)
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
	if s.Out != nil {
		m := ds.Meta
		fmt.Fprintf(s.Out, "serving %s (%d nodes, %d edges, %d features) with %s\nlistening on %s\n", m.Name, m.NumNodes, m.NumEdges, m.FeatureDim, auth, ln.Addr())
		if f, ok := s.Out.(*os.File); ok {
			f.Sync()
		}
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

// LoadSecurity returns the service security from a shared-secret file (or
// the environment's $GRAPHMILL_DIST_TOKEN) and mutual-TLS files; nil when
// none is configured.
func LoadSecurity(tokenFile, cert, key, ca string) (*dist.Security, error) {
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
