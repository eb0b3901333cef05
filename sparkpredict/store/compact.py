"""Merging a store's small batches into few large ones, so that reads open a few files, not one
per batch.

The listener commits at least one batch per run (runs, stages, tasks, executors and host-sample
files), and an ingest one per event log. A read opens every file of a table, about 1.5 ms
each here (an S3 GET is slower): 3,000 runs cost 4 to 5 s per table. Compaction writes the rows
of consecutive batches of finished runs as one batch, whose runs file (its commit mark) names the
batches it replaces (:data:`.io.SUPERSEDES_KEY`), so that the same rename that shows the new rows
hides the old ones: a reader sees each row once, before, during and after. Rows are copied as
they are, every runs row of an edited run included; stage, task, executor and host-sample rows
are sorted by run (stably), and written in row groups that a read of a few runs can skip.

The replaced batches' files stay ``keep_s`` (10 minutes) for readers that listed the store
before the compaction and read it still; the next compaction, or ``sparkpredict store clean``,
removes them after that. Readers older than this module, and plain ``spark.read.parquet``,
see the replaced rows twice until then.

Left alone: batches holding a run whose latest row says it is still going (``running``, or an
``incomplete`` log that a fuller one may replace: :func:`_going`), since their writers may still
add or drop batches of that run (a run the listener recorded ``incomplete``, as it does when
Spark dropped events of its queue and a job was never heard to end, has ended: merged);
batches of a run stored twice, which the next ingest reduces to one copy (:func:`_doubled`);
and batches already at least half of ``target_bytes``. A batch left alone also ends a group: a
compacted batch sorts right after the last batch it replaced, and a group spanning another
batch would move that batch's rows ahead of some of the group's.

>>> from sparkpredict.store.compact import compact
>>> compact("/tmp/history")                 # doctest: +SKIP
CompactResult(store='/tmp/history', batches_before=3000, batches_after=7, ...)
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError, StoreError
from ..units import is_bool

log = logging.getLogger(__name__)

#: A run whose writers may still add or drop its batches: its latest row's status is one of these
#: (an ``incomplete`` one only where ingest wrote it, see :func:`_going`).
GOING = ("running", "incomplete")
#: Default size of a compacted batch (all its tables' files together).
TARGET_BYTES = 64 * 2**20
#: Default time the replaced batches' files stay for readers that listed them.
KEEP_S = 600.0
#: Rows per row group of a compacted file: a read of a few runs skips the others' groups.
ROW_GROUP_ROWS = 65_536
#: Small batches committed since the last compaction at which sparkpredict's own writers
#: (``submit``, ``ingest``, ``sweep``) compact a local store when they are done
#: (:func:`auto_compact`). A read costs about 1.3 ms per batch and table here: 256 batches
#: keep ``sparkpredict suggest --store`` within its 1.5 s, 3,000 took 5.7 s.
AUTO_BATCHES = 256


@dataclass(frozen=True)
class CompactResult:
    """What :func:`compact` did (or, with ``dry_run``, would do)."""

    store: str
    #: batches a reader saw before, and sees after
    batches_before: int
    batches_after: int
    #: batches merged, into how many new ones, and the bytes of their files
    merged: int
    written: int
    merged_bytes: int
    #: batches left alone because a run in them is still going
    going: int
    #: batches left alone because a run in them is stored twice (see :func:`_doubled`)
    doubled: int = 0
    #: files removed: of batches replaced (by this or an earlier compaction) over keep_s ago
    removed: list[str] = field(default_factory=list)
    dry_run: bool = False
    #: how long the replaced files stay (seconds)
    keep_s: float = KEEP_S


def compact(store: Any = None, *, target_bytes: int = TARGET_BYTES, keep_s: float = KEEP_S,
            dry_run: bool = False) -> CompactResult:
    """Merge the store's small committed batches of finished runs into batches of about
    ``target_bytes``, then remove the files of batches replaced over ``keep_s`` seconds ago.

    Holds the store's writer lock (local stores), so no ingest or edit runs meanwhile;
    listeners keep appending (their runs are still going, so their batches are left alone).
    On a remote store, which has no lock, run one compaction, ingest or edit at a time.

    Raises
    ------
    InputError
        ``target_bytes`` or ``keep_s`` not a positive number (``keep_s`` may be 0).
    StoreError
        No store at ``store``, or it cannot be read or written. Nothing a reader sees changes
        then: a batch commits whole or not at all.
    """
    from . import io as store_io

    if isinstance(target_bytes, bool) or not isinstance(target_bytes, int) or target_bytes < 1:
        raise InputError(f"target size {target_bytes!r} is not a positive number of bytes",
                         "give a size such as 64MB")
    if isinstance(keep_s, bool) or not isinstance(keep_s, (int, float)) or not keep_s >= 0:
        raise InputError(f"keep time {keep_s!r} is not a number of seconds >= 0",
                         "give a time such as 10m, or 0 when no reader is reading the store")
    if not is_bool(dry_run):  # dry_run="no" is a true string: nothing would have been merged
        raise InputError(f"dry_run={dry_run!r} is neither True nor False",
                         "pass dry_run=True to see what a compaction would do, without writing")
    st = store if hasattr(store, "append") else store_io.open(store)
    with st.writer_lock("compact"):
        return _compact_held(st, target_bytes, float(keep_s), dry_run)


def _compact_held(st: Any, target_bytes: int, keep_s: float, dry_run: bool) -> CompactResult:
    """:func:`_compact`, the writer lock held; a batch gone meanwhile is a :class:`StoreError`."""
    from . import io as store_io

    try:
        return _compact(st, target_bytes, keep_s, dry_run)
    except store_io._Changed as exc:
        raise StoreError(f"batch {exc} of store {st.path!r} went while it was compacted: "
                         "another writer removed it (an ingest replacing its copy of a run, "
                         "another compaction)", "run the compaction again once that writer is done; "
                         "what it committed so far stays, and nothing was lost") from exc


def pending(store: Any, target_bytes: int = TARGET_BYTES, after: str = "") -> int:
    """Small batches (under half ``target_bytes``) committed after the newest compacted one (and
    after the batch id ``after``): what the next compaction would merge, roughly (runs still
    going stay). From one listing of the store's tables, without reading a file but the
    compacted runs files' footers."""
    from . import io as store_io
    from . import schema as S

    st = store if hasattr(store, "append") else store_io.open(store)
    listings = {t: st._listing(t) for t in S.TABLES}
    visible = st.visible_marks(listings[S.COMMIT_TABLE])
    after = max(max((b for b in visible if store_io.is_compacted(b)), default=""), after)
    return sum(1 for b in visible if b > after and not store_io.is_compacted(b)
               and 2 * sum(int(listings[t][b].size or 0) for t in S.TABLES if b in listings[t]) < target_bytes)


