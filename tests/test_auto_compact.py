"""sparkpredict's own writers (ingest, submit, sweep) compact a local store once enough small
batches arrived since its last compaction: real event logs, a real spark-submit, real Parquet."""
from __future__ import annotations

import json
import logging
import os
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

from sparkpredict import store
from sparkpredict.capture.eventlog_ingest import ingest_event_logs
from sparkpredict.cli import main
from sparkpredict.store import compact as C
from sparkpredict.store import io as store_io

LOGS = Path(__file__).parent / "data" / "eventlogs"
SPARK4 = LOGS / "spark4"
HISTORY = Path(__file__).parent / "data" / "history"
JOB = Path(__file__).parent / "data" / "capture" / "wordcount_job.py"


def _one_run_batches(path: Path, n: int, going: tuple[int, ...] = ()) -> store_io.Store:
    """``n`` one-run batches, as the listener writes them (copies of tests/data/history's runs);
    the runs numbered in ``going`` still running."""
    src = store.open(HISTORY)
    runs, stages, tasks = (src.read(t) for t in ("runs", "stages", "tasks"))
    st = store.open(path, create=True)
    for i in range(n):
        r = runs.iloc[[i % len(runs)]].copy()
        old, rid = r.run_id.iloc[0], f"app-{i:04d}"
        r["run_id"] = r["app_id"] = rid
        if i in going:
            r["status"] = "running"
        st.append({"runs": r, "stages": stages[stages.run_id == old].assign(run_id=rid),
                   "tasks": tasks[tasks.run_id == old].assign(run_id=rid)})
    return st


def _logs(tmp_path: Path) -> Path:
    """Four real Spark 4 event logs (plain, zstd, lz4, snappy), one run each."""
    logs = tmp_path / "logs"
    logs.mkdir()
    for name in ("local-1795969313432", "local-1795969295677.zstd", "local-1795969305651.lz4",
                 "local-1795969308180.snappy"):
        shutil.copy(SPARK4 / name, logs)
    return logs


def _sorted(df: pd.DataFrame) -> pd.DataFrame:
    return df.sort_values(list(df.columns), kind="stable", na_position="first").reset_index(drop=True)


def test_pending_counts_the_small_batches_since_the_last_compaction(tmp_path):
    st = _one_run_batches(tmp_path / "st", 5, going=(1,))
    assert C.pending(st) == 5
    assert C.pending(st, target_bytes=1) == 0  # none is small beside a 1-byte target
    assert C.compact(st).going == 1
    assert len(st.visible_marks()) == 3  # app-0000, the running app-0001, app-0002..4 merged
    # the running run's batch, left alone, is older than the last compaction: not counted again
    # (else a run that never ends would compact the store after every writer)
    assert C.pending(st) == 0
    _one_run_batches(tmp_path / "more", 3)  # another store: this one is unchanged
    assert C.pending(st) == 0
    st.append({"runs": store.open(HISTORY).read("runs").iloc[[0]].assign(run_id="app-late", app_id="app-late")})
    assert C.pending(st) == 1
    assert C.pending(str(tmp_path / "st")) == 1  # a path as well as a Store


def test_auto_compact_merges_only_when_due_and_keeps_every_row(tmp_path):
    st = _one_run_batches(tmp_path / "st", 6)
    before = {t: _sorted(st.read(t)) for t in ("runs", "stages", "tasks")}
    marks = sorted(st.committed_batches())
    assert C.auto_compact(st, min_batches=7) is None
    assert sorted(st.committed_batches()) == marks  # nothing written
    r = C.auto_compact(st, min_batches=6)
    assert r is not None and (r.merged, r.written, r.batches_after) == (6, 1, 1)
    assert len(st.visible_marks()) == 1
    for t, df in before.items():
        pd.testing.assert_frame_equal(_sorted(store.open(tmp_path / "st").read(t)), df)
    assert C.auto_compact(st, min_batches=1) is None  # nothing new since


