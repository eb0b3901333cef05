"""The combined model's prediction interval, and the chance of a run within a limit.

Split-conformal on the log scale, read from what :class:`~.hybrid.JobRuntimeModel` keeps of its
cross-validation: inside the training range the quantiles of the out-of-fold log ratios of
folds that left whole input sizes out (``residuals_``), or at a recorded size those of the
random folds (``seen_residuals_``); beyond the range a drift that grows with the distance
(``extrap_z_``); past the smallest and largest sizes a floor from the edge size; for a
resource the runs never varied (``unvaried_``), bounds from perfect scaling; beyond the
recorded executor counts, the spread of the equations the runs could not tell apart
(``executor_alternates_``). The model's
:meth:`~.hybrid.JobRuntimeModel.predict_interval` and ``chance_within`` validate the question
and call :func:`log_bounds`; this module is numpy only, like the rest of the load path.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .hybrid import JobRuntimeModel

#: Interval beyond the training range: "add" (in-range bound + distance x drift per unit
#: distance) or "max" (the wider of the two).
OUTSIDE = "add"
#: A question within this relative distance of a recorded input size asks about a size the
#: model has seen: its in-range interval is then calibrated on the random CV folds' residuals
#: (the error where other runs of the same size were in training: mostly one run's noise)
#: instead of those of folds leaving whole sizes out. Tight, because a size 1-2 % away can be
#: another input: C3O's sgd has 19,353 and 19,558 MB inputs (5 and 10 features) whose runs
#: differ by 20 %.
SEEN_SIZE_TOLERANCE = 0.01
#: chance_within: bisection steps (confidence resolved to 2**-14) and the widest confidence
#: asked for (the bounds stop growing at the extreme residual anyway)
_CHANCE_STEPS = 14
_CHANCE_MAX_CONFIDENCE = 0.999
_GIB = float(2**30)
#: conformal_bounds: how far below an integer (n + 1)·alpha may come out of the float arithmetic
_INDEX_SLACK = 1e-9
Bounds = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


def conformal_bounds(sorted_resid: np.ndarray, confidence: Any, contain: bool = True) -> Any:
    """Lower/upper log-ratio quantiles with the split-conformal finite-sample correction.

    ``confidence`` a float gives two floats; an array gives two arrays, one bound per entry.
    ``contain``: clipped to 0, so that the interval always holds the prediction; without it
    the quantiles as they are (:func:`chance_within` reads the distribution's middle so)."""
    r = np.asarray(sorted_resid, float)
    c = np.asarray(confidence, float)
    n = len(r)
    if n == 0:
        return (-math.inf, math.inf) if c.ndim == 0 else (np.full(c.shape, -math.inf), np.full(c.shape, math.inf))
    alpha = (1 - c) / 2
    # (n + 1)·alpha is an integer at many a confidence asked, and in floating point a hair below
    # it: 40 x (1 - 0.9)/2 came out 1.9999999999999996, so that the 90 % lower bound of 39
    # errors (and of 59, 79, ...) took the smallest of them, not the second, one step wider
    # than its upper bound and than the correction says
    k_hi = np.minimum(n - 1, np.ceil((n + 1) * (1 - alpha) - _INDEX_SLACK).astype(int) - 1)
    k_lo = np.maximum(0, np.floor((n + 1) * alpha + _INDEX_SLACK).astype(int) - 1)
    lo, hi = (np.minimum(r[k_lo], 0.0), np.maximum(r[k_hi], 0.0)) if contain else (r[k_lo], r[k_hi])
    return (float(lo), float(hi)) if c.ndim == 0 else (lo, hi)


def log_bounds(model: JobRuntimeModel, F: Mapping[str, np.ndarray], pred: np.ndarray,
               contain: bool = True):
    """``confidence -> (lower, upper)``: each row's interval bounds as ``log(bound / ŷ)``,
    at that row's confidence (an array), for query features ``F`` (``model._query(X)``) and
    ``pred`` being ``model.predict(X)``; see :meth:`JobRuntimeModel.predict_interval`.
    ``contain=False``: the quantiles before each part is clipped to hold the prediction
    (:func:`conformal_bounds`), for :func:`chance_within`."""
    return _flat_beyond_sizes(model, F, pred, _resource_floors(model, F, pred, contain), contain)


def _resource_floors(model: JobRuntimeModel, F: Mapping[str, np.ndarray], pred: np.ndarray,
                     contain: bool = True):
    """:func:`log_bounds` before the floor beyond flat sizes."""
    return _below_counts(model, F, pred, _spread_bounds(model, F, pred, contain), contain)


def _flat_beyond_sizes(model: JobRuntimeModel, F: Mapping[str, np.ndarray], pred: np.ndarray,
                       bounds: Bounds, contain: bool = True) -> Bounds:
    """``bounds`` with, for a row that asks for k times the largest input any run had and is
    predicted about as fast as it (``model.flat_beyond_sizes``: the runs' sizes barely changed
    their runtime, so no size term was fitted), the upper bound at least the largest size's upper
    bound times k: the work growing in step with the input, which runs that were all start-up
    cannot rule out (``flat_sizes_ = "linear"``, :data:`.hybrid.FLAT_SIZES`). The largest size's
    bound is the whole interval there (executor counts beyond the runs included), read around the
    model's prediction at that size. The lower bound stays: the prediction is what the runs
    show, a lower bound of what a larger input takes."""
    if getattr(model, "flat_sizes_", "none") != "linear":
        return bounds
    rows = np.flatnonzero(model._flat_rows(dict(F)))
    if not len(rows):
        return bounds
    top = model.training_range_["input_bytes"][1]
    F_edge = {c: v[rows] for c, v in F.items()}
    F_edge["input_bytes"] = np.full(len(rows), top)
    edge_pred = model._predicted(F_edge)
    with np.errstate(divide="ignore", invalid="ignore"):
        shift = np.log(edge_pred / pred[rows]) + np.log(F["input_bytes"][rows] / top)
    # the largest size's whole interval (beyond the counts too, with their floors)
    return _upper_at_least(bounds, len(pred), rows, shift, F_edge, edge_pred,
                           lambda G, p: _resource_floors(model, G, p, contain))


def _upper_at_least(bounds: Bounds, n: int, rows: np.ndarray, shift: np.ndarray,
                    F_edge: Mapping[str, np.ndarray], edge_pred: np.ndarray,
                    edge_bounds: Callable[[dict[str, np.ndarray], np.ndarray], Bounds]) -> Bounds:
    """``bounds`` (of ``n`` rows) with each of ``rows``' upper bound at least ``shift`` plus the
    upper bound at its edge query (``F_edge``, predicted ``edge_pred``; ``edge_bounds`` builds
    those bounds), at every confidence: the floors below the counts and beyond flat sizes. Rows
    whose shift is not finite (a prediction of 0 or inf) keep their bound."""
    keep = np.isfinite(shift)
    rows, shift = rows[keep], shift[keep]
    if not len(rows):
        return bounds
    edge = edge_bounds({c: v[keep] for c, v in F_edge.items()}, edge_pred[keep])

    def at(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = bounds(c)
        hi = np.array(np.broadcast_to(hi, (n,)), float)
        hi[rows] = np.maximum(hi[rows], shift + edge(np.broadcast_to(c, (n,))[rows])[1])
        return lo, hi
    return at


def _spread_bounds(model: JobRuntimeModel, F: Mapping[str, np.ndarray], pred: np.ndarray,
                   contain: bool = True):
    """:func:`log_bounds` before the floors below the counts and beyond flat sizes: the resource bounds shifted by
    the near-equal equations' spread, a share ``c`` of it at confidence ``c``.

    Which of those equations holds beyond the counts is not known, and every curve between the
    prediction and the furthest alternate is taken as likely as another: the central ``c`` of
    that disagreement is ``c`` times it. A shift of the whole spread at every confidence made
    an interval of confidence near 0 as wide as the spread, so that :func:`chance_within` read
    about 50 % for every limit inside it (a count predicted at 5m51s "49 %" against 3 minutes,
    the same as one predicted at 8m51s), and the advice's "most likely" count a slower one."""
    bounds = _resource_bounds(model, F, pred, contain)
    spread = _alternates_spread(model, F, pred)
    if spread is None:
        return bounds
    down, up = spread

    def at(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = bounds(c)
        return lo + c * down, hi + c * up
    return at


def _below_counts(model: JobRuntimeModel, F: Mapping[str, np.ndarray], pred: np.ndarray,
                  bounds: Bounds, contain: bool = True) -> Bounds:
    """``bounds`` with, for a row asking for k times fewer executors than any run had, the
    upper bound at least the fewest recorded count's upper bound times k (perfect scaling:
    the same work on k times fewer executors; ``below_counts_ = "perfect_scaling"``,
    :data:`.hybrid.BELOW_COUNTS`). The fewest count's bound is the whole interval there
    (sizes, unvaried resources), read around the model's prediction at that count.

    No equation slows a run down more than k times from k times fewer executors (their serial
    and communication parts only make it less), but spilling does: on C3O trained on 4-10
    nodes, the grep and sort jobs whose runs at 2 nodes lay above the upper bound ran 1.6-2.3x
    as long there as at 4, against 1.1-1.4x predicted, the near-equal equations' spread
    included. The drift below the counts, measured on the folds that leave the
    fewest count out, cannot see it: between the recorded counts the runs scaled as the
    equations say. The lower bound stays: fewer executors faster than predicted is what the
    equations' error and the drift measure."""
    if getattr(model, "below_counts_", "none") != "perfect_scaling":
        return bounds
    e_lo = model.training_range_["executors"][0]
    E = F["executors"]
    rows = np.flatnonzero(E < e_lo)
    if not len(rows):
        return bounds
    # the rows below the counts only: suggest asks the bounds of every candidate count
    F_edge = {c: v[rows] for c, v in F.items()}
    F_edge["executors"] = np.full(len(rows), e_lo)
    edge_pred = model._capped(F_edge, model._curve(F_edge))
    with np.errstate(divide="ignore", invalid="ignore"):
        shift = np.log(edge_pred / pred[rows]) + np.log(e_lo / E[rows])
    # the fewest count's own bounds (inside the counts: no spread, no floor of its own)
    return _upper_at_least(bounds, len(E), rows, shift, F_edge, edge_pred,
                           lambda G, p: _spread_bounds(model, G, p, contain))


def _alternates_spread(model: JobRuntimeModel, F: Mapping[str, np.ndarray], pred: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray] | None:
    """How far below and above the prediction (log ratio, <= 0 and >= 0) the near-equal
    equations (``executor_alternates_``, :data:`.selection.NEAR_EQUAL`) put a row that asks for
    more or fewer executors than any run had; ``None`` when no row does.

    Each alternate contributes its own speed-up from the nearest recorded count to the count
    asked, read at the input size clipped to the recorded ones (the size question is the
    drift's and the size cap's), applied to the model's prediction at that nearest count. The
    interval's bounds then shift by the widest such disagreement: the runs could not tell
    these equations apart, so which of them holds beyond the counts is not known, and one
    model's extrapolation alone put the truth outside its interval (see NEAR_EQUAL)."""
    alternates = getattr(model, "executor_alternates_", [])
    if not alternates:
        return None
    e_lo, e_hi = model.training_range_["executors"]
    E = F["executors"]
    beyond = (E > e_hi) | (E < e_lo)
    if not beyond.any():
        return None
    E_edge = np.clip(E, e_lo, e_hi)
    F_edge = dict(F, executors=E_edge)
    edge_pred = model._capped(F_edge, model._curve(F_edge))
    s_lo, s_hi = model.training_range_["input_bytes"]
    S = np.clip(F["input_bytes"], s_lo, s_hi) / _GIB
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        logs = []
        for eq in alternates:
            speedup = eq.predict(S, E) / eq.predict(S, E_edge)
            logs.append(np.log(edge_pred * speedup / pred))
        gap = np.vstack(logs)
    gap = np.where(np.isfinite(gap) & beyond, gap, 0.0)
    return np.minimum(gap.min(axis=0), 0.0), np.maximum(gap.max(axis=0), 0.0)


def _resource_bounds(model: JobRuntimeModel, F: Mapping[str, np.ndarray], pred: np.ndarray,
                     contain: bool = True):
    """:func:`log_bounds` before the near-equal equations' spread: the size bounds and those
    of resources the runs never varied."""
    bounds = _size_bounds(model, F, pred, contain)
    seen = getattr(model, "unvaried_", {})
    if not seen:
        return bounds
    # A resource every run had at one value (cores, memory per executor; hybrid.UNVARIED):
    # k times as much cannot speed a run up more than k times (perfect scaling of everything);
    # less of it cannot speed it up, and may slow it k times. The drift alone, measured on
    # sizes and executor counts, put sort's lower bound at 4 cores 20x below 1 core's.
    ratio = {c: F[c] / v for c, v in seen.items()}
    more = np.prod([np.maximum(r, 1.0) for r in ratio.values()], axis=0)
    fewer = np.prod([np.maximum(1.0 / r, 1.0) for r in ratio.values()], axis=0)
    off = (more > 1.0) | (fewer > 1.0)
    if not off.any():
        return bounds
    # Only more memory per executor, every other resource as the runs had it: a larger heap
    # gives each task more room and cannot make the run slower, so the seen value's upper
    # bound holds (the drift, measured on sizes and counts, widened sort's from 6.8 s at the
    # runs' 1 GiB to 2m36s at 64 GiB, the prediction the same 4.0 s). More cores per executor
    # share its memory among more tasks, which can: the drift's bound stays there.
    only_memory = (fewer <= 1.0) & np.all(
        [r <= 1.0 for c, r in ratio.items() if c != "executor_memory_mb"] or [np.ones(len(pred), bool)], axis=0)
    at_seen = _size_bounds(model, dict(F, **{c: np.full(len(F[c]), v) for c, v in seen.items()}), pred, contain)

    def at(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = bounds(c)
        lo0, hi0 = at_seen(c)
        # the lower bound no lower than the seen value's scaled by perfect scaling; the upper
        # bound no lower than the seen value's scaled so, and the drift's where wider (less
        # memory per task can slow a run beyond any scaling)
        return (np.where(off, np.maximum(lo, lo0 - np.log(more)), lo),
                np.where(off, np.where(only_memory, hi0, np.maximum(hi, hi0 + np.log(fewer))), hi))
    return at


def _size_bounds(model: JobRuntimeModel, F: Mapping[str, np.ndarray], pred: np.ndarray, contain: bool = True):
    """:func:`log_bounds` before the bounds of unvaried resources: the drift and the size floor."""
    drift = _drift_bounds(model, F, contain=contain)
    if model.drift_law_ == "relative":  # saved before the size floor existed: as it was then
        return drift
    lo_s, hi_s = model.training_range_["input_bytes"]
    above, below = F["input_bytes"] > hi_s, F["input_bytes"] < lo_s
    if not (above.any() or below.any()):
        return drift
    # A run does not get faster because its input grew (the rest held fixed): beyond the
    # largest size the lower bound stays at or above the largest size's, below the smallest
    # the upper bound at or below the smallest's. This keeps far lower bounds off 0 s.
    edge_F = dict(F, input_bytes=np.clip(F["input_bytes"], lo_s, hi_s))
    edge_pred = model._curve(edge_F)
    with np.errstate(divide="ignore", invalid="ignore"):
        shift = np.log(edge_pred / pred)
    above &= np.isfinite(shift)
    below &= np.isfinite(shift)
    # the edge size's unseen-size bounds: the floor carries them to another input, which
    # is a size the model has not seen (with the seen-size bounds, 6 of C3O's 147 held-out
    # smallest sizes were certified on the smallest recorded size's repeat noise)
    edge = _drift_bounds(model, edge_F, seen_sizes=False, contain=contain)
    # never past the prediction itself, so the interval always contains it
    cap = 0.0 if contain else np.inf

    def at(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = drift(c)
        lo_e, hi_e = edge(c)
        lo = np.where(above, np.minimum(np.maximum(lo, shift + lo_e), cap), lo)
        hi = np.where(below, np.maximum(np.minimum(hi, shift + hi_e), -cap), hi)
        return lo, hi
    return at


def _drift_bounds(model: JobRuntimeModel, F: Mapping[str, np.ndarray], seen_sizes: bool = True,
                  contain: bool = True):
    """:func:`log_bounds` before the size floor: the in-range bounds plus the drift;
    ``seen_sizes=False`` gives every row the unseen-size in-range bounds."""
    ext = model.extrapolation(F)
    d = ext["max"]
    out = d > 0
    in_range = _in_range_bounds(model, F, seen_sizes, contain)
    if not out.any():
        return in_range
    pooled = np.sort(np.concatenate([np.zeros(0)] + list(model.extrap_z_.values())))
    # each row: the wider of all extrapolation folds' bounds and those of the folds that
    # left the range in the same direction (column and side) as the row does
    by_exec = ext["executors"] > ext["input_bytes"]
    col_hi = np.where(by_exec, F["executors"] > model.training_range_["executors"][1],
                      F["input_bytes"] > model.training_range_["input_bytes"][1])
    groups = []
    for bx in (False, True):
        for up in (False, True):
            rows = out & (by_exec == bx) & (col_hi == up)
            if rows.any():
                k = ("executors" if bx else "input_bytes") + ("+" if up else "-")
                groups.append((rows, model.extrap_z_.get(k, np.zeros(0))))
    from .selection import drift_distance

    # A row beyond both the sizes and the counts: its upper bound also takes the other
    # column's folds' drift at that column's own distance, where wider. Read from the
    # farthest column's folds alone, the bound fell where the other column overtook it (C3O
    # sort at 24 nodes, twice its largest count: 1929 s at 1.9x its largest size, 1237 s at
    # 2.0x), so a larger input met a deadline a smaller one missed. The lower bound keeps the
    # farthest column's drift (beyond the sizes the size floor bounds it).
    others = []
    for col in ("input_bytes", "executors"):
        lo_c, hi_c = model.training_range_[col]
        for side, beyond in (("+", F[col] > hi_c), ("-", F[col] < lo_c)):
            rows = out & beyond & (by_exec != (col == "executors"))
            if rows.any():
                others.append((rows, model.extrap_z_.get(col + side, np.zeros(0)),
                               drift_distance(ext[col], "relative"), drift_distance(ext[col], model.drift_law_)))

    # The lower bound keeps the relative law: on C3O trained on a corner of the grid, runs
    # beyond d = 1 fell below a log-law lower bound (models over-predicting 3x larger inputs
    # 3-6x) but never above either law's upper bound (benchmarks/far_extrapolation.py).
    dd_lo, dd_hi = drift_distance(d, "relative"), drift_distance(d, model.drift_law_)

    def at(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lo_q, hi_q = in_range(c)
        pb = conformal_bounds(pooled, c, contain) if len(pooled) else (lo_q, hi_q)
        z_lo, z_hi = np.zeros(len(d)), np.zeros(len(d))
        for rows, z in groups:
            gb = conformal_bounds(z, c, contain) if len(z) >= 10 else pb
            z_lo[rows], z_hi[rows] = np.minimum(gb[0], pb[0])[rows], np.maximum(gb[1], pb[1])[rows]
        # the other column's drift term (the upper bound's), -inf where it has none
        o_hi = np.full(len(d), -np.inf)
        for rows, z, od_lo, od_hi in others:
            gb = conformal_bounds(z, c, contain) if len(z) >= 10 else pb
            g = np.broadcast_to(np.maximum(gb[1], pb[1]), d.shape)
            if contain:
                g = np.maximum(g, 0.0)
            with np.errstate(invalid="ignore"):  # no errors measured (g NaN), an infinite distance at 0
                term = np.where(g > 0, od_hi, od_lo) * g if OUTSIDE == "add" else od_hi * g
            # what cannot be read adds nothing: the farthest column's bound stands alone
            o_hi[rows] = np.maximum(o_hi[rows], np.where(np.isnan(term), -np.inf, term)[rows])
        if OUTSIDE == "add":
            # beyond the range: the in-range error at unseen sizes plus the drift that grows
            # with the distance (each one-sided, so the interval never narrows outside)
            if contain:
                z_lo, z_hi = np.minimum(z_lo, 0.0), np.maximum(z_hi, 0.0)
            # a drift above the prediction grows by the upper bound's law, one below it by the
            # lower's, whichever bound it falls in (unclipped, a quantile of either sign)
            hi = hi_q + np.maximum(np.where(z_hi > 0, dd_hi, dd_lo) * z_hi, o_hi)
            return (np.where(out, lo_q + np.where(z_lo < 0, dd_lo, dd_hi) * z_lo, lo_q),
                    np.where(out, hi, hi_q))
        return (np.where(out, np.minimum(lo_q, dd_lo * z_lo), lo_q),
                np.where(out, np.maximum(np.maximum(hi_q, dd_hi * z_hi), o_hi), hi_q))
    return at


def at_seen_size(model: JobRuntimeModel, F: Mapping[str, np.ndarray]) -> np.ndarray:
    """Per row, whether its input size is within :data:`SEEN_SIZE_TOLERANCE` of a size the
    model was trained on (always False for models saved before sizes were recorded)."""
    levels = model.size_levels_
    if levels is None or not len(levels) or model.seen_residuals_ is None:
        return np.zeros(len(F["input_bytes"]), bool)
    # the nearest recorded size is one of the two around each query (levels are sorted);
    # no rows x levels matrix, as a history can hold a distinct size per run
    s = F["input_bytes"]
    i = np.searchsorted(levels, s)
    below, above = levels[np.maximum(i - 1, 0)], levels[np.minimum(i, len(levels) - 1)]
    rel = np.minimum(np.abs(s / below - 1.0), np.abs(s / above - 1.0))
    return rel <= SEEN_SIZE_TOLERANCE


def _in_range_bounds(model: JobRuntimeModel, F: Mapping[str, np.ndarray], seen_sizes: bool = True,
                     contain: bool = True):
    """``confidence -> (lower, upper)`` log bounds before any drift: unseen-size residuals,
    or at a recorded size (:func:`at_seen_size`) the random folds', where narrower."""
    seen_resid = model.seen_residuals_
    seen = at_seen_size(model, F) if seen_sizes and seen_resid is not None else None
    if seen is None or seen_resid is None or not seen.any():
        return lambda c: conformal_bounds(model.residuals_, c, contain)

    def at(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = conformal_bounds(model.residuals_, c, contain)
        lo_s, hi_s = conformal_bounds(seen_resid, c, contain)
        # never wider than at an unseen size: with few runs the random folds' extreme
        # residuals can exceed the grouped folds' (tests/data/history's sort: 7.6 MiB, a
        # recorded size, got a wider interval than 7.7 MiB), though knowing the size cannot
        # make the error larger
        return np.where(seen, np.maximum(lo_s, lo), lo), np.where(seen, np.minimum(hi_s, hi), hi)
    return at


def chance_within(bounds: Bounds, pred: np.ndarray, limit: float, middle: Bounds | None = None) -> np.ndarray:
    """Per row, the chance that one run takes at most ``limit`` seconds, read from ``bounds``
    (:func:`log_bounds`); see :meth:`~.hybrid.JobRuntimeModel.chance_within`.

    ``middle``: the same bounds unclipped (``log_bounds(..., contain=False)``). The interval
    holds the prediction, so where the errors run above it (far beyond the sizes, where the
    drift's median is well above 0) even an interval of no width reaches past a limit a little
    above the prediction, and ``bounds`` alone say 50 % for every such limit (a 62x larger
    input: every count 50 %, 54 s and 11.6 s predicted against 60 s). There the chance is read
    from the unclipped lower bounds, the distribution's lower half, and is at most 50 %; so is
    a limit below the prediction where that half lies above it, or a later limit could read a
    lower chance (the clipped lower bounds say about 50 % just below the prediction)."""
    # a non-positive prediction (an equation's extrapolation gone wrong) counts as met
    target = np.log(limit / np.where(pred > 0, pred, np.nan))
    target = np.where(pred > 0, target, np.inf)
    above = target >= 0

    def smallest_reaching(bnds: Bounds, upper: np.ndarray) -> np.ndarray:
        # bisection per row for the smallest confidence whose bound reaches the limit (the
        # bounds widen monotonically with the confidence)
        c_lo, c_hi = np.zeros(len(pred)), np.full(len(pred), _CHANCE_MAX_CONFIDENCE)
        for _ in range(_CHANCE_STEPS):
            mid = (c_lo + c_hi) / 2
            lo, hi = bnds(mid)
            reach = np.where(upper, hi >= target, lo <= target)
            c_hi, c_lo = np.where(reach, mid, c_hi), np.where(reach, c_lo, mid)
        return c_hi

    c = smallest_reaching(bounds, above)
    chance = np.where(above, (1 + c) / 2, (1 - c) / 2)
    if middle is None:
        return chance
    plateau = above & (bounds(np.zeros(len(pred)))[1] >= target)
    # Below the prediction too, where the errors' middle lies above it: the clipped lower
    # bounds read about 50 % just below the prediction, and the lower half under 50 % just
    # above it, so a later deadline was less likely met (41.1 s predicted: 49 % for 40 s, 39 %
    # for 45 s, as the CLI printed them). The lower half is the distribution the plateau reads, for both.
    above_middle = ~above & (middle(np.zeros(len(pred)))[0] > 0)
    half = plateau | above_middle
    if not half.any():
        return chance
    lower_half = (1 - smallest_reaching(middle, np.zeros(len(pred), bool))) / 2
    # A limit at or above the errors' middle is an even chance there, not the bisection's
    # 49.997 %: below a floor the same at every confidence (fewer cores or memory than every
    # run had, fewer executors than any), a deadline 4x the prediction read "misses: ... more
    # likely over it than not", with the errors' middle at the prediction.
    lower_half = np.where(middle(np.zeros(len(pred)))[0] <= target, 0.5, lower_half)
    return np.where(half, np.minimum(chance, lower_half), chance)
