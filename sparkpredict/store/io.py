"""Reading and atomically appending to a history store (layout: see :mod:`.schema`)."""
from __future__ import annotations

import contextlib
import json
import logging
import os
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

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


_warned_credentials: set[str] = set()


def _filesystem(path: str) -> tuple[pafs.FileSystem, str]:
    if uri_has_credentials(path) and path not in _warned_credentials:
        _warned_credentials.add(path)
        log.warning("store %s: its URI holds credentials, and the store's address is written in messages "
                    "and logs (reports show it as ***): give them in the environment instead "
                    "(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN)", store_for_display(path))
    try:
        if "://" in path:
            return pafs.FileSystem.from_uri(path)
        return pafs.LocalFileSystem(), path
    except Exception as exc:  # pyarrow raises several types for bad URIs
        raise StoreError(f"cannot reach store {path!r}: {exc}",
                         "give a local folder or a URI pyarrow can open (s3://, hdfs://, gs://)") from exc


def new_batch_id(label: str = "py") -> str:
    """Unique and time-ordered: concurrent writers never pick the same file name."""
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in label)[:60]
    return f"{int(time.time() * 1000):013d}-{safe}-{uuid.uuid4().hex[:12]}"


def _batch_of(filename: str) -> str | None:
    if not (filename.startswith("part-") and filename.endswith(".parquet")):
        return None
    return filename[len("part-"):-len(".parquet")]


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

    def _files(self, table: str) -> dict[str, str]:
        """batch_id -> file path for the visible part files of ``table``."""
        sel = pafs.FileSelector(self._dir(table), allow_not_found=True)
        out: dict[str, str] = {}
        for info in self.fs.get_file_info(sel):
            if info.type != pafs.FileType.File:
                continue
            b = _batch_of(info.base_name)
            if b is not None:
                out[b] = info.path
        return out

    def committed_batches(self) -> set[str]:
        return set(self._files(S.COMMIT_TABLE))

    def version(self) -> tuple[tuple[str, int, int], ...]:
        """What caches of derived results key on: each committed batch with its runs file's size
        and modification time. Batches are never rewritten by sparkpredict, but a store restored
        or copied over at the same path can keep the names with other rows."""
        sel = pafs.FileSelector(self._dir(S.COMMIT_TABLE), allow_not_found=True)
        out = []
        for info in self.fs.get_file_info(sel):
            b = _batch_of(info.base_name) if info.type == pafs.FileType.File else None
            if b is not None:
                out.append((b, int(info.size or 0), int(info.mtime_ns or 0)))
        return tuple(sorted(out))

    def orphans(self, min_age_s: float = 600.0) -> list[str]:
        """Files no reader should see, last modified over ``min_age_s`` ago: part files of
        batches that never got their runs file (a writer died between its renames), and
        leftover ``.tmp`` files. sparkpredict's readers skip them already; a plain
        ``spark.read.parquet("STORE/tasks")`` does not."""
        committed = self.committed_batches()
        cutoff_ns = (time.time() - min_age_s) * 1e9
        out = []
        for table in S.TABLES:
            for info in self.fs.get_file_info(pafs.FileSelector(self._dir(table), allow_not_found=True)):
                if info.type != pafs.FileType.File or info.mtime_ns is None or info.mtime_ns > cutoff_ns:
                    continue
                name = info.base_name
                batch = _batch_of(name)
                leftover = name.startswith(".part-") and name.endswith(".parquet.tmp")
                if leftover or (batch is not None and batch not in committed):
                    out.append(info.path)
        return sorted(out)

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
    def writer_lock(self, who: str = "writer") -> Iterator[None]:
        """Hold the store's writer lock (an exclusive ``flock`` on its marker file, which every
        store has and nothing rewrites: no lock file is left behind) in a local store while
        reading what the store holds and appending what follows from it: two
        ingests would each append the same run, two edits of one run each copy its latest row
        and the later would undo the other, an edit beside an ingest replacing the run's copy
        would copy the copy's row. Waits for another holder (``who``: what this one is, as the
        wait is told); a holder that dies releases it. Remote stores (s3://, hdfs://) have no
        such lock: there, run one such writer at a time."""
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
             run_ids: list[str] | None = None, all_rows: bool = False) -> pd.DataFrame | pa.Table:
        """All committed rows of ``table`` (``runs``, ``stages``, ``tasks``, ``executors``); of
        ``runs``, each run's latest row, or with ``all_rows`` every row it ever had (in batch
        order), which is what an edit looks back through (:mod:`.edit`)."""
        if table not in S.TABLES:
            raise StoreError(f"no table {table!r} in a sparkpredict store",
                             f"use one of {', '.join(S.TABLES)}")
        if form not in ("pandas", "arrow"):  # "polars" came back as pandas, silently
            raise StoreError(f"no form {form!r} to read a table in", "use form='pandas' or form='arrow'")
        unknown = [c for c in columns or [] if c not in S.TABLES[table].names]
        if unknown:  # pyarrow's KeyError named one field and not the table's columns
            raise StoreError(f"table {table!r} has no column(s) {', '.join(map(repr, unknown))}",
                             f"use its columns: {', '.join(S.TABLES[table].names)}")
        committed = self.committed_batches()
        files = self._files(table)
        paths = [p for b, p in sorted(files.items()) if b in committed]
        want = S.TABLES[table]
        parts = []
        gone: set[str] | None = None
        for p in paths:
            try:
                # One file at a time through ParquetFile: read_table would build a dataset
                # per file (and import pyarrow.dataset, ~0.5 s of a CLI's start).
                with self.fs.open_input_file(p) as f:
                    t = pq.ParquetFile(f).read()
            except FileNotFoundError as exc:
                # an ingest replacing its copy of a run dropped the batch since it was listed
                if gone is None:
                    gone = committed - self.committed_batches()
                if _batch_of(p.rsplit("/", 1)[-1]) in gone:
                    continue
                raise StoreError(f"file {p!r} of a committed batch is missing from the store",
                                 "restore it from a backup, or remove the batch's runs file (its "
                                 "commit mark) to drop the batch") from exc
            except PermissionError as exc:  # the file is sound: the user may not read it
                raise StoreError(f"no permission to read {p!r} of the store",
                                 "check the store's permissions: this user must be able to read "
                                 "every file under it") from exc
            except Exception as exc:
                raise StoreError(f"unreadable Parquet file {p!r} in store: {exc}",
                                 "move the file out of the store folder; other runs are unaffected") from exc
            if "run_id" not in t.column_names:
                raise StoreError(f"foreign file {p!r} in the store's {table}/ folder",
                                 "move files that sparkpredict did not write out of the store folder")
            parts.append(t.select([c for c in t.column_names if c in want.names]))
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

    def runs(self, form: Form = "pandas"):
        return self.read("runs", form)

    def stages(self, form: Form = "pandas"):
        return self.read("stages", form)

    def tasks(self, form: Form = "pandas"):
        return self.read("tasks", form)

    def executors(self, form: Form = "pandas"):
        return self.read("executors", form)

    # ---- writing ------------------------------------------------------------------------
    def init(self) -> None:
        """Create the store folder and its marker; refuse folders that hold other things."""
        base = self.root.rstrip("/")
        info = self.fs.get_file_info(base)
        if info.type == pafs.FileType.File:
            raise StoreError(f"store path {self.path!r} is a file", "give a folder path for the store")
        if info.type == pafs.FileType.Directory and not self.exists():
            entries = self.fs.get_file_info(pafs.FileSelector(base))
            # Hidden names are other writers' temp files (the listener's marker is written that way).
            foreign = [e.base_name for e in entries
                       if e.base_name not in S.TABLES and not e.base_name.startswith(".")]
            if foreign:
                raise StoreError(
                    f"folder {self.path!r} is not a sparkpredict store: {S.holds_other_files(sorted(foreign))}",
                    "point --store / spark.sparkpredict.store at an empty or new folder")
        try:
            self.fs.create_dir(base, recursive=True)
            if not self.exists():
                self._put_marker(f"{base}/{S.MARKER_FILE}", json.dumps(
                    {"format": S.STORE_FORMAT, "schema_version": S.SCHEMA_VERSION}).encode())
        except OSError as exc:
            raise StoreError(f"cannot write to store {self.path!r}: {exc}", self._write_fix()) from exc

    def _write_fix(self) -> str:
        if isinstance(self.fs, pafs.LocalFileSystem):
            return "choose a writable folder, or fix its permissions"
        return ("create the bucket first (or add allow_bucket_creation=true to an s3:// URI), and "
                "check that the credentials in the environment may write to it")

    def check_version(self) -> None:
        """Refuse stores written by a schema this code does not know."""
        if not self.exists():
            return
        with self.fs.open_input_stream(f"{self.root.rstrip('/')}/{S.MARKER_FILE}") as f:
            try:
                meta = json.loads(f.read().decode())
            except ValueError as exc:
                raise StoreError(f"store marker in {self.path!r} is corrupt",
                                 f"restore {S.MARKER_FILE} or use a new store folder") from exc
        v = meta.get("schema_version") if isinstance(meta, dict) else None
        marker = json.dumps({"format": S.STORE_FORMAT, "schema_version": S.SCHEMA_VERSION})
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

    def append(self, tables: dict[str, pa.Table | pd.DataFrame], batch_id: str | None = None) -> str:
        """Write one batch: every table's rows become visible together or not at all.

        ``tables`` must include ``runs`` (the commit mark, written last). Returns the batch id.
        """
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
        order = [n for n in conformed if n != S.COMMIT_TABLE] + [S.COMMIT_TABLE]
        written: list[str] = []
        try:
            for name in order:
                d = self._dir(name)
                self.fs.create_dir(d, recursive=True)
                tmp = f"{d}/.part-{batch_id}.parquet.tmp"
                pq.write_table(conformed[name], tmp, filesystem=self.fs, compression="zstd")
                written.append(tmp)
            # Renames, commit mark last: a crash before it leaves only invisible rows.
            for tmp in written:
                d, name = tmp.rsplit("/", 1)
                self.fs.move(tmp, f"{d}/{name[1:-len('.tmp')]}")
        except OSError as exc:
            for tmp in written:
                try:
                    self.fs.delete_file(tmp)
                except OSError:
                    pass
            raise StoreError(f"cannot write to store {self.path!r}: {exc}", self._write_fix()) from exc
        log.debug("store %s: committed batch %s", self.path, batch_id)
        return batch_id


