"""One copy of each run in the store: ingests at once wait for each other, a run ingest stored
twice keeps its latest copy, and a cut copy that was edited is not replaced."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparkpredict import store
from sparkpredict.capture.eventlog_ingest import ingest_event_logs
from sparkpredict.cli import main
from sparkpredict.errors import StoreError
from sparkpredict.store.io import new_batch_id

LOGS = Path(__file__).parent / "data" / "eventlogs"
Q72 = LOGS / "nds_q72_dataproc_2_2.zstd"  # 13,504 tasks, 49 stages
PLAIN = LOGS / "rp_nosql_eventlog.json"


def test_three_ingests_at_once_store_the_log_once(tmp_path):
    """Three overlapping `sparkpredict ingest` processes of one folder each stored its log: the
    tasks table held 40,512 rows for 13,504 tasks."""
    st = tmp_path / "st"
    assert main(["ingest", str(PLAIN), "--store", str(st)]) == 0  # the store exists before the race
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    cmd = [sys.executable, "-m", "sparkpredict", "ingest", str(Q72), "--store", str(st), "--json"]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [e for _, e in outs]
    s = store.open(st)
    tasks = s.tasks()
    assert len(tasks) == 13504 + 4 and not tasks.duplicated(["run_id", "task_id", "attempt"]).any()
    assert len(s.stages()) == 49 + 1
    ingested = sum('"outcome": "ingested"' in out for out, _ in outs)
    assert ingested == 1, outs


def _copy_batch(st: Path, batch: str) -> str:
    """A second committed copy of ``batch`` under a later id, as two racing ingests left it."""
    again = new_batch_id("ingest-" + batch.split("-ingest-", 1)[1].rsplit("-", 1)[0])
    for table in ("stages", "tasks", "executors", "runs"):  # the runs file (the commit) last
        for f in (st / table).glob(f"part-{batch}.parquet"):
            shutil.copy(f, f.with_name(f"part-{again}.parquet"))
    return again


def test_a_run_stored_twice_keeps_its_latest_copy_at_the_next_ingest(tmp_path, caplog):
    st = tmp_path / "st"
    assert ingest_event_logs(PLAIN, st).files_ingested == 1
    (first,) = [f.name[5:-8] for f in (st / "runs").glob("part-*.parquet")]
    later = _copy_batch(st, first)
    # the race left every task twice in the files; readers take the latest copy's only
    assert sum(len(pq.read_table(f)) for f in (st / "tasks").glob("part-*.parquet")) == 2 * 4
    assert len(store.open(st).tasks()) == 4
    report = ingest_event_logs(PLAIN, st)
    assert report.files_unchanged == 1
    assert [f.name[5:-8] for f in (st / "runs").glob("part-*.parquet")] == [later]
    assert len(store.open(st).tasks()) == 4
    assert "stored by ingest 2 times; kept the latest copy" in caplog.text


def test_an_edited_cut_copy_is_not_replaced_and_the_warning_says_why(tmp_path, capsys):
    trunc = tmp_path / "d" / "trunc.zstd"
    trunc.parent.mkdir()
    trunc.write_bytes(Q72.read_bytes()[:600_000])
    st = str(tmp_path / "st")
    assert main(["ingest", str(trunc), "--store", st]) == 0
    rid = store.open(st).runs().run_id[0]
    assert main(["store", "edit", rid, "--job", "nightly", "--store", st]) == 0
    capsys.readouterr()
    assert main(["ingest", str(Q72), "--store", st]) == 0
    out = capsys.readouterr().out
    assert "already in the store (incomplete)" in out
    (warning,) = [ln for ln in out.splitlines() if ln.startswith("  warning:")]
    assert "(stored: incomplete, 8,354 tasks; this log: succeeded, 13,504 tasks)" in warning
    assert "cannot be replaced (it was edited with `sparkpredict store edit`" in warning
    s = store.open(st)
    assert (s.runs().job[0], len(s.tasks())) == ("nightly", 8354)  # the edit and the copy kept


def _as_user(argv, capsys, unreadable):
    """(exit code, stdout, stderr) of `sparkpredict ARGV` where file permissions apply: as root,
    in a process without the capability to read anything (setpriv)."""
    if not os.access(unreadable, os.R_OK):
        from sparkpredict.cli import main as run

        code = run(argv)
        out, err = capsys.readouterr()
        return code, out, err
    if shutil.which("setpriv") is None:
        pytest.skip("running as root, and no setpriv to drop the capability to read anything")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    cmd = ["setpriv", "--bounding-set=-all", "--inh-caps=-all", sys.executable, "-m", "sparkpredict", *argv]
    r = subprocess.run(cmd, check=False, env=env, capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout, r.stderr


def test_a_folder_ingest_cannot_list_is_named_not_read_as_empty(tmp_path, capsys):
    """A folder os.walk could not list was skipped without a word: the folder given read as
    "no event logs found", and one inside it lost its logs silently."""
    logs = tmp_path / "logs"
    (logs / "sub").mkdir(parents=True)
    shutil.copy(PLAIN, logs / "sub")
    shutil.copy(Q72, logs)
    st = tmp_path / "st"
    os.chmod(logs / "sub", 0)
    try:
        code, out, err = _as_user(["ingest", str(logs), "--store", str(st)], capsys, logs / "sub")
        # the folder inside is that folder's failure; the log beside it is ingested
        assert code == 1, err
        assert f"FAILED    {logs / 'sub'}: cannot read: Permission denied" in out, out
        assert "1 ingested" in out and "1 failed" in out
        code, out, err = _as_user(["ingest", str(logs / "sub"), "--store", str(tmp_path / "st2")], capsys, logs / "sub")
        assert code == 2 and f"error: {logs / 'sub'}: cannot read: Permission denied" in err, err
        assert "no event logs found" not in err and not (tmp_path / "st2").exists()
    finally:
        os.chmod(logs / "sub", 0o755)
    assert len(store.open(st).runs()) == 1


def _cut_q72(tmp_path):
    trunc = tmp_path / "cut" / "trunc.zstd"
    trunc.parent.mkdir()
    trunc.write_bytes(Q72.read_bytes()[:600_000])
    return trunc


def test_a_replaced_copy_keeps_its_job_and_is_no_new_run(tmp_path):
    st = tmp_path / "st"
    assert ingest_event_logs(_cut_q72(tmp_path), st, job="nightly").files_ingested == 1
    report = ingest_event_logs(Q72, st)  # no --job: the log's app name would have been taken
    (f,) = report.files
    assert f.outcome == "ingested" and f.replaced and report.runs_added == 0
    assert list(store.open(st).runs().job) == ["nightly"]


def test_runs_whose_ids_share_a_batch_label_are_told_apart_by_the_ids_they_hold(tmp_path):
    """A batch label is the run id cut to 53 characters: two such runs' copies were taken for one
    run's (not reduced) and a fuller log was refused as "edited"."""
    from sparkpredict.capture import eventlog_ingest as EI

    long_a, long_b = "app-" + "x" * 60 + "-a", "app-" + "x" * 60 + "-b"
    assert EI._label(long_a) == EI._label(long_b)
    st = store.open(tmp_path / "st", create=True)
    from sparkpredict.capture.eventlog import parse_event_log

    parsed = parse_event_log(PLAIN)
    for rid in (long_a, long_b, long_a):  # long_a twice, as a race left it
        tables = {}
        for name, t in parsed.tables.items():
            i = t.schema.get_field_index("run_id")
            tables[name] = t.set_column(i, "run_id", pa.array([rid] * t.num_rows, pa.string()))
        st.append(tables, batch_id=new_batch_id("ingest-" + rid))
    # three copies in the files; readers take long_a's latest and keep long_b, whose label it shares
    assert sum(len(pq.read_table(f)) for f in (tmp_path / "st" / "tasks").glob("part-*.parquet")) == 3 * 4
    before = st.tasks()
    assert len(before) == 2 * 4 and sorted(before.run_id.unique()) == sorted([long_a, long_b])
    EI._one_copy_each(st)
    tasks = st.tasks()
    assert len(tasks) == 2 * 4 and sorted(tasks.run_id.unique()) == sorted([long_a, long_b])


