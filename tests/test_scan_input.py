"""A SQL file scan's input is the size of its files, live on Spark 4 and from its event log.

Parquet on Spark 4 reads "vectored" (on by default): the task input metric counts about the
footers, so a run's measured input was a few kB for megabytes of Parquet, and another value
again with vectored reads off (the columns read). Both capture paths now count each scan's
files, as its "size of files read" metric tells the driver.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sparkpredict import store as store_mod
from sparkpredict.capture.eventlog_ingest import ingest_event_logs

FILES = 4
HISTORY = Path(__file__).parent / "data" / "history"


@pytest.fixture(scope="module")
def parquet(spark_app, tmp_path_factory) -> tuple[Path, int]:
    """4 Parquet files of three columns, and their bytes on disk."""
    out = tmp_path_factory.mktemp("parquet") / "data"
    with spark_app(tmp_path_factory.mktemp("writer-store"), job="writer") as spark:
        df = spark.range(300_000).selectExpr("id", "id * 1.5 AS x", "concat('row-', id) AS s")
        df.repartition(FILES).write.parquet(str(out))
    files = sorted(out.glob("part-*.parquet"))
    assert len(files) == FILES
    return out, sum(f.stat().st_size for f in files)


def _run(store: Path):
    runs = store_mod.open(store).runs()
    assert len(runs) == 1
    return runs.iloc[0], store_mod.open(store).stages()


# one partition per file: the share a partial read counts is then exact
ONE_FILE_A_PARTITION = {"spark.sql.files.maxPartitionBytes": "2m", "spark.sql.files.openCostInBytes": "1m"}


@pytest.mark.spark
@pytest.mark.parametrize("vectored", ["true", "false"])
def test_a_parquet_scan_counts_its_files_whichever_way_parquet_reads(spark_app, parquet, tmp_path, vectored):
    path, size = parquet
    logs = tmp_path / "logs"
    logs.mkdir()
    store = tmp_path / "store"
    conf = {"spark.hadoop.parquet.hadoop.vectored.io.enabled": vectored, "spark.sql.adaptive.enabled": "true",
            "spark.eventLog.enabled": "true", "spark.eventLog.dir": str(logs),
            "spark.eventLog.rolling.enabled": "false"}
    with spark_app(store, job="scan", conf=conf) as spark:
        row = spark.read.parquet(str(path)).selectExpr("sum(x) AS t", "count(*) AS n").collect()[0]
        assert row.n == 300_000
    run, stages = _run(store)
    # the tasks' input metric: the footers when vectored, one column's chunks when not
    task_metric = int(stages["input_bytes"].sum())
    assert 0 < task_metric < size / 2, (vectored, task_metric, size)
    assert (run.input_bytes_source, run.input_bytes) == ("measured", size)
    # the event log of the same application, ingested: the same input
    [log] = [p for p in logs.iterdir() if p.is_file()]
    ingested = ingest_event_logs([log], tmp_path / "ingested")
    assert ingested.files[0].outcome == "ingested"
    assert int(store_mod.open(tmp_path / "ingested").runs()["input_bytes"].iloc[0]) == size


@pytest.mark.spark
def test_a_scan_read_in_part_counts_its_share_of_partitions(spark_app, parquet, tmp_path):
    """`limit(1).collect()` runs one partition of four: a quarter of the files, not all."""
    path, size = parquet
    store = tmp_path / "store"
    with spark_app(store, job="limit", conf=ONE_FILE_A_PARTITION) as spark:
        df = spark.read.parquet(str(path))
        assert df.rdd.getNumPartitions() == FILES
        assert len(df.limit(1).collect()) == 1
    run, _ = _run(store)
    assert run.input_bytes == int(size / FILES)


@pytest.mark.spark
def test_a_cached_scan_counts_once_and_a_fresh_read_again(spark_app, parquet, tmp_path):
    """Actions over a cached DataFrame read the cache (their stages list the scan's metrics at
    zero); a new DataFrame over the same files reads them again, as a job does."""
    path, size = parquet
    store = tmp_path / "store"
    with spark_app(store, job="cached", conf=ONE_FILE_A_PARTITION) as spark:
        df = spark.read.parquet(str(path)).cache()
        assert df.count() == 300_000
        assert df.selectExpr("sum(id)").collect()[0][0] == 300_000 * 299_999 // 2
        assert df.filter("id % 2 = 0").count() == 150_000
    run, _ = _run(store)
    assert run.input_bytes == size
    store2 = tmp_path / "store2"
    with spark_app(store2, job="twice", conf=ONE_FILE_A_PARTITION) as spark:
        for _ in range(2):
            assert spark.read.parquet(str(path)).count() == 300_000
    run, _ = _run(store2)
    assert run.input_bytes == 2 * size


def test_a_history_measured_before_and_since_the_files_rule_is_warned_of(tmp_path, monkeypatch):
    """A Parquet job's runs recorded by an older listener hold the footers (a thousandth of the
    input), the runs since hold the files: one job, two scales, until the older are corrected."""
    from sparkpredict import suggest_executors
    from sparkpredict.store import io as store_io

    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "store"
    shutil.copytree(HISTORY, path)
    st = store_io.open(path)
    runs = st.runs()
    job = runs[runs.job == "sqljoin"].sort_values("start_ms")
    older, since = job.iloc[:12], job.iloc[12:]

    def measured(rows, version, scale):
        return rows.assign(input_bytes_source="measured", sparkpredict_version=version,
                           input_bytes=rows.input_bytes // scale, updated_ms=rows.updated_ms + 10**6)

    st.append({"runs": measured(older, "0.2.0", 1000)})
    assert not [w for w in suggest_executors("sqljoin", "32MB", store=path).warnings if "before 0.3.0" in w]
    st.append({"runs": measured(since, "0.3.0", 1)})
    warned = [w for w in suggest_executors("sqljoin", "32MB", store=path).warnings if "before 0.3.0" in w]
    ids = list(older.run_id)
    assert len(warned) == 1 and warned[0].startswith(
        "12 runs of sqljoin had their input measured by sparkpredict before 0.3.0 (median 12.0 KB), "
        "far below the 12 measured since (median 12.0 MB)"), warned
    assert warned[0].endswith(f"--exclude`): {ids[0]} {ids[1]} {ids[2]} (and 9 more)")
    assert not [w for w in suggest_executors("sort", "32MB", store=path).warnings if "before 0.3.0" in w]
    # corrected (their sizes declared): no warning
    st.append({"runs": older.assign(updated_ms=older.updated_ms + 2 * 10**6)})
    assert not [w for w in suggest_executors("sqljoin", "32MB", store=path).warnings if "before 0.3.0" in w]


@pytest.mark.spark
def test_one_plan_run_twice_reads_twice_and_a_cached_one_once(spark_app, parquet, tmp_path):
    """From a review: `df.collect()` twice runs one physical plan (the same scan metrics) twice,
    and read the files twice for one count; over a cached DataFrame the executions share one
    read, the partitions a `show()` ran counted with those the next action ran."""
    path, size = parquet
    store = tmp_path / "store"
    with spark_app(store, job="twice", conf=ONE_FILE_A_PARTITION) as spark:
        df = spark.read.parquet(str(path)).select("id")
        for _ in range(3):
            assert len(df.collect()) == 300_000
    run, _ = _run(store)
    assert run.input_bytes == 3 * size
    store2 = tmp_path / "store2"
    with spark_app(store2, job="cached-show", conf=ONE_FILE_A_PARTITION) as spark:
        df = spark.read.parquet(str(path)).cache()
        df.show(1)
        assert df.count() == 300_000 and len(df.collect()) == 300_000
    run, _ = _run(store2)
    assert run.input_bytes == size
