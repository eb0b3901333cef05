"""Boundaries of the evaluation protocols, `predict`'s query reading and the report's figures
that a mutation audit found no test pinned (hmutrep): how many levels each split holds out, the
seed the benchmarks' folds come from, the metrics' degrees of freedom, ..."""
from __future__ import annotations

import math
import time
from typing import ClassVar

import numpy as np
import pandas as pd
import pytest
from test_evaluate import MeanModel
from test_hybrid import synthetic_job

from sparkpredict.evaluate import (
    evaluate,
    metrics,
    outer_levels,
    smallest_levels,
    split_masks,
)

# ---------------------------------------------------------------- sparkpredict/evaluate.py


@pytest.mark.parametrize("k, held_out", [
    (3, [2]), (4, [3]), (5, [4, 0]), (6, [5, 0]), (7, [6, 0]), (8, [7, 0, 6]), (10, [9, 0, 8]),
    (11, [10, 0, 9, 1]), (12, [11, 0, 10, 1]), (17, [16, 0, 15, 1, 14, 2]),
])
def test_the_extrapolation_splits_hold_out_about_34_percent_of_the_levels(k, held_out):
    """round(0.34 k) outer levels, largest first, then smallest, alternating: 7 levels hold out 2
    (2.38), not 3; the benchmarks' extrap_size and extrap_executors figures rest on this."""
    levels = np.arange(k)
    test = outer_levels(np.repeat(levels, 2))
    assert sorted(set(np.repeat(levels, 2)[test])) == sorted(held_out)


@pytest.mark.parametrize("k, trained", [(3, 2), (4, 2), (5, 3), (6, 4), (7, 4), (8, 5), (10, 6)])
def test_the_practitioner_split_trains_on_about_60_percent_of_the_sizes(k, trained):
    """round(0.6 k) smallest levels, at least two: 4 sizes train on 2 (2.4), not 3."""
    train = smallest_levels(np.arange(k))
    assert list(np.arange(k)[train]) == list(range(trained))


def test_the_default_cv3_folds_are_those_of_seed_0():
    """The benchmarks call evaluate() without a seed: their cv3 figures are seed 0's folds, as
    `sparkpredict evaluate` (default --random-state 0) gives them."""
    job = synthetic_job("a", cliff=False, sizes=(8, 12, 16), execs=(2, 4, 6))
    for (tr, te), (tr0, te0) in zip(split_masks(job, "cv3"), split_masks(job, "cv3", 0)):
        assert (tr == tr0).all() and (te == te0).all()
    runs = synthetic_job("a", cliff=False)
    got = evaluate(runs, models=["amdahl"], include_study=False, splits="cv3")
    seed0 = evaluate(runs, models=["amdahl"], include_study=False, splits="cv3", random_state=0)
    seed1 = evaluate(runs, models=["amdahl"], include_study=False, splits="cv3", random_state=1)
    assert got.rows.iloc[0]["mape"] == seed0.rows.iloc[0]["mape"] != seed1.rows.iloc[0]["mape"]


def test_metrics_without_a_parameter_count_divide_by_n():
    """metrics(y, pred): an ML regressor's p = 0, RRSE = sqrt(SS_res / n) / mean(y)."""
    y = np.array([10.0, 20.0, 30.0, 40.0])
    p = np.array([11.0, 19.0, 33.0, 40.0])
    assert metrics(y, p)["rrse"] == pytest.approx(math.sqrt(11 / 4) / 25)


