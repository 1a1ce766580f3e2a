package gemmbench

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/graphmill/graphmill/internal/isa"
	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/openblas"
	"gonum.org/v1/gonum/blas/blas32"
)

// BenchmarkGemm runs each GNN shape with our kernels and, as peers in the
// same run, gonum blas32 and (with -tags openblas) OpenBLAS. The custom
// metric is GFLOP/s; compare sub-benchmarks of the same shape and threads.
func BenchmarkGemm(b *testing.B) {
	for _, s := range GNNShapes {
		ar, ac, br, bc := s.operands()
		a, bm := tensor.New(ar, ac), tensor.New(br, bc)
		c := tensor.New(s.M, s.N)
		flops := 2 * float64(s.M) * float64(s.N) * float64(s.K)
		report := func(b *testing.B) {
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		}
		for _, th := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/t%d/ours", s.Name, th), func(b *testing.B) {
				for b.Loop() {
					if err := tensor.GemmThreads(th, s.TA, s.TB, 1, a, bm, 0, c); err != nil {
						b.Fatal(err)
					}
				}
				report(b)
			})
			if openblas.Available {
				b.Run(fmt.Sprintf("%s/t%d/openblas", s.Name, th), func(b *testing.B) {
					for b.Loop() {
						if err := openblas.Sgemm(th, s.TA == tensor.Trans, s.TB == tensor.Trans, s.M, s.N, s.K, 1, a.Data, a.Cols, bm.Data, bm.Cols, 0, c.Data, c.Cols); err != nil {
							b.Fatal(err)
						}
					}
					report(b)
				})
			}
			b.Run(fmt.Sprintf("%s/t%d/gonum", s.Name, th), func(b *testing.B) {
				// gonum uses GOMAXPROCS workers; run with -cpu 1,2 to vary them.
				for b.Loop() {
					blas32.Gemm(trans(s.TA), trans(s.TB), 1, general(a), general(bm), 0, general(c))
				}
				report(b)
			})
		}
	}
}

func TestRunGemmQuick(t *testing.T) {
	small := []GemmShape{{"small", tensor.Trans, tensor.NoTrans, 50, 40, 30}, {"small-nt", tensor.NoTrans, tensor.Trans, 64, 16, 100}}
	rep, err := RunGemm(GemmConfig{Threads: []int{1, 2}, Quick: true, Shapes: small})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 4 {
		t.Fatalf("%d results, want 4", len(rep.Results))
	}
	if rep.Machine != isa.Describe() {
		t.Errorf("report's machine %+v, want %+v", rep.Machine, isa.Describe())
	}
	for _, r := range rep.Results {
		if r.Ours <= 0 || r.Gonum <= 0 || r.RatioGonum <= 0 || r.Peak <= 0 || r.RatioPeak != r.Ours/r.Peak || r.MaxRelErr == nil || *r.MaxRelErr > 1e-5 || r.ErrPeer != "gonum" {
			t.Errorf("implausible result %+v", r)
		}
		if openblas.Available && (r.OpenBLAS <= 0 || r.RatioOpenBLAS <= 0) {
			t.Errorf("OpenBLAS built in but not measured: %+v", r)
		}
	}
	if _, err := RunGemm(GemmConfig{Threads: []int{0}}); err == nil {
		t.Error("thread count 0 accepted")
	}
}

// TestRunGemmNoPeer checks that without a peer (--no-gonum, no OpenBLAS)
// no result claims a check against one: max_rel_err_vs_peer is absent,
// not 0.
func TestRunGemmNoPeer(t *testing.T) {
	if openblas.Available {
		t.Skip("OpenBLAS is a peer in this build")
	}
	rep, err := RunGemm(GemmConfig{Threads: []int{1}, Quick: true, NoGonum: true, Shapes: []GemmShape{{"small", tensor.NoTrans, tensor.NoTrans, 32, 16, 24}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if r.MaxRelErr != nil || r.ErrPeer != "" {
			t.Errorf("result %+v checked against a peer that did not run", r)
		}
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "max_rel_err_vs_peer") {
		t.Errorf("JSON %s has max_rel_err_vs_peer", b)
	}
}

func TestErrPeer(t *testing.T) {
	for _, c := range []struct {
		openBLAS, gonum bool
		want            string
	}{{false, false, ""}, {true, false, "openblas"}, {false, true, "gonum"}, {true, true, "gonum"}} {
		if got := errPeer(c.openBLAS, c.gonum); got != c.want {
			t.Errorf("errPeer(%v, %v) = %q, want %q", c.openBLAS, c.gonum, got, c.want)
		}
	}
}

// TestPeerCore: OpenBLAS is set to the ISA of our kernels where its own
// choice differs (AVX2 kernels on an AVX-512 CPU it does not know), and
// left alone where it matches or where there is no OpenBLAS.
func TestPeerCore(t *testing.T) {
	for _, c := range []struct{ kernel, core, want string }{
		{"avx512", "Haswell", "SkylakeX"}, {"avx512", "Zen", "SkylakeX"}, {"avx512", "SkylakeX", ""}, {"avx512", "SapphireRapids", ""},
		{"avx2", "SkylakeX", "Haswell"}, {"avx2", "Haswell", ""}, {"avx2", "Zen", ""}, {"generic", "Haswell", ""}, {"avx512", "", ""},
	} {
		if got := peerCore(c.kernel, c.core); got != c.want {
			t.Errorf("kernel %s, OpenBLAS %s: %q, want %q", c.kernel, c.core, got, c.want)
		}
	}
}
