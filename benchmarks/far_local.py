"""The interval far beyond the runs, checked against real runs: the listener-recorded history of
``tests/data/history`` (inputs 4-32 MB) asked about 128 MB, 512 MB and 1 GB, and those sizes
then run on this machine.

``far_extrapolation.py`` measures the drift law on C3O, whose data reach d = 2.3 (3.3x the
largest size); beyond that the law was chosen by argument. Here the same three workloads are
run at 4x, 16x and 32x their history's largest input (d = 3, 15 and 31), with ``sparkpredict
sweep --master local`` as the history was recorded, plus 32 MB (inside the history) to measure
how fast the machine runs today against the day the history was recorded. Every run is scored
against the 90 % interval of the model fitted on the history, under the shipped law
(``linear_log``) and the old one (``relative``, the reference), both in this run.

    python benchmarks/far_local.py [--store DIR] [--skip-sweep] [--no-write]

The sweep resumes: runs already in ``--store`` are not run again.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import publish

from sparkpredict.features.runs import runs_table
from sparkpredict.models import selection
from sparkpredict.models.hybrid import SIZE_GROWTH, JobRuntimeModel
from sparkpredict.units import format_bytes, format_duration

ROOT = Path(__file__).resolve().parents[1]
HISTORY = ROOT / "tests" / "data" / "history"
JOBS = ("wordcount", "sort", "sqljoin")
LAWS = ("relative", "linear_log")  # reference first


def sweep(store: Path, cache: Path, sizes: str, executors: str) -> float:
    """Record the far runs (one process per workload, as the history was recorded)."""
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    t0 = time.perf_counter()
    for w in JOBS:
        cmd = [sys.executable, "-m", "sparkpredict", "sweep", "--workload", w, "--sizes", sizes,
               "--executors", executors, "--master", "local", "--store", str(store), "--cache", str(cache)]
        print("$", " ".join(cmd[1:]), flush=True)
        subprocess.run(cmd, env=env, check=True)
    return time.perf_counter() - t0


def score(far: pd.DataFrame, history: pd.DataFrame, law: str) -> pd.DataFrame:
    """Each far run against the interval of the model fitted on its job's history, under ``law``."""
    shipped = selection.DRIFT_LAW
    selection.DRIFT_LAW = law
    try:
        out = []
        for job in JOBS:
            m = JobRuntimeModel().fit(history[history["job"] == job])
            t = far[far["job"] == job]
            iv = m.predict_interval(t, 0.9)
            m.size_growth_ = "linear"  # reference: the cap without the pooled floor
            lin = m.predict(t)
            m.size_growth_ = "proportional"  # reference: the earlier cap (fixed cost grows too)
            prop = m.predict(t)
            m.size_growth_ = "free"  # reference: the fitted curve's own growth beyond the sizes
            free = m.predict(t)
            out.append(pd.DataFrame({"free": free, "prop": prop, "lin": lin,
                "law": law, "job": job, "input_bytes": t["input_bytes"].to_numpy(),
                "executors": t["executors"].to_numpy(), "d": m.extrapolation(t)["max"],
                "y": t["runtime_s"].to_numpy(), "pred": iv["predicted_runtime_s"],
                "lower": iv["lower_s"], "upper": iv["upper_s"], "model": m.name_}))
    finally:
        selection.DRIFT_LAW = shipped
    r = pd.concat(out, ignore_index=True)
    r["below_upper"] = r.y <= r.upper
    r["inside"] = r.below_upper & (r.y >= r.lower)
    r["width"] = r.upper / r.pred
    return r


