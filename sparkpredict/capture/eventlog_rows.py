"""Turn one application's event-log lines into the listener's runs / executors / stages / tasks rows.

:class:`RunBuilder` consumes raw JSON lines in log order and keeps only what the rows need:
task rows go to Arrow chunks every few thousand tasks (memory stays near the size of the
resulting Parquet data, not of the log), and stage sums and quantiles are computed from those
rows at the end, so a stage row always equals the sums of its task rows. The run and executors
rows are worked out from what it kept by :func:`.eventlog_run.run_tables`.

Speed: most of a log's bytes are TaskEnd lines, and most of a TaskEnd line is the task's
``Accumulables`` list and ``Task Executor Metrics``, which the rows never use. Events are
dispatched on their name (read from the line's fixed ``{"Event":"`` prefix) before any JSON
decoding; events no row needs are never decoded; TaskEnd lines are decoded without those two
fields (see :func:`_decode_task_end`).
"""
from __future__ import annotations

import collections
import json
import re
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..store import schema as S
from ..units import plural
from .eventlog_run import listener_json, run_tables
from .eventlog_scans import (
    SQL_ADAPTIVE_UPDATE,
    SQL_DRIVER_UPDATES,
    SQL_EXECUTION_END,
    SQL_EXECUTION_START,
    ScanInput,
    is_reader_probe,
)

_PREFIX = b'{"Event":"'
_TASK_PREFIX = b'{"Event":"SparkListenerTask'
_TASK_END = b'{"Event":"SparkListenerTaskEnd"'
_ACCUM = b',"Accumulables":['
_TASK_METRICS = b',"Task Metrics":'
_PEAK_ACCUM = re.compile(rb'"Name":"internal\.metrics\.peakExecutionMemory","Update":(\d+)')
_CHUNK_ROWS = 4096  # tasks per Arrow chunk: bounds the Python objects alive at once
#: Map stages' own RDDs whose counted partitions are kept (the listener's StageTracker.MAP_RDDS_KEPT).
MAP_RDDS_KEPT = 10_000
_MAX_LINE_WARNINGS = 10

_TASK_COLS = ["stage_id", "stage_attempt_id", "task_id", "task_index", "attempt", "executor_id",
              "host", "launch_ms", "finish_ms", "duration_ms", "getting_result_ms", "status",
              "locality", "speculative", *S.METRIC_NAMES]
_TASK_SCHEMA = pa.schema([S.TABLES["tasks"].field(c) for c in _TASK_COLS])
_NO_METRICS = (None,) * len(S.METRIC_NAMES)
_KEYS = ["stage_id", "stage_attempt_id"]
#: the position of input_bytes among a task's metric values (_metrics)
_INPUT = S.METRIC_NAMES.index("input_bytes")
# Task rows live until the end, in many small chunks: the system allocator returns their
# memory better than pyarrow's default mimalloc pool (see eventlog._system_pool).
_POOL = pa.system_memory_pool()
_SUMMED = [*S.METRIC_NAMES, "failed"]
_NS_PER_MS = 1e6


def _decode_task_end(line: bytes) -> dict[str, Any]:
    """Decode a TaskEnd line without ``Task Info.Accumulables`` and ``Task Executor Metrics``.

    Spark writes ``Accumulables`` as the last field of ``Task Info``, followed by the optional
    ``Task Executor Metrics`` and then ``Task Metrics``. A JSON string cannot contain an
    unescaped ``,"``, so these byte patterns can only be real keys; the cut line is validated
    by decoding it, and any surprise falls back to decoding the whole line.
    """
    a = line.find(_ACCUM)
    e = line.rfind(_TASK_METRICS)
    if 0 < a < e and line[e - 1:e] == b"}":
        try:
            ev = json.loads(line[:a] + b"}" + line[e:])
            if isinstance(ev.get("Task Info"), dict):
                return ev
        except ValueError:
            pass
    return json.loads(line)


def _metrics(tm: Any, line: bytes) -> tuple:
    """The METRIC_COLUMNS values of one task, in order (ns times converted to ms)."""
    if not isinstance(tm, dict):
        return _NO_METRICS
    g = tm.get
    sr = g("Shuffle Read Metrics") or {}
    sw = g("Shuffle Write Metrics") or {}
    im = g("Input Metrics") or {}
    om = g("Output Metrics") or {}
    remote, local = sr.get("Remote Bytes Read", 0), sr.get("Local Bytes Read", 0)
    peak = g("Peak Execution Memory")
    if peak is None:  # Spark < 3.0 kept it only among the accumulables
        m = _PEAK_ACCUM.search(line)
        peak = int(m.group(1)) if m else 0
    return (
        g("Executor Run Time", 0), g("Executor CPU Time", 0) / _NS_PER_MS,
        g("Executor Deserialize Time", 0), g("Executor Deserialize CPU Time", 0) / _NS_PER_MS,
        g("JVM GC Time", 0), g("Result Serialization Time", 0), g("Result Size", 0),
        im.get("Bytes Read", 0), im.get("Records Read", 0),
        om.get("Bytes Written", 0), om.get("Records Written", 0),
        remote, local, remote + local, sr.get("Fetch Wait Time", 0), sr.get("Total Records Read", 0),
        sw.get("Shuffle Bytes Written", 0), sw.get("Shuffle Write Time", 0) / _NS_PER_MS,
        sw.get("Shuffle Records Written", 0),
        g("Memory Bytes Spilled", 0), g("Disk Bytes Spilled", 0), peak,
    )


