"""How the default fit chooses a model (a third mutation audit of models/selection.py, after
test_mutation_gaps_models.py and test_mutation_gaps_selection.py): the drift per unit distance
of the extrapolation folds at distances other than 1, the interpolation error measured on the
curve rather than the capped prediction, the second try without unfittable folds, ``hybrid``'s
choice between its fades, the size powers ``auto`` tries, and the batched fits it shares. Each
test failed on a one-operator change the other tests let through. Runs are made from known
formulas; expected values are recomputed here from fits of each fold's own runs.
"""
from __future__ import annotations

import numpy as np
import pytest
from test_mutation_gaps_models import _F, _by_hand, _quadratic_runs

from sparkpredict.models import analytical as A
from sparkpredict.models import selection as SEL

GIB = float(2**30)


@pytest.mark.parametrize("sizes, d_plus", [
    ((1.0, 2.0, 3.0), 0.5),                  # the largest size 50 % beyond the others
    ((1.0, 2.0, 6.0), 1.0 + np.log(2.0)),    # 200 % beyond: 1 + log d (DRIFT_LAW linear_log)
    ((1.0, 2.0, 2.2), 0.25),   # 10 % beyond: counted as 25 % away (docs/models.md)
])
def test_the_extrapolation_drift_is_the_log_error_divided_by_the_distance_law(sizes, d_plus):
    F, y = _quadratic_runs(sizes=sizes)
    r = SEL.cross_validate("amdahl", F, y, [], power=1)[0]
    _, extrap_mape, z, _ = _by_hand(F, y, 1)
    assert r.extrap_mape == pytest.approx(extrap_mape, rel=1e-6)
    for k in z:
        np.testing.assert_allclose(r.ext_z[k], z[k], rtol=1e-6)
    # the largest size's fold: its log error over the distance law at d, not times it
    S = F["input_bytes"] / GIB
    t = S == max(sizes)
    fit = A.fit_equation("amdahl", S[~t], F["executors"][~t], y[~t], power=1, weights=1 / y[~t] ** 2)
    want = np.sort(np.log(y[t] / fit.predict(S[t], F["executors"][t])) / d_plus)
    np.testing.assert_allclose(r.ext_z["input_bytes+"], want, rtol=1e-6)
    assert np.abs(want).min() > 0.01


def test_the_interpolation_error_is_the_curves_even_where_the_fitted_model_caps_it():
    # one run at 8 GiB, the rest at 1-4 GiB: the random third holding it out predicts beyond
    # the sizes, where the fitted model caps the growth; the score stays the curve's
    S, E = np.meshgrid([1.0, 2.0, 4.0], [1.0, 2.0, 4.0])
    S, E = np.r_[np.repeat(S.ravel(), 2), 8.0], np.r_[np.repeat(E.ravel(), 2), 2.0]
    F, y = _F(S, E), 10 + 20 * S / E + 3 * S * S
    free = SEL.cross_validate("amdahl", F, y, [], power=2)[0]
    capped = SEL.cross_validate("amdahl", F, y, [], power=2, size_growth="linear_pooled")[0]
    assert capped.interp_mape == free.interp_mape and capped.score == free.score
    np.testing.assert_array_equal(capped.oof_rows, free.oof_rows)
    # while the drift beyond the sizes is measured on the capped prediction (DRIFT_OF)
    assert abs(capped.ext_z["input_bytes+"][0] - free.ext_z["input_bytes+"][0]) > 0.1


def test_select_retries_without_the_unfittable_folds_and_chooses_on_the_others():
    # a random third trains on one count: every candidate fails it, so the first try scores none
    S = np.array([1.0, 2.0, 4.0] * 3)
    interp, _ = SEL.folds(_F(S, np.ones(9)))
    F = _F(S, np.where(interp[0], 2.0, 1.0))
    y = 10 + 20 * S / F["executors"] + 0.5 * S * S
    assert not np.isfinite(SEL.cross_validate("amdahl", F, y, [], power=1)[0].score)
    sel = SEL.select(F, y, [])
    again = SEL.select(F, y, [], fittable_only=True)
    assert sel.name == again.name and np.isfinite(sel.cv_mape)
    assert sel.cv_mape == pytest.approx(again.cv_mape, rel=1e-12) and sel.scores == again.scores


