"""Ingest parsed event logs into the history store (``sparkpredict ingest``).

This module owns the store side of event-log ingest: :func:`ingest_event_logs` finds the logs
under its paths, skips those the store already holds, parses the others with
:mod:`.eventlog` (which reads a log into rows and touches no store) and appends each log's rows
as one batch, reporting each log's outcome in an :class:`IngestReport` of :class:`FileOutcome`.
Those three names are still importable from :mod:`sparkpredict.capture.eventlog`.

Idempotence: every ingested run row keeps its log's path and fingerprint (sizes, mtimes and a
hash of the first 64 KiB). A log whose path and fingerprint are already in the store is not read
again, and a log whose application is already in the store (from the listener or an earlier
ingest under another name) adds nothing: appending would duplicate its stage and task rows.
One exception: a log that holds more of a run that ingest itself stored cut short (a log still
being written, ``.inprogress``, or a partial copy; the run never ended, or has fewer tasks)
replaces that copy, unless the run was edited since; otherwise the skip says so. So does the log
of a run an older ingest stored (input measured under older rules, or no ``stage_scans``
rows: :data:`~.schema.SCANS_RECORDED_SINCE`), as the report's summary counts. The listener's
record of a run is the run's: a log ingested while its run was going, before the listener first
wrote, leaves a copy that the listener removes at its first write (and any ingest after, should
the listener not have). A log that lost
events before its end (undecodable data, a line that is not JSON before the last, a missing or
cut rolling file) is not stored at all, so that an intact copy can be ingested later. One
ingest or edit at a time writes a local store (:meth:`Store.writer_lock`). For the same reason a job name
given to ingest (``job=``, ``--job``) names the runs that call stores: a run already stored keeps
its job, and the skip says so when the names differ.
"""
from __future__ import annotations

import contextlib
import logging
import os
import shlex
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast

import pyarrow as pa

from ..errors import IngestError, InputError, SparkPredictError
from ..store import schema as S
from ..store.io import INGEST_LABEL
from ..units import plural
from .eventlog import NotWrittenYet, ParsedLog, _parse_source, _system_pool, peek_run_id
from .eventlog_files import (
    ROLLING_PREFIX,
    LogSource,
    find_logs,
    fingerprint,
    rolling_log,
    single_log,
    stored_path,
    unique_logs,
    unreadable,
)

if TYPE_CHECKING:
    from ..store.io import Store

# The logger ingest had before it left eventlog.py: logging set up for it (and the CLI's
# printed_here) keeps working.
log = logging.getLogger("sparkpredict.capture.eventlog")


@dataclass
class FileOutcome:
    """One log's outcome. ``run_id`` and ``status`` are the stored run's when the log was
    skipped (``unchanged``, ``exists``); ``pending``: a log still being written (``.inprogress``)
    whose application has only just started (no start event yet; its warning says what it
    holds), skipped for a later ingest; unwritten for :data:`~.eventlog.DIED_BEFORE_START_S`,
    such a log ``failed`` instead (its application died before it started); a log that
    ``failed`` has no status (nothing of it was stored), and its run id where it could be read;
    ``stages`` and ``tasks`` count the rows it added, and are None when it added none (nothing
    was stored, or the log was not read)."""

    path: str
    outcome: Literal["ingested", "unchanged", "exists", "pending", "failed"]
    run_id: str | None = None
    status: str | None = None
    stages: int | None = None
    tasks: int | None = None
    warnings: list[str] = field(default_factory=list)
    error: str | None = None
    fix: str | None = None  # with every error: what to do about that log
    #: the stored copy of the run this log replaced ("incomplete, 8,354 tasks"): ingest keeps one
    #: copy of a run, and a fuller log of a run it stored cut short (still being written) replaces it
    replaced: str | None = None
    #: why it was replaced (:data:`REPLACED_BECAUSE`): ``"fuller"`` (stored cut short),
    #: ``"measured"`` (input measured under older rules), ``"scans"`` (stored before ingest
    #: recorded its scans' files), ``"probes"`` (stored when a reader's schema probes counted as
    #: input); None when it replaced nothing
    replaced_why: Literal["fuller", "measured", "scans", "probes"] | None = None


