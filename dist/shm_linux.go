package dist

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// shmDir is where segments are created (a tmpfs on Linux).
var shmDir = "/dev/shm"

// hostKey identifies what ranks must share to use one segment: the boot,
// the host name, the user and the IPC and network namespaces (ranks in
// separate network namespaces count as separate hosts, as in separate
// containers). Whether they see the same /dev/shm is checked when they
// open the segment (name and nonce), falling back to TCP if not.
func hostKey() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	host, _ := os.Hostname()
	parts := []string{strings.TrimSpace(string(boot)), host, fmt.Sprint(os.Getuid())}
	for _, ns := range []string{"ipc", "net"} {
		l, err := os.Readlink("/proc/self/ns/" + ns)
		if err != nil {
			return ""
		}
		parts = append(parts, l)
	}
	return strings.Join(parts, "|")
}

// createSegment creates and maps a fresh segment of size bytes; it
// returns the segment and its name (unlinked by the caller once every
// rank has mapped it).
func createSegment(size int) ([]byte, string, error) {
	var r [12]byte
	rand.Read(r[:])
	name := filepath.Join(shmDir, "graphmill-dist-"+hex.EncodeToString(r[:]))
	fd, err := unix.Open(name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, "", fmt.Errorf("creating %s: %w", name, err)
	}
	defer unix.Close(fd)
	if err := unix.Fallocate(fd, 0, 0, int64(size)); err != nil {
		// tmpfs without room fails here rather than with SIGBUS later
		unix.Unlink(name)
		return nil, "", fmt.Errorf("reserving %d bytes in %s: %w", size, shmDir, err)
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Unlink(name)
		return nil, "", fmt.Errorf("mapping %s: %w", name, err)
	}
	return mem, name, nil
}

// openSegment maps the segment another rank created.
func openSegment(name string, size int) ([]byte, error) {
	if filepath.Dir(name) != shmDir || !strings.HasPrefix(filepath.Base(name), "graphmill-dist-") {
		return nil, fmt.Errorf("segment name %q is not ours", name)
	}
	fd, err := unix.Open(name, unix.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Size != int64(size) || st.Uid != uint32(os.Getuid()) {
		return nil, fmt.Errorf("segment %s: size %d, owner %d (want %d, %d)", name, st.Size, st.Uid, size, os.Getuid())
	}
	return unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}

func unmapSegment(mem []byte) error { return unix.Munmap(mem) }

func removeSegment(name string) { unix.Unlink(name) }

const shmSupported = true

// futexWait sleeps while the 32-bit word at addr holds val, at most d.
func futexWait(addr *byte, val uint32, d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), 0 /* FUTEX_WAIT */, uintptr(val), uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// futexWake wakes every sleeper on the word at addr.
func futexWake(addr *byte) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), 1 /* FUTEX_WAKE */, uintptr(1<<31-1), 0, 0, 0)
}

// osYield gives the processor to another runnable thread.
func osYield() { unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }

var spinSink atomic.Uint32

// spinPause is a short busy wait.
func spinPause() {
	for i := 0; i < 30; i++ {
		spinSink.Load()
	}
}
