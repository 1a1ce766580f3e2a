// Package gpmetis runs the METIS command-line partitioner (gpmetis) on a
// partition.Graph, to compare graphmill's partitioners with METIS on the
// same graph. It needs the gpmetis binary (Debian/Ubuntu: apt-get install
// metis); Available reports whether it is on PATH.
package gpmetis

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/graphmill/graphmill/partition"
)

// Binary is the name of the METIS command looked up on PATH.
var Binary = "gpmetis"

// Available reports whether the gpmetis binary is on PATH.
func Available() bool {
	_, err := exec.LookPath(Binary)
	return err == nil
}

// WriteGraph writes g in the METIS graph format: a header "n m [fmt]" and
// one line of 1-based neighbours (each followed by its weight when g has
// edge weights) per node.
func WriteGraph(w io.Writer, g *partition.Graph) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	n := g.NumNodes()
	if g.EdgeWeights != nil {
		fmt.Fprintf(bw, "%d %d 001\n", n, g.NumEdges())
	} else {
		fmt.Fprintf(bw, "%d %d\n", n, g.NumEdges())
	}
	var buf []byte
	for v := 0; v < n; v++ {
		buf = buf[:0]
		for j := g.Xadj[v]; j < g.Xadj[v+1]; j++ {
			if j > g.Xadj[v] {
				buf = append(buf, ' ')
			}
			buf = strconv.AppendInt(buf, int64(g.Adjncy[j])+1, 10)
			if g.EdgeWeights != nil {
				buf = append(buf, ' ')
				buf = strconv.AppendInt(buf, int64(g.EdgeWeights[j]), 10)
			}
		}
		buf = append(buf, '\n')
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// Run is one gpmetis run.
type Run struct {
	// Parts is the part of every node, read from gpmetis's .part file.
	Parts []int32
	// Wall is the wall time of the gpmetis process (reading the graph,
	// partitioning and writing the result).
	Wall time.Duration
	// Reported is the partitioning time gpmetis prints itself (excluding
	// its I/O), or 0 if its output could not be parsed.
	Reported time.Duration
	// CPU is the user+system CPU time of the process, and MaxRSS its peak
	// resident set in bytes (VmHWM polled every 2ms from /proc; 0 where
	// there is no /proc).
	CPU    time.Duration
	MaxRSS int64
	// Output is what gpmetis printed.
	Output string
}

var partTimeRE = regexp.MustCompile(`Partitioning:\s+([0-9.]+) sec`)

// Partition writes g to a temporary METIS file (in dir, or the system's
// temp directory when dir is empty), runs "gpmetis -ufactor=U -seed=S
// file k" with U = round((imbalance-1)*1000), and reads the result.
func Partition(ctx context.Context, g *partition.Graph, k int, imbalance float64, seed int, dir string) (*Run, error) {
	tmp, err := os.MkdirTemp(dir, "gpmetis-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	path := filepath.Join(tmp, "graph.metis")
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := WriteGraph(f, g); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return PartitionFile(ctx, path, g.NumNodes(), k, imbalance, seed)
}

// PartitionFile runs gpmetis on a METIS graph file of n nodes already on
// disk and reads the .part file it writes next to it (then removes it).
func PartitionFile(ctx context.Context, path string, n, k int, imbalance float64, seed int) (*Run, error) {
	ufactor := int((imbalance-1)*1000 + 0.5)
	cmd := exec.CommandContext(ctx, Binary, fmt.Sprintf("-ufactor=%d", ufactor), fmt.Sprintf("-seed=%d", seed), path, strconv.Itoa(k))
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("gpmetis: %w", err)
	}
	// The child's rusage max RSS counts the parent's memory (Linux carries
	// the high-water mark across the vfork+exec), so poll the child's own
	// VmHWM instead; it is monotonic, so the last reading is within one
	// polling interval of the peak.
	var hwm atomic.Int64
	stop := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		path := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
		for {
			if v := readHWM(path); v > 0 {
				hwm.Store(v)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	err := cmd.Wait()
	wall := time.Since(start)
	close(stop)
	<-polled
	out := buf.Bytes()
	if err != nil {
		return nil, fmt.Errorf("gpmetis: %w\n%s", err, out)
	}
	partFile := fmt.Sprintf("%s.part.%d", path, k)
	defer os.Remove(partFile)
	parts, err := ReadParts(partFile, n, k)
	if err != nil {
		return nil, err
	}
	r := &Run{Parts: parts, Wall: wall, Output: string(out)}
	if ps := cmd.ProcessState; ps != nil {
		r.CPU = ps.UserTime() + ps.SystemTime()
	}
	r.MaxRSS = hwm.Load()
	if m := partTimeRE.FindSubmatch(out); m != nil {
		if s, err := strconv.ParseFloat(string(m[1]), 64); err == nil {
			r.Reported = time.Duration(s * float64(time.Second))
		}
	}
	return r, nil
}

// ReadParts reads a METIS .part file: one part id in [0, k) per line, n
// lines.
func ReadParts(path string, n, k int) ([]int32, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	parts := make([]int32, 0, n)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p, err := strconv.Atoi(string(sc.Bytes()))
		if err != nil || p < 0 || p >= k {
			return nil, fmt.Errorf("%s: line %d: bad part id %q", path, len(parts)+1, sc.Text())
		}
		parts = append(parts, int32(p))
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(parts) != n {
		return nil, fmt.Errorf("%s: %d part ids for %d nodes", path, len(parts), n)
	}
	return parts, nil
}

// readHWM returns the VmHWM line of a /proc/PID/status file in bytes.
func readHWM(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	i := bytes.Index(b, []byte("VmHWM:"))
	if i < 0 {
		return 0
	}
	f := bytes.Fields(b[i+6:])
	if len(f) == 0 {
		return 0
	}
	kb, _ := strconv.ParseInt(string(f[0]), 10, 64)
	return kb << 10
}
