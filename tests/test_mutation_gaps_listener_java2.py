"""Values of the JVM listener's rows that no other test pinned (a second sampled mutation pass of
its Java: HostSampler, ScanInput, SparkPredictListener, StageTracker).

The host-sample test of test_host_samples.py checks the CPU modes against wall time, and that
the other counters only grow: a disk, network or pressure counter read from the wrong field or
in the wrong unit still grows. Here each cumulative counter the driver's plugin read during a
short local run must lie between what /proc said just before the application and just after
it, and the available memory near what /proc/meminfo says, in bytes. Then the SQL scan rule
and the persisted-RDD rule on inputs the tests' runs and the cluster logs lack: a stage whose
scan metric reads 0, a scan whose files size never came, a read of 2 partitions of 4 (1 of 4
reads the same under a wrong share), a persisted RDD computed in part, a stage listing a
computed persisted RDD before one never computed; and a task end with no finish time.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from listener_replay import replay
from test_listener_long_runs import _listener, _scala_object, _seq, _stage
from test_mutation_gaps_listener_java import _marked_log
from test_scan_input import _input, _logged

from sparkpredict import store as store_mod
from sparkpredict.capture.eventlog import parse_event_log
from sparkpredict.store import io

pytestmark = pytest.mark.spark

PROC = Path("/proc")


def _whole_disks() -> set[str]:
    """Block devices that are whole disks (not loop, ram, zram, device-mapper, md or optical)."""
    skip = ("loop", "ram", "zram", "dm-", "md", "sr")
    return {p.name for p in Path("/sys/block").iterdir() if not p.name.startswith(skip)}


def _host_counters() -> dict[str, int]:
    """The host's cumulative counters now, from /proc, in the units of the host_samples table."""
    out = {}
    disks = _whole_disks()
    written = [int(f[9]) * 512 for f in (ln.split() for ln in (PROC / "diskstats").read_text().splitlines())
               if len(f) >= 10 and f[2] in disks]
    if written:
        out["disk_write_bytes"] = sum(written)
    tx = [int(f[8]) for f in (ln.split(":", 1)[1].split() for ln in (PROC / "net" / "dev").read_text().splitlines()
                              if ":" in ln) if len(f) >= 9]
    out["net_tx_bytes"] = sum(tx)
    for resource in ("cpu", "memory", "io"):
        psi = PROC / "pressure" / resource
        if psi.exists():
            for ln in psi.read_text().splitlines():
                kind, total = ln.split()[0], int(ln.rsplit("total=", 1)[1])
                if (resource, kind) != ("cpu", "full"):  # the table has no column for it
                    out[f"psi_{resource}_{kind}_us"] = total
    return out


def test_host_counters_are_the_hosts_own_in_their_units(spark_app, tmp_path):
    """Mutants: HostSampler reading disk writes in sectors rather than bytes, the transmitted
    packets for the transmitted bytes, no full I/O pressure, the available memory in kB."""
    if not (PROC / "diskstats").exists():
        pytest.skip("no /proc: the host plugin samples Linux hosts only")
    store = tmp_path / "store"
    before = _host_counters()
    with spark_app(store, job="host-units", conf={"spark.sparkpredict.hostSampleIntervalMs": "200"}) as spark:
        spark.range(0, 200_000, numPartitions=2).selectExpr("sum(id)").collect()
    after = _host_counters()
    mem_kib = [int(ln.split()[1]) for ln in (PROC / "meminfo").read_text().splitlines()
               if ln.startswith("MemAvailable:")]
    h = io.open(store).read("host_samples")
    assert len(h) >= 2
    for col, low in before.items():
        assert h[col].between(low, after[col]).all(), (col, low, after[col], h[col].tolist())
    # not cumulative: the host's own, give or take what other processes took meanwhile
    assert h["mem_available_bytes"].between(mem_kib[0] * 1024 / 2, mem_kib[0] * 1024 * 2).all()


# ScanInput.stageCompleted, driven as in test_listener_long_runs: a constructed stage of a SQL
# execution, listing a scan's task metric, handed to the live listener beside a real read.
_STAGE = 9_400
_EXECUTION = 990_400


