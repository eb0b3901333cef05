"""Candidates of a job's runtime model, their extrapolation-aware cross-validation, and the choice.

A *component* is what a fitted :class:`~sparkpredict.models.hybrid.JobRuntimeModel` predicts
with: an analytical equation, an exported ML regressor, or both (``hybrid``: equation times
``exp(trees)``). Prediction needs numpy only; fitting imports scikit-learn for trees.

Folds (on canonically sorted rows, so row order never matters):

* 3-fold CV with a permutation seeded by ``random_state`` (interpolation);
* leave the largest / smallest input-size level out, and the same for executors, when the job
  has at least three levels of it (extrapolation).

Score = mean of the interpolation MAPE and the mean extrapolation-fold MAPE. ``auto`` then
builds a ``switch`` component: the candidate with the best interpolation MAPE inside the training
box, the one with the best extrapolation-fold MAPE beyond it, blended geometrically over
:data:`BLEND` (relative distance). Beyond the box the outer candidate gives the *shape* only: its
ratio to its own value at the nearest point of the box, times the inner candidate's value there
(:func:`_anchored`), so predictions do not jump at the edge (an equation 27 % below the
interpolator at the largest count made the next count look like a knee).

Speed: all folds of an equation are one batched NNLS (0/1 weights), shared with the hybrid
that uses it as backbone. Interval calibration (:func:`.calibration.grouped_residuals`) refits
the chosen structure on more folds that leave out whole input sizes (one per size, up to
:data:`.calibration.SIZE_GROUPS`).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from ..errors import DegenerateDataError
from ..units import plural
from . import analytical as A
from . import ml as M
from .columns import is_range

log = logging.getLogger(__name__)
GIB = float(2**30)


@dataclass
class Component:
    """What a fitted model predicts with."""

    kind: str                                  # "equation", "ml", "hybrid" or "switch"
    equation: A.FittedEquation | None = None
    ml: dict | None = None                      # exported regressor (see ml.py)
    ml_target: str = "runtime"                  # "runtime" or "log_ratio" (hybrid correction)
    single_size: bool = False
    #: hybrid only: the correction fades linearly to 0 at this distance beyond the training box
    #: (input size and executors); None keeps it flat (trees' own constant extrapolation).
    fade: float | None = None
    box: dict[str, tuple[float, float]] | None = None
    #: switch only: (inside, outside) components, blended over BLEND beyond the training box
    parts: tuple[Component, Component] | None = None

    @property
    def name(self) -> str:
        if self.kind == "switch":
            return f"{self.parts[0].name}|{self.parts[1].name}"  # type: ignore[index]
        if self.kind == "equation":
            return self.equation.name  # type: ignore[union-attr]
        if self.kind == "hybrid":
            return f"hybrid:{self.equation.name}" + ("" if self.fade is None else "~fade")  # type: ignore[union-attr]
        return str(self.ml["type"])  # type: ignore[index]


def component_to_dict(c: Component) -> dict:
    if c.kind == "switch":
        return {"kind": "switch", "parts": [component_to_dict(p) for p in c.parts],  # type: ignore[union-attr]
                "box": {k: list(v) for k, v in c.box.items()} if c.box else None}
    return {"kind": c.kind, "equation": c.equation.to_dict() if c.equation else None,
            "ml": M.to_jsonable(c.ml) if c.ml else None, "ml_target": c.ml_target,
            "single_size": c.single_size, "fade": c.fade,
            "box": {k: list(v) for k, v in c.box.items()} if c.box else None}


def component_from_dict(d: dict) -> Component:
    if d["kind"] == "switch":
        inner, outer = (component_from_dict(p) for p in d["parts"])
        return Component("switch", parts=(inner, outer), box=_box(d["box"]))
    # what each kind predicts with must be there: the switch's outer part (beyond the runs) of no
    # kind, or without its equation, loaded and passed the check inside the range, and the first
    # row beyond it raised a bare TypeError or AttributeError out of `predict` and `suggest`
    needs = {"equation": ("equation",), "ml": ("ml",), "hybrid": ("equation", "ml")}.get(d["kind"])
    if needs is None:
        raise ValueError(f"a component of unknown kind {d['kind']!r}")
    if not all(d.get(part) for part in needs):
        raise ValueError(f"a component of kind {d['kind']!r} lacks its {' and '.join(needs)}")
    return Component(kind=d["kind"],
                     equation=A.FittedEquation.from_dict(d["equation"]) if d.get("equation") else None,
                     ml=M.from_jsonable(d["ml"]) if d.get("ml") else None,
                     ml_target=d.get("ml_target", "runtime"), single_size=bool(d.get("single_size")),
                     fade=d.get("fade"),
                     box=_box(d["box"]) if d.get("box") else None)


def _box(d: dict) -> dict[str, tuple[float, float]]:
    """A saved box of training ranges; a bound edited to NaN (or cut) read every row beyond it as
    inside it, or predicted NaN seconds there, past the loader's check inside the range."""
    box = {k: (float(v[0]), float(v[1])) for k, v in d.items()}
    for k, (lo, hi) in box.items():
        if not is_range(lo, hi):
            raise ValueError(f"the range of {k} of a component is [{lo}, {hi}]")
    return box


