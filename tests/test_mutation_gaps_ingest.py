"""Event-log ingest's row building at its boundaries (a mutation audit of capture/eventlog_rows.py,
eventlog_scans.py and eventlog_run.py): each test failed on a one-operator change of the rule it
pins that the other JVM-free tests let pass. The logs are written here, event by event, so every
expected value (sums, shares, executor counts) is derived by hand from the events.
"""
from __future__ import annotations

import json

import pyarrow as pa
import pytest

from sparkpredict.capture.eventlog_rows import RunBuilder, disk_cache_hit_bytes
from sparkpredict.capture.eventlog_run import still_running
from sparkpredict.capture.eventlog_scans import counted_bytes
from sparkpredict.store import schema as S


def _line(ev: dict) -> bytes:
    return json.dumps(ev, separators=(",", ":")).encode()


def app_start(ts: int = 1_000) -> dict:
    return {"Event": "SparkListenerApplicationStart", "App Name": "a", "App ID": "app-1", "Timestamp": ts}


def env(**props: str) -> dict:
    return {"Event": "SparkListenerEnvironmentUpdate",
            "Spark Properties": {"spark.master": "yarn", **{k.replace("_", "."): v for k, v in props.items()}}}


def executor_added(eid: str, ts: int, host: str = "h", cores: int = 4, profile: int | None = None) -> dict:
    info: dict = {"Host": host, "Total Cores": cores}
    if profile is not None:
        info["Resource Profile Id"] = profile
    return {"Event": "SparkListenerExecutorAdded", "Timestamp": ts, "Executor ID": eid, "Executor Info": info}


def executor_removed(eid: str, ts: int, reason: str | None = "lost") -> dict:
    return {"Event": "SparkListenerExecutorRemoved", "Timestamp": ts, "Executor ID": eid, "Removed Reason": reason}


def task_end(stage: int, tid: int, index: int, launch: int, finish: int, *, run_ms: int = 10,
             input_bytes: int = 0, attempt: int = 0, status: str = "Success", ex: str = "1",
             task_type: str = "ResultTask", partition: int | None = None, metrics: dict | None = None) -> dict:
    info = {"Task ID": tid, "Index": index, "Attempt": 0, "Launch Time": launch, "Executor ID": ex,
            "Host": "h", "Locality": "PROCESS_LOCAL", "Speculative": False, "Getting Result Time": 0,
            "Finish Time": finish, "Failed": status != "Success", "Killed": False, "Accumulables": []}
    if partition is not None:
        info["Partition ID"] = partition
    tm = {"Executor Run Time": run_ms, "Input Metrics": {"Bytes Read": input_bytes, "Records Read": 1}}
    return {"Event": "SparkListenerTaskEnd", "Stage ID": stage, "Stage Attempt ID": attempt, "Task Type": task_type,
            "Task End Reason": {"Reason": status}, "Task Info": info, "Task Metrics": metrics or tm}


def stage_completed(stage: int, num_tasks: int, sub: int, done: int, *, attempt: int = 0, rdd_id: int = 1,
                    partitions: int | None = None, accumulables: list | None = None, failed: bool = False,
                    details: str | None = None, rdds: list[dict] | None = None) -> dict:
    own = {"RDD ID": rdd_id, "Name": "r", "Number of Partitions": num_tasks if partitions is None else partitions}
    si = {"Stage ID": stage, "Stage Attempt ID": attempt, "Stage Name": f"s{stage}", "Number of Tasks": num_tasks,
          "RDD Info": [own] if rdds is None else rdds,
          "Parent IDs": [], "Submission Time": sub, "Completion Time": done, "Accumulables": accumulables or []}
    if failed:
        si["Failure Reason"] = "boom"
    if details is not None:
        si["Details"] = details
    return {"Event": "SparkListenerStageCompleted", "Stage Info": si}


def job_start(job: int, stages: list[int], ts: int, **props: str) -> dict:
    return {"Event": "SparkListenerJobStart", "Job ID": job, "Submission Time": ts, "Stage IDs": stages,
            "Properties": props}


