"""Executors of a second resource profile (stage-level scheduling) have that profile's shape.

Each executor row carries its own cores (as registered) and memory: the memory its resource
profile asks for, or, for the default profile, ``spark.executor.memory``. One shared YARN log
with two profiles, and one real ``local-cluster`` application with dynamic allocation that runs
a stage on a profile of its own, recorded by the listener and by its own event log.
"""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from sparkpredict import store
from sparkpredict.capture.eventlog_ingest import ingest_event_logs

LOGS = Path(__file__).parent / "data" / "eventlogs"


def _executor_shapes(s) -> dict[str, tuple[int, int]]:
    ex = s.executors()
    return {str(r.executor_id): (int(r.cores), int(r.memory_mb)) for r in ex.itertuples()}


def test_shared_log_with_two_profiles_gives_each_executor_its_profiles_memory(tmp_path):
    # profile 0: spark.executor.memory=20g, 4 cores; profile 1 asks for 6144 MiB and 2 cores
    report = ingest_event_logs([LOGS / "rp_nosql_eventlog.json"], tmp_path / "s")
    assert report.files_ingested == 1 and not report.errors
    s = store.open(tmp_path / "s")
    assert _executor_shapes(s) == {"1": (4, 20480), "3": (2, 6144), "4": (2, 6144)}
    run = s.runs().iloc[0]
    assert (run.executor_cores, run.executor_memory_mb) == (4, 20480)  # the default profile's
    # 4 + 2 + 2 cores, profile 1 at 2 cpus a task: 4 + 1 + 1 tasks at once, not 3 x 4
    assert run.task_slots == 6
    # and read back, spark.task.cpus stays the default's 1 (6 slots on 3 x 4 cores had made it 2)
    from sparkpredict.features.stages import run_task_cpus

    assert run_task_cpus(s.runs().iloc[0].to_dict(), 3, 4) == 1


def _added_profiles(log: Path) -> dict[str, int]:
    files = sorted(log.glob("events_*")) if log.is_dir() else [log]
    out = {}
    for f in files:
        data = pa.CompressedInputStream(pa.OSFile(str(f)), "zstd").read() if f.suffix == ".zstd" \
            else f.read_bytes()
        for line in data.splitlines():
            if b'"SparkListenerExecutorAdded"' in line:
                ev = json.loads(line)
                out[ev["Executor ID"]] = ev["Executor Info"]["Resource Profile Id"]
    return out


@pytest.mark.spark
@pytest.mark.cluster
def test_listener_and_event_log_record_a_stage_level_profiles_executors_alike(spark_app, tmp_path):
    from pyspark.resource import (
        ExecutorResourceRequests,
        ResourceProfileBuilder,
        TaskResourceRequests,
    )

    logs = tmp_path / "eventlogs"
    logs.mkdir()
    # Dynamic allocation from zero executors: the profile's stage gets executors of its own,
    # and once they idle out the default stage gets default ones on the same two workers.
    conf = {"spark.executor.memory": "512m", "spark.eventLog.enabled": "true",
            "spark.eventLog.dir": str(logs), "spark.dynamicAllocation.enabled": "true",
            "spark.dynamicAllocation.shuffleTracking.enabled": "true",
            "spark.dynamicAllocation.minExecutors": "0", "spark.dynamicAllocation.initialExecutors": "0",
            "spark.dynamicAllocation.executorIdleTimeout": "2s"}
    with spark_app(tmp_path / "listener-store", job="profiles", master="local-cluster[2,1,1024]",
                   conf=conf) as spark:
        sc = spark.sparkContext
        profile = ResourceProfileBuilder().require(ExecutorResourceRequests().cores(1).memory("600m")) \
            .require(TaskResourceRequests().cpus(1)).build
        assert sc.parallelize(range(100), 4).withResources(profile).map(lambda x: 2 * x).sum() == 9900
        assert sc.parallelize(range(100), 4).map(lambda x: x + 1).sum() == 5050
    (log,) = logs.iterdir()
    profiles = _added_profiles(log)
    # profile ids count up per JVM, so the new profile's is not always 1
    assert 0 in profiles.values() and len(set(profiles.values())) == 2, profiles  # both had executors
    expected = {eid: (1, 512 if pid == 0 else 600) for eid, pid in profiles.items()}

    assert ingest_event_logs([logs], tmp_path / "eventlog-store").files_ingested == 1
    listener, ingested = store.open(tmp_path / "listener-store"), store.open(tmp_path / "eventlog-store")
    assert _executor_shapes(listener) == _executor_shapes(ingested) == expected
    for s in (listener, ingested):
        run = s.runs().iloc[0]
        assert (run.status, run.executor_memory_mb) == ("succeeded", 512)
    # the slots of executors of two profiles, counted alike by both paths
    assert listener.runs().iloc[0].task_slots == ingested.runs().iloc[0].task_slots >= 1