@dataclass
class IngestReport:
    """Summary of one :func:`ingest_event_logs` call, per file and in total."""

    store: str
    files: list[FileOutcome] = field(default_factory=list)
    #: paths of logs found more than once (given twice, or inside a folder also given): read once
    duplicates: list[str] = field(default_factory=list)
    #: False when the call found no store at ``store`` and stored nothing: it leaves none there
    store_exists: bool = True
    #: the store's small batches merged after the ingest (:func:`~sparkpredict.store.compact.auto_compact`), else None
    compaction: Any = None
    #: what the ingest mended in the store before reading any log, one line per run: a run that
    #: earlier ingests left stored twice, or an ingested copy of a run the listener recorded
    repairs: list[str] = field(default_factory=list)

    def _count(self, outcome: str) -> int:
        return sum(f.outcome == outcome for f in self.files)

    @property
    def files_seen(self) -> int:
        return len(self.files)

    @property
    def files_ingested(self) -> int:
        return self._count("ingested")

    @property
    def files_unchanged(self) -> int:
        """Skipped without reading: same path and fingerprint as an ingested run."""
        return self._count("unchanged")

    @property
    def files_existing(self) -> int:
        """Skipped because their application is already in the store."""
        return self._count("exists")

    @property
    def files_pending(self) -> int:
        """Skipped as not written yet: in-progress logs of applications that have just started."""
        return self._count("pending")

    @property
    def files_failed(self) -> int:
        return self._count("failed")

    @property
    def runs_added(self) -> int:
        """Runs new to the store: ingested logs, less those that replaced a stored copy."""
        return sum(f.outcome == "ingested" and not f.replaced for f in self.files)

    @property
    def runs_replaced(self) -> int:
        """Stored copies of runs that ingested logs replaced (``FileOutcome.replaced``)."""
        return sum(f.outcome == "ingested" and bool(f.replaced) for f in self.files)

    @property
    def warnings(self) -> dict[str, list[str]]:
        return {f.path: f.warnings for f in self.files if f.warnings}

    @property
    def errors(self) -> dict[str, str]:
        return {f.path: f.error for f in self.files if f.error}

    def to_dict(self) -> dict:
        counts = {k: getattr(self, k) for k in ("files_seen", "files_ingested", "files_unchanged",
                                                 "files_existing", "files_pending", "files_failed",
                                                 "runs_added", "runs_replaced")}
        return {"store": self.store, **counts, "files": [asdict(f) for f in self.files],
                "duplicates_ignored": self.duplicates, "store_exists": self.store_exists,
                "repairs": self.repairs}


def ingest_event_logs(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
                      store: str | os.PathLike[str] | Store | None = None, *,
                      on_error: Literal["warn", "raise"] = "warn", job: str | None = None,
                      compact: bool = True) -> IngestReport:
    """Append the runs of Spark event logs to a history store, each log as one atomic batch.

    Parameters
    ----------
    paths : path or list of paths
        Event-log files, rolling ``eventlog_v2_*`` folders, or folders holding them
        (e.g. ``spark.eventLog.dir``), searched recursively.
    store : path, Store or None
        The history store (default: the embedded store, see :mod:`sparkpredict.config`).
    on_error : {"warn", "raise"}
        ``"warn"`` records a log that cannot be read in the report and goes on with the others;
        ``"raise"`` raises :class:`~sparkpredict.errors.IngestError` at the first one (logs
        before it stay ingested). A log that lost events before its end (``ParsedLog.damage``:
        undecodable compressed data, a line that is not JSON before the last, a rolling file
        cut short with more after it, a missing rolling file) counts as one that cannot be
        read: nothing of it is stored, so that an intact copy can be ingested later. A log
        merely cut at its end, as one still being written is, is stored as an ``incomplete``
        run, which a later, fuller log of the run replaces (``FileOutcome.replaced``). A log
        whose run is already stored otherwise is skipped (``exists``), with a warning when it
        holds more of the run than the store does (the listener recorded it, or it was edited).
    job : str, optional
        The job of every run this call stores, instead of what each log says
        (``spark.sparkpredict.job``, else the application name): logs of unrelated applications
        that share an app name (``Spark shell``) would otherwise become one job. A log whose run
        is already stored (``unchanged``, ``exists``) is not read again and its run keeps its
        stored job; the skip warns when that differs from ``job``.
    compact : bool
        Once the logs are stored, merge the store's small batches when enough arrived since its
        last compaction (:func:`~sparkpredict.store.compact.auto_compact`: local stores, 256
        batches; a failure is a warning).

    Returns
    -------
    IngestReport
        Per-file outcome (ingested / unchanged / exists / failed), warnings and errors.

    Raises
    ------
    IngestError
        A path does not exist, or no event log was found under the paths.
    InputError
        ``job`` is blank or not a string.
    StoreError
        The store cannot be opened or written.
    KeyboardInterrupt
        Ctrl-C (or :class:`~sparkpredict.errors.Terminated`): the logs dealt with before it are
        stored, each whole, and :func:`partial_report` of the exception says which; a rerun
        skips them as ``unchanged``.
    """
    from ..store import io as store_io

    if on_error not in ("warn", "raise"):
        raise InputError(f"on_error={on_error!r}", "use 'warn' or 'raise'")
    _check_job(job)
    if isinstance(paths, bytes):  # a path as bytes (os.fsencode's), not a list of numbers
        paths = os.fsdecode(paths)
    given: list[Any] = [paths] if isinstance(paths, (str, os.PathLike)) else \
        list(paths) if isinstance(paths, Iterable) else [paths]
    bad = [p for p in given if not isinstance(p, (str, os.PathLike))]
    if bad or not given:
        what = f"{bad[0]!r} is not a path" if bad else "no event-log path given"
        raise InputError(what, "give event-log files or folders (spark.eventLog.dir) as paths")
    sources, repeated = unique_logs(find_logs(given))
    if not sources:
        raise IngestError("no event logs found under " + ", ".join(map(str, given)),
                          "point at spark.eventLog.dir or at event-log files")
    if isinstance(store, store_io.Store):
        report = _ingest_into(store, sources, repeated, on_error, job)
        st = store
    else:
        try:
            with store_io.opened_to_write(store) as st:
                report = _ingest_into(st, sources, repeated, on_error, job)
        except KeyboardInterrupt as exc:
            partial = partial_report(exc)
            if partial is not None:  # a store that got nothing is removed on the way out
                partial.store_exists = st.exists()
            raise
        report.store_exists = st.exists()
    if compact and st.exists():
        from ..store.compact import auto_compact

        # after the writer lock is let go: the compaction takes it again. Also when this ingest
        # stored nothing: one killed before its compaction left it due, and its rerun finds
        # every log stored (a listing when nothing is due)
        with _reported_if_interrupted(report, compacting=True):
            report.compaction = auto_compact(st)
    return report


