"""Sweeps: run a workload over sizes x executor counts x repeats, each run its own Spark application.

:func:`plan_sweep` (:mod:`.sweep_plan`) validates everything up front (unknown workload, a
size below the generator's minimum, more executors than this machine can start), so a bad sweep
fails before any data is generated or any run recorded. :func:`run_sweep` then

1. generates each size's input once (cached on disk, deterministic per seed and size);
2. skips combinations the store already holds as *succeeded* runs of the same sweep key
   (``spark.sparkpredict.sweep.key``, read back from the runs' ``properties_json``: workload,
   size, executors, repeat, master, seed, and executor cores and memory where executors are
   JVMs of their own), so an interrupted sweep resumes where it stopped;
3. runs every remaining combination as its own application in *this* Python process: one
   driver JVM, a fresh SparkContext per run (stop + start costs ~0.2 s, a new driver JVM
   10-17 s). Each application has its own master (``local-cluster[E,cores,mem]`` by default),
   its own app id and is recorded by the listener with ``spark.sparkpredict.job = workload``
   and ``spark.sparkpredict.inputBytes`` = the generated input's bytes.

Because the listener's jar must be on the driver's classpath when the JVM starts, a sweep
must be the first thing to start Spark in its process (the CLI always is).
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from . import workloads as W
from .config import LOCAL_MASTER
from .errors import InputError, ListenerError, StoreError
from .sweep_plan import (  # noqa: F401  (re-exported: the sweep API is one module to its users)
    _MASTER_FIX,
    DEFAULT_MASTER,
    JVM_OVERHEAD_MB,
    OVERSUBSCRIBE,
    Combo,
    SweepPlan,
    check_capacity,
    master_for,
    parse_list,
    plan_sweep,
)
from .sweep_session import (  # noqa: F401  (QUIET_SPARK_LOG: re-exported)
    QUIET_SPARK_LOG,
    _Interrupts,
    _jvm_started,
    _spark_quiet_while_stopping,
    _start_session,
    _stop,
    _wait_for_executors,
    _wait_for_jvm_exit,
    _wait_for_tasks_to_end,
    stop_quietly,
)
from .units import format_bytes, parse_memory_mb

log = logging.getLogger(__name__)

KEY_SWEEP = "spark.sparkpredict.sweep.key"
KEY_SEED = "spark.sparkpredict.sweep.seed"
#: The warm-up run is recorded by the listener into a scratch store (then deleted), on the first
#: run's local master, so that the listener's first write falls outside the first recorded run;
#: False: the warm-up before 2026-11-30, unrecorded on local[2] (benchmarks/sweep_warmup.py
#: measures both).
WARMUP_RECORDS = True
#: How long an interrupted warm-up waits for a driver JVM that may be exiting with the same signal.
JVM_EXIT_WAIT_S = 5.0
#: How long to wait for a local-cluster's executors to register before the job starts.
EXECUTOR_WAIT_S = 180.0


@dataclass
class RunOutcome:
    combo: Combo
    status: str  # succeeded | failed | skipped
    app_id: str | None = None
    #: SparkContext.startTime, the ApplicationStart time the listener records as ``start_ms``
    start_ms: int | None = None
    seconds: float = 0.0
    error: str | None = None
    result: dict = field(default_factory=dict)


@dataclass
class SweepResult:
    plan: SweepPlan
    store: str
    outcomes: list[RunOutcome]
    seconds: float
    #: the store's small batches merged between runs (:func:`~.store.compact.auto_compact`)
    compactions: list = field(default_factory=list)

    @property
    def ran(self) -> list[RunOutcome]:
        return [o for o in self.outcomes if o.status != "skipped"]

    @property
    def failed(self) -> list[RunOutcome]:
        return [o for o in self.outcomes if o.status == "failed"]

    @property
    def skipped(self) -> list[RunOutcome]:
        return [o for o in self.outcomes if o.status == "skipped"]


#: progress(done, total, elapsed_s, eta_s or None, label)
Progress = Callable[[int, int, float, "float | None", str], None]


def _resume_key(props: dict) -> str | None:
    """The sweep key of a recorded run, as :meth:`Combo.key` writes it today.

    Keys written before the seed and the executors' cores and memory were part of it
    (``workload|bytes|executors|repeat|master``) are completed from the run's own properties,
    which every sweep has set; a run lacking one is not taken as done (it is rerun)."""
    key = props.get(KEY_SWEEP)
    if not key or len(key.split("|")) != 5:
        return key or None
    workload, size, executors, repeat, master = key.split("|")
    try:
        if LOCAL_MASTER.fullmatch(master):  # cores and memory are not part of a local key
            cores, memory_mb = 1, 1024
        else:
            cores = int(props["spark.executor.cores"])
            memory_mb = parse_memory_mb(props["spark.executor.memory"])
        combo = Combo(int(size), int(executors), int(repeat), master, int(props[KEY_SEED]), cores, memory_mb)
    except (KeyError, ValueError):  # InputError is a ValueError
        return None
    return combo.key(workload)


def recorded_keys(store_path: str, workload: str, create: bool = True) -> set[str]:
    """Sweep keys of the succeeded runs of ``workload`` already in the store (``create``: an
    empty store made where there is none; else :class:`StoreError` there)."""
    from .store import io as store_io

    st = store_io.open(store_path, create=create)
    runs = st.read("runs", columns=["job", "status", "properties_json"])
    keys: set[str] = set()
    for job, status, props in zip(runs["job"], runs["status"], runs["properties_json"]):
        if job != workload or status != "succeeded" or not props:
            continue
        try:
            k = _resume_key(json.loads(props))
        except (ValueError, AttributeError):  # not JSON, or not an object
            continue
        if k:
            keys.add(k)
    return keys


def _is_local(master: str) -> bool:
    return master.startswith("local")


#: Where a sweep whose store is remote (``s3://...``) keeps its scratch: "beside the store"
#: made a folder ``s3:/bucket`` in the current one.
REMOTE_WORKDIR = Path("~") / ".sparkpredict" / "sweep-work"
#: Bytes a data set's generation may need beyond its size (the last part, the manifest, the
#: file system's own), and room left for Spark's scratch.
DISK_MARGIN_BYTES = 64 * 2**20


def default_workdir(store_path: str) -> Path:
    """The sweep's work folder for the (resolved) store ``store_path``: ``sweep-work`` beside a
    local store, :data:`REMOTE_WORKDIR` for a remote one."""
    from .store.io import is_remote

    if is_remote(store_path):
        return REMOTE_WORKDIR.expanduser()
    return Path(store_path).parent / "sweep-work"


def _workdir_fix(store_path: str, given: bool) -> str:
    from .store.io import is_remote

    if given:
        return "give --workdir a writable folder (workdir= from Python)"
    if is_remote(store_path):
        return (f"give --workdir a writable folder (workdir= from Python); with a remote store the "
                f"default is {REMOTE_WORKDIR}")
    return ("give a store whose parent folder is writable (the work folder is beside it), "
            "or --workdir a writable folder (workdir= from Python)")


def _work_folder(workdir: str | os.PathLike | None, store_path: str) -> Path:
    """The sweep's work folder, refused (before anything is made) where Spark cannot use it."""
    from .config import folder_problem

    given = workdir is not None
    wd = default_workdir(store_path) if workdir is None else Path(workdir).expanduser().absolute()
    if "," in str(wd):
        # spark.local.dir is a comma-separated list: its scratch would go to two folders,
        # neither of them this one
        raise InputError(f"the sweep's work folder {str(wd)!r} holds a comma, which Spark reads as a "
                         "list of folders (spark.local.dir)",
                         "give --workdir a folder whose path has no comma (workdir= from Python)"
                         + ("" if given else ", or a store whose path has none (the work folder is beside it)"))
    problem = folder_problem(wd / "spark-local")
    if problem:
        raise InputError(f"cannot write the sweep's work folder {str(wd)!r}: {problem}",
                         _workdir_fix(store_path, given))
    return wd


