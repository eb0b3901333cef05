"""Rules of the adaptive-execution work pinned where no test had: each test here failed on a
one-operator change of the code it names (a mutation audit of Spark's coalescing rule and its
settings, the scan bytes, skipped parents, the join switch, the store-name checks and the
dynamic-allocation bounds). The coalesced counts are what Spark 4.3 ran (local[2],
spark.default.parallelism 2), read from its UI's stage list."""
from __future__ import annotations

import json
import math

import pytest

from sparkpredict.features import stages as F

MiB = 2**20

#: (shuffle bytes read, partitions, settings) -> the reduce tasks Spark ran after coalescing.
PF_OFF = {"spark.sql.adaptive.coalescePartitions.parallelismFirst": "false"}
SPARK_COALESCED = [
    (276_958, 8, {}, 1),
    (1_373_149, 8, {}, 1),   # 1.3 MiB: under 2 MiB a second partition would be under minPartitionSize
    (4_109_576, 8, {}, 2),
    (10_263_809, 8, {}, 2),
    (1_373_149, 8, {**PF_OFF, "spark.sql.adaptive.advisoryPartitionSizeInBytes": "1m"}, 1),
    (4_109_576, 8, {**PF_OFF, "spark.sql.adaptive.advisoryPartitionSizeInBytes": "1m"}, 4),
    (10_263_809, 8, {**PF_OFF, "spark.sql.adaptive.advisoryPartitionSizeInBytes": "1m"}, 8),
    (4_130_156, 40, {**PF_OFF, "spark.sql.adaptive.advisoryPartitionSizeInBytes": "1MB"}, 4),
    (10_308_480, 40, {**PF_OFF, "spark.sql.adaptive.advisoryPartitionSizeInBytes": "1MB"}, 10),
    (4_130_156, 40, {"spark.sql.adaptive.coalescePartitions.minPartitionSize": "3m"}, 1),
    (10_308_480, 40, {"spark.sql.adaptive.coalescePartitions.minPartitionSize": "3m"}, 2),
    (4_130_156, 40, {"spark.sql.adaptive.coalescePartitions.minPartitionNum": "6"}, 4),
    (10_308_480, 40, {"spark.sql.adaptive.coalescePartitions.minPartitionNum": "6"}, 7),
]


def _coalesced(read: float, partitions: int, props: dict, parallelism: float = 2) -> int:
    s = F.coalesce_settings(props)
    return F.coalesced_tasks(read, partitions, parallelism, s["aqe_advisory_bytes"],
                             s["aqe_min_partition_bytes"], s["aqe_min_partitions"])


@pytest.mark.parametrize(("read", "partitions", "props", "tasks"), SPARK_COALESCED)
def test_coalesced_tasks_are_the_counts_spark_ran(read, partitions, props, tasks):
    # The rule had been ceil(bytes / target - 0.2) (a last partition under a fifth of the target
    # joining the one before): it said 2 for the 1.3 MiB shuffles, 2 with minPartitionSize 3m at
    # 3.9 MiB and 6 with minPartitionNum 6, where Spark ran 1, 1 and 7. Spark packs neighbouring
    # partitions up to the target, packs on while a group is under minPartitionSize, joins a
    # last one under it to the one before, and sizes blocks as MapStatus rounds them (up to 1.1x).
    assert _coalesced(read, partitions, props) == tasks


def test_coalesced_tasks_reproduce_the_recorded_sort_reduces():
    # The history's sort job (Spark local, AQE on, spark.default.parallelism = partitions): the
    # reduce counts it ran at four sizes; the old rule said 2, 4, 8 where Spark ran 1, 3, 7.
    from pathlib import Path

    from sparkpredict import store as store_mod

    st = store_mod.open(Path(__file__).parent / "data" / "history")
    t = F.stage_table(st.runs(), st.stages(), st.read("tasks"))
    t = t[(t["job"] == "sort") & (t["shuffle_read_bytes"] > 0) & (t["aqe"] == 1)]
    assert len(t) >= 12
    got = [F.coalesced_tasks(r["shuffle_read_bytes"], r["shuffle_partitions"], r["default_parallelism"],
                             r["aqe_advisory_bytes"], r["aqe_min_partition_bytes"], r["aqe_min_partitions"])
           for _, r in t.iterrows()]
    assert got == [int(n) for n in t["num_tasks"]]
    assert sorted(set(got)) == [1, 3, 7]


