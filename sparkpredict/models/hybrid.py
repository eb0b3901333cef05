"""JobRuntimeModel: one job's runtime as a function of input size, executors and the rest.

``kind="auto"`` (the default) is the combined model. Candidates: every analytical equation
and an *equation + boosted-trees correction* (``hybrid``: the equation that extrapolates best
as backbone, a small gradient boosting on the log ratio runtime / equation, which lets trees
learn what the equation misses — the 2-node slowdown, the memory cliff — while staying flat,
i.e. a constant relative correction, beyond the data; ``hybrid~fade`` lets that correction fade
out 25 % beyond). All are scored by cross-validation on the job's own runs: 3-fold CV
(interpolation) and folds that leave out the outer size and executor levels (extrapolation).
The model then *switches*: inside the training box the best interpolating candidate predicts,
beyond it the best extrapolating one, blended over the first 10 % beyond the box (see
:mod:`.selection`). Any single candidate can be asked for with ``kind=`` (:data:`KINDS`).

Prediction intervals are split-conformal on the log scale: the out-of-fold log ratios
``log(y / ŷ)`` of the chosen model refitted without whole input-size groups give the quantiles
(the error at an input size not seen in training; at a recorded size, the random folds');
beyond the training range the interval widens with the extrapolation distance (see
:meth:`JobRuntimeModel.predict_interval` and :mod:`.intervals`, which computes the bounds).

Load path: :meth:`JobRuntimeModel.from_dict` + ``predict`` use numpy only (no pandas, no
scikit-learn, no pickle). Fitting imports scikit-learn for the trees.
"""
from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..errors import DegenerateDataError, InputError, ModelError, NotFittedError
from . import analytical as A
from . import intervals
from . import ml as M
from .columns import (
    REQUIRED,
    check_confidence,
    check_table,
    column,
    floats,
    json_float,
    n_rows,
    supported_level,
    with_runtime,
)
from .estimator import (
    RuntimeEstimator,
    checked_seed,
    kept_on_failure,
    positive_query_column,
)
from .job_runs import (
    MIN_RUNS,
    OPTIONAL,
    fitted_rows,
    latest_run_values,
    slow_runs,
    too_few_usable_runs,
    unvaried_resources,
)

log = logging.getLogger(__name__)

FORMAT = "sparkpredict-job-model"
#: Bumped when the saved layout changes; older files are refused with a "refit" hint.
FORMAT_VERSION = 1
#: what a fit puts in a resource column (OPTIONAL) that no run recorded
UNRECORDED_FILL = 1.0
EQUATION_KINDS = tuple(A.EQUATIONS)
KINDS = ("auto", "hybrid") + EQUATION_KINDS + M.ML_KINDS
#: The point prediction beyond the largest input size. "linear_pooled": as "linear", and the part
#: that grows is at least the median, over the runs' executor counts, of the share of the largest
#: size's runtime that grows (a count whose curve at 1 byte lay at or above its largest size's
#: prediction grew by nothing: the demo's 3-6 executors were "1.5 s" at 16 MB, 1 GB and 10 GB).
#: "linear" (models saved before 2026-12-04 keep it): the part of the runtime that grows with
#: the input grows at most in proportion to it, from the largest size's prediction; the part
#: that does not (the curve at a 1-byte input, the fixed cost) stays. "proportional" (the earlier
#: rule): the whole runtime grows at most in proportion, fixed cost included. "free": the fitted
#: curve's own growth (models saved before either existed). A curve fitted on a narrow range of
#: sizes extrapolates its curvature; on C3O trained on the 3-4 smallest sizes the MAPE is 34.0 %
#: pooled, 35.2 % linear, 93.8 % free (benchmarks/far_extrapolation.py). Holding the fixed cost
#: keeps counts in order: a curve whose communication term grows with E was capped for E >= 2
#: only, with its fixed cost multiplied too, and ranked 2 executors 2.3x slower than 1 at 62x
#: the largest size. The interval keeps its log widths around the capped prediction. Only the
#: combined model ("auto", "hybrid") is capped: single kinds stay the study's baselines.
SIZE_GROWTH = "linear_pooled"


#: A resource column (:data:`OPTIONAL`: cores and memory per executor) that every training run
#: recorded at one value says nothing of how the runtime depends on it: "seen_value" predicts a
#: question that leaves it as at that value, and bounds the interval by perfect scaling (see
#: :func:`.intervals.log_bounds`); "free" (models saved before) reads the fitted curve at the
#: value asked. The curve's dependence on such a column comes only through the derived inputs
#: (input per core, per MiB), which in training moved with size and executors alone; and the
#: drift that widened the interval for the distance was measured on those columns, not this
#: one: tests/data/history's sort, all runs on 1 core, got 0.12 s - 19.6 s at 4 cores against
#: 2.4 s - 5.5 s at 1: a lower bound 20x lower from 4x the cores.
#: Only the combined model ("auto", "hybrid"), like :data:`SIZE_GROWTH`.
UNVARIED = "seen_value"

#: Asked for k times fewer executors than any run had: "perfect_scaling" puts the upper bound
#: at least k times the fewest recorded count's (the same work on k times fewer executors; see
#: :func:`.intervals._below_counts`); "none" (models saved before) leaves it to the drift and
#: the near-equal equations. On C3O trained on 4-10 nodes, the runs at 2 nodes were inside the
#: 90 % interval 85.3 % of the time instead of 74.1 % (benchmarks/c3o_models.py). Only the
#: combined model ("auto", "hybrid"), like :data:`UNVARIED`.
BELOW_COUNTS = "perfect_scaling"

