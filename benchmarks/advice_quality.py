"""Advice quality on C3O histories: does the advice meet the deadline, and at what cost?

Histories: a *recurring job* is one C3O job on one machine type with its non-input parameters
fixed (grep: p_occurrence; kmeans: k; pagerank: convergence_criterion; sgd: iterations; sort:
none), its runs spanning input sizes x 2..12 nodes x 5 repeats. Jobs with fewer than 3 input
sizes are left out. For each job and each of its sizes in turn (leave-one-size-out, so edge
sizes are extrapolation), the job's model is fitted on the other sizes and asked
``suggest_executors(objective="cost", deadline_s=D, confidence=0.9)`` over the counts C3O ran
(2, 4, ..., 12). The deadline D is the median over executor counts of the true runtime (mean of
the 5 repeats) at the held-out size. Truth: the advice meets the deadline when the true runtime
at the chosen count is within D; its cost is count x true runtime, compared with the cheapest
count that truly meets D.

    python benchmarks/advice_quality.py [--jobs sgd,sort] [--quick] [--reference] [--from-last]
"""
from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import write_section
from c3o_data import JOBS, PARAMS, load_c3o

#: job parameters that describe the input (they vary with the size), per C3O job
INPUT_PARAMS = {"grep": {"line_length", "lines"}, "kmeans": {"features", "observations"},
                "pagerank": {"pages", "links"}, "sgd": {"features", "observations"},
                "sort": {"line_length", "lines"}}
BASE = ["job", "input_bytes", "executors", "executor_cores", "executor_memory_mb", "runtime_s"]
CONFIDENCES = (0.9, 0.8, 0.7, 0.5)


def recurring_jobs(jobs=JOBS) -> dict[str, pd.DataFrame]:
    out = {}
    for j in jobs:
        df = load_c3o(j)
        keys = ["machine_type"] + [p for p in PARAMS[j] if p not in INPUT_PARAMS[j]]
        for k, g in df.groupby(keys):
            k = k if isinstance(k, tuple) else (k,)
            if g["input_bytes"].nunique() < 3:
                continue
            name = f"{j}/" + "/".join(str(v) for v in k)
            g = g[BASE + sorted(INPUT_PARAMS[j])].copy()
            g["job"] = name
            out[name] = g.reset_index(drop=True)
    return out


def _model_version() -> str:
    """The key of $SPARKPREDICT_BENCH_CACHE's fits: every module of the package, not only
    models/ (a fit reads features/, units.py and others too)."""
    import hashlib

    import sparkpredict as pkg

    h = hashlib.sha256()
    root = Path(pkg.__file__).parent
    for f in sorted(root.rglob("*.py")):
        h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]


class GroupCalibrated:
    """Reference only (not sparkpredict's model): the fitted model's point predictions with an
    interval from *leave-one-size-out* residuals on the training sizes, i.e. calibrated on
    unseen sizes, the question the advice asks."""

    def __init__(self, model, log_ratios: np.ndarray, executors: np.ndarray | None = None) -> None:
        self.model, self.r = model, np.asarray(log_ratios, float)
        # with executors: Mondrian calibration, quantiles from the runs at the same count
        self.e = None if executors is None else np.asarray(executors, float)
        for a in ("name_", "cv_mape_", "n_runs_", "training_range_", "feature_names_", "defaults_"):
            setattr(self, a, getattr(model, a, None))

    def extrapolation(self, X):
        return self.model.extrapolation(X)

    def predict_interval(self, X, confidence: float = 0.9):
        p = self.model.predict(X)
        qs = [(1 - confidence) / 2, (1 + confidence) / 2]
        lo, hi = (np.full(len(p), q) for q in np.quantile(self.r, qs))
        if self.e is not None:
            for k, e in enumerate(np.asarray(X["executors"], float)):
                same = self.r[self.e == e]
                if len(same) >= 10:
                    lo[k], hi[k] = np.quantile(same, qs)
        return {"predicted_runtime_s": p, "lower_s": p * np.exp(np.minimum(lo, 0.0)),
                "upper_s": p * np.exp(np.maximum(hi, 0.0))}


