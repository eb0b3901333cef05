"""Stage signatures, configuration features and task counts at other input sizes."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from sparkpredict.features.stages import (
    call_site,
    config_features,
    file_split_tasks,
    predict_num_tasks,
    spark_bytes,
    stage_signatures,
    stage_table,
)

MiB = 2**20


def _stages(run_id: str, first_id: int, names_parents: list[tuple[str, list[int]]]) -> pd.DataFrame:
    """Stages of one run; parents are given as offsets into the list (ids depend on ``first_id``)."""
    return pd.DataFrame([{"run_id": run_id, "stage_id": first_id + i, "stage_attempt_id": 0,
                          "name": name, "submission_ms": 1000 * i,
                          "parent_stage_ids_json": json.dumps([first_id + p for p in parents])}
                         for i, (name, parents) in enumerate(names_parents)])


def test_signature_is_stable_across_runs_whose_ids_and_paths_differ():
    # The same job twice: ids start elsewhere, the driver script lives in another temp folder,
    # and two stages share a call site (SQL plans often do), told apart by depth and order.
    shape = lambda d: [(f"load at {d}/job.py:10", []), (f"load at {d}/job.py:10", []),
                       (f"join at {d}/job.py:20", [0, 1]), (f"collect at {d}/job.py:30", [2]),
                       (f"collect at {d}/job.py:30", [3])]
    a = _stages("a", 0, shape("/tmp/x1"))
    b = _stages("b", 57, shape("/var/tmp/other"))
    sa, sb = stage_signatures(a), stage_signatures(b)
    assert list(sa) == list(sb)
    assert list(sa) == ["load at job.py:10|d0|k0", "load at job.py:10|d0|k1", "join at job.py:20|d1|k0",
                        "collect at job.py:30|d2|k0", "collect at job.py:30|d3|k0"]
    assert sa.is_unique
    both = stage_signatures(pd.concat([a, b], ignore_index=True))
    assert list(both[:5]) == list(both[5:])


def test_signature_ignores_parents_that_were_skipped():
    # A parent id without a row (a skipped stage whose shuffle output was reused) adds no depth.
    a = _stages("a", 0, [("count at j.py:3", [])])
    a.loc[0, "parent_stage_ids_json"] = "[999]"
    assert stage_signatures(a).iloc[0] == "count at j.py:3|d0|k0"


def test_call_site_keeps_code_location_and_drops_run_specific_text():
    assert call_site("count at /home/u/app/job.py:12") == "count at job.py:12"
    assert call_site("$anonfun$withThreadLocalCaptured$1 at FutureTask.java:264") == \
        "$anonfun$withThreadLocalCaptured$1 at FutureTask.java:264"
    assert call_site("Listing leaf files and directories for 100 paths:<br/>file:/d/a") == \
        call_site("Listing leaf files and directories for 7 paths:<br/>file:/d/b")
    assert call_site(None) == ""


def test_config_features_read_properties_with_spark_units_and_defaults():
    run = {"executors_max": 3, "executor_cores": 2, "executor_memory_mb": None, "task_slots": 6,
           "properties_json": json.dumps({
               "spark.executor.memory": "2g", "spark.sql.shuffle.partitions": "16",
               "spark.sql.files.maxPartitionBytes": "64m", "spark.sql.adaptive.enabled": "false",
               "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
               "spark.memory.fraction": "0.5"})}
    c = config_features(run)
    assert c["executor_memory_mb"] == 2048 and c["shuffle_partitions"] == 16
    assert c["max_partition_bytes"] == 64 * MiB and c["aqe"] == 0 and c["kryo"] == 1
    assert c["memory_fraction"] == 0.5 and c["shuffle_compress"] == 1          # Spark default
    assert c["default_parallelism"] == 6                                        # = total cores
    bare = config_features({"properties_json": None, "executors_max": 1, "executor_cores": 4})
    assert bare["shuffle_partitions"] == 200 and bare["max_partition_bytes"] == 128 * MiB and bare["aqe"] == 1
    assert spark_bytes("1g", 0) == 2**30 and spark_bytes("512", 0) == 512 and spark_bytes("oops", 7) == 7
    # dynamic allocation: the tasks saw the mean executors held, not the most (7 for a moment)
    da = {"executors_max": 7, "executors_mean": 2.43, "executor_cores": 2, "task_slots": 14,
          "properties_json": json.dumps({"spark.dynamicAllocation.enabled": "true"})}
    c = config_features(da)
    assert c["executors"] == 2.43 and c["task_slots"] == pytest.approx(4.86)
    fixed = config_features({**da, "properties_json": json.dumps({"spark.dynamicAllocation.enabled": "false"})})
    assert fixed["executors"] == 7 and fixed["task_slots"] == 14
    # local[N]: one recorded executor of N threads is the E executors the sweep asked for
    loc = {"master": "local[3]", "executors_requested": 3, "executors_max": 1, "executor_cores": 3,
           "task_slots": 3, "properties_json": None}
    c = config_features(loc)
    assert (c["executors"], c["executor_cores"], c["task_slots"]) == (3, 1, 3)
    c = config_features({**loc, "master": "local[4]", "executors_requested": 2, "executor_cores": 4, "task_slots": 4})
    assert (c["executors"], c["executor_cores"], c["task_slots"]) == (2, 2, 4)
    c = config_features({**loc, "master": "local[1]", "executor_cores": 1, "task_slots": 1})   # Spark ignored 3
    assert (c["executors"], c["executor_cores"], c["task_slots"]) == (1, 1, 1)
    c = config_features({**loc, "master": "local-cluster[3,1,1024]", "executors_max": 3, "executor_cores": 1})
    assert (c["executors"], c["executor_cores"], c["task_slots"]) == (3, 1, 3)


def test_file_split_tasks_follow_spark_rule():
    # Small input: split = max(openCost 4 MiB, bytes / parallelism).
    assert file_split_tasks(8 * MiB, 4, 128 * MiB) == 2
    assert file_split_tasks(400 * MiB, 4, 128 * MiB) == 4        # bytes / parallelism = 100 MiB
    assert file_split_tasks(1024 * MiB, 4, 128 * MiB) == 8       # capped by maxPartitionBytes
    assert file_split_tasks(10 * 1024 * MiB, 64, 128 * MiB) == 80


def _table():
    """Stage table rows of two runs: an input stage and a shuffle stage with 16 partitions."""
    runs = pd.DataFrame([{"run_id": r, "job": "j", "input_bytes": b, "executors_max": 2, "executor_cores": 2,
                          "task_slots": 4, "properties_json": json.dumps(
                              {"spark.sql.shuffle.partitions": "16", "spark.sql.files.maxPartitionBytes": "32m"})}
                         for r, b in (("r1", 256 * MiB), ("r2", 512 * MiB))])
    rows = []
    for r, b, first in (("r1", 256 * MiB, 0), ("r2", 512 * MiB, 10)):
        rows += [{"run_id": r, "stage_id": first, "stage_attempt_id": 0, "name": "scan at q.py:1",
                  "num_tasks": b // (32 * MiB), "input_bytes": b, "shuffle_read_bytes": 0, "submission_ms": 0,
                  "parent_stage_ids_json": "[]", "executor_run_time_ms": 1000, "num_task_rows": 8,
                  "duration_ms": 500, "status": "succeeded"},
                 {"run_id": r, "stage_id": first + 1, "stage_attempt_id": 0, "name": "agg at q.py:2",
                  "num_tasks": 16, "input_bytes": 0, "shuffle_read_bytes": b // 4, "submission_ms": 1,
                  "parent_stage_ids_json": json.dumps([first]), "executor_run_time_ms": 800,
                  "num_task_rows": 16, "duration_ms": 300, "status": "succeeded"}]
    return stage_table(runs, pd.DataFrame(rows))


def test_stage_table_has_signatures_targets_and_waves():
    t = _table()
    assert t.groupby("signature")["run_id"].nunique().to_dict() == {"scan at q.py:1|d0|k0": 2,
                                                                     "agg at q.py:2|d1|k0": 2}
    scan = t[(t.run_id == "r1") & (t.is_input_stage == 1)].iloc[0]
    assert scan["num_tasks"] == 8 and scan["bytes_in_per_task"] == 32 * MiB and scan["waves"] == 2
    assert scan["task_ms"] == pytest.approx(1000 / 8)


def test_task_count_for_a_new_input_size():
    t = _table()
    scan = t[t.is_input_stage == 1]
    agg = t[t.is_input_stage == 0]
    # Input stage: 2 GiB in 32 MiB splits.
    assert predict_num_tasks(scan, scan.iloc[0], 2048 * MiB) == 64
    # Shuffle stage: the partitions, whatever the size; and the new setting when it changes.
    assert predict_num_tasks(agg, agg.iloc[0], 4096 * MiB) == 16
    assert predict_num_tasks(agg, agg.iloc[0], 4096 * MiB, {"shuffle_partitions": 64}) == 64


def test_concurrent_sibling_stages_are_told_apart_by_bytes_not_by_id():
    # Two scans of a join submitted together: Spark gives them ids (and submission times) in
    # either order from run to run. Seen in this project's sqljoin runs under AQE.
    def run(run_id, big_first):
        big = {"name": "collect at bodies.py:108", "input_bytes": 15_000_000, "num_tasks": 4}
        small = {"name": "collect at bodies.py:108", "input_bytes": 700_000, "num_tasks": 1}
        first, second = (big, small) if big_first else (small, big)
        rows = [dict(first, stage_id=0, submission_ms=0, completion_ms=900),
                dict(second, stage_id=1, submission_ms=80, completion_ms=950),
                {"name": "collect at bodies.py:108", "stage_id": 4, "submission_ms": 1000,
                 "completion_ms": 1500, "shuffle_read_bytes": 8_000_000, "num_tasks": 3}]
        return pd.DataFrame([dict(r, run_id=run_id, stage_attempt_id=0, parent_stage_ids_json="[]") for r in rows])

    a, b = run("a", True), run("b", False)
    sa = dict(zip(a["input_bytes"].fillna(0), stage_signatures(a)))
    sb = dict(zip(b["input_bytes"].fillna(0), stage_signatures(b)))
    assert sa == sb
    assert sa[15_000_000].endswith("k0") and sa[700_000].endswith("k1")
    assert sa[0].endswith("k2")  # the join stage came later: its own epoch


def test_signatures_are_identical_across_real_recorded_runs_of_a_job():
    # The project's recorded sweep (tests/data/history): the listener's real stage rows of one
    # workload at several sizes and executor counts.
    from pathlib import Path

    from sparkpredict import store

    path = Path(__file__).parent / "data" / "history"
    st = store.open(path)
    runs = st.runs()
    wc = runs[(runs["job"] == "wordcount") & (runs["status"] == "succeeded")]
    assert len(wc) >= 2, "tests/data/history holds runs of wordcount"
    t = stage_table(wc, st.read("stages", run_ids=list(wc["run_id"])))
    per_run = t.groupby("run_id")["signature"].apply(lambda s: tuple(sorted(s)))
    assert per_run.nunique() == 1, per_run.value_counts()
    assert t.groupby("run_id")["signature"].apply(lambda s: s.is_unique).all()


def test_a_stage_whose_task_rows_were_partly_dropped_takes_its_mean_from_the_stage_sums():
    """A listener whose store failed keeps at most a few chunks of task rows and drops the rest;
    the mean of the rows left describes some tasks only (here the fastest), the stage sums all."""
    from test_stage_models import make_run

    tables, _ = make_run(1, 256 * MiB, executors=2, noise=0.3)
    runs, stages, tasks = tables["runs"], tables["stages"], tables["tasks"]
    scan = stages.iloc[0]
    whole = stage_table(runs, stages, tasks).set_index("stage_id")
    rows = tasks[tasks.stage_id == scan.stage_id]
    assert whole.loc[scan.stage_id, "task_ms"] == pytest.approx(rows["duration_ms"].mean())
    fastest = rows.nsmallest(len(rows) // 2, "duration_ms")  # the rows that were kept
    partial = pd.concat([tasks[tasks.stage_id != scan.stage_id], fastest])
    got = stage_table(runs, stages, partial).set_index("stage_id")
    assert got.loc[scan.stage_id, "task_ms"] == pytest.approx(scan.executor_run_time_ms / scan.num_task_rows)
    assert got.loc[scan.stage_id, "task_ms"] > fastest["duration_ms"].mean() * 1.05
    others = [s for s in whole.index if s != scan.stage_id]  # untouched stages keep their rows' mean
    assert got.loc[others, "task_ms"].tolist() == pytest.approx(whole.loc[others, "task_ms"].tolist())
