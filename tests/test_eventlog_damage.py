"""Event logs damaged before their end, or gone: refused alone, in one line, nothing stored.

Real logs from tests/data/eventlogs, damaged here: a rolling folder without a middle file, a
zstd log with 8 bytes overwritten in the middle, a rolling file cut short, a broken link and
logs removed while ingest runs (the History Server's cleaner).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from sparkpredict import store
from sparkpredict.capture import eventlog, eventlog_files, eventlog_ingest
from sparkpredict.capture.eventlog import find_logs, parse_event_log
from sparkpredict.capture.eventlog_ingest import ingest_event_logs
from sparkpredict.errors import IngestError

LOGS = Path(__file__).parent / "data" / "eventlogs"
ROLLING = next((LOGS / "spark4").glob("eventlog_v2_*"))  # events_1..3, 5,005 tasks
SMALL = LOGS / "sparklens_local-1532512550423.json"
Q72 = LOGS / "nds_q72_dataproc_2_2.zstd"  # 13,504 tasks, 116.7 s


def _events(folder: Path, i: int) -> Path:
    (f,) = folder.glob(f"events_{i}_*")
    return f


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sparkpredict", *args], capture_output=True, text=True,
                          timeout=300, check=False)


def test_rolling_folder_with_a_missing_middle_file_fails_alone(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    gap = logs / ROLLING.name
    shutil.copytree(ROLLING, gap)
    _events(gap, 2).unlink()
    shutil.copy(SMALL, logs)
    with pytest.raises(IngestError, match="events_2 missing between events_1 and events_3"):
        parse_event_log(gap)
    st = store.open(tmp_path / "st", create=True)
    r = ingest_event_logs(logs, st)
    assert (r.files_ingested, r.files_failed) == (1, 1)
    assert "events_2 missing" in r.errors[str(gap)] and "Spark's reader refuses" in r.errors[str(gap)]
    assert list(st.runs().run_id) == ["local-1532512550423"]


def test_files_before_a_compacted_one_may_be_gone(tmp_path):
    """Spark's compaction writes events_<N>_<app>.compact and deletes the files before it:
    the indices must be consecutive from the newest compact file on, as Spark's reader checks."""
    folder = tmp_path / ROLLING.name
    shutil.copytree(ROLLING, folder)
    e1, e2 = _events(folder, 1), _events(folder, 2)
    head = b"".join(pa.CompressedInputStream(pa.OSFile(str(f)), "zstd").read() for f in (e1, e2))
    (folder / (e2.name + ".compact")).write_bytes(pa.compress(head, "zstd", asbytes=True))
    whole = parse_event_log(ROLLING)
    # a stale events_1 next to the compact file is ignored, a removed one is not missed
    for remove in ([], [e1, e2]):
        for f in remove:
            f.unlink()
        got = parse_event_log(folder)
        assert got.status == "succeeded" and got.damage is None
        assert got.tables["tasks"].num_rows == whole.tables["tasks"].num_rows == 5005
        assert any("compacted by Spark" in w for w in got.warnings)
    # a gap after the compact file still fails
    shutil.copy(_events(folder, 3), folder / _events(folder, 3).name.replace("events_3", "events_5"))
    with pytest.raises(IngestError, match="events_4 missing"):
        parse_event_log(folder)