def partial_report(exc: BaseException) -> IngestReport | None:
    """What an :func:`ingest_event_logs` stopped by ``exc`` (a :class:`KeyboardInterrupt`: Ctrl-C,
    or :class:`~sparkpredict.errors.Terminated`) had done: the logs it dealt with, each stored
    whole or not at all (the one being read then is in neither); None when it stopped before the
    first."""
    report = getattr(exc, "ingest_report", None)
    return report if isinstance(report, IngestReport) else None


@contextlib.contextmanager
def _reported_if_interrupted(report: IngestReport, compacting: bool = False) -> Iterator[None]:
    """``compacting``: the store's compaction after every log was stored, as the CLI says."""
    try:
        yield
    except KeyboardInterrupt as exc:
        # the exception stays what it was (a Terminated keeps its signal); its caller can still
        # say how many logs were stored before it (partial_report)
        exc.ingest_report = report  # type: ignore[attr-defined]
        exc.ingest_compacting = compacting  # type: ignore[attr-defined]
        raise


def _ingest_into(st: Store, sources: list[LogSource], repeated: list[str], on_error: str,
                 job: str | None) -> IngestReport:
    report = IngestReport(store=st.path, duplicates=repeated)
    # Two ingests of one folder at once (overlapping cron runs) each found a log missing and
    # each appended it: its stage and task rows were stored twice. The lock makes the second
    # wait, then read what the first stored.
    with _reported_if_interrupted(report), st.writer_lock("ingest"):
        # in the report, not only the log: the CLI holds this logger's warnings back, and the
        # docs promise the user hears of each repair
        report.repairs = _one_copy_each(st) + _drop_listened(st)
        known = _Known.of(st)
        for src in sources:
            src = _as_it_is_now(src)
            with _system_pool():
                outcome = _ingest_one(src, st, known, job)
            report.files.append(outcome)
            if outcome.outcome == "failed":
                log.warning("event log %s not ingested: %s", src.path, outcome.error)
                if on_error == "raise":
                    raise IngestError(outcome.error or "failed", f"{outcome.fix or 'fix or remove that log'}"
                                      " and rerun; logs before it were ingested")
            elif outcome.warnings:
                log.info("event log %s: %d warnings", src.path, len(outcome.warnings))
    return report


def _check_job(job: object) -> None:
    from ..config import check_job_name

    check_job_name(job, "give the name to store the runs under, e.g. --job nightly-etl (leave it "
                        "out to keep each log's spark.sparkpredict.job, else its app name)")


#: A batch id carries at most this many characters of its label (:func:`new_batch_id`).
_MAX_LABEL = 60

#: Statuses of a run whose end the store has not recorded: a later log of it may hold more.
_UNFINISHED = ("incomplete", "running")


#: The first sparkpredict whose ingest measures a run as this one does. A copy that an older
#: ingest stored (input bytes before SQL scans counted their files, before the map stages'
#: reads were counted once across jobs and Databricks' disk-cache hits added, another status
#: for a log whose executors all failed) is read again from its log, and replaces the stored
#: copy where ingest may replace it.
MEASURED_SINCE = S.INPUT_MEASURED_SINCE

#: Why an ingested log replaced a stored copy of its run (``FileOutcome.replaced_why``), as the
#: report says it.
REPLACED_BECAUSE = {
    "fuller": "stored cut short",
    "measured": "input measured before sparkpredict " + ".".join(map(str, S.INPUT_MEASURED_SINCE)),
    "scans": "stored before sparkpredict " + ".".join(map(str, S.SCANS_RECORDED_SINCE))
             + " recorded its scans' files",
    "probes": "stored before sparkpredict " + ".".join(map(str, S.PROBES_LEFT_OUT_SINCE))
              + " left a reader's schema probes out of its input",
}


