"""Overhead of the sparkpredict listener on one job of ~10,000 tasks.

Three ways, alternated in one run inside one JVM (the listener jar is on the classpath from the
start; each application is a fresh SparkContext, ~0.2 s to restart):

1. ``none``      no listener, no event log (the reference);
2. ``eventlog``  Spark's own event log (spark.eventLog.enabled, Spark 4 defaults: rolling, zstd);
3. ``listener``  the sparkpredict listener, task rows on (spark.sparkpredict.tasks=true).

Measured per application: the job (``spark.range(...).count()`` over N partitions, JVM-only
tasks so that Python workers do not blur the figure) plus ``stop()``, which drains the listener
bus and includes the listener's and the event log's final writes. Order rotates every round.

    python benchmarks/listener_overhead.py [--tasks 10000] [--rounds 5] [--master local[2]]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import write_section  # noqa: E402

MODES = ("none", "eventlog", "listener")


def _conf(mode: str, work: Path, rnd: int) -> dict[str, str]:
    from sparkpredict.config import KEY_STORE, KEY_TASKS, LISTENER_CLASS

    if mode == "eventlog":
        d = work / "eventlog"
        d.mkdir(exist_ok=True)
        return {"spark.eventLog.enabled": "true", "spark.eventLog.dir": d.as_uri()}
    if mode == "listener":
        return {"spark.extraListeners": LISTENER_CLASS, KEY_STORE: (work / "store").as_uri(),
                KEY_TASKS: "true", "spark.sparkpredict.job": "overhead"}
    return {}


def _busy_s(spark) -> float:
    return spark.sparkContext._jvm.io.sparkpredict.SparkPredictListener.busyNanos() / 1e9


def run_once(mode: str, tasks: int, master: str, work: Path, rnd: int, jar: str) -> tuple[float, float, float]:
    from pyspark.sql import SparkSession

    b = (SparkSession.builder.master(master).appName(f"overhead-{mode}-{rnd}")
         .config("spark.jars", jar).config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false").config("spark.driver.memory", "2g")
         .config("spark.local.dir", str(work / "local")))
    for k, v in _conf(mode, work, rnd).items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    jvm_listener = spark.sparkContext._jvm.io.sparkpredict.SparkPredictListener
    busy0 = jvm_listener.busyNanos()
    t0 = time.perf_counter()
    n = spark.range(0, tasks * 100, 1, numPartitions=tasks).selectExpr("id % 7 as k").filter("k >= 0").count()
    t1 = time.perf_counter()
    spark.stop()
    t2 = time.perf_counter()
    busy_s = (jvm_listener.busyNanos() - busy0) / 1e9  # the listener's own time in its callbacks
    assert n == tasks * 100
    return t1 - t0, t2 - t0, busy_s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md alone")
    args = ap.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from sparkpredict.capture.listener import build_listener

    jar = str(build_listener())
    with tempfile.TemporaryDirectory(prefix="sp-overhead-") as tmp:
        work = Path(tmp)
        (work / "local").mkdir()
        print("warm-up (JVM start, JIT, class loading of all three ways)...", flush=True)
        for mode in MODES:
            run_once(mode, min(args.tasks, 1000), args.master, work, -1, jar)
        times: dict[str, list[float]] = {m: [] for m in MODES}
        job_times: dict[str, list[float]] = {m: [] for m in MODES}
        busy: list[float] = []
        for rnd in range(args.rounds):
            order = MODES[rnd % 3:] + MODES[:rnd % 3]
            for mode in order:
                job_s, total_s, busy_s = run_once(mode, args.tasks, args.master, work, rnd, jar)
                if mode == "listener":
                    busy.append(busy_s / total_s * 100)
                times[mode].append(total_s)
                job_times[mode].append(job_s)
                print(f"round {rnd} {mode:<9} job {job_s:6.2f} s  job+stop {total_s:6.2f} s"
                      f"  listener callbacks {busy_s:6.3f} s", flush=True)
        from sparkpredict import store as store_mod

        st = store_mod.open(work / "store")
        runs = st.runs()[lambda r: r["app_name"].str.match(r"overhead-listener-\d")]
        rows = int(st.tasks()["run_id"].isin(runs["run_id"]).sum())
        el_bytes = sum(p.stat().st_size for p in (work / "eventlog").rglob("*") if p.is_file())
        st_bytes = sum(p.stat().st_size for p in (work / "store").rglob("*") if p.is_file())
    med = {m: statistics.median(v) for m, v in times.items()}
    jmed = {m: statistics.median(v) for m, v in job_times.items()}
    # paired per round: each round ran all three modes back to back
    paired = {m: statistics.median([(a / b - 1) * 100 for a, b in zip(times[m], times["none"])])
              for m in ("eventlog", "listener")}
    over = {m: (med[m] / med["none"] - 1) * 100 for m in ("eventlog", "listener")}
    ok_el = paired["listener"] <= max(paired["eventlog"], 0.0) + 1e-9 or over["listener"] <= over["eventlog"]
    busy_med = statistics.median(busy)
    # When the event log (which surely costs something) comes out below the reference by more
    # than the effect we look for, the machine's noise is larger than the goal: say so.
    noisy = paired["eventlog"] < -2.0 or over["eventlog"] < -2.0

    def verdict(ok: bool) -> str:
        return ("inconclusive: noise > effect on this shared machine" if noisy
                else ("met" if ok else "not met"))
    # The end-to-end ratio cannot resolve 2 % on a shared machine; the listener's own time in its
    # callbacks (on Spark's listener-bus thread, flushes included) bounds what it can add.
    ok_2 = paired["listener"] <= 2.0 or busy_med <= 2.0
    lines = [
        "## Listener overhead",
        "",
        f"One job of {args.tasks:,} tasks (`spark.range(...).count()`, `{args.master}`), job + `stop()`"
        f" wall time, {args.rounds} rounds, the three ways alternated (order rotated each round) in one JVM.",
        "**The machine was shared with other helpers' Spark jobs during the run; single figures are noisy,"
        " the paired per-round ratios are the better estimate.**",
        "",
        "| way | median job+stop (s) | median job (s) | overhead vs none (medians) | overhead vs none (paired median) |",
        "|---|---|---|---|---|",
    ]
    for m in MODES:
        o = "-" if m == "none" else f"{over[m]:+.1f} %"
        p = "-" if m == "none" else f"{paired[m]:+.1f} %"
        lines.append(f"| {m} | {med[m]:.2f} | {jmed[m]:.2f} | {o} | {p} |")
    lines += [
        "",
        f"Recorded: {len(runs)} runs, {rows:,} task rows, store {st_bytes / 2**20:.1f} MiB; "
        f"event logs {el_bytes / 2**20:.1f} MiB.",
        "",
        f"Time the listener spent in its own callbacks (all task ends, its Parquet flushes included), as a share"
        f" of the job+stop wall time: median **{busy_med:.2f} %** ({', '.join(f'{b:.2f}' for b in busy)} %). That"
        " work runs on Spark's asynchronous listener-bus thread, so it bounds the listener's cost; the end-to-end"
        " ratios above are within this machine's noise (the event log's negative overhead shows its size).",
        "",
        f"- goal overhead ≤ event log's: **{verdict(ok_el)}** (listener {paired['listener']:+.1f} %"
        f" vs event log {paired['eventlog']:+.1f} %, paired medians)",
        f"- goal overhead ≤ 2 % of wall time: **{verdict(ok_2)}** (end-to-end {paired['listener']:+.1f} %;"
        f" own callback time {busy_med:.2f} %)",
    ]
    body = "\n".join(lines)
    print(body)
    if not args.no_write:
        write_section("listener_overhead", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
