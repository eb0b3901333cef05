"""`store compact`: many small batches become few, and every reader sees each row once,
before, during and after (real Parquet files, real threads, the real CLI)."""
from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from sparkpredict import store
from sparkpredict.errors import InputError, StoreError
from sparkpredict.store import compact as C
from sparkpredict.store import io as store_io

HISTORY = Path(__file__).parent / "data" / "history"
TABLES = ("runs", "stages", "tasks", "executors", "host_samples")


def _keyed(df: pd.DataFrame) -> pd.DataFrame:
    """Rows in one order whatever the files' order, for comparing tables as multisets."""
    return df.sort_values(list(df.columns), kind="stable", na_position="first").reset_index(drop=True)


def _all(st, **kw) -> dict[str, pd.DataFrame]:
    return {t: _keyed(st.read(t, **kw)) for t in TABLES}


def _copies(tmp_path, n: int, *, going: int = 0):
    """A store of ``n`` one-run batches as the listener writes them (runs, stages, tasks,
    executors), copied from tests/data/history; the last ``going`` runs still running."""
    src = store.open(HISTORY)
    runs, stages, tasks, execs = (src.read(t) for t in ("runs", "stages", "tasks", "executors"))
    st = store.open(tmp_path / "st", create=True)
    for i in range(n):
        r = runs.iloc[[i % len(runs)]].copy()
        old, rid = r.run_id.iloc[0], f"app-{i:04d}"
        r["run_id"] = r["app_id"] = rid
        r["job"] = f"job{i % 3}"
        if i >= n - going:
            r["status"] = "running"
        st.append({"runs": r, "stages": stages[stages.run_id == old].assign(run_id=rid),
                   "tasks": tasks[tasks.run_id == old].assign(run_id=rid),
                   "executors": execs[execs.run_id == old].assign(run_id=rid)})
    return st


def _marks(st) -> list[str]:
    return sorted(st.committed_batches())


def test_compaction_keeps_every_row_and_reads_open_few_files(tmp_path):
    st = _copies(tmp_path, 40, going=2)
    store.edit_runs(st, ["app-0003", "app-0004"], excluded=True)  # a batch of runs rows only
    store.edit_runs(st, ["app-0003"], excluded=False)
    before, history_rows = _all(st), _keyed(st.read("runs", all_rows=True))
    assert len(before["tasks"]) > 1000 and len(before["executors"]) > 0

    r = C.compact(st)
    # 40 listener batches, then 2 edits: the two running runs' batches stay, and split the rest
    # into the 38 before them and the 2 edits after
    assert (r.batches_before, r.merged, r.written, r.going) == (42, 40, 2, 2)
    assert r.batches_after == 4 == len(st.visible_marks())
    assert r.removed == []  # replaced files stay 10 minutes for readers still reading them
    assert len(_marks(st)) == 44
    # a compacted batch sorts right after the last batch it replaced: the running runs' stay between
    visible = sorted(st.visible_marks())
    assert [store_io.is_compacted(b) for b in visible] == [True, False, False, True]
    for t in TABLES:
        pd.testing.assert_frame_equal(_keyed(st.read(t)), before[t])
    # every runs row of an edited run, in its order: the edit's include still restores the status
    pd.testing.assert_frame_equal(_keyed(st.read("runs", all_rows=True)), history_rows)
    assert st.runs().set_index("run_id").loc[["app-0003", "app-0004"], "status"].tolist() == ["succeeded", "excluded"]
    store.edit_runs(st, ["app-0004"], excluded=False)
    assert st.runs().set_index("run_id").loc["app-0004", "status"] == "succeeded"



