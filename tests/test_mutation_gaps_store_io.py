"""Behaviour of ``store.io``'s refusals, locks and fixes that a mutation audit of it found no
test pinning: which schema versions a store may carry (and the fix each refusal names), the
fix a failed write names by its cause, the remote store's compaction warning, the writer
lock's wait, and what a compacted batch holds elsewhere once its runs file went after the
listing. Each test builds a small real store on disk; none starts a JVM."""
from __future__ import annotations

import errno
import json
import logging
import os
import threading
import time

import pandas as pd
import pyarrow.fs as pafs
import pytest

from sparkpredict import store
from sparkpredict.errors import StoreError
from sparkpredict.store import compact as C
from sparkpredict.store import io as store_io
from sparkpredict.store import schema as S


def _runs(run_id: str) -> dict[str, pd.DataFrame]:
    return {"runs": pd.DataFrame([{"run_id": run_id, "job": "j", "status": "succeeded", "start_ms": 1000,
                                   "updated_ms": 1}])}


def _marked(tmp_path, version) -> str:
    root = tmp_path / "st"
    store.open(root, create=True).append(_runs("a"))
    (root / S.MARKER_FILE).write_text(json.dumps({"format": S.STORE_FORMAT, "schema_version": version}))
    return str(root)


# ---- check_version --------------------------------------------------------------------------

@pytest.mark.parametrize("version", [True, 1.0])
def test_a_schema_version_that_equals_one_but_is_no_int_is_a_damaged_marker(tmp_path, version):
    # JSON true == 1 and 1.0 == 1 in Python: neither is a version any sparkpredict wrote
    root = _marked(tmp_path, version)
    with pytest.raises(StoreError) as e:
        store.open(root)
    assert f"damaged: schema_version {version!r} is not a version" in e.value.message
    assert json.dumps({"format": S.STORE_FORMAT, "schema_version": S.SCHEMA_VERSION}) in e.value.fix


def test_once_the_schema_moves_on_an_older_store_is_refused_with_its_own_fix(tmp_path, monkeypatch):
    # no migration exists: an older store is read by the sparkpredict that wrote it, not
    # "upgrade sparkpredict" (the advice for a newer one) and not read as if current
    root = _marked(tmp_path, 1)
    monkeypatch.setattr(S, "SCHEMA_VERSION", 2)
    with pytest.raises(StoreError) as e:
        store.open(root)
    assert "schema version 1, older than the version 2 this sparkpredict reads" in e.value.message
    assert "read it with the sparkpredict that wrote it" in e.value.fix and "upgrade" not in e.value.fix
    # the current version opens and reads; the next one is newer
    (tmp_path / "st" / S.MARKER_FILE).write_text(json.dumps({"format": S.STORE_FORMAT, "schema_version": 2}))
    assert list(store.open(root).runs().run_id) == ["a"]
    (tmp_path / "st" / S.MARKER_FILE).write_text(json.dumps({"format": S.STORE_FORMAT, "schema_version": 3}))
    with pytest.raises(StoreError) as e:
        store.open(root)
    assert "schema version 3, newer than the version 2" in e.value.message and "upgrade" in e.value.fix


# ---- _write_fix -----------------------------------------------------------------------------

def _failing_append(tmp_path, monkeypatch, code: int) -> StoreError:
    st = store.open(tmp_path / "st", create=True)
    st.append(_runs("kept"))

    def fails(*a, **k):
        raise OSError(code, "as the disk said")

    monkeypatch.setattr(store_io.pq, "write_table", fails)
    with pytest.raises(StoreError) as e:
        st.append(_runs("lost"))
    monkeypatch.undo()
    assert list(st.runs().run_id) == ["kept"]
    return e.value


def test_a_full_quota_says_to_free_space_as_a_full_disk_does(tmp_path, monkeypatch):
    e = _failing_append(tmp_path, monkeypatch, errno.EDQUOT)
    assert e.fix.startswith("free space on the store's disk (or raise the quota)")
    assert "earlier runs are intact" in e.fix


def test_a_batch_whose_files_went_while_written_says_to_run_again(tmp_path, monkeypatch):
    # ENOENT past the making of the folder: a `store clean --older-than 0` beside the writer,
    # not a folder to choose anew
    e = _failing_append(tmp_path, monkeypatch, errno.ENOENT)
    assert e.fix.startswith("run the command again: the batch's files went while they were written")
    assert "choose a writable folder" not in e.fix


def test_a_permission_error_names_a_writable_folder_locally_and_the_bucket_remotely(tmp_path):
    denied = OSError(errno.EACCES, "Permission denied")
    local = store_io.Store(path=str(tmp_path), fs=pafs.LocalFileSystem(), root=str(tmp_path))
    assert local._write_fix(denied) == "choose a writable folder, or fix its permissions"
    # any file system but the local one is remote here (s3://, hdfs://): no folder to chmod
    remote = store_io.Store(path="s3://b/st", fs=pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem()),
                            root="st")
    assert remote._write_fix(denied).startswith("create the bucket first")
    assert remote._write_fix(OSError(errno.ENOENT, "gone")).startswith("create the bucket first")
    assert remote._write_fix(OSError(errno.ENOSPC, "full")).startswith("free space")


