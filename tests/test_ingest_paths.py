"""The paths given to `sparkpredict ingest`: a file of a rolling log given alone, and a log
reached twice in one call.

A file of a rolling log (eventlog_v2_*/events_2_*) was read as a log of its own and refused as
"not a Spark event log: fix: ingest Spark event logs only"; `ingest dir dir/file dir/file`
said "8 logs: 6 ingested, 2 unchanged" of logs it had ingested a moment before in that call.
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
from pathlib import Path

import pytest

from sparkpredict import store
from sparkpredict.capture.eventlog import parse_event_log
from sparkpredict.capture.eventlog_files import find_logs, unique_logs
from sparkpredict.capture.eventlog_ingest import ingest_event_logs
from sparkpredict.cli import main
from sparkpredict.errors import IngestError

LOGS = Path(__file__).parent / "data" / "eventlogs"
ROLLING = next((LOGS / "spark4").glob("eventlog_v2_*"))  # events_1..3 and appstatus_
SMALL = [LOGS / "spark4" / "local-1795969295677.zstd", LOGS / "sparklens_local-1532512550423.json"]


@pytest.fixture
def logs(tmp_path):
    """A history folder: two small single-file logs and the rolling log."""
    folder = tmp_path / "logs"
    folder.mkdir()
    for f in SMALL:
        shutil.copy(f, folder)
    shutil.copytree(ROLLING, folder / ROLLING.name)
    return folder


def _events(folder: Path, n: int) -> Path:
    (f,) = folder.glob(f"events_{n}_*")
    return f


def test_a_file_of_a_rolling_log_says_to_ingest_its_folder(logs, tmp_path, capsys):
    folder = logs / ROLLING.name
    part = _events(folder, 2)
    st = tmp_path / "st"
    assert main(["ingest", str(part), "--store", str(st)]) == 1
    out = capsys.readouterr().out
    assert "not a Spark event log" not in out and "ingest Spark event logs only" not in out
    assert f"{part}: one file of the rolling event log {folder} (" in out
    assert f"  fix: ingest its folder instead: sparkpredict ingest {shlex.quote(str(folder))}\n" in out
    assert not st.exists()  # nothing of it stored: the folder can be ingested later
    # the API says the same, for every file of the folder (the first one has the app's start,
    # but not the stages and end the later ones hold)
    for f in sorted(folder.iterdir()):
        with pytest.raises(IngestError, match="one file of the rolling event log") as e:
            parse_event_log(f)
        assert e.value.fix == f"ingest its folder instead: sparkpredict ingest {shlex.quote(str(folder))}"
    # and the fix works
    assert main(["ingest", str(folder), "--store", str(st)]) == 0
    assert list(store.open(st).runs().run_id) == [ROLLING.name.removeprefix("eventlog_v2_")]


def test_a_file_named_like_a_rolling_one_outside_such_a_folder_is_read_as_a_log(tmp_path):
    """Only a file in an eventlog_v2_* folder is one file of a rolling log."""
    elsewhere = tmp_path / "copies"
    elsewhere.mkdir()
    shutil.copy(SMALL[0], elsewhere / "events_1_mine.zstd")
    (src,) = find_logs([elsewhere / "events_1_mine.zstd"])
    assert src.error is None and src.rolling_folder is None
    assert ingest_event_logs(elsewhere, tmp_path / "st").files_ingested == 1


def test_a_log_given_twice_is_read_and_counted_once(logs, tmp_path, capsys):
    one = logs / SMALL[0].name
    st = str(tmp_path / "st")
    report = ingest_event_logs([logs, one, one, _events(logs / ROLLING.name, 2)], st)
    assert (report.files_seen, report.files_ingested, report.files_unchanged, report.files_failed) == (3, 3, 0, 0)
    assert report.duplicates == [str(one), str(one), str(_events(logs / ROLLING.name, 2))]
    assert sorted(f.path for f in report.files) == sorted(str(p) for p in (one, logs / SMALL[1].name,
                                                                           logs / ROLLING.name))
    # the CLI: one count, and what it left out
    other = str(tmp_path / "st2")
    assert main(["ingest", str(logs), str(one), str(one), "--store", other]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last == f"3 logs: 3 ingested, 0 unchanged, 0 already in the store, 0 failed -> {other} " \
                   "(2 duplicate paths ignored)"
    assert main(["ingest", str(one), "--store", other, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["files_seen"], doc["files_unchanged"], doc["duplicates_ignored"]) == (1, 1, [])
    assert main(["ingest", str(one), str(logs / ".." / "logs" / one.name), "--store", other]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"1 log: 0 ingested, 1 unchanged, 0 already in the store, 0 failed -> {other} (1 duplicate path ignored)")


def test_every_file_of_a_rolling_folder_given_is_one_log(logs, tmp_path):
    """`ingest eventlog_v2_x/*`: one error for the folder, not one per file."""
    folder = logs / ROLLING.name
    files = sorted(folder.iterdir())
    report = ingest_event_logs(files, tmp_path / "st")
    (failed,) = report.files
    assert failed.outcome == "failed" and str(folder) in (failed.error or "") and failed.path == str(files[0])
    assert report.duplicates == [str(f) for f in files[1:]]


def test_unique_logs_keeps_the_first_of_each_and_follows_links(logs, tmp_path):
    link = tmp_path / "link.zstd"
    os.symlink(logs / SMALL[0].name, link)
    part = _events(logs / ROLLING.name, 3)
    found = find_logs([part, logs, link])
    kept, repeated = unique_logs(found)
    # the rolling folder, found after its file, is kept: the file alone is no log
    assert [Path(s.path).name for s in kept] == [ROLLING.name, SMALL[0].name, SMALL[1].name]
    assert repeated == [str(part), str(link)]
    assert unique_logs([]) == ([], [])


def test_file_uris_are_read_as_their_paths_and_other_schemes_say_to_copy_the_logs(tmp_path, capsys):
    """spark.eventLog.dir is usually a URI (file:/tmp/spark-events): `ingest file:/...` said
    "no such file or folder", with a fix naming spark.eventLog.dir itself."""
    folder = tmp_path / "spark events"
    folder.mkdir()
    shutil.copy(LOGS / "sparklens_local-1532512550423.json", folder)
    for uri in (folder.as_uri(), f"file:{folder}", f"file://localhost{folder}"):
        (log,) = find_logs([uri])
        assert log.path == str(folder / "sparklens_local-1532512550423.json")
    assert main(["ingest", "--store", str(tmp_path / "s"), folder.as_uri()]) == 0
    assert len(store.open(tmp_path / "s").runs()) == 1
    for bad, said in (("hdfs:///spark-logs", "ingest reads event logs on this machine, not from hdfs://"),
                      ("file://otherhost/logs", "names the host 'otherhost'")):
        with pytest.raises(IngestError, match=said):
            find_logs([bad])
        assert main(["ingest", "--store", str(tmp_path / "t"), bad]) == 2
        err = capsys.readouterr().err
        assert said in err and "fix: " in err
    assert not (tmp_path / "t").exists()
