"""Reading and atomically appending to a history store (layout: see :mod:`.schema`)."""
from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypeVar, cast

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from ..config import resolve_store, store_for_display, uri_has_credentials
from ..errors import StoreError
from . import schema as S

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)

Form = Literal["pandas", "arrow"]
T = TypeVar("T")
R = TypeVar("R")


_warned_credentials: set[str] = set()
_warned_many: set[str] = set()
#: (store, file, size, mtime) -> what a compacted batch's file says in its footer: the batches
#: it replaced, the tables its writer knew and the tables it wrote a file of (each None: not
#: said), or None where it says nothing
_supersedes_cache: dict[tuple, _Footer | None] = {}


#: What to do about a file where the store keeps a folder (a table's), read or written.
_FILE_OVER_FOLDER_FIX = ("move that file out of the store; if it was saved over the folder, restore the "
                         "folder from a backup")


def _filesystem(path: str) -> tuple[pafs.FileSystem, str]:
    if uri_has_credentials(path) and path not in _warned_credentials:
        _warned_credentials.add(path)
        log.warning("store %s: its URI holds credentials, and the store's address is written in messages "
                    "and logs (reports show it as ***): give them in the environment instead "
                    "(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN)", store_for_display(path))
    try:
        if "://" not in path:
            return pafs.LocalFileSystem(), path
        fs, root = pafs.FileSystem.from_uri(path)
    except Exception as exc:  # pyarrow raises several types for bad URIs
        shown = store_for_display(path)  # the warning above hid the secret: so does the error
        why = str(exc).replace(path, shown)
        fix = "give a local folder or a URI pyarrow can open (s3://, hdfs://, gs://)"
        if path.lower().startswith(("hdfs://", "viewfs://")):
            # the URI was fine: pyarrow reaches HDFS through libhdfs, which needs a JVM and Hadoop
            fix = ("on this machine, pyarrow reaches HDFS through Hadoop's libhdfs: set JAVA_HOME, "
                   "HADOOP_HOME and CLASSPATH=$(hadoop classpath --glob), or run the command where "
                   "Hadoop is installed (`retrain --spark` and jobs/retrain.py too: their driver opens the "
                   "store, and writes its registry, through pyarrow)")
        raise StoreError(f"cannot reach store {shown!r}: {why}", fix) from exc
    if not root.strip("/"):
        # s3:// or gs:// alone: pyarrow made a file system, and its first look at the marker
        # ("/_sparkpredict_store.json") raised a bare ArrowInvalid
        scheme = path.split("://", 1)[0]
        raise StoreError(f"the store {store_for_display(path)!r} names no bucket or folder",
                         f"give the bucket and the store's folder in it: {scheme}://BUCKET/FOLDER")
    return fs, root


def new_batch_id(label: str = "py") -> str:
    """Unique and time-ordered: concurrent writers never pick the same file name."""
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in label)[:60]
    return f"{int(time.time() * 1000):013d}-{safe}-{uuid.uuid4().hex[:12]}"


#: The id of a batch that replaced others (:mod:`.compact`): the last replaced batch's id (without
#: an earlier compaction's suffix) and this suffix, so that it sorts right after that batch and
#: before every later one, as the rows it took over did. Never a :func:`new_batch_id` (whose
#: ids end in 12 hex digits), nor the listener's.
_COMPACTED = re.compile(r"-compacted-(\d{6})-[0-9a-f]{8}$")
#: Key, in the Parquet footer of a compacted batch's runs file, of the JSON list of the batches
#: it replaced (its commit mark says, in the same rename, which batches no reader should read).
SUPERSEDES_KEY = b"sparkpredict.supersedes"
#: Key, in the footers of a compacted batch's files, of the JSON list of the tables its writer
#: knew: a table it names, and holds no file of, had no rows in the batches it replaced. A
#: compacted batch that does not name a table was written by an older sparkpredict, which copied
#: only the tables it knew: those rows are read from the files of the batches it replaced, which
#: its `store clean` leaves (:meth:`Store.held`). The batches replaced are written in every
#: file's footer too, so that they are known once the runs file is gone.
TABLES_KEY = b"sparkpredict.tables"
#: Key, in the footers of a compacted batch's files, of the JSON list of the tables it wrote a
#: file of. A listed table whose file is gone lost rows (deleted by hand, a sync tool, a bucket's
#: lifecycle rule): without it that table read as empty for those runs, and the next compaction
#: removed the replaced batches' files, the rows' last copies (:meth:`Store.lost_files`).
#: Compacted batches written before it do not say.
WRITTEN_KEY = b"sparkpredict.written"
#: Reads retried from a new listing when a batch went while being read (a compaction's leftovers
#: removed, an ingest's replaced copy dropped) before the store is called busy.
_READ_TRIES = 10
#: Columns every row of a table has, since the first schema (the listener and ingest write them
#: from Spark's own ids): a row without one is damage, refused by a read.
_KEYS: dict[str, tuple[str, ...]] = {"runs": ("run_id",), "stages": ("stage_id",), "tasks": ("stage_id", "task_id"),
                                     "executors": ("executor_id",)}
_KEYS.update({t: () for t in S.TABLES if t not in _KEYS})
#: Each table's columns, for the check of every file read (Schema.names builds a new list a call)
_COLUMNS = {t: frozenset(schema.names) for t, schema in S.TABLES.items()}
#: Visible batches past which a read warns that one file per batch is slow.
MANY_BATCHES = 1000


_LABELLED = re.compile(r"\d{13}-(.*)-[0-9a-f]{12}")
#: The label prefix of the batches ingest writes, one run each (``new_batch_id("ingest-" + run id)``)
INGEST_LABEL = "ingest-"


def batch_label(batch_id: str) -> str | None:
    """The label of a :func:`new_batch_id` id (``<13-digit ms>-<label>-<12 hex>``; the
    listener's ids have the same form), None for any other id (a compacted batch's)."""
    m = _LABELLED.fullmatch(batch_id)
    return m.group(1) if m else None


def lost_runs_fix(batch_id: str) -> str:
    """The fix for compacted batch ``batch_id`` whose runs file was lost (:meth:`Store.lost_copies`)."""
    return f"restore runs/part-{batch_id}.parquet from a backup: its runs read again whole"


def is_compacted(batch_id: str) -> bool:
    return _COMPACTED.search(batch_id) is not None


def compacted_id(last: str) -> str:
    """The id of a batch replacing a group whose last batch is ``last``."""
    m = _COMPACTED.search(last)
    base, n = (last[:m.start()], int(m.group(1)) + 1) if m else (last, 1)
    return f"{base}-compacted-{n:06d}-{uuid.uuid4().hex[:8]}"


def _overlapped(fn: Callable[[T], R], items: list[T]) -> list[R]:
    """``[fn(x) for x in items]``, on a thread pool beyond a few: each file costs a round trip
    (an S3 GET, a local open), which threads overlap."""
    if len(items) <= 4:
        return [fn(x) for x in items]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(16, len(items))) as pool:
        return list(pool.map(fn, items))


@dataclass
class Held:
    """Rows of one table that visible compacted batches of an older sparkpredict hold in the
    files of the batches they replaced (:meth:`Store.held`)."""

    #: visible batch -> the batches, in order, whose files of the table hold its rows
    files: dict[str, list[str]]
    #: replaced batches whose runs files lead to some of those (an older compaction's batch
    #: that another older compaction merged): `store clean` keeps them
    links: set[str]


def _json_names(raw: bytes | None) -> list[str] | None:
    """A footer value that is a JSON list of strings, else None."""
    try:
        names = json.loads(raw) if raw is not None else None
    except ValueError:
        return None
    return names if isinstance(names, list) and all(isinstance(n, str) for n in names) else None


class _Footer(NamedTuple):
    """What a compacted batch's file says in its footer (:meth:`Store._footer`)."""

    replaced: list[str]
    #: the tables its writer knew (:data:`TABLES_KEY`), None when not said
    known: list[str] | None
    #: the tables it has a file of (:data:`WRITTEN_KEY`), None when not said
    written: list[str] | None


class LockBusy(Exception):
    """The store's writer lock is held by another writer, and the caller chose not to wait."""


class _Changed(Exception):
    """A batch listed for a read went before its file was read."""


def _batch_of(filename: str) -> str | None:
    if not (filename.startswith("part-") and filename.endswith(".parquet")):
        return None
    return filename[len("part-"):-len(".parquet")]


def enclosing_store(st: Any) -> str | None:
    """The store a local store path lies inside (a folder above it holds a store's marker), or
    None. Remote paths are not looked at: a listing per level of a bucket, for a mistake made
    on local disks."""
    if not isinstance(st.fs, pafs.LocalFileSystem):
        return None
    return enclosing_local_store(st.root)


def inside_store_error(path: str, outer: str) -> StoreError:
    """The refusal of a store path inside the store ``outer`` (:func:`enclosing_store`), for
    every writer: Store.init, and the listener's check before Spark starts."""
    return StoreError(f"store path {path!r} is inside the store {outer!r}",
                      "give a folder outside every store: a store inside another mixes its "
                      "files into that one's tables, and that one's `store clean` removes them")


