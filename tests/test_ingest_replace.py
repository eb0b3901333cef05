"""One copy of each run in the store: ingests at once wait for each other, a run ingest stored
twice keeps its latest copy, and a cut copy that was edited is not replaced."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sparkpredict import store
from sparkpredict.capture.eventlog_ingest import ingest_event_logs
from sparkpredict.cli import main
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
    assert len(store.open(st).tasks()) == 2 * 4  # what the race left: every task twice
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


def test_a_folder_ingest_cannot_list_is_named_not_read_as_empty(tmp_path, capsys):
    logs = tmp_path / "logs"
    (logs / "sub").mkdir(parents=True)
    shutil.copy(PLAIN, logs / "sub")
    os.chmod(logs / "sub", 0)
    try:
        if os.access(logs / "sub", os.R_OK):  # root without dropped capabilities reads anyway
            cmd = ["setpriv", "--bounding-set=-all", "--inh-caps=-all", sys.executable, "-m", "sparkpredict",
                   "ingest", str(logs), "--store", str(tmp_path / "st")]
            if shutil.which("setpriv") is None:
                pytest.skip("running as root, and no setpriv to drop the capability to read anything")
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
            r = subprocess.run(cmd, check=False, env=env, capture_output=True, text=True, timeout=120)
            code, err = r.returncode, r.stderr
        else:
            code = main(["ingest", str(logs), "--store", str(tmp_path / "st")])
            err = capsys.readouterr().err
    finally:
        os.chmod(logs / "sub", 0o755)
    assert code == 2
    assert f"error: {logs}: cannot read sub: Permission denied" in err and "no event logs found" not in err
    assert not (tmp_path / "st").exists()