def test_batches_left_alone_are_not_counted_again_by_the_next_writers(tmp_path, monkeypatch):
    # A long app still going between finished runs: no two small batches of finished runs sit
    # side by side, so a compaction merges nothing; it was run again by every later writer.
    st = _one_run_batches(tmp_path / "st", 6, going=(0, 2, 4))
    passes = []
    real = C._compact
    monkeypatch.setattr(C, "_compact", lambda *a, **k: passes.append(1) or real(*a, **k))
    assert C.auto_compact(st, min_batches=6) is None  # merged nothing: no result to report
    assert len(passes) == 1 and len(st.visible_marks()) == 6
    assert C.auto_compact(st, min_batches=6) is None and len(passes) == 1  # not looked at again
    assert C.pending(st) == 6  # the store itself still says 6: the note is this user's cache's
    for i in (6, 7):
        r = st.read("runs").iloc[[1]].assign(run_id=f"app-late{i}", app_id=f"app-late{i}")
        st.append({"runs": r})
    r = C.auto_compact(st, min_batches=2)
    assert len(passes) == 2 and r is not None
    assert r.merged == 3 and r.going == 3  # the last one left alone joins the two new ones
    assert len(st.read("runs")) == 8


def test_a_writer_holding_the_store_is_not_waited_for(tmp_path):
    import time

    st = _one_run_batches(tmp_path / "st", 4)
    marks = sorted(st.committed_batches())
    with store.open(tmp_path / "st").writer_lock("ingest"):
        t0 = time.monotonic()
        assert C.auto_compact(str(tmp_path / "st"), min_batches=2) is None
        assert time.monotonic() - t0 < 5
    assert sorted(st.committed_batches()) == marks  # left for the next writer, which compacts
    assert C.auto_compact(st, min_batches=2).merged == 4


def test_a_writer_after_the_keep_time_removes_what_the_last_compaction_replaced(tmp_path):
    st = _one_run_batches(tmp_path / "st", 4)
    assert C.auto_compact(st, min_batches=4).merged == 4
    n_files = len(list((tmp_path / "st").rglob("*.parquet")))
    assert C.auto_compact(st) is None
    assert len(list((tmp_path / "st").rglob("*.parquet"))) == n_files  # kept for readers still reading
    (mark,) = [m for m in (tmp_path / "st" / "runs").glob("*.parquet") if "compacted" in m.name]
    old = mark.stat().st_mtime - C.KEEP_S - 60
    os.utime(mark, (old, old))
    assert C.auto_compact(st) is None  # not due: nothing merged, but the leftovers go
    left = sorted(p.relative_to(tmp_path / "st").as_posix() for p in (tmp_path / "st").rglob("*.parquet"))
    assert left == sorted(f"{t}/{p.name}" for t in ("runs", "stages", "tasks")
                          for p in (tmp_path / "st" / t).glob("*compacted*.parquet"))
    assert len(st.read("runs")) == 4 and (st.read("tasks").groupby("run_id").size() > 0).all()


def test_a_failed_auto_compaction_is_a_warning_and_changes_nothing(tmp_path, caplog):
    st = _one_run_batches(tmp_path / "st", 4)
    victim = sorted((tmp_path / "st" / "tasks").glob("*.parquet"))[1]
    victim.write_bytes(b"not parquet")
    marks = sorted(st.committed_batches())
    with caplog.at_level(logging.WARNING, logger="sparkpredict.store.compact"):
        assert C.auto_compact(st, min_batches=2) is None
    (msg,) = [r.getMessage() for r in caplog.records if "compacting" in r.getMessage()]
    assert "failed, and what readers see is unchanged" in msg and "unreadable Parquet file" in msg and "fix:" in msg
    assert sorted(st.committed_batches()) == marks
    assert len(st.visible_marks()) == 4


def test_a_remote_store_is_not_compacted_but_warns(tmp_path, caplog, monkeypatch):
    import pyarrow.fs as pafs

    st = _one_run_batches(tmp_path / "st", 3)

    class Remote(pafs.SubTreeFileSystem):  # any file system but the local one: no writer lock
        pass

    monkeypatch.setattr(st, "fs", Remote(str(tmp_path), pafs.LocalFileSystem()))
    monkeypatch.setattr(st, "root", "st")
    assert len(st.visible_marks()) == 3  # the same store, through the other file system
    with caplog.at_level(logging.WARNING, logger="sparkpredict.store.compact"):
        assert C.auto_compact(st, min_batches=3) is None
    (msg,) = [r.getMessage() for r in caplog.records]
    assert "3 small batches since its last compaction" in msg and "sparkpredict store compact" in msg
    assert len(store.open(tmp_path / "st").visible_marks()) == 3


