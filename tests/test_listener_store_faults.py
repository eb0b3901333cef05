"""The listener on a store that hangs, fails or cannot be opened, and on jobs with many tasks.

The listener shares Spark's listener-bus queue with the application's other listeners: while a
callback waits, the queue fills and Spark drops events, and SparkContext.stop() waits for the
queue to drain. Writing happens on a thread of its own, so a store that hangs costs neither.
"""
from __future__ import annotations

import errno
import json
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from sparkpredict import store as store_mod
from sparkpredict.capture.listener import listener_error
from sparkpredict.errors import StoreError

pytestmark = pytest.mark.spark

MARKER = json.dumps({"format": "sparkpredict-store", "schema_version": 1})


def answer(fifo: Path, marker: str = MARKER, timeout_s: float = 60.0) -> bool:
    """Write the store's ``marker`` into ``fifo`` once a reader waits on it, then make it a plain
    file again (Python's reader must not block on it). False when no reader came."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:  # ENXIO: nobody has it open for reading yet
            if exc.errno != errno.ENXIO or time.monotonic() > deadline:
                return False
            time.sleep(0.05)
            continue
        with os.fdopen(fd, "w") as f:
            f.write(marker)
        fifo.unlink()
        fifo.write_text(marker)
        return True


def _committed(store: Path):
    try:
        st = store_mod.open(store)
        return st.runs(), st.tasks()
    except StoreError:
        return None


def _wait_for(predicate, timeout_s: float):
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


def test_a_hung_store_neither_drops_events_nor_hangs_stop(spark_app, tmp_path):
    """The store's marker is a named pipe: reading it blocks, as a hung NFS or HDFS mount does.
    The listener wrote on Spark's listener thread: the shared event queue filled and Spark
    dropped the next job's task events, and stop() hung until the store answered."""
    store = tmp_path / "store"
    store.mkdir()
    marker = store / "_sparkpredict_store.json"
    os.mkfifo(marker)
    conf = {"spark.scheduler.listenerbus.eventqueue.shared.capacity": "1000",
            "spark.sparkpredict.stopTimeoutMs": "2000"}
    with spark_app(store, job="hung", conf=conf) as spark:
        assert spark.sparkContext.parallelize(range(4), 2).count() == 4  # its batch's write hangs
        spark.range(0, 2000, 1, 2000).write.format("noop").mode("overwrite").save()
        app = spark.sparkContext.applicationId
        stopper = threading.Thread(target=spark.stop, daemon=True)
        t0 = time.monotonic()
        stopper.start()
        stopper.join(timeout=20)
        stop_s = time.monotonic() - t0
        answered = answer(marker)  # the store answers: whatever waited on it goes on
        stopper.join(timeout=60)
    assert answered
    assert stop_s < 15, f"stop() waited {stop_s:.0f} s for a hung store"
    err = listener_error(spark)
    assert err is not None and "did not finish writing the run's last batch within 2000 ms" in err
    # the writer stores everything once the store answers, no event lost
    runs = _wait_for(lambda: (c := _committed(store)) and (c[0].status == "succeeded").any() and c, 60)
    assert runs, "the run's last batch was never written"
    run, tasks = runs[0].iloc[-1], runs[1]
    assert run.run_id == app and run.num_jobs == 2
    assert run.num_tasks == len(tasks) == 2 + 2000


def test_task_rows_are_written_while_a_long_job_runs(spark_app, tmp_path):
    """Task rows were held until their job ended: a 1,000,000-task job kept 0.35-0.65 GB of
    driver heap (measured 346 bytes a row for tiny tasks). They are written every
    spark.sparkpredict.flushEveryTasks rows."""
    store = tmp_path / "store"
    gate = tmp_path / "gate"

    def last_waits(index, rows):
        import os
        import time

        deadline = time.time() + 60
        while index == 199 and not os.path.exists(str(gate)) and time.time() < deadline:
            time.sleep(0.05)
        return [sum(1 for _ in rows)]

    with spark_app(store, job="long", conf={"spark.sparkpredict.flushEveryTasks": "50"}) as spark:
        rdd = spark.sparkContext.parallelize(range(200), 200).mapPartitionsWithIndex(last_waits)
        result = {}
        job = threading.Thread(target=lambda: result.setdefault("sum", rdd.sum()))
        job.start()
        seen = _wait_for(lambda: (c := _committed(store)) and len(c[1]) >= 150 and c, 20)
        gate.touch()
        job.join(timeout=60)
    assert result.get("sum") == 200
    assert seen, "no task row was written before the job ended"
    assert set(seen[0]["status"]) == {"running"}
    st = store_mod.open(store)
    assert len(st.tasks()) == st.runs().iloc[0].num_tasks == 200
    assert not st.tasks().duplicated(["task_id", "attempt"]).any()


