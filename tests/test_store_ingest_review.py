"""A review of the store, ingest and the listener (stop 35) found these; each test failed before its fix.

1. A log ingested while its run was going, before the listener's first write, stayed beside the
   listener's rows: the run's stage, task and executor rows were stored twice.
2. The listener's marker check read ``"schema_version":1`` in a marker of version 10..19.
3. The writer lock is a lock on the marker file, which an ingest that stored nothing removes:
   a writer that waited on the removed file, and one that locked the new marker, both wrote.
4. An empty ``.inprogress`` log was called "not a Spark event log".
"""
from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from sparkpredict import store as store_mod
from sparkpredict.capture import eventlog_ingest as EI
from sparkpredict.capture.eventlog_ingest import ingest_event_logs
from sparkpredict.cli import main
from sparkpredict.store import schema as S

PLAIN_LOG = {"spark.eventLog.enabled": "true", "spark.eventLog.rolling.enabled": "false",
             "spark.eventLog.compress": "false"}


def _no_duplicates(st) -> None:
    """Each task, stage attempt and executor of every run once; every task counted by its run."""
    tasks, stages, execs = st.tasks(), st.stages(), st.executors()
    assert not tasks.duplicated(["run_id", "task_id"]).any()
    assert not stages.duplicated(["run_id", "stage_id", "stage_attempt_id"]).any()
    assert not execs.duplicated(["run_id", "executor_id"]).any()
    runs = st.runs().set_index("run_id")
    for rid, n in tasks.groupby("run_id").size().items():
        assert runs.loc[rid, "num_tasks"] == n


def _ingest_batches(store: Path) -> list[str]:
    return sorted(p.name for p in (store / "runs").glob("part-*-ingest-*.parquet"))


def _wait_for_text(path_glob, text: str, timeout_s: float = 60.0) -> Path:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for p in path_glob():
            if text in p.read_text(errors="replace"):
                return p
        time.sleep(0.05)
    raise AssertionError(f"no log with {text!r} within {timeout_s} s")


