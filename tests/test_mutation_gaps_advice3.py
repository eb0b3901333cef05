"""The advice layer's rules at their boundaries, third pass (a mutation audit of
``suggest_executors`` and ``_flat_param_warnings`` in advise.py, ``check_executor_counts``,
``whole_number`` and ``check_params`` in advice_args.py and ``parse_params`` in cli/suggest.py,
2026-12-06, after tests/test_mutation_gaps_advice.py and tests/test_mutation_gaps_advice2.py):
each test here failed on a one-operator change that every other advice test let pass: a job
parameter's flat-beyond-the-runs warning (noted from 0.5 %, "at the edge" within 1 % inclusive,
never for a prediction of 0), both dynamic-allocation bounds in the history's warning, the
over-budget warning when no count meets the deadline, the range an unmet deadline names, the
no-interval warning said once, and ``extrapolates`` from 0.5 %.
"""
from __future__ import annotations

import numpy as np

from sparkpredict.advise import _flat_param_warnings


class _Flat:
    """Predicts ``value`` for every row: a parameter's trees flat beyond the runs' values."""

    def __init__(self, value):
        self.value = value

    def predict(self, X):
        return np.full(len(np.asarray(X["iterations"])), self.value, float)


def _flat(extr=0.5, predicted=100.0, at_edge=100.0):
    # 30 iterations asked of runs of 10..20, the model's prediction at 20 given as `at_edge`
    X = {"input_bytes": np.array([1e9]), "executors": np.array([4.0]), "iterations": np.array([30.0])}
    return _flat_param_warnings(_Flat(at_edge), X, 0, ["iterations"], {"iterations": 30.0},
                                {} if extr is None else {"iterations": extr},
                                {"iterations": (10.0, 20.0)}, predicted)


def test_a_parameter_predicted_as_at_the_runs_edge_is_warned_of_from_half_a_percent_out():
    [w] = _flat(extr=0.005)
    assert w.startswith("job parameter iterations 30 is 1.50x the runs' largest (20), yet is predicted as at 20")
    assert _flat(extr=0.0049) == []
    assert _flat(extr=None) == []  # a parameter with no distance recorded is within the runs


def test_predicted_as_at_the_edge_means_within_one_percent_of_it_inclusive():
    assert len(_flat(predicted=100.0, at_edge=101.0)) == 1  # |101 - 100| = 1 % of 100
    assert len(_flat(predicted=100.0, at_edge=99.0)) == 1
    assert _flat(predicted=100.0, at_edge=101.05) == []


def test_a_prediction_of_zero_is_not_said_to_be_flat_one_just_above_is():
    assert _flat(predicted=0.0, at_edge=0.0) == []
    assert len(_flat(predicted=0.5, at_edge=0.5)) == 1


def test_the_dynamic_allocation_warning_sets_the_advices_lower_and_upper_bound(tmp_path):
    # a history of cluster runs under dynamic allocation: the warning names both bounds, in order
    from test_advise_history import fast_model, history, make_store

    from sparkpredict.advise import suggest_executors

    runs, stages = history(dyn=True)
    runs["master"] = "yarn"
    path = make_store(tmp_path / "s", (runs, stages))
    a = suggest_executors("etl", "30GB", store=path, models={"etl": fast_model((runs, stages))},
                          objective="time")
    lo, hi = a.dynamic_allocation
    assert lo < hi
    assert (f"the history used dynamic allocation: set spark.dynamicAllocation.minExecutors={lo} "
            f"and maxExecutors={hi}") in a.warnings


def test_over_budget_with_no_count_meeting_the_deadline_is_said_per_objective():
    # even 20 executors: 1.1 * (3000/20 + 30) = 198 s > 60 s; a budget of 0.001 executor-h
    # fits no count
    from test_advise import advise

    t = advise(objective="time", deadline_s=60, max_executors=20, budget=0.001)
    assert t.meets_deadline is False and t.executors == 20
    [w] = [w for w in t.warnings if "budget" in w]
    assert w.startswith("the count given, the one fastest by its upper bound, costs up to ")
    assert w.endswith("with no count meeting the deadline, the budget did not steer the choice")
    c = advise(objective="cost", deadline_s=60, max_executors=20, budget=0.001)
    [w] = [w for w in c.warnings if "budget" in w]
    assert w.startswith("the advised count costs up to ")
    assert w.endswith("the budget limits the choice only for objective 'time' (this advice: 'cost')")


def test_an_unmeetable_deadline_names_the_range_of_counts_weighed_first_to_last():
    from test_advise import advise

    a = advise(deadline_s=60, min_executors=2, max_executors=20)
    assert a.warnings[0].startswith("no executor count in 2..20 meets the deadline 1m00s at 90% confidence;")


def test_a_model_with_no_measured_error_says_so_once_with_a_deadline_or_without():
    # with a deadline the no-bound warning says why no count meets it; the no-interval warning,
    # which says the same, is for advice without one, of more than one run
    from test_advise import LawModel, advise

    class NoError(LawModel):
        def max_confidence(self):
            return 0.0

        def interval_errors(self):
            return 0

    bare = advise(NoError(n_runs=5))
    assert [w for w in bare.warnings if w.startswith("no 90% interval: the model of etl measured 0 out-of-fold errors")]
    timed = advise(NoError(n_runs=5), deadline_s=600)
    assert timed.meets_deadline is False
    assert [w for w in timed.warnings if w.startswith("no deadline can be certified from the runs of etl")]
    assert not [w for w in timed.warnings if w.startswith("no 90% interval")], timed.warnings
    # of a single run the summary and the too-few-runs warning say it
    assert not [w for w in advise(NoError(n_runs=1)).warnings if w.startswith("no 90% interval")]


def test_the_advice_extrapolates_from_half_a_percent_beyond_the_runs():
    from test_advise import LawModel, advise

    class Beyond(LawModel):
        def __init__(self, distance):
            super().__init__()
            self.distance = distance

        def extrapolation(self, X):
            n = len(np.asarray(X["executors"]))
            return {"input_bytes": np.full(n, self.distance), "executors": np.zeros(n)}

    assert advise(Beyond(0.005)).extrapolates is True
    assert advise(Beyond(0.0049)).extrapolates is False
