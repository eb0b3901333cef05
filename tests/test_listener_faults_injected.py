"""Events whose parts fail when the listener reads them, well into a callback.

test_listener_isolation.py posts events that fail at the first read (a null TaskInfo). Here the
failure comes later: a TaskInfo, TaskMetrics, StageInfo, job end, ExecutorInfo or SQL event (a
plan, the driver's metric updates) whose getter throws on the n-th read by the listener
(tests/data/faults, compiled once per module and put on the driver's classpath with ADD JAR). Such a callback must count nothing of its event, so the
stored stages, tasks and run totals stay those of the same tasks; the JVM's own errors
(OutOfMemoryError, StackOverflowError) stop the recording at once, the run ending incomplete
and saying why, and never reach Spark. Also: flushIntervalMs and stopTimeoutMs far past a year
(MAX_MS) neither wrap negative nor hang.
"""
from __future__ import annotations

import time
import zipfile
from pathlib import Path

import pytest
from py4j.java_gateway import JavaClass
from test_listener import _listener_error_once_it_says
from test_listener_isolation import _assert_recorded_whole, _latest_run, _post

from sparkpredict import store as store_mod

pytestmark = pytest.mark.spark

SOURCE = Path(__file__).parent / "data" / "faults" / "faultinjection" / "Faults.java"


