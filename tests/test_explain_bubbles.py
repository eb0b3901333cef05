"""Real jobs under real bubbles: `explain` must measure the slowdown and name the neighbour.

The estimator is trained on the committed interference dataset (sparkpredict/data/interference), which
holds other workloads than this job and ran on `local-cluster`, not local mode, so this also
checks that the monitor needs no knowledge of the application.
"""
from __future__ import annotations

import json

import pytest

from sparkpredict import monitor
from sparkpredict.bubbles import Bubble

pytestmark = pytest.mark.spark

# The job lasts about a second: host samples every 100 ms, so that each stage has its own
# (the default 1 s suits jobs of minutes; stages the samples do not cover get no host evidence)
CONF = {"spark.sql.shuffle.partitions": "8", "spark.default.parallelism": "8",
        "spark.sparkpredict.hostSampleIntervalMs": "100"}


def _job(spark) -> int:
    """CPU-bound hashing over 8 partitions, then a shuffle and an aggregation."""
    df = spark.range(0, 1_000_000, numPartitions=8).selectExpr(
        "substr(sha2(cast(id as string), 256), 1, 3) as k", "id")
    return len(df.groupBy("k").count().collect())


@pytest.fixture(scope="module")
def trained():
    return monitor.default_model()  # cached: the CLI below reuses it


def _explained_run_under(bubble: Bubble, spark_app, trained, tmp_path) -> monitor.Explanation:
    store = tmp_path / "store"
    with spark_app(tmp_path / "warm", job="warmup", conf=CONF) as spark:
        _job(spark)  # JIT warm-up, recorded elsewhere
    clean = {**CONF, monitor.LABEL_KEY: "none"}
    # clean, bubbled, clean: background load that drifts during the test hits both sides
    with spark_app(store, job="hashagg", conf=clean) as spark:
        _job(spark)

    def bubbled() -> str:
        with spark_app(store, job="hashagg", conf=CONF) as spark, bubble:
            _job(spark)
            return spark.sparkContext.applicationId

    victim = bubbled()
    with spark_app(store, job="hashagg", conf=clean) as spark:
        _job(spark)
    e = monitor.explain_run(victim, str(store), trained)
    if e.degradation is not None and e.degradation <= 0.2:
        # The bubble's hold on a 1 s job varies with what else the 2 cores run: a clean run
        # slowed by other load leaves it a smaller share (a CI run beside other work measured
        # 0.196). The precondition, a slowdown to explain, is measured once more; what is
        # asserted below, the cause named, is not relaxed.
        victim = bubbled()
        e = monitor.explain_run(victim, str(store), trained)
    assert e.run_id == victim and e.clean_runs == 2
    assert e.degradation is not None and e.degradation > 0.2, e
    assert e.violated and e.stages and e.stages[0].actual_ms > 0
    return e


def test_explain_names_cpu_under_a_cpu_bubble(spark_app, trained, tmp_path, capsys):
    # 4 busy workers on top of Spark's task threads: a slowdown well above background noise
    e = _explained_run_under(Bubble("cpu", intensity=3, max_s=300), spark_app, trained, tmp_path)
    assert e.culprit is not None and e.culprit["cpu"] > 0.5, e.culprit
    assert e.main_cause == "cpu", (e.contributions, e.culprit)
    assert e.footprint is not None and abs(e.footprint["memory_held_gib"]) < 0.4, e.footprint

    from sparkpredict.cli import main

    assert main(["explain", e.run_id, "--store", str(tmp_path / "store"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["main_cause"] == "cpu" and out["run_id"] == e.run_id


def test_explain_names_memory_under_a_memory_bubble(spark_app, trained, tmp_path):
    # 4 copiers of 2 x 256 MiB arrays: they take cores, and hold 2 GiB while they do. Not 2
    # copiers: on 2 cores their slowdown of this 1 s job ranged 0.10-0.89 (a CI run fell under
    # the 0.2 floor); 4 measured 1.40-1.84 in three runs
    e = _explained_run_under(Bubble("memory", intensity=3, max_s=300), spark_app, trained, tmp_path)
    assert e.culprit is not None and e.culprit["memory"] > 0.5, e.culprit
    assert e.footprint is not None and 1.4 < e.footprint["memory_held_gib"] < 2.6, e.footprint
    assert e.main_cause == "memory", (e.contributions, e.culprit)
