"""Stage-level features: a signature that names the same stage across runs, per-stage data and
configuration features, and the task count a stage will have at another input size.

The signature
-------------
Stage ids change from run to run (they count every stage the application ever submitted), so
a stage is identified by what does not: its **call site** (the stage name, e.g.
``count at job.py:12``, with run-specific paths and numbers removed), its **depth** in the
stage DAG (longest chain of recorded parents), and its **ordinal** among the stages with the
same call site and depth (in submission order). ``"count at job.py:12|d1|k0"`` is the first
depth-1 stage of that call site in every run of the job.
A skipped parent stands for the stage that wrote the shuffle it names (adaptive execution skips
one per reduce stage), and a call site of a thread pool's frame (every stage of an adaptive
query on Spark 4) gets the kinds of RDD the stage ran.

Task counts at another size
---------------------------
* Input stages pack files into partitions as Spark does (:func:`file_scan_tasks`; a Hadoop
  read, :func:`hadoop_split_tasks`), over the files the stage's SQL file scans selected
  (``scan_files``, the ``stage_scans`` table) or, where none was recorded, the files of equal
  size that give the recorded count; the input growing by more files or by larger ones, as
  the runs' recorded file counts grew with their input.
* Shuffle stages have ``spark.sql.shuffle.partitions`` (or ``spark.default.parallelism``)
  tasks whatever the size, unless AQE coalesced them: then Spark's coalescing rule
  (:func:`coalesced_tasks`), one task per core up to 64 MiB per core, capped by the partitions.
"""
from __future__ import annotations

import collections
import functools
import json
import math
import re
from collections.abc import Hashable, Iterable, Mapping
from itertools import islice
from typing import TYPE_CHECKING, Any

import numpy as np

from .runs import (
    DYNAMIC_ALLOCATION_KEY,
    _parse_properties,
    dynamic_allocation_on,
    local_run_executors,
)

if TYPE_CHECKING:
    import pandas as pd

#: Configuration features and their Spark defaults (used when a run's properties lack a key).
CONFIG_DEFAULTS: dict[str, float] = {
    "shuffle_partitions": 200.0,
    "max_partition_bytes": 128.0 * 2**20,
    "aqe": 1.0,
    "kryo": 0.0,
    "memory_fraction": 0.6,
    "shuffle_compress": 1.0,
}
CONFIG_FEATURES = ["executors", "executor_cores", "executor_memory_mb", "task_slots",
                   "shuffle_partitions", "max_partition_bytes", "default_parallelism",
                   "aqe", "kryo", "memory_fraction", "shuffle_compress"]
#: Data features of one stage (per task where it matters for a per-task time).
DATA_FEATURES = ["bytes_in_per_task", "bytes_out_per_task", "records_in_per_task", "num_tasks",
                 "bytes_in", "is_input_stage"]
_MB = 2.0**20
_OPEN_COST = 4 * _MB  # spark.sql.files.openCostInBytes default


def spark_bytes(value, default: float, unit: str = "b") -> float:
    """Spark's size strings (``128m``, ``1g``: binary units; a bare number is in ``unit``:
    bytes for ``maxPartitionBytes``, MiB for ``spark.executor.memory``)."""
    from ..units import spark_size

    v = spark_size(value, unit)
    return default if v is None else float(v)


def _flag(value, default: float) -> float:
    if value is None:
        return default
    return 1.0 if str(value).strip().lower() in ("true", "1", "yes") else 0.0


def _num(value, default: float) -> float:
    try:
        f = float(value)
        return default if math.isnan(f) else f
    except (TypeError, ValueError):
        return default


def run_properties(run: pd.Series | dict) -> Mapping[str, Any]:
    """The run's ``properties_json`` as a mapping; empty where it is missing, not JSON, or JSON
    of another shape (``null``, a list): a store written by another tool may hold any of them,
    and one such run failed its job's fit, and with it the whole retrain."""
    return _parse_properties(run.get("properties_json")) or {}


