"""Stop 36: what a model with no measured error says (fit, suggest, predict), evaluate's reason
for a job of one executor count, durations past 10,000 h read back, and why retrain refits."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from sparkpredict import suggest_executors
from sparkpredict.cli import main
from sparkpredict.units import format_duration, parse_duration

HISTORY = Path(__file__).parent / "data" / "history"

#: four runs of an Amdahl-shaped job: a single kind fits them, but no fold can be left out
FOUR_RUNS = pd.DataFrame({
    "job": ["j"] * 4, "input_bytes": [1e9, 1e9, 2e9, 2e9], "executors": [2, 4, 2, 4],
    "executor_cores": 1, "executor_memory_mb": 1024, "runtime_s": [100.0, 60.0, 190.0, 110.0]})


@pytest.fixture(scope="module")
def uncrossed(tmp_path_factory) -> Path:
    """A model folder with j's amdahl model fitted on FOUR_RUNS (no cross-validation)."""
    d = tmp_path_factory.mktemp("uncrossed")
    FOUR_RUNS.to_csv(d / "runs.csv", index=False)
    assert main(["fit", str(d / "runs.csv"), "--out", str(d / "models"), "--kind", "amdahl"]) == 0
    return d


def test_fit_without_cross_validation_says_n_a_and_why_not_nan(tmp_path, capsys):
    FOUR_RUNS.to_csv(tmp_path / "runs.csv", index=False)
    assert main(["fit", str(tmp_path / "runs.csv"), "--out", str(tmp_path / "m"), "--kind", "gbm"]) == 0
    out = capsys.readouterr().out
    assert "nan" not in out
    assert out.splitlines()[0].endswith("CV MAPE   n/a")
    assert "j: too few runs to cross-validate (6 or more at two or more executor counts needed), " \
           "so no CV MAPE and no prediction interval" in out


def test_suggest_with_no_measured_error_states_no_interval_and_no_chance(uncrossed, capsys):
    # it printed a "0% interval" column of "none" and a chance of 49 % at every count
    a = suggest_executors("j", "3GB", deadline_s="2m", models=str(uncrossed / "models"))
    assert all(c.chance_meets_deadline is None for c in a.candidates)
    assert all(c.upper_s == float("inf") and c.lower_s == 0 for c in a.candidates)
    assert a.interval_confidence is None and a.meets_deadline is False
    assert a.chance_meets_deadline is None
    # with no bound to certify by, the cheapest count predicted within the deadline, marked "may miss"
    in_time = [c for c in a.candidates if c.predicted_runtime_s <= 120]
    assert a.executors == min(in_time, key=lambda c: (c.cost_executor_hours, c.executors)).executors
    assert "may miss deadline 2m00s: there is no 90% upper bound to certify it" in a.summary()
    assert not any(re.search(r"(?<![0-9])0%", w) for w in a.warnings)
    assert any("no deadline can be certified from the runs of j" in w for w in a.warnings)

    plain = suggest_executors("j", "3GB", models=str(uncrossed / "models"))
    assert any(w.startswith("no 90% interval: the model of j measured 0 out-of-fold errors") for w in plain.warnings)

    assert main(["suggest", "--models", str(uncrossed / "models"), "--job", "j", "--input-size", "3GB",
                 "--deadline", "2m"]) == 0
    out = capsys.readouterr().out
    assert "90% interval" in out and not re.search(r"(?<![0-9])0%", out) and "49%" not in out


def test_predict_with_no_measured_error_says_no_interval(uncrossed, tmp_path, capsys):
    pd.DataFrame({"job": ["j"], "input_bytes": [1.5e9], "executors": [3]}).to_csv(tmp_path / "q.csv", index=False)
    assert main(["predict", str(uncrossed / "models"), str(tmp_path / "q.csv"), "--out", str(tmp_path / "p.csv")]) == 0
    err = capsys.readouterr().err
    assert "at most 0%" not in err
    assert "the model(s) of j measured no out-of-fold error" in err and "no interval (lower_s 0, upper_s inf)" in err
    p = pd.read_csv(tmp_path / "p.csv")
    assert p["lower_s"].iloc[0] == 0 and p["upper_s"].iloc[0] == float("inf")


def test_evaluate_of_one_executor_count_gives_one_reason_and_its_fix(tmp_path, capsys):
    rows = [{"job": "k", "input_bytes": s * 1e9, "executors": 4, "executor_cores": 1,
             "executor_memory_mb": 1024, "runtime_s": 30.0 * s + r} for s in range(1, 7) for r in range(3)]
    pd.DataFrame(rows).to_csv(tmp_path / "one.csv", index=False)
    assert main(["evaluate", str(tmp_path / "one.csv")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    # it listed every model's error (a dozen) and the fix asked for 12 runs, which there were
    assert err == [("error: nothing to evaluate: k: one executor count (4) in all 18 runs: no model can learn "
                    "how the runtime scales with executors"),
                   ("fix: record runs of the job at two or more executor counts (sparkpredict submit "
                    "--executors N, or sparkpredict sweep)")]


@pytest.mark.parametrize("seconds", [1e9, 5.3e14, 3.6e7 + 1])
def test_a_duration_past_ten_thousand_hours_reads_back(seconds):
    # "2.8e5h" was printed, and refused as a --deadline
    text = format_duration(seconds)
    assert "e" in text and abs(parse_duration(text) / seconds - 1) < 0.05


def test_retrain_says_why_each_job_is_refit(tmp_path, capsys):
    store = tmp_path / "store"
    shutil.copytree(HISTORY, store)
    base = ["retrain", "--store", str(store), "--local", "--no-stage-models"]
    assert main(base) == 0
    assert "why: no model yet (sort, sqljoin, wordcount)" in capsys.readouterr().out

    # --dry-run after a change of kind: each job with its reason; no crossover, as --local chose the path
    assert main(base + ["--kind", "amdahl", "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "3 of 3 job(s) would be refit on the local path, 0 of them with stage models"
    assert out[1] == "  sort: its model was fitted with --kind auto, this retrain asks --kind amdahl"
    assert main(base + ["--kind", "amdahl", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["refit_reasons"] == {j: "its model was fitted with --kind auto, this retrain asks --kind amdahl"
                                    for j in ("sort", "sqljoin", "wordcount")}

    assert main(base + ["--kind", "amdahl", "--force"]) == 0
    assert "why: --force (sort, sqljoin, wordcount)" in capsys.readouterr().out
    assert main(base + ["--kind", "amdahl"]) == 0
    out = capsys.readouterr().out
    assert "refit 0 of 3" in out and "why:" not in out
