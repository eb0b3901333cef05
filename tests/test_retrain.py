"""The Spark retrain path gives the same models as the local fit (local[2] and local-cluster)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from sparkpredict import registry as R
from sparkpredict import retrain as RT
from sparkpredict import retrain_plan as RP
from sparkpredict import store

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from retrain_scaling import make_history, write_history

pytestmark = pytest.mark.spark

N_JOBS = 200
RUNS_PER_JOB = 10
KIND = "amdahl"  # one equation per job keeps 200 jobs x 3 paths inside the test budget


def _local_reference(st, kind: str = KIND, jobs=None) -> dict[str, str]:
    """The local path (`sparkpredict fit`): runs_table + fit_all, as JSON."""
    from sparkpredict.features.runs import runs_table
    from sparkpredict.models.persist import fit_all

    table = runs_table(st)
    if jobs is not None:
        table = table[table.job.isin(jobs)]
    return {j: json.dumps(m.to_dict(), sort_keys=True) for j, m in fit_all(table, kind=kind).items()}


def _registered(st, jobs=None) -> dict[str, str]:
    reg = R.read_registry(st)
    if jobs is not None:
        reg = reg[reg.job.isin(jobs)]
    return {r.job: json.dumps(R.read_artifact(st, r.artifact)["model"], sort_keys=True) for r in reg.itertuples()}


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    base = tmp_path_factory.mktemp("retrain")
    runs = make_history(N_JOBS, runs_per_job=RUNS_PER_JOB, seed=11)
    path = base / "store"
    write_history(path, runs, batches=4)
    st = store.open(path)
    # A run whose first row looked succeeded with an absurd runtime and whose latest row says
    # it failed: both paths must keep the latest row (and so leave the run out of the fit).
    flip = runs[runs.job == "job-00001"].head(1).copy()
    flip["run_id"] = flip["app_id"] = "app-flip"
    flip["wall_ms"], flip["updated_ms"] = 10**9, 1
    st.append({"runs": flip})
    st.append({"runs": flip.assign(status="failed", updated_ms=2)})
    # Stage rows: one committed batch, one whose runs file never came (invisible).
    stages = pd.DataFrame({"run_id": ["app-flip"] * 3, "stage_id": [0, 1, 2], "duration_ms": [5, 6, 7]})
    st.append({"runs": flip.assign(status="failed", updated_ms=2), "stages": stages})
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sparkpredict.store import schema as S

    pq.write_table(S.conform("stages", pa.Table.from_pandas(stages.assign(run_id="ghost"), preserve_index=False)),
                   path / "stages" / "part-9999999999999-dead-000000000000.parquet")
    return path, runs, _local_reference(st)


@pytest.mark.cluster
def test_spark_local_cluster_equals_local_fit(history, spark_app, tmp_path):
    path, _runs, ref = history
    st = store.open(path)
    with spark_app(tmp_path / "listener-store", job="retrain-test", master="local-cluster[2,1,1024]") as spark:
        res = RT.retrain_spark(path, spark=spark, kind=KIND, force=True)
    assert res.master.startswith("local-cluster") and len(res.refit) == N_JOBS and not res.failed
    assert _registered(st) == ref  # runs before the local[2] test, which adds runs


def test_spark_local2_equals_local_fit_incremental_and_faults(history, spark_app, tmp_path):
    path, runs, ref = history
    st = store.open(path)
    assert len(ref) == N_JOBS
    with spark_app(tmp_path / "listener-store", job="retrain-test", master="local[2]") as spark:
        res = RT.retrain_spark(path, spark=spark, kind=KIND, force=True)
        assert res.fit_path == "spark" and res.master == "local[2]"
        assert len(res.refit) == N_JOBS and not res.failed
        assert _registered(st) == ref  # same JSON, job by job
        # Spark's fingerprints equal the local ones: nothing is stale for the local planner.
        assert RT.plan(path, kind=KIND)[0] == []
        # The commit protocol: stage rows only from batches with a runs file.
        assert sorted(r.run_id for r in RT.read_committed_spark(spark, st, "stages").collect()) == ["app-flip"] * 3

        # Incremental: new runs for three jobs -> exactly those three refit.
        new = runs[runs.job.isin(["job-00005", "job-00050", "job-00150"])].groupby("job").head(1).copy()
        new["run_id"] = new["app_id"] = new["run_id"] + "-again"
        new["updated_ms"] += 10**7
        st.append({"runs": new})
        # groupBy.applyInPandas (the cogroup with stage rows is covered by the stage-model test)
        inc = RT.retrain_spark(path, spark=spark, kind=KIND, method="apply", stage_models=False)
        assert inc.refit == ["job-00005", "job-00050", "job-00150"] and len(inc.unchanged) == N_JOBS - 3
        reg = R.read_registry(st).set_index("job")
        assert reg.loc["job-00050", "version"] == reg.loc["job-00051", "version"] + 1
        assert _registered(st, inc.refit) == _local_reference(st, jobs=inc.refit)

        # An exception halfway through the Spark path's commit: previous registry stays current.
        snap, before = R.current_snapshot(st), _registered(st)

        def boom(n):
            if n == 50:
                raise RuntimeError("injected")

        with pytest.raises(RuntimeError, match="injected"):
            RT.retrain_spark(path, spark=spark, kind=KIND, force=True, jobs=sorted(ref)[:60], on_artifact=boom)
        assert R.current_snapshot(st) == snap and _registered(st) == before
        assert len(R.load_models(st)) == N_JOBS

        # The default "auto" models (GBM, forests, CV) are identical too, on a few jobs.
        few = ["job-00007", "job-00123"]
        auto = RT.retrain_spark(path, spark=spark, kind="auto", jobs=few)
        assert auto.refit == few
        assert _registered(st, few) == _local_reference(st, kind="auto", jobs=few)
        # ... and the job's session settings are restored.
        assert spark.conf.get("spark.sql.shuffle.partitions") == "4"




def test_stage_models_from_spark_equal_the_local_fit_and_load_from_the_registry(spark_app, tmp_path):
    """Stage-level models (a forest per stage signature) of the committed history: the Spark path
    (runs cogrouped with stage and task rows) writes the same artifacts as the local loop, and the
    registry's model predicts what a fresh fit predicts."""
    import shutil

    import numpy as np

    from sparkpredict.models.stages import StageRuntimeModel

    src = Path(__file__).parent / "data" / "history"
    local, spark_store = tmp_path / "local", tmp_path / "spark"
    shutil.copytree(src, local)
    shutil.copytree(src, spark_store)
    loc = RT.retrain_local(local)
    with spark_app(tmp_path / "listener-store", job="retrain-test", master="local[2]") as spark:
        sp = RT.retrain_spark(spark_store, spark=spark)
        # Staleness per model kind on the Spark path too: after a new run, --no-stage-models
        # refits the whole-job model once, then nothing; with stage models, only the stage model.
        inc = tmp_path / "incremental"
        shutil.copytree(spark_store, inc)
        runs = store.open(inc).runs()
        new = runs[runs.job == "sort"].tail(1).assign(run_id="app-sort-new", app_id="app-sort-new")
        store.open(inc).append({"runs": new.assign(updated_ms=new.updated_ms + 10**6)})
        once = RT.retrain_spark(inc, spark=spark, stage_models=False)
        assert once.refit == ["sort"] and once.stage_refit == []
        nothing = RT.retrain_spark(inc, spark=spark, stage_models=False)
        assert nothing.refit == [] and nothing.snapshot == once.snapshot
        staged = RT.retrain_spark(inc, spark=spark)
        assert staged.refit == [] and staged.stage_refit == ["sort"] and RT.plan(inc)[0] == []
        # A job that cannot be fitted: the executors' fingerprint of its runs is recorded with
        # its failure, so neither path tries it again on the same runs.
        _add_failed_run(inc)
        failing = RT.retrain_spark(inc, spark=spark)
        assert list(failing.failed) == ["failjob"] and failing.still_failing == [] and failing.exit_code == 0
        assert RT.plan_path(inc)["still_failing"] == ["failjob"] and RT.plan(inc)[0] == []
        still = RT.retrain_spark(inc, spark=spark)
        assert (still.refit, still.stage_refit, still.still_failing) == ([], [], ["failjob"])
        assert still.snapshot == failing.snapshot and still.unchanged == ["sort", "sqljoin", "wordcount"]
    jobs = ["sort", "sqljoin", "wordcount"]
    assert loc.stage_refit == sp.stage_refit == jobs and not loc.failed and not sp.failed

    def stage_docs(path):
        return {k[0]: json.dumps(d["model"], sort_keys=True) for k, d in R.load_artifacts(path, kind="stage").items()}

    assert stage_docs(local) == stage_docs(spark_store)
    assert all(json.loads(d)["forests"] for d in stage_docs(local).values())  # per-signature forests
    reg = R.read_registry(spark_store)
    assert sorted(reg[reg.model_kind == "stage"].job) == jobs

    st = store.open(src)
    runs = st.runs()
    fresh = StageRuntimeModel(store=st).fit(runs[runs.job == "sort"])
    loaded = R.load_stage_models(spark_store)["sort"]
    X = pd.DataFrame({"job": "sort", "input_bytes": [6 << 20, 64 << 20], "executors": [2, 4]})
    assert np.array_equal(loaded.predict(X), fresh.predict(X))
    # Unchanged runs: nothing is refit, the stage models included.
    again = RT.retrain_local(spark_store)
    assert again.refit == [] and again.stage_refit == [] and again.unchanged == jobs


