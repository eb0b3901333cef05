"""The study's ML regressors (kernel ridge, gradient boosting, random forest), exported as arrays.

Fitting uses scikit-learn (imported inside the fit functions). A fitted regressor is exported to
a JSON-safe dict of plain arrays and predicted by :func:`predict_exported` with numpy only, so a
saved model loads and predicts without scikit-learn (fast start, no pickle):

* tree ensembles (``gbm``, ``random_forest``): per tree ``left, right, feature, threshold,
  value``; prediction ``init + scale · Σ_trees value[leaf]``. scikit-learn compares float32
  features with float64 thresholds, and so do we, so predictions agree to rounding.
* ``kernel_ridge``: training X, dual coefficients and the polynomial kernel
  ``(γ·xᵀz + c₀)^degree``.

Inputs are standardised for kernel ridge (mean/std stored) and used raw by trees.
"""
from __future__ import annotations

from typing import Any

import numpy as np

ML_KINDS = ("kernel_ridge", "gbm", "random_forest")


# ---- export / numpy prediction -------------------------------------------------------------
def _export_trees(trees: list[Any], init: float, scale: float, kind: str) -> dict:
    """Fitted scikit-learn trees in the exported format (:func:`export_arrays`)."""
    return export_arrays([(t.tree_.children_left, t.tree_.children_right, t.tree_.feature,
                           t.tree_.threshold, t.tree_.value.reshape(t.tree_.node_count, -1)[:, 0],
                           int(t.tree_.max_depth)) for t in trees], init, scale, kind)


def export_arrays(trees: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]],
                  init: float, scale: float, kind: str) -> dict:
    """Trees given as (left, right, feature, threshold, value, depth), children ``-1`` at a
    leaf as scikit-learn numbers them, in the exported format :func:`predict_exported` reads."""
    lefts, rights, feats, thrs, vals, roots = [], [], [], [], [], []
    off = 0
    depth = 0
    for left, right, feature, threshold, value, tree_depth in trees:
        left = np.asarray(left, np.int64)
        leaf = left == -1
        # Leaves point to themselves so the vectorised walk can run a fixed number of steps.
        idx = np.arange(len(left), dtype=np.int64)
        lefts.append(np.where(leaf, idx, left) + off)
        rights.append(np.where(leaf, idx, np.asarray(right, np.int64)) + off)
        feats.append(np.where(leaf, 0, feature).astype(np.int64))
        # a leaf's threshold is never read (both children are the leaf itself): 0, not inf,
        # which JSON cannot hold
        thrs.append(np.where(leaf, 0.0, threshold).astype(np.float64))
        vals.append(np.asarray(value, np.float64))
        roots.append(off)
        off += len(left)
        depth = max(depth, int(tree_depth))
    return {"type": kind, "init": float(init), "scale": float(scale), "depth": depth,
            "roots": np.array(roots, np.int64), "left": np.concatenate(lefts),
            "right": np.concatenate(rights), "feature": np.concatenate(feats),
            "threshold": np.concatenate(thrs), "value": np.concatenate(vals)}


def _predict_trees(m: dict, X: np.ndarray) -> np.ndarray:
    # sklearn casts X to float32 before comparing with float64 thresholds.
    X32 = np.asarray(X, np.float64).astype(np.float32).astype(np.float64)
    n = X32.shape[0]
    roots = np.asarray(m["roots"], np.int64)
    left, right = np.asarray(m["left"], np.int64), np.asarray(m["right"], np.int64)
    feat, thr = np.asarray(m["feature"], np.int64), np.asarray(m["threshold"], np.float64)
    node = np.repeat(roots[:, None], n, axis=1)
    cols = np.arange(n)[None, :]
    for _ in range(int(m["depth"])):
        go_left = X32[cols, feat[node]] <= thr[node]
        node = np.where(go_left, left[node], right[node])
    leaf_vals = np.asarray(m["value"], np.float64)[node]
    # Sum in tree order, as sklearn does, so rounding matches.
    if m["type"] == "gbm":
        total = np.full(n, float(m["init"]))
        for row in leaf_vals:
            total += m["scale"] * row
        return total
    total = np.zeros(n)
    for row in leaf_vals:
        total += row
    return total / len(roots)


def _predict_krr(m: dict, X: np.ndarray) -> np.ndarray:
    Z = (np.asarray(X, float) - np.asarray(m["x_mean"])) / np.asarray(m["x_std"])
    K = (m["gamma"] * Z @ np.asarray(m["X_fit"]).T + m["coef0"]) ** int(m["degree"])
    return K @ np.asarray(m["dual_coef"]) + m["y_mean"]


def predict_exported(m: dict, X: np.ndarray) -> np.ndarray:
    """Predict with an exported regressor (numpy only). ``X`` is ``(n, n_features)``."""
    X = np.atleast_2d(np.asarray(X, float))
    if m["type"] in ("gbm", "random_forest"):
        return _predict_trees(m, X)
    if m["type"] == "kernel_ridge":
        return _predict_krr(m, X)
    raise ValueError(f"unknown exported model type {m['type']!r}")


