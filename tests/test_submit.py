"""``sparkpredict submit``: the command line it builds, and real spark-submit runs it records."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sparkpredict import store as store_mod
from sparkpredict.capture.submit import build_command
from sparkpredict.capture.submit_args import dynamic_allocation_enabled
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
    assert conf["spark.plugins"] == ["io.sparkpredict.HostMetricsPlugin"]
    assert conf["spark.sparkpredict.store"] == [(tmp_path / "s").as_uri()]
    assert conf["spark.sparkpredict.inputBytes"] == ["10"]
    assert conf["spark.executor.instances"] == ["7"]  # as a conf key: local masters drop --num-executors
    assert "--num-executors" not in opts


def test_command_keeps_users_executor_count_and_needs_an_app(listener_jar):
    cmd = build_command(["--num-executors", "3", "job.py"], executors=9)
    assert cmd.count("--num-executors") == 1 and cmd[cmd.index("--num-executors") + 1] == "3"
    assert "spark.executor.instances=9" not in cmd
    cmd = build_command(["--conf", "spark.executor.instances=2", "job.py"], executors=9)
    assert "spark.executor.instances=9" not in cmd and "--num-executors" not in cmd
    with pytest.raises(ListenerError, match="no application"):
        build_command(["--master", "local[2]"])
    assert dynamic_allocation_enabled(["--conf", "spark.dynamicAllocation.enabled=true", "j.py"])
    assert not dynamic_allocation_enabled(["j.py", "--conf", "spark.dynamicAllocation.enabled=true"])
    cmd = build_command(["--conf=spark.extraListeners=a.B", "job.py"])
    assert "--conf=spark.extraListeners=a.B,io.sparkpredict.SparkPredictListener" in cmd
    assert not any(c.startswith("spark.extraListeners=") for c in cmd)
    # the user's plugins stay, ours join them, and a repeated run does not add ours twice
    cmd = build_command(["-c", "spark.plugins=com.x.Gpu,io.sparkpredict.HostMetricsPlugin", "job.py"])
    assert _conf(["--conf" if a == "-c" else a for a in cmd])["spark.plugins"] == \
        ["com.x.Gpu,io.sparkpredict.HostMetricsPlugin"]


def test_a_count_on_a_local_master_becomes_the_masters_count(listener_jar):
    """local[N] ignores spark.executor.instances: without this, --executors 3 on local[1] was
    recorded as 3 executors that ran on one thread."""
    def master(args, executors):
        cmd = build_command([*args, "job.py"], executors=executors)
        return next(a.split("=", 1)[1] for a in cmd if a.startswith("--master=")) if "--master" not in cmd \
            else cmd[cmd.index("--master") + 1]

    assert master(["--master", "local[1]"], 3) == "local[3]"
    assert master(["--master=local[*]"], 2) == "local[2]"
    assert master(["--master", "local[2,4]"], 5) == "local[5,4]"  # the retries kept
    assert master(["--master", "local[1]", "--executor-cores", "2"], 3) == "local[6]"
    assert master(["--master", "local-cluster[1,1,1024]"], 3) == "local-cluster[3,1,1024]"
    assert master(["--master", "yarn"], 3) == "yarn"
    # the user's own count wins, and the master with it
    cmd = build_command(["--master", "local[1]", "--num-executors", "2", "job.py"], executors=3)
    assert cmd[cmd.index("--master") + 1] == "local[1]"


def test_a_count_without_a_master_sets_the_one_spark_submit_would_have_used(listener_jar, tmp_path, monkeypatch):
    """No --master anywhere: spark-submit runs local[*], which ignores the count (3 executors
    asked for on a 2-core machine ran as 2 threads). A master set elsewhere is read as
    spark-submit reads it: --conf spark.master, spark-defaults.conf, $MASTER."""
    from sparkpredict.capture.submit_args import effective_master, local_master_for

    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    monkeypatch.delenv("MASTER", raising=False)

    def master(args, executors=3):
        cmd = build_command([*args, "job.py"], executors=executors)
        return cmd[cmd.index("--master") + 1] if "--master" in cmd else None

    assert effective_master(["job.py"]) == ("local[*]", "spark-submit's default")
    assert master([]) == "local[3]"
    assert local_master_for(["job.py"], 3) == ("local[*]", "spark-submit's default", "local[3]")
    assert master(["--conf", "spark.master=local[1]"]) == "local[3]"   # --master outranks it
    assert master([], executors=None) is None                           # no count: nothing added
    (tmp_path / "spark-defaults.conf").write_text("# cluster\nspark.master   yarn\nspark.executor.memory 4g\n")
    assert effective_master(["job.py"]) == ("yarn", "spark-defaults.conf") and master([]) is None
    (tmp_path / "spark-defaults.conf").write_text("spark.master=local-cluster[1,2,1024]\n")
    assert master([]) == "local-cluster[3,2,1024]"
    other = tmp_path / "other.conf"
    other.write_text("spark.master: yarn\n")
    assert master(["--properties-file", str(other)]) is None
    (tmp_path / "spark-defaults.conf").unlink()
    monkeypatch.setenv("MASTER", "spark://h:7077")
    assert effective_master(["job.py"]) == ("spark://h:7077", "$MASTER") and master([]) is None


def test_cli_rejects_bad_executor_count(capsys):
    from sparkpredict.cli import main

    assert main(["submit", "--executors", "many", "--", "job.py"]) == 2
    assert "--executors 'many' is not a number" in capsys.readouterr().err


def test_a_master_spark_would_refuse_is_an_error_before_anything_runs(capsys, tmp_path):
    from sparkpredict.cli import main

    store = tmp_path / "store"
    for master in ("bad", "local[x]", "local-cluster[2,1]"):
        # --executors auto would fit a model first: the master is checked before that
        assert main(["submit", "--store", str(store), "--executors", "auto", "--input-size", "1GB",
                     "--", "--master", master, "job.py"]) == 2
        err = capsys.readouterr().err
        assert f"the master {master!r} (--master) is not one Spark accepts" in err and "fix: use yarn" in err
    assert main(["submit", "--store", str(store), "--", "--conf", "spark.master=oops", "job.py"]) == 2
    assert "the master 'oops' (--conf spark.master) is not one" in capsys.readouterr().err
    assert not store.exists()
    for ok in ("yarn", "spark://h:7077", "k8s://https://h:6443", "local", "local[*]", "local[2, 3]",
               "local-cluster[2, 1, 1024]"):
        assert build_command(["--master", ok, "job.py"])[2] == ok


def _submit(store: Path, job: str, *extra: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "sparkpredict", "submit", "--store", str(store), "--job", job, "--",
           "--master", "local[1]", "--driver-memory", "512m", "--conf", "spark.ui.enabled=false",
           str(JOB), *extra]
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.mark.spark
def test_submit_records_its_run_while_another_app_writes_the_same_store(spark_app, tmp_path):
    """`sparkpredict submit` (a real spark-submit) and this process's application write into one
    store at the same time; both runs come out complete."""
    store = tmp_path / "store"
    sub = _submit(store, "sub-ok")
    jobs = 0
    try:
        with spark_app(store, job="inproc") as spark:
            sc = spark.sparkContext
            deadline = time.time() + 300
            while sub.poll() is None and time.time() < deadline:
                assert sc.parallelize(range(20), 2).map(lambda x: (x % 2, x)).reduceByKey(
                    lambda a, b: a + b).count() == 2
                jobs += 1
                time.sleep(2)  # a flush per job: enough overlap without flooding the store
        out, _ = sub.communicate(timeout=120)
    finally:
        if sub.poll() is None:
            sub.kill()
            sub.wait()
    assert sub.returncode == 0, out[-3000:]
    st = store_mod.open(store)
    runs = st.runs().set_index("job")
    assert sorted(runs.index) == ["inproc", "sub-ok"]
    assert f"recorded {runs.loc['sub-ok', 'run_id']} in {store}" in out
    assert runs.loc["inproc", "status"] == "succeeded" and runs.loc["inproc", "num_jobs"] == jobs >= 1
    assert runs.loc["sub-ok", "status"] == "succeeded" and runs.loc["sub-ok", "num_jobs"] == 1
    tasks, stages = st.tasks(), st.stages()
    for run in runs.itertuples():
        assert (tasks["run_id"] == run.run_id).sum() == run.num_tasks > 0
        assert (stages["run_id"] == run.run_id).sum() == run.num_stages


@pytest.mark.spark
def test_failed_spark_submit_corrects_a_succeeded_run(spark_app, tmp_path):
    """Driver code that fails after its last Spark job looks succeeded to the listener; submit
    sees spark-submit's exit code and appends a failed run row (the earlier rows stay)."""
    from sparkpredict.capture.submit import KEY_SUBMIT_ID, _record_outcome

    store = tmp_path / "store"
    with spark_app(store, job="driver-fails", conf={KEY_SUBMIT_ID: "tag-123"}) as spark:
        assert spark.sparkContext.parallelize(range(5)).count() == 5
    with spark_app(store, job="other-app") as spark:
        assert spark.sparkContext.parallelize(range(5)).count() == 5
    st = store_mod.open(store)
    assert set(st.runs()["status"]) == {"succeeded"}
    n_files = len(list((store / "runs").glob("part-*.parquet")))
    assert _record_outcome(str(store), "tag-123", 0) == list(st.runs().query("job == 'driver-fails'").run_id)
    assert _record_outcome(str(store), "tag-123", 1) == list(st.runs().query("job == 'driver-fails'").run_id)
    runs = store_mod.open(store).runs().set_index("job")
    assert runs.loc["driver-fails", "status"] == "failed"
    assert runs.loc["driver-fails", "error_message"] == "spark-submit exited with code 1"
    assert runs.loc["other-app", "status"] == "succeeded"  # only this submit's run is touched
    assert len(list((store / "runs").glob("part-*.parquet"))) == n_files + 1  # appended, nothing rewritten
