// Package diskio reads blocks of a large file with explicit, batched reads,
// many in flight, optionally with O_DIRECT into the caller's own buffers
// (AlignedBuf). graphmill uses it to gather feature rows from .npy files
// larger than memory.
//
// Two backends serve a Reader: io_uring (Linux) submits a whole batch to
// one ring and reaps completions with one system call per wake-up; pread
// runs Depth goroutines each issuing one blocking pread at a time, and
// works everywhere (os.File.ReadAt off Linux).
//
// The io_uring code is written here directly on golang.org/x/sys/unix
// system calls (io_uring_setup, mmap of the rings, io_uring_enter) because
// no maintained pure-Go io_uring library is reachable through the module
// proxy this project builds from, and cgo (liburing) is ruled out by the
// CGO_ENABLED=0 release builds. It is worth having: on the development
// machine (kernel 6.18, virtio disk) fio measured about 65k random 4 KiB
// reads/s with io_uring at queue depth 64, against 53k for 16 psync threads
// and 32-52k for goroutines doing pread at 0.7 cores of CPU; sequential
// O_DIRECT reads reach about 840 MB/s. See RandomReadRate and
// SequentialRate to measure a given file.
package diskio