def test_coalesced_tasks_at_the_edges_of_the_rule():
    # no bytes: one task (Spark makes one empty partition); never more than the partitions
    assert F.coalesced_tasks(0, 8, 2) == 1
    assert F.coalesced_tasks(-5, 8, 2) == 1
    assert F.coalesced_tasks(10 * 2**30, 8, 2) == 8
    # one task per core up to 64 MiB per core, one per 64 MiB past it (200 partitions)
    assert F.coalesced_tasks(100 * MiB, 200, 2) == 2
    assert F.coalesced_tasks(100 * MiB, 200, 4) == 4
    assert F.coalesced_tasks(1000 * MiB, 200, 2) == 17  # 1049 MiB as MapStatus rounds: 16 of 64 MiB and a part
    # past 2000 partitions MapStatus keeps exact averages: 4000 x 32 KiB in 64 MiB groups
    assert F.coalesced_tasks(125 * MiB, 4000, 1) == 2
    assert F.coalesced_tasks(125 * MiB, 2000, 1) == 3  # rounded up 1.05x: 131 MiB, a third group
    # a fewest of 0 or less is read as 1 (Spark's max(minNumPartitions, 1))
    assert F.coalesced_tasks(10 * MiB, 200, 0) == F.coalesced_tasks(10 * MiB, 200, 1) == 1


@pytest.mark.parametrize(("props", "want"), [
    ({}, {"aqe_coalesce": 1.0, "aqe_advisory_bytes": 64 * MiB, "aqe_min_partition_bytes": MiB}),
    ({"spark.sql.adaptive.coalescePartitions.enabled": "false"}, {"aqe_coalesce": 0.0}),
    ({"spark.sql.adaptive.coalescePartitions.enabled": " TRUE "}, {"aqe_coalesce": 1.0}),
    ({"spark.sql.adaptive.advisoryPartitionSizeInBytes": "1MB"}, {"aqe_advisory_bytes": MiB}),
    ({"spark.sql.adaptive.advisoryPartitionSizeInBytes": "2097152"}, {"aqe_advisory_bytes": 2 * MiB}),
    # the key's old name (SQLConf's alternative), and the new one over it
    ({"spark.sql.adaptive.shuffle.targetPostShuffleInputSize": "16m"}, {"aqe_advisory_bytes": 16 * MiB}),
    ({"spark.sql.adaptive.shuffle.targetPostShuffleInputSize": "16m",
      "spark.sql.adaptive.advisoryPartitionSizeInBytes": "8m"}, {"aqe_advisory_bytes": 8 * MiB}),
    ({"spark.sql.adaptive.coalescePartitions.minPartitionSize": "512k"}, {"aqe_min_partition_bytes": MiB / 2}),
    ({"spark.sql.adaptive.advisoryPartitionSizeInBytes": "lots"}, {"aqe_advisory_bytes": 64 * MiB}),
])
def test_coalesce_settings_read_as_spark_reads_them(props, want):
    got = F.coalesce_settings(props)
    assert {k: got[k] for k in want} == want


def test_the_fewest_partitions_follow_min_partition_num_whatever_parallelism_first_says():
    # CoalesceShufflePartitions: minPartitionNum.getOrElse(parallelismFirst ? defaultParallelism
    # : 1). The settings had read a set minPartitionNum as 1 when parallelismFirst was false.
    few = lambda props: F.coalesce_settings(props)["aqe_min_partitions"]
    assert math.isnan(few({}))
    assert math.isnan(few({"spark.sql.adaptive.coalescePartitions.parallelismFirst": "true"}))
    assert few(PF_OFF) == 1.0
    assert few({"spark.sql.adaptive.coalescePartitions.minPartitionNum": "6"}) == 6.0
    assert few({**PF_OFF, "spark.sql.adaptive.coalescePartitions.minPartitionNum": "6"}) == 6.0
    # what it changes: 40 MiB at a 64 MiB advisory size, aiming at 6 partitions, not 1
    assert _coalesced(40 * MiB, 200, {**PF_OFF, "spark.sql.adaptive.coalescePartitions.minPartitionNum": "6"}) == 6


