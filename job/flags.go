package job

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/sample"
)

// DistFlags are the flags of commands that run under a launcher (rank,
// world size, rendezvous, backend, authentication, timeouts), defined once
// for every command that joins ranks.
type DistFlags struct {
	rank, worldSize, localRank, masterPort int
	masterAddr, bind, iface, backend       string
	tokenFile, tlsCert, tlsKey, tlsCA      string
	rendezvous, opTimeout, peerTimeout     time.Duration
}

// Add defines the flags on fl.
func (f *DistFlags) Add(fl *pflag.FlagSet) {
	fl.IntVar(&f.rank, "rank", -1, "distributed: this process's rank (-1: from the launcher's environment)")
	fl.IntVar(&f.worldSize, "world-size", -1, "distributed: number of ranks (-1: from the launcher's environment; needed for Kubernetes Indexed Jobs)")
	fl.IntVar(&f.localRank, "local-rank", -1, "distributed: rank on this machine (-1: from the environment)")
	fl.StringVar(&f.masterAddr, "master-addr", "", "distributed: host of rank 0's rendezvous store (default: MASTER_ADDR, SLURM's first node, or 127.0.0.1 when all ranks are local)")
	fl.IntVar(&f.masterPort, "master-port", -1, "distributed: port of rank 0's rendezvous store (-1: MASTER_PORT or 29500)")
	fl.StringVar(&f.bind, "bind", "", "distributed: local IP address to listen on and advertise (default: the one that reaches the master)")
	fl.StringVar(&f.iface, "iface", "", "distributed: network interface to use (its first address), e.g. ib0 on a machine with several networks")
	fl.StringVar(&f.backend, "dist-backend", "tcp", "distributed: collectives backend: "+strings.Join(backendNames(), ", "))
	fl.StringVar(&f.tokenFile, "dist-token-file", "", "distributed: file holding the shared secret (default: $"+dist.TokenEnv+")")
	fl.StringVar(&f.tlsCert, "tls-cert", "", "distributed: this rank's certificate (PEM) for mutual TLS between ranks")
	fl.StringVar(&f.tlsKey, "tls-key", "", "distributed: the certificate's private key (PEM)")
	fl.StringVar(&f.tlsCA, "tls-ca", "", "distributed: CA (PEM) the other ranks' certificates must chain to")
	fl.DurationVar(&f.rendezvous, "rendezvous-timeout", 2*time.Minute, "distributed: how long to wait for every rank to arrive")
	fl.DurationVar(&f.opTimeout, "op-timeout", 10*time.Minute, "distributed: deadline of every collective")
	fl.DurationVar(&f.peerTimeout, "peer-timeout", 4*time.Second, "distributed: silence after which a peer counts as gone (heartbeats every quarter of it)")
}

// backends maps --dist-backend names to constructors (dist/mpi adds
// "mpi" in builds with -tags mpi: backend_mpi.go).
var backends = map[string]func(ctx context.Context, in dist.Info, o dist.Options) (dist.Comm, error){
	"tcp": func(ctx context.Context, in dist.Info, o dist.Options) (dist.Comm, error) {
		return dist.Join(ctx, in, o)
	},
}

