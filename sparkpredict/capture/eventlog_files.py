"""Finding Spark event logs: single files and rolling folders, in the order Spark reads them.

A log is ``<appId>[_<attempt>][.<codec>][.inprogress]``, or, with rolling logs, a folder
``eventlog_v2_<appId>[_<attempt>]/`` of ``events_<N>_<appId>[.<codec>]`` files (read as Spark's
``RollingEventLogFilesFileReader`` reads them) beside an ``appstatus_<appId>[.inprogress]``
marker. One file of such a folder is no log by itself: given alone, it is a log whose error says
to ingest its folder. :func:`unique_logs` drops a log found twice (a path given twice, or inside
a folder also given). :func:`fingerprint` tells whether a log changed since it was ingested.
"""
from __future__ import annotations

import hashlib
import os
import re
import shlex
import stat
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import IngestError
from .codecs import codec_of

ROLLING_PREFIX = "eventlog_v2_"
_EVENTS_FILE = re.compile(r"^events_(\d+)_(.+)$")
# Files in a history folder that are never event logs (checksums, notes, our own store).
_NOT_LOGS = re.compile(r"^[._]|\.(crc|md|txt|py|parquet|html|csv)$|^appstatus_", re.IGNORECASE)
_HEAD_BYTES = 64 << 10


@dataclass
class LogSource:
    """One application's log: a single file or a rolling folder (``files`` in order)."""

    path: str
    files: list[str]
    in_progress: bool
    app_hint: str  # application id as Spark encodes it in the name (may be a user's own name)
    #: why the log cannot be read at all, found while looking for logs (e.g. a rolling folder
    #: with a gap in its events_<N> files, or one that vanished); reported as that log's error
    error: IngestError | None = None
    #: the rolling log folder this file is one file of (a file of it given alone), else None
    rolling_folder: str | None = None


def _strip_suffixes(name: str) -> str:
    name = name.removesuffix(".inprogress")
    if codec_of(name) is not None:
        name = name.rsplit(".", 1)[0]
    return name


def rolling_log(path: str) -> LogSource:
    hint = os.path.basename(path)[len(ROLLING_PREFIX):]
    try:
        names = os.listdir(path)
    except OSError as exc:  # removed while the history folder was walked (the History Server's cleaner)
        return LogSource(path=path, files=[], in_progress=False, app_hint=hint,
                         error=unreadable(path, exc))
    events = []
    for n in names:
        m = _EVENTS_FILE.match(n)
        if m and not n.endswith(".crc"):
            events.append((int(m.group(1)), n.endswith(".compact"), n))
    # Spark's RollingEventLogFilesFileReader: order by index, a compacted file after the plain
    # one of its index, and read from the newest .compact file on (compaction deletes the files
    # before it, so a log may start at any index)
    events.sort()
    compact = [i for i, (_, c, _) in enumerate(events) if c]
    if compact:
        events = events[compact[-1]:]
    in_progress = any(n.startswith("appstatus_") and n.endswith(".inprogress") for n in names)
    source = LogSource(path=path, files=[os.path.join(path, n) for _, _, n in events],
                       in_progress=in_progress, app_hint=hint)
    indices = [i for i, _, _ in events]
    missing = sorted(set(range(indices[0], indices[-1] + 1)) - set(indices)) if indices else []
    if indices and not compact and indices[0] > 1:
        # not compacted: the files before it were lost, the application's start with events_1
        first = "events_1" + (f" to events_{indices[0] - 1}" if indices[0] > 2 else "")
        source.error = IngestError(
            f"{path}: rolling event log without {first}: its beginning (the application's start "
            "and first stages) is lost", "restore the missing file, or ingest a complete copy of the folder")
    elif missing:
        # A missing middle file loses the stages and tasks it held while the application end
        # may still be there: Spark's own reader refuses such a log ("Found missing event log
        # file"), and so do we rather than store a run that looks complete.
        gap = ", ".join(f"events_{i}" for i in missing[:5]) + (" ..." if len(missing) > 5 else "")
        source.error = IngestError(
            f"{path}: rolling event log with {gap} missing between events_{indices[0]} and "
            f"events_{indices[-1]}: the stages and tasks it held are lost (Spark's reader refuses "
            "such a log too)", "restore the missing file, or ingest a complete copy of the folder")
    return source


