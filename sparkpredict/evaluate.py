"""The study's evaluation protocols for whole-job runtime models, on a runs table.

For each job and each model:

* ``cv3`` — 3-fold cross-validation over the runs (interpolation); metrics on the pooled
  out-of-fold predictions. Each fold refits the model from scratch, the combined model's choice
  of candidate included, so the held-out runs never helped choose it. ``fit``'s ``CV MAPE``
  (``cv_mape_``) is another figure: the chosen model's score on the folds it was chosen with,
  optimistic for that, and averaged with extrapolation folds, higher where those are harder;
* ``extrap_size`` / ``extrap_executors`` — sort the distinct input sizes (executor counts),
  test on the outer ~34 % of the levels (largest first, then smallest, alternating), train on
  the middle ~66 %;
* ``practitioner`` — train on the smallest ~60 % of the input-size levels, test on the larger
  ones (a user who tried small inputs and asks about production size).

Metrics: R² (1 − SS_res/SS_tot on the test runs), RRSE (the study's relative residual standard
error: sqrt(SS_res / (n − p)) / mean runtime, p = the model's fitted parameters — equation
parameters for equations and their hybrids, 0 for ML regressors), MAPE, and the coverage of
the 90 % interval where the model has ``predict_interval`` and gives one (NaN where a fold's model
was fitted on too few runs for an out-of-fold error: no interval, lower 0 and upper inf).

Extra models: ``evaluate(runs, models={"name": factory})`` where ``factory()`` returns an object
with ``fit(runs_df)`` and ``predict(X)``; it is fitted on the full training rows of one job
(``run_id`` and every column included).
"""
from __future__ import annotations

import functools
import logging
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import DegenerateDataError, InputError
from .units import plural

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)

SPLITS = ("cv3", "extrap_size", "extrap_executors", "practitioner")
SPLIT_TITLES = {
    "cv3": "3-fold cross-validation (interpolation; refitted per fold, the combined model's choice included)",
    "extrap_size": "extrapolation in input size (train middle ~66% of sizes, test outer ~34%)",
    "extrap_executors": "extrapolation in executors (train middle ~66% of counts, test outer ~34%)",
    "practitioner": "practitioner's case (train smallest ~60% of sizes, test the larger ones)",
}
#: The study's models plus the combined one, as JobRuntimeModel kinds.
STUDY_MODELS = ("amdahl", "gustafson", "ernest", "plate2d", "fully_connected", "fully_connected_c1",
                "kernel_ridge", "gbm", "random_forest", "auto")
#: What the tables call the combined model (kind "auto"); accepted as a kind too.
COMBINED = "combined"


def model_label(kind: str) -> str:
    """The name a :class:`JobRuntimeModel` kind has in the rows and tables: ``auto`` is
    :data:`COMBINED`, the name :func:`summary` looks for."""
    return COMBINED if kind == "auto" else kind


def model_kind(name: str) -> str:
    """The :class:`JobRuntimeModel` kind of a name in ``models=`` or ``--models``: the tables'
    :data:`COMBINED` is ``auto``."""
    return "auto" if name == COMBINED else name


