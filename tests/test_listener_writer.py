"""The listener's writer thread: what it holds behind a store that hangs, whose errors it may
report, and what a listener whose SparkContext never started leaves behind."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_listener_store_faults import answer

from sparkpredict import store as store_mod
from sparkpredict.capture.listener import listener_error
from sparkpredict.errors import StoreError

pytestmark = pytest.mark.spark

MARKER = {"format": "sparkpredict-store", "schema_version": 1}


def _hung_store(path: Path) -> Path:
    """A store whose marker is a named pipe: reading it blocks, as a dead NFS mount does."""
    path.mkdir()
    marker = path / "_sparkpredict_store.json"
    os.mkfifo(marker)
    return marker


def _wait_for(predicate, timeout_s: float):
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value is not None and value is not False or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


def _writer_threads(jvm) -> int:
    return sum(1 for t in jvm.java.lang.Thread.getAllStackTraces().keySet().toArray()
               if t.getName() == "sparkpredict-writer" and t.isAlive())


def test_a_hung_store_holds_one_run_row_and_capped_host_samples(spark_app, tmp_path):
    """Behind a write that hangs, each job's batch waited in a queue of its own: a driver that
    runs for days held every job's run row (properties_json: kilobytes each) and every host
    sample, past the plugin's cap. Batches are merged as they arrive."""
    store = tmp_path / "store"
    marker = _hung_store(store)
    conf = {"spark.sparkpredict.flushIntervalMs": "0", "spark.sparkpredict.flushEveryTasks": "20",
            "spark.sparkpredict.hostSampleIntervalMs": "10", "spark.sparkpredict.stopTimeoutMs": "1000"}
    jobs = 40
    with spark_app(store, job="hung-many-jobs", conf=conf) as spark:
        listener = spark._jvm.io.sparkpredict.SparkPredictListener
        sc = spark.sparkContext
        heard = []
        for _ in range(2):
            for _ in range(jobs // 2):
                sc.parallelize(range(2), 2).count()
            time.sleep(1.0)  # the listener bus delivers the last job's end
            heard.append({t: listener.heldRows(t) for t in ("runs", "host_samples", "tasks")})
        app = sc.applicationId
    # one batch in the hung write (what was sampled before it: heldRows had left it out), the
    # later jobs' merged into one more: two run rows, and the merged host samples capped, so
    # that 20 more jobs add at most the cap
    first, held = heard
    assert first["runs"] == held["runs"] == 2, heard
    assert held["host_samples"] - first["host_samples"] <= 20, heard  # flushEveryTasks, the docs' cap
    assert answer(marker, json.dumps(MARKER), 30.0)
    def final():
        r = store_mod.open(store).runs()
        return r if (r.status == "succeeded").any() else None

    run = _wait_for(final, 30)
    assert run is not None and len(run) == 1 and run.iloc[0].run_id == app and run.iloc[0].num_jobs == jobs


def test_an_earlier_applications_late_store_failure_leaves_the_current_one_alone(spark_app, tmp_path):
    """After stopTimeoutMs the writer of a stopped application goes on writing while the JVM
    lives (a notebook starts the next session). When its store then failed for good, it turned
    off host sampling for the application running now and set the error listener_error
    reports for it."""
    first = tmp_path / "first"
    marker = _hung_store(first)
    with spark_app(first, job="first", conf={"spark.sparkpredict.stopTimeoutMs": "500"}) as spark:
        spark.sparkContext.parallelize(range(4), 2).count()
    assert "did not finish writing" in (listener_error(spark) or "")
    second = tmp_path / "second"
    with spark_app(second, job="second", conf={"spark.sparkpredict.hostSampleIntervalMs": "20"}) as spark:
        # the first application's writer now reads a marker of another schema version: it stops
        assert answer(marker, json.dumps(dict(MARKER, schema_version=99)), 30.0)
        time.sleep(1.0)
        spark.sparkContext.parallelize(range(4), 2).count()
        err = listener_error(spark)
        app = spark.sparkContext.applicationId
    assert err is None, err
    st = store_mod.open(second)
    assert st.runs().iloc[0].run_id == app
    assert len(st.read("host_samples")) >= 10  # 1 s and more of readings every 20 ms
    from pyspark import SparkContext

    # both writers ended: the first when its store failed, the second after its last batch
    assert _wait_for(lambda: _writer_threads(SparkContext._jvm) == 0, 5)


FAILED_START = """
import sys
from pyspark.sql import SparkSession

try:
    SparkSession.builder.appName("never-started").config("spark.sparkpredict.store", sys.argv[1]).config(
        "spark.extraListeners", "io.sparkpredict.SparkPredictListener,no.such.Listener").getOrCreate()
except Exception:
    print("the first SparkContext failed", flush=True)
spark = SparkSession.builder.appName("ran").config("spark.sparkpredict.store", sys.argv[2]).getOrCreate()
jvm = spark._jvm
writers = sum(1 for t in jvm.java.lang.Thread.getAllStackTraces().keySet().toArray()
              if t.getName() == "sparkpredict-writer")
print(f"writer threads before the first job: {writers}", flush=True)
spark.range(10).count()
spark.stop()
"""


def test_a_sparkcontext_that_failed_to_start_records_nothing_and_keeps_no_thread(listener_jar, tmp_path):
    """spark.extraListeners names a class that does not load: SparkContext fails after our
    listener was built. Its writer thread waited for the rest of the JVM's life, and at exit its
    shutdown hook recorded a `killed` run of an application that never ran (and held the exit
    for 2 s)."""
    from sparkpredict.capture.submit import build_command

    script = tmp_path / "job.py"
    script.write_text(FAILED_START)
    never, ran = tmp_path / "never", tmp_path / "ran"
    cmd = build_command(["--master", "local[1]", "--driver-memory", "512m", "--conf", "spark.ui.enabled=false",
                         str(script), "file://" + str(never), "file://" + str(ran)], store=str(ran), job="w")
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=180, check=False)
    out = proc.stdout
    assert proc.returncode == 0 and "the first SparkContext failed" in out, out[-3000:]
    assert "writer threads before the first job: 0" in out, out[-3000:]
    assert store_mod.open(ran).runs().iloc[0].status == "succeeded"
    try:
        phantom = store_mod.open(never).runs()
    except StoreError:
        phantom = None
    assert phantom is None or phantom.empty, phantom.to_string()
