"""``sparkpredict suggest``: table and JSON agree with the API; bad input exits 2 with one
error line and writes nothing; the --models fast path loads no pandas / scikit-learn / pyspark."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from sparkpredict import suggest_executors
from sparkpredict.cli import main

sys.path.insert(0, os.path.dirname(__file__))
from test_advise_history import history, make_store


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    from sparkpredict.features.runs import runs_table
    from sparkpredict.models.persist import fit_all, save_models

    runs, _ = history()
    d = tmp_path_factory.mktemp("models") / "m"
    save_models(fit_all(runs_table(runs), kind="amdahl"), d)  # quick fit; accuracy is tested elsewhere
    return str(d)


def snapshot(path):
    out = {}
    for root, _, files in os.walk(path):
        for f in files:
            p = os.path.join(root, f)
            out[p] = os.stat(p).st_mtime_ns
    return out


def test_table_marks_the_advised_row(model_dir, capsys):
    rc = main(["suggest", "--job", "etl", "--input-size", "30GB", "--deadline", "7m30s",
               "--max-executors", "16", "--models", model_dir])
    out = capsys.readouterr().out
    assert rc == 0
    a = suggest_executors("etl", "30GB", deadline_s="7m30s", max_executors=16, models=model_dir)
    marked = [ln for ln in out.splitlines() if ln.lstrip().startswith(">")]
    assert len(marked) == 1 and marked[0].split()[1] == str(a.executors)
    assert "meets" in marked[0] and "7m30s" in out and "input 30 GB" in out   # as typed, not 27.9 GiB
    assert a.summary() in out
    # the last column: each count's chance of making the deadline, as the API has it
    from sparkpredict.advise import format_chance

    assert marked[0].split()[-1] == format_chance(a.chosen.chance_meets_deadline)
    assert f"(chance {format_chance(a.chance_meets_deadline)})" in a.summary()
    # one row per candidate count, 1..16
    rows = [ln for ln in out.splitlines() if ln.strip() and ln.strip().lstrip("> ").split()[0].isdigit()]
    assert len(rows) == 16


def test_json_is_the_advice(model_dir, capsys):
    rc = main(["suggest", "--job", "etl", "--input-size", "30GB", "--objective", "knee",
               "--price", "0.25", "--models", model_dir, "--json"])
    d = json.loads(capsys.readouterr().out)
    a = suggest_executors("etl", "30GB", objective="knee", price_per_executor_hour=0.25, models=model_dir)
    assert rc == 0 and d["executors"] == a.executors == a.knee_executors
    assert d["cost_money"] == pytest.approx(a.cost_money)
    assert [c["executors"] for c in d["candidates"]] == [c.executors for c in a.candidates]
    assert "deadline_verdict" not in d["candidates"][0]  # no deadline, no verdict
    main(["suggest", "--job", "etl", "--input-size", "30GB", "--deadline", "7m30s", "--models", model_dir,
          "--json"])
    d = json.loads(capsys.readouterr().out)
    from sparkpredict.advice import deadline_verdict

    a = suggest_executors("etl", "30GB", deadline_s="7m30s", models=model_dir)
    assert [c["deadline_verdict"] for c in d["candidates"]] == [
        deadline_verdict(c.meets_deadline, c.chance_meets_deadline, c.predicted_runtime_s, 450.0)
        for c in a.candidates]
    assert {"meets", "misses"} <= {c["deadline_verdict"] for c in d["candidates"]}


@pytest.mark.parametrize("args,needle", [
    (["--job", "nope", "--input-size", "1GB"], "no model for job(s) 'nope'"),
    (["--job", "etl", "--input-size=-5GB"], "must be positive"),
    (["--job", "etl", "--input-size", "lots"], "as a size"),
    (["--job", "etl", "--input-size", "1GB", "--deadline", "soon"], "as a duration"),
    (["--job", "etl", "--input-size", "1GB", "--deadline=-10m"], "must be positive"),
    (["--job", "etl", "--input-size", "1GB", "--min-executors", "9", "--max-executors", "3"],
     "below --min-executors"),
    (["--job", "etl", "--input-size", "1GB", "--confidence", "2"], "between 0 and 1"),
])
def test_bad_input_one_line_exit_2_nothing_written(model_dir, capsys, args, needle):
    before = snapshot(model_dir)
    rc = main(["suggest", *args, "--models", model_dir])
    cap = capsys.readouterr()
    assert rc == 2 and cap.out == ""
    errors = [ln for ln in cap.err.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and needle in errors[0], cap.err
    assert "Traceback" not in cap.err and "fix:" in cap.err
    assert snapshot(model_dir) == before


def test_no_runs_and_unknown_job_in_a_store(tmp_path, capsys):
    from sparkpredict import store as store_mod

    store_mod.open(tmp_path / "empty", create=True)
    before = snapshot(tmp_path)
    assert main(["suggest", "--job", "etl", "--input-size", "1GB", "--store", str(tmp_path / "empty")]) == 2
    assert "has no runs" in capsys.readouterr().err
    path = make_store(tmp_path / "s", history(sizes=(10, 20), execs=(1, 2), repeats=1))
    before = snapshot(tmp_path)
    assert main(["suggest", "--job", "nightly", "--input-size", "1GB", "--store", path]) == 2
    err = capsys.readouterr().err
    assert "no job 'nightly'" in err and "use one of: etl" in err and "did you mean" not in err
    # a typo or another case of a known name is pointed at
    for typed in ("elt", "ETL"):
        assert main(["suggest", "--job", typed, "--input-size", "1GB", "--store", path]) == 2
        assert "use one of: etl (did you mean 'etl'?)" in capsys.readouterr().err
    assert snapshot(tmp_path) == before


def test_models_with_a_store_that_is_not_one_is_one_clear_error(model_dir, tmp_path, capsys):
    rc = main(["suggest", "--job", "etl", "--input-size", "1GB", "--models", model_dir, "--store", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and "store" in err and "fix:" in err and "Traceback" not in err


def test_models_fast_path_imports_no_pandas_sklearn_or_pyspark(model_dir):
    code = ("import sys; from sparkpredict.cli import main; "
            f"rc = main(['suggest', '--job', 'etl', '--input-size', '30GB', '--models', {model_dir!r}]); "
            "heavy = [m for m in ('pandas', 'sklearn', 'pyspark', 'scipy', 'py4j') if m in sys.modules]; "
            "print('HEAVY', heavy, rc, file=sys.stderr)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert "HEAVY [] 0" in p.stderr, p.stderr
    assert "executors" in p.stdout


@pytest.mark.parametrize("text,mb", [("4g", 4096), ("512m", 512), ("4096", 4096), ("1.5G", 1536), ("2gb", 2048),
                                     ("4GiB", 4096), ("512 MiB", 512)])
def test_executor_memory_in_spark_units(text, mb):
    from sparkpredict.cli.suggest import executor_memory_mb

    assert executor_memory_mb(text) == mb


@pytest.mark.parametrize("bad", ["lots", "inf", "1e400"])  # "0.5m" reads: too small (test_advice_text)
def test_bad_executor_memory(model_dir, capsys, bad):
    rc = main(["suggest", "--job", "etl", "--input-size", "1GB", "--executor-memory", bad,
               "--models", model_dir])
    assert rc == 2 and f"cannot read executor memory {bad!r}" in capsys.readouterr().err


def test_extrapolation_line_says_which_side_of_the_history(model_dir, capsys):
    """A size below the runs' smallest used to read "+300%", as if it were above the largest."""
    from tests.test_advise_history import EXECS, SIZES_GB

    lo, hi = min(SIZES_GB), max(SIZES_GB)
    lines = {}
    for size in (f"{lo / 4}GB", f"{hi * 2}GB"):
        assert main(["suggest", "--job", "etl", "--input-size", size, "--models", model_dir]) == 0
        lines[size] = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("extrapolates"))
    assert "is 1/4.00 of the runs' smallest" in lines[f"{lo / 4}GB"] and "+" not in lines[f"{lo / 4}GB"]
    assert "is 2.00x the runs' largest" in lines[f"{hi * 2}GB"]
    a = suggest_executors("etl", f"{hi * 2}GB", models=model_dir, min_executors=max(EXECS) * 3)
    assert a.training_range["executors"] == (min(EXECS), max(EXECS))
    assert any(n.startswith(f"executor count {max(EXECS) * 3} is 3.00x") for n in a.extrapolation_notes())


