// Package cgroup puts child processes in a memory cgroup of their own (v1
// or v2, whichever is mounted writable; root only), so that a benchmark or
// test can run them under a real memory limit that also bounds the page
// cache they use.
package cgroup

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Group is a memory cgroup with a limit.
type Group struct {
	dir, version string
}

// Root is where cgroups are mounted.
var Root = "/sys/fs/cgroup"

// New creates the memory cgroup name with a limit of limit bytes: under
// v1's memory controller when it is mounted writable, else under v2's
// unified hierarchy. It fails when neither is writable (not root, or no
// memory controller).
func New(name string, limit int64) (*Group, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("cgroup: limit %d", limit)
	}
	try := func(dir, version, limitFile string) (*Group, error) {
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, err
		}
		g := &Group{dir: dir, version: version}
		if err := os.WriteFile(filepath.Join(dir, limitFile), []byte(strconv.FormatInt(limit, 10)), 0); err != nil {
			g.Close()
			return nil, err
		}
		return g, nil
	}
	v1 := filepath.Join(Root, "memory")
	if st, err := os.Stat(filepath.Join(v1, "memory.limit_in_bytes")); err == nil && !st.IsDir() {
		g, err := try(filepath.Join(v1, name), "cgroup v1", "memory.limit_in_bytes")
		if err == nil {
			return g, nil
		}
	}
	if b, err := os.ReadFile(filepath.Join(Root, "cgroup.subtree_control")); err == nil && strings.Contains(string(b), "memory") {
		return try(filepath.Join(Root, name), "cgroup v2", "memory.max")
	}
	return nil, errors.New("cgroup: no writable memory cgroup (v1 " + v1 + " or v2 " + Root + " with the memory controller)")
}

// Version says which hierarchy the group is in ("cgroup v1" or "cgroup v2").
func (g *Group) Version() string { return g.version }

// Prepare makes cmd (not yet started) run inside the group: it is started
// through /bin/sh, which moves itself into the group and then execs the
// command, so that the command's first allocation is already counted.
func (g *Group) Prepare(cmd *exec.Cmd) error {
	sh, err := exec.LookPath("sh")
	if err != nil {
		return err
	}
	args := append([]string{sh, "-c", `echo $$ > "$0" && exec "$@"`, filepath.Join(g.dir, "cgroup.procs"), cmd.Path}, cmd.Args[1:]...)
	cmd.Path, cmd.Args = sh, args
	return nil
}

// Peak returns the group's peak memory use (page cache included) in
// bytes, 0 if unknown.
func (g *Group) Peak() int64 {
	for _, f := range []string{"memory.max_usage_in_bytes", "memory.peak"} {
		if b, err := os.ReadFile(filepath.Join(g.dir, f)); err == nil {
			n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			return n
		}
	}
	return 0
}

// Close removes the group (its processes must have exited; it retries for
// a moment while the kernel lets go of them).
func (g *Group) Close() error {
	var err error
	for range 20 {
		if err = os.Remove(g.dir); err == nil || os.IsNotExist(err) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}