def _task_status(info: dict[str, Any]) -> str:
    """Spark's ``TaskInfo.status`` (what the listener records)."""
    if not info.get("Finish Time"):
        return "GET RESULT" if info.get("Getting Result Time") else "RUNNING"
    if info.get("Failed"):
        return "FAILED"
    return "KILLED" if info.get("Killed") else "SUCCESS"


def _persisted(level: Any) -> bool:
    """Whether an RDD Info's storage level keeps its blocks (StorageLevel.isValid)."""
    if not isinstance(level, dict):
        return False
    kept = any(level.get(k) is True for k in ("Use Memory", "Use Disk", "Use Off Heap"))
    replication = level.get("Replication", 1)
    return kept and not (isinstance(replication, int) and replication <= 0)


#: The stage accumulable in which Databricks' disk cache counts the bytes its scans served from
#: the cache: a task's input metric counts only the misses, so a warm cache would make the same
#: job's input look small (StageTracker.DISK_CACHE_HITS in the listener).
DISK_CACHE_HITS = "cache hits size"


def disk_cache_hit_bytes(accumulables: Any) -> int:
    """The bytes of :data:`DISK_CACHE_HITS` among a StageCompleted's accumulables, 0 when none
    (every Spark but Databricks') or not a whole number."""
    total = 0
    for a in accumulables if isinstance(accumulables, list) else ():
        if isinstance(a, dict) and a.get("Name") == DISK_CACHE_HITS:
            value = a.get("Value")  # a string in the log, as every SQL metric's
            if isinstance(value, (int, str)) and not isinstance(value, bool):
                try:
                    total += max(0, int(value))
                except ValueError:
                    continue
    return total


