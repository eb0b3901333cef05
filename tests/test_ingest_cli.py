"""`sparkpredict ingest`: summary, --json, and exit codes 0 / 1 / 2."""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from sparkpredict import store
from sparkpredict.cli import main

LOGS = Path(__file__).parent / "data" / "eventlogs"


def test_cli_exit_codes_and_json(tmp_path, capsys):
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(LOGS / "sparklens_local-1532512550423.json", logs)
    st = str(tmp_path / "st")
    assert main(["ingest", str(logs), "--store", st]) == 0
    out = capsys.readouterr().out
    assert "ingested" in out and "local-1532512550423" in out and "1 ingested" in out
    assert main(["ingest", str(logs), "--store", st, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["files_unchanged"] == 1 and report["files_ingested"] == 0
    (logs / "broken.lz4").write_bytes(b"not lz4 at all")
    assert main(["ingest", str(logs), "--store", st]) == 1  # one failed, the other unchanged
    captured = capsys.readouterr()
    assert "FAILED" in captured.out and "broken.lz4" in captured.out and "cannot decode as lz4" in captured.out
    # said once, with the path once
    (failed,) = [ln for ln in captured.out.splitlines() if ln.startswith("FAILED")]
    assert failed.count("broken.lz4") == 1 and "broken.lz4" not in captured.err
    assert main(["ingest", str(logs), "--store", st, "--json"]) == 1
    (bad,) = [f for f in json.loads(capsys.readouterr().out)["files"] if f["outcome"] == "failed"]
    assert "cannot decode as lz4" in bad["error"] and bad["fix"], bad
    assert main(["ingest", str(tmp_path / "nope"), "--store", st]) == 2
    err = capsys.readouterr().err
    assert "no such file or folder" in err and "fix:" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["ingest", str(empty), "--store", st]) == 2
    assert "no event logs found" in capsys.readouterr().err


def test_a_failure_is_printed_once_not_again_as_a_log_warning(tmp_path):
    """ingest and retrain print each failure themselves; the library's warning stays for -v."""
    import subprocess
    import sys

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "sparkpredict", *args], capture_output=True, text=True,
                              timeout=300, check=False)

    bad = tmp_path / "notalog.json"
    bad.write_text("garbage\n")
    st = str(tmp_path / "st")
    r = cli("ingest", str(LOGS / "sparklens_local-1532512550423.json"), str(bad), "--store", st)
    assert r.returncode == 1 and r.stdout.count("notalog.json") == 1 and "notalog.json" not in r.stderr
    assert "notalog.json" in cli("-v", "ingest", str(bad), "--store", st).stderr
    # one recorded run, without an input size: no runtime model, said once, with the fix; a job
    # whose only run never finished says that
    assert cli("ingest", str(LOGS / "nds_q88_photon_db_13_3.zstd"), "--store", st).returncode == 0
    r = cli("retrain", "--store", st, "--local")
    # too young to fit: skipped, with the message and its fix (no class name), and no error
    assert r.returncode == 0, r.stdout + r.stderr
    assert "  skipped: Spark shell: only 0 usable runs (of 1)" in r.stdout
    lines = r.stdout.splitlines()
    at = lines.index("  skipped: Databricks Shell: no succeeded run (1 incomplete)")
    assert lines[at + 1].startswith("    fix: "), lines
    assert "Error" not in r.stdout and "skipped" not in r.stderr and "usable runs" not in r.stderr, r.stderr


def test_json_errors_are_json_on_stdout_and_error_fix_on_stderr(tmp_path, capsys):
    """A script that asks for --json parses stdout whatever happened: a user mistake (exit 2)
    is ``{"error", "fix"}`` there, the person still reads error:/fix: on stderr; a log that
    fails among others is listed in the report (exit 1)."""
    st = str(tmp_path / "st")
    (tmp_path / "empty").mkdir()
    (tmp_path / "afile").write_text("not a folder\n")
    mistakes = {
        "no such file or folder": ["ingest", str(tmp_path / "nope"), "--store", st],
        "no event logs found": ["ingest", str(tmp_path / "empty"), "--store", st],
        "is a file": ["ingest", str(LOGS / "sparklens_local-1532512550423.json"),
                      "--store", str(tmp_path / "afile")],
    }
    for what, argv in mistakes.items():
        assert main([*argv, "--json"]) == 2, what
        captured = capsys.readouterr()
        doc = json.loads(captured.out)
        assert set(doc) == {"error", "fix"} and what in doc["error"] and doc["fix"], doc
        assert f"error: {doc['error']}" in captured.err and f"fix: {doc['fix']}" in captured.err
        assert "Traceback" not in captured.err
    # several logs: one ingested, one not a log, one undecodable, one already in the store
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(LOGS / "sparklens_local-1532512550423.json", logs)
    shutil.copy(LOGS / "sparklens_local-1532512550423.json", logs / "copy-of-it.json")
    (logs / "notalog.json").write_text("garbage\n")
    (logs / "broken.lz4").write_bytes(b"not lz4 at all")
    assert main(["ingest", str(logs), "--store", st, "--json"]) == 1
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    by_name = {Path(f["path"]).name: f for f in report["files"]}
    assert report["files_seen"] == 4 and report["files_failed"] == 2 and report["files_ingested"] == 1
    assert by_name["broken.lz4"]["outcome"] == "failed" and "cannot decode as lz4" in by_name["broken.lz4"]["error"]
    assert by_name["notalog.json"]["outcome"] == "failed" and "not a Spark event log" in by_name["notalog.json"]["error"]
    assert {by_name[n]["outcome"] for n in ("copy-of-it.json", "sparklens_local-1532512550423.json")} == \
        {"ingested", "exists"}
    assert "error:" not in captured.err  # per-log failures are the report's, not a user mistake


