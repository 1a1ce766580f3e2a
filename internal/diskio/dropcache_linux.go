package diskio

import "golang.org/x/sys/unix"

// DropCache asks the kernel to drop the file's pages from the page cache
// (POSIX_FADV_DONTNEED; dirty pages are not dropped), so that the next
// reads come from the device: how benchmarks and tests start cold.
func DropCache(path string) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED)
}