def _config(props: dict) -> dict:
    return F.config_features({"properties_json": json.dumps(props), "executors": 2, "executor_cores": 1})


def test_the_shuffle_partitions_are_the_initial_partition_num_when_adaptive_execution_coalesces():
    # SQLConf.numShufflePartitions: under adaptive execution with coalescing, a shuffle has
    # initialPartitionNum partitions where it is set (Spark ran 12 tasks of a 12-partition
    # shuffle with spark.sql.shuffle.partitions 8); the cap had stayed 8.
    base = {"spark.sql.shuffle.partitions": "8", "spark.sql.adaptive.coalescePartitions.initialPartitionNum": "12"}
    assert _config(base)["shuffle_partitions"] == 12
    assert _config({**base, "spark.sql.adaptive.enabled": "false"})["shuffle_partitions"] == 8
    assert _config({**base, "spark.sql.adaptive.coalescePartitions.enabled": "false"})["shuffle_partitions"] == 8
    assert _config({"spark.sql.shuffle.partitions": "8"})["shuffle_partitions"] == 8
    assert _config({})["shuffle_partitions"] == 200


def test_coalesced_tasks_at_exact_boundaries():
    # past 2000 partitions (no MapStatus rounding): 5 groups of 512 x 128 KiB and 8 left over,
    # exactly minPartitionSize: Spark keeps a group that is not under it
    assert F.coalesced_tasks(2568 * 128 * 1024, 2568, 1) == 6
    # a target of exactly 250 partitions (bytes / 16): 250 fit, 16 groups (not 249 and a 17th)
    assert F.coalesced_tasks(596_287_312, 4000, 16) == 16
    # Spark's 16-byte floor on bytes / fewest: 100 bytes in 100 partitions aiming at 100
    assert F.coalesced_tasks(100, 100, 100, min_partition_bytes=1) == 7


def _shuffle_row(props: dict, bytes_in: float, tasks: int, **run) -> dict:
    row = F.config_features({"properties_json": json.dumps({"spark.sql.shuffle.partitions": "8", **props}),
                             "executors": 2, "executor_cores": 1, **run})
    return {**row, "num_tasks": float(tasks), "bytes_in": float(bytes_in), "is_input_stage": 0.0}


def test_each_recorded_run_is_scored_by_its_own_coalescing_settings():
    # Two runs at a 1 MiB advisory size (4 and 8 tasks, as Spark ran them) and the reference
    # at the defaults (1 task): Spark's rule reproduces all three, each by its own settings, and
    # at 40 MiB with the reference's settings Spark runs one task per core.
    import pandas as pd

    small = {**PF_OFF, "spark.sql.adaptive.advisoryPartitionSizeInBytes": "1m"}
    h = pd.DataFrame([_shuffle_row(small, 4_109_576, 4), _shuffle_row(small, 10_263_809, 8),
                      _shuffle_row({}, 1_373_149, 1)])
    assert F.predict_num_tasks(h, h.iloc[2], 40 * MiB) == 2


def test_a_run_without_coalescing_does_not_follow_the_coalescing_rule():
    # coalescePartitions.enabled=false: the rule is not a candidate, though these counts (as
    # Spark's rule would give them) fit it; the recorded counts' trend stands for them.
    import pandas as pd

    off = {"spark.sql.adaptive.coalescePartitions.enabled": "false"}
    h = pd.DataFrame([_shuffle_row(off, 1_373_149, 1), _shuffle_row(off, 4_109_576, 2),
                      _shuffle_row(off, 10_263_809, 2)])
    on = h.assign(aqe_coalesce=1.0)
    assert F.predict_num_tasks(on, on.iloc[0], 16 * MiB) == 2
    assert F.predict_num_tasks(h, h.iloc[0], 16 * MiB) != 2