def test_replaced_files_go_after_keep_and_then_plain_parquet_readers_agree(tmp_path):
    st = _copies(tmp_path, 12)
    before = _all(st)
    C.compact(st)
    # a plain reader of the folder sees the replaced rows twice until their files go
    assert len(pq.read_table(tmp_path / "st" / "tasks")) == 2 * len(before["tasks"])
    assert st.orphans(600) == [] and len(st.orphans(0)) == 4 * 12
    first = st.replaced_files(0)
    assert all("/runs/" in p for p in first[:12]) and not any("/runs/" in p for p in first[12:])
    again = C.compact(st, keep_s=0)  # nothing left to merge; the replaced files go
    assert (again.merged, len(again.removed)) == (0, 48)
    assert len(pq.read_table(tmp_path / "st" / "tasks")) == len(before["tasks"])
    for t in TABLES:
        pd.testing.assert_frame_equal(_keyed(st.read(t)), before[t])


def test_a_second_compaction_keeps_what_the_first_replaced_hidden(tmp_path):
    st = _copies(tmp_path, 10)
    first = C.compact(st)
    src = store.open(HISTORY)
    extra = src.read("runs").iloc[[0]].assign(run_id="app-late", app_id="app-late", job="job0")
    st.append({"runs": extra, "tasks": src.read("tasks").head(5).assign(run_id="app-late")})
    st.append({"runs": extra.assign(run_id="app-later", app_id="app-later")})
    before = _all(st)
    second = C.compact(st)  # the first compacted batch is small: merged again, with the new ones
    assert (first.written, second.merged, second.written, second.batches_after) == (1, 3, 1, 1)
    (only,) = st.visible_marks()
    assert len(st.supersedes(st.visible_marks()[only])) == 13  # 3 merged + 10 the first replaced
    # A clean that stopped after removing the first compacted batch's runs file: the batches it
    # replaced must stay hidden (the second lists them too), not come back beside their copies.
    first_mark = next(p for b, p in st._files("runs").items() if store_io.is_compacted(b) and b != only)
    os.remove(first_mark)
    for t in TABLES:
        pd.testing.assert_frame_equal(_keyed(st.read(t)), before[t])


def test_reads_during_a_compaction_see_each_row_once(tmp_path):
    st = _copies(tmp_path, 150)
    want = {t: len(st.read(t)) for t in ("runs", "tasks")}
    seen: list[tuple[str, int]] = []
    errors: list[BaseException] = []
    done = threading.Event()

    def reader():
        reader_st = store.open(st.path)
        while not done.is_set():
            for t in want:
                try:
                    seen.append((t, len(reader_st.read(t))))
                except BaseException as exc:  # noqa: BLE001 - reported below
                    errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for th in threads:
        th.start()
    try:
        # keep 0: the replaced files go right after the commit, under the readers' feet
        C.compact(st, keep_s=0, target_bytes=2**20)
    finally:
        done.set()
        for th in threads:
            th.join()
    assert not errors, errors
    assert len(seen) >= 4 and all(n == want[t] for t, n in seen), seen
    assert len(st.committed_batches()) < 20


def test_compacted_files_are_sorted_and_a_few_runs_read_few_row_groups(tmp_path, monkeypatch):
    st = _copies(tmp_path, 30)
    by_run = {r: _keyed(st.read("tasks", run_ids=[r])) for r in ("app-0000", "app-0013", "app-0029")}
    monkeypatch.setattr(C, "ROW_GROUP_ROWS", 50)
    C.compact(st, keep_s=0)
    (batch,) = st.visible_marks()
    pf = pq.ParquetFile(st._files("tasks")[batch])
    assert pf.metadata.num_row_groups > 10
    ids = pf.read(columns=["run_id"])["run_id"].to_pylist()
    assert ids == sorted(ids)
    for rid, rows in by_run.items():
        pd.testing.assert_frame_equal(_keyed(st.read("tasks", run_ids=[rid])), rows)
    assert st.read("tasks", run_ids=["app-none"]).empty
    # a projection reads the named columns, and still each run's latest row
    proj = st.read("runs", columns=["job"], run_ids=["app-0013"])
    assert list(proj.columns) == ["job"] and proj.job.tolist() == ["job1"]


