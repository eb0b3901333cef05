"""Event-log ingest on real logs: every shared log, every codec, rolling and in-progress forms.

Expected counts are computed here independently of sparkpredict: pyarrow's zstd stream (or the
plain bytes) and ``json.loads`` of every line, as the issue's reference does.
"""
from __future__ import annotations

import functools
import json
import shutil
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from listener_replay import replay

from sparkpredict import store
from sparkpredict.capture.eventlog import parse_event_log
from sparkpredict.capture.eventlog_ingest import ingest_event_logs
from sparkpredict.cli import main as cli_main
from sparkpredict.errors import IngestError, InputError
from sparkpredict.store import schema as S

LOGS = Path(__file__).parent / "data" / "eventlogs"
SHARED = sorted(p.name for p in LOGS.glob("*") if p.suffix in (".zstd", ".json"))
SPARK4 = LOGS / "spark4"
PLAIN4 = SPARK4 / "local-1795969313432"  # the same job logged uncompressed


@functools.cache
def reference(name: str) -> dict:
    """Counts and sums from decoding every line of the log with json.loads."""
    path = LOGS / name
    if path.suffix == ".zstd":
        data = pa.CompressedInputStream(pa.OSFile(str(path)), "zstd").read()
    else:
        data = path.read_bytes()
    out = {"StageCompleted": 0, "TaskEnd": 0, "ExecutorAdded": 0, "ExecutorRemoved": 0,
           "run_time": 0, "shuffle_write": 0, "input": 0, "stages": {}, "stage_sums": {},
           "Resubmitted": 0, "stage_acc": {}, "scan_files": {}}
    sums: dict = {}  # as the listener: a stage sums the tasks that ended before it completed
    files_size: dict = {}  # the scans' "size of files read" metric ids -> their plan node
    for line in data.splitlines():
        if not line.strip():
            continue
        ev = json.loads(line)
        kind = ev["Event"].replace("SparkListener", "")
        if "sparkPlanInfo" in ev:
            todo = [ev["sparkPlanInfo"]]
            while todo:
                node = todo.pop()
                todo += node["children"]
                files_size |= {m["accumulatorId"]: node["simpleString"] for m in node["metrics"]
                               if m["name"] == "size of files read"}
        if kind.endswith("DriverAccumUpdates"):
            out["scan_files"] |= {i: (files_size[i], v) for i, v in ev["accumUpdates"] if i in files_size}
        if kind == "StageCompleted":
            si = ev["Stage Info"]
            key = (si["Stage ID"], si["Stage Attempt ID"])
            if key in out["stages"]:
                # a failed barrier stage attempt's completion, posted again for each of its
                # tasks that ended after it: its first is the attempt's row
                continue
        if kind in out:
            out[kind] += 1
        if kind == "StageCompleted":
            out["stages"][key] = si["Number of Tasks"]
            out["stage_sums"][key] = sums.pop(key, (0, 0, 0))
            out["stage_acc"][key] = {a["Name"]: int(a["Value"]) for a in si.get("Accumulables", [])
                                     if a.get("Name") in ("cache hits size", "size of row groups before filtering")}
        if kind == "TaskEnd" and ev["Task End Reason"]["Reason"] == "Resubmitted":
            # a second end of an attempt that already ended: no task row of its own
            out["TaskEnd"] -= 1
            out["Resubmitted"] += 1
            continue
        if kind == "TaskEnd":
            tm = ev.get("Task Metrics") or {}
            rt = tm.get("Executor Run Time", 0)
            sw = tm.get("Shuffle Write Metrics", {}).get("Shuffle Bytes Written", 0)
            out["run_time"] += rt
            out["shuffle_write"] += sw
            out["input"] += tm.get("Input Metrics", {}).get("Bytes Read", 0)
            key = (ev["Stage ID"], ev["Stage Attempt ID"])
            if key not in out["stage_sums"]:
                n, rt0, sw0 = sums.get(key, (0, 0, 0))
                sums[key] = (n + 1, rt0 + rt, sw0 + sw)
    return out


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """Every shared log ingested into one store (each log is read once for the whole module)."""
    st = store.open(tmp_path_factory.mktemp("shared") / "st", create=True)
    report = ingest_event_logs([LOGS / n for n in SHARED], st)
    assert (report.files_ingested, report.files_failed) == (len(SHARED), 0), report.errors
    outcomes = {Path(f.path).name: f for f in report.files}

    def rows(name: str):
        """The store's rows of that log's run, and the file's ingest outcome."""
        o = outcomes[name]
        tables = {t: st.read(t, form="arrow", run_ids=[o.run_id]) for t in S.TABLES}
        return tables, o

    return rows


