"""The study's tables on C3O and the combined model against the goals (section ``c3o_models``).

A *job* here is one C3O program with all its parameters fixed except the one that sets the
input size, on one machine type: e.g. ``sgd/r4.2xlarge/features=5,iterations=25`` (observations
vary the size). That is what a recurring production job looks like — the same code and settings
on a growing input — and it leaves the model S (input size) and E (nodes) to learn, as in the
study. Key: ``program/machine_type/fixed parameters``. Size-defining parameters: grep/sort ``lines``, kmeans/sgd ``observations``, pagerank
``links``. Jobs with fewer than 3 input sizes (C3O's single-configuration machine types) are
listed but left out of the tables: no size split can be made for them.

Run: ``python benchmarks/c3o_models.py [--jobs N] [--procs P]``.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import write_section
from c3o_data import PARAMS, load_c3o

SIZE_PARAM = {"grep": "lines", "kmeans": "observations", "pagerank": "links", "sgd": "observations",
              "sort": "lines"}
GOALS = {"interp_mape": 0.02, "extrap_mape_mean": 0.08, "extrap_mape_worst": 0.15, "extrap_r2": 0.98,
         "coverage": (0.85, 0.95)}


def c3o_runs() -> pd.DataFrame:
    """C3O as one runs table with the job key described in the module docstring."""
    d = load_c3o()
    keys = []
    for _, r in d.iterrows():
        fixed = [p for p in PARAMS[r["job"]] if p != SIZE_PARAM[r["job"]]]
        keys.append(f"{r['job']}/{r['machine_type']}/" + ",".join(f"{p}={r[p]:g}" for p in fixed))
    d = d.assign(job=keys, c3o_job=d["job"])
    d.insert(0, "run_id", [f"c3o-{i}" for i in range(len(d))])
    return d


def _eval_job(args: tuple[pd.DataFrame, tuple[str, ...] | None]):
    from sparkpredict.evaluate import evaluate

    rows, models = args
    numeric = rows.drop(columns=["machine_type", "c3o_job"])
    if models is None:
        return evaluate(numeric)
    return evaluate(numeric, models=list(models), include_study=False)


def run(max_jobs: int | None, procs: int, models: tuple[str, ...] | None = None):
    from sparkpredict.evaluate import Evaluation

    runs = c3o_runs()
    levels = runs.groupby("job")["input_bytes"].nunique()
    ok_jobs = sorted(levels[levels >= 3].index)
    excluded = sorted(levels[levels < 3].index)
    if max_jobs:
        ok_jobs = ok_jobs[:: max(1, len(ok_jobs) // max_jobs)][:max_jobs]
    tasks = [(runs[runs["job"] == j], models) for j in ok_jobs]
    t0 = time.perf_counter()
    if procs > 1:
        with ProcessPoolExecutor(procs) as ex:
            parts = list(ex.map(_eval_job, tasks))
    else:
        parts = [_eval_job(t) for t in tasks]
    wall = time.perf_counter() - t0
    ev = Evaluation(pd.concat([p.rows for p in parts], ignore_index=True),
                    {k: v for p in parts for k, v in p.skipped.items()})
    return ev, ok_jobs, excluded, wall


EQUATION_MODELS = ("amdahl", "gustafson", "ernest", "plate2d", "fully_connected", "fully_connected_c1")
ML_MODELS = ("kernel_ridge", "gbm", "random_forest")
#: seeds of the 3-fold CV beyond the tables' seed 0, for the models nearest the combined one there
EXTRA_SEEDS = (1, 2)
SEED_MODELS = ("combined", "gbm", "random_forest")


def noise_floor(runs: pd.DataFrame) -> str:
    """Run-to-run noise per C3O program: each run predicted by its configuration's median (the
    run itself included, an oracle) and by the median of its other repeats (what a model that
    saw every other run of the configuration could do at best)."""
    keys = ["job", "input_bytes", "executors"]
    own, loo = {}, {}
    for prog, g in runs.groupby("c3o_job"):
        a, b = [], []
        for _, cell in g.groupby(keys):
            y = cell["runtime_s"].to_numpy(float)
            if len(y) < 2:
                continue
            a.append(np.abs(y - np.median(y)) / y)
            b.append([abs(v - np.median(np.delete(y, i))) / v for i, v in enumerate(y)])
        own[prog] = float(np.mean(np.concatenate(a)))
        loo[prog] = float(np.mean(np.concatenate([np.asarray(x) for x in b])))
    return ("Noise floor (computed from the runs): predicting each run by its configuration's median, "
            "the run itself included (an oracle), has MAPE "
            + ", ".join(f"{100 * own[p]:.1f} % ({p})" for p in sorted(own))
            + "; by the median of its other repeats, what a model that saw every other run of the "
            "configuration could do, " + ", ".join(f"{100 * loo[p]:.1f} % ({p})" for p in sorted(loo))
            + ". The 3-fold CV split mostly asks for another repeat of a configuration it trained on: "
            "its 2 % goal lies at or below the second figure for most programs.")


def robustness_lines(ev, runs: pd.DataFrame, jobs: list[str], procs: int) -> list[str]:
    """How firm the tables' claims are: wins per job, the CV seed, coverage per job, the splits."""
    ok = ev.rows[ev.rows["error"].isna()]
    out = ["### How firm these figures are", ""]
    out.append("| split | jobs | combined lowest of the 10 | beats the best ML model | beats the best equation |")
    out.append("|---|---|---|---|---|")
    for sp, g in ok.groupby("split", sort=False):
        t = g.pivot_table(index="job", columns="model", values="mape", aggfunc="mean")
        if "combined" not in t:
            continue
        c = t["combined"]
        ml = t[[m for m in ML_MODELS if m in t]].min(axis=1)
        eq = t[[m for m in EQUATION_MODELS if m in t]].min(axis=1)
        lowest = c <= t.min(axis=1)
        out.append(f"| {sp} | {len(t)} | {int(lowest.sum())} | {int((c < ml).sum())} | {int((c < eq).sum())} |")
    out.append("")
    out.append("The means above average over jobs. Per job, the last column compares with the best "
               "equation of each job picked after seeing its test runs, which no user can; the ML "
               "regressors learn the runtime in seconds by squared error with the size ratios as "
               "features, the equations and the combined model the relative error (weights 1/y²).")
    # the CV seed: the tables use seed 0
    seeded = {0: ok[(ok["split"] == "cv3")].groupby("model")["mape"].mean()}
    tasks = [(runs[runs["job"] == j], seed) for seed in EXTRA_SEEDS for j in jobs]
    if procs > 1:
        with ProcessPoolExecutor(procs) as ex:
            parts = list(ex.map(_eval_cv_seed, tasks))
    else:
        parts = [_eval_cv_seed(t) for t in tasks]
    for seed in EXTRA_SEEDS:
        rows = pd.concat([p for (s, p) in parts if s == seed], ignore_index=True)
        seeded[seed] = rows[rows["error"].isna()].groupby("model")["mape"].mean()
    out.append("")
    out.append("3-fold CV MAPE by the seed of its folds (mean over jobs): " + "; ".join(
        f"seed {seed}: " + ", ".join(f"{m} {100 * seeded[seed][m]:.2f} %" for m in SEED_MODELS if m in seeded[seed])
        for seed in seeded) + ". Inside the runs the combined model and the best ML regressor are tied "
        "within the folds' chance.")
    comb = ok[ok["model"] == "combined"]
    cov = []
    for sp, g in comb.groupby("split", sort=False):
        c = g["coverage90"].dropna()
        if len(c):
            cov.append(f"{sp}: {int(((c >= 0.85) & (c <= 0.95)).sum())} of {len(c)} jobs in 85-95 %, "
                       f"{int((c >= 0.999).sum())} at 100 %, lowest {100 * c.min():.1f} %")
    out.append("")
    out.append("The combined model's 90 % coverage per job (the goal is judged on the mean): " + "; ".join(cov)
               + ". Per job a split has 1-3 test levels, so a job's coverage is mostly all or nothing.")
    levels = runs[runs["job"].isin(jobs)].groupby("job")["input_bytes"].nunique()
    three = int((levels == 3).sum())
    out.append("")
    out.append(f"The size splits: {three} of the {len(jobs)} jobs have 3 input sizes, and there extrap_size "
               "trains on the two smallest and tests the largest, the same split as practitioner (their "
               "per-job figures are the same); jobs with 5 sizes test the largest and the smallest. The "
               "interval rules beyond the runs (the floor below the counts, the near-equal equations' "
               "spread, the drift law) and the size-growth cap were chosen on these same splits, so "
               "their coverage and MAPE here are development-set figures; no C3O data are held back.")
    return out


