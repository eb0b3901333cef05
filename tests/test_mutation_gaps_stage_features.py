"""Behaviours of the stage features (features/stages.py) and the monitor's interference features
(features/interference.py) that a mutation audit found no test pinning: each test here failed on
a mutant of the module that the rest of the suite let pass. Known inputs, values worked out by
hand; no JVM."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from sparkpredict.features import interference as itf
from sparkpredict.features import stages as F

MiB = 2**20


# ---- stages.py: task counts at another size --------------------------------------------------
def test_files_for_is_the_middle_of_the_fewest_files_that_give_the_count_else_the_nearest_count():
    # the docstring's case: 10 tasks of 59 MiB on 2 cores come from 280 to 310 files of 4 MiB
    # open cost; Spark ran 300
    assert F._files_for("sql", 10, 59 * MiB, 2.0, 128 * MiB, 4 * MiB, 0.0) == 295.0
    # 59 MiB on 2 cores is never one SQL task (the split is half the bytes): the nearest count,
    # 2 tasks, comes first from one file
    assert F._files_for("sql", 1, 59 * MiB, 2.0, 128 * MiB, 4 * MiB, 0.0) == 1.0
    # 100 MiB by Hadoop (2 min partitions, 32 MiB blocks): 1 file is 4 splits, 2 files 4, 3 files
    # of 33 MiB 3 (a file under 1.1 splits is one): no file count gives 1 or 2 tasks, 3 files
    # give the nearest
    assert [int(F.hadoop_split_tasks(f, 100 * MiB, 2.0, 32 * MiB)) for f in (1, 2, 3)] == [4, 4, 3]
    assert F._files_for("hadoop", 1, 100 * MiB, 2.0, 32 * MiB) == 3.0
    assert F._files_for("hadoop", 2, 100 * MiB, 2.0, 32 * MiB) == 3.0


def test_a_skewed_shuffle_of_no_bytes_is_one_task_and_its_defaults_are_sparks():
    assert F.skewed_coalesced_tasks(0, 200, 2, 0.3) == 1
    # without the sizes given: Spark's 64 MiB advisory and 1 MiB minimum
    for mib in np.linspace(100, 10_000, 60):
        assert F.skewed_coalesced_tasks(mib * MiB, 200, 2, 0.0) == F.coalesced_tasks(mib * MiB, 200, 2, 64 * MiB, MiB)
    # 6157 MiB in 200 partitions of 32.3 MiB as the map statuses read them: one a task at 64 MiB
    assert F.skewed_coalesced_tasks(6157 * MiB, 200, 2, 0.0) == 200


def test_no_partitions_recorded_is_one_partition():
    assert F.coalesced_tasks(10 * MiB, 0, 2) == 1
    assert F.skewed_coalesced_tasks(10 * MiB, 0, 2, 0.5) == 1


def test_a_file_larger_than_the_split_leaves_its_rest_to_pack_with_the_others():
    # 4 files of 130 MiB at 128 MiB splits: 4 splits of 128 MiB, one partition each, and 4 of the
    # 2 MiB left over, which fit one partition together (FilePartition.getFilePartitions)
    assert F.file_scan_tasks(4, 520 * MiB, 2, 128 * MiB) == 5
    assert F.file_scan_tasks(np.array([1, 4]), 520 * MiB, 2, 128 * MiB).tolist() == [5, 5]


def _spark_file_partitions(files: int, bytes_in: int, parallelism: int, max_partition_bytes: int,
                           open_cost: int = 4 * MiB, max_partitions: int | None = None) -> int:
    """Spark's FilePartition.maxSplitBytes and getFilePartitions, written out for files of equal
    size: each file cut into splits of at most the split size, the splits sorted largest first
    and packed next-fit (a partition closed when the next split would take it past the split
    size, each split counting its open cost); packed again at the total over maxPartitionNum
    when there are more partitions than that."""
    sizes = [bytes_in // files] * files
    split = min(max_partition_bytes, max(open_cost, sum(s + open_cost for s in sizes) // parallelism))
    chunks = sorted((min(split, s - off) for s in sizes for off in range(0, s, split)), reverse=True)

    def pack(target: int) -> int:
        n, cur = 0, 0
        for c in chunks:
            if cur > 0 and cur + c > target:
                n, cur = n + 1, 0
            cur += c + open_cost
        return n + (cur > 0)

    n = pack(split)
    if max_partitions and n > max_partitions:
        n = pack(math.ceil(sum(c + open_cost for c in chunks) / max_partitions))
    return n


@pytest.mark.parametrize("max_partitions", [None, 2, 5, 40])
def test_file_scan_tasks_are_sparks_packing_of_the_files_splits(max_partitions):
    # files below, at and above the split size, few and many, with and without maxPartitionNum
    for files in (1, 2, 3, 4, 5, 7, 10, 30, 100):
        for mib in (1, 10, 59, 520, 650, 2000, 9000):
            for parallelism in (2, 8, 64):
                for mpb in (16 * MiB, 128 * MiB):
                    b = files * (mib * MiB // files)
                    want = _spark_file_partitions(files, b, parallelism, mpb, max_partitions=max_partitions)
                    got = F.file_scan_tasks(files, b, parallelism, mpb, 4 * MiB,
                                            float(max_partitions) if max_partitions else math.nan)
                    assert got == want, (files, mib, parallelism, mpb)


@pytest.mark.parametrize(("files", "bytes_in", "parallelism", "max_partitions", "want"), [
    # 7 small files packed again into 3: no split of a larger file comes before them
    (7, 7 * (MiB // 7), 8, 3, 3),
    # 100 MiB in 16 MiB splits packed again at 2: the last split fills the first partition exactly
    (1, 100 * MiB, 2, 2, 2)])
def test_packing_again_at_max_partition_num_fills_partitions_as_spark_does(files, bytes_in, parallelism,
                                                                         max_partitions, want):
    assert _spark_file_partitions(files, bytes_in, parallelism, 16 * MiB, max_partitions=max_partitions) == want
    assert F.file_scan_tasks(files, bytes_in, parallelism, 16 * MiB, 4 * MiB, float(max_partitions)) == want


def test_files_of_exactly_the_split_size_are_one_split_each():
    for files in (1, 2, 5):
        want = _spark_file_partitions(files, files * 128 * MiB, 1, 128 * MiB)
        assert F.file_scan_tasks(files, files * 128 * MiB, 1, 128 * MiB) == want == files


def test_a_scan_of_no_files_or_no_bytes_is_one_task():
    assert F.file_scan_tasks(1, 0, 2, 128 * MiB) == 1
    # no files recorded: one file (10 MiB on 2 cores: splits of 7 MiB with the open cost)
    assert F.file_scan_tasks(0, 10 * MiB, 2, 128 * MiB) == F.file_scan_tasks(1, 10 * MiB, 2, 128 * MiB) == 2


def test_files_with_no_open_cost_fill_the_split_exactly():
    # 4 files of 32 MiB at 64 MiB splits: two to a partition with no open cost, one with a byte
    assert F.file_scan_tasks(4, 128 * MiB, 1, 64 * MiB, 0) == _spark_file_partitions(4, 128 * MiB, 1, 64 * MiB, 0) == 2
    assert F.file_scan_tasks(4, 128 * MiB, 1, 64 * MiB, 1) == 4


def test_waves_are_the_tasks_over_at_least_one_slot_rounded_up():
    assert F.waves(np.array([0, 5, 8, 9]), 4).tolist() == [0, 2, 2, 3]
    assert F.waves(5, 0) == 5.0 and F.waves(5, 2) == 3.0


def test_files_growth_needs_two_input_sizes_with_recorded_files():
    ref = {"bytes_in": 2e9, "scan_files": 40}
    # a history without recorded files: one point, no growth
    assert F._files_growth(pd.DataFrame({"bytes_in": [1e9]}), ref) is None
    assert F._files_growth(None, ref) is None
    # two runs of the same size: no slope
    assert F._files_growth(pd.DataFrame({"bytes_in": [2e9], "scan_files": [50]}), ref) is None
    # no point at all
    assert F._files_growth(pd.DataFrame({"bytes_in": [1e9], "scan_files": [0]}), {"bytes_in": 2e9}) is None
    # files that doubled with the bytes: k = 1
    assert F._files_growth(pd.DataFrame({"bytes_in": [1e9], "scan_files": [20]}), ref) == pytest.approx(1.0)


def test_query_slots_take_at_least_one_cpu_a_task():
    assert F.query_slots(2, 4, 0) == 8
    assert F.query_slots(2, 4, float("nan")) == 8
    assert F.query_slots(2, 4, 3) == 2


def test_dynamic_allocation_with_no_mean_keeps_the_most_executors():
    import json

    run = {"executors_max": 4, "executor_cores": 2, "executors_mean": 0.0,
           "properties_json": json.dumps({"spark.dynamicAllocation.enabled": "true", "spark.executor.cores": "2"})}
    c = F.config_features(run)
    assert (c["executors"], c["task_slots"]) == (4, 8)
    c = F.config_features(dict(run, executors_mean=2.5))
    assert (c["executors"], c["task_slots"]) == (2.5, 5)


def test_stage_table_targets_and_data_features_from_known_stage_sums():
    """No task rows: a stage's mean task time is its summed run, deserialize and serialization
    time over its task rows (its task count where the rows are unknown or 0)."""
    import json

    runs = pd.DataFrame([{"run_id": "r1", "job": "j", "input_bytes": 256 * MiB, "executors_max": 2,
                          "executor_cores": 2, "task_slots": 4,
                          "properties_json": json.dumps({"spark.sql.shuffle.partitions": "16"})}])
    base = {"run_id": "r1", "stage_attempt_id": 0, "status": "succeeded", "parent_stage_ids_json": "[]",
            "input_records": 0, "shuffle_read_records": 0, "output_bytes": 0, "shuffle_write_bytes": 0,
            "executor_deserialize_time_ms": 0, "result_serialization_time_ms": 0}
    stages = pd.DataFrame([
        dict(base, stage_id=0, name="scan at q.py:1", num_tasks=8, input_bytes=256 * MiB, input_records=1000,
             shuffle_read_bytes=0, shuffle_write_bytes=64 * MiB, executor_run_time_ms=1000,
             executor_deserialize_time_ms=200, result_serialization_time_ms=100, num_task_rows=4,
             submission_ms=0, completion_ms=500, duration_ms=500),
        dict(base, stage_id=1, name="agg at q.py:2", num_tasks=16, input_bytes=0, shuffle_read_bytes=64 * MiB,
             shuffle_read_records=500, output_bytes=10 * MiB, executor_run_time_ms=800, num_task_rows=np.nan,
             submission_ms=100, completion_ms=900, duration_ms=np.nan, parent_stage_ids_json="[0]"),
        # as many bytes read from the input as from a shuffle: an input stage
        dict(base, stage_id=2, name="join at q.py:3", num_tasks=3, input_bytes=MiB, shuffle_read_bytes=MiB,
             executor_run_time_ms=300, num_task_rows=0, submission_ms=1000, completion_ms=1200,
             duration_ms=200),
        # a stage that failed and was never retried: no stage of the table
        dict(base, stage_id=3, name="save at q.py:4", num_tasks=2, input_bytes=0, shuffle_read_bytes=MiB,
             executor_run_time_ms=50, num_task_rows=2, submission_ms=1300, completion_ms=1400, duration_ms=100,
             status="failed")])
    t = F.stage_table(runs, stages).set_index("stage_id")
    assert t.index.tolist() == [0, 1, 2]
    assert t["task_ms"].tolist() == pytest.approx([1300 / 4, 800 / 16, 300 / 3])
    assert t["stage_ms"].tolist() == pytest.approx([500, 800, 200])
    assert t["is_input_stage"].tolist() == [1.0, 0.0, 1.0]
    assert t["bytes_in"].tolist() == [256 * MiB, 64 * MiB, 2 * MiB]
    assert t["bytes_out"].tolist() == [64 * MiB, 10 * MiB, 0]
    assert t["records_in"].tolist() == [1000, 500, 0]
    assert t["bytes_in_per_task"].tolist() == pytest.approx([32 * MiB, 4 * MiB, 2 * MiB / 3])
    assert t["bytes_out_per_task"].tolist() == pytest.approx([8 * MiB, 10 * MiB / 16, 0])
    assert t["records_in_per_task"].tolist() == pytest.approx([125, 500 / 16, 0])
    assert t["waves"].tolist() == [2, 4, 1]  # 4 task slots


# ---- interference.py: the monitor's features ---------------------------------------------------
_COUNTERS = ["cpu_user_ms", "cpu_nice_ms", "cpu_system_ms", "cpu_idle_ms", "cpu_iowait_ms", "cpu_irq_ms",
             "cpu_softirq_ms", "cpu_steal_ms", "psi_cpu_some_us", "psi_io_some_us", "psi_memory_some_us",
             "disk_read_bytes", "disk_write_bytes", "net_rx_bytes", "net_tx_bytes", "context_switches",
             "major_page_faults"]


def _samples(executor: str, host: str, t0: float, n: int, every_ms: float, per_s: dict,
             mem_gib: float = 6.0, procs: float = 3.0) -> pd.DataFrame:
    """Cumulative counters of one executor growing at ``per_s`` (per second), from offsets."""
    t = t0 + every_ms * np.arange(n)
    rows = {"run_id": "r", "executor_id": executor, "host": host, "time_ms": t, "cpu_count": 2,
            "procs_running": procs, "mem_available_bytes": mem_gib * 2**30}
    for i, c in enumerate(_COUNTERS):
        rows[c] = 1e9 + 7 * i + per_s.get(c, 0.0) * (t - t0) / 1000.0
    return pd.DataFrame(rows)


def test_every_host_rate_is_recovered_from_known_counter_slopes():
    # 2000 CPU-ms a second: user 500 + nice 100, system 200, irq 40 + softirq 60, iowait 100,
    # steal 100, idle 900; every other counter at a slope of its own
    rates = {"cpu_user_ms": 500, "cpu_nice_ms": 100, "cpu_system_ms": 200, "cpu_irq_ms": 40,
             "cpu_softirq_ms": 60, "cpu_iowait_ms": 100, "cpu_steal_ms": 100, "cpu_idle_ms": 900,
             "psi_cpu_some_us": 200_000, "psi_io_some_us": 30_000, "psi_memory_some_us": 100_000,
             "disk_read_bytes": MiB, "disk_write_bytes": 3 * MiB, "net_rx_bytes": MiB, "net_tx_bytes": 2 * MiB,
             "context_switches": 2500, "major_page_faults": 7}
    s = _samples("0", "h1", 0, 41, 250, rates, mem_gib=5.0, procs=4.0)
    stages = pd.DataFrame({"run_id": ["r"], "stage_id": [0], "submission_ms": [1_000.0],
                           "completion_ms": [9_000.0]})
    tasks = pd.DataFrame({"run_id": ["r"], "stage_id": [0], "executor_id": ["0"]})
    f = itf.host_features(stages, tasks, s).iloc[0]
    assert f[list(itf.HOST_FEATURES)].to_dict() == pytest.approx({
        "host_user_share": 0.30, "host_system_share": 0.10, "host_softirq_share": 0.05,
        "host_iowait_share": 0.05, "host_steal_share": 0.05, "host_psi_cpu": 0.2, "host_psi_io": 0.03,
        "host_psi_memory": 0.1, "host_disk_mib_s": 4.0, "host_net_mib_s": 3.0, "host_ctxt_k_s": 2.5,
        "host_major_faults_s": 7.0, "host_procs_running": 4.0, "host_mem_available_gib": 5.0})


def _task(i: int, executor: str = "0", status: str = "SUCCESS", **kw) -> dict:
    row = {"run_id": "r", "stage_id": 0, "stage_attempt_id": 0, "task_id": i, "task_index": i, "attempt": 0,
           "executor_id": executor, "host": "h", "status": status, "getting_result_ms": 0,
           "executor_run_time_ms": 1000, "executor_cpu_time_ms": 500.0, "jvm_gc_time_ms": 100,
           "shuffle_fetch_wait_ms": 100, "shuffle_write_time_ms": 50.0, "executor_deserialize_time_ms": 20,
           "result_serialization_time_ms": 10, "duration_ms": 1100, "input_bytes": MiB,
           "shuffle_read_bytes": 0, "shuffle_write_bytes": MiB, "output_bytes": 0,
           "memory_spilled_bytes": 0, "disk_spilled_bytes": 0}
    row.update(kw)
    row["finish_ms"] = 10_000 + 1000 * i
    row["launch_ms"] = row["finish_ms"] - row["duration_ms"]
    return row


def test_stage_features_split_the_run_time_into_components_from_known_task_metrics():
    tasks = pd.DataFrame([
        _task(0, memory_spilled_bytes=MiB, shuffle_read_bytes=2 * MiB, getting_result_ms=np.nan),
        _task(1, duration_ms=1300, disk_spilled_bytes=MiB, getting_result_ms=30, output_bytes=MiB),
        # a failed try: no partition's work, whatever its metrics
        _task(2, executor="1", status="FAILED", executor_run_time_ms=9000, executor_cpu_time_ms=9000.0,
              duration_ms=9000, jvm_gc_time_ms=5000)])
    stages = pd.DataFrame([{"run_id": "r", "stage_id": 0, "stage_attempt_id": 0, "name": "count at x.py:1",
                            "num_tasks": 2, "submission_ms": 8_000, "completion_ms": 12_000,
                            "duration_ms": 4_000, "status": "succeeded"}])
    f = itf.stage_features(stages, tasks).iloc[0]
    # per task: 1000 ms run = 500 CPU + 100 GC + 100 fetch wait + 50 write + 250 waiting
    assert {c: f[c] for c in ("run_ms", "cpu_ms", "gc_ms", "fetch_ms", "write_ms", "wait_ms")} == pytest.approx(
        {"run_ms": 1000, "cpu_ms": 500, "gc_ms": 100, "fetch_ms": 100, "write_ms": 50, "wait_ms": 250})
    assert f["cpu_ratio"] == pytest.approx(1000 / (2000 - 200 - 100))
    assert (f["gc_ratio"], f["fetch_ratio"], f["write_ratio"]) == pytest.approx((0.1, 0.1, 0.05))
    # scheduler delay: duration - run - deserialize - serialization - getting the result (none known: 0)
    assert f["sched_ms"] == pytest.approx(((1100 - 1030) + (1300 - 1030 - 30)) / 2)
    assert f["deser_ms"] == pytest.approx(20)
    assert f["skew"] == pytest.approx(1300 / 1200)
    # 1000 CPU ms over 2 MiB input + 2 MiB shuffle read + 2 MiB shuffle written + 1 MiB output (+ 1)
    assert f["cpu_ms_per_mib"] == pytest.approx(math.log1p(1000 / 8))
    # 2 MiB spilled over 2 MiB input and 2 MiB shuffle read
    assert f["spill_per_input"] == pytest.approx(0.5)
    assert f["num_tasks"] == 2 and f["duration_ms"] == 4000
    assert np.isnan(f[list(itf.HOST_FEATURES)].astype(float)).all()  # no host samples
    # the windowed statistics of the other ratios: one 20 s window holds both tasks
    assert f["w20_fetch_ratio_mean"] == pytest.approx(0.1)
    assert f["w20_write_ratio_max"] == pytest.approx(0.05)
    assert f["w20_sched_ms_range"] == pytest.approx(170)
    assert f["w20_gc_ratio_mean"] == pytest.approx(0.1)
    # a task's CPU share of the time it was not blocked on shuffle I/O
    assert f["w20_cpu_ratio_mean"] == pytest.approx(500 / 850)


def test_stage_features_clip_waits_and_ratios_past_the_run_time():
    # CPU over the run time (multi-threaded tasks) and shuffle writes longer than the run
    tasks = pd.DataFrame([_task(0, executor_cpu_time_ms=3000.0, shuffle_write_time_ms=2000.0,
                                shuffle_fetch_wait_ms=0, jvm_gc_time_ms=100),
                          # all of its run time writing: no CPU over (at least) 1 ms, not 0 / 0
                          _task(1, executor_cpu_time_ms=0.0, shuffle_write_time_ms=1000.0,
                                shuffle_fetch_wait_ms=0, jvm_gc_time_ms=np.nan)])
    stages = pd.DataFrame([{"run_id": "r", "stage_id": 0, "stage_attempt_id": 0, "name": "count at x.py:1",
                            "num_tasks": 2, "submission_ms": 8_000, "completion_ms": 12_000,
                            "duration_ms": 4_000, "status": "succeeded"}])
    f = itf.stage_features(stages, tasks).iloc[0]
    assert f["wait_ms"] == 0.0
    assert f["cpu_ratio"] == pytest.approx(1.5) and f["write_ratio"] == pytest.approx(1.5)
    assert f["w3_cpu_ratio_max"] == pytest.approx(1.5) and f["w3_write_ratio_max"] == pytest.approx(1.5)
    assert f["w3_cpu_ratio_min"] == 0.0 and f["w3_cpu_ratio_mean"] == pytest.approx(0.75)
    # a metric the log lacks is 0 (event logs may), not left out of the window's mean
    assert f["w3_gc_ratio_mean"] == pytest.approx(0.05) and f["gc_ms"] == pytest.approx(50)


def test_stage_features_take_host_counters_from_the_hosts_of_every_try():
    # the failed try ran on executor 1 (host h2), the successes on executor 0 (host h1)
    tasks = pd.DataFrame([_task(0), _task(1), _task(2, executor="1", status="FAILED")])
    stages = pd.DataFrame([{"run_id": "r", "stage_id": 0, "stage_attempt_id": 0, "name": "count at x.py:1",
                            "num_tasks": 2, "submission_ms": 8_000, "completion_ms": 12_000,
                            "duration_ms": 4_000, "status": "succeeded"}])
    s = pd.concat([_samples("0", "h1", 0, 81, 250, {"cpu_user_ms": 1600, "cpu_idle_ms": 400}),
                   _samples("1", "h2", 0, 81, 250, {"cpu_user_ms": 400, "cpu_idle_ms": 1600})])
    f = itf.stage_features(stages, tasks, s).iloc[0]
    assert f["host_user_share"] == pytest.approx(0.5)  # (0.8 + 0.2) / 2


def test_a_stage_finished_by_a_partial_rerun_takes_the_failed_attempts_succeeded_tasks():
    # attempt 0 finished 5 of 8 partitions before a fetch failure, attempt 1 the other 3
    first = [dict(_task(i), stage_attempt_id=0) for i in range(5)]
    rerun = [dict(_task(10 + i, executor_run_time_ms=2000, executor_cpu_time_ms=1500.0, duration_ms=2100),
                  stage_attempt_id=1) for i in range(3)]
    for r in rerun:
        r["launch_ms"] = r["finish_ms"] - r["duration_ms"]
    stages = pd.DataFrame([
        {"run_id": "r", "stage_id": 0, "stage_attempt_id": 0, "name": "reduce at x.py:2", "num_tasks": 8,
         "submission_ms": 8_000, "completion_ms": 15_000, "duration_ms": 7_000, "status": "failed"},
        {"run_id": "r", "stage_id": 0, "stage_attempt_id": 1, "name": "reduce at x.py:2", "num_tasks": 3,
         "submission_ms": 16_000, "completion_ms": 23_000, "duration_ms": 7_000, "status": "succeeded"}])
    f = itf.stage_features(stages, pd.DataFrame(first + rerun)).iloc[0]
    assert f["num_tasks"] == 8 and f["duration_ms"] == 14_000
    assert f["run_ms"] == pytest.approx((5 * 1000 + 3 * 2000) / 8)
    assert f["cpu_ms"] == pytest.approx((5 * 500 + 3 * 1500) / 8)


def test_host_samples_covering_half_a_stage_window_give_it_features():
    s = _samples("0", "h1", 0, 5, 1000, {"cpu_user_ms": 1000, "cpu_idle_ms": 1000})  # 0 to 4 s
    stages = pd.DataFrame({"run_id": ["r", "r"], "stage_id": [0, 1], "submission_ms": [2000.0, 2000.0],
                           "completion_ms": [6000.0, 6001.0]})
    tasks = pd.DataFrame({"run_id": ["r", "r"], "stage_id": [0, 1], "executor_id": ["0", "0"]})
    f = itf.host_features(stages, tasks, s)
    assert f["stage_id"].tolist() == [0]  # 2 of 4 s; 2 of 4.001 s is under half
    assert f["host_user_share"].tolist() == pytest.approx([0.5])
    assert itf.host_features(stages, tasks, None).empty


def test_host_features_need_moving_cpu_counters_two_samples_and_a_whole_window():
    tasks = pd.DataFrame({"run_id": ["r"] * 3, "stage_id": [0, 1, 2], "executor_id": ["0"] * 3})
    stages = pd.DataFrame({"run_id": ["r"] * 3, "stage_id": [0, 1, 2], "submission_ms": [0.0, 0.0, 0.0],
                           "completion_ms": [1000.0, np.nan, 1000.0]})
    # two samples a second apart are enough for a rate; a stage without an end gets none
    two = _samples("0", "h1", 0, 2, 1000, {"cpu_user_ms": 1500, "cpu_idle_ms": 500})
    f = itf.host_features(stages, tasks, two)
    assert f["stage_id"].tolist() == [0, 2] and f["host_user_share"].tolist() == pytest.approx([0.75, 0.75])
    assert itf.host_features(stages, tasks, two.iloc[:1]).empty  # one sample: no rate
    # CPU counters that never moved (no /proc/stat): no shares to give, no features
    assert itf.host_features(stages, tasks, _samples("0", "h1", 0, 5, 500, {"disk_read_bytes": MiB})).empty


def test_stage_weights_are_the_expected_time_else_the_actual_and_at_least_a_millisecond():
    rows = pd.DataFrame({"expected_ms": [1000.0, np.nan, 0.0], "duration_ms": [10.0, 500.0, 0.0]})
    assert itf.stage_weights(rows).tolist() == [1000.0, 500.0, 1.0]
    assert itf.stage_weights(rows.drop(columns="expected_ms")).tolist() == [10.0, 500.0, 1.0]
