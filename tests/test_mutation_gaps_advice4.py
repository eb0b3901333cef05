"""The advice layer's edges that a fourth mutation pass (suggest_executors and advice_source.py,
2026-12-06) found no test pinning: each test here failed on a one-operator change of the rule it
pins, which the advice tests that start no JVM let pass (or did not kill within the audit's 120 s
per mutant).

No JVM: models are tables (test_mutation_gaps_advice.TableModel) or LawModel, runs are frames.
"""
from __future__ import annotations

import pytest
from test_advise import LawModel, advise
from test_mutation_gaps_advice import table

from sparkpredict.units import format_amount


def test_a_count_predicted_exactly_at_the_deadline_is_predicted_within_it():
    # no upper bound meets 100 s; 2 is predicted at 100 s itself, so a count is predicted within
    # it and the likeliest count is given (4, 45 %), not the fastest by the upper bound (2)
    a = table({2: (100.0, 130.0), 4: (110.0, 140.0)}, {2: 0.3, 4: 0.45}, deadline_s=100)
    assert a.meets_deadline is False and a.executors == 4
    [w] = [w for w in a.warnings if "meets the deadline" in w]
    assert w.endswith("the count most likely to make it is given")


def test_no_wide_interval_warning_for_a_prediction_of_zero():
    # an upper bound over a prediction floored at 0 s is no multiple of it: no "Nx" warning
    a = table({4: (0.0, 5.0)})
    assert a.predicted_runtime_s == 0.0
    assert [w for w in a.warnings if "cannot pin this run down" in w] == []
    # any prediction above 0 is one: half a second with a bound of 6 s is 12x it
    [w] = [w for w in table({4: (0.5, 6.0)}).warnings if "cannot pin this run down" in w]
    assert "reaches 12x the predicted runtime" in w


def test_over_budget_without_a_deadline_says_nothing_of_a_deadline():
    # objective time, no deadline, no count within 0.001 executor-h: the count likeliest to fit
    # the budget, and no "meets the deadline" (there is none)
    a = advise(objective="time", budget=0.001, max_executors=8)
    [w] = [w for w in a.warnings if w.startswith("no candidate fits the budget")]
    assert w.startswith("no candidate fits the budget 0.001 executor-h at 90% confidence; "
                        "the count likeliest to fit it is given")
    assert "deadline" not in w
    # with a deadline met, it is said
    b = advise(objective="time", budget=0.001, deadline_s=3600, max_executors=8)
    assert b.meets_deadline is True
    [w] = [w for w in b.warnings if w.startswith("no candidate fits the budget")]
    assert "0.001 executor-h and meets the deadline at 90% confidence; the count meeting the deadline" in w
    # priced: the prediction in money, executor-hours x the price
    p = advise(objective="time", budget=0.001, max_executors=8, price_per_executor_hour=2.0)
    [w] = [w for w in p.warnings if w.startswith("no candidate fits the budget")]
    assert w.endswith(f"(predicted {format_amount(p.cost_money)})")
    assert p.cost_money == pytest.approx(2 * p.cost_executor_hours)


class CappedModel(LawModel):
    """LawModel whose 4 out-of-fold errors support at most an 80 % interval."""

    def max_confidence(self):
        return 0.8

    def interval_errors(self):
        return 4


def test_a_capped_interval_says_no_chance_exceeds_errors_over_errors_plus_one():
    # 4 out-of-fold errors: no stated chance exceeds 4/5
    [w] = [w for w in advise(CappedModel()).warnings if "cannot support" in w]
    assert "the model's 4 out-of-fold errors cannot support the 90% interval asked for, only one up to 80%" in w
    assert "no stated chance exceeds 80% (more runs" in w


def test_over_budget_past_an_unmet_deadline_prices_the_prediction_in_money():
    # price 2 per executor-hour: the predicted cost in money is executor-hours x 2
    a = advise(objective="time", deadline_s=60, max_executors=20, budget=0.001, price_per_executor_hour=2.0)
    assert a.meets_deadline is False and a.executors == 20
    assert a.cost_money == pytest.approx(2 * a.cost_executor_hours)
    [w] = [w for w in a.warnings if "budget" in w]
    assert f"(predicted {format_amount(a.cost_money)}): with no count meeting the deadline" in w