def _design(F: dict[str, np.ndarray], extras: list[str]) -> np.ndarray:
    from .job_runs import design_matrix

    return design_matrix(F, extras)


def predict_component(c: Component, F: dict[str, np.ndarray], extras: list[str]) -> np.ndarray:
    """Runtime in seconds (≥ 1 ms) for features ``F``; numpy only."""
    S = F["input_bytes"] / GIB
    E = F["executors"]
    if c.kind == "switch":
        inner, outer = c.parts  # type: ignore[misc]
        d = np.max([_distance(F[k], lo, hi) for k, (lo, hi) in c.box.items()], axis=0)  # type: ignore[union-attr]
        w = np.clip(d / BLEND, 0.0, 1.0)
        pred = np.ones(len(d))
        if (w < 1).any():
            pred = pred * predict_component(inner, F, extras) ** (1 - w)
        if (w > 0).any():
            pred = pred * _anchored(inner, outer, F, extras, c.box) ** w  # type: ignore[arg-type]
        return np.maximum(pred, 1e-3)
    if c.kind == "equation":
        pred = c.equation.predict(S, E)  # type: ignore[union-attr]
    elif c.kind == "ml":
        pred = M.predict_exported(c.ml, _design(F, extras))  # type: ignore[arg-type]
    else:
        base = np.maximum(c.equation.predict(S, E), 1e-3)  # type: ignore[union-attr]
        G = F
        if c.box and "executors" in c.box:
            # beyond the counts the correction is the edge's: the design's ratios (S/E, S/(E*C))
            # fell back inside the training range there, so the trees applied the correction of
            # another size's count (a 43 % drop from 4 to 5 executors, where 4 was the most)
            G = dict(F, executors=np.clip(F["executors"], *c.box["executors"]))
        corr = M.predict_exported(c.ml, _design(G, extras))  # type: ignore[arg-type]
        if c.fade is not None and c.box:
            d = np.max([_distance(F[k], lo, hi) for k, (lo, hi) in c.box.items()], axis=0)
            corr = corr * np.clip(1 - d / c.fade, 0.0, 1.0)
        pred = base * np.exp(corr)
    return np.maximum(np.asarray(pred, float), 1e-3)


def _anchored(inner: Component, outer: Component, F: dict[str, np.ndarray], extras: list[str],
              box: dict[str, tuple[float, float]]) -> np.ndarray:
    """The outer candidate's prediction scaled to meet the inner one at the box's nearest point:
    ``outer(F) / outer(edge) * inner(edge)``, continuous at the edge whatever the two predict there."""
    edge = dict(F, **{k: np.clip(F[k], lo, hi) for k, (lo, hi) in box.items()})
    return predict_component(outer, F, extras) * (predict_component(inner, edge, extras)
                                                  / predict_component(outer, edge, extras))