@dataclass
class _StoredRun:
    status: str | None
    num_tasks: int
    source: str | None
    job: str | None = None
    #: the sparkpredict that wrote it (``sparkpredict_version``)
    writer: str | None = None
    #: its input size was declared (``store edit --input-size``, ``spark.sparkpredict.inputBytes``)
    declared: bool = False
    #: :func:`_replaceable` of it, once asked
    replaceable: tuple[str | None, str] | None = field(default=None, repr=False, compare=False)

    def measured_before(self) -> bool:
        """Ingest stored it under older rules (:data:`MEASURED_SINCE`), and no one has declared
        its size since (the fix the skip of a copy that cannot be replaced names)."""
        if self.source != "eventlog" or self.declared:
            return False  # the listener's copy: no log to read it again from
        return S.measured_before(self.writer)

    def scans_before(self) -> bool:
        """Ingest stored it before it recorded ``stage_scans`` (:data:`~.schema.SCANS_RECORDED_SINCE`):
        its stages keep no file counts. A declared size does not end this: the log read again
        keeps a size declared in it, and an edited copy is not replaced (:func:`_replaceable`)."""
        return self.source == "eventlog" and S.scans_before(self.writer)

    def probes_before(self) -> bool:
        """Ingest stored it when a reader's schema probes counted as input
        (:data:`~.schema.PROBES_LEFT_OUT_SINCE`). A declared size ends this: the probes changed
        only what was measured."""
        return self.source == "eventlog" and not self.declared and S.probes_before(self.writer)

    def read_again(self) -> bool:
        """Ingest stored it under rules since changed that a read of its log again mends, where
        its copy may be replaced, and quietly left where not (:func:`_rescans`)."""
        return self.scans_before() or self.probes_before()


@dataclass
class _Known:
    """What the store holds, as ingest looks logs up in it."""

    runs: dict[str, _StoredRun]
    by_file: dict[tuple[str, str], str]  # (source path, fingerprint) -> run id ingested from it
    by_name: dict[str, str]  # run id, and as Spark names its log files (app_attempt) -> run id
    #: a run id as this sparkpredict writes it -> the id a store written before keeps for the same
    #: application (``app-<second>-0000``, before schema.run_id added the driver's start)
    legacy: dict[str, str] = field(default_factory=dict)
    #: the labels of the store's ingest batches as the ingest began (:meth:`has_own_batch`)
    _labels: set[str] | None = None

    def has_own_batch(self, st: Store, run_id: str) -> bool:
        """Whether a batch ingest wrote under ``run_id``'s label was in the store as this ingest
        began: none, and its stored copy cannot be replaced (a compaction merged it). One
        listing for the whole ingest: asking :func:`_replaceable` of every copy stored before
        ``stage_scans`` listed the store once a log, at every scheduled ingest of a compacted
        history, for copies that stay as they are."""
        if self._labels is None:
            self._labels = set(_ingest_batches(st))
        return _label(run_id) in self._labels

    @classmethod
    def of(cls, st: Store) -> _Known:
        t = cast(pa.Table, st.read("runs", form="arrow", columns=[
            "run_id", "status", "num_tasks", "source", "source_path", "source_fingerprint", "job",
            "start_ms", "sparkpredict_version", "input_bytes_source"])).to_pydict()
        known = cls(runs={}, by_file={}, by_name={})
        for rid, status, n, source, path, fp, job, start, writer, size in zip(
                t["run_id"], t["status"], t["num_tasks"], t["source"], t["source_path"],
                t["source_fingerprint"], t["job"], t["start_ms"], t["sparkpredict_version"],
                t["input_bytes_source"]):
            known.add(rid, _StoredRun(status, n or 0, source, job, writer, size == "declared"), path, fp)
            app, _, attempt = rid.partition("/")
            if start is not None and "@" not in app:
                now = S.run_id(app, attempt or None, start)
                if now != rid:
                    known.legacy[now] = rid
        return known

    def stored_id(self, run_id: str) -> str:
        """The id under which the store holds the application of ``run_id``."""
        return run_id if run_id in self.runs else self.legacy.get(run_id, run_id)

    def add(self, run_id: str, run: _StoredRun, path: str | None = None, fp: str | None = None) -> None:
        self.runs[run_id] = run
        self.by_name.update({run_id: run_id, run_id.replace("/", "_"): run_id})
        if path is not None and fp is not None:
            self.by_file[(path, fp)] = run_id


def _label(run_id: str) -> str:
    """The label of the batch ingest stores ``run_id`` in: new_batch_id("ingest-" + run id) is
    <13-digit ms>-<label>-<12 hex>."""
    from ..store.io import new_batch_id

    return new_batch_id(INGEST_LABEL + run_id)[14:-13]


