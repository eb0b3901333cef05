"""Behaviours of the slowdown monitor's stage features (features/interference.py) that its first
mutation audit found no test pinning: each test here failed on a one-operator change of the
module that the rest of the suite let pass. Hand-built stage and task frames, values worked out
by hand (docs/monitor.md, "Features per stage"); no JVM, no timings."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_mutation_gaps_stage_features import _task

from sparkpredict.features import interference as itf

MiB = 2**20


def _stage(num_tasks: int = 2) -> pd.DataFrame:
    return pd.DataFrame([{"run_id": "r", "stage_id": 0, "stage_attempt_id": 0, "name": "count at x.py:1",
                          "num_tasks": num_tasks, "submission_ms": 8_000, "completion_ms": 12_000,
                          "duration_ms": 4_000, "status": "succeeded"}])


def test_scheduler_delay_is_never_negative_and_is_zero_when_the_parts_fill_the_duration():
    # task 0: duration = run 1000 + deserialize 20 + serialize 10 + getting the result 70: no delay;
    # task 1: its parts exceed its duration (clocks of driver and executor differ): 0, not negative
    tasks = pd.DataFrame([_task(0, getting_result_ms=70), _task(1, duration_ms=900)])
    f = itf.stage_features(_stage(), tasks).iloc[0]
    assert f["sched_ms"] == 0.0
    assert f["w20_sched_ms_max"] == 0.0 and f["w20_sched_ms_mean"] == 0.0


def test_a_task_without_a_launch_time_is_windowed_from_the_stages_first_known_launch():
    # launches at 9.5 s and 10.9 s, the middle task's unknown: the windows start at 9.5 s, so one
    # 3 s window holds all three (finished 0.5, 1.5 and 2.5 s in), not the windows from 0
    tasks = pd.DataFrame([_task(0), _task(1), _task(2, jvm_gc_time_ms=300)])
    tasks["launch_ms"] = [9_500.0, np.nan, 10_900.0]
    f = itf.stage_features(_stage(3), tasks).iloc[0]
    assert f["w3_gc_ratio_mean"] == pytest.approx(0.5 / 3)
    assert f["w3_gc_ratio_range"] == pytest.approx(0.2)


def test_a_stage_without_any_launch_time_is_windowed_from_its_first_finish():
    # every launch unknown: the windows start at the first finish (10 s), so one 3 s window
    # holds all three tasks (0, 1 and 2 s in); it had raised IntCastingNaNError
    tasks = pd.DataFrame([_task(0), _task(1), _task(2, jvm_gc_time_ms=300)])
    tasks["launch_ms"] = np.nan
    f = itf.stage_features(_stage(3), tasks).iloc[0]
    assert f["w3_gc_ratio_mean"] == pytest.approx(0.5 / 3)
    assert f["w3_gc_ratio_range"] == pytest.approx(0.2)


def test_a_stage_with_no_recorded_run_time_reads_its_ratios_over_one_millisecond():
    # event logs of tasks too short to time: 0 ms run, yet 5 ms of GC and 3 of fetch wait
    zero = {"executor_run_time_ms": 0, "executor_cpu_time_ms": 0.0, "jvm_gc_time_ms": 5,
            "shuffle_fetch_wait_ms": 3, "shuffle_write_time_ms": 0.0}
    f = itf.stage_features(_stage(), pd.DataFrame([_task(0, **zero), _task(1, **zero)])).iloc[0]
    assert (f["gc_ratio"], f["fetch_ratio"]) == pytest.approx((10.0, 6.0))
    assert (f["w3_gc_ratio_mean"], f["w3_fetch_ratio_mean"]) == pytest.approx((5.0, 3.0))
    assert f["wait_ms"] == 0.0 and f["cpu_ratio"] == 0.0


def test_the_stage_write_share_is_clipped_at_one_and_a_half_run_times():
    # 2000 + 1500 ms of shuffle writes over 2000 ms of run: 1.75, read as 1.5
    tasks = pd.DataFrame([_task(0, shuffle_write_time_ms=2000.0), _task(1, shuffle_write_time_ms=1500.0)])
    f = itf.stage_features(_stage(), tasks).iloc[0]
    assert f["write_ratio"] == pytest.approx(1.5)
    assert f["write_ms"] == pytest.approx(1750.0)


_COUNTERS = ["cpu_user_ms", "cpu_nice_ms", "cpu_system_ms", "cpu_idle_ms", "cpu_iowait_ms", "cpu_irq_ms",
             "cpu_softirq_ms", "cpu_steal_ms", "psi_cpu_some_us", "psi_io_some_us", "psi_memory_some_us",
             "disk_read_bytes", "disk_write_bytes", "net_rx_bytes", "net_tx_bytes", "context_switches",
             "major_page_faults"]


def _samples(t: list[float], per_s: dict, executor: str = "0", host: str = "h1") -> pd.DataFrame:
    """Cumulative counters of one executor sampled at ``t`` (ms), growing at ``per_s`` a second."""
    tm = np.asarray(t, float)
    rows = {"run_id": "r", "executor_id": executor, "host": host, "time_ms": tm, "cpu_count": 2,
            "procs_running": 3.0, "mem_available_bytes": 6.0 * 2**30}
    for i, c in enumerate(_COUNTERS):
        rows[c] = 1e9 + 7 * i + per_s.get(c, 0.0) * tm / 1000.0
    return pd.DataFrame(rows)


def test_a_millisecond_of_cpu_counters_or_of_window_is_enough_for_host_shares():
    tasks = pd.DataFrame({"run_id": ["r", "r"], "stage_id": [0, 1], "executor_id": ["0", "0"]})
    # stage 0: 2 s in which the CPU counters moved 1 ms in all (user 0.25 ms + idle 0.25 ms a s);
    # stage 1: a window of 1 ms
    stages = pd.DataFrame({"run_id": ["r", "r"], "stage_id": [0, 1], "submission_ms": [1_000.0, 2_000.0],
                           "completion_ms": [3_000.0, 2_001.0]})
    slow = _samples([0, 1000, 2000, 3000, 4000], {"cpu_user_ms": 0.25, "cpu_idle_ms": 0.25})
    f = itf.host_features(stages.iloc[:1], tasks, slow)
    assert f["host_user_share"].tolist() == pytest.approx([0.5])
    busy = _samples([0, 1000, 2000, 3000, 4000], {"cpu_user_ms": 1500, "cpu_idle_ms": 500})
    f = itf.host_features(stages.iloc[1:], tasks, busy)
    assert f["stage_id"].tolist() == [1] and f["host_user_share"].tolist() == pytest.approx([0.75])


def test_a_windows_spread_is_the_population_std_and_a_lone_tasks_is_zero():
    # 3 s windows from the first launch (8.9 s): tasks 0 and 1 (GC shares 0.1 and 0.3) share the
    # first, task 5 is alone in the third; the spreads 0.1 and 0 average to 0.05
    tasks = pd.DataFrame([_task(0), _task(1, jvm_gc_time_ms=300), _task(5)])
    f = itf.stage_features(_stage(3), tasks).iloc[0]
    assert f["w3_gc_ratio_std"] == pytest.approx(0.05)
    assert f["w3_gc_ratio_range"] == pytest.approx(0.1)
    assert f["w3_gc_ratio_mean"] == pytest.approx((0.2 + 0.1) / 2)


def test_skew_over_a_median_task_of_no_duration_reads_the_median_as_one_millisecond():
    # durations 0, 0 and 5 ms: the longest over a median of (at least) 1 ms, finite
    tasks = pd.DataFrame([_task(0, duration_ms=0), _task(1, duration_ms=0), _task(2, duration_ms=5)])
    f = itf.stage_features(_stage(3), tasks).iloc[0]
    assert f["skew"] == pytest.approx(5.0)


def test_spills_of_a_stage_that_read_nothing_are_over_one_byte():
    # 2 KiB spilled by tasks with no input and no shuffle read: finite, the bytes themselves
    tasks = pd.DataFrame([_task(i, input_bytes=0, memory_spilled_bytes=1024, disk_spilled_bytes=0)
                          for i in range(2)])
    f = itf.stage_features(_stage(), tasks).iloc[0]
    assert f["spill_per_input"] == pytest.approx(2048.0)


def test_a_task_finishing_exactly_a_window_after_the_first_launch_opens_the_next_window():
    # first launch 8.9 s; task 1 finishes 3 s later, in the second 3 s window: each window holds
    # one task (no spread); in one 5 s window the GC shares 0.1 and 0.3 range over 0.2
    tasks = pd.DataFrame([_task(0), _task(1, jvm_gc_time_ms=300)])
    tasks.loc[1, ["finish_ms", "launch_ms"]] = [11_900, 10_800]
    f = itf.stage_features(_stage(), tasks).iloc[0]
    assert f["w3_gc_ratio_range"] == 0.0 and f["w3_gc_ratio_mean"] == pytest.approx(0.2)
    assert f["w5_gc_ratio_range"] == pytest.approx(0.2)


def test_cpu_share_of_under_a_millisecond_not_blocked_is_over_one_millisecond():
    # 2000 ms of run, 1999.5 of them writing shuffle output, 0.4 ms of CPU: 0.4 over 1 ms
    tasks = pd.DataFrame([_task(i, executor_cpu_time_ms=0.2, shuffle_fetch_wait_ms=0,
                                shuffle_write_time_ms=999.75) for i in range(2)])
    f = itf.stage_features(_stage(), tasks).iloc[0]
    assert f["cpu_ratio"] == pytest.approx(0.4)


def test_host_levels_between_two_samples_are_read_at_the_windows_middle():
    # samples at 0 and 4 s only, none inside the 1-3 s window: the levels interpolated at 2 s
    s = _samples([0, 4000], {"cpu_user_ms": 1000, "cpu_idle_ms": 1000})
    s["procs_running"] = [2.0, 6.0]
    s["mem_available_bytes"] = [8.0 * 2**30, 4.0 * 2**30]
    stages = pd.DataFrame({"run_id": ["r"], "stage_id": [0], "submission_ms": [1_000.0],
                           "completion_ms": [3_000.0]})
    tasks = pd.DataFrame({"run_id": ["r"], "stage_id": [0], "executor_id": ["0"]})
    f = itf.host_features(stages, tasks, s).iloc[0]
    assert (f["host_procs_running"], f["host_mem_available_gib"]) == pytest.approx((4.0, 6.0))
    assert f["host_user_share"] == pytest.approx(0.5)


def test_host_footprint_reads_disk_traffic_and_io_stalls_as_their_rise_over_the_baseline():
    # weights 3:1 by expected time: disk 5 and 9 MiB/s over 1, I/O stalls 0.3 and 0.7 over 0.1
    rows = pd.DataFrame({"expected_ms": [3000.0, 1000.0], "duration_ms": [4000.0, 1500.0],
                         "host_mem_available_gib": [20.0, 20.0], "base_host_mem_available_gib": [20.0, 20.0],
                         "host_net_mib_s": [2.0, 2.0], "base_host_net_mib_s": [2.0, 2.0],
                         "host_disk_mib_s": [5.0, 9.0], "base_host_disk_mib_s": [1.0, 1.0],
                         "host_psi_io": [0.3, 0.7], "base_host_psi_io": [0.1, 0.1]})
    assert itf.host_footprint(rows) == pytest.approx({"memory_held_gib": 0.0, "network_mib_s": 0.0,
                                                      "disk_mib_s": 5.0, "io_stall_share": 0.3})


def test_host_evidence_counts_an_infinite_reading_as_unchanged():
    # a counter read as +inf in the run (or its baseline) is no evidence either way, like NaN
    hf = list(itf.HOST_FEATURES)
    rows = pd.DataFrame([{**{c: 0.2 for c in hf}, **{f"base_{c}": 0.2 for c in hf},
                          "expected_ms": 1000.0, "duration_ms": 1000.0}])
    rows["host_net_mib_s"] = np.inf
    rows["base_host_disk_mib_s"] = np.inf
    z = dict(zip(hf, itf.host_evidence(rows)))
    assert z["host_net_mib_s"] == 0.0 and z["host_disk_mib_s"] == 0.0
    assert z["host_user_share"] == 0.0
