"""Backfill the history store from Spark event logs (``sparkpredict ingest``).

Spark's ``EventLoggingListener`` writes one JSON event per line, as a single file
``<appId>[_<attempt>][.<codec>][.inprogress]`` or, with rolling logs (``spark.eventLog.rolling
.enabled``), a folder ``eventlog_v2_<appId>[_<attempt>]/`` holding ``events_<N>_<appId>[.<codec>]``
files and an ``appstatus_<appId>[.inprogress]`` marker. :func:`parse_event_log` reads either form
(plain, zstd, lz4, snappy or lzf; see :mod:`.codecs`) into the same runs / executors / stages /
tasks rows that the JVM listener writes (see :mod:`.eventlog_rows`), and
:func:`ingest_event_logs` appends each log's rows to a store as one batch.

Idempotence: every ingested run row keeps its log's path and fingerprint (sizes, mtimes and a
hash of the first 64 KiB). A log whose path and fingerprint are already in the store is not read
again, and a log whose application is already in the store (from the listener or an earlier
ingest under another name) adds nothing: appending would duplicate its stage and task rows; when
it holds more of the run than the store (the stored run never ended, or has fewer tasks), the
skip says so. Because a stored run cannot be replaced, a log that lost events before its end
(undecodable data, a line that is not JSON before the last, a missing or cut rolling file) is
not stored at all, so that an intact copy can be ingested later.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast

import pyarrow as pa

from ..errors import IngestError, InputError
from ..units import plural
from .codecs import (
    CorruptStream,
    TruncatedStream,
    codec_of,
    iter_decompressed,
    iter_lines,
)
from .eventlog_files import (
    ROLLING_PREFIX,
    LogSource,
    find_logs,
    fingerprint,
    rolling_log,
    single_log,
    unreadable,
)
from .eventlog_rows import RunBuilder

if TYPE_CHECKING:
    from ..store.io import Store

log = logging.getLogger(__name__)

@dataclass
class ParsedLog:
    """What one event log yields: conformed tables (``runs`` holds one row) and warnings.

    ``damage`` is set when events were lost before the log's end (undecodable compressed data,
    a line that is not JSON with more lines after it, or a rolling file cut short with more
    files after it): the tables hold the events that could be read, but
    :func:`ingest_event_logs` does not store them (see its docstring).
    """

    path: str
    tables: dict[str, pa.Table]
    warnings: list[str]
    run_id: str
    status: str
    fingerprint: str
    lines: int
    bytes_uncompressed: int
    damage: str | None = None


@dataclass
class FileOutcome:
    """One log's outcome. ``run_id`` and ``status`` are the stored run's when the log was
    skipped (``unchanged``, ``exists``); ``stages`` and ``tasks`` count the rows it added, and
    are None when it added none (nothing was stored, or the log was not read)."""

    path: str
    outcome: Literal["ingested", "unchanged", "exists", "failed"]
    run_id: str | None = None
    status: str | None = None
    stages: int | None = None
    tasks: int | None = None
    warnings: list[str] = field(default_factory=list)
    error: str | None = None
    fix: str | None = None  # with every error: what to do about that log


@dataclass
class IngestReport:
    """Summary of one :func:`ingest_event_logs` call, per file and in total."""

    store: str
    files: list[FileOutcome] = field(default_factory=list)

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
    def files_failed(self) -> int:
        return self._count("failed")

    @property
    def runs_added(self) -> int:
        return self.files_ingested

    @property
    def warnings(self) -> dict[str, list[str]]:
        return {f.path: f.warnings for f in self.files if f.warnings}

    @property
    def errors(self) -> dict[str, str]:
        return {f.path: f.error for f in self.files if f.error}

    def to_dict(self) -> dict:
        counts = {k: getattr(self, k) for k in ("files_seen", "files_ingested", "files_unchanged",
                                                 "files_existing", "files_failed", "runs_added")}
        return {"store": self.store, **counts, "files": [asdict(f) for f in self.files]}


# ---- parsing --------------------------------------------------------------------------------
@contextlib.contextmanager
def _system_pool() -> Iterator[None]:
    """Allocate Arrow memory with malloc while a log is read and written.

    A log's task rows are built in thousands of small chunks; pyarrow's default mimalloc pool
    keeps more of that memory (~30 MB more peak RSS on a 1 GB log). Buffers remember their pool,
    so restoring the default afterwards is safe.
    """
    previous = pa.default_memory_pool()
    pa.set_memory_pool(pa.system_memory_pool())
    try:
        yield
    finally:
        pa.set_memory_pool(previous)


def _counted(chunks: Iterator[bytes], box: list[int]) -> Iterator[bytes]:
    for c in chunks:
        box[0] += len(c)
        yield c


def _parse_source(source: LogSource) -> ParsedLog:
    if source.error is not None:
        raise IngestError(source.error.message, source.error.fix)
    if not source.files:
        raise IngestError(f"{source.path}: rolling event-log folder without events_* files",
                          "point at a complete eventlog_v2_* folder")
    try:
        fp = fingerprint(source)
    except OSError as exc:
        raise unreadable(source.path, exc) from None
    builder = RunBuilder()
    nbytes = [0]
    damage = None
    cut_short = False  # the last file ends inside an event (a cut stream or a cut last line)
    began = False  # the log's first line is Spark's LogStart, whole or cut: its beginning is here
    not_json_in: str | None = None  # the file of the log's first line that is not JSON
    cut_after_not_json = False  # a cut last line follows it: it was not the log's last line
    for f in source.files:
        name = os.path.basename(f)
        codec = codec_of(name.removesuffix(".compact"))
        lines_before = builder.lines
        cut: list[bytes] = []
        try:
            with open(f, "rb") as fh:
                builder.feed(iter_lines(_counted(iter_decompressed(fh, codec), nbytes), cut=cut))
        except TruncatedStream as exc:
            cut_short = cut_short or f == source.files[-1]
            builder.warnings.append(f"{name}: the {codec} stream ends early ({exc}); "
                                    "events before the cut were kept")
            if f != source.files[-1] and damage is None:
                # Spark closes a rolling file before it starts the next: a cut one lost events
                # in the middle of the run, not at its end.
                damage = (f"{name} ends early ({exc}) while later files follow: the events cut "
                          "from it are lost")
        except CorruptStream as exc:
            if builder.lines == lines_before and f == source.files[0]:
                raise IngestError(f"{source.path}: cannot decode as {codec or 'plain text'}: {exc}",
                                  "check that the file is a Spark event log and its suffix names "
                                  "its codec (.zstd, .lz4, .snappy, .lzf)") from None
            builder.warnings.append(f"{name}: undecodable {codec} data after line {builder.lines} "
                                    f"({exc}); events before it were kept")
            if damage is None:
                # Unlike a cut at the end (a log still being written), a damaged block loses
                # everything after it: the run would be stored partial for good.
                damage = (f"undecodable {codec or 'plain text'} data in {name} after line "
                          f"{builder.lines} ({exc}): the events after it are lost")
        except OSError as exc:
            raise unreadable(source.path, exc) from None
        if f == source.files[0] and builder.lines == 0 and cut:  # a first line cut inside itself
            began = cut[0].startswith(_LOG_START)
        if builder.first_not_json is not None and not_json_in is None:
            not_json_in = name
        if cut and not _feed_cut_line(builder, name, cut[0]):
            cut_after_not_json = cut_after_not_json or builder.first_not_json is not None
            cut_short = cut_short or f == source.files[-1]
            if f != source.files[-1] and damage is None:
                # Spark writes each event whole before it rolls to the next file: a file that
                # ends inside one was cut, and what followed in it is lost mid-run.
                damage = (f"{name} ends inside an event (line {builder.lines}) while later files "
                          "follow: the events cut from it are lost")
    bad_line = builder.not_json_before_end() or (builder.first_not_json if cut_after_not_json else None)
    if bad_line is not None and damage is None:
        # Not a last line cut off while the log was written (that one is skipped with a
        # warning): the event written there is lost, perhaps the environment with every
        # property, and the run would be stored without it for good.
        where = f" (in {not_json_in})" if len(source.files) > 1 else ""
        damage = (f"line {bad_line}{where} is not valid JSON while more lines follow "
                  "it: the event written there is lost or garbled (Spark's own reader refuses "
                  "such a log too)")
    if any(f.endswith(".compact") for f in source.files):
        builder.warnings.append("the log was compacted by Spark: events of finished jobs may be "
                                "missing, so stage and task rows can be incomplete")
    if source.in_progress:
        builder.warnings.append("the log is in progress (.inprogress): recorded as incomplete")
    try:
        tables = builder.finish(in_progress=source.in_progress)
    except ValueError as exc:
        # Spark's events, then the end: not a foreign file. Spark writes its LogStart first, so a
        # log that has it lost its end, even where the cut fell between two lines.
        if began or builder.spark_version is not None or (cut_short and builder.events):
            raise IngestError(f"{source.path}: the log ends after {plural(builder.lines, 'line')}, before "
                              "its SparkListenerApplicationStart event: it was cut off while "
                              "being written, or copied in part",
                              "ingest it once Spark has written more of it, or a complete copy") from None
        raise IngestError(f"{source.path}: {exc}", "ingest Spark event logs only "
                          "(files written by spark.eventLog.enabled=true)") from None
    run = tables["runs"]
    if run["status"][0].as_py() == "incomplete" and not source.in_progress:
        builder.warnings.append("no SparkListenerApplicationEnd event: recorded as incomplete")
    run = run.set_column(run.schema.get_field_index("source_path"), "source_path",
                         pa.array([source.path], pa.string()))
    run = run.set_column(run.schema.get_field_index("source_fingerprint"), "source_fingerprint",
                         pa.array([fp], pa.string()))
    tables["runs"] = run
    return ParsedLog(path=source.path, tables=tables, warnings=builder.warnings,
                     run_id=run["run_id"][0].as_py(), status=run["status"][0].as_py(),
                     fingerprint=fp, lines=builder.lines, bytes_uncompressed=nbytes[0], damage=damage)


_LOG_START = b'{"Event":"SparkListenerLogStart"'


def _feed_cut_line(builder: RunBuilder, name: str, line: bytes) -> bool:
    """Feed a file's last line that no newline ends when it is a whole event; else skip it with
    one warning that says it was cut. Returns whether it was whole."""
    try:
        json.loads(line)
        whole = True
    except (ValueError, RecursionError):  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        whole = not line.strip()
    if whole:
        builder.feed([line])
        return True
    builder.lines += 1  # counted, so that later line numbers (and the builder's own checks) hold
    builder.warnings.append(f"{name}: the last line (line {builder.lines}) ends in the middle of an "
                            "event, cut off while the log was being written or copied; skipped")
    return False


def parse_event_log(path: str | os.PathLike[str]) -> ParsedLog:
    """Read one event log (a file or an ``eventlog_v2_*`` folder) into store rows.

    Pure: touches no store. Lines that cannot be decoded, a last line cut inside an event (one
    warning), a stream cut off mid-block and unknown events become ``warnings``; undecodable
    compressed data, a line that is not JSON with more lines after it, and a rolling file cut
    short (mid-block or mid-event) with more files after it, also set ``damage`` (events in the
    middle are lost). A file that yields no
    application, cannot be read, or a rolling folder with a missing ``events_<N>`` file raises
    :class:`~sparkpredict.errors.IngestError` naming the file.

    Parameters
    ----------
    path : str or PathLike
        The log file (any codec suffix Spark writes) or a rolling ``eventlog_v2_*`` folder.

    Returns
    -------
    ParsedLog
        ``tables`` maps ``runs``, ``executors``, ``stages`` and ``tasks`` to Arrow tables in the
        store schema; ``warnings`` lists what was skipped and why.
    """
    p = os.path.abspath(os.fspath(path))
    if os.path.isdir(p):
        if not os.path.basename(p).startswith(ROLLING_PREFIX):
            raise IngestError(f"{path} is a folder, not an event log",
                              "use ingest_event_logs() for folders of logs")
        source = rolling_log(p)
    elif not os.path.exists(p):
        raise IngestError(f"no such file: {path}", "give an event-log file")
    else:
        source = single_log(p)
    with _system_pool():
        return _parse_source(source)


# ---- ingest ---------------------------------------------------------------------------------
def ingest_event_logs(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
                      store: str | os.PathLike[str] | Store | None = None, *,
                      on_error: Literal["warn", "raise"] = "warn") -> IngestReport:
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
        read: nothing of it is stored, so that an intact copy can be ingested later (a stored
        run cannot be replaced). A log merely cut at its end, as one still being written is, is
        stored as an ``incomplete`` run. A log whose run is already stored is skipped
        (``exists``), with a warning when it holds more of the run than the store does.

    Returns
    -------
    IngestReport
        Per-file outcome (ingested / unchanged / exists / failed), warnings and errors.

    Raises
    ------
    IngestError
        A path does not exist, or no event log was found under the paths.
    StoreError
        The store cannot be opened or written.
    """
    from ..store import io as store_io

    if on_error not in ("warn", "raise"):
        raise InputError(f"on_error={on_error!r}", "use 'warn' or 'raise'")
    given: list[Any] = [paths] if isinstance(paths, (str, os.PathLike)) else \
        list(paths) if isinstance(paths, Iterable) else [paths]
    bad = [p for p in given if not isinstance(p, (str, os.PathLike))]
    if bad or not given:
        what = f"{bad[0]!r} is not a path" if bad else "no event-log path given"
        raise InputError(what, "give event-log files or folders (spark.eventLog.dir) as paths")
    sources = find_logs(given)
    if not sources:
        raise IngestError("no event logs found under " + ", ".join(map(str, given)),
                          "point at spark.eventLog.dir or at event-log files")
    st = store if isinstance(store, store_io.Store) else store_io.open(store, create=True)
    known = _Known.of(st)
    report = IngestReport(store=st.path)
    for src in sources:
        with _system_pool():
            outcome = _ingest_one(src, st, known)
        report.files.append(outcome)
        if outcome.outcome == "failed":
            log.warning("event log %s not ingested: %s", src.path, outcome.error)
            if on_error == "raise":
                raise IngestError(outcome.error or "failed", f"{outcome.fix or 'fix or remove that log'}"
                                  " and rerun; logs before it were ingested")
        elif outcome.warnings:
            log.info("event log %s: %d warnings", src.path, len(outcome.warnings))
    return report


