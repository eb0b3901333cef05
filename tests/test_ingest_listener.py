"""One Spark 4 application recorded twice: by the JVM listener and from its own event log.

The two records must agree (issue 3): same runs, stages and tasks, equal sums of run time,
shuffle bytes and input bytes. The event log is written rolling + zstd, Spark 4's forms.
"""
from __future__ import annotations

import pytest

from sparkpredict import store
from sparkpredict.capture.eventlog_ingest import ingest_event_logs


@pytest.mark.spark
def test_listener_and_event_log_agree(spark_app, tmp_path):
    logs = tmp_path / "eventlogs"
    logs.mkdir()
    data = tmp_path / "words.txt"
    data.write_text("\n".join(f"w{i % 97} w{i % 13} w{i % 7}" for i in range(20000)))
    conf = {"spark.eventLog.enabled": "true", "spark.eventLog.dir": str(logs),
            "spark.eventLog.rolling.enabled": "true", "spark.eventLog.compression.codec": "zstd",
            "spark.eventLog.compress": "true"}
    with spark_app(tmp_path / "listener-store", job="agree", conf=conf) as spark:
        from pyspark.sql import functions as F

        lines = spark.read.text(str(data)).repartition(4)
        words = lines.select(F.explode(F.split("value", " ")).alias("w"))
        assert words.groupBy("w").count().count() == 97  # w0..w96
        spark.sparkContext.parallelize(range(1000), 6).map(lambda x: (x % 5, x)) \
            .reduceByKey(lambda a, b: a + b).collect()
        # read once from the file, then twice from the cache: Spark counts the cached reads as
        # stage input too, the run's input must not
        cached = spark.read.text(str(data)).cache()
        for _ in range(3):
            assert cached.count() == 20000
    (folder,) = logs.glob("eventlog_v2_*")
    assert any(f.name.endswith(".zstd") for f in folder.glob("events_*"))

    listener = store.open(tmp_path / "listener-store")
    report = ingest_event_logs([logs], tmp_path / "eventlog-store")
    assert report.files_ingested == 1 and not report.errors
    ingested = store.open(tmp_path / "eventlog-store")

    lr, er = listener.runs(), ingested.runs()
    assert len(lr) == len(er) == 1
    lrun, erun = lr.iloc[0], er.iloc[0]
    assert lrun.run_id == erun.run_id and erun.status == lrun.status == "succeeded"
    assert len(listener.stages()) == len(ingested.stages()) == erun.num_stages > 0
    assert len(listener.tasks()) == len(ingested.tasks()) == erun.num_tasks > 0
    for col in ("wall_ms", "start_ms", "end_ms", "executor_run_time_ms", "shuffle_read_bytes",
                "shuffle_write_bytes", "input_bytes", "num_jobs", "executors_max", "task_slots",
                "executor_cores", "executors_requested", "executor_memory_mb"):
        assert lrun[col] == erun[col], col
    assert erun.input_bytes > 0 and erun.shuffle_write_bytes > 0
    # two reads of the file (the word count, the first pass over the cache), not four
    assert erun.input_bytes == pytest.approx(2 * data.stat().st_size, rel=0.05)
    assert ingested.stages()["input_bytes"].sum() > erun.input_bytes
    assert lrun.executors_mean == pytest.approx(erun.executors_mean)
    # Stage by stage, the sums of task metrics agree too.
    key = ["stage_id", "stage_attempt_id"]
    ls = listener.stages().sort_values(key).reset_index(drop=True)
    es = ingested.stages().sort_values(key).reset_index(drop=True)
    for col in ("num_task_rows", "executor_run_time_ms", "input_bytes", "shuffle_read_bytes",
                "shuffle_write_bytes", "task_duration_median_ms", "parent_stage_ids_json", "job_id"):
        assert ls[col].tolist() == es[col].tolist(), col
    lt = listener.tasks().sort_values("task_id").reset_index(drop=True)
    et = ingested.tasks().sort_values("task_id").reset_index(drop=True)
    for col in ("task_id", "status", "duration_ms", "executor_cpu_time_ms", "shuffle_write_time_ms"):
        assert lt[col].tolist() == pytest.approx(et[col].tolist()) if lt[col].dtype.kind == "f" \
            else lt[col].tolist() == et[col].tolist(), col
    # Ingesting the log into the listener's store adds nothing: the run is already there.
    again = ingest_event_logs([logs], listener)
    assert again.files_existing == 1 and again.runs_added == 0
    assert len(listener.tasks()) == len(lt)


