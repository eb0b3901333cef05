"""The input of a run's SQL file scans, measured by the size of the files they read.

Spark's task input metric is not a file scan's input on Spark 4: Parquet there reads
"vectored" (``parquet.hadoop.vectored.io.enabled``, on by default), fetching the column chunks
off the task's thread, and the metric counts about the footers (a 17.5 MB scan counted as
41,460 bytes, ``tests/data/eventlogs/aqe_executors_killed_spark4.zstd``). Where the reads are
counted, they count the columns read, so the same job's input would change with a Parquet
setting, a Spark version or a warm Databricks disk cache.

Every SQL file scan (``FileSourceScanExec`` and its Photon and GPU forms) tells the driver the
size of the files it selected, its ``size of files read`` metric, which Spark posts as a
``SparkListenerDriverAccumUpdates``. That is the scan's input here: the size of its files, as
``du`` tells it, whatever the reader fetched of them.

How a scan is tied to the stages that ran it: the plan (``SparkListenerSQLExecutionStart`` and
``SparkListenerSQLAdaptiveExecutionUpdate``) lists each node's metrics by accumulator id; a
stage whose accumulables hold a non-zero value of a scan's task-side metrics ran that scan
(Spark lists no metric a stage left at zero). A scan counts once per SQL execution that runs
it (one plan collected twice reads its files twice), stages over a persisted RDD sharing one
count, in the share of its partitions that successful tasks ran: ``df.show()`` runs one of
them. Stages that ran no known scan keep the task metric (:class:`.eventlog_rows.RunBuilder`).

A scan that outputs no row lists no task-side metric (a CSV or JSON scan whose pushed filter
keeps no row, a row-based Parquet reader whose filter skips every row group). Such a scan in one
stage with a scan that does list one (a ``union``, a bucketed join) ran in that stage too: the
plan's nodes between stage boundaries (exchanges, query stages, subqueries, cached relations) run
in one stage, so the scans of one such fragment count together where all the stage's partitions
ran (a union of CSV and JSON whose
JSON side kept no row counted 5.5 of 15.2 MB before).

A scan also tells the driver how many files it selected (``number of files read``; Photon's
``files read``): a stage that ran known scans records their sum (:attr:`ScanInput.stage_files`),
the files its tasks were packed from, whatever share of them ran.

The listener applies the same rule (``ScanInput.java``); a test replays every log of
``tests/data/eventlogs`` through it and compares the rows.
"""
from __future__ import annotations

import collections
from typing import Any

#: The driver-side metric of a SQL file scan that holds the size of the files it selected
FILES_SIZE = "size of files read"
#: ... and the number of files it selected: Spark's (and its GPU form's), Photon's
FILES_NUM = "number of files read"
FILES_NUM_PHOTON = "files read"
#: Scans whose metric ids are kept, the most recently planned (ScanInput.SCANS_KEPT): a
#: driver that runs for weeks (a file stream's micro-batches) plans a scan per batch
SCANS_KEPT = 1_000
#: SQL executions remembered as ended, the latest (ScanInput.java keeps as many).
ENDED_KEPT = 10_000
#: Plan nodes whose children run in stages of their own (or not at all, a cached relation's
#: plan): a node whose name holds one of these ends a stage fragment. Generous on purpose: a
#: fragment split too finely only leaves a scan that output no row to its stage's task metric.
STAGE_BOUNDARIES = ("Exchange", "Stage", "Subquery", "Reused", "InMemory", "AdaptiveSparkPlan")

SQL_EXECUTION_START = b"org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart"
SQL_ADAPTIVE_UPDATE = b"org.apache.spark.sql.execution.ui.SparkListenerSQLAdaptiveExecutionUpdate"
SQL_DRIVER_UPDATES = b"org.apache.spark.sql.execution.ui.SparkListenerDriverAccumUpdates"
SQL_EXECUTION_END = b"org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd"


class _Scan:
    __slots__ = ("counted", "files_bytes", "num_files", "num_id", "reads", "siblings", "task_ids")

    def __init__(self, task_ids: tuple[int, ...], num_id: int | None) -> None:
        self.task_ids = task_ids
        self.num_id = num_id  # its FILES_NUM metric's id
        self.files_bytes: int | None = None
        self.num_files: int | None = None
        # Per read of the scan (a SQL execution; None for stages over a persisted RDD, whose
        # reads of it one count shares) and per RDD a stage ran it in: [its partitions, a flag
        # per partition a successful task ran, None once all of them ran].
        self.reads: dict[str | None, dict[int, list[Any]]] = {}
        self.counted: dict[str | None, int] = {}  # bytes counted per read
        # the other scans of its stage fragment in the latest plan that showed it
        self.siblings: frozenset[int] = frozenset()


def counted_bytes(files_bytes: int, ran: int, partitions: int) -> int:
    """The share of ``files_bytes`` that ``ran`` of ``partitions`` partitions read (as the
    listener computes it: one double product, truncated)."""
    if partitions <= 0 or ran >= partitions:
        return files_bytes
    return int(float(files_bytes) * ran / partitions)