def loso_residuals(cls, name: str, g: pd.DataFrame, held: int) -> tuple[np.ndarray, np.ndarray]:
    """log(y / prediction) of every training run, each size predicted by a model fitted without it."""
    out, execs = [], []
    train_sizes = [t for t in sorted(g.input_bytes.unique()) if t != held]
    for t in train_sizes:
        key = f"pair-{min(t, held)}-{max(t, held)}"
        m, _ = _fit_cached(cls, name, key, g.loc[(g.input_bytes != held) & (g.input_bytes != t), BASE])
        rows = g[g.input_bytes == t]
        X = {c: rows[c].to_numpy(float) for c in BASE[1:-1]}
        out.append(np.log(rows.runtime_s.to_numpy(float) / m.predict(X)))
        execs.append(rows.executors.to_numpy(float))
    return np.concatenate(out), np.concatenate(execs)


def _fit_cached(cls, name: str, size, train: pd.DataFrame):
    """Fit, or reuse a fit of the same data by the same model code (SPARKPREDICT_BENCH_CACHE)."""
    import json
    import os

    cache = os.environ.get("SPARKPREDICT_BENCH_CACHE")
    path = None
    if cache:
        path = Path(cache) / _model_version() / f"{name.replace('/', '_')}-{size}.json"
        if path.exists():
            d = json.loads(path.read_text())
            return cls.from_dict(d["model"]), d["fit_s"]
    t0 = time.perf_counter()
    model = cls().fit(train)
    fit_s = time.perf_counter() - t0
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"model": model.to_dict(), "fit_s": fit_s}))
    return model, fit_s


def held_out_case(test: pd.DataFrame):
    """The truth at one held-out size: mean runtime and repeats per count, the deadline (median
    of the means over counts), each count's cost in executor-hours, and the cheapest meeting it."""
    truth = test.groupby("executors")["runtime_s"].mean()
    reps = test.groupby("executors")["runtime_s"].apply(np.asarray)
    deadline = float(np.median(truth.values))
    cost = truth.index.values * truth.values / 3600.0
    oracle = float(cost[truth.values <= deadline].min())
    return truth, reps, deadline, cost, oracle