def _batches(st: Store) -> dict[str, list[tuple[str, str]]]:
    """label -> (batch id, runs file) of the store's committed batches, oldest first: the runs
    folder listed once. A batch id is <13-digit ms>-<label>-<12 hex> (:func:`new_batch_id`)."""
    from ..store.io import batch_label

    out: dict[str, list[tuple[str, str]]] = {}
    try:
        # a batch a compaction replaced is no copy of anything: its rows are read from another
        batches = st.visible_marks()
    except OSError:
        return out
    for b, path in sorted(batches.items()):
        label = batch_label(b)
        if label is not None:
            out.setdefault(label, []).append((b, path))
    return out


def _ingest_batches(st: Store) -> dict[str, list[tuple[str, str]]]:
    """label -> (batch id, runs file) of the committed batches ingest wrote under it, oldest first."""
    return {label: b for label, b in _batches(st).items() if label.startswith(INGEST_LABEL)}


def _listener_labels(ingest_label: str, labels: Iterable[str]) -> list[str]:
    """Of ``labels``, those the listener's batches of the run(s) stored under ``ingest_label``
    could carry: the listener labels a batch with the run id alone, cut to the same length."""
    plain = ingest_label[len(INGEST_LABEL):]
    if len(ingest_label) < _MAX_LABEL:
        return [plain] if plain in labels else []
    return [label for label in labels if label.startswith(plain) and not label.startswith(INGEST_LABEL)]


def _one_copy_each(st: Store) -> list[str]:
    """Keep one ingested copy of each run: the latest, when earlier ingests left more (two ran
    at once before they took the lock, or one stopped between storing a fuller copy of a run and
    dropping the copy it replaced). Returns one line per run mended, for the report."""
    said: list[str] = []
    for batches in _ingest_batches(st).values():
        if len(batches) < 2:
            continue
        for rid, mine in st.copies_by_run(batches).items():
            if len(mine) < 2:
                continue
            for b in mine[:-1]:
                st.drop_batch(b)
            others = "the other" if len(mine) == 2 else f"the {len(mine) - 1} others"
            said.append(f"run {rid} was stored by ingest {len(mine)} times (an ingest stopped between "
                        f"storing a fuller copy and removing the older one, or ingests ran at once): "
                        f"kept the latest copy and removed {others}")
            log.warning("store %s: run %s was stored by ingest %d times; kept the latest copy",
                        st.path, rid, len(mine))
    return said


def _listener_batches(st: Store, run_id: str) -> list[str]:
    """The committed batches the listener wrote of ``run_id``."""
    by_label = _batches(st)
    return [b for label in _listener_labels(_label(run_id), by_label)
            for b, path in by_label[label] if st.run_of_batch(path) == run_id]


def _drop_listened(st: Store) -> list[str]:
    """Drop ingest's copies of runs the listener recorded too: a log ingested while its run was
    going, before the listener's first write. The listener removes such a copy itself once it
    writes; this heals a store where it could not (an older listener, a failed removal). Reads
    only the runs files of batches whose labels match. Returns one line per run mended, for the
    report."""
    by_label = _batches(st)
    said: list[str] = []
    for label, ingested in by_label.items():
        if not label.startswith(INGEST_LABEL):
            continue
        listened = {st.run_of_batch(path) for other in _listener_labels(label, by_label)
                    for _, path in by_label[other]}
        if not listened:
            continue
        for rid, mine in st.copies_by_run(ingested).items():
            if rid not in listened:
                continue
            for b in mine:
                st.drop_batch(b)
            said.append(f"run {rid} was stored both by the listener and from its event log (ingested "
                        "while the run was going): kept the listener's rows and removed the ingested copy")
            log.warning("store %s: run %s was stored both by the listener and from its event log "
                        "(ingested while the run was going); kept the listener's rows", st.path, rid)
    return said


def _holds_more(parsed: ParsedLog, stored: _StoredRun) -> bool:
    """Whether intact ``parsed`` holds more of its run than the store's row says (the store has
    an earlier, cut copy of it: an in-progress log, a partial copy)."""
    n = parsed.tables["runs"]["num_tasks"][0].as_py() or 0
    ends = stored.status in _UNFINISHED and parsed.status not in _UNFINISHED
    return parsed.damage is None and (ends or n > stored.num_tasks)


def _holds_less(parsed: ParsedLog, stored: _StoredRun) -> bool:
    """``parsed`` holds less of its run than the stored copy: the copy ended and the log did not
    (a cut copy of it), or the log has fewer tasks."""
    n = parsed.tables["runs"]["num_tasks"][0].as_py() or 0
    return (parsed.status in _UNFINISHED and stored.status not in _UNFINISHED) or n < stored.num_tasks


