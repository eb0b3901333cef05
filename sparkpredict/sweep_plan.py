"""Planning a sweep: which runs (size x executors x repeat, each with its master URL), checked
before anything is generated or started: an unknown workload, a size below the generator's
minimum, a master template with an unknown placeholder, a master URL Spark cannot parse or
that cannot run the executor counts asked for, more executors than this machine can start.

:mod:`sparkpredict.sweep` runs the plan (and re-exports what is here).
"""
from __future__ import annotations

import operator
import os
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from . import workloads as W
from .config import LOCAL_CLUSTER_MASTER, LOCAL_MASTER, empty_local_master
from .errors import InputError, WorkloadError
from .units import parse_counts, parse_user_bytes

DEFAULT_MASTER = "local-cluster[{executors},{cores},{memory_mb}]"
#: Executor cores (or task threads) per logical CPU (``os.cpu_count()``) that a local sweep may
#: start (they mostly wait on each other).
OVERSUBSCRIBE = 4
#: Memory an executor JVM takes beyond its heap (metaspace, threads, off-heap buffers), MiB.
JVM_OVERHEAD_MB = 300
#: Most runs one sweep may plan (sizes x executor counts x repeats): at a second each, three
#: hours; a typo such as --repeats 10000000 built its list of runs until memory ran out.
MAX_RUNS = 10_000


@dataclass(frozen=True)
class Combo:
    """One run of a sweep."""

    size_bytes: int
    executors: int
    repeat: int
    master: str
    seed: int = 0
    executor_cores: int = 1
    executor_memory_mb: int = 1024

    def key(self, workload: str) -> str:
        """The run's resume key: everything that makes two runs the same experiment.

        ``workload|bytes|executors|repeat|master|seed=S``, plus ``|cores=C|memory_mb=M`` where
        executors are JVMs of their own: on ``local[N]`` the tasks run in the driver, and
        spark.executor.cores/memory change nothing, so a changed --executor-memory reruns
        nothing there."""
        key = f"{workload}|{self.size_bytes}|{self.executors}|{self.repeat}|{self.master}|seed={self.seed}"
        if LOCAL_MASTER.fullmatch(self.master):
            return key
        return f"{key}|cores={self.executor_cores}|memory_mb={self.executor_memory_mb}"


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
    items = [t.strip() for t in (text.split(",") if isinstance(text, str) else map(str, text))]
    what = "sizes" if kind == "sizes" else "executor counts"
    if not any(items):
        example = "64MB,128MB" if kind == "sizes" else "1,2,3 or 1-3"
        raise InputError(f"empty list of {what}", f"give a comma-separated list of {what}, e.g. {example}")
    if not all(items):
        # "1,,2" is more likely a value lost while editing than a stray comma: ask, do not guess
        raise InputError(f"the list of {what} {text if isinstance(text, str) else list(text)!r} has an empty item",
                         f"write one value between each two commas, e.g. {','.join(t for t in items if t)}")
    if kind == "sizes":
        return [parse_user_bytes(t) for t in items]
    return parse_counts(",".join(items), wide_fix=False)


PLACEHOLDERS = ("executors", "cores", "memory_mb")
_TEMPLATE_FIX = ("write the placeholders as {executors}, {cores} and {memory_mb}, e.g. --master "
                 "'local-cluster[{executors},{cores},{memory_mb}]' or 'local[{executors}]'")


def check_template(template: str) -> None:
    """Refuse a master template whose placeholders :func:`master_for` cannot fill (a typo such
    as ``{executor}``, a bare ``{}``, a lone brace): str.format would raise KeyError or
    IndexError with no word about the template."""
    try:
        fields = [(f, conv, spec) for _, f, spec, conv in string.Formatter().parse(template) if f is not None]
    except ValueError as exc:  # a lone "{" or "}"
        raise InputError(f"cannot read the master template {template!r}: {exc}",
                         _TEMPLATE_FIX + "; a literal brace is written {{ or }}") from None
    for name, conv, spec in fields:
        if name not in PLACEHOLDERS or conv or spec:
            written = "{" + name + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "") + "}"
            raise InputError(f"the master template {template!r} has an unknown placeholder {written}",
                             _TEMPLATE_FIX)


