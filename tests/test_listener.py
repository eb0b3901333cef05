"""The JVM listener in a real Spark application (one JVM per pytest process, via ``spark_app``)."""
from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from executor_kill import wait_for_executors

from sparkpredict import store as store_mod
from sparkpredict.errors import StoreError
from sparkpredict.store import schema as S

pytestmark = pytest.mark.spark


def _wordcount_and_groupby(spark) -> None:
    sc = spark.sparkContext
    lines = ["the quick brown fox", "jumps over the lazy dog", "the end"] * 400
    counts = sc.parallelize(lines, 6).flatMap(str.split).map(lambda w: (w, 1)).reduceByKey(lambda a, b: a + b)
    assert dict(counts.collect())["the"] == 1200
    df = spark.createDataFrame([(i % 7, i) for i in range(5000)], ["k", "v"])
    rows = df.groupBy("k").sum("v").collect()
    assert len(rows) == 7


def _check_stage_sums(stages: pd.DataFrame, tasks: pd.DataFrame) -> None:
    """Every stage's metric sums equal the sums over its task rows; quantiles match numpy's."""
    by = tasks.groupby(["run_id", "stage_id", "stage_attempt_id"])
    sums = by[S.METRIC_NAMES].sum()
    for st in stages.itertuples(index=False):
        key = (st.run_id, st.stage_id, st.stage_attempt_id)
        assert st.num_task_rows == len(by.get_group(key)), key
        for col in S.METRIC_NAMES:
            want, got = sums.loc[key, col], getattr(st, col)
            assert np.isclose(got, want, rtol=1e-9, atol=1e-6), (key, col, got, want)
        d = by.get_group(key)["duration_ms"].to_numpy(dtype=float)
        assert st.task_duration_min_ms == d.min() and st.task_duration_max_ms == d.max()
        assert np.isclose(st.task_duration_median_ms, np.quantile(d, 0.5))
        assert np.isclose(st.task_duration_p90_ms, np.quantile(d, 0.9))


@pytest.mark.cluster
def test_local_cluster_wordcount_groupby_records_consistent_rows(spark_app, tmp_path):
    store = tmp_path / "store"
    with spark_app(store, job="wc-cluster", master="local-cluster[2,1,1024]",
                   conf={"spark.executor.memory": "512m"}) as spark:
        wait_for_executors(spark.sparkContext, 2)  # executors_max == 2 below: both up before the end
        _wordcount_and_groupby(spark)
        app_id, start_ms = spark.sparkContext.applicationId, spark.sparkContext.startTime
    st = store_mod.open(store)
    runs, stages, tasks, execs = st.runs(), st.stages(), st.tasks(), st.executors()
    # app-<second>-0000 is numbered per master: the driver's start tells two clusters' apart
    assert re.fullmatch(r"app-[0-9]{14}-[0-9]{4}", app_id)
    assert list(runs["run_id"]) == [f"{app_id}@{start_ms}"] and list(runs["app_id"]) == [app_id]
    run = runs.iloc[0]
    assert run.status == "succeeded" and run.job == "wc-cluster" and run.source == "listener"
    assert run.master == "local-cluster[2,1,1024]" and run.executors_requested == 2
    assert run.executors_max == 2 and run.executor_cores == 1 and run.task_slots == 2
    assert 0 < run.executors_mean <= 2
    assert run.executor_memory_mb == 512
    props = json.loads(run.properties_json)
    assert props["spark.executor.memory"] == "512m" and props["spark.sparkpredict.job"] == "wc-cluster"
    assert run.end_ms >= run.start_ms and run.wall_ms == run.end_ms - run.start_ms
    # rows of the tables agree with each other
    assert len(tasks) == run.num_tasks and run.num_failed_tasks == 0
    assert len(stages) == run.num_stages and run.num_jobs >= 2
    assert run.shuffle_write_bytes == tasks["shuffle_write_bytes"].sum() > 0
    assert run.shuffle_read_bytes == tasks["shuffle_read_bytes"].sum() > 0
    assert run.executor_run_time_ms == tasks["executor_run_time_ms"].sum()
    _check_stage_sums(stages, tasks)
    shuffle_map = stages[stages["shuffle_write_bytes"] > 0]
    reducers = stages[stages["shuffle_read_bytes"] > 0]
    assert len(shuffle_map) >= 2 and len(reducers) >= 2
    assert (reducers["shuffle_remote_read_bytes"] + reducers["shuffle_local_read_bytes"]
            == reducers["shuffle_read_bytes"]).all()
    assert all(json.loads(p) for p in reducers["parent_stage_ids_json"])
    assert stages["job_id"].notna().all() and (stages["status"] == "succeeded").all()
    # tasks ran on the two executors, never on the driver
    assert set(tasks["executor_id"]) == {"0", "1"} == set(execs["executor_id"])
    assert (execs["cores"] == 1).all() and (execs["memory_mb"] == 512).all()
    assert (tasks["status"] == "SUCCESS").all()
    assert (tasks["duration_ms"] == tasks["finish_ms"] - tasks["launch_ms"]).all()