# ---- fitting candidates ------------------------------------------------------------------
#: Switch: inside the training box the best interpolating candidate, beyond it the best
#: extrapolating one, blended geometrically over this relative distance.
BLEND = 0.1
#: Which candidate predicts beyond the training box: "cv" (best extrapolation-fold MAPE) or
#: "backbone" (the backbone equation itself).
OUTER = "cv"
#: Fade distances tried for the hybrid's correction outside the training box (None = flat).
FADES: tuple[float | None, ...] = (None, 0.25)


#: Boosting stages and learning rate of the hybrid's residual correction (gradient boosting).
CORRECTION_STAGES, CORRECTION_RATE = 30, 0.2


def _fit_correction(X: np.ndarray, r: np.ndarray) -> dict:
    # numpy, not scikit-learn: its import alone took longer than a first suggest's fit
    from .small_gbm import fit_gbm

    return fit_gbm(X, r, n_estimators=CORRECTION_STAGES, learning_rate=CORRECTION_RATE)


def fit_component(kind: str, F: dict[str, np.ndarray], y: np.ndarray, extras: list[str],
                  random_state: int = 0, backbone: str | None = None,
                  power: int | None = None, equation: A.FittedEquation | None = None) -> Component:
    """Fit one candidate: an equation name, an ML kind, or ``hybrid`` (needs ``backbone``).

    ``power`` fixes f(S) = S**power (cross-validation reuses the power chosen on all runs);
    ``equation`` is the equation already fitted to these rows (CV fits all folds in one batch).
    """
    S = F["input_bytes"] / GIB
    E = F["executors"]
    single = len(np.unique(S)) < 2
    if kind in A.EQUATIONS or kind == "hybrid":
        name = backbone if kind == "hybrid" else kind
        if equation is not None:
            eq = equation
        elif name is None:
            raise DegenerateDataError("a hybrid needs a backbone equation",
                                      f"pass backbone, one of {', '.join(A.EQUATIONS)}")
        else:
            eq = A.fit_equation(name, S, E, y, power=1 if single else (power or "auto"),
                                weights=1.0 / y**2, allow_single_size=single)
        if kind != "hybrid":
            return Component("equation", equation=eq, single_size=single)
        base = np.maximum(eq.predict(S, E), 1e-3)
        ml = _fit_correction(_design(F, extras), np.log(y / base))
        box = {k: (float(F[k].min()), float(F[k].max())) for k in ("input_bytes", "executors")}
        return Component("hybrid", equation=eq, ml=ml, ml_target="log_ratio", single_size=single, box=box)
    if kind in M.ML_KINDS:
        return Component("ml", ml=M.fit_ml(kind, _design(F, extras), y, random_state))
    raise DegenerateDataError(f"unknown model kind {kind!r}")


def folds(F: dict[str, np.ndarray], random_state: int = 0, fittable_only: bool = False
          ) -> tuple[list[np.ndarray], list[tuple[np.ndarray, str]]]:
    """(interpolation test masks, [(extrapolation test mask, column)]) for the rows of ``F``.

    ``fittable_only`` leaves out the folds whose training runs no equation can be fitted to
    (fewer than :data:`_FIT_MIN_RUNS`, or one executor count): :func:`select`'s second try for
    a few runs, where one such fold scored every candidate as infinite.
    """
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
    if fittable_only:
        interp = [t for t in interp if _fittable(F, ~t)]
        extrap = [(t, c) for t, c in extrap if _fittable(F, ~t)]
    return interp, extrap