@pytest.mark.parametrize(("argv", "says", "fix"), [
    (["ingest", "--json"], "the following arguments are required: PATH", "give PATH; "),
    (["suggest", "--job", "etl", "--input-size", "1GB", "--min-executors", "many", "--json"],
     "argument --min-executors: invalid int value: 'many'", ""),
    (["suggest", "--job", "etl", "--json"], "the following arguments are required: --input-size",
     "give --input-size SIZE; "),
    (["suggest", "--job", "etl", "--input-size", "1GB", "--objective", "cots", "--json"],
     "argument --objective: invalid choice: 'cots' (choose from 'cost', 'time', 'knee')", "did you mean cost? "),
    (["suggest", "--job", "etl", "--input-size", "1GB", "--bugdet", "2", "--json"],
     "unrecognized arguments: --bugdet 2", "did you mean --budget? "),
    (["suggest", "--job", "etl", "--input-size", "1GB", "--max-executers=8", "--json"],
     "unrecognized arguments: --max-executers=8", "did you mean --max-executors? "),
    (["sugest", "--job", "etl", "--json"],
     "argument COMMAND: invalid choice: 'sugest' (choose from "
     + ", ".join(f"'{c}'" for c in ("listener", "submit", "ingest", "store", "runs", "fit", "predict",
                                    "evaluate", "suggest", "sweep", "report", "demo", "retrain",
                                    "simulate", "explain")) + ")", "did you mean suggest? see `sparkpredict --help`"),
])
def test_json_usage_errors_are_json_on_stdout_too(argv, says, fix, capsys):
    """argparse's own errors (a missing argument, a bad number) are user mistakes as well: a
    script that asked for --json got an empty stdout, and had nothing to parse."""
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    captured = capsys.readouterr()
    if "--help" not in fix:  # the command's own help
        fix += f"see `sparkpredict {argv[0]} --help`"
    assert json.loads(captured.out) == {"error": says, "fix": fix}
    assert f"error: {says}" in captured.err and "usage: sparkpredict" in captured.err
    # without --json: stderr only, ending in the fix line every user mistake ends with
    with pytest.raises(SystemExit):
        main([a for a in argv if a != "--json"])
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.endswith(f"error: {says}\nfix: {fix}\n")


@pytest.mark.parametrize(("argv", "helped"), [
    (["suggest", "--job", "store", "--input-size", "1GB", "--bogus"], "sparkpredict suggest"),
    (["store", "clean", "--json"], "sparkpredict store clean"),
    (["--bogus"], "sparkpredict"),
])
def test_an_unrecognized_argument_points_at_its_commands_help(argv, helped, capsys):
    # argparse reports it from the top parser, whose help lists no command's options
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert capsys.readouterr().err.endswith(f"\nfix: see `{helped} --help`\n")


