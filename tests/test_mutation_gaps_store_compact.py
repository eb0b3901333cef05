"""Behaviour of ``store.compact`` that a full one-operator mutation pass over the module found no
test pinning: a compacted batch that lost a file is never merged into a new one, a batch that
another writer removed mid-compaction is a :class:`StoreError`, what an automatic compaction
notes and says. Each test builds a small real store on disk; none starts a JVM."""
from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from test_auto_compact import _one_run_batches
from test_mutation_gaps_store import _runs
from test_store_compact import _copies

from sparkpredict import store
from sparkpredict.errors import StoreError
from sparkpredict.store import compact as C
from sparkpredict.store import io as store_io


def test_a_compacted_batch_that_lost_a_file_is_not_merged_with_a_new_small_batch(tmp_path):
    """Mutants: ``st.check_lost(...)`` deleted in ``_compact``, or given the runs listing only
    (``t != COMMIT_TABLE`` as ``==``). The lost tasks rows' last copies
    are the replaced batches' files; merging the damaged batch with its new neighbour hid them
    for good (the new batch replaces everything), and the compaction reported success."""
    st = _copies(tmp_path, 4)
    C.compact(st)
    [old] = [b for b in st.visible_marks() if store_io.is_compacted(b)]
    (tmp_path / "st" / "tasks" / f"part-{old}.parquet").unlink()
    st.append({"runs": st.read("runs").iloc[[0]].assign(run_id="app-late", app_id="app-late")})
    marks = sorted(st.committed_batches())
    with pytest.raises(StoreError, match=f"'tasks/part-{old}.parquet' of a compacted batch is missing"):
        C.compact(st)
    assert sorted(st.committed_batches()) == marks  # nothing written, nothing removed


def test_a_batch_another_writer_removes_mid_compaction_is_a_store_error_and_nothing_is_written(tmp_path,
                                                                                             monkeypatch):
    """Mutant: the ``raise StoreError`` of ``_compact_held`` deleted (the compaction returned None
    and said nothing)."""
    st = _one_run_batches(tmp_path / "st", 3)
    first = min(st.committed_batches())
    real, calls = st._read_parts, []

    def read_parts(table, files, columns, run_ids):
        calls.append(table)
        if len(calls) == 2:  # after the runs were listed and read: an ingest drops its copy
            st.drop_batch(first)
        return real(table, files, columns, run_ids)

    monkeypatch.setattr(st, "_read_parts", read_parts)
    with pytest.raises(StoreError) as err:
        C.compact(st)
    assert f"batch {first} of store {st.path!r} went while it was compacted" in err.value.message
    assert err.value.fix.startswith("run the compaction again once that writer is done")
    assert not any(store_io.is_compacted(b) for b in st.committed_batches())


def test_the_first_automatic_compaction_of_a_user_notes_what_it_left_in_a_new_cache(tmp_path, monkeypatch,
                                                                                     caplog):
    """Mutants: ``path.parent.mkdir(...)`` deleted in ``_remember_examined`` (or its
    ``parents=True`` as False): with no ``compact`` folder in the cache yet, the note was never
    written, and every later writer compacted again for batches left alone (a run still going
    between them). ``max`` as ``min`` over the batches noted (the oldest noted: all but it
    counted again). And the ``log.info`` of a compaction that merged nothing deleted."""
    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "new-cache"))
    st = _one_run_batches(tmp_path / "st", 4, going=(0, 2))
    passes = []
    real = C._compact
    monkeypatch.setattr(C, "_compact", lambda *a, **k: passes.append(1) or real(*a, **k))
    with caplog.at_level(logging.INFO, logger="sparkpredict.store.compact"):
        assert C.auto_compact(st, min_batches=4) is None  # merged nothing: every other batch going
    assert caplog.messages == [f"store {st.path}: no small batches to merge (2 with a run still going)"]
    assert C.auto_compact(st, min_batches=3) is None  # 3 batches after the oldest, none after the note
    assert len(passes) == 1
    assert Path(C._examined_file(st)).parent == tmp_path / "new-cache" / "compact"


def test_an_automatic_compaction_says_how_many_batches_it_merged_into_how_many(tmp_path, caplog):
    """Mutant: the ``log.info("... merged %d small batches into %d")`` of ``auto_compact``
    deleted: a writer's log said nothing of the store it rewrote."""
    st = _one_run_batches(tmp_path / "st", 3)
    with caplog.at_level(logging.INFO, logger="sparkpredict.store.compact"):
        assert C.auto_compact(st, min_batches=3).merged == 3
    assert f"store {st.path}: merged 3 small batches into 1" in caplog.messages


