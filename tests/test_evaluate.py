"""The study's protocols: splits, metrics by hand, extra model factories, tables."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from test_hybrid import synthetic_job

from sparkpredict.errors import InputError
from sparkpredict.evaluate import (
    Evaluation,
    evaluate,
    format_tables,
    metrics,
    outer_levels,
    smallest_levels,
    split_masks,
    summary,
)


class MeanModel:
    """An outside model with no equation (p = 0) and no interval: each run is its training mean."""

    def fit(self, runs):
        self.mean_ = float(runs["runtime_s"].mean())
        return self

    def predict(self, X):
        return np.full(len(X), self.mean_)


def test_outer_and_smallest_levels():
    v = np.repeat([2, 4, 6, 8, 10, 12], 2)
    test = outer_levels(v)
    assert sorted(set(v[test])) == [2, 12]          # 34 % of 6 levels = 2: largest and smallest
    assert sorted(set(np.arange(5)[outer_levels(np.arange(5))])) == [0, 4]
    assert sorted(set(np.arange(3)[outer_levels(np.arange(3))])) == [2]  # 3 levels: the largest
    assert outer_levels(np.array([1, 2, 1])) is None
    train = smallest_levels(np.arange(5))
    assert list(np.arange(5)[train]) == [0, 1, 2]   # 60 % of 5 levels
    assert smallest_levels(np.array([1, 1, 2])) is None


def test_split_masks_partition_rows():
    job = synthetic_job(sizes=(8, 12, 16), execs=(2, 4, 6))
    folds = split_masks(job, "cv3")
    assert len(folds) == 3
    assert np.all(sum(t.astype(int) for _, t in folds) == 1)
    for split in ("extrap_size", "extrap_executors", "practitioner"):
        [(train, test)] = split_masks(job, split)
        assert not np.any(train & test) and np.all(train | test)
    with pytest.raises(InputError, match="unknown split"):
        split_masks(job, "loo")


def test_metrics_by_hand():
    y = np.array([10.0, 20.0, 30.0, 40.0])
    p = np.array([11.0, 19.0, 33.0, 40.0])
    m = metrics(y, p, n_params=2)
    assert m["r2"] == pytest.approx(1 - 11 / 500)
    assert m["rrse"] == pytest.approx(math.sqrt(11 / 2) / 25)   # df = n - params
    assert m["mape"] == pytest.approx((0.1 + 0.05 + 0.1 + 0) / 4)


class MeanPerExecutor:
    """An outside model: sees the full training rows (run_id included)."""

    seen_run_id = False

    def fit(self, runs):
        MeanPerExecutor.seen_run_id = "run_id" in runs.columns
        self.means = runs.groupby("executors")["runtime_s"].mean()
        self.all = runs["runtime_s"].mean()
        return self

    def predict(self, X):
        return np.array([self.means.get(e, self.all) for e in np.asarray(X["executors"])])


def test_evaluate_with_study_kinds_and_an_extra_factory():
    runs = pd.concat([synthetic_job("a", cliff=False), synthetic_job("b", seed=3, cliff=False)], ignore_index=True)
    ev = evaluate(runs, models={"mean_e": MeanPerExecutor}, include_study=False)
    assert MeanPerExecutor.seen_run_id
    assert set(ev.rows["split"]) == {"cv3", "extrap_size", "extrap_executors", "practitioner"}
    ev2 = evaluate(runs, models=["amdahl", "auto"], include_study=False, splits=("cv3", "extrap_size"))
    assert set(ev2.rows["model"]) == {"amdahl", "combined"}
    r = ev2.rows.set_index(["job", "split", "model"])
    # data generated from Amdahl with 2 % noise: the equation extrapolates well
    assert r.loc[("a", "extrap_size", "amdahl"), "mape"] < 0.04
    assert r.loc[("a", "cv3", "combined"), "r2"] > 0.98
    assert 0.7 <= r.loc[("a", "cv3", "combined"), "coverage90"] <= 1.0
    t = ev2.table("cv3", "mape")
    assert list(t.index) == ["a", "b", "mean"]
    md = format_tables(ev2)
    assert "| **mean** |" in md and "3-fold cross-validation" in md
    s = summary(ev2)
    assert s["cv3"]["jobs"] == 2
    js = Evaluation(ev2.rows, {}).to_json()
    assert len(js["rows"]) == len(ev2.rows)


def test_evaluate_skips_small_jobs_and_reports_errors():
    runs = pd.concat([synthetic_job("tiny").head(5), synthetic_job("oneexec", execs=(4,))], ignore_index=True)
    ev = evaluate(runs, models=["amdahl"], include_study=False)
    assert "tiny" in ev.skipped
    # one executor count fails every split and model alike: the job is skipped once, with why
    # (each model's own error, a dozen times over, read as many problems)
    assert ev.skipped["oneexec"] == ("one executor count (4) in all 25 runs: no model can learn how "
                                     "the runtime scales with executors")
    assert ev.rows.empty and ev.unscored() == {}
    assert format_tables(ev) == ""  # no table of nothing (it crashed on the empty pivot)


def test_a_model_of_other_runs_still_scores_a_job_of_one_executor_count():
    """The one-count skip is the runtime models' limit only: a model that reads other things
    (a replay, a stage model; here a mean) is still scored on such a job."""
    runs = synthetic_job("oneexec", execs=(4,))
    ev = evaluate(runs, models={"mean": MeanModel}, include_study=False, splits=("cv3",))
    assert "oneexec" not in ev.skipped
    row = ev.rows.iloc[0]
    assert row["model"] == "mean" and row["n_test"] == len(runs) and np.isfinite(row["mape"])


def test_runs_without_a_positive_size_are_left_out_as_fit_leaves_them(caplog):
    """Six runs of -5 bytes failed every fold of their job ("nothing to evaluate"), where `fit`
    drops them and fits the rest."""
    runs = synthetic_job("a", cliff=False)
    clean = evaluate(runs, models=["amdahl"], include_study=False, splits=("cv3",))
    bad = runs.copy()
    bad.loc[bad.index[:6], "input_bytes"] = -5
    ev = evaluate(bad, models=["amdahl"], include_study=False, splits=("cv3",))
    row = ev.rows.iloc[0]
    # each run is in one fold's test rows: all of them but the six
    assert not isinstance(row["error"], str) and row["n_test"] == len(runs) - 6
    assert row["mape"] < 0.05 and clean.rows.iloc[0]["n_test"] == len(runs)
    assert "job a: left out 6 runs without a positive runtime_s, input_bytes and executors" in caplog.text


def test_fit_into_a_folder_that_cannot_be_made_is_an_error_not_a_traceback(tmp_path, capsys):
    from sparkpredict.cli import main

    runs = synthetic_job("a", cliff=False)
    runs.to_csv(tmp_path / "runs.csv", index=False)
    assert main(["fit", str(tmp_path / "runs.csv"), "--out", "/proc/sparkpredict-models", "--kind", "amdahl"]) == 2
    err = capsys.readouterr().err
    assert "error: cannot write models to '/proc/sparkpredict-models': /proc is not writable" in err, err
    assert "fix: give a folder you can write for --out" in err


def test_a_model_that_fails_where_others_score_is_named():
    """One executor count: the equations and the combined model fail, and their columns were
    left out of the tables with no word (the ML kinds now fail too; a factory that fits scores)."""
    runs = synthetic_job("oneexec", execs=(4,))
    from sparkpredict.evaluate import kind_factories

    ev = evaluate(runs, models={"mean_e": MeanPerExecutor, **kind_factories(["amdahl"])}, include_study=False,
                  splits=("cv3",))
    assert set(ev.table("cv3", "mape").columns) == {"mean_e"}
    (key,) = [k for k in ev.unscored()]
    assert key == "oneexec/cv3/amdahl" and "executor count" in ev.unscored()[key]
