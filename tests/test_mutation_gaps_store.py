"""Behaviour of the store's Python side (``store.io``, ``store.compact``, ``store.edit``) that a
mutation audit of those modules found no test pinning: which row wins, what a batch holds, and
the refusals a user's mistake meets. Each test builds a small real store on disk; none starts
a JVM."""
from __future__ import annotations

import time

import pandas as pd
import pytest

from sparkpredict import store
from sparkpredict.errors import InputError
from sparkpredict.units import format_time


def _runs(*rows: dict) -> dict[str, pd.DataFrame]:
    base = {"job": "j", "status": "succeeded", "start_ms": 1000, "updated_ms": 1}
    return {"runs": pd.DataFrame([{**base, **r} for r in rows])}


# ---- store.edit ---------------------------------------------------------------------------

def test_an_edit_row_is_stamped_with_the_time_of_the_edit(tmp_path):
    # later than every earlier row of the run, and no later than now: a stamp far in the future
    # would win over the rows the run's writers (or a later edit's clock) record afterwards
    st = store.open(tmp_path / "st", create=True)
    st.append(_runs({"run_id": "a", "updated_ms": 5}))
    before = int(time.time() * 1000)
    new = store.edit_runs(st, ["a"], excluded=True)
    after = int(time.time() * 1000)
    assert before <= int(new["updated_ms"].iloc[0]) <= after


@pytest.mark.parametrize("bad", ["   ", 5, None])
def test_a_blank_or_non_text_run_id_is_refused_as_such(tmp_path, bad):
    st = store.open(tmp_path / "st", create=True)
    st.append(_runs({"run_id": "a"}))
    with pytest.raises(InputError) as e:
        store.edit_runs(st, ["a", bad], excluded=True)
    assert f"run id {bad!r} is not a run id" in e.value.message
    assert len(st.read("runs", all_rows=True)) == 1


def test_including_a_run_excluded_from_its_first_row_is_refused(tmp_path):
    # its only row says excluded: no status to restore, said as such, not an IndexError
    st = store.open(tmp_path / "st", create=True)
    st.append(_runs({"run_id": "a", "status": "excluded"}))
    with pytest.raises(InputError) as e:
        store.edit_runs(st, ["a"], excluded=False)
    assert "excluded from its first row on" in e.value.message
    assert len(st.read("runs", all_rows=True)) == 1


def test_include_restores_the_latest_status_before_the_exclusion_by_time_not_batch_order(tmp_path):
    st = store.open(tmp_path / "st", create=True)
    st.append(_runs({"run_id": "a", "status": "failed", "updated_ms": 30}))
    st.append(_runs({"run_id": "a", "status": "succeeded", "updated_ms": 20}))  # older, written later
    st.append(_runs({"run_id": "a", "status": "excluded", "updated_ms": 40}))
    new = store.edit_runs(st, ["a"], excluded=False)
    assert list(new["status"]) == ["failed"]


def test_a_time_just_past_a_start_ahead_of_the_clock_is_told_to_the_ms(tmp_path):
    # the job's newest start lies ahead of this clock; --before 1 ms past it is in the future,
    # and said to the millisecond (seconds would print the start's own time)
    newest = (int(time.time()) + 3600) * 1000 + 499  # an hour ahead, mid-second
    st = store.open(tmp_path / "st", create=True)
    st.append(_runs({"run_id": "a", "start_ms": newest}))
    with pytest.raises(InputError) as e:
        store.edit_runs_by_time(st, "j", before=format_time(newest + 1, ms_precision=True))
    assert ".500Z is in the future" in e.value.message, e.value.message
    assert len(st.read("runs", all_rows=True)) == 1


# ---- store.compact ------------------------------------------------------------------------

def test_a_target_of_one_byte_is_a_size_and_merges_nothing(tmp_path):
    # the smallest positive size is a size: every batch is at least half of it, so none merges
    from sparkpredict.store import compact as C

    st = store.open(tmp_path / "st", create=True)
    st.append(_runs({"run_id": "a"}))
    st.append(_runs({"run_id": "b"}))
    r = C.compact(st, target_bytes=1)
    assert (r.batches_before, r.merged, r.written) == (2, 0, 0)
    assert len(st.committed_batches()) == 2