def _eval_cv_seed(args: tuple[pd.DataFrame, int]):
    from sparkpredict.evaluate import evaluate

    rows, seed = args
    numeric = rows.drop(columns=["machine_type", "c3o_job"])
    return seed, evaluate(numeric, models=list(SEED_MODELS), splits="cv3", include_study=False,
                          random_state=seed).rows


def goal_lines(ev) -> list[str]:
    from sparkpredict.evaluate import summary

    s = summary(ev, "combined")
    out = []

    def mark(ok: bool) -> str:
        return "**met**" if ok else "**not met**"

    cv = s.get("cv3", {})
    if cv:
        out.append(f"- goal interpolation MAPE ≤ 2 % (3-fold CV, mean over jobs): {mark(cv['mape_mean'] <= 0.02)} "
                   f"({100 * cv['mape_mean']:.2f} %; worst job {100 * cv['mape_worst']:.2f} %)")
    ex = [s[k] for k in ("extrap_size", "extrap_executors") if k in s]
    if ex:
        mean = float(np.mean([e["mape_mean"] for e in ex]))
        worst = max(e["mape_worst"] for e in ex)
        r2 = float(np.mean([e["r2_mean"] for e in ex]))
        detail = ", ".join(f"{k}: mean {100 * s[k]['mape_mean']:.2f} %, worst {100 * s[k]['mape_worst']:.2f} %, "
                           f"R² {s[k]['r2_mean']:.3f}" for k in ("extrap_size", "extrap_executors") if k in s)
        out.append(f"- goal extrapolation MAPE ≤ 8 % averaged over jobs: {mark(mean <= 0.08)} ({100 * mean:.2f} %; {detail})")
        out.append(f"- goal extrapolation MAPE ≤ 15 % on the worst job: {mark(worst <= 0.15)} ({100 * worst:.2f} %)")
        out.append(f"- goal mean R² ≥ 0.98 on the extrapolation splits: {mark(r2 >= 0.98)} ({r2:.3f})")
    covs = [v["coverage90_mean"] for v in s.values() if np.isfinite(v["coverage90_mean"])]
    if covs:
        c = float(np.mean(covs))
        per = ", ".join(f"{k} {100 * v['coverage90_mean']:.1f} %" for k, v in s.items())
        out.append(f"- goal 90 % interval coverage in 85–95 %: {mark(0.85 <= c <= 0.95)} "
                   f"({100 * c:.1f} % mean over splits; {per})")
    return out