def test_ingest_compacts_when_due_and_not_when_told_not_to(tmp_path, monkeypatch):
    logs = _logs(tmp_path)
    monkeypatch.setattr(C, "AUTO_BATCHES", 4)
    kept = ingest_event_logs(logs, tmp_path / "kept", compact=False)
    assert kept.files_ingested == 4 and kept.compaction is None
    assert len(store.open(tmp_path / "kept").visible_marks()) == 4

    report = ingest_event_logs(logs, tmp_path / "st")
    assert report.files_ingested == 4
    assert report.compaction is not None and report.compaction.merged == 4
    st = store.open(tmp_path / "st")
    assert len(st.visible_marks()) == 1
    for t in ("runs", "stages", "tasks", "executors"):
        # the same rows as the uncompacted store's, but when each ingest wrote them
        pd.testing.assert_frame_equal(*(_sorted(store.open(tmp_path / s).read(t).drop(columns="updated_ms", errors="ignore"))
                                        for s in ("st", "kept")))
    # the next ingest still finds each log's run: skipped, not stored again
    again = ingest_event_logs(logs, tmp_path / "st")
    assert again.files_ingested == 0 and again.files_unchanged == 4 and again.compaction is None
    # an ingest killed before its compaction (here: told not to compact) left the store due;
    # its rerun stores nothing and still compacts it
    rerun = ingest_event_logs(logs, tmp_path / "kept")
    assert rerun.files_ingested == 0 and rerun.compaction is not None and rerun.compaction.merged == 4
    assert len(store.open(tmp_path / "kept").visible_marks()) == 1


def test_ingest_into_an_open_store_compacts_after_it(tmp_path, monkeypatch):
    # given a Store, ingest holds no lock of its own making around the compaction: it must
    # neither wait on itself nor skip
    monkeypatch.setattr(C, "AUTO_BATCHES", 4)
    st = store.open(tmp_path / "st", create=True)
    report = ingest_event_logs(_logs(tmp_path), st)
    assert report.files_ingested == 4 and report.compaction is not None and report.compaction.merged == 4
    assert len(st.visible_marks()) == 1 and len(st.read("runs")) == 4