def test_a_rolling_file_cut_short_before_the_last_is_damage(tmp_path):
    folder = tmp_path / ROLLING.name
    shutil.copytree(ROLLING, folder)
    e1 = _events(folder, 1)
    e1.write_bytes(e1.read_bytes()[: e1.stat().st_size // 2])
    got = parse_event_log(folder)
    assert got.damage and "later files follow" in got.damage
    r = ingest_event_logs(folder, tmp_path / "st")
    assert r.files_failed == 1 and "not ingested" in r.errors[str(folder)]
    # cut at the end (a log still being written): stored, as an incomplete run
    last = tmp_path / "last" / ROLLING.name
    shutil.copytree(ROLLING, last)
    e3 = _events(last, 3)
    e3.write_bytes(e3.read_bytes()[: e3.stat().st_size // 2])
    r = ingest_event_logs(last, tmp_path / "st")
    assert r.files_ingested == 1 and r.files[0].status == "incomplete"


def test_a_plain_rolling_file_cut_inside_an_event_before_the_last_is_damage(tmp_path):
    """Spark writes each event whole, newline included, before it rolls to the next file: a
    plain (uncompressed) events_<N> file that ends inside a line was cut, and the events after
    the cut are lost mid-run, as with a cut compressed file. Once stored, the run would look
    complete (its ApplicationEnd is in the last file) with thousands of tasks missing."""
    app = "local-1795969318009"
    folder = tmp_path / ROLLING.name
    folder.mkdir()
    shutil.copy(next(ROLLING.glob("appstatus_*")), folder)
    for i in (1, 2, 3):  # the real rolling log, as Spark writes it without compression
        raw = pa.CompressedInputStream(pa.OSFile(str(_events(ROLLING, i))), "zstd").read()
        (folder / f"events_{i}_{app}").write_bytes(raw)
    whole = parse_event_log(folder)
    assert whole.status == "succeeded" and whole.damage is None and not whole.warnings
    e1 = folder / f"events_1_{app}"
    data = e1.read_bytes()
    e1.write_bytes(data[: data.index(b"\n", len(data) // 2) - 50])  # inside a line
    got = parse_event_log(folder)
    assert got.damage and f"events_1_{app} ends inside an event" in got.damage
    assert "later files follow" in got.damage
    r = ingest_event_logs(folder, tmp_path / "st")
    assert r.files_failed == 1 and "not ingested" in r.errors[str(folder)]
    assert not (tmp_path / "st").exists()
    # the last file cut inside an event: a log still being written, stored as incomplete
    # with one warning for the cut line
    last = tmp_path / "last" / ROLLING.name
    shutil.copytree(folder, last)
    (last / e1.name).write_bytes(data)
    e3 = last / f"events_3_{app}"
    tail = e3.read_bytes()
    e3.write_bytes(tail[: tail.index(b"\n", len(tail) // 2) - 50])
    got = parse_event_log(last)
    assert got.damage is None and got.status == "incomplete"
    assert [w for w in got.warnings if "line" in w] == [
        (f"{e3.name}: the last line (line {got.lines}) ends in the middle of an event, cut off while "
         "the log was being written or copied; skipped")]
    r = ingest_event_logs(last, tmp_path / "st")
    assert r.files_ingested == 1 and r.files[0].status == "incomplete"


def test_undecodable_data_in_the_middle_is_refused_and_an_intact_copy_then_ingests(tmp_path):
    bad = tmp_path / "damaged" / Q72.name
    bad.parent.mkdir()
    data = bytearray(Q72.read_bytes())
    data[400_000:400_008] = b"\xde\xad\xbe\xef\x01\x02\x03\x04"
    bad.write_bytes(bytes(data))
    parsed = parse_event_log(bad)  # the events before the damage, for a look
    assert parsed.damage and "undecodable zstd data" in parsed.damage
    assert 0 < parsed.tables["tasks"].num_rows < 13504 / 2
    st = str(tmp_path / "st")
    r = _cli("ingest", str(bad), "--store", st)
    assert r.returncode == 1, r.stdout + r.stderr
    (failed,) = [ln for ln in r.stdout.splitlines() if ln.startswith("FAILED")]
    assert "undecodable zstd data" in failed and "would lack the events lost there" in failed
    assert "  fix: ingest an intact copy of this log" in r.stdout.splitlines()
    assert "Traceback" not in r.stderr and "warning" not in r.stdout
    assert not os.path.exists(st)
    r = _cli("ingest", str(Q72), "--store", st)  # the intact copy of the same application
    assert r.returncode == 0 and "ingested" in r.stdout, r.stdout + r.stderr
    run = store.open(st).runs().iloc[0]
    assert run.status == "succeeded" and run.num_tasks == 13504


def test_a_broken_link_or_a_log_removed_meanwhile_is_that_logs_one_line_error(tmp_path, monkeypatch):
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(SMALL, logs)
    os.symlink(tmp_path / "nowhere" / "app-1.zstd", logs / "app-1.zstd")
    st = str(tmp_path / "st")
    r = _cli("ingest", str(logs), "--store", st)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    (failed,) = [ln for ln in r.stdout.splitlines() if ln.startswith("FAILED")]
    assert failed.count("app-1.zstd") == 1 and "cannot read" in failed and "broken link" in failed
    assert "1 ingested" in r.stdout
    # removed by the History Server's cleaner between finding the logs and reading them
    shutil.copy(Q72, logs)
    shutil.copytree(ROLLING, logs / ROLLING.name)
    found = find_logs([logs])
    (logs / Q72.name).unlink()
    shutil.rmtree(logs / ROLLING.name)
    monkeypatch.setattr(eventlog_ingest, "find_logs", lambda paths: found)
    report = ingest_event_logs(logs, st)
    assert report.files_failed == 3 and report.files_unchanged == 1
    for name in (Q72.name, ROLLING.name, "app-1.zstd"):
        assert "cannot read" in report.errors[str(logs / name)]
    # a rolling folder gone before its files were listed
    gone = eventlog_files.rolling_log(str(tmp_path / "gone" / ROLLING.name))
    assert gone.error is not None and "cannot read" in gone.error.message
    with pytest.raises(IngestError, match="cannot read"):
        eventlog._parse_source(gone)


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_an_ingest_that_stores_nothing_leaves_no_empty_store_behind(tmp_path):
    """A store made for a first ingest whose every log fails is removed again: the path then
    reads as no store at all (suggest says to record a run), not as a store without runs."""
    bad = tmp_path / "bad.json"
    bad.write_bytes(SMALL.read_bytes()[:20000] + b"\x00\xff not an event\n" + SMALL.read_bytes()[20050:])
    assert parse_event_log(bad).damage
    new = tmp_path / "deep" / "st"
    r = ingest_event_logs(bad, new)
    assert r.files_failed == 1 and r.files_ingested == 0 and r.store_exists is False
    assert not new.exists() and (tmp_path / "deep").exists()
    with pytest.raises(IngestError):  # on_error="raise" stops at the first log: the same
        ingest_event_logs(bad, new, on_error="raise")
    assert not new.exists()
    # a folder the user made stays, empty as it was
    made = tmp_path / "made"
    made.mkdir()
    ingest_event_logs(bad, made)
    assert made.is_dir() and not any(made.iterdir())
    # a store that held runs before is left byte for byte as it was
    kept = tmp_path / "kept"
    assert ingest_event_logs(SMALL, kept).files_ingested == 1
    before = _tree(kept)
    junk = tmp_path / "junk.json"  # (the damaged copy of the stored run would be skipped as stored)
    junk.write_text('{"Event": "NotSpark"}\n' * 3)
    r = ingest_event_logs(junk, kept)
    assert r.files_failed == 1 and r.store_exists and _tree(kept) == before
    # and a store created by an ingest whose one log of two fails keeps the other's run
    both = tmp_path / "both"
    r = ingest_event_logs([bad, SMALL], both)
    assert (r.files_ingested, r.files_failed) == (1, 1)
    assert list(store.open(both).runs().run_id) == ["local-1532512550423"]


def test_a_zstd_log_cut_before_its_first_block_decodes_is_called_cut_not_foreign(tmp_path):
    # 20 kB of a 1.2 MB log: the first zstd block is not whole, so not one line decodes
    cut = tmp_path / "app-cut.zstd"
    cut.write_bytes(Q72.read_bytes()[:20_000])
    r = ingest_event_logs([cut], tmp_path / "st")
    assert r.files_failed == 1 and r.files_ingested == 0
    assert "zstd stream ends before its first line decodes: it was cut off" in r.errors[str(cut)]
    assert "not a Spark event log" not in r.errors[str(cut)]
    assert not (tmp_path / "st").exists()
    # a plain file that is no log at all is still called foreign
    other = tmp_path / "notes.txt"
    other.write_text("a file that is not an event log\n")
    r = ingest_event_logs([other], tmp_path / "st")
    assert r.files_failed == 1 and "not a Spark event log" in r.errors[str(other)]


def test_an_empty_file_a_compressed_log_without_its_suffix_and_a_lost_start_line_say_what_they_are(tmp_path):
    """Each read "no SparkListenerApplicationStart event: not a Spark event log, or its beginning
    is missing"; the log without only its start line said it "was cut off", though it ends."""
    empty = tmp_path / "app-empty"
    empty.write_bytes(b"")
    with pytest.raises(IngestError, match=r"the file is empty \(0 bytes\), not an event log"):
        parse_event_log(empty)
    bare = tmp_path / "application_1751493828576_0001"
    bare.write_bytes(Q72.read_bytes())
    with pytest.raises(IngestError, match="it looks zstd-compressed, but its name has no .zstd suffix") as e:
        parse_event_log(bare)
    assert "name it with a .zstd suffix (application_1751493828576_0001.zstd)" in e.value.fix
    headless = tmp_path / "local-1532512550423"
    headless.write_bytes(b"".join(line for line in SMALL.read_bytes().splitlines(keepends=True)
                                  if b'"SparkListenerApplicationStart"' not in line))
    with pytest.raises(IngestError, match="its SparkListenerApplicationStart event is missing "
                                          r"\(the log has 29 lines, through its SparkListenerApplicationEnd\)") as e:
        parse_event_log(headless)
    assert "cut off" not in e.value.message
    # named as Spark names it, the same bytes are ingested
    renamed = tmp_path / "ok" / "application_1751493828576_0001.zstd"
    renamed.parent.mkdir()
    bare.rename(renamed)
    assert ingest_event_logs(renamed, tmp_path / "st").files_ingested == 1


def _edited(tmp_path: Path, edit) -> Path:
    """A copy of SMALL with ``edit(event)`` applied to each of its events (JSON lines)."""
    import json

    lines = []
    for line in SMALL.read_bytes().splitlines():
        ev = json.loads(line)
        edit(ev)
        lines.append(json.dumps(ev, separators=(",", ":")).encode())
    out = tmp_path / "logs" / SMALL.name
    out.parent.mkdir(exist_ok=True)
    out.write_bytes(b"\n".join(lines) + b"\n")
    return out


def _finish_before_launch(ev: dict) -> None:
    if ev["Event"] == "SparkListenerTaskEnd" and ev["Task Info"]["Task ID"] in (2, 5):
        ev["Task Info"]["Finish Time"] = ev["Task Info"]["Launch Time"] - 5


def _negative_run_time(ev: dict) -> None:
    if ev["Event"] == "SparkListenerTaskEnd" and ev["Task Info"]["Task ID"] == 3:
        ev["Task Metrics"]["Executor Run Time"] = -5


def _stage_completed_before_submitted(ev: dict) -> None:
    if ev["Event"] == "SparkListenerStageCompleted" and ev["Stage Info"]["Stage ID"] == 1:
        ev["Stage Info"]["Completion Time"] = ev["Stage Info"]["Submission Time"] - 5


def _killed_negative_run_time(ev: dict) -> None:
    _negative_run_time(ev)
    if ev["Event"] == "SparkListenerTaskEnd" and ev["Task Info"]["Task ID"] == 3:
        ev["Task Info"]["Killed"] = True


@pytest.mark.parametrize("edit, said", [
    (_finish_before_launch, "2 tasks finishing before they launched (the first: task 2 of stage "),
    (_negative_run_time, "1 task with a negative Executor Run Time (the first: task 3 of stage 0: Executor Run Time -5 ms)"),
    (_stage_completed_before_submitted, "1 stage completed before it was submitted (the first: stage 1 "),
])
def test_a_log_with_times_spark_never_writes_is_stored_with_a_warning(tmp_path, capsys, edit, said):
    """A log whose tasks finish before they launch, run a negative time, or whose stage completes
    before its submission was ingested with no word, its task rows keeping durations below zero
    (which `simulate` read as tasks taking no time). A driver's clock stepped back writes such
    times too, and no intact copy of that log exists: it is stored as written, with a warning
    naming what is wrong. A replay, from the log or from the store alike, refuses tasks ending
    before they start; the other two it does not read, and the log's replay, which had refused
    them while the stored run's replayed, now answers as the unedited log's does."""
    import json

    from sparkpredict.cli import main

    bad = _edited(tmp_path, edit)
    parsed = parse_event_log(bad)
    assert parsed.damage is None and parsed.false_times is not None and said in parsed.false_times
    backwards = edit is _finish_before_launch
    assert (parsed.backward_tasks is not None) is backwards
    st = tmp_path / "st"
    capsys.readouterr()
    assert main(["ingest", str(bad), "--store", str(st)]) == 0
    out = capsys.readouterr()
    assert said in out.out + out.err and "times Spark never writes: the driver's clock stepped back" in out.out + out.err
    assert ("`sparkpredict simulate` will not replay this run" in out.out + out.err) is backwards
    assert "`sparkpredict store edit RUN_ID --exclude` keeps it out of training" in out.out + out.err
    (run,) = store.open(st).runs().run_id
    r = ingest_event_logs(bad, tmp_path / "st2", on_error="raise")
    assert r.files_ingested == 1 and any(said in w for w in r.files[0].warnings)
    if backwards:
        # replayed straight from the log, it is refused, not read as tasks that took no time
        assert main(["simulate", str(bad)]) == 2
        err = capsys.readouterr().err
        assert f"error: {bad}: it has " in err and said in err and "fix: replay another run's log; if this one was altered, replay an intact copy" in err
        assert main(["simulate", run, "--store", str(st)]) == 2
        assert "task rows that end before they start" in capsys.readouterr().err
        return
    (tmp_path / "plain").mkdir()
    plain = _edited(tmp_path / "plain", lambda ev: None)
    answers = []
    for args in ([str(bad)], [run, "--store", str(st)], [str(plain)]):
        assert main(["simulate", *args, "--executors", "1,2,4", "--json"]) == 0
        got = json.loads(capsys.readouterr().out)
        answers.append([p["predicted_runtime_s"] for p in got["predictions"]])
    assert answers[0] == answers[1] == answers[2] and len(answers[0]) == 3


def test_a_killed_tasks_negative_run_time_is_sparks_own_and_no_warning(tmp_path):
    """Spark before 3.0.2 wrote a task killed before it started a run time of System.nanoTime()
    - 0, below zero where the clock's origin lies ahead (SPARK-32898): real logs of speculation
    hold them, and they are no sign of an altered log."""
    parsed = parse_event_log(_edited(tmp_path, _killed_negative_run_time))
    assert parsed.false_times is None and parsed.damage is None
    assert not any("never writes" in w for w in parsed.warnings)


def test_the_unedited_copy_of_that_log_has_no_damage(tmp_path):
    """The edits above are what is refused: the log written back unedited parses clean."""
    parsed = parse_event_log(_edited(tmp_path, lambda ev: None))
    assert parsed.damage is None and parsed.tables["tasks"].num_rows == 8


def test_a_log_whose_lines_are_out_of_order_is_ingested_with_a_warning_naming_how_many(tmp_path):
    """A log whose lines were shuffled was ingested keeping 6 of its 8 tasks, with no word: the
    task ends after the application's end were dropped, and those before their stage's
    submission or the application's start were read as if in place. Spark writes its events in
    the order it posts them, one queue: the ingest now says how many came out of that order."""
    import random

    lines = SMALL.read_bytes().splitlines()
    kind = [ln[10:ln.index(b'"', 10)].decode() for ln in lines]
    start, end = kind.index("SparkListenerApplicationStart"), kind.index("SparkListenerApplicationEnd")
    first_end = kind.index("SparkListenerTaskEnd")
    stage_done = kind.index("SparkListenerStageCompleted")
    # the application's end moved before the first stage's completion (the stage and the task
    # ends after it, all successful, are left out); a task end moved before the application's start
    moved = [*lines[:start], lines[first_end], *lines[start:first_end], *lines[first_end + 1:stage_done],
             lines[end], *lines[stage_done:end], *lines[end + 1:]]
    log = tmp_path / "logs" / SMALL.name
    log.parent.mkdir()
    log.write_bytes(b"\n".join(moved) + b"\n")
    n_after = sum(k in ("SparkListenerTaskEnd", "SparkListenerStageCompleted") for k in kind[stage_done:end])
    r = ingest_event_logs(log, tmp_path / "st")
    (f,) = r.files
    assert f.outcome == "ingested"
    (said,) = [w for w in f.warnings if "out of the order" in w]
    assert said.startswith("events out of the order Spark writes them in: 1 task end or stage completion "
                           "before the stage's submission; 1 stage or task event before the "
                           f"application's start; {n_after} successful task ends or stage completions "
                           "after the application's end, left out of the rows. The log's lines look "
                           "reordered")
    assert said.endswith("ingest an intact copy of it")
    # the probe's own damage: a shuffle of every line
    random.Random(3).shuffle(lines)
    log.write_bytes(b"\n".join(lines) + b"\n")
    assert any("out of the order" in w for w in parse_event_log(log).warnings)


def test_successful_ends_after_the_application_end_alone_are_said_without_calling_the_log_reordered(tmp_path):
    """Spark posts the application's end when it stops, and a task that finishes meanwhile comes
    after it: such a log is in Spark's order, and its warning says what was left out, not that
    its lines look reordered."""
    lines = SMALL.read_bytes().splitlines()
    kind = [ln[10:ln.index(b'"', 10)].decode() for ln in lines]
    end = kind.index("SparkListenerApplicationEnd")
    last_task = max(i for i, k in enumerate(kind) if k == "SparkListenerTaskEnd")
    moved = [*lines[:last_task], *lines[last_task + 1:end + 1], lines[last_task], *lines[end + 1:]]
    log = tmp_path / SMALL.name
    log.write_bytes(b"\n".join(moved) + b"\n")
    warnings = parse_event_log(log).warnings
    assert ("1 successful task end or stage completion after the application's end, left out of the rows "
            "(work that finished as the application stopped)") in warnings
    assert not any("reordered" in w for w in warnings)