def test_failed_job_records_failed_run_and_store_reads_in_spark(spark_app, tmp_path):
    store = tmp_path / "store"
    with spark_app(store, job="fails") as spark:
        def boom(x):
            raise ValueError("boom on purpose")

        with pytest.raises(Exception, match="boom on purpose"):
            spark.sparkContext.parallelize(range(4), 2).map(boom).collect()
    run = store_mod.open(store).runs().iloc[0]
    assert run.status == "failed" and "boom on purpose" in run.error_message
    assert run.num_failed_tasks >= 1 and run.end_ms is not None
    # the files are plain Parquet that Spark itself reads (hidden temp names are skipped)
    with spark_app(tmp_path / "other", job="reader") as spark:
        runs = spark.read.parquet(str(store / "runs"))
        assert set(runs.columns) == set(S.TABLES["runs"].names)
        rows = runs.collect()
        # one run; a run row per batch it was flushed in: the latest is what the store says
        assert {r.run_id for r in rows} == {run.run_id}
        assert max(rows, key=lambda r: r.updated_ms).status == "failed"
        assert spark.read.parquet(str(store / "stages")).count() >= 1
        assert spark.read.parquet(str(store / "tasks")).filter("status != 'SUCCESS'").count() >= 1


def _listener_error_once_it_says(spark, needle: str, timeout_s: float = 30.0) -> str | None:
    """listener_error once it contains ``needle`` (or at the timeout): the listener writes a
    job's rows when it hears of the job's end on Spark's asynchronous listener bus, which can be
    just after the action has returned here."""
    import time

    from sparkpredict.capture.listener import listener_error

    deadline = time.monotonic() + timeout_s
    while True:
        err = listener_error(spark)
        if (err is not None and needle in err) or time.monotonic() > deadline:
            return err
        time.sleep(0.05)


def test_foreign_folder_is_left_alone_and_app_succeeds(spark_app, tmp_path):
    folder = tmp_path / "photos"
    folder.mkdir()
    (folder / "holiday.jpg").write_bytes(b"not a store")
    with spark_app(folder, job="foreign") as spark:
        assert spark.sparkContext.parallelize(range(100), 2).sum() == 4950
        err = _listener_error_once_it_says(spark, "not a sparkpredict store")
    assert err is not None and "not a sparkpredict store" in err and "it holds other files (holiday.jpg)" in err
    assert sorted(p.name for p in folder.iterdir()) == ["holiday.jpg"]


def test_unwritable_store_keeps_rows_until_it_can_write(spark_app, tmp_path):
    """The store's parent is a file: flushes fail (logged once) and the rows are kept; once
    the path becomes writable, the next flush writes everything, earlier jobs included."""
    blocker = tmp_path / "blocked"
    blocker.write_text("a file where the store's parent folder should be")
    store = blocker / "store"
    from sparkpredict.capture.listener import listener_error

    with spark_app(store, job="unwritable") as spark:
        # a new application starts clean, whatever an earlier one in this JVM logged
        assert listener_error(spark) is None
        sc = spark.sparkContext
        assert sc.parallelize(range(10), 2).count() == 10
        err = _listener_error_once_it_says(spark, "cannot write to store")
        assert err is not None and "cannot write to store" in err
        blocker.unlink()
        assert sc.parallelize(range(10), 3).map(lambda x: (x % 2, x)).reduceByKey(lambda a, b: a + b).count() == 2
    st = store_mod.open(store)
    run = st.runs().iloc[0]
    assert run.status == "succeeded" and run.num_jobs == 2
    stages = st.stages()
    assert sorted(stages["job_id"].unique()) == [0, 1]  # the first job's rows were not lost
    assert len(st.tasks()) == run.num_tasks == 2 + 3 + 3