@pytest.mark.spark
def test_spark_4_writes_a_rolling_zstd_log_by_default_as_the_docs_say(spark_app, tmp_path):
    """docs/ingest.md: with spark.eventLog.enabled=true alone, pyspark 4 writes
    eventlog_v2_<app>/events_1_<app>.zstd (spark.eventLog.rolling.enabled defaults to true)."""
    from pathlib import Path

    logs = tmp_path / "eventlogs"
    logs.mkdir()
    with spark_app(tmp_path / "store", job="defaults",
                   conf={"spark.eventLog.enabled": "true", "spark.eventLog.dir": str(logs)}) as spark:
        spark.sparkContext.parallelize(range(10), 2).count()
        app = spark.sparkContext.applicationId
    (folder,) = logs.iterdir()
    assert folder.name == f"eventlog_v2_{app}"
    assert [f.name for f in folder.glob("events_*")] == [f"events_1_{app}.zstd"]
    doc = (Path(__file__).resolve().parents[1] / "docs" / "ingest.md").read_text()
    assert "pyspark 4.3.0 writes a rolling\nfolder `eventlog_v2_<app>/` holding `events_1_<app>.zstd`" in doc
    report = ingest_event_logs([logs], tmp_path / "ingested")
    assert report.files_ingested == 1 and report.files[0].status == "succeeded"


@pytest.mark.spark
def test_a_declared_size_reads_the_same_in_the_listener_and_the_ingest(spark_app, tmp_path):
    """spark.sparkpredict.inputBytes=1.5g: the ingest (units.spark_size) read 1.5 GiB, the
    listener refused it (Spark's byte strings take whole numbers only) and recorded the measured
    input, so one run had two sizes. Both follow units.declared_size now (--input-size's
    reading: 5MB is 5,000,000 bytes, 5m and 5MiB 5 * 2^20), fractions included."""
    from sparkpredict.units import declared_size

    logs = tmp_path / "eventlogs"
    logs.mkdir()
    conf = {"spark.eventLog.enabled": "true", "spark.eventLog.dir": str(logs),
            "spark.sparkpredict.inputBytes": "1.5g"}
    with spark_app(tmp_path / "listener-store", job="declared", conf=conf) as spark:
        assert spark.sparkContext.parallelize(range(10), 2).count() == 10
    listener = store.open(tmp_path / "listener-store")
    report = ingest_event_logs([logs], tmp_path / "eventlog-store")
    assert report.files_ingested == 1 and not report.errors
    lrun, erun = listener.runs().iloc[0], store.open(tmp_path / "eventlog-store").runs().iloc[0]
    assert lrun.input_bytes == erun.input_bytes == 3 * 2**29
    assert lrun.input_bytes_source == erun.input_bytes_source == "declared"
    # the listener's parser is declared_size's, string for string (the JVM outlives the session)
    parse = spark._jvm.io.sparkpredict.SparkPredictListener.declaredSize
    texts = ["1.5g", "1.5G", "120g", "2k", "2kb", "4GiB", " 7 mb ", "0.5", "2.5", "3.5", ".5k", "10Tb",
             "8p", "1024", "0", "1e3", "12 x", "-1", "1.", "g", "", "1,5g", "5 kib", "3ib", "1.5 GB",
             "1MB", "5MB", "300GB", "300gb", "8PB", "1MiB", "1.5TiB", "1m", "3 t", "12b", "1.5e3KB", "1E3kb",
             str(2**63 - 1024), "8191p", "8192p", str(2**63), "1e300PB", "1e999", "0.4", "5 apples",
             "120g   # declared size", "5\u212a", "5\u00a0MB", "5\tGB\n"]
    got = {t: parse(t) for t in texts}
    assert got == {t: declared_size(t) for t in texts}
    assert (got["1MB"], got["1MiB"], got["1m"], got["300GB"]) == (10**6, 2**20, 2**20, 300 * 10**9)


@pytest.mark.spark
def test_a_cached_frame_shown_before_it_is_counted_keeps_its_source_input(spark_app, tmp_path):
    """`df.cache(); df.show()` computes one partition of the cached RDD: the count after it
    reads the other partitions from the file. Taking the RDD as computed by the show left the
    count's whole stage out as a cache read: the run's input was one partition's."""
    logs = tmp_path / "eventlogs"
    logs.mkdir()
    data = tmp_path / "lines.txt"
    data.write_text("\n".join(f"line {i} " + "x" * 40 for i in range(60000)))
    conf = {"spark.eventLog.enabled": "true", "spark.eventLog.dir": str(logs),
            "spark.sql.files.maxPartitionBytes": str(600_000)}
    other = tmp_path / "more.txt"
    other.write_text("\n".join(f"more {i} " + "y" * 40 for i in range(30000)))
    with spark_app(tmp_path / "listener-store", job="shown", conf=conf) as spark:
        df = spark.read.text(str(data)).cache()
        df.show(1)
        assert df.count() == 60000
        assert df.count() == 60000  # from the cache now: not input again
        # one task over every partition (a coalesce) computes the cached frame whole
        more = spark.read.text(str(other)).cache()
        assert more.coalesce(1).count() == 30000
        assert more.count() == 30000  # from the cache
    listened = store.open(tmp_path / "listener-store").runs().iloc[0]
    report = ingest_event_logs([logs], tmp_path / "eventlog-store")
    assert report.files_ingested == 1
    ingested = store.open(tmp_path / "eventlog-store").runs().iloc[0]
    size, more_size = data.stat().st_size, other.stat().st_size
    assert listened.input_bytes == ingested.input_bytes
    # the first file once, plus the one partition the show read (and the count then read from
    # the cache); the second once
    assert size + more_size <= listened.input_bytes <= 1.5 * size + 1.1 * more_size