def job_end(job: int, ts: int) -> dict:
    return {"Event": "SparkListenerJobEnd", "Job ID": job, "Completion Time": ts,
            "Job Result": {"Result": "JobSucceeded"}}


def app_end(ts: int) -> dict:
    return {"Event": "SparkListenerApplicationEnd", "Timestamp": ts}


def rows(*events: dict, in_progress: bool = False) -> tuple[dict[str, pa.Table], RunBuilder]:
    """The tables the ingest builds of a log of these events, and its builder (for warnings)."""
    b = RunBuilder()
    b.feed(_line(e) for e in events)
    return b.finish(in_progress=in_progress), b


def run_row(*events: dict) -> dict:
    return rows(*events)[0]["runs"].to_pylist()[0]


# ---- executors and task slots (eventlog_run) ----------------------------------------------

def test_executor_rows_keep_each_executors_host_and_removal_and_the_timeline_adds_up():
    # executor 1 on host-a alive over the whole second, executor 2 on host-b for its middle
    # quarter: 2 at most, 1.25 on average (1,000 + 250 ms alive over 1,000 ms)
    tables, _ = rows(app_start(1_000), env(spark_executor_cores="4"),
                     executor_added("1", 1_000, host="host-a"), executor_added("2", 1_500, host="host-b", cores=2),
                     executor_removed("2", 1_750, reason="idle"), app_end(2_000))
    ex = tables["executors"].to_pylist()
    assert [(e["executor_id"], e["host"], e["cores"], e["added_ms"], e["removed_ms"], e["removed_reason"])
            for e in ex] == [("1", "host-a", 4, 1_000, None, None), ("2", "host-b", 2, 1_500, 1_750, "idle")]
    run = tables["runs"].to_pylist()[0]
    assert (run["executors_max"], run["executors_mean"], run["task_slots"]) == (2, 1.25, 8)


def test_a_task_cpus_setting_below_one_counts_as_one():
    # spark.task.cpus=-1 is no setting Spark runs with: the run's slots are its cores, not a crash
    run = run_row(app_start(), env(spark_executor_cores="4", spark_task_cpus="-1"),
                  executor_added("1", 1_000), app_end(2_000))
    assert run["task_slots"] == 4


def test_task_slots_are_whole_tasks_of_each_executors_cores():
    # 3 cores at 2 cpus a task run one task at a time: 2 executors, 2 slots
    run = run_row(app_start(), env(spark_executor_cores="3", spark_task_cpus="2"),
                  executor_added("1", 1_000, cores=3), executor_added("2", 1_000, cores=3), app_end(2_000))
    assert (run["task_slots"], run["executors_max"], run["executor_cores"]) == (2, 2, 3)


def test_task_slots_of_profile_executors_count_a_removed_one_only_while_it_lived():
    # 4 cores at 1 cpu a task (the default profile), then 2-cpu tasks of profile 1 on a 2-core
    # executor, removed (no reason told) before one that tells 0 cores (the run's 4 count) is
    # added: 4 + 1, then 4 + 2 at once, never 4 + 1 + 2
    profile = {"Event": "SparkListenerResourceProfileAdded", "Resource Profile Id": 1,
               "Executor Resource Requests": {"memory": {"Amount": 2048}},
               "Task Resource Requests": {"cpus": {"Amount": 2}}}
    tables, _ = rows(app_start(1_000), env(spark_executor_cores="4"), profile,
                     executor_added("1", 1_000, cores=4, profile=0), executor_added("2", 1_100, cores=2, profile=1),
                     executor_removed("2", 1_200, reason=None), executor_added("3", 1_300, cores=0, profile=1),
                     app_end(2_000))
    run = tables["runs"].to_pylist()[0]
    assert (run["task_slots"], run["executors_max"]) == (6, 2)
    assert [e["memory_mb"] for e in tables["executors"].to_pylist()] == [1024, 2048, 2048]


