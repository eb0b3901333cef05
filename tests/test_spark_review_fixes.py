"""A platform engineer's walk through submit, attach and the Spark retrain (stop 35) found these;
each test failed before its fix, with real Spark and the real listener jar."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sparkpredict import store as store_mod

pytestmark = pytest.mark.spark
DATA = Path(__file__).parent / "data"
JOB = DATA / "capture" / "wordcount_job.py"
REPO = Path(__file__).resolve().parents[1]


def _group_gone(pgid: int, timeout_s: float) -> bool:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


def test_sigterm_to_submit_stops_the_driver_and_records_the_run_killed(listener_jar, first_batch, tmp_path):
    """A scheduler (Airflow, systemd, Kubernetes) stops a task with SIGTERM. submit died at once,
    and the driver, re-parented, ran on to its end and was recorded as succeeded."""
    store = tmp_path / "store"
    log = tmp_path / "submit.log"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    cmd = [sys.executable, "-m", "sparkpredict", "submit", "--store", str(store), "--job", "term", "--",
           "--master", "local[1]", "--driver-memory", "512m", "--conf", "spark.ui.enabled=false",
           str(JOB), "--sleep", "300"]
    # a session of its own: whatever is left of it afterwards is found by its group
    proc = subprocess.Popen(cmd, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
    try:
        first_batch(proc, store, log)  # the first job's batch: the driver now sleeps
        proc.send_signal(signal.SIGTERM)  # to submit alone, as a scheduler signals its task
        rc = proc.wait(timeout=120)
        assert _group_gone(proc.pid, 30), "spark-submit or its driver outlived submit"
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    out = log.read_text()
    assert rc == 128 + signal.SIGTERM, out[-3000:]
    assert "terminated (signal 15)" in out
    run = store_mod.open(store).runs().iloc[0]
    assert run.status == "killed" and run.error_message == "driver received SIGTERM", out[-3000:]


ATTACH_TWICE = """
import sys
from pyspark.sql import SparkSession
import sparkpredict

store = sys.argv[1]
s = sparkpredict.attach(SparkSession.builder.master("local[1]").appName("etl-A")
                        .config("spark.ui.enabled", "false"), job="etl-A", store=store,
                        input_bytes="1GB").getOrCreate()
s.range(10).count()
s.stop()
s = sparkpredict.attach(SparkSession.builder.master("local[1]").appName("etl-B"), store=store).getOrCreate()
s.range(10).count()
s.stop()
s = sparkpredict.attach(SparkSession.builder.master("local[1]").appName("etl-C"), job="etl-C", store=store,
                        input_bytes="2GB").getOrCreate()
s.range(10).count()
s.stop()
"""


def test_a_later_attached_session_is_not_recorded_under_the_first_ones_job_and_size(listener_jar, tmp_path,
                                                                                   env_of_spark_defaults):
    """The first session's settings become the JVM's system properties, which later SparkConfs
    read: etl-B was stored as job etl-A with etl-A's declared 1 GB."""
    script = tmp_path / "twice.py"
    script.write_text(ATTACH_TWICE)
    env = dict(env_of_spark_defaults, PYSPARK_PYTHON=sys.executable)
    out = subprocess.run([sys.executable, str(script), str(tmp_path / "store")], capture_output=True,
                         text=True, timeout=300, env=env, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    runs = store_mod.open(tmp_path / "store").runs().sort_values("start_ms")
    assert list(runs["app_name"]) == ["etl-A", "etl-B", "etl-C"]
    assert list(runs["job"]) == ["etl-A", "etl-B", "etl-C"]  # etl-B: its app name, as attach says
    declared = json.loads(runs.iloc[1]["properties_json"]).get("spark.sparkpredict.inputBytes", "")
    assert declared == "" and runs.iloc[1]["input_bytes"] < 10**6  # measured, not etl-A's 1 GB
    assert list(runs["input_bytes"])[::2] == [10**9, 2 * 10**9]


OWN_JARS = """
import sys
from pyspark.sql import SparkSession

spark = SparkSession.builder.appName("own-jars").config("spark.jars", sys.argv[1]).getOrCreate()
assert spark.sparkContext.parallelize(range(100), 2).sum() == 4950
spark.stop()
print("done", flush=True)
"""


def test_a_script_that_sets_its_own_spark_jars_still_starts_executors(listener_jar, tmp_path):
    """Its spark.jars replaced the list executors fetch, the listener's jar with it, and every
    executor of local-cluster failed to load the plugin: lost, started again, forever."""
    from sparkpredict.capture.submit import submit

    script = tmp_path / "own_jars.py"
    script.write_text(OWN_JARS)
    mine = tmp_path / "mine.jar"  # a jar of the application's own, without the listener's classes
    import zipfile

    with zipfile.ZipFile(mine, "w") as z:
        z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    res = _bounded(lambda: submit(["--master", "local-cluster[1,1,1024]", "--driver-memory", "512m",
                                   "--conf", "spark.ui.enabled=false", str(script), str(mine)],
                                  store=str(tmp_path / "store"), job="own-jars"), 120)
    assert res.returncode == 0
    run = store_mod.open(tmp_path / "store").runs().iloc[0]
    assert (run.status, run.num_tasks, run.executors_max) == ("succeeded", 2, 1)


def _bounded(fn, timeout_s: float):
    """``fn()`` in a thread, failed after ``timeout_s`` (the bug made submit wait forever)."""
    import threading

    box: dict = {}
    t = threading.Thread(target=lambda: box.update(value=fn()), daemon=True)
    t.start()
    t.join(timeout_s)
    assert not t.is_alive(), f"no result within {timeout_s} s"
    return box["value"]


def test_spark_submit_retrain_ends_stdout_with_its_json_and_writes_json_out(tmp_path, env_of_spark_defaults):
    """spark-submit merges its Python driver's stderr into its stdout: the report printed after
    the JSON made stdout no longer one JSON line."""
    from sparkpredict.capture.submit_args import spark_submit_path
    from sparkpredict.retrain import retrain_local

    path = tmp_path / "h"
    shutil.copytree(DATA / "history", path)
    retrain_local(path, stage_models=False)  # current: the job answers without a session
    doc = tmp_path / "out" / "retrain.json"
    doc.parent.mkdir()
    env = dict(env_of_spark_defaults, PYSPARK_PYTHON=sys.executable)
    out = subprocess.run([str(spark_submit_path()), "--master", "local[1]", str(REPO / "jobs" / "retrain.py"),
                          "--store", str(path), "--no-stage-models", "--json-out", str(doc)],
                         capture_output=True, text=True, timeout=300, env=env, check=False)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    lines = out.stdout.strip().splitlines()
    last = json.loads(lines[-1])
    assert last == json.loads(doc.read_text()) and last["unchanged"] == 3 and last["spark_started"] is False
    assert any(line.startswith("refit 0 of 3 job(s)") for line in lines[:-1])  # the report, before it
    assert [p.name for p in doc.parent.iterdir()] == ["retrain.json"]  # no temporary file left
