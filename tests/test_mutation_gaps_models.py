"""The whole-job models at their boundaries (a mutation audit of models/analytical.py and
models/selection.py): each test here failed on a one-operator change that the other tests let
through. The equations' runs are made with formulas written out here, not with the module's own
``fn``, so a change made alike to an equation's fitting columns and its formula is caught; the
cross-validation errors are recomputed here from fits of each fold's own runs.
"""
from __future__ import annotations

import numpy as np
import pytest

from sparkpredict.errors import DegenerateDataError
from sparkpredict.models import analytical as A
from sparkpredict.models import selection as SEL

GIB = float(2**30)
SIZES = np.array([1.0, 2.0, 4.0, 8.0])
EXECS = np.array([1.0, 2.0, 4.0, 8.0, 16.0])

#: each equation written out by hand: (formula(S, E, theta, f), theta, power). The nonlinear
#: parameters lie on the first grid (17 points over their bounds), so noise-free runs give them
#: back exactly and every linear one to rounding.
LAWS = {
    "amdahl": (lambda S, E, t, f: t[0] * f * ((1 - t[1]) / E + t[1]) + t[2], (40.0, 0.1, 20.0), 1),
    "gustafson": (lambda S, E, t, f: t[0] * f / (E + t[1] * (1 - E)) + t[2], (40.0, 0.25, 20.0), 1),
    "ernest": (lambda S, E, t, f: t[0] * S / E + t[1] * np.log(E) + t[2] * E + t[3], (60.0, 8.0, 2.0, 15.0), 1),
    "plate2d": (lambda S, E, t, f: t[0] * f / E + t[1] * S * E ** t[2] + t[3], (50.0, 3.0, 0.5, 20.0), 1),
    "fully_connected": (lambda S, E, t, f: t[0] * f / E + t[1] * S ** t[2] * E * (E - 1) / 2 + t[3],
                        (50.0, 0.2, 0.75, 25.0), 1),
    "fully_connected_c1": (lambda S, E, t, f: t[0] * f / E + t[1] * S * E * (E - 1) / 2 + t[2],
                           (50.0, 0.05, 25.0), 1),
}


def _grid(sizes=SIZES, execs=EXECS):
    S, E = np.meshgrid(sizes, execs)
    return S.ravel(), E.ravel()


def _law_runs(name, power=None, theta=None):
    law, th, pw = LAWS[name]
    pw = pw if power is None else power
    th = th if theta is None else theta
    S, E = _grid()
    return S, E, law(S, E, np.asarray(th, float), S**pw)


# ---- analytical --------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(LAWS))
@pytest.mark.parametrize("power", [1, 2])
def test_each_equation_gives_back_the_parameters_its_runs_were_made_with(name, power):
    S, E, y = _law_runs(name, power)
    fit = A.fit_equation(name, S, E, y, power="auto")
    # ernest has no f(S): its runs are the same at either power, and it reports power 1
    want_power = 1 if name == "ernest" else power
    assert fit.power == want_power
    np.testing.assert_allclose(fit.theta, LAWS[name][1], rtol=1e-6, atol=1e-8)
    assert fit.n == len(y)
    assert fit.sse == pytest.approx(0.0, abs=1e-9 * float(y @ y))
    # and the fitted equation predicts the hand-written formula away from the runs
    Sq, Eq = np.array([0.5, 3.0, 16.0]), np.array([3.0, 32.0, 5.0])
    law, th, _ = LAWS[name]
    np.testing.assert_allclose(fit.predict(Sq, Eq), law(Sq, Eq, np.asarray(th), Sq**want_power), rtol=1e-6)


@pytest.mark.parametrize("name, c", [("plate2d", 0.3), ("fully_connected", 1.3), ("gustafson", 0.37),
                                     ("gustafson", 0.01), ("plate2d", 1.97), ("fully_connected", 0.004)])