def assert_stage_sums_match_tasks(tables: dict[str, pa.Table]) -> None:
    """For logs where no task ends after its stage completed: stage rows = sums of task rows."""
    tasks, stages = tables["tasks"], tables["stages"]
    assert pc.sum(stages["num_task_rows"]).as_py() == tasks.num_rows
    agg = tasks.group_by(["stage_id", "stage_attempt_id"]).aggregate(
        [(m, "sum") for m in S.METRIC_NAMES] + [("task_id", "count")])
    by_key = {(r["stage_id"], r["stage_attempt_id"]): r for r in agg.to_pylist()}
    for st in stages.to_pylist():
        t = by_key.get((st["stage_id"], st["stage_attempt_id"]))
        assert st["num_task_rows"] == (t["task_id_count"] if t else 0)
        for m in S.METRIC_NAMES:
            assert st[m] == pytest.approx(t[f"{m}_sum"] if t else 0), (st["stage_id"], m)


@pytest.mark.parametrize("name", SHARED)
def test_shared_log_rows_equal_its_events(name, shared):
    ref, (tables, _) = reference(name), shared(name)
    assert tables["stages"].num_rows == ref["StageCompleted"]
    assert tables["tasks"].num_rows == ref["TaskEnd"]
    assert tables["executors"].num_rows == ref["ExecutorAdded"]
    run = tables["runs"].to_pylist()[0]
    assert run["num_tasks"] == ref["TaskEnd"] and run["num_stages"] == ref["StageCompleted"]
    assert run["executor_run_time_ms"] == ref["run_time"]
    assert run["shuffle_write_bytes"] == ref["shuffle_write"]
    assert (pc.sum(tables["tasks"]["input_bytes"]).as_py() or 0) == ref["input"]
    got_stages = {(s["stage_id"], s["stage_attempt_id"]): s["num_tasks"]
                  for s in tables["stages"].to_pylist()}
    assert got_stages == ref["stages"]
    got_sums = {(s["stage_id"], s["stage_attempt_id"]): (s["num_task_rows"], s["executor_run_time_ms"],
                                                         s["shuffle_write_bytes"])
                for s in tables["stages"].to_pylist()}
    assert got_sums == ref["stage_sums"]
    assert run["source"] == "eventlog" and run["source_path"].endswith(name)


def test_dynamic_allocation_timeline_15_added_14_removed(shared):
    tables, _ = shared("eventlog_4nodes_8cores_dynamic_alloc.zstd")
    ex = tables["executors"]
    assert ex.num_rows == 15
    assert ex["removed_ms"].null_count == 1 and pc.count(ex["removed_ms"]).as_py() == 14
    run = tables["runs"].to_pylist()[0]
    assert 1 <= run["executors_mean"] < run["executors_max"] <= 15
    assert run["status"] == "succeeded" and run["end_ms"] - run["start_ms"] == run["wall_ms"]


def test_run_row_fields_from_environment_and_app_events(shared):
    run = shared("nds_q72_dataproc_2_2.zstd")[0]["runs"].to_pylist()[0]
    props = json.loads(run["properties_json"])
    assert run["spark_version"] == "3.5.3" and run["master"] == props["spark.master"] == "yarn"
    assert all(k.startswith("spark.") for k in props) and "spark.executor.memory" in props
    assert run["executors_max"] == 8 and run["executor_cores"] == 16 and run["task_slots"] == 128
    assert run["input_bytes_source"] == "measured" and run["input_bytes"] > 18e9
    assert run["job"] == run["app_name"] and run["source"] == "eventlog"


def test_log_without_application_end_is_incomplete(shared):
    tables, outcome = shared("nds_q88_photon_db_13_3.zstd")
    run = tables["runs"].to_pylist()[0]
    assert run["status"] == "incomplete" and run["end_ms"] is None and run["wall_ms"] > 0
    assert any("ApplicationEnd" in w for w in outcome.warnings)
    # no LogStart line: Databricks' own first line names the version
    assert run["spark_version"] == "3.4.1"


def test_input_counts_scans_that_wait_on_other_stages_by_their_files_size(shared):
    # Databricks runs its big scans as stages whose parents compute the pruning filters: their
    # task metrics read 53 GB, its stages without parents 2.8 MB. No RDD in it is persisted.
    tables, _ = shared("nds_q88_photon_db_13_3.zstd")
    run, st = tables["runs"].to_pylist()[0], tables["stages"].to_pandas()
    ok = st[st.status == "succeeded"]
    assert ok.input_bytes.sum() == 52_997_115_316
    assert ok.loc[ok.parent_stage_ids_json == "[]", "input_bytes"].sum() < 3e6
    # Those metrics count only the disk cache's misses (159 GB more were its hits), and only the
    # 4 columns read of store_sales' 23: how much of the same query's input they count depends
    # on the cache and on the reader. Each scan's files, as its "size of files read" tells the
    # driver, do not: q88 scans store_sales, 1,824 files of 439 GB, 8 times, and 10 small tables.
    ref = reference("nds_q88_photon_db_13_3.zstd")
    hits = sum(a.get("cache hits size", 0) for a in ref["stage_acc"].values())
    assert hits > 150e9
    scans = ref["scan_files"]
    store_sales = [v for node, v in scans.values() if "store_sales" in node]
    assert store_sales == [439_273_155_043] * 8 and len(scans) == 18
    assert run["input_bytes"] == sum(v for _, v in scans.values()) == 8 * 439_273_155_043 + 9_355_224