def test_a_small_price_keeps_its_digits_and_one_count_has_no_knee(model_dir, capsys):
    assert main(["suggest", "--job", "etl", "--input-size", "10GB", "--price", "0.0001",
                 "--min-executors", "4", "--max-executors", "4", "--models", model_dir]) == 0
    out = capsys.readouterr().out
    from sparkpredict.units import format_amount

    a = suggest_executors("etl", "10GB", price_per_executor_hour=0.0001, min_executors=4, max_executors=4,
                          models=model_dir)
    assert 0 < a.cost_money < 0.005 and "(cost 0.00)" not in out and f"(cost {format_amount(a.cost_money)})" in out
    # with a single count to choose from there is no curve: "knee: not reached up to 4" said nothing true
    assert len(a.candidates) == 1 and "knee:" not in out


def test_the_exported_load_models_reads_a_fit_folder_too(model_dir):
    import sparkpredict
    from sparkpredict.models import persist

    # sparkpredict.load_models is the registry's; given a `sparkpredict fit` folder it used to say
    # "no sparkpredict store at ..." while docs/models.md calls that folder's loader load_models
    got, want = sparkpredict.load_models(model_dir), persist.load_models(model_dir)
    assert set(got) == set(want) == {"etl"}
    assert got["etl"].to_dict() == want["etl"].to_dict()


