"""More of ``store.io``'s write and read rules that a mutation audit of it found no test pinning:
which files a clean may remove (only the temporary files sparkpredict writes), what the stale
ingest copy rule does for a caller that reads the batches itself, and which row groups a read by
run keeps. Each test builds a small real store on disk; none starts a JVM."""
from __future__ import annotations

import os
import time

import pandas as pd

from sparkpredict import store
from sparkpredict.store import io as store_io


def _runs(run_id: str) -> dict[str, pd.DataFrame]:
    return {"runs": pd.DataFrame([{"run_id": run_id, "job": "j", "status": "succeeded", "start_ms": 1000,
                                   "updated_ms": 1}])}


def _age(*paths) -> None:
    hour_ago = time.time() - 3600
    for p in paths:
        os.utime(p, (hour_ago, hour_ago))


def test_an_old_temporary_file_sparkpredict_did_not_write_is_no_orphan(tmp_path):
    # clean removes the .tmp files of sparkpredict's own writers (".part-*" and the marker's
    # copy); a user's "notes.tmp" in a table folder, or a hidden non-.tmp file, is not its to delete
    root = tmp_path / "st"
    st = store.open(root, create=True)
    st.append({**_runs("a"), "stages": pd.DataFrame({"run_id": ["a"], "stage_id": [0]})})
    theirs = [root / "stages" / "notes.tmp", root / "stages" / ".part-mine.parquet.bak"]
    ours = root / "stages" / ".part-0000000000001-py-0123456789ab.parquet.tmp"
    for p in (*theirs, ours):
        p.write_bytes(b"x")
    _age(*theirs, ours)
    assert st.orphans(min_age_s=60) == [str(ours)]
    assert st.remove_orphans(min_age_s=60) == [str(ours)]
    assert all(p.exists() for p in theirs) and not ours.exists()
    assert list(st.read("stages")["run_id"]) == ["a"]


def test_a_stale_copy_check_without_gone_is_change_takes_a_gone_copy_as_no_run(tmp_path):
    # retrain --spark lists the batches and reads them itself: an ingest copy dropped since its
    # listing is no batch of a run there (Spark reads what is left), not an internal _Changed
    root = tmp_path / "st"
    st = store.open(root, create=True)
    first = st.append(_runs("app-1"), batch_id=store_io.new_batch_id(store_io.INGEST_LABEL + "app-1"))
    second = st.append(_runs("app-1"), batch_id=store_io.new_batch_id(store_io.INGEST_LABEL + "app-1"))
    third = st.append(_runs("app-1"), batch_id=store_io.new_batch_id(store_io.INGEST_LABEL + "app-1"))
    visible = st.visible_marks()
    assert st._stale_ingest_copies(visible) == {first, second}
    (root / "runs" / f"part-{first}.parquet").unlink()  # an ingest dropped it after the listing
    assert st._stale_ingest_copies(visible) == {second}
    # a reader that kept the gone copy's rows from an earlier listing reads again instead
    try:
        st._stale_ingest_copies(visible, gone_is_change=True)
    except store_io._Changed as e:
        assert e.args == (first,)
    else:
        raise AssertionError("a gone copy was not a change for a reader")
    assert list(st.runs()["run_id"]) == ["app-1"]


def test_a_read_by_run_keeps_a_row_group_whose_run_ids_have_no_bounds(tmp_path, monkeypatch):
    # a row group of a compacted file whose run_id statistics hold no min/max (all null: rows a
    # foreign writer left without a run) cannot be ruled out by its bounds: read, not a TypeError
    from sparkpredict.store import compact as C

    monkeypatch.setattr(C, "ROW_GROUP_ROWS", 1)
    st = store.open(tmp_path / "st", create=True)
    st.append({**_runs("a"), "stages": pd.DataFrame({"run_id": ["a", None], "stage_id": [0, 1]})})
    st.append({**_runs("b"), "stages": pd.DataFrame({"run_id": ["b"], "stage_id": [2]})})
    assert C.compact(st, keep_s=0).written == 1
    assert list(st.read("stages", run_ids=["a"])["stage_id"]) == [0]
    assert list(st.read("stages", run_ids="b")["stage_id"]) == [2]
    assert sorted(st.read("stages")["stage_id"]) == [0, 1, 2]
