"""Candidates of a job's runtime model, their extrapolation-aware cross-validation, and the choice.

A *component* is what a fitted :class:`~sparkpredict.models.hybrid.JobRuntimeModel` predicts
with: an analytical equation, an exported ML regressor, or both (``hybrid``: equation times
``exp(trees)``). Prediction needs numpy only; fitting imports scikit-learn for trees.

Folds (on canonically sorted rows, so row order never matters):

* 3-fold CV with a permutation seeded by ``random_state`` (interpolation);
* leave the largest / smallest input-size level out, and the same for executors, when the job
  has at least three levels of it (extrapolation).

Score = mean of the interpolation MAPE and the mean extrapolation-fold MAPE.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import DegenerateDataError
from . import analytical as A
from . import ml as M

log = logging.getLogger(__name__)
GIB = float(2**30)


@dataclass
class Component:
    """What a fitted model predicts with."""

    kind: str                                  # "equation", "ml" or "hybrid"
    equation: A.FittedEquation | None = None
    ml: dict | None = None                      # exported regressor (see ml.py)
    ml_target: str = "runtime"                  # "runtime" or "log_ratio" (hybrid correction)
    single_size: bool = False

    @property
    def name(self) -> str:
        if self.kind == "equation":
            return self.equation.name  # type: ignore[union-attr]
        if self.kind == "hybrid":
            return f"hybrid:{self.equation.name}"  # type: ignore[union-attr]
        return str(self.ml["type"])  # type: ignore[index]


def component_to_dict(c: Component) -> dict:
    return {"kind": c.kind, "equation": c.equation.to_dict() if c.equation else None,
            "ml": M.to_jsonable(c.ml) if c.ml else None, "ml_target": c.ml_target,
            "single_size": c.single_size}


def component_from_dict(d: dict) -> Component:
    return Component(kind=d["kind"],
                     equation=A.FittedEquation.from_dict(d["equation"]) if d.get("equation") else None,
                     ml=M.from_jsonable(d["ml"]) if d.get("ml") else None,
                     ml_target=d.get("ml_target", "runtime"), single_size=bool(d.get("single_size")))


def _design(F: dict[str, np.ndarray], extras: list[str]) -> np.ndarray:
    from .hybrid import design_matrix

    return design_matrix(F, extras)


def predict_component(c: Component, F: dict[str, np.ndarray], extras: list[str]) -> np.ndarray:
    """Runtime in seconds (≥ 1 ms) for features ``F``; numpy only."""
    S = F["input_bytes"] / GIB
    E = F["executors"]
    if c.kind == "equation":
        pred = c.equation.predict(S, E)  # type: ignore[union-attr]
    elif c.kind == "ml":
        pred = M.predict_exported(c.ml, _design(F, extras))  # type: ignore[arg-type]
    else:
        base = np.maximum(c.equation.predict(S, E), 1e-3)  # type: ignore[union-attr]
        pred = base * np.exp(M.predict_exported(c.ml, _design(F, extras)))  # type: ignore[arg-type]
    return np.maximum(np.asarray(pred, float), 1e-3)


# ---- fitting candidates ------------------------------------------------------------------
#: Residual correction of the hybrid: "tree" (one regression tree, ~1 ms) or "gbm".
CORRECTION = "tree"


def fit_component(kind: str, F: dict[str, np.ndarray], y: np.ndarray, extras: list[str],
                  random_state: int = 0, backbone: str | None = None,
                  power: int | None = None) -> Component:
    """Fit one candidate: an equation name, an ML kind, or ``hybrid`` (needs ``backbone``).

    ``power`` fixes f(S) = S**power (cross-validation reuses the power chosen on all runs).
    """
    S = F["input_bytes"] / GIB
    E = F["executors"]
    single = len(np.unique(S)) < 2
    if kind in A.EQUATIONS or kind == "hybrid":
        name = backbone if kind == "hybrid" else kind
        eq = A.fit_equation(name, S, E, y, power=1 if single else (power or "auto"), weights=1.0 / y**2,
                            allow_single_size=single)
        if kind != "hybrid":
            return Component("equation", equation=eq, single_size=single)
        base = np.maximum(eq.predict(S, E), 1e-3)
        fit = M.fit_tree if CORRECTION == "tree" else M.fit_gbm
        ml = fit(_design(F, extras), np.log(y / base), random_state)[0]
        return Component("hybrid", equation=eq, ml=ml, ml_target="log_ratio", single_size=single)
    if kind in M.ML_KINDS:
        return Component("ml", ml=M.fit_ml(kind, _design(F, extras), y, random_state))
    raise DegenerateDataError(f"unknown model kind {kind!r}")


def folds(F: dict[str, np.ndarray], random_state: int = 0) -> tuple[list[np.ndarray], list[tuple[np.ndarray, str]]]:
    """(interpolation test masks, [(extrapolation test mask, column)]) for the rows of ``F``."""
    n = len(F["executors"])
    perm = np.random.default_rng(random_state).permutation(n)
    fold = np.empty(n, int)
    fold[perm] = np.arange(n) % 3
    interp = [fold == k for k in range(3)] if n >= 6 else []
    extrap = []
    for col in ("input_bytes", "executors"):
        levels = np.unique(F[col])
        if len(levels) >= 3:
            extrap += [(F[col] == levels[-1], col), (F[col] == levels[0], col)]
    return interp, extrap


@dataclass
class CVResult:
    score: float
    interp_mape: float
    extrap_mape: float
    oof_in: np.ndarray = field(repr=False)      # log(y/ŷ) of the interpolation folds
    ext_z: np.ndarray = field(repr=False)       # log(y/ŷ) / distance of the extrapolation folds


def _distance(v: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """How far beyond [lo, hi]: v/hi − 1 above, lo/v − 1 below (as JobRuntimeModel.extrapolation)."""
    return np.where(v > hi, v / hi - 1, np.where(v < lo, lo / v - 1, 0.0))


def cross_validate(kind: str, F: dict[str, np.ndarray], y: np.ndarray, extras: list[str],
                   random_state: int = 0, backbone: str | None = None, power: int | None = None) -> CVResult:
    interp, extrap = folds(F, random_state)

    def run(test: np.ndarray) -> np.ndarray | None:
        train = ~test
        Ft = {c: v[train] for c, v in F.items()}
        try:
            comp = fit_component(kind, Ft, y[train], extras, random_state, backbone, power)
        except DegenerateDataError:
            return None
        return predict_component(comp, {c: v[test] for c, v in F.items()}, extras)

    oof = np.full(len(y), np.nan)
    for t in interp:
        p = run(t)
        if p is not None:
            oof[t] = p
    interp_mape = float(np.nanmean(np.abs(oof - y) / y)) if np.isfinite(oof).any() else np.inf
    if len(interp) and not np.isfinite(oof).all():
        interp_mape = np.inf  # a fold could not be fitted: the candidate is not robust here
    ex, zs = [], []
    for t, col in extrap:
        p = run(t)
        if p is None:
            ex.append(np.inf)
            continue
        ex.append(float(np.mean(np.abs(p - y[t]) / y[t])))
        v = F[col]
        d = _distance(v[t], float(v[~t].min()), float(v[~t].max()))
        zs.append(np.log(y[t] / p) / np.maximum(d, 1e-9))
    extrap_mape = float(np.mean(ex)) if ex else np.nan
    score = interp_mape if not ex else 0.5 * (interp_mape + extrap_mape)
    return CVResult(score, interp_mape, extrap_mape, np.log(y / oof)[np.isfinite(oof)],
                    np.concatenate(zs) if zs else np.zeros(0))


@dataclass
class Selection:
    name: str
    component: Component
    cv_mape: float
    scores: dict[str, float]
    cv: CVResult


def select(F: dict[str, np.ndarray], y: np.ndarray, extras: list[str], kind: str = "auto",
           random_state: int = 0) -> Selection:
    """Cross-validate the candidates ``kind`` allows and fit the best on all rows."""
    if kind in A.EQUATIONS or kind in M.ML_KINDS:
        comp = fit_component(kind, F, y, extras, random_state)
        cv = cross_validate(kind, F, y, extras, random_state)
        return Selection(comp.name, comp, _finite(cv.score), {comp.name: round(float(cv.score), 6)}, cv)
    # auto / hybrid: every equation is scored; the best becomes the hybrid's backbone. Each
    # equation's f(S) power is chosen once on all runs and kept in its CV folds.
    full: dict[str, Component] = {}
    results: dict[str, CVResult] = {}
    for name in A.EQUATIONS:
        if A.EQUATIONS[name].n_params + 1 > len(y):
            continue
        try:
            full[name] = fit_component(name, F, y, extras, random_state)
        except DegenerateDataError:
            continue
        pw = full[name].equation.power  # type: ignore[union-attr]
        results[name] = cross_validate(name, F, y, extras, random_state, power=pw)
    finite = {k: r for k, r in results.items() if np.isfinite(r.score)}
    if not finite:
        raise DegenerateDataError(
            f"no runtime equation can be fitted to these {len(y)} runs "
            f"({len(np.unique(F['input_bytes']))} input sizes, {len(np.unique(F['executors']))} executor counts)",
            "record runs with at least two executor counts (and several input sizes to predict other sizes)")
    backbone = min(finite, key=lambda k: (finite[k].score, k))
    bpow = full[backbone].equation.power  # type: ignore[union-attr]
    results["hybrid"] = cross_validate("hybrid", F, y, extras, random_state, backbone, bpow)
    pool = dict(finite) if kind == "auto" else {}
    if np.isfinite(results["hybrid"].score):
        pool["hybrid"] = results["hybrid"]
    if not pool:
        pool = {backbone: finite[backbone]}
    best = min(pool, key=lambda k: (pool[k].score, k))
    comp = fit_component("hybrid", F, y, extras, random_state, backbone, bpow) if best == "hybrid" \
        else full[best]
    scores = {("hybrid:" + backbone if k == "hybrid" else k): round(float(r.score), 6)
              for k, r in results.items()}
    return Selection(comp.name, comp, float(pool[best].score), scores, pool[best])


def _finite(x: float) -> float:
    return float(x) if np.isfinite(x) else float("nan")
