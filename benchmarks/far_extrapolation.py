"""How the prediction interval behaves far beyond the runs: the shipped drift law against the
old one (the reference), fitted and measured in the same run.

Beyond the training range the interval's log bounds grow by a drift per unit distance times a
function of the distance d (``selection.drift_distance``). The old law multiplied by d itself
(capped at 10), so the error factor grew exponentially with the size ratio; the shipped
``linear_log`` law is the same up to d = 1, where the extrapolation folds measured it, and grows
with log d beyond.

Two parts:

- **C3O, trained on a corner of the grid.** For each of the 21 recurring C3O jobs of
  ``advice_quality.py``: train on the 3 (or 4) smallest input sizes and test every larger size;
  train on executor counts <= 6 and test 8..12; train on both corners and test the far corner.
  Every test run is scored against the 90 % interval, by the distance of its query.
- **The local history in ``tests/data/history``** (runs recorded by the listener on this 2-core
  machine, inputs 4-32 MB): the interval at 3x, 8x and 62x the largest input, as
  ``sparkpredict suggest`` would show it.

    python benchmarks/far_extrapolation.py [--no-write]
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import advice_quality as aq
from _results import publish

from sparkpredict.models import selection
from sparkpredict.models.hybrid import JobRuntimeModel
from sparkpredict.units import format_duration

ROOT = Path(__file__).resolve().parents[1]
LAWS = ("relative", "linear_log")  # reference first
BOTH = "linear_log, both bounds"
#: reference: the drift measured on the fitted curve, not on the capped prediction (selection.DRIFT_OF)
CURVE = "linear_log, drift of the curve"
BINS = [0, 0.25, 0.5, 1, 2, np.inf]
BIN_LABELS = ["0-0.25", "0.25-0.5", "0.5-1", "1-2", "> 2"]


def corner_splits(g: pd.DataFrame):
    lv = np.sort(g["input_bytes"].unique())
    for k in (3, 4):
        train = g["input_bytes"] <= lv[k - 1]
        yield f"smallest {k} sizes", train, ~train
    train = g["executors"] <= 6
    yield "executors <= 6", train, ~train
    train = (g["input_bytes"] <= lv[3]) & (g["executors"] <= 6)
    yield "both corners", train, (g["input_bytes"] > lv[3]) & (g["executors"] > 6)


SHIPPED_DRIFT = selection.drift_distance


def _log_law_on_both_sides(d, law=selection.DRIFT_LAW):
    """The alternative not shipped: the lower bound's drift on the log law too."""
    return SHIPPED_DRIFT(d, "linear_log" if law == "relative" else law)


def c3o_rows(law: str) -> pd.DataFrame:
    """Every corner split of every job under ``law`` ("linear_log, both bounds": the alternative)."""
    both = law == BOTH
    selection.DRIFT_LAW = "linear_log" if law in (BOTH, CURVE) else law
    if both:  # the bounds look the function up at call time
        selection.drift_distance = _log_law_on_both_sides
    drift_of = selection.DRIFT_OF
    if law == CURVE:
        selection.DRIFT_OF = "curve"
    try:
        return _c3o_rows(law)
    finally:
        selection.drift_distance = SHIPPED_DRIFT
        selection.DRIFT_OF = drift_of


def _c3o_rows(law: str) -> pd.DataFrame:
    out = []
    for name, g in aq.recurring_jobs().items():
        for split, train, test in corner_splits(g):
            m = JobRuntimeModel().fit(g[train])
            t = g[test]
            iv = m.predict_interval(t, 0.9)
            m.size_growth_ = "linear"  # reference: the cap before the pooled floor
            lin = m.predict(t)
            m.size_growth_ = "proportional"  # reference: the earlier cap (fixed cost grows too)
            prop = m.predict(t)
            m.size_growth_ = "free"  # reference: the fitted curve's own growth beyond the sizes
            out.append(pd.DataFrame({
                "free": m.predict(t), "prop": prop, "lin": lin,
                "law": law, "job": name, "split": split, "d": m.extrapolation(t)["max"],
                "y": t["runtime_s"].to_numpy(), "pred": iv["predicted_runtime_s"],
                "lower": iv["lower_s"], "upper": iv["upper_s"]}))
    r = pd.concat(out, ignore_index=True)
    r["below_upper"] = r.y <= r.upper
    r["inside"] = r.below_upper & (r.y >= r.lower)
    r["width"] = r.upper / r.pred
    r["bin"] = pd.cut(r.d, BINS, labels=BIN_LABELS)
    return r


