"""Writing the model registry: committing a retrain's rows as a new snapshot under the registry's
commit lock, merged with what overlapping retrains committed meanwhile; marking a running retrain;
finding the leftovers of killed ones (``sparkpredict store clean``). The layout and the readers
are :mod:`sparkpredict.registry`.
"""
from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import re
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from .errors import ModelError, StoreError
from .registry import (
    FAILED_FITS_KEY,
    FAILED_PREFIX,
    KEEP_SNAPSHOTS,
    KEY,
    REGISTRY_SCHEMA,
    REGISTRY_VERSION,
    _base,
    _open,
    _put_atomic,
    _read_snapshot,
    _snapshots,
    artifact_relpath,
    failed_fits,
)
from .store import io as store_io

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)

#: A running retrain's marker (``_models/running/<retrain_id>``) keeps ``store clean`` off its
#: artifacts, which stay unreferenced until its commit, however long its fits take. A marker this
#: old belongs to a retrain that was killed: it protects nothing any more.
RUNNING_MAX_AGE_S = 24 * 3600
#: Rounds of merging with snapshots that overlapping retrains committed meanwhile (each round
#: needs yet another commit to land inside the previous round's few milliseconds). Under the
#: commit lock none lands; the merge stays for stores the lock cannot cover (see :func:`_commit_lock`).
MERGE_ROUNDS = 8
#: The commit lock: ``_models/registry/<LOCK_NAME>``, never deleted (by ``store clean`` either):
#: a writer that deleted it while another held it would let a third lock a new file beside it.
LOCK_NAME = "commit.lock"
#: How long a commit waits for another one's lock. A commit holds it for milliseconds (read the
#: current snapshot, write the new one, rename); a wait this long means its holder is stuck.
LOCK_TIMEOUT_S = 120.0

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no flock; commits rely on the merge alone
    fcntl = None  # type: ignore[assignment]


def _key(row: dict) -> tuple[str, str, str]:
    return (row["job"], row["model_kind"], row.get("signature") or "")


def _records(table: pa.Table) -> dict[tuple[str, str, str], dict]:
    """A snapshot's rows by key, its failed-fit records (kept in its metadata) among them: the
    commit and its merge treat both alike."""
    return {_key(r): r for r in [*table.to_pylist(), *failed_fits(table)]}


def _is_failed(row: dict) -> bool:
    return str(row.get("model_kind") or "").startswith(FAILED_PREFIX)


def _without_superseded(rows: dict[tuple[str, str, str], dict]) -> dict[tuple[str, str, str], dict]:
    """Drop the record of a model's failed fit where the model was fitted since (the record is
    then no longer what the model's last fit did): the merge after the fact, which cannot tell
    which writer fitted what, goes by the times they recorded (a record wrongly kept is harmless:
    a current model is used whatever its record says; one wrongly dropped costs one more fit)."""
    out = dict(rows)
    for (job, kind, sig), row in rows.items():
        if not kind.startswith(FAILED_PREFIX):
            continue
        model = rows.get((job, kind[len(FAILED_PREFIX):], sig))
        if model is not None and int(model.get("trained_at_ms") or 0) >= int(row.get("trained_at_ms") or 0):
            del out[(job, kind, sig)]
    return out


def _name_ms(name: str) -> int:
    """The commit time leading a snapshot's name (``part-<13 digits>-...``); 0 if none."""
    digits = name[len("part-"):len("part-") + 13]
    return int(digits) if digits.isdigit() else 0


