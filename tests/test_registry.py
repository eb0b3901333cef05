"""The model registry and the local retrain path (no JVM): artifacts, versions, incremental refits, faults."""
from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from sparkpredict import registry as R
from sparkpredict import registry_commit as RC
from sparkpredict import retrain as RT
from sparkpredict import retrain_plan as RP
from sparkpredict import store
from sparkpredict.cli import main
from sparkpredict.errors import InputError, ModelError, StoreError, UnknownJobError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from retrain_scaling import make_history, write_history

KIND = "amdahl"  # one equation: ~50x cheaper than "auto", same plumbing


def _models_json(st) -> dict[str, str]:
    reg = R.read_registry(st)
    return {r.job: json.dumps(R.read_artifact(st, r.artifact)["model"], sort_keys=True)
            for r in reg.itertuples()}


@pytest.fixture
def hist(tmp_path):
    runs = make_history(6, runs_per_job=12, seed=3)
    write_history(tmp_path / "store", runs, batches=2)
    return tmp_path / "store", runs


def test_local_retrain_registers_every_job_and_matches_the_fit_path(hist):
    path, runs = hist
    res = RT.retrain_local(path, kind=KIND)
    assert res.fit_path == "local" and res.refit == sorted(runs.job.unique()) and not res.failed
    reg = R.read_registry(path)
    assert list(reg.columns) == R.REGISTRY_SCHEMA.names
    assert set(reg.version) == {1} and set(reg.model_kind) == {"runtime"} and set(reg.n_runs) == {12}
    assert reg.cv_mape.between(0, 0.2).all()
    rng = json.loads(reg.training_range_json.iloc[0])
    assert rng["input_bytes"] == [2.0 * 2**30, 8.0 * 2**30] and rng["executors"] == [2.0, 16.0]
    # Same models as the `sparkpredict fit` path (runs_table + fit_all), byte for byte.
    from sparkpredict.features.runs import runs_table
    from sparkpredict.models.persist import fit_all

    direct = fit_all(runs_table(store.open(path)), random_state=0, kind=KIND)
    loaded = R.load_models(path)
    assert set(loaded) == set(direct)
    for job, m in direct.items():
        assert json.dumps(loaded[job].to_dict(), sort_keys=True) == json.dumps(m.to_dict(), sort_keys=True)
    # ... and they recover the generating equation (3 % noise): predictions within 10 %.
    g = runs[runs.job == "job-00000"]
    X = {"input_bytes": g.input_bytes.to_numpy(float), "executors": g.executors_requested.to_numpy(float)}
    pred = loaded["job-00000"].predict(X)
    assert np.median(np.abs(pred / (g.wall_ms.to_numpy() / 1000) - 1)) < 0.1


def test_incremental_refit_only_changed_jobs(hist):
    path, runs = hist
    RT.retrain_local(path, kind=KIND)
    before = R.read_registry(path).set_index("job")
    again = RT.retrain_local(path, kind=KIND)
    assert again.refit == [] and len(again.unchanged) == 6 and again.snapshot == R.current_snapshot(path)
    extra = runs[runs.job == "job-00002"].head(1).copy()
    extra["run_id"] = extra["app_id"] = "app-new-1"
    extra["updated_ms"] += 10**6
    store.open(path).append({"runs": extra})
    res = RT.retrain_local(path, kind=KIND)
    assert res.refit == ["job-00002"] and len(res.unchanged) == 5
    after = R.read_registry(path).set_index("job")
    assert after.loc["job-00002", "version"] == 2 and after.loc["job-00002", "n_runs"] == 13
    assert after.loc["job-00002", "trained_on"] != before.loc["job-00002", "trained_on"]
    unchanged = after.drop(index="job-00002")
    assert (unchanged.artifact == before.drop(index="job-00002").artifact).all()
    # Another model kind asked for: every job is stale.
    assert len(RT.plan(path, kind="ernest")[0]) == 6


def test_artifacts_are_json_and_load_without_pickle(hist, monkeypatch):
    path, _ = hist
    RT.retrain_local(path, kind=KIND)
    files = list((path / "_models" / "artifacts").rglob("*.json"))
    assert len(files) == 6
    assert all(json.loads(f.read_text())["format"] == R.ARTIFACT_FORMAT for f in files)
    assert not list((path / "_models").rglob(".*"))  # no temporary files left

    def no_pickle(*a, **k):
        raise AssertionError("pickle used to load a model")

    monkeypatch.setattr(pickle, "loads", no_pickle)
    monkeypatch.setattr(pickle, "load", no_pickle)
    assert len(R.load_models(path)) == 6
    # The store's history readers do not see the registry folder.
    assert len(store.open(path).runs()) == 6 * 12


def test_older_artifact_format_is_refused_then_refit(hist):
    path, _ = hist
    RT.retrain_local(path, kind=KIND)
    st = store.open(path)
    reg = R.read_registry(st)
    # Simulate a registry written by an older sparkpredict for job-00001 (artifact version 0).
    row = reg.job == "job-00001"
    art = path / "_models" / reg.loc[row, "artifact"].iloc[0]
    doc = json.loads(art.read_text())
    doc["artifact_version"] = 0
    art.write_text(json.dumps(doc))
    reg.loc[row, "artifact_version"] = 0
    RC.commit_registry(st, reg, R.new_retrain_id())
    with pytest.raises(ModelError) as e:
        R.load_models(path)
    assert "older" in str(e.value) and "sparkpredict retrain" in e.value.fix
    assert RT.plan(path, kind=KIND)[0] == ["job-00001"]
    res = RT.retrain_local(path, kind=KIND)
    assert res.refit == ["job-00001"]
    assert len(R.load_models(path)) == 6


def test_newer_and_foreign_artifacts_refused(hist):
    path, _ = hist
    RT.retrain_local(path, kind=KIND)
    reg = R.read_registry(path)
    art = path / "_models" / reg.artifact.iloc[0]
    doc = json.loads(art.read_text())
    art.write_text(json.dumps({**doc, "artifact_version": R.ARTIFACT_VERSION + 1}))
    with pytest.raises(ModelError, match="newer sparkpredict"):
        R.read_artifact(path, reg.artifact.iloc[0])
    art.write_bytes(pickle.dumps({"format": R.ARTIFACT_FORMAT}))  # a pickle planted in the store
    with pytest.raises(ModelError, match="not valid JSON"):
        R.load_models(path)