def test_a_model_trained_on_too_few_runs_for_an_interval_has_no_coverage():
    """A fold that trains on 4 runs gives a model with no out-of-fold error, hence no interval
    (lower_s 0, upper_s inf: `predict` leaves interval_level empty). Its test runs all lay
    "inside" that and counted as 100 % coverage of a 90 % interval, raising the split's mean."""
    from sparkpredict.models.hybrid import JobRuntimeModel

    full = synthetic_job("a", cliff=False, sizes=(8, 12, 16), execs=(2, 4, 6, 8))
    # sizes 8 and 12 at two counts each (4 runs), size 16 at every count five times (20 runs):
    # the practitioner split trains on the two smallest sizes, 4 runs
    small = full[(full["input_bytes"] < full["input_bytes"].max()) & full["executors"].isin([2, 8])]
    runs = pd.concat([small.groupby(["input_bytes", "executors"]).head(1),
                      full[full["input_bytes"] == full["input_bytes"].max()]], ignore_index=True)
    [(train, _)] = split_masks(runs, "practitioner")
    assert train.sum() == 4 and JobRuntimeModel(kind="amdahl").fit(runs[train]).max_confidence() == 0
    ev = evaluate(runs, models=["amdahl"], include_study=False, splits="practitioner")
    row = ev.rows.iloc[0]
    assert row["n_train"] == 4 and row["n_test"] == 20 and np.isfinite(row["mape"])
    assert math.isnan(row["coverage90"])


def test_an_outside_models_row_is_scored_by_hand():
    """The extrap_size row of a model with no parameters: RRSE over n (p = 0), MAPE, R² of the
    test runs against the training mean, n_train the training rows, no coverage, fit_s the
    fits' own time (within the call's)."""
    runs = synthetic_job("a", cliff=False)
    t0 = time.perf_counter()
    ev = evaluate(runs, models={"mean": MeanModel}, include_study=False, splits="extrap_size")
    took_s = time.perf_counter() - t0
    row = ev.rows.iloc[0]
    [(train, test)] = split_masks(runs.sort_values(["input_bytes", "executors", "runtime_s"], kind="mergesort")
                                  .reset_index(drop=True), "extrap_size")
    y = runs["runtime_s"].to_numpy(float)
    big = runs["input_bytes"].isin([runs["input_bytes"].min(), runs["input_bytes"].max()]).to_numpy()
    assert train.sum() == (~big).sum() == row["n_train"] and row["n_test"] == big.sum() == test.sum()
    pred = y[~big].mean()
    res = y[big] - pred
    assert row["rrse"] == pytest.approx(math.sqrt((res @ res) / big.sum()) / y[big].mean())
    assert row["mape"] == pytest.approx(np.mean(np.abs(res) / y[big]))
    assert row["r2"] == pytest.approx(1 - (res @ res) / ((y[big] - y[big].mean()) ** 2).sum())
    assert math.isnan(row["coverage90"]) and 0 <= row["fit_s"] <= took_s  # a part of the call's own time


def test_a_model_that_fails_its_first_fit_trained_and_tested_nothing():
    from sparkpredict.errors import DegenerateDataError

    class Failing(MeanModel):
        def fit(self, runs):
            raise DegenerateDataError("cannot fit", "record more runs")

    t0 = time.perf_counter()
    ev = evaluate(synthetic_job("a", cliff=False), models={"failing": Failing}, include_study=False,
                  splits="cv3")
    took_s = time.perf_counter() - t0
    row = ev.rows.iloc[0]
    assert row["error"] == "cannot fit (fix: record more runs)" and row["n_train"] == 0 and row["n_test"] == 0
    assert 0 <= row["fit_s"] <= took_s


def test_the_level_splits_leave_two_levels_to_train_on_and_one_to_test_at_any_fraction():
    v = np.arange(3)
    assert list(v[outer_levels(v, fraction=0.9)]) == [2]           # 3 levels: 1 out, 2 to train on
    assert list(np.arange(5)[outer_levels(np.arange(5), fraction=0.05)]) == [4]  # at least 1 out
    assert list(np.arange(4)[~outer_levels(np.arange(4), fraction=1.0)]) == [1, 2]
    assert list(v[smallest_levels(v, fraction=1.0)]) == [0, 1]     # 1 left to test
    assert list(np.arange(5)[smallest_levels(np.arange(5), fraction=0.1)]) == [0, 1]  # at least 2