def _free_bytes(folder: Path) -> int:
    """Free bytes on the file system ``folder`` is (or, not made yet, will be) on."""
    import shutil

    p = folder.absolute()
    while not p.exists() and p.parent != p:
        p = p.parent
    return shutil.disk_usage(p).free


def check_disk(w: W.Workload, sizes: Sequence[int], seed: int, cache: Path) -> None:
    """Refuse to generate ``sizes`` of ``w``'s input into ``cache`` when its disk cannot hold
    them: the generator would fill the disk first (a 100 TB sweep wrote on with 59 GB free).
    Data sets already cached need nothing; hidden ones left by a killed generator are removed
    first, their space counted as free."""
    missing = [s for s in sizes if not W.gen.is_cached(w.name, s, seed, cache)]
    if not missing:
        return
    W.gen.remove_stale(cache)
    need, free = sum(missing), _free_bytes(cache)
    if need + DISK_MARGIN_BYTES > free:
        listed = ", ".join(format_bytes(s) for s in missing)
        what = (f"the {w.name} input still to generate ({listed})" if len(missing) == 1 else
                f"the {w.name} inputs still to generate ({listed}: {format_bytes(need)} in all)")
        raise InputError(f"{what} would not fit in the cache {str(cache)!r}: {format_bytes(free)} is free there",
                         "free disk space there, give --cache a folder on a larger disk (cache_dir= from "
                         "Python), or give smaller --sizes")