def outer_levels(values: np.ndarray, fraction: float = 0.34) -> np.ndarray | None:
    """Test mask of the outer ``fraction`` of the distinct levels (largest first, alternating)."""
    levels = np.unique(values)
    k = len(levels)
    if k < 3:
        return None
    n_test = min(k - 2, max(1, int(round(fraction * k))))
    picked = [levels[-1 - i // 2] if i % 2 == 0 else levels[i // 2] for i in range(n_test)]
    return np.isin(values, picked)


def smallest_levels(values: np.ndarray, fraction: float = 0.6) -> np.ndarray | None:
    """Train mask of the smallest ``fraction`` of the levels (at least two, at least one left)."""
    levels = np.unique(values)
    k = len(levels)
    if k < 3:
        return None
    n_train = min(k - 1, max(2, int(round(fraction * k))))
    return np.isin(values, levels[:n_train])


def split_masks(runs: pd.DataFrame, split: str, random_state: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train, test) boolean masks of one job's rows for ``split``; empty when not applicable."""
    n = len(runs)
    if split == "cv3":
        if n < 6:
            return []
        perm = np.random.default_rng(random_state).permutation(n)
        fold = np.empty(n, int)
        fold[perm] = np.arange(n) % 3
        return [(fold != k, fold == k) for k in range(3)]
    if split in ("extrap_size", "extrap_executors"):
        col = "input_bytes" if split == "extrap_size" else "executors"
        test = outer_levels(runs[col].to_numpy(float))
        return [] if test is None else [(~test, test)]
    if split == "practitioner":
        train = smallest_levels(runs["input_bytes"].to_numpy(float))
        return [] if train is None else [(train, ~train)]
    raise InputError(f"unknown split {split!r}", f"use one of {', '.join(SPLITS)}")


def metrics(y: np.ndarray, pred: np.ndarray, n_params: int = 0) -> dict[str, float]:
    """R², RRSE (df = n − n_params, over mean runtime) and MAPE (fractions)."""
    y = np.asarray(y, float)
    pred = np.asarray(pred, float)
    res = y - pred
    ss_res = float(res @ res)
    ss_tot = float(((y - y.mean()) ** 2).sum())
    df = len(y) - n_params if len(y) > n_params else len(y)
    return {"r2": 1 - ss_res / ss_tot if ss_tot > 0 else (0.0 if ss_res == 0 else -math.inf),
            "rrse": math.sqrt(ss_res / df) / float(y.mean()),
            "mape": float(np.mean(np.abs(res) / y))}


def _n_params(model: Any) -> int:
    """The parameters of the equation(s) a model is named after, for RRSE's n - p: ``ernest``,
    ``hybrid:ernest``, and a combined model's parts (``hybrid:plate2d~fade``, a switch
    ``ernest|fully_connected_c1``: the larger); 0 for ML models. The combined names read as 0
    before, which understated their RRSE."""
    from .models.analytical import EQUATIONS

    name = str(getattr(model, "name_", ""))
    eqs = [part.split(":", 1)[-1].removesuffix("~fade") for part in name.split("|")]
    return max((EQUATIONS[e].n_params for e in eqs if e in EQUATIONS), default=0)


@dataclass
class Evaluation:
    """Result of :func:`evaluate`: one row per (job, split, model) and the skipped pairs."""

    rows: pd.DataFrame
    skipped: dict[str, str] = field(default_factory=dict)

    def table(self, split: str, metric: str) -> pd.DataFrame:
        """Jobs x models for one split and metric, with a ``mean`` row (like the study's tables)."""
        if metric not in METRICS:  # a raw KeyError from the pivot
            raise InputError(f"unknown metric {metric!r}", f"use one of {', '.join(METRICS)}")
        r = self.rows[self.rows["split"] == split]
        t = r.pivot_table(index="job", columns="model", values=metric, aggfunc="first", sort=False)
        if not t.empty:  # every model failed on every job of the split: no mean row to add
            t.loc["mean"] = t.mean(numeric_only=True)
        return t

    def unscored(self) -> dict[str, str]:
        """Jobs (``job``) and job splits (``job/split``) that every model failed on, and models
        that failed a split the others scored (``job/split/model``), with the errors: they have
        no number in :meth:`table`, which would otherwise drop them silently (the combined
        model's column went missing without a word). A job is named once when it failed
        everywhere."""
        out: dict[str, str] = {}
        if self.rows.empty:
            return out
        failed = self.rows["error"].notna()

        def why(rows: pd.DataFrame) -> str:
            return "; ".join(dict.fromkeys(rows["error"].astype(str)))  # distinct, in order

        for job, g in self.rows.groupby("job", sort=True):
            if failed[g.index].all():
                out[str(job)] = why(g)
                continue
            for split, gs in g.groupby("split", sort=False):
                if failed[gs.index].all():
                    out[f"{job}/{split}"] = why(gs)
                    continue
                for model, gm in gs[failed[gs.index]].groupby("model", sort=False):
                    out[f"{job}/{split}/{model}"] = why(gm)
        return out

    def to_json(self) -> dict:
        return {"rows": self.rows.replace({np.inf: None, -np.inf: None}).astype(object)
                .where(self.rows.notna(), None).to_dict(orient="records"), "skipped": self.skipped}


#: The stage-level models ``evaluate --stage-models`` scores, by their tables' column names.
STAGE_MODELS = ("stage-forest", "replay")


def check_kinds(kinds: Iterable[str], also: tuple[str, ...] = ()) -> None:
    """Refuse unknown :class:`JobRuntimeModel` kinds before any fit: a misspelt kind would fail
    every fold of every job. ``also``: other names the caller takes (listed in the fix)."""
    from .models.hybrid import KINDS

    unknown = [k for k in kinds if model_kind(k) not in KINDS]
    if unknown:
        raise InputError(f"unknown model kind(s) {', '.join(map(repr, unknown))}",
                         f"use {', '.join(KINDS + tuple(also))} (auto, or {COMBINED}, is the combined model)")


def kind_factories(kinds: Iterable[str]) -> dict[str, Callable[[], Any]]:
    """:func:`model_label` -> a factory of :class:`JobRuntimeModel` of that kind, for each of
    ``kinds`` (checked; :data:`COMBINED` is ``auto``)."""
    from .models.hybrid import JobRuntimeModel

    kinds = list(kinds)
    check_kinds(kinds)
    return {model_label(model_kind(k)): functools.partial(JobRuntimeModel, kind=model_kind(k)) for k in kinds}


#: The figures :meth:`Evaluation.table` tabulates.
METRICS = ("r2", "rrse", "mape", "coverage90", "fit_s", "n_train", "n_test")


def _factories(models: Any, include_study: bool) -> dict[str, Callable[[], Any]]:
    out: dict[str, Callable[[], Any]] = kind_factories(STUDY_MODELS) if include_study else {}
    if isinstance(models, str):  # one kind, not its letters ('a', 'm', 'd', ...)
        models = [models]
    if isinstance(models, dict):
        out.update(models)
    elif models is not None:
        out.update(kind_factories(models))
    return out


def evaluate(runs: pd.DataFrame, models: Any = None, splits: tuple[str, ...] | str = SPLITS,
             include_study: bool = True, random_state: int = 0, min_runs: int = 12) -> Evaluation:
    """Run the study's protocols for every job of ``runs`` and every model.

    Parameters
    ----------
    runs : DataFrame
        A runs table (several jobs allowed).
    models : dict, list or str, optional
        Extra models: ``{"name": factory}`` (``factory()`` -> object with ``fit(runs_df)`` and
        ``predict(X)``), or a list of :class:`JobRuntimeModel` kinds (``combined`` is ``auto``),
        or one kind. ``splits`` likewise takes one split's name.
    include_study : bool
        Also evaluate the study's models and the combined one (:data:`STUDY_MODELS`).

    Returns
    -------
    Evaluation
        ``rows``: job, split, model, n_train, n_test, r2, rrse, mape, coverage90, fit_s, error.
    """
    import pandas as pd

    from .features.runs import check_runs_frame

    check_runs_frame(runs)
    if isinstance(splits, str):  # one split, not its letters
        splits = (splits,)
    factories = _factories(models, include_study)
    if not factories:
        raise InputError("no models to evaluate", "pass models= or include_study=True")
    rows: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    # a replay or stage model may score runs of one executor count; the runtime models cannot
    only_runtime_models = all(isinstance(f, functools.partial) and f.func.__name__ == "JobRuntimeModel"
                              for f in factories.values())
    for job in sorted(runs["job"].astype(str).unique()):
        jr = runs[runs["job"].astype(str) == job]
        # the rows fit keeps (JobRuntimeModel.fit drops the others too): a few runs without a
        # positive size had failed every fold, and the job with it ("nothing to evaluate")
        ok = np.ones(len(jr), bool)
        lacking = []
        for col in ("runtime_s", "input_bytes", "executors"):
            v = pd.to_numeric(jr[col], errors="coerce").to_numpy(float)
            good = np.isfinite(v) & (v > 0)
            if not good.all():
                lacking.append(f"{int((~good).sum())} without a positive {col}")
            ok &= good
        if not ok.all():
            log.warning("job %s: left out %s without a positive runtime_s, input_bytes and executors",
                        job, plural(int((~ok).sum()), "run"))
        jr = jr[ok].sort_values(["input_bytes", "executors", "runtime_s"], kind="mergesort").reset_index(drop=True)
        if len(jr) < min_runs:
            # why so few: "0 runs (< 12)" of a job with 30 runs hid that none had a size
            left = f" of {plural(len(ok), 'run')} ({', '.join(lacking)})" if lacking else ""
            skipped[job] = f"{len(jr)} usable{left} (< {min_runs})" if lacking else \
                f"{plural(len(jr), 'run')} (< {min_runs})"
            continue
        counts = np.unique(jr["executors"].to_numpy(float))
        if len(counts) < 2 and only_runtime_models:
            # every split and model fails alike: one reason, not a dozen models' each
            skipped[job] = (f"{ONE_COUNT} ({counts[0]:g}) in all {plural(len(jr), 'run')}: no model can "
                            "learn how the runtime scales with executors")
            continue
        for split in splits:
            masks = split_masks(jr, split, random_state)
            if not masks:
                skipped[f"{job}/{split}"] = "too few distinct levels"
                continue
            y = jr["runtime_s"].to_numpy(float)
            for mname, factory in factories.items():
                rows.append(_score(jr, y, masks, job, split, mname, factory))
    cols = ["job", "split", "model", "n_train", "n_test", "r2", "rrse", "mape", "coverage90", "fit_s", "error"]
    return Evaluation(pd.DataFrame(rows, columns=cols), skipped)


#: How a job skipped for a single executor count is described (the CLI's fix keys on it).
ONE_COUNT = "one executor count"


def _score(jr: pd.DataFrame, y: np.ndarray, masks: list, job: str, split: str, mname: str,
           factory: Callable[[], Any]) -> dict[str, Any]:
    pred = np.full(len(y), np.nan)
    lo = np.full(len(y), np.nan)
    hi = np.full(len(y), np.nan)
    tested = np.zeros(len(y), bool)
    fit_s = 0.0
    n_params = 0
    n_train = 0
    try:
        for train, test in masks:
            model = factory()
            t0 = time.perf_counter()
            model.fit(jr[train].reset_index(drop=True))
            fit_s += time.perf_counter() - t0
            n_params = max(n_params, _n_params(model))
            n_train = max(n_train, int(train.sum()))
            Xq = jr[test].reset_index(drop=True)
            if hasattr(model, "predict_interval"):
                iv = model.predict_interval(Xq, confidence=0.9)
                pred[test] = iv["predicted_runtime_s"]
                lo[test], hi[test] = iv["lower_s"], iv["upper_s"]
            else:
                pred[test] = np.asarray(model.predict(Xq), float)
            tested |= test
    except (DegenerateDataError, InputError) as exc:
        return {"job": job, "split": split, "model": mname, "n_train": n_train, "n_test": int(tested.sum()),
                "fit_s": fit_s, "error": str(exc)}
    m = metrics(y[tested], pred[tested], n_params)
    # no coverage without bounds: a model without predict_interval leaves them NaN, and one fitted
    # on too few runs to leave any out has none (lower 0, upper inf) and counted every run covered
    bounded = np.isfinite(lo[tested]) & np.isfinite(hi[tested])
    cov = float(np.mean((y[tested] >= lo[tested]) & (y[tested] <= hi[tested]))) \
        if bounded.all() else float("nan")
    return {"job": job, "split": split, "model": mname, "n_train": n_train, "n_test": int(tested.sum()),
            **m, "coverage90": cov, "fit_s": fit_s, "error": None}


def summary(ev: Evaluation, model: str = COMBINED) -> dict[str, dict[str, float]]:
    """Per split: mean and worst-job MAPE, mean R² and mean coverage of ``model``."""
    out = {}
    r = ev.rows[(ev.rows["model"] == model) & ev.rows["error"].isna()]
    for split, g in r.groupby("split"):
        out[str(split)] = {"mape_mean": float(g["mape"].mean()), "mape_worst": float(g["mape"].max()),
                           "r2_mean": float(g["r2"].mean()), "coverage90_mean": float(g["coverage90"].mean()),
                           "jobs": len(g)}
    return out


def format_tables(ev: Evaluation, metrics_: tuple[str, ...] = ("r2", "rrse", "mape")) -> str:
    """Markdown tables, one per split and metric (jobs x models, mean row last)."""
    parts = []
    for split in SPLITS:
        if not ((ev.rows["split"] == split) & ev.rows["error"].isna()).any():
            continue  # nothing scored: its jobs are in Evaluation.unscored()
        for metric in metrics_:
            t = ev.table(split, metric)
            parts.append(f"**{SPLIT_TITLES[split]} — {metric.upper()}**\n\n" + _markdown(t, metric))
    return "\n\n".join(parts)


def _markdown(t: pd.DataFrame, metric: str) -> str:
    fmt = (lambda v: f"{100 * v:.1f}%") if metric in ("mape", "rrse", "coverage90") else (lambda v: f"{v:.3f}")
    head = "| job | " + " | ".join(map(str, t.columns)) + " |"
    sep = "|" + "---|" * (len(t.columns) + 1)
    lines = [head, sep]
    for idx, row in t.iterrows():
        cells = [fmt(v) if isinstance(v, (float, int)) and np.isfinite(v) else "–" for v in row]
        name = f"**{idx}**" if idx == "mean" else str(idx).replace("|", "\\|")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
