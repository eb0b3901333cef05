"""More of ``store.io``'s write and read rules that a mutation audit of it found no test pinning:
which files a clean may remove (only the temporary files sparkpredict writes) and after how long
by default, what the stale ingest copy rule does for a caller that reads the batches itself, and
which row groups a read by run keeps. Each test builds a small real store on disk; none starts a JVM."""
from __future__ import annotations

import os
import time

import pandas as pd
import pytest

from sparkpredict import store
from sparkpredict.store import io as store_io
from sparkpredict.store import schema as S


def _runs(run_id: str) -> dict[str, pd.DataFrame]:
    return {"runs": pd.DataFrame([{"run_id": run_id, "job": "j", "status": "succeeded", "start_ms": 1000,
                                   "updated_ms": 1}])}


def _age(*paths) -> None:
    hour_ago = time.time() - 3600
    for p in paths:
        os.utime(p, (hour_ago, hour_ago))


def test_an_old_temporary_file_sparkpredict_did_not_write_is_no_orphan(tmp_path):
    # clean removes the .tmp files of sparkpredict's own writers (".part-*" and the marker's
    # copy); a user's "notes.tmp" in the store or a table folder, or a hidden non-.tmp file, is
    # not its to delete; nor a part's temporary name outside the table folders, where none writes one
    root = tmp_path / "st"
    st = store.open(root, create=True)
    st.append({**_runs("a"), "stages": pd.DataFrame({"run_id": ["a"], "stage_id": [0]})})
    theirs = [root / "stages" / "notes.tmp", root / "stages" / ".part-mine.parquet.bak", root / "notes.tmp",
              root / f".{S.MARKER_FILE}.bak", root / ".part-0000000000001-py-0123456789ab.parquet.tmp"]
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
    # ids as new_batch_id makes them, a millisecond apart (two in one millisecond sort by chance)
    first, second, third = (st.append(_runs("app-1"), batch_id=f"{ms:013d}-{store_io.INGEST_LABEL}app-1-{ms:012x}")
                            for ms in (1, 2, 3))
    visible = st.visible_marks()
    assert st._stale_ingest_copies(visible) == {first, second}
    (root / "runs" / f"part-{first}.parquet").unlink()  # an ingest dropped it after the listing
    assert st._stale_ingest_copies(visible) == {second}
    # a reader that kept the gone copy's rows from an earlier listing reads again instead
    with pytest.raises(store_io._Changed) as e:
        st._stale_ingest_copies(visible, gone_is_change=True)
    assert e.value.args == (first,)
    assert list(st.runs()["run_id"]) == ["app-1"] and third in st.visible_marks()


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


def test_without_an_age_clean_keeps_files_ten_minutes_not_eleven(tmp_path):
    # the documented default: replaced files and a dead writer's leftovers stay 600 s for readers
    # that listed the store before; 630 s on, they are old enough
    from sparkpredict.store import compact as C

    root = tmp_path / "st"
    st = store.open(root, create=True)
    for rid in "ab":
        st.append({**_runs(rid), "stages": pd.DataFrame({"run_id": [rid], "stage_id": [0]})})
    replaced = sorted(str(p) for p in root.glob("*/part-*.parquet"))
    assert C.compact(st, keep_s=3600).written == 1
    leftover = root / "tasks" / ".part-0000000000001-py-0123456789ab.parquet.tmp"
    leftover.parent.mkdir(exist_ok=True)
    leftover.write_bytes(b"x")
    young = time.time() - 570
    for p in [*root.glob("*/*compacted*"), leftover]:
        os.utime(p, (young, young))
    assert st.replaced_files() == [] and st.orphans() == [] and st.remove_orphans() == []
    old = time.time() - 630
    for p in [*root.glob("*/*compacted*"), leftover]:
        os.utime(p, (old, old))
    assert sorted(st.replaced_files()) == replaced
    assert sorted(st.orphans()) == sorted([*replaced, str(leftover)])
    assert sorted(st.remove_orphans()) == sorted([*replaced, str(leftover)])
    assert sorted(st.read("stages")["run_id"]) == ["a", "b"]
