"""Host counters: the plugin records them from real Spark, and the monitor turns them into rates."""
from __future__ import annotations

import os
import time

import numpy as np
import pandas as pd
import pytest

from sparkpredict.features.interference import HOST_FEATURES, host_features
from sparkpredict.store import io

MODES = ("cpu_user_ms", "cpu_nice_ms", "cpu_system_ms", "cpu_idle_ms", "cpu_iowait_ms", "cpu_irq_ms",
         "cpu_softirq_ms", "cpu_steal_ms")


def _samples(run: str, executor: str, host: str, t0: float, n: int, every_ms: float, per_s: dict,
             mem_gib: float = 6.0) -> pd.DataFrame:
    """Cumulative counters growing at ``per_s`` (per second of wall time) from arbitrary offsets;
    available memory alternates 1 GiB either side of ``mem_gib``."""
    t = t0 + every_ms * np.arange(n)
    rows = {"run_id": run, "executor_id": executor, "host": host, "time_ms": t, "cpu_count": 2,
            "procs_running": 3, "mem_available_bytes": (mem_gib + (-1.0) ** np.arange(n)) * 2**30}
    for i, c in enumerate([*MODES, "psi_cpu_some_us", "psi_io_some_us", "psi_memory_some_us",
                           "disk_read_bytes", "disk_write_bytes", "net_rx_bytes", "net_tx_bytes",
                           "context_switches", "major_page_faults"]):
        rows[c] = 1e9 + 7 * i + per_s.get(c, 0.0) * (t - t0) / 1000.0
    return pd.DataFrame(rows)


def test_rates_are_recovered_from_known_counter_slopes():
    # 2 CPUs: 2000 CPU-ms per second; 600 user, 200 system, 100 softirq, 100 iowait, 1000 idle
    rates = {"cpu_user_ms": 600, "cpu_system_ms": 200, "cpu_softirq_ms": 100, "cpu_iowait_ms": 100,
             "cpu_idle_ms": 1000, "psi_cpu_some_us": 250_000, "psi_io_some_us": 50_000,
             "net_rx_bytes": 3 * 2**20, "net_tx_bytes": 2**20, "disk_write_bytes": 2 * 2**20,
             "context_switches": 5000}
    s = pd.concat([_samples("r", "0", "h1", 1_000, 40, 250, rates),
                   _samples("r", "1", "h1", 1_010, 40, 250, rates)])  # same host: counted once
    stages = pd.DataFrame({"run_id": ["r"], "stage_id": [3], "submission_ms": [2_130.0],
                           "completion_ms": [6_770.0]})
    tasks = pd.DataFrame({"run_id": ["r", "r"], "stage_id": [3, 3], "executor_id": ["0", "1"]})
    f = host_features(stages, tasks, s).iloc[0]
    assert f["host_user_share"] == pytest.approx(0.30)
    assert f["host_system_share"] == pytest.approx(0.10)
    assert f["host_softirq_share"] == pytest.approx(0.05)
    assert f["host_iowait_share"] == pytest.approx(0.05)
    assert f["host_psi_cpu"] == pytest.approx(0.25)
    assert f["host_psi_io"] == pytest.approx(0.05)
    assert f["host_net_mib_s"] == pytest.approx(4.0)
    assert f["host_disk_mib_s"] == pytest.approx(2.0)
    assert f["host_ctxt_k_s"] == pytest.approx(5.0)
    assert f["host_procs_running"] == pytest.approx(3.0)
    assert f["host_mem_available_gib"] == pytest.approx(6.0 - 1 / 19)  # the 19 readings inside, 10 low


def test_hosts_are_averaged_and_the_driver_stands_in_only_for_local_mode():
    busy = {"cpu_user_ms": 1800, "cpu_idle_ms": 200}
    idle = {"cpu_user_ms": 200, "cpu_idle_ms": 1800}
    s = pd.concat([_samples("r", "0", "h1", 0, 20, 500, busy, mem_gib=4.0),
                   _samples("r", "1", "h2", 0, 20, 500, idle, mem_gib=8.0),
                   _samples("r", "driver", "h0", 0, 20, 500, {"cpu_idle_ms": 2000})])
    stages = pd.DataFrame({"run_id": ["r", "r"], "stage_id": [0, 1], "submission_ms": [1000.0, 1000.0],
                           "completion_ms": [5000.0, 5000.0]})
    tasks = pd.DataFrame({"run_id": ["r", "r", "r"], "stage_id": [0, 0, 1], "executor_id": ["0", "1", "driver"]})
    f = host_features(stages, tasks, s).set_index("stage_id")
    assert f.loc[0, "host_user_share"] == pytest.approx(0.5)   # (0.9 + 0.1) / 2, not the driver's host
    assert f.loc[0, "host_mem_available_gib"] == pytest.approx(6.0 + 1 / 9)  # 9 readings inside, 5 high
    assert f.loc[1, "host_user_share"] == pytest.approx(0.0)   # a local-mode stage: the driver's host