def _late_stage(spark, accumulator_id: int, value: int) -> None:
    """A job of one stage of SQL execution _EXECUTION whose accumulables hold ``value`` for
    ``accumulator_id``, from start to end."""
    jvm = spark._jvm
    sched = jvm.org.apache.spark.scheduler
    listener = _listener(spark)
    now, none = jvm.System.currentTimeMillis(), jvm.scala.Option.empty()
    props = jvm.java.util.Properties()
    props.setProperty("spark.sql.execution.id", str(_EXECUTION))
    listener.onJobStart(sched.SparkListenerJobStart(_STAGE, now, _seq(jvm, _stage(jvm, _STAGE)), props))
    stage = _stage(jvm, _STAGE)
    listener.onStageSubmitted(sched.SparkListenerStageSubmitted(stage, props))
    stage.accumulables().put(accumulator_id, sched.AccumulableInfo(
        accumulator_id, jvm.scala.Some("number of output rows"), none, jvm.scala.Some(value), False, False, none))
    listener.onStageCompleted(sched.SparkListenerStageCompleted(stage))
    listener.onJobEnd(sched.SparkListenerJobEnd(_STAGE, now, _scala_object(jvm, "org.apache.spark.scheduler.JobSucceeded")))


def _parquet(spark, folder: Path) -> tuple[object, int]:
    """1000 rows written as Parquet under ``folder``: the DataFrame reading them, and their bytes."""
    spark.range(1000).write.parquet(str(folder))
    return spark.read.parquet(str(folder)), sum(f.stat().st_size for f in folder.glob("part-*.parquet"))


def _last_run(store: Path):
    return store_mod.open(store).runs().sort_values("updated_ms").iloc[-1]


def test_a_stage_whose_scan_metric_reads_0_did_not_run_the_scan(spark_app, tmp_path):
    """A stage listing a scan's row count at 0 did not read the scan's files: the run's input is
    the one collect's read of them. Mutant: ScanInput.stageCompleted taking a 0 for a read (the
    late stage counted the files a second time)."""
    store = tmp_path / "store"
    with spark_app(store, job="zero-scan-metric") as spark:
        df, files = _parquet(spark, tmp_path / "data")
        assert len(df.collect()) == 1000
        leaves = spark._jvm.scala.jdk.javaapi.CollectionConverters.asJava(
            df._jdf.queryExecution().executedPlan().collectLeaves())
        [scan] = [leaf for leaf in leaves if leaf.metrics().contains("numOutputRows")]
        _late_stage(spark, scan.metrics().get("numOutputRows").get().id(), 0)
    assert _last_run(store).input_bytes == files


def test_a_scan_whose_files_size_never_came_leaves_the_files_rule_on(spark_app, tmp_path):
    """A scan planned (an adaptive plan update) whose driver never told its size of files, and a
    stage that lists its row count: the stage reads nothing known, and the files rule stays on
    for the real read after it, whose input is its files (not the footers Parquet's vectored
    reads leave in the task metric). Mutant: ScanInput.stageCompleted not skipping a scan of no
    known size (its null unboxed threw, which turned the rule off for the rest of the run)."""
    store = tmp_path / "store"
    rows_id, size_id = 8_000_401, 8_000_402
    with spark_app(store, job="scan-without-size") as spark:
        jvm = spark._jvm
        metric = jvm.org.apache.spark.sql.execution.metric.SQLMetricInfo
        plan = jvm.org.apache.spark.sql.execution.SparkPlanInfo(
            "Scan parquet", "Scan parquet", _seq(jvm), _scala_object(jvm, "scala.collection.immutable.Map").empty(),
            _seq(jvm, metric("number of output rows", rows_id, "sum"), metric("size of files read", size_id, "size")))
        _listener(spark).onOtherEvent(
            jvm.org.apache.spark.sql.execution.ui.SparkListenerSQLAdaptiveExecutionUpdate(_EXECUTION, "", plan))
        _late_stage(spark, rows_id, 5)
        df, files = _parquet(spark, tmp_path / "data")
        assert len(df.collect()) == 1000
    assert _last_run(store).input_bytes == files


def _replayed_edit(listener_jar, tmp_path: Path, edit) -> tuple:
    """The marked log of test_mutation_gaps_listener_java with ``edit`` applied to each event
    (which it changes in place), replayed to the real listener and read by the ingest: the
    listener's store and the ingest's tables."""
    marked, log = tmp_path / "local-marked", tmp_path / "local-edited"
    _marked_log(marked)
    events = [json.loads(line) for line in marked.read_text().splitlines()]
    for ev in events:
        edit(ev)
    log.write_text("".join(json.dumps(ev) + "\n" for ev in events))
    parsed = parse_event_log(log)
    props = json.loads(parsed.tables["runs"]["properties_json"][0].as_py())
    results = replay(listener_jar, [[str(log), str(tmp_path / "listened"), props]])
    assert [r["error"] for r in results] == [None], results
    return store_mod.open(tmp_path / "listened"), parsed.tables


_UNFINISHED_TASK = 5