@pytest.mark.spark
def test_a_log_ingested_while_its_run_goes_leaves_one_copy(spark_app, tmp_path, monkeypatch):
    logs, st_path = tmp_path / "logs", tmp_path / "store"
    logs.mkdir()
    partial = tmp_path / "partial"
    partial.mkdir()
    seen: dict = {}

    def ingest_mid_run():
        try:
            # stage 0 has ended (Spark flushes its log there); stage 1's tasks are still asleep
            log = _wait_for_text(lambda: logs.glob("*.inprogress"), '"Event":"SparkListenerStageCompleted"')
            shutil.copy(log, partial / log.name)
            seen["report"] = ingest_event_logs([partial], st_path)
            seen["listener_wrote"] = any("-ingest-" not in p.name for p in (st_path / "runs").glob("part-*"))
        except Exception as exc:  # noqa: BLE001 - the assertion below says what
            seen["error"] = exc

    with spark_app(st_path, job="raced", conf={**PLAIN_LOG, "spark.eventLog.dir": str(logs)}) as spark:
        app = spark.sparkContext.applicationId
        t = threading.Thread(target=ingest_mid_run)
        t.start()

        def slow(it):
            time.sleep(4)
            return [sum(1 for _ in it)]

        rdd = spark.sparkContext.parallelize(range(400), 3).map(lambda x: (x % 7, x)).groupByKey(2)
        assert sum(rdd.mapPartitions(slow).collect()) == 7
        t.join(60)
        spark.sparkContext.parallelize(range(10), 2).count()
    assert "error" not in seen, seen.get("error")
    report = seen["report"]
    # the listener had not written yet: ingest stored the run as far as its log went
    assert not seen["listener_wrote"]
    (f,) = report.files
    assert f.outcome == "ingested" and f.status == "incomplete" and f.tasks == 3, f

    st = store_mod.open(st_path)
    (run,) = st.runs().itertuples()
    assert run.run_id == app and run.source == "listener" and run.status == "succeeded"
    assert run.num_tasks == 3 + 2 + 2  # the map stage, the slow stage, the count
    _no_duplicates(st)
    assert _ingest_batches(st_path) == []  # the listener removed ingest's copy at its first write

    # The complete log of the run adds nothing: the listener's record is the run's.
    again = ingest_event_logs([logs], st_path)
    assert again.files_existing == 1 and again.runs_added == 0
    _no_duplicates(st)

    # A store where the listener could not remove the copy (an older listener) is healed by the
    # next ingest, which keeps the listener's rows.
    healed = tmp_path / "healed"
    assert ingest_event_logs([partial], healed).files_ingested == 1
    for table in S.TABLES:
        for part in (st_path / table).glob("part-*.parquet"):
            (healed / table).mkdir(exist_ok=True)
            shutil.copy(part, healed / table / part.name)
    doubled = store_mod.open(healed)
    assert doubled.tasks().duplicated(["run_id", "task_id"]).any()  # the case the next ingest heals
    assert ingest_event_logs([logs], healed).files_existing == 1
    _no_duplicates(doubled)
    assert _ingest_batches(healed) == []
    assert len(doubled.tasks()) == len(st.tasks()) and doubled.runs().iloc[0].source == "listener"

    # The race: the listener's first write lands while ingest reads the log (after ingest looked
    # in the store, before it appended). Ingest finds the listener's batch and drops its own.
    raced = tmp_path / "raced"
    store_mod.open(raced, create=True)
    listener_batch = min((st_path / "runs").glob("part-*.parquet")).name[len("part-"):-len(".parquet")]
    real_parse = EI._parse_source

    def parse_while_the_listener_writes(src):
        parsed = real_parse(src)
        # the listener's first batch lands, its runs file (the commit mark) last
        for table in sorted(S.TABLES, key=lambda t: t == S.COMMIT_TABLE):
            for part in (st_path / table).glob(f"part-{listener_batch}.parquet"):
                (raced / table).mkdir(exist_ok=True)
                shutil.copy(part, raced / table / part.name)
        return parsed

    monkeypatch.setattr(EI, "_parse_source", parse_while_the_listener_writes)
    r = ingest_event_logs([partial], raced)
    (f,) = r.files
    assert f.outcome == "exists" and r.runs_added == 0
    assert any("being recorded into this store by the sparkpredict listener" in w for w in f.warnings)
    assert _ingest_batches(raced) == []
    assert store_mod.open(raced).runs().iloc[0].source == "listener"


@pytest.mark.spark
def test_the_listener_refuses_a_marker_of_schema_version_10(spark_app, tmp_path):
    from sparkpredict.capture.listener import listener_error

    st = tmp_path / "store"
    marker = {"format": S.STORE_FORMAT, "schema_version": S.SCHEMA_VERSION + 9}
    assert S.SCHEMA_VERSION == 1  # 10 begins with the digit of this version
    with spark_app(st, job="v10") as spark:
        # made after the session's start: Python's own check would refuse it before
        st.mkdir()
        (st / S.MARKER_FILE).write_text(json.dumps(marker))
        spark.sparkContext.parallelize(range(4), 2).count()
        deadline = time.monotonic() + 30
        while (err := listener_error(spark)) is None and time.monotonic() < deadline:
            time.sleep(0.2)
    assert err is not None and "this listener writes schema version 1" in err, err
    assert sorted(p.name for p in st.iterdir()) == [S.MARKER_FILE]
    assert json.loads((st / S.MARKER_FILE).read_text()) == marker


def test_a_writer_that_waited_on_a_removed_marker_does_not_write_beside_another(tmp_path):
    st = store_mod.open(tmp_path / "st", create=True)
    marker = tmp_path / "st" / S.MARKER_FILE
    held: list[tuple[str, float, float]] = []
    blocked = threading.Event()

    def writer(name: str, hold_s: float, ready: threading.Event | None = None):
        if ready is not None:
            ready.set()
        with st.writer_lock(name):
            t0 = time.monotonic()
            time.sleep(hold_s)
            held.append((name, t0, time.monotonic()))

    with st.writer_lock("first"):
        b = threading.Thread(target=writer, args=("waited", 0.6, blocked))
        b.start()
        blocked.wait()
        time.sleep(0.3)  # b now waits on the marker's lock
        os.remove(marker)  # as an ingest that stored nothing takes back the store it made
    c = threading.Thread(target=writer, args=("after", 0.6))
    c.start()
    b.join(10)
    c.join(10)
    assert sorted(n for n, *_ in held) == ["after", "waited"]
    (_, _, first_end), (_, second_start, _) = sorted(held, key=lambda h: h[1])
    assert first_end <= second_start, f"two writers held the lock at once: {held}"
    assert marker.exists()
    assert store_mod.open(tmp_path / "st").exists()


