"""Planning a sweep: which runs (size x executors x repeat, each with its master URL), checked
before anything is generated or started: an unknown workload, a size below the generator's
minimum, a master URL Spark cannot parse, more executors than this machine can start.

:mod:`sparkpredict.sweep` runs the plan (and re-exports what is here).
"""
from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from . import workloads as W
from .config import LOCAL_CLUSTER_MASTER, LOCAL_MASTER
from .errors import InputError, WorkloadError
from .units import parse_bytes

DEFAULT_MASTER = "local-cluster[{executors},{cores},{memory_mb}]"
#: Executor JVMs per physical core that a local sweep may start (they mostly wait on each other).
OVERSUBSCRIBE = 4
#: Memory an executor JVM takes beyond its heap (metaspace, threads, off-heap buffers), MiB.
JVM_OVERHEAD_MB = 300


@dataclass(frozen=True)
class Combo:
    """One run of a sweep."""

    size_bytes: int
    executors: int
    repeat: int
    master: str

    def key(self, workload: str) -> str:
        return f"{workload}|{self.size_bytes}|{self.executors}|{self.repeat}|{self.master}"


@dataclass(frozen=True)
class SweepPlan:
    """A validated sweep (see :func:`plan_sweep`)."""

    workload: str
    sizes_bytes: tuple[int, ...]
    executors: tuple[int, ...]
    repeats: int
    master_template: str
    executor_cores: int
    executor_memory_mb: int
    seed: int
    combos: tuple[Combo, ...]

    @property
    def job(self) -> str:
        return self.workload


def parse_list(text: str | Sequence, kind: str) -> list:
    """``"64MB,128MB"`` -> bytes, ``"1,2,3"`` or ``"1-3"`` -> ints (``kind``: sizes|ints)."""
    items = [t.strip() for t in (text.split(",") if isinstance(text, str) else map(str, text)) if t.strip()]
    if not items:
        raise InputError(f"empty list of {kind}", "give a comma-separated list, e.g. 64MB,128MB or 1,2,3")
    if kind == "sizes":
        return [parse_bytes(t) for t in items]
    out: list[int] = []
    for t in items:
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", t)
        if not m:
            raise InputError(f"cannot read {t!r} as an executor count", "write e.g. 1,2,3 or 1-4")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        out.extend(range(lo, hi + 1))
    if any(e < 1 for e in out):
        raise InputError("executor counts must be at least 1", "write e.g. 1,2,3")
    return out


def master_for(template: str, executors: int, cores: int, memory_mb: int) -> str:
    """The master URL of one run: ``{executors}``, ``{cores}``, ``{memory_mb}`` filled in.

    ``local`` alone means ``local[{executors}]``: E task threads in the driver JVM, recorded
    as E one-core executors (fast, for demos; no executor JVMs).
    """
    if template == "local":
        template = "local[{executors}]"
    return template.format(executors=executors, cores=cores, memory_mb=memory_mb)


def _mem_available_mb() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20


#: The master URLs Spark parses (local modes, YARN, standalone, Kubernetes, Mesos).
_MASTER_URL = re.compile(r"local(\[(\d+|\*)(,\d+)?\])?|local-cluster\[\s*\d+\s*,\s*\d+\s*,\s*\d+\s*\]"
                         r"|yarn|(spark|k8s|mesos)://\S+")
_MASTER_FIX = "give --master local[N], local-cluster[N,C,MiB], yarn, spark://HOST:PORT or k8s://URL"


def check_capacity(master: str, executors: int, cores: int, memory_mb: int) -> None:
    """Refuse a master URL Spark cannot parse, and local masters this machine cannot start;
    whether a cluster master has room is the cluster's business."""
    if not _MASTER_URL.fullmatch(master):
        raise WorkloadError(f"{master!r} is not a Spark master URL", _MASTER_FIX)
    ncpu = os.cpu_count() or 1
    m = LOCAL_CLUSTER_MASTER.fullmatch(master)
    if m:
        n, c, mem = map(int, m.groups())
        if n * c > OVERSUBSCRIBE * ncpu:
            raise WorkloadError(
                f"{master} asks for {n} executors x {c} cores = {n * c} cores; this machine has {ncpu} "
                f"and a local sweep may start at most {OVERSUBSCRIBE * ncpu}",
                f"use at most {OVERSUBSCRIBE * ncpu // c} executors here, or sweep on a cluster (--master)")
        need = n * (mem + JVM_OVERHEAD_MB)
        avail = _mem_available_mb()
        if need > avail:
            raise WorkloadError(
                f"{master} needs about {need:.0f} MiB for {n} executor JVMs; {avail:.0f} MiB is available",
                f"use at most {int(avail // (mem + JVM_OVERHEAD_MB))} executors or less memory per executor")
        return
    m = LOCAL_MASTER.fullmatch(master)
    if m and m.group(1) not in (None, "*") and int(m.group(1)) > OVERSUBSCRIBE * ncpu:
        raise WorkloadError(f"{master} asks for {m.group(1)} task threads on a {ncpu}-core machine",
                            f"use at most {OVERSUBSCRIBE * ncpu} executors with a local master")


def plan_sweep(workload: str, sizes: str | Sequence, executors: str | Sequence, repeats: int = 1,
               master: str | None = None, executor_cores: int = 1, executor_memory_mb: int = 1024,
               seed: int = 0) -> SweepPlan:
    """Validate a sweep and list its runs; raises before anything is generated or started.

    Parameters
    ----------
    workload : str
        A name from :func:`sparkpredict.workloads.names`.
    sizes : str or sequence
        Input sizes, e.g. ``"64MB,128MB"`` or ``[64_000_000, ...]``.
    executors : str or sequence
        Executor counts, e.g. ``"1,2,3"`` or ``"1-3"``.
    repeats : int
        Runs per (size, executors).
    master : str, optional
        Master template; default ``local-cluster[{executors},{cores},{memory_mb}]``. ``local``
        means ``local[{executors}]``. A master without ``{executors}`` (yarn, k8s://...) gets
        ``spark.executor.instances``.

    Raises
    ------
    WorkloadError
        Unknown workload, size below the generator's minimum, or more executors than a local
        master can start on this machine.
    InputError
        Unreadable sizes, counts or repeats.
    """
    w = W.get(workload)
    size_list = sorted(set(parse_list(sizes, "sizes")))
    ex_list = sorted(set(parse_list(executors, "ints")))
    if int(repeats) < 1:
        raise InputError(f"repeats must be at least 1, not {repeats}", "give --repeats 1 or more")
    if executor_cores < 1 or executor_memory_mb < 256:
        raise InputError("executors need at least 1 core and 256 MiB",
                         "give --executor-cores >= 1 and --executor-memory >= 256MB")
    for s in size_list:
        W.check_size(w, s)
    template = master or DEFAULT_MASTER
    combos = []
    for e in ex_list:
        check_capacity(master_for(template, e, executor_cores, executor_memory_mb), e,
                       executor_cores, executor_memory_mb)
    for r in range(int(repeats)):
        for s in size_list:
            for e in ex_list:
                combos.append(Combo(s, e, r, master_for(template, e, executor_cores, executor_memory_mb)))
    return SweepPlan(workload, tuple(size_list), tuple(ex_list), int(repeats), template,
                     executor_cores, executor_memory_mb, seed, tuple(combos))