def test_a_job_running_at_the_end_kills_the_run_unless_it_is_a_streaming_micro_batch():
    # a stopped streaming query's last micro-batch is cut short on purpose; any other job was interrupted
    streaming = run_row(app_start(), env(), job_start(0, [0], 1_100, **{"sql.streaming.queryId": "q"}),
                        app_end(2_000))
    assert (streaming["status"], streaming["error_message"]) == ("succeeded", None)
    batch = run_row(app_start(), env(), job_start(0, [0], 1_100), job_start(1, [1], 1_100), job_end(1, 1_200),
                    app_end(2_000))
    assert batch["status"] == "killed"
    assert batch["error_message"].startswith("1 job was still running at the application's end (job 0)")


def test_a_profile_executor_counts_its_own_cores_or_the_runs():
    profile = {"Event": "SparkListenerResourceProfileAdded", "Resource Profile Id": 1,
               "Task Resource Requests": {"cpus": {"Amount": 1}}}
    run = run_row(app_start(), env(spark_executor_cores="4"), profile,
                  executor_added("1", 1_000, cores=1, profile=1), app_end(2_000))
    assert run["task_slots"] == 1
    # with no cores told, by the executor or the run, it has no slots to count
    run = run_row(app_start(), env(), profile, executor_added("1", 1_000, cores=0, profile=1), app_end(2_000))
    assert run["task_slots"] is None


def test_the_jobs_still_running_at_the_end_are_listed_up_to_ten():
    assert still_running(list(range(12, 0, -1))) == (
        "12 jobs were still running at the application's end (jobs 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 2 more): "
        "the run was interrupted")
    assert still_running(list(range(10))).endswith("(jobs 0, 1, 2, 3, 4, 5, 6, 7, 8, 9): the run was interrupted")


# ---- input (eventlog_rows, eventlog_scans) --------------------------------------------------

def test_disk_cache_hits_count_whole_values_only():
    # the log writes SQL metrics' values as strings; a value of another type is none of them
    name = "cache hits size"
    accumulables = [{"Name": name, "Value": v} for v in ("100", 200, None, True, 1.5, [3], "x", "-7")]
    assert disk_cache_hit_bytes(accumulables + [{"Name": "other", "Value": "5"}, "junk"]) == 300
    assert disk_cache_hit_bytes(None) == 0


CACHED = {"Use Memory": True, "Use Disk": False, "Deserialized": True, "Replication": 1}


def test_a_stage_over_a_cached_rdd_adds_no_input_of_the_run():
    # stage 0 computes the persisted RDD 5 whole from the source (2 x 50 bytes); stage 1 reads
    # its cached blocks (2 x 30): the run read 100 bytes, though both stages' rows keep their tasks'
    cached = {"RDD ID": 5, "Name": "cached", "Number of Partitions": 2, "Storage Level": CACHED}
    tables, _ = rows(
        app_start(), env(), executor_added("1", 1_000),
        job_start(0, [0], 1_100), task_end(0, 1, 0, 1_100, 1_200, input_bytes=50),
        task_end(0, 2, 1, 1_100, 1_200, input_bytes=50),
        stage_completed(0, 2, 1_100, 1_200, rdds=[cached]), job_end(0, 1_200),
        job_start(1, [1], 1_300), task_end(1, 3, 0, 1_300, 1_400, input_bytes=30),
        task_end(1, 4, 1, 1_300, 1_400, input_bytes=30),
        stage_completed(1, 2, 1_300, 1_400, rdds=[{"RDD ID": 6, "Name": "r", "Number of Partitions": 2}, cached]),
        job_end(1, 1_400), app_end(2_000))
    assert [s["input_bytes"] for s in tables["stages"].to_pylist()] == [100, 60]
    assert tables["runs"].to_pylist()[0]["input_bytes"] == 100
    assert tables["run_inputs"].to_pylist()[0]["measured_input_bytes"] == 100


