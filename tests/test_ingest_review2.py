"""A second review of the event-log ingest, on the real logs in tests/data/eventlogs: a rolling log
finished after it was ingested, a damaged log of a run stored cut short, things in a history
folder that are not files, names that are not UTF-8, and events with unusable fields."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sparkpredict import store
from sparkpredict.capture.eventlog_files import find_logs
from sparkpredict.capture.eventlog_ingest import ingest_event_logs

LOGS = Path(__file__).parent / "data" / "eventlogs"
SPARK4 = LOGS / "spark4"
ROLLING_APP = "local-1795969318009"
ROLLING = SPARK4 / f"eventlog_v2_{ROLLING_APP}"
PLAIN = SPARK4 / "local-1795969313432"  # an uncompressed log of a finished application


def _status(path):
    runs = store.open(path).runs()
    return dict(zip(runs.run_id, runs.status))


def test_a_rolling_log_finished_after_its_ingest_replaces_the_incomplete_copy(tmp_path):
    folder = tmp_path / "logs" / ROLLING.name
    shutil.copytree(ROLLING, folder)
    # Spark has written the application's end but not yet renamed its marker
    (folder / f"appstatus_{ROLLING_APP}").rename(folder / f"appstatus_{ROLLING_APP}.inprogress")
    first = ingest_event_logs([tmp_path / "logs"], tmp_path / "s")
    assert first.files[0].status == "incomplete"
    (folder / f"appstatus_{ROLLING_APP}.inprogress").rename(folder / f"appstatus_{ROLLING_APP}")
    # the events files are untouched: the folder read "unchanged" and the run stayed incomplete
    again = ingest_event_logs([tmp_path / "logs"], tmp_path / "s")
    assert (again.files[0].outcome, again.files[0].replaced) == ("ingested", "incomplete, 5,005 tasks")
    assert _status(tmp_path / "s") == {ROLLING_APP: "succeeded"}


def test_a_damaged_log_of_a_run_stored_cut_short_fails_and_says_what_is_kept(tmp_path):
    src = LOGS / "nds_q72_dataproc_2_2.zstd"
    data = bytearray(src.read_bytes())
    cut = tmp_path / "cut" / "application_1751493828576_0001.zstd"
    cut.parent.mkdir()
    cut.write_bytes(bytes(data[:len(data) // 2]))
    assert ingest_event_logs([cut], tmp_path / "s").files[0].status == "incomplete"
    data[400_000:400_008] = b"XXXXXXXX"
    full = tmp_path / "full" / "application_1751493828576_0001.zstd"
    full.parent.mkdir()
    full.write_bytes(bytes(data))
    (f,) = ingest_event_logs([full], tmp_path / "s").files
    # it read "already in the store (incomplete)", exit 0, not a word of the damage
    assert f.outcome == "failed" and "undecodable zstd data" in f.error
    assert f.fix.startswith("ingest an intact copy of this log; the store keeps its copy of run "
                            "application_1751493828576_0001 (incomplete, 8,425 tasks)")
    assert _status(tmp_path / "s") == {"application_1751493828576_0001": "incomplete"}


def test_a_named_pipe_in_the_history_folder_is_passed_over(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(PLAIN, logs)
    os.mkfifo(logs / "zz_pipe")
    assert [Path(s.path).name for s in find_logs([str(logs)])] == [PLAIN.name]
    # opening the pipe to fingerprint it waited forever, holding the store's writer lock
    code = "import sys; from sparkpredict.cli import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run([sys.executable, "-c", code, "ingest", str(logs), "--store", str(tmp_path / "s")],
                          check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "1 ingested" in done.stdout


def test_a_symlinked_folder_of_logs_is_searched_once(tmp_path):
    real, top = tmp_path / "real", tmp_path / "top"
    real.mkdir()
    top.mkdir()
    shutil.copy(PLAIN, real)
    (top / "more").symlink_to(real)
    (real / "loop").symlink_to(top)  # a cycle: walked once, not forever
    (top / "up").symlink_to(tmp_path)  # a link above the folder given: its siblings are not its logs
    sibling = tmp_path / "other-team"
    sibling.mkdir()
    shutil.copy(PLAIN, sibling / "local-2")
    found = find_logs([str(top)])
    assert [Path(s.path).name for s in found] == [PLAIN.name]
    assert ingest_event_logs([top], tmp_path / "s").files_ingested == 1


def test_a_file_name_that_is_not_utf8_is_ingested(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    name = os.fsdecode(b"bad\xff")
    shutil.copy(PLAIN, logs / name)
    (f,) = ingest_event_logs([logs], tmp_path / "s").files  # a traceback: "surrogates not allowed"
    assert f.outcome == "ingested"
    assert list(store.open(tmp_path / "s").runs().source_path) == [str(logs / "bad\\xff")]
    (again,) = ingest_event_logs([logs], tmp_path / "s").files
    assert again.outcome == "unchanged"


def _edited(tmp_path, event: str, **fields):
    lines = PLAIN.read_text().splitlines()
    for i, ln in enumerate(lines):
        ev = json.loads(ln)
        if ev["Event"] == event:
            lines[i] = json.dumps({**ev, **fields})
    out = tmp_path / "edited"
    out.write_text("\n".join(lines) + "\n")
    return out


@pytest.mark.parametrize("event, fields, says", [
    ("SparkListenerApplicationStart", {"App ID": None},
     "its SparkListenerApplicationStart event is unusable (its App ID is None)"),
    ("SparkListenerApplicationStart", {"Timestamp": 2**70}, "event is unusable (timestamp 1180591620717411303424 is out"),
])
def test_an_unusable_application_start_is_one_clear_failure(tmp_path, event, fields, says):
    (f,) = ingest_event_logs([_edited(tmp_path, event, **fields)], tmp_path / "s").files
    # each was "unexpected error ... report it", with a traceback on stderr
    assert f.outcome == "failed" and says in f.error and "report it" not in (f.fix or "")


def test_a_spark_version_that_is_no_string_is_a_skipped_line(tmp_path):
    (f,) = ingest_event_logs([_edited(tmp_path, "SparkListenerLogStart", **{"Spark Version": 4})],
                             tmp_path / "s").files
    assert f.outcome == "ingested" and any("line 1 has an unexpected structure" in w for w in f.warnings)


def test_a_rolling_log_without_its_first_file_names_it(tmp_path):
    folder = tmp_path / ROLLING.name
    shutil.copytree(ROLLING, folder)
    (folder / f"events_1_{ROLLING_APP}.zstd").unlink()
    (f,) = ingest_event_logs([folder], tmp_path / "s").files
    assert f.outcome == "failed"
    assert "rolling event log without events_1: its beginning" in f.error  # was "not a Spark event log"


def test_a_snappy_log_cut_in_its_header_reads_as_cut(tmp_path):
    cut = tmp_path / "local-1795969308180.snappy"
    cut.write_bytes((SPARK4 / cut.name).read_bytes()[:12])
    (f,) = ingest_event_logs([cut], tmp_path / "s").files
    assert f.outcome == "failed" and "cut off while being written" in f.error


def test_a_failure_later_jobs_recovered_from_is_not_why_the_run_failed(tmp_path):
    """Job 0 failed, jobs 1 and 2 succeeded, then the driver exited with code 3: the run's error
    was job 0's exception (the listener's RunRecord clears it the same way when a job succeeds)."""
    lines = PLAIN.read_text().splitlines()
    for i, ln in enumerate(lines):
        ev = json.loads(ln)
        if ev["Event"] == "SparkListenerJobEnd" and ev["Job ID"] == 0:
            ev["Job Result"] = {"Result": "JobFailed", "Exception": {"Message": "boom in job 0"}}
        elif ev["Event"] == "SparkListenerApplicationEnd":
            ev["ExitCode"] = 3
        lines[i] = json.dumps(ev)
    log = tmp_path / "exit3"
    log.write_text("\n".join(lines) + "\n")
    ingest_event_logs([log], tmp_path / "s")
    run = store.open(tmp_path / "s").runs().iloc[0]
    assert (run.status, run.error_message) == ("failed", "application exit code 3")