def _replaceable(st: Store, run_id: str, stored: _StoredRun) -> tuple[str | None, str]:
    """(the batch of the stored copy of ``run_id`` when a fuller log may replace it, else None;
    why not): ingest stored it in one batch, and no edit has been made to it since (``sparkpredict
    store edit`` adds runs rows elsewhere, which would outlive the copy)."""
    if stored.source != "eventlog":
        return None, "the listener recorded it"  # many batches, written as the run went
    label = _label(run_id)
    mine = st.copies_by_run(_ingest_batches(st).get(label, [])).get(run_id, [])
    if len(mine) != 1:
        if not mine:  # ingest stored it (source eventlog), and no batch of its own holds it now
            return None, "`sparkpredict store compact` merged its stored copy with other runs"
        return None, "its stored copy is not one batch ingest wrote"
    from ..store.io import batch_label

    def may_hold(batch: str) -> bool:
        # an ingest batch holds the one run its label names: on a store of thousands of
        # ingested logs, reading them all cost 2.5 s for each log replaced (an upgrade
        # re-reads every log ingested before it)
        lab = batch_label(batch)
        return lab is None or not lab.startswith(INGEST_LABEL) or lab == label

    rows = st.read("runs", form="arrow", columns=["run_id"], run_ids=[run_id], all_rows=True, batches=may_hold)
    if rows.num_rows != 1:
        return None, "it was edited with `sparkpredict store edit`, whose edits keep it"
    return mine[0], ""


def _replaceable_once(st: Store, run_id: str, stored: _StoredRun) -> tuple[str | None, str]:
    """:func:`_replaceable`, asked once a run: a copy stored before ``stage_scans`` is asked
    before its log is read, and again after."""
    if stored.replaceable is None:
        stored.replaceable = _replaceable(st, run_id, stored)
    return stored.replaceable


def _rescans(st: Store, known: _Known, run_id: str) -> bool:
    """Read the log of stored ``run_id`` again for its scans' files or its input without a
    reader's schema probes: ingest stored it before it recorded them, or counted the probes, and
    the copy may be replaced. One that may not (a compaction merged it, an
    edit) is skipped unread, quietly: it has no fix but a fresh store, and a scheduled ingest of
    a compacted history would parse and warn of every log at every run."""
    stored = known.runs[run_id]
    if not stored.read_again() or stored.measured_before():
        return False  # measured_before: read again whatever its copy, its skip warns
    return known.has_own_batch(st, run_id) and _replaceable_once(st, run_id, stored)[0] is not None


def _listener_recording(run_id: str) -> str:
    return (f"run {run_id} is being recorded into this store by the sparkpredict listener, which "
            "keeps the whole run: this log's copy was not kept")


def _cannot_replace(parsed: ParsedLog, stored: _StoredRun, why: str) -> str:
    n = parsed.tables["runs"]["num_tasks"][0].as_py() or 0
    return (f"this log holds more of run {parsed.run_id} than the store (stored: {stored.status}, "
            f"{plural(stored.num_tasks, 'task')}; this log: {parsed.status}, {plural(n, 'task')}), but the stored "
            f"run cannot be replaced ({why}): to keep the whole run, ingest this log into a fresh "
            "store (--store NEW_FOLDER)")


def _other_job(run_id: str, stored: _StoredRun, job: str | None, st: Store,
               read_again: bool = False) -> list[str]:
    """The warning of a skipped log whose stored run has another job than the one asked for
    (``[]`` when none was asked for, or it is the same); ``read_again``: of a log read again to
    replace its run's whole copy (stored under older rules), which keeps its job too."""
    if job is None or stored.job == job:
        return []
    # the store keeps its rows: the stored run is moved, the log not read again
    why = ("a run already in the store keeps its job when its log is read again"
           if read_again else "a log already in the store is not read again")
    return [(f"run {run_id} keeps its stored job {stored.job!r}, not --job {job!r}: {why}. To move "
             f"the stored run: sparkpredict store edit {run_id} --job {shlex.quote(job)}")]


def _skipped(path: str, outcome: Literal["unchanged", "exists"], run_id: str, known: _Known,
             job: str | None, st: Store) -> FileOutcome:
    stored = known.runs[run_id]
    return FileOutcome(path, outcome, run_id=run_id, status=stored.status,
                       warnings=_other_job(run_id, stored, job, st))


def _awaits_log(st: Store, known: _Known, run_id: str) -> bool:
    """A stored run that its log is to complete or measure again: stored cut short (a run the
    listener is recording completes itself), or by an older ingest."""
    return _must_read(known.runs[run_id]) or _rescans(st, known, run_id)


def _must_read(stored: _StoredRun) -> bool:
    """A stored run whose log the user must hear of when it cannot be read: stored cut short, or
    its input measured under older rules. One read again for its scans' files alone
    (:func:`_rescans`) is stored whole, as it was before 0.4.0 read it: a log of it that is
    damaged or unreadable is skipped as ``exists``, as then (a scheduled ingest had failed at
    every run after the upgrade for a log it had skipped before)."""
    return (stored.status in _UNFINISHED and stored.source == "eventlog") or stored.measured_before()