def test_a_nonlinear_parameter_off_the_grid_is_found_within_the_final_cell(name, c):
    law, th, _ = LAWS[name]
    th = list(th)
    i = A.EQUATIONS[name].params.index(A.EQUATIONS[name].nonlinear)
    th[i] = c
    S, E = _grid()
    y = law(S, E, np.asarray(th), S)
    fit = A.fit_equation(name, S, E, y, power=1)
    lo, hi = A.EQUATIONS[name].nl_bounds
    step = (hi - lo) / 16 * (2 / 16) ** 3  # the last zoom's grid step (17 points, 3 zooms)
    assert abs(fit.theta[i] - c) <= step
    assert np.max(np.abs(fit.predict(S, E) / y - 1)) < 0.01


def test_sse_is_the_weighted_squared_error_of_the_fitted_curve():
    law, th, _ = LAWS["plate2d"]
    S, E = _grid()
    y = law(S, E, np.asarray(th), S) * (1 + 0.05 * np.sin(np.arange(len(S))))
    w = 1.0 / y**2
    fit = A.fit_equation("plate2d", S, E, y, power=1, weights=w)
    assert fit.sse > 0
    assert fit.sse == pytest.approx(float(np.sum(w * (fit.predict(S, E) - y) ** 2)), rel=1e-9)


def test_a_weight_of_two_is_the_same_as_the_run_twice():
    rng = np.random.default_rng(3)
    A_ = rng.random((12, 3))
    y = A_ @ [1.0, 2.0, 0.5] + 0.1 * rng.standard_normal(12)
    w = np.ones(12)
    w[:4] = 2.0
    x_w, sse_w = A.nnls_small(A_, y, w)
    x_d, sse_d = A.nnls_small(np.vstack([A_, A_[:4]]), np.concatenate([y, y[:4]]))
    np.testing.assert_allclose(x_w, x_d, rtol=1e-9)
    assert sse_w == pytest.approx(sse_d, rel=1e-9)


def test_nnls_does_not_depend_on_the_runtimes_unit():
    # milliseconds or hours: the same coefficients, scaled (the acceptance tolerance is relative)
    rng = np.random.default_rng(4)
    A_ = rng.random((20, 3)) + 0.1
    y = A_ @ [3.0, 0.0, 1.0] + 0.01 * rng.standard_normal(20)
    x, sse = A.nnls_small(A_, y)
    assert np.all(x > 0) or x[1] == 0
    for k in (1e-6, 1e3):
        xk, ssek = A.nnls_small(A_, y * k)
        np.testing.assert_allclose(xk, x * k, rtol=1e-8, atol=1e-12 * k)
        assert ssek == pytest.approx(sse * k * k, rel=1e-8)


def test_a_column_of_zeros_gets_a_zero_coefficient_not_nan():
    A_ = np.column_stack([np.arange(1.0, 7.0), np.zeros(6), np.ones(6)])
    y = 2 * np.arange(1.0, 7.0) + 3
    x, sse = A.nnls_small(A_, y)
    np.testing.assert_allclose(x, [2.0, 0.0, 3.0], atol=1e-9)
    assert sse == pytest.approx(0.0, abs=1e-12)


def test_runs_that_do_not_grow_with_size_keep_power_one_and_amdahl_b_zero():
    # runtime independent of the input: S and S**2 fit equally well (power 1 on a tie), and
    # Amdahl's a = p + q = 0 leaves b = q / a undefined: 0, not NaN
    S, E = _grid()
    y = np.full(len(S), 30.0)
    fit = A.fit_equation("amdahl", S, E, y, power="auto")
    assert fit.power == 1
    assert fit.theta == pytest.approx((0.0, 0.0, 30.0), abs=1e-9)
    assert A.FittedEquation.from_dict(fit.to_dict()) == fit


def test_ernest_has_no_size_power_whatever_is_asked():
    S, E, y = _law_runs("ernest")
    assert A.fit_equation("ernest", S, E, y, power=2).power == 1
    folds = A.fit_equation_folds("ernest", S, E, y, [np.ones(len(y), bool)], power=2)
    assert folds[0].power == 1
    np.testing.assert_allclose(folds[0].theta, LAWS["ernest"][1], rtol=1e-6)