def _examined_file(st: Any) -> Any:
    import hashlib

    from ..config import cache_dir

    return cache_dir() / "compact" / (hashlib.sha256(st.path.encode()).hexdigest()[:24] + ".json")


def _examined(st: Any) -> str:
    """The newest batch of ``st`` when this user's last automatic compaction looked at it ("" if
    none): batches up to it that it left alone (a run still going between them) are not
    counted again, else every later writer would run a compaction that merges nothing."""
    import json

    try:
        doc = json.loads(_examined_file(st).read_text())
        return str(doc["newest_batch"]) if doc.get("store") == st.path else ""
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def _remember_examined(st: Any, newest: str) -> None:
    import json
    import os

    path = _examined_file(st)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(json.dumps({"store": st.path, "newest_batch": newest}))
        os.replace(tmp, path)
    except OSError as exc:  # only costs a compaction that merges nothing, once more
        log.debug("could not note the compaction of %s in %s: %s", st.path, path, exc)


def auto_compact(store: Any, *, min_batches: int | None = None) -> CompactResult | None:
    """Compact ``store`` (:func:`compact`'s defaults) when ``min_batches`` (default
    :data:`AUTO_BATCHES`) small batches arrived since its last compaction; None when not due,
    when another writer holds the store, or when the compaction merged nothing.

    What sparkpredict's writers call once their own work is committed, so that a store fed one
    batch per run stays quick to read without anyone running ``store compact``. Only on a local
    store, whose writer lock keeps two compactions apart: a remote one (S3, HDFS) has no lock,
    so there it logs a warning naming ``sparkpredict store compact`` instead. It never waits
    for the lock: a writer holding it (an ingest, an edit, a compaction) may run long, and the
    next writer to finish compacts instead. Batches it left alone (their run still going) count
    again only after ``min_batches`` newer ones. When not due, it still removes the files of
    batches an earlier compaction replaced over :data:`KEEP_S` ago (a local store), which plain
    ``spark.read.parquet`` would read twice. Never raises: the writer's work is stored already,
    and a compaction that fails changes nothing a reader sees; the failure is logged as a
    warning with its fix.
    """
    import pyarrow.fs as pafs

    from . import io as store_io
    from . import schema as S

    due = AUTO_BATCHES if min_batches is None else min_batches
    try:
        st = store if hasattr(store, "append") else store_io.open(store)
        if not isinstance(st.fs, pafs.LocalFileSystem):
            waiting = pending(st)
            if waiting >= due:
                log.warning("store %s: %d small batches since its last compaction make reads slow; run "
                            "`sparkpredict store compact --store %s` (one compaction, ingest or edit at "
                            "a time: a remote store has no lock)", st.path, waiting, st.path)
            return None
        seen = _examined(st)
        # looked at before the lock, so that the usual call (nothing due) takes no lock at all
        if pending(st, after=seen) < due and not st.replaced_files(KEEP_S):
            return None
        with st.writer_lock("compact", wait=False):
            if pending(st, after=seen) < due:  # again: another writer may have just compacted
                # else the last compaction's replaced files would stay until the next one, and
                # plain spark.read.parquet would see their rows twice all that while
                st.delete_files(st.replaced_files(KEEP_S), "the next compaction or `sparkpredict "
                                                           "store clean` removes them")
                return None
            newest = max(st.visible_marks(st._listing(S.COMMIT_TABLE)), default="")
            result = _compact_held(st, TARGET_BYTES, KEEP_S, dry_run=False)
            _remember_examined(st, newest)
    except store_io.LockBusy:
        log.info("store %s: another writer holds it; the next writer compacts it", getattr(store, "path", store))
        return None
    except Exception as exc:  # noqa: BLE001  # the writer's own work is stored: it must not fail now
        fix = getattr(exc, "fix", None) or "run `sparkpredict store compact` to see why"
        log.warning("store %s: compacting its small batches failed, and what readers see is unchanged: "
                    "%s (fix: %s)", getattr(store, "path", store), getattr(exc, "message", None) or exc, fix)
        return None
    if not result.merged:
        log.info("store %s: no small batches to merge (%d with a run still going)", st.path, result.going)
        return None
    log.info("store %s: merged %d small batches into %d", st.path, result.merged, result.written)
    return result


