"""A map stage that fails on a fetch after some of its tasks succeeded on the executor lost.

One real ``local-cluster[2,1,1024]`` application of three stages: the middle one, a map stage
that reads the first's shuffle and writes its own, SIGKILLs one executor JVM from its partition
5. Its other tasks' fetches from that executor fail, so its attempt 0 fails; the outputs its
succeeded tasks had written on the lost executor are gone with it, and its attempt 1 runs those
partitions again beside the ones attempt 0 never finished. The stage models (and the monitor,
which reads stages as they do) must count each partition once: before, the stage read 10 task
rows and 5584 bytes of shuffle where it ran 8 partitions over the 4464 bytes its parent wrote.
"""
from __future__ import annotations

import pytest
from executor_kill import kill_executor_once, wait_for_executors

from sparkpredict import store
from sparkpredict.features.interference import stage_features
from sparkpredict.features.stages import stage_table

pytestmark = [pytest.mark.spark, pytest.mark.cluster]


def test_a_lost_executor_s_map_outputs_run_again_count_once(spark_app, tmp_path):
    conf = {"spark.executor.memory": "512m", "spark.task.maxFailures": "4",
            "spark.sparkpredict.inputBytes": "8000000"}
    with spark_app(tmp_path / "store", job="maprerun", master="local-cluster[2,1,1024]", conf=conf) as spark:
        wait_for_executors(spark.sparkContext, 2)
        out = spark.sparkContext.parallelize(range(8000), 8).map(lambda r: (r % 8, 1)) \
            .reduceByKey(lambda a, b: a + b, 8) \
            .mapPartitionsWithIndex(kill_executor_once(str(tmp_path / "killed"), index=5)) \
            .map(lambda kv: (kv[0] % 4, kv[1])).reduceByKey(lambda a, b: a + b, 4).collect()
        assert dict(out) == {k: 2000 for k in range(4)}
    st = store.open(tmp_path / "store")
    stages, tasks, executors = st.stages(), st.tasks(), st.executors()
    att = stages.set_index(["stage_id", "stage_attempt_id"])
    assert att.loc[(1, 0), "status"] == "failed" and att.loc[(1, 0), "num_tasks"] == 8
    assert att.loc[(1, 1), "status"] == "succeeded"
    rerun = int(att.loc[(1, 1), "num_tasks"])
    lost = set(executors.loc[executors.removed_ms.notna(), "executor_id"].astype(str))
    first = tasks[(tasks.stage_id == 1) & (tasks.stage_attempt_id == 0) & (tasks.status == "SUCCESS")]
    # the case: attempt 0's succeeded tasks on the lost executor ran again in attempt 1
    on_lost = first.executor_id.astype(str).isin(lost)
    assert on_lost.any() and len(first) + rerun > 8
    assert len(first[~on_lost]) + rerun == 8
    written = stages[stages.stage_id == 0].sort_values("stage_attempt_id").iloc[0].shuffle_write_bytes
    kept = tasks[(tasks.stage_id == 1) & (tasks.status == "SUCCESS")
                 & ((tasks.stage_attempt_id == 1) | ~tasks.executor_id.astype(str).isin(lost))]
    assert len(kept) == 8 and kept.shuffle_read_bytes.sum() == written

    row = stage_table(st.runs(), stages, tasks).set_index("stage_id").loc[1]
    # before: 10 task rows and 5584 bytes, the lost executor's two partitions counted twice
    assert row.num_tasks == 8 and row.num_task_rows == 8
    assert row.bytes_in == written
    assert row.task_ms == pytest.approx(kept.duration_ms.mean())
    f = stage_features(stages, tasks).set_index("stage_id").loc[1]
    assert f.num_tasks == 8 and f.run_ms == pytest.approx(kept.executor_run_time_ms.mean())
