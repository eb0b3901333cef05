"""The advice layer's rules at their boundaries (a mutation audit of advise.py, advice.py and
advice_args.py, 2026-12-06, after the ties, fallback and budget changes): each test here failed
on a one-operator change of the rule it pins, which every other test let pass; one
(``..._not_said_to_predict_no_count_within_the_deadline``) pins a wording defect the audit found.

``TableModel`` states each count's runtime, upper bound and chance outright, so each expected
choice is read off the table rather than derived from a law.
"""
from __future__ import annotations

import numpy as np
import pytest
from test_advise import LawModel, advise

from sparkpredict.advise import candidate_grid


class TableModel(LawModel):
    """Runtime, upper bound (and, when given, chance) per executor count, as listed."""

    def __init__(self, rows, chance=None, **kw):
        super().__init__(**kw)
        self.rows = rows  # executors -> (predicted, upper)
        self.chances = chance  # executors -> chance, or None: no chance_within

    def predict(self, X):
        return np.array([self.rows[int(e)][0] for e in np.asarray(X["executors"])], float)

    def predict_interval(self, X, confidence=0.9):
        t = self.predict(X)
        up = np.array([self.rows[int(e)][1] for e in np.asarray(X["executors"])], float)
        return {"predicted_runtime_s": t, "lower_s": t * 0.9, "upper_s": up}

    def __getattr__(self, name):
        if name == "chance_within" and self.__dict__.get("chances") is not None:
            return lambda X, limit_s: np.array([self.chances[int(e)] for e in np.asarray(X["executors"])])
        raise AttributeError(name)


def table(rows, chance=None, **kw):
    return advise(TableModel(rows, chance), executor_counts=sorted(rows), **kw)


def test_a_range_of_257_counts_is_thinned():
    # 256 counts are listed whole (test_mutation_gaps V6); one more is a geometric grid
    grid = candidate_grid(1, 257)
    assert grid[0] == 1 and grid[-1] == 257 and len(grid) < 257


def test_time_counts_runtimes_within_2_percent_as_equally_fast_and_no_further():
    # 2 executors at 102 s cost half of 4 at 100 s: exactly 2 % slower is equally fast
    assert table({2: (102.0, 110.0), 4: (100.0, 108.0)}, objective="time").executors == 2
    # 2.1 % slower is slower, whatever it saves
    assert table({2: (102.1, 110.0), 4: (100.0, 108.0)}, objective="time").executors == 4


def test_ties_are_within_a_billionth_of_the_lowest_and_no_wider():
    from sparkpredict.advise import _first_of_ties

    assert _first_of_ties([[1.0 + 0.95e-9, 1.0]], [1, 2]) == 0  # one figure: the fewest executors
    assert _first_of_ties([[1.0 + 1.05e-9, 1.0]], [1, 2]) == 1  # two figures: the lower
    # relative to the figure: a billionth of 1000 s is a microsecond
    assert _first_of_ties([[1000.0 + 0.95e-6, 1000.0]], [1, 2]) == 0


def test_wide_interval_warning_starts_above_ten_times_the_prediction():
    def wide(rows):
        return [w for w in table(rows).warnings if "cannot pin this run down" in w]
    assert wide({4: (100.0, 1000.0)}) == []
    assert wide({4: (100.0, 1001.0)})


def test_unreliable_model_warning_starts_above_35_percent():
    def said(cv):
        m = LawModel()
        m.cv_mape_ = cv
        return [w for w in advise(m).warnings if "cross-validated error is" in w]
    assert said(0.35) == []
    assert said(0.36) and "36%" in said(0.36)[0]


def test_knee_index_default_efficiency_is_one_half_inclusive():
    from sparkpredict.advise import knee_index

    # 1 -> 2 executors, 3 s -> 2 s: marginal efficiency (3/2 - 1)/(2/1 - 1) = 0.5, still paying off
    assert knee_index([1, 2], [3.0, 2.0]) == 1
    assert knee_index([1, 2], [3.0, 2.1]) == 0


def test_a_thinned_range_not_starting_at_one_still_has_about_256_counts():
    grid = candidate_grid(10, 10_000, seen=(37,))
    assert grid[0] == 10 and grid[-1] == 10_000 and 37 in grid
    # a ratio of (hi/lo)^(1/255) per step: 256 steps, less those that round to one count (235)
    assert 220 <= len(grid) <= 257


def test_a_model_without_chances_is_not_said_to_predict_no_count_within_the_deadline():
    # T = 3000/E + 30, upper 1.1 T: against 190 s no upper bound holds, yet 19 and 20 executors
    # are predicted within it (187.9 s, 180 s). With no chance to rank by, the fastest by the
    # upper bound is given; the warning said "none is even predicted within it", beside the
    # summary's "may miss" of a count predicted at 3m00s.
    a = advise(deadline_s=190, max_executors=20)
    assert a.meets_deadline is False and a.executors == 20 and a.chance_meets_deadline is None
    assert "may miss deadline 3m10s" in a.summary()
    [w] = [w for w in a.warnings if "meets the deadline" in w]
    assert "none is even predicted within it" not in w
    assert "states no chance of making it, so the fastest by that upper bound is given" in w
    # none predicted within it either: the old words hold
    [w] = [w for w in advise(deadline_s=60, max_executors=20).warnings if "meets the deadline" in w]
    assert "none is even predicted within it or likelier to make it than not" in w


def test_a_model_that_records_no_executor_counts_is_asked_about_1_to_8():
    m = LawModel()
    del m.training_range_["executors"]
    a = advise(m)
    assert [c.executors for c in a.candidates] == list(range(1, 9))


