package dist

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Info is where this process stands in a job: its rank among Size
// processes, its rank on its machine, and the address of the rendezvous
// store (served by rank 0).
type Info struct {
	Rank, Size int
	// LocalRank is the rank among the processes on this machine.
	LocalRank int
	// MasterAddr and MasterPort locate the rendezvous store on rank 0.
	MasterAddr string
	MasterPort int
	// Launcher names what set the rank variables: "graphmill launch",
	// "torchrun", "kubeflow", "openmpi", "mpich", "slurm",
	// "kubernetes indexed job", or "flags".
	Launcher string
}

// Overrides are the command-line values that win over the environment
// (negative ints and empty strings: not given).
type Overrides struct {
	Rank, Size, LocalRank int
	MasterAddr            string
	MasterPort            int
}

// NoOverrides is Overrides with nothing given.
func NoOverrides() Overrides {
	return Overrides{Rank: -1, Size: -1, LocalRank: -1, MasterPort: -1}
}

// DefaultPort is the store's port when no launcher names one (torchrun's).
const DefaultPort = 29500

// Resolve reads the rank variables of the launcher this process runs
// under (getenv is os.Getenv in production), applies the overrides, and
// reports whether the job is distributed (more than one rank). The
// launchers, in the order they are recognised:
//
//   - graphmill launch and torchrun: RANK, WORLD_SIZE, LOCAL_RANK,
//     MASTER_ADDR, MASTER_PORT (torchrun also sets TORCHELASTIC_RUN_ID).
//   - Kubeflow PyTorchJob: PET_NNODES, PET_NODE_RANK, PET_NPROC_PER_NODE,
//     PET_MASTER_ADDR/PORT; its RANK is the pod index, so the process rank
//     is node rank × processes per node + LOCAL_RANK.
//   - Open MPI: OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK.
//   - MPICH/Hydra: PMI_RANK, PMI_SIZE (MPI_LOCALRANKID).
//   - SLURM: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID; the master is the
//     first host of SLURM_STEP_NODELIST (or SLURM_JOB_NODELIST).
//   - Kubernetes Indexed Jobs: JOB_COMPLETION_INDEX, with the world size
//     and master host from flags or WORLD_SIZE/MASTER_ADDR.
//
// Under MPI launchers the master address is MASTER_ADDR when set, else
// 127.0.0.1 when every rank is on this machine.
func Resolve(getenv func(string) string, o Overrides) (Info, bool, error) {
	in, err := fromEnv(getenv)
	if err != nil {
		return in, false, err
	}
	given := false
	if o.Rank >= 0 {
		in.Rank, given = o.Rank, true
	}
	if o.Size >= 0 {
		in.Size, given = o.Size, true
	}
	if o.LocalRank >= 0 {
		in.LocalRank = o.LocalRank
	}
	if o.MasterAddr != "" {
		in.MasterAddr = o.MasterAddr
	}
	if o.MasterPort >= 0 {
		in.MasterPort = o.MasterPort
	}
	if in.Launcher == "" && given {
		in.Launcher = "flags"
		if o.Rank < 0 && in.Size > 1 {
			// Every process would be rank 0 (the second failed binding
			// the store's port).
			return in, false, fmt.Errorf("flags: --world-size %d without --rank: give each process its --rank (0 to %d), or start them with 'graphmill launch'", in.Size, in.Size-1)
		}
	}
	if in.Launcher == "" {
		return Info{Rank: 0, Size: 1}, false, nil
	}
	if in.Size < 1 {
		return in, false, fmt.Errorf("%s: world size %d: give --world-size (or WORLD_SIZE)", in.Launcher, in.Size)
	}
	if in.Rank < 0 || in.Rank >= in.Size {
		return in, false, fmt.Errorf("%s: rank %d outside a world of %d ranks", in.Launcher, in.Rank, in.Size)
	}
	if in.Size > 1 && in.MasterAddr == "" {
		return in, false, fmt.Errorf("%s: rank %d of %d does not know where rank 0's store is: set MASTER_ADDR or --master-addr", in.Launcher, in.Rank, in.Size)
	}
	if in.MasterPort == 0 {
		in.MasterPort = DefaultPort
	}
	if in.MasterPort < 0 || in.MasterPort > 65535 {
		return in, false, fmt.Errorf("%s: master port %d out of range", in.Launcher, in.MasterPort)
	}
	return in, in.Size > 1, nil
}