#: run columns the listener takes from its own JVM or the ingest from the file, not the events
NOT_FROM_EVENTS = {"spark_version", "source", "source_path", "source_fingerprint", "sparkpredict_version",
                   "updated_ms", "properties_json"}


@pytest.mark.spark
def test_the_real_listener_fed_each_cluster_log_records_what_the_ingest_records(shared, listener_jar, tmp_path):
    """Spark's own ReplayListenerBus posts each real cluster log's events to the real listener
    (in a JVM built with that application's properties): YARN with failures and lost
    executors, dynamic allocation, resource profiles, Spark 2.3, Databricks' disk cache. The
    two capture paths must record the same rows."""
    jobs, ingested = [], {}
    for name in SHARED:
        tables, _ = shared(name)
        ingested[name] = tables
        props = json.loads(tables["runs"]["properties_json"][0].as_py())
        jobs.append([str(LOGS / name), str(tmp_path / name), props])
    results = replay(listener_jar, jobs)
    assert [(r["replayed"], r["error"]) for r in results] == [(True, None)] * len(SHARED), results
    for name in SHARED:
        got = {t: store.open(tmp_path / name).read(t, form="arrow").to_pandas()
               for t in ("runs", "stages", "tasks", "executors", "stage_scans")}
        want = {t: ingested[name].get(t, S.empty_table(t)).to_pandas() for t in got}
        key = {"stages": ["stage_id", "stage_attempt_id"], "tasks": ["task_id", "attempt"],
               "executors": ["executor_id", "added_ms"], "stage_scans": ["stage_id", "stage_attempt_id"]}
        for t, by in key.items():
            a, b = (x[t].sort_values(by).reset_index(drop=True) for x in (got, want))
            if t == "tasks":  # a task end without metrics: Spark's reader gives zeros, the ingest nulls
                a, b = (x.fillna({m: 0 for m in S.METRIC_NAMES}) for x in (a, b))
            assert list(a.columns) == list(b.columns)
            pd.testing.assert_frame_equal(a, b, check_dtype=False, obj=f"{name} {t}")
        lrun, erun = got["runs"].iloc[0], want["runs"].iloc[0]
        if erun.status == "incomplete":
            # no application end: the listener records the run when its JVM exits, as killed
            assert (lrun.status, erun.status) == ("killed", "incomplete") and lrun.input_bytes == erun.input_bytes
            continue
        for col in sorted(set(got["runs"].columns) - NOT_FROM_EVENTS):
            assert str(lrun[col]) == str(erun[col]), (name, col, lrun[col], erun[col])
    # executors of two resource profiles, 4 + 2 + 2 cores, the 2-core ones at 2 cpus a task: 6
    # tasks at once, not 3 x 4 (both paths, as the loop above compares every run column)
    assert ingested["rp_nosql_eventlog.json"]["runs"]["task_slots"][0].as_py() == 6
    # the SQL scans' files in both (3.5 TB), not the footers or the disk cache's misses
    q88 = ingested["nds_q88_photon_db_13_3.zstd"]["runs"]["input_bytes"][0].as_py()
    assert q88 > 3e12
    # the files the scans selected, in both: 8 Parquet files read by the map stage and by its
    # re-run (Spark 4's "number of files read"); Photon's "files read" for q88
    aqe = ingested["aqe_executors_killed_spark4.zstd"]["stage_scans"].to_pylist()
    assert [(r["stage_id"], r["stage_attempt_id"], r["scan_files"]) for r in aqe] == [(1, 0, 8), (2, 1, 8)]
    q88_files = ingested["nds_q88_photon_db_13_3.zstd"]["stage_scans"]["scan_files"].to_pylist()
    assert len(q88_files) == 18 and None not in q88_files and max(q88_files) > 1


