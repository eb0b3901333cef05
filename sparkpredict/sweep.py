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
import math
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from . import workloads as W
from .config import LOCAL_MASTER
from .errors import ListenerError, WorkloadError
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
from .units import format_bytes, parse_memory_mb

log = logging.getLogger(__name__)

KEY_SWEEP = "spark.sparkpredict.sweep.key"
KEY_SEED = "spark.sparkpredict.sweep.seed"
#: The warm-up run is recorded by the listener into a scratch store (then deleted), on the first
#: run's local master, so that the listener's first write falls outside the first recorded run;
#: False: the warm-up before 2026-11-30, unrecorded on local[2] (benchmarks/sweep_warmup.py
#: measures both).
WARMUP_RECORDS = True
#: How long to wait for a local-cluster's executors to register before the job starts.
EXECUTOR_WAIT_S = 180.0
#: The log configuration a sweep's driver JVM starts with unless the user has one: Spark's
#: errors only, so its start-up WARNs do not bury the progress bar (``--spark-logs``: Spark's own).
QUIET_SPARK_LOG = Path(__file__).parent / "data" / "spark" / "log4j2-quiet.properties"
#: log4j2 reads this environment variable as ``-Dlog4j2.configurationFile``; through the
#: environment the user's ``spark.driver.extraJavaOptions`` (and spark-defaults') stay untouched.
_LOG4J_ENV = "LOG4J_CONFIGURATION_FILE"


@dataclass
class RunOutcome:
    combo: Combo
    status: str  # succeeded | failed | skipped
    app_id: str | None = None
    seconds: float = 0.0
    error: str | None = None
    result: dict = field(default_factory=dict)


@dataclass
class SweepResult:
    plan: SweepPlan
    store: str
    outcomes: list[RunOutcome]
    seconds: float

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


def recorded_keys(store_path: str, workload: str) -> set[str]:
    """Sweep keys of the succeeded runs of ``workload`` already in the store."""
    from .store import io as store_io

    st = store_io.open(store_path, create=True)
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


def run_conf(plan: SweepPlan, combo: Combo, input_bytes: int, local_dir: Path) -> dict[str, str]:
    """Spark settings of one sweep run (beyond the listener's)."""
    # Shuffle partitions follow the input (one per generated part), not the executor count,
    # so runs at different executor counts do the same work.
    parts = max(4, math.ceil(input_bytes / W.gen.PART_BYTES))
    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(parts),
        "spark.default.parallelism": str(parts),
        # One generated part file per read task, whatever the executor count.
        "spark.sql.files.maxPartitionBytes": str(W.gen.PART_BYTES),
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


class _Interrupts:
    """Ctrl-C during a sweep, taken so that no call into the JVM is cut in half.

    PySpark's own SIGINT handler (every SparkContext installs it) cancels the jobs through the
    py4j connection on which the main thread is waiting for the job: "reentrant call", a broken
    connection, py4j's logged tracebacks, and then the context is stopped under running tasks
    (Spark's ERRORs). Here, while a run's application starts, runs or stops (:meth:`spark_calls`),
    a Ctrl-C only sets :attr:`requested` and cancels the application's jobs from another thread,
    on that thread's own connection; the main thread sees its job fail, or reaches a
    :meth:`check`, and raises KeyboardInterrupt itself, between two JVM calls. Elsewhere (data
    generation, the store) it raises at once, as a second Ctrl-C always does. Outside the main
    thread Python delivers no signals, so nothing is installed there.
    """

    #: py4j's log lines, each with a traceback, for a JVM call cut by a second Ctrl-C: its own
    #: loggers', and two it sends to the root logger.
    _PY4J_LOGGERS = ("", "py4j.clientserver", "py4j.java_gateway")
    _PY4J_ROOT_NOISE = ("KeyboardInterrupt while sending command.", "Exception while sending command.")

    def __init__(self) -> None:
        self.requested = False
        self._in_spark = False
        self._sc = None
        self._done = threading.Event()
        self._canceller: threading.Thread | None = None
        self._main = threading.current_thread() is threading.main_thread()
        self._installed = False

    @contextlib.contextmanager
    def installed(self) -> Iterator[_Interrupts]:
        """This handler instead of the process's (PySpark's) for the block; restored after."""
        if not self._main:
            yield self
            return
        previous = signal.getsignal(signal.SIGINT)
        signal.signal(signal.SIGINT, self._on_sigint)
        self._installed = True
        for name in self._PY4J_LOGGERS:
            logging.getLogger(name).addFilter(self._quiet)
        try:
            yield self
        finally:
            self.release()
            self._installed = False
            signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)
            for name in self._PY4J_LOGGERS:
                logging.getLogger(name).removeFilter(self._quiet)

    def _quiet(self, record: logging.LogRecord) -> bool:
        """After a Ctrl-C, py4j's reports of the calls it cut are expected, not news."""
        return not (self.requested and (record.name.startswith("py4j") or record.msg in self._PY4J_ROOT_NOISE))

    @contextlib.contextmanager
    def spark_calls(self) -> Iterator[None]:
        """The block that starts, runs and stops one application: a first Ctrl-C waits for it."""
        self._in_spark = True
        try:
            yield
        finally:
            self._in_spark = False
            self.release()

    def watch(self, sc) -> None:
        """``sc`` has started (and replaced this handler with PySpark's): Ctrl-C cancels its jobs."""
        self._sc = sc
        if self._installed:
            signal.signal(signal.SIGINT, self._on_sigint)

    def release(self) -> None:
        """The application is about to stop: no more cancelling (its context is going away)."""
        self._sc = None
        self._done.set()
        if self._canceller is not None:
            self._canceller.join(10)
            self._canceller = None

    def check(self) -> None:
        if self.requested:
            raise KeyboardInterrupt

    def _on_sigint(self, signum: int, frame: object) -> None:
        # Never while PySpark launches the driver JVM: cut there, it leaves a JVM behind that
        # never learns its Python is gone (and holds the terminal's stderr); the launch takes
        # seconds, and the check after it stops the sweep.
        if (self.requested or not self._in_spark) and not (self._in_spark and not _jvm_started()):
            self.requested = True
            raise KeyboardInterrupt
        self.requested = True
        if self._sc is not None:
            self._done.clear()
            self._canceller = threading.Thread(target=self._cancel, args=(self._sc,),
                                               name="sparkpredict-sweep-cancel", daemon=True)
            self._canceller.start()

    def _cancel(self, sc) -> None:
        # Over and over: a workload runs several jobs, and the next one may start before the
        # main thread has seen the first fail.
        while True:
            try:
                sc.cancelAllJobs()
            except Exception:  # the context stopped under us: nothing left to cancel  # noqa: BLE001
                return
            if self._done.wait(0.2):
                return


