"""runs -> fit -> predict -> evaluate through the real CLI entry point (no JVM)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from test_hybrid import synthetic_job

from sparkpredict.cli import main
from sparkpredict.store import io as store_io


def _store_from(runs: pd.DataFrame, path) -> None:
    st = store_io.open(path, create=True)
    st.append({"runs": pd.DataFrame({
        "run_id": runs["run_id"], "app_id": runs["run_id"], "job": runs["job"], "status": "succeeded",
        "start_ms": np.arange(len(runs)) * 1000, "wall_ms": (runs["runtime_s"] * 1000).round().astype("int64"),
        "executors_requested": runs["executors"], "executor_cores": runs["executor_cores"],
        "executor_memory_mb": runs["executor_memory_mb"], "input_bytes": runs["input_bytes"],
        "updated_ms": 1})})


def test_runs_fit_predict_evaluate(tmp_path, capsys):
    runs = pd.concat([synthetic_job("etl", cliff=False, sizes=(8, 12, 16), execs=(2, 4, 8)),
                      synthetic_job("ml", seed=4, sizes=(8, 12, 16), execs=(2, 4, 8))], ignore_index=True)
    _store_from(runs, tmp_path / "store")
    csv = tmp_path / "runs.csv"
    assert main(["runs", "--store", str(tmp_path / "store"), "--out", str(csv)]) == 0
    table = pd.read_csv(csv)
    assert len(table) == len(runs) and set(table["job"]) == {"etl", "ml"}

    assert main(["fit", str(csv), "--out", str(tmp_path / "models")]) == 0
    assert "saved 2 model(s)" in capsys.readouterr().out

    q = pd.DataFrame({"job": ["ml", "etl", "ml"], "input_bytes": [10 * 2**30, 12 * 2**30, 40 * 2**30],
                      "executors": [4, 2, 16], "note": ["x", "y", "z"]})
    q.to_csv(tmp_path / "q.csv", index=False)
    assert main(["predict", str(tmp_path / "models"), str(tmp_path / "q.csv"), "--out", str(tmp_path / "p.csv")]) == 0
    p = pd.read_csv(tmp_path / "p.csv")
    assert list(p["note"]) == ["x", "y", "z"]  # rows in query order, columns kept
    assert np.all(p["lower_s"] <= p["predicted_runtime_s"]) and np.all(p["predicted_runtime_s"] <= p["upper_s"])
    assert p["model"].notna().all() and p.loc[2, "extrapolation"] > 1.0
    # inside the runs each job's law is recovered: T = 40 S/E + 1.5 S + 25 (S in GiB; no cliff there)
    assert p.loc[0, "predicted_runtime_s"] == pytest.approx(40 * 10 / 4 + 1.5 * 10 + 25, rel=0.1)
    assert p.loc[1, "predicted_runtime_s"] == pytest.approx(40 * 12 / 2 + 1.5 * 12 + 25, rel=0.1)

    # sizes in human units, as everywhere else in the CLI: the same rows, the same predictions
    q.assign(input_bytes=["10GiB", "12GiB", "40GiB"]).to_csv(tmp_path / "qh.csv", index=False)
    assert main(["predict", str(tmp_path / "models"), str(tmp_path / "qh.csv"), "--out", str(tmp_path / "ph.csv")]) == 0
    ph = pd.read_csv(tmp_path / "ph.csv")
    assert list(ph["input_bytes"]) == list(q["input_bytes"])
    assert np.allclose(ph["predicted_runtime_s"], p["predicted_runtime_s"])
    for col, bad in (("input_bytes", "40XB"), ("executors", "four")):
        q.assign(**{col: q[col].astype(object).where(q.index != 1, bad)}).to_csv(tmp_path / "qb.csv", index=False)
        capsys.readouterr()
        assert main(["predict", str(tmp_path / "models"), str(tmp_path / "qb.csv"), "--out", str(tmp_path / "pb.csv")]) == 2
        assert f"query row 2 below the header: {col} '{bad}' is not a" in capsys.readouterr().err
        assert not (tmp_path / "pb.csv").exists()

    pd.DataFrame({"job": ["nope"], "input_bytes": [1e9], "executors": [2]}).to_csv(tmp_path / "q2.csv", index=False)
    capsys.readouterr()
    assert main(["predict", str(tmp_path / "models"), str(tmp_path / "q2.csv"), "--out", str(tmp_path / "p2.csv")]) == 2
    err = capsys.readouterr().err
    assert err == ("error: query row 1 below the header: no model for job 'nope'\n"
                   "fix: fit 'nope' first (`sparkpredict fit RUNS --out DIR`) or check the job name "
                   "(known jobs: etl, ml)\n"), err
    assert not (tmp_path / "p2.csv").exists()

    assert main(["evaluate", str(csv), "--json", "--models", "amdahl,auto", "--split", "cv3"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {r["model"] for r in out["rows"]} == {"amdahl", "combined"}
    assert out["summary"]["cv3"]["jobs"] == 2
    assert main(["evaluate", str(csv), "--models", "amdahl", "--split", "extrap_size"]) == 0
    assert "| **mean** |" in capsys.readouterr().out


def test_cli_errors_are_one_line(tmp_path, capsys):
    assert main(["fit", str(tmp_path / "missing.csv"), "--out", str(tmp_path / "m")]) == 2
    assert "not found" in capsys.readouterr().err
    pd.DataFrame({"job": ["a"], "input_bytes": [1]}).to_csv(tmp_path / "bad.csv", index=False)
    assert main(["fit", str(tmp_path / "bad.csv"), "--out", str(tmp_path / "m")]) == 2
    assert "lacks column(s) executors" in capsys.readouterr().err
    assert main(["predict", str(tmp_path / "m"), str(tmp_path / "bad.csv"), "--out", str(tmp_path / "p.csv")]) == 2
    assert "no sparkpredict models" in capsys.readouterr().err
    assert main(["evaluate", str(tmp_path / "bad.csv")]) == 2
    capsys.readouterr()
    synthetic_job("etl", sizes=(8, 12, 16), execs=(2, 4, 8)).to_csv(tmp_path / "ok.csv", index=False)
    assert main(["evaluate", str(tmp_path / "ok.csv"), "--models", "amdahl,nope"]) == 2
    assert "unknown model kind(s) 'nope'" in capsys.readouterr().err


def _fitted(tmp_path, capsys):
    """A store, its runs table and models of one job (etl) fitted from it."""
    _store_from(synthetic_job("etl", cliff=False, sizes=(8, 12, 16), execs=(2, 4, 8)), tmp_path / "store")
    csv = tmp_path / "runs.csv"
    assert main(["runs", "--store", str(tmp_path / "store"), "--out", str(csv)]) == 0
    assert main(["fit", str(csv), "--out", str(tmp_path / "models")]) == 0
    capsys.readouterr()
    return csv, tmp_path / "models"


def test_fit_refuses_a_random_state_numpy_cannot_seed(tmp_path, capsys):
    csv, _ = _fitted(tmp_path, capsys)
    for bad in ("-1", str(2**32)):
        assert main(["fit", str(csv), "--out", str(tmp_path / "m2"), f"--random-state={bad}"]) == 2
        err = capsys.readouterr().err
        assert f"error: --random-state {bad} is outside 0..4294967295" in err and "fix: " in err
        assert "Traceback" not in err and not (tmp_path / "m2").exists()
    assert main(["fit", str(csv), "--out", str(tmp_path / "m2"), f"--random-state={2**32 - 1}"]) == 0


def test_a_damaged_model_file_is_one_clear_error_in_predict_and_suggest(tmp_path, capsys):
    """The index lists job-etl-*.json, but the file is truncated, not a model, or gone."""
    import shutil

    _, models = _fitted(tmp_path, capsys)
    pd.DataFrame({"job": ["etl"], "input_bytes": ["20GB"], "executors": [4]}).to_csv(tmp_path / "q.csv", index=False)
    (name,) = [p.name for p in models.glob("job-etl-*.json")]
    damage = {"truncated": ("{", "is corrupt: Expecting property name"),
              "a list": ("[]", "is not a sparkpredict job model"),
              "fields missing": ('{"format": "sparkpredict-job-model", "version": 0}', "format version 0"),
              "gone": (None, "listed in the model index, is missing")}
    for what, (text, said) in damage.items():
        bad = tmp_path / f"models-{what.replace(' ', '-')}"
        shutil.copytree(models, bad)
        if text is None:
            (bad / name).unlink()
        else:
            (bad / name).write_text(text)
        for argv in (["predict", str(bad), str(tmp_path / "q.csv"), "--out", str(tmp_path / "p.csv")],
                     ["suggest", "--models", str(bad), "--job", "etl", "--input-size", "20GB"]):
            assert main(argv) == 2, (what, argv[0])
            err = capsys.readouterr().err
            assert f"error: model file '{bad / name}'" in err and said in err, (what, err)
            assert "fix: refit" in err and "`sparkpredict fit RUNS --out DIR`" in err
        assert not (tmp_path / "p.csv").exists()


def test_runs_of_an_empty_store_and_fit_of_an_empty_table_say_there_are_no_runs(tmp_path, capsys):
    store_io.open(tmp_path / "empty", create=True)
    assert main(["runs", "--store", str(tmp_path / "empty"), "--out", str(tmp_path / "e.csv")]) == 2
    err = capsys.readouterr().err
    assert f"error: store {tmp_path / 'empty'} holds no succeeded runs" in err and "sparkpredict ingest" in err
    assert not (tmp_path / "e.csv").exists()
    # a table with only the header, as `runs` wrote it before
    (tmp_path / "e.csv").write_text("run_id,job,input_bytes,executors,executor_cores,executor_memory_mb,runtime_s\n")
    assert main(["fit", str(tmp_path / "e.csv"), "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert f"error: runs file '{tmp_path / 'e.csv'}' holds no runs" in err and "not numeric" not in err
    assert "fix: export one from a store with succeeded runs" in err and not (tmp_path / "m").exists()


def test_predict_refuses_executor_counts_no_cluster_runs(tmp_path, capsys):
    _, models = _fitted(tmp_path, capsys)
    for col, bad in (("executors", 2.5), ("executors", 0), ("executors", "3.5"), ("executor_cores", 1.5)):
        q = pd.DataFrame({"job": ["etl", "etl"], "input_bytes": [20e9, 20e9], "executors": [4, 4],
                          "executor_cores": [4, 4]})
        q[col] = q[col].astype(object)
        q.loc[1, col] = bad
        q.to_csv(tmp_path / "q.csv", index=False)
        assert main(["predict", str(models), str(tmp_path / "q.csv"), "--out", str(tmp_path / "p.csv")]) == 2
        err = capsys.readouterr().err
        assert f"error: query row 2 below the header: {col} {bad} is not a whole number of at least 1" in err, err
        assert "counts as whole numbers" in err and not (tmp_path / "p.csv").exists()
    q.assign(executor_cores=[4, None]).to_csv(tmp_path / "q.csv", index=False)  # cores not given: fine
    assert main(["predict", str(models), str(tmp_path / "q.csv"), "--out", str(tmp_path / "p.csv")]) == 0


def test_predict_refuses_a_row_without_a_job_naming_the_row(tmp_path, capsys):
    """An empty job cell (NaN in a CSV, null in Parquet, blanks) is not a job named 'nan'."""
    _, models = _fitted(tmp_path, capsys)
    (tmp_path / "q.csv").write_text("job,input_bytes,executors\netl,20GB,4\n,20GB,4\netl,20GB,8\n")
    pd.DataFrame({"job": ["etl", None, None], "input_bytes": [2e10] * 3, "executors": [4, 4, 8]}) \
        .to_parquet(tmp_path / "q.parquet")
    (tmp_path / "qb.csv").write_text('job,input_bytes,executors\n"  ",20GB,4\n')
    for query, rows in (("q.csv", "query row 2 below the header"),
                        ("q.parquet", ("2 of 3 query rows cannot be predicted (rows counted below the "
                                       "header):\n  row 2: job is empty\n  row 3")),
                        ("qb.csv", "query row 1 below the header")):
        out = tmp_path / "p.csv"
        assert main(["predict", str(models), str(tmp_path / query), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {rows}: job is empty\n"), err
        assert "fix: give every row the job it belongs to" in err
        assert "nan" not in err and "None" not in err and not out.exists()


def test_jobs_named_like_missing_values_survive_a_csv_round_trip(tmp_path, capsys):
    """pandas reads NA, None and null as missing: a job so named must still fit and predict."""
    runs = pd.concat([synthetic_job(name, cliff=False, sizes=(8, 12, 16), execs=(2, 4, 8))
                      for name in ("NA", "None")])
    _store_from(runs, tmp_path / "store")
    csv = tmp_path / "runs.csv"
    assert main(["runs", "--store", str(tmp_path / "store"), "--out", str(csv)]) == 0
    assert set(pd.read_csv(csv, keep_default_na=False)["job"]) == {"NA", "None"}
    assert main(["fit", str(csv), "--out", str(tmp_path / "models")]) == 0
    (tmp_path / "q.csv").write_text("job,input_bytes,executors\nNA,20GB,4\nNone,20GB,8\n")
    out = tmp_path / "p.csv"
    assert main(["predict", str(tmp_path / "models"), str(tmp_path / "q.csv"), "--out", str(out)]) == 0
    pred = pd.read_csv(out, converters={"job": str})
    assert pred["job"].tolist() == ["NA", "None"] and (pred["predicted_runtime_s"] > 0).all(), pred


def test_fit_refuses_a_runs_row_without_a_job(tmp_path, capsys):
    """An empty job cell in a runs table is not a job named 'nan' to fit."""
    csv, _ = _fitted(tmp_path, capsys)
    runs = pd.read_csv(csv)
    runs.loc[3, "job"] = None
    runs.to_csv(tmp_path / "holed.csv", index=False)
    assert main(["fit", str(tmp_path / "holed.csv"), "--out", str(tmp_path / "m2")]) == 2
    err = capsys.readouterr().err
    assert "row 4 below the header: job is empty" in err and "fix: give every row the job" in err
    assert not (tmp_path / "m2").exists()
    # the row it names is the 4th under the header: line 5 of the file, as an editor numbers it
    line5 = (tmp_path / "holed.csv").read_text().splitlines()[4].split(",")
    assert line5[list(runs.columns).index("job")] == ""


def test_evaluate_with_nothing_to_score_is_an_error(tmp_path, capsys):
    store_io.open(tmp_path / "empty", create=True)
    assert main(["evaluate", "--store", str(tmp_path / "empty")]) == 2
    err = capsys.readouterr().err
    assert f"error: store {tmp_path / 'empty'} holds no succeeded runs" in err and "fix: record" in err
    _store_from(synthetic_job("etl").head(3), tmp_path / "three")
    for extra in ([], ["--json"]):
        assert main(["evaluate", "--store", str(tmp_path / "three"), *extra]) == 2
        cap = capsys.readouterr()
        assert "error: nothing to evaluate: etl: 3 runs (< 12)" in cap.err
        assert "fix: record more runs" in cap.err
        if extra:  # a script that asked for JSON gets the same error as JSON on stdout
            got = json.loads(cap.out)
            assert got["error"].startswith("nothing to evaluate: etl: 3 runs (< 12)")
            assert got["fix"].startswith("record more runs")
        else:
            assert cap.out == ""


def test_evaluate_lists_a_job_every_model_failed_on_under_skipped(tmp_path, capsys):
    runs = pd.concat([synthetic_job("good", cliff=False, sizes=(8, 12, 16), execs=(2, 4, 8)),
                      synthetic_job("oneexec", execs=(4,))], ignore_index=True)
    runs.to_csv(tmp_path / "runs.csv", index=False)
    assert main(["evaluate", str(tmp_path / "runs.csv"), "--models", "amdahl", "--split", "cv3"]) == 0
    out = capsys.readouterr().out
    assert "| good |" in out and "| oneexec |" not in out
    skipped = out.split("skipped: ", 1)[1]
    assert skipped.startswith("oneexec: ") and "one executor count" in skipped


def test_evaluate_reads_the_store_of_the_environment_as_runs_does(tmp_path, capsys, monkeypatch):
    _store_from(synthetic_job("etl", cliff=False, sizes=(8, 12, 16), execs=(2, 4, 8)), tmp_path / "store")
    monkeypatch.setenv("SPARKPREDICT_STORE", str(tmp_path / "store"))
    assert main(["evaluate", "--models", "amdahl", "--split", "cv3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {r["job"] for r in out["rows"]} == {"etl"}
    # summary is the combined model's (left out here); summary_by_model has every model's
    assert out["summary"] == {} and out["summary_by_model"]["amdahl"]["cv3"]["jobs"] == 1
    assert 0 < out["summary_by_model"]["amdahl"]["cv3"]["mape_mean"] < 0.1


def test_fit_of_several_jobs_gives_each_job_only_its_own_parameters(tmp_path, capsys):
    """Every job of a runs table got every other job's parameters, set to 1: suggest listed
    them as taken from the history and accepted --param for them."""
    etl = synthetic_job("etl", cliff=False, sizes=(8, 12, 16), execs=(2, 4, 8)).assign(iterations=5.0)
    ml = synthetic_job("ml", seed=4, sizes=(8, 12, 16), execs=(2, 4, 8)).assign(pages=3e6)
    pd.concat([etl, ml], ignore_index=True).to_csv(tmp_path / "runs.csv", index=False)
    models = str(tmp_path / "models")
    assert main(["fit", str(tmp_path / "runs.csv"), "--out", models, "--kind", "amdahl"]) == 0
    capsys.readouterr()
    assert main(["suggest", "--models", models, "--job", "etl", "--input-size", "10GB", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["params"] == {"iterations": 5.0}
    assert main(["suggest", "--models", models, "--job", "etl", "--input-size", "10GB", "--param", "pages=5"]) == 2
    assert "no recorded parameter 'pages' (its history declares iterations)" in capsys.readouterr().err


def test_refitting_one_job_into_a_model_folder_keeps_the_others(tmp_path, capsys):
    runs = pd.concat([synthetic_job(j, seed=k, cliff=False, sizes=(8, 12, 16), execs=(2, 4, 8))
                      for k, j in enumerate(("bi", "etl", "ml"))], ignore_index=True)
    runs.to_csv(tmp_path / "runs.csv", index=False)
    runs[runs["job"] == "etl"].to_csv(tmp_path / "etl.csv", index=False)
    models = tmp_path / "models"
    assert main(["fit", str(tmp_path / "runs.csv"), "--out", str(models), "--kind", "amdahl"]) == 0
    capsys.readouterr()
    assert main(["fit", str(tmp_path / "etl.csv"), "--out", str(models), "--kind", "amdahl"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == \
        f"saved 1 model(s) to {models} (kept 2 other jobs' models: bi, ml)"
    assert main(["suggest", "--models", str(models), "--job", "ml", "--input-size", "10GB"]) == 0
    index = json.loads((models / "sparkpredict_models.json").read_text())
    assert sorted(index["jobs"]) == ["bi", "etl", "ml"]
    assert sorted(p.name for p in models.iterdir()) == sorted(["sparkpredict_models.json", *index["jobs"].values()])


def test_predict_warns_on_stderr_when_rows_lie_beyond_the_fitted_runs(tmp_path, capsys):
    """The CSV's extrapolation column is easy to miss: predict says how many rows extrapolate and
    how far the furthest does, in suggest's words, counting from suggest's 0.5 %."""
    _, models = _fitted(tmp_path, capsys)  # etl at 8, 12, 16 GiB on 2, 4, 8 executors
    q = tmp_path / "q.csv"
    q.write_text("job,input_bytes,executors\netl,12GiB,4\n"
                 "etl,16.04GiB,4\n"   # 0.25 % beyond: a recorded size to the model
                 "etl,300GB,4\netl,12GiB,64\n")
    assert main(["predict", str(models), str(q), "--out", str(tmp_path / "p.csv")]) == 0
    out, err = capsys.readouterr()
    assert out == f"wrote 4 predictions to {tmp_path / 'p.csv'}\n"
    assert err == ("warning: 2 of 4 rows extrapolate beyond the runs the models were fitted on (furthest: "
                   "row 3 below the header, job etl: input size 300 GB is 17.5x the runs' largest (17.2 GB)); "
                   "their intervals widen with the distance\n"), err
    p = pd.read_csv(tmp_path / "p.csv")
    assert (p["extrapolation"] > 0).sum() == 3 and p.loc[2, "extrapolation"] == p["extrapolation"].max()

    q.write_text("job,input_bytes,executors\netl,12GiB,4\netl,12GiB,64\n")
    assert main(["predict", str(models), str(q), "--out", str(tmp_path / "p.csv")]) == 0
    assert capsys.readouterr().err == (
        "warning: 1 of 2 rows extrapolates beyond the runs the models were fitted on (row 2 below the header, "
        "job etl: executor count 64 is 8.00x the runs' largest (8)); its interval widens with the distance\n")
    q.write_text("job,input_bytes,executors\netl,12GiB,4\netl,16.04GiB,8\n")
    assert main(["predict", str(models), str(q), "--out", str(tmp_path / "p.csv")]) == 0
    assert capsys.readouterr().err == ""


def test_a_spreadsheets_runs_file_is_read_and_its_mistakes_are_named(tmp_path, capsys, caplog):
    """Tab- or semicolon-separated, blanks after the commas, a job name with a blank: read (it
    was "lacks column(s) input_bytes" of a header that held it). Rows pasted twice: dropped, as
    their copies in both a fold's training and test rows flattered every CV error. One run id on
    rows that differ, and a cell that is no number: refused, naming them."""
    from sparkpredict.features.runs import read_runs_file

    csv, _ = _fitted(tmp_path, capsys)
    runs = pd.read_csv(csv)
    expect = read_runs_file(str(csv))
    for name, text in (("tabs.tsv", runs.to_csv(index=False, sep="\t")),
                       ("semi.csv", runs.to_csv(index=False, sep=";")),
                       ("blanks.csv", runs.assign(job="etl ").to_csv(index=False).replace(",", ", "))):
        (tmp_path / name).write_text(text)
        got = read_runs_file(str(tmp_path / name))
        pd.testing.assert_frame_equal(got[list(expect.columns)], expect, check_dtype=False)
    assert "'etl ' of" in caplog.text and "read without the blanks" in caplog.text

    pd.concat([runs, runs]).to_csv(tmp_path / "twice.csv", index=False)
    assert len(read_runs_file(str(tmp_path / "twice.csv"))) == len(runs)
    assert f"{len(runs)} row(s) of {tmp_path / 'twice.csv'} repeat an earlier row whole" in caplog.text
    pd.concat([runs, runs.iloc[:1].assign(runtime_s=1.0)]).to_csv(tmp_path / "clash.csv", index=False)
    assert main(["fit", str(tmp_path / "clash.csv"), "--out", str(tmp_path / "m2")]) == 2
    assert f"holds run id(s) {runs.run_id[0]} on rows that differ" in capsys.readouterr().err

    joined = (tmp_path / "runs.csv").read_text() * 2  # two exports joined, headers and all
    (tmp_path / "joined.csv").write_text(joined)
    assert main(["fit", str(tmp_path / "joined.csv"), "--out", str(tmp_path / "m2")]) == 2
    err = capsys.readouterr().err
    assert f"row {len(runs) + 1}: input_bytes 'input_bytes'" in err and "a second header line" in err
    assert not (tmp_path / "m2").exists()


def test_fit_names_extra_features_and_predict_a_feature_the_query_lacks(tmp_path, capsys):
    """Every other numeric column of a runs table is a feature: one derived from the runtime
    made the model look better than it is, and predict filled it in without a word."""
    csv, _ = _fitted(tmp_path, capsys)
    runs = pd.read_csv(csv)
    runs.assign(runtime_min=runs["runtime_s"] / 60).to_csv(tmp_path / "extra.csv", index=False)
    assert main(["fit", str(tmp_path / "extra.csv"), "--out", str(tmp_path / "m2")]) == 0
    assert "etl: features beyond the size, executors, cores and memory: runtime_min" in capsys.readouterr().out
    pd.DataFrame({"job": ["etl"], "input_bytes": ["10GB"], "executors": [4]}).to_csv(tmp_path / "q.csv", index=False)
    assert main(["predict", str(tmp_path / "m2"), str(tmp_path / "q.csv"), "--out", str(tmp_path / "p.csv")]) == 0
    assert "the query lacks column(s) runtime_min, which the model(s) take" in capsys.readouterr().err
    assert main(["predict", str(tmp_path / "models"), str(tmp_path / "q.csv"), "--out", str(tmp_path / "p.csv")]) == 0
    assert "lacks" not in capsys.readouterr().err


def test_evaluate_says_why_a_job_has_too_few_runs(tmp_path, capsys):
    """Runs without a size (an event log that declared none): "0 runs (< 12)" of a job with
    27 hid the reason, which fit gives."""
    csv, _ = _fitted(tmp_path, capsys)
    runs = pd.read_csv(csv)
    runs.assign(input_bytes=0).to_csv(tmp_path / "unsized.csv", index=False)
    assert main(["evaluate", str(tmp_path / "unsized.csv")]) == 2
    err = capsys.readouterr().err
    assert f"etl: 0 usable of {len(runs)} runs ({len(runs)} without a positive input_bytes) (< 12)" in err


def test_evaluate_takes_the_cv3_seed(tmp_path, capsys):
    csv, _ = _fitted(tmp_path, capsys)
    args = ["evaluate", str(csv), "--split", "cv3", "--models", "amdahl", "--json"]
    assert main([*args, "--random-state", "-1"]) == 2
    assert "--random-state -1 is outside" in capsys.readouterr().err
    runs = {}
    for seed in ("0", "0", "7"):
        assert main([*args, "--random-state", seed]) == 0
        runs.setdefault(seed, []).append(json.loads(capsys.readouterr().out))
    for got in (*runs["0"], *runs["7"]):
        for row in got["rows"]:
            row.pop("fit_s")  # a time, not a figure
    first, again = runs["0"]
    assert first == again  # the same seed: the same figures
