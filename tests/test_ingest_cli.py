"""`sparkpredict ingest`: summary, --json, and exit codes 0 / 1 / 2."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

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
    assert "not refit: Spark shell: DegenerateDataError: only 0 usable runs (of 1)" in r.stdout
    assert "not refit: Databricks Shell: DegenerateDataError: no succeeded run (1 incomplete)" in r.stdout
    assert "not refit" not in r.stderr and "usable runs" not in r.stderr, r.stderr
