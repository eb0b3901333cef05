"""The one owner of the history store's schema: tables, columns, units and version.

The JVM listener (``listeners/``) and the event-log ingester write exactly these columns;
``tests/test_schema_contract.py`` compares the listener's files against this module.

Units are part of the names: ``_ms`` milliseconds (epoch milliseconds for ``*_ms`` instants
such as ``start_ms``), ``_bytes`` bytes, ``_mb`` mebibytes, ``_records`` counts. Times that
Spark measures in nanoseconds (CPU time, shuffle write time) are converted once, at capture,
to fractional milliseconds (float64) so that sums stay exact enough to compare.

Store layout (any Hadoop-compatible path)::

    STORE/_sparkpredict_store.json      {"format": "sparkpredict-store", "schema_version": N}
    STORE/<table>/part-<batch_id>.parquet

A *batch* is what one writer commits at once (a listener flush, one ingested log). The batch's
``runs`` file is written last and is its commit mark: readers ignore stage, task and executor
files whose batch has no ``runs`` file. Files are written under a hidden name (``.``) and
renamed, so Spark and DuckDB readers never see half a file. A run may span several batches
(the listener flushes incrementally); its latest ``runs`` row (highest ``updated_ms``) wins.

A *compacted* batch (``sparkpredict store compact``, :mod:`.compact`) holds the rows of the
batches it replaces, whose ids its runs file lists in its Parquet footer
(``sparkpredict.supersedes``): a reader reads the committed batches that no committed batch
replaces. Its id is the last replaced batch's id followed by ``-compacted-NNNNNN-<8 hex>``.
The replaced batches' files are removed a while later (runs files first).
"""
from __future__ import annotations

import re

import pyarrow as pa

#: Bumped whenever a column of a table is added, removed, renamed or changes type or unit. A new
#: table is additive and keeps the version: stores written before it simply have no rows there
#: (``host_samples``, ``stage_scans`` and ``run_inputs`` came this way), and older readers never open its folder.
#: An older ``store compact`` merges batches without it, and leaves their files of it: readers
#: read those rows there (:meth:`.io.Store.held`), until a compaction of this version copies them.
SCHEMA_VERSION = 1
STORE_FORMAT = "sparkpredict-store"
MARKER_FILE = "_sparkpredict_store.json"


#: Spark's standalone master numbers its applications (``app-<yyyyMMddHHmmss>-<n>``), starting at
#: 0000 on every master: local-cluster, and every Databricks job cluster, start a master of their own.
_PER_MASTER_APP_ID = re.compile(r"app-[0-9]{14}-[0-9]{4,}")


def numbered_per_master(name: str) -> bool:
    """``name`` (an app id, or a log named after one) starts with an id numbered per master."""
    return _PER_MASTER_APP_ID.match(name) is not None


#: The first sparkpredict that measures ``input_bytes`` as this one does: 0.3.0 counts a SQL
#: file scan by the size of its files (on Spark 4, Parquet's vectored reads leave the tasks'
#: input metric at the footers); 0.2.0 counted a map stage's reads once across jobs and added
#: Databricks' disk-cache hits. Runs measured before it are read again from their logs by
#: ingest; the listener's have no log, and the advice warns of a job that mixes both.
INPUT_MEASURED_SINCE = (0, 3, 0)


#: The first sparkpredict that records ``stage_scans`` (the files each stage's SQL file scans
#: selected). Ingest reads a log stored before it again, so that an upgraded store gains its
#: runs' file counts; only ingest uses it: the input of such runs was measured as now
#: (:data:`INPUT_MEASURED_SINCE`), and the advice has nothing to warn of.
SCANS_RECORDED_SINCE = (0, 4, 0)


#: The first sparkpredict that leaves a DataFrameReader's schema probes out of a run's input (a
#: CSV's header line, ``inferSchema``, JSON's inference: up to 3 times the files, 1.5 to 2.5 in a
#: review). Ingest reads a log stored before it again, as for :data:`SCANS_RECORDED_SINCE`: most
#: runs never ran a probe and keep their input, and the listener's runs have no log. Not
#: :data:`INPUT_MEASURED_SINCE`, whose advice warning is of Parquet's footers (10x and more).
PROBES_LEFT_OUT_SINCE = (0, 5, 0)