func backendNames() []string {
	var s []string
	for k := range backends {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}

// check refuses the values given explicitly that mean nothing: ranks,
// sizes and ports below -1 (-1 is "from the environment", and the only
// negative value that is), and timeouts that are not positive.
func (f *DistFlags) check() error {
	for _, v := range []struct {
		name string
		v    int
	}{{"rank", f.rank}, {"world-size", f.worldSize}, {"local-rank", f.localRank}, {"master-port", f.masterPort}} {
		if v.v < -1 {
			return fmt.Errorf("--%s %d: want a value >= 0, or -1 for the launcher's environment", v.name, v.v)
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"rendezvous-timeout", f.rendezvous}, {"op-timeout", f.opTimeout}, {"peer-timeout", f.peerTimeout}} {
		if d.v <= 0 {
			return fmt.Errorf("--%s %v: want a positive duration", d.name, d.v)
		}
	}
	return nil
}

// Join resolves this process's rank from its launcher and, when it is one
// of several, joins the group (nil Comm: a plain single process).
func (f *DistFlags) Join(ctx context.Context) (dist.Comm, dist.Info, error) {
	if err := f.check(); err != nil {
		return nil, dist.Info{}, err
	}
	o := dist.Overrides{Rank: f.rank, Size: f.worldSize, LocalRank: f.localRank, MasterAddr: f.masterAddr, MasterPort: f.masterPort}
	in, distributed, err := dist.Resolve(os.Getenv, o)
	if err != nil || !distributed {
		return nil, in, err
	}
	mk, ok := backends[f.backend]
	if !ok {
		return nil, in, fmt.Errorf("--dist-backend %q: this build has %s", f.backend, strings.Join(backendNames(), ", "))
	}
	opts := dist.Options{Bind: f.bind, RendezvousTimeout: f.rendezvous, OpTimeout: f.opTimeout, PeerTimeout: f.peerTimeout}
	if f.iface != "" {
		if opts.Bind, err = dist.InterfaceAddr(f.iface); err != nil {
			return nil, in, err
		}
	}
	if f.backend == "tcp" {
		secret, err := dist.LoadSecret(os.Getenv, f.tokenFile)
		if err != nil {
			return nil, in, err
		}
		opts.Security = &dist.Security{Secret: secret}
		if f.tlsCert != "" || f.tlsKey != "" || f.tlsCA != "" {
			if f.tlsCert == "" || f.tlsKey == "" || f.tlsCA == "" {
				return nil, in, fmt.Errorf("mutual TLS needs --tls-cert, --tls-key and --tls-ca together")
			}
			opts.Security.TLS = &dist.TLSFiles{Cert: f.tlsCert, Key: f.tlsKey, CA: f.tlsCA}
		}
	}
	c, err := mk(ctx, in, opts)
	if err != nil {
		return nil, in, fmt.Errorf("rank %d of %d (%s): %w", in.Rank, in.Size, in.Launcher, err)
	}
	return c, in, nil
}

// JoinOrAlone joins the launcher's group, or makes a group of one for a
// plain process, so that SAR runs the same code under any number of ranks.
func (f *DistFlags) JoinOrAlone(ctx context.Context) (dist.Comm, error) {
	comm, _, err := f.Join(ctx)
	if err != nil || comm != nil {
		return comm, err
	}
	gs, err := dist.LocalGroup(ctx, 1, dist.Options{})
	if err != nil {
		return nil, err
	}
	return gs[0], nil
}

// NewDistFlags returns DistFlags as their defaults give them, with this
// backend and these timeouts (benchmarks that start their own ranks).
func NewDistFlags(backend string, rendezvous, op, peer time.Duration) *DistFlags {
	return &DistFlags{rank: -1, worldSize: -1, localRank: -1, masterPort: -1, backend: backend, rendezvous: rendezvous, opTimeout: op, peerTimeout: peer}
}

// Backend is the --dist-backend chosen.
func (f *DistFlags) Backend() string { return f.backend }

// Security returns the shared secret and mutual-TLS files the flags name
// (for a service's clients: LoadSecurity).
func (f *DistFlags) Security() (*dist.Security, error) {
	return LoadSecurity(f.tokenFile, f.tlsCert, f.tlsKey, f.tlsCA)
}

// HasBackend reports whether this build has the named --dist-backend.
func HasBackend(name string) bool {
	_, ok := backends[name]
	return ok
}

// FanoutsFlag defines --fanouts, the one fanout flag of every command that
// samples, on fs: *p holds def until the flag is given; what says what the
// fanouts are for.
func FanoutsFlag(fs *pflag.FlagSet, p *sample.Fanouts, def []int, what string) {
	*p = def
	fs.Var(p, "fanouts", what+": neighbours sampled per node at each hop, from the seeds, as PyG's num_neighbors (-1 or all = every neighbour)")
}