def test_job_names_the_runs_one_ingest_stores_and_a_stored_run_keeps_its_own(tmp_path, capsys):
    """Logs of unrelated applications named alike (`Spark shell`) became one job: --job names
    the runs of each ingest. A log already stored is skipped, and the skip says that its run
    keeps its job and how to change it, instead of appearing to obey --job."""
    from sparkpredict.store import io as store_io

    st = str(tmp_path / "st")
    sparklens, nosql = LOGS / "sparklens_local-1532512550423.json", LOGS / "rp_nosql_eventlog.json"
    assert main(["ingest", str(sparklens), "--store", st, "--job", "sparklens"]) == 0
    assert main(["ingest", str(nosql), "--store", st, "--job", "nosql"]) == 0
    jobs = dict(zip(*(store_io.open(st).runs()[c] for c in ("run_id", "job"))))
    assert jobs == {"local-1532512550423": "sparklens", "application_1603128018386_7756": "nosql"}
    assert "Spark shell" not in capsys.readouterr().out
    # the same job again: skipped, quietly
    assert main(["ingest", str(sparklens), "--store", st, "--job", "sparklens"]) == 0
    assert "warning" not in capsys.readouterr().out
    # another job: still skipped (exit 0), the warning says the stored job stays and how to change it
    copy = tmp_path / "copy-of-nosql.json"
    shutil.copy(nosql, copy)
    assert main(["ingest", str(sparklens), str(copy), "--store", st, "--job", "other"]) == 0
    out = capsys.readouterr().out
    assert "skipped   " + str(sparklens) + ": unchanged since ingested as run local-1532512550423" in out
    assert "run local-1532512550423 keeps its stored job 'sparklens', not --job 'other'" in out
    assert "run application_1603128018386_7756 keeps its stored job 'nosql', not --job 'other'" in out
    assert "To move the stored run: sparkpredict store edit local-1532512550423 --job other" in out
    assert dict(zip(*(store_io.open(st).runs()[c] for c in ("run_id", "job")))) == jobs
    assert main(["ingest", str(sparklens), "--store", st, "--job", "other", "--json"]) == 0
    (f,) = json.loads(capsys.readouterr().out)["files"]
    assert f["outcome"] == "unchanged" and "keeps its stored job 'sparklens'" in f["warnings"][0]
    # a blank name is a mistake, said before any log is read
    assert main(["ingest", str(sparklens), "--store", st, "--job", "  "]) == 2
    err = capsys.readouterr().err
    assert "error: job name '  ' is blank" in err and "fix:" in err


def _interrupt_the_second_log(monkeypatch):
    """Ctrl-C while the second log is read, as a user stops a long ingest."""
    from sparkpredict.capture import eventlog_ingest as EI

    real, calls = EI._parse_source, []

    def parse(src):
        calls.append(src.path)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(src)

    monkeypatch.setattr(EI, "_parse_source", parse)


def test_ctrl_c_says_how_many_logs_were_stored_and_a_rerun_continues(tmp_path, capsys, monkeypatch):
    """It printed only "interrupted" though logs were stored, and nothing at all with --json."""
    logs = tmp_path / "logs"
    logs.mkdir()
    for name in ("rp_nosql_eventlog.json", "sparklens_local-1532512550423.json"):
        shutil.copy(LOGS / name, logs)
    st = str(tmp_path / "st")
    _interrupt_the_second_log(monkeypatch)
    assert main(["ingest", str(logs), "--store", st]) == 130
    out, err = capsys.readouterr()
    assert "ingested  " in out and "rp_nosql_eventlog.json" in out  # the log stored before it
    assert err.startswith("interrupted after 1 log: 1 ingested"), err
    assert "rerun the same command to continue" in err
    assert len(store.open(st).runs()) == 1  # the first log whole, nothing of the second

    monkeypatch.undo()
    assert main(["ingest", str(logs), "--store", st]) == 0
    assert "2 logs: 1 ingested, 1 unchanged" in capsys.readouterr().out


def test_ctrl_c_with_json_prints_the_report_so_far(tmp_path, capsys, monkeypatch):
    logs = tmp_path / "logs"
    logs.mkdir()
    for name in ("rp_nosql_eventlog.json", "sparklens_local-1532512550423.json"):
        shutil.copy(LOGS / name, logs)
    _interrupt_the_second_log(monkeypatch)
    assert main(["ingest", str(logs), "--store", str(tmp_path / "st"), "--json"]) == 130
    doc = json.loads(capsys.readouterr().out)
    assert doc["error"] == "interrupted" and "rerun the same command" in doc["fix"]
    assert (doc["files_seen"], doc["files_ingested"], doc["store_exists"]) == (1, 1, True)