def _fittable(F: dict[str, np.ndarray], train: np.ndarray) -> bool:
    """Can any equation be fitted to these training runs (enough of them, two executor counts)?"""
    return int(train.sum()) >= _FIT_MIN_RUNS and len(np.unique(F["executors"][train])) >= 2


def fold_equations(name: str | None, F: dict[str, np.ndarray], y: np.ndarray, tests: list[np.ndarray],
                   power: int | None) -> list[A.FittedEquation | None] | None:
    """Equation ``name`` fitted on the training rows of every fold in one batch (``None`` for a
    fold that cannot be fitted); ``None`` overall where the batched path does not apply (no fixed
    power, or one input size: then each fold is fitted on its own as before)."""
    if name is None or power is None or len(np.unique(F["input_bytes"])) < 2:
        return None
    S = F["input_bytes"] / GIB
    return A.fit_equation_folds(name, S, F["executors"], y, [~t for t in tests], power=power,
                                weights=1.0 / y**2)


@dataclass
class CVResult:
    score: float
    interp_mape: float
    extrap_mape: float
    oof_in: np.ndarray = field(repr=False)      # log(y/ŷ) of the interpolation folds
    ext_z: dict[str, np.ndarray] = field(repr=False)  # log(y/ŷ) / distance, per "<column><+|->"
    #: oof_in per training row, in row order (NaN where the row's fold could not be fitted)
    oof_rows: np.ndarray | None = field(default=None, repr=False)


#: An extrapolation fold whose held-out level lies less than this (relative distance) beyond
#: the others counts as this far away when its error becomes a drift per unit distance. Its
#: error there is mostly the unseen-size error the in-range bound already covers; divided by
#: a distance of a few % it became a drift that blew up far bounds (upper bound / prediction
#: up to 90,000x on C3O's held-out edge sizes without the floor; 19x with 0.25, while the 90 %
#: coverage of the study's splits went from 91.0 % to 89.9 %: benchmarks/RESULTS.md,
#: advice_quality and c3o_models).
Z_MIN_DISTANCE = 0.25
#: How each equation's f(S) = S**power is chosen: "cv" (the better cross-validation score,
#: power 1 on a tie) or "sse" (the smaller weighted in-sample error, as before 2026-11-30).
POWER_CHOICE = "cv"

#: What the extrapolation folds' drift is measured on: "shipped" (the prediction as the
#: combined model gives it, capped beyond the sizes by :data:`.hybrid.SIZE_GROWTH`) or "curve"
#: (the fitted curve before the cap, as before 2026-12-02). The interval is put around the
#: capped prediction; measured on the curve, a job whose runtime truly grows with the square of
#: its input got a drift of a few % (the curve was right) around a capped prediction 8x too
#: low at 8x its largest input: no run at 4x or 8x inside the 90 % interval in 4 seeds.
DRIFT_OF = "shipped"

#: How the drift per unit distance scales with the distance d beyond the range: "linear_log"
#: (d up to 1, then 1 + log d) or "relative" (d, capped at 10: models saved before the law was
#: recorded). The extrapolation folds measure the drift at d <= 1 (a left-out level rarely lies
#: more than twice the next); beyond that nothing was measured, and a linear drift on the log
#: scale would make the error grow exponentially with the size ratio, which no mechanism does:
#: a mis-estimated size exponent errs by a power of the ratio, i.e. linearly in log d.
DRIFT_LAW = "linear_log"


def drift_distance(d: np.ndarray, law: str = DRIFT_LAW) -> np.ndarray:
    """What the drift per unit distance is multiplied by at distance ``d`` (:func:`_distance`)."""
    d = np.asarray(d, float)
    if law == "relative":
        return np.minimum(d, 10.0)
    return np.where(d <= 1.0, d, 1.0 + np.log(np.maximum(d, 1.0)))