def _wait_for_tasks_to_end(spark, timeout_s: float) -> None:
    """A cancelled job ends before its tasks have; stopping the context under them makes Spark
    log ERRORs (tasks rejected by a terminated pool), so give them a moment."""
    try:
        tracker = spark.sparkContext._jsc.sc().statusTracker()
        deadline = time.monotonic() + timeout_s
        while sum(e.numRunningTasks() for e in tracker.getExecutorInfos()) and time.monotonic() < deadline:
            time.sleep(0.1)
    except Exception as exc:  # only a courtesy before the stop  # noqa: BLE001
        log.debug("waiting for cancelled tasks failed: %s", exc)


def _wait_for_executors(spark, n: int, timeout_s: float, check: Callable[[], None] = lambda: None) -> None:
    """Block until ``n`` executors registered, so every run starts its work at full width;
    ``check`` raises to stop waiting (Ctrl-C)."""
    sc = spark.sparkContext
    deadline = time.monotonic() + timeout_s
    while True:
        check()
        # getExecutorMemoryStatus counts the driver's block manager too.
        alive = sc._jsc.sc().getExecutorMemoryStatus().size() - 1
        if alive >= n:
            return
        if time.monotonic() > deadline:
            raise WorkloadError(f"only {alive} of {n} executors started within {timeout_s:.0f} s",
                                "the machine is overloaded: use fewer executors or retry later")
        time.sleep(0.2)


def _user_log_config(conf: dict[str, str]) -> bool:
    """Has the user chosen a log4j configuration for Spark (which a sweep must not replace)?"""
    if os.environ.get(_LOG4J_ENV) or "log4j" in conf.get("spark.driver.extraJavaOptions", ""):
        return True
    conf_dirs = [os.environ.get("SPARK_CONF_DIR")]
    if os.environ.get("SPARK_HOME"):
        conf_dirs.append(str(Path(os.environ["SPARK_HOME"]) / "conf"))
    return any(d and (Path(d) / "log4j2.properties").is_file() for d in conf_dirs)


