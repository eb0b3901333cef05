"""The equations: parameter recovery from noisy synthetic data, global NNLS, determinism, degenerate inputs.

Tolerances: data carry 0.5 % multiplicative Gaussian noise on a grid of 6 sizes x 7 executor
counts x 3 repeats; linear parameters must come back within 5 % (relative), the nonlinear one
within 0.05 (absolute), and the fit must predict the noise-free curve within 1 %.
"""
from __future__ import annotations

import numpy as np
import pytest

from sparkpredict.errors import DegenerateDataError
from sparkpredict.models.analytical import (
    EQUATIONS,
    fit_equation,
    nnls_batch,
    nnls_small,
)

SIZES = np.array([1.0, 2.0, 4.0, 6.0, 8.0, 12.0])
EXECS = np.array([1.0, 2.0, 4.0, 6.0, 8.0, 12.0, 16.0])

#: name -> (true theta, power, relative tolerance per parameter (None = absolute 0.05))
TRUE = {
    "amdahl": ([40.0, 0.1, 20.0], 1),
    "gustafson": ([40.0, 0.3, 20.0], 1),
    "ernest": ([60.0, 8.0, 2.0, 15.0], 1),
    "plate2d": ([50.0, 3.0, 0.5, 20.0], 1),
    "fully_connected": ([50.0, 0.2, 0.7, 25.0], 1),
    "fully_connected_c1": ([50.0, 0.05, 25.0], 1),
}


def _data(name, theta, power, noise=0.005, seed=0):
    S, E = np.meshgrid(SIZES, EXECS)
    S = np.repeat(S.ravel(), 3)
    E = np.repeat(E.ravel(), 3)
    clean = EQUATIONS[name].fn(S, E, np.asarray(theta), power)
    y = clean * (1 + noise * np.random.default_rng(seed).standard_normal(len(S)))
    return S, E, y, clean


@pytest.mark.parametrize("name", list(TRUE))
def test_equation_recovers_parameters(name):
    theta, power = TRUE[name]
    S, E, y, clean = _data(name, theta, power)
    fit = fit_equation(name, S, E, y, power=power)
    eq = EQUATIONS[name]
    for p, true, got in zip(eq.params, theta, fit.theta):
        if p == eq.nonlinear or (name in ("amdahl",) and p == "b"):
            assert abs(got - true) < 0.05, (p, got, true)
        else:
            assert got == pytest.approx(true, rel=0.05), (p, got, true)
    assert np.max(np.abs(fit.predict(S, E) / clean - 1)) < 0.01


def test_power_two_is_chosen_for_quadratic_data():
    S, E, y, _ = _data("amdahl", [2.0, 0.1, 20.0], 2)
    fit = fit_equation("amdahl", S, E, y, power="auto")
    assert fit.power == 2
    assert fit.params["a"] == pytest.approx(2.0, rel=0.05)


def test_relative_weights_also_recover():
    theta, power = TRUE["plate2d"]
    S, E, y, _ = _data("plate2d", theta, power, seed=3)
    fit = fit_equation("plate2d", S, E, y, power=1, weights=1 / y**2)
    assert fit.params["c"] == pytest.approx(0.5, abs=0.05)
    assert fit.params["a"] == pytest.approx(50.0, rel=0.05)


def test_nnls_is_the_global_optimum():
    import scipy.optimize as scipy_opt
    rng = np.random.default_rng(1)
    for _ in range(30):
        A = rng.random((40, 4)) * rng.choice([1e-3, 1, 1e3], 4)
        y = A @ rng.normal(size=4) + 0.1 * rng.normal(size=40)
        x, sse = nnls_small(A, y)
        _xs, rnorm = scipy_opt.nnls(A, y)
        assert sse == pytest.approx(rnorm**2, rel=1e-7, abs=1e-9)
        assert np.all(x >= 0)
    # the batch form gives the same as one-by-one
    As = rng.random((5, 30, 3))
    y = rng.random(30)
    xb, sb = nnls_batch(As, y)
    for i in range(5):
        x1, s1 = nnls_small(As[i], y)
        np.testing.assert_allclose(xb[i], x1)
        assert sb[i] == pytest.approx(s1)