@pytest.mark.parametrize("keep", [True, "10m", float("nan")])
def test_a_keep_time_that_is_no_number_of_seconds_is_refused(tmp_path, keep):
    # True is no time (it read as 1 s), text is refused as such (not a TypeError from >=)
    from sparkpredict.store import compact as C

    st = store.open(tmp_path / "st", create=True)
    st.append(_runs({"run_id": "a"}))
    st.append(_runs({"run_id": "b"}))
    with pytest.raises(InputError, match="keep time"):
        C.compact(st, keep_s=keep)
    assert len(st.committed_batches()) == 2


def test_pending_counts_only_the_batches_after_the_one_last_examined(tmp_path):
    # auto_compact passes the newest batch its last look saw: that one is not counted again
    from sparkpredict.store import compact as C

    st = store.open(tmp_path / "st", create=True)
    ids = [st.append(_runs({"run_id": r})) for r in "abc"]
    assert C.pending(st) == 3
    assert C.pending(st, after=ids[1]) == 1
    assert C.pending(st, after=ids[2]) == 0


def test_groups_leave_batches_of_half_the_target_alone_and_fill_up_to_the_target():
    from sparkpredict.store.compact import _groups

    size = {"a": 3, "b": 3, "c": 3, "d": 2, "e": 3, "big": 4, "f": 1, "g": 1}
    order = ["a", "b", "c", "d", "e", "big", "f", "g"]
    # a group closes past the target, not at it (c+d+e is 8 bytes of 8); a batch of half the
    # target or more is left alone and ends the group before it
    assert _groups(order, set(), size, 8) == [["a", "b"], ["c", "d", "e"], ["f", "g"]]
    # a batch to fold again (an older compaction's) is merged whatever its size, alone too
    assert _groups(order, set(), size, 8, refold={"big"}) == [["a", "b"], ["c", "d", "e"], ["big", "f", "g"]]
    assert _groups(["big"], set(), size, 8, refold={"big"}) == [["big"]]
    assert _groups(["big"], set(), size, 8) == []


def test_a_compacted_batch_sorts_its_rows_by_run_but_keeps_runs_rows_in_batch_order(tmp_path):
    # stage rows sorted by run (a read of a few runs skips the others' row groups); runs rows
    # as written, so that all_rows still lists each run's rows in the order they were written
    from sparkpredict.store import compact as C

    st = store.open(tmp_path / "st", create=True)
    for rid, upd in (("b", 1), ("a", 1), ("b", 2)):
        st.append({**_runs({"run_id": rid, "updated_ms": upd}),
                   "stages": pd.DataFrame({"run_id": [rid], "stage_id": [upd]})})
    r = C.compact(st, keep_s=0)
    assert (r.merged, r.written) == (3, 1)
    [batch] = st.committed_batches()
    import pyarrow.parquet as pq

    stages = pq.read_table(tmp_path / "st" / "stages" / f"part-{batch}.parquet").to_pydict()
    assert stages["run_id"] == ["a", "b", "b"] and stages["stage_id"] == [1, 1, 2]
    runs = pq.read_table(tmp_path / "st" / "runs" / f"part-{batch}.parquet").to_pydict()
    assert list(zip(runs["run_id"], runs["updated_ms"])) == [("b", 1), ("a", 1), ("b", 2)]


# ---- store.io -----------------------------------------------------------------------------

def test_a_batch_that_fails_midway_leaves_no_file_and_no_row(tmp_path, monkeypatch):
    # its stages file written, its runs file (the commit mark) not: nothing of it stays, not
    # even the temporary stages file, and the store's earlier rows read as before
    import errno

    from sparkpredict.errors import StoreError
    from sparkpredict.store import io as store_io

    root = tmp_path / "st"
    st = store.open(root, create=True)
    kept = {**_runs({"run_id": "kept"}), "stages": pd.DataFrame({"run_id": ["kept"], "stage_id": [0]})}
    st.append(kept)
    files = sorted(p.relative_to(root) for p in root.rglob("*"))
    real = store_io.pq.write_table

    def full_at_the_mark(table, where, *a, **k):
        if "/runs/" in str(where):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(table, where, *a, **k)

    monkeypatch.setattr(store_io.pq, "write_table", full_at_the_mark)
    lost = {**_runs({"run_id": "lost"}), "stages": pd.DataFrame({"run_id": ["lost"], "stage_id": [0]})}
    with pytest.raises(StoreError, match="cannot write to store"):
        st.append(lost)
    monkeypatch.undo()
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == files
    assert list(st.read("stages")["run_id"]) == ["kept"] and list(st.runs()["run_id"]) == ["kept"]