def _older_copy(stored: _StoredRun, why: str) -> str:
    return (f"its stored copy was measured by sparkpredict {stored.writer or '(unknown version)'}, whose "
            f"ingest counted its input bytes differently, and cannot be replaced ({why}): to measure "
            "it anew, ingest this log into a fresh store (--store NEW_FOLDER), or correct the stored "
            "size with `sparkpredict store edit RUN_ID --input-size SIZE`")


def _damaged(path: str, parsed: ParsedLog, run_id: str, kept: str = "") -> FileOutcome:
    """The failure of a log damaged in the middle (``kept``: what the store keeps of its run)."""
    return FileOutcome(path, "failed", run_id=run_id,
                       error=f"{path}: {parsed.damage}; not ingested: the run's rows would lack the "
                             "events lost there", fix="ingest an intact copy of this log" + kept)


def _kept_copy(known: _Known, run_id: str | None) -> str:
    """What the store keeps of ``run_id`` meanwhile, for a failed log's fix."""
    if run_id is None or run_id not in known.runs:
        return ""
    stored = known.runs[run_id]
    return f"; the store keeps its copy of run {run_id} ({stored.status}, {plural(stored.num_tasks, 'task')})"


def _as_it_is_now(src: LogSource) -> LogSource:
    """``src`` as its files are when its turn comes: the logs were found before the writer lock
    was taken, and before the logs ahead of it were read. Meanwhile Spark renames a log it
    finished (``X.inprogress`` to ``X``: read failed "No such file", exit 1, for a cron ingest of
    a live history folder), and adds files to a rolling folder (one caught in the moment before
    its ``events_1`` existed failed as "without events_* files")."""
    if src.error is not None and src.files:
        return src  # refused for what it is (one file of a rolling log), not for a race
    if src.files and src.rolling_folder is None and not os.path.exists(src.path):
        done = src.path.removesuffix(".inprogress")
        if src.path.endswith(".inprogress") and os.path.isfile(done):
            return single_log(done)
        return src
    if os.path.basename(src.path).startswith(ROLLING_PREFIX) and os.path.isdir(src.path):
        return rolling_log(src.path)
    return src


