"""A Spark SQL job under adaptive query execution (Spark 4's default), recorded live and asked
about a larger size: what its stage rows and the stage-level models make of it."""
from __future__ import annotations

from pathlib import Path

import pytest

from sparkpredict import store as store_mod
from sparkpredict.features import stages as F
from sparkpredict.features.runs import runs_table
from sparkpredict.models.replay import ReplayRuntimeModel
from sparkpredict.models.stages import StageRuntimeModel

JOB = "aqe-sql"
ROWS = (40_000, 80_000)
FILES = 4
AQE = {"spark.sql.adaptive.enabled": "true", "spark.sql.shuffle.partitions": "8"}


@pytest.fixture(scope="module")
def recorded(spark_app, tmp_path_factory) -> tuple[Path, dict[int, int]]:
    """One store holding a Parquet aggregation recorded at two sizes, and each size's bytes of
    Parquet files."""
    root = tmp_path_factory.mktemp("aqe")
    store, sizes = root / "store", {}
    with spark_app(root / "writer-store", job="writer") as spark:
        for n in ROWS:
            out = root / f"data-{n}"
            (spark.range(n).selectExpr("id", "id % 97 AS k", "sha2(cast(id AS string), 256) AS pad")
             .repartition(FILES).write.parquet(str(out)))
            sizes[n] = sum(f.stat().st_size for f in out.glob("part-*.parquet"))
    for n in ROWS:
        with spark_app(store, job=JOB, conf=AQE) as spark:
            df = spark.read.parquet(str(root / f"data-{n}"))
            df.groupBy("k").agg({"pad": "max"}).collect()
    return store, sizes


def _scan_rows(store: Path):
    st = store_mod.open(store)
    runs = st.runs()
    table = F.stage_table(runs, st.stages(), st.read("tasks"))
    return runs, table[table["is_input_stage"] == 1]


def test_a_parquet_scan_stage_reads_its_files_not_their_footers(recorded):
    # Spark 4 reads Parquet vectored: the tasks' input metric counts about the footers (a few
    # kB here), while the run's input is the files' size. A scan stage had read as the footers,
    # the same few kB at either size, so its task count and per-task time never grew with the data.
    store, sizes = recorded
    runs, scans = _scan_rows(store)
    assert len(scans) == 2
    by_size = scans.merge(runs[["run_id", "input_bytes"]].rename(columns={"input_bytes": "run_in"}), on="run_id")
    for (_, row), n in zip(by_size.sort_values("run_in").iterrows(), ROWS):
        assert row["run_in"] == pytest.approx(sizes[n], rel=0.01)
        assert row["bytes_in"] == pytest.approx(sizes[n], rel=0.01)


def test_a_scan_stage_takes_longer_per_task_when_its_files_grow(recorded):
    # Spark splits these few MB by the parallelism (2 tasks at either size), so a scan task
    # reads 4x the bytes at 4x the input. With the footers as its bytes, its predicted
    # per-task time had stayed the recorded one (175 ms, 203 ms at 4x; 560 ms now), in the
    # stage forests and in the replay.
    store, _ = recorded
    runs = runs_table(store)
    big = runs.sort_values("input_bytes").iloc[-1]
    stage = StageRuntimeModel(store=store).fit(runs)

    def scan_task_ms(factor: float) -> float:
        plan = stage.stage_plan(JOB, factor * float(big["input_bytes"]), int(big["executors"]))
        scan = plan["is_input_stage"].to_numpy() == 1
        assert scan.sum() == 1
        return float(stage._task_ms_trees(plan).mean(axis=0)[scan][0])

    assert scan_task_ms(4) > 2 * scan_task_ms(1)

    replay = ReplayRuntimeModel(store=store).fit(runs)
    tl = replay._timeline(big["run_id"])
    sized = replay._sized(big["run_id"], 4 * float(big["input_bytes"]), float(tl.executors), float(tl.cores))
    _, scans = _scan_rows(store)
    i = list(tl.stage_ids).index(int(scans[scans["run_id"] == big["run_id"]]["stage_id"].iloc[0]))

    def scan_ms(t) -> float:
        return float(t.task_duration_ms[t.task_offsets[i]:t.task_offsets[i + 1]].sum())

    assert scan_ms(sized) > 2 * scan_ms(tl)


#: The same query twice: a sort-merge join, and one that adaptive execution turns into a
#: broadcast join once the dimension's shuffle has run (a stage more, its parents skipped).
SORT_MERGE = {"spark.sql.autoBroadcastJoinThreshold": "-1"}
BROADCAST_AT_RUN_TIME = {"spark.sql.autoBroadcastJoinThreshold": "1k",
                         "spark.sql.adaptive.autoBroadcastJoinThreshold": "10m"}