def local_store_below(path: str) -> str | None:
    """The store among the direct subfolders of the local folder ``path`` (the first by name),
    or None: ``--store ~/.sparkpredict`` given for ``~/.sparkpredict/store``, a project folder
    for the store kept in it. Remote paths are not looked at, as :func:`enclosing_store`."""
    from pathlib import Path

    try:
        for child in sorted(Path(path).iterdir()):
            if child.is_dir() and (child / S.MARKER_FILE).is_file():
                return str(child)
    except OSError:
        return None
    return None


def store_below_hint(path: str) -> str:
    """"; it holds the store X: give that one" for :func:`local_store_below` of the local folder
    ``path``, else ""."""
    below = local_store_below(path)
    return "" if below is None else f"; it holds the store {below!r}: give that one"


def _store_below_hint(st: Any) -> str:
    """:func:`store_below_hint` of a local store's folder; "" for a remote one."""
    return store_below_hint(st.root) if isinstance(st.fs, pafs.LocalFileSystem) else ""


def enclosing_local_store(path: str) -> str | None:
    """:func:`enclosing_store` of a local path: the store its parent folder is or lies below."""
    from pathlib import Path

    from ..outputs import enclosing_store as holding

    outer = holding(Path(path).absolute().parent)
    return None if outer is None else str(outer)


