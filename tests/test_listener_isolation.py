"""An event one of the listener's callbacks fails on: the listener loses that event and goes on.

One unexpected exception (an event shape the listener's code did not foresee, a malformed
event another library posted on Spark's listener bus) turned the listener off for the rest of
the application: a driver that runs for weeks (a notebook, a streaming query, a service)
silently stopped recording. Here the malformed events go through Spark's own listener bus,
as another library's would, and real jobs run after them.
"""
from __future__ import annotations

import pytest
from test_listener import _listener_error_once_it_says

from sparkpredict import store as store_mod

pytestmark = pytest.mark.spark


def _scala_object(jvm, name: str):
    package, _, cls = name.rpartition(".")
    return getattr(getattr(jvm, package).__getattr__(cls + "$"), "MODULE$")


def _seq(jvm, *items):
    lst = jvm.java.util.ArrayList()
    for i in items:
        lst.add(i)
    return jvm.scala.jdk.javaapi.CollectionConverters.asScala(lst).toList()


def _post(spark, event) -> None:
    """Post ``event`` on the application's listener bus, as any code in the driver can."""
    spark.sparkContext._jsc.sc().listenerBus().post(event)


def _task_end_without_task_info(spark):
    """A task end with no TaskInfo: Spark's own AppStatusListener checks for one ("can this
    really happen?"); the sparkpredict listener read it, and threw."""
    jvm = spark._jvm
    success = _scala_object(jvm, "org.apache.spark.Success")
    return jvm.org.apache.spark.scheduler.SparkListenerTaskEnd(0, 0, "ResultTask", success, None, None, None)


def _latest_run(store):
    return store_mod.open(store).runs().sort_values("updated_ms").iloc[-1]


def _assert_recorded_whole(st, run, job_ids: list[int], tasks: int) -> None:
    """The stored stages and tasks are those of ``job_ids``, and their sums agree."""
    stages, task_rows = st.stages(), st.tasks()
    assert sorted(stages["job_id"].unique()) == job_ids
    assert len(task_rows) == run.num_tasks == tasks
    assert len(stages) == run.num_stages
    assert stages["num_task_rows"].sum() == len(task_rows)
    by_stage = task_rows.groupby(["stage_id", "stage_attempt_id"])
    for col in ("executor_run_time_ms", "result_size_bytes", "shuffle_write_bytes"):
        want = by_stage[col].sum()
        got = stages.set_index(["stage_id", "stage_attempt_id"])[col].loc[want.index]
        assert (got == want).all(), (col, got, want)
    assert run.executor_run_time_ms == task_rows["executor_run_time_ms"].sum()


def test_a_malformed_event_is_lost_alone_and_the_jobs_after_it_are_recorded(spark_app, tmp_path):
    store = tmp_path / "store"
    with spark_app(store, job="lost-event") as spark:
        sc = spark.sparkContext
        assert sc.parallelize(range(4), 2).count() == 4
        _post(spark, _task_end_without_task_info(spark))
        err = _listener_error_once_it_says(spark, "onTaskEnd")
        # the jobs after it: a shuffle (4 map tasks, 3 reduce tasks) and a count (3 tasks)
        pairs = sc.parallelize(range(100), 4).map(lambda x: (x % 3, x)).reduceByKey(lambda a, b: a + b, 3)
        assert sorted(pairs.collect()) == [(0, 1683), (1, 1617), (2, 1650)]
        assert sc.parallelize(range(10), 3).count() == 10
    st = store_mod.open(store)
    run = _latest_run(store)
    # every job was heard to end: succeeded, and the note says the listener itself lost an event
    assert run.status == "succeeded", (run.status, run.error_message)
    assert run.error_message == (
        "the sparkpredict listener itself failed on 1 event (in onTaskEnd, a java.lang.NullPointerException: "
        "see the driver's log) and recorded it in part or not at all, so this run's figures may be incomplete")
    assert run.num_jobs == 3
    _assert_recorded_whole(st, run, [0, 1, 2], 2 + 4 + 3 + 3)
    # what listener_error said while the application ran
    assert err is not None and err.startswith(
        "sparkpredict listener failed in onTaskEnd and lost that event (1 event lost in this application; "
        "recording goes on): java.lang.NullPointerException"), err


def test_a_job_not_heard_to_end_beside_a_lost_event_leaves_the_run_incomplete(spark_app, tmp_path):
    """As with events Spark drops: a job not heard to end may have ended (its end may be the
    event lost), so the run is incomplete, not killed; and with Spark's drops too, the message
    tells both apart."""
    store = tmp_path / "store"
    with spark_app(store, job="lost-and-dropped") as spark:
        jvm = spark._jvm
        sched = jvm.org.apache.spark.scheduler
        sc = spark.sparkContext
        assert sc.parallelize(range(4), 2).count() == 4
        _post(spark, sched.SparkListenerJobStart(9100, jvm.System.currentTimeMillis(), _seq(jvm),
                                                 jvm.java.util.Properties()))  # no end follows
        _post(spark, sched.SparkListenerStageCompleted(None))  # a completion without its StageInfo
        assert _listener_error_once_it_says(spark, "onStageCompleted") is not None
        assert sc.parallelize(range(6), 3).count() == 6
        spark.sparkContext._jsc.sc().listenerBus().metrics().metricRegistry().counter(
            "queue.shared.numDroppedEvents").inc(3)  # counted where Spark counts its drops
    st = store_mod.open(store)
    run = _latest_run(store)
    assert run.status == "incomplete", (run.status, run.error_message)
    assert run.error_message == (
        "Spark dropped 3 events of the listener's queue (shared, full: see "
        "spark.scheduler.listenerbus.eventqueue.capacity), and the sparkpredict listener itself failed on 1 event "
        "(in onStageCompleted, a java.lang.NullPointerException: see the driver's log) and recorded it in part "
        "or not at all, so this run's figures may be incomplete; 1 job was never heard to end (job 9100)")
    _assert_recorded_whole(st, run, [0, 1], 2 + 3)


def test_the_listener_stops_after_more_lost_events_than_its_bound(spark_app, tmp_path):
    """A failure at every event would lose events, and log, for as long as the driver lives:
    past MAX_LOST_EVENTS the listener stops, its run incomplete and saying why."""
    store = tmp_path / "store"
    with spark_app(store, job="lost-too-many") as spark:
        sc = spark.sparkContext
        bound = spark._jvm.io.sparkpredict.SparkPredictListener.MAX_LOST_EVENTS
        assert bound == 100
        assert sc.parallelize(range(4), 2).count() == 4
        for _ in range(bound):
            _post(spark, _task_end_without_task_info(spark))
        assert sc.parallelize(range(6), 3).count() == 6  # recorded: the bound is not passed yet
        assert _listener_error_once_it_says(spark, f"{bound} events lost") is not None
        _post(spark, _task_end_without_task_info(spark))
        err = _listener_error_once_it_says(spark, "stopped recording")
        assert sc.parallelize(range(8), 4).count() == 8  # not recorded
    stop = (f"sparkpredict listener stopped recording this application after failing on {bound + 1} events, "
            f"more than the {bound} it goes on after (the last in onTaskEnd: java.lang.NullPointerException")
    assert err is not None and err.startswith(stop), err
    st = store_mod.open(store)
    run = _latest_run(store)
    assert run.status == "incomplete" and run.error_message.startswith(stop), (run.status, run.error_message)
    assert run.num_jobs == 2
    _assert_recorded_whole(st, run, [0, 1], 2 + 3)