def alternates_reference(jobs: list[str]) -> str:
    """The extrap_executors split's 90 % coverage with and without the near-equal equations'
    spread beyond the counts (``executor_alternates_``): the same fitted model, its
    alternates dropped for the reference, so the two differ in that alone; below the counts
    also without the perfect-scaling floor (``below_counts_``, ``hybrid.BELOW_COUNTS``)."""
    from sparkpredict.evaluate import outer_levels
    from sparkpredict.models.hybrid import JobRuntimeModel

    runs = c3o_runs()
    hit: dict[str, list[np.ndarray]] = {"shipped": [], "reference": [], "no_floor": []}
    width: dict[str, list[np.ndarray]] = {"shipped": [], "reference": [], "no_floor": []}
    below, n_alt = [], []
    for j in jobs:
        g = runs[runs["job"] == j].drop(columns=["machine_type", "c3o_job"])
        test = outer_levels(g["executors"].to_numpy())
        if test is None:
            continue
        m = JobRuntimeModel().fit(g[~test])
        t, y = g[test], g[test]["runtime_s"].to_numpy()
        alone = JobRuntimeModel.from_dict(dict(m.to_dict(), executor_alternates=[]))
        no_floor = JobRuntimeModel.from_dict(dict(m.to_dict(), below_counts="none"))
        n_alt.append(len(m.executor_alternates_))
        below.append(t["executors"].to_numpy() < m.training_range_["executors"][0])
        for k, model in (("shipped", m), ("reference", alone), ("no_floor", no_floor)):
            iv = model.predict_interval(t, 0.9)
            hit[k].append((iv["lower_s"] <= y) & (y <= iv["upper_s"]))
            width[k].append(iv["upper_s"] / iv["lower_s"])
    low = np.concatenate(below)

    def cov(k: str, mask=None) -> str:
        h = np.concatenate(hit[k])
        return f"{100 * np.mean(h if mask is None else h[mask]):.1f} %"

    return (f"**Beyond the executor counts** (extrap_executors, {len(n_alt)} jobs, same fits): the interval "
            f"spanning the near-equal equations (`selection.NEAR_EQUAL`, a median {np.median(n_alt):.0f} "
            f"per job) covers {cov('shipped')} of the test runs pooled over the jobs, against {cov('reference')} for the chosen "
            f"model's interval alone (reference; both with the perfect-scaling floor below the counts); above the counts {cov('shipped', ~low)} vs "
            f"{cov('reference', ~low)}, below them (2 nodes, where runs slow more than every equation predicts) "
            f"{cov('shipped', low)} vs {cov('reference', low)}. Median upper / lower bound "
            f"{np.median(np.concatenate(width['shipped'])):.2f}x vs "
            f"{np.median(np.concatenate(width['reference'])):.2f}x. Without the perfect-scaling floor "
            f"below the counts (`hybrid.BELOW_COUNTS = \"none\"`, the same fits, alternates kept): "
            f"{cov('no_floor')} inside, below them {cov('no_floor', low)}, median upper / lower bound "
            f"{np.median(np.concatenate(width['no_floor'])):.2f}x ({np.median(np.concatenate(width['no_floor'])[low]):.2f}x "
            f"below them, {np.median(np.concatenate(width['shipped'])[low]):.2f}x with the floor).")


