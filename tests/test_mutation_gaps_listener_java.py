"""Values of the JVM listener's rows that no other test pinned (a fourth, sampled mutation pass of
its Java: StageTracker, TaskRows, Tables, RunRecord, Flusher, StoreWriter).

No application of the tests' own runs spills, runs a speculative copy, or gives every metric a
value of its own (most are 0 in a small local job), and none of the shared cluster logs spills
or speculates: a task row could take the memory spill for the disk spill, or drop the
speculative flag, unseen. Here Spark's own ReplayListenerBus feeds the real listener (in a JVM
of its own, as in test_eventlog.py) the plain Spark 4 log with every task's every metric set to
a value of its own, so that any two metrics swapped, a unit off, or a sum that keeps only its
last task, reads as a wrong number; and a copy of it whose partition is read first by a task of
0 bytes, with Databricks' disk cache accumulables; and a copy in which a second job shares a
running job's stage. Then live applications: a store whose first rename of a tasks file fails
(the batch's runs file, its commit mark, must land after every other table's), a store that
fails and comes back (the task rows it held are released once written, its merged batch holds
one run row), and a failed stage over a persisted RDD (not taken as computed).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from listener_replay import replay
from test_listener import _listener_error_once_it_says
from test_listener_fs_closed import ONE_JOB, _run_job
from test_mutation_gaps_listener3 import _partition_1_fails

from sparkpredict import store
from sparkpredict.capture.eventlog import parse_event_log
from sparkpredict.store import schema as S

pytestmark = pytest.mark.spark

PLAIN4 = Path(__file__).parent / "data" / "eventlogs" / "spark4" / "local-1795969313432"

#: each metric column: where a TaskEnd's "Task Metrics" holds it, and whether in nanoseconds
_FIELDS = {
    "executor_run_time_ms": (("Executor Run Time",), False),
    "executor_cpu_time_ms": (("Executor CPU Time",), True),
    "executor_deserialize_time_ms": (("Executor Deserialize Time",), False),
    "executor_deserialize_cpu_time_ms": (("Executor Deserialize CPU Time",), True),
    "jvm_gc_time_ms": (("JVM GC Time",), False),
    "result_serialization_time_ms": (("Result Serialization Time",), False),
    "result_size_bytes": (("Result Size",), False),
    "input_bytes": (("Input Metrics", "Bytes Read"), False),
    "input_records": (("Input Metrics", "Records Read"), False),
    "output_bytes": (("Output Metrics", "Bytes Written"), False),
    "output_records": (("Output Metrics", "Records Written"), False),
    "shuffle_remote_read_bytes": (("Shuffle Read Metrics", "Remote Bytes Read"), False),
    "shuffle_local_read_bytes": (("Shuffle Read Metrics", "Local Bytes Read"), False),
    "shuffle_fetch_wait_ms": (("Shuffle Read Metrics", "Fetch Wait Time"), False),
    "shuffle_read_records": (("Shuffle Read Metrics", "Total Records Read"), False),
    "shuffle_write_bytes": (("Shuffle Write Metrics", "Shuffle Bytes Written"), False),
    "shuffle_write_time_ms": (("Shuffle Write Metrics", "Shuffle Write Time"), True),
    "shuffle_write_records": (("Shuffle Write Metrics", "Shuffle Records Written"), False),
    "memory_spilled_bytes": (("Memory Bytes Spilled",), False),
    "disk_spilled_bytes": (("Disk Bytes Spilled",), False),
    "peak_execution_memory_bytes": (("Peak Execution Memory",), False),
}
_SPECULATIVE_TASK = 3


def _value(col: str, task_id: int) -> int:
    """Metric ``col`` of task ``task_id`` in the marked log: apart for every metric and task."""
    return (S.METRIC_NAMES.index(col) + 1) * 1000 + task_id + 1


def _marked_log(path: Path) -> None:
    """The plain Spark 4 log, every task end's metrics set by :func:`_value`, one task a
    speculative copy."""
    out = []
    for line in PLAIN4.read_text().splitlines():
        ev = json.loads(line)
        if ev["Event"] == "SparkListenerTaskEnd":
            task_id = ev["Task Info"]["Task ID"]
            tm = ev["Task Metrics"]
            for col, (keys, nanos) in _FIELDS.items():
                holder = tm
                for k in keys[:-1]:
                    holder = holder.setdefault(k, {})
                holder[keys[-1]] = _value(col, task_id) * (1_000_000 if nanos else 1)
            ev["Task Info"]["Speculative"] = task_id == _SPECULATIVE_TASK
            line = json.dumps(ev)
        out.append(line)
    path.write_text("\n".join(out) + "\n")


_RERUN_TASK = 100  # a later try of stage 2's partition 0, whose first success read nothing
_DISK_CACHE_HITS = ("-4096", "2048")  # stage 1's accumulables of that name: not a byte count, and one


def _rerun_log(marked: Path, path: Path) -> int:
    """The marked log with stage 2's partition 0 read by its first successful task as 0 bytes
    and by a later one (task 100) whole; stage 1 holding Databricks' disk cache accumulables
    (StageTracker.DISK_CACHE_HITS), as does stage 4, which failed; its one executor added
    before the application's start. Returns the run's input as both capture paths count it."""
    out, want = [], 0
    for line in marked.read_text().splitlines():
        ev = json.loads(line)
        if ev["Event"] == "SparkListenerTaskEnd":
            want += ev["Task Metrics"]["Input Metrics"]["Bytes Read"]
            if (ev["Stage ID"], ev["Task Info"]["Index"]) == (2, 0):
                want -= ev["Task Metrics"]["Input Metrics"]["Bytes Read"]
                again = json.loads(line)
                again["Task Info"].update({"Task ID": _RERUN_TASK, "Attempt": 1})
                again["Task Metrics"]["Input Metrics"]["Bytes Read"] = _value("input_bytes", _RERUN_TASK)
                want += _value("input_bytes", _RERUN_TASK)
                ev["Task Metrics"]["Input Metrics"]["Bytes Read"] = 0
                line = json.dumps(ev) + "\n" + json.dumps(again)
        if ev["Event"] == "SparkListenerStageCompleted" and ev["Stage Info"]["Stage ID"] == 1:
            ev["Stage Info"]["Accumulables"] += [
                {"ID": 99_000 + i, "Name": "cache hits size", "Update": v, "Value": v, "Internal": False,
                 "Count Failed Values": True} for i, v in enumerate(_DISK_CACHE_HITS)]
            line = json.dumps(ev)
        if ev["Event"] == "SparkListenerStageCompleted" and ev["Stage Info"]["Stage ID"] == 4:
            # a failed attempt: its successful task's read counts, its cache hits do not
            ev["Stage Info"]["Failure Reason"] = "org.apache.spark.shuffle.FetchFailedException: lost"
            ev["Stage Info"]["Accumulables"].append(
                {"ID": 99_100, "Name": "cache hits size", "Update": "1000", "Value": "1000", "Internal": False,
                 "Count Failed Values": True})
            line = json.dumps(ev)
        if ev["Event"] == "SparkListenerExecutorAdded":  # a minute before the application's start
            ev["Timestamp"] -= 60_000
            line = json.dumps(ev)
        out.append(line)
    path.write_text("\n".join(out) + "\n")
    return want + 2048  # the one byte count of _DISK_CACHE_HITS


_SHARING_JOB = 9  # starts while job 0 runs, and shares its map stage 0


def _shared_stage_log(marked: Path, path: Path) -> None:
    """The marked log with a job 9 that starts while job 0 runs and shares its map stage 0
    (Spark reuses a running shuffle's stage for a concurrent job over the same shuffle); its own
    result stage 5 is never submitted, and it ends after job 0."""
    out = []
    for line in marked.read_text().splitlines():
        ev = json.loads(line)
        out.append(line)
        if ev["Event"] in ("SparkListenerJobStart", "SparkListenerJobEnd") and ev["Job ID"] == 0:
            again = json.loads(line)
            again["Job ID"] = _SHARING_JOB
            if ev["Event"] == "SparkListenerJobStart":
                infos = [i for i in ev["Stage Infos"] if i["Stage ID"] == 0]
                infos.append(dict(infos[0], **{"Stage ID": 5, "Stage Name": "collect (sharing job)"}))
                again.update({"Stage IDs": [0, 5], "Stage Infos": infos})
            out.append(json.dumps(again))
    path.write_text("\n".join(out) + "\n")


@pytest.fixture(scope="module")
def replayed(listener_jar, tmp_path_factory):
    """The marked logs' rows as the real listener records them (one JVM replays both), and as
    the ingest reads them; and the rerun log's input as both count it."""
    tmp = tmp_path_factory.mktemp("marked-log")
    log, rerun, shared = tmp / "local-marked", tmp / "local-rerun", tmp / "local-shared"
    _marked_log(log)
    want_input = _rerun_log(log, rerun)
    _shared_stage_log(log, shared)
    logs = (log, rerun, shared)
    parsed = {p.name: parse_event_log(p) for p in logs}
    jobs = [[str(p), str(tmp / f"listened-{p.name}"),
             json.loads(parsed[p.name].tables["runs"]["properties_json"][0].as_py())] for p in logs]
    results = replay(listener_jar, jobs)
    assert [r["error"] for r in results] == [None, None, None], results
    return {"marked": (store.open(tmp / "listened-local-marked"), parsed[log.name]),
            "rerun": (store.open(tmp / "listened-local-rerun"), parsed[rerun.name], want_input),
            "shared": (store.open(tmp / "listened-local-shared"), parsed[shared.name])}


def test_each_task_metric_lands_in_its_own_column_in_its_unit(replayed):
    """Mutants: TaskRows.metricValues with the memory and disk spills swapped, a peak execution
    memory of 0, a ns -> ms conversion off by 1000; Tables.METRICS with two columns swapped."""
    listener, _ = replayed["marked"]
    tasks = listener.tasks().sort_values("task_id")
    assert len(tasks) == 21
    for col in _FIELDS:
        want = [_value(col, t) for t in tasks.task_id]
        assert tasks[col].tolist() == pytest.approx(want), col
    # Spark's total is its remote and local reads together
    assert (tasks.shuffle_read_bytes == tasks.shuffle_remote_read_bytes + tasks.shuffle_local_read_bytes).all()


def test_a_speculative_copy_is_marked_so(replayed):
    """Mutant: TaskRows.row writing speculative as false."""
    listener, _ = replayed["marked"]
    tasks = listener.tasks()
    assert tasks.loc[tasks.speculative, "task_id"].tolist() == [_SPECULATIVE_TASK]


def test_a_stage_s_metric_sums_are_its_tasks_and_agree_with_the_ingest(replayed):
    """Mutant: StageTracker.Agg.add keeping a double metric's last task instead of its sum."""
    listener, parsed = replayed["marked"]
    tasks, stages = listener.tasks(), listener.stages()
    theirs = parsed.tables["stages"].to_pandas().set_index(["stage_id", "stage_attempt_id"])
    for stage in stages.itertuples():
        mine = tasks[(tasks.stage_id == stage.stage_id) & (tasks.stage_attempt_id == stage.stage_attempt_id)]
        assert len(mine) == stage.num_task_rows > 0
        for col in S.METRIC_NAMES:
            assert getattr(stage, col) == pytest.approx(mine[col].sum()), (stage.stage_id, col)
            assert getattr(stage, col) == pytest.approx(theirs.loc[(stage.stage_id, stage.stage_attempt_id), col])
    assert stages.num_task_rows.max() > 1
    assert np.isclose(stages.executor_cpu_time_ms.sum(), sum(_value("executor_cpu_time_ms", t) for t in range(21)))


def test_a_partition_s_input_counts_from_its_first_task_that_read_it_and_only_positive_cache_hits(replayed):
    """Stage 2's partition 0: its first successful task read 0 bytes, a later try of it the
    partition whole, and the run's input counts the later read (a read of nothing claims no
    partition). Stage 1's "cache hits size" accumulables, -4096 and 2048, add 2048, not -2048;
    failed stage 4's 1000 add nothing. As the ingest counts. Mutants: StageTracker.Agg.read
    keeping reads of 0 bytes; StageTracker.diskCacheHitBytes adding a negative count;
    StageTracker.completed counting a failed attempt's cache hits."""
    listener, parsed, want = replayed["rerun"]
    run = listener.runs().iloc[0]
    assert _RERUN_TASK in set(listener.tasks().task_id)
    assert run.input_bytes == want == parsed.tables["runs"]["input_bytes"][0].as_py()


def test_an_executor_added_before_the_application_s_start_is_alive_from_its_start(replayed):
    """The one executor, added a minute before the application started, was alive through the
    whole run: executors_mean 1, as the ingest says, not more. Mutant: RunRecord.runRow timing
    an executor from its added time."""
    listener, parsed, _ = replayed["rerun"]
    run = listener.runs().iloc[0]
    assert (run.executors_max, run.executors_mean) == (1, 1.0)
    assert parsed.tables["runs"]["executors_mean"][0].as_py() == 1.0


def test_a_stage_two_running_jobs_share_keeps_the_first_job_that_had_it(replayed):
    """Job 9 starts while job 0 runs and lists job 0's map stage 0 as its own: the stage's row
    keeps job 0, as the ingest assigns it, and the other stages their one job. Mutant:
    StageTracker.jobStarted putting each stage's job rather than keeping the first (S13 of the
    Java pass)."""
    listener, parsed = replayed["shared"]
    mine = listener.stages().set_index("stage_id").job_id.to_dict()
    theirs = parsed.tables["stages"].to_pandas().set_index("stage_id").job_id.to_dict()
    assert mine == theirs == {0: 0, 1: 0, 2: 1, 4: 2}


# The local file system under a scheme of its own whose first rename of a tasks file fails
# (not done), as a store's may: the batch is written again, under a new id.
FAILED_RENAME_FS = """
package sptest;

import java.io.IOException;
import java.net.URI;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;

public class FailedRenameFileSystem extends RawLocalFileSystem {
    private static final URI NAME = URI.create("failedrename:///");
    private static volatile boolean failed;

    @Override public URI getUri() { return NAME; }
    @Override public String getScheme() { return "failedrename"; }

    @Override public boolean rename(Path s, Path d) throws IOException {
        if (!failed && d.getParent().getName().equals("tasks")) {
            failed = true;
            System.out.println("rename failed: " + d.getName());
            throw new IOException("a tasks file's rename failed");
        }
        return super.rename(s, d);
    }
}
"""


def test_a_batch_whose_tasks_file_failed_to_land_is_not_committed_before_it(listener_jar, tmp_path):
    """A batch's runs file is its commit mark, renamed after every other table's: the batch
    whose tasks file failed to land is not read, and its second write is read once. Mutant:
    Tables.ALL with the runs table first, which committed the failed batch's stage rows, and
    its second write's again, so the run's stages read back twice."""
    folder = tmp_path / "store"
    job = ONE_JOB.replace("laterename://", "failedrename://")  # its one job, on this file system
    out = _run_job(tmp_path, "failedrename", "FailedRenameFileSystem", FAILED_RENAME_FS, job, folder)
    assert "done" in out and not out.startswith("exit "), out[-3000:]
    assert "rename failed: part-" in out, out[-3000:]
    st = store.open(folder)
    (run,) = st.runs().itertuples()
    assert run.status == "succeeded"
    assert len(st.tasks()) == run.num_tasks == 2
    assert len(st.stages()) == run.num_stages == 1
    assert len(st.executors()) == 1


def test_batches_merged_while_the_store_failed_release_all_their_task_rows_once_written(spark_app, runs_so_far,
                                                                                        tmp_path):
    """Task rows waiting for the store are capped (4 chunks of flushEveryTasks: 20 here); the
    batches snapshotted while the store failed merge into one, which, once written, must
    release every row it held. A job after the store came back keeps all 8 of its task rows.
    Mutant: Flusher.Batch.absorb not adding the newer batch's task rows, so the written batch
    released only its first snapshot's and the rest stayed counted as waiting: the next job's
    rows met the cap with the store writable, and most were dropped."""
    import time

    blocker = tmp_path / "blocked"
    blocker.write_text("a file where the store's parent folder should be")
    st = blocker / "store"
    conf = {"spark.sparkpredict.flushEveryTasks": "5", "spark.sparkpredict.flushEveryStages": "1",
            "spark.sparkpredict.flushIntervalMs": "200"}
    with spark_app(st, job="held-rows", conf=conf) as spark:
        sc = spark.sparkContext
        assert sc.parallelize(range(1), 1).count() == 1
        assert "cannot write to store" in (_listener_error_once_it_says(spark, "cannot write to store") or "")
        assert sc.parallelize(range(30), 30).count() == 30  # past the cap: its last rows are dropped
        blocker.unlink()
        deadline = time.monotonic() + 120
        while runs_so_far(st) is None:
            assert time.monotonic() < deadline, "the store was not written once writable"
            time.sleep(0.2)
        assert sc.parallelize(range(8), 8).count() == 8
    stages, tasks = store.open(st).stages(), store.open(st).tasks()
    last = stages[stages.job_id == stages.job_id.max()]
    assert last.num_task_rows.tolist() == [8]
    assert (tasks.stage_id == last.stage_id.iloc[0]).sum() == 8
    # A merged batch holds its newest run row alone: the reader keeps each run's latest row, so
    # only the files show that absorb replaced the older snapshots' rows rather than adding them.
    # Mutant: Flusher.Batch.absorb appending the newer batch's run rows (F1 of the Java pass).
    runs_files = sorted((st / S.COMMIT_TABLE).glob("part-*.parquet"))
    assert len(runs_files) >= 2
    assert [pq.read_metadata(f).num_rows for f in runs_files] == [1] * len(runs_files)


def test_a_failed_stage_over_a_persisted_rdd_leaves_it_uncomputed(spark_app, tmp_path):
    """A stage over a persisted text file fails (its partition 1): the RDD is not taken as
    computed, so the count after it, which reads the file again, is the run's input too.
    Mutant: StageTracker.completed remembering a failed stage's persisted RDDs as computed,
    which left the count's read out of the run's input."""
    data = tmp_path / "lines.txt"
    data.write_text("\n".join(f"line {i}" for i in range(2000)))
    st = tmp_path / "store"
    with spark_app(st, job="failed-persisted") as spark:
        rdd = spark.sparkContext.textFile(str(data), 2).persist()
        with pytest.raises(Exception, match="a bad record"):
            rdd.mapPartitionsWithIndex(_partition_1_fails(str(tmp_path / "read-0"))).collect()
        assert rdd.count() == 2000
    run, tasks = store.open(st).runs().iloc[0], store.open(st).tasks()
    stages = store.open(st).stages().sort_values("stage_id")
    assert stages.status.tolist() == ["failed", "succeeded"]
    ok = tasks[tasks.status == "SUCCESS"].groupby("stage_id").input_bytes.sum()
    count_read = stages.input_bytes.iloc[1]
    assert count_read > 0 and ok[stages.stage_id.iloc[1]] == count_read
    # The failed stage's partition 0 counts when its task ended before the failure aborted the
    # stage, which _partition_1_fails waits for; a task end after that is not summed (a
    # loaded machine could still be late by more than its wait, hence either sum).
    first_ok = ok.get(stages.stage_id.iloc[0], 0)
    assert run.input_bytes in {count_read, count_read + first_ok}