def test_a_partition_read_again_by_a_retried_attempt_in_one_job_counts_once():
    # stage 3's attempt 0 read partition 0 (100 bytes) and failed; attempt 1, in the same job,
    # ran partitions 0 and 1 again (100 + 50): the run read 150 bytes, the stage rows 100 + 150
    tables, _ = rows(
        app_start(), env(), executor_added("1", 1_000), job_start(0, [3], 1_000),
        task_end(3, 1, 0, 1_000, 1_100, input_bytes=100, partition=0),
        task_end(3, 2, 1, 1_000, 1_100, status="ExceptionFailure", input_bytes=7, partition=1),
        stage_completed(3, 2, 1_000, 1_100, failed=True),
        task_end(3, 3, 0, 1_200, 1_300, attempt=1, input_bytes=100, partition=0),
        task_end(3, 4, 1, 1_200, 1_300, attempt=1, input_bytes=50, partition=1),
        stage_completed(3, 2, 1_200, 1_300, attempt=1), job_end(0, 1_300), app_end(2_000))
    assert [s["input_bytes"] for s in tables["stages"].to_pylist()] == [107, 150]
    assert tables["runs"].to_pylist()[0]["input_bytes"] == 150


def test_disk_cache_hits_add_to_the_input_of_a_stage_that_reads_the_source_only():
    # Databricks' disk cache served 1,000 bytes to stage 0's scans beside the 100 its tasks
    # counted; stage 1, over a cached RDD, read no source (its hits are not the run's either)
    hits = [{"ID": 9, "Name": "cache hits size", "Value": "1000"}]
    cached = {"RDD ID": 5, "Name": "cached", "Number of Partitions": 1, "Storage Level": CACHED}
    tables, _ = rows(
        app_start(), env(), executor_added("1", 1_000),
        task_end(0, 1, 0, 1_100, 1_200, input_bytes=100),
        stage_completed(0, 1, 1_100, 1_200, rdds=[cached], accumulables=hits),
        task_end(1, 2, 0, 1_300, 1_400, input_bytes=10),
        stage_completed(1, 1, 1_300, 1_400, rdds=[{"RDD ID": 6, "Name": "r", "Number of Partitions": 1}, cached],
                        accumulables=[{"ID": 9, "Name": "cache hits size", "Value": "500"}]),
        app_end(2_000))
    assert tables["runs"].to_pylist()[0]["input_bytes"] == 1_100


SCAN_PLAN = {"Event": "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart", "executionId": 0,
             "sparkPlanInfo": {"nodeName": "Scan parquet", "children": [], "metrics": [
                 {"name": "size of files read", "accumulatorId": 100},
                 {"name": "number of files read", "accumulatorId": 101},
                 {"name": "number of output rows", "accumulatorId": 102}]}}


def scan_stage(stage: int, ran: int, partitions: int, t: int) -> list[dict]:
    """A stage of the scan's execution (0) whose successful tasks ran ``ran`` of its
    ``partitions`` partitions, each counting 10 bytes of input."""
    return [job_start(stage, [stage], t, **{"spark.sql.execution.id": "0"}),
            *[task_end(stage, 10 * stage + p, p, t, t + 10, input_bytes=10, partition=p) for p in range(ran)],
            stage_completed(stage, ran, t, t + 10, rdd_id=stage + 1, partitions=partitions,
                            accumulables=[{"ID": 102, "Name": "number of output rows", "Value": "7"}]),
            job_end(stage, t + 10)]