def test_a_committed_batch_that_lost_a_file_is_named_not_retried_as_a_change(tmp_path, monkeypatch):
    # its runs file (the commit mark) is there, its stages file is gone: that is damage to
    # restore, named with its file, not "kept changing" after ten reads of a store at rest
    from sparkpredict.errors import StoreError

    root = tmp_path / "st"
    st = store.open(root, create=True)
    b = st.append({**_runs({"run_id": "a"}), "stages": pd.DataFrame({"run_id": ["a"], "stage_id": [0]})})
    st.append({**_runs({"run_id": "z"}), "stages": pd.DataFrame({"run_id": ["z"], "stage_id": [0]})})
    (root / "stages" / f"part-{b}.parquet").unlink()

    real = store.io.Store._listing

    def listed_before_the_loss(self, table):  # the file was there when the read listed the table
        out = real(self, table)
        if table == "stages":
            import pyarrow.fs as pafs

            out[b] = pafs.FileInfo(f"{root}/stages/part-{b}.parquet", pafs.FileType.File)
        return out

    monkeypatch.setattr(store.io.Store, "_listing", listed_before_the_loss)
    with pytest.raises(StoreError) as e:
        st.read("stages")
    assert f"part-{b}.parquet" in e.value.message and "of a committed batch is missing" in e.value.message
    assert "restore it from a backup" in e.value.fix


def test_a_damaged_ingest_copy_is_named_as_damaged_not_as_a_store_that_kept_changing(tmp_path):
    # two batches of one ingest label, one's runs file damaged: the read names that file
    from sparkpredict.errors import StoreError
    from sparkpredict.store import io as store_io

    root = tmp_path / "st"
    st = store.open(root, create=True)
    st.append(_runs({"run_id": "r1", "updated_ms": 1}), batch_id=store_io.new_batch_id("ingest-r1"))
    time.sleep(0.002)
    bad = st.append(_runs({"run_id": "r1", "updated_ms": 2}), batch_id=store_io.new_batch_id("ingest-r1"))
    (root / "runs" / f"part-{bad}.parquet").write_bytes(b"not parquet")
    with pytest.raises(StoreError) as e:
        st.read("runs")
    assert "unreadable Parquet file" in e.value.message and f"part-{bad}.parquet" in e.value.message


def test_dropping_a_batch_removes_its_file_of_every_table_and_no_other(tmp_path):
    root = tmp_path / "st"
    st = store.open(root, create=True)
    two = {"stages": pd.DataFrame({"run_id": ["x"], "stage_id": [0]}),
           "executors": pd.DataFrame({"run_id": ["x"], "executor_id": ["1"]})}
    keep = st.append({**_runs({"run_id": "k"}), **{t: d.assign(run_id="k") for t, d in two.items()}})
    gone = st.append({**_runs({"run_id": "x"}), **two})
    files = sorted(str(p) for p in root.rglob(f"part-{gone}.parquet"))
    removed = st.drop_batch(gone)
    assert sorted(removed) == files
    assert len(removed) == 3 and removed[0].endswith(f"runs/part-{gone}.parquet")  # the mark first
    assert not list(root.rglob(f"*{gone}*")) and len(list(root.rglob(f"part-{keep}.parquet"))) == 3
    assert st.orphans(min_age_s=0) == []
    assert list(st.runs()["run_id"]) == ["k"]


