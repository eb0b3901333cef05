"""A real job under a real CPU bubble: `explain` must measure the slowdown and blame the CPU.

The estimator is trained on the committed interference dataset (sparkpredict/data/interference), which
holds other workloads than this job, so this also checks that the monitor needs no knowledge of
the application.
"""
from __future__ import annotations

import json

import pytest

from sparkpredict import monitor
from sparkpredict.bubbles import Bubble

pytestmark = pytest.mark.spark

CONF = {"spark.sql.shuffle.partitions": "8", "spark.default.parallelism": "8"}


def _job(spark) -> int:
    """CPU-bound hashing over 8 partitions, then a shuffle and an aggregation."""
    df = spark.range(0, 1_000_000, numPartitions=8).selectExpr(
        "substr(sha2(cast(id as string), 256), 1, 3) as k", "id")
    return len(df.groupBy("k").count().collect())


@pytest.fixture(scope="module")
def trained():
    if not monitor.DEFAULT_TRAINING_STORE.exists():
        pytest.skip("the interference dataset is not committed")
    return monitor.default_model()  # cached: the CLI below reuses it


def test_explain_names_cpu_under_a_cpu_bubble(spark_app, trained, tmp_path, capsys):
    store = tmp_path / "store"
    with spark_app(tmp_path / "warm", job="warmup", conf=CONF) as spark:
        _job(spark)  # JIT warm-up, recorded elsewhere
    clean = {**CONF, monitor.LABEL_KEY: "none"}
    # clean, bubbled, clean: background load that drifts during the test hits both sides
    with spark_app(store, job="hashagg", conf=clean) as spark:
        _job(spark)
    with spark_app(store, job="hashagg", conf=CONF) as spark:
        victim = spark.sparkContext.applicationId
        # 4 busy workers on top of Spark's task threads: a slowdown well above background noise
        with Bubble("cpu", intensity=3, max_s=300):
            _job(spark)
    with spark_app(store, job="hashagg", conf=clean) as spark:
        _job(spark)

    e = monitor.explain_run(victim, str(store), trained)
    assert e.clean_runs == 2
    assert e.degradation is not None and e.degradation > 0.2, e
    assert e.main_cause == "cpu", (e.contributions, e.culprit)
    assert e.violated and e.stages and e.stages[0].actual_ms > 0

    from sparkpredict.cli import main

    assert main(["explain", victim, "--store", str(store), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["main_cause"] == "cpu" and out["run_id"] == victim
