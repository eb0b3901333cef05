"""``--out`` files: a missing folder is created, a folder or unwritable place is one clear error,
and a failed write leaves neither a temporary file nor a damaged earlier output."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_cli_models import _store_from
from test_hybrid import synthetic_job

from sparkpredict.cli import main
from sparkpredict.errors import InputError
from sparkpredict.outputs import output_file, write_atomic, write_table
from sparkpredict.report import build_report

HISTORY = Path(__file__).parent / "data" / "history"


def test_output_file_creates_nothing_the_write_makes_missing_folders_and_folders_are_refused(tmp_path):
    p = output_file(tmp_path / "a" / "b" / "runs.csv")
    assert not (tmp_path / "a").exists()  # checked, not made: a command may still fail
    write_table(pd.DataFrame({"a": [1]}), p)
    assert sorted(x.name for x in p.parent.iterdir()) == ["runs.csv"]
    with pytest.raises(InputError, match="is a folder") as e:
        output_file(tmp_path / "a", "report.html")
    assert e.value.fix == f"give a file name, e.g. {tmp_path / 'a' / 'report.html'}"
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="cannot create the folder"):
        output_file(tmp_path / "file" / "runs.csv")


def test_an_unwritable_place_is_one_clear_error(tmp_path):
    if os.geteuid() != 0:  # refused before the work
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o500)
        with pytest.raises(InputError, match="permission denied"):
            output_file(ro / "runs.csv")
    # root passes every mode check; /proc still takes no new files: refused at the write
    with pytest.raises(InputError, match=r"cannot write (into )?'/proc") as e:
        write_table(pd.DataFrame({"a": [1]}), "/proc/sparkpredict-test.csv")
    assert "permissions" in e.value.fix


def test_a_failed_write_keeps_the_earlier_file_and_leaves_no_temporary(tmp_path):
    out = tmp_path / "runs.csv"
    write_table(pd.DataFrame({"a": [1, 2]}), out)
    before = out.read_bytes()

    def half_then_fail(tmp: Path) -> None:
        tmp.write_text("a\n3\n")
        raise OSError(28, "No space left on device")

    with pytest.raises(InputError, match="No space left on device") as e:
        write_atomic(out, half_then_fail)
    assert "free space" in e.value.fix
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs.csv"]

    with pytest.raises(KeyError):  # a bug in the writer is not turned into a user error
        write_atomic(out, lambda tmp: {}["x"])
    assert out.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["runs.csv"]

    write_table(pd.DataFrame({"a": [5]}), tmp_path / "t.parquet")
    assert pd.read_parquet(tmp_path / "t.parquet")["a"].tolist() == [5]


def test_cli_outputs_into_new_folders_and_folder_mistakes(tmp_path, capsys):
    runs = synthetic_job("etl", cliff=False, sizes=(8, 12, 16), execs=(2, 4, 8))
    _store_from(runs, tmp_path / "store")
    nested = tmp_path / "new" / "deeper" / "runs.csv"
    assert main(["runs", "--store", str(tmp_path / "store"), "--out", str(nested)]) == 0
    assert len(pd.read_csv(nested)) == len(runs)

    capsys.readouterr()
    assert main(["runs", "--store", str(tmp_path / "store"), "--out", str(tmp_path / "new")]) == 2
    err = capsys.readouterr().err
    assert f"error: output '{tmp_path / 'new'}' is a folder" in err and "Traceback" not in err
    assert f"fix: give a file name, e.g. {tmp_path / 'new' / 'runs.csv'}" in err

    assert main(["fit", str(nested), "--out", str(tmp_path / "models")]) == 0
    pd.DataFrame({"job": ["etl"], "input_bytes": [10 * 2**30], "executors": [4]}).to_csv(tmp_path / "q.csv", index=False)
    pred = tmp_path / "p" / "pred.csv"
    assert main(["predict", str(tmp_path / "models"), str(tmp_path / "q.csv"), "--out", str(pred)]) == 0
    assert np.isfinite(pd.read_csv(pred)["predicted_runtime_s"]).all()
    capsys.readouterr()
    (tmp_path / "p" / "blocker").write_text("a file where a folder should be")
    assert main(["predict", str(tmp_path / "models"), str(tmp_path / "q.csv"),
                 "--out", str(tmp_path / "p" / "blocker" / "pred.csv")]) == 2
    assert "cannot create the folder of output" in capsys.readouterr().err


def test_report_into_an_existing_folder_is_refused_before_any_work(tmp_path):
    folder = tmp_path / "reports"
    folder.mkdir()
    with pytest.raises(InputError, match="is a folder"):
        # a store that is not there would fail later: the output is checked first
        build_report(folder, store=tmp_path / "no-store")
    assert list(tmp_path.iterdir()) == [folder] and list(folder.iterdir()) == []
    out = build_report(tmp_path / "new" / "r.html", store=HISTORY, jobs=["sort"]).path
    assert out == (tmp_path / "new" / "r.html").resolve() and "id='job-sort'" in out.read_text()
    assert sorted(p.name for p in out.parent.iterdir()) == ["r.html"]


def test_report_named_as_another_format_is_refused_with_the_html_name(tmp_path, capsys):
    """`report --out x.png` wrote an HTML page under a PNG's name."""
    for name, fixed in (("x.png", "x.html"), ("x.PDF", "x.html"), ("report", "report.html")):
        assert main(["report", "--store", str(HISTORY), "--out", str(tmp_path / name)]) == 2
        err = capsys.readouterr().err
        assert "does not end in .html" in err and f"fix: name the file {tmp_path / fixed}" in err, err
    assert list(tmp_path.iterdir()) == []
    assert build_report(tmp_path / "r.HTM", store=HISTORY, jobs=["sort"]).path.is_file()


