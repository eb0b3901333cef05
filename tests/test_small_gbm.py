"""The numpy boosting of the hybrid's correction grows scikit-learn's trees, without importing it."""
from __future__ import annotations

import itertools
import subprocess
import sys

import numpy as np
import pytest

from sparkpredict.models import ml as M
from sparkpredict.models import small_gbm as G


def _data(seed: int, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * rng.uniform(0.1, 1e3, size=d)
    y = np.sin(X[:, 0] / X[:, 0].std()) + 0.3 * rng.normal(size=n)
    return X, y


@pytest.mark.parametrize("seed", range(6))
def test_one_feature_grows_sklearns_trees(seed):
    # one feature: no two features can tie, so every split and threshold is sklearn's
    X, y = _data(seed, 40 + 30 * seed, 1)
    ours = G.fit_gbm(X, y, n_estimators=30, learning_rate=0.2)
    theirs = M.fit_gbm(X, y, 0, n_estimators=30, learning_rate=0.2)[0]
    grid = np.linspace(X.min() - 1, X.max() + 1, 500)[:, None]
    np.testing.assert_allclose(M.predict_exported(ours, grid), M.predict_exported(theirs, grid),
                               rtol=0, atol=1e-12)
    def split_thresholds(m):  # a leaf is its own child; its threshold is never read
        return sorted(m["threshold"][m["left"] != np.arange(len(m["left"]))])

    assert split_thresholds(ours) == pytest.approx(split_thresholds(theirs), abs=0)


@pytest.mark.parametrize("seed", range(6))
def test_several_features_fit_the_training_rows_as_sklearn(seed):
    # several features may tie on a small node (any cut of 2 rows splits them alike), where
    # sklearn's random feature order and our lowest index may pick different thresholds; the
    # partitions, and so the fitted values, are the same
    X, y = _data(seed, 25 + 40 * seed, 2 + seed % 3)
    ours = G.fit_gbm(X, y, n_estimators=30, learning_rate=0.2)
    theirs = M.fit_gbm(X, y, 0, n_estimators=30, learning_rate=0.2)[0]
    np.testing.assert_allclose(M.predict_exported(ours, X), M.predict_exported(theirs, X),
                               rtol=0, atol=1e-9)


def test_runs_design_matches_sklearn_everywhere():
    # the correction's real inputs: a few sizes x executor counts, repeated runs
    rng = np.random.default_rng(3)
    S = np.repeat([1.0, 2, 4, 8], 15)
    E = np.tile(np.repeat([1.0, 2, 3, 4, 6], 3), 4)
    X = np.c_[S * 2**30, E]
    y = 0.05 * S / E + 0.02 * rng.normal(size=len(S))
    ours = G.fit_gbm(X, y, n_estimators=30, learning_rate=0.2)
    theirs = M.fit_gbm(X, y, 0, n_estimators=30, learning_rate=0.2)[0]
    grid = np.c_[np.repeat(np.linspace(0.5, 12, 24), 10) * 2**30, np.tile(np.arange(1.0, 11), 24)]
    np.testing.assert_allclose(M.predict_exported(ours, grid), M.predict_exported(theirs, grid),
                               rtol=0, atol=1e-12)


def test_depth_and_pure_nodes():
    X, y = _data(0, 200, 3)
    m = G.fit_gbm(X, y, n_estimators=5, learning_rate=0.5, max_depth=2)
    roots = list(m["roots"]) + [len(m["value"])]
    for a, b in itertools.pairwise(roots):
        inner = np.count_nonzero(m["left"][a:b] != np.arange(a, b))  # a leaf is its own child
        assert inner <= 3 and b - a == 2 * inner + 1  # depth 2: at most 3 splits, 4 leaves
    flat = G.fit_gbm(X, np.full(200, 7.5), n_estimators=3, learning_rate=0.1)
    assert len(flat["value"]) == 3  # constant target: each tree is one leaf
    np.testing.assert_allclose(M.predict_exported(flat, X), 7.5)


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="same, non-zero number"):
        G.fit_gbm(np.zeros((3, 2)), np.zeros(4))
    with pytest.raises(ValueError, match="same, non-zero number"):
        G.fit_gbm(np.zeros((0, 2)), np.zeros(0))


def test_a_large_table_is_fitted_by_sklearn(monkeypatch):
    X, y = _data(1, 120, 2)
    monkeypatch.setattr(G, "MAX_TABLE_CELLS", 100)
    ours = G.fit_gbm(X, y, n_estimators=10, learning_rate=0.2)
    theirs = M.fit_gbm(X, y, 0, n_estimators=10, learning_rate=0.2)[0]
    for k in ("left", "right", "feature", "threshold", "value"):
        np.testing.assert_array_equal(ours[k], theirs[k])


def test_the_default_fit_does_not_import_sklearn():
    code = """
import sys
import numpy as np, pandas as pd
from sparkpredict.models.hybrid import JobRuntimeModel
rng = np.random.default_rng(0)
S = np.repeat([1.0, 2, 4, 8], 8); E = np.tile([1.0, 2, 3, 4], 8)
runs = pd.DataFrame({"input_bytes": S * 2**30, "executors": E,
                     "runtime_s": (5 + 20 * S / E) * (1 + 0.03 * rng.normal(size=len(S)))})
m = JobRuntimeModel(kind="hybrid").fit(runs)
print(m.name_, "sklearn" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    name, imported = out.stdout.split()
    assert name.startswith("hybrid"), out.stdout  # the correction was fitted
    assert imported == "False", out.stdout