def test_executor_counts_flag_gives_the_candidates(model_dir, capsys):
    assert main(["suggest", "--job", "etl", "--input-size", "30GB", "--executor-counts", "8,2,4",
                 "--models", model_dir, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    a = suggest_executors("etl", "30GB", executor_counts="8,2,4", models=model_dir)
    assert [c["executors"] for c in d["candidates"]] == [c.executors for c in a.candidates] == [2, 4, 8]
    assert d["executors"] == a.executors
    # its errors name the flag and the CLI's way of writing it
    assert main(["suggest", "--job", "etl", "--input-size", "30GB", "--executor-counts", "2,0",
                 "--models", model_dir]) == 2
    err = capsys.readouterr().err
    assert "error: --executor-counts: executor counts must be at least 1, got 0" in err
    assert "e.g. --executor-counts 2,4,8" in err and "executor_counts" not in err
    assert main(["suggest", "--job", "etl", "--input-size", "30GB", "--executor-counts", "64",
                 "--max-executors", "16", "--models", model_dir]) == 2
    assert "no executor count in --executor-counts is from 1 to 16 (--min-executors, --max-executors)" \
        in capsys.readouterr().err


def test_the_advice_errors_about_where_models_come_from_name_the_flags(tmp_path, capsys):
    from sparkpredict import store as store_mod
    from sparkpredict.errors import UnknownJobError

    assert main(["suggest", "--job", "sort", "--input-size", "64MB", "--models", str(tmp_path / "nomodels")]) == 2
    err = capsys.readouterr().err
    assert "no model folder at" in err and "leave out --models and pass --store PATH" in err, err
    store_mod.open(tmp_path / "empty", create=True)
    assert main(["suggest", "--job", "etl", "--input-size", "1GB", "--store", str(tmp_path / "empty")]) == 2
    assert "or pass --models DIR" in capsys.readouterr().err
    with pytest.raises(UnknownJobError) as e:  # from Python: the argument
        suggest_executors("etl", "1GB", store=tmp_path / "empty")
    assert e.value.fix.endswith("or pass models=DIR") and "--" not in e.value.fix


def test_the_header_counts_runs_in_good_english(model_dir, tmp_path, capsys):
    """One recorded run at one executor: "1 run", "1 executor", not "1 runs" / "1 executors"."""
    import dataclasses

    from sparkpredict.cli.suggest import format_advice

    path = make_store(tmp_path / "one", history(sizes=(10,), execs=(1,), repeats=1))
    a = suggest_executors("etl", "10GB", store=path, models=model_dir, max_executors=4)
    text = format_advice(dataclasses.replace(a, n_runs=1))
    assert "CV MAPE" in text and ", 1 run)" in text
    assert "warning: every run of etl used 1 executor: how the runtime scales" in text, text
    assert " 1 runs" not in text and " 1 executors" not in text
