package dist

import (
	"reflect"
	"strings"
	"testing"
)

func envOf(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestResolveLaunchers(t *testing.T) {
	cases := []struct {
		name string
		env  func(string) string
		o    Overrides
		want Info
		dist bool
	}{
		{"plain process", envOf("HOME", "/root"), NoOverrides(), Info{Rank: 0, Size: 1}, false},
		{"torchrun", envOf("RANK", "3", "WORLD_SIZE", "8", "LOCAL_RANK", "1", "LOCAL_WORLD_SIZE", "2", "MASTER_ADDR", "10.0.0.1", "MASTER_PORT", "29400", "TORCHELASTIC_RUN_ID", "abc", "GROUP_RANK", "1"), NoOverrides(),
			Info{Rank: 3, Size: 8, LocalRank: 1, MasterAddr: "10.0.0.1", MasterPort: 29400, Launcher: "torchrun"}, true},
		{"graphmill launch", envOf("RANK", "1", "WORLD_SIZE", "2", "LOCAL_RANK", "1", "MASTER_ADDR", "127.0.0.1", "MASTER_PORT", "41000", "GRAPHMILL_LAUNCH", "1"), NoOverrides(),
			Info{Rank: 1, Size: 2, LocalRank: 1, MasterAddr: "127.0.0.1", MasterPort: 41000, Launcher: "graphmill launch"}, true},
		// A PyTorchJob with 3 worker pods of 2 processes: RANK is the pod index.
		{"kubeflow pytorchjob", envOf("RANK", "2", "WORLD_SIZE", "6", "LOCAL_RANK", "1", "MASTER_ADDR", "job-master-0", "MASTER_PORT", "23456",
			"PET_NNODES", "3", "PET_NODE_RANK", "2", "PET_NPROC_PER_NODE", "2", "PET_MASTER_ADDR", "job-master-0", "PET_MASTER_PORT", "23456"), NoOverrides(),
			Info{Rank: 5, Size: 6, LocalRank: 1, MasterAddr: "job-master-0", MasterPort: 23456, Launcher: "kubeflow"}, true},
		{"kubeflow one process per pod", envOf("RANK", "1", "WORLD_SIZE", "4", "MASTER_ADDR", "pt-master-0", "MASTER_PORT", "23456", "PET_NNODES", "4", "PET_NPROC_PER_NODE", "auto"), NoOverrides(),
			Info{Rank: 1, Size: 4, MasterAddr: "pt-master-0", MasterPort: 23456, Launcher: "kubeflow"}, true},
		{"open mpi, one node", envOf("OMPI_COMM_WORLD_RANK", "2", "OMPI_COMM_WORLD_SIZE", "4", "OMPI_COMM_WORLD_LOCAL_RANK", "2", "OMPI_COMM_WORLD_LOCAL_SIZE", "4", "OMPI_COMM_WORLD_NODE_RANK", "0"), NoOverrides(),
			Info{Rank: 2, Size: 4, LocalRank: 2, MasterAddr: "127.0.0.1", MasterPort: DefaultPort, Launcher: "openmpi"}, true},
		{"open mpi, several nodes", envOf("OMPI_COMM_WORLD_RANK", "5", "OMPI_COMM_WORLD_SIZE", "8", "OMPI_COMM_WORLD_LOCAL_RANK", "1", "OMPI_COMM_WORLD_LOCAL_SIZE", "4", "MASTER_ADDR", "n1"), NoOverrides(),
			Info{Rank: 5, Size: 8, LocalRank: 1, MasterAddr: "n1", MasterPort: DefaultPort, Launcher: "openmpi"}, true},
		{"mpich hydra", envOf("PMI_RANK", "1", "PMI_SIZE", "3", "MPI_LOCALRANKID", "1", "MPI_LOCALNRANKS", "3", "PMI_FD", "6"), NoOverrides(),
			Info{Rank: 1, Size: 3, LocalRank: 1, MasterAddr: "127.0.0.1", MasterPort: DefaultPort, Launcher: "mpich"}, true},
		{"slurm srun", envOf("SLURM_PROCID", "5", "SLURM_NTASKS", "8", "SLURM_LOCALID", "1", "SLURM_JOB_ID", "123456", "SLURM_STEP_NODELIST", "gpu-[07-08,10],cpu1", "SLURM_JOB_NODELIST", "gpu-[01-10],cpu1", "SLURM_NODEID", "2"), NoOverrides(),
			Info{Rank: 5, Size: 8, LocalRank: 1, MasterAddr: "gpu-07", MasterPort: 20000 + 123456%10000, Launcher: "slurm"}, true},
		{"kubernetes indexed job", envOf("JOB_COMPLETION_INDEX", "3", "HOSTNAME", "train-3-xyz"), Overrides{Rank: -1, Size: 4, LocalRank: -1, MasterAddr: "train-0.train", MasterPort: 29500},
			Info{Rank: 3, Size: 4, MasterAddr: "train-0.train", MasterPort: 29500, Launcher: "kubernetes indexed job"}, true},
		{"flags override the environment", envOf("RANK", "1", "WORLD_SIZE", "2", "MASTER_ADDR", "a", "MASTER_PORT", "1"), Overrides{Rank: 0, Size: 3, LocalRank: -1, MasterAddr: "b", MasterPort: 2},
			Info{Rank: 0, Size: 3, MasterAddr: "b", MasterPort: 2, Launcher: "torchrun"}, true},
		{"flags alone", envOf(), Overrides{Rank: 1, Size: 2, LocalRank: -1, MasterAddr: "h", MasterPort: -1},
			Info{Rank: 1, Size: 2, MasterAddr: "h", MasterPort: DefaultPort, Launcher: "flags"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, d, err := Resolve(tc.env, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if d != tc.dist || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v distributed=%v, want %+v distributed=%v", got, d, tc.want, tc.dist)
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	cases := []struct {
		env  func(string) string
		o    Overrides
		want string
	}{
		{envOf("RANK", "x", "WORLD_SIZE", "2"), NoOverrides(), `RANK="x"`},
		{envOf("RANK", "2", "WORLD_SIZE", "2", "MASTER_ADDR", "a"), NoOverrides(), "rank 2 outside a world of 2"},
		{envOf("OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "8", "OMPI_COMM_WORLD_LOCAL_SIZE", "4"), NoOverrides(), "MASTER_ADDR"},
		{envOf("JOB_COMPLETION_INDEX", "1"), NoOverrides(), "--world-size"},
		{envOf("SLURM_PROCID", "0", "SLURM_NTASKS", "2", "SLURM_STEP_NODELIST", "n[1-"), NoOverrides(), "unmatched"},
		{envOf(), func() Overrides { o := NoOverrides(); o.Size, o.MasterAddr = 2, "h"; return o }(), "--world-size 2 without --rank"},
	}
	for _, tc := range cases {
		_, _, err := Resolve(tc.env, tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one mentioning %q", err, tc.want)
		}
	}
}

func TestExpandNodeList(t *testing.T) {
	cases := map[string][]string{
		"node1":                     {"node1"},
		"node[1-3]":                 {"node1", "node2", "node3"},
		"gpu-[007-009,012],login":   {"gpu-007", "gpu-008", "gpu-009", "gpu-012", "login"},
		"r[1-2]n[01-02]":            {"r1n01", "r1n02", "r2n01", "r2n02"},
		"a[9-10].cluster,b.cluster": {"a9.cluster", "a10.cluster", "b.cluster"},
	}
	for in, want := range cases {
		got, err := ExpandNodeList(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: got %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"n[1-", "n]1", "n[3-1]", "n[a-b]"} {
		if _, err := ExpandNodeList(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