def _distance(v: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """How far beyond [lo, hi]: v/hi − 1 above, lo/v − 1 below (as JobRuntimeModel.extrapolation)."""
    return np.where(v > hi, v / hi - 1, np.where(v < lo, lo / v - 1, 0.0))


def cross_validate(kind: str, F: dict[str, np.ndarray], y: np.ndarray, extras: list[str],
                   random_state: int = 0, backbone: str | None = None, power: int | None = None,
                   fades: tuple[float | None, ...] = (None,), cache: dict | None = None,
                   fittable_only: bool = False, size_growth: str = "free") -> list[CVResult]:
    """CV of one candidate; for a hybrid one result per fade variant (same fits, other predictions).

    ``cache`` (one dict per :func:`select` call) shares the batched fold fits of an equation
    between its own CV and the hybrid's that uses it as backbone (same folds, power, weights).
    ``fittable_only``: see :func:`folds`. ``size_growth``: the cap the fitted model will put on
    its growth beyond the sizes (:data:`.hybrid.SIZE_GROWTH`); the extrapolation folds' drift
    (``ext_z``) is then measured on the prediction so capped, the one the interval is put
    around (:data:`DRIFT_OF`), while the scores stay the curve's.
    """
    from .hybrid import capped_beyond_sizes

    if DRIFT_OF == "curve":
        size_growth = "free"
    interp, extrap = folds(F, random_state, fittable_only)
    covered = np.logical_or.reduce(interp) if interp else np.zeros(len(y), bool)
    nv = len(fades)
    tests = list(interp) + [t for t, _ in extrap]
    eqs = None
    if kind in A.EQUATIONS or kind == "hybrid":
        name = kind if kind in A.EQUATIONS else backbone
        cache_key = (name, power)
        if cache is not None and cache_key in cache:
            eqs = cache[cache_key]
        else:
            eqs = fold_equations(name, F, y, tests, power)
            if cache is not None:
                cache[cache_key] = eqs
    fold_no = {id(t): j for j, t in enumerate(tests)}

    def run(test: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]] | None:
        """Per fade variant: (the curve's prediction of the test rows, the prediction capped
        as the fitted model would cap it beyond the fold's sizes)."""
        train = ~test
        Ft = {c: v[train] for c, v in F.items()}
        # a fold the batch could not fit goes the single-fit way (its fallbacks and errors)
        eq = eqs[fold_no[id(test)]] if eqs is not None else None
        try:
            comp = fit_component(kind, Ft, y[train], extras, random_state, backbone, power, equation=eq)
        except DegenerateDataError:
            return None
        Fq = {c: v[test] for c, v in F.items()}
        sizes = (float(Ft["input_bytes"].min()), float(Ft["input_bytes"].max()))
        counts = np.unique(Ft["executors"])
        out = []
        for fd in fades:
            comp.fade = fd
            raw = predict_component(comp, Fq, extras)
            shipped = raw if size_growth == "free" else capped_beyond_sizes(
                lambda G: predict_component(comp, G, extras), Fq, raw, sizes, size_growth, counts)
            out.append((raw, shipped))
        return out

    oof = np.full((nv, len(y)), np.nan)
    for t in interp:
        p = run(t)
        if p is not None:
            for i in range(nv):
                oof[i, t] = p[i][0]
    ex: list[list[float]] = [[] for _ in range(nv)]
    zs: list[dict[str, list[np.ndarray]]] = [{} for _ in range(nv)]
    for t, col in extrap:
        p = run(t)
        v = F[col]
        key = col + ("+" if v[t].min() > v[~t].max() else "-")
        d = _distance(v[t], float(v[~t].min()), float(v[~t].max()))
        for i in range(nv):
            if p is None:
                ex[i].append(np.inf)
                continue
            raw, shipped = p[i]
            ex[i].append(float(np.mean(np.abs(raw - y[t]) / y[t])))
            zs[i].setdefault(key, []).append(np.log(y[t] / shipped) / drift_distance(np.maximum(d, Z_MIN_DISTANCE)))
    results = []
    for i in range(nv):
        o = oof[i]
        interp_mape = float(np.nanmean(np.abs(o - y) / y)) if np.isfinite(o).any() else np.inf
        if len(interp) and not np.isfinite(o[covered]).all():
            interp_mape = np.inf  # a fold could not be fitted: the candidate is not robust here
        extrap_mape = float(np.mean(ex[i])) if ex[i] else np.nan
        score = interp_mape if not ex[i] else 0.5 * (interp_mape + extrap_mape)
        results.append(CVResult(score, interp_mape, extrap_mape, np.log(y / o)[np.isfinite(o)],
                                {k: np.sort(np.concatenate(v)) for k, v in zs[i].items()}, np.log(y / o)))
    return results


