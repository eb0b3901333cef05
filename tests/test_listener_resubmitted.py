"""A lost executor's shuffle output: Spark resubmits its finished map tasks.

Spark then posts a second ``SparkListenerTaskEnd`` (reason ``Resubmitted``) for every finished
shuffle map task whose output the lost executor held, with the same task id and attempt. The
listener and the event-log reader must record each attempt once and count the resubmission
alike (a failed task of its stage and run, as Spark's AppStatusListener counts it). One real
``local-cluster`` application, recorded by the listener and logged, whose last map task kills
its own executor's JVM.
"""
from __future__ import annotations

import json

import pytest
from executor_kill import kill_executor_once, wait_for_executors

from sparkpredict import store
from sparkpredict.capture.eventlog_ingest import ingest_event_logs

pytestmark = [pytest.mark.spark, pytest.mark.cluster]


def test_resubmitted_map_tasks_are_recorded_once_by_listener_and_ingest(spark_app, tmp_path):
    logs = tmp_path / "eventlogs"
    logs.mkdir()
    conf = {"spark.executor.memory": "512m", "spark.eventLog.enabled": "true",
            "spark.eventLog.dir": str(logs), "spark.task.maxFailures": "4"}
    with spark_app(tmp_path / "listener-store", job="resubmit", master="local-cluster[2,1,1024]",
                   conf=conf) as spark:
        wait_for_executors(spark.sparkContext, 2)
        counts = spark.sparkContext.parallelize(range(8000), 8) \
            .mapPartitionsWithIndex(kill_executor_once(str(tmp_path / "killed"), index=7, pause_s=0.4)) \
            .map(lambda r: (r % 10, 1)) \
            .reduceByKey(lambda a, b: a + b).collect()
        assert dict(counts) == {k: 800 for k in range(10)}
        app_id, start_ms = spark.sparkContext.applicationId, spark.sparkContext.startTime
    (log,) = logs.iterdir()
    listener = store.open(tmp_path / "listener-store")
    report = ingest_event_logs([logs], tmp_path / "eventlog-store")
    assert report.files_ingested == 1 and not report.errors
    ingested = store.open(tmp_path / "eventlog-store")

    # what Spark posted: at least one Resubmitted end, for an attempt that had ended before
    import pyarrow as pa

    files = sorted(log.glob("events_*")) if log.is_dir() else [log]
    ends = []
    for f in files:
        data = pa.CompressedInputStream(pa.OSFile(str(f)), "zstd").read() if f.suffix == ".zstd" \
            else f.read_bytes()
        ends += [json.loads(ln) for ln in data.splitlines() if b'"SparkListenerTaskEnd"' in ln]
    resub = [e for e in ends if e["Task End Reason"]["Reason"] == "Resubmitted"]
    assert resub, "no map output was lost: the test did not exercise Resubmitted"
    first = {(e["Task Info"]["Task ID"], e["Task Info"]["Attempt"]) for e in ends
             if e["Task End Reason"]["Reason"] != "Resubmitted"}
    assert {(e["Task Info"]["Task ID"], e["Task Info"]["Attempt"]) for e in resub} <= first

    lt, et = listener.tasks(), ingested.tasks()
    for t in (lt, et):
        assert not t.duplicated(["task_id", "attempt"]).any()
        assert len(t) == len(ends) - len(resub)
    key = ["task_id", "attempt", "status", "stage_id", "stage_attempt_id"]
    assert sorted(map(tuple, lt[key].values.tolist())) == sorted(map(tuple, et[key].values.tolist()))
    lrun, erun = listener.runs().iloc[0], ingested.runs().iloc[0]
    assert lrun.status == erun.status == "succeeded"
    # a local-cluster id is numbered per master: both key the run by it and the driver's start
    assert lrun.run_id == erun.run_id == f"{app_id}@{start_ms}" and lrun.app_id == erun.app_id == app_id
    failed_rows = int((et.status != "SUCCESS").sum())
    assert lrun.num_failed_tasks == erun.num_failed_tasks == failed_rows + len(resub)
    assert lrun.num_tasks == erun.num_tasks == len(et)
    cols = ["stage_id", "stage_attempt_id", "num_task_rows", "num_failed_tasks", "executor_run_time_ms"]
    ls = listener.stages()[cols].sort_values(cols[:2]).reset_index(drop=True)
    es = ingested.stages()[cols].sort_values(cols[:2]).reset_index(drop=True)
    assert ls.values.tolist() == es.values.tolist()
    assert es.num_failed_tasks.sum() >= len(resub)  # counted by the map stage that was still running