def test_a_reader_skips_a_batch_dropped_after_it_listed_it(tmp_path, monkeypatch):
    """drop_batch can land between a reader's listing and its reads: the reader had read that as
    an unreadable Parquet file, to be moved out of the store."""
    from sparkpredict.store import io as store_io

    st = tmp_path / "st"
    ingest_event_logs(PLAIN, st)
    s = store.open(st)
    (batch,) = s.committed_batches()
    marks = s.visible_marks()
    listed = dict(marks)
    real = store_io.Store.visible_marks
    calls = []

    def visible(self, marks=None):
        calls.append(1)
        return dict(listed) if len(calls) == 1 else real(self, marks)

    files = s._listing("tasks")  # what the reader listed, before the drop
    real_listing = store_io.Store._listing
    s.drop_batch(batch)  # as another process's ingest would, between the listing and the read
    monkeypatch.setattr(store_io.Store, "visible_marks", visible)
    monkeypatch.setattr(store_io.Store, "_listing",
                        lambda self, t: files if t == "tasks" else real_listing(self, t))
    # listed committed, then gone: read again from a new listing, which has no such batch
    assert s.read("tasks").empty and len(calls) == 4
    # a file missing from a batch still committed is damage, named as such
    monkeypatch.setattr(store_io.Store, "visible_marks", lambda self, marks=None: dict(listed))
    with pytest.raises(StoreError, match="of a committed batch is missing from the store"):
        s.read("tasks")


