package comm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/dist/launch"
	"github.com/graphmill/graphmill/internal/cli"
	"github.com/graphmill/graphmill/internal/units"
	"github.com/graphmill/graphmill/job"
)

// commReport is the JSON of "bench comm".
type commReport struct {
	// RatioVsMPI is the smallest pure-Go ÷ Open MPI all-reduce bus
	// bandwidth ratio over sizes >= 1 MiB (absent without -tags mpi).
	RatioVsMPI *float64 `json:"ratio_vs_mpi,omitempty"`
	// LatencyRatio4K is pure-Go ÷ Open MPI all-reduce time at 4 KiB (the
	// largest over the rank counts).
	LatencyRatio4K *float64 `json:"latency_ratio_4k_vs_mpi,omitempty"`
	// LatencyRatio4KPinned is LatencyRatio4K with the pure-Go ranks bound
	// to cores as Open MPI's are (full runs with taskset only).
	LatencyRatio4KPinned *float64 `json:"latency_ratio_4k_pinned_vs_mpi,omitempty"`
	// A2AVRatioVsMPI is RatioVsMPI for all-to-all-v.
	A2AVRatioVsMPI *float64 `json:"alltoallv_ratio_vs_mpi,omitempty"`
	MPI            bool     `json:"mpi"`
	Note           string   `json:"note,omitempty"`
	LoopbackGBps   float64  `json:"loopback_tcp_gbps"`
	CopyGBps       float64  `json:"memcpy_gbps"`
	Points         []Point  `json:"points"`
}

