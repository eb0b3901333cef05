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

