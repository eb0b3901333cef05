"""Values of the JVM listener's rows that no other test pinned (the rest of the second mutation
pass of its Java: SparkPredictListener's task ends and flushes, StageTracker's job ends).

A limit that Spark runs as two jobs over one scan: the second job's tasks number the
partitions they run from 0 (their place in the job), and the scan's share of files is that of
the partitions the two jobs ran, not of their places. And host readings taken before the run's
start (a previous application's in the same JVM, read after its listener's last flush and left
queued for a next application without the plugin, whose start would drop them): none of the
run's, told here by a start that Spark's bus posts later than a reading.
"""
from __future__ import annotations

import pytest
from test_listener_isolation import _post, _scala_object
from test_mutation_gaps_listener_java2 import limited_scan_input

from sparkpredict import store as store_mod

pytestmark = pytest.mark.spark


def test_a_limit_run_as_two_jobs_counts_the_partitions_each_ran(spark_app, tmp_path):
    """`limit(30_000).collect()` over four files of 25,000 rows, one a partition: Spark's first
    job runs partition 0, too few rows, and a second job partition 1, as its task 0. Two
    partitions of four ran: half the files, as the ingest of its event log counts too.
    Mutant: SparkPredictListener.taskEnd taking a task's index for its partition (the second
    job's partition 1 was taken for partition 0 again: a quarter of the files)."""
    recorded, size = limited_scan_input(spark_app, tmp_path, initial_partitions=1, rows=30_000)
    assert recorded == int(size * 2 / 4)


def test_host_samples_read_before_the_runs_start_are_not_the_runs(spark_app, tmp_path):
    """Spark's bus tells the listener, after the application's own start, a start an hour on:
    every host reading after that (the last, at the application's end, at least) was taken
    before the run's start, as a previous application's in the same JVM are, and is none of the
    run's. Posted on the bus, the event comes after Spark's own start whatever the timing.
    Mutant: SparkPredictListener.hostRows keeping samples older than the run's start."""
    store = tmp_path / "store"
    with spark_app(store, job="later-start", conf={"spark.sparkpredict.hostSampleIntervalMs": "60000"}) as spark:
        jvm, sc = spark._jvm, spark.sparkContext
        before_ms = jvm.System.currentTimeMillis()
        none = _scala_object(jvm, "scala.None")
        _post(spark, jvm.org.apache.spark.scheduler.SparkListenerApplicationStart(
            sc.appName, jvm.scala.Some(sc.applicationId), before_ms + 3_600_000, sc.sparkUser(), none, none, none))
        assert spark.range(1000).count() == 1000
    st = store_mod.open(store)
    [start_ms] = st.runs()["start_ms"].unique()
    assert start_ms == before_ms + 3_600_000
    assert (st.read("host_samples")["time_ms"] < before_ms).all()
