"""Interference generators ("bubbles", after Alioth and Bubble-Up) that slow co-located Spark work.

Each bubble steals one resource at a chosen intensity, runs in its own worker processes, and
is started and stopped around a run as a context manager::

    from sparkpredict.bubbles import Bubble

    with Bubble("cpu", intensity=2):
        run_the_job()

Kinds (``KINDS``) and what one worker does:

``cpu``
    a busy pure-Python loop (one core each).
``memory``
    copies between two large arrays (256 MiB each, beyond the last-level cache), so the
    memory bus is busy; it also occupies a core.
``disk``
    writes blocks to a file and ``fsync``s after each one (the file is capped at 256 MiB and
    rewritten from the start, then deleted); mostly waits on the device.
``network``
    one sender and one receiver pushing 1 MiB chunks over a TCP connection on 127.0.0.1
    (loopback only, nothing leaves the machine); it competes with shuffle traffic between
    executors and costs kernel CPU time.

Intensity 1, 2 or 3 sets the number of workers (``WORKERS``) and, for ``disk``, the block size.
Bubbles are bounded: at most 4 worker processes, and every worker exits by itself after
``max_s`` seconds (default 900, at most 3600) or when the process that started it dies, so a
crashed driver never leaves a bubble behind.
"""
from __future__ import annotations

import contextlib
import logging
import math
import numbers
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

from .errors import InputError

log = logging.getLogger(__name__)

KINDS = ("cpu", "memory", "disk", "network")
#: intensity -> number of worker processes (same for every kind).
WORKERS = {1: 1, 2: 2, 3: 4}
#: disk bubble: intensity -> bytes written between fsyncs.
DISK_BLOCK_BYTES = {1: 1 << 20, 2: 4 << 20, 3: 4 << 20}
DISK_FILE_CAP_BYTES = 256 << 20
MEMORY_ARRAY_BYTES = 256 << 20
NETWORK_CHUNK_BYTES = 1 << 20
MAX_S_LIMIT = 3600.0
_READY = "ready"