@dataclass
class Selection:
    name: str
    component: Component
    cv_mape: float
    scores: dict[str, float]
    cv: CVResult
    #: the equations that cross-validated about as well as the best (:data:`NEAR_EQUAL`), fitted
    #: on all rows: beyond the executor counts the runs had, they disagree where the runs
    #: cannot tell them apart (see :func:`.intervals.log_bounds`)
    alternates: list[A.FittedEquation] = field(default_factory=list)


#: An equation whose cross-validation score is at most this much (relative) above the best
#: equation's is a near-equal alternate. On Amdahl runs at 1, 2 and 4 executors every equation
#: scored within 10 % of the best, and the one extrapolating in 3 of 6 seeds (fully_connected_c1,
#: its E(E-1)/2 term fitted to noise) predicted 16 executors slower than 8, with the truth below
#: its lower bound.
NEAR_EQUAL = 0.25


def near_equal(results: dict[str, CVResult], full: dict[str, Component],
               tolerance: float | None = None) -> list[A.FittedEquation]:
    """The equations of ``results`` scoring within ``tolerance`` (:data:`NEAR_EQUAL`) of the
    best, best first."""
    if not results:
        return []
    tolerance = NEAR_EQUAL if tolerance is None else tolerance
    best = min(r.score for r in results.values())
    keep = sorted((r.score, k) for k, r in results.items() if r.score <= best * (1 + tolerance))
    return [full[k].equation for _, k in keep if full[k].equation is not None]  # type: ignore[misc]


def _rank(r: CVResult) -> float:
    """A CV score to compare by, a failed (non-finite) one last."""
    return float(r.score) if np.isfinite(r.score) else np.inf