class RunBuilder:
    """Accumulates one application's events; :meth:`finish` returns conformed tables."""

    def __init__(self) -> None:
        self.warnings: list[str] = []
        self.spark_version: str | None = None
        self.app: dict[str, Any] = {}
        #: why the application start event could not be used (its App ID null), for the error
        self.bad_app_start: str | None = None
        self.end_ms: int | None = None
        self.exit_code: int | None = None
        self.props: dict[str, str] = {}
        # [id, host, cores, added, removed, reason, resource profile id]
        self.executors: list[list[Any]] = []
        # executor memory (MiB) each non-default resource profile asks for, by profile id
        self.profile_memory_mb: dict[int, int] = {}
        # spark.task.cpus each resource profile asks for, by profile id (the default's too)
        self.profile_task_cpus: dict[int, int] = {}
        self.stage_jobs: dict[int, int] = {}
        self.num_jobs = 0
        self.first_job_ms: int | None = None  # the first job's submission (an idle start is warned of)
        self.last_job_failed = False
        self._streaming_jobs: set[int] = set()
        self.error_message: str | None = None
        # jobs started and not ended; those left at the application's end were cut short by it
        self._running_jobs: set[int] = set()
        self.jobs_running_at_end: list[int] = []
        self.stages: dict[tuple[int, int], dict[str, Any]] = {}
        # as the listener: stages over a persisted RDD an earlier stage computed read the cache,
        # and their input is not the run's (see eventlog_run.run_tables)
        self._materialised: set[int] = set()
        self.reads_cache: set[tuple[int, int]] = set()
        # Databricks' disk cache: bytes a stage's scans served from it, which its task metrics
        # leave out of input (see eventlog_run.run_tables); only stages that had any
        self.disk_cache_hits: dict[tuple[int, int], int] = {}
        self.last_ms = 0
        self.lines = self.events = self.bad_lines = self.skipped = 0
        # The first line that is not JSON, and the lines with content read by then (itself
        # included): content after it means data damaged mid-log, not a last line cut off.
        self.first_not_json: int | None = None
        self._content_at_not_json = 0
        self._rows: list[tuple] = []
        self._chunks: list[pa.RecordBatch] = []
        # Times Spark never writes (a task or stage that ends before it starts, a negative run
        # time): per kind, how many and the first one, for :meth:`impossible_times`
        self._backwards: dict[str, list[Any]] = {}
        # Events out of the order Spark writes them in (one listener-bus queue): per stage
        # attempt not submitted yet, its task ends and completion read so far; the ends and
        # completions whose submission came later; stage and task events before the
        # application's start; successful ones after its end, left out (see order_warnings)
        self._submitted: set[tuple[int, int]] = set()
        self._unsubmitted: dict[tuple[int, int], int] = {}
        self.before_submission = self.before_start = self.after_end = 0
        self._sums: dict[tuple[int, int], dict[str, Any]] = {}  # stage -> sums of counted tasks
        # Resubmitted task ends (see _task_end): the run's count, and the stages' counted ones
        self.resubmitted = 0
        self._resubmitted: dict[tuple[int, int], int] = {}
        self._durations: list[pa.Table] = []  # stage ids and durations of counted tasks
        # As the listener (StageTracker): per running stage attempt, its successful tasks' input
        # (partition, bytes), ended before the attempt completed; per stage id of a running
        # job, the partitions whose input the run has counted; and that count
        self._reads: dict[tuple[int, int], list[tuple[int, int]]] = {}
        self._input_counted: dict[int, set[int]] = {}
        # per map stage's own RDD, kept across jobs, the most recent MAP_RDDS_KEPT (the
        # listener's StageTracker.mapInputCounted): adaptive execution re-runs a map stage whose
        # output an executor's loss took under a new stage id, in a later job
        self._map_input_counted: collections.OrderedDict[int, set[int]] = collections.OrderedDict()
        self._map_stages: set[tuple[int, int]] = set()
        self._job_stages: dict[int, list[int]] = {}
        self.input_read = 0
        # SQL file scans count the size of their files (eventlog_scans); per running stage
        # attempt, the partitions its successful tasks ran
        self.scans = ScanInput()
        self._ran: dict[tuple[int, int], set[int]] = {}
        # per stage attempt that ran a known scan, the files its scans selected (None: not told)
        self.scan_files: dict[tuple[int, int], int | None] = {}
        # the SQL execution of each stage of a running job (the first running job's that has it)
        self._stage_execution: dict[int, str] = {}
        self._handlers = {
            b"SparkListenerLogStart": self._log_start,
            # Databricks writes no LogStart: its own first line names the Spark version
            b"DBCEventLoggingListenerMetadata": self._log_start_if_none,
            b"SparkListenerApplicationStart": self._app_start,
            b"SparkListenerApplicationEnd": self._app_end,
            b"SparkListenerEnvironmentUpdate": self._environment,
            b"SparkListenerExecutorAdded": self._executor_added,
            b"SparkListenerExecutorRemoved": self._executor_removed,
            b"SparkListenerResourceProfileAdded": self._resource_profile_added,
            b"SparkListenerJobStart": self._job_start,
            b"SparkListenerJobEnd": self._job_end,
            b"SparkListenerStageSubmitted": self._stage_submitted,
            b"SparkListenerStageCompleted": self._stage_completed,
            b"SparkListenerUnpersistRDD": self._unpersist_rdd,
            SQL_EXECUTION_START: self.scans.plan,
            SQL_ADAPTIVE_UPDATE: self.scans.plan,
            SQL_DRIVER_UPDATES: self.scans.driver_updates,
            SQL_EXECUTION_END: self.scans.execution_ended,
        }

    # ---- the hot loop -------------------------------------------------------------------
    def feed(self, lines) -> None:
        """Consume an iterable of raw lines (bytes without newline)."""
        handlers = self._handlers
        task_end = self._task_end
        n = self.lines
        try:
            for line in lines:
                n += 1
                try:
                    if line.startswith(_TASK_PREFIX):
                        if line.startswith(_TASK_END):
                            task_end(_decode_task_end(line), line)
                            self.events += 1
                        else:
                            # TaskStart, TaskGettingResult: not decoded, for speed, unless cut
                            # (a line Spark wrote whole ends its object), which decoding tells
                            if not line.endswith(b"}"):
                                json.loads(line)
                            self.skipped += 1
                        continue
                    if line.startswith(_PREFIX):
                        handler = handlers.get(line[10:line.find(b'"', 10)])
                        if handler is None:
                            # cut, in its name too: as above (a name cut to a known one's is
                            # decoded by its handler, which tells the damage as well)
                            if not line.endswith(b"}"):
                                json.loads(line)
                            self.skipped += 1  # events no row needs, and unknown events
                            continue
                        handler(json.loads(line))
                        self.events += 1
                        continue
                    if not line.strip():
                        continue
                    ev = json.loads(line)  # a writer that put "Event" elsewhere in the object
                    name = ev.get("Event", "").encode() if isinstance(ev, dict) else b""
                    if name == b"SparkListenerTaskEnd":
                        task_end(ev, line)
                    elif name in handlers:
                        handlers[name](ev)
                    else:
                        self.skipped += 1
                        continue
                    self.events += 1
                except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
                    self._bad(n, "is not valid JSON")
                    if self.first_not_json is None:
                        self.first_not_json, self._content_at_not_json = n, self.content_lines
                except (TypeError, ValueError, AttributeError, KeyError, IndexError, OverflowError) as exc:
                    self._bad(n, f"has an unexpected structure ({type(exc).__name__}: {exc})")
        finally:
            self.lines = n

    @property
    def content_lines(self) -> int:
        """Lines fed that were not blank: each is an event, a skipped one or a bad line."""
        return self.events + self.skipped + self.bad_lines

    def not_json_before_end(self) -> int | None:
        """:attr:`first_not_json` when lines with content were fed after it, else None.

        Spark writes each event whole, on its own line: only the last line can be cut while a
        log is written or copied. A bad line followed by others is damage in the middle, and
        Spark's own reader (``ReplayListenerBus``) refuses such a log too.
        """
        if self.first_not_json is None or self.content_lines <= self._content_at_not_json:
            return None
        return self.first_not_json

    def _bad(self, lineno: int, why: str) -> None:
        self.bad_lines += 1
        if self.bad_lines <= _MAX_LINE_WARNINGS:
            self.warnings.append(f"line {lineno} {why}; skipped")

    def _ts(self, ms: Any) -> None:
        if isinstance(ms, int) and ms > self.last_ms:
            self.last_ms = ms

    # ---- events -------------------------------------------------------------------------
    def _log_start(self, ev: dict) -> None:
        self.spark_version = _typed(ev.get("Spark Version"), str)

    def _log_start_if_none(self, ev: dict) -> None:
        if self.spark_version is None:
            self._log_start(ev)

    def _app_start(self, ev: dict) -> None:
        if self.app:
            self.warnings.append("a second SparkListenerApplicationStart; the first one is kept")
            return
        attempt = ev.get("App Attempt ID")
        try:
            if not isinstance(ev["App ID"], str) or not ev["App ID"]:
                # the run's key: a null one stopped the whole log with a traceback
                raise TypeError(f"its App ID is {ev['App ID']!r}")
            app = {"app_id": ev["App ID"], "app_name": _typed(ev.get("App Name"), str),
                   "attempt": None if attempt is None else str(attempt), "start_ms": _ms(ev["Timestamp"])}
        except (TypeError, ValueError, KeyError, OverflowError) as exc:
            # skipped as a bad line, the log then read as one cut before its start
            self.bad_app_start = str(exc)
            raise
        self.app = app
        self._ts(self.app["start_ms"])

    def _app_end(self, ev: dict) -> None:
        self.end_ms = _ms(ev["Timestamp"])
        code = ev.get("ExitCode")  # Spark >= 4.0
        self.exit_code = int(code) if code is not None else None
        # a streaming query's micro-batch cut short by the end is how such an application stops
        self.jobs_running_at_end = sorted(self._running_jobs - self._streaming_jobs)
        self._ts(self.end_ms)

    def _environment(self, ev: dict) -> None:
        props = ev.get("Spark Properties") or {}
        if isinstance(props, list):  # [[key, value], ...] in some writers
            props = dict(p for p in props if isinstance(p, list) and len(p) == 2)
        self.props.update({str(k): str(v) for k, v in props.items()})

    def _executor_added(self, ev: dict) -> None:
        info = ev.get("Executor Info") or {}
        t = _ms(ev["Timestamp"])
        self.executors.append([str(ev["Executor ID"]), _typed(info.get("Host"), str),
                               _typed(info.get("Total Cores"), int), t, None, None,
                               _typed(info.get("Resource Profile Id"), int)])  # Spark >= 3.1
        self._ts(t)

    def _resource_profile_added(self, ev: dict) -> None:
        # As the listener (RunRecord.resourceProfileAdded): the default profile (id 0) keeps
        # the configuration's memory, which in local mode is the driver's.
        pid = _typed(ev.get("Resource Profile Id"), int)
        memory = _typed(((ev.get("Executor Resource Requests") or {}).get("memory") or {}).get("Amount"), int)
        if pid and memory is not None and memory > 0:
            self.profile_memory_mb[pid] = memory
        # each profile's spark.task.cpus: a run of several profiles has executors whose slots
        # differ (lenient: a writer's odd amount leaves the run's setting to serve)
        cpus = ((ev.get("Task Resource Requests") or {}).get("cpus") or {}).get("Amount")
        if isinstance(pid, int) and isinstance(cpus, (int, float)) and not isinstance(cpus, bool) and cpus >= 1:
            self.profile_task_cpus[pid] = int(cpus)

    def _executor_removed(self, ev: dict) -> None:
        if self.end_ms is not None:  # after the application's end: not this run's (as the listener)
            return
        eid, t = str(ev["Executor ID"]), _ms(ev["Timestamp"])
        for e in reversed(self.executors):
            if e[0] == eid and e[4] is None:
                e[4], e[5] = t, _typed(ev.get("Removed Reason"), str)
                break
        self._ts(t)

    def _job_start(self, ev: dict) -> None:
        self.num_jobs += 1
        job = _typed(ev["Job ID"], int)
        self._running_jobs.add(job)
        props = ev.get("Properties")
        if isinstance(props, dict) and props.get("sql.streaming.queryId") is not None:
            self._streaming_jobs.add(job)
        stage_ids = [_typed(sid, int) for sid in ev.get("Stage IDs") or []]
        execution = props.get("spark.sql.execution.id") if isinstance(props, dict) else None
        for sid in stage_ids:
            self.stage_jobs.setdefault(sid, job)
            if execution is not None:
                self._stage_execution.setdefault(sid, str(execution))
        self._job_stages[job] = stage_ids
        submitted = ev.get("Submission Time")
        if isinstance(submitted, int) and (self.first_job_ms is None or submitted < self.first_job_ms):
            self.first_job_ms = submitted
        self._ts(submitted)

    def _job_end(self, ev: dict) -> None:
        result = ev.get("Job Result") or {}
        job = ev.get("Job ID")
        self._running_jobs.discard(job)
        # as the listener (StageTracker.jobEnded): a stage's counted partitions are forgotten
        # once no running job has the stage
        for sid in self._job_stages.pop(job, []) if isinstance(job, int) else []:
            if not any(sid in other for other in self._job_stages.values()):
                self._input_counted.pop(sid, None)
                self._stage_execution.pop(sid, None)
        self.last_job_failed = result.get("Result") == "JobFailed"
        streaming = job in self._streaming_jobs
        self._streaming_jobs.discard(job)
        exc = result.get("Exception")
        msg = exc.get("Message") if isinstance(exc, dict) else None
        if self.last_job_failed and streaming and isinstance(msg, str) and f"Job {job} cancelled" in msg:
            # a stopped streaming query (RunRecord.jobEnded): its last micro-batch cut short on purpose
            self.last_job_failed = False
            self.error_message = None
        elif self.last_job_failed:  # as the listener: the latest failure's message is kept
            exc = result.get("Exception")
            msg = exc.get("Message") if isinstance(exc, dict) else None
            self.error_message = str(msg) if msg is not None else f"job {ev.get('Job ID')} failed"
        self._ts(ev.get("Completion Time"))

    def _stage_submitted(self, ev: dict) -> None:
        if self.end_ms is not None:
            return
        si = ev["Stage Info"]
        key = (_typed(si["Stage ID"], int), _typed(si.get("Stage Attempt ID", 0), int))
        self.before_start += not self.app
        self._submitted.add(key)
        self.before_submission += self._unsubmitted.pop(key, 0)

    def _seen_before_submission(self, key: tuple[int, int]) -> None:
        if key not in self._submitted:
            self._unsubmitted[key] = self._unsubmitted.get(key, 0) + 1

    def _stage_completed(self, ev: dict) -> None:
        if self.end_ms is not None:
            # Spark posts the application's end, then cancels the jobs still running: their
            # stages' ends are no stages of this run, and the listener, stopped, never sees them
            # (one that succeeded ended before the application did: lines out of order)
            si = ev.get("Stage Info")
            self.after_end += isinstance(si, dict) and "Failure Reason" not in si
            return
        si = ev["Stage Info"]
        key = (_typed(si["Stage ID"], int), _typed(si.get("Stage Attempt ID", 0), int))
        self.before_start += not self.app
        self._seen_before_submission(key)
        sub, done = _typed(si.get("Submission Time"), int), _typed(si.get("Completion Time"), int)
        failure = si.get("Failure Reason")
        row = {  # only what the stage row needs: Stage Info's accumulables are large
            "name": _typed(si.get("Stage Name"), str), "num_tasks": _typed(si.get("Number of Tasks"), int),
            "parent_stage_ids_json": listener_json([_typed(i, int) for i in si.get("Parent IDs") or []]),
            "rdd_names_json": listener_json([_typed(r.get("Name"), str) for r in si.get("RDD Info") or []]),
            "submission_ms": sub, "completion_ms": done,
            "duration_ms": done - sub if sub is not None and done is not None else None,
            "status": "failed" if "Failure Reason" in si else "succeeded",
            "failure_reason": None if failure is None else str(failure),
        }
        if key in self.stages:
            # Spark posts a failed barrier stage attempt's completion again for each task of it
            # ending later: the first is kept, as the listener keeps it (StageTracker.completed)
            self._ts(done)
            return
        self.stages[key] = row
        if sub is not None and done is not None and done < sub:
            self._impossible("stage", f"stage {key[0]} attempt {key[1]}: Submission Time {sub}, "
                                      f"Completion Time {done}")
        rdd_info = [r for r in si.get("RDD Info") or [] if isinstance(r, dict)]
        infos = [r for r in rdd_info if isinstance(r.get("RDD ID"), int) and _persisted(r.get("Storage Level"))]
        persisted = {r["RDD ID"] for r in infos}
        if persisted & self._materialised:
            self.reads_cache.add(key)
        reads = self._reads.pop(key, [])
        # The stage's own RDD comes first, then its narrow ancestors.
        own = rdd_info[0].get("Number of Partitions") if rdd_info else None
        own_rdd = rdd_info[0].get("RDD ID") if rdd_info else None
        # A stage that ran SQL file scans counts their files' size, not its tasks' input metric
        # (which Parquet's vectored reads leave at the footers) nor Databricks' cache hits. A
        # scan that ran is a source read even in a stage over a cached RDD (a union of both).
        # A DataFrameReader's job reads a schema (a CSV header, inferSchema): no input of the
        # run's, whose actions read the files again; unless it computed a persisted RDD
        # (`spark.read.json(sc.textFile(p).cache())`), whose cached blocks they read instead
        probe = is_reader_probe(si.get("Details")) and not persisted
        scanned = self.scans.stage_completed(
            si.get("Accumulables"), rdd_id=own_rdd if isinstance(own_rdd, int) else None,
            partitions=own if isinstance(own, int) else None, ran=self._ran.pop(key, set()),
            execution=self._stage_execution.get(key[0]),
            persisted=bool(persisted), probe=probe)
        if scanned:
            self.scan_files[key] = self.scans.stage_files
        hits = 0 if scanned or probe else disk_cache_hit_bytes(si.get("Accumulables"))
        if hits:
            self.disk_cache_hits[key] = hits
        if key not in self.reads_cache and not scanned and not probe:
            # each partition once, by its first successful task (StageTracker.completed): a failed
            # or killed task's partial read, a speculative copy and a partition re-run after its
            # executor was lost read the same data again; a failed attempt's successful tasks
            # count too, as Spark keeps their output. Remembered while a running job has the stage.
            if key in self._map_stages and isinstance(own_rdd, int):
                done = self._map_input_counted.setdefault(own_rdd, set())
                self._map_input_counted.move_to_end(own_rdd)
                while len(self._map_input_counted) > MAP_RDDS_KEPT:
                    self._map_input_counted.popitem(last=False)
            else:
                running = any(key[0] in stages for stages in self._job_stages.values())
                done = self._input_counted.setdefault(key[0], set()) if running else set()
            for part, n in reads:
                if part not in done:
                    done.add(part)
                    self.input_read += n
        # A stage that ran all of its own partitions computed them whole (a coalesce(1) too).
        # `df.cache(); df.show()` runs one partition, and the count after it reads the others
        # from the source.
        tasks = row["num_tasks"]
        whole = not rdd_info or (isinstance(tasks, int) and isinstance(own, int) and tasks >= own)
        if row["status"] == "succeeded" and whole:
            self._materialised |= persisted
        self._ts(done)

    def _unpersist_rdd(self, ev: dict) -> None:
        # its cached blocks are gone: a stage over it persisted again reads its source again
        # (StageTracker.unpersisted)
        self._materialised.discard(ev.get("RDD ID"))

    def _task_end(self, ev: dict, line: bytes) -> None:
        if self.end_ms is not None:  # after the application's end (see _stage_completed)
            info = ev.get("Task Info")
            self.after_end += isinstance(info, dict) and _task_status(info) == "SUCCESS"
            return
        info = ev["Task Info"]
        stage, attempt = ev["Stage ID"], ev.get("Stage Attempt ID", 0)
        self.before_start += not self.app
        self._seen_before_submission((stage, attempt))
        reason = ev.get("Task End Reason")
        if isinstance(reason, dict) and reason.get("Reason") == "Resubmitted":
            # A shuffle map task whose output was lost with its executor: Spark posts a second
            # end for the attempt that already ended, with its TaskInfo (still "SUCCESS") and no
            # metrics. The attempt has its row; Spark's UI (AppStatusListener) counts this end
            # as a failed task, and so do the stage and run counts (as in the listener).
            self.resubmitted += 1
            key = (stage, attempt)
            if key not in self.stages:
                self._resubmitted[key] = self._resubmitted.get(key, 0) + 1
            return
        launch, finish = info.get("Launch Time"), info.get("Finish Time")
        got = info.get("Getting Result Time") or 0
        status = _task_status(info)
        metrics = _metrics(ev.get("Task Metrics"), line)
        # a Finish Time of 0 is a task that never finished, not one that ended in 1970
        if isinstance(finish, int) and finish and isinstance(launch, int) and finish < launch:
            self._impossible("finish", f"task {info['Task ID']} of stage {stage}: Launch Time {launch}, "
                                       f"Finish Time {finish}")
        run_time = metrics[0]
        # of a killed or failed task, Spark before 3.0.2 wrote System.nanoTime() - 0 when the
        # kill came before the task's start (SPARK-32898), which can be below zero: not damage
        if isinstance(run_time, (int, float)) and run_time < 0 and status == "SUCCESS":
            self._impossible("run", f"task {info['Task ID']} of stage {stage}: Executor Run Time "
                                    f"{run_time} ms")
        if ev.get("Task Type") == "ShuffleMapTask":  # as the listener tells a map stage (Agg.mapStage)
            self._map_stages.add((stage, attempt))
        # Like the listener, a stage sums only tasks that ended before it completed.
        counted = (stage, attempt) not in self.stages
        read = metrics[_INPUT]
        if counted and status == "SUCCESS":
            # the partition, not the task's place in its attempt: a retried attempt numbers only
            # the partitions it re-runs (logs of Spark >= 3.3 tell it)
            part = info.get("Partition ID")
            part = part if isinstance(part, int) and part >= 0 else info.get("Index")
            if isinstance(part, int):
                self._ran.setdefault((stage, attempt), set()).add(part)
                if isinstance(read, int) and read > 0:
                    self._reads.setdefault((stage, attempt), []).append((part, read))
        self._rows.append((
            stage, attempt, info["Task ID"], info.get("Index"),
            info.get("Attempt"), info.get("Executor ID"), info.get("Host"), launch, finish,
            (finish - launch if launch is not None else None) if finish else 0,
            finish - got if got and finish else 0,
            status, info.get("Locality"), info.get("Speculative"),
            *metrics, counted,
        ))
        if finish and finish > self.last_ms:
            self.last_ms = finish
        if len(self._rows) >= _CHUNK_ROWS:
            self._flush()

    def _impossible(self, kind: str, first: str) -> None:
        seen = self._backwards.setdefault(kind, [0, first])
        seen[0] += 1

    def order_warnings(self) -> list[str]:
        """What was read out of the order Spark writes events in (one queue, in the order it
        posts them): a stage's task ends or completion before its submission, events of stages
        or tasks before the application's start, successful task ends and stage
        completions after its end (left out, as the listener, stopped, never sees them). A log
        whose lines were shuffled had kept 6 of its 8 tasks with no word. Successful ends after
        the application's end alone are no sign of reordered lines: Spark posts the end first
        when it stops, and a task finishing meanwhile follows it."""
        late = (plural(self.after_end, "successful task end or stage completion",
                       "successful task ends or stage completions") + " after the application's end, "
                "left out of the rows") if self.after_end else ""
        said = [f"{plural(n, one, many)} {where}" for n, one, many, where in (
            (self.before_submission, "task end or stage completion", "task ends or stage completions",
             "before the stage's submission"),
            (self.before_start, "stage or task event", None, "before the application's start"),
        ) if n]
        if not said:
            return [f"{late} (work that finished as the application stopped)"] if late else []
        return [(f"events out of the order Spark writes them in: {'; '.join(said + ([late] if late else []))}. "
                 "The log's lines look reordered (sorted, shuffled, merged from copies): its stage and task "
                 "rows may be wrong or incomplete; ingest an intact copy of it")]

    def impossible_times(self, kinds: tuple[str, ...] = ("finish", "run", "stage")) -> str | None:
        """What the log holds of times Spark never writes, or None: a task that finished before
        it launched (kind ``finish``), a succeeded task's negative Executor Run Time (``run``), a
        stage completed before it was submitted (``stage``), each ms of the driver's clock or a
        task's own. Ingest stores them as written, with this as a warning: a driver's clock
        stepped back (an NTP step, a resumed VM) writes them too, and refusing that log would
        lose its run for good, as no intact copy exists. A replay refuses the ``finish`` kind
        alone, as the store's replay does (a task below zero would take no time); it reads
        neither the run time nor a stage's completion ahead of its own tasks'."""
        nouns = {"finish": ("task finishing before it launched", "tasks finishing before they launched"),
                 "run": ("task with a negative Executor Run Time", "tasks with a negative Executor Run Time"),
                 "stage": ("stage completed before it was submitted", "stages completed before they were submitted")}
        said = [f"{n:,} {nouns[k][n != 1]} (the first: {first})" for k, (n, first) in self._backwards.items()
                if k in kinds]
        if not said:
            return None
        return ("it has " + "; ".join(said) + ", times Spark never writes: the driver's clock stepped "
                "back, or the log was altered")

    def _flush(self) -> None:
        if not self._rows:
            return
        cols = list(zip(*self._rows))
        self._rows = []
        counted = pa.array(cols.pop(), pa.bool_())
        try:
            arrays = [pa.array(c, type=f.type, memory_pool=_POOL) for c, f in zip(cols, _TASK_SCHEMA)]
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
            arrays = self._arrays_row_by_row(cols)
        batch = pa.RecordBatch.from_arrays(arrays, schema=_TASK_SCHEMA)
        self._chunks.append(batch)
        self._add_to_stages(batch.filter(counted))

    def _add_to_stages(self, batch: pa.RecordBatch) -> None:
        """Fold one chunk of counted task rows into the stage sums (no copy of all tasks at the end)."""
        if not batch.num_rows:
            return
        failed = pc.not_equal(batch.column("status"), "SUCCESS").cast(pa.int64())
        t = pa.Table.from_batches([batch]).select(_KEYS + S.METRIC_NAMES).append_column("failed", failed)
        agg = t.group_by(_KEYS, use_threads=False).aggregate(
            [(m, "sum", pc.ScalarAggregateOptions(min_count=0)) for m in _SUMMED]
            + [("stage_id", "count", pc.CountOptions(mode="all"))])
        for row in agg.to_pylist():
            key = (row.pop("stage_id"), row.pop("stage_attempt_id"))
            acc = self._sums.get(key)
            if acc is None:
                self._sums[key] = row
            else:
                for c, v in row.items():
                    acc[c] += v
        self._durations.append(pa.Table.from_batches([batch]).select(_KEYS + ["duration_ms"]))

    def _arrays_row_by_row(self, cols: list[tuple]) -> list[pa.Array]:
        """Slow path for a chunk holding a value of the wrong type: null it, warn once."""
        out = []
        for c, f in zip(cols, _TASK_SCHEMA):
            try:
                out.append(pa.array(c, type=f.type))
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
                vals = []
                for v in c:
                    try:
                        pa.scalar(v, type=f.type)
                        vals.append(v)
                    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
                        vals.append(None)
                self.warnings.append(f"task column {f.name} held values of the wrong type; set to null")
                out.append(pa.array(vals, type=f.type))
        return out

    # ---- rows -------------------------------------------------------------------------
    def run_id(self) -> str:
        """The run's key in the store (:func:`.schema.run_id`), once the application's start was fed."""
        return S.run_id(self.app["app_id"], self.app["attempt"] or None, self.app["start_ms"])

    def finish(self, *, in_progress: bool) -> dict[str, pa.Table]:
        """The conformed tables of this run. Raises ValueError when there is no application."""
        if self.bad_lines > _MAX_LINE_WARNINGS:
            self.warnings.append(f"{self.bad_lines - _MAX_LINE_WARNINGS} more bad lines skipped")
        if not self.app:
            raise ValueError("no SparkListenerApplicationStart event: not a Spark event log, "
                             "or its beginning is missing")
        self.warnings += self.order_warnings()
        self._flush()
        tasks = pa.Table.from_batches(self._chunks, schema=_TASK_SCHEMA)
        self._chunks = []
        run_id = self.run_id()
        tasks = tasks.append_column("run_id", pa.array([run_id] * tasks.num_rows, pa.string()))
        stages = self._stage_table(run_id)
        execs, run, measured = run_tables(self, tasks, stages, run_id, in_progress)
        out = {"runs": S.conform("runs", run), "executors": S.conform("executors", execs),
               "stages": S.conform("stages", stages), "tasks": S.conform("tasks", tasks),
               # updated_ms as the runs row's: set where the ingest stores them
               "run_inputs": pa.Table.from_pylist([{"run_id": run_id, "measured_input_bytes": measured}],
                                                  schema=S.TABLES["run_inputs"])}
        if self.scan_files:  # in completion order, as the listener writes them
            out["stage_scans"] = pa.Table.from_pylist(
                [{"run_id": run_id, "stage_id": s, "stage_attempt_id": a, "scan_files": n}
                 for (s, a), n in self.scan_files.items()], schema=S.TABLES["stage_scans"])
        return out

    def _stage_table(self, run_id: str) -> pa.Table:
        sums = self._sums
        quant = _duration_quantiles(pa.concat_tables(self._durations)) if self._durations else {}
        rows = []
        for key, st in self.stages.items():  # in completion order, as the listener writes them
            s = sums.get(key, {})
            row = {
                "run_id": run_id, "job_id": self.stage_jobs.get(key[0]), "stage_id": key[0],
                "stage_attempt_id": key[1], **st,
                "num_task_rows": s.get("stage_id_count", 0),
                "num_failed_tasks": s.get("failed_sum", 0) + self._resubmitted.get(key, 0),
                **{m: s.get(f"{m}_sum", 0) for m in S.METRIC_NAMES},
            }
            q = quant.get(key, (None,) * 4)
            for name, v in zip(("min", "median", "p90", "max"), q):
                row[f"task_duration_{name}_ms"] = v
            rows.append(row)
        return pa.Table.from_pylist(rows, schema=S.TABLES["stages"])