# ---- auto_compact ---------------------------------------------------------------------------

def test_a_remote_store_not_yet_due_is_left_without_a_warning(tmp_path, caplog):
    # the warning is for a store whose reads got slow: one batch short of due says nothing
    st = store.open(tmp_path / "st", create=True)
    for i in range(3):
        st.append(_runs(f"r{i}"))

    class Remote(pafs.SubTreeFileSystem):  # any file system but the local one: no writer lock
        pass

    remote = store_io.Store(path=st.path, fs=Remote(str(tmp_path), pafs.LocalFileSystem()), root="st")
    with caplog.at_level(logging.WARNING, logger="sparkpredict.store.compact"):
        assert C.auto_compact(remote, min_batches=4) is None
        assert caplog.records == []
        assert C.auto_compact(remote, min_batches=3) is None
    (msg,) = [r.getMessage() for r in caplog.records]
    assert "3 small batches since its last compaction" in msg
    assert len(st.committed_batches()) == 3


def test_a_failed_auto_compaction_names_its_fix_once(tmp_path, caplog):
    # the warning says the error's message and then its fix: not the error's text (which
    # carries the fix already) followed by the fix again
    st = store.open(tmp_path / "st", create=True)
    for i in range(3):
        st.append({**_runs(f"r{i}"), "stages": pd.DataFrame({"run_id": [f"r{i}"], "stage_id": [0]})})
    sorted((tmp_path / "st" / "stages").glob("*.parquet"))[1].write_bytes(b"not parquet")
    with caplog.at_level(logging.WARNING, logger="sparkpredict.store.compact"):
        assert C.auto_compact(st, min_batches=2) is None
    (msg,) = [r.getMessage() for r in caplog.records if "compacting" in r.getMessage()]
    assert "unreadable Parquet file" in msg and msg.count("fix:") == 1, msg


# ---- writer_lock ----------------------------------------------------------------------------

def test_a_writer_that_waits_for_the_lock_says_so_once(tmp_path, caplog):
    st = store.open(tmp_path / "st", create=True)
    done = threading.Event()

    def second():
        with st.writer_lock("edit"):
            done.set()

    with caplog.at_level(logging.WARNING, logger="sparkpredict.store.io"):
        with st.writer_lock("ingest"):
            t = threading.Thread(target=second)
            t.start()
            # until it says it waits (a loaded machine may start the thread late: a fixed sleep
            # could release the lock first, and the second would then not wait at all)
            deadline = time.monotonic() + 30
            while not caplog.records and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.2)
            assert not done.is_set()  # it waits while the first holds the lock
        t.join(10)
    assert done.is_set()
    said = [r.getMessage() for r in caplog.records]
    assert said == [f"store {st.path}: edit waiting for another ingest or edit of it to finish"], said


def test_a_writer_alone_says_nothing_of_waiting(tmp_path, caplog):
    st = store.open(tmp_path / "st", create=True)
    with caplog.at_level(logging.WARNING, logger="sparkpredict.store.io"), st.writer_lock("ingest"):
        pass
    assert caplog.records == []


# ---- held -----------------------------------------------------------------------------------

def test_a_compacted_batch_whose_runs_file_went_after_the_listing_holds_nothing_elsewhere(tmp_path):
    # a later compaction removed it between the listing and the footer's read: its rows are
    # in that later batch, not a TypeError from a footer that is not there
    st = store.open(tmp_path / "st", create=True)
    for i in range(3):
        st.append(_runs(f"r{i}"))
    assert C.compact(st, keep_s=0).merged == 3
    (v,) = [b for b in st._listing(S.COMMIT_TABLE) if store_io.is_compacted(b)]
    path = st._listing(S.COMMIT_TABLE)[v].path
    (tmp_path / "st" / "runs" / path.rsplit("/", 1)[-1]).unlink()
    marks = {v: pafs.FileInfo(path, pafs.FileType.File)}  # as listed before it went (no cached footer)
    h = st.held("stages", marks, {}, {v: marks[v].path})
    assert h.files == {} and h.links == set()


def test_an_older_compaction_whose_runs_file_went_after_the_listing_is_no_link(tmp_path):
    # c2 (an older compaction) replaced c1 (another): c1's runs file, which led to the files
    # of a and b, went between the listing and its footer's read; nothing is followed through
    # it, and nothing raises (a TypeError on the footer that was not there)
    from test_store_older_compact import NEW, _batches, _old_clean, _old_compact

    st = _batches(tmp_path, 3)
    a, b, d = sorted(st.committed_batches())
    c1 = _old_compact(st, [a, b])
    _old_clean(st, [a, b])
    c2 = _old_compact(st, [c1, d])
    marks = st._listing(S.COMMIT_TABLE)
    listing = st._listing(NEW)
    assert st.held(NEW, marks, listing).links == {c1}  # the link, while its runs file lasts
    path = marks[c1].path
    os.remove(path)
    marks[c1] = pafs.FileInfo(path, pafs.FileType.File)  # as listed before it went (no cached footer)
    h = st.held(NEW, marks, listing)
    assert h.links == set() and h.files == {c2: [d]}