#: Asked for k times fewer executors than any run had, the point prediction: "weak_scaling" is
#: the geometric mean of the fitted curve's (at least the fewest count's: fewer executors are not
#: faster) and the weak-scaling reading, the curve at the fewest count and k times the input,
#: the same input per executor (capped beyond the sizes as any prediction there), never below the
#: curve's; "none" (models saved before) the curve's. The curve fitted between the counts
#: flattens where the runs did, and on C3O trained on 4-10 nodes the runs at 2 nodes were
#: slower than it said in 29 of 31 jobs (grep and sort 1.6-2.3x their 4-node time against 1.1-1.4x
#: predicted); the weak-scaling reading carries the slowdown the sizes showed at the fewest
#: count to the input per executor asked, which was right for grep and sort and too slow for
#: pagerank, whose size term did not shrink with nodes: the mean of the two took the
#: extrap_executors MAPE from 12.30 to 10.47 % (benchmarks/c3o_models.py; docs/models.md).
#: Only the combined model ("auto", "hybrid"), like :data:`BELOW_COUNTS`.
BELOW_COUNTS_PREDICTION = "weak_scaling"

#: Asked for k times the largest input any run had, where the runs' sizes barely changed their
#: runtime (:meth:`JobRuntimeModel.flat_beyond_sizes`: no size term was fitted, a sweep of a few
#: MB that was all start-up): "linear" puts the upper bound at least k times the largest size's
#: (the work growing with the input, which such runs cannot rule out; see
#: :func:`.intervals._flat_beyond_sizes`); "none" (models saved before) leaves the interval as
#: wide at 2,000x the largest size as at it. The advice warned "take the prediction as a lower
#: bound", and yet certified it: a job of 6 runs over 21-150 MB, asked about 300 GB against 45
#: minutes, "meets" with a 60 % interval of 12 s - 48 s. Only the combined model ("auto",
#: "hybrid"), like :data:`BELOW_COUNTS`.
FLAT_SIZES = "linear"


