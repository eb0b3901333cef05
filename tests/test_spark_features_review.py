"""Fixes from a review of Spark features the earlier reviews had not run: Structured Streaming,
barrier stages, ``spark.task.cpus`` that does not divide the executors' cores. Each case is a
real Spark 4.3 event log (tests/data/eventlogs/NOTES.md), read by the ingest and replayed
through the real listener: both sides must record the same run."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from listener_replay import replay

from sparkpredict import store
from sparkpredict.capture.eventlog import parse_event_log

LOGS = Path(__file__).parent / "data" / "eventlogs"
#: log -> what both sides must record (a subset of its runs row, and its stage rows)
CASES = {
    # query.stop() cancels the micro-batch then running, and the application can end while one
    # runs: the run was `failed` ("Job 26 cancelled ... Query was stopped") or `killed`
    "streaming_query_stopped_spark4.zstd": {"status": "succeeded", "error_message": None, "num_stages": 21},
    # 2 executors of 3 cores at spark.task.cpus=2 run 2 tasks at once, not 3 (2 x 3 // 2)
    "task_cpus_not_dividing_cores_spark4.zstd": {"status": "succeeded", "task_slots": 2, "num_stages": 2},
    # Spark posts a failed barrier stage attempt's completion again for each of its tasks that
    # ends after it: the listener wrote 9 stage rows for 4 attempts, 5 of them empty
    "barrier_stage_retried_spark4.zstd": {"status": "failed", "task_slots": 8, "num_stages": 4},
}


def _check(run: dict, stages, want: dict, side: str) -> None:
    assert {k: run[k] for k in want} == want, side
    assert len(stages) == want["num_stages"], side
    assert not stages.duplicated(["stage_id", "stage_attempt_id"]).any(), side


def test_the_ingest_records_streaming_barrier_and_task_cpu_runs_as_they_ran():
    for name, want in CASES.items():
        parsed = parse_event_log(LOGS / name)
        assert parsed.warnings == [], (name, parsed.warnings)  # "stage 0 attempt 0 completed twice" no more
        _check(parsed.tables["runs"].to_pylist()[0], parsed.tables["stages"].to_pandas(), want, f"ingest {name}")
    barrier = parse_event_log(LOGS / "barrier_stage_retried_spark4.zstd").tables["stages"].to_pandas()
    assert sorted(barrier.stage_attempt_id) == [0, 1, 2, 3] and set(barrier.stage_id) == {0}
    assert (barrier.num_task_rows > 0).all()  # the first completion of each, with its tasks' sums


@pytest.mark.spark
def test_the_listener_records_them_as_the_ingest_does(listener_jar, tmp_path):
    jobs = []
    for i, name in enumerate(CASES):
        props = json.loads(parse_event_log(LOGS / name).tables["runs"]["properties_json"][0].as_py())
        jobs.append([str(LOGS / name), str(tmp_path / f"s{i}"), props])
    replay(listener_jar, jobs)
    for i, (name, want) in enumerate(CASES.items()):
        st = store.open(tmp_path / f"s{i}")
        runs = st.runs()
        assert len(runs) == 1, name
        _check(runs.iloc[0].to_dict(), st.read("stages"), want, f"listener {name}")