@dataclass
class Store:
    """A history store at ``path``. Create with :func:`open`.

    Reading returns only committed batches (see :mod:`.schema`), deduplicated so that each
    run appears once with its latest row.
    """

    path: str
    fs: pafs.FileSystem = field(repr=False)
    root: str = field(repr=False)

    # ---- layout -------------------------------------------------------------------------
    def _dir(self, table: str) -> str:
        return f"{self.root.rstrip('/')}/{table}"

    def _entries(self, folder: str) -> list[pafs.FileInfo]:
        """What ``folder`` holds (nothing when it is not there). A file where a table's folder
        belongs (copied over it, a runs file saved as ``STORE/runs``) is the store's damage to
        name: pyarrow's NotADirectoryError reached Python callers of every read bare."""
        try:
            return self.fs.get_file_info(pafs.FileSelector(folder, allow_not_found=True))
        except NotADirectoryError:
            raise StoreError(f"{folder!r} of store {store_for_display(self.path)!r} is a file, where "
                             "the store keeps a folder of Parquet files", _FILE_OVER_FOLDER_FIX) from None

    def _listing(self, table: str) -> dict[str, pafs.FileInfo]:
        """batch_id -> file info of the part files of ``table`` (committed or not)."""
        out: dict[str, pafs.FileInfo] = {}
        for info in self._entries(self._dir(table)):
            if info.type != pafs.FileType.File:
                continue
            b = _batch_of(info.base_name)
            if b is not None:
                out[b] = info
        return out

    def _files(self, table: str) -> dict[str, str]:
        """batch_id -> file path for the part files of ``table`` (committed or not)."""
        return {b: info.path for b, info in self._listing(table).items()}

    def committed_batches(self) -> set[str]:
        """Batches with a runs file, those a compaction replaced included (:meth:`visible_marks`)."""
        return set(self._files(S.COMMIT_TABLE))

    def supersedes(self, runs_file: str, info: pafs.FileInfo | None = None) -> list[str]:
        """The batches a compacted batch's runs file replaced (read from its footer; with the
        file's ``info``, once per process, as sparkpredict never rewrites such a file)."""
        found = self._footer(runs_file, info)
        assert found is not None  # required: a footer that says nothing raised
        return found.replaced

    def _footer(self, path: str, info: pafs.FileInfo | None = None, *,
                required: bool = True) -> _Footer | None:
        """What the footer of a compacted batch's file says (:data:`SUPERSEDES_KEY`,
        :data:`TABLES_KEY`, :data:`WRITTEN_KEY`). ``required`` (a runs file): a footer
        that cannot be read or does not say is an error; else it is None (a file of another table,
        written before the footers named the batches, or damaged: reading it says so)."""
        key = None if info is None else (self.path, path, info.size, info.mtime_ns)
        if key is not None and key in _supersedes_cache:
            return _supersedes_cache[key]
        fix = _damaged_fix(_batch_of(path.rsplit("/", 1)[-1]) or path)
        try:
            with self.fs.open_input_file(path) as f:
                meta = pq.ParquetFile(f).metadata.metadata or {}
        except (FileNotFoundError, PermissionError):
            raise
        except (OSError, ValueError, pa.ArrowException) as exc:
            if not required:
                return None
            raise StoreError(f"unreadable compacted batch {path!r} in store: {exc}", fix) from exc
        ids = _json_names(meta.get(SUPERSEDES_KEY))
        if ids is None:
            if required:
                raise StoreError(f"compacted batch {path!r} does not say which batches it replaced", fix)
            found = None
        else:
            found = _Footer(ids, _json_names(meta.get(TABLES_KEY)), _json_names(meta.get(WRITTEN_KEY)))
        if key is not None:
            _supersedes_cache[key] = found
        return found

    def _replaces(self, marks: dict[str, pafs.FileInfo]) -> dict[str, list[str]]:
        """compacted batch -> the batches it replaced, of the compacted batches in ``marks``
        (footers read on a thread pool when not known yet: each is a round trip on S3)."""
        compacted = sorted(b for b in marks if is_compacted(b))

        def one(b: str) -> list[str] | None:
            try:
                return self.supersedes(marks[b].path, marks[b])
            except FileNotFoundError:  # removed by a later compaction that replaced it
                return None

        found = _overlapped(one, compacted)
        return {b: ids for b, ids in zip(compacted, found) if ids is not None}

    def replaced_by(self, marks: dict[str, pafs.FileInfo] | None = None,
                    replaces: dict[str, list[str]] | None = None) -> dict[str, str]:
        """batch -> the compacted batch that replaced it, of the batches that still have a runs file."""
        marks = self._listing(S.COMMIT_TABLE) if marks is None else marks
        replaces = self._replaces(marks) if replaces is None else replaces
        out: dict[str, str] = {}
        for b in sorted(replaces):
            for old in replaces[b]:
                if old in marks and old != b:
                    out[old] = b
        return out

    def visible_marks(self, marks: dict[str, pafs.FileInfo] | None = None) -> dict[str, str]:
        """batch_id -> runs file of the batches a reader reads: committed ones, less those a
        compaction replaced (the compacted batch holds their rows, and their files stay a while
        for readers that listed the store before it)."""
        marks = self._listing(S.COMMIT_TABLE) if marks is None else marks
        replaces = self._replaces(marks)
        replaced = self.replaced_by(marks, replaces)
        visible = {b: info.path for b, info in marks.items() if b not in replaced}
        # A compacted batch lists every still-present batch its own members replaced, so two
        # visible ones replacing the same batch means two compactions ran at once.
        owners: dict[str, str] = {}
        for b in sorted(b for b in replaces if b in visible):
            for old in replaces[b]:
                if old in owners:
                    raise _two_compactions(self.path, owners[old], b, set(replaces[owners[old]]),
                                           set(replaces[b]), old)
                owners[old] = b
        return visible

    def held(self, table: str, marks: dict[str, pafs.FileInfo] | None = None,
             listing: dict[str, pafs.FileInfo] | None = None,
             visible: dict[str, str] | None = None) -> Held:
        """The rows of ``table`` that visible compacted batches hold in other batches' files: an
        older sparkpredict's ``store compact`` merges only the tables it knows, and the batch it
        writes names the batches it replaced, whose files of a newer table (``stage_scans``) hold
        those rows still (its ``store clean`` leaves them, runs files gone). Followed through
        older compactions of such batches while their runs files last. Of a replaced batch found
        whose own compacted file (this version's) holds others found, that one is read alone.
        A compacted batch that names ``table`` among those it knew (:data:`TABLES_KEY`), or has
        a file of it, holds its rows itself: nothing is read elsewhere for it."""
        marks = self._listing(S.COMMIT_TABLE) if marks is None else marks
        if table == S.COMMIT_TABLE:
            return Held({}, set())
        listing = self._listing(table) if listing is None else listing
        visible = self.visible_marks(marks) if visible is None else visible
        out = Held({}, set())
        for v in sorted(visible):
            if v in listing or v not in marks or not is_compacted(v):
                continue
            found, links = self._held_by(table, v, marks, listing)
            if found:
                out.files[v] = found
                out.links.update(links)
        return out

    def _knows(self, table: str, batch: str, marks: dict[str, pafs.FileInfo]) -> tuple[list[str], bool] | None:
        """(the batches a compacted batch replaced, whether its writer knew ``table``), from its
        runs file; None once that file is gone."""
        try:
            found = self._footer(marks[batch].path, marks[batch])
        except FileNotFoundError:
            return None
        assert found is not None
        return found.replaced, found.known is not None and table in found.known

    def _held_by(self, table: str, v: str, marks: dict[str, pafs.FileInfo],
                 listing: dict[str, pafs.FileInfo]) -> tuple[list[str], set[str]]:
        """(the batches whose ``table`` files hold rows of ``v``, the replaced compacted batches
        whose runs files led to some of them): see :meth:`held`."""
        first = self._knows(table, v, marks)
        if first is None or first[1]:
            return [], set()
        found: set[str] = set()
        links: set[str] = set()
        seen = {v}
        todo = list(first[0])
        while todo:
            b = todo.pop()
            if b in seen:
                continue
            seen.add(b)
            if b in listing:
                found.add(b)
            elif b in marks and is_compacted(b):  # an older compaction's, merged again
                more = self._knows(table, b, marks)
                if more is not None and not more[1]:
                    links.add(b)
                    todo.extend(more[0])
        # a compacted batch found holds the rows of those it replaced: theirs, found too, are
        # copies (an older compaction lists what its members replaced and was still there)
        covered: set[str] = set()
        for b in found:
            if is_compacted(b):
                covered.update(x for x in self._replaced_of(b, marks, listing) if x != b)
        return sorted(found - covered), links

    def _replaced_of(self, batch: str, marks: dict[str, pafs.FileInfo],
                     listing: dict[str, pafs.FileInfo]) -> list[str]:
        """The batches a compacted batch replaced, from its runs file or, once that is gone, its
        file in ``listing`` ([] when neither says)."""
        for info in (marks.get(batch), listing.get(batch)):
            if info is None:
                continue
            try:
                found = self._footer(info.path, info, required=False)
            except (FileNotFoundError, PermissionError):
                continue
            if found is not None:
                return found.replaced
        return []

    def _held_parts(self, marks: dict[str, pafs.FileInfo],
                    listings: dict[str, dict[str, pafs.FileInfo]]) -> tuple[set[tuple[str, str]], set[str]]:
        """((table, batch) of every file :meth:`held` reads, the runs files' batches that link
        them): what ``store clean`` keeps."""
        parts: set[tuple[str, str]] = set()
        links: set[str] = set()
        if not any(is_compacted(b) for b in marks):
            return parts, links
        visible = self.visible_marks(marks)
        for table, listing in listings.items():
            h = self.held(table, marks, listing, visible)
            parts.update((table, b) for bs in h.files.values() for b in bs)
            links |= h.links
        return parts, links

    def lost_files(self, marks: dict[str, pafs.FileInfo] | None = None,
                   listings: dict[str, dict[str, pafs.FileInfo]] | None = None,
                   visible: dict[str, str] | None = None) -> list[tuple[str, str]]:
        """(table, batch) of each file that a visible compacted batch wrote (:data:`WRITTEN_KEY`)
        and the store no longer has, of the tables in ``listings`` (default: all). Nothing else
        tells a lost file from a table the batch had no rows of."""
        marks = self._listing(S.COMMIT_TABLE) if marks is None else marks
        visible = self.visible_marks(marks) if visible is None else visible
        compacted = sorted(b for b in visible if is_compacted(b) and b in marks)
        if not compacted:
            return []
        if listings is None:
            listings = {t: self._listing(t) for t in S.TABLES if t != S.COMMIT_TABLE}
        out = []
        for b in compacted:
            try:
                said = self._footer(marks[b].path, marks[b])
            except FileNotFoundError:  # replaced and removed since: no reader reads it
                continue
            assert said is not None  # required: a footer that says nothing raised
            out += [(t, b) for t, listing in listings.items() if t in (said.written or ()) and b not in listing]
        return out

    def check_lost(self, marks: dict[str, pafs.FileInfo] | None = None,
                   listings: dict[str, dict[str, pafs.FileInfo]] | None = None,
                   visible: dict[str, str] | None = None) -> None:
        """Raise :class:`StoreError` when :meth:`lost_files` finds any: restore the file, or, while
        every batch the compacted one replaced is still there, drop the compacted batch so that
        they are read again."""
        marks = self._listing(S.COMMIT_TABLE) if marks is None else marks
        lost = self.lost_files(marks, listings, visible)
        if not lost:
            return
        table, batch = lost[0]
        name = f"{table}/part-{batch}.parquet"
        more = f" (and {len(lost) - 1} more file(s) of compacted batches)" if len(lost) > 1 else ""
        replaced = self.supersedes(marks[batch].path, marks[batch])
        fix = f"restore {name} from a backup"
        if all(b in marks for b in replaced):
            fix += (f"; or move that batch's files (part-{batch}.parquet, in every table folder) out of "
                    f"the store folder: the {len(replaced)} batch(es) it replaced are still in the store, "
                    "with every row, and are read again (the next compaction merges them again). Until "
                    "then `store compact` and `store clean` remove none of their files")
        else:
            fix += ": the batches it replaced have been removed, so the store holds no other copy of those rows"
        raise StoreError(f"file {name!r} of a compacted batch is missing from store "
                         f"{store_for_display(self.path)!r}{more}: the batch wrote {table} rows, and "
                         f"its runs would read without them", fix)

    def version(self) -> tuple[tuple[str, int, int], ...]:
        """What caches of derived results key on: each batch a reader reads with its runs file's
        size and modification time. Batches are never rewritten by sparkpredict, but a store
        restored or copied over at the same path can keep the names with other rows. The files
        of batches a compaction replaced are left out: their removal changes no row."""
        marks = self._listing(S.COMMIT_TABLE)
        visible = self.visible_marks(marks)
        return tuple(sorted((b, int(marks[b].size or 0), int(marks[b].mtime_ns or 0)) for b in visible))

    def replaced_files(self, min_age_s: float = 600.0) -> list[str]:
        """The files of batches a compaction replaced over ``min_age_s`` ago (they stay that
        long for readers that listed the store before it): runs files first, so that removing
        them in this order and stopping short only ever leaves files no one reads. Files that
        hold rows an older compaction left there (:meth:`held`), and the runs files that lead to
        them, are kept."""
        marks = self._listing(S.COMMIT_TABLE)
        cutoff_ns = (time.time() - min_age_s) * 1e9
        replaces = self._replaces(marks)
        old_enough = {b for b in replaces if marks[b].mtime_ns is not None and marks[b].mtime_ns <= cutoff_ns}
        replaced = {old for old, by in self.replaced_by(marks, replaces).items() if by in old_enough}
        if not replaced:  # the usual answer, after every sparkpredict writer: spare four listings
            return []
        # batches without a runs file that a compaction named: an older compaction's leftovers
        # (its `store clean` removed the rest), whose rows this version's compaction folded in;
        # found with the replaced compacted batch that held them, whose runs file lasts as long
        folded = {old for b in old_enough for old in replaces[b] if old not in marks}
        listings = {t: self._listing(t) for t in S.TABLES if t != S.COMMIT_TABLE}
        # the replaced files may hold the last copy of a lost file's rows (the fix says so)
        self.check_lost(marks, listings)
        # what an older compaction left its rows of a newer table in is read still: kept
        held, links = self._held_parts(marks, listings)
        parts = [info.path for t, listing in listings.items()
                 for b, info in listing.items() if (b in replaced or b in folded) and (t, b) not in held]
        return sorted(marks[b].path for b in replaced if b not in links) + sorted(parts)

    def orphans(self, min_age_s: float = 600.0) -> list[str]:
        """Files no reader should see, last modified over ``min_age_s`` ago: part files of
        batches that never got their runs file (a writer died between its renames), leftover
        ``.tmp`` files, and :meth:`replaced_files` (those first). sparkpredict's readers skip
        them already; a plain ``spark.read.parquet("STORE/tasks")`` does not. A part whose rows
        a visible batch holds there (:meth:`held`) is none, nor one a compaction replaced under
        ``min_age_s`` ago."""
        cutoff_ns = (time.time() - min_age_s) * 1e9
        # Parts listed before the commit marks: a batch a writer commits in between has its
        # parts listed and its mark found, where the other order called its parts uncommitted.
        listed = [info for table in S.TABLES for info in self._entries(self._dir(table))]
        # a marker's temporary copy left by a writer that died while making the store (_put_marker)
        listed += [info for info in self._entries(self.root)
                   if info.base_name.startswith(f".{S.MARKER_FILE}.") and info.base_name.endswith(".tmp")]
        committed = self.committed_batches()
        marks = self._listing(S.COMMIT_TABLE)
        listings = {t: self._listing(t) for t in S.TABLES if t != S.COMMIT_TABLE}
        # files a visible batch of an older compaction holds rows in (Store.held), runs file gone
        held, _ = self._held_parts(marks, listings)
        held_paths = {listings[t][b].path for t, b in held}
        # files a compaction took rows from (Store.held's) stay as long as replaced batches do,
        # for readers that listed the store before it
        recent = {old for b, ids in self._replaces(marks).items()
                  if marks[b].mtime_ns is None or marks[b].mtime_ns > cutoff_ns for old in ids}
        out = []
        for info in listed:
            if info.type != pafs.FileType.File or info.mtime_ns is None or info.mtime_ns > cutoff_ns:
                continue
            name = info.base_name
            batch = _batch_of(name)
            leftover = name.endswith(".tmp") and name.startswith((".part-", f".{S.MARKER_FILE}."))
            if leftover or (batch is not None and batch not in committed and batch not in recent
                            and info.path not in held_paths):
                out.append(info.path)
        self.check_uncommitted_copies(out)
        return self.replaced_files(min_age_s) + sorted(out)

    def check_uncommitted_copies(self, paths: list[str]) -> None:
        """Raise :class:`StoreError` when a compacted batch among ``paths`` (files without a runs
        file) holds rows of runs that no committed batch holds (:meth:`lost_copies`): its other
        files are their last copy. A compaction that died before its commit copied rows that
        are still read, so its files go."""
        for batch, tables, lost in self.lost_copies(paths):
            shown = ", ".join(lost[:3]) + (f", ... ({len(lost)} in all)" if len(lost) > 3 else "")
            raise StoreError(f"the runs file of compacted batch {batch!r} is missing from store "
                             f"{store_for_display(self.path)!r}: its {', '.join(tables)} file(s) hold the "
                             f"only copy of the rows of {len(lost)} run(s) no committed batch holds ({shown})",
                             lost_runs_fix(batch) + "; `store clean` removes none of that batch's files "
                             "until then. To give those runs up instead, move its files "
                             f"(part-{batch}.parquet, in every table folder) out of the store folder")

    def lost_copies(self, paths: list[str] | None = None) -> list[tuple[str, list[str], list[str]]]:
        """(batch, its tables, run ids) of each compacted batch among ``paths`` (default: every
        compacted batch's file without a runs file, whatever its age) whose files hold rows of
        runs that no committed batch holds: its runs file was lost (deleted by hand, a sync
        tool) after a clean had removed the batches it replaced, and readers no longer see
        those runs. Told by the rows, not by the footers' lineage, which later compactions and
        cleans rewrite; a compaction committing meanwhile copied rows that are still read."""
        if paths is None:
            committed = self.committed_batches()
            paths = [info.path for table in S.TABLES if table != S.COMMIT_TABLE
                     for b, info in self._listing(table).items() if b not in committed]
        by_batch: dict[str, list[str]] = {}
        for path in paths:
            batch = _batch_of(path.rsplit("/", 1)[-1])
            if batch is not None and is_compacted(batch):
                by_batch.setdefault(batch, []).append(path)
        if not by_batch:  # the usual answer: spares a read of every runs file
            return []
        stored = set(cast(pa.Table, self.read(S.COMMIT_TABLE, form="arrow", columns=["run_id"]))
                     .column("run_id").to_pylist())
        out = []
        for batch in sorted(by_batch):
            held: set[str] = set()
            for path in by_batch[batch]:
                try:
                    with self.fs.open_input_file(path) as f:
                        pf = pq.ParquetFile(f)
                        if "run_id" in pf.schema_arrow.names:
                            held.update(pf.read(columns=["run_id"]).column("run_id").to_pylist())
                except FileNotFoundError:
                    continue
                except (OSError, ValueError, pa.ArrowException) as exc:
                    # unreadable: nothing tells its rows are held elsewhere, so it stays
                    raise StoreError(f"unreadable file {path!r} of compacted batch {batch!r}, whose runs "
                                     f"file is missing from store {store_for_display(self.path)!r}: {exc}",
                                     f"restore runs/part-{batch}.parquet and this file from a backup; "
                                     "`store clean` removes nothing until then") from exc
            lost = sorted(r for r in held - stored if r is not None)
            if lost:
                out.append((batch, sorted({p.rsplit("/", 2)[-2] for p in by_batch[batch]}), lost))
        return out

    def remove_orphans(self, min_age_s: float = 600.0, found: list[str] | None = None) -> list[str]:
        """Delete :meth:`orphans` (or ``found``, what it listed a moment ago); returns the paths
        removed. Committed rows are never touched."""
        removed = self.delete_files(self.orphans(min_age_s) if found is None else found,
                                    "nothing committed was changed")
        if removed:
            log.info("store %s: removed %d uncommitted file(s)", self.path, len(removed))
        return removed

    def delete_files(self, paths: list[str], unchanged: str) -> list[str]:
        """Delete ``paths`` (one already gone is skipped); returns those deleted. A file that
        cannot be deleted is a :class:`StoreError` whose fix says what stayed ``unchanged``."""
        removed = []
        for path in paths:
            try:
                self.fs.delete_file(path)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise StoreError(f"cannot remove {path!r} from store {self.path!r}: {exc}",
                                 f"fix the folder's permissions; {unchanged}") from exc
            removed.append(path)
        return removed

    @contextlib.contextmanager
    def writer_lock(self, who: str = "writer", *, wait: bool = True) -> Iterator[None]:
        """Hold the store's writer lock (an exclusive ``flock`` on its marker file, which every
        store has and nothing rewrites: no lock file is left behind) in a local store while
        reading what the store holds and appending what follows from it: two
        ingests would each append the same run, two edits of one run each copy its latest row
        and the later would undo the other, an edit beside an ingest replacing the run's copy
        would copy the copy's row. Waits for another holder (``who``: what this one is, as the
        wait is told); a holder that dies releases it. Remote stores (s3://, hdfs://) have no
        such lock: there, run one such writer at a time. Without ``wait``, a lock held by
        another raises :class:`LockBusy` instead of waiting."""
        try:
            import fcntl
        except ImportError:  # Windows: no flock
            fcntl = None  # type: ignore[assignment]
        if fcntl is None or not isinstance(self.fs, pafs.LocalFileSystem):
            yield
            return
        marker = f"{self.root.rstrip('/')}/{S.MARKER_FILE}"
        waited = False
        while True:
            self.init()
            try:
                fd = os.open(marker, os.O_RDONLY)
            except OSError as exc:
                log.warning("store %s: no writer lock (%s): run one ingest or edit of it at a time",
                            self.path, exc.strerror or exc)
                yield
                return
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if not wait:
                    os.close(fd)
                    raise LockBusy(self.path) from None
                if not waited:
                    log.warning("store %s: %s waiting for another ingest or edit of it to finish", self.path, who)
                waited = True
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError as exc:  # NFS without lockd, Lustre without flock, some FUSE mounts
                log.warning("store %s: its file system takes no lock (%s): run one ingest or edit of "
                            "it at a time", self.path, exc.strerror or exc)
                break
            # The holder before may have removed the marker (an ingest that stored nothing takes
            # back the store it made): a lock on the removed file excludes no one who opens the
            # marker anew, so lock that one instead.
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(marker))
            except OSError:
                same = False
            if same:
                break
            os.close(fd)
        try:
            yield
        finally:
            os.close(fd)  # releases the lock

    def drop_batch(self, batch_id: str) -> list[str]:
        """Remove one committed batch: its runs file (the commit mark) first, so that its rows
        vanish from every table at once, then its other part files. Returns the paths removed.
        Only ingest replacing its own copy of a run calls this; the store is otherwise append-only."""
        mark = self._files(S.COMMIT_TABLE).get(batch_id)
        parts = [p for t in S.TABLES if t != S.COMMIT_TABLE for b, p in self._files(t).items() if b == batch_id]
        removed = self.delete_files([mark] if mark else [], "the batch's rows stay in the store")
        # past the commit mark the rows are gone from every reader; what is left is orphans
        return removed + self.delete_files(parts, "its rows are no longer read; `sparkpredict "
                                                  "store clean` removes what is left")

    def exists(self) -> bool:
        return self.fs.get_file_info(f"{self.root.rstrip('/')}/{S.MARKER_FILE}").type == pafs.FileType.File

    # ---- reading ------------------------------------------------------------------------
    def read(self, table: str, form: Form = "pandas", columns: list[str] | None = None,
             run_ids: list[str] | None = None, all_rows: bool = False,
             batches: Callable[[str], bool] | None = None) -> pd.DataFrame | pa.Table:
        """All committed rows of ``table`` (``runs``, ``stages``, ``tasks``, ``executors``, ...); of
        ``runs``, each run's latest row, or with ``all_rows`` every row it ever had (in batch
        order), which is what an edit looks back through (:mod:`.edit`). A single run id or
        column may be given as a string. ``batches``: read only the batches whose id it accepts
        (a caller that knows which batches can hold its runs opens no other file)."""
        # one name, not its letters: run_ids="app-1" read as 'a', 'p', ... found nothing
        run_ids = [run_ids] if isinstance(run_ids, str) else run_ids
        columns = [columns] if isinstance(columns, str) else columns
        if table not in S.TABLES:
            raise StoreError(f"no table {table!r} in a sparkpredict store",
                             f"use one of {', '.join(S.TABLES)}")
        if form not in ("pandas", "arrow"):  # "polars" came back as pandas, silently
            raise StoreError(f"no form {form!r} to read a table in", "use form='pandas' or form='arrow'")
        unknown = [c for c in columns or [] if c not in S.TABLES[table].names]
        if unknown:  # pyarrow's KeyError named one field and not the table's columns
            raise StoreError(f"table {table!r} has no column(s) {', '.join(map(repr, unknown))}",
                             f"use its columns: {', '.join(S.TABLES[table].names)}")
        # a projection keeps what the rest of the read needs: the run id to filter on, and of
        # runs the fields that choose a run's latest row
        keep = None if columns is None else list(dict.fromkeys(
            ["run_id", *columns, *(["updated_ms", "start_ms"] if table == S.COMMIT_TABLE else [])]))
        # A batch's files never change once committed: what was read of a batch still visible
        # at the next listing is kept, and only the batches new to it are read. Each try read
        # every file again, and a large store (3,040 batches, 9 s a read) beside an ingest that
        # replaced a copy every few seconds never finished a read ("kept changing").
        read: dict[str, pa.Table] = {}
        for _ in range(_READ_TRIES):
            # Marks before parts: a batch committed by then has had its parts written, and a
            # replaced one keeps its files a while after the compaction that replaced it.
            marks = self._listing(S.COMMIT_TABLE)
            visible = self.visible_marks(marks)
            held: dict[str, list[str]] = {}
            if table == S.COMMIT_TABLE:
                files = visible
            else:
                # one listing serves both: a second one cost a remote store 30 ms a read
                listing = self._listing(table)
                files = {b: info.path for b, info in listing.items()}
                without = any(b not in files and is_compacted(b) for b in visible)
                if without:
                    # a compacted batch without this table's file: it had no rows, or an older
                    # compaction left them in the files of the batches it replaced, or it is lost
                    held = self.held(table, marks, listing, visible).files
                # A batch that went between the two listings (replaced by a compaction whose
                # leftovers were removed at once, dropped by an ingest) may have no parts
                # listed, which reads as a batch without rows of this table: list again. One
                # committed meanwhile is no matter: it is read next time.
                if set(visible) - set(self.visible_marks()):
                    continue
                if without:
                    self.check_lost(marks, {table: listing}, visible)
            try:
                stale = self._stale_ingest_copies(visible, gone_is_change=True)
            except _Changed:
                continue
            chosen = [b for b in sorted(set(files) | set(held)) if b in visible and b not in stale
                      and (batches is None or batches(b))]
            # a batch an older compaction wrote without this table: the files that hold its rows
            owner = {s: b for b in chosen for s in held.get(b, [b])}
            todo = [(s, files[s]) for s in owner if s not in read]
            got = self._read_each(table, todo, keep, run_ids)
            read.update({b: t for (b, _), t in zip(todo, got) if t is not None})
            try:
                self._check_missing([(owner[s], path) for (s, path), t in zip(todo, got) if t is None])
            except _Changed:
                continue
            parts = [read[s] for s in owner if s in read]
            break
        else:
            raise StoreError(f"store {self.path!r} kept changing while it was read: batches went "
                             "before their files could be read",
                             "try again once the compaction, ingest or clean running on it is done")
        if len(visible) > MANY_BATCHES and self.path not in _warned_many:
            _warned_many.add(self.path)
            log.warning("store %s holds %d batches, and a read opens a file of each: `sparkpredict "
                        "store compact` merges them", store_for_display(self.path), len(visible))
        result = S.conform(table, pa.concat_tables(parts, promote_options="permissive")) if parts \
            else S.empty_table(table)
        if table == "runs" and result.num_rows and not all_rows:
            result = _latest_run_rows(result)
        if run_ids is not None:
            import pyarrow.compute as pc
            result = result.filter(pc.is_in(result["run_id"], pa.array(run_ids, pa.string())))
        if columns is not None:
            result = result.select(columns)
        if form == "arrow":
            return result
        return result.to_pandas()

    def _stale_ingest_copies(self, visible: dict[str, str], gone_is_change: bool = False) -> set[str]:
        """Batches of runs that a later ingest batch stored again, fuller (a log re-ingested
        once its application ended): ingest commits the new copy, then drops the old, and one
        that stops in between leaves both until the next ingest keeps the latest. Readers take
        the latest already, so that no stage or task is counted twice meanwhile. Only labels
        with two batches or more cost a read (of their runs files' run ids): one ingest batch
        holds one run, but a label is cut to 60 characters, which two run ids may share.

        ``gone_is_change``: a copy whose runs file went since ``visible`` was listed (an ingest
        dropped it) is :class:`_Changed`, not a batch of no run: a read that kept that copy's
        rows from an earlier listing counted the run twice."""
        by_label: dict[str, list[str]] = {}
        for b in visible:
            label = batch_label(b)
            if label is not None and label.startswith(INGEST_LABEL):
                by_label.setdefault(label, []).append(b)
        stale: set[str] = set()
        for batches in by_label.values():
            if len(batches) < 2:
                continue
            # ids are time-ordered: all but each run's latest copy
            copies = self.copies_by_run([(b, visible[b]) for b in sorted(batches)])
            for mine in copies.values():
                stale.update(mine[:-1])
            unread = set(batches) - {b for mine in copies.values() for b in mine}
            if gone_is_change and unread:
                now = self.visible_marks()
                for b in sorted(unread):
                    if b not in now:
                        raise _Changed(b)
        return stale

    def run_of_batch(self, runs_file: str) -> str | None:
        """The run id in an ingest batch's runs file (one row), None when it cannot be read
        (gone meanwhile, or damaged: a read of the batch says which)."""
        try:
            with self.fs.open_input_file(runs_file) as f:
                ids = set(pq.ParquetFile(f).read(columns=["run_id"])["run_id"].to_pylist())
        except (OSError, TypeError, ValueError, KeyError, pa.ArrowException):
            return None
        return ids.pop() if len(ids) == 1 else None

    def copies_by_run(self, batches: list[tuple[str, str]]) -> dict[str, list[str]]:
        """run id -> its batch ids, in the order given, among ``(batch id, runs file)`` pairs of
        one ingest label: a label is "ingest-" and the run id, cut to 60 characters and made a file
        name, so two runs can share one (an unreadable batch is left out)."""
        out: dict[str, list[str]] = {}
        for b, path in batches:
            rid = self.run_of_batch(path)
            if rid is not None:
                out.setdefault(rid, []).append(b)
        return out

    def _read_parts(self, table: str, files: list[tuple[str, str]], columns: list[str] | None,
                    run_ids: list[str] | None) -> list[pa.Table]:
        """The rows of each (batch, file), in order. A file gone since it was listed is
        :class:`_Changed` when its batch went too (read again from a new listing), else an error."""
        parts = self._read_each(table, files, columns, run_ids)
        self._check_missing([item for item, t in zip(files, parts) if t is None])
        return [t for t in parts if t is not None]

    def _check_missing(self, missing: list[tuple[str, str]]) -> None:
        """Files listed and gone when read: :class:`_Changed` when a batch of theirs went too,
        else an error (a committed batch lost a file)."""
        if missing:
            now = self.visible_marks()
            for batch, _path in missing:
                if batch not in now:
                    raise _Changed(batch)
            raise StoreError(f"file {missing[0][1]!r} of a committed batch is missing from the store",
                             "restore it from a backup, or remove the batch's runs file (its "
                             "commit mark) to drop the batch")

    def _read_each(self, table: str, files: list[tuple[str, str]], columns: list[str] | None,
                   run_ids: list[str] | None) -> list[pa.Table | None]:
        """The rows of each (batch, file), in order; None for a file gone since it was listed."""
        want = _COLUMNS[table]
        wanted = None if run_ids is None else sorted(set(run_ids))

        def one(item: tuple[str, str]) -> pa.Table | None:
            batch, path = item
            try:
                t = self._read_file(path, table, columns, wanted if is_compacted(batch) else None)
            except FileNotFoundError:
                return None
            except PermissionError as exc:  # the file is sound: the user may not read it
                raise StoreError(f"no permission to read {path!r} of the store",
                                 "check the store's permissions: this user must be able to read "
                                 "every file under it") from exc
            except StoreError:
                raise
            except Exception as exc:
                raise StoreError(f"unreadable Parquet file {path!r} in store: {exc}",
                                 self._damaged_fix_of(table, batch)) from exc
            t = t.select([c for c in t.column_names if c in want])
            try:
                # a file written by another tool (run_id as a number, task_id as text) failed
                # later, in the concatenation of every batch, as a traceback naming no file
                t = _typed_as(S.TABLES[table], t)
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
                raise StoreError(f"file {path!r} of the store's {table} has a column of a type "
                                 f"sparkpredict does not write: {exc}", self._damaged_fix_of(table, batch)) from exc
            # A runs row is a run only by its id: rows without one read as a single run (each
            # run's latest row wins), hiding the others, and that run's None reached `simulate`'s
            # and `explain`'s messages as a TypeError. Another table's rows without a run id
            # belong to no run and are left out of every run's reads; rows without their own key
            # (a task without its stage) were read as rows of no stage: `explain` then said the
            # run "has no completed stages", and `simulate` replayed it with a cast warning.
            for key in _KEYS[table]:
                if columns is not None and key not in columns:
                    continue
                nulls = t.column(key).null_count if key in t.column_names else t.num_rows
                if nulls:
                    raise self.without_key(path, table, batch, key, nulls)
            return t

        return _overlapped(one, files)

    def without_key(self, path: str, table: str, batch: str, key: str, nulls: int) -> StoreError:
        """The refusal of ``table``'s file ``path`` (of ``batch``) whose ``nulls`` rows have no ``key``
        (one of :data:`_KEYS`): a read's, and the Spark retrain's, which counts them in Spark."""
        return StoreError(f"file {path!r} of the store's {table} has {nulls} row(s) without "
                          f"a {key.replace('_', ' ')}", self._damaged_fix_of(table, batch))

    def _damaged_fix_of(self, table: str, batch: str) -> str:
        """:func:`_damaged_fix`, or, for a file read without its batch's runs file (rows an older
        compaction left there, :meth:`held`), what moving it leaves: its batch cannot be dropped
        whole and ingested again, as its other rows are a compacted batch's now."""
        if table == S.COMMIT_TABLE or is_compacted(batch):
            return _damaged_fix(batch)
        try:
            gone = self.fs.get_file_info(f"{self._dir(S.COMMIT_TABLE)}/part-{batch}.parquet").type \
                == pafs.FileType.NotFound
        except OSError:
            gone = False
        return _held_fix(batch, table) if gone else _damaged_fix(batch)

    def _read_file(self, path: str, table: str, columns: list[str] | None,
                   run_ids: list[str] | None) -> pa.Table:
        """One part file, through ParquetFile (read_table would build a dataset per file, and
        import pyarrow.dataset, ~0.5 s of a CLI's start). With ``run_ids`` (sorted), only the
        row groups whose run_id range holds one of them: a compacted file is sorted by run."""
        import bisect

        with self.fs.open_input_file(path) as f:
            pf = pq.ParquetFile(f)
            names = pf.schema_arrow.names
            if "run_id" not in names:
                raise StoreError(f"foreign file {path!r} in the store's {table}/ folder",
                                 "move files that sparkpredict did not write out of the store folder")
            # No column of a table was ever removed or renamed in a schema version, so a column
            # the table lacks is another table's file copied here (its run_id made it read as
            # rows of this table, with nulls where its columns differ) or another tool's
            extra = [n for n in names if n not in _COLUMNS[table]]
            if extra:
                raise StoreError(f"file {path!r} in the store's {table}/ folder has column(s) the "
                                 f"{table} table does not have ({', '.join(extra[:5])}"
                                 f"{', ...' if len(extra) > 5 else ''}): it is not a file of that table",
                                 _foreign_fix(names, table))
            cols = None if columns is None else [c for c in columns if c in names]
            if run_ids is None or pf.metadata.num_row_groups < 2:
                return pf.read(columns=cols)
            idx = names.index("run_id")
            groups = []
            for i in range(pf.metadata.num_row_groups):
                stats = pf.metadata.row_group(i).column(idx).statistics
                if stats is not None and stats.has_min_max:
                    j = bisect.bisect_left(run_ids, stats.min)
                    if j == len(run_ids) or run_ids[j] > stats.max:
                        continue
                groups.append(i)
            return pf.read_row_groups(groups, columns=cols)

    def runs(self, form: Form = "pandas"):
        return self.read("runs", form)

    def run_id_of(self, given: str) -> str:
        """``given`` when a run has that id, else the one run whose Spark ``app_id`` it is (an
        id numbered per master, ``app-...-0000``, is stored with its driver's start:
        :func:`.schema.run_id`), else ``given`` (for the caller's "no run" error). An app id of
        several runs (a YARN application's attempts, two clusters' ``app-...-0000``) is refused,
        naming them: it had read as "no run" with three unrelated runs offered."""
        t = cast(pa.Table, self.read("runs", form="arrow", columns=["run_id", "app_id"])).to_pydict()
        if given in t["run_id"]:
            return given
        mine = sorted({r for r, a in zip(t["run_id"], t["app_id"]) if a == given})
        if len(mine) > 1:
            from ..errors import UnknownJobError

            shown = ", ".join(mine[:5]) + (", ..." if len(mine) > 5 else "")
            raise UnknownJobError(f"app id {given!r} names {len(mine)} runs in store {self.path!r}: {shown}",
                                  "give the run id of the one you mean")
        return mine[0] if mine else given

    def stages(self, form: Form = "pandas"):
        return self.read("stages", form)

    def tasks(self, form: Form = "pandas"):
        return self.read("tasks", form)

    def executors(self, form: Form = "pandas"):
        return self.read("executors", form)

    def measured_inputs(self, run_ids: list[str] | None = None) -> dict[str, int]:
        """Run id -> the input its stages read (``run_inputs``, its latest row), declared size or
        not. A run recorded before that table (an older store: every run) has no entry, nor one
        whose stages' size is unknown."""
        df = cast(pa.Table, self.read("run_inputs", form="arrow", run_ids=run_ids)).to_pandas()
        df = _latest_rows(df[df["run_id"].notna() & df["measured_input_bytes"].notna()])
        return {str(r): int(n) for r, n in zip(df["run_id"], df["measured_input_bytes"])}

    # ---- writing ------------------------------------------------------------------------
    def init(self) -> None:
        """Create the store folder and its marker; refuse folders that hold other things."""
        base = self.root.rstrip("/")
        info = self.fs.get_file_info(base)
        if info.type == pafs.FileType.File:
            raise StoreError(f"store path {self.path!r} is a file", "give a folder path for the store")
        marker = f"{base}/{S.MARKER_FILE}"
        # one look at the marker (every append comes through here): a file, none, or a folder
        found = self.fs.get_file_info(marker).type if info.type == pafs.FileType.Directory \
            else pafs.FileType.NotFound
        if found == pafs.FileType.Directory:
            # else a writer took the folder for its marker ("theirs is as good as ours"), wrote
            # its batch into a store no reader opens, and said it had stored nothing
            raise StoreError(f"store {self.path!r} is damaged: its marker {S.MARKER_FILE} is a folder",
                             f"if {S.MARKER_FILE}/ holds nothing of yours, remove it: the next writer "
                             "makes the marker again")
        if found == pafs.FileType.File:  # a store already: nothing to make
            return
        # a store to make (or whose marker went); inside a store first: a store's own table
        # folder (store/runs) holds its Parquet files, no other files of the user's
        outer = enclosing_store(self)
        if outer is not None:
            raise inside_store_error(self.path, outer)
        if info.type == pafs.FileType.Directory:
            entries = self.fs.get_file_info(pafs.FileSelector(base))
            # Hidden names are other writers' temp files (the listener's marker is written
            # that way); the marker itself, listed here, was made by another writer since the
            # look above.
            foreign = [e.base_name for e in entries
                       if e.base_name not in (*S.TABLES, S.MARKER_FILE) and not e.base_name.startswith(".")]
            if foreign:
                raise StoreError(
                    f"folder {self.path!r} is not a sparkpredict store: {S.holds_other_files(sorted(foreign))}",
                    "give the store's folder (--store; store= from Python), or an empty or new folder for a "
                    f"new store{_store_below_hint(self)}")
        try:
            self.fs.create_dir(base, recursive=True)
            if not self.exists():
                self._put_marker(marker, json.dumps(
                    {"format": S.STORE_FORMAT, "schema_version": S.SCHEMA_VERSION}).encode())
        except OSError as exc:
            above = self._file_above(exc)
            if above is not None:  # "choose a writable folder" did not say what was wrong with it
                # worded as the listener's check_store words it
                raise StoreError(f"cannot write to store {self.path!r}: {above} is a file",
                                 "give a store path under a folder, not under a file") from exc
            raise StoreError(f"cannot write to store {self.path!r}: {exc}", self._write_fix(exc, making=True)) from exc

    def _file_above(self, exc: OSError) -> str | None:
        """The file in the way of making the store's folder (``--store afile/sub``), else None."""
        import errno

        if getattr(exc, "errno", None) != errno.ENOTDIR:
            return None
        parent = self.root.rstrip("/")
        while True:
            parent, _, _ = parent.rpartition("/")
            if not parent:
                return None
            try:
                kind = self.fs.get_file_info(parent).type
            except OSError:
                return None
            if kind == pafs.FileType.File:
                return parent
            if kind != pafs.FileType.NotFound:
                return None

    def _write_fix(self, exc: OSError | None = None, making: bool = False) -> str:
        """``making``: the store's folder was being made, so a missing path is a parent that
        cannot be (``/proc/st``), not a batch's files removed while written."""
        import errno

        code = getattr(exc, "errno", None)
        if code in (errno.ENOSPC, errno.EDQUOT):
            return ("free space on the store's disk (or raise the quota), then run the command again: "
                    "nothing of this batch was committed, and the store's earlier runs are intact")
        if code == errno.EEXIST and isinstance(self.fs, pafs.LocalFileSystem):
            # a file where a table's folder goes (saved over STORE/stages): no permission is wrong
            return f"a file stands where the store keeps a folder (the path above): {_FILE_OVER_FOLDER_FIX}"
        if code == errno.ENOENT and isinstance(self.fs, pafs.LocalFileSystem) and not making:
            return ("run the command again: the batch's files went while they were written (a "
                    "`store clean --older-than 0` beside a writer?); nothing of it was committed")
        if isinstance(self.fs, pafs.LocalFileSystem):
            return "choose a writable folder, or fix its permissions"
        return ("create the bucket first (or add allow_bucket_creation=true to an s3:// URI), and "
                "check that the credentials in the environment may write to it")

    def check_version(self) -> None:
        """Refuse stores written by a schema this code does not know."""
        if not self.exists():
            return
        marker = json.dumps({"format": S.STORE_FORMAT, "schema_version": S.SCHEMA_VERSION})
        with self.fs.open_input_stream(f"{self.root.rstrip('/')}/{S.MARKER_FILE}") as f:
            try:
                meta = json.loads(f.read().decode())
            except ValueError as exc:
                raise StoreError(f"store marker in {self.path!r} is corrupt",
                                 f"if the folder's runs were written by sparkpredict, restore {S.MARKER_FILE} "
                                 f"as {marker}; else use a new store folder") from exc
        v = meta.get("schema_version") if isinstance(meta, dict) else None
        restore = (f"if the folder's runs were written by sparkpredict, restore {S.MARKER_FILE} as {marker}; "
                   "else use a new store folder")
        if not isinstance(meta, dict) or meta.get("format") != S.STORE_FORMAT:
            fmt = meta.get("format") if isinstance(meta, dict) else None
            raise StoreError(f"{self.path!r} is not a sparkpredict store: its {S.MARKER_FILE} says format "
                             f"{fmt!r}, not {S.STORE_FORMAT!r}", restore)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            # version 1 is the first schema any sparkpredict wrote: anything else is a damaged marker
            raise StoreError(f"store marker in {self.path!r} is damaged: schema_version {v!r} is not a "
                             f"version any sparkpredict wrote (1..{S.SCHEMA_VERSION})", restore)
        if v > S.SCHEMA_VERSION:
            raise StoreError(f"store {self.path!r} has schema version {v}, newer than the version "
                             f"{S.SCHEMA_VERSION} this sparkpredict reads",
                             "upgrade sparkpredict (pip install -U sparkpredict), or write to a new store")
        if v != S.SCHEMA_VERSION:  # none yet: version 1 is the only one so far
            raise StoreError(f"store {self.path!r} has schema version {v}, older than the version "
                             f"{S.SCHEMA_VERSION} this sparkpredict reads, and no migration exists",
                             "read it with the sparkpredict that wrote it (sparkpredict runs --out), "
                             "or write to a new store")

    def _put_marker(self, dest: str, data: bytes) -> None:
        """Write the marker whole, and never over one another writer made meanwhile: the writer
        lock is held on the marker file, so replacing it would let a second writer lock the
        new file while the first holds the old one."""
        d, name = dest.rsplit("/", 1)
        tmp = f"{d}/.{name}.{uuid.uuid4().hex[:8]}.tmp"
        with self.fs.open_output_stream(tmp) as f:
            f.write(data)
        if not isinstance(self.fs, pafs.LocalFileSystem):
            self.fs.move(tmp, dest)
            return
        try:
            os.link(tmp, dest)
        except FileExistsError:
            pass  # theirs is as good as ours
        except OSError:  # a file system without hard links (some FUSE mounts)
            self.fs.move(tmp, dest)
            return
        os.remove(tmp)

    def _sync(self, path: str) -> None:
        """Flush a local file's or folder's data to the disk: without it a power loss after a
        commit could leave a committed runs file empty (the store unreadable until that batch
        is moved out), or, after a compaction that removed what it replaced, rows lost. Remote
        file systems (s3://, hdfs://) make a write durable themselves."""
        if not isinstance(self.fs, pafs.LocalFileSystem):
            return
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            return
        try:
            os.fsync(fd)
        except OSError:  # a folder on a file system that cannot sync one
            pass
        finally:
            os.close(fd)

    def append(self, tables: dict[str, pa.Table | pd.DataFrame], batch_id: str | None = None, *,
               replaces: list[str] | None = None, row_group_rows: int | None = None) -> str:
        """Write one batch: every table's rows become visible together or not at all.

        ``tables`` must include ``runs`` (the commit mark, written last). Returns the batch id.
        ``replaces``: the batches whose rows this one holds (a compaction, :mod:`.compact`),
        hidden from readers by the same commit; its id must be a :func:`compacted_id`.
        """
        if replaces is not None and not (batch_id and is_compacted(batch_id)):
            raise ValueError("a batch that replaces others needs an id from compacted_id()")
        if S.COMMIT_TABLE not in tables:
            raise ValueError("a batch must include its runs rows (they commit the batch)")
        self.init()
        self.check_version()
        batch_id = batch_id or new_batch_id()
        conformed: dict[str, pa.Table] = {}
        for name, t in tables.items():
            if not isinstance(t, pa.Table):
                t = pa.Table.from_pandas(t, preserve_index=False)
            conformed[name] = S.conform(name, t)
        if replaces is not None:
            # in every file: the runs file commits the batch, and the others say what they
            # replaced once it is gone (an older `store clean` removes it, and not a newer
            # table's file); the tables known say that one without a file had no rows
            said = {SUPERSEDES_KEY: json.dumps(replaces).encode(), TABLES_KEY: json.dumps(list(S.TABLES)).encode(),
                    WRITTEN_KEY: json.dumps(sorted(conformed)).encode()}
            for name, t in conformed.items():
                conformed[name] = t.replace_schema_metadata({**(t.schema.metadata or {}), **said})
        order = [n for n in conformed if n != S.COMMIT_TABLE] + [S.COMMIT_TABLE]
        written: list[str] = []
        try:
            for name in order:
                d = self._dir(name)
                self.fs.create_dir(d, recursive=True)
                tmp = f"{d}/.part-{batch_id}.parquet.tmp"
                pq.write_table(conformed[name], tmp, filesystem=self.fs, compression="zstd",
                               row_group_size=row_group_rows)
                written.append(tmp)
                self._sync(tmp)
            # Renames, commit mark last: a crash before it leaves only invisible rows. The parts'
            # folders reach the disk before the mark is renamed, so that no power loss keeps a
            # commit whose parts' renames it lost.
            *parts, mark = written
            for tmp in parts:
                self.fs.move(tmp, _committed_name(tmp))
            for part_dir in dict.fromkeys(t.rsplit("/", 1)[0] for t in parts):
                self._sync(part_dir)
            self.fs.move(mark, _committed_name(mark))
            self._sync(mark.rsplit("/", 1)[0])
        except OSError as exc:
            for tmp in written:
                try:
                    self.fs.delete_file(tmp)
                except OSError:
                    pass
            raise StoreError(f"cannot write to store {self.path!r}: {exc}", self._write_fix(exc)) from exc
        log.debug("store %s: committed batch %s", self.path, batch_id)
        return batch_id