# ---- what the Spark path refuses or skips before its session starts ----------------------------
HISTORY = Path(__file__).parent / "data" / "history"


def test_an_unknown_kind_is_refused_by_the_dry_run_as_by_the_retrain(capsys):
    """--dry-run said '3 of 3 job(s) would be refit' (rc 0) for a kind the retrain refuses."""
    from sparkpredict.cli import main
    from sparkpredict.errors import InputError

    for extra in ([], ["--local"], ["--dry-run"], ["--dry-run", "--json"], ["--dry-run", "--spark"]):
        assert main(["retrain", "--store", str(HISTORY), "--kind", "nope", *extra]) == 2, extra
        captured = capsys.readouterr()
        assert captured.err.startswith("error: unknown model kind 'nope'"), extra
        if "--json" in extra:
            assert json.loads(captured.out)["error"] == "unknown model kind 'nope'"
        else:
            assert not captured.out, extra
    with pytest.raises(InputError, match="unknown model kind"):
        RT.plan_path(HISTORY, kind="nope")


class _FakeBuilder:
    """pyspark.sql.SparkSession.builder's stand-in: records the log configuration the driver JVM
    would start with, and starts nothing."""

    def __init__(self, started: list):
        self.started = started

    def __getattr__(self, name):
        return lambda *a, **k: self

    def getOrCreate(self):
        import os

        self.started.append(os.environ.get("LOG4J_CONFIGURATION_FILE"))
        raise RuntimeError("no Spark in this test")


