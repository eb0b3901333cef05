"""Has the job changed? Its newest runs against a model of its earlier ones.

A new release 1.6x slower, other machines, a Spark upgrade: the model fits every run of the job
alike, so after such a change it predicts a mix of the two regimes, right for neither, with an
interval wide enough for both. :func:`newest_shift` looks for it when the model is fitted: it
fits a model on the runs before the newest third (at most :data:`WINDOW_MAX` runs) and counts the
newest runs, from the latest back, that all lie beyond that model's interval on one side. Runs the
earlier ones cannot judge (outside their sizes, executor counts or parameters) are passed over:
an extrapolation missed by 35 % says nothing of a change, and a sweep in executor order has all
its newest runs there.

Two models must agree, each on at least :data:`MIN_RUNS` runs: first the best-scoring equation
(a few ms; each run beyond its :data:`SCREEN_LEVEL` interval), then the model of the same kind as
the job's own (each run beyond its :data:`LEVEL` interval, the one the warning states), fitted
only when the first agrees. Measured (benchmarks/regime_change.py, section regime_change of
benchmarks/RESULTS.md): on synthetic histories of 30 runs plus a change of 1.6x or 0.6x it fires
from the 3rd changed run on in every seed and never before, and on histories that did not change
(synthetic with 3-5 % noise, C3O jobs in random orders) almost never: the one firing found was
three runs in a row slowed by a neighbour, which read as a change. The combined model alone at
80 % fired on 5 of 210 C3O histories of 36 runs, hence the equation's agreement.

Numpy only, as the model's fit; nothing here is run when a model is loaded or asked.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import ModelError

#: The fewest newest runs that must agree: two runs off by 1.6x happen on a busy cluster.
MIN_RUNS = 3
#: Each of them is at least this far off the earlier runs' model (runtime / prediction, or its
#: inverse): a change of a few % is no regime, whatever the interval says.
MIN_RATIO = 1.15
#: The confidence of the interval each newest run must lie beyond (the job's own model kind).
LEVEL = 0.8
#: The same for the cheap first look (the best equation): a gate, not the test.
SCREEN_LEVEL = 0.5
#: The newest runs set aside from the earlier runs' model: this share of the runs, at most
#: WINDOW_MAX, leaving at least MIN_EARLIER. A change more recent than the window is judged by
#: runs all of the old regime; one older is still judged, by a model that saw a few of the new.
WINDOW_SHARE = 1 / 3
WINDOW_MAX = 30
MIN_EARLIER = 10
#: How far beyond the earlier runs' range a newest run may lie and still be judged (as
#: advice.EXTRAPOLATION_NOTED: the box's edge, not a size printed rounded).
INSIDE = 0.005


def newest_shift(fit: Callable[[str, Any], Any], runs: Any, rows: np.ndarray, F: dict[str, np.ndarray],
                 y: np.ndarray, kind: str, scores: dict[str, float]) -> dict[str, Any] | None:
    """The newest runs that disagree with a model of the earlier ones, or None.

    ``fit(kind, runs)`` fits a model of ``kind`` (without this check) on a part of ``runs``;
    ``rows`` are the training rows' positions in ``runs``, ``F``/``y`` their features and
    runtimes (the fit's canonical order); ``scores`` the candidates' CV scores (the best
    equation is the first look). Returns ``{"runs": k, "earlier_runs": n, "since_ms": start of
    the oldest of the k, "previous_ms": start of the latest run before it, "ratio": median
    runtime / prediction of the k, "level": LEVEL, "run_ids": [...]}``.
    """
    from . import analytical as A

    cols = runs.columns if hasattr(runs, "columns") else runs.keys()
    if "start_ms" not in cols:
        return None
    try:
        start = np.asarray(runs["start_ms"], dtype=float)[rows]
    except (TypeError, ValueError):
        return None
    if not np.isfinite(start).all():  # runs that cannot be put in order: no newest ones
        return None
    order = np.argsort(start, kind="stable")
    n = len(order)
    window = min(int(n * WINDOW_SHARE), WINDOW_MAX, n - MIN_EARLIER)
    if window < MIN_RUNS:
        return None
    earlier, newest = order[:-window], order[-window:]
    part = _take(runs, rows[earlier])
    X = {c: v[newest] for c, v in F.items()}
    yn = y[newest]
    eqs = {k: v for k, v in scores.items() if k in A.EQUATIONS and np.isfinite(v)}
    first = min(eqs, key=lambda k: (eqs[k], k)) if eqs else None
    side = None
    if first is not None and first != kind:
        try:
            counted, side, _ = _streak(fit(first, part), X, yn, SCREEN_LEVEL)
        except ModelError:  # the earlier runs alone cannot be fitted (one executor count)
            return None
        if len(counted) < MIN_RUNS:
            return None
    try:
        counted, side, ratio = _streak(fit(kind, part), X, yn, LEVEL, side)
    except ModelError:
        return None
    # a run that started at the same time as the one before it in order cannot be told apart
    # from it (`--before` its start keeps both): its place in the order is the fit's, not time's
    while counted:
        oldest = newest[counted[0]]
        at = int(np.flatnonzero(order == oldest)[0])
        if start[order[at - 1]] < start[oldest]:
            break
        counted = counted[1:]
    if len(counted) < MIN_RUNS:
        return None
    ids = np.asarray(runs["run_id"]).astype(str)[rows] if "run_id" in cols else None
    return {"runs": len(counted), "earlier_runs": len(earlier), "since_ms": int(start[oldest]),
            "previous_ms": int(start[order[at - 1]]), "runs_since": n - at,
            "ratio": float(np.median(ratio[counted])), "level": LEVEL,
            "run_ids": [] if ids is None else [str(ids[newest[j]]) for j in counted]}


def _streak(model: Any, X: dict[str, np.ndarray], y: np.ndarray, level: float,
            side: int | None = None) -> tuple[list[int], int, np.ndarray]:
    """(positions in ``X`` of the newest runs, from the latest back, that all lie beyond
    ``model``'s ``level`` interval on one ``side`` (+1 slower, -1 faster; None: the latest
    judged run's), oldest first; the side; every row's runtime / prediction). Rows outside the
    model's training range are passed over."""
    p = model.predict_interval(X, level)
    pred = np.asarray(p["predicted_runtime_s"], float)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = y / pred
    inside = np.asarray(model.extrapolation(X)["max"], float) < INSIDE
    up = inside & (y > np.asarray(p["upper_s"], float)) & (ratio >= MIN_RATIO)
    down = inside & (y < np.asarray(p["lower_s"], float)) & (ratio <= 1 / MIN_RATIO)
    judged = np.flatnonzero(inside)
    if not len(judged):
        return [], 0, ratio
    if side is None:
        side = 1 if up[judged[-1]] else -1 if down[judged[-1]] else 0
    beyond = up if side > 0 else down if side < 0 else np.zeros(len(y), bool)
    counted: list[int] = []
    for j in judged[::-1]:
        if not beyond[j]:
            break
        counted.append(int(j))
    return counted[::-1], side, ratio


def _take(runs: Any, positions: np.ndarray) -> Any:
    """The rows of a runs table (a DataFrame, or a mapping of columns) at ``positions``."""
    if hasattr(runs, "iloc"):
        return runs.iloc[positions]
    return {k: v if np.ndim(v) == 0 else np.asarray(v)[positions] for k, v in runs.items()}
