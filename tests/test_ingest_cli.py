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
