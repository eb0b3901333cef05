"""How long fitting takes for one job of ~150 runs (section ``fit_speed``).

Measured on the C3O job ``grep/m4.2xlarge/line_length=100,p_occurrence=0.5`` (150 runs):

* every model of the study fitted once on all 150 runs (six equations by NNLS + 1-D search,
  kernel ridge with its degree/alpha search, GBM with sklearn defaults, a 50-tree forest);
* ``combined`` — ``JobRuntimeModel(kind="auto")``: every equation with its cross-validation
  (all folds of an equation in one batched NNLS), the hybrid's cross-validation, the final fit
  and the interval residuals (a fold per input size left out, up to 10): what `sparkpredict
  fit` and the retrain job do per job;
* reference, in the same run and alternating with the above: one scikit-learn
  ``GradientBoostingRegressor()`` fit on the same rows (to show how contended the machine was).

Medians of ``--repeat`` alternating rounds; imports are done before timing.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import write_section
from c3o_models import c3o_runs

JOB = "grep/m4.2xlarge/line_length=100,p_occurrence=0.5"
GOAL_S = 0.5


def _raw_fits(rows) -> dict:
    """Every model of the study fitted once on all rows (no CV): name -> callable."""
    from sparkpredict.models import analytical as A
    from sparkpredict.models import ml as M
    from sparkpredict.models.job_runs import design_matrix

    S = rows["input_bytes"].to_numpy(float) / 2**30
    E = rows["executors"].to_numpy(float)
    y = rows["runtime_s"].to_numpy(float)
    F = {c: rows[c].to_numpy(float) for c in ("input_bytes", "executors", "executor_cores", "executor_memory_mb")}
    X = design_matrix(F, [])
    fits = {name: (lambda n=name: A.fit_equation(n, S, E, y, weights=1 / y**2)) for name in A.EQUATIONS}
    fits["kernel_ridge"] = lambda: M.fit_kernel_ridge(X, y)
    fits["gbm"] = lambda: M.fit_gbm(X, y, 0)
    fits["random_forest"] = lambda: M.fit_random_forest(X, y, 0)
    return fits


def main() -> None:
    from sklearn.ensemble import GradientBoostingRegressor

    from sparkpredict.models.hybrid import JobRuntimeModel

    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args()
    runs = c3o_runs()
    rows = runs[runs["job"] == JOB].drop(columns=["machine_type", "c3o_job"]).reset_index(drop=True)
    X = np.column_stack([rows["input_bytes"], rows["executors"]])
    y = rows["runtime_s"].to_numpy()
    fits = _raw_fits(rows)
    names = list(fits)
    times: dict[str, list[float]] = {k: [] for k in names + ["all_once", "combined", "reference_gbm"]}
    JobRuntimeModel(kind="auto").fit(rows)  # warm-up: imports, caches
    for f in fits.values():
        f()
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        GradientBoostingRegressor(random_state=0).fit(X, y)
        times["reference_gbm"].append(time.perf_counter() - t0)
        total = 0.0
        for k in names:
            t0 = time.perf_counter()
            fits[k]()
            dt = time.perf_counter() - t0
            times[k].append(dt)
            total += dt
        times["all_once"].append(total)
        t0 = time.perf_counter()
        JobRuntimeModel(kind="auto").fit(rows)
        times["combined"].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    ref = med["reference_gbm"]
    lines = ["| fit | median s | × reference GBM fit |", "|---|---|---|"]
    labels = {"all_once": "**all nine study models, once each**",
              "combined": "**combined model (`kind='auto'`: 6 equations + hybrid, 7-fold extrapolation-aware CV, "
                          "final fit, a calibration fold per input size for the intervals)**", "reference_gbm": "reference: sklearn GBM on (S, E)"}
    for k in names + ["all_once", "combined", "reference_gbm"]:
        lines.append(f"| {labels.get(k, k)} | {med[k]:.3f} | {med[k] / ref:.1f} |")

    def mark(v: float) -> str:
        return "**met**" if v <= GOAL_S else "**not met**"

    body = "\n".join([
        f"## Fitting speed: one job of {len(rows)} runs (C3O `{JOB}`)",
        "",
        (f"Median of {a.repeat} alternating rounds, imports excluded; 1-minute load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at the end. The reference sklearn GBM fit "
        "in the same rounds shows how loaded the machine was (it takes ~0.05-0.1 s on an idle core)."),
        "",
        *lines,
        "",
        (f"- goal fitting all models for one job of ~150 runs ≤ {GOAL_S} s — every model of the study once: "
        f"{mark(med['all_once'])} ({med['all_once']:.3f} s)"),
        (f"- goal (same, read as the combined model that `sparkpredict fit` runs per job, CV included): "
        f"{mark(med['combined'])} ({med['combined']:.3f} s; {med['combined'] / ref:.1f}× one sklearn GBM fit)"),
    ])
    print(body)
    if not a.no_write:
        write_section("fit_speed", body)


if __name__ == "__main__":
    main()