def test_a_store_path_with_a_space_is_the_folder_python_reads(spark_app, tmp_path):
    """Hadoop's Path keeps percent escapes: a file: URI from Path.as_uri() ("a%20b") made the
    listener write into a folder Python never reads."""
    store = tmp_path / "my runs" / "store"
    with spark_app(store, job="spaced") as spark:
        assert spark.sparkContext.parallelize(range(10), 2).count() == 10
    assert len(store_mod.open(store).runs()) == 1
    assert not (tmp_path / "my%20runs").exists()


def test_tasks_off_and_declared_input(spark_app, tmp_path):
    store = tmp_path / "store"
    with spark_app(store, job="no-tasks", conf={"spark.sparkpredict.tasks": "false",
                                                "spark.sparkpredict.inputBytes": "2k"}) as spark:
        assert spark.sparkContext.parallelize(range(100), 4).map(lambda x: (x % 3, 1)).reduceByKey(
            lambda a, b: a + b).count() == 3
    st = store_mod.open(store)
    run = st.runs().iloc[0]
    assert st.tasks().empty and run.num_tasks == 8
    assert run.input_bytes == 2048 and run.input_bytes_source == "declared"
    assert st.stages()["num_task_rows"].sum() == 8


def test_a_bad_declared_input_size_costs_only_the_declaration(spark_app, tmp_path):
    """A comment after the value in spark-defaults.conf becomes part of it: the listener used to
    stop recording the whole application at its first job end (NumberFormatException)."""
    store = tmp_path / "store"
    with spark_app(store, job="bad-size", conf={"spark.sparkpredict.inputBytes": "120g   # declared size"}) as spark:
        assert spark.sparkContext.parallelize(range(100), 2).count() == 100
    run = store_mod.open(store).runs().iloc[0]
    assert run.status == "succeeded" and run.num_jobs == 1
    assert run.input_bytes_source == "measured"


def test_bad_tuning_settings_cost_only_themselves(spark_app, tmp_path):
    """A mistyped tuning knob (a Spark duration where a number of ms was read, a word for a
    flag) threw from the listener's constructor: a stack trace, and nothing recorded. Now each
    falls back to its default; the ...Ms keys take Spark durations."""
    store = tmp_path / "store"
    conf = {"spark.sparkpredict.flushIntervalMs": "5s", "spark.sparkpredict.stopTimeoutMs": "soon",
            "spark.sparkpredict.tasks": "yes", "spark.sparkpredict.flushEveryTasks": "-1",
            "spark.sparkpredict.hostSampleIntervalMs": "1s"}
    with spark_app(store, job="bad-knobs", conf=conf) as spark:
        assert spark.sparkContext.parallelize(range(100), 2).count() == 100
    st = store_mod.open(store)
    run = st.runs().iloc[0]
    assert (run.status, run.num_jobs) == ("succeeded", 1)
    assert len(st.read("tasks")) == 2  # tasks=yes: the default, true, not "no task rows"
    assert len(st.read("host_samples")) > 0  # 1s read as 1000 ms, not as no sampling


def test_flush_every_tasks_0_is_the_default_not_a_batch_per_task(spark_app, tmp_path):
    """0 was read as 1: a batch per task, and rows held capped at 4, so a stress review's
    3,000 tasks kept 316 task rows."""
    store = tmp_path / "store"
    with spark_app(store, job="every-0", conf={"spark.sparkpredict.flushEveryTasks": "0"}) as spark:
        assert spark.sparkContext.parallelize(range(600), 600).count() == 600
    st = store_mod.open(store)
    assert len(st.read("tasks")) == 600 and len(st.committed_batches()) <= 3


def test_measured_input_bytes_from_stages_without_parents(spark_app, tmp_path):
    data = tmp_path / "data.txt"
    data.write_text("x\n" * 50_000)
    store = tmp_path / "store"
    with spark_app(store, job="input") as spark:
        assert spark.sparkContext.textFile(str(data), 2).count() == 50_000
    st = store_mod.open(store)
    run = st.runs().iloc[0]
    assert run.input_bytes_source == "measured"
    assert run.input_bytes == st.stages()["input_bytes"].sum() >= data.stat().st_size


