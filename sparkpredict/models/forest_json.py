"""Random forests as JSON: the fitted trees' arrays, and a numpy-only predictor for them.

A registry artifact must load without pickle and without scikit-learn, so a fitted
``RandomForestRegressor`` is written as each tree's node arrays (children, split feature,
threshold, leaf value) and read back into :class:`ForestArrays`, which predicts exactly what the
forest predicted (the same comparisons, ``x <= threshold`` goes left, on float32 inputs as
scikit-learn does).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

FORMAT = "sparkpredict.forest"
VERSION = 1


@dataclass(frozen=True)
class TreeArrays:
    """One regression tree: node ``i`` splits on ``feature[i] <= threshold[i]`` (leaves: -1)."""

    left: np.ndarray
    right: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    value: np.ndarray

    def predict(self, X: np.ndarray) -> np.ndarray:
        # scikit-learn compares float32 features against float64 thresholds
        X = np.asarray(X, dtype=np.float32).astype(np.float64)
        node = np.zeros(len(X), dtype=np.int64)
        rows = np.arange(len(X))
        active = self.left[node] >= 0
        while active.any():
            n, r = node[active], rows[active]
            go_left = X[r, self.feature[n]] <= self.threshold[n]
            node[active] = np.where(go_left, self.left[n], self.right[n])
            active = self.left[node] >= 0
        return self.value[node]


@dataclass(frozen=True)
class ForestArrays:
    """A forest that predicts like the ``RandomForestRegressor`` it was read from; ``estimators_``
    and ``oob_prediction_`` are there so code written for the scikit-learn forest runs on it."""

    estimators_: tuple[TreeArrays, ...]
    n_features_in_: int
    oob_prediction_: np.ndarray | None = None

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.mean([t.predict(X) for t in self.estimators_], axis=0)


def forest_to_dict(forest: Any) -> dict[str, Any]:
    """JSON-safe arrays of a fitted scikit-learn forest (or of a :class:`ForestArrays`)."""
    trees = []
    for est in forest.estimators_:
        if isinstance(est, TreeArrays):
            left, right, feat, thr, val = est.left, est.right, est.feature, est.threshold, est.value
        else:
            t = est.tree_
            left, right, feat, thr = t.children_left, t.children_right, t.feature, t.threshold
            val = t.value.reshape(t.node_count, -1)[:, 0]
        trees.append({"left": left.tolist(), "right": right.tolist(), "feature": feat.tolist(),
                      "threshold": thr.tolist(), "value": val.tolist()})
    oob = getattr(forest, "oob_prediction_", None)
    return {"format": FORMAT, "version": VERSION, "n_features": int(forest.n_features_in_),
            "trees": trees, "oob_prediction": None if oob is None else np.asarray(oob, float).reshape(-1).tolist()}


def forest_from_dict(d: dict[str, Any], n_features: int | None = None,
                     n_trees: int | None = None) -> ForestArrays:
    """The :class:`ForestArrays` of :func:`forest_to_dict`'s output. A damaged document (arrays
    of unequal length, a child or feature out of range, a value not finite, a tree count or
    feature count other than ``n_trees``/``n_features``) raises ValueError here, not an
    IndexError or NaN at the first prediction."""
    if d.get("format") != FORMAT or d.get("version") != VERSION:
        raise ValueError(f"not a {FORMAT} v{VERSION} document (format {d.get('format')!r}, "
                         f"version {d.get('version')!r})")
    width = int(d["n_features"])
    if n_features is not None and width != n_features:
        raise ValueError(f"the forest reads {width} features, the model {n_features}")
    trees = tuple(_tree(t, width, k) for k, t in enumerate(d["trees"]))
    if not trees or (n_trees is not None and len(trees) != n_trees):
        raise ValueError(f"the forest holds {len(trees)} trees, not {n_trees if n_trees is not None else 'one or more'}")
    oob = d.get("oob_prediction")
    return ForestArrays(trees, width, None if oob is None else np.asarray(oob, float).reshape(-1))


def _tree(t: dict[str, Any], width: int, k: int) -> TreeArrays:
    """One tree's arrays, checked so that every walk from the root ends at a leaf with a value."""
    tree = TreeArrays(np.asarray(t["left"], np.int64).reshape(-1), np.asarray(t["right"], np.int64).reshape(-1),
                      np.asarray(t["feature"], np.int64).reshape(-1), np.asarray(t["threshold"], np.float64).reshape(-1),
                      np.asarray(t["value"], np.float64).reshape(-1))
    n = len(tree.left)
    if n == 0 or any(len(a) != n for a in (tree.right, tree.feature, tree.threshold, tree.value)):
        raise ValueError(f"tree {k}: its node arrays are empty or of unequal length")
    split = tree.left >= 0
    nodes = np.arange(n)
    # scikit-learn numbers a node's children after it: a child at or before its parent is a loop
    if (split != (tree.right >= 0)).any() or (tree.left[split] <= nodes[split]).any() \
            or (tree.right[split] <= nodes[split]).any() or (tree.left >= n).any() or (tree.right >= n).any():
        raise ValueError(f"tree {k}: a child index is out of range")
    if ((tree.feature[split] < 0) | (tree.feature[split] >= width)).any():
        raise ValueError(f"tree {k}: a split reads a feature outside the model's {width}")
    if not (np.isfinite(tree.threshold[split]).all() and np.isfinite(tree.value[~split]).all()):
        raise ValueError(f"tree {k}: a threshold or leaf value is not a finite number")
    return tree
