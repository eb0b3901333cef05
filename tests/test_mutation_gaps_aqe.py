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
