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
    path = make_store(tmp_path / "store", history())
    expected = suggest_executors("etl", "30GB", deadline_s="7m30s", store=path)
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
    n, conf = executor_settings(args, ["--conf", "spark.dynamicAllocation.enabled=true", "job.py"], 30 * 10**9)
    a = suggest_executors("etl", 30 * 10**9, deadline_s=600, store=path)
    assert n is None
    assert conf == {"spark.dynamicAllocation.minExecutors": str(a.dynamic_allocation[0]),
                    "spark.dynamicAllocation.maxExecutors": str(a.dynamic_allocation[1])}
    assert a.dynamic_allocation[0] <= a.executors <= a.dynamic_allocation[1]


@pytest.mark.parametrize("extra,needle", [
    (["--job", "nightly", "--input-size", "1GB"], "no job 'nightly'"),
    (["--job", "etl"], "needs --job and --input-size"),
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
    assert "fix: submit its first runs with --executors N" in err and "if 'nightly' is mistyped, use one of: etl" in err
    rc = main(["submit", "--store", str(tmp_path / "other"), "--executors", "auto", "--job", "etl",
               "--input-size", "1GB", "--", *conf])
    assert rc == 2 and "name different stores" in capsys.readouterr().err
    assert not (tmp_path / "default-store").exists() and not (tmp_path / "other").exists()


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