def test_a_marker_made_between_the_check_and_the_listing_is_a_store_not_a_foreign_file(tmp_path, monkeypatch):
    # Two writers waiting on a removed marker both init(): one's marker may appear after the
    # other's exists() and before its listing (CI saw "holds other files (_sparkpredict_store.json)").
    st = store_mod.open(tmp_path / "st", create=True)
    marker = tmp_path / "st" / S.MARKER_FILE
    before = marker.read_bytes()
    answers = iter([False])
    monkeypatch.setattr(st, "exists", lambda: next(answers, True))
    st.init()
    assert marker.read_bytes() == before
    assert sorted(p.name for p in (tmp_path / "st").iterdir()) == [S.MARKER_FILE]


def test_a_marker_made_meanwhile_is_not_replaced(tmp_path):
    st = store_mod.open(tmp_path / "st", create=True)
    marker = tmp_path / "st" / S.MARKER_FILE
    before = marker.stat().st_ino
    st._put_marker(str(marker), b"{}")  # another writer's init, a moment late
    assert marker.stat().st_ino == before and json.loads(marker.read_text())["format"] == S.STORE_FORMAT
    assert [p.name for p in marker.parent.iterdir()] == [S.MARKER_FILE]  # no temporary file left


@pytest.mark.parametrize("rolling", [False, True])
def test_an_empty_inprogress_log_is_called_unwritten_not_foreign(tmp_path, capsys, rolling):
    logs = tmp_path / "logs"
    if rolling:
        folder = logs / "eventlog_v2_local-1700000000000"
        folder.mkdir(parents=True)
        (folder / "appstatus_local-1700000000000.inprogress").write_bytes(b"")
        (folder / "events_1_local-1700000000000.zstd").write_bytes(b"")
    else:
        logs.mkdir()
        (logs / "local-1700000000000.inprogress").write_bytes(b"")
    rc = main(["ingest", str(logs), "--store", str(tmp_path / "st")])
    out = capsys.readouterr().out
    # an application that has just started is no failure: a cron ingest of a live history
    # folder exited 1 whenever one had
    assert rc == 0, out
    assert "not written yet (its application has just started); a later ingest reads it" in out
    assert "warning: the log is empty: its application has started (.inprogress) and Spark has not " \
           "written its first event yet" in out
    assert "FAILED" not in out and "not a Spark event log" not in out
    assert "1 log: 0 ingested, 0 unchanged, 0 already in the store, 0 failed, 1 not written yet" in out
    assert not (tmp_path / "st").exists()
    # a finished log with nothing in it is no Spark log at all, and said to be empty
    empty = tmp_path / "done" / "local-1700000000001"
    empty.parent.mkdir()
    empty.write_bytes(b"")
    assert main(["ingest", str(empty), "--store", str(tmp_path / "st")]) == 1
    assert "the file is empty (0 bytes), not an event log" in capsys.readouterr().out


def test_a_store_made_by_another_writer_while_a_reader_opens_it_is_opened(tmp_path, monkeypatch):
    # The reader's first look finds no marker; another writer makes the store before its second:
    # it was "not a sparkpredict store: it holds other files (_sparkpredict_store.json)".
    from sparkpredict.errors import StoreError
    from sparkpredict.store.io import Store

    real = Store.exists
    looks = []

    def exists(self):
        looks.append(self.path)
        if len(looks) == 1:
            return False
        return real(self)

    store_mod.open(tmp_path / "st", create=True)
    monkeypatch.setattr(Store, "exists", exists)
    st = store_mod.open(tmp_path / "st")
    assert st.exists() and len(looks) >= 2
    # a folder of other files is still refused for what it holds
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("x")
    looks.clear()
    with pytest.raises(StoreError, match="holds other files"):
        store_mod.open(tmp_path / "other")