class Bubble:
    """Interference of one ``kind`` at ``intensity`` while the context is open.

    Parameters
    ----------
    kind : str
        One of :data:`KINDS`.
    intensity : int
        1 (light), 2 or 3 (heavy); see :data:`WORKERS`.
    max_s : float
        Every worker stops by itself after this many seconds even if :meth:`stop` is never
        called; above 0 and at most :data:`MAX_S_LIMIT` (3600).
    workdir : str or Path, optional
        Folder for the disk bubble's file (default: the system temp folder); it must exist. Put
        it on the same device as ``spark.local.dir`` to compete with shuffle and spill writes.
    cpus : iterable of int, optional
        Pin the workers to these CPUs (``os.sched_setaffinity``); default: wherever the OS puts
        them. A neighbour on its own cores shares memory bandwidth, disk and network with Spark
        but not Spark's cores; a ``cpu`` bubble pinned to Spark's cores time-shares them.
    nice : int
        Niceness of the workers (0..19). A niced neighbour runs on the cycles Spark leaves
        idle, so it contends for its own resource (memory bus, disk, network) rather than for
        Spark's cores.
    rate_bytes : float, optional
        ``network`` only: each worker sends at most this many bytes per second (default: as
        fast as it can). On a rate-limited link a greedy sender fills the queue and Spark's
        small RPC messages wait behind it; a paced neighbour takes a share of the bandwidth.
        Positive and finite.

    Raises
    ------
    InputError
        (a ``ValueError``) for an argument outside its range, naming the allowed values: whole
        numbers must be given as integers (``intensity=2.0`` or ``nice=True`` is refused).
    """

    def __init__(self, kind: str, intensity: int = 1, *, max_s: float = 900.0,
                 workdir: str | os.PathLike[str] | None = None,
                 cpus: Iterable[int] | None = None, nice: int = 0,
                 rate_bytes: float | None = None) -> None:
        if not isinstance(kind, str) or kind not in KINDS:
            raise InputError(f"unknown bubble kind {kind!r}", f"use one of {', '.join(KINDS)}")
        # bool is an int (True == 1) and 2.0 == 2, yet the worker's command line needs "2"
        if not _is_int(intensity) or intensity not in WORKERS:
            raise InputError(f"bubble intensity must be 1, 2 or 3, not {intensity!r}",
                             "pick 1 (light), 2 or 3 (heavy)")
        if not _is_real(max_s) or not 0 < max_s <= MAX_S_LIMIT:
            raise InputError(f"bubble max_s must be a number of seconds in (0, {MAX_S_LIMIT:.0f}], "
                             f"not {max_s!r}", "bubbles are bounded in time; pick a duration above 0 "
                             f"and at most {MAX_S_LIMIT:.0f} s")
        self.kind = kind
        self.intensity = int(intensity)
        self.max_s = float(max_s)
        self.cpus = _check_cpus(cpus)
        if not _is_int(nice) or not 0 <= nice <= 19:
            raise InputError(f"bubble nice must be a whole number in 0..19, not {nice!r}",
                             "pick 0 (default) to 19 (runs only on idle cycles)")
        self.nice = int(nice)
        if rate_bytes is not None and (kind != "network" or not _is_real(rate_bytes)
                                       or not 0 < rate_bytes < math.inf):
            raise InputError(f"rate_bytes={rate_bytes!r} applies to a network bubble and must be a "
                             "positive, finite number of bytes/s",
                             "pass a send rate in bytes/s with kind='network', or leave it out "
                             "(as fast as it can)")
        self.rate_bytes = None if rate_bytes is None else float(rate_bytes)
        if workdir is not None and not isinstance(workdir, (str, os.PathLike)):
            raise InputError(f"bubble workdir must be a folder path, not {workdir!r}",
                             "pass a str or Path, or leave it out (the system temp folder)")
        self.workdir = Path(workdir) if workdir is not None else Path(tempfile.gettempdir())
        if kind == "disk" and not self.workdir.is_dir():
            # checked here, not as a worker that dies at start with a traceback on its stderr
            raise InputError(f"bubble workdir {str(self.workdir)!r} is not a folder",
                             "pass an existing folder (e.g. under spark.local.dir) for the disk "
                             "bubble's file")
        self._procs: list[subprocess.Popen[str]] = []
        self.started_s: float | None = None

    def __repr__(self) -> str:
        return f"Bubble({self.kind!r}, intensity={self.intensity}, workers={len(self._procs)})"

    @property
    def pids(self) -> list[int]:
        """Process ids of the live workers (empty when stopped)."""
        return [p.pid for p in self._procs if p.poll() is None]

    def start(self) -> Bubble:
        """Start the workers and wait until each is generating load."""
        if self._procs:
            return self
        n = WORKERS[self.intensity]
        deadline = time.time() + self.max_s
        for i in range(n):
            cmd = [sys.executable, "-m", "sparkpredict.bubbles", self.kind, str(self.intensity),
                   repr(deadline), str(os.getpid()), str(self.workdir), str(i),
                   ",".join(map(str, self.cpus)) if self.cpus else "", str(self.nice),
                   repr(self.rate_bytes or 0.0)]
            self._procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                                text=True))
        for p in self._procs:
            line = p.stdout.readline().strip() if p.stdout else ""
            if line != _READY:
                # its stdout closed as it died: wait for the exit, else its stderr is not read
                # and the error says nothing about why
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(timeout=5)
                err = p.stderr.read() if p.stderr and p.poll() is not None else ""
                self.stop()
                why = (err.strip().splitlines() or [""])[-1]  # a traceback's last line names it
                raise RuntimeError(f"{self.kind} bubble worker failed to start: "
                                   + " ".join(t for t in (line, why) if t))
        self.started_s = time.monotonic()
        log.info("bubble %s intensity %d started: pids %s", self.kind, self.intensity, self.pids)
        return self

    def stop(self) -> None:
        """Stop every worker (terminate, then kill after 5 s); safe to call twice."""
        for p in self._procs:
            if p.poll() is None:
                p.terminate()
        for p in self._procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            for f in (p.stdout, p.stderr):
                if f:
                    f.close()
        if self._procs:
            log.info("bubble %s stopped", self.kind)
        self._procs = []

    def __enter__(self) -> Bubble:  # noqa: PYI034 (typing.Self needs Python 3.11)
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def _is_int(x: object) -> bool:
    """A whole number given as one (numpy's too), not a bool, a float or a string."""
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def _is_real(x: object) -> bool:
    """A number that is not a bool (``max_s=True`` is a mistake, not one second); NaN included,
    for the range checks to refuse."""
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def _check_cpus(cpus: Iterable[int] | None) -> tuple[int, ...]:
    if cpus is None:
        return ()
    # a string iterates as characters ("12" -> CPUs 1 and 2) and int(0.7) is 0: refuse both
    items = list(cpus) if isinstance(cpus, Iterable) and not isinstance(cpus, (str, bytes)) else None
    if items is None or not all(_is_int(c) for c in items):
        raise InputError(f"bubble cpus must be CPU numbers, not {cpus!r}", "pass e.g. cpus=[1]")
    wanted = tuple(sorted({int(c) for c in items}))
    if not wanted:
        raise InputError("bubble cpus is empty", "pin to at least one CPU (e.g. cpus=[1]), or leave "
                         "cpus out")
    have = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set(range(os.cpu_count() or 1))
    # not checked against this process's own affinity: a benchmark pins itself (and so the
    # JVMs it starts) to Spark's cores and its bubbles to the others
    if not set(wanted) <= set(range(os.cpu_count() or 1)):
        raise InputError(f"bubble cpus {list(wanted)} are not CPUs of this machine "
                         f"(it has {os.cpu_count()})", f"pick among {sorted(have)}")
    return wanted


