"""Read Spark event logs into store rows (for ``sparkpredict ingest`` and ``simulate``).

Spark's ``EventLoggingListener`` writes one JSON event per line, as a single file
``<appId>[_<attempt>][.<codec>][.inprogress]`` or, with rolling logs (``spark.eventLog.rolling
.enabled``), a folder ``eventlog_v2_<appId>[_<attempt>]/`` holding ``events_<N>_<appId>[.<codec>]``
files and an ``appstatus_<appId>[.inprogress]`` marker. :func:`parse_event_log` reads either form
(plain, zstd, lz4, snappy or lzf; see :mod:`.codecs`) into the same runs / executors / stages /
tasks rows that the JVM listener writes (see :mod:`.eventlog_rows`), and
:func:`~.eventlog_ingest.ingest_event_logs` appends each log's rows to a store as one batch (see
:mod:`.eventlog_ingest` for what it skips and why).
"""
from __future__ import annotations

import contextlib
import json
import os
import shlex
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa

from ..errors import IngestError
from ..units import format_duration, plural
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
    stored_path,
    unreadable,
)
from .eventlog_rows import RunBuilder


class NotWrittenYet(IngestError):
    """A log still being written (``.inprogress``) that holds no application start yet: its
    application has only just started, and a later ingest reads it. One unwritten for
    :data:`DIED_BEFORE_START_S` is a failure instead: its application died before it started."""


#: How long an in-progress log without its application start may go unwritten before it is
#: taken for a driver that died before the start, not one still starting. Spark names the log
#: after the application id, which it gets once the cluster has accepted the application, and
#: writes the start (flushed at once) seconds later: an hour is far past any start, so a live
#: application is not called dead, and a dead one is named within the hour rather than never.
DIED_BEFORE_START_S = 3600.0


def _unwritten_for(source: LogSource) -> float | None:
    """Seconds since the newest of ``source``'s files was last modified; None when one of them
    cannot be looked at (gone meanwhile: Spark renames a log it finishes)."""
    try:
        newest = max(os.stat(f).st_mtime for f in source.files)
    except (OSError, ValueError):
        return None
    return time.time() - newest


def _removal(source: LogSource) -> str:
    """The shell command that deletes ``source``: a rolling log is its whole folder."""
    return f"rm -r {shlex.quote(source.path)}" if os.path.isdir(source.path) else f"rm {shlex.quote(source.path)}"


