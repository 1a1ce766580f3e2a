"""Shared-memory frames from a sampler service on this machine.

The client creates a file in /dev/shm (mode 0600, a random name), unlinks
it at once, writes 32 random bytes (the token) at its start and asks the
service to open it as /proc/PID/fd/N (EpochRequest.shm_path, shm_token,
shm_size). The service checks the token (and that the file is an unlinked
tmpfs file) and writes each minibatch payload into the file; frames carry
(offset, length). A remote service cannot open the path, or opens another
file whose token differs, and sends in-message frames instead. Since the
name is unlinked before it is ever announced, a killed client or service
leaves nothing in /dev/shm; the memory goes when both have unmapped it.
"""

import mmap
import os
import threading

import numpy as np

SHM_DIR = "/dev/shm"
TOKEN_BYTES = 32


class Segment:
    """A shared file mapped by this process (see the module's doc)."""

    def __init__(self, size):
        size = int(size)
        name = os.path.join(SHM_DIR, f"graphmill-py-{os.urandom(12).hex()}")
        fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.unlink(name)
            os.ftruncate(fd, size)  # sparse: the service reserves what it writes
            self.token = os.urandom(TOKEN_BYTES)
            os.pwrite(fd, self.token, 0)
            self.map = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        self.size = size
        self.path = f"/proc/{os.getpid()}/fd/{fd}"

    @staticmethod
    def create(size):
        """A segment of up to ``size`` bytes (half the free space of
        /dev/shm at most), or None where there is no /dev/shm."""
        try:
            st = os.statvfs(SHM_DIR)
            size = min(int(size), st.f_bavail * st.f_frsize // 2)
            if size < 1 << 20:
                return None
            return Segment(size)
        except OSError:
            return None

    def slot(self, off, n):
        """The payload at [off, off+n) as a uint8 array of its own (its
        views keep it, and so the mapping, alive; when the last is gone the
        space can be released)."""
        if off < 4096 or n <= 0 or off + n > self.size:
            raise ValueError(f"shared-memory payload [{off}, {off + n}) outside a segment of {self.size} bytes")
        return np.frombuffer(self.map, dtype=np.uint8, count=n, offset=off)

    def close_fd(self):
        """Closes the descriptor (the mapping stays while arrays use it)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class Slots:
    """The payloads of a segment this client still uses (offset -> length),
    and the stream their releases go to: one segment serves every epoch of
    a Loader, so a payload kept from an earlier epoch is announced to the
    next stream (EpochRequest.shm_busy) and released on it."""

    def __init__(self):
        self._lock = threading.Lock()
        self._busy = {}
        self._send = None

    def start(self, send):
        """Makes ``send(offset)`` the release path; returns the busy
        (offset, length) pairs, flattened."""
        with self._lock:
            self._send = send
            return [v for off in sorted(self._busy) for v in (off, self._busy[off])]

    def stop(self, send):
        with self._lock:
            if self._send is send:
                self._send = None

    def take(self, off, n):
        with self._lock:
            self._busy[off] = n

    def release(self, off):
        """Called when the payload's last array is gone."""
        with self._lock:
            self._busy.pop(off, None)
            send = self._send
        if send is not None:
            send(off)