def test_cv3_splits_six_runs_into_three_folds_of_two_and_refuses_five():
    job = synthetic_job("a", cliff=False, sizes=(8, 16), execs=(2, 4, 6)).groupby(
        ["input_bytes", "executors"]).head(1).reset_index(drop=True)
    folds = split_masks(job, "cv3")
    assert len(job) == 6 and [int(t.sum()) for _, t in folds] == [2, 2, 2]
    assert all((tr == ~te).all() for tr, te in folds)  # each fold trains on the other four
    assert split_masks(job.head(5), "cv3") == []


def test_metrics_of_as_many_runs_as_parameters_divide_by_n():
    """n − p would be 0 (or below) at p ≥ n: RRSE then falls back to n, not a division by zero."""
    y, p = np.array([10.0, 30.0]), np.array([12.0, 30.0])
    assert metrics(y, p, n_params=2)["rrse"] == pytest.approx(math.sqrt(4 / 2) / 20)
    assert metrics(y, p, n_params=1)["rrse"] == pytest.approx(math.sqrt(4 / 1) / 20)


def test_a_job_of_exactly_min_runs_is_scored_and_one_fewer_is_skipped():
    """docs/models.md: "A job needs at least 12 succeeded runs"."""
    job = synthetic_job("a", cliff=False, sizes=(8, 12, 16), execs=(2, 4)).groupby(
        ["input_bytes", "executors"]).head(2).reset_index(drop=True)
    assert len(job) == 12
    ev = evaluate(job, models=["amdahl"], include_study=False, splits="cv3")
    assert ev.skipped == {} and ev.rows.iloc[0]["n_test"] == 12
    ev = evaluate(job.head(11), models=["amdahl"], include_study=False, splits="cv3")
    assert ev.rows.empty and ev.skipped == {"a": "11 runs (< 12)"}


def test_the_tables_print_fractions_as_percentages_r2_as_a_number_and_no_figure_as_a_dash():
    from sparkpredict.evaluate import Evaluation, format_tables

    row = {"split": "cv3", "model": "m", "n_train": 8, "n_test": 4, "fit_s": 0.01, "error": None}
    rows = pd.DataFrame([{"job": "a", **row, "r2": 0.98765, "rrse": 0.0456, "mape": 0.0312, "coverage90": 0.9},
                         {"job": "b", **row, "r2": 0.5, "rrse": 0.1, "mape": 0.0512, "coverage90": np.nan}])
    md = format_tables(Evaluation(rows), ("r2", "rrse", "mape", "coverage90"))
    cells = [line for line in md.splitlines() if line.startswith(("| a |", "| b |"))]
    assert cells == ["| a | 0.988 |", "| b | 0.500 |", "| a | 4.6% |", "| b | 10.0% |", "| a | 3.1% |",
                     "| b | 5.1% |", "| a | 90.0% |"]
    assert "| **mean** | 4.1% |" in md and "| **mean** | 90.0% |" in md
    assert md.splitlines()[2:4] == ["| job | m |", "|---|---|"]
    # a model that scored no coverage on a job the other did: a dash, not "nan%"
    rows.loc[2] = {"job": "b", **row, "model": "n", "r2": 0.5, "rrse": 0.1, "mape": 0.05, "coverage90": 0.8}
    md = format_tables(Evaluation(rows), ("coverage90",))
    assert md.splitlines()[2:] == ["| job | m | n |", "|---|---|---|", "| a | 90.0% | – |", "| b | – | 80.0% |",
                                   "| **mean** | 90.0% | 80.0% |"]


def test_r2_of_test_runs_of_one_runtime():
    """SS_tot = 0 (every test run took the same time): R² 0 for a perfect prediction, −inf for
    any other, not a division by zero."""
    y = np.array([20.0, 20.0, 20.0])
    assert metrics(y, y.copy())["r2"] == 0.0
    assert metrics(y, np.array([20.0, 21.0, 20.0]))["r2"] == -math.inf
    assert metrics(np.array([1.0, 1.5]), np.array([1.0, 1.4]))["r2"] == pytest.approx(1 - 0.01 / 0.125)