def test_a_task_end_without_a_finish_time_lasted_0_ms(listener_jar, tmp_path):
    """A task end whose Finish Time is 0 (a task Spark never saw finish) lasted 0 ms, as the
    ingest records it, not minus its launch time. Mutant: SparkPredictListener.taskEnd taking
    the duration as finish - launch whatever the finish."""
    def unfinished(ev: dict) -> None:
        if ev["Event"] == "SparkListenerTaskEnd" and ev["Task Info"]["Task ID"] == _UNFINISHED_TASK:
            ev["Task Info"]["Finish Time"] = 0

    listener, ingested = _replayed_edit(listener_jar, tmp_path, unfinished)
    mine = listener.tasks().set_index("task_id").duration_ms
    theirs = ingested["tasks"].to_pandas().set_index("task_id").duration_ms
    assert mine[_UNFINISHED_TASK] == theirs[_UNFINISHED_TASK] == 0
    assert (mine.drop(_UNFINISHED_TASK) > 0).any()


_MEMORY = {"Use Disk": False, "Use Memory": True, "Deserialized": True, "Replication": 1}


def test_a_stage_over_a_computed_persisted_rdd_reads_its_cache_whatever_rdd_follows(listener_jar, tmp_path):
    """Stage 0 computes its RDD, persisted; stage 4 lists that RDD and after it another persisted
    one never computed: stage 4 read the cache, and its task's input is no input of the run, as
    the ingest counts. Mutant: StageTracker.completed keeping only the last persisted RDD's
    "computed" (stage 4's input counted)."""
    computed: list[dict] = []

    def persisted(ev: dict) -> None:
        if ev["Event"] != "SparkListenerStageCompleted":
            return
        infos = ev["Stage Info"]["RDD Info"]
        if ev["Stage Info"]["Stage ID"] == 0:
            infos[0]["Storage Level"] = _MEMORY
            computed.append(infos[0])
        elif ev["Stage Info"]["Stage ID"] == 4:
            infos += [computed[0], dict(computed[0], **{"RDD ID": 9_999})]

    listener, ingested = _replayed_edit(listener_jar, tmp_path, persisted)
    tasks = listener.tasks()
    run_input = listener.runs().iloc[0].input_bytes
    assert run_input == ingested["runs"]["input_bytes"][0].as_py()
    assert run_input == tasks.input_bytes.sum() - tasks[tasks.stage_id == 4].input_bytes.sum()
    assert tasks[tasks.stage_id == 4].input_bytes.sum() > 0


def test_a_scan_read_in_half_its_partitions_counts_half_its_files(spark_app, tmp_path):
    """`limit(1).collect()` with spark.sql.limit.initialNumPartitions 2 runs two partitions of
    four, one file each: half the files, as the ingest of its event log counts too (the test of
    test_scan_input runs one partition, where a share of 1/4 reads the same either way).
    Mutant: ScanInput.countedBytes dividing the files by the partitions without the count that ran."""
    recorded, size = limited_scan_input(spark_app, tmp_path, initial_partitions=2, rows=1)
    assert recorded == int(size * 2 / 4)


def limited_scan_input(spark_app, tmp_path: Path, initial_partitions: int, rows: int) -> tuple[int, int]:
    """(the run's recorded input, the files' size) of `limit(rows).collect()` over four Parquet
    files of 25,000 rows, one a partition, Spark's first limit job running
    ``initial_partitions`` of them."""
    store, conf = _logged(tmp_path, "limit")
    data = tmp_path / "data"
    # files of 0.2 MB: an open cost of the most a partition holds keeps them one a partition
    conf.update({"spark.sql.files.openCostInBytes": "2m",
                 "spark.sql.limit.initialNumPartitions": str(initial_partitions)})
    with spark_app(store, job="limit", conf=conf) as spark:
        spark.range(100_000).repartition(4).write.parquet(str(data))
        df = spark.read.parquet(str(data))
        assert df.rdd.getNumPartitions() == 4
        assert len(df.limit(rows).collect()) == rows
    return _input(store), sum(f.stat().st_size for f in data.glob("part-*.parquet"))


def test_a_persisted_rdd_computed_in_part_is_not_taken_as_computed(spark_app, tmp_path):
    """`take(1)` of a persisted text file of 4 partitions computes one of them: the count after
    it reads the file (three partitions from disk), and the run's input is at least the file,
    as the ingest counts. Mutant: StageTracker.completed taking a persisted RDD as computed
    whatever share of it its stage ran (the count then read no input)."""
    store, conf = _logged(tmp_path, "take")
    text = tmp_path / "lines.txt"
    text.write_text("".join(f"line {i}\n" for i in range(200_000)))
    with spark_app(store, job="take", conf=conf) as spark:
        rdd = spark.sparkContext.textFile(str(text), 4).cache()
        assert rdd.getNumPartitions() == 4
        assert rdd.take(1) == ["line 0"]
        assert rdd.count() == 200_000
    assert _input(store) >= text.stat().st_size
