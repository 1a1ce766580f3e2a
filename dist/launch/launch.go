// Package launch runs the ranks of a distributed program on this machine
// ('graphmill launch', and the benchmarks that start their own ranks), as
// torchrun --standalone or mpirun -np do.
package launch

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
	"sync/atomic"
	"syscall"
	"time"

	"github.com/graphmill/graphmill/dist"
)

// ExitError is the failure of a rank: the status the launcher should exit
// with, and why.
type ExitError struct {
	Code int
	msg  string
	err  error // the cause, if any (ctx.Err() when the context stopped the ranks)
}

func (e *ExitError) Error() string { return e.msg }

// Unwrap returns the cause: ctx.Err() when Local's context stopped the
// ranks, else nil.
func (e *ExitError) Unwrap() error { return e.err }

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

// forwarding counts the Local calls in this process that are passing
// SIGINT and SIGTERM on to their ranks.
var forwarding atomic.Int32

// Forwarding reports whether a Local call in this process is running and
// handling SIGINT and SIGTERM itself (it passes the first on to its ranks,
// waits for them and kills them at the second): a program's own signal
// handler should then leave those two signals to it rather than cancel
// Local's context or quit.
func Forwarding() bool { return forwarding.Load() > 0 }

// Local runs n ranks of the program args[0] (found on PATH) with args[1:]
// on this machine, each a direct child process with the rank variables
// torchrun sets (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT), a fresh shared secret in
// $GRAPHMILL_DIST_TOKEN, and rank 0's store on port (0: a free loopback
// one). Output lines go to stdout and stderr prefixed by rank. When one
// rank fails, the others are stopped (SIGTERM, then SIGKILL after grace)
// and Local returns an *ExitError with the status of the first failure
// (128+signal for a rank killed by a signal).
//
// The first SIGINT or SIGTERM this process receives is passed on to the
// ranks (on Linux each runs in a process group of its own, so a Ctrl-C at
// the terminal reaches it once, through Local, and every signal goes to
// the group: the rank and what it started), which stop on their own:
// Local waits for them, kills those still running after grace, and
// returns an *ExitError with the signal's status (128+signal). A second
// signal kills them at once. Cancelling ctx stops the ranks as a failure
// does (SIGTERM, SIGKILL after grace); Local then returns an error that
// wraps ctx.Err().
func Local(ctx context.Context, n, port int, grace time.Duration, args []string, stdout, stderr io.Writer) error {
	if n < 1 {
		return fmt.Errorf("launch: -n %d: want at least one rank", n)
	}
	if port < 0 || port > 65535 {
		return fmt.Errorf("launch: master port %d: want a port in [1, 65535], or 0 for a free one", port)
	}
	if len(args) == 0 {
		return errors.New("launch: no program to run: give it after --, e.g. graphmill launch -n 2 -- graphmill train --model sage")
	}
	if grace < 0 {
		return fmt.Errorf("launch: grace %v: want a duration >= 0", grace)
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
	// Signals are caught before the first rank starts, so none is lost
	// between a start and the loop below.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	forwarding.Add(1)
	defer func() {
		forwarding.Add(-1)
		signal.Stop(sigs)
	}()
	done := make(chan result, n)
	procs := make([]*exec.Cmd, n)
	for r := range n {
		c := exec.Command(prog, args[1:]...)
		c.Env = append(append([]string(nil), base...),
			"RANK="+strconv.Itoa(r), "WORLD_SIZE="+strconv.Itoa(n), "LOCAL_RANK="+strconv.Itoa(r), "LOCAL_WORLD_SIZE="+strconv.Itoa(n),
			"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(port), dist.TokenEnv+"="+secret, "GRAPHMILL_LAUNCH=1")
		c.SysProcAttr = childAttr() // no orphans if launch dies, signals only through launch (Linux)
		c.Stdout = &prefixWriter{prefix: fmt.Sprintf("[rank %d] ", r), dst: stdout, mu: &outMu}
		c.Stderr = &prefixWriter{prefix: fmt.Sprintf("[rank %d] ", r), dst: stderr, mu: &outMu}
		c.WaitDelay = 2 * time.Second // a grandchild holding the output open does not hold launch
		if err := c.Start(); err != nil {
			for _, p := range procs[:r] {
				p.Process.Kill()
				p.Wait()
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
	// exited is written and read by this goroutine only: the ranks whose
	// Wait has returned (c.ProcessState belongs to the Wait goroutines
	// until then).
	exited := make([]bool, n)
	stop := func(sig syscall.Signal) {
		for r, c := range procs {
			if !exited[r] {
				signalRank(c.Process, sig)
			}
		}
	}
	say := func(format string, a ...any) {
		outMu.Lock()
		fmt.Fprintf(stderr, "launch: "+format+"\n", a...)
		outMu.Unlock()
	}
	var first *ExitError
	var killTimer <-chan time.Time
	startGrace := func() {
		if killTimer == nil {
			killTimer = time.After(grace)
		}
	}
	ctxDone := ctx.Done()
	signals := 0
	for left := n; left > 0; {
		select {
		case res := <-done:
			left--
			exited[res.rank] = true
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
			// Its last error line says why, which the other ranks'
			// "terminated" lines would bury.
			why := ""
			if l := procs[res.rank].Stderr.(*prefixWriter).lastLine(); l != "" {
				why = ": " + l
			}
			first = &ExitError{Code: code, msg: fmt.Sprintf("launch: rank %d failed (%v%s); stopped the other ranks", res.rank, res.err, why)}
			stop(syscall.SIGTERM)
			startGrace()
		case s := <-sigs:
			sig := s.(syscall.Signal)
			signals++
			if signals > 1 {
				say("%v again: killing the ranks", s)
				stop(syscall.SIGKILL)
				continue
			}
			say("%v: passed on to the ranks; waiting %v for them to stop (send it again to kill them at once)", s, grace)
			stop(sig)
			if first == nil {
				first = &ExitError{Code: 128 + int(sig), msg: fmt.Sprintf("launch: interrupted (%v); the ranks were passed the signal", s)}
			}
			startGrace()
		case <-killTimer:
			killTimer = nil
			if left > 0 {
				say("%d rank(s) still running %v after being stopped: SIGKILL", left, grace)
			}
			stop(syscall.SIGKILL)
		case <-ctxDone:
			ctxDone = nil
			stop(syscall.SIGTERM)
			if first == nil {
				first = &ExitError{Code: 1, msg: fmt.Sprintf("launch: stopped the ranks: %v", ctx.Err()), err: ctx.Err()}
			}
			startGrace()
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
	last   string // the last non-empty line
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
		if l := strings.TrimSpace(string(w.buf[:i])); l != "" {
			w.last = l
		}
		w.mu.Unlock()
		w.buf = w.buf[i+1:]
	}
	return len(b), nil
}

// lastLine is the last non-empty line written so far.
func (w *prefixWriter) lastLine() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

func (w *prefixWriter) flush() {
	if len(w.buf) > 0 {
		w.Write([]byte{'\n'})
	}
}
