"""What the JVM listener keeps in memory for an application that runs for weeks, driven with
constructed Spark events through py4j where a real cluster would take days to produce them."""
from __future__ import annotations

import pandas as pd
import pytest

from sparkpredict import store as store_mod

pytestmark = pytest.mark.spark

MINUTE = 60_000


def _listener(spark):
    """The application's SparkPredictListener instance, to hand events to as Spark's bus would."""
    bus = spark.sparkContext._jsc.sc().listenerBus()
    [found] = [x for x in bus.listeners() if x.getClass().getName() == "io.sparkpredict.SparkPredictListener"]
    return found


def _scala_object(jvm, name: str):
    package, _, cls = name.rpartition(".")
    return getattr(getattr(jvm, package).__getattr__(cls + "$"), "MODULE$")


def _old_run_figures(execs, start: int, end: int, task_cpus: dict[int, int]) -> dict:
    """executors_max, executors_mean, executor_cores and task_slots of a local-mode run row as
    the listener computed them from every executor it ever had (before it forgot removed ones)."""
    def peak(events):
        running = top = 0
        for _, change in sorted(events):
            running += change
            top = max(top, running)
        return top

    alive = sum(max(0, min(r if r is not None else end, end) - max(a, start)) for _, a, r, _, _ in execs)
    top = peak([(a, 1) for _, a, _, _, _ in execs] + [(r, -1) for _, _, r, _, _ in execs if r is not None])
    cores = max(c for *_, c, _ in execs)
    slots = []
    for _, a, r, c, rp in execs:
        n = c // task_cpus.get(rp, 1)
        slots += [(max(a, start), n), (min(r if r is not None else end, end), -n)]
    return {"executors_max": top, "executors_mean": alive / (end - start), "executor_cores": cores,
            "task_slots": peak(slots)}


def test_removed_executors_are_forgotten_and_the_run_row_still_counts_them(spark_app, tmp_path):
    """Every executor an application ever had stayed in the listener's map, its row written,
    and each job end sorted them all for the run row: dynamic allocation over weeks held tens
    of thousands and grew the listener thread's work without bound. 2,000 executors come and
    go here over three days (at most a few at once; two stay); the listener holds the few alive, and the
    run row's executor figures are what the whole timeline gives."""
    store = tmp_path / "store"
    with spark_app(store, job="executor-churn") as spark:
        jvm = spark._jvm
        sched = jvm.org.apache.spark.scheduler
        listener = _listener(spark)
        tracked = jvm.io.sparkpredict.SparkPredictListener.trackedExecutors
        none, empty = jvm.scala.Option.empty(), _scala_object(jvm, "scala.collection.immutable.Map").empty()
        # a driver that runs for three days from now: every event after those Spark posted
        begin = jvm.System.currentTimeMillis() + MINUTE
        rp = jvm.org.apache.spark.resource.ResourceProfileBuilder().require(
            jvm.org.apache.spark.resource.TaskResourceRequests().cpus(2)).build()
        listener.onResourceProfileAdded(sched.SparkListenerResourceProfileAdded(rp))
        task_cpus = {rp.id(): 2}
        # (id, added, removed, cores, profile): one every 2 minutes for 5 minutes, every 400th
        # for an hour, and two alive at the end
        execs = []
        for i in range(2000):
            added = begin + i * 2 * MINUTE + i % 7
            life = 60 * MINUTE if i % 400 == 0 else 5 * MINUTE
            execs.append((f"e{i}", added, added + life, 1 + i % 8, rp.id() if i % 3 == 0 else 0))
        execs += [("stays", begin + 2 * MINUTE, None, 3, 0), ("stays-too", begin + 3000 * MINUTE, None, 5, rp.id())]
        events = sorted([(x[1], "add", x) for x in execs] + [(x[2], "remove", x) for x in execs if x[2] is not None],
                        key=lambda e: e[0])
        succeeded = _scala_object(jvm, "org.apache.spark.scheduler.JobSucceeded")
        assert spark.range(10).count() == 10  # a real job too
        most = 0
        for k, (t, kind, (eid, _, _, cores, profile)) in enumerate(events):
            if kind == "add":
                info = sched.cluster.ExecutorInfo(f"host-{eid}", cores, empty, empty, empty, profile)
                listener.onExecutorAdded(sched.SparkListenerExecutorAdded(t, eid, info))
            else:
                listener.onExecutorRemoved(sched.SparkListenerExecutorRemoved(t, eid, "idle"))
            if k % 100 == 99:  # a job ends: its snapshot hands the removed executors' rows over
                listener.onJobEnd(sched.SparkListenerJobEnd(100_000 + k, t, succeeded))
                most = max(most, tracked())
        end = events[-1][0] + MINUTE
        listener.onApplicationEnd(sched.SparkListenerApplicationEnd(end, none))
        assert 0 < most <= 20, most  # was every executor: 2,000 and growing

    st = store_mod.open(store)
    run = st.runs().sort_values("updated_ms").iloc[-1]
    rows = st.executors()
    assert run.status == "succeeded" and run.end_ms == end
    assert len(rows) == len(execs) + 1 and rows["executor_id"].is_unique
    [driver] = rows[rows["executor_id"] == "driver"].itertuples()
    stored = {r.executor_id: (r.added_ms, None if pd.isna(r.removed_ms) else r.removed_ms) for r in rows.itertuples()}
    assert all(stored[eid] == (a, r) for eid, a, r, _, _ in execs)
    want = _old_run_figures(execs + [("driver", driver.added_ms, None, driver.cores, 0)], run.start_ms, end, task_cpus)
    got = {k: run[k] for k in want}
    assert got == want
    assert want["executors_max"] >= 4 and want["task_slots"] > want["executor_cores"]  # figures with something to get wrong



