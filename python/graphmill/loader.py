"""The gRPC client of graphmill's sampler service (proto/graphmill/v1).

``Loader`` streams one epoch of minibatches per iteration. Frames are
received as raw bytes (an identity deserializer); the minibatch payload is
found by walking the frame's protobuf fields and decoded in place, so every
array of a batch is a numpy view of the message gRPC received.
"""

import collections
import concurrent.futures
import hashlib
import hmac
import logging
import operator
import os
import queue
import re
import signal
import subprocess
import threading
import time
import weakref

import grpc
import numpy as np

from . import _cli
from ._shm import Segment, Slots
from ._stream import KIND_BATCH, KIND_HEARTBEAT, AllLost, ProtocolError, Receiver
from .errors import GraphmillError, ServiceError
from .v1 import sampler_pb2 as pb
from .wire import as_buffer, decode_batch, frame_size

_log = logging.getLogger("graphmill")

_STREAM = "/graphmill.v1.Sampler/Stream"
_DEFAULT = None  # features not given
_INFO = "/graphmill.v1.Sampler/Info"
_ROWS = "/graphmill.v1.Sampler/GetRows"

# Frame field numbers (proto/graphmill/v1/sampler.proto).
_F_SENDER, _F_EPOCH, _F_SEQUENCE, _F_KIND, _F_BATCH, _F_COUNT, _F_PAD, _F_MINIBATCH = 1, 2, 3, 4, 5, 6, 14, 15
_F_SHM_OFFSET, _F_SHM_LENGTH, _F_TAIL_ROWS = 7, 8, 9


def _varint(b, pos):
    r = 0
    shift = 0
    while True:
        if pos >= len(b) or shift > 63:
            raise GraphmillError("sampler frame: truncated varint")
        c = b[pos]
        pos += 1
        r |= (c & 0x7F) << shift
        if c < 0x80:
            return r, pos
        shift += 7


def parse_frame(raw):
    """Walks a serialized Frame without copying its payload. Returns a dict
    with sender, epoch, sequence, kind, batch, batch_count and
    payload (offset, length) or None."""
    out = {"sender": 0, "epoch": 0, "sequence": 0, "kind": 0, "batch": 0, "batch_count": 0, "payload": None,
           "shm_offset": 0, "shm_length": 0, "tail_rows": 0}
    names = {_F_SENDER: "sender", _F_EPOCH: "epoch", _F_SEQUENCE: "sequence", _F_KIND: "kind",
             _F_BATCH: "batch", _F_COUNT: "batch_count", _F_SHM_OFFSET: "shm_offset",
             _F_SHM_LENGTH: "shm_length", _F_TAIL_ROWS: "tail_rows"}
    pos = 0
    n = len(raw)
    while pos < n:
        tag, pos = _varint(raw, pos)
        num, typ = tag >> 3, tag & 7
        if typ == 0:
            v, pos = _varint(raw, pos)
            if num in names:
                out[names[num]] = v
        elif typ == 2:
            ln, pos = _varint(raw, pos)
            if ln > n - pos:
                raise GraphmillError("sampler frame: a field runs past the message's end")
            if num == _F_MINIBATCH:
                out["payload"] = (pos, ln)
            pos += ln
        elif typ == 1:
            pos += 8
        elif typ == 5:
            pos += 4
        else:
            raise GraphmillError(f"sampler frame: field {num} has unsupported wire type {typ}")
        if pos > n:
            raise GraphmillError("sampler frame: truncated")
    return out


AUTH_KEY = "graphmill-auth"


def auth_value(secret, method, now_ns=None):
    """The credentials of one call to ``method`` (e.g.
    "/graphmill.v1.Sampler/Stream") under the shared secret, as the Go
    service checks them (dist/samplersvc/auth.go): "v1:<unix ns>:<hex
    nonce>:<hex HMAC-SHA256(secret, "graphmill-sampler-v1|ts|nonce|method")>"."""
    if isinstance(secret, str):
        secret = secret.encode()
    ts = str(time.time_ns() if now_ns is None else now_ns)
    nonce = os.urandom(16).hex()
    mac = hmac.new(secret, f"graphmill-sampler-v1|{ts}|{nonce}|{method}".encode(), hashlib.sha256).hexdigest()
    return f"v1:{ts}:{nonce}:{mac}"


def _secret(token, token_file):
    if token is not None:
        return token.encode() if isinstance(token, str) else token
    path = token_file
    if path:
        with open(path, "rb") as f:
            return f.read().strip()
    env = os.environ.get("GRAPHMILL_DIST_TOKEN")
    return env.encode() if env else None