def test_windows_the_samples_do_not_cover_give_no_features():
    s = _samples("r", "0", "h1", 0, 5, 1000, {"cpu_idle_ms": 2000})  # 0-4 s
    stages = pd.DataFrame({"run_id": ["r"], "stage_id": [0], "submission_ms": [3000.0], "completion_ms": [9000.0]})
    tasks = pd.DataFrame({"run_id": ["r"], "stage_id": [0], "executor_id": ["0"]})
    assert host_features(stages, tasks, s).empty
    assert list(host_features(stages, tasks, s.iloc[:0]).columns) == ["run_id", "stage_id", *HOST_FEATURES]


def test_host_evidence_is_memory_taken_in_gib_and_ignores_counters_the_host_lacks():
    from sparkpredict.monitor import host_evidence

    hf = list(HOST_FEATURES)
    base = {f"base_{c}": 0.2 for c in hf}
    rows = pd.DataFrame([{**{c: 0.2 for c in hf}, **base, "expected_ms": 1000.0, "duration_ms": 1500.0}] * 2)
    rows["host_user_share"] = [np.expm1(np.log1p(0.2) + 0.3)] * 2       # +0.3 in log1p
    rows["base_host_mem_available_gib"] = 20.0
    rows["host_mem_available_gib"] = [19.0, 18.0]                     # 1 and 2 GiB taken
    rows["expected_ms"] = [3000.0, 1000.0]
    rows[["host_psi_cpu", "base_host_psi_io"]] = np.nan                # a kernel without PSI
    z = dict(zip(hf, host_evidence(rows)))
    assert z["host_user_share"] == pytest.approx(0.3)
    assert z["host_mem_available_gib"] == pytest.approx(1.25)         # weighted 3:1 by expected time
    assert z["host_psi_cpu"] == 0.0 and z["host_psi_io"] == 0.0 and z["host_net_mib_s"] == 0.0
    assert host_evidence(rows.assign(host_user_share=np.nan)) is None


def test_host_footprint_is_the_change_in_units_and_skips_counters_the_host_lacks():
    from sparkpredict.monitor import host_footprint

    rows = pd.DataFrame({"expected_ms": [3000.0, 1000.0], "duration_ms": [4000.0, 1500.0],
                         "host_mem_available_gib": [19.0, 18.0], "base_host_mem_available_gib": [20.0, 20.0],
                         "host_net_mib_s": [12.0, 4.0], "base_host_net_mib_s": [2.0, 2.0],
                         "host_disk_mib_s": [1.0, 1.0], "base_host_disk_mib_s": [1.0, 1.0],
                         "host_psi_io": [np.nan, np.nan], "base_host_psi_io": [0.0, 0.0]})
    f = host_footprint(rows)
    assert f == pytest.approx({"memory_held_gib": 1.25, "network_mib_s": 8.0, "disk_mib_s": 0.0})
    assert host_footprint(rows.drop(columns="base_host_net_mib_s")) is None