def test_a_scans_input_is_its_files_size_in_the_share_of_partitions_that_ran():
    # the scan selected 3 files of 4,000 bytes; a malformed pair beside them in the driver's
    # update is skipped alone. A stage that ran 1 of its 4 partitions read a quarter of them,
    # one that ran all 4 then the rest: the files once, whatever the tasks' input metric (10 a task)
    updates = {"Event": "org.apache.spark.sql.execution.ui.SparkListenerDriverAccumUpdates", "executionId": 0,
               "accumUpdates": [[7], "x", [100, "4000"], [101, 3], ["101", 9]]}
    tables, b = rows(app_start(), env(), executor_added("1", 1_000), SCAN_PLAN, updates,
                     *scan_stage(0, 1, 4, 1_100), *scan_stage(1, 4, 4, 1_200), app_end(2_000))
    assert b.bad_lines == 0
    assert [s["input_bytes"] for s in tables["stages"].to_pylist()] == [10, 40]
    assert tables["runs"].to_pylist()[0]["input_bytes"] == 4_000
    assert tables["stage_scans"].to_pylist() == [
        {"run_id": "app-1", "stage_id": 0, "stage_attempt_id": 0, "scan_files": 3},
        {"run_id": "app-1", "stage_id": 1, "stage_attempt_id": 0, "scan_files": 3}]
    tables, _ = rows(app_start(), env(), executor_added("1", 1_000), SCAN_PLAN, updates,
                     *scan_stage(0, 1, 4, 1_100), app_end(2_000))
    assert tables["runs"].to_pylist()[0]["input_bytes"] == 1_000


def test_a_scans_share_is_the_share_of_its_partitions_that_ran():
    # one partition of four read a quarter of the files; the product is truncated as the listener's
    assert counted_bytes(1_000, 1, 4) == 250
    assert counted_bytes(1_001, 3, 4) == 750
    assert counted_bytes(1_000, 4, 4) == counted_bytes(1_000, 5, 4) == counted_bytes(1_000, 0, 0) == 1_000


# ---- times (eventlog_rows) ------------------------------------------------------------------

def test_a_tasks_metrics_are_the_logs_with_nanoseconds_in_ms():
    metrics = {"Executor Run Time": 9, "Executor CPU Time": 2_000_000, "Executor Deserialize Time": 3,
               "Executor Deserialize CPU Time": 4_000_000, "JVM GC Time": 5, "Result Serialization Time": 6,
               "Result Size": 7, "Input Metrics": {"Bytes Read": 8, "Records Read": 9},
               "Output Metrics": {"Bytes Written": 10, "Records Written": 11},
               "Shuffle Read Metrics": {"Remote Bytes Read": 12, "Local Bytes Read": 13, "Fetch Wait Time": 14,
                                        "Total Records Read": 15},
               "Shuffle Write Metrics": {"Shuffle Bytes Written": 16, "Shuffle Write Time": 17_000_000,
                                         "Shuffle Records Written": 18},
               "Memory Bytes Spilled": 19, "Disk Bytes Spilled": 20, "Peak Execution Memory": 21}
    tables, _ = rows(app_start(), env(), task_end(0, 1, 0, 1_000, 1_100, metrics=metrics),
                     stage_completed(0, 1, 1_000, 1_100), app_end(2_000))
    expected = {"executor_run_time_ms": 9, "executor_cpu_time_ms": 2.0, "executor_deserialize_time_ms": 3,
                "executor_deserialize_cpu_time_ms": 4.0, "jvm_gc_time_ms": 5, "result_serialization_time_ms": 6,
                "result_size_bytes": 7, "input_bytes": 8, "input_records": 9, "output_bytes": 10,
                "output_records": 11, "shuffle_remote_read_bytes": 12, "shuffle_local_read_bytes": 13,
                "shuffle_read_bytes": 25, "shuffle_fetch_wait_ms": 14, "shuffle_read_records": 15,
                "shuffle_write_bytes": 16, "shuffle_write_time_ms": 17.0, "shuffle_write_records": 18,
                "memory_spilled_bytes": 19, "disk_spilled_bytes": 20, "peak_execution_memory_bytes": 21}
    assert sorted(expected) == sorted(S.METRIC_NAMES)
    task, stage = tables["tasks"].to_pylist()[0], tables["stages"].to_pylist()[0]
    assert {m: task[m] for m in expected} == {m: stage[m] for m in expected} == expected
    run = tables["runs"].to_pylist()[0]
    assert (run["shuffle_read_bytes"], run["shuffle_write_bytes"], run["executor_run_time_ms"]) == (25, 16, 9)
    # a metric the log leaves out is 0 (Spark writes none it did not measure)
    tables, _ = rows(app_start(), env(), task_end(0, 1, 0, 1_000, 1_100, metrics={"JVM GC Time": 0}),
                     app_end(2_000))
    assert set(tables["tasks"].select(S.METRIC_NAMES).to_pylist()[0].values()) == {0}


