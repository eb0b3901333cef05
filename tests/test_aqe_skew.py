"""A skewed shuffle join under adaptive execution, recorded live at three sizes: how many tasks
its coalesced reduce runs at the sizes it was not recorded at. Two customers hold 45 % of the
orders; Spark packs the hot partition alone and the small ones around it, so it runs fewer tasks
than equal partitions of the same bytes would (2, 4 and 8 where equal ones give 3, 6 and 13)."""
from __future__ import annotations

from pathlib import Path

import pytest

from sparkpredict import store as store_mod
from sparkpredict.features import stages as F

JOB = "aqe-skewed-join"
ROWS = (100_000, 200_000, 400_000)
#: 40 partitions, a 1 MiB target (the advisory size, parallelismFirst off), as a job tuned to
#: small tasks would set them: the sizes here run a handful of coalesced tasks.
AQE = {"spark.sql.adaptive.enabled": "true", "spark.sql.shuffle.partitions": "40",
       "spark.sql.autoBroadcastJoinThreshold": "-1",
       "spark.sql.adaptive.coalescePartitions.parallelismFirst": "false",
       "spark.sql.adaptive.advisoryPartitionSizeInBytes": "1m"}
MiB = 2**20


@pytest.fixture(scope="module")
def reduces(spark_app, tmp_path_factory):
    """The join's reduce stage rows of the three runs, smallest first."""
    from pyspark.sql import functions as fn

    store = Path(tmp_path_factory.mktemp("skew")) / "store"
    for n in ROWS:
        with spark_app(store, job=JOB, conf=AQE) as spark:
            hot = (fn.when(fn.col("id") % 100 < 30, fn.lit(7)).when(fn.col("id") % 100 < 45, fn.lit(1234))
                   .otherwise(fn.col("id") % 2000))
            orders = spark.range(n, numPartitions=4).select(hot.alias("c"), fn.md5(fn.col("id").cast("string")).alias("pad"))
            customers = spark.range(2000, numPartitions=2).select(fn.col("id").alias("c"), fn.lit("x").alias("seg"))
            orders.join(customers, "c").groupBy("seg").agg(fn.max("pad"), fn.count("*")).collect()
    st = store_mod.open(store)
    tasks = st.read("tasks")
    t = F.stage_table(st.runs(), st.stages(), tasks)
    longest = tasks.groupby(["run_id", "stage_id"])["duration_ms"].max().rename("longest_task_ms")
    t = t.merge(longest, left_on=["run_id", "stage_id"], right_index=True, how="left")
    join = t[(t["is_input_stage"] == 0) & (t["bytes_in"] > MiB)].sort_values("bytes_in")
    assert len(join) == len(ROWS) and join["signature"].nunique() == 1
    return join.reset_index(drop=True)


def _equal(r) -> int:
    return F.coalesced_tasks(r["bytes_in"], r["shuffle_partitions"], r["default_parallelism"],
                             r["aqe_advisory_bytes"], r["aqe_min_partition_bytes"], r["aqe_min_partitions"])


def test_the_recorded_join_is_skewed_and_runs_fewer_tasks_than_equal_partitions(reduces):
    # what the test stands on: 3.4, 6.8 and 13.6 MiB read, one task of ~45 % of them
    assert [int(n) for n in reduces["num_tasks"]] == [2, 4, 8]
    assert [_equal(r) for _, r in reduces.iterrows()] == [3, 6, 13]
    assert reduces["bytes_in"].iloc[-1] / reduces["bytes_in"].iloc[0] == pytest.approx(4, rel=0.1)


def test_a_skewed_reduce_is_predicted_at_the_sizes_it_was_not_recorded_at(reduces):
    # One run tells how much fewer tasks than equal partitions Spark ran: a share of the bytes
    # in one hot partition gives that count, and carries it to the other sizes. Before, the
    # equal-partition rule missed the recorded count, the recorded count itself won, and every
    # size was predicted at it: 2, 2, 2 from the smallest run, 4, 4, 4 from the middle one.
    real = [int(n) for n in reduces["num_tasks"]]
    for i in (0, 1):
        ref = reduces.iloc[i]
        got = [F.predict_num_tasks(reduces.iloc[[i]], ref, b) for b in reduces["bytes_in"]]
        assert got == real, (i, got)
    # from the largest run: the two smaller sizes within one task, where it had said 8 and 8
    ref = reduces.iloc[2]
    got = [F.predict_num_tasks(reduces.iloc[[2]], ref, b) for b in reduces["bytes_in"]]
    assert got[2] == 8 and all(abs(g - n) <= 1 for g, n in zip(got, real)), got
    # and from two runs the third (largest) exactly
    assert F.predict_num_tasks(reduces.iloc[:2], reduces.iloc[1], reduces["bytes_in"].iloc[2]) == real[2]