class JobRuntimeModel(RuntimeEstimator):
    """Runtime model of one job (scikit-learn style).

    Parameters
    ----------
    kind : str
        ``"auto"`` (combined model, chosen by extrapolation-aware CV), ``"hybrid"`` (best
        equation + boosted-trees correction), an equation name (:data:`analytical.EQUATIONS`),
        or ``"kernel_ridge"``, ``"gbm"``, ``"random_forest"``.
    random_state : int or None
        Seeds the trees and the CV folds: with a seed, fits are deterministic and independent of
        row order (None: a fresh seed per fit, as in scikit-learn).

    Attributes
    ----------
    name_ : str
        The model actually used (e.g. ``"hybrid:plate2d"``, ``"amdahl"``, ``"gbm"``).
    cv_mape_ : float
        Cross-validated MAPE (fraction) of the chosen model (extrapolation-aware mean).
    n_runs_ : int
    training_range_ : dict
        column -> (min, max) of the training runs.
    feature_names_ : list of str
        Model inputs: ``input_bytes, executors, executor_cores, executor_memory_mb`` + extras.
    unvaried_ : dict
        Resource column -> the one value every training run recorded for it (combined model
        only, :data:`UNVARIED`): a question asking another is predicted as at that value, its
        lower bound no faster than perfect scaling from there, its upper bound no narrower.
    unrecorded_ : list of str
        The resource columns (:data:`OPTIONAL`) no training run recorded: absent from
        ``training_range_`` and ``defaults_``, and a value asked for one is not read.
    slow_runs_ : list of (str, float)
        With a ``run_id`` column: the runs furthest above the model, as (run_id, runtime /
        the prediction of the cross-validation fold that left the run out), largest first
        (at most :data:`.job_runs.SLOW_RUNS_KEPT`).
    executor_alternates_ : list of FittedEquation
        The equations that cross-validated about as well as the best (combined model only,
        :data:`.selection.NEAR_EQUAL`). Asked for more or fewer executors than any run had,
        the interval spans their speed-ups too: the runs could not tell them apart.
    recent_shift_ : dict or None
        The job's newest runs that all lie beyond the interval of a model of its earlier runs,
        on one side (a new release, other machines: :func:`.regime.newest_shift`), as
        ``{"runs", "earlier_runs", "since_ms", "previous_ms", "runs_since", "ratio", "level",
        "run_ids"}``;
        None when they agree, or the runs have no ``start_ms`` to order them by.
    below_counts_ : str
        :data:`BELOW_COUNTS` (combined model only; ``"none"`` otherwise and in models saved
        before): asked for k times fewer executors than any run had, the upper bound is at
        least k times the fewest recorded count's.
    """

    #: False for the model of a job's earlier runs that :func:`.regime.newest_shift` fits: no
    #: look at that model's own newest runs (not a parameter: it never leaves the fit)
    _check_shift = True

    def __init__(self, *, kind: str = "auto", random_state: int | None = 0) -> None:
        self.kind = kind
        self.random_state = random_state

    # ---- fitting ------------------------------------------------------------------------
    def fit(self, runs: Any, y: Any = None) -> JobRuntimeModel:
        """Fit on the runs of one job (a DataFrame or mapping with ``runtime_s`` and the features).

        ``fit(X, y)`` as in scikit-learn works too: ``y`` is then the runtime in seconds of each
        row of ``X`` and takes the place of a ``runtime_s`` column.

        Rows with NaN, zero or negative size, executors or runtime, or more executors than
        :data:`~sparkpredict.units.MAX_EXECUTORS`, are dropped (counted in
        ``dropped_runs_``, logged); fewer than :data:`MIN_RUNS` valid runs, a single executor
        count, or (for equation kinds) a single size, raise :class:`DegenerateDataError`.
        A fit that raises leaves the model as it was.
        """
        checked_seed(self.random_state)
        with kept_on_failure(self):
            return self._fit(runs, y)

    def _fit(self, runs: Any, y: Any) -> JobRuntimeModel:
        from . import calibration, selection
        from . import ml as M

        if self.kind not in KINDS:
            raise InputError(f"unknown model kind {self.kind!r}", f"use one of {', '.join(KINDS)}")
        if y is not None:
            runs = with_runtime(runs, y)
        F, y, extras, rows = self._training_columns(runs)
        if self.kind in M.ML_KINDS and np.unique(F["executors"]).size < 2:
            # the combined model and the equations refuse it; a regressor answered every larger
            # count with the one it saw (15.09 s at any E >= 4), as if executors changed nothing
            raise DegenerateDataError(
                f"all runs have one executor count ({F['executors'][0]:g}): a {self.kind} model cannot "
                "learn how the runtime scales with executors",
                "record runs at two or more executor counts")
        self.extras_ = extras
        self.feature_names_ = list(REQUIRED + OPTIONAL) + extras
        self.n_runs_ = len(y)
        # A resource no run recorded has no range, no default and no extrapolation distance:
        # its stand-in value made a 1-core, 1-MiB executor the advice's default, and the real
        # 8 GiB "8192x the runs' largest" with an interval to match.
        self.training_range_ = {c: (float(np.min(F[c])), float(np.max(F[c])))
                                for c in self.feature_names_ if c not in self.unrecorded_}
        self.defaults_ = {c: float(np.median(F[c])) for c in OPTIONAL + tuple(extras)
                          if c not in self.unrecorded_}
        self.latest_ = latest_run_values(runs, rows, OPTIONAL + tuple(extras))
        # None: one fresh seed for the whole fit, so that every candidate is scored on the same folds
        seed = int(self.random_state) if self.random_state is not None \
            else int(np.random.default_rng().integers(2**31))
        result = selection.select(F, y, extras, kind=self.kind, random_state=seed)
        self.name_ = result.name
        self.component_ = result.component
        self.cv_mape_ = float(result.cv_mape)
        self.candidates_ = result.scores
        # Inside the training range the interval is calibrated on input sizes left out whole
        # (what a question about a new size faces); random-fold residuals only as a fallback.
        grouped = calibration.grouped_residuals(result.component, F, y, extras, seed) \
            if calibration.CALIBRATION == "size_groups" else None
        self.residuals_ = np.sort(result.cv.oof_in if grouped is None else grouped)
        # at a recorded size the random folds' residuals are the error the question faces
        self.seen_residuals_ = None if grouped is None else np.sort(result.cv.oof_in)
        self.size_levels_ = np.unique(F["input_bytes"])
        self.executor_levels_ = np.unique(F["executors"])
        self._share_cache: dict = {}  # _capped's, of the model fitted before
        self.extrap_z_ = {k: np.sort(v) for k, v in result.cv.ext_z.items()}
        self.drift_law_ = selection.DRIFT_LAW
        # the study's single-kind models keep their published form (the evaluation's baselines)
        self.size_growth_ = SIZE_GROWTH if self.kind in ("auto", "hybrid") else "free"
        self.unvaried_ = unvaried_resources(runs, rows, self.training_range_) \
            if self.kind in ("auto", "hybrid") and UNVARIED == "seen_value" else {}
        self.slow_runs_ = slow_runs(runs, rows, result.cv.oof_rows)
        self.executor_alternates_ = list(result.alternates)
        self.below_counts_ = BELOW_COUNTS if self.kind in ("auto", "hybrid") else "none"
        self.below_counts_prediction_ = BELOW_COUNTS_PREDICTION if self.kind in ("auto", "hybrid") else "none"
        self.flat_sizes_ = FLAT_SIZES if self.kind in ("auto", "hybrid") else "none"
        self.recent_shift_ = None
        if self._check_shift:
            from .regime import newest_shift

            def fit_part(kind: str, part: Any) -> JobRuntimeModel:
                m = JobRuntimeModel(kind=kind, random_state=seed)
                m._check_shift = False
                return m.fit(part)

            self.recent_shift_ = newest_shift(fit_part, runs, rows, F, y, self.kind, self.candidates_)
        return self

    def _training_columns(self, runs: Any) -> tuple[dict[str, np.ndarray], np.ndarray, list[str], np.ndarray]:
        """(features, runtimes, extra feature names, each row's position in ``runs``)."""
        check_table(runs, "runs")
        cols = list(runs.columns) if hasattr(runs, "columns") else list(runs.keys())
        missing = [c for c in REQUIRED + ("runtime_s",) if c not in cols]
        if missing:
            raise InputError(f"runs lack column(s) {', '.join(missing)}",
                             "pass a runs table (sparkpredict.features.runs.runs_table / read_runs_file)")
        if "job" in cols:
            jobs = set(np.asarray(runs["job"]).astype(str).tolist())
            if len(jobs) > 1:
                raise InputError(f"runs of {len(jobs)} jobs given to one model: {sorted(jobs)[:5]}",
                                 "fit one model per job (sparkpredict.models.persist.fit_all)")
        from ..features.runs import BASE_COLUMNS, POST_RUN_COLUMNS

        extras = []
        for c in sorted(cols):
            if c in BASE_COLUMNS or c in POST_RUN_COLUMNS or c in ("run_id",) or c in OPTIONAL:
                continue
            v = np.asarray(runs[c])
            if v.dtype.kind in "iuf":
                extras.append(c)
        F = {c: floats(runs[c], c, "runs") for c in REQUIRED}
        y = floats(runs["runtime_s"], "runtime_s", "runs")
        n = len(y)
        for c in OPTIONAL + tuple(extras):
            v = floats(runs[c], c, "runs") if c in cols else np.full(n, np.nan)
            F[c] = v
        ok = fitted_rows({**F, "runtime_s": y})
        self.dropped_runs_ = int(n - ok.sum())
        if self.dropped_runs_ and ok.sum() >= MIN_RUNS:  # else the error below says it
            log.warning("dropped %d of %d runs with NaN, zero or negative size/executors/runtime, or more "
                        "executors than any cluster has", self.dropped_runs_, n)
        if ok.sum() < MIN_RUNS:
            raise too_few_usable_runs(F["input_bytes"], F["executors"], y, automatic=self.kind in ("auto", "hybrid"))
        F = {c: v[ok] for c, v in F.items()}
        y = y[ok]
        # A runs table of several jobs holds the union of their parameters; one job's rows
        # leave the others' columns empty. Kept, they became features filled with a made-up
        # value, which the advice then assumed and accepted as declared by this job.
        empty = [c for c in extras if not np.isfinite(F[c]).any()]
        for c in empty:
            del F[c]
        extras = [c for c in extras if c not in empty]
        self.unrecorded_ = [c for c in OPTIONAL if not (np.isfinite(F[c]) & (F[c] > 0)).any()]
        for c in OPTIONAL + tuple(extras):
            v = F[c]
            good = np.isfinite(v) & (v > 0 if c in OPTIONAL else True)
            fill = float(np.median(v[good])) if good.any() else UNRECORDED_FILL
            F[c] = np.where(good, v, fill)
        # Row order must not matter (retrain inside Spark sees shuffled rows): sort canonically.
        keys = [y] + [F[c] for c in reversed(list(F))]
        order = np.lexsort(keys)
        return {c: v[order] for c, v in F.items()}, y[order], extras, np.flatnonzero(ok)[order]

    # ---- prediction ---------------------------------------------------------------------
    def _check(self) -> None:
        if not hasattr(self, "component_"):
            raise NotFittedError("the model is not fitted", "call fit(runs) or load a saved model")

    def _query(self, X: Mapping[str, Any]) -> dict[str, np.ndarray]:
        n = n_rows(X)
        F: dict[str, np.ndarray] = {}
        for c in REQUIRED:
            F[c] = positive_query_column(X, c, n)
        unrecorded = getattr(self, "unrecorded_", [])
        for c in OPTIONAL + tuple(self.extras_):
            if c in unrecorded:  # the fit saw only the stand-in: a value asked changes nothing
                F[c] = np.full(n, UNRECORDED_FILL)
                continue
            v = column(X, c, n)
            F[c] = np.full(n, self.defaults_[c]) if v is None else np.where(np.isfinite(v), v, self.defaults_[c])
        return F

    def predict(self, X: Mapping[str, Any]) -> np.ndarray:
        """Runtime in seconds for each row of ``X`` (mapping column -> 1-D array, or a DataFrame)."""
        self._check()
        return self._predicted(self._query(X))

    def _predicted(self, F: dict[str, np.ndarray]) -> np.ndarray:
        """:meth:`predict` of query columns ``F``: the curve, capped beyond the sizes, hedged
        below the counts."""
        return self._below_counts_prediction(F, self._capped(F, self._curve(F)))

    def _below_counts_prediction(self, F: dict[str, np.ndarray], pred: np.ndarray) -> np.ndarray:
        """``pred`` with the rows that ask for fewer executors than any run had predicted by
        :data:`BELOW_COUNTS_PREDICTION`."""
        if getattr(self, "below_counts_prediction_", "none") != "weak_scaling":
            return pred
        e_lo = self.training_range_["executors"][0]
        rows = np.flatnonzero(F["executors"] < e_lo)
        if not len(rows):
            return pred
        # the fewest count at the size asked and at k times it, in one evaluation: suggest
        # predicts each candidate several times, and two calls cost a third of its time
        k = e_lo / F["executors"][rows]
        both = {c: np.concatenate([v[rows], v[rows]]) for c, v in F.items()}
        both["executors"] = np.full(2 * len(rows), e_lo)
        both["input_bytes"][len(rows):] *= k
        at_edge, weak = np.split(self._capped(both, self._curve(both)), 2)
        curve = pred[rows]
        with np.errstate(invalid="ignore", over="ignore"):
            hedge = np.sqrt(np.maximum(curve, at_edge) * weak)
        out = np.array(pred, float)
        out[rows] = np.where(np.isfinite(hedge), np.maximum(curve, hedge), curve)
        return out

    def _curve(self, F: dict[str, np.ndarray]) -> np.ndarray:
        """The fitted curve's prediction for query columns ``F``, before :data:`SIZE_GROWTH`."""
        from .selection import predict_component

        unvaried = getattr(self, "unvaried_", {})
        if unvaried:  # read at the one value the runs had (UNVARIED)
            F = dict(F, **{c: np.full(len(F[c]), v) for c, v in unvaried.items()})
        return predict_component(self.component_, F, self.extras_)

    def _capped(self, F: dict[str, np.ndarray], raw: np.ndarray) -> np.ndarray:
        """``raw`` with growth beyond the largest size held to :data:`SIZE_GROWTH`, and never
        below the largest size's prediction (:func:`capped_beyond_sizes`)."""
        growth = getattr(self, "size_growth_", "free")
        top = self.training_range_["input_bytes"][1]
        counts = getattr(self, "executor_levels_", None)
        share = None
        if growth == "linear_pooled" and counts is not None and len(counts) and np.any(F["input_bytes"] > top):
            # the same for every row that shares the other columns: once per question, not once
            # per bound of it (the advice caps 8 times per call)
            others = sorted(c for c in F if c not in ("input_bytes", "executors"))
            key = tuple((c, np.asarray(F[c], float).tobytes()) for c in others)
            cache = self.__dict__.setdefault("_share_cache", {})
            share = cache.get(key)  # get, not in + []: a model shared by threads may clear it between
            if share is None:
                if len(cache) >= 64:
                    cache.clear()
                share = cache[key] = _pooled_share(self._curve, F, top, counts)
        return capped_beyond_sizes(self._curve, F, raw, self.training_range_["input_bytes"], growth, counts, share)

    def flat_beyond_sizes(self, X: Mapping[str, Any], tolerance: float = 0.01) -> np.ndarray:
        """Per row: it asks about an input at least 1.5x the largest recorded, yet is predicted
        within ``tolerance`` of the largest size's runtime. The runs' sizes changed their
        runtime too little to fit a size term (a sweep of a few MB, all start-up), so the
        prediction says nothing about how a larger input costs more."""
        self._check()
        return self._flat_rows(self._query(X), tolerance)

    def _flat_rows(self, F: dict[str, np.ndarray], tolerance: float = 0.01) -> np.ndarray:
        """:meth:`flat_beyond_sizes` of query columns ``F``."""
        top = self.training_range_["input_bytes"][1]
        far = F["input_bytes"] >= 1.5 * top
        if not far.any():
            return far
        # the curve's own growth at the count, without the growth pooled from the other counts:
        # a count that borrows it has no runs of its own that show how its runtime grows
        growth = "linear" if self.size_growth_ == "linear_pooled" else self.size_growth_
        raw = self._curve(F)
        pred = capped_beyond_sizes(self._curve, F, raw, self.training_range_["input_bytes"], growth)
        edge = self._curve(dict(F, input_bytes=np.minimum(F["input_bytes"], top)))
        return far & (pred <= edge * (1 + tolerance))

    def extrapolation(self, X: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """How far each row lies outside the training range, per feature column.

        ``v/max − 1`` above the range, ``min/v − 1`` below it, 0 inside (so 0.5 means 50 %
        beyond). Key ``"max"`` holds the largest value over the columns.
        """
        self._check()
        F = self._query(X)
        out: dict[str, np.ndarray] = {}
        for c, (lo, hi) in self.training_range_.items():
            v = F[c]
            with np.errstate(divide="ignore", invalid="ignore"):
                above = np.where(v > hi, v / hi - 1 if hi > 0 else np.inf, 0.0)
                below = np.where(v < lo, lo / np.where(v > 0, v, np.nan) - 1, 0.0)
            out[c] = np.nan_to_num(np.maximum(above, below), nan=np.inf)
        out["max"] = np.max(np.vstack(list(out.values())), axis=0) if out else np.zeros(len(F["executors"]))
        return out

    def max_confidence(self) -> float:
        """The highest confidence its intervals honour. With ``n`` out-of-fold errors a
        split-conformal bound at a confidence above ``(n - 1) / (n + 1)`` is unbounded; the
        interval stops at the widest error instead, so asking for more gets no wider (24
        runs: 92 %)."""
        return supported_level(self.interval_errors())

    def interval_errors(self) -> int:
        """How many out-of-fold errors the narrower-sampled interval stands on."""
        self._check()
        sizes = [len(r) for r in (self.residuals_, getattr(self, "seen_residuals_", None)) if r is not None]
        return min(sizes) if sizes else 0

    def predict_interval(self, X: Mapping[str, Any], confidence: float = 0.9) -> dict[str, np.ndarray]:
        """Point prediction and a ``confidence`` interval (split-conformal on the log scale).

        Inside the training range, the quantiles of the out-of-fold log ratios ``log(y/ŷ)`` of
        folds that leave out whole input-size groups bound the interval (an unseen size's error,
        :func:`.calibration.grouped_residuals`; random 3-fold residuals with fewer than three
        sizes, and at a recorded size, :meth:`at_seen_size`; :mod:`.intervals`). Outside it, at
        distance ``d`` (``extrapolation(X)["max"]``), each bound is that plus ``g(d) · z_q``
        (:data:`.intervals.OUTSIDE`), where ``z`` are the extrapolation folds' log ratios
        divided by their own distance (the wider of all folds' quantiles and those of the folds
        leaving the range in the row's direction) and ``g`` is :func:`.selection.drift_distance`: ``d`` up to 1, where the
        folds measured it, ``1 + log d`` beyond for the upper bound (``d``, capped at 10, for
        the lower). Beyond the sizes a size floor applies: the lower bound is at least the
        largest size's, and below them the upper bound at most the smallest size's, each the
        edge size's bound as for a size not recorded (a recorded size's own interval is its
        repeats' noise, narrower: carried to other sizes it undercovered them). Beyond the
        largest size the prediction is capped (:data:`SIZE_GROWTH`) and the bounds keep their
        log widths around it. For a resource every run had at one value ``v0`` (``unvaried_``)
        asked at ``v``, the prediction is that at ``v0``; with ``v > v0`` the lower bound is at
        least ``v0``'s times ``v0 / v`` (perfect scaling), with ``v < v0`` the lower bound is at
        least ``v0``'s and the upper bound at least ``v0``'s times ``v0 / v``. Beyond the
        recorded executor counts the bounds then shift by the widest disagreement of the
        near-equal equations (``executor_alternates_``) with the prediction; asked for k times
        fewer executors than any run had, the upper bound is at least k times the fewest
        recorded count's (``below_counts_``, perfect scaling).
        """
        self._check()
        confidence = check_confidence(confidence)
        pred = self.predict(X)
        lo, hi = intervals.log_bounds(self, self._query(X), pred)(np.full(len(pred), float(confidence)))
        return {"predicted_runtime_s": pred, "lower_s": pred * np.exp(lo), "upper_s": pred * np.exp(hi)}

    def chance_within(self, X: Mapping[str, Any], limit_s: float | str) -> np.ndarray:
        """Per row, the chance that one run takes at most ``limit_s`` seconds (or a duration
        such as ``"45m"``).

        The same distribution the interval reads: the interval at confidence ``c`` spans the
        ``(1 - c)/2`` and ``(1 + c)/2`` quantiles, so a limit above the prediction is met with
        chance ``(1 + c)/2`` for the ``c`` whose upper bound reaches it, one below with
        ``(1 - c)/2`` for the ``c`` whose lower bound does. Hence ``chance_within(X, t) >=
        (1 + c)/2`` exactly when ``predict_interval(X, c)["upper_s"] <= t``, for ``c`` up to
        :meth:`max_confidence`. A limit above the prediction that even an interval of no width
        reaches past (errors running above the prediction, far beyond the runs) is read from the
        unclipped lower bounds instead, at most 50 % (:func:`.intervals.chance_within`), and so is
        a limit below the prediction where the errors' middle lies above it, so that a later limit
        is never less likely met; there the lower-bound counterpart (``chance <= (1 - c)/2``
        exactly when the lower bound is not below the limit) gives way. It saturates at
        the residuals' resolution: within ``[1/(n + 1), n/(n + 1)]`` for ``n`` out-of-fold
        errors (:meth:`max_confidence`), since ``n`` errors cannot tell 99 % from 92 % (12 runs
        had stated ">99%").
        """
        self._check()
        from ..units import parse_duration

        # "45m" as suggest_executors(deadline_s=) reads it; None or an array is refused, not a
        # raw TypeError from float()
        try:
            limit = parse_duration(limit_s) if isinstance(limit_s, str) else float(limit_s)
        except (TypeError, ValueError, InputError):
            limit = math.nan
        if not (math.isfinite(limit) and limit > 0):
            raise InputError(f"limit must be a positive number of seconds or a duration, got {limit_s!r}",
                             "give one deadline, e.g. 2700 (seconds) or '45m'")
        pred = self.predict(X)
        F = self._query(X)
        chance = intervals.chance_within(intervals.log_bounds(self, F, pred), pred, limit,
                                         intervals.log_bounds(self, F, pred, contain=False))
        n = self.interval_errors()
        return np.clip(chance, 1 / (n + 1), n / (n + 1)) if n else chance

    def at_seen_size(self, X: Mapping[str, Any]) -> np.ndarray:
        """Per row, whether its input size is within :data:`.intervals.SEEN_SIZE_TOLERANCE` of a
        size the model was trained on, where the interval is calibrated on runs of that size
        (always False for models saved before sizes were recorded)."""
        self._check()
        return intervals.at_seen_size(self, self._query(X))

    # ---- persistence --------------------------------------------------------------------
    def to_dict(self) -> dict:
        """JSON-safe state (no pickle); :meth:`from_dict` restores it."""
        self._check()
        from .selection import component_to_dict

        return {"format": FORMAT, "version": FORMAT_VERSION, "kind": self.kind,
                "random_state": checked_seed(self.random_state), "name": self.name_, "cv_mape": json_float(self.cv_mape_),
                "n_runs": self.n_runs_, "dropped_runs": self.dropped_runs_,
                "feature_names": self.feature_names_, "extras": self.extras_,
                "training_range": {k: list(v) for k, v in self.training_range_.items()},
                "defaults": self.defaults_, "latest": self.latest_,
                "candidates": {k: json_float(v) for k, v in self.candidates_.items()},
                "residuals": [float(r) for r in self.residuals_],
                "extrap_z": {k: [float(r) for r in v] for k, v in self.extrap_z_.items()},
                "drift_law": self.drift_law_, "size_growth": self.size_growth_,
                "unvaried": dict(self.unvaried_), "unrecorded": list(self.unrecorded_),
                "seen_residuals": None if self.seen_residuals_ is None
                else [float(r) for r in self.seen_residuals_],
                "size_levels": [float(v) for v in self.size_levels_],
                "executor_levels": [float(v) for v in getattr(self, "executor_levels_", [])],
                "slow_runs": [[r, x] for r, x in self.slow_runs_],
                "executor_alternates": [e.to_dict() for e in getattr(self, "executor_alternates_", [])],
                "below_counts": getattr(self, "below_counts_", "none"),
                "below_counts_prediction": getattr(self, "below_counts_prediction_", "none"),
                "flat_sizes": getattr(self, "flat_sizes_", "none"),
                "recent_shift": _shift_doc(getattr(self, "recent_shift_", None)),
                "component": component_to_dict(self.component_)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> JobRuntimeModel:
        """Restore a model saved by :meth:`to_dict` (numpy only)."""
        from .selection import component_from_dict

        if d.get("format") != FORMAT:
            raise ModelError("not a sparkpredict job model", "refit with `sparkpredict fit`")
        if d.get("version") != FORMAT_VERSION:
            raise ModelError(f"saved model has format version {d.get('version')}; this sparkpredict "
                             f"reads version {FORMAT_VERSION}", "refit with `sparkpredict fit RUNS --out DIR`")
        m = cls(kind=d["kind"], random_state=None if d["random_state"] is None else int(d["random_state"]))
        m.name_ = d["name"]
        m.cv_mape_ = math.nan if d["cv_mape"] is None else float(d["cv_mape"])
        m.n_runs_ = int(d["n_runs"])
        m.dropped_runs_ = int(d.get("dropped_runs", 0))
        m.feature_names_ = list(d["feature_names"])
        m.extras_ = list(d["extras"])
        m.training_range_ = {k: (float(v[0]), float(v[1])) for k, v in d["training_range"].items()}
        m.defaults_ = {k: _finite(v, f"default of {k}") for k, v in d["defaults"].items()}
        m.latest_ = {k: float(v) for k, v in d.get("latest", {}).items()}  # saved before: none
        # None: a candidate no fold could score (JSON has no infinity)
        m.candidates_ = {k: math.inf if v is None else float(v) for k, v in d.get("candidates", {}).items()}
        m.residuals_ = _floats(d["residuals"], "residuals")
        m.extrap_z_ = {k: _floats(v, f"extrap_z {k}") for k, v in d["extrap_z"].items()}
        # saved before the law was recorded: the drift grew with the relative distance then
        m.drift_law_ = str(d.get("drift_law", "relative"))
        # saved before the cap existed: the fitted curve's own growth, as then
        m.size_growth_ = str(d.get("size_growth", "free"))
        # saved before the rule existed: the fitted curve at the value asked, as then
        # NaN: the advice's warning for another value died converting it to a whole count
        m.unvaried_ = {str(k): _finite(v, f"value every run had of {k}") for k, v in d.get("unvaried", {}).items()}
        # saved before: such a column kept its stand-in range and default, as then
        m.unrecorded_ = [str(c) for c in d.get("unrecorded", [])]
        # saved before seen sizes were recorded: every size gets the unseen-size interval
        seen = d.get("seen_residuals")
        m.seen_residuals_ = None if seen is None else _floats(seen, "seen_residuals")
        m.size_levels_ = _floats(d.get("size_levels", []), "size_levels")
        # saved before they were kept: no pooled growth (their size_growth_ predates it)
        m.executor_levels_ = _floats(d.get("executor_levels", []), "executor_levels")
        # saved before they were kept: none known (explain --job then ranks in-sample)
        m.slow_runs_ = [(str(r), float(x)) for r, x in d.get("slow_runs", [])]
        # saved before they were kept: the interval beyond the executor counts is the drift's alone
        m.executor_alternates_ = [A.FittedEquation.from_dict(e) for e in d.get("executor_alternates", [])]
        # saved before the rule existed: no perfect-scaling floor below the counts, as then
        m.below_counts_ = str(d.get("below_counts", "none"))
        # saved before the rule existed: the curve's prediction below the counts, as then
        m.below_counts_prediction_ = str(d.get("below_counts_prediction", "none"))
        # saved before the rule existed: no growth of the upper bound beyond flat sizes, as then
        m.flat_sizes_ = str(d.get("flat_sizes", "none"))
        # saved before the check existed: no change of regime known
        m.recent_shift_ = _shift_doc(d.get("recent_shift"))
        m.component_ = component_from_dict(d["component"])
        return m

    def __repr__(self) -> str:
        if hasattr(self, "name_"):
            return f"JobRuntimeModel(name_={self.name_!r}, n_runs_={self.n_runs_}, cv_mape_={self.cv_mape_:.3f})"
        return f"JobRuntimeModel(kind={self.kind!r}, random_state={self.random_state})"


def _finite(v: Any, what: str) -> float:
    """A saved number that must be finite: a default edited to NaN loaded (the loader's check
    gives every column it knows), and every query that left the column out predicted NaN s."""
    x = float(v)
    if not math.isfinite(x):
        raise ValueError(f"the {what} is {x}")
    return x


def _floats(v: Any, what: str) -> np.ndarray:
    """A saved list of numbers as a 1-d array. A number or null where the list was (a file
    edited by hand) made a 0-d array that loaded, and failed at the first prediction beyond
    the training range (a ValueError inside the interval's concatenation, a TypeError from
    len()), past the loader's check, which predicts inside the range."""
    a = np.asarray(v, float)
    if a.ndim != 1:
        raise ValueError(f"{what} must be a list of numbers, not {type(v).__name__}")
    if np.isnan(a).any():
        # a null item (NaN in JSON): no fit writes one, and a NaN extrapolation error made every
        # interval beyond the range NaN s, which the advice showed as its upper bound
        raise ValueError(f"{what} holds a null or NaN")
    return a


def _shift_doc(shift: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """:attr:`JobRuntimeModel.recent_shift_` as JSON keeps it (and back): plain numbers."""
    if not shift:
        return None
    return {"runs": int(shift["runs"]), "earlier_runs": int(shift["earlier_runs"]),
            "since_ms": int(shift["since_ms"]), "previous_ms": int(shift["previous_ms"]),
            "runs_since": int(shift["runs_since"]), "ratio": float(shift["ratio"]), "level": float(shift["level"]),
            "run_ids": [str(r) for r in shift.get("run_ids", [])]}


def capped_beyond_sizes(curve: Callable[[dict[str, np.ndarray]], np.ndarray], F: dict[str, np.ndarray],
                        raw: np.ndarray, sizes: tuple[float, float], growth: str,
                        counts: np.ndarray | None = None, share: np.ndarray | None = None) -> np.ndarray:
    """``raw`` (``curve(F)``) with growth beyond the largest of ``sizes`` (the runs' smallest
    and largest input) held to ``growth`` (:data:`SIZE_GROWTH`), and never below the largest
    size's prediction: a run does not get faster because its input grew (a switch whose
    outside curve fitted no size term predicted 4.13 s at the largest size, 8 MB, and 3.89 s
    at 9 MB and at 100 GB). Likewise below the smallest size the prediction is at most the
    smallest size's. ``counts``: the runs' executor counts, for "linear_pooled" (``share``: their
    pooled share per row of ``F``, :func:`_pooled_share`, when the caller has it)."""
    low, top = sizes
    below = F["input_bytes"] < low
    if below.any():
        floor_edge = curve(dict(F, input_bytes=np.maximum(F["input_bytes"], low)))
        raw = np.where(below, np.minimum(raw, floor_edge), raw)
    above = F["input_bytes"] > top
    if not above.any():
        return raw
    edge = curve(dict(F, input_bytes=np.minimum(F["input_bytes"], top)))
    ratio = F["input_bytes"] / top
    out = raw
    if growth == "proportional":
        out = np.minimum(raw, edge * ratio)
    elif growth in ("linear", "linear_pooled"):
        grows = edge - _fixed_cost(curve, F, edge)
        out = np.minimum(raw, edge + grows * (ratio - 1))
        if growth == "linear_pooled" and counts is not None and len(counts):
            # At least the share of the runtime that grows with the input at the runs' counts
            # (their median): a count whose curve at 1 byte lay at or above its largest size's
            # prediction grew by nothing, and the demo's wordcount, 2-16 MB, was advised 3
            # executors, "~1.5s", at 16 MB, 1 GB and 10 GB alike (2 executors: 220 s at 10 GB).
            if share is None:
                share = _pooled_share(curve, F, top, counts)
            floor = edge * (1 + share * (ratio - 1))
            out = np.maximum(out, floor)
    return np.where(above, np.maximum(out, edge), raw)


def _fixed_cost(curve: Callable[[dict[str, np.ndarray]], np.ndarray], F: dict[str, np.ndarray],
                edge: np.ndarray) -> np.ndarray:
    """The part of the runtime that does not grow with the input: the curve at a 1-byte input (0
    is outside some curves' domain), between 0 and the largest size's prediction ``edge``."""
    at_one = curve(dict(F, input_bytes=np.ones_like(F["input_bytes"])))
    return np.clip(np.nan_to_num(at_one, nan=0.0, posinf=0.0, neginf=0.0), 0.0, edge)


def _pooled_share(curve: Callable[[dict[str, np.ndarray]], np.ndarray], F: dict[str, np.ndarray],
                  top: float, counts: np.ndarray) -> np.ndarray:
    """Per query row: the median, over the runs' executor ``counts``, of the share of the
    largest size's runtime that grows with the input (the row's other columns kept)."""
    # once per distinct row of the other columns (the advice's candidates share them all)
    others = [c for c in F if c not in ("input_bytes", "executors")]
    n = len(F["input_bytes"])
    if others:
        keys, row_of = np.unique(np.column_stack([np.asarray(F[c], float) for c in others]), axis=0,
                                 return_inverse=True)
    else:
        keys, row_of = np.zeros((1, 0)), np.zeros(n, dtype=int)
    u, k = len(keys), len(counts)
    G = {c: np.repeat(keys[:, i], k) for i, c in enumerate(others)}
    G["executors"] = np.tile(np.asarray(counts, float), u)
    G["input_bytes"] = np.full(u * k, float(top))
    edge = curve(G)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(edge > 0, (edge - _fixed_cost(curve, G, edge)) / edge, 0.0)
    return np.median(np.nan_to_num(share, nan=0.0).reshape(u, k), axis=1)[np.ravel(row_of)]
