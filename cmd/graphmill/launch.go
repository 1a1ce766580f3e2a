package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/graphmill/graphmill/dist"
)

func init() { rootCmd.AddCommand(newLaunchCmd()) }

// exitCode is an error that ends graphmill with a given status.
type exitCode struct {
	code int
	msg  string
}

func (e *exitCode) Error() string { return e.msg }

func newLaunchCmd() *cobra.Command {
	var n, port int
	var grace time.Duration
	c := &cobra.Command{
		Use:   "launch -n N [--] PROGRAM ARGS...",
		Short: "Run N local ranks of a program (as torchrun --standalone or mpirun -np)",
		Long: `Run N ranks of PROGRAM on this machine, each a direct child process with the rank
variables torchrun sets (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
MASTER_PORT), a fresh shared secret in GRAPHMILL_DIST_TOKEN, and rank 0's store on a free
loopback port. Output lines are prefixed by rank. When one rank fails, the others are
stopped (SIGTERM, then SIGKILL after --grace) and launch exits with the status of the
first failure (128+signal for a rank killed by a signal).`,
		Example: `  graphmill launch -n 2 -- graphmill train --model sage
  graphmill launch -n 4 -- python3 my_torch_script.py`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLaunch(cmd.Context(), n, port, grace, args, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	c.Flags().IntVarP(&n, "nproc", "n", 2, "number of ranks")
	c.Flags().IntVar(&port, "master-port", 0, "port of rank 0's store (0: a free one)")
	c.Flags().DurationVar(&grace, "grace", 3*time.Second, "time the other ranks get to stop after one fails, before SIGKILL")
	c.Flags().SetInterspersed(false)
	return c
}

// launcherVars are variables of outer launchers that would confuse the
// children's rank resolution.
var launcherVars = []string{"RANK=", "WORLD_SIZE=", "LOCAL_RANK=", "LOCAL_WORLD_SIZE=", "MASTER_ADDR=", "MASTER_PORT=", "PET_", "OMPI_COMM_WORLD_", "PMI_RANK=", "PMI_SIZE=", "SLURM_PROCID=", "JOB_COMPLETION_INDEX=", "TORCHELASTIC_", "GROUP_RANK=", dist.TokenEnv + "="}

func freeLoopbackPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func runLaunch(ctx context.Context, n, port int, grace time.Duration, args []string, stdout, stderr io.Writer) error {
	if n < 1 {
		return fmt.Errorf("launch: -n %d: want at least one rank", n)
	}
	prog, err := exec.LookPath(args[0])
	if err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	if port == 0 {
		if port, err = freeLoopbackPort(); err != nil {
			return fmt.Errorf("launch: no free port: %w", err)
		}
	}
	var base []string
	for _, kv := range os.Environ() {
		keep := true
		for _, p := range launcherVars {
			if strings.HasPrefix(kv, p) {
				keep = false
			}
		}
		if keep {
			base = append(base, kv)
		}
	}
	secret := dist.NewSecret()
	var outMu sync.Mutex
	type result struct {
		rank int
		err  error
	}
	done := make(chan result, n)
	procs := make([]*exec.Cmd, n)
	for r := range n {
		c := exec.Command(prog, args[1:]...)
		c.Env = append(append([]string(nil), base...),
			"RANK="+strconv.Itoa(r), "WORLD_SIZE="+strconv.Itoa(n), "LOCAL_RANK="+strconv.Itoa(r), "LOCAL_WORLD_SIZE="+strconv.Itoa(n),
			"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(port), dist.TokenEnv+"="+secret, "GRAPHMILL_LAUNCH=1")
		c.SysProcAttr = childAttr() // no orphans if launch dies (Linux)
		c.Stdout = &prefixWriter{prefix: fmt.Sprintf("[rank %d] ", r), dst: stdout, mu: &outMu}
		c.Stderr = &prefixWriter{prefix: fmt.Sprintf("[rank %d] ", r), dst: stderr, mu: &outMu}
		c.WaitDelay = 2 * time.Second // a grandchild holding the output open does not hold launch
		if err := c.Start(); err != nil {
			for _, p := range procs[:r] {
				p.Process.Kill()
			}
			return fmt.Errorf("launch: starting rank %d: %w", r, err)
		}
		procs[r] = c
	}
	for r, c := range procs {
		go func() {
			err := c.Wait()
			done <- result{r, err}
		}()
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	stop := func(sig syscall.Signal) {
		for _, c := range procs {
			if c.ProcessState == nil {
				c.Process.Signal(sig)
			}
		}
	}
	var first *exitCode
	var killTimer <-chan time.Time
	for left := n; left > 0; {
		select {
		case res := <-done:
			left--
			if res.err == nil || first != nil {
				continue
			}
			code := 1
			var ee *exec.ExitError
			if errors.As(res.err, &ee) {
				if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					code = 128 + int(ws.Signal())
				} else {
					code = ee.ExitCode()
				}
			}
			first = &exitCode{code: code, msg: fmt.Sprintf("launch: rank %d failed (%v); stopped the other ranks", res.rank, res.err)}
			stop(syscall.SIGTERM)
			killTimer = time.After(grace)
		case s := <-sigs:
			stop(s.(syscall.Signal))
			if first == nil {
				first = &exitCode{code: 130, msg: fmt.Sprintf("launch: interrupted (%v)", s)}
				killTimer = time.After(grace)
			}
		case <-killTimer:
			stop(syscall.SIGKILL)
		case <-ctx.Done():
			stop(syscall.SIGKILL)
		}
	}
	for _, c := range procs {
		c.Stdout.(*prefixWriter).flush()
		c.Stderr.(*prefixWriter).flush()
	}
	if first != nil {
		return first
	}
	return nil
}

// prefixWriter writes whole lines to dst, each behind prefix.
type prefixWriter struct {
	prefix string
	dst    io.Writer
	mu     *sync.Mutex
	buf    []byte
}

func (w *prefixWriter) Write(b []byte) (int, error) {
	w.buf = append(w.buf, b...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.mu.Lock()
		fmt.Fprintf(w.dst, "%s%s\n", w.prefix, w.buf[:i])
		w.mu.Unlock()
		w.buf = w.buf[i+1:]
	}
	return len(b), nil
}

func (w *prefixWriter) flush() {
	if len(w.buf) > 0 {
		w.Write([]byte{'\n'})
	}
}
