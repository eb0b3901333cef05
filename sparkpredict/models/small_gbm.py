"""Gradient boosting of small regression trees in numpy: the hybrid's residual correction.

The correction is the only part of the default (``auto``/``hybrid``) fit that needs trees, and
importing scikit-learn costs more than the whole fit (about 1.3 s of a first ``sparkpredict
suggest``'s 2.7 s, measured). This fitter grows the trees scikit-learn's
``GradientBoostingRegressor`` grows with its defaults (squared error, ``friedman_mse``, depth 3,
``min_samples_leaf=1``, no subsampling) and exports them in :mod:`.ml`'s array format, so they
predict with :func:`.ml.predict_exported` like any other tree ensemble.

It follows scikit-learn's split rules: features are compared as float32, split positions lie
between values more than 1e-7 apart, a threshold is the midpoint of its two neighbours, and a
node whose impurity is at most machine epsilon is a leaf. scikit-learn applies the 1e-7 rule to
each node's own values; this applies it once to all of a feature's values, which is the same
rule unless values closer than 1e-7 apart chain over more than 1e-7 (0, 0.6e-7 and 1.2e-7: a
node without the middle one may split between the others): such data, like a split table too
large, is fitted by scikit-learn itself. One difference: where two features'
best splits score exactly alike (the same partition of the node, say), scikit-learn keeps the
one its random feature order visits first, and this keeps the lower feature index. On data
without such ties the trees are the same (``tests/test_small_gbm.py`` compares them).
"""
from __future__ import annotations

import numpy as np

from .ml import export_arrays

_FEATURE_THRESHOLD = 1e-7  # sklearn.tree._splitter: values closer than this do not split
_EPSILON = float(np.finfo(np.float64).eps)


#: Above this many (candidate split x row) cells the split table would take too much memory
#: (8 bytes a cell) and scikit-learn's sort-based search is the faster: the fit goes there.
MAX_TABLE_CELLS = 1 << 22


def fit_gbm(X: np.ndarray, y: np.ndarray, n_estimators: int = 100, learning_rate: float = 0.1,
            max_depth: int = 3) -> dict:
    """Boosted trees on ``(X, y)``, exported as :func:`.ml.predict_exported` reads them."""
    X = np.atleast_2d(np.asarray(X, np.float64))
    y = np.asarray(y, np.float64)
    if X.shape[0] != len(y) or len(y) == 0:
        raise ValueError(f"X has {X.shape[0]} rows and y {len(y)} values: both need the same, "
                         "non-zero number")
    X32 = X.astype(np.float32).astype(np.float64)  # as scikit-learn's trees see X
    cut_feature, cut_value, same_in_nodes = _cut_points(X32)
    # counted before the table is built: building it was the memory this limit keeps
    if not same_in_nodes or len(cut_value) * len(y) > MAX_TABLE_CELLS:
        from .ml import fit_gbm as fit_sklearn

        return fit_sklearn(X, y, 0, n_estimators=n_estimators, learning_rate=learning_rate,
                           max_depth=max_depth)[0]
    goes_left = (X32[:, cut_feature].T <= cut_value[:, None]).astype(np.float64)
    cuts = cut_feature, cut_value, goes_left
    init = float(np.mean(y))
    raw = np.full(len(y), init)
    trees = []
    for _ in range(n_estimators):
        tree, fitted = _grow(X32, cuts, y - raw, max_depth)
        trees.append(tree)
        raw = raw + learning_rate * fitted
    return export_arrays([(t["left"], t["right"], t["feature"], t["threshold"], t["value"], max_depth)
                          for t in trees], init, learning_rate, "gbm")