def test_fit_is_deterministic_and_row_order_free():
    theta, power = TRUE["fully_connected"]
    S, E, y, _ = _data("fully_connected", theta, power, noise=0.02)
    a = fit_equation("fully_connected", S, E, y)
    b = fit_equation("fully_connected", S, E, y)
    perm = np.random.default_rng(5).permutation(len(y))
    c = fit_equation("fully_connected", S[perm], E[perm], y[perm])
    assert a == b
    np.testing.assert_allclose(a.theta, c.theta, rtol=1e-9)


def test_every_term_stays_non_negative():
    # decreasing runtime in size would need a negative size term: NNLS refuses it
    S, E, _, _ = _data("amdahl", [1, 0, 1], 1)
    y = 100.0 / S + 1.0
    for name in EQUATIONS:
        fit = fit_equation(name, S, E, y)
        lin = [t for p, t in fit.params.items() if p != EQUATIONS[name].nonlinear and not (name == "amdahl" and p == "b")]
        assert all(v >= 0 for v in lin), (name, fit.params)


@pytest.mark.parametrize("bad, match", [
    ("single_size", "one input size"),
    ("single_exec", "one executor count"),
    ("few", "cannot fit 4 parameters"),
    ("zero", "zero or negative"),
    ("negative", "zero or negative"),
    ("nan", "NaN"),
])
def test_degenerate_inputs_raise(bad, match):
    S, E, y, _ = _data("plate2d", TRUE["plate2d"][0], 1)
    if bad == "single_size":
        S = np.full_like(S, 4.0)
    elif bad == "single_exec":
        E = np.full_like(E, 4.0)
    elif bad == "few":
        S, E, y = S[:4:1] * [1, 2, 3, 4], E[:4], y[:4]
    elif bad == "zero":
        y = y.copy()
        y[3] = 0.0
    elif bad == "negative":
        S = S.copy()
        S[0] = -1.0
    elif bad == "nan":
        E = E.copy()
        E[2] = np.nan
    with pytest.raises(DegenerateDataError, match=match) as exc:
        fit_equation("plate2d", S, E, y)
    assert exc.value.fix


def test_single_size_fallback_is_explicit():
    S, E, y, _ = _data("amdahl", TRUE["amdahl"][0], 1)
    keep = S == 4.0
    fit = fit_equation("amdahl", S[keep], E[keep], y[keep], allow_single_size=True)
    assert fit.power == 1
    # at the size it saw, the fit is right
    assert np.max(np.abs(fit.predict(S[keep], E[keep]) / y[keep] - 1)) < 0.03


def test_batched_fold_fits_equal_fitting_each_subset():
    # CV folds as 0/1 weight masks in one batched NNLS must give each subset's own fit
    from sparkpredict.models.analytical import fit_equation_folds

    theta, power = TRUE["plate2d"]
    S, E, y, _ = _data("plate2d", theta, power, noise=0.03, seed=4)
    rng = np.random.default_rng(2)
    masks = [rng.random(len(y)) < 0.7 for _ in range(3)] + [S < S.max(), np.full(len(y), True)]
    masks.append(E == E.min())  # one executor count: cannot be fitted -> None
    fits = fit_equation_folds("plate2d", S, E, y, masks, power=power, weights=1 / y**2)
    assert fits[-1] is None
    for m, f in zip(masks[:-1], fits[:-1]):
        one = fit_equation("plate2d", S[m], E[m], y[m], power=power, weights=1 / y[m] ** 2)
        np.testing.assert_allclose(f.theta, one.theta, rtol=1e-6, atol=1e-9)
        assert f.n == int(m.sum())
