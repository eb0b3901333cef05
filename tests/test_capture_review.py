"""A Spark user's review of the capture side: attach's input size, mid-log garbage in a plain
log, a partial run in the store that the complete log replaces, the ingest report of skipped
logs, and whole numbers in `sparkpredict runs` CSVs."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from test_hybrid import synthetic_job

from sparkpredict import store
from sparkpredict.capture import listener
from sparkpredict.capture.eventlog import parse_event_log
from sparkpredict.capture.eventlog_ingest import ingest_event_logs
from sparkpredict.cli import main
from sparkpredict.errors import InputError
from sparkpredict.features.runs import runs_table

LOGS = Path(__file__).parent / "data" / "eventlogs"
PLAIN = LOGS / "rp_nosql_eventlog.json"  # line 4 is its EnvironmentUpdate, 50 kB in
Q72 = LOGS / "nds_q72_dataproc_2_2.zstd"  # 13,504 tasks
SMALL = min((LOGS / "spark4").glob("local-*.zstd"))  # a finished Spark 4 log, 21 tasks


# ---- A: attach / listener_conf input_bytes --------------------------------------------------
def test_input_bytes_takes_sizes_as_input_size_does_and_gives_spark_whole_bytes(listener_jar, tmp_path):
    for given, bytes_ in (("5MB", 5_000_000), ("1.5TiB", 3 * 2**39), ("120g", 120 * 2**30), (123, 123),
                          (1.5e9, 1_500_000_000)):
        conf = listener.listener_conf(store=str(tmp_path / "s"), input_bytes=given)
        assert conf[listener.KEY_INPUT_BYTES] == str(bytes_), given
        assert str(listener_jar) in conf["spark.jars"]


@pytest.mark.parametrize("bad", ["abc", -3, 0, "0GB", "-1MB", float("nan")])
def test_a_bad_input_bytes_is_an_input_error_naming_the_argument(listener_jar, tmp_path, bad):
    with pytest.raises(InputError) as e:
        listener.listener_conf(store=str(tmp_path / "s"), input_bytes=bad)
    assert e.value.message.startswith(f"input_bytes={bad!r}: ") and "input_bytes=" in (e.value.fix or "")
    # attach checks it before it touches the builder (or Spark)
    with pytest.raises(InputError, match="input_bytes="):
        listener.attach(object(), store=str(tmp_path / "s"), input_bytes=bad)


# ---- B: a plain log with garbage in the middle -----------------------------------------------
def _garbled(tmp_path: Path, name: str, data: bytes) -> Path:
    d = tmp_path / "logs"
    d.mkdir(exist_ok=True)
    (d / name).write_bytes(data)
    return d / name


def test_a_plain_log_with_a_bad_line_before_its_last_is_refused_not_stored_without_properties(tmp_path, capsys):
    data = PLAIN.read_bytes()
    bad = _garbled(tmp_path, "corrupt_plain.json", data[:50000] + b'\x00\xffgarbage\n{"Event":' + data[50020:])
    parsed = parse_event_log(bad)
    assert parsed.damage is not None and parsed.damage.startswith("line 4 is not valid JSON while more lines follow")
    st = str(tmp_path / "st")
    assert main(["ingest", str(bad), "--store", st]) == 1
    out = capsys.readouterr().out
    (failed,) = [ln for ln in out.splitlines() if ln.startswith("FAILED")]
    assert "line 4 is not valid JSON" in failed and "would lack the events lost there" in failed
    assert "  fix: ingest an intact copy of this log" in out.splitlines()
    assert not os.path.exists(st)  # nothing of it stored, and no empty store left in its place
    assert out.splitlines()[-1].endswith(f"1 failed -> nothing stored, no store made at {st}")
    # its JSON names the run, and no status: nothing of it was stored ("succeeded" read as stored)
    assert main(["ingest", str(bad), "--store", st, "--json"]) == 1
    (f,) = json.loads(capsys.readouterr().out)["files"]
    assert (f["outcome"], f["run_id"], f["status"]) == ("failed", "application_1603128018386_7756", None)
    # the intact copy then ingests, with every property
    assert main(["ingest", str(PLAIN), "--store", st]) == 0
    run = store.open(st).runs().iloc[0]
    assert run.status == "succeeded" and json.loads(run.properties_json)["spark.master"] == "yarn"


def test_garbage_in_the_decoded_text_of_a_compressed_log_is_damage_too(tmp_path):
    lines = PLAIN.read_bytes().split(b"\n")
    lines.insert(10, b"\x00\xff not an event")
    log = _garbled(tmp_path, "app-1.zstd", pa.compress(b"\n".join(lines), "zstd", asbytes=True))
    assert "line 11 is not valid JSON" in (parse_event_log(log).damage or "")
    r = ingest_event_logs(log, tmp_path / "st")
    assert r.files_failed == 1 and not (tmp_path / "st").exists()


def test_only_a_bad_last_line_is_a_warning_not_one_with_a_cut_line_after_it(tmp_path):
    data = PLAIN.read_bytes().rstrip(b"\n")
    head, last = data[: data.rindex(b"\n")], data[data.rindex(b"\n") + 1:]
    n_head = head.count(b"\n") + 1
    # A last line cut off (a log copied while written), here ending in a newline, with or
    # without blank lines after it: the run is stored, with one warning, as before.
    for tail in (b"\n", b"\n\n\n"):
        log = _garbled(tmp_path, "cut.json", head + b"\n" + last[:50] + tail)  # cut after the event's name
        parsed = parse_event_log(log)
        assert parsed.damage is None and parsed.status == "incomplete"
        assert f"line {n_head + 1} is not valid JSON; skipped" in parsed.warnings
        r = ingest_event_logs(log, tmp_path / f"st{len(tail)}")
        assert r.files_ingested == 1 and r.files[0].tasks == 4
    # a bad line, then a last line cut inside its event: the bad one was not the last
    log = _garbled(tmp_path, "two.json", head + b"\n\x00garbage\n" + last[:40])  # no newline: cut
    parsed = parse_event_log(log)
    assert parsed.damage is not None and "is not valid JSON while more lines follow" in parsed.damage


# ---- C: a partial run in the store, then the complete log ------------------------------------
def test_a_complete_log_replaces_the_cut_copy_ingest_stored_and_says_so(tmp_path, capsys):
    """A scheduled ingest of spark.eventLog.dir meets logs still being written: it stores them
    as incomplete. The finished log used to be skipped with a warning for good (the run was lost
    from training unless a file was deleted by hand); it now replaces the cut copy."""
    trunc = tmp_path / "d4" / "trunc.zstd"
    trunc.parent.mkdir()
    trunc.write_bytes(Q72.read_bytes()[:600_000])
    st = str(tmp_path / "s4")
    assert main(["ingest", str(trunc.parent), "--store", st]) == 0
    assert "(incomplete, 25 stages, 8,354 tasks)" in capsys.readouterr().out
    assert len(store.open(st).tasks()) == 8354
    assert main(["ingest", str(Q72), "--store", st]) == 0
    out = capsys.readouterr().out
    assert ("run application_1751493828576_0001 (succeeded, 49 stages, 13,504 tasks), replacing its "
            "stored copy (incomplete, 8,354 tasks)") in out
    assert "warning" not in out
    s = store.open(st)
    tasks = s.tasks()
    # one copy: the whole run's rows, none of the cut copy's left beside them
    assert list(s.runs().status) == ["succeeded"] and len(tasks) == 13504 == tasks["task_id"].nunique()
    assert len(s.stages()) == 49 and len(list((Path(st) / "runs").glob("part-*.parquet"))) == 1
    assert s.orphans(min_age_s=0) == []  # the cut copy's part files went with its commit file
    # the cut copy again (or any copy of a run stored whole): skipped, without a warning
    shutil.copy(Q72, tmp_path / "copy.zstd")
    for again in (trunc, tmp_path / "copy.zstd"):
        assert main(["ingest", str(again), "--store", st]) == 0
        out = capsys.readouterr().out
        assert "already in the store (succeeded)" in out and "warning" not in out
    assert len(store.open(st).tasks()) == 13504


def test_a_finished_log_named_like_an_unfinished_stored_run_is_read_and_replaces_it(tmp_path):
    """An in-progress log ingested as incomplete, then the finished one under Spark's name:
    it used to be skipped by its name without being read, silently."""
    whole = parse_event_log(SMALL)
    with pa.CompressedInputStream(pa.OSFile(str(SMALL)), "zstd") as f:
        text = f.read()
    inprogress = tmp_path / "a" / (SMALL.name + ".inprogress")
    inprogress.parent.mkdir()
    cut = text[: text.index(b'"Event":"SparkListenerTaskEnd"', len(text) // 2)]
    inprogress.write_bytes(pa.compress(cut[: cut.rindex(b"\n") + 1], "zstd", asbytes=True))
    st = tmp_path / "st"
    first = ingest_event_logs(inprogress, st).files[0]
    assert first.outcome == "ingested" and first.status == "incomplete" and first.tasks < whole.tables["tasks"].num_rows
    (again,) = ingest_event_logs(SMALL, st).files
    assert again.outcome == "ingested" and again.run_id == whole.run_id and again.status == "succeeded"
    assert again.replaced == f"incomplete, {first.tasks} tasks" and again.warnings == []
    assert len(store.open(st).tasks()) == whole.tables["tasks"].num_rows


# ---- D: the report of skipped logs -----------------------------------------------------------
def test_unchanged_and_existing_logs_report_the_stored_run_and_no_row_counts(tmp_path, capsys):
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(PLAIN, logs)
    st = str(tmp_path / "st")
    assert main(["ingest", str(logs), "--store", st]) == 0
    assert "(succeeded, 1 stage, 4 tasks)" in capsys.readouterr().out
    shutil.copy(PLAIN, logs / "copy-of-it.json")
    assert main(["ingest", str(logs), "--store", st, "--json"]) == 0
    files = {Path(f["path"]).name: f for f in json.loads(capsys.readouterr().out)["files"]}
    for name, outcome in (("rp_nosql_eventlog.json", "unchanged"), ("copy-of-it.json", "exists")):
        f = files[name]
        assert f["outcome"] == outcome, f
        assert (f["run_id"], f["status"]) == ("application_1603128018386_7756", "succeeded"), f
        assert f["stages"] is None and f["tasks"] is None and f["warnings"] == [], f


# ---- E: whole numbers in the runs CSV --------------------------------------------------------
def test_runs_csv_writes_whole_numbers_as_integers_and_fits_the_same_models(tmp_path, capsys):
    runs = pd.concat([synthetic_job(j, seed=k, cliff=False, sizes=(8, 12, 16), execs=(2, 4, 8))
                      for k, j in enumerate(("etl", "ml"))], ignore_index=True)
    st = store.open(tmp_path / "store", create=True)
    n = len(runs)
    st.append({"runs": pd.DataFrame({
        "run_id": runs["run_id"], "app_id": runs["run_id"], "job": runs["job"], "status": "succeeded",
        "start_ms": 1_751_493_912_198 + np.arange(n) * 1000,
        "wall_ms": (runs["runtime_s"] * 1000).round().astype("int64"),
        "executors_requested": runs["executors"], "executor_cores": runs["executor_cores"],
        "executor_memory_mb": runs["executor_memory_mb"], "input_bytes": runs["input_bytes"] + 7,
        "num_stages": [None if i % 3 == 0 else 41 for i in range(n)], "updated_ms": 1})})
    table = runs_table(tmp_path / "store")
    assert table["input_bytes"].dtype == np.float64 and table["start_ms"].dtype == np.float64  # unchanged
    csv = tmp_path / "runs.csv"
    assert main(["runs", "--store", str(tmp_path / "store"), "--out", str(csv)]) == 0
    head, first = csv.read_text().splitlines()[:2]
    row = dict(zip(head.split(","), first.split(",")))
    assert row["input_bytes"] == str(8 * 2**30 + 7) and row["start_ms"] == "1751493912198", row
    assert row["executor_memory_mb"] == "16384" and row["executor_cores"] == "4" and row["num_stages"] == ""
    assert "." in row["runtime_s"]
    assert "41.0" not in csv.read_text()
    # `fit` reads it back to the same models as from the floats the command used to write
    table.to_csv(tmp_path / "floats.csv", index=False)
    assert main(["fit", str(csv), "--out", str(tmp_path / "m_ints")]) == 0
    assert main(["fit", str(tmp_path / "floats.csv"), "--out", str(tmp_path / "m_floats")]) == 0
    index = json.loads((tmp_path / "m_ints" / "sparkpredict_models.json").read_text())
    for f in index["jobs"].values():
        assert (tmp_path / "m_ints" / f).read_text() == (tmp_path / "m_floats" / f).read_text()