def _compact(st: Any, target_bytes: int, keep_s: float, dry_run: bool) -> CompactResult:
    from . import io as store_io
    from . import schema as S

    marks = st._listing(S.COMMIT_TABLE)
    visible = st.visible_marks(marks)
    listings = {t: st._listing(t) for t in S.TABLES}
    # merging a compacted batch that lost a file would make the loss permanent, and its end
    # would remove the replaced batches' files, which may hold those rows still
    st.check_lost(marks, {t: listings[t] for t in S.TABLES if t != S.COMMIT_TABLE}, visible)
    size = {b: sum(int(listings[t][b].size or 0) for t in S.TABLES if b in listings[t]) for b in visible}
    runs_of, going_runs = _runs_by_batch(st, visible)
    doubled_runs = _doubled(runs_of)
    going = {b for b, ids in runs_of.items() if ids & going_runs}
    doubled = {b for b, ids in runs_of.items() if ids & doubled_runs} - going
    # rows an older compaction's batches hold in the files of those they replaced (Store.held):
    # such a batch is merged again, alone or large, so that this version's batch holds them
    held = {t: st.held(t, marks, listings[t], visible).files for t in S.TABLES if t != S.COMMIT_TABLE}
    refold = {b for files in held.values() for b in files}
    groups = _groups(sorted(visible), going | doubled, size, target_bytes, refold)
    replaced_by = st.replaced_by(marks)
    written = 0
    for group in groups:
        if not dry_run:
            tables = _read_group(st, group, listings, held)
            # what the group's compacted members replaced and still lies around stays replaced:
            # else removing a member would show those batches again; so do the batches whose
            # files held rows of a member, which the new batch holds now
            elsewhere = {s for t in held.values() for b in group for s in t.get(b, [])}
            replaces = group + sorted({old for old, by in replaced_by.items() if by in group} | elsewhere)
            st.append(tables, batch_id=store_io.compacted_id(group[-1]), replaces=replaces,
                      row_group_rows=ROW_GROUP_ROWS)
        written += 1
    merged = sum(len(g) for g in groups)
    removed = st.replaced_files(keep_s)
    if dry_run and keep_s == 0:  # what this compaction replaces goes at once too
        merging = {b for g in groups for b in g}
        removed += sorted(info.path for t in S.TABLES for b, info in listings[t].items() if b in merging)
    if not dry_run:
        removed = st.delete_files(removed, "no reader reads these files; the next compaction or "
                                           "`sparkpredict store clean` removes them")
    return CompactResult(store=st.path, batches_before=len(visible),
                         batches_after=len(visible) - merged + written, merged=merged, written=written,
                         merged_bytes=sum(size[b] for g in groups for b in g),
                         going=len(going), doubled=len(doubled), removed=removed, dry_run=dry_run,
                         keep_s=keep_s)