def test_ingest_cli_reports_the_compaction_and_takes_no_compact(tmp_path, monkeypatch, capsys):
    logs = _logs(tmp_path)
    monkeypatch.setattr(C, "AUTO_BATCHES", 4)
    assert main(["ingest", str(logs), "--store", str(tmp_path / "st"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["files_ingested"] == 4
    assert (doc["compaction"]["merged"], doc["compaction"]["written"], doc["compaction"]["batches_after"]) == (4, 1, 1)
    assert main(["ingest", str(logs), "--store", str(tmp_path / "plain"), "--no-compact", "--json"]) == 0
    assert "compaction" not in json.loads(capsys.readouterr().out)
    assert main(["ingest", str(logs), "--store", str(tmp_path / "text")]) == 0
    out = capsys.readouterr().out
    assert "merged 4 batches" in out and "into 1" in out


@pytest.mark.spark
def test_submit_compacts_the_store_after_its_run(listener_jar, tmp_path, monkeypatch):
    """A real spark-submit records its run; then the store's 3 earlier batches and the run's
    own are merged into one, and the run reads back whole."""
    from sparkpredict.capture.submit import submit

    _one_run_batches(tmp_path / "st", 3)
    monkeypatch.setattr(C, "AUTO_BATCHES", 4)
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    res = submit(["--master", "local[1]", "--driver-memory", "512m", "--conf", "spark.ui.enabled=false",
                  str(JOB)], store=str(tmp_path / "st"), job="wc")
    assert res.returncode == 0 and len(res.run_ids) == 1
    assert res.compaction is not None and res.compaction.merged >= 4 and res.compaction.written == 1
    st = store.open(tmp_path / "st")
    assert len(st.visible_marks()) == 1
    runs = st.read("runs").set_index("run_id")
    assert len(runs) == 4 and runs.loc[res.run_ids[0], "status"] == "succeeded"
    run = runs.loc[res.run_ids[0]]
    tasks, stages = st.read("tasks"), st.read("stages")
    assert (tasks.run_id == res.run_ids[0]).sum() == run.num_tasks > 0
    assert (stages.run_id == res.run_ids[0]).sum() == run.num_stages
    assert os.path.exists(tmp_path / "st" / "runs")


def test_attach_compacts_a_store_only_listeners_write_before_the_session(listener_jar, tmp_path, monkeypatch,
                                                                           caplog):
    """A driver that attaches the listener is a writer too: its store, fed one batch per run by
    the listener, is compacted when due before the session starts, every row kept; a store not
    made yet is neither made nor warned about, and compact=False leaves the batches."""
    from pyspark.sql import SparkSession

    import sparkpredict
    from sparkpredict.errors import InputError

    st = _one_run_batches(tmp_path / "st", 5)
    before = {t: _sorted(st.read(t)) for t in ("runs", "stages", "tasks")}
    monkeypatch.setattr(C, "AUTO_BATCHES", 5)
    opts = sparkpredict.attach(SparkSession.builder, store=str(tmp_path / "st"), compact=False)._options
    assert opts["spark.sparkpredict.store"] == (tmp_path / "st").as_uri()
    assert len(st.visible_marks()) == 5
    with pytest.raises(InputError, match="compact must be True or False"):
        sparkpredict.attach(SparkSession.builder, store=str(tmp_path / "st"), compact="no")
    assert len(st.visible_marks()) == 5  # a refused attach writes nothing
    sparkpredict.attach(SparkSession.builder, store=f"file://{tmp_path / 'st'}")  # a file: URI is local
    assert len(st.visible_marks()) == 1
    for t, df in before.items():
        pd.testing.assert_frame_equal(_sorted(st.read(t)), df, check_dtype=False)
    with caplog.at_level(logging.INFO, logger="sparkpredict"):
        sparkpredict.attach(SparkSession.builder, store=str(tmp_path / "new"))
    assert not (tmp_path / "new").exists()  # the listener makes it with its first rows
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING and "new" in r.getMessage()]


def test_retrain_compacts_first_when_due_and_not_when_told_not_to(tmp_path, monkeypatch, capsys):
    """A store only listeners write: the nightly retrain (CLI and jobs/retrain.py) compacts it
    before reading, without --compact; --no-compact and --dry-run leave it."""
    import importlib.util
    import types

    st = _one_run_batches(tmp_path / "st", 6)
    monkeypatch.setattr(C, "AUTO_BATCHES", 6)
    base = ["retrain", "--local", "--no-stage-models", "--json", "--store", str(tmp_path / "st")]
    main(base + ["--no-compact"])
    assert "compaction" not in json.loads(capsys.readouterr().out) and len(st.visible_marks()) == 6
    assert main(["retrain", "--local", "--dry-run", "--store", str(tmp_path / "st")]) == 0
    capsys.readouterr()
    assert len(st.visible_marks()) == 6
    main(base)
    doc = json.loads(capsys.readouterr().out)
    assert (doc["compaction"]["merged"], doc["compaction"]["batches_after"]) == (6, 1)
    assert len(st.visible_marks()) == 1 and len(st.read("runs")) == 6
    with pytest.raises(SystemExit):  # one or the other
        main(base + ["--compact", "--no-compact"])
    capsys.readouterr()

    # the Spark job too, before it reads: the models are current, so it starts no session
    for i in range(6):
        st.append({"runs": st.read("runs").iloc[[0]].assign(run_id=f"late{i}", app_id=f"late{i}", job=None)})

    class NoSpark:
        def __getattr__(self, name):
            pytest.fail(f"started Spark (SparkSession.{name})")

    fake = types.ModuleType("pyspark.sql")
    fake.SparkSession = NoSpark()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pyspark.sql", fake)
    spec = importlib.util.spec_from_file_location("retrain_job", Path(__file__).resolve().parents[1] / "jobs" / "retrain.py")
    job = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(job)
    assert job.main(["--store", st.path, "--no-stage-models", "--no-compact"]) == 0
    assert "compaction" not in json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert job.main(["--store", st.path, "--no-stage-models"]) == 0
    said = capsys.readouterr()
    assert "merged 7 batches" in said.err  # the 6 new ones and the compacted one
    assert json.loads(said.out.strip().splitlines()[-1])["compaction"]["batches_after"] == 1

