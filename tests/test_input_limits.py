"""User mistakes a fuzzing review found still ending in a traceback, a hang or a file written:
each is now one ``error:``/``fix:`` pair, exit 2, with nothing written."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import sparkpredict
from sparkpredict.cli import main
from sparkpredict.errors import InputError, ModelError, StoreError
from sparkpredict.models import persist
from sparkpredict.units import MAX_EXECUTORS, MAX_LISTED_COUNTS, parse_counts

HISTORY = Path(__file__).parent / "data" / "history"  # sort, wordcount, ... (NOTES.md)
LOG = Path(__file__).parent / "data" / "eventlogs" / "sparklens_local-1532512550423.json"


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _err(capsys) -> tuple[str, str]:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and err[0].startswith("error: ") and err[1].startswith("fix: "), err
    return err[0], err[1]


def test_a_list_of_counts_is_refused_past_any_cluster_not_expanded_until_memory_runs_out():
    assert parse_counts(f"1-{MAX_LISTED_COUNTS}")[-1] == MAX_LISTED_COUNTS
    with pytest.raises(InputError, match=f"holds {MAX_LISTED_COUNTS + 1:,} counts") as e:
        parse_counts(f"1-{MAX_LISTED_COUNTS + 1}")
    assert "--min-executors and --max-executors" in e.value.fix
    with pytest.raises(InputError, match="more executors than any cluster has"):
        parse_counts(f"2,{MAX_EXECUTORS + 1}")
    with pytest.raises(InputError, match=r"999999…999999 \(40 digits\) is more executors"):
        parse_counts("1-" + "9" * 40)  # int64 overflowed in range(); here no range is built
    with pytest.raises(InputError, match="holds 10,001 counts"):
        parse_counts("1-5000,10001-15001")  # the total of the ranges counts


@pytest.mark.parametrize("argv", [
    ["suggest", "--job", "sort", "--input-size", "1GB", "--store", str(HISTORY), "--executor-counts", "1-100000000"],
    ["sweep", "--workload", "wordcount", "--sizes", "4MB", "--executors", "1-100000000"],
    ["simulate", "some-run", "--store", str(HISTORY), "--executors", "1-100000000"],
    ["submit", "--store", str(HISTORY), "--executors", "9" * 20, "--dry-run", "--", "--master", "local[1]", "x.py"],
    ["suggest", "--job", "sort", "--input-size", "1GB", "--store", str(HISTORY), "--min-executors", "9" * 20],
])
def test_every_command_refuses_an_absurd_count_at_once(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert main(argv) == 2  # refused before the range (1e8 counts) is expanded
    err, _fix = _err(capsys)
    assert "than any cluster has (at most 1,000,000)" in err and "9" * 20 not in err
    assert not (tmp_path / ".sparkpredict").exists()  # no sweep data, no store


def test_the_api_refuses_an_endless_or_huge_list_of_counts_without_materialising_it():
    with pytest.raises(InputError, match=f"holds more than {MAX_LISTED_COUNTS:,} counts"):
        sparkpredict.suggest_executors("sort", "1GB", store=HISTORY, executor_counts=range(1, 10**12))
    for too_many in (2 * 10**6, 2e6):
        with pytest.raises(InputError, match=r"max_executors 2,000,000 is more executors than any cluster has "
                                             r"\(at most 1,000,000\)"):
            sparkpredict.suggest_executors("sort", "1GB", store=HISTORY, max_executors=too_many)
    with pytest.raises(InputError, match=r"max_executors \d{6}…\d{6} \(31 digits\) is more executors than any cluster"):
        sparkpredict.suggest_executors("sort", "1GB", store=HISTORY, max_executors=10**30)
    with pytest.raises(InputError, match=r"min_executors \d{6}…\d{6} \(401 digits\) is more executors"):
        sparkpredict.suggest_executors("sort", "1GB", store=HISTORY, min_executors=10**400)  # float() overflows
    with pytest.raises(InputError, match="job must be a job's name, got \\['sort'\\]"):
        sparkpredict.suggest_executors(["sort"], "1GB", store=HISTORY)
    with pytest.raises(InputError, match="models must be a dict of fitted models or a model folder, got int"):
        sparkpredict.suggest_executors("sort", "1GB", models=5)


def test_a_path_the_file_system_refuses_is_an_error_with_its_fix(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    long = tmp_path / ("a" * 300)
    assert main(["suggest", "--job", "sort", "--input-size", "1GB", "--store", str(long)]) == 2
    err, fix = _err(capsys)
    assert "File name too long" in err and fix == "fix: give a shorter path (the file system limits a name to 255 bytes)"
    assert main(["runs", "--store", str(HISTORY), "--out", str(long) + ".csv"]) == 2
    assert "give a shorter path" in _err(capsys)[1]
    assert main(["ingest", str(LOG), "--store", str(long)]) == 2
    _err(capsys)
    assert os.listdir(tmp_path) == []


def test_a_value_that_is_not_utf8_text_is_named_and_nothing_is_stored(tmp_path, capsys):
    bad = "j\udcff"  # how Python holds the byte 0xff of an argument in a UTF-8 locale
    assert main(["suggest", "--job", "sort", "--input-size", "1GB", "--store", str(tmp_path / bad)]) == 2
    err, fix = _err(capsys)
    assert err == "error: a value given holds bytes that are not UTF-8 text (b'\\xff')" and "UTF-8" in fix
    new = tmp_path / "new"
    assert main(["ingest", str(LOG), "--store", str(new), "--job", bad]) == 2
    _err(capsys)
    assert not new.exists()  # the store it had made for the run is removed again


def test_an_empty_store_path_is_refused_not_read_as_the_current_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("mine")
    for argv in (["ingest", str(LOG), "--store", ""], ["suggest", "--job", "sort", "--input-size", "1GB", "--store", " "]):
        assert main(argv) == 2
        assert _err(capsys)[0] == "error: the store path is empty"
    assert os.listdir(tmp_path) == ["notes.txt"]
    with pytest.raises(StoreError, match="the store path is empty"):
        sparkpredict.suggest_executors("sort", "1GB", store="")


@pytest.mark.parametrize("index", [
    [1, 2],
    {"format": persist.INDEX_FORMAT, "version": persist.FORMAT_VERSION},
    {"format": persist.INDEX_FORMAT, "version": persist.FORMAT_VERSION, "jobs": ["sort"]},
    {"format": persist.INDEX_FORMAT, "version": persist.FORMAT_VERSION, "jobs": {"sort": 5}},
    {"format": persist.INDEX_FORMAT, "version": persist.FORMAT_VERSION, "jobs": {"sort": "../../etc/passwd"}},
])
def test_a_mangled_model_index_is_a_model_error(tmp_path, capsys, index):
    (tmp_path / persist.INDEX).write_text(json.dumps(index))
    with pytest.raises(ModelError, match="not a sparkpredict model index|is damaged"):
        persist.load_models(tmp_path)
    assert main(["suggest", "--job", "sort", "--input-size", "1GB", "--models", str(tmp_path)]) == 2
    assert "fit RUNS --out DIR" in _err(capsys)[1]


def test_a_model_file_with_a_mangled_field_is_a_model_error(tmp_path):
    runs = tmp_path / "runs.csv"
    assert main(["runs", "--store", str(HISTORY), "--out", str(runs)]) == 0
    assert main(["fit", str(runs), "--out", str(tmp_path / "m"), "--kind", "amdahl"]) == 0
    index = json.loads((tmp_path / "m" / persist.INDEX).read_text())
    f = tmp_path / "m" / index["jobs"]["sort"]
    d = json.loads(f.read_text())
    d["training_range"] = "oops"
    f.write_text(json.dumps(d))
    with pytest.raises(ModelError, match="is corrupt"):
        persist.load_models(tmp_path / "m", ["sort"])


def test_predict_lists_an_absurd_count_as_a_bad_row_and_never_overwrites_its_query(tmp_path, capsys):
    runs = tmp_path / "runs.csv"
    assert main(["runs", "--store", str(HISTORY), "--out", str(runs)]) == 0
    assert main(["fit", str(runs), "--out", str(tmp_path / "m"), "--kind", "amdahl"]) == 0
    capsys.readouterr()
    q = tmp_path / "q.csv"
    q.write_text("job,input_bytes,executors\nsort,1000000,1e20\nsort,4000000,4\n")
    assert main(["predict", str(tmp_path / "m"), str(q), "--out", str(tmp_path / "p.csv")]) == 2
    assert "executors 1e+20 is more than any cluster has" in _err(capsys)[0]
    assert main(["predict", str(tmp_path / "m"), str(q), "--out", str(tmp_path / "p.csv"), "--skip-bad-rows"]) == 0
    assert capsys.readouterr().out.startswith("wrote 1 prediction")
    before = q.read_bytes()
    assert main(["predict", str(tmp_path / "m"), str(q), "--out", str(q)]) == 2
    assert "is the query file" in _err(capsys)[0] and q.read_bytes() == before


def test_the_demo_refuses_a_work_folder_it_cannot_use_before_its_sweep(tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert main(["demo", "--store", str(tmp_path / "st"), "--workdir", str(afile)]) == 2
    assert "is a file" in _err_tail(capsys)
    assert main(["demo", "--store", str(tmp_path / "st"), "--workdir", str(tmp_path / "st" / "demo")]) == 2
    assert "lies inside its store" in _err_tail(capsys)
    before = _tree(HISTORY)
    assert main(["demo", "--store", str(tmp_path / "st"), "--workdir", str(HISTORY / "demo")]) == 2
    assert "lies inside a history store" in _err_tail(capsys)
    assert _tree(HISTORY) == before and sorted(os.listdir(tmp_path)) == ["afile"]


def _err_tail(capsys) -> str:
    """The demo prints its plan first; the error pair ends stderr or stdout's run."""
    out = capsys.readouterr()
    lines = (out.out + out.err).strip().splitlines()
    assert lines[-2].startswith("error: ") and lines[-1].startswith("fix: "), lines
    return lines[-2]


