"""``sparkpredict submit``: the command line it builds, and real spark-submit runs it records."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sparkpredict import store as store_mod
from sparkpredict.capture.submit import build_command, dynamic_allocation_enabled
from sparkpredict.errors import ListenerError

JOB = Path(__file__).parent / "data" / "capture" / "wordcount_job.py"


def _conf(cmd: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for i, a in enumerate(cmd):
        if a == "--conf":
            k, v = cmd[i + 1].split("=", 1)
            out.setdefault(k, []).append(v)
    return out


def test_command_adds_listener_and_user_values_win(listener_jar, tmp_path):
    args = ["--master", "yarn", "--jars", "a.jar,b.jar", "--conf", "spark.sparkpredict.job=mine",
            "--conf", "spark.extraListeners=com.x.Other", "app.py", "--conf", "app-arg"]
    cmd = build_command(args, store=str(tmp_path / "s"), job="theirs", executors=7,
                        extra_conf={"spark.sparkpredict.inputBytes": "10"})
    assert cmd[0].endswith("spark-submit") and "sh" not in Path(cmd[0]).name.split("-")[0]
    assert cmd[-3:] == ["app.py", "--conf", "app-arg"]  # the app's own arguments untouched
    opts = cmd[1:-3]
    assert opts[opts.index("--jars") + 1] == f"a.jar,b.jar,{listener_jar}"
    conf = _conf(opts)
    assert conf["spark.sparkpredict.job"] == ["mine"]  # the user's value, once
    assert conf["spark.extraListeners"] == ["com.x.Other,io.sparkpredict.SparkPredictListener"]
    assert conf["spark.sparkpredict.store"] == [(tmp_path / "s").as_uri()]
    assert conf["spark.sparkpredict.inputBytes"] == ["10"]
    assert opts[opts.index("--num-executors") + 1] == "7"


def test_command_keeps_users_executor_count_and_needs_an_app(listener_jar):
    cmd = build_command(["--num-executors", "3", "job.py"], executors=9)
    assert cmd.count("--num-executors") == 1 and cmd[cmd.index("--num-executors") + 1] == "3"
    cmd = build_command(["--conf", "spark.executor.instances=2", "job.py"], executors=9)
    assert "--num-executors" not in cmd
    with pytest.raises(ListenerError, match="no application"):
        build_command(["--master", "local[2]"])
    assert dynamic_allocation_enabled(["--conf", "spark.dynamicAllocation.enabled=true", "j.py"])
    assert not dynamic_allocation_enabled(["j.py", "--conf", "spark.dynamicAllocation.enabled=true"])


def test_cli_rejects_bad_executor_count(capsys):
    from sparkpredict.cli import main

    assert main(["submit", "--executors", "many", "--", "job.py"]) == 2
    assert "--executors 'many' is not a number" in capsys.readouterr().err


def _submit(store: Path, job: str, *extra: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "sparkpredict", "submit", "--store", str(store), "--job", job, "--",
           "--master", "local[1]", "--driver-memory", "512m", "--conf", "spark.ui.enabled=false",
           str(JOB), *extra]
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.mark.spark
def test_submit_records_runs_while_another_app_writes_the_same_store(spark_app, tmp_path):
    """Two `sparkpredict submit` runs (one whose driver code fails after its jobs) and this
    process's application write into one store at the same time; all three come out complete."""
    store = tmp_path / "store"
    ok, bad = _submit(store, "sub-ok"), _submit(store, "sub-fail", "--fail")
    jobs = 0
    try:
        with spark_app(store, job="inproc") as spark:
            sc = spark.sparkContext
            deadline = time.time() + 300
            while (ok.poll() is None or bad.poll() is None) and time.time() < deadline:
                assert sc.parallelize(range(20), 2).map(lambda x: (x % 2, x)).reduceByKey(
                    lambda a, b: a + b).count() == 2
                jobs += 1
                time.sleep(0.5)
        out_ok, _ = ok.communicate(timeout=60)
        out_bad, _ = bad.communicate(timeout=60)
    finally:
        for p in (ok, bad):
            if p.poll() is None:
                p.kill()
                p.wait()
    assert ok.returncode == 0, out_ok[-3000:]
    assert bad.returncode == 1, out_bad[-3000:]
    st = store_mod.open(store)
    runs = st.runs().set_index("job")
    assert sorted(runs.index) == ["inproc", "sub-fail", "sub-ok"]
    assert f"recorded {runs.loc['sub-ok', 'run_id']} in {store}" in out_ok
    assert runs.loc["inproc", "status"] == "succeeded" and runs.loc["inproc", "num_jobs"] == jobs
    assert runs.loc["sub-ok", "status"] == "succeeded"
    assert runs.loc["sub-fail", "status"] == "failed"
    assert runs.loc["sub-fail", "error_message"] == "spark-submit exited with code 1"
    tasks, stages = st.tasks(), st.stages()
    for run in runs.itertuples():
        assert (tasks["run_id"] == run.run_id).sum() == run.num_tasks > 0
        assert (stages["run_id"] == run.run_id).sum() == run.num_stages