def test_two_compactions_of_the_same_batch_are_an_error_naming_the_fix(tmp_path):
    st = _copies(tmp_path, 3)
    batches = sorted(st.visible_marks())
    rows = st.read("runs", form="arrow", all_rows=True)
    for _ in range(2):  # what two compactions at once on a store without a lock would leave
        st.append({"runs": rows}, batch_id=store_io.compacted_id(batches[-1]), replaces=batches)
    with pytest.raises(StoreError) as e:
        st.runs()
    assert "two `store compact` ran at once" in str(e.value) and "runs/part-" in e.value.fix
    with pytest.raises(ValueError, match="compacted_id"):
        st.append({"runs": rows}, replaces=batches)


def test_of_two_compactions_at_once_the_error_names_the_one_to_remove(tmp_path):
    """One replaced A and B, the other A, B and D, and both removed what they replaced (keep 0):
    removing the one whose batches the other holds too loses nothing; the other would lose D."""
    st = _copies(tmp_path, 4)
    a, b, _c, d = sorted(st.visible_marks())
    rows = st.read("runs", form="arrow", all_rows=True)
    tasks = st.read("tasks", form="arrow")

    def of(ids):
        return [f"app-{i:04d}" for i in ids]

    def rows_of(table, ids):
        return table.filter(pc.is_in(table["run_id"], pa.array(of(ids))))

    small = st.append({"runs": rows_of(rows, [0, 1]), "tasks": rows_of(tasks, [0, 1])},
                      batch_id=store_io.compacted_id(b), replaces=[a, b])
    big = st.append({"runs": rows_of(rows, [0, 1, 3]), "tasks": rows_of(tasks, [0, 1, 3])},
                    batch_id=store_io.compacted_id(d), replaces=[a, b, d])
    for x in (a, b, d):
        for t in ("runs", "tasks", "stages", "executors"):
            (tmp_path / "st" / t / f"part-{x}.parquet").unlink(missing_ok=True)
    with pytest.raises(StoreError) as e:
        st.runs()
    assert f"remove runs/part-{small}.parquet" in e.value.fix and big not in e.value.fix
    (tmp_path / "st" / "runs" / f"part-{small}.parquet").unlink()
    assert sorted(st.runs().run_id) == of([0, 1, 2, 3])
    assert st.read("tasks")["run_id"].value_counts().to_dict() == tasks.to_pandas()["run_id"].value_counts().to_dict()


def test_a_damaged_compacted_file_is_an_error_whose_fix_is_a_backup(tmp_path):
    st = _copies(tmp_path, 3)
    C.compact(st, keep_s=0)
    (batch,) = st.visible_marks()
    for table in ("runs", "tasks"):
        target = tmp_path / "st" / table / f"part-{batch}.parquet"
        good = target.read_bytes()
        target.write_bytes(good[:100])
        store_io._supersedes_cache.clear()
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        # runs: every read lists the batches; tasks: a replay reads the run's task rows
        cmd = ["store", "summary"] if table == "runs" else ["simulate", "app-0001"]
        out = subprocess.run([sys.executable, "-m", "sparkpredict", *cmd, "--store", str(tmp_path / "st")],
                             capture_output=True, text=True, env=env, check=False)
        assert out.returncode != 0 and "Traceback" not in out.stderr, out.stderr
        assert "fix: restore" in out.stderr and "backup" in out.stderr, out.stderr
        target.write_bytes(good)


def test_bad_arguments_and_a_store_without_runs(tmp_path):
    st = store.open(tmp_path / "empty", create=True)
    r = C.compact(st)
    assert (r.batches_before, r.merged, r.written) == (0, 0, 0)
    for bad in (0, -5, 1.5, True):
        with pytest.raises(InputError, match="target size"):
            C.compact(st, target_bytes=bad)
    with pytest.raises(InputError, match="keep time"):
        C.compact(st, keep_s=-1)
    with pytest.raises(StoreError, match="no sparkpredict store"):
        C.compact(tmp_path / "missing")
    assert not (tmp_path / "missing").exists()