def test_unknown_job_and_empty_registry(hist):
    path, _ = hist
    assert R.load_models(path) == {} and R.current_snapshot(path) is None
    RT.retrain_local(path, kind=KIND)
    with pytest.raises(UnknownJobError) as e:
        R.load_models(path, jobs=["nope"])
    assert "retrain" in e.value.fix
    assert set(R.load_models(path, jobs=["job-00003"])) == {"job-00003"}


def test_bad_kind_and_degenerate_job_reported(hist):
    path, runs = hist
    with pytest.raises(InputError, match="unknown model kind"):
        RT.retrain_local(path, kind="nonsense")
    # A job with 2 runs cannot be fitted: reported as failed, the others are registered.
    tiny = runs[runs.job == "job-00000"].head(2).copy()
    tiny["job"] = "tiny"
    tiny["run_id"] = tiny["app_id"] = ["tiny-1", "tiny-2"]
    store.open(path).append({"runs": tiny})
    res = RT.retrain_local(path, kind=KIND)
    assert "tiny" in res.failed and len(res.refit) == 6
    assert "tiny" not in set(R.read_registry(path).job)


def test_exception_halfway_leaves_previous_registry_current(hist):
    path, _runs = hist
    RT.retrain_local(path, kind=KIND)
    snap, before = R.current_snapshot(path), _models_json(store.open(path))

    def boom(n):
        if n == 3:
            raise RuntimeError("injected failure after 3 artifacts")

    with pytest.raises(RuntimeError, match="injected"):
        RT.retrain_local(path, kind=KIND, force=True, on_artifact=boom)
    # Three new artifacts were written, but the registry did not move.
    assert len(list((path / "_models" / "artifacts").rglob("*.json"))) == 6 + 3
    assert R.current_snapshot(path) == snap
    assert _models_json(store.open(path)) == before
    assert len(R.load_models(path)) == 6
    # The next retrain completes and commits.
    res = RT.retrain_local(path, kind=KIND, force=True)
    assert len(res.refit) == 6 and R.current_snapshot(path) != snap
    assert set(R.read_registry(path).version) == {2}