#: Statuses of a run whose end the store has not recorded: a later log of it may hold more.
_UNFINISHED = ("incomplete", "running")


@dataclass
class _StoredRun:
    status: str | None
    num_tasks: int
    source: str | None


@dataclass
class _Known:
    """What the store holds, as ingest looks logs up in it."""

    runs: dict[str, _StoredRun]
    by_file: dict[tuple[str, str], str]  # (source path, fingerprint) -> run id ingested from it
    by_name: dict[str, str]  # run id, and as Spark names its log files (app_attempt) -> run id

    @classmethod
    def of(cls, st: Store) -> _Known:
        t = cast(pa.Table, st.read("runs", form="arrow", columns=[
            "run_id", "status", "num_tasks", "source", "source_path", "source_fingerprint"])).to_pydict()
        known = cls(runs={}, by_file={}, by_name={})
        for rid, status, n, source, path, fp in zip(t["run_id"], t["status"], t["num_tasks"], t["source"],
                                                   t["source_path"], t["source_fingerprint"]):
            known.add(rid, _StoredRun(status, n or 0, source), path, fp)
        return known

    def add(self, run_id: str, run: _StoredRun, path: str | None = None, fp: str | None = None) -> None:
        self.runs[run_id] = run
        self.by_name.update({run_id: run_id, run_id.replace("/", "_"): run_id})
        if path is not None and fp is not None:
            self.by_file[(path, fp)] = run_id