def test_failed_tasks_counted_and_spark_2_fields(tmp_path, shared):
    failed = shared("tasks_executors_fail_compressed_eventlog.zstd")[0]
    run = failed["runs"].to_pylist()[0]
    statuses = failed["tasks"]["status"].to_pylist()
    resubmitted = reference("tasks_executors_fail_compressed_eventlog.zstd")["Resubmitted"]
    assert run["num_failed_tasks"] == sum(s != "SUCCESS" for s in statuses) + resubmitted > resubmitted
    assert "FAILED" in statuses
    tasks = shared("sparklens_local-1532512550423.json")[0]["tasks"]
    assert tasks.num_rows == 8 and set(tasks["status"].to_pylist()) == {"SUCCESS"}
    # Spark < 3.0 kept the peak execution memory only among the task's accumulables.
    lines = PLAIN4.read_bytes().splitlines()
    i = next(i for i, ln in enumerate(lines) if ln.startswith(b'{"Event":"SparkListenerTaskEnd"'))
    ev = json.loads(lines[i])
    del ev["Task Metrics"]["Peak Execution Memory"]
    ev["Task Info"]["Accumulables"].append({"ID": 1, "Name": "internal.metrics.peakExecutionMemory",
                                            "Update": 12345, "Value": 12345})
    lines[i] = json.dumps(ev, separators=(",", ":")).encode()
    (tmp_path / "old").write_bytes(b"\n".join(lines))
    got = parse_event_log(tmp_path / "old").tables["tasks"]
    assert got["peak_execution_memory_bytes"][0].as_py() == 12345


def test_resubmitted_task_ends_are_not_second_rows(shared):
    """When an executor is lost, Spark posts a second TaskEnd (reason Resubmitted, same task id
    and attempt, no metrics) for each shuffle map task whose output it held. In this log: 50,
    all in stage 238 before it completed."""
    tables, _ = shared("tasks_executors_fail_compressed_eventlog.zstd")
    tasks = tables["tasks"].to_pandas()
    assert not tasks.duplicated(["task_id", "attempt"]).any()
    # the Resubmitted ends were SUCCESS without metrics; only failed attempts lack them now
    assert (tasks.loc[tasks.executor_run_time_ms.isna(), "status"] != "SUCCESS").all()
    assert len(tasks[(tasks.stage_id == 238) & (tasks.stage_attempt_id == 0)]) == 280 - 50
    stage = tables["stages"].to_pandas().set_index(["stage_id", "stage_attempt_id"]).loc[(238, 0)]
    # Before the stage completed: 220 successes, 2 failures (FetchFailed, ExecutorLostFailure), 50 Resubmitted
    # ends (counted with json.loads). Rows for the 222 attempts; as Spark's UI counts them, the 50
    # resubmissions are failed tasks of the stage (and of the run, see the test above).
    assert stage.num_tasks == 200 and stage.num_task_rows == 272 - 50
    assert stage.num_failed_tasks == 2 + 50


# ---- Spark 4 logs written by Spark itself, in every codec ------------------------------------
CODEC_LOGS = sorted(p.name for p in SPARK4.glob("local-*") if p != PLAIN4)  # each against the plain one
assert len(CODEC_LOGS) >= 4, CODEC_LOGS


@pytest.mark.parametrize("name", CODEC_LOGS)
def test_every_spark_codec_gives_the_same_rows(name):
    """The same job was logged with each codec: identical counts and record totals."""
    plain = parse_event_log(PLAIN4).tables
    got = parse_event_log(SPARK4 / name)
    assert not got.warnings and got.status == "succeeded"
    for table in ("stages", "tasks"):
        assert got.tables[table].num_rows == plain[table].num_rows > 0
    for col in ("shuffle_write_records", "shuffle_read_records", "result_size_bytes"):
        assert pc.sum(got.tables["tasks"][col]).as_py() > 0
    for col in ("shuffle_write_records", "shuffle_read_records"):
        assert pc.sum(got.tables["tasks"][col]).as_py() == pc.sum(plain["tasks"][col]).as_py()
    assert got.tables["runs"]["spark_version"][0].as_py().startswith("4.")
    assert_stage_sums_match_tasks(got.tables)


def test_rolling_folder_with_several_files(tmp_path):
    folder = next(SPARK4.glob("eventlog_v2_*"))
    assert len(list(folder.glob("events_*"))) >= 2
    got = parse_event_log(folder)
    assert got.status == "succeeded" and not got.warnings
    assert got.tables["tasks"].num_rows == 5005 and got.tables["stages"].num_rows == 4
    assert_stage_sums_match_tasks(got.tables)
    # The same folder while the application was still running: status marker .inprogress.
    live = tmp_path / folder.name
    shutil.copytree(folder, live)
    for f in live.glob("appstatus_*"):
        f.rename(f.with_name(f.name + ".inprogress"))
    assert parse_event_log(live).status == "incomplete"


