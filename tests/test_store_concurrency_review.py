"""Fixes from a review of one store under concurrent writers and readers (ingests, compactions,
edits, retrains, a listener) and writers killed mid-write."""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pyarrow as pa
import pytest

from sparkpredict import retrain as RT
from sparkpredict import store
from sparkpredict.capture.eventlog_ingest import ingest_event_logs
from sparkpredict.store import io as sio

LOGS = Path(__file__).parent / "data" / "eventlogs"
PLAIN = LOGS / "rp_nosql_eventlog.json"  # 4 tasks, 1 stage
Q72 = LOGS / "nds_q72_dataproc_2_2.zstd"


@pytest.mark.spark
def test_the_spark_retrain_reads_one_copy_of_a_run_ingest_stored_twice(spark_app, tmp_path):
    """Ingest stopped between committing a fuller copy and removing the earlier one leaves two;
    Store.read takes the latest, the Spark retrain's reader took both (6 stages for 4)."""
    path = tmp_path / "st"
    assert ingest_event_logs(PLAIN, path).files_ingested == 1
    (first,) = [f.name[5:-8] for f in (path / "runs").glob("part-*.parquet")]
    again = sio.new_batch_id("ingest-" + first.split("-ingest-", 1)[1].rsplit("-", 1)[0])
    for table in ("stages", "tasks", "executors", "runs"):  # the runs file (the commit) last
        for f in (path / table).glob(f"part-{first}.parquet"):
            shutil.copy(f, f.with_name(f"part-{again}.parquet"))
    st = store.open(path)
    assert len(st.visible_marks()) == 2 and len(st.read("tasks")) == 4
    with spark_app(tmp_path / "listener-store", job="retrain-test", master="local[1]") as spark:
        assert RT.read_committed_spark(spark, st, "tasks").count() == 4
        assert RT.read_committed_spark(spark, st, "stages").count() == 1
        assert RT.read_runs_spark(spark, st).count() == 1


def test_a_listener_that_takes_over_the_run_while_ingest_replaces_its_cut_copy_keeps_the_run(tmp_path, monkeypatch):
    """The listener's first write (its batch, then the removal of ingested copies) landed after
    ingest chose to replace its cut copy and before the fuller copy committed: the fuller copy
    stayed beside the listener's, and readers saw the run's tasks from both."""
    path = tmp_path / "st"
    cut = tmp_path / "cut" / "trunc.zstd"
    cut.parent.mkdir()
    cut.write_bytes(Q72.read_bytes()[:600_000])
    (f,) = ingest_event_logs(cut, path, compact=False).files
    rid = f.run_id
    assert f.status == "incomplete"
    original = sio.Store.append

    def listener_first_write(self):
        # what the JVM listener does at its first job end: a batch labelled with the run id
        # (running, a later updated_ms), then the removal of ingested copies of the run
        t = {n: self.read(n, form="arrow", run_ids=[rid]) for n in ("runs", "stages", "tasks", "executors")}
        runs = t["runs"]
        for col, value, typ in (("status", "running", pa.string()), ("source", "listener", pa.string()),
                                ("updated_ms", int(time.time() * 1000) + 5000, pa.int64())):
            runs = runs.set_column(runs.schema.get_field_index(col), col, pa.array([value], typ))
        t["runs"] = runs
        original(self, t, batch_id=sio.new_batch_id(rid))
        for b in list(self.visible_marks()):
            if sio.batch_label(b) == "ingest-" + rid:
                self.drop_batch(b)

    def append(self, tables, batch_id=None, **kw):
        if batch_id and sio.batch_label(batch_id) == "ingest-" + rid and not getattr(append, "done", False):
            append.done = True
            listener_first_write(self)
        return original(self, tables, batch_id=batch_id, **kw)

    monkeypatch.setattr(sio.Store, "append", append)
    listened = len(store.open(path).read("tasks", run_ids=[rid]))
    longer = tmp_path / "cut" / "trunc.zstd"  # the same log, later: still being written, longer
    longer.write_bytes(Q72.read_bytes()[:900_000])
    (f,) = ingest_event_logs(longer, path, compact=False).files
    monkeypatch.undo()
    assert f.outcome == "exists" and "being recorded into this store by the sparkpredict listener" in f.warnings[0]
    st = store.open(path)
    assert [sio.batch_label(b) for b in st.visible_marks()] == [rid]
    assert len(st.read("tasks", run_ids=[rid])) == listened  # the listener's rows only


