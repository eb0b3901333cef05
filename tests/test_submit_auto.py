"""``sparkpredict submit --executors auto``: the advised count reaches Spark.

A store holds a synthetic history of job ``etl`` (runtime law known, see
tests/test_advise_history.py); a real spark-submit of a tiny PySpark job with
``--executors auto`` must run with ``spark.executor.instances`` = the advice's count, recorded by
the listener in the new run's properties.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import pytest

from sparkpredict import store as store_mod
from sparkpredict import suggest_executors
from sparkpredict.cli import main

sys.path.insert(0, os.path.dirname(__file__))
from test_advise_history import history, make_store

TINY_JOB = """\
from pyspark.sql import SparkSession
spark = SparkSession.builder.getOrCreate()
print("count", spark.range(1000).count())
spark.stop()
"""


@pytest.mark.spark
def test_auto_executors_reach_spark(tmp_path, capsys):
    from sparkpredict.advice_source import HistorySource
    from sparkpredict.advise import default_max_executors
    from sparkpredict.capture.submit_args import local_executor_limit

    path = make_store(tmp_path / "store", history())
    # for the run's own shape: on a local master its memory is the driver's (--driver-memory 512m),
    # and its count at most what this machine runs (a sweep's limit)
    top = min(default_max_executors(HistorySource.resolve("etl", store=path)),
              local_executor_limit(["--master", "local[1]"]))
    expected = suggest_executors("etl", "30GB", deadline_s="7m30s", executor_memory_mb=512, store=path,
                                 max_executors=top)
    assert expected.executors > 1  # a count Spark would not pick by itself
    job = tmp_path / "tiny.py"
    job.write_text(TINY_JOB)
    before = set(store_mod.open(path).runs().run_id)
    rc = main(["submit", "--store", path, "--job", "etl", "--executors", "auto", "--input-size", "30GB",
               "--deadline", "7m30s", "--param", "iterations=3", "--", "--master", "local[1]", "--conf", "spark.ui.enabled=false",
               "--conf", "spark.sparkpredict.tasks=false",  # no task rows: a shorter flush
               "--driver-java-options", "-XX:TieredStopAtLevel=1",  # faster start of a short JVM
               "--driver-memory", "512m", str(job)])
    assert rc == 0
    captured = capsys.readouterr()
    # the advice was shown before the run, on stderr with submit's other lines: the job's
    # stdout is the job's own
    assert f"sparkpredict: advice: {expected.summary()}" in captured.err
    assert expected.summary() not in captured.out
    # the history never declared the parameter: recorded with this run, not used by the advice
    assert "iterations are new to etl's history" in captured.err
    runs = store_mod.open(path).runs()
    new = runs[~runs.run_id.isin(before)]
    assert len(new) == 1
    row = new.iloc[0]
    props = json.loads(row.properties_json)
    # spark-submit maps --num-executors to spark.executor.instances on YARN/Kubernetes only; on
    # other masters the count must travel as --conf spark.executor.instances=N to reach Spark.
    assert props.get("spark.executor.instances") == str(expected.executors), (
        "the advised count did not reach Spark: "
        f"{ {k: v for k, v in props.items() if k.startswith('spark.executor.')} }")
    assert int(row.executors_requested) == expected.executors
    # local[1] would run the advised count on one thread: the master becomes local[E] (1 core
    # per executor, as the sweep records local runs), and the run's slots say so
    assert row.master == f"local[{expected.executors}]" and int(row.task_slots) == expected.executors
    assert f"master local[1] (--master) runs as local[{expected.executors}]" in captured.err
    assert row.job == "etl" and row.status == "succeeded"
    assert int(row.input_bytes) == 30 * 10**9  # --input-size declared to the listener
    assert props.get("spark.sparkpredict.param.iterations") == "3"
    from sparkpredict.features.runs import runs_table

    assert runs_table(path).set_index("run_id").loc[row.run_id, "iterations"] == 3.0
    # the model with the new run was fitted as the run ended: the next suggest, in a new process,
    # loads it and never imports scikit-learn (which a refit needs)
    import subprocess

    probe = ("import sys; from sparkpredict.advice_source import HistorySource; "
             f"HistorySource.resolve('etl', store={path!r}); print('sklearn' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0 and r.stdout.strip() == "False", r.stdout + r.stderr


def test_auto_with_dynamic_allocation_sets_the_bounds(tmp_path):
    from sparkpredict.cli.submit import executor_settings

    path = make_store(tmp_path / "store", history())
    args = argparse.Namespace(executors="auto", job="etl", deadline="10m", objective="cost", store=path)
    n, conf = executor_settings(args, ["--master", "yarn", "--conf", "spark.dynamicAllocation.enabled=true",
                                       "job.py"], 30 * 10**9)
    a = suggest_executors("etl", 30 * 10**9, deadline_s=600, store=path)
    assert n is None
    assert conf == {"spark.dynamicAllocation.minExecutors": str(a.dynamic_allocation[0]),
                    "spark.dynamicAllocation.maxExecutors": str(a.dynamic_allocation[1])}
    assert a.dynamic_allocation[0] <= a.executors <= a.dynamic_allocation[1]


@pytest.mark.parametrize("extra,needle", [
    (["--job", "nightly", "--input-size", "1GB"], "no job 'nightly'"),
    (["--job", "etl"], "error: --executors auto needs --input-size\nfix: add --input-size 120g"),
    (["--input-size", "1GB"], ("error: --executors auto needs --job\nfix: add --job NAME, the job whose runs "
                              "the advice reads (in the store: etl)")),
    (["--job", "etl", "--input-size", "1GB", "--deadline", "soon"], "as a duration"),
    (["--job", "etl", "--input-size", "1GB", "--param", "iterations=lots"], "'lots' is not a number"),
])
def test_auto_with_bad_input_submits_nothing(tmp_path, capsys, extra, needle):
    path = make_store(tmp_path / "store", history(sizes=(10, 20), execs=(1, 2), repeats=1))
    before = store_mod.open(path).runs()
    rc = main(["submit", "--store", path, "--executors", "auto", *extra, "--", "--master", "local[1]", "x.py"])
    err = capsys.readouterr().err
    assert rc == 2 and needle in err, err
    assert len(store_mod.open(path).runs()) == len(before)  # nothing ran, nothing recorded


def test_auto_advises_from_the_store_the_listener_will_write(tmp_path, capsys, monkeypatch):
    """The store may be named only by --conf spark.sparkpredict.store (or a cluster's
    spark-defaults.conf): the advice must read that one, not the default store."""
    monkeypatch.setenv("SPARKPREDICT_STORE", str(tmp_path / "default-store"))
    path = make_store(tmp_path / "store", history(sizes=(10, 20), execs=(1, 2), repeats=1))
    conf = ["--conf", f"spark.sparkpredict.store={path}", "--master", "local[1]", "x.py"]
    rc = main(["submit", "--executors", "auto", "--job", "nightly", "--input-size", "1GB", "--", *conf])
    err = capsys.readouterr().err
    assert rc == 2 and "no job 'nightly'" in err and "use one of: etl" in err, err
    # a first submit is not a mistake to correct with another job's name: it says how to start
    assert "fix: submit its first run with --executors N: the next submit advises from it" in err and "if 'nightly' is mistyped, use one of: etl" in err
    rc = main(["submit", "--store", str(tmp_path / "other"), "--executors", "auto", "--job", "etl",
               "--input-size", "1GB", "--", *conf])
    assert rc == 2 and "name different stores" in capsys.readouterr().err
    assert not (tmp_path / "default-store").exists() and not (tmp_path / "other").exists()


def test_auto_leads_with_the_known_job_a_name_is_a_typo_of(tmp_path, capsys):
    """`--job etll` led with "submit its first run", the known job it was a typo of last."""
    path = make_store(tmp_path / "store", history(sizes=(10, 20), execs=(1, 2), repeats=1))
    before = len(store_mod.open(path).runs())
    rc = main(["submit", "--store", str(path), "--executors", "auto", "--job", "etll", "--input-size", "1GB",
               "--", "--master", "local[1]", "x.py"])
    err = capsys.readouterr().err
    assert rc == 2 and "fix: use one of: etl (did you mean 'etl'?); if 'etll' is a new job, submit its first " \
        "run with --executors N" in err, err
    assert len(store_mod.open(path).runs()) == before  # nothing ran


def test_auto_shows_what_suggest_warns_of_before_the_run(tmp_path):
    """submit printed the advice's summary alone: a wide interval or a model missing its runs,
    which suggest warns of, went unsaid before the run that would show it."""
    from sparkpredict.cli.submit import advice_lines

    path = make_store(tmp_path / "store", history())
    a = suggest_executors("etl", "60GB", deadline_s="7m30s", store=path)
    assert a.warnings and a.extrapolation_notes()  # this question has both
    lines = advice_lines(a)
    assert lines[0] == f"advice: {a.summary()}"
    assert f"extrapolates beyond the history: {'; '.join(a.extrapolation_notes())}" in lines
    assert [f"warning: {w}" for w in a.warnings] == [x for x in lines if x.startswith("warning: ")]


def test_auto_advises_for_the_executors_the_arguments_ask_for(tmp_path, capsys):
    """submit's advice was for the history's executor shape whatever --executor-cores and
    --executor-memory said: suggest gave 8 executors of 2 cores / 4 GiB where submit set 2, and
    the warnings on a shape no run had were not shown."""
    from sparkpredict.capture.submit_args import executor_shape
    from sparkpredict.cli.submit import executor_settings

    assert executor_shape(["--master", "yarn", "--executor-cores", "2", "--executor-memory", "4g", "j.py"]) == (2, 4096)
    assert executor_shape(["--master", "yarn", "--conf", "spark.executor.cores=3",
                           "--conf", "spark.executor.memory=1536m", "j.py"]) == (3, 1536)
    # a local master's executors share the driver's heap: its memory is the driver's
    assert executor_shape(["--master", "local[2]", "--executor-memory", "8g", "--driver-memory", "2g", "j.py"]) == \
        (None, 2048)
    assert executor_shape(["--master", "yarn", "--executor-cores", "two", "j.py"]) == (None, None)
    path = make_store(tmp_path / "store", history())
    args = argparse.Namespace(executors="auto", job="etl", deadline="7m30s", objective="cost", store=path)
    spark = ["--master", "yarn", "--executor-cores", "8", "--executor-memory", "16g", "job.py"]
    n, conf = executor_settings(args, spark, 30 * 10**9)
    asked = suggest_executors("etl", 30 * 10**9, deadline_s=450, executor_cores=8, executor_memory_mb=16384, store=path)
    plain = suggest_executors("etl", 30 * 10**9, deadline_s=450, store=path)
    assert n == asked.executors and conf == {}
    err = capsys.readouterr().err
    assert f"sparkpredict: advice: {asked.summary()}" in err
    assert [w for w in asked.warnings if w not in plain.warnings]  # the shape's own warnings ...
    assert all(f"warning: {w}" in err for w in asked.warnings)  # ... shown before the run


def test_auto_on_a_local_master_keeps_the_cores_and_ignores_dynamic_allocation(tmp_path):
    """spark-submit drops --executor-cores on a local master, so 2 executors of 2 cores ran as
    local[4] and were recorded as 4 one-core executors; and with dynamic allocation set (which a
    local master does not have) the advised count never reached the master."""
    import numpy as np

    from sparkpredict.capture.submit import build_command
    from sparkpredict.cli.submit import executor_settings
    from sparkpredict.features.runs import local_thread_executors

    cmd = build_command(["--master", "local[1]", "--executor-cores", "2", "job.py"], store=str(tmp_path / "s"),
                        job="etl", executors=2)
    assert cmd[cmd.index("--master") + 1] == "local[4]"
    assert "spark.executor.cores=2" in cmd and "spark.executor.instances=2" in cmd
    fix, e, c = local_thread_executors([True], [4], [2], [2])  # what the run's properties now say
    assert fix[0] and (e[0], c[0]) == (2.0, 2.0)
    # the user's own key is theirs: not added a second time
    cmd = build_command(["--master", "local[1]", "--executor-cores", "2", "--conf", "spark.executor.cores=2",
                         "job.py"], store=str(tmp_path / "s"), job="etl", executors=2)
    assert cmd.count("spark.executor.cores=2") == 1
    path = make_store(tmp_path / "store", history())
    args = argparse.Namespace(executors="auto", job="etl", deadline="10m", objective="cost", store=path)
    n, conf = executor_settings(args, ["--master", "local[2]", "--conf", "spark.dynamicAllocation.enabled=true",
                                       "job.py"], 30 * 10**9)
    assert conf == {} and n == suggest_executors("etl", 30 * 10**9, deadline_s=600, store=path).executors
    assert np.isfinite(n)


def test_auto_for_a_job_whose_runs_all_failed_says_so(tmp_path, capsys):
    """It said "submit its first runs with --executors N", as for a job never run."""
    import pandas as pd

    st = store_mod.open(tmp_path / "store", create=True)
    st.append({"runs": pd.DataFrame([{"run_id": "app-1", "app_id": "app-1", "job": "etl", "status": "failed",
                                      "start_ms": 1, "wall_ms": 1000, "updated_ms": 1, "input_bytes": 10**9,
                                      "error_message": "job 0 failed"}])})
    rc = main(["submit", "--store", str(tmp_path / "store"), "--executors", "auto", "--job", "etl",
               "--input-size", "1GB", "--", "--master", "local[1]", "x.py"])
    err = capsys.readouterr().err
    assert rc == 2 and "job 'etl' has no succeeded runs" in err and "1 run failed" in err, err
    assert "no finished run of it to advise from" in err and "submit its first run" not in err, err
    assert "; or submit with --executors N" in err


def test_dry_run_prints_the_command_with_the_advice_and_runs_nothing(tmp_path, capsys):
    import shlex

    path = make_store(tmp_path / "store", history())
    before = len(store_mod.open(path).runs())
    expected = suggest_executors("etl", "30GB", deadline_s="7m30s", store=path)
    rc = main(["submit", "--store", path, "--job", "etl", "--executors", "auto", "--input-size", "30GB",
               "--deadline", "7m30s", "--dry-run", "--", "--master", "yarn", "job.py", "--day", "today"])
    out, err = capsys.readouterr()
    assert rc == 0 and f"sparkpredict: advice: {expected.summary()}" in err
    cmd = shlex.split(out.strip())
    assert cmd[0].endswith("spark-submit") and cmd[-3:] == ["job.py", "--day", "today"]
    assert f"spark.executor.instances={expected.executors}" in cmd and "spark.sparkpredict.job=etl" in cmd
    assert "spark.sparkpredict.inputBytes=30000000000" in cmd
    assert len(store_mod.open(path).runs()) == before  # nothing ran


def test_auto_takes_suggests_budget_price_and_confidence(tmp_path, capsys):
    """submit --executors auto asked the advice for a deadline and an objective only: the
    fastest count within a budget, the one `suggest --objective time --budget B` gives, could
    not be had at submit."""
    import shlex

    path = make_store(tmp_path / "store", history())
    free = suggest_executors("etl", "30GB", objective="time", store=path)
    budget = sorted(c.executors * c.upper_s / 3600 for c in free.candidates)[1] * 2.0  # 2 per executor-h
    expected = suggest_executors("etl", "30GB", objective="time", budget=budget, price_per_executor_hour=2.0,
                                 confidence=0.8, store=path)
    assert expected.executors != free.executors  # the budget binds
    rc = main(["submit", "--store", path, "--job", "etl", "--executors", "auto", "--input-size", "30GB",
               "--objective", "time", "--budget", str(budget), "--price", "2", "--confidence", "80%",
               "--dry-run", "--", "--master", "yarn", "job.py"])
    out, err = capsys.readouterr()
    assert rc == 0 and f"sparkpredict: advice: {expected.summary()}" in err, err
    assert f"spark.executor.instances={expected.executors}" in shlex.split(out.strip())


def test_the_cores_key_goes_with_every_local_master_and_never_with_local_cluster(tmp_path):
    from sparkpredict.capture.submit import build_command

    def cmd(master):
        return build_command(["--master", master, "--executor-cores", "2", "job.py"], store=str(tmp_path / "s"),
                             job="etl", executors=2)

    same = cmd("local[4]")  # already E x C threads: no rewrite, the key all the same
    assert same[same.index("--master") + 1] == "local[4]" and "spark.executor.cores=2" in same
    cluster = cmd("local-cluster[2,1,1024]")  # its workers have 1 core: 2 per executor never launch
    assert cluster[cluster.index("--master") + 1] == "local-cluster[2,1,1024]"
    assert not any(a.startswith("spark.executor.cores=") for a in cluster)


def test_a_count_of_the_users_own_is_refused_with_auto_on_a_local_master_under_dynamic_allocation(tmp_path, capsys):
    """A local master has no dynamic allocation: auto sets the count there, so the user's
    --num-executors contradicts it (it was let through, and the advised count never used)."""
    path = make_store(tmp_path / "store", history())
    rc = main(["submit", "--store", path, "--job", "etl", "--executors", "auto", "--input-size", "30GB", "--",
               "--master", "local[2]", "--conf", "spark.dynamicAllocation.enabled=true", "--num-executors", "3",
               "job.py"])
    err = capsys.readouterr().err
    assert rc == 2 and "--executors auto and --num-executors 3 both set the executor count" in err, err


@pytest.mark.spark
def test_auto_says_before_the_run_when_it_is_unlike_every_run_of_the_history(tmp_path, capsys):
    """The recorded test history is all `sweep --master local` runs: a submit starts a cold JVM,
    and a local-cluster master starts executor JVMs, which none of those runs paid."""
    import shutil
    from pathlib import Path

    path = tmp_path / "store"
    shutil.copytree(Path(__file__).parent / "data" / "history", path)

    def warnings_for(master):
        rc = main(["submit", "--store", str(path), "--job", "sort", "--executors", "auto", "--input-size", "32MB",
                   "--deadline", "1m", "--dry-run", "--", "--master", master, "job.py"])
        err = capsys.readouterr().err
        assert rc == 0
        return [ln for ln in err.splitlines() if ln.startswith("sparkpredict: warning: ")]

    local = warnings_for("local[2]")
    assert any("ran in `sparkpredict sweep`" in w and "cold one" in w for w in local)
    assert not any("master" in w and "is a local" in w for w in local)
    cluster = warnings_for("local-cluster[2,1,1024]")
    assert any("this run's master local-cluster[2,1,1024] is a local-cluster master; every run of sort "
               "ran on local masters" in w for w in cluster)