def test_runs_of_one_executor_and_under_a_second_are_scored():
    """Only runs without a positive size, count or runtime are left out: 1 executor and 0.5 s
    are positive."""
    job = synthetic_job("a", cliff=False, sizes=(8, 12, 16), execs=(1, 2)).groupby(
        ["input_bytes", "executors"]).head(2).reset_index(drop=True)
    job["runtime_s"] = job["runtime_s"] / 400  # 0.1-1.4 s
    assert (job["runtime_s"] < 1).any()
    ev = evaluate(job, models=["amdahl"], include_study=False, splits="cv3")
    assert ev.skipped == {} and ev.rows.iloc[0]["n_test"] == 12


class _ExactInterval(MeanModel):
    """Bounds at the run's own runtime (the test rows carry it): every run lies on both bounds."""

    asked: ClassVar[list[float]] = []

    def predict_interval(self, X, confidence):
        _ExactInterval.asked.append(confidence)
        y = np.asarray(X["runtime_s"], float)
        return {"predicted_runtime_s": y, "lower_s": y, "upper_s": y}


def test_a_run_on_the_bound_of_its_interval_is_covered():
    ev = evaluate(synthetic_job("a", cliff=False), models={"exact": _ExactInterval}, include_study=False,
                  splits="cv3")
    assert ev.rows.iloc[0]["coverage90"] == 1.0 and ev.rows.iloc[0]["mape"] == 0.0
    assert _ExactInterval.asked == [0.9, 0.9, 0.9]  # coverage90: each fold's 90 % interval


# ---------------------------------------------------------------- sparkpredict/cli/predict.py


def _checked(col: str, *cells):
    """check_query of one column's cells (the other required columns good): (values, problems)."""
    from sparkpredict.cli.predict import check_query

    q = pd.DataFrame({"job": ["sort"] * len(cells), "input_bytes": ["1MB"] * len(cells),
                      "executors": [2] * len(cells)})
    q[col] = pd.Series(list(cells), dtype=object)
    out, problems = check_query(q, {"sort"})
    return out[col].tolist(), {i: "; ".join(w) for i, w in problems.rows.items()}


def test_query_sizes_from_one_byte_to_just_under_8_eib():
    values, problems = _checked("input_bytes", "1B", 1, "0.4", "7168PiB", "8192PiB", 2**63)
    assert problems == {2: "input_bytes 0.4 is less than one byte",
                        4: "input_bytes '8192PiB' is beyond what Spark counts (8 EiB: a 64-bit byte count)",
                        5: "input_bytes 9.223372036854776e+18 is beyond what Spark counts (8 EiB: a 64-bit byte count)"}
    assert values[:2] == [1, 1] and values[3] == 7 * 2**60


def test_a_boolean_count_or_parameter_is_a_bad_cell_not_a_crash():
    """A Parquet column of booleans: True is no executor count (float(True) would read 1)."""
    values, problems = _checked("executors", True, 3)
    assert math.isnan(values[0]) and values[1] == 3 and list(problems) == [0]
    assert problems[0] == "executors True is a boolean, not a number"  # named as given, not as 1
    values, problems = _checked("iterations", False, 25.0)
    assert math.isnan(values[0]) and values[1] == 25.0 and problems[0] == "iterations False is a boolean, not a number"


def test_a_fractional_memory_stays_fractional_and_whole_counts_stay_integers():
    values, problems = _checked("executor_memory_mb", 1024.5, "2048")
    assert problems == {} and values == [1024.5, 2048.0]
    from sparkpredict.cli.predict import check_query

    out, _ = check_query(pd.DataFrame({"job": ["sort"], "input_bytes": ["1e9"], "executors": [2.0]}), {"sort"})
    assert out["input_bytes"].dtype == "int64" and out["executors"].dtype == "int64"
    assert out["input_bytes"].tolist() == [10**9]


def test_a_memory_of_zero_or_less_or_past_any_cluster_is_a_bad_cell():
    values, problems = _checked("executor_memory_mb", 0, -5, "lots", 2**40, 2**40 + 1, "")
    assert problems == {0: "executor_memory_mb 0 is not a number of MiB above zero",
                        1: "executor_memory_mb -5 is not a number of MiB above zero",
                        2: "executor_memory_mb 'lots' is not a number of MiB above zero",
                        4: f"executor_memory_mb {2**40 + 1} is more than any cluster has (at most {2**40:,})"}
    assert values[3] == 2**40 and math.isnan(values[5])  # empty: the model's default