def _runs_by_batch(st: Any, visible: dict[str, str]) -> tuple[dict[str, set[str]], set[str]]:
    """(batch -> its run ids, the runs whose latest row says they are still going)."""
    import pyarrow as pa

    from . import io as store_io
    from . import schema as S

    cols = ["run_id", "status", "updated_ms", "start_ms", "source"]
    ids = sorted(visible)
    tables = st._read_parts("runs", [(b, visible[b]) for b in ids], cols, None)
    runs_of = {b: set(t["run_id"].to_pylist()) for b, t in zip(ids, tables)}
    if not tables:
        return runs_of, set()
    latest = store_io._latest_run_rows(S.conform("runs", pa.concat_tables(tables, promote_options="permissive")))
    going = {r for r, s, src in zip(latest["run_id"].to_pylist(), latest["status"].to_pylist(),
                                    latest["source"].to_pylist()) if _going(s, src)}
    return runs_of, going


def _going(status: str | None, source: str | None) -> bool:
    """Whether a run whose latest row says ``status``, written by ``source``, may still change.

    ``running``: its listener may add rows yet (a driver gone without its last row cannot be
    told from one still running).
    ``incomplete`` means two things. Ingested (``source`` ``eventlog``), a log cut at its end,
    which a fuller log of the run replaces, dropping that copy's one batch (found by its label,
    which a compaction would merge away). Written by the listener, the run's final status: it
    writes ``running`` until the application's end (or the driver's exit), and its last row,
    the only one with another status, then says ``incomplete`` where Spark dropped events of its
    queue and a job was never heard to end; no ingest replaces the listener's copy of a run
    (``eventlog_ingest._replaceable``). A row of no known source stays going."""
    if status == "incomplete":
        return source != "listener"
    return status in GOING


def _doubled(runs_of: dict[str, set[str]]) -> set[str]:
    """Runs stored twice: by two ingests (one stopped between storing a fuller copy and
    dropping the one it replaced), or by an ingest and the listener. The next ingest keeps one
    copy, finding them by their batches' labels (``ingest-<run>``, ``<run>``), which a
    compaction would merge away for good: their batches are left alone."""
    from .io import batch_label

    labels = {b: batch_label(b) for b in runs_of}
    batches_of: dict[str, list[str]] = {}
    for b, ids in runs_of.items():
        if labels[b] is None or labels[b] == "edit":  # compacted, or no copy of a run
            continue
        for r in ids:
            batches_of.setdefault(r, []).append(b)
    return {r for r, bs in batches_of.items()
            if len(bs) > 1 and any(str(labels[b]).startswith("ingest-") for b in bs)}


def _groups(batches: list[str], going: set[str], size: dict[str, int], target: int,
            refold: set[str] | frozenset[str] = frozenset()) -> list[list[str]]:
    """Runs of consecutive batches to merge, each under ``target`` bytes and of 2 or more; a
    batch of ``refold`` is merged whatever its size, alone too."""
    groups: list[list[str]] = []
    cur: list[str] = []
    total = 0

    def close() -> None:
        nonlocal cur, total
        if len(cur) > 1 or refold.intersection(cur):
            groups.append(cur)
        cur, total = [], 0

    for b in batches:
        if b in going or (size[b] * 2 >= target and b not in refold):
            close()
            continue
        if cur and total + size[b] > target:
            close()
        cur.append(b)
        total += size[b]
    close()
    return groups


def _read_group(st: Any, group: list[str], listings: dict[str, dict],
                held: dict[str, dict[str, list[str]]]) -> dict[str, Any]:
    """Every table's rows of ``group``, in batch order; all but runs sorted by run, stably. A
    member an older compaction wrote without a table brings that table's rows from the files
    that hold them (``held``: :meth:`.io.Store.held`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from . import schema as S

    out = {}
    for table in S.TABLES:
        mine = held.get(table, {})
        have = [(s, listings[table][s].path) for b in group for s in mine.get(b, [b]) if s in listings[table]]
        parts = st._read_parts(table, have, None, None) if have else []
        t = S.conform(table, pa.concat_tables(parts, promote_options="permissive")) if parts \
            else S.empty_table(table)
        if table != S.COMMIT_TABLE and t.num_rows:
            t = t.take(pc.sort_indices(t, [("run_id", "ascending")]))  # a stable sort
        if table == S.COMMIT_TABLE or t.num_rows:
            out[table] = t
    return out


__all__ = ["AUTO_BATCHES", "GOING", "KEEP_S", "TARGET_BYTES", "CompactResult", "auto_compact", "compact", "pending"]
