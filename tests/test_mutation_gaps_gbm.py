"""Behaviours of the numpy boosting (models/small_gbm.py) and the estimator protocol
(models/estimator.py) that a mutation audit found no test pinning. The reference for the trees
is scikit-learn's GradientBoostingRegressor with the same settings on the same data."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from sparkpredict.errors import InputError
from sparkpredict.models import estimator as E
from sparkpredict.models import ml as M
from sparkpredict.models import small_gbm as G


def _both(X, y, **kw):
    X = np.asarray(X, float).reshape(len(y), -1)
    y = np.asarray(y, float)
    return G.fit_gbm(X, y, **kw), M.fit_gbm(X, y, 0, **kw)[0], X


def _splits(m):  # a leaf is its own child
    return int(np.count_nonzero(m["left"] != np.arange(len(m["left"]))))


def _same_as_sklearn(X, y, **kw):
    ours, theirs, X = _both(X, y, **kw)
    np.testing.assert_allclose(M.predict_exported(ours, X), M.predict_exported(theirs, X), rtol=0, atol=1e-12)
    assert _splits(ours) == _splits(theirs)
    return ours


# float32 values with b == a + 1e-7 exactly in float64: sklearn's 'b > a + 1e-7' does not cut
A, B = -1.0000000116860974e-07, -1.1686097468332243e-15


@pytest.mark.parametrize("x, splits", [([0, 0, 0.5e-7, 0.5e-7], False), ([A, A, B, B], False),
                                       ([0, 0, 1.05e-7, 1.05e-7], True)])
def test_a_cut_needs_values_more_than_1e7_apart_as_in_sklearn(x, splits):
    assert np.float32(B) == B and B == A + 1e-7
    m = _same_as_sklearn(x, [0, 0, 1, 1], n_estimators=3, learning_rate=1.0)
    assert (_splits(m) > 0) == splits


def test_the_1e7_gap_is_between_neighbours_not_from_the_smallest_value():
    x = np.array([0, 0, 0.01, 0.01, 0.01 + 0.5e-7, 0.01 + 0.5e-7])
    m = _same_as_sklearn(x, [0, 0, 1, 1, 5, 5], n_estimators=1, learning_rate=1.0)
    np.testing.assert_allclose(M.predict_exported(m, x[:, None]), [0, 0, 3, 3, 3, 3], atol=1e-12)


def test_close_values_chained_over_1e7_cut_in_a_node_as_in_sklearn():
    # 0, 0.6e-7, 1.2e-7: no two neighbours of the column are 1e-7 apart, but once feature 1
    # has split off the 0.6e-7 rows, the node holding 0 and 1.2e-7 cuts between them
    X = [[0, 0], [0, 0], [1.2e-7, 0], [1.2e-7, 0], [0.6e-7, 1], [0.6e-7, 1]]
    ours = _same_as_sklearn(X, [0, 0, 1, 1, 5, 5], n_estimators=3, learning_rate=1.0)
    np.testing.assert_allclose(M.predict_exported(ours, np.asarray(X, float)), [0, 0, 1, 1, 5, 5], atol=1e-12)


def test_a_node_of_impurity_at_machine_epsilon_is_a_leaf():
    # residuals +-2^-26: impurity exactly 2^-52, the epsilon: a leaf; at 4 eps it splits
    flat = _same_as_sklearn([0, 1], [2.0**-26, -2.0**-26], n_estimators=2)
    assert _splits(flat) == 0
    assert _splits(_same_as_sklearn([0, 1], [2.0**-25, -2.0**-25], n_estimators=2)) == 2


def test_equal_cuts_along_a_feature_keep_the_first_as_sklearn():
    # residuals -.5, .5, .5, -.5: cutting after 0 or after 2 scores exactly alike
    m = _same_as_sklearn(np.arange(4.0), [0, 1, 1, 0], n_estimators=1, max_depth=1)
    theirs = M.fit_gbm(np.arange(4.0)[:, None], np.array([0, 1, 1, 0.0]), 0, n_estimators=1, max_depth=1)[0]
    assert m["threshold"][0] == theirs["threshold"][0] == 0.5


def test_pure_children_are_leaves():
    # a step: the root's two children hold one value each and split no further
    m = _same_as_sklearn(np.arange(8.0), np.repeat([0.0, 1.0], 4), n_estimators=2)
    assert _splits(m) == 2


def test_a_feature_without_cuts_and_one_with_a_single_cut():
    y = np.arange(6.0)
    m = _same_as_sklearn(np.ones((6, 2)), y, n_estimators=3)  # nothing to cut: mean only
    assert _splits(m) == 0 and m["init"] == pytest.approx(2.5)
    np.testing.assert_allclose(M.predict_exported(m, np.ones((2, 2))), 2.5)
    m = _same_as_sklearn([0, 0, 1, 1, 1], np.arange(5.0), n_estimators=3, learning_rate=1.0)
    np.testing.assert_allclose(M.predict_exported(m, np.array([[0.0], [1.0]])), [0.5, 3.0], atol=1e-12)


def test_the_defaults_are_sklearns():
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(40, 1)), rng.normal(size=40)
    ours, theirs = G.fit_gbm(X, y), M.fit_gbm(X, y, 0)[0]
    assert len(ours["roots"]) == len(theirs["roots"]) == 100 and ours["scale"] == theirs["scale"] == 0.1
    grid = np.linspace(-3, 3, 200)[:, None]
    np.testing.assert_allclose(M.predict_exported(ours, grid), M.predict_exported(theirs, grid), rtol=0, atol=1e-9)


def test_exported_leaves_point_to_themselves_and_hold_finite_numbers():
    X = np.random.default_rng(0).normal(size=(30, 2))
    flat = G.fit_gbm(X, np.full(30, 7.5), n_estimators=3)
    assert list(flat["left"]) == list(flat["right"]) == [0, 1, 2]
    assert list(flat["threshold"]) == [0.0, 0.0, 0.0]
    m = G.fit_gbm(X, X[:, 0] ** 2, n_estimators=3)
    inner = m["left"] != np.arange(len(m["left"]))
    assert inner.any() and np.all(np.isfinite(m["value"])) and np.all(m["value"][inner] == 0)
    assert np.all(np.isfinite(m["threshold"]))  # JSON holds no inf or NaN


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the cast to float32 overflows
@pytest.mark.parametrize("x", [[1, 1, 1e39, 1e39], [-1e39, -1e39, 1e39, 1e39]])
def test_values_beyond_float32_cut_at_the_last_finite_side(x):
    # float32 makes them +-inf: the midpoint is inf or NaN, so the cut is at the lower value
    X = np.array(x, float)[:, None]
    m = G.fit_gbm(X, np.array([0, 0, 1, 1.0]), n_estimators=1, learning_rate=1.0)
    np.testing.assert_allclose(M.predict_exported(m, X), [0, 0, 1, 1], atol=1e-12)


class _Fallback(Exception):
    pass


@pytest.fixture
def no_sklearn(monkeypatch):
    def refuse(*a, **k):
        raise _Fallback
    monkeypatch.setattr(M, "fit_gbm", refuse)


@pytest.mark.parametrize("rows, fallback", [(2048, False), (2049, True)])
def test_the_table_limit_is_2_to_the_22_cells(no_sklearn, rows, fallback):
    # one feature of distinct values: (rows - 1) cuts x rows cells; 2047 x 2048 fit, 2048 x 2049 do not
    X, y = np.arange(rows, dtype=float)[:, None], np.arange(rows, dtype=float) % 7
    if fallback:
        with pytest.raises(_Fallback):
            G.fit_gbm(X, y, n_estimators=1)
    else:
        assert _splits(G.fit_gbm(X, y, n_estimators=1)) > 0  # numpy's: the fallback raises


def test_a_table_exactly_at_the_limit_is_fitted_in_numpy(no_sklearn, monkeypatch):
    X, y = np.arange(10.0)[:, None], np.arange(10.0)
    monkeypatch.setattr(G, "MAX_TABLE_CELLS", 9 * 10)
    assert _splits(G.fit_gbm(X, y, n_estimators=1)) == 7
    monkeypatch.setattr(G, "MAX_TABLE_CELLS", 9 * 10 - 1)
    with pytest.raises(_Fallback):
        G.fit_gbm(X, y, n_estimators=1)


def test_a_table_over_the_limit_is_never_built(no_sklearn):
    # 3000 distinct values: a 2999 x 3000 table is 72 MB; the limit is there to not build it
    X = np.arange(3000.0)[:, None]
    tracemalloc.start()
    try:
        with pytest.raises(_Fallback):
            G.fit_gbm(X, np.arange(3000.0), n_estimators=1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20, peak


# --- models/estimator.py: scikit-learn's protocol, checked against scikit-learn itself -------


class _Fixed(E.RuntimeEstimator):
    def __init__(self, preds=None, seed=0):
        self.preds, self.seed = preds, seed

    def predict(self, X):
        return np.asarray(self.preds, float)


@pytest.mark.parametrize("y, p, w", [
    ([1.0, 2.0, 3.0, 4.0], [1.1, 1.9, 3.3, 3.6], None),
    ([0.001, 0.002, 0.0035], [0.0011, 0.0019, 0.003], None),  # total squares far below 1
    ([1.0, 2.0, 4.0, 8.0], [2.0, 2.0, 3.0, 9.0], [1.0, 3.0, 0.5, 2.0]),
    ([5.0, 5.0, 5.0], [5.0, 5.0, 5.0], None),  # constant and exact: 1
    ([5.0, 5.0, 5.0], [5.0, 5.5, 5.0], None),  # constant, missed: 0, not -inf
])
def test_score_is_sklearns_r2(y, p, w):
    from sklearn.metrics import r2_score
    assert _Fixed(p).score(None, y, sample_weight=w) == pytest.approx(r2_score(y, p, sample_weight=w),
                                                                      rel=1e-12, abs=1e-15)


def test_tags_are_a_scikit_learn_regressors():
    from sklearn.base import BaseEstimator, RegressorMixin, is_regressor
    from sklearn.utils import get_tags

    class Reference(RegressorMixin, BaseEstimator):
        pass

    assert get_tags(_Fixed()) == get_tags(Reference())
    assert is_regressor(_Fixed()) and get_tags(_Fixed()).target_tags.required


def test_repr_shows_scalars_as_values_and_tables_as_their_shape():
    import pandas as pd

    assert repr(_Fixed(np.float64(0.5), np.int64(3))) == f"_Fixed(preds={np.float64(0.5)!r}, seed={np.int64(3)!r})"
    t = pd.DataFrame({"a": [1, 2, 3], "b": [4, 5, 6]})
    assert repr(_Fixed({"runs": t, "k": 1}, None)) == "_Fixed(preds={'runs': <DataFrame 3x2>, 'k': 1}, seed=None)"


def test_get_and_set_params_and_clone():
    from sklearn.base import clone

    m = _Fixed([1.0], 4)
    assert m.get_params() == m.get_params(deep=False) == {"preds": [1.0], "seed": 4}
    assert m.set_params(seed=5) is m and m.seed == 5
    with pytest.raises(ValueError, match="invalid parameter 'nope'.*valid parameters: preds, seed"):
        m.set_params(nope=1)
    c = clone(m)
    assert c is not m and c.get_params() == m.get_params()


@pytest.mark.parametrize("value, seed", [(None, None), (0, 0), (np.int64(7), 7), (-3, -3)])
def test_checked_seed_takes_ints_and_none(value, seed):
    got = E.checked_seed(value)
    assert got == seed and type(got) is type(seed)


@pytest.mark.parametrize("value", [True, np.bool_(False), 1.0, "0", np.random.RandomState(0)])
def test_checked_seed_refuses_what_json_or_a_seed_cannot_be(value):
    with pytest.raises(InputError, match="random_state must be an int or None"):
        E.checked_seed(value)


def test_positive_query_column():
    np.testing.assert_array_equal(E.positive_query_column({"executors": [1, 2.5]}, "executors", 2), [1, 2.5])
    np.testing.assert_array_equal(E.positive_query_column({"executors": 3}, "executors", 2), [3, 3])
    with pytest.raises(InputError, match="lacks column 'executors'"):
        E.positive_query_column({"input_bytes": [1]}, "executors", 1)
    for bad in ([1, 0], [1, -2], [np.nan, 1], [np.inf, 1], [1e-300, -0.0]):
        with pytest.raises(InputError, match="NaN, infinite, zero or negative"):
            E.positive_query_column({"executors": bad}, "executors", 2)


def test_without_interval_is_a_model_whose_most_confidence_is_zero():
    class Most:
        def __init__(self, c):
            self.c = c

        def max_confidence(self):
            return self.c

    assert E.without_interval(Most(0.0)) and E.without_interval(Most(-1.0))
    assert not E.without_interval(Most(1e-9)) and not E.without_interval(Most(0.95))
    assert not E.without_interval(object()) and not E.without_interval(None)


def test_a_failed_fit_leaves_the_model_as_it_was():
    m = _Fixed([1.0], 2)
    m.coef_ = 1.0
    with pytest.raises(RuntimeError, match="boom"), E.kept_on_failure(m):
        m.coef_, m.extra_ = 2.0, 3.0
        del m.preds
        raise RuntimeError("boom")
    assert m.__dict__ == {"preds": [1.0], "seed": 2, "coef_": 1.0}
    with E.kept_on_failure(m):
        m.coef_ = 5.0
    assert m.coef_ == 5.0


# --- models/quiet_forest.py, models/stage_forest.py -----------------------------------------

@pytest.mark.parametrize("rows", [2, 3, 4])
def test_the_stage_forest_scores_out_of_bag_from_3_rows_and_stays_silent(rows):
    import warnings

    from sklearn.ensemble import RandomForestRegressor

    from sparkpredict.models.stage_forest import quiet_forest

    X, y = np.arange(rows, dtype=float)[:, None], np.arange(rows, dtype=float) ** 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 2 trees: some rows are in every bag, sklearn warns
        f = quiet_forest(n_estimators=2, random_state=0, oob_score=True)
        assert f.fit(X, y) is f
    assert f.oob_score is (rows >= 3)
    if rows >= 3:
        with pytest.warns(UserWarning, match="Some inputs do not have OOB scores"):
            ref = RandomForestRegressor(n_estimators=2, random_state=0, oob_score=True).fit(X, y)
        np.testing.assert_array_equal(f.oob_prediction_, ref.oob_prediction_)
    else:
        assert not hasattr(f, "oob_prediction_")


def test_importances_are_the_forests_largest_first():
    from sparkpredict.models.stage_forest import importances, quiet_forest

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    f = quiet_forest(n_estimators=10, random_state=0).fit(X, 5 * X[:, 2] + 0.5 * X[:, 0])
    s = importances(f, ["a", "b", "c"])
    assert list(s.index) == ["c", "a", "b"] and s["c"] == f.feature_importances_[2]