def test_an_inprogress_log_of_an_application_just_started_is_skipped_not_failed(tmp_path, capsys):
    """A live history folder always holds one at some moment: it counted as FAILED, exit 1, for
    every cron ingest that met it. A log with the same bytes but finished still fails."""
    data = (LOGS / "sparklens_local-1532512550423.json").read_bytes()
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "local-1532512550423.inprogress").write_bytes(data[:data.index(b"\n") + 1])  # LogStart only
    # compressed data that decodes to no line yet: 20 kB of a zstd log, its first block not whole
    (logs / "application_1751493828576_0001.zstd.inprogress").write_bytes(
        (LOGS / "nds_q72_dataproc_2_2.zstd").read_bytes()[:20_000])
    st = str(tmp_path / "st")
    assert main(["ingest", str(logs), "--store", st, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["files_pending"], doc["files_failed"], doc["store_exists"]) == (2, 0, False)
    by_name = {Path(f["path"]).name: f for f in doc["files"]}
    assert by_name["local-1532512550423.inprogress"]["warnings"] == [
        # being written, not cut off
        ("the log ends after 1 line, before its SparkListenerApplicationStart event: Spark has not "
         "written it yet (.inprogress)")]
    # the file has 20,000 bytes: "the log is empty" would not be true
    (zstd,) = by_name["application_1751493828576_0001.zstd.inprogress"]["warnings"]
    assert zstd.startswith("the zstd stream ends before its first line decodes") and "empty" not in zstd
    # the application wrote on: the next ingest stores it
    (logs / "local-1532512550423.inprogress").write_bytes(data)
    assert main(["ingest", str(logs), "--store", st]) == 0
    assert "1 ingested, 0 unchanged, 0 already in the store, 0 failed, 1 not written yet" in capsys.readouterr().out
    done = tmp_path / "done" / "local-1532512550423"
    done.parent.mkdir()
    done.write_bytes(data[:data.index(b"\n") + 1])
    assert main(["ingest", str(done), "--store", st]) == 1



def _unwritten_for(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_an_inprogress_log_unwritten_for_hours_before_its_start_is_a_dead_application_not_pending(tmp_path,
                                                                                                   capsys):
    """A driver that dies before it writes its application start leaves an .inprogress log for
    good: every ingest skipped it as "not written yet" (exit 0), and said so forever."""
    data = (LOGS / "sparklens_local-1532512550423.json").read_bytes()
    logs = tmp_path / "logs"
    logs.mkdir()
    log = logs / "local-1532512550423.inprogress"
    log.write_bytes(data[:data.index(b"\n") + 1])  # LogStart only
    st = str(tmp_path / "st")
    _unwritten_for(log, 3 * 3600 + 12 * 60)
    assert main(["ingest", str(logs), "--store", st, "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert (doc["files_pending"], doc["files_failed"], doc["store_exists"]) == (0, 1, False)
    (f,) = doc["files"]
    assert f["outcome"] == "failed" and f["warnings"] == []
    assert f["error"] == (f"{log}: the log ends after 1 line, before its SparkListenerApplicationStart event; "
                          "still .inprogress, it has not been written for 3h12m: its application seems to "
                          "have died before it started")
    assert f["fix"] == (f"delete the log (rm {log}), or ingest it later if its application is in fact "
                        "still starting")
    assert main(["ingest", str(logs), "--store", st]) == 1
    out = capsys.readouterr().out
    assert "FAILED    " in out and "not written yet" not in out
    assert "1 log: 0 ingested, 0 unchanged, 0 already in the store, 1 failed -> nothing stored" in out
    # written within the hour: an application still starting, skipped as before
    _unwritten_for(log, 59 * 60)
    assert main(["ingest", str(logs), "--store", st]) == 0
    assert "0 failed, 1 not written yet" in capsys.readouterr().out


def test_a_rolling_inprogress_log_is_as_old_as_its_newest_file(tmp_path, capsys):
    folder = tmp_path / "logs" / "eventlog_v2_local-1700000000000"
    folder.mkdir(parents=True)
    status = folder / "appstatus_local-1700000000000.inprogress"
    status.write_bytes(b"")
    first = folder / "events_1_local-1700000000000.zstd"
    first.write_bytes(b"")
    for f in (status, first, folder):
        _unwritten_for(f, 2 * 3600)
    st = str(tmp_path / "st")
    assert main(["ingest", str(folder), "--store", st, "--json"]) == 1
    (f,) = json.loads(capsys.readouterr().out)["files"]
    assert f["outcome"] == "failed"
    assert f["error"] == (f"{folder}: the log is empty; still .inprogress, it has not been written for "
                          "2h00m: its application seems to have died before it started")
    assert f"(rm -r {folder})" in f["fix"]
    # an events file written a minute ago: its application is still starting
    _unwritten_for(first, 60)
    assert main(["ingest", str(folder), "--store", st, "--json"]) == 0
    (f,) = json.loads(capsys.readouterr().out)["files"]
    assert f["outcome"] == "pending" and f["error"] is None

@pytest.mark.parametrize("under", ["afile/sub", "afile/sub/deeper"])
def test_a_store_path_under_a_file_names_the_file(tmp_path, capsys, under):
    """It said "Not a directory" and "choose a writable folder, or fix its permissions", as if
    the folder's permissions were at fault."""
    (tmp_path / "afile").write_text("x")
    rc = main(["ingest", str(LOGS / "rp_nosql_eventlog.json"), "--store", str(tmp_path / under)])
    err = capsys.readouterr().err
    assert rc == 2 and f"error: cannot write to store '{tmp_path / under}': {tmp_path / 'afile'} is a file\n" in err
    assert "fix: give a store path under a folder, not under a file" in err and "permissions" not in err