def test_a_store_on_a_file_system_hadoop_cannot_open_is_refused_at_start(spark_app, tmp_path):
    """No FileSystem for the scheme (s3a:// without hadoop-aws, a typo): every write fails, and
    the listener kept every row in memory to retry, up to 2,000,000 task rows."""
    with spark_app("nosuchfs://bucket/store", job="no-fs") as spark:
        err = listener_error(spark)
        assert spark.sparkContext.parallelize(range(10), 2).count() == 10
    assert err is not None and 'No FileSystem for scheme "nosuchfs"' in err
    assert "nothing is recorded" in err and "hadoop-aws" in err


def test_an_s3a_store_without_hadoop_aws_is_refused_at_start_with_the_fix(spark_app, tmp_path):
    """Hadoop knows s3a:// (core-default.xml names S3AFileSystem) but pyspark ships no
    hadoop-aws: the class is missing, which Hadoop raises as a RuntimeException, and the
    listener logged a stack trace without the fix."""
    with spark_app("s3a://bucket/store", job="no-s3a") as spark:
        err = listener_error(spark)
        assert spark.sparkContext.parallelize(range(10), 2).count() == 10
    assert err is not None and 'no FileSystem on the classpath for scheme "s3a"' in err, err
    assert "S3AFileSystem" in err and "nothing is recorded" in err and "hadoop-aws" in err


def test_a_failing_store_holds_at_most_four_chunks_of_task_rows(spark_app, tmp_path):
    """Rows kept for a store that cannot be written are capped at 4 x flushEveryTasks (was a
    fixed 2,000,000 task rows, about 1 GB of heap, above a default 1 GB driver)."""
    blocker = tmp_path / "blocked"
    blocker.write_text("a file where the store's parent folder should be")
    store = blocker / "store"
    with spark_app(store, job="capped", conf={"spark.sparkpredict.flushEveryTasks": "25"}) as spark:
        spark.range(0, 300, 1, 300).write.format("noop").mode("overwrite").save()
        time.sleep(1.0)  # the listener hears of the last tasks; the next retry is 5 s after the first failure
        blocker.unlink()
    err = listener_error(spark) or ""  # stopped: the JVM's last listener's word
    st = store_mod.open(store)
    run = st.runs().iloc[0]
    assert run.status == "succeeded" and run.num_tasks == 300
    assert 25 <= len(st.tasks()) <= 100
    assert st.stages()["num_task_rows"].sum() == 300  # stage sums still count every task
    # the count of dropped rows comes at the end, and the store's failure that caused it is kept
    dropped = 300 - len(st.tasks())
    assert f"{dropped} task rows of this application were dropped" in err, err
    assert "listener errors in this application; the first:" in err, err


def _error_of_one_job(spark_app, tmp_path, store) -> str | None:
    """The listener's error after one job of an application whose store is ``store``, set as a
    --conf sets it (the Python side would refuse the path before Spark started)."""
    with spark_app(tmp_path / "unused", job="refused", conf={"spark.sparkpredict.store": str(store)}) as spark:
        assert spark.sparkContext.parallelize(range(10), 2).count() == 10
        err = None
        for _ in range(100):  # the writer thread reports it just after the job's end
            err = listener_error(spark)
            if err:
                break
            time.sleep(0.1)
    return err