def test_a_compaction_of_a_compacted_batch_is_numbered_on_and_sorts_after_it(tmp_path):
    from sparkpredict.store import io as store_io

    first = store_io.compacted_id("1796000000000-py-0123456789ab")
    assert first.startswith("1796000000000-py-0123456789ab-compacted-000001-")
    ids = [first]
    for _ in range(20):  # the random suffix never decides the order
        ids.append(store_io.compacted_id(ids[-1]))
    assert [i.split("-compacted-")[1][:6] for i in ids] == [f"{n:06d}" for n in range(1, 22)]
    assert ids == sorted(ids) and all(i.startswith("1796000000000-py-0123456789ab-compacted-") for i in ids)
    assert ids[-1] < "1796000000001"  # before every later batch


def test_a_row_without_an_update_time_never_wins_over_one_with_it(tmp_path):
    # a null updated_ms is older than every other, in whichever batch it lies
    st = store.open(tmp_path / "st", create=True)
    st.append(_runs({"run_id": "a", "status": "failed", "updated_ms": 5}))
    st.append(_runs({"run_id": "a", "status": "succeeded", "updated_ms": None}))
    st.append(_runs({"run_id": "b", "status": "succeeded", "updated_ms": None}))
    st.append(_runs({"run_id": "b", "status": "failed", "updated_ms": 5}))
    runs = st.runs().set_index("run_id")
    assert runs.loc["a", "status"] == runs.loc["b", "status"] == "failed"
    assert len(st.read("runs", all_rows=True)) == 4


def test_runs_read_in_order_of_their_start_not_of_their_batches(tmp_path):
    st = store.open(tmp_path / "st", create=True)
    st.append(_runs({"run_id": "late", "start_ms": 3000}))
    st.append(_runs({"run_id": "early", "start_ms": 1000}))
    st.append(_runs({"run_id": "mid", "start_ms": 2000}))
    st.append(_runs({"run_id": "late", "start_ms": 3000, "updated_ms": 9}))
    assert list(st.runs()["run_id"]) == ["early", "mid", "late"]


def test_of_two_rows_of_one_update_time_the_later_batch_wins(tmp_path):
    st = store.open(tmp_path / "st", create=True)
    for status in ("failed", "succeeded", "excluded"):
        st.append(_runs({"run_id": "a", "status": status, "updated_ms": 7}))
    assert list(st.runs()["status"]) == ["excluded"]
    assert list(st.read("runs", all_rows=True)["status"]) == ["failed", "succeeded", "excluded"]


def test_a_marker_another_writer_made_meanwhile_is_kept_not_replaced(tmp_path):
    # the writer lock is an flock on the marker: replacing it would let a second writer lock
    # the new file while the first holds the old one
    from sparkpredict.store import schema as S

    root = tmp_path / "st"
    st = store.open(root, create=True)
    marker = root / S.MARKER_FILE
    before = (marker.stat().st_ino, marker.read_bytes())
    st._put_marker(str(marker), b'{"format": "theirs"}')
    assert (marker.stat().st_ino, marker.read_bytes()) == before
    assert sorted(p.name for p in root.iterdir()) == [S.MARKER_FILE]  # no temporary copy left


def test_a_compacted_file_of_many_row_groups_reads_whole_and_by_run(tmp_path, monkeypatch):
    from sparkpredict.store import compact as C

    monkeypatch.setattr(C, "ROW_GROUP_ROWS", 1)
    st = store.open(tmp_path / "st", create=True)
    for rid in "cab":
        st.append({**_runs({"run_id": rid}), "stages": pd.DataFrame({"run_id": [rid] * 2, "stage_id": [0, 1]})})
    assert C.compact(st, keep_s=0).written == 1
    assert sorted(st.read("stages")["run_id"]) == ["a", "a", "b", "b", "c", "c"]
    assert list(st.read("stages", run_ids=["b", "zz"])["run_id"]) == ["b", "b"]
    assert list(st.read("stages", run_ids="c")["stage_id"]) == [0, 1]


def test_a_new_store_in_a_folder_holding_only_another_writers_temporary_file_is_made(tmp_path):
    # hidden names are other writers' temporary files (the listener writes its marker so):
    # the folder is still empty for a new store
    from sparkpredict.store import schema as S

    root = tmp_path / "st"
    root.mkdir()
    (root / f".{S.MARKER_FILE}.0123abcd.tmp").write_text("{}")
    st = store.open(root, create=True)
    st.append(_runs({"run_id": "a"}))
    assert list(store.open(root).runs()["run_id"]) == ["a"]
