"""Values of the JVM listener's rows that no other test pinned (the rest of the second mutation
pass of its Java: SparkPredictListener's task ends and flushes, StageTracker's job ends).

A limit that Spark runs as two jobs over one scan: the second job's tasks number the
partitions they run from 0 (their place in the job), and the scan's share of files is that of
the partitions the two jobs ran, not of their places.
"""
from __future__ import annotations

import pytest
from test_scan_input import _input, _logged

pytestmark = pytest.mark.spark


def test_a_limit_run_as_two_jobs_counts_the_partitions_each_ran(spark_app, tmp_path):
    """`limit(30_000).collect()` over four files of 25,000 rows, one a partition: Spark's first
    job runs partition 0, too few rows, and a second job partition 1, as its task 0. Two
    partitions of four ran: half the files, as the ingest of its event log counts too.
    Mutant: SparkPredictListener.taskEnd taking a task's index for its partition (the second
    job's partition 1 was taken for partition 0 again: a quarter of the files)."""
    store, conf = _logged(tmp_path, "two-jobs")
    data = tmp_path / "data"
    # files of 0.2 MB: an open cost of the most a partition holds keeps them one a partition
    conf.update({"spark.sql.files.openCostInBytes": "2m", "spark.sql.limit.initialNumPartitions": "1"})
    with spark_app(store, job="two-jobs", conf=conf) as spark:
        spark.range(100_000).repartition(4).write.parquet(str(data))
        df = spark.read.parquet(str(data))
        assert df.rdd.getNumPartitions() == 4
        assert len(df.limit(30_000).collect()) == 30_000
    size = sum(f.stat().st_size for f in data.glob("part-*.parquet"))
    assert _input(store) == int(size * 2 / 4)