def _latest_run_rows(runs: pa.Table) -> pa.Table:
    """Keep the row with the highest ``updated_ms`` for each ``run_id``."""
    df = runs.to_pandas()
    df = df.sort_values(["run_id", "updated_ms"], kind="stable", na_position="first")
    df = df.drop_duplicates("run_id", keep="last").sort_values("start_ms", kind="stable")
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
            raise _not_a_store(store)
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
    from ..config import STORE_ENV

    base = store.root.rstrip("/")
    given = "give the store's folder (--store; store= from Python)"
    if os.environ.get(STORE_ENV) and resolve_store(None) == store.path:
        given = f"set ${STORE_ENV} (it names this path) to the store's folder, or give one with --store"
    tables: list[str] = []
    try:
        info = store.fs.get_file_info(base)
        if info.type == pafs.FileType.File:
            return StoreError(f"store path {store.path!r} is a file, not a store's folder", given)
        names = [] if info.type != pafs.FileType.Directory else sorted(
            e.base_name for e in store.fs.get_file_info(pafs.FileSelector(base)))
        # Hidden names are other writers' temporary files, as Store.init reads them.
        foreign = [n for n in names if n not in S.TABLES and not n.startswith(".")]
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
        return StoreError(f"folder {store.path!r} is not a sparkpredict store: {S.holds_other_files(foreign)}",
                          f"{given}; a new store needs an empty or new folder")
    return StoreError(f"no sparkpredict store at {store.path!r}",
                      "record a run first (sparkpredict demo, submit or ingest), or "
                      + (given if given.startswith("set $") else
                         "give an existing store's path (--store; store= from Python)"))


__all__ = ["Store", "new_batch_id", "open", "opened_to_write"]
