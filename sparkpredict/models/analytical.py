"""Analytical runtime equations t(S, E): a registry of named models, fitted globally and fast.

``S`` is the input size (in GiB inside sparkpredict, for conditioning), ``E`` the number of
executors, and ``f(S)`` is ``S`` or ``S**2`` (``power`` 1 or 2, or chosen by the fit):

============================  ===============================================  ============
name                          formula                                          nonlinear
============================  ===============================================  ============
``amdahl``                    a·f(S)·((1−b)/E + b) + c                         (none)
``gustafson``                 a·f(S) / (E + b·(1−E)) + c                       b ∈ [0, 1]
``ernest``                    a·S/E + b·log E + c·E + d                        (none)
``plate2d``                   a·f(S)/E + b·S·E^c + d                           c ∈ [−2, 2]
``fully_connected``           a·f(S)/E + b·S^c·E(E−1)/2 + d                    c ∈ [0, 2]
``fully_connected_c1``        a·f(S)/E + b·S·E(E−1)/2 + d                      (none)
============================  ===============================================  ============

Every equation is linear in all its parameters but at most one. For a fixed value of that one,
the others solve a non-negative least-squares problem exactly (all supports of at most four
columns are enumerated on the normal equations, so the optimum is global and no iterative solver
is needed); a grid over the nonlinear parameter's bounds, zoomed into the best cell a few times, finds
its optimum. Non-negative terms keep the model physical:
no negative work, no speed-up from communication. Amdahl is solved in the linear
reparametrisation ``p·f/E + q·f + c`` with ``a = p + q``, ``b = q / (p + q)``.

Only numpy is imported: fitting and prediction never need scipy or a JVM.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import DegenerateDataError

Array = np.ndarray


def _f(S: Array, power: int) -> Array:
    return S if power == 1 else S * S


@dataclass(frozen=True)
class Equation:
    """A named runtime equation.

    Attributes
    ----------
    name, formula : str
        Registry key and human-readable formula.
    params : tuple of str
        Parameter names in the order of ``theta``.
    bounds : tuple of (low, high)
        Bounds of every parameter (linear ones: ``(0, inf)``).
    nonlinear : str or None
        The parameter searched in 1-D; the others are linear.
    basis : callable
        ``basis(S, E, power, nl) -> (n, k)`` columns whose non-negative combination is the model.
    to_theta : callable
        ``to_theta(lin, nl) -> theta`` maps linear coefficients (+ nonlinear value) to ``params``.
    fn : callable
        Vectorised ``fn(S, E, theta, power) -> runtime``.
    """

    name: str
    formula: str
    params: tuple[str, ...]
    bounds: tuple[tuple[float, float], ...]
    nonlinear: str | None
    # nl is a (g, 1) column when a grid of nonlinear values is evaluated in one batch
    basis: Callable[[Array, Array, int, float | Array], Array] = field(repr=False)
    to_theta: Callable[[Array, float], Array] = field(repr=False)
    fn: Callable[[Array, Array, Array, int], Array] = field(repr=False)
    uses_power: bool = True

    @property
    def n_params(self) -> int:
        return len(self.params)

    @property
    def nl_bounds(self) -> tuple[float, float] | None:
        if self.nonlinear is None:
            return None
        return self.bounds[self.params.index(self.nonlinear)]


INF = float("inf")


def _amdahl_theta(lin: Array, nl: float) -> Array:
    p, q, c = lin
    a = p + q
    return np.array([a, q / a if a > 0 else 0.0, c])


def _fc_comm(E: Array) -> Array:
    return E * (E - 1.0) / 2.0


def _cols(*cols: Array) -> Array:
    """Columns side by side; with a ``(g, 1)`` nonlinear value the result is ``(g, n, k)``."""
    return np.stack(np.broadcast_arrays(*cols), axis=-1)


EQUATIONS: dict[str, Equation] = {e.name: e for e in [
    Equation(
        "amdahl", "a·f(S)·((1−b)/E + b) + c", ("a", "b", "c"), ((0, INF), (0, 1), (0, INF)), None,
        basis=lambda S, E, pw, nl: np.column_stack([_f(S, pw) / E, _f(S, pw), np.ones_like(S)]),
        to_theta=_amdahl_theta,
        fn=lambda S, E, th, pw: th[0] * _f(S, pw) * ((1 - th[1]) / E + th[1]) + th[2]),
    Equation(
        "gustafson", "a·f(S) / (E + b·(1−E)) + c", ("a", "b", "c"), ((0, INF), (0, 1), (0, INF)), "b",
        basis=lambda S, E, pw, nl: _cols(_f(S, pw) / (E + nl * (1 - E)), np.ones_like(S)),
        to_theta=lambda lin, nl: np.array([lin[0], nl, lin[1]]),
        fn=lambda S, E, th, pw: th[0] * _f(S, pw) / (E + th[1] * (1 - E)) + th[2]),
    Equation(
        "ernest", "a·S/E + b·log E + c·E + d", ("a", "b", "c", "d"), ((0, INF),) * 4, None,
        basis=lambda S, E, pw, nl: np.column_stack([S / E, np.log(E), E, np.ones_like(S)]),
        to_theta=lambda lin, nl: np.asarray(lin, float).copy(),
        fn=lambda S, E, th, pw: th[0] * S / E + th[1] * np.log(E) + th[2] * E + th[3],
        uses_power=False),
    Equation(
        "plate2d", "a·f(S)/E + b·S·E^c + d", ("a", "b", "c", "d"), ((0, INF), (0, INF), (-2, 2), (0, INF)),
        "c",
        basis=lambda S, E, pw, nl: _cols(_f(S, pw) / E, S * E ** nl, np.ones_like(S)),
        to_theta=lambda lin, nl: np.array([lin[0], lin[1], nl, lin[2]]),
        fn=lambda S, E, th, pw: th[0] * _f(S, pw) / E + th[1] * S * E ** th[2] + th[3]),
    Equation(
        "fully_connected", "a·f(S)/E + b·S^c·E(E−1)/2 + d", ("a", "b", "c", "d"),
        ((0, INF), (0, INF), (0, 2), (0, INF)), "c",
        basis=lambda S, E, pw, nl: _cols(_f(S, pw) / E, S ** nl * _fc_comm(E), np.ones_like(S)),
        to_theta=lambda lin, nl: np.array([lin[0], lin[1], nl, lin[2]]),
        fn=lambda S, E, th, pw: th[0] * _f(S, pw) / E + th[1] * S ** th[2] * _fc_comm(E) + th[3]),
    Equation(
        "fully_connected_c1", "a·f(S)/E + b·S·E(E−1)/2 + d", ("a", "b", "d"), ((0, INF),) * 3, None,
        basis=lambda S, E, pw, nl: np.column_stack([_f(S, pw) / E, S * _fc_comm(E), np.ones_like(S)]),
        to_theta=lambda lin, nl: np.asarray(lin, float).copy(),
        fn=lambda S, E, th, pw: th[0] * _f(S, pw) / E + th[1] * S * _fc_comm(E) + th[2]),
]}


_SUPPORTS: dict[int, list[list[int]]] = {}


def _supports(k: int) -> list[list[int]]:
    if k not in _SUPPORTS:
        _SUPPORTS[k] = [list(c) for r in range(1, k + 1) for c in itertools.combinations(range(k), r)]
    return _SUPPORTS[k]


def nnls_batch(A: Array, y: Array, w: Array | None = None) -> tuple[Array, Array]:
    """Exact non-negative least squares for a batch of small problems sharing ``y``.

    ``A`` is ``(g, n, k)`` with k ≤ 6; solves min ‖√w(A_i x − y)‖², x ≥ 0 for each i (``w`` is
    ``(n,)``, or ``(g, n)`` for one weight vector per problem, e.g. CV folds as 0/1 masks). Every
    support is solved on the normal equations of the column-scaled problem and the best feasible
    one kept: that is the global optimum, because the NNLS solution is the unconstrained
    least-squares solution on its own support. Returns ``(x (g, k), sse (g,))``.
    """
    A = np.asarray(A, float)
    g, n, k = A.shape
    sw = np.ones((1, n)) if w is None else np.sqrt(np.atleast_2d(np.asarray(w, float)))
    Aw = A * sw[:, :, None]
    yw = y[None, :] * sw
    scale = np.sqrt(np.einsum("gnk,gnk->gk", Aw, Aw))
    scale[~(scale > 0)] = 1.0
    As = Aw / scale[:, None, :]
    G = np.einsum("gnk,gnl->gkl", As, As)
    b = np.einsum("gnk,gn->gk", As, np.broadcast_to(yw, (g, n)))
    yy = np.broadcast_to(np.einsum("gn,gn->g", yw, yw), (g,)).copy()
    best_x = np.zeros((g, k))
    best_sse = yy.copy()
    tol = 1e-12 * np.maximum(yy, 1e-300)
    for sup in _supports(k):
        Gs = G[:, sup][:, :, sup]
        bs = b[:, sup]
        # Unit-diagonal Gram: a tiny determinant means collinear columns (e.g. one input size);
        # a smaller support then fits as well, so skipping is safe. A column of zeros (weights
        # that leave it none) has a zero diagonal: its one-column support is skipped too, where
        # solving it raised LinAlgError for the whole batch.
        ok = np.linalg.det(Gs) > 1e-11
        Gs_safe = np.where(ok[:, None, None], Gs, np.eye(len(sup)))
        xs = np.linalg.solve(Gs_safe, bs[:, :, None])[:, :, 0]
        sse = yy - 2 * np.einsum("gi,gi->g", xs, bs) + np.einsum("gi,gij,gj->g", xs, Gs, xs)
        better = ok & np.all(xs >= 0, axis=1) & np.isfinite(sse) & (sse < best_sse - tol)
        if better.any():
            best_sse[better] = sse[better]
            upd = np.zeros((int(better.sum()), k))
            upd[:, sup] = xs[better]
            best_x[better] = upd
    x = best_x / scale
    resid = (np.einsum("gnk,gk->gn", A, x) - y[None, :]) * sw
    return x, np.einsum("gn,gn->g", resid, resid)


def nnls_small(A: Array, y: Array, w: Array | None = None) -> tuple[Array, float]:
    """:func:`nnls_batch` for one ``(n, k)`` problem: returns ``(x, sse)``."""
    x, sse = nnls_batch(np.asarray(A, float)[None], np.asarray(y, float), w)
    return x[0], float(sse[0])


@dataclass(frozen=True)
class FittedEquation:
    """An equation with fitted parameters; predicts with numpy only."""

    name: str
    power: int
    theta: tuple[float, ...]
    sse: float
    n: int

    @property
    def equation(self) -> Equation:
        return EQUATIONS[self.name]

    @property
    def params(self) -> dict[str, float]:
        return dict(zip(self.equation.params, self.theta))

    def predict(self, S: Array, E: Array) -> Array:
        S = np.asarray(S, float)
        E = np.asarray(E, float)
        return self.equation.fn(S, E, np.asarray(self.theta), self.power)

    def to_dict(self) -> dict:
        return {"name": self.name, "power": self.power, "theta": [float(t) for t in self.theta],
                "sse": float(self.sse), "n": int(self.n)}

    @classmethod
    def from_dict(cls, d: dict) -> FittedEquation:
        if d["name"] not in EQUATIONS:
            raise DegenerateDataError(f"unknown equation {d['name']!r} in a saved model",
                                      f"refit: known equations are {', '.join(EQUATIONS)}")
        theta = tuple(float(t) for t in d["theta"])
        want = EQUATIONS[d["name"]].n_params
        # a file edited by hand: else an IndexError, or NaN runtimes, at the first prediction
        if len(theta) != want or not all(np.isfinite(theta)):
            raise DegenerateDataError(f"equation {d['name']!r} in a saved model has parameters {list(theta)}, "
                                      f"not {want} finite numbers", "refit the model")
        # every fit keeps to the equation's bounds (non-negative least squares, a grid within the
        # nonlinear bounds): a parameter beyond them was edited by hand, and one edited to -1
        # loaded, passed the loader's check and advised 1 executor for 0.001 s. The slack: a
        # grid point's last bits, never a hand's edit
        eq = EQUATIONS[d["name"]]
        beyond = [f"{p} = {t:g} (not in [{lo:g}, {hi:g}])"
                  for p, t, (lo, hi) in zip(eq.params, theta, eq.bounds) if not lo - 1e-9 <= t <= hi + 1e-9]
        power = int(d["power"])
        if power not in (1, 2):  # f(S) = S or S**2: any other power read as S**2
            beyond.append(f"power = {power} (not 1 or 2)")
        if beyond:
            raise DegenerateDataError(f"equation {d['name']!r} in a saved model has {', '.join(beyond)}, "
                                      "beyond what a fit gives", "refit the model")
        return cls(d["name"], power, theta, float(d["sse"]), int(d["n"]))


def check_inputs(S: Array, E: Array, y: Array, n_params: int = 1, what: str = "runs") -> None:
    """Raise :class:`DegenerateDataError` for NaN/inf, non-positive values or too few runs."""
    for name, v in (("input size", S), ("executors", E), ("runtime", y)):
        if not np.all(np.isfinite(v)):
            raise DegenerateDataError(f"{what}: {name} has NaN or infinite values",
                                      "drop or repair the runs with missing values")
        if np.any(v <= 0):
            raise DegenerateDataError(f"{what}: {name} has zero or negative values (min {v.min():g})",
                                      "runtime models need positive sizes, executor counts and runtimes")
    if len(y) < n_params + 1:
        raise DegenerateDataError(f"{what}: {len(y)} runs cannot fit {n_params} parameters",
                                  f"record at least {n_params + 1} runs of the job")


def fit_equation(name: str, S: Sequence[float] | Array, E: Sequence[float] | Array,
                 y: Sequence[float] | Array, *,
                 power: int | str = "auto", weights: Sequence[float] | Array | None = None,
                 grid: int = 17, refine: int = 3, allow_single_size: bool = False) -> FittedEquation:
    """Fit one registered equation by NNLS + a 1-D search over its nonlinear parameter.

    Parameters
    ----------
    name : str
        Key of :data:`EQUATIONS`.
    S, E, y : array-like
        Input sizes, executor counts and runtimes (all positive, finite).
    power : 1, 2 or "auto"
        ``f(S) = S**power``; ``"auto"`` fits both and keeps the smaller error.
    weights : array-like, optional
        Per-run weights of the squared error (``1/y**2`` minimises relative error).
    grid, refine : int
        Grid points over the nonlinear bounds, then zooms into the best cell.
    allow_single_size : bool
        Documented fallback for jobs run on one input size only: fit anyway with ``power=1``,
        which makes the size terms proportional to S (an assumption, not a measurement).

    Raises
    ------
    DegenerateDataError
        NaN/inf, zero or negative values, fewer runs than parameters + 1, or a single input
        size / executor count (then the size or executor terms cannot be told apart).
    """
    if name not in EQUATIONS:
        raise DegenerateDataError(f"unknown equation {name!r}", f"use one of {', '.join(EQUATIONS)}")
    eq = EQUATIONS[name]
    S_, E_, y_ = (np.asarray(v, dtype=float).ravel() for v in (S, E, y))
    if not (len(S_) == len(E_) == len(y_)):
        raise DegenerateDataError("S, E and runtime differ in length", "pass one value per run")
    check_inputs(S_, E_, y_, eq.n_params, what=f"equation {name}")
    if len(np.unique(S_)) < 2 and not allow_single_size:
        raise DegenerateDataError(f"equation {name}: all runs have one input size",
                                  "run the job on at least two input sizes (or predict executors only "
                                  "with a model that does not need size)")
    if len(np.unique(E_)) < 2:
        raise DegenerateDataError(f"equation {name}: all runs have one executor count",
                                  "run the job with at least two executor counts")
    w = np.ones(len(y_)) if weights is None else np.asarray(weights, float).ravel()
    powers = [1, 2] if power == "auto" else [int(power)]
    if not eq.uses_power or len(np.unique(S_)) < 2:
        powers = [1]
    best: FittedEquation | None = None
    for pw in powers:
        nl, lin, sse = _fit_weighted(eq, S_, E_, y_, pw, w[None, :], grid, refine)
        fitted = FittedEquation(name, pw, tuple(float(t) for t in eq.to_theta(lin[0], nl[0])), float(sse[0]), len(y_))
        if best is None or fitted.sse < best.sse * (1 - 1e-9):
            best = fitted
    assert best is not None
    return best


def _fit_weighted(eq: Equation, S: Array, E: Array, y: Array, pw: int, W: Array, grid: int,
                  refine: int) -> tuple[Array, Array, Array]:
    """Fit ``eq`` once per row of weights ``W`` (m, n): ``(nl (m,), linear (m, k), sse (m,))``.

    Grid over the nonlinear bounds, then zoom into each fit's best cell ``refine`` times: the SSE
    of the remaining parameters is solved exactly at every point, so this 1-D search is global
    up to the final cell width (range · (2/(grid−1))**refine). All fits and grid points of a
    round are one batched NNLS (CV folds are 0/1 weight masks on the same rows).
    """
    m = W.shape[0]
    if eq.nonlinear is None:
        nl = np.zeros(m)
    else:
        lo0, hi0 = eq.nl_bounds  # type: ignore[misc]
        lo, hi = np.full(m, float(lo0)), np.full(m, float(hi0))
        nl, best_v = np.full(m, float(lo0)), np.full(m, np.inf)
        Wg = np.repeat(W, grid, axis=0)
        rows = np.arange(m)
        for _ in range(refine + 1):
            pts = lo[:, None] + (hi - lo)[:, None] * np.linspace(0.0, 1.0, grid)[None, :]
            A = eq.basis(S, E, pw, pts.reshape(-1, 1))
            vals = nnls_batch(A, y, Wg)[1].reshape(m, grid)
            i = np.argmin(vals, axis=1)
            v = vals[rows, i]
            upd = v < best_v
            nl = np.where(upd, pts[rows, i], nl)
            best_v = np.where(upd, v, best_v)
            lo, hi = pts[rows, np.maximum(i - 1, 0)], pts[rows, np.minimum(i + 1, grid - 1)]
    if eq.nonlinear:
        A = eq.basis(S, E, pw, nl[:, None])
    else:
        B = eq.basis(S, E, pw, 0.0)
        A = np.broadcast_to(B, (m,) + B.shape)
    lin, sse = nnls_batch(np.asarray(A, float), y, W)
    return nl, lin, sse


def fit_equation_folds(name: str, S: Sequence[float] | Array, E: Sequence[float] | Array,
                       y: Sequence[float] | Array, train_masks: Sequence[Array], *, power: int,
                       weights: Sequence[float] | Array | None = None,
                       grid: int = 17, refine: int = 3) -> list[FittedEquation | None]:
    """:func:`fit_equation` on the rows of each boolean mask (CV folds), batched, fixed ``power``.

    Equal to fitting each subset on its own (up to rounding). ``None`` for a mask whose rows
    cannot be fitted (fewer runs than parameters + 1, one input size or one executor count).
    """
    eq = EQUATIONS[name]
    S_, E_, y_ = (np.asarray(v, dtype=float).ravel() for v in (S, E, y))
    w = np.ones(len(y_)) if weights is None else np.asarray(weights, float).ravel()
    pw = int(power) if eq.uses_power else 1
    ok = [bool(len(np.unique(S_[t])) >= 2 and len(np.unique(E_[t])) >= 2 and t.sum() >= eq.n_params + 1)
          for t in train_masks]
    out: list[FittedEquation | None] = [None] * len(ok)
    idx = [i for i, o in enumerate(ok) if o]
    if not idx:
        return out
    W = np.stack([np.where(train_masks[i], w, 0.0) for i in idx])
    nl, lin, sse = _fit_weighted(eq, S_, E_, y_, pw, W, grid, refine)
    for j, i in enumerate(idx):
        out[i] = FittedEquation(name, pw, tuple(float(t) for t in eq.to_theta(lin[j], nl[j])), float(sse[j]),
                                int(train_masks[i].sum()))
    return out
