"""A compacted batch's runs file lost (deleted by hand, a sync tool) once the batches it replaced
had gone: its other files became files of a batch never committed, and ``store clean`` removed
them, the last copy of those runs' stage, task and executor rows. A clean now refuses, naming
the file to restore; a compaction that died before its commit still has its files cleaned."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from test_compacted_lost_file import _compacted
from test_damaged_store import _refused
from test_store_compact import TABLES, _all, _copies, _keyed

from sparkpredict.cli import main
from sparkpredict.errors import StoreError
from sparkpredict.store import compact as C


def _runs_file(st, batch: str) -> Path:
    return Path(st.path) / "runs" / f"part-{batch}.parquet"


@pytest.fixture
def lost(tmp_path):
    """4 runs compacted into one batch, the replaced batches' files removed, then the compacted
    batch's runs file moved aside (to ``aside/``); with every table's rows as they were."""
    st = _copies(tmp_path, 4)
    before = _all(st)
    C.compact(st, keep_s=0)
    C.compact(st, keep_s=0)  # the first left the replaced files for readers; this one removes them
    batch = _compacted(st)
    assert st.committed_batches() == {batch}
    (tmp_path / "aside").mkdir()
    shutil.move(_runs_file(st, batch), tmp_path / "aside")
    return st, batch, before


def test_clean_refuses_naming_the_runs_file_and_a_restore_reads_every_row(lost, capsys):
    st, batch, before = lost
    root = Path(st.path)
    assert st.runs().empty  # what a reader sees meanwhile: the runs file was their commit
    with pytest.raises(StoreError) as err:
        st.orphans(0)
    assert err.value.message.startswith(f"the runs file of compacted batch {batch!r} is missing from store")
    assert ("its executors, stages, tasks file(s) hold the only copy of the rows of 4 run(s) no "
            "committed batch holds (app-0000, app-0001, app-0002, ... (4 in all))") in err.value.message
    assert err.value.fix.startswith(f"restore runs/part-{batch}.parquet from a backup")
    for argv in (["store", "clean", "--older-than", "0"], ["store", "clean", "--older-than", "0", "--dry-run"]):
        out = _refused(capsys, [*argv, "--store", str(root)], root)
        assert f"runs/part-{batch}.parquet" in out
    # the fix: the runs file back, every row of every table reads as before, and clean has nothing to do
    shutil.move(root.parent / "aside" / f"part-{batch}.parquet", root / "runs")
    for t in TABLES:
        pd.testing.assert_frame_equal(_keyed(st.read(t)), before[t])
    assert st.orphans(0) == []


def test_giving_the_runs_up_moves_the_batch_out_and_clean_goes_on(lost, capsys):
    st, batch, _ = lost
    root = Path(st.path)
    for f in root.glob(f"*/part-{batch}.parquet"):
        (root.parent / "given-up" / f.parent.name).mkdir(parents=True)
        shutil.move(f, root.parent / "given-up" / f.parent.name)
    capsys.readouterr()
    assert main(["store", "clean", "--older-than", "0", "--store", str(root)]) == 0
    assert "removed 0 uncommitted file(s)" in capsys.readouterr().out


def test_a_compaction_that_died_before_its_commit_is_cleaned_and_nothing_is_lost(tmp_path):
    """No false refusal: its runs file never written, the batches it copied are still read."""
    st = _copies(tmp_path, 4)
    before = _all(st)
    C.compact(st)
    batch = _compacted(st)
    _runs_file(st, batch).unlink()  # as if it died between its last part and its commit
    for t in TABLES:
        pd.testing.assert_frame_equal(_keyed(st.read(t)), before[t])
    gone = st.remove_orphans(0)
    assert sorted(Path(p).parent.name for p in gone) == ["executors", "stages", "tasks"]
    assert all(f"part-{batch}.parquet" in p for p in gone)
    for t in TABLES:
        pd.testing.assert_frame_equal(_keyed(st.read(t)), before[t])


def test_a_dead_compaction_whose_sources_a_later_one_merged_and_removed_is_cleaned(tmp_path):
    """The dead batch names batches long gone, merged again and removed by compactions after
    it: its rows are read from those, so its files go (lineage alone would call them the last copy)."""
    st = _copies(tmp_path, 4)
    C.compact(st, keep_s=0)
    C.compact(st, keep_s=0)
    first = _compacted(st)
    more = _copies(tmp_path / "more", 2)
    for rid in sorted(more.runs().run_id):  # two more batches, of other runs
        st.append({t: more.read(t, run_ids=rid).assign(run_id="x-" + rid)
                   for t in ("runs", "stages", "tasks", "executors")})
    before = _all(st)
    C.compact(st)
    dead = _compacted(st)
    _runs_file(st, dead).unlink()  # it died before its commit: `first` and the new batches read again
    C.compact(st, keep_s=0)
    C.compact(st, keep_s=0)
    assert first not in st.committed_batches()  # merged again and removed
    assert first in st._replaced_of(dead, {}, st._listing("tasks"))  # named by the dead batch's footer
    gone = st.remove_orphans(0)
    assert {Path(p).name for p in gone} == {f"part-{dead}.parquet"}
    for t in TABLES:
        pd.testing.assert_frame_equal(_keyed(st.read(t)), before[t])


def _summary(capsys, root: Path, *extra: str) -> tuple[str, str]:
    capsys.readouterr()
    assert main(["store", "summary", "--store", str(root), *extra]) == 0
    got = capsys.readouterr()
    return got.out, got.err


def test_store_summary_warns_of_the_runs_a_lost_runs_file_hides_until_it_is_restored(lost, capsys):
    """A read shows such runs as gone without a word; the summary, where a user looks for
    them, names them and the file to restore, in text and in --json."""
    st, batch, _ = lost
    root = Path(st.path)
    out, err = _summary(capsys, root)
    assert out.startswith(f"store {st.path}: 0 runs")
    assert (f"warning: 4 runs (app-0000, app-0001, app-0002, ...) missing from this summary and from "
            f"every read: the runs file of compacted batch {batch} is gone, its executors, stages, tasks "
            f"file(s) hold their only copy; restore runs/part-{batch}.parquet from a backup") in err
    out, _ = _summary(capsys, root, "--json")
    assert json.loads(out)["lost"] == [{
        "batch": batch, "tables": ["executors", "stages", "tasks"],
        "run_ids": ["app-0000", "app-0001", "app-0002", "app-0003"],
        "fix": f"restore runs/part-{batch}.parquet from a backup: its runs read again whole"}]
    shutil.move(root.parent / "aside" / f"part-{batch}.parquet", root / "runs")
    out, err = _summary(capsys, root)
    assert out.startswith(f"store {st.path}: 4 runs") and "warning" not in err
    assert json.loads(_summary(capsys, root, "--json")[0])["lost"] == []


def test_store_summary_says_nothing_of_a_compaction_that_died_before_its_commit(tmp_path, capsys):
    """Its rows are read from the batches it copied: no run is missing, so no false alarm."""
    st = _copies(tmp_path, 4)
    C.compact(st)
    batch = _compacted(st)
    _runs_file(st, batch).unlink()
    assert st.lost_copies() == []
    out, err = _summary(capsys, Path(st.path))
    assert out.startswith(f"store {st.path}: 4 runs") and "warning" not in err