def single_log(path: str) -> LogSource:
    name = os.path.basename(path)
    source = LogSource(path=path, files=[path], in_progress=name.endswith(".inprogress"),
                       app_hint=_strip_suffixes(name))
    folder = os.path.dirname(path)
    if os.path.basename(folder).startswith(ROLLING_PREFIX) and (_EVENTS_FILE.match(name) or name.startswith("appstatus_")):
        # Read alone, events_2 has no application start (events_1 has it), and events_1 lacks
        # the stages and the end the later files hold: only the folder is the whole log.
        source.rolling_folder = folder
        source.error = IngestError(
            f"{path}: one file of the rolling event log {folder} (Spark writes a rolling log as "
            "events_<N> files in one eventlog_v2_* folder), not a whole log",
            f"ingest its folder instead: sparkpredict ingest {shlex.quote(folder)}")
    return source


def _local_path(raw: str | os.PathLike[str]) -> str:
    """``raw`` as a local path: a ``file:`` URI (``spark.eventLog.dir`` is usually written as
    one) is read as its folder; another scheme is refused with how to get the logs here."""
    from ..config import _file_uri_path
    from ..errors import StoreError

    s = os.fspath(raw)
    if isinstance(s, bytes):
        return s.decode(errors="surrogateescape")
    if s[:5].lower() == "file:":
        try:
            path = _file_uri_path(s)
        except StoreError as exc:
            raise IngestError(exc.message.replace("the store", "the event-log path", 1),
                              "write file:///absolute/path, or give the plain path") from None
        # Spark reads spark.eventLog.dir as a URI, percent escapes decoded (file:///a%20b is
        # "/a b"); a folder whose name holds the escape itself is taken as it stands
        from urllib.parse import unquote

        return path if os.path.exists(path) or not os.path.exists(unquote(path)) else unquote(path)
    scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]*)://", s)
    if scheme:
        raise IngestError(f"cannot read {s}: ingest reads event logs on this machine, not from {scheme.group(1)}://",
                          "copy the logs here first (e.g. hdfs dfs -get, gsutil cp, aws s3 cp) and ingest "
                          "that folder")
    return s


def find_logs(paths: Iterable[str | os.PathLike[str]]) -> list[LogSource]:
    """Expand files and folders into event logs (``file:`` URIs as their paths). A missing
    path is a user mistake."""
    out: list[LogSource] = []
    for raw in paths:
        path = os.path.abspath(os.path.expanduser(_local_path(raw)))
        try:
            os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            raise IngestError(f"no such file or folder: {raw}",
                              "give event-log files or folders (spark.eventLog.dir)") from None
        except ValueError:  # a NUL byte in the path: no file can have that name
            raise IngestError(f"no such file or folder: {raw!r} (a path cannot hold a NUL byte)",
                              "give event-log files or folders (spark.eventLog.dir)") from None
        except OSError as refused_stat:
            # os.path.exists is False in a folder this user cannot enter too: the path is there,
            # and what stops it is the permissions, reported as an unreadable file's are
            source = single_log(path)
            source.error = source.error or unreadable(path, refused_stat)
            out.append(source)
            continue
        if os.path.isfile(path):
            out.append(single_log(path))
        elif os.path.basename(path).startswith(ROLLING_PREFIX):
            source = rolling_log(path)
            if source.error is not None and not source.files:
                # it could not be listed: a path given that cannot be listed is the user's to
                # fix (exit 2), a rolling folder as any other folder
                raise source.error
            out.append(source)
        else:
            refused: list[OSError] = []
            walked: set[str] = set()  # followed links may lead back up: each folder once
            top = os.path.realpath(path)
            for root, dirs, files in os.walk(path, onerror=refused.append, followlinks=True):
                real = os.path.realpath(root)
                if real in walked:
                    dirs[:] = []
                    continue
                walked.add(real)
                # a link to a folder above the one given (`up -> ..`) would walk its siblings too
                dirs[:] = sorted(d for d in dirs if not _above(os.path.join(root, d), top))
                for d in [d for d in dirs if d.startswith(ROLLING_PREFIX)]:
                    out.append(rolling_log(os.path.join(root, d)))
                dirs[:] = [d for d in dirs if not d.startswith((ROLLING_PREFIX, "."))]
                out.extend(single_log(os.path.join(root, f)) for f in sorted(files)
                           if not _NOT_LOGS.search(f) and not _special(os.path.join(root, f)))
            for exc in refused:
                # os.walk skips a folder it cannot list: the folder given itself then read as
                # "no event logs found"; one inside it (a lost+found, a folder removed meanwhile)
                # is that folder's failure, reported beside the logs that were read
                inner = os.fspath(exc.filename) if exc.filename else path
                if os.path.abspath(inner) == path:
                    raise unreadable(path, exc)
                out.append(LogSource(inner, [], False, os.path.basename(inner), error=unreadable(inner, exc)))
    return out