def _seq(jvm, *items):
    """A Scala immutable Seq of ``items`` (boxed as py4j boxes them)."""
    lst = jvm.java.util.ArrayList()
    for i in items:
        lst.add(i)
    return jvm.scala.jdk.javaapi.CollectionConverters.asScala(lst).toList()


def _stage(jvm, stage_id: int):
    empty = _seq(jvm)
    return jvm.org.apache.spark.scheduler.StageInfo(stage_id, 0, f"stage {stage_id}", 4, empty, empty, "", None,
                                                    empty, jvm.scala.Option.empty(), 0, False, 0)


def test_a_stage_whose_completion_spark_dropped_is_forgotten_at_its_jobs_end(spark_app, tmp_path):
    """Spark drops events from a full listener queue: a stage whose completion was dropped
    kept its task sums (a duration per task) for as long as the driver ran. Its job's end,
    which Spark posts after the stage's completion, now drops them; a stage another running
    job shares stays until that job ends."""
    with spark_app(tmp_path / "store", job="dropped-stage-end") as spark:
        jvm = spark._jvm
        sched = jvm.org.apache.spark.scheduler
        listener = _listener(spark)
        tracked = jvm.io.sparkpredict.SparkPredictListener.trackedStages
        succeeded = _scala_object(jvm, "org.apache.spark.scheduler.JobSucceeded")
        assert spark.range(10).count() == 10
        now = jvm.System.currentTimeMillis()
        before = tracked()
        props = jvm.java.util.Properties()
        listener.onJobStart(sched.SparkListenerJobStart(9000, now, _seq(jvm, _stage(jvm, 9000), _stage(jvm, 9001)), props))
        listener.onJobStart(sched.SparkListenerJobStart(9001, now, _seq(jvm, _stage(jvm, 9001)), props))
        for s in (9000, 9001):
            listener.onStageSubmitted(sched.SparkListenerStageSubmitted(_stage(jvm, s), props))
        # no stage completes: both completions were dropped
        listener.onJobEnd(sched.SparkListenerJobEnd(9000, now + 1, succeeded))
        assert tracked() - before == 2  # stage 9001 (its sums and its job), job 9001 still runs
        listener.onJobEnd(sched.SparkListenerJobEnd(9001, now + 2, succeeded))
        assert tracked() == before


def _drop(spark, n: int) -> None:
    """Count ``n`` events as dropped from the shared queue, in the counter where Spark counts them."""
    bus = spark.sparkContext._jsc.sc().listenerBus()
    bus.metrics().metricRegistry().counter("queue.shared.numDroppedEvents").inc(n)


def test_a_job_not_heard_to_end_after_spark_dropped_events_leaves_the_run_incomplete(spark_app, tmp_path):
    """A job whose end Spark dropped from the full listener queue was taken to be cut short by
    the application's end: a run that succeeded was recorded killed ("1 job was still running
    at the application's end"). With events dropped the run is incomplete, and says so."""
    store = tmp_path / "store"
    with spark_app(store, job="dropped-job-end") as spark:
        jvm = spark._jvm
        listener = _listener(spark)
        assert spark.range(10).count() == 10
        props = jvm.java.util.Properties()
        listener.onJobStart(jvm.org.apache.spark.scheduler.SparkListenerJobStart(
            9100, jvm.System.currentTimeMillis(), _seq(jvm), props))  # its end: dropped
        _drop(spark, 7)
    run = store_mod.open(store).runs().sort_values("updated_ms").iloc[-1]
    assert run.status == "incomplete", run.error_message
    assert run.error_message == (
        "Spark dropped 7 events of the listener's queue (shared, full: see "
        "spark.scheduler.listenerbus.eventqueue.capacity), so this run's figures may be incomplete; "
        "1 job was never heard to end (job 9100)")