def test_many_batches_warn_of_compact(tmp_path, monkeypatch, caplog):
    st = _copies(tmp_path, 4)
    monkeypatch.setattr(store_io, "MANY_BATCHES", 3)
    monkeypatch.setattr(store_io, "_warned_many", set())
    with caplog.at_level(logging.WARNING, logger="sparkpredict.store.io"):
        st.runs()
        st.runs()
    said = [r.getMessage() for r in caplog.records if "store compact" in r.getMessage()]
    assert len(said) == 1 and "holds 4 batches" in said[0]


def test_ingest_after_compaction_adds_nothing_and_skips_nothing(tmp_path):
    from sparkpredict.capture.eventlog_ingest import ingest_event_logs

    logs = Path(__file__).parent / "data" / "eventlogs"
    names = [str(logs / n) for n in ("sparklens_local-1532512550423.json", "rp_nosql_eventlog.json",
                                     "tasks_executors_fail_compressed_eventlog.zstd")]
    path = tmp_path / "st"
    ingest_event_logs(names, store=path)
    st = store.open(path)
    before = _all(st)
    assert len(before["runs"]) == 3
    C.compact(st, keep_s=0)
    assert len(st.visible_marks()) == 1
    again = ingest_event_logs(names, store=path)  # stored logs: skipped, not stored again
    assert {f.outcome for f in again.files} <= {"unchanged", "exists"}
    for t in TABLES:
        pd.testing.assert_frame_equal(_keyed(st.read(t)), before[t])


def _cli(*args, **kw):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    return subprocess.run([sys.executable, "-m", "sparkpredict", "store", "compact", *args],
                          capture_output=True, text=True, env=env, check=False, **kw)


def test_a_dry_run_with_keep_0_counts_what_the_run_removes(tmp_path):
    st = _copies(tmp_path, 5)
    C.compact(st)  # leaves 20 replaced files
    st.append({"runs": st.read("runs").head(1).assign(run_id="x", app_id="x")})
    dry = C.compact(st, keep_s=0, dry_run=True)
    real = C.compact(st, keep_s=0)
    assert (dry.merged, len(dry.removed)) == (real.merged, len(real.removed)) == (2, 20 + 4 + 1)
    assert sorted(dry.removed) == sorted(real.removed)


def test_cli_dry_run_writes_nothing_then_compacts(tmp_path):
    st = _copies(tmp_path, 6, going=1)
    files = sorted(p for p in (tmp_path / "st").rglob("*"))
    out = _cli("--store", str(tmp_path / "st"), "--dry-run")
    assert out.returncode == 0, out.stderr
    assert "would merge 5 batches" in out.stdout and "left alone: 1 batch of runs still going" in out.stdout
    assert sorted(p for p in (tmp_path / "st").rglob("*")) == files
    out = _cli("--store", str(tmp_path / "st"), "--json")
    got = json.loads(out.stdout)
    assert (got["merged"], got["written"], got["batches_after"], got["going"]) == (5, 1, 2, 1)
    assert got["removed_files"] == 0 and got["merged_bytes"] > 0
    assert len(st.visible_marks()) == 2
    out = _cli("--store", str(tmp_path / "st"), "--keep", "0")
    assert "nothing to merge in its 2 batches\n" in out.stdout and "removed 20 files" in out.stdout, out.stdout
    for args, said in ((["--keep", "-3"], "--keep"), (["--target-size", "lots"], "--target-size"),
                       # sizes as every other size a user types: "cannot read" hid what was wrong
                       (["--target-size=-5MB"], "--target-size: size '-5MB' must be positive"),
                       (["--target-size", "1.5"], "--target-size: size '1.5' is a fraction of a byte")):
        out = _cli("--store", str(tmp_path / "st"), *args)
        assert out.returncode == 2 or out.returncode == 1
        assert f"error: {said}" in out.stderr and "fix: give" in out.stderr and "Traceback" not in out.stderr