def test_a_cell_that_is_no_number_is_quoted_as_python_shows_it():
    _, problems = _checked("executors", [2, 3], "two")
    assert problems == {0: "executors [2, 3] is not a whole number of at least 1",
                        1: "executors 'two' is not a whole number of at least 1"}


def test_a_huge_count_is_quoted_in_exponent_form_from_1e16():
    """Whole numbers below 1e16 print as integers (a float holds each exactly), from 1e16 as
    floats: 10000000000000000 read as a count someone typed."""
    _, problems = _checked("executors", 1e16, 1.05e16, 9e15)
    assert [problems[i].split(" is ")[0] for i in range(3)] == [
        "executors 1e+16", "executors 1.05e+16", "executors 9000000000000000"]


def test_an_empty_parameter_cell_is_the_models_default_and_text_is_a_bad_cell():
    values, problems = _checked("iterations", 25, "lots", "", None)
    assert problems == {1: "iterations 'lots' is not a number"}
    assert values[0] == 25 and all(math.isnan(v) for v in values[1:])


@pytest.fixture(scope="module")
def iter_models(tmp_path_factory):
    """Models of a job whose runtime grows with a job parameter, ``iterations``."""
    from sparkpredict.cli import main

    rng = np.random.default_rng(0)
    rows = [{"job": "iter", "input_bytes": gib * 2**30, "executors": e, "executor_cores": 2,
             "executor_memory_mb": 4096, "iterations": it,
             "runtime_s": (5 + it * 2.0 * gib / e) * rng.lognormal(0, 0.02), "run_id": f"r-{it}-{gib}-{e}-{rep}"}
            for it in (1, 5, 10) for gib in (1, 2, 4) for e in (1, 2, 4) for rep in range(2)]
    folder = tmp_path_factory.mktemp("iter")
    pd.DataFrame(rows).to_csv(folder / "runs.csv", index=False)
    assert main(["fit", str(folder / "runs.csv"), "--out", str(folder / "models")]) == 0
    return folder / "models"


def _predict_query(models, tmp_path, text: str, *extra: str) -> int:
    from sparkpredict.cli import main

    (tmp_path / "q.csv").write_text(text)
    return main(["predict", str(models), str(tmp_path / "q.csv"), "--out", str(tmp_path / "p.csv"), *extra])


def test_a_parameter_column_the_models_take_is_not_warned_about(iter_models, tmp_path, capsys):
    capsys.readouterr()
    assert _predict_query(iter_models, tmp_path, "job,input_bytes,executors,iterations\niter,2GiB,2,5\n") == 0
    err = capsys.readouterr().err
    assert "no feature" not in err and "lacks" not in err
    assert _predict_query(iter_models, tmp_path, "job,input_bytes,executors,iteration\niter,2GiB,2,5\n") == 0
    err = capsys.readouterr().err
    assert "warning: query column(s) iteration are no feature of the models of these jobs, which take " in err
    assert "iterations" in err.split("which take ")[1]
    assert "warning: the query lacks column(s) iterations, which the model(s) take as features" in err


def test_an_unknown_jobs_fix_lists_up_to_20_known_jobs_then_counts_them():
    from sparkpredict.cli.predict import RowProblems

    problems = RowProblems({0: ["no model for job 'x'"]}, ["x"])
    for n, tail in ((20, "j19)"), (21, "j19 … (21 in all))")):
        known = [f"j{i:02d}" if i < 10 else f"j{i}" for i in range(n)]
        fix = problems.error(1, known).fix
        assert fix.endswith(f"(known jobs: {', '.join(known[:19])}, {tail}"), fix