def test_a_store_path_that_is_a_file_says_nothing_is_recorded_and_how_to_fix_it(spark_app, tmp_path):
    """Set by --conf or spark-defaults (attach and submit refuse it before Spark starts)."""
    store = tmp_path / "store"
    store.write_text("a file where the store should be")
    err = _error_of_one_job(spark_app, tmp_path, store)
    assert err and "is a file, not a folder; nothing is recorded for this application" in err, err
    assert "Fix: set spark.sparkpredict.store to a folder" in err
    assert store.read_text() == "a file where the store should be"


def test_a_store_inside_another_or_with_a_folder_for_a_marker_records_nothing_and_says_why(spark_app, tmp_path):
    """Set by --conf or spark-defaults (attach, submit and Store.init refuse both before): the
    inner store's files would mix into the outer one's tables; a marker path that is a folder
    is a damaged store."""
    from sparkpredict.store.schema import MARKER_FILE

    outer = tmp_path / "outer"
    store_mod.open(outer, create=True)
    damaged = tmp_path / "damaged"
    (damaged / MARKER_FILE).mkdir(parents=True)
    for store, said in ((outer / "runs" / "inner", f"is inside the store {outer}"),
                        (damaged, f"its marker {MARKER_FILE} is a folder")):
        before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
        err = _error_of_one_job(spark_app, tmp_path, store)
        assert err and said in err and "nothing is recorded for this application" in err, err
        assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_a_store_that_fails_as_the_run_ends_is_tried_again(spark_app, tmp_path):
    """The run's last batch has no later flush to ride on: a store that fails for a moment as the
    application stops (an object store's throttling, a NameNode failover) is tried again 1, 2
    and 4 s later while stop() waits, and the run is recorded whole (its rows had been lost)."""
    blocker = tmp_path / "blocked"
    blocker.write_text("a file where the store's parent folder should be")
    store = blocker / "store"
    said: list[str] = []

    def heal_once_the_last_write_failed(jvm) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            err = jvm.io.sparkpredict.SparkPredictListener.lastError()
            if err and "last rows are retried" in err:
                said.append(err)
                blocker.unlink()
                return
            time.sleep(0.05)

    with spark_app(store, job="late-store") as spark:
        assert spark.sparkContext.parallelize(range(10), 2).count() == 10
        healer = threading.Thread(target=heal_once_the_last_write_failed, args=(spark.sparkContext._jvm,))
        healer.start()
    healer.join(60)
    assert said and "retried in 1 s" in said[0], said
    st = store_mod.open(store)
    run = st.runs().iloc[0]
    assert run.status == "succeeded" and run.num_jobs == 1
    assert len(st.tasks()) == run.num_tasks == 2 and st.stages()["num_task_rows"].sum() == 2


DISK_FULL_JOB = """
import sys
from pyspark.sql import SparkSession

# 1: task rows that outgrow the file size limit in every batch
spark = SparkSession.builder.appName("disk-full").getOrCreate()
spark.range(0, 8000, 1, 8000).write.format("noop").mode("overwrite").save()
spark.stop()
print("job 1 done", flush=True)
# 2: the same JVM, without task rows: its batches fit
spark = (SparkSession.builder.appName("small-batches").config("spark.sparkpredict.store", sys.argv[1])
         .config("spark.sparkpredict.tasks", "false").getOrCreate())
spark.range(0, 40, 1, 4).write.format("noop").mode("overwrite").save()
spark.stop()
print("job 2 done", flush=True)
"""