def local_rows(law: str) -> list[dict]:
    from sparkpredict.features.runs import runs_table

    selection.DRIFT_LAW = law
    runs = runs_table(str(ROOT / "tests" / "data" / "history"))
    out = []
    for job in ("sqljoin", "sort", "wordcount"):
        g = runs[runs["job"] == job]
        m = JobRuntimeModel().fit(g)
        top = float(g["input_bytes"].max())
        for factor in (3, 8, 62):
            iv = m.predict_interval({"input_bytes": np.array([top * factor]), "executors": np.array([2.0])}, 0.9)
            out.append({"law": law, "job": job, "factor": factor, "pred": iv["predicted_runtime_s"][0],
                        "lower": iv["lower_s"][0], "upper": iv["upper_s"][0]})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args()
    warnings.filterwarnings("ignore")
    shipped = selection.DRIFT_LAW
    t0 = time.perf_counter()
    try:
        r = pd.concat([c3o_rows(law) for law in (*LAWS, BOTH, CURVE)], ignore_index=True)
        local = pd.DataFrame([x for law in LAWS for x in local_rows(law)])
    finally:
        selection.DRIFT_LAW = shipped
    wall = time.perf_counter() - t0

    lines = ["## Far extrapolation: the interval beyond the runs (far_extrapolation)", "",
             ("The interval's drift law beyond the training range, shipped `linear_log` (the drift "
             "times d up to d = 1, then times 1 + log d) against the reference `relative` (times d, "
             "capped at 10; the law before 2026-11-30), both fitted in this run. d = how far the "
             "query lies beyond the runs (0.5 = 50 % beyond the largest size or executor count)."), "",
             ("**C3O trained on a corner of its grid** (21 recurring jobs; train on the 3 or 4 smallest "
             "sizes, on executor counts <= 6, or both; test every run beyond), 90 % interval:"), "",
             ("| d | test runs | law | runs below the upper bound | runs inside the interval "
             "| upper / prediction: median | 90th pct | largest |"),
             "|---|---:|---|---:|---:|---:|---:|---:|"]
    for b in BIN_LABELS:
        for law in (*LAWS, BOTH, CURVE):
            g = r[(r.law == law) & (r.bin == b)]
            if not len(g):
                continue
            lines.append(f"| {b} | {len(g)} | {law} | {g.below_upper.mean():.1%} | {g.inside.mean():.1%} "
                         f"| {g.width.median():.2f}x | {g.width.quantile(0.9):.1f}x | {g.width.max():,.0f}x |")
    lines += ["", ("**The local history** (`tests/data/history`, inputs 4-32 MB recorded on this machine, "
              "repeats up to 5x apart), 2 executors, 90 % interval:"), "",
              ("| job | input / largest run's | prediction | relative (reference) | linear_log (shipped) "
              "| upper / prediction: relative | linear_log |"),
              "|---|---:|---:|---|---|---:|---:|"]
    for (job, factor), g in local.groupby(["job", "factor"], sort=False):
        ref, new = g[g.law == "relative"].iloc[0], g[g.law == "linear_log"].iloc[0]
        lines.append(f"| {job} | {factor}x | {format_duration(new.pred)} | {format_duration(ref.lower)} - {format_duration(ref.upper)} "
                     f"| {format_duration(new.lower)} - {format_duration(new.upper)} | {ref.upper / ref.pred:,.0f}x "
                     f"| {new.upper / new.pred:,.0f}x |")
    shipped_rows = r[r.law == "linear_log"]
    lines += ["", ("**The point prediction beyond the largest size** (shipped law's rows; the cap "
                   "`hybrid.SIZE_GROWTH = \"linear_pooled\"` lets the part of the runtime that grows with the "
                   "input grow at most in proportion to it from the largest size's prediction, the fixed cost "
                   "(the curve at a 1-byte input) held, and at least by the share of the runtime that grows at "
                   "the runs' executor counts (their median); references, the same models: `\"linear\"`, the "
                   "cap without that floor (shipped before 2026-12-04), `\"proportional\"`, the cap on the whole "
                   "runtime, fixed cost included, and the models' own growth, `free`):"),
              "", ("| split | d | test runs | MAPE capped | MAPE linear | MAPE proportional | MAPE free "
                   "| capped > 2x true | linear > 2x true | proportional > 2x true | free > 2x true "
                   "| capped < 0.5x true | linear < 0.5x true | proportional < 0.5x true | free < 0.5x true |"),
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    sized = shipped_rows[shipped_rows.split.str.startswith("smallest")]

    def growth_row(label: str, g: pd.DataFrame) -> str:
        cols = (g.pred, g.lin, g.prop, g.free)
        return (f"| smallest 3-4 sizes | {label} | {len(g)} | "
                + " | ".join(f"{((c - g.y).abs() / g.y).mean():.1%}" for c in cols) + " | "
                + " | ".join(f"{(c > 2 * g.y).mean():.1%}" for c in cols) + " | "
                + " | ".join(f"{(c < 0.5 * g.y).mean():.1%}" for c in cols) + " |")

    for b in BIN_LABELS:
        g = sized[sized.bin == b]
        if len(g):
            lines.append(growth_row(b, g))
    lines.append(growth_row("all", sized))
    near = r[r.d <= 1]
    far = r[r.d > 1]
    ref_near, new_near = near[near.law == LAWS[0]], near[near.law == LAWS[1]]
    same_upper = np.allclose(ref_near.upper.to_numpy(), new_near.upper.to_numpy(), rtol=1e-9)
    floored = int(np.sum(~np.isclose(ref_near.lower.to_numpy(), new_near.lower.to_numpy(), rtol=1e-9)))
    fr, fn, fb = far[far.law == "relative"], far[far.law == "linear_log"], far[far.law == BOTH]
    fc = far[far.law == CURVE]
    lines += ["",
              (f"Within d <= 1, where the extrapolation folds measured the drift, the two laws give "
              f"{'the same' if same_upper else 'different'} upper bounds; the size floor raised {floored} of "
              f"{len(new_near)} lower bounds there. Beyond it (d > 1, {len(fn)} test runs) "
              f"the shipped law keeps {fn.below_upper.mean():.1%} of the runs below the upper bound (reference "
              f"{fr.below_upper.mean():.1%}) with the upper bound at a median {fn.width.median():.2f}x the "
              f"prediction (reference {fr.width.median():.2f}x; ratio {fn.width.median() / fr.width.median():.2f}) "
              f"and a 90th percentile of {fn.width.quantile(0.9):,.0f}x (reference {fr.width.quantile(0.9):,.0f}x); "
              f"{fn.inside.mean():.1%} lie inside the interval (reference {fr.inside.mean():.1%}). Both "
              "laws' intervals keep their log widths around the capped prediction (table above)."),
              "",
              (f"The lower bound keeps the relative law: on the log law too (`{BOTH}`, not shipped) only "
               f"{fb.inside.mean():.1%} of the runs beyond d = 1 lay inside the interval, because the models "
               "trained on pagerank's 3 smallest sizes (1.0-1.11x apart) over-predict 3x larger inputs 3-6x. "
               "What keeps far lower bounds off 0 s is the size floor: beyond the largest size the lower "
               "bound is at least the largest size's (a run does not get faster because its input grew)."),
              "",
              (f"The drift is measured on the prediction as shipped, capped beyond the sizes "
               f"(`selection.DRIFT_OF = \"shipped\"`): the fold that leaves the largest size out scores the "
               f"capped prediction. Measured on the fitted curve instead (`{CURVE}`, the reference, as "
               f"before 2026-12-02), beyond d = 1 {fc.inside.mean():.1%} of the runs lay inside the interval "
               f"(shipped {fn.inside.mean():.1%}) with the upper bound at a median {fc.width.median():.2f}x "
               f"the prediction (shipped {fn.width.median():.2f}x; ratio {fn.width.median() / fc.width.median():.2f}). "
               "The wider far bounds are the price of a job whose runtime grows faster than its input: "
               "there the curve was right and the capped prediction 8x too low at 8x the largest size, "
               "with a drift of a few % around it (`tests/test_superlinear_growth.py`: none of 4 seeds' "
               "runs at 4x and 8x inside the 90 % interval measured on the curve; all at 2x and 4x, and 1 of "
               "4 at 8x, measured on the capped prediction)."),
              "",
              ("No data here reaches d > 2.3 for C3O; the local rows show what the law does at 8x and 62x. "
              "Intervals that wide say the history cannot answer that question: record a run nearer the size."),
              "",
              f"Wall time {wall:.0f} s."]
    publish("far_extrapolation", lines, write=not a.no_write)


if __name__ == "__main__":
    main()