def machine_speed(far: pd.DataFrame, history: pd.DataFrame) -> dict[str, float]:
    """Per job: today's runtime over the history's at the history's largest size (same counts)."""
    out = {}
    for job in JOBS:
        h = history[history["job"] == job]
        top = h["input_bytes"].max()
        now = far[(far["job"] == job) & (far["input_bytes"] == top)]
        then = h[(h["input_bytes"] == top) & h["executors"].isin(now["executors"])]
        if len(now) and len(then):
            out[job] = float(now["runtime_s"].median() / then["runtime_s"].median())
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", default="/tmp/sparkpredict-far/store")
    ap.add_argument("--cache", default="/tmp/sparkpredict-far/cache")
    ap.add_argument("--sizes", default="32MB,128MB,512MB,1GB")
    ap.add_argument("--executors", default="1,2")
    ap.add_argument("--skip-sweep", action="store_true", help="score the runs already in --store")
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args()
    warnings.filterwarnings("ignore")
    wall = 0.0 if a.skip_sweep else sweep(Path(a.store), Path(a.cache), a.sizes, a.executors)
    history = runs_table(str(HISTORY))
    far = runs_table(a.store)
    far = far[far["job"].isin(JOBS)]
    speed = machine_speed(far, history)
    beyond = far[far["input_bytes"] > history["input_bytes"].max()]
    r = pd.concat([score(beyond, history, law) for law in LAWS], ignore_index=True)

    lines = ["## Far extrapolation checked against local runs (far_local)", "",
             (f"The models fitted on `tests/data/history` (inputs 4-32 MB, `sweep --master local`, "
              f"recorded 2026-11-29), asked about inputs 4x, 16x and 32x beyond, and those runs then "
              f"recorded on this machine ({len(beyond)} runs: {', '.join(JOBS)} at "
              f"{', '.join(format_bytes(int(s)) for s in sorted(beyond['input_bytes'].unique()))}, "
              f"executors {a.executors}, 1 run each). 90 % interval under the shipped law "
              f"(`linear_log`) and the old one (`relative`, reference), fitted in this run."), "",
             ("The machine today against the day of the history, median runtime at 32 MB, same "
              "executor counts: " + ", ".join(f"{j} {v:.2f}x" for j, v in speed.items())
              + ". Below 1, the machine is faster now, which pulls the true runtimes below the "
              "history's law at every size."), "",
             ("| job | input | executors | d | true | prediction | relative (reference) | linear_log (shipped) "
              "| upper / prediction: relative | linear_log |"),
             "|---|---:|---:|---:|---:|---:|---|---|---:|---:|"]
    for (_job, _s, _e), g in r.groupby(["job", "input_bytes", "executors"], sort=False):
        ref, new = g[g.law == "relative"].iloc[0], g[g.law == "linear_log"].iloc[0]

        def iv(x):
            mark = "" if x.inside else (" (above)" if x.y > x.upper else " (below)")
            return f"{format_duration(x.lower)} - {format_duration(x.upper)}{mark}"
        lines.append(f"| {new.job} | {format_bytes(int(new.input_bytes))} | {int(new.executors)} | {new.d:.0f} "
                     f"| {format_duration(new.y)} | {format_duration(new.pred)} | {iv(ref)} | {iv(new)} "
                     f"| {ref.width:,.0f}x | {new.width:,.0f}x |")
    lines += ["", "| law | runs | below the upper bound | inside the interval | upper / prediction: median | largest |",
              "|---|---:|---:|---:|---:|---:|"]
    for law in LAWS:
        g = r[r.law == law]
        lines.append(f"| {law} | {len(g)} | {g.below_upper.mean():.0%} | {g.inside.mean():.0%} "
                     f"| {g.width.median():,.1f}x | {g.width.max():,.0f}x |")
    new = r[r.law == "linear_log"]
    ratio, prop, free, lin = new.pred / new.y, new.prop / new.y, new.free / new.y, new.lin / new.y
    same = int((abs(new.lin / new.pred - 1) < 1e-9).sum())
    models = ", ".join(f"{j} {g.model.iloc[0]}" for j, g in new.groupby("job", sort=False))
    hist_means = ", ".join(
        f"{j} " + " / ".join(f"{v:.1f}" for v in history[history.job == j].groupby("input_bytes").runtime_s.mean())
        for j in JOBS)
    lines += ["", (f"Models fitted on the history: {models}. The prediction over the true runtime: median "
                   f"{ratio.median():.1f}x, from {ratio.min():.1f}x to {ratio.max():.0f}x, with the growth "
                   f"beyond the largest size held to linear in the part that grows with the input "
                   f"(`hybrid.SIZE_GROWTH = \"{SIZE_GROWTH}\"`); without the floor on that part "
                   f"(reference, `\"linear\"`): median {lin.median():.1f}x, from {lin.min():.1f}x to "
                   f"{lin.max():.0f}x, the same prediction for {same} of the {len(new)} runs; the cap before, on the whole runtime, fixed cost "
                   f"included (reference, `\"proportional\"`): median {prop.median():.1f}x, from "
                   f"{prop.min():.1f}x to {prop.max():.0f}x; the fitted "
                   f"curves' own growth (reference, same models): median {free.median():.1f}x, from "
                   f"{free.min():.1f}x to {free.max():.0f}x. The interval keeps its log widths around "
                   "the capped prediction. "
                   + ("Every run lies below the shipped upper bound" if new.below_upper.all() else
                      f"{int((~new.below_upper).sum())} run(s) lie above the shipped upper bound")
                   + f"; {int((~new.inside).sum())} lie below the lower bound."),
              "",
              ("Why the curves run high: at 4-32 MB the history's runtimes are mostly start-up "
               "and fixed cost, with noise on top (mean runtime per size, 4 / 8 / 16 / 32 MB: "
               f"{hist_means} s). The small rise at the top is extrapolated as curvature; the cap "
               "stops that, and what remains high is the largest size's own runtime, measured "
               "on a slower day (ratios above)."),
              "", (f"The {len(far)} runs ({len(beyond)} beyond the history, {len(far) - len(beyond)} at its largest "
                   f"size for the machine comparison) took {far.runtime_s.sum():.0f} s of application time; this "
                   f"invocation's sweep {wall:.0f} s (runs already in the store are not run again).")]
    publish("far_local", lines, write=not a.no_write)


if __name__ == "__main__":
    main()
