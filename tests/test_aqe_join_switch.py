"""A fact-dimension join whose dimension grows with the input, under adaptive execution: Spark
broadcasts the dimension while its shuffle is under the adaptive broadcast threshold and keeps
the sort-merge join above it. The stage plan must follow the join Spark will run at the size asked."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from sparkpredict import store as store_mod
from sparkpredict.features import stages as F
from sparkpredict.features.runs import runs_table
from sparkpredict.models.join_switch import BROADCAST, SORT_MERGE, run_join
from sparkpredict.models.stages import StageRuntimeModel

JOB = "aqe-join-grow"
#: the dimension's rows in thousands; its shuffle (88 bytes a row) crosses 200 KiB between 2 and 4
SIZES = (0.5, 2, 4, 12)
AQE = {"spark.sql.adaptive.enabled": "true", "spark.sql.shuffle.partitions": "8",
       "spark.sql.autoBroadcastJoinThreshold": "1k",
       "spark.sql.adaptive.autoBroadcastJoinThreshold": "200k"}


@pytest.fixture(scope="module")
def growing(spark_app, tmp_path_factory) -> tuple[Path, dict[float, str]]:
    """A store with the join at each size, and each size's run id."""
    root = tmp_path_factory.mktemp("aqe-grow")
    with spark_app(root / "writer-store", job="writer") as spark:
        for m in SIZES:
            n = int(1000 * m)
            spark.range(20 * n).selectExpr("id", f"id % {n} AS cust", "id * 0.5 AS amount") \
                .repartition(2).write.parquet(str(root / f"fact-{m}"))
            spark.range(n).selectExpr("id AS cust", "sha2(cast(id AS string), 256) AS region") \
                .repartition(2).write.parquet(str(root / f"dim-{m}"))
    for m in SIZES:
        with spark_app(root / "store", job=JOB, conf=AQE) as spark:
            fact, dim = spark.read.parquet(str(root / f"fact-{m}")), spark.read.parquet(str(root / f"dim-{m}"))
            fact.join(dim, "cust").groupBy("region").agg({"amount": "sum"}) \
                .write.format("noop").mode("overwrite").save()
    runs = store_mod.open(root / "store").runs().sort_values("start_ms")
    return root / "store", dict(zip(SIZES, runs["run_id"]))


def _plans(store: Path) -> dict[str, tuple[str, float] | None]:
    st = store_mod.open(store)
    table = F.stage_table(st.runs(), st.stages(), st.read("tasks"))
    return {rid: run_join(g) for rid, g in table.groupby("run_id")}


def test_each_run_shows_the_join_spark_ran(growing):
    store, ids = growing
    plans = _plans(store)
    assert [plans[ids[m]][0] for m in SIZES] == [BROADCAST, BROADCAST, SORT_MERGE, SORT_MERGE]
    build = [plans[ids[m]][1] for m in SIZES]
    assert build == sorted(build)  # the dimension's shuffle grows with the input


def _asked_at(store: Path, ids: dict, train: tuple, m: float) -> tuple[pd.DataFrame, StageRuntimeModel, pd.Series]:
    runs = runs_table(store).set_index("run_id", drop=False)
    model = StageRuntimeModel(store=store).fit(runs.loc[[ids[k] for k in train]])
    truth = runs.loc[ids[m]]
    return model.stage_plan(JOB, float(truth["input_bytes"]), int(truth["executors"])), model, truth


def _stage_count(store: Path, run_id: str) -> int:
    st = store_mod.open(store)
    return len(F.stage_table(st.runs(), st.stages(), st.read("tasks")).query("run_id == @run_id"))


def test_a_larger_size_plans_the_sort_merge_join_spark_keeps(growing):
    # Runs at 0.5k and 2k dimension rows broadcast it, one at 12k kept the sort-merge join. At
    # 4k, nearest in size to the 2k run, the plan had copied its broadcast and broadcast join,
    # where Spark ran the sort-merge join (a stage fewer).
    store, ids = growing
    plan, model, truth = _asked_at(store, ids, (0.5, 2, 12), 4)
    assert plan.attrs["reference_run"] == ids[12]
    assert len(plan) == _stage_count(store, ids[4])
    assert model.plan_warnings(pd.DataFrame({"job": [JOB], "input_bytes": [truth["input_bytes"]],
                                             "executors": [truth["executors"]]})) == [[]]