def test_a_skewed_reduce_lasts_its_tasks_over_the_slots_not_its_hot_task(reduces):
    # The stage model times a stage as waves x mean task time, skewed or not. The reduce of 8
    # tasks on 2 slots, its hot task ~45 % of the bytes, lasted its tasks' time over the slots
    # (recordings: 603 and 645 ms for 602 and 614 ms; 420 for 4 x 105 on a loaded CI machine),
    # longer than its hot task: one slot runs the hot task while the other works through the
    # small ones, ~55 % of the bytes. How much longer moves with load and JIT warm-up (the hot
    # task was half the stage here, 80 % in CI, near the 82 % the bytes alone give), so only
    # the order is asserted, not a ratio.
    r = reduces.iloc[-1]
    assert r["num_tasks"] == 8 and r["task_slots"] == 2
    assert r["waves"] * r["task_ms"] == pytest.approx(r["stage_ms"], rel=0.2)
    assert r["longest_task_ms"] < r["stage_ms"]


def test_a_reduce_the_equal_rule_gives_keeps_it():
    # the history's sort job: its reduces run what equal partitions give (1, 3 and 7 tasks);
    # no hot share is fitted, and its counts stay the equal rule's
    st = store_mod.open(Path(__file__).parent / "data" / "history")
    t = F.stage_table(st.runs(), st.stages())
    t = t[(t["job"] == "sort") & (t["shuffle_read_bytes"] > 0) & (t["aqe"] == 1)]
    for _, g in t.groupby("signature"):
        assert F._hot_share(g, g.iloc[0]) == 0.0
        ref = g.iloc[0]
        assert [F.predict_num_tasks(g, ref, b, {"shuffle_partitions": r["shuffle_partitions"],
                                               "default_parallelism": r["default_parallelism"]})
                for b, (_, r) in zip(g["bytes_in"], g.iterrows())] == [_equal(r) for _, r in g.iterrows()]


def test_spark_packing_follows_coalesce_partitions_step_by_step():
    # Spark's own example (ShufflePartitionsUtil's docs): 110, 30, 170, 15 and 35 MiB at a
    # 128 MiB target are 4 groups, the last two packed together
    assert F._spark_packing([(1, 110), (1, 30), (1, 170), (1, 15), (1, 35)], 128, 0) == 4
    # a group under the minimum packs on past the target (0.5 and 0.6, then 2.0)...
    assert F._spark_packing([(1, 0.5), (1, 0.6), (1, 2.0)], 1.0, 1.0) == 2
    assert F._spark_packing([(1, 0.5), (1, 0.6), (1, 2.0)], 1.0, 0.0) == 3
    # ... and a last one under it joins the one before
    assert F._spark_packing([(1, 1.0), (1, 0.4)], 1.0, 1.0) == 1
    assert F._spark_packing([(1, 1.0), (1, 0.4)], 1.0, 0.0) == 2
    # equal partitions taken many at a time give what they give one at a time
    assert F._spark_packing([(40, 0.25)], 1.0, 0.0) == F._spark_packing([(1, 0.25)] * 40, 1.0, 0.0) == 10


@pytest.mark.parametrize("partitions", [1, 4, 31, 40, 200, 2500])
@pytest.mark.parametrize("mib", [0.01, 0.7, 3.4, 13.6, 300, 5000])
@pytest.mark.parametrize(("advisory", "minimum", "fewest"), [(64 * MiB, MiB, float("nan")),
                                                             (MiB, MiB, 1.0), (MiB, 3 * MiB, 6.0)])
def test_no_hot_share_is_the_equal_partition_rule(partitions, mib, advisory, minimum, fewest):
    args = (mib * MiB, partitions, 2, advisory, minimum, fewest)
    assert F.skewed_coalesced_tasks(mib * MiB, partitions, 2, 0.0, *args[3:]) == F.coalesced_tasks(*args)