def _start_session(master: str, app_name: str, conf: dict[str, str], quiet: bool = True):
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    builder = SparkSession.builder.master(master).appName(app_name)
    for k, v in conf.items():
        builder = builder.config(k, v)
    # The driver JVM reads its log configuration once, when this process first starts it; the
    # variable is set only for that start, so the rest of the user's process never sees it.
    quiet = quiet and not _jvm_started() and not _user_log_config(conf)
    if quiet:
        os.environ[_LOG4J_ENV] = str(QUIET_SPARK_LOG)
    try:
        return builder.getOrCreate()
    except Exception as exc:  # py4j wraps Spark's reason (a bad master URL, no cluster) in its own  # noqa: BLE001
        java = getattr(exc, "java_exception", None)
        reason = str(java.getMessage()) if java is not None else (str(exc).strip().splitlines() or [""])[0]
        raise WorkloadError(f"Spark did not start with master {master!r}: {reason}",
                            _MASTER_FIX + ", and check that the cluster is reachable") from None
    finally:
        if quiet:
            os.environ.pop(_LOG4J_ENV, None)


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
              tasks: bool = True, warmup: bool = True, spark_logs: bool = False) -> SweepResult:
    """Run every combination of ``plan`` not yet recorded in ``store``; see the module docstring.

    Returns a :class:`SweepResult` (one outcome per combination, skipped ones included). A run
    whose job fails is recorded by the listener as failed and the sweep goes on; a rerun
    retries it. Ctrl-C (in the main thread) cancels the current application's jobs, stops it
    (recorded as failed) and raises :class:`KeyboardInterrupt`, without PySpark's tracebacks
    (:class:`_Interrupts`).

    With ``warmup`` (default), an unrecorded application first runs the workload once on the
    smallest input: the first job in a fresh driver JVM runs several times slower (class
    loading, JIT), which would make the first recorded run an outlier.

    Spark logs errors only during a sweep (:data:`QUIET_SPARK_LOG`) unless ``spark_logs`` is
    set or the user has a log4j configuration of their own.
    """
    from .capture.listener import listener_conf
    from .config import resolve_store
    from .store import io as store_io

    t0 = time.monotonic()
    store_path = resolve_store(store)
    store_io.open(store_path, create=True)  # unwritable or foreign store: fail before any run
    w = W.get(plan.workload)
    workdir = Path(workdir) if workdir else Path(store_path).parent / "sweep-work"
    local_dir = workdir / "spark-local"
    local_dir.mkdir(parents=True, exist_ok=True)

    recorded = recorded_keys(store_path, plan.workload)
    todo = [c for c in plan.combos if c.key(plan.workload) not in recorded]
    outcomes = [RunOutcome(c, "skipped") for c in plan.combos if c.key(plan.workload) in recorded]
    total = len(todo)
    if progress:
        progress(0, total, 0.0, None, f"{len(outcomes)} runs already recorded" if outcomes else "starting")

    with _Interrupts().installed() as interrupts:
        # Inputs first: generation errors surface before any application is recorded.
        data: dict[int, tuple[Path, int]] = {}
        for size in sorted({c.size_bytes for c in todo}):
            path = w.data(size, plan.seed, cache_dir)
            data[size] = (path, W.gen.data_size(path))

        if todo and warmup and not _jvm_started():
            _warm_up(w, todo[0], data[min(data)][0], plan, local_dir, store_path, tasks,
                     quiet=not spark_logs, interrupts=interrupts)

        done: list[tuple[int, float]] = []
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
                    spark.sparkContext.setLogLevel("ERROR")  # Spark's WARN lines would bury the progress bar
                    if combo.master.startswith("local-cluster"):
                        _wait_for_executors(spark, combo.executors, EXECUTOR_WAIT_S, interrupts.check)
                    outcome.result = w.run(spark, path, plan.seed)
                    outcome.status, exit_code = "succeeded", 0
                except KeyboardInterrupt:
                    exit_code = 130
                    raise
                except Exception as exc:  # the run failed: recorded as failed, retried by the next sweep  # noqa: BLE001
                    if interrupts.requested:  # its jobs were cancelled by Ctrl-C
                        exit_code = 130
                        raise KeyboardInterrupt from None
                    outcome.error = f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:300]}"
                    log.warning("run %s failed: %s", name, outcome.error)
                finally:
                    interrupts.release()
                    if exit_code == 130:
                        _wait_for_tasks_to_end(spark, 10.0)
                    _stop(spark, exit_code)
            # A Ctrl-C while a run finished or stopped: the run is recorded as it ended; stop here.
            interrupts.check()
            outcome.seconds = time.monotonic() - started
            outcomes.append(outcome)
            done.append((combo.size_bytes, outcome.seconds))
            if not verified:
                _verify_recorded(store_path, outcome.app_id)
                verified = True
            if progress:
                progress(i + 1, total, time.monotonic() - t0, _eta(done, todo[i + 1:]), name)
    return SweepResult(plan, store_path, outcomes, time.monotonic() - t0)


def _stop(spark, exit_code: int) -> None:
    """Stop the application; a non-zero exit code makes the listener record it as failed.

    A Python-side failure (an exception in the body, executors that never came, Ctrl-C) leaves
    no failed Spark job behind, and would otherwise be recorded as succeeded.
    """
    if exit_code:
        try:
            spark.sparkContext._jsc.sc().stop(exit_code)
        except Exception as exc:  # the JVM may already be gone; the Python-side stop still runs  # noqa: BLE001
            log.debug("stop(%d) failed: %s", exit_code, exc)
    spark.stop()


def _jvm_started() -> bool:
    from pyspark import SparkContext

    return SparkContext._gateway is not None


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
                if interrupts.requested:  # ... unless Ctrl-C cancelled it
                    raise KeyboardInterrupt from None
                log.warning("warm-up run failed: %s", exc)
            finally:
                interrupts.release()
                if interrupts.requested:
                    _wait_for_tasks_to_end(spark, 10.0)
                spark.stop()
        interrupts.check()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _verify_recorded(store_path: str, app_id: str | None) -> None:
    """After the first run: is the listener really recording? Better to stop now than after 70 runs."""
    from .store import io as store_io

    runs = store_io.open(store_path).read("runs", columns=["app_id"])
    if app_id not in set(runs["app_id"]):
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
    "master_for",
    "parse_list",
    "plan_sweep",
    "recorded_keys",
    "run_sweep",
]