def _committed_name(tmp: str) -> str:
    """The path a batch's ``.part-<id>.parquet.tmp`` file is renamed to when committed."""
    d, name = tmp.rsplit("/", 1)
    return f"{d}/{name[1:-len('.tmp')]}"


def _damaged_fix(batch: str) -> str:
    """The fix for a part file of ``batch`` that cannot be read as the schema says."""
    if is_compacted(batch):
        return ("restore it from a backup: it holds the rows of many runs (a compacted batch); or, while "
                "the batches it replaced are still in the store (a compaction keeps their files 10 "
                f"minutes, --keep), move this batch's files (part-{batch}.parquet, in every table folder) "
                "out of the store folder: their rows are read again")
    return (f"move the batch's files (part-{batch}.parquet, in every table folder) out of the store "
            "folder, its runs file included, and ingest those runs' event logs again: moving this "
            "file alone leaves its runs without these rows for good, as ingest skips a log whose run "
            "is stored; other runs are unaffected")


def _foreign_fix(names: list[str], table: str) -> str:
    """The fix for a file in ``table``'s folder with columns that table does not have."""
    home = [t for t, columns in _COLUMNS.items() if columns.issuperset(names)]
    where = f" (its columns are those of the {' or '.join(home)} table)" if home else ""
    return (f"move it out of that folder{where}; if it was copied over the {table} file of that name, "
            "restore that file from a backup. Keep files sparkpredict did not write out of the store folder")