def _released_before(version: str | None, since: tuple[int, int, int]) -> bool:
    if version is None:
        return True
    m = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", str(version))
    return m is not None and tuple(int(x or 0) for x in m.groups()) < since


def measured_before(version: str | None) -> bool:
    """A run row's ``sparkpredict_version`` measured its input under older rules
    (:data:`INPUT_MEASURED_SINCE`); None is older than every rule, and a version that cannot
    be read is not known to be older."""
    return _released_before(version, INPUT_MEASURED_SINCE)


def scans_before(version: str | None) -> bool:
    """A run row's ``sparkpredict_version`` recorded no ``stage_scans`` rows
    (:data:`SCANS_RECORDED_SINCE`), read as :func:`measured_before` reads it."""
    return _released_before(version, SCANS_RECORDED_SINCE)


def probes_before(version: str | None) -> bool:
    """A run row's ``sparkpredict_version`` counted a reader's schema probes as input
    (:data:`PROBES_LEFT_OUT_SINCE`), read as :func:`measured_before` reads it."""
    return _released_before(version, PROBES_LEFT_OUT_SINCE)


def run_id(app_id: str, attempt: str | None, start_ms: int | None) -> str:
    """A run's key in the store: ``app_id``, then ``/attempt`` when the cluster manager retries.

    An id numbered per master (``app-20240919162642-0000``) is not unique: two job clusters whose
    first applications started in the same second share it, and one run would absorb or drop
    the other's rows. Such an id gets the driver's start time, ``@<epoch ms>``, which the
    listener and the event log read from the same SparkListenerApplicationStart event. The JVM
    listener's ``RunRecord.runId`` is this rule; tests/test_run_ids.py compares the two.
    """
    rid = app_id
    if start_ms is not None and _PER_MASTER_APP_ID.fullmatch(app_id):
        rid = f"{app_id}@{int(start_ms)}"
    return rid if attempt is None else f"{rid}/{attempt}"


def holds_other_files(names: list[str]) -> str:
    """``it holds other files (a, b, ...)``: why a folder is no store, in every writer's and
    reader's words (the listener's Java writer says the same)."""
    return f"it holds other files ({', '.join(names[:5])}{', ...' if len(names) > 5 else ''})"

#: Terminal and non-terminal states of a run. ``excluded``: left out of training by the user
#: (``sparkpredict store edit --exclude``, :mod:`.edit`); its earlier rows keep the status it
#: ended with, which ``--include`` restores. A new value of an existing column, not a new
#: column, so SCHEMA_VERSION stays: every reader names the statuses it learns from (succeeded;
#: the slowdown monitor's baselines also incomplete), so even one that predates ``excluded``
#: leaves such a run out.
RUN_STATUSES = ("succeeded", "failed", "killed", "running", "incomplete", "excluded")

_S, _L, _I, _D, _B = pa.string(), pa.int64(), pa.int32(), pa.float64(), pa.bool_()

#: Task metrics, as recorded per task and summed per stage (same names in both tables).
METRIC_COLUMNS: list[tuple[str, pa.DataType, str]] = [
    ("executor_run_time_ms", _L, "time the task's code ran on the executor"),
    ("executor_cpu_time_ms", _D, "CPU time of the task thread (from ns)"),
    ("executor_deserialize_time_ms", _L, "time to deserialize the task"),
    ("executor_deserialize_cpu_time_ms", _D, "CPU time to deserialize the task (from ns)"),
    ("jvm_gc_time_ms", _L, "JVM garbage collection while the task ran"),
    ("result_serialization_time_ms", _L, "time to serialize the task's result"),
    ("result_size_bytes", _L, "size of the task's result"),
    ("input_bytes", _L, "bytes read from input sources"),
    ("input_records", _L, "records read from input sources"),
    ("output_bytes", _L, "bytes written to output"),
    ("output_records", _L, "records written to output"),
    ("shuffle_remote_read_bytes", _L, "shuffle bytes fetched from other executors"),
    ("shuffle_local_read_bytes", _L, "shuffle bytes read locally"),
    ("shuffle_read_bytes", _L, "remote + local shuffle bytes read"),
    ("shuffle_fetch_wait_ms", _L, "time blocked waiting for shuffle fetches"),
    ("shuffle_read_records", _L, "shuffle records read"),
    ("shuffle_write_bytes", _L, "shuffle bytes written"),
    ("shuffle_write_time_ms", _D, "time spent writing shuffle output (from ns)"),
    ("shuffle_write_records", _L, "shuffle records written"),
    ("memory_spilled_bytes", _L, "in-memory size of data spilled"),
    ("disk_spilled_bytes", _L, "on-disk size of data spilled"),
    ("peak_execution_memory_bytes", _L, "peak execution memory (summed over tasks in stages)"),
]
METRIC_NAMES = [c[0] for c in METRIC_COLUMNS]