def _service_error(e, what, timeout=None):
    """A ServiceError for the gRPC error e of a call to the sampler named
    by what ("sampler host:port"), its message prefixed with it."""
    if isinstance(e, grpc.RpcError) and hasattr(e, "code"):
        code = e.code()
        msg = e.details() or str(code)
        if code == grpc.StatusCode.UNAVAILABLE:
            msg = f"sampler unavailable: {msg}"
        elif code == grpc.StatusCode.DEADLINE_EXCEEDED and timeout is not None:
            msg = f"no answer in {timeout:g} s (is a graphmill sampler service listening there?): {msg}"
        return ServiceError(f"{what}: {msg}", code)
    return ServiceError(f"{what}: {e}")


def _uint(v, name, bits=64, lo=0):
    """v as an int in [lo, 2**bits), else a ValueError naming it."""
    try:
        if isinstance(v, (bool, np.bool_)):
            raise TypeError
        i = operator.index(v)
    except TypeError:
        raise ValueError(f"{name} must be an integer, got {v!r}") from None
    if not lo <= i < 1 << bits:
        raise ValueError(f"{name} must be in [{lo}, 2**{bits}), got {i}")
    return i


_M64 = (1 << 64) - 1


def _mix(x):
    """splitmix64's finaliser, as graphmill's internal/rng.Mix."""
    x = (x + 0x9E3779B97F4A7C15) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def train_loader_seed(seed):
    """The loader seed ``graphmill train --seed SEED`` samples with
    (train.LoaderSeed: rng.Derive(seed, 0x5a3)): ``Loader(seed=
    train_loader_seed(S))`` streams exactly the training batches that
    ``graphmill train --seed S`` draws, epoch by epoch."""
    return _mix((int(seed) ^ _mix(0x5A3 + 0x632BE59BD9B4E019)) & _M64)


def _row_selector(feats):
    """Returns select(ids, out) copying feats[ids] into out: with PyTorch's
    index_select when torch is importable (about 2.5x numpy's take on these
    machines; both release the GIL), else numpy's take."""
    try:
        import warnings

        import torch
    except ImportError:
        return lambda ids, out: np.take(feats, ids, axis=0, out=out)
    src = feats.view(np.int16) if feats.dtype == np.uint16 else feats
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # read-only map: only read here
        t = torch.from_numpy(src)

    def select(ids, out):
        o = out.view(np.int16) if out.dtype == np.uint16 else out
        torch.index_select(t, 0, torch.from_numpy(ids), out=torch.from_numpy(o))

    return select


class SamplerServer:
    """A local ``graphmill serve sampler`` started by the client and stopped
    by ``close()``."""

    def __init__(self, dataset, binary=None, listen="127.0.0.1:0", args=(), timeout=60, secret=None):
        exe = _cli.find_binary(binary)
        # --stop-at-eof: the service stops when this process's end of its
        # stdin closes, however this process ends (kill -9 included); a
        # new session keeps the terminal's Ctrl-C for this process alone.
        self.cmd = [exe, "serve", "sampler", "--dataset", os.fspath(dataset), "--listen", listen, "--stop-at-eof", *args]
        env = None
        if secret is not None:
            env = dict(os.environ, GRAPHMILL_DIST_TOKEN=secret.decode() if isinstance(secret, bytes) else secret)
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, start_new_session=True, env=env)
        self.lines = []
        self.addr = None
        found = threading.Event()

        def pump():
            for line in self.proc.stdout:
                self.lines.append(line.rstrip("\n"))
                del self.lines[:-200]
                if self.addr is None:
                    m = re.search(r"(?:listening|serving)\S*\s+(?:on\s+)?(\S+:\d+)", line, re.I)
                    if m:
                        self.addr = m.group(1)
                        found.set()
            found.set()

        self._pump = threading.Thread(target=pump, name="graphmill-serve-output", daemon=True)
        self._pump.start()
        deadline = time.monotonic() + timeout
        while not found.wait(0.05):
            if time.monotonic() > deadline:
                self.close()
                raise GraphmillError(f"{' '.join(self.cmd)}: printed no listening address in {timeout} s")
        if self.addr is None:
            code = self.proc.wait()
            raise GraphmillError(f"graphmill serve sampler exited with status {code}: {self.tail()}")

    def tail(self, n=5):
        return " | ".join(self.lines[-n:]) or "(no output)"

    def close(self):
        p = self.proc
        if p is None:
            return
        self.proc = None
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if p.stdin:
            p.stdin.close()
        if p.stdout:
            self._pump.join(2)
            p.stdout.close()


