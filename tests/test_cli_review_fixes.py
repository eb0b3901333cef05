"""A walk through every command that starts no JVM (stop 35) found these; each test failed before its fix."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sparkpredict import store as store_mod
from sparkpredict.cli import main

DATA = Path(__file__).parent / "data"
HISTORY = DATA / "history"


@pytest.fixture(scope="module")
def ingested(tmp_path_factory) -> Path:
    """The committed event logs in a store: three 'Spark shell' runs read nothing the input
    metrics see; one ran under dynamic allocation (2.43 executors on average, 7 at most)."""
    from sparkpredict.capture.eventlog_ingest import ingest_event_logs

    path = tmp_path_factory.mktemp("ingested") / "store"
    logs = DATA / "eventlogs"
    ingest_event_logs([logs / "rp_nosql_eventlog.json", logs / "sparklens_local-1532512550423.json",
                       logs / "eventlog_4nodes_8cores_dynamic_alloc.zstd"], path)
    return path


def _two_lines(err: str) -> tuple[str, str]:
    lines = err.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("error: ") and lines[1].startswith("fix: "), err
    return lines[0], lines[1]


def test_advice_for_a_job_whose_runs_recorded_no_input_size_says_the_size_was_not_used(ingested, capsys):
    # it read "Spark shell on 10 GB: 1 executor, ~16.0s", the same for 1 TB, as if sized
    args = ["suggest", "--store", str(ingested), "--job", "Spark shell"]
    answers = []
    for size in ("10GB", "1TB"):
        assert main([*args, "--input-size", size]) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"job Spark shell, input {size[:-2]} {size[-2:]} (not used: no run recorded an "
                              "input size)")
        advice = next(line for line in out.splitlines() if line.startswith("advice: "))
        assert advice.startswith(f"advice: Spark shell as its runs ran (they recorded no input size, so "
                                 f"{size[:-2]} {size[-2:]} was not used): ")
        answers.append(advice.split(" was not used): ")[1])
        assert "warning: no run of Spark shell recorded an input size" in out
    assert answers[0] == answers[1]  # what the size changes: nothing, as said
    assert main([*args, "--input-size", "10GB", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["input_size_used"] is False and "was not used" in d["summary"]
    assert main(["suggest", "--store", str(HISTORY), "--job", "sort", "--input-size", "30MB", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["input_size_used"] is True


def test_a_size_without_a_unit_is_read_as_bytes_and_said_so(capsys):
    from sparkpredict.units import unitless_size_warning

    assert main(["suggest", "--store", str(HISTORY), "--job", "sort", "--input-size", "300"]) == 0
    out = capsys.readouterr().out
    assert "input 300 B" in out
    assert "warning: --input-size 300 has no unit and is read as 300 bytes; if you meant 300GB or 300MiB" in out
    assert main(["suggest", "--store", str(HISTORY), "--job", "sort", "--input-size", "300", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["warnings"][0].startswith("--input-size 300 has no unit")
    assert main(["suggest", "--store", str(HISTORY), "--job", "sort", "--input-size", "30MB"]) == 0
    assert "no unit" not in capsys.readouterr().out
    # a byte count too large to be a forgotten unit, a unit, and a number from Python pass quietly
    assert [unitless_size_warning(x, "--input-size") for x in ("64000000", "300B", "1.5TiB", 300)] == [None] * 4
    assert unitless_size_warning(" 1.5 ", "--input-size").startswith("--input-size 1.5 has no unit")


def test_simulate_says_a_missing_log_is_missing_not_a_store_problem(tmp_path, capsys):
    for arg in (str(tmp_path / "nope.log"), "logs/app_1.zstd", "./local-1"):
        assert main(["simulate", "--store", str(HISTORY), arg]) == 2
        error, fix = _two_lines(capsys.readouterr().err)
        assert error == f"error: no such file: {arg}" and "store summary lists them" in fix
    # a run id with an attempt ("app/1") is still looked up as a run id
    assert main(["simulate", "--store", str(HISTORY), "application_1_0001/1"]) == 2
    assert "no run 'application_1_0001/1' in store" in capsys.readouterr().err


def test_simulate_says_a_dynamic_allocation_runs_count_is_its_most(ingested, capsys):
    rid = "application_1707709865217_0493"
    assert main(["simulate", "--store", str(ingested), rid, "--executors", "2"]) == 0
    out = capsys.readouterr().out
    assert f"run {rid} (job Spark shell): 7 executors at most (2.43 on average) x 4 cores" in out
    assert "self-check at 7 executors (the most it held)" in out
    assert main(["simulate", "--store", str(ingested), rid, "--executors", "2", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["actual_executors"] == 7 and d["executors_mean"] == pytest.approx(2.43, abs=0.005)
    # a run that held its executors throughout says nothing of the kind
    assert main(["simulate", "--store", str(HISTORY), "local-1795976193109", "--executors", "2"]) == 0
    out = capsys.readouterr().out
    assert "at most" not in out and "self-check at 3 executors (actually used)" in out


def test_fit_and_evaluate_name_the_export_when_given_a_store(capsys):
    for cmd in (["fit", str(HISTORY), "--out", "unused"], ["evaluate", str(HISTORY)]):
        assert main(cmd) == 2
        error, fix = _two_lines(capsys.readouterr().err)
        assert error == f"error: {str(HISTORY)!r} is a history store, not a runs table"
        assert f"sparkpredict runs --store {HISTORY} --out runs.csv" in fix


def test_a_runs_file_pandas_cannot_read_is_one_error_line(tmp_path, capsys):
    bad = tmp_path / "runs.csv"
    bad.write_text("a,b\n1,2\n3,4,5\n")  # pandas' message ends in a newline
    assert main(["fit", str(bad), "--out", str(tmp_path / "m")]) == 2
    error, _ = _two_lines(capsys.readouterr().err)
    assert "Expected 2 fields in line 3, saw 3" in error


def test_the_knee_not_reached_is_in_the_json_too(capsys):
    args = ["suggest", "--store", str(HISTORY), "--job", "sort", "--input-size", "300GB"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert main([*args, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    said = f"knee: not reached up to {d['knee_executors']} executors" in text
    assert d["knee_reached"] is (not said)
    assert said or f"knee: {d['knee_executors']} executor" in text


def test_executor_counts_outside_min_and_max_are_named(capsys):
    base = ["suggest", "--store", str(HISTORY), "--job", "sort", "--input-size", "30MB"]
    assert main([*base, "--executor-counts", "2,4,6", "--max-executors", "3"]) == 0
    out = capsys.readouterr().out
    assert ("warning: --executor-counts 4, 6: left out, as only counts from 1 to 3 (--min-executors, "
            "--max-executors) were asked for") in out
    assert main([*base, "--executor-counts", "2,3", "--min-executors", "4"]) == 2
    error, _ = _two_lines(capsys.readouterr().err)
    assert error == "error: no executor count in --executor-counts is 4 or more (--min-executors)"


def test_listener_conf_refuses_a_blank_job_and_a_jar_path_with_a_comma(capsys):
    assert main(["listener", "conf", "--job", " "]) == 2
    error, fix = _two_lines(capsys.readouterr().err)
    assert error == "error: job name ' ' is blank" and "leave it out for each application's name" in fix
    assert main(["listener", "conf", "--jar", "hdfs:///apps/a,b.jar"]) == 2
    error, _ = _two_lines(capsys.readouterr().err)
    assert "holds a comma, which spark.jars reads as a list of two jars" in error


def test_report_of_a_job_whose_runs_are_all_excluded_says_how_to_take_them_back(tmp_path, capsys):
    st = tmp_path / "store"
    shutil.copytree(HISTORY, st)
    runs = store_mod.open(st).runs()
    ids = sorted(runs.loc[runs["job"] == "sqljoin", "run_id"])
    store_mod.edit_runs(st, ids, excluded=True)
    assert main(["report", "--store", str(st), "--job", "sqljoin", "--out", str(tmp_path / "r.html")]) == 2
    error, fix = _two_lines(capsys.readouterr().err)
    assert error == f"error: job 'sqljoin' has no succeeded runs in {st}: {len(ids)} runs are excluded from training"
    assert "sparkpredict store edit RUN_ID... --include" in fix and "choose among: 'sort', 'wordcount'" in fix
    assert not (tmp_path / "r.html").exists()
    # store summary --json lists them, as its text does
    assert main(["store", "summary", "--store", str(st), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert sorted(r["run_id"] for r in d["excluded"]) == ids and {r["job"] for r in d["excluded"]} == {"sqljoin"}


def test_a_store_beside_a_model_folder_that_has_no_runs_of_the_job_is_said(ingested, tmp_path, capsys):
    # the store is given for its runs' memory and spill warnings: with none of the job's runs in
    # it, those warnings vanished without a word
    assert main(["runs", "--store", str(HISTORY), "--out", str(tmp_path / "runs.csv")]) == 0
    assert main(["fit", str(tmp_path / "runs.csv"), "--out", str(tmp_path / "m")]) == 0
    capsys.readouterr()
    assert main(["suggest", "--models", str(tmp_path / "m"), "--store", str(ingested), "--job", "sort",
                 "--input-size", "30MB"]) == 0
    assert (f"warning: the store given ({ingested}) holds no succeeded run of sort: the advice comes from "
            "the model folder alone") in capsys.readouterr().out
    assert main(["suggest", "--models", str(tmp_path / "m"), "--store", str(HISTORY), "--job", "sort",
                 "--input-size", "30MB"]) == 0
    assert "holds no succeeded run" not in capsys.readouterr().out


def test_simulate_on_an_empty_store_says_it_is_empty(tmp_path, capsys):
    store_mod.open(tmp_path / "st", create=True)
    assert main(["simulate", "--store", str(tmp_path / "st"), "local-1"]) == 2
    error, fix = _two_lines(capsys.readouterr().err)
    assert error.endswith("the store holds no runs yet") and "e.g." not in fix
    assert fix == "fix: record runs first (sparkpredict submit, demo or ingest), or give the path of a " \
                  "Spark event log to replay it without a store"


def test_a_store_that_lost_its_marker_is_named_as_such(tmp_path, capsys):
    st = tmp_path / "store"
    shutil.copytree(HISTORY, st)
    (st / "_sparkpredict_store.json").unlink()
    assert main(["store", "summary", "--store", str(st)]) == 2
    error, fix = _two_lines(capsys.readouterr().err)
    # it said "holds other files (NOTES.md)", as if the tables were not there
    assert error == (f"error: folder {str(st)!r} holds a store's tables (executors/, runs/, stages/, tasks/) "
                     "but not its marker _sparkpredict_store.json")
    assert 'restore _sparkpredict_store.json as {"format": "sparkpredict-store", "schema_version": 1}' in fix
    (st / "_sparkpredict_store.json").write_text(fix.split(" as ", 1)[1].split("; else")[0])
    assert main(["store", "summary", "--store", str(st)]) == 0  # the fix, as written, works


def test_a_store_path_from_the_environment_is_named_in_the_fix(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SPARKPREDICT_STORE", str(tmp_path / "nothere"))
    assert main(["store", "summary"]) == 2
    error, fix = _two_lines(capsys.readouterr().err)
    assert error == f"error: no sparkpredict store at {str(tmp_path / 'nothere')!r}"
    assert "set $SPARKPREDICT_STORE (it names this path) to the store's folder, or give one with --store" in fix
    monkeypatch.delenv("SPARKPREDICT_STORE")
    assert main(["store", "summary", "--store", str(tmp_path / "nothere")]) == 2
    assert "SPARKPREDICT_STORE" not in capsys.readouterr().err