def test_the_fewest_runs_an_equation_is_fitted_to_are_its_parameters_plus_one():
    # amdahl (3 parameters): 4 runs at 2 sizes x 2 counts fit, 3 do not
    law, th, _ = LAWS["amdahl"]
    S, E = _grid(np.array([1.0, 2.0]), np.array([1.0, 2.0]))
    y = law(S, E, np.asarray(th), S)
    fit = A.fit_equation("amdahl", S, E, y, power=1)
    np.testing.assert_allclose(fit.theta, th, rtol=1e-6)
    with pytest.raises(DegenerateDataError, match="3 runs cannot fit 3 parameters"):
        A.fit_equation("amdahl", S[:3], E[:3], y[:3], power=1)
    # the batched fold fits draw the same line: 4 rows fitted, 3 rows None
    masks = [np.ones(4, bool), np.array([True, True, True, False])]
    four, three = A.fit_equation_folds("amdahl", S, E, y, masks, power=1)
    np.testing.assert_allclose(four.theta, th, rtol=1e-6)
    assert four.n == 4 and three is None


def test_two_sizes_and_two_counts_are_enough_one_of_either_is_not():
    S, E, y = _law_runs("amdahl")
    two = np.isin(S, [1.0, 2.0]) & np.isin(E, [1.0, 2.0, 4.0])
    A.fit_equation("amdahl", S[two], E[two], y[two], power=1)
    fits = A.fit_equation_folds("amdahl", S, E, y, [two, two & (S == 1.0), two & (E == 1.0)], power=1)
    assert fits[0] is not None and fits[1] is None and fits[2] is None


@pytest.mark.parametrize("theta", [[1.0, 2.0], [1.0, float("nan"), 2.0], [1.0, float("inf"), 2.0]])
def test_a_saved_equation_with_wrong_parameters_is_refused(theta):
    d = {"name": "amdahl", "power": 1, "theta": theta, "sse": 0.0, "n": 4}
    with pytest.raises(DegenerateDataError, match="refit|parameters"):
        A.FittedEquation.from_dict(d)
    ok = A.FittedEquation.from_dict(dict(d, theta=[1.0, 0.5, 2.0]))
    assert ok.params == {"a": 1.0, "b": 0.5, "c": 2.0}
    with pytest.raises(DegenerateDataError, match="unknown equation"):
        A.FittedEquation.from_dict(dict(d, name="amdahl2"))


def test_check_inputs_alone_wants_two_runs():
    one = np.array([1.0])
    with pytest.raises(DegenerateDataError, match="1 runs cannot fit 1 parameters"):
        A.check_inputs(one, one, one)
    A.check_inputs(np.array([1.0, 2.0]), np.array([1.0, 2.0]), np.array([3.0, 4.0]))


# ---- selection ---------------------------------------------------------------------------

def _F(S, E):
    """Feature columns of runs at sizes S (GiB) and counts E."""
    n = len(S)
    return {"input_bytes": np.asarray(S, float) * GIB, "executors": np.asarray(E, float),
            "executor_cores": np.full(n, 4.0), "executor_memory_mb": np.full(n, 4096.0)}