def master_for(template: str, executors: int, cores: int, memory_mb: int) -> str:
    """The master URL of one run: ``{executors}``, ``{cores}``, ``{memory_mb}`` filled in.

    ``local`` alone means ``local[{executors}]``: E task threads in the driver JVM, recorded
    as E one-core executors (fast, for demos; no executor JVMs).

    Raises
    ------
    InputError
        A placeholder other than those three (:func:`check_template`).
    """
    if template == "local":
        template = "local[{executors}]"
    check_template(template)
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
    empty = empty_local_master(master)
    if empty:
        raise WorkloadError(f"{master} {empty[0]}", empty[1])
    m = LOCAL_CLUSTER_MASTER.fullmatch(master)
    if m:
        n, c, mem = map(int, m.groups())
        if mem < memory_mb:
            # Spark refuses this itself, but only once the driver started (after the data).
            raise WorkloadError(f"{master} gives each worker {mem} MiB, less than the executors' {memory_mb} MiB",
                                f"write {{memory_mb}} in the master template, or --executor-memory {mem}MiB")
        if n > most_local_executors(c):
            raise WorkloadError(
                f"{master} asks for {n} executors x {c} cores = {n * c} cores; this machine has {ncpu} "
                f"and a local sweep may start at most {most_local_executors(1)}",
                f"use at most {most_local_executors(c)} executors here, or sweep on a cluster (--master)")
        need = n * (mem + JVM_OVERHEAD_MB)
        avail = _mem_available_mb()
        if need > avail:
            raise WorkloadError(
                f"{master} needs about {need:.0f} MiB for {n} executor JVMs; {avail:.0f} MiB is available",
                f"use at most {int(avail // (mem + JVM_OVERHEAD_MB))} executors or less memory per executor")
        return
    m = LOCAL_MASTER.fullmatch(master)
    if m and m.group(1) not in (None, "*") and int(m.group(1)) > most_local_executors(1):
        raise WorkloadError(f"{master} asks for {m.group(1)} task threads on a {ncpu}-core machine",
                            f"use at most {most_local_executors(1)} executors with a local master")


def most_local_executors(cores: int) -> int:
    """The most executors of ``cores`` cores a local master may start on this machine:
    :data:`OVERSUBSCRIBE` x its cores in task slots (a sweep's limit, and ``submit``'s)."""
    return OVERSUBSCRIBE * (os.cpu_count() or 1) // max(1, cores)


def check_counts(template: str, masters: Mapping[int, str], cores: int) -> None:
    """Refuse a local master that would not run the executor counts it is recorded as.

    ``masters`` maps each executor count E to its master URL. A run is recorded as E executors
    (``spark.executor.instances``, the sweep key), but a fixed ``local[N]`` runs N task threads
    and a fixed ``local-cluster[N,C,M]`` starts N executors of C cores, whatever E is: runs
    recorded as different setups would be one."""
    wrong: dict[str, list[int]] = {}  # the count a fixed master runs -> the counts asked of it
    for e, url in masters.items():
        m = LOCAL_CLUSTER_MASTER.fullmatch(url)
        if m and int(m.group(2)) != cores:
            raise WorkloadError(
                f"--master {template!r} gives each worker {m.group(2)} core(s) but --executor-cores is {cores}",
                f"write {{cores}} in the master template, or --executor-cores {m.group(2)}")
        m = m or LOCAL_MASTER.fullmatch(url)
        if m and m.group(1) is not None and m.group(1) != str(e):
            wrong.setdefault(m.group(1), []).append(e)
    if not wrong:
        return
    n, counts = next(iter(wrong.items()))
    runs = f"the runs at {', '.join(map(str, counts))} executor(s) would be recorded as setups they are not"
    if LOCAL_CLUSTER_MASTER.fullmatch(masters[counts[0]]):
        raise WorkloadError(f"--master {template!r} starts {n} executor(s) in every run, so {runs}",
                            "use --master 'local-cluster[{executors},{cores},{memory_mb}]' (the default), "
                            f"or --executors {n}")
    threads = "as many task threads as the machine has cores" if n == "*" else f"{n} task thread(s)"
    raise WorkloadError(f"--master {template!r} runs every run on {threads}, so {runs}",
                        "use --master local (that is local[{executors}]: E task threads for E executors)"
                        + ("" if n == "*" else f", or --executors {n}"))