def _above(folder: str, top: str) -> bool:
    """``folder`` is a link to ``top`` or to a folder that holds it."""
    if not os.path.islink(folder):
        return False
    real = os.path.realpath(folder)
    return top == real or top.startswith(real.rstrip(os.sep) + os.sep)


def _special(path: str) -> bool:
    """A named pipe, socket or device: opening a pipe to fingerprint it waited forever, with the
    store's writer lock held."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:  # a broken link: read as a log, which reports it
        return False


def unique_logs(sources: Iterable[LogSource]) -> tuple[list[LogSource], list[str]]:
    """(each log once, in the order found; the paths of the others): a path given twice, a log
    inside a folder also given, or a file of a rolling log whose folder is given (or another of
    its files: the folder is the log) would otherwise be ingested, then reported unchanged, in the
    same call. Paths that lead to the same file through links count as one."""
    sources = list(sources)
    folders = {os.path.realpath(s.path) for s in sources if s.rolling_folder is None}
    seen: set[str] = set()
    kept: list[LogSource] = []
    repeated: list[str] = []
    for s in sources:
        key = os.path.realpath(s.rolling_folder or s.path)
        if key in seen or (s.rolling_folder is not None and key in folders):
            repeated.append(s.path)
            continue
        seen.add(key)
        kept.append(s)
    return kept, repeated


def fingerprint(source: LogSource) -> str:
    """Identity of a log's current content: file names, sizes, mtimes, hash of the head.

    Raises OSError when a file cannot be read (a broken link, a log deleted meanwhile).
    """
    h = hashlib.sha1()
    for f in source.files:
        st = os.stat(f)
        # the name as bytes: one that is not UTF-8 (surrogates in Python) raised in .encode()
        h.update(os.fsencode(os.path.basename(f)) + f":{st.st_size}:{st.st_mtime_ns};".encode())
    if source.in_progress:
        # A rolling log's folder keeps its name when Spark renames its appstatus marker at the
        # end, and its last file may keep its size: without this, a log ingested unfinished
        # read "unchanged" once finished and its run stayed incomplete. (Finished logs keep the
        # fingerprints they had.)
        h.update(b"in progress;")
    if source.files:
        with open(source.files[0], "rb") as fh:
            h.update(fh.read(_HEAD_BYTES))
    return h.hexdigest()[:24]


def stored_path(path: str) -> str:
    """``path`` as the store's ``source_path`` holds it: a name that is not UTF-8 (surrogates in
    Python, which Parquet refuses) with its bad bytes written ``\\xff``."""
    try:
        path.encode()
        return path
    except UnicodeEncodeError:
        return os.fsencode(path).decode("utf-8", "backslashreplace")


def unreadable(path: str, exc: OSError) -> IngestError:
    """One log's one-line error for a file the OS will not give us."""
    why = exc.strerror or str(exc)
    if isinstance(exc, FileNotFoundError):
        why += " (a broken link, or a log removed while ingest ran, e.g. by the History Server's cleaner)"
    inner = os.fspath(exc.filename) if exc.filename else path
    what = "" if inner == path else f" {os.path.relpath(inner, path)}"
    return IngestError(f"{path}: cannot read{what}: {why}", "check the path and its permissions")


__all__ = ["ROLLING_PREFIX", "LogSource", "find_logs", "fingerprint", "rolling_log", "single_log", "unique_logs",
           "unreadable"]
