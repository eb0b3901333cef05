"""Sweeps: run a workload over sizes x executor counts x repeats, each run its own Spark application.

:func:`plan_sweep` (:mod:`.sweep_plan`) validates everything up front (unknown workload, a
size below the generator's minimum, more executors than this machine can start), so a bad sweep
fails before any data is generated or any run recorded. :func:`run_sweep` then

1. generates each size's input once (cached on disk, deterministic per seed and size);
2. skips combinations the store already holds as *succeeded* runs of the same sweep key
   (``spark.sparkpredict.sweep.key``, read back from the runs' ``properties_json``), so an
   interrupted sweep resumes where it stopped;
3. runs every remaining combination as its own application in *this* Python process: one
   driver JVM, a fresh SparkContext per run (stop + start costs ~0.2 s, a new driver JVM
   10-17 s). Each application has its own master (``local-cluster[E,cores,mem]`` by default),
   its own app id and is recorded by the listener with ``spark.sparkpredict.job = workload``
   and ``spark.sparkpredict.inputBytes`` = the generated input's bytes.

Because the listener's jar must be on the driver's classpath when the JVM starts, a sweep
must be the first thing to start Spark in its process (the CLI always is).
"""
from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Callable, Sequence
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
from .units import format_bytes

log = logging.getLogger(__name__)

KEY_SWEEP = "spark.sparkpredict.sweep.key"
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
            k = json.loads(props).get(KEY_SWEEP)
        except ValueError:
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
        "spark.sparkpredict.sweep.seed": str(plan.seed),
    }
    if not _is_local(combo.master) or combo.master.startswith("local["):
        # Cluster managers read this; in local[E] it records E as the executors requested.
        conf["spark.executor.instances"] = str(combo.executors)
        conf["spark.dynamicAllocation.enabled"] = "false"
    return conf


def _wait_for_executors(spark, n: int, timeout_s: float) -> None:
    """Block until ``n`` executors registered, so every run starts its work at full width."""
    sc = spark.sparkContext
    deadline = time.monotonic() + timeout_s
    while True:
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
    retries it. Ctrl-C stops the current application and re-raises :class:`KeyboardInterrupt`.

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

    # Inputs first: generation errors surface before any application is recorded.
    data: dict[int, tuple[Path, int]] = {}
    for size in sorted({c.size_bytes for c in todo}):
        path = w.data(size, plan.seed, cache_dir)
        data[size] = (path, W.gen.data_size(path))

    if todo and warmup and not _jvm_started():
        _warm_up(w, todo[0], data[min(data)][0], plan, local_dir, store_path, tasks, quiet=not spark_logs)

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
        spark = _start_session(combo.master, name, conf, quiet=not spark_logs)
        exit_code = 1
        try:
            outcome.app_id = spark.sparkContext.applicationId
            spark.sparkContext.setLogLevel("ERROR")  # Spark's WARN lines would bury the progress bar
            if combo.master.startswith("local-cluster"):
                _wait_for_executors(spark, combo.executors, EXECUTOR_WAIT_S)
            outcome.result = w.run(spark, path, plan.seed)
            outcome.status, exit_code = "succeeded", 0
        except KeyboardInterrupt:
            exit_code = 130
            raise
        except Exception as exc:  # the run failed: recorded as failed, retried by the next sweep  # noqa: BLE001
            outcome.error = f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:300]}"
            log.warning("run %s failed: %s", name, outcome.error)
        finally:
            _stop(spark, exit_code)
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
             store_path: str, tasks: bool = True, quiet: bool = True) -> None:
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
    spark = _start_session(master, f"{plan.workload}-warmup", conf, quiet=quiet)
    try:
        spark.sparkContext.setLogLevel("ERROR")
        w.run(spark, path, plan.seed)
    except Exception as exc:  # a broken workload shows up (and is recorded) in the real runs  # noqa: BLE001
        log.warning("warm-up run failed: %s", exc)
    finally:
        spark.stop()
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
