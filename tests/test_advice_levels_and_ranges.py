"""What the advice says about the interval it gives and the range it searched.

- An interval capped by the model's few out-of-fold errors is labelled with its own level
  (84.6 % for 12 errors), not the 90 % asked for: the table, the summary, the "'meets' needs"
  note, the warnings and the JSON all state it, so "meets by the 90% upper bound (chance 92%)"
  no longer contradicts itself.
- Dynamic allocation's max is the chosen count when the knee lies at the range's end (not
  reached) or a budget is given; a --min-executors above the history's counts searches a range,
  not that one count; an unmeetable deadline at the default range's end says how to ask beyond.
- More memory per executor, which no run varied, keeps the upper bound the runs' memory has.
- A value starting with a dash (``--input-size -5GB``) gets the value's own error, not argparse's
  "expected one argument".
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sparkpredict import suggest_executors
from sparkpredict.cli import main
from sparkpredict.models.hybrid import JobRuntimeModel
from sparkpredict.models.persist import save_models

MB = 10**6
GB = 10**9
HISTORY = Path(__file__).parent / "data" / "history"


@pytest.fixture
def real_history(tmp_path, monkeypatch):
    """The repository's recorded history, its fitted models cached outside it."""
    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    return HISTORY


@pytest.fixture(scope="module")
def few_runs_model():
    """12 runs of T = 2 + 8 s per MB / E with 5 % noise: too few errors for a 90 % interval."""
    rng = np.random.default_rng(7)
    rows = [{"job": "wc", "input_bytes": s * MB, "executors": e, "executor_cores": 1,
             "executor_memory_mb": 1024, "runtime_s": (2 + 8 * s / e) * rng.lognormal(0, 0.05)}
            for s in (2, 4, 8, 16) for e in (1, 2, 3)]
    return JobRuntimeModel().fit(pd.DataFrame(rows))


