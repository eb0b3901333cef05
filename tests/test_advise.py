"""suggest_executors: the choice per objective, deadline semantics, units, errors, data shape.

The choice logic is checked against a model whose law is known exactly (``LawModel``, written to
the JobRuntimeModel contract), so every expected answer is derived by hand from the law; the
real fitted model is exercised in tests/test_advise_history.py.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from sparkpredict import suggest_executors
from sparkpredict.errors import InputError, UnknownJobError

GB = 10**9


class LawModel:
    """T(S, E) = w * S/GB * ((1 - b)/E + b) + c, interval T*(1 -/+ spread), known exactly."""

    name_ = "law"
    cv_mape_ = 0.03

    def __init__(self, w=60.0, b=0.0, c=30.0, spread=0.1, n_runs=40,
                 sizes=(10 * GB, 100 * GB), execs=(2, 16)):
        self.w, self.b, self.c, self.spread = w, b, c, spread
        self.n_runs_ = n_runs
        self.feature_names_ = ["input_bytes", "executors", "executor_cores", "executor_memory_mb"]
        self.training_range_ = {"input_bytes": sizes, "executors": execs,
                                "executor_cores": (4, 4), "executor_memory_mb": (4096, 4096)}
        self.calls = []

    def runtime(self, s, e):
        return self.w * s / GB * ((1 - self.b) / e + self.b) + self.c

    def predict(self, X):
        return self.runtime(np.asarray(X["input_bytes"], float), np.asarray(X["executors"], float))

    def predict_interval(self, X, confidence=0.9):
        self.calls.append({k: np.asarray(v).copy() for k, v in X.items()})
        t = self.predict(X)
        k = self.spread * confidence / 0.9
        return {"predicted_runtime_s": t, "lower_s": t * (1 - k), "upper_s": t * (1 + k)}


def advise(model=None, **kw):
    model = model or LawModel()
    kw.setdefault("input_bytes", 50 * GB)
    return suggest_executors("etl", models={"etl": model}, **kw)


def test_cost_with_deadline_is_cheapest_count_whose_upper_bound_meets_it():
    # T = 3000/E + 30 at 50 GB; upper = 1.1 T <= 600  <=>  E >= 3000 / (600/1.1 - 30) = 5.82
    a = advise(deadline_s=600)
    assert a.executors == 6
    assert a.meets_deadline is True and a.upper_s <= 600
    five = next(c for c in a.candidates if c.executors == 5)
    assert five.meets_deadline is False and five.upper_s > 600
    assert a.predicted_runtime_s == pytest.approx(3000 / 6 + 30)
    assert a.cost_executor_hours == pytest.approx(6 * (3000 / 6 + 30) / 3600)


def test_higher_confidence_needs_more_executors():
    # spread 0.0556 at 0.5: E >= 3000/(560/1.0556 - 30) = 5.99 -> 6; 0.11 at 0.99: 6.32 -> 7
    assert advise(deadline_s=560, confidence=0.5).executors == 6
    assert advise(deadline_s=560, confidence=0.99).executors == 7


def test_cost_without_deadline_is_cheapest():
    # E*T = 3000 + 30 E grows with E: the cheapest count is the smallest allowed
    assert advise().executors == 1
    assert advise(min_executors=3).executors == 3


def test_unreachable_deadline_says_so_and_gives_the_fastest():
    a = advise(deadline_s=60, max_executors=20)  # even E=20: 1.1*(150+30) = 198 s > 60 s
    assert a.meets_deadline is False
    assert a.executors == 20
    assert any("meets the deadline" in w for w in a.warnings)
    # predicted 198 s against 60 s: no chance to speak of, so it misses rather than may miss
    assert "; misses deadline 1m00s: predicted over it" in a.summary()


class ChanceLawModel(LawModel):
    """LawModel whose chance of meeting a limit peaks at 4 executors (as when larger counts
    are extrapolated and so less certain), although larger counts are predicted faster."""

    def chance_within(self, X, limit_s):
        e = np.asarray(X["executors"], float)
        return 0.6 - 0.05 * np.abs(e - 4)


def test_chance_is_none_without_deadline_or_a_model_that_cannot_say():
    assert all(c.chance_meets_deadline is None for c in advise(deadline_s=600).candidates)
    a = advise(ChanceLawModel())
    assert a.chance_meets_deadline is None and all(c.chance_meets_deadline is None for c in a.candidates)
    assert "chance" not in a.summary()


def test_unreachable_deadline_gives_the_count_most_likely_to_make_it():
    a = advise(ChanceLawModel(), deadline_s=60, max_executors=20)
    assert a.meets_deadline is False
    assert a.executors == 4 and a.chance_meets_deadline == pytest.approx(0.6)
    assert [c.chance_meets_deadline for c in a.candidates[:5]] == pytest.approx([0.45, 0.5, 0.55, 0.6, 0.55])
    # more likely in time than not, but not certified: "may miss", with the chance it needs
    assert ("may miss deadline 1m00s: its 90% upper bound is over it (chance 60%; 'meets' needs 95%, "
            "as 5% of runs end above the 90% interval)") in a.summary()
    # chances tied: the lowest upper bound (the fastest) decides, as without chances
    flat = ChanceLawModel()
    flat.chance_within = lambda X, limit_s: np.full(len(X["executors"]), 0.001)
    assert advise(flat, deadline_s=60, max_executors=20).executors == 20


class FlatLawModel(ChanceLawModel):
    """Executors change nothing (a fitted Amdahl law whose parallel part is 0), as a real fit
    predicts it: 15.367326677178747 s at 1 and 2 executors, one unit in the last place less
    (...745) from 3 on, every upper bound and chance alike."""

    def predict(self, X):
        e = np.asarray(X["executors"], float)
        t = np.full(len(e), 15.367326677178747)
        return np.where(e >= 3, np.nextafter(t, 0.0), t)

    def predict_interval(self, X, confidence=0.9):
        t = self.predict(X)
        return {"predicted_runtime_s": t, "lower_s": t * 0.8, "upper_s": np.full(len(t), 47.822863815577435)}

    def chance_within(self, X, limit_s):
        return np.full(len(X["executors"]), 0.6000280456542969)


def test_a_tie_in_every_figure_shown_gives_the_fewest_executors_not_the_last_bit_of_a_float():
    # Seen live (a groupBy whose 2-executor run was slowed): no count met the 40 s deadline, all
    # shared one chance, one upper bound and, as printed, one runtime, and 3 executors were
    # advised at 3x the cost of 1, the runtime at 3 being one unit in the last place lower
    a = advise(FlatLawModel(), deadline_s=40, max_executors=8)
    assert a.meets_deadline is False
    assert a.executors == 1
    # the same ties with no chance to rank by: the fastest by the upper bound, then the fewest
    flat = FlatLawModel()
    flat.chance_within = lambda X, limit_s: np.full(len(X["executors"]), 0.001)
    assert advise(flat, deadline_s=5, max_executors=8).executors == 1


def test_chance_is_written_as_a_whole_percentage_never_0_or_100():
    from sparkpredict.advise import format_chance

    assert [format_chance(p) for p in (0.0, 0.005, 0.0099, 0.01, 0.5, 0.974, 0.99, 0.991, 1.0)] == \
        ["<1%", "<1%", "<1%", "1%", "50%", "97%", "99%", ">99%", ">99%"]
    # rounded down, so a chance just under a verdict's threshold never shows as the threshold:
    # 49.997 % beside "misses" (under 50 %), 94.96 % beside "'meets' needs 95%"
    assert [format_chance(p) for p in (0.49997, 0.9496, 0.95, 0.29)] == ["49%", "94%", "95%", "29%"]


def test_time_is_fastest_within_budget():
    assert advise(objective="time", max_executors=24).executors == 24
    # budget in executor-hours, held at the requested confidence as the deadline is, by the upper
    # bound 1.1 T: E*1.1*(3000/E + 30)/3600 <= 1.0  <=>  E <= (3600-3300)/33 = 9.09
    assert advise(objective="time", max_executors=200, budget=1.0).executors == 9
    # by the predicted cost (E*(3000/E + 30)/3600 = 0.92 h at E = 10.4) 10 would be given: its
    # upper bound, 1.01 h, is over the budget
    assert advise(objective="time", max_executors=200, budget=0.92).executors == 1
    # a lower confidence narrows the bound: 1.1 -> 1.0556 at 0.5 (spread x 0.5/0.9): E <= 13.7
    assert advise(objective="time", max_executors=200, budget=1.0, confidence=0.5).executors == 13
    # with a price the budget is money: 2 per executor-hour -> 1.5 money = 0.75 h: none fits,
    # and the count likeliest to fit it (the lowest upper bound of cost) is given
    a = advise(objective="time", max_executors=30, budget=1.5, price_per_executor_hour=2.0)
    assert a.executors == 1 and any("no candidate fits the budget 1.5 (in the price's currency)" in w
                                    for w in a.warnings), a.warnings
    assert advise(objective="time", max_executors=30, budget=1.9, price_per_executor_hour=2.0).executors == 3  # 0.95 h: E <= 3.6
    assert a.cost_money == pytest.approx(2.0 * a.cost_executor_hours)


def test_a_budget_given_with_another_objective_is_not_ignored_silently():
    # the cheapest count costs E*(3000/E + 30)/3600 >= 0.84 executor-h: a budget of 0.5 cannot hold
    a = advise(objective="cost", max_executors=8, budget=0.5)
    assert a.executors == 1 and any("over the budget 0.5" in w and "only for objective 'time'" in w
                                    for w in a.warnings)
    assert not any("budget" in w for w in advise(objective="cost", max_executors=8, budget=5.0).warnings)


def test_fastest_treats_runtimes_within_2_percent_as_equal():
    # T = 3000 (0.1/E + 0.9): T(E) <= 1.02 T(20) <=> 0.1/E <= 1.02*0.905 - 0.9 <=> E >= 4.33
    flat = LawModel(b=0.9, c=0.0)
    a = advise(flat, objective="time", max_executors=20)
    assert a.executors == 5
    # but when no count meets the deadline the fastest is given, tolerance or not
    b = advise(flat, deadline_s=1000, max_executors=20)
    assert b.meets_deadline is False and b.executors == 20


def test_time_with_deadline_and_budget():
    # deadline 600 met from E = 6; budget 1.0 h by the upper bound: 1.1 (3000 + 30 E)/3600 <= 1.0
    # <=> E <= 9
    assert advise(objective="time", deadline_s=600, budget=1.0, max_executors=20).executors == 9
    # budget 0.95 h allows E <= 3, none of which meets the deadline: the deadline wins, and of
    # the counts meeting it the one likeliest to fit the budget, 6 (the lowest upper bound of
    # cost, 6 x 1.1 x 530 s = 0.97 h), warned
    a = advise(objective="time", deadline_s=600, budget=0.95, max_executors=20)
    assert a.executors == 6 and a.meets_deadline is True
    said = ("no candidate fits the budget 0.95 executor-h and meets the deadline at 90% confidence; the count meeting "
            "the deadline likeliest to fit it is given: it costs up to 0.97 executor-h by the 90% interval's "
            "upper bound (predicted 0.88 executor-h)")
    assert [w for w in a.warnings if "budget" in w] == [said]
    # without a deadline: the count likeliest to fit it, the cheapest by its upper bound
    b = advise(objective="time", budget=0.5, max_executors=20)
    assert b.executors == 1 and any("the count likeliest to fit it is given" in w for w in b.warnings)


@pytest.mark.parametrize("b,knee", [(0.06, 15), (0.12, 7), (0.3, 2)])
def test_knee_matches_amdahl_closed_form(b, knee):
    # For Amdahl (c=0) the marginal efficiency E -> E' is 1/(1 + b E'/(1-b)), falling with E',
    # so the knee is the smallest E with E+1 > (1-b)/b.
    a = advise(LawModel(b=b, c=0.0), objective="knee", max_executors=64)
    assert a.executors == knee == a.knee_executors


def test_knee_respects_the_deadline():
    m = LawModel(b=0.1, c=0.0)  # knee 9; T(9) = 3000*(0.9/9+0.1) = 600, upper 660
    assert advise(m, objective="knee", max_executors=64, deadline_s=700).executors == 9
    # deadline 500: upper = 1.1*3000*(0.9/E+0.1) <= 500 <=> E >= 2970/170 = 17.5 -> cheapest is 18
    assert advise(m, objective="knee", max_executors=64, deadline_s=500).executors == 18


def test_human_units_and_numbers_agree():
    a = advise(input_bytes="50GB", deadline_s="10m")
    b = advise(input_bytes=50 * GB, deadline_s=600)
    assert (a.executors, a.input_bytes, a.deadline_s) == (b.executors, 50 * GB, 600.0)


def test_candidates_cover_the_range_and_query_carries_the_shape():
    m = LawModel()
    a = advise(m, min_executors=2, max_executors=7, executor_cores=8, executor_memory_mb=2048)
    assert [c.executors for c in a.candidates] == [2, 3, 4, 5, 6, 7]
    X = m.calls[-1]
    assert list(X["executors"]) == [2, 3, 4, 5, 6, 7]
    assert set(X["executor_cores"]) == {8} and set(X["executor_memory_mb"]) == {2048}
    assert set(X["input_bytes"]) == {50 * GB}


def test_default_range_is_twice_the_largest_count_seen_and_shape_from_training():
    m = LawModel(execs=(2, 16))
    a = advise(m)
    assert a.candidates[-1].executors == 32
    assert set(m.calls[-1]["executor_memory_mb"]) == {4096}  # constant in the training data


def test_explicit_executor_counts():
    a = advise(executor_counts=[12, 4, 8, 4], deadline_s=600)
    assert [c.executors for c in a.candidates] == [4, 8, 12]
    assert a.executors == 8
    with pytest.raises(InputError) as e:  # an API-only argument: the fix names it, not a CLI flag
        advise(executor_counts=[4, 0])
    assert "executor_counts" in e.value.fix and "--" not in e.value.fix


def test_extrapolation_is_reported_per_column():
    inside = advise(input_bytes=50 * GB, min_executors=2, max_executors=16)
    assert inside.extrapolates is False
    out = advise(input_bytes=300 * GB, min_executors=2, max_executors=16)
    assert out.extrapolates is True
    assert out.extrapolation["input_bytes"] > 0 and out.extrapolation["executors"] == 0
    assert advise(input_bytes=50 * GB).extrapolation["executors"] > 0  # 1 executor, trained on 2..16
    assert "extrapolates" in out.summary()
    # a hair beyond the largest size (100 GB) is not news: the exact distance stays in the data
    hair = advise(input_bytes=100 * GB + 10**6, min_executors=2, max_executors=16)
    assert hair.extrapolates is False and 0 < hair.extrapolation["input_bytes"] < 1e-4
    assert "extrapolates" not in hair.summary()
    assert advise(input_bytes=101 * GB, min_executors=2, max_executors=16).extrapolates is True


def test_too_few_runs_warns():
    assert any("only 4 runs" in w for w in advise(LawModel(n_runs=4)).warnings)
    assert not any("only" in w for w in advise(LawModel(n_runs=40)).warnings)


def test_advice_is_frozen_json_safe_data():
    a = advise(deadline_s="15m", price_per_executor_hour=0.5)
    with pytest.raises(AttributeError):
        a.executors = 3  # type: ignore[misc]
    d = json.loads(json.dumps(a.to_dict()))
    assert d["executors"] == a.executors
    assert len(d["candidates"]) == len(a.candidates)
    assert d["model_name"] == "law" and d["model_cv_mape"] == pytest.approx(0.03)
    assert d["dynamic_allocation"]["max_executors"] >= d["executors"]
    row = next(c for c in d["candidates"] if c["executors"] == a.executors)
    assert row["cost_money"] == pytest.approx(0.5 * row["cost_executor_hours"])
    df = a.candidates_frame()
    assert int(df.loc[df.chosen, "executors"].iloc[0]) == a.executors
    assert math.isclose(df["predicted_runtime_s"].sum(), sum(c.predicted_runtime_s for c in a.candidates))


def test_dynamic_allocation_bounds():
    # deadline 900: point T = 3000/E + 30 <= 900 from E = 4; upper from E = 4 (1.1*780 = 858)
    a = advise(deadline_s=900, objective="cost", max_executors=40)
    lo, hi = a.dynamic_allocation
    assert lo <= a.executors <= hi
    assert lo == 4


# ---- bad input: one clear error naming the fix ---------------------------------------------------
@pytest.mark.parametrize("kw,needle", [
    ({"input_bytes": "-5GB"}, "must be positive"),
    ({"input_bytes": "lots"}, "as a size"),
    ({"input_bytes": 0}, "must be positive"),
    ({"deadline_s": "soon"}, "as a duration"),
    ({"deadline_s": -3}, "must be positive"),
    ({"min_executors": 8, "max_executors": 4}, "below min_executors"),
    ({"min_executors": 0}, "at least 1"),
    ({"objective": "cheap"}, "unknown objective"),
    ({"confidence": 1.5}, "between 0 and 1"),
    ({"confidence": True}, "between 0 and 1"),
    ({"confidence": "high"}, "between 0 and 1"),
    ({"input_bytes": float("nan")}, "not a finite number"),
    ({"deadline_s": float("inf")}, "not a finite number"),
    ({"price_per_executor_hour": -1}, "positive"),
    # int(True) is 1: a flag where a count or an amount belongs is refused, not read as 1
    ({"executor_cores": True}, "whole number of at least 1, got True"),
    ({"max_executors": True}, "whole number of at least 1, got True"),
    ({"executor_memory_mb": True}, "whole number of MiB, at least 450, got True"),
    ({"price_per_executor_hour": True}, "positive number, got True"),
])
def test_bad_input_names_the_fix(kw, needle):
    m = LawModel()
    with pytest.raises(InputError) as e:
        advise(m, **kw)
    assert needle in e.value.message and e.value.fix
    assert m.calls == []  # rejected before any model was asked


def test_a_numeric_confidence_string_is_read_as_its_number():
    assert advise(confidence="0.8").confidence == advise(confidence=0.8).confidence == 0.8


def test_a_models_dict_holding_something_else_is_named():
    with pytest.raises(InputError, match=r"models\['etl'\] is a str, not a fitted runtime model") as e:
        suggest_executors("etl", "1GB", models={"etl": "models/etl.json"})
    assert "load_models" in e.value.fix
    # a job present but holding None used to read "no job 'etl' ... use one of: etl"
    with pytest.raises(InputError, match=r"models\['etl'\] is a NoneType, not a fitted runtime model"):
        suggest_executors("etl", "1GB", models={"etl": None})


def test_unknown_job_lists_the_known_ones():
    with pytest.raises(UnknownJobError) as e:
        suggest_executors("nope", "1GB", models={"etl": LawModel(), "ml": LawModel()})
    assert "'nope'" in e.value.message and "etl" in e.value.fix and "ml" in e.value.fix


def test_wide_ranges_are_thinned_but_keep_the_ends_and_the_counts_seen():
    a = advise(LawModel(execs=(3, 17)), min_executors=1, max_executors=5000)
    counts = [c.executors for c in a.candidates]
    assert len(counts) <= 256 + 2 and counts == sorted(set(counts))
    assert {1, 3, 17, 5000} <= set(counts)


def test_each_count_is_said_to_meet_to_maybe_miss_or_to_miss_the_deadline():
    """T = 3000/E + 30 s at 50 GB, upper bound 1.1 T, deadline 640 s: E = 6 (T 530, upper 583)
    meets it; E = 5 (T 630, upper 693) is more likely in time than not but not certified; E = 4
    (T 780) is predicted over it. The table says so per row, as the summary does for the choice."""
    from sparkpredict.advice import deadline_verdict
    from sparkpredict.cli.suggest import format_advice

    a = advise(deadline_s=640, min_executors=4, max_executors=6, objective="time")
    verdicts = [deadline_verdict(c.meets_deadline, c.chance_meets_deadline, c.predicted_runtime_s, 640)
                for c in a.candidates]
    assert verdicts == ["misses", "may miss", "meets"]
    rows = [ln.lstrip("> ").split() for ln in format_advice(a).splitlines()
            if ln.strip().lstrip("> ")[:1].isdigit()]
    assert [r[0] for r in rows] == ["4", "5", "6"]
    assert [" ".join(r[6:]) for r in rows] == ["misses", "may miss", "meets"]
    # with a chance, the chance decides: 60 % in time is "may miss" even when predicted over
    assert deadline_verdict(False, 0.6, 700.0, 640.0) == "may miss"
    assert deadline_verdict(False, 0.4, 600.0, 640.0) == "misses"
    assert deadline_verdict(True, 0.97, 600.0, 640.0) == "meets"


# ---- arguments as a Python caller writes them ----------------------------------------------------
@pytest.mark.parametrize("mem,mb", [("4g", 4096), ("4096", 4096), ("512m", 512), ("2GiB", 2048), (4096, 4096)])
def test_executor_memory_takes_spark_sizes_as_the_cli_does(mem, mb):
    from sparkpredict.cli.suggest import executor_memory_mb

    m = LawModel()
    assert advise(m, executor_memory_mb=mem).executor_memory_mb == mb
    assert set(m.calls[-1]["executor_memory_mb"]) == {mb}
    if isinstance(mem, str):  # one parser: the CLI's reading is the API's
        assert executor_memory_mb(mem) == mb


@pytest.mark.parametrize("mem,needle", [("lots", "cannot read executor memory 'lots'"),
                                        ("100m", "executor memory '100m' is too small: under 450 MiB")])
def test_a_bad_executor_memory_string_names_the_argument(mem, needle):
    with pytest.raises(InputError) as e:
        advise(executor_memory_mb=mem)
    assert needle in e.value.message
    assert "executor_memory_mb='4g'" in e.value.fix and "--" not in str(e.value)


@pytest.mark.parametrize("counts", ["2,4,8", " 8, 2 ,4,4", [8, 4, 2], (2.0, 4, 8), np.array([2, 4, 8])])
def test_executor_counts_as_a_list_or_a_comma_separated_string(counts):
    assert [c.executors for c in advise(executor_counts=counts).candidates] == [2, 4, 8]


@pytest.mark.parametrize("counts,needle", [
    ("2,,4", "'2,,4' has an empty item"), ("2,x", "cannot read 'x'"), ("2.5", "cannot read '2.5'"),
    (4, "must list executor counts, got 4"), ([2, True], "got True"), ("0", "at least 1, got 0"),
])
def test_bad_executor_counts_name_the_value_and_the_fix(counts, needle):
    m = LawModel()
    with pytest.raises(InputError) as e:
        advise(m, executor_counts=counts)
    assert needle in e.value.message and "executor_counts" in e.value.message, e.value.message
    assert "executor_counts=[2, 4, 8]" in e.value.fix and "--" not in str(e.value)
    assert "','" not in e.value.message  # a string is not taken apart character by character
    assert m.calls == []


@pytest.mark.parametrize("eff", [2, 1.0001, 0, -0.5, float("nan"), "high", True])
def test_knee_efficiency_outside_0_1_is_refused(eff):
    m = LawModel()
    with pytest.raises(InputError) as e:
        advise(m, objective="knee", knee_efficiency=eff)
    assert "knee_efficiency must be above 0 and at most 1" in e.value.message
    assert "knee_efficiency=0.5" in e.value.fix
    assert m.calls == []


def test_knee_efficiency_of_1_and_small_fractions_are_taken():
    # Amdahl with b=0.1 (c=0): the step E -> E' has efficiency 1/(1 + b E'/(1-b)) = 1/(1 + E'/9),
    # below 1 from the first step (knee 1), below 0.5 past E' = 9 (knee 9), below 0.25 past 27
    m = LawModel(b=0.1, c=0.0)
    assert advise(m, objective="knee", max_executors=64, knee_efficiency=1).knee_executors == 1
    assert advise(m, objective="knee", max_executors=64).knee_executors == 9
    assert advise(m, objective="knee", max_executors=64, knee_efficiency="0.25").knee_executors == 27


# ---- the Advice object -------------------------------------------------------------------------
def test_the_candidates_frame_carries_the_deadline_verdict_to_dict_does():
    from sparkpredict.advice import deadline_verdict

    a = advise(deadline_s=640, min_executors=4, max_executors=6, objective="time")
    df = a.candidates_frame()
    assert list(df["deadline_verdict"]) == ["misses", "may miss", "meets"]
    assert list(df["deadline_verdict"]) == [c["deadline_verdict"] for c in a.to_dict()["candidates"]]
    assert a.candidate_verdicts() == [deadline_verdict(c.meets_deadline, c.chance_meets_deadline,
                                                       c.predicted_runtime_s, 640) for c in a.candidates]
    assert "deadline_verdict" not in advise().candidates_frame().columns  # no deadline, no verdict


def test_the_repr_is_one_short_line_and_the_dataclass_stays():
    import dataclasses

    a = advise(deadline_s=640, max_executors=200)
    r = repr(a)
    assert "\n" not in r and len(r) < 200, r
    assert "Candidate(" not in r and "candidates=200" in r
    assert r.startswith("Advice(job='etl', input='50 GB', executors=6, runtime='~")
    assert "90% interval" in r and "deadline='meets 10m40s'" in r
    assert "deadline=None" in repr(advise())
    # still a dataclass: its fields, equality and replace are unchanged
    assert dataclasses.is_dataclass(a) and "candidates" in {f.name for f in dataclasses.fields(a)}
    assert a == advise(deadline_s=640, max_executors=200)
    assert dataclasses.replace(a, executors=7) != a


def test_a_single_runs_self_check_is_not_called_cross_validation():
    """The replay of a job's only run cannot be cross-validated: its error is the self-check at
    the recorded count (ReplayRuntimeModel._loo_errors), and the text says so."""
    from sparkpredict.advice import self_checked
    from sparkpredict.cli.suggest import format_advice

    replay = LawModel(n_runs=1)
    replay.name_, replay.cv_mape_ = "replay", 0.5
    a = advise(replay)
    assert a.model_cv_mape == 0.5 and self_checked(a.model_name, a.n_runs)
    head = format_advice(a).splitlines()[1]
    assert head == "model replay (replay self-check error 50.0%, 1 run), from the models given", head
    assert "CV MAPE" not in format_advice(a) and a.model_error == "replay self-check error 50.0%"
    # no other runs to disagree with: the "runs the model cannot tell apart" warning is not for it
    assert not any("cross-validated" in w for w in a.warnings)
    assert any(w.startswith("only 1 run of etl in the history") for w in a.warnings)
    # a cross-validated model keeps its name for the number, with two runs of replay too
    two = LawModel(n_runs=2)
    two.name_ = "replay"
    assert format_advice(advise(two)).splitlines()[1] == "model replay (CV MAPE 3.0%, 2 runs), from the models given"
    assert format_advice(advise(LawModel(n_runs=1))).splitlines()[1] == \
        "model law (CV MAPE 3.0%, 1 run), from the models given"


def test_a_missing_model_folder_names_store_from_python(tmp_path):
    with pytest.raises(InputError) as e:
        suggest_executors("sort", "64MB", models=str(tmp_path / "nomodels"))
    assert "no model folder" in e.value.message
    assert "leave out models= and pass store=PATH" in e.value.fix, e.value.fix
    assert "--store" not in e.value.fix and "--models" not in e.value.fix


def test_with_a_budget_the_table_shows_what_each_count_may_cost():
    """The budget is held by the upper bound, and the table showed only the predicted cost: a
    count under the budget there but not chosen read as a mistake."""
    from sparkpredict.advice import candidate_table

    a = advise(objective="time", max_executors=12, budget=1.0)  # E <= 9 by the upper bound, 1.1 T
    cols, rows = candidate_table(a)
    at = cols.index("executor-h at upper bound")
    by_e = {int(r[1]): r for r in rows}
    assert by_e[9][0] == ">" and a.executors == 9
    for c in a.candidates:  # E x upper_s, in executor-hours as the budget is
        assert float(by_e[c.executors][at]) == pytest.approx(c.executors * c.upper_s / 3600, rel=0.01)
    assert float(by_e[9][at]) <= 1.0 < float(by_e[10][at])
    money = advise(objective="time", max_executors=12, budget=2.0, price_per_executor_hour=2.0)
    cols, _ = candidate_table(money)
    assert "cost at upper bound" in cols
    assert not any("upper bound" in c for c in candidate_table(advise(max_executors=12))[0])