def run_conf(plan: SweepPlan, combo: Combo, input_bytes: int, local_dir: Path) -> dict[str, str]:
    """Spark settings of one sweep run (beyond the listener's)."""
    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        # the workload's own settings, which its jobs/ script runs with too
        **W.spark_settings(input_bytes),
        "spark.local.dir": str(local_dir),
        "spark.executor.memory": f"{plan.executor_memory_mb}m",
        "spark.executor.cores": str(plan.executor_cores),
        KEY_SWEEP: combo.key(plan.workload),
        "spark.sparkpredict.sweep.repeat": str(combo.repeat),
        KEY_SEED: str(plan.seed),
    }
    if not _is_local(combo.master) or combo.master.startswith("local["):
        # Cluster managers read this; in local[E] it records E as the executors requested.
        conf["spark.executor.instances"] = str(combo.executors)
        conf["spark.dynamicAllocation.enabled"] = "false"
    return conf


def _eta(done: list[tuple[int, float]], todo: Sequence[Combo]) -> float | None:
    """Seconds left: a per-run fixed cost plus a per-byte cost, fitted on the runs done so far."""
    if not done:
        return None
    import numpy as np

    x = np.array([d[0] for d in done], float)
    y = np.array([d[1] for d in done], float)
    if len(set(x)) >= 2:
        b, a = np.polyfit(x, y, 1)
        b, a = max(b, 0.0), max(a, 0.0)
    else:
        a, b = float(y.mean()), 0.0
    return float(sum(max(a + b * c.size_bytes, 0.5 * y.min()) for c in todo))