def select(F: dict[str, np.ndarray], y: np.ndarray, extras: list[str], kind: str = "auto",
           random_state: int = 0, fittable_only: bool = False) -> Selection:
    """Cross-validate the candidates ``kind`` allows and fit the best on all rows.

    When no candidate scores because some fold leaves runs no equation can be fitted to (a few
    runs: leaving out the largest size may leave 3), the choice is made again on the other folds
    (``fittable_only``), rather than refusing runs that one equation fits.
    """
    if kind in A.EQUATIONS or kind in M.ML_KINDS:
        # A single equation's f(S) power is chosen by the cross-validation score, as the
        # combined model chooses its equations' (power 1 on a tie): by the in-sample error S**2
        # ran away beyond the sizes (on C3O extrap_size Amdahl 11.6 % against 11.1 % by CV,
        # Gustafson 14.0 against 13.6 %; 2D-plate 7.6 against 7.7 %; docs/models.md).
        tries: tuple[int | None, ...] = (None,)
        if (POWER_CHOICE == "cv" and kind in A.EQUATIONS and A.EQUATIONS[kind].uses_power
                and len(np.unique(F["input_bytes"])) >= 2):
            tries = (1, 2)
        chosen: tuple[Component, CVResult] | None = None
        failed: DegenerateDataError | None = None
        for pw_try in tries:
            try:
                comp = fit_component(kind, F, y, extras, random_state, power=pw_try)
            except DegenerateDataError as exc:
                failed = exc
                continue
            pw = comp.equation.power if comp.equation is not None else None
            cv = cross_validate(kind, F, y, extras, random_state, power=pw)[0]
            if chosen is None or _rank(cv) < _rank(chosen[1]):
                chosen = (comp, cv)
        if chosen is None:
            assert failed is not None
            raise failed
        comp, cv = chosen
        return Selection(comp.name, comp, _finite(cv.score), {comp.name: round(float(cv.score), 6)}, cv)
    # auto / hybrid: every equation is scored; the best becomes the hybrid's backbone. Each
    # equation's f(S) power is chosen once on all runs and kept in its CV folds.
    from .hybrid import SIZE_GROWTH as growth  # the cap the fitted model will have

    full: dict[str, Component] = {}
    results: dict[str, CVResult] = {}
    cache: dict = {}
    several_sizes = len(np.unique(F["input_bytes"])) >= 2
    for name in A.EQUATIONS:
        if A.EQUATIONS[name].n_params + 1 > len(y):
            continue
        powers: tuple[int | None, ...] = (None,)
        if POWER_CHOICE == "cv" and several_sizes and A.EQUATIONS[name].uses_power:
            powers = (1, 2)
        for pw_try in powers:
            try:
                comp = fit_component(name, F, y, extras, random_state, power=pw_try)
            except DegenerateDataError:
                continue
            pw = comp.equation.power  # type: ignore[union-attr]
            r = cross_validate(name, F, y, extras, random_state, power=pw, cache=cache,
                               fittable_only=fittable_only, size_growth=growth)[0]
            # S**2 only where the runs' held-out errors favour it, not their in-sample fit
            if name not in results or r.score < results[name].score:
                full[name], results[name] = comp, r
    finite = {k: r for k, r in results.items() if np.isfinite(r.score)}
    if not finite:
        if not fittable_only and _unfittable_fold(F, random_state):
            return select(F, y, extras, kind, random_state, fittable_only=True)
        raise _not_cross_validated(F, y)
    # The backbone matters beyond the data (inside, the correction fixes it): rank by extrapolation.
    backbone = min(finite, key=lambda k: (_extrap_key(finite[k]), k))
    bpow = full[backbone].equation.power  # type: ignore[union-attr]
    hy = cross_validate("hybrid", F, y, extras, random_state, backbone, bpow, FADES, cache=cache,
                        fittable_only=fittable_only, size_growth=growth)
    hnames = {fd: "hybrid" if fd is None else "hybrid~fade" for fd in FADES}
    for fd, r in zip(FADES, hy):
        results[hnames[fd]] = r
    pool = dict(finite) if kind == "auto" else {}
    pool.update({hnames[fd]: r for fd, r in zip(FADES, hy) if np.isfinite(r.score)})
    if not pool:
        pool = {backbone: finite[backbone]}
    scores = {_label(k, backbone): round(float(r.score), 6) for k, r in results.items()}

    def build(k: str) -> Component:
        if k.startswith("hybrid"):
            c = fit_component("hybrid", F, y, extras, random_state, backbone, bpow,
                              equation=full[backbone].equation)
            c.fade = next(fd for fd, n in hnames.items() if n == k)
            return c
        return full[k]

    inner = min(pool, key=lambda k: (pool[k].interp_mape, k))
    has_ext = any(np.isfinite(r.extrap_mape) for r in pool.values())
    outer = min(pool, key=lambda k: (_extrap_key(pool[k]), k)) if has_ext else inner
    if OUTER == "backbone" and backbone in pool:
        outer = backbone
    alternates = near_equal(finite, full)
    if inner == outer or kind != "auto":
        best = min(pool, key=lambda k: (pool[k].score, k)) if kind != "auto" else inner
        return _single(build(best), pool[best], scores, alternates)
    ci = build(inner)
    co = build(outer) if not (outer.startswith("hybrid") and inner.startswith("hybrid")) else _refade(ci, outer, hnames)
    box = {k: (float(F[k].min()), float(F[k].max())) for k in ("input_bytes", "executors")}
    comp = Component("switch", parts=(ci, co), box=box)
    # inside: the interpolator's CV errors; outside: the extrapolator's
    cv = CVResult(0.5 * (pool[inner].interp_mape + pool[outer].extrap_mape), pool[inner].interp_mape,
                  pool[outer].extrap_mape, pool[inner].oof_in, pool[outer].ext_z, pool[inner].oof_rows)
    scores[comp.name] = round(float(cv.score), 6)
    return Selection(comp.name, comp, float(cv.score), scores, cv, alternates)