def test_a_log_spark_finished_or_grew_while_ingest_waited_for_the_lock_is_read_as_it_is_now(tmp_path):
    """The logs were listed before the writer lock: a log Spark renamed from X.inprogress to X
    meanwhile failed ("No such file", exit 1), and a rolling folder listed before its events_1
    existed failed as "without events_* files"."""
    from sparkpredict.capture.eventlog_files import find_logs
    from sparkpredict.capture.eventlog_ingest import _ingest_into

    logs = tmp_path / "logs"
    logs.mkdir()
    live = logs / "local-1600000000099.inprogress"
    shutil.copy(PLAIN, live)
    rolling = logs / "eventlog_v2_local-1600000000100"
    rolling.mkdir()
    (rolling / "appstatus_local-1600000000100.inprogress").write_bytes(b"")
    sources = find_logs([logs])
    assert sorted(len(s.files) for s in sources) == [0, 1]
    # what happens while ingest waits: the application ends, the other starts writing
    live.rename(logs / "local-1600000000099")
    shutil.copy(PLAIN, rolling / "events_1_local-1600000000100")
    st = store.open(tmp_path / "st", create=True)
    report = _ingest_into(st, sources, [], "warn", None)
    # both copies of one application (PLAIN): the rolling one, still in progress, is stored and
    # then replaced by the finished file's whole run, or the reverse order skips it
    assert "failed" not in [f.outcome for f in report.files], [(f.path, f.error) for f in report.files]
    assert sorted(os.path.basename(f.path) for f in report.files) == [
        "eventlog_v2_local-1600000000100", "local-1600000000099"]
    assert len(st.runs()) == 1 and len(st.read("tasks")) == 4


def test_a_read_beside_an_ingest_that_keeps_replacing_copies_finishes_reading_each_file_once(tmp_path, monkeypatch):
    """A read started over from every file each time a batch went while it read, 4 times at
    most: a 3,040-batch store beside an ingest replacing a copy every few seconds read 'kept
    changing' in 3 of 14 reads, and never finished at 3 replacements a second. A batch's files
    never change, so what was read of a batch still visible is kept."""
    import pandas as pd

    from sparkpredict.store import io as sio

    st = store.open(tmp_path / "st", create=True)

    def rows(i: int, at: int) -> dict:
        return {"runs": pd.DataFrame([{"run_id": f"r{i}", "job": "j", "status": "succeeded",
                                       "start_ms": 1, "updated_ms": at}]),
                "tasks": pd.DataFrame([{"run_id": f"r{i}", "stage_id": 0, "task_id": t} for t in range(3)])}

    batches = [st.append(rows(i, 1)) for i in range(20)]
    real = sio.Store._read_file
    reads: list[str] = []
    churn = {"left": 6, "victim": batches[5], "at": 2}

    def read_file(self, path, table, columns, run_ids):
        reads.append(path)
        victim = churn["victim"]
        if churn["left"] and victim in path:
            # another writer stores that run again and drops the copy being read
            churn["left"] -= 1
            churn["victim"] = self.append(rows(5, churn["at"]))
            churn["at"] += 1
            self.drop_batch(victim)
        return real(self, path, table, columns, run_ids)

    monkeypatch.setattr(sio.Store, "_read_file", read_file)
    tasks = st.read("tasks")
    assert churn["left"] == 0 and len(tasks) == 20 * 3 and sorted(set(tasks.run_id)) == sorted(f"r{i}" for i in range(20))
    assert len(reads) == 20 + 6  # each file once, and each new copy's once


def test_a_kept_batch_whose_copy_an_ingest_replaced_meanwhile_is_not_read_twice(tmp_path, monkeypatch):
    """A read keeps what it read of batches still visible; an ingest that dropped the old copy
    of a run after the listing, before the stale copies were told apart, left the old copy's
    kept rows beside the new copy's: 8 task rows of a 4-task run (a diff review)."""
    import pandas as pd

    path = tmp_path / "st"
    ingest_event_logs(PLAIN, path, compact=False)
    st = store.open(path)
    (old,) = list(st.visible_marks())
    other = st.append({"runs": pd.DataFrame([{"run_id": "other", "job": "j", "status": "succeeded",
                                              "start_ms": 1, "updated_ms": 1}]),
                       "tasks": pd.DataFrame([{"run_id": "other", "stage_id": 0, "task_id": 0}])})
    new = sio.new_batch_id("ingest-" + old.split("-ingest-", 1)[1].rsplit("-", 1)[0])
    real_read, real_stale = sio.Store._read_file, sio.Store._stale_ingest_copies
    state = {"tries": 0}

    def read_file(self, p, table, columns, run_ids):
        if old in p and "moved" not in state:
            state["moved"] = True
            self.drop_batch(other)  # another writer: the read tries again
            for t in ("stages", "tasks", "executors", "runs"):  # ingest commits a fuller copy
                for f in (path / t).glob(f"part-{old}.parquet"):
                    shutil.copy(f, f.with_name(f"part-{new}.parquet"))
        return real_read(self, p, table, columns, run_ids)

    def stale(self, visible, **kw):
        state["tries"] += 1
        if state["tries"] == 2:
            self.drop_batch(old)  # ingest's second step, after this try's listing
        return real_stale(self, visible, **kw)

    monkeypatch.setattr(sio.Store, "_read_file", read_file)
    monkeypatch.setattr(sio.Store, "_stale_ingest_copies", stale)
    assert len(st.read("tasks")) == 4
    monkeypatch.undo()
    assert len(st.read("tasks")) == 4