def run_sweep(plan: SweepPlan, store: str | os.PathLike | None = None,
              cache_dir: str | os.PathLike | None = None, workdir: str | os.PathLike | None = None,
              progress: Progress | None = None, extra_conf: dict[str, str] | None = None,
              tasks: bool = True, warmup: bool = True, spark_logs: bool = False,
              compact: bool = True) -> SweepResult:
    """Run every combination of ``plan`` not yet recorded in ``store``; see the module docstring.

    Returns a :class:`SweepResult` (one outcome per combination, skipped ones included). A run
    whose job fails is recorded by the listener as failed and the sweep goes on; a rerun
    retries it. Ctrl-C (in the main thread) cancels the current application's jobs, stops it
    (recorded as failed) and raises :class:`KeyboardInterrupt`, without PySpark's tracebacks
    (:class:`_Interrupts`); SIGTERM and SIGHUP alike, raising :class:`~.errors.Terminated`.

    Spark's scratch and the warm-up's scratch store go to ``workdir``: by default
    ``sweep-work`` beside a local store, ``~/.sparkpredict/sweep-work`` for a remote one.
    Everything that can be refused (the cache, the work folder, the free disk space for the data
    to generate) is, before the store is opened (which creates it) or any data generated.

    With ``warmup`` (default), an unrecorded application first runs the workload once on the
    smallest input: the first job in a fresh driver JVM runs several times slower (class
    loading, JIT), which would make the first recorded run an outlier.

    Spark logs errors only during a sweep (:data:`QUIET_SPARK_LOG`) unless ``spark_logs`` is
    set or the user has a log4j configuration of their own.

    With ``compact`` (default), after each run the store's small batches are merged once 256
    arrived since its last compaction (:func:`~.store.compact.auto_compact`, a local store).
    """
    from .capture.listener import (
        check_jar_nameable,
        check_store_nameable,
        jvm_path_encoding,
        listener_conf,
    )
    from .config import cache_error, embedded_store, folder_problem, resolve_store
    from .store import io as store_io
    from .store.compact import auto_compact

    t0 = time.monotonic()
    # the embedded store, not a cluster's spark-defaults.conf one: a benchmark's synthetic runs
    # stay out of the runs of the cluster's jobs unless --store names it
    store_path = resolve_store(store if store is not None else embedded_store())
    # Every refusal before the store is opened, which creates it: a refused sweep leaves nothing behind.
    encoding = jvm_path_encoding()  # the sweep's driver JVM runs here: it writes the store, reads the jar
    check_store_nameable(store_path, encoding)
    check_jar_nameable(encoding)
    cache = Path(cache_dir).expanduser().absolute() if cache_dir else W.default_cache()
    problem = folder_problem(cache)
    if problem:
        raise cache_error(cache, problem, "give --cache a writable folder" if cache_dir else None)
    workdir_given = workdir is not None
    workdir = _work_folder(workdir, store_path)
    local_dir = workdir / "spark-local"
    w = W.get(plan.workload)
    try:
        recorded = recorded_keys(store_path, plan.workload, create=False)
    except StoreError:  # no store yet (or no store at all: opening it to write says which, below)
        recorded = set()
    todo = [c for c in plan.combos if c.key(plan.workload) not in recorded]
    check_disk(w, sorted({c.size_bytes for c in todo}), plan.seed, cache)
    made = [p for p in (local_dir, *local_dir.parents) if not p.exists()]
    try:
        local_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot write the sweep's work folder {str(local_dir)!r}: {exc.strerror or exc}",
                         _workdir_fix(store_path, given=workdir_given)) from None
    try:
        store_io.open(store_path, create=True)  # unwritable or foreign store: fail before any run
    except BaseException:
        for p in made:  # deepest first; the empty folders this call made, as if never started
            with contextlib.suppress(OSError):
                p.rmdir()
        raise

    outcomes = [RunOutcome(c, "skipped") for c in plan.combos if c.key(plan.workload) in recorded]
    total = len(todo)
    if progress:
        progress(0, total, 0.0, None, f"{len(outcomes)} runs already recorded" if outcomes else "starting")

    with _Interrupts().installed() as interrupts:
        # Inputs first: generation errors surface before any application is recorded.
        data: dict[int, tuple[Path, int]] = {}
        for size in sorted({c.size_bytes for c in todo}):
            path = w.data(size, plan.seed, cache)
            data[size] = (path, W.gen.data_size(path))

        if todo and warmup and not _jvm_started():
            _warm_up(w, todo[0], data[min(data)][0], plan, local_dir, store_path, tasks,
                     quiet=not spark_logs, interrupts=interrupts)

        done: list[tuple[int, float]] = []
        compactions: list = []
        verified = False
        for i, combo in enumerate(todo):
            path, nbytes = data[combo.size_bytes]
            conf = run_conf(plan, combo, nbytes, local_dir)
            conf.update(listener_conf(store_path, plan.workload, tasks=tasks, input_bytes=nbytes))
            conf.update(extra_conf or {})
            name = f"{plan.workload}-{format_bytes(combo.size_bytes).replace(' ', '')}-{combo.executors}x-r{combo.repeat}"
            outcome = RunOutcome(combo, "failed")
            started = time.monotonic()
            with interrupts.spark_calls():
                spark = _start_session(combo.master, name, conf, quiet=not spark_logs)
                exit_code = 1
                try:
                    interrupts.watch(spark.sparkContext)
                    interrupts.check()  # a Ctrl-C while it started
                    outcome.app_id = spark.sparkContext.applicationId
                    outcome.start_ms = int(spark.sparkContext.startTime)
                    spark.sparkContext.setLogLevel("ERROR")  # Spark's WARN lines would bury the progress bar
                    if combo.master.startswith("local-cluster"):
                        _wait_for_executors(spark, combo.executors, EXECUTOR_WAIT_S, interrupts.check)
                    outcome.result = w.run(spark, path, plan.seed)
                    outcome.status, exit_code = "succeeded", 0
                except KeyboardInterrupt:
                    exit_code = interrupts.exit_code
                    raise
                except Exception as exc:  # the run failed: recorded as failed, retried by the next sweep  # noqa: BLE001
                    if interrupts.requested:  # its jobs were cancelled by Ctrl-C (or SIGTERM, SIGHUP)
                        exit_code = interrupts.exit_code
                        raise interrupts.interruption() from None
                    outcome.error = f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:300]}"
                    log.warning("run %s failed: %s", name, outcome.error)
                finally:
                    interrupts.release()
                    if exit_code > 128:  # interrupted: its cancelled tasks end first, quietly
                        with _spark_quiet_while_stopping(spark):
                            _wait_for_tasks_to_end(spark, 10.0)
                            _stop(spark, exit_code)
                    else:
                        _stop(spark, exit_code)
            # A Ctrl-C while a run finished or stopped: the run is recorded as it ended; stop here.
            interrupts.check()
            outcome.seconds = time.monotonic() - started
            outcomes.append(outcome)
            done.append((combo.size_bytes, outcome.seconds))
            if not verified:
                _verify_recorded(store_path, outcome.app_id, outcome.start_ms)
                verified = True
            # between runs, not only at the end: a sweep of thousands of runs would read slowly
            # before it ended, and one cut short would leave every batch uncompacted
            compaction = auto_compact(store_path) if compact else None
            if compaction is not None:
                compactions.append(compaction)
            if progress:
                progress(i + 1, total, time.monotonic() - t0, _eta(done, todo[i + 1:]), name)
    return SweepResult(plan, store_path, outcomes, time.monotonic() - t0, compactions)