#: Fewest runs ``auto`` and ``hybrid`` can choose a model for: the choice is cross-validated,
#: and 3 folds need 6 runs for each to train on 4, the fewest the smallest equations fit.
CV_MIN_RUNS = 6
#: Fewest runs any equation is fitted to (its parameters + 1).
_FIT_MIN_RUNS = min(eq.n_params for eq in A.EQUATIONS.values()) + 1


def _unfittable_fold(F: dict[str, np.ndarray], random_state: int) -> bool:
    """Does a fold leave training runs no equation can be fitted to, while others remain?"""
    interp, extrap = folds(F, random_state)
    kept = folds(F, random_state, fittable_only=True)
    return len(kept[0]) + len(kept[1]) < len(interp) + len(extrap) and bool(kept[0])


def _not_cross_validated(F: dict[str, np.ndarray], y: np.ndarray) -> DegenerateDataError:
    """Why no equation got a cross-validation score, and what runs to record."""
    n, E = len(y), F["executors"]
    shape = (f"{plural(n, 'run')} ({plural(len(np.unique(F['input_bytes'])), 'input size')}, "
             f"{plural(len(np.unique(E)), 'executor count')})")
    if len(np.unique(E)) < 2:
        return DegenerateDataError(f"no runtime equation can be fitted to these {shape}",
                                   "record runs with at least two executor counts (and several "
                                   "input sizes to predict other sizes)")
    if n < CV_MIN_RUNS:
        return DegenerateDataError(
            f"these {shape} are too few to choose a runtime model: the choice is cross-validated, "
            f"which needs at least {CV_MIN_RUNS} runs",
            f"record at least {CV_MIN_RUNS - n} more run{'s' if CV_MIN_RUNS - n > 1 else ''} of the "
            f"job ({CV_MIN_RUNS} in all), at two or more executor counts")
    # every fold's training runs could be fitted in principle (select's second try drops those
    # that cannot), yet no equation was: a shape no equation follows
    return DegenerateDataError(
        f"no runtime equation could be fitted in every cross-validation fold of these {shape}",
        "record more runs of the job, at two or more executor counts and several input sizes, or "
        "fit one equation with --kind amdahl (no choice, no cross-validation)")


def _single(comp: Component, cv: CVResult, scores: dict[str, float],
            alternates: list[A.FittedEquation]) -> Selection:
    return Selection(comp.name, comp, float(cv.score), scores, cv, alternates)


def _refade(c: Component, name: str, hnames: dict) -> Component:
    """The same fitted hybrid with another fade (no refit)."""
    fd = next(f for f, n in hnames.items() if n == name)
    return Component("hybrid", equation=c.equation, ml=c.ml, ml_target=c.ml_target,
                     single_size=c.single_size, fade=fd, box=c.box)


def _label(k: str, backbone: str) -> str:
    return k.replace("hybrid", "hybrid:" + backbone) if k.startswith("hybrid") else k


def _extrap_key(r: CVResult) -> float:
    return r.extrap_mape if np.isfinite(r.extrap_mape) else r.score


def _finite(x: float) -> float:
    return float(x) if np.isfinite(x) else float("nan")