_RUNS: list[tuple[str, pa.DataType, str]] = [
    ("run_id", _S, "app_id[@start_ms][/attempt]: see run_id()"),
    ("app_id", _S, "spark.app.id"),
    ("app_attempt_id", _S, "attempt id, null outside cluster managers that retry"),
    ("app_name", _S, "spark.app.name"),
    ("job", _S, "job key: spark.sparkpredict.job, default the app name"),
    ("status", _S, "one of RUN_STATUSES"),
    ("error_message", _S, "why the run failed, when it did (of a succeeded run: the events its listener missed, if any: dropped by Spark from the listener's queue, or failed on by the listener itself)"),
    ("spark_version", _S, "Spark version of the driver"),
    ("master", _S, "spark.master"),
    ("start_ms", _L, "application start, epoch ms"),
    ("end_ms", _L, "application end, epoch ms; null while running or when the log ended early"),
    ("wall_ms", _L, "end - start, or last event - start for incomplete runs"),
    ("executors_requested", _I, "spark.executor.instances or the N of local-cluster[N,..]"),
    ("executors_max", _I, "most executors alive at once"),
    ("executors_mean", _D, "time-weighted mean executors alive over the run's wall time"),
    ("executor_cores", _I, "cores per executor (spark.executor.cores or as registered)"),
    ("executor_memory_mb", _L, "spark.executor.memory in MiB (the default resource profile's)"),
    ("task_slots", _I, "executors_max * floor(executor_cores / spark.task.cpus)"),
    ("input_bytes", _L, ("declared (spark.sparkpredict.inputBytes) or read by the succeeded stages, "
                         "each partition once, cached reads left out, Databricks disk-cache hits "
                         "added (docs/capture.md)")),
    ("input_bytes_source", _S, "'declared' or 'measured'"),
    ("shuffle_read_bytes", _L, "total over all tasks"),
    ("shuffle_write_bytes", _L, "total over all tasks"),
    ("executor_run_time_ms", _L, "total over all tasks"),
    ("num_jobs", _I, "Spark jobs started"),
    ("num_stages", _I, "stage attempts completed (rows in stages)"),
    ("num_tasks", _L, "tasks finished, any status"),
    ("num_failed_tasks", _L, "task attempts that did not succeed, Resubmitted ends included (as Spark's UI)"),
    ("properties_json", _S, "every spark.* property as a JSON object"),
    ("source", _S, "'listener' or 'eventlog'"),
    ("source_path", _S, "event log path, for ingested runs"),
    ("source_fingerprint", _S, "identity of the source (ingest: size+mtime+head hash)"),
    ("sparkpredict_version", _S, "version of the writer"),
    ("schema_version", _I, "SCHEMA_VERSION of the writer"),
    ("updated_ms", _L, "when this row was written; the latest row of a run wins"),
]

_EXECUTORS: list[tuple[str, pa.DataType, str]] = [
    ("run_id", _S, "run this executor served"),
    ("executor_id", _S, "Spark executor id"),
    ("host", _S, "host name"),
    ("cores", _I, "cores the executor offered"),
    ("memory_mb", _L, ("executor memory in MiB: its resource profile's, the default profile's "
                       "spark.executor.memory (in local mode spark.driver.memory)")),
    ("added_ms", _L, "epoch ms when registered"),
    ("removed_ms", _L, "epoch ms when removed; null if alive at the end"),
    ("removed_reason", _S, "reason Spark gave"),
]