def run_task_cpus(run, executors: float, cores: float) -> int:
    """``spark.task.cpus`` of the run: from its properties (Spark's default 1 where they lack
    it), else, for a run without properties, the one that makes ``executors x floor(cores /
    task_cpus)`` its recorded ``task_slots``; 1 when unknown.

    Not from the slots when the properties are there: a run of several resource profiles
    counts each executor's slots by its own profile (rp_nosql_eventlog: 6 slots on 3 executors
    of 4 cores, at 1 cpu a task by default), and read back they made 2 cpus a task."""
    props = run_properties(run)
    value = props.get("spark.task.cpus")
    try:
        if value is not None and int(str(value).strip()) >= 1:
            return int(str(value).strip())
    except ValueError:
        pass  # not a number: fall back to the slots
    if value is None and any(str(k).startswith("spark.") for k in props):
        return 1
    slots, execs, cores = (int(_num(v, 0)) for v in (run.get("task_slots"), executors, cores))
    if slots > 0 and execs > 0 and cores > 0 and slots % execs == 0:
        fits = [t for t in range(1, cores + 1) if cores // t == slots // execs]
        # several fit (4 cores, 1 slot: 3 or 4); Spark users set a divisor of the cores
        exact = [t for t in fits if cores % t == 0]
        if fits:
            return (exact or fits)[0]
    return 1


def query_slots(executors: float, cores: float, task_cpus: float) -> float:
    """Task slots of ``executors`` of ``cores`` each: ``executors x floor(cores / task_cpus)``
    (at least one per executor), as the recorded runs' ``task_slots``."""
    tc = max(int(task_cpus) if np.isfinite(task_cpus) else 1, 1)
    return float(executors) * max(int(cores) // tc, 1)


def config_features(run: pd.Series | dict) -> dict[str, float]:
    """The configuration features of one runs-table row (``properties_json`` plus run columns)."""
    props = run_properties(run)
    execs = _num(run.get("executors_max"), _num(run.get("executors"), _num(props.get("spark.executor.instances"), 1)))
    cores = _num(run.get("executor_cores"), _num(props.get("spark.executor.cores"), 1))
    mem = _num(run.get("executor_memory_mb"),
               spark_bytes(props.get("spark.executor.memory"), 1024 * _MB, unit="m") / _MB)
    tcpus = run_task_cpus(run, execs, cores)
    slots = _num(run.get("task_slots"), query_slots(execs, cores, tcpus))
    # local[N] records one executor of N threads; a sweep's "E executors" there were E threads,
    # and queries ask for E executors of the recorded cores (as the runs table reads it, from the
    # run's own settings: without them local[4] with spark.executor.cores=2 read as 4 x 1)
    local = local_run_executors(run.get("master"), _num(run.get("executors_requested"), execs), slots,
                                run.get("properties_json"))
    if local is not None:
        execs, cores = local
    mean = _num(run.get("executors_mean"), math.nan)
    if dynamic_allocation_on(props.get(DYNAMIC_ALLOCATION_KEY)) and mean > 0 and local is None:
        # the most executors ever held may have lasted seconds: the run's tasks saw the mean
        # (the whole-job runs table reads such a run the same way); a local master has no
        # dynamic allocation, and its mean is the driver's one executor, not its threads
        execs, slots = mean, query_slots(mean, cores, tcpus)
    aqe = _flag(props.get("spark.sql.adaptive.enabled"), CONFIG_DEFAULTS["aqe"])
    coalesce = coalesce_settings(props)
    partitions = _num(props.get("spark.sql.shuffle.partitions"), CONFIG_DEFAULTS["shuffle_partitions"])
    if aqe and coalesce["aqe_coalesce"]:
        # a shuffle adaptive execution may coalesce starts from these partitions (SQLConf.numShufflePartitions)
        partitions = _num(props.get("spark.sql.adaptive.coalescePartitions.initialPartitionNum"), partitions)
    return {
        "executors": execs, "executor_cores": cores, "executor_memory_mb": mem, "task_slots": slots,
        "shuffle_partitions": partitions,
        "max_partition_bytes": spark_bytes(props.get("spark.sql.files.maxPartitionBytes"),
                                           CONFIG_DEFAULTS["max_partition_bytes"]),
        # Spark's default is the executors' total cores, not their task slots (spark.task.cpus)
        "default_parallelism": _num(props.get("spark.default.parallelism"), slots * tcpus),
        # Not a model input: how many cores a task takes, for a query's task slots (query_slots).
        "task_cpus": float(tcpus),
        # Not a model input: whether spark.default.parallelism was set (else it follows the cores).
        "parallelism_explicit": 0.0 if props.get("spark.default.parallelism") is None else 1.0,
        "aqe": aqe,
        # Not model inputs: how adaptive execution coalesces shuffle partitions (coalesced_tasks).
        **coalesce,
        # Not model inputs: how a SQL file scan packs its files into partitions (file_scan_tasks).
        **file_scan_settings(props),
        "kryo": 1.0 if "kryo" in str(props.get("spark.serializer", "")).lower() else 0.0,
        "memory_fraction": _num(props.get("spark.memory.fraction"), CONFIG_DEFAULTS["memory_fraction"]),
        "shuffle_compress": _flag(props.get("spark.shuffle.compress"), CONFIG_DEFAULTS["shuffle_compress"]),
    }


def coalesce_settings(props: Mapping[str, Any]) -> dict[str, float]:
    """How adaptive execution coalesces a run's shuffle partitions (Spark's defaults where the
    properties lack a key): whether it does, the advisory and the smallest partition size, and
    the fewest partitions it aims at: ``minPartitionNum`` where set, else NaN
    (``spark.default.parallelism``) with ``parallelismFirst``, the default, and 1 without it
    (``CoalesceShufflePartitions``: a set ``minPartitionNum`` holds whatever ``parallelismFirst``
    says)."""
    advisory = props.get("spark.sql.adaptive.advisoryPartitionSizeInBytes",
                         props.get("spark.sql.adaptive.shuffle.targetPostShuffleInputSize"))
    first = _flag(props.get("spark.sql.adaptive.coalescePartitions.parallelismFirst"), 1.0)
    fewest = _num(props.get("spark.sql.adaptive.coalescePartitions.minPartitionNum"), math.nan)
    return {"aqe_coalesce": _flag(props.get("spark.sql.adaptive.coalescePartitions.enabled"), 1.0),
            "aqe_advisory_bytes": spark_bytes(advisory, 64 * _MB),
            "aqe_min_partition_bytes": spark_bytes(
                props.get("spark.sql.adaptive.coalescePartitions.minPartitionSize"), _MB),
            "aqe_min_partitions": fewest if math.isfinite(fewest) or first else 1.0}


def file_scan_settings(props: Mapping[str, Any]) -> dict[str, float]:
    """How a run's SQL file scans pack files into partitions (``FilePartition``; Spark's defaults
    where the properties lack a key): the open cost each file (and each split of one) counts as,
    the fewest partitions the split size aims at (``spark.sql.files.minPartitionNum``, else
    ``spark.sql.leafNodeDefaultParallelism``; NaN: ``spark.default.parallelism``) and the most
    partitions (``spark.sql.files.maxPartitionNum``; NaN: no limit)."""
    fewest = _num(props.get("spark.sql.files.minPartitionNum"),
                  _num(props.get("spark.sql.leafNodeDefaultParallelism"), math.nan))
    most = _num(props.get("spark.sql.files.maxPartitionNum"), math.nan)
    return {"files_open_cost_bytes": spark_bytes(props.get("spark.sql.files.openCostInBytes"), _OPEN_COST),
            "files_min_partitions": fewest if fewest > 0 else math.nan,
            "files_max_partitions": most if most > 0 else math.nan}


#: The mean factor by which a map task's recorded block sizes overstate them: ``MapStatus``
#: stores each size as a power of 1.1 rounded up, and adaptive execution coalesces by those
#: sizes (exact averages past ``spark.shuffle.minNumPartitionsToHighlyCompress``, 2000).
_MAP_STATUS_ROUNDING = 0.1 / math.log(1.1)


def _coalescing(shuffle_bytes: float, partitions: float, parallelism: float, advisory_bytes: float,
                min_partition_bytes: float, min_partitions: float) -> tuple[int, float, float]:
    """(partitions, bytes as the map statuses report them, target bytes of a coalesced group)
    of a shuffle adaptive execution coalesces: ``max(minPartitionSize, min(advisory, bytes /
    fewest))``, ``fewest`` being ``spark.default.parallelism`` unless minPartitionNum is set."""
    n_parts = max(int(partitions), 1)
    fewest = parallelism if not np.isfinite(min_partitions) else min_partitions
    total = max(float(shuffle_bytes), 0.0) * (_MAP_STATUS_ROUNDING if n_parts <= 2000 else 1.0)
    target = max(float(min_partition_bytes),
                 min(float(advisory_bytes), max(math.ceil(total / max(float(fewest), 1.0)), 16)))
    return n_parts, total, target


def coalesced_tasks(shuffle_bytes: float, partitions: float, parallelism: float,
                    advisory_bytes: float = 64 * _MB, min_partition_bytes: float = _MB,
                    min_partitions: float = math.nan) -> int:
    """Tasks of a shuffle stage whose partitions adaptive execution coalesced, by Spark's rule
    (``ShufflePartitionsUtil.coalescePartitions``) on partitions of equal size: a target of
    ``max(minPartitionSize, min(advisory, bytes / fewest))``, ``fewest`` being
    ``spark.default.parallelism`` by default; neighbours packed while they fit it, a group under
    ``minPartitionSize`` packed on, and a last one under it joined to the one before. So a small
    shuffle runs in one task per core whatever its bytes, and grows past that only beyond 64 MiB
    per core; at most the shuffle's partitions."""
    n_parts, total, target = _coalescing(shuffle_bytes, partitions, parallelism, advisory_bytes,
                                         min_partition_bytes, min_partitions)
    if total <= 0:
        return 1
    size = total / n_parts
    # each group packs the partitions that fit the target, and more while under the minimum
    per = max(1, math.floor(target / size + 1e-9), math.ceil(float(min_partition_bytes) / size - 1e-9))
    groups, left = divmod(n_parts, per)
    if left and left * size >= float(min_partition_bytes):
        groups += 1
    return max(1, min(groups, n_parts))  # all under the minimum: one


def _spark_packing(runs: list[tuple[int, float]], target: float, min_bytes: float) -> int:
    """Groups ``ShufflePartitionsUtil.coalescePartitions`` makes of shuffle partitions given in
    order as runs of ``(count, bytes each)``, followed step by step: a group takes the next
    partition while it fits ``target``; one under ``min_bytes`` takes it all the same, or joins
    the group before when that one is smaller than the partition; a last group under
    ``min_bytes`` joins the one before. A run of equal partitions is taken as many at a time
    as fit, so the steps are about the groups, not the partitions."""
    groups, size, before, started = 0, 0.0, 0.0, False
    for count, each in runs:
        left = int(count)
        while left > 0:
            if started and size + each > target:
                if size >= min_bytes:  # a new group starts at this partition
                    groups += size > 0
                    before, size = size, each
                elif 0 < before < each:  # too small: joins the group before
                    before, size = before + size, each
                else:  # too small: packs on
                    size += each
                left -= 1
                continue
            fit = left if each <= 0 else int(max(1.0, math.floor((target - size) / each + 1e-9)))
            take = min(left, fit) if started else 1
            size, left, started = size + take * each, left - take, True
    if not (size < min_bytes and before > 0):
        groups += size > 0 or groups == 0
    return max(groups, 1)


def skewed_coalesced_tasks(shuffle_bytes: float, partitions: float, parallelism: float, hot_share: float,
                           advisory_bytes: float = 64 * _MB, min_partition_bytes: float = _MB,
                           min_partitions: float = math.nan) -> int:
    """Tasks of a coalesced shuffle stage (:func:`coalesced_tasks`) whose partitions are not of
    equal size: one, in the middle, also holds ``hot_share`` of the bytes (the hot keys of a
    skewed join or aggregation), the others share the rest equally; Spark's packing followed
    step by step (:func:`_spark_packing`). The hot partition is a group of its own once it
    passes the target, and the small ones around it pack on into it or into their neighbours,
    so a skewed shuffle runs fewer tasks than equal partitions of its bytes would. With
    ``hot_share`` 0 it is :func:`coalesced_tasks`."""
    n_parts, total, target = _coalescing(shuffle_bytes, partitions, parallelism, advisory_bytes,
                                         min_partition_bytes, min_partitions)
    if total <= 0:
        return 1
    h = min(max(float(hot_share), 0.0), 1.0)
    each, mid = total * (1.0 - h) / n_parts, (n_parts - 1) // 2
    runs = [(mid, each), (1, each + total * h), (n_parts - 1 - mid, each)]
    return min(_spark_packing(runs, target, float(min_partition_bytes)), n_parts)


_CALLSITE_AT = re.compile(r"^(.*? at [^:\s]+?(?::\d+)?)(?:\s|$)")


_JVM_REFLECTION = re.compile(
    r"^(<unknown>|NativeMethodAccessorImpl\.java|DirectMethodHandleAccessor\.java|"
    r"GeneratedMethodAccessor\d*|DelegatingMethodAccessorImpl\.java|Method\.java)(:\d+)?$")


def call_site(name: str | None) -> str:
    """The stable part of a stage name: ``'count at job.py:12'``; paths and counts removed.

    >>> call_site("collect at /tmp/x/nds/nds_power.py:191")
    'collect at nds_power.py:191'
    >>> call_site("count at NativeMethodAccessorImpl.java:0")
    'count at <py4j>'
    >>> call_site("Listing leaf files and directories for 100 paths:<br/>file:/data/a")
    'Listing leaf files and directories for # paths:'
    """
    text = re.split(r"<br/>|\n", str(name or ""), maxsplit=1)[0].strip()
    m = _CALLSITE_AT.match(text)
    if m:
        head, _, where = m.group(1).rpartition(" at ")
        where = where.rsplit('/', 1)[-1]
        # An action called from Python through Py4J is named after whichever JVM frame Spark
        # found first, and that varies from run to run of the same code.
        if _JVM_REFLECTION.match(where):
            where = "<py4j>"
        return f"{head} at {where}"
    return re.sub(r"\d+", "#", text)


def _parents(raw) -> list[int]:
    if isinstance(raw, str) and raw:
        try:
            return [int(x) for x in json.loads(raw)]
        except (ValueError, TypeError):
            return []
    return []


def final_attempts(stages: pd.DataFrame) -> pd.DataFrame:
    """One row per (run, stage id): the succeeded attempt that ran the most tasks, the last of
    those tied (a failed attempt only where none succeeded).

    Not simply the last: after a fetch failure Spark resubmits the map stage to recompute only
    the lost partitions, and that attempt's 3 of 64 tasks had stood for the whole stage (a plan
    of 16 tasks and 384 MiB where the stage ran 64 and 8 GiB, a 16 GiB run predicted at -64 %).
    Its tasks stay in the run's timeline, which replays every attempt. A stage whose failed
    attempt was rerun in part (the reduce stage after a fetch failure: its succeeded attempt ran
    only the partitions left) still stands as that part: its full count is not known here."""
    st = stages.copy()
    st["stage_attempt_id"] = st["stage_attempt_id"].fillna(0).astype(int)
    ok = _succeeded(st)
    tasks = _numeric(st["num_tasks"]) if "num_tasks" in st else 0
    return (st.assign(_ok=ok, _tasks=tasks)
              .sort_values(["run_id", "stage_id", "_ok", "_tasks", "stage_attempt_id"], kind="stable")
              .drop_duplicates(["run_id", "stage_id"], keep="last")
              .drop(columns=["_ok", "_tasks"]))


def fold_partial_reruns(st: pd.DataFrame, stages: pd.DataFrame,
                        tasks: pd.DataFrame | None) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """``st`` (one succeeded attempt per stage, :func:`final_attempts`) with each stage that a
    later attempt finished in part made whole again, and ``tasks`` with the rows it took in.

    After a fetch failure (an executor lost under spot or preemptible capacity) Spark reruns the
    failed reduce stage for the partitions its failed attempt had not finished: a real
    ``local-cluster`` run whose executor was killed mid-reduce finished 5 of 8 partitions in
    attempt 0 and 3 in attempt 1. That attempt alone stood for the stage: 3 tasks and 3/8 of
    its shuffle read taught the task-count rule, and a reference run planned the stage at 3/8
    of its bytes. Here the stage counts the tasks of its largest attempt and adds, to the
    succeeded attempt's sums, the succeeded tasks of the failed attempts before it (their
    stage rows' sums where the run has no task rows: those hold the failed tasks' metrics too);
    its duration is the sum of those attempts'. Those succeeded tasks fill at most the
    partitions the succeeded attempt did not run: a map stage's outputs on a lost executor are
    run again by the later attempt, and the tasks on executors that outlived the failure are
    taken first (:func:`_within_room`). A stage rerun whole, or a map stage rerun for
    lost outputs after it had succeeded, is not folded: its succeeded attempt ran every task."""
    import pandas as pd

    from ..store.schema import METRIC_NAMES

    if st.empty or "status" not in stages or "num_tasks" not in stages:
        return st, tasks
    key, at = ["run_id", "stage_id"], ["run_id", "stage_id", "stage_attempt_id"]
    timing = ["num_task_rows", "duration_ms", "submission_ms", "completion_ms"]
    stages = stages.reindex(columns=list(dict.fromkeys([*stages.columns, *timing])))
    att = stages.assign(stage_attempt_id=stages["stage_attempt_id"].fillna(0).astype(int),
                        _n=_numeric(stages["num_tasks"]))
    att = att.merge(st[[*key, "stage_attempt_id", "num_tasks"]].rename(
        columns={"stage_attempt_id": "_chosen", "num_tasks": "_chosen_n"}), on=key)
    att = att[~_succeeded(att) & (att["stage_attempt_id"] < att["_chosen"])]
    full = att.groupby(key)["_n"].max()
    chosen_n = _numeric(att.groupby(key)["_chosen_n"].first())
    full = full[full > chosen_n]
    att = att[pd.MultiIndex.from_frame(att[key]).isin(full.index)]
    if att.empty:
        return st, tasks
    metrics = [c for c in METRIC_NAMES if c in st]
    # The partitions the succeeded attempt did not run: the failed attempts' succeeded tasks
    # fill at most these. A map stage's outputs on an executor lost with it are recomputed by
    # the later attempt too, and the store keeps no partition to tell them by: a real
    # local-cluster run's map stage read 10 tasks and 5584 bytes where it ran 8 and 4464.
    # A stage row's sums (no task rows) cannot leave them out: they hold those tasks too.
    room = (full - chosen_n).rename("_room")
    add = pd.DataFrame({**{c: att[c] for c in at}, "_chosen": att["_chosen"],
                        "_rows": _numeric(att["num_task_rows"]),
                        "_dur": pd.to_numeric(att["duration_ms"], errors="coerce").fillna(
                            _numeric(att["completion_ms"]) - _numeric(att["submission_ms"])),
                        **{c: _numeric(att[c]).astype(float) for c in metrics}}).set_index(at)
    if tasks is not None and len(tasks):
        tk = tasks.assign(stage_attempt_id=tasks["stage_attempt_id"].fillna(0).astype(int))
        into = pd.Series(pd.MultiIndex.from_frame(tk[at]).map(add["_chosen"].to_dict().get), index=tk.index)
        into = pd.to_numeric(into, errors="coerce")
        ok = into.notna()
        if "status" in tk:
            ok &= tk["status"].astype(str) == "SUCCESS"
        ok &= _within_room(tk, ok, st, room)
        recorded = add.index.isin(pd.MultiIndex.from_frame(tk.loc[into.notna(), at]))
        g = tk[ok].groupby(at)
        sums = g[metrics].sum().astype(float).assign(_rows=g.size().astype(float)).reindex(add.index).fillna(0.0)
        add.loc[recorded, [*metrics, "_rows"]] = sums.loc[recorded, [*metrics, "_rows"]]
        # the folded attempts' succeeded tasks count as the stage's own in its mean task time
        tasks = tk.assign(stage_attempt_id=into.where(ok, tk["stage_attempt_id"]).astype(int))
    folded = add.groupby(level=key)[[*metrics, "_rows", "_dur"]].sum()
    st = st.reindex(columns=list(dict.fromkeys([*st.columns, *timing])))
    hit = pd.MultiIndex.from_frame(st[key]).isin(folded.index)
    f = folded.reindex(pd.MultiIndex.from_frame(st.loc[hit, key]))
    st = st.astype({c: float for c in [*metrics, "num_task_rows", "duration_ms", "num_tasks"]})
    for c in metrics:
        st.loc[hit, c] = st.loc[hit, c].fillna(0).to_numpy() + f[c].to_numpy()
    st.loc[hit, "num_task_rows"] = st.loc[hit, "num_task_rows"].fillna(0).to_numpy() + f["_rows"].to_numpy()
    own_ms = st.loc[hit, "duration_ms"].fillna(_numeric(st.loc[hit, "completion_ms"])
                                                - _numeric(st.loc[hit, "submission_ms"]))
    st.loc[hit, "duration_ms"] = own_ms.to_numpy() + f["_dur"].to_numpy()
    st.loc[hit, "num_tasks"] = full.reindex(f.index).to_numpy()
    return st, tasks


def _within_room(tk: pd.DataFrame, ok: pd.Series, st: pd.DataFrame, room: pd.Series) -> pd.Series:
    """Of the failed attempts' succeeded tasks ``tk[ok]``, those that fill a stage's ``room``
    (the partitions its succeeded attempt did not run), the rest False. First the tasks whose
    executor still launched a task once the succeeded attempt was submitted: a lost
    executor's map outputs are the ones run again. Then by finish time."""
    import pandas as pd

    key = ["run_id", "stage_id"]
    if not ok.any():
        return pd.Series(True, index=tk.index)
    tk = tk.reindex(columns=list(dict.fromkeys([*tk.columns, "executor_id", "launch_ms", "finish_ms"])))
    cand = tk[ok]
    start = st.reindex(columns=[*key, "submission_ms"]).set_index(key)["submission_ms"]
    at_start = _numeric(pd.Series(pd.MultiIndex.from_frame(cand[key]).map(start.to_dict().get),
                                  index=cand.index))
    execs = tk[["run_id", "executor_id", "launch_ms"]].assign(launch_ms=_numeric(tk["launch_ms"]))
    last = execs.groupby(["run_id", "executor_id"])["launch_ms"].max()
    alive = pd.Series(pd.MultiIndex.from_frame(cand[["run_id", "executor_id"]]).map(last.to_dict().get),
                      index=cand.index).astype(float) >= at_start
    order = cand.assign(_lost=~alive, _fin=_numeric(cand["finish_ms"])).sort_values(["_lost", "_fin"])
    rank = order.groupby(key).cumcount()
    limit = pd.Series(pd.MultiIndex.from_frame(order[key]).map(room.to_dict().get), index=order.index)
    keep = rank < pd.to_numeric(limit, errors="coerce").fillna(float("inf"))
    return keep.reindex(tk.index, fill_value=True)


def _succeeded(st: pd.DataFrame) -> Any:
    """Per stage row, whether it succeeded (a row without a status did: older stores)."""
    if "status" not in st:
        return True
    return st["status"].fillna("succeeded").astype(str).str.lower().isin(["succeeded", "complete", "completed"])


def _numeric(col: pd.Series) -> pd.Series:
    """A column as numbers, what cannot be read as 0."""
    import pandas as pd

    return pd.to_numeric(col, errors="coerce").fillna(0)


#: Call sites of a thread pool's frame, not of the application's code: Spark 4 submits each
#: stage of an adaptive query from such a thread (``$anonfun$withThreadLocalCaptured$1 at
#: CompletableFuture.java:1768``), so every stage of a DataFrame job shares one.
_POOL_THREAD = re.compile(r" at (CompletableFuture|ThreadPoolExecutor|ForkJoin\w*|FutureTask|Thread)\.java")


def rdd_kinds(raw) -> list[str]:
    """The kinds of RDD a stage ran (its ``rdd_names_json``): each name's first word, since an
    RDD named after its plan (``AdaptiveSparkPlan isFinalPlan=false +- HashAggregate(keys=[word#137]
    ...``) carries run-specific ids."""
    try:
        names = json.loads(raw) if isinstance(raw, str) and raw else []
    except ValueError:
        names = []
    out = []
    for n in names if isinstance(names, list) else []:
        m = re.match(r"[\w$.]+", str(n).strip())
        out.append(m.group(0) if m else "?")
    return out


def _rdd_shape(raw) -> str:
    """The kinds of RDD a stage ran (:func:`rdd_kinds`), as a sorted multiset
    (``FileScanRDD,MapPartitionsRDD*3``)."""
    counts: dict[str, int] = {}
    for kind in rdd_kinds(raw):
        counts[kind] = counts.get(kind, 0) + 1
    return ",".join(n if c == 1 else f"{n}*{c}" for n, c in sorted(counts.items()))


def _computed_parents(g: pd.DataFrame, ids: list[int]) -> dict[int, list[int]]:
    """Per stage of one run, its parents that have a row; a parent without one (a skipped stage,
    whose shuffle an earlier stage had written) stands for the earlier stages that wrote what
    the child read: exactly its shuffle bytes, one stage per skipped parent.

    Adaptive execution runs each shuffle's map stage as a job of its own, and the job after it
    names a new, skipped stage for the same shuffle as the reduce stage's parent. Every stage of
    an adaptive query had read as depth 0, told apart by its ordinal alone, which shifted
    whenever the plan did (a broadcast join at one size, a sort-merge join at the next)."""
    import pandas as pd

    pos = {s: i for i, s in enumerate(ids)}
    raw = g["parent_stage_ids_json"] if "parent_stage_ids_json" in g else pd.Series([None] * len(g))

    def col(c: str) -> list[float]:
        return (pd.to_numeric(g[c], errors="coerce").fillna(0).tolist() if c in g else [0.0] * len(g))

    write, read = col("shuffle_write_bytes"), col("shuffle_read_bytes")
    sub = pd.to_numeric(g["submission_ms"], errors="coerce").fillna(np.inf).tolist()
    comp = (pd.to_numeric(g["completion_ms"], errors="coerce").fillna(np.inf).tolist()
            if "completion_ms" in g else [np.inf] * len(g))
    # stages that wrote shuffle output, latest completed first; and by the bytes they wrote
    writers = sorted((j for j in range(len(ids)) if write[j] > 0), key=lambda j: -comp[j])
    by_bytes: dict[float, list[int]] = {}
    for j in writers:
        by_bytes.setdefault(write[j], []).append(j)
    out: dict[int, list[int]] = {}
    for i, (s, r) in enumerate(zip(ids, raw)):
        listed = [p for p in _parents(r) if p != s]
        ps = [p for p in listed if p in pos]
        missing = len(listed) - len(ps)
        if missing in (1, 2) and read[i] > 0:
            want = read[i] - sum(write[pos[p]] for p in ps)

            def before(j: int, i: int = i, ps: list[int] = ps) -> bool:
                return j != i and ids[j] not in ps and comp[j] <= sub[i]

            found: list[int] = []
            if missing == 1:
                found = next(([ids[j]] for j in by_bytes.get(want, []) if before(j)), [])
            else:  # a join's two sides, among the latest writers (a pair search is quadratic)
                recent = list(islice((j for j in writers if before(j)), 64))
                found = next(([ids[a], ids[b]] for x, a in enumerate(recent) for b in recent[x + 1:]
                              if write[a] + write[b] == want), [])
            ps += found
        out[s] = ps
    return out


def stage_signatures(stages: pd.DataFrame) -> pd.Series:
    """Signature of each row of a stages table (one row per stage: see :func:`final_attempts`).

    Depends only on names and the parent structure inside each run, never on ids, so it is
    the same for the same stage in two runs of one job. Stages submitted in the same *epoch*
    (between the same stage completions, e.g. the two scans of a join) come in no stable order,
    neither by id nor by time: among those, the ordinal follows the bytes they read (largest
    first), which keeps the fact table's scan apart from the dimension table's in every run.
    """
    import pandas as pd

    out = pd.Series(index=stages.index, dtype=object)
    for _, g in stages.groupby("run_id", sort=False):
        sub = pd.to_numeric(g["submission_ms"], errors="coerce")
        comp = np.sort(pd.to_numeric(g.get("completion_ms", sub), errors="coerce").dropna().to_numpy(float))

        def num(c: str, g: pd.DataFrame = g) -> pd.Series | float:
            return pd.to_numeric(g[c], errors="coerce").fillna(0) if c in g else 0.0

        g = g.assign(_epoch=np.searchsorted(comp, sub.fillna(np.inf).to_numpy(float), side="left"),
                     _bytes=-(num("input_bytes") + num("shuffle_read_bytes")), _n=-num("num_tasks"))
        g = g.sort_values(["_epoch", "_bytes", "_n", "stage_id"], kind="stable")
        ids = [int(s) for s in g["stage_id"]]
        parents = _computed_parents(g, ids)
        depth: dict[int, int] = {}

        def d(s: int, seen: frozenset = frozenset(), depth: dict[int, int] = depth,
              parents: dict[int, list[int]] = parents) -> int:
            if s not in depth:
                ps = [p for p in parents[s] if p not in seen]
                depth[s] = 1 + max((d(p, seen | {s}) for p in ps), default=-1)
            return depth[s]

        seen_count: dict[tuple[str, int], int] = {}
        shapes = g["rdd_names_json"] if "rdd_names_json" in g else pd.Series([None] * len(g), index=g.index)
        for idx, s, name, rdds in zip(g.index, ids, g["name"], shapes):
            site = call_site(name)
            if _POOL_THREAD.search(site):
                site = f"{site} [{_rdd_shape(rdds)}]"
            key = (site, d(s))
            k = seen_count.get(key, 0)
            seen_count[key] = k + 1
            out[idx] = f"{key[0]}|d{key[1]}|k{k}"
    return out


def stage_table(runs: pd.DataFrame, stages: pd.DataFrame, tasks: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per (run, stage) with signature, data and configuration features and targets.

    Targets: ``task_ms`` (mean duration of the stage's succeeded tasks, from task rows, else, or
    where task rows are missing, from the stage's summed run, deserialize and serialization times) and ``stage_ms`` (recorded
    submission to completion). Run columns ``input_bytes`` and ``job`` come along.
    """
    import pandas as pd

    from ..store.schema import TABLES

    stages = stages.reindex(columns=list(dict.fromkeys([*stages.columns, *TABLES["stages"].names])))
    own = stages[stages["run_id"].isin(runs["run_id"])]
    st = final_attempts(own)
    st = st[_succeeded(st)] if "status" in st else st
    st, tasks = fold_partial_reruns(st.copy(), own, tasks)
    st["signature"] = stage_signatures(st)
    n_rows = st["num_task_rows"].astype(float).where(st["num_task_rows"].notna(), st["num_tasks"].astype(float))
    n_rows = n_rows.where(n_rows > 0, st["num_tasks"].astype(float)).clip(lower=1)
    sum_ms = (st["executor_run_time_ms"].fillna(0).astype(float)
              + st["executor_deserialize_time_ms"].fillna(0).astype(float)
              + st["result_serialization_time_ms"].fillna(0).astype(float))
    st["task_ms"] = sum_ms / n_rows
    if tasks is not None and len(tasks):
        tk = tasks[tasks["run_id"].isin(st["run_id"])]
        tk = tk.assign(stage_attempt_id=tk["stage_attempt_id"].fillna(0).astype(int))
        dur = tk["duration_ms"].astype(float).where(tk["duration_ms"].notna(),
                                                    tk["finish_ms"].astype(float) - tk["launch_ms"].astype(float))
        at = ["run_id", "stage_id", "stage_attempt_id"]
        # a failed try (retried) or a killed copy (speculation) is no partition's time: a local
        # run whose partition 2 failed once after 2 s read 840 ms a task, its 8 successes 656
        done = (tk["status"].isna() | (tk["status"].astype(str) == "SUCCESS")) if "status" in tk \
            else pd.Series(True, index=tk.index)
        m = pd.DataFrame({"_mean_task_ms": tk.assign(_d=dur)[done].groupby(at)["_d"].mean(),
                          "_task_rows": tk.groupby(at).size()})
        st = st.merge(m, left_on=["run_id", "stage_id", "stage_attempt_id"], right_index=True, how="left")
        # Fewer rows than the stage summed means rows were lost (a listener whose store failed
        # drops task rows beyond its cap): their mean would describe some of the tasks only,
        # so the stage's own sums serve. Rows are never fewer otherwise (late tasks only add).
        whole = st["num_task_rows"].isna() | (st["_task_rows"] >= st["num_task_rows"].astype(float))
        st["task_ms"] = st["_mean_task_ms"].where(whole).fillna(st["task_ms"])
        st = st.drop(columns=["_mean_task_ms", "_task_rows"])
    st["stage_ms"] = st["duration_ms"].astype(float).where(
        st["duration_ms"].notna(), st["completion_ms"].astype(float) - st["submission_ms"].astype(float))

    def f0(c: str) -> pd.Series:
        # zeros as a Series, not 0.0: is_input_stage below calls .astype on the comparison
        return st[c].fillna(0).astype(float) if c in st else pd.Series(0.0, index=st.index)

    st["num_tasks"] = st["num_tasks"].astype(float)
    # the files the stage's SQL file scans selected (models.stage_data.with_scan_files)
    st["scan_files"] = pd.to_numeric(st["scan_files"], errors="coerce").astype(float) \
        if "scan_files" in st else np.nan
    st["is_input_stage"] = ((f0("input_bytes") > 0) & (f0("input_bytes") >= f0("shuffle_read_bytes"))).astype(float)
    st["bytes_in"] = scan_input_bytes(st, runs, f0("input_bytes"), f0("input_records")) + f0("shuffle_read_bytes")
    st["bytes_out"] = f0("output_bytes") + f0("shuffle_write_bytes")
    st["records_in"] = f0("input_records") + f0("shuffle_read_records")
    nt = st["num_tasks"].clip(lower=1)
    st["bytes_in_per_task"] = st["bytes_in"] / nt
    st["bytes_out_per_task"] = st["bytes_out"] / nt
    st["records_in_per_task"] = st["records_in"] / nt
    conf = pd.DataFrame([{"run_id": r["run_id"], "job": r.get("job"),
                          "run_input_bytes": _num(r.get("input_bytes"), np.nan), **config_features(r)}
                         for _, r in runs.iterrows()]).drop_duplicates("run_id", keep="last")
    st = st.merge(conf, on="run_id", how="left")
    st["waves"] = np.ceil(st["num_tasks"] / st["task_slots"].clip(lower=1))
    return st.reset_index(drop=True)


def scan_input_bytes(st: pd.DataFrame, runs: pd.DataFrame, input_bytes: pd.Series,
                     input_records: pd.Series) -> pd.Series:
    """Bytes each input stage of ``st`` read: its tasks' input metric, or, where a run's input
    stages sum to under half its input (``runs.input_bytes``), that input shared among them by
    the records they read.

    Parquet on Spark 4 reads "vectored" (docs/capture.md): the tasks' input metric counts about
    the files' footers (41 KB for 17.5 MB of files), while the run's input is the size of the
    files its scans selected. Taken as a scan's bytes, the footers made an input stage read
    about the same per task at any size: a task count by the file splits that never grew, and
    a per-task time (ms per MiB + 1) that stayed at the recorded one when the data doubled.
    Records do not depend on how the reader fetched the columns."""
    import pandas as pd

    run_in = st["run_id"].map(runs.drop_duplicates("run_id", keep="last").set_index("run_id")["input_bytes"])
    run_in = pd.to_numeric(run_in, errors="coerce").fillna(0.0)
    scan = st["is_input_stage"] > 0
    sums = input_bytes.where(scan, 0.0).groupby(st["run_id"]).transform("sum")
    recs = input_records.where(scan, 0.0)
    rec_sums = recs.groupby(st["run_id"]).transform("sum")
    under = scan & (run_in > 2 * sums) & (rec_sums > 0)
    return input_bytes.where(~under, run_in * recs / rec_sums.where(rec_sums > 0, 1.0))


def run_config(runs: pd.DataFrame) -> pd.DataFrame:
    """``run_id`` and the configuration features of each store run (from ``properties_json``),
    to give a query the settings its run will use. ``default_parallelism`` is left empty when the
    run did not set it (it then follows the cores)."""
    import pandas as pd

    rows = []
    for _, r in runs.iterrows():
        c = config_features(r)
        if not c.pop("parallelism_explicit"):
            c["default_parallelism"] = np.nan
        rows.append({"run_id": r["run_id"], **{k: c[k] for k in CONFIG_FEATURES[4:]}})
    return pd.DataFrame(rows)


def waves(num_tasks, slots):
    """Task waves: ``ceil(tasks / slots)`` (0 tasks -> 0 waves). Works on scalars and arrays."""
    t = np.asarray(num_tasks, dtype=float)
    s = np.maximum(np.asarray(slots, dtype=float), 1.0)
    w = np.ceil(t / s)
    return w if w.ndim else float(w)


def count_rule(bytes_seen: Iterable[float], tasks_seen: Iterable[int], default_split: float,
               cap: float | None = None):
    """Learn ``tasks = max(floor, ceil(bytes / split))`` (capped) from recorded (bytes, tasks).

    Returns a function of the new byte count. Runs whose count is above the smallest one were
    split-bound; their median bytes per task is the split. Without such runs the configured
    split is used.
    """
    b = np.asarray(list(bytes_seen), dtype=float)
    n = np.asarray(list(tasks_seen), dtype=float)
    ok = np.isfinite(b) & np.isfinite(n) & (n > 0)
    b, n = b[ok], n[ok]
    floor = float(n.min()) if len(n) else 1.0
    grew = n > floor
    split = float(np.median(b[grew] / n[grew])) if grew.any() else float(default_split)
    split = max(split, 1.0)

    def rule(new_bytes: float) -> int:
        t = max(floor, math.ceil(max(float(new_bytes), 0.0) / split))
        return int(min(t, cap) if cap else t)

    rule.split_bytes = split  # type: ignore[attr-defined]
    rule.floor = floor  # type: ignore[attr-defined]
    return rule


def power_rule(bytes_seen: Iterable[float], tasks_seen: Iterable[int]):
    """Least-squares ``log tasks = a + b log bytes`` over recorded (bytes, tasks); constant when
    the bytes never changed. Returns a function of the new byte count."""
    b = np.asarray(list(bytes_seen), dtype=float)
    n = np.asarray(list(tasks_seen), dtype=float)
    ok = np.isfinite(b) & np.isfinite(n) & (b > 0) & (n > 0)
    b, n = np.log(b[ok]), np.log(n[ok])
    if len(b) == 0:
        return lambda new_bytes: 1
    if np.ptp(b) < 1e-9:
        const = int(round(float(np.exp(n.mean()))))
        return lambda new_bytes: max(1, const)
    slope, icpt = np.polyfit(b, n, 1)
    slope = float(np.clip(slope, 0.0, 1.0))  # tasks never fall with more data, nor grow faster
    icpt = float(np.mean(n - slope * b))

    def rule(new_bytes: float) -> int:
        return max(1, int(round(math.exp(icpt + slope * math.log(max(float(new_bytes), 1.0))))))

    return rule


def file_split_tasks(bytes_in: float, parallelism: float, max_partition_bytes: float) -> int:
    """The file splits of one large file: ``ceil(bytes / min(maxPartitionBytes, max(openCost,
    bytes / parallelism)))``. Spark's whole rule, many files and each one's open cost, is
    :func:`file_scan_tasks`."""
    b = max(float(bytes_in), 1.0)
    split = min(float(max_partition_bytes), max(_OPEN_COST, b / max(float(parallelism), 1.0)))
    return max(1, math.ceil(b / split - 1e-9))


def _next_fit(big: np.ndarray, big_bytes: np.ndarray, small: np.ndarray, small_bytes: np.ndarray,
              split: np.ndarray, open_cost: float) -> np.ndarray:
    """Partitions of ``FilePartition.getFilePartitions``' next fit: ``big`` chunks of
    ``big_bytes`` then ``small`` of ``small_bytes`` (sorted largest first, as Spark sorts them),
    a partition closed when the next chunk would take it past ``split``, each chunk counting its
    bytes plus ``open_cost``."""
    def per(size):  # chunks a partition takes: the k-th goes in while (k - 1) x (size + cost) + size fits
        return np.maximum(np.floor((split - size) / (size + open_cost)) + 1, 1)

    k1 = per(big_bytes)
    n1 = np.ceil(big / k1)
    last = np.where(big > 0, (big - (n1 - 1) * k1) * (big_bytes + open_cost), split + 1)
    # small chunks that still fit in the last partition of the big ones
    room = np.where(last + small_bytes <= split,
                    np.floor((split - last - small_bytes) / (small_bytes + open_cost)) + 1, 0)
    room = np.minimum(room, small)
    return n1 + np.ceil((small - room) / per(small_bytes))


def file_scan_tasks(files, bytes_in: float, parallelism: float, max_partition_bytes: float,
                    open_cost: float = _OPEN_COST, max_partitions: float = math.nan):
    """Partitions of a Spark SQL scan of ``files`` files of equal size, ``bytes_in`` in all
    (``FilePartition.maxSplitBytes`` and ``getFilePartitions``): each file counts
    ``open_cost`` beside its bytes, the split is ``min(maxPartitionBytes, max(openCost,
    total / parallelism))`` (``parallelism``: ``spark.sql.files.minPartitionNum``, else the
    leaf parallelism, ``spark.default.parallelism``), each file is cut into splits, and the
    splits, largest first, are packed while they fit the split size, each with its open cost.
    More partitions than ``max_partitions`` (``spark.sql.files.maxPartitionNum``) are packed
    again at the total over it. ``files`` may be an array: one count per element.

    300 CSV files of 200 KiB on 2 cores run 10 tasks (``ceil(bytes / split)`` says 2), and 5
    of 30 MiB run 3 (it says 2): the open cost of a file is 4 MiB by default."""
    f = np.maximum(np.asarray(files, dtype=float), 1.0)
    b = max(float(bytes_in), 1.0)
    oc = max(float(open_cost), 0.0)
    size = b / f
    total = b + f * oc
    split = np.minimum(float(max_partition_bytes), np.maximum(oc, np.floor(total / max(float(parallelism), 1.0))))
    split = np.maximum(split, 1.0)
    m = np.ceil(size / split - 1e-9)
    rest = size - (m - 1) * split
    n = _next_fit(f * (m - 1), split, f, rest, split, oc)
    if max_partitions > 0:
        chunks_total = b + (f * m) * oc
        again = np.maximum(np.ceil(chunks_total / max_partitions), 1.0)
        n = np.where(n > max_partitions, _next_fit(f * (m - 1), split, f, rest, again, oc), n)
    return n.astype(int) if n.ndim else int(n)


#: Block sizes a Hadoop file system may give its files: HDFS's 128 MiB, the local file
#: system's and S3A's 32 MiB (``fs.local.block.size``, ``fs.s3a.block.size``), others.
_BLOCK_SIZES = (32 * _MB, 128 * _MB, 64 * _MB, 256 * _MB)


def hadoop_split_tasks(files, bytes_in: float, min_partitions: float, block_bytes: float = 32 * _MB):
    """Splits of Hadoop's ``FileInputFormat.getSplits`` (``sc.textFile``, ``sc.hadoopFile``)
    over ``files`` files of equal size: the goal ``total / minPartitions`` (Spark passes
    ``sc.defaultMinPartitions``, ``min(spark.default.parallelism, 2)``), a split of
    ``min(goal, blockSize)``, cut from each file while what is left is over 1.1 splits."""
    f = np.maximum(np.asarray(files, dtype=float), 1.0)
    b = max(float(bytes_in), 1.0)
    split = max(min(b / max(float(min_partitions), 1.0), float(block_bytes)), 1.0)
    per_file = 1 + np.maximum(np.ceil(b / f / split - 1.1), 0)
    n = f * per_file
    return n.astype(int) if n.ndim else int(n)


@functools.lru_cache(maxsize=4096)
def _files_for(kind: str, tasks: int, bytes_in: float, *settings: float) -> float:
    """The files of equal size for which a scan of ``bytes_in`` runs the recorded ``tasks``, by
    :func:`file_scan_tasks` (``kind`` "sql", ``settings`` its arguments after the bytes) or
    :func:`hadoop_split_tasks` ("hadoop"): the store does not record a scan's files. One file
    where one gives the count, else the middle of the fewest files that do (10 tasks of 59 MiB
    on 2 cores: 280 to 310 files of 4 MiB open cost, 31 to a task; Spark ran 300), else the
    count nearest the recorded one, on a log scale."""
    f = np.arange(1, int(min(2e6, 256 * max(tasks, 1) + 64)) + 1, dtype=float)
    count = file_scan_tasks if kind == "sql" else hadoop_split_tasks
    n = np.asarray(count(f, bytes_in, *settings), dtype=float)
    hit = np.flatnonzero(n == tasks)
    if len(hit):
        if hit[0] == 0:
            return 1.0
        run = hit[: int(np.argmax(np.diff(hit) > 1)) + 1] if np.any(np.diff(hit) > 1) else hit
        return float((f[run[0]] + f[run[-1]]) / 2)
    miss = np.abs(np.log(np.maximum(n, 1)) - math.log(max(tasks, 1)))
    return float(f[int(np.argmin(miss))])


#: An RDD name that is a path (``/data/in``, ``s3a://b/k``, ``data/*.csv``, ``in.txt``), not a
#: class's (``MapPartitionsRDD``) or a plan's: Spark names an input read through Hadoop after the
#: path (or comma-separated paths) given to ``sc.textFile``/``hadoopFile``/``sequenceFile``
_PATH = re.compile(r"(/|[A-Za-z][\w+.-]*:/|[^\s/]*/|[^\s/]+\.\w+$)")
#: ... of which an absolute path or a URI (``/data/x``, ``s3a://b/k``, ``C:/x``): what few
#: names given with ``rdd.setName`` look like
_ABSOLUTE = re.compile(r"(/|[A-Za-z][\w+.-]*:/)")


def hadoop_scan(rdd_names_json) -> bool:
    """Whether a stage read its input through a Hadoop input format (``sc.textFile``,
    ``sc.hadoopFile``), not a SQL file scan (``FileScanRDD``): Spark names the ``HadoopRDD``
    and the RDD ``textFile`` maps it to after the path they read.

    A name is all the store keeps of an RDD, and ``rdd.setName`` gives any RDD a name that may
    look like a file (``users.v2``, ``train/test split``). So a relative path counts only
    where two RDDs of the stage carry it, as ``textFile``'s pair does (one name set twice is
    rare); an absolute path or URI counts alone (``hadoopFile`` names one RDD, and a name set
    by hand seldom starts with ``/`` or a scheme). ``sequenceFile`` of a relative path is thus
    missed: its file splits then follow the SQL scan's rule."""
    try:
        names = json.loads(rdd_names_json) if isinstance(rdd_names_json, str) and rdd_names_json else []
    except ValueError:
        return False
    names = [str(n).strip() for n in names] if isinstance(names, list) else []
    kinds = rdd_kinds(rdd_names_json)
    if any(k in ("FileScanRDD", "WholeTextFileRDD", "BinaryFileRDD") for k in kinds):
        return False
    if any(k in ("HadoopRDD", "NewHadoopRDD") for k in kinds):
        return True
    counts = collections.Counter(names)
    return any(_ABSOLUTE.match(n) or (counts[n] > 1 and _PATH.match(n)) for n in names)


def _recorded_files(v: Any) -> float:
    """A ``scan_files`` value as a count, NaN where none was recorded (or it is 0: a scan
    Spark pruned to no file runs one empty task, which says nothing of its files)."""
    f = _num(v, math.nan)
    return f if f > 0 else math.nan


def _files_growth(history: pd.DataFrame | None, ref: pd.Series | Mapping[Hashable, Any]) -> float | None:
    """How the recorded runs' files grew with their input: ``k`` of ``files ~ bytes ** k`` (0
    to 1) by least squares over the runs' recorded (bytes, files) with ``ref``'s, or None
    where they do not hold two sizes."""
    pairs = {(float(ref["bytes_in"]), _recorded_files(ref.get("scan_files")))}
    if history is not None and "scan_files" in history:
        pairs |= set(zip(history["bytes_in"].astype(float), map(_recorded_files, history["scan_files"])))
    pts = np.array([p for p in pairs if p[0] > 0 and np.isfinite(p[1])], dtype=float).reshape(-1, 2)
    if len(pts) < 2 or np.ptp(np.log(pts[:, 0])) < 1e-9:
        return None
    slope = np.polyfit(np.log(pts[:, 0]), np.log(pts[:, 1]), 1)[0]
    return float(np.clip(slope, 0.0, 1.0))


def _scan_rules(ref: pd.Series | Mapping[Hashable, Any], history: pd.DataFrame | None = None) -> list:
    """Candidate task-count rules of an input stage: Spark's file splits over the files its SQL
    file scans selected (``scan_files``) or, where none was recorded, the files the recorded
    task count implies (:func:`_files_for`); the input growing by more files of the same size,
    or by larger files of the same number. ``(reads, rule(bytes, conf) -> tasks)``.

    With a recorded count the recorded runs decide how the files grow: where they hold it at
    two sizes or more, by the power of the input their files followed (:func:`_files_growth`),
    first; the inferred files' rules follow the recorded ones, for scans whose files differ
    in size so much that packing equal ones does not give the recorded tasks."""
    b0, n0 = float(ref["bytes_in"]), int(ref["num_tasks"])
    if not (b0 > 0 and n0 > 0):
        return []
    out: list = []
    if hadoop_scan(ref.get("rdd_names_json")):
        def mp(c: Any) -> float:
            return min(_num(c.get("default_parallelism"), 2.0), 2.0)  # sc.defaultMinPartitions

        fits = []
        for block in _BLOCK_SIZES:
            files = _files_for("hadoop", n0, b0, mp(ref), block)
            if hadoop_split_tasks(files, b0, mp(ref), block) == n0:
                fits.append((files, block))
        if not fits:
            return []
        files, block = min(fits, key=lambda fb: fb[0])  # stable: the first block size of the fewest files
        out.append((("default_parallelism",), lambda b, c: hadoop_split_tasks(
            max(1.0, round(files * b / b0)), b, mp(c), block)))
        out.append((("default_parallelism",), lambda b, c: hadoop_split_tasks(files, b, mp(c), block)))
        return out[::-1] if files == 1 else out

    def settings(c: Any) -> tuple[float, float, float, float]:
        def get(k: str, default: float) -> float:
            return _num(c.get(k, ref.get(k)), default)

        return (get("files_min_partitions", _num(c.get("default_parallelism"), 1.0)),
                _num(c.get("max_partition_bytes"), CONFIG_DEFAULTS["max_partition_bytes"]),
                get("files_open_cost_bytes", _OPEN_COST), max(get("files_max_partitions", 0.0), 0.0))

    def scan(files: float, b: float, c: Mapping[Hashable, Any]) -> int:
        return int(file_scan_tasks(files, b, *settings(c)))

    reads = ("default_parallelism", "max_partition_bytes")

    def grown(files: float) -> list:
        rules = [(reads, lambda b, c: scan(max(1.0, round(files * b / b0)), b, c)),
                 (reads, lambda b, c: scan(files, b, c))]
        # one run cannot tell the two apart (a tie goes to the first): many files grow by more
        # files, a single file stays one
        return rules[::-1] if files == 1 else rules

    inferred = grown(_files_for("sql", n0, b0, *settings(ref)))
    recorded = _recorded_files(ref.get("scan_files"))
    if not np.isfinite(recorded):
        return inferred
    k = _files_growth(history, ref)
    if k is not None:
        out.append((reads, lambda b, c: scan(max(1.0, round(recorded * (b / b0) ** k)), b, c)))
    return out + grown(recorded) + inferred


_COALESCE_READS = ("shuffle_partitions", "default_parallelism", "aqe_advisory_bytes", "aqe_min_partition_bytes",
                   "aqe_min_partitions")


def _skewed(b: float, c: Mapping[Hashable, Any], ref: Any, hot: float) -> int:
    def setting(k: str, default: float) -> float:
        return _num(c.get(k, ref.get(k)), default)

    return skewed_coalesced_tasks(b, c["shuffle_partitions"], c["default_parallelism"], hot,
                                  setting("aqe_advisory_bytes", 64 * _MB), setting("aqe_min_partition_bytes", _MB),
                                  setting("aqe_min_partitions", math.nan))


#: The hot shares a skewed shuffle's rule tries: 1 % to 95 % of the bytes.
_HOT_SHARES = tuple(round(0.01 * i, 2) for i in range(1, 96))


@functools.lru_cache(maxsize=4096)
def _fit_hot_share(runs: tuple[tuple[Any, ...], ...]) -> float:
    def fits(share: float) -> bool:
        return all(_skewed(b, dict(zip(_COALESCE_READS, conf)), {}, share) == n for b, n, *conf in runs)

    if any(None in run[2:4] for run in runs) or fits(0.0):  # partitions unknown, or no skew
        return 0.0
    shares = [x for x in _HOT_SHARES if fits(x)]
    return shares[len(shares) // 2] if shares else 0.0


def _hot_share(history: pd.DataFrame, ref: Any) -> float:
    """The share of a coalesced shuffle's bytes in one hot partition with which
    :func:`skewed_coalesced_tasks` gives every recorded task count, the middle of the shares
    that do; 0 where equal partitions (:func:`coalesced_tasks`) give them, or no share does.

    Spark packs unequal partitions into fewer tasks than equal ones of the same bytes: the hot
    one is a task of its own and the small ones pack on around it. A share of the bytes carries
    that to other sizes (the hot keys' share stays with the data), where a ratio of counts would
    not (3 of 3 tasks at 3.5 MiB, 8 of 13 at 14). Only a share that fits every recorded count
    is taken: runs whose skew the one hot partition does not describe (hot keys that spread
    over more partitions as a sweep raises them) keep the rules they had."""
    h = history[history["bytes_in"] > 0]
    cols = [h[k].to_numpy(float) if k in h else np.full(len(h), _num(ref.get(k), math.nan)) for k in _COALESCE_READS]
    # None for an unset one: NaN would keep equal runs apart (and the cache from hitting)
    runs = set(zip(h["bytes_in"].to_numpy(float).tolist(), h["num_tasks"].to_numpy(int).tolist(),
                   *([None if math.isnan(v) else v for v in c.tolist()] for c in cols)))
    return _fit_hot_share(tuple(sorted(runs))) if runs else 0.0


def predict_num_tasks(history: pd.DataFrame, ref: pd.Series | Mapping[Hashable, Any],
                      new_bytes_in: float, new_conf: dict[str, float] | None = None) -> int:
    """Task count of stage ``ref`` (a :func:`stage_table` row) when it reads ``new_bytes_in``.

    ``history`` holds the same signature's rows from other runs (may be just ``ref``);
    ``new_conf`` the configuration features of the new run (default: ``ref``'s). Candidate
    rules, in order of preference: Spark's file splits (input stages) or the shuffle partitions
    (shuffle stages), AQE coalescing (of equal partitions, then of a skewed shuffle's where a
    hot share gives every recorded count: :func:`skewed_coalesced_tasks`),
    ``spark.default.parallelism``, a split learnt from the counts, a power law in the bytes,
    and the recorded count. The rule that reproduces the recorded counts best wins (ties go to
    the earlier one); rules that read a setting the recorded runs changed with their size are
    left out unless the query gives that setting.
    """
    conf = {c: ref[c] for c in CONFIG_FEATURES if c in ref}
    conf.update(new_conf or {})
    given = set(new_conf or {})
    h = history[(history["num_tasks"] > 0) & np.isfinite(history["num_tasks"])]
    if h.empty:
        h = history.iloc[0:0]

    def varied(col: str) -> bool:
        """Did the recorded runs change this setting (and the query not say)?"""
        hh = h[h["parallelism_explicit"] == 1] if col == "default_parallelism" and "parallelism_explicit" in h else h
        return col not in given and col in hh and hh[col].nunique() > 1

    rules: list = []  # (reads, rule(bytes, conf) -> tasks)
    if ref["is_input_stage"]:
        rules.extend(_scan_rules(ref, h))
        calib = [n / file_split_tasks(b, par, mpb) for b, n, par, mpb in zip(
            h["bytes_in"], h["num_tasks"], h["default_parallelism"], h["max_partition_bytes"]) if b > 0]
        c0 = float(np.median(calib)) if calib else 1.0
        rules.append((("default_parallelism", "max_partition_bytes"), lambda b, c: max(1, int(round(
            c0 * file_split_tasks(b, c["default_parallelism"], c["max_partition_bytes"]))))))
        rules.append((("default_parallelism",), lambda b, c: int(c["default_parallelism"])))
    elif ref["bytes_in"] > 0:  # a shuffle stage
        rules.append((("shuffle_partitions",), lambda b, c: int(c["shuffle_partitions"])))
        if ref["aqe"] and _num(ref.get("aqe_coalesce"), 1.0):
            def spark_coalesced(b: float, c: Mapping[Hashable, Any]) -> int:
                def setting(k: str, default: float) -> float:
                    return _num(c.get(k, ref.get(k)), default)

                return coalesced_tasks(b, c["shuffle_partitions"], c["default_parallelism"],
                                       setting("aqe_advisory_bytes", 64 * _MB),
                                       setting("aqe_min_partition_bytes", _MB),
                                       setting("aqe_min_partitions", math.nan))

            rules.append((("shuffle_partitions", "default_parallelism"), spark_coalesced))
            hot = _hot_share(h, ref)
            if hot > 0:  # a skewed shuffle: one partition holds the hot keys' share of the bytes
                def skewed(b: float, c: Mapping[Hashable, Any]) -> int:
                    return _skewed(b, c, ref, hot)

                rules.append((("shuffle_partitions", "default_parallelism"), skewed))
        rules.append((("default_parallelism",), lambda b, c: int(c["default_parallelism"])))
        if ref["aqe"] and h["num_tasks"].nunique() > 1:
            # AQE coalesced the partitions to ~advisory size: the count follows the bytes.
            aqe = count_rule(h["bytes_in"], h["num_tasks"], 64 * _MB)
            rules.append((("shuffle_partitions",), lambda b, c: min(aqe(b), int(c["shuffle_partitions"]))))
    if h["bytes_in"].nunique() > 1:
        power = power_rule(h["bytes_in"], h["num_tasks"])
        rules.append(((), lambda b, c: power(b)))
    n_ref = int(ref["num_tasks"])
    rules.append(((), lambda b, c: n_ref))
    rules = [r for r in rules if not any(varied(k) for k in r[0])]
    if len(h) and len(rules) > 1:
        rows = h.to_dict("records")
        scores = [float(np.mean([abs(math.log(max(f(r["bytes_in"], r), 1)) - math.log(r["num_tasks"]))
                                 for r in rows])) for _, f in rules]
        best = rules[int(np.argmin(np.round(scores, 9)))][1]
    else:
        best = rules[0][1]
    return max(1, int(best(new_bytes_in, conf)))


__all__ = [
    "CONFIG_FEATURES",
    "DATA_FEATURES",
    "call_site",
    "coalesce_settings",
    "coalesced_tasks",
    "config_features",
    "count_rule",
    "file_scan_settings",
    "file_scan_tasks",
    "file_split_tasks",
    "final_attempts",
    "fold_partial_reruns",
    "hadoop_scan",
    "hadoop_split_tasks",
    "power_rule",
    "predict_num_tasks",
    "rdd_kinds",
    "run_config",
    "scan_input_bytes",
    "skewed_coalesced_tasks",
    "spark_bytes",
    "stage_signatures",
    "stage_table",
    "waves",
]