def _write_snapshot(st: store_io.Store, rows: Iterable[dict], retrain_id: str, after: Iterable[str]) -> str:
    """Write ``rows`` as a snapshot named after every name in ``after``; returns its name.

    The name is taken now, at the commit, not when the retrain started: a retrain that started
    earlier and commits later must become the current snapshot. Clocks of two writers may
    disagree, so the name is also kept after the newest name this writer has seen.
    """
    import pandas as pd

    rows = list(rows)
    failed = sorted((r for r in rows if _is_failed(r)), key=_key)
    df = pd.DataFrame([r for r in rows if not _is_failed(r)])
    for f in REGISTRY_SCHEMA:
        if f.name not in df.columns:
            df[f.name] = None
    df = df[REGISTRY_SCHEMA.names].sort_values(KEY, kind="stable").reset_index(drop=True)
    if df.duplicated(KEY).any():
        raise ValueError("registry rows must be unique per (job, model_kind, signature)")
    table = pa.Table.from_pandas(pd.DataFrame(df), schema=REGISTRY_SCHEMA, preserve_index=False)
    meta = {b"registry_version": str(REGISTRY_VERSION).encode()}
    if failed:  # beside the table, so that readers of models never meet them (registry.FAILED_FITS_KEY)
        meta[FAILED_FITS_KEY] = json.dumps(failed, sort_keys=True, default=_json_scalar).encode()
    table = table.replace_schema_metadata(meta)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    ms = max([int(time.time() * 1000)] + [_name_ms(n) + 1 for n in after])
    name = f"part-{ms:013d}-{retrain_id}.parquet"
    try:
        _put_atomic(st.fs, f"{_base(st)}/registry/{name}", sink.getvalue().to_pybytes())
    except OSError as exc:
        raise StoreError(f"cannot write the model registry to store {st.path!r}: {exc}",
                         "choose a writable store, or fix its permissions") from exc
    log.info("registry of %s: committed %s (%d rows)", st.path, name, len(df))
    return name


def _json_scalar(v: Any) -> Any:
    return v.item() if hasattr(v, "item") else str(v)


def _prune(st: store_io.Store) -> None:
    """Drop snapshots beyond :data:`KEEP_SNAPSHOTS` (best effort: never undoes a commit)."""
    for n in _snapshots(st)[:-KEEP_SNAPSHOTS]:
        try:
            st.fs.delete_file(f"{_base(st)}/registry/{n}")
        except OSError as exc:  # pragma: no cover - pruning is optional
            log.warning("could not prune registry snapshot %s: %s", n, exc)


def commit_registry(store: Any, rows: pd.DataFrame, retrain_id: str) -> str:
    """Write ``rows`` as the whole new registry snapshot; the final rename is the commit point.

    Returns the snapshot's file name. This replaces the registry as it stands; a retrain
    commits with :func:`commit_update`, which keeps rows other retrains committed meanwhile.
    Older snapshots beyond :data:`KEEP_SNAPSHOTS` are pruned after the commit.
    """
    st = _open(store)
    with _commit_lock(st, LOCK_TIMEOUT_S):
        name = _write_snapshot(st, rows.to_dict("records"), retrain_id, _snapshots(st))
        _prune(st)
    return name


def commit_update(store: Any, updates: Iterable[dict], retrain_id: str, *,
                  lock_timeout_s: float | None = None) -> str | None:
    """Commit one retrain's rows (one per model it refit) on top of the registry as it is now.

    Rows of models the retrain did not refit are taken from the current snapshot, not from the
    one the retrain read when it started: two overlapping retrains each keep the other's models,
    and where both refit the same model, the later commit wins. Each row's ``version`` becomes
    the current one's + 1 (its artifact is renamed to match, when another retrain took the number
    meanwhile).

    Reading the current snapshot, writing ours and renaming it happen under the registry's
    commit lock (:func:`_commit_lock`), so no other commit lands in between. Where no lock can be
    taken (object stores, Windows), another retrain may commit in between (without our rows, or
    we without its). So after the rename the snapshots that appeared meanwhile are merged, model
    by model, taking the highest version (a refit, never the row a retrain merely carried over),
    and ties to the later-named snapshot; the merge is committed as a newer snapshot until none
    appears meanwhile. Every writer does the same, so the last one to commit holds every
    retrain's rows, provided none is killed between its rename and its merge.

    ``updates`` may hold records of failed fits (model kind ``failed:<kind>``, no artifact): they
    are committed the same way, in the snapshot's metadata, and a model's record is dropped when
    the model is fitted (in a merge after the fact, by :func:`_without_superseded`).

    Returns the committed snapshot's name (the current one when ``updates`` is empty). Raises
    :class:`StoreError` when another process holds the lock for over ``lock_timeout_s`` seconds
    (default :data:`LOCK_TIMEOUT_S`).
    """
    st = _open(store)
    mine = {_key(r): dict(r) for r in updates}
    if not mine:
        names = _snapshots(st)
        return names[-1] if names else None
    with _commit_lock(st, LOCK_TIMEOUT_S if lock_timeout_s is None else lock_timeout_s):
        return _commit_locked(st, mine, retrain_id)