def test_an_interval_capped_by_few_errors_is_labelled_with_its_own_level(few_runs_model, tmp_path, capsys):
    top = few_runs_model.max_confidence()
    assert top < 0.9
    level = f"{top * 100:.3g}%"  # 12 errors: 84.6%
    adv = suggest_executors("wc", "8MB", deadline_s="1h", models={"wc": few_runs_model}, max_executors=3)
    assert adv.confidence == 0.9 and adv.interval_confidence == pytest.approx(top)
    assert adv.shown_confidence == pytest.approx(top)
    # the interval given is the capped one: the same bounds as asked at its own level
    own = suggest_executors("wc", "8MB", deadline_s="1h", models={"wc": few_runs_model}, max_executors=3,
                            confidence=top)
    assert own.interval_confidence is None and own.upper_s == pytest.approx(adv.upper_s)
    s = adv.summary()
    assert f"({level} interval " in s and f"by the {level} upper bound" in s and "90%" not in s, s
    from sparkpredict.advice import candidate_table

    cols, _ = candidate_table(adv)
    assert f"{level} interval" in cols
    said = [w for w in adv.warnings if "out-of-fold error" in w]
    assert len(said) == 1 and "the 90% interval asked for" in said[0] and f"only one up to {level}" in said[0]

    # a deadline it misses: the note says what 'meets' needs at the level shown
    three = next(c for c in adv.candidates if c.executors == 3)
    tight = suggest_executors("wc", "8MB", deadline_s=three.predicted_runtime_s * 1.01,
                              models={"wc": few_runs_model}, max_executors=3, executor_counts=[3])
    assert tight.meets_deadline is False
    needs = f"'meets' needs {(1 + top) / 2 * 100:.3g}%, as {(1 - top) / 2 * 100:.3g}% of runs end above the {level} interval"
    assert needs in tight.summary(), tight.summary()
    assert any(f"at {level} confidence" in w for w in tight.warnings), tight.warnings

    save_models({"wc": few_runs_model}, tmp_path / "m")
    assert main(["suggest", "--job", "wc", "--input-size", "8MB", "--deadline", "1h", "--models",
                 str(tmp_path / "m"), "--max-executors", "3", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["confidence"] == 0.9 and d["interval_confidence"] == pytest.approx(top)
    # a level the runs support is given as asked, with no second level
    asked = suggest_executors("wc", "8MB", models={"wc": few_runs_model}, max_executors=3, confidence=0.8)
    assert asked.interval_confidence is None and "(80% interval " in asked.summary()


class Linear:
    """T = 360,000 s / E + 60 s: each added executor pays off almost fully (no knee before the
    range's end), and costs a little more (100 executor-h + E minutes)."""

    name_ = "linear"
    cv_mape_ = 0.02
    n_runs_ = 40

    def __init__(self) -> None:
        self.feature_names_ = ["input_bytes", "executors", "executor_cores", "executor_memory_mb"]
        self.training_range_ = {"input_bytes": (10 * GB, 100 * GB), "executors": (5, 80),
                                "executor_cores": (4, 4), "executor_memory_mb": (4096, 4096)}

    def predict_interval(self, X, confidence=0.9):
        t = 360000.0 / np.asarray(X["executors"], float) + 60.0
        return {"predicted_runtime_s": t, "lower_s": t * 0.95, "upper_s": t * 1.05}


def test_dynamic_allocation_stops_at_the_choice_when_the_knee_is_not_reached_or_a_budget_binds():
    m = {"etl": Linear()}
    # upper 1.05 x (360000 / E + 60) <= 2h  <=>  E >= 52.96
    a = suggest_executors("etl", "50GB", deadline_s="2h", models=m)
    assert a.executors == 53 and a.knee_executors == a.candidates[-1].executors == 160
    assert a.dynamic_allocation[1] == 53, a.dynamic_allocation
    # the fastest within a budget of 105.53 executor-h by the upper bound (1.05 x (100 + E/60)):
    # 30 executors; max must not let dynamic allocation spend past it
    b = suggest_executors("etl", "50GB", objective="time", budget=105.53, models=m, max_executors=40)
    assert b.executors == 30 and b.dynamic_allocation[1] == 30, (b.executors, b.dynamic_allocation)
    # a knee inside the range still raises max to it (executors beyond it idle for little gain)
    c = suggest_executors("etl", "50GB", models={"etl": Amdahl()}, max_executors=40)
    assert c.executors == 1 and 1 < c.knee_executors < 40
    assert c.dynamic_allocation == (1, c.knee_executors)


class Amdahl(Linear):
    """T = 3000 s x (0.9 / E + 0.1): the knee at E + 1 > 0.9 / 0.1, E = 9."""

    def predict_interval(self, X, confidence=0.9):
        t = 3000.0 * (0.9 / np.asarray(X["executors"], float) + 0.1)
        return {"predicted_runtime_s": t, "lower_s": t * 0.95, "upper_s": t * 1.05}


def test_a_min_executors_above_the_history_searches_a_range_not_one_count():
    a = suggest_executors("etl", "50GB", deadline_s="2h", models={"etl": Linear()}, min_executors=200)
    counts = [c.executors for c in a.candidates]
    assert counts[0] == 200 and counts[-1] == 400, (counts[0], counts[-1])
    assert a.executors == 200


def test_an_unmeetable_deadline_at_the_default_range_end_says_how_to_ask_beyond():
    m = {"etl": Linear()}
    a = suggest_executors("etl", "50GB", deadline_s="10m", models=m)
    assert a.meets_deadline is False and a.executors == 160
    said = [w for w in a.warnings if "no executor count" in w]
    assert len(said) == 1 and "160 is the default end of the range" in said[0] and "max_executors=320" in said[0]
    # a range the user set is theirs: nothing to add
    b = suggest_executors("etl", "50GB", deadline_s="10m", models=m, max_executors=100)
    assert not [w for w in b.warnings if "default end of the range" in w]


def test_more_memory_than_any_run_had_keeps_the_runs_upper_bound(few_runs_model):
    m = {"wc": few_runs_model}
    kw = {"deadline_s": "1h", "models": m, "executor_counts": [1, 2]}
    base = suggest_executors("wc", "8MB", executor_memory_mb=1024, **kw)
    for mem in ("2g", "8g", "64g"):
        more = suggest_executors("wc", "8MB", executor_memory_mb=mem, **kw)
        assert [c.upper_s for c in more.candidates] == pytest.approx([c.upper_s for c in base.candidates]), mem
        assert [c.predicted_runtime_s for c in more.candidates] == pytest.approx(
            [c.predicted_runtime_s for c in base.candidates])
    # less memory per task can slow a run beyond any scaling: wider there
    less = suggest_executors("wc", "8MB", executor_memory_mb="512m", **kw)
    assert all(lc.upper_s > bc.upper_s for lc, bc in zip(less.candidates, base.candidates))


@pytest.mark.parametrize("words,needle", [
    (["--input-size", "-5GB"], "size '-5GB' must be positive"),
    (["--input-size", "5GB", "--deadline", "-5m"], "duration '-5m' must be positive"),
    (["--input-size", "5GB", "--min-executors", "-1"], "--min-executors must be a whole number of at least 1"),
])
def test_a_value_starting_with_a_dash_gets_its_own_error(words, needle, tmp_path, capsys):
    args = ["suggest", "--job", "etl", *words, "--models", str(tmp_path / "no-models")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert needle in err and "expected one argument" not in err, err
    assert main([*args, "--json"]) == 2
    out = json.loads(capsys.readouterr().out)
    assert needle in out["error"] and out["fix"]
    assert not (tmp_path / "no-models").exists()


def test_a_limit_between_the_prediction_and_the_errors_middle_has_the_chance_below_it():
    """Known distribution: log(T / prediction) ~ N(0.5, 0.2), errors running above the
    prediction. The interval is clipped to hold the prediction, so its bounds alone say 50 %
    for any limit between the prediction and e^0.5 times it; the unclipped lower half recovers
    P(log ratio <= 0.3) = Phi(-1) = 15.9 %."""
    from scipy.stats import norm

    from sparkpredict.models.intervals import chance_within

    mu, sd = 0.5, 0.2

    def middle(c):
        return mu + sd * norm.ppf((1 - c) / 2), mu + sd * norm.ppf((1 + c) / 2)

    def clipped(c):
        lo, hi = middle(c)
        return np.minimum(lo, 0.0), np.maximum(hi, 0.0)

    pred = np.array([10.0, 10.0, 10.0])
    for limit, want in ((10 * np.exp(0.3), norm.cdf(-1.0)), (10 * np.exp(0.5), 0.5), (10 * np.exp(0.9), norm.cdf(2.0))):
        got = chance_within(clipped, pred, limit, middle)
        np.testing.assert_allclose(got, want, atol=2e-3)
    # the clipped bounds alone: an even chance below the middle
    np.testing.assert_allclose(chance_within(clipped, pred, 10 * np.exp(0.3)), 0.5, atol=1e-3)


def test_a_later_limit_is_never_less_likely_met_where_the_bounds_are_wide_at_the_middle():
    """The same known distribution, with a lower bound that reaches 10 % below the prediction
    even at confidence 0 (a floor that shifts the clipped bound, as the size and count floors
    do). A limit just below the prediction read 50 % from the clipped bounds, one just above it
    15.9 % from the lower half: 41.1 s predicted said 49 % for a 40 s deadline and 39 % for 45 s."""
    from scipy.stats import norm

    from sparkpredict.models.intervals import chance_within

    mu, sd = 0.5, 0.2

    def middle(c):
        return mu + sd * norm.ppf((1 - c) / 2), mu + sd * norm.ppf((1 + c) / 2)

    def floored(c):
        lo, hi = middle(c)
        return np.minimum(lo, 0.0) - 0.1, np.maximum(hi, 0.0)

    pred = np.array([10.0])
    limits = 10 * np.exp(np.linspace(-0.3, 1.2, 61))
    chances = np.array([chance_within(floored, pred, t, middle)[0] for t in limits])
    assert np.all(np.diff(chances) >= -1e-9), chances
    # just below the prediction: the distribution's own share, P(log ratio <= -0.05) = Phi(-2.75)
    np.testing.assert_allclose(chance_within(floored, pred, 10 * np.exp(-0.05), middle), norm.cdf(-2.75), atol=2e-3)
    np.testing.assert_allclose(chance_within(floored, pred, 10 * np.exp(0.3), middle), norm.cdf(-1.0), atol=2e-3)


def test_far_beyond_the_runs_the_chance_never_falls_as_the_limit_rises(real_history):
    """sqljoin asked about 1 GB on 3 executors, far beyond its 2-32 MB runs: the errors' middle
    lies above the prediction, so a limit just below it had read 50 % from the clipped lower
    bound and one just above it under 50 % from the lower half."""
    from sparkpredict.advice_source import HistorySource

    m = HistorySource.resolve("sqljoin", store=real_history).model
    row = {"input_bytes": np.array([1.0 * GB]), "executors": np.array([3.0])}
    p = float(m.predict(row)[0])
    limits = p * np.linspace(0.5, 2.5, 81)
    chances = np.array([m.chance_within(row, t)[0] for t in limits])
    assert np.all(np.diff(chances) >= -1e-9), chances
    below, above = float(m.chance_within(row, 0.99 * p)[0]), float(m.chance_within(row, 1.01 * p)[0])
    assert below <= above < 0.5


def test_far_beyond_the_runs_a_count_predicted_in_time_can_be_more_likely_late(real_history):
    """sqljoin (runs of 2-32 MB) asked about 10 GB, whose extrapolation folds ran above the
    model: a deadline 30 % above the prediction had read 50 % for every count."""
    from sparkpredict.advice_source import HistorySource

    m = HistorySource.resolve("sqljoin", store=real_history).model
    X = {"input_bytes": np.full(3, 10 * GB), "executors": np.array([1.0, 2.0, 3.0])}
    p = m.predict(X)
    for k in range(3):
        row = {c: v[k:k + 1] for c, v in X.items()}
        chance = float(m.chance_within(row, 1.3 * p[k])[0])
        assert chance < 0.5
        # the upper bound's rule is untouched: 'meets' at c exactly when chance >= (1 + c)/2
        for conf in (0.5, 0.8):
            up = m.predict_interval(row, conf)["upper_s"][0]
            assert (chance >= (1 + conf) / 2 - 1e-4) == bool(up <= 1.3 * p[k])
    a = suggest_executors("sqljoin", "10GB", deadline_s=float(1.3 * p[2]), store=real_history,
                          executor_counts=[3])
    assert a.predicted_runtime_s < a.deadline_s and a.chance_meets_deadline < 0.5
    assert a.candidate_verdicts() == ["misses"]
    assert "misses deadline" in a.summary() and "predicted within it, but more likely over it than not" in a.summary()


def test_confidence_reads_as_the_advice_writes_it(real_history, capsys):
    base = ["suggest", "--job", "sort", "--input-size", "16MB", "--deadline", "15s", "--store", str(real_history), "--json"]
    assert main([*base, "--confidence", "80%"]) == 0
    pct = json.loads(capsys.readouterr().out)
    assert main([*base, "--confidence", "0.8"]) == 0
    frac = json.loads(capsys.readouterr().out)
    assert pct["confidence"] == pytest.approx(0.8) and pct["upper_s"] == pytest.approx(frac["upper_s"])
    assert main([*base, "--confidence", "180%"]) == 2
    err = capsys.readouterr().err
    assert "confidence must lie strictly between 0 and 1, got 1.8" in err and "fix: " in err, err
    with pytest.raises(SystemExit) as e:  # argparse's own exit, as for any unreadable value
        main([*base, "--confidence", "high%"])
    assert e.value.code == 2
    assert "not a level: 'high%' (write e.g. 0.9 or 90%)" in capsys.readouterr().err