def main() -> None:
    from sparkpredict.evaluate import SPLITS, format_tables, summary

    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=None, help="evaluate only N jobs (quick look)")
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args()
    ev, jobs, excluded, wall = run(a.jobs, a.procs)
    runs = c3o_runs()
    lines = goal_lines(ev)
    overview = ["| model | " + " | ".join(f"{sp} MAPE | {sp} R²" for sp in SPLITS) + " |",
                "|---|" + "---|---|" * len(SPLITS)]
    for model, g in ev.rows.groupby("model", sort=False):
        cells = []
        for sp in SPLITS:
            gs = g[(g["split"] == sp) & g["error"].isna()]
            cells += [f"{100 * gs['mape'].mean():.1f} %", f"{gs['r2'].mean():.3f}"] if len(gs) else ["–", "–"]
        overview.append(f"| {model} | " + " | ".join(cells) + " |")
    body = "\n".join([
        "## C3O: the study's protocols, every model, every job",
        "",
        (f"{len(jobs)} jobs (a job = one C3O program with fixed parameters on one machine type; the "
        "size-defining parameter varies the input — see `benchmarks/c3o_models.py`), 4,650 runs in C3O. "
        f"Left out (fewer than 3 input sizes): {len(excluded)} jobs. Evaluation wall time {wall:.0f} s on "
        f"{a.procs} processes; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at the end."),
        "",
        noise_floor(runs),
        "",
        "### Goals (combined model = `JobRuntimeModel(kind='auto')`)",
        "",
        *lines,
        "",
        alternates_reference(jobs),
        "",
        "### Means over jobs",
        "",
        *overview,
        "",
        f"Errors (model could not be fitted on a split): {int(ev.rows['error'].notna().sum())} of {len(ev.rows)}.",
        "",
        *robustness_lines(ev, runs, jobs, a.procs),
        "",
        "### Per job (the study's Tables 8–11 layout)",
        "",
        format_tables(ev),
    ])
    print("\n".join(lines))
    print("\n".join(overview))
    print(summary(ev, "combined"))
    if not a.no_write:
        write_section("c3o_models", body)


if __name__ == "__main__":
    main()