def _commit_locked(st: store_io.Store, mine: dict[tuple[str, str, str], dict], retrain_id: str) -> str:
    """:func:`commit_update`'s read-merge-write-rename, run under the commit lock."""
    names = _snapshots(st)
    missing = [r["artifact"] for r in mine.values()
               if r.get("artifact") and st.fs.get_file_info(f"{_base(st)}/{r['artifact']}").type != pafs.FileType.File]
    if missing:  # e.g. `store clean --older-than 0` during the retrain: never commit a dangling row
        raise StoreError(f"{len(missing)} model artifact(s) of retrain {retrain_id} vanished before its "
                         f"commit, e.g. {missing[0]!r}; the registry was not changed",
                         "run the retrain again, and no `sparkpredict store clean --older-than 0` meanwhile")
    rows = _records(_read_snapshot(st, names[-1])) if names else {}
    for key, row in mine.items():
        version = int(rows[key]["version"]) + 1 if key in rows else 1
        if version != row["version"]:
            if row.get("artifact"):  # a failed fit's record has none
                row["artifact"] = _renumber(st, row, version)
            row["version"] = version
        rows[key] = row
        if not _is_failed(row):  # fitted now: the record of an earlier failed fit no longer holds
            rows.pop((key[0], FAILED_PREFIX + key[1], key[2]), None)
    own = _write_snapshot(st, rows.values(), retrain_id, names)
    seen = set(names) | {own}
    for _ in range(MERGE_ROUNDS):
        now = _snapshots(st)
        new = [n for n in now if n not in seen]
        if not new:
            break
        seen.update(new)
        # every snapshot committed since this commit began (ours included), and the one it began
        # from: one of them may hold rows of a writer that is no longer there to merge them
        pool = {n for n in now if n not in names} | set(names[-1:])
        merged: dict[tuple[str, str, str], tuple[tuple[int, str], dict]] = {}
        for name in sorted(pool):
            try:
                recs = _records(_read_snapshot(st, name))
            except (StoreError, ModelError):  # pruned meanwhile: a newer snapshot holds its rows
                continue
            for key, row in recs.items():
                rank = (int(row["version"]), name)
                if key not in merged or rank >= merged[key][0]:
                    merged[key] = (rank, row)
        try:
            newest = _records(_read_snapshot(st, now[-1]))
        except (StoreError, ModelError):
            newest = {}
        kept = _without_superseded({k: r for k, (_, r) in merged.items()})
        if kept == newest:
            continue  # the newest snapshot already holds every row
        own = _write_snapshot(st, kept.values(), retrain_id, now)
        seen.add(own)
        log.info("registry of %s: merged %d snapshot(s) committed meanwhile into %s", st.path, len(new), own)
    _prune(st)
    return own


@contextlib.contextmanager
def _commit_lock(st: store_io.Store, timeout_s: float) -> Iterator[None]:
    """Hold the registry's commit lock, ``flock`` on ``_models/registry/``:data:`LOCK_NAME`.

    flock locks an open file, not its name, and the kernel drops the lock when its holder dies,
    however it dies (SIGKILL included): a killed retrain never leaves the registry locked, and
    the file it leaves behind locks nothing. Where no lock can be taken the block runs unlocked,
    as every commit did before the lock, and :func:`commit_update`'s merge after the fact is all
    there is: stores pyarrow reaches over the network (hdfs://, s3://, gs://), platforms without
    fcntl (Windows), and mounts that refuse flock (ENOLCK, EOPNOTSUPP: some network file systems).
    """
    if fcntl is None or not isinstance(st.fs, pafs.LocalFileSystem):
        yield
        return
    path = f"{_base(st)}/registry/{LOCK_NAME}"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except PermissionError:
            # A store a team shares: the first committer's umask left the lock file writable by
            # it alone, while the folder lets everyone write snapshots. flock needs no write
            # access, so any user who can read the file can take the lock.
            fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise StoreError(f"cannot write to the model registry of store {st.path!r}: {exc}",
                         "choose a writable store, or fix its permissions") from exc
    try:
        if _acquire(fd, path, st, timeout_s):
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        else:
            yield
    finally:
        os.close(fd)


