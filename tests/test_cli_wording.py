"""Names and words the CLI shares across commands: simulate's JSON keys, fit's CV MAPE beside
evaluate's, and the deadline verdict's chance in suggest's summary."""
from __future__ import annotations

import json
import re
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest

from sparkpredict.cli import main as cli_main

HISTORY = Path(__file__).resolve().parent / "data" / "history"
GB = 10**9


@pytest.fixture(scope="module")
def history_runs():
    from sparkpredict.features.runs import runs_table

    return runs_table(str(HISTORY))


def _help(capsys, *words: str) -> str:
    with pytest.raises(SystemExit) as exc:
        cli_main([*words, "--help"])
    assert exc.value.code == 0
    return capsys.readouterr().out


def test_simulate_json_names_runtimes_as_the_runs_table_and_suggest_do(history_runs, capsys):
    from sparkpredict.advice import Candidate
    from sparkpredict.models.simulate import simulate_run

    row = history_runs[history_runs["job"] == "sort"].iloc[0]
    assert cli_main(["simulate", str(row["run_id"]), "--store", str(HISTORY), "--executors", "1,2",
                     "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    # the recorded runtime: the runs table's column, with its value
    assert rep["runtime_s"] == pytest.approx(float(row["runtime_s"]))
    # a predicted runtime: the name suggest --json (and predict) give it
    assert "predicted_runtime_s" in {f.name for f in fields(Candidate)}
    replays = [rep["self_check"], *rep["predictions"]]
    assert [p["executors"] for p in replays] == [int(row["executors"]), 1, 2]
    for p in replays:
        assert 0 < p["lower_bound_s"] <= p["predicted_runtime_s"]
    assert rep["self_error"] == pytest.approx(
        (rep["self_check"]["predicted_runtime_s"] - rep["runtime_s"]) / rep["runtime_s"])
    keys = set(rep) | set(rep["self_check"])
    assert not [k for k in keys if "wall" in k]
    # the Python API's attributes are the JSON's keys
    api = simulate_run(str(row["run_id"]), [1, 2], str(HISTORY))
    assert api.runtime_s == rep["runtime_s"]
    assert [p.predicted_runtime_s for p in api.predictions] == [p["predicted_runtime_s"] for p in rep["predictions"]]
    # --json's help names every key it prints
    documented = set(re.findall(r"\w+", _help(capsys, "simulate")))
    assert sorted(keys - documented) == []


def _sort_runs_csv(history_runs, tmp_path) -> Path:
    csv = tmp_path / "sort.csv"
    history_runs[history_runs["job"] == "sort"].to_csv(csv, index=False)
    return csv


def test_fit_says_what_its_cv_mape_is_and_that_evaluate_measures_another(history_runs, tmp_path, capsys):
    csv = _sort_runs_csv(history_runs, tmp_path)
    assert cli_main(["fit", str(csv), "--out", str(tmp_path / "m")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("sort") and "CV MAPE" in lines[0]
    note = lines[1]  # one line after the table, before "saved ..."
    assert note.startswith("CV MAPE: mean of 3-fold CV and held-out largest/smallest sizes and executor counts")
    assert "chosen with: optimistic" in note and "`sparkpredict evaluate` refits the choice per fold" in note
    assert lines[2].startswith("saved 1 model(s)") and len(lines) == 3
    # a single kind is chosen from nothing: no "optimistic"
    assert cli_main(["fit", str(csv), "--out", str(tmp_path / "m2"), "--kind", "amdahl"]) == 0
    note = capsys.readouterr().out.splitlines()[1]
    assert note.startswith("CV MAPE: mean of 3-fold CV") and "optimistic" not in note


def test_the_note_describes_the_number_fit_prints(history_runs):
    """cv_mape_ is the mean of the chosen candidates' 3-fold MAPE and extrapolation-fold MAPE,
    as fit's note says; should that change, the note must change with it."""
    from sparkpredict.models import selection
    from sparkpredict.models.hybrid import JobRuntimeModel

    jr = history_runs[history_runs["job"] == "sort"]
    m = JobRuntimeModel().fit(jr)
    F, y, extras, _ = m._training_columns(jr)
    cv = selection.select(F, y, extras).cv
    assert np.isfinite(cv.extrap_mape) and cv.interp_mape != pytest.approx(cv.extrap_mape)
    assert m.cv_mape_ == pytest.approx(0.5 * (cv.interp_mape + cv.extrap_mape))


def test_evaluate_says_its_folds_refit_the_choice_and_how_fits_figure_differs(capsys):
    from sparkpredict.evaluate import SPLIT_TITLES

    assert SPLIT_TITLES["cv3"].startswith("3-fold cross-validation (interpolation; refitted per fold, "
                                          "the combined model's choice included)")
    text = " ".join(_help(capsys, "evaluate").split())
    assert "Every fold refits the model, the combined model's choice of candidate included" in text
    assert "`fit` prints another figure, CV MAPE: the chosen model's error on the folds it was chosen with" in text


class _Law:
    """T = 3000/E + 30 s at 50 GB, interval T*(1 -/+ 0.1*confidence/0.9), a fixed chance."""

    name_ = "law"
    cv_mape_ = 0.03
    n_runs_ = 40

    def __init__(self, chance: float) -> None:
        self.chance = chance
        self.feature_names_ = ["input_bytes", "executors", "executor_cores", "executor_memory_mb"]
        self.training_range_ = {"input_bytes": (10 * GB, 100 * GB), "executors": (2, 16),
                                "executor_cores": (4, 4), "executor_memory_mb": (4096, 4096)}

    def predict(self, X):
        return 60.0 * np.asarray(X["input_bytes"], float) / GB / np.asarray(X["executors"], float) + 30.0

    def predict_interval(self, X, confidence=0.9):
        t = self.predict(X)
        k = 0.1 * confidence / 0.9
        return {"predicted_runtime_s": t, "lower_s": t * (1 - k), "upper_s": t * (1 + k)}

    def chance_within(self, X, limit_s):
        return np.full(len(np.atleast_1d(X["executors"])), self.chance)


def _advise(chance: float, **kw):
    from sparkpredict import suggest_executors

    return suggest_executors("etl", models={"etl": _Law(chance)}, input_bytes=50 * GB, **kw)


def test_a_deadline_not_met_says_what_meets_needs_and_why():
    # 60 s cannot be met (T = 30 s + 3000/E s, E <= 16: 3m38s): a 60 % chance "may miss" it
    a = _advise(0.6, deadline_s=60, max_executors=16, confidence=0.8)
    assert a.meets_deadline is False
    assert a.summary().endswith("; may miss deadline 1m00s: its 80% upper bound is over it (chance 60%; "
                                "'meets' needs 90%, as 10% of runs end above the 80% interval)")
    assert "needed" not in a.summary()
    a = _advise(0.2, deadline_s=60, max_executors=16, confidence=0.95)
    assert a.summary().endswith("; misses deadline 1m00s: predicted over it (chance 20%; "
                                "'meets' needs 97.5%, as 2.5% of runs end above the 95% interval)")


def test_a_deadline_met_reads_as_before():
    # upper = 1.1 T <= 600 s from 6 executors on
    a = _advise(0.97, deadline_s=600)
    assert a.meets_deadline is True
    assert a.summary().endswith("; meets deadline 10m00s by the 90% upper bound (chance 97%)")