def test_process_killed_mid_retrain_leaves_registry_loadable(tmp_path):
    path = tmp_path / "store"
    write_history(path, make_history(40, runs_per_job=12, seed=5), batches=2)
    RT.retrain_local(path, kind=KIND)
    snap, before = R.current_snapshot(path), _models_json(store.open(path))
    n0 = len(list((path / "_models" / "artifacts").rglob("*.json")))
    # "auto" fits take ~0.3-2 s each: plenty of time to kill the process between two artifacts.
    proc = subprocess.Popen([sys.executable, "-m", "sparkpredict", "retrain", "--store", str(path),
                             "--local", "--force", "--kind", "auto"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 240
        while time.time() < deadline and proc.poll() is None:
            if len(list((path / "_models" / "artifacts").rglob("*.json"))) >= n0 + 2:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "retrain finished before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert R.current_snapshot(path) == snap
    assert _models_json(store.open(path)) == before
    models = R.load_models(path)
    assert len(models) == 40 and all(m.name_ == "amdahl" for m in models.values())


def test_crash_before_the_commit_rename_leaves_no_visible_snapshot(hist, monkeypatch):
    """The snapshot is written under a hidden name; dying before the rename changes nothing."""
    path, _ = hist
    RT.retrain_local(path, kind=KIND)
    snap = R.current_snapshot(path)
    real_put = R._put_atomic

    def crash_before_rename(fs, dest, data):
        if "/registry/" not in dest:
            return real_put(fs, dest, data)
        d, name = dest.rsplit("/", 1)
        with fs.open_output_stream(f"{d}/.{name}.dead.tmp") as f:
            f.write(data[: len(data) // 2])  # half a file, as a killed writer leaves it
        raise OSError("disk full")

    monkeypatch.setattr(RC, "_put_atomic", crash_before_rename)  # the snapshot's writer
    with pytest.raises(StoreError, match="cannot write the model registry"):
        RT.retrain_local(path, kind=KIND, force=True)
    monkeypatch.undo()
    assert R.current_snapshot(path) == snap
    assert pq.read_table(path / "_models" / "registry" / snap).num_rows == 6
    assert len(R.load_models(path)) == 6


def test_cli_dry_run_and_retrain(hist, capsys):
    from sparkpredict.cli import main

    path, _ = hist
    assert main(["retrain", "--store", str(path), "--dry-run", "--json", "--kind", KIND]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["jobs"] == 6 and len(out["to_refit"]) == 6 and out["path"] == "local"
    assert main(["retrain", "--store", str(path), "--local", "--kind", KIND]) == 0
    assert "refit 6 of 6 job(s) on the local path" in capsys.readouterr().out
    assert main(["retrain", "--store", str(path / "missing"), "--local"]) == 2
    assert "no sparkpredict store" in capsys.readouterr().err


def test_auto_path_choice(monkeypatch):
    monkeypatch.setenv(RT.CROSSOVER_ENV, "100")
    assert RT.choose_path(99) == "local"
    assert RT.choose_path(100) == ("spark" if RT.spark_available() else "local")
    monkeypatch.delenv(RT.CROSSOVER_ENV)
    assert RT.crossover_jobs("amdahl") == RT.CROSSOVER_JOBS_EQUATION
    assert RT.crossover_jobs("auto") == RT.CROSSOVER_JOBS
    assert RT.choose_path(0) == "local"
    # jobs with stage models save Spark more time each: far fewer of them pay for its start-up
    n = RT.crossover_stage_jobs("auto")
    assert 15 <= n <= 30
    assert RT.choose_path(n - 1, "auto", n_stage=n - 1) == "local"
    assert RT.choose_path(n, "auto", n_stage=n) == ("spark" if RT.spark_available() else "local")
    assert RT.choose_path(n, "auto", n_stage=0) == "local"


def test_dry_run_counts_the_jobs_with_stage_models(capsys):
    from pathlib import Path

    from sparkpredict.cli import main

    history = Path(__file__).parent / "data" / "history"
    p = RT.plan_path(history, force=True)
    assert p["to_refit"] == p["stage_jobs"] == ["sort", "sqljoin", "wordcount"] and p["path"] == "local"
    assert RT.plan_path(history, force=True, stage_models=False)["stage_jobs"] == []
    assert main(["retrain", "--store", str(history), "--dry-run", "--force"]) == 0
    assert "3 of them with stage models" in capsys.readouterr().out


def test_fingerprint_ignores_row_order_and_null_updated():
    a = R.fingerprint(["r2", "r1"], [2, 1])
    assert a == R.fingerprint(["r1", "r2"], [1.0, 2.0])
    assert R.fingerprint(["r1"], [None]) == R.fingerprint(["r1"], [float("nan")]) != R.fingerprint(["r1"], [0])
    assert R.job_dir("a/b c") != R.job_dir("a_b c") and "/" not in R.job_dir("a/b c")


# ---- overlapping retrains -----------------------------------------------------------------------
HISTORY = Path(__file__).parent / "data" / "history"


@pytest.fixture
def history_copy(tmp_path):
    import shutil

    path = tmp_path / "hr"
    shutil.copytree(HISTORY, path)
    return path


def _append_run(path, runs, job, run_id, shift=10**6):
    extra = runs[runs.job == job].head(1).copy()
    extra["run_id"] = extra["app_id"] = run_id
    extra["updated_ms"] += shift
    store.open(path).append({"runs": extra})


def test_overlapping_retrains_the_later_commit_wins_and_keeps_the_other_ones_models(hist):
    """A starts, B starts later and commits first, then A commits: A's snapshot is current (it
    named its snapshot at the commit, not at its start), A's refits win where both refit a job,
    and B's refit of a job A never looked at is kept (A committed on top of B's snapshot)."""
    path, runs = hist
    RT.retrain_local(path, kind=KIND)
    _append_run(path, runs, "job-00001", "app-new-1")
    _append_run(path, runs, "job-00002", "app-new-2")
    b_result = []

    def b_commits_first(n):
        if n == 1:  # A has planned (job-00001, job-00002) and written its first artifact
            _append_run(path, runs, "job-00003", "app-new-3")  # a run A did not see
            b_result.append(RT.retrain_local(path, kind=KIND))

    a = RT.retrain_local(path, kind=KIND, on_artifact=b_commits_first)
    (b,) = b_result
    assert a.refit == ["job-00001", "job-00002"] and b.refit == ["job-00001", "job-00002", "job-00003"]
    assert R.current_snapshot(path) == a.snapshot != b.snapshot
    reg = R.read_registry(path).set_index("job")
    assert reg.loc["job-00001", "retrain_id"] == reg.loc["job-00002", "retrain_id"] == a.retrain_id
    assert reg.loc["job-00003", "retrain_id"] == b.retrain_id  # not lost: A did not refit it
    # B took version 2 first; A's refit is version 3, and its artifact's name says so
    assert reg.loc["job-00001", "version"] == 3 and "-v3-" in reg.loc["job-00001", "artifact"]
    assert (path / "_models" / reg.loc["job-00001", "artifact"]).is_file()
    assert len(R.load_models(path)) == 6 and RT.plan(path, kind=KIND)[0] == []


def test_a_retrain_without_stage_models_overlapping_a_full_one_loses_no_stage_model(history_copy):
    """The reviewer's reproduction: `retrain --local &` then, a second later, `retrain --local
    --no-stage-models`, which commits first. The full retrain's stage models stay registered."""
    path = history_copy
    b_result = []

    def b_commits_first(n):
        if n == 1:
            b_result.append(RT.retrain_local(path, stage_models=False))

    a = RT.retrain_local(path, on_artifact=b_commits_first)
    assert a.stage_refit == ["sort", "sqljoin", "wordcount"] and b_result[0].refit == a.refit
    assert R.current_snapshot(path) == a.snapshot
    reg = R.read_registry(path)
    assert sorted(reg[reg.model_kind == "stage"].job) == ["sort", "sqljoin", "wordcount"]
    assert set(reg.retrain_id) == {a.retrain_id}  # the later commit won every model both fitted
    assert sorted(R.load_stage_models(path)) == ["sort", "sqljoin", "wordcount"]


def _row(st, job, retrain_id):
    """Write one artifact of ``job`` and return its registry row (as a retrain's commit makes it)."""
    rel = R.artifact_relpath(job, R.KIND_RUNTIME, 1, retrain_id)
    R.write_artifact(st, rel, R.make_artifact(job, R.KIND_RUNTIME, {"version": 1}, trained_on="fp"))
    return {"job": job, "model_kind": R.KIND_RUNTIME, "signature": "", "version": 1, "trained_on": "fp",
            "artifact": rel, "retrain_id": retrain_id, "registry_version": R.REGISTRY_VERSION}


def test_a_commit_landing_between_reading_the_registry_and_the_rename_is_merged(hist, monkeypatch):
    """Where no commit lock can be taken (no fcntl, as on Windows; object stores), the race
    inside the commit itself: A reads the current snapshot, B commits, A renames its snapshot
    (without B's row). A sees B's snapshot appear and commits the merge of both."""
    path, _ = hist
    st = store.open(path)
    monkeypatch.setattr(RC, "fcntl", None)
    real_write = RC._write_snapshot
    a_id, b_id = R.new_retrain_id(), R.new_retrain_id()
    a_row, b_row = _row(st, "a-job", a_id), _row(st, "b-job", b_id)

    def b_in_between(st_, rows, retrain_id, after):
        if retrain_id == a_id and not b_done:
            b_done.append(RC.commit_update(st_, [b_row], b_id))
        return real_write(st_, rows, retrain_id, after)

    b_done: list = []
    monkeypatch.setattr(RC, "_write_snapshot", b_in_between)
    a_snap = RC.commit_update(st, [a_row], a_id)
    assert b_done and R.current_snapshot(st) == a_snap
    assert sorted(R.read_registry(st).job) == ["a-job", "b-job"]


def test_concurrent_commits_from_threads_keep_every_row(hist):
    import threading

    path, _ = hist
    st = store.open(path)
    for rnd in range(4):
        rows = [_row(st, f"job-{rnd}-{i}", R.new_retrain_id()) for i in range(4)]
        gate = threading.Barrier(len(rows))
        errors: list = []

        def commit(row, gate=gate, errors=errors):
            try:
                gate.wait()
                RC.commit_update(st, [row], row["retrain_id"])
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=commit, args=(r,)) for r in rows]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        have = set(R.read_registry(st).job)
        assert {r["job"] for r in rows} <= have, (rnd, sorted(have))


# ---- the commit lock, between real processes ------------------------------------------------------
# A committer in its own process. "commit": wait for SYNC/go, then commit ROW. "pause": commit ROW,
# but between reading the current snapshot and renaming its own, touch SYNC/a-read and wait up to
# WAIT s for SYNC/b-done; after the rename touch SYNC/a-renamed and hang (there, still inside its
# commit, it is killed: before it could look for commits made meanwhile).
_COMMITTER = """
import json, pathlib, sys, time
from sparkpredict import registry_commit as RC, store
path, row, sync, mode, wait = sys.argv[1], json.loads(sys.argv[2]), pathlib.Path(sys.argv[3]), sys.argv[4], float(sys.argv[5])
real = RC._write_snapshot

def paused(st, rows, retrain_id, after):
    (sync / "a-read").touch()
    end = time.monotonic() + wait
    while not (sync / "b-done").exists() and time.monotonic() < end:
        time.sleep(0.01)
    name = real(st, rows, retrain_id, after)
    (sync / "a-renamed").touch()
    time.sleep(600)
    return name

if mode == "pause":
    RC._write_snapshot = paused
else:
    while not (sync / "go").exists():
        time.sleep(0.005)
RC.commit_update(store.open(path), [row], row["retrain_id"])
if mode != "pause":
    (sync / "b-done").touch()
"""


def _committer(path, row, sync, mode="commit", wait=0.0):
    return subprocess.Popen([sys.executable, "-c", _COMMITTER, str(path), json.dumps(row), str(sync), mode,
                             str(wait)], stderr=subprocess.PIPE, text=True)


def _reap(*procs) -> None:
    """Kill what still runs and close each stderr pipe: an unclosed pipe is reported as a
    ResourceWarning wherever the garbage collector finds it, in some later test."""
    for p in procs:
        if p is None:
            continue
        if p.poll() is None:
            p.kill()
            p.wait(30)
        p.stderr.close()


def _wait_for(f, proc, timeout=60):
    deadline = time.time() + timeout
    while not f.exists():
        assert proc.poll() is None, proc.stderr.read()
        assert time.time() < deadline, f"{f.name} never came"
        time.sleep(0.01)


def test_concurrent_commits_from_processes_keep_every_row(hist, tmp_path):
    path, _ = hist
    st = store.open(path)
    rows = [_row(st, f"job-p{i}", R.new_retrain_id()) for i in range(4)]
    procs = [_committer(path, r, tmp_path) for r in rows]
    try:
        time.sleep(1.0)  # every process imported and waiting: they start their commits together
        (tmp_path / "go").touch()
        for p in procs:
            assert p.wait(120) == 0, p.stderr.read()
    finally:
        _reap(*procs)
    assert {r["job"] for r in rows} <= set(R.read_registry(st).job)


def test_a_commit_killed_right_after_its_rename_loses_no_rows_of_one_made_meanwhile(hist, tmp_path):
    """A reads the registry, B commits, A renames its snapshot (without B's row) and is killed
    before it looks for snapshots committed meanwhile. Without a lock B's row was lost (the
    current snapshot is A's); with it, B waits for A, and the kernel drops A's lock when A dies."""
    path, _ = hist
    st = store.open(path)
    a_row, b_row = _row(st, "a-job", R.new_retrain_id()), _row(st, "b-job", R.new_retrain_id())
    a = _committer(path, a_row, tmp_path, "pause", wait=3.0)
    b = None
    try:
        _wait_for(tmp_path / "a-read", a)
        b = _committer(path, b_row, tmp_path)
        (tmp_path / "go").touch()
        _wait_for(tmp_path / "a-renamed", a)
        a.send_signal(signal.SIGKILL)
        a.wait(30)
        assert b.wait(60) == 0, b.stderr.read()
    finally:
        _reap(a, b)
    assert {"a-job", "b-job"} <= set(R.read_registry(st).job)


def test_a_stuck_commit_times_out_the_next_with_a_fix_and_its_lock_dies_with_it(hist, tmp_path, capsys):
    """A commit hangs inside its lock: another one gives up after its timeout, saying how to
    find the holder, and changes nothing; `store clean` leaves the held lock file alone; once the
    holder is killed (SIGKILL: no cleanup of its own), the next commit goes through at once."""
    from sparkpredict.cli import main

    path, _ = hist
    RT.retrain_local(path, kind=KIND)
    st = store.open(path)
    before = R.current_snapshot(st)
    lock = path / "_models" / "registry" / RC.LOCK_NAME
    a = _committer(path, _row(st, "a-job", R.new_retrain_id()), tmp_path, "pause", wait=600)
    b_row = _row(st, "b-job", R.new_retrain_id())
    try:
        _wait_for(tmp_path / "a-read", a)
        t0 = time.monotonic()
        with pytest.raises(StoreError) as e:
            RC.commit_update(st, [b_row], b_row["retrain_id"], lock_timeout_s=0.5)
        assert 0.5 <= time.monotonic() - t0 < 5
        assert f"has held its commit lock {lock} for over 0.5 s" in e.value.message
        assert "the registry was not changed" in e.value.message and f"lsof {lock}" in e.value.fix
        assert R.current_snapshot(st) == before
        _age_all(path)
        assert main(["store", "clean", "--store", str(path), "--older-than", "0"]) == 0
        assert str(lock) not in capsys.readouterr().out and lock.is_file()
        a.send_signal(signal.SIGKILL)
        a.wait(30)
    finally:
        _reap(a)
    b_row = _row(st, "b-job", R.new_retrain_id())  # the clean removed the first one's artifact
    t0 = time.monotonic()
    snap = RC.commit_update(st, [b_row], b_row["retrain_id"], lock_timeout_s=30)
    assert time.monotonic() - t0 < 2 and R.current_snapshot(st) == snap != before
    assert "b-job" in set(R.read_registry(st).job) and "a-job" not in set(R.read_registry(st).job)


_AS_NOBODY = """
import json, os, shutil, sys, tempfile
from sparkpredict import registry_commit as RC, store
path, row = sys.argv[1], json.loads(sys.argv[2])
warm = tempfile.mkdtemp()
try:
    RC.commit_update(store.open(shutil.copytree(path, warm + "/store")), [row], "warm-up", lock_timeout_s=10)
finally:
    shutil.rmtree(warm)
os.setgroups([])
os.setgid(65534)
os.setuid(65534)
try:
    RC.commit_update(store.open(path), [row], row["retrain_id"], lock_timeout_s=10)
    print("ok" if os.getuid() == 65534 else f"ran as uid {os.getuid()}")
except BaseException as exc:
    print(f"{type(exc).__name__}: {exc}")
"""


def test_a_lock_file_another_user_left_read_only_does_not_stop_a_commit():
    """A store a team shares: folders everyone may write, files as the first committer's umask
    (022) left them. The commit lock file it created is then read-only to the others, and their
    commits failed ("cannot write to the model registry") where they had worked before the lock:
    flock needs no write access. As root the other user is a real one (nobody, in a
    subprocess); otherwise the lock file is made read-only to its owner, which open() treats alike."""
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="sp-shared-"))  # not under pytest's 0700 tmp folder
    try:
        path = base / "store"
        write_history(path, make_history(2, runs_per_job=12, seed=3), batches=1)
        st = store.open(path)
        RC.commit_update(st, [_row(st, "a-job", R.new_retrain_id())], "first")
        b_row = _row(st, "b-job", R.new_retrain_id())
        lock = path / "_models" / "registry" / RC.LOCK_NAME
        for d in [base, *(p for p in base.rglob("*") if p.is_dir())]:
            d.chmod(0o777)
        for f in (p for p in base.rglob("*") if p.is_file()):
            f.chmod(0o644)
        if os.geteuid() == 0:
            # a subprocess, not a fork of this multi-threaded one (a DeprecationWarning from 3.12):
            # started as root, since this interpreter may lie where nobody cannot reach it
            # (pyenv under /root), it imports all it needs by a commit on a copy of the store
            # and then becomes nobody
            proc = subprocess.run([sys.executable, "-c", _AS_NOBODY, str(path), json.dumps(b_row)],
                                  capture_output=True, text=True, timeout=120, check=False)
            said = proc.stdout.strip() or proc.stderr[-2000:]
        else:
            lock.chmod(0o444)
            try:
                RC.commit_update(st, [b_row], b_row["retrain_id"], lock_timeout_s=10)
                said = "ok"
            except StoreError as exc:
                said = f"StoreError: {exc}"
        assert said == "ok", said
        assert {"a-job", "b-job"} <= set(R.read_registry(store.open(path)).job)
        assert lock.is_file()
    finally:
        shutil.rmtree(base, ignore_errors=True)


# ---- staleness per model kind -------------------------------------------------------------------
def test_a_job_whose_runtime_fit_fails_does_not_refit_its_stage_model_every_time(history_copy):
    """One run: no whole-job model (tried again each time), but its stage model, fitted once,
    is current while its runs are unchanged: no new ~1 MB artifact, no new snapshot."""
    path = history_copy
    st = store.open(path)
    runs = st.runs()
    one = runs[(runs.job == "sqljoin") & (runs.status == "succeeded")].head(1)
    rid = one.run_id.iloc[0]
    st.append({"runs": one.assign(job="solo", run_id="solo-1", app_id="solo-1"),
               "stages": st.read("stages", run_ids=[rid]).assign(run_id="solo-1"),
               "tasks": st.read("tasks", run_ids=[rid]).assign(run_id="solo-1")})
    first = RT.retrain_local(path)
    assert "solo" in first.failed and "solo" in first.stage_refit
    artifacts = sorted((path / "_models" / "artifacts").rglob("*.json"))
    again = RT.retrain_local(path)
    assert again.refit == [] and again.stage_refit == [] and "solo" in again.failed
    assert sorted((path / "_models" / "artifacts").rglob("*.json")) == artifacts
    assert again.snapshot == first.snapshot
    assert RT.plan_path(path)["stage_jobs"] == []


def test_no_stage_models_is_incremental_when_a_stage_model_is_behind(history_copy):
    """--no-stage-models after new runs refits the whole-job model once, then nothing: the stage
    model's staleness is not its business. With stage models, only the stage model is refit."""
    path = history_copy
    first = RT.retrain_local(path)
    _append_run(path, store.open(path).runs(), "sort", "app-sort-new")
    res = RT.retrain_local(path, stage_models=False)
    assert res.refit == ["sort"] and res.stage_refit == [] and res.snapshot != first.snapshot
    for _ in range(2):
        nothing = RT.retrain_local(path, stage_models=False)
        assert nothing.refit == [] and nothing.snapshot == res.snapshot
        assert RT.plan(path, stage_models=False)[0] == []
        p = RT.plan_path(path, stage_models=False)
        assert p["to_refit"] == p["stage_jobs"] == []
    reg = R.read_registry(path).set_index(["job", "model_kind"])
    assert reg.loc[("sort", "runtime"), "version"] == 2 and reg.loc[("sort", "stage"), "version"] == 1
    # with stage models, sort's stage model is behind: only it is refit
    assert RT.plan_path(path)["stage_jobs"] == RT.plan(path)[0] == ["sort"]
    staged = RT.retrain_local(path)
    assert staged.refit == [] and staged.stage_refit == ["sort"] and RT.plan(path)[0] == []


# ---- a master Spark would refuse ----------------------------------------------------------------
def test_a_bad_master_is_refused_before_spark_starts(hist, capsys):
    from sparkpredict.cli import main

    path, _ = hist
    for argv in (["--master", "local[x]"], ["--master", "local[x]", "--dry-run"], ["--spark", "--master", "nope"]):
        assert main(["retrain", "--store", str(path), *argv]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: the master") and "\nfix: use yarn" in err and "Traceback" not in err
    assert R.current_snapshot(path) is None
    with pytest.raises(InputError, match="not one Spark accepts"):
        RT.retrain(path, master="local[x]")


@pytest.mark.spark
def test_spark_refusing_to_start_is_one_error_line(hist, env_of_spark_defaults):
    """A master the check passes but Spark refuses when its driver starts (a local-cluster of
    10 MiB workers for 1 GiB executors), in a fresh process and JVM: sparkpredict's error/fix
    lines, after Spark's error and its exception's first line, and no stack trace."""
    path, _ = hist
    before = sorted(p.relative_to(path) for p in path.rglob("*"))
    out = subprocess.run([sys.executable, "-m", "sparkpredict", "retrain", "--store", str(path),
                          "--master", "local-cluster[1,1,10]"], capture_output=True, text=True, timeout=300,
                         env=env_of_spark_defaults, check=False)
    err = out.stderr.splitlines()
    assert out.returncode == 2, out.stderr
    assert err[-2] == ("error: Spark did not start with master 'local-cluster[1,1,10]': Asked to launch "
                       "cluster with 10 MiB/worker but requested 1024 MiB/executor"), out.stderr
    assert err[-1].startswith("fix: give --master local[N]")
    assert not [ln for ln in err if ln.lstrip().startswith("at ") or "Traceback" in ln], out.stderr
    assert sorted(p.relative_to(path) for p in path.rglob("*")) == before  # nothing written


def test_a_master_of_no_threads_is_refused_before_spark_starts(hist, capsys):
    """local[0] passed the master check and failed inside the driver, after the JVM's start,
    with Spark's stack trace; local-cluster[0,...] likewise."""
    from sparkpredict.cli import main

    path, _ = hist
    for master, why, fix in (("local[0]", "asks for no task threads", "give local[N] with N at least 1"),
                             ("local-cluster[0,1,1024]", "asks for workers with no executors, cores or memory",
                              "give local-cluster[N,C,MiB] with N, C and MiB at least 1"),
                             ("local-cluster[2,0,1024]", "asks for workers with no executors, cores or memory",
                              "give local-cluster[N,C,MiB] with N, C and MiB at least 1")):
        assert main(["retrain", "--store", str(path), "--master", master]) == 2
        err = capsys.readouterr().err.splitlines()  # the check's error: before any Spark start
        assert len(err) == 2 and err[0] == f"error: the master '{master}' (--master) {why}", err
        assert err[1].startswith(f"fix: {fix}")


# ---- store clean: leftovers of killed retrains --------------------------------------------------
def _age_all(path, seconds=3600):
    old = time.time() - seconds
    for f in (path / "_models").rglob("*"):
        if f.is_file():
            os.utime(f, (old, old))


def test_store_clean_removes_registry_leftovers_and_nothing_a_snapshot_references(hist, capsys):
    from sparkpredict.cli import main

    path, _ = hist
    RT.retrain_local(path, kind=KIND)
    first = {f for f in (path / "_models").rglob("*") if f.is_file()}
    forced = RT.retrain_local(path, kind=KIND, force=True)  # the first snapshot's artifacts stay referenced

    def boom(n):
        if n == 3:
            raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        RT.retrain_local(path, kind=KIND, force=True, on_artifact=boom)
    models = path / "_models"
    (models / "registry" / ".part-9-x.parquet.deadbeef.tmp").write_bytes(b"half")
    (models / "artifacts" / ".leftover.json.cafe0001.tmp").write_bytes(b"half")
    kept = {f for f in models.rglob("*") if f.is_file()}
    lost = {f for f in kept if "-v3-" in f.name or f.name.endswith(".tmp")}
    assert len(lost) == 5
    # a retrain still running: its artifact is unreferenced but must stay
    running_id = R.new_retrain_id()
    RC.mark_running(path, running_id)
    busy = models / R.artifact_relpath("job-00000", "runtime", 9, running_id)
    busy.write_text("{}")
    _age_all(path)

    assert main(["store", "clean", "--store", str(path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    # registry files, not a batch's: the artifacts of the failed retrain and the .tmp leftovers
    assert "would remove 0 uncommitted file(s), and 5 file(s) of the model registry no kept snapshot needs" in out
    assert {Path(line.strip()) for line in out.splitlines()[1:]} == lost
    assert main(["store", "clean", "--store", str(path)]) == 0
    assert "removed 0 uncommitted file(s), and 5 file(s) of the model registry" in capsys.readouterr().out
    left = {f for f in models.rglob("*") if f.is_file()}
    assert left == (kept - lost) | {busy, models / "running" / running_id}
    assert first <= left  # the older snapshot can still be rolled back to
    assert R.current_snapshot(path) == forced.snapshot and len(R.load_models(path)) == 6
    # --older-than 0 means no writer is running: the marker no longer protects
    assert sorted(RC.orphans(path, 0)) == sorted(map(str, [busy, models / "running" / running_id]))
    # a snapshot that cannot be read: what it references is unknown, so nothing is removed
    (models / "registry" / "part-0000000000001-broken.parquet").write_bytes(b"not parquet")
    assert main(["store", "clean", "--store", str(path), "--older-than", "0"]) == 2
    err = capsys.readouterr().err
    assert "cannot be read" in err and "nothing was removed" in err and "\nfix: " in err
    assert busy.is_file()


def test_store_clean_says_what_it_keeps_of_a_retrain_marked_running(tmp_path, capsys):
    """After `retrain` was killed (SIGKILL: no unmark), a dry run said "would remove 0
    uncommitted file(s)" and nothing of its artifacts and mark, kept for a day."""
    from sparkpredict.cli import main

    path = tmp_path / "st"
    store.open(path, create=True)
    rid = R.new_retrain_id()
    RC.mark_running(path, rid)  # what retrain does before its first artifact
    for job in ("a", "b"):
        art = path / "_models" / R.artifact_relpath(job, "runtime", 1, rid)
        art.parent.mkdir(parents=True, exist_ok=True)
        art.write_text("{}")
    (path / "stages").mkdir(exist_ok=True)
    (path / "stages" / "part-999-young.parquet").write_bytes(b"x")  # a batch being written
    marker = path / "_models" / "running" / rid
    since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(marker.stat().st_mtime))
    for dry in (["--dry-run"], []):
        assert main(["store", "clean", "--store", str(path), *dry]) == 0
        cap = capsys.readouterr()
        assert cap.out.splitlines() == [f"store {path}: {'would remove' if dry else 'removed'} 0 uncommitted file(s)"]
        assert cap.err.splitlines() == [
            (f"kept 3 file(s) of retrain {rid}, marked running since {since}; "
             "pass --older-than 0 if that retrain is dead"),
            ("kept 1 uncommitted file(s) modified in the last 10m, in case their writer is still at work; "
             "pass --older-than 0 if none is running")]
    # an hour on, its files are past --older-than; the mark still keeps them (and says so)
    _age_all(path)
    assert main(["store", "clean", "--store", str(path), "--dry-run"]) == 0
    cap = capsys.readouterr()
    assert "would remove 0 uncommitted file(s)" in cap.out
    assert cap.err.splitlines()[0].startswith(f"kept 3 file(s) of retrain {rid}, marked running since ")
    assert main(["store", "clean", "--store", str(path), "--older-than", "0"]) == 0
    cap = capsys.readouterr()
    assert "removed 1 uncommitted file(s), and 3 file(s) of the model registry" in cap.out and cap.err == ""
    assert not marker.exists()


# ---- failed fits: recorded beside the models, not tried again on the same runs --------------------
def test_a_failed_fit_is_recorded_beside_the_models_until_its_runs_change(hist, monkeypatch):
    """A job too young to fit was fitted, and failed, at every retrain (and a --spark retrain
    started Spark for it). Its failure is now recorded in the snapshot's metadata, not as a
    model row: read_registry, the loaders and `store clean` see models only."""
    path, runs = hist
    tiny = runs[runs.job == "job-00000"].head(2).assign(job="tiny", run_id=["tiny-1", "tiny-2"],
                                                        app_id=["tiny-1", "tiny-2"])
    store.open(path).append({"runs": tiny})
    first = RT.retrain_local(path, kind=KIND)
    assert "tiny" in first.failed and first.still_failing == [] and len(first.refit) == 6
    assert "tiny" not in set(R.read_registry(path).job) and len(R.load_models(path)) == 6
    table = pq.read_table(path / "_models" / "registry" / first.snapshot)
    assert set(table.column("model_kind").to_pylist()) == {"runtime"}
    _reg, failures = R.read_registry_state(path)
    rec = failures[("tiny", "runtime")]
    assert rec["trained_on"] == R.runs_fingerprint(store.open(path).runs().query("job == 'tiny'"))
    assert (rec["fit_kind"], rec["artifact"], rec["trained_on_rows"]) == (KIND, None, 2)
    assert rec["error"] == first.failed["tiny"]
    assert RC.orphans(path, 0) == []

    again = RT.retrain_local(path, kind=KIND)
    assert again.refit == [] and again.still_failing == ["tiny"] and again.failed == first.failed
    assert again.snapshot == first.snapshot and len(again.unchanged) == 6
    # asked for another kind, or by another sparkpredict version: tried again
    assert "tiny" in RT.plan(path, kind="auto")[0]
    # another sparkpredict's code refits every model, the one it could not fit included
    monkeypatch.setattr(R, "fitted_by", lambda: "0.0.0-older")
    assert RT.plan(path, kind=KIND)[0] == sorted(set(R.read_registry(path).job) | {"tiny"})
    monkeypatch.undo()

    # two more runs: it fits, and the record of its failure is dropped
    more = runs[runs.job == "job-00000"].iloc[2:4].assign(job="tiny", run_id=["tiny-3", "tiny-4"],
                                                         app_id=["tiny-3", "tiny-4"])
    store.open(path).append({"runs": more})
    assert RT.plan(path, kind=KIND)[0] == ["tiny"]
    fits = RT.retrain_local(path, kind=KIND)
    assert fits.refit == ["tiny"] and not fits.failed
    assert R.read_registry_state(path)[1] == {}
    assert "tiny" in R.load_models(path)


def test_a_failed_fits_record_survives_an_overlapping_commit(hist, monkeypatch):
    """Where no lock can be taken, a commit landing inside another's is merged after the fact:
    the records of failed fits go through the same merge as the models (and a record whose
    model was fitted since is dropped)."""
    path, _ = hist
    st = store.open(path)
    monkeypatch.setattr(RC, "fcntl", None)
    RC.commit_update(st, [{**_row(st, "c-job", "c0"), "trained_at_ms": 1}], "c0")
    a_id, b_id = R.new_retrain_id(), R.new_retrain_id()
    a_fail = {"job": "a-job", "model_kind": R.failed_kind(R.KIND_RUNTIME), "signature": "", "version": 1,
              "trained_at_ms": 5, "trained_on": "fp-a", "artifact": None, "retrain_id": a_id,
              "registry_version": R.REGISTRY_VERSION, "error": "too few runs"}
    c_fail = {**a_fail, "job": "c-job", "trained_at_ms": 5, "error": "boom"}
    RC.commit_update(st, [c_fail], R.new_retrain_id())
    assert set(R.read_registry_state(st)[1]) == {("c-job", "runtime")}
    real_write = RC._write_snapshot
    b_done: list = []

    def b_in_between(st_, rows, retrain_id, after):
        if retrain_id == a_id and not b_done:  # B fits c-job, whose failure A's snapshot still holds
            b_done.append(RC.commit_update(st_, [_row(st_, "b-job", b_id),
                                                 {**_row(st_, "c-job", b_id), "trained_at_ms": 9}], b_id))
        return real_write(st_, rows, retrain_id, after)

    monkeypatch.setattr(RC, "_write_snapshot", b_in_between)
    RC.commit_update(st, [a_fail], a_id)
    reg, failures = R.read_registry_state(st)
    assert b_done and sorted(reg.job) == ["b-job", "c-job"]
    assert set(failures) == {("a-job", "runtime")} and failures[("a-job", "runtime")]["error"] == "too few runs"


def test_a_missing_artifact_is_refit_by_a_plain_retrain_and_a_damaged_one_names_force(hist):
    """The advice said "run `sparkpredict retrain`" for an artifact it could not load, and the
    retrain refit nothing: it judged the registry row, not the file, current."""
    from sparkpredict.advice_cache import registry_model
    from sparkpredict.features.runs import runs_table

    path, _runs = hist
    RT.retrain_local(path, kind=KIND)
    st = store.open(path)
    reg = R.read_registry(st)
    gone, cut = reg.artifact.iloc[0], reg.artifact.iloc[1]
    models = Path(path) / R.MODELS_DIR
    (models / gone).unlink()
    text = (models / cut).read_text()
    (models / cut).write_text(text[: len(text) // 2])
    raw = st.runs()

    def why(job):
        mine = raw[raw.job == job]
        model, note, _ = registry_model(job, st, mine, len(runs_table(mine)))
        assert model is None
        return note

    assert "is missing" in why(reg.job.iloc[0]) and f"retrain --store {st.path}`: it refits the jobs whose" \
        in why(reg.job.iloc[0])
    assert "is not valid JSON" in why(reg.job.iloc[1]) and "--force" in why(reg.job.iloc[1])
    state = RP._prev_state(reg, None, R.present_artifacts(st))
    assert {k for k, v in state.items() if v == RP.MISSING} == {(reg.job.iloc[0], "runtime")}
    assert state.keys() == {(j, "runtime") for j in reg.job}
    res = RT.retrain_local(path, kind=KIND)
    assert res.refit == [reg.job.iloc[0]]  # the missing one: refit without --force
    assert registry_model(reg.job.iloc[0], store.open(path), raw[raw.job == reg.job.iloc[0]], 12)[0] is not None


def test_a_damaged_artifact_names_a_refit_of_its_job_alone_which_leaves_the_others(hist, capsys):
    """`--force` alone refits every job of the store; the damaged model's fix now names its job,
    and `retrain --job J --force` refits that one, the other jobs' artifacts untouched."""
    from sparkpredict.advice_cache import registry_model
    from sparkpredict.features.runs import runs_table

    path, _runs = hist
    RT.retrain_local(path, kind=KIND)
    st = store.open(path)
    reg = R.read_registry(st)
    cut_job, cut = reg.job.iloc[1], reg.artifact.iloc[1]
    models = Path(path) / R.MODELS_DIR
    text = (models / cut).read_text()
    (models / cut).write_text(text[: len(text) // 2])
    raw = st.runs()
    mine = raw[raw.job == cut_job]
    model, note, _ = registry_model(cut_job, st, mine, len(runs_table(mine)))
    assert model is None and note.endswith(f"refit it: `sparkpredict retrain --store {st.path} --job {cut_job} "
                                           "--force`")
    # a plain retrain judges the row current (the file is there): the fix's --force is needed
    assert RT.retrain_local(path, kind=KIND).refit == []
    others = {r.job: (r.artifact, (models / r.artifact).read_bytes()) for r in reg.itertuples() if r.job != cut_job}
    # the dry run and the retrain name that job only
    assert main(["retrain", "--store", str(path), "--job", cut_job, "--force", "--dry-run", "--json"]) == 0
    planned = json.loads(capsys.readouterr().out)
    assert planned["to_refit"] == [cut_job] and planned["jobs"] == 1
    assert main(["retrain", "--store", str(path), "--job", cut_job, "--force", "--local", "--kind", KIND]) == 0
    assert capsys.readouterr().out.startswith("refit 1 of 1 job(s) on the local path")
    after = R.read_registry(store.open(path))
    assert sorted(after.job) == sorted(reg.job)
    assert {r.job: (r.artifact, (models / r.artifact).read_bytes()) for r in after.itertuples()
            if r.job != cut_job} == others
    assert int(after[after.job == cut_job].version.iloc[0]) == 2
    assert registry_model(cut_job, store.open(path), mine, len(runs_table(mine)))[0] is not None


def test_retrain_of_a_job_without_runs_is_refused_with_the_jobs_that_have_them(hist, capsys):
    path, _runs = hist
    jobs = sorted(store.open(path).runs().job.unique())
    for extra in ([], ["--dry-run"]):
        assert main(["retrain", "--store", str(path), "--job", jobs[0] + "x", *extra]) == 2
        err = capsys.readouterr().err
        assert f"error: no runs of job '{jobs[0]}x' in store" in err
        assert f"fix: did you mean {jobs[0]}? jobs with runs: {', '.join(jobs)}" in err
    assert R.current_snapshot(store.open(path)) is None  # refused before anything was written
    with pytest.raises(UnknownJobError, match="no runs of job 'nope'"):
        RT.retrain(path, jobs=["nope"], use_spark=False)
    # a bare name is one job, not its letters
    assert RT.retrain(path, jobs=jobs[2], use_spark=False, kind=KIND).refit == [jobs[2]]


@pytest.mark.parametrize("model", [[], "cut", None, 3, {}])
def test_an_artifact_whose_model_is_not_one_is_a_model_error_that_refits_its_job(hist, model):
    """`load_models` read the model's format as ``doc["model"].get("version")``: an artifact whose
    model was a list or a string (valid JSON, damaged) raised a bare AttributeError from the
    public API. It is now the error the advice names too: the artifact, and the refit of its job."""
    from sparkpredict.advice_cache import registry_model
    from sparkpredict.features.runs import runs_table

    path, _ = hist
    RT.retrain_local(path, kind=KIND)
    st = store.open(path)
    reg = R.read_registry(st)
    job, artifact = reg.job.iloc[0], reg.artifact.iloc[0]
    f = Path(path) / R.MODELS_DIR / artifact
    f.write_text(json.dumps({**json.loads(f.read_text()), "model": model}))

    with pytest.raises(ModelError) as e:
        R.load_models(path)
    assert str(e.value).startswith(f"model artifact {artifact!r} of job {job!r}"), e.value
    assert e.value.fix.endswith(f"--job {job} --force`"), e.value.fix
    assert len(R.load_models(path, jobs=list(reg.job.iloc[1:]))) == len(reg) - 1  # the others load

    raw = st.runs()
    mine = raw[raw.job == job]
    got, note, _ = registry_model(job, st, mine, len(runs_table(mine)))
    assert got is None
    assert f"unusable (model artifact {artifact!r} of job {job!r}" in note and note.endswith(f"--job {job} --force`"), note