def _acquire(fd: int, path: str, st: store_io.Store, timeout_s: float) -> bool:
    """Take the lock on ``fd`` within ``timeout_s``; False where the file system has no locks."""
    # polled, not a blocking flock: a blocking call cannot time out without a signal handler,
    # which only the main thread may install
    deadline = time.monotonic() + timeout_s
    pause = 0.002
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            pass
        except OSError as exc:
            # EBADF: NFS emulates flock with POSIX locks, which refuse an exclusive lock on a
            # file opened read-only (the shared-store case above)
            if exc.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EBADF):
                log.warning("registry of %s: the file system refuses a lock on %s (%s); committing "
                            "without it (a merge after the fact, as on object stores)", st.path, path, exc)
                return False
            raise StoreError(f"cannot lock the model registry of store {st.path!r}: {exc}",
                             "fix the store's permissions, then run the retrain again") from exc
        left = deadline - time.monotonic()
        if left <= 0:
            raise StoreError(
                f"cannot commit to the model registry of store {st.path!r}: another process has held "
                f"its commit lock {path} for over {timeout_s:g} s (a commit holds it for "
                "milliseconds); the registry was not changed",
                f"find the holder with `lsof {path}` (or `fuser {path}`), end it if it is stuck, "
                "then run the retrain again")
        time.sleep(min(pause, left))
        pause = min(pause * 2, 0.05)


def _renumber(st: store_io.Store, row: dict, version: int) -> str:
    """Rename ``row``'s artifact to carry ``version``; returns its new relative path."""
    rel = artifact_relpath(row["job"], row["model_kind"], version, row["retrain_id"], row.get("signature") or "")
    try:
        st.fs.move(f"{_base(st)}/{row['artifact']}", f"{_base(st)}/{rel}")
    except OSError as exc:
        raise StoreError(f"cannot rename model artifact {row['artifact']!r} in store {st.path!r}: {exc}",
                         "fix the store's permissions, then run the retrain again") from exc
    return rel


# ---- running retrains and leftovers -------------------------------------------------------------
#: The folders of ``STORE/_models`` a retrain writes: what each one holds, for the error that
#: finds a file in its place.
_REGISTRY_FOLDERS = (("registry", "its snapshots"), ("artifacts", "its models' files"),
                     ("running", "the marks of running retrains"))


def check_writable(store: Any) -> None:
    """Refuse, before any fit (and in ``retrain --dry-run``), a registry a retrain could not
    commit: ``STORE/_models``, or a folder of it, that is a file, or (on a local store) a folder
    this user cannot write. A retrain found it only at its commit, after all its fitting, and
    then said "Not a directory" of the store. Writes nothing."""
    st = _open(store)
    base = _base(st)
    info = st.fs.get_file_info(base)
    if info.type == pafs.FileType.File:
        raise StoreError(f"{base} is a file, not the folder of the store's model registry",
                         f"remove it (rm {base}): the next retrain makes the registry again")
    for name, holds in _REGISTRY_FOLDERS:
        path = f"{base}/{name}"
        if info.type == pafs.FileType.Directory and st.fs.get_file_info(path).type == pafs.FileType.File:
            raise StoreError(f"the model registry of store {st.path!r} is broken: {path} is a file, not the "
                             f"folder of {holds}",
                             f"remove it (rm {path}): the next retrain makes it again"
                             + (", and refits every job" if name == "registry" else ""))
    if not isinstance(st.fs, pafs.LocalFileSystem):
        return  # a remote store's permissions are its service's; its commit says what it refused
    # the folder the retrain would write into first: the deepest of _models/registry that is there
    folder = next(p for p in (f"{base}/registry", base, st.root) if os.path.isdir(p) or p == st.root)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise StoreError(f"cannot write to the model registry of store {st.path!r}: {folder} is not writable "
                         "by this user", "fix its permissions (chmod u+w), or retrain as the store's owner")


def _marker(st: store_io.Store, retrain_id: str) -> str:
    return f"{_base(st)}/running/{retrain_id}"


def mark_running(store: Any, retrain_id: str) -> None:
    """Say that ``retrain_id`` is writing artifacts (before its first): see :func:`orphans`."""
    st = _open(store)
    try:
        _put_atomic(st.fs, _marker(st, retrain_id), str(int(time.time() * 1000)).encode())
    except OSError as exc:
        raise StoreError(f"cannot write to the model registry of store {st.path!r}: {exc}",
                         "choose a writable store, or fix its permissions") from exc


def unmark_running(store: Any, retrain_id: str) -> None:
    """The retrain has committed or failed; best effort (a marker left behind expires)."""
    st = _open(store)
    try:
        st.fs.delete_file(_marker(st, retrain_id))
    except OSError:
        pass