def _whole(value: object, name: str, fix: str) -> int:
    """``value`` as an int, refused where it is none: ``int()`` made 1.9 one repeat, "x" a bare
    ValueError, a bool a count, and "1g" of memory a TypeError deep in the master's template."""
    try:
        if isinstance(value, bool):
            raise TypeError
        return operator.index(value)  # type: ignore[arg-type]  # an int or numpy integer only
    except TypeError:
        raise InputError(f"{name} must be a whole number, not {value!r}", fix) from None


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
        means ``local[{executors}]``. A cluster master without ``{executors}`` (yarn,
        k8s://...) gets ``spark.executor.instances``; a local one must run each count asked for
        (``local[2]`` only with executors ``2``, :func:`check_counts`).
    executor_cores, executor_memory_mb : int
        Per executor; part of the resume key where executors are JVMs of their own.
    seed : int
        Data generator seed; part of the resume key.

    Raises
    ------
    WorkloadError
        Unknown workload, size below the generator's minimum, a master Spark would refuse or
        that cannot run the executor counts, or more executors than a local master can start
        on this machine.
    InputError
        Unreadable sizes or counts (an empty range such as ``2-1``, an empty item such as
        ``1,,2``), repeats, master template, or a negative seed; repeats, executor_cores or
        executor_memory_mb not a whole number; more than :data:`MAX_RUNS` runs.
    """
    w = W.get(workload)
    seed = W.check_seed(seed)
    repeats = _whole(repeats, "repeats", "give --repeats a whole number, 1 or more (repeats= from Python)")
    executor_cores = _whole(executor_cores, "executor_cores",
                            "give --executor-cores a whole number, 1 or more (executor_cores= from Python)")
    executor_memory_mb = _whole(executor_memory_mb, "executor_memory_mb",
                                "give --executor-memory a size such as 4g or 1024MiB (from Python: "
                                "executor_memory_mb= a whole number of MiB)")
    size_list = sorted(set(parse_list(sizes, "sizes")))
    ex_list = sorted(set(parse_list(executors, "ints")))
    if repeats < 1:
        raise InputError(f"repeats must be at least 1, not {repeats}", "give --repeats 1 or more")
    runs = len(size_list) * len(ex_list) * repeats
    if runs > MAX_RUNS:
        raise InputError(f"the sweep would be {runs:,} runs ({len(size_list)} size(s) x {len(ex_list)} executor "
                         f"count(s) x {repeats:,} repeat(s)), more than the {MAX_RUNS:,} one sweep may run",
                         "give fewer --sizes, --executors or --repeats (sizes=, executors=, repeats= from "
                         "Python), or split the sweep in several")
    if executor_cores < 1 or executor_memory_mb < 256:
        raise InputError("executors need at least 1 core and 256 MiB",
                         "give --executor-cores >= 1 and --executor-memory >= 256MB")
    for s in size_list:
        W.check_size(w, s)
    template = master or DEFAULT_MASTER
    masters = {e: master_for(template, e, executor_cores, executor_memory_mb) for e in ex_list}
    for e, url in masters.items():
        check_capacity(url, e, executor_cores, executor_memory_mb)
    check_counts(template, masters, executor_cores)
    combos = [Combo(s, e, r, masters[e], seed, executor_cores, executor_memory_mb)
              for r in range(repeats) for s in size_list for e in ex_list]
    return SweepPlan(workload, tuple(size_list), tuple(ex_list), repeats, template,
                     executor_cores, executor_memory_mb, seed, tuple(combos))
