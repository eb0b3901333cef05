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


def forest_from_dict(d: dict[str, Any]) -> ForestArrays:
    """The :class:`ForestArrays` of :func:`forest_to_dict`'s output."""
    if d.get("format") != FORMAT or d.get("version") != VERSION:
        raise ValueError(f"not a {FORMAT} v{VERSION} document (format {d.get('format')!r}, "
                         f"version {d.get('version')!r})")
    trees = tuple(TreeArrays(np.asarray(t["left"], np.int64), np.asarray(t["right"], np.int64),
                             np.asarray(t["feature"], np.int64), np.asarray(t["threshold"], np.float64),
                             np.asarray(t["value"], np.float64)) for t in d["trees"])
    oob = d.get("oob_prediction")
    return ForestArrays(trees, int(d["n_features"]), None if oob is None else np.asarray(oob, float))