def test_predict_table_gives_90_percent_intervals_by_default(iter_models):
    from sparkpredict.cli.predict import predict_table
    from sparkpredict.models.persist import load_models

    models = load_models(iter_models)
    q = pd.DataFrame({"job": ["iter", "iter"], "input_bytes": [2**31, 2**33], "executors": [2, 4],
                      "iterations": [5, 10]})
    got, at90 = predict_table(models, q), predict_table(models, q, 0.9)
    assert models["iter"].max_confidence() >= 0.9 and got["interval_level"].tolist() == [0.9, 0.9]
    pd.testing.assert_frame_equal(got, at90)


def test_a_text_column_of_the_query_is_no_feature_and_changes_no_prediction(iter_models, tmp_path, capsys):
    capsys.readouterr()
    assert _predict_query(iter_models, tmp_path, "job,input_bytes,executors,iterations\niter,2GiB,2,5\n") == 0
    plain = pd.read_csv(tmp_path / "p.csv")
    assert _predict_query(iter_models, tmp_path,
                          "job,input_bytes,executors,iterations,note\niter,2GiB,2,5,nightly\n") == 0
    assert "query column(s) note are no feature" in capsys.readouterr().err
    noted = pd.read_csv(tmp_path / "p.csv")
    pd.testing.assert_frame_equal(noted.drop(columns="note"), plain)


# ---------------------------------------------------------------- sparkpredict/report.py


def test_the_report_data_and_page_advise_for_twice_the_largest_input_by_default():
    """build_sections (the report's data, without the page) and build_report share one default."""
    import inspect

    from sparkpredict.report import build_report, build_sections

    for fn in (build_sections, build_report):
        params = inspect.signature(fn).parameters
        assert params["advice_factor"].default == 2.0 and params["confidence"].default == 0.9


def test_a_report_of_a_job_whose_runs_are_all_excluded_says_so_of_that_job(tmp_path):
    """The reason comes from that job's runs (all excluded), not from the store's other jobs."""
    import shutil
    from pathlib import Path

    from sparkpredict.errors import InputError
    from sparkpredict.report import build_sections
    from sparkpredict.store import edit_runs
    from sparkpredict.store import open as open_store

    store = tmp_path / "store"
    shutil.copytree(Path(__file__).parent / "data" / "history", store)
    runs = open_store(store).runs()
    ids = runs[runs.job == "sqljoin"].run_id.tolist()
    edit_runs(str(store), ids, excluded=True)
    with pytest.raises(InputError) as e:
        build_sections(str(store), jobs=["sqljoin"])
    assert e.value.message == (f"job 'sqljoin' has no succeeded runs in {store}: "
                               f"{len(ids)} runs are excluded from training")
    assert "or choose among: 'sort', 'wordcount'" in e.value.fix


def test_a_job_whose_only_runs_lack_a_size_gets_the_no_advice_note_alone(tmp_path, monkeypatch):
    """Every run without a size: the no-advice note names the fix; the left-out note, which says
    the same of each run, is not added beside it. The stage breakdown draws the latest run with
    its executor count as the runs table reads it."""
    import contextlib
    import io
    from pathlib import Path

    from sparkpredict import report
    from sparkpredict.cli import main
    from sparkpredict.features.runs import runs_table
    from sparkpredict.report import build_sections

    log = Path(__file__).parent / "data" / "eventlogs" / "spark4" / "local-1795969313432"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["ingest", str(log), "--store", str(tmp_path / "store"), "--job", "nosize"]) == 0
    drawn = []
    monkeypatch.setattr(report, "fig_stages", lambda stages, latest, executors: drawn.append(executors) or "png")
    (sec,), _ = build_sections(str(tmp_path / "store"))
    assert drawn == [float(runs_table(str(tmp_path / "store"))["executors"].iloc[0])] and drawn[0] > 0
    assert sec.figures["stages"] == "png"
    assert list(sec.left_out_runs.values()) == ["no input size"]
    assert [n.split(" (")[0].split(":")[0] for n in sec.notes] == ["no fitted whole-job model for this job",
                                                                   "no advice"]
    assert "`sparkpredict store edit RUN_ID... --input-size SIZE`" in sec.notes[1]
