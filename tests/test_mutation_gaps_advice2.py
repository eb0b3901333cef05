"""The advice layer's rules at their boundaries, second pass (a mutation audit of advise.py,
advice.py, advice_args.py and cli/suggest.py, 2026-12-06, after tests/test_mutation_gaps_advice.py):
each test here failed on a one-operator change that every other advice test let pass: the
dynamic-allocation bounds as JSON and text and their minimum at the deadline, runtimes and ratios
at their rounding edges, the knee of two counts, the extrapolation distance noted from 0.5 %.
"""
from __future__ import annotations

from test_advise import LawModel, advise

from sparkpredict.advice import context_lines, format_ratio, format_runtime


def test_json_and_text_carry_both_dynamic_allocation_bounds():
    # T = 60 S/GB (0.9/E + 0.1) + 30: the knee is 8, the cheapest count 1: bounds (1, 8)
    a = advise(model=LawModel(b=0.1))
    assert a.dynamic_allocation == (1, 8)
    assert a.to_dict()["dynamic_allocation"] == {"min_executors": 1, "max_executors": 8}
    assert "dynamic allocation: minExecutors=1 maxExecutors=8" in context_lines(a)


def test_a_runtime_prints_below_a_tenth_of_a_second_up_to_99_5_ms():
    assert format_runtime(0.095) == format_runtime(0.0994) == "<0.1s"
    assert format_runtime(0.0995) == "0.1s"


def test_a_ratio_keeps_two_decimals_below_ten_one_below_a_hundred():
    assert format_ratio(9.994) == "9.99"
    assert format_ratio(9.996) == "10.0"  # rounds to 10: one decimal, three digits
    assert format_ratio(10.5) == "10.5"
    assert format_ratio(99.94) == "99.9"
    assert format_ratio(99.96) == "100"


def test_two_counts_are_a_curve_with_a_knee_one_is_none():
    # T = 3000/E + 30: 2 -> 4 executors gains (1530/780 - 1) = 0.96 >= 0.5, so 4 still pays off
    a = advise(executor_counts=[2, 4])
    assert a.knee_reached is False and a.to_dict()["knee_reached"] is False
    assert context_lines(a)[0] == "knee: not reached up to 4 executors (more still pay off)"
    assert advise(executor_counts=[4]).knee_reached is None


def test_a_miss_predicted_exactly_at_the_deadline_is_predicted_within_it():
    # 4 predicted at the deadline itself, its upper bound over it and its chance 30 %: "misses",
    # though not "predicted over it"
    from test_mutation_gaps_advice import table

    a = table({4: (100.0, 120.0)}, {4: 0.3}, deadline_s=100)
    assert a.meets_deadline is False and a.predicted_runtime_s == 100.0
    assert "misses deadline 1m40s: predicted within it, but more likely over it than not" in a.summary()


def test_a_distance_of_exactly_half_a_percent_is_noted():
    import dataclasses

    from test_advise import GB

    a = advise(input_bytes=200 * GB)  # 2x the largest size
    b = dataclasses.replace(a, extrapolation={"input_bytes": 0.005, "executors": 0.0049})
    [note] = b.extrapolation_notes()
    assert note.startswith("input size 200 GB is 2.00x the runs' largest")


def test_a_distance_in_a_column_without_a_recorded_range_reads_as_a_percentage():
    import dataclasses

    from test_advise import GB

    a = dataclasses.replace(advise(input_bytes=200 * GB), extrapolation={"input_bytes": 1.0},
                            training_range={})
    assert a.extrapolation_notes() == ["input size +100%"]


def test_a_wide_interval_is_blamed_on_a_column_from_half_a_percent_out():
    import numpy as np

    from sparkpredict.advise import _wide_interval_warning

    ranges, X = {"input_bytes": (1e9, 2e9)}, {"input_bytes": np.array([2.01e9])}
    at = _wide_interval_warning(12.0, 0.9, {"input_bytes": 0.005}, ranges, X, 0)
    assert at.endswith("(its input size 2.01 GB is 1.00x the runs' largest (2 GB)); a run nearer it would "
                       "narrow the interval"), at
    within = _wide_interval_warning(12.0, 0.9, {"input_bytes": 0.0049}, ranges, X, 0)
    assert within.endswith("cannot pin this run down; more runs of the job would narrow it"), within


def test_dynamic_allocation_min_is_the_fewest_predicted_exactly_at_the_deadline():
    # 2 executors predicted at the deadline itself (its bound over it), 4 meeting it: (2, 4)
    from test_mutation_gaps_advice import table

    a = table({2: (100.0, 130.0), 4: (80.0, 90.0)}, deadline_s=100)
    assert a.executors == 4 and a.dynamic_allocation == (2, 4)


def test_a_value_above_runs_that_all_had_zero_is_said_so_without_a_ratio():
    from sparkpredict.advice import beyond_history

    assert beyond_history("skew", 5.0, 0.0, 0.0) == "skew 5 is above the runs' 0"