@dataclass
class ParsedLog:
    """What one event log yields: conformed tables (``runs`` holds one row) and warnings.

    ``damage`` is set when events were lost before the log's end (undecodable compressed data,
    a line that is not JSON with more lines after it, or a rolling file cut short with more
    files after it): the tables hold the events that could be read, but
    :func:`~.eventlog_ingest.ingest_event_logs` does not store them (see its docstring).
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
    #: what the log holds of times Spark never writes, or None: stored with a warning
    #: (:meth:`.eventlog_rows.RunBuilder.impossible_times`)
    false_times: str | None = None
    #: the part of ``false_times`` a replay refuses, or None: tasks finishing before they launched
    backward_tasks: str | None = None


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


#: How far into a log :func:`peek_run_id` looks for the application's start (Spark writes it
#: among the first events: LogStart, ResourceProfileAdded, BlockManagerAdded, EnvironmentUpdate).
_PEEK_LINES = 64


def peek_run_id(source: LogSource) -> str | None:
    """The run id of ``source`` from its first lines, read as the full parse reads them, without
    the rest; None when its start is not among them or the log cannot be read so far (the full
    parse then says why)."""
    if not source.files:
        return None
    builder = RunBuilder()

    def head(lines: Iterator[bytes]) -> Iterator[bytes]:
        for n, line in enumerate(lines):
            if n >= _PEEK_LINES or builder.app:
                return
            yield line

    codec = codec_of(os.path.basename(source.files[0]).removesuffix(".compact"))
    try:
        with open(source.files[0], "rb") as fh:
            builder.feed(head(iter_lines(iter_decompressed(fh, codec), cut=[])))
    except (OSError, ValueError, TruncatedStream, CorruptStream, pa.ArrowException):
        return None
    return builder.run_id() if builder.app else None


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
    stream_cut = False  # the last file's compressed stream ends early
    began = False  # the log's first line is Spark's LogStart, whole or cut: its beginning is here
    not_json_in: str | None = None  # the file of the log's first line that is not JSON
    raw_bytes = 0  # the files' sizes: compressed bytes that decode to nothing are not "empty"
    cut_after_not_json = False  # a cut last line follows it: it was not the log's last line
    for f in source.files:
        name = os.path.basename(f)
        codec = codec_of(name.removesuffix(".compact"))
        lines_before = builder.lines
        cut: list[bytes] = []
        try:
            with open(f, "rb") as fh:
                raw_bytes += os.fstat(fh.fileno()).st_size
                builder.feed(iter_lines(_counted(iter_decompressed(fh, codec), nbytes), cut=cut))
        except TruncatedStream as exc:
            cut_short = cut_short or f == source.files[-1]
            # a valid stream of the codec that stops: cut, even before its first whole block
            stream_cut = stream_cut or f == source.files[-1]
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
        # log that has it lost its end, even where the cut fell between two lines. A compressed
        # stream that stops before its first block decodes holds no line to judge: it was cut.
        # An in-progress log with nothing in it yet: Spark made the file and has not written
        # its first event (it buffers them), so it is the start of a log, not a foreign file.
        unwritten = source.in_progress and not nbytes[0]
        if builder.bad_app_start:
            raise IngestError(f"{source.path}: its SparkListenerApplicationStart event is unusable "
                              f"({builder.bad_app_start}): the run has no id to be stored under",
                              "ingest an intact copy of this log") from None
        if builder.end_ms is not None:
            # the application's end is there, so the log was not cut: its start line is lost
            raise IngestError(f"{source.path}: its SparkListenerApplicationStart event is missing (the "
                              f"log has {plural(builder.lines, 'line')}, through its "
                              "SparkListenerApplicationEnd): the run has no id to be stored under",
                              "ingest an intact copy of this log") from None
        if began or builder.spark_version is not None or (cut_short and builder.events) \
                or (stream_cut and not builder.lines) or unwritten:
            last_codec = codec_of(os.path.basename(source.files[-1]).removesuffix(".compact"))
            held = (f"the log ends after {plural(builder.lines, 'line')}, before its "
                    "SparkListenerApplicationStart event" if builder.lines else
                    f"the {last_codec} stream ends before its first line decodes" if stream_cut else
                    "the log is empty" if not raw_bytes else
                    f"its {plural(raw_bytes, 'byte')} of {last_codec or 'plain'} data decode to no event")
            idle = _unwritten_for(source) if source.in_progress else None
            if idle is not None and idle >= DIED_BEFORE_START_S:
                # A driver that died before its start leaves such a log for good: read as "not
                # written yet", every ingest skipped it and none ever said it would not come
                raise IngestError(f"{source.path}: {held}; still .inprogress, it has not been written "
                                  f"for {format_duration(idle)}: its application seems to have died "
                                  "before it started",
                                  f"delete the log ({_removal(source)}), or ingest it later if its "
                                  "application is in fact still starting") from None
            # a log still being written is not cut off: Spark has not written its start yet
            why = ("it was cut off while being written, or copied in part" if not source.in_progress else
                   "Spark has not written it yet (.inprogress)" if builder.lines or stream_cut else
                   "its application has started (.inprogress) and Spark has not written its first event yet")
            # A log still being written that has no start yet is an application that has just
            # started, not a failure: a cron ingest of a live history folder met one every time
            kind = NotWrittenYet if source.in_progress else IngestError
            raise kind(f"{source.path}: {held}: {why}",
                       "ingest it once Spark has written more of it, or a complete copy") from None
        if not raw_bytes:
            what = "the file is empty (0 bytes)" if len(source.files) == 1 else "its files are empty (0 bytes)"
            raise IngestError(f"{source.path}: {what}, not an event log",
                              "ingest Spark event logs only (files written by spark.eventLog.enabled=true)") from None
        packed = _compressed_as(source.files[0])
        if packed is not None:
            raise IngestError(f"{source.path}: {packed[0]}", packed[1]) from None
        raise IngestError(f"{source.path}: {exc}", "ingest Spark event logs only "
                          "(files written by spark.eventLog.enabled=true)") from None
    false_times = builder.impossible_times()
    backward_tasks = builder.impossible_times(("finish",))
    if false_times is not None:
        replay = "`sparkpredict simulate` will not replay this run, and " if backward_tasks else ""
        builder.warnings.append(f"{false_times}; stored as written: {replay}`sparkpredict store edit "
                                "RUN_ID --exclude` keeps it out of training")
    run = tables["runs"]
    if run["status"][0].as_py() == "incomplete" and not source.in_progress:
        builder.warnings.append("no SparkListenerApplicationEnd event: recorded as incomplete")
    run = run.set_column(run.schema.get_field_index("source_path"), "source_path",
                         pa.array([stored_path(source.path)], pa.string()))
    run = run.set_column(run.schema.get_field_index("source_fingerprint"), "source_fingerprint",
                         pa.array([fp], pa.string()))
    tables["runs"] = run
    return ParsedLog(path=source.path, tables=tables, warnings=builder.warnings,
                     run_id=run["run_id"][0].as_py(), status=run["status"][0].as_py(),
                     fingerprint=fp, lines=builder.lines, bytes_uncompressed=nbytes[0], damage=damage,
                     false_times=false_times, backward_tasks=backward_tasks)


_LOG_START = b'{"Event":"SparkListenerLogStart"'

#: the first bytes of each codec's data -> its suffix: a compressed log that lost its suffix
#: was read as plain text, and said to be no event log at all
_MAGIC = {b"\x28\xb5\x2f\xfd": "zstd", b"LZ4Block": "lz4", b"\x82SNAPPY\x00": "snappy",
          b"ZV\x00": "lzf", b"ZV\x01": "lzf", b"\x1f\x8b": "gz"}
_LZ4_FRAME = b"\x04\x22\x4d\x18"


def _compressed_as(path: str) -> tuple[str, str] | None:
    """(what, fix) for a file read as plain (no codec suffix) whose bytes begin as a compressed
    stream does; None when they do not (or when a suffix names a codec)."""
    name = os.path.basename(path)
    if codec_of(name.removesuffix(".compact")) is not None:
        return None
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
    except OSError:
        return None
    if head.startswith(_LZ4_FRAME):
        what = ("its bytes are an lz4 frame (the lz4 tool's format), which Spark does not write and "
                "ingest does not read")
        return what, "decompress it (lz4 -d) and ingest the plain file"
    codec = next((c for magic, c in _MAGIC.items() if head.startswith(magic)), None)
    if codec is None:
        return None
    base = name.removesuffix(".inprogress")
    renamed = base + "." + codec + name[len(base):]
    name_of = {"gz": "gzip"}.get(codec, codec)
    what = f"it looks {name_of}-compressed, but its name has no .{codec} suffix, so it was read as plain text"
    as_spark = "" if codec == "gz" else ", as Spark does"  # Spark writes no gzip logs: a user gzipped it
    return what, f"name it with a .{codec} suffix ({renamed}){as_spark}, and ingest it again"


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
        store schema, and ``stage_scans`` where a stage ran a known SQL file scan (the files it
        selected); ``warnings`` lists what was skipped and why.
    """
    p = os.path.abspath(os.fspath(path))
    if os.path.isdir(p):
        if not os.path.basename(p).startswith(ROLLING_PREFIX):
            raise IngestError(f"{path} is a folder, not an event log",
                              "give one log file or an eventlog_v2_* folder; a folder of logs is for "
                              "ingest (sparkpredict ingest FOLDER, or ingest_event_logs() from Python)")
        source = rolling_log(p)
    elif not os.path.exists(p):
        raise IngestError(f"no such file: {path}", "give an event-log file")
    else:
        source = single_log(p)
    with _system_pool():
        return _parse_source(source)


__all__ = [
    "NotWrittenYet",
    "ParsedLog",
    "find_logs",
    "parse_event_log",
]