def test_a_model_given_without_a_store_is_no_sweep_history_to_submit():
    # no store: no runs, so none swept; submit must not warn that every run ran in a sweep
    from sparkpredict.advice_source import HistorySource
    from sparkpredict.cli.submit import run_kind_warnings

    src = HistorySource.resolve("etl", models={"etl": LawModel()})
    assert src.sweep_mix == (0, 0)
    assert run_kind_warnings(src, ["--master", "yarn"]) == []


def test_a_stage_row_without_an_attempt_id_is_its_first_attempt():
    # a stage whose attempt id is not recorded ran once as far as anyone knows: no run of the
    # history is named as having run stages again
    import numpy as np
    from test_advice_recovered_runs import HISTORY

    from sparkpredict import store as store_mod
    from sparkpredict.advice_source import HistorySource

    real = store_mod.open(HISTORY)

    class NoAttemptIds:
        path = real.path

        def runs(self):
            return real.runs()

        def read(self, table, **kw):
            df = real.read(table, **kw)
            return df.assign(stage_attempt_id=np.nan) if table == "stages" else df

        def measured_inputs(self, **kw):
            return real.measured_inputs(**kw)

    runs, spill, _, _, rerun, _ = HistorySource._history("sort", NoAttemptIds())
    assert len(runs) > 0 and spill is not None
    assert rerun == frozenset()


def _source(ranges):
    from types import SimpleNamespace

    from sparkpredict.advice_source import HistorySource

    return HistorySource("etl", SimpleNamespace(training_range_=ranges))


def test_a_fractional_range_is_extrapolated_beyond_on_either_side():
    # a model with no extrapolation of its own: the distance beyond the runs' range, as a
    # share of its edge, for a parameter whose values are all below 1
    import numpy as np

    src = _source({"fraction": (0.1, 0.5)})
    assert src.extrapolation({"fraction": np.array([0.8])}, 0) == {"fraction": pytest.approx(0.6)}
    assert src.extrapolation({"fraction": np.array([0.05])}, 0) == {"fraction": pytest.approx(1.0)}
    assert src.extrapolation({"fraction": np.array([0.5])}, 0) == {"fraction": 0.0}
    # 0 is no multiple of anything: not beyond the range by any ratio (and no division by it)
    assert src.extrapolation({"fraction": np.array([0.0])}, 0) == {"fraction": 0.0}


def test_a_mean_executor_count_under_half_is_seen_as_one():
    # dynamic allocation records a run's mean count: 0.4 executors ran on one at least
    src = _source({"executors": (0.4, 0.4)})
    assert src.executor_counts_seen() == [1]
    assert any(w.startswith("every run of etl used 1 executor:") for w in src.warnings(10**9, 1, None, None))


def test_the_runs_above_the_model_are_those_from_a_quarter_above_it_and_none_is_an_empty_list():
    # the model's out-of-fold ratios: 1.25 is the documented edge (kept), 1.2 is not
    import pandas as pd

    from sparkpredict.advice_source import HistorySource

    ranked = LawModel()
    ranked.slow_runs_ = [("a", 2.0), ("b", 1.25), ("c", 1.2)]
    runs = pd.DataFrame({"run_id": ["a", "b", "c"], "input_bytes": [1e9] * 3, "executors": [2.0] * 3,
                         "runtime_s": [10.0] * 3})
    assert HistorySource("etl", ranked, runs).runs_above_model() == [("a", 2.0), ("b", 1.25)]
    # without them, runtime over the model's prediction: 60 s predicted for 1 GB on 2 executors
    ran = runs.assign(runtime_s=[120.0, 60.0, 70.0])
    assert HistorySource("etl", LawModel(), ran).runs_above_model() == [("a", pytest.approx(2.0))]
    # callers iterate the answer (explain ranks every run by it): no runs, or none the fit
    # kept (no positive runtime), is an empty list
    assert HistorySource("etl", LawModel()).runs_above_model() == []
    assert HistorySource("etl", LawModel(), runs.assign(runtime_s=0.0)).runs_above_model() == []
