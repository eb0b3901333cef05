"""Values of the JVM listener's rows that no other test pinned (found by mutating its Java).

One real ``local[2,4]`` application, recorded by the listener and written to its own event log:
a job whose partition 2 fails once and is retried, a job that fails (four tries of its one
task), a shuffle, and a read of a text file. Each row of the listener must hold what the
store's docs promise: the run's counts are its task rows', a stage's sums and duration figures
are its tasks', a task's attempt is Spark's attempt number; and every column the event-log
ingest also reads must agree with it, value for value.
"""
from __future__ import annotations

import numpy as np
import pytest

from sparkpredict import store
from sparkpredict.capture.eventlog_ingest import ingest_event_logs

pytestmark = pytest.mark.spark

# Columns of each table that the two sources fill differently by design.
_OWN = {
    "runs": {"source", "source_path", "source_fingerprint", "sparkpredict_version", "updated_ms",
             "properties_json"},
    "stages": set(),
    "tasks": set(),
    "executors": set(),
}


def _fails_once(marker: str):
    def run(index, rows):
        import os

        if index == 2 and not os.path.exists(marker):
            open(marker, "w").close()
            raise RuntimeError("a flaky read, retried")
        return [sum(rows)]

    return run


def _always_fails():
    def run(_):
        raise RuntimeError("a bad record")

    return run