def test_failed_commands_leave_no_new_folders(tmp_path, capsys):
    """The --out folder is made when the file is written, not when it is checked."""
    runs = synthetic_job("etl", cliff=False, sizes=(8, 12, 16), execs=(2, 4, 8))
    _store_from(runs, tmp_path / "store")
    assert main(["runs", "--store", str(tmp_path / "store"), "--out", str(tmp_path / "runs.csv")]) == 0
    assert main(["fit", str(tmp_path / "runs.csv"), "--out", str(tmp_path / "models")]) == 0
    pd.DataFrame({"job": ["nope"], "input_bytes": [1e9], "executors": [2]}).to_csv(tmp_path / "q.csv", index=False)
    capsys.readouterr()
    new = tmp_path / "newdir"
    for argv in (["runs", "--store", str(tmp_path / "store"), "--out", str(new / "a" / "b" / "x.csv"), "--job", "nosuch"],
                 ["report", "--store", str(tmp_path / "store"), "--out", str(new / "a" / "r.html"), "--job", "nosuch"],
                 ["predict", str(tmp_path / "models"), str(tmp_path / "q.csv"), "--out", str(new / "p" / "p.csv")]):
        assert main(argv) == 2, argv
        assert capsys.readouterr().err.startswith("error: ")
        assert not new.exists(), argv[0]


def test_outputs_inside_a_history_store_are_refused(tmp_path, capsys):
    """`report --out s2/_sparkpredict_store.json` replaced the store's marker with a page."""
    runs = synthetic_job("etl", cliff=False, sizes=(8, 12, 16), execs=(2, 4, 8))
    s2 = tmp_path / "s2"
    _store_from(runs, s2)
    marker = (s2 / "_sparkpredict_store.json").read_bytes()
    before = sorted(p.relative_to(s2) for p in s2.rglob("*"))
    assert main(["runs", "--store", str(s2), "--out", str(tmp_path / "runs.csv")]) == 0
    capsys.readouterr()
    for argv in (["report", "--store", str(s2), "--out", str(s2 / "_sparkpredict_store.json")],
                 ["report", "--store", str(s2), "--out", str(s2 / "sub" / ".." / "r.html")],
                 ["runs", "--store", str(s2), "--out", str(s2 / "runs" / "x.csv")],
                 ["runs", "--store", str(s2), "--out", str(s2 / "new" / "x.csv")],
                 ["fit", str(tmp_path / "runs.csv"), "--out", str(s2 / "models")]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert f"lies inside the history store '{s2}'" in err and "fix: write outputs outside" in err, err
    assert (s2 / "_sparkpredict_store.json").read_bytes() == marker
    assert sorted(p.relative_to(s2) for p in s2.rglob("*")) == before
    # beside the store is fine
    assert main(["runs", "--store", str(s2), "--out", str(tmp_path / "s2-runs.csv")]) == 0


def test_table_outputs_refuse_extensions_they_would_not_honour(tmp_path, capsys):
    """`predict --out p.json` wrote CSV into a .json file."""
    runs = synthetic_job("etl", cliff=False, sizes=(8, 12, 16), execs=(2, 4, 8))
    _store_from(runs, tmp_path / "store")
    assert main(["runs", "--store", str(tmp_path / "store"), "--out", str(tmp_path / "runs.csv")]) == 0
    assert main(["fit", str(tmp_path / "runs.csv"), "--out", str(tmp_path / "models")]) == 0
    pd.DataFrame({"job": ["etl"], "input_bytes": [10 * 2**30], "executors": [4]}).to_csv(tmp_path / "q.csv", index=False)
    capsys.readouterr()
    for name in ("p.json", "p.xlsx", "p", "p.csv.gz"):
        out = tmp_path / name
        for argv in (["predict", str(tmp_path / "models"), str(tmp_path / "q.csv"), "--out", str(out)],
                     ["runs", "--store", str(tmp_path / "store"), "--out", str(out)]):
            assert main(argv) == 2, argv
            err = capsys.readouterr().err
            assert f"error: output '{out}' does not end in .csv, .parquet or .pq" in err, err
            stem = out.with_suffix("") if out.suffix else out
            assert f"fix: name the file {stem}.csv or {stem}.parquet" in err and not out.exists()
    with pytest.raises(InputError, match="does not end in"):
        write_table(pd.DataFrame({"a": [1]}), tmp_path / "t.json")
    for name in ("p.PARQUET", "p.pq", "p.CSV"):
        assert main(["predict", str(tmp_path / "models"), str(tmp_path / "q.csv"), "--out", str(tmp_path / name)]) == 0
    assert len(pd.read_parquet(tmp_path / "p.PARQUET")) == len(pd.read_csv(tmp_path / "p.CSV")) == 1
    # the report is HTML, not a table: any name goes
    assert main(["report", "--store", str(tmp_path / "store"), "--out", str(tmp_path / "r.htm")]) == 0