def _typed(v: Any, typ: type) -> Any:
    """``v`` if it is None or of ``typ`` (bool is not an int here), else TypeError."""
    if v is None or (isinstance(v, typ) and not (typ is int and isinstance(v, bool))):
        return v
    raise TypeError(f"expected {typ.__name__}, got {type(v).__name__}")


def _ms(v: Any) -> int:
    """A required epoch-ms timestamp."""
    if v is None:
        raise TypeError("timestamp is null")
    if not -2**63 <= _typed(v, int) < 2**63:  # the store's int64: past it, a traceback at the end
        raise OverflowError(f"timestamp {v} is out of range")
    return v


def _duration_quantiles(tasks: pa.Table) -> dict[tuple[int, int], tuple[float, ...]]:
    """(stage, attempt) -> min, median, p90, max of task duration (numpy's linear quantiles)."""
    sid = tasks["stage_id"].to_numpy(zero_copy_only=False).astype(np.int64)
    att = tasks["stage_attempt_id"].to_numpy(zero_copy_only=False).astype(np.int64)
    dur = tasks["duration_ms"].fill_null(0).to_numpy(zero_copy_only=False).astype(np.float64)
    order = np.lexsort((dur, att, sid))
    sid, att, dur = sid[order], att[order], dur[order]
    bounds = np.flatnonzero((np.diff(sid) != 0) | (np.diff(att) != 0)) + 1
    out: dict[tuple[int, int], tuple[float, ...]] = {}
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(dur)]):
        d = dur[lo:hi]
        q = np.quantile(d, [0.5, 0.9])
        out[(int(sid[lo]), int(att[lo]))] = (float(d[0]), float(q[0]), float(q[1]), float(d[-1]))
    return out