def _tasks(n: int) -> str:
    return f"{n:,} {'task' if n == 1 else 'tasks'}"


def _batch_file(st: Store, run_id: str) -> str | None:
    """The runs file of the batch that ingest stored ``run_id`` in, when exactly one matches."""
    import re

    from pyarrow import fs as pafs

    from ..store.io import new_batch_id

    # ingest names its batches new_batch_id("ingest-" + run id): <13-digit ms>-<label>-<12 hex>
    label = new_batch_id("ingest-" + run_id)[14:-13]
    name = re.compile(r"part-\d{13}-" + re.escape(label) + r"-[0-9a-f]{12}\.parquet")
    try:
        infos = st.fs.get_file_info(pafs.FileSelector(f"{st.root.rstrip('/')}/runs", allow_not_found=True))
    except OSError:
        return None
    found = [i.base_name for i in infos if i.type == pafs.FileType.File and name.fullmatch(i.base_name)]
    return f"{st.path.rstrip('/')}/runs/{found[0]}" if len(found) == 1 else None


def _more_than_stored(parsed: ParsedLog, stored: _StoredRun, st: Store) -> str | None:
    """A warning when ``parsed`` holds more of its run than the store's row says (the store has
    an earlier, cut copy of it: an in-progress log, a partial copy), else None."""
    n = parsed.tables["runs"]["num_tasks"][0].as_py() or 0
    ends = stored.status in _UNFINISHED and parsed.status not in _UNFINISHED
    if parsed.damage is not None or not (ends or n > stored.num_tasks):
        return None
    what = (f"this log holds more of run {parsed.run_id} than the store (stored: {stored.status}, "
            f"{_tasks(stored.num_tasks)}; this log: {parsed.status}, {_tasks(n)}), but a run in the "
            "store cannot be replaced and `sparkpredict store` has no command to remove one: to "
            "keep the whole run, ingest this log into a fresh store (--store NEW_FOLDER)")
    batch = _batch_file(st, parsed.run_id) if stored.source == "eventlog" else None
    if batch is not None:
        what += (f", or by hand delete {batch} (the stored run's commit file: its stage, task and "
                 "executor rows are then ignored, and `sparkpredict store clean --older-than 0` "
                 "removes them) and ingest this log again")
    return what