def test_inprogress_suffix_and_truncated_last_line(tmp_path):
    src = PLAIN4
    lines = src.read_bytes().splitlines(keepends=True)
    n_task_end = sum(b'"SparkListenerTaskEnd"' in ln for ln in lines)
    cut = [i for i, ln in enumerate(lines) if b'"SparkListenerTaskEnd"' in ln][-1]
    log = tmp_path / (src.name + ".inprogress")
    log.write_bytes(b"".join(lines[:cut]) + lines[cut][: len(lines[cut]) // 2])
    got = parse_event_log(log)
    assert got.status == "incomplete" and got.tables["runs"]["end_ms"][0].as_py() is None
    assert got.tables["tasks"].num_rows == n_task_end - 1
    # the one cut line gets one warning that says what happened, beside the one for .inprogress
    assert got.warnings == [(f"{log.name}: the last line (line {cut + 1}) ends in the middle of an "
                             "event, cut off while the log was being written or copied; skipped"),
                            "the log is in progress (.inprogress): recorded as incomplete"]
    assert got.lines == cut + 1 and got.damage is None
    # a last line that is whole but lacks its newline is an event like any other
    whole = tmp_path / "whole"
    whole.write_bytes(b"".join(lines).rstrip(b"\n"))
    assert not parse_event_log(whole).warnings
    assert parse_event_log(whole).tables["tasks"].num_rows == n_task_end


def test_a_cut_log_through_the_cli_gets_one_warning_for_its_cut_line(tmp_path, capsys):
    """The reviewer's reproduction: a real log cut in the middle of a line, renamed .inprogress."""
    from sparkpredict.cli import main

    src = LOGS / "sparklens_local-1532512550423.json"
    data = src.read_bytes()
    cut_at = data.index(b"\n", 40_000) - 100  # inside line 15, a task's end
    log = tmp_path / "local-1532512550423.inprogress"
    log.write_bytes(data[:cut_at])
    assert main(["ingest", str(log), "--store", str(tmp_path / "st")]) == 0
    out = capsys.readouterr().out
    warnings = [ln.strip() for ln in out.splitlines() if ln.strip().startswith("warning:")]
    assert warnings == [("warning: local-1532512550423.inprogress: the last line (line 15) ends in the "
                         "middle of an event, cut off while the log was being written or copied; skipped"),
                        "warning: the log is in progress (.inprogress): recorded as incomplete"], out
    # cut before the application's start: the error says the log was cut, not that it is foreign
    early = tmp_path / "early" / "local-1532512550423.inprogress"
    early.parent.mkdir()
    early.write_bytes(data[:20_000])  # inside line 4, the environment
    # (a log still being written: Spark has not written its start yet; NotWrittenYet, pending)
    with pytest.raises(IngestError, match="ends after 4 lines, before its SparkListenerApplicationStart "
                                          r"event: Spark has not written it yet \(.inprogress\)") as e:
        parse_event_log(early)
    assert "complete copy" in e.value.fix


def test_a_log_that_begins_as_spark_logs_do_but_ends_before_its_application_start_says_it_was_cut(tmp_path):
    """Spark writes SparkListenerLogStart first: a log that has it lost its end, also where the
    copy ended between two lines, or inside the first one. Those read "not a Spark event log, or
    its beginning is missing". A log without its beginning still says that."""
    data = (LOGS / "sparklens_local-1532512550423.json").read_bytes()
    lines = data.split(b"\n")
    ends = {"between lines 2 and 3": len(lines[0]) + len(lines[1]) + 2,
            "after line 1": len(lines[0]) + 1,
            "inside line 1": 40}  # '{"Event":"SparkListenerLogStart","Spark' and no more
    for what, at in ends.items():
        folder = tmp_path / what.replace(" ", "-")
        folder.mkdir()
        # a finished log cut so was cut; one still being written has not got there yet
        for name, said in (("local-1532512550423", "it was cut off while being written, or copied in part"),
                           ("local-1532512550423.inprogress", r"Spark has not written it yet \(.inprogress\)")):
            (folder / name).write_bytes(data[:at])
            with pytest.raises(IngestError, match="before its SparkListenerApplicationStart event: " + said):
                parse_event_log(folder / name)
    headless = tmp_path / "headless"
    headless.write_bytes(b"\n".join(lines[1:4]) + b"\n")  # no LogStart, no ApplicationStart
    with pytest.raises(IngestError, match="not a Spark event log, or its beginning is missing"):
        parse_event_log(headless)


def test_unknown_events_and_key_order_are_fine(tmp_path):
    src = PLAIN4
    lines = src.read_bytes().splitlines()
    extra = [b'{"Event":"com.example.MyListenerEvent","payload":[1,2,3]}', b"",
             b'{"Stage ID":0,"Event":"SparkListenerJobStart","Job ID":99,"Stage IDs":[]}']
    log = tmp_path / "app"
    log.write_bytes(b"\n".join(lines[:3] + extra + lines[3:]) + b"\n")
    got = parse_event_log(log)
    assert not got.warnings
    assert got.tables["runs"]["num_jobs"][0].as_py() == sum(b"JobStart" in ln for ln in lines) + 1


def test_corrupt_and_foreign_files_fail_alone(tmp_path):
    src = next(SPARK4.glob("local-*.zstd"))
    cut = tmp_path / "cut.zstd"
    cut.write_bytes(src.read_bytes()[: src.stat().st_size * 3 // 4])
    got = parse_event_log(cut)
    assert got.status == "incomplete" and any("ends early" in w for w in got.warnings)
    bad = tmp_path / "noise.lz4"
    bad.write_bytes(b"\x00garbage" * 100)
    with pytest.raises(IngestError, match="cannot decode as lz4"):
        parse_event_log(bad)
    text = tmp_path / "notes"
    text.write_text("hello\nworld\n")
    with pytest.raises(IngestError, match="no SparkListenerApplicationStart"):
        parse_event_log(text)


# ---- ingest into a store: idempotence and atomicity ------------------------------------------
def test_ingest_is_idempotent_and_reads_only_new_logs(tmp_path):
    folder = tmp_path / "history"
    folder.mkdir()
    small = sorted(SPARK4.glob("local-*"))
    shutil.copy(small[0], folder)
    shutil.copy(LOGS / "sparklens_local-1532512550423.json", folder)
    st = store.open(tmp_path / "st", create=True)
    r1 = ingest_event_logs(folder, st)
    assert (r1.files_ingested, r1.files_failed, r1.runs_added) == (2, 0, 2)
    n_tasks = len(st.tasks())
    r2 = ingest_event_logs(folder, st)
    assert (r2.files_unchanged, r2.files_ingested) == (2, 0)
    shutil.copy(LOGS / "rp_nosql_eventlog.json", folder)
    r3 = ingest_event_logs(folder, st)
    assert (r3.files_unchanged, r3.files_ingested) == (2, 1)
    # The same application under another name adds nothing.
    shutil.copy(small[0], tmp_path / ("renamed-copy" + small[0].suffix))
    r4 = ingest_event_logs(tmp_path / ("renamed-copy" + small[0].suffix), st)
    assert r4.files_existing == 1 and r4.runs_added == 0
    assert len(st.runs()) == 3 and len(st.tasks()) == n_tasks + 4
    runs = st.runs()
    assert set(runs.source) == {"eventlog"} and runs.source_fingerprint.notna().all()


def test_bad_file_does_not_stop_the_others(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "broken.snappy").write_bytes(b"\x82SNAPPY\x00" + b"\xff" * 40)
    shutil.copy(LOGS / "sparklens_local-1532512550423.json", tmp_path / "logs")
    st = store.open(tmp_path / "st", create=True)
    r = ingest_event_logs(tmp_path / "logs", st)
    assert (r.files_ingested, r.files_failed) == (1, 1)
    assert "broken.snappy" in next(iter(r.errors))
    assert list(st.runs().run_id) == ["local-1532512550423"]
    with pytest.raises(IngestError):
        ingest_event_logs(tmp_path / "logs" / "broken.snappy", st, on_error="raise")
    with pytest.raises(IngestError, match="no such file"):
        ingest_event_logs(tmp_path / "missing", st)
    for paths, needle in (([], "no event-log path given"), (5, "5 is not a path"),
                          ([tmp_path / "logs", None], "None is not a path")):
        with pytest.raises(InputError, match=needle):
            ingest_event_logs(paths, st)
    assert list(st.runs().run_id) == ["local-1532512550423"]


def test_job_overrides_the_logs_job_and_the_skip_says_how_to_change_a_stored_one(tmp_path):
    """ingest_event_logs(job=) names every run it stores; a stored run keeps its job, and the way
    the skip's warning gives to change it (`sparkpredict store edit RUN --job NAME`) works."""
    log = LOGS / "sparklens_local-1532512550423.json"
    st = tmp_path / "st"
    for bad in ("", " \t", 3):
        with pytest.raises(InputError, match="job name"):
            ingest_event_logs(log, st, job=bad)  # type: ignore[arg-type]
    assert ingest_event_logs(log, st).files_ingested == 1
    runs = store.open(st).runs()
    assert list(runs["job"]) == ["Spark shell"] and list(runs["app_name"]) == ["Spark shell"]
    (f,) = ingest_event_logs(log, st, job="sparklens").files
    assert f.outcome == "unchanged" and "keeps its stored job 'Spark shell', not --job 'sparklens'" in f.warnings[0]
    command = f.warnings[0].split("To move the stored run: ")[1]
    assert command == "sparkpredict store edit local-1532512550423 --job sparklens"
    assert cli_main(command.split()[1:] + ["--store", str(st)]) == 0
    runs = store.open(st).runs()
    assert list(runs["job"]) == ["sparklens"] and list(runs["app_name"]) == ["Spark shell"]
    (f,) = ingest_event_logs(log, st, job="sparklens").files  # the same job now: skipped quietly
    assert f.outcome == "unchanged" and not f.warnings


def test_an_application_that_ends_while_a_job_runs_is_killed_as_the_listener_records_it(tmp_path):
    """Spark posts the application's end before it cancels the jobs still running (Ctrl-C under
    spark-submit, a context stopped mid-job), and logs their failed ends after it. Read as the
    last job failing, or with no end at all as succeeded, such a run went into the training
    data; the listener (RunRecord.applicationEnded) records it killed, naming the jobs."""
    lines = PLAIN4.read_bytes().splitlines()
    end = next(i for i, ln in enumerate(lines) if b"SparkListenerApplicationEnd" in ln)
    start = b'{"Event":"SparkListenerJobStart","Job ID":%d,"Submission Time":1795969315020,"Stage IDs":[]}'
    cancelled = (b'{"Event":"SparkListenerJobEnd","Job ID":3,"Completion Time":1795969315040,"Job Result":'
                 b'{"Result":"JobFailed","Exception":{"Message":"Job 3 cancelled because SparkContext was shut down"}}}')

    def status(body: list[bytes], name: str) -> tuple[str, str | None]:
        log = tmp_path / name
        log.write_bytes(b"\n".join(body) + b"\n")
        run = parse_event_log(log).tables["runs"]
        return run["status"][0].as_py(), run["error_message"][0].as_py()

    one = "1 job was still running at the application's end (job 3): the run was interrupted"
    # the job's end never logged
    assert status(lines[:end] + [start % 3] + lines[end:], "no-end") == ("killed", one)
    # as Spark writes it: the cancelled job's failed end after the application's end
    assert status(lines[:end] + [start % 3] + lines[end:] + [cancelled], "cancelled") == ("killed", one)
    two = status(lines[:end] + [start % 3, start % 4] + lines[end:], "two")
    assert two == ("killed", ("2 jobs were still running at the application's end (jobs 3, 4): "
                              "the run was interrupted"))
    # a job that ended before the application did is no part of it
    assert status(lines[:end] + [start % 3, cancelled.replace(b"JobFailed", b"JobSucceeded")] + lines[end:],
                  "ended") == ("succeeded", None)
    # a non-zero exit code still fails the run, its message naming the jobs cut short
    failed = lines[end].replace(b'"ExitCode":0', b'"ExitCode":1')
    assert status(lines[:end] + [start % 3, failed] + lines[end + 1:], "exit-1") == \
        ("failed", f"application exit code 1; {one}")


def test_an_application_idle_before_its_first_job_is_warned_of(shared):
    """A shell that waited 93 s of its 205 s for its user: the wall time the models learn holds
    the wait, which the ingest says, naming the edit that leaves such a run out."""
    tables, outcome = shared("eventlog_4nodes_8cores_dynamic_alloc.zstd")
    run_id = tables["runs"]["run_id"][0].as_py()
    (w,) = [w for w in outcome.warnings if "ran no job for its first" in w]
    assert w.startswith("the application ran no job for its first 93 s of 205 s")
    assert f"sparkpredict store edit {run_id} --exclude" in w
    # a batch application starts its first job at once
    _, q72 = shared("nds_q72_dataproc_2_2.zstd")
    assert not [w for w in q72.warnings if "ran no job" in w]


def _task_end_like(template, task_id, index, attempt, nbytes, stage_attempt=0, reason=None, **info) -> str:
    """A TaskEnd line of ``template``'s form for another task, reading ``nbytes``."""
    t = json.loads(json.dumps(template))
    t["Stage Attempt ID"] = stage_attempt
    t["Task Info"].update({"Task ID": task_id, "Index": index, "Partition ID": index, "Attempt": attempt, **info})
    t["Task Metrics"]["Input Metrics"] = {"Bytes Read": nbytes, "Records Read": 5}
    if reason is not None:
        t["Task End Reason"] = reason
    return json.dumps(t)


def _retried_log(path: Path) -> None:
    """The plain Spark 4 log with stage 0 reading 1,000 bytes per partition (8), plus what makes
    a run read data again: a failed attempt (500 bytes), a killed speculative copy (700), a
    partition run twice in one attempt (a Resubmitted re-run), a second attempt of the stage
    re-running partition 2 (after a FetchFailed); and a stage and a task ended after the
    application's end."""
    out = []
    for line in PLAIN4.read_text().splitlines():
        ev = json.loads(line)
        kind = ev["Event"]
        if kind == "SparkListenerTaskEnd" and ev["Stage ID"] == 0:
            ev["Task Metrics"]["Input Metrics"] = {"Bytes Read": 1000, "Records Read": 10}
            line = json.dumps(ev)
            if ev["Task Info"]["Index"] == 0:
                template = ev
        if kind == "SparkListenerStageSubmitted" and ev["Stage Info"]["Stage ID"] == 0:
            submitted = ev
        if kind == "SparkListenerStageCompleted" and ev["Stage Info"]["Stage ID"] == 0:
            task = functools.partial(_task_end_like, template)
            out.append(task(9000, 0, 1, 500, reason={
                "Reason": "ExceptionFailure", "Class Name": "java.lang.RuntimeException", "Description": "boom",
                "Stack Trace": [], "Full Stack Trace": "", "Accumulator Updates": []}, Failed=True))
            out.append(task(9001, 3, 1, 700, reason={"Reason": "TaskKilled", "Kill Reason": "another attempt succeeded",
                                                    "Accumulator Updates": []}, Killed=True, Speculative=True))
            out.append(task(9002, 1, 1, 1000))  # partition 1 again, its first output lost with its executor
            # the attempt fails (a FetchFailed): its successful tasks' output is kept, and only
            # partition 2 runs again, so their input counts all the same
            failed = json.loads(line)
            failed["Stage Info"]["Failure Reason"] = "org.apache.spark.shuffle.FetchFailedException: lost"
            out.append(json.dumps(failed))
            again = json.loads(json.dumps(submitted))
            again["Stage Info"].update({"Stage Attempt ID": 1, "Number of Tasks": 1})
            out.append(json.dumps(again))
            # a retried attempt numbers its tasks from 0: partition 2 is its task 0
            out.append(task(9003, 0, 0, 1000, stage_attempt=1, **{"Partition ID": 2}))
            done = json.loads(line)
            done["Stage Info"].update({"Stage Attempt ID": 1, "Number of Tasks": 1})
            out.append(json.dumps(done))
            continue
        out.append(line)
        if kind == "SparkListenerApplicationEnd":
            late = json.loads(json.dumps(submitted))
            late["Event"] = "SparkListenerStageCompleted"
            late["Stage Info"].update({"Stage ID": 99, "Completion Time": late["Stage Info"]["Submission Time"] + 1})
            out.append(json.dumps(late))
            t = json.loads(json.dumps(template))
            t["Stage ID"], t["Task Info"]["Task ID"] = 99, 9999
            out.append(json.dumps(t))
    path.write_text("\n".join(out) + "\n")


@pytest.mark.spark
def test_a_partition_read_again_counts_once_in_the_runs_input_listener_and_ingest_alike(listener_jar, tmp_path):
    log = tmp_path / "local-retried"
    _retried_log(log)
    parsed = parse_event_log(log)
    run = parsed.tables["runs"].to_pylist()[0]
    assert run["input_bytes"] == 8 * 1000  # not 11,200: every re-read left out
    stages = parsed.tables["stages"].to_pandas()
    assert 99 not in set(stages.stage_id) and (0, 1) in set(zip(stages.stage_id, stages.stage_attempt_id))
    # the stage rows still sum every task that ended in them, as Spark's UI does
    assert stages.set_index(["stage_id", "stage_attempt_id"]).loc[(0, 0), "input_bytes"] == 8000 + 500 + 700 + 1000
    assert 9999 not in set(parsed.tables["tasks"]["task_id"].to_pylist())
    props = json.loads(run["properties_json"])
    jobs = [[str(log), str(tmp_path / "listened"), props]]
    replay(listener_jar, jobs)
    listened = store.open(tmp_path / "listened").runs().iloc[0]
    assert listened.input_bytes == 8000 and listened.num_stages == run["num_stages"]


def test_a_map_stage_rerun_under_a_new_stage_id_counts_its_input_once(shared):
    """Adaptive execution runs each map stage as a job of its own: after an executor's loss took
    its output, a later job re-runs it under a new stage id (2, attempt 1; first run: stage 1).
    Counted by stage id, the run's input was twice its scan's; the listener counts it the same
    way (the replay test above feeds it this log)."""
    tables, _ = shared("aqe_executors_killed_spark4.zstd")
    stages = tables["stages"].to_pandas().set_index(["stage_id", "stage_attempt_id"])
    # Parquet's vectored reads: the tasks' input metric counts about the footers of 8 files
    assert stages.loc[(1, 0), "input_bytes"] == stages.loc[(2, 1), "input_bytes"] == 41_460
    # the scan's files hold 17.5 MB (its "size of files read"), counted once for both stages
    [(node, files)] = reference("aqe_executors_killed_spark4.zstd")["scan_files"].values()
    assert node.startswith("FileScan parquet") and files == 17_535_944
    assert tables["runs"]["input_bytes"][0].as_py() == files


def test_no_real_log_reads_as_out_of_order(shared):
    """The order warning (tests/test_eventlog_damage.py) never fires on what Spark wrote: every
    real log here, from Spark 2.3 to 4 and Databricks, ingests without it."""
    for name in SHARED:
        _, outcome = shared(name)
        assert not [w for w in outcome.warnings if "out of the order" in w], name
