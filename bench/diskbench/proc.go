package diskbench

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/graphmill/graphmill/internal/diskio"
)

// procReadBytes is the bytes the kernel counts process pid as having read
// from storage (/proc/PID/io read_bytes), 0 if unknown.
func procReadBytes(pid int) int64 {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "io"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "read_bytes:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// dropCache drops the dataset's files from the page cache.
func dropCache(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.npy"))
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := diskio.DropCache(f); err != nil {
			return err
		}
	}
	return nil
}