def test_store_clean_takes_replaced_files_once_old(tmp_path):
    st = _copies(tmp_path, 5)
    C.compact(st)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    run = [sys.executable, "-m", "sparkpredict", "store", "clean", "--store", str(tmp_path / "st")]
    young = subprocess.run(run, capture_output=True, text=True, env=env, check=True)
    assert "removed 0 uncommitted file(s)" in young.stdout
    assert "kept 20 file(s) of batches a `store compact` replaced in the last 10m" in young.stderr
    assert "uncommitted file(s) modified" not in young.stderr  # they are no crashed writer's
    old = subprocess.run([*run, "--older-than", "0"], capture_output=True, text=True, env=env, check=True)
    assert "removed 0 uncommitted file(s), and 20 file(s) of batches a `store compact` replaced" in old.stdout
    assert len(st.committed_batches()) == 1 and len(st.runs()) == 5
    shutil.rmtree(tmp_path / "st")


def test_a_read_whose_listings_straddle_a_compaction_reads_every_row(tmp_path, monkeypatch):
    """The compaction (keep 0) lands between a read's listing of the batches and its listing of
    the task files: the replaced batches' task files are gone, and must not read as no rows."""
    st = _copies(tmp_path, 6)
    want = _keyed(st.read("tasks"))
    real_listing = store_io.Store._listing
    fired = []

    def listing(self, table):
        if table == "tasks" and not fired:
            fired.append(1)
            C.compact(store.open(self.path), keep_s=0)
        return real_listing(self, table)

    monkeypatch.setattr(store_io.Store, "_listing", listing)
    got = _keyed(store.open(st.path).read("tasks"))
    assert fired and len(st.committed_batches()) == 1
    pd.testing.assert_frame_equal(got, want)


def test_runs_going_or_stored_twice_are_left_for_their_writers(tmp_path):
    """An incomplete ingested log (a fuller one may replace it) and a run stored twice (the next
    ingest keeps one copy, finding the copies by their batches' labels) stay as they are."""
    from sparkpredict.capture import eventlog_ingest as E

    src = store.open(HISTORY)
    r0, t0 = src.read("runs").iloc[[0]], src.read("tasks").head(5)
    st = store.open(tmp_path / "st", create=True)

    def put(rid, label, **runs):
        st.append({"runs": r0.assign(**{"run_id": rid, "app_id": rid, "source": "eventlog", **runs}),
                   "tasks": t0.assign(run_id=rid)}, batch_id=store_io.new_batch_id(label))

    put("app-cut", "ingest-app-cut", status="incomplete")
    put("app-2x", "ingest-app-2x", updated_ms=1)  # an ingest stopped before dropping this copy
    put("app-2x", "ingest-app-2x", updated_ms=2)
    put("app-both", "ingest-app-both")  # ingested while going, and recorded by the listener
    put("app-both", "app-both", source="listener")
    for i in range(3):
        put(f"app-ok{i}", f"ingest-app-ok{i}")
    last_ok = max(b for b in st.visible_marks() if "ingest-app-ok" in b)
    r = C.compact(st, keep_s=0)
    assert (r.merged, r.going, r.doubled) == (3, 1, 4)
    # what the next ingest does with the copies, as it would have without the compaction
    E._one_copy_each(st)
    assert len(E._drop_listened(st)) == 1
    tasks = st.read("tasks")["run_id"].value_counts().to_dict()
    assert tasks == {"app-cut": 5, "app-2x": 5, "app-both": 5, "app-ok0": 5, "app-ok1": 5, "app-ok2": 5}
    # a compacted batch is named after the last batch it replaced, so it sorts where that did
    (compacted,) = [b for b in st.visible_marks() if store_io.is_compacted(b)]
    assert compacted.startswith(last_ok + "-compacted-000001-")