def test_the_coalescing_rule_is_left_out_where_the_runs_varied_the_parallelism():
    # It reads spark.default.parallelism: runs that set it to 2 and 8 (2 and 8 tasks of the
    # same 13 MB) do not say which the query's run will have, unless the query gives it.
    import pandas as pd

    h = pd.DataFrame([_shuffle_row({"spark.default.parallelism": "2"}, 13e6, 2),
                      _shuffle_row({"spark.default.parallelism": "8"}, 13e6, 8)])
    assert F.predict_num_tasks(h, h.iloc[0], 13e6) == 8  # the partitions, the first of the tied rules
    assert F.predict_num_tasks(h, h.iloc[0], 13e6, {"default_parallelism": 2.0}) == 2


def _scan_frames(stage_in: list[float], records: list[float], run_in: float, input_stage=None):
    import pandas as pd

    st = pd.DataFrame({"run_id": "r", "input_bytes": stage_in, "input_records": records,
                       "is_input_stage": input_stage or [1.0] * len(stage_in)})
    runs = pd.DataFrame([{"run_id": "r", "input_bytes": run_in}])
    return st, runs


def test_scan_input_bytes_shares_the_runs_input_by_records_only_under_half_of_it():
    # Parquet on Spark 4 counts about the footers: 40 kB and 20 kB of a 3 MB input, shared 2:1
    st, runs = _scan_frames([40e3, 20e3], [2000.0, 1000.0], 3e6)
    assert list(F.scan_input_bytes(st, runs, st["input_bytes"], st["input_records"])) == [2e6, 1e6]
    # at half of the run's input or more, the metric stands (a text file's scan, a second read)
    st, runs = _scan_frames([1.2e6, 0.4e6], [2000.0, 1000.0], 3e6)
    assert list(F.scan_input_bytes(st, runs, st["input_bytes"], st["input_records"])) == [1.2e6, 0.4e6]
    # no records: nothing to share by
    st, runs = _scan_frames([40e3], [0.0], 3e6)
    assert list(F.scan_input_bytes(st, runs, st["input_bytes"], st["input_records"])) == [40e3]
    # a stage that is no input stage keeps its own bytes and takes no share
    st, runs = _scan_frames([40e3, 10.0], [2000.0, 5000.0], 3e6, input_stage=[1.0, 0.0])
    assert list(F.scan_input_bytes(st, runs, st["input_bytes"], st["input_records"])) == [3e6, 10.0]


def test_the_stage_table_reads_a_scan_stage_by_the_runs_input():
    import pandas as pd

    runs = pd.DataFrame([{"run_id": "r", "job": "j", "input_bytes": 3e6, "executors_max": 1,
                          "executor_cores": 2, "task_slots": 2, "properties_json": "{}"}])
    stages = pd.DataFrame([{"run_id": "r", "stage_id": 0, "stage_attempt_id": 0, "name": "scan at q.py:1",
                            "num_tasks": 2, "input_bytes": 40e3, "input_records": 2000, "shuffle_read_bytes": 0,
                            "submission_ms": 0, "parent_stage_ids_json": "[]", "executor_run_time_ms": 100,
                            "num_task_rows": 2, "duration_ms": 60, "status": "succeeded"}])
    t = F.stage_table(runs, stages)
    assert list(t["bytes_in"]) == [3e6] and list(t["bytes_in_per_task"]) == [1.5e6]


def _stage(sid: int, sub: float, comp: float, write: float = 0, read: float = 0, parents=(), rdds=()):
    return {"run_id": "r", "stage_id": sid, "stage_attempt_id": 0, "submission_ms": sub, "completion_ms": comp,
            "shuffle_write_bytes": write, "shuffle_read_bytes": read, "parent_stage_ids_json": json.dumps(list(parents)),
            "rdd_names_json": json.dumps(list(rdds)), "name": f"s{sid} at q.py:{sid}"}


SCAN = ["FileScanRDD", "MapPartitionsRDD"]
READ = ["ShuffledRowRDD", "MapPartitionsRDD"]
ZIP = ["ShuffledRowRDD", "ShuffledRowRDD", "ZippedPartitionsRDD2", "MapPartitionsRDD"]