_STAGES: list[tuple[str, pa.DataType, str]] = [
    ("run_id", _S, ""),
    ("job_id", _I, "first Spark job that ran this stage"),
    ("stage_id", _I, ""),
    ("stage_attempt_id", _I, ""),
    ("name", _S, "stage name (call site), e.g. 'count at job.py:12'"),
    ("num_tasks", _I, "tasks the stage was submitted with"),
    ("parent_stage_ids_json", _S, "JSON list of parent stage ids"),
    ("rdd_names_json", _S, "JSON list of the stage's RDD names (scope of the DAG position)"),
    ("submission_ms", _L, "epoch ms"),
    ("completion_ms", _L, "epoch ms"),
    ("duration_ms", _L, "completion - submission"),
    ("status", _S, "'succeeded' or 'failed'"),
    ("failure_reason", _S, ""),
    ("num_task_rows", _I, "finished task attempts summed below"),
    ("num_failed_tasks", _I, "finished task attempts that did not succeed"),
    *METRIC_COLUMNS,
    ("task_duration_min_ms", _D, "over finished task attempts"),
    ("task_duration_median_ms", _D, ""),
    ("task_duration_p90_ms", _D, ""),
    ("task_duration_max_ms", _D, ""),
]

_TASKS: list[tuple[str, pa.DataType, str]] = [
    ("run_id", _S, ""),
    ("stage_id", _I, ""),
    ("stage_attempt_id", _I, ""),
    ("task_id", _L, "unique within the application"),
    ("task_index", _I, ("the task's index in its stage attempt (Spark's TaskInfo.index): the partition "
                        "in a first attempt; an attempt rerun for some partitions numbers them from 0")),
    ("attempt", _I, "task attempt number"),
    ("executor_id", _S, ""),
    ("host", _S, ""),
    ("launch_ms", _L, "epoch ms"),
    ("finish_ms", _L, "epoch ms"),
    ("duration_ms", _L, "finish - launch"),
    ("getting_result_ms", _L, "time the driver spent fetching the result"),
    ("status", _S, "TaskInfo.status: SUCCESS, FAILED (a FetchFailed too), KILLED, ..."),
    ("locality", _S, "PROCESS_LOCAL, NODE_LOCAL, ..."),
    ("speculative", _B, ""),
    *METRIC_COLUMNS,
]


_HOST_SAMPLES: list[tuple[str, pa.DataType, str]] = [
    ("run_id", _S, ""),
    ("executor_id", _S, "the executor that sampled its host, or 'driver'"),
    ("host", _S, "host name"),
    ("time_ms", _L, "epoch ms of the reading"),
    ("cpu_count", _I, "logical CPUs of the host"),
    # /proc/stat: CPU time of the whole host by mode, cumulative since boot
    ("cpu_user_ms", _L, "host CPU time in user mode (all processes), cumulative"),
    ("cpu_nice_ms", _L, "in user mode at positive nice, cumulative"),
    ("cpu_system_ms", _L, "in the kernel, cumulative"),
    ("cpu_idle_ms", _L, "idle, cumulative"),
    ("cpu_iowait_ms", _L, "idle with I/O outstanding, cumulative"),
    ("cpu_irq_ms", _L, "serving hardware interrupts, cumulative"),
    ("cpu_softirq_ms", _L, "serving soft interrupts (network receive, block completion), cumulative"),
    ("cpu_steal_ms", _L, "taken by the hypervisor for other guests, cumulative"),
    ("procs_running", _I, "runnable threads at the reading (instantaneous)"),
    ("context_switches", _L, "cumulative"),
    # /proc/pressure (PSI, Linux 4.20+): time some (or all) runnable tasks stalled on the resource
    ("psi_cpu_some_us", _L, "time some task waited for a CPU, cumulative"),
    ("psi_memory_some_us", _L, "time some task stalled on memory reclaim or swap-in, cumulative"),
    ("psi_memory_full_us", _L, "time all non-idle tasks stalled on memory, cumulative"),
    ("psi_io_some_us", _L, "time some task waited for block I/O, cumulative"),
    ("psi_io_full_us", _L, "time all non-idle tasks waited for block I/O, cumulative"),
    ("disk_read_bytes", _L, "read from whole disks (/proc/diskstats), cumulative"),
    ("disk_write_bytes", _L, "written to whole disks, cumulative"),
    ("net_rx_bytes", _L, "received on every interface, loopback included (/proc/net/dev), cumulative"),
    ("net_tx_bytes", _L, "sent on every interface, cumulative"),
    ("mem_available_bytes", _L, "MemAvailable at the reading (instantaneous)"),
    ("major_page_faults", _L, "faults that read from disk, cumulative"),
]