def evaluate(jobs: dict[str, pd.DataFrame], quick: bool = False, reference: bool = False,
             params: bool = True) -> pd.DataFrame:
    from sparkpredict.advise import suggest_executors
    from sparkpredict.models.hybrid import JobRuntimeModel

    rows = []
    for name, g in jobs.items():
        sizes = sorted(g["input_bytes"].unique())
        held_sizes = [sizes[0], sizes[len(sizes) // 2], sizes[-1]] if quick else sizes
        for s in held_sizes:
            train, test = g[g.input_bytes != s], g[g.input_bytes == s]
            model, fit_s = _fit_cached(JobRuntimeModel, name, s, train[BASE])
            truth, reps, deadline, _cost, oracle = held_out_case(test)
            # diagnostic for the model: its 90 % interval at the held-out size, every repeat
            X = {"input_bytes": np.full(len(truth), float(s)), "executors": truth.index.values.astype(float),
                 "executor_cores": np.full(len(truth), float(test.executor_cores.iloc[0])),
                 "executor_memory_mb": np.full(len(truth), float(test.executor_memory_mb.iloc[0]))}
            iv = model.predict_interval(X, 0.9)
            cover = [(lo <= r) & (r <= hi) for lo, hi, r in zip(iv["lower_s"], iv["upper_s"], reps.values)]
            below_up = [r <= hi for hi, r in zip(iv["upper_s"], reps.values)]
            cov90, up90 = float(np.mean(np.concatenate(cover))), float(np.mean(np.concatenate(below_up)))
            widths = iv["upper_s"] / iv["predicted_runtime_s"]
            # the chance each count's advice states for the deadline, and whether the runs made it
            chance = model.chance_within(X, deadline)
            chance_runs = [(float(p), bool(r <= deadline)) for p, rr in zip(chance, reps.values) for r in rr]
            ape = float(np.mean(np.abs(iv["predicted_runtime_s"] - truth.values) / truth.values))
            # where the choice is made: the three counts whose true runtime lies nearest the deadline
            near = np.argsort(np.abs(truth.values - deadline))[:3]
            middle = np.sort(truth.values)[len(truth) // 2 - 1:len(truth) // 2 + 1]
            flat_middle = bool(middle[1] / middle[0] - 1 < 0.02)
            ape_near = float(np.mean(np.abs(iv["predicted_runtime_s"][near] - truth.values[near])
                                     / truth.values[near]))
            variants = [("model", conf, model, None) for conf in CONFIDENCES]
            pcols = [c for c in g.columns if c not in BASE]
            if params:
                # the same model given the job's parameters (pages, links, ...) as features, and
                # the advice asked with the held-out run's values (suggest_executors(params=))
                pmodel, _ = _fit_cached(JobRuntimeModel, name, f"{s}-params", train[BASE + pcols])
                pvals = {c: float(test[c].iloc[0]) for c in pcols}
                variants.append(("model + job parameters", 0.9, pmodel, pvals))
            if reference:
                r_loso, e_loso = loso_residuals(JobRuntimeModel, name, g, s)
                variants.append(("loso-calibrated", 0.9, GroupCalibrated(model, r_loso), None))
                variants.append(("loso-calibrated per executor count", 0.9,
                                 GroupCalibrated(model, r_loso, e_loso), None))
            for variant, conf, mdl, pvals in variants:
                a = suggest_executors(name, int(s), deadline_s=deadline, confidence=conf,
                                      executor_counts=list(truth.index),
                                      executor_cores=int(test.executor_cores.iloc[0]),
                                      executor_memory_mb=int(test.executor_memory_mb.iloc[0]),
                                      params=pvals, models={name: mdl})
                e = a.executors
                true_t = float(truth[e])
                v_ape, v_near = ape, ape_near
                if pvals:
                    pX = dict(X, **{c: np.full(len(truth), v) for c, v in pvals.items()})
                    rel = np.abs(mdl.predict(pX) - truth.values) / truth.values
                    v_ape, v_near = float(np.mean(rel)), float(np.mean(rel[near]))
                rows.append({
                    "job": name, "variant": variant, "base": name.split("/")[0], "size_mb": s / 2**20,
                    "edge": s in (sizes[0], sizes[-1]), "confidence": conf, "deadline_s": deadline,
                    "executors": e, "predicted_s": a.predicted_runtime_s, "upper_s": a.upper_s,
                    "true_s": true_t, "met": true_t <= deadline,
                    "met_repeats": float(np.mean(reps[e] <= deadline)),
                    "advised_meets": bool(a.meets_deadline), "cost_eh": e * true_t / 3600.0,
                    "oracle_eh": oracle, "cost_ratio": (e * true_t / 3600.0) / oracle,
                    "model": model.name_, "cv_mape": model.cv_mape_, "fit_s": fit_s, "coverage90": cov90,
                    "below_upper90": up90, "heldout_mape": v_ape, "near_mape": v_near, "chance_runs": chance_runs,
                    "widths": widths, "flat_middle": flat_middle,
                    "chance": a.chance_meets_deadline})
            last = rows[-len(variants)]
            print(f"{name:<32} {s / 2**20:>8.0f} MB  D={deadline:7.1f}s  E={last['executors']:>2} "
                  f"true={last['true_s']:7.1f}s met={last['met']!s:<5} cost x{last['cost_ratio']:.2f} "
                  f"[{model.name_}, fit {fit_s:.1f}s]", flush=True)
    return pd.DataFrame(rows)


def recorded_size_evaluate(jobs: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The recurring case the issue's protocol leaves out: the job runs again at an input size it
    has run before. For each job and size, one repeat of every count at that size is held out
    (repeat ``case number mod 5``) and the model is fitted on everything else, the other repeats
    at that size included. Same deadline and truth as :func:`evaluate`; the advice is asked with
    the shipped model (its interval at a recorded size comes from the random CV folds) and with
    the same model given the unseen-size interval everywhere (as before seen sizes existed)."""
    import copy

    from sparkpredict.advise import suggest_executors
    from sparkpredict.models.hybrid import JobRuntimeModel

    rows = []
    case = 0
    for name, g in jobs.items():
        rep = g.groupby(["input_bytes", "executors"]).cumcount()
        sizes = sorted(g["input_bytes"].unique())
        for s in sizes:
            k = case % 5
            case += 1
            held = (g.input_bytes == s) & (rep == k)
            model, _ = _fit_cached(JobRuntimeModel, name, f"{s}-rep{k}", g.loc[~held, BASE])
            test = g[g.input_bytes == s]
            truth, reps, deadline, _cost, oracle = held_out_case(test)
            run = g[held].set_index("executors")["runtime_s"]
            unseen = copy.copy(model)
            unseen.seen_residuals_ = None
            for variant, mdl in (("recorded size: shipped interval", model),
                                 ("recorded size: unseen-size interval", unseen)):
                a = suggest_executors(name, int(s), deadline_s=deadline, confidence=0.9,
                                      executor_counts=list(truth.index),
                                      executor_cores=int(test.executor_cores.iloc[0]),
                                      executor_memory_mb=int(test.executor_memory_mb.iloc[0]),
                                      models={name: mdl})
                e = a.executors
                rows.append({"job": name, "variant": variant, "base": name.split("/")[0],
                             "size_mb": s / 2**20, "edge": s in (sizes[0], sizes[-1]), "confidence": 0.9,
                             "executors": e, "met": bool(truth[e] <= deadline), "met_repeats": float(np.mean(reps[e] <= deadline)),
                             "met_held_run": bool(run.get(e, np.nan) <= deadline),
                             "advised_meets": bool(a.meets_deadline), "cost_eh": e * float(truth[e]) / 3600.0,
                             "oracle_eh": oracle, "cost_ratio": e * float(truth[e]) / 3600.0 / oracle,
                             "upper_over_pred": a.upper_s / a.predicted_runtime_s})
    return pd.DataFrame(rows)


#: one run's noise quantile the bound certifies with: the upper end of a two-sided 90 % interval,
#: and a one-sided 90 % bound
BOUND_QUANTILES = {"95th": 0.95, "90th": 0.90}
#: margins on the true mean runtimes: an advisor that knows each count's mean exactly and
#: certifies a count when its mean times (1 + margin) meets the deadline
BOUND_MARGINS = (0.01, 0.02, 0.05)


def noise_bound(jobs: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Reference, not a model: an advisor that knows every count's *true mean* runtime at the
    held-out size and bounds one run by the job's run-to-run noise, the quantile of
    log(run / mean of its repeats) over all the job's configurations, or by a fixed margin
    (:data:`BOUND_MARGINS`). It picks the cheapest count whose mean times that factor meets the
    deadline, else the fastest. One such rule, not a floor: an advisor knowing the means could
    fall back to a cheaper count than the fastest, or certify by each count's own repeats."""
    rows = []
    for name, g in jobs.items():
        cell = g.groupby(["input_bytes", "executors"])["runtime_s"].transform("mean")
        noise = np.log(g["runtime_s"] / cell)
        factors = {f"one run's {label} percentile of noise": float(np.exp(np.quantile(noise, q)))
                   for label, q in BOUND_QUANTILES.items()}
        factors.update({f"a {m:.0%} margin": 1.0 + m for m in BOUND_MARGINS})
        for label, factor in factors.items():
            sizes = sorted(g["input_bytes"].unique())
            for s in sizes:
                test = g[g.input_bytes == s]
                truth, reps, deadline, cost, oracle = held_out_case(test)
                ok = truth.values * factor <= deadline
                k = int(np.flatnonzero(ok)[np.argmin(cost[ok])]) if ok.any() else int(np.argmin(truth.values))
                e = int(truth.index[k])
                cheapest = truth.values[np.flatnonzero((cost == oracle) & (truth.values <= deadline))[0]]
                rows.append({"job": name, "variant": f"bound: true means + {label}",
                             "base": name.split("/")[0], "size_mb": s / 2**20, "edge": s in (sizes[0], sizes[-1]),
                             "confidence": 0.9, "executors": e, "met": bool(truth[e] <= deadline),
                             "met_repeats": float(np.mean(reps[e] <= deadline)), "advised_meets": bool(ok.any()),
                             "cost_eh": float(cost[k]), "oracle_eh": oracle, "cost_ratio": float(cost[k]) / oracle,
                             "noise_factor": factor, "deadline_gap": deadline / cheapest - 1.0})
    return pd.DataFrame(rows)


#: margins for the measured-run reference: 0, and the margin that keeps it above 90 % met
MEASURED_MARGINS = (0.0, 0.02)


def measured_run_bound(jobs: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Reference, not a model: an advisor that has already run the job *once at every count at
    the held-out size* and takes that one run as its prediction, certifying a count when the run
    times (1 + margin) meets the deadline. Each case is averaged over which of the 5 repeats it
    saw, and its deadline judged by the mean of the other 4 (the deadline and the cheapest count
    stay those of all 5, as for every row). Its error is one run's noise, so it shows what
    accuracy the cost goal asks of a model that has never seen this size."""
    rows = []
    for name, g in jobs.items():
        sizes = sorted(g["input_bytes"].unique())
        for s in sizes:
            truth, reps, deadline, cost, oracle = held_out_case(g[g.input_bytes == s])
            n = min(len(x) for x in reps.values)
            near = np.argsort(np.abs(truth.values - deadline))[:3]
            near_ape = float(np.mean([np.abs(reps.values[k] - truth.values[k]) / truth.values[k] for k in near]))
            for margin in MEASURED_MARGINS:
                met, met_runs, ratio, said = [], [], [], []
                for i in range(n):
                    seen = np.array([x[i] for x in reps.values])
                    ok = seen * (1.0 + margin) <= deadline
                    k = int(np.flatnonzero(ok)[np.argmin(cost[ok])]) if ok.any() else int(np.argmin(seen))
                    # judged by the repeats it did not see: the one it saw is no test of itself
                    others = np.delete(reps.values[k], i)
                    met.append(others.mean() <= deadline)
                    met_runs.append(np.mean(others <= deadline))
                    ratio.append(cost[k] / oracle)
                    said.append(ok.any())
                label = "one measured run per count" + (f" + a {margin:.0%} margin" if margin else "")
                rows.append({"job": name, "variant": f"bound: {label}", "base": name.split("/")[0],
                             "size_mb": s / 2**20, "edge": s in (sizes[0], sizes[-1]), "confidence": 0.9,
                             "met": float(np.mean(met)), "met_repeats": float(np.mean(met_runs)),
                             "advised_meets": float(np.mean(said)), "cost_ratio": float(np.mean(ratio)),
                             "cost_eh": float(np.mean(ratio)) * oracle, "oracle_eh": oracle,
                             "near_mape": near_ape})
    return pd.DataFrame(rows)


def summarise(r: pd.DataFrame) -> str:
    lines = []
    main = r[(r.confidence == 0.9) & (r.variant == "model")].copy()
    # the measured-run rows hold fractions (averaged over repeats), so the column is float
    main[["met", "advised_meets", "edge"]] = main[["met", "advised_meets", "edge"]].astype(bool)
    met = main.met.mean()
    ratio = main.cost_ratio.mean()
    total = main.cost_eh.sum() / main.oracle_eh.sum()
    lines.append(f"Leave-one-size-out over {main.job.nunique()} recurring C3O jobs, {len(main)} cases "
                 f"(job x held-out size); deadline = median true runtime over 2..12 nodes.\n")
    lines.append("| confidence | cases | deadline met (mean of 5 repeats) | met, per repeat | "
                 "cost / cheapest meeting D (mean) | total cost / total cheapest | advice said 'meets' |")
    lines.append("|---|---|---|---|---|---|---|")
    for (variant, conf), g in r[~r.variant.str.startswith("recorded size")].groupby(["variant", "confidence"],
                                                                                  sort=False):
        label = (f"{conf}" if variant == "model" else f"{conf}, {variant}" if variant.startswith(("bound", "model +"))
                 else f"{conf}, reference: {variant} intervals")
        lines.append(f"| {label} | {len(g)} | {g.met.mean():.1%} | {g.met_repeats.mean():.1%} | "
                     f"{g.cost_ratio.mean():.3f} | {g.cost_eh.sum() / g.oracle_eh.sum():.3f} | "
                     f"{g.advised_meets.mean():.1%} |")
    lines.append("\nPer C3O job (confidence 0.9):\n")
    lines.append("| job | cases | met | cost ratio (mean) | worst cost ratio | edge sizes met | "
                 "interior met | model CV MAPE (median) | held-out MAPE | runs below upper bound |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for b, g in main.groupby("base"):
        edge, inner = g[g.edge], g[~g.edge]
        lines.append(f"| {b} | {len(g)} | {g.met.mean():.1%} | {g.cost_ratio.mean():.3f} | "
                     f"{g.cost_ratio.max():.2f} | {edge.met.mean():.1%} | "
                     f"{inner.met.mean() if len(inner) else float('nan'):.1%} | "
                     f"{g.cv_mape.median():.1%} | {g.heldout_mape.mean():.1%} | {g.below_upper90.mean():.1%} |")
    misses = main[~main.met]
    close = misses[misses.true_s <= 1.02 * misses.deadline_s]
    by_job = ", ".join(f"{k} {v}" for k, v in close.base.value_counts().items()) or "none"
    lines.append(f"\n{len(misses)} of {len(main)} advised counts missed the deadline; {len(close)} of them "
                 f"by at most 2 %, within run-to-run noise of the deadline ({by_job}); "
                 f"{int((misses.advised_meets).sum())} misses were advised as meeting it.")
    near_d = main[(main.true_s / main.deadline_s - 1).abs() <= 0.02]
    allowed = int(np.floor(0.1 * len(main)))
    lines.append(f"\nHow firm the deadline figure is: the goal allows {allowed} misses of {len(main)}, and "
                 f"there are {len(misses)}. The figure judges the advised count by its mean over the 5 "
                 f"repeats (the issue's 'truly meets'); judged run by run it is "
                 f"{main.met_repeats.mean():.1%}. {len(near_d)} advised counts have a mean within 2 % of the "
                 f"deadline, run-to-run noise ({int(near_d.met.sum())} met, {int((~near_d.met).sum())} "
                 "missed), so another 5 repeats could move it either way by a few cases.")
    flat = main.groupby("base").flat_middle.mean()
    rest = main[main.base != "pagerank"]
    if len(rest) < len(main):
        pr = main[main.base == "pagerank"]
        lines.append(f"\npagerank is {len(pr)} of the {len(main)} cases, {int((~pr.met).sum())} of the "
                     f"{len(misses)} misses and the largest cost ratio ({pr.cost_ratio.mean():.3f}): its runtimes "
                     "barely change from 4 to 12 nodes, so which count 'truly meets' the median is decided "
                     "by noise (the 3rd and 4th fastest counts' means, between which the deadline lies, "
                     "differ by under 2 % in "
                     + ", ".join(f"{b} {v:.0%}" for b, v in flat.items()) + " of the cases). Without "
                     f"pagerank: deadline met {rest.met.mean():.1%}, mean cost ratio {rest.cost_ratio.mean():.3f}.")
    one_sided = r[(r.variant == "model") & (r.confidence == 0.8)]
    if len(one_sided):
        lines.append(f"\n`confidence` is two-sided: at 0.9 'meets' is judged by the upper bound, the 95th "
                     "percentile. A one-sided 90 % bound is the 0.8 row: deadline met "
                     f"{one_sided.met.astype(bool).mean():.1%}, mean cost ratio {one_sided.cost_ratio.mean():.3f}.")
    if len(misses):
        lines.append("\nMissed deadlines (confidence 0.9): " + "; ".join(
            f"{m.job} {m.size_mb:.0f} MB: E={int(m.executors)} true {m.true_s:.0f}s > D {m.deadline_s:.0f}s "
            f"(predicted {m.predicted_s:.0f}, upper {m.upper_s:.0f})" for m in misses.itertuples()))
    lines.append(f"\nThe models at the held-out sizes (what the advice stands on): MAPE "
                 f"{main.heldout_mape.mean():.1%} (edge sizes {main[main.edge].heldout_mape.mean():.1%}, "
                 f"interior {main[~main.edge].heldout_mape.mean():.1%}); 90 % interval coverage "
                 f"{main.coverage90.mean():.1%}; runs below the interval's upper bound "
                 f"{main.below_upper90.mean():.1%} (the deadline rule needs >= 90 %). Where the "
                 f"choice is made, at the three counts whose true runtime lies nearest the deadline: "
                 f"MAPE {main.near_mape.mean():.1%}"
                 + (f" ({r[r.variant == 'model + job parameters'].near_mape.mean():.1%} with the job's "
                    f"parameters)" if (r.variant == "model + job parameters").any() else "") + ".")
    spread = []
    for label, part in (("interior sizes", main[~main.edge]), ("edge sizes", main[main.edge])):
        w = np.concatenate(list(part.widths))
        spread.append(f"at {label} median {np.median(w):.2f}x, 90th percentile {np.quantile(w, 0.9):.2f}x, "
                      f"largest {w.max():.2f}x")
    lines.append("The interval's upper bound over the prediction (confidence 0.9): " + "; ".join(spread) + ".")
    lines.append(f"\nModels: {', '.join(f'{k} x{v}' for k, v in main.model.value_counts().items())}; "
                 f"median fit {main.fit_s.median():.2f} s per job.\n")
    lines.append(f"- goal deadline met in >= 90 % of cases at confidence 0.9: "
                 f"**{'met' if met >= 0.9 else 'not met'}** ({met:.1%} of {len(main)})")
    lines.append(f"- goal mean cost within 10 % of the cheapest configuration that truly meets the "
                 f"deadline: **{'met' if ratio <= 1.10 else 'not met'}** (mean ratio {ratio:.3f}; "
                 f"total-cost ratio {total:.3f})")
    # the concat with float-valued reference rows leaves these columns as objects
    rec = r[r.variant.str.startswith("recorded size")].astype(
        {"met": bool, "met_held_run": bool, "advised_meets": bool})
    if len(rec):
        lines.append("\n**At a recorded size** (the job runs again at an input size it has run before, "
                     "which the issue's held-out-size protocol leaves out): for each job and size, one "
                     "repeat of every count at that size is held out and the model fitted on the rest, "
                     "the other repeats at that size included; same deadline and truth.\n")
        lines.append("| interval at the recorded size | cases | deadline met (mean of 5 repeats) | "
                     "held-out run met | cost / cheapest meeting D (mean) | advice said 'meets' | "
                     "upper bound / prediction (median) |")
        lines.append("|---|---|---|---|---|---|---|")
        for v, g in rec.groupby("variant", sort=False):
            lines.append(f"| {v.split(': ', 1)[1]} | {len(g)} | {g.met.mean():.1%} | "
                         f"{g.met_held_run.mean():.1%} | {g.cost_ratio.mean():.3f} | "
                         f"{g.advised_meets.mean():.1%} | {g.upper_over_pred.median():.3f} |")
        shipped = rec[rec.variant == "recorded size: shipped interval"]
        per = ", ".join(f"{b} {g.cost_ratio.mean():.3f} ({g.met.mean():.0%} met, 'meets' "
                        f"{g.advised_meets.mean():.0%})" for b, g in shipped.groupby("base"))
        lines.append(f"\nPer C3O job, shipped interval: mean cost ratio {per}. Where no count's upper "
                     "bound meets the deadline the advice gives the count most likely to make it (the "
                     "fastest by its upper bound when none is even predicted within it); that is what "
                     "costs most on a job whose runtimes barely change with the count.")
        rec_met, rec_cost = shipped.met.mean(), shipped.cost_ratio.mean()
        lines.append(f"\n- at a recorded size (not the issue's protocol): deadline met {rec_met:.1%} "
                     f"(>= 90 %: **{'met' if rec_met >= 0.9 else 'not met'}**), mean cost ratio "
                     f"{rec_cost:.3f} (<= 1.10: **{'met' if rec_cost <= 1.10 else 'not met'}**)")
    withp = r[r.variant == "model + job parameters"]
    if len(withp):
        per = ", ".join(f"{b} {main[main.base == b].heldout_mape.mean():.1%} -> {g.heldout_mape.mean():.1%}"
                        for b, g in withp.groupby("base"))
        lines.append(f"\nWith the job's parameters as features (`suggest_executors(params=...)`: grep "
                     f"lines/line_length, kmeans and sgd features/observations, pagerank pages/links, "
                     f"sort lines/line_length): held-out MAPE {main.heldout_mape.mean():.1%} -> "
                     f"{withp.heldout_mape.mean():.1%} ({per}); deadline met {withp.met.mean():.1%}, "
                     f"mean cost ratio {withp.cost_ratio.mean():.3f}.")
    bound = r[r.variant.str.startswith("bound")]
    if len(bound):
        lines.append("\n**How low can the cost ratio go?** The `bound` rows are no model: an advisor that "
                     "knows every count's true mean runtime at the held-out size and certifies a count "
                     "when its mean times one run's noise quantile (from the job's repeats) meets the "
                     "deadline. Per job, mean cost ratio:\n")
        lines.append("| bound | " + " | ".join(sorted(bound.base.unique())) + " | all |")
        lines.append("|---|" + "---|" * (bound.base.nunique() + 1))
        for v, g in bound.groupby("variant", sort=False):
            lines.append(f"| {v.split(': ', 1)[1]} | "
                         + " | ".join(f"{x:.3f}" for x in g.groupby("base").cost_ratio.mean())
                         + f" | {g.cost_ratio.mean():.3f} |")
        by = bound.groupby("variant").cost_ratio.mean()
        noisy = by[by.index.str.contains("noise")].min()
        margins = ", ".join(f"{m:.0%}: {by[f'bound: true means + a {m:.0%} margin']:.3f}"
                            for m in BOUND_MARGINS)
        nb = bound[bound.variant == by[by.index.str.contains("noise")].idxmin()]
        fell = nb[~nb.advised_meets.astype(bool)]
        gaps = ", ".join(f"{b} {g.deadline_gap.median():.1%}" for b, g in nb.groupby("base"))
        lines.append(f"\nWith the means known exactly, this rule of bounding one run costs {noisy:.3f}x: "
                     f"{nb[nb.advised_meets.astype(bool)].cost_ratio.mean():.3f} in the "
                     f"{1 - len(fell) / len(nb):.0%} of cases it certifies and {fell.cost_ratio.mean():.3f} where "
                     "it falls back to the fastest count. It is one rule, not a floor (falling back to a "
                     "cheaper count, or certifying by each count's own repeats, costs less). The deadline "
                     "(the median over counts) lies a median "
                     f"{nb.deadline_gap.median():.1%} above the cheapest meeting count's mean ({gaps}), "
                     "of the size of one run's noise. "
                     f"Certifying the true means with a margin instead ({margins}) shows how little "
                     "error the goal tolerates: the margin any model needs is its error at an unseen "
                     f"size where the choice is made (here MAPE {main.near_mape.mean():.1%}). With the means "
                     "known exactly and no margin it is 1.000.")
        measured = r[r.variant.str.startswith("bound: one measured run")]
        if len(measured):
            parts = "; ".join(f"{v.split(': ', 1)[1]}: {g.met.mean():.1%} met, cost ratio "
                              f"{g.cost_ratio.mean():.3f}" for v, g in measured.groupby("variant", sort=False))
            lines.append("\nThe `one measured run per count` rows ask what accuracy would do: an advisor "
                         "that already ran the job once at every count *at the held-out size* and "
                         f"takes that run as its prediction ({parts}; averaged over which repeat it saw). "
                         "Each is judged by the 4 runs it did not see. Its error where the choice is "
                         f"made is one run's noise, {measured.near_mape.mean():.1%} against the mean of the 5 "
                         "runs. The models' error there is "
                         f"{main.near_mape.mean():.1%}: the cost goal asks a model that has never seen "
                         "the size to predict it about as well as one run measured there. "
                         + "; ".join(f"{v.split(': ', 1)[1]}: both goals "
                                     f"{'met' if g.met.mean() >= 0.9 and g.cost_ratio.mean() <= 1.10 else 'not met'}"
                                     for v, g in measured.groupby("variant", sort=False)) + ".")
    if "chance_runs" in main and main.chance_runs.notna().all():
        pairs = np.array([p for cell in main.chance_runs for p in cell], float)
        lines.append("\n**The stated chance of meeting the deadline** (`Candidate.chance_meets_deadline`, "
                     "every count of every case, against each of its 5 runs at the held-out size):\n")
        lines.append("| stated chance | runs | mean stated | runs that met the deadline |")
        lines.append("|---|---|---|---|")
        edges = (0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 0.95, 1.0 + 1e-9)
        for lo, hi in itertools.pairwise(edges):
            m = (pairs[:, 0] >= lo) & (pairs[:, 0] < hi)
            if m.any():
                lines.append(f"| {lo:.0%}-{min(hi, 1):.0%} | {int(m.sum())} | {pairs[m, 0].mean():.1%} | "
                             f"{pairs[m, 1].mean():.1%} |")
        brier = float(np.mean((pairs[:, 0] - pairs[:, 1]) ** 2))
        base = float(np.mean((pairs[:, 1].mean() - pairs[:, 1]) ** 2))
        said = main[main.advised_meets]
        lines.append(f"\nBrier score {brier:.3f} (one constant chance, the overall rate: {base:.3f}). "
                     f"Where the advice said 'meets' ({len(said)} cases) it stated a mean chance of "
                     f"{said.chance.mean():.1%} and {said.met_repeats.mean():.1%} of the runs met the "
                     f"deadline; where it could not ({len(main) - len(said)} cases) it stated "
                     f"{main[~main.advised_meets].chance.mean():.1%} for the count given, and "
                     f"{main[~main.advised_meets].met_repeats.mean():.1%} of the runs made it.")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", default=",".join(JOBS))
    ap.add_argument("--quick", action="store_true", help="hold out 3 sizes per job, not all")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--reference", action="store_true",
                    help="add a reference row: the same point predictions with intervals calibrated "
                         "by leave-one-size-out on the training sizes (several extra fits per case)")
    ap.add_argument("--from-last", action="store_true",
                    help="summarise the last run's cases again (saved beside the fit cache) without refitting")
    args = ap.parse_args()
    jobs = recurring_jobs([j for j in args.jobs.split(",") if j])
    last = Path(os.environ.get("SPARKPREDICT_BENCH_CACHE") or "/tmp") / "advice_quality_last.pkl"
    if args.from_last:
        r = pd.read_pickle(last)
    else:
        r = evaluate(jobs, quick=args.quick, reference=args.reference)
        r = pd.concat([r, noise_bound(jobs), measured_run_bound(jobs), recorded_size_evaluate(jobs)],
                      ignore_index=True)
        r.to_pickle(last)
    body = summarise(r)
    print("\n" + body)
    if not args.no_write:
        write_section("advice_quality", "## Advice quality (suggest_executors on C3O)\n\n" + body)


if __name__ == "__main__":
    main()