def test_a_full_disk_leaves_no_partial_files_and_snappy_is_not_needed(listener_jar, tmp_path):
    """RLIMIT_FSIZE makes writes past 128 KiB fail with EFBIG (the JVM ignores SIGXFSZ), as a
    full disk or a quota does. A Parquet file that failed half way stayed in the store under
    its hidden temporary name, one more at every retry. The limit also keeps snappy-java from
    unpacking its native library into the temp folder (as a noexec /tmp does): the listener
    recorded nothing at all (UnsatisfiedLinkError); it falls back to gzip."""
    from sparkpredict.capture.submit import build_command

    script = tmp_path / "job.py"
    script.write_text(DISK_FULL_JOB)
    full, small = tmp_path / "full", tmp_path / "small"
    cmd = build_command(["--master", "local[2]", "--driver-memory", "512m", "--conf", "spark.ui.enabled=false",
                         str(script), "file://" + str(small)], store=str(full), job="disk-full")
    limit = 128 * 1024
    # the limit holds for the jar's copy into the executor's folder too
    assert listener_jar.stat().st_size < limit - 16 * 1024, "the listener jar outgrew the limit: raise it"

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    # the output goes to a pipe: the limit is on files only
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          preexec_fn=small_files, timeout=180, check=False)
    out = proc.stdout
    assert proc.returncode == 0 and "job 2 done" in out, out[-3000:]
    assert "File too large" in out and "written with gzip" in out, out[-3000:]
    files = [p for p in full.rglob("*") if p.is_file()]
    assert files and all(p.stat().st_size <= limit for p in files)
    assert not [p.name for p in files if p.name.endswith(".tmp")]
    run = store_mod.open(small).runs().iloc[0]
    assert run.status == "succeeded" and run.num_tasks == 4 and run.app_name == "small-batches"


def test_a_store_removed_while_the_run_goes_is_made_again(spark_app, tmp_path):
    """The writer checked the store once: removed mid-run, its tables came back without the
    marker (mkdirs), and every reader refused the store."""
    import shutil

    store = tmp_path / "store"
    with spark_app(store, job="removed") as spark:
        assert spark.sparkContext.parallelize(range(4), 2).count() == 4
        assert _wait_for(lambda: (c := _committed(store)) and c, 60), "the first job's batch was not written"
        shutil.rmtree(store)
        assert spark.sparkContext.parallelize(range(6), 3).count() == 6
        app = spark.sparkContext.applicationId
    assert (store / "_sparkpredict_store.json").is_file()
    runs, tasks = _committed(store)
    run = runs.iloc[-1]
    # the second job's rows and the run's end are recorded (the first job's went with the folder,
    # unless its write was still under way then: a write that fails is retried)
    assert run.run_id == app and run.status == "succeeded" and 3 in set(tasks.groupby("stage_id").size())


def test_a_failing_store_holds_a_bounded_number_of_stage_rows(spark_app, tmp_path):
    """Only task rows were capped behind a store that cannot be written: a streaming driver
    whose store stayed unwritable (expired credentials, an outage) held every stage row it
    ran, about a kilobyte each, for as long as it ran."""
    blocker = tmp_path / "blocked"
    blocker.write_text("a file where the store's parent folder should be")
    store = blocker / "store"
    jobs, cap = 15, 4
    data = tmp_path / "csv"
    data.mkdir()
    (data / "part-0.csv").write_text("a,1\n")
    with spark_app(store, job="stages-capped", conf={"spark.sparkpredict.flushEveryTasks": str(cap)}) as spark:
        sc = spark.sparkContext
        for i in range(jobs):  # two stages a job; every third scans a file (a stage_scans row)
            if i % 3 == 2:
                spark.read.schema("a string, b int").csv(str(data)).count()
            else:
                sc.parallelize(range(4), 1).map(lambda x: (x, x)).reduceByKey(lambda a, b: a + b, 1).count()
        time.sleep(1.0)  # the listener hears of the last job's end
        held = spark._jvm.io.sparkpredict.SparkPredictListener.heldRows("stages")
        held_scans = spark._jvm.io.sparkpredict.SparkPredictListener.heldRows("stage_scans")
        blocker.unlink()
    err = listener_error(spark) or ""
    assert held <= 2 * cap, held  # was 2 x jobs: every stage row since the store failed
    st = store_mod.open(store)
    run = st.runs().iloc[0]
    assert run.status == "succeeded" and run.num_stages == 2 * jobs
    assert cap <= len(st.stages()) <= 2 * cap
    dropped = 2 * jobs - len(st.stages())
    assert f"{dropped} stage rows of this application were dropped" in err, err
    # the scan rows of the stages kept, and no other: a dropped stage's went with it
    key = ["stage_id", "stage_attempt_id"]
    kept = st.stages()
    scans = st.read("stage_scans")
    assert held_scans <= held
    assert set(map(tuple, scans[key].values.tolist())) <= set(map(tuple, kept[key].values.tolist()))
    assert set(scans["scan_files"]) <= {1}