def test_the_knee_can_be_the_last_but_one_count():
    from sparkpredict.advise import knee_index

    # 1 -> 2 halves the runtime, 2 -> 4 gains nothing: the knee is 2, not the last count
    assert knee_index([1, 2, 4], [4.0, 2.0, 2.0]) == 1


def test_a_thinned_range_whose_steps_never_round_together_has_exactly_256_counts():
    grid = candidate_grid(1000, 1_000_000)
    assert len(grid) == 256 and grid[0] == 1000 and grid[-1] == 1_000_000


def test_no_count_meeting_the_deadline_gives_the_likeliest_when_one_is_predicted_within_it():
    # 4 is predicted within 100 s, no upper bound is: every chance under 50 %, yet one count
    # predicted in time makes the likeliest count the answer, not the fastest by the bound
    a = table({2: (110.0, 150.0), 4: (95.0, 120.0)}, {2: 0.45, 4: 0.3}, deadline_s=100)
    assert a.meets_deadline is False and a.executors == 2
    # none predicted within it, one at an even chance: again the likeliest
    rows = {2: (110.0, 150.0), 4: (105.0, 120.0)}
    assert table(rows, {2: 0.5, 4: 0.4}, deadline_s=100).executors == 2
    # and under an even chance the fastest by the upper bound
    assert table(rows, {2: 0.49, 4: 0.4}, deadline_s=100).executors == 4


def test_the_likeliest_count_is_never_one_the_table_says_misses_over_one_that_may_miss():
    # the rule ranks chances at 4 decimals, where 49.997 % ties 50 %, and the tie went to the
    # lower upper bound: the advice chose a count its own table marked "misses" (49 %) over
    # one marked "may miss" (50 %); the verdict's side of 50 % now ranks first
    rows = {5: (100.01, 130.0), 7: (100.0, 140.0)}
    a = table(rows, {5: 0.49997, 7: 0.5}, deadline_s=100)
    assert a.executors == 7 and a.meets_deadline is False
    assert a.candidate_verdicts() == ["misses", "may miss"] and "may miss deadline" in a.summary()
    # on one side of 50 % the 4-decimal tie stands, and the lower upper bound still breaks it
    assert table(rows, {5: 0.50003, 7: 0.5}, deadline_s=100).executors == 5


def test_a_tie_at_zero_is_still_a_tie():
    from sparkpredict.advise import _first_of_ties

    # chances of 0 everywhere rank as -0.0: every count ties there, the next rank decides
    assert _first_of_ties([[-0.0, -0.0], [2.0, 1.0]], [1, 2]) == 1


def test_only_a_model_with_no_finite_bound_anywhere_chooses_among_the_counts_predicted_in_time():
    # no finite upper bound (a single run's replay): 4 and 8 are predicted within 100 s, 2 not;
    # the cheapest of those two is given, uncertified
    inf = float("inf")
    a = table({2: (150.0, inf), 4: (90.0, inf), 8: (80.0, inf)}, deadline_s=100)
    assert a.executors == 4 and a.meets_deadline is False
    # one finite bound is a bound to go by: the fastest by the upper bound, as for any model
    # that states no chance
    a = table({2: (150.0, 160.0), 4: (90.0, inf), 8: (80.0, inf)}, deadline_s=100)
    assert a.executors == 2 and a.meets_deadline is False


def test_chances_are_one_figure_to_four_decimals():
    # 60.004 % and 60.001 % read as one chance: the lower upper bound decides, not the fifth decimal
    rows = {2: (90.0, 150.0), 4: (95.0, 120.0)}
    assert table(rows, {2: 0.60004, 4: 0.60001}, deadline_s=100).executors == 4
    assert table(rows, {2: 0.6004, 4: 0.6001}, deadline_s=100).executors == 2


def test_executor_cores_and_memory_limits_are_the_largest_values_spark_holds():
    from sparkpredict.advice_args import check_executor_cores, check_executor_memory_mb
    from sparkpredict.errors import InputError

    assert check_executor_cores(2**31 - 1) == 2**31 - 1  # an int's largest
    with pytest.raises(InputError, match="beyond what spark.executor.cores holds"):
        check_executor_cores(2**31)
    top = (2**63 - 1) // 2**20  # MiB whose byte count still fits a long
    assert check_executor_memory_mb(top) == top
    with pytest.raises(InputError, match="beyond what Spark counts"):
        check_executor_memory_mb(top + 1)


def test_runtimes_are_floored_at_zero_only():
    a = table({1: (-0.2, 0.4), 2: (0.5, 0.6)})
    assert [c.predicted_runtime_s for c in a.candidates] == [0.0, 0.5]
    assert [c.upper_s for c in a.candidates] == [0.4, 0.6]
    assert [c.lower_s for c in a.candidates] == pytest.approx([0.0, 0.45])  # -0.18 floored


def test_a_thinned_table_spreads_its_rows_evenly_from_first_to_last():
    from sparkpredict.advice import candidate_table

    # 9 counts alike: the choice and the knee are the first; 3 rows are the first, middle and last
    a = table({e: (100.0, 110.0) for e in range(1, 10)})
    assert a.executors == 1 and a.knee_executors == 1
    _, rows = candidate_table(a, max_rows=3)
    assert [r[1] for r in rows] == ["1", "5", "9"]


def test_to_dict_keeps_counts_whole_numbers():
    import json

    d = advise(max_executors=4).to_dict()
    assert type(d["executors"]) is int and type(d["candidates"][0]["executors"]) is int
    assert '"executors": 1,' in json.dumps(d)  # not 1.0


def test_counts_left_out_name_the_range_that_was_asked_for():
    a = advise(executor_counts=[1, 2, 8], min_executors=2, max_executors=4)
    assert "executor_counts 1, 8: left out, as only counts from 2 to 4 (min_executors, max_executors) " \
        "were asked for" in a.warnings