def _held_fix(batch: str, table: str) -> str:
    """The fix for a damaged file of ``table`` whose rows an older sparkpredict's compaction left
    in ``batch``'s file (its runs file gone): no batch to drop and ingest again."""
    return (f"move this file ({table}/part-{batch}.parquet) out of the store folder: it holds rows "
            "an older sparkpredict's `store compact` left outside the batch that replaced its batch, "
            f"whose other rows are whole. Its runs then keep no {table} rows"
            + (" (the stage models infer their scans' files from the task counts)" if table == "stage_scans" else "")
            + ", which only a backup of the file, or their event logs ingested into a fresh store "
            "(--store NEW_FOLDER), brings back; other runs are unaffected")


#: (schema id, column names) -> the schema those columns have when sparkpredict wrote them
_EXPECTED: dict[tuple[int, tuple[str, ...]], pa.Schema] = {}


def _typed_as(schema: pa.Schema, t: pa.Table) -> pa.Table:
    """``t`` with each of its columns cast to ``schema``'s type where it differs (raises
    pyarrow's error for a column that cannot be). One comparison of the whole schema first:
    a read of 3,000 batches checks 12,000 files."""
    if t.schema.equals(schema, check_metadata=False):  # every column, as written: the usual file
        return t
    key = (id(schema), tuple(t.column_names))
    want_schema = _EXPECTED.get(key)
    if want_schema is None:
        want_schema = _EXPECTED[key] = pa.schema([schema.field(n) for n in t.column_names])
    if t.schema.equals(want_schema, check_metadata=False):
        return t
    for i, name in enumerate(t.column_names):
        want = schema.field(name).type
        if t.schema.field(i).type != want:
            t = t.set_column(i, name, t.column(i).cast(want))
    return t