// Command is 'graphmill bench comm'.
func Command() *cobra.Command {
	var quick, asJSON, worker bool
	var ranksS, backend, sizesS string
	var budget time.Duration
	c := &cobra.Command{
		Use:   "comm",
		Short: "All-reduce and all-to-all-v bandwidth and latency of the pure-Go backend against Open MPI",
		Long: `Time all-reduce (float32 sum) and all-to-all-v with 2 and 4 local ranks at sizes from
4 KiB to 256 MiB: bus bandwidth as nccl-tests define it (all-reduce 2(N-1)/N * bytes / time)
and latency, the fastest of 3 timed rounds, for:
  go      the pure-Go backend as it runs by default (local ranks through shared memory)
  go-pin  the same with rank r bound to core r mod cores, as mpirun binds Open MPI's ranks
          (not with --quick; needs taskset)
  go-tcp  the same over loopback TCP only (not with --quick)
  mpi     Open MPI's MPI_Allreduce / MPI_Alltoallv on the same buffers in the same run
          (via mpirun; builds with -tags mpi only)
next to the loopback TCP and memory-copy ceilings. ratio_vs_mpi is the smallest go / mpi
all-reduce bus-bandwidth ratio over sizes >= 1 MiB.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sizes, err := commSizes(sizesS, quick)
			if err != nil {
				return err
			}
			if budget < 0 {
				return fmt.Errorf("--time %v: want a duration > 0", budget)
			}
			if budget == 0 {
				budget = 300 * time.Millisecond
				if quick {
					budget = 60 * time.Millisecond
				}
			}
			if worker {
				return commWorker(cmd.Context(), backend, sizes, budget, cmd.OutOrStdout())
			}
			return runBenchComm(cmd.Context(), ranksS, sizes, budget, quick, asJSON, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fl := c.Flags()
	fl.BoolVar(&quick, "quick", false, "sizes 4 KiB, 64 KiB, 1 MiB, 16 MiB and short timings (under 30 s)")
	fl.BoolVar(&asJSON, "json", false, "print the figures as JSON")
	fl.StringVar(&ranksS, "ranks", "2,4", "rank counts to run")
	fl.StringVar(&sizesS, "sizes", "", "buffer sizes, comma separated (default 4KiB..256MiB by 4x; --quick: 4KiB,64KiB,1MiB,16MiB)")
	fl.DurationVar(&budget, "time", 0, "time spent per size and collective (default 300ms; --quick 60ms)")
	fl.BoolVar(&worker, "worker", false, "internal: run as one rank")
	fl.StringVar(&backend, "backend", "tcp", "internal: the worker's backend")
	fl.MarkHidden("worker")
	fl.MarkHidden("backend")
	return c
}

func commSizes(s string, quick bool) ([]int64, error) {
	if s == "" {
		if quick {
			return []int64{4 << 10, 64 << 10, 1 << 20, 16 << 20}, nil
		}
		var out []int64
		for b := int64(4 << 10); b <= 256<<20; b *= 4 {
			out = append(out, b)
		}
		return out, nil
	}
	var out []int64
	for _, p := range strings.Split(s, ",") {
		b, err := units.ParseBytes(strings.TrimSpace(p))
		if err != nil || b < 64 {
			return nil, fmt.Errorf("--sizes %q: want sizes of at least 64 bytes such as 4KiB,1MiB", s)
		}
		out = append(out, b/64*64)
	}
	return out, nil
}

// commWorker is one rank: it joins the group its launcher describes,
// measures, and (rank 0) prints the points as JSON.
func commWorker(ctx context.Context, backend string, sizes []int64, budget time.Duration, out io.Writer) error {
	c, _, err := job.NewDistFlags(backend, time.Minute, 5*time.Minute, 10*time.Second).Join(ctx)
	if err != nil {
		return err
	}
	if c == nil {
		return fmt.Errorf("bench comm --worker runs under a launcher")
	}
	defer c.Close()
	pts, err := Measure(ctx, c, backend, sizes, budget)
	if err != nil {
		return err
	}
	if t, ok := c.(*dist.TCP); ok {
		for i := range pts {
			pts[i].Transport = t.Transport()
		}
	}
	if c.Rank() == 0 {
		return json.NewEncoder(out).Encode(pts)
	}
	return nil
}

// runRanks runs n worker ranks (through mpirun for mpi) and returns rank
// 0's points.
func runRanks(ctx context.Context, backend string, noShm, pin bool, n int, sizes []int64, budget time.Duration, errOut io.Writer) ([]Point, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	ss := make([]string, len(sizes))
	for i, s := range sizes {
		ss[i] = strconv.FormatInt(s, 10)
	}
	args := []string{"bench", "comm", "--worker", "--backend", backend, "--sizes", strings.Join(ss, ","), "--time", budget.String()}
	var stdout bytes.Buffer
	var stderr bytes.Buffer
	if backend == "mpi" {
		cmd := exec.CommandContext(ctx, "mpirun", append([]string{"-np", strconv.Itoa(n), "--oversubscribe", self}, args...)...)
		cmd.Env = append(os.Environ(), "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("mpirun -np %d: %v: %s", n, err, lastLine(stderr.String()))
		}
	} else {
		if noShm { // the children inherit it
			old, had := os.LookupEnv(dist.ShmEnv)
			os.Setenv(dist.ShmEnv, "0")
			defer func() {
				if had {
					os.Setenv(dist.ShmEnv, old)
				} else {
					os.Unsetenv(dist.ShmEnv)
				}
			}()
		}
		argv := append([]string{self}, args...)
		if pin { // rank r on core r mod cores, as mpirun binds Open MPI's ranks
			argv = append([]string{"sh", "-c", `exec taskset -c $((LOCAL_RANK % ` + strconv.Itoa(runtime.NumCPU()) + `)) "$0" "$@"`}, argv...)
		}
		if err := launch.Local(ctx, n, 0, 3*time.Second, argv, &stdout, &stderr); err != nil {
			return nil, fmt.Errorf("%d tcp ranks: %v: %s", n, err, lastLine(stderr.String()))
		}
	}
	line := stdout.String()
	if i := strings.Index(line, "["); i >= 0 && backend != "mpi" {
		line = line[strings.Index(line, "] ")+2:] // drop launch's "[rank 0] " prefix
	}
	var pts []Point
	if err := json.Unmarshal([]byte(strings.TrimSpace(line)), &pts); err != nil {
		return nil, fmt.Errorf("%d %s ranks: reading rank 0's figures: %v", n, backend, err)
	}
	return pts, nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}

func runBenchComm(ctx context.Context, ranksS string, sizes []int64, budget time.Duration, quick, asJSON bool, out, errOut io.Writer) error {
	var ranks []int
	for _, p := range strings.Split(ranksS, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 2 {
			return fmt.Errorf("--ranks %q: want rank counts of at least 2", ranksS)
		}
		ranks = append(ranks, n)
	}
	hasMPI := job.HasBackend("mpi")
	rep := commReport{MPI: hasMPI}
	if !hasMPI {
		rep.Note = "built without -tags mpi: no Open MPI figures, no ratio_vs_mpi"
	}
	var err error
	if rep.LoopbackGBps, err = LoopbackGBps(1<<20, budget); err != nil {
		return err
	}
	rep.CopyGBps = CopyGBps(16<<20, budget)
	// go: the pure-Go backend as it runs by default (shared memory
	// between local ranks); go-tcp: the same over loopback TCP only.
	type run struct {
		label, backend string
		noShm, pin     bool
	}
	runs := []run{{"go", "tcp", false, false}}
	if !quick {
		if _, err := exec.LookPath("taskset"); err == nil {
			runs = append(runs, run{"go-pin", "tcp", false, true})
		}
		runs = append(runs, run{"go-tcp", "tcp", true, false})
	}
	if hasMPI {
		runs = append(runs, run{"mpi", "mpi", false, false})
	}
	for _, n := range ranks {
		for _, r := range runs {
			fmt.Fprintf(errOut, "bench comm: %d ranks, %s\n", n, r.label)
			pts, err := runRanks(ctx, r.backend, r.noShm, r.pin, n, sizes, budget, errOut)
			if err != nil {
				return err
			}
			for i := range pts {
				pts[i].Backend = r.label
			}
			rep.Points = append(rep.Points, pts...)
		}
	}
	if hasMPI {
		rep.setMPIRatios()
	}
	if asJSON {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", b)
		return err
	}
	printComm(out, &rep)
	return nil
}

// printComm prints the report as text; a ratio that was not measured (no
// Open MPI build, no size of 1 MiB or more, no 4 KiB size) is "-" with
// the reason.
func printComm(out io.Writer, rep *commReport) {
	fmt.Fprintf(out, "ceilings: loopback TCP stream %.2f GB/s, memory copy %.2f GB/s\n", rep.LoopbackGBps, rep.CopyGBps)
	fmt.Fprintf(out, "%-6s %-7s %-13s %10s %12s %10s\n", "ranks", "impl", "collective", "size", "latency", "bus GB/s")
	for _, p := range rep.Points {
		fmt.Fprintf(out, "%-6d %-7s %-13s %10s %12s %10.3f\n", p.Ranks, p.Backend, p.Op, units.Bytes(p.Bytes), units.Duration(time.Duration(p.Seconds*1e9)), p.BusGBps)
	}
	if !rep.MPI {
		fmt.Fprintln(out, rep.Note)
		return
	}
	pinned := ""
	if rep.LatencyRatio4KPinned != nil {
		pinned = fmt.Sprintf(" (pinned %.2fx)", *rep.LatencyRatio4KPinned)
	}
	fmt.Fprintf(out, "pure Go / Open MPI: all-reduce bus bandwidth >= 1 MiB %s (smallest), all-to-all-v %s, all-reduce latency at 4 KiB %s%s\n",
		cli.MeasuredPtr(rep.RatioVsMPI, "%.2f"), cli.MeasuredPtr(rep.A2AVRatioVsMPI, "%.2f"), cli.MeasuredPtr(rep.LatencyRatio4K, "%.2fx"), pinned)
	if rep.Note != "" {
		fmt.Fprintln(out, rep.Note)
	}
}

// setMPIRatios sets the pure-Go / Open MPI ratios from the points, each
// only where both sides measured it (nil otherwise), and a note naming
// the ratios that could not be measured.
func (rep *commReport) setMPIRatios() {
	find := func(b string, n int, op string, size int64) *Point {
		for i, p := range rep.Points {
			if p.Backend == b && p.Ranks == n && p.Op == op && p.Bytes == size {
				return &rep.Points[i]
			}
		}
		return nil
	}
	bw, a2a, lat, latPin := math.Inf(1), math.Inf(1), 0.0, 0.0
	for _, p := range rep.Points {
		if p.Backend == "go-pin" && p.Bytes == 4<<10 && p.Op == "all-reduce" && p.Seconds > 0 {
			if m := find("mpi", p.Ranks, p.Op, p.Bytes); m != nil && m.Seconds > 0 {
				latPin = max(latPin, p.Seconds/m.Seconds)
			}
		}
		if p.Backend != "go" {
			continue
		}
		m := find("mpi", p.Ranks, p.Op, p.Bytes)
		if m == nil {
			continue
		}
		// A figure missing on either side (0) makes no ratio.
		if p.Bytes >= 1<<20 && p.Op == "all-reduce" && p.BusGBps > 0 && m.BusGBps > 0 {
			bw = min(bw, p.BusGBps/m.BusGBps)
		}
		if p.Bytes >= 1<<20 && p.Op == "all-to-all-v" && p.BusGBps > 0 && m.BusGBps > 0 {
			a2a = min(a2a, p.BusGBps/m.BusGBps)
		}
		if p.Bytes == 4<<10 && p.Op == "all-reduce" && p.Seconds > 0 && m.Seconds > 0 {
			lat = max(lat, p.Seconds/m.Seconds)
		}
	}
	if !math.IsInf(bw, 1) {
		rep.RatioVsMPI = &bw
	}
	var missing []string
	if math.IsInf(bw, 1) || math.IsInf(a2a, 1) {
		missing = append(missing, "bandwidth ratios need a size of at least 1 MiB measured by both")
	}
	if lat == 0 {
		missing = append(missing, "the latency ratio needs the 4 KiB size measured by both")
	}
	if len(missing) > 0 {
		rep.Note = "not measured (-): " + strings.Join(missing, "; ")
	}
	if !math.IsInf(a2a, 1) {
		rep.A2AVRatioVsMPI = &a2a
	}
	if lat > 0 {
		rep.LatencyRatio4K = &lat
	}
	if latPin > 0 {
		rep.LatencyRatio4KPinned = &latPin
	}
}