@pytest.fixture(scope="module")
def recorded(spark_app, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mutation-gaps-listener")
    logs = tmp / "eventlogs"
    logs.mkdir()
    data = tmp / "words.txt"
    data.write_text("\n".join(f"w{i % 97} w{i % 13}" for i in range(5000)))
    conf = {"spark.eventLog.enabled": "true", "spark.eventLog.dir": str(logs),
            "spark.eventLog.rolling.enabled": "false", "spark.eventLog.compress": "false"}
    with spark_app(tmp / "listener", job="gaps", master="local[2,4]", conf=conf) as spark:
        sc = spark.sparkContext
        out = sc.parallelize(range(800), 8).mapPartitionsWithIndex(_fails_once(str(tmp / "failed"))).collect()
        assert sum(out) == sum(range(800))
        with pytest.raises(Exception, match="a bad record"):
            sc.parallelize([1], 1).map(_always_fails()).collect()
        assert len(sc.parallelize(range(1000), 4).map(lambda x: (x % 5, x))
                   .reduceByKey(lambda a, b: a + b).collect()) == 5
        assert spark.read.text(str(data)).count() == 5000
    report = ingest_event_logs([logs], tmp / "ingested")
    assert report.files_ingested == 1 and not report.errors
    return store.open(tmp / "listener"), store.open(tmp / "ingested")


def test_the_run_counts_its_task_rows_and_their_failures(recorded):
    listener, _ = recorded
    (run,) = listener.runs().itertuples()
    tasks, stages = listener.tasks(), listener.stages()
    failed = int((tasks.status != "SUCCESS").sum())
    # the flaky partition's first try, and the failing job's four tries
    assert failed == 5 and run.num_failed_tasks == failed
    assert run.num_tasks == len(tasks) == stages.num_task_rows.sum()
    assert stages.num_failed_tasks.sum() == failed
    assert run.num_jobs == 4 and run.num_stages == len(stages)
    assert run.status == "succeeded" and run.error_message is None


def test_a_task_row_s_attempt_is_its_try_of_the_partition(recorded):
    listener, _ = recorded
    tasks = listener.tasks()
    flaky = tasks[(tasks.task_index == 2) & (tasks.stage_id == tasks.stage_id.min())].sort_values("task_id")
    assert flaky.attempt.tolist() == [0, 1] and flaky.status.tolist() == ["FAILED", "SUCCESS"]
    one = tasks[tasks.stage_id == tasks.stage_id.min() + 1].sort_values("task_id")
    assert one.attempt.tolist() == [0, 1, 2, 3] and set(one.task_index) == {0}


def test_local_shuffle_reads_count_as_local_bytes(recorded):
    listener, _ = recorded
    tasks = listener.tasks()
    assert tasks.shuffle_read_bytes.sum() > 0
    # local[*]: one executor, every block read locally
    assert (tasks.shuffle_remote_read_bytes == 0).all()
    assert (tasks.shuffle_local_read_bytes + tasks.shuffle_remote_read_bytes == tasks.shuffle_read_bytes).all()


def test_a_stage_s_sums_and_durations_are_its_tasks(recorded):
    listener, _ = recorded
    tasks, stages = listener.tasks(), listener.stages()
    metrics = [c for c in tasks.columns if c in stages.columns and c.endswith(("_ms", "_bytes", "_records"))
               and c not in ("duration_ms",)]
    assert "shuffle_local_read_bytes" in metrics and "executor_cpu_time_ms" in metrics
    for stage in stages.itertuples():
        mine = tasks[(tasks.stage_id == stage.stage_id) & (tasks.stage_attempt_id == stage.stage_attempt_id)]
        assert stage.num_task_rows == len(mine) > 0
        assert stage.num_failed_tasks == (mine.status != "SUCCESS").sum()
        for col in metrics:
            assert getattr(stage, col) == pytest.approx(mine[col].sum()), (stage.stage_id, col)
        d = np.sort(mine.duration_ms.to_numpy())
        assert stage.task_duration_min_ms == d[0] and stage.task_duration_max_ms == d[-1]
        assert stage.task_duration_median_ms == pytest.approx(np.quantile(d, 0.5))
        assert stage.task_duration_p90_ms == pytest.approx(np.quantile(d, 0.9))
        assert stage.duration_ms == stage.completion_ms - stage.submission_ms


@pytest.mark.parametrize("table,key", [("runs", ["run_id"]), ("stages", ["stage_id", "stage_attempt_id"]),
                                       ("tasks", ["task_id"]), ("executors", ["executor_id"])])
def test_every_column_the_event_log_also_holds_agrees(recorded, table, key):
    listener, ingested = recorded
    mine = getattr(listener, table)().sort_values(key).reset_index(drop=True)
    theirs = getattr(ingested, table)().sort_values(key).reset_index(drop=True)
    assert len(mine) == len(theirs) > 0
    differ = {}
    for col in mine.columns:
        if col in _OWN[table] or col not in theirs.columns:
            continue
        a, b = mine[col].tolist(), theirs[col].tolist()
        same = a == pytest.approx(b, nan_ok=True) if mine[col].dtype.kind == "f" else a == b
        if not same:
            differ[col] = (a[:4], b[:4])
    assert not differ


def test_a_last_batch_written_at_its_second_try_ends_stop_at_once(spark_app, tmp_path):
    """The store fails the last batch's first write and takes its second (1 s later): stop()
    returns then, not after spark.sparkpredict.stopTimeoutMs with the batch written anyway."""
    import threading
    import time

    from tests.test_listener import _listener_error_once_it_says

    blocker = tmp_path / "blocked"
    blocker.write_text("a file where the store's parent folder should be")
    st = blocker / "store"
    with spark_app(st, job="last-retry", conf={"spark.sparkpredict.stopTimeoutMs": "120000"}) as spark:
        assert spark.sparkContext.parallelize(range(10), 2).count() == 10
        assert "cannot write to store" in (_listener_error_once_it_says(spark, "cannot write to store") or "")
        stopper = threading.Thread(target=spark.stop, daemon=True)
        t0 = time.monotonic()
        stopper.start()
        time.sleep(0.5)  # the last batch's first write has failed; its next try is at 1 s
        blocker.unlink()
        stopper.join(timeout=240)
        stop_s = time.monotonic() - t0
    assert not stopper.is_alive()
    # the wait it must not make is 120 s: a margin wide enough for a loaded machine's slow stop
    assert stop_s < 60, f"stop() waited {stop_s:.0f} s for a batch written at its second try"
    (run,) = store.open(st).runs().itertuples()
    assert run.status == "succeeded" and run.num_tasks == 2


def test_a_task_end_without_metrics_adds_nothing_to_the_run_s_sums(spark_app, tmp_path):
    """Spark's SparkListenerTaskEnd may carry no metrics ("null if the task failed"): such an
    end counts as a task, and adds nothing to the run's run time and shuffle bytes."""
    from tests.test_listener_isolation import _post, _scala_object

    st = tmp_path / "store"
    with spark_app(st, job="no-metrics") as spark:
        assert spark.sparkContext.parallelize(range(100), 2).map(lambda x: (x % 3, x)) \
            .reduceByKey(lambda a, b: a + b).count() == 3
        jvm = spark._jvm
        local = _scala_object(jvm, "org.apache.spark.scheduler.TaskLocality").PROCESS_LOCAL()
        info = jvm.org.apache.spark.scheduler.TaskInfo(10_000, 0, 0, 0, 1, "driver", "localhost", local, False)
        success = _scala_object(jvm, "org.apache.spark.Success")
        _post(spark, jvm.org.apache.spark.scheduler.SparkListenerTaskEnd(0, 0, "ResultTask", success, info, None, None))
    (run,) = store.open(st).runs().itertuples()
    tasks = store.open(st).tasks()
    assert run.num_tasks == len(tasks) == 2 + 2 + 1 and tasks.executor_run_time_ms.isna().sum() == 1
    assert run.executor_run_time_ms == tasks.executor_run_time_ms.sum()
    assert run.shuffle_read_bytes == tasks.shuffle_read_bytes.sum() > 0
    assert run.shuffle_write_bytes == tasks.shuffle_write_bytes.sum() > 0
