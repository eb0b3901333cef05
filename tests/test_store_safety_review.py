"""Store crash-safety review: a clean beside a writer, a crash between an ingest's new copy and
its removal of the old, files of other tools, a disk that fills, and durable commits."""
from __future__ import annotations

import errno
import json
import os
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparkpredict import store
from sparkpredict.capture.eventlog_ingest import ingest_event_logs
from sparkpredict.cli import main
from sparkpredict.errors import StoreError
from sparkpredict.store import io as store_io
from sparkpredict.store import schema as S

SPARKLENS = Path(__file__).parent / "data" / "eventlogs" / "sparklens_local-1532512550423.json"


def _batch(run_id: str, n_stages: int = 2) -> dict[str, pd.DataFrame]:
    return {"runs": pd.DataFrame({"run_id": [run_id], "job": ["j"], "status": ["succeeded"],
                                  "start_ms": [1000], "updated_ms": [1]}),
            "stages": pd.DataFrame({"run_id": [run_id] * n_stages, "stage_id": range(n_stages)})}


def test_a_clean_keeps_a_batch_committed_while_it_looks(tmp_path, monkeypatch):
    """The parts are listed before the commit marks: in the other order a batch committed in
    between had its parts taken for a crashed writer's, and `store clean --older-than 0` removed
    them from under its commit mark (its stages read as none, for good)."""
    st = store.open(tmp_path / "st", create=True)
    st.append(_batch("first"))
    marks = store_io.Store.committed_batches
    landed = []

    def commit_meanwhile(self):
        seen = marks(self)
        if not landed:
            landed.append(self.append(_batch("second", n_stages=3)))
        return seen

    monkeypatch.setattr(store_io.Store, "committed_batches", commit_meanwhile)
    removed = st.remove_orphans(0)
    monkeypatch.undo()
    assert removed == [] and landed
    assert sorted(st.stages().groupby("run_id").size().items()) == [("first", 2), ("second", 3)]


def test_a_clean_refuses_while_two_compactions_overlap_and_removes_nothing(tmp_path, capsys):
    st = store.open(tmp_path / "st", create=True)
    b = st.append(_batch("a"))
    for _ in range(2):  # two compactions that each replaced b (they ran at once on a remote store)
        st.append(_batch("a"), batch_id=store_io.compacted_id(b), replaces=[b])
    files = sorted(p for p in (tmp_path / "st").rglob("*") if p.is_file())
    assert main(["store", "clean", "--older-than", "0", "--store", str(tmp_path / "st")]) == 2
    assert "run `sparkpredict store compact` one at a time" in capsys.readouterr().err
    assert sorted(p for p in (tmp_path / "st").rglob("*") if p.is_file()) == files


def test_a_clean_removes_a_marker_copy_a_dead_writer_left(tmp_path, capsys):
    st = store.open(tmp_path / "st", create=True)
    st.append(_batch("a"))
    left = tmp_path / "st" / f".{S.MARKER_FILE}.0123abcd.tmp"
    left.write_text("{}")
    old = time.time() - 3600
    os.utime(left, (old, old))
    assert main(["store", "clean", "--store", str(tmp_path / "st")]) == 0
    assert str(left) in capsys.readouterr().out and not left.exists()
    assert list(store.open(tmp_path / "st").runs().run_id) == ["a"]


def test_a_stop_between_a_fuller_copy_and_the_old_ones_removal_counts_no_task_twice(tmp_path, monkeypatch):
    cut = tmp_path / "logs" / SPARKLENS.name
    cut.parent.mkdir()
    cut.write_text("".join(line for line in SPARKLENS.read_text().splitlines(keepends=True)
                           if "SparkListenerApplicationEnd" not in line))
    st_path = tmp_path / "st"
    assert ingest_event_logs([cut], st_path).files_ingested == 1
    cut.write_text(SPARKLENS.read_text())  # the application ended: its log is whole now

    def stop(self, batch_id):
        raise KeyboardInterrupt  # killed after the new copy's commit, before the old one went

    monkeypatch.setattr(store_io.Store, "drop_batch", stop)
    with pytest.raises(KeyboardInterrupt):
        ingest_event_logs([cut], st_path, compact=False)
    monkeypatch.undo()
    st = store.open(st_path)
    assert len(st.visible_marks()) == 2  # both copies are committed
    runs, tasks = st.runs(), st.tasks()
    assert list(runs.status) == ["succeeded"] and len(tasks) == 8 == runs.num_tasks.iloc[0]
    assert not tasks.duplicated(["task_id", "attempt"]).any() and len(st.stages()) == 2
    # the next ingest keeps the latest copy and drops the other
    ingest_event_logs([cut], st_path, compact=False)
    assert len(store.open(st_path).visible_marks()) == 1 and len(store.open(st_path).tasks()) == 8


