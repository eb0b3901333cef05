"""Stage-level retraining at more than 3 jobs: does the Spark path catch up with the local loop?

The recorded history (`tests/data/history`: sort, sqljoin and wordcount, 24 runs each with their
stage and task rows) is cloned K times under new job names and run ids, so every clone is a real
recorded job. For each K, every job's whole-job and stage-level models are refit (``force``) by
the local loop and by Spark ``local[2]`` (session already running; its start-up is measured
apart), on separate copies of the same store. Medians of ``--repeats`` alternating repeats.

    PYSPARK_PYTHON=.venv/bin/python python benchmarks/stage_retrain_scaling.py [--copies 1,4,12]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HISTORY = REPO / "tests" / "data" / "history"


def read_history(src: Path) -> dict:
    from sparkpredict.store import io

    st = io.open(src)
    return {t: st.read(t) for t in ("runs", "stages", "tasks", "executors")}


def clone_history(tables: dict, dst: Path, copies: int) -> int:
    """A store holding ``copies`` renamed copies of every job of ``tables``; returns the job count."""
    from sparkpredict.store import io

    out = io.open(dst, create=True)
    for c in range(copies):
        batch = {}
        for name, df in tables.items():
            df = df.copy()
            df["run_id"] = df["run_id"] + f"-c{c}"
            if name == "runs":
                df["job"] = df["job"] + f"-c{c}"
            batch[name] = df
        out.append(batch, batch_id=io.new_batch_id(f"clone-{c}"))
    return copies * tables["runs"]["job"].nunique()


def _session():
    from pyspark.sql import SparkSession

    return (SparkSession.builder.master("local[2]").appName("stage-retrain-bench")
            .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.memory", "2g").getOrCreate())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", default="1,4,12", help="clones of the recorded history, comma-separated")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md alone")
    a = ap.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _results import write_section

    from sparkpredict import retrain as RT

    tmp = Path(tempfile.mkdtemp(prefix="stage-retrain-bench-"))
    rows = []
    try:
        history = read_history(HISTORY)  # read once; every clone is written from it
        warm = tmp / "warm"
        clone_history(history, warm, 1)
        # What any retrain pays first: a new session, and Python workers started and importing.
        # Measured as a new session plus a one-job retrain, less the same retrain warm (its
        # fits), since a retrain of no jobs is refused.
        one = [min(history["runs"]["job"].unique()) + "-c0"]
        t0 = time.perf_counter()
        spark = _session()
        RT.retrain_spark(warm, spark=spark, force=True, jobs=one)
        first = time.perf_counter() - t0
        t1 = time.perf_counter()
        RT.retrain_spark(warm, spark=spark, force=True, jobs=one)
        startup = first - (time.perf_counter() - t1)
        RT.retrain_spark(warm, spark=spark, force=True)  # warms the Python workers; not timed
        RT.retrain_local(warm, force=True)  # and this process's imports, so neither path pays them
        for k in [int(x) for x in a.copies.split(",")]:
            times: dict[str, list[float]] = {"local": [], "local[2]": []}
            jobs = 0
            for r in range(a.repeats):
                for mode in ("local", "local[2]"):
                    path = tmp / f"k{k}-{mode.strip('[]2')}-{r}"
                    jobs = clone_history(history, path, k)
                    t = time.perf_counter()
                    if mode == "local":
                        res = RT.retrain_local(path, force=True)
                    else:
                        res = RT.retrain_spark(path, spark=spark, force=True)
                    times[mode].append(time.perf_counter() - t)
                    assert len(res.stage_refit) == jobs, (mode, res.stage_refit)
                    shutil.rmtree(path)
            med = {m: statistics.median(v) for m, v in times.items()}
            rows.append((k, jobs, med["local"], med["local[2]"]))
            print(f"{jobs:4d} jobs: local {med['local']:.1f} s, Spark local[2] {med['local[2]']:.1f} s "
                  f"({med['local'] / med['local[2]']:.2f}x)", flush=True)
        spark.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    lines = ["## stage_retrain_scaling: stage-level models at more jobs", "",
             ("The recorded history (`tests/data/history`, 3 jobs x 24 runs with stage and task rows) "
             "cloned K times under new job names; every job's whole-job and stage-level models refit "
             f"(`force`). Spark `local[2]` with its session running and its Python workers warm "
             f"(start-up {startup:.1f} s: a new session and a one-job retrain, less the same retrain warm, measured apart), the local loop with its libraries imported; medians of {a.repeats} "
             f"repeat(s); 1-minute load average {os.getloadavg()[0]:.1f} at the end."), "",
             "| clones | jobs | local loop, s | Spark local[2], s | local / Spark | jobs / s local | jobs / s Spark |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for k, jobs, loc, spk in rows:
        lines.append(f"| {k} | {jobs} | {loc:.1f} | {spk:.1f} | {loc / spk:.2f}x | {jobs / loc:.2f} | "
                     f"{jobs / spk:.2f} |")
    k, jobs, loc, spk = rows[-1]
    saving = (loc - spk) / jobs  # seconds a job, from the largest history
    cross = startup / saving if saving > 0 else float("inf")
    lines += ["", (f"At {jobs} jobs Spark local[2] refits stage models {loc / spk:.2f}x as fast as the local "
              f"loop ({'wins' if spk < loc else 'loses'}); with a new JVM ({startup:.1f} s) it "
              f"{'wins' if spk + startup < loc else 'still loses'}. Spark saves {saving:.2f} s a job, so "
              f"its start-up pays back from {cross:.0f} jobs with stage models; `retrain` switches at "
              f"{RT.crossover_stage_jobs('auto')} (`STAGE_FIT_SAVING_S` = {RT.STAGE_FIT_SAVING_S} s on top "
              f"of the whole-job model's {RT.SPARK_STARTUP_S / RT.crossover_jobs('auto'):.2f} s).")]
    body = "\n".join(lines)
    print(body)
    if not a.no_write:
        write_section("stage_retrain_scaling", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