def _sort_merge_run():
    """Spark 4 adaptive: two map stages, a sort-merge join whose parents are skipped stages
    (ids without rows) for the shuffles they wrote, an aggregation after it."""
    return [_stage(0, 0, 100, write=1000, rdds=SCAN), _stage(1, 0, 90, write=200, rdds=SCAN),
            _stage(4, 200, 300, write=50, read=1200, parents=[2, 3], rdds=ZIP),
            _stage(6, 400, 500, read=50, parents=[5], rdds=READ)]


def _broadcast_run():
    """The same query where adaptive execution broadcast the dimension: its shuffle read back
    whole and collected (no shuffle written), then the join reads the fact's shuffle."""
    return [_stage(0, 0, 100, write=1000, rdds=SCAN), _stage(1, 0, 90, write=200, rdds=SCAN),
            _stage(3, 150, 180, read=200, parents=[2], rdds=READ),
            _stage(5, 200, 300, write=50, read=1000, parents=[4], rdds=READ),
            _stage(7, 400, 500, read=50, parents=[6], rdds=READ)]


def _parents_of(rows) -> dict:
    import pandas as pd

    g = pd.DataFrame(rows)
    return F._computed_parents(g, [int(s) for s in g["stage_id"]])


def test_skipped_parents_stand_for_the_stages_that_wrote_what_the_child_read():
    assert _parents_of(_sort_merge_run()) == {0: [], 1: [], 4: [0, 1], 6: [4]}
    assert _parents_of(_broadcast_run()) == {0: [], 1: [], 3: [1], 5: [0], 7: [5]}


def test_a_skipped_parent_is_the_latest_writer_of_its_bytes_that_finished_before_the_child():
    rows = [_stage(0, 0, 100, write=500), _stage(1, 0, 200, write=500), _stage(2, 250, 400, write=500),
            _stage(9, 300, 350, read=500, parents=[8])]
    # stage 2 writes the same bytes but finishes after stage 9 started; of 0 and 1, the later
    assert _parents_of(rows)[9] == [1]


def test_rdd_kinds_are_each_names_first_word():
    raw = json.dumps(["FileScanRDD", "AdaptiveSparkPlan isFinalPlan=false +- HashAggregate(keys=[w#137])",
                      "$anon$1", "org.apache.spark.X y", "  ", 7])
    assert F.rdd_kinds(raw) == ["FileScanRDD", "AdaptiveSparkPlan", "$anon$1", "org.apache.spark.X", "?", "7"]
    assert F.rdd_kinds("not json") == [] and F.rdd_kinds(None) == [] and F.rdd_kinds('{"a": 1}') == []


def test_a_thread_pool_call_site_is_told_apart_by_the_kinds_of_rdd_its_stage_ran():
    import pandas as pd

    pool = "$anonfun$withThreadLocalCaptured$1 at CompletableFuture.java:1768"
    rows = [dict(_stage(0, 0, 100, write=10, rdds=["FileScanRDD", *["MapPartitionsRDD"] * 3]), name=pool),
            dict(_stage(1, 0, 100, write=10, rdds=["ParallelCollectionRDD"]), name=pool),
            dict(_stage(2, 0, 100, write=10, rdds=["FileScanRDD"]), name="count at q.py:3")]
    sig = list(F.stage_signatures(pd.DataFrame(rows)))
    assert sig == [f"{pool} [FileScanRDD,MapPartitionsRDD*3]|d0|k0", f"{pool} [ParallelCollectionRDD]|d0|k0",
                   "count at q.py:3|d0|k0"]


