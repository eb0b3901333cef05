"""The run and executors rows of an application read from its event log, computed as the
listener computes them (``RunRecord.runRow``): the master, cores and memory from its
properties, executors alive over time, the input size declared or measured, and the status.

:class:`~sparkpredict.capture.eventlog_rows.RunBuilder` gathers what these rows read while it
consumes the log; :func:`run_tables` turns it into the rows once the tasks and stages are built.
"""
from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from ..config import LOCAL_CLUSTER_MASTER, LOCAL_MASTER
from ..store import schema as S
from ..units import declared_size, plural, spark_size

if TYPE_CHECKING:
    from .eventlog_rows import RunBuilder


#: An application whose first job starts this late (and past IDLE_START_SHARE of its wall time)
#: is warned of at ingest: a session that waited for its user
IDLE_START_MS = 30_000
IDLE_START_SHARE = 0.3


def run_tables(b: RunBuilder, tasks: pa.Table, stages: pa.Table, run_id: str,
               in_progress: bool) -> tuple[pa.Table, pa.Table, int]:
    """The executors table, the run row of the application ``b`` consumed and the input its
    stages read (declared size or not), computed as the listener computes them
    (RunRecord.runRow, inputRow); a declared input size that is not a size adds a warning to
    ``b.warnings``."""
    from .. import __version__

    p = b.props
    master = p.get("spark.master")
    local = LOCAL_MASTER.fullmatch((master or "").strip()) is not None
    start = b.app["start_ms"]
    complete = b.end_ms is not None and not in_progress
    # complete implies end_ms is set; repeated because mypy does not narrow through complete
    end = b.end_ms if b.end_ms is not None and complete else max(b.last_ms, start)
    mem = spark_size(p.get("spark.driver.memory" if local else "spark.executor.memory", "1g"), "m")
    mem_mb = None if mem is None else mem // 2**20  # getSizeAsMb: whole MiB
    ex = b.executors
    execs = pa.table({
        "run_id": [run_id] * len(ex), "executor_id": [e[0] for e in ex], "host": [e[1] for e in ex],
        "cores": pa.array([e[2] for e in ex], pa.int32()),
        "memory_mb": pa.array([b.profile_memory_mb.get(e[6], mem_mb) for e in ex], pa.int64()),
        "added_ms": pa.array([e[3] for e in ex], pa.int64()),
        "removed_ms": pa.array([e[4] for e in ex], pa.int64()),
        "removed_reason": pa.array([e[5] for e in ex], pa.string()),
    })
    emax, emean = _executor_timeline(ex, start, end)
    max_cores = max((e[2] for e in ex if isinstance(e[2], int)), default=0)
    cores = _int(p.get("spark.executor.cores")) if not local else None
    if cores is None:
        cores = max_cores or None
    task_cpus = max(1, _int(p.get("spark.task.cpus")) or 1)
    requested = _int(p.get("spark.executor.instances"))
    m = LOCAL_CLUSTER_MASTER.fullmatch((master or "").strip())
    if requested is None:
        requested = int(m.group(1)) if m else (1 if local else None)
    declared = p.get("spark.sparkpredict.inputBytes")
    input_bytes = declared_size(declared) if declared else None
    if declared and input_bytes is None:
        b.warnings.append(f"spark.sparkpredict.inputBytes={declared!r} is not a size; measured instead")
    # what the succeeded stages read from data sources, not from cached blocks, each partition
    # once (RunBuilder._stage_completed); of a declared run too, for its run_inputs row
    measured = b.input_read + b.scans.counted + sum(
        hits for key, hits in b.disk_cache_hits.items()
        if key not in b.reads_cache and b.stages.get(key, {}).get("status") == "succeeded")
    status, error = run_status(b) if complete else ("incomplete", b.error_message)
    idle_ms = (b.first_job_ms - start) if b.first_job_ms is not None else None
    if idle_ms is not None and idle_ms > max(IDLE_START_MS, IDLE_START_SHARE * (end - start)):
        # an interactive session (a shell, a notebook) waits for its user: the wall time the
        # runtime models learn from holds that wait
        b.warnings.append(
            f"the application ran no job for its first {idle_ms / 1000:.0f} s of {(end - start) / 1000:.0f} s "
            "(an interactive session?): its wall time, which the runtime models learn, includes that wait; "
            f"if it is no run of a job, leave it out with `sparkpredict store edit {run_id} --exclude`")

    def total(col: str) -> int:
        return (pc.sum(tasks[col]).as_py() or 0) if tasks.num_rows else 0

    run = {
        "run_id": run_id, "app_id": b.app["app_id"], "app_attempt_id": b.app["attempt"],
        "app_name": b.app["app_name"],
        "job": p.get("spark.sparkpredict.job") or b.app["app_name"],
        "status": status, "error_message": error, "spark_version": b.spark_version,
        "master": master, "start_ms": start, "end_ms": end if complete else None,
        "wall_ms": end - start, "executors_requested": requested,
        "executors_max": emax, "executors_mean": emean, "executor_cores": cores,
        "executor_memory_mb": mem_mb,
        "task_slots": _task_slots(ex, b.profile_task_cpus, start, end, emax, cores, task_cpus),
        "input_bytes": input_bytes if input_bytes is not None else measured,
        "input_bytes_source": "declared" if input_bytes is not None else "measured",
        "shuffle_read_bytes": total("shuffle_read_bytes"),
        "shuffle_write_bytes": total("shuffle_write_bytes"),
        "executor_run_time_ms": total("executor_run_time_ms"),
        "num_jobs": b.num_jobs, "num_stages": stages.num_rows, "num_tasks": tasks.num_rows,
        "num_failed_tasks": ((pc.sum(pc.not_equal(tasks["status"], "SUCCESS").cast(pa.int64())).as_py()
                              or 0) if tasks.num_rows else 0) + b.resubmitted,
        "properties_json": _properties_json(p),
        "source": "eventlog", "sparkpredict_version": __version__,
        "schema_version": S.SCHEMA_VERSION,
    }
    return execs, pa.Table.from_pylist([run]), measured


