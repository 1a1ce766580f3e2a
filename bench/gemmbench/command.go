package gemmbench

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/graphmill/graphmill/internal/cli"
	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/openblas"
	"github.com/spf13/cobra"
)

// Command is 'graphmill bench gemm'.
func Command() *cobra.Command {
	var (
		asJSON  bool
		quick   bool
		threads []int
		kernel  string
		noGonum bool
		filter  string
	)
	cmd := &cobra.Command{
		Use:   "gemm",
		Short: "Measure graphmill's float32 GEMM on GNN shapes against gonum and OpenBLAS",
		Long: `Measure graphmill's float32 matrix products (package tensor) on the shapes of
GNN training: for each layer X·W (16384×602·602×256, 4096×128·128×256 and
2708×1433·1433×16) the forward product, the weight gradient Xᵀ·dY and the
input gradient dY·Wᵀ.

Peers are measured in the same run, interleaved shape by shape, with the same
thread count: gonum's pure-Go blas32 (always, unless --no-gonum) and OpenBLAS
(only in binaries built with "go build -tags openblas", which needs cgo and
libopenblas-dev). The arithmetic ceiling is measured in the same blocks too:
the kernel set's micro-kernel on operands in L1 cache, on as many threads
("kernel peak"). Cores are shared, so read the ratios, not the absolute
GFLOP/s. Speeds are the best of several repetitions; each result with a peer
also carries the largest difference from that peer's product, relative to its
largest value ("rel err"; absent, "-", with --no-gonum in a build without
OpenBLAS: then nothing checks the products).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if kernel != "" {
				if err := tensor.SetKernel(kernel); err != nil {
					return err
				}
			}
			if err := matchPeer(tensor.Kernel()); err != nil {
				return err
			}
			rep, err := RunGemm(GemmConfig{Threads: threads, Quick: quick, NoGonum: noGonum, Filter: filter})
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			fmt.Printf("machine: %s\nkernel %s, GOMAXPROCS %d, OpenBLAS built in: %v %s\n", rep.Machine, rep.Kernel, rep.GOMAXPROCS, rep.OpenBLAS, rep.OpenBLASCore)
			tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "shape\top\tthreads\tours GF/s\tkernel peak GF/s\tours/peak\topenblas GF/s\tours/openblas\tgonum GF/s\tours/gonum\trel err\t")
			for _, r := range rep.Results {
				relErr := "-"
				if r.MaxRelErr != nil {
					relErr = fmt.Sprintf("%.1e (%s)", *r.MaxRelErr, r.ErrPeer)
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%.1f\t%.2f\t%s\t%s\t%s\t%s\t%s\t\n", r.Name, r.Op, r.Threads, r.Ours, r.Peak, r.RatioPeak,
					cli.Measured(r.OpenBLAS, "%.1f"), cli.Measured(r.RatioOpenBLAS, "%.2f"), cli.Measured(r.Gonum, "%.1f"), cli.Measured(r.RatioGonum, "%.1f"), relErr)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if rep.MinRatioOpenBLAS > 0 {
				fmt.Printf("smallest ours/openblas ratio: %.2f\n", rep.MinRatioOpenBLAS)
			}
			if !rep.OpenBLAS && noGonum {
				fmt.Println("no peer ran (--no-gonum, no OpenBLAS): results not checked against a peer's product")
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "print the results as JSON (one object with a \"results\" array) instead of a table")
	f.BoolVar(&quick, "quick", false, "fewer repetitions per measurement; finishes in under 30 seconds on 2 cores")
	f.IntSliceVar(&threads, "threads", nil, "comma-separated thread counts to measure, e.g. 1,2 (default 1 and GOMAXPROCS)")
	f.StringVar(&kernel, "kernel", "", "kernel set to use: generic (pure Go), avx2 or avx512 (default: the best this CPU supports)")
	f.BoolVar(&noGonum, "no-gonum", false, "skip the gonum peer (it takes most of the time on large shapes)")
	f.StringVar(&filter, "shape", "", "only measure shapes whose name contains this text, e.g. 4096x128 or wgrad")
	return cmd
}

// matchPeer makes OpenBLAS run the kernels of the ISA ours run (kernel):
// where its own choice is narrower or wider, it runs the command again
// with OPENBLAS_CORETYPE set, which OpenBLAS reads only as it loads. A
// user's OPENBLAS_CORETYPE is kept, with a note where it runs another
// ISA's kernels (these machines' environment sets Haswell, AVX2: ours
// on AVX-512 read 2.2x OpenBLAS on a shape where its own choice,
// Cooperlake, gives 1.1x).
func matchPeer(kernel string) error {
	want := peerCore(kernel, openblas.CoreName())
	if want == "" {
		return nil
	}
	if set := os.Getenv("OPENBLAS_CORETYPE"); set != "" {
		fmt.Fprintf(os.Stderr, "note: OPENBLAS_CORETYPE=%s runs OpenBLAS's %s kernels against ours (%s): the ratios compare two ISAs (unset it to match them)\n", set, openblas.CoreName(), kernel)
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "OpenBLAS chose %s kernels; running again with OPENBLAS_CORETYPE=%s to match ours (%s)\n", openblas.CoreName(), want, kernel)
	c := exec.Command(exe, os.Args[1:]...)
	c.Env = append(os.Environ(), "OPENBLAS_CORETYPE="+want)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	var ee *exec.ExitError
	if err := c.Run(); errors.As(err, &ee) {
		os.Exit(ee.ExitCode())
	} else if err != nil {
		return err
	}
	os.Exit(0)
	return nil
}

// peerCore is the OPENBLAS_CORETYPE whose ISA matches our kernel set
// where OpenBLAS's core does not, or "".
func peerCore(kernel, core string) string {
	if core == "" {
		return "" // no OpenBLAS
	}
	wide := slices.Contains([]string{"skylakex", "cooperlake", "sapphirerapids"}, strings.ToLower(core))
	switch {
	case kernel == "avx512" && !wide:
		return "SkylakeX"
	case kernel == "avx2" && wide:
		return "Haswell"
	}
	return ""
}