def test_a_smaller_size_plans_the_broadcast_spark_switches_to(growing):
    # The other way: a run at 4k rows nearest to the 2k asked about kept the sort-merge join,
    # while at 2k the dimension's shuffle is under the threshold and Spark broadcast it.
    store, ids = growing
    plan, _, _ = _asked_at(store, ids, (0.5, 4, 12), 2)
    assert plan.attrs["reference_run"] == ids[0.5]
    assert len(plan) == _stage_count(store, ids[2])


def test_a_history_of_one_join_warns_where_spark_will_change_it(growing):
    # Every recorded run broadcast: nothing measured the sort-merge join's stages, so the plan
    # stays the broadcast's, but the prediction says Spark will likely run another join.
    store, ids = growing
    plan, model, truth = _asked_at(store, ids, (0.5, 2), 12)
    assert plan.attrs["reference_run"] == ids[2]
    q = pd.DataFrame({"job": [JOB, JOB], "input_bytes": [truth["input_bytes"], 1.2 * plan["run_input_bytes"].iloc[0]],
                      "executors": [truth["executors"]] * 2})
    far, near = model.plan_warnings(q)
    assert len(far) == 1 and "keep the sort-merge join" in far[0] and ids[2] in far[0]
    assert near == []


def test_the_advice_carries_the_join_warning_of_its_stage_model(growing):
    # What the user reads: suggest_executors with that stage model at the size where Spark
    # will likely keep the sort-merge join says so among its warnings, and not at 1.2x.
    from sparkpredict import suggest_executors

    store, ids = growing
    plan, model, truth = _asked_at(store, ids, (0.5, 2), 12)
    far = suggest_executors(JOB, float(truth["input_bytes"]), models={JOB: model}, store=store, max_executors=3)
    assert far.model_name.startswith("stage-forest")
    assert any("keep the sort-merge join" in w for w in far.warnings), far.warnings
    near = suggest_executors(JOB, 1.2 * float(plan["run_input_bytes"].iloc[0]), models={JOB: model},
                             store=store, max_executors=3)
    assert not any("sort-merge" in w for w in near.warnings), near.warnings


@pytest.mark.parametrize(("train", "asked", "want"), [((0.5, 2, 12), 4, 12), ((0.5, 4, 12), 2, 0.5)])
def test_the_replay_replays_a_run_of_the_join_spark_will_run(growing, train, asked, want):
    # The replay copies a recorded run's stages as the stage model does, and took the run
    # nearest in size whatever its join: the 2k broadcast run for 4k, the 4k sort-merge for 2k.
    from sparkpredict.models.replay import ReplayRuntimeModel

    store, ids = growing
    runs = runs_table(store).set_index("run_id", drop=False)
    model = ReplayRuntimeModel(store=store).fit(runs.loc[[ids[k] for k in train]])
    truth = runs.loc[ids[asked]]
    assert model._reference(JOB, float(truth["input_bytes"]), float(truth["executors"])) == ids[want]
    q = pd.DataFrame({"job": [JOB], "input_bytes": [truth["input_bytes"]], "executors": [truth["executors"]]})
    assert model.plan_warnings(q) == [[]]


def test_the_replay_warns_where_spark_will_change_the_only_recorded_join(growing):
    from sparkpredict.models.replay import ReplayRuntimeModel

    store, ids = growing
    runs = runs_table(store).set_index("run_id", drop=False)
    model = ReplayRuntimeModel(store=store).fit(runs.loc[[ids[0.5], ids[2]]])
    truth = runs.loc[ids[12]]
    q = pd.DataFrame({"job": [JOB], "input_bytes": [truth["input_bytes"]], "executors": [truth["executors"]]})
    (far,) = model.plan_warnings(q)
    assert len(far) == 1 and "keep the sort-merge join" in far[0] and ids[2] in far[0]