def _two_compactions(path: str, first: str, second: str, a: set[str], b: set[str], old: str) -> StoreError:
    """Two visible compacted batches that both replace ``old``: two compactions ran at once on a
    store without a lock. Removing one whose replaced batches the other replaced too loses
    nothing; otherwise the removed one's other batches come back only while their files last."""
    msg = (f"batches {first!r} and {second!r} of store {path!r} both replace batch {old!r}: two "
           "`store compact` ran at once, and their rows would be read twice")
    if a <= b or b <= a:
        inner = first if a <= b else second
        return StoreError(msg, f"remove runs/part-{inner}.parquet: the other batch holds all its rows; "
                               "on a remote store, run `sparkpredict store compact` one at a time")
    return StoreError(msg, "restore the store from a backup, or remove the runs file of one of them only if "
                           "the batches it replaced are still in the store (`store compact --keep` keeps "
                           "them 10 minutes); on a remote store, run `store compact` one at a time")


def _latest_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Each ``run_id``'s row with the highest ``updated_ms`` (of equal ones, the last read; a
    null one is older than every other): how a run's latest row wins in every table written
    again as the run goes on (``runs``, ``run_inputs``)."""
    df = df.sort_values(["run_id", "updated_ms"], kind="stable", na_position="first")
    return df.drop_duplicates("run_id", keep="last")


def _latest_run_rows(runs: pa.Table) -> pa.Table:
    """Keep the row with the highest ``updated_ms`` for each ``run_id``."""
    df = _latest_rows(runs.to_pandas()).sort_values("start_ms", kind="stable")
    return S.conform("runs", pa.Table.from_pandas(df, preserve_index=False))


def open(path: str | os.PathLike[str] | None = None, *, create: bool = False) -> Store:
    """Open the store at ``path`` (default: the embedded local store, see :mod:`sparkpredict.config`).

    Raises :class:`StoreError` when the path does not hold a store (unless ``create``), or
    holds one of an unknown schema version.
    """
    resolved = resolve_store(path)
    fs, root = _filesystem(resolved)
    store = Store(path=resolved, fs=fs, root=root)
    try:
        if create:
            store.init()
        elif not store.exists():
            err = _not_a_store(store)
            if not store.exists():  # else another writer made it between the two looks
                raise err
        store.check_version()
    except OSError as exc:
        # pyarrow's S3, GCS and HDFS errors carry no errno or path (a refused connection,
        # denied credentials): the store is the thing to fix, as a local path's error would say
        if isinstance(fs, pafs.LocalFileSystem):
            raise
        raise unreachable(resolved, exc) from exc
    return store


#: what to do about a remote store that failed to answer
REMOTE_FIX = ("check the URI's bucket and endpoint, the network to it, and that the credentials in the "
              "environment (for s3://: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY) may read and write there")


def is_remote(path: str) -> bool:
    """A store on a file system other than this machine's (``s3://``, ``gs://``, ``hdfs://``)."""
    return "://" in path and path[:5].lower() != "file:"