def test_running_jvm_accepts_attach_when_listener_is_loaded(spark_app, tmp_path):
    """In this process the JVM started with the jar, so attach() can configure later sessions."""
    from pyspark.sql import SparkSession

    import sparkpredict

    with spark_app(tmp_path / "s1", job="first"):
        pass
    builder = sparkpredict.attach(SparkSession.builder.master("local[1]").appName("attached"),
                                  store=str(tmp_path / "s2"), job="attached")
    spark = builder.config("spark.ui.enabled", "false").getOrCreate()
    try:
        assert spark.sparkContext.parallelize(range(3)).count() == 3
    finally:
        spark.stop()
    assert store_mod.open(tmp_path / "s2").runs().iloc[0].job == "attached"


def test_default_store_follows_the_python_rule(spark_app, tmp_path):
    """Without spark.sparkpredict.store the listener records where Python reads by default:
    $SPARKPREDICT_STORE when set and not empty (conftest sets it before the JVM starts), else
    ~/.sparkpredict/store; a local path as a file: URI, so fs.defaultFS (HDFS) never claims it."""
    from sparkpredict.config import resolve_store

    with spark_app(tmp_path / "store", job="default-store") as spark:
        listener = spark._jvm.io.sparkpredict.SparkPredictListener
        assert listener.defaultStore() == "file:" + resolve_store(None)
        home, cwd = "/home/u", "/work/here"
        assert listener.defaultStore(None, home, cwd) == "file:/home/u/.sparkpredict/store"
        assert listener.defaultStore("", home, cwd) == "file:/home/u/.sparkpredict/store"
        assert listener.defaultStore("~/runs/store", home, cwd) == "file:/home/u/runs/store"
        assert listener.defaultStore("rel/./store", home, cwd) == "file:/work/here/rel/store"
        for uri in ("hdfs://nn:8020/sp/store", "s3a://bucket/store", "file:///tmp/store"):
            assert listener.defaultStore(uri, home, cwd) == uri
            assert listener.localStore(uri, home, cwd) == uri
        # An explicit spark.sparkpredict.store without a scheme: the folder Python reads, by the
        # same rule (it was a Hadoop path of fs.defaultFS, "~/st" the folder "~" under the
        # driver's working folder, and Python followed links where Hadoop does not).
        real = tmp_path / "real" / "sub"
        real.mkdir(parents=True)
        (tmp_path / "link").symlink_to(real)
        home, cwd = str(tmp_path / "home"), str(tmp_path)
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("HOME", home)
            mp.chdir(cwd)
            for value in ("~", "~/st", "rel/st", "link/../st", f"{tmp_path}/a/./b/../c", "~user/st", "//nn/x"):
                assert listener.localStore(value, home, cwd) == "file:" + resolve_store(value), value
        assert resolve_store(f"{tmp_path}/link/../st") == f"{tmp_path}/st"  # lexical, as Hadoop's Path
        # a scheme without its slashes is a Hadoop path to the listener (as before), and Python
        # says how to write it, where it was the local folder "hdfs:"
        assert listener.localStore("hdfs:/sp/store", home, cwd) == "hdfs:/sp/store"
        with pytest.raises(StoreError, match="without '//'") as e:
            resolve_store("hdfs:/sp/store")
        assert "hdfs:///sp/store" in e.value.fix


def test_a_local_store_the_jvm_cannot_name_is_found_before_anything_is_written(spark_app, tmp_path):
    """The rule the listener refuses a store by under a locale that cannot name it (LC_ALL=C:
    sun.jnu.encoding ASCII); tests/test_listener_locale.py runs it under that locale. Only a
    local folder's name counts, as Hadoop's local file system takes it: a file: URI's percent
    escapes are kept (ASCII), the home and working folder are part of a plain path."""
    with spark_app(tmp_path / "store", job="unnameable") as spark:
        refused = spark._jvm.io.sparkpredict.SparkPredictListener.unnameableStore
        home, cwd, ascii_ = "/home/u", "/work/here", "ANSI_X3.4-1968"  # the C locale's name for ASCII
        for store, h, c in [("/data/ünï", home, cwd), ("file:///data/ünï", home, cwd), ("FILE:/data/ünï", home, cwd),
                            ("~/st", "/home/jürgen", cwd), ("rel/st", home, "/work/dü"),
                            ("/data/\ufffd\ufffd", home, cwd)]:  # a name the JVM's locale could not read
            msg = refused(store, h, c, ascii_)
            assert msg is not None and "cannot write the folder's name" in msg, store
            assert msg.startswith(f"sparkpredict: cannot record into store {store}: this JVM names files in US-ASCII")
            assert "export LC_ALL=C.UTF-8" in msg and "spark.sparkpredict.store to a path of ASCII" in msg
        # '?' is what an ASCII locale makes of what it cannot read (a --conf on spark-submit's command line)
        assert "'?' in the folder's name" in refused("/data/??n??", home, cwd, ascii_)
        for store in ("hdfs://nn:8020/ünï", "s3a://bucket/ünï", "file:///data/%C3%BC", "/data/store", "~/st"):
            assert refused(store, home, cwd, ascii_) is None, store
        for store, charset in [("/data/ünï", "UTF-8"), ("/data/a?b", "UTF-8"), ("/data/ünï", "ISO-8859-1"),
                               ("/data/ünï", "no-such-charset"), ("/data/ünï", None)]:
            assert refused(store, home, cwd, charset) is None, (store, charset)