// fromEnv fills Info from the first launcher whose variables are set.
func fromEnv(getenv func(string) string) (Info, error) {
	var errs []string
	num := func(name string) int {
		s := strings.TrimSpace(getenv(name))
		if s == "" {
			return -1
		}
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 {
			errs = append(errs, fmt.Sprintf("%s=%q is not a non-negative integer", name, s))
			return -1
		}
		return v
	}
	or := func(a, b int) int {
		if a >= 0 {
			return a
		}
		return b
	}
	port := func(names ...string) int {
		for _, n := range names {
			if v := num(n); v >= 0 {
				return v
			}
		}
		return 0
	}
	first := func(names ...string) string {
		for _, n := range names {
			if v := strings.TrimSpace(getenv(n)); v != "" {
				return v
			}
		}
		return ""
	}
	var in Info
	switch {
	case getenv("PET_NNODES") != "" || getenv("PET_NODE_RANK") != "" && getenv("TORCHELASTIC_RUN_ID") == "":
		// Kubeflow PyTorchJob without torchrun inside the pod.
		in.Launcher = "kubeflow"
		nproc := 1
		if s := getenv("PET_NPROC_PER_NODE"); s != "" && s != "auto" && s != "cpu" && s != "gpu" {
			nproc = or(num("PET_NPROC_PER_NODE"), 1)
		}
		node := or(num("PET_NODE_RANK"), num("RANK"))
		in.LocalRank = or(num("LOCAL_RANK"), 0)
		in.Rank = node*nproc + in.LocalRank
		if nn := num("PET_NNODES"); nn >= 0 {
			in.Size = nn * nproc
		} else {
			in.Size = num("WORLD_SIZE")
		}
		in.MasterAddr = first("PET_MASTER_ADDR", "MASTER_ADDR")
		in.MasterPort = port("PET_MASTER_PORT", "MASTER_PORT")
	case getenv("RANK") != "" && getenv("WORLD_SIZE") != "":
		in.Launcher = "torchrun"
		if getenv("GRAPHMILL_LAUNCH") != "" {
			in.Launcher = "graphmill launch"
		}
		in.Rank, in.Size, in.LocalRank = num("RANK"), num("WORLD_SIZE"), or(num("LOCAL_RANK"), 0)
		in.MasterAddr, in.MasterPort = first("MASTER_ADDR"), port("MASTER_PORT")
	case getenv("OMPI_COMM_WORLD_RANK") != "":
		in.Launcher = "openmpi"
		in.Rank, in.Size = num("OMPI_COMM_WORLD_RANK"), num("OMPI_COMM_WORLD_SIZE")
		in.LocalRank = or(num("OMPI_COMM_WORLD_LOCAL_RANK"), 0)
		in.MasterAddr, in.MasterPort = first("MASTER_ADDR"), port("MASTER_PORT")
		if in.MasterAddr == "" && num("OMPI_COMM_WORLD_LOCAL_SIZE") == in.Size {
			in.MasterAddr = "127.0.0.1"
		}
	case getenv("PMI_RANK") != "":
		in.Launcher = "mpich"
		in.Rank, in.Size = num("PMI_RANK"), num("PMI_SIZE")
		in.LocalRank = or(num("MPI_LOCALRANKID"), 0)
		in.MasterAddr, in.MasterPort = first("MASTER_ADDR"), port("MASTER_PORT")
		if in.MasterAddr == "" && num("MPI_LOCALNRANKS") == in.Size {
			in.MasterAddr = "127.0.0.1"
		}
	case getenv("SLURM_PROCID") != "" && (getenv("SLURM_NTASKS") != "" || getenv("SLURM_NPROCS") != ""):
		in.Launcher = "slurm"
		in.Rank, in.Size = num("SLURM_PROCID"), or(num("SLURM_NTASKS"), num("SLURM_NPROCS"))
		in.LocalRank = or(num("SLURM_LOCALID"), 0)
		in.MasterAddr = first("MASTER_ADDR")
		if in.MasterAddr == "" {
			list := first("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST")
			hosts, err := ExpandNodeList(list)
			if err != nil {
				return in, fmt.Errorf("slurm: %w", err)
			}
			if len(hosts) > 0 {
				in.MasterAddr = hosts[0]
			}
		}
		in.MasterPort = port("MASTER_PORT")
		if in.MasterPort == 0 {
			// A port per job, so two jobs sharing a first node do not
			// collide.
			if id := num("SLURM_JOB_ID"); id >= 0 {
				in.MasterPort = 20000 + id%10000
			}
		}
	case getenv("JOB_COMPLETION_INDEX") != "":
		in.Launcher = "kubernetes indexed job"
		in.Rank = num("JOB_COMPLETION_INDEX")
		in.Size = or(num("GRAPHMILL_WORLD_SIZE"), num("WORLD_SIZE"))
		in.MasterAddr, in.MasterPort = first("GRAPHMILL_MASTER_ADDR", "MASTER_ADDR"), port("MASTER_PORT")
	}
	if len(errs) > 0 {
		return in, fmt.Errorf("%s: %s", in.Launcher, strings.Join(errs, "; "))
	}
	return in, nil
}