def _cut_points(X32: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """Every place a split may cut, in the order sklearn meets them (by feature, then value):
    (feature, value it cuts after, whether these are the cuts of every node too). They are
    unless a run of values, each within 1e-7 of the next, spans more than 1e-7: scikit-learn
    checks the gap between a node's own neighbours, and a node lacking an inner value of such
    a run may cut where the whole column may not."""
    feats, values = [], []
    same_in_nodes = True
    for f in range(X32.shape[1]):
        u = np.unique(X32[:, f])
        apart = u[1:] > u[:-1] + _FEATURE_THRESHOLD
        at = u[:-1][apart]
        gap = np.flatnonzero(apart)
        first, last = u[np.r_[0, gap + 1]], u[np.r_[gap, len(u) - 1]]
        same_in_nodes = same_in_nodes and not np.any(last > first + _FEATURE_THRESHOLD)
        feats.append(np.full(len(at), f))
        values.append(at)
    return np.concatenate(feats).astype(np.int64), np.concatenate(values), same_in_nodes


def _grow(X32: np.ndarray, cuts: tuple[np.ndarray, np.ndarray, np.ndarray], r: np.ndarray,
          max_depth: int) -> tuple[dict, np.ndarray]:
    """One least-squares tree, grown a level at a time with every node of the level scored in
    two matrix products (a node at a time costs more in Python than the arithmetic). Returns
    the tree, nodes numbered level by level, and each row's leaf value."""
    cut_feature, cut_value, goes_left = cuts
    node_of = np.zeros(len(r), np.int64)
    left, right, feature = [-1], [-1], [0]
    threshold = [np.inf]
    level = np.array([0])  # nodes that may split at this depth
    for _ in range(max_depth):
        member = (node_of[:, None] == level[None, :]).astype(np.float64)  # (rows, nodes)
        count = member.sum(axis=0)
        total = r @ member
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = total / count
            impurity = (r * r) @ member / count - mean * mean
        # sklearn's leaf rules: too few rows, or (numerically) pure
        open_ = (count >= 2) & (impurity > _EPSILON)
        if not open_.any() or len(cut_value) == 0:
            break
        level, member, count, total = level[open_], member[:, open_], count[open_], total[open_]
        n_left = goes_left @ member  # (cuts, nodes)
        sum_left = goes_left @ (member * r[:, None])
        n_right = count - n_left
        sum_right = total - sum_left
        with np.errstate(invalid="ignore", divide="ignore"):
            # friedman_mse's proxy: n_l·n_r·(mean_l - mean_r)², which ranks splits as the
            # squared error they remove does
            diff = n_right * sum_left - n_left * sum_right
            proxy = np.where((n_left > 0) & (n_right > 0), diff * diff / (n_left * n_right), -np.inf)
        # the first of equal ones: along a feature as sklearn's strict '>' keeps, across
        # features the lower index (sklearn: the first its random feature order visits)
        best = np.argmax(proxy, axis=0)
        children = []
        for j, node in enumerate(level):
            c = best[j]
            if not np.isfinite(proxy[c, j]):
                continue  # every row of the node has the same features
            f = int(cut_feature[c])
            rows = node_of == node
            x = X32[rows, f]
            lo, hi = x[x <= cut_value[c]].max(), x[x > cut_value[c]].min()
            thr = lo / 2.0 + hi / 2.0  # sklearn's threshold: between the node's own values
            if thr == hi or not np.isfinite(thr):
                thr = lo
            feature[node], threshold[node] = f, float(thr)
            left[node], right[node] = len(left), len(left) + 1
            left += [-1, -1]
            right += [-1, -1]
            feature += [0, 0]
            threshold += [np.inf, np.inf]
            children += [left[node], right[node]]
            node_of[rows] = np.where(x <= thr, left[node], right[node])
        if not children:
            break
        level = np.array(children)
    k = len(left)
    # inner nodes get 0: prediction never stops at one
    value = np.bincount(node_of, r, minlength=k) / np.maximum(np.bincount(node_of, minlength=k), 1)
    tree = {"left": np.array(left, np.int64), "right": np.array(right, np.int64),
            "feature": np.array(feature, np.int64), "threshold": np.array(threshold, np.float64),
            "value": value}
    return tree, value[node_of]
