"""Values of the JVM listener's rows that no other test pinned (a third mutation pass of its Java:
the listener's event handlers, HostSampler and HostMetricsPlugin).

One real ``local[2,4]`` application, sampling its host every 100 ms and flushing after every
second completed stage (spark.sparkpredict.flushEveryStages, which no other test set):

- a job of three stages whose last waits for a file: its first two stages' rows are in the
  store while it waits;
- a read of a text file whose partition 1 fails at every try: the run's input is partition
  0's, which a task read whole, not the failed tries' reads of partition 1;
- CPU-bound jobs, during which every host sample holds what /proc holds: each cumulative
  counter lies between this process's reading of the same file before the application and
  after it (a unit or a field off by one lands outside);
- a task end whose TaskInfo has no finish time, posted as another library could: its
  duration is 0, not minus its launch time.

And one ``local-cluster`` application whose executors sample their own hosts: their readings
reach the driver's plugin and are written under their ids and hosts.
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from test_host_samples import MODES
from test_listener_isolation import _post, _scala_object
from test_listener_store_faults import _committed, _wait_for

from sparkpredict import store as store_mod
from sparkpredict.errors import StoreError

pytestmark = pytest.mark.spark

_NOT_WHOLE_DISKS = ("loop", "ram", "zram", "dm-", "md", "sr")  # partitions and virtual devices
_POSTED_TASK_ID = 10_000


def _proc() -> dict[str, int]:
    """The cumulative counters HostSampler reads, read here from the same files; a counter this
    host lacks (no PSI, no disks) is left out."""
    out: dict[str, int] = {}
    ms_per_jiffy = 1000 // os.sysconf("SC_CLK_TCK")
    for line in Path("/proc/stat").read_text().splitlines():
        f = line.split()
        if f[0] == "cpu":
            out.update({m: int(v) * ms_per_jiffy for m, v in zip(MODES, f[1:9])})
        elif f[0] == "ctxt":
            out["context_switches"] = int(f[1])
    for resource, some, full in (("cpu", "psi_cpu_some_us", None),
                                 ("memory", "psi_memory_some_us", "psi_memory_full_us"),
                                 ("io", "psi_io_some_us", "psi_io_full_us")):
        try:
            lines = Path("/proc/pressure", resource).read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            kind, *fields = line.split()
            col = some if kind == "some" else full
            if col:
                out[col] = int(fields[-1].removeprefix("total="))
    disks = {d for d in os.listdir("/sys/block") if not d.startswith(_NOT_WHOLE_DISKS)}
    if disks:
        read = written = 0
        for line in Path("/proc/diskstats").read_text().splitlines():
            f = line.split()
            if len(f) >= 10 and f[2] in disks:
                read += int(f[5]) * 512
                written += int(f[9]) * 512
        out["disk_read_bytes"], out["disk_write_bytes"] = read, written
    rx = tx = 0
    for line in Path("/proc/net/dev").read_text().splitlines():
        if ":" in line:
            f = line.split(":", 1)[1].split()
            rx += int(f[0])
            tx += int(f[8])
    out["net_rx_bytes"], out["net_tx_bytes"] = rx, tx
    for line in Path("/proc/vmstat").read_text().splitlines():
        if line.startswith("pgmajfault "):
            out["major_page_faults"] = int(line.split()[1])
    return out


def _written(store: Path):
    try:
        st = store_mod.open(store)
        stages = st.stages()
        return (st.runs(), stages) if len(stages) else None
    except StoreError:
        return None


def _waits_for(gate: str):
    def run(rows):
        import os
        import time

        deadline = time.time() + 60
        while not os.path.exists(gate) and time.time() < deadline:
            time.sleep(0.05)
        return [sum(1 for _ in rows)]

    return run


def _last_waits_for(gate: str, last: int):
    def run(index, rows):
        import os
        import time

        deadline = time.time() + 60
        while index == last and not os.path.exists(gate) and time.time() < deadline:
            time.sleep(0.05)
        return [sum(1 for _ in rows)]

    return run


def _partition_1_fails(done: str):
    """Partition 1 fails, once partition 0 has been read whole (it touches ``done``) and half a
    second more has passed: partition 0's task then ends before the failure aborts its stage.
    Without the wait that order was Spark's race, and a task end that comes after its attempt
    completed is not summed (CI saw the run's input miss partition 0)."""
    def run(index, lines):
        import os
        import time

        if index == 0:
            n = sum(1 for _ in lines)
            open(done, "w").close()
            return [n]
        deadline = time.time() + 60
        while not os.path.exists(done) and time.time() < deadline:
            time.sleep(0.02)
        time.sleep(0.5)
        raise RuntimeError("a bad record")

    return run


@pytest.fixture(scope="module")
def recorded(spark_app, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mutation-gaps-listener3")
    st, gate = tmp / "store", tmp / "gate"
    data = tmp / "lines.txt"
    data.write_text("\n".join(f"line {i:05d} of the input file" for i in range(20_000)))
    conf = {"spark.sparkpredict.hostSampleIntervalMs": "100", "spark.sparkpredict.flushEveryStages": "2",
            "spark.sparkpredict.flushIntervalMs": "0"}
    before = _proc()
    with spark_app(st, job="gaps3", master="local[2,4]", conf=conf) as spark:
        sc = spark.sparkContext
        rdd = sc.parallelize(range(100), 2).map(lambda x: (x % 10, x)).reduceByKey(lambda a, b: a + b, 2) \
            .map(lambda kv: (kv[0] % 3, kv[1])).reduceByKey(lambda a, b: a + b, 2).mapPartitions(_waits_for(str(gate)))
        result: dict = {}
        job = threading.Thread(target=lambda: result.setdefault("rows", rdd.collect()))
        job.start()
        seen = _wait_for(lambda: _written(st), 20)
        gate.touch()
        job.join(timeout=60)
        assert sum(result["rows"]) == 3
        with pytest.raises(Exception, match="a bad record"):
            sc.textFile(str(data), 2).mapPartitionsWithIndex(_partition_1_fails(str(tmp / "read-0"))).collect()
        t0 = time.monotonic()
        while time.monotonic() - t0 < 2.0:  # about 20 readings while both task threads run
            spark.range(0, 3_000_000, numPartitions=2).selectExpr("sum(hash(id, id * 7))").collect()
        jvm = spark._jvm
        local = _scala_object(jvm, "org.apache.spark.scheduler.TaskLocality").PROCESS_LOCAL()
        info = jvm.org.apache.spark.scheduler.TaskInfo(_POSTED_TASK_ID, 0, 0, 0, int(time.time() * 1000), "driver",
                                                       "localhost", local, False)
        success = _scala_object(jvm, "org.apache.spark.Success")
        _post(spark, jvm.org.apache.spark.scheduler.SparkListenerTaskEnd(0, 0, "ResultTask", success, info, None,
                                                                          None))
    after = _proc()
    return store_mod.open(st), seen, before, after


def test_every_second_completed_stage_is_written_while_its_job_runs(recorded):
    _, seen, _, _ = recorded
    assert seen, "no stage row was written before the job ended"
    runs, stages = seen
    assert set(runs.status) == {"running"}
    # the job's two map stages; its result stage waited
    assert sorted(stages.stage_id) == [0, 1] and (stages.num_tasks == 2).all()


def test_a_partition_whose_every_try_failed_is_no_input_of_the_run(recorded):
    """The run's input counts each partition by its first successful task
    (StageTracker.countOnce): the failed tries' reads (four here) count nothing."""
    st = recorded[0]
    tasks = st.tasks()
    failed = tasks[tasks.status == "FAILED"]
    assert len(failed) == 4 and set(failed.task_index) == {1} and (failed.input_bytes > 0).all()
    read = tasks[(tasks.stage_id == failed.stage_id.iloc[0]) & (tasks.status == "SUCCESS")]
    assert read.task_index.tolist() == [0] and read.input_bytes.iloc[0] > 0
    (run,) = st.runs().itertuples()
    assert run.input_bytes_source == "measured" and run.input_bytes == read.input_bytes.iloc[0]


def test_host_samples_hold_what_proc_holds(recorded):
    st, _, before, after = recorded
    h = st.read("host_samples")
    assert len(h) >= 10 and set(h.executor_id) == {"driver"}
    outside = {}
    for col, low in before.items():
        v = h[col]
        if v.isna().any() or not low <= v.min() <= v.max() <= after[col]:
            outside[col] = (low, v.min(), v.max(), after[col])
    assert not outside
    # stalls of all tasks are stalls of some: a "full" total read into "some" lands below it
    for resource in ("memory", "io"):
        some, full = h[f"psi_{resource}_some_us"], h[f"psi_{resource}_full_us"]
        assert (full.isna() | (full <= some)).all(), resource
    # instantaneous: bytes of /proc/meminfo's kB, and the sampler's own thread at least runs
    with open("/proc/meminfo") as f:
        total = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemTotal:"))
    assert (h.mem_available_bytes % 1024 == 0).all() and h.mem_available_bytes.between(1, total).all()
    assert h.procs_running.min() >= 1 and h.procs_running.max() >= 2  # two task threads ran
    drivers = st.executors().query("executor_id == 'driver'")
    assert set(h.host) == set(drivers.host)


def test_a_task_end_without_a_finish_time_lasts_zero_ms(recorded):
    tasks = recorded[0].tasks().set_index("task_id")
    assert tasks.loc[_POSTED_TASK_ID, "duration_ms"] == 0


def test_task_rows_are_written_once_flush_every_tasks_of_them_wait(spark_app, tmp_path):
    """spark.sparkpredict.flushEveryTasks=3: the third task row waiting is written while the
    job's last task still runs, not only with a fourth (host samples off: no other flush)."""
    st, gate = tmp_path / "store", tmp_path / "gate"
    conf = {"spark.sparkpredict.flushEveryTasks": "3", "spark.sparkpredict.flushIntervalMs": "0",
            "spark.sparkpredict.hostSampleIntervalMs": "0"}
    with spark_app(st, job="every-3", conf=conf) as spark:
        rdd = spark.sparkContext.parallelize(range(4), 4).mapPartitionsWithIndex(_last_waits_for(str(gate), 3))
        job = threading.Thread(target=rdd.collect)
        job.start()
        seen = _wait_for(lambda: (c := _committed(st)) and len(c[1]) and c, 20)
        gate.touch()
        job.join(timeout=60)
    assert seen, "no task row was written before the job ended"
    runs, tasks = seen
    assert set(runs.status) == {"running"} and sorted(tasks.task_index) == [0, 1, 2]
    assert len(store_mod.open(st).tasks()) == 4


@pytest.mark.cluster
def test_executors_sample_their_own_hosts_for_the_driver(spark_app, tmp_path):
    """Off local mode each executor samples its host and sends the readings to the driver's
    plugin, which the listener writes under the executor's id and the host it registered with
    (local-mode tests only ever saw the driver's own readings)."""
    conf = {"spark.sparkpredict.hostSampleIntervalMs": "200", "spark.executor.memory": "512m"}
    with spark_app(tmp_path / "store", job="hosts-cluster", master="local-cluster[2,1,1024]", conf=conf) as spark:
        assert spark.sparkContext.parallelize(range(2), 2).map(lambda x: time.sleep(2) or x).count() == 2
        driver_host = spark.conf.get("spark.driver.host")
    st = store_mod.open(tmp_path / "store")
    h, executors = st.read("host_samples"), st.executors()
    assert set(h.executor_id) == {"driver", "0", "1"}
    host = dict(zip(executors.executor_id, executors.host), driver=driver_host)
    for executor, rows in h.groupby("executor_id"):
        assert set(rows.host) == {host[executor]}, executor
        assert len(rows) >= 2 and rows.cpu_user_ms.notna().all(), executor