def _warm_up(w: W.Workload, combo: Combo, path: Path, plan: SweepPlan, local_dir: Path,
             store_path: str, tasks: bool = True, quiet: bool = True,
             interrupts: _Interrupts | None = None) -> None:
    """One run the sweep's store does not record, in the driver JVM the sweep then uses.

    With :data:`WARMUP_RECORDS` the listener and host sampler record it into a scratch store,
    deleted afterwards: their first write (Parquet and Hadoop classes, the file system) then
    happens here, not inside the first recorded run."""
    import shutil
    import tempfile

    from .capture.listener import listener_conf

    conf = run_conf(plan, combo, W.gen.data_size(path), local_dir)
    conf.pop(KEY_SWEEP)
    scratch = tempfile.mkdtemp(prefix="warmup-store-", dir=local_dir)
    lc = listener_conf(scratch if WARMUP_RECORDS else store_path, plan.workload, tasks=tasks)
    # The first run's own local[N] where it is one; local-cluster executors start fresh for
    # every run anyway, so local threads warm its driver JVM without starting executors.
    master = "local[2]"
    if WARMUP_RECORDS:
        conf.update(lc)
        master = combo.master if LOCAL_MASTER.fullmatch(combo.master) else master
    else:
        conf["spark.jars"] = lc["spark.jars"]  # must be there when the driver JVM starts
    interrupts = interrupts or _Interrupts()
    try:
        with interrupts.spark_calls():
            spark = _start_session(master, f"{plan.workload}-warmup", conf, quiet=quiet)
            try:
                interrupts.watch(spark.sparkContext)
                interrupts.check()
                spark.sparkContext.setLogLevel("ERROR")
                w.run(spark, path, plan.seed)
            except Exception as exc:  # a broken workload shows up (and is recorded) in the real runs  # noqa: BLE001
                if interrupts.requested:  # ... unless Ctrl-C (SIGTERM, SIGHUP) cancelled it
                    raise interrupts.interruption() from None
                log.warning("warm-up run failed: %s", exc)
            finally:
                interrupts.release()
                if interrupts.requested:
                    _wait_for_tasks_to_end(spark, 10.0)
                    stopped = stop_quietly(spark)
                    if not stopped or interrupts.signum != signal.SIGINT:
                        # A SIGTERM sent to the process group reaches the driver JVM too (Ctrl-C
                        # does not: PySpark's JVM ignores SIGINT); its shutdown hooks' last
                        # writes must not land in the scratch store after it is removed below.
                        _wait_for_jvm_exit(JVM_EXIT_WAIT_S)
                else:
                    spark.stop()
        interrupts.check()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _verify_recorded(store_path: str, app_id: str | None, start_ms: int | None) -> None:
    """After the first run: is the listener really recording? Better to stop now than after 70 runs.

    By app id and start: ``local-cluster`` numbers its applications per master, so an earlier
    sweep's run can carry the same app id (``app-<second>-0000``)."""
    from .store import io as store_io

    runs = store_io.open(store_path).read("runs", columns=["app_id", "start_ms"])
    mine = runs["app_id"] == app_id
    if start_ms is not None:
        mine &= runs["start_ms"] == start_ms
    if not mine.any():
        raise ListenerError(f"the run {app_id} was not recorded in {store_path}",
                            "check `sparkpredict listener build` and that nothing started Spark "
                            "in this process before the sweep")


__all__ = [
    "DEFAULT_MASTER",
    "KEY_SEED",
    "KEY_SWEEP",
    "Combo",
    "RunOutcome",
    "SweepPlan",
    "SweepResult",
    "check_capacity",
    "check_disk",
    "default_workdir",
    "master_for",
    "parse_list",
    "plan_sweep",
    "recorded_keys",
    "run_sweep",
]
