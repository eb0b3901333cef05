"""Values of the JVM listener's rows that no other test pinned (a second mutation pass of its Java).

A map stage that reads a text file loses, with an executor, outputs its first attempt had
written: its attempt 1 reads those partitions of the file again. The run's input counts each
partition once, by its first successful task (StageTracker.countOnce), as the event-log ingest
does; no other test lost an executor under a stage that read a data source, so counting the
rerun partitions twice went unseen. A stage of more than 16 partitions that read
input comes first: a stage keeps its tasks' reads in arrays it grows past 16 (StageTracker.Agg),
and no other test's stage read that many. And a run recorded without a job key is filed
under its application's name.
"""
from __future__ import annotations

import pytest
from executor_kill import kill_executor_once, wait_for_executors

from sparkpredict import store
from sparkpredict.capture.eventlog_ingest import ingest_event_logs

pytestmark = pytest.mark.spark


@pytest.mark.cluster
def test_a_map_stage_rerun_for_lost_outputs_counts_its_file_s_partitions_once(spark_app, tmp_path):
    logs = tmp_path / "eventlogs"
    logs.mkdir()
    data = tmp_path / "rows.txt"
    data.write_text("\n".join(f"row {i:05d} of the input" for i in range(8000)))
    conf = {"spark.executor.memory": "512m", "spark.task.maxFailures": "4",
            "spark.eventLog.enabled": "true", "spark.eventLog.dir": str(logs)}
    with spark_app(tmp_path / "listener", job="inputrerun", master="local-cluster[2,1,1024]", conf=conf) as spark:
        wait_for_executors(spark.sparkContext, 2)
        assert spark.sparkContext.textFile(str(data), 20).count() == 8000
        counts = spark.sparkContext.textFile(str(data), 8).map(lambda line: (int(line.split()[1]) % 8, 1)) \
            .reduceByKey(lambda a, b: a + b, 8) \
            .mapPartitionsWithIndex(kill_executor_once(str(tmp_path / "killed"), index=5)).collect()
        assert dict(counts) == {k: 1000 for k in range(8)}
    assert ingest_event_logs([logs], tmp_path / "ingested").files_ingested == 1
    listener, ingested = store.open(tmp_path / "listener"), store.open(tmp_path / "ingested")
    stages = listener.stages().set_index(["stage_id", "stage_attempt_id"])
    many = stages.loc[(0, 0)]
    assert many.num_tasks == many.num_task_rows > 16 and many.input_bytes > 0
    # the case: the map stage ran again for the lost outputs, and read the file again
    assert (1, 1) in stages.index and stages.loc[(1, 1), "input_bytes"] > 0
    whole = stages.loc[(1, 0), "input_bytes"]
    assert stages.loc[(1, 0), "num_tasks"] >= 8 and whole > 0
    (run,) = listener.runs().itertuples()
    (theirs,) = ingested.runs().itertuples()
    assert (run.status, run.error_message) == (theirs.status, theirs.error_message) == ("succeeded", None)
    assert run.input_bytes_source == "measured"
    # each stage's partitions once: the file read whole by either stage
    assert run.input_bytes == theirs.input_bytes == many.input_bytes + whole


def test_a_run_recorded_without_a_job_key_is_filed_under_its_application_s_name(spark_app, tmp_path):
    # The empty setting stands for none here: this test JVM's first session set a job key, and
    # spark-submit made it a system property that every later SparkConf inherits.
    with spark_app(tmp_path / "store", job=None, app_name="nameless-app",
                   conf={"spark.sparkpredict.job": ""}) as spark:
        assert spark.range(10).count() == 10
    (run,) = store.open(tmp_path / "store").runs().itertuples()
    assert (run.job, run.app_name, run.status) == ("nameless-app", "nameless-app", "succeeded")
