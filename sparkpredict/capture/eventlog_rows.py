"""Turn one application's event-log lines into the listener's runs / executors / stages / tasks rows.

:class:`RunBuilder` consumes raw JSON lines in log order and keeps only what the rows need:
task rows go to Arrow chunks every few thousand tasks (memory stays near the size of the
resulting Parquet data, not of the log), and stage sums and quantiles are computed from those
rows at the end, so a stage row always equals the sums of its task rows.

Speed: most of a log's bytes are TaskEnd lines, and most of a TaskEnd line is the task's
``Accumulables`` list and ``Task Executor Metrics``, which the rows never use. Events are
dispatched on their name (read from the line's fixed ``{"Event":"`` prefix) before any JSON
decoding; events no row needs are never decoded; TaskEnd lines are decoded without those two
fields (see :func:`_decode_task_end`).
"""
from __future__ import annotations

import json
import logging
import re
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..store import schema as S

log = logging.getLogger(__name__)

_PREFIX = b'{"Event":"'
_TASK_PREFIX = b'{"Event":"SparkListenerTask'
_TASK_END = b'{"Event":"SparkListenerTaskEnd"'
_ACCUM = b',"Accumulables":['
_TASK_METRICS = b',"Task Metrics":'
_PEAK_ACCUM = re.compile(rb'"Name":"internal\.metrics\.peakExecutionMemory","Update":(\d+)')
_CHUNK_ROWS = 8192
_MAX_LINE_WARNINGS = 10

_TASK_COLS = ["stage_id", "stage_attempt_id", "task_id", "task_index", "attempt", "executor_id",
              "host", "launch_ms", "finish_ms", "duration_ms", "getting_result_ms", "status",
              "locality", "speculative", *S.METRIC_NAMES]
_TASK_SCHEMA = pa.schema([S.TABLES["tasks"].field(c) for c in _TASK_COLS])
_NO_METRICS = (None,) * len(S.METRIC_NAMES)
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
    """Spark's ``TaskInfo.status`` for a finished task."""
    if info.get("Failed"):
        return "FAILED"
    if info.get("Killed"):
        return "KILLED"
    return "SUCCESS" if info.get("Finish Time") else "UNKNOWN"


def memory_mb(text: str | None, default: int | None = None) -> int | None:
    """Spark's ``byteStringAsMb`` for memory settings (``4g``, ``4096m``, bare number = MiB)."""
    if text is None:
        return default
    m = re.fullmatch(r"\s*(\d+)\s*([kmgtp]?)b?\s*", str(text).lower())
    if not m:
        return default
    n, unit = int(m.group(1)), m.group(2) or "m"
    return n * 1024 ** "kmgtp".index(unit) // 1024