#: Per stage attempt that ran a known SQL file scan (``stages`` has no such column: a new column
#: of a table bumps SCHEMA_VERSION, a new table does not). A stage without a row ran none, or
#: ran only scans whose size the driver never told (RDD API reads: ``sc.textFile``).
_STAGE_SCANS: list[tuple[str, pa.DataType, str]] = [
    ("run_id", _S, ""),
    ("stage_id", _I, ""),
    ("stage_attempt_id", _I, ""),
    ("scan_files", _L, ("files the stage's SQL file scans selected (their driver metric 'number of "
                        "files read', Photon's 'files read'), summed over its scans; null where "
                        "one of them did not tell")),
]


#: The input each run's stages read, measured as an undeclared run's ``runs.input_bytes`` is,
#: whether or not its size was declared: a declared run's ``runs`` row keeps only the declared
#: size, and a new ``runs`` column would bump SCHEMA_VERSION (the listener then refuses v1
#: stores, and no migration exists), so a new table, as ``stage_scans`` came. Written in the
#: batch of the run's final ``runs`` row (the listener) or its only one (ingest); a run without a
#: row here (recorded before it, or whose listener never wrote its last batch) has no measured
#: size besides a declared one. ``store edit --input-size`` changes ``runs`` alone: what the
#: stages read stays as measured.
_RUN_INPUTS: list[tuple[str, pa.DataType, str]] = [
    ("run_id", _S, ""),
    ("measured_input_bytes", _L, ("read by the succeeded stages, by the rule of an undeclared run's "
                                  "runs.input_bytes (docs/capture.md), declared size or not")),
    ("updated_ms", _L, "the updated_ms of the runs row written with it; the latest row of a run wins"),
]


def _schema(cols: list[tuple[str, pa.DataType, str]]) -> pa.Schema:
    return pa.schema([pa.field(n, t, nullable=True, metadata={"doc": d}) for n, t, d in cols])


#: table name -> Arrow schema; order of columns is the order in files.
TABLES: dict[str, pa.Schema] = {
    "runs": _schema(_RUNS),
    "executors": _schema(_EXECUTORS),
    "stages": _schema(_STAGES),
    "tasks": _schema(_TASKS),
    "host_samples": _schema(_HOST_SAMPLES),
    "stage_scans": _schema(_STAGE_SCANS),
    "run_inputs": _schema(_RUN_INPUTS),
}
#: The commit-mark table is written last in every batch.
COMMIT_TABLE = "runs"


def empty_table(name: str) -> pa.Table:
    # not Schema.empty_table(): it imports pandas (1 s cold) for a table of no rows
    return pa.Table.from_batches([], schema=TABLES[name])


def conform(name: str, table: pa.Table) -> pa.Table:
    """Cast ``table`` to the declared schema of ``name``: order, types, missing columns as nulls.

    Extra columns are an error: the schema module is the only place that may add one.
    """
    schema = TABLES[name]
    extra = set(table.column_names) - set(schema.names)
    if extra:
        raise ValueError(f"columns not in the {name!r} schema: {sorted(extra)}")
    arrays = []
    for field in schema:
        if field.name in table.column_names:
            arrays.append(table.column(field.name).cast(field.type))
        else:
            arrays.append(pa.nulls(table.num_rows, field.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def describe() -> str:
    """Human-readable listing of every table and column (used by docs and ``--help``)."""
    lines = [f"sparkpredict store schema v{SCHEMA_VERSION}"]
    for name, schema in TABLES.items():
        lines.append(f"\n[{name}]")
        for f in schema:
            doc = (f.metadata or {}).get(b"doc", b"").decode()
            lines.append(f"  {f.name:<34} {f.type!s:<8} {doc}")
    return "\n".join(lines)