class Loader:
    """An iterable of minibatches from a graphmill sampler service.

    ``Loader("host:port", ...)`` connects to a running ``graphmill serve
    sampler``; ``Loader(dataset=dir, ...)`` starts a local one (the
    ``graphmill`` program on PATH, or ``binary``) and stops it on
    ``close()`` (or at the end of a ``with`` block).

    Each ``for`` loop over the loader is one epoch (``epoch`` is the first;
    it then counts up, or set it with ``set_epoch``). One at a time: a second
    ``for`` while one is open (``zip(loader, loader)``) raises a
    GraphmillError (they would share the shared-memory segment). Batches are
    ``graphmill.wire.MiniBatch`` values whose arrays are numpy views of the
    received message (no copy); ``batch.torch()`` shares that memory with
    PyTorch. With ``device="cuda"`` (or a ``torch.device``) the loader
    yields ``graphmill.torch.TorchBatch`` values already on the device:
    frames are staged through pinned buffers and copied on a side stream
    while the previous batch is in use. With ``feature_cache`` (a
    ``graphmill.torch.FeatureCache``) ``x`` is assembled on the cache's
    device from the cached rows and the misses, read from the cache's
    dataset on the host (frames come without rows), or, with
    ``features=True``, taken from the rows the frame carries; only the
    misses cross to the device (``batch.cache_stats`` tells the hits and
    bytes moved).

    ``frontier=True`` draws each hop only for the nodes first reached at the
    hop before, as PyG's NeighborLoader (``graphmill.NeighborLoader`` sets
    it); ``replace=True`` draws with replacement. With frontier draws,
    ``edge_index=True`` has the service send each batch's edges in PyG's
    layout as well (``batch.edge_index``, int64 [2, E]), and
    ``input_labels=True`` every input node's label (``batch.input_labels``,
    int64; ``labels`` gives the seeds' only): what PyG's batches hold,
    built by the service instead of here. ``edge_ids=True`` has every block
    carry its edges' ids (``block.edge_ids``, int64): the dataset's edge ids
    where it stores them, else the edges' positions in its CSC arrays.

    ``normalize_features=True`` has the service row-normalise the rows it
    sends (PyG's NormalizeFeatures; graphmill train's default).

    ``features``: True (the default) has the service send the input nodes'
    feature rows inside each frame (``x`` is then a view of the message);
    False sends none; ``"local"`` sends none and gathers ``x`` in this
    process from the dataset's memory map (``dataset=``, or
    ``local_dataset=`` with an address) on ``local_workers`` threads, ahead
    of the consumer: on one machine this avoids moving
    every row through gRPC, which costs more than the gather (see the
    README's benchmark).

    ``shm=True`` (the default) asks a service on this machine to write the
    payloads into a shared-memory file this loader maps (``shm_bytes``
    bytes, sparse; one for all epochs): frames then carry only where each
    payload lies, and a batch's space is handed back when its last array
    is dropped. A service elsewhere (or one that cannot map it) sends the
    payloads in its messages; ``transport`` tells which happened.

    On a packed dataset (``graphmill data pack``) ``n_id`` holds the
    original dataset's ids, as ``graphmill.NeighborLoader`` gives, and the
    batches are the original dataset's (the service keys its draws by
    original id): the loader maps them with the dataset's ``orig_ids``,
    read from ``dataset=`` or ``local_dataset=`` (a loader given only an
    address needs one of them). ``ids="packed"`` gives the packed copy's
    own ids instead.

    Errors of the service are raised as ``graphmill.ServiceError`` with the
    Go side's message.

    Authentication is the service's: with a shared secret (``token``,
    ``token_file``, else ``$GRAPHMILL_DIST_TOKEN``) every call carries its
    HMAC (``auth_value``); ``channel_credentials`` (e.g.
    ``grpc.ssl_channel_credentials(ca, key, cert)``) makes the channel TLS.
    """

    def __init__(self, addr=None, *, dataset=None, split="train", fanouts=(25, 10), batch_size=1024,
                 shuffle=True, seed=0, epoch=0, drop_last=False, features=None, labels=True, device=None,
                 feature_cache=None, credits=4, shard=0, num_shards=1, binary=None, timeout=60.0,
                 check=True, server_args=(), local_dataset=None, normalize_features=False,
                 token=None, token_file=None, channel_credentials=None, local_workers=2, shm=True,
                 shm_bytes=1 << 30, frontier=False, replace=False, ids="original", edge_index=False,
                 input_labels=False, edge_ids=False):
        if addr is None and dataset is None:
            raise ValueError("Loader needs a sampler address or dataset= (a local sampler is started for it)")
        batch_size = _uint(batch_size, "batch_size", 32, lo=1)
        credits = _uint(credits, "credits", 32, lo=1)
        seed, epoch = _uint(seed, "seed"), _uint(epoch, "epoch")
        num_shards = _uint(num_shards, "num_shards", 32, lo=1)
        shard = _uint(shard, "shard", 32)
        if shard >= num_shards:
            raise ValueError(f"shard must be in [0, num_shards={num_shards}), got {shard}")
        if ids not in ("original", "packed"):
            raise ValueError(f'ids must be "original" or "packed", got {ids!r}')
        self._iterating = threading.Lock()  # held by the open iteration (one at a time: raw_frames)
        self.split = split
        self.fanouts = [int(f) for f in fanouts]
        self.batch_size = int(batch_size)
        self.shuffle = bool(shuffle)
        self.seed = int(seed)
        self.epoch = int(epoch)
        self.drop_last = bool(drop_last)
        self.frontier, self.replace = bool(frontier), bool(replace)
        if edge_index and not frontier:
            raise ValueError("edge_index=True (PyG's layout) needs frontier=True")
        self.edge_index, self.input_labels, self.edge_ids = bool(edge_index), bool(input_labels), bool(edge_ids)
        features_given = features is not _DEFAULT
        if features is _DEFAULT:
            features = True
        if features not in (True, False, "local"):
            raise ValueError(f'features must be True, False or "local", got {features!r}')
        self._local = None
        self._executor = None
        self.local_workers = max(1, int(local_workers))
        if features == "local" and feature_cache is None:
            from .dataset import Dataset, open_dataset

            src = local_dataset if local_dataset is not None else dataset
            if src is None:
                raise ValueError('features="local" needs the dataset: dataset= or local_dataset=')
            self._local = src if isinstance(src, Dataset) else open_dataset(src, binary=binary)
            if self._local.features is None:
                raise GraphmillError(f"{self._local.dir}: the dataset has no features")
        # With a feature cache the service sends only the rows the cache
        # misses when the cache has no local dataset (filled from the
        # service) or when asked explicitly (features=True); otherwise the
        # misses are read from the cache's dataset on the host.
        self._misses_from_service = feature_cache is not None and (
            getattr(feature_cache, "dataset", None) is None or (features_given and features is True))
        self.features = (features is True and feature_cache is None) or self._misses_from_service
        self._cached = None
        if self._misses_from_service:
            bits = np.zeros(feature_cache.num_nodes, dtype=bool)
            bits[np.asarray(feature_cache.cached_ids, dtype=np.int64)] = True
            self._cached = np.packbits(bits, bitorder="little").tobytes()
        self.shm = bool(shm) and os.path.isdir("/dev/shm") and os.path.isdir("/proc/self/fd")
        self.shm_bytes = int(shm_bytes)
        self.transport = None  # "shm" or "grpc": how the last epoch's payloads came
        self.bytes_received = 0  # payload bytes received (frames or shared memory)
        self.labels = bool(labels)
        self.normalize_features = bool(normalize_features)
        self.credits = int(credits)
        self.shard, self.num_shards = int(shard), int(num_shards)
        self.timeout = float(timeout)
        self.check = check
        self.feature_cache = feature_cache
        self._secret = _secret(token, token_file)
        self.device = device
        self._stager = None
        self.server = None
        self._channels = []
        self._active = None
        self.heartbeats = 0  # heartbeat frames received (the sampler was idle)
        if addr is None:
            self.server = SamplerServer(dataset, binary=binary, args=server_args, timeout=timeout, secret=self._secret)
            # Stopped when the loader is collected, or at exit while threads
            # still run (a __del__ at interpreter shutdown is too late).
            weakref.finalize(self, self.server.close)
            addr = self.server.addr
        addrs = [a.strip() for a in (addr.split(",") if isinstance(addr, str) else addr) if a.strip()]
        if not addrs:
            raise ValueError("Loader needs a sampler address")
        self.addrs = addrs
        self.addr = addrs[0]
        self._alive = [True] * len(addrs)  # samplers not lost (later epochs skip the lost)
        self._segs = [None] * len(addrs)  # each sampler's shared segment (made on first use)
        self._slotss = [Slots() for _ in addrs]
        self.failovers = 0  # samplers lost mid-epoch whose batches went to the others
        self.lost = []  # the lost samplers' addresses
        try:
            # Frames of tens of MiB: no size limit, and HTTP/2 frames of up to
            # 16 MiB (27 MiB minibatches arrived at 8.5/s with the default
            # 16 KiB and 11-14/s with this, on a busy 2-core machine).
            opts = [("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1),
                    ("grpc.http2.max_frame_size", 16 << 20)]
            self._channels, self._stream_rpcs = [], []
            for i, a in enumerate(addrs):
                if channel_credentials is not None:
                    ch = grpc.secure_channel(a, channel_credentials, options=opts)
                else:
                    ch = grpc.insecure_channel(a, options=opts)
                self._channels.append(ch)
                self._stream_rpcs.append(ch.stream_stream(_STREAM, request_serializer=pb.ClientMessage.SerializeToString,
                                                          response_deserializer=None))
                info_rpc = ch.unary_unary(_INFO, request_serializer=pb.InfoRequest.SerializeToString,
                                          response_deserializer=pb.InfoReply.FromString)
                try:
                    info = info_rpc(pb.InfoRequest(), timeout=timeout, wait_for_ready=True, metadata=self._auth(_INFO))
                except grpc.RpcError as e:
                    err = _service_error(e, f"sampler {a}", timeout)
                    if self.server is not None:
                        err = ServiceError(f"{err} (server output: {self.server.tail()})", err.code)
                    raise err from None
                if i == 0:
                    self.info = info
                elif (info.num_nodes, info.num_edges, info.fingerprint) != (self.info.num_nodes, self.info.num_edges, self.info.fingerprint):
                    raise GraphmillError(f"sampler {a} serves {info.name!r} ({info.num_nodes} nodes, {info.num_edges} edges), "
                                         f"sampler {addrs[0]} {self.info.name!r} ({self.info.num_nodes} nodes, {self.info.num_edges} edges): "
                                         "give every sampler the same dataset")
            self._rows_rpc = self._channels[0].unary_unary(_ROWS, request_serializer=pb.RowsRequest.SerializeToString,
                                                       response_deserializer=pb.RowsReply.FromString)
            if self._local is not None and (self._local.num_nodes, self._local.num_edges) != (self.info.num_nodes, self.info.num_edges):
                raise GraphmillError(f"local dataset {self._local.dir} has {self._local.num_nodes} nodes and {self._local.num_edges} edges; "
                                     f"sampler {addr} serves {self.info.num_nodes} and {self.info.num_edges}")
            self._orig = None  # a packed dataset's original ids, when n_id is mapped
            if self.info.packed and ids == "original":
                self._orig = self._orig_ids(dataset, local_dataset, binary)
            if split not in self.info.split_sizes:
                raise GraphmillError(f"sampler {addr} serves {self.info.name!r}, which has no {split!r} split "
                                     f"(splits: {', '.join(sorted(self.info.split_sizes)) or 'none'})")
            if device is not None:
                from ._tensors import DeviceStager
                import torch

                dev = torch.device(device)
                if dev.type != "cpu":
                    self._stager = DeviceStager(dev)
        except BaseException:
            self.close()
            raise

    def _orig_ids(self, dataset, local_dataset, binary):
        """The original ids of the packed dataset this loader's sampler
        serves (int64), from the dataset given to the loader."""
        from .dataset import Dataset, open_dataset

        src = self._local if self._local is not None else local_dataset if local_dataset is not None else dataset
        if src is None:
            raise GraphmillError(f"sampler {self.addr} serves {self.info.name!r}, a packed dataset ('graphmill data pack'): "
                                 "give local_dataset= (its directory) so that n_id holds the original ids, "
                                 'or ids="packed" for the packed copy\'s own ids')
        d = src if isinstance(src, Dataset) else open_dataset(src, binary=binary)
        if d.orig_ids is None or d.num_nodes != self.info.num_nodes:
            raise GraphmillError(f"{d.dir} is not the packed dataset sampler {self.addr} serves "
                                 f"({self.info.name!r}, {self.info.num_nodes} nodes): it has "
                                 f"{'no orig_ids' if d.orig_ids is None else f'{d.num_nodes} nodes'}")
        return np.asarray(d.orig_ids, dtype=np.int64)

    def _with_server_state(self, err):
        """Adds what happened to the sampler this loader started, if it
        exited (its exit status and last output lines)."""
        srv = self.server
        if srv is not None and srv.proc is not None:
            try:
                code = srv.proc.wait(0.5)
            except subprocess.TimeoutExpired:
                return err
            return ServiceError(f"{err} (the local sampler exited with status {code}: {srv.tail()})", err.code)
        return err

    def _auth(self, method):
        if self._secret is None:
            return None
        return ((AUTH_KEY, auth_value(self._secret, method)),)

    # -- sizes ---------------------------------------------------------------

    @property
    def num_nodes(self):
        return int(self.info.num_nodes)

    def __len__(self):
        """Batches per epoch (this shard's)."""
        n = int(self.info.split_sizes[self.split])
        g = self.batch_size * self.num_shards
        return n // g if self.drop_last else -(-n // g)

    def set_epoch(self, epoch):
        """Sets the epoch the next iteration streams."""
        self.epoch = _uint(epoch, "epoch")

    # -- streaming -----------------------------------------------------------

    def get_rows(self, ids, chunk_bytes=64 << 20):
        """The feature rows of nodes ``ids`` from the service (float32,
        row-normalised as the loader's frames are): GetRows calls of about
        ``chunk_bytes`` each."""
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        dim = int(self.info.feature_dim)
        chunk = max(1, min(1_000_000, chunk_bytes // max(4 * dim, 1)))
        out = np.empty((len(ids), dim), dtype=np.float32)
        for lo in range(0, len(ids), chunk):
            part = ids[lo:lo + chunk]
            try:
                r = self._rows_rpc(pb.RowsRequest(ids=part.tolist(), normalize_features=self.normalize_features),
                                   timeout=self.timeout, metadata=self._auth(_ROWS))
            except grpc.RpcError as e:
                raise _service_error(e, f"sampler {self.addr}") from None
            if r.dim != dim or len(r.rows) != 4 * dim * len(part):
                raise ServiceError(f"sampler {self.addr}: GetRows sent {len(r.rows)} bytes of dimension {r.dim} for {len(part)} rows of {dim}")
            out[lo:lo + len(part)] = np.frombuffer(r.rows, dtype="<f4").reshape(len(part), dim)
        return out

    def _segment(self, i):
        """Sampler i's shared segment (each sampler allocates in its own)."""
        if self._segs[i] is None and self.shm:
            self._segs[i] = Segment.create(self.shm_bytes)
            self.shm = self._segs[i] is not None
        return self._segs[i]

    def _requests(self, out_q, batches, sender, epoch, seg, busy):
        req = pb.EpochRequest(split=self.split, fanouts=self.fanouts, batch_size=self.batch_size, epoch=epoch,
                              seed=self.seed, shuffle=self.shuffle, drop_last=self.drop_last,
                              with_features=self.features, with_labels=self.labels, shard=self.shard,
                              num_shards=self.num_shards, batches=batches, sender=sender,
                              initial_credits=self.credits, fingerprint=0,
                              normalize_features=self.normalize_features, cached=self._cached or b"",
                              rows_after_frame=self.features, frontier=self.frontier, replace=self.replace,
                              edge_index=self.edge_index, input_labels=self.input_labels, edge_ids=self.edge_ids)
        if seg is not None:
            req.shm_path, req.shm_token, req.shm_size = seg.path, seg.token, seg.size
            req.shm_busy.extend(busy)
        yield pb.ClientMessage(start=req)
        while True:
            m = out_q.get()
            if m is None:
                return
            yield m

    def raw_frames(self):
        """Streams one epoch as (frame dict, raw bytes) pairs: BATCH frames
        only, in index order, credits granted as they are taken. With
        several samplers the epoch's batches are dealt to them; a sampler
        that fails, breaks the protocol or is silent past ``timeout`` is
        lost, said on the ``graphmill`` logger with where its batches went,
        and its unsent batches go to the others (``failovers``,
        ``stats()``); the epoch fails only when every sampler is lost. The
        protocol is ``graphmill._stream.Receiver`` (Go's dist/stream).

        One iteration at a time: a second one started while another is
        open (``zip(loader, loader)``) is refused with a GraphmillError,
        since both would share the loader's shared-memory segment."""
        if not self._channels:
            raise GraphmillError("the loader is closed")
        # One generator, not one delegating to another (yield from): with
        # the delegation, the epoch after one left early ran at half speed
        # (bench python --quick's second round: 68-76 batches/s, not 150).
        if not self._iterating.acquire(blocking=False):
            raise GraphmillError("this loader is already iterating; finish or close that iteration first, "
                                 "or make a second loader")
        nb = len(self)
        epoch = self.epoch
        self.epoch += 1
        live = [i for i, ok in enumerate(self._alive) if ok]
        if nb == 0 or not live:
            self._iterating.release()
            if nb == 0:
                return
            raise ServiceError(f"every sampler service was lost ({', '.join(self.lost)})")
        recv = Receiver(epoch, nb, len(live), self.credits, self.timeout, time.monotonic())
        shares = recv.starts()
        in_q = queue.Queue()
        done = threading.Event()
        streams = [None] * len(live)  # per sender: (call, out_q, reader, slots, release, segment)

        def name(s):
            return f"sampler {live[s]} ({self.addrs[live[s]]})"

        def reader(s, call):
            try:
                for raw in call:
                    in_q.put((s, raw))
                    if done.is_set():
                        break
                in_q.put((s, StopIteration))
            except BaseException as e:  # grpc.RpcError, or cancelled
                in_q.put((s, e))

        def lose(s, cause):
            """Gives up sender s; raises when its error is the request's
            fault or no sampler is left."""
            if not recv.alive(s):
                return
            err = cause if isinstance(cause, ServiceError) else ServiceError(f"sampler {self.addrs[live[s]]}: {cause}")
            if getattr(err, "code", None) in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.UNAUTHENTICATED,
                                              grpc.StatusCode.PERMISSION_DENIED):
                raise err  # another sampler would refuse it too
            if streams[s] is not None:
                streams[s][0].cancel()
            try:
                moved = recv.lost(s, err)
            except AllLost:
                if len(live) == 1:
                    raise self._with_server_state(err) from None
                raise ServiceError(f"every sampler service was lost in epoch {epoch}: "
                                   + "; ".join(str(x.cause) for x in recv.senders), getattr(err, "code", None)) from None
            self._alive[live[s]] = False
            self.lost.append(self.addrs[live[s]])
            self.failovers += 1
            _log.warning("%s lost: %s; its unsent batches go to the others", name(s), err)
            for q, bs in sorted(moved.items()):
                more = f" and {len(bs) - 6} more" if len(bs) > 6 else ""
                _log.warning("%d batches of epoch %d (batches %s%s) reassigned to %s", len(bs), epoch,
                             ",".join(map(str, bs[:6])), more, name(q))

        def flush():
            for q, kind, v in recv.outbox():
                if streams[q] is None or not recv.alive(q):
                    continue
                if kind == "credit":
                    streams[q][1].put(pb.ClientMessage(credit=pb.Credit(frames=v)))
                else:
                    streams[q][1].put(pb.ClientMessage(assign=pb.Assign(epoch=epoch, batches=v)))

        got = 0
        try:
            for s, i in enumerate(live):
                if not shares[s]:  # more samplers than batches: this one sits the epoch out
                    recv.lost(s, "no batches to prepare")
                    continue
                seg = self._segment(i)
                out_q = queue.Queue()
                slots = self._slotss[i]

                def release(off, out_q=out_q):
                    out_q.put(pb.ClientMessage(release=pb.Release(offsets=[off])))

                busy = slots.start(release) if seg is not None else []
                call = self._stream_rpcs[i](self._requests(out_q, shares[s], s, epoch, seg, busy), wait_for_ready=True,
                                            metadata=self._auth(_STREAM))
                t = threading.Thread(target=reader, args=(s, call), name="graphmill-loader-stream", daemon=True)
                streams[s] = (call, out_q, t, slots, release, seg)
                t.start()
            self._active = [st[0] for st in streams if st is not None]
            while got < nb:
                flush()
                nxt = recv.take()
                if nxt is not None:
                    # Its credit goes back once the consumer returns (the
                    # loop's flush), not before: the service then never has
                    # more payloads out than the credits allow.
                    _, (f, buf) = nxt
                    got += 1
                    yield f, buf
                    del buf
                    continue
                try:
                    s, item = in_q.get(timeout=min(1.0, self.timeout))
                except queue.Empty:
                    s, item = -1, None
                now = time.monotonic()
                if item is StopIteration:
                    if recv.owes(s):
                        lose(s, f"stream ended after {recv.senders[s].batches} of its batches of epoch {epoch} without an END frame")
                    else:
                        recv.lost(s, "its stream ended after its share")  # nothing to move: not a failover
                elif isinstance(item, BaseException):
                    lose(s, _service_error(item, f"sampler {self.addrs[live[s]]}"))
                elif item is not None and recv.alive(s):
                    try:
                        f, buf = self._frame(item, streams[s])
                        recv.frame(s, f, (f, buf), now)
                    except (ProtocolError, GraphmillError) as e:
                        lose(s, ServiceError(f"sampler {self.addrs[live[s]]}: {e}"))
                    del buf
                for q in recv.silent(now):
                    lose(q, f"no frame (not even a heartbeat) for {self.timeout:.0f} s in epoch {epoch} "
                            f"after {recv.senders[q].batches} of its batches")
        finally:
            done.set()
            for st in streams:
                if st is None:
                    continue
                call, out_q = st[0], st[1]
                out_q.put(None)  # close our side: the server ends the stream
                if got != nb:  # left early or failed: stop the server's work now
                    call.cancel()
            for st in streams:
                if st is not None:
                    st[2].join(5)
                    st[3].stop(st[4])
            self._active = None
            self._iterating.release()

    def _frame(self, raw, stream):
        """Parses one frame; a BATCH frame's payload is resolved (in the
        sender's shared segment, or the message)."""
        f = parse_frame(raw)
        buf = raw
        if f["kind"] == KIND_HEARTBEAT:
            self.heartbeats += 1
        if f["kind"] != KIND_BATCH:
            return f, buf
        if f["shm_length"]:
            seg = stream[5]
            if seg is None:
                raise GraphmillError("a shared-memory frame on a stream without shared memory")
            off, n = f["shm_offset"], f["shm_length"]
            try:
                buf = seg.slot(off, n)
            except ValueError as e:
                raise GraphmillError(str(e)) from None
            # The space goes back to the service when the batch's last
            # array is dropped.
            stream[3].take(off, n)
            weakref.finalize(buf, stream[3].release, off)
            f["payload"] = (0, n)
            self.transport = "shm"
        elif f["payload"] is None:
            raise GraphmillError(f"batch frame {f['batch']} has no minibatch")
        else:
            self.transport = "grpc"
        self.bytes_received += f["payload"][1]
        return f, buf

    def _decoded(self):
        dim = int(self.info.feature_dim)
        for f, buf in self.raw_frames():
            off, n = f["payload"]
            # Feature rows come after the batch frame (the service gathers
            # them straight into the payload): every input node's, or with a
            # cache the misses'.
            miss = f["tail_rows"]
            size = n
            if miss:
                mem = as_buffer(buf, writable=True)
                size = frame_size(mem[off:off + 16].tobytes())
                if size + 4 * dim * miss != n:
                    raise ServiceError(f"sampler {self.addr}: payload of {n} bytes: a frame of {size} and {miss} rows of {dim} floats do not add up")
            mb = decode_batch(buf, off, size, writable=True, check=self.check, num_nodes=self.num_nodes)
            if miss:
                rows = mem[off + size:off + n].view("<f4").reshape(miss, dim)
                if self._cached is not None:
                    mb.miss_rows = rows
                elif mb.x is None and miss == len(mb.n_id):
                    mb.x, mb.feature_dtype = rows, "float32"
                    mb.nbytes = n  # the batch spans the rows too (DeviceStager copies it whole)
                else:
                    raise ServiceError(f"sampler {self.addr}: {miss} feature rows after a frame of {len(mb.n_id)} input nodes")
            mb.index = f["batch"]
            buf = mem = None  # only mb's arrays keep the payload alive
            yield mb

    def _batches(self):
        if self._local is None:
            yield from self._decoded()
            return
        # features="local": gather each batch's rows on a small thread pool
        # (numpy's take releases the GIL), up to local_workers batches ahead
        # of the consumer, so gathering overlaps receiving and the step.
        d = self._local
        feats = d.features
        select = _row_selector(feats)

        def gather(mb):
            ids = mb.n_id
            out = np.empty((len(ids), feats.shape[1]), dtype=feats.dtype)
            select(ids, out)
            return out

        pool = self._pool()
        pending = collections.deque()
        try:
            for mb in self._decoded():
                pending.append((mb, pool.submit(gather, mb)))
                if len(pending) > self.local_workers:
                    yield self._gathered(*pending.popleft(), d)
            while pending:
                yield self._gathered(*pending.popleft(), d)
        finally:
            for _, fut in pending:
                fut.cancel()

    @staticmethod
    def _gathered(mb, fut, d):
        mb.x = fut.result()
        mb.feature_dtype = d.feature_dtype
        return mb

    def _pool(self):
        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(self.local_workers, thread_name_prefix="graphmill-gather")
        return self._executor

    def __iter__(self):
        if self._stager is None and self.feature_cache is None:
            for mb in self._batches():
                self._to_original(mb)
                yield mb if self.device is None else mb.torch()
            return
        yield from self._device_batches()

    def _to_original(self, mb):
        """Writes the original ids over a packed dataset's n_id (in place:
        the frame is this loader's) and returns the packed ones (a copy),
        or None when ids are not mapped."""
        if self._orig is None:
            return None
        packed = mb.n_id.copy()
        np.take(self._orig, packed, out=mb.n_id)
        return packed

    def _device_batches(self):
        from ._tensors import to_torch

        cache = self.feature_cache
        st = self._stager
        pending = None
        for mb in self._batches():
            packed = self._to_original(mb)  # the cache is keyed by the dataset's own ids
            tb = st.stage(mb) if st is not None else to_torch(mb)
            if pending is not None:
                yield self._finish(*pending, cache)
            pending = tb, mb.miss_rows, packed
        if pending is not None:
            yield self._finish(*pending, cache)

    def _finish(self, tb, miss_rows, packed, cache):
        if self._stager is not None:
            self._stager.wait(tb)
        if cache is not None:
            if miss_rows is not None or (self._misses_from_service and tb.x is None):
                # only the misses came (maybe none at all); a service that
                # ignores the cached set sends every row (the else branch)
                if miss_rows is None:
                    miss_rows = np.empty((0, cache.dim), dtype=np.float32)
                tb.x = cache.gather(tb.n_id if packed is None else packed, miss_rows=miss_rows)
            else:
                tb.x = cache.gather(tb.n_id if packed is None else packed, host_rows=tb.x)
            tb.feature_dtype = cache.feature_dtype
            tb.cache_stats = cache.last
        return tb

    def stats(self):
        """What the loader did so far: the transport of the last epoch
        ("shm" or "grpc"), payload bytes received, heartbeats, and the
        samplers lost mid-epoch (``failovers``; their addresses in
        ``lost``) whose batches went to the others."""
        return {"transport": self.transport, "bytes_received": self.bytes_received, "heartbeats": self.heartbeats,
                "failovers": self.failovers, "lost": list(self.lost), "samplers": list(self.addrs)}

    def close(self):
        """Ends any stream, closes the channel and stops the local sampler
        this loader started."""
        for call in self._active or ():
            call.cancel()
        self._active = None
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
        for ch in self._channels:
            ch.close()
        self._channels = []
        for i, seg in enumerate(getattr(self, "_segs", ())):
            if seg is not None:
                seg.close_fd()  # the mapping stays while arrays use it
                self._segs[i] = None
        if self.server is not None:
            self.server.close()
            self.server = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        return (f"Loader({','.join(self.addrs)}, {self.info.name!r} split={self.split}, fanouts={self.fanouts}, "
                f"batch_size={self.batch_size}, batches={len(self)})")


def presample_counts(loader, batches=16):
    """Counts how often every node appears as an input node in the first
    ``batches`` batches of an epoch of ``loader`` (for
    ``FeatureCache(policy="presample", counts=...)``)."""
    counts = np.zeros(loader.num_nodes, np.int64)
    for i, b in enumerate(loader):
        n_id = b.n_id if isinstance(b.n_id, np.ndarray) else b.n_id.cpu().numpy()
        counts += np.bincount(n_id, minlength=loader.num_nodes)
        if i + 1 >= batches:
            break
    orig = getattr(loader, "_orig", None)
    if orig is not None:
        # n_id held original ids; the cache is keyed by the dataset's own.
        counts = counts[orig]
    return counts