def test_task_durations_and_their_stage_quantiles():
    # four tasks of 100..400 ms: numpy's linear quantiles, median 250 and p90 370; a task
    # without a launch time has no duration and one not finished 0
    tables, _ = rows(app_start(), env(), executor_added("1", 1_000),
                     *[task_end(0, i, i, 1_000, 1_000 + 100 * i) for i in range(1, 5)],
                     stage_completed(0, 4, 1_000, 1_400), app_end(2_000))
    assert tables["tasks"]["duration_ms"].to_pylist() == [100, 200, 300, 400]
    st = tables["stages"].to_pylist()[0]
    assert [st[f"task_duration_{q}_ms"] for q in ("min", "median", "p90", "max")] == [100, 250, 370, 400]
    no_launch = task_end(1, 9, 0, 0, 1_500)
    del no_launch["Task Info"]["Launch Time"]
    unfinished = task_end(1, 10, 1, 1_000, 0)
    tables, _ = rows(app_start(), env(), no_launch, unfinished, app_end(2_000))
    assert tables["tasks"]["duration_ms"].to_pylist() == [None, 0]


def test_an_application_start_with_an_empty_app_id_is_no_start():
    b = RunBuilder()
    b.feed([_line(app_start() | {"App ID": ""}), _line(app_end(2_000))])
    assert b.bad_app_start == "its App ID is ''" and b.bad_lines == 1
    with pytest.raises(ValueError, match="no SparkListenerApplicationStart"):
        b.finish(in_progress=False)


def test_a_bad_line_followed_by_task_events_is_damage_in_the_middle():
    # Spark writes whole lines: only the last can be cut. A bad line 2 followed by a task's
    # start or end (events no other row needs) is damage in the middle, not a cut end
    start = {"Event": "SparkListenerTaskStart", "Stage ID": 0, "Task Info": {}}
    for after in (start, task_end(0, 1, 0, 1_000, 1_100)):
        b = RunBuilder()
        b.feed([_line(app_start()), b'{"Stage ID": 0, "Ev', _line(after)])
        assert (b.first_not_json, b.not_json_before_end(), b.content_lines) == (2, 2, 3)
    b = RunBuilder()
    b.feed([_line(app_start()), _line(start), _line(task_end(0, 1, 0, 1_000, 1_100)), b""])
    assert (b.events, b.skipped, b.bad_lines, b.not_json_before_end()) == (2, 1, 0, None)
    # a bad last line (then only blank ones) is a log cut while it was written
    b.feed([b'{"Stage ID": 0, "Ev', b"", b"  "])
    assert (b.first_not_json, b.not_json_before_end(), b.lines) == (5, None, 7)


def test_a_line_cut_inside_its_event_name_is_a_bad_line():
    # it was skipped as an event no row needs: a log cut there ingested without a warning, and
    # such a line in the middle was no damage
    b = RunBuilder()
    b.feed([_line(app_start()), b'{"Event":"SparkListenerJobSta', _line(app_end(2_000))])
    assert (b.bad_lines, b.skipped, b.not_json_before_end()) == (1, 0, 2)
    assert b.warnings == ["line 2 is not valid JSON; skipped"]


@pytest.mark.parametrize("cut", [b'{"Event":"SparkListenerTaskStart","Stage ID":0,"Stage Attempt ID":0,"Task Info":{"Ta',
                                 b'{"Event":"SparkListenerBlockManagerAdded","Block Manager ID":{"Exec'])
