"""Exported regressors predict with numpy exactly as scikit-learn does (1e-9 relative)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from sparkpredict.models import ml as M
from sparkpredict.models.hybrid import JobRuntimeModel


def _xy(n=150, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.uniform(1, 20, n), rng.integers(1, 13, n).astype(float),
                         np.full(n, 4.0), rng.uniform(1000, 8000, n)])
    y = 50 * X[:, 0] / X[:, 1] + 10 + rng.normal(0, 1, n)
    return X, y


def _queries(X):
    rng = np.random.default_rng(9)
    inside = X[rng.integers(0, len(X), 40)] * rng.uniform(0.9, 1.1, (40, X.shape[1]))
    outside = X[:10] * 3.0  # beyond the training range: trees stay flat, KRR extrapolates
    return np.vstack([X, inside, outside])


@pytest.mark.parametrize("fit", [M.fit_gbm, M.fit_random_forest, M.fit_kernel_ridge])
def test_numpy_prediction_equals_sklearn(fit):
    X, y = _xy()
    exported, est = fit(X, y) if fit is M.fit_kernel_ridge else fit(X, y, 0)
    Q = _queries(X)
    if fit is M.fit_kernel_ridge:
        ref = est.predict((Q - exported["x_mean"]) / exported["x_std"]) + exported["y_mean"]
    else:
        ref = est.predict(Q)
    # through JSON and back, as a saved model is
    loaded = M.from_jsonable(json.loads(json.dumps(M.to_jsonable(exported))))
    got = M.predict_exported(loaded, Q)
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9 * np.abs(ref).max())


def test_kernel_ridge_degree_is_at_most_four():
    X, y = _xy(seed=2)
    m, _ = M.fit_kernel_ridge(X, y)
    assert 1 <= m["degree"] <= 4
    m3, _ = M.fit_kernel_ridge(X, y, degree=3, alpha=0.1)
    assert (m3["degree"], m3["alpha"]) == (3, 0.1)


@pytest.mark.parametrize("kind", ["gbm", "random_forest", "kernel_ridge"])
def test_job_model_ml_kinds_round_trip(kind):
    X, y = _xy(n=90, seed=4)
    runs = {"input_bytes": X[:, 0] * 2**30, "executors": X[:, 1], "executor_cores": X[:, 2],
            "executor_memory_mb": X[:, 3], "runtime_s": np.abs(y) + 1}
    m = JobRuntimeModel(kind=kind).fit(runs)
    assert m.name_ == kind
    m2 = JobRuntimeModel.from_dict(json.loads(json.dumps(m.to_dict())))
    q = {k: v[:20] * 1.5 for k, v in runs.items() if k != "runtime_s"}
    np.testing.assert_array_equal(m.predict(q), m2.predict(q))
    assert np.all(m.predict(q) > 0)


def test_unknown_ml_kind():
    X, y = _xy(n=20)
    with pytest.raises(ValueError, match="unknown ML model"):
        M.fit_ml("svm", X, y)


def test_an_ml_kind_refuses_runs_of_one_executor_count_as_the_combined_model_does():
    from test_hybrid import synthetic_job

    from sparkpredict.errors import DegenerateDataError
    from sparkpredict.models.hybrid import JobRuntimeModel

    one = synthetic_job("a", execs=(4,))
    for kind in ("gbm", "random_forest", "kernel_ridge", "auto"):
        with pytest.raises(DegenerateDataError, match="one executor count|1 executor count"):
            JobRuntimeModel(kind=kind).fit(one)