# ---- workers (run in their own processes: python -m sparkpredict.bubbles ...) ---------------
def _alive(deadline: float, parent: int) -> bool:
    """Keep going until the deadline, and only while the starting process lives."""
    if time.time() >= deadline:
        return False
    try:
        os.kill(parent, 0)
    except OSError:
        return False
    return os.getppid() == parent


def _ready() -> None:
    print(_READY, flush=True)


def _cpu(deadline: float, parent: int) -> None:
    x = 0
    _ready()
    while _alive(deadline, parent):
        for i in range(200_000):  # ~10 ms of pure interpreter work between checks
            x = (x * 31 + i) & 0xFFFFFFFF


def _memory(deadline: float, parent: int) -> None:
    import numpy as np

    n = MEMORY_ARRAY_BYTES // 8
    a = np.ones(n)
    b = a.copy()  # both arrays resident before "ready": the bubble is at full strength from the start
    _ready()
    while _alive(deadline, parent):
        np.copyto(b, a)
        np.copyto(a, b)


def _disk(deadline: float, parent: int, intensity: int, workdir: str, index: int) -> None:
    block = os.urandom(DISK_BLOCK_BYTES[intensity])
    fd, path = tempfile.mkstemp(prefix=f"sparkpredict-bubble-{index}-", dir=workdir)
    _ready()
    try:
        written = 0
        while _alive(deadline, parent):
            if written + len(block) > DISK_FILE_CAP_BYTES:
                os.lseek(fd, 0, os.SEEK_SET)  # bounded disk use: rewrite from the start
                written = 0
            os.write(fd, block)
            os.fsync(fd)
            written += len(block)
    finally:
        os.close(fd)
        os.unlink(path)


def _network(deadline: float, parent: int, rate_bytes: float = 0.0) -> None:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))  # loopback only
    server.listen(1)
    port = server.getsockname()[1]

    def drain() -> None:
        conn, _ = server.accept()
        with conn:
            while conn.recv(NETWORK_CHUNK_BYTES):
                pass

    t = threading.Thread(target=drain, daemon=True)
    t.start()
    # paced: small chunks, so no single send floods a slow link's queue
    chunk = b"\0" * (NETWORK_CHUNK_BYTES if not rate_bytes else 64 << 10)
    with socket.create_connection(("127.0.0.1", port)) as c:
        _ready()
        t0, sent = time.monotonic(), 0
        while _alive(deadline, parent):
            if rate_bytes:
                ahead = sent / rate_bytes - (time.monotonic() - t0)
                if ahead > 0:
                    time.sleep(min(ahead, 0.5))
                    continue
            c.sendall(chunk)
            sent += len(chunk)
    server.close()


def _worker(argv: list[str]) -> int:
    import signal

    kind, intensity, deadline, parent, workdir, index = (
        argv[0], int(argv[1]), float(argv[2]), int(argv[3]), argv[4], int(argv[5]))
    if len(argv) > 6 and argv[6]:
        os.sched_setaffinity(0, {int(c) for c in argv[6].split(",")})
    if len(argv) > 7 and int(argv[7]):
        os.nice(int(argv[7]))
    # SIGTERM -> SystemExit, so the disk worker's finally removes its file.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if kind == "cpu":
        _cpu(deadline, parent)
    elif kind == "memory":
        _memory(deadline, parent)
    elif kind == "disk":
        _disk(deadline, parent, intensity, workdir, index)
    elif kind == "network":
        _network(deadline, parent, float(argv[8]) if len(argv) > 8 else 0.0)
    else:
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(_worker(sys.argv[1:]))