def test_a_hot_partition_packs_fewer_tasks_and_alone_past_the_target():
    # 13.6 MiB in 40 partitions at a 1 MiB target: 13 groups equal, fewer the more one holds
    assert F.coalesced_tasks(13.6 * MiB, 40, 1, MiB, MiB) == 13
    got = [F.skewed_coalesced_tasks(13.6 * MiB, 40, 1, h, MiB, MiB) for h in (0.1, 0.3, 0.45, 0.6, 0.9)]
    assert got == [10, 8, 7, 5, 1]
    # all of it in one partition: that one task and the empty ones packed around it
    assert F.skewed_coalesced_tasks(13.6 * MiB, 40, 1, 1.0, MiB, MiB) == 1


def test_a_sweep_whose_skew_no_one_share_gives_keeps_the_rules_it_had():
    # tests/data/history's sqljoin raised its partitions with the size (4, 8, 16, 31), which
    # spread its hot customers over more of them: its join ran 1, 2, 3 and 8 tasks, which no
    # one share gives, so the rule is not offered; the three smaller sizes a share does give,
    # and from them the largest is 7 tasks (Spark ran 8; before, 6)
    st = store_mod.open(Path(__file__).parent / "data" / "history")
    runs = st.runs()
    runs = runs[runs["job"] == "sqljoin"]
    t = F.stage_table(runs, st.read("stages", run_ids=list(runs["run_id"])))
    join = t[t["signature"].str.endswith("|d1|k0")].sort_values("bytes_in")
    assert sorted({int(n) for n in join["num_tasks"]}) == [1, 2, 3, 8]
    assert F._hot_share(join, join.iloc[0]) == 0.0
    largest = join["bytes_in"].max()
    smaller, top = join[join["bytes_in"] < largest], join[join["bytes_in"] == largest].iloc[0]
    assert F._hot_share(smaller, smaller.iloc[-1]) > 0
    conf = {"shuffle_partitions": top["shuffle_partitions"], "default_parallelism": top["default_parallelism"]}
    assert F.predict_num_tasks(smaller, smaller.iloc[-1], largest, conf) == 7


def test_a_sweeps_skewed_join_lasts_waves_of_its_mean_task_not_its_hot_task():
    # tests/data/history's sqljoin at its largest size (8 tasks on 1, 2 and 3 slots, the task
    # of the most bytes 37 % of them): its recorded stage time is waves x mean task time within
    # 6 % on average (11 % at most). That hot task beside waves of the others' mean reads it
    # 16 % short on average (24 % at most; on 1 slot the 7 others run after it). So a hot-task
    # term in the stage time, though it would lower the stage model's error on this stage in
    # the size benchmark (37.5 % to 25.8 %), has no ground in the runs: there the per-task
    # forest predicts too long a task, and the term would hide that (docs/stage-models.md).
    import numpy as np

    st = store_mod.open(Path(__file__).parent / "data" / "history")
    runs = st.runs()
    runs = runs[runs["job"] == "sqljoin"]
    tasks = st.read("tasks", run_ids=list(runs["run_id"]))
    t = F.stage_table(runs, st.read("stages", run_ids=list(runs["run_id"])), tasks)
    join = t[t["signature"].str.endswith("|d1|k0") & (t["num_tasks"] == 8)]
    assert len(join) == 6 and sorted(join["task_slots"].unique()) == [1, 2, 3]
    waves_err, hot_err = [], []
    for _, r in join.iterrows():
        g = tasks[(tasks["run_id"] == r["run_id"]) & (tasks["stage_id"] == r["stage_id"])]
        d, b = g["duration_ms"].to_numpy(float), g["shuffle_read_bytes"].to_numpy(float)
        hot = int(np.argmax(b))
        assert b[hot] / b.sum() == pytest.approx(0.37, abs=0.01)
        others = np.delete(d, hot)
        hot_rule = max(d[hot], np.ceil(len(others) / r["task_slots"]) * others.mean())
        waves_err.append(abs(r["waves"] * r["task_ms"] - r["stage_ms"]) / r["stage_ms"])
        hot_err.append(abs(hot_rule - r["stage_ms"]) / r["stage_ms"])
    assert np.mean(waves_err) < 0.07 and max(waves_err) < 0.12
    assert np.mean(hot_err) > 0.15 and np.mean(hot_err) > 2 * np.mean(waves_err)