def test_by_default_a_batch_of_32_mib_is_large_and_one_byte_less_is_small(tmp_path):
    """Mutants of ``TARGET_BYTES = 64 * 2**20`` (65, 3**20, 2**21, ``*`` as ``/``, ``**`` as
    ``*``): the default target is 64 MiB, so half of it is where a batch stops being merged.
    The stages file is grown sparse to the size: ``pending`` only lists the files."""
    st = _copies(tmp_path, 1)
    [batch] = st.committed_batches()
    files = [p for p in (tmp_path / "st").glob(f"*/part-{batch}.parquet")]
    others = sum(p.stat().st_size for p in files if p.parent.name != "stages")
    stages = tmp_path / "st" / "stages" / f"part-{batch}.parquet"
    os.truncate(stages, 32 * 2**20 - others)
    assert C.pending(st) == 0
    os.truncate(stages, 32 * 2**20 - others - 1)
    assert C.pending(st) == 1


def test_a_compacted_file_holds_65536_rows_per_row_group(tmp_path):
    """Mutant: ``ROW_GROUP_ROWS`` 65,537: a read of a few runs skips row groups of 65,536 rows."""
    import pandas as pd
    import pyarrow.parquet as pq

    st = store.open(tmp_path / "st", create=True)
    for rid in ("a", "b"):
        st.append({**_runs({"run_id": rid}),
                   "tasks": pd.DataFrame({"run_id": rid, "stage_id": 0, "task_id": range(32_769)})})
    assert C.compact(st, keep_s=0).merged == 2
    [batch] = st.committed_batches()
    meta = pq.ParquetFile(tmp_path / "st" / "tasks" / f"part-{batch}.parquet").metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [65_536, 2]


def test_an_edit_of_an_ingested_run_is_no_second_copy_of_it(tmp_path):
    """Mutants: the ``continue`` past compacted and ``edit`` batches in ``_doubled`` deleted (or
    its ``or`` as ``and``): a run ingested once and then edited read as stored twice, and its
    batches were left alone for good (no ingest ever reduces an edit)."""
    st = store.open(tmp_path / "st", create=True)
    for rid in "ab":
        st.append(_runs({"run_id": rid}), batch_id=store_io.new_batch_id(f"{store_io.INGEST_LABEL}{rid}"))
    store.edit_runs(st, ["a"], excluded=True)
    r = C.compact(st, keep_s=0)
    assert (r.merged, r.written, r.doubled) == (3, 1, 0)
    assert list(st.read("runs")["status"]) == ["excluded", "succeeded"]


def test_a_batch_left_alone_between_two_compactions_is_not_counted_as_pending(tmp_path):
    """Mutant: ``max`` as ``min`` over the compacted batches in ``pending``: a running run's batch
    between two compacted ones counted as new, so every writer compacted again for it."""
    st = _one_run_batches(tmp_path / "st", 5, going=(2,))
    r = C.compact(st)
    assert (r.merged, r.written, r.going) == (4, 2, 1)
    assert C.pending(st) == 0


def test_a_cache_that_cannot_be_written_costs_the_note_only_and_says_why(tmp_path, monkeypatch, caplog):
    """Mutant: the ``log.debug`` of ``_remember_examined`` deleted: the note not written was
    said nowhere. The compaction itself stands."""
    (tmp_path / "cache").write_text("a file where the cache folder would be")
    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    st = _one_run_batches(tmp_path / "st", 2)
    with caplog.at_level(logging.DEBUG, logger="sparkpredict.store.compact"):
        assert C.auto_compact(st, min_batches=2).merged == 2
    [said] = [m for m in caplog.messages if m.startswith("could not note")]
    assert said.startswith(f"could not note the compaction of {st.path} in {C._examined_file(st)}: ")
    assert C._examined(st) == ""


def test_an_automatic_compaction_not_due_takes_no_lock(tmp_path, caplog):
    """Mutant: the check before the lock deleted in ``auto_compact``: every writer's call took
    the store's lock though nothing was due, and met the next writer holding it."""
    st = _one_run_batches(tmp_path / "st", 2)
    with store.open(tmp_path / "st").writer_lock("ingest"), \
            caplog.at_level(logging.INFO, logger="sparkpredict.store.compact"):
        assert C.auto_compact(st, min_batches=3) is None
    assert caplog.messages == []
    assert len(st.committed_batches()) == 2