@pytest.fixture(scope="module")
def faults_jar(tmp_path_factory) -> Path:
    """tests/data/faults compiled against pyspark's jars (about 3.5 s)."""
    import subprocess

    from sparkpredict.capture.listener import _find_javac, pyspark_home

    root = tmp_path_factory.mktemp("faults")
    proc = subprocess.run([_find_javac(), "-nowarn", "-d", str(root / "classes"), "-cp",
                           str(pyspark_home() / "jars" / "*"), str(SOURCE)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    jar = root / "faults.jar"
    with zipfile.ZipFile(jar, "w") as z:
        for f in sorted((root / "classes").rglob("*.class")):
            z.write(f, f.relative_to(root / "classes").as_posix())
    return jar


def _faults(spark, jar: Path):
    """The helper class in this driver. The test process's JVM started before this module (one
    per process, see conftest): ADD JAR puts the jar on Spark SQL's session class loader, which
    then loads the classes py4j asks for; once added it stays for the JVM's life."""
    jvm = spark._jvm
    if not isinstance(jvm.faultinjection.Faults, JavaClass):
        spark.sql(f"ADD JAR '{jar}'").collect()
    faults = jvm.faultinjection.Faults
    assert isinstance(faults, JavaClass)
    return faults


def _bus_drained(spark) -> None:
    """Wait until Spark's listener bus has delivered every event posted so far."""
    spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty()


# (part, getter, good reads before it throws). A getter failing on its second or later read
# stands for any read after the callback began counting: there is none, so those faults fire
# only where the listener reads a getter again before counting, and lose the event whole.
TASK_FAULTS = [
    ("info", "finishTime", 0),        # read after the metrics
    ("info", "partitionId", 0),
    ("info", "status", 0),
    ("info", "speculative", 0),       # the last read of the task row
    ("metrics", "peakExecutionMemory", 0),  # the last metric
    ("metrics", "inputMetrics", 2),   # a third read: the run's input
    ("metrics", "executorRunTime", 1),     # read again for the run's total
    ("metrics", "shuffleReadMetrics", 5),  # ditto
    ("metrics", "shuffleWriteMetrics", 3),  # ditto
]


def test_a_task_end_failing_halfway_counts_nothing_of_it(spark_app, faults_jar, tmp_path):
    store = tmp_path / "store"
    with spark_app(store, job="task-end-faults") as spark:
        sc = spark.sparkContext
        F = _faults(spark, faults_jar)
        assert sc.parallelize(range(4), 2).count() == 4
        stage = F.stage(9000, 1 + len(TASK_FAULTS), False, None)
        _post(spark, F.jobStart(9000, [stage]))
        _post(spark, F.stageSubmitted(stage))
        _post(spark, F.taskEnd(9000, 900000, 0, 7, 11, None, None))
        faults = []
        for i, (part, getter, after) in enumerate(TASK_FAULTS, start=1):
            f = F.fault(getter, "runtime", after)
            faults.append(f)
            info, metrics = (f, None) if part == "info" else (None, f)
            _post(spark, F.taskEnd(9000, 900000 + i, i, 100 + i, 1000 + i, info, metrics))
        _post(spark, F.stageCompleted(F.stage(9000, 1 + len(TASK_FAULTS), True, None)))
        _post(spark, F.jobEnd(9000, None))
        _bus_drained(spark)
        fired = [f.fired() for f in faults]
        # each first read failed (the event reached the fault), and no fault failed twice
        assert all(n == 1 for n, (_, _, after) in zip(fired, TASK_FAULTS) if after == 0), fired
        assert all(n <= 1 for n in fired), fired
        lost = sum(fired)
        assert _listener_error_once_it_says(spark, "onTaskEnd") is not None
        assert sc.parallelize(range(6), 3).count() == 6
    st = store_mod.open(store)
    run = _latest_run(store)
    assert run.status == "succeeded", (run.status, run.error_message)
    assert run.error_message == (
        f"the sparkpredict listener itself failed on {lost} events (the first in onTaskEnd, a "
        "java.lang.IllegalStateException: see the driver's log) and recorded them in part or not at all, "
        "so this run's figures may be incomplete")
    recorded = 1 + len(TASK_FAULTS) - lost
    _assert_recorded_whole(st, run, [0, 1, 9000], 2 + recorded + 3)
    tasks = st.tasks()
    injected = tasks[tasks["stage_id"] == 9000]
    kept = {900000} | {900000 + i for i, n in enumerate(fired, start=1) if n == 0}
    assert set(injected["task_id"]) == kept


def test_a_stage_completion_failing_halfway_leaves_the_stage_to_its_next_completion(
        spark_app, faults_jar, tmp_path):
    """A completion lost whole leaves the attempt running, its sums kept: the completion that
    follows records it. One that had counted the attempt completed before it threw left it
    never recorded (a repeat, to the next), its task rows without their stage."""
    store = tmp_path / "store"
    faults_at = [("completionTime", 0), ("failureReason", 0), ("accumulables", 0),
                 ("stageId", 4)]  # stageId: read again after the attempt was counted
    with spark_app(store, job="stage-faults") as spark:
        sc = spark.sparkContext
        F = _faults(spark, faults_jar)
        assert sc.parallelize(range(4), 2).count() == 4
        stage = F.stage(9001, 2, False, None)
        _post(spark, F.jobStart(9001, [stage]))
        submit_fault = F.fault("attemptNumber", "runtime", 0)
        _post(spark, F.stageSubmitted(F.stage(9001, 2, False, submit_fault)))
        _post(spark, F.stageSubmitted(stage))
        _post(spark, F.taskEnd(9001, 900100, 0, 7, 11, None, None))
        _post(spark, F.taskEnd(9001, 900101, 1, 9, 13, None, None))
        faults = [F.fault(getter, "runtime", after) for getter, after in faults_at]
        for f in faults:
            _post(spark, F.stageCompleted(F.stage(9001, 2, True, f)))
        _post(spark, F.stageCompleted(F.stage(9001, 2, True, None)))
        _post(spark, F.jobEnd(9001, None))
        _bus_drained(spark)
        fired = [f.fired() for f in faults]
        assert submit_fault.fired() == 1 and fired[:3] == [1, 1, 1], (submit_fault.fired(), fired)
        assert sc.parallelize(range(6), 3).count() == 6
    st = store_mod.open(store)
    run = _latest_run(store)
    lost = 1 + sum(fired)
    assert run.status == "succeeded", (run.status, run.error_message)
    assert run.error_message.startswith(
        f"the sparkpredict listener itself failed on {lost} events (the first in onStageSubmitted, a "
        "java.lang.IllegalStateException"), run.error_message
    _assert_recorded_whole(st, run, [0, 1, 9001], 2 + 2 + 3)
    stages = st.stages()
    row = stages[stages["stage_id"] == 9001]
    assert len(row) == 1 and row.iloc[0]["num_task_rows"] == 2 and row.iloc[0]["executor_run_time_ms"] == 16


def test_a_job_end_or_executor_added_failing_halfway_counts_nothing_of_it(spark_app, faults_jar, tmp_path):
    """A job end lost whole leaves its job not heard to end, as a job end Spark drops does
    (the run is then incomplete, not succeeded); a lost executor addition adds no executor."""
    store = tmp_path / "store"
    with spark_app(store, job="job-end-faults") as spark:
        sc = spark.sparkContext
        F = _faults(spark, faults_jar)
        assert sc.parallelize(range(4), 2).count() == 4
        result = F.fault("jobResult", "runtime", 0)
        again = F.fault("jobId", "runtime", 1)  # jobId read again after the job was counted ended
        profile = F.fault("resourceProfileId", "runtime", 0)  # the executor's last read
        _post(spark, F.jobStart(9100, []))
        _post(spark, F.jobStart(9101, []))
        _post(spark, F.jobEnd(9100, result))
        _post(spark, F.jobEnd(9101, again))
        _post(spark, F.executorAdded("injected-1", 3, profile))
        _post(spark, F.executorAdded("injected-2", 2, None))
        _bus_drained(spark)
        assert result.fired() == 1 and profile.fired() == 1, (result.fired(), profile.fired())
        assert again.fired() <= 1
        assert sc.parallelize(range(6), 3).count() == 6
    st = store_mod.open(store)
    run = _latest_run(store)
    lost = 2 + again.fired()
    assert run.status == "incomplete", (run.status, run.error_message)
    assert run.error_message == (
        f"the sparkpredict listener itself failed on {lost} events (the first in onJobEnd, a "
        "java.lang.IllegalStateException: see the driver's log) and recorded them in part or not at all, "
        "so this run's figures may be incomplete; 1 job was never heard to end (job 9100)")
    assert run.num_jobs == 4
    _assert_recorded_whole(st, run, [0, 1], 2 + 3)
    executors = set(st.executors()["executor_id"])
    assert "injected-2" in executors and "injected-1" not in executors, executors


@pytest.mark.parametrize("kind,error", [("oom", "java.lang.OutOfMemoryError"),
                                        ("stackoverflow", "java.lang.StackOverflowError")])
def test_a_jvm_error_in_a_callback_stops_the_recording_at_once(spark_app, faults_jar, tmp_path, kind, error):
    """The JVM's own error on an event: nothing the listener does after it is safe, so it
    records nothing more; the run ends incomplete naming the error (not left `running`, as a
    driver still going or killed by SIGKILL is), with the rows written before; Spark never
    hears of it: the jobs after it run, and a listener beside it on the same queue hears them."""
    store = tmp_path / "store"
    with spark_app(store, job=f"jvm-error-{kind}") as spark:
        sc = spark.sparkContext
        F = _faults(spark, faults_jar)
        beside = F.JobEnds()
        sc._jsc.sc().addSparkListener(beside)
        assert sc.parallelize(range(4), 2).count() == 4
        fault = F.fault("finishTime", kind, 0)
        _post(spark, F.taskEnd(0, 900200, 0, 7, 11, fault, None))
        err = _listener_error_once_it_says(spark, "stopped recording")
        assert fault.fired() == 1
        pairs = sc.parallelize(range(100), 4).map(lambda x: (x % 3, x)).reduceByKey(lambda a, b: a + b, 3)
        assert sorted(pairs.collect()) == [(0, 1683), (1, 1617), (2, 1650)]
        assert sc.parallelize(range(8), 4).count() == 8
        _bus_drained(spark)
        assert beside.count() == 3  # the queue's thread lives on: the two jobs after the error too
        assert not sc._jsc.sc().isStopped()
    stop = (f"sparkpredict listener failed in onTaskEnd and stopped recording this application: "
            f"{error}: injected fault in finishTime")
    assert err == stop
    st = store_mod.open(store)
    run = _latest_run(store)
    assert (run.status, run.error_message) == ("incomplete", stop)
    assert run.num_jobs == 1  # nothing after the error
    _assert_recorded_whole(st, run, [0], 2)


@pytest.mark.parametrize("kind", ["linkage", "oom"])
def test_the_scan_rule_failing_on_a_completed_stage_never_half_counts_it(spark_app, faults_jar, tmp_path, kind):
    """The SQL scan rule reads a completed stage's accumulables after its row is built. A
    NoClassDefFoundError there (a Spark SQL class missing or changed in another Spark) turns
    the rule off, and the stage is recorded; it escaped the rule's guard (RuntimeException
    only) after the stage was counted: the event was lost, and num_stages counted a stage with
    no row. The JVM's own error there stops the recording, the stage not counted either."""
    import pandas as pd

    store = tmp_path / "store"
    data = tmp_path / "data.parquet"
    pd.DataFrame({"x": range(1000)}).to_parquet(data)
    with spark_app(store, job=f"scan-rule-{kind}") as spark:
        sc = spark.sparkContext
        F = _faults(spark, faults_jar)
        assert spark.read.parquet(str(data)).count() == 1000  # a file scan: the rule has scans to match
        stage = F.stage(9002, 2, False, None)
        _post(spark, F.jobStart(9002, [stage]))
        _post(spark, F.stageSubmitted(stage))
        _post(spark, F.taskEnd(9002, 900300, 0, 7, 11, None, None))
        _post(spark, F.taskEnd(9002, 900301, 1, 9, 13, None, None))
        fault = F.faultIn("accumulables", kind, 0, "io.sparkpredict.ScanInput")
        _post(spark, F.stageCompleted(F.stage(9002, 2, True, fault)))
        _post(spark, F.jobEnd(9002, None))
        _bus_drained(spark)
        assert fault.fired() == 1
        assert sc.parallelize(range(6), 3).count() == 6
        _bus_drained(spark)
    st = store_mod.open(store)
    run = _latest_run(store)
    stages = st.stages()
    assert len(stages) == run.num_stages, (len(stages), run.num_stages)
    injected = stages[stages["stage_id"] == 9002]
    if kind == "linkage":
        assert (run.status, run.error_message) == ("succeeded", None)
        assert stages["num_task_rows"].sum() == len(st.tasks()) == run.num_tasks
        assert len(injected) == 1 and injected.iloc[0]["num_task_rows"] == 2
        assert injected.iloc[0]["executor_run_time_ms"] == 16 and injected.iloc[0]["job_id"] == 9002
        # the Parquet scan's stage, before the fault, recorded its one file; the stage the rule
        # failed on, none
        assert st.read("stage_scans")[["stage_id", "scan_files"]].values.tolist() == [
            [int(stages.loc[stages["input_bytes"] > 0, "stage_id"].min()), 1]]
    else:  # the task rows handed over before it stay; their stage is not counted
        assert run.status == "incomplete" and "OutOfMemoryError: injected fault in accumulables" in (
            run.error_message), run.error_message
        assert injected.empty


@pytest.mark.parametrize("event,getter,kind", [("start", "children", "linkage"), ("updates", "accumUpdates", "linkage"),
                                                ("start", "metrics", "oom")])
def test_the_scan_rule_failing_on_a_sql_event_turns_it_off_and_only_that(spark_app, faults_jar, tmp_path, event,
                                                                          getter, kind):
    """The SQL events the scan rule reads (an execution's plan, the driver's metric updates):
    a LinkageError there (a Spark SQL class missing or changed in another Spark) turns the rule
    off and nothing else: the scans after it count their tasks' input metric, no event is
    lost, the run succeeds. The JVM's own error there stops the recording with a last batch,
    the run incomplete saying why. Spark never hears of either: the jobs after it run, and a
    listener beside it hears them."""
    import pandas as pd

    store = tmp_path / "store"
    data = tmp_path / "data.parquet"
    pd.DataFrame({"x": range(20_000), "y": [f"row {i}" for i in range(20_000)]}).to_parquet(data)
    with spark_app(store, job=f"scan-sql-{event}-{kind}") as spark:
        sc = spark.sparkContext
        F = _faults(spark, faults_jar)
        beside = F.JobEnds()
        sc._jsc.sc().addSparkListener(beside)
        def scan() -> None:  # reads a column: the files' size and the task metric differ
            assert spark.read.parquet(str(data)).selectExpr("sum(length(y))").collect()[0][0] == 168_890

        scan()  # the rule on: counted by its file's size
        _bus_drained(spark)
        fault = F.fault(getter, kind, 0)
        if event == "start":
            _post(spark, F.sqlExecutionStart(990, fault))
        else:
            _post(spark, F.sqlExecutionStart(990, None))
            _post(spark, F.driverAccumUpdates(990, fault))
        _post(spark, F.sqlExecutionEnd(990))
        _bus_drained(spark)
        assert fault.fired() == 1
        scan()
        pairs = sc.parallelize(range(100), 4).map(lambda x: (x % 3, x)).reduceByKey(lambda a, b: a + b, 3)
        assert sorted(pairs.collect()) == [(0, 1683), (1, 1617), (2, 1650)]
        _bus_drained(spark)
        assert not sc._jsc.sc().isStopped()
        jobs = beside.count()
    assert jobs >= 3  # the queue's thread lives on: the jobs after the fault too
    st = store_mod.open(store)
    run = _latest_run(store)
    stages = st.stages()
    scans = stages[stages["rdd_names_json"].str.contains("FileScanRDD")].sort_values("submission_ms")
    if kind == "linkage":
        assert (run.status, run.error_message) == ("succeeded", None)
        assert len(stages) == run.num_stages and run.num_jobs == stages["job_id"].nunique()
        assert len(scans) == 2 and stages["name"].str.startswith("reduceByKey").any()  # all recorded
        # the run's input: the first scan by its file's size (the rule on), the second by its
        # tasks' input metric (Parquet's vectored reads count about the footer)
        metric = int(scans.iloc[1]["input_bytes"])
        assert 0 < metric < data.stat().st_size // 10
        assert run.input_bytes == data.stat().st_size + metric
    else:
        stop = ("sparkpredict listener failed in onOtherEvent and stopped recording this application: "
                f"java.lang.OutOfMemoryError: injected fault in {getter}")
        assert (run.status, run.error_message) == ("incomplete", stop)
        # nothing after the error; the first scan's rows, written before, stay
        assert len(scans) == 1 and not stages["name"].str.startswith("reduceByKey").any()


HUGE = str(2**63 - 1)  # JavaUtils reads it as ms; past 2^53 a double would round it


def test_intervals_past_a_year_neither_wrap_nor_hang(spark_app, tmp_path, runs_so_far):
    """flushIntervalMs and stopTimeoutMs of 2^63-1 ms are taken as a year (MAX_MS): unbounded,
    now + interval wrapped negative and wrote every batch at once (and a failing store's back-off,
    shifted left, became a busy loop), and now + stop timeout made the application's end give up
    on the last batch at once. The last batch is written, and waited for, at the application's end."""
    store = tmp_path / "store"
    conf = {"spark.sparkpredict.flushIntervalMs": HUGE, "spark.sparkpredict.stopTimeoutMs": HUGE}
    with spark_app(store, job="huge-intervals", conf=conf) as spark:
        sc = spark.sparkContext
        listener = spark._jvm.io.sparkpredict.SparkPredictListener
        assert sc.parallelize(range(4), 2).count() == 4
        deadline = time.monotonic() + 30
        while (runs := runs_so_far(store)) is None:  # the first batch is written at once
            assert time.monotonic() < deadline, "the first batch was not written"
            time.sleep(0.1)
        assert runs.iloc[-1]["num_jobs"] == 1
        assert sc.parallelize(range(6), 3).count() == 6
        _bus_drained(spark)
        time.sleep(1.5)  # a wrapped interval writes the second job's batch now
        assert listener.heldRows("runs") == 1  # waits for the interval: a year
        assert runs_so_far(store).sort_values("updated_ms").iloc[-1]["num_jobs"] == 1
        t0 = time.monotonic()
    stop_s = time.monotonic() - t0
    err = spark._jvm.io.sparkpredict.SparkPredictListener.lastError()
    assert err is None, err
    run = _latest_run(store)
    assert (run.status, run.num_jobs) == ("succeeded", 2), (run.status, run.error_message)
    assert stop_s < 30, stop_s