_ARTIFACT_RETRAIN = re.compile(r"-v\d+-(\d{13}-retrain-[0-9a-f]+)\.json(?:\.[0-9a-f]+\.tmp)?$")


def retrain_of(store: Any, path: str) -> tuple[str, bool] | None:
    """(the retrain id, whether ``path`` is its running marker) for a registry file that belongs
    to one retrain (its marker, an artifact it wrote); None for any other file."""
    st = _open(store)
    running = _marker(st, "")
    if path.startswith(running) and "/" not in path[len(running):]:
        return path[len(running):], True
    m = _ARTIFACT_RETRAIN.search(path.rpartition("/")[2])
    return (m.group(1), False) if m else None


def orphans(store: Any, min_age_s: float = 600.0) -> list[str]:
    """Files of the model registry that no committed snapshot needs, last modified over
    ``min_age_s`` ago: artifacts that no snapshot references (a retrain killed or failed
    before its commit, or referenced only by snapshots pruned since), hidden ``.tmp`` files of
    interrupted writes, and markers of retrains killed over a day ago.

    Never listed: a snapshot, an artifact any snapshot references (older snapshots too: deleting
    the newest must leave the previous one loadable), or a file of a retrain still running (its
    marker, :func:`mark_running`, younger than :data:`RUNNING_MAX_AGE_S`; ``min_age_s=0`` means
    no writer is running and ignores markers). Raises :class:`StoreError` when a snapshot
    cannot be read: what it references is unknown, so nothing is listed.
    """
    st = _open(store)
    base = _base(st)
    now_ns = time.time() * 1e9
    cutoff_ns = now_ns - min_age_s * 1e9
    # Markers before snapshots: a retrain that commits (and drops its marker) in between is
    # then seen by its snapshot, and one seen running keeps its files.
    running, out = set(), []
    for info in st.fs.get_file_info(pafs.FileSelector(f"{base}/running", allow_not_found=True)):
        if info.type != pafs.FileType.File:
            continue
        live = min_age_s > 0 and info.mtime_ns is not None and info.mtime_ns > now_ns - RUNNING_MAX_AGE_S * 1e9
        if live:
            running.add(info.base_name)
        elif info.mtime_ns is not None and info.mtime_ns <= cutoff_ns:
            out.append(info.path)
    referenced: set[str] = set()
    for name in _snapshots(st):
        try:
            referenced.update(_read_snapshot(st, name, ["artifact"]).column("artifact").to_pylist())
        except (StoreError, ModelError) as exc:
            if isinstance(exc, StoreError) and name not in _snapshots(st):
                continue  # pruned by a retrain since it was listed: its rows are in newer ones
            raise StoreError(f"registry snapshot {name!r} of store {st.path!r} cannot be read, so the "
                             f"model artifacts it references are unknown: nothing was removed ({exc.message})",
                             "delete or restore that snapshot, then clean again") from exc
    for info in st.fs.get_file_info(pafs.FileSelector(base, recursive=True, allow_not_found=True)):
        if info.type != pafs.FileType.File or info.mtime_ns is None or info.mtime_ns > cutoff_ns:
            continue
        rel = info.path[len(base) + 1:]
        name = info.base_name
        tmp = name.startswith(".") and name.endswith(".tmp")
        if rel.startswith("registry/"):
            if tmp:  # never the commit lock (LOCK_NAME): see there why it stays
                out.append(info.path)
        elif rel.startswith("artifacts/") and (tmp or name.endswith(".json")):
            m = _ARTIFACT_RETRAIN.search(name)
            if (m is None or m.group(1) not in running) and (tmp or rel not in referenced):
                out.append(info.path)
    return sorted(out)


def remove_orphans(store: Any, min_age_s: float = 600.0, found: list[str] | None = None) -> list[str]:
    """Delete :func:`orphans` (or ``found``, what it listed a moment ago); returns the paths removed."""
    st = _open(store)
    removed = st.delete_files(orphans(st, min_age_s) if found is None else found,
                              "no committed model was changed")
    if removed:
        log.info("registry of %s: removed %d leftover file(s)", st.path, len(removed))
    return removed


__all__ = ["check_writable", "commit_registry", "commit_update", "mark_running", "orphans", "remove_orphans", "unmark_running"]