def test_by_default_the_256th_small_batch_makes_an_automatic_compaction_due(tmp_path):
    """Mutant: ``AUTO_BATCHES`` 257 (every other test sets its own count)."""
    st = store.open(tmp_path / "st", create=True)
    for i in range(255):
        st.append(_runs({"run_id": f"r{i:03d}"}))
    assert C.auto_compact(st) is None
    st.append(_runs({"run_id": "r255"}))
    r = C.auto_compact(st)
    assert r is not None and (r.merged, r.written) == (256, 1)
    assert len(st.read("runs")) == 256


def test_a_compaction_result_cannot_be_changed_after_the_fact(tmp_path):
    """Mutant: ``@dataclass(frozen=True)`` as ``frozen=False``: a caller could change what a
    compaction says it did."""
    import dataclasses

    st = _one_run_batches(tmp_path / "st", 2)
    r = C.compact(st, dry_run=True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.merged = 0  # type: ignore[misc]
    assert r.merged == 2


def test_a_star_import_brings_the_public_api_and_none_of_the_modules_helpers():
    """Mutant: ``__all__`` deleted: ``from sparkpredict.store.compact import *`` also brought the
    module's logger, imports and private helpers, and shadowed a caller's ``log`` or ``Any``."""
    names: dict = {}
    exec("from sparkpredict.store.compact import *", names)  # noqa: S102
    assert {"compact", "auto_compact", "pending", "CompactResult", "KEEP_S", "TARGET_BYTES"} <= set(names)
    assert not {"log", "Any", "dataclass", "StoreError", "is_bool", "_compact", "_groups"} & set(names)


def test_a_writer_not_due_removes_old_replaced_files_and_merges_nothing(tmp_path):
    """Mutant: the check again under the lock deleted in ``auto_compact``: a call let in only
    because replaced files were due to go compacted the few small batches too."""
    st = _one_run_batches(tmp_path / "st", 4)
    assert C.auto_compact(st, min_batches=4).merged == 4
    [mark] = (tmp_path / "st" / "runs").glob("*compacted*.parquet")
    old = mark.stat().st_mtime - C.KEEP_S - 60
    os.utime(mark, (old, old))
    _one_run_batches(tmp_path / "st", 2)  # two new small batches in the same store
    assert C.auto_compact(st, min_batches=3) is None
    assert len(st.committed_batches()) == 3  # the compacted one and the two new ones, unmerged
    assert st.replaced_files(0) == []


def test_a_dry_run_lists_the_merged_batches_files_as_going_only_without_a_keep_time(tmp_path):
    """Mutant: ``dry_run and keep_s == 0`` as ``or`` in ``_compact``: a dry run with the default
    10 minutes said it would remove the files of the batches it merges."""
    st = _one_run_batches(tmp_path / "st", 2)
    files = sorted(str(p) for p in (tmp_path / "st").rglob("*.parquet"))
    assert C.compact(st, dry_run=True).removed == []
    assert sorted(C.compact(st, dry_run=True, keep_s=0).removed) == files
    assert sorted(C.compact(st, keep_s=0).removed) == files


def test_a_writer_that_finds_the_store_held_says_the_next_writer_compacts_it(tmp_path, caplog):
    """Mutant: the ``log.info`` of ``auto_compact``'s :class:`LockBusy` deleted."""
    st = _one_run_batches(tmp_path / "st", 2)
    with store.open(tmp_path / "st").writer_lock("ingest"), \
            caplog.at_level(logging.INFO, logger="sparkpredict.store.compact"):
        assert C.auto_compact(st, min_batches=2) is None
    assert caplog.messages == [f"store {st.path}: another writer holds it; the next writer compacts it"]


def test_a_failed_automatic_compaction_warns_with_the_errors_own_fix(tmp_path, monkeypatch, caplog):
    """Mutant: ``getattr(exc, "fix", None) or "run ..."`` as ``and`` in ``auto_compact``: the
    warning named the generic fix instead of the error's, and "None" for an error without one."""
    st = _one_run_batches(tmp_path / "st", 2)
    said = "store {}: compacting its small batches failed, and what readers see is unchanged: {} (fix: {})"
    for exc, fix in ((StoreError("the store is busy", "wait for it"), "wait for it"),
                     (RuntimeError("boom"), "run `sparkpredict store compact` to see why")):
        def fail(*_a, exc=exc, **_k):
            raise exc
        monkeypatch.setattr(C, "_compact", fail)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="sparkpredict.store.compact"):
            assert C.auto_compact(st, min_batches=2) is None
        assert caplog.messages == [said.format(st.path, exc.args[0], fix)]
    assert len(st.committed_batches()) == 2
