"""retrain_scaling: jobs fitted per second by the Spark retrain (local[1], local[2]) vs the local loop.

Generates a synthetic history (every job's runs follow a known Amdahl equation with 3 % noise),
writes it to a store with ``Store.append``, then times, alternating and repeated:

* the local loop (``retrain_local``, no JVM) on ``--jobs`` jobs;
* the Spark path (``retrain_spark``) on ``local[1]`` and ``local[2]`` on the same jobs, with the
  session already running (rate) and, separately, the cost of starting a session and its
  Python workers (start-up).

Each Spark measurement uses ``retrain_spark``'s default method (``repartition(job)`` +
``mapInPandas``); ``groupBy(job).applyInPandas`` is timed once on local[2] for comparison.

Model: local time = n / r_local; Spark time = startup + n / r_spark. The crossover is the job
count where both are equal: n* = startup / (1/r_local - 1/r_spark). ``retrain`` picks Spark at
or above :data:`sparkpredict.retrain.CROSSOVER_JOBS`.

    PYSPARK_PYTHON=.venv/bin/python .venv/bin/python benchmarks/retrain_scaling.py \\
        [--jobs 1000] [--auto-jobs 1000] [--repeats 2]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

SIZES_GB = (2.0, 4.0, 8.0, 16.0)
EXECUTORS = (2, 4, 8, 16)


def make_history(n_jobs: int, runs_per_job: int = 16, seed: int = 0, prefix: str = "job") -> pd.DataFrame:
    """``runs`` rows of ``n_jobs`` jobs; job i's runtime is a·S·((1-b)/E + b) + c with 3 % noise.

    Each job gets ``runs_per_job`` runs on a grid of 4 input sizes x 4 executor counts (cycled),
    parameters a ~ U(5, 50) s/GB, b ~ U(0.02, 0.2), c ~ U(5, 60) s; noise is multiplicative
    N(1, 0.03). Deterministic for a given seed.
    """
    rng = np.random.default_rng(seed)
    grid = [(s, e) for s in SIZES_GB for e in EXECUTORS]
    rows = []
    t0 = 1_700_000_000_000
    for j in range(n_jobs):
        a, b, c = rng.uniform(5, 50), rng.uniform(0.02, 0.2), rng.uniform(5, 60)
        for k in range(runs_per_job):
            s_gb, e = grid[k % len(grid)]
            runtime_s = (a * s_gb * ((1 - b) / e + b) + c) * rng.normal(1.0, 0.03)
            start = t0 + (j * runs_per_job + k) * 60_000
            rows.append({
                "run_id": f"app-{prefix}{j:05d}-{k:03d}", "app_id": f"app-{prefix}{j:05d}-{k:03d}",
                "app_name": f"{prefix}-{j:05d}", "job": f"{prefix}-{j:05d}", "status": "succeeded",
                "start_ms": start, "end_ms": start + int(runtime_s * 1000), "wall_ms": int(runtime_s * 1000),
                "executors_requested": e, "executors_max": e, "executors_mean": float(e),
                "executor_cores": 2, "executor_memory_mb": 4096, "task_slots": 2 * e,
                "input_bytes": int(s_gb * 2**30), "input_bytes_source": "declared",
                "source": "listener", "schema_version": 1, "updated_ms": start + int(runtime_s * 1000) + 5,
            })
    return pd.DataFrame(rows)


def write_history(store_path: str | Path, runs: pd.DataFrame, batches: int = 4) -> None:
    """Append ``runs`` to a (new) store in ``batches`` committed batches."""
    from sparkpredict import store

    st = store.open(store_path, create=True)
    jobs = sorted(runs.job.unique())
    for part in np.array_split(np.array(jobs, dtype=object), max(1, min(batches, len(jobs)))):
        st.append({"runs": runs[runs.job.isin(set(part))]})


def _session(master: str):
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    return (SparkSession.builder.master(master).appName("retrain-bench")
            .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.memory", "2g").getOrCreate())


def measure(store_path: Path, jobs: list[str], kind: str, repeats: int) -> dict:
    """Median seconds of each path on ``jobs`` (all refit), and Spark start-up per master."""
    from sparkpredict import retrain as RT

    times: dict[str, list[float]] = {"local": [], "local[1]": [], "local[2]": []}
    apply_s = float("nan")
    startup: dict[str, list[float]] = {"local[1]": [], "local[2]": []}
    for rep in range(repeats):
        order = ["local", "local[1]", "local[2]"] if rep % 2 == 0 else ["local[2]", "local[1]", "local"]
        for mode in order:
            if mode == "local":
                t = time.perf_counter()
                res = RT.retrain_local(store_path, force=True, kind=kind, jobs=jobs)
                times[mode].append(time.perf_counter() - t)
            else:
                t = time.perf_counter()
                spark = _session(mode)
                # Start-up = a new session plus its Python workers importing the fitting stack,
                # measured as a 2-job retrain; then the rate with everything warm.
                RT.retrain_spark(store_path, spark=spark, force=True, kind=kind, jobs=jobs[:2])
                startup[mode].append(time.perf_counter() - t)
                t = time.perf_counter()
                res = RT.retrain_spark(store_path, spark=spark, force=True, kind=kind, jobs=jobs)
                times[mode].append(time.perf_counter() - t)
                if mode == "local[2]" and rep == 0:
                    t = time.perf_counter()
                    RT.retrain_spark(store_path, spark=spark, force=True, kind=kind, jobs=jobs, method="apply")
                    apply_s = time.perf_counter() - t
                    print(f"  {kind:7s} rep {rep} local[2] applyInPandas {apply_s:7.1f} s", flush=True)
                spark.stop()
            assert len(res.refit) + len(res.failed) == len(jobs), (mode, len(res.refit), len(res.failed))
            print(f"  {kind:7s} rep {rep} {mode:9s} {times[mode][-1]:7.1f} s "
                  f"{len(jobs) / times[mode][-1]:7.2f} jobs/s"
                  + (f"  start-up {startup[mode][-1]:5.1f} s" if mode in startup else ""), flush=True)
    med = {m: statistics.median(v) for m, v in times.items()}
    rate = {m: len(jobs) / med[m] for m in med}
    st_up = {m: statistics.median(v) for m, v in startup.items()}
    inv = 1 / rate["local"] - 1 / rate["local[2]"]
    return {"kind": kind, "n": len(jobs), "med": med, "apply_s": apply_s, "rate": rate, "startup": st_up,
            "startup_samples": startup,
            "scale": rate["local[2]"] / rate["local[1]"], "speedup": rate["local[2]"] / rate["local"],
            "crossover": st_up["local[2]"] / inv if inv > 0 else float("inf")}


def measure_stage(history: Path, tmp: Path) -> dict:
    """Seconds to refit the stage-level models (and whole-job models) of a recorded history:
    the local loop against Spark local[2] (session warm, start-up apart), on copies of it."""
    from sparkpredict import retrain as RT
    from sparkpredict.store import io as store_io

    out: dict = {}
    for mode in ("local", "local[2]"):
        path = tmp / f"stage-{mode.replace('[', '').replace(']', '')}"
        shutil.copytree(history, path)
        if mode == "local":
            t = time.perf_counter()
            res = RT.retrain_local(path, force=True)
        else:
            spark = _session(mode)
            first_job = sorted(store_io.open(path).read("runs", columns=["job"])["job"].unique())[:1]
            RT.retrain_spark(path, spark=spark, force=True, jobs=first_job, stage_models=True)  # warm the session
            t = time.perf_counter()
            res = RT.retrain_spark(path, spark=spark, force=True)
            spark.stop()
        out[mode] = {"s": time.perf_counter() - t, "jobs": len(res.stage_refit)}
        print(f"  stage models {mode:9s} {out[mode]['s']:7.1f} s for {out[mode]['jobs']} jobs", flush=True)
    out["history"] = str(history)
    return out


def _rows(m: dict) -> list[str]:
    k, n = m["kind"], m["n"]
    return [
        f"| {k} | {n} | local loop (no JVM) | {m['med']['local']:.1f} | {m['rate']['local']:.2f} | - |",
        (f"| {k} | {n} | Spark local[1] | {m['med']['local[1]']:.1f} | {m['rate']['local[1]']:.2f} "
        f"| {m['startup']['local[1]']:.1f} |"),
        (f"| {k} | {n} | Spark local[2] | {m['med']['local[2]']:.1f} | {m['rate']['local[2]']:.2f} "
        f"| {m['startup']['local[2]']:.1f} |"),
        (f"| {k} | {n} | Spark local[2], groupBy.applyInPandas (1 run) | {m['apply_s']:.1f} "
        f"| {n / m['apply_s']:.2f} | - |"),
    ]


def _agrees(configured: int, measured: float) -> bool:
    """The configured crossover is within a factor 2 of the measurement (timings here are noisy)."""
    if measured == float("inf"):
        return configured >= 10**6
    return measured / 2 <= configured <= measured * 2 + 20


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--jobs", type=int, default=1000, help="jobs in the history (all fitted with --fast-kind)")
    ap.add_argument("--auto-jobs", type=int, default=1000,
                    help="jobs fitted with the default 'auto' models (each fit is ~50x dearer); 0 skips")
    ap.add_argument("--fast-kind", default="amdahl", help="single-equation kind measured on all --jobs")
    ap.add_argument("--runs-per-job", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md alone")
    ap.add_argument("--save", help="also save the raw measurements to this JSON file")
    ap.add_argument("--render", help="skip measuring: re-render the section from a --save file")
    ap.add_argument("--stage-history", default=str(Path(__file__).resolve().parents[1] / "tests" / "data" / "history"),
                    help="recorded store whose stage-level models are refit by both paths ('' skips)")
    args = ap.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _results import write_section

    from sparkpredict import retrain as RT

    tmp = Path(tempfile.mkdtemp(prefix="retrain-bench-"))
    try:
        if args.render:
            saved = json.loads(Path(args.render).read_text())
            results, args.jobs, args.runs_per_job, args.repeats = (
                saved["results"], saved["jobs"], saved["runs_per_job"], saved["repeats"])
        else:
            runs = make_history(args.jobs, args.runs_per_job)
            store_path = tmp / "store"
            write_history(store_path, runs, batches=8)
            jobs = sorted(runs.job.unique())
            print(f"history: {args.jobs} jobs x {args.runs_per_job} runs in {store_path}", flush=True)
            results = [measure(store_path, jobs, args.fast_kind, args.repeats)]
            if args.save:
                Path(args.save).write_text(json.dumps({"results": results, "jobs": args.jobs, "repeats": args.repeats,
                                                       "runs_per_job": args.runs_per_job,
                                                       "load": f"{os.getloadavg()[0]:.0f} at the end"}))
            if args.auto_jobs:
                results.append(measure(store_path, jobs[:args.auto_jobs], "auto", args.repeats))
            stage = measure_stage(Path(args.stage_history), tmp) if args.stage_history else None
            if args.save:
                Path(args.save).write_text(json.dumps({"results": results, "jobs": args.jobs, "repeats": args.repeats,
                                                       "runs_per_job": args.runs_per_job, "stage": stage,
                                                       "load": f"{os.getloadavg()[0]:.1f} at the end"}))
        if args.render:
            stage = saved.get("stage")
        load = saved.get("load", "not recorded") if args.render else f"{os.getloadavg()[0]:.1f} at the end"
        lines = [
            "## retrain_scaling: batch retraining, Spark vs the local loop",
            "",
            (f"Synthetic history: {args.jobs} jobs x {args.runs_per_job} runs (each job an Amdahl equation + "
            f"3 % noise), written with `Store.append`. Every job refit (`force`); medians of {args.repeats} "
            "alternating repeats; rates with the Spark session and its Python workers already running, "
            "start-up measured separately (new session + a 2-job retrain). "
            f"Nothing else ran on the 2-core machine (1-minute load average {load}); ratios come "
            "from the same run. These jobs have runs only (no stage rows), so no stage models are fitted."),
            "",
            "| model kind | jobs | path | median time, s | jobs fitted / s | start-up, s (median) |",
            "|---|---:|---|---:|---:|---:|",
        ]
        for m in results:
            lines += _rows(m)
        lines.append("")
        # `sparkpredict retrain` starts a new JVM: its start-up is the slowest session start
        # measured (the one that launched the JVM); the others reused a running JVM, so a
        # median over repeats would mix the two (saves before 2026-11-30 kept medians only).
        cold = max(max(v) for m in results
                   for v in m.get("startup_samples", {k: [x] for k, x in m["startup"].items()}).values())
        for m in results:
            inv = 1 / m["rate"]["local"] - 1 / m["rate"]["local[2]"]
            m["crossover_cold"] = cold / inv if inv > 0 else float("inf")
        for m in results:
            k = m["kind"]
            lines.append(
                f"- `{k}`: local[2] / local loop = **{m['speedup']:.2f}x** jobs/s; 1 -> 2 cores "
                f"(local[2] / local[1]) = **{m['scale']:.2f}x**; crossover = start-up / (1/r_local - "
                f"1/r_local[2]) = **{m['crossover_cold']:.0f} jobs** with a new JVM ({cold:.1f} s start-up, "
                f"what `sparkpredict retrain` pays), {m['crossover']:.0f} jobs with a running one; below it "
                f"the local loop wins. `retrain` switches to Spark at {RT.crossover_jobs(k)} jobs.")
        big = results[0]
        ok = all(_agrees(RT.crossover_jobs(m["kind"]), m["crossover_cold"]) for m in results)
        lines += [
            "",
            f"goal 'jobs/s for {big['n']} jobs on local[2] vs the local loop': "
            f"**{'met' if all(m['n'] >= 1000 for m in results) else 'partial: the default auto models on fewer jobs (time)'}** ("
            + "; ".join(f"{m['kind']} on {m['n']} jobs: {m['rate']['local[2]']:.2f} vs "
                        f"{m['rate']['local']:.2f} jobs/s" for m in results) + ")",
            "goal 'how the rate scales from 1 to 2 cores': "
            + ("**met**" if all(m["scale"] >= 1.3 for m in results) else
               "**not met** (measured, but the second core gave no clear speed-up; 1-min load average "
               f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at the end)")
            + " (" + "; ".join(f"{m['kind']}: local[2]/local[1] = {m['scale']:.2f}x" for m in results) + ")",
            f"goal 'find the crossover and make retrain pick the right path': **{'met' if ok else 'not met'}** ("
            + "; ".join(f"{m['kind']}: measured {m['crossover_cold']:.0f}, configured {RT.crossover_jobs(m['kind'])}"
                        for m in results) + ")",
        ]
        if stage:
            lo, sp = stage["local"], stage["local[2]"]
            lines += ["", (f"Stage-level models (a random forest per stage signature, with each job's whole-job "
                      f"model) of the recorded history `{Path(stage['history']).name}` ({lo['jobs']} jobs): "
                      f"local loop {lo['s']:.1f} s, Spark local[2] {sp['s']:.1f} s (session warm; runs cogrouped "
                      f"with stage and task rows): {lo['s'] / sp['s']:.2f}x.")]
        md = "\n".join(lines)
        print(md)
        if not args.no_write:
            write_section("retrain_scaling", md)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
