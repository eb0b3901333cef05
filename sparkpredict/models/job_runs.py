"""What a job's training runs say, apart from the fit: the ML design matrix, the error of too
few usable runs, the resources every run had at one value, each column's latest value, and
the runs furthest above the model. Numpy only; :mod:`.hybrid` builds the model from them.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import DegenerateDataError
from ..units import MAX_EXECUTORS, plural
from .columns import floats

GIB = float(2**30)
#: Resource columns a runs table may lack (a stand-in value then fills them).
OPTIONAL = ("executor_cores", "executor_memory_mb")
#: Derived model inputs for the ML parts (computed from the features, numpy only).
DESIGN = ("input_gib", "executors", "executor_cores", "executor_memory_mb", "input_per_executor_gib",
          "input_per_core_gib", "input_per_memory")
MIN_RUNS = 4

#: How many runs :attr:`JobRuntimeModel.slow_runs_` keeps (the most above the model first).
SLOW_RUNS_KEPT = 50


def slow_runs(runs: Any, rows: np.ndarray, oof: np.ndarray | None) -> list[tuple[str, float]]:
    """(run_id, runtime / out-of-fold prediction) of the runs furthest above the model.

    Out of fold, because in sample a model with a trees correction reproduces every run it was
    fitted on: each ratio came out 1.00 and "the runs furthest above the model" named none.
    [] without a ``run_id`` column."""
    cols = runs.columns if hasattr(runs, "columns") else runs.keys()
    if oof is None or "run_id" not in cols:
        return []
    ids = np.asarray(runs["run_id"]).astype(str)[rows]
    ratio = np.exp(oof)
    order = [j for j in np.argsort(-np.nan_to_num(ratio, nan=-1.0), kind="stable") if np.isfinite(ratio[j])]
    return [(str(ids[j]), float(ratio[j])) for j in order[:SLOW_RUNS_KEPT]]


def fitted_rows(runs: Any) -> np.ndarray:
    """Which rows of ``runs`` (a table or mapping with ``input_bytes``, ``executors`` and
    ``runtime_s``) a whole-job fit keeps: a finite, positive size, executor count and runtime,
    and no more executors than :data:`~sparkpredict.units.MAX_EXECUTORS` (1e20 in a CSV is a
    typo, which the equations fitted). The fit drops the others, and the advice's look at the
    runs a model was fitted on must leave out the same ones."""
    size, execs, runtime = (floats(runs[c], c, "runs") for c in ("input_bytes", "executors", "runtime_s"))
    return np.isfinite(size) & (size > 0) & usable_executors(execs) & np.isfinite(runtime) & (runtime > 0)


def usable_executors(execs: np.ndarray) -> np.ndarray:
    """Which executor counts a fit keeps (:func:`fitted_rows`): finite, positive, and no more
    than :data:`~sparkpredict.units.MAX_EXECUTORS`. The advice's counts seen are these too."""
    return np.isfinite(execs) & (execs > 0) & ~(execs > MAX_EXECUTORS)


def design_matrix(F: Mapping[str, np.ndarray], extras: list[str]) -> np.ndarray:
    """ML inputs: :data:`DESIGN` columns then the extra numeric features."""
    S = F["input_bytes"] / GIB
    E = F["executors"]
    C = F["executor_cores"]
    Mem = F["executor_memory_mb"]
    cols = [S, E, C, Mem, S / E, S / (E * C), F["input_bytes"] / (E * Mem * 2**20)]
    cols += [F[c] for c in extras]
    return np.column_stack(cols)


def too_few_usable_runs(input_bytes: np.ndarray, executors: np.ndarray, runtime_s: np.ndarray,
                        automatic: bool = True) -> DegenerateDataError:
    """The error of a job with fewer than :data:`MIN_RUNS` usable runs (positive, finite size,
    executors and runtime), naming what the others lack: ``fit`` and ``retrain`` say the same.

    A run that declared no input size has the bytes its stages read from storage: 0 for data
    made in memory or read by a source Spark does not count, as many ingested event logs are.
    More such runs would not help: the fix is then to declare the size.
    """
    n = len(runtime_s)
    good = {c: np.isfinite(v) & (v > 0) for c, v in
            (("input_bytes", input_bytes), ("executors", executors), ("runtime_s", runtime_s))}
    usable = int(np.logical_and.reduce(list(good.values())).sum())
    lacking = [(c, int((~g).sum())) for c, g in good.items() if not g.all()]
    why = "".join(f"; {k} {'has' if k == 1 else 'have'} no positive {c}" for c, k in lacking)
    # the automatic choice among the models needs more (selection.CV_MIN_RUNS): said here too,
    # so that a user who records MIN_RUNS is not told next that 6 are needed
    from .selection import CV_MIN_RUNS

    # ``automatic``: the model is to be chosen (kind auto or hybrid, cross-validated); a single kind
    # given (--kind gbm) chooses none
    message = (f"only {plural(usable, 'usable run')} (of {n}); a runtime model needs at least {MIN_RUNS}"
               + (f", and choosing one automatically at least {CV_MIN_RUNS}" if automatic else "") + why)
    if good["input_bytes"].all():
        return DegenerateDataError(message, "record more runs of the job (positive input_bytes, "
                                            "executors and runtime_s)")
    fix = ("declare each run's input size: --conf spark.sparkpredict.inputBytes=SIZE, or "
           "`sparkpredict submit --input-size SIZE` (a run that declares none has the bytes its "
           "stages read from storage, 0 for data made in memory); for runs already recorded "
           "(e.g. ingested event logs): `sparkpredict store edit RUN_ID --input-size SIZE`; in a "
           "runs file, fill in its input_bytes")
    sized = int((good["executors"] & good["runtime_s"]).sum())
    if sized < MIN_RUNS:
        fix += f", and record at least {MIN_RUNS - sized} more run{'s' if MIN_RUNS - sized > 1 else ''}"
    return DegenerateDataError(message, fix)


def unvaried_resources(runs: Any, rows: np.ndarray, ranges: Mapping[str, tuple[float, float]]) -> dict[str, float]:
    """Resource column -> its value, for each of :data:`OPTIONAL` that the training runs
    recorded (positive somewhere) at a single value. A column no run recorded is left out: its
    value in training is a stand-in (1.0), no value to scale from."""
    have = runs.columns if hasattr(runs, "columns") else runs
    out: dict[str, float] = {}
    for c in OPTIONAL:
        if c not in have or c not in ranges:
            continue
        v = floats(runs[c], c, "runs")[rows]
        lo, hi = ranges[c]
        if (np.isfinite(v) & (v > 0)).any() and lo == hi:
            out[c] = float(lo)
    return out


def latest_run_values(runs: Any, rows: np.ndarray, cols) -> dict[str, float]:
    """Per column of ``cols``, its value in the latest training run (by ``start_ms``; none
    without it) that has one: what the advice assumes for a column a question leaves out, with
    a model folder as with a store (which takes each column's latest recorded value)."""
    have = runs.columns if hasattr(runs, "columns") else runs
    if "start_ms" not in have:
        return {}
    start = np.asarray(runs["start_ms"], float)[rows]
    out: dict[str, float] = {}
    for c in cols:
        if c not in have:
            continue
        v = floats(runs[c], c, "runs")[rows]
        good = np.isfinite(start) & np.isfinite(v) & (v > 0 if c in OPTIONAL else True)
        if good.any():
            k = int(np.flatnonzero(good)[np.argmax(start[good])])
            out[c] = float(v[k])
    return out