def test_a_run_whose_every_job_was_heard_to_end_succeeds_with_the_drop_told(spark_app, tmp_path):
    """Spark dropped events, but every job was heard to end: the run ran to its end and its
    wall time is true. Marked incomplete, a driver where Spark drops events every run had no
    run left to learn from; it succeeds, its message saying its figures may fall short."""
    store = tmp_path / "store"
    with spark_app(store, job="dropped-all-ended") as spark:
        assert spark.range(10).count() == 10
        _drop(spark, 3)
    run = store_mod.open(store).runs().sort_values("updated_ms").iloc[-1]
    assert run.status == "succeeded", run.error_message
    assert run.error_message == ("Spark dropped 3 events of the listener's queue (shared, full: see "
                                 "spark.scheduler.listenerbus.eventqueue.capacity), so this run's figures "
                                 "may be incomplete")


def test_dropped_events_are_told_beside_a_status_known_otherwise(spark_app, tmp_path):
    """The last job failed: the run failed, whatever was dropped, and its message says both."""
    store = tmp_path / "store"
    with spark_app(store, job="dropped-and-failed") as spark:
        with pytest.raises(Exception, match="ZeroDivisionError"):
            spark.sparkContext.parallelize([1], 1).map(lambda x: 1 // (x - 1)).collect()
        _drop(spark, 1)
    run = store_mod.open(store).runs().sort_values("updated_ms").iloc[-1]
    assert run.status == "failed"
    assert "ZeroDivisionError" in run.error_message
    assert run.error_message.endswith("; Spark dropped 1 event of the listener's queue (shared, full: see "
                                      "spark.scheduler.listenerbus.eventqueue.capacity), so this run's "
                                      "figures may be incomplete")



def test_a_stage_completed_after_its_sql_execution_ended_keeps_no_read(spark_app, tmp_path):
    """A stage that completes after its SQL execution ended (adaptive execution cancels the
    stages left once a limit is reached) made a read of the execution's scans that nothing
    removed: one per such query for as long as the driver ran. It counts as before, and goes."""
    store, data = tmp_path / "store", tmp_path / "data"
    with spark_app(store, job="late-stage") as spark:
        jvm = spark._jvm
        sched = jvm.org.apache.spark.scheduler
        listener = _listener(spark)
        spark.range(1000).write.parquet(str(data))
        df = spark.read.parquet(str(data))
        assert len(df.collect()) == 1000  # one read of the files
        leaves = jvm.scala.jdk.javaapi.CollectionConverters.asJava(df._jdf.queryExecution().executedPlan().collectLeaves())
        [scan] = [leaf for leaf in leaves if leaf.metrics().contains("numOutputRows")]
        rows_id = scan.metrics().get("numOutputRows").get().id()
        now, none = jvm.System.currentTimeMillis(), jvm.scala.Option.empty()
        execution = 990_001
        listener.onOtherEvent(jvm.org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd(execution, now, none, none))
        props = jvm.java.util.Properties()
        props.setProperty("spark.sql.execution.id", str(execution))
        listener.onJobStart(sched.SparkListenerJobStart(9300, now, _seq(jvm, _stage(jvm, 9300)), props))
        stage = _stage(jvm, 9300)
        listener.onStageSubmitted(sched.SparkListenerStageSubmitted(stage, props))
        stage.accumulables().put(rows_id, sched.AccumulableInfo(
            rows_id, jvm.scala.Some("number of output rows"), none, jvm.scala.Some(5), False, False, none))
        listener.onStageCompleted(sched.SparkListenerStageCompleted(stage))  # after its execution's end
        listener.onJobEnd(sched.SparkListenerJobEnd(9300, now, _scala_object(jvm, "org.apache.spark.scheduler.JobSucceeded")))
        assert jvm.io.sparkpredict.SparkPredictListener.trackedExecutions() == 0  # was 1, one per such stage
    run = store_mod.open(store).runs().sort_values("updated_ms").iloc[-1]
    files = sum(f.stat().st_size for f in data.glob("part-*.parquet"))
    assert run.input_bytes == 2 * files  # the late stage read them all again, as it counted before