def unreachable(path: str, exc: OSError) -> StoreError:
    return StoreError(f"cannot reach store {path!r}: {exc}", REMOTE_FIX)


@contextlib.contextmanager
def opened_to_write(path: str | os.PathLike[str] | None = None) -> Iterator[Store]:
    """:func:`open` with ``create``, for a writer that may end up writing nothing (an ingest
    whose every log fails): a store this call created is removed again on the way out when
    no batch reached it, and its folder with it when this call made the folder. A later
    ``suggest`` then says there is no store at the path, not that an empty one has no runs."""
    resolved = resolve_store(path)
    fs, root = _filesystem(resolved)
    base = root.rstrip("/")
    try:
        folder_was = fs.get_file_info(base).type
        new = not Store(path=resolved, fs=fs, root=root).exists()
    except OSError:  # open() below says what is wrong with the path
        folder_was, new = None, False
    st = open(resolved, create=True)
    try:
        yield st
    finally:
        # Local stores only: there the writer lock keeps another ingest or edit from writing
        # while the marker goes. A remote store has no lock, and an empty one is harmless.
        if new and isinstance(fs, pafs.LocalFileSystem):
            _remove_if_unused(st, remove_folder=folder_was == pafs.FileType.NotFound)


def _remove_if_unused(st: Store, *, remove_folder: bool) -> None:
    """Under the writer lock, remove the marker of a local store that holds nothing else (no
    table folder, no other writer's temporary file), then the folder when this call made it
    and it is left empty (``os.rmdir`` refuses one that is not)."""
    base = st.root.rstrip("/")
    try:
        with st.writer_lock("ingest"):
            if {e.base_name for e in st.fs.get_file_info(pafs.FileSelector(base))} != {S.MARKER_FILE}:
                return
            os.remove(f"{base}/{S.MARKER_FILE}")
        if remove_folder:
            os.rmdir(base)
    except OSError as exc:  # what is left is an empty, valid store (or an empty folder): no harm
        log.debug("store %s: empty store not removed (%s)", st.path, exc)