def test_no_command_and_no_store_action_say_what_to_give(capsys):
    assert main([]) == 2
    usage, err, fix = capsys.readouterr().err.strip().splitlines()  # the usage line first
    assert usage.startswith("usage: sparkpredict") and (err, fix) == (
        "error: no command given", "fix: give one, e.g. sparkpredict demo; sparkpredict --help lists them all")
    assert main(["store"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[1] == "error: no store action given"


def test_an_error_line_echoing_a_huge_value_is_cut_in_its_middle(capsys):
    job = "x" * 100_000
    assert main(["suggest", "--job", job, "--input-size", "1GB", "--store", str(HISTORY)]) == 2
    err, _fix = _err(capsys)
    assert len(err) < 2100 and "characters cut" in err and err.startswith("error: no job 'xxx")


def test_a_run_recorded_with_more_executors_than_any_cluster_is_dropped_from_the_fit():
    import pandas as pd

    from sparkpredict.models.hybrid import JobRuntimeModel

    rows = [{"job": "a", "input_bytes": s * 10**6, "executors": e, "runtime_s": 10.0 + s * 4 / e}
            for s in (1, 2, 4, 8) for e in (2, 4)]
    typo = pd.DataFrame(rows + [{"job": "a", "input_bytes": 4 * 10**6, "executors": 1e20, "runtime_s": 9.0}])
    m = JobRuntimeModel(kind="amdahl").fit(typo)
    assert m.dropped_runs_ == 1 and m.training_range_["executors"] == (2.0, 4.0)
    clean = JobRuntimeModel(kind="amdahl").fit(pd.DataFrame(rows))
    q = {"input_bytes": [16 * 10**6], "executors": [3]}
    assert m.predict(q)[0] == clean.predict(q)[0]


def test_evaluate_refuses_options_it_would_ignore(tmp_path, capsys):
    runs = tmp_path / "runs.csv"
    assert main(["runs", "--store", str(HISTORY), "--out", str(runs)]) == 0
    capsys.readouterr()
    assert main(["evaluate", str(runs), "--store", str(HISTORY)]) == 2
    assert _err(capsys)[0] == "error: RUNS and --store both say where the runs are"
    assert main(["evaluate", str(runs), "--models", ""]) == 2
    assert _err(capsys)[0] == "error: --models is empty"


def test_a_terminal_that_cannot_show_a_job_name_says_so_not_that_the_name_is_bad(tmp_path):
    import subprocess
    import sys

    st = tmp_path / "st"
    assert main(["ingest", str(LOG), "--store", str(st), "--job", "データ"]) == 0
    env = dict(os.environ, PYTHONIOENCODING="ascii", HOME=str(tmp_path))
    r = subprocess.run([sys.executable, "-m", "sparkpredict", "store", "summary", "--store", str(st)],
                       capture_output=True, text=True, env=env, timeout=120, check=False)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip().splitlines()[-2:] == [
        "error: this output's encoding (ascii) cannot show '\\u30c7\\u30fc\\u30bf'",
        "fix: set PYTHONIOENCODING=utf-8, or use a UTF-8 locale (e.g. LANG=C.UTF-8)"]


def test_a_count_that_is_not_finite_is_refused_as_not_a_whole_number():
    with pytest.raises(InputError, match="max_executors must be a whole number of at least 1, got inf"):
        sparkpredict.suggest_executors("sort", "1GB", store=HISTORY, max_executors=float("inf"))


def test_simulate_of_a_folder_of_logs_names_the_command_that_reads_one(tmp_path, capsys):
    assert main(["simulate", str(tmp_path), "--executors", "1,2"]) == 2
    err, fix = _err(capsys)
    assert err == f"error: {tmp_path} is a folder, not an event log"
    assert "sparkpredict ingest FOLDER" in fix