def _ingest_one(src: LogSource, st: Store, known: _Known, job: str | None = None) -> FileOutcome:
    from ..store.io import new_batch_id

    named = known.by_name.get(src.app_hint)  # Spark names logs after the app
    if src.error is None and S.numbered_per_master(src.app_hint):
        # The name cannot tell two clusters' applications apart: the start event can, read from
        # the log's first lines (a log of a run stored already is then not parsed whole)
        peeked = peek_run_id(src)
        named = known.stored_id(peeked) if peeked is not None else None
        named = named if named in known.runs else None
    try:
        rid = known.by_file.get((stored_path(src.path), fingerprint(src))) if src.error is None else None
        if rid is not None and not known.runs[rid].measured_before() and not _rescans(st, known, rid):
            return _skipped(src.path, "unchanged", rid, known, job, st)
        # Skipped without reading, unless the stored run never ended: this log may hold more.
        if named is not None and not _awaits_log(st, known, named):
            return _skipped(src.path, "exists", named, known, job, st)
        parsed = _parse_source(src)
    except NotWrittenYet as exc:
        if named is not None and not _must_read(known.runs[named]):
            return _skipped(src.path, "exists", named, known, job, st)
        return FileOutcome(src.path, "pending", run_id=named,
                           warnings=[exc.message.removeprefix(f"{src.path}: ")])
    except (IngestError, OSError) as exc:
        # its run is stored whole already: a log of it that cannot be read is no news; stored
        # cut short, this log was to complete it, and the user must hear that it cannot
        if named is not None and not _must_read(known.runs[named]):
            return _skipped(src.path, "exists", named, known, job, st)
        err = exc if isinstance(exc, IngestError) else unreadable(src.path, exc)
        return FileOutcome(src.path, "failed", run_id=named, error=err.message,
                           fix=(err.fix or "ingest an intact copy of this log") + _kept_copy(known, named))
    except Exception as exc:  # never let one log stop the others; the traceback goes to the log
        log.exception("unexpected error reading %s", src.path)
        return FileOutcome(src.path, "failed", error=f"{src.path}: {type(exc).__name__}: {exc}",
                           fix="rerun as `sparkpredict -v ingest ...` for the traceback and report it "
                               "with this log; the other logs were ingested")
    # a store written before run ids took the driver's start holds the run under its old id
    sid = known.stored_id(parsed.run_id)
    stored = known.runs.get(sid)
    old_batch = None
    if parsed.damage is not None and stored is not None and _must_read(stored):
        # a damaged log holds no more than what it lost: it read "already in the store", and the
        # run stayed cut short with no word of the damage
        return _damaged(src.path, parsed, sid, _kept_copy(known, sid))
    if stored is not None:
        more = _holds_more(parsed, stored)
        # measured anew, never from a log that holds less of the run than the stored copy
        older = stored.measured_before() and parsed.damage is None and not _holds_less(parsed, stored)
        # its scans' files recorded anew, on the same terms; a copy that cannot be replaced is
        # skipped quietly (_rescans)
        rescan = stored.read_again() and parsed.damage is None and not _holds_less(parsed, stored)
        old_batch, why = _replaceable_once(st, sid, stored) if more or older or rescan else (None, "")
        if old_batch is None:  # the log's own warnings are about rows that are not stored
            said = ([_cannot_replace(parsed, stored, why)] if more else
                    [f"run {sid}: {_older_copy(stored, why)}"] if older else [])
            return FileOutcome(src.path, "exists", run_id=sid, status=stored.status,
                               warnings=said + _other_job(sid, stored, job, st))
    if parsed.damage is not None:
        # Stored, the run's totals would lack the lost events and could pass for a whole run.
        return _damaged(src.path, parsed, parsed.run_id)
    tables = dict(parsed.tables)
    run = tables["runs"]
    run = run.set_column(run.schema.get_field_index("updated_ms"), "updated_ms",
                         pa.array([int(time.time() * 1000)], pa.int64()))
    # a copy it replaces keeps the job it was stored under, as a skipped log's run does; a
    # --job names the run's copy cut short (it stored part of the run), never a whole run read
    # again for rules it was stored under (an upgrade's re-read moved every run of a scheduled
    # `ingest /history --job X` to X)
    again = False
    keep = job
    if old_batch is not None and stored is not None:
        again = not _holds_more(parsed, stored)
        keep = stored.job if again or job is None else job
    if keep is not None:
        run = run.set_column(run.schema.get_field_index("job"), "job", pa.array([keep], pa.string()))
    tables["runs"] = run
    if "run_inputs" in tables:  # written with this runs row: the same updated_ms
        inputs = tables["run_inputs"]
        tables["run_inputs"] = inputs.set_column(inputs.schema.get_field_index("updated_ms"), "updated_ms",
                                                 run.column("updated_ms"))
    batch = st.append(tables, batch_id=new_batch_id(INGEST_LABEL + parsed.run_id))
    if parsed.status in _UNFINISHED and _listener_batches(st, parsed.run_id):
        # The listener wrote its first rows of the run while this log was read: its copy is the
        # run's (it removes ours too, unless it looked before this append). So too while this
        # log was to replace an earlier cut copy: that one goes as well (the listener may have
        # removed it already), or readers saw the listener's rows beside it.
        st.drop_batch(batch)
        if old_batch is not None:
            with contextlib.suppress(SparkPredictError):
                st.drop_batch(old_batch)
        now = st.read("runs", form="arrow", columns=["status"], run_ids=[parsed.run_id])
        return FileOutcome(src.path, "exists", run_id=parsed.run_id,
                           status=now["status"][0].as_py() if now.num_rows else None,
                           warnings=[_listener_recording(parsed.run_id)])
    replaced = None
    why_replaced: Literal["fuller", "measured", "scans", "probes"] | None = None
    warnings = list(parsed.warnings)
    if again and stored is not None:
        warnings += _other_job(sid, stored, job, st, read_again=True)
    if old_batch is not None and stored is not None:
        replaced = f"{stored.status}, {plural(stored.num_tasks, 'task')}"
        writer = stored.writer or "(unknown version)"
        if stored.measured_before():
            replaced += f", measured by sparkpredict {writer}"
        elif stored.scans_before():
            replaced += f", stored by sparkpredict {writer} without its scans' files"
        elif stored.probes_before():
            # said of every such copy, most of which ran no probe: when, not that it counted one
            replaced += f", stored by sparkpredict {writer}, before a reader's schema probes were left out of input"
        why_replaced = ("fuller" if _holds_more(parsed, stored) else "measured" if stored.measured_before()
                        else "scans" if stored.scans_before() else "probes")
        # after the fuller copy is committed: a stop in between leaves two copies, which the
        # next ingest reduces to this one (_one_copy_each), never none
        try:
            st.drop_batch(old_batch)
        except SparkPredictError as exc:
            # its commit mark left in place: the next ingest keeps this copy, drops that one
            warnings.append(f"could not remove the replaced copy of run {parsed.run_id}: {exc.message}; {exc.fix}")
    known.add(parsed.run_id, _StoredRun(parsed.status, run["num_tasks"][0].as_py() or 0, "eventlog",
                                        run["job"][0].as_py(), run["sparkpredict_version"][0].as_py()),
              stored_path(src.path), parsed.fingerprint)
    return FileOutcome(src.path, "ingested", run_id=parsed.run_id, status=parsed.status,
                       stages=tables["stages"].num_rows, tasks=tables["tasks"].num_rows,
                       warnings=warnings, replaced=replaced, replaced_why=why_replaced)


__all__ = [
    "FileOutcome",
    "IngestReport",
    "ingest_event_logs",
    "partial_report",
]