def _not_a_store(store: Store) -> StoreError:
    """Why ``store`` (without its marker) cannot be read: recording a run fixes only a path
    that is missing or empty; a file or a folder of other files is the wrong path."""
    from ..config import default_store_source

    base = store.root.rstrip("/")
    given = "give the store's folder (--store; store= from Python)"
    default, where = default_store_source()
    named = False  # the path is the default that $SPARKPREDICT_STORE or a spark-defaults.conf gave
    with contextlib.suppress(StoreError):
        named = where != "the default store" and resolve_store(default) == store.path
    if named:
        given = f"set {where} (it names this path) to the store's folder, or give one with --store"
    tables: list[str] = []
    try:
        info = store.fs.get_file_info(base)
        if info.type == pafs.FileType.File:
            return StoreError(f"store path {store.path!r} is a file, not a store's folder", given)
        names = [] if info.type != pafs.FileType.Directory else sorted(
            e.base_name for e in store.fs.get_file_info(pafs.FileSelector(base)))
        # Hidden names are other writers' temporary files, as Store.init reads them.
        foreign = [n for n in names if n not in (*S.TABLES, S.MARKER_FILE) and not n.startswith(".")]
        tables = [n for n in names if n in S.TABLES]
    except OSError:  # unreadable: the plain answer below is all that can be said
        foreign = []
    if S.COMMIT_TABLE in tables:
        # a store's tables whose marker went (deleted, not copied along): that is what to say
        marker = json.dumps({"format": S.STORE_FORMAT, "schema_version": S.SCHEMA_VERSION})
        return StoreError(f"folder {store.path!r} holds a store's tables ({', '.join(t + '/' for t in tables)}) "
                          f"but not its marker {S.MARKER_FILE}",
                          f"if sparkpredict wrote these tables, restore {S.MARKER_FILE} as {marker}; "
                          f"else {given}")
    if foreign:
        outer = enclosing_store(store)
        if outer is not None:  # a store's own table folder (store/runs) holds its Parquet files
            return StoreError(f"store path {store.path!r} is inside the store {outer!r}",
                              f"give that store's folder, {outer!r}")
        return StoreError(f"folder {store.path!r} is not a sparkpredict store: {S.holds_other_files(foreign)}",
                          f"{given}; a new store needs an empty or new folder{_store_below_hint(store)}")
    return StoreError(f"no sparkpredict store at {store.path!r}",
                      "record a run first (sparkpredict.attach() in the job's driver, sparkpredict "
                      "submit, demo or ingest), or "
                      + (given if named else "give an existing store's path (--store; store= from Python)"))


__all__ = ["Held", "Store", "new_batch_id", "open", "opened_to_write"]