def _whole(v: Any) -> int | None:
    """An accumulator value as the log writes it (a string for SQL metrics), or None."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str):
        try:
            return int(v.strip())
        except ValueError:
            return None
    return None


def is_reader_probe(details: Any) -> bool:
    """Whether a stage's call site (its ``Details``) is a DataFrameReader's: the first line is the
    Spark method the application called, a reader's when it ran the job to read a schema (a CSV
    header's first line, ``inferSchema``, JSON's inference, Parquet's ``mergeSchema``:
    ``org.apache.spark.sql.classic.DataFrameReader.csv(...)``), a Dataset's or SQLExecution's for
    an action. Such a stage reads no input of the run's, which reads the files again (a
    one-partition CSV read with a header counted twice its size, with ``inferSchema`` three
    times). As ScanInput.isReaderProbe tells it."""
    if not isinstance(details, str):
        return False
    first = details.split("\n", 1)[0].strip()
    return first.startswith(("org.apache.spark.sql.DataFrameReader.", "org.apache.spark.sql.classic.DataFrameReader."))


class ScanInput:
    """The run's SQL file scans: their metric ids, their files' size and what was counted."""

    def __init__(self) -> None:
        self._scans: collections.OrderedDict[int, _Scan] = collections.OrderedDict()
        self._scan_of: dict[int, int] = {}  # task-side metric id -> its scan's FILES_SIZE id
        self._num_of: dict[int, int] = {}  # FILES_NUM metric id -> its scan's FILES_SIZE id
        # per running SQL execution, the scans it read: their reads of it end with it (one
        # DataFrame collected every minute for weeks must not keep a read per collect)
        self._by_execution: dict[str, set[int]] = {}
        # SQL executions ended lately: a stage can complete after its execution ended (adaptive
        # execution cancels the stages left once a limit is reached), and its read must not stay
        self._ended: collections.OrderedDict[str, None] = collections.OrderedDict()
        #: bytes counted for the run's scans (part of its measured input)
        self.counted = 0
        #: files the scans of the stage last passed to :meth:`stage_completed` selected, summed;
        #: None where one of them did not tell (or the stage ran none)
        self.stage_files: int | None = None

    def plan(self, ev: dict) -> None:
        """Register the scans of a SQL execution's plan (start or adaptive update)."""
        todo: list[tuple[Any, int]] = [(ev.get("sparkPlanInfo"), 0)]
        fragments: dict[int, set[int]] = {}  # stage fragment -> its scans' FILES_SIZE ids
        last_fragment = 0
        while todo:
            node, fragment = todo.pop()
            if not isinstance(node, dict):
                continue
            children = node.get("children")
            if isinstance(children, list):
                name = node.get("nodeName")
                boundary = isinstance(name, str) and any(b in name for b in STAGE_BOUNDARIES)
                for child in children:
                    if boundary:
                        last_fragment += 1
                    todo.append((child, last_fragment if boundary else fragment))
            metrics = node.get("metrics")
            if not isinstance(metrics, list):
                continue
            size_id, task_ids = None, []
            num_id = photon_num_id = None
            for m in metrics:
                i = m.get("accumulatorId") if isinstance(m, dict) else None
                if not isinstance(i, int) or isinstance(i, bool):
                    continue
                if size_id is None and m.get("name") == FILES_SIZE:
                    size_id = i
                else:
                    if num_id is None and m.get("name") == FILES_NUM:
                        num_id = i
                    if photon_num_id is None and m.get("name") == FILES_NUM_PHOTON:
                        photon_num_id = i
                    task_ids.append(i)
            if size_id is not None:
                self._register(size_id, num_id if num_id is not None else photon_num_id, tuple(task_ids))
                fragments.setdefault(fragment, set()).add(size_id)
        siblings: dict[int, set[int]] = {}  # a scan shown in several fragments (reused) has all
        for ids in fragments.values():
            for size_id in ids:
                siblings.setdefault(size_id, set()).update(ids - {size_id})
        for size_id, others in siblings.items():
            scan = self._scans.get(size_id)
            if scan is not None:
                scan.siblings = frozenset(others)

    def _register(self, size_id: int, num_id: int | None, task_ids: tuple[int, ...]) -> None:
        scan = self._scans.get(size_id)
        if scan is None:
            scan = self._scans[size_id] = _Scan(task_ids, num_id)
            for i in task_ids:
                self._scan_of[i] = size_id
            if num_id is not None:
                self._num_of[num_id] = size_id
            while len(self._scans) > SCANS_KEPT:
                old_id, old = self._scans.popitem(last=False)
                for i in old.task_ids:
                    if self._scan_of.get(i) == old_id:
                        del self._scan_of[i]
                if old.num_id is not None and self._num_of.get(old.num_id) == old_id:
                    del self._num_of[old.num_id]
        else:
            self._scans.move_to_end(size_id)

    def execution_ended(self, ev: dict) -> None:
        """Forget the reads of a SQL execution that ended (SparkListenerSQLExecutionEnd)."""
        execution = ev.get("executionId")
        if execution is None:
            return
        self._ended[str(execution)] = None
        while len(self._ended) > ENDED_KEPT:
            self._ended.popitem(last=False)
        self._forget(str(execution))

    def _forget(self, execution: str) -> None:
        for size_id in self._by_execution.pop(execution, ()):
            scan = self._scans.get(size_id)
            if scan is not None:
                scan.reads.pop(execution, None)
                scan.counted.pop(execution, None)

    def driver_updates(self, ev: dict) -> None:
        """Take the files' size and number of the scans among a SparkListenerDriverAccumUpdates."""
        for pair in ev.get("accumUpdates") or ():
            if not isinstance(pair, list) or len(pair) != 2 or not isinstance(pair[0], int):
                continue
            value = _whole(pair[1])
            if value is None:
                continue
            scan = self._scans.get(pair[0])
            if scan is not None:
                scan.files_bytes = max(0, value)  # the latest value, as Spark's SQL UI keeps it
            size_id = self._num_of.get(pair[0])
            counted = self._scans.get(size_id) if size_id is not None else None
            if counted is not None:
                counted.num_files = max(0, value)

    def stage_completed(self, accumulables: Any, *, rdd_id: int | None, partitions: int | None,
                        ran: set[int], execution: str | None, persisted: bool, probe: bool = False) -> bool:
        """Count the known scans this stage ran, with the partitions its successful tasks ran;
        False when it ran none (its task metric is then its input).

        ``execution``: the stage's SQL execution id; ``persisted``: its RDDs include a
        persisted one; ``probe``: a DataFrameReader ran it (:func:`is_reader_probe`)."""
        self.stage_files = None
        if not self._scan_of or not isinstance(accumulables, list):
            return False
        here: set[int] = set()
        for a in accumulables:
            if not isinstance(a, dict):
                continue
            size_id = self._scan_of.get(a.get("ID"))  # type: ignore[arg-type]
            scan = self._scans.get(size_id) if size_id is not None else None
            # Spark lists no metric a stage left at zero: a stage over a cached copy of the
            # scan's output lists none of its metrics (nor, alas, a scan that output no row)
            if size_id is not None and scan is not None and scan.files_bytes is not None \
                    and _whole(a.get("Value")):
                here.add(size_id)
        # A scan that output no row lists no metric, but ran where the scans of its stage
        # fragment did, when all the stage's partitions ran (a limit over a union may run the
        # partitions of one of its scans only)
        whole = bool(partitions) and len({p for p in ran if 0 <= p < (partitions or 0)}) >= (partitions or 0)
        for size_id in list(here) if whole else ():
            for other in self._scans[size_id].siblings:
                sibling = self._scans.get(other)
                if sibling is not None and sibling.files_bytes is not None:
                    here.add(other)
        # The same plan run again (`df.collect()` twice) reads its files again: each SQL
        # execution is a read of its own. Over a persisted RDD the executions share one: the
        # count after `df.cache(); df.show()` reads the partitions the show did not.
        read = None if persisted else execution
        rdd = rdd_id if rdd_id is not None else -1
        if read is not None and here:
            self._by_execution.setdefault(read, set()).update(here)
        # a reader's schema probe: its scans ran, but read no input of the run's
        for size_id in () if probe else sorted(here):
            scan = self._scans[size_id]
            by_rdd = scan.reads.setdefault(read, {})
            state = by_rdd.get(rdd)
            if state is None:
                n = partitions or 0
                state = by_rdd[rdd] = [n, bytearray(n) if n > 0 else None]
            n, seen = state
            if seen is not None:
                for part in ran:
                    if 0 <= part < n:
                        seen[part] = 1
                if seen.count(1) >= n:
                    state[1] = None  # all ran: nothing left to tell apart
            files = scan.files_bytes or 0  # known: `here` holds only scans of known size
            now = max(files if flags is None else counted_bytes(files, flags.count(1), total)
                      for total, flags in by_rdd.values())
            before = scan.counted.get(read, 0)
            if now > before:
                self.counted += now - before
                scan.counted[read] = now
        # The files its scans selected, whatever share of their partitions ran: FilePartition
        # packed the stage's tasks from all of them.
        self.stage_files = self._files_of(here)
        # counted as it was; what it read is then forgotten, as its execution's end forgot the rest
        if read is not None and read in self._ended:
            self._forget(read)
        return bool(here)

    def _files_of(self, here: set[int]) -> int | None:
        """The files the scans ``here`` selected, summed; None where one of them did not tell."""
        selected: int | None = 0 if here else None
        for size_id in here:
            told = self._scans[size_id].num_files
            selected = None if selected is None or told is None else selected + told
        return selected