def test_listener_error_says_when_the_listener_is_not_attached(spark_app, tmp_path):
    """A session of this JVM (which has the jar) started without the listener records nothing;
    listener_error said None ("all went well"), or an earlier application's error."""
    from pyspark.sql import SparkSession

    from sparkpredict.capture.listener import listener_error

    with spark_app(tmp_path / "s", job="attached") as spark:
        assert listener_error(spark) is None
    assert listener_error(spark) is None  # stopped: still the JVM's last listener's word
    # spark-submit made the first session's settings JVM system properties: unset it explicitly
    spark = (SparkSession.builder.master("local[1]").appName("plain").config("spark.ui.enabled", "false")
             .config("spark.extraListeners", "").getOrCreate())
    try:
        err = listener_error(spark)
    finally:
        spark.stop()
    assert err is not None and "listener is not attached" in err
    assert "sparkpredict.attach(SparkSession.builder" in err


def test_a_long_running_driver_keeps_no_state_for_stages_that_ended(spark_app, tmp_path):
    """Every completed stage stayed in two maps (~130 bytes each) until the application ended:
    a Thrift server or a streaming driver that runs millions of stages grew without bound."""
    import time

    store = tmp_path / "store"
    with spark_app(store, job="many-stages") as spark:
        sc = spark.sparkContext
        for _ in range(20):
            sc.parallelize(range(20), 2).map(lambda x: (x % 3, x)).reduceByKey(lambda a, b: a + b).count()
        listener = spark._jvm.io.sparkpredict.SparkPredictListener
        deadline = time.monotonic() + 20  # the listener hears of the last job's end asynchronously
        while listener.trackedStages() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert listener.trackedStages() == 0
    stages = store_mod.open(store).stages()
    assert len(stages) == 40 and sorted(stages["job_id"].unique()) == list(range(20))


def test_unpersisted_rdds_are_forgotten_and_one_persisted_again_reads_its_source(spark_app, tmp_path):
    """Every persisted RDD a stage computed was remembered until the application ended: a
    streaming driver that persists each micro-batch grew by one per batch, and an RDD persisted
    again after unpersist() was taken to read its cache, its second read of the source lost."""
    import time

    data = tmp_path / "data.txt"
    data.write_text("a line of text\n" * 5000)
    store = tmp_path / "store"
    with spark_app(store, job="unpersisted") as spark:
        sc = spark.sparkContext
        for _ in range(5):
            cached = sc.parallelize(range(10), 2).persist()
            cached.count()
            cached.unpersist(blocking=True)
        rdd = sc.textFile(str(data), 1).persist()
        rdd.count()
        rdd.unpersist(blocking=True)
        rdd.persist()
        rdd.count()  # its blocks were dropped: it reads the file again
        rdd.unpersist(blocking=True)
        sc.parallelize(range(2), 1).count()  # the listener has heard the unpersist once it hears this job
        listener = spark._jvm.io.sparkpredict.SparkPredictListener
        deadline = time.monotonic() + 20
        while listener.trackedRdds() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert listener.trackedRdds() == 0
    st = store_mod.open(store)
    run, tasks = st.runs().iloc[0], st.tasks()
    assert tasks["input_bytes"].sum() > 0
    assert run.input_bytes == tasks["input_bytes"].sum()  # both reads of the file