class RunBuilder:
    """Accumulates one application's events; :meth:`finish` returns conformed tables."""

    def __init__(self) -> None:
        self.warnings: list[str] = []
        self.spark_version: str | None = None
        self.app: dict[str, Any] = {}
        self.end_ms: int | None = None
        self.exit_code: int | None = None
        self.props: dict[str, str] = {}
        self.executors: list[list[Any]] = []  # [id, host, cores, added, removed, reason]
        self.stage_jobs: dict[int, int] = {}
        self.num_jobs = 0
        self.last_job_failure: str | None = None
        self.stages: dict[tuple[int, int], dict[str, Any]] = {}
        self.last_ms = 0
        self.lines = self.events = self.bad_lines = self.skipped = 0
        self._last_bad = 0
        self._rows: list[tuple] = []
        self._chunks: list[pa.RecordBatch] = []
        self._handlers = {
            b"SparkListenerLogStart": self._log_start,
            b"SparkListenerApplicationStart": self._app_start,
            b"SparkListenerApplicationEnd": self._app_end,
            b"SparkListenerEnvironmentUpdate": self._environment,
            b"SparkListenerExecutorAdded": self._executor_added,
            b"SparkListenerExecutorRemoved": self._executor_removed,
            b"SparkListenerJobStart": self._job_start,
            b"SparkListenerJobEnd": self._job_end,
            b"SparkListenerStageCompleted": self._stage_completed,
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
                            self.skipped += 1  # TaskStart, TaskGettingResult
                        continue
                    if line.startswith(_PREFIX):
                        handler = handlers.get(line[10:line.find(b'"', 10)])
                        if handler is None:
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
                except (ValueError, RecursionError):  # JSONDecodeError, bad UTF-8
                    self._bad(n, "is not valid JSON")
                except (TypeError, AttributeError, KeyError, IndexError, OverflowError) as exc:
                    self._bad(n, f"has an unexpected structure ({type(exc).__name__}: {exc})")
        finally:
            self.lines = n

    def _bad(self, lineno: int, why: str) -> None:
        self.bad_lines += 1
        self._last_bad = lineno
        if self.bad_lines <= _MAX_LINE_WARNINGS:
            self.warnings.append(f"line {lineno} {why}; skipped")

    def _ts(self, ms: Any) -> None:
        if isinstance(ms, int) and ms > self.last_ms:
            self.last_ms = ms

    # ---- events -------------------------------------------------------------------------
    def _log_start(self, ev: dict) -> None:
        self.spark_version = ev.get("Spark Version")

    def _app_start(self, ev: dict) -> None:
        if self.app:
            self.warnings.append("a second SparkListenerApplicationStart; the first one is kept")
            return
        self.app = {"app_id": ev["App ID"], "app_name": ev.get("App Name"),
                    "attempt": ev.get("App Attempt ID"), "start_ms": int(ev["Timestamp"])}
        self._ts(self.app["start_ms"])

    def _app_end(self, ev: dict) -> None:
        self.end_ms = int(ev["Timestamp"])
        code = ev.get("ExitCode")  # Spark >= 4.0
        self.exit_code = int(code) if code is not None else None
        self._ts(self.end_ms)

    def _environment(self, ev: dict) -> None:
        props = ev.get("Spark Properties") or {}
        if isinstance(props, list):  # [[key, value], ...] in some writers
            props = dict(p for p in props if isinstance(p, list) and len(p) == 2)
        self.props.update({str(k): str(v) for k, v in props.items()})

    def _executor_added(self, ev: dict) -> None:
        info = ev.get("Executor Info") or {}
        t = int(ev["Timestamp"])
        self.executors.append([str(ev["Executor ID"]), info.get("Host"), info.get("Total Cores"),
                               t, None, None])
        self._ts(t)

    def _executor_removed(self, ev: dict) -> None:
        eid, t = str(ev["Executor ID"]), int(ev["Timestamp"])
        for e in reversed(self.executors):
            if e[0] == eid and e[4] is None:
                e[4], e[5] = t, ev.get("Removed Reason")
                break
        self._ts(t)

    def _job_start(self, ev: dict) -> None:
        self.num_jobs += 1
        job = int(ev["Job ID"])
        for sid in ev.get("Stage IDs") or []:
            self.stage_jobs.setdefault(int(sid), job)
        self._ts(ev.get("Submission Time"))

    def _job_end(self, ev: dict) -> None:
        result = ev.get("Job Result") or {}
        if result.get("Result") == "JobFailed":
            exc = result.get("Exception") or {}
            self.last_job_failure = str(exc.get("Message") or "job failed") if isinstance(exc, dict) \
                else str(exc)
        else:
            self.last_job_failure = None
        self._ts(ev.get("Completion Time"))

    def _stage_completed(self, ev: dict) -> None:
        si = ev["Stage Info"]
        key = (int(si["Stage ID"]), int(si.get("Stage Attempt ID", 0)))
        if key in self.stages:
            self.warnings.append(f"stage {key[0]} attempt {key[1]} completed twice; the last is kept")
        self.stages[key] = si
        self._ts(si.get("Completion Time"))

    def _task_end(self, ev: dict, line: bytes) -> None:
        info = ev["Task Info"]
        launch, finish = info.get("Launch Time"), info.get("Finish Time")
        got = info.get("Getting Result Time") or 0
        self._rows.append((
            ev["Stage ID"], ev.get("Stage Attempt ID", 0), info["Task ID"], info.get("Index"),
            info.get("Attempt"), info.get("Executor ID"), info.get("Host"), launch, finish,
            finish - launch if finish and launch else None,
            finish - got if got and finish else 0,
            _task_status(info), info.get("Locality"), info.get("Speculative"),
            *_metrics(ev.get("Task Metrics"), line),
        ))
        if finish and finish > self.last_ms:
            self.last_ms = finish
        if len(self._rows) >= _CHUNK_ROWS:
            self._flush()

    def _flush(self) -> None:
        if not self._rows:
            return
        cols = list(zip(*self._rows))
        self._rows = []
        try:
            arrays = [pa.array(c, type=f.type) for c, f in zip(cols, _TASK_SCHEMA)]
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
            arrays = self._arrays_row_by_row(cols)
        self._chunks.append(pa.RecordBatch.from_arrays(arrays, schema=_TASK_SCHEMA))

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
    def finish(self, *, in_progress: bool) -> dict[str, pa.Table]:
        """The conformed tables of this run. Raises ValueError when there is no application."""
        if self.bad_lines > _MAX_LINE_WARNINGS:
            self.warnings.append(f"{self.bad_lines - _MAX_LINE_WARNINGS} more bad lines skipped")
        if self.bad_lines and self._last_bad == self.lines:
            self.warnings.append("the last line is truncated (the log was cut off while being written)")
        if not self.app:
            raise ValueError("no SparkListenerApplicationStart event: not a Spark event log, "
                             "or its beginning is missing")
        self._flush()
        tasks = pa.Table.from_batches(self._chunks, schema=_TASK_SCHEMA)
        self._chunks = []
        run_id = self.app["app_id"] + (f"/{self.app['attempt']}" if self.app["attempt"] else "")
        tasks = tasks.append_column("run_id", pa.array([run_id] * tasks.num_rows, pa.string()))
        stages = self._stage_table(tasks, run_id)
        execs, run = self._run_tables(tasks, stages, run_id, in_progress)
        return {"runs": S.conform("runs", run), "executors": S.conform("executors", execs),
                "stages": S.conform("stages", stages), "tasks": S.conform("tasks", tasks)}

    def _stage_table(self, tasks: pa.Table, run_id: str) -> pa.Table:
        keys = sorted(self.stages)
        sums: dict[tuple[int, int], dict[str, Any]] = {}
        quant: dict[tuple[int, int], tuple[float, ...]] = {}
        if tasks.num_rows and keys:
            failed = pc.not_equal(tasks["status"], "SUCCESS").cast(pa.int64())
            t = tasks.select(["stage_id", "stage_attempt_id", *S.METRIC_NAMES]).append_column("failed", failed)
            agg = t.group_by(["stage_id", "stage_attempt_id"]).aggregate(
                [(m, "sum", pc.ScalarAggregateOptions(min_count=0)) for m in [*S.METRIC_NAMES, "failed"]]
                + [("stage_id", "count")])
            for row in agg.to_pylist():
                sums[(row["stage_id"], row["stage_attempt_id"])] = row
            quant = _duration_quantiles(tasks)
        cols: dict[str, list] = {n: [] for n in S.TABLES["stages"].names}
        for key in keys:
            si = self.stages[key]
            sub, done = si.get("Submission Time"), si.get("Completion Time")
            rdds = si.get("RDD Info") or []
            s = sums.get(key, {})
            row = {
                "run_id": run_id, "job_id": self.stage_jobs.get(key[0]), "stage_id": key[0],
                "stage_attempt_id": key[1], "name": si.get("Stage Name"),
                "num_tasks": si.get("Number of Tasks"),
                "parent_stage_ids_json": json.dumps(sorted(si.get("Parent IDs") or [])),
                "rdd_names_json": json.dumps([r.get("Name") for r in rdds if isinstance(r, dict)]),
                "submission_ms": sub, "completion_ms": done,
                "duration_ms": done - sub if sub and done else None,
                "status": "failed" if si.get("Failure Reason") else "succeeded",
                "failure_reason": si.get("Failure Reason"),
                "num_task_rows": s.get("stage_id_count", 0), "num_failed_tasks": s.get("failed_sum", 0),
            }
            for m in S.METRIC_NAMES:
                row[m] = s.get(f"{m}_sum", 0)
            q = quant.get(key, (None,) * 4)
            for name, v in zip(("min", "median", "p90", "max"), q):
                row[f"task_duration_{name}_ms"] = v
            for n in cols:
                cols[n].append(row.get(n))
        return pa.Table.from_pydict(cols, schema=S.TABLES["stages"])

    def _run_tables(self, tasks: pa.Table, stages: pa.Table, run_id: str,
                    in_progress: bool) -> tuple[pa.Table, pa.Table]:
        from .. import __version__

        p = self.props
        start = self.app["start_ms"]
        complete = self.end_ms is not None and not in_progress
        end = self.end_ms if complete else None
        horizon = end if end is not None else max(self.last_ms, start)
        exec_mb = memory_mb(p.get("spark.executor.memory"), 1024)
        execs = pa.table({
            "run_id": [run_id] * len(self.executors),
            "executor_id": [e[0] for e in self.executors], "host": [e[1] for e in self.executors],
            "cores": pa.array([e[2] for e in self.executors], pa.int32()),
            "memory_mb": pa.array([exec_mb] * len(self.executors), pa.int64()),
            "added_ms": pa.array([e[3] for e in self.executors], pa.int64()),
            "removed_ms": pa.array([e[4] for e in self.executors], pa.int64()),
            "removed_reason": pa.array([e[5] for e in self.executors], pa.string()),
        })
        emax, emean = _executor_timeline(self.executors, start, horizon)
        cores = _int(p.get("spark.executor.cores"))
        if cores is None:
            cores = max((e[2] for e in self.executors if isinstance(e[2], int)), default=None)
        task_cpus = _int(p.get("spark.task.cpus")) or 1
        requested = _int(p.get("spark.executor.instances"))
        m = re.match(r"local-cluster\[\s*(\d+)", p.get("spark.master", ""))
        if requested is None and m:
            requested = int(m.group(1))
        declared = p.get("spark.sparkpredict.inputBytes")
        input_bytes, source = None, None
        if declared:
            try:
                from ..units import parse_bytes
                input_bytes, source = parse_bytes(declared), "declared"
            except ValueError:
                self.warnings.append(f"spark.sparkpredict.inputBytes={declared!r} is not a size; measured instead")
        if input_bytes is None:
            roots = pc.equal(stages["parent_stage_ids_json"], "[]")
            input_bytes = pc.sum(stages.filter(roots)["input_bytes"]).as_py() or 0
            source = "measured"
        status = "incomplete"
        if complete:
            failed = (self.exit_code not in (None, 0)) or self.last_job_failure is not None
            status = "failed" if failed else "succeeded"
        error = self.last_job_failure if status == "failed" else None
        if status == "failed" and error is None:
            error = f"application exited with code {self.exit_code}"

        def total(col: str) -> int:
            return (pc.sum(tasks[col]).as_py() or 0) if tasks.num_rows else 0

        run = {
            "run_id": run_id, "app_id": self.app["app_id"], "app_attempt_id": self.app["attempt"],
            "app_name": self.app["app_name"],
            "job": p.get("spark.sparkpredict.job") or self.app["app_name"],
            "status": status, "error_message": error, "spark_version": self.spark_version,
            "master": p.get("spark.master"), "start_ms": start, "end_ms": end,
            "wall_ms": horizon - start, "executors_requested": requested,
            "executors_max": emax, "executors_mean": emean, "executor_cores": cores,
            "executor_memory_mb": exec_mb,
            "task_slots": emax * cores // task_cpus if cores else None,
            "input_bytes": input_bytes, "input_bytes_source": source,
            "shuffle_read_bytes": total("shuffle_read_bytes"),
            "shuffle_write_bytes": total("shuffle_write_bytes"),
            "executor_run_time_ms": total("executor_run_time_ms"),
            "num_jobs": self.num_jobs, "num_stages": stages.num_rows, "num_tasks": tasks.num_rows,
            "num_failed_tasks": (pc.sum(pc.not_equal(tasks["status"], "SUCCESS").cast(pa.int64())).as_py()
                                 or 0) if tasks.num_rows else 0,
            "properties_json": json.dumps({k: v for k, v in sorted(p.items()) if k.startswith("spark.")}),
            "source": "eventlog", "sparkpredict_version": __version__,
            "schema_version": S.SCHEMA_VERSION,
        }
        return execs, pa.Table.from_pylist([run])


def _int(v: Any) -> int | None:
    try:
        return int(str(v).strip())
    except (TypeError, ValueError):
        return None


def _executor_timeline(executors: list[list[Any]], start: int, end: int) -> tuple[int, float | None]:
    """Most executors alive at once, and their time-weighted mean over [start, end]."""
    points = []
    for e in executors:
        added = max(e[3], start)
        removed = e[4] if e[4] is not None else end
        points.append((added, 1))
        points.append((max(removed, added), -1))
    points.sort(key=lambda p: (p[0], p[1]))  # removals before additions at the same instant
    alive = peak = 0
    area, prev = 0.0, start
    for t, d in points:
        t_clip = min(max(t, start), end)
        area += alive * (t_clip - prev)
        prev = max(prev, t_clip)
        alive += d
        peak = max(peak, alive)
    area += alive * max(end - prev, 0)
    mean = area / (end - start) if end > start else float(peak)
    return peak, mean


def _duration_quantiles(tasks: pa.Table) -> dict[tuple[int, int], tuple[float, ...]]:
    """(stage, attempt) -> min, median, p90, max of task duration (linear interpolation)."""
    sid = tasks["stage_id"].to_numpy(zero_copy_only=False).astype(np.int64)
    att = tasks["stage_attempt_id"].to_numpy(zero_copy_only=False).astype(np.int64)
    dur = tasks["duration_ms"].to_numpy(zero_copy_only=False).astype(np.float64)
    ok = ~np.isnan(dur)
    sid, att, dur = sid[ok], att[ok], dur[ok]
    order = np.lexsort((dur, att, sid))
    sid, att, dur = sid[order], att[order], dur[order]
    if not len(dur):
        return {}
    bounds = np.flatnonzero((np.diff(sid) != 0) | (np.diff(att) != 0)) + 1
    out = {}
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(dur)]):
        d = dur[lo:hi]
        q = np.quantile(d, [0.5, 0.9])
        out[(int(sid[lo]), int(att[lo]))] = (float(d[0]), float(q[0]), float(q[1]), float(d[-1]))
    return out