def test_a_run_the_listener_ended_incomplete_is_merged_an_ingested_incomplete_log_is_not(tmp_path):
    """The listener writes ``incomplete`` only as a run's final status (Spark dropped events of
    its queue and a job was never heard to end): such runs' batches were left alone for good,
    and a busy driver's store kept one small file per flush. An ingested ``incomplete`` log,
    which a fuller one replaces, and a run still ``running`` stay."""
    from sparkpredict.capture import eventlog_ingest as E

    src = store.open(HISTORY)
    r0, t0 = src.read("runs").iloc[[0]], src.read("tasks").head(4)
    assert r0["source"].iloc[0] == "listener"
    st = store.open(tmp_path / "st", create=True)

    def put(rid, label, status, updated_ms, **runs):
        st.append({"runs": r0.assign(run_id=rid, app_id=rid, status=status, updated_ms=updated_ms, **runs),
                   "tasks": t0.assign(run_id=rid)}, batch_id=store_io.new_batch_id(label))

    def listened(rid, final, flushes=2, **last):  # as the listener flushes: running rows, then its last
        for i in range(1, flushes):
            put(rid, rid, "running", i, end_ms=None)
        put(rid, rid, final, flushes, **last)

    dropped = "Spark dropped 7 events of the listener's queue (shared, full: ...); 1 job was never heard to end (job 3)"
    listened("app-lost", "incomplete", flushes=3, error_message=dropped)
    listened("app-ok", "succeeded")
    put("app-cut", "ingest-app-cut", "incomplete", 1, source="eventlog", end_ms=None)
    listened("app-lost2", "incomplete", error_message="driver JVM exited with no application end heard; " + dropped)
    put("app-live", "app-live", "running", 1, end_ms=None)
    put("app-live", "app-live", "running", 2, end_ms=None)
    before, history_rows = _all(st), _keyed(st.read("runs", all_rows=True))
    batches = sorted(st.visible_marks())
    cut = next(b for b in batches if "ingest-app-cut" in b)

    r = C.compact(st, keep_s=0)
    # app-lost's 3 batches and app-ok's 2 before the ingested log; app-lost2's 2 after it
    assert (r.batches_before, r.merged, r.written, r.going) == (10, 7, 2, 3)
    visible = sorted(st.visible_marks())
    assert [store_io.is_compacted(b) for b in visible] == [True, False, True, False, False]
    assert visible[1] == cut and visible[3:] == batches[-2:]  # left as they were
    for t in TABLES:
        pd.testing.assert_frame_equal(_keyed(st.read(t)), before[t])
    pd.testing.assert_frame_equal(_keyed(st.read("runs", all_rows=True)), history_rows)
    latest = st.runs().set_index("run_id")
    assert latest.loc[["app-lost", "app-lost2", "app-cut", "app-live"], "status"].tolist() == \
        ["incomplete", "incomplete", "incomplete", "running"]
    # what makes the merge safe: no ingest replaces the listener's copy of a run, so nothing
    # looks for its batches by their labels; the ingested cut copy is still one batch of its own
    known = E._Known.of(st)
    assert E._replaceable(st, "app-lost", known.runs["app-lost"]) == (None, "the listener recorded it")
    assert E._replaceable(st, "app-cut", known.runs["app-cut"]) == (cut, "")
    # a row of no known source stays going, as every incomplete run did
    assert C._going("incomplete", None) and C._going("incomplete", "eventlog") and C._going("running", "listener")
    assert not C._going("incomplete", "listener") and not C._going("succeeded", "eventlog")