def to_jsonable(m: dict) -> dict:
    """Arrays -> lists (float64 round-trips exactly through JSON's repr)."""
    return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in m.items()}


def from_jsonable(m: dict) -> dict:
    out = dict(m)
    for k in ("roots", "left", "right", "feature"):
        if k in out:
            out[k] = np.asarray(out[k], np.int64)
    for k in ("threshold", "value", "x_mean", "x_std", "X_fit", "dual_coef"):
        if k in out:
            out[k] = np.asarray(out[k], np.float64)
    return out


# ---- fitting (scikit-learn) ----------------------------------------------------------------
def fit_gbm(X: np.ndarray, y: np.ndarray, random_state: int = 0, **params: Any) -> tuple[dict, Any]:
    """Gradient boosting with scikit-learn's defaults (squared error, 100 trees, depth 3)."""
    from sklearn.ensemble import GradientBoostingRegressor

    est = GradientBoostingRegressor(random_state=random_state, **params).fit(X, y)
    init = float(np.ravel(est.init_.constant_)[0]) if hasattr(est.init_, "constant_") \
        else float(est.init_.predict(X[:1])[0])
    trees = [e[0] for e in est.estimators_]
    return _export_trees(trees, init, est.learning_rate, "gbm"), est


def fit_random_forest(X: np.ndarray, y: np.ndarray, random_state: int = 0, n_estimators: int = 50,
                      **params: Any) -> tuple[dict, Any]:
    """Random forest of 50 trees (bootstrap; all features per split, scikit-learn's regressor default)."""
    from sklearn.ensemble import RandomForestRegressor

    est = RandomForestRegressor(n_estimators=n_estimators, random_state=random_state, n_jobs=1,
                                **params).fit(X, y)
    return _export_trees(list(est.estimators_), 0.0, 1.0, "random_forest"), est


def fit_kernel_ridge(X: np.ndarray, y: np.ndarray, degree: int | None = None, alpha: float | None = None,
                     max_degree: int = 4) -> tuple[dict, Any]:
    """Kernel ridge, polynomial kernel; degree (≤ ``max_degree``) and alpha by 3-fold CV when not given.

    The study found degrees above 4 overfit. Inputs are standardised and the target centred.
    """
    from sklearn.kernel_ridge import KernelRidge
    from threadpoolctl import threadpool_limits

    # Small dense solves: BLAS threads only add overhead, and on a busy machine spinning
    # threads made this search 40x slower (2.1 s instead of 0.05 s, measured).
    with threadpool_limits(1):
        return _fit_kernel_ridge(KernelRidge, X, y, degree, alpha, max_degree)


def _fit_kernel_ridge(KernelRidge: Any, X: np.ndarray, y: np.ndarray, degree: int | None,
                      alpha: float | None, max_degree: int) -> tuple[dict, Any]:
    X = np.asarray(X, float)
    y = np.asarray(y, float)
    mu, sd = X.mean(axis=0), X.std(axis=0)
    sd[sd == 0] = 1.0
    Z = (X - mu) / sd
    y_mean = float(y.mean())
    yc = y - y_mean
    gamma, coef0 = 1.0 / max(Z.shape[1], 1), 1.0
    degrees = [degree] if degree else list(range(1, max_degree + 1))
    alphas = [alpha] if alpha else [1e-3, 1e-2, 1e-1, 1.0]
    if len(degrees) * len(alphas) > 1 and len(y) >= 9:
        folds = np.arange(len(y)) % 3
        best = (np.inf, degrees[0], alphas[0])
        for d in degrees:
            K = (gamma * Z @ Z.T + coef0) ** d
            for a in alphas:
                err = 0.0
                for k in range(3):
                    tr, te = folds != k, folds == k
                    try:
                        dual = np.linalg.solve(K[np.ix_(tr, tr)] + a * np.eye(tr.sum()), yc[tr])
                    except np.linalg.LinAlgError:
                        err = np.inf
                        break
                    err += float(((K[np.ix_(te, tr)] @ dual - yc[te]) ** 2).sum())
                if err < best[0]:
                    best = (err, d, a)
        _, degree, alpha = best
    else:
        degree, alpha = degrees[0], alphas[0]
    est = KernelRidge(alpha=alpha, kernel="poly", degree=degree, gamma=gamma, coef0=coef0).fit(Z, yc)
    m = {"type": "kernel_ridge", "degree": int(degree), "alpha": float(alpha), "gamma": gamma,
         "coef0": coef0, "x_mean": mu, "x_std": sd, "X_fit": Z, "dual_coef": np.ravel(est.dual_coef_),
         "y_mean": y_mean}
    return m, est


def fit_ml(kind: str, X: np.ndarray, y: np.ndarray, random_state: int = 0) -> dict:
    """Fit ``kind`` (one of :data:`ML_KINDS`) and return its numpy export."""
    if kind == "gbm":
        return fit_gbm(X, y, random_state)[0]
    if kind == "random_forest":
        return fit_random_forest(X, y, random_state)[0]
    if kind == "kernel_ridge":
        return fit_kernel_ridge(X, y)[0]
    raise ValueError(f"unknown ML model {kind!r}; use one of {', '.join(ML_KINDS)}")
