"""Where the in-range interval's residuals come from: the chosen model refitted without whole
input-size groups, so that they measure the error at an input size it has not seen.

Random cross-validation folds keep a size's repeats in training and mostly measure repeat
noise; a question about a new size faces more. :func:`grouped_residuals` is called once per
fit (:meth:`.hybrid.JobRuntimeModel.fit`); the bounds themselves are :mod:`.intervals`'.
"""
from __future__ import annotations

import numpy as np

from ..errors import DegenerateDataError
from . import analytical as A
from .selection import Component, fit_component, fold_equations, predict_component

#: Up to this many input-size levels, each is left out alone (the question a new size asks);
#: more are dealt round-robin into this many groups, each group left out in turn. With 3
#: groups, the sizes of a grid of two parameters fell one parameter value to a group (C3O's
#: pagerank: 3 page counts x 3 link counts, sorted by bytes), so each fold asked a model given
#: the parameters about a page count no run had: its upper bound at the advised count stayed
#: a median 1.43x the prediction, as wide as without the parameters, where its error near the
#: choice was 6.6 % (24.6 % without); each size left out alone, 1.21x
#: (benchmarks/advice_quality.py, leave-one-size-out, parameters given).
SIZE_GROUPS = 10
#: Residuals of the in-range interval: "size_groups" (:func:`grouped_residuals`) or "random"
#: (the 3-fold CV's out-of-fold residuals).
CALIBRATION = "size_groups"


def size_group_folds(F: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Test masks that leave out whole input-size levels: each level alone, or with more than
    :data:`SIZE_GROUPS` levels the sorted levels dealt round-robin into that many groups (so
    each fold holds out at most one edge). Empty with fewer than three size levels."""
    levels = np.unique(F["input_bytes"])
    if len(levels) < 3:
        return []
    group = np.searchsorted(levels, F["input_bytes"]) % min(SIZE_GROUPS, len(levels))
    return [group == k for k in range(min(SIZE_GROUPS, len(levels)))]


def _refit(c: Component, F: dict[str, np.ndarray], y: np.ndarray, extras: list[str],
           random_state: int, eq: A.FittedEquation | None = None) -> Component:
    """A component of the same structure (equation, power, fade, parts) fitted to other rows."""
    if c.kind == "switch":
        inner, outer = c.parts  # type: ignore[misc]
        ci = _refit(inner, F, y, extras, random_state)
        if inner.kind == outer.kind == "hybrid" and inner.equation.name == outer.equation.name:  # type: ignore[union-attr]
            co = Component("hybrid", equation=ci.equation, ml=ci.ml, ml_target=ci.ml_target,
                           single_size=ci.single_size, fade=outer.fade, box=ci.box)
        else:
            co = _refit(outer, F, y, extras, random_state)
        box = {k: (float(F[k].min()), float(F[k].max())) for k in ("input_bytes", "executors")}
        return Component("switch", parts=(ci, co), box=box)
    if c.kind == "ml":
        return fit_component(str(c.ml["type"]), F, y, extras, random_state)  # type: ignore[index]
    name = c.equation.name  # type: ignore[union-attr]
    kind = "hybrid" if c.kind == "hybrid" else name
    out = fit_component(kind, F, y, extras, random_state, backbone=name,
                        power=c.equation.power, equation=eq)  # type: ignore[union-attr]
    out.fade = c.fade
    return out


def grouped_residuals(c: Component, F: dict[str, np.ndarray], y: np.ndarray, extras: list[str],
                      random_state: int = 0) -> np.ndarray | None:
    """log(y/ŷ) of every run, predicted by ``c``'s structure refitted without its input size's
    group (:func:`size_group_folds`): the error at an input size the model has not seen, which
    is what a question about a new size faces (random folds keep the same size's repeats in
    training and mostly measure repeat noise). ``None`` when there are too few size levels or a
    fold cannot be fitted."""
    tests = size_group_folds(F)
    if not tests:
        return None
    eqs = None
    base = c.parts[0] if c.kind == "switch" else c  # type: ignore[index]
    if base.equation is not None and not base.single_size:
        eqs = fold_equations(base.equation.name, F, y, tests, base.equation.power)
    out = np.full(len(y), np.nan)
    for j, t in enumerate(tests):
        train = ~t
        Ft = {k: v[train] for k, v in F.items()}
        try:
            eq = eqs[j] if eqs is not None and c.kind != "switch" else None
            comp = _refit(c, Ft, y[train], extras, random_state, eq)
        except DegenerateDataError:
            return None
        out[t] = np.log(y[t] / predict_component(comp, {k: v[t] for k, v in F.items()}, extras))
    return out if np.isfinite(out).all() else None