@pytest.fixture
def current_store(tmp_path, monkeypatch):
    """A copy of the test history whose whole-job models are all current, and a fake pyspark.sql
    that records each session start (the list it returns)."""
    import shutil
    import types

    path = tmp_path / "h"
    shutil.copytree(HISTORY, path)
    assert RT.retrain_local(path, stage_models=False).refit == ["sort", "sqljoin", "wordcount"]
    started: list = []
    fake = types.ModuleType("pyspark.sql")
    fake.SparkSession = types.SimpleNamespace(builder=_FakeBuilder(started))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pyspark.sql", fake)
    return path, started


def _job_script():
    import importlib.util

    spec = importlib.util.spec_from_file_location("retrain_job", Path(__file__).resolve().parents[1] / "jobs" / "retrain.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_nothing_stale_starts_no_spark_and_a_started_one_logs_errors_only(current_store, monkeypatch, capsys,
                                                                         env_of_spark_defaults):
    """A no-op `retrain --spark` took 54 s (a JVM, every job shipped to a worker to be found
    unchanged) against 0.1 s locally, and printed Spark's INFO/WARN lines."""
    from sparkpredict.cli import main

    path, started = current_store
    argv = ["retrain", "--store", str(path), "--spark", "--master", "local[2]", "--no-stage-models"]
    assert main(argv) == 0
    line = capsys.readouterr().out.splitlines()[0]
    # it said "on the spark (local[2]) path" though no Spark was started
    assert line.startswith("refit 0 of 3 job(s) in ") and line.endswith(
        "s: nothing to refit, answered from the store without starting Spark; 3 unchanged, 0 failed")
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # no master: none was used (jobs/retrain.py says the same)
    assert (out["path"], out["master"], out["refit"], out["unchanged"]) == ("spark", None, [], 3)
    assert out["spark_started"] is False and out["still_failing"] == []
    assert out["snapshot"] == R.current_snapshot(path)
    job = _job_script()  # spark-submit jobs/retrain.py: not even a session
    assert job.main(["--store", str(path), "--no-stage-models"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["path"], out["refit"], out["unchanged"], out["failed"]) == ("spark", [], 3, {})
    # limited to one job, it judges that one; a job without runs is refused before any session
    assert job.main(["--store", str(path), "--no-stage-models", "--job", "sort"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["refit"], out["unchanged"], out["jobs"]) == ([], 1, 1)
    for where in (str(path), Path(path).resolve().as_uri()):  # a URI is not opened ahead: same refusal
        assert job.main(["--store", where, "--job", "sorts"]) == 2
        assert "error: no runs of job 'sorts' in store" in capsys.readouterr().err
    assert main([*argv, "--job", "sorts"]) == 2
    assert "fix: did you mean sort?" in capsys.readouterr().err
    # a --json-out that cannot take the file is refused before any work (it was found after the
    # registry's commit, an exit 2, its temporary file left beside it)
    snap = R.current_snapshot(path)
    outdir = Path(path).parent / "outdir"
    outdir.mkdir()
    assert job.main(["--store", str(path), "--no-stage-models", "--force", "--json-out", str(outdir)]) == 2
    assert f"error: output '{outdir}' is a folder" in capsys.readouterr().err
    assert R.current_snapshot(path) == snap and list(Path(path).parent.glob(".outdir*")) == []
    assert started == []

    # A stale job starts Spark, quietly (sweep's log4j configuration): in a fresh process, with
    # a real driver JVM, its own lines only; no INFO or WARN line of Spark's.
    runs = store.open(path).runs()
    new = runs[runs.job == "sort"].tail(1).assign(run_id="app-sort-new", app_id="app-sort-new")
    store.open(path).append({"runs": new.assign(updated_ms=new.updated_ms + 10**6)})
    out = subprocess.run([sys.executable, "-m", "sparkpredict", *argv[:-2], "local[1]", "--no-stage-models"],
                         capture_output=True, text=True, timeout=600, env=env_of_spark_defaults, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("refit 1 of 3 job(s) on the spark (local[1]) path in "), out.stdout
    assert out.stdout.splitlines()[0].endswith("s; 2 unchanged, 0 failed")
    spark_lines = [ln for ln in out.stderr.splitlines() if re.match(r"\d\d/\d\d/\d\d \d\d:\d\d:\d\d (INFO|WARN) ", ln)]
    assert spark_lines == [], out.stderr
    assert started == []  # the fake of this process was never asked: the child started its own

    # In this process (the fake records the log configuration the JVM would start with): the
    # quiet configuration is set for the JVM's start alone, and -v leaves Spark's own.
    from sparkpredict import sweep_session

    store.open(path).append({"runs": new.assign(run_id="app-sort-new2", app_id="app-sort-new2",
                                                updated_ms=new.updated_ms + 2 * 10**6)})
    monkeypatch.setattr(sweep_session, "_jvm_started", lambda: False)
    monkeypatch.setattr(sweep_session, "_user_log_config", lambda conf: False)
    monkeypatch.delenv("LOG4J_CONFIGURATION_FILE", raising=False)
    assert main(argv) == 2 and main(["-v", *argv]) == 2
    assert "Spark did not start" in capsys.readouterr().err
    assert started == [str(sweep_session.QUIET_SPARK_LOG), None]
    assert "LOG4J_CONFIGURATION_FILE" not in os.environ  # only for the JVM's start


# ---- a job whose fit failed is not tried again, nor starts Spark, until its runs change ----------
def _add_failed_run(path, run_id="failjob-1", job="failjob"):
    """A run of a new job that failed: the job has no succeeded run, so no model can be fitted."""
    runs = store.open(path).runs()
    row = runs[runs.job == "sort"].tail(1).assign(job=job, status="failed", run_id=run_id, app_id=run_id)
    store.open(path).append({"runs": row.assign(updated_ms=row.updated_ms + 10**6)})


def test_a_job_whose_fit_failed_starts_no_spark_until_its_runs_change(current_store, capsys):
    """A job with only a failed run made every `retrain --spark` start Spark (51.5 s, to refit
    nothing) and every --dry-run say '1 of 4 job(s) would be refit': no record of the failed fit
    was kept, so the job was stale for ever."""
    from sparkpredict.cli import main

    path, started = current_store
    _add_failed_run(path)
    first = RT.retrain_local(path, stage_models=False)
    assert first.refit == [] and list(first.failed) == ["failjob"] and first.not_enough_runs == ["failjob"]
    # the message and its fix, not the error's class; skipped, not an error: exit status 0
    assert first.failed["failjob"].startswith("no succeeded run (1 failed) (fix: ")
    assert (first.skipped, first.errors, first.exit_code) == (first.failed, {}, 0)
    assert RT.plan(path, stage_models=False) == ([], 4)  # it said (["failjob"], 4) every time
    plan = RT.plan_path(path, stage_models=False)
    assert (plan["to_refit"], plan["still_failing"]) == ([], ["failjob"])
    assert first.still_failing == []  # it failed now: tried, not "still" failing
    assert "failjob" not in set(R.read_registry(path).job)  # no model row: a record beside them
    _reg, failures = R.read_registry_state(path)
    assert set(failures) == {("failjob", "runtime")}
    assert main(["retrain", "--store", str(path), "--dry-run", "--no-stage-models"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("0 of 4 job(s) would be refit")
    assert "1 still skipped (its runs have not changed: failjob)" in out

    argv = ["retrain", "--store", str(path), "--spark", "--master", "local[2]", "--no-stage-models"]
    for _ in range(2):
        assert main(argv) == 0
        lines = capsys.readouterr().out.splitlines()
        assert "answered from the store without starting Spark; 3 unchanged, 0 failed, " \
               "1 still skipped (its runs have not changed: failjob)" in lines[0]
        assert lines[1].startswith("  skipped: failjob: no succeeded run (1 failed) (not tried again until its "
                                   "runs change, or with --force)"), lines[1]
        assert lines[2].startswith("    fix: ") and "Error" not in "".join(lines)
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["refit"], out["unchanged"], out["still_failing"], out["spark_started"]) == ([], 3, ["failjob"], False)
    assert list(out["skipped"]) == ["failjob"] and out["failed"] == {} and out["snapshot"] == first.snapshot
    assert _job_script().main(["--store", str(path), "--no-stage-models"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["path"], out["still_failing"], out["spark_started"]) == ("spark", ["failjob"], False)
    assert started == []
    # the local path neither: nothing fitted, nothing committed
    again = RT.retrain_local(path, stage_models=False)
    assert (again.refit, again.unchanged, again.still_failing) == ([], ["sort", "sqljoin", "wordcount"], ["failjob"])
    assert again.snapshot == first.snapshot and again.exit_code == 0

    # --force tries it again; so does a new run of the job, which starts Spark
    forced = RT.retrain_local(path, stage_models=False, force=True)
    assert "failjob" in forced.failed and forced.still_failing == []
    assert RT.plan_path(path, stage_models=False)["still_failing"] == ["failjob"]
    _add_failed_run(path, "failjob-2")
    plan = RT.plan_path(path, stage_models=False)
    assert (plan["to_refit"], plan["still_failing"]) == (["failjob"], [])
    assert main(argv) == 2 and "Spark did not start" in capsys.readouterr().err
    assert len(started) == 1


def test_a_store_whose_jobs_cannot_fit_exits_the_same_each_time(tmp_path, monkeypatch, capsys):
    """Not trying a failed fit again must not change the retrain's exit status: the status
    follows the registry's state, tried again or not. A job too young to fit is skipped (0:
    "9 failed" and exit 1 for a store of ingested logs told a scheduler the retrain broke); a fit
    that raised an error fails the retrain (1) until its runs change."""
    import types

    from sparkpredict import fitting
    from sparkpredict.cli import main

    path = tmp_path / "only-failing"
    runs = make_history(1, runs_per_job=2, seed=5)  # 2 runs: too few for a whole-job model
    write_history(path, runs, batches=1)
    job = runs.job.iloc[0]
    started: list = []
    fake = types.ModuleType("pyspark.sql")
    fake.SparkSession = types.SimpleNamespace(builder=_FakeBuilder(started))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pyspark.sql", fake)
    first = RT.retrain_local(path)
    assert list(first.skipped) == [job] and first.errors == {} and first.exit_code == 0
    for argv in (["--local"], ["--spark"], ["--spark", "--json"]):
        assert main(["retrain", "--store", str(path), *argv]) == 0, argv
        assert started == [], argv  # --spark: no Spark for a fit that would fail again
        out = capsys.readouterr().out
        assert "1 still skipped" in out or json.loads(out)["still_failing"] == [job]
    assert _job_script().main(["--store", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["still_failing"] == [job]

    more = make_history(1, runs_per_job=6, seed=5).iloc[2:].assign(job=job)  # enough runs to fit
    store.open(path).append({"runs": more})

    def broken(*a, **k):
        raise ValueError("boom")

    monkeypatch.setattr(fitting, "fit_group", broken)
    first = RT.retrain_local(path, stage_models=False)
    assert first.errors == {job: "ValueError: boom"} and first.skipped == {} and first.exit_code == 1
    for argv in (["--local"], ["--spark"], ["--spark", "--json"]):
        assert main(["retrain", "--store", str(path), "--no-stage-models", *argv]) == 1, argv
        out = capsys.readouterr().out
        assert "1 still failing" in out or json.loads(out)["failed"] == {job: "ValueError: boom"}
    assert _job_script().main(["--store", str(path), "--no-stage-models"]) == 1
    assert json.loads(capsys.readouterr().out)["still_failing"] == [job]
    assert started == []


def test_the_spark_workers_judge_a_failed_fit_as_the_local_path_does(current_store):
    """The executors' judge is the local one: a job whose fit failed on its runs comes back
    'still_failing' (it was fitted, and failed, at every retrain); a new run makes it fail anew,
    with the fingerprint the driver records."""
    from sparkpredict import retrain_spark as RS

    path, _started = current_store
    _add_failed_run(path)
    RT.retrain_local(path, stage_models=False)
    prev, failures = R.read_registry_state(path)
    udf = RS._make_udf(0, "auto", False, RP._prev_state(prev, failures), False)
    runs = store.open(path).runs()
    out = udf(runs[runs.job == "failjob"])
    assert list(out.columns) == RS._UDF_COLUMNS
    assert out[["job", "kind", "status"]].values.tolist() == [["failjob", "runtime", "still_failing"]]
    assert udf(runs[runs.job == "sort"])["status"].tolist() == ["unchanged"]
    forced = RS._make_udf(0, "auto", True, RP._prev_state(prev, failures), False)(runs[runs.job == "failjob"])
    assert forced["status"].tolist() == ["failed"]
    _add_failed_run(path, "failjob-2")
    runs = store.open(path).runs()
    mine = runs[runs.job == "failjob"]
    out = udf(mine)
    assert out["status"].tolist() == ["failed"]
    assert (out["trained_on"].iloc[0], out["trained_on_rows"].iloc[0]) == (R.runs_fingerprint(mine), 2)


def test_spark_reads_a_compacted_store_once(spark_app, tmp_path):
    """Spark reads every row once while the replaced batches' files are still there (they stay
    10 minutes for readers that listed the store before the compaction)."""
    import shutil

    from sparkpredict.store.compact import compact

    shutil.copytree(Path(__file__).parent / "data" / "history", tmp_path / "st")
    st = store.open(tmp_path / "st")
    src = st.read("runs")
    for i in range(3):
        st.append({"runs": src.head(1).assign(run_id=f"extra-{i}", app_id=f"extra-{i}"),
                   "tasks": st.read("tasks").head(7).assign(run_id=f"extra-{i}")})
    # two rows of one run with one updated_ms (two flushes in one millisecond): the later
    # batch's row is the run's latest, and stays so once both rows share a compacted file
    tie = src.head(1).assign(run_id="tie", app_id="tie", updated_ms=5)
    st.append({"runs": tie.assign(app_name="first")})
    st.append({"runs": tie.assign(app_name="second")})
    want = {t: len(st.read(t)) for t in ("stages", "tasks")}
    runs = st.runs()
    assert runs.set_index("run_id").loc["tie", "app_name"] == "second"
    r = compact(st)
    assert r.merged >= 5 and st.replaced_files(0)
    assert st.runs().set_index("run_id").loc["tie", "app_name"] == "second"
    with spark_app(tmp_path / "listener-store", job="retrain-test", master="local[2]") as spark:
        latest = RT.read_runs_spark(spark, st)
        assert latest.count() == int(runs.job.notna().sum())
        assert latest.where("run_id = 'tie'").collect()[0]["app_name"] == "second"
        for t, n in want.items():
            assert RT.read_committed_spark(spark, st, t).count() == n
        # a compacted batch's tasks file lost: refused as Store.read refuses it, where Spark read
        # the batch's runs without their tasks (tests/test_compacted_lost_file.py)
        from sparkpredict.errors import StoreError
        from sparkpredict.store import io as store_io

        lost = next(b for b in st.visible_marks() if store_io.is_compacted(b)
                    and (tmp_path / "st" / "tasks" / f"part-{b}.parquet").exists())
        (tmp_path / "st" / "tasks" / f"part-{lost}.parquet").unlink()
        with pytest.raises(StoreError, match=f"'tasks/part-{lost}.parquet' of a compacted batch is missing"):
            RT.read_committed_spark(spark, st, "tasks")