def test_a_part_file_of_another_tools_types_is_named_not_a_traceback(tmp_path, capsys):
    st = store.open(tmp_path / "st", create=True)
    b = st.append({**_batch("a"), "tasks": pd.DataFrame({"run_id": ["a"], "stage_id": [0], "task_id": [1]})})
    st.append({**_batch("b"), "tasks": pd.DataFrame({"run_id": ["b"], "stage_id": [0], "task_id": [2]})})
    part = tmp_path / "st" / "tasks" / f"part-{b}.parquet"
    pq.write_table(pa.table({"run_id": ["a"], "stage_id": pa.array([0], pa.int32()), "task_id": ["t-one"]}), part)
    with pytest.raises(StoreError) as e:
        st.tasks()
    assert str(part) in str(e.value) and "a column of a type sparkpredict does not write" in str(e.value)
    assert f"part-{b}.parquet" in e.value.fix
    assert main(["store", "compact", "--store", str(tmp_path / "st")]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "Traceback" not in err and str(part) in err
    # a type that casts cleanly (a task id written as a whole number of another width) reads
    pq.write_table(pa.table({"run_id": ["a"], "stage_id": pa.array([0], pa.int16()), "task_id": pa.array([7], pa.int32())}), part)
    assert st.tasks().task_id.tolist() == [7, 2]


def test_summary_of_a_run_without_a_start(tmp_path, capsys):
    st = store.open(tmp_path / "st", create=True)
    st.append({"runs": pd.DataFrame({"run_id": ["r"], "job": ["j"], "status": ["succeeded"]})})
    assert main(["store", "summary", "--store", str(tmp_path / "st")]) == 0
    assert "1 run" in capsys.readouterr().out


def test_a_full_disk_says_to_free_space_and_commits_nothing(tmp_path, monkeypatch):
    st = store.open(tmp_path / "st", create=True)
    st.append(_batch("kept"))

    def full(*a, **k):  # no disk fills on demand here: pyarrow's error as a full disk raises it
        raise OSError(errno.ENOSPC, "Error writing bytes to file. Detail: [errno 28] No space left on device")

    monkeypatch.setattr(store_io.pq, "write_table", full)
    with pytest.raises(StoreError) as e:
        st.append(_batch("lost"))
    assert "free space on the store's disk" in e.value.fix and "earlier runs are intact" in e.value.fix
    monkeypatch.undo()
    assert list(st.runs().run_id) == ["kept"]
    assert not [p for p in (tmp_path / "st").rglob("*.tmp")]


def test_a_commit_is_flushed_to_disk_before_and_after_its_renames(tmp_path, monkeypatch):
    st = store.open(tmp_path / "st", create=True)
    root = tmp_path / "st"
    synced = []  # (path synced, whether the commit mark was in place then)
    real_fsync = os.fsync
    marks = []

    def fsync(fd):
        path = os.readlink(f"/proc/self/fd/{fd}")  # Linux, as the CI
        synced.append((path, any((root / "runs" / f"part-{b}.parquet").exists() for b in marks)))
        return real_fsync(fd)

    monkeypatch.setattr(store_io.os, "fsync", fsync)
    real_new = store_io.new_batch_id
    monkeypatch.setattr(store_io, "new_batch_id", lambda *a: marks.append(real_new(*a)) or marks[-1])
    b = st.append(_batch("a"))
    assert marks == [b]
    seen = dict(synced)
    # each file's data before its rename, the parts' folder before the commit mark is renamed
    # into place, and the runs folder after it
    assert seen[f"{root}/stages/.part-{b}.parquet.tmp"] is False
    assert seen[f"{root}/runs/.part-{b}.parquet.tmp"] is False
    assert seen[f"{root}/stages"] is False and seen[f"{root}/runs"] is True
    assert list(store.open(tmp_path / "st").runs().run_id) == ["a"]


def test_an_unparseable_marker_names_what_to_restore_it_as(tmp_path):
    st = store.open(tmp_path / "st", create=True)
    st.append(_batch("a"))
    (tmp_path / "st" / S.MARKER_FILE).write_text("{not json")
    with pytest.raises(StoreError) as e:
        store.open(tmp_path / "st")
    assert "is corrupt" in str(e.value)
    assert json.dumps({"format": S.STORE_FORMAT, "schema_version": S.SCHEMA_VERSION}) in e.value.fix