def test_retrain_compact_merges_first_and_says_so(tmp_path, capsys, monkeypatch):
    """`retrain --compact` and `jobs/retrain.py --compact`: the nightly retrain keeps the store
    quick to read; its JSON carries `store compact --json`'s document under `compaction`."""
    import importlib.util
    import types

    from sparkpredict.cli import main

    class NoSpark:  # the models are current: neither may start a JVM here
        def __getattr__(self, name):
            pytest.fail(f"started Spark (SparkSession.{name})")

    st = _copies(tmp_path, 12)
    assert main(["retrain", "--local", "--no-stage-models", "--store", st.path]) == 0
    capsys.readouterr()
    # a --job without runs is refused before the store is rewritten
    assert main(["retrain", "--local", "--no-stage-models", "--compact", "--job", "nope", "--store", st.path]) == 2
    assert "no runs of job 'nope'" in capsys.readouterr().err and len(st.visible_marks()) == 12
    assert main(["retrain", "--local", "--no-stage-models", "--compact", "--dry-run",
                 "--store", st.path]) == 0
    assert "would merge 12 batches" in capsys.readouterr().out and len(st.visible_marks()) == 12
    assert main(["retrain", "--local", "--no-stage-models", "--compact", "--json",
                 "--store", st.path]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["compaction"]["merged"], out["compaction"]["batches_after"], out["refit"]) == (12, 1, [])
    assert len(st.visible_marks()) == 1

    # runs of no job (recorded without spark.sparkpredict.job): no model is behind, so no Spark
    st.append({"runs": st.read("runs").head(1).assign(run_id="late", app_id="late", job=None),
               "tasks": st.read("tasks").head(3).assign(run_id="late")})
    st.append({"runs": st.read("runs").head(1).assign(run_id="later", app_id="later", job=None)})
    fake = types.ModuleType("pyspark.sql")
    fake.SparkSession = NoSpark()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pyspark.sql", fake)
    spec = importlib.util.spec_from_file_location(
        "retrain_job", Path(__file__).resolve().parents[1] / "jobs" / "retrain.py")
    job = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(job)
    assert job.main(["--store", st.path, "--no-stage-models", "--compact"]) == 0
    said = capsys.readouterr()
    assert "merged 3 batches" in said.err
    assert json.loads(said.out.strip().splitlines()[-1])["compaction"]["batches_after"] == 1


def test_a_read_of_a_table_a_compacted_batch_has_no_file_of_lists_that_table_once(tmp_path, monkeypatch):
    """A compacted store whose batches wrote no ``host_samples``: the read finds the compacted
    batch without the table's file and asks who holds its rows. It listed the table's folder
    twice for that (once for the paths, once for the file infos), one more round trip on a
    remote store each read."""
    st = _copies(tmp_path, 4)
    C.compact(st, keep_s=0)
    real_listing = store_io.Store._listing
    listed: list[str] = []

    def listing(self, table):
        listed.append(table)
        return real_listing(self, table)

    monkeypatch.setattr(store_io.Store, "_listing", listing)
    assert store.open(st.path).read("host_samples").empty
    assert listed.count("host_samples") == 1, listed
    assert len(store.open(st.path).read("tasks")) == len(_copies(tmp_path / "again", 4).read("tasks"))


def test_an_arrow_read_of_a_table_with_no_rows_imports_no_pandas(tmp_path):
    """``form='arrow'`` is how a caller that needs no pandas reads; a table no batch wrote
    (``host_samples`` of a store of ingested runs) came back through pyarrow's
    ``Schema.empty_table``, which imports pandas: a second's import for no rows."""
    st = _copies(tmp_path, 2)
    code = ("import sys\nfrom sparkpredict import store\nst = store.open(sys.argv[1])\n"
            "t = st.read('host_samples', form='arrow')\n"
            "print(t.num_rows, t.schema.names == store.schema.TABLES['host_samples'].names, "
            "'pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(st.path)], capture_output=True, text=True,
                         check=True, env=dict(os.environ, PYTHONPATH=str(Path(__file__).parents[1])))
    assert out.stdout.split() == ["0", "True", "False"], out.stderr