@pytest.fixture(scope="module")
def joins(spark_app, tmp_path_factory) -> Path:
    """A store with one run of a fact-dimension join, aggregation and window per join kind."""
    root = tmp_path_factory.mktemp("aqe-joins")
    with spark_app(root / "writer-store", job="writer") as spark:
        spark.range(20_000).selectExpr("id", "id % 500 AS cust", "id * 0.5 AS amount") \
            .repartition(2).write.parquet(str(root / "fact"))
        spark.range(500).selectExpr("id AS cust", "cast(id % 7 AS string) AS region") \
            .write.parquet(str(root / "dim"))
    for i, conf in enumerate((SORT_MERGE, BROADCAST_AT_RUN_TIME)):
        with spark_app(root / "store", job="aqe-join", conf={**AQE, **conf}) as spark:
            fact, dim = spark.read.parquet(str(root / "fact")), spark.read.parquet(str(root / "dim"))
            daily = fact.join(dim, "cust").groupBy("region", "cust").agg({"amount": "sum"})
            ranked = daily.selectExpr("*", "rank() OVER (PARTITION BY region ORDER BY cust) AS r")
            ranked.write.parquet(str(root / f"out-{i}"))
    return root / "store"


def test_stages_after_a_join_keep_their_signatures_when_adaptive_execution_changes_the_join(joins):
    # Spark 4 names every stage of an adaptive query after a thread pool's frame (CompletableFuture),
    # and its reduce stages' parents are skipped stages: all read as depth 0, told apart by their
    # ordinal alone. The broadcast join's extra stage shifted every ordinal after it: the
    # aggregation of one run had the signature of the other's join, the sort-merge join that of
    # the broadcast's collect, and each signature's history mixed the two.
    st = store_mod.open(joins)
    runs = st.runs().sort_values("start_ms")
    assert len(runs) == 2
    table = F.stage_table(runs, st.stages(), st.read("tasks"))
    per_run = [table[table["run_id"] == rid].sort_values("submission_ms") for rid in runs["run_id"]]
    assert all(t["signature"].is_unique for t in per_run)
    assert len(per_run[1]) == len(per_run[0]) + 1  # the broadcast: a stage more
    # the aggregation (with its window) is the last stage of both, below the join
    final = [t["signature"].iloc[-1] for t in per_run]
    assert final[0] == final[1] and final[0].endswith("|d2|k0")
    # a signature both runs hold names a stage of one role in both: a map stage (it writes a
    # shuffle) in both, or a stage that ends the query in both
    role = [dict(zip(t["signature"], t["shuffle_write_bytes"] > 0)) for t in per_run]
    common = set(role[0]) & set(role[1])
    assert len(common) >= 5  # the schema listings, both scans and the aggregation
    assert {s: role[0][s] for s in common} == {s: role[1][s] for s in common}


@pytest.fixture(scope="module")
def coalesced(spark_app, tmp_path_factory) -> Path:
    """A store with an aggregation whose shuffle adaptive execution coalesced, at three sizes."""
    root = tmp_path_factory.mktemp("aqe-coalesced")
    sizes = (8_000, 48_000, 192_000)
    with spark_app(root / "writer-store", job="writer") as spark:
        for n in sizes:
            spark.range(n).selectExpr("id", "sha2(cast(id AS string), 256) AS pad") \
                .repartition(2).write.parquet(str(root / f"data-{n}"))
    # the largest again on 8 task threads: spark.default.parallelism 8
    for n, master in [*((n, "local[2]") for n in sizes), (sizes[-1], "local[8]")]:
        with spark_app(root / "store", job="aqe-agg", conf=AQE, master=master) as spark:
            (spark.read.parquet(str(root / f"data-{n}")).groupBy("id").agg({"pad": "max"})
             .write.format("noop").mode("overwrite").save())
    return root / "store"


def test_a_coalesced_reduce_stage_keeps_one_task_per_core_at_a_larger_size(coalesced):
    # Adaptive execution coalesces a shuffle into partitions of max(1 MiB, min(64 MiB, bytes /
    # spark.default.parallelism)): one task per core up to 64 MiB per core. The counts it
    # recorded (1 task at 0.5 MB, 2 at 3.2 MB) had been read as a split learnt from them, and
    # the reduce of 13 MB predicted at 8 tasks (the shuffle's partitions) where Spark ran 2.
    st = store_mod.open(coalesced)
    runs = runs_table(coalesced).sort_values("start_ms")
    table = F.stage_table(st.runs(), st.stages(), st.read("tasks"))
    reduce = table[table["shuffle_read_bytes"] > 0].set_index("run_id").loc[list(runs["run_id"])]
    # what Spark ran, coalesced from 8 partitions: one task per core, one for the smallest
    assert list(reduce["num_tasks"]) == [1, 2, 2, 8]
    model = StageRuntimeModel(store=coalesced).fit(runs.iloc[:2])
    for (_, run), tasks in zip(runs.iloc[2:].iterrows(), reduce["num_tasks"].iloc[2:]):
        plan = model.stage_plan("aqe-agg", float(run["input_bytes"]), int(run["executors"]))
        assert list(plan[plan["shuffle_read_bytes"] > 0]["num_tasks"]) == [tasks]