def test_run_join_names_the_plan_and_its_build_side():
    import pandas as pd

    from sparkpredict.models.join_switch import BROADCAST, SORT_MERGE, run_join

    assert run_join(pd.DataFrame(_sort_merge_run())) == (SORT_MERGE, 200)  # the smaller side
    assert run_join(pd.DataFrame(_broadcast_run())) == (BROADCAST, 200)
    # a zipped stage with one map parent found is no join of two shuffles
    one_side = _sort_merge_run()
    one_side[2] = dict(one_side[2], parent_stage_ids_json="[0, 3]", shuffle_read_bytes=1100)
    assert run_join(pd.DataFrame(one_side)) is None
    # a stage reading part of a listed parent's shuffle is no broadcast of it
    partial = _broadcast_run()
    partial[2] = dict(partial[2], parent_stage_ids_json="[1]", shuffle_read_bytes=150)
    assert run_join(pd.DataFrame(partial)) is None
    # two joins: none is the run's one join
    two = _sort_merge_run() + [dict(r, stage_id=r["stage_id"] + 10, submission_ms=r["submission_ms"] + 1000,
                                    completion_ms=r["completion_ms"] + 1000,
                                    parent_stage_ids_json=json.dumps([p + 10 for p in json.loads(r["parent_stage_ids_json"])]),
                                    shuffle_write_bytes=r["shuffle_write_bytes"] * 3,
                                    shuffle_read_bytes=r["shuffle_read_bytes"] * 3) for r in _sort_merge_run()]
    assert run_join(pd.DataFrame(two)) is None


@pytest.mark.parametrize(("props", "threshold"), [
    ({}, 10 * MiB),
    ({"spark.sql.autoBroadcastJoinThreshold": "1k"}, 1024),
    # the adaptive key outranks the planner's, and a negative one turns broadcasting off
    ({"spark.sql.autoBroadcastJoinThreshold": "1k", "spark.sql.adaptive.autoBroadcastJoinThreshold": "200k"}, 200 * 1024),
    ({"spark.sql.autoBroadcastJoinThreshold": "10m", "spark.sql.adaptive.autoBroadcastJoinThreshold": "-1"}, -1),
    ({"spark.sql.autoBroadcastJoinThreshold": " -1 "}, -1),
    ({"spark.sql.adaptive.autoBroadcastJoinThreshold": " ", "spark.sql.autoBroadcastJoinThreshold": "2m"}, 2 * MiB),
])
def test_the_broadcast_threshold_is_read_as_spark_reads_it(props, threshold):
    from sparkpredict.models.join_switch import broadcast_threshold

    assert broadcast_threshold({"properties_json": json.dumps(props)}) == threshold


def _history(rows):
    import pandas as pd

    cols = ["run_id", "job", "plan", "build_bytes", "input_bytes", "threshold_bytes"]
    return pd.DataFrame([dict(zip(cols, r)) for r in rows], columns=cols).set_index("run_id", drop=False)


def test_plan_at_picks_the_join_spark_runs_at_the_querys_build_side():
    from sparkpredict.models.join_switch import plan_at

    h = _history([("b1", "j", "broadcast", 100, 1000, 200), ("s1", "j", "sort-merge", 400, 4000, 200)])
    assert plan_at(h, "b1", 500) == (["b1"], None)    # 50: under the broadcast run's side
    assert plan_at(h, "b1", 2000) == (["b1"], None)   # 200: between the runs, at the threshold: broadcast
    assert plan_at(h, "b1", 2500) == (["s1"], None)   # 250: between, over the threshold
    assert plan_at(h, "s1", 5000) == (["s1"], None)
    # recorded decisions that no one switch point explains: the nearest run is kept
    clash = _history([("b1", "j", "broadcast", 400, 1000, 200), ("s1", "j", "sort-merge", 400, 4000, 200)])
    assert plan_at(clash, "b1", 2000) == (None, None)
    # runs of another threshold decided by another bound: not this query's evidence
    other = _history([("b1", "j", "broadcast", 100, 1000, 200), ("s1", "j", "sort-merge", 400, 4000, 1024)])
    assert plan_at(other, "b1", 1500)[0] is None


def test_plan_at_warns_only_where_the_one_recorded_plan_would_change():
    from sparkpredict.models.join_switch import plan_at

    bc = _history([("b1", "j", "broadcast", 100, 1000, 200), ("b2", "j", "broadcast", 300, 3000, 200)])
    # a side of 250 is over the threshold but a recorded run broadcast 300: no warning
    assert plan_at(bc, "b2", 2500) == (None, None)
    plan, warning = plan_at(bc, "b2", 4000)
    assert plan is None and "keep the sort-merge join" in warning and "run b2" in warning
    # broadcasting off (a negative threshold): only hints broadcast, whatever the size
    off = _history([("b1", "j", "broadcast", 100, 1000, -1)])
    assert plan_at(off, "b1", 10_000) == (None, None)
    sm = _history([("s1", "j", "sort-merge", 400, 4000, 200)])
    assert "likely broadcast it" in plan_at(sm, "s1", 2000)[1]
    assert plan_at(sm, "s1", 2100) == (None, None)  # 210: over the threshold