def _two_copies(tmp_path: Path, name: str) -> str:
    """A store holding two ingested copies of one run, as the review made it: a cut copy of
    ``PLAIN`` ingested into it, and the files of a store that ingested the whole log copied in
    (as an ingest stopped between storing the fuller copy and removing the cut one leaves it)."""
    cut = tmp_path / f"{name}-logs" / PLAIN.name
    cut.parent.mkdir()
    lines = PLAIN.read_text().splitlines(keepends=True)
    cut.write_text("".join(lines[:len(lines) // 2]))
    st, whole = tmp_path / name, tmp_path / f"{name}-whole"
    assert ingest_event_logs(cut, st, compact=False).files_ingested == 1
    assert ingest_event_logs(PLAIN, whole, compact=False).files_ingested == 1
    for table in ("stages", "tasks", "executors", "runs"):  # the runs file (the commit) last
        for f in (whole / table).glob("part-*.parquet"):
            shutil.copy(f, st / table / f.name)
    return str(st)


def test_the_repair_of_a_run_stored_twice_is_printed_and_in_the_json(tmp_path, capsys):
    """The repair was only logged, at a level the CLI holds back: the docs' "and says so" was
    never seen, and --json had no trace of it."""
    SPARKLENS = LOGS / "sparklens_local-1532512550423.json"
    st = _two_copies(tmp_path, "z4")
    rid = store.open(st).runs().run_id.iloc[0]
    assert main(["ingest", str(SPARKLENS), "--store", st, "--no-compact"]) == 0
    out = capsys.readouterr().out
    assert (f"repaired  {st}: run {rid} was stored by ingest 2 times" in out
            and "kept the latest copy and removed the other" in out), out
    assert list(store.open(st).runs().status) == ["succeeded", "succeeded"]
    assert main(["ingest", str(SPARKLENS), "--store", st, "--no-compact"]) == 0
    assert "repaired" not in capsys.readouterr().out  # once mended, nothing more to say

    st = _two_copies(tmp_path, "z5")
    assert main(["ingest", str(SPARKLENS), "--store", st, "--json", "--no-compact"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["repairs"]) == 1 and doc["repairs"][0].startswith(f"run {rid} was stored by ingest 2 times")


def test_a_log_in_a_folder_ingest_cannot_enter_is_unreadable_not_missing(tmp_path, capsys):
    """os.path.exists is False for a file in a folder without search permission: the log read
    "no such file or folder", whose fix (give an existing path) could not help."""
    locked = tmp_path / "locked"
    locked.mkdir()
    log = locked / PLAIN.name
    shutil.copy(PLAIN, log)
    os.chmod(locked, 0o600)  # listable by its owner, not enterable
    try:
        code, out, err = _as_user(["ingest", str(log), "--store", str(tmp_path / "st")], capsys, log)
        assert code == 1, err
        assert f"FAILED    {log}: cannot read: Permission denied" in out, out
        assert "fix: check the path and its permissions" in out and "no such file" not in out + err
    finally:
        os.chmod(locked, 0o755)


def test_a_rolling_folder_given_that_cannot_be_listed_is_exit_2_as_any_folder_given(tmp_path, capsys):
    """A plain folder given that could not be listed exited 2 (documented), a rolling one 1."""
    rolling = tmp_path / "eventlog_v2_local-1532512550423"
    rolling.mkdir()
    shutil.copy(PLAIN, rolling / "events_1_local-1532512550423")
    os.chmod(rolling, 0)
    try:
        code, out, err = _as_user(["ingest", str(rolling), "--store", str(tmp_path / "st")], capsys, rolling)
    finally:
        os.chmod(rolling, 0o755)
    assert code == 2 and f"error: {rolling}: cannot read: Permission denied" in err, (out, err)
    assert not (tmp_path / "st").exists()