@pytest.mark.spark
def test_the_plugin_records_host_counters_of_a_real_run(spark_app, tmp_path):
    store = tmp_path / "store"
    with spark_app(store, job="hosts", conf={"spark.sparkpredict.hostSampleIntervalMs": "100"}) as spark:
        t0 = time.monotonic()
        while time.monotonic() - t0 < 2.0:  # long enough for 20 readings, however fast the machine
            spark.range(0, 3_000_000, numPartitions=4).selectExpr("sum(hash(id, id * 7))").collect()
        app = spark.sparkContext.applicationId
    st = io.open(store)
    run = st.runs().set_index("run_id").loc[app]
    h = st.read("host_samples").sort_values("time_ms")
    assert set(h["run_id"]) == {app} and set(h["executor_id"]) == {"driver"}  # local mode
    assert len(h) >= 10
    assert h["time_ms"].between(run["start_ms"], run["end_ms"] + 1000).all()
    assert (h["cpu_count"] == os.cpu_count()).all()
    for c in [*MODES, "context_switches", "net_rx_bytes", "disk_write_bytes"]:
        assert h[c].notna().all() and (h[c].diff().dropna() >= 0).all(), c  # cumulative counters
    # every CPU of the host is in exactly one mode: the modes add up to wall time x CPUs
    span_ms = h["time_ms"].iloc[-1] - h["time_ms"].iloc[0]
    cpu_ms = sum(h[c].iloc[-1] - h[c].iloc[0] for c in MODES)
    assert cpu_ms == pytest.approx(span_ms * os.cpu_count(), rel=0.1)
    # the job's own CPU time ran on this host, in user mode
    tasks = st.read("tasks")
    user = (h["cpu_user_ms"].iloc[-1] + h["cpu_nice_ms"].iloc[-1]) - (h["cpu_user_ms"].iloc[0] + h["cpu_nice_ms"].iloc[0])
    assert user >= 0.5 * tasks["executor_cpu_time_ms"].sum()


@pytest.mark.spark
def test_a_last_reading_at_application_end_covers_a_short_job(spark_app, tmp_path):
    # one reading a minute: the only ones in this run are the first and the listener's last
    store = tmp_path / "store"
    with spark_app(store, job="short", conf={"spark.sparkpredict.hostSampleIntervalMs": "60000"}) as spark:
        spark.range(0, 100_000, numPartitions=2).selectExpr("sum(id)").collect()
        app = spark.sparkContext.applicationId
    st = io.open(store)
    h = st.read("host_samples")
    stages, tasks = st.stages(), st.tasks()
    assert len(h) == 2 and set(h["run_id"]) == {app}
    assert h["time_ms"].max() >= stages["completion_ms"].max()
    f = host_features(stages, tasks, h)
    assert len(f) == len(stages) and f[["host_user_share", "host_mem_available_gib"]].notna().all().all()


@pytest.mark.spark
@pytest.mark.parametrize("why", ["listener stopped", "no listener"])
def test_samples_are_not_kept_when_no_listener_records_them(spark_app, tmp_path, why):
    """The listener stopped at start (a store Hadoop cannot open), or spark.extraListeners lacks
    it: the plugin kept queueing samples nobody would take, up to 500,000 of them (669 bytes
    each: 335 MB of driver heap)."""
    conf = {"spark.sparkpredict.hostSampleIntervalMs": "20"}
    store = "nosuchfs://bucket/store" if why == "listener stopped" else str(tmp_path / "store")
    if why == "no listener":
        conf["spark.extraListeners"] = ""
    with spark_app(store, job="no-recorder", conf=conf) as spark:
        plugin = spark._jvm.io.sparkpredict.HostMetricsPlugin
        time.sleep(1.5)  # 75 readings
        pending = plugin.pendingSamples()
    assert pending == 0


@pytest.mark.spark
def test_samples_of_a_long_job_are_written_while_it_runs(spark_app, tmp_path):
    """Samples waited for the job's end: a two-hour job on 200 executors queued 1.4 million
    (capped at 500,000, the oldest dropped). They are flushed once flushEveryTasks of them wait."""
    store = tmp_path / "store"
    gate = tmp_path / "gate"
    conf = {"spark.sparkpredict.hostSampleIntervalMs": "20", "spark.sparkpredict.flushEveryTasks": "20",
            "spark.executor.heartbeatInterval": "500ms"}

    def wait_for_gate(rows):
        import os
        import time

        deadline = time.time() + 30
        while not os.path.exists(str(gate)) and time.time() < deadline:
            time.sleep(0.05)
        return [sum(1 for _ in rows)]

    def written():
        try:
            return len(io.open(store).read("host_samples"))
        except Exception:  # no store yet  # noqa: BLE001
            return 0

    import threading

    with spark_app(store, job="long-task", conf=conf) as spark:
        rdd = spark.sparkContext.parallelize(range(1), 1).mapPartitions(wait_for_gate)
        job = threading.Thread(target=rdd.collect)
        job.start()
        deadline = time.monotonic() + 20
        while written() < 20 and time.monotonic() < deadline:
            time.sleep(0.1)
        seen = written()
        gate.touch()
        job.join(timeout=60)
    assert seen >= 20, "no host sample was written while the job ran"