// ExpandNodeList expands SLURM's compressed host list syntax:
// "node[01-03,07],gpu-a[1-2]" is node01 node02 node03 node07 gpu-a1 gpu-a2
// (zero padding kept, several bracket groups per name allowed).
func ExpandNodeList(s string) ([]string, error) {
	var out []string
	for _, item := range splitTop(s) {
		if item == "" {
			continue
		}
		hosts, err := expandOne(item)
		if err != nil {
			return nil, fmt.Errorf("node list %q: %w", s, err)
		}
		out = append(out, hosts...)
	}
	return out, nil
}

// splitTop splits at commas outside brackets.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

func expandOne(item string) ([]string, error) {
	open := strings.IndexByte(item, '[')
	if open < 0 {
		if strings.ContainsRune(item, ']') {
			return nil, fmt.Errorf("unmatched ']' in %q", item)
		}
		return []string{item}, nil
	}
	end := strings.IndexByte(item[open:], ']')
	if end < 0 {
		return nil, fmt.Errorf("unmatched '[' in %q", item)
	}
	end += open
	prefix, ranges, rest := item[:open], item[open+1:end], item[end+1:]
	tails, err := expandOne(rest)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range strings.Split(ranges, ",") {
		lo, hi, ok := strings.Cut(r, "-")
		if !ok {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || b < a || b-a > 1<<16 {
			return nil, fmt.Errorf("bad range %q in %q", r, item)
		}
		width := len(lo)
		for v := a; v <= b; v++ {
			num := fmt.Sprintf("%0*d", width, v)
			for _, t := range tails {
				out = append(out, prefix+num+t)
			}
		}
	}
	return out, nil
}

// InterfaceAddr returns the first IPv4 address (else IPv6) of the named
// network interface, for --iface on machines with several networks.
func InterfaceAddr(name string) (string, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return "", fmt.Errorf("--iface %s: %w", name, err)
	}
	addrs, err := ifi.Addrs()
	if err != nil {
		return "", fmt.Errorf("--iface %s: %w", name, err)
	}
	var v6 string
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		if ip4 := ipn.IP.To4(); ip4 != nil {
			return ip4.String(), nil
		}
		if v6 == "" && !ipn.IP.IsLinkLocalUnicast() {
			v6 = ipn.IP.String()
		}
	}
	if v6 != "" {
		return v6, nil
	}
	return "", fmt.Errorf("--iface %s has no IP address", name)
}