def test_kind_hybrid_takes_the_fade_with_the_better_score_not_the_better_interpolation():
    S, E = np.meshgrid([1.0, 2.0, 4.0, 8.0], [1.0, 2.0, 4.0, 8.0])
    S, E = S.ravel(), E.ravel()
    y = 10 + 20 * S / E * (1 + 0.2 * np.sin(S * E))  # a correction that does not carry beyond
    sel = SEL.select(_F(S, E), y, [], kind="hybrid")
    hy = {k: v for k, v in sel.scores.items() if k.startswith("hybrid")}
    assert len(hy) == 2 and len(set(hy.values())) == 2
    best = min(hy, key=hy.get)
    assert best.endswith("~fade")  # here the fade extrapolates better; inside the box they tie
    assert sel.name == best and sel.cv_mape == pytest.approx(hy[best], abs=1e-6)
    assert sel.component.kind == "hybrid" and sel.component.fade == 0.25


def test_auto_picks_the_square_of_the_size_when_the_runs_grow_with_it():
    S, E = np.meshgrid([1.0, 2.0, 4.0, 8.0], [1.0, 2.0, 4.0, 8.0])
    S, E = S.ravel(), E.ravel()
    y = 5 * S * S * (0.9 / E + 0.1) + 10   # Amdahl with f(S) = S**2, no noise
    sel = SEL.select(_F(S, E), y, [])
    assert sel.name == "amdahl" and sel.component.equation.power == 2
    assert sel.component.equation.theta == pytest.approx((5.0, 0.1, 10.0), rel=1e-3)


@pytest.mark.parametrize("sizes, powers", [((1.0, 4.0), (1, 2)), ((2.0,), (None,))])
def test_auto_tries_both_size_powers_from_two_sizes_on_and_none_for_one(sizes, powers, monkeypatch):
    S, E = np.meshgrid(np.asarray(sizes), [1.0, 2.0, 4.0, 8.0])
    S, E = np.repeat(S.ravel(), 2), np.repeat(E.ravel(), 2)
    y = 10 + 20 * S / E + 0.1 * np.arange(len(S))
    tried: list[tuple[str, int | None]] = []
    real = SEL.fit_component

    def spy(kind, *a, **k):
        if kind in A.EQUATIONS and "equation" not in k:
            tried.append((kind, k.get("power")))
        return real(kind, *a, **k)

    monkeypatch.setattr(SEL, "fit_component", spy)
    SEL.select(_F(S, E), y, [])
    for name, eq in A.EQUATIONS.items():
        want = powers if eq.uses_power else (None,)
        assert [p for n, p in tried if n == name] == list(want), name


def test_the_hybrids_cross_validation_shares_its_backbones_batched_fold_fits():
    F, y = _quadratic_runs()
    cache: dict = {}
    SEL.cross_validate("hybrid", F, y, [], backbone="amdahl", power=2, cache=cache)
    assert list(cache) == [("amdahl", 2)] and cache[("amdahl", 2)] is not None
    # the equation's own CV then reuses them: the same fold fits, the same errors
    assert (SEL.cross_validate("amdahl", F, y, [], power=2, cache=cache)[0].score
            == SEL.cross_validate("amdahl", F, y, [], power=2)[0].score)


def test_an_ml_kind_is_fitted_as_an_ml_component():
    S, E = np.meshgrid([1.0, 2.0, 4.0], [1.0, 2.0, 4.0])
    S, E = np.repeat(S.ravel(), 2), np.repeat(E.ravel(), 2)
    F, y = _F(S, E), 10 + 20 * S / E
    c = SEL.fit_component("random_forest", F, y, [])
    assert c.kind == "ml" and c.name == "random_forest" and c.equation is None
    p = SEL.predict_component(c, F, [])
    assert np.all(p >= y.min() - 1e-9) and np.all(p <= y.max() + 1e-9)  # trees: averages of runs
    assert np.mean(np.abs(p - y) / y) < 0.2


def test_the_tuned_constants_are_the_ones_docs_models_md_gives():
    # blend over the first 10 % beyond the box; an extrapolation fold less than 25 % beyond
    # counts as 25 % away; the hybrid's correction: 30 boosting stages at learning rate 0.2
    assert SEL.BLEND == 0.1 and SEL.Z_MIN_DISTANCE == 0.25
    assert (SEL.CORRECTION_STAGES, SEL.CORRECTION_RATE) == (30, 0.2)


def test_six_runs_are_enough_for_three_random_thirds_of_two():
    F = _F([1.0, 1.0, 2.0, 2.0, 4.0, 4.0], [1.0, 2.0, 1.0, 2.0, 1.0, 2.0])
    interp, _ = SEL.folds(F)
    assert [int(t.sum()) for t in interp] == [2, 2, 2]
    assert np.array_equal(np.sum(interp, axis=0), np.ones(6))
