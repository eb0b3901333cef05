"""A compacted batch's file lost (deleted by hand, a sync tool, a bucket's lifecycle rule):
found by the damage probe of tests/test_damaged_tasks.py, and left then. Its table read as
empty for the batch's runs without a word, and the next ``store compact --keep 0`` (or ``store
clean``, or the automatic compaction) removed the replaced batches' files, the last copy of
those rows. The compacted batch's footer now names the tables it wrote a file of
(``io.WRITTEN_KEY``): a read refuses, a compaction and a clean remove nothing, and the fix's
way back (moving the compacted batch out) gives every row again."""
from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pandas as pd
import pytest
from test_damaged_store import _refused, _sums
from test_store_compact import TABLES, _all, _copies, _keyed

from sparkpredict import store
from sparkpredict.errors import StoreError
from sparkpredict.store import compact as C
from sparkpredict.store import io as store_io


def _compacted(st) -> str:
    [batch] = [b for b in st.visible_marks() if store_io.is_compacted(b)]
    return batch


@pytest.fixture
def lost(tmp_path):
    """A store of 6 runs compacted into one batch (the 6 replaced batches still there), then the
    compacted batch's tasks file deleted; with every table's rows as they were."""
    st = _copies(tmp_path, 6)
    before = _all(st)
    assert len(before["tasks"]) > 100
    C.compact(st)
    batch = _compacted(st)
    (tmp_path / "st" / "tasks" / f"part-{batch}.parquet").unlink()
    return st, batch, before


def test_a_read_of_the_lost_table_is_refused_naming_the_file_and_both_ways_back(lost):
    st, batch, before = lost
    with pytest.raises(StoreError) as err:
        st.tasks()
    assert f"'tasks/part-{batch}.parquet' of a compacted batch is missing" in err.value.message
    assert err.value.fix.startswith(f"restore tasks/part-{batch}.parquet from a backup; or move that "
                                    f"batch's files (part-{batch}.parquet, in every table folder)")
    assert "the 6 batch(es) it replaced are still in the store" in err.value.fix
    # the tables it kept read as before: a file lost is that table's error only
    for t in ("runs", "stages", "executors", "host_samples"):
        pd.testing.assert_frame_equal(_keyed(st.read(t)), before[t])


def test_compact_and_clean_refuse_and_remove_nothing_then_the_fix_gives_every_row(lost, capsys, caplog,
                                                                                monkeypatch):
    st, batch, before = lost
    root = Path(st.path)
    sums = _sums(root)
    # the replaced batches' files hold the last copy of the lost rows: none may go
    for argv in (["store", "compact", "--keep", "0"], ["store", "compact", "--keep", "0", "--dry-run"],
                 ["store", "clean", "--older-than", "0"]):
        err = _refused(capsys, [*argv, "--store", str(root)], root)
        assert f"tasks/part-{batch}.parquet" in err and "from a backup" in err
    with pytest.raises(StoreError, match="of a compacted batch is missing"):
        st.replaced_files(0)
    # the automatic compaction after a writer's work, once the replaced files' 10 minutes are
    # over: warns, and removes nothing
    monkeypatch.setattr(C, "KEEP_S", 0.0)
    with caplog.at_level(logging.WARNING):
        assert C.auto_compact(st, min_batches=1) is None
    assert "of a compacted batch is missing" in caplog.text
    assert _sums(root) == sums
    # the fix's second way: the compacted batch's files moved out, every row of every table is back
    for f in root.glob(f"*/part-{batch}.parquet"):
        (root.parent / "aside" / f.parent.name).mkdir(parents=True)
        shutil.move(f, root.parent / "aside" / f.parent.name)
    for t in TABLES:
        pd.testing.assert_frame_equal(_keyed(st.read(t)), before[t])
    # and they compact again, whole
    assert C.compact(st, keep_s=0).merged == 6
    for t in TABLES:
        pd.testing.assert_frame_equal(_keyed(st.read(t)), before[t])


def test_once_the_replaced_batches_are_gone_the_fix_is_a_backup_alone(tmp_path, capsys):
    st = _copies(tmp_path, 4)
    C.compact(st, keep_s=0)
    C.compact(st, keep_s=0)  # the first left the replaced files for readers; this one removes them
    batch = _compacted(st)
    assert st.committed_batches() == {batch}
    (tmp_path / "st" / "stages" / f"part-{batch}.parquet").unlink()
    with pytest.raises(StoreError) as err:
        st.stages()
    assert err.value.fix == (f"restore stages/part-{batch}.parquet from a backup: the batches it replaced "
                             "have been removed, so the store holds no other copy of those rows")
    out = _refused(capsys, ["explain", "app-0001", "--store", st.path], tmp_path / "st")
    assert f"stages/part-{batch}.parquet" in out


def test_a_table_the_compacted_batches_had_no_rows_of_reads_empty_without_error(tmp_path):
    """No false alarm: host_samples, stage_scans and run_inputs had no rows in these batches, and
    the compacted batch has no file of them, nor says it wrote one."""
    st = _copies(tmp_path, 5)
    C.compact(st)
    batch = _compacted(st)
    said = st._footer(st.visible_marks()[batch])
    assert said is not None and said.written == ["executors", "runs", "stages", "tasks"]
    assert st.lost_files() == []
    for t in ("host_samples", "stage_scans", "run_inputs"):
        assert st.read(t).empty
    assert len(store.open(st.path).tasks()) > 100
