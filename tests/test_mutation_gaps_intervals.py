"""The whole-job model's interval and calibration layer at its boundaries (a mutation audit of
models/intervals.py, calibration.py, job_runs.py and hybrid.py's below-counts hedge and flat-sizes
floor): each test failed on a one-operator change of the rule it pins. Most use a model whose
law is known exactly (an equation with set parameters, set residuals), so every expected value
is derived by hand from the law and the residuals' order statistics.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sparkpredict.models.hybrid import JobRuntimeModel

GIB = float(2**30)


def law_model(theta=(20.0, 0.0, 10.0), name="amdahl", power=1, sizes=(1, 4), counts=(2, 8),
              residuals=None, **saved) -> JobRuntimeModel:
    """A combined model ("auto", every rule of a current fit) whose curve is the equation
    ``name`` with parameters ``theta`` (amdahl: a·S/E·(1-b) + a·S·b + c, S in GiB), trained on
    ``sizes`` GiB and ``counts`` executors, with the in-range residuals ``residuals`` (19 evenly
    spaced in ±0.1 by default) and no drift; ``saved`` overrides any other saved field."""
    resid = list(np.linspace(-0.1, 0.1, 19)) if residuals is None else list(residuals)
    d = {"format": "sparkpredict-job-model", "version": 1, "kind": "auto", "random_state": 0, "name": name,
         "cv_mape": 0.05, "n_runs": len(resid), "dropped_runs": 0,
         "feature_names": ["input_bytes", "executors", "executor_cores", "executor_memory_mb"], "extras": [],
         "training_range": {"input_bytes": [sizes[0] * GIB, sizes[1] * GIB], "executors": [float(c) for c in counts]},
         "defaults": {}, "latest": {}, "candidates": {name: 0.05}, "residuals": resid, "extrap_z": {},
         "drift_law": "linear_log", "size_growth": "linear_pooled", "unvaried": {},
         "unrecorded": ["executor_cores", "executor_memory_mb"], "seen_residuals": None,
         "size_levels": [s * GIB for s in sizes], "executor_levels": [float(c) for c in counts],
         "slow_runs": [], "executor_alternates": [], "below_counts": "perfect_scaling",
         "below_counts_prediction": "weak_scaling", "flat_sizes": "linear", "recent_shift": None,
         "component": {"kind": "equation", "equation": {"name": name, "power": power, "theta": list(theta),
                                                        "sse": 0.0, "n": len(resid)},
                       "ml": None, "ml_target": "runtime", "single_size": False, "fade": None, "box": None}}
    d.update(saved)
    return JobRuntimeModel.from_dict(d)


def q(sizes, counts) -> dict[str, np.ndarray]:
    s, e = np.broadcast_arrays(np.asarray(sizes, float), np.asarray(counts, float))
    return {"input_bytes": s * GIB, "executors": e}


# ---- flat sizes (hybrid.FLAT_SIZES, flat_beyond_sizes) -------------------------------------

def test_flat_tolerance_is_one_percent_of_the_largest_sizes_runtime():
    # 10 + a·S/2 at 2 executors: at 8 GiB (2x the largest, 4 GiB) 10.21224 s against 10.10612 s
    # at 4 GiB, 1.0105x: just beyond 1 %, so not flat, and its interval is the one of a model
    # without the rule; 10 + 0.04·S/2 is 1.0079x there, flat, and its upper bound twice 4 GiB's
    m = law_model(theta=(0.05306, 0.0, 10.0))
    X = q([8.0], [2.0])
    assert m.flat_beyond_sizes(X).tolist() == [False]
    assert m.flat_beyond_sizes(X, tolerance=0.011).tolist() == [True]
    iv, plain = m.predict_interval(X, 0.9), law_model(theta=(0.05306, 0.0, 10.0), flat_sizes="none").predict_interval(X, 0.9)
    np.testing.assert_array_equal(iv["upper_s"], plain["upper_s"])
    flat = law_model(theta=(0.04, 0.0, 10.0))
    iv = flat.predict_interval(q([8.0, 4.0], [2.0, 2.0]), 0.9)
    assert flat.flat_beyond_sizes(q([8.0], [2.0])).tolist() == [True]
    assert iv["upper_s"][0] == pytest.approx(2 * iv["upper_s"][1], rel=1e-12)


def test_flat_within_tolerance_includes_equality():
    # a curve with no size term at all: the prediction at 10x the largest size equals its own
    m = law_model(theta=(0.0, 0.0, 10.0))
    assert m.flat_beyond_sizes(q([40.0, 40.0], [2.0, 8.0]), tolerance=0.0).tolist() == [True, True]


def test_flat_reads_the_models_own_growth_linear_for_the_pooled_rule():
    # 10 + 0.0025·S²/E: at 8 executors the curve grows 10.005 s -> 10.5 s from 4 to 40 GiB; held
    # to linear growth from 4 GiB (what the pooled rule starts from) 10.05 s, within 1 %: flat.
    # A model saved with the curve's free growth reads the curve itself: not flat.
    X = q([40.0, 40.0], [2.0, 8.0])
    pooled = law_model(theta=(0.0025, 0.0, 10.0), power=2)
    assert pooled.flat_beyond_sizes(X).tolist() == [False, True]
    free = law_model(theta=(0.0025, 0.0, 10.0), power=2, size_growth="free")
    assert free.flat_beyond_sizes(X).tolist() == [False, False]


def _exact_runs(sizes=(1, 2, 4), counts=(2, 4, 8), law=lambda S, E: 10 + 20 * S / E) -> pd.DataFrame:
    return pd.DataFrame([{"input_bytes": S * GIB, "executors": float(E), "runtime_s": float(law(S, E))}
                         for S in sizes for E in counts])


def test_a_single_kind_keeps_none_of_the_combined_models_rules():
    m = JobRuntimeModel(kind="amdahl").fit(_exact_runs())
    assert (m.below_counts_, m.below_counts_prediction_, m.flat_sizes_) == ("none", "none", "none")
    assert m.to_dict()["flat_sizes"] == "none"


# ---- calibration: the folds that leave whole sizes out --------------------------------------

def test_size_group_folds_each_level_alone_up_to_ten_then_round_robin():
    from sparkpredict.models.calibration import size_group_folds

    def folds(levels):
        sizes = np.repeat(np.asarray(levels, float), 2)[::-1]  # repeats, out of order
        return sizes, [sorted(set(sizes[t].tolist())) for t in size_group_folds({"input_bytes": sizes})]

    assert folds([1.0, 2.0])[1] == []
    assert folds([1.0, 2.0, 3.0])[1] == [[1.0], [2.0], [3.0]]
    assert folds(range(1, 11))[1] == [[float(v)] for v in range(1, 11)]
    # 12 levels: 10 groups, the sorted levels dealt round-robin (1 and 11, 2 and 12 together)
    assert folds(range(1, 13))[1] == [[1.0, 11.0], [2.0, 12.0]] + [[float(v)] for v in range(3, 11)]


# ---- intervals: the conformal quantiles ------------------------------------------------------

R19 = np.round(np.linspace(-0.9, 0.9, 19), 12)  # 19 residuals, -0.9 .. 0.9 in steps of 0.1


def test_conformal_bounds_are_the_finite_sample_order_statistics():
    from sparkpredict.models.intervals import conformal_bounds

    # n = 19: at c the ceil(20·(1+c)/2)-th smallest above, the floor(20·(1-c)/2)-th below
    assert conformal_bounds(R19, 0.5) == pytest.approx((-0.5, 0.5), abs=1e-12)  # 15th and 5th
    assert conformal_bounds(R19, 0.9) == pytest.approx((-0.9, 0.9), abs=1e-12)  # 19th and 1st
    assert conformal_bounds(R19, 0.0) == (0.0, 0.0)
    # beyond (n-1)/(n+1) the extreme residuals, no index past either end
    assert conformal_bounds(R19, 0.999) == pytest.approx((-0.9, 0.9), abs=1e-12)
    lo, hi = conformal_bounds(R19, np.array([0.5, 0.9]))
    np.testing.assert_allclose(lo, [-0.5, -0.9], atol=1e-12)
    np.testing.assert_allclose(hi, [0.5, 0.9], atol=1e-12)
    # contain: each bound clipped to hold the prediction; without, the quantiles as they are
    assert conformal_bounds(R19 + 1, 0.5) == pytest.approx((0.0, 1.5), abs=1e-12)
    assert conformal_bounds(R19 + 1, 0.5, contain=False) == pytest.approx((0.5, 1.5), abs=1e-12)
    assert conformal_bounds(R19 - 1, 0.5) == pytest.approx((-1.5, 0.0), abs=1e-12)
    assert conformal_bounds(R19 - 1, 0.5, contain=False) == pytest.approx((-1.5, -0.5), abs=1e-12)
    # no residuals: unbounded, one pair per confidence asked
    assert conformal_bounds(np.zeros(0), 0.5) == (-np.inf, np.inf)
    lo, hi = conformal_bounds(np.zeros(0), np.array([0.5, 0.9]))
    assert lo.tolist() == [-np.inf, -np.inf] and hi.tolist() == [np.inf, np.inf]


def test_the_in_range_residuals_are_each_size_predicted_by_a_fit_without_it():
    from sparkpredict.models import analytical as A

    # amdahl cannot follow the S² term: each size left out is missed by its own amount
    law = lambda S, E: 10 + 20 * S / E + 0.5 * S * S
    runs = _exact_runs(sizes=(1, 2, 4, 8), law=law)
    m = JobRuntimeModel(kind="amdahl").fit(runs)
    S, E, y = runs["input_bytes"].to_numpy() / GIB, runs["executors"].to_numpy(), runs["runtime_s"].to_numpy()
    want = []
    for s in (1, 2, 4, 8):
        t = S == s
        eq = A.fit_equation("amdahl", S[~t], E[~t], y[~t], power=m.component_.equation.power, weights=1 / y[~t] ** 2)
        want += list(np.log(y[t] / eq.predict(S[t], E[t])))
    np.testing.assert_allclose(m.residuals_, np.sort(want), rtol=1e-6, atol=1e-9)
    # at a recorded size the random folds' residuals: another set, kept beside them
    assert m.seen_residuals_ is not None and len(m.seen_residuals_) == len(runs)
    assert not np.allclose(m.seen_residuals_, m.residuals_)
    # two sizes cannot leave one out and keep a size term: the random folds' alone
    two = JobRuntimeModel(kind="amdahl").fit(runs[runs["input_bytes"] <= 2 * GIB])
    assert two.seen_residuals_ is None and len(two.residuals_) == 6


R9 = np.round(np.linspace(-0.09, 0.09, 19), 12)  # 19 residuals, -0.09 .. 0.09 in steps of 0.01


def _log_bounds(m, X, c=0.9):
    iv = m.predict_interval(X, c)
    p = iv["predicted_runtime_s"]
    return np.log(iv["lower_s"] / p), np.log(iv["upper_s"] / p)


def test_a_recorded_size_within_one_percent_takes_the_random_folds_bounds_never_wider():
    # the random folds' residuals run -0.2 .. 0.02: the upper bound theirs at a recorded size
    # (2 GiB, or within 1 % of it), the lower bound the unseen sizes' -0.09 (never wider)
    seen = np.round(np.linspace(-0.2, 0.02, 19), 12)
    m = law_model(residuals=R9, seen_residuals=list(seen), size_levels=[s * GIB for s in (1, 2, 4)])
    X = q([2.0, 2 * 1.0099, 2 * 0.9901, 2 * 1.0101, 3.0], 4.0)
    assert m.at_seen_size(X).tolist() == [True, True, True, False, False]
    lo, hi = _log_bounds(m, X)
    np.testing.assert_allclose(lo, -0.09, atol=1e-12)
    np.testing.assert_allclose(hi, [0.02, 0.02, 0.02, 0.09, 0.09], atol=1e-12)
    # a model saved before the random folds' residuals were kept: every size unseen
    old = law_model(residuals=R9, size_levels=[s * GIB for s in (1, 2, 4)])
    assert not old.at_seen_size(X).any()
    np.testing.assert_allclose(_log_bounds(old, X)[1], 0.09, atol=1e-12)


def test_chance_within_reads_the_residuals_quantiles_inside_the_range():
    # 20 s predicted; the upper bound passes +0.0451 from c = 0.4 (the 15th of 19 residuals,
    # 0.05), the lower bound -0.0451 likewise: 70 % and 30 %; past every residual the chance
    # stops at 19/20 and 1/20 (19 errors), and the prediction itself is an even chance
    m = law_model(residuals=R9)
    X = q([2.0], [4.0])
    p = float(m.predict(X)[0])
    assert p == pytest.approx(20.0)
    got = [float(m.chance_within(X, p * np.exp(x))[0]) for x in (0.0451, -0.0451, 0.2, -0.2, 0.0)]
    np.testing.assert_allclose(got, [0.7, 0.3, 0.95, 0.05, 0.5], atol=2e-4)


# ---- job_runs: what the training runs say apart from the fit ---------------------------------

def test_slow_runs_largest_ratio_first_without_unscored_runs_at_most_fifty():
    from sparkpredict.models.job_runs import SLOW_RUNS_KEPT, slow_runs

    runs = {"run_id": np.array([f"r{i}" for i in range(60)])}
    oof = np.log(np.linspace(0.5, 2.0, 60))
    oof[59] = np.nan  # a run its fold could not score
    rows = np.arange(60)[::-1]  # the fit's row order: row j is run 59 - j
    got = slow_runs(runs, rows, oof)
    assert SLOW_RUNS_KEPT == 50 and len(got) == 50
    ids = [r for r, _ in got]
    assert ids[0] == "r1" and "r0" not in ids  # row 58 (ratio ~1.97) first; row 59 unscored
    ratios = [x for _, x in got]
    assert ratios == sorted(ratios, reverse=True) and ratios[0] == pytest.approx(np.linspace(0.5, 2.0, 60)[58])
    assert slow_runs({"input_bytes": np.ones(60)}, rows, oof) == []
    assert slow_runs(runs, rows, None) == []


def test_fitted_rows_keep_positive_finite_runs_up_to_the_executor_limit():
    from sparkpredict.models.job_runs import fitted_rows
    from sparkpredict.units import MAX_EXECUTORS

    # a 1-byte input, one executor and a sub-second run are runs; 0, negative, NaN, inf are not
    runs = {"input_bytes": np.array([1.0, GIB, 0.0, 1.0, 1.0, 1.0, np.nan, 1.0]),
            "executors": np.array([MAX_EXECUTORS, 1.0, 2.0, MAX_EXECUTORS + 1, 0.0, 2.0, 2.0, 2.0]),
            "runtime_s": np.array([5.0, 0.5, 5.0, 5.0, 5.0, 0.0, 5.0, np.inf])}
    assert fitted_rows(runs).tolist() == [True, True, False, False, False, False, False, False]


def test_design_matrix_columns():
    from sparkpredict.models.job_runs import DESIGN, design_matrix

    F = {"input_bytes": np.array([2 * GIB]), "executors": np.array([4.0]), "executor_cores": np.array([2.0]),
         "executor_memory_mb": np.array([1024.0]), "p": np.array([7.0])}
    # GiB, E, cores, MiB, GiB per executor, per core, bytes per byte of executor memory, extras
    assert len(DESIGN) == 7
    np.testing.assert_allclose(design_matrix(F, ["p"])[0], [2, 4, 2, 1024, 0.5, 0.25, 0.5, 7])


def test_unvaried_resources_and_latest_values():
    from sparkpredict.models.job_runs import latest_run_values, unvaried_resources

    runs = pd.DataFrame({"executor_cores": [4.0, 4.0, 4.0, 9.0], "executor_memory_mb": [1024.0, 2048.0, 0.0, 512.0],
                         "start_ms": [3.0, 1.0, 2.0, np.nan], "p": [0.0, 5.0, 6.0, 1.0]})
    rows = np.array([0, 1, 2])  # the last run was dropped by the fit
    ranges = {"executor_cores": (4.0, 4.0), "executor_memory_mb": (1024.0, 2048.0)}
    assert unvaried_resources(runs, rows, ranges) == {"executor_cores": 4.0}
    # a column no run recorded (0 or missing everywhere) is no value to scale from
    assert unvaried_resources(runs.assign(executor_memory_mb=0.0), rows,
                              dict(ranges, executor_memory_mb=(1.0, 1.0))) == {"executor_cores": 4.0}
    assert unvaried_resources(runs.drop(columns="executor_cores"), rows, ranges) == {}
    # the latest run by start_ms that has the column; a resource of 0 is none, a parameter's 0 a value
    latest = latest_run_values(runs, rows, ("executor_cores", "executor_memory_mb", "p", "absent"))
    assert latest == {"executor_cores": 4.0, "executor_memory_mb": 1024.0, "p": 0.0}
    assert latest_run_values(runs.assign(executor_memory_mb=[0.0, 2048.0, 0.0, 1.0]), rows,
                             ("executor_memory_mb",)) == {"executor_memory_mb": 2048.0}
    assert latest_run_values(runs.drop(columns="start_ms"), rows, ("p",)) == {}


def test_chance_within_of_a_sub_second_prediction():
    # 0.1 + 0.2·S/E: 0.2 s; the same residuals, the same chances as at 20 s
    m = law_model(theta=(0.2, 0.0, 0.1), residuals=R9)
    X = q([2.0], [4.0])
    p = float(m.predict(X)[0])
    assert p == pytest.approx(0.2)
    got = [float(m.chance_within(X, p * np.exp(x))[0]) for x in (0.0451, -0.0451)]
    np.testing.assert_allclose(got, [0.7, 0.3], atol=2e-4)


def test_beyond_the_counts_a_slower_near_equal_equation_widens_the_upper_bound_by_its_share():
    # the model: 10 + 20·S/E, 12.5 s at 2 GiB on 16 executors (twice the most, 8: 15 s); a
    # near-equal amdahl with half the work serial speeds 8 -> 16 up only 32.5 s -> 31.25 s, so
    # 15 s x 31.25/32.5 = 14.42 s there: at 90 % the upper bound takes 0.9 of that gap over the
    # drift's (0.09 in range + 1 x 0.09 at distance 1), the lower bound none of it
    alt = {"name": "amdahl", "power": 1, "theta": [20.0, 0.5, 10.0], "sse": 0.0, "n": 19}
    m = law_model(residuals=R9, executor_alternates=[alt])
    lo, hi = _log_bounds(m, q([2.0, 2.0], [16.0, 4.0]))
    gap = np.log(15 * (31.25 / 32.5) / 12.5)
    np.testing.assert_allclose(lo, [-0.18, -0.09], atol=1e-9)
    np.testing.assert_allclose(hi, [0.18 + 0.9 * gap, 0.09], atol=1e-9)


def _cores_model(**saved) -> JobRuntimeModel:
    """Every run on 4 cores per executor (``unvaried_``), memory per executor not recorded."""
    return law_model(residuals=R9, unvaried={"executor_cores": 4.0}, unrecorded=["executor_memory_mb"],
                     training_range={"input_bytes": [GIB, 4 * GIB], "executors": [2.0, 8.0],
                                     "executor_cores": [4.0, 4.0]},
                     defaults={"executor_cores": 4.0}, **saved)


def test_fewer_cores_than_every_run_had_may_slow_the_run_by_the_ratio_never_speed_it_up():
    m = _cores_model()
    X = dict(q([2.0] * 3, [4.0] * 3), executor_cores=np.array([4.0, 2.0, 1.0]))
    lo, hi = _log_bounds(m, X)
    np.testing.assert_allclose(m.predict(X), 20.0)
    # the lower bound stays the 4 cores' (no faster from fewer), the upper one 2x and 4x theirs
    np.testing.assert_allclose(lo, -0.09, atol=1e-12)
    np.testing.assert_allclose(hi, 0.09 + np.log([1.0, 2.0, 4.0]), atol=1e-12)


def test_beyond_the_largest_size_the_lower_bound_is_the_largest_sizes_as_an_unrecorded_size():
    # a drift down to -1 per unit distance would put 8 GiB's lower bound far under 4 GiB's;
    # the floor holds it at 4 GiB's runtime (50 s at 2 executors) times its unseen-size lower
    # bound, e^-0.09, not its recorded-size one (the random folds' ±0.02)
    m = law_model(residuals=R9, extrap_z={"input_bytes+": list(np.linspace(-1.0, 0.0, 19))},
                  seen_residuals=list(np.round(np.linspace(-0.02, 0.02, 19), 12)))
    iv = m.predict_interval(q([8.0, 4.0], [2.0, 2.0]), 0.9)
    np.testing.assert_allclose(iv["predicted_runtime_s"], [90.0, 50.0])
    np.testing.assert_allclose(iv["lower_s"], [50 * np.exp(-0.09), 50 * np.exp(-0.02)], rtol=1e-9)


def test_a_directions_own_drift_from_ten_folds_on_else_the_pooled_drift():
    # the folds beyond the largest size erred +0.5 per unit distance, those beyond the most
    # executors 0: pooled (410 errors) the upper quantile is 0. From 10 errors of its own, a row
    # beyond the sizes takes theirs, 0.09 + 1 x 0.5 at 8 GiB (distance 1) - also one beyond
    # both, whose farthest column is the counts (32 executors, distance 3); from 9, the pooled 0
    X = q([8.0, 8.0, 2.0], [4.0, 32.0, 32.0])
    for n, want in ((10, [0.59, 0.59, 0.09]), (9, [0.09, 0.09, 0.09])):
        m = law_model(residuals=R9, extrap_z={"input_bytes+": [0.5] * n, "executors+": [0.0] * 400})
        lo, hi = _log_bounds(m, X)
        np.testing.assert_allclose(hi, want, atol=1e-9)
        np.testing.assert_allclose(lo, -0.09, atol=1e-9)


def test_a_directions_own_lower_drift_where_wider_than_the_pooled():
    # below the smallest size its folds erred -0.5 per unit distance, pooled the lower quantile
    # is 0: at 0.5 GiB (distance 1) the lower bound is -0.09 - 0.5; beyond the counts farther
    # (32 executors) the counts' folds', 0
    m = law_model(residuals=R9, extrap_z={"input_bytes-": [-0.5] * 10, "executors+": [0.0] * 400})
    lo, hi = _log_bounds(m, q([0.5, 0.5], [4.0, 32.0]))
    np.testing.assert_allclose(lo, [-0.59, -0.09], atol=1e-9)
    np.testing.assert_allclose(hi, 0.09, atol=1e-9)


def test_a_limit_equal_to_the_lower_bound_is_reached_by_it():
    # the 5th of 19 residuals is log(1/2) exactly: 10 s against 20 s predicted is reached by the
    # lower bound from c = 0.4 on, 30 %; a limit just below it only from c = 0.5, 25 %
    res = np.sort(np.concatenate([np.linspace(-1.0, -0.75, 4), [np.log(0.5)], np.linspace(-0.5, 0.5, 14)]))
    m = law_model(residuals=res)
    X = q([2.0], [4.0])
    assert float(m.predict(X)[0]) == 20.0
    assert float(m.chance_within(X, 10.0)[0]) == pytest.approx(0.3, abs=2e-4)
    assert float(m.chance_within(X, 10.0 / 1.0001)[0]) == pytest.approx(0.25, abs=2e-4)


def test_far_beyond_the_sizes_a_drift_above_the_prediction_grows_by_the_upper_bounds_law():
    # every fold beyond the largest size erred +0.2 per unit distance; at 16 GiB (distance 3)
    # that drift grows by 1 + log 3 (the upper bound's law, not the lower's d = 3), in the
    # unclipped lower bounds too: their middle is 0.2·(1 + log 3) = 0.42 above the prediction,
    # so a limit e^0.4 above it is read from their lower half, 45 % (the 8th residual, -0.02,
    # from c = 0.1); e^0.45 above it lies past that middle, read from the upper bounds: 65 %
    m = law_model(residuals=R9, extrap_z={"input_bytes+": [0.2] * 19})
    X = q([16.0], [4.0])
    p = float(m.predict(X)[0])
    got = [float(m.chance_within(X, p * np.exp(t))[0]) for t in (0.4, 0.45)]
    np.testing.assert_allclose(got, [0.45, 0.65], atol=2e-4)



def test_the_lower_order_statistic_is_not_lost_to_float_rounding():
    # 39 errors at 90 %: the 2nd smallest and the 38th (40 x 0.05 = 2, 40 x 0.95 = 38), as
    # symmetric as the errors; (1 - 0.9)/2 x 40 came out 1.9999999999999996 and took the 1st
    from sparkpredict.models.intervals import conformal_bounds

    r = np.arange(39.0) - 19
    assert conformal_bounds(r, 0.9, contain=False) == (-18.0, 18.0)
    assert conformal_bounds(R19, 0.8) == pytest.approx((-0.8, 0.8), abs=1e-12)  # 20 x 0.1: the 2nd
    lo, hi = conformal_bounds(r, np.array([0.9, 0.8]), contain=False)
    assert lo.tolist() == [-18.0, -16.0] and hi.tolist() == [18.0, 16.0]  # 80 %: the 4th and 36th