def _quadratic_runs(sizes=(1.0, 2.0, 4.0), execs=(1.0, 2.0, 4.0), reps=2):
    """Runs Amdahl with f(S) = S cannot follow (a term in S**2): every fold errs, each its own way."""
    S, E = np.meshgrid(np.asarray(sizes), np.asarray(execs))
    S, E = np.repeat(S.ravel(), reps), np.repeat(E.ravel(), reps)
    y = 10 + 20 * S / E + 2 * S * S + 0.3 * np.tile(np.arange(reps), len(S) // reps)
    return _F(S, E), y


def test_folds_are_three_random_thirds_and_the_extreme_levels_of_a_column_with_three():
    F, _ = _quadratic_runs(execs=(1.0, 2.0))  # 3 sizes, 2 counts, 12 runs
    interp, extrap = SEL.folds(F, random_state=0)
    assert len(interp) == 3 and [int(t.sum()) for t in interp] == [4, 4, 4]
    assert np.array_equal(np.sum(interp, axis=0), np.ones(12))  # each run held out once
    # two counts: no executor folds; sizes: the largest level first, then the smallest
    assert [c for _, c in extrap] == ["input_bytes", "input_bytes"]
    S = F["input_bytes"] / GIB
    assert np.array_equal(extrap[0][0], S == 4.0) and np.array_equal(extrap[1][0], S == 1.0)
    # another seed, other thirds
    assert not all(np.array_equal(a, b) for a, b in zip(interp, SEL.folds(F, random_state=1)[0]))
    # fewer than 6 runs: no random thirds (a third would train on 3)
    five = {k: v[:5] for k, v in F.items()}
    assert SEL.folds(five)[0] == [] and len(SEL.folds(_F([1.0] * 6, [1, 2, 3, 1, 2, 3]))[1]) == 2


def test_a_fold_is_fittable_with_four_training_runs_at_two_counts():
    assert SEL._FIT_MIN_RUNS == 4
    F = _F([1, 1, 2, 2, 3], [1, 2, 1, 2, 3])
    assert SEL._fittable(F, np.array([1, 1, 1, 1, 0], bool))
    assert not SEL._fittable(F, np.array([1, 1, 1, 0, 0], bool))
    assert not SEL._fittable(_F([1, 2, 3, 4], [2, 2, 2, 2]), np.ones(4, bool))   # one count
    # fittable_only keeps the folds that train on 4 runs (here every one) ...
    F6 = _F([1, 1, 2, 2, 4, 4], [1, 2, 1, 2, 3, 3])
    every = SEL.folds(F6)[1]
    assert len(every) == 4 and all(int((~t).sum()) == 4 for t, _ in every)
    assert len(SEL.folds(F6, fittable_only=True)[1]) == 4
    # ... and drops those that train on 3 (the largest size, the fewest count: 3 runs each)
    F6 = _F([1, 2, 2, 4, 4, 4], [1, 1, 2, 1, 2, 3])
    kept = SEL.folds(F6, fittable_only=True)[1]
    assert [int((~t).sum()) for t, _ in kept] == [5, 5] and len(SEL.folds(F6)[1]) == 4


def _by_hand(F, y, power):
    """Amdahl's CV errors recomputed from fits of each fold's own runs."""
    S, E = F["input_bytes"] / GIB, F["executors"]
    interp, extrap = SEL.folds(F)

    def pred(t):
        fit = A.fit_equation("amdahl", S[~t], E[~t], y[~t], power=power, weights=1 / y[~t] ** 2)
        return fit.predict(S[t], E[t])

    oof = np.empty(len(y))
    for t in interp:
        oof[t] = pred(t)
    interp_mape = float(np.mean(np.abs(oof - y) / y))
    ex, z = [], {}
    for t, col in extrap:
        v = F[col]
        p = pred(t)
        ex.append(float(np.mean(np.abs(p - y[t]) / y[t])))
        key = col + ("+" if v[t].min() > v[~t].max() else "-")
        d = SEL._distance(v[t], v[~t].min(), v[~t].max())
        z.setdefault(key, []).append(np.log(y[t] / p) / SEL.drift_distance(np.maximum(d, SEL.Z_MIN_DISTANCE)))
    return interp_mape, float(np.mean(ex)), {k: np.sort(np.concatenate(v)) for k, v in z.items()}, oof


def test_the_cross_validation_error_is_each_folds_own_fit_asked_about_its_held_out_runs():
    F, y = _quadratic_runs()
    for power in (1, 2):
        r = SEL.cross_validate("amdahl", F, y, [], power=power)[0]
        interp_mape, extrap_mape, z, oof = _by_hand(F, y, power)
        assert r.interp_mape == pytest.approx(interp_mape, rel=1e-6)
        assert r.extrap_mape == pytest.approx(extrap_mape, rel=1e-6)
        assert r.score == pytest.approx(0.5 * (interp_mape + extrap_mape), rel=1e-6)
        assert sorted(r.ext_z) == sorted(z) == ["executors+", "executors-", "input_bytes+", "input_bytes-"]
        for k in z:
            np.testing.assert_allclose(r.ext_z[k], z[k], rtol=1e-6)
        np.testing.assert_allclose(r.oof_rows, np.log(y / oof), rtol=1e-6)
        np.testing.assert_allclose(np.sort(r.oof_in), np.sort(np.log(y / oof)), rtol=1e-6)
    assert 0.005 < interp_mape < extrap_mape  # errors to compare, not rounding


def test_without_three_levels_of_anything_the_score_is_the_interpolation_error():
    F, y = _quadratic_runs(sizes=(1.0, 4.0), execs=(1.0, 4.0), reps=3)
    r = SEL.cross_validate("amdahl", F, y, [], power=1)[0]
    assert r.interp_mape > 0.005 and np.isnan(r.extrap_mape) and r.ext_z == {}
    assert r.score == r.interp_mape


def test_a_distance_beyond_the_range_is_relative_to_its_nearest_end():
    d = SEL._distance(np.array([1.0, 2.0, 4.0, 6.0, 8.0]), 2.0, 4.0)
    np.testing.assert_allclose(d, [1.0, 0.0, 0.0, 0.5, 1.0])
    dd = SEL.drift_distance(np.array([0.25, 1.0, np.e ** 2 - 0.0]))
    np.testing.assert_allclose(dd, [0.25, 1.0, 3.0])
    np.testing.assert_allclose(SEL.drift_distance(np.array([0.5, 20.0]), "relative"), [0.5, 10.0])


def _cv(score, interp=None, extrap=np.nan):
    return SEL.CVResult(score, score if interp is None else interp, extrap, np.zeros(0), {})


def test_near_equal_keeps_the_equations_within_a_quarter_of_the_best_best_first():
    full = {n: SEL.Component("equation", equation=A.FittedEquation(n, 1, (1.0, 0.0, 1.0), 0.0, 6))
            for n in ("amdahl", "gustafson", "fully_connected_c1", "ernest")}
    res = {"amdahl": _cv(0.125), "gustafson": _cv(0.1), "fully_connected_c1": _cv(0.11),
           "ernest": _cv(0.12501)}
    assert [e.name for e in SEL.near_equal(res, full)] == ["gustafson", "fully_connected_c1", "amdahl"]
    assert [e.name for e in SEL.near_equal(res, full, tolerance=0.0)] == ["gustafson"]
    assert SEL.near_equal({}, full) == []


def test_a_failed_score_ranks_last_and_the_extrapolation_key_falls_back_to_the_score():
    assert SEL._rank(_cv(0.2)) == 0.2
    assert SEL._rank(_cv(np.nan)) == np.inf and SEL._rank(_cv(np.inf)) == np.inf
    assert SEL._extrap_key(_cv(0.3, extrap=0.4)) == 0.4
    assert SEL._extrap_key(_cv(0.3)) == 0.3
    assert np.isnan(SEL._finite(np.inf)) and SEL._finite(0.5) == 0.5


@pytest.mark.parametrize("power", [1, 2])
def test_a_single_equation_takes_the_size_power_its_runs_were_made_with(power):
    S, E = _grid(SIZES, np.array([1.0, 2.0, 4.0, 8.0]))
    law, th, _ = LAWS["amdahl"]
    y = law(S, E, np.asarray(th), S**power)
    sel = SEL.select(_F(S, E), y, [], kind="amdahl")
    assert sel.name == "amdahl" and sel.component.equation.power == power
    np.testing.assert_allclose(sel.component.equation.theta, th, rtol=1e-6)
    assert sel.cv_mape == pytest.approx(0.0, abs=1e-6) and sel.scores == {"amdahl": round(sel.cv.score, 6)}


def test_every_equation_keeps_power_one_on_a_tie():
    # runtimes that depend on neither the size nor the count: no size term enters any fit, and
    # S and S**2 cross-validate exactly alike; S is kept, by a single kind and by auto
    S, E = _grid(SIZES, np.array([1.0, 2.0, 4.0]))
    y = np.full(len(S), 30.0)
    F = _F(S, E)
    for kind in ("amdahl", "gustafson"):
        r1, r2 = (SEL.cross_validate(kind, F, y, [], power=pw)[0].score for pw in (1, 2))
        assert r1 == r2, kind
        assert SEL.select(F, y, [], kind=kind).component.equation.power == 1, kind
    sel = SEL.select(F, y, [])
    assert sel.alternates and all(e.power == 1 for e in sel.alternates)


def test_one_input_size_is_fitted_with_f_of_s_equal_to_s_whatever_power_is_asked():
    S, E, y = _law_runs("amdahl", power=2)
    one = S == 4.0
    for power in (2, "auto"):
        fit = A.fit_equation("amdahl", S[one], E[one], y[one], power=power, allow_single_size=True)
        assert fit.power == 1
        np.testing.assert_allclose(fit.predict(S[one], E[one]), y[one], rtol=1e-6)


def test_no_fittable_fold_gives_none_for_every_fold():
    S, E, y = _law_runs("amdahl")
    masks = [S == 1.0, E == 2.0]
    assert A.fit_equation_folds("amdahl", S, E, y, masks, power=1) == [None, None]


def test_the_equations_are_frozen():
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        A.EQUATIONS["amdahl"].name = "x"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        A.FittedEquation("amdahl", 1, (1.0, 0.0, 1.0), 0.0, 4).power = 2  # type: ignore[misc]


def test_two_input_sizes_are_enough_to_choose_the_size_power():
    S, E, y = _law_runs("amdahl", power=2)
    two = S <= 2.0
    fit = A.fit_equation("amdahl", S[two], E[two], y[two], power="auto")
    assert fit.power == 2
    np.testing.assert_allclose(fit.theta, LAWS["amdahl"][1], rtol=1e-6)


def _each_equations_cv(F, y):
    """Every equation's CV result at the power of f(S) it cross-validates better with (S on a tie)."""
    out = {}
    for name, eq in A.EQUATIONS.items():
        best = None
        for pw in ((1, 2) if eq.uses_power else (None,)):
            fitted = SEL.fit_component(name, F, y, [], power=pw).equation.power
            r = SEL.cross_validate(name, F, y, [], power=fitted)[0]
            if best is None or r.score < best[1].score:
                best = (fitted, r)
        out[name] = best
    return out


def test_auto_scores_every_equation_at_its_better_power_and_builds_on_the_best_extrapolating_one():
    F, y = _quadratic_runs(sizes=(1.0, 2.0, 4.0, 8.0), execs=(1.0, 2.0, 4.0, 8.0))
    sel = SEL.select(F, y, [])
    each = _each_equations_cv(F, y)
    for name, (_, r) in each.items():
        assert sel.scores[name] == round(r.score, 6), name
    backbone = min(each, key=lambda k: (SEL._extrap_key(each[k][1]), k))
    assert {k for k in sel.scores if k.startswith("hybrid")} == {f"hybrid:{backbone}", f"hybrid:{backbone}~fade"}
    # the alternates: the equations within NEAR_EQUAL of the best, best first, at their powers
    best = min(r.score for _, r in each.values())
    near = sorted((r.score, k) for k, (_, r) in each.items() if r.score <= best * (1 + SEL.NEAR_EQUAL))
    assert [(e.name, e.power) for e in sel.alternates] == [(k, each[k][0]) for _, k in near]
    assert 1 <= len(sel.alternates) < len(each)
    # the reported error is the chosen candidates' own: inside the interpolator's, beyond the extrapolator's
    if "|" in sel.name:
        assert sel.cv_mape == pytest.approx(0.5 * (sel.cv.interp_mape + sel.cv.extrap_mape))
        assert sel.scores[sel.name] == round(sel.cv_mape, 6)
    else:
        assert sel.cv_mape == pytest.approx(sel.scores[sel.name], abs=1e-6)


@pytest.mark.parametrize("unit", [10, 20])
@pytest.mark.parametrize("name", ["amdahl", "plate2d", "fully_connected_c1"])
def test_small_inputs_fit_as_well_as_gigabyte_ones(name, unit):
    # S in GiB: a few MB is S ~ 1e-3 (KB: 1e-6) and f(S) = S**2 ~ 1e-6 (1e-12), columns far
    # below the constant's; the fit must not take their small scale for collinearity
    law, th, _ = LAWS[name]
    S, E = _grid()
    S = S * 2.0**-unit  # 1-8 MiB, or KiB
    th = np.asarray(th, float)
    th[0] *= 2.0 ** (2 * unit)  # a: per MiB**2 (KiB**2) as much work as per GiB**2 before
    if name != "amdahl":
        th[1] *= 2.0**unit  # and b per MiB (KiB): the communication term as large as before
    y = law(S, E, th, S**2)
    fit = A.fit_equation(name, S, E, y, power=2)
    np.testing.assert_allclose(fit.predict(S, E), y, rtol=1e-6)
    np.testing.assert_allclose(fit.theta, th, rtol=1e-5)


def test_amdahl_gives_back_its_serial_share_when_a_is_below_one():
    S, E, y = _law_runs("amdahl", theta=(0.5, 0.2, 1.0))
    fit = A.fit_equation("amdahl", S, E, y, power=1)
    np.testing.assert_allclose(fit.theta, (0.5, 0.2, 1.0), rtol=1e-6)


def test_every_parameter_has_the_bounds_docs_models_md_gives_it():
    # the nonlinear ranges of the table in docs/models.md; every other term non-negative
    # (Amdahl's serial share b a fraction)
    table = {"gustafson": ("b", (0, 1)), "plate2d": ("c", (-2, 2)), "fully_connected": ("c", (0, 2))}
    inf = float("inf")
    for eq in A.EQUATIONS.values():
        assert len(eq.bounds) == eq.n_params, eq.name
        nl, rng = table.get(eq.name, (None, None))
        assert eq.nonlinear == nl and eq.nl_bounds == rng, eq.name
        for p, b in zip(eq.params, eq.bounds):
            want = rng if p == nl else ((0, 1) if (eq.name, p) == ("amdahl", "b") else (0, inf))
            assert tuple(b) == want, (eq.name, p)


def test_a_tie_between_the_size_powers_keeps_power_one_when_neither_fits():
    # runtimes that grow with the count and not the size: no size term helps, whatever its
    # power; both powers leave the same error (to rounding), and S is kept
    S, E = _grid()
    y = 30.0 + E
    for name in ("amdahl", "gustafson", "plate2d"):
        a = A.fit_equation(name, S, E, y, power=1)
        b = A.fit_equation(name, S, E, y, power=2)
        assert a.sse > 1 and b.sse == pytest.approx(a.sse, rel=1e-9), name
        assert A.fit_equation(name, S, E, y, power="auto").power == 1, name


def test_a_candidate_equation_is_fitted_for_relative_error():
    # runs an equation cannot follow: the relative-error fit (weights 1/y**2) differs from the
    # plain one, and the candidate is the relative one, at the power the fit chose
    F, y = _quadratic_runs()
    S, E = F["input_bytes"] / GIB, F["executors"]
    comp = SEL.fit_component("amdahl", F, y, [])
    rel = A.fit_equation("amdahl", S, E, y, weights=1 / y**2)
    plain = A.fit_equation("amdahl", S, E, y)
    assert comp.kind == "equation" and not comp.single_size
    assert comp.equation == rel and not np.allclose(rel.theta, plain.theta, rtol=1e-3)
    assert SEL.fit_component("amdahl", F, y, [], power=1).equation.power == 1
    with pytest.raises(DegenerateDataError, match="backbone"):
        SEL.fit_component("hybrid", F, y, [])
    with pytest.raises(DegenerateDataError, match="unknown model kind"):
        SEL.fit_component("amdahl2", F, y, [])


def test_a_fold_no_equation_fits_scores_the_candidate_as_failed_unless_left_out():
    # 9 runs; the three at 2 executors are exactly one random third: the fold that holds them
    # out trains on one count, which no equation fits (the other folds train on both)
    S = np.array([1.0, 2.0, 4.0] * 3)
    interp, _ = SEL.folds(_F(S, np.ones(9)))
    E = np.where(interp[0], 2.0, 1.0)
    F = _F(S, E)
    y = 10 + 20 * S / E + 0.5 * S * S
    assert not SEL._fittable(F, ~interp[0]) and SEL._fittable(F, ~interp[1]) and SEL._fittable(F, ~interp[2])
    r = SEL.cross_validate("amdahl", F, y, [], power=1)[0]
    assert r.interp_mape == np.inf and r.score == np.inf
    assert np.isnan(r.oof_rows[interp[0]]).all() and np.isfinite(r.oof_rows[~interp[0]]).all()
    kept = SEL.cross_validate("amdahl", F, y, [], power=1, fittable_only=True)[0]
    assert np.isfinite(kept.score) and np.isfinite(kept.interp_mape)


def _switch_runs(comm, step, seed):
    S, E = np.meshgrid([1.0, 2.0, 4.0, 8.0], [1.0, 2.0, 4.0, 8.0])
    S, E = np.repeat(S.ravel(), 2), np.repeat(E.ravel(), 2)
    y = 10 + 20 * S / E + comm * S * E + step * (S / E > 3)
    return _F(S, E), y * np.exp(0.03 * np.random.default_rng(seed).standard_normal(len(y)))


def test_a_switch_reports_the_inside_models_interpolation_and_the_outside_ones_extrapolation_error():
    F, y = _switch_runs(0.0, 0.0, 0)
    sel = SEL.select(F, y, [])
    inner, outer = sel.component.parts
    assert sel.component.kind == "switch" and sel.name == f"{inner.name}|{outer.name}"
    assert inner.kind == "hybrid" and outer.kind == "equation", sel.name
    box = sel.component.box
    assert box == {k: (float(F[k].min()), float(F[k].max())) for k in ("input_bytes", "executors")}
    # the inside error is the hybrid's interpolation, the outside one the equation's extrapolation
    hy = SEL.cross_validate("hybrid", F, y, [], backbone=inner.equation.name, power=inner.equation.power,
                            fades=SEL.FADES)[SEL.FADES.index(inner.fade)]
    eq = SEL.cross_validate(outer.name, F, y, [], power=outer.equation.power)[0]
    assert sel.cv.interp_mape == pytest.approx(hy.interp_mape, rel=1e-9)
    assert sel.cv.extrap_mape == pytest.approx(eq.extrap_mape, rel=1e-9)
    assert hy.interp_mape < eq.interp_mape and eq.extrap_mape < hy.extrap_mape
    assert sel.cv_mape == pytest.approx(0.5 * (hy.interp_mape + eq.extrap_mape), rel=1e-9)
    assert sel.scores[sel.name] == round(sel.cv_mape, 6)
    assert sel.scores[outer.name] == round(eq.score, 6)


def test_a_switch_between_two_fades_of_one_hybrid_shares_its_fit():
    F, y = _switch_runs(1.0, 5.0, 1)
    sel = SEL.select(F, y, [])
    inner, outer = sel.component.parts
    assert inner.kind == outer.kind == "hybrid", sel.name
    assert inner.fade != outer.fade and outer.ml is inner.ml and outer.equation is inner.equation
    assert outer.box == inner.box


@pytest.mark.parametrize("sizes", [(8, 12, 16, 20, 24), (8, 24)])
def test_a_single_equation_takes_the_power_its_cross_validation_prefers_not_its_in_sample_fit(sizes):
    # the memory cliff of test_hybrid's job bends its runtimes: plate2d fits S**2 better in
    # sample, S in cross-validation; kind="plate2d" keeps S, as the combined model does (two
    # sizes are enough to choose)
    from test_hybrid import synthetic_job

    from sparkpredict.models.hybrid import JobRuntimeModel

    F, y, extras, _ = JobRuntimeModel()._training_columns(synthetic_job(sizes=sizes))
    assert SEL.fit_component("plate2d", F, y, extras).equation.power == 2
    sel = SEL.select(F, y, extras, kind="plate2d")
    assert sel.component.equation.power == 1
    assert sel.cv_mape == pytest.approx(SEL.cross_validate("plate2d", F, y, extras, power=1)[0].score)
    assert sel.scores == {"plate2d": round(sel.cv_mape, 6)} and sel.alternates == []