def test_a_cut_line_of_an_event_no_row_needs_is_a_bad_line(cut):
    # such lines are skipped undecoded: cut last, the log was ingested without the one warning
    # docs/ingest.md promises; cut in the middle, the damage went unnoticed
    last = RunBuilder()
    last.feed([_line(app_start()), cut])
    assert (last.bad_lines, last.skipped, last.not_json_before_end()) == (1, 0, None)
    assert last.warnings == ["line 2 is not valid JSON; skipped"]
    middle = RunBuilder()
    middle.feed([_line(app_start()), cut, _line(app_end(2_000))])
    assert middle.not_json_before_end() == 2
    # whole lines of both kinds are still skipped undecoded, and trailing blanks are no damage
    whole = RunBuilder()
    whole.feed([_line(app_start()), _line({"Event": "SparkListenerTaskStart", "Stage ID": 0}),
                _line({"Event": "SparkListenerBlockManagerAdded"}), b"", _line(app_end(2_000))])
    assert (whole.bad_lines, whole.skipped, whole.warnings) == (0, 2, [])


def test_the_first_ten_bad_lines_are_named_and_the_rest_counted():
    b = RunBuilder()
    b.feed([_line(app_start()), *[b"not json"] * 11, _line(app_end(2_000))])
    b.finish(in_progress=False)
    assert [w.split(" is ")[0] for w in b.warnings[:10]] == [f"line {n}" for n in range(2, 12)]
    assert b.warnings[10:] == ["1 more bad lines skipped"]


def test_failed_and_resubmitted_tasks_add_up_in_stage_and_run_rows():
    # stage 0: 2 successes, 1 failure and 1 resubmitted end before it completed, 1 after (its
    # output lost later): 2 failed in its row, 3 in the run's, no task row for a resubmit
    resubmit = task_end(0, 1, 0, 1_000, 1_100, task_type="ShuffleMapTask") | {"Task End Reason": {"Reason": "Resubmitted"}}
    tables, _ = rows(app_start(), env(), executor_added("1", 1_000),
                     task_end(0, 1, 0, 1_000, 1_100, run_ms=5), task_end(0, 2, 1, 1_000, 1_100, run_ms=7),
                     task_end(0, 3, 2, 1_000, 1_100, run_ms=11, status="ExceptionFailure"), resubmit,
                     stage_completed(0, 3, 1_000, 1_100), resubmit, app_end(2_000))
    st, run = tables["stages"].to_pylist()[0], tables["runs"].to_pylist()[0]
    assert tables["tasks"]["status"].to_pylist() == ["SUCCESS", "SUCCESS", "FAILED"]
    assert (st["num_task_rows"], st["num_failed_tasks"], st["executor_run_time_ms"]) == (3, 2, 23)
    assert (run["num_tasks"], run["num_failed_tasks"], run["executor_run_time_ms"]) == (3, 3, 23)
    clean = rows(app_start(), env(), task_end(0, 1, 0, 1_000, 1_100), stage_completed(0, 1, 1_000, 1_100),
                 app_end(2_000))[0]
    assert clean["runs"].to_pylist()[0]["num_failed_tasks"] == clean["stages"].to_pylist()[0]["num_failed_tasks"] == 0


def test_a_timestamp_past_the_stores_int64_is_a_bad_line():
    for ts in (-2**63 - 1, 2**63):
        b = RunBuilder()
        b.feed([_line(app_start(ts))])
        assert b.bad_app_start == f"timestamp {ts} is out of range" and not b.app
    b = RunBuilder()
    b.feed([_line(app_start(-2**63)), _line(app_end(2**63 - 1))])
    assert (b.app["start_ms"], b.end_ms) == (-2**63, 2**63 - 1)


def test_a_log_cut_short_ends_at_its_latest_event_not_its_last_line():
    # no application end: the run ends at the latest time the log tells, a task that finished at
    # 1,500 even though a task written after it finished at 1,400
    tables, _ = rows(app_start(1_000), env(), executor_added("1", 1_000),
                     task_end(0, 1, 0, 1_100, 1_500), task_end(0, 2, 1, 1_100, 1_400))
    run = tables["runs"].to_pylist()[0]
    assert (run["status"], run["end_ms"], run["wall_ms"]) == ("incomplete", None, 500)