def _ingest_one(src: LogSource, st: Store, known: _Known) -> FileOutcome:
    from ..store.io import new_batch_id

    named = known.by_name.get(src.app_hint)  # Spark names logs after the app
    try:
        rid = known.by_file.get((src.path, fingerprint(src))) if src.error is None else None
        if rid is not None:
            return FileOutcome(src.path, "unchanged", run_id=rid, status=known.runs[rid].status)
        # Skipped without reading, unless the stored run never ended: this log may hold more.
        if named is not None and known.runs[named].status not in _UNFINISHED:
            return FileOutcome(src.path, "exists", run_id=named, status=known.runs[named].status)
        parsed = _parse_source(src)
    except (IngestError, OSError) as exc:
        if named is not None:  # its run is stored already: a log of it that cannot be read is no news
            return FileOutcome(src.path, "exists", run_id=named, status=known.runs[named].status)
        err = exc if isinstance(exc, IngestError) else unreadable(src.path, exc)
        return FileOutcome(src.path, "failed", error=err.message, fix=err.fix)
    except Exception as exc:  # never let one log stop the others; the traceback goes to the log
        log.exception("unexpected error reading %s", src.path)
        return FileOutcome(src.path, "failed", error=f"{src.path}: {type(exc).__name__}: {exc}",
                           fix="rerun with --verbose for the traceback and report it with this log; "
                               "the other logs were ingested")
    stored = known.runs.get(parsed.run_id)
    if stored is not None:  # the log's own warnings are about rows that are not stored
        more = _more_than_stored(parsed, stored, st)
        return FileOutcome(src.path, "exists", run_id=parsed.run_id, status=stored.status,
                           warnings=[] if more is None else [more])
    if parsed.damage is not None:
        # Stored, the partial run could never be completed: the store has no way to replace a
        # run, and an intact copy of the log would then be skipped as already there.
        return FileOutcome(src.path, "failed", run_id=parsed.run_id, status=parsed.status,
                           error=f"{src.path}: {parsed.damage}; not ingested, since a run in the "
                                 "store cannot be replaced later",
                           fix="ingest an intact copy of this log")
    tables = dict(parsed.tables)
    run = tables["runs"]
    tables["runs"] = run.set_column(run.schema.get_field_index("updated_ms"), "updated_ms",
                                    pa.array([int(time.time() * 1000)], pa.int64()))
    st.append(tables, batch_id=new_batch_id("ingest-" + parsed.run_id))
    known.add(parsed.run_id, _StoredRun(parsed.status, run["num_tasks"][0].as_py() or 0, "eventlog"),
              src.path, parsed.fingerprint)
    return FileOutcome(src.path, "ingested", run_id=parsed.run_id, status=parsed.status,
                       stages=tables["stages"].num_rows, tasks=tables["tasks"].num_rows,
                       warnings=parsed.warnings)


__all__ = [
    "FileOutcome",
    "IngestReport",
    "ParsedLog",
    "find_logs",
    "ingest_event_logs",
    "parse_event_log",
]