def test_the_join_history_holds_adaptive_runs_only():
    import pandas as pd

    from sparkpredict.models.join_switch import join_history

    table = pd.DataFrame(_sort_merge_run()).assign(aqe=1.0)
    runs = pd.DataFrame([{"run_id": "r", "job": "j", "input_bytes": 5000.0,
                          "properties_json": json.dumps({"spark.sql.adaptive.autoBroadcastJoinThreshold": "1k"})}]
                        ).set_index("run_id", drop=False)
    h = join_history(runs, table)
    assert list(h["plan"]) == ["sort-merge"] and list(h["threshold_bytes"]) == [1024]
    assert join_history(runs, table.assign(aqe=0.0)).empty


def test_a_jvm_charset_python_does_not_know_is_not_refused():
    from sparkpredict.capture.listener import _jvm_names_alike, check_store_nameable

    assert _jvm_names_alike("/data/\u00fcn\u00ef", "x-no-such-charset")
    check_store_nameable("/data/\u00fcn\u00ef", "x-no-such-charset")  # no StoreError
    assert not _jvm_names_alike("/data/\u00fcn\u00ef", "ascii")


def test_a_cluster_drivers_store_is_not_named_by_this_machines_locale(monkeypatch, tmp_path):
    # --deploy-mode cluster: the driver (which writes the store) runs on a cluster node under
    # its own locale; only the jar, which spark-submit here reads, must be nameable here
    import sys

    from sparkpredict.capture.submit import check_jvm_names
    from sparkpredict.errors import StoreError

    if sys.platform == "darwin":
        pytest.skip("the JDK names files in UTF-8 on macOS whatever the locale")
    monkeypatch.setenv("LC_ALL", "C")
    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    check_jvm_names(["--master", "yarn", "--deploy-mode", "cluster", "job.py"], "/data/\u00fcn\u00ef")
    with pytest.raises(StoreError, match="LC_ALL=C.UTF-8"):
        check_jvm_names(["--master", "yarn", "job.py"], "/data/\u00fcn\u00ef")


def test_a_job_name_is_cut_past_the_column_not_at_it():
    from sparkpredict.config import shown_job

    assert shown_job("a" * 60, 60) == "a" * 60
    assert shown_job("a" * 61, 60) == "a" * 59 + "\u2026"
    assert shown_job("etl ", 60) == "'etl '" and shown_job(7) == "7"


def test_delete_is_a_control_character_of_a_job_name():
    from sparkpredict.config import check_job_name, plain_job_name
    from sparkpredict.errors import InputError

    assert not plain_job_name("a\x7fb") and plain_job_name("a b")
    with pytest.raises(InputError, match="control character"):
        check_job_name("a\x7fb", "fix")
    check_job_name("a\x7fb", "fix", known={"a\x7fb"})  # the store's own: taken


def test_a_dynamic_start_count_that_is_no_number_is_left_out(monkeypatch):
    from sparkpredict.capture.submit_args import dynamic_allocation_starts

    monkeypatch.delenv("SPARK_CONF_DIR", raising=False)
    monkeypatch.delenv("SPARK_HOME", raising=False)
    assert dynamic_allocation_starts(["--conf", "spark.executor.instances=many", "--conf",
                                      "spark.dynamicAllocation.initialExecutors=5", "job.py"]) == \
        [("spark.dynamicAllocation.initialExecutors", 5, "--conf spark.dynamicAllocation.initialExecutors=5", True)]
    assert dynamic_allocation_starts(["--num-executors", "50", "job.py"]) == \
        [("spark.executor.instances", 50, "--num-executors 50", True)]
    assert dynamic_allocation_starts(["--conf", "spark.executor.instances=", "job.py"]) == []