def run_status(b: RunBuilder) -> tuple[str, str | None]:
    """The status and error message of an application that ended, decided as the listener
    decides them (``RunRecord.applicationEnded``; the log tells no signal). Spark posts the
    application's end before it cancels the jobs still running, so a job started and not ended
    by then was cut short: the run is killed, never succeeded."""
    cut = still_running(b.jobs_running_at_end) if b.jobs_running_at_end else None
    if b.exit_code not in (None, 0):
        exit_code = f"application exit code {b.exit_code}"
        # an earlier job's failure that later jobs recovered from is not why it ended
        why = b.error_message if b.last_job_failed else None
        return "failed", f"{exit_code}; {cut}" if cut else why or exit_code
    if cut:
        return "killed", cut
    return ("failed", b.error_message) if b.last_job_failed else ("succeeded", None)


#: Shown for at most this many jobs still running at the end; the rest are counted.
_JOBS_LISTED = 10


def still_running(jobs: list[int]) -> str:
    """``2 jobs were still running at the application's end (jobs 3, 4): ...``, as the
    listener's ``RunRecord.stillRunning`` writes it."""
    ids = ", ".join(str(j) for j in sorted(jobs)[:_JOBS_LISTED])
    if len(jobs) > _JOBS_LISTED:
        ids += f" and {len(jobs) - _JOBS_LISTED} more"
    were = "was" if len(jobs) == 1 else "were"
    return (f"{plural(len(jobs), 'job')} {were} still running at the application's end "
            f"({'job' if len(jobs) == 1 else 'jobs'} {ids}): the run was interrupted")


def listener_json(value: Any) -> str:
    """Compact JSON, as the listener's Jackson writes it."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _properties_json(props: dict[str, str]) -> str:
    """Every ``spark.*`` property, secrets redacted with ``spark.redaction.regex`` as the listener does."""
    try:
        redact = re.compile(props.get("spark.redaction.regex", "(?i)secret|password|token|access[.]?key"))
    except re.error:
        redact = re.compile("(?i)secret|password|token|access[.]?key")
    out = {k: ("*********(redacted)" if redact.search(k) or redact.search(v) else v)
           for k, v in sorted(props.items()) if k.startswith("spark.")}
    return listener_json(out)


def _int(v: Any) -> int | None:
    try:
        return int(str(v).strip())
    except (TypeError, ValueError):
        return None


def _task_slots(executors: list[list[Any]], profile_task_cpus: dict[int, int], start: int, end: int,
                emax: int, cores: int | None, task_cpus: int) -> int | None:
    """Tasks the run could run at once: ``executors_max x (cores // spark.task.cpus)``, or, for
    a run with executors of a resource profile of its own (stage-level scheduling), the most at
    once of each live executor's ``cores // its profile's task cpus`` (a log of 4 + 2 + 2 cores,
    its two small executors at 2 cpus a task, read 12 slots where it had 6). Times in ms."""
    if not any(e[6] for e in executors):  # the default profile's alone (or a log before profiles)
        return emax * (cores // task_cpus) if cores else None
    events = []
    for e in executors:
        per_task = profile_task_cpus.get(e[6], task_cpus) if e[6] else task_cpus
        own = e[2] if isinstance(e[2], int) and e[2] > 0 else (cores or 0)
        n = own // max(per_task, 1)
        events.append((max(e[3], start), n))
        events.append((min(e[4] if e[4] is not None else end, end), -n))
    return _peak(events) or None


def _peak(events: list[tuple[int, int]]) -> int:
    """The highest running sum of ``(time_ms, change)`` events; at one instant the decreases
    come first (an executor removed as another is added is never counted twice)."""
    running = peak = 0
    for _, d in sorted(events):
        running += d
        peak = max(peak, running)
    return peak


def _executor_timeline(executors: list[list[Any]], start: int, end: int) -> tuple[int, float]:
    """Most executors alive at once, and their time-weighted mean over [start, end]."""
    alive_ms = 0
    events = []
    for e in executors:
        a = max(e[3], start)
        b = min(e[4] if e[4] is not None else end, end)
        alive_ms += max(b - a, 0)
        events.append((e[3], 1))
        if e[4] is not None:
            events.append((e[4], -1))
    peak = _peak(events)
    return peak, (alive_ms / (end - start) if end > start else float(peak))
